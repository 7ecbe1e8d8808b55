/* The JobFlow and JobTemplate controllers' decisions (Volcano pkg/controllers/jobflow and
 * pkg/controllers/jobtemplate) as pure functions of the flow, its templates, the Jobs and the
 * time: which Jobs to create (a flow's Job once every target's Job has completed), the status
 * (Jobs by phase, per-Job conditions and history, the flow's phase by Volcano's state
 * machine), the Jobs to delete when a flow with jobRetainPolicy delete has succeeded, and the
 * template's jobDependsOnList. Volcano's webhook refuses a flow whose dependencies are not a
 * DAG; Kiln has no webhook and CEL cannot walk the graph, so the core finds the cycle (or the
 * undefined target) and fails the flow with the webhook's message. */
#ifndef CTL_JOBFLOW_H
#define CTL_JOBFLOW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_job.h"
#include "kc_error.h"
#include "ctl_note.h"

#define CTL_JF_API         "flow.volcano.sh/v1alpha1"
#define CTL_JF_BY_TEMPLATE "volcano.sh/createdByJobTemplate"
#define CTL_JF_BY_FLOW     "volcano.sh/createdByJobFlow"

/* A Job made from a template, as the controllers keep it. */
typedef struct {
  char ns[CTL_NAME_MAX];
  char name[CTL_NAME_MAX];
  char phase[32];
  char created[40];                   /* metadata.creationTimestamp */
  char by_template[2 * CTL_NAME_MAX]; /* label volcano.sh/createdByJobTemplate */
  char by_flow[2 * CTL_NAME_MAX];     /* label volcano.sh/createdByJobFlow */
  char flow_owner[CTL_NAME_MAX];      /* the controlling JobFlow's name, "" when none */
  json_t *status;                     /* runningDuration, taskStatusCount, retryCount (new ref) */
} ctl_jf_job;

/* Lookups into the caches: the Job ns/name and the JobTemplate ns/name, or NULL. */
typedef struct {
  const ctl_jf_job *(*job)(void *ud, const char *ns, const char *name);
  const json_t *(*template)(void *ud, const char *ns, const char *name);
  void *ud;
} ctl_jf_lookup;

typedef ctl_note ctl_jf_event;

#define CTL_JF_MAX_EVENTS 8

typedef struct {
  json_t **create; /* new: the Jobs to create, in the flow's order (ncreate) */
  size_t ncreate;
  char (*del)[CTL_NAME_MAX]; /* the Jobs to delete (retain policy delete), ndel */
  size_t ndel;
  json_t *status; /* new: the status to write, or NULL when unchanged */
  ctl_jf_event ev[CTL_JF_MAX_EVENTS];
  size_t nev;
  /* "Succeed" or "Failed" when Volcano's state machine counts this sync in its
   * jobflow_succeed_phase_count / jobflow_failed_phase_count (a Pending or Running flow
   * found succeeded, a Pending one found failed), else NULL. Static. */
  const char *counted;
  int err; /* nonzero: retry with backoff (a template is missing, ...) */
  char errmsg[300];
  char cycle[300]; /* the flow failed on this cycle ("a -> b -> a"), for the log */
} ctl_jf_plan;

/* Decides for flow (borrowed). jobs are the Jobs labelled as created by this flow (borrowed);
 * now_ms stamps the running histories. 0 or KC_ENOMEM. The Jobs to create are made with their
 * status as it will be once they exist: the shell writes plan->status after the creations. */
KC_NODISCARD int ctl_jobflow_sync(const json_t *flow, const ctl_jf_job *const *jobs, size_t njobs,
                                  const ctl_jf_lookup *lk, int64_t now_ms, ctl_jf_plan *plan);
void ctl_jf_plan_free(ctl_jf_plan *plan);

/* Volcano's webhook message for a flow graph that is not a DAG. */
#define CTL_JF_NOT_DAG "jobflow Flow is not DAG"

/* The DAG check: 0, or KC_EINVAL with the webhook's message in err ("jobflow Flow is not DAG:
 * vertex is not defined: x", "jobflow Flow is not DAG"); on a cycle, cycle (may be NULL) gets
 * it as "a -> b -> a", each flow depending on the next. */
KC_NODISCARD int ctl_jobflow_check_dag(const json_t *flows, char *err, size_t errlen, char *cycle,
                                       size_t cyclecap);

/* Volcano's patchJobTemplate: the template's spec (borrowed) with a flow's patch.jobSpec
 * (borrowed) merged in. New; NULL on memory exhaustion. */
json_t *ctl_jobflow_patch_spec(const json_t *base, const json_t *patch);

/* The JobTemplate controller: the status of tmpl (borrowed) listing the names of its Jobs
 * (sorted), or NULL when there is nothing to write (no Jobs, as Volcano leaves the status
 * alone then, or the list is already that). New. */
json_t *ctl_jobtemplate_status(const json_t *tmpl, const char *const *names, size_t n);

/* Splits a createdByJobTemplate value "ns.name" (Volcano's strings.Split on "."): false when
 * it has not exactly two parts. */
bool ctl_jf_split_ref(const char *v, char *ns, size_t nscap, char *name, size_t namecap);

#endif
