/* Time zones from TZif bytes (controller/cronjob/ctl_tz.c) against Go's time package.
 *
 * Every expected value below was printed by Go 1.26 (time.Unix(t, 0).In(loc).Format(RFC3339),
 * time.Date, LoadLocationFromTZData) for the same zone file or the same fixture bytes, and the
 * system zones were cross-checked with `TZ=zone date -d @t`: none is computed by the code
 * under test. The system zones come from /usr/share/zoneinfo (tzdata); the fixtures are
 * small files written for this test (a version 1 file, and version 2 files whose POSIX TZ
 * footers cover Jn, n and Mm.w.d rules, negative and past-24h rule times, a southern
 * hemisphere year, a default DST offset and a footer Go cannot parse). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_tz.h"
#include "kc_file.h"

typedef struct {
  char *data;
  size_t len;
} bytes;

static bytes sysfile(const char *name) {
  char path[256];
  snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", name);
  bytes b;
  assert_int_equal(kc_file_read(path, 1 << 20, &b.data, &b.len), 0);
  return b;
}

static bytes unhex(const char *hex) {
  bytes b = {malloc(strlen(hex) / 2 + 1), strlen(hex) / 2};
  assert_non_null(b.data);
  for (size_t i = 0; i < b.len; i++) {
    unsigned v;
    assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
    b.data[i] = (char)v;
  }
  return b;
}

static void fmt(const ctl_civil *c, char *out, size_t cap) {
  int n = snprintf(out, cap, "%04lld-%02d-%02dT%02d:%02d:%02d", (long long)c->year, c->mon, c->mday,
                   c->hour, c->min, c->sec);
  long off = c->off, a = off < 0 ? -off : off;
  if (off == 0)
    snprintf(out + n, cap - (size_t)n, "Z");
  else
    snprintf(out + n, cap - (size_t)n, "%c%02ld:%02ld", off < 0 ? '-' : '+', a / 3600,
             a % 3600 / 60);
}

static void expect_civil(const ctl_tz *z, int64_t t, const char *want) {
  ctl_civil c;
  ctl_tz_civil(z, t, &c);
  char got[64];
  fmt(&c, got, sizeof(got));
  if (strcmp(got, want) != 0)
    fail_msg("%lld: got %s, want %s", (long long)t, got, want);
}

typedef struct {
  int64_t t;
  const char *want;
} at;

static void expect_zone(const char *name, const at *cases, size_t n) {
  bytes b = sysfile(name);
  ctl_tz z;
  assert_true(ctl_tz_load(&z, b.data, b.len));
  for (size_t i = 0; i < n; i++)
    expect_civil(&z, cases[i].t, cases[i].want);
  free(b.data);
}

#define EXPECT_ZONE(name, ...)                                                                     \
  do {                                                                                             \
    static const at cases_[] = {__VA_ARGS__};                                                      \
    expect_zone(name, cases_, sizeof(cases_) / sizeof(cases_[0]));                                 \
  } while (0)

static void test_system_zones(void **state) {
  (void)state;
  /* Both sides of New York's 2026 transitions, and 2100's from the footer rule. */
  EXPECT_ZONE("America/New_York", {1772953199, "2026-03-08T01:59:59-05:00"},
              {1772953200, "2026-03-08T03:00:00-04:00"}, {1793512799, "2026-11-01T01:59:59-04:00"},
              {1793512800, "2026-11-01T01:00:00-05:00"}, {4108690799, "2100-03-14T01:59:59-05:00"},
              {4108690800, "2100-03-14T03:00:00-04:00"}, {4129246800, "2100-11-07T01:00:00-04:00"},
              {4129250400, "2100-11-07T01:00:00-05:00"},
              /* Before the first transition: local mean time, -4:56:02. */
              {-5364662400, "1799-12-31T19:03:58-04:56"});
  EXPECT_ZONE("Europe/London", {1774745999, "2026-03-29T00:59:59Z"},
              {1774746000, "2026-03-29T02:00:00+01:00"}, {1792889999, "2026-10-25T01:59:59+01:00"},
              {1792890000, "2026-10-25T01:00:00Z"});
  EXPECT_ZONE("Asia/Kolkata", {1796137200, "2026-12-01T20:30:00+05:30"},
              {-838339200, "1943-06-09T06:30:00+06:30"});
  /* The footer's southern year (AEDT from October to April) in 2050. */
  EXPECT_ZONE("Australia/Sydney", {2532527999, "2050-04-03T02:59:59+11:00"},
              {2532528000, "2050-04-03T02:00:00+10:00"}, {2548252799, "2050-10-02T01:59:59+10:00"},
              {2548252800, "2050-10-02T03:00:00+11:00"});
  /* Dublin's footer has winter as its negative "DST" (IST-1GMT0,M10.5.0,M3.5.0/1). */
  EXPECT_ZONE("Europe/Dublin", {2540894400, "2050-07-08T13:00:00+01:00"},
              {2524651200, "2050-01-01T12:00:00Z"});
  EXPECT_ZONE("UTC", {1796137200, "2026-12-01T15:00:00Z"});
}

