/* Gang-aware eviction (gangpreempt, gangreclaim; sch_gangevict.h): the bundle split (job
 * surplus, minTaskMember roles), Volcano's ROI examples, and the two actions on hand-built
 * snapshots: whole gangs go instead of a task from each, safe surplus goes before any whole
 * gang and only as much as needed, allowWholeBundle, the priority filter, and reclaim across
 * queues. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kc_error.h"
#include "sch_conf.h"
#include "sch_framework.h"
#include "sch_gangevict.h"
#include "test_sch_plugins_fixture.h"

static const char preempt_conf[] = "actions: \"enqueue, allocate, gangpreempt\"\n"
                                   "tiers:\n"
                                   "- plugins:\n"
                                   "  - name: priority\n"
                                   "  - name: gang\n"
                                   "  - name: conformance\n"
                                   "- plugins:\n"
                                   "  - name: predicates\n"
                                   "  - name: nodeorder\n";

static void priority_class(fx *f, const char *name, int32_t value) {
  Kiln__PriorityClass *pc = fx_alloc(sizeof(*pc));
  kiln__priority_class__init(pc);
  pc->metadata = fx_meta(NULL, name);
  pc->has_value = 1;
  pc->value = value;
  FX_APPEND(f->msg->priority_classes, f->msg->n_priority_classes, pc);
}

/* A running gang of n 1-cpu pods, two per node from node first (n1, n2, ...). */
static void running_gang(fx *f, const char *name, const char *queue, int32_t min, int n,
                         int first) {
  fx_pg(f, name, queue, min, "Running");
  for (int i = 0; i < n; i++) {
    char pod[64], node[16];
    snprintf(pod, sizeof(pod), "%s-%d", name, i);
    snprintf(node, sizeof(node), "n%d", first + i / 2);
    fx_pod(f, pod, name, 1000, GI, node);
  }
}

/* A pending gang of n 1-cpu pods with the "high" class. */
static void pending_gang(fx *f, const char *name, const char *queue, int n) {
  Kiln__PodGroup *pg = fx_pg(f, name, queue, n, "Inqueue");
  pg->spec->priority_class_name = fx_str("high");
  for (int i = 0; i < n; i++) {
    char pod[64];
    snprintf(pod, sizeof(pod), "%s-%d", name, i);
    fx_pod(f, pod, name, 1000, GI, NULL)->priority = 1000;
  }
}

/* Four 2-cpu nodes, full: gangs a (n1, n2) and b (n3, n4) of 4 pods each, minMember mina and
 * minb; a high gang of 4 pods waits. */
static fx *full4(int32_t mina, int32_t minb, int high) {
  fx *f = fx_new();
  priority_class(f, "high", 1000);
  for (int i = 1; i <= 4; i++) {
    char node[16];
    snprintf(node, sizeof(node), "n%d", i);
    fx_node(f, node, 2000, 8 * GI, 110);
  }
  running_gang(f, "a", "default", mina, 4, 1);
  running_gang(f, "b", "default", minb, 4, 3);
  pending_gang(f, "high", "default", high);
  return f;
}

static int evicted_of(const fx *f, const sch_result *r, const char *job) {
  int n = 0;
  int32_t ji = (int32_t)(fx_job(f, job) - f->snap->jobs);
  for (size_t i = 0; i < r->nevicts; i++)
    if (f->snap->tasks[r->evicts[i].task].job == ji)
      n++;
  return n;
}

static int nominated_of(const fx *f, const sch_result *r, const char *job) {
  int n = 0;
  int32_t ji = (int32_t)(fx_job(f, job) - f->snap->jobs);
  for (size_t i = 0; i < r->nnominations; i++)
    if (f->snap->tasks[r->nominations[i].task].job == ji)
      n++;
  return n;
}

/* Two full gangs, no surplus: one whole gang goes (the later one in job order), none of the
 * other, and the high gang is nominated onto its nodes. */
