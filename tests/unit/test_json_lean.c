/* The lean decode (kc_json_lean.h): on every input, kc_json_lean_loadb builds what json_loadb
 * builds with metadata.managedFields deleted, or fails where json_loadb fails, and the skipped
 * managedFields value costs the tree no allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_file.h"
#include "kc_json_lean.h"

/* Both loaders on len bytes: the same outcome and, on success, equal trees. Returns the lean
 * tree (new) or NULL, with *error from the lean loader. */
static json_t *both(const char *s, size_t len, size_t flags, json_error_t *error) {
  json_error_t je;
  json_t *ref = json_loadb(s, len, flags, &je);
  kc_json_drop_managed_fields(ref);
  json_t *lean = kc_json_lean_loadb(s, len, flags, error);
  if ((ref == NULL) != (lean == NULL))
    fail_msg("%.80s: jansson %s (%s), lean %s (%s)", s, ref ? "ok" : "fails", je.text,
             lean ? "ok" : "fails", lean ? "" : error->text);
  if (ref && !json_equal(ref, lean)) {
    char *a = json_dumps(ref, JSON_COMPACT | JSON_SORT_KEYS);
    char *b = json_dumps(lean, JSON_COMPACT | JSON_SORT_KEYS);
    fail_msg("%.80s: trees differ:\n%.400s\n%.400s", s, a, b);
  }
  json_decref(ref);
  return lean;
}

static json_t *both_str(const char *s) {
  json_error_t e;
  return both(s, strlen(s), 0, &e);
}

static bool has_managed_fields(const char *s, size_t len) {
  json_t *j = json_loadb(s, len, 0, NULL);
  char *d = json_dumps(j, JSON_COMPACT);
  bool found = d && strstr(d, "\"managedFields\"");
  free(d);
  json_decref(j);
  return found;
}

/* Captured and hand-written API objects: lean == jansson minus managedFields, and the lean
 * tree of the ones that carry managedFields has none left in its text. */
static void test_fixtures(void **state) {
  (void)state;
  const char *files[] = {
      "pod.json",      "node.json",          "job.json",           "podgroup.json",
      "queue.json",    "command.json",       "priorityclass.json", "pb/rich.json",
      "pb/bound.json", "pb/node.json",       "pb/pgpod.json",      "pb/ctlpod.json",
      "lean/job.json", "lean/podgroup.json", "lean/joblist.json",  "lean/watch-podgroup.json"};
  int with_mf = 0;
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    char path[512], *buf = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/%s", LEAN_TESTDATA, files[i]);
    assert_int_equal(kc_file_read(path, 1 << 20, &buf, &len), 0);
    json_error_t e;
    json_t *lean = both(buf, len, 0, &e);
    assert_non_null(lean);
    char *d = json_dumps(lean, JSON_COMPACT);
    assert_null(strstr(d, "\"managedFields\""));
    with_mf += has_managed_fields(buf, len);
    free(d);
    json_decref(lean);
    free(buf);
  }
  assert_true(with_mf >= 10); /* the fixtures do exercise the skip */
}

static void test_valid_edges(void **state) {
  (void)state;
  const char *ok[] = {
      "{}",
      "[]",
      " \t\r\n[ ]\n",
      "[[], {}, [[{}]]]",
      "{\"a\":{},\"b\":[]}",
      "[\"\\u00e9\\u2028\\u0041\\/\\\"\\\\\\b\\f\\n\\r\\t\"]",
      "[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]",
      "[\"\\uD83D\\uDE00\", \"x\\ud800\\udc00y\", \"\\uDBFF\\uDFFF\"]",
      "[0, -0, 1, -1, 9223372036854775807, -9223372036854775808]",
      "[0.0, -0.0, 1.5, -2.25e-3, 1E+2, 1e-400, 6.02214076e23, 123456789012345678901234567890.5]",
      "[true, false, null]",
      "{\"a\":1,\"a\":2,\"b\":{\"c\":3},\"b\":[4]}",
      /* what is skipped and what is not */
      "{\"metadata\":{\"name\":\"x\",\"managedFields\":[{\"manager\":\"m\",\"f\":{\"f:a\":{}}}]}}",
      "{\"metadata\":{\"managedFields\":null,\"uid\":\"u\"}}",
      "{\"metadata\":{\"managedFields\":1,\"managedFields\":{\"a\":[1,2]}}}",
      "{\"metadata\":[{\"managedFields\":1}],\"spec\":{\"managedFields\":2}}",
      "[{\"metadata\":{\"managedFields\":3}}]",
      "{\"items\":[{\"metadata\":{\"managedFields\":[]}}]}",
      "{\"metadata\":{\"metadata\":{\"managedFields\":[1]},\"managedFields\":[2]}}",
      "{\"m\\u0065tadata\":{\"m\\u0061nagedFields\":[1],\"managedField\":2,\"managedFieldsx\":3}}",
      "{\"object\":{\"metadata\":{\"managedFields\":[[[[{\"k\":\"\\u00e9\"}]]]],\"name\":\"n\"}}}",
      "{\"\":\"\",\"a b\":\"\"}",
  };
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    json_t *j = both_str(ok[i]);
    assert_non_null(j);
    json_decref(j);
  }
  json_t *j = both_str("{\"a\":1,\"a\":2}");
  assert_int_equal(json_integer_value(json_object_get(j, "a")), 2);
  json_decref(j);
  j = both_str("[1, 1.0, 1e2, -9223372036854775808]");
  assert_true(json_is_integer(json_array_get(j, 0)));
  assert_true(json_is_real(json_array_get(j, 1)) && json_is_real(json_array_get(j, 2)));
  assert_true(json_integer_value(json_array_get(j, 3)) == INT64_MIN);
  json_decref(j);
  j = both_str("[\"\\uD83D\\uDE00\"]");
  assert_string_equal(json_string_value(json_array_get(j, 0)), "\xf0\x9f\x98\x80");
  json_decref(j);
  j = both_str("{\"metadata\":{\"managedFields\":[1],\"name\":\"n\"},\"managedFields\":[2]}");
  assert_null(json_object_get(json_object_get(j, "metadata"), "managedFields"));
  assert_string_equal(json_string_value(json_object_get(json_object_get(j, "metadata"), "name")),
                      "n");
  assert_non_null(json_object_get(j, "managedFields"));
  json_decref(j);
}

