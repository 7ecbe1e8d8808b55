/* Quantities against Kubernetes' own table of forms (apimachinery quantity_test.go:
 * TestQuantityParse, TestQuantityString, TestQuantityParseEmit, TestQuantityRoundUp). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kc_error.h"
#include "kc_quantity.h"

struct good {
  const char *in;
  const char *canon; /* what the API server would store */
  int64_t milli;     /* MilliValue() */
  int64_t value;     /* Value() */
};

static const struct good goods[] = {
    /* zeros in every family */
    {"0", "0", 0, 0},
    {"0n", "0", 0, 0},
    {"0m", "0", 0, 0},
    {"0Ki", "0", 0, 0},
    {"0Ti", "0", 0, 0},
    {"-0", "0", 0, 0},
    {"+0.000", "0", 0, 0},
    {"00000", "0", 0, 0},
    /* plain and decimal SI */
    {"1", "1", 1000, 1},
    {"9", "9", 9000, 9},
    {"5n", "5n", 1, 1},
    {"4u", "4u", 1, 1},
    {"3m", "3m", 3, 1},
    {"100m", "100m", 100, 1},
    {"1000m", "1", 1000, 1},
    {"1500m", "1500m", 1500, 2},
    {"8k", "8k", 8000000, 8000},
    {"50k", "50k", 50000000, 50000},
    {"7M", "7M", 7000000000, 7000000},
    {"1000M", "1G", 1000000000000, 1000000000},
    {"6G", "6G", 6000000000000, 6000000000},
    {"5T", "5T", 5000000000000000, 5000000000000},
    {"40T", "40T", 40000000000000000, 40000000000000},
    {"300T", "300T", 300000000000000000, 300000000000000},
    {"2P", "2P", 2000000000000000000, 2000000000000000},
    {"1E", "1E", INT64_MAX, 1000000000000000000},
    {"9223372036854775807", "9223372036854775807", INT64_MAX, INT64_MAX},
    /* past 2^63-1 units: exact (the API server keeps them in arbitrary precision), with an
     * e-exponent where DecimalSI runs out of suffixes, and Value()/MilliValue() saturated */
    {"9223372036854775808", "9223372036854775808", INT64_MAX, INT64_MAX},
    {"9223372036854775807.000000001", "9223372036854775807000000001n", INT64_MAX, INT64_MAX},
    {"10E", "10E", INT64_MAX, INT64_MAX},
    {"100000P", "100E", INT64_MAX, INT64_MAX},
    {"1000E", "1e21", INT64_MAX, INT64_MAX},
    {"1000000P", "1e21", INT64_MAX, INT64_MAX},
    {"-1e21", "-1e21", INT64_MIN, INT64_MIN},
    {"1e19", "10e18", INT64_MAX, INT64_MAX},
    {"1e29", "100e27", INT64_MAX, INT64_MAX},
    {"170141183460469231731687303715884105727n", "170141183460469231731687303715884105727n",
     INT64_MAX, INT64_MAX},
    {"-170141183460469231731687303715884105727n", "-170141183460469231731687303715884105727n",
     INT64_MIN, INT64_MIN},
    {"170141183460469231731687303715884105.727u", "170141183460469231731687303715884105727n",
     INT64_MAX, INT64_MAX},
    /* BinarySI is capped at 2^63-1 units, as Kubernetes does */
    {"8Ei", "9223372036854775807", INT64_MAX, INT64_MAX},
    {"9223372036854775807Ki", "9223372036854775807", INT64_MAX, INT64_MAX},
    {"-100000000000000000000000000000000000000000000Ei", "-9223372036854775807", INT64_MIN,
     -INT64_MAX},
    /* exponents (DecimalExponent keeps its family) */
    {"1E-3", "1e-3", 1, 1},
    {"1e3", "1e3", 1000000, 1000},
    {"1E6", "1e6", 1000000000, 1000000},
    {"1e9", "1e9", 1000000000000, 1000000000},
    {"1E12", "1e12", 1000000000000000, 1000000000000},
    {"1e15", "1e15", 1000000000000000000, 1000000000000000},
    {"1E18", "1e18", INT64_MAX, 1000000000000000000},
    {"1e14", "100e12", 100000000000000000, 100000000000000},
    {"1e13", "10e12", 10000000000000000, 10000000000000},
    {"1.2e3", "1200", 1200000, 1200},
    {"1.3E+6", "1300e3", 1300000000, 1300000},
    {"1.40e9", "1400e6", 1400000000000, 1400000000},
    {"1.53E12", "1530e9", 1530000000000000, 1530000000000},
    {"0.5e0", "500e-3", 500, 1},
    {"0.5e-1", "50e-3", 50, 1},
    {"0.5e-2", "5e-3", 5, 1},
    {"80e-3", "80e-3", 80, 1},
    {"300e6", "300e6", 300000000000, 300000000},
    {"1000e-12", "1e-9", 1, 1},
    {"1e-100", "1e-9", 1, 1},
    {"1e+0", "1", 1000, 1},
    /* fractions */
    {"100.035k", "100035", 100035000, 100035},
    {"0.001", "1m", 1, 1},
    {"0.0005k", "500m", 500, 1},
    {"0.5", "500m", 500, 1},
    {"0.50000", "500m", 500, 1},
    {"9.01", "9010m", 9010, 10},
    {"8.1k", "8100", 8100000, 8100},
    {"7.123456M", "7123456", 7123456000, 7123456},
    {"6.987654321G", "6987654321", 6987654321000, 6987654321},
    {"5.444T", "5444G", 5444000000000000, 5444000000000},
    {"10.035M", "10035k", 10035000000, 10035000},
    {"2.5P", "2500T", 2500000000000000000, 2500000000000000},
    {"1.01E", "1010P", INT64_MAX, 1010000000000000000},
    {"1080m", "1080m", 1080, 2},
    {"1.08", "1080m", 1080, 2},
    {"1080000000n", "1080m", 1080, 2},
    {"1000u", "1m", 1, 1},
    {".001", "1m", 1, 1},
    {".0001k", "100m", 100, 1},
    {"1.", "1", 1000, 1},
    {"1.G", "1G", 1000000000000, 1000000000},
    {"0.001T", "1G", 1000000000000, 1000000000},
    /* rounding up to the nano-unit (away from zero) */
    {"3.001n", "4n", 1, 1},
    {"1.1E-9", "2e-9", 1, 1},
    {"0.0000000001", "1n", 1, 1},
    {"0.00000000050", "1n", 1, 1},
    {"0.9n", "1n", 1, 1},
    {"0.00000012345", "124n", 1, 1},
    /* binary SI */
    {"1Ki", "1Ki", 1024000, 1024},
    {"8Ki", "8Ki", 8192000, 8192},
    {"7Mi", "7Mi", 7340032000, 7340032},
    {"6Gi", "6Gi", 6442450944000, 6442450944},
    {"5Ti", "5Ti", 5497558138880000, 5497558138880},
    {"4Pi", "4Pi", 4503599627370496000, 4503599627370496},
    {"3Ei", "3Ei", INT64_MAX, 3458764513820540928},
    {"1024Mi", "1Gi", 1073741824000, 1073741824},
    {"307200Ki", "300Mi", 314572800000, 314572800},
    {"1025024Mi", "1001Gi", 1074815565824000, 1074815565824},
    {"1024Gi", "1Ti", 1099511627776000, 1099511627776},
    {"1.5Gi", "1536Mi", 1610612736000, 1610612736},
    {"0.5Ki", "512", 512000, 512},
    {"0.5Mi", "512Ki", 524288000, 524288},
    {"100.035Ki", "102435840m", 102435840, 102436},
    {"0.05Gi", "53687091200m", 53687091200, 53687092},
    {"0.025Ti", "27487790694400m", 27487790694400, 27487790695},
    {"1.1Ki", "1126400m", 1126400, 1127},
    {"1025Ki", "1025Ki", 1049600000, 1049600},
    {".001Ki", "1024m", 1024, 2},
    {".000001Ki", "1024u", 2, 1},
    {".000000001Ki", "1024n", 1, 1},
    {".000000000001Ki", "2n", 1, 1},
    {"7Ei", "7Ei", INT64_MAX, 8070450532247928832},
    /* signs */
    {"+1Ki", "1Ki", 1024000, 1024},
    {"-1Ki", "-1Ki", -1024000, -1024},
    {"-9.01", "-9010m", -9010, -10},
    {"-100m", "-100m", -100, -1},
    {"-1.5Gi", "-1536Mi", -1610612736000, -1610612736},
    {"-.001Ki", "-1024m", -1024, -2},
    {"-0.9n", "-1n", -1, -1},
    {"-1e3", "-1e3", -1000000, -1000},
    {"-9223372036854775807", "-9223372036854775807", INT64_MIN, -INT64_MAX},
};

