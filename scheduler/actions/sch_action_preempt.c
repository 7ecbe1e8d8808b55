/* The preempt action (Volcano pkg/scheduler/actions/preempt), and the victim handling it
 * shares with reclaim.
 *
 * Inside each queue, the starving jobs (JobStarving: fewer than minAvailable tasks ready or
 * pipelined) are taken in job order. For each of a job's pending tasks in task order, the
 * nodes that pass the predicates (resources aside: they are what preemption frees) are
 * tried best score first: the running tasks there of other jobs of the same queue are the
 * candidates, the Preemptable tier vote picks the victims, and victims are evicted lowest
 * first until the task fits the node's future idle and the queue allows it; the task is
 * then pipelined there (and the node nominated for it). The job's statement commits only
 * when the job is pipelined (enough tasks placed or promised), otherwise every eviction is
 * undone: a gang that cannot start does not cost anybody a pod. Then, inside each starving
 * job, a pending task may take the place of lower tasks of the same job (committed task by
 * task).
 *
 * Never victims: tasks not Running or Bound, pods marked volcano.sh/preemptable "false",
 * other schedulers' pods, and any non-best-effort task when the preemptor is best-effort.
 * A preemptor whose pod says preemptionPolicy: Never does not preempt.
 *
 * Arguments (`configurations`): predicateErrorCacheEnable (default true), Volcano's predicate
 * error cache, below. */
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"
#include "sch_match.h"

/* Volcano PreemptableStatus. */
static bool victim_status(sch_task_status s) {
  return s == SCH_TASK_RUNNING || s == SCH_TASK_BOUND;
}

bool sch__may_be_victim(const sch_task *preemptor, const sch_task *t) {
  if (t->job < 0 || !victim_status(t->status) || t->pod->not_preemptable)
    return false;
  return !preemptor->best_effort || t->best_effort;
}

static bool never_preempts(const sch_task *t) {
  return t->pod->preemption_policy && strcmp(t->pod->preemption_policy, "Never") == 0;
}

/* Victim order (Volcano BuildVictimsPriorityQueue): the lowest goes first, i.e. the task
 * order reversed inside a job, the job order reversed between jobs. */
static int victim_cmp(const void *a, const void *b, void *arg) {
  sch_session *ssn = arg;
  const sch_snapshot *snap = ssn->snap;
  const sch_task *l = &snap->tasks[*(const int32_t *)a], *r = &snap->tasks[*(const int32_t *)b];
  if (l->job == r->job)
    return -sch_session_task_order(ssn, l, r);
  return -sch_session_job_order(ssn, &snap->jobs[l->job], &snap->jobs[r->job]);
}

void sch__sort_victims(sch_session *ssn, int32_t *v, size_t n) {
  qsort_r(v, n, sizeof(*v), victim_cmp, ssn);
}

/* Volcano's predicate error cache (predicateErrorCacheEnable, default true), one for the
 * whole action: a node that failed the predicates for a task is kept out of the search for
 * every later task of the same job and role (volcano.sh/task-spec), even once evictions or
 * a discarded statement would let it pass. A task without a role is never cached. */
typedef struct err_group {
  int32_t job;
  const char *role; /* borrowed from the pod */
  uint8_t *failed;  /* per snapshot node */
} err_group;

typedef struct err_cache {
  bool on;
  err_group *v;
  size_t n;
} err_cache;

/* Volcano getTaskRole: the volcano.sh/task-spec annotation, else the label (the job
 * controller sets both); NULL or "" when the pod has neither. */
const char *sch__task_role(const Kiln__Pod *pod) {
  if (pod->task_name && *pod->task_name)
    return pod->task_name;
  return sch_pod_label(pod, "volcano.sh/task-spec");
}

/* The failed-node set of t's group, made empty on first use; NULL when t is not cached. */
static uint8_t *err_failed(sch_session *ssn, err_cache *c, const sch_task *t, int *rc) {
  const char *role = sch__task_role(t->pod);
  *rc = 0;
  if (!c->on || !role || !*role)
    return NULL;
  for (size_t i = 0; i < c->n; i++)
    if (c->v[i].job == t->job && strcmp(c->v[i].role, role) == 0)
      return c->v[i].failed;
  err_group *v = realloc(c->v, (c->n + 1) * sizeof(*v));
  uint8_t *failed = calloc((size_t)ssn->snap->nnodes + 1, 1);
  if (v)
    c->v = v;
  if (!v || !failed) {
    free(failed);
    *rc = KC_ENOMEM;
    return NULL;
  }
  c->v[c->n++] = (err_group){t->job, role, failed};
  return failed;
}

