/* The watch stream's frame parser: frames split anywhere across chunks, oversized and
 * truncated frames, unknown types, ERROR 410; and the reflector's backoff schedule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_informer.h"

typedef struct {
  int n;
  kc_watch_type types[16];
  char names[16][32];
  int stop_at; /* return KC_ECANCELED on this frame (1-based), 0: never */
} seen;

static int record(kc_watch_type type, json_t *obj, void *ud) {
  seen *s = ud;
  assert_true(s->n < 16);
  s->types[s->n] = type;
  const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
  snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name ? name : "");
  s->n++;
  return s->stop_at == s->n ? KC_ECANCELED : 0;
}

static const char STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"2\"}}}\n"
    "\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"3\"}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"4\"}}}\n";

static void check_stream(const seen *s) {
  assert_int_equal(s->n, 4);
  assert_int_equal(s->types[0], KC_WATCH_ADDED);
  assert_int_equal(s->types[1], KC_WATCH_MODIFIED);
  assert_int_equal(s->types[2], KC_WATCH_DELETED);
  assert_int_equal(s->types[3], KC_WATCH_BOOKMARK);
  assert_string_equal(s->names[0], "a");
  assert_string_equal(s->names[1], "b");
  assert_string_equal(s->names[2], "c");
}

static void test_every_split_point(void **state) {
  (void)state;
  size_t len = strlen(STREAM);
  /* Two chunks split at every byte, and one byte per chunk. */
  for (size_t cut = 0; cut <= len; cut++) {
    kc_watch_parser p;
    kc_watch_parser_init(&p, 0);
    seen s = {0};
    char err[256];
    assert_int_equal(kc_watch_parser_feed(&p, STREAM, cut, record, &s, err, sizeof(err)), 0);
    assert_int_equal(
        kc_watch_parser_feed(&p, STREAM + cut, len - cut, record, &s, err, sizeof(err)), 0);
    assert_int_equal(kc_watch_parser_finish(&p, err, sizeof(err)), 0);
    check_stream(&s);
    kc_frames_close(&p);
  }
  kc_watch_parser p;
  kc_watch_parser_init(&p, 0);
  seen s = {0};
  char err[256];
  for (size_t i = 0; i < len; i++)
    assert_int_equal(kc_watch_parser_feed(&p, STREAM + i, 1, record, &s, err, sizeof(err)), 0);
  check_stream(&s);
  assert_int_equal((int)p.frames, 4);
  assert_int_equal((int)p.offset, (int)len);
  kc_frames_close(&p);
}

static void test_oversized_frame(void **state) {
  (void)state;
  kc_watch_parser p;
  kc_watch_parser_init(&p, 100);
  seen s = {0};
  char err[256] = "";
  /* The first frame fits (77 bytes); the second is 150 bytes, fed in pieces, no newline yet. */
  const char *ok =
      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}}\n";
  assert_int_equal(kc_watch_parser_feed(&p, ok, strlen(ok), record, &s, err, sizeof(err)), 0);
  char big[150];
  memset(big, ' ', sizeof(big));
  big[0] = '{';
  assert_int_equal(kc_watch_parser_feed(&p, big, 60, record, &s, err, sizeof(err)), 0);
  int rc = kc_watch_parser_feed(&p, big + 60, 90, record, &s, err, sizeof(err));
  assert_int_equal(rc, KC_ETOOBIG);
  assert_non_null(strstr(err, "100-byte limit"));
  char want[64];
  snprintf(want, sizeof(want), "offset %zu ", strlen(ok));
  assert_non_null(strstr(err, want));
  assert_int_equal(s.n, 1); /* the good frame went through, the big one never did */
  /* A whole oversized line in one chunk is refused before parsing too. */
  kc_frames_reset(&p);
  char line[202];
  memset(line, ' ', 200);
  line[0] = '{';
  line[200] = '}';
  line[201] = '\n';
  assert_int_equal(kc_watch_parser_feed(&p, line, sizeof(line), record, &s, err, sizeof(err)),
                   KC_ETOOBIG);
  assert_true(p.cap <= 101); /* the buffer never grew past the cap */
  kc_frames_close(&p);
}

