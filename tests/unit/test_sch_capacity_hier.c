/* The capacity plugin with enableHierarchy (scheduler/sch_plugin_capacity.c): realCapability
 * down the tree, a parent's capability bounding its children, jobs only in leaf queues,
 * queue order by the ancestors below the shared one, reclaim from the nearest queues first
 * and ancestorReclaimLevel, a broken hierarchy holding only the gangs concerned. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "test_sch_plugins_fixture.h"

#define UNLIMITED INT64_MAX

static const char conf[] = "actions: \"enqueue, allocate\"\n"
                           "tiers:\n"
                           "- plugins:\n"
                           "  - name: priority\n"
                           "  - name: gang\n"
                           "- plugins:\n"
                           "  - name: predicates\n"
                           "  - name: capacity\n"
                           "    enableHierarchy: true\n"
                           "  - name: nodeorder\n";

/* A queue under parent (NULL: none, that is root) deserving milli_cpu. */
static Kiln__Queue *hq(fx *f, const char *name, const char *parent, int64_t milli_cpu) {
  Kiln__Queue *q = fx_queue(f, name, 1);
  if (parent)
    q->spec->parent = fx_str(parent);
  if (milli_cpu)
    q->spec->deserved = fx_res(milli_cpu, 0);
  return q;
}

/* root -> a (capability 8, deserved 8) -> a1 (deserved 4), a2 (deserved 4, guarantee 2);
 * root -> b (deserved 8). The children's guarantees come off the parent's realCapability,
 * each keeps its own; the root is unlimited and deserves what its children do. */
static void test_limits_down_the_tree(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 16000, 64 * GI, 110);
  hq(f, "root", NULL, 0);
  Kiln__Queue *a = hq(f, "a", "root", 8000);
  fx_queue_capability(a, 8000, 0);
  hq(f, "a1", "a", 4000);
  Kiln__Queue *a2 = hq(f, "a2", "a", 4000);
  fx_queue_guarantee(a2, 2000, 0);
  hq(f, "b", NULL, 8000);
  fx_open(f, conf);
  assert_int_equal(fx_squeue(f, "a1")->real_capability.milli_cpu, 6000); /* 8 - 2 */
  assert_int_equal(fx_squeue(f, "a2")->real_capability.milli_cpu, 8000); /* 8 - 2 + 2 */
  assert_int_equal(fx_squeue(f, "a1")->real_capability.memory, UNLIMITED);
  assert_int_equal(fx_squeue(f, "a")->real_capability.milli_cpu, 8000);
  /* b: the root's realCapability less the guarantees of root's children (a has none) */
  assert_int_equal(fx_squeue(f, "b")->real_capability.milli_cpu, UNLIMITED);
  assert_int_equal(fx_squeue(f, "root")->real_capability.milli_cpu, UNLIMITED);
  assert_int_equal(fx_squeue(f, "root")->deserved.milli_cpu, 16000);
  assert_int_equal(fx_squeue(f, "a2")->deserved.milli_cpu, 4000);
  fx_free(f);
}

/* A parent's capability bounds its children together, and the waiting gang says which queue
 * holds it; a GPU capability is inherited by a child that names none. */
static void test_parent_capability_bounds_children(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_gpu_node(f, "n1", 16000, 64 * GI, 8000);
  hq(f, "root", NULL, 0);
  Kiln__Queue *a = hq(f, "a", NULL, 0);
  fx_queue_gpu_capability(a, 4000, 0, 1000);
  hq(f, "a1", "a", 0);
  hq(f, "a2", "a", 0);
  fx_gangs(f, "x", "a1", 3, 1000, 0, 0);
  fx_gangs(f, "y", "a2", 3, 1000, 0, 0);
  fx_open(f, conf);
  assert_int_equal(fx_squeue(f, "a1")->real_capability.scalar[sch_snapshot_scalar(f->snap, FX_GPU)],
                   1000);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 4);
  int held = 0;
  const char *names[] = {"x0", "x1", "x2", "y0", "y1", "y2"};
  for (int i = 0; i < 6; i++) {
    const char *m = fx_pg_message(f, r, names[i]);
    if (!*m)
      continue;
    held++;
    char want[256];
    snprintf(want, sizeof(want),
             "1/1 tasks in gang unschedulable: queue a (an ancestor of queue %s) resource "
             "quota insufficient: pod requests 1 cpu; the queue's capability is 4 cpu, 4 cpu "
             "allocated",
             names[i][0] == 'x' ? "a1" : "a2");
    assert_string_equal(m, want);
  }
  assert_int_equal(held, 2);
  sch_result_free(r);
  fx_free(f);
}

