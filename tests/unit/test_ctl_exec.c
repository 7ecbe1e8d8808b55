/* The job controller's executor (controller/job/ctl_job_exec_shell.c) with a fake transport:
 * kc_api_call is wrapped at link time (-Wl,--wrap=kc_api_call) so each write is recorded and
 * answered by the test. The executor is handed its environment (client, fence, expectations,
 * write-through maps) and reports through one callback, as the shell runs it; nothing of the
 * shell is in this binary. What is checked: the stages' order, the follow-up calls (delete
 * after the out-of-sync mark, the Job read after a status Conflict), the resourceVersion the
 * status write carries, the counts, the expectations, what a failed write stops, the fence,
 * and that the result hands the plan back for the shell to requeue and arm. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "ctl_int.h"
#include "ctl_job_exec_shell.h"
#include "ctl_overlay.h"
#include "kc_api.h"
#include "kc_codec.h"
#include "kc_config.h"
#include "kc_error.h"
#include "kc_leader.h"

#define KEY "ns/j"

/* ---- the fake transport ---- */

#include "fake_api.h"

/* Answers call i with err; obj (borrowed, may be NULL) is the returned object. */
static void answer(size_t i, int err, json_t *obj) {
  fake_answer(i, err, err ? 409 : 200, obj, err ? "refused by the test" : "");
}

/* ---- what the executor is handed ---- */

typedef struct {
  uv_loop_t loop;
  kc_config cfg;
  kc_client *client;
  kc_leader *leader; /* created, never started: not the leader */
  ctl_expects expect;
  kc_strmap jobs_written, pgs_written;
  ctl_exec_env env;
  Kiln__Job *job;
  /* what the callback saw */
  int ndone, done_err;
  bool done_conflict;
  ctl_exec_counts count; /* summed over the plans */
  int64_t requeue_after;
  bool has_delayed;
  size_t ncancels;
} fixture;

static void on_done(const ctl_exec_result *r, void *ud) {
  fixture *f = ud;
  assert_string_equal(r->key, KEY);
  f->ndone++;
  f->done_err = r->err;
  f->done_conflict = r->conflict;
  f->count.pods_created += r->count.pods_created;
  f->count.pods_create_exists += r->count.pods_create_exists;
  f->count.pods_deleted += r->count.pods_deleted;
  f->count.status_writes += r->count.status_writes;
  f->requeue_after = r->plan->requeue_after;
  f->has_delayed = r->plan->has_delayed;
  f->ncancels = r->plan->ncancels;
}

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
  f->cfg.server = strdup("https://127.0.0.1:1");
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(0, 0);
  if (kc_client_new(&f->loop, &f->cfg, &opt, &f->client) != 0)
    return -1;
  ctl_expects_init(&f->expect);
  kc_strmap_init(&f->jobs_written, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&f->pgs_written, KC_STRMAP_COPY_KEYS);
  f->env = (ctl_exec_env){.client = f->client,
                          .expect = &f->expect,
                          .jobs_written = &f->jobs_written,
                          .pgs_written = &f->pgs_written,
                          .done = on_done,
                          .ud = f};
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
  ctl_expects_close(&f->expect);
  ctl_written_close(&f->jobs_written);
  ctl_written_close(&f->pgs_written);
  kc_msg_free(f->job);
  kc_leader_free(f->leader);
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
  assert_int_equal(ctl_exec_start(&f->env, KEY, f->job, "5", p), 0);
}

static bool expected(fixture *f, const char *pod) {
  return ctl_expect_get(&f->expect, KEY, pod) != NULL;
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
  assert_int_equal(f->ndone, 0);
  json_t *written = job_json("6");
  answer(1, 0, written);
  json_decref(written);
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, 0);
  assert_int_equal(f->count.pods_created, 1);
  assert_int_equal(f->count.status_writes, 1);
  assert_true(expected(f, "j-w-0")); /* until the watch shows the pod */
  assert_non_null(kc_strmap_get(&f->jobs_written, KEY));
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
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, 0);
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
  assert_int_equal(f->ndone, 0);
  answer(1, KC_ENOTFOUND, NULL); /* gone meanwhile: what was asked */
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, 0);
  assert_int_equal(f->count.pods_deleted, 1);
}

static void test_delete_of_a_pod_gone(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  assert_int_equal(ctl__delete_pod(&p, "j-w-0", "test"), 0);
  start_plan(f, &p);
  answer(0, KC_ENOTFOUND, NULL);
  assert_int_equal(fake_ncalls, 1); /* no delete */
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, 0);
  assert_false(expected(f, "j-w-0"));
  assert_int_equal(f->count.pods_deleted, 0);
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
  assert_int_equal(f->ndone, 0);
  json_t *now = job_json("9");
  answer(1, 0, now);
  json_decref(now);
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, KC_ECONFLICT);
  assert_true(f->done_conflict); /* retried soon, not with backoff */
  assert_int_equal(f->count.status_writes, 0);
  assert_non_null(kc_strmap_get(&f->jobs_written, KEY));
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
  assert_int_equal(f->ndone, 0);
  answer(1, 0, NULL);
  assert_int_equal(fake_ncalls, 2); /* no status write after a failure */
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, KC_EFORBIDDEN);
  assert_false(f->done_conflict);
  assert_false(expected(f, "j-w-0"));
  assert_true(expected(f, "j-w-1"));
  assert_int_equal(f->count.pods_created, 1);
}