typedef struct {
  int64_t y, mon, d, h, mi, s;
  int64_t want;
} date_case;

static void expect_dates(const char *name, const date_case *c, size_t n) {
  bytes b = sysfile(name);
  ctl_tz z;
  assert_true(ctl_tz_load(&z, b.data, b.len));
  for (size_t i = 0; i < n; i++) {
    int64_t got = ctl_tz_date(&z, c[i].y, c[i].mon, c[i].d, c[i].h, c[i].mi, c[i].s);
    if (got != c[i].want)
      fail_msg("%s %lld-%lld-%lld %lld:%lld: got %lld, want %lld", name, (long long)c[i].y,
               (long long)c[i].mon, (long long)c[i].d, (long long)c[i].h, (long long)c[i].mi,
               (long long)got, (long long)c[i].want);
  }
  free(b.data);
}

/* time.Date in gaps and overlaps: Go looks the offset up at the wall time read as UTC and
 * checks it once, so a gap resolves back in New York (02:30 is 01:30 EST) and forward in
 * Berlin, London and Sydney (02:30 is 03:30 summer time); an overlap takes the first
 * occurrence in New York and the second in Berlin and Sydney. */
static void test_date_gaps_overlaps_normalisation(void **state) {
  (void)state;
  static const date_case ny[] = {
      {2026, 3, 8, 2, 30, 0, 1772951400},   /* 2026-03-08T01:30:00-05:00 */
      {2026, 3, 8, 2, 0, 0, 1772949600},    /* 01:00 EST */
      {2026, 3, 8, 3, 0, 0, 1772953200},    /* 03:00 EDT */
      {2026, 11, 1, 1, 30, 0, 1793511000},  /* 01:30 EDT, the first */
      {2026, 11, 1, 1, 0, 0, 1793509200},   /* 01:00 EDT */
      {2026, 11, 1, 2, 0, 0, 1793516400},   /* 02:00 EST */
      {2100, 3, 14, 2, 30, 0, 4108689000},  /* footer: 01:30 EST */
      {2026, 13, 1, 0, 0, 0, 1798779600},   /* 2027-01-01T00:00 */
      {2026, 3, 0, 12, 0, 0, 1772298000},   /* 2026-02-28T12:00 */
      {2026, 12, 31, 25, 0, 0, 1798783200}, /* 2027-01-01T01:00 */
      {2026, 1, 1, -1, 0, 0, 1767240000},   /* 2025-12-31T23:00 */
  };
  expect_dates("America/New_York", ny, sizeof(ny) / sizeof(ny[0]));
  static const date_case berlin[] = {{2026, 3, 29, 2, 30, 0, 1774747800},   /* 03:30 CEST */
                                     {2026, 10, 25, 2, 30, 0, 1792891800}}; /* 02:30 CET */
  expect_dates("Europe/Berlin", berlin, 2);
  static const date_case london[] = {{2026, 3, 29, 1, 30, 0, 1774747800}}; /* 02:30 BST */
  expect_dates("Europe/London", london, 1);
  static const date_case sydney[] = {{2026, 10, 4, 2, 30, 0, 1791045000}, /* 03:30 AEDT */
                                     {2026, 4, 5, 2, 30, 0, 1775320200}}; /* 02:30 AEST */
  expect_dates("Australia/Sydney", sydney, 2);
}

