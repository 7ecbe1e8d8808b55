/* The job controller's executor (controller/ctl_exec.c) with a fake transport: kc_api_call is
 * wrapped at link time (-Wl,--wrap=kc_api_call) so each write is recorded and answered by the
 * test, and the shell around the executor is this file's (the fence, the end of a plan). What
 * is checked: the stages' order, the follow-up calls (delete after the out-of-sync mark, the
 * Job read after a status Conflict), the resourceVersion the status write carries, the
 * counters, the expectations and what a failed write stops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "ctl_int.h"
#include "ctl_overlay.h"
#include "ctl_shell_int.h"
#include "kc_api.h"
#include "kc_codec.h"
#include "kc_config.h"
#include "kc_error.h"

#define KEY "ns/j"

/* ---- the fake transport ---- */

#include "fake_api.h"

/* Answers call i with err; obj (borrowed, may be NULL) is the returned object. */
static void answer(size_t i, int err, json_t *obj) {
  fake_answer(i, err, err ? 409 : 200, obj, err ? "refused by the test" : "");
}

/* ---- the shell around the executor ---- */

static int fence_err; /* what ctl__fence answers */
static int ndone, done_err;
static bool done_conflict;

int ctl__fence(const ctl_shell *s) {
  return fence_err;
}

void ctl__exec_done(ctl_shell *s, const char *key, int err, bool conflict) {
  assert_string_equal(key, KEY);
  ndone++;
  done_err = err;
  done_conflict = conflict;
}

int ctl__request(ctl_shell *s, const char *key, const ctl_request *req) {
  return 0;
}

typedef struct {
  uv_loop_t loop;
  kc_config cfg;
  kc_client *client;
  ctl_shell s;
  Kiln__Job *job;
} fixture;

static json_t *job_json(const char *rv) {
  return json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:s}}", "apiVersion", "batch.volcano.sh/v1alpha1",
                   "kind", "Job", "metadata", "name", "j", "namespace", "ns", "uid", "u1",
                   "resourceVersion", rv, "creationTimestamp", "2026-01-01T00:00:00Z");
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  if (f == NULL || uv_loop_init(&f->loop) != 0)
    return -1;
  fake_reset();
  fence_err = 0;
  ndone = done_err = 0;
  done_conflict = false;
  f->cfg.server = strdup("https://127.0.0.1:1");
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(0, 0);
  if (kc_client_new(&f->loop, &f->cfg, &opt, &f->client) != 0)
    return -1;
  f->s.loop = &f->loop;
  f->s.client = f->client;
  kc_strmap_init(&f->s.reqs, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&f->s.expect, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&f->s.jobs_written, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&f->s.pgs_written, KC_STRMAP_COPY_KEYS);
  json_t *j = job_json("5");
  char e[128];
  if (!j || kc_job_decode(j, &f->job, e, sizeof(e)) != 0)
    return -1;
  json_decref(j);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  fake_reset();
  ctl__expect_drop_key(&f->s, KEY);
  ctl__delay_drop_key(&f->s, KEY);
  kc_strmap_close(&f->s.reqs, NULL);
  kc_strmap_close(&f->s.expect, NULL);
  ctl_written_close(&f->s.jobs_written);
  ctl_written_close(&f->s.pgs_written);
  kc_msg_free(f->job);
  kc_client_free(f->client);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&f->loop);
  kc_config_close(&f->cfg);
  free(f);
  return rc;
}

static json_t *pod_json(const char *name) {
  return json_pack("{s:s,s:s,s:{s:s,s:s},s:{}}", "apiVersion", "v1", "kind", "Pod", "metadata",
                   "name", name, "namespace", "ns", "spec");
}

static void start_plan(fixture *f, ctl_plan *p) {
  assert_int_equal(ctl__exec_start(&f->s, KEY, f->job, "5", p), 0);
}

static bool expected(fixture *f, const char *pod) {
  kc_strmap *m = ctl__expect_map(&f->s, KEY);
  return m && kc_strmap_get(m, pod) != NULL;
}

static const char *body_rv(size_t i) {
  return json_string_value(
      json_object_get(json_object_get(fake_calls[i].body, "metadata"), "resourceVersion"));
}

/* ---- tests ---- */

