/* The numa-aware plugin and its core (sch_numa.c) on Numatopology objects: the four topology
 * manager policies (none, best-effort, restricted, single-numa-node) with CPU and GPU hints,
 * Volcano's filter reasons, the score (fewest NUMA nodes best), and a gang's CPUs taken and
 * given back by the statement. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "sch_numa.h"
#include "test_sch_plugins_fixture.h"

static void policy(Kiln__NumatopoSpec *sp, const char *k, const char *v) {
  Kiln__NumatopoSpec__PoliciesEntry *e = fx_alloc(sizeof(*e));
  kiln__numatopo_spec__policies_entry__init(e);
  e->key = fx_str(k);
  e->value = fx_str(v);
  FX_APPEND(sp->policies, sp->n_policies, e);
}

static void numares(Kiln__NumatopoSpec *sp, const char *res, const char *alloc, int32_t cap) {
  Kiln__NumatopoSpec__NumaresEntry *e = fx_alloc(sizeof(*e));
  kiln__numatopo_spec__numares_entry__init(e);
  e->key = fx_str(res);
  e->value = fx_alloc(sizeof(*e->value));
  kiln__numa_resource_info__init(e->value);
  e->value->allocatable = fx_str(alloc);
  e->value->capacity = cap;
  FX_APPEND(sp->numares, sp->n_numares, e);
}

/* A node's topology: nnuma NUMA nodes (one socket each) of per CPUs (one per core), CPUs
 * numbered node by node; cpu_alloc the free ones; tm the topology manager policy. */
static Kiln__Numatopology *numatopo(const char *node, int nnuma, int per, const char *cpu_alloc,
                                    const char *tm) {
  Kiln__Numatopology *nt = fx_alloc(sizeof(*nt));
  kiln__numatopology__init(nt);
  nt->metadata = fx_meta("", node);
  nt->spec = fx_alloc(sizeof(*nt->spec));
  Kiln__NumatopoSpec *sp = nt->spec;
  kiln__numatopo_spec__init(sp);
  policy(sp, "CPUManagerPolicy", "static");
  policy(sp, "TopologyManagerPolicy", tm);
  for (int c = 0; c < nnuma * per; c++) {
    Kiln__NumatopoSpec__CpuDetailEntry *e = fx_alloc(sizeof(*e));
    kiln__numatopo_spec__cpu_detail_entry__init(e);
    char id[16];
    snprintf(id, sizeof(id), "%d", c);
    e->key = fx_str(id);
    e->value = fx_alloc(sizeof(*e->value));
    kiln__numa_cpu_info__init(e->value);
    e->value->numa = c / per;
    e->value->socket = c / per;
    e->value->core = c;
    FX_APPEND(sp->cpu_detail, sp->n_cpu_detail, e);
  }
  numares(sp, "cpu", cpu_alloc, nnuma * per);
  return nt;
}

/* GPU i on NUMA node numa[i]; gpu_alloc the free ones. */
static void gpus(Kiln__Numatopology *nt, int n, const int *numa, const char *gpu_alloc) {
  for (int g = 0; g < n; g++) {
    Kiln__NumatopoSpec__GpuDetailEntry *e = fx_alloc(sizeof(*e));
    kiln__numatopo_spec__gpu_detail_entry__init(e);
    char id[16];
    snprintf(id, sizeof(id), "%d", g);
    e->key = fx_str(id);
    e->value = fx_alloc(sizeof(*e->value));
    kiln__numa_gpu_info__init(e->value);
    e->value->numa = numa[g];
    FX_APPEND(nt->spec->gpu_detail, nt->spec->n_gpu_detail, e);
  }
  numares(nt->spec, "nvidia.com/gpu", gpu_alloc, n);
}

/* A Guaranteed pod's NUMA view: one container of cpus CPUs and ngpu GPUs. */
static Kiln__PodNuma *pod_numa(const char *pol, int64_t milli_cpu, int64_t ngpu) {
  Kiln__PodNuma *pn = fx_alloc(sizeof(*pn));
  kiln__pod_numa__init(pn);
  if (pol)
    pn->policy = fx_str(pol);
  Kiln__NumaContainer *c = fx_alloc(sizeof(*c));
  kiln__numa_container__init(c);
  c->name = fx_str("main");
  c->cpu_milli = milli_cpu;
  c->gpus = ngpu;
  FX_APPEND(pn->containers, pn->n_containers, c);
  return pn;
}