static void test_gangpreempt_whole_gang(void **state) {
  (void)state;
  fx *f = full4(4, 4, 4);
  fx_open(f, preempt_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nevicts, 4);
  assert_int_equal(evicted_of(f, r, "b"), 4);
  assert_int_equal(evicted_of(f, r, "a"), 0);
  for (size_t i = 0; i < r->nevicts; i++)
    assert_string_equal(r->evicts[i].reason, "gangpreempt");
  assert_int_equal(nominated_of(f, r, "high"), 4);
  for (size_t i = 0; i < r->nnominations; i++) {
    const char *node = f->snap->nodes[r->nominations[i].node].name;
    assert_true(strcmp(node, "n3") == 0 || strcmp(node, "n4") == 0);
  }
  assert_int_equal(r->nbinds, 0);
  sch_result_free(r);
  fx_free(f);
}

/* Gang a has two pods above its minAvailable: a high gang of 2 takes exactly those (its safe
 * bundle), breaking nobody; a high gang of 1 takes one of them only. */
static void test_gangpreempt_safe_first_minimal(void **state) {
  (void)state;
  for (int high = 1; high <= 2; high++) {
    fx *f = full4(2, 4, high);
    fx_open(f, preempt_conf);
    sch_result *r = fx_run(f);
    assert_int_equal(r->nevicts, high);
    assert_int_equal(evicted_of(f, r, "a"), high);
    assert_int_equal(nominated_of(f, r, "high"), high);
    sch_result_free(r);
    fx_free(f);
  }
}

/* allowWholeBundle: false keeps every gang whole: nothing is evicted when only whole bundles
 * would make room; the surplus still goes. */
