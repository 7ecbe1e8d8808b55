/* kc_go_duration against Go's time.ParseDuration: the forms Go's own tests cover (units,
 * signs, fractions, the int64 bounds), Go's error messages, and the inputs that broke the
 * three parsers it replaces (a fraction thousands of digits long became NaN, cast to int64). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_flags.h"
#include "kc_time.h"

#define NS  1LL
#define US  (1000 * NS)
#define MS  (1000 * US)
#define SEC (1000 * MS)
#define MIN (60 * SEC)
#define HR  (60 * MIN)

static void test_valid(void **state) {
  (void)state;
  static const struct {
    const char *in;
    int64_t ns;
  } ok[] = {
      {"0", 0},
      {"-0", 0},
      {"+0", 0},
      {"5s", 5 * SEC},
      {"+5s", 5 * SEC},
      {"-5s", -5 * SEC},
      {"1478s", 1478 * SEC},
      {"5.0s", 5 * SEC},
      {"5.6s", 5 * SEC + 600 * MS},
      {"5.s", 5 * SEC},
      {".5s", 500 * MS},
      {"1.004s", 1 * SEC + 4 * MS},
      {"100.00100s", 100 * SEC + 1 * MS},
      {"10ns", 10},
      {"11us", 11 * US},
      {"12\xc2\xb5s", 12 * US},
      {"12\xce\xbcs", 12 * US},
      {"13ms", 13 * MS},
      {"15m", 15 * MIN},
      {"16h", 16 * HR},
      {"3h30m", 3 * HR + 30 * MIN},
      {"10.5s4m", 4 * MIN + 10 * SEC + 500 * MS},
      {"-2m3.4s", -(2 * MIN + 3 * SEC + 400 * MS)},
      {"1h2m3s4ms5us6ns", HR + 2 * MIN + 3 * SEC + 4 * MS + 5 * US + 6},
      {"39h9m14.425s", 39 * HR + 9 * MIN + 14 * SEC + 425 * MS},
      {"0.3333333333333333333h", 20 * MIN},
      {"9007199254740993ns", (1LL << 53) + 1},
      {"9223372036854775807ns", INT64_MAX},
      {"9223372036854775.807us", INT64_MAX},
      {"9223372036s854ms775us807ns", INT64_MAX},
      {"-9223372036854775808ns", INT64_MIN},
      {"-9223372036854775.808us", INT64_MIN},
      {"-9223372036s854ms775us808ns", INT64_MIN},
      {"0.100000000000000000000h", 6 * MIN},
      /* precision stops where the fraction passes 2^63, as in Go */
      {"0.830103483285477580700h", 49 * MIN + 48 * SEC + 372539827},
  };
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    int64_t v = -1;
    char err[128] = "x";
    int rc = kc_go_duration(ok[i].in, &v, err, sizeof(err));
    if (rc != 0 || v != ok[i].ns)
      fail_msg("%s: rc %d (%s) value %lld, want %lld", ok[i].in, rc, err, (long long)v,
               (long long)ok[i].ns);
    assert_string_equal(err, "");
  }
}

