/* The allocate action's HyperNode path (Volcano allocate.go allocateForJob, allocateForSubJob
 * and allocateResourcesForTasks): a job with a networkTopology, or with sub-groups, is placed
 * inside one HyperNode.
 *
 * The job's HyperNodes come from the session's gradient (the network-topology-aware plugin:
 * lowest tier first, never above highestTierAllowed in hard mode; without the plugin, the
 * cluster top alone). In each gradient the HyperNodes that could hold what the gang still
 * needs are tried best score first (HyperNodeOrderFn; then the lower tier, then the name), each
 * in a statement of its own over that HyperNode's nodes only; the first where the job becomes
 * ready (or pipelined) wins, so the gang lands in the lowest tier that holds it. A job with
 * sub-groups places them in turn inside the job's HyperNode, each within its own gradient. Not
 * placed anywhere, the job waits and its why-pending line names the tier and the largest free
 * domain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_hypernode.h"
#include "sch_int.h"
#include "sch_search.h"

typedef struct topo_ctx {
  sch_session *ssn;
  sch__search *s;
  int32_t qi;
  sch_job *j;
  int32_t *tasks; /* scratch: a unit's placeable tasks */
  int32_t *nodes; /* scratch: a HyperNode's nodes in the session's node list */
  int32_t *out;   /* scratch: gradient vertices (a unit's) */
  int32_t *grad;  /* their gradients */
  int32_t *jout;  /* the job's gradient, when it has sub-groups */
  int32_t *jgrad;
  double *scores; /* scratch, per vertex */
  bool *in_list;  /* per snapshot node: in the session's node list */
  sch_statement **stmts;
  size_t nstmts;
  bool again;
} topo_ctx;

bool sch__job_needs_hypernode(const sch_snapshot *snap, const sch_job *j) {
  if (j->nsubjobs > 0)
    return true;
  sch_topo topo;
  sch_job_topo(snap, j, &topo);
  return topo.mode != SCH_TOPO_NONE;
}

/* ---- scoping the node search to one HyperNode ---- */

typedef struct {
  int32_t *list;
  int32_t n;
  uint32_t next;
} saved_scope;

static void scope_enter(topo_ctx *c, int32_t v, saved_scope *sv) {
  sch_session *ssn = c->ssn;
  const sch_hypernode *h = &ssn->snap->hntree->v[v];
  sv->list = ssn->node_list;
  sv->n = ssn->nnode_list;
  sv->next = ssn->next_node;
  int32_t n = 0;
  for (int32_t i = 0; i < h->nnodes; i++)
    if (c->in_list[h->nodes[i]])
      c->nodes[n++] = h->nodes[i];
  ssn->node_list = c->nodes;
  ssn->nnode_list = n;
  ssn->next_node = 0;
}

static void scope_leave(topo_ctx *c, const saved_scope *sv) {
  c->ssn->node_list = sv->list;
  c->ssn->nnode_list = sv->n;
  c->ssn->next_node = sv->next;
}

/* ---- statements of one attempt ---- */

static int push_stmt(topo_ctx *c, sch_statement *st) {
  c->stmts[c->nstmts++] = st;
  return 0;
}

/* Undoes the statements from mark on, newest first. */
static void drop_stmts(topo_ctx *c, size_t mark) {
  while (c->nstmts > mark) {
    sch_statement *st = c->stmts[--c->nstmts];
    sch_statement_discard(st);
    sch_statement_free(st);
  }
}

/* ---- one unit (the job, or a sub-group) in one HyperNode ---- */

static bool unit_done(topo_ctx *c, const sch_subjob *sj) {
  if (sj)
    return sch_session_subjob_ready(c->ssn, c->j, sj) ||
           sch_session_subjob_pipelined(c->ssn, c->j, sj);
  return sch_session_job_ready(c->ssn, c->j) || sch_session_job_pipelined(c->ssn, c->j);
}

/* Places the unit's pending tasks in HyperNode v through a new statement. 1 when the unit
 * is complete there (the statement kept on the stack), 0 when not (undone), or KC_E*. */
static int place_in(topo_ctx *c, const sch_subjob *sj, int32_t v) {
  const sch_snapshot *snap = c->ssn->snap;
  const int32_t *all = sj ? sj->tasks : c->j->tasks;
  int32_t nall = sj ? sj->ntasks : c->j->ntasks;
  size_t n = sch__placeable(snap, all, nall, c->tasks);
  sch_statement *st = sch_statement_new(c->ssn);
  if (st == NULL)
    return KC_ENOMEM;
  saved_scope sv;
  scope_enter(c, v, &sv);
  bool again = false;
  int rc = sch__place_tasks(c->ssn, c->s, c->qi, c->j, c->tasks, n, st, sj, &again);
  scope_leave(c, &sv);
  if (rc == 0 && sch_statement_len(st) > 0 && unit_done(c, sj)) {
    c->again |= again;
    return push_stmt(c, st) == 0 ? 1 : KC_ENOMEM;
  }
  sch_statement_discard(st);
  sch_statement_free(st);
  return rc < 0 ? rc : 0;
}

