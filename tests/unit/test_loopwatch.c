/* The loop's busy-time watch: a callback that keeps the loop thread busy shows as a stretch
 * of at least its length; time spent waiting for a timer does not count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "kc_loopwatch.h"
#include "kc_metrics.h"

static void test_busy_is_wall_minus_idle(void **state) {
  (void)state;
  assert_int_equal(kc_loop_busy_ns(100, 300, 10, 60), 150);
  assert_int_equal(kc_loop_busy_ns(100, 300, 10, 500), 0); /* never negative */
  assert_int_equal(kc_loop_busy_ns(300, 100, 0, 0), 0);
}

/* Busy for data ms; data above 1000 means blocked in a sleep for (data - 1000) ms. */
static void spin(uv_timer_t *t) {
  uint64_t ms = (uint64_t)(uintptr_t)t->data;
  if (ms > 1000) {
    usleep((useconds_t)((ms - 1000) * 1000));
  } else {
    uint64_t end = uv_hrtime() + ms * 1000000;
    while (uv_hrtime() < end) {
    }
  }
  uv_close((uv_handle_t *)t, NULL);
}

/* Runs a loop with one timer due after wait_ms that then spins for spin_ms; returns the
 * longest stretch seen, in ms, and the rendered metrics in *page (new). */
static double run_one(uint64_t wait_ms, uint64_t spin_ms, char **page) {
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(kc_loopwatch_configure(&loop), 0);
  kc_metrics *m;
  assert_int_equal(kc_metrics_new(&m), 0);
  kc_loopwatch *w;
  assert_int_equal(kc_loopwatch_new(&loop, m, &w), 0);
  uv_timer_t t;
  uv_timer_init(&loop, &t);
  t.data = (void *)(uintptr_t)spin_ms;
  uv_timer_start(&t, spin, wait_ms, 0);
  uv_run(&loop, UV_RUN_DEFAULT); /* the watch does not keep the loop alive */
  /* One more turn so that the prepare after the spin has run. */
  uv_timer_t t2;
  uv_timer_init(&loop, &t2);
  t2.data = (void *)(uintptr_t)0;
  uv_timer_start(&t2, spin, 1, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  double longest = (double)kc_loopwatch_longest_ns(w) / 1e6;
  size_t len;
  assert_int_equal(kc_metrics_render(m, page, &len), 0);
  kc_loopwatch_free(w);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  kc_metrics_free(m);
  return longest;
}

static void test_a_spinning_callback_is_a_long_stretch(void **state) {
  (void)state;
  char *page = NULL;
  double longest = run_one(10, 60, &page);
  assert_true(longest >= 60.0);
  assert_non_null(strstr(page, "volcano_event_loop_longest_busy_milliseconds "));
  assert_non_null(strstr(page, "volcano_event_loop_busy_duration_milliseconds_bucket{le=\"20\"}"));
  free(page);
}

/* The value after `name ` on the metrics page. */
static double metric(const char *page, const char *name) {
  char key[128];
  snprintf(key, sizeof(key), "\n%s ", name);
  const char *at = strstr(page, key);
  assert_non_null(at);
  return strtod(at + strlen(key), NULL);
}

/* A callback that blocks without using the CPU (as a thread the kernel keeps waiting on a
 * loaded machine): a long stretch in wall-clock time, a short one in the loop thread's CPU
 * time. A spin is long in both. */
static void test_cpu_stretch_leaves_out_waiting(void **state) {
  (void)state;
  char *page = NULL;
  double longest = run_one(10, 1080, &page);
  assert_true(longest >= 80.0);
  assert_true(metric(page, "volcano_event_loop_longest_busy_milliseconds") >= 80.0);
  assert_true(metric(page, "volcano_event_loop_longest_busy_cpu_milliseconds") < 40.0);
  assert_non_null(
      strstr(page, "volcano_event_loop_busy_cpu_duration_milliseconds_bucket{le=\"20\"}"));
  free(page);
}

static void test_waiting_is_not_busy(void **state) {
  (void)state;
  char *page = NULL;
  /* 300 ms waiting for the timer: idle, so well under it even on a loaded machine. */
  double longest = run_one(300, 0, &page);
  assert_true(longest < 150.0);
  free(page);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_busy_is_wall_minus_idle),
      cmocka_unit_test(test_a_spinning_callback_is_a_long_stretch),
      cmocka_unit_test(test_waiting_is_not_busy),
      cmocka_unit_test(test_cpu_stretch_leaves_out_waiting),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