static void test_table(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
    const struct good *g = &goods[i];
    kc_quantity q;
    size_t off = 99;
    int rc = kc_quantity_parse(g->in, &q, &off);
    if (rc != 0)
      fail_msg("%s: parse failed: %s at %zu", g->in, kc_strerror(rc), off);
    char buf[KC_QUANTITY_STR_MAX];
    int n = kc_quantity_format(&q, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(buf));
    if (strcmp(buf, g->canon) != 0)
      fail_msg("%s: canonical %s, want %s", g->in, buf, g->canon);
    if (kc_quantity_milli(&q) != g->milli)
      fail_msg("%s: milli %lld, want %lld", g->in, (long long)kc_quantity_milli(&q),
               (long long)g->milli);
    if (kc_quantity_value(&q) != g->value)
      fail_msg("%s: value %lld, want %lld", g->in, (long long)kc_quantity_value(&q),
               (long long)g->value);
    /* the canonical form is a fixed point: it parses back to the same value and string */
    kc_quantity back;
    assert_int_equal(kc_quantity_parse(buf, &back, NULL), 0);
    assert_int_equal(kc_quantity_cmp(&q, &back), 0);
    char buf2[KC_QUANTITY_STR_MAX];
    assert_true(kc_quantity_format(&back, buf2, sizeof(buf2)) > 0);
    assert_string_equal(buf, buf2);
  }
}

