/* The gang plugin (Volcano pkg/scheduler/plugins/gang): a job runs only when minAvailable
 * of its tasks can, and its PodGroup says why not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"

/* Which tasks a per-task minimum counts (Volcano CheckTaskValid/Ready/Pipelined). */
typedef enum { TASKS_VALID, TASKS_READY, TASKS_PIPELINED } task_check;

static bool task_counts(const sch_task *t, task_check k) {
  bool allocated = sch_task_status_allocated(t->status) || t->status == SCH_TASK_SUCCEEDED;
  switch (k) {
  case TASKS_VALID:
    return allocated || t->status == SCH_TASK_PENDING || t->status == SCH_TASK_PIPELINED;
  case TASKS_READY:
    return allocated || (t->status == SCH_TASK_PENDING && t->best_effort);
  case TASKS_PIPELINED:
    return allocated || t->status == SCH_TASK_PIPELINED ||
           (t->status == SCH_TASK_PENDING && t->best_effort);
  }
  return false;
}

/* Tasks of one Volcano task name (volcano.sh/task-spec) that the check counts. */
static int32_t task_count(const sch_snapshot *snap, const sch_job *j, const char *name,
                          task_check k) {
  int32_t n = 0;
  for (int32_t i = 0; i < j->ntasks; i++) {
    const sch_task *t = &snap->tasks[j->tasks[i]];
    if (t->pod->task_name && strcmp(t->pod->task_name, name) == 0 && task_counts(t, k))
      n++;
  }
  return n;
}

/* Volcano's skip rule: the per-task minimums bind only when the job's minAvailable is at
 * least their sum (TaskMinAvailableTotal). A Job asking for fewer pods than its tasks'
 * minimums add up to (minAvailable 4 of 8 replicas) must run with any minAvailable of
 * them, whichever tasks they belong to. */
static bool sch_gang_task_checks_apply(const sch_job *j) {
  const Kiln__PodGroup *pg = j->pod_group;
  if (!pg || !pg->spec)
    return false;
  int64_t total = 0;
  for (size_t i = 0; i < pg->spec->n_min_task_member; i++)
    if (pg->spec->min_task_member[i])
      total += pg->spec->min_task_member[i]->value;
  return (int64_t)j->min_available >= total;
}

/* Every task name of minTaskMember has its minimum of tasks the check counts. The valid
 * check ignores minimums of 0, as Volcano's does; the others compare them too (always
 * met). */
static bool tasks_meet(const sch_snapshot *snap, const sch_job *j, task_check k,
                       const char **which) {
  if (!sch_gang_task_checks_apply(j))
    return true;
  const Kiln__PodGroup *pg = j->pod_group;
  for (size_t i = 0; i < pg->spec->n_min_task_member; i++) {
    const Kiln__PodGroupSpec__MinTaskMemberEntry *e = pg->spec->min_task_member[i];
    if (!e || (k == TASKS_VALID && e->value == 0))
      continue;
    if (task_count(snap, j, e->key ? e->key : "", k) < e->value) {
      if (which)
        *which = e->key;
      return false;
    }
  }
  return true;
}

static bool gang_valid(sch_session *ssn, void *ctx, const sch_job *j, sch_valid *out) {
  const char *which = NULL;
  if (!tasks_meet(ssn->snap, j, TASKS_VALID, &which)) {
    KC_V(4, "gang: job %s: not enough valid pods of task %s", j->key, which ? which : "");
    out->pass = false;
    snprintf(out->reason, sizeof(out->reason), "NotEnoughPodsOfTask");
    snprintf(out->message, sizeof(out->message),
             "Not enough valid pods of each task for gang-scheduling");
    return true;
  }
  int32_t vtn = sch_job_valid_num(j);
  if (vtn < j->min_available) {
    out->pass = false;
    snprintf(out->reason, sizeof(out->reason), "NotEnoughTasks");
    snprintf(out->message, sizeof(out->message),
             "Not enough valid tasks for gang-scheduling, valid: %d, min: %d", vtn,
             j->min_available);
    return true;
  }
  return false;
}

/* Each subGroupPolicy with minSubGroups has that many sub-groups ready (pipelined: counting
 * pipelined tasks), each sub-group ready at subGroupSize tasks (Volcano's MinSubJobs). */
