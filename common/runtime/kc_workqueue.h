/* A keyed work queue with client-go's semantics, on a libuv loop.
 *
 * - Keys are strings ("ns/name"). A key added while it waits in the queue is
 *   not queued twice; a key added while it is being processed is marked dirty
 *   and queued again when kc_workqueue_done() is called. So one key is never
 *   processed twice at once, and no add is lost.
 * - kc_workqueue_add_after() holds keys in a min-heap behind one uv_timer; a
 *   key already waiting keeps the earlier of its two ready times.
 * - kc_workqueue_add_rate_limited() waits max(per-key exponential backoff,
 *   overall token bucket) (kc_ratelimiter); kc_workqueue_forget() resets the
 *   key's backoff after a success.
 *
 * The logic is loop-free: the clock is a function pointer, and
 * kc_workqueue_tick() moves due delayed keys into the queue. With a loop,
 * a uv_timer calls tick at the next deadline, and a one-shot uv_idle calls
 * the process callback (if set) outside the caller's stack, with at most
 * `workers` keys in flight. Without a loop (loop == NULL, for unit tests),
 * the caller calls tick and get itself. Single-threaded: use from the loop
 * thread only. */
#ifndef KC_WORKQUEUE_H
#define KC_WORKQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "kc_ratelimit.h"
#include "kc_error.h"

typedef struct kc_workqueue kc_workqueue;
struct kc_metrics;

/* Monotonic nanoseconds. */
typedef uint64_t (*kc_clock_fn)(void *ud);

/* Optional metrics hooks (client-go's workqueue MetricsProvider). Any may be
 * NULL. Durations are in seconds. */
typedef struct {
  void (*depth)(void *ud, size_t depth);     /* after every change */
  void (*add)(void *ud);                     /* every accepted add */
  void (*latency)(void *ud, double seconds); /* queued -> handed out */
  void (*work)(void *ud, double seconds);    /* handed out -> done */
  void (*retry)(void *ud);                   /* every add_rate_limited */
  void *ud;
} kc_workqueue_hooks;

/* Called with a key that is now being processed. The key is borrowed and
 * stays valid until kc_workqueue_done(q, key), which the callback or some
 * later completion must call exactly once. */
typedef void (*kc_workqueue_process_fn)(kc_workqueue *q, const char *key, void *ud);

typedef struct {
  const char *name;  /* for logs and metrics; borrowed, copied */
  kc_clock_fn clock; /* NULL: uv_hrtime() */
  void *clock_ud;
  uint64_t backoff_base_ns;        /* 0: 5 ms */
  uint64_t backoff_max_ns;         /* 0: 1000 s */
  double qps;                      /* 0: 10 (negative: no overall limit) */
  int burst;                       /* 0: 100 */
  kc_workqueue_process_fn process; /* NULL: the caller pulls with get() */
  void *process_ud;
  int workers; /* max keys in flight through process; 0: 1 */
} kc_workqueue_opts;

/* *out is new; loop may be NULL (no timer, no idle: tick and get by hand).
 * 0, KC_EINVAL, KC_ENOMEM. */
KC_NODISCARD int kc_workqueue_new(uv_loop_t *loop, const kc_workqueue_opts *opts,
                                  kc_workqueue **out);
/* Shuts down and closes the handles; the memory is released in their close
 * callbacks, so run the loop afterwards. Keys handed out become invalid.
 * NULL is a no-op. */
void kc_workqueue_free(kc_workqueue *q);

void kc_workqueue_set_hooks(kc_workqueue *q, const kc_workqueue_hooks *hooks);
/* Registers client-go's workqueue_* metrics with label name=<queue name> in
 * reg (borrowed: it must outlive the queue) and sets the hooks to feed them.
 * Queues sharing a registry share the families. 0, or an error from
 * kc_metrics. */
int kc_workqueue_use_metrics(kc_workqueue *q, struct kc_metrics *reg);

/* key is borrowed. 0, KC_ENOMEM, or KC_ECANCELED after shutdown (ignored,
 * as client-go ignores adds after ShutDown). */
int kc_workqueue_add(kc_workqueue *q, const char *key);
int kc_workqueue_add_after(kc_workqueue *q, const char *key, uint64_t delay_ns);
int kc_workqueue_add_rate_limited(kc_workqueue *q, const char *key);
void kc_workqueue_forget(kc_workqueue *q, const char *key);
int kc_workqueue_num_requeues(const kc_workqueue *q, const char *key);

/* Hands out the oldest queued key (*key borrowed until done). 0, KC_ENOENT
 * when nothing is queued, KC_ECANCELED when shut down and drained. */
KC_NODISCARD int kc_workqueue_get(kc_workqueue *q, const char **key);
/* Ends processing of key; re-queues it if it was added meanwhile. */
void kc_workqueue_done(kc_workqueue *q, const char *key);

/* Moves due delayed keys into the queue; returns the ns until the next
 * delayed key is due, or UINT64_MAX when none wait. */
uint64_t kc_workqueue_tick(kc_workqueue *q);

/* Stops accepting adds and drops delayed keys; queued keys are still handed
 * out (client-go's ShutDown), then get() returns KC_ECANCELED. */
void kc_workqueue_shutdown(kc_workqueue *q);
bool kc_workqueue_shutting_down(const kc_workqueue *q);

size_t kc_workqueue_len(const kc_workqueue *q);        /* queued, ready now */
size_t kc_workqueue_waiting(const kc_workqueue *q);    /* delayed */
size_t kc_workqueue_processing(const kc_workqueue *q); /* handed out */
/* Sum and max of the time keys have been in processing, in seconds
 * (workqueue_unfinished_work_seconds, longest_running_processor_seconds). */
void kc_workqueue_unfinished(const kc_workqueue *q, double *total_s, double *longest_s);
const char *kc_workqueue_name(const kc_workqueue *q);

#endif
