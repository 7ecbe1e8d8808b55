/* network-topology-aware (Volcano pkg/scheduler/plugins/network-topology-aware).
 *
 * HyperNodeGradientForJobFn / ForSubJobFn: a job (or sub-group) with a hard networkTopology
 * may be placed in the HyperNodes under the search root of tier <= highestTierAllowed, lowest
 * tier first, one gradient per tier; once it holds tasks, only under the highest ancestor of
 * its allocated HyperNode that the tier allows (getSearchRoot). A soft one (Kiln: Volcano
 * leaves soft jobs to node scoring) gets every HyperNode under the root, lowest tier first and
 * the root last, so it takes the smallest domain that holds it and spreads only when none
 * does. Without a topology: the root alone.
 *
 * HyperNodeOrderFn: HyperNode bin packing, (used + request) / allocatable per resource the
 * sub-group's tasks ask for that has a weight (hypernode.binpack.cpu, .memory, the names of
 * hypernode.binpack.resources with hypernode.binpack.resources.<name>; each 1 by default), 0
 * when the HyperNode would be over its allocatable; on a tie for the best, the share of the
 * sub-group's tasks already under the HyperNode is added.
 *
 * BatchNodeOrderFn: for a task with a network topology, the tier of the lowest common
 * ancestor of the node's HyperNode and the allocated HyperNode, (maxTier - tier) / (maxTier -
 * minTier) (1 when they are the same HyperNode, 0 before anything is placed), with the task
 * share added on a tie; for other tasks (hypernode.binpack.normal-pod.enable, default true)
 * the HyperNode bin packing of the node's HyperNode at each tier, weighted fading^(tier-1)
 * (hypernode.binpack.normal-pod.fading, default 0.8). Every score is scaled by 100 * weight. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_hypernode.h"
#include "sch_int.h"
#include "sch_match.h"

typedef struct nta_state {
  int64_t weight, cpu, memory;
  int64_t scalar[SCH_MAX_SCALARS];
  bool scored[SCH_MAX_SCALARS];
  bool normal_pod;
  double fading;
  int32_t min_tier, max_tier;
  sch_resource *allocatable, *used; /* per tree vertex */
  int32_t *bfs;                     /* scratch, tree size */
} nta_state;

/* ---- arguments ---- */

static void parse_resources(nta_state *st, sch_session *ssn, const sch_args *args) {
  sch_args_resource_weights(args, "hypernode.binpack.resources", sch_session_snapshot(ssn),
                            st->scalar, st->scored);
}

static void parse_args(nta_state *st, sch_session *ssn, const sch_args *a) {
  st->weight = sch_args_int(a, "weight", 1);
  st->cpu = sch_args_int(a, "hypernode.binpack.cpu", 1);
  st->memory = sch_args_int(a, "hypernode.binpack.memory", 1);
  if (st->weight < 0)
    st->weight = 1;
  if (st->cpu < 0)
    st->cpu = 1;
  if (st->memory < 0)
    st->memory = 1;
  parse_resources(st, ssn, a);
  st->normal_pod = sch_args_bool(a, "hypernode.binpack.normal-pod.enable", true);
  st->fading = sch_args_double(a, "hypernode.binpack.normal-pod.fading", 0.8);
  if (st->fading < 0)
    st->fading = 0.8;
}

/* ---- the HyperNode resource cache ---- */

static void add_node(const sch_hntree *t, nta_state *st, int32_t node, const sch_resource *r,
                     sch_resource *into, int sign) {
  for (int32_t v = t->node_hn[node]; v >= 0; v = t->v[v].parent) {
    if (sign > 0)
      sch_resource_add(&into[v], r);
    else
      sch_resource_sub(&into[v], r);
  }
}

static void on_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  if (t->node >= 0)
    add_node(ssn->snap->hntree, ctx, t->node, &t->resreq, ((nta_state *)ctx)->used, 1);
}

static void on_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  if (t->node >= 0)
    add_node(ssn->snap->hntree, ctx, t->node, &t->resreq, ((nta_state *)ctx)->used, -1);
}

