/* The backfill action (Volcano pkg/scheduler/actions/backfill): places best-effort tasks
 * (no resource request) on any node the predicates accept, in Volcano's order: queues by the
 * session's queue order, the jobs of each queue by the job order, the tasks of each job by
 * the task order. The whole order is fixed before the first placement, as Volcano's
 * pickUpPendingTasks does, and the first task no node accepts ends the action. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"
#include "sch_search.h"

/* Appends j's pending best-effort tasks that are not gated to out[*n], in task order. */
static void job_tasks(sch_session *ssn, const sch_job *j, int32_t *out, size_t *n) {
  const sch_snapshot *snap = ssn->snap;
  size_t first = *n;
  for (int32_t i = 0; i < j->ntasks; i++) {
    const sch_task *t = &snap->tasks[j->tasks[i]];
    if (t->status == SCH_TASK_PENDING && t->best_effort && !t->gated)
      out[(*n)++] = j->tasks[i];
  }
  qsort_r(out + first, *n - first, sizeof(*out), sch__task_cmp, ssn);
}

/* Whether backfill looks at j: not Pending, valid, in a known queue, with best-effort work. */
static bool job_wanted(sch_session *ssn, const sch_job *j) {
  if (j->phase == SCH_PG_PENDING || j->invalid || j->queue < 0 || j->pending_best_effort == 0)
    return false;
  sch_valid v;
  if (!sch_session_job_valid(ssn, j, &v)) {
    KC_V(4, "Job <%s> Queue <%s> skip backfill, reason: %s, message %s", j->key,
         ssn->snap->queues[j->queue].name, v.reason, v.message);
    return false;
  }
  return true;
}

/* The tasks to try, in order, into out (capacity snap->ntasks); their count in *n. */
static int pick_tasks(sch_session *ssn, int32_t *out, size_t *n) {
  sch_snapshot *snap = ssn->snap;
  sch__heap queues = {0};
  sch__heap *jobs = calloc((size_t)(snap->nqueues ? snap->nqueues : 1), sizeof(*jobs));
  int rc = jobs ? 0 : KC_ENOMEM;
  *n = 0;
  for (int32_t ji = 0; rc == 0 && ji < snap->njobs; ji++) {
    const sch_job *j = &snap->jobs[ji];
    if (!job_wanted(ssn, j))
      continue;
    if (jobs[j->queue].n == 0)
      rc = sch__heap_push(ssn, &queues, sch__queue_cmp, j->queue);
    if (rc == 0)
      rc = sch__heap_push(ssn, &jobs[j->queue], sch__job_cmp, ji);
  }
  while (rc == 0 && queues.n) {
    int32_t qi = sch__heap_pop(ssn, &queues, sch__queue_cmp);
    while (jobs[qi].n)
      job_tasks(ssn, &snap->jobs[sch__heap_pop(ssn, &jobs[qi], sch__job_cmp)], out, n);
  }
  for (int32_t q = 0; jobs && q < snap->nqueues; q++)
    free(jobs[q].v);
  free(jobs);
  free(queues.v);
  return rc;
}

static int backfill_execute(sch_session *ssn) {
  sch_snapshot *snap = ssn->snap;
  sch__search s;
  int rc = sch__search_init(&s, ssn);
  sch_statement *st = sch_statement_new(ssn);
  int32_t *order = malloc((size_t)(snap->ntasks ? snap->ntasks : 1) * sizeof(*order));
  size_t n = 0;
  if (!st || !order)
    rc = KC_ENOMEM;
  if (rc < 0 || (rc = pick_tasks(ssn, order, &n)) < 0)
    goto out;
  for (size_t i = 0; i < n; i++) {
    sch_task *t = &snap->tasks[order[i]];
    sch_job *j = &snap->jobs[t->job];
    int fit = sch__find_fit(&s, j, t, false);
    if (fit < 0) {
      rc = fit;
      goto out;
    }
    if (!fit)
      break; /* Volcano stops backfilling at the first task that fits nowhere */
    if ((rc = sch_statement_allocate(st, order[i], sch__best_node(&s, t))) < 0 ||
        (rc = sch_statement_commit(st)) < 0)
      goto out;
  }
out:
  free(order);
  sch_statement_free(st);
  sch__search_close(&s);
  return rc;
}

const sch_action sch_action_backfill = {"backfill", backfill_execute};
