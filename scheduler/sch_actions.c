/* The actions enqueue, allocate and backfill (Volcano pkg/scheduler/actions). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"

int sch__job_cmp(sch_session *ssn, int32_t a, int32_t b) {
  return sch_session_job_order(ssn, &ssn->snap->jobs[a], &ssn->snap->jobs[b]);
}
int sch__queue_cmp(sch_session *ssn, int32_t a, int32_t b) {
  return sch_session_queue_order(ssn, &ssn->snap->queues[a], &ssn->snap->queues[b]);
}
int sch__task_cmp(const void *a, const void *b, void *arg) {
  sch_session *ssn = arg;
  return sch_session_task_order(ssn, &ssn->snap->tasks[*(const int32_t *)a],
                                &ssn->snap->tasks[*(const int32_t *)b]);
}

bool sch__action_configured(const sch_session *ssn, const char *name) {
  for (size_t i = 0; ssn->conf && i < ssn->conf->nactions; i++)
    if (strcmp(ssn->conf->actions[i]->name, name) == 0)
      return true;
  return false;
}

/* ---- enqueue ---- */

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
    /* Gated pods do not count: a gang that only its gated pods would complete cannot run,
     * and admitting it would hold queue resources for nothing. */
    if (j->gated > 0 && sch_job_valid_num(j) - j->gated < j->min_available) {
      KC_V(3, "enqueue: job %s waits for the scheduling gates of %d pods", j->key, j->gated);
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

/* ---- node search shared by allocate and backfill ---- */

typedef struct search {
  sch_session *ssn;
  int32_t *feasible;
  size_t nfeasible;
  double *scores;
  int32_t *hist; /* per reason id */
  size_t cap_hist;
  int32_t *touched;
  size_t ntouched, cap_touched;
  int32_t insufficient[2 + SCH_MAX_SCALARS]; /* reason ids, -1 until interned */
} search;

static int search_init(search *s, sch_session *ssn) {
  memset(s, 0, sizeof(*s));
  s->ssn = ssn;
  size_t n = (size_t)(ssn->nnode_list ? ssn->nnode_list : 1);
  s->feasible = malloc(n * sizeof(*s->feasible));
  s->scores = malloc(n * sizeof(*s->scores));
  for (int i = 0; i < 2 + SCH_MAX_SCALARS; i++)
    s->insufficient[i] = -1;
  return s->feasible && s->scores ? 0 : KC_ENOMEM;
}

static void search_close(search *s) {
  free(s->feasible);
  free(s->scores);
  free(s->hist);
  free(s->touched);
}

static int count_reason(search *s, int32_t id) {
  if ((size_t)id >= s->cap_hist) {
    size_t cap = s->cap_hist ? s->cap_hist : 64;
    while (cap <= (size_t)id)
      cap *= 2;
    int32_t *v = realloc(s->hist, cap * sizeof(*v));
    if (!v)
      return KC_ENOMEM;
    memset(v + s->cap_hist, 0, (cap - s->cap_hist) * sizeof(*v));
    s->hist = v;
    s->cap_hist = cap;
  }
  if (s->hist[id]++ == 0) {
    if (s->ntouched == s->cap_touched) {
      size_t cap = s->cap_touched ? s->cap_touched * 2 : 16;
      int32_t *v = realloc(s->touched, cap * sizeof(*v));
      if (!v)
        return KC_ENOMEM;
      s->touched = v;
      s->cap_touched = cap;
    }
    s->touched[s->ntouched++] = id;
  }
  return 0;
}

static int32_t insufficient_reason(search *s, int dim) {
  if (s->insufficient[dim] < 0) {
    const char *name = dim == 0 ? "cpu" : dim == 1 ? "memory" : s->ssn->snap->scalar_names[dim - 2];
    s->insufficient[dim] = sch_session_reasonf(s->ssn, "Insufficient %s", name ? name : "?");
  }
  return s->insufficient[dim];
}

/* Volcano CalculateNumOfFeasibleNodesToFind. */
static int32_t nodes_to_find(const sch_session *ssn, int32_t all) {
  const sch_session_options *o = &ssn->opts;
  if (all <= o->minimum_feasible_nodes || o->percentage_nodes_to_find >= 100)
    return all;
  int32_t pct = o->percentage_nodes_to_find;
  if (pct <= 0) {
    pct = 50 - all / 125;
    if (pct < o->minimum_percentage_nodes_to_find)
      pct = o->minimum_percentage_nodes_to_find;
  }
  int64_t n = (int64_t)all * pct / 100;
  if (n < o->minimum_feasible_nodes)
    n = o->minimum_feasible_nodes;
  return (int32_t)(n > all ? all : n);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* kube-scheduler's aggregated message: "0/50 nodes are available: 42 Insufficient cpu,
 * 8 node(s) had untolerated taint {gpu: true}." (histogram entries sorted as strings). */
static int32_t fit_message(search *s) {
  sch_session *ssn = s->ssn;
  char **items = calloc(s->ntouched ? s->ntouched : 1, sizeof(*items));
  int32_t id = KC_ENOMEM;
  if (!items)
    goto out;
  for (size_t i = 0; i < s->ntouched; i++)
    if (asprintf(&items[i], "%d %s", s->hist[s->touched[i]],
                 sch_session_reason_str(ssn, s->touched[i])) < 0)
      goto out;
  qsort(items, s->ntouched, sizeof(*items), cmp_str);
  size_t len = 64;
  for (size_t i = 0; i < s->ntouched; i++)
    len += strlen(items[i]) + 2;
  char *buf = malloc(len);
  if (!buf)
    goto out;
  size_t off = (size_t)snprintf(buf, len, "0/%d nodes are available", ssn->nnode_list);
  for (size_t i = 0; i < s->ntouched; i++)
    off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : ": ", items[i]);
  if (s->ntouched)
    snprintf(buf + off, len - off, ".");
  id = sch_session_reason(ssn, buf);
  free(buf);
out:
  for (size_t i = 0; items && i < s->ntouched; i++)
    free(items[i]);
  free(items);
  return id;
}

/* The dimensions a request asks for (SCH_DIM_* bits): the node scan looks only at those. */
static unsigned req_dims(const sch_resource *r) {
  unsigned m = 0;
  if (r->milli_cpu > 0)
    m |= SCH_DIM_CPU;
  if (r->memory > 0)
    m |= SCH_DIM_MEMORY;
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    if (r->scalar[i] > 0)
      m |= SCH_DIM_SCALAR(i);
  return m;
}

/* sch_resource_insufficient(req, future idle of n) for the dimensions in reqmask, without
 * building the future idle: this runs once per task and node. */
static inline unsigned short_dims(const sch_resource *req, unsigned reqmask, const sch_node *n) {
  unsigned m = 0;
  if (reqmask & SCH_DIM_CPU) {
    int64_t fut = n->idle.milli_cpu + n->releasing.milli_cpu - n->pipelined.milli_cpu;
    if (req->milli_cpu > fut && req->milli_cpu - fut >= SCH_MIN_MILLI_CPU)
      m |= SCH_DIM_CPU;
  }
  if (reqmask & SCH_DIM_MEMORY) {
    int64_t fut = n->idle.memory + n->releasing.memory - n->pipelined.memory;
    if (req->memory > fut && req->memory - fut >= SCH_MIN_MEMORY)
      m |= SCH_DIM_MEMORY;
  }
  for (int i = 0; (reqmask >> 2) >> i; i++) {
    if (!(reqmask & SCH_DIM_SCALAR(i)))
      continue;
    int64_t fut = n->idle.scalar[i] + n->releasing.scalar[i] - n->pipelined.scalar[i];
    if (req->scalar[i] > fut && req->scalar[i] - fut >= SCH_MIN_SCALAR)
      m |= SCH_DIM_SCALAR(i);
  }
  return m;
}

/* Finds feasible nodes for t into s->feasible, resuming where the last scan stopped.
 * With none, returns the id of the aggregated reason; otherwise -1. */
static int32_t find_nodes(search *s, const sch_task *t, bool check_resources) {
  sch_session *ssn = s->ssn;
  sch_snapshot *snap = ssn->snap;
  int32_t all = ssn->nnode_list;
  int32_t want = nodes_to_find(ssn, all);
  for (size_t i = 0; i < s->ntouched; i++)
    s->hist[s->touched[i]] = 0;
  s->ntouched = 0;
  s->nfeasible = 0;
  if (all == 0)
    return sch_session_reason(ssn, "0/0 nodes are available");
  uint32_t start = ssn->next_node % (uint32_t)all;
  int32_t k = 0;
  unsigned reqmask = req_dims(&t->init_resreq);
  for (; k < all && (int32_t)s->nfeasible < want; k++) {
    int32_t ni = ssn->node_list[(start + (uint32_t)k) % (uint32_t)all];
    const sch_node *n = &snap->nodes[ni];
    sch_fit why = {0};
    if (check_resources) {
      unsigned mask = short_dims(&t->init_resreq, reqmask, n);
      if (mask) {
        for (int d = 0; d < 2 + SCH_MAX_SCALARS; d++)
          if (mask & (1u << d))
            sch_fit_add(&why, insufficient_reason(s, d));
      }
    }
    if (why.n == 0 && sch_session_predicate(ssn, t, n, &why) == SCH_FIT) {
      s->feasible[s->nfeasible++] = ni;
      continue;
    }
    if (why.n == 0)
      sch_fit_add(&why, sch_session_reason(ssn, "node(s) did not pass the predicates"));
    for (int r = 0; r < why.n; r++)
      if (count_reason(s, why.reasons[r]) < 0)
        return KC_ENOMEM;
  }
  ssn->next_node = (start + (uint32_t)k) % (uint32_t)all;
  return s->nfeasible ? -1 : fit_message(s);
}

/* The highest-scoring feasible node (the first of equals); *score gets its score, or stays
 * untouched when nothing was scored (returns false then). */
static int32_t best_node_scored(search *s, const sch_task *t, double *score, bool *scored) {
  sch_session *ssn = s->ssn;
  *scored = false;
  if (s->nfeasible == 1 ||
      (ssn->cbs[SCH_CB_NODE_ORDER].n == 0 && ssn->cbs[SCH_CB_BATCH_NODE_ORDER].n == 0))
    return s->feasible[0];
  sch_session_node_scores(ssn, t, s->feasible, s->nfeasible, s->scores);
  size_t best = 0;
  for (size_t i = 1; i < s->nfeasible; i++)
    if (s->scores[i] > s->scores[best])
      best = i;
  *score = s->scores[best];
  *scored = true;
  return s->feasible[best];
}

static int32_t best_node(search *s, const sch_task *t) {
  double score;
  bool scored;
  return best_node_scored(s, t, &score, &scored);
}

/* ---- allocate ---- */

/* Records the actionable reason t found no node (sch_why.c), while the gang's pods placed
 * so far still hold their nodes. 0 or KC_ENOMEM. */
static int explain(sch_session *ssn, sch_job *j, const sch_task *t, int32_t placed) {
  bool big = false;
  int32_t w = sch__why_unplaced(ssn, t, placed, &big);
  if (w < -1)
    return w;
  if (w >= 0) {
    j->why_message = w;
    j->why_too_big = big;
  }
  return 0;
}

/* Places the pending tasks of one job through one statement. *again is set when the job
 * became ready with tasks left, so it goes back in its queue (Volcano's round robin). */
static int allocate_job(sch_session *ssn, search *s, int32_t qi, int32_t ji, bool *again) {
  sch_snapshot *snap = ssn->snap;
  sch_job *j = &snap->jobs[ji];
  const sch_queue *q = &snap->queues[qi];
  *again = false;
  int32_t *tasks = malloc((size_t)(j->ntasks ? j->ntasks : 1) * sizeof(*tasks));
  sch_statement *st = sch_statement_new(ssn);
  int rc = KC_ENOMEM;
  if (!tasks || !st)
    goto out;
  size_t n = 0;
  for (int32_t i = 0; i < j->ntasks; i++) {
    const sch_task *t = &snap->tasks[j->tasks[i]];
    if (t->status == SCH_TASK_PENDING && !t->best_effort && !t->gated)
      tasks[n++] = j->tasks[i];
  }
  qsort_r(tasks, n, sizeof(*tasks), sch__task_cmp, ssn);
  rc = 0;
  for (size_t i = 0; i < n; i++) {
    sch_task *t = &snap->tasks[tasks[i]];
    if (!sch_session_allocatable(ssn, q, t)) {
      if (j->queue_message < 0)
        sch_session_job_queue_reason(ssn, j, "queue %s resource quota insufficient", q->name);
      break;
    }
    int32_t why = find_nodes(s, t, true);
    if (why < -1) {
      rc = why;
      goto out;
    }
    if (why >= 0) {
      t->why = why;
      if (j->fit_message < 0)
        j->fit_message = why;
      if (j->why_message < 0 && (rc = explain(ssn, j, t, (int32_t)i)) < 0)
        goto out;
      break; /* the gang cannot complete this round without this task */
    }
    double score = 0;
    bool scored;
    int32_t ni = best_node_scored(s, t, &score, &scored);
    const sch_node *node = &snap->nodes[ni];
    if (sch_resource_less_equal(&t->init_resreq, &node->idle))
      rc = sch_statement_allocate(st, tasks[i], ni);
    else
      rc = sch_statement_pipeline(st, tasks[i], ni);
    if (rc < 0)
      goto out;
    t->why = -1;
    t->scored = scored;
    t->score = score;
    if (i + 1 < n && sch_session_job_ready(ssn, j)) {
      *again = true;
      break;
    }
  }
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
  search s;
  sch__heap queues = {0};
  sch__heap *jobs = calloc((size_t)(snap->nqueues ? snap->nqueues : 1), sizeof(*jobs));
  int rc = search_init(&s, ssn);
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
    if ((rc = allocate_job(ssn, &s, qi, ji, &again)) < 0)
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
  search_close(&s);
  return rc;
}

const sch_action sch_action_allocate = {"allocate", allocate_execute};

/* ---- backfill ---- */

static int backfill_execute(sch_session *ssn) {
  sch_snapshot *snap = ssn->snap;
  search s;
  int rc = search_init(&s, ssn);
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
      int32_t why = find_nodes(&s, t, false);
      if (why < -1) {
        rc = why;
        goto out;
      }
      if (why >= 0) {
        t->why = why;
        if (j->fit_message < 0)
          j->fit_message = why;
        continue;
      }
      if ((rc = sch_statement_allocate(st, ti, best_node(&s, t))) < 0 ||
          (rc = sch_statement_commit(st)) < 0)
        goto out;
    }
  }
out:
  sch_statement_free(st);
  search_close(&s);
  return rc;
}

const sch_action sch_action_backfill = {"backfill", backfill_execute};
