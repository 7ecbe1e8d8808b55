/* The node search shared by allocate and backfill (see sch_search.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"
#include "sch_search.h"

int sch__search_init(sch__search *s, sch_session *ssn) {
  memset(s, 0, sizeof(*s));
  s->ssn = ssn;
  size_t n = (size_t)(ssn->nnode_list ? ssn->nnode_list : 1);
  s->feasible = malloc(n * sizeof(*s->feasible));
  s->scores = malloc(n * sizeof(*s->scores));
  for (int i = 0; i < 2 + SCH_MAX_SCALARS; i++)
    s->insufficient[i] = -1;
  return s->feasible && s->scores ? 0 : KC_ENOMEM;
}

void sch__search_close(sch__search *s) {
  free(s->feasible);
  free(s->scores);
  free(s->hist);
  free(s->touched);
}

static int count_reason(sch__search *s, int32_t id) {
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

static int32_t insufficient_reason(sch__search *s, int dim) {
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
static int32_t fit_message(sch__search *s) {
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
    if (sch_short_of(req->milli_cpu, n->idle.milli_cpu, n->releasing.milli_cpu,
                     n->pipelined.milli_cpu, SCH_MIN_MILLI_CPU))
      m |= SCH_DIM_CPU;
  }
  if (reqmask & SCH_DIM_MEMORY) {
    if (sch_short_of(req->memory, n->idle.memory, n->releasing.memory, n->pipelined.memory,
                     SCH_MIN_MEMORY))
      m |= SCH_DIM_MEMORY;
  }
  for (int i = 0; (reqmask >> 2) >> i; i++) {
    if (!(reqmask & SCH_DIM_SCALAR(i)))
      continue;
    if (sch_short_of(req->scalar[i], n->idle.scalar[i], n->releasing.scalar[i],
                     n->pipelined.scalar[i], SCH_MIN_SCALAR))
      m |= SCH_DIM_SCALAR(i);
  }
  return m;
}

/* Finds feasible nodes for t into s->feasible, resuming where the last scan stopped.
 * With none, returns the id of the aggregated reason; otherwise -1. */
static int32_t find_nodes(sch__search *s, const sch_task *t, bool check_resources) {
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

/* One search is Volcano's PredicateNodes: one observation of the Predicate stage. */
int32_t sch__find_nodes(sch__search *s, const sch_task *t, bool check_resources) {
  uint64_t t0 = sch__clock(s->ssn);
  int32_t rc = find_nodes(s, t, check_resources);
  sch__stage_done(s->ssn, SCH_STAGE_PREDICATE, t0);
  return rc;
}

int sch__find_fit(sch__search *s, sch_job *j, sch_task *t, bool check_resources) {
  int32_t why = sch__find_nodes(s, t, check_resources);
  if (why < -1)
    return (int)why;
  if (why < 0)
    return 1;
  t->why = why;
  if (j->fit_message < 0)
    j->fit_message = why;
  return 0;
}

/* The highest-scoring feasible node (the first of equals); *score gets its score, or stays
 * untouched when nothing was scored (returns false then). */
int32_t sch__best_node_scored(sch__search *s, const sch_task *t, double *score, bool *scored) {
  sch_session *ssn = s->ssn;
  *scored = false;
  if (s->nfeasible == 1 ||
      (ssn->cbs[SCH_CB_NODE_ORDER].n == 0 && ssn->cbs[SCH_CB_BATCH_NODE_ORDER].n == 0))
    return s->feasible[0];
  uint64_t t0 = sch__clock(ssn);
  sch_session_node_scores(ssn, t, s->feasible, s->nfeasible, s->scores);
  sch__stage_done(ssn, SCH_STAGE_SCORING, t0); /* Volcano's PrioritizeNodes */
  size_t best = 0;
  for (size_t i = 1; i < s->nfeasible; i++)
    if (s->scores[i] > s->scores[best])
      best = i;
  *score = s->scores[best];
  *scored = true;
  return s->feasible[best];
}

int32_t sch__best_node(sch__search *s, const sch_task *t) {
  double score;
  bool scored;
  return sch__best_node_scored(s, t, &score, &scored);
}

/* ---- the allocate action's task loop (shared with its HyperNode path) ---- */

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

int sch__place_tasks(sch_session *ssn, sch__search *s, int32_t qi, sch_job *j, int32_t *tasks,
                     size_t n, sch_statement *st, const sch_subjob *sj, bool *again) {
  sch_snapshot *snap = ssn->snap;
  const sch_queue *q = &snap->queues[qi];
  int rc = 0;
  qsort_r(tasks, n, sizeof(*tasks), sch__task_cmp, ssn);
  for (size_t i = 0; i < n; i++) {
    sch_task *t = &snap->tasks[tasks[i]];
    if (!sch_session_allocatable(ssn, q, t)) {
      if (j->queue_message < 0)
        sch_session_job_queue_reason(ssn, j, "queue %s resource quota insufficient", q->name);
      break;
    }
    int fit = sch__find_fit(s, j, t, true);
    if (fit < 0)
      return fit;
    if (!fit) {
      if (j->why_message < 0 && (rc = explain(ssn, j, t, (int32_t)i)) < 0)
        return rc;
      break; /* the gang cannot complete this round without this task */
    }
    double score = 0;
    bool scored;
    int32_t ni = sch__best_node_scored(s, t, &score, &scored);
    const sch_node *node = &snap->nodes[ni];
    if (sch_resource_less_equal(&t->init_resreq, &node->idle))
      rc = sch_statement_allocate(st, tasks[i], ni);
    else
      rc = sch_statement_pipeline(st, tasks[i], ni);
    if (rc < 0)
      return rc;
    t->why = -1;
    t->scored = scored;
    t->score = score;
    if (sj && sch_session_subjob_ready(ssn, j, sj))
      break; /* Volcano allocateResourcesForTasks: the sub-group is complete */
    if (!sj && i + 1 < n && sch_session_job_ready(ssn, j)) {
      *again = true;
      break;
    }
  }
  return 0;
}

/* The pending tasks allocate may place among tasks[0..n) into out; their count. */
size_t sch__placeable(const sch_snapshot *snap, const int32_t *tasks, int32_t n, int32_t *out) {
  size_t k = 0;
  for (int32_t i = 0; i < n; i++) {
    const sch_task *t = &snap->tasks[tasks[i]];
    if (t->status == SCH_TASK_PENDING && !t->best_effort && !t->gated)
      out[k++] = tasks[i];
  }
  return k;
}
