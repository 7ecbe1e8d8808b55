/* The JobFlow and JobTemplate decisions: the DAG check with Volcano's webhook messages, the
 * Jobs created as the dependencies complete, the status (lists by phase, conditions, running
 * histories), the state machine, retain policy delete, the patch of a template's spec, and the
 * template's jobDependsOnList. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_jobflow.h"
#include "kc_codec.h"
#include "kc_error.h"

static json_t *parse(const char *s) {
  json_error_t e;
  json_t *j = json_loads(s, 0, &e);
  if (!j)
    fail_msg("bad fixture: %s: %s", e.text, s);
  return j;
}

/* The cache: Jobs by name and templates a, b, c, d. */
typedef struct {
  ctl_jf_job jobs[8];
  size_t n;
  json_t *tmpl;
} cache;

static const ctl_jf_job *lk_job(void *ud, const char *ns, const char *name) {
  cache *c = ud;
  for (size_t i = 0; i < c->n; i++)
    if (!strcmp(c->jobs[i].ns, ns) && !strcmp(c->jobs[i].name, name))
      return &c->jobs[i];
  return NULL;
}

static const json_t *lk_template(void *ud, const char *ns, const char *name) {
  cache *c = ud;
  (void)ns;
  return strlen(name) == 1 && strchr("abcd", name[0]) ? c->tmpl : NULL;
}

static void add_job(cache *c, const char *name, const char *phase, const char *status) {
  ctl_jf_job *j = &c->jobs[c->n++];
  memset(j, 0, sizeof(*j));
  snprintf(j->ns, sizeof(j->ns), "ns");
  snprintf(j->name, sizeof(j->name), "%s", name);
  snprintf(j->phase, sizeof(j->phase), "%s", phase);
  snprintf(j->created, sizeof(j->created), "2026-12-01T10:00:00Z");
  j->status = parse(status ? status : "{}");
}

static void cache_free(cache *c) {
  for (size_t i = 0; i < c->n; i++)
    json_decref(c->jobs[i].status);
  json_decref(c->tmpl);
}

static const char diamond[] =
    "{\"metadata\":{\"name\":\"dia\",\"namespace\":\"ns\",\"uid\":\"f-uid\"},"
    "\"spec\":{\"flows\":[{\"name\":\"a\"},{\"name\":\"b\",\"dependsOn\":{\"targets\":[\"a\"]}},"
    "{\"name\":\"c\",\"dependsOn\":{\"targets\":[\"a\"]}},"
    "{\"name\":\"d\",\"dependsOn\":{\"targets\":[\"b\",\"c\"]}}]%s},\"status\":%s}";

static json_t *flow(const char *spec_extra, const char *status) {
  char buf[1024];
  snprintf(buf, sizeof(buf), diamond, spec_extra, status);
  return parse(buf);
}

static int64_t ts(const char *s) {
  int64_t ms = 0;
  assert_int_equal(kc_rfc3339_parse(s, &ms), 0);
  return ms;
}

static void sync(const json_t *f, cache *c, ctl_jf_plan *p) {
  const ctl_jf_job *v[8];
  for (size_t i = 0; i < c->n; i++)
    v[i] = &c->jobs[i];
  ctl_jf_lookup lk = {.job = lk_job, .template = lk_template, .ud = c};
  assert_int_equal(ctl_jobflow_sync(f, v, c->n, &lk, ts("2026-12-01T10:05:00Z"), p), 0);
}

static const char *created_name(const ctl_jf_plan *p, size_t i) {
  return json_string_value(json_object_get(json_object_get(p->create[i], "metadata"), "name"));
}

