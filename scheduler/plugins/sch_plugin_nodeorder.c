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
 *   imagelocality.weight (1)    ImageLocality: for each container image (a name without a
 *                               tag gets ":latest") that the node's status.images holds,
 *                               its size times the share of the session's nodes holding it;
 *                               the sum, clamped to [23 MiB, 1000 MiB per container], maps
 *                               linearly onto 0..100
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
 * do. */
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

/* An image name some node holds and on how many of the session's nodes. */
typedef struct image_count {
  const char *name; /* borrowed from a node */
  int32_t nodes;
  int32_t last; /* the last node counted: a node naming an image twice counts once */
} image_count;

typedef struct nodeorder_state {
  int64_t least, most, balanced, affinity, taint, pod_affinity, spread, image;
  image_count *images; /* sorted by name; NULL: no node holds an image */
  size_t nimages;
  int32_t total_nodes;
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

static int by_name(const void *a, const void *b) {
  return strcmp(((const image_count *)a)->name, ((const image_count *)b)->name);
}

static int by_name_node(const void *a, const void *b) {
  const image_count *l = a, *r = b;
  int c = strcmp(l->name, r->name);
  return c ? c : (l->last > r->last) - (l->last < r->last);
}

/* Counts, for each image name, the nodes that hold it (kube-scheduler's ImageStateSummary
 * NumNodes). 0 or KC_ENOMEM. */
static int count_images(nodeorder_state *st, const sch_snapshot *snap) {
  size_t n = 0;
  for (int32_t i = 0; i < snap->nnodes; i++)
    for (size_t k = 0; snap->nodes[i].node && k < snap->nodes[i].node->n_images; k++)
      n += snap->nodes[i].node->images[k]->n_names;
  st->total_nodes = snap->nnodes;
  if (n == 0)
    return 0;
  image_count *all = malloc(n * sizeof(*all));
  if (!all)
    return KC_ENOMEM;
  size_t m = 0;
  for (int32_t i = 0; i < snap->nnodes; i++)
    for (size_t k = 0; snap->nodes[i].node && k < snap->nodes[i].node->n_images; k++) {
      const Kiln__NodeImage *im = snap->nodes[i].node->images[k];
      for (size_t j = 0; j < im->n_names; j++)
        all[m++] = (image_count){im->names[j], 1, i};
    }
  qsort(all, m, sizeof(*all), by_name_node);
  size_t u = 0;
  for (size_t i = 0; i < m; i++) {
    if (u > 0 && strcmp(all[u - 1].name, all[i].name) == 0) {
      if (all[u - 1].last != all[i].last)
        all[u - 1].nodes++;
      all[u - 1].last = all[i].last;
      continue;
    }
    all[u++] = all[i];
  }
  st->images = all;
  st->nimages = u;
  return 0;
}

/* Whether name is img as kube-scheduler normalises it: ":latest" added when the last ':'
 * does not come after the last '/'. */
static bool image_is(const char *name, const char *img) {
  const char *colon = strrchr(img, ':'), *slash = strrchr(img, '/');
  size_t n = strlen(img);
  if (colon && (!slash || colon > slash))
    return strcmp(name, img) == 0;
  return strncmp(name, img, n) == 0 && strcmp(name + n, ":latest") == 0;
}

#define MIB                     (1024 * 1024)
#define IMAGE_MIN               (23 * (int64_t)MIB)
#define IMAGE_MAX_PER_CONTAINER (1000 * (int64_t)MIB)

/* kube-scheduler's ImageLocality score of node n for the pod of t, 0..100. */
static int64_t image_score(const nodeorder_state *st, const sch_task *t, const sch_node *n) {
  const Kiln__Pod *p = t->pod;
  if (!p || !n->node || p->packed_images.len == 0)
    return 0;
  int64_t sum = 0, containers = 0;
  const char *img = (const char *)p->packed_images.data, *end = img + p->packed_images.len;
  for (; img < end; img += strlen(img) + 1) {
    containers++;
    for (size_t k = 0; k < n->node->n_images; k++) {
      const Kiln__NodeImage *im = n->node->images[k];
      size_t j = 0;
      while (j < im->n_names && !image_is(im->names[j], img))
        j++;
      if (j == im->n_names)
        continue;
      image_count key = {im->names[j], 0, 0};
      const image_count *c = bsearch(&key, st->images, st->nimages, sizeof(key), by_name);
      double spread = c ? (double)c->nodes / (double)st->total_nodes : 0;
      sum += (int64_t)((double)im->size_bytes * spread);
      break;
    }
  }
  int64_t max = IMAGE_MAX_PER_CONTAINER * containers;
  sum = sum < IMAGE_MIN ? IMAGE_MIN : sum > max ? max : sum;
  return SCH_MAX_NODE_SCORE * (sum - IMAGE_MIN) / (max - IMAGE_MIN);
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
  if (st->image != 0 && st->images != NULL)
    score += (double)(image_score(st, t, n) * st->image);
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
  st->image = sch_args_int(&conf->args, "imagelocality.weight", 1);
  sch_snapshot *snap = sch_session_snapshot(ssn);
  if (st->image != 0 && count_images(st, snap) < 0)
    return KC_ENOMEM;
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
    free(st->images);
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
