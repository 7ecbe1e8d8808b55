/* The scheduler's job, queue, plugin and stage metrics: what the session decides (drf's job
 * shares, gang's retries, proportion's queue share, request, inqueue and overused answer, the
 * plugin and stage timings with an injected clock) and what sch_metrics writes from it into
 * a registry, including the removal of a job's series once it is gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_metrics.h"
#include "sch_framework.h"
#include "sch_metrics.h"
#include "test_sch_plugins_fixture.h"

static const char conf[] = "actions: \"enqueue, allocate, backfill\"\n"
                           "tiers:\n"
                           "- plugins:\n"
                           "  - name: priority\n"
                           "  - name: gang\n"
                           "  - name: conformance\n"
                           "- plugins:\n"
                           "  - name: drf\n"
                           "  - name: predicates\n"
                           "  - name: proportion\n"
                           "  - name: nodeorder\n";

/* A clock that moves 1 ms every time it is read. */
static uint64_t fake_ns;
static uint64_t fake_clock(void) {
  fake_ns += 1000000;
  return fake_ns;
}

/* Two nodes of 2 cpu; job "small" (one pod of 1 cpu) fits, gang "big" (two pods of 3 cpu)
 * does not; both in queue q (weight 3). */
static fx *scenario(bool timed) {
  fx *f = fx_new();
  fx_node(f, "n1", 2000, 8 * GI, 110);
  fx_node(f, "n2", 2000, 8 * GI, 110);
  fx_queue(f, "q", 3);
  fx_pg(f, "small", "q", 1, "Inqueue");
  fx_pod(f, "small-0", "small", 1000, GI, NULL);
  Kiln__PodGroup *big = fx_pg(f, "big", "q", 2, "Inqueue");
  fx_pg_min_resources(big, 6000, 2 * GI);
  fx_pod(f, "big-0", "big", 3000, GI, NULL);
  fx_pod(f, "big-1", "big", 3000, GI, NULL);
  char err[256] = "";
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  assert_int_equal(sch_conf_parse(conf, strlen(conf), &f->conf, err, sizeof(err)), 0);
  sch_session_options o = SCH_SESSION_OPTIONS_DEFAULT;
  if (timed) {
    o.clock_ns = fake_clock;
    o.stage_bounds = sch_metrics_buckets_stage;
    o.nstage_bounds = SCH_METRICS_STAGE_BUCKETS;
  }
  assert_int_equal(sch_session_open(f->snap, f->conf, &o, &f->ssn), 0);
  return f;
}

static void test_session_decides_the_values(void **state) {
  (void)state;
  fx *f = scenario(true);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  /* Every configured plugin was timed at open and close, in tier order. */
  assert_int_equal(r->nplugin_times, 7);
  assert_string_equal(r->plugin_times[0].plugin, "priority");
  assert_string_equal(r->plugin_times[3].plugin, "drf");
  for (size_t i = 0; i < r->nplugin_times; i++)
    assert_true(r->plugin_times[i].open_ns >= 1000000 && r->plugin_times[i].close_ns >= 1000000);
  /* Each node search is one Predicate observation, the two-node scoring one Scoring. */
  assert_true(r->stages[SCH_STAGE_PREDICATE].n >= 2);
  assert_true(r->stages[SCH_STAGE_SCORING].n >= 1);
  uint64_t sum = 0;
  for (int b = 0; b <= SCH_METRICS_STAGE_BUCKETS; b++)
    sum += r->stages[SCH_STAGE_PREDICATE].counts[b];
  assert_true(sum == r->stages[SCH_STAGE_PREDICATE].n);
  /* drf: small holds 1 of the cluster's 4 cpu; big holds nothing. */
  const sch_job *small = fx_job(f, "small"), *big = fx_job(f, "big");
  assert_true(small->has_share && fabs(small->share - 0.25) < 1e-9);
  assert_true(big->has_share && big->share == 0);
  /* gang: big was not ready at close, a retry; small was. */
  assert_true(big->retried);
  assert_false(small->retried);
  assert_int_equal(big->unready, 2);
  assert_int_equal(small->unready, 0);
  /* proportion: the queue's request is every pod's, its weight is reported, big's
   * minResources are inqueue (its PodGroup is Inqueue), and allocate asked whether it is
   * overused (deserved 4 cpu, nothing allocated yet: no). */
  const sch_queue *q = fx_squeue(f, "q");
  assert_true(q->has_share && q->has_weight);
  assert_int_equal(q->inqueue.milli_cpu, 6000);
  assert_int_equal(q->overused, 0);
  assert_int_equal(q->request.milli_cpu, 7000);
  assert_int_equal(q->request.memory, 3 * GI);
  assert_int_equal(q->weight, 3);
  assert_true(q->share > 0);
  sch_result_free(r);
  fx_free(f);
}

static void test_no_clock_no_timings(void **state) {
  (void)state;
  fx *f = scenario(false);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nplugin_times, 0);
  assert_null(r->plugin_times);
  assert_int_equal(r->stages[SCH_STAGE_PREDICATE].n, 0);
  assert_int_equal(r->stages[SCH_STAGE_SCORING].n, 0);
  assert_int_equal(r->nbinds, 1); /* the same decisions */
  sch_result_free(r);
  fx_free(f);
}