static void test_dag(void **state) {
  (void)state;
  char err[256];
  json_t *f = parse("[{\"name\":\"a\",\"dependsOn\":{\"targets\":[\"c\"]}},"
                    "{\"name\":\"b\",\"dependsOn\":{\"targets\":[\"a\"]}},"
                    "{\"name\":\"c\",\"dependsOn\":{\"targets\":[\"b\"]}}]");
  char cycle[64];
  assert_int_equal(ctl_jobflow_check_dag(f, err, sizeof(err), cycle, sizeof(cycle)), KC_EINVAL);
  assert_string_equal(err, "jobflow Flow is not DAG");
  assert_string_equal(cycle, "a -> c -> b -> a");
  json_decref(f);
  f = parse("[{\"name\":\"a\",\"dependsOn\":{\"targets\":[\"a\"]}}]");
  assert_int_equal(ctl_jobflow_check_dag(f, err, sizeof(err), cycle, sizeof(cycle)), KC_EINVAL);
  assert_string_equal(err, "jobflow Flow is not DAG");
  assert_string_equal(cycle, "a -> a");
  json_decref(f);
  f = parse("[{\"name\":\"a\"},{\"name\":\"b\",\"dependsOn\":{\"targets\":[\"x\"]}}]");
  assert_int_equal(ctl_jobflow_check_dag(f, err, sizeof(err), NULL, 0), KC_EINVAL);
  assert_string_equal(err, "jobflow Flow is not DAG: vertex is not defined: x");
  json_decref(f);
  /* A diamond is a DAG. */
  json_t *d = flow("", "{}");
  assert_int_equal(ctl_jobflow_check_dag(json_object_get(json_object_get(d, "spec"), "flows"), err,
                                         sizeof(err), cycle, sizeof(cycle)),
                   0);
  json_decref(d);
}

static void test_diamond_order(void **state) {
  (void)state;
  cache c = {.tmpl = parse("{\"spec\":{\"queue\":\"q\",\"tasks\":[{\"name\":\"m\"}]}}")};
  ctl_jf_plan p;
  json_t *f = flow("", "{}");
  /* Nothing yet: only a (no dependencies) is created; the flow stays Pending. */
  sync(f, &c, &p);
  assert_int_equal(p.ncreate, 1);
  assert_string_equal(created_name(&p, 0), "dia-a");
  json_t *m = json_object_get(p.create[0], "metadata");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(m, "labels"), CTL_JF_BY_TEMPLATE)), "ns.a");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(m, "annotations"), CTL_JF_BY_FLOW)),
      "ns.dia");
  json_t *ref = json_array_get(json_object_get(m, "ownerReferences"), 0);
  assert_string_equal(json_string_value(json_object_get(ref, "kind")), "JobFlow");
  assert_string_equal(json_string_value(json_object_get(ref, "apiVersion")), CTL_JF_API);
  assert_true(json_is_true(json_object_get(ref, "controller")));
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(p.create[0], "spec"), "queue")), "q");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(p.status, "state"), "phase")), "Pending");
  ctl_jf_plan_free(&p);
  /* a running: nothing new; the flow is Running. */
  add_job(&c, "dia-a", "Running", "{\"retryCount\":1}");
  sync(f, &c, &p);
  assert_int_equal(p.ncreate, 0);
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(p.status, "state"), "phase")), "Running");
  json_t *e = json_array_get(json_object_get(p.status, "jobStatusList"), 0);
  assert_string_equal(json_string_value(json_object_get(e, "state")), "Running");
  assert_int_equal(json_integer_value(json_object_get(e, "restartCount")), 1);
  assert_true(json_is_null(json_object_get(e, "endTimestamp")));
  json_t *h = json_object_get(e, "runningHistories");
  assert_int_equal(json_array_size(h), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(h, 0), "startTimestamp")),
                      "2026-12-01T10:05:00Z");
  json_t *running = json_deep_copy(p.status);
  ctl_jf_plan_free(&p);
  /* a completed: b and c; d waits for both. The history gets the new phase. */
  json_object_set_new(f, "status", running);
  snprintf(c.jobs[0].phase, sizeof(c.jobs[0].phase), "Completed");
  json_object_set_new(c.jobs[0].status, "runningDuration", json_string("1m30s"));
  sync(f, &c, &p);
  assert_int_equal(p.ncreate, 2);
  assert_string_equal(created_name(&p, 0), "dia-b");
  assert_string_equal(created_name(&p, 1), "dia-c");
  e = json_array_get(json_object_get(p.status, "jobStatusList"), 0);
  assert_string_equal(json_string_value(json_object_get(e, "endTimestamp")),
                      "2026-12-01T10:01:30Z");
  h = json_object_get(e, "runningHistories");
  assert_int_equal(json_array_size(h), 2);
  assert_string_equal(json_string_value(json_object_get(json_array_get(h, 1), "state")),
                      "Completed");
  assert_string_equal(
      json_string_value(json_object_get(
          json_object_get(json_object_get(p.status, "conditions"), "dia-a"), "runningDuration")),
      "1m30s");
  ctl_jf_plan_free(&p);
  /* b completed, c still running: no d yet. */
  add_job(&c, "dia-b", "Completed", NULL);
  add_job(&c, "dia-c", "Running", NULL);
  sync(f, &c, &p);
  assert_int_equal(p.ncreate, 0);
  ctl_jf_plan_free(&p);
  snprintf(c.jobs[2].phase, sizeof(c.jobs[2].phase), "Completed");
  sync(f, &c, &p);
  assert_int_equal(p.ncreate, 1);
  assert_string_equal(created_name(&p, 0), "dia-d");
  ctl_jf_plan_free(&p);
  /* All four completed: Succeed. */
  add_job(&c, "dia-d", "Completed", NULL);
  sync(f, &c, &p);
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(p.status, "state"), "phase")), "Succeed");
  assert_int_equal(json_array_size(json_object_get(p.status, "completedJobs")), 4);
  ctl_jf_plan_free(&p);
  json_decref(f);
  cache_free(&c);
}