/* A NUL in a string: refused as jansson refuses it, kept with JSON_ALLOW_NUL; never in a key. */
static void test_nul(void **state) {
  (void)state;
  json_error_t e;
  const char *s = "[\"a\\u0000b\"]";
  assert_null(both(s, strlen(s), 0, &e));
  json_t *j = both(s, strlen(s), JSON_ALLOW_NUL, &e);
  assert_non_null(j);
  assert_int_equal(json_string_length(json_array_get(j, 0)), 3);
  assert_memory_equal(json_string_value(json_array_get(j, 0)), "a\0b", 3);
  json_decref(j);
  s = "{\"a\\u0000\":1}";
  assert_null(both(s, strlen(s), JSON_ALLOW_NUL, &e));
  assert_non_null(strstr(e.text, "NUL byte in object key"));
  s = "{\"metadata\":{\"managedFields\":{\"k\\u0000\":1}}}";
  assert_null(both(s, strlen(s), JSON_ALLOW_NUL, &e));
  /* A raw NUL byte: jansson skips one right after a number (both agree, whatever it does). */
  const char raw[] = "[1\0,\"a\0\"]";
  json_t *r = both(raw, 4, 0, &e);
  json_decref(r);
  assert_null(both(raw, sizeof(raw) - 1, 0, &e));
}

/* Nesting: json_loadb's limit, in and out of a skipped managedFields value. */
static char *nested(size_t depth, const char *prefix, const char *suffix) {
  size_t pl = strlen(prefix), sl = strlen(suffix);
  char *s = malloc(pl + 2 * depth + sl + 1);
  assert_non_null(s);
  memcpy(s, prefix, pl);
  memset(s + pl, '[', depth);
  memset(s + pl + depth, ']', depth);
  memcpy(s + pl + 2 * depth, suffix, sl + 1);
  return s;
}

static void test_depth(void **state) {
  (void)state;
  json_error_t e;
  char *s = nested(JSON_PARSER_MAX_DEPTH, "", "");
  json_t *j = both(s, strlen(s), 0, &e);
  assert_non_null(j);
  json_decref(j);
  free(s);
  s = nested(JSON_PARSER_MAX_DEPTH + 1, "", "");
  assert_null(both(s, strlen(s), 0, &e));
  assert_string_equal(e.text, "maximum parsing depth reached");
  free(s);
  /* {"metadata":{"managedFields": is two levels deep already */
  s = nested(JSON_PARSER_MAX_DEPTH - 1, "{\"metadata\":{\"managedFields\":", "}}");
  assert_null(both(s, strlen(s), 0, &e));
  assert_string_equal(e.text, "maximum parsing depth reached");
  free(s);
  s = nested(JSON_PARSER_MAX_DEPTH - 2, "{\"metadata\":{\"managedFields\":", "}}");
  j = both(s, strlen(s), 0, &e);
  assert_non_null(j);
  json_decref(j);
  free(s);
}