struct bad {
  const char *in;
  int rc;
  size_t offset;
};

static const struct bad bads[] = {
    {"", KC_EPARSE, 0},
    {"12Qi", KC_EPARSE, 2},
    {"1.1.M", KC_EPARSE, 3},
    {"1+1.0M", KC_EPARSE, 1},
    {"0.1mi", KC_EPARSE, 3},
    {"0.1am", KC_EPARSE, 3},
    {"aoeu", KC_EPARSE, 0},
    {".5i", KC_EPARSE, 2},
    {"1i", KC_EPARSE, 1},
    {"-3.01i", KC_EPARSE, 5},
    {"-3.01e-", KC_EPARSE, 7},
    {"1e", KC_EPARSE, 1},
    {"1e3x", KC_EPARSE, 3},
    {"1K", KC_EPARSE, 1},
    {"1KiB", KC_EPARSE, 1},
    {" 1", KC_EPARSE, 0},
    {"1 ", KC_EPARSE, 1},
    {"-", KC_EPARSE, 1},
    {".", KC_EPARSE, 1},
    {"+.", KC_EPARSE, 2},
    {"Mi", KC_EPARSE, 0},
    {"1e4294967297", KC_ERANGE, 1},
    {"1E2147483648", KC_ERANGE, 1},
    /* overflow: more than 2^127-1 nano-units */
    {"170141183460469231731687303715884105728n", KC_ERANGE, 0},
    {"-170141183460469231731687303715884105728n", KC_ERANGE, 0},
    {"1e30", KC_ERANGE, 0},
    {"170141183460469231731687303715884105.728u", KC_ERANGE, 0},
    {"1e2147483647", KC_ERANGE, 0},
    {"100000000000000000000000000000000000000000000000000", KC_ERANGE, 0},
};

static void test_invalid(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
    kc_quantity q = {.nano = 12345, .format = KC_QFMT_BINARY_SI};
    size_t off = 999;
    int rc = kc_quantity_parse(bads[i].in, &q, &off);
    if (rc != bads[i].rc)
      fail_msg("%s: rc %s, want %s", bads[i].in, kc_err_name(rc), kc_err_name(bads[i].rc));
    if (bads[i].rc == KC_EPARSE && off != bads[i].offset)
      fail_msg("%s: offset %zu, want %zu", bads[i].in, off, bads[i].offset);
    /* the output is untouched on error */
    assert_true(q.nano == 12345);
    assert_int_equal(q.format, KC_QFMT_BINARY_SI);
  }
}