static void test_states(void **state) {
  (void)state;
  cache c = {.tmpl = parse("{\"spec\":{}}")};
  ctl_jf_plan p;
  add_job(&c, "dia-a", "Failed", NULL);
  /* Pending with a failed Job: Failed. */
  json_t *f = flow("", "{}");
  sync(f, &c, &p);
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(p.status, "state"), "phase")), "Failed");
  assert_string_equal(p.counted, "Failed");              /* Volcano's pending state counts it */
  assert_null(json_object_get(p.status, "runningJobs")); /* empty lists are left out */
  ctl_jf_plan_free(&p);
  json_decref(f);
  /* Running with a terminated Job: Failed. Aborted is an unknown phase. */
  snprintf(c.jobs[0].phase, sizeof(c.jobs[0].phase), "Terminated");
  add_job(&c, "dia-b", "Aborted", NULL);
  f = flow("", "{\"state\":{\"phase\":\"Running\"}}");
  sync(f, &c, &p);
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(p.status, "state"), "phase")), "Failed");
  assert_string_equal(json_string_value(json_array_get(json_object_get(p.status, "unKnowJobs"), 0)),
                      "dia-b");
  assert_null(p.counted); /* the running state counts no failure */
  ctl_jf_plan_free(&p);
  json_decref(f);
  /* Failed does nothing. */
  f = flow("", "{\"state\":{\"phase\":\"Failed\"}}");
  sync(f, &c, &p);
  assert_null(p.status);
  assert_null(p.counted);
  assert_int_equal(p.ncreate, 0);
  ctl_jf_plan_free(&p);
  json_decref(f);
  /* Succeed with retain delete: every Job of the flow is deleted, nothing else. */
  f = flow(",\"jobRetainPolicy\":\"delete\"", "{\"state\":{\"phase\":\"Succeed\"}}");
  sync(f, &c, &p);
  assert_int_equal(p.ndel, 2);
  assert_string_equal(p.del[0], "dia-a");
  assert_null(p.status);
  ctl_jf_plan_free(&p);
  json_decref(f);
  /* An unknown state is an error. */
  f = flow("", "{\"state\":{\"phase\":\"Weird\"}}");
  sync(f, &c, &p);
  assert_int_equal(p.err, KC_EINVAL);
  assert_string_equal(p.errmsg, "jobflow dia state Weird is invalid");
  ctl_jf_plan_free(&p);
  json_decref(f);
  cache_free(&c);
}

static const char *phase_of(const ctl_jf_plan *p) {
  return json_string_value(json_object_get(json_object_get(p->status, "state"), "phase"));
}

/* Short Jobs can all finish between two syncs of a flow that is still Pending: it must reach
 * Succeed at once, since nothing would sync a flow left Running again. A terminated Job fails a
 * Pending flow too. */
