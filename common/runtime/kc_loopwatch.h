/* How long the loop thread goes without waiting for I/O: a stalled loop decodes no watch
 * event, sends no bind and answers no health probe, so the longest busy stretch is what a
 * reader of the metrics needs to see.
 *
 * A prepare handle runs once per loop iteration, just before the loop waits for I/O; with
 * the loop's idle-time metric on (kc_loopwatch_new turns it on, which libuv allows only
 * before the loop first runs) the time since the previous prepare minus the time spent
 * waiting is one busy stretch: the I/O callbacks, timers, checks and closes of that
 * iteration, back to back. Exported (Volcano's naming: volcano_ prefix, unit last):
 *
 *   volcano_event_loop_busy_duration_milliseconds   histogram of every stretch
 *   volcano_event_loop_longest_busy_milliseconds    gauge, the longest since the start
 *
 * and the same two in the loop thread's CPU time (..._busy_cpu_duration_milliseconds,
 * ..._longest_busy_cpu_milliseconds): on a loaded machine the kernel keeps a running thread
 * waiting for tens of milliseconds, which the wall-clock figure counts and the CPU figure
 * does not; the CPU figure is what the process's own work cost.
 *
 * Everything runs on the loop thread. */
#ifndef KC_LOOPWATCH_H
#define KC_LOOPWATCH_H

#include <stdint.h>

#include <uv.h>

#include "kc_metrics.h"

typedef struct kc_loopwatch kc_loopwatch;

/* Turns the loop's idle-time metric on: before the loop first runs. 0 or a KC_ error. */
int kc_loopwatch_configure(uv_loop_t *loop);
/* *out is new; metrics (may be NULL: only kc_loopwatch_longest_ns) is borrowed and must
 * outlive it. The handle does not keep the loop alive. */
int kc_loopwatch_new(uv_loop_t *loop, kc_metrics *metrics, kc_loopwatch **out);
/* Closes the handle; the memory goes when the loop has run the close. NULL is a no-op. */
void kc_loopwatch_free(kc_loopwatch *w);
/* The longest stretch so far, in nanoseconds. */
uint64_t kc_loopwatch_longest_ns(const kc_loopwatch *w);

/* Pure: one iteration's busy time, from the clock and the idle clock read at its two ends
 * (the idle time is cumulative). Never negative. */
uint64_t kc_loop_busy_ns(uint64_t t0, uint64_t t1, uint64_t idle0, uint64_t idle1);

#endif
