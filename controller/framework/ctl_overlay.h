/* What kiln-controller knows beyond its informers' caches, as pure functions over them:
 * the objects its own writes returned (write-through), and whether a new Job status differs
 * from the stored one only in its pod counters (the status batching of ctl_shell.c). */
#ifndef KILN_CTL_OVERLAY_H
#define KILN_CTL_OVERLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl_job.h"
#include "kc_error.h"
#include "kc_store.h"
#include "kc_strmap.h"
#include "volcano.pb-c.h"

/* Write-through: what our own writes of a Job or a PodGroup returned, used in place of the
 * cached copy until the watch brings that version or a newer one. The watch lags seconds
 * behind a busy API server (a run of 1,000 one-pod Jobs on 2 cores saw 5-13 s); a sync in
 * between would compute from the old status and its write would fail on Conflict (2.7
 * conflicts per Job were measured before this), or create the PodGroup again (AlreadyExists).
 * Volcano's job cache takes the same shortcut: it stores the object UpdateStatus returned.
 * Versions are compared as etcd's decimal integers; where one is not an integer, the entry
 * is used until the cache shows a different version. Entries older than CTL_WRITTEN_TTL_NS
 * are not trusted. */
typedef struct {
  char rv[64];
  void *obj; /* Kiln__Job* or Kiln__PodGroup*, owned (kc_msg_free) */
  uint64_t at_ns;
} ctl_written;

#define CTL_WRITTEN_TTL_NS (60ull * 1000000000ull)

/* Keeps obj (a decoded Kiln__Job or Kiln__PodGroup, owned from here on, also on error) as
 * the newest version of key in m, written at now_ns. */
void ctl_write_through(kc_strmap *m, const char *key, void *obj, uint64_t now_ns);
/* The newest known version of key: the cached object, or the written one when the cache is
 * behind it; NULL when the object is in neither. An entry the cache has caught up with is
 * dropped. *rv (if rv) gets that object's resourceVersion (NULL when none). */
const void *ctl_newest(kc_strmap *m, const kc_store *st, const char *key, uint64_t now_ns,
                       const char **rv);
void ctl_written_drop(kc_strmap *m, const char *key);
/* Frees every entry and the map's memory. */
void ctl_written_close(kc_strmap *m);

/* The same for the small controllers' own JSON objects (CronJob, JobFlow, JobTemplate), whose
 * status writes come back before the watch shows them. */
typedef struct {
  char rv[64];
  json_t *obj; /* a reference of our own */
  uint64_t at_ns;
} ctl_json_written;

/* Keeps obj (borrowed: the entry takes a reference of its own) as the newest version of key,
 * written at now_ns; a previous entry for key is released. 0, or KC_ENOMEM (nothing kept). */
KC_NODISCARD int ctl_json_write_through(kc_strmap *m, const char *key, json_t *obj,
                                        uint64_t now_ns);
/* The newest known version of key (borrowed; valid until the next call on m or the store):
 * the written one while the cache holds an older version, else the cached one (NULL when
 * the cache has no such object: it was deleted). An entry the cache has caught up with, one
 * whose version cannot be compared, one older than CTL_WRITTEN_TTL_NS, or one of a deleted
 * object is dropped. */
const json_t *ctl_json_newest(kc_strmap *m, const kc_store *st, const char *key, uint64_t now_ns);
/* Releases every entry and the map's memory. */
void ctl_json_written_close(kc_strmap *m);

/* a's resourceVersion against b's: 1 newer, 0 the same, -1 older, 2 not comparable. */
int ctl_rv_cmp(const char *a, const char *b);

/* Whether next differs from the stored status (may be NULL: never counters-only) only in
 * pending, running, succeeded, failed, terminating, unknown and taskStatusCount. */
bool ctl_counters_only(const Kiln__JobStatus *stored, const ctl_status *next);

/* What a new Job status changes against the stored one, for how long its write may wait to
 * be merged with the next one (the status batching of ctl_job_input_shell.c). */
typedef enum {
  CTL_CHANGE_SHOWN = 0, /* phase, minAvailable, retryCount, conditions, ...: written at once */
  CTL_CHANGE_RUNNING,   /* pod counters, running among them (the RUNNINGS column) */
  CTL_CHANGE_HIDDEN,    /* pod counters that `kubectl get vcjob` does not show, running aside */
} ctl_change;

/* A counters-only change with running among them is written at most this long after the
 * first was computed. Kubernetes' Job controller batches pod-driven status updates the same
 * way (syncJobBatchPeriod, 1 s): with one-pod Jobs the count of a pod that is created and
 * starts within the period is never written twice. */
#define CTL_STATUS_BATCH_NS        (1000ull * 1000000ull)
/* Counters that no column of `kubectl get vcjob` shows (pending, succeeded, failed,
 * terminating, unknown, taskStatusCount) wait this long: a Job's next shown change (Running,
 * Completed, a RUNNINGS count) carries them, so the Pending count of a created pod is not a
 * write of its own (issue 32); a Job whose pods never start still gets its counts. */
#define CTL_STATUS_HIDDEN_BATCH_NS (10000ull * 1000000ull)

/* The class of next against stored (NULL: CTL_CHANGE_SHOWN, the first write goes at once). */
ctl_change ctl_status_change(const Kiln__JobStatus *stored, const ctl_status *next);

/* When a deferred write of change c falls due: due_ns is the deadline kept so far (0 none),
 * now_ns the clock; the earlier of the two deadlines. 0: write now (c is CTL_CHANGE_SHOWN or
 * the deadline has passed). */
uint64_t ctl_status_due(uint64_t due_ns, uint64_t now_ns, ctl_change c);

#endif
