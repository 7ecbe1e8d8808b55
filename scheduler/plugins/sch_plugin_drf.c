/* drf (Volcano pkg/scheduler/plugins/drf): dominant resource fairness between jobs.
 *
 * A job's share is its dominant share: the largest allocated / total over the resources the
 * cluster has (total = allocatable of the schedulable nodes; allocated = resreq of the tasks
 * in allocated statuses). JobOrder puts the smaller share first; the allocate/deallocate
 * handlers keep shares current while the session places tasks. Preemptable keeps a victim
 * when the preemptor's share after taking its request stays below (or within 1e-6 of) the
 * victim job's share after losing the victim.
 *
 * With enableHierarchy, hierarchical DRF orders the queues and picks reclaim victims (below).
 * Namespace order is not implemented. Volcano refuses drf hierarchy together with proportion,
 * and it is off by default. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"

#define SHARE_DELTA 0.000001

typedef struct drf_attr {
  sch_resource allocated;
  double share;
} drf_attr;

#define HDIMS (2 + SCH_MAX_SCALARS)

typedef struct dres {
  double v[HDIMS];
} dres;

typedef struct hnode_s {
  const char *name; /* path segment (borrowed, name_len long); NULL: a job leaf */
  size_t name_len;
  int32_t parent, child, next; /* first child, next sibling; -1 none */
  int32_t job;                 /* a job leaf's job, -1 for a path node */
  double weight, share;
  bool saturated;
  dres allocated;
} hnode;

typedef struct htree {
  hnode *n;
  int32_t len, cap;
} htree;

typedef struct drf_state {
  sch_resource total;
  int nscalars;
  drf_attr *jobs; /* one per snapshot job */
  int32_t njobs;
  /* enableHierarchy (hierarchical DRF, below) */
  bool hier;
  htree tree;               /* node 0 is root */
  char **qpath, **qweights; /* per queue, owned */
  int32_t *leaf;            /* per job: its leaf in the tree, -1 none */
  dres total_allocated;
} drf_state;

/* helpers.Share: l / r, with r == 0 reading as 0 (nothing used) or 1 (something used). */
static double share_of(int64_t l, int64_t r) {
  if (r == 0)
    return l == 0 ? 0 : 1;
  return (double)l / (double)r;
}

/* Dominant share over the dimensions the cluster has (Volcano iterates totalResource's
 * resource names, so a dimension with no capacity never dominates). */
static double dominant_share(const drf_state *st, const sch_resource *alloc) {
  double res = 0, s;
  if (st->total.milli_cpu > 0 && (s = share_of(alloc->milli_cpu, st->total.milli_cpu)) > res)
    res = s;
  if (st->total.memory > 0 && (s = share_of(alloc->memory, st->total.memory)) > res)
    res = s;
  for (int i = 0; i < st->nscalars && i < SCH_MAX_SCALARS; i++) {
    if (st->total.scalar[i] > 0 && (s = share_of(alloc->scalar[i], st->total.scalar[i])) > res)
      res = s;
  }
  return res;
}

/* ---- hierarchical DRF (enableHierarchy) ----
 * Volcano's HDRF: the queues form a tree by their `volcano.sh/hierarchy` and
 * `volcano.sh/hierarchy-weights` annotations (both set), or else by spec.parent up to root
 * with each queue's weight (Volcano BuildEffectiveQueueHierarchy); every job is a leaf under
 * its queue's node. A node's allocation is its children's, each unsaturated child scaled to
 * the smallest dominant share among them; a job leaf is saturated when it holds all it asks
 * for in a dimension, or asks for a dimension nobody can get any more of; a node is
 * saturated when all its children are. Queues are ordered by walking both paths from the
 * root: an unsaturated node before a saturated one, then the lower share / weight. Reclaim
 * takes a victim when, with the reclaimer's task added and the victim removed, the
 * reclaimer's queue still orders first. Allocations are doubles, as Volcano's are. */

