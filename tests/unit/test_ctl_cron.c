/* Cron schedules (robfig/cron v3 ParseStandard and Next) and the CronJob schedule arithmetic
 * (mostRecentScheduleTime, nextScheduleTimeDuration) on a fake clock: every time is given. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_cron.h"
#include "ctl_tzdb.h"
#include "kc_codec.h"
#include "kc_error.h"

static int64_t ts(const char *s) {
  int64_t ms = 0;
  assert_int_equal(kc_rfc3339_parse(s, &ms), 0);
  return ms;
}

/* The core given the zone files its input names, read as the shell reads them (ctl_tzdb.c),
 * so that these tests run against the system's tz database. A parsed schedule borrows its
 * zone's file: the db of the last parse lives until the next one. */
static ctl_tzdb last_db;

static int parse(const char *spec, ctl_cron *c, char *err, size_t len) {
  ctl_tzdb_free(&last_db);
  assert_int_equal(ctl_tzdb_read(&last_db, spec, NULL), 0);
  return ctl_cron_parse(spec, &last_db, c, err, len);
}

static int rfc3339(int64_t t_ms, const char *tz, char *out, size_t cap) {
  ctl_tzdb db;
  assert_int_equal(ctl_tzdb_read(&db, NULL, tz), 0);
  int rc = ctl_cron_rfc3339(t_ms, tz, &db, out, cap);
  ctl_tzdb_free(&db);
  return rc;
}

static int tz_check(const char *name, char *err, size_t len) {
  ctl_tzdb db;
  assert_int_equal(ctl_tzdb_read(&db, NULL, name), 0);
  int rc = ctl_tz_check(name, &db, err, len);
  ctl_tzdb_free(&db);
  return rc;
}

static int format(const char *schedule, const char *tz, char *out, size_t cap, bool *in) {
  ctl_tzdb db;
  assert_int_equal(ctl_tzdb_read(&db, schedule, tz), 0);
  int rc = ctl_cron_format(schedule, tz, &db, out, cap, in);
  ctl_tzdb_free(&db);
  return rc;
}

static ctl_cron parse_ok(const char *spec) {
  ctl_cron c;
  char err[256] = "";
  int rc = parse(spec, &c, err, sizeof(err));
  if (rc)
    fail_msg("%s: %s", spec, err);
  return c;
}

static void expect_next(const char *spec, const char *from, const char *want) {
  ctl_cron c = parse_ok(spec);
  int64_t got = ctl_cron_next(&c, ts(from));
  if (!want) {
    assert_true(got == CTL_CRON_NEVER);
    return;
  }
  char buf[64];
  assert_int_equal(ctl_cron_rfc3339(got, "", NULL, buf, sizeof(buf)), 0);
  if (got != ts(want))
    fail_msg("%s from %s: got %s, want %s", spec, from, buf, want);
}