/* A version 1 file: +01:00, then +02:00 (DST) from 1e9 on, no footer. */
static const char v1_hex[] =
    "545a6966000000000000000000000000000000000000000000000000000000000000000100000002000000043b9a"
    "ca000100000e10000000001c2001005a5a5a00";

static void test_version1_fixture(void **state) {
  (void)state;
  bytes b = unhex(v1_hex);
  ctl_tz z;
  assert_true(ctl_tz_load(&z, b.data, b.len));
  expect_civil(&z, 0, "1970-01-01T01:00:00+01:00");
  expect_civil(&z, 999999999, "2001-09-09T02:46:39+01:00");
  expect_civil(&z, 1000000000, "2001-09-09T03:46:40+02:00");
  expect_civil(&z, 4000000000, "2096-10-02T09:06:40+02:00");
  free(b.data);
}

/* Version 2 files with one type (-02:00), no transitions, and the footer given. */
static bytes v2_fixture(const char *footer) {
  static const char head[] =
      "545a69663200000000000000000000000000000000000000000000000000000000000000000000010000000100"
      "000000000000545a69663200000000000000000000000000000000000000000000000000000000000000000000"
      "0100000004ffffe3e000005a5a5a000a";
  char hex[512];
  size_t n = (size_t)snprintf(hex, sizeof(hex), "%s", head);
  for (const char *p = footer; *p; p++)
    n += (size_t)snprintf(hex + n, sizeof(hex) - n, "%02x", (unsigned char)*p);
  snprintf(hex + n, sizeof(hex) - n, "0a");
  return unhex(hex);
}

/* Instants in 2027 (UTC): Mar 1 12:00, Mar 1 23:59:59, Mar 2 00:00, Oct 25 02:00, Jun 15 12:00,
 * Dec 15 12:00, Mar 14 03:00, Mar 14 02:06:40, Nov 8 04:59:59, Nov 8 05:00, Apr 21 12:00. */
static const int64_t probes[] = {1803902400, 1803945599, 1803945600, 1824426000,
                                 1813060800, 1828872000, 1804993200, 1804990000,
                                 1825649999, 1825650000, 1808323200};
/* time.Date in 2027: Mar 14 01:30, Apr 4 02:30, Oct 3 02:30, Nov 8 01:30. */
static const int64_t dates[][5] = {
    {2027, 3, 14, 1, 30}, {2027, 4, 4, 2, 30}, {2027, 10, 3, 2, 30}, {2027, 11, 8, 1, 30}};

typedef struct {
  const char *footer;
  const char *civil[11];
  int64_t date[4];
} footer_case;

