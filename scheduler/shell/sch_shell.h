/* The scheduler's I/O shell (Volcano Scheduler.Run / runOnce): it owns the cache, the
 * binder and the status writers, and every schedule period
 *
 *   snapshot of the cache -> session (configured actions, timed) -> result ->
 *   binds (assume, then POST binding) / PodGroup and Queue status (only when changed) /
 *   Events and PodScheduled=False explanations (only when changed)
 *
 * Fewer status writes than Volcano's loop, the same states: a PodGroup whose pods are
 * being bound, or are bound and not Running yet, is written once they are (at most one
 * period after the binds are confirmed), so Running and its count go out in one PATCH; the
 * JobValid condition of a gang whose pods are still being created is not written (for
 * SCH_SHELL_INVALID_QUIET_MS); a Queue's status is written at most once per period. One
 * exception to the wait: a PodGroup still Pending on the API server whose pods the session
 * binds is written first, and its binds wait for the answer (sch_shell_pg_leads), so it is
 * never read Pending with a pod bound.
 *
 The session runs on a libuv worker thread over a snapshot of the cache, which is held
 * (sch_cache_hold) so that the objects the snapshot points to stay as they were while the
 * loop thread goes on decoding watch events, sending binds and writes and answering probes;
 * the result is applied back on the loop thread, where everything else runs. A bind whose
 * pod was deleted, recreated or bound while the session ran is dropped. The session is a
 * pure function of the snapshot and the configuration (sch_framework.h); nothing in the
 * shell decides placement.
 *
 * The configuration file (--scheduler-conf) is re-read when its mtime, size or inode
 * changes (checked each period, which also catches a ConfigMap's symlink swap); an invalid
 * file keeps the previous configuration and the log says why. */
#ifndef SCH_SHELL_H
#define SCH_SHELL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "kc_api.h"
#include "kc_events.h"
#include "kc_metrics.h"
#include "sch_cache.h"
#include "sch_framework.h"

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
  /* > 0: new work (a pending pod of ours added, a PodGroup added or back to Pending) starts
   * a session this long after it arrives instead of at the next period, at most one every
   * SCH_SHELL_MIN_GAP_MS; every session then restarts the period, which stays the upper
   * bound. 0: sessions only every period (Volcano's loop), the default: measured on the
   * 2-core bench (300 one-pod Jobs) early sessions at 20 ms bound no more pods per second
   * and cost 2.4x the scheduler's CPU, which the API server needs there. */
  int64_t early_session_ns;
  /* Test aid: the session runs on the loop thread, as before it moved to a worker (the
   * benchmark's before/after, and deterministic unit tests). */
  bool session_on_loop;
  /* Pods and nodes are listed and watched, and bindings sent, in Kubernetes' protobuf
   * encoding (--kube-api-content-type); Volcano's resources stay JSON. */
  bool protobuf;
  /* Gate: sessions run and writes go out only while this returns 0 (leader election). */
  int (*may_write)(void *ud);
  void *ud;
  /* --disable-default-scheduler-config: no fallback to Volcano's default configuration.
   * Without --scheduler-conf, or with a file that cannot be read or does not load, at start
   * sch_shell_new fails, and on a later change on_fatal (may be NULL) is called with ud: the
   * process should exit, as Volcano's does (klog.Fatalf). */
  bool no_default_conf;
  void (*on_fatal)(void *ud);
  /* --node-selector "key:value" entries (borrowed): see sch_cache_options. */
  const char *const *node_selector;
  size_t nnode_selector;
} sch_shell_options;

/* *out is new. c, events and metrics (may be NULL) are borrowed; o's strings too. Loads
 * the configuration (an invalid file at start: Volcano's default, logged). */
int sch_shell_new(uv_loop_t *loop, kc_client *c, kc_event_recorder *events, kc_metrics *metrics,
                  const sch_shell_options *o, sch_shell **out);
/* Starts the informers and the period timer. */
int sch_shell_start(sch_shell *sh);
/* Stops everything; run the loop afterwards. NULL is a no-op. */
void sch_shell_free(sch_shell *sh);

/* Starts one scheduling cycle now (the timer calls it) unless one is in flight; its result
 * is applied when it ends (at once with session_on_loop). 0, or the error that kept it from
 * starting. */
int sch_shell_run_once(sch_shell *sh);
/* Writes the cache to path (or the dump path) as a protobuf Snapshot. */
int sch_shell_dump(sch_shell *sh, const char *path);
/* The readiness check for /readyz ("informer-sync"). */
int sch_shell_ready(void *sh, char *reason, size_t cap);
/* Binds in flight or waiting. */
size_t sch_shell_binds_pending(const sch_shell *sh);
/* The shell's cache (borrowed): for tools that fill it without a server. */
sch_cache *sch_shell_cache(sch_shell *sh);
/* Sessions whose result has been applied, and whether one is in flight. */
uint64_t sch_shell_sessions(const sch_shell *sh);
bool sch_shell_session_running(const sch_shell *sh);

/* ---- the shell's rules, pure (unit-tested) ---- */

