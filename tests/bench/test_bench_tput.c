/* bench_tput: scheduler_perf's sampling rule, checked tick by tick. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_tput.h"

#define S(x)              ((uint64_t)((x)*1e9))
/* cmocka 1.1 has no double comparison; rates here are exact up to rounding. */
#define assert_near(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9)

static void test_ticks_before_the_first_pod_are_ignored(void **state) {
  (void)state;
  bench_tput t;
  bench_tput_init(&t);
  assert_int_equal(bench_tput_tick(&t, S(1), 0), 0);
  assert_int_equal(bench_tput_tick(&t, S(2), 0), 0);
  assert_false(t.started);
  /* The first tick with pods is t0, not a sample. */
  assert_int_equal(bench_tput_tick(&t, S(3), 40), 0);
  assert_true(t.started);
  assert_int_equal(t.n, 0);
  assert_int_equal(bench_tput_tick(&t, S(4), 140), 0);
  assert_int_equal(t.n, 1);
  assert_near(t.v[0], 100.0);
  bench_tput_close(&t);
}

static void test_empty_ticks_merge_into_the_next(void **state) {
  (void)state;
  bench_tput t;
  bench_tput_init(&t);
  bench_tput_tick(&t, S(1), 10);  /* t0 */
  bench_tput_tick(&t, S(2), 10);  /* nothing new: merged */
  bench_tput_tick(&t, S(3), 10);  /* merged */
  bench_tput_tick(&t, S(4), 310); /* 300 pods over 3 s, recorded three times */
  assert_int_equal(t.n, 3);
  for (size_t i = 0; i < 3; i++)
    assert_near(t.v[i], 100.0);
  /* The actual elapsed time counts, not the nominal 1 s. */
  bench_tput_tick(&t, S(5.5), 460);
  assert_int_equal(t.n, 4);
  assert_near(t.v[3], 100.0);
  bench_tput_tick(&t, S(6.5), 660);
  assert_near(t.v[4], 200.0);
  bench_tput_close(&t);
}

static void test_summary_average_and_percentiles(void **state) {
  (void)state;
  double v[] = {40, 10, 30, 20, 100, 50, 60, 70, 80, 90};
  bench_tput_summary s;
  bench_tput_summarize(v, 10, &s);
  assert_int_equal(s.n, 10);
  assert_near(s.average, 55.0);
  assert_near(s.perc50, 50.0); /* index ceil(5) - 1 of the sorted samples */
  assert_near(s.perc90, 90.0);
  assert_near(s.perc95, 100.0);
  assert_near(s.perc99, 100.0);
  assert_near(s.max, 100.0);
  bench_tput_summarize(v, 0, &s);
  assert_int_equal(s.n, 0);
  assert_near(s.average, 0.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ticks_before_the_first_pod_are_ignored),
      cmocka_unit_test(test_empty_ticks_merge_into_the_next),
      cmocka_unit_test(test_summary_average_and_percentiles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
