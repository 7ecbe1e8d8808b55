/* Fuzz target for the time parsers fed from outside: RFC 3339 timestamps (every metav1.Time
 * the API server sends, creationTimestamp, deletionTimestamp, lastTransitionTime, a CronJob's
 * lastScheduleTime) and Go durations (flags such as --leader-elect-lease-duration, the
 * scheduler configuration). Any input must be refused cleanly or give a value that the two
 * RFC 3339 parsers agree on, that formats back to the same instant, and a duration whose sign
 * is the one written. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_flags.h"
#include "kc_time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static void check_time(const char *s) {
  int64_t ms, sec;
  int rc = kc_rfc3339_parse(s, &ms);
  if ((kc_time_parse(s, &sec) == 0) != (rc == 0))
    abort(); /* the two parsers take the same texts */
  if (rc != 0)
    return;
  if (sec != floor_div(ms, 1000))
    abort(); /* seconds are the second the instant falls in */
  /* Years below 1000 do not format as four digits (strftime's %Y), which RFC 3339 needs. */
  if (s[0] == '0')
    return;
  char buf[KC_TIME_LEN];
  int64_t back;
  kc_time_format_micro(ms * 1000, buf);
  if (kc_rfc3339_parse(buf, &back) != 0 || back != ms)
    abort(); /* formatted in UTC, the same instant */
  kc_time_format(sec, buf);
  if (kc_time_parse(buf, &back) != 0 || back != sec)
    abort();
}

static void check_duration(const char *s) {
  int64_t ns;
  if (kc_parse_duration(s, &ns) != 0)
    return;
  if ((s[0] == '-' && ns > 0) || (s[0] != '-' && ns < 0))
    abort(); /* the sign written is the sign parsed (no overflow into the other one) */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 64)
    return 0;
  char s[65];
  memcpy(s, data, size);
  s[size] = '\0';
  check_time(s);
  check_duration(s);
  return 0;
}
