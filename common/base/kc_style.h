/* Included before every Kiln source file by the build (-include, see meson.build): the calls
 * STYLE.md bans become compile errors instead of review comments. sprintf, vsprintf, strcpy
 * and strcat write without a bound, gets reads without one, strtok keeps hidden state, and
 * atoi/atol cannot report a bad number; use snprintf, memcpy with a known length,
 * strtok_r/strsep and strtol/strtoll instead. The headers that declare them come first, so
 * their own declarations are not refused. */
#ifndef KC_STYLE_H
#define KC_STYLE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC poison sprintf vsprintf strcpy strcat strtok atoi atol gets

#endif
