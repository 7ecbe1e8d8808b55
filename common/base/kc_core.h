/* Included before every file of a pure core (ctl_core, sch_core) by the build, after
 * kc_style.h. A core is a function of its inputs: the clock and randomness come in through
 * its view, snapshot or injected ops, never from the C library, so a replay of the same
 * input makes the same decision; no file is read. The I/O libraries are refused by the headers in
 * common/iofree/, which the cores' include path puts in front of the system's. */
#ifndef KC_CORE_H
#define KC_CORE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#include "kc_file.h"

#pragma GCC poison time clock_gettime gettimeofday rand rand_r srand random srandom drand48
/* Nor the environment or the host's time zone: a zone comes as its tz database file's bytes
 * (the CronJob core converts with ctl_tz), so a decision never depends on TZ or /etc/localtime. */
#pragma GCC poison getenv secure_getenv setenv unsetenv putenv tzset localtime localtime_r
#pragma GCC poison mktime gmtime gmtime_r timegm timelocal strftime
/* Files are read by the shell, which passes the bytes in (the scheduler's configuration, the
 * CronJob's zone files). */
#pragma GCC poison fopen freopen popen kc_file_read

#endif