static dres dres_of(const sch_resource *r) {
  dres d = {{(double)r->milli_cpu, (double)r->memory}};
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    d.v[2 + i] = (double)r->scalar[i];
  return d;
}

static double total_dim(const drf_state *st, int d) {
  return d == 0   ? (double)st->total.milli_cpu
         : d == 1 ? (double)st->total.memory
                  : (double)st->total.scalar[d - 2];
}

/* The dimensions the cluster has (Volcano iterates totalResource's names). */
static bool has_dim(const drf_state *st, int d) {
  return total_dim(st, d) > 0 && (d < 2 || d - 2 < st->nscalars);
}

static double dshare(const drf_state *st, const dres *a) {
  double res = 0;
  for (int d = 0; d < HDIMS; d++) {
    if (!has_dim(st, d))
      continue;
    double t = total_dim(st, d), s = t == 0 ? (a->v[d] == 0 ? 0 : 1) : a->v[d] / t;
    if (s > res)
      res = s;
  }
  return res;
}

static int32_t hnew(htree *t, const char *name, size_t name_len, int32_t parent, double weight,
                    int32_t job) {
  if (t->len == t->cap) {
    int32_t cap = t->cap ? t->cap * 2 : 64;
    hnode *n = realloc(t->n, (size_t)cap * sizeof(*n));
    if (!n)
      return KC_ENOMEM;
    t->n = n;
    t->cap = cap;
  }
  int32_t i = t->len++;
  t->n[i] = (hnode){.name = name,
                    .name_len = name_len,
                    .parent = parent,
                    .child = -1,
                    .next = -1,
                    .job = job,
                    .weight = weight};
  if (parent >= 0) {
    t->n[i].next = t->n[parent].child;
    t->n[parent].child = i;
  }
  return i;
}

static int32_t hchild(const htree *t, int32_t node, const char *name, size_t len) {
  for (int32_t c = node >= 0 ? t->n[node].child : -1; c >= 0; c = t->n[c].next)
    if (t->n[c].name && t->n[c].name_len == len && strncmp(t->n[c].name, name, len) == 0)
      return c;
  return -1;
}

/* Volcano resourceSaturated, for a job leaf. */
static bool leaf_saturated(const drf_state *st, const hnode *n, const sch_job *j,
                           const bool *demanding) {
  dres req = dres_of(&j->total_request);
  for (int d = 0; d < HDIMS; d++) {
    if (n->allocated.v[d] < 0.1 || (d >= 2 && d - 2 >= st->nscalars))
      continue;
    if (req.v[d] != 0 && n->allocated.v[d] >= req.v[d])
      return true;
    if (!demanding[d] && req.v[d] != 0)
      return true;
  }
  return false;
}

/* Volcano updateHierarchicalShare, from node down. */
static void hupdate(const drf_state *st, htree *t, int32_t node, const sch_snapshot *snap,
                    const bool *demanding) {
  hnode *n = &t->n[node];
  if (n->job >= 0) {
    n->saturated = leaf_saturated(st, n, &snap->jobs[n->job], demanding);
    return;
  }
  double mdr = 1;
  for (int32_t c = n->child; c >= 0; c = t->n[c].next) {
    hupdate(st, t, c, snap, demanding);
    const hnode *ch = &t->n[c];
    if (ch->share != 0 && !ch->saturated) {
      double s = dshare(st, &ch->allocated);
      if (s < mdr)
        mdr = s;
    }
  }
  n = &t->n[node];
  n->allocated = (dres){{0}};
  bool saturated = true;
  for (int32_t c = n->child; c >= 0; c = t->n[c].next) {
    const hnode *ch = &t->n[c];
    saturated = saturated && ch->saturated;
    if (ch->share == 0)
      continue;
    double k = ch->saturated ? 1 : mdr / ch->share;
    for (int d = 0; d < HDIMS; d++)
      n->allocated.v[d] += ch->allocated.v[d] * k;
  }
  n->share = dshare(st, &n->allocated);
  n->saturated = saturated;
}

