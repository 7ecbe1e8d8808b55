/* The gangreclaim action (Volcano pkg/scheduler/actions/gangreclaim): a starving job takes
 * back its queue's share from other queues, inside one topology domain, evicting whole
 * bundles of victims (sch_gangevict.h), the most served queues' first.
 *
 * Queues are taken in queue order; an overused queue is skipped, and a job's queue must be
 * Preemptive for the job's whole pending demand. Victims: Running tasks of jobs of other,
 * reclaimable queues, not marked volcano.sh/preemptable "false" (the pod), of a PodGroup that
 * does not say volcano.sh/preemptable other than true; the capacity plugin keeps
 * each victim queue's guarantee and deserved.
 *
 * Arguments (`configurations`): maxDomains (default 8; <= 0 falls back to it) caps the
 * domains tried per job, allowWholeBundle (default true) lets whole bundles go. */
#include "sch_gangevict.h"

static bool reclaim_candidate(sch_session *ssn, const sch_job *j, const sch_task *t) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  int32_t q = snap->jobs[t->job].queue;
  if (t->status != SCH_TASK_RUNNING || q < 0 || q == j->queue)
    return false;
  return snap->queues[q].reclaimable;
}

static const sch__gang_evict gangreclaim = {"gangreclaim", SCH_EVICT_GANG_RECLAIM,
                                            reclaim_candidate};

static int gangreclaim_execute(sch_session *ssn) {
  return sch__gang_evict_execute(ssn, &gangreclaim);
}

const sch_action sch_action_gangreclaim = {"gangreclaim", gangreclaim_execute};
