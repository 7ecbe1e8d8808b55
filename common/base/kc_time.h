/* RFC 3339 times, as the API server writes metav1.Time and MicroTime: one formatter and
 * one parser for the whole code base. */
#ifndef KC_TIME_H
#define KC_TIME_H

#include <stddef.h>
#include <stdint.h>
#include "kc_error.h"

/* "2026-11-29T16:01:51Z" is 20 characters; with microseconds 27. */
#define KC_TIME_LEN 32

/* Unix seconds as "2026-11-29T16:01:51Z" (UTC, seconds, what metav1.Time marshals to) into
 * buf. A time gmtime cannot represent is written as the epoch rather than left undefined. */
void kc_time_format(int64_t unix_s, char buf[KC_TIME_LEN]);
/* Unix microseconds as "2026-11-29T16:01:51.123456Z" (metav1.MicroTime). */
void kc_time_format_micro(int64_t unix_us, char buf[KC_TIME_LEN]);

/* RFC 3339 timestamp ("2026-11-29T16:01:51Z", optional fraction and offset) to Unix
 * seconds, the second it falls in. Returns 0 or KC_EPARSE. */
KC_NODISCARD int kc_time_parse(const char *s, int64_t *out);
/* The same to Unix milliseconds (a fraction's first three digits count; leap seconds, 60, are
 * refused as Go's time.Parse refuses them). */
KC_NODISCARD int kc_rfc3339_parse(const char *s, int64_t *ms);

/* Go's time.ParseDuration, the one parser of Go durations in Kiln (flags, the scheduler
 * configuration, a pod's annotations, Job policy timeouts and runningDuration, cron @every):
 * [-+]?([0-9]*(\.[0-9]*)?[a-z]+)+ with units ns us \u00b5s \u03bcs ms s m h, "0" alone, a fraction
 * of any length (digits past 2^63 only stop adding precision), to nanoseconds the way Go
 * computes them. Returns 0, KC_EPARSE or KC_ERANGE (past int64 nanoseconds, about 292
 * years), with Go's message in err ("time: invalid duration \"1x\"", "time: missing unit in
 * duration ...", "time: unknown unit ... in duration ...") when err is not NULL. One
 * difference: a sum that wraps Go's uint64 exactly to zero is refused, not read as 0. */
KC_NODISCARD int kc_go_duration(const char *s, int64_t *ns, char *err, size_t errlen);

#endif
