/* The resource-strategy-fit plugin on hand-built sessions: Volcano's default strategy
 * (cpu and memory LeastAllocated, weight 10), MostAllocated by wildcard, the patterns it
 * ignores, the sra score and the proportional predicate. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "test_sch_plugins_fixture.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-6)

/* Nodes "a" (empty) and "b" (a 4 cpu, 1 Gi pod on it), 8 cpu, 16 Gi, 4 GPUs each, and
 * "cpu" (8 cpu, 16 Gi, no GPU); pending pods "p" (1 cpu, 1 Gi) and "g" (1 cpu, 1 Gi, 1 GPU). */
static fx *three_nodes(void) {
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_gpu_node(f, "a", 8000, 16 * GI, 4000);
  fx_gpu_node(f, "b", 8000, 16 * GI, 4000);
  fx_node(f, "cpu", 8000, 16 * GI, 110);
  fx_pod(f, "resident", NULL, 4000, GI, "b");
  fx_pg(f, "pg", "default", 1, "Inqueue");
  fx_pod(f, "p", "pg", 1000, GI, NULL);
  Kiln__Pod *g = fx_pod(f, "g", "pg", 1000, GI, NULL);
  fx_pod_scalar(g, FX_GPU, 1000);
  return f;
}

static void scores(fx *f, const char *pod, double out[3]) {
  int32_t nodes[3] = {0, 1, 2};
  sch_session_node_scores(f->ssn, &f->snap->tasks[fx_task(f, pod)], nodes, 3, out);
}

static void test_rsf_default_least_allocated(void **state) {
  (void)state;
  fx *f = three_nodes();
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: resource-strategy-fit\n");
  double s[3];
  scores(f, "p", s);
  NEAR(s[0], (7.0 / 8 + 15.0 / 16) / 2 * 100 * 10);
  NEAR(s[1], (3.0 / 8 + 14.0 / 16) / 2 * 100 * 10);
  fx_free(f);
}

static void test_rsf_wildcard_most_allocated(void **state) {
  (void)state;
  fx *f = three_nodes();
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: resource-strategy-fit\n"
             "    arguments:\n"
             "      resourceStrategyFitWeight: 1\n"
             "      resources:\n"
             "        nvidia.com/*:\n"
             "          type: MostAllocated\n"
             "          weight: 3\n"
             "        cpu:\n"
             "          type: LeastAllocated\n"
             "          weight: 1\n");
  double s[3];
  scores(f, "g", s);
  /* memory has no entry: only the GPU (most: 1/4) and cpu (least) count. */
  NEAR(s[0], (3 * 1.0 / 4 + 7.0 / 8) / 4 * 100);
  NEAR(s[1], (3 * 1.0 / 4 + 3.0 / 8) / 4 * 100);
  NEAR(s[2], (0 + 7.0 / 8) / 4 * 100); /* no GPU there: 0, its weight still counts */
  fx_free(f);
}

/* "*" alone and a '*' not at the end are ignored: no entry is left, so nothing scores. */
static void test_rsf_invalid_patterns(void **state) {
  (void)state;
  fx *f = three_nodes();
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: resource-strategy-fit\n"
             "    arguments:\n"
             "      resources:\n"
             "        \"*\":\n"
             "          type: MostAllocated\n"
             "        nvidia.*/gpu:\n"
             "          type: MostAllocated\n");
  double s[3];
  scores(f, "g", s);
  NEAR(s[0], 0);
  NEAR(s[1], 0);
  fx_free(f);
}

/* sra keeps GPU nodes for GPU pods: a cpu pod scores 0 on them, 100 * weight elsewhere; a
 * GPU pod scores 0 where there is no GPU. */
static void test_rsf_sra(void **state) {
  (void)state;
  fx *f = three_nodes();
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: resource-strategy-fit\n"
             "    arguments:\n"
             "      resourceStrategyFitWeight: 0\n"
             "      sra:\n"
             "        enable: true\n"
             "        resources: nvidia.com/gpu\n"
             "        weight: 10\n"
             "        resourceWeight:\n"
             "          nvidia.com/gpu: 2\n");
  double s[3];
  scores(f, "p", s);
  NEAR(s[0], 0);
  NEAR(s[2], 1000);
  scores(f, "g", s);
  NEAR(s[0], 0);
  NEAR(s[2], 0);
  fx_free(f);
}

static const char proportional_yaml[] = "actions: \"allocate\"\n"
                                        "tiers:\n"
                                        "- plugins:\n"
                                        "  - name: resource-strategy-fit\n"
                                        "    arguments:\n"
                                        "      proportional:\n"
                                        "        enable: true\n"
                                        "        resources: nvidia.com/gpu\n"
                                        "        resourceProportion:\n"
                                        "          nvidia.com/gpu.cpu: 1.5\n"
                                        "          nvidia.com/gpu.memory: 2\n";

/* 4 idle GPUs hold back 6 cpu and 8 GB for GPU pods: a cpu pod may take 2 cpu, not 3. */
static void test_rsf_proportional(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_gpu_node(f, "a", 8000, 16 * GI, 4000);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  fx_pod(f, "small", "pg", 2000, GI, NULL);
  fx_pod(f, "big", "pg", 3000, GI, NULL);
  Kiln__Pod *g = fx_pod(f, "gpu", "pg", 7000, GI, NULL);
  fx_pod_scalar(g, FX_GPU, 1000);
  fx_open(f, proportional_yaml);
  const char *why;
  assert_int_equal(fx_predicate(f, "small", "a", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "big", "a", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "proportional of resource nvidia.com/gpu check failed");
  assert_int_equal(fx_predicate(f, "gpu", "a", &why), SCH_FIT);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rsf_default_least_allocated),
      cmocka_unit_test(test_rsf_wildcard_most_allocated),
      cmocka_unit_test(test_rsf_invalid_patterns),
      cmocka_unit_test(test_rsf_sra),
      cmocka_unit_test(test_rsf_proportional),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
