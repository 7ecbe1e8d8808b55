/* The CronJob controller's decisions (see ctl_cronjob.h). Volcano's order is kept: finished
 * Jobs leave the active list and the oldest beyond the history limits are deleted; orphans
 * and stale active references are reported; then, unless suspended, the zone and schedule are
 * checked, the most recent unmet schedule found, the concurrency policy applied and the Job
 * created. */
#include "ctl_cronjob.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cron.h"
#include "kc_codec.h"
#include "kc_error.h"
#include "ctl_note.h"

#define NOTE(p, ...) ctl_note_add((p)->ev, &(p)->nev, CTL_CJ_MAX_EVENTS, __VA_ARGS__)

bool ctl_cj_finished(const char *phase) {
  return !strcmp(phase, "Completed") || !strcmp(phase, "Failed") || !strcmp(phase, "Terminated");
}

static ssize_t active_index_uid(const json_t *active, const char *uid) {
  size_t i;
  json_t *r;
  if (!*uid)
    return -1;
  json_array_foreach(active, i, r) if (!strcmp(ctl_jstr(r, "uid"), uid)) return (ssize_t)i;
  return -1;
}

static bool active_has_name(const json_t *active, const char *ns, const char *name) {
  size_t i;
  json_t *r;
  json_array_foreach(active, i, r) if (!strcmp(ctl_jstr(r, "name"), name) &&
                                       !strcmp(ctl_jstr(r, "namespace"), ns)) return true;
  return false;
}

static int64_t time_ms(const char *s) {
  int64_t ms;
  return *s && kc_rfc3339_parse(s, &ms) == 0 ? ms : CTL_CRON_NEVER;
}

