/* The reclaim action (Volcano pkg/scheduler/actions/reclaim): queues take back their fair
 * share from other queues.
 *
 * Queues are taken in queue order, round after round; an overused queue sits out. From a
 * queue, its first starving job (job order) offers its next pending task (task order); the
 * queue must be Preemptive for it (proportion: it stays within deserved with the task).
 * Then node by node, among the nodes that pass the predicates: the candidates are the
 * Running tasks there of jobs of *other* queues that are reclaimable (a queue with
 * `reclaimable: false` is never reclaimed from), the Reclaimable tier vote picks the
 * victims, and victims are evicted lowest first until what they hold covers the task,
 * which is then pipelined there (and the node nominated for it). Each task's evictions are
 * final at once, as Volcano's session-level Evict is; a job that got a place goes back in
 * its queue for its next task, and the queue goes back in the round. */
#include <stdlib.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"

typedef struct reclaim_work {
  int32_t *cands, *victims;
} reclaim_work;

/* Candidates on node ni for t: running tasks of reclaimable queues other than t's. */
static size_t candidates(const sch_snapshot *snap, const sch_task *t, int32_t ni, int32_t *out) {
  size_t n = 0;
  int32_t q = snap->jobs[t->job].queue;
  for (int32_t k = snap->nodes[ni].task_head; k >= 0; k = snap->tasks[k].node_next) {
    const sch_task *c = &snap->tasks[k];
    if (c->status != SCH_TASK_RUNNING || !sch__may_be_victim(t, c))
      continue;
    int32_t cq = snap->jobs[c->job].queue;
    if (cq >= 0 && cq != q && snap->queues[cq].reclaimable)
      out[n++] = k;
  }
  return n;
}

/* A successful task reclaim and how many victims it evicted (pod_reclaim_victims). */
static int count_victims(sch_session *ssn, size_t n) {
  sch_result *r = ssn->res;
  if (r->nreclaimed % 16 == 0) {
    int32_t *v = realloc(r->reclaim_victims, (r->nreclaimed + 16) * sizeof(*v));
    if (!v)
      return KC_ENOMEM;
    r->reclaim_victims = v;
  }
  r->reclaim_victims[r->nreclaimed++] = (int32_t)n;
  return 0;
}

/* Evicts on ni until the victims' resources cover t, then pipelines t there. */
static int reclaim_on(sch_session *ssn, int32_t ti, int32_t ni, int32_t *v, size_t nv,
                      bool *placed) {
  sch_snapshot *snap = ssn->snap;
  const sch_task *t = &snap->tasks[ti];
  sch_statement *st = sch_statement_new(ssn);
  if (!st)
    return KC_ENOMEM;
  sch__sort_victims(ssn, v, nv);
  sch_resource reclaimed = {0};
  int rc = 0;
  for (size_t i = 0; i < nv; i++) {
    if ((rc = sch_statement_evict(st, v[i], "reclaim")) == KC_ENOMEM)
      goto out;
    if (rc < 0)
      continue;
    const Kiln__Pod *vp = snap->tasks[v[i]].pod;
    KC_V(3, "reclaim: evicting %s/%s for %s/%s on %s", vp->namespace_, vp->name, t->pod->namespace_,
         t->pod->name, snap->nodes[ni].name);
    sch_resource_add(&reclaimed, &snap->tasks[v[i]].resreq);
    if (sch_resource_less_equal(&t->init_resreq, &reclaimed))
      break;
  }
  rc = 0;
  *placed = false;
  size_t nevicted = sch_statement_len(st);
  if (sch_resource_less_equal(&t->init_resreq, &reclaimed)) {
    /* Volcano ignores a pipeline error here: the next session corrects it. */
    if ((rc = sch_statement_pipeline_nominate(st, ti, ni)) == KC_ENOMEM)
      goto out;
    rc = 0;
    *placed = true;
  }
  rc = sch_statement_commit(st);
  if (rc == 0 && *placed)
    rc = count_victims(ssn, nevicted);
out:
  sch_statement_free(st);
  return rc;
}