static void err_cache_close(err_cache *c) {
  for (size_t i = 0; i < c->n; i++)
    free(c->v[i].failed);
  free(c->v);
}

/* The nodes t may go on once resources are freed (predicates only), with their scores.
 * 0 or KC_ENOMEM. */
static int ranked_nodes(sch_session *ssn, err_cache *c, const sch_task *t, int32_t *out,
                        double *scores, size_t *n) {
  sch_snapshot *snap = ssn->snap;
  *n = 0;
  int rc;
  uint8_t *failed = err_failed(ssn, c, t, &rc);
  if (rc < 0)
    return rc;
  ssn->preempting = true;
  uint64_t t0 = sch__clock(ssn);
  for (int32_t k = 0; k < ssn->nnode_list; k++) {
    int32_t ni = ssn->node_list[k];
    sch_fit why = {0};
    if (failed && failed[ni])
      continue;
    if (sch_session_predicate(ssn, t, &snap->nodes[ni], &why) == SCH_FIT)
      out[(*n)++] = ni;
    else if (failed)
      failed[ni] = 1;
  }
  sch__stage_done(ssn, SCH_STAGE_PREDICATE, t0);
  ssn->preempting = false;
  if (*n > 1) {
    t0 = sch__clock(ssn);
    sch_session_node_scores(ssn, t, out, *n, scores);
    sch__stage_done(ssn, SCH_STAGE_SCORING, t0);
  } else if (*n == 1)
    scores[0] = 0;
  return 0;
}

typedef struct ranked {
  double score;
  int32_t pos; /* in the node list: the earlier of equal scores goes first */
  int32_t node;
} ranked;

static int ranked_cmp(const void *a, const void *b) {
  const ranked *l = a, *r = b;
  if (l->score != r->score)
    return l->score > r->score ? -1 : 1;
  return l->pos < r->pos ? -1 : l->pos > r->pos;
}

/* Sorts out[k..n) by score, best first, equal scores in their current order. */
static void sort_rest(int32_t *out, double *scores, size_t k, size_t n, ranked *tmp) {
  for (size_t i = k; i < n; i++)
    tmp[i - k] = (ranked){scores[i], (int32_t)i, out[i]};
  qsort(tmp, n - k, sizeof(*tmp), ranked_cmp);
  for (size_t i = k; i < n; i++) {
    out[i] = tmp[i - k].node;
    scores[i] = tmp[i - k].score;
  }
}

/* Puts the best of out[k..n) at out[k] (the highest score, the earliest of equals). The
 * first node or two usually have the victims, so the first picks are linear scans; past
 * SORT_AFTER picks (nodes whose victims were taken already) the rest is sorted once. */
#define SORT_AFTER 8
static void take_best(int32_t *out, double *scores, size_t k, size_t n, ranked *tmp) {
  if (k == SORT_AFTER) {
    sort_rest(out, scores, k, n, tmp);
    return;
  }
  if (k > SORT_AFTER)
    return;
  size_t best = k;
  for (size_t i = k + 1; i < n; i++)
    if (scores[i] > scores[best])
      best = i;
  if (best == k)
    return;
  /* shift, so that equal scores keep the node list's order */
  int32_t x = out[best];
  double s = scores[best];
  memmove(out + k + 1, out + k, (best - k) * sizeof(*out));
  memmove(scores + k + 1, scores + k, (best - k) * sizeof(*scores));
  out[k] = x;
  scores[k] = s;
}

bool sch__fits_future(const sch_task *t, const sch_node *n) {
  sch_resource fut;
  sch_node_future_idle(n, &fut);
  return sch_resource_less_equal(&t->init_resreq, &fut);
}

/* Volcano ValidateVictims: the victims free enough for the task. */
bool sch__victims_suffice(const sch_snapshot *snap, const sch_task *t, const sch_node *n,
                          const int32_t *v, size_t nv) {
  sch_resource fut;
  sch_node_future_idle(n, &fut);
  for (size_t i = 0; i < nv; i++)
    sch_resource_add(&fut, &snap->tasks[v[i]].resreq);
  return nv > 0 && sch_resource_less_equal(&t->init_resreq, &fut);
}

/* Candidates on node ni for preemptor t: running tasks of other jobs of the same queue
 * (between jobs), or of t's own job (inside a job). */
