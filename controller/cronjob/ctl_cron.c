/* Cron schedules and the CronJob schedule arithmetic (see ctl_cron.h). */
#include "ctl_cron.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_tz.h"
#include "kc_error.h"
#include "kc_time.h"

/* ---- zones: the bytes of the tz database files the shell read, converted by ctl_tz ---- */

typedef ctl_tz zone;

/* Go's containsDotDot: a ".." path element. */
static bool has_dotdot(const char *s) {
  for (const char *p = s; (p = strstr(p, "..")); p += 2) {
    bool start = p == s || p[-1] == '/';
    bool end = p[2] == '\0' || p[2] == '/';
    if (start && end)
      return true;
  }
  return false;
}

bool ctl_tz_name_ok(const char *name) {
  return !has_dotdot(name) && name[0] != '/' && name[0] != '\\';
}

/* "", "UTC" and "Local" need no file. */
static bool tz_builtin(const char *name) {
  return !name || !*name || strcmp(name, "UTC") == 0 || strcmp(name, "Local") == 0;
}

bool ctl_tzif(const char *data, size_t len) {
  return data && len >= 4 && memcmp(data, "TZif", 4) == 0;
}

/* The file of a zone: the process' zone for "" and "Local", NULL for UTC or no such file. */
static const ctl_tzfile *zone_file(const ctl_tzdb *db, const char *name) {
  if (!db || strcmp(name, "UTC") == 0)
    return NULL;
  if (!*name || strcmp(name, "Local") == 0)
    return &db->local;
  for (size_t i = 0; i < db->n; i++)
    if (strcmp(db->zone[i].name, name) == 0)
      return &db->zone[i];
  return NULL;
}

/* The zone a name and its file give; UTC when there is none (or none Go would load). */
static void zone_load(zone *z, const ctl_tzdb *db, const char *name) {
  const ctl_tzfile *f = zone_file(db, name);
  ctl_tz_load(z, f ? f->data : NULL, f ? f->len : 0);
}

int ctl_tz_check(const char *name, const ctl_tzdb *db, char *err, size_t errlen) {
  if (tz_builtin(name))
    return 0;
  if (!ctl_tz_name_ok(name))
    return kc_errorf(err, errlen, KC_EINVAL, "time: invalid location name");
  const ctl_tzfile *f = strlen(name) < CTL_TZ_MAX ? zone_file(db, name) : NULL;
  if (!f || !f->data)
    return kc_errorf(err, errlen, KC_EINVAL, "unknown time zone %s", name);
  zone z;
  if (!ctl_tz_load(&z, f->data, f->len)) /* Go's LoadLocationFromTZData refuses it */
    return kc_errorf(err, errlen, KC_EINVAL, "malformed time zone information");
  return 0;
}

static void zone_add(char names[CTL_TZDB_MAX][CTL_TZ_MAX], size_t *n, const char *name,
                     size_t len) {
  char v[CTL_TZ_MAX];
  if (len >= sizeof(v))
    return;
  memcpy(v, name, len);
  v[len] = '\0';
  if (tz_builtin(v) || !ctl_tz_name_ok(v))
    return;
  for (size_t i = 0; i < *n; i++)
    if (strcmp(names[i], v) == 0)
      return;
  if (*n < CTL_TZDB_MAX)
    memcpy(names[(*n)++], v, len + 1);
}

size_t ctl_cron_zones(const char *schedule, const char *time_zone,
                      char names[CTL_TZDB_MAX][CTL_TZ_MAX]) {
  size_t n = 0;
  if (schedule && (!strncmp(schedule, "TZ=", 3) || !strncmp(schedule, "CRON_TZ=", 8))) {
    const char *eq = strchr(schedule, '='), *sp = strchr(schedule, ' ');
    if (sp)
      zone_add(names, &n, eq + 1, (size_t)(sp - eq - 1));
  }
  if (time_zone)
    zone_add(names, &n, time_zone, strlen(time_zone));
  return n;
}

static void civil(const zone *z, int64_t s, struct tm *tm) {
  ctl_civil c;
  ctl_tz_civil(z, s, &c);
  *tm = (struct tm){.tm_year = (int)(c.year - 1900),
                    .tm_mon = c.mon - 1,
                    .tm_mday = c.mday,
                    .tm_hour = c.hour,
                    .tm_min = c.min,
                    .tm_sec = c.sec,
                    .tm_wday = c.wday};
}

/* Go's time.Date (struct tm's year and month counting): normalises out-of-range fields; a wall
 * time in a DST gap or overlap resolves as Go's does (see ctl_tz_date). */