/* The whole tree again, with the demanding dimensions of total_allocated. */
static void hrefresh(const drf_state *st, htree *t, const sch_snapshot *snap,
                     const dres *total_allocated) {
  bool demanding[HDIMS];
  for (int d = 0; d < HDIMS; d++)
    demanding[d] = has_dim(st, d) && total_allocated->v[d] < total_dim(st, d);
  if (t->len > 0)
    hupdate(st, t, 0, snap, demanding);
}

static const char *annotation(const Kiln__Queue *q, const char *key) {
  const Kiln__ObjectMeta *m = q ? q->metadata : NULL;
  for (size_t i = 0; m && i < m->n_annotations; i++)
    if (m->annotations[i]->key && strcmp(m->annotations[i]->key, key) == 0)
      return m->annotations[i]->value;
  return NULL;
}

static char *joinf(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *s = malloc(n);
  if (s)
    snprintf(s, n, "%s/%s", a, b);
  return s;
}

/* Queue i's hierarchy and weights (Volcano BuildEffectiveQueueHierarchy): its annotations
 * when both are set, else its parent's (root when none) followed by its name and weight.
 * state: 0 not seen, 1 in progress, 2 done. */
static int queue_path(drf_state *st, const sch_snapshot *snap, int32_t i, char *state, char *err,
                      size_t len) {
  if (state[i] == 2)
    return 0;
  if (state[i] == 1) {
    snprintf(err, len, "queue hierarchy contains a cycle at \"%s\"", snap->queues[i].name);
    return KC_EINVAL;
  }
  const sch_queue *q = &snap->queues[i];
  const char *h = annotation(q->queue, "volcano.sh/hierarchy");
  const char *w = annotation(q->queue, "volcano.sh/hierarchy-weights");
  state[i] = 1;
  if (h && *h && w && *w) {
    st->qpath[i] = strdup(h);
    st->qweights[i] = strdup(w);
  } else if (strcmp(q->name, "root") == 0) {
    st->qpath[i] = strdup("root");
    st->qweights[i] = strdup("1");
  } else {
    const char *p = q->queue && q->queue->spec && q->queue->spec->parent && *q->queue->spec->parent
                        ? q->queue->spec->parent
                        : "root";
    int32_t pi = sch_snapshot_queue(snap, p);
    const char *ppath = "root", *pweights = "1";
    if (pi >= 0) {
      int rc = queue_path(st, snap, pi, state, err, len);
      if (rc < 0)
        return rc;
      ppath = st->qpath[pi];
      pweights = st->qweights[pi];
    } else if (strcmp(p, "root") != 0) {
      snprintf(err, len, "build hierarchy for queue \"%s\": queue \"%s\" is not present", q->name,
               p);
      return KC_EINVAL;
    }
    char wbuf[16];
    snprintf(wbuf, sizeof(wbuf), "%d", q->weight > 0 ? q->weight : 1);
    st->qpath[i] = joinf(ppath, q->name);
    st->qweights[i] = joinf(pweights, wbuf);
  }
  state[i] = 2;
  return st->qpath[i] && st->qweights[i] ? 0 : KC_ENOMEM;
}

/* The n-th '/'-separated segment of s (0-based) and its length; NULL when there is none. */
static const char *segment(const char *s, int n, size_t *len) {
  for (int i = 0; i < n && s; i++) {
    s = strchr(s, '/');
    s = s ? s + 1 : NULL;
  }
  if (!s)
    return NULL;
  const char *e = strchr(s, '/');
  *len = e ? (size_t)(e - s) : strlen(s);
  return s;
}

/* Volcano buildHierarchy: the path nodes of the job's queue (made when missing, weights
 * below 1 read as 1), and the job's leaf under the last. */