static void test_parse_errors(void **state) {
  (void)state;
  static const struct {
    const char *spec, *msg;
  } cases[] = {
      {"", "empty spec string"},
      {"* * * *", "expected exactly 5 fields, found 4: [* * * *]"},
      {"* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"},
      {"61 * * * *", "end of range (61) above maximum (59): 61"},
      {"* 24 * * *", "end of range (24) above maximum (23): 24"},
      {"* * 0 * *", "beginning of range (0) below minimum (1): 0"},
      {"* * * * 7", "end of range (7) above maximum (6): 7"},
      {"5-3 * * * *", "beginning of range (5) beyond end of range (3): 5-3"},
      {"*/0 * * * *", "step of range should be a positive number: */0"},
      {"1-2-3 * * * *", "too many hyphens: 1-2-3"},
      {"*/2/3 * * * *", "too many slashes: */2/3"},
      {"x * * * *", "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"},
      {"* * * foo *", "failed to parse int from foo"},
      {"@fortnightly", "unrecognized descriptor: @fortnightly"},
      {"@every 1x", "failed to parse duration @every 1x: time: unknown unit \"x\" in duration"},
      {"@every", "unrecognized descriptor: @every"},
      {"TZ=Mars/Olympus 0 * * * *",
       "provided bad location Mars/Olympus: unknown time zone Mars/Olympus"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ctl_cron c;
    char err[256] = "";
    int rc = parse(cases[i].spec, &c, err, sizeof(err));
    if (rc != KC_EPARSE || strncmp(err, cases[i].msg, strlen(cases[i].msg)) != 0)
      fail_msg("%s: rc %d err \"%s\", want \"%s\"", cases[i].spec, rc, err, cases[i].msg);
  }
}

static void test_next_fields(void **state) {
  (void)state;
  expect_next("TZ=UTC */15 * * * *", "2026-12-01T10:07:30Z", "2026-12-01T10:15:00Z");
  expect_next("TZ=UTC * * * * *", "2026-12-01T10:07:00Z", "2026-12-01T10:08:00Z");
  expect_next("TZ=UTC * * * * *", "2026-12-01T10:07:59.999Z", "2026-12-01T10:08:00Z");
  expect_next("TZ=UTC 0 0 * * *", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z");
  expect_next("TZ=UTC 0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z");
  expect_next("TZ=UTC 0 0 31 2 *", "2026-03-01T00:00:00Z", NULL);
  /* Names, ranges and a step from a single value (5/20 = 5,25,45). */
  expect_next("TZ=UTC 0 9 * JAN-mar Mon-FRI", "2026-12-01T10:00:00Z", "2027-01-01T09:00:00Z");
  expect_next("TZ=UTC 5/20 * * * *", "2026-12-01T10:26:00Z", "2026-12-01T10:45:00Z");
  expect_next("TZ=UTC 1,3-4 * * * *", "2026-12-01T10:02:00Z", "2026-12-01T10:03:00Z");
  /* Day of month OR day of week when both are restricted (Friday 2026-12-04, the 13th is a
   * Sunday); AND when one is a star, even with a step of 1. */
  expect_next("TZ=UTC 0 0 13 * 5", "2026-12-01T00:00:00Z", "2026-12-04T00:00:00Z");
  expect_next("TZ=UTC 0 0 */1 * 5", "2026-12-01T00:00:00Z", "2026-12-04T00:00:00Z");
  expect_next("TZ=UTC 0 0 ? * 0", "2026-12-01T00:00:00Z", "2026-12-06T00:00:00Z");
  /* Descriptors. */
  expect_next("TZ=UTC @hourly", "2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z");
  expect_next("TZ=UTC @daily", "2026-12-01T10:00:00Z", "2026-12-02T00:00:00Z");
  expect_next("TZ=UTC @weekly", "2026-12-01T10:00:00Z", "2026-12-06T00:00:00Z");
  expect_next("TZ=UTC @monthly", "2026-12-01T10:00:00Z", "2027-01-01T00:00:00Z");
  expect_next("TZ=UTC @yearly", "2026-12-01T10:00:00Z", "2027-01-01T00:00:00Z");
  expect_next("@every 1m30s", "2026-12-01T10:00:00.250Z", "2026-12-01T10:01:30Z");
  expect_next("@every 100ms", "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z");
  /* robfig's Every: under a second (negative too) is a second, and whole seconds only */
  expect_next("@every -90s", "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z");
  expect_next("@every 1.9999s", "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z");
  /* a fraction thousands of digits long (strtod made it NaN, then cast to int64) */
  char spec[6000];
  memcpy(spec, "@every 2.", 9);
  memset(spec + 9, '5', sizeof(spec) - 12);
  memcpy(spec + sizeof(spec) - 3, "m", 2);
  expect_next(spec, "2026-12-01T10:00:00Z", "2026-12-01T10:02:33Z");
  /* the longest Go duration, in whole seconds */
  ctl_cron longest = parse_ok("@every 2562047h47m16.854775807s");
  assert_true(ctl_cron_next(&longest, ts("2026-12-01T10:00:00Z")) ==
              ts("2026-12-01T10:00:00Z") + 9223372036000LL);
}

static void test_next_zones(void **state) {
  (void)state;
  expect_next("TZ=America/New_York 0 9 * * *", "2026-12-01T00:00:00Z", "2026-12-01T14:00:00Z");
  expect_next("CRON_TZ=Asia/Tokyo 0 9 * * *", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z");
  expect_next("TZ=Asia/Kolkata 0 * * * *", "2026-12-01T00:00:00Z", "2026-12-01T00:30:00Z");
  /* Spring forward in New York on 2026-03-08: 02:30 does not exist that day; robfig skips to
   * the next day's 02:30 EDT. In summer the offset is -4. */
  expect_next("TZ=America/New_York 30 2 * * *", "2026-03-08T05:00:00Z", "2026-03-09T06:30:00Z");
  expect_next("TZ=America/New_York 0 9 * * *", "2026-07-01T00:00:00Z", "2026-07-01T13:00:00Z");
  /* The core never sets TZ. */
  assert_null(getenv("TZ"));
}

/* robfig/cron v3.0.1's Next on Go 1.26 with the same zone files printed every expectation here
 * (a two-step Next from the first time): wall times in a gap are skipped, wall times in an
 * overlap run twice, and the footer rule carries the zones past 2037. */
static void test_next_dst(void **state) {
  (void)state;
  static const struct {
    const char *spec, *from, *first, *second;
  } cases[] = {
      {"TZ=America/New_York 30 2 * * *", "2026-03-07T12:00:00Z", "2026-03-09T06:30:00Z",
       "2026-03-10T06:30:00Z"},
      {"TZ=America/New_York 30 1 * * *", "2026-10-31T12:00:00Z", "2026-11-01T05:30:00Z",
       "2026-11-01T06:30:00Z"},
      {"TZ=America/New_York 0 * * * *", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z",
       "2026-11-01T07:00:00Z"},
      {"TZ=Europe/Berlin 30 2 * * *", "2026-03-28T12:00:00Z", "2026-03-30T00:30:00Z",
       "2026-03-31T00:30:00Z"},
      {"TZ=Europe/London 30 1 * * *", "2026-03-28T12:00:00Z", "2026-03-30T00:30:00Z",
       "2026-03-31T00:30:00Z"},
      {"TZ=Asia/Kolkata 0 9 * * *", "2026-12-01T12:00:00Z", "2026-12-02T03:30:00Z",
       "2026-12-03T03:30:00Z"},
      {"TZ=America/New_York 0 9 1 7 *", "2040-01-01T00:00:00Z", "2040-07-01T13:00:00Z",
       "2041-07-01T13:00:00Z"},
      {"TZ=America/New_York 30 2 * 3 0", "2099-01-01T00:00:00Z", "2099-03-01T07:30:00Z",
       "2099-03-15T06:30:00Z"},
      {"TZ=Australia/Sydney 30 2 * * *", "2026-10-03T12:00:00Z", "2026-10-04T15:30:00Z",
       "2026-10-05T15:30:00Z"},
      {"TZ=UTC 0 0 * * *", "2026-12-01T12:00:00Z", "2026-12-02T00:00:00Z", "2026-12-03T00:00:00Z"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    expect_next(cases[i].spec, cases[i].from, cases[i].first);
    expect_next(cases[i].spec, cases[i].first, cases[i].second);
  }
}

/* A schedule without a zone runs in the process' zone as the shell found it (db->local), never
 * in the zone of the process running the core: the decision is the same wherever it runs. */
static void test_local_zone_from_db(void **state) {
  (void)state;
  ctl_tzdb db;
  assert_int_equal(ctl_tzdb_read(&db, NULL, "Asia/Tokyo"), 0);
  ctl_tzdb local = {.local = db.zone[0]}; /* Tokyo's file as the process' zone */
  ctl_cron c;
  char err[128];
  setenv("TZ", "America/New_York", 1); /* what the core must not look at */
  assert_int_equal(ctl_cron_parse("0 9 * * *", &local, &c, err, sizeof(err)), 0);
  assert_int_equal(ctl_cron_next(&c, ts("2026-12-01T12:00:00Z")), ts("2026-12-02T00:00:00Z"));
  assert_int_equal(ctl_cron_parse("TZ=Local 0 9 * * *", &local, &c, err, sizeof(err)), 0);
  assert_int_equal(ctl_cron_next(&c, ts("2026-12-01T12:00:00Z")), ts("2026-12-02T00:00:00Z"));
  char out[64];
  assert_int_equal(ctl_cron_rfc3339(ts("2026-12-01T12:00:00Z"), "Local", &local, out, sizeof(out)),
                   0);
  assert_string_equal(out, "2026-12-01T21:00:00+09:00");
  /* No local file: UTC, whatever TZ says. */
  assert_int_equal(ctl_cron_parse("0 9 * * *", NULL, &c, err, sizeof(err)), 0);
  assert_int_equal(ctl_cron_next(&c, ts("2026-12-01T12:00:00Z")), ts("2026-12-02T09:00:00Z"));
  assert_string_equal(getenv("TZ"), "America/New_York");
  unsetenv("TZ");
  ctl_tzdb_free(&db);
}

/* The shell finds the process' zone as Go's time.Local: $TZ (a name, ":name" or an absolute
 * path; "" and "UTC" are UTC), else /etc/localtime. */
static void test_local_zone_read(void **state) {
  (void)state;
  static const struct {
    const char *tz, *want; /* 9:00 local on 2026-12-01, in UTC */
  } cases[] = {
      {"Asia/Kolkata", "2026-12-02T03:30:00Z"},
      {":Asia/Tokyo", "2026-12-02T00:00:00Z"},
      {"/usr/share/zoneinfo/America/New_York", "2026-12-01T14:00:00Z"},
      {"", "2026-12-02T09:00:00Z"},
      {"UTC", "2026-12-02T09:00:00Z"},
      {"Mars/Olympus", "2026-12-02T09:00:00Z"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    setenv("TZ", cases[i].tz, 1);
    ctl_tzdb db;
    assert_int_equal(ctl_tzdb_read(&db, "0 9 * * *", NULL), 0);
    unsetenv("TZ");
    ctl_cron c;
    char err[128];
    assert_int_equal(ctl_cron_parse("0 9 * * *", &db, &c, err, sizeof(err)), 0);
    int64_t got = ctl_cron_next(&c, ts("2026-12-01T12:00:00Z"));
    ctl_tzdb_free(&db);
    if (got != ts(cases[i].want))
      fail_msg("TZ=%s: got %lld, want %s", cases[i].tz, (long long)got, cases[i].want);
  }
}

static void test_tz_check(void **state) {
  (void)state;
  char err[128];
  assert_int_equal(tz_check("America/New_York", err, sizeof(err)), 0);
  assert_int_equal(tz_check("UTC", err, sizeof(err)), 0);
  assert_int_equal(tz_check("", err, sizeof(err)), 0);
  assert_int_equal(tz_check("Mars/Olympus", err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "unknown time zone Mars/Olympus");
  assert_int_equal(tz_check("../../etc/passwd", err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "time: invalid location name");
  assert_int_equal(tz_check("/etc/passwd", err, sizeof(err)), KC_EINVAL);
  /* A file of the tree that is not TZif (zone1970.tab). */
  assert_int_equal(tz_check("zone1970.tab", err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "malformed time zone information"); /* Go 1.26 says so too */
}

/* The core decides on the bytes it is given, whatever the machine has. */
static void test_tz_from_bytes(void **state) {
  (void)state;
  /* A version 1 zone file: one type, +03:00 ("MSK"), no transitions. */
  static const unsigned char tzif_bytes[] = {
      'T', 'Z', 'i', 'f', 0, 0, 0, 0, 0, 0, 0,    0,    0, 0, 0,   0,   0,   0,
      0,   0,   0,   0,   0, 0, 0, 0, 0, 0, 0,    0,    0, 0, 0,   0,   0,   0,
      0,   0,   0,   1,   0, 0, 0, 4, 0, 0, 0x2a, 0x30, 0, 0, 'M', 'S', 'K', 0};
  char tzif[sizeof(tzif_bytes)], text[] = "# not a zone";
  memcpy(tzif, tzif_bytes, sizeof(tzif));
  ctl_tzdb db = {.n = 2}, none = {.n = 1};
  snprintf(db.zone[0].name, sizeof(db.zone[0].name), "Fake/Zone");
  db.zone[0].data = tzif;
  db.zone[0].len = sizeof(tzif);
  snprintf(db.zone[1].name, sizeof(db.zone[1].name), "Fake/Text");
  db.zone[1].data = text;
  db.zone[1].len = sizeof(text) - 1;
  snprintf(none.zone[0].name, sizeof(none.zone[0].name), "Fake/None"); /* no such file */
  char err[128];
  assert_int_equal(ctl_tz_check("Fake/Zone", &db, err, sizeof(err)), 0);
  /* A file Go reads but cannot load: its LoadLocation says why. */
  assert_int_equal(ctl_tz_check("Fake/Text", &db, err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "malformed time zone information");
  assert_int_equal(ctl_tz_check("Fake/None", &none, err, sizeof(err)), KC_EINVAL);
  assert_int_equal(ctl_tz_check("Fake/Other", &db, err, sizeof(err)), KC_EINVAL);
  assert_int_equal(ctl_tz_check("Fake/Zone", NULL, err, sizeof(err)), KC_EINVAL);
  assert_int_equal(ctl_tz_check("UTC", NULL, err, sizeof(err)), 0);
  ctl_cron c;
  assert_int_equal(ctl_cron_parse("CRON_TZ=Fake/Zone 0 * * * *", &db, &c, err, sizeof(err)), 0);
  assert_string_equal(c.tz, "Fake/Zone");
  assert_int_equal(ctl_cron_parse("TZ=Fake/Text 0 * * * *", &db, &c, err, sizeof(err)), KC_EPARSE);
  assert_string_equal(err, "provided bad location Fake/Text: malformed time zone information");
  assert_int_equal(ctl_cron_parse("CRON_TZ=Fake/Zone 0 9 * * *", &db, &c, err, sizeof(err)), 0);
  assert_int_equal(ctl_cron_next(&c, ts("2026-12-01T12:00:00Z")), ts("2026-12-02T06:00:00Z"));
  assert_false(ctl_tzif(NULL, 0));
  assert_false(ctl_tzif("TZi", 3));
}

/* Which zone files the shell reads: named zones only, each once, never a path outside. */
static void test_zones_named(void **state) {
  (void)state;
  char names[CTL_TZDB_MAX][CTL_TZ_MAX];
  assert_int_equal(ctl_cron_zones("CRON_TZ=Asia/Tokyo 0 * * * *", "Asia/Tokyo", names), 1);
  assert_string_equal(names[0], "Asia/Tokyo");
  assert_int_equal(ctl_cron_zones("TZ=Asia/Tokyo 0 * * * *", "Europe/Paris", names), 2);
  assert_string_equal(names[1], "Europe/Paris");
  assert_int_equal(ctl_cron_zones("TZ=UTC 0 * * * *", "Local", names), 0);
  assert_int_equal(ctl_cron_zones("0 * * * *", "", names), 0);
  assert_int_equal(ctl_cron_zones("TZ=../../etc/passwd 0 * * * *", "/etc/shadow", names), 0);
  assert_int_equal(ctl_cron_zones("TZ=Asia/Tokyo", NULL, names), 0); /* no schedule after it */
  assert_int_equal(ctl_cron_zones(NULL, NULL, names), 0);
}

static void test_format(void **state) {
  (void)state;
  char out[128];
  bool in;
  assert_int_equal(format("0 * * * *", "Asia/Tokyo", out, sizeof(out), &in), 0);
  assert_string_equal(out, "TZ=Asia/Tokyo 0 * * * *");
  assert_false(in);
  assert_int_equal(format("TZ=UTC 0 * * * *", "Asia/Tokyo", out, sizeof(out), &in), 0);
  assert_string_equal(out, "TZ=UTC 0 * * * *");
  assert_true(in);
  assert_int_equal(format("0 * * * *", "Mars/Olympus", out, sizeof(out), &in), 0);
  assert_string_equal(out, "0 * * * *");
  assert_int_equal(format("0 * * * *", NULL, out, sizeof(out), &in), 0);
  assert_string_equal(out, "0 * * * *");
  char small[8];
  assert_int_equal(format("0 * * * *", NULL, small, sizeof(small), &in), KC_ETOOBIG);
}

static void test_rfc3339(void **state) {
  (void)state;
  char out[64];
  int64_t t = ts("2026-12-01T15:00:00Z");
  assert_int_equal(rfc3339(t, "America/New_York", out, sizeof(out)), 0);
  assert_string_equal(out, "2026-12-01T10:00:00-05:00");
  assert_int_equal(rfc3339(t, "Asia/Kolkata", out, sizeof(out)), 0);
  assert_string_equal(out, "2026-12-01T20:30:00+05:30");
  assert_int_equal(rfc3339(t, NULL, out, sizeof(out)), 0);
  assert_string_equal(out, "2026-12-01T15:00:00Z");
  assert_int_equal(rfc3339(t, "Europe/London", out, sizeof(out)), 0);
  assert_string_equal(out, "2026-12-01T15:00:00Z");
}

/* mostRecentScheduleTime for "every minute", created at 10:00:10. */
static void test_most_recent(void **state) {
  (void)state;
  ctl_cron c = parse_ok("TZ=UTC * * * * *");
  ctl_cron_times t = {ts("2026-12-01T10:00:10Z"), CTL_CRON_NEVER, -1};
  int64_t e, r;
  ctl_missed m;
  char err[128];
  /* Not yet due. */
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T10:00:40Z"), true, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(r == CTL_CRON_NEVER);
  assert_int_equal(m, CTL_MISSED_NONE);
  assert_true(e == t.created_ms);
  /* One due. */
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T10:01:30Z"), true, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(r == ts("2026-12-01T10:01:00Z"));
  assert_int_equal(m, CTL_MISSED_NONE);
  /* Exactly on the second schedule: both are due, the latest counts. */
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T10:02:00Z"), true, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(r == ts("2026-12-01T10:02:00Z"));
  assert_int_equal(m, CTL_MISSED_FEW);
  /* A few missed: the most recent one only. */
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T10:05:30Z"), true, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(r == ts("2026-12-01T10:05:00Z"));
  assert_int_equal(m, CTL_MISSED_FEW);
  /* More than 100 missed. */
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T12:00:30Z"), true, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(r == ts("2026-12-01T12:00:00Z"));
  assert_int_equal(m, CTL_MISSED_MANY);
  /* lastScheduleTime takes over from the creation time. */
  t.last_schedule_ms = ts("2026-12-01T10:05:00Z");
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T10:05:30Z"), true, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(r == CTL_CRON_NEVER);
  /* startingDeadlineSeconds: 10 s late is too late, 40 s is not. */
  t.last_schedule_ms = CTL_CRON_NEVER;
  t.deadline_s = 10;
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T10:05:30Z"), true, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(r == CTL_CRON_NEVER);
  assert_true(e == ts("2026-12-01T10:05:20Z"));
  t.deadline_s = 40;
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T10:05:30Z"), true, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(r == ts("2026-12-01T10:05:00Z"));
  /* The deadline does not count for the requeue delay. */
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T10:05:30Z"), false, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(e == t.created_ms);
  /* A date that never comes. */
  ctl_cron never = parse_ok("TZ=UTC 0 0 31 2 *");
  assert_int_equal(ctl_cron_most_recent(&never, &t, ts("2026-12-01T10:05:30Z"), true, &e, &r, &m,
                                        err, sizeof(err)),
                   KC_ERANGE);
  assert_string_equal(err, "time difference between two schedules is less than 1 second");
}

/* A startingDeadlineSeconds too large for milliseconds bounds nothing (deadline_s * 1000
 * used to overflow, here into a deadline in the future that hid every schedule). */
static void test_deadline_overflow(void **state) {
  (void)state;
  ctl_cron c = parse_ok("TZ=UTC * * * * *");
  ctl_cron_times t = {ts("2026-12-01T10:00:10Z"), CTL_CRON_NEVER, INT64_MAX};
  int64_t e, r;
  ctl_missed m;
  char err[128];
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T10:05:30Z"), true, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(e == t.created_ms);
  assert_true(r == ts("2026-12-01T10:05:00Z"));
  t.deadline_s = INT64_MAX / 1000;
  assert_int_equal(
      ctl_cron_most_recent(&c, &t, ts("2026-12-01T10:05:30Z"), true, &e, &r, &m, err, sizeof(err)),
      0);
  assert_true(r == ts("2026-12-01T10:05:00Z"));
}

static void test_requeue(void **state) {
  (void)state;
  ctl_cron c = parse_ok("TZ=UTC * * * * *");
  ctl_cron_times t = {ts("2026-12-01T10:00:10Z"), CTL_CRON_NEVER, -1};
  /* Nothing due yet: the next minute plus 100 ms. */
  assert_int_equal(ctl_cron_requeue_ms(&c, &t, ts("2026-12-01T10:00:40Z")), 20100);
  /* Just scheduled 10:01: the next one, 10:02. */
  t.last_schedule_ms = ts("2026-12-01T10:01:00Z");
  assert_int_equal(ctl_cron_requeue_ms(&c, &t, ts("2026-12-01T10:01:00.500Z")), 59600);
  /* Behind (missed ones): from now. */
  assert_int_equal(ctl_cron_requeue_ms(&c, &t, ts("2026-12-01T10:03:30Z")), 30100);
  /* A schedule that never comes is looked at once a day. */
  ctl_cron never = parse_ok("TZ=UTC 0 0 31 2 *");
  assert_int_equal(ctl_cron_requeue_ms(&never, &t, ts("2026-12-01T10:03:30Z")), 24 * 3600 * 1000);
  /* @every 90s from the creation time. */
  ctl_cron every = parse_ok("@every 90s");
  t.last_schedule_ms = CTL_CRON_NEVER;
  assert_int_equal(ctl_cron_requeue_ms(&every, &t, ts("2026-12-01T10:00:40Z")), 60100);
}

int main(void) {
  unsetenv("TZ");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_next_fields),
      cmocka_unit_test(test_next_zones),
      cmocka_unit_test(test_tz_check),
      cmocka_unit_test(test_tz_from_bytes),
      cmocka_unit_test(test_zones_named),
      cmocka_unit_test(test_format),
      cmocka_unit_test(test_rfc3339),
      cmocka_unit_test(test_most_recent),
      cmocka_unit_test(test_deadline_overflow),
      cmocka_unit_test(test_requeue),
      cmocka_unit_test(test_next_dst),
      cmocka_unit_test(test_local_zone_from_db),
      cmocka_unit_test(test_local_zone_read),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ctl_tzdb_free(&last_db);
  return rc;
}
