/* --controllers as Volcano reads it: checkControllers and isControllerEnabled. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ctl_gates.h"
#include "kc_error.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_star_enables_all(void **state) {
  const char *v[] = {"*"};
  assert_true(ctl_controller_enabled("job-controller", v, N(v)));
  assert_true(ctl_controller_enabled("gc-controller", v, N(v)));
  assert_true(ctl_controller_enabled("anything", NULL, 0)); /* no list: everything */
}

static void test_named_only(void **state) {
  const char *v[] = {"job-controller"};
  assert_true(ctl_controller_enabled("job-controller", v, N(v)));
  assert_false(ctl_controller_enabled("queue-controller", v, N(v)));
  assert_false(ctl_controller_enabled("pg-controller", v, N(v)));
  const char *p[] = {"+queue-controller", "gc-controller"};
  assert_true(ctl_controller_enabled("queue-controller", p, N(p)));
  assert_true(ctl_controller_enabled("gc-controller", p, N(p)));
  assert_false(ctl_controller_enabled("job-controller", p, N(p)));
}

static void test_minus(void **state) {
  const char *v[] = {"*", "-gc-controller"};
  assert_false(ctl_controller_enabled("gc-controller", v, N(v)));
  assert_true(ctl_controller_enabled("job-controller", v, N(v)));
  /* Volcano: without '*', a '-name' list enables nothing (no entry names the others). */
  const char *m[] = {"-gc-controller"};
  assert_false(ctl_controller_enabled("gc-controller", m, N(m)));
  assert_false(ctl_controller_enabled("job-controller", m, N(m)));
}

static void test_check(void **state) {
  char err[256];
  const char *ok1[] = {"*"}, *ok2[] = {"*", "-queue-controller"},
             *ok3[] = {"job-controller", "pg-controller"};
  assert_int_equal(ctl_controllers_check(ok1, N(ok1), err, sizeof(err)), 0);
  assert_int_equal(ctl_controllers_check(ok2, N(ok2), err, sizeof(err)), 0);
  assert_int_equal(ctl_controllers_check(ok3, N(ok3), err, sizeof(err)), 0);
  const char *bad1[] = {"*", "job-controller"};
  assert_int_equal(ctl_controllers_check(bad1, N(bad1), err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "wildcard '*' cannot be combined with other input");
  const char *bad2[] = {"job-controller", "-job-controller"};
  assert_int_equal(ctl_controllers_check(bad2, N(bad2), err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err,
                      "controllers option -job-controller cannot have both '-' and '+' prefixes");
  const char *bad3[] = {"-"};
  assert_int_equal(ctl_controllers_check(bad3, N(bad3), err, sizeof(err)), KC_EINVAL);
}

static void test_unknown(void **state) {
  const char *known[] = {"job-controller", "queue-controller", "cronjob-controller",
                         "jobflow-controller", NULL};
  const char *v[] = {"*", "-queue-controller", "+cronjob-controller", "job-controler"};
  assert_string_equal(ctl_controllers_unknown(v, N(v), known), "job-controler");
  const char *w[] = {"job-controller", "-jobflow-controller"};
  assert_null(ctl_controllers_unknown(w, N(w), known));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_star_enables_all),
      cmocka_unit_test(test_named_only),
      cmocka_unit_test(test_minus),
      cmocka_unit_test(test_check),
      cmocka_unit_test(test_unknown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