/* What the unit still needs: the requests of its pending tasks. */
static void unit_need(const sch_snapshot *snap, const int32_t *tasks, size_t n,
                      sch_resource *need) {
  memset(need, 0, sizeof(*need));
  for (size_t i = 0; i < n; i++)
    sch_resource_add(need, &snap->tasks[tasks[i]].init_resreq);
}

/* Whether the nodes under v have, together, the future idle need asks for (Volcano
 * FilterGradientsByMinResource: a HyperNode that cannot hold the gang is not tried). */
static bool may_hold(const sch_snapshot *snap, const bool *in_list, int32_t v,
                     const sch_resource *need) {
  const sch_hypernode *h = &snap->hntree->v[v];
  sch_resource free_sum = {0}, fi;
  for (int32_t i = 0; i < h->nnodes; i++)
    if (in_list[h->nodes[i]]) {
      sch_node_future_idle(&snap->nodes[h->nodes[i]], &fi);
      sch_resource_add(&free_sum, &fi);
    }
  return sch_resource_less_equal(need, &free_sum);
}

typedef struct {
  int32_t v;
  double score;
} candidate;

/* Best score first, then the lower tier, then the name (vertex order is name order). */
static int cmp_candidates(const void *a, const void *b, void *arg) {
  const candidate *x = a, *y = b;
  const sch_hntree *t = arg;
  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  if (t->v[x->v].tier != t->v[y->v].tier)
    return t->v[x->v].tier < t->v[y->v].tier ? -1 : 1;
  return x->v < y->v ? -1 : x->v > y->v;
}

/* The candidates of one gradient (out[from..to)) that may hold need, sorted. Their count. */
static size_t gradient_candidates(topo_ctx *c, const sch_subjob *sj, int32_t *out, int32_t from,
                                  int32_t to, const sch_resource *need, candidate *cand) {
  const sch_snapshot *snap = c->ssn->snap;
  size_t m = 0;
  for (int32_t k = from; k < to; k++)
    if (may_hold(snap, c->in_list, out[k], need))
      out[from + (int32_t)m++] = out[k];
  sch_session_hn_scores(c->ssn, c->j, sj, out + from, m, c->scores);
  for (size_t k = 0; k < m; k++)
    cand[k] = (candidate){out[from + (int32_t)k], c->scores[k]};
  qsort_r(cand, m, sizeof(*cand), cmp_candidates, snap->hntree);
  return m;
}

/* Places the unit (sj NULL: the job without sub-groups) under root: gradient by gradient, the
 * first HyperNode of the lowest gradient where it completes. 1 placed, 0 not, or KC_E*. */
static int place_unit(topo_ctx *c, const sch_subjob *sj, int32_t root, candidate *cand) {
  const sch_snapshot *snap = c->ssn->snap;
  int32_t n = sch_session_hn_gradient(c->ssn, c->j, sj, root, c->out, c->grad);
  size_t np =
      sch__placeable(snap, sj ? sj->tasks : c->j->tasks, sj ? sj->ntasks : c->j->ntasks, c->tasks);
  sch_resource need;
  unit_need(snap, c->tasks, np, &need);
  for (int32_t from = 0; from < n;) {
    int32_t to = from;
    while (to < n && c->grad[to] == c->grad[from])
      to++;
    size_t m = gradient_candidates(c, sj, c->out, from, to, &need, cand);
    for (size_t k = 0; k < m; k++) {
      int rc = place_in(c, sj, cand[k].v);
      if (rc != 0)
        return rc;
    }
    from = to;
  }
  return 0;
}

/* ---- a job with sub-groups ---- */

typedef struct {
  sch_session *ssn;
  const sch_job *j;
} order_arg;

static int cmp_subjobs(const void *a, const void *b, void *arg) {
  const order_arg *o = arg;
  const sch_subjob *l = &o->j->subjobs[*(const int32_t *)a];
  const sch_subjob *r = &o->j->subjobs[*(const int32_t *)b];
  return sch_session_subjob_order(o->ssn, l, r);
}

/* The job's sub-groups in HyperNode h, in the sub-group order, each within its own gradient
 * (a sub-group that fits nowhere keeps its pods pending). 1 when the job is then ready or
 * pipelined, else 0 with everything undone; or KC_E*. */
