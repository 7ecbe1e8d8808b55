/* nodeorder (Volcano pkg/scheduler/plugins/nodeorder): kube-scheduler's scores, each 0..100,
 * multiplied by its weight and summed.
 *
 * Per node (NodeOrderFn):
 *   leastrequested.weight (1)   NodeResourcesFit LeastAllocated, cpu and memory weighted 50/50
 *   mostrequested.weight (0)    NodeResourcesFit MostAllocated, cpu and memory 1/1
 *   balancedresource.weight (1) NodeResourcesBalancedAllocation over cpu, memory and
 *                               nvidia.com/gpu (the GPU only when the pod asks for it)
 *   nodeaffinity.weight (2)     sum of the weights of the matching preferred terms; Volcano
 *                               does not normalise this one, so neither do we
 * Over the candidate nodes (BatchNodeOrderFn):
 *   tainttoleration.weight (3)  intolerable PreferNoSchedule taints, normalised 0..100 and
 *                               reversed (fewest taints scores 100)
 *   podaffinity.weight (2)      InterPodAffinity: preferred (anti-)affinity terms of the pod
 *                               and of the placed pods, placed pods' required affinity at
 *                               hardPodAffinityWeight 1, min-max normalised 0..100
 *   podtopologyspread.weight (2) PodTopologySpread over the ScheduleAnyway constraints
 *                               (fewest matching pods scores 100); no system defaults
 * (both from sch_interpod.c, in step with the session through this plugin's events, and
 * skipped when no pod of the snapshot carries a term or constraint)
 *
 * The resource scores count what the node would hold with the pod. Least/most allocated use
 * kube-scheduler's non-zero requests (a pod without a cpu or memory request counts as 100m
 * and 200Mi), balanced allocation the real ones, as NodeResourcesFit and BalancedAllocation
 * do. imagelocality.weight is accepted and ignored: the pod view keeps no images. */
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"
#include "sch_interpod.h"
#include "sch_match.h"

/* What the resource scores read from a node that can change during a session. */
typedef struct score_cache {
  int64_t nz_cpu, nz_mem, cpu, mem, gpu;
  bool valid;
  double score;
} score_cache;

typedef struct shape_cache {
  bool affinity_known, taints_known;
  int64_t affinity, taints;
} shape_cache;

typedef struct nodeorder_state {
  int64_t least, most, balanced, affinity, taint, pod_affinity, spread;
  sch_ipa *ipa; /* NULL: no pod has inter-pod terms or spread constraints */
  int64_t *ipa_aff, *ipa_spread;
  size_t cap_ipa;
  int gpu; /* scalar slot of nvidia.com/gpu, -1 if unused */
  /* The resource scores of the last task shape, per node: valid while the node's sums are
   * the ones recorded and the task asks for the same init_resreq (a gang's tasks usually
   * do, so a placement makes only the node it changed score again). */
  sch_resource key;
  bool have_key;
  const sch_task *key_task; /* the last task compared with key (init_resreq is fixed) */
  score_cache *cache;       /* per node */
  int32_t nnodes;
  /* The node-static scores (preferred node affinity, intolerable PreferNoSchedule taints)
   * per node for the current pod shape (sch_pod_key), as in predicates. */
  const sch_task *shape_task; /* the last task whose shape was looked at */
  sch_pod_key shape_key, shape_scratch;
  bool shape_on;
  shape_cache *shapes; /* per node; NULL: no cache */
  int64_t *counts;     /* batch scratch, kept between tasks */
  size_t cap_counts;
} nodeorder_state;

static int64_t nonzero(int64_t v, int64_t def) {
  return v != 0 ? v : def;
}