/* Invalid texts fail in both loaders, with a reason and a byte offset. */
static void test_invalid(void **state) {
  (void)state;
  static const struct {
    const char *text;
    const char *why; /* a part of the reason, or NULL */
    int at;          /* the byte offset, or -1 */
  } bad[] = {
      {"", "premature EOF", 0},
      {"  \n ", NULL, -1},
      {"1", "'[' or '{' expected", -1},
      {"\"x\"", "'[' or '{' expected", -1},
      {"null", "'[' or '{' expected", -1},
      {"{", NULL, 1},
      {"[1,]", NULL, 4}, /* after the token that does not fit */
      {"{\"a\" 1}", "colon", -1},
      {"{1:2}", NULL, -1},
      {"[01]", NULL, -1},
      {"[1.]", NULL, -1},
      {"[-]", NULL, -1},
      {"[1e400]", "real number overflow", -1},
      {"[9223372036854775808]", "too big integer", -1},
      {"[-9223372036854775809]", "too big negative integer", -1},
      {"{}  x", "trailing garbage", -1},
      {"{}{}", NULL, -1},
      {"{\"a\":\"\"}\"", "end of file expected", 8}, /* yajl takes it for a string to come */
      {"[] \"abc", "end of file expected", 3},
      {"[tru]", NULL, -1},
      {"[\"\\x\"]", NULL, -1},
      {"[\"a\x01\"]", NULL, -1},
      {"[\"\\u12\"]", NULL, -1},
      {"[\"abc", NULL, -1},
      {"[1 /* c */]", NULL, -1},
      {"\xef\xbb\xbf[]", NULL, -1},
      {"[\v1]", NULL, -1},
      {"[1\f]", NULL, -1},
      {"[\"\xc0\x80\"]", NULL, -1},
      {"[\"\xed\xa0\x80\"]", NULL, -1},
      {"[\"\xf4\x90\x80\x80\"]", NULL, -1},
      {"[\"\xe2\x82\"]", NULL, -1},
      {"[\"\\uD800\"]", NULL, -1},
      {"[\"\\uDC00\\uD800\"]", NULL, -1},
      {"[\"\\uD800\\u0041\"]", NULL, -1},
      {"[\"\\uD800x\"]", NULL, -1},
      {"{\"metadata\":{\"managedFields\":[1,]}}", NULL, -1},
      {"{\"metadata\":{\"managedFields\":[9223372036854775808]}}", "too big integer", -1},
      {"{\"metadata\":{\"managedFields\":[\"\xc0\x80\"]}}", NULL, -1},
      {"{\"metadata\":{\"managedFields\":{\"a\":1,}}}", NULL, -1},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    json_error_t e;
    memset(&e, 0, sizeof(e));
    assert_null(both(bad[i].text, strlen(bad[i].text), 0, &e));
    if (e.text[0] == '\0')
      fail_msg("%s: no reason", bad[i].text);
    if (bad[i].why && !strstr(e.text, bad[i].why))
      fail_msg("%s: reason \"%s\", want \"%s\"", bad[i].text, e.text, bad[i].why);
    if (bad[i].at >= 0 && e.position != bad[i].at)
      fail_msg("%s: at byte %d, want %d", bad[i].text, e.position, bad[i].at);
    assert_true(e.position >= 0 && (size_t)e.position <= strlen(bad[i].text));
  }
  json_error_t e;
  assert_null(kc_json_lean_loadb(NULL, 0, 0, &e));
  assert_null(kc_json_lean_loadb("[1,]", 4, 0, NULL)); /* no error wanted */
}

/* The line and column of an error follow from its byte offset. */
static void test_error_position(void **state) {
  (void)state;
  json_error_t e;
  const char *s = "{\n  \"a\": 1,\n  \"b\": x\n}";
  assert_null(kc_json_lean_loadb(s, strlen(s), 0, &e));
  assert_int_equal(e.line, 3);
  assert_true(e.position > 17 && e.position <= 20);
  assert_true(e.column == e.position - 12);
  assert_non_null(strstr(e.text, "error"));
}

/* jansson's allocations, counted: the managedFields value adds none to the lean tree. */
static size_t allocs;

static void *counting_malloc(size_t n) {
  allocs++;
  return malloc(n);
}

static size_t lean_allocs(const char *s) {
  allocs = 0;
  json_t *j = kc_json_lean_loadb(s, strlen(s), 0, NULL);
  assert_non_null(j);
  json_decref(j);
  return allocs;
}

static void test_skip_allocates_nothing(void **state) {
  (void)state;
  json_set_alloc_funcs(counting_malloc, free);
  size_t with =
      lean_allocs("{\"metadata\":{\"name\":\"x\",\"managedFields\":[{\"manager\":\"kubectl\","
                  "\"fieldsV1\":{\"f:spec\":{\".\":{},\"f:a\":{}}},\"n\":[1,2.5,true,null]}]}}");
  size_t without = lean_allocs("{\"metadata\":{\"name\":\"x\"}}");
  size_t kept =
      lean_allocs("{\"metadata\":{\"name\":\"x\",\"managedFieldz\":[{\"manager\":\"kubectl\"}]}}");
  json_set_alloc_funcs(malloc, free);
  assert_int_equal(with, without);
  assert_true(kept > without); /* the count does see the tree */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixtures),
      cmocka_unit_test(test_valid_edges),
      cmocka_unit_test(test_nul),
      cmocka_unit_test(test_depth),
      cmocka_unit_test(test_invalid),
      cmocka_unit_test(test_error_position),
      cmocka_unit_test(test_skip_allocates_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
