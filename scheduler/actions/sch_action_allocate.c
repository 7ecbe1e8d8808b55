/* The allocate action (Volcano pkg/scheduler/actions/allocate): places the pending tasks
 * of each job, queue by queue, as one gang statement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"
#include "sch_search.h"

/* Places the pending tasks of one job through one statement. *again is set when the job
 * became ready with tasks left, so it goes back in its queue (Volcano's round robin). */
static int allocate_job(sch_session *ssn, sch__search *s, int32_t qi, int32_t ji, bool *again) {
  sch_snapshot *snap = ssn->snap;
  sch_job *j = &snap->jobs[ji];
  *again = false;
  int32_t *tasks = malloc((size_t)(j->ntasks ? j->ntasks : 1) * sizeof(*tasks));
  sch_statement *st = sch_statement_new(ssn);
  int rc = KC_ENOMEM;
  if (!tasks || !st)
    goto out;
  size_t n = sch__placeable(snap, j->tasks, j->ntasks, tasks);
  if ((rc = sch__place_tasks(ssn, s, qi, j, tasks, n, st, NULL, again)) < 0)
    goto out;
  if (sch_session_job_ready(ssn, j)) {
    rc = sch_statement_commit(st);
  } else if (!sch_session_job_pipelined(ssn, j)) {
    sch_statement_discard(st);
  } else {
    sch__statement_keep(st);
  }
out:
  sch_statement_free(st);
  free(tasks);
  return rc;
}

/* Pending tasks allocate may place: neither best-effort (backfill's) nor gated. */
static bool has_placeable(const sch_snapshot *snap, const sch_job *j) {
  if (j->count[SCH_TASK_PENDING] - j->pending_best_effort <= 0)
    return false;
  for (int32_t i = 0; j->gated && i < j->ntasks; i++) {
    const sch_task *t = &snap->tasks[j->tasks[i]];
    if (t->status == SCH_TASK_PENDING && !t->best_effort && !t->gated)
      return true;
  }
  return j->gated == 0;
}

/* "queue q is overused: 8 cpu allocated, deserved 8 cpu" on the queue's waiting jobs. */
static int overused_reason(sch_session *ssn, int32_t qi, const sch__heap *waiting) {
  sch_snapshot *snap = ssn->snap;
  const sch_queue *q = &snap->queues[qi];
  sch_resource allocated = {0};
  for (int32_t ji = 0; ji < snap->njobs; ji++)
    if (snap->jobs[ji].queue == qi)
      sch_resource_add(&allocated, &snap->jobs[ji].allocated);
  char al[256], de[256];
  sch_resource_human(snap, &allocated, 0, al, sizeof(al));
  sch_resource_human(snap, &q->deserved, 0, de, sizeof(de));
  for (size_t k = 0; k < waiting->n; k++) {
    sch_job *j = &snap->jobs[waiting->v[k]];
    if (j->queue_message < 0 &&
        sch_session_job_queue_reason(ssn, j, "queue %s is overused: %s allocated, deserved %s",
                                     q->name, al, de) < 0)
      return KC_ENOMEM;
  }
  return 0;
}

static int allocate_execute(sch_session *ssn) {
  sch_snapshot *snap = ssn->snap;
  bool enqueue = sch__action_configured(ssn, "enqueue");
  sch__search s;
  sch__heap queues = {0};
  sch__heap *jobs = calloc((size_t)(snap->nqueues ? snap->nqueues : 1), sizeof(*jobs));
  int rc = sch__search_init(&s, ssn);
  if (!jobs)
    rc = KC_ENOMEM;
  if (rc < 0)
    goto out;
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    sch_job *j = &snap->jobs[ji];
    if (j->queue < 0)
      continue;
    if (j->phase == SCH_PG_PENDING) {
      if (enqueue)
        continue;
      j->phase = SCH_PG_INQUEUE; /* nobody else will admit it */
    }
    if (!has_placeable(snap, j))
      continue;
    sch_valid v;
    if (!sch_session_job_valid(ssn, j, &v)) {
      j->invalid = true;
      if ((rc = sch__job_condition(ssn, j, true, v.reason, v.message)) < 0)
        goto out;
      continue;
    }
    if (jobs[j->queue].n == 0 && (rc = sch__heap_push(ssn, &queues, sch__queue_cmp, j->queue)) < 0)
      goto out;
    if ((rc = sch__heap_push(ssn, &jobs[j->queue], sch__job_cmp, ji)) < 0)
      goto out;
  }
  while (queues.n) {
    int32_t qi = sch__heap_pop(ssn, &queues, sch__queue_cmp);
    if (sch_session_overused(ssn, &snap->queues[qi])) {
      if ((rc = overused_reason(ssn, qi, &jobs[qi])) < 0)
        goto out;
      continue;
    }
    if (jobs[qi].n == 0)
      continue;
    int32_t ji = sch__heap_pop(ssn, &jobs[qi], sch__job_cmp);
    bool again = false;
    if (sch__job_needs_hypernode(snap, &snap->jobs[ji]))
      rc = sch__allocate_hypernode(ssn, &s, qi, ji, &again);
    else
      rc = allocate_job(ssn, &s, qi, ji, &again);
    if (rc < 0)
      goto out;
    if (again && (rc = sch__heap_push(ssn, &jobs[qi], sch__job_cmp, ji)) < 0)
      goto out;
    if (jobs[qi].n && (rc = sch__heap_push(ssn, &queues, sch__queue_cmp, qi)) < 0)
      goto out;
  }
out:
  for (int32_t q = 0; jobs && q < snap->nqueues; q++)
    free(jobs[q].v);
  free(jobs);
  free(queues.v);
  sch__search_close(&s);
  return rc;
}

const sch_action sch_action_allocate = {"allocate", allocate_execute};