static void test_create_then_status(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  p.pods_create = json_array();
  json_array_append_new(p.pods_create, pod_json("j-w-0"));
  p.status_changed = true;
  p.status.phase = CTL_PHASE_PENDING;
  start_plan(f, &p);
  /* Pods first; the status only once they are answered. */
  assert_int_equal(fake_ncalls, 1);
  assert_int_equal(fake_calls[0].verb, KC_CREATE);
  assert_string_equal(fake_calls[0].resource, "pods");
  assert_string_equal(fake_calls[0].path, "ns//");
  assert_true(expected(f, "j-w-0"));
  answer(0, 0, NULL);
  assert_int_equal(fake_ncalls, 2);
  assert_int_equal(fake_calls[1].verb, KC_UPDATE);
  assert_string_equal(fake_calls[1].resource, "jobs");
  assert_string_equal(fake_calls[1].path, "ns/j/status");
  assert_string_equal(body_rv(1), "5"); /* a stale status fails with Conflict */
  assert_int_equal(ndone, 0);
  json_t *written = job_json("6");
  answer(1, 0, written);
  json_decref(written);
  assert_int_equal(ndone, 1);
  assert_int_equal(done_err, 0);
  assert_int_equal(f->s.stats.pods_created, 1);
  assert_int_equal(f->s.stats.status_writes, 1);
  assert_int_equal(f->s.inflight, 0);
  assert_true(expected(f, "j-w-0")); /* until the watch shows the pod */
  assert_non_null(kc_strmap_get(&f->s.jobs_written, KEY));
}

static void test_job_patch_version_feeds_status(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  p.job_patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", "a", "b");
  p.status_changed = true;
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 1);
  assert_int_equal(fake_calls[0].verb, KC_PATCH_MERGE);
  assert_string_equal(fake_calls[0].resource, "jobs");
  assert_string_equal(fake_calls[0].path, "ns/j/");
  json_t *patched = job_json("7");
  answer(0, 0, patched);
  json_decref(patched);
  assert_int_equal(fake_ncalls, 2);
  assert_string_equal(body_rv(1), "7");
  answer(1, 0, NULL);
  assert_int_equal(ndone, 1);
  assert_int_equal(done_err, 0);
}

static void test_delete_marks_then_deletes(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  assert_int_equal(ctl__delete_pod(&p, "j-w-0", "test"), 0);
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 1);
  assert_int_equal(fake_calls[0].verb, KC_PATCH_MERGE);
  assert_string_equal(fake_calls[0].resource, "pods");
  assert_string_equal(fake_calls[0].path, "ns/j-w-0/");
  assert_string_equal(
      json_string_value(json_object_get(
          json_object_get(json_object_get(fake_calls[0].body, "metadata"), "annotations"),
          CTL_KEY_OUT_OF_SYNC)),
      "true");
  assert_true(expected(f, "j-w-0"));
  answer(0, 0, NULL);
  /* The same write goes on as the delete. */
  assert_int_equal(fake_ncalls, 2);
  assert_int_equal(fake_calls[1].verb, KC_DELETE);
  assert_string_equal(fake_calls[1].resource, "pods");
  assert_string_equal(fake_calls[1].path, "ns/j-w-0/");
  assert_int_equal(ndone, 0);
  answer(1, KC_ENOTFOUND, NULL); /* gone meanwhile: what was asked */
  assert_int_equal(ndone, 1);
  assert_int_equal(done_err, 0);
  assert_int_equal(f->s.stats.pods_deleted, 1);
}

static void test_delete_of_a_pod_gone(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  assert_int_equal(ctl__delete_pod(&p, "j-w-0", "test"), 0);
  start_plan(f, &p);
  answer(0, KC_ENOTFOUND, NULL);
  assert_int_equal(fake_ncalls, 1); /* no delete */
  assert_int_equal(ndone, 1);
  assert_int_equal(done_err, 0);
  assert_false(expected(f, "j-w-0"));
  assert_int_equal(f->s.stats.pods_deleted, 0);
}

static void test_status_conflict_reads_the_job(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  p.status_changed = true;
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 1);
  answer(0, KC_ECONFLICT, NULL);
  assert_int_equal(fake_ncalls, 2);
  assert_int_equal(fake_calls[1].verb, KC_GET);
  assert_string_equal(fake_calls[1].resource, "jobs");
  assert_string_equal(fake_calls[1].path, "ns/j/");
  assert_int_equal(ndone, 0);
  json_t *now = job_json("9");
  answer(1, 0, now);
  json_decref(now);
  assert_int_equal(ndone, 1);
  assert_int_equal(done_err, KC_ECONFLICT);
  assert_true(done_conflict); /* retried soon, not with backoff */
  assert_int_equal(f->s.stats.status_writes, 0);
  assert_non_null(kc_strmap_get(&f->s.jobs_written, KEY));
}

static void test_failed_create_stops_the_plan(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  p.pods_create = json_array();
  json_array_append_new(p.pods_create, pod_json("j-w-0"));
  json_array_append_new(p.pods_create, pod_json("j-w-1"));
  p.status_changed = true;
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 2); /* concurrently */
  answer(0, KC_EFORBIDDEN, NULL);
  assert_int_equal(ndone, 0);
  answer(1, 0, NULL);
  assert_int_equal(fake_ncalls, 2); /* no status write after a failure */
  assert_int_equal(ndone, 1);
  assert_int_equal(done_err, KC_EFORBIDDEN);
  assert_false(done_conflict);
  assert_false(expected(f, "j-w-0"));
  assert_true(expected(f, "j-w-1"));
  assert_int_equal(f->s.stats.pods_created, 1);
}

