/* The task-topology plugin on hand-built sessions: a ps/worker job with affinity lands on
 * one node though nodeorder spreads, self anti-affinity spreads though binpack packs, the
 * task-order annotation orders the tasks, the bucket scores, and a topology naming a task
 * the job does not have is ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "test_sch_plugins_fixture.h"

static void pg_annotate(Kiln__PodGroup *pg, const char *k, const char *v) {
  Kiln__ObjectMeta__AnnotationsEntry *e = fx_alloc(sizeof(*e));
  kiln__object_meta__annotations_entry__init(e);
  e->key = fx_str(k);
  e->value = fx_str(v);
  FX_APPEND(pg->metadata->annotations, pg->metadata->n_annotations, e);
}

/* A pending pod <job>-<task>-<i> of the job's PodGroup, with its volcano.sh/task-spec. */
static Kiln__Pod *task_pod(fx *f, const char *job, const char *task, int i, int64_t milli_cpu) {
  char name[64];
  snprintf(name, sizeof(name), "%s-%s-%d", job, task, i);
  Kiln__Pod *p = fx_pod(f, name, job, milli_cpu, GI, NULL);
  p->task_name = fx_str(task);
  return p;
}

/* The node each pod of the result was bound to ("" when none). */
static const char *bound_node(const fx *f, const sch_result *r, const char *pod) {
  for (size_t i = 0; i < r->nbinds; i++)
    if (strcmp(f->snap->tasks[r->binds[i].task].pod->name, pod) == 0)
      return f->snap->nodes[r->binds[i].node].name;
  return "";
}

static const char spread_yaml[] = "actions: \"allocate\"\n"
                                  "tiers:\n"
                                  "- plugins:\n"
                                  "  - name: gang\n"
                                  "- plugins:\n"
                                  "  - name: predicates\n"
                                  "  - name: nodeorder\n"
                                  "    arguments:\n"
                                  "      leastrequested.weight: 1\n";

static const char spread_tt_yaml[] = "actions: \"allocate\"\n"
                                     "tiers:\n"
                                     "- plugins:\n"
                                     "  - name: gang\n"
                                     "- plugins:\n"
                                     "  - name: predicates\n"
                                     "  - name: nodeorder\n"
                                     "    arguments:\n"
                                     "      leastrequested.weight: 1\n"
                                     "  - name: task-topology\n"
                                     "    arguments:\n"
                                     "      task-topology.weight: 10\n";

static fx *ps_worker(const char *affinity) {
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n1", 8000, 32 * GI, 110);
  fx_node(f, "n2", 8000, 32 * GI, 110);
  fx_node(f, "n3", 8000, 32 * GI, 110);
  Kiln__PodGroup *pg = fx_pg(f, "tf", "default", 3, "Inqueue");
  if (affinity)
    pg_annotate(pg, "volcano.sh/task-topology-affinity", affinity);
  task_pod(f, "tf", "ps", 0, 1000);
  task_pod(f, "tf", "worker", 0, 1000);
  task_pod(f, "tf", "worker", 1, 1000);
  return f;
}

/* leastrequested alone spreads the three pods; with "ps,worker" they share one node. */
static void test_tt_affinity_one_node(void **state) {
  (void)state;
  fx *f = ps_worker(NULL);
  fx_open(f, spread_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 3);
  assert_string_not_equal(bound_node(f, r, "tf-worker-0"), bound_node(f, r, "tf-ps-0"));
  sch_result_free(r);
  fx_free(f);

  f = ps_worker("ps,worker");
  fx_open(f, spread_tt_yaml);
  r = fx_run(f);
  assert_int_equal(r->nbinds, 3);
  const char *ps = bound_node(f, r, "tf-ps-0");
  assert_string_equal(bound_node(f, r, "tf-worker-0"), ps);
  assert_string_equal(bound_node(f, r, "tf-worker-1"), ps);
  sch_result_free(r);
  fx_free(f);
}

/* A name the job has no task of: the topology is ignored (every score 0). */
static void test_tt_invalid_ignored(void **state) {
  (void)state;
  const char *bad[] = {"ps,chief", "ps,ps", "ps,worker;worker,worker"};
  for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    fx *f = ps_worker(bad[k]);
    fx_open(f, spread_tt_yaml);
    sch_result *r = fx_run(f);
    assert_string_not_equal(bound_node(f, r, "tf-worker-0"), bound_node(f, r, "tf-ps-0"));
    sch_result_free(r);
    fx_free(f);
  }
}

