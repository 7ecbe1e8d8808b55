/* Base64 both ways (common/base/kc_base64.c): the decoder's strictness on padding, alphabet
 * and truncation, the reasons it gives, round trips through the encoder at every length of
 * the last group, and whitespace skipped as in a wrapped PEM body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_base64.h"
#include "kc_error.h"

static void test_decode_good(void **state) {
  (void)state;
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"", ""},
      {"YQ==", "a"},
      {"YQ", "a"}, /* padding is optional */
      {"YWI=", "ab"},
      {"YWI", "ab"},
      {"YWJj", "abc"},
      {"YW\nJj\n", "abc"},
      {" YW\r\n\tJj ", "abc"},
      {"aGVsbG8gd29ybGQ=", "hello world"},
      {"aGVsbG8gd29ybGQ", "hello world"},
      {"+/+/", "\xfb\xff\xbf"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    unsigned char *out = NULL;
    size_t n = 99;
    char err[128] = "";
    int rc = kc_base64_decode(cases[i].in, strlen(cases[i].in), &out, &n, err, sizeof(err));
    if (rc != 0)
      fail_msg("case %zu (%s): got %s \"%s\"", i, cases[i].in, kc_err_name(rc), err);
    assert_int_equal(n, strlen(cases[i].out));
    assert_memory_equal(out, cases[i].out, n);
    assert_int_equal(out[n], '\0');
    free(out);
  }
}

static void test_decode_bad_names_the_reason(void **state) {
  (void)state;
  static const struct {
    const char *in, *why;
  } cases[] = {
      {"Y", "truncated"},
      {"YWJjY", "truncated"},
      {"YQ=a", "data after padding at byte 3"},
      {"Y===", "truncated"},
      {"YQ===", "wrong padding: 3 '=' after 2 data"},
      {"YWJj=", "wrong padding: 1 '=' after 4 data"},
      {"YWI==", "wrong padding: 2 '=' after 3 data"},
      {"YQ=", "wrong padding: 1 '=' after 2 data"},
      {"=", "wrong padding: 1 '=' after 0 data"},
      {"Y*==", "byte 1 is not a base64 character"},
      {"YW-j", "byte 2 is not a base64 character"}, /* URL-safe alphabet refused */
      {"YW_j", "byte 2 is not a base64 character"},
      {"@@", "byte 0 is not a base64 character"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    unsigned char *out = (unsigned char *)"untouched";
    size_t len = strlen(cases[i].in);
    char err[128] = "";
    int rc = kc_base64_decode(cases[i].in, len, &out, &len, err, sizeof(err));
    if (rc != KC_EPARSE || !strstr(err, cases[i].why))
      fail_msg("case %zu: got %s \"%s\", want KC_EPARSE \"%s\"", i, kc_err_name(rc), err,
               cases[i].why);
    assert_string_equal((const char *)out, "untouched");
  }
  /* An embedded NUL is a byte like any other outside the alphabet. */
  unsigned char *out;
  size_t n;
  char err[128];
  assert_int_equal(kc_base64_decode("YW\nJ\0j", 6, &out, &n, err, sizeof(err)), KC_EPARSE);
  assert_string_equal(err, "byte 4 is not a base64 character");
}

static void test_round_trip(void **state) {
  (void)state;
  unsigned char data[64];
  for (size_t i = 0; i < sizeof(data); i++)
    data[i] = (unsigned char)(i * 37 + 11);
  for (size_t n = 0; n <= sizeof(data); n++) {
    char *enc = kc_base64_encode(data, n);
    assert_non_null(enc);
    assert_int_equal(strlen(enc), (n + 2) / 3 * 4);
    unsigned char *dec;
    size_t m;
    char err[128];
    assert_int_equal(kc_base64_decode(enc, strlen(enc), &dec, &m, err, sizeof(err)), 0);
    assert_int_equal(m, n);
    assert_memory_equal(dec, data, n);
    free(dec);
    /* The same without its padding. */
    size_t len = strlen(enc);
    while (len && enc[len - 1] == '=')
      len--;
    assert_int_equal(kc_base64_decode(enc, len, &dec, &m, err, sizeof(err)), 0);
    assert_int_equal(m, n);
    assert_memory_equal(dec, data, n);
    free(dec);
    free(enc);
  }
  char *enc = kc_base64_encode("hello world", 11);
  assert_string_equal(enc, "aGVsbG8gd29ybGQ=");
  free(enc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode_good),
      cmocka_unit_test(test_decode_bad_names_the_reason),
      cmocka_unit_test(test_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