#define SCH_SHELL_MIN_GAP_MS 200

/* Whether an informer change is work a session should see soon: a pod of one of names
 * (n = 0: "volcano") added without a node and not terminating, or a PodGroup added, or one
 * whose phase became Pending (or empty). Updates of pods (status, our own condition
 * patches, bind confirmations) and resyncs are not. */
bool sch_shell_is_new_work(sch_cache_kind kind, const void *old_obj, const void *new_obj,
                           const char *const *names, size_t n);
/* Milliseconds from now until an early session may start: delay_ms, or later when the last
 * session started less than min_gap_ms before that. */
uint64_t sch_shell_early_delay(uint64_t now_ms, uint64_t last_session_ms, uint64_t delay_ms,
                               uint64_t min_gap_ms);
/* Whether a PodGroup status that changed waits for a later session: while binds of its
 * pods are in flight (binding), and then up to hold_ms from held_since_ms (0: not held yet)
 * while bound pods are not Running yet (starting), so that one PATCH carries the phase
 * Running and the running count instead of Running with 0 and then the count: a Job whose
 * pods start at once goes Pending -> Inqueue -> Running in two writes, and the period still
 * bounds how long the status waits after the binds are confirmed. */
bool sch_shell_pg_hold(bool binding, bool starting, uint64_t held_since_ms, uint64_t now_ms,
                       uint64_t hold_ms);

/* Whether a PodGroup's status is written before the binds of its pods, which wait for the
 * answer: the cached object pg still reads Pending (or has no phase) and the session decided
 * phase, another one. Asked only for a PodGroup whose pods the session binds. */
bool sch_shell_pg_leads(const Kiln__PodGroup *pg, sch_pg_phase phase);

#define SCH_SHELL_INVALID_QUIET_MS 30000
/* Whether a PodGroup whose only change is JobValid's condition (a gang that has fewer pods
 * than minAvailable, invalid since invalid_since_ms) is left unwritten: for quiet_ms, the
 * time a controller takes to create a gang's pods, after which a gang still incomplete is
 * told why. */
bool sch_shell_pg_quiet(uint64_t invalid_since_ms, uint64_t now_ms, uint64_t quiet_ms);

/* The two rules above with their memory: since when the PodGroup key has been held (or
 * invalid) is read from prev and kept in next, the maps of this period and the next. */
bool sch_shell_pg_quiet_track(const kc_strmap *prev, kc_strmap *next, const char *key,
                              uint64_t now_ms, uint64_t quiet_ms);
bool sch_shell_pg_hold_track(const kc_strmap *prev, kc_strmap *next, const char *key, bool binding,
                             bool starting, uint64_t now_ms, uint64_t hold_ms);

/* The conditions a PodGroup's status gets: the cached ones (cur, may be NULL), with the
 * session's condition (ps) replacing the one of its type, a new one appended, and an
 * Unschedulable=True turned False once the gang is Scheduled (Volcano leaves it True,
 * which reads as if the gang were still stuck). Changed conditions get ts as their
 * transition time. conds and cptr have room for cur's conditions plus one; cptr[i] points
 * into conds, whose strings are borrowed from cur, ps and ts. Returns how many;
 * *changed: whether any differs from cur in status, reason or message, or was added. */
/* Binds queued per turn of the loop when a session's result is applied: about 1.5 ms of
 * the loop's CPU; the watch and the binds already queued get their turn in between. */
#define SCH_SHELL_BIND_SLICE 1000
/* The end of the slice that starts at next, of n items. */
size_t sch_shell_slice_end(size_t next, size_t n, size_t slice);

/* Whether the pod a session decided to bind (then, from its snapshot) is still the same
 * pending pod in the cache (now, NULL when gone): same uid, no node, not terminating. */
bool sch_shell_still_pending(const Kiln__Pod *then, const Kiln__Pod *now);
/* Puts into foreign ("ns/group" keys) the PodGroups named by pods that are not this
 * scheduler's (tasks with no job in snap). 0 or KC_ENOMEM (then the set is partial). */
int sch_shell_foreign_groups(const sch_snapshot *snap, kc_strmap *foreign);

/* Sets each zero count of ps (running, succeeded, failed) to null in status (borrowed, the
 * "status" of a merge patch): Volcano leaves a zero out, and null removes an old value.
 * 0, KC_EINVAL without a status, or KC_ENOMEM. */
int sch_shell_pg_zero_counts(json_t *status, const sch_pg_status *ps);

/* Whether a Queue's written resource list (have, as the object holds it) is want exactly:
 * the same cpu and memory, and the same non-zero scalars, so an unchanged allocation is
 * not written again. */
bool sch_shell_resource_matches(const sch_snapshot *snap, const sch_resource *want,
                                const Kiln__Resource *have);

size_t sch_shell_pg_conditions(const Kiln__PodGroupStatus *cur, const sch_pg_status *ps,
                               const char *ts, Kiln__PodGroupCondition *conds,
                               Kiln__PodGroupCondition **cptr, bool *changed);

#endif
