/* The fairness and admission plugins on hand-built sessions: drf job order (and its update
 * as tasks are allocated), proportion deserved shares (weights 1:3 on a saturated cluster,
 * capability, guarantee), its queue callbacks and enqueue gate, and overcommit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "test_sch_plugins_fixture.h"

static void test_drf_order(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "big", "default", 1, "Running");
  fx_pg(f, "small", "default", 1, "Running");
  fx_node(f, "n1", 10000, 100 * GI, 110);
  fx_node(f, "n2", 10000, 100 * GI, 110);
  /* big: 4 cpu of 20 (share .2); small: 1 cpu but 30Gi of 200Gi (share .15) */
  fx_pod(f, "b1", "big", 2000, GI, "n1");
  fx_pod(f, "b2", "big", 2000, GI, "n1");
  fx_pod(f, "s1", "small", 1000, 30 * GI, "n2");
  fx_pod(f, "s2", "small", 4000, GI, NULL);
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: drf\n");
  const sch_job *big = fx_job(f, "big"), *small = fx_job(f, "small");
  assert_true(sch_session_job_order(f->ssn, small, big) < 0);
  assert_true(sch_session_job_order(f->ssn, big, small) > 0);

  /* Allocating s2 (4 cpu) lifts small to 5/20 = .25 > .2: big goes first now. */
  sch_statement *st = sch_statement_new(f->ssn);
  assert_non_null(st);
  assert_int_equal(sch_statement_allocate(st, fx_task(f, "s2"), sch_snapshot_node(f->snap, "n2")),
                   0);
  assert_true(sch_session_job_order(f->ssn, big, small) < 0);
  /* Discarding gives the share back. */
  sch_statement_discard(st);
  assert_true(sch_session_job_order(f->ssn, small, big) < 0);
  sch_statement_free(st);
  fx_free(f);
}

static const char proportion_yaml[] = "actions: \"enqueue, allocate\"\n"
                                      "tiers:\n"
                                      "- plugins:\n"
                                      "  - name: proportion\n";

/* Every queue asks for far more than the 8 cpu / 16Gi cluster. */
static fx *saturated(int32_t w1, int32_t w2, Kiln__Queue **q1, Kiln__Queue **q2) {
  fx *f = fx_new();
  *q1 = fx_queue(f, "q1", w1);
  *q2 = fx_queue(f, "q2", w2);
  fx_queue(f, "default", 1);
  fx_pg(f, "j1", "q1", 1, "Inqueue");
  fx_pg(f, "j2", "q2", 1, "Inqueue");
  fx_node(f, "n1", 4000, 8 * GI, 110);
  fx_node(f, "n2", 4000, 8 * GI, 110);
  char name[32];
  for (int i = 0; i < 10; i++) {
    snprintf(name, sizeof(name), "a%d", i);
    fx_pod(f, name, "j1", 2000, 4 * GI, NULL);
    snprintf(name, sizeof(name), "b%d", i);
    fx_pod(f, name, "j2", 2000, 4 * GI, NULL);
  }
  return f;
}

static void test_proportion_weights(void **state) {
  (void)state;
  Kiln__Queue *q1, *q2;
  fx *f = saturated(1, 3, &q1, &q2);
  fx_open(f, proportion_yaml);
  const sch_queue *s1 = fx_squeue(f, "q1"), *s2 = fx_squeue(f, "q2");
  assert_int_equal(s1->deserved.milli_cpu, 2000);
  assert_int_equal(s1->deserved.memory, 4 * GI);
  assert_int_equal(s2->deserved.milli_cpu, 6000);
  assert_int_equal(s2->deserved.memory, 12 * GI);
  /* Nothing allocated: no queue is overused; q1 has room for exactly one 2-cpu task. */
  assert_false(sch_session_overused(f->ssn, s1));
  const sch_task *a0 = &f->snap->tasks[fx_task(f, "a0")];
  assert_true(sch_session_allocatable(f->ssn, s1, a0));

  /* After one task in q1 it is full (share 1) and overused; q2 comes first. */
  sch_statement *st = sch_statement_new(f->ssn);
  assert_non_null(st);
  assert_int_equal(sch_statement_allocate(st, fx_task(f, "a0"), sch_snapshot_node(f->snap, "n1")),
                   0);
  assert_true(sch_session_overused(f->ssn, s1));
  assert_false(sch_session_allocatable(f->ssn, s1, &f->snap->tasks[fx_task(f, "a1")]));
  assert_true(sch_session_queue_order(f->ssn, s2, s1) < 0);
  sch_statement_discard(st);
  assert_false(sch_session_overused(f->ssn, s1));
  sch_statement_free(st);
  fx_free(f);
}

