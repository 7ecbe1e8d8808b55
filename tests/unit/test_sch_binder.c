/* The binder (scheduler/sch_binder.c) with a fake transport: kc_api_call is wrapped at link
 * time (-Wl,--wrap=kc_api_call), so each call is recorded and answered by the test, and the
 * binder's decisions (what it sends, what it rolls back, what it counts) are checked without a
 * server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "kc_api.h"
#include "kc_config.h"
#include "kc_error.h"
#include "sch_binder.h"
#include "sch_cache.h"

/* ---- the fake transport ---- */

#include "fake_api.h"
#include "kc_pb.h"

/* The protobuf binder's calls (-Wl,--wrap=kc_api_call_raw): recorded with the others, the
 * body kept here. */
static uint8_t raw_body[512];
static size_t raw_len;
static char raw_type[64];

int __wrap_kc_api_call_raw(kc_client *c, kc_verb verb, const kc_ref *ref, const kc_query *q,
                           const void *body, size_t len, const char *content_type, kc_api_cb cb,
                           void *data);
int __wrap_kc_api_call_raw(kc_client *c, kc_verb verb, const kc_ref *ref, const kc_query *q,
                           const void *body, size_t len, const char *content_type, kc_api_cb cb,
                           void *data) {
  assert_true(len <= sizeof(raw_body));
  memcpy(raw_body, body, len);
  raw_len = len;
  snprintf(raw_type, sizeof(raw_type), "%s", content_type);
  return __wrap_kc_api_call(c, verb, ref, q, NULL, cb, data);
}

/* Answers call i with err (0: 201 Created). */
static void answer(size_t i, int err, const char *message) {
  fake_answer(i, err, err ? 500 : 201, NULL, message);
}

/* ---- fixture ---- */

typedef struct {
  uv_loop_t loop;
  kc_config cfg;
  kc_client *client;
  sch_cache *cache;
  sch_binder *binder;
  int done_ok, done_err;
  bool leader;
} fixture;

static void on_done(int err, uint64_t latency_ns, int64_t created_s, void *ud) {
  (void)created_s;
  fixture *f = ud;
  if (err)
    f->done_err++;
  else
    f->done_ok++;
}

static int may_write(void *ud) {
  fixture *f = ud;
  return f->leader ? 0 : KC_EFORBIDDEN;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  if (f == NULL || uv_loop_init(&f->loop) != 0)
    return -1;
  fake_reset();
  f->leader = true;
  f->cfg.server = strdup("https://127.0.0.1:1");
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(0, 0);
  sch_cache_options co = {0};
  if (kc_client_new(&f->loop, &f->cfg, &opt, &f->client) != 0 ||
      sch_cache_new(f->client, &co, &f->cache) != 0)
    return -1;
  sch_binder_options bo = {.client = f->client,
                           .cache = f->cache,
                           .may_write = may_write,
                           .ud = f,
                           .on_done = on_done,
                           .done_ud = f};
  if (sch_binder_new(&f->loop, &bo, &f->binder) != 0)
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  fake_reset();
  sch_binder_free(f->binder);
  sch_cache_free(f->cache);
  kc_client_free(f->client);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&f->loop);
  kc_config_close(&f->cfg);
  free(f);
  return rc == 0 ? 0 : -1;
}

static void assume_and_bind(fixture *f, const char *name, const char *uid, const char *node) {
  char key[64];
  snprintf(key, sizeof(key), "ns/%s", name);
  assert_int_equal(sch_cache_assume(f->cache, key, node), 0);
  assert_int_equal(sch_binder_bind(f->binder, "ns", name, uid, node, 0), 0);
}

/* ---- tests ---- */

/* A bind is a POST of a Binding to pods/<name>/binding naming the node (and the pod's uid as a
 * precondition); on success the assumption stays until the watch confirms it. */