static bool subgroups_meet(const sch_snapshot *snap, const sch_job *j, bool pipelined) {
  const Kiln__PodGroupSpec *spec = j->pod_group ? j->pod_group->spec : NULL;
  for (size_t p = 0; spec && j->nsubjobs && p < spec->n_sub_group_policy; p++) {
    int32_t want = spec->sub_group_policy[p]->min_sub_groups, have = 0;
    for (int32_t k = 0; want > 0 && k < j->nsubjobs; k++) {
      const sch_subjob *sj = &j->subjobs[k];
      int32_t n = pipelined ? sch_subjob_pipelined_num(snap, sj) : sch_subjob_ready_num(snap, sj);
      have += sj->policy == (int32_t)p && n >= sj->min_available;
    }
    if (have < want)
      return false;
  }
  return true;
}

/* Volcano JobInfo.IsReady: the job-level count only (job order and the close use it). */
static bool job_level_ready(const sch_job *j) {
  return sch_job_ready_num(j) + j->pending_best_effort >= j->min_available;
}

static bool sch_gang_job_ready(const sch_snapshot *snap, const sch_job *j) {
  return tasks_meet(snap, j, TASKS_READY, NULL) && job_level_ready(j) &&
         subgroups_meet(snap, j, false);
}

static bool gang_ready(sch_session *ssn, void *ctx, const sch_job *j) {
  return sch_gang_job_ready(ssn->snap, j);
}

static bool sch_gang_job_pipelined(const sch_snapshot *snap, const sch_job *j) {
  int32_t occupied = sch_job_waiting_num(j) + sch_job_ready_num(j) + j->pending_best_effort;
  return tasks_meet(snap, j, TASKS_PIPELINED, NULL) && occupied >= j->min_available &&
         subgroups_meet(snap, j, true);
}

static int gang_pipelined(sch_session *ssn, void *ctx, const sch_job *j) {
  return sch_gang_job_pipelined(ssn->snap, j) ? SCH_PERMIT : SCH_REJECT;
}

static bool gang_starving(sch_session *ssn, void *ctx, const sch_job *j) {
  return sch_job_waiting_num(j) + sch_job_ready_num(j) < j->min_available;
}

static int gang_job_order(sch_session *ssn, void *ctx, const sch_job *l, const sch_job *r) {
  bool lr = job_level_ready(l), rr = job_level_ready(r);
  if (lr == rr)
    return 0;
  return lr ? 1 : -1; /* the job that is not ready yet goes first */
}

/* Victims may be taken from a job only while it keeps more than minAvailable ready. */
static bool gang_victims(sch_session *ssn, void *ctx, const sch_task *preemptor,
                         const int32_t *cands, size_t n, int32_t *out, size_t *nout) {
  const sch_snapshot *snap = ssn->snap;
  size_t k = 0;
  /* Candidates are the tasks of one node (a handful): counting the victims already taken
   * from the same job beats a per-job table, which would cost O(jobs) on every node a
   * preemptor looks at. */
  for (size_t i = 0; i < n; i++) {
    const sch_task *t = &snap->tasks[cands[i]];
    if (t->job < 0) {
      out[k++] = cands[i];
      continue;
    }
    int32_t taken = 0;
    for (size_t v = 0; v < k; v++)
      taken += snap->tasks[out[v]].job == t->job;
    const sch_job *j = &snap->jobs[t->job];
    if (sch_job_ready_num(j) - taken > j->min_available)
      out[k++] = cands[i];
  }
  *nout = k;
  return true;
}

/* Gang-aware eviction (gangpreempt, gangreclaim): the actions split victims into safe and
 * whole bundles and so keep minAvailable themselves; gang permits every candidate. */
static bool gang_unified(sch_session *ssn, void *ctx, const sch_eviction_ctx *ec,
                         const int32_t *cands, size_t n, int32_t *out, size_t *nout) {
  (void)ssn;
  (void)ctx;
  (void)ec;
  memcpy(out, cands, n * sizeof(*cands));
  *nout = n;
  return true;
}

/* "pod group is not ready, 2 Pending, 3 minAvailable" (Volcano JobInfo.FitError). */
static void not_ready_text(const sch_job *j, char *buf, size_t len) {
  char items[SCH_TASK__COUNT + 1][48];
  int n = 0;
  for (int s = 0; s < SCH_TASK__COUNT; s++)
    if (j->count[s])
      snprintf(items[n++], sizeof(items[0]), "%d %s", j->count[s],
               sch_task_status_str((sch_task_status)s));
  snprintf(items[n++], sizeof(items[0]), "%d minAvailable", j->min_available);
  /* sorted as strings, like sort.Strings over the histogram */
  for (int a = 1; a < n; a++)
    for (int b = a; b > 0 && strcmp(items[b - 1], items[b]) > 0; b--) {
      char tmp[48];
      memcpy(tmp, items[b], sizeof(tmp));
      memcpy(items[b], items[b - 1], sizeof(tmp));
      memcpy(items[b - 1], tmp, sizeof(tmp));
    }
  size_t off = (size_t)snprintf(buf, len, "pod group is not ready");
  for (int i = 0; i < n && off < len; i++)
    off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : ", ", items[i]);
}

