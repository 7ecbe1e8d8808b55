/* The extender plugin against a fake HTTP client: the predicate's veto keeps pods off a
 * node, prioritize's scores order nodes, a failed call fails or passes by extender.ignorable,
 * and each request goes to <urlPrefix>/<verb> (job enqueueable to the reclaimable verb, as in
 * Volcano). */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "test_sch_plugins_fixture.h"

typedef struct fake {
  int calls;
  char last_url[256];
  bool down;        /* every call fails as unreachable */
  const char *veto; /* node the predicate refuses */
  const char *best; /* node prioritize scores 1000 */
  int64_t timeout_ms;
} fake;

static char *answer(fake *fk, const char *url, json_t *req) {
  const char *verb = strrchr(url, '/') + 1;
  json_t *out = json_object();
  if (strcmp(verb, "filter") == 0) {
    const char *node = json_string_value(json_object_get(json_object_get(req, "node"), "Name"));
    if (fk->veto && node && strcmp(node, fk->veto) == 0)
      json_object_set_new(out, "errorMessage", json_string("vetoed by the extender"));
  } else if (strcmp(verb, "prioritize") == 0) {
    json_t *scores = json_object();
    json_t *nodes = json_object_get(req, "nodes"), *n;
    size_t i;
    json_array_foreach(nodes, i, n) {
      const char *name = json_string_value(json_object_get(n, "Name"));
      json_object_set_new(scores, name,
                          json_real(fk->best && strcmp(name, fk->best) == 0 ? 1000 : 0));
    }
    json_object_set_new(out, "nodeScore", scores);
  } else if (strcmp(verb, "reclaimable") == 0) {
    json_object_set_new(out, "status", json_integer(-1));
  }
  char *s = json_dumps(out, JSON_COMPACT);
  json_decref(out);
  return s;
}

static int fake_post(void *ctx, const char *url, const char *body, size_t len, int64_t timeout_ms,
                     char **resp, size_t *resp_len, char *err, size_t errlen) {
  fake *fk = ctx;
  fk->calls++;
  fk->timeout_ms = timeout_ms;
  snprintf(fk->last_url, sizeof(fk->last_url), "%s", url);
  if (fk->down) {
    snprintf(err, errlen, "connection refused");
    return KC_ETRANSPORT;
  }
  json_t *req = json_loadb(body, len, 0, NULL);
  assert_non_null(req);
  *resp = answer(fk, url, req);
  *resp_len = strlen(*resp);
  json_decref(req);
  return 200;
}

static void open_with(fx *f, const char *yaml, fake *fk) {
  static sch_http http;
  http = (sch_http){fake_post, fk};
  sch_session_options o = SCH_SESSION_OPTIONS_DEFAULT;
  o.http = &http;
  char err[256] = "";
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  if (sch_conf_parse(yaml, strlen(yaml), &f->conf, err, sizeof(err)) != 0)
    fail_msg("configuration: %s", err);
  assert_int_equal(sch_session_open(f->snap, f->conf, &o, &f->ssn), 0);
}

static const char ext_yaml[] = "actions: \"allocate\"\n"
                               "tiers:\n"
                               "- plugins:\n"
                               "  - name: gang\n"
                               "- plugins:\n"
                               "  - name: predicates\n"
                               "  - name: binpack\n"
                               "  - name: extender\n"
                               "    arguments:\n"
                               "      extender.urlPrefix: http://127.0.0.1:9/ext/\n"
                               "      extender.httpTimeout: 250ms\n"
                               "      extender.predicateVerb: filter\n";

static fx *two_nodes(void) {
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "bad", 8000, 16 * GI, 110);
  fx_node(f, "good", 8000, 16 * GI, 110);
  fx_pod(f, "resident", NULL, 4000, GI, "bad"); /* binpack prefers the fuller node */
  fx_gangs(f, "j", "default", 3, 1000, GI, 0);
  return f;
}

