/* TZif zones converted as Go's time package converts them (see ctl_tz.h). */
#include "ctl_tz.h"

#include <string.h>

#define DAY   86400
#define ALPHA INT64_MIN
#define OMEGA INT64_MAX

static int64_t floor_div(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static bool leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in(int mon, int64_t y) {
  static const int n[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return mon == 2 && leap(y) ? 29 : n[mon - 1];
}

/* The proleptic Gregorian calendar in 400-year eras of 146097 days, counted from March so
 * that the leap day ends the year. */
int64_t ctl_days_from_civil(int64_t y, int mon, int64_t day) {
  y -= mon <= 2;
  int64_t era = floor_div(y, 400);
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (mon > 2 ? mon - 3 : mon + 9) + 2) / 5 + day - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void ctl_civil_from_days(int64_t days, int64_t *y, int *mon, int *day) {
  int64_t z = days + 719468;
  int64_t era = floor_div(z, 146097);
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *day = (int)(doy - (153 * mp + 2) / 5 + 1);
  *mon = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*mon <= 2);
}

/* ---- the file ---- */

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int64_t tx_at(const ctl_tz *z, uint32_t i) {
  const unsigned char *p = z->tx + (size_t)i * z->width;
  if (z->width == 4)
    return (int64_t)(int32_t)be32(p);
  return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static int32_t type_off(const ctl_tz *z, unsigned t) {
  return (int32_t)be32(z->types + (size_t)t * 6);
}

static bool type_dst(const ctl_tz *z, unsigned t) {
  return z->types[(size_t)t * 6 + 4] != 0;
}

/* A bounded reader: every take past the end fails the load. */
typedef struct {
  const unsigned char *p;
  size_t left;
} reader;

static const unsigned char *take(reader *r, uint64_t n) {
  if (n > r->left)
    return NULL;
  const unsigned char *p = r->p;
  r->p += n;
  r->left -= (size_t)n;
  return p;
}

enum { N_UTC, N_STD, N_LEAP, N_TIME, N_TYPE, N_CHAR };

static bool counts(reader *r, uint64_t n[6]) {
  for (int i = 0; i < 6; i++) {
    const unsigned char *p = take(r, 4);
    if (!p)
      return false;
    n[i] = be32(p);
  }
  return true;
}

static bool parse_rule_footer(ctl_tz *z, const char *s, size_t len);

void ctl_tz_utc(ctl_tz *z) {
  memset(z, 0, sizeof(*z));
  z->width = 8;
}

static bool load(ctl_tz *z, const char *data, size_t len) {
  reader r = {(const unsigned char *)data, data ? len : 0};
  const unsigned char *h = take(&r, 20);
  uint64_t n[6];
  if (!h || memcmp(h, "TZif", 4) != 0 || (h[4] != 0 && h[4] != '2' && h[4] != '3') ||
      !counts(&r, n))
    return false;
  z->width = 4;
  if (h[4] != 0) { /* skip the 32-bit block and the second header: the 64-bit block follows */
    if (!take(&r, n[N_TIME] * 5 + n[N_TYPE] * 6 + n[N_CHAR] + n[N_LEAP] * 8 + n[N_STD] + n[N_UTC] +
                      20) ||
        !counts(&r, n))
      return false;
    z->width = 8;
  }
  z->tx = take(&r, n[N_TIME] * z->width);
  z->idx = take(&r, n[N_TIME]);
  z->types = take(&r, n[N_TYPE] * 6);
  const unsigned char *abbrev = take(&r, n[N_CHAR]);
  if (!z->tx || !z->idx || !z->types || !abbrev || n[N_TYPE] == 0 ||
      !take(&r, n[N_LEAP] * (z->width + 4) + n[N_STD] + n[N_UTC]))
    return false;
  z->ntx = (uint32_t)n[N_TIME];
  z->ntypes = (uint32_t)n[N_TYPE];
  for (uint32_t i = 0; i < z->ntypes; i++)
    if (z->types[i * 6 + 5] >= n[N_CHAR])
      return false;
  for (uint32_t i = 0; i < z->ntx; i++)
    if (z->idx[i] >= z->ntypes)
      return false;
  /* The footer, "\n<POSIX TZ>\n"; Go ignores one it cannot parse. */
  if (r.left > 2 && r.p[0] == '\n' && r.p[r.left - 1] == '\n')
    z->rule = parse_rule_footer(z, (const char *)r.p + 1, r.left - 2);
  return true;
}

bool ctl_tz_load(ctl_tz *z, const char *data, size_t len) {
  ctl_tz_utc(z);
  if (load(z, data, len))
    return true;
  ctl_tz_utc(z);
  return false;
}

/* ---- the POSIX TZ footer (Go's tzset) ---- */

typedef struct {
  const char *s;
  size_t n;
} span;

static bool at(const span *p, char c) {
  return p->n > 0 && *p->s == c;
}

static void skip(span *p, size_t k) {
  p->s += k;
  p->n -= k;
}

/* A zone abbreviation: three or more characters up to a digit, sign or comma, or <...>. */
static bool tz_name(span *p) {
  if (p->n == 0)
    return false;
  if (*p->s == '<') {
    const char *gt = memchr(p->s, '>', p->n);
    if (!gt)
      return false;
    skip(p, (size_t)(gt - p->s) + 1);
    return true;
  }
  size_t i = 0;
  while (i < p->n && !strchr("0123456789,-+", p->s[i]))
    i++;
  if (i < 3)
    return false;
  skip(p, i);
  return true;
}

/* A decimal in [min, max]. */
static bool tz_num(span *p, int min, int max, int *out) {
  int v = 0;
  size_t i = 0;
  for (; i < p->n && p->s[i] >= '0' && p->s[i] <= '9'; i++) {
    v = v * 10 + (p->s[i] - '0');
    if (v > max)
      return false;
  }
  if (i == 0 || v < min)
    return false;
  skip(p, i);
  *out = v;
  return true;
}

/* [+-]hh[:mm[:ss]], hours up to 167 as tzcode allows. */
static bool tz_offset(span *p, int32_t *out) {
  bool neg = at(p, '-');
  if (at(p, '+') || at(p, '-'))
    skip(p, 1);
  int h, m = 0, s = 0;
  if (!tz_num(p, 0, 24 * 7, &h))
    return false;
  if (at(p, ':')) {
    skip(p, 1);
    if (!tz_num(p, 0, 59, &m))
      return false;
    if (at(p, ':')) {
      skip(p, 1);
      if (!tz_num(p, 0, 59, &s))
        return false;
    }
  }
  int32_t v = h * 3600 + m * 60 + s;
  *out = neg ? -v : v;
  return true;
}

static bool tz_rule(span *p, ctl_tzrule *r) {
  memset(r, 0, sizeof(*r));
  if (at(p, 'J')) {
    skip(p, 1);
    r->kind = 'J';
    if (!tz_num(p, 1, 365, &r->day))
      return false;
  } else if (at(p, 'M')) {
    skip(p, 1);
    r->kind = 'M';
    if (!tz_num(p, 1, 12, &r->mon) || !at(p, '.'))
      return false;
    skip(p, 1);
    if (!tz_num(p, 1, 5, &r->week) || !at(p, '.'))
      return false;
    skip(p, 1);
    if (!tz_num(p, 0, 6, &r->day))
      return false;
  } else {
    r->kind = 'D';
    if (!tz_num(p, 0, 365, &r->day))
      return false;
  }
  r->at = 2 * 3600;
  if (!at(p, '/'))
    return true;
  skip(p, 1);
  return tz_offset(p, &r->at);
}

static bool parse_rule_footer(ctl_tz *z, const char *s, size_t len) {
  span p = {s, len};
  int32_t off;
  if (!tz_name(&p) || !tz_offset(&p, &off))
    return false;
  z->std_off = -off; /* POSIX counts west of UTC */
  if (p.n == 0 || at(&p, ','))
    return true;
  if (!tz_name(&p))
    return false;
  z->dst_off = z->std_off + 3600;
  if (p.n > 0 && !at(&p, ',')) {
    if (!tz_offset(&p, &off))
      return false;
    z->dst_off = -off;
  }
  static const char dflt[] = ",M3.2.0,M11.1.0"; /* tzcode's default rule */
  if (p.n == 0)
    p = (span){dflt, sizeof(dflt) - 1};
  if (!at(&p, ',') && !at(&p, ';'))
    return false;
  skip(&p, 1);
  if (!tz_rule(&p, &z->start) || !at(&p, ','))
    return false;
  skip(&p, 1);
  if (!tz_rule(&p, &z->end) || p.n != 0)
    return false;
  z->rule_dst = true;
  return true;
}

/* Seconds from the start of year y (UTC) to the rule's moment, given in local time at
 * offset off. */
static int64_t rule_time(int64_t y, const ctl_tzrule *r, int32_t off) {
  int64_t d;
  if (r->kind == 'J') {
    d = r->day - 1 + (leap(y) && r->day >= 60);
  } else if (r->kind == 'D') {
    d = r->day;
  } else {
    int64_t first = ctl_days_from_civil(y, r->mon, 1);
    int dow = (int)(first + 4 - floor_div(first + 4, 7) * 7); /* 1970-01-01 was a Thursday */
    int md = r->day - dow; /* zero-based day of the month of the first such weekday */
    if (md < 0)
      md += 7;
    for (int i = 1; i < r->week && md + 7 < days_in(r->mon, y); i++)
      md += 7;
    d = first - ctl_days_from_civil(y, 1, 1) + md;
  }
  return d * DAY + r->at - off;
}

/* Go's tzset for t at or after the last transition (last). */
static int32_t rule_lookup(const ctl_tz *z, int64_t last, int64_t t, int64_t *start, int64_t *end) {
  if (!z->rule_dst) {
    *start = last;
    *end = OMEGA;
    return z->std_off;
  }
  int64_t y;
  int mon, day;
  ctl_civil_from_days(floor_div(t, DAY), &y, &mon, &day);
  int64_t yday = floor_div(t, DAY) - ctl_days_from_civil(y, 1, 1);
  int64_t ysec = yday * DAY + t % DAY; /* Go's truncating remainder, kept */
  int64_t ystart = t - ysec;
  int64_t s = rule_time(y, &z->start, z->std_off), e = rule_time(y, &z->end, z->dst_off);
  int32_t std = z->std_off, dst = z->dst_off;
  if (e < s) { /* southern hemisphere: the year starts in DST */
    int64_t ts = s;
    s = e;
    e = ts;
    std = z->dst_off;
    dst = z->std_off;
  }
  if (ysec < s) {
    *start = ystart;
    *end = ystart + s;
    return std;
  }
  if (ysec >= e) {
    *start = ystart + e;
    *end = ystart + 365 * DAY;
    return std;
  }
  *start = ystart + s;
  *end = ystart + e;
  return dst;
}

/* ---- conversions ---- */

/* Go's lookupFirstZone: the zone of times before the first transition. */
static unsigned first_zone(const ctl_tz *z) {
  bool used = false;
  for (uint32_t i = 0; i < z->ntx && !used; i++)
    used = z->idx[i] == 0;
  if (!used)
    return 0;
  if (z->ntx > 0 && type_dst(z, z->idx[0]))
    for (int i = (int)z->idx[0] - 1; i >= 0; i--)
      if (!type_dst(z, (unsigned)i))
        return (unsigned)i;
  for (uint32_t i = 0; i < z->ntypes; i++)
    if (!type_dst(z, i))
      return i;
  return 0;
}

int32_t ctl_tz_lookup(const ctl_tz *z, int64_t t, int64_t *start, int64_t *end) {
  int64_t s0, e0;
  if (!start)
    start = &s0;
  if (!end)
    end = &e0;
  *start = ALPHA;
  *end = OMEGA;
  if (z->ntypes == 0)
    return 0;
  if (z->ntx == 0) /* Go's one made-up transition at the beginning of time, to type 0 */
    return z->rule ? rule_lookup(z, ALPHA, t, start, end) : type_off(z, 0);
  if (t < tx_at(z, 0)) {
    *end = tx_at(z, 0);
    return type_off(z, first_zone(z));
  }
  uint32_t lo = 0, hi = z->ntx;
  while (hi - lo > 1) {
    uint32_t m = lo + (hi - lo) / 2;
    int64_t lim = tx_at(z, m);
    if (t < lim) {
      *end = lim;
      hi = m;
    } else {
      lo = m;
    }
  }
  *start = tx_at(z, lo);
  if (lo == z->ntx - 1 && z->rule)
    return rule_lookup(z, *start, t, start, end);
  return type_off(z, z->idx[lo]);
}

static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

void ctl_tz_civil(const ctl_tz *z, int64_t t, ctl_civil *out) {
  int32_t off = ctl_tz_lookup(z, t, NULL, NULL);
  int64_t l = sat_add(t, off);
  int64_t days = floor_div(l, DAY), secs = l - days * DAY;
  ctl_civil_from_days(days, &out->year, &out->mon, &out->mday);
  out->hour = (int)(secs / 3600);
  out->min = (int)(secs % 3600 / 60);
  out->sec = (int)(secs % 60);
  out->wday = (int)(days + 4 - floor_div(days + 4, 7) * 7);
  out->off = off;
}

int64_t ctl_tz_date(const ctl_tz *z, int64_t year, int64_t mon, int64_t day, int64_t hour,
                    int64_t min, int64_t sec) {
  int64_t m0 = mon - 1;
  year += floor_div(m0, 12);
  m0 -= floor_div(m0, 12) * 12;
  int64_t ut = ctl_days_from_civil(year, (int)m0 + 1, day) * DAY + hour * 3600 + min * 60 + sec;
  int64_t start, end;
  int32_t off = ctl_tz_lookup(z, ut, &start, &end);
  if (off != 0) {
    int64_t utc = sat_add(ut, -(int64_t)off);
    if (utc < start || utc >= end)
      off = ctl_tz_lookup(z, utc, NULL, NULL);
    ut = sat_add(ut, -(int64_t)off);
  }
  return ut;
}