/* A burst of 150 creations goes out 100 at a time: each answer sends the next (one loop turn
 * never serializes the whole burst); after a refusal no further creation is sent, and the
 * ones never sent are not expected. Before, all 150 went at once, and a tenant whose quota
 * refuses them all cost 150 refusals per sync. */
static void test_creates_go_in_a_window(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  p.pods_create = json_array();
  char name[32];
  for (int i = 0; i < 150; i++) {
    snprintf(name, sizeof(name), "j-w-%d", i);
    json_array_append_new(p.pods_create, pod_json(name));
  }
  p.status_changed = true;
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 100);
  assert_false(expected(f, "j-w-100"));
  answer(0, 0, NULL);
  assert_int_equal(fake_ncalls, 101);
  assert_true(expected(f, "j-w-100"));
  answer(1, KC_EFORBIDDEN, NULL);
  assert_int_equal(fake_ncalls, 101); /* nothing more after the refusal */
  for (size_t i = 2; i < 101; i++)
    answer(i, 0, NULL);
  assert_int_equal(fake_ncalls, 101); /* and no status write */
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, KC_EFORBIDDEN);
  assert_int_equal(f->count.pods_created, 100);
  assert_false(expected(f, "j-w-1"));
  assert_false(expected(f, "j-w-101"));
  assert_false(expected(f, "j-w-149"));
}

static void on_stopped_leading(void *ud) {
  (void)ud;
}

static void test_not_the_leader_writes_nothing(void **state) {
  fixture *f = *state;
  kc_leader_options lo = KC_LEADER_OPTIONS_INIT("vc-controller-manager");
  kc_leader_callbacks cb = {.on_stopped_leading = on_stopped_leading};
  assert_int_equal(kc_leader_new(f->client, &lo, "test", &cb, &f->leader), 0);
  f->env.leader = f->leader;
  ctl_plan p;
  ctl_plan_init(&p);
  p.status_changed = true;
  assert_int_equal(ctl__delete_pod(&p, "j-w-0", "test"), 0);
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 0);
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, KC_ENOTLEADER);
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
  assert_int_equal(f->ndone, 1);
  assert_non_null(kc_strmap_get(&f->pgs_written, "ns/j-u1"));
  /* The next plan deletes it: the written copy goes too. */
  ctl_plan_init(&p);
  p.podgroup_delete = true;
  snprintf(p.podgroup_name, sizeof(p.podgroup_name), "j-u1");
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 2);
  assert_int_equal(fake_calls[1].verb, KC_DELETE);
  answer(1, KC_ENOTFOUND, NULL);
  assert_int_equal(f->ndone, 2);
  assert_int_equal(f->done_err, 0);
  assert_null(kc_strmap_get(&f->pgs_written, "ns/j-u1"));
}

/* The executor neither requeues nor arms: the result carries the plan for the shell. */
static void test_result_hands_the_plan_back(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  p.requeue_after = 30;
  p.has_delayed = true;
  p.delayed.at = 1000;
  p.delayed.action = CTL_ACT_RESTART_JOB;
  assert_int_equal(ctl__cancel(&p, CTL_SCOPE_POD, "j-w-0", 0), 0);
  start_plan(f, &p); /* nothing to write: done at once */
  assert_int_equal(fake_ncalls, 0);
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, 0);
  assert_int_equal(f->requeue_after, 30);
  assert_true(f->has_delayed);
  assert_int_equal(f->ncancels, 1);
}

/* Once the shell stops, the stage in flight finishes and no other starts. */
static void test_stopping_starts_no_further_stage(void **state) {
  fixture *f = *state;
  ctl_plan p;
  ctl_plan_init(&p);
  p.pods_create = json_array();
  json_array_append_new(p.pods_create, pod_json("j-w-0"));
  p.status_changed = true;
  start_plan(f, &p);
  assert_int_equal(fake_ncalls, 1);
  f->env.stopping = true;
  answer(0, 0, NULL);
  assert_int_equal(fake_ncalls, 1); /* no status write */
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, 0);
  assert_int_equal(f->count.pods_created, 1);
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
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, KC_EALREADYEXISTS);
  assert_false(f->done_conflict); /* retried with backoff */
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
  assert_int_equal(f->ndone, 1);
  assert_int_equal(f->done_err, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_create_then_status, setup, teardown),
      cmocka_unit_test_setup_teardown(test_job_patch_version_feeds_status, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delete_marks_then_deletes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delete_of_a_pod_gone, setup, teardown),
      cmocka_unit_test_setup_teardown(test_status_conflict_reads_the_job, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failed_create_stops_the_plan, setup, teardown),
      cmocka_unit_test_setup_teardown(test_creates_go_in_a_window, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_the_leader_writes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_podgroup_kept_and_dropped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_planted_secret_stops_the_plan, setup, teardown),
      cmocka_unit_test_setup_teardown(test_own_secret_is_used, setup, teardown),
      cmocka_unit_test_setup_teardown(test_result_hands_the_plan_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stopping_starts_no_further_stage, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
