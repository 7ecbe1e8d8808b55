#include "kc_clock.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#define NS_PER_S 1000000000LL

/* The fake is set by tests before the code under test runs; atomics keep a reader on the
 * scheduler's worker thread well defined all the same. */
static atomic_bool fake_on;
static _Atomic int64_t fake_wall_ns;
static _Atomic uint64_t fake_mono_ns;

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

kc_walltime kc_clock_wall(void) {
  kc_walltime w;
  if (atomic_load(&fake_on)) {
    int64_t ns = atomic_load(&fake_wall_ns);
    w.sec = floor_div(ns, NS_PER_S);
    w.nsec = (int32_t)(ns - w.sec * NS_PER_S);
    return w;
  }
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
    /* Cannot fail with a valid clock id and pointer; the epoch rather than garbage. */
    ts.tv_sec = 0;
    ts.tv_nsec = 0;
  }
  w.sec = (int64_t)ts.tv_sec;
  w.nsec = (int32_t)ts.tv_nsec;
  return w;
}

int64_t kc_clock_wall_ns(void) {
  kc_walltime w = kc_clock_wall();
  return w.sec * NS_PER_S + w.nsec;
}

int64_t kc_clock_wall_ms(void) {
  kc_walltime w = kc_clock_wall();
  return w.sec * 1000 + w.nsec / 1000000;
}

int64_t kc_clock_wall_s(void) {
  return kc_clock_wall().sec;
}

uint64_t kc_clock_mono_ns(void) {
  if (atomic_load(&fake_on))
    return atomic_load(&fake_mono_ns);
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * (uint64_t)NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t kc_clock_thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * (uint64_t)NS_PER_S + (uint64_t)ts.tv_nsec;
}

void kc_clock_rfc3339(char buf[KC_TIME_LEN]) {
  kc_time_format(kc_clock_wall_s(), buf);
}

void kc_clock_rfc3339_micro(char buf[KC_TIME_LEN]) {
  kc_walltime w = kc_clock_wall();
  kc_time_format_micro(w.sec * 1000000 + w.nsec / 1000, buf);
}

void kc_clock_fake(int64_t wall_ns, uint64_t mono_ns) {
  atomic_store(&fake_wall_ns, wall_ns);
  atomic_store(&fake_mono_ns, mono_ns);
  atomic_store(&fake_on, true);
}

void kc_clock_advance(int64_t ns) {
  if (!atomic_load(&fake_on))
    return;
  atomic_fetch_add(&fake_wall_ns, ns);
  if (ns > 0)
    atomic_fetch_add(&fake_mono_ns, (uint64_t)ns);
}

void kc_clock_real(void) {
  atomic_store(&fake_on, false);
}
