/* scheduler_perf's throughput sampling; see bench_tput.h. */
#include "bench_tput.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"

void bench_tput_init(bench_tput *t) {
  memset(t, 0, sizeof(*t));
}

void bench_tput_close(bench_tput *t) {
  free(t->v);
  memset(t, 0, sizeof(*t));
}

static int push(bench_tput *t, double x) {
  if (t->n == t->cap) {
    size_t nc = t->cap ? t->cap * 2 : 64;
    double *nv = realloc(t->v, nc * sizeof(*nv));
    if (!nv)
      return KC_ENOMEM;
    t->v = nv;
    t->cap = nc;
  }
  t->v[t->n++] = x;
  return 0;
}

int bench_tput_tick(bench_tput *t, uint64_t now_ns, int scheduled) {
  if (scheduled == 0)
    return 0;
  if (!t->started) {
    t->started = true;
    t->last_scheduled = scheduled;
    t->last_ns = now_ns;
    return 0;
  }
  int fresh = scheduled - t->last_scheduled;
  if (fresh == 0) {
    t->skipped++;
    return 0;
  }
  double secs = (double)(now_ns - t->last_ns) / 1e9;
  double rate = secs > 0 ? fresh / secs : 0;
  for (int i = 0; i <= t->skipped; i++)
    if (push(t, rate) != 0)
      return KC_ENOMEM;
  t->last_scheduled = scheduled;
  t->skipped = 0;
  t->last_ns = now_ns;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double perc(const double *v, size_t n, int p) {
  size_t k = (size_t)ceil((double)n * p / 100.0);
  return v[k ? k - 1 : 0];
}

void bench_tput_summarize(double *v, size_t n, bench_tput_summary *s) {
  memset(s, 0, sizeof(*s));
  if (n == 0)
    return;
  qsort(v, n, sizeof(double), cmp_double);
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += v[i];
  s->n = n;
  s->average = sum / (double)n;
  s->perc50 = perc(v, n, 50);
  s->perc90 = perc(v, n, 90);
  s->perc95 = perc(v, n, 95);
  s->perc99 = perc(v, n, 99);
  s->max = v[n - 1];
}
