/* The job controller's delayed actions (controller/job/ctl_delay.c), without a loop: due
 * times, arming the same action twice, cancelling by scope and event, and the order in which
 * due actions come out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "ctl_delay.h"

#define KEY "ns/j"

static ctl_delayed delayed(ctl_event ev, ctl_action a, const char *task, const char *pod) {
  ctl_delayed d = {.at = 0, .action = a, .event = ev};
  snprintf(d.task, sizeof(d.task), "%s", task);
  snprintf(d.pod, sizeof(d.pod), "%s", pod);
  return d;
}

static void test_due_time(void **state) {
  ctl_delayed d = delayed(CTL_EV_POD_PENDING, CTL_ACT_RESTART_JOB, "w", "j-w-0");
  d.at = 1000;
  assert_int_equal(ctl_delay_due_ms(&d, 990, 5000), 15000);
  assert_int_equal(ctl_delay_due_ms(&d, 1000, 5000), 5000);
  assert_int_equal(ctl_delay_due_ms(&d, 2000, 5000), 5000); /* passed: at once */
}

static void test_arm_keeps_the_first(void **state) {
  ctl_delays ds;
  ctl_delays_init(&ds);
  ctl_delayed d = delayed(CTL_EV_POD_PENDING, CTL_ACT_RESTART_JOB, "w", "j-w-0");
  uint64_t due = 0;
  assert_false(ctl_delays_next_due(&ds, &due));
  assert_int_equal(ctl_delays_arm(&ds, KEY, &d, 100), 1);
  /* A Pending pod reports PodPending on every update: the first deadline stands. */
  assert_int_equal(ctl_delays_arm(&ds, KEY, &d, 200), 0);
  assert_int_equal(ds.n, 1);
  assert_true(ctl_delays_next_due(&ds, &due));
  assert_int_equal(due, 100);
  /* Another pod, another Job, another action: each its own. */
  ctl_delayed other = delayed(CTL_EV_POD_PENDING, CTL_ACT_RESTART_JOB, "w", "j-w-1");
  assert_int_equal(ctl_delays_arm(&ds, KEY, &other, 50), 1);
  assert_int_equal(ctl_delays_arm(&ds, "ns/k", &d, 100), 1);
  ctl_delayed abort_ = delayed(CTL_EV_POD_PENDING, CTL_ACT_ABORT_JOB, "w", "j-w-0");
  assert_int_equal(ctl_delays_arm(&ds, KEY, &abort_, 100), 1);
  assert_int_equal(ds.n, 4);
  assert_true(ctl_delays_next_due(&ds, &due));
  assert_int_equal(due, 50);
  ctl_delays_close(&ds);
  assert_int_equal(ds.n, 0);
}

static void test_pop_in_due_order(void **state) {
  ctl_delays ds;
  ctl_delays_init(&ds);
  ctl_delayed a = delayed(CTL_EV_POD_PENDING, CTL_ACT_RESTART_JOB, "w", "a");
  ctl_delayed b = delayed(CTL_EV_POD_PENDING, CTL_ACT_RESTART_JOB, "w", "b");
  ctl_delayed c = delayed(CTL_EV_POD_PENDING, CTL_ACT_RESTART_JOB, "w", "c");
  assert_int_equal(ctl_delays_arm(&ds, KEY, &a, 300), 1);
  assert_int_equal(ctl_delays_arm(&ds, KEY, &b, 100), 1);
  assert_int_equal(ctl_delays_arm(&ds, "ns/k", &c, 100), 1);
  char key[64];
  ctl_delayed out;
  assert_false(ctl_delays_pop_due(&ds, 99, key, sizeof(key), &out));
  /* Equal due times come out in the order armed. */
  assert_true(ctl_delays_pop_due(&ds, 150, key, sizeof(key), &out));
  assert_string_equal(key, KEY);
  assert_string_equal(out.pod, "b");
  assert_true(ctl_delays_pop_due(&ds, 150, key, sizeof(key), &out));
  assert_string_equal(key, "ns/k");
  assert_string_equal(out.pod, "c");
  assert_false(ctl_delays_pop_due(&ds, 150, key, sizeof(key), &out));
  assert_true(ctl_delays_pop_due(&ds, 300, key, sizeof(key), &out));
  assert_string_equal(out.pod, "a");
  assert_int_equal(ds.n, 0);
  /* Popped: it can be armed again. */
  assert_int_equal(ctl_delays_arm(&ds, KEY, &a, 400), 1);
  ctl_delays_close(&ds);
}

static void test_cancel_by_scope_and_event(void **state) {
  ctl_delays ds;
  ctl_delays_init(&ds);
  ctl_delayed p0 = delayed(CTL_EV_POD_PENDING, CTL_ACT_RESTART_JOB, "w", "j-w-0");
  ctl_delayed p1 = delayed(CTL_EV_POD_FAILED, CTL_ACT_RESTART_JOB, "w", "j-w-1");
  ctl_delayed m0 = delayed(CTL_EV_POD_PENDING, CTL_ACT_RESTART_JOB, "m", "j-m-0");
  assert_int_equal(ctl_delays_arm(&ds, KEY, &p0, 100), 1);
  assert_int_equal(ctl_delays_arm(&ds, KEY, &p1, 100), 1);
  assert_int_equal(ctl_delays_arm(&ds, KEY, &m0, 100), 1);
  assert_int_equal(ctl_delays_arm(&ds, "ns/k", &p0, 100), 1);
  /* A pod's: by name. */
  ctl_cancel c = {.scope = CTL_SCOPE_POD};
  snprintf(c.name, sizeof(c.name), "j-w-1");
  assert_int_equal(ctl_delays_cancel(&ds, KEY, &c), 1);
  /* A task's, only those armed by PodFailed: none left. */
  c = (ctl_cancel){.scope = CTL_SCOPE_TASK, .events = 1u << CTL_EV_POD_FAILED};
  snprintf(c.name, sizeof(c.name), "w");
  assert_int_equal(ctl_delays_cancel(&ds, KEY, &c), 0);
  c.events = 1u << CTL_EV_POD_PENDING;
  assert_int_equal(ctl_delays_cancel(&ds, KEY, &c), 1);
  assert_int_equal(ds.n, 2);
  /* The Job's: every one of that Job, no other. */
  ctl_delays_drop_key(&ds, KEY);
  assert_int_equal(ds.n, 1);
  char key[64];
  ctl_delayed out;
  assert_true(ctl_delays_pop_due(&ds, 100, key, sizeof(key), &out));
  assert_string_equal(key, "ns/k");
  ctl_delays_close(&ds);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_due_time),
      cmocka_unit_test(test_arm_keeps_the_first),
      cmocka_unit_test(test_pop_in_due_order),
      cmocka_unit_test(test_cancel_by_scope_and_event),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