/* sch_numa_fit on one Numatopology: its answer and the NUMA nodes the CPUs span. */
static sch_numa_result fit(Kiln__Numatopology *nt, Kiln__PodNuma *pn, sch_numa_assign *a,
                           int *span) {
  sch_numa_topo t;
  assert_int_equal(sch_numa_topo_init(&t, nt), 0);
  int ctr = -1;
  sch_numa_result r = sch_numa_fit(&t, pn, a, &ctr);
  *span = sch_numa_span(&t, a);
  sch_numa_topo_close(&t);
  kiln__numatopology__free_unpacked(nt, NULL);
  kiln__pod_numa__free_unpacked(pn, NULL);
  return r;
}

/* Two NUMA nodes of 4 CPUs, 3 free on each: 4 CPUs fit no single node. */
static void test_policies_on_split_cpus(void **state) {
  (void)state;
  const char *split = "0-2,4-6";
  sch_numa_assign a;
  int span;
  assert_int_equal(fit(numatopo("n", 2, 4, split, "single-numa-node"),
                       pod_numa("single-numa-node", 4000, 0), &a, &span),
                   SCH_NUMA_NOT_ADMITTED);
  /* restricted: a 4-CPU node could hold it, so only a one-node hint is preferred: refused. */
  assert_int_equal(
      fit(numatopo("n", 2, 4, split, "restricted"), pod_numa("restricted", 4000, 0), &a, &span),
      SCH_NUMA_NOT_ADMITTED);
  /* best-effort admits the two-node hint: 4 CPUs over both nodes. */
  assert_int_equal(
      fit(numatopo("n", 2, 4, split, "best-effort"), pod_numa("best-effort", 4000, 0), &a, &span),
      SCH_NUMA_FIT);
  assert_int_equal(sch_cpuset_count(&a.cpus), 4);
  assert_int_equal(span, 2);
  /* none: admitted without a hint; the CPUs come in topology order. */
  assert_int_equal(fit(numatopo("n", 2, 4, split, "none"), pod_numa(NULL, 4000, 0), &a, &span),
                   SCH_NUMA_PASS);
}

/* With the CPUs free, every policy aligns on one NUMA node; restricted also admits a request
 * no single node could hold (its smallest covering mask is two nodes, so preferred). */
static void test_policies_aligned(void **state) {
  (void)state;
  static const char *const pols[] = {"single-numa-node", "restricted", "best-effort"};
  sch_numa_assign a;
  int span;
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(
        fit(numatopo("n", 2, 4, "0-7", pols[i]), pod_numa(pols[i], 3000, 0), &a, &span),
        SCH_NUMA_FIT);
    assert_int_equal(sch_cpuset_count(&a.cpus), 3);
    assert_int_equal(span, 1);
    assert_true(sch_cpuset_has(&a.cpus, 0)); /* the lower node wins a tie */
  }
  assert_int_equal(
      fit(numatopo("n", 2, 4, "0-7", "restricted"), pod_numa("restricted", 6000, 0), &a, &span),
      SCH_NUMA_FIT);
  assert_int_equal(span, 2);
  assert_int_equal(fit(numatopo("n", 2, 4, "0-7", "single-numa-node"),
                       pod_numa("single-numa-node", 6000, 0), &a, &span),
                   SCH_NUMA_NOT_ADMITTED);
  /* A fractional CPU request has no CPU hint (no preference): admitted, nothing pinned. */
  assert_int_equal(fit(numatopo("n", 2, 4, "0-2,4-6", "single-numa-node"),
                       pod_numa("single-numa-node", 4500, 0), &a, &span),
                   SCH_NUMA_FIT);
  assert_int_equal(sch_cpuset_count(&a.cpus), 0);
}

