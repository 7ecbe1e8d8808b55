/* kiln-controller's write-through entries and status batching test (controller/ctl_overlay.c):
 * a written object wins over an older cached one, loses to the same or a newer one, and a
 * status differs "in counters only" exactly when nothing but the pod counts moved. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_overlay.h"
#include "kc_codec.h"

#define SEC 1000000000ull

static Kiln__Job *job_at(const char *rv, const char *phase, int running) {
  char text[512];
  snprintf(text, sizeof(text),
           "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
           "\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\",\"uid\":\"u\","
           "\"resourceVersion\":\"%s\"},\"spec\":{\"tasks\":[]},"
           "\"status\":{\"state\":{\"phase\":\"%s\"},\"running\":%d,\"minAvailable\":1,"
           "\"taskStatusCount\":{\"t\":{\"phase\":{\"Running\":%d}}}}}",
           rv, phase, running, running);
  json_error_t e;
  json_t *o = json_loads(text, 0, &e);
  assert_non_null(o);
  Kiln__Job *j = NULL;
  char err[128];
  assert_int_equal(kc_job_decode(o, &j, err, sizeof(err)), 0);
  json_decref(o);
  return j;
}

static void test_rv_cmp(void **state) {
  (void)state;
  assert_int_equal(ctl_rv_cmp("10", "9"), 1); /* numerically, not as text */
  assert_int_equal(ctl_rv_cmp("9", "10"), -1);
  assert_int_equal(ctl_rv_cmp("42", "42"), 0);
  assert_int_equal(ctl_rv_cmp("abc", "42"), 2);
  assert_int_equal(ctl_rv_cmp("", "42"), 2);
  assert_int_equal(ctl_rv_cmp("-1", "42"), 2);
  assert_int_equal(ctl_rv_cmp("99999999999999999999999", "42"), 2); /* overflow */
}

static void test_newest(void **state) {
  (void)state;
  kc_store *st;
  assert_int_equal(kc_store_new(kc_msg_free, &st), 0);
  kc_strmap m;
  kc_strmap_init(&m, KC_STRMAP_COPY_KEYS);
  const char *rv = NULL;
  uint64_t now = 1000 * SEC;

  /* Nothing anywhere. */
  assert_null(ctl_newest(&m, st, "ns/j", now, &rv));
  assert_null(rv);

  /* Only cached. */
  Kiln__Job *c100 = job_at("100", "Pending", 0);
  assert_int_equal(kc_store_put(st, "ns/j", c100, "100"), 0);
  assert_ptr_equal(ctl_newest(&m, st, "ns/j", now, &rv), c100);
  assert_string_equal(rv, "100");

  /* Our write returned 105: it wins while the cache still holds 100. */
  Kiln__Job *w105 = job_at("105", "Running", 1);
  ctl_write_through(&m, "ns/j", w105, now);
  assert_ptr_equal(ctl_newest(&m, st, "ns/j", now + SEC, &rv), w105);
  assert_string_equal(rv, "105");
  assert_int_equal(kc_strmap_len(&m), 1);

  /* The watch brings 105: the cached copy is used and the entry is gone. */
  Kiln__Job *c105 = job_at("105", "Running", 1);
  assert_int_equal(kc_store_put(st, "ns/j", c105, "105"), 0);
  assert_ptr_equal(ctl_newest(&m, st, "ns/j", now + SEC, &rv), c105);
  assert_int_equal(kc_strmap_len(&m), 0);

  /* A write older than the cache (someone wrote after us and the watch has it) loses. */
  ctl_write_through(&m, "ns/j", job_at("103", "Pending", 0), now);
  assert_ptr_equal(ctl_newest(&m, st, "ns/j", now, &rv), c105);
  assert_int_equal(kc_strmap_len(&m), 0);

  /* An entry past its TTL is not trusted. */
  Kiln__Job *w200 = job_at("200", "Running", 1);
  ctl_write_through(&m, "ns/j", w200, now);
  assert_ptr_equal(ctl_newest(&m, st, "ns/j", now + CTL_WRITTEN_TTL_NS - 1, NULL), w200);
  assert_ptr_equal(ctl_newest(&m, st, "ns/j", now + CTL_WRITTEN_TTL_NS, NULL), c105);

  /* Written but not cached yet (a PodGroup just created): the written one. */
  Kiln__Job *w7 = job_at("7", "Pending", 0);
  ctl_write_through(&m, "ns/new", w7, now);
  assert_ptr_equal(ctl_newest(&m, st, "ns/new", now, &rv), w7);
  ctl_written_drop(&m, "ns/new");
  assert_null(ctl_newest(&m, st, "ns/new", now, NULL));

  /* Versions that are not integers: used until the cache shows a different one. */
  Kiln__Job *wx = job_at("x2", "Running", 1);
  Kiln__Job *cx = job_at("x1", "Pending", 0);
  assert_int_equal(kc_store_put(st, "ns/x", cx, "x1"), 0);
  ctl_write_through(&m, "ns/x", wx, now);
  assert_ptr_equal(ctl_newest(&m, st, "ns/x", now, NULL), wx);
  Kiln__Job *cx2 = job_at("x2", "Running", 1);
  assert_int_equal(kc_store_put(st, "ns/x", cx2, "x2"), 0);
  assert_ptr_equal(ctl_newest(&m, st, "ns/x", now, NULL), cx2);

  ctl_written_close(&m);
  kc_store_free(st);
}