static void test_proportion_capability_and_guarantee(void **state) {
  (void)state;
  Kiln__Queue *q1, *q2;
  fx *f = saturated(1, 3, &q1, &q2);
  /* q2 may use at most 4 cpu: q1 takes what q2 cannot. */
  fx_queue_capability(q2, 4000, 0);
  fx_open(f, proportion_yaml);
  assert_int_equal(fx_squeue(f, "q1")->deserved.milli_cpu, 4000);
  assert_int_equal(fx_squeue(f, "q2")->deserved.milli_cpu, 4000);
  fx_free(f);

  f = saturated(1, 3, &q1, &q2);
  /* q1 is guaranteed 3 cpu: its deserved never drops below. */
  fx_queue_guarantee(q1, 3000, 0);
  fx_open(f, proportion_yaml);
  assert_true(fx_squeue(f, "q1")->deserved.milli_cpu >= 3000);
  assert_true(fx_squeue(f, "q1")->deserved.milli_cpu + fx_squeue(f, "q2")->deserved.milli_cpu <=
              8000 + SCH_MIN_MILLI_CPU);
  fx_free(f);
}

/* A queue whose request is small is met at its request; the rest goes to the other one. */
static void test_proportion_request_bound(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "q1", 1);
  fx_queue(f, "q2", 1);
  fx_queue(f, "default", 1);
  fx_pg(f, "j1", "q1", 1, "Inqueue");
  fx_pg(f, "j2", "q2", 1, "Inqueue");
  fx_node(f, "n1", 8000, 16 * GI, 110);
  fx_pod(f, "a", "j1", 1000, 2 * GI, NULL);
  for (int i = 0; i < 8; i++) {
    char name[16];
    snprintf(name, sizeof(name), "b%d", i);
    fx_pod(f, name, "j2", 2000, 4 * GI, NULL);
  }
  fx_open(f, proportion_yaml);
  assert_int_equal(fx_squeue(f, "q1")->deserved.milli_cpu, 1000);
  assert_int_equal(fx_squeue(f, "q1")->deserved.memory, 2 * GI);
  assert_int_equal(fx_squeue(f, "q2")->deserved.milli_cpu, 7000);
  assert_int_equal(fx_squeue(f, "q2")->deserved.memory, 14 * GI);
  fx_free(f);
}

static void test_proportion_enqueue(void **state) {
  (void)state;
  fx *f = fx_new();
  Kiln__Queue *q = fx_queue(f, "q", 1);
  fx_queue_capability(q, 4000, 0);
  fx_queue(f, "default", 1);
  fx_node(f, "n1", 16000, 64 * GI, 110);
  Kiln__PodGroup *running = fx_pg(f, "running", "q", 1, "Running");
  fx_pg_min_resources(running, 1000, GI);
  fx_pod(f, "r", "running", 1000, GI, "n1");
  Kiln__PodGroup *p1 = fx_pg(f, "p1", "q", 1, "Pending");
  fx_pg_min_resources(p1, 2000, GI);
  Kiln__PodGroup *p2 = fx_pg(f, "p2", "q", 1, "Pending");
  fx_pg_min_resources(p2, 2000, GI);
  fx_pg(f, "nomin", "q", 1, "Pending");
  fx_open(f, proportion_yaml);
  /* 1 allocated + 2 fits 4; a second 2 would make 5 > 4. */
  assert_true(sch_session_job_enqueueable(f->ssn, fx_job(f, "p1")));
  assert_false(sch_session_job_enqueueable(f->ssn, fx_job(f, "p2")));
  assert_true(sch_session_job_enqueueable(f->ssn, fx_job(f, "nomin")));
  fx_free(f);
}

