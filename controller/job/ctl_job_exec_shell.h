/* The job controller's executor: carries out one plan of ctl_job_sync() (ctl_job.h gives the
 * order of its stages), each stage's writes concurrently, and reports once with the result.
 * It knows nothing of the work queue or the request lists: what the result means for them
 * (forget, requeue, arm a delayed action) is the caller's to decide. Every write passes the
 * leader fence first. */
#ifndef CTL_JOB_EXEC_SHELL_H
#define CTL_JOB_EXEC_SHELL_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl_expect.h"
#include "ctl_job.h"
#include "kc_api.h"
#include "kc_error.h"
#include "kc_metrics.h"
#include "kc_store.h"
#include "kc_strmap.h"

struct kc_leader;
struct kc_event_recorder;

/* What a plan's writes did, for the caller's counters. */
typedef struct {
  uint64_t pods_created, pods_create_exists, pods_deleted, status_writes;
} ctl_exec_counts;

typedef struct {
  const char *key;       /* the Job key */
  int err;               /* 0 when every stage was written; else the first failure */
  bool conflict;         /* a write met a newer object (Conflict): the cache was stale */
  const ctl_plan *plan;  /* the plan carried out: its cancels, delayed action, requeue_after */
  ctl_exec_counts count; /* what its writes did */
} ctl_exec_result;

/* What the executor works with; everything borrowed, owned by the caller, and read when
 * used, so the caller may change it between plans (see stopping, pods). */
typedef struct {
  kc_client *client;
  struct kc_leader *leader;         /* the write fence; NULL: always allowed */
  struct kc_event_recorder *events; /* Events on the Job; NULL: only logged */
  bool protobuf;                    /* created pods are answered in protobuf */
  const kc_store *pods;             /* the pod cache (ctl_spod), for uids; NULL: none */
  ctl_expects *expect;              /* pods asked for and not seen yet: added to */
  kc_strmap *jobs_written;          /* write-through of Jobs (ctl_overlay.h) */
  kc_strmap *pgs_written;           /* and of PodGroups */
  kc_metric *m_latency, *m_completed, *m_failed; /* may be NULL */
  kc_metric *m_e2e; /* controller_job_e2e_creation_duration_milliseconds; may be NULL */
  /* Set by the caller when it stops: no further stage or follow-up write starts, and the
   * plan's Events are not recorded. */
  bool stopping;
  /* Called once per plan started, possibly before ctl_exec_start returns; r and what it
   * points to are borrowed for the call. */
  void (*done)(const ctl_exec_result *r, void *ud);
  void *ud;
} ctl_exec_env;

/* Carries out plan (stolen: closed here whatever happens) for the Job key (job and job_rv
 * borrowed: a copy is kept). 0: env->done will be called; KC_ENOMEM: it will not. env must
 * outlive the plan. */
KC_NODISCARD int ctl_exec_start(const ctl_exec_env *env, const char *key, const Kiln__Job *job,
                                const char *job_rv, ctl_plan *plan);

/* An Event on the Job through env->events (client-go's correlation; source
 * vc-controller-manager, so `kubectl describe vcjob` shows it), behind the fence. Best
 * effort: a failure is logged. */
void ctl_exec_record_event(const ctl_exec_env *env, const Kiln__Job *job, ctl_event_type type,
                           const char *reason, const char *message);

#endif