static size_t candidates(const sch_snapshot *snap, const sch_task *t, int32_t ni, bool same_job,
                         int32_t *out) {
  size_t n = 0;
  int32_t q = snap->jobs[t->job].queue;
  for (int32_t k = snap->nodes[ni].task_head; k >= 0; k = snap->tasks[k].node_next) {
    const sch_task *c = &snap->tasks[k];
    if (!sch__may_be_victim(t, c))
      continue;
    if (same_job ? c->job == t->job : c->job != t->job && snap->jobs[c->job].queue == q)
      out[n++] = k;
  }
  return n;
}

/* Evicts on node ni, lowest victim first, until t fits there and its queue allows it.
 * *placed: t was pipelined onto ni. */
static int evict_on(sch_session *ssn, sch_statement *st, int32_t ti, int32_t ni, int32_t *v,
                    size_t nv, bool *placed) {
  sch_snapshot *snap = ssn->snap;
  const sch_task *t = &snap->tasks[ti];
  const sch_node *node = &snap->nodes[ni];
  const sch_queue *q = &snap->queues[snap->jobs[t->job].queue];
  *placed = false;
  sch__sort_victims(ssn, v, nv);
  bool evicted = false;
  for (size_t i = 0; i < nv; i++) {
    if (sch_session_allocatable(ssn, q, t) && sch__fits_future(t, node))
      break;
    int rc = sch_statement_evict(st, v[i], "preempt");
    if (rc == KC_ENOMEM)
      return rc;
    if (rc < 0)
      continue;
    const Kiln__Pod *vp = snap->tasks[v[i]].pod;
    KC_V(3, "preempt: evicting %s/%s for %s/%s on %s", vp->namespace_, vp->name, t->pod->namespace_,
         t->pod->name, node->name);
    evicted = true;
  }
  ssn->res->preempt_attempts++;
  if (!sch_session_allocatable(ssn, q, t) || !sch__fits_future(t, node))
    return 0;
  int rc =
      evicted ? sch_statement_pipeline_nominate(st, ti, ni) : sch_statement_pipeline(st, ti, ni);
  if (rc == KC_ENOMEM)
    return rc;
  *placed = true; /* Volcano ignores a pipeline error: the next session corrects it */
  return 0;
}

typedef struct work {
  int32_t *nodes, *cands, *victims;
  double *scores;
  ranked *sorted;
  err_cache cache;
} work;