static void test_bind_success(void **state) {
  fixture *f = *state;
  assume_and_bind(f, "a", "u-1", "n1");
  assert_int_equal(fake_ncalls, 1);
  assert_int_equal(fake_calls[0].verb, KC_CREATE);
  assert_string_equal(fake_calls[0].path, "ns/a/binding");
  json_t *b = fake_calls[0].body;
  assert_string_equal(json_string_value(json_object_get(b, "kind")), "Binding");
  assert_string_equal(json_string_value(json_object_get(json_object_get(b, "target"), "name")),
                      "n1");
  assert_string_equal(json_string_value(json_object_get(json_object_get(b, "metadata"), "uid")),
                      "u-1");
  sch_binder_stats st;
  sch_binder_get_stats(f->binder, &st);
  assert_int_equal(st.sent, 1);
  assert_int_equal(st.in_flight, 1);
  answer(0, 0, NULL);
  sch_binder_get_stats(f->binder, &st);
  assert_int_equal(st.bound, 1);
  assert_int_equal(st.in_flight, 0);
  assert_int_equal(f->done_ok, 1);
  assert_string_equal(sch_cache_assumed_node(f->cache, "ns/a"), "n1");
}

/* A refused bind rolls back: the assumption is forgotten (the pod is Pending again next
 * session) and the pod gets PodScheduled=False (SchedulerError) with the reason. */
static void test_bind_failure_rolls_back(void **state) {
  fixture *f = *state;
  assume_and_bind(f, "b", NULL, "n2");
  answer(0, KC_ECONFLICT, "node n2 is full");
  assert_null(sch_cache_assumed_node(f->cache, "ns/b"));
  assert_int_equal(fake_ncalls, 2);
  assert_int_equal(fake_calls[1].verb, KC_PATCH_STRATEGIC);
  assert_string_equal(fake_calls[1].path, "ns/b/status");
  json_t *cond = json_array_get(
      json_object_get(json_object_get(fake_calls[1].body, "status"), "conditions"), 0);
  assert_string_equal(json_string_value(json_object_get(cond, "type")), "PodScheduled");
  assert_string_equal(json_string_value(json_object_get(cond, "status")), "False");
  assert_string_equal(json_string_value(json_object_get(cond, "reason")), "SchedulerError");
  assert_non_null(strstr(json_string_value(json_object_get(cond, "message")), "node n2 is full"));
  answer(1, 0, NULL);
  sch_binder_stats st;
  sch_binder_get_stats(f->binder, &st);
  assert_int_equal(st.failed, 1);
  assert_int_equal(st.bound, 0);
  assert_int_equal(f->done_err, 1);
}

/* A pod deleted meanwhile is not marked: there is nothing left to mark. */
static void test_pod_gone(void **state) {
  fixture *f = *state;
  assume_and_bind(f, "c", NULL, "n1");
  answer(0, KC_ENOTFOUND, "pods \"c\" not found");
  assert_null(sch_cache_assumed_node(f->cache, "ns/c"));
  assert_int_equal(fake_ncalls, 1);
  sch_binder_stats st;
  sch_binder_get_stats(f->binder, &st);
  assert_int_equal(st.gone, 1);
  assert_int_equal(st.failed, 0);
}

/* Not the leader: nothing is written and the assumption goes. */
static void test_not_leader_sends_nothing(void **state) {
  fixture *f = *state;
  f->leader = false;
  assume_and_bind(f, "d", NULL, "n1");
  assert_int_equal(fake_ncalls, 0);
  assert_null(sch_cache_assumed_node(f->cache, "ns/d"));
}

/* A call the client cannot even start is a failed bind, rolled back at once. */
static void test_call_not_sent(void **state) {
  fixture *f = *state;
  fake_refuse_with = KC_ENOMEM;
  assume_and_bind(f, "e", NULL, "n1");
  assert_null(sch_cache_assumed_node(f->cache, "ns/e"));
  sch_binder_stats st;
  sch_binder_get_stats(f->binder, &st);
  assert_int_equal(st.failed, 1);
  assert_int_equal(st.sent, 0);
}

