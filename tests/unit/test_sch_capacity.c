/* The capacity plugin (scheduler/plugins/sch_plugin_capacity.c): per-queue deserved, guarantee and
 * capability per resource, GPUs included; realCapability, deserved capping, share order,
 * Allocatable, JobEnqueueable and Reclaimable (the guarantee is never reclaimed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "test_sch_plugins_fixture.h"

static const char conf[] = "actions: \"enqueue, allocate\"\n"
                           "tiers:\n"
                           "- plugins:\n"
                           "  - name: priority\n"
                           "  - name: gang\n"
                           "- plugins:\n"
                           "  - name: predicates\n"
                           "  - name: capacity\n"
                           "  - name: nodeorder\n";

static void deserved(Kiln__Queue *q, int64_t milli_cpu, int64_t memory) {
  q->spec->deserved = fx_res(milli_cpu, memory);
}

/* realCapability = total - all guarantees + own guarantee, capped by capability; deserved
 * capped by it and raised to the guarantee. */
static void test_deserved_arithmetic(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 8000, 32 * GI, 110);
  fx_node(f, "n2", 8000, 32 * GI, 110);
  Kiln__Queue *g = fx_queue(f, "g", 1);
  fx_queue_guarantee(g, 4000, 0);
  Kiln__Queue *big = fx_queue(f, "big", 1);
  deserved(big, 20000, 8 * GI);
  Kiln__Queue *capped = fx_queue(f, "capped", 1);
  deserved(capped, 6000, 0);
  fx_queue_capability(capped, 2000, 0);
  fx_open(f, conf);
  assert_int_equal(fx_squeue(f, "g")->deserved.milli_cpu, 4000);      /* the guarantee */
  assert_int_equal(fx_squeue(f, "big")->deserved.milli_cpu, 12000);   /* 16 - 4 */
  assert_int_equal(fx_squeue(f, "big")->deserved.memory, 8 * GI);     /* within 64Gi */
  assert_int_equal(fx_squeue(f, "capped")->deserved.milli_cpu, 2000); /* its capability */
  fx_free(f);
}

/* A GPU capability: two one-GPU pods bind, the third waits and says the numbers. */
static void test_gpu_capability(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_gpu_node(f, "gpu1", 64000, 256 * GI, 8000);
  fx_queue_gpu_capability(fx_queue(f, "gq", 1), 0, 0, 2000); /* cpu and memory unlimited */
  fx_gangs(f, "g", "gq", 3, 1000, GI, 1000);
  fx_open(f, conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 2);
  assert_string_equal(fx_pg_message(f, r, "g2"),
                      "1/1 tasks in gang unschedulable: queue gq resource quota "
                      "insufficient: pod requests 1 nvidia.com/gpu; the queue's capability "
                      "is 2 nvidia.com/gpu, 2 nvidia.com/gpu allocated");
  sch_result_free(r);
  fx_free(f);
}

/* A gang whose minResources would take the queue past its capability is not admitted. */
static void test_enqueue_at_capability(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 16000, 64 * GI, 110);
  Kiln__Queue *q = fx_queue(f, "small", 1);
  fx_queue_capability(q, 6000, 0);
  fx_pg(f, "run", "small", 1, "Running");
  fx_pod(f, "run-0", "run", 4000, GI, "n1");
  Kiln__PodGroup *pg = fx_pg(f, "wait", "small", 2, "Pending");
  fx_pg_min_resources(pg, 4000, 2 * GI);
  Kiln__PodGroup *ok = fx_pg(f, "fits", "small", 1, "Pending");
  fx_pg_min_resources(ok, 2000, GI);
  fx_open(f, conf);
  sch_result *r = fx_run(f);
  assert_int_equal(fx_job(f, "wait")->phase, SCH_PG_PENDING);
  assert_int_equal(fx_job(f, "fits")->phase, SCH_PG_INQUEUE);
  assert_string_equal(fx_pg_message(f, r, "wait"),
                      "2/0 tasks in gang unschedulable: queue small resource quota insufficient: "
                      "the gang needs 4 cpu (minResources); the queue has 0 cpu left of 6 cpu");
  sch_result_free(r);
  fx_free(f);
}

