/* The shuffle action (Volcano pkg/scheduler/actions/shuffle): the VictimTasks plugins (the
 * rescheduling plugin's strategies) choose among the Running tasks of our jobs, and each
 * victim is evicted at once with the reason "shuffle". Preempt ends with the same step,
 * with the reason "evict" (Volcano's victimTasks). */
#include <stdlib.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"

int sch__evict_victim_tasks(sch_session *ssn, const char *reason) {
  sch_snapshot *snap = ssn->snap;
  if (ssn->cbs[SCH_CB_VICTIM_TASKS].n == 0)
    return 0;
  int32_t *cands = malloc(((size_t)snap->ntasks + 1) * sizeof(*cands));
  int32_t *victims = malloc(((size_t)snap->ntasks + 1) * sizeof(*victims));
  sch_statement *st = sch_statement_new(ssn);
  int rc = KC_ENOMEM;
  if (!cands || !victims || !st)
    goto out;
  size_t n = 0;
  for (int32_t ti = 0; ti < snap->ntasks; ti++)
    if (snap->tasks[ti].job >= 0 && snap->tasks[ti].status == SCH_TASK_RUNNING)
      cands[n++] = ti;
  int nv = sch_session_victim_tasks(ssn, cands, n, victims);
  if ((rc = nv < 0 ? nv : 0) < 0)
    goto out;
  for (int i = 0; i < nv; i++) {
    const Kiln__Pod *p = snap->tasks[victims[i]].pod;
    int erc = sch_statement_evict(st, victims[i], reason);
    if (erc == KC_ENOMEM) {
      rc = erc;
      goto out;
    }
    if (erc < 0)
      KC_WARN("%s: cannot evict %s/%s: %s", reason, p->namespace_, p->name, kc_strerror(erc));
    else
      KC_V(3, "%s: evicting %s/%s", reason, p->namespace_, p->name);
  }
  rc = sch_statement_commit(st);
out:
  sch_statement_free(st);
  free(cands);
  free(victims);
  return rc;
}

static int shuffle_execute(sch_session *ssn) {
  return sch__evict_victim_tasks(ssn, "shuffle");
}

const sch_action sch_action_shuffle = {"shuffle", shuffle_execute};