/* A sub-group is ready with subGroupSize tasks placed (Volcano gang SubJobReadyFn). */
static bool gang_subjob_ready(sch_session *ssn, void *ctx, const sch_job *j, const sch_subjob *sj) {
  return sch_subjob_ready_num(ssn->snap, sj) >= sj->min_available;
}

static bool gang_subjob_pipelined(sch_session *ssn, void *ctx, const sch_job *j,
                                  const sch_subjob *sj) {
  return sch_subjob_pipelined_num(ssn->snap, sj) >= sj->min_available;
}

/* Sub-groups that are not ready yet go first (Volcano gang SubJobOrderFn). */
static int gang_subjob_order(sch_session *ssn, void *ctx, const sch_subjob *l,
                             const sch_subjob *r) {
  bool lr = sch_subjob_ready_num(ssn->snap, l) >= l->min_available;
  bool rr = sch_subjob_ready_num(ssn->snap, r) >= r->min_available;
  return lr == rr ? 0 : lr ? 1 : -1;
}

static int gang_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  int rc;
  if ((rc = sch_add_subjob_ready_fn(ssn, gang_subjob_ready, NULL)) < 0 ||
      (rc = sch_add_subjob_pipelined_fn(ssn, gang_subjob_pipelined, NULL)) < 0 ||
      (rc = sch_add_subjob_order_fn(ssn, gang_subjob_order, NULL)) < 0)
    return rc;
  if ((rc = sch_add_job_valid_fn(ssn, gang_valid, NULL)) < 0 ||
      (rc = sch_add_job_ready_fn(ssn, gang_ready, NULL)) < 0 ||
      (rc = sch_add_job_pipelined_fn(ssn, gang_pipelined, NULL)) < 0 ||
      (rc = sch_add_job_starving_fn(ssn, gang_starving, NULL)) < 0 ||
      (rc = sch_add_job_order_fn(ssn, gang_job_order, NULL)) < 0 ||
      (rc = sch_add_preemptable_fn(ssn, gang_victims, NULL)) < 0 ||
      (rc = sch_add_reclaimable_fn(ssn, gang_victims, NULL)) < 0 ||
      (rc = sch_add_unified_evictable_fn(ssn, gang_unified, NULL)) < 0)
    return rc;
  return 0;
}

/* At close: the Unschedulable condition with the reason, or Scheduled. */
static void gang_close(sch_session *ssn, void *state) {
  sch_snapshot *snap = ssn->snap;
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    sch_job *j = &snap->jobs[ji];
    if (j->shadow || j->invalid)
      continue;
    if (j->queue < 0) {
      char qmsg[512];
      const char *qn =
          j->pod_group->spec && j->pod_group->spec->queue ? j->pod_group->spec->queue : "";
      snprintf(qmsg, sizeof(qmsg), "%d/%d tasks in gang unschedulable: queue %s does not exist",
               j->min_available - sch_job_ready_num(j), j->ntasks, qn);
      if (sch__job_condition(ssn, j, true, "NotEnoughResources", qmsg) < 0)
        return;
      sch_session_job_event(ssn, j, "Warning", "Unschedulable", "%s", qmsg);
      continue;
    }
    if (job_level_ready(j)) {
      j->unready = 0;
      if (sch__job_condition(ssn, j, false, "tasks in gang are ready to be scheduled", "") < 0)
        return;
      continue;
    }
    int32_t unready = j->min_available - sch_job_ready_num(j);
    j->retried = true; /* Volcano's gang counts a retry (job_retry_counts) */
    j->unready = unready;
    char detail[768];
    sch__why_detail(ssn, j, detail, sizeof(detail));
    if (!detail[0])
      not_ready_text(j, detail, sizeof(detail));
    char msg[1024];
    snprintf(msg, sizeof(msg), "%d/%d tasks in gang unschedulable: %s", unready, j->ntasks, detail);
    if (sch__job_condition(ssn, j, true, "NotEnoughResources", msg) < 0)
      return;
    /* The event is worth it only when the job was actually tried or turned away. */
    if (j->phase != SCH_PG_PENDING || j->queue_message >= 0)
      sch_session_job_event(ssn, j, "Warning", "Unschedulable", "%s", msg);
  }
}

const sch_plugin sch_plugin_gang = {"gang", gang_open, gang_close};
