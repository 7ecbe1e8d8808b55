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

/* ---- Go durations ---- */

/* A message built in err, truncated to errlen. */
typedef struct {
  char *buf;
  size_t len, n;
} msg;

static void put(msg *m, const char *s, size_t n) {
  for (size_t i = 0; i < n && m->len && m->n + 1 < m->len; i++)
    m->buf[m->n++] = s[i];
  if (m->len)
    m->buf[m->n] = '\0';
}

/* Go's time.quote: double quotes; a byte outside printable ASCII as \xHH, '"' and '\' escaped. */
static void put_quoted(msg *m, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  put(m, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x80 || c < ' ') {
      char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
      put(m, e, 4);
    } else {
      if (c == '"' || c == '\\')
        put(m, "\\", 1);
      put(m, (const char *)&c, 1);
    }
  }
  put(m, "\"", 1);
}

/* Sets err to Go's message: "time: <what> " quote(orig), with the unit quoted when given. */
static int dur_fail(char *err, size_t errlen, int code, const char *what, const char *unit,
                    size_t ulen, const char *orig) {
  msg m = {err, err ? errlen : 0, 0};
  put(&m, "time: ", 6);
  put(&m, what, strlen(what));
  if (unit) {
    put_quoted(&m, unit, ulen);
    put(&m, " in duration", 12);
  }
  put(&m, " ", 1);
  put_quoted(&m, orig, strlen(orig));
  return code;
}

#define TWO63 ((uint64_t)1 << 63)

static const struct {
  const char *name;
  uint64_t ns;
} go_units[] = {{"ns", 1},           {"us", 1000},      {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
                {"\xce\xbcs", 1000},                                         /* U+03BC Greek mu */
                {"ms", 1000000},     {"s", 1000000000}, {"m", 60000000000},  {"h", 3600000000000}};

static bool is_dec(char c) {
  return c >= '0' && c <= '9';
}

/* One [0-9]*(.[0-9]*)? number from *p: v the integer part (false past 2^63), f/scale the
 * fraction, whose digits past 2^63 add no precision (Go's leadingInt, leadingFraction). */
static bool dur_number(const char **p, uint64_t *v, uint64_t *f, double *scale, bool *any) {
  const char *s = *p;
  *v = *f = 0;
  *scale = 1;
  *any = false;
  for (; is_dec(*s); s++, *any = true) {
    if (*v > TWO63 / 10)
      return false;
    *v = *v * 10 + (uint64_t)(*s - '0');
    if (*v > TWO63)
      return false;
  }
  if (*s == '.') {
    bool full = false;
    for (s++; is_dec(*s); s++, *any = true) {
      if (full)
        continue;
      uint64_t y = *f * 10 + (uint64_t)(*s - '0');
      if (*f > (TWO63 - 1) / 10 || y > TWO63) {
        full = true;
        continue;
      }
      *f = y;
      *scale *= 10;
    }
  }
  *p = s;
  return true;
}

int kc_go_duration(const char *s, int64_t *ns, char *err, size_t errlen) {
  const char *orig = s ? s : "";
  uint64_t d = 0;
  bool neg = false;
  if (err && errlen)
    err[0] = '\0';
  s = orig;
  if (*s == '-' || *s == '+')
    neg = *s++ == '-';
  if (strcmp(s, "0") == 0) {
    *ns = 0;
    return 0;
  }
  if (!*s)
    return dur_fail(err, errlen, KC_EPARSE, "invalid duration", NULL, 0, orig);
  while (*s) {
    uint64_t v, f;
    double scale;
    bool any;
    if (!(*s == '.' || is_dec(*s)))
      return dur_fail(err, errlen, KC_EPARSE, "invalid duration", NULL, 0, orig);
    if (!dur_number(&s, &v, &f, &scale, &any))
      return dur_fail(err, errlen, KC_ERANGE, "invalid duration", NULL, 0, orig);
    if (!any)
      return dur_fail(err, errlen, KC_EPARSE, "invalid duration", NULL, 0, orig);
    const char *u = s;
    while (*s && *s != '.' && !is_dec(*s))
      s++;
    size_t ul = (size_t)(s - u);
    if (ul == 0)
      return dur_fail(err, errlen, KC_EPARSE, "missing unit in duration", NULL, 0, orig);
    uint64_t unit = 0;
    for (size_t k = 0; k < sizeof(go_units) / sizeof(go_units[0]); k++)
      if (strlen(go_units[k].name) == ul && memcmp(go_units[k].name, u, ul) == 0)
        unit = go_units[k].ns;
    if (!unit)
      return dur_fail(err, errlen, KC_EPARSE, "unknown unit ", u, ul, orig);
    if (v > TWO63 / unit)
      return dur_fail(err, errlen, KC_ERANGE, "invalid duration", NULL, 0, orig);
    v *= unit;
    /* float64, as Go: nanosecond-exact for fractions of an hour (at most 3.6e12 ns) */
    if (f > 0 && (v += (uint64_t)((double)f * ((double)unit / scale))) > TWO63)
      return dur_fail(err, errlen, KC_ERANGE, "invalid duration", NULL, 0, orig);
    if (d > TWO63 - v)
      return dur_fail(err, errlen, KC_ERANGE, "invalid duration", NULL, 0, orig);
    d += v;
  }
  if (!neg && d > TWO63 - 1)
    return dur_fail(err, errlen, KC_ERANGE, "invalid duration", NULL, 0, orig);
  *ns = !neg ? (int64_t)d : d == TWO63 ? INT64_MIN : -(int64_t)d;
  return 0;
}