/* Lower share first; a higher priority queue before any share. */
static void test_queue_order(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 16000, 64 * GI, 110);
  Kiln__Queue *a = fx_queue(f, "a", 1), *b = fx_queue(f, "b", 1), *c = fx_queue(f, "c", 1);
  deserved(a, 4000, 0);
  deserved(b, 4000, 0);
  fx_pg(f, "ja", "a", 1, "Running");
  fx_pod(f, "ja-0", "ja", 3000, 0, "n1"); /* share 0.75 */
  fx_pg(f, "jb", "b", 1, "Running");
  fx_pod(f, "jb-0", "jb", 1000, 0, "n1"); /* share 0.25 */
  (void)c;                                /* no deserved: share 1, best effort */
  fx_open(f, conf);
  const sch_queue *qa = fx_squeue(f, "a"), *qb = fx_squeue(f, "b"), *qc = fx_squeue(f, "c");
  assert_true(sch_session_queue_order(f->ssn, qb, qa) < 0);
  assert_true(sch_session_queue_order(f->ssn, qa, qc) < 0);
  fx_free(f);
  /* priority first */
  f = fx_new();
  fx_node(f, "n1", 16000, 64 * GI, 110);
  a = fx_queue(f, "a", 1);
  b = fx_queue(f, "b", 1);
  deserved(a, 4000, 0);
  deserved(b, 4000, 0);
  a->spec->has_priority = 1;
  a->spec->priority = 10;
  fx_pg(f, "ja", "a", 1, "Running");
  fx_pod(f, "ja-0", "ja", 3000, 0, "n1");
  fx_open(f, conf);
  assert_true(sch_session_queue_order(f->ssn, fx_squeue(f, "a"), fx_squeue(f, "b")) < 0);
  fx_free(f);
}

/* Victims come only from above deserved, and never below the guarantee. */
static void test_reclaim_keeps_guarantee(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 8000, 32 * GI, 110);
  Kiln__Queue *lender = fx_queue(f, "lender", 1);
  deserved(lender, 2000, 0);
  fx_queue_guarantee(lender, 4000, 0);
  Kiln__Queue *owner = fx_queue(f, "owner", 1);
  deserved(owner, 4000, 0);
  fx_pg(f, "l", "lender", 1, "Running");
  fx_pod(f, "l-0", "l", 2000, 0, "n1");
  fx_pod(f, "l-1", "l", 2000, 0, "n1");
  fx_pod(f, "l-2", "l", 2000, 0, "n1");
  fx_pg(f, "o", "owner", 1, "Inqueue");
  fx_pod(f, "o-0", "o", 2000, 0, NULL);
  /* capacity alone: the first tier with a Reclaimable vote decides the victims */
  fx_open(f, "actions: \"allocate, reclaim\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: capacity\n");
  /* deserved was raised to the guarantee: 6 allocated, 4 kept */
  int32_t cands[3] = {fx_task(f, "l-0"), fx_task(f, "l-1"), fx_task(f, "l-2")};
  int32_t v[3];
  int nv = sch_session_reclaimable(f->ssn, &f->snap->tasks[fx_task(f, "o-0")], cands, 3, v);
  assert_int_equal(nv, 1);
  assert_true(
      sch_session_preemptive(f->ssn, fx_squeue(f, "owner"), &f->snap->tasks[fx_task(f, "o-0")]));
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_deserved_arithmetic),     cmocka_unit_test(test_gpu_capability),
      cmocka_unit_test(test_enqueue_at_capability),   cmocka_unit_test(test_queue_order),
      cmocka_unit_test(test_reclaim_keeps_guarantee),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