static void test_gangpreempt_no_whole_bundle(void **state) {
  (void)state;
  static const char conf[] = "actions: \"enqueue, allocate, gangpreempt\"\n"
                             "configurations:\n"
                             "- name: gangpreempt\n"
                             "  arguments:\n"
                             "    allowWholeBundle: false\n"
                             "    maxDomains: 0\n"
                             "tiers:\n"
                             "- plugins:\n"
                             "  - name: priority\n"
                             "  - name: gang\n"
                             "- plugins:\n"
                             "  - name: predicates\n";
  fx *f = full4(4, 4, 4);
  fx_open(f, conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  assert_int_equal(r->nnominations, 0);
  sch_result_free(r);
  fx_free(f);
  f = full4(2, 4, 2);
  fx_open(f, conf);
  r = fx_run(f);
  assert_int_equal(r->nevicts, 2);
  assert_int_equal(evicted_of(f, r, "a"), 2);
  sch_result_free(r);
  fx_free(f);
}

static void pg_annotate(Kiln__PodGroup *pg, const char *k, const char *v) {
  Kiln__ObjectMeta__AnnotationsEntry *e = fx_alloc(sizeof(*e));
  kiln__object_meta__annotations_entry__init(e);
  e->key = fx_str(k);
  e->value = fx_str(v);
  FX_APPEND(pg->metadata->annotations, pg->metadata->n_annotations, e);
}

/* Only strictly lower priorities are victims; a PodGroup marked not preemptable is never one; a
 * gang that cannot be placed whole evicts nothing; without a plugin that votes on gang eviction
 * there are no victims. */
static void test_gangpreempt_filters(void **state) {
  (void)state;
  fx *f = full4(4, 4, 4);
  for (size_t i = 0; i < f->msg->n_pod_groups; i++)
    if (strcmp(f->msg->pod_groups[i]->metadata->name, "b") == 0)
      f->msg->pod_groups[i]->spec->priority_class_name = fx_str("high");
  fx_open(f, preempt_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(evicted_of(f, r, "b"), 0);
  assert_int_equal(evicted_of(f, r, "a"), 4); /* a is still lower */
  sch_result_free(r);
  fx_free(f);
  f = full4(4, 4, 4); /* b's PodGroup says volcano.sh/preemptable: "false": a goes */
  for (size_t i = 0; i < f->msg->n_pod_groups; i++)
    if (strcmp(f->msg->pod_groups[i]->metadata->name, "b") == 0)
      pg_annotate(f->msg->pod_groups[i], "volcano.sh/preemptable", "false");
  fx_open(f, preempt_conf);
  r = fx_run(f);
  assert_int_equal(evicted_of(f, r, "b"), 0);
  assert_int_equal(evicted_of(f, r, "a"), 4);
  sch_result_free(r);
  fx_free(f);
  f = full4(4, 4, 9); /* 9 cpu: more than the cluster */
  fx_open(f, preempt_conf);
  r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  sch_result_free(r);
  fx_free(f);
  f = full4(4, 4, 4);
  fx_open(f, "actions: \"enqueue, allocate, gangpreempt\"\n"
             "tiers:\n- plugins:\n  - name: priority\n  - name: predicates\n");
  r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  sch_result_free(r);
  fx_free(f);
}

/* gangreclaim: queue q2's gang takes back room from q1, one of q1's gangs whole; q1's own
 * starving gangs do not evict each other (same queue), and a non-reclaimable queue gives
 * nothing. */
static fx *two_queues(bool reclaimable) {
  fx *f = fx_new();
  for (int i = 1; i <= 4; i++) {
    char node[16];
    snprintf(node, sizeof(node), "n%d", i);
    fx_node(f, node, 2000, 8 * GI, 110);
  }
  Kiln__Queue *q1 = fx_queue(f, "q1", 1);
  q1->spec->has_reclaimable = 1;
  q1->spec->reclaimable = reclaimable;
  fx_queue(f, "q2", 1);
  running_gang(f, "a", "q1", 4, 4, 1);
  running_gang(f, "b", "q1", 4, 4, 3);
  fx_pg(f, "c", "q2", 4, "Inqueue");
  for (int i = 0; i < 4; i++) {
    char pod[16];
    snprintf(pod, sizeof(pod), "c-%d", i);
    fx_pod(f, pod, "c", 1000, GI, NULL);
  }
  return f;
}

static void test_gangreclaim_across_queues(void **state) {
  (void)state;
  static const char conf[] = "actions: \"enqueue, allocate, gangreclaim\"\n"
                             "tiers:\n"
                             "- plugins:\n"
                             "  - name: priority\n"
                             "  - name: gang\n"
                             "- plugins:\n"
                             "  - name: proportion\n"
                             "  - name: predicates\n";
  fx *f = two_queues(true);
  fx_open(f, conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nevicts, 4);
  assert_true(evicted_of(f, r, "a") == 4 || evicted_of(f, r, "b") == 4);
  for (size_t i = 0; i < r->nevicts; i++)
    assert_string_equal(r->evicts[i].reason, "gangreclaim");
  assert_int_equal(nominated_of(f, r, "c"), 4);
  sch_result_free(r);
  fx_free(f);
  f = two_queues(false);
  fx_open(f, conf);
  r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  sch_result_free(r);
  fx_free(f);
}

/* Two leaves (l0: n1 n2, l1: n3 n4) under a spine. Gang a runs on n1, b on n3, and c (the
 * last in job order, the first victim) on n2 and n4, across both leaves; a high gang of 4
 * waits, with a hard tier-1 topology when hard. */
static fx *two_leaves(bool hard) {
  fx *f = fx_new();
  priority_class(f, "high", 1000);
  static const char *const nodes[] = {"n1", "n2", "n3", "n4"};
  for (int i = 0; i < 4; i++)
    fx_node(f, nodes[i], 2000, 8 * GI, 110);
  Kiln__HyperNode *l0 = fx_hypernode(f, "l0", 1, NULL), *l1 = fx_hypernode(f, "l1", 1, NULL);
  fx_hn_exact(l0, "Node", "n1");
  fx_hn_exact(l0, "Node", "n2");
  fx_hn_exact(l1, "Node", "n3");
  fx_hn_exact(l1, "Node", "n4");
  Kiln__HyperNode *sp = fx_hypernode(f, "s", 2, NULL);
  fx_hn_exact(sp, "HyperNode", "l0");
  fx_hn_exact(sp, "HyperNode", "l1");
  fx_pg(f, "a", "default", 2, "Running");
  fx_pg(f, "b", "default", 2, "Running");
  fx_pg(f, "c", "default", 4, "Running");
  static const char *const pods[][2] = {{"a-0", "n1"}, {"a-1", "n1"}, {"b-0", "n3"}, {"b-1", "n3"},
                                        {"c-0", "n2"}, {"c-1", "n2"}, {"c-2", "n4"}, {"c-3", "n4"}};
  for (int i = 0; i < 8; i++) {
    char group[2] = {pods[i][0][0], 0};
    fx_pod(f, pods[i][0], group, 1000, GI, pods[i][1]);
  }
  pending_gang(f, "high", "default", 4);
  if (hard)
    fx_pg_topology(f->msg->pod_groups[f->msg->n_pod_groups - 1], "hard", 1);
  return f;
}

static bool in_l0(const char *node) {
  return strcmp(node, "n1") == 0 || strcmp(node, "n2") == 0;
}

static const char topo_conf[] = "actions: \"enqueue, allocate, gangpreempt\"\n"
                                "tiers:\n"
                                "- plugins:\n"
                                "  - name: priority\n"
                                "  - name: gang\n"
                                "- plugins:\n"
                                "  - name: predicates\n"
                                "  - name: network-topology-aware\n";

/* Hard tier 1: the domain is a leaf, so the high gang takes what l0 holds (c's two pods there,
 * then a) and goes to n1 and n2; c's pods in l1 and b stay. Without the topology the domain
 * is the cluster: c goes whole, from both leaves. Without the gradient plugin a hard gang has
 * no domain and evicts nothing. */
static void test_gangpreempt_hard_topology_one_leaf(void **state) {
  (void)state;
  fx *f = two_leaves(true);
  fx_open(f, topo_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nevicts, 4);
  assert_int_equal(evicted_of(f, r, "a"), 2);
  assert_int_equal(evicted_of(f, r, "c"), 2);
  for (size_t i = 0; i < r->nevicts; i++)
    assert_true(in_l0(f->snap->nodes[f->snap->tasks[r->evicts[i].task].node].name));
  assert_int_equal(nominated_of(f, r, "high"), 4);
  for (size_t i = 0; i < r->nnominations; i++)
    assert_true(in_l0(f->snap->nodes[r->nominations[i].node].name));
  sch_result_free(r);
  fx_free(f);
  f = two_leaves(false);
  fx_open(f, topo_conf);
  r = fx_run(f);
  assert_int_equal(r->nevicts, 4);
  assert_int_equal(evicted_of(f, r, "c"), 4);
  sch_result_free(r);
  fx_free(f);
  f = two_leaves(true);
  fx_open(f, preempt_conf);
  r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  sch_result_free(r);
  fx_free(f);
}

/* Volcano's design examples: a victim freeing 2 of the 2 GPUs needed while destroying 4 has
 * ROI 0.5, one destroying only its 2 has 1.0; 2 of 10 cpu freed and destroyed is 1.0;
 * destroying nothing (safe) is infinite. */
static void test_bundle_roi(void **state) {
  (void)state;
  sch_resource need = {.scalar = {2000}};
  sch__bundle a = {
      .type = SCH__BUNDLE_WHOLE, .local = {.scalar = {2000}}, .global = {.scalar = {4000}}};
  sch__bundle b = {
      .type = SCH__BUNDLE_WHOLE, .local = {.scalar = {2000}}, .global = {.scalar = {2000}}};
  assert_true(fabs(sch__bundle_roi(&a, &need) - 0.5) < 1e-9);
  assert_true(fabs(sch__bundle_roi(&b, &need) - 1.0) < 1e-9);
  sch_resource cpu = {.milli_cpu = 10000};
  sch__bundle d = {
      .type = SCH__BUNDLE_WHOLE, .local = {.milli_cpu = 2000}, .global = {.milli_cpu = 2000}};
  sch__bundle c = {
      .type = SCH__BUNDLE_WHOLE, .local = {.milli_cpu = 10000}, .global = {.milli_cpu = 20000}};
  assert_true(fabs(sch__bundle_roi(&d, &cpu) - 1.0) < 1e-9);
  assert_true(fabs(sch__bundle_roi(&c, &cpu) - 0.5) < 1e-9);
  sch__bundle safe = {.type = SCH__BUNDLE_SAFE, .local = {.milli_cpu = 1000}};
  assert_true(isinf(sch__bundle_roi(&safe, &cpu)));
}

static void min_task(Kiln__PodGroup *pg, const char *task, int32_t value) {
  Kiln__PodGroupSpec__MinTaskMemberEntry *e = fx_alloc(sizeof(*e));
  kiln__pod_group_spec__min_task_member_entry__init(e);
  e->key = fx_str(task);
  e->value = value;
  FX_APPEND(pg->spec->min_task_member, pg->spec->n_min_task_member, e);
}

/* The design's Job-B: driver (min 1) and 4 workers (min 3), minAvailable 4, all running: one
 * worker is safe, the driver and three workers are the whole bundle. With minAvailable 3
 * (below the roles' sum) the roles do not bind: two tasks are safe. */
static void test_bundle_roles(void **state) {
  (void)state;
  for (int32_t min = 4; min >= 3; min--) {
    fx *f = fx_new();
    fx_node(f, "n1", 8000, 8 * GI, 110);
    Kiln__PodGroup *pg = fx_pg(f, "job", "default", min, "Running");
    min_task(pg, "driver", 1);
    min_task(pg, "worker", 3);
    static const char *const pods[] = {"driver-0", "worker-0", "worker-1", "worker-2", "worker-3"};
    for (int i = 0; i < 5; i++)
      fx_pod(f, pods[i], "job", 1000, GI, "n1")->task_name = fx_str(i ? "worker" : "driver");
    fx_open(f, preempt_conf);
    int32_t local[5];
    for (int i = 0; i < 5; i++)
      local[i] = fx_task(f, pods[i]);
    sch__bundles b = {0};
    assert_int_equal(sch__bundles_add_job(f->ssn, f->snap->tasks[local[0]].job, local, 5, &b), 0);
    assert_int_equal(b.n, 2);
    assert_int_equal(b.v[0].type, SCH__BUNDLE_SAFE);
    assert_int_equal(b.v[0].ntasks, (size_t)(min == 4 ? 1 : 2));
    assert_int_equal(b.v[1].type, SCH__BUNDLE_WHOLE);
    assert_int_equal(b.v[1].ntasks, (size_t)(min == 4 ? 4 : 3));
    assert_int_equal(b.v[1].global.milli_cpu, 5000);
    for (size_t k = 0; min == 4 && k < b.v[0].ntasks; k++)
      assert_string_equal(f->snap->tasks[b.v[0].tasks[k]].pod->task_name, "worker");
    sch__bundles_free(&b);
    fx_free(f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gangpreempt_whole_gang),
      cmocka_unit_test(test_gangpreempt_safe_first_minimal),
      cmocka_unit_test(test_gangpreempt_no_whole_bundle),
      cmocka_unit_test(test_gangpreempt_filters),
      cmocka_unit_test(test_gangreclaim_across_queues),
      cmocka_unit_test(test_gangpreempt_hard_topology_one_leaf),
      cmocka_unit_test(test_bundle_roi),
      cmocka_unit_test(test_bundle_roles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