static int64_t make(const zone *z, int y, int mon, int d, int h, int mi, int s) {
  return ctl_tz_date(z, (int64_t)y + 1900, (int64_t)mon + 1, d, h, mi, s);
}

/* ---- the parser (robfig/cron v3 ParseStandard) ---- */

typedef struct {
  int min, max;
  const char *const *names; /* index = value, NULL-terminated list starting at min_name */
  int names_base;
} bounds;

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                          "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const dow_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

static const bounds b_minute = {0, 59, NULL, 0}, b_hour = {0, 23, NULL, 0},
                    b_dom = {1, 31, NULL, 0}, b_month = {1, 12, month_names, 1},
                    b_dow = {0, 6, dow_names, 0}, b_plain = {0, 0, NULL, 0};

static uint64_t bits(int lo, int hi, int step) {
  uint64_t b = 0;
  for (int i = lo; i <= hi; i += step)
    b |= 1ull << i;
  return b;
}

static uint64_t all_of(const bounds *r) {
  return bits(r->min, r->max, 1) | CTL_CRON_STAR;
}

/* parseIntOrName over s[0..n). */
static int int_or_name(const char *s, size_t n, const bounds *r, int *out, char *err,
                       size_t errlen) {
  if (r->names) {
    for (int i = 0; r->names[i]; i++)
      if (strlen(r->names[i]) == n && strncasecmp(s, r->names[i], n) == 0) {
        *out = r->names_base + i;
        return 0;
      }
  }
  size_t i = 0;
  bool neg = false;
  if (i < n && (s[i] == '+' || s[i] == '-'))
    neg = s[i++] == '-';
  long v = 0;
  if (i == n)
    goto bad;
  for (; i < n; i++) {
    if (!isdigit((unsigned char)s[i]))
      goto bad;
    v = v * 10 + (s[i] - '0');
    if (v > 1000000)
      goto bad;
  }
  if (neg && v > 0)
    return kc_errorf(err, errlen, KC_EPARSE, "negative number (-%ld) not allowed: %.*s", v, (int)n,
                     s);
  *out = (int)v;
  return 0;
bad:
  return kc_errorf(err, errlen, KC_EPARSE,
                   "failed to parse int from %.*s: strconv.Atoi: parsing \"%.*s\": invalid syntax",
                   (int)n, s, (int)n, s);
}

/* getRange: one comma-separated part, s[0..n). */
static int parse_range(const char *s, size_t n, const bounds *r, uint64_t *out, char *err,
                       size_t errlen) {
  const char *slash = memchr(s, '/', n);
  size_t rn = slash ? (size_t)(slash - s) : n;
  if (slash && memchr(slash + 1, '/', n - rn - 1))
    return kc_errorf(err, errlen, KC_EPARSE, "too many slashes: %.*s", (int)n, s);
  const char *dash = memchr(s, '-', rn); /* robfig splits on '-' before reading numbers */
  int start, end, rc;
  uint64_t extra = 0;
  bool single = !dash;
  size_t low = dash ? (size_t)(dash - s) : rn;
  if (low == 1 && (s[0] == '*' || s[0] == '?')) { /* robfig ignores a high end after `*` */
    start = r->min;
    end = r->max;
    extra = CTL_CRON_STAR;
  } else if (!dash) {
    if ((rc = int_or_name(s, rn, r, &start, err, errlen)))
      return rc;
    end = start;
  } else {
    size_t ln = (size_t)(dash - s);
    if (memchr(dash + 1, '-', rn - ln - 1))
      return kc_errorf(err, errlen, KC_EPARSE, "too many hyphens: %.*s", (int)n, s);
    if ((rc = int_or_name(s, ln, r, &start, err, errlen)) ||
        (rc = int_or_name(dash + 1, rn - ln - 1, r, &end, err, errlen)))
      return rc;
  }
  int step = 1;
  if (slash) {
    if ((rc = int_or_name(slash + 1, n - rn - 1, &b_plain, &step, err, errlen)))
      return rc;
    if (single)
      end = r->max;
    if (step > 1)
      extra = 0;
  }
  if (start < r->min)
    return kc_errorf(err, errlen, KC_EPARSE, "beginning of range (%d) below minimum (%d): %.*s",
                     start, r->min, (int)n, s);
  if (end > r->max)
    return kc_errorf(err, errlen, KC_EPARSE, "end of range (%d) above maximum (%d): %.*s", end,
                     r->max, (int)n, s);
  if (start > end)
    return kc_errorf(err, errlen, KC_EPARSE,
                     "beginning of range (%d) beyond end of range (%d): %.*s", start, end, (int)n,
                     s);
  if (step == 0)
    return kc_errorf(err, errlen, KC_EPARSE, "step of range should be a positive number: %.*s",
                     (int)n, s);
  *out = bits(start, end, step) | extra;
  return 0;
}