static void test_truncated_frame(void **state) {
  (void)state;
  kc_watch_parser p;
  kc_watch_parser_init(&p, 0);
  seen s = {0};
  char err[256] = "";
  const char *t = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"na";
  assert_int_equal(kc_watch_parser_feed(&p, t, strlen(t), record, &s, err, sizeof(err)), 0);
  assert_int_equal(s.n, 0);
  assert_int_equal(kc_watch_parser_finish(&p, err, sizeof(err)), KC_EPARSE);
  assert_non_null(strstr(err, "truncated watch frame at offset 0"));
  /* A frame cut short and followed by a newline is invalid JSON, named by offset. */
  kc_frames_reset(&p);
  const char *bad = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n{\"type\":\n";
  assert_int_equal(kc_watch_parser_feed(&p, bad, strlen(bad), record, &s, err, sizeof(err)),
                   KC_EPARSE);
  assert_int_equal(s.n, 1);
  assert_non_null(strstr(err, "offset 52: invalid JSON"));
  /* Only whitespace left at the end is not a truncated frame. */
  kc_frames_reset(&p);
  assert_int_equal(kc_watch_parser_feed(&p, "\r\n  ", 4, record, &s, err, sizeof(err)), 0);
  assert_int_equal(kc_watch_parser_finish(&p, err, sizeof(err)), 0);
  kc_frames_close(&p);
}

static void test_unknown_type_and_bad_shape(void **state) {
  (void)state;
  static const struct {
    const char *frame, *msg;
  } cases[] = {
      {"{\"type\":\"RENAMED\",\"object\":{}}\n", "unknown event type \"RENAMED\""},
      {"{\"object\":{}}\n", "no string field \"type\""},
      {"{\"type\":\"ADDED\",\"object\":[1]}\n", "\"object\" is not an object"},
      {"[1,2]\n", "no string field \"type\""},
      {"garbage\n", "invalid JSON"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kc_watch_parser p;
    kc_watch_parser_init(&p, 0);
    seen s = {0};
    char err[256] = "";
    assert_int_equal(kc_watch_parser_feed(&p, cases[i].frame, strlen(cases[i].frame), record, &s,
                                          err, sizeof(err)),
                     KC_EPARSE);
    assert_non_null(strstr(err, cases[i].msg));
    assert_int_equal(s.n, 0);
    kc_frames_close(&p);
  }
}

static void test_callback_code_stops_feeding(void **state) {
  (void)state;
  kc_watch_parser p;
  kc_watch_parser_init(&p, 0);
  seen s = {.stop_at = 2};
  char err[256];
  assert_int_equal(kc_watch_parser_feed(&p, STREAM, strlen(STREAM), record, &s, err, sizeof(err)),
                   KC_ECANCELED);
  assert_int_equal(s.n, 2);
  kc_frames_close(&p);
}

static int error_code_of(const char *frame, char *msg, size_t msglen) {
  json_t *root = json_loads(frame, 0, NULL);
  assert_non_null(root);
  int rc = kc_watch_error_code(json_object_get(root, "object"), msg, msglen);
  json_decref(root);
  return rc;
}

static void test_error_410(void **state) {
  (void)state;
  char msg[128];
  assert_int_equal(
      error_code_of("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\","
                    "\"message\":\"too old resource version: 5 (9)\",\"reason\":\"Expired\","
                    "\"code\":410}}",
                    msg, sizeof(msg)),
      KC_EGONE);
  assert_string_equal(msg, "too old resource version: 5 (9)");
  assert_int_equal(error_code_of("{\"object\":{\"code\":410}}", msg, sizeof(msg)), KC_EGONE);
  assert_int_equal(error_code_of("{\"object\":{\"reason\":\"Gone\"}}", msg, sizeof(msg)), KC_EGONE);
  assert_int_equal(
      error_code_of("{\"object\":{\"code\":500,\"reason\":\"InternalError\"}}", msg, sizeof(msg)),
      KC_EINTERNAL);
  assert_int_equal(error_code_of("{\"object\":{\"code\":403}}", msg, sizeof(msg)), KC_EFORBIDDEN);
  /* An ERROR frame reaches the callback as such. */
  kc_watch_parser p;
  kc_watch_parser_init(&p, 0);
  seen s = {0};
  const char *f = "{\"type\":\"ERROR\",\"object\":{\"code\":410}}\n";
  assert_int_equal(kc_watch_parser_feed(&p, f, strlen(f), record, &s, msg, sizeof(msg)), 0);
  assert_int_equal(s.n, 1);
  assert_int_equal(s.types[0], KC_WATCH_ERROR);
  kc_frames_close(&p);
}

static void test_backoff_schedule(void **state) {
  (void)state;
  const uint64_t ms = 1000000;
  assert_int_equal(kc_informer_backoff_ns(0, 0), 0);
  assert_int_equal(kc_informer_backoff_ns(1, 0), 800 * ms);
  assert_int_equal(kc_informer_backoff_ns(2, 0), 1600 * ms);
  assert_int_equal(kc_informer_backoff_ns(3, 0), 3200 * ms);
  assert_int_equal(kc_informer_backoff_ns(6, 0), 25600 * ms);
  assert_int_equal(kc_informer_backoff_ns(7, 0), 30000 * ms);
  assert_int_equal(kc_informer_backoff_ns(1000, 0), 30000 * ms);
  assert_int_equal(kc_informer_backoff_ns(1, 0.5), 1200 * ms);
  assert_true(kc_informer_backoff_ns(1, 0.9999) < 1600 * ms);
  assert_int_equal(kc_informer_backoff_ns(6, 0.5), 30000 * ms);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_split_point),
      cmocka_unit_test(test_oversized_frame),
      cmocka_unit_test(test_truncated_frame),
      cmocka_unit_test(test_unknown_type_and_bad_shape),
      cmocka_unit_test(test_callback_code_stops_feeding),
      cmocka_unit_test(test_error_410),
      cmocka_unit_test(test_backoff_schedule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