static int add_job_leaf(drf_state *st, int32_t ji, const char *path, const char *weights) {
  htree *t = &st->tree;
  int32_t node = 0;
  size_t len, wlen;
  const char *seg;
  for (int i = 1; (seg = segment(path, i, &len)) != NULL; i++) {
    int32_t c = hchild(t, node, seg, len);
    if (c < 0) {
      char wb[32] = "1";
      const char *ws = segment(weights, i, &wlen);
      if (ws)
        snprintf(wb, sizeof(wb), "%.*s", (int)wlen, ws);
      double w = strtod(wb, NULL);
      if ((c = hnew(t, seg, len, node, w < 1 ? 1 : w, -1)) < 0)
        return c;
    }
    node = c;
  }
  int32_t leaf = hnew(t, NULL, 0, node, 1, ji);
  if (leaf < 0)
    return leaf;
  st->leaf[ji] = leaf;
  t->n[leaf].allocated = dres_of(&st->jobs[ji].allocated);
  t->n[leaf].share = st->jobs[ji].share;
  return 0;
}

/* Volcano compareQueues: down both paths from the root while the nodes tie. */
static double hcompare(const htree *t, const char *lp, const char *rp) {
  int ln = 0, rn = 0;
  size_t len;
  while (segment(lp, ln, &len))
    ln++;
  while (segment(rp, rn, &len))
    rn++;
  int depth = ln < rn ? ln : rn;
  int32_t l = 0, r = 0;
  for (int i = 0; i < depth; i++) {
    const hnode *a = &t->n[l], *b = &t->n[r];
    if (!a->saturated && b->saturated)
      return -1;
    if (a->saturated && !b->saturated)
      return 1;
    double x = a->share / a->weight, y = b->share / b->weight;
    if (x != y)
      return x - y;
    if (i < depth - 1) {
      size_t al, bl;
      const char *as = segment(lp, i + 1, &al), *bs = segment(rp, i + 1, &bl);
      l = hchild(t, l, as, al);
      r = hchild(t, r, bs, bl);
      if (l < 0 || r < 0)
        return 0;
    }
  }
  return 0;
}

static int hqueue_order(sch_session *ssn, void *ctx, const sch_queue *l, const sch_queue *r) {
  drf_state *st = ctx;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  double d = hcompare(&st->tree, st->qpath[l - snap->queues], st->qpath[r - snap->queues]);
  return d < 0 ? -1 : d > 0;
}

/* Job ji's leaf holds alloc (and its share) in tree t. */
static void set_leaf(const drf_state *st, htree *t, int32_t ji, const sch_resource *alloc) {
  hnode *n = &t->n[st->leaf[ji]];
  n->allocated = dres_of(alloc);
  n->share = dominant_share(st, alloc);
}

static void dres_add(dres *a, const sch_resource *r, double sign) {
  dres d = dres_of(r);
  for (int k = 0; k < HDIMS; k++)
    a->v[k] += sign * d.v[k];
}

/* Volcano's HDRF reclaimFn, on a copy of the tree. */
static bool hreclaimable(sch_session *ssn, void *ctx, const sch_task *reclaimer,
                         const int32_t *cands, size_t n, int32_t *victims, size_t *nvictims) {
  drf_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  *nvictims = 0;
  int32_t lj = reclaimer->job;
  if (lj < 0 || lj >= st->njobs || st->leaf[lj] < 0)
    return true;
  htree t = {malloc((size_t)st->tree.len * sizeof(hnode)), st->tree.len, st->tree.len};
  if (!t.n)
    return false;
  memcpy(t.n, st->tree.n, (size_t)t.len * sizeof(hnode));
  dres total = st->total_allocated;
  sch_resource la = st->jobs[lj].allocated;
  sch_resource_add(&la, &reclaimer->resreq);
  dres_add(&total, &reclaimer->resreq, 1);
  set_leaf(st, &t, lj, &la);
  hrefresh(st, &t, snap, &total);
  const char *lpath = st->qpath[snap->jobs[lj].queue];
  for (size_t i = 0; i < n; i++) {
    const sch_task *v = &snap->tasks[cands[i]];
    int32_t rj = v->job;
    if (rj < 0 || rj >= st->njobs || st->leaf[rj] < 0)
      continue;
    sch_resource ra = st->jobs[rj].allocated;
    sch_resource_sub(&ra, &v->resreq);
    dres_add(&total, &v->resreq, -1);
    set_leaf(st, &t, rj, &ra);
    hrefresh(st, &t, snap, &total);
    double ret = hcompare(&t, lpath, st->qpath[snap->jobs[rj].queue]);
    dres_add(&total, &v->resreq, 1);
    set_leaf(st, &t, rj, rj == lj ? &la : &st->jobs[rj].allocated);
    hrefresh(st, &t, snap, &total);
    if (ret < 0)
      victims[(*nvictims)++] = cands[i];
  }
  free(t.n);
  return true;
}