static void test_overcommit(void **state) {
  (void)state;
  static const char yaml[] = "actions: \"enqueue\"\n"
                             "tiers:\n"
                             "- plugins:\n"
                             "  - name: overcommit\n";
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n1", 5000, 10 * GI, 110);
  fx_node(f, "n2", 5000, 10 * GI, 110);
  fx_node(f, "down", 100000, 100 * GI, 110)->ready = 0; /* not in the session's cluster */
  Kiln__PodGroup *in = fx_pg(f, "in", "default", 1, "Inqueue");
  fx_pg_min_resources(in, 6000, GI);
  Kiln__PodGroup *a = fx_pg(f, "a", "default", 1, "Pending");
  fx_pg_min_resources(a, 6000, GI);
  Kiln__PodGroup *b = fx_pg(f, "b", "default", 1, "Pending");
  fx_pg_min_resources(b, 1000, GI);
  fx_pg(f, "nomin", "default", 1, "Pending");
  fx_open(f, yaml);
  /* idle = 10 cpu * 1.2 = 12; inqueue 6 + 6 = 12 fits exactly. */
  assert_true(sch_session_job_enqueueable(f->ssn, fx_job(f, "a")));
  sch_session_job_enqueued(f->ssn, fx_job(f, "a"));
  assert_false(sch_session_job_enqueueable(f->ssn, fx_job(f, "b")));
  assert_true(sch_session_job_enqueueable(f->ssn, fx_job(f, "nomin")));
  fx_free(f);

  /* Factor 1: the same job no longer fits (6 + 6 > 10). */
  f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n1", 5000, 10 * GI, 110);
  fx_node(f, "n2", 5000, 10 * GI, 110);
  in = fx_pg(f, "in", "default", 1, "Inqueue");
  fx_pg_min_resources(in, 6000, GI);
  a = fx_pg(f, "a", "default", 1, "Pending");
  fx_pg_min_resources(a, 6000, GI);
  fx_open(f, "actions: \"enqueue\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: overcommit\n"
             "    arguments:\n"
             "      overcommit-factor: 1.0\n");
  assert_false(sch_session_job_enqueueable(f->ssn, fx_job(f, "a")));
  fx_free(f);
}

/* An admitted gang that holds a saturated amount of a resource (example.com/x: 8E, past what
 * Kiln keeps) leaves the cluster's room in that resource at the int64 floor; a gang that asks
 * only for cpu and memory is still compared in cpu and memory alone (Volcano
 * LessEqualWithDimension). Before, every later gang was refused. */
static void test_overcommit_other_dimension(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n1", 4000, 8 * GI, 110);
  Kiln__PodGroup *huge = fx_pg(f, "huge", "default", 1, "Inqueue");
  fx_pg_min_resources(huge, 0, 0);
  fx_res_scalar(huge->spec->min_resources, "example.com/x", INT64_MAX);
  Kiln__PodGroup *plain = fx_pg(f, "plain", "default", 1, "Pending");
  fx_pg_min_resources(plain, 1000, GI);
  Kiln__PodGroup *wants_x = fx_pg(f, "wants-x", "default", 1, "Pending");
  fx_pg_min_resources(wants_x, 1000, GI);
  fx_res_scalar(wants_x->spec->min_resources, "example.com/x", 1000);
  fx_open(f, "actions: \"enqueue\"\ntiers:\n- plugins:\n  - name: overcommit\n");
  assert_true(sch_session_job_enqueueable(f->ssn, fx_job(f, "plain")));
  /* The resource the huge gang holds is still refused to a gang that asks for it. */
  assert_false(sch_session_job_enqueueable(f->ssn, fx_job(f, "wants-x")));
  fx_free(f);
}

/* overcommit-factor.<resource> scales one resource, overcommit-factor the others; nodes whose
 * allocatable is near the int64 bound scale without overflow (saturating). */