/* A gang in a queue with children is never admitted; one in the leaf is. */
static void test_jobs_only_in_leaves(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 16000, 64 * GI, 110);
  hq(f, "root", NULL, 0);
  hq(f, "a", NULL, 0);
  hq(f, "a1", "a", 0);
  fx_pg_min_resources(fx_pg(f, "inner", "a", 1, "Pending"), 1000, 0);
  fx_pod(f, "inner-0", "inner", 1000, 0, NULL);
  fx_pg_min_resources(fx_pg(f, "leaf", "a1", 1, "Pending"), 1000, 0);
  fx_pod(f, "leaf-0", "leaf", 1000, 0, NULL);
  fx_open(f, conf);
  sch_result *r = fx_run(f);
  assert_int_equal(fx_job(f, "inner")->phase, SCH_PG_PENDING);
  assert_int_equal(fx_job(f, "leaf")->phase, SCH_PG_INQUEUE);
  assert_non_null(strstr(fx_pg_message(f, r, "inner"), "The Queue <a> of Job <ns/inner> is not "
                                                       "leaf queue"));
  sch_result_free(r);
  fx_free(f);
}

/* A missing parent or a cycle holds the gangs of the queues concerned, and only them. */
static void test_broken_tree_holds_only_its_gangs(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 16000, 64 * GI, 110);
  hq(f, "root", NULL, 0);
  hq(f, "orphan", "gone", 0);
  hq(f, "under", "orphan", 0);
  hq(f, "p", "q", 0);
  hq(f, "q", "p", 0);
  hq(f, "ok", NULL, 0);
  fx_gangs(f, "o", "under", 1, 1000, 0, 0);
  fx_gangs(f, "c", "p", 1, 1000, 0, 0);
  fx_gangs(f, "k", "ok", 1, 1000, 0, 0);
  fx_open(f, conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_int_equal(r->binds[0].task, fx_task(f, "k0-0"));
  assert_non_null(
      strstr(fx_pg_message(f, r, "o0"), "the queue orphan has invalid parent queue gone"));
  assert_non_null(strstr(fx_pg_message(f, r, "c0"), "cycle detected in queue hierarchy for queue"));
  sch_result_free(r);
  fx_free(f);
}

/* Two leaves under different parents compare by their parents' shares; siblings by their
 * own; a leaf goes before a parent. */
static void test_queue_order(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 16000, 64 * GI, 110);
  hq(f, "root", NULL, 0);
  hq(f, "a", NULL, 4000);
  hq(f, "a1", "a", 2000);
  hq(f, "a2", "a", 2000);
  hq(f, "b", NULL, 4000);
  hq(f, "b1", "b", 4000);
  fx_pg(f, "ja", "a1", 1, "Running");
  fx_pod(f, "ja-0", "ja", 1000, 0, "n1"); /* a1 0.5, a 0.25 */
  fx_pg(f, "jb", "b1", 1, "Running");
  fx_pod(f, "jb-0", "jb", 2000, 0, "n1"); /* b1 0.5, b 0.5 */
  fx_open(f, conf);
  const sch_queue *a1 = fx_squeue(f, "a1"), *a2 = fx_squeue(f, "a2"), *b1 = fx_squeue(f, "b1");
  assert_true(sch_session_queue_order(f->ssn, a1, b1) < 0); /* a below b */
  assert_true(sch_session_queue_order(f->ssn, a2, a1) < 0); /* a2 idle */
  assert_true(sch_session_queue_order(f->ssn, b1, fx_squeue(f, "a")) < 0);
  fx_free(f);
}

/* root -> a (4) -> a1 (2), a2 (2); root -> b (8) -> b1 (4). a2 holds 4 and b1 6: both above
 * deserved. a1 reclaims: a2's pods come first (nearest), and never more than a2 holds above
 * its deserved. */
static fx *reclaim_fixture(const char *args) {
  fx *f = fx_new();
  fx_node(f, "n1", 16000, 64 * GI, 110);
  hq(f, "root", NULL, 0);
  hq(f, "a", NULL, 4000);
  hq(f, "a1", "a", 2000);
  hq(f, "a2", "a", 2000);
  hq(f, "b", NULL, 8000);
  hq(f, "b1", "b", 4000);
  fx_pg(f, "x", "a2", 1, "Running");
  for (int i = 0; i < 4; i++) {
    char p[16];
    snprintf(p, sizeof(p), "x-%d", i);
    fx_pod(f, p, "x", 1000, 0, "n1");
  }
  fx_pg(f, "y", "b1", 1, "Running");
  for (int i = 0; i < 6; i++) {
    char p[16];
    snprintf(p, sizeof(p), "y-%d", i);
    fx_pod(f, p, "y", 1000, 0, "n1");
  }
  fx_pg(f, "r", "a1", 1, "Inqueue");
  fx_pod(f, "r-0", "r", 1000, 0, NULL);
  char yaml[512];
  snprintf(yaml, sizeof(yaml),
           "actions: \"allocate, reclaim\"\n"
           "tiers:\n"
           "- plugins:\n"
           "  - name: capacity\n"
           "    enableHierarchy: true\n%s",
           args);
  fx_open(f, yaml);
  return f;
}

