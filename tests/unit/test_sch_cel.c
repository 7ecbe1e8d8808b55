/* sch_cel: the CEL subset of DRA device selectors against tables of expressions, one fake
 * device (Kubernetes' semantics: bare attribute names in the driver's domain, an unknown
 * domain is an empty map, a missing name is "no such key", && and || commutative over
 * errors, no equality across types), and hostile input (never a crash, bounded depth). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sch_cel.h"

static const sch_cel_attr attrs[] = {
    {.name = "model", .kind = SCH_CEL_ATTR_STRING, .s = "a100"},
    {.name = "index", .kind = SCH_CEL_ATTR_INT, .i = 3},
    {.name = "shared", .kind = SCH_CEL_ATTR_BOOL, .b = false},
    {.name = "driverVersion", .kind = SCH_CEL_ATTR_VERSION, .s = "1.2.3"},
    {.name = "other.io/gen", .kind = SCH_CEL_ATTR_INT, .i = -2},
    {.name = "other.io/beta", .kind = SCH_CEL_ATTR_VERSION, .s = "2.0.0-rc.1"},
    {.name = "bad", .kind = SCH_CEL_ATTR_VERSION, .s = "v1"},
};
static const sch_cel_capacity caps[] = {
    {.name = "memory", .value = "80Gi"},
    {.name = "other.io/cores", .value = "1500m"},
};
static const sch_cel_device dev = {.driver = "gpu.example.com",
                                   .attrs = attrs,
                                   .nattrs = sizeof(attrs) / sizeof(attrs[0]),
                                   .capacity = caps,
                                   .ncapacity = sizeof(caps) / sizeof(caps[0])};

/* Compiles and evaluates expr: 1 true, 0 false, -1 a runtime error (its text in err), -2 a
 * compile error. */
static int run(const char *expr, char *err) {
  sch_cel *c = NULL;
  if (sch_cel_compile(expr, &c, err, SCH_CEL_ERR_MAX) != 0) {
    assert_null(c);
    return -2;
  }
  bool m = true;
  int rc = sch_cel_eval(c, &dev, &m, err, SCH_CEL_ERR_MAX);
  sch_cel_free(c);
  if (rc)
    assert_false(m);
  return rc ? -1 : m;
}