/* GPUs 0,1 on node 0 and 2,3 on node 1, GPU 0 taken: 2 GPUs and 2 CPUs go to node 1. */
static void test_gpu_alignment(void **state) {
  (void)state;
  static const int numa[] = {0, 0, 1, 1};
  sch_numa_assign a;
  int span;
  Kiln__Numatopology *nt = numatopo("n", 2, 4, "0-7", "single-numa-node");
  gpus(nt, 4, numa, "1-3");
  assert_int_equal(fit(nt, pod_numa("single-numa-node", 2000, 2), &a, &span), SCH_NUMA_FIT);
  assert_int_equal(a.gpus, 0xcull);
  assert_true(sch_cpuset_has(&a.cpus, 4) && sch_cpuset_has(&a.cpus, 5));
  assert_int_equal(span, 1);
  /* 3 GPUs fit no single node. */
  nt = numatopo("n", 2, 4, "0-7", "single-numa-node");
  gpus(nt, 4, numa, "0-3");
  assert_int_equal(fit(nt, pod_numa("single-numa-node", 2000, 3), &a, &span),
                   SCH_NUMA_NOT_ADMITTED);
}

/* filterNodeByPolicy's reasons, and what a pod without a policy skips. */
static void test_filter(void **state) {
  (void)state;
  sch_numa_assign a;
  int ctr;
  Kiln__PodNuma *pn = pod_numa("single-numa-node", 1000, 0);
  assert_int_equal(sch_numa_fit(NULL, pn, &a, &ctr), SCH_NUMA_NO_INFO);
  Kiln__PodNuma *none = pod_numa("none", 1000, 0);
  assert_int_equal(sch_numa_fit(NULL, none, &a, &ctr), SCH_NUMA_PASS);
  sch_numa_topo t;
  Kiln__Numatopology *nt = numatopo("n", 2, 4, "", "single-numa-node");
  assert_int_equal(sch_numa_topo_init(&t, nt), 0);
  assert_int_equal(sch_numa_fit(&t, pn, &a, &ctr), SCH_NUMA_NO_CPU);
  t.cpu_policy = "none";
  assert_int_equal(sch_numa_fit(&t, pn, &a, &ctr), SCH_NUMA_NOT_STATIC);
  assert_int_equal(sch_numa_fit(&t, none, &a, &ctr), SCH_NUMA_PASS);
  t.cpu_policy = "static";
  t.tm_policy = "best-effort";
  assert_int_equal(sch_numa_fit(&t, pn, &a, &ctr), SCH_NUMA_DIFFERENT);
  sch_numa_topo_close(&t);
  kiln__numatopology__free_unpacked(nt, NULL);
  kiln__pod_numa__free_unpacked(pn, NULL);
  kiln__pod_numa__free_unpacked(none, NULL);
  /* An unreadable cpuset makes the node one without a topology. */
  nt = numatopo("n", 1, 4, "0-x", "none");
  assert_int_equal(sch_numa_topo_init(&t, nt), KC_EINVAL);
  sch_numa_topo_close(&t);
  kiln__numatopology__free_unpacked(nt, NULL);
}

/* resReserved cpu 1 takes CPU 0 (the first by topology): 4 CPUs no longer fit node 0. */
static void test_reserved(void **state) {
  (void)state;
  Kiln__Numatopology *nt = numatopo("n", 2, 4, "0-7", "single-numa-node");
  Kiln__NumatopoSpec__ResReservedEntry *e = fx_alloc(sizeof(*e));
  kiln__numatopo_spec__res_reserved_entry__init(e);
  e->key = fx_str("cpu");
  e->value = fx_str("500m");
  FX_APPEND(nt->spec->res_reserved, nt->spec->n_res_reserved, e);
  sch_numa_assign a;
  int span;
  assert_int_equal(fit(nt, pod_numa("single-numa-node", 4000, 0), &a, &span), SCH_NUMA_FIT);
  assert_false(sch_cpuset_has(&a.cpus, 0));
  assert_true(sch_cpuset_has(&a.cpus, 4));
}

static const char numa_yaml[] = "actions: \"allocate\"\n"
                                "tiers:\n"
                                "- plugins:\n"
                                "  - name: gang\n"
                                "  - name: numa-aware\n"
                                "    arguments:\n"
                                "      weight: 2\n";

