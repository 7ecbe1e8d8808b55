/* What sch_shell.c (the cycle, the session on the worker, the lifecycle) and
 * sch_shell_status.c (the status writes, events and explanations) share: the shell's state
 * and the calls between the two (second tier: sch_shell__). Private to the shell: nothing
 * outside scheduler/shell includes it. */
#ifndef SCH_SHELL_INT_H
#define SCH_SHELL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

#include <uv.h>

#include "kc_strmap.h"
#include "sch_binder.h"
#include "sch_cache.h"
#include "sch_conf.h"
#include "sch_evictor.h"
#include "sch_framework.h"
#include "sch_metrics.h"
#include "sch_shell.h"
#include "sch_usage.h"
#include "sch_volumes.h"

/* One session in flight. The loop takes the snapshot (arrays of pointers, cheap) and holds
 * the cache, so that the objects it points to outlive the watch events that replace them;
 * a libuv worker thread builds the session's view, runs the actions and closes the session;
 * back on the loop the result is applied and the hold ends. Meanwhile the loop decodes
 * watch events, sends binds and status writes, and answers probes: nothing the session
 * reads is written by anyone (the configuration is not reloaded and no second session
 * starts while one is in flight). */
typedef struct sch_run {
  uv_work_t req;
  sch_shell *sh;
  sch_cache_snap cs;
  sch_snapshot_options so;
  sch_session_options sopt;
  const sch_conf *conf;
  sch_snapshot *snap;
  sch_result *res;
  int rc;
  uint64_t t0, open_ns, work_ns;
  uint64_t snap_ns;  /* on the loop: the snapshot taken */
  uint64_t apply_ns; /* on the loop: the result applied, all slices */
  uint64_t rest_ns;  /* of which the last slice: everything but the binds */
  size_t next_bind;  /* the result is being applied: binds before this one are queued */
  bool applying;
  uint64_t *action_ns; /* per configured action, 0 when it did not run */
  void *usage_block;   /* the snapshot's node_usages (sch_usage_fill), owned */
  uv_mutex_t mu;       /* guards done: the shutdown waits for a running worker */
  uv_cond_t cv;
  bool done;
} sch_run;

struct sch_shell {
  uv_loop_t *loop;
  kc_client *client;
  kc_event_recorder *events;
  kc_metrics *metrics;
  sch_shell_options opt;
  char device_cm[256]; /* the deviceshare ConfigMap's name the cache watches */
  sch_cache *cache;
  sch_binder *binder;
  sch_usage *usage;     /* nodes' load for the usage plugin, from the conf's metrics source */
  sch_volumes *volumes; /* the volume writes and waits before binds */
  uint64_t prebinds;    /* numbers the gates of pods with writes before their bind */
  sch_conf *conf;
  /* The configuration file as last seen. */
  bool conf_seen;
  struct timespec conf_mtime;
  off_t conf_size;
  ino_t conf_ino;
  uv_timer_t timer; /* the period */
  uv_timer_t early; /* a session soon after new work */
  uv_idle_t apply;  /* the next slice of a session's binds, once per turn of the loop */
  bool closing;
  int timers_open;
  uint64_t last_session_ms; /* uv_now() when the last session started */
  sch_carry carry;          /* what the last session hands the next one */
  uint64_t period_ms;
  size_t writes_in_flight;
  kc_strmap pg_written; /* "ns/name" -> written */
  kc_strmap q_written;  /* name -> written */
  kc_strmap pg_held;    /* "ns/name" -> uv_now() + 1 when its changed status was first held */
  kc_strmap pg_invalid; /* "ns/name" -> uv_now() + 1 since when its job fails JobValid */
  kc_strmap why_last;   /* pod "ns/name" -> explained (owned) */
  kc_strmap ev_last;    /* "kind\x1fkey\x1freason" -> last message (owned) */
  uint64_t sessions;
  bool logged_not_synced;
  /* Metrics (NULL without a registry). */
  kc_series *m_e2e, *m_open, *m_attempt_ok, *m_attempt_unsched, *m_attempt_err;
  kc_metric *m_action, *m_q_cpu, *m_q_mem;
  /* Volcano's queue_deserved_*, queue_capacity_*, queue_real_capacity_* (cpu, memory). */
  kc_metric *m_q_res[3][2];
  /* ... and their scalar_resources series (GPUs and other extended resources), with
   * queue_allocated_scalar_resources: deserved, capacity, real capacity, allocated. */
  kc_metric *m_q_scalar[4];
  kc_series *m_preempt_attempts, *m_preempt_victims;
  kc_metric *m_evictions;
  sch_metrics mx; /* the job, queue, plugin and stage metrics */
  sch_evictor *evictor;
  sch_run *run;         /* the session in flight, or NULL */
  uint64_t binds_stale; /* binds dropped: the pod changed while its session ran */
};

/* The memory goes once nothing can call back into the shell. */
static inline void sch_shell__maybe_release(sch_shell *sh) {
  if (sh->timers_open == 0 && sh->writes_in_flight == 0 && sh->run == NULL)
    free(sh);
}

/* sch_shell_status.c. */

/* The maps of what was written and told (empty at _init; _close frees their entries). */
void sch_shell__status_init(sch_shell *sh);
void sch_shell__status_close(sch_shell *sh);

/* A deleted PodGroup: the status last written to key is forgotten. */
void sch_shell__forget_pod_group(sch_shell *sh, const char *key);

/* The PodGroup's status as the session wants it, written when it differs from the cached
 * one (see sch_shell_status.c); gate: its binds wait for the answer. Whether it was sent. */
bool sch_shell__write_pod_group(sch_shell *sh, const sch_snapshot *snap, const sch_pg_status *ps,
                                kc_strmap *next_held, kc_strmap *next_invalid, uint64_t now_ms,
                                bool gate);

/* Everything of a session's result but the binds: evictions and nominations, PodGroup and
 * Queue status, events, explanations and the session's metrics. */
void sch_shell__apply_rest(sch_shell *sh, const sch_snapshot *snap, const sch_result *res);

#endif