static void test_invalid(void **state) {
  (void)state;
  static const struct {
    const char *in;
    int rc;
    const char *msg;
  } bad[] = {
      {"", KC_EPARSE, "time: invalid duration \"\""},
      {"3", KC_EPARSE, "time: missing unit in duration \"3\""},
      {"-", KC_EPARSE, "time: invalid duration \"-\""},
      {"s", KC_EPARSE, "time: invalid duration \"s\""},
      {".", KC_EPARSE, "time: invalid duration \".\""},
      {"-.", KC_EPARSE, "time: invalid duration \"-.\""},
      {".s", KC_EPARSE, "time: invalid duration \".s\""},
      {"+.s", KC_EPARSE, "time: invalid duration \"+.s\""},
      {"--1s", KC_EPARSE, "time: invalid duration \"--1s\""},
      {"1s2", KC_EPARSE, "time: missing unit in duration \"1s2\""},
      {"1d", KC_EPARSE, "time: unknown unit \"d\" in duration \"1d\""},
      {"1.s.2", KC_EPARSE, "time: missing unit in duration \"1.s.2\""},
      {"1 s", KC_EPARSE, "time: unknown unit \" s\" in duration \"1 s\""},
      {"\x85\x85", KC_EPARSE, "time: invalid duration \"\\x85\\x85\""},
      {"\xff"
       "ff",
       KC_EPARSE, "time: invalid duration \"\\xffff\""},
      {"hello \xff"
       "ff world",
       KC_EPARSE, "time: invalid duration \"hello \\xffff world\""},
      {"1\"x\\", KC_EPARSE, "time: unknown unit \"\\\"x\\\\\" in duration \"1\\\"x\\\\\""},
      {"9223372036854775808ns", KC_ERANGE, "time: invalid duration \"9223372036854775808ns\""},
      {"9223372036854775.808us", KC_ERANGE, "time: invalid duration"},
      {"9223372036854ms775us808ns", KC_ERANGE, "time: invalid duration"},
      {"9223372036s854ms775us808ns", KC_ERANGE, "time: invalid duration"},
      {"-9223372036854775809ns", KC_ERANGE, "time: invalid duration"},
      {"99999999999999999999s", KC_ERANGE, "time: invalid duration"},
      {"2562048h", KC_ERANGE, "time: invalid duration"},
      /* Go's uint64 sum wraps to 0 here; an overflow all the same */
      {"9223372036854775808ns9223372036854775808ns", KC_ERANGE, "time: invalid duration"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int64_t v = 42;
    char err[128] = "";
    int rc = kc_go_duration(bad[i].in, &v, err, sizeof(err));
    if (rc != bad[i].rc || strncmp(err, bad[i].msg, strlen(bad[i].msg)) != 0)
      fail_msg("%s: rc %s \"%s\", want %s \"%s\"", bad[i].in, kc_err_name(rc), err,
               kc_err_name(bad[i].rc), bad[i].msg);
    assert_int_equal(v, 42); /* untouched */
    assert_int_equal(kc_go_duration(bad[i].in, &v, NULL, 0), bad[i].rc);
    char tiny[4];
    assert_int_equal(kc_go_duration(bad[i].in, &v, tiny, sizeof(tiny)), bad[i].rc);
    assert_string_equal(tiny, "tim");
  }
}

/* A fraction of thousands of digits (the old parsers' strtod made it NaN or Inf, then cast
 * it to int64) only stops adding precision; so do integers padded with zeros. */
static void test_long_inputs(void **state) {
  (void)state;
  enum { N = 20000 };
  static char s[N + 8]; /* static: gcc's -Warray-bounds misreads a malloc'd one under ASan */
  memcpy(s, "1.", 2);
  memset(s + 2, '9', N);
  memcpy(s + 2 + N, "s", 2);
  int64_t v = 0;
  assert_int_equal(kc_go_duration(s, &v, NULL, 0), 0);
  /* the fraction keeps 18 digits; their float64 product rounds to a whole second, as in Go */
  assert_int_equal(v, 2 * SEC);
  memset(s, '0', N);
  memcpy(s + N, "1h", 3);
  assert_int_equal(kc_go_duration(s, &v, NULL, 0), 0);
  assert_int_equal(v, HR);
  memset(s, '9', N);
  memcpy(s + N, "h", 2);
  char err[64];
  assert_int_equal(kc_go_duration(s, &v, err, sizeof(err)), KC_ERANGE);
  assert_int_equal(strlen(err), sizeof(err) - 1); /* Go's message, cut to the buffer */
  assert_int_equal(strncmp(err, "time: invalid duration \"9999", 28), 0);
}

/* The flag parser is the same parser, with its own error codes. */
static void test_flags_use_it(void **state) {
  (void)state;
  int64_t v;
  assert_int_equal(kc_parse_duration("1h2m3s4ms5us6ns", &v), 0);
  assert_int_equal(v, HR + 2 * MIN + 3 * SEC + 4 * MS + 5 * US + 6);
  assert_int_equal(kc_parse_duration("1d", &v), KC_EINVAL);
  assert_int_equal(kc_parse_duration("9223372036854775808ns", &v), KC_ERANGE);
  assert_int_equal(kc_parse_duration("-9223372036854775808ns", &v), 0);
  assert_true(v == INT64_MIN);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid),
      cmocka_unit_test(test_invalid),
      cmocka_unit_test(test_long_inputs),
      cmocka_unit_test(test_flags_use_it),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