static int init_cache(nta_state *st, const sch_snapshot *snap) {
  const sch_hntree *t = snap->hntree;
  st->allocatable = calloc((size_t)t->n, sizeof(sch_resource));
  st->used = calloc((size_t)t->n, sizeof(sch_resource));
  st->bfs = malloc((size_t)t->n * sizeof(int32_t));
  if (!st->allocatable || !st->used || !st->bfs)
    return KC_ENOMEM;
  for (int32_t i = 0; i < snap->nnodes; i++) {
    add_node(t, st, i, &snap->nodes[i].allocatable, st->allocatable, 1);
    add_node(t, st, i, &snap->nodes[i].used, st->used, 1);
  }
  st->min_tier = t->ntiers ? t->tiers[0] : 0;
  st->max_tier = t->ntiers ? t->tiers[t->ntiers - 1] : 0;
  return 0;
}

/* ---- gradients ---- */

/* Every vertex under root (root included) with tier <= max_tier, by tier ascending then
 * name, and gradient numbers per tier. */
static int32_t bfs_gradients(const sch_hntree *t, nta_state *st, int32_t root, int32_t max_tier,
                             int32_t *out, int32_t *grad) {
  int32_t head = 0, tail = 0, n = 0;
  st->bfs[tail++] = root;
  while (head < tail) {
    const sch_hypernode *v = &t->v[st->bfs[head++]];
    for (int32_t c = 0; c < v->nchildren; c++)
      st->bfs[tail++] = v->children[c];
  }
  for (int32_t k = 0; k < t->ntiers + 1; k++) {
    int32_t tier = k < t->ntiers ? t->tiers[k] : t->v[t->top].tier;
    if (tier > max_tier)
      break;
    for (int32_t i = 0; i < tail; i++)
      if (t->v[st->bfs[i]].tier == tier) {
        out[n] = st->bfs[i];
        grad[n++] = k;
      }
  }
  return n;
}

static int32_t gradient_for(sch_session *ssn, nta_state *st, const sch_topo *topo,
                            int32_t allocated, int32_t root, int32_t *out, int32_t *grad) {
  const sch_hntree *t = ssn->snap->hntree;
  if (topo->mode == SCH_TOPO_NONE) {
    out[0] = root;
    grad[0] = 0;
    return 1;
  }
  int32_t max_tier = topo->mode == SCH_TOPO_HARD ? topo->tier : t->v[t->top].tier;
  if (allocated >= 0) {
    int32_t high = sch_hntree_highest_allowed(t, allocated, max_tier);
    if (high < 0)
      return 0;
    int32_t lca = sch_hntree_lca(t, root, high);
    if (lca == root)
      root = high; /* the intersection of the two subtrees */
    else if (lca != high)
      return 0;
  }
  return bfs_gradients(t, st, root, max_tier, out, grad);
}

static int32_t nta_gradient(sch_session *ssn, void *ctx, const sch_job *j, const sch_subjob *sj,
                            int32_t root, int32_t *out, int32_t *grad) {
  const sch_snapshot *snap = ssn->snap;
  sch_topo topo;
  int32_t allocated;
  if (sj == NULL) {
    sch_job_topo(snap, j, &topo);
    allocated = sch_tasks_hypernode(snap, j->tasks, j->ntasks);
  } else {
    sch_subjob_topo(snap, sj, &topo);
    allocated = sch_tasks_hypernode(snap, sj->tasks, sj->ntasks);
  }
  return gradient_for(ssn, ctx, &topo, allocated, root, out, grad);
}

/* ---- HyperNode scores ---- */

static double fill_score(const nta_state *st, int32_t v, const sch_resource *req) {
  double total = 0;
  int64_t weights = 0;
  const sch_resource *al = &st->allocatable[v], *us = &st->used[v];
  const int64_t r[2] = {req->milli_cpu, req->memory}, a[2] = {al->milli_cpu, al->memory};
  const int64_t u[2] = {us->milli_cpu, us->memory}, w[2] = {st->cpu, st->memory};
  for (int d = 0; d < 2 + SCH_MAX_SCALARS; d++) {
    int64_t rq = d < 2 ? r[d] : req->scalar[d - 2], wt = d < 2 ? w[d] : st->scalar[d - 2];
    if (rq <= 0 || (d >= 2 && !st->scored[d - 2]))
      continue;
    double alloc = (double)(d < 2 ? a[d] : al->scalar[d - 2]);
    double used = (double)(d < 2 ? u[d] : us->scalar[d - 2]);
    if (used + (double)rq > alloc)
      return 0;
    total += (double)wt * (used + (double)rq) / alloc;
    weights += wt;
  }
  return weights > 0 ? total / (double)weights : 0;
}

