#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kc_error.h"
#include "kc_cli.h"
#include "kc_flags.h"

struct opts {
  bool leader;
  int v;
  double qps;
  const char *conf;
  kc_strv names;
  int64_t period;
};

static const char *default_names[] = {"volcano"};

#define FLAGS(o)                                                                                   \
  const kc_flag flags[] = {                                                                        \
      {"leader-elect", KC_FLAG_BOOL, &(o)->leader, "", NULL, NULL, false, NULL},                   \
      {"v", KC_FLAG_INT, &(o)->v, "", NULL, NULL, false, NULL},                                    \
      {"kube-api-qps", KC_FLAG_DOUBLE, &(o)->qps, "", NULL, NULL, false, NULL},                    \
      {"scheduler-conf", KC_FLAG_STRING, &(o)->conf, "", NULL, NULL, false, NULL},                 \
      {"scheduler-name", KC_FLAG_STRINGS, &(o)->names, "", NULL, NULL, false, NULL},               \
      {"schedule-period", KC_FLAG_DURATION, &(o)->period, "", NULL, NULL, false, NULL},            \
  };                                                                                               \
  const size_t nflags = sizeof(flags) / sizeof(flags[0])

static int parse(struct opts *o, int argc, char **argv, char *err) {
  FLAGS(o);
  return kc_flags_parse(flags, nflags, argc, argv, NULL, err, 256);
}

static void test_volcano_deployment_args(void **state) {
  (void)state;
  struct opts o = {.qps = 2000, .names = {default_names, 1, false}};
  char err[256] = "";
  char a0[] = "--leader-elect", a1[] = "-v=4", a2[] = "--kube-api-qps", a3[] = "50",
       a4[] = "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf",
       a5[] = "--schedule-period=1s", a6[] = "--scheduler-name=a", a7[] = "--scheduler-name",
       a8[] = "b";
  char *argv[] = {"prog", a0, a1, a2, a3, a4, a5, a6, a7, a8, NULL};
  assert_int_equal(parse(&o, 10, argv, err), 0);
  assert_true(o.leader);
  assert_int_equal(o.v, 4);
  assert_true(o.qps == 50.0);
  assert_string_equal(o.conf, "/volcano.scheduler/volcano-scheduler.conf");
  assert_int_equal(o.period, 1000000000LL);
  assert_int_equal(o.names.n, 2);
  assert_string_equal(o.names.v[0], "a");
  assert_string_equal(o.names.v[1], "b");
  kc_strv_free(&o.names);
}

static void test_verbosity_forms(void **state) {
  (void)state;
  static const char *const forms[][2] = {
      {"-v=3", NULL}, {"--v=3", NULL}, {"-v", "3"}, {"--v", "3"}};
  for (size_t i = 0; i < 4; i++) {
    struct opts o = {0};
    char err[256];
    char a[16], b[16];
    snprintf(a, sizeof(a), "%s", forms[i][0]);
    char *argv[] = {"prog", a, NULL, NULL};
    int argc = 2;
    if (forms[i][1]) {
      snprintf(b, sizeof(b), "%s", forms[i][1]);
      argv[2] = b;
      argc = 3;
    }
    assert_int_equal(parse(&o, argc, argv, err), 0);
    assert_int_equal(o.v, 3);
  }
}

static void test_bool_false_and_errors(void **state) {
  (void)state;
  struct opts o = {.leader = true};
  char err[256];
  char a[] = "--leader-elect=false";
  char *argv[] = {"prog", a, NULL};
  assert_int_equal(parse(&o, 2, argv, err), 0);
  assert_false(o.leader);

  char u[] = "--no-such-flag";
  char *argv2[] = {"prog", u, NULL};
  assert_int_equal(parse(&o, 2, argv2, err), KC_EINVAL);
  assert_string_equal(err, "unknown flag: --no-such-flag");

  char bv[] = "--leader-elect=maybe";
  char *argv3[] = {"prog", bv, NULL};
  assert_int_equal(parse(&o, 2, argv3, err), KC_EINVAL);
  assert_non_null(strstr(err, "--leader-elect"));

  char n[] = "--kube-api-qps";
  char *argv4[] = {"prog", n, NULL};
  assert_int_equal(parse(&o, 2, argv4, err), KC_EINVAL);
  assert_string_equal(err, "flag needs an argument: --kube-api-qps");

  char d[] = "--schedule-period=5";
  char *argv5[] = {"prog", d, NULL};
  assert_int_equal(parse(&o, 2, argv5, err), KC_EINVAL);

  char s[] = "-scheduler-conf=x";
  char *argv6[] = {"prog", s, NULL};
  assert_int_equal(parse(&o, 2, argv6, err), KC_EINVAL);
  assert_non_null(strstr(err, "two dashes"));

  char i[] = "-v=abc";
  char *argv7[] = {"prog", i, NULL};
  assert_int_equal(parse(&o, 2, argv7, err), KC_EINVAL);
}

static void test_positional_rejected(void **state) {
  (void)state;
  struct opts o = {0};
  char err[256];
  char p[] = "stray";
  char *argv[] = {"prog", p, NULL};
  assert_int_equal(parse(&o, 2, argv, err), KC_EINVAL);
  assert_non_null(strstr(err, "stray"));
}