static void test_overcommit_resource_factors(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n1", 10000, INT64_MAX - 1, 110);
  Kiln__PodGroup *cpu = fx_pg(f, "cpu", "default", 1, "Pending");
  fx_pg_min_resources(cpu, 11000, GI);
  Kiln__PodGroup *mem = fx_pg(f, "mem", "default", 1, "Pending");
  fx_pg_min_resources(mem, 1000, INT64_MAX / 2);
  fx_open(f, "actions: \"enqueue\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: overcommit\n"
             "    arguments:\n"
             "      overcommit-factor: 2.0\n"
             "      overcommit-factor.cpu: 1.0\n");
  /* cpu: 10 * 1.0 = 10 < 11; memory: 2 * (2^63 - 2) saturates, so half of it fits. */
  assert_false(sch_session_job_enqueueable(f->ssn, fx_job(f, "cpu")));
  assert_true(sch_session_job_enqueueable(f->ssn, fx_job(f, "mem")));
  fx_free(f);

  /* A factor below 1 for one resource falls back to 1.2 (logged), as Volcano's validate. */
  f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n1", 10000, 10 * GI, 110);
  cpu = fx_pg(f, "cpu", "default", 1, "Pending");
  fx_pg_min_resources(cpu, 11500, GI);
  fx_open(f, "actions: \"enqueue\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: overcommit\n"
             "    arguments:\n"
             "      overcommit-factor.cpu: 0.5\n");
  assert_true(sch_session_job_enqueueable(f->ssn, fx_job(f, "cpu")));
  fx_free(f);
}

/* The whole default configuration on a saturated cluster: the allocate action honours the
 * 1:3 split proportion computes (2 and 6 of 8 one-cpu slots). */
static void test_weights_split_binds(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "q1", 1);
  fx_queue(f, "q2", 3);
  fx_queue(f, "default", 1);
  fx_pg(f, "j1", "q1", 1, "Inqueue");
  fx_pg(f, "j2", "q2", 1, "Inqueue");
  for (int i = 0; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof(name), "n%d", i);
    fx_node(f, name, 2000, 4 * GI, 110);
  }
  for (int i = 0; i < 10; i++) {
    char name[16];
    snprintf(name, sizeof(name), "a%d", i);
    fx_pod(f, name, "j1", 1000, 2 * GI, NULL);
    snprintf(name, sizeof(name), "b%d", i);
    fx_pod(f, name, "j2", 1000, 2 * GI, NULL);
  }
  fx_open(f, "actions: \"enqueue, allocate, backfill\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: priority\n"
             "  - name: gang\n"
             "  - name: conformance\n"
             "- plugins:\n"
             "  - name: overcommit\n"
             "  - name: drf\n"
             "  - name: predicates\n"
             "  - name: proportion\n"
             "  - name: nodeorder\n"
             "  - name: binpack\n");
  assert_int_equal(sch_session_run(f->ssn), 0);
  sch_result *r = NULL;
  assert_int_equal(sch_session_close(f->ssn, &r), 0);
  f->ssn = NULL;
  int per_queue[2] = {0, 0};
  int32_t q1 = sch_snapshot_queue(f->snap, "q1");
  for (size_t i = 0; i < r->nbinds; i++) {
    const sch_task *t = &f->snap->tasks[r->binds[i].task];
    per_queue[f->snap->jobs[t->job].queue == q1 ? 0 : 1]++;
  }
  assert_int_equal(per_queue[0], 2);
  assert_int_equal(per_queue[1], 6);
  sch_result_free(r);
  fx_free(f);
}

/* The predicates' reasons reach the PodGroup condition through the gang plugin, counted per
 * node as kube-scheduler words them. */
static void test_fit_message(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 2, "Inqueue");
  fx_node(f, "n0", 1000, 4 * GI, 110);
  fx_node(f, "n1", 1000, 4 * GI, 110);
  Kiln__Node *g = fx_node(f, "n2", 8000, 16 * GI, 110);
  fx_node_taint(g, "gpu", "true", KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE);
  fx_pod(f, "p0", "pg", 2000, GI, NULL);
  fx_pod(f, "p1", "pg", 2000, GI, NULL);
  fx_open(f, "actions: \"enqueue, allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: gang\n"
             "- plugins:\n"
             "  - name: predicates\n"
             "  - name: nodeorder\n");
  assert_int_equal(sch_session_run(f->ssn), 0);
  sch_result *r = NULL;
  assert_int_equal(sch_session_close(f->ssn, &r), 0);
  f->ssn = NULL;
  assert_int_equal(r->nbinds, 0);
  const char *msg = NULL;
  for (size_t i = 0; i < r->npod_groups; i++) {
    if (r->pod_groups[i].has_condition)
      msg = r->pod_groups[i].condition.message;
  }
  assert_non_null(msg);
  /* The gang: the one node big enough is tainted, so the pod fits no node it may use. */
  assert_string_equal(msg, "2/2 tasks in gang unschedulable: pod requests 2 cpu; the largest "
                           "node allocates 1");
  /* The pod that was tried: kube-scheduler's reasons per node, sorted as strings. */
  const char *why = NULL;
  for (size_t i = 0; i < r->nwhy; i++)
    if (strstr(r->why[i].message, "nodes are available"))
      why = r->why[i].message;
  assert_non_null(why);
  assert_non_null(strstr(why, "0/3 nodes are available: "));
  assert_non_null(strstr(why, "2 Insufficient cpu"));
  assert_non_null(strstr(why, "1 node(s) had untolerated taint {gpu: true}"));
  sch_result_free(r);
  fx_free(f);
}