static Kiln__Pod *numa_pod(fx *f, const char *name, const char *group, int64_t cpu) {
  Kiln__Pod *p = fx_pod(f, name, group, cpu, GI, NULL);
  p->numa = pod_numa("single-numa-node", cpu, 0);
  return p;
}

/* A session: the pod goes to the node where one NUMA node holds it; elsewhere the reason. */
static void test_session_places_aligned(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "split", 8000, 64 * GI, 110);
  fx_node(f, "whole", 8000, 64 * GI, 110);
  fx_node(f, "bare", 8000, 64 * GI, 110);
  FX_APPEND(f->msg->numatopologies, f->msg->n_numatopologies,
            numatopo("split", 2, 4, "0-2,4-6", "single-numa-node"));
  FX_APPEND(f->msg->numatopologies, f->msg->n_numatopologies,
            numatopo("whole", 2, 4, "0-7", "single-numa-node"));
  fx_pg(f, "j", "default", 1, "Inqueue");
  numa_pod(f, "j-0", "j", 4000);
  fx_open(f, numa_yaml);
  const char *why;
  assert_int_equal(fx_predicate(f, "j-0", "split", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "plugin numa-aware predicates failed for task j-0 container main on "
                           "node split");
  assert_int_equal(fx_predicate(f, "j-0", "bare", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "numa info is empty");
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_string_equal(f->snap->nodes[r->binds[0].node].name, "whole");
  sch_result_free(r);
  fx_free(f);
}

/* A gang of three 4-CPU pods on a 2 x 4 node: the first two take one NUMA node each, the
 * third fits nowhere, and the gang is discarded whole: nothing binds, the CPUs come back
 * (a later single pod still fits). */
static void test_session_gang_rollback(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "n", 16000, 64 * GI, 110);
  FX_APPEND(f->msg->numatopologies, f->msg->n_numatopologies,
            numatopo("n", 2, 4, "0-7", "single-numa-node"));
  fx_pg(f, "g", "default", 3, "Inqueue");
  numa_pod(f, "g-0", "g", 4000);
  numa_pod(f, "g-1", "g", 4000);
  numa_pod(f, "g-2", "g", 4000);
  fx_pg(f, "s", "default", 1, "Inqueue");
  numa_pod(f, "s-0", "s", 4000);
  fx_open(f, numa_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_int_equal(r->binds[0].task, fx_task(f, "s-0"));
  sch_result_free(r);
  fx_free(f);
}

/* The score (util.NormalizeScore(100, reverse)): 100 - 100 x span / the largest span, times
 * the weight: one NUMA node of two scores 50 x 2, two nodes 0. */
static void test_score(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "one", 8000, 64 * GI, 110);
  fx_node(f, "two", 8000, 64 * GI, 110);
  FX_APPEND(f->msg->numatopologies, f->msg->n_numatopologies,
            numatopo("one", 2, 4, "0-7", "best-effort"));
  FX_APPEND(f->msg->numatopologies, f->msg->n_numatopologies,
            numatopo("two", 2, 4, "0-2,4-6", "best-effort"));
  fx_pg(f, "j", "default", 1, "Inqueue");
  Kiln__Pod *p = fx_pod(f, "j-0", "j", 4000, GI, NULL);
  p->numa = pod_numa("best-effort", 4000, 0);
  fx_open(f, numa_yaml);
  const char *why;
  assert_int_equal(fx_predicate(f, "j-0", "one", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "j-0", "two", &why), SCH_FIT);
  int32_t nodes[2] = {sch_snapshot_node(f->snap, "one"), sch_snapshot_node(f->snap, "two")};
  double scores[2];
  sch_session_node_scores(f->ssn, &f->snap->tasks[fx_task(f, "j-0")], nodes, 2, scores);
  assert_true(scores[0] == 100.0);
  assert_true(scores[1] == 0.0);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_policies_on_split_cpus),
      cmocka_unit_test(test_policies_aligned),
      cmocka_unit_test(test_gpu_alignment),
      cmocka_unit_test(test_filter),
      cmocka_unit_test(test_reserved),
      cmocka_unit_test(test_session_places_aligned),
      cmocka_unit_test(test_session_gang_rollback),
      cmocka_unit_test(test_score),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