/* With protobuf on, the Binding goes as "k8s\0" + Unknown + Binding, with the same fields. */
static void test_bind_protobuf(void **state) {
  fixture *f = *state;
  sch_binder_free(f->binder);
  sch_binder_options bo = {.client = f->client,
                           .cache = f->cache,
                           .may_write = may_write,
                           .ud = f,
                           .on_done = on_done,
                           .done_ud = f,
                           .protobuf = true};
  assert_int_equal(sch_binder_new(&f->loop, &bo, &f->binder), 0);
  assume_and_bind(f, "p", "u-9", "n3");
  assert_int_equal(fake_ncalls, 1);
  assert_int_equal(fake_calls[0].verb, KC_CREATE);
  assert_string_equal(fake_calls[0].path, "ns/p/binding");
  assert_string_equal(raw_type, KC_PB_CONTENT_TYPE);
  K8s__Unknown *u = NULL;
  assert_int_equal(kc_pb_unwrap(raw_body, raw_len, &u, NULL, 0), 0);
  assert_string_equal(u->type_meta->kind, "Binding");
  K8s__Binding *b = k8s__binding__unpack(NULL, u->raw.len, u->raw.data);
  assert_non_null(b);
  assert_string_equal(b->metadata->name, "p");
  assert_string_equal(b->metadata->uid, "u-9");
  assert_string_equal(b->target->name, "n3");
  kc_pb_free(b);
  kc_pb_free(u);
  answer(0, 0, NULL);
  assert_int_equal(f->done_ok, 1);
  assert_string_equal(sch_cache_assumed_node(f->cache, "ns/p"), "n3");
}

/* Behind a closed gate the binds of that group wait (counted as waiting) while others go;
 * opening it sends them in order, and a second close of a closed gate says so. Gated binds
 * left at the end are not sent and their assumptions go. */
static void test_gate_holds_its_group_binds(void **state) {
  fixture *f = *state;
  assert_int_equal(sch_binder_close_gate(f->binder, "ns/g"), 0);
  assert_int_equal(sch_binder_close_gate(f->binder, "ns/g"), 1);
  assert_int_equal(sch_cache_assume(f->cache, "ns/g0", "n1"), 0);
  assert_int_equal(sch_binder_bind_in(f->binder, "ns/g", "ns", "g0", "u-g0", "n1", 0), 0);
  assert_int_equal(sch_cache_assume(f->cache, "ns/g1", "n2"), 0);
  assert_int_equal(sch_binder_bind_in(f->binder, "ns/g", "ns", "g1", NULL, "n2", 0), 0);
  assert_int_equal(sch_cache_assume(f->cache, "ns/o0", "n1"), 0);
  assert_int_equal(sch_binder_bind_in(f->binder, "ns/other", "ns", "o0", NULL, "n1", 0), 0);
  assert_int_equal(fake_ncalls, 1);
  assert_string_equal(fake_calls[0].path, "ns/o0/binding");
  sch_binder_stats st;
  sch_binder_get_stats(f->binder, &st);
  assert_int_equal(st.waiting, 2);
  sch_binder_open(f->binder, "ns/g");
  assert_int_equal(fake_ncalls, 3);
  assert_string_equal(fake_calls[1].path, "ns/g0/binding");
  assert_string_equal(fake_calls[2].path, "ns/g1/binding");
  sch_binder_get_stats(f->binder, &st);
  assert_int_equal(st.waiting, 0);
  sch_binder_open(f->binder, "ns/g"); /* open already: nothing */
  assert_int_equal(fake_ncalls, 3);
  for (size_t i = 0; i < 3; i++)
    answer(i, 0, NULL);
  /* Closed at the end: not sent, and the pod is Pending again for the cache. */
  assert_int_equal(sch_binder_close_gate(f->binder, "ns/h"), 0);
  assert_int_equal(sch_cache_assume(f->cache, "ns/h0", "n1"), 0);
  assert_int_equal(sch_binder_bind_in(f->binder, "ns/h", "ns", "h0", NULL, "n1", 0), 0);
  sch_binder_free(f->binder);
  f->binder = NULL;
  assert_int_equal(fake_ncalls, 3);
  assert_null(sch_cache_assumed_node(f->cache, "ns/h0"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_bind_success, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bind_failure_rolls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pod_gone, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_leader_sends_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_call_not_sent, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bind_protobuf, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gate_holds_its_group_binds, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