static void test_not_the_leader_writes_nothing(void **state) {
  fixture *f = *state;
  fence_err = KC_ENOTLEADER;
  ctl_plan p;
  ctl_plan_init(&p);
  p.status_changed = true;
  assert_int_equal(ctl__delete_pod(&p, "j-w-0", "test"), 0);
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 0);
  assert_int_equal(ndone, 1);
  assert_int_equal(done_err, KC_ENOTLEADER);
  assert_false(expected(f, "j-w-0"));
}

static void test_podgroup_kept_and_dropped(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  p.podgroup = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{}}", "apiVersion",
                         "scheduling.volcano.sh/v1beta1", "kind", "PodGroup", "metadata", "name",
                         "j-u1", "namespace", "ns", "resourceVersion", "3", "spec");
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 1);
  assert_int_equal(fake_calls[0].verb, KC_CREATE);
  assert_string_equal(fake_calls[0].resource, "podgroups");
  assert_string_equal(fake_calls[0].path, "ns//");
  answer(0, 0, fake_calls[0].body);
  assert_int_equal(ndone, 1);
  assert_non_null(kc_strmap_get(&f->s.pgs_written, "ns/j-u1"));
  /* The next plan deletes it: the written copy goes too. */
  ctl_plan_init(&p);
  p.podgroup_delete = true;
  snprintf(p.podgroup_name, sizeof(p.podgroup_name), "j-u1");
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 2);
  assert_int_equal(fake_calls[1].verb, KC_DELETE);
  answer(1, KC_ENOTFOUND, NULL);
  assert_int_equal(ndone, 2);
  assert_int_equal(done_err, 0);
  assert_null(kc_strmap_get(&f->s.pgs_written, "ns/j-u1"));
}

/* A plan whose ssh Secret is there already, then one pod that mounts it. */
static void start_secret_plan(fixture *f) {
  ctl_plan p;
  ctl_plan_init(&p);
  p.objects_create = json_array();
  json_array_append_new(p.objects_create,
                        json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "Secret",
                                  "metadata", "name", "j-ssh", "namespace", "ns"));
  p.pods_create = json_array();
  json_array_append_new(p.pods_create, pod_json("j-w-0"));
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 1);
  assert_int_equal(fake_calls[0].verb, KC_CREATE);
  assert_string_equal(fake_calls[0].resource, "secrets");
  answer(0, KC_EALREADYEXISTS, NULL);
  /* Not taken as made: its metadata is read. */
  assert_int_equal(fake_ncalls, 2);
  assert_int_equal(fake_calls[1].verb, KC_GET);
  assert_string_equal(fake_calls[1].resource, "secrets");
  assert_string_equal(fake_calls[1].path, "ns/j-ssh/");
}

static json_t *secret_meta(const char *owner_uid) {
  return json_pack("{s:{s:s,s:[{s:s,s:s,s:s,s:b}]}}", "metadata", "name", "j-ssh",
                   "ownerReferences", "kind", "Job", "name", "j", "uid", owner_uid, "controller",
                   1);
}

/* Issue 27 finding 5: a Secret planted under the Job's name is never mounted. */
static void test_planted_secret_stops_the_plan(void **state) {
  fixture *f = *state;
  start_secret_plan(f);
  json_t *m = secret_meta("someone-else");
  answer(1, 0, m);
  json_decref(m);
  assert_int_equal(fake_ncalls, 2); /* no pod is created */
  assert_int_equal(ndone, 1);
  assert_int_equal(done_err, KC_EALREADYEXISTS);
  assert_false(done_conflict); /* retried with backoff */
  assert_false(expected(f, "j-w-0"));
}

static void test_own_secret_is_used(void **state) {
  fixture *f = *state;
  start_secret_plan(f);
  json_t *m = secret_meta("u1");
  answer(1, 0, m);
  json_decref(m);
  assert_int_equal(fake_ncalls, 3);
  assert_string_equal(fake_calls[2].resource, "pods");
  answer(2, 0, NULL);
  assert_int_equal(ndone, 1);
  assert_int_equal(done_err, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_create_then_status, setup, teardown),
      cmocka_unit_test_setup_teardown(test_job_patch_version_feeds_status, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delete_marks_then_deletes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delete_of_a_pod_gone, setup, teardown),
      cmocka_unit_test_setup_teardown(test_status_conflict_reads_the_job, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failed_create_stops_the_plan, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_the_leader_writes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_podgroup_kept_and_dropped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_planted_secret_stops_the_plan, setup, teardown),
      cmocka_unit_test_setup_teardown(test_own_secret_is_used, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
