#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kc_error.h"

#include <uv.h>

static void test_reason_roundtrip(void **state) {
  (void)state;
  static const char *const reasons[] = {"NotFound", "AlreadyExists", "Conflict",
                                        "Gone",     "Expired",       "TooManyRequests",
                                        "Invalid",  "Forbidden",     "Unauthorized"};
  for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
    int code = kc_err_from_reason(reasons[i]);
    assert_true(code < 0);
    assert_int_not_equal(code, KC_EHTTP);
    assert_string_equal(kc_strerror(code), reasons[i]);
  }
  assert_int_equal(kc_err_from_reason("SomethingNew"), KC_EHTTP);
  assert_int_equal(kc_err_from_reason(NULL), KC_EHTTP);
}

static void test_http_status(void **state) {
  (void)state;
  assert_int_equal(kc_err_from_http(200), 0);
  assert_int_equal(kc_err_from_http(201), 0);
  assert_int_equal(kc_err_from_http(404), KC_ENOTFOUND);
  assert_int_equal(kc_err_from_http(409), KC_ECONFLICT);
  assert_int_equal(kc_err_from_http(410), KC_EGONE);
  assert_int_equal(kc_err_from_http(429), KC_ETOOMANYREQUESTS);
  assert_int_equal(kc_err_from_http(418), KC_EHTTP);
}

static void test_names(void **state) {
  (void)state;
  assert_string_equal(kc_err_name(KC_ENOTFOUND), "KC_ENOTFOUND");
  assert_string_equal(kc_err_name(0), "KC_OK");
  assert_string_equal(kc_strerror(12345), "unknown error");
  assert_string_equal(kc_strerror(KC__EBASE), "unknown error");
  assert_string_equal(kc_strerror(KC_ENOMEM), "out of memory");
}

static void test_uv_errors(void **state) {
  (void)state;
  assert_int_equal(kc_err_from_uv(0), 0);
  assert_int_equal(kc_err_from_uv(UV_ENOMEM), KC_ENOMEM);
  assert_int_equal(kc_err_from_uv(UV_EADDRINUSE), KC_EADDRINUSE);
  assert_int_equal(kc_err_from_uv(UV_ECONNREFUSED), KC_ECONNECT);
  assert_int_equal(kc_err_from_uv(UV_ETIMEDOUT), KC_ETIMEDOUT);
  assert_int_equal(kc_err_from_uv(UV_ECANCELED), KC_ECANCELED);
  assert_int_equal(kc_err_from_uv(UV_EPIPE), KC_EIO);
  /* Every mapped code has a message of its own. */
  assert_string_not_equal(kc_strerror(kc_err_from_uv(UV_ENOENT)), "unknown error");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reason_roundtrip),
      cmocka_unit_test(test_http_status),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_uv_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