/* One preemptor task: the first node where victims make room. Volcano's preempt(). */
static int preempt_task(sch_session *ssn, work *w, sch_statement *st, int32_t ti, bool same_job,
                        bool *assigned) {
  sch_snapshot *snap = ssn->snap;
  const sch_task *t = &snap->tasks[ti];
  *assigned = false;
  if (never_preempts(t))
    return 0;
  size_t nn;
  int err = ranked_nodes(ssn, &w->cache, t, w->nodes, w->scores, &nn);
  if (err < 0)
    return err;
  for (size_t k = 0; k < nn && !*assigned; k++) {
    take_best(w->nodes, w->scores, k, nn, w->sorted);
    int32_t ni = w->nodes[k];
    size_t nc = candidates(snap, t, ni, same_job, w->cands);
    int nv = sch_session_preemptable(ssn, t, w->cands, nc, w->victims);
    if (nv < 0)
      return nv;
    ssn->res->last_victims = nv;
    if (!sch__victims_suffice(snap, t, &snap->nodes[ni], w->victims, (size_t)nv))
      continue;
    int rc = evict_on(ssn, st, ti, ni, w->victims, (size_t)nv, assigned);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* The job's pending tasks in task order into out; returns their count. A gated task is
 * left out (Volcano skips SchGated preemptors): it could not bind on what victims free. */
static size_t pending_tasks(sch_session *ssn, const sch_job *j, int32_t *out) {
  size_t n = 0;
  for (int32_t i = 0; i < j->ntasks; i++)
    if (ssn->snap->tasks[j->tasks[i]].status == SCH_TASK_PENDING &&
        !ssn->snap->tasks[j->tasks[i]].gated)
      out[n++] = j->tasks[i];
  qsort_r(out, n, sizeof(*out), sch__task_cmp, ssn);
  return n;
}

/* Between jobs: the starving job takes from lower jobs of its queue, all or nothing. */
static int preempt_job(sch_session *ssn, work *w, int32_t ji, int32_t *tasks, bool *assigned) {
  sch_job *j = &ssn->snap->jobs[ji];
  sch_statement *st = sch_statement_new(ssn);
  if (!st)
    return KC_ENOMEM;
  size_t n = pending_tasks(ssn, j, tasks);
  int rc = 0;
  *assigned = false;
  for (size_t i = 0; i < n && sch_session_job_starving(ssn, j); i++) {
    if (ssn->snap->tasks[tasks[i]].status != SCH_TASK_PENDING)
      continue;
    if ((rc = preempt_task(ssn, w, st, tasks[i], false, assigned)) < 0)
      goto out;
  }
  if (sch_session_job_pipelined(ssn, j)) {
    rc = sch_statement_commit(st);
  } else {
    sch_statement_discard(st);
    *assigned = false;
  }
out:
  sch_statement_free(st);
  return rc;
}

/* Inside a job: a pending task takes the place of lower tasks of the same job. */
static int preempt_inside(sch_session *ssn, work *w, int32_t ji, int32_t *tasks) {
  size_t n = pending_tasks(ssn, &ssn->snap->jobs[ji], tasks);
  for (size_t i = 0; i < n; i++) {
    sch_statement *st = sch_statement_new(ssn);
    if (!st)
      return KC_ENOMEM;
    bool assigned = false;
    int rc = preempt_task(ssn, w, st, tasks[i], true, &assigned);
    if (rc == 0)
      rc = sch_statement_commit(st);
    sch_statement_free(st);
    if (rc < 0)
      return rc;
    if (!assigned)
      break;
  }
  return 0;
}

/* Jobs that may preempt: not Pending, valid, in a known queue, starving. */
static bool preemptor_job(sch_session *ssn, sch_job *j) {
  if (j->phase == SCH_PG_PENDING || j->queue < 0 || j->invalid)
    return false;
  sch_valid v;
  if (!sch_session_job_valid(ssn, j, &v))
    return false;
  return sch_session_job_starving(ssn, j);
}

static int preempt_execute(sch_session *ssn) {
  sch_snapshot *snap = ssn->snap;
  size_t cap = (size_t)(snap->ntasks > snap->nnodes ? snap->ntasks : snap->nnodes) + 1;
  work w = {malloc(cap * sizeof(int32_t)), malloc(cap * sizeof(int32_t)),
            malloc(cap * sizeof(int32_t)), malloc(cap * sizeof(double)),
            malloc(cap * sizeof(ranked)),  {0}};
  int32_t *tasks = malloc(cap * sizeof(*tasks));
  int32_t *starving = malloc((size_t)(snap->njobs + 1) * sizeof(*starving));
  sch__heap *jobs = calloc((size_t)snap->nqueues + 1, sizeof(*jobs));
  size_t nstarving = 0;
  int rc = KC_ENOMEM;
  if (!w.nodes || !w.cands || !w.victims || !w.scores || !w.sorted || !tasks || !starving || !jobs)
    goto out;
  rc = 0;
  w.cache.on =
      sch_args_bool(sch_session_action_args(ssn, "preempt"), "predicateErrorCacheEnable", true);
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    if (!preemptor_job(ssn, &snap->jobs[ji]))
      continue;
    starving[nstarving++] = ji;
    if ((rc = sch__heap_push(ssn, &jobs[snap->jobs[ji].queue], sch__job_cmp, ji)) < 0)
      goto out;
  }
  for (int32_t q = 0; q < snap->nqueues; q++) {
    while (jobs[q].n) {
      int32_t ji = sch__heap_pop(ssn, &jobs[q], sch__job_cmp);
      bool assigned;
      if ((rc = preempt_job(ssn, &w, ji, tasks, &assigned)) < 0)
        goto out;
      if (assigned && sch_session_job_starving(ssn, &snap->jobs[ji]) &&
          (rc = sch__heap_push(ssn, &jobs[q], sch__job_cmp, ji)) < 0)
        goto out;
    }
    for (size_t k = 0; k < nstarving; k++) {
      if (snap->jobs[starving[k]].queue != q)
        continue;
      if ((rc = preempt_inside(ssn, &w, starving[k], tasks)) < 0)
        goto out;
    }
  }
  /* Volcano's preempt ends by evicting what the VictimTasks plugins choose. */
  rc = sch__evict_victim_tasks(ssn, "evict");
out:
  for (int32_t q = 0; jobs && q < snap->nqueues; q++)
    free(jobs[q].v);
  free(jobs);
  free(starving);
  free(tasks);
  free(w.nodes);
  free(w.cands);
  free(w.victims);
  free(w.scores);
  free(w.sorted);
  err_cache_close(&w.cache);
  return rc;
}

const sch_action sch_action_preempt = {"preempt", preempt_execute};