static double value(kc_metrics *reg, const char *name, const char *const *labels) {
  kc_metric *m = kc_metrics_find(reg, name);
  assert_non_null(m);
  kc_series *s;
  assert_int_equal(kc_metric_series(m, labels, &s), 0);
  return kc_series_value(s);
}

static unsigned long long count(kc_metrics *reg, const char *name, const char *const *labels) {
  kc_metric *m = kc_metrics_find(reg, name);
  assert_non_null(m);
  kc_series *s;
  assert_int_equal(kc_metric_series(m, labels, &s), 0);
  return kc_series_count(s);
}

static bool rendered(kc_metrics *reg, const char *needle) {
  char *out;
  size_t len;
  assert_int_equal(kc_metrics_render(reg, &out, &len), 0);
  bool found = strstr(out, needle) != NULL;
  free(out);
  return found;
}

#define L(...) ((const char *const[]){__VA_ARGS__})

static void test_metrics_written(void **state) {
  (void)state;
  kc_metrics *reg;
  assert_int_equal(kc_metrics_new(&reg), 0);
  sch_metrics m;
  assert_int_equal(sch_metrics_init(&m, reg), 0);
  fx *f = scenario(true);
  sch_result *r = fx_run(f);
  /* 2026-11-29T12:00:00Z; the PodGroups were created two hours before. */
  int64_t now_ms = 1795953600LL * 1000;
  sch_metrics_session(&m, f->snap, r, now_ms);
  assert_true(fabs(value(reg, "volcano_job_share", L("ns", "small")) - 0.25) < 1e-9);
  assert_true(value(reg, "volcano_job_share", L("ns", "big")) == 0);
  assert_true(value(reg, "volcano_job_retry_counts", L("big")) == 1);
  assert_true(value(reg, "volcano_unschedule_task_count", L("big")) == 2);
  assert_true(value(reg, "volcano_unschedule_task_count", L("small")) == 0);
  assert_true(value(reg, "volcano_unschedule_job_count", NULL) == 1);
  assert_true(value(reg, "volcano_queue_request_milli_cpu", L("q")) == 7000);
  assert_true(value(reg, "volcano_queue_request_memory_bytes", L("q")) == (double)(3 * GI));
  assert_true(value(reg, "volcano_queue_weight", L("q")) == 3);
  assert_true(value(reg, "volcano_queue_share", L("q")) > 0);
  assert_true(value(reg, "volcano_queue_inqueue_milli_cpu", L("q")) == 6000);
  assert_true(value(reg, "volcano_queue_overused", L("q")) == 0);
  /* The bound job: two hours from creation to its task's allocation. */
  assert_true(value(reg, "volcano_e2e_job_scheduling_duration", L("small", "q", "ns")) ==
              2 * 3600 * 1000.0);
  assert_true(value(reg, "volcano_e2e_job_scheduling_last_time", L("small", "q", "ns")) ==
              1795953600.0);
  assert_int_equal(count(reg, "volcano_e2e_job_scheduling_latency_milliseconds", NULL), 1);
  assert_int_equal(
      count(reg, "volcano_plugin_scheduling_latency_milliseconds", L("drf", "OnSessionOpen")), 1);
  assert_int_equal(
      count(reg, "volcano_plugin_scheduling_latency_milliseconds", L("gang", "OnSessionClose")), 1);
  assert_true(count(reg, "volcano_scheduling_stage_duration_milliseconds", L("Predicate")) >= 2);
  /* A bind: its call is the Bind stage; bound, its pod's age the Bound latency. */
  sch_metrics_bound(&m, 0, 4000000, 1795953600LL - 10, now_ms);
  assert_int_equal(count(reg, "volcano_scheduling_stage_duration_milliseconds", L("Bind")), 1);
  assert_true(value(reg, "volcano_scheduling_stage_duration_milliseconds", L("Bind")) == 4);
  assert_true(value(reg, "volcano_task_scheduling_latency_milliseconds", L("Bound")) == 10000);
  sch_metrics_assumed(&m, 1795953600LL - 3, now_ms);
  assert_true(value(reg, "volcano_task_scheduling_latency_milliseconds", L("Assumed")) == 3000);
  /* A second session: the counter counts on. */
  sch_metrics_session(&m, f->snap, r, now_ms);
  assert_true(value(reg, "volcano_job_retry_counts", L("big")) == 2);
  sch_result_free(r);
  fx_free(f);

  /* Without the jobs, their series go (Volcano's cleanMetrics); without queue q, its series
   * go from every queue family (DeleteQueueMetrics), the shell's allocated ones included. */
  kc_metric *alloc;
  kc_series *as;
  assert_int_equal(kc_metrics_gauge(reg, "volcano_queue_allocated_milli_cpu", "h",
                                    L("queue_name", NULL), &alloc),
                   0);
  assert_int_equal(kc_metric_series(alloc, L("q"), &as), 0);
  assert_true(rendered(reg, "queue_name=\"q\""));
  fx *g = fx_new();
  fx_node(g, "n1", 2000, 8 * GI, 110);
  fx_queue(g, "other", 3);
  fx_open(g, conf);
  r = fx_run(g);
  assert_true(rendered(reg, "volcano_job_share{"));
  sch_metrics_session(&m, g->snap, r, now_ms);
  assert_false(rendered(reg, "volcano_job_share{"));
  assert_false(rendered(reg, "volcano_job_retry_counts{"));
  assert_false(rendered(reg, "volcano_unschedule_task_count{"));
  assert_true(value(reg, "volcano_unschedule_job_count", NULL) == 0);
  assert_false(rendered(reg, "volcano_e2e_job_scheduling_duration{"));
  assert_false(rendered(reg, "queue_name=\"q\""));
  sch_result_free(r);
  fx_free(g);
  sch_metrics_close(&m);
  kc_metrics_free(reg);
}