/* byJobCreationTimestamp: unset times last, then oldest first, then by name. */
static int by_creation(const void *a, const void *b) {
  const ctl_cj_job *x = *(ctl_cj_job *const *)a, *y = *(ctl_cj_job *const *)b;
  if (!x->created_ms != !y->created_ms)
    return x->created_ms ? -1 : 1;
  if (x->created_ms != y->created_ms)
    return x->created_ms < y->created_ms ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int add_delete(ctl_cj_plan *p, const char *name, const char *uid, bool replace) {
  ctl_cj_delete *d = realloc(p->del, (p->ndel + 1) * sizeof(*d));
  if (!d)
    return KC_ENOMEM;
  p->del = d;
  d += p->ndel++;
  snprintf(d->name, sizeof(d->name), "%s", name);
  snprintf(d->uid, sizeof(d->uid), "%s", uid);
  d->replace = replace;
  return 0;
}

static int remove_oldest(ctl_cj_plan *p, const ctl_cj_job **v, size_t n, int64_t limit) {
  if (limit < 0 || (int64_t)n <= limit)
    return 0;
  qsort(v, n, sizeof(*v), by_creation);
  for (size_t i = 0; i < n - (size_t)limit; i++) {
    int rc = add_delete(p, v[i]->name, v[i]->uid, false);
    if (rc)
      return rc;
    p->write_status = true;
  }
  return 0;
}

/* processFinishedJobs. */
static int finished_jobs(const json_t *spec, json_t *active, const ctl_cj_job *jobs, size_t n,
                         ctl_cj_plan *p) {
  const ctl_cj_job **ok = calloc(n + 1, sizeof(*ok)), **bad = calloc(n + 1, sizeof(*bad));
  size_t nok = 0, nbad = 0;
  int rc = KC_ENOMEM;
  if (!ok || !bad)
    goto out;
  for (size_t i = 0; i < n; i++) {
    const ctl_cj_job *j = &jobs[i];
    if (!ctl_cj_finished(j->phase))
      continue;
    ssize_t at = active_index_uid(active, j->uid);
    if (at >= 0) {
      json_array_remove(active, (size_t)at);
      NOTE(p, "Normal", "SawCompletedJob", "Saw completed job: %s in active, remove", j->name);
      p->write_status = true;
    }
    if (!strcmp(j->phase, "Completed")) {
      json_t *last = json_object_get(p->status, "lastSuccessfulTime");
      int64_t at_ms = time_ms(j->finished_at), last_ms = time_ms(json_string_value(last) ?: "");
      if (!last || json_is_null(last) ||
          (at_ms != CTL_CRON_NEVER && (last_ms == CTL_CRON_NEVER || at_ms > last_ms))) {
        json_object_set_new(p->status, "lastSuccessfulTime",
                            *j->finished_at ? json_string(j->finished_at) : json_null());
        p->write_status = true;
      }
      ok[nok++] = j;
    } else if (!strcmp(j->phase, "Failed")) {
      bad[nbad++] = j;
    }
  }
  json_t *sl = json_object_get(spec, "successfulJobsHistoryLimit"),
         *fl = json_object_get(spec, "failedJobsHistoryLimit");
  rc = 0;
  if (json_is_integer(sl))
    rc = remove_oldest(p, ok, nok, json_integer_value(sl));
  if (!rc && json_is_integer(fl))
    rc = remove_oldest(p, bad, nbad, json_integer_value(fl));
out:
  free(ok);
  free(bad);
  return rc;
}

/* processCtlJobAndActiveJob, without Volcano's fresh GET of the CronJob: the shell's view
 * already holds the status its own last write returned. */
static void orphans_and_stale(const json_t *cj, json_t *active, const ctl_cj_job *jobs, size_t n,
                              ctl_cj_lookup_fn lookup, void *ud, ctl_cj_plan *p) {
  for (size_t i = 0; i < n; i++)
    if (active_index_uid(active, jobs[i].uid) < 0 && !ctl_cj_finished(jobs[i].phase))
      NOTE(p, "Warning", "OrphanedJob",
           "Detected orphaned job forgotted or not managed by controller: %s (UID: %s)",
           jobs[i].name, jobs[i].uid);
  const char *ns = ctl_jstr(json_object_get(cj, "metadata"), "namespace");
  for (size_t i = 0; i < json_array_size(active);) {
    json_t *r = json_array_get(active, i);
    const char *uid = ctl_jstr(r, "uid"), *name = ctl_jstr(r, "name");
    bool managed = false;
    for (size_t k = 0; k < n && !managed; k++)
      managed = !strcmp(jobs[k].uid, uid);
    const char *have =
        managed ? uid : lookup(ud, *ctl_jstr(r, "namespace") ? ctl_jstr(r, "namespace") : ns, name);
    if (!have) {
      NOTE(p, "Warning", "StaleReference", "Active job \"%s\" no longer exists (UID: %s)", name,
           uid);
    } else if (strcmp(have, uid) != 0) {
      NOTE(p, "Warning", "StaleReference",
           "Active job reference \"%s\" points to a different UID (expected: %s, actual: %s)", name,
           uid, have);
    } else {
      i++;
      continue;
    }
    json_array_remove(active, i);
    p->write_status = true;
  }
}

/* getJobFromTemplate. */
static json_t *job_from_template(const json_t *cj, int64_t scheduled_ms, const char *tz,
                                 const ctl_tzdb *zones) {
  const json_t *meta = json_object_get(cj, "metadata");
  const json_t *tmpl = json_object_get(json_object_get(cj, "spec"), "jobTemplate");
  const json_t *tmeta = json_object_get(tmpl, "metadata");
  char name[CTL_NAME_MAX + 24], when[48];
  snprintf(name, sizeof(name), "%s-%lld", ctl_jstr(meta, "name"),
           (long long)(scheduled_ms / 1000 / 60));
  if (ctl_cron_rfc3339(scheduled_ms, tz, zones, when, sizeof(when)))
    return NULL;
  json_t *labels = json_object_get(tmeta, "labels");
  json_t *ann = json_object_get(tmeta, "annotations");
  ann = json_is_object(ann) ? json_deep_copy(ann) : json_object();
  json_object_set_new(ann, CTL_CJ_SCHEDULED_ANNOTATION, json_string(when));
  json_t *m =
      json_pack("{s:s, s:s, s:o, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}", "name", name, "namespace",
                ctl_jstr(meta, "namespace"), "annotations", ann, "ownerReferences", "apiVersion",
                CTL_CJ_API, "kind", "CronJob", "name", ctl_jstr(meta, "name"), "uid",
                ctl_jstr(meta, "uid"), "controller", 1, "blockOwnerDeletion", 1);
  if (!m)
    return NULL;
  if (json_is_object(labels) && json_object_size(labels))
    json_object_set_new(m, "labels", json_deep_copy(labels));
  json_t *spec = json_object_get(tmpl, "spec");
  return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", CTL_CJ_API, "kind", "Job", "metadata", m,
                   "spec", spec ? json_deep_copy(spec) : json_object());
}