/* The queue paths and the tree of this session; a hierarchy that cannot be built leaves
 * drf out of the session, as Volcano does (returns 1). */
static int hbuild(drf_state *st, const sch_snapshot *snap) {
  size_t nq = (size_t)snap->nqueues;
  char *state = calloc(nq ? nq : 1, 1);
  st->qpath = calloc(nq ? nq : 1, sizeof(char *));
  st->qweights = calloc(nq ? nq : 1, sizeof(char *));
  st->leaf = malloc((st->njobs ? (size_t)st->njobs : 1) * sizeof(int32_t));
  int rc = state && st->qpath && st->qweights && st->leaf ? 0 : KC_ENOMEM;
  char err[256] = "";
  for (int32_t i = 0; rc == 0 && i < snap->nqueues; i++)
    rc = queue_path(st, snap, i, state, err, sizeof(err));
  free(state);
  if (rc == KC_EINVAL) {
    KC_ERROR("drf: failed to build effective queue hierarchy: %s", err);
    return 1;
  }
  if (rc == 0 && (rc = hnew(&st->tree, "root", 4, -1, 1, -1)) >= 0)
    rc = 0;
  for (int32_t j = 0; rc == 0 && j < st->njobs; j++) {
    st->leaf[j] = -1;
    int32_t q = snap->jobs[j].queue;
    if (q < 0)
      continue;
    dres_add(&st->total_allocated, &st->jobs[j].allocated, 1);
    rc = add_job_leaf(st, j, st->qpath[q], st->qweights[q]);
  }
  if (rc == 0)
    hrefresh(st, &st->tree, snap, &st->total_allocated);
  return rc;
}

static int job_order(sch_session *ssn, void *ctx, const sch_job *l, const sch_job *r) {
  drf_state *st = ctx;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  double ls = st->jobs[l - snap->jobs].share, rs = st->jobs[r - snap->jobs].share;
  if (ls == rs)
    return 0;
  return ls < rs ? -1 : 1;
}

static void on_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  drf_state *st = ctx;
  if (t->job < 0 || t->job >= st->njobs)
    return;
  drf_attr *a = &st->jobs[t->job];
  sch_resource_add(&a->allocated, &t->resreq);
  a->share = dominant_share(st, &a->allocated);
  if (st->hier && st->leaf[t->job] >= 0) {
    dres_add(&st->total_allocated, &t->resreq, 1);
    set_leaf(st, &st->tree, t->job, &a->allocated);
    hrefresh(st, &st->tree, sch_session_snapshot(ssn), &st->total_allocated);
  }
}

static void on_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  drf_state *st = ctx;
  if (t->job < 0 || t->job >= st->njobs)
    return;
  drf_attr *a = &st->jobs[t->job];
  sch_resource_sub(&a->allocated, &t->resreq);
  a->share = dominant_share(st, &a->allocated);
  if (st->hier && st->leaf[t->job] >= 0) {
    dres_add(&st->total_allocated, &t->resreq, -1);
    set_leaf(st, &st->tree, t->job, &a->allocated);
    hrefresh(st, &st->tree, sch_session_snapshot(ssn), &st->total_allocated);
  }
}