static void test_pending_states(void **state) {
  (void)state;
  cache c = {.tmpl = parse("{\"spec\":{}}")};
  ctl_jf_plan p;
  const char *names[] = {"dia-a", "dia-b", "dia-c", "dia-d"};
  for (size_t i = 0; i < 4; i++)
    add_job(&c, names[i], "Completed", NULL);
  json_t *f = flow("", "{\"state\":{\"phase\":\"Pending\"}}");
  sync(f, &c, &p);
  assert_string_equal(phase_of(&p), "Succeed");
  assert_string_equal(p.counted, "Succeed");
  ctl_jf_plan_free(&p);
  json_decref(f);
  /* No phase yet counts as Pending. */
  f = flow("", "{}");
  sync(f, &c, &p);
  assert_string_equal(phase_of(&p), "Succeed");
  ctl_jf_plan_free(&p);
  json_decref(f);
  /* Three of four completed: Running, from Pending. */
  snprintf(c.jobs[3].phase, sizeof(c.jobs[3].phase), "Pending");
  f = flow("", "{\"state\":{\"phase\":\"Pending\"}}");
  sync(f, &c, &p);
  assert_string_equal(phase_of(&p), "Running");
  assert_null(p.counted);
  ctl_jf_plan_free(&p);
  json_decref(f);
  /* Running, all four completed: Succeed, counted by the running state. */
  snprintf(c.jobs[3].phase, sizeof(c.jobs[3].phase), "Completed");
  f = flow("", "{\"state\":{\"phase\":\"Running\"}}");
  sync(f, &c, &p);
  assert_string_equal(phase_of(&p), "Succeed");
  assert_string_equal(p.counted, "Succeed");
  ctl_jf_plan_free(&p);
  json_decref(f);
  /* Succeed stays: nothing more is counted. */
  f = flow("", "{\"state\":{\"phase\":\"Succeed\"}}");
  sync(f, &c, &p);
  assert_null(p.counted);
  ctl_jf_plan_free(&p);
  json_decref(f);
  snprintf(c.jobs[3].phase, sizeof(c.jobs[3].phase), "Terminated");
  f = flow("", "{\"state\":{\"phase\":\"Pending\"}}");
  sync(f, &c, &p);
  assert_string_equal(phase_of(&p), "Failed");
  ctl_jf_plan_free(&p);
  json_decref(f);
  cache_free(&c);
}

static void test_cycle_fails_the_flow(void **state) {
  (void)state;
  cache c = {.tmpl = parse("{\"spec\":{}}")};
  ctl_jf_plan p;
  json_t *f = parse("{\"metadata\":{\"name\":\"x\",\"namespace\":\"ns\"},\"spec\":{\"flows\":["
                    "{\"name\":\"a\",\"dependsOn\":{\"targets\":[\"b\"]}},"
                    "{\"name\":\"b\",\"dependsOn\":{\"targets\":[\"a\"]}}]}}");
  sync(f, &c, &p);
  assert_int_equal(p.ncreate, 0);
  assert_int_equal(p.nev, 1);
  assert_string_equal(p.ev[0].reason, "InvalidJobFlow");
  assert_string_equal(p.ev[0].type, "Warning");
  assert_string_equal(p.ev[0].message, "jobflow Flow is not DAG");
  assert_string_equal(p.cycle, "a -> b -> a");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(p.status, "state"), "phase")), "Failed");
  ctl_jf_plan_free(&p);
  json_decref(f);
  cache_free(&c);
}

static void test_missing_template(void **state) {
  (void)state;
  cache c = {.tmpl = parse("{\"spec\":{}}")};
  ctl_jf_plan p;
  json_t *f = parse("{\"metadata\":{\"name\":\"x\",\"namespace\":\"ns\"},\"spec\":{\"flows\":["
                    "{\"name\":\"a\"},{\"name\":\"zz\"}]}}");
  sync(f, &c, &p);
  /* a is created; zz fails the sync (retried), and the status is not written. */
  assert_int_equal(p.ncreate, 1);
  assert_int_equal(p.err, KC_ENOTFOUND);
  assert_string_equal(p.errmsg, "getting JobTemplate \"zz\" in ns \"ns\": "
                                "jobtemplates.flow.volcano.sh \"zz\" not found");
  assert_null(p.status);
  ctl_jf_plan_free(&p);
  json_decref(f);
  cache_free(&c);
}