/* From the zone check to the Job to create (the part that runs unless suspended). */
static int schedule(const json_t *cj, const ctl_tzdb *zones, json_t *active, int64_t now_ms,
                    ctl_cj_plan *p) {
  const json_t *spec = json_object_get(cj, "spec"), *meta = json_object_get(cj, "metadata");
  const char *sched = ctl_jstr(spec, "schedule");
  json_t *tzj = json_object_get(spec, "timeZone");
  const char *tz = json_string_value(tzj);
  char err[256], full[512];
  if (tz && ctl_tz_check(tz, zones, err, sizeof(err))) {
    NOTE(p, "Warning", "InvalidTimeZone", "Invalid time zone \"%s\": %s", tz, err);
    p->err = kc_errorf(p->errmsg, sizeof(p->errmsg), KC_EINVAL, "%s", err);
    return 0;
  }
  bool tz_in;
  ctl_cron c;
  if (ctl_cron_format(sched, tz, zones, full, sizeof(full), &tz_in) == 0 && tz_in)
    NOTE(p, "Warning", "UnsupportedSchedule",
         "CRON_TZ or TZ in the schedule \"%s\" is not officially supported. If set, the "
         "TimeZone field will be ignored during execution.",
         sched);
  if (ctl_cron_parse(full, zones, &c, err, sizeof(err))) {
    NOTE(p, "Warning", "UnParseableCronJobSchedule", "unparseable schedule for cronjob: %s", sched);
    p->err = kc_errorf(p->errmsg, sizeof(p->errmsg), KC_EPARSE, "%s", err);
    return 0;
  }
  json_t *dl = json_object_get(spec, "startingDeadlineSeconds");
  ctl_cron_times t = {time_ms(ctl_jstr(meta, "creationTimestamp")),
                      time_ms(ctl_jstr(p->status, "lastScheduleTime")),
                      json_is_integer(dl) ? json_integer_value(dl) : -1};
  if (t.created_ms == CTL_CRON_NEVER)
    t.created_ms = 0;
  int64_t earliest, recent;
  ctl_missed missed;
  if (ctl_cron_most_recent(&c, &t, now_ms, true, &earliest, &recent, &missed, err, sizeof(err))) {
    NOTE(p, "Warning", "InvalidSchedule", "Error getting schedule time: %s", err);
    p->err = kc_errorf(p->errmsg, sizeof(p->errmsg), KC_ERANGE, "%s", err);
    return 0;
  }
  p->requeue = true;
  if (recent == CTL_CRON_NEVER || recent > now_ms) {
    p->requeue_ms = ctl_cron_requeue_ms(&c, &t, now_ms);
    return 0;
  }
  if (missed == CTL_MISSED_MANY)
    NOTE(p, "Warning", "TooManyMissedTimes",
         "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check "
         "clock skew");
  char name[CTL_NAME_MAX + 24];
  snprintf(name, sizeof(name), "%s-%lld", ctl_jstr(meta, "name"), (long long)(recent / 60000));
  if (active_has_name(active, ctl_jstr(meta, "namespace"), name) || t.last_schedule_ms == recent) {
    p->requeue_ms = ctl_cron_requeue_ms(&c, &t, now_ms);
    return 0;
  }
  const char *policy = ctl_jstr(spec, "concurrencyPolicy");
  if (!strcmp(policy, "Forbid") && json_array_size(active) > 0) {
    NOTE(p, "Warning", "ForbidConcurrent",
         "Skipping job creation because another job is already running");
    p->requeue_ms = ctl_cron_requeue_ms(&c, &t, now_ms);
    return 0;
  }
  if (!strcmp(policy, "Replace") && json_array_size(active) > 0) {
    NOTE(p, "Warning", "ReplaceConcurrent", "Replacing active job for CronJob");
    while (json_array_size(active) > 0) {
      json_t *r = json_array_get(active, 0);
      int rc = add_delete(p, ctl_jstr(r, "name"), ctl_jstr(r, "uid"), true);
      if (rc)
        return rc;
      json_array_remove(active, 0);
    }
    p->write_status = true;
  }
  p->create = job_from_template(cj, recent, tz, zones);
  if (!p->create)
    return KC_ENOMEM;
  p->scheduled_ms = recent;
  t.last_schedule_ms = recent; /* the requeue counts from the Job about to be created */
  p->requeue_ms = ctl_cron_requeue_ms(&c, &t, now_ms);
  return 0;
}