/* least, most and balanced for t on n; the node's sums are kept by the snapshot. */
static double resource_score(const nodeorder_state *st, const sch_task *t, const sch_node *n) {
  double score = 0;
  const sch_resource *p = &t->init_resreq;
  int64_t nz[2] = {sch_add_sat(n->nonzero_milli_cpu, nonzero(p->milli_cpu, SCH_NONZERO_MILLI_CPU)),
                   sch_add_sat(n->nonzero_memory, nonzero(p->memory, SCH_NONZERO_MEMORY))};
  int64_t alloc[3] = {n->allocatable.milli_cpu, n->allocatable.memory,
                      st->gpu >= 0 ? n->allocatable.scalar[st->gpu] : 0};
  if (st->least != 0) {
    static const int64_t w[2] = {50, 50};
    score += (double)(sch_allocated_score(nz, alloc, w, 2, false) * st->least);
  }
  if (st->most != 0) {
    static const int64_t w[2] = {1, 1};
    score += (double)(sch_allocated_score(nz, alloc, w, 2, true) * st->most);
  }
  if (st->balanced != 0) {
    int64_t req[3] = {sch_add_sat(n->requested.milli_cpu, p->milli_cpu),
                      sch_add_sat(n->requested.memory, p->memory), 0};
    int64_t bal_alloc[3] = {alloc[0], alloc[1], 0};
    /* An extended resource the pod does not ask for is left out of the balance. */
    if (st->gpu >= 0 && p->scalar[st->gpu] != 0) {
      req[2] = sch_add_sat(n->requested.scalar[st->gpu], p->scalar[st->gpu]);
      bal_alloc[2] = alloc[2];
    }
    score += (double)(sch_balanced_score(req, bal_alloc, 3) * st->balanced);
  }
  return score;
}

/* The cache entry of node ni for t's shape, or NULL when there is none. */
static shape_cache *shape_of(nodeorder_state *st, const sch_task *t, int32_t ni) {
  if (st->shape_task != t) {
    st->shape_task = t;
    st->shape_on = false;
    if (st->shapes != NULL && t->pod != NULL && sch_pod_key_set(&st->shape_scratch, t->pod) == 0) {
      if (!sch_pod_key_equal(&st->shape_scratch, &st->shape_key)) {
        sch_pod_key tmp = st->shape_key;
        st->shape_key = st->shape_scratch;
        st->shape_scratch = tmp;
        memset(st->shapes, 0, (size_t)st->nnodes * sizeof(*st->shapes));
      }
      st->shape_on = true;
    }
  }
  return st->shape_on && ni >= 0 && ni < st->nnodes ? &st->shapes[ni] : NULL;
}

static double node_order(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n) {
  nodeorder_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  double score = 0;

  if (st->least != 0 || st->most != 0 || st->balanced != 0) {
    int32_t ni = (int32_t)(n - snap->nodes);
    if (st->cache == NULL || ni < 0 || ni >= st->nnodes) {
      score = resource_score(st, t, n);
    } else {
      if (st->key_task != t) {
        st->key_task = t;
        if (!st->have_key || !sch_resource_equal(&st->key, &t->init_resreq)) {
          st->key = t->init_resreq;
          st->have_key = true;
          memset(st->cache, 0, (size_t)st->nnodes * sizeof(*st->cache));
        }
      }
      score_cache *c = &st->cache[ni];
      int64_t gpu = st->gpu >= 0 ? n->requested.scalar[st->gpu] : 0;
      if (!c->valid || c->nz_cpu != n->nonzero_milli_cpu || c->nz_mem != n->nonzero_memory ||
          c->cpu != n->requested.milli_cpu || c->mem != n->requested.memory || c->gpu != gpu) {
        *c = (score_cache){n->nonzero_milli_cpu,
                           n->nonzero_memory,
                           n->requested.milli_cpu,
                           n->requested.memory,
                           gpu,
                           true,
                           resource_score(st, t, n)};
      }
      score = c->score;
    }
  }
  if (st->affinity != 0 && t->pod != NULL && n->node != NULL) {
    shape_cache *c = shape_of(st, t, (int32_t)(n - snap->nodes));
    int64_t a;
    if (c && c->affinity_known) {
      a = c->affinity;
    } else {
      a = sch_preferred_affinity_score(t->pod, n->node);
      if (c) {
        c->affinity = a;
        c->affinity_known = true;
      }
    }
    score += (double)(a * st->affinity);
  }
  return score;
}

/* Out of line: the pods without terms never come here, and keep the loop below as it was. */
__attribute__((noinline)) static void interpod_order(nodeorder_state *st, const sch_task *t,
                                                     const int32_t *nodes, size_t n,
                                                     double *scores) {
  if (n > st->cap_ipa) {
    int64_t *a = realloc(st->ipa_aff, n * sizeof(*a));
    if (a)
      st->ipa_aff = a;
    int64_t *b = realloc(st->ipa_spread, n * sizeof(*b));
    if (b)
      st->ipa_spread = b;
    if (!a || !b) {
      KC_WARN("nodeorder: out of memory scoring pod affinity for %zu nodes; skipped", n);
      return;
    }
    st->cap_ipa = n;
  }
  if (sch_ipa_scores(st->ipa, t, nodes, n, st->pod_affinity ? st->ipa_aff : NULL,
                     st->spread ? st->ipa_spread : NULL) < 0) {
    KC_WARN("nodeorder: out of memory scoring pod affinity; skipped");
    return;
  }
  for (size_t i = 0; i < n; i++)
    scores[i] += (double)((st->pod_affinity ? st->ipa_aff[i] * st->pod_affinity : 0) +
                          (st->spread ? st->ipa_spread[i] * st->spread : 0));
}