static void test_limits(void **state) {
  (void)state;
  kc_quantity q;
  char buf[KC_QUANTITY_MAX_LEN + 2];
  /* a long fraction is fine as long as it fits the length cap; it rounds up to 1n */
  memset(buf, '0', sizeof(buf));
  buf[1] = '.';
  buf[KC_QUANTITY_MAX_LEN - 1] = '1';
  buf[KC_QUANTITY_MAX_LEN] = '\0';
  assert_int_equal(kc_quantity_parse(buf, &q, NULL), 0);
  char out[KC_QUANTITY_STR_MAX];
  assert_true(kc_quantity_format(&q, out, sizeof(out)) > 0);
  assert_string_equal(out, "1n");
  buf[KC_QUANTITY_MAX_LEN] = '0';
  buf[KC_QUANTITY_MAX_LEN + 1] = '\0';
  size_t off = 0;
  assert_int_equal(kc_quantity_parse(buf, &q, &off), KC_ETOOBIG);
  assert_int_equal(off, KC_QUANTITY_MAX_LEN);

  /* an embedded NUL is not part of a quantity */
  assert_int_equal(kc_quantity_parsen("1\0Mi", 4, &q, &off), KC_EPARSE);
  assert_int_equal(off, 1);
  assert_int_equal(kc_quantity_parsen("2Gi", 3, &q, &off), 0);
  assert_int_equal(kc_quantity_value(&q), 2147483648LL);

  /* largest and smallest canonical strings fit KC_QUANTITY_STR_MAX */
  assert_int_equal(kc_quantity_parse("-170141183460469231731687303715884105.727u", &q, NULL), 0);
  int n = kc_quantity_format(&q, out, sizeof(out));
  assert_string_equal(out, "-170141183460469231731687303715884105727n");
  assert_int_equal(n, 41);
  assert_true(n < KC_QUANTITY_STR_MAX);
  /* a short buffer is refused, not overrun */
  assert_int_equal(kc_quantity_format(&q, out, 10), KC_ERANGE);
  assert_int_equal(kc_quantity_format(&q, out, 0), KC_ERANGE);
}

static void test_builders(void **state) {
  (void)state;
  kc_quantity q, r;
  char buf[KC_QUANTITY_STR_MAX];
  kc_quantity_from_milli(&q, 1500, KC_QFMT_DECIMAL_SI);
  kc_quantity_format(&q, buf, sizeof(buf));
  assert_string_equal(buf, "1500m");
  kc_quantity_from_milli(&q, 2000, KC_QFMT_DECIMAL_SI);
  kc_quantity_format(&q, buf, sizeof(buf));
  assert_string_equal(buf, "2");
  kc_quantity_from_milli(&q, 1024, KC_QFMT_BINARY_SI);
  kc_quantity_format(&q, buf, sizeof(buf));
  assert_string_equal(buf, "1024m");
  kc_quantity_from_value(&q, 1024, KC_QFMT_BINARY_SI);
  kc_quantity_format(&q, buf, sizeof(buf));
  assert_string_equal(buf, "1Ki");
  kc_quantity_from_value(&q, 1234000, KC_QFMT_DECIMAL_SI);
  kc_quantity_format(&q, buf, sizeof(buf));
  assert_string_equal(buf, "1234k");
  kc_quantity_from_value(&q, 1000000, KC_QFMT_DECIMAL_EXP);
  kc_quantity_format(&q, buf, sizeof(buf));
  assert_string_equal(buf, "1e6");
  kc_quantity_from_value(&q, 3 * 1024 * 1024 + 1, KC_QFMT_BINARY_SI);
  kc_quantity_format(&q, buf, sizeof(buf));
  assert_string_equal(buf, "3145729");

  assert_int_equal(kc_quantity_parse("10000T", &q, NULL), 0);
  assert_int_equal(kc_quantity_parse("100Gi", &r, NULL), 0);
  assert_int_equal(kc_quantity_cmp(&q, &r), 1);
  assert_int_equal(kc_quantity_cmp(&r, &q), -1);
  assert_int_equal(kc_quantity_parse("1000m", &q, NULL), 0);
  assert_int_equal(kc_quantity_parse("1", &r, NULL), 0);
  assert_int_equal(kc_quantity_cmp(&q, &r), 0);
}