/* One task: the first node where reclaimable victims cover it. */
static int reclaim_task(sch_session *ssn, reclaim_work *w, int32_t ti, bool *assigned) {
  sch_snapshot *snap = ssn->snap;
  const sch_task *t = &snap->tasks[ti];
  *assigned = false;
  ssn->res->reclaim_attempts++; /* total_reclaim_attempts: one per task tried */
  for (int32_t k = 0; k < ssn->nnode_list && !*assigned; k++) {
    int32_t ni = ssn->node_list[k];
    sch_fit why = {0};
    ssn->preempting = true;
    int fit = sch_session_predicate(ssn, t, &snap->nodes[ni], &why);
    ssn->preempting = false;
    if (fit != SCH_FIT)
      continue;
    size_t nc = candidates(snap, t, ni, w->cands);
    if (nc == 0)
      continue;
    int nv = sch_session_reclaimable(ssn, t, w->cands, nc, w->victims);
    if (nv < 0)
      return nv;
    if (!sch__victims_suffice(snap, t, &snap->nodes[ni], w->victims, (size_t)nv))
      continue;
    int rc = reclaim_on(ssn, ti, ni, w->victims, (size_t)nv, assigned);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* The job's next pending task in task order that was not tried yet (Volcano pops each
 * task from the job's queue once), or -1. A gated task never reclaims: it could not bind. */
static int32_t untried_task(sch_session *ssn, int32_t ji, bool *tried) {
  const sch_job *j = &ssn->snap->jobs[ji];
  int32_t best = -1;
  for (int32_t i = 0; i < j->ntasks; i++) {
    int32_t ti = j->tasks[i];
    if (tried[ti] || ssn->snap->tasks[ti].status != SCH_TASK_PENDING || ssn->snap->tasks[ti].gated)
      continue;
    if (best < 0 || sch__task_cmp(&ti, &best, ssn) < 0)
      best = ti;
  }
  return best;
}

static int reclaim_round(sch_session *ssn, reclaim_work *w, sch__heap *queues, sch__heap *jobs,
                         bool *tried) {
  sch_snapshot *snap = ssn->snap;
  int rc = 0;
  while (queues->n) {
    int32_t qi = sch__heap_pop(ssn, queues, sch__queue_cmp);
    const sch_queue *q = &snap->queues[qi];
    if (sch_session_overused(ssn, q) || jobs[qi].n == 0)
      continue;
    int32_t ji = sch__heap_pop(ssn, &jobs[qi], sch__job_cmp);
    int32_t ti = untried_task(ssn, ji, tried);
    if (ti < 0)
      continue;
    tried[ti] = true;
    if (!sch_session_preemptive(ssn, q, &snap->tasks[ti]))
      continue;
    bool assigned = false;
    if ((rc = reclaim_task(ssn, w, ti, &assigned)) < 0)
      return rc;
    if (assigned && (rc = sch__heap_push(ssn, &jobs[qi], sch__job_cmp, ji)) < 0)
      return rc;
    if ((rc = sch__heap_push(ssn, queues, sch__queue_cmp, qi)) < 0)
      return rc;
  }
  return 0;
}

static int reclaim_execute(sch_session *ssn) {
  sch_snapshot *snap = ssn->snap;
  reclaim_work w = {malloc(((size_t)snap->ntasks + 1) * sizeof(int32_t)),
                    malloc(((size_t)snap->ntasks + 1) * sizeof(int32_t))};
  bool *tried = calloc((size_t)snap->ntasks + 1, sizeof(*tried));
  bool *seen = calloc((size_t)snap->nqueues + 1, sizeof(*seen));
  sch__heap queues = {0};
  sch__heap *jobs = calloc((size_t)snap->nqueues + 1, sizeof(*jobs));
  int rc = KC_ENOMEM;
  if (!w.cands || !w.victims || !tried || !seen || !jobs)
    goto out;
  rc = 0;
  for (int32_t ji = 0; ji < snap->njobs && rc == 0; ji++) {
    sch_job *j = &snap->jobs[ji];
    sch_valid v;
    if (j->phase == SCH_PG_PENDING || j->queue < 0 || j->invalid ||
        !sch_session_job_valid(ssn, j, &v))
      continue;
    if (!seen[j->queue]) {
      seen[j->queue] = true;
      rc = sch__heap_push(ssn, &queues, sch__queue_cmp, j->queue);
    }
    if (rc == 0 && sch_session_job_starving(ssn, j))
      rc = sch__heap_push(ssn, &jobs[j->queue], sch__job_cmp, ji);
  }
  if (rc == 0)
    rc = reclaim_round(ssn, &w, &queues, jobs, tried);
out:
  for (int32_t q = 0; jobs && q < snap->nqueues; q++)
    free(jobs[q].v);
  free(jobs);
  free(queues.v);
  free(seen);
  free(tried);
  free(w.cands);
  free(w.victims);
  return rc;
}

const sch_action sch_action_reclaim = {"reclaim", reclaim_execute};
