/* The scheduler's per-job, per-queue, per-plugin and per-stage metrics (Volcano
 * pkg/scheduler/metrics: job.go, queue.go, namespace.go and the job, plugin and stage
 * families of metrics.go), exposed from what a session's result and snapshot say.
 *
 * The session decides the values (drf's job shares, gang's retries, the queue plugins'
 * shares, requests, inqueue and overused answers, the plugin and stage timings); this module
 * only writes them into the registry on the loop thread, once per session, plus the bind
 * stages as binds end. A job's series go when the job leaves the snapshot, as Volcano's
 * cleanMetrics deletes them. Cheap on the hot path: a job's series are looked up once and
 * kept with it; a bind costs two gauge sets and a histogram observation.
 *
 * Families Volcano registers but never fills in its current release (e2e_job_scheduling_
 * start_time, the namespace_* of drf's removed namespace order, goroutines) are registered
 * too, and stay without series there as here. */
#ifndef SCH_METRICS_H
#define SCH_METRICS_H

#include <stdint.h>

#include "kc_metrics.h"
#include "kc_strmap.h"
#include "sch_framework.h"

/* Volcano's bucket bounds in milliseconds, prometheus.ExponentialBucketsRange(min, max, n) as
 * Go computes them: the numbers its client prints, from a Go program's output (C's pow rounds
 * some of them a unit in the last place apart, and the le labels would differ). */
extern const double sch_metrics_buckets_session[20]; /* 1 ms to 5 s: sessions, opening one */
extern const double sch_metrics_buckets_action[20];  /* 1 ms to 2 s: actions */
extern const double
    sch_metrics_buckets_job[30]; /* 100 ms to 120 s: a job's creation to its tasks' allocation */
extern const double sch_metrics_buckets_plugin[15]; /* 0.1 ms to 100 ms: a plugin's open or close */
extern const double sch_metrics_buckets_task[30];   /* 50 ms to 60 s: a pod's creation to a stage */
extern const double
    sch_metrics_buckets_stage[20];   /* 0.1 ms to 500 ms: one scheduling stage of a task */
#define SCH_METRICS_STAGE_BUCKETS 20 /* the length of sch_metrics_buckets_stage */

typedef struct sch_metrics {
  kc_metrics *reg; /* borrowed; NULL: everything is a no-op */
  kc_metric *plugin;
  kc_metric *stage;
  kc_metric *task_latency;
  kc_series *job_latency;
  kc_metric *job_duration, *job_start, *job_last, *job_share, *job_retry;
  kc_metric *unsched_tasks;               /* unschedule_task_count{job_id} */
  kc_series *unsched_jobs;                /* unschedule_job_count */
  kc_metric *q_request[3], *q_inqueue[3]; /* milli cpu, memory bytes, scalar resources */
  kc_metric *q_share, *q_weight, *q_overused;
  kc_series *reclaim_attempts, *reclaim_victims;
  kc_series *bind_stage, *bound, *assumed; /* the per-bind series, made at the first bind */
  kc_strmap jobs;                          /* "ns/name" -> the job's series (owned) */
  kc_strmap queues;                        /* names of the queues seen, whose series go with them */
} sch_metrics;

/* Registers the families in reg (borrowed; NULL leaves m inert). 0 or KC_E*. */
KC_NODISCARD int sch_metrics_init(sch_metrics *m, kc_metrics *reg);
void sch_metrics_close(sch_metrics *m);

/* After a session, on the loop thread: the plugin timings and stages, the reclaim attempts
 * and victims, the jobs' shares and
 * retries, the e2e job latency of the jobs with binds, the queue metrics; drops the series of
 * jobs no longer in snap. now_ms: the wall clock. */
void sch_metrics_session(sch_metrics *m, const sch_snapshot *snap, const sch_result *res,
                         int64_t now_ms);
/* A pod was assumed on its node (its bind handed over): the Assumed task latency since its
 * creation (created_s, Unix seconds; 0 unknown). */
void sch_metrics_assumed(sch_metrics *m, int64_t created_s, int64_t now_ms);
/* A bind ended: the Bind stage (the call's latency) and, when it succeeded, the Bound task
 * latency since the pod's creation (created_s, Unix seconds; 0 unknown). */
void sch_metrics_bound(sch_metrics *m, int err, uint64_t latency_ns, int64_t created_s,
                       int64_t now_ms);

#endif