static void taint_order(sch_session *ssn, nodeorder_state *st, const sch_task *t,
                        const int32_t *nodes, size_t n, double *scores) {
  if (st->taint == 0 || t->pod == NULL || n == 0)
    return;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  if (n > st->cap_counts) {
    int64_t *c = realloc(st->counts, n * sizeof(*c));
    if (c == NULL) {
      KC_WARN("nodeorder: out of memory scoring taints for %zu nodes; taint scores skipped", n);
      return;
    }
    st->counts = c;
    st->cap_counts = n;
  }
  int64_t *counts = st->counts;
  for (size_t i = 0; i < n; i++) {
    const sch_node *node = &snap->nodes[nodes[i]];
    shape_cache *c = shape_of(st, t, nodes[i]);
    if (c && c->taints_known) {
      counts[i] = c->taints;
      continue;
    }
    counts[i] = node->node ? sch_intolerable_prefer_no_schedule(t->pod, node->node) : 0;
    if (c) {
      c->taints = counts[i];
      c->taints_known = true;
    }
  }
  sch_normalize_scores(counts, n, SCH_MAX_NODE_SCORE, true);
  for (size_t i = 0; i < n; i++)
    scores[i] += (double)(counts[i] * st->taint);
}

static void batch_node_order(sch_session *ssn, void *ctx, const sch_task *t, const int32_t *nodes,
                             size_t n, double *scores) {
  nodeorder_state *st = ctx;
  if (st->ipa != NULL && t->pod != NULL && n > 0)
    interpod_order(st, t, nodes, n, scores);
  taint_order(ssn, st, t, nodes, n, scores);
}

static int nodeorder_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  nodeorder_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  *state = st;
  st->least = sch_args_int(&conf->args, "leastrequested.weight", 1);
  st->most = sch_args_int(&conf->args, "mostrequested.weight", 0);
  st->balanced = sch_args_int(&conf->args, "balancedresource.weight", 1);
  st->affinity = sch_args_int(&conf->args, "nodeaffinity.weight", 2);
  st->taint = sch_args_int(&conf->args, "tainttoleration.weight", 3);
  sch_snapshot *snap = sch_session_snapshot(ssn);
  st->gpu = sch_snapshot_scalar(snap, "nvidia.com/gpu");
  if (snap->nnodes > 0) {
    /* Without the cache every node is scored afresh: slower, same result. */
    st->cache = calloc((size_t)snap->nnodes, sizeof(*st->cache));
    st->shapes = calloc((size_t)snap->nnodes, sizeof(*st->shapes));
    if (st->cache == NULL || st->shapes == NULL) {
      free(st->cache);
      free(st->shapes);
      st->cache = NULL;
      st->shapes = NULL;
    } else {
      st->nnodes = snap->nnodes;
    }
  }
  st->pod_affinity = sch_args_int(&conf->args, "podaffinity.weight", 2);
  st->spread = sch_args_int(&conf->args, "podtopologyspread.weight", 2);
  int rc = 0;
  if (st->pod_affinity != 0 || st->spread != 0)
    rc = sch_ipa_acquire(ssn, &st->ipa);
  if (rc == 0)
    rc = sch_add_node_order_fn(ssn, node_order, st);
  if (rc == 0)
    rc = sch_add_batch_node_order_fn(ssn, batch_node_order, st);
  return rc;
}

static void nodeorder_close(sch_session *ssn, void *state) {
  nodeorder_state *st = state;
  if (st) {
    free(st->cache);
    free(st->shapes);
    free(st->counts);
    free(st->ipa_aff);
    free(st->ipa_spread);
    sch_ipa_release(ssn, st->ipa);
    sch_pod_key_close(&st->shape_key);
    sch_pod_key_close(&st->shape_scratch);
  }
  free(state);
}

const sch_plugin sch_plugin_nodeorder = {
    .name = "nodeorder",
    .open = nodeorder_open,
    .close = nodeorder_close,
};
