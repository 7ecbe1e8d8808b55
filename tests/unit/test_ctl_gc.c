/* The gc controller's TTL decision (Volcano garbagecollector processTTL/needsCleanup). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ctl_gc.h"
#include "kc_error.h"

static const int64_t T0 = 1764547200000; /* a finish time, ms */

static ctl_gc_job finished(const char *phase, int64_t ttl) {
  return (ctl_gc_job){
      .phase = phase, .has_ttl = true, .ttl_s = ttl, .has_finish = true, .finish_ms = T0};
}

static void test_phases(void **state) {
  const char *yes[] = {"Completed", "Failed", "Terminated"};
  const char *no[] = {"Running", "Pending", "Aborted", "Terminating", "Completing", ""};
  for (size_t i = 0; i < 3; i++) {
    ctl_gc_job j = finished(yes[i], 0);
    assert_true(ctl_gc_needs_cleanup(&j));
  }
  for (size_t i = 0; i < 6; i++) {
    ctl_gc_job j = finished(no[i], 0);
    assert_false(ctl_gc_needs_cleanup(&j));
  }
  ctl_gc_job j = finished("Completed", 5);
  j.has_ttl = false;
  assert_false(ctl_gc_needs_cleanup(&j));
}

static void test_wait_then_expire(void **state) {
  ctl_gc_job j = finished("Completed", 5);
  ctl_gc_verdict v;
  int64_t wait;
  assert_int_equal(ctl_gc_decide(&j, T0 + 1200, &v, &wait), 0);
  assert_int_equal(v, CTL_GC_WAIT);
  assert_int_equal(wait, 3800);
  assert_int_equal(ctl_gc_decide(&j, T0 + 5000, &v, &wait), 0);
  assert_int_equal(v, CTL_GC_EXPIRED);
  /* ttl 0: at once */
  j.ttl_s = 0;
  assert_int_equal(ctl_gc_decide(&j, T0, &v, &wait), 0);
  assert_int_equal(v, CTL_GC_EXPIRED);
  /* finished in the future (skew): waits the whole TTL from then */
  j.ttl_s = 10;
  assert_int_equal(ctl_gc_decide(&j, T0 - 3000, &v, &wait), 0);
  assert_int_equal(v, CTL_GC_WAIT);
  assert_int_equal(wait, 13000);
}

static void test_keep(void **state) {
  ctl_gc_verdict v;
  int64_t wait;
  ctl_gc_job j = finished("Failed", 5);
  j.deleting = true; /* already going */
  assert_int_equal(ctl_gc_decide(&j, T0 + 99000, &v, &wait), 0);
  assert_int_equal(v, CTL_GC_KEEP);
  j = finished("Running", 5);
  assert_int_equal(ctl_gc_decide(&j, T0 + 99000, &v, &wait), 0);
  assert_int_equal(v, CTL_GC_KEEP);
  j = finished("Terminated", 5);
  j.has_finish = false;
  assert_int_equal(ctl_gc_decide(&j, T0, &v, &wait), KC_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_phases),
      cmocka_unit_test(test_wait_then_expire),
      cmocka_unit_test(test_keep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