static const footer_case footers[] = {
    {"<+0530>-5:30",
     {"2027-03-01T17:30:00+05:30", "2027-03-02T05:29:59+05:30", "2027-03-02T05:30:00+05:30",
      "2027-10-25T06:30:00+05:30", "2027-06-15T17:30:00+05:30", "2027-12-15T17:30:00+05:30",
      "2027-03-14T08:30:00+05:30", "2027-03-14T07:36:40+05:30", "2027-11-08T10:29:59+05:30",
      "2027-11-08T10:30:00+05:30", "2027-04-21T21:30:00+05:30"},
     {1804968000, 1806786000, 1822510800, 1825617600}},
    {"XST3XDT,J60/0,300",
     {"2027-03-01T10:00:00-02:00", "2027-03-01T21:59:59-02:00", "2027-03-01T22:00:00-02:00",
      "2027-10-24T23:00:00-02:00", "2027-06-15T10:00:00-02:00", "2027-12-15T09:00:00-03:00",
      "2027-03-14T01:00:00-02:00", "2027-03-14T00:06:40-02:00", "2027-11-08T01:59:59-03:00",
      "2027-11-08T02:00:00-03:00", "2027-04-21T14:00:00-02:00"},
     {1804995000, 1806813000, 1822537800, 1825648200}},
    {"AAA-10BBB,M10.1.0,M4.1.0/3",
     {"2027-03-01T23:00:00+11:00", "2027-03-02T10:59:59+11:00", "2027-03-02T11:00:00+11:00",
      "2027-10-25T12:00:00+11:00", "2027-06-15T22:00:00+10:00", "2027-12-15T23:00:00+11:00",
      "2027-03-14T14:00:00+11:00", "2027-03-14T13:06:40+11:00", "2027-11-08T15:59:59+11:00",
      "2027-11-08T16:00:00+11:00", "2027-04-22T02:00:00+10:00"},
     {1804948200, 1806769800, 1822494600, 1825597800}},
    {"CCC5DDD,M3.2.0/-1,M11.1.0/26",
     {"2027-03-01T07:00:00-05:00", "2027-03-01T18:59:59-05:00", "2027-03-01T19:00:00-05:00",
      "2027-10-24T21:00:00-04:00", "2027-06-15T08:00:00-04:00", "2027-12-15T07:00:00-05:00",
      "2027-03-13T22:00:00-05:00", "2027-03-13T21:06:40-05:00", "2027-11-08T00:59:59-04:00",
      "2027-11-08T01:00:00-04:00", "2027-04-21T12:00:00-04:00"},
     {1805002200, 1806820200, 1822545000, 1825651800}},
    {"EEE0FFF",
     {"2027-03-01T12:00:00Z", "2027-03-01T23:59:59Z", "2027-03-02T00:00:00Z",
      "2027-10-25T02:00:00+01:00", "2027-06-15T13:00:00+01:00", "2027-12-15T12:00:00Z",
      "2027-03-14T04:00:00+01:00", "2027-03-14T03:06:40+01:00", "2027-11-08T04:59:59Z",
      "2027-11-08T05:00:00Z", "2027-04-21T17:00:00+01:00"},
     {1804987800, 1806802200, 1822527000, 1825637400}},
    /* Go ignores a footer it cannot parse: the last type (-02:00) holds. */
    {"bad",
     {"2027-03-01T10:00:00-02:00", "2027-03-01T21:59:59-02:00", "2027-03-01T22:00:00-02:00",
      "2027-10-24T23:00:00-02:00", "2027-06-15T10:00:00-02:00", "2027-12-15T10:00:00-02:00",
      "2027-03-14T01:00:00-02:00", "2027-03-14T00:06:40-02:00", "2027-11-08T02:59:59-02:00",
      "2027-11-08T03:00:00-02:00", "2027-04-21T14:00:00-02:00"},
     {1804995000, 1806813000, 1822537800, 1825644600}},
};

static void test_footer_rules(void **state) {
  (void)state;
  for (size_t f = 0; f < sizeof(footers) / sizeof(footers[0]); f++) {
    bytes b = v2_fixture(footers[f].footer);
    ctl_tz z;
    assert_true(ctl_tz_load(&z, b.data, b.len));
    for (size_t i = 0; i < 11; i++) {
      ctl_civil c;
      ctl_tz_civil(&z, probes[i], &c);
      char got[64];
      fmt(&c, got, sizeof(got));
      if (strcmp(got, footers[f].civil[i]) != 0)
        fail_msg("%s at %lld: got %s, want %s", footers[f].footer, (long long)probes[i], got,
                 footers[f].civil[i]);
    }
    for (size_t i = 0; i < 4; i++) {
      int64_t got =
          ctl_tz_date(&z, dates[i][0], dates[i][1], dates[i][2], dates[i][3], dates[i][4], 0);
      if (got != footers[f].date[i])
        fail_msg("%s date %zu: got %lld, want %lld", footers[f].footer, i, (long long)got,
                 (long long)footers[f].date[i]);
    }
    free(b.data);
  }
}

