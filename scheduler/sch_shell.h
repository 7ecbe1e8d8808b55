/* The scheduler's I/O shell (Volcano Scheduler.Run / runOnce): it owns the cache, the
 * binder and the status writers, and every schedule period
 *
 *   snapshot of the cache -> session (configured actions, timed) -> result ->
 *   binds (assume, then POST binding) / PodGroup and Queue status (only when changed) /
 *   Events and PodScheduled=False explanations (only when changed)
 *
 * all on the loop thread. The session is a pure function of the snapshot and the
 * configuration (sch_framework.h); nothing in the shell decides placement.
 *
 * The configuration file (--scheduler-conf) is re-read when its mtime, size or inode
 * changes (checked each period, which also catches a ConfigMap's symlink swap); an invalid
 * file keeps the previous configuration and the log says why. */
#ifndef SCH_SHELL_H
#define SCH_SHELL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "kc_api.h"
#include "kc_events.h"
#include "kc_metrics.h"

typedef struct sch_shell sch_shell;

typedef struct {
  const char *const *scheduler_names; /* borrowed; n = 0: {"volcano"} */
  size_t nscheduler_names;
  const char *scheduler_conf; /* path, or NULL: Volcano's default configuration */
  int64_t schedule_period_ns; /* 0: 1 s */
  const char *default_queue;  /* NULL: "default" */
  int percentage_nodes_to_find;
  int minimum_percentage_nodes_to_find;
  int minimum_feasible_nodes;
  const char *dump_path; /* where SIGUSR2 dumps the cache; NULL: no dump */
  int64_t bind_delay_ms; /* test aid (see sch_binder.h) */
  /* Gate: sessions run and writes go out only while this returns 0 (leader election). */
  int (*may_write)(void *ud);
  void *ud;
} sch_shell_options;

/* *out is new. c, events and metrics (may be NULL) are borrowed; o's strings too. Loads
 * the configuration (an invalid file at start: Volcano's default, logged). */
int sch_shell_new(uv_loop_t *loop, kc_client *c, kc_event_recorder *events, kc_metrics *metrics,
                  const sch_shell_options *o, sch_shell **out);
/* Starts the informers and the period timer. */
int sch_shell_start(sch_shell *sh);
/* Stops everything; run the loop afterwards. NULL is a no-op. */
void sch_shell_free(sch_shell *sh);

/* One scheduling cycle now (the timer calls it). 0, or the error that ended it. */
int sch_shell_run_once(sch_shell *sh);
/* Writes the cache to path (or the dump path) as a protobuf Snapshot. */
int sch_shell_dump(sch_shell *sh, const char *path);
/* The readiness check for /readyz ("informer-sync"). */
int sch_shell_ready(void *sh, char *reason, size_t cap);
/* Binds in flight or waiting. */
size_t sch_shell_binds_pending(const sch_shell *sh);

#endif
