/* The scheduler's shell with a fake transport: kc_api_call is wrapped at link time
 * (-Wl,--wrap=kc_api_call), so the writes a session's result makes are recorded in the
 * order the shell sends them and answered by the test. The cache's stores are filled the
 * way the informers would; the informers are never started. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "kc_api.h"
#include "kc_codec.h"
#include "kc_config.h"
#include "kc_error.h"
#include "kc_store.h"
#include "sch_cache.h"
#include "sch_shell.h"

#include "fake_api.h"

typedef struct {
  uv_loop_t loop;
  kc_config cfg;
  kc_client *client;
  sch_shell *sh;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  if (f == NULL || uv_loop_init(&f->loop) != 0)
    return -1;
  fake_reset();
  f->cfg.server = strdup("https://127.0.0.1:1");
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(0, 0);
  sch_shell_options so = {.session_on_loop = true,
                          .minimum_percentage_nodes_to_find = 5,
                          .minimum_feasible_nodes = 100}; /* kiln-scheduler's defaults */
  if (kc_client_new(&f->loop, &f->cfg, &opt, &f->client) != 0 ||
      sch_shell_new(&f->loop, f->client, NULL, NULL, &so, &f->sh) != 0)
    return -1;
  *state = f;
  return 0;
}

/* Answers call i (once: its callback is forgotten). */
static void answer(size_t i, int err, long status, const char *message) {
  assert_non_null(fake_calls[i].cb);
  fake_answer(i, err, status, NULL, message);
  fake_calls[i].cb = NULL;
}

static int teardown(void **state) {
  fixture *f = *state;
  /* Calls still unanswered end as a closing client ends them. */
  for (size_t i = 0; i < fake_ncalls; i++)
    if (fake_calls[i].cb)
      answer(i, KC_ECANCELED, 0, "closing");
  fake_reset();
  sch_shell_free(f->sh);
  kc_client_free(f->client);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&f->loop);
  kc_config_close(&f->cfg);
  free(f);
  return rc == 0 ? 0 : -1;
}

static json_t *parse(const char *text) {
  json_t *j = json_loads(text, 0, NULL);
  assert_non_null(j);
  return j;
}

static void put(fixture *f, sch_cache_kind kind, const char *key, void *obj) {
  assert_int_equal(kc_store_put(sch_cache_store(sch_shell_cache(f->sh), kind), key, obj, "1"), 0);
}

/* A node, the default queue, PodGroup ns/pg (minMember 1) whose phase is phase, and its one
 * pending pod ns/p0: a ReplicationController's pod as the pg-controller leaves it. */
static void one_pod_group(fixture *f, const char *phase) {
  char err[256], text[1024];
  json_t *j = parse("{\"metadata\":{\"name\":\"n1\",\"uid\":\"u-n1\"},\"status\":{"
                    "\"capacity\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
                    "\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
                    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
  Kiln__Node *n = NULL;
  assert_int_equal(kc_node_decode(j, &n, err, sizeof(err)), 0);
  json_decref(j);
  put(f, SCH_CACHE_NODES, "n1", n);
  j = parse("{\"metadata\":{\"name\":\"default\",\"resourceVersion\":\"5\"},"
            "\"spec\":{\"weight\":1},\"status\":{\"state\":\"Open\"}}");
  Kiln__Queue *q = NULL;
  assert_int_equal(kc_queue_decode(j, &q, err, sizeof(err)), 0);
  json_decref(j);
  put(f, SCH_CACHE_QUEUES, "default", q);
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"pg\",\"uid\":\"u-pg\","
           "\"resourceVersion\":\"7\"},\"spec\":{\"minMember\":1,\"queue\":\"default\"},"
           "\"status\":{\"phase\":\"%s\"}}",
           phase);
  j = parse(text);
  Kiln__PodGroup *pg = NULL;
  assert_int_equal(kc_podgroup_decode(j, &pg, err, sizeof(err)), 0);
  json_decref(j);
  put(f, SCH_CACHE_PODGROUPS, "ns/pg", pg);
  j = parse("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p0\",\"uid\":\"u-p0\","
            "\"annotations\":{\"scheduling.k8s.io/group-name\":\"pg\"}},"
            "\"spec\":{\"schedulerName\":\"volcano\",\"containers\":[{\"name\":\"c\","
            "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"Pending\"}}");
  Kiln__Pod *p = NULL;
  assert_int_equal(kc_pod_decode(j, &p, err, sizeof(err)), 0);
  json_decref(j);
  put(f, SCH_CACHE_PODS, "ns/p0", p);
  sch_cache_set_synced(sch_shell_cache(f->sh));
}

/* The index of the first recorded call to resource whose path starts with path; -1: none. */
static int find_call(const char *resource, const char *path) {
  for (size_t i = 0; i < fake_ncalls; i++)
    if (strcmp(fake_calls[i].resource, resource) == 0 &&
        strncmp(fake_calls[i].path, path, strlen(path)) == 0)
      return (int)i;
  return -1;
}

/* The phase a recorded PodGroup status patch sets. */
static const char *patched_phase(int i) {
  json_t *st = json_object_get(fake_calls[i].body, "status");
  return json_string_value(json_object_get(st, "phase"));
}

/* A one-pod group that the API server shows Pending: the session enqueues and binds it in
 * one go. Its status (the session's phase, Inqueue) is sent first, and the bind only once
 * that write has been answered, so nobody reads the PodGroup Pending with its pod bound.
 * Before, the bind went out and the status was held until the pod ran. */
static void test_pending_group_status_goes_before_its_binds(void **state) {
  fixture *f = *state;
  one_pod_group(f, "Pending");
  assert_int_equal(sch_shell_run_once(f->sh), 0);
  int pg = find_call("podgroups", "ns/pg/");
  assert_true(pg >= 0);
  assert_int_equal(fake_calls[pg].verb, KC_PATCH_MERGE);
  assert_string_equal(patched_phase(pg), "Inqueue");
  assert_int_equal(find_call("pods", "ns/p0/binding"), -1); /* waits for the answer */
  answer((size_t)pg, 0, 200, NULL);
  int bind = find_call("pods", "ns/p0/binding");
  assert_true(bind > pg);
  assert_int_equal(fake_calls[bind].verb, KC_CREATE);
  answer((size_t)bind, 0, 201, NULL);
}

/* A failed status write does not keep the pod from being bound. */
static void test_binds_go_when_the_status_write_fails(void **state) {
  fixture *f = *state;
  one_pod_group(f, "Pending");
  assert_int_equal(sch_shell_run_once(f->sh), 0);
  int pg = find_call("podgroups", "ns/pg/");
  assert_true(pg >= 0);
  assert_int_equal(find_call("pods", "ns/p0/binding"), -1);
  answer((size_t)pg, KC_EINTERNAL, 500, "etcd is down");
  assert_true(find_call("pods", "ns/p0/binding") > pg);
}

/* A PodGroup already Inqueue (a Volcano Job's, whose pods the controller made after it was
 * enqueued): its pods are bound at once and no status write is added before them. */
static void test_inqueue_group_binds_at_once(void **state) {
  fixture *f = *state;
  one_pod_group(f, "Inqueue");
  assert_int_equal(sch_shell_run_once(f->sh), 0);
  int bind = find_call("pods", "ns/p0/binding");
  assert_true(bind >= 0);
  int pg = find_call("podgroups", "ns/pg/");
  assert_true(pg == -1 || pg > bind);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pending_group_status_goes_before_its_binds, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_binds_go_when_the_status_write_fails, setup, teardown),
      cmocka_unit_test_setup_teardown(test_inqueue_group_binds_at_once, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