int ctl_cronjob_sync(const json_t *cj, const ctl_tzdb *zones, const ctl_cj_job *jobs, size_t njobs,
                     ctl_cj_lookup_fn lookup, void *ud, int64_t now_ms, ctl_cj_plan *p) {
  memset(p, 0, sizeof(*p));
  const json_t *st = json_object_get(cj, "status");
  p->status = json_is_object(st) ? json_deep_copy(st) : json_object();
  if (!p->status)
    return KC_ENOMEM;
  json_t *active = json_object_get(p->status, "active");
  if (!json_is_array(active)) {
    active = json_array();
    if (!active || json_object_set_new(p->status, "active", active))
      return KC_ENOMEM;
  }
  const json_t *spec = json_object_get(cj, "spec");
  int rc = finished_jobs(spec, active, jobs, njobs, p);
  if (rc)
    return rc;
  orphans_and_stale(cj, active, jobs, njobs, lookup, ud, p);
  if (json_is_true(json_object_get(spec, "suspend")))
    return 0;
  return schedule(cj, zones, active, now_ms, p);
}

void ctl_cj_plan_free(ctl_cj_plan *p) {
  json_decref(p->status);
  json_decref(p->create);
  free(p->del);
  memset(p, 0, sizeof(*p));
}

int ctl_cj_status_add_active(json_t *status, const json_t *job, int64_t scheduled_ms) {
  const json_t *m = json_object_get(job, "metadata");
  json_t *active = json_object_get(status, "active");
  if (!json_is_array(active)) {
    active = json_array();
    json_object_set_new(status, "active", active);
  }
  char when[48];
  if (!active || ctl_cron_rfc3339(scheduled_ms, "UTC", NULL, when, sizeof(when)))
    return KC_ENOMEM;
  if (active_index_uid(active, ctl_jstr(m, "uid")) < 0 &&
      json_array_append_new(active,
                            json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind", "Job", "namespace",
                                      ctl_jstr(m, "namespace"), "name", ctl_jstr(m, "name"), "uid",
                                      ctl_jstr(m, "uid"), "apiVersion", CTL_CJ_API,
                                      "resourceVersion", ctl_jstr(m, "resourceVersion"))))
    return KC_ENOMEM;
  json_object_set_new(status, "lastScheduleTime", json_string(when));
  return 0;
}

bool ctl_cj_controlled_by(const json_t *job, const char *cron_uid, char *owner, size_t cap) {
  size_t i;
  json_t *r;
  if (owner && cap)
    snprintf(owner, cap, "none");
  json_array_foreach(json_object_get(json_object_get(job, "metadata"), "ownerReferences"), i, r) {
    if (!json_is_true(json_object_get(r, "controller")))
      continue;
    if (owner && cap)
      snprintf(owner, cap, "%s", ctl_jstr(r, "name"));
    return !strcmp(ctl_jstr(r, "kind"), "CronJob") && !strcmp(ctl_jstr(r, "uid"), cron_uid);
  }
  return false;
}