static const struct {
  const char *expr;
  int want;
  const char *err; /* a substring of the error, for -1 and -2 */
} table[] = {
    {"device.driver == \"gpu.example.com\"", 1, NULL},
    {"device.driver == 'other'", 0, NULL},
    {"device.driver != \"other\"", 1, NULL},
    {"device.attributes[\"gpu.example.com\"].model == \"a100\"", 1, NULL},
    {"device.attributes[\"gpu.example.com\"].model == 'h100'", 0, NULL},
    {"device.attributes['gpu.example.com'].index > 2", 1, NULL},
    {"device.attributes['gpu.example.com'].index >= 3 && device.attributes['gpu.example.com']"
     ".index <= 3",
     1, NULL},
    {"device.attributes['gpu.example.com'].index < 3", 0, NULL},
    {"device.attributes['other.io'].gen == -2", 1, NULL},
    {"device.attributes['other.io'].gen < 0 || false", 1, NULL},
    {"!device.attributes['gpu.example.com'].shared", 1, NULL},
    {"device.attributes['gpu.example.com'].shared == false", 1, NULL},
    {"device.attributes['gpu.example.com'].index in [1, 2, 3]", 1, NULL},
    {"device.attributes['gpu.example.com'].index in [1, 2]", 0, NULL},
    {"device.attributes['gpu.example.com'].model in ['a100', 'h100']", 1, NULL},
    {"'model' in device.attributes['gpu.example.com']", 1, NULL},
    {"'gen' in device.attributes['gpu.example.com']", 0, NULL},
    {"'other.io' in device.attributes", 1, NULL},
    {"has(device.attributes['gpu.example.com'].model)", 1, NULL},
    {"has(device.attributes['gpu.example.com'].nope)", 0, NULL},
    {"has(device.attributes['nowhere.io'].model)", 0, NULL},
    {"has(device.attributes.nowhere)", 0, NULL},
    /* versions */
    {"device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.2.0'))", 1, NULL},
    {"device.attributes['gpu.example.com'].driverVersion.compareTo(semver('1.10.0')) < 0", 1, NULL},
    {"device.attributes['gpu.example.com'].driverVersion == semver('1.2.3')", 1, NULL},
    {"device.attributes['gpu.example.com'].driverVersion.major() == 1", 1, NULL},
    {"device.attributes['other.io'].beta.isLessThan(semver('2.0.0'))", 1, NULL},
    {"semver('2.0.0-rc.1').isLessThan(semver('2.0.0-rc.2'))", 1, NULL},
    {"semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))", 1, NULL},
    {"semver('1.0.0-2').isLessThan(semver('1.0.0-10'))", 1, NULL},
    {"semver('1.0.0-alpha').isLessThan(semver('1.0.0-1'))", 0, NULL},
    {"semver('1.0.0+build').compareTo(semver('1.0.0')) == 0", 1, NULL},
    {"isSemver('1.2') || isSemver('01.2.3') || isSemver('1.2.3-')", 0, NULL},
    {"isSemver('1.2.3-beta.2+exp.sha.5114f85')", 1, NULL},
    {"semver('1.2')", -1, "semver: could not parse"},
    {"device.attributes['gpu.example.com'].bad == semver('1.0.0')", -1, "semantic version"},
    /* quantities */
    {"device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0", 1, NULL},
    {"device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('80Gi'))", 0, NULL},
    {"device.capacity['gpu.example.com'].memory == quantity('81920Mi')", 1, NULL},
    {"device.capacity['other.io'].cores.isLessThan(quantity('2'))", 1, NULL},
    {"device.capacity['other.io'].cores.isInteger()", 0, NULL},
    {"device.capacity['gpu.example.com'].memory.asInteger() == 85899345920", 1, NULL},
    {"device.capacity['other.io'].cores.asInteger() == 1", -1, "cannot convert"},
    {"isQuantity('1Gi') && !isQuantity('1 Gi')", 1, NULL},
    /* strings, size, conditional */
    {"device.attributes['gpu.example.com'].model.startsWith('a1')", 1, NULL},
    {"device.attributes['gpu.example.com'].model.endsWith('00') && device.driver.contains('"
     "example')",
     1, NULL},
    {"size(device.driver) == 15 && device.driver.size() == 15", 1, NULL},
    {"size(device.attributes['gpu.example.com']) == 5", 1, NULL},
    {"size([1, 2, 3]) == 3", 1, NULL},
    {"has(device.attributes['x.io'].y) ? device.attributes['x.io'].y == 1 : true", 1, NULL},
    {"'a\\'b\\\\' == \"a'b\\\\\"", 1, NULL},
    {"(true)", 1, NULL},
    {"null == null && 1 != 'a'", 1, NULL},
    /* runtime errors and their commutative logic */
    {"device.attributes['gpu.example.com'].nope == 'x'", -1, "no such key: nope"},
    {"device.attributes['nowhere.io'].model == 'x'", -1, "no such key: model"},
    {"device.attributes['gpu.example.com'].nope == 'x' && false", 0, NULL},
    {"false && device.attributes['gpu.example.com'].nope == 'x'", 0, NULL},
    {"device.attributes['gpu.example.com'].nope == 'x' || true", 1, NULL},
    {"device.attributes['gpu.example.com'].nope == 'x' || false", -1, "no such key"},
    {"device.attributes['gpu.example.com'].model < 3", -1, "no such overload: string < int"},
    {"device.attributes['gpu.example.com'].model == 3", 0, NULL},
    {"device.attributes['gpu.example.com'].index", -1, "could not be converted to bool"},
    {"device.nope", -1, "no such key: nope"},
    {"!1", -1, "no such overload"},
    {"1 ? true : false", -1, "no such overload"},
    {"semver('1.0.0').compareTo(quantity('1'))", -1, "no such overload"},
    /* compile errors */
    {"", -2, "unexpected end"},
    {"device.driver ==", -2, "unexpected end"},
    {"foo == 1", -2, "undeclared reference to 'foo'"},
    {"device.attributes['d'].list.all(x, x > 1)", -2, "unsupported: the function 'all'"},
    {"matches(device.driver, 'a.*')", -2, "unsupported: the function 'matches'"},
    {"device.attributes['d'].n + 1 > 2", -2, "unsupported: arithmetic"},
    {"1.5 > 1", -2, "unsupported: the literal '1.5'"},
    {"0x10 > 1", -2, "unsupported: the literal"},
    {"{'a': 1}", -2, "map literals"},
    {"'abc", -2, "unterminated string"},
    {"'a\\qb' == 'x'", -2, "unsupported escape"},
    {"device.driver == 'a' )", -2, "unexpected ')'"},
    {"device.driver # 1", -2, "unexpected character"},
    {"has(device)", -2, "invalid argument to has()"},
    {"semver('1.0.0', true)", -2, "no matching overload for 'semver' with 2"},
    {"99999999999999999999 > 1", -2, "out of range"},
    {"device.", -2, "expected a name"},
    {"[1, 2", -2, "unexpected end"},
};

static void test_table(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
    char err[SCH_CEL_ERR_MAX] = "";
    int got = run(table[i].expr, err);
    if (got != table[i].want || (table[i].err && !strstr(err, table[i].err)))
      fail_msg("%s: got %d (%s), want %d (%s)", table[i].expr, got, err, table[i].want,
               table[i].err ? table[i].err : "");
  }
}

