/* The I/O shell of the job controller: informers feed stores, handlers turn watch events into
 * requests (Volcano's pkg/controllers/job event handlers), a keyed work queue serialises each
 * Job, ctl_job_sync() decides, and the executor (ctl_job_exec_shell.h) issues the plan's
 * writes and reports its result, from which this shell alone requeues the key and arms the
 * delayed actions. The pending requests (ctl_reqs.h), the expectations (ctl_expect.h) and the
 * delayed actions (ctl_delay.h) are pure modules the shell owns.
 *
 * Everything runs on one libuv loop thread. The shell never decides phases or pods itself:
 * it only builds the view the core reads, adds what the watch has not confirmed yet
 * (expectations) to it, and carries the plan out. */
#ifndef CTL_JOB_SHELL_H
#define CTL_JOB_SHELL_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "kc_api.h"
#include "kc_error.h"

struct kc_metrics;
struct kc_leader;
struct kc_event_recorder;
struct ctl_inf_hub;
typedef struct ctl_shell ctl_shell;

typedef struct {
  int workers;                      /* Job keys handled at once (--worker-threads); 0: 3 */
  int max_requeue;                  /* --max-requeue-num; -1 unlimited */
  const char *default_scheduler;    /* the first --scheduler-name; borrowed */
  struct kc_metrics *metrics;       /* borrowed, may be NULL */
  struct kc_leader *leader;         /* borrowed write fence; NULL: always allowed */
  struct kc_event_recorder *events; /* borrowed; NULL: events are only logged */
  struct ctl_inf_hub *hub;          /* borrowed shared informers; NULL: its own */
} ctl_shell_options;

/* *out is new; c and everything in opt are borrowed and must outlive the shell. Registers
 * Volcano's controller metrics and the work queue's in opt->metrics. 0, KC_ENOMEM, KC_EINVAL. */
KC_NODISCARD int ctl_shell_new(uv_loop_t *loop, kc_client *c, const ctl_shell_options *opt,
                               ctl_shell **out);
/* Starts the informers; keys are processed once every cache has synced. */
KC_NODISCARD int ctl_shell_start(ctl_shell *s);
/* True once every informer has listed (for /readyz). */
bool ctl_shell_synced(const ctl_shell *s);
/* Stops taking work: the informers stop, queued keys are dropped, and done(ud) is called once
 * the writes in flight have finished or deadline_ms has passed. */
void ctl_shell_stop(ctl_shell *s, uint64_t deadline_ms, void (*done)(void *ud), void *ud);
/* Frees the shell; writes still in flight are abandoned (their results ignored). Run the
 * loop afterwards so the handles close. NULL is a no-op. */
void ctl_shell_free(ctl_shell *s);

/* Counters for logs and tests. */
typedef struct {
  uint64_t syncs, sync_errors, pods_created, pods_create_exists, pods_deleted, status_writes,
      conflicts, status_deferred;
  int inflight;
} ctl_shell_stats;
void ctl_shell_get_stats(const ctl_shell *s, ctl_shell_stats *st);

#endif
