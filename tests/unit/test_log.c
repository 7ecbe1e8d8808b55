#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "kc_error.h"
#include "kc_log.h"

static int capture_fd[2];

static size_t drain(char *buf, size_t cap) {
  ssize_t n = read(capture_fd[0], buf, cap - 1);
  buf[n > 0 ? n : 0] = '\0';
  return n > 0 ? (size_t)n : 0;
}

static int setup(void **state) {
  (void)state;
  if (pipe(capture_fd) != 0)
    return -1;
  kc_log_set_stream_fd(capture_fd[1]);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kc_log_set_stream_fd(2);
  close(capture_fd[0]);
  close(capture_fd[1]);
  return 0;
}

static void test_klog_header(void **state) {
  (void)state;
  kc_log_set_format("text");
  KC_WARN("disk %s is %d%% full", "sda", 91);
  char buf[1024];
  drain(buf, sizeof(buf));
  /* W1129 15:57:01.123456   12345 test_log.c:NN] message */
  assert_int_equal(buf[0], 'W');
  assert_non_null(strstr(buf, " test_log.c:"));
  assert_non_null(strstr(buf, "] disk sda is 91% full\n"));
  assert_int_equal(buf[5], ' ');
  assert_int_equal(buf[8], ':');
  assert_int_equal(buf[14], '.');
}

static void test_verbosity(void **state) {
  (void)state;
  char buf[1024];
  kc_log_verbosity = 2;
  KC_V(3, "hidden");
  KC_V(2, "shown");
  drain(buf, sizeof(buf));
  assert_null(strstr(buf, "hidden"));
  assert_non_null(strstr(buf, "shown"));
  assert_int_equal(kc_log_set_vmodule("test_lo*=5"), 0);
  KC_V(5, "by vmodule");
  drain(buf, sizeof(buf));
  assert_non_null(strstr(buf, "by vmodule"));
  assert_int_equal(kc_log_set_vmodule("other=5"), 0);
  assert_false(kc_log_v_enabled(5, "dir/test_log.c"));
  assert_int_equal(kc_log_set_vmodule("bad"), KC_EINVAL);
  assert_int_equal(kc_log_set_vmodule("x=-1"), KC_EINVAL);
  assert_int_equal(kc_log_set_vmodule(""), 0);
  kc_log_verbosity = 0;
}

static void test_json(void **state) {
  (void)state;
  assert_int_equal(kc_log_set_format("json"), 0);
  KC_ERROR("quote \" and newline\nin message");
  char buf[1024];
  drain(buf, sizeof(buf));
  json_error_t e;
  json_t *o = json_loads(buf, 0, &e);
  assert_non_null(o);
  assert_string_equal(json_string_value(json_object_get(o, "level")), "error");
  assert_string_equal(json_string_value(json_object_get(o, "msg")),
                      "quote \" and newline\nin message");
  json_decref(o);
  kc_log_set_format("text");
  assert_int_equal(kc_log_set_format("xml"), KC_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_klog_header),
      cmocka_unit_test(test_verbosity),
      cmocka_unit_test(test_json),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
