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

static void test_format_value(void **state) {
  (void)state;
  static const struct {
    double v;
    const char *want;
  } cases[] = {
      {0, "0"},
      {1, "1"},
      {-1, "-1"},
      {42, "42"},
      {0.005, "0.005"},
      {2.5, "2.5"},
      {0.1, "0.1"},
      {100000, "100000"},
      {999999, "999999"},
      {1e6, "1e+06"},
      {1234567, "1.234567e+06"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {1e-08, "1e-08"},
      {123.456, "123.456"},
      {1.0 / 3, "0.3333333333333333"},
      {3e21, "3e+21"},
      {-2.5e-7, "-2.5e-07"},
      {INFINITY, "+Inf"},
      {-INFINITY, "-Inf"},
      {NAN, "NaN"},
  };
  char buf[32];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    assert_string_equal(kc_metrics_format_value(cases[i].v, buf), cases[i].want);
}

static void test_registration_errors(void **state) {
  (void)state;
  kc_metrics *r;
  assert_int_equal(kc_metrics_new(&r), 0);
  kc_metric *m;
  static const char *const bad1[] = {"9x", NULL};
  static const char *const bad2[] = {"__x", NULL};
  static const char *const bad3[] = {"a", "a", NULL};
  static const char *const le[] = {"le", NULL};
  static const char *const colon[] = {"a:b", NULL};
  assert_int_equal(kc_metrics_counter(r, "bad-name", "h", NULL, &m), KC_EINVAL);
  assert_int_equal(kc_metrics_counter(r, "", "h", NULL, &m), KC_EINVAL);
  assert_int_equal(kc_metrics_counter(r, "c", "h", bad1, &m), KC_EINVAL);
  assert_int_equal(kc_metrics_counter(r, "c", "h", bad2, &m), KC_EINVAL);
  assert_int_equal(kc_metrics_counter(r, "c", "h", bad3, &m), KC_EINVAL);
  assert_int_equal(kc_metrics_counter(r, "c", "h", colon, &m), KC_EINVAL);
  double b[] = {1, 1};
  assert_int_equal(kc_metrics_histogram(r, "h", "h", NULL, b, 2, &m), KC_EINVAL);
  assert_int_equal(kc_metrics_histogram(r, "h", "h", le, kc_metrics_default_buckets, 11, &m),
                   KC_EINVAL);
  assert_int_equal(kc_metrics_counter(r, "ns:c_total", "h", NULL, &m), 0);
  assert_int_equal(kc_metrics_gauge(r, "ns:c_total", "h", NULL, &m), KC_EEXISTS);
  assert_ptr_equal(kc_metrics_find(r, "ns:c_total"), m);
  assert_null(kc_metrics_find(r, "nope"));
  static const char *const two[] = {"a", "b", NULL};
  assert_int_equal(kc_metrics_gauge(r, "g", "h", two, &m), 0);
  kc_series *s;
  static const char *const one_value[] = {"x", NULL};
  assert_int_equal(kc_metric_series(m, NULL, &s), KC_EINVAL);
  assert_int_equal(kc_metric_series(m, one_value, &s), KC_EINVAL);
  double eb[3];
  assert_int_equal(kc_metrics_exponential_buckets(0, 2, 3, eb), KC_EINVAL);
  assert_int_equal(kc_metrics_exponential_buckets(1, 2, 3, eb), 0);
  assert_true(eb[2] == 4);
  kc_metrics_free(r);
  kc_metrics_free(NULL);
}

static int collects;
static kc_series *collected_gauge;
static void collect(kc_metrics *r, void *ud) {
  (void)r;
  (void)ud;
  collects++;
  kc_gauge_set(collected_gauge, 7);
}

static const double buckets[] = {5, 10, 20.5};

typedef struct {
  kc_metric *attempts, *lat, *share;
} exact_metrics;

/* Registers the metrics of test_exact_output in r (and kiln_up, set by a collector). */
static void exact_register(kc_metrics *r, exact_metrics *m) {
  kc_metric *empty, *up;
  static const char *const result[] = {"result", NULL};
  static const char *const job[] = {"job_ns", "job_id", NULL};
  assert_int_equal(kc_metrics_counter(r, "volcano_schedule_attempts_total",
                                      "Number of attempts to schedule pods, by result.", result,
                                      &m->attempts),
                   0);
  assert_int_equal(kc_metrics_histogram(r, "volcano_e2e_scheduling_latency_milliseconds",
                                        "E2e scheduling latency in milliseconds.\nSecond line "
                                        "with a \\ backslash.",
                                        NULL, buckets, 3, &m->lat),
                   0);
  assert_int_equal(kc_metrics_gauge(r, "volcano_job_share", "Share of a job.", job, &m->share), 0);
  assert_int_equal(kc_metrics_gauge(r, "kiln_no_series", "Never set.", job, &empty), 0);
  assert_int_equal(kc_metrics_gauge(r, "kiln_up", "Collected on scrape.", NULL, &up), 0);
  assert_int_equal(kc_metric_series(up, NULL, &collected_gauge), 0);
  assert_int_equal(kc_metrics_add_collector(r, collect, NULL), 0);
}

static void exact_fill(const exact_metrics *m) {
  kc_metric *attempts = m->attempts, *lat = m->lat, *share = m->share;
  kc_series *s;
  const char *const sched[] = {"scheduled"};
  const char *const err[] = {"error"};
  assert_int_equal(kc_metric_series(attempts, sched, &s), 0);
  kc_counter_add(s, 3);
  kc_counter_add(s, -10); /* ignored */
  kc_counter_inc(s);
  assert_int_equal(kc_metric_series(attempts, err, &s), 0);
  kc_counter_inc(s);

  assert_int_equal(kc_metric_series(lat, NULL, &s), 0);
  kc_histogram_observe(s, 5); /* le is inclusive */
  kc_histogram_observe(s, 7);
  kc_histogram_observe(s, 100);
  kc_histogram_observe(s, 0.5);
  assert_int_equal(kc_series_count(s), 4);
  assert_true(kc_series_value(s) == 112.5);

  const char *const j1[] = {"default", "job-\"1\"\n\\x"};
  const char *const j2[] = {"default", "a-job"};
  const char *const j3[] = {"default", "gone"};
  assert_int_equal(kc_metric_series(share, j1, &s), 0);
  kc_gauge_set(s, 0.25);
  assert_int_equal(kc_metric_series(share, j2, &s), 0);
  kc_gauge_set(s, 1e6);
  kc_gauge_add(s, -1e6 + 1);
  assert_int_equal(kc_metric_series(share, j3, &s), 0);
  assert_int_equal(kc_metric_remove(share, j3), 0);
  assert_int_equal(kc_metric_remove(share, j3), KC_ENOENT);
}

/* The exposition format test_exact_output's metrics render to. */
static const char exact_want[] =
    "# HELP kiln_up Collected on scrape.\n"
    "# TYPE kiln_up gauge\n"
    "kiln_up 7\n"
    "# HELP volcano_e2e_scheduling_latency_milliseconds E2e scheduling latency in "
    "milliseconds.\\nSecond line with a \\\\ backslash.\n"
    "# TYPE volcano_e2e_scheduling_latency_milliseconds histogram\n"
    "volcano_e2e_scheduling_latency_milliseconds_bucket{le=\"5\"} 2\n"
    "volcano_e2e_scheduling_latency_milliseconds_bucket{le=\"10\"} 3\n"
    "volcano_e2e_scheduling_latency_milliseconds_bucket{le=\"20.5\"} 3\n"
    "volcano_e2e_scheduling_latency_milliseconds_bucket{le=\"+Inf\"} 4\n"
    "volcano_e2e_scheduling_latency_milliseconds_sum 112.5\n"
    "volcano_e2e_scheduling_latency_milliseconds_count 4\n"
    "# HELP volcano_job_share Share of a job.\n"
    "# TYPE volcano_job_share gauge\n"
    "volcano_job_share{job_id=\"a-job\",job_ns=\"default\"} 1\n"
    "volcano_job_share{job_id=\"job-\\\"1\\\"\\n\\\\x\",job_ns=\"default\"} 0.25\n"
    "# HELP volcano_schedule_attempts_total Number of attempts to schedule pods, by result.\n"
    "# TYPE volcano_schedule_attempts_total counter\n"
    "volcano_schedule_attempts_total{result=\"error\"} 1\n"
    "volcano_schedule_attempts_total{result=\"scheduled\"} 4\n";

/* A labelled histogram puts le last. */
static void check_labelled_histogram(kc_metrics *r) {
  char *text;
  size_t len;
  kc_series *s;
  kc_metric *h;
  static const char *const action[] = {"action", NULL};
  assert_int_equal(kc_metrics_histogram(r, "a_hist", "H.", action, buckets, 1, &h), 0);
  const char *const alloc[] = {"allocate"};
  assert_int_equal(kc_metric_series(h, alloc, &s), 0);
  kc_histogram_observe(s, 1);
  assert_int_equal(kc_metrics_render(r, &text, &len), 0);
  const char *want_h = "# HELP a_hist H.\n"
                       "# TYPE a_hist histogram\n"
                       "a_hist_bucket{action=\"allocate\",le=\"5\"} 1\n"
                       "a_hist_bucket{action=\"allocate\",le=\"+Inf\"} 1\n"
                       "a_hist_sum{action=\"allocate\"} 1\n"
                       "a_hist_count{action=\"allocate\"} 1\n"
                       "# HELP kiln_up";
  assert_memory_equal(text, want_h, strlen(want_h));
  free(text);
}

/* Labels are written by name, as Go's client writes them, whatever the registration order
 * (job_share registers job_ns before job_id). */
static void test_exact_output(void **state) {
  (void)state;
  kc_metrics *r;
  assert_int_equal(kc_metrics_new(&r), 0);
  exact_metrics m;
  exact_register(r, &m);
  exact_fill(&m);

  char *text;
  size_t len;
  assert_int_equal(kc_metrics_render(r, &text, &len), 0);
  assert_string_equal(text, exact_want);
  assert_int_equal(len, strlen(exact_want));
  assert_int_equal(collects, 1);
  free(text);

  check_labelled_histogram(r);
  kc_metrics_remove_collector(r, collect, NULL);
  kc_metrics_free(r);
}

/* Observations counted elsewhere (the scheduler session's stages) join a histogram. */
static void test_histogram_merge(void **state) {
  (void)state;
  kc_metrics *r;
  assert_int_equal(kc_metrics_new(&r), 0);
  static const double bounds[] = {1, 10};
  kc_metric *m;
  kc_series *s;
  assert_int_equal(kc_metrics_histogram(r, "h_ms", "help", NULL, bounds, 2, &m), 0);
  assert_int_equal(kc_metric_series(m, NULL, &s), 0);
  kc_histogram_observe(s, 5);
  const uint64_t counts[3] = {2, 0, 1};
  assert_int_equal(kc_histogram_merge(s, counts, 3, 3, 40.5), 0);
  assert_int_equal(kc_histogram_merge(s, counts, 2, 3, 40.5), KC_EINVAL);
  assert_int_equal(kc_series_count(s), 4);
  assert_true(kc_series_value(s) == 45.5);
  char *text;
  size_t len;
  assert_int_equal(kc_metrics_render(r, &text, &len), 0);
  assert_non_null(strstr(text, "h_ms_bucket{le=\"1\"} 2\nh_ms_bucket{le=\"10\"} 3\n"
                               "h_ms_bucket{le=\"+Inf\"} 4\n"));
  free(text);
  kc_metric *g;
  kc_series *gs;
  assert_int_equal(kc_metrics_gauge(r, "g", "help", NULL, &g), 0);
  assert_int_equal(kc_metric_series(g, NULL, &gs), 0);
  assert_int_equal(kc_histogram_merge(gs, counts, 3, 3, 1), KC_EINVAL);
  kc_metrics_free(r);
}

/* Go's DeletePartialMatch with one label: a deleted queue's series, whatever the resource. */
static void test_remove_matching(void **state) {
  (void)state;
  kc_metrics *r;
  assert_int_equal(kc_metrics_new(&r), 0);
  static const char *const labels[] = {"queue_name", "resource", NULL};
  kc_metric *m;
  kc_series *s;
  assert_int_equal(kc_metrics_gauge(r, "g", "help", labels, &m), 0);
  assert_int_equal(kc_metric_series(m, (const char *const[]){"a", "gpu"}, &s), 0);
  assert_int_equal(kc_metric_series(m, (const char *const[]){"a", "fpga"}, &s), 0);
  assert_int_equal(kc_metric_series(m, (const char *const[]){"b", "gpu"}, &s), 0);
  assert_int_equal(kc_metric_remove_matching(m, "queue_name", "a"), 2);
  assert_int_equal(kc_metric_remove_matching(m, "queue_name", "a"), 0);
  assert_int_equal(kc_metric_remove_matching(m, "nope", "a"), KC_EINVAL);
  char *text;
  size_t len;
  assert_int_equal(kc_metrics_render(r, &text, &len), 0);
  assert_null(strstr(text, "queue_name=\"a\""));
  assert_non_null(strstr(text, "g{queue_name=\"b\",resource=\"gpu\"} 0"));
  free(text);
  kc_metrics_free(r);
}

static void test_empty_registry(void **state) {
  (void)state;
  kc_metrics *r;
  assert_int_equal(kc_metrics_new(&r), 0);
  char *text;
  size_t len;
  assert_int_equal(kc_metrics_render(r, &text, &len), 0);
  assert_int_equal(len, 0);
  assert_string_equal(text, "");
  free(text);
  kc_metrics_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_format_value),    cmocka_unit_test(test_registration_errors),
      cmocka_unit_test(test_exact_output),    cmocka_unit_test(test_empty_registry),
      cmocka_unit_test(test_histogram_merge), cmocka_unit_test(test_remove_matching),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