static json_t *flow_at(const char *rv, const char *phase) {
  json_t *o = json_pack("{s:{s:s, s:s, s:s}, s:{s:{s:s}}}", "metadata", "name", "f", "namespace",
                        "ns", "resourceVersion", rv, "status", "state", "phase", phase);
  assert_non_null(o);
  return o;
}

static void free_json(void *p) {
  json_decref(p);
}

/* The JSON write-through of the CronJob and JobFlow shells. Two status writes of one object
 * return before the watch shows either (a flow whose Jobs b and c complete together): the
 * second replaces the first, and the map must hold its own reference to it, since the client
 * releases the returned object after the callback. */
static void test_json_newest(void **state) {
  (void)state;
  kc_store *st;
  assert_int_equal(kc_store_new(free_json, &st), 0);
  kc_strmap m;
  kc_strmap_init(&m, KC_STRMAP_COPY_KEYS);
  uint64_t now = 1000 * SEC;

  assert_null(ctl_json_newest(&m, st, "ns/f", now));
  json_t *c10 = flow_at("10", "Pending");
  assert_int_equal(kc_store_put(st, "ns/f", c10, "10"), 0);
  assert_ptr_equal(ctl_json_newest(&m, st, "ns/f", now), c10);

  json_t *w11 = flow_at("11", "Running"), *w12 = flow_at("12", "Running");
  assert_int_equal(ctl_json_write_through(&m, "ns/f", w11, now), 0);
  assert_int_equal(w11->refcount, 2);
  json_decref(w11); /* the client's reference ends with the callback */
  assert_ptr_equal(ctl_json_newest(&m, st, "ns/f", now), w11);
  assert_int_equal(ctl_json_write_through(&m, "ns/f", w12, now), 0);
  assert_int_equal(w12->refcount, 2);
  json_decref(w12);
  assert_int_equal(kc_strmap_len(&m), 1);
  const json_t *got = ctl_json_newest(&m, st, "ns/f", now + SEC);
  assert_ptr_equal(got, w12);
  assert_int_equal(got->refcount, 1);
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(got, "metadata"), "resourceVersion")),
      "12");

  /* The watch brings 12: the cached copy, and the entry is released. */
  json_t *c12 = flow_at("12", "Running");
  assert_int_equal(kc_store_put(st, "ns/f", c12, "12"), 0);
  assert_ptr_equal(ctl_json_newest(&m, st, "ns/f", now + SEC), c12);
  assert_int_equal(kc_strmap_len(&m), 0);

  /* Too old to trust, and versions that cannot be compared: the cache's. */
  json_t *w20 = flow_at("20", "Succeed");
  assert_int_equal(ctl_json_write_through(&m, "ns/f", w20, now), 0);
  assert_ptr_equal(ctl_json_newest(&m, st, "ns/f", now + CTL_WRITTEN_TTL_NS - 1), w20);
  assert_ptr_equal(ctl_json_newest(&m, st, "ns/f", now + CTL_WRITTEN_TTL_NS), c12);
  json_t *wx = flow_at("x", "Succeed");
  assert_int_equal(ctl_json_write_through(&m, "ns/f", wx, now), 0);
  assert_ptr_equal(ctl_json_newest(&m, st, "ns/f", now), c12);
  assert_int_equal(kc_strmap_len(&m), 0);

  /* Deleted from the cache while an entry was kept: gone, not brought back. */
  assert_int_equal(ctl_json_write_through(&m, "ns/f", w20, now), 0);
  assert_int_equal(kc_store_delete(st, "ns/f"), 0);
  assert_null(ctl_json_newest(&m, st, "ns/f", now));
  assert_int_equal(kc_strmap_len(&m), 0);

  /* Entries still held are released with the map. */
  assert_int_equal(ctl_json_write_through(&m, "ns/g", w20, now), 0);
  assert_int_equal(w20->refcount, 2);
  ctl_json_written_close(&m);
  assert_int_equal(w20->refcount, 1);
  json_decref(w20);
  json_decref(wx);
  kc_store_free(st);
}

