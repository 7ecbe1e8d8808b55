/* The backfill action (Volcano pkg/scheduler/actions/backfill): places best-effort tasks
 * (no resource request) on any node the predicates accept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"
#include "sch_search.h"

static int backfill_execute(sch_session *ssn) {
  sch_snapshot *snap = ssn->snap;
  sch__search s;
  int rc = sch__search_init(&s, ssn);
  sch_statement *st = sch_statement_new(ssn);
  if (!st)
    rc = KC_ENOMEM;
  if (rc < 0)
    goto out;
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    sch_job *j = &snap->jobs[ji];
    if (j->phase == SCH_PG_PENDING || j->invalid || j->queue < 0 || j->pending_best_effort == 0)
      continue;
    for (int32_t i = 0; i < j->ntasks; i++) {
      int32_t ti = j->tasks[i];
      sch_task *t = &snap->tasks[ti];
      if (t->status != SCH_TASK_PENDING || !t->best_effort || t->gated)
        continue;
      int fit = sch__find_fit(&s, j, t, false);
      if (fit < 0) {
        rc = fit;
        goto out;
      }
      if (!fit)
        continue;
      if ((rc = sch_statement_allocate(st, ti, sch__best_node(&s, t))) < 0 ||
          (rc = sch_statement_commit(st)) < 0)
        goto out;
    }
  }
out:
  sch_statement_free(st);
  sch__search_close(&s);
  return rc;
}

const sch_action sch_action_backfill = {"backfill", backfill_execute};
