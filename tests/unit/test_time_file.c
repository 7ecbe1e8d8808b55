/* The base library's RFC 3339 formatter (kc_time.c) and whole-file reader (kc_file.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kc_error.h"
#include "kc_file.h"
#include "kc_time.h"

static void test_format(void **state) {
  (void)state;
  char buf[KC_TIME_LEN];
  kc_time_format(0, buf);
  assert_string_equal(buf, "1970-01-01T00:00:00Z");
  kc_time_format(1795953600, buf);
  assert_string_equal(buf, "2026-11-29T12:00:00Z");
  kc_time_format(951782400, buf); /* a leap day */
  assert_string_equal(buf, "2000-02-29T00:00:00Z");
  kc_time_format(-1, buf);
  assert_string_equal(buf, "1969-12-31T23:59:59Z");
  /* Beyond what gmtime can represent: the epoch, never garbage. */
  kc_time_format(INT64_MAX, buf);
  assert_string_equal(buf, "1970-01-01T00:00:00Z");
}

static void test_format_micro(void **state) {
  (void)state;
  char buf[KC_TIME_LEN];
  kc_time_format_micro(1795953600LL * 1000000 + 42, buf);
  assert_string_equal(buf, "2026-11-29T12:00:00.000042Z");
  kc_time_format_micro(-1, buf); /* one microsecond before the epoch */
  assert_string_equal(buf, "1969-12-31T23:59:59.999999Z");
}

/* What is formatted parses back to the same second. */
static void test_round_trip(void **state) {
  (void)state;
  char buf[KC_TIME_LEN];
  for (int64_t t = -86400; t < 4102444800; t += 86400 * 37 + 3599) {
    kc_time_format(t, buf);
    int64_t back = 0;
    assert_int_equal(kc_time_parse(buf, &back), 0);
    assert_int_equal(back, t);
  }
  int64_t ms = 0;
  kc_time_format_micro(1795953600LL * 1000000 + 123456, buf);
  assert_int_equal(kc_rfc3339_parse(buf, &ms), 0);
  assert_int_equal(ms, 1795953600LL * 1000 + 123);
}

static char path[64];

static int make_file(void **state) {
  (void)state;
  snprintf(path, sizeof(path), "/tmp/kiln-test-file-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  static const char text[] = "line one\nline two\n";
  ssize_t w = write(fd, text, sizeof(text) - 1);
  close(fd);
  return w == (ssize_t)(sizeof(text) - 1) ? 0 : -1;
}

static int remove_file(void **state) {
  (void)state;
  unlink(path);
  return 0;
}

static void test_read(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  assert_int_equal(kc_file_read(path, 1024, &buf, &len), 0);
  assert_int_equal(len, 18);
  assert_string_equal(buf, "line one\nline two\n"); /* NUL-terminated */
  free(buf);
  /* Exactly at the bound is fine, one byte under it is too large. */
  assert_int_equal(kc_file_read(path, 18, &buf, &len), 0);
  free(buf);
  assert_int_equal(kc_file_read(path, 17, &buf, &len), KC_ETOOBIG);
  assert_null(buf);
  assert_int_equal(len, 0);
}

/* A file larger than the first buffer grows it; one larger than the bound stops early. */
static void test_read_large(void **state) {
  (void)state;
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  for (int i = 0; i < 100000; i++)
    fputc('a' + i % 26, f);
  fclose(f);
  char *buf = NULL;
  size_t len = 0;
  assert_int_equal(kc_file_read(path, 1 << 20, &buf, &len), 0);
  assert_int_equal(len, 100000);
  assert_int_equal(buf[99999], 'a' + 99999 % 26);
  assert_int_equal(buf[100000], '\0');
  free(buf);
  assert_int_equal(kc_file_read(path, 5000, &buf, &len), KC_ETOOBIG);
  assert_null(buf);
}

static void test_read_errors(void **state) {
  (void)state;
  char *buf = (char *)1;
  size_t len = 7;
  assert_int_equal(kc_file_read("/nonexistent/kiln/file", 10, &buf, &len), KC_ENOENT);
  assert_null(buf);
  assert_int_equal(len, 0);
  /* A directory opens but cannot be read: an I/O error, errno saying why. */
  errno = 0;
  assert_int_equal(kc_file_read("/", 10, &buf, &len), KC_EIO);
  assert_int_equal(errno, EISDIR);
  assert_null(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_format),
      cmocka_unit_test(test_format_micro),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test_setup_teardown(test_read, make_file, remove_file),
      cmocka_unit_test_setup_teardown(test_read_large, make_file, remove_file),
      cmocka_unit_test(test_read_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