static void test_counters_only(void **state) {
  (void)state;
  Kiln__Job *stored = job_at("1", "Pending", 0);
  ctl_status next;

  /* Only running and taskStatusCount moved. */
  ctl_status_init(&next);
  assert_int_equal(ctl_status_from_pb(&next, stored->status), 0);
  next.running = 1;
  ctl_status_task(&next, "t")->count[CTL_POD_RUNNING] = 1;
  assert_true(ctl_counters_only(stored->status, &next));

  /* The phase moved too. */
  next.phase = CTL_PHASE_RUNNING;
  assert_false(ctl_counters_only(stored->status, &next));
  ctl_status_close(&next);

  /* retryCount and version are not counters. */
  ctl_status_init(&next);
  assert_int_equal(ctl_status_from_pb(&next, stored->status), 0);
  next.retry_count = 1;
  assert_false(ctl_counters_only(stored->status, &next));
  ctl_status_close(&next);

  /* No stored status: the first write is never deferred. */
  ctl_status_init(&next);
  assert_false(ctl_counters_only(NULL, &next));
  ctl_status_close(&next);
  kc_msg_free(stored);
}

/* Issue 32: a pending count alone (what a created pod adds) is not shown by `kubectl get
 * vcjob` and waits the long period; running (RUNNINGS) the short one; the phase not at all. */
static void test_status_change(void **state) {
  (void)state;
  Kiln__Job *stored = job_at("1", "Pending", 0);
  ctl_status next;
  ctl_status_init(&next);
  assert_int_equal(ctl_status_from_pb(&next, stored->status), 0);
  next.pending = 1;
  ctl_status_task(&next, "t")->count[CTL_POD_PENDING] = 1;
  assert_int_equal(ctl_status_change(stored->status, &next), CTL_CHANGE_HIDDEN);
  next.succeeded = 2;
  next.terminating = 1;
  assert_int_equal(ctl_status_change(stored->status, &next), CTL_CHANGE_HIDDEN);
  next.running = 1;
  assert_int_equal(ctl_status_change(stored->status, &next), CTL_CHANGE_RUNNING);
  next.phase = CTL_PHASE_RUNNING;
  assert_int_equal(ctl_status_change(stored->status, &next), CTL_CHANGE_SHOWN);
  next.phase = CTL_PHASE_PENDING;
  next.min_available = 7;
  assert_int_equal(ctl_status_change(stored->status, &next), CTL_CHANGE_SHOWN);
  assert_int_equal(ctl_status_change(NULL, &next), CTL_CHANGE_SHOWN);
  ctl_status_close(&next);
  kc_msg_free(stored);
}

static void test_status_due(void **state) {
  (void)state;
  const uint64_t s = 1000000000ull, t0 = 100 * s;
  /* Shown changes never wait. */
  assert_int_equal(ctl_status_due(0, t0, CTL_CHANGE_SHOWN), 0);
  assert_int_equal(ctl_status_due(t0 + s, t0, CTL_CHANGE_SHOWN), 0);
  /* A hidden change waits the long period, a running one the short. */
  uint64_t d = ctl_status_due(0, t0, CTL_CHANGE_HIDDEN);
  assert_int_equal(d, t0 + CTL_STATUS_HIDDEN_BATCH_NS);
  assert_true(CTL_STATUS_HIDDEN_BATCH_NS > CTL_STATUS_BATCH_NS);
  assert_int_equal(ctl_status_due(0, t0, CTL_CHANGE_RUNNING), t0 + CTL_STATUS_BATCH_NS);
  /* A later hidden change keeps the first deadline: the write is not put off for ever. */
  assert_int_equal(ctl_status_due(d, t0 + 5 * s, CTL_CHANGE_HIDDEN), d);
  /* A running change after a hidden one brings the deadline forward. */
  assert_int_equal(ctl_status_due(d, t0 + 2 * s, CTL_CHANGE_RUNNING),
                   t0 + 2 * s + CTL_STATUS_BATCH_NS);
  /* Due: written now. */
  assert_int_equal(ctl_status_due(d, d, CTL_CHANGE_HIDDEN), 0);
  assert_int_equal(ctl_status_due(t0 + s, t0 + 3 * s, CTL_CHANGE_RUNNING), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rv_cmp),        cmocka_unit_test(test_newest),
      cmocka_unit_test(test_json_newest),   cmocka_unit_test(test_counters_only),
      cmocka_unit_test(test_status_change), cmocka_unit_test(test_status_due),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