/* The same program on several devices: each evaluation sees only its own device. */
static void test_devices(void **state) {
  (void)state;
  sch_cel *c = NULL;
  char err[SCH_CEL_ERR_MAX];
  assert_int_equal(sch_cel_compile("device.attributes['d.io'].n > 1", &c, err, sizeof(err)), 0);
  sch_cel_attr a1 = {.name = "n", .kind = SCH_CEL_ATTR_INT, .i = 2};
  sch_cel_attr a2 = {.name = "d.io/n", .kind = SCH_CEL_ATTR_INT, .i = 1};
  sch_cel_device d1 = {.driver = "d.io", .attrs = &a1, .nattrs = 1};
  sch_cel_device d2 = {.driver = "e.io", .attrs = &a2, .nattrs = 1};
  sch_cel_device d3 = {.driver = "e.io", .attrs = &a1, .nattrs = 1}; /* n is e.io's */
  bool m = false;
  assert_int_equal(sch_cel_eval(c, &d1, &m, err, sizeof(err)), 0);
  assert_true(m);
  assert_int_equal(sch_cel_eval(c, &d2, &m, err, sizeof(err)), 0);
  assert_false(m);
  assert_int_equal(sch_cel_eval(c, &d3, &m, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "no such key: n"));
  assert_int_equal(sch_cel_eval(c, NULL, &m, err, sizeof(err)), KC_EINVAL);
  sch_cel_free(c);
  sch_cel_free(NULL);
}

/* Hostile input: nesting, long chains and long expressions are refused, never a crash. */
static void test_limits(void **state) {
  (void)state;
  /* static, not malloc: gcc's -Warray-bounds (-Werror, with the sanitizers) took the
   * unchecked-for-it NULL of a malloc as a zero-length object */
  static char s[SCH_CEL_MAX_LEN + 3];
  size_t n = SCH_CEL_MAX_LEN + 2;
  char err[SCH_CEL_ERR_MAX];
  /* 1,000 parentheses */
  memset(s, '(', 1000);
  memcpy(s + 1000, "true", 5);
  assert_int_equal(run(s, err), -2);
  assert_non_null(strstr(err, "nested deeper"));
  /* 1,000 negations */
  memset(s, '!', 1000);
  memcpy(s + 1000, "true", 5);
  assert_int_equal(run(s, err), -2);
  /* a chain of 1,500 && is as deep for the evaluator */
  size_t k = 0;
  for (int i = 0; i < 1500; i++)
    k += (size_t)snprintf(s + k, n + 1 - k, "%strue", i ? "&&" : "");
  assert_int_equal(run(s, err), -2);
  assert_non_null(strstr(err, "nested deeper"));
  /* a chain of 90 is fine */
  k = 0;
  for (int i = 0; i < 90; i++)
    k += (size_t)snprintf(s + k, n + 1 - k, "%strue", i ? "&&" : "");
  assert_int_equal(run(s, err), 1);
  /* over the length limit */
  memset(s, ' ', n);
  s[n] = '\0';
  s[0] = '1';
  assert_int_equal(run(s, err), -2);
  assert_non_null(strstr(err, "longer than"));
  /* every prefix of a valid expression compiles or fails cleanly */
  const char *full =
      "has(device.attributes['a.io'].x) && device.attributes['a.io'].x in "
      "[semver('1.0.0'), 'y'] || device.capacity['gpu.example.com'].memory.compareTo("
      "quantity('1Gi')) > -1 ? true : !false";
  char buf[512];
  for (size_t i = 0; i <= strlen(full); i++) {
    memcpy(buf, full, i);
    buf[i] = '\0';
    (void)run(buf, err);
  }
  assert_int_equal(run(full, err), 1);
}

static void test_semver(void **state) {
  (void)state;
  sch_semver a, b;
  assert_true(sch_semver_parse("1.2.3", 5, &a));
  assert_true(a.major == 1 && a.minor == 2 && a.patch == 3 && a.pre == NULL);
  assert_false(sch_semver_parse("1.2.3.4", 7, &a));
  assert_false(sch_semver_parse("-1.2.3", 6, &a));
  assert_false(sch_semver_parse("1.2.3-01", 8, &a));
  assert_false(sch_semver_parse("1.2.3-a..b", 10, &a));
  assert_false(sch_semver_parse("1.2.3+", 6, &a));
  assert_false(sch_semver_parse("99999999999999999999.0.0", 24, &a));
  assert_true(sch_semver_parse("1.0.0-x-y.7", 11, &a));
  assert_true(sch_semver_parse("1.0.0-x-y.10", 12, &b));
  assert_int_equal(sch_semver_cmp(&a, &b), -1);
  assert_int_equal(sch_semver_cmp(&b, &a), 1);
  assert_int_equal(sch_semver_cmp(&a, &a), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_devices),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_semver),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