static bool preemptable(sch_session *ssn, void *ctx, const sch_task *preemptor,
                        const int32_t *cands, size_t n, int32_t *victims, size_t *nvictims) {
  drf_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  *nvictims = 0;
  if (preemptor->job < 0 || preemptor->job >= st->njobs)
    return true;
  sch_resource lalloc = st->jobs[preemptor->job].allocated;
  sch_resource_add(&lalloc, &preemptor->resreq);
  double ls = dominant_share(st, &lalloc);

  /* What each victim job would keep after losing the candidates before it, as Volcano
   * does with its per-job allocation map. Candidates are few (one node's tasks), so a
   * scan for earlier candidates of the same job is cheaper than a map. */
  sch_resource *after = calloc(n ? n : 1, sizeof(*after));
  if (after == NULL)
    return false;
  for (size_t i = 0; i < n; i++) {
    const sch_task *v = &snap->tasks[cands[i]];
    if (v->job < 0 || v->job >= st->njobs)
      continue;
    size_t prev = i;
    for (size_t k = i; k-- > 0;) {
      if (snap->tasks[cands[k]].job == v->job) {
        prev = k;
        break;
      }
    }
    after[i] = prev == i ? st->jobs[v->job].allocated : after[prev];
    sch_resource_sub(&after[i], &v->resreq);
    double rs = dominant_share(st, &after[i]);
    if (ls < rs || fabs(ls - rs) <= SHARE_DELTA)
      victims[(*nvictims)++] = cands[i];
  }
  free(after);
  return true;
}

static int drf_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  drf_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  *state = st;
  st->total = snap->total_allocatable;
  st->nscalars = snap->nscalars;
  st->njobs = snap->njobs;
  st->jobs = calloc(snap->njobs > 0 ? (size_t)snap->njobs : 1, sizeof(*st->jobs));
  if (st->jobs == NULL)
    return KC_ENOMEM;
  for (int32_t j = 0; j < snap->njobs; j++) {
    st->jobs[j].allocated = snap->jobs[j].allocated;
    st->jobs[j].share = dominant_share(st, &st->jobs[j].allocated);
  }
  int rc = 0;
  if (conf->has_enable[SCH_EXT_HIERARCHY] && (conf->enabled & (1u << SCH_EXT_HIERARCHY))) {
    st->hier = true;
    if ((rc = hbuild(st, snap)) != 0) {
      st->hier = false;
      return rc < 0 ? rc : 0; /* no hierarchy: no drf this session (Volcano) */
    }
    if ((rc = sch_add_queue_order_fn(ssn, hqueue_order, st)) < 0 ||
        (rc = sch_add_reclaimable_fn(ssn, hreclaimable, st)) < 0)
      return rc;
  }
  rc = sch_add_preemptable_fn(ssn, preemptable, st);
  if (rc == 0)
    rc = sch_add_job_order_fn(ssn, job_order, st);
  if (rc == 0)
    rc = sch_add_event_handler(ssn, on_allocate, on_deallocate, st);
  return rc;
}

static void drf_close(sch_session *ssn, void *state) {
  drf_state *st = state;
  if (st == NULL)
    return;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  /* Volcano sets job_share for every job at open and on every allocation: the last value. */
  for (int32_t j = 0; st->jobs && j < st->njobs && j < snap->njobs; j++) {
    snap->jobs[j].has_share = true;
    snap->jobs[j].share = st->jobs[j].share;
  }
  for (int32_t i = 0; st->qpath && st->qweights && i < sch_session_snapshot(ssn)->nqueues; i++) {
    free(st->qpath[i]);
    free(st->qweights[i]);
  }
  free(st->qpath);
  free(st->qweights);
  free(st->leaf);
  free(st->tree.n);
  free(st->jobs);
  free(st);
}

const sch_plugin sch_plugin_drf = {
    .name = "drf",
    .open = drf_open,
    .close = drf_close,
};
