/* Fuzz target for the time parsers fed from outside: RFC 3339 timestamps (every metav1.Time
 * the API server sends, creationTimestamp, deletionTimestamp, lastTransitionTime, a CronJob's
 * lastScheduleTime) and Go durations, through kc_go_duration, the one parser of them (flags
 * such as --leader-elect-lease-duration, the scheduler configuration, Job policy timeouts,
 * cron @every). Any input must be refused cleanly or give a value that the two RFC 3339
 * parsers agree on and that formats back to the same instant; a duration must have the sign
 * written, negate with its sign, double when written twice, and read the same through the
 * flag parser. Durations are fed up to 4 KiB, so fractions of thousands of digits are tried. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
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

static void check_duration(const char *s, size_t n) {
  int64_t ns, again, flag;
  char err[128];
  int rc = kc_go_duration(s, &ns, err, sizeof(err));
  if (rc != 0 && rc != KC_EPARSE && rc != KC_ERANGE)
    abort();
  if (kc_go_duration(s, &again, NULL, 0) != rc || (rc == 0 && again != ns))
    abort(); /* the message buffer changes nothing */
  if ((rc == 0) != (err[0] == '\0') || (rc != 0 && strncmp(err, "time: ", 6) != 0))
    abort(); /* a message exactly when refused, Go's */
  int frc = kc_parse_duration(s, &flag);
  if ((frc == 0) != (rc == 0) || (rc == 0 && flag != ns))
    abort(); /* the flag parser is the same parser */
  if (rc != 0)
    return;
  if ((s[0] == '-' && ns > 0) || (s[0] != '-' && ns < 0))
    abort(); /* the sign written is the sign parsed (no overflow into the other one) */
  if (s[0] == '-' || s[0] == '+' || strcmp(s, "0") == 0)
    return;
  /* "-" + s is -s; s written twice is twice s, or out of range */
  char *buf = malloc(2 * n + 2);
  if (!buf)
    return;
  buf[0] = '-';
  memcpy(buf + 1, s, n + 1);
  if (kc_go_duration(buf, &again, NULL, 0) != 0 || again != -ns)
    abort();
  memcpy(buf, s, n);
  memcpy(buf + n, s, n + 1);
  rc = kc_go_duration(buf, &again, NULL, 0);
  if (ns > INT64_MAX / 2 ? rc != KC_ERANGE : (rc != 0 || again != 2 * ns))
    abort();
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096)
    return 0;
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  if (size <= 64)
    check_time(s);
  check_duration(s, strlen(s));
  free(s);
  return 0;
}