static const char pack_tt_yaml[] = "actions: \"allocate\"\n"
                                   "tiers:\n"
                                   "- plugins:\n"
                                   "  - name: gang\n"
                                   "- plugins:\n"
                                   "  - name: predicates\n"
                                   "  - name: binpack\n"
                                   "  - name: task-topology\n"
                                   "    arguments:\n"
                                   "      task-topology.weight: 10\n";

/* binpack packs; a self anti-affine task's pods each get a node of their own. */
static void test_tt_self_anti_affinity_spreads(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n1", 8000, 32 * GI, 110);
  fx_node(f, "n2", 8000, 32 * GI, 110);
  fx_node(f, "n3", 8000, 32 * GI, 110);
  Kiln__PodGroup *pg = fx_pg(f, "mpi", "default", 3, "Inqueue");
  pg_annotate(pg, "volcano.sh/task-topology-anti-affinity", "worker");
  for (int i = 0; i < 3; i++)
    task_pod(f, "mpi", "worker", i, 1000);
  fx_open(f, pack_tt_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 3);
  const char *a = bound_node(f, r, "mpi-worker-0"), *b = bound_node(f, r, "mpi-worker-1"),
             *c = bound_node(f, r, "mpi-worker-2");
  assert_string_not_equal(a, b);
  assert_string_not_equal(a, c);
  assert_string_not_equal(b, c);
  sch_result_free(r);
  fx_free(f);
}

static const char tt_yaml[] = "actions: \"allocate\"\n"
                              "tiers:\n"
                              "- plugins:\n"
                              "  - name: task-topology\n";

/* The bucket's score on a node: the bucket's pods placed there plus its pending pods, over
 * the biggest bucket, times 100. */
static void test_tt_scores_and_order(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n1", 8000, 32 * GI, 110);
  fx_node(f, "n2", 8000, 32 * GI, 110);
  fx_node(f, "tiny", 500, 32 * GI, 110); /* the pod does not fit: 0 */
  Kiln__PodGroup *pg = fx_pg(f, "tf", "default", 1, "Inqueue");
  pg_annotate(pg, "volcano.sh/task-topology-affinity", "ps,worker");
  pg_annotate(pg, "volcano.sh/task-topology-task-order", "worker,ps");
  Kiln__Pod *placed = task_pod(f, "tf", "ps", 0, 1000);
  placed->node_name = fx_str("n1");
  placed->phase = KILN__POD_PHASE__POD_PHASE_RUNNING;
  task_pod(f, "tf", "ps", 1, 1000);
  task_pod(f, "tf", "worker", 0, 1000);
  task_pod(f, "tf", "other", 0, 1000); /* no topology: out of every bucket */
  fx_open(f, tt_yaml);

  /* One bucket: ps-0 (on n1) then worker-0 and ps-1 join it (max size 3). */
  int32_t nodes[3] = {0, 1, 2};
  double s[3];
  sch_session_node_scores(f->ssn, &f->snap->tasks[fx_task(f, "tf-worker-0")], nodes, 3, s);
  assert_true(s[0] == 100); /* (1 placed + 2 pending) * 100 / 3 */
  assert_true(s[1] > 66.6 && s[1] < 66.7);
  assert_true(s[2] == 0);
  sch_session_node_scores(f->ssn, &f->snap->tasks[fx_task(f, "tf-other-0")], nodes, 3, s);
  assert_true(s[0] == 0 && s[1] == 0);

  /* worker before ps (task-order), both before the pod out of a bucket. */
  const sch_task *w = &f->snap->tasks[fx_task(f, "tf-worker-0")];
  const sch_task *p = &f->snap->tasks[fx_task(f, "tf-ps-1")];
  const sch_task *o = &f->snap->tasks[fx_task(f, "tf-other-0")];
  assert_true(sch_session_task_order(f->ssn, w, p) < 0);
  assert_true(sch_session_task_order(f->ssn, p, w) > 0);
  assert_true(sch_session_task_order(f->ssn, p, o) < 0);
  assert_true(sch_session_task_order(f->ssn, o, w) > 0);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tt_affinity_one_node),
      cmocka_unit_test(test_tt_invalid_ignored),
      cmocka_unit_test(test_tt_self_anti_affinity_spreads),
      cmocka_unit_test(test_tt_scores_and_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