static const char *fmt(const kc_quantity *q) {
  static char buf[KC_QUANTITY_STR_MAX];
  assert_true(kc_quantity_format(q, buf, sizeof(buf)) > 0);
  return buf;
}

/* Sums and products of user numbers saturate at +-KC_QUANTITY_NANO_MAX and always format as
 * a quantity that parses back; a sum past 10^18 units used to index past the suffix table. */
static void test_arithmetic(void **state) {
  (void)state;
  kc_quantity sum = {0}, q, back;
  assert_int_equal(kc_quantity_parse("1E", &q, NULL), 0);
  for (int i = 0; i < 1000; i++)
    kc_quantity_add(&sum, &q);
  assert_string_equal(fmt(&sum), "1e21");
  assert_int_equal(kc_quantity_parse(fmt(&sum), &back, NULL), 0);
  assert_int_equal(kc_quantity_cmp(&sum, &back), 0);
  /* the same as one multiplication */
  kc_quantity_mul(&q, 1000);
  assert_int_equal(kc_quantity_cmp(&sum, &q), 0);
  /* the largest a schema allows: 2^31-1 pods of 2^63-1 units, then saturation */
  assert_int_equal(kc_quantity_parse("9223372036854775807", &q, NULL), 0);
  kc_quantity_mul(&q, INT32_MAX);
  assert_string_equal(fmt(&q), "19807040619342712359383728129");
  kc_quantity_mul(&q, INT32_MAX);
  assert_true(q.nano == KC_QUANTITY_NANO_MAX);
  assert_string_equal(fmt(&q), "170141183460469231731687303715884105727n");
  kc_quantity_add(&q, &q);
  assert_true(q.nano == KC_QUANTITY_NANO_MAX);
  kc_quantity_mul(&q, -1);
  assert_true(q.nano == -KC_QUANTITY_NANO_MAX);
  kc_quantity_mul(&q, INT64_MIN);
  assert_true(q.nano == KC_QUANTITY_NANO_MAX);
  kc_quantity_mul(&q, INT64_MIN);
  assert_true(q.nano == -KC_QUANTITY_NANO_MAX);
  kc_quantity_add(&q, &q);
  assert_true(q.nano == -KC_QUANTITY_NANO_MAX);
  assert_string_equal(fmt(&q), "-170141183460469231731687303715884105727n");
  assert_int_equal(kc_quantity_parse(fmt(&q), &back, NULL), 0);
  assert_int_equal(kc_quantity_cmp(&q, &back), 0);
  /* a zero sum takes the addend's format; a product keeps its own */
  kc_quantity z = {0};
  assert_int_equal(kc_quantity_parse("1Gi", &q, NULL), 0);
  kc_quantity_add(&z, &q);
  kc_quantity_mul(&z, 3);
  assert_string_equal(fmt(&z), "3Gi");
  kc_quantity_mul(&z, 0);
  assert_string_equal(fmt(&z), "0");
  /* every exponent DecimalSI and DecimalExponent can reach formats within the bound */
  kc_quantity e = {.nano = 1, .format = KC_QFMT_DECIMAL_SI};
  for (int i = 0; i < 38; i++) {
    kc_quantity_mul(&e, 10);
    assert_int_equal(kc_quantity_parse(fmt(&e), &back, NULL), 0);
    assert_int_equal(kc_quantity_cmp(&e, &back), 0);
    e.format = KC_QFMT_DECIMAL_EXP;
    assert_int_equal(kc_quantity_parse(fmt(&e), &back, NULL), 0);
    assert_int_equal(kc_quantity_cmp(&e, &back), 0);
    e.format = KC_QFMT_DECIMAL_SI;
  }
  assert_string_equal(fmt(&e), "100e27");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),      cmocka_unit_test(test_invalid),
      cmocka_unit_test(test_limits),     cmocka_unit_test(test_builders),
      cmocka_unit_test(test_arithmetic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