/* getField: comma-separated ranges, s[0..n). */
static int parse_field(const char *s, size_t n, const bounds *r, uint64_t *out, char *err,
                       size_t errlen) {
  uint64_t acc = 0;
  size_t i = 0;
  for (;;) {
    const char *comma = memchr(s + i, ',', n - i);
    size_t len = comma ? (size_t)(comma - (s + i)) : n - i;
    uint64_t b = 0;
    int rc = parse_range(s + i, len, r, &b, err, errlen);
    if (rc)
      return rc;
    acc |= b;
    if (!comma)
      break;
    i += len + 1;
  }
  *out = acc;
  return 0;
}

/* Go's time.ParseDuration (see ctl_cron.h), truncated to milliseconds. */
int ctl_go_duration(const char *s, int64_t *out_ms, char *err, size_t errlen) {
  int64_t ns;
  int rc = kc_go_duration(s, &ns, err, errlen);
  if (rc)
    return KC_EPARSE;
  *out_ms = ns / 1000000;
  return 0;
}

static int parse_descriptor(const char *spec, ctl_cron *c, char *err, size_t errlen) {
  uint64_t any_dom = all_of(&b_dom), any_month = all_of(&b_month), any_dow = all_of(&b_dow);
  c->minute = 1;
  c->hour = 1;
  c->dom = any_dom;
  c->month = any_month;
  c->dow = any_dow;
  if (!strcmp(spec, "@yearly") || !strcmp(spec, "@annually")) {
    c->dom = 1ull << 1;
    c->month = 1ull << 1;
  } else if (!strcmp(spec, "@monthly")) {
    c->dom = 1ull << 1;
  } else if (!strcmp(spec, "@weekly")) {
    c->dow = 1;
  } else if (!strcmp(spec, "@daily") || !strcmp(spec, "@midnight")) {
  } else if (!strcmp(spec, "@hourly")) {
    c->hour = all_of(&b_hour);
  } else if (!strncmp(spec, "@every ", 7)) {
    int64_t ms = 0;
    char derr[200];
    if (ctl_go_duration(spec + 7, &ms, derr, sizeof(derr)))
      return kc_errorf(err, errlen, KC_EPARSE, "failed to parse duration %s: %s", spec, derr);
    /* robfig: at least a second, and whole seconds. */
    c->every_ms = ms < 1000 ? 1000 : ms - ms % 1000;
  } else {
    return kc_errorf(err, errlen, KC_EPARSE, "unrecognized descriptor: %s", spec);
  }
  return 0;
}

int ctl_cron_parse(const char *spec, const ctl_tzdb *db, ctl_cron *out, char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  if (!spec || !*spec)
    return kc_errorf(err, errlen, KC_EPARSE, "empty spec string");
  if (!strncmp(spec, "TZ=", 3) || !strncmp(spec, "CRON_TZ=", 8)) {
    const char *eq = strchr(spec, '='), *sp = strchr(spec, ' ');
    char zerr[200];
    size_t zn = sp ? (size_t)(sp - eq - 1) : strlen(eq + 1);
    char name[CTL_TZ_MAX];
    if (zn >= sizeof(name) || !sp)
      return kc_errorf(err, errlen, KC_EPARSE, "provided bad location %.*s: unknown time zone",
                       (int)zn, eq + 1);
    memcpy(name, eq + 1, zn);
    name[zn] = '\0';
    if (ctl_tz_check(name, db, zerr, sizeof(zerr)))
      return kc_errorf(err, errlen, KC_EPARSE, "provided bad location %s: %s", name, zerr);
    /* robfig's LoadLocation("") is UTC, where an empty zone elsewhere here means local. */
    snprintf(out->tz, sizeof(out->tz), "%s", *name ? name : "UTC");
    spec = sp;
    while (isspace((unsigned char)*spec))
      spec++;
  }
  const ctl_tzfile *zf = zone_file(db, out->tz);
  out->tzdata = zf ? zf->data : NULL;
  out->tzlen = zf ? zf->len : 0;
  if (*spec == '@')
    return parse_descriptor(spec, out, err, errlen);
  const char *f[6];
  size_t fl[6], nf = 0, total = 0;
  for (const char *p = spec; *p;) {
    while (*p && isspace((unsigned char)*p))
      p++;
    if (!*p)
      break;
    const char *st = p;
    while (*p && !isspace((unsigned char)*p))
      p++;
    if (nf < 6) {
      f[nf] = st;
      fl[nf] = (size_t)(p - st);
      nf++;
    }
    total++;
  }
  if (total != 5) {
    /* Go prints the fields as a slice: [a b c]. */
    char list[256];
    size_t off = 0;
    int n = snprintf(list, sizeof(list), "[");
    off = n > 0 ? (size_t)n : 0;
    for (size_t i = 0; i < nf && off < sizeof(list); i++) {
      n = snprintf(list + off, sizeof(list) - off, "%s%.*s", i ? " " : "", (int)fl[i], f[i]);
      off += n > 0 ? (size_t)n : 0;
    }
    if (off < sizeof(list))
      snprintf(list + off, sizeof(list) - off, "%s]", total > nf ? " ..." : "");
    return kc_errorf(err, errlen, KC_EPARSE, "expected exactly 5 fields, found %zu: %s", total,
                     list);
  }
  const bounds *b[5] = {&b_minute, &b_hour, &b_dom, &b_month, &b_dow};
  uint64_t *dst[5] = {&out->minute, &out->hour, &out->dom, &out->month, &out->dow};
  for (int i = 0; i < 5; i++) {
    int rc = parse_field(f[i], fl[i], b[i], dst[i], err, errlen);
    if (rc)
      return rc;
  }
  return 0;
}