static int place_subjobs_in(topo_ctx *c, int32_t h, int32_t *order, candidate *cand) {
  size_t mark = c->nstmts;
  order_arg oa = {c->ssn, c->j};
  for (int32_t k = 0; k < c->j->nsubjobs; k++)
    order[k] = k;
  qsort_r(order, (size_t)c->j->nsubjobs, sizeof(int32_t), cmp_subjobs, &oa);
  for (int32_t k = 0; k < c->j->nsubjobs; k++) {
    const sch_subjob *sj = &c->j->subjobs[order[k]];
    if (sch__placeable(c->ssn->snap, sj->tasks, sj->ntasks, c->tasks) == 0)
      continue;
    int rc = place_unit(c, sj, h, cand);
    if (rc < 0)
      return rc;
  }
  if (c->nstmts > mark && unit_done(c, NULL))
    return 1;
  drop_stmts(c, mark);
  return 0;
}

static int place_job_with_subjobs(topo_ctx *c, candidate *jcand, candidate *cand, int32_t *order) {
  const sch_snapshot *snap = c->ssn->snap;
  int32_t n = sch_session_hn_gradient(c->ssn, c->j, NULL, snap->hntree->top, c->jout, c->jgrad);
  size_t np = sch__placeable(snap, c->j->tasks, c->j->ntasks, c->tasks);
  sch_resource need;
  unit_need(snap, c->tasks, np, &need);
  for (int32_t from = 0; from < n;) {
    int32_t to = from;
    while (to < n && c->jgrad[to] == c->jgrad[from])
      to++;
    size_t m = gradient_candidates(c, NULL, c->jout, from, to, &need, jcand);
    for (size_t k = 0; k < m; k++) {
      int rc = place_subjobs_in(c, jcand[k].v, order, cand);
      if (rc != 0)
        return rc;
    }
    from = to;
  }
  return 0;
}

/* ---- why the gang waits ---- */

/* How many pods like t fit on the nodes under v (their future idle and pod slots). */
static int64_t room_for(const sch_snapshot *snap, const bool *in_list, int32_t v,
                        const sch_task *t) {
  const sch_hypernode *h = &snap->hntree->v[v];
  int64_t total = 0;
  for (int32_t i = 0; i < h->nnodes; i++) {
    const sch_node *n = &snap->nodes[h->nodes[i]];
    if (!in_list[h->nodes[i]])
      continue;
    sch_resource fi;
    sch_node_future_idle(n, &fi);
    int64_t fit = n->max_pods - n->ntasks;
    const int64_t want[2] = {t->init_resreq.milli_cpu, t->init_resreq.memory};
    const int64_t have[2] = {fi.milli_cpu, fi.memory};
    for (int d = 0; d < 2 + SCH_MAX_SCALARS; d++) {
      int64_t w = d < 2 ? want[d] : t->init_resreq.scalar[d - 2];
      int64_t a = d < 2 ? have[d] : fi.scalar[d - 2];
      if (w > 0 && a / w < fit)
        fit = a / w;
    }
    total += fit > 0 ? fit : 0;
  }
  return total;
}

/* "network topology: no HyperNode of tier <= 1 holds the 12 pods the gang needs
 * (highestTierAllowed 1, mode hard); the largest free domain, leaf-a (tier 1), has room for 8" */
static int topology_why(topo_ctx *c, const sch_topo *topo, const char *unit) {
  const sch_snapshot *snap = c->ssn->snap;
  const sch_hntree *t = snap->hntree;
  size_t np = sch__placeable(snap, c->j->tasks, c->j->ntasks, c->tasks);
  if (np == 0)
    return 0;
  const sch_task *first = &snap->tasks[c->tasks[0]];
  int32_t need = c->j->min_available - sch_job_ready_num(c->j);
  if (need <= 0 || need > (int32_t)np)
    need = (int32_t)np;
  int32_t best = -1;
  int64_t best_room = -1;
  for (int32_t v = 0; v < t->top; v++) {
    if (t->v[v].tier > topo->tier)
      continue;
    int64_t r = room_for(snap, c->in_list, v, first);
    if (r > best_room) {
      best_room = r;
      best = v;
    }
  }
  char largest[512] = "no HyperNode of that tier exists";
  if (best >= 0)
    snprintf(largest, sizeof(largest), "the largest free domain, %s (tier %d), has room for %lld",
             t->v[best].name, t->v[best].tier, (long long)best_room);
  int32_t id = sch_session_reasonf(
      c->ssn,
      "network topology: no HyperNode of tier <= %d holds the %d pods %s needs "
      "(highestTierAllowed %d, mode %s); %s",
      topo->tier, need, unit, topo->tier, topo->mode == SCH_TOPO_HARD ? "hard" : "soft", largest);
  if (id < 0)
    return id;
  c->j->why_message = id;
  c->j->why_too_big = false;
  return 0;
}