/* drf Preemptable: a victim stays one while its job's share after losing it is still above the
 * preemptor job's share after gaining the request. */
static void test_drf_preemptable(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "big", "default", 1, "Running");
  fx_pg(f, "small", "default", 1, "Running");
  fx_node(f, "n1", 10000, 100 * GI, 110);
  fx_node(f, "n2", 10000, 100 * GI, 110);
  fx_pod(f, "b1", "big", 4000, GI, "n1");
  fx_pod(f, "b2", "big", 4000, GI, "n1");
  fx_pod(f, "s", "small", 2000, GI, NULL);
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: drf\n");
  /* small with s: 2/20 = .1. big without b1: 4/20 = .2 (victim); without b2 too: 0. */
  int32_t cands[2] = {fx_task(f, "b1"), fx_task(f, "b2")}, victims[2];
  int n = sch_session_preemptable(f->ssn, &f->snap->tasks[fx_task(f, "s")], cands, 2, victims);
  assert_int_equal(n, 1);
  assert_int_equal(victims[0], cands[0]);
  fx_free(f);
}

/* proportion Reclaimable: tasks of a queue above its deserved share are victims until the
 * queue is back at it. */
static void test_proportion_reclaimable(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "q1", 1);
  fx_queue(f, "q2", 1);
  fx_queue(f, "default", 1);
  fx_pg(f, "j1", "q1", 1, "Running");
  fx_pg(f, "j2", "q2", 1, "Inqueue");
  fx_node(f, "n1", 8000, 16 * GI, 110);
  fx_pod(f, "a0", "j1", 2000, 2 * GI, "n1");
  fx_pod(f, "a1", "j1", 2000, 2 * GI, "n1");
  fx_pod(f, "a2", "j1", 2000, 2 * GI, "n1");
  for (int i = 0; i < 10; i++) {
    char name[16];
    snprintf(name, sizeof(name), "b%d", i);
    fx_pod(f, name, "j2", 2000, 2 * GI, NULL);
  }
  fx_open(f, proportion_yaml);
  /* q1 deserves 4 cpu and holds 6: one 2-cpu task can go. */
  assert_int_equal(fx_squeue(f, "q1")->deserved.milli_cpu, 4000);
  int32_t cands[3] = {fx_task(f, "a0"), fx_task(f, "a1"), fx_task(f, "a2")}, victims[3];
  int n = sch_session_reclaimable(f->ssn, &f->snap->tasks[fx_task(f, "b0")], cands, 3, victims);
  assert_int_equal(n, 1);
  assert_int_equal(victims[0], cands[0]);
  assert_true(sch_session_overused(f->ssn, fx_squeue(f, "q1")));
  assert_false(sch_session_overused(f->ssn, fx_squeue(f, "q2")));
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_drf_order),
      cmocka_unit_test(test_proportion_weights),
      cmocka_unit_test(test_proportion_capability_and_guarantee),
      cmocka_unit_test(test_proportion_request_bound),
      cmocka_unit_test(test_proportion_enqueue),
      cmocka_unit_test(test_overcommit),
      cmocka_unit_test(test_overcommit_other_dimension),
      cmocka_unit_test(test_overcommit_resource_factors),
      cmocka_unit_test(test_weights_split_binds),
      cmocka_unit_test(test_fit_message),
      cmocka_unit_test(test_drf_preemptable),
      cmocka_unit_test(test_proportion_reclaimable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