static void test_reclaim_nearest_first(void **state) {
  (void)state;
  fx *f = reclaim_fixture("");
  int32_t cands[] = {fx_task(f, "y-0"), fx_task(f, "y-1"), fx_task(f, "y-2"),
                     fx_task(f, "x-0"), fx_task(f, "x-1"), fx_task(f, "x-2")};
  int32_t v[6];
  const sch_task *t = &f->snap->tasks[fx_task(f, "r-0")];
  int nv = sch_session_reclaimable(f->ssn, t, cands, 6, v);
  /* x-0, x-1 (a2 down to its deserved 2), then y-0, y-1 (b1 down to 4) */
  assert_int_equal(nv, 4);
  assert_int_equal(v[0], fx_task(f, "x-0"));
  assert_int_equal(v[1], fx_task(f, "x-1"));
  assert_int_equal(v[2], fx_task(f, "y-0"));
  assert_int_equal(v[3], fx_task(f, "y-1"));
  /* a1 holds nothing: below deserved, it may reclaim */
  assert_true(sch_session_preemptive(f->ssn, fx_squeue(f, "a1"), t));
  fx_free(f);
}

/* ancestorReclaimLevel 1: b (6 of 8) is not above its deserved, so b1's pods are kept for a
 * reclaimer outside b; a2's (same parent as the reclaimer) still go. */
static void test_ancestor_reclaim_level(void **state) {
  (void)state;
  fx *f = reclaim_fixture("    arguments:\n      ancestorReclaimLevel: 1\n");
  int32_t cands[] = {fx_task(f, "y-0"), fx_task(f, "x-0"), fx_task(f, "x-1"), fx_task(f, "x-2")};
  int32_t v[4];
  const sch_task *t = &f->snap->tasks[fx_task(f, "r-0")];
  int nv = sch_session_reclaimable(f->ssn, t, cands, 4, v);
  assert_int_equal(nv, 2);
  assert_int_equal(v[0], fx_task(f, "x-0"));
  assert_int_equal(v[1], fx_task(f, "x-1"));
  fx_free(f);
}

/* A leaf at its deserved may reclaim when an ancestor within ancestorReclaimLevel is below
 * its own deserved, and not otherwise. */
static void test_preemptive_through_ancestor(void **state) {
  (void)state;
  for (int level = 0; level <= 1; level++) {
    fx *f = fx_new();
    fx_node(f, "n1", 16000, 64 * GI, 110);
    hq(f, "root", NULL, 0);
    hq(f, "a", NULL, 8000);
    hq(f, "a1", "a", 2000);
    hq(f, "a2", "a", 2000);
    fx_pg(f, "x", "a1", 1, "Running");
    fx_pod(f, "x-0", "x", 2000, 0, "n1");
    fx_pg(f, "r", "a1", 1, "Inqueue");
    fx_pod(f, "r-0", "r", 1000, 0, NULL);
    char yaml[512];
    snprintf(yaml, sizeof(yaml),
             "actions: \"reclaim\"\ntiers:\n- plugins:\n  - name: capacity\n"
             "    enableHierarchy: true\n    arguments:\n      ancestorReclaimLevel: %d\n",
             level);
    fx_open(f, yaml);
    const sch_task *t = &f->snap->tasks[fx_task(f, "r-0")];
    assert_int_equal(sch_session_preemptive(f->ssn, fx_squeue(f, "a1"), t), level == 1);
    fx_free(f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_limits_down_the_tree),
      cmocka_unit_test(test_parent_capability_bounds_children),
      cmocka_unit_test(test_jobs_only_in_leaves),
      cmocka_unit_test(test_broken_tree_holds_only_its_gangs),
      cmocka_unit_test(test_queue_order),
      cmocka_unit_test(test_reclaim_nearest_first),
      cmocka_unit_test(test_ancestor_reclaim_level),
      cmocka_unit_test(test_preemptive_through_ancestor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