static void test_extender_veto(void **state) {
  (void)state;
  fake fk = {.veto = "bad"};
  fx *f = two_nodes();
  open_with(f, ext_yaml, &fk);
  const char *why;
  assert_int_equal(fx_predicate(f, "j0-0", "bad", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "vetoed by the extender");
  assert_string_equal(fk.last_url, "http://127.0.0.1:9/ext/filter");
  assert_int_equal(fk.timeout_ms, 250);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 3);
  for (size_t i = 0; i < r->nbinds; i++)
    assert_string_equal(f->snap->nodes[r->binds[i].node].name, "good");
  sch_result_free(r);
  fx_free(f);

  /* Without the extender binpack packs them onto the fuller node. */
  f = two_nodes();
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: gang\n"
             "- plugins:\n"
             "  - name: predicates\n"
             "  - name: binpack\n");
  r = fx_run(f);
  assert_string_equal(f->snap->nodes[r->binds[0].node].name, "bad");
  sch_result_free(r);
  fx_free(f);
}

/* Unreachable: the node fails with the error, unless extender.ignorable. */
static void test_extender_down(void **state) {
  (void)state;
  fake fk = {.down = true};
  fx *f = two_nodes();
  open_with(f, ext_yaml, &fk);
  const char *why;
  assert_int_equal(fx_predicate(f, "j0-0", "good", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "connection refused");
  fx_free(f);

  char yaml[1024];
  snprintf(yaml, sizeof(yaml), "%s      extender.ignorable: true\n", ext_yaml);
  f = two_nodes();
  open_with(f, yaml, &fk);
  assert_int_equal(fx_predicate(f, "j0-0", "good", &why), SCH_FIT);
  fx_free(f);
}

static void test_extender_prioritize(void **state) {
  (void)state;
  fake fk = {.best = "good"};
  fx *f = two_nodes();
  open_with(f,
            "actions: \"allocate\"\n"
            "tiers:\n"
            "- plugins:\n"
            "  - name: gang\n"
            "- plugins:\n"
            "  - name: predicates\n"
            "  - name: binpack\n"
            "  - name: extender\n"
            "    arguments:\n"
            "      extender.urlPrefix: http://x\n"
            "      extender.prioritizeVerb: prioritize\n",
            &fk);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 3);
  for (size_t i = 0; i < r->nbinds; i++)
    assert_string_equal(f->snap->nodes[r->binds[i].node].name, "good");
  assert_string_equal(fk.last_url, "http://x/prioritize");
  sch_result_free(r);
  fx_free(f);
}

/* Volcano sends the job-enqueueable request to the reclaimable verb: a reject there keeps a
 * Pending job out. */
static void test_extender_enqueueable_path(void **state) {
  (void)state;
  fake fk = {0};
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n", 8000, 16 * GI, 110);
  Kiln__PodGroup *pg = fx_pg(f, "pg", "default", 1, "Pending");
  fx_pg_min_resources(pg, 1000, GI); /* without minResources a job enqueues unasked */
  fx_pod(f, "p", "pg", 1000, GI, NULL);
  open_with(f,
            "actions: \"enqueue\"\n"
            "tiers:\n"
            "- plugins:\n"
            "  - name: extender\n"
            "    arguments:\n"
            "      extender.urlPrefix: http://x\n"
            "      extender.jobEnqueueableVerb: jobEnqueueable\n"
            "      extender.reclaimableVerb: reclaimable\n",
            &fk);
  sch_result *r = fx_run(f);
  assert_string_equal(fk.last_url, "http://x/reclaimable");
  assert_int_equal(fx_pg_status(f, r, "pg")->phase, SCH_PG_PENDING);
  sch_result_free(r);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_extender_veto),
      cmocka_unit_test(test_extender_down),
      cmocka_unit_test(test_extender_prioritize),
      cmocka_unit_test(test_extender_enqueueable_path),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