/* Why a job that was not placed waits: the HyperNodes not ready, or its hard topology. */
static int explain(topo_ctx *c) {
  const sch_snapshot *snap = c->ssn->snap;
  if (!snap->hntree->ready) {
    int32_t id = sch_session_reasonf(c->ssn, "hyperNodes are not ready for scheduling: %s",
                                     snap->hntree->error);
    if (id < 0)
      return id;
    c->j->why_message = id;
    return 0;
  }
  sch_topo topo;
  sch_job_topo(snap, c->j, &topo);
  if (topo.mode == SCH_TOPO_HARD)
    return topology_why(c, &topo, "the gang");
  for (int32_t k = 0; k < c->j->nsubjobs; k++) {
    const sch_subjob *sj = &c->j->subjobs[k];
    sch_subjob_topo(snap, sj, &topo);
    if (topo.mode == SCH_TOPO_HARD && !sch_session_subjob_ready(c->ssn, c->j, sj)) {
      char unit[300];
      snprintf(unit, sizeof(unit), "sub-group %s", sj->key);
      return topology_why(c, &topo, unit);
    }
  }
  return 0;
}

/* ---- the job ---- */

static int finish(topo_ctx *c, bool placed) {
  int rc = 0;
  bool ready = placed && sch_session_job_ready(c->ssn, c->j);
  for (size_t i = 0; i < c->nstmts; i++) {
    if (ready && rc == 0)
      rc = sch_statement_commit(c->stmts[i]);
    else
      sch__statement_keep(c->stmts[i]); /* pipelined: kept for this session, no bind */
    sch_statement_free(c->stmts[i]);
  }
  c->nstmts = 0;
  return rc;
}

static int ctx_init(topo_ctx *c, sch_session *ssn, sch__search *s, int32_t qi, sch_job *j) {
  const sch_snapshot *snap = ssn->snap;
  size_t nv = (size_t)snap->hntree->n, nn = (size_t)snap->nnodes + 1;
  size_t nt = (size_t)j->ntasks + 1;
  *c = (topo_ctx){.ssn = ssn, .s = s, .qi = qi, .j = j};
  c->tasks = malloc(nt * sizeof(int32_t));
  c->nodes = malloc(nn * sizeof(int32_t));
  c->out = malloc(nv * sizeof(int32_t));
  c->grad = malloc(nv * sizeof(int32_t));
  c->jout = malloc(nv * sizeof(int32_t));
  c->jgrad = malloc(nv * sizeof(int32_t));
  c->scores = malloc(nv * sizeof(double));
  c->in_list = calloc(nn, sizeof(bool));
  c->stmts = malloc((nt + 1) * sizeof(*c->stmts));
  if (!c->tasks || !c->nodes || !c->out || !c->grad || !c->jout || !c->jgrad || !c->scores ||
      !c->in_list || !c->stmts)
    return KC_ENOMEM;
  for (int32_t i = 0; i < ssn->nnode_list; i++)
    c->in_list[ssn->node_list[i]] = true;
  return 0;
}

static void ctx_close(topo_ctx *c) {
  free(c->tasks);
  free(c->nodes);
  free(c->out);
  free(c->grad);
  free(c->jout);
  free(c->jgrad);
  free(c->scores);
  free(c->in_list);
  free(c->stmts);
}

static int place_job(topo_ctx *c) {
  size_t nv = (size_t)c->ssn->snap->hntree->n;
  candidate *cand = malloc(nv * sizeof(*cand)), *jcand = malloc(nv * sizeof(*jcand));
  int32_t *order = malloc(((size_t)c->j->nsubjobs + 1) * sizeof(int32_t));
  int rc = KC_ENOMEM;
  if (cand && jcand && order)
    rc = c->j->nsubjobs ? place_job_with_subjobs(c, jcand, cand, order)
                        : place_unit(c, NULL, c->ssn->snap->hntree->top, cand);
  free(cand);
  free(jcand);
  free(order);
  return rc;
}

int sch__allocate_hypernode(sch_session *ssn, sch__search *s, int32_t qi, int32_t ji, bool *again) {
  sch_job *j = &ssn->snap->jobs[ji];
  *again = false;
  topo_ctx c;
  int rc = ctx_init(&c, ssn, s, qi, j);
  if (rc == 0 && !ssn->snap->hntree->ready)
    rc = explain(&c); /* Volcano: "hyperNodes are not ready for scheduling" */
  else if (rc == 0 && (rc = place_job(&c)) >= 0) {
    bool placed = rc == 1;
    KC_V(4, "allocate: job %s %s by HyperNode", j->key, placed ? "placed" : "not placed");
    rc = finish(&c, placed);
    if (rc == 0 && !placed)
      rc = explain(&c);
    if (rc == 0 && placed && sch_session_job_ready(ssn, j))
      *again = sch__placeable(ssn->snap, j->tasks, j->ntasks, c.tasks) > 0 && c.again;
  }
  drop_stmts(&c, 0);
  ctx_close(&c);
  return rc;
}
