/* The shells' clock (common/runtime/kc_clock.c): the host's clocks, and the test hook. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <time.h>

#include "kc_clock.h"

#define SEC 1000000000LL

static int reset(void **state) {
  (void)state;
  kc_clock_real();
  return 0;
}

static void test_real_clocks(void **state) {
  (void)state;
  int64_t before = (int64_t)time(NULL);
  kc_walltime w = kc_clock_wall();
  int64_t after = (int64_t)time(NULL);
  assert_true(w.sec >= before && w.sec <= after);
  assert_true(w.nsec >= 0 && w.nsec < SEC);
  int64_t ms = kc_clock_wall_ms();
  assert_true(ms / 1000 >= before && ms / 1000 <= after + 1);
  uint64_t m1 = kc_clock_mono_ns(), m2 = kc_clock_mono_ns();
  assert_true(m1 > 0 && m2 >= m1);
}

static void test_fake_stands_still_and_advances(void **state) {
  (void)state;
  /* 2026-11-29T16:01:51.123456789Z */
  kc_clock_fake(1795968111 * SEC + 123456789, 42);
  assert_int_equal(kc_clock_wall_s(), 1795968111);
  assert_int_equal(kc_clock_wall_ms(), 1795968111123LL);
  assert_int_equal(kc_clock_wall_ns(), 1795968111 * SEC + 123456789);
  assert_int_equal(kc_clock_mono_ns(), 42);
  char buf[KC_TIME_LEN];
  kc_clock_rfc3339(buf);
  assert_string_equal(buf, "2026-11-29T16:01:51Z");
  kc_clock_rfc3339_micro(buf);
  assert_string_equal(buf, "2026-11-29T16:01:51.123456Z");
  kc_clock_advance(900 * 1000000LL);
  assert_int_equal(kc_clock_wall_ms(), 1795968112023LL);
  assert_int_equal(kc_clock_mono_ns(), 42 + 900 * 1000000ULL);
  /* A step back moves the wall clock only. */
  kc_clock_advance(-10 * SEC);
  assert_int_equal(kc_clock_wall_s(), 1795968102);
  assert_int_equal(kc_clock_mono_ns(), 42 + 900 * 1000000ULL);
}

static void test_fake_before_epoch_splits_by_floor(void **state) {
  (void)state;
  kc_clock_fake(-1500000000LL, 0); /* 1.5 s before the epoch */
  kc_walltime w = kc_clock_wall();
  assert_int_equal(w.sec, -2);
  assert_int_equal(w.nsec, 500000000);
  assert_int_equal(kc_clock_wall_ms(), -1500);
}

static void test_real_after_fake(void **state) {
  (void)state;
  kc_clock_fake(0, 0);
  kc_clock_real();
  assert_true(kc_clock_wall_s() >= (int64_t)time(NULL) - 1);
  kc_clock_advance(SEC); /* no effect on the real clock */
  assert_true(kc_clock_wall_s() <= (int64_t)time(NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_real_clocks, reset),
      cmocka_unit_test_teardown(test_fake_stands_still_and_advances, reset),
      cmocka_unit_test_teardown(test_fake_before_epoch_splits_by_floor, reset),
      cmocka_unit_test_teardown(test_real_after_fake, reset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