static void test_patch(void **state) {
  (void)state;
  json_t *base = parse(
      "{\"schedulerName\":\"volcano\",\"minAvailable\":2,\"maxRetry\":5,\"queue\":\"q\","
      "\"volumes\":[{\"mountPath\":\"/a\",\"volumeClaimName\":\"x\"}],"
      "\"plugins\":{\"env\":[],\"ssh\":[\"--no-root\"]},"
      "\"tasks\":[{\"name\":\"m\",\"replicas\":1,\"template\":{\"spec\":{\"nodeName\":\"n\"}}}]}");
  json_t *patch =
      parse("{\"queue\":\"other\",\"maxRetry\":1,"
            "\"volumes\":[{\"mountPath\":\"/a\",\"volumeClaimName\":\"y\"},{\"mountPath\":\"/b\","
            "\"volumeClaimName\":\"z\"}],\"plugins\":{\"ssh\":[\"--x\"],\"svc\":[]},"
            "\"tasks\":[{\"name\":\"m\",\"replicas\":3},{\"name\":\"n\",\"replicas\":1}]}");
  json_t *m = ctl_jobflow_patch_spec(base, patch);
  json_t *want = parse(
      "{\"schedulerName\":\"volcano\",\"maxRetry\":1,\"queue\":\"other\","
      "\"volumes\":[{\"mountPath\":\"/a\",\"volumeClaimName\":\"y\"},{\"mountPath\":\"/b\","
      "\"volumeClaimName\":\"z\"}],"
      "\"plugins\":{\"env\":[],\"ssh\":[\"--no-root\",\"--x\"],\"svc\":[]},"
      "\"tasks\":[{\"name\":\"m\",\"replicas\":3,\"template\":{\"spec\":{\"nodeName\":\"n\"}}},"
      "{\"name\":\"n\",\"replicas\":1}]}");
  if (!json_equal(m, want)) {
    char *s = json_dumps(m, JSON_SORT_KEYS);
    fail_msg("patched: %s", s);
  }
  json_decref(m);
  json_decref(want);
  /* An empty patch changes nothing. */
  json_t *empty = json_object();
  m = ctl_jobflow_patch_spec(base, empty);
  assert_true(json_equal(m, base));
  json_decref(m);
  json_decref(empty);
  json_decref(patch);
  /* Two patch tasks of one name (a new one, merged twice) and two volumes of one mountPath:
   * the flow's patch, shared with the informer's cache, stays as it was. */
  patch = parse("{\"tasks\":[{\"name\":\"k\",\"template\":{\"spec\":{\"a\":1}}},"
                "{\"name\":\"k\",\"template\":{\"spec\":{\"b\":2}}}],"
                "\"volumes\":[{\"mountPath\":\"/c\",\"size\":1},{\"mountPath\":\"/c\"}]}");
  json_t *before = json_deep_copy(patch);
  m = ctl_jobflow_patch_spec(base, patch);
  assert_non_null(m);
  assert_true(json_equal(patch, before));
  json_decref(m);
  json_decref(before);
  json_decref(patch);
  json_decref(base);
}

static void test_template_status(void **state) {
  (void)state;
  json_t *t = parse("{\"status\":{}}");
  const char *names[] = {"f2-t", "f1-t"};
  assert_null(ctl_jobtemplate_status(t, names, 0));
  json_t *st = ctl_jobtemplate_status(t, names, 2);
  json_t *want = parse("{\"jobDependsOnList\":[\"f1-t\",\"f2-t\"]}");
  assert_true(json_equal(st, want));
  json_object_set(t, "status", st);
  assert_null(ctl_jobtemplate_status(t, names, 2)); /* already so */
  json_decref(st);
  json_decref(want);
  json_decref(t);
  char ns[64], name[64];
  assert_true(ctl_jf_split_ref("default.train", ns, sizeof(ns), name, sizeof(name)));
  assert_string_equal(ns, "default");
  assert_string_equal(name, "train");
  assert_false(ctl_jf_split_ref("default.my.train", ns, sizeof(ns), name, sizeof(name)));
  assert_false(ctl_jf_split_ref("nodot", ns, sizeof(ns), name, sizeof(name)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dag),
      cmocka_unit_test(test_diamond_order),
      cmocka_unit_test(test_states),
      cmocka_unit_test(test_cycle_fails_the_flow),
      cmocka_unit_test(test_missing_template),
      cmocka_unit_test(test_patch),
      cmocka_unit_test(test_template_status),
      cmocka_unit_test(test_pending_states),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