/* The share of tasks[0..n) placed on nodes under v (Volcano scoreWithTaskNum). */
static double task_share(const sch_snapshot *snap, int32_t v, const int32_t *tasks, int32_t n) {
  if (n == 0)
    return 1;
  int32_t in = 0;
  for (int32_t i = 0; i < n; i++) {
    const sch_task *t = &snap->tasks[tasks[i]];
    in += t->node >= 0 && sch_hntree_has_node(snap->hntree, v, t->node);
  }
  return (double)in / n;
}

/* Adds the share of the tasks to the scores tied at the best (Volcano's tie-break). */
static void break_ties(const sch_snapshot *snap, const int32_t *vs, size_t n, double *sc,
                       const int32_t *tasks, int32_t ntasks) {
  double best = -1;
  size_t at_best = 0;
  for (size_t i = 0; i < n; i++)
    if (sc[i] > best) {
      best = sc[i];
      at_best = 1;
    } else if (sc[i] == best) {
      at_best++;
    }
  for (size_t i = 0; at_best > 1 && i < n; i++)
    if (sc[i] == best)
      sc[i] += task_share(snap, vs[i], tasks, ntasks);
}

static void nta_order(sch_session *ssn, void *ctx, const sch_job *j, const sch_subjob *sj,
                      const int32_t *hns, size_t n, double *scores) {
  nta_state *st = ctx;
  const sch_snapshot *snap = ssn->snap;
  const int32_t *tasks = sj ? sj->tasks : j->tasks;
  int32_t ntasks = sj ? sj->ntasks : j->ntasks;
  sch_resource req = {0};
  for (int32_t i = 0; i < ntasks; i++)
    sch_resource_add(&req, &snap->tasks[tasks[i]].resreq);
  double *sc = malloc((n ? n : 1) * sizeof(double));
  if (sc == NULL)
    return; /* no score: the HyperNodes are tried by name */
  for (size_t i = 0; i < n; i++)
    sc[i] = fill_score(st, hns[i], &req);
  break_ties(snap, hns, n, sc, tasks, ntasks);
  for (size_t i = 0; i < n; i++)
    scores[i] += sc[i] * (double)(SCH_MAX_NODE_SCORE * st->weight);
  free(sc);
}

/* ---- node scores ---- */

/* The sub-group of task ti of j, NULL when the job has none. */
static const sch_subjob *subjob_of(const sch_job *j, int32_t ti) {
  for (int32_t k = 0; k < j->nsubjobs; k++)
    for (int32_t i = 0; i < j->subjobs[k].ntasks; i++)
      if (j->subjobs[k].tasks[i] == ti)
        return &j->subjobs[k];
  return NULL;
}

static double tier_score(const nta_state *st, int32_t tier) {
  if (st->min_tier == st->max_tier)
    return 1;
  if (tier < st->min_tier || tier > st->max_tier)
    return 0;
  return ((double)st->max_tier - tier) / ((double)st->max_tier - st->min_tier);
}

static void score_topology_task(const sch_snapshot *snap, const nta_state *st, int32_t allocated,
                                const int32_t *nodes, size_t n, double *sc, const int32_t *tasks,
                                int32_t ntasks) {
  const sch_hntree *t = snap->hntree;
  int32_t *vs = malloc((n ? n : 1) * sizeof(int32_t));
  if (vs == NULL)
    return;
  for (size_t i = 0; i < n; i++) {
    vs[i] = t->node_hn[nodes[i]];
    int32_t lca = sch_hntree_lca(t, vs[i], allocated);
    sc[i] = vs[i] == allocated ? 1 : lca == t->top ? 0 : tier_score(st, t->v[lca].tier);
  }
  break_ties(snap, vs, n, sc, tasks, ntasks);
  free(vs);
}

