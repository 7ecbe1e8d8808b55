/* scheduler_perf's throughput collector as a pure function of (tick time, pods scheduled so
 * far), so the sampling rule is tested on its own (tests/bench/test_bench_tput.c) and the
 * watcher only feeds it.
 *
 * The rule (kubernetes test/integration/scheduler_perf, throughputCollector): a tick with no
 * pod scheduled yet is ignored; the first tick with one is skipped and becomes t0 (sampling
 * and pod creation start at different times); a tick with no newly scheduled pod is merged
 * into the next tick that has some; that tick's rate, new pods / actual time since the last
 * recorded tick, is recorded once per merged tick so percentiles stay time-weighted. Pods
 * scheduled after the last tick are not sampled. Summary: the Average of the samples, and
 * percentiles at index ceil(n * p / 100) - 1 of the sorted samples. */
#ifndef BENCH_TPUT_H
#define BENCH_TPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  bool started;
  int last_scheduled;
  int skipped;
  uint64_t last_ns;
  double *v; /* owned samples, pods/s, in tick order */
  size_t n, cap;
} bench_tput;

typedef struct {
  size_t n;
  double average, perc50, perc90, perc95, perc99, max;
} bench_tput_summary;

void bench_tput_init(bench_tput *t);
void bench_tput_close(bench_tput *t);
/* One tick at now_ns with `scheduled` pods bound so far. 0 or KC_ENOMEM. */
int bench_tput_tick(bench_tput *t, uint64_t now_ns, int scheduled);
/* Summary of v[0..n) (borrowed; sorted in place). All zero when n is 0. */
void bench_tput_summarize(double *v, size_t n, bench_tput_summary *s);

#endif
