/* The priority plugin (Volcano pkg/scheduler/plugins/priority): job and task order by
 * priority, victims of lower priority. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"

static int prio_job_order(sch_session *ssn, void *ctx, const sch_job *l, const sch_job *r) {
  return l->priority > r->priority ? -1 : l->priority < r->priority;
}

static int prio_task_order(sch_session *ssn, void *ctx, const sch_task *l, const sch_task *r) {
  return l->priority > r->priority ? -1 : l->priority < r->priority;
}

/* Victims: tasks of lower-priority jobs; inside the preemptor's own job, lower-priority
 * tasks. */
static bool prio_victims(sch_session *ssn, void *ctx, const sch_task *preemptor,
                         const int32_t *cands, size_t n, int32_t *out, size_t *nout) {
  const sch_snapshot *snap = ssn->snap;
  int32_t pprio = preemptor->job >= 0 ? snap->jobs[preemptor->job].priority : preemptor->priority;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const sch_task *t = &snap->tasks[cands[i]];
    if (t->job >= 0 && t->job == preemptor->job) {
      if (t->priority < preemptor->priority)
        out[k++] = cands[i];
      continue;
    }
    int32_t vprio = t->job >= 0 ? snap->jobs[t->job].priority : t->priority;
    if (vprio < pprio)
      out[k++] = cands[i];
  }
  *nout = k;
  return true;
}

/* Starving while some task of the job is neither ready nor pipelined (the gang plugin, in
 * the same tier, narrows it to "below minAvailable"). */
static bool prio_starving(sch_session *ssn, void *ctx, const sch_job *j) {
  return sch_job_ready_num(j) + sch_job_waiting_num(j) < j->ntasks;
}

static int prio_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  int rc;
  if ((rc = sch_add_job_order_fn(ssn, prio_job_order, NULL)) < 0 ||
      (rc = sch_add_task_order_fn(ssn, prio_task_order, NULL)) < 0 ||
      (rc = sch_add_preemptable_fn(ssn, prio_victims, NULL)) < 0 ||
      (rc = sch_add_job_starving_fn(ssn, prio_starving, NULL)) < 0)
    return rc;
  return 0;
}

const sch_plugin sch_plugin_priority = {"priority", prio_open, NULL};
