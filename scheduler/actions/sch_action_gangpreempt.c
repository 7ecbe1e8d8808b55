/* The gangpreempt action (Volcano pkg/scheduler/actions/gangpreempt): a starving job takes
 * its room from lower-priority jobs of its own queue, inside one topology domain, evicting
 * whole bundles of victims (sch_gangevict.h) instead of a task here and there.
 *
 * Victims: Running or Bound tasks of other jobs of the same queue whose job priority is
 * strictly lower than the starving job's, not marked volcano.sh/preemptable "false" (the pod),
 * of a PodGroup that does not say volcano.sh/preemptable other than true. Unlike
 * preempt, a best-effort preemptor is not kept off non-best-effort victims (Volcano leaves
 * that to the plugins).
 *
 * Arguments (`configurations`): maxDomains (default 8; <= 0 falls back to it) caps the
 * domains tried per job, allowWholeBundle (default true) lets whole bundles go. */
#include "sch_gangevict.h"

static bool preempt_candidate(sch_session *ssn, const sch_job *j, const sch_task *t) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  const sch_job *vj = &snap->jobs[t->job];
  if (t->status != SCH_TASK_RUNNING && t->status != SCH_TASK_BOUND)
    return false;
  return vj->queue == j->queue && vj->priority < j->priority;
}

static const sch__gang_evict gangpreempt = {"gangpreempt", SCH_EVICT_GANG_PREEMPT,
                                            preempt_candidate};

static int gangpreempt_execute(sch_session *ssn) {
  return sch__gang_evict_execute(ssn, &gangpreempt);
}

const sch_action sch_action_gangpreempt = {"gangpreempt", gangpreempt_execute};
