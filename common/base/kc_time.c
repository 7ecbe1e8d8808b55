/* RFC 3339 formatting and parsing (kc_time.h). The parser is exact rather than strptime's:
 * a timestamp that Go's time.Parse refuses is refused here too. */
#include "kc_time.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kc_error.h"

static void format(int64_t unix_s, const char *frac, char buf[KC_TIME_LEN]) {
  time_t t = (time_t)unix_s;
  struct tm tm;
  char base[24];
  if (!gmtime_r(&t, &tm) || strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
    snprintf(base, sizeof(base), "1970-01-01T00:00:00");
  snprintf(buf, KC_TIME_LEN, "%s%sZ", base, frac);
}

void kc_time_format(int64_t unix_s, char buf[KC_TIME_LEN]) {
  format(unix_s, "", buf);
}

void kc_time_format_micro(int64_t unix_us, char buf[KC_TIME_LEN]) {
  int64_t s = unix_us >= 0 ? unix_us / 1000000 : -((-unix_us + 999999) / 1000000);
  char frac[8];
  snprintf(frac, sizeof(frac), ".%06ld", (long)(unix_us - s * 1000000));
  format(s, frac, buf);
}

static bool digits(const char *s, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int kc_rfc3339_parse(const char *s, int64_t *ms) {
  int y, mo, d, h, mi, se;
  if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
      !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, &h) ||
      s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &se))
    return KC_EPARSE;
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) || h > 23 ||
      mi > 59 || se > 59)
    return KC_EPARSE;
  const char *p = s + 19;
  int frac_ms = 0;
  if (*p == '.') {
    p++;
    int n = 0;
    while (*p >= '0' && *p <= '9') {
      if (n < 3)
        frac_ms = frac_ms * 10 + (*p - '0');
      n++;
      p++;
    }
    if (n == 0)
      return KC_EPARSE;
    for (; n < 3; n++)
      frac_ms *= 10;
  }
  int off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int oh, om;
    if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 || om > 59)
      return KC_EPARSE;
    off = (oh * 60 + om) * (*p == '-' ? -1 : 1);
    p += 6;
  } else {
    return KC_EPARSE;
  }
  if (*p)
    return KC_EPARSE;
  int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off * 60;
  *ms = secs * 1000 + frac_ms;
  return 0;
}

int kc_time_parse(const char *s, int64_t *out) {
  int64_t ms;
  if (!s || kc_rfc3339_parse(s, &ms) != 0)
    return KC_EPARSE;
  *out = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000); /* floor: the second it falls in */
  return 0;
}