/* ---- Next (robfig SpecSchedule.Next) ---- */

static bool day_matches(const ctl_cron *c, const struct tm *tm) {
  bool dom = (c->dom >> tm->tm_mday) & 1, dow = (c->dow >> tm->tm_wday) & 1;
  if ((c->dom & CTL_CRON_STAR) || (c->dow & CTL_CRON_STAR))
    return dom && dow;
  return dom || dow;
}

static int64_t floor_div(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static int64_t next_spec(const ctl_cron *c, const zone *z, int64_t s) {
  struct tm tm;
  civil(z, s, &tm);
  bool added = false;
  int year_limit = tm.tm_year + 5;
wrap:
  civil(z, s, &tm);
  if (tm.tm_year > year_limit)
    return CTL_CRON_NEVER;
  while (!((c->month >> (tm.tm_mon + 1)) & 1)) {
    if (!added) {
      added = true;
      s = make(z, tm.tm_year, tm.tm_mon, 1, 0, 0, 0);
      civil(z, s, &tm);
    }
    s = make(z, tm.tm_year, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    civil(z, s, &tm);
    if (tm.tm_mon == 0)
      goto wrap;
  }
  while (!day_matches(c, &tm)) {
    if (!added) {
      added = true;
      s = make(z, tm.tm_year, tm.tm_mon, tm.tm_mday, 0, 0, 0);
      civil(z, s, &tm);
    }
    s = make(z, tm.tm_year, tm.tm_mon, tm.tm_mday + 1, tm.tm_hour, tm.tm_min, tm.tm_sec);
    civil(z, s, &tm);
    /* A DST change can leave the day off midnight: back to it, as robfig does. */
    if (tm.tm_hour != 0) {
      s += tm.tm_hour > 12 ? (int64_t)(24 - tm.tm_hour) * 3600 : -(int64_t)tm.tm_hour * 3600;
      civil(z, s, &tm);
    }
    if (tm.tm_mday == 1)
      goto wrap;
  }
  while (!((c->hour >> tm.tm_hour) & 1)) {
    if (!added) {
      added = true;
      s = make(z, tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, 0, 0);
      civil(z, s, &tm);
    }
    s += 3600;
    civil(z, s, &tm);
    if (tm.tm_hour == 0)
      goto wrap;
  }
  while (!((c->minute >> tm.tm_min) & 1)) {
    if (!added) {
      added = true;
      s -= s - floor_div(s, 60) * 60;
      civil(z, s, &tm);
    }
    s += 60;
    civil(z, s, &tm);
    if (tm.tm_min == 0)
      goto wrap;
  }
  if (tm.tm_sec != 0) { /* ParseStandard's second field is 0 */
    s += 60 - tm.tm_sec;
    goto wrap;
  }
  return s;
}

int64_t ctl_cron_next(const ctl_cron *c, int64_t t_ms) {
  if (t_ms == CTL_CRON_NEVER)
    return CTL_CRON_NEVER;
  int64_t s = floor_div(t_ms, 1000);
  if (c->every_ms)
    return s * 1000 + c->every_ms;
  zone z;
  ctl_tz_load(&z, c->tzdata, c->tzlen); /* checked when parsed: UTC only without a file */
  int64_t r = next_spec(c, &z, s + 1);
  return r == CTL_CRON_NEVER ? r : r * 1000;
}

int ctl_cron_format(const char *schedule, const char *time_zone, const ctl_tzdb *db, char *out,
                    size_t cap, bool *tz_in_schedule) {
  *tz_in_schedule = strstr(schedule, "TZ") != NULL;
  int n;
  if (!*tz_in_schedule && time_zone && ctl_tz_check(time_zone, db, NULL, 0) == 0)
    n = snprintf(out, cap, "TZ=%s %s", time_zone, schedule);
  else
    n = snprintf(out, cap, "%s", schedule);
  return n < 0 || (size_t)n >= cap ? KC_ETOOBIG : 0;
}

/* ---- the controller's arithmetic (Volcano cronjob_controller_util.go) ---- */

int ctl_cron_most_recent(const ctl_cron *c, const ctl_cron_times *t, int64_t now_ms,
                         bool with_deadline, int64_t *earliest, int64_t *recent, ctl_missed *missed,
                         char *err, size_t errlen) {
  int64_t e = t->last_schedule_ms != CTL_CRON_NEVER ? t->last_schedule_ms : t->created_ms;
  *missed = CTL_MISSED_NONE;
  *recent = CTL_CRON_NEVER;
  int64_t back, deadline;
  /* A deadline too far back to compute lies before any schedule: no bound at all. */
  if (with_deadline && t->deadline_s >= 0 && !__builtin_mul_overflow(t->deadline_s, 1000, &back) &&
      !__builtin_sub_overflow(now_ms, back, &deadline) && deadline > e)
    e = deadline;
  *earliest = e;
  int64_t t1 = ctl_cron_next(c, e), t2 = ctl_cron_next(c, t1);
  if (t1 != CTL_CRON_NEVER && now_ms < t1)
    return 0;
  if (t1 != CTL_CRON_NEVER && t2 != CTL_CRON_NEVER && now_ms < t2) {
    *recent = t1;
    return 0;
  }
  int64_t between = (t1 == CTL_CRON_NEVER || t2 == CTL_CRON_NEVER) ? 0 : (t2 - t1 + 500) / 1000;
  if (between < 1)
    return kc_errorf(err, errlen, KC_ERANGE,
                     "time difference between two schedules is less than 1 second");
  int64_t elapsed = (now_ms - t1) / 1000;
  int64_t n = elapsed / between + 1;
  int64_t from = t1 + (n - 2) * between * 1000;
  int64_t last = CTL_CRON_NEVER;
  /* Bounded: from is within two intervals of now. */
  for (int64_t x = ctl_cron_next(c, from); x != CTL_CRON_NEVER && x <= now_ms;
       x = ctl_cron_next(c, x))
    last = x;
  if (n > 100)
    *missed = CTL_MISSED_MANY;
  else if (n > 0)
    *missed = CTL_MISSED_FEW;
  *recent = last;
  return 0;
}

int64_t ctl_cron_requeue_ms(const ctl_cron *c, const ctl_cron_times *t, int64_t now_ms) {
  int64_t earliest, recent;
  ctl_missed missed;
  int rc = ctl_cron_most_recent(c, t, now_ms, false, &earliest, &recent, &missed, NULL, 0);
  if (rc)
    recent = now_ms;
  else if (recent == CTL_CRON_NEVER)
    recent = missed == CTL_MISSED_NONE ? earliest : now_ms;
  int64_t next = ctl_cron_next(c, recent);
  /* Go would requeue at once (the zero time lies in the past) and spin; a schedule that never
   * comes again is looked at once a day instead. */
  if (next == CTL_CRON_NEVER)
    return 24 * 3600 * 1000;
  return next + 100 - now_ms;
}

int ctl_cron_rfc3339(int64_t t_ms, const char *tz, const ctl_tzdb *db, char *out, size_t cap) {
  zone z;
  zone_load(&z, db, tz && *tz ? tz : "UTC");
  ctl_civil c;
  ctl_tz_civil(&z, floor_div(t_ms, 1000), &c);
  long off = c.off;
  int n = snprintf(out, cap, "%04lld-%02d-%02dT%02d:%02d:%02d", (long long)c.year, c.mon, c.mday,
                   c.hour, c.min, c.sec);
  if (n < 0 || (size_t)n >= cap)
    return KC_EINVAL;
  size_t k = (size_t)n;
  if (off == 0)
    n = snprintf(out + k, cap - k, "Z");
  else
    n = snprintf(out + k, cap - k, "%c%02ld:%02ld", off < 0 ? '-' : '+', labs(off) / 3600,
                 labs(off) % 3600 / 60);
  return n < 0 || (size_t)n >= cap - k ? KC_EINVAL : 0;
}