/* fading^(tier - 1) by squaring (a tier is a user's number); 0^0 is 1, as Go's math.Pow. */
static double fade(double fading, int32_t tier) {
  double r = 1, b = fading;
  for (int64_t e = (int64_t)tier - 1; e > 0; e >>= 1) {
    if (e & 1)
      r *= b;
    b *= b;
  }
  return r;
}

/* The sum of fade(f, k) for k in lo..hi (Volcano's totalTierWeight over every tier between the
 * lowest and the highest), in closed form: the tiers between may be far apart. */
static double fade_sum(double f, int32_t lo, int32_t hi) {
  int64_t n = (int64_t)hi - lo + 1;
  if (n <= 0)
    return 0;
  if (f == 1)
    return (double)n;
  return fade(f, lo) * (1 - fade(f, (int32_t)(n < INT32_MAX ? n + 1 : INT32_MAX))) / (1 - f);
}

/* Volcano batchNodeOrderFnForNormalPods: each tier's HyperNode bin packing, fading with the
 * tier; a tier with no HyperNode of the node (or none at all) scores full. Only the tiers that
 * exist are visited: the others add their full weight to both sums. */
static void score_normal_task(const sch_snapshot *snap, const nta_state *st, const sch_task *task,
                              const int32_t *nodes, size_t n, double *sc) {
  const sch_hntree *t = snap->hntree;
  if (t->ntiers == 0)
    return;
  double total_weight = fade_sum(st->fading, st->min_tier, st->max_tier);
  for (size_t i = 0; i < n && total_weight > 0; i++) {
    double total = total_weight;
    for (int32_t v = t->node_hn[nodes[i]]; v >= 0 && v != t->top; v = t->v[v].parent)
      total += fade(st->fading, t->v[v].tier) * (fill_score(st, v, &task->resreq) - 1);
    sc[i] = total / total_weight;
  }
}

static void nta_nodes(sch_session *ssn, void *ctx, const sch_task *task, const int32_t *nodes,
                      size_t n, double *scores) {
  nta_state *st = ctx;
  const sch_snapshot *snap = ssn->snap;
  if (task->job < 0)
    return;
  const sch_job *j = &snap->jobs[task->job];
  const sch_subjob *sj = subjob_of(j, (int32_t)(task - snap->tasks));
  sch_topo topo;
  if (sj)
    sch_subjob_topo(snap, sj, &topo);
  if (!sj || topo.mode == SCH_TOPO_NONE)
    sch_job_topo(snap, j, &topo);
  double *sc = calloc(n ? n : 1, sizeof(double));
  if (sc == NULL)
    return;
  const int32_t *tasks = sj ? sj->tasks : j->tasks;
  int32_t ntasks = sj ? sj->ntasks : j->ntasks;
  if (topo.mode != SCH_TOPO_NONE) {
    int32_t allocated = sch_tasks_hypernode(snap, tasks, ntasks);
    if (allocated >= 0)
      score_topology_task(snap, st, allocated, nodes, n, sc, tasks, ntasks);
  } else if (st->normal_pod) {
    score_normal_task(snap, st, task, nodes, n, sc);
  }
  for (size_t i = 0; i < n; i++)
    scores[i] += sc[i] * (double)(SCH_MAX_NODE_SCORE * st->weight);
  free(sc);
}

static int nta_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  nta_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  *state = st;
  parse_args(st, ssn, &conf->args);
  int rc;
  if ((rc = init_cache(st, ssn->snap)) < 0 ||
      (rc = sch_add_hn_gradient_fn(ssn, nta_gradient, st)) < 0 ||
      (rc = sch_add_hn_order_fn(ssn, nta_order, st)) < 0 ||
      (rc = sch_add_batch_node_order_fn(ssn, nta_nodes, st)) < 0 ||
      (rc = sch_add_event_handler(ssn, on_allocate, on_deallocate, st)) < 0)
    return rc;
  return 0;
}

static void nta_close(sch_session *ssn, void *state) {
  nta_state *st = state;
  if (st == NULL)
    return;
  free(st->allocatable);
  free(st->used);
  free(st->bfs);
  free(st);
}

const sch_plugin sch_plugin_networktopology = {
    .name = "network-topology-aware",
    .open = nta_open,
    .close = nta_close,
};