/* Every family of Volcano's scheduler metrics package is registered with its type. */
static void test_every_volcano_family(void **state) {
  (void)state;
  kc_metrics *reg;
  assert_int_equal(kc_metrics_new(&reg), 0);
  sch_metrics m;
  assert_int_equal(sch_metrics_init(&m, reg), 0);
  static const struct {
    const char *name;
    kc_metric_type type;
  } fams[] = {
      {"volcano_e2e_job_scheduling_latency_milliseconds", KC_METRIC_HISTOGRAM},
      {"volcano_e2e_job_scheduling_duration", KC_METRIC_GAUGE},
      {"volcano_e2e_job_scheduling_start_time", KC_METRIC_GAUGE},
      {"volcano_e2e_job_scheduling_last_time", KC_METRIC_GAUGE},
      {"volcano_plugin_scheduling_latency_milliseconds", KC_METRIC_HISTOGRAM},
      {"volcano_task_scheduling_latency_milliseconds", KC_METRIC_HISTOGRAM},
      {"volcano_scheduling_stage_duration_milliseconds", KC_METRIC_HISTOGRAM},
      {"volcano_pod_reclaim_victims", KC_METRIC_HISTOGRAM},
      {"volcano_total_reclaim_attempts", KC_METRIC_COUNTER},
      {"volcano_job_share", KC_METRIC_GAUGE},
      {"volcano_job_retry_counts", KC_METRIC_COUNTER},
      {"volcano_unschedule_task_count", KC_METRIC_GAUGE},
      {"volcano_unschedule_job_count", KC_METRIC_GAUGE},
      {"volcano_queue_request_milli_cpu", KC_METRIC_GAUGE},
      {"volcano_queue_request_memory_bytes", KC_METRIC_GAUGE},
      {"volcano_queue_request_scalar_resources", KC_METRIC_GAUGE},
      {"volcano_queue_inqueue_milli_cpu", KC_METRIC_GAUGE},
      {"volcano_queue_inqueue_memory_bytes", KC_METRIC_GAUGE},
      {"volcano_queue_inqueue_scalar_resources", KC_METRIC_GAUGE},
      {"volcano_queue_share", KC_METRIC_GAUGE},
      {"volcano_queue_weight", KC_METRIC_GAUGE},
      {"volcano_queue_overused", KC_METRIC_GAUGE},
      {"volcano_namespace_share", KC_METRIC_GAUGE},
      {"volcano_namespace_weight", KC_METRIC_GAUGE},
      {"volcano_namespace_weighted_share", KC_METRIC_GAUGE},
      {"volcano_goroutines", KC_METRIC_GAUGE},
  };
  for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
    kc_metric *f = kc_metrics_find(reg, fams[i].name);
    if (!f)
      fail_msg("%s is not registered", fams[i].name);
    assert_int_equal(kc_metric_get_type(f), fams[i].type);
  }
  /* Volcano's buckets as its Go client prints them: the stage histogram's, 0.1 ms to 500 ms. */
  kc_series *s;
  assert_int_equal(
      kc_metric_series(kc_metrics_find(reg, "volcano_scheduling_stage_duration_milliseconds"),
                       L("Bind"), &s),
      0);
  char *out;
  size_t len;
  assert_int_equal(kc_metrics_render(reg, &out, &len), 0);
  static const char *const want[] = {"0.1",
                                     "0.15656065579430967",
                                     "0.3837495643207069",
                                     "13.851887314021628",
                                     "319.36503936014606",
                                     "499.9999999999998"};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    char needle[128];
    snprintf(needle, sizeof(needle),
             "volcano_scheduling_stage_duration_milliseconds_bucket{stage=\"Bind\",le=\"%s\"} 0",
             want[i]);
    if (!strstr(out, needle))
      fail_msg("no %s", needle);
  }
  free(out);
  sch_metrics_close(&m);
  kc_metrics_free(reg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_session_decides_the_values),
      cmocka_unit_test(test_no_clock_no_timings),
      cmocka_unit_test(test_metrics_written),
      cmocka_unit_test(test_every_volcano_family),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
