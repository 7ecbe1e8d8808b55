/* JSON fixtures for the unit tests: a file of a test data folder, or inline text; either fails
 * the test with the parser's message when it is not JSON. */
#ifndef TEST_FIXTURE_H
#define TEST_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>

/* DIR/NAME SUFFIX, e.g. (PB_TESTDATA, "pod-running", ".json"); SUFFIX may be "". */
static inline json_t *fx_json_file(const char *dir, const char *name, const char *suffix) {
  char path[4096 + 64];
  snprintf(path, sizeof(path), "%s/%s%s", dir, name, suffix);
  json_error_t e;
  json_t *j = json_load_file(path, 0, &e);
  if (!j)
    fail_msg("%s: %s", path, e.text);
  return j;
}

static inline json_t *fx_json_text(const char *text, size_t flags) {
  json_error_t e;
  json_t *j = json_loads(text, flags, &e);
  if (!j)
    fail_msg("bad test JSON: %s", e.text);
  return j;
}

#endif
