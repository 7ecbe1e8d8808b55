/* The usage plugin on hand-built sessions (a node over a threshold takes no pod, scores by
 * load, stale or missing figures pass), and the shell's reading of Prometheus and
 * Elasticsearch answers (sch_usage.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "sch_usage.h"
#include "test_sch_plugins_fixture.h"

/* The snapshot's time, Unix seconds (fx_new). */
#define FX_NOW 1795953600LL

static void usage(fx *f, const char *node, double cpu, double mem, int64_t age_s) {
  Kiln__NodeUsage *u = fx_alloc(sizeof(*u));
  kiln__node_usage__init(u);
  u->node = fx_str(node);
  u->cpu = cpu;
  u->memory = mem;
  u->metrics_time = FX_NOW - age_s;
  FX_APPEND(f->msg->node_usages, f->msg->n_node_usages, u);
}

static const char usage_yaml[] = "actions: \"allocate\"\n"
                                 "tiers:\n"
                                 "- plugins:\n"
                                 "  - name: gang\n"
                                 "  - name: usage\n"
                                 "    arguments:\n"
                                 "      usage.weight: 2\n"
                                 "      thresholds:\n"
                                 "        cpu: 70\n"
                                 "        mem: 60\n";

static fx *four_nodes(const char *yaml) {
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_node(f, "hot-cpu", 8000, 32 * GI, 110);
  fx_node(f, "hot-mem", 8000, 32 * GI, 110);
  fx_node(f, "stale", 8000, 32 * GI, 110);
  fx_node(f, "cool", 8000, 32 * GI, 110);
  usage(f, "hot-cpu", 90, 10, 10);
  usage(f, "hot-mem", 10, 61, 10);
  usage(f, "stale", 99, 99, 301); /* older than 5 minutes: not acted on */
  usage(f, "cool", 30, 50, 10);
  fx_pg(f, "j", "default", 1, "Inqueue");
  fx_pod(f, "j-0", "j", 1000, GI, NULL);
  fx_open(f, yaml);
  return f;
}

static void test_thresholds(void **state) {
  (void)state;
  fx *f = four_nodes(usage_yaml);
  const char *why;
  assert_int_equal(fx_predicate(f, "j-0", "hot-cpu", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "the CPU load of the node exceeds the upper limit.");
  assert_int_equal(fx_predicate(f, "j-0", "hot-mem", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "the memory load of the node exceeds the upper limit.");
  assert_int_equal(fx_predicate(f, "j-0", "stale", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "j-0", "cool", &why), SCH_FIT);
  fx_free(f);
}

/* ((100-30)/100 x 1 + (100-50)/100 x 1) / 2 x 100 x 2 = 120; stale figures score 0. */
static void test_score(void **state) {
  (void)state;
  fx *f = four_nodes(usage_yaml);
  int32_t nodes[2] = {sch_snapshot_node(f->snap, "cool"), sch_snapshot_node(f->snap, "stale")};
  double scores[2];
  sch_session_node_scores(f->ssn, &f->snap->tasks[fx_task(f, "j-0")], nodes, 2, scores);
  assert_true(scores[0] > 119.999 && scores[0] < 120.001);
  assert_true(scores[1] == 0.0);
  fx_free(f);
}

/* Volcano's defaults: 80 for both; a threshold that is not an integer reads as 0, so every
 * node with figures is over it; enablePredicate false keeps only the score. */
static void test_defaults_and_switch(void **state) {
  (void)state;
  const char *why;
  fx *f = four_nodes("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: usage\n");
  assert_int_equal(fx_predicate(f, "j-0", "hot-cpu", &why), SCH_UNRESOLVABLE);
  assert_int_equal(fx_predicate(f, "j-0", "hot-mem", &why), SCH_FIT); /* 61 <= 80 */
  fx_free(f);
  f = four_nodes("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: usage\n    arguments:\n"
                 "      thresholds:\n        cpu: 50.5\n");
  assert_int_equal(fx_predicate(f, "j-0", "cool", &why), SCH_UNRESOLVABLE);
  fx_free(f);
  f = four_nodes("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: usage\n"
                 "    enablePredicate: false\n");
  assert_int_equal(fx_predicate(f, "j-0", "hot-cpu", &why), SCH_FIT);
  fx_free(f);
}

/* A whole session: the pod lands on the cool node, whatever the others' order. */
static void test_session(void **state) {
  (void)state;
  fx *f = four_nodes(usage_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  const char *n = f->snap->nodes[r->binds[0].node].name;
  assert_true(strcmp(n, "cool") == 0 || strcmp(n, "stale") == 0);
  assert_string_equal(n, "cool"); /* 120 against 0 */
  sch_result_free(r);
  fx_free(f);
}

static void test_parse_answers(void **state) {
  (void)state;
  double v = -1, cpu = -1, mem = -1;
  assert_true(sch_usage_prom_value("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                                   "\"result\":[{\"metric\":{\"instance\":\"n\"},\"value\":"
                                   "[1795953600.5,\"37.25\"]}]}}",
                                   &v));
  assert_true(v == 37.25);
  assert_false(sch_usage_prom_value("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                                    "\"result\":[]}}",
                                    &v));
  assert_false(sch_usage_prom_value("{\"data\":{\"resultType\":\"matrix\",\"result\":[{"
                                    "\"values\":[[1,\"2\"]]}]}}",
                                    &v));
  assert_false(sch_usage_prom_value("not json", &v));
  assert_true(sch_usage_es_values("{\"aggregations\":{\"cpu\":{\"value\":0.42},\"mem\":"
                                  "{\"value\":null}}}",
                                  &cpu, &mem));
  assert_true(cpu > 41.999 && cpu < 42.001);
  assert_true(mem == 0.0);
  assert_false(sch_usage_es_values("{\"error\":\"index_not_found\"}", &cpu, &mem));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thresholds),          cmocka_unit_test(test_score),
      cmocka_unit_test(test_defaults_and_switch), cmocka_unit_test(test_session),
      cmocka_unit_test(test_parse_answers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
