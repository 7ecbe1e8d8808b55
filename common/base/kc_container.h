/* container_of, as libuv and Linux spell it: the owner of an embedded member, for callbacks
 * that receive the member (a uv handle, a request, a list node) and need the struct that
 * embeds it (STYLE.md 5). */
#ifndef KC_CONTAINER_H
#define KC_CONTAINER_H

#include <stddef.h>

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
