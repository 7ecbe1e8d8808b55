/* The CronJob controller's decisions (Volcano pkg/controllers/cronjob: syncCronJob and its
 * helpers), as a pure function of the CronJob, the Jobs it controls and the time: what to
 * delete, what to create, the status to write, the events, and when to look again. The shell
 * (ctl_ctrl_cronjob.c) carries the plan out and reports the outcomes of its writes (created,
 * deleted, failed) with the events Volcano gives them. */
#ifndef CTL_CRONJOB_H
#define CTL_CRONJOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_cron.h"
#include "ctl_job.h"
#include "ctl_note.h"

#define CTL_CJ_API                  "batch.volcano.sh/v1alpha1"
#define CTL_CJ_SCHEDULED_ANNOTATION "volcano.sh/cronjob-scheduled-timestamp"

/* A Job controlled by the CronJob (its controller ownerRef names the CronJob's uid). */
typedef struct {
  char name[CTL_NAME_MAX];
  char uid[CTL_UID_MAX];
  char phase[32];       /* status.state.phase */
  char finished_at[40]; /* status.state.lastTransitionTime, "" when unset */
  int64_t created_ms;   /* metadata.creationTimestamp; 0 when unset */
} ctl_cj_job;

/* The uid of the Job ns/name, or NULL when there is none (a lister Get). */
typedef const char *(*ctl_cj_lookup_fn)(void *ud, const char *ns, const char *name);

typedef ctl_note ctl_cj_event;

typedef struct {
  char name[CTL_NAME_MAX];
  char uid[CTL_UID_MAX];
  bool replace; /* the Replace concurrency policy (a failure stops the creation) */
} ctl_cj_delete;

#define CTL_CJ_MAX_EVENTS 16

typedef struct {
  json_t *status;     /* new: the status to write (deleted Jobs already out of active) */
  bool write_status;  /* the status changed */
  ctl_cj_delete *del; /* new (free), ndel entries */
  size_t ndel;
  json_t *create;       /* new: the Job to create, or NULL */
  int64_t scheduled_ms; /* its scheduled time */
  ctl_cj_event ev[CTL_CJ_MAX_EVENTS];
  size_t nev;
  bool requeue; /* look again after requeue_ms (without an error) */
  int64_t requeue_ms;
  int err; /* nonzero: retry with backoff (Volcano returns an error) */
  char errmsg[300];
} ctl_cj_plan;

/* Decides for cj (borrowed) given the zone files its schedule and timeZone name (borrowed,
 * may be NULL; ctl_tzdb_read_cronjob), the Jobs it controls (borrowed, njobs), lookup for
 * Jobs of its active list that it does not control, and now_ms. *plan is filled (free it
 * with ctl_cj_plan_free). 0 or KC_ENOMEM; a CronJob that cannot run (bad zone, schedule) is
 * plan->err with the events, not a return code. */
int ctl_cronjob_sync(const json_t *cj, const ctl_tzdb *zones, const ctl_cj_job *jobs, size_t njobs,
                     ctl_cj_lookup_fn lookup, void *ud, int64_t now_ms, ctl_cj_plan *plan);
void ctl_cj_plan_free(ctl_cj_plan *plan);

/* Adds the Job the API server returned (borrowed) to status.active and sets lastScheduleTime
 * to scheduled_ms (after a create, or a create that found the Job already there). */
int ctl_cj_status_add_active(json_t *status, const json_t *job, int64_t scheduled_ms);
/* Whether a Job object (borrowed) is controlled by the CronJob of this uid, and finished. */
bool ctl_cj_controlled_by(const json_t *job, const char *cron_uid, char *owner, size_t cap);
bool ctl_cj_finished(const char *phase);

#endif
