/* The loop's busy stretches: see kc_loopwatch.h. */
#include "kc_loopwatch.h"

#include <stdlib.h>

#include "kc_clock.h"
#include "kc_error.h"

struct kc_loopwatch {
  uv_prepare_t prepare;
  uint64_t t0, idle0, cpu0; /* at the previous prepare */
  uint64_t longest, longest_cpu;
  kc_series *hist, *gauge, *hist_cpu, *gauge_cpu;
};

uint64_t kc_loop_busy_ns(uint64_t t0, uint64_t t1, uint64_t idle0, uint64_t idle1) {
  uint64_t wall = t1 > t0 ? t1 - t0 : 0;
  uint64_t idle = idle1 > idle0 ? idle1 - idle0 : 0;
  return wall > idle ? wall - idle : 0;
}

int kc_loopwatch_configure(uv_loop_t *loop) {
  int rc = uv_loop_configure(loop, UV_METRICS_IDLE_TIME);
  return rc ? kc_err_from_uv(rc) : 0;
}

static void on_prepare(uv_prepare_t *h) {
  kc_loopwatch *w = h->data;
  uint64_t t = uv_hrtime(), idle = uv_metrics_idle_time(h->loop);
  uint64_t busy = kc_loop_busy_ns(w->t0, t, w->idle0, idle);
  w->t0 = t;
  w->idle0 = idle;
  if (busy > w->longest) {
    w->longest = busy;
    if (w->gauge)
      kc_gauge_set(w->gauge, (double)busy / 1e6);
  }
  if (w->hist)
    kc_histogram_observe(w->hist, (double)busy / 1e6);
  uint64_t cpu = kc_clock_thread_cpu_ns();
  uint64_t busy_cpu = cpu > w->cpu0 ? cpu - w->cpu0 : 0;
  w->cpu0 = cpu;
  if (busy_cpu > w->longest_cpu) {
    w->longest_cpu = busy_cpu;
    if (w->gauge_cpu)
      kc_gauge_set(w->gauge_cpu, (double)busy_cpu / 1e6);
  }
  if (w->hist_cpu)
    kc_histogram_observe(w->hist_cpu, (double)busy_cpu / 1e6);
}

static void setup_metrics(kc_loopwatch *w, kc_metrics *r) {
  /* 20 ms is the bound the scheduler is held to; the buckets straddle it. */
  static const double b[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000};
  kc_metric *m;
  if (kc_metrics_histogram(r, "volcano_event_loop_busy_duration_milliseconds",
                           "Time the event loop thread ran without waiting for I/O, per loop "
                           "iteration, in milliseconds",
                           NULL, b, sizeof(b) / sizeof(b[0]), &m) == 0)
    kc_metric_series(m, NULL, &w->hist);
  if (kc_metrics_gauge(r, "volcano_event_loop_longest_busy_milliseconds",
                       "The longest time the event loop thread ran without waiting for I/O "
                       "since the process started, in milliseconds",
                       NULL, &m) == 0)
    kc_metric_series(m, NULL, &w->gauge);
  if (kc_metrics_histogram(r, "volcano_event_loop_busy_cpu_duration_milliseconds",
                           "CPU time the event loop thread used per loop iteration, in "
                           "milliseconds (the busy stretch less the time the kernel kept the "
                           "thread waiting)",
                           NULL, b, sizeof(b) / sizeof(b[0]), &m) == 0)
    kc_metric_series(m, NULL, &w->hist_cpu);
  if (kc_metrics_gauge(r, "volcano_event_loop_longest_busy_cpu_milliseconds",
                       "The most CPU time the event loop thread used in one loop iteration "
                       "since the process started, in milliseconds",
                       NULL, &m) == 0)
    kc_metric_series(m, NULL, &w->gauge_cpu);
}

int kc_loopwatch_new(uv_loop_t *loop, kc_metrics *metrics, kc_loopwatch **out) {
  *out = NULL;
  kc_loopwatch *w = calloc(1, sizeof(*w));
  if (w == NULL)
    return KC_ENOMEM;
  int rc = uv_prepare_init(loop, &w->prepare);
  if (rc) {
    free(w);
    return kc_err_from_uv(rc);
  }
  w->prepare.data = w;
  w->t0 = uv_hrtime();
  w->idle0 = uv_metrics_idle_time(loop);
  w->cpu0 = kc_clock_thread_cpu_ns();
  if (metrics)
    setup_metrics(w, metrics);
  uv_prepare_start(&w->prepare, on_prepare);
  uv_unref((uv_handle_t *)&w->prepare);
  *out = w;
  return 0;
}

static void closed(uv_handle_t *h) {
  free(h->data);
}

void kc_loopwatch_free(kc_loopwatch *w) {
  if (w == NULL)
    return;
  uv_close((uv_handle_t *)&w->prepare, closed);
}

uint64_t kc_loopwatch_longest_ns(const kc_loopwatch *w) {
  return w->longest;
}
