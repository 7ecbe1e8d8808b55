/* The enqueue action (Volcano pkg/scheduler/actions/enqueue): admits Pending jobs into
 * their queues, in queue and job order, when the plugins say they fit. Scheduling gates
 * play no part here, as in Volcano: a gang whose pods are all gated is admitted (the
 * enqueueable checks leave their requests out, sch_job_deduct_gated), and controllers that
 * lift their gates once the PodGroup is Inqueue rely on it; allocate skips gated pods. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"

static int enqueue_execute(sch_session *ssn) {
  sch_snapshot *snap = ssn->snap;
  int rc = 0;
  sch__heap queues = {0};
  sch__heap *jobs = calloc((size_t)(snap->nqueues ? snap->nqueues : 1), sizeof(*jobs));
  if (!jobs)
    return KC_ENOMEM;
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    sch_job *j = &snap->jobs[ji];
    if (j->phase != SCH_PG_PENDING || j->queue < 0)
      continue;
    if (!snap->queues[j->queue].open) {
      KC_V(3, "enqueue: queue %s of job %s is not open", snap->queues[j->queue].name, j->key);
      continue;
    }
    if (jobs[j->queue].n == 0 && (rc = sch__heap_push(ssn, &queues, sch__queue_cmp, j->queue)) < 0)
      goto out;
    if ((rc = sch__heap_push(ssn, &jobs[j->queue], sch__job_cmp, ji)) < 0)
      goto out;
  }
  while (queues.n) {
    int32_t qi = sch__heap_pop(ssn, &queues, sch__queue_cmp);
    if (jobs[qi].n == 0)
      continue;
    int32_t ji = sch__heap_pop(ssn, &jobs[qi], sch__job_cmp);
    sch_job *j = &snap->jobs[ji];
    if (!j->has_min_resources || sch_session_job_enqueueable(ssn, j)) {
      sch_session_job_enqueued(ssn, j);
      j->phase = SCH_PG_INQUEUE;
      KC_V(3, "enqueue: job %s is Inqueue", j->key);
    }
    if (jobs[qi].n && (rc = sch__heap_push(ssn, &queues, sch__queue_cmp, qi)) < 0)
      goto out;
  }
out:
  for (int32_t q = 0; q < snap->nqueues; q++)
    free(jobs[q].v);
  free(jobs);
  free(queues.v);
  return rc;
}

const sch_action sch_action_enqueue = {"enqueue", enqueue_execute};
