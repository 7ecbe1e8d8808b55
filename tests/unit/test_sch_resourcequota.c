/* The resourcequota plugin on hand-built sessions: a job its namespace's quota cannot take
 * stays Pending with Volcano's event, jobs let in earlier in the session count against the
 * quota, other namespaces' quotas and names the quota does not limit do not matter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "test_sch_plugins_fixture.h"

static void quota_entry(Kiln__ResourceQuotaStatus__HardEntry ***arr, size_t *n, const char *k,
                        const char *v) {
  Kiln__ResourceQuotaStatus__HardEntry *e = fx_alloc(sizeof(*e));
  kiln__resource_quota_status__hard_entry__init(e);
  e->key = fx_str(k);
  e->value = fx_str(v);
  FX_APPEND(*arr, *n, e);
}

static void used_entry(Kiln__ResourceQuotaStatus__UsedEntry ***arr, size_t *n, const char *k,
                       const char *v) {
  Kiln__ResourceQuotaStatus__UsedEntry *e = fx_alloc(sizeof(*e));
  kiln__resource_quota_status__used_entry__init(e);
  e->key = fx_str(k);
  e->value = fx_str(v);
  FX_APPEND(*arr, *n, e);
}

/* A quota in ns with hard requests.cpu and used requests.cpu. */
static void quota(fx *f, const char *ns, const char *hard_cpu, const char *used_cpu) {
  Kiln__ResourceQuota *q = fx_alloc(sizeof(*q));
  kiln__resource_quota__init(q);
  q->metadata = fx_meta(ns, "q");
  q->status = fx_alloc(sizeof(*q->status));
  kiln__resource_quota_status__init(q->status);
  quota_entry(&q->status->hard, &q->status->n_hard, "requests.cpu", hard_cpu);
  quota_entry(&q->status->hard, &q->status->n_hard, "pods", "100");
  used_entry(&q->status->used, &q->status->n_used, "requests.cpu", used_cpu);
  used_entry(&q->status->used, &q->status->n_used, "pods", "1");
  FX_APPEND(f->msg->resource_quotas, f->msg->n_resource_quotas, q);
}

/* A Pending PodGroup whose minResources names cpu both ways, as the job controller writes it. */
static void job(fx *f, const char *name, int64_t milli_cpu) {
  Kiln__PodGroup *pg = fx_pg(f, name, "default", 1, "Pending");
  fx_pg_min_resources(pg, milli_cpu, GI);
  fx_res_scalar(pg->spec->min_resources, "requests.cpu", milli_cpu);
  fx_res_scalar(pg->spec->min_resources, "limits.cpu", milli_cpu);
  pg->spec->min_resources->pods = 1;
  char pod[64];
  snprintf(pod, sizeof(pod), "%s-0", name);
  fx_pod(f, pod, name, milli_cpu, GI, NULL);
}

static const char rq_yaml[] = "actions: \"enqueue\"\n"
                              "tiers:\n"
                              "- plugins:\n"
                              "  - name: resourcequota\n";

/* requests.cpu 10 with 4 used: a 4-cpu job gets in, the next 4-cpu one would make 12 and
 * waits with the event; a 2-cpu one after it still fits (4 + 4 + 2 = 10). */
static void test_rq_pending_instead_of_failed(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n", 64000, 256 * GI, 110);
  quota(f, "ns", "10", "4");
  quota(f, "other", "1", "1"); /* another namespace's quota: no effect */
  job(f, "a", 4000);
  job(f, "b", 4000);
  job(f, "c", 2000);
  fx_open(f, rq_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(fx_pg_status(f, r, "a")->phase, SCH_PG_INQUEUE);
  assert_int_equal(fx_pg_status(f, r, "b")->phase, SCH_PG_PENDING);
  assert_int_equal(fx_pg_status(f, r, "c")->phase, SCH_PG_INQUEUE);
  bool seen = false;
  const sch_job *b = fx_job(f, "b");
  for (size_t i = 0; i < r->nevents; i++) {
    const sch_event *e = &r->events[i];
    if (e->kind != SCH_EVENT_PODGROUP || e->object != (int32_t)(b - f->snap->jobs))
      continue;
    assert_string_equal(e->type, "Normal");
    assert_string_equal(e->reason, "Unschedulable");
    assert_string_equal(e->message, "resource quota insufficient, requested: map[requests.cpu:4], "
                                    "used: map[requests.cpu:4], limited: map[requests.cpu:10]");
    seen = true;
  }
  assert_true(seen);
  sch_result_free(r);
  fx_free(f);
}

/* Without the plugin the same jobs all enqueue (the test can fail). */
static void test_rq_without_plugin(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n", 64000, 256 * GI, 110);
  quota(f, "ns", "10", "4");
  job(f, "a", 4000);
  job(f, "b", 4000);
  fx_open(f, "actions: \"enqueue\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: gang\n");
  sch_result *r = fx_run(f);
  assert_int_equal(fx_pg_status(f, r, "b")->phase, SCH_PG_INQUEUE);
  sch_result_free(r);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rq_pending_instead_of_failed),
      cmocka_unit_test(test_rq_without_plugin),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
