/* `vcctl job whatif` (issue 34): where a Job would land if it were submitted now, whom it would
 * push out, and why not. Pure: the caller hands over the cluster as kiln-scheduler's cache sees
 * it (a Kiln__Snapshot message), the Job as the API server would store it and the scheduler's
 * configuration; nothing here does I/O.
 *
 * The answer is computed by the two cores the daemons run, linked in, not by a model of them:
 *   1. the job controller's sync (ctl_job_sync) plans the Job's PodGroup and then, with the
 *      PodGroup admitted, its pods, the job plugins' changes included, as kiln-controller
 *      would create them;
 *   2. those objects join the cluster's snapshot and one session of the scheduler's core runs
 *      over it with the cluster's configuration (sch_session_*), as kiln-scheduler would.
 * The session's decisions are then read for the Job: admitted (enqueue), each task's node
 * (allocate, backfill, or pipelined behind victims), the victims by Job, the PodGroup's
 * condition and, for a task that was not placed, each node's reason. */
#ifndef VC_WHATIF_H
#define VC_WHATIF_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sch_framework.h"
#include "snapshot.pb-c.h"
#include "kc_error.h"

typedef struct {
  const json_t *job;             /* the Job (borrowed): after the API server's defaults */
  const Kiln__Snapshot *cluster; /* borrowed: nodes, pods, PodGroups, queues, classes */
  const sch_conf *conf;          /* borrowed: the scheduler's configuration */
  int64_t now;                   /* Unix seconds: creation times and the session's clock */
  /* Judge the Job against its queue's deserved share instead of today's use: the queue's
   * other work is left out, every other queue's work too (their PodGroups stay, so the
   * queues' shares are computed as today), and the queue may use at most its deserved
   * share (spec.deserved, else what the proportion plugin gives it today). */
  bool at_capacity;
  /* The ResourceClaimTemplates of the Job's namespace (a JSON array, borrowed; NULL: none):
   * the claims kube-controller-manager would make from them for the Job's pods join the
   * snapshot, so that a pod claiming devices is placed with its devices. */
  const json_t *claim_templates;
} vc_whatif_in;

typedef struct {
  char *name; /* pod name */
  char *node; /* NULL: not placed */
  /* "allocate", "backfill" (a pod without requests), "pipelined" (waits for victims), or
   * NULL when not placed. */
  const char *how;
  char *why; /* not placed: the session's reason for the pod, or NULL */
  /* Placed with Dynamic Resource Allocation: its claims, each {claim, allocatedBefore,
   * allocation}: the status.allocation kiln-scheduler would write (devices, node selector),
   * null for a claim allocated before. NULL: the pod claims nothing. */
  json_t *claims;
} vc_whatif_task;

/* Claims of one pod that what-if reports at most. */
#define VC_WHATIF_MAX_CLAIMS 64

typedef struct {
  char *job;   /* "ns/name": the Volcano Job (the pod's owner) or else its PodGroup */
  char *pod;   /* "ns/name" */
  char *node;  /* where it runs */
  char *queue; /* its PodGroup's queue */
  int32_t priority;
  char *action; /* "preempt" or "reclaim" (the session's eviction reason) */
} vc_whatif_victim;

typedef struct {
  char *node;
  char *reason; /* "fits", or the predicates' and resources' reasons, "; "-separated */
} vc_whatif_node;

typedef struct {
  char *job, *namespace, *podgroup, *queue;
  int32_t priority, min_available;
  int nnodes, npods, npodgroups, nqueues; /* the cluster as read */
  /* The controller would not create the pods (a closed queue, a plugin error): why. */
  char *controller_message;
  char *phase;         /* the PodGroup's phase after the session */
  bool admitted;       /* enqueue admitted it (phase Inqueue or Running) */
  bool placed;         /* at least minAvailable tasks allocated (or backfilled) now */
  bool after_eviction; /* placed only once victims are gone (pipelined) */
  vc_whatif_task *tasks;
  size_t ntasks;
  vc_whatif_victim *victims;
  size_t nvictims;
  char *reason;       /* the PodGroup condition's reason (Unschedulable, ...), or NULL */
  char *message;      /* its message: the one kiln-scheduler writes, or NULL */
  char *why_pending;  /* `vcctl job view`'s Why Pending line for that PodGroup, or NULL */
  char *reasons_task; /* the pod the per-node reasons are for */
  vc_whatif_node *nodes;
  size_t nnodes_reasons;
  bool at_capacity;
  double session_s; /* filled by the caller when it times the call; 0 otherwise */
} vc_whatif;

/* Runs the what-if. *out is new (vc_whatif_free). Returns 0, or KC_EINVAL (a Job the
 * controller cannot plan, with the reason in err), KC_ENOMEM, or a session error. */
KC_NODISCARD int vc_whatif_run(const vc_whatif_in *in, vc_whatif **out, char *err, size_t errlen);
void vc_whatif_free(vc_whatif *w);

/* The answer as `kubectl describe` prints an object. */
void vc_whatif_print(FILE *out, const vc_whatif *w);
/* The same as data (new reference), for -o json. */
json_t *vc_whatif_json(const vc_whatif *w);

#endif