static void test_duration(void **state) {
  (void)state;
  static const struct {
    const char *in;
    int64_t ns;
  } ok[] = {{"0", 0},
            {"1s", 1000000000LL},
            {"500ms", 500000000LL},
            {"1m30s", 90000000000LL},
            {"1.5h", 5400000000000LL},
            {"-2s", -2000000000LL},
            {"10us", 10000},
            {"3ns", 3},
            {"2h45m", 9900000000000LL}};
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    int64_t v = -1;
    assert_int_equal(kc_parse_duration(ok[i].in, &v), 0);
    assert_int_equal(v, ok[i].ns);
  }
  static const char *const bad[] = {"", "s", "1", "1x", "1s2", "--1s", "abc", "1.s.2"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int64_t v;
    assert_int_not_equal(kc_parse_duration(bad[i], &v), 0);
  }
}

/* Issue 28: as Kubernetes' cliflag.InitFlags normalizes names, '_' and '-' are one
 * character (--log_dir is --log-dir, --leader_elect is --leader-elect). */
static void test_word_separators(void **state) {
  (void)state;
  const char *dir = NULL;
  bool leader = false;
  const kc_flag flags[] = {
      {"log_dir", KC_FLAG_STRING, &dir, "", NULL, NULL, false, NULL, NULL},
      {"leader-elect", KC_FLAG_BOOL, &leader, "", NULL, NULL, false, NULL, NULL},
  };
  char a1[] = "--log-dir=/x", a2[] = "--leader_elect";
  char *argv[] = {"prog", a1, a2, NULL};
  char err[256] = "";
  assert_int_equal(kc_flags_parse_given(flags, 2, 3, argv, NULL, true, NULL, err, sizeof(err)), 0);
  assert_string_equal(dir, "/x");
  assert_true(leader);
  char a3[] = "--leader.elect";
  char *bad[] = {"prog", a3, NULL};
  assert_int_equal(kc_flags_parse_given(flags, 2, 2, bad, NULL, true, NULL, err, sizeof(err)),
                   KC_EINVAL);
  /* Without word_sep (vcctl's own parsing) the names are exact. */
  char a4[] = "--leader_elect";
  char *exact[] = {"prog", a4, NULL};
  assert_int_equal(kc_flags_parse(flags, 2, 2, exact, NULL, err, sizeof(err)), KC_EINVAL);
}

/* Which flags were given, for kc_cli's once-at-startup report of the inert ones, and the
 * arguments that are not flags (Volcano's chart passes "2>&1"), collected rather than
 * refused when the caller takes them. */
static void test_given_and_positional(void **state) {
  (void)state;
  int v = 0;
  const char *mode = "none";
  const kc_flag flags[] = {
      {"v", KC_FLAG_INT, &v, "", NULL, NULL, false, NULL, NULL},
      {"scheduler-sharding-mode", KC_FLAG_STRING, &mode, "", "none", NULL, false, NULL,
       "no sharding"},
  };
  char a1[] = "-v=3", a2[] = "--scheduler-sharding-mode=hard", a3[] = "2>&1";
  char *argv[] = {"prog", a1, a2, a3, NULL};
  bool given[2] = {false, false};
  int nargs = -1;
  char err[256] = "";
  assert_int_equal(kc_flags_parse_given(flags, 2, 4, argv, &nargs, true, given, err, sizeof(err)),
                   0);
  assert_true(given[0] && given[1]);
  assert_string_equal(mode, "hard");
  assert_int_equal(nargs, 1);
  assert_string_equal(argv[0], "2>&1");
}

/* The value syntax of klog's and component-base's flag types, checked as Volcano's
 * processes check it even where the flag changes nothing in Kiln. */
static void test_klog_and_gate_values(void **state) {
  (void)state;
  const char *t = NULL;
  char err[128];
  static const char *const sev_ok[] = {"INFO", "warning", "Error", "FATAL", "2", "-1"};
  for (size_t i = 0; i < 6; i++)
    assert_int_equal(kc_cli_set_severity(&t, sev_ok[i], err, sizeof(err)), 0);
  assert_int_equal(kc_cli_set_severity(&t, "LOUD", err, sizeof(err)), KC_EINVAL);
  assert_int_equal(kc_cli_set_trace_location(&t, "", err, sizeof(err)), 0);
  assert_int_equal(kc_cli_set_trace_location(&t, "gang.go:42", err, sizeof(err)), 0);
  assert_int_equal(kc_cli_set_trace_location(&t, "gang:42", err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "syntax error: expect file.go:234");
  assert_int_equal(kc_cli_set_trace_location(&t, "a.go:0", err, sizeof(err)), KC_EINVAL);
  assert_int_equal(kc_cli_set_uint64(&t, "1800", err, sizeof(err)), 0);
  assert_int_equal(kc_cli_set_uint64(&t, "-1", err, sizeof(err)), KC_EINVAL);
  assert_int_equal(
      kc_cli_set_feature_gates(&t, "PodDisruptionBudgetsSupport=false, VolcanoJobSupport=true", err,
                               sizeof(err)),
      0);
  assert_int_equal(kc_cli_set_feature_gates(&t, "", err, sizeof(err)), 0);
  assert_int_equal(kc_cli_set_feature_gates(&t, "NamespaceQueue", err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "missing bool value for NamespaceQueue");
  assert_int_equal(kc_cli_set_feature_gates(&t, "A=yes", err, sizeof(err)), KC_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_volcano_deployment_args),
      cmocka_unit_test(test_verbosity_forms),
      cmocka_unit_test(test_bool_false_and_errors),
      cmocka_unit_test(test_positional_rejected),
      cmocka_unit_test(test_duration),
      cmocka_unit_test(test_word_separators),
      cmocka_unit_test(test_given_and_positional),
      cmocka_unit_test(test_klog_and_gate_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