/* What Go's LoadLocationFromTZData refuses ("malformed time zone information"). */
static void test_malformed(void **state) {
  (void)state;
  ctl_tz z;
  bytes ny = sysfile("America/New_York");
  assert_false(ctl_tz_load(&z, ny.data, 100));           /* cut short */
  assert_int_equal(ctl_tz_lookup(&z, 0, NULL, NULL), 0); /* left UTC */
  ny.data[4] = '4'; /* Go 1.26 reads versions 1, 2 and 3 only */
  assert_false(ctl_tz_load(&z, ny.data, ny.len));
  free(ny.data);
  bytes v1 = unhex(v1_hex);
  v1.data[39] = 0; /* no types */
  assert_false(ctl_tz_load(&z, v1.data, v1.len));
  free(v1.data);
  v1 = unhex(v1_hex);
  v1.data[48] = 2; /* a transition to a type that does not exist */
  assert_false(ctl_tz_load(&z, v1.data, v1.len));
  free(v1.data);
  assert_false(ctl_tz_load(&z, "# not a zone\n", 13));
  assert_false(ctl_tz_load(&z, NULL, 0));
}

/* A broad cross-check with the C library's own reader of the same files: the offset and wall
 * time of an instant every 25 hours from 1970 to 2100 in zones of every kind (DST north and
 * south, negative DST, half and quarter hours, zones that dropped or changed DST, 2100 from
 * the footer rules). The test may set TZ; the code under test never reads it. */
static void test_agrees_with_libc(void **state) {
  (void)state;
  static const char *const zones[] = {"America/New_York",  "America/Los_Angeles",
                                      "America/Sao_Paulo", "America/Santiago",
                                      "America/Nuuk",      "America/St_Johns",
                                      "Europe/London",     "Europe/Berlin",
                                      "Europe/Dublin",     "Europe/Moscow",
                                      "Africa/Casablanca", "Asia/Kolkata",
                                      "Asia/Kathmandu",    "Asia/Tehran",
                                      "Asia/Jerusalem",    "Asia/Tokyo",
                                      "Australia/Sydney",  "Australia/Lord_Howe",
                                      "Pacific/Auckland",  "Pacific/Chatham",
                                      "Pacific/Apia",      "UTC"};
  for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
    bytes b = sysfile(zones[i]);
    ctl_tz z;
    assert_true(ctl_tz_load(&z, b.data, b.len));
    char tz[128];
    snprintf(tz, sizeof(tz), ":%s", zones[i]);
    setenv("TZ", tz, 1);
    tzset();
    for (int64_t t = 0; t < 4102444800; t += 25 * 3600) {
      time_t tt = (time_t)t;
      struct tm tm;
      assert_non_null(localtime_r(&tt, &tm));
      ctl_civil c;
      ctl_tz_civil(&z, t, &c);
      if (c.off != tm.tm_gmtoff || c.year != tm.tm_year + 1900 || c.mon != tm.tm_mon + 1 ||
          c.mday != tm.tm_mday || c.hour != tm.tm_hour || c.min != tm.tm_min ||
          c.wday != tm.tm_wday)
        fail_msg("%s at %lld: offset %d, libc %ld", zones[i], (long long)t, c.off, tm.tm_gmtoff);
    }
    free(b.data);
  }
  unsetenv("TZ");
  tzset();
}

static void test_calendar(void **state) {
  (void)state;
  assert_int_equal(ctl_days_from_civil(1970, 1, 1), 0);
  assert_int_equal(ctl_days_from_civil(2000, 3, 1), 11017);
  assert_int_equal(ctl_days_from_civil(1969, 12, 31), -1);
  assert_int_equal(ctl_days_from_civil(2026, 2, 29), ctl_days_from_civil(2026, 3, 1));
  int64_t y;
  int m, d;
  ctl_civil_from_days(-719468, &y, &m, &d); /* 0000-03-01 */
  assert_true(y == 0 && m == 3 && d == 1);
  ctl_civil_from_days(20789, &y, &m, &d);
  assert_true(y == 2026 && m == 12 && d == 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_system_zones),
      cmocka_unit_test(test_date_gaps_overlaps_normalisation),
      cmocka_unit_test(test_version1_fixture),
      cmocka_unit_test(test_footer_rules),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_calendar),
      cmocka_unit_test(test_agrees_with_libc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
