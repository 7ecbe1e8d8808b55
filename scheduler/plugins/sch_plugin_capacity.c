/* capacity (Volcano pkg/scheduler/plugins/capacity): each queue's deserved, guarantee and
 * capability per resource (cpu, memory and scalar resources such as GPUs), flat or, with
 * enableHierarchy, along a tree of queues (spec.parent; no parent means `root`).
 *
 * Flat:
 *   realCapability = (cluster total - every queue's guarantee) + own guarantee, capped by
 *                    the capability (a capability without cpu or memory leaves that
 *                    dimension unlimited);
 *   deserved       = spec.deserved capped by realCapability, raised to the guarantee.
 * Hierarchical (Volcano buildHierarchicalQueueAttrs / checkHierarchicalQueue):
 *   root           = unlimited unless it has a capability; its deserved and guarantee are
 *                    the sums of its children's;
 *   child          = realCapability (parent's realCapability - the guarantees of all the
 *                    parent's children) + own guarantee, capped by its capability, which
 *                    takes the parent's in every dimension it leaves unset; deserved raised
 *                    to the guarantee (not capped); a queue's allocated, inqueue and elastic
 *                    include its descendants'.
 *   Jobs go only to leaf queues; a task or gang must fit the realCapability of its queue
 *   and of every ancestor; queue order compares two leaves by the shares of their
 *   ancestors just below the deepest ancestor they share (siblings by their own share), a
 *   leaf before a parent; victims are taken from the queues nearest the reclaimer first
 *   (VictimQueueOrderFn); ancestorReclaimLevel (default 0) lets a queue at its deserved
 *   reclaim while an ancestor up to that level is below its own, and makes a victim's
 *   ancestors up to that level (those not shared with the reclaimer) be above theirs too.
 *   As in Volcano, an allocation in a session updates the shares of leaf queues only.
 *   Where Volcano stops scheduling altogether (a parent that does not exist, a cycle, a
 *   job in a queue with children), Kiln holds only the gangs concerned and says why.
 *
 *   share          = max over deserved's dimensions of allocated / deserved (1 for a queue
 *                    without deserved: best effort, after every queue below its share).
 * Queue order: higher priority, then lower share (equal shares: a queue with deserved
 * first). Allocatable: allocated + the task fits realCapability in the task's dimensions.
 * JobEnqueueable: minResources + allocated + inqueue - elastic fits realCapability.
 * Preemptive (may reclaim): within realCapability, and some requested dimension stays within
 * deserved. Reclaimable: never below the victim queue's guarantee; a victim whose request
 * shares no dimension with its queue's deserved goes first, else its queue must hold more
 * than deserved in a dimension the victim uses. Overused is not registered (Volcano's
 * capacity leaves it to the allocate loop's Allocatable). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"

#define INF  INT64_MAX
#define ROOT "root"

/* Why a queue's place in the hierarchy is unusable. */
typedef enum { CAP_TREE_OK = 0, CAP_TREE_NO_PARENT, CAP_TREE_CYCLE } cap_tree;

typedef struct cap_attr {
  bool active; /* some job of the session is in it */
  double share;
  sch_resource deserved, allocated, request, elastic, inqueue, guarantee, capability,
      real_capability;
  /* Hierarchy only. */
  int32_t parent;    /* index; -1 for the root */
  int32_t nchildren; /* a leaf has none */
  int32_t depth;     /* number of ancestors, the root included */
  int32_t *anc;      /* the ancestors from the root down (into cap_state.pool) */
  cap_tree tree;
  const char *tree_queue;  /* the queue whose parent is missing or that is in a cycle */
  const char *tree_parent; /* the missing parent's name */
} cap_attr;

typedef struct cap_state {
  int32_t n; /* the snapshot's queues; q[n] stands for a missing root queue */
  cap_attr *q;
  bool hier;
  int32_t root; /* index of the root queue (n when it does not exist yet) */
  int ancestor_reclaim_level;
  int32_t *pool;    /* the ancestor lists */
  int32_t *scratch; /* one queue chain */
} cap_state;

static int64_t *dimp(sch_resource *r, int d) {
  return d == 0 ? &r->milli_cpu : d == 1 ? &r->memory : &r->scalar[d - 2];
}
static int64_t dimv(const sch_resource *r, int d) {
  return dimp((sch_resource *)r, d)[0];
}
#define NDIMS (2 + SCH_MAX_SCALARS)

/* r = max(r - sub, 0) per dimension (Volcano ExceededPart); an unlimited dimension stays so. */
static void exceeded(sch_resource *r, const sch_resource *sub) {
  for (int d = 0; d < NDIMS; d++) {
    if (dimv(r, d) == INF)
      continue;
    int64_t v = dimv(r, d) - dimv(sub, d);
    *dimp(r, d) = v > 0 ? v : 0;
  }
}

/* r += a, an unlimited dimension staying unlimited. */
static void add_keep_inf(sch_resource *r, const sch_resource *a) {
  for (int d = 0; d < NDIMS; d++)
    if (dimv(r, d) != INF)
      *dimp(r, d) += dimv(a, d);
}

/* r = min(r, cap) per dimension; an INF cap leaves r (Volcano MinDimensionResource). */
static void cap_min(sch_resource *r, const sch_resource *cap) {
  for (int d = 0; d < NDIMS; d++)
    if (dimv(cap, d) != INF && dimv(cap, d) < dimv(r, d))
      *dimp(r, d) = dimv(cap, d);
}

/* used fits limit in every dimension req asks for (Volcano
 * LessEqualWithDimensionAndResourcesName); *short_dims gets those that do not. */
static bool fits_dims(const sch_resource *used, const sch_resource *limit, const sch_resource *req,
                      unsigned *short_dims) {
  unsigned m = 0;
  for (int d = 0; d < NDIMS; d++) {
    if (dimv(req, d) <= 0 || dimv(limit, d) == INF)
      continue;
    int64_t eps = d == 0 ? SCH_MIN_MILLI_CPU : d == 1 ? SCH_MIN_MEMORY : SCH_MIN_SCALAR;
    if (dimv(used, d) - dimv(limit, d) >= eps)
      m |= 1u << d;
  }
  if (short_dims)
    *short_dims = m;
  return m == 0;
}

static void update_share(cap_attr *a) {
  double s = 0;
  bool any = false;
  for (int d = 0; d < NDIMS; d++) {
    int64_t des = dimv(&a->deserved, d);
    if (des <= 0)
      continue;
    any = true;
    double x = (double)dimv(&a->allocated, d) / (double)des;
    if (x > s)
      s = x;
  }
  a->share = any ? s : 1;
}

static cap_attr *attr_of(cap_state *st, const sch_snapshot *snap, int32_t job) {
  if (job < 0 || job >= snap->njobs)
    return NULL;
  int32_t q = snap->jobs[job].queue;
  return q >= 0 && q < st->n ? &st->q[q] : NULL;
}

static const char *attr_name(const cap_state *st, const sch_snapshot *snap, int32_t i) {
  return i < st->n ? snap->queues[i].name : ROOT;
}

/* The ancestor `level` steps up (1: the parent), or -1. */
static int32_t ancestor_at(const cap_attr *a, int level) {
  return level > 0 && a->depth >= level ? a->anc[a->depth - level] : -1;
}

/* Volcano getQueueLevel: the last index at which both ancestor lists agree. */
static int32_t common_level(const cap_attr *l, const cap_attr *r) {
  int32_t level = 0, m = l->depth < r->depth ? l->depth : r->depth;
  for (int32_t i = 0; i < m; i++) {
    if (l->anc[i] != r->anc[i])
      break;
    level = i;
  }
  return level;
}

static int cmp_share(const cap_attr *la, const cap_attr *ra) {
  if (la->share == ra->share) {
    bool ld = !sch_resource_is_empty(&la->deserved), rd = !sch_resource_is_empty(&ra->deserved);
    return ld == rd ? 0 : ld ? -1 : 1;
  }
  return la->share < ra->share ? -1 : 1;
}

/* Priority first; flat: share; hierarchy: a leaf before a parent, two parents by share, two
 * leaves by the shares of the ancestors just below the deepest one they share. */
static int queue_order(sch_session *ssn, void *ctx, const sch_queue *l, const sch_queue *r) {
  cap_state *st = ctx;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  if (l->priority != r->priority)
    return l->priority > r->priority ? -1 : 1;
  const cap_attr *la = &st->q[l - snap->queues], *ra = &st->q[r - snap->queues];
  if (!st->hier)
    return cmp_share(la, ra);
  bool ll = la->nchildren == 0, rl = ra->nchildren == 0;
  if (ll != rl)
    return ll ? -1 : 1;
  if (!ll)
    return cmp_share(la, ra);
  int32_t level = common_level(la, ra);
  const cap_attr *lp = level + 1 < la->depth ? &st->q[la->anc[level + 1]] : la;
  const cap_attr *rp = level + 1 < ra->depth ? &st->q[ra->anc[level + 1]] : ra;
  return cmp_share(lp, rp);
}

/* Why a queue cannot take jobs at all in a hierarchy, written into buf; false if it can. */
static bool tree_refusal(const cap_state *st, const sch_snapshot *snap, int32_t qi,
                         const sch_job *j, char *buf, size_t len) {
  const cap_attr *a = &st->q[qi];
  if (!st->hier)
    return false;
  if (a->tree == CAP_TREE_NO_PARENT)
    snprintf(buf, len, "the queue %s has invalid parent queue %s", a->tree_queue, a->tree_parent);
  else if (a->tree == CAP_TREE_CYCLE)
    snprintf(buf, len, "cycle detected in queue hierarchy for queue %s", a->tree_queue);
  else if (a->nchildren > 0)
    snprintf(buf, len, "The Queue <%s> of Job <%s/%s> is not leaf queue", snap->queues[qi].name,
             j->namespace ? j->namespace : "", j->name ? j->name : "");
  else
    return false;
  return true;
}

/* The queue the chain check names, with the queue the job is in when it is an ancestor. */
static void chain_name(const cap_state *st, const sch_snapshot *snap, int32_t k, int32_t leaf,
                       char *buf, size_t len) {
  if (k == leaf)
    snprintf(buf, len, "%s", attr_name(st, snap, k));
  else
    snprintf(buf, len, "%s (an ancestor of queue %s)", attr_name(st, snap, k),
             attr_name(st, snap, leaf));
}

/* The queues a job's resources count in: its own and, in a hierarchy, every ancestor (out
 * gets them from the queue up to the root; returns how many). */
static int32_t chain(const cap_state *st, int32_t qi, int32_t *out) {
  const cap_attr *a = &st->q[qi];
  int32_t n = 0;
  out[n++] = qi;
  for (int32_t i = st->hier ? a->depth - 1 : -1; i >= 0; i--)
    out[n++] = a->anc[i];
  return n;
}

/* The first queue of qi's chain where allocated + add (+ inqueue - elastic when
 * with_inqueue) does not fit realCapability in req's dimensions; -1 when it fits everywhere. */
static int32_t chain_short(cap_state *st, int32_t qi, const sch_resource *add, bool with_inqueue,
                           unsigned *dims) {
  int32_t n = chain(st, qi, st->scratch);
  for (int32_t i = 0; i < n; i++) {
    const cap_attr *c = &st->q[st->scratch[i]];
    sch_resource used = c->allocated;
    sch_resource_add(&used, add);
    if (with_inqueue) {
      sch_resource_add(&used, &c->inqueue);
      sch_resource_sub(&used, &c->elastic);
    }
    if (!fits_dims(&used, &c->real_capability, add, dims))
      return st->scratch[i];
  }
  return -1;
}

/* Adds r to (sign > 0) or takes it from the resource at offset off of every queue of qi's
 * chain. */
static void chain_add(cap_state *st, int32_t qi, size_t off, const sch_resource *r, int sign) {
  int32_t n = chain(st, qi, st->scratch);
  for (int32_t i = 0; i < n; i++) {
    sch_resource *f = (sch_resource *)((char *)&st->q[st->scratch[i]] + off);
    if (sign > 0)
      sch_resource_add(f, r);
    else
      sch_resource_sub(f, r);
  }
}

static bool allocatable(sch_session *ssn, void *ctx, const sch_queue *q, const sch_task *t) {
  cap_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  int32_t qi = (int32_t)(q - snap->queues);
  const sch_job *j = t->job >= 0 && t->job < snap->njobs ? &snap->jobs[t->job] : NULL;
  char why[512];
  if (!q->open)
    return false;
  if (j && tree_refusal(st, snap, qi, j, why, sizeof(why))) {
    sch_session_job_queue_reason(ssn, j, "%s", why);
    return false;
  }
  unsigned short_dims;
  int32_t k = chain_short(st, qi, &t->resreq, false, &short_dims);
  if (k < 0)
    return true;
  KC_V(3, "capacity: queue %s has no room for task %s", attr_name(st, snap, k),
       t->pod && t->pod->name ? t->pod->name : "?");
  if (j) {
    const cap_attr *a = &st->q[k];
    char name[160], req[256], cap[256], al[256];
    chain_name(st, snap, k, qi, name, sizeof(name));
    sch_resource_human(snap, &t->resreq, short_dims, req, sizeof(req));
    sch_resource_human(snap, &a->real_capability, short_dims, cap, sizeof(cap));
    sch_resource_human(snap, &a->allocated, short_dims, al, sizeof(al));
    sch_session_job_queue_reason(ssn, j,
                                 "queue %s resource quota insufficient: pod requests %s; the "
                                 "queue's capability is %s, %s allocated",
                                 name, req, cap, al);
  }
  return false;
}

/* Some dimension t asks for stays within deserved (Volcano
 * LessEqualPartlyWithDimensionZeroFiltered). */
static bool within_deserved_partly(const sch_resource *future, const sch_resource *deserved,
                                   const sch_resource *req) {
  for (int d = 0; d < NDIMS; d++)
    if (dimv(req, d) > 0 && dimv(deserved, d) > 0 && dimv(future, d) <= dimv(deserved, d))
      return true;
  return false;
}

/* May the queue reclaim for t: within its realCapability, and below deserved in a dimension
 * t asks for, in the queue itself or (ancestorReclaimLevel) in an ancestor other than root. */
static bool preemptive(sch_session *ssn, void *ctx, const sch_queue *q, const sch_task *t) {
  cap_state *st = ctx;
  const cap_attr *a = &st->q[q - sch_session_snapshot(ssn)->queues];
  if (!q->open || (st->hier && a->tree != CAP_TREE_OK))
    return false;
  sch_resource future = a->allocated;
  sch_resource_add(&future, &t->resreq);
  if (!fits_dims(&future, &a->real_capability, &t->resreq, NULL))
    return false;
  if (within_deserved_partly(&future, &a->deserved, &t->resreq))
    return true;
  for (int level = 1; st->hier && level <= st->ancestor_reclaim_level; level++) {
    int32_t k = ancestor_at(a, level);
    if (k < 0 || k == st->root)
      continue;
    sch_resource fa = st->q[k].allocated;
    sch_resource_add(&fa, &t->resreq);
    if (within_deserved_partly(&fa, &st->q[k].deserved, &t->resreq))
      return true;
  }
  return false;
}

static void enqueue_refusal(sch_session *ssn, const cap_state *st, const sch_job *j, int32_t k,
                            unsigned short_dims) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  const cap_attr *a = &st->q[k];
  sch_resource left = a->real_capability;
  sch_resource used = a->allocated;
  sch_resource_add(&used, &a->inqueue);
  sch_resource_sub(&used, &a->elastic);
  sch_resource_sub(&left, &used);
  char name[160];
  chain_name(st, snap, k, j->queue, name, sizeof(name));
  sch_session_gang_quota_reason(ssn, j, name, &left, &a->real_capability, short_dims);
}

static int job_enqueueable(sch_session *ssn, void *ctx, const sch_job *j) {
  cap_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  if (j->queue < 0 || j->queue >= st->n)
    return SCH_PERMIT;
  char why[512];
  if (tree_refusal(st, snap, j->queue, j, why, sizeof(why))) {
    sch_session_job_queue_reason(ssn, j, "%s", why);
    return SCH_REJECT;
  }
  if (!snap->queues[j->queue].open)
    return SCH_REJECT;
  if (!j->has_min_resources)
    return SCH_PERMIT;
  unsigned short_dims;
  int32_t k = chain_short(st, j->queue, &j->min_resources, true, &short_dims);
  if (k < 0)
    return SCH_PERMIT;
  enqueue_refusal(ssn, st, j, k, short_dims);
  return SCH_REJECT;
}

static void job_enqueued(sch_session *ssn, void *ctx, const sch_job *j) {
  cap_state *st = ctx;
  (void)ssn;
  if (!j->has_min_resources || j->queue < 0 || j->queue >= st->n)
    return;
  sch_resource held = j->min_resources;
  sch_job_deduct_gated(j, &held);
  chain_add(st, j->queue, offsetof(cap_attr, inqueue), &held, 1);
}

/* A victim's request shares a dimension with deserved. */
static bool relevant(const sch_resource *req, const sch_resource *deserved) {
  for (int d = 0; d < NDIMS; d++)
    if (dimv(req, d) > 0 && dimv(deserved, d) > 0)
      return true;
  return false;
}

/* allocated above deserved in a dimension req uses (GreaterPartlyWithRelevantDimensions). */
static bool above_deserved(const sch_resource *allocated, const sch_resource *deserved,
                           const sch_resource *req) {
  for (int d = 0; d < NDIMS; d++)
    if (dimv(req, d) > 0 && dimv(allocated, d) > dimv(deserved, d))
      return true;
  return false;
}

/* Working state of one Reclaimable call: what each queue would still hold. */
typedef struct reclaim_ctx {
  cap_state *st;
  const cap_attr *reclaimer;
  const sch_task *task;
  sch_resource *left;
  bool *seen;
} reclaim_ctx;

static sch_resource *left_of(reclaim_ctx *c, int32_t q) {
  if (!c->seen[q]) {
    c->left[q] = c->st->q[q].allocated;
    c->seen[q] = true;
  }
  return &c->left[q];
}

/* Both have a non-root ancestor in common within ancestorReclaimLevel levels. */
static bool share_ancestor_within(const cap_state *st, const cap_attr *a, const cap_attr *b) {
  for (int la = 1; la <= st->ancestor_reclaim_level; la++) {
    int32_t x = ancestor_at(a, la);
    if (x < 0 || x == st->root)
      continue;
    for (int lb = 1; lb <= st->ancestor_reclaim_level; lb++)
      if (ancestor_at(b, lb) == x)
        return true;
  }
  return false;
}

/* Volcano getReclaimeeAncestorToCheck: the victim's ancestor `level` up when it is not the
 * root and not the reclaimer's ancestor at that level; -1 when none needs checking. */
static int32_t ancestor_to_check(const cap_state *st, const cap_attr *reclaimer,
                                 const cap_attr *victim, int level) {
  int32_t v = ancestor_at(victim, level);
  if (v < 0 || v == st->root || ancestor_at(reclaimer, level) == v)
    return -1;
  return v;
}

/* Whether the victim v of queue q may go, and if so its resources leave q and the ancestors
 * checked (up to ancestorReclaimLevel). */
static bool take_victim(reclaim_ctx *c, int32_t q, const sch_task *v) {
  cap_state *st = c->st;
  const cap_attr *a = &st->q[q];
  sch_resource *left = left_of(c, q);
  sch_resource after = *left;
  sch_resource_sub(&after, &v->resreq);
  if (!sch_resource_less_equal(&a->guarantee, &after))
    return false; /* the guarantee is never reclaimed */
  bool levels = st->hier && st->ancestor_reclaim_level > 0;
  if (!relevant(&v->resreq, &a->deserved)) {
    /* an immediate victim, unless both sit under a shared ancestor and the reclaimer's own
     * deserved says nothing about what it asks for: no real contention there */
    if (levels && share_ancestor_within(st, c->reclaimer, a) &&
        !relevant(&c->task->resreq, &c->reclaimer->deserved))
      return false;
  } else if (!above_deserved(left, &a->deserved, &v->resreq)) {
    return false;
  }
  int32_t checked[16];
  int nchecked = 0;
  for (int level = 1; levels && level <= st->ancestor_reclaim_level; level++) {
    int32_t k = ancestor_to_check(st, c->reclaimer, a, level);
    if (k < 0)
      continue;
    sch_resource *kleft = left_of(c, k);
    if (nchecked < (int)(sizeof(checked) / sizeof(checked[0])))
      checked[nchecked++] = k;
    if (relevant(&v->resreq, &st->q[k].deserved) &&
        !above_deserved(kleft, &st->q[k].deserved, &v->resreq))
      return false;
  }
  *left = after;
  for (int i = 0; i < nchecked; i++)
    sch_resource_sub(&c->left[checked[i]], &v->resreq);
  return true;
}

/* Deeper common ancestor with the reclaimer first (Volcano VictimQueueOrderFn of capacity);
 * the sort is stable on the candidates' order otherwise. */
typedef struct victim_key {
  int32_t level, pos, task;
} victim_key;

static int victim_key_cmp(const void *x, const void *y) {
  const victim_key *a = x, *b = y;
  if (a->level != b->level)
    return a->level > b->level ? -1 : 1;
  return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static bool reclaimable(sch_session *ssn, void *ctx, const sch_task *reclaimer,
                        const int32_t *cands, size_t n, int32_t *victims, size_t *nvictims) {
  cap_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  *nvictims = 0;
  cap_attr *ra = attr_of(st, snap, reclaimer->job);
  size_t nq = (size_t)st->n + 1;
  reclaim_ctx c = {st, ra, reclaimer, calloc(nq, sizeof(sch_resource)), calloc(nq, sizeof(bool))};
  victim_key *keys = calloc(n ? n : 1, sizeof(*keys));
  bool ok = c.left && c.seen && keys;
  /* a reclaimer whose queue has no place in the hierarchy takes nothing */
  bool any = ok && ra && !(st->hier && ra->tree != CAP_TREE_OK);
  for (size_t i = 0; any && i < n; i++) {
    cap_attr *a = attr_of(st, snap, snap->tasks[cands[i]].job);
    keys[i] = (victim_key){a && st->hier ? common_level(ra, a) : 0, (int32_t)i, cands[i]};
  }
  if (any && st->hier)
    qsort(keys, n, sizeof(*keys), victim_key_cmp);
  for (size_t i = 0; any && i < n; i++) {
    const sch_task *v = &snap->tasks[keys[i].task];
    cap_attr *a = attr_of(st, snap, v->job);
    if (a && take_victim(&c, (int32_t)(a - st->q), v))
      victims[(*nvictims)++] = keys[i].task;
  }
  free(keys);
  free(c.left);
  free(c.seen);
  return ok;
}

/* Gang-aware eviction: preemption is not filtered (capacity registers no preemptable
 * callback); a gang reclaim keeps each victim queue's guarantee and deserved as reclaim
 * does, over the candidates in the action's order and the gang's whole demand. */
static bool unified_evictable(sch_session *ssn, void *ctx, const sch_eviction_ctx *ec,
                              const int32_t *cands, size_t n, int32_t *victims, size_t *nvictims) {
  if (ec->kind == SCH_EVICT_GANG_PREEMPT) {
    memcpy(victims, cands, n * sizeof(*cands));
    *nvictims = n;
    return true;
  }
  return reclaimable(ssn, ctx, ec->task, cands, n, victims, nvictims);
}

static void on_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  cap_state *st = ctx;
  cap_attr *a = attr_of(st, sch_session_snapshot(ssn), t->job);
  if (a) {
    chain_add(st, (int32_t)(a - st->q), offsetof(cap_attr, allocated), &t->resreq, 1);
    update_share(a);
  }
}

static void on_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  cap_state *st = ctx;
  cap_attr *a = attr_of(st, sch_session_snapshot(ssn), t->job);
  if (a) {
    chain_add(st, (int32_t)(a - st->q), offsetof(cap_attr, allocated), &t->resreq, -1);
    update_share(a);
  }
}

/* Allocated and requested by its tasks; inqueue: what an admitted gang's minResources still
 * claims beyond its allocation, less its gated pods' requests (Volcano
 * DeductSchGatedResources); elastic: what a job holds above its minResources. */
static void account_job(const sch_snapshot *snap, const sch_job *j, cap_attr *a) {
  int32_t nallocated = sch_job_tally(snap, j, &a->allocated, &a->request);
  if (!j->has_min_resources)
    return;
  if (j->phase == SCH_PG_INQUEUE ||
      (j->phase == SCH_PG_RUNNING && nallocated >= j->min_available)) {
    sch_resource rest = j->min_resources;
    exceeded(&rest, &j->allocated);
    sch_job_deduct_gated(j, &rest);
    sch_resource_add(&a->inqueue, &rest);
  }
  sch_resource el = j->allocated;
  exceeded(&el, &j->min_resources);
  sch_resource_add(&a->elastic, &el);
}

static void account_jobs(cap_state *st, const sch_snapshot *snap) {
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    const sch_job *j = &snap->jobs[ji];
    if (j->queue < 0 || j->queue >= st->n)
      continue;
    st->q[j->queue].active = true;
    account_job(snap, j, &st->q[j->queue]);
  }
}

/* A capability leaves the dimensions it does not name (and cpu or memory <= 0) unlimited. */
static void capability_of(const sch_queue *q, sch_resource *out) {
  for (int d = 0; d < NDIMS; d++) {
    int64_t v = q->has_capability ? dimv(&q->capability, d) : 0;
    *dimp(out, d) = v > 0 ? v : INF;
  }
}

static void init_attrs(cap_state *st, const sch_snapshot *snap) {
  for (int32_t i = 0; i < st->n; i++) {
    const sch_queue *q = &snap->queues[i];
    cap_attr *a = &st->q[i];
    a->guarantee = q->guarantee;
    a->deserved = q->deserved;
    capability_of(q, &a->capability);
    a->parent = -1;
  }
  for (int d = 0; d < NDIMS; d++) /* the stand-in for a missing root: unlimited */
    *dimp(&st->q[st->n].capability, d) = INF;
  st->q[st->n].parent = -1;
}

/* What the queue status, the overused message and the metrics report. */
static void publish(cap_state *st, sch_snapshot *snap) {
  for (int32_t i = 0; i <= st->n; i++)
    update_share(&st->q[i]);
  for (int32_t i = 0; i < st->n; i++) {
    snap->queues[i].deserved = st->q[i].deserved;
    snap->queues[i].has_real_capability = true;
    snap->queues[i].real_capability = st->q[i].real_capability;
  }
}

static void build_flat(cap_state *st, sch_snapshot *snap) {
  sch_resource total_guarantee = {0};
  for (int32_t i = 0; i < snap->nqueues; i++)
    sch_resource_add(&total_guarantee, &snap->queues[i].guarantee);
  for (int32_t i = 0; i < snap->nqueues; i++) {
    cap_attr *a = &st->q[i];
    a->real_capability = snap->total_allocatable;
    exceeded(&a->real_capability, &total_guarantee);
    sch_resource_add(&a->real_capability, &a->guarantee);
    cap_min(&a->real_capability, &a->capability);
  }
  account_jobs(st, snap);
  for (int32_t i = 0; i < snap->nqueues; i++) {
    cap_attr *a = &st->q[i];
    cap_min(&a->deserved, &a->real_capability);
    sch_resource_set_max(&a->deserved, &a->guarantee);
  }
  publish(st, snap);
}

/* ---- hierarchy ---- */

/* Each queue's parent index from spec.parent (none: root). */
static void find_parents(cap_state *st, const sch_snapshot *snap) {
  for (int32_t i = 0; i < st->n; i++) {
    if (i == st->root)
      continue;
    const Kiln__Queue *kq = snap->queues[i].queue;
    const char *p =
        kq && kq->spec && kq->spec->parent && *kq->spec->parent ? kq->spec->parent : ROOT;
    int32_t pi = strcmp(p, ROOT) == 0 ? st->root : sch_snapshot_queue(snap, p);
    if (pi < 0) {
      st->q[i].tree = CAP_TREE_NO_PARENT;
      st->q[i].tree_queue = snap->queues[i].name;
      st->q[i].tree_parent = p;
    }
    st->q[i].parent = pi;
  }
}

/* Depth of queue i (steps up to the root); a queue under a missing parent, or in or under a
 * cycle, is marked instead. */
static void find_depth(cap_state *st, const sch_snapshot *snap, int32_t i) {
  cap_attr *a = &st->q[i];
  int32_t cur = i, steps = 0;
  while (cur != st->root) {
    const cap_attr *c = &st->q[cur];
    if (c->tree != CAP_TREE_OK) {
      a->tree = c->tree;
      a->tree_queue = c->tree_queue;
      a->tree_parent = c->tree_parent;
      return;
    }
    cur = c->parent;
    if (++steps > st->n) {
      a->tree = CAP_TREE_CYCLE;
      a->tree_queue = snap->queues[i].name;
      return;
    }
  }
  a->depth = steps;
}

/* Parents, depths, ancestor lists and child counts. */
static int link_tree(cap_state *st, const sch_snapshot *snap) {
  find_parents(st, snap);
  size_t total = 0;
  for (int32_t i = 0; i < st->n; i++) {
    if (i != st->root && st->q[i].tree == CAP_TREE_OK)
      find_depth(st, snap, i);
    total += st->q[i].tree == CAP_TREE_OK ? (size_t)st->q[i].depth : 0;
  }
  st->pool = malloc((total ? total : 1) * sizeof(*st->pool));
  if (!st->pool)
    return KC_ENOMEM;
  size_t off = 0;
  for (int32_t i = 0; i < st->n; i++) {
    cap_attr *a = &st->q[i];
    if (i == st->root || a->tree != CAP_TREE_OK)
      continue;
    a->anc = st->pool + off;
    off += (size_t)a->depth;
    int32_t cur = a->parent;
    for (int32_t k = a->depth - 1; k >= 0; k--, cur = st->q[cur].parent)
      a->anc[k] = cur;
    st->q[a->parent].nchildren++;
  }
  return 0;
}

static int by_depth(const void *x, const void *y, void *ctx) {
  const cap_state *st = ctx;
  int32_t a = st->q[*(const int32_t *)x].depth, b = st->q[*(const int32_t *)y].depth;
  return a < b ? -1 : a > b;
}

/* Volcano's checkHierarchicalQueue reports these as errors and schedules on. */
static void log_limits(const cap_state *st, const sch_snapshot *snap, int32_t c, int32_t p,
                       const sch_resource *sum_d, const sch_resource *sum_g) {
  const cap_attr *ca = &st->q[c], *pa = &st->q[p];
  for (int d = 0; d < NDIMS; d++)
    if (dimv(&pa->capability, d) != INF && dimv(&ca->capability, d) > dimv(&pa->capability, d))
      KC_V(3,
           "capacity: child queue %s capability exceeds parent queue %s capability; "
           "its effective capability is limited by the parent",
           attr_name(st, snap, c), attr_name(st, snap, p));
  if (p != st->root && !sch_resource_less_equal(&sum_d[p], &pa->deserved))
    KC_V(3, "capacity: sum of child queue deserved exceeds parent queue %s deserved",
         attr_name(st, snap, p));
  if (p != st->root && !sch_resource_less_equal(&sum_g[p], &pa->guarantee))
    KC_V(3, "capacity: sum of child queue guarantees exceeds parent queue %s guarantee",
         attr_name(st, snap, p));
}

/* realCapability top-down: parent's less its children's guarantees, plus own guarantee,
 * within the capability (inherited from the parent where unset). */
static void limits_down(cap_state *st, const sch_snapshot *snap, const int32_t *order,
                        int32_t norder, const sch_resource *sum_d, const sch_resource *sum_g) {
  cap_attr *root = &st->q[st->root];
  root->guarantee = sum_g[st->root];
  root->deserved = sum_d[st->root];
  root->real_capability = root->capability;
  for (int32_t k = 0; k < norder; k++) {
    int32_t c = order[k];
    cap_attr *ca = &st->q[c];
    if (c == st->root)
      continue;
    const cap_attr *pa = &st->q[ca->parent];
    for (int d = 0; d < NDIMS; d++)
      if (dimv(&ca->capability, d) == INF)
        *dimp(&ca->capability, d) = dimv(&pa->capability, d);
    log_limits(st, snap, c, ca->parent, sum_d, sum_g);
    ca->real_capability = pa->real_capability;
    exceeded(&ca->real_capability, &sum_g[ca->parent]);
    add_keep_inf(&ca->real_capability, &ca->guarantee);
    cap_min(&ca->real_capability, &ca->capability);
  }
}

static int build_hier(cap_state *st, sch_snapshot *snap) {
  int rc = link_tree(st, snap);
  size_t nq = (size_t)st->n + 1;
  int32_t *order = malloc(nq * sizeof(*order));
  sch_resource *sum_d = calloc(nq, sizeof(*sum_d)), *sum_g = calloc(nq, sizeof(*sum_g));
  if (rc < 0 || !order || !sum_d || !sum_g) {
    rc = KC_ENOMEM;
    goto out;
  }
  int32_t norder = 0;
  for (int32_t i = 0; i <= st->n; i++) {
    cap_attr *a = &st->q[i];
    if (a->tree != CAP_TREE_OK) { /* never schedules: its own limits only */
      a->real_capability = a->capability;
      sch_resource_set_max(&a->deserved, &a->guarantee);
      continue;
    }
    if (i == st->root || (i == st->n && st->root != st->n))
      continue;
    order[norder++] = i;
    sch_resource_set_max(&a->deserved, &a->guarantee);
    sch_resource_add(&sum_d[a->parent], &a->deserved);
    sch_resource_add(&sum_g[a->parent], &a->guarantee);
  }
  qsort_r(order, (size_t)norder, sizeof(*order), by_depth, st);
  limits_down(st, snap, order, norder, sum_d, sum_g);
  account_jobs(st, snap);
  for (int32_t k = norder - 1; k >= 0; k--) { /* descendants' usage up to every ancestor */
    cap_attr *c = &st->q[order[k]], *p = &st->q[c->parent];
    sch_resource_add(&p->allocated, &c->allocated);
    sch_resource_add(&p->request, &c->request);
    sch_resource_add(&p->inqueue, &c->inqueue);
    sch_resource_add(&p->elastic, &c->elastic);
  }
  publish(st, snap);
out:
  free(order);
  free(sum_d);
  free(sum_g);
  return rc;
}

static int capacity_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  cap_state *st = calloc(1, sizeof(*st));
  if (!st)
    return KC_ENOMEM;
  *state = st;
  st->n = snap->nqueues;
  st->q = calloc((size_t)st->n + 1, sizeof(*st->q));
  st->scratch = calloc((size_t)st->n + 2, sizeof(*st->scratch));
  if (!st->q || !st->scratch)
    return KC_ENOMEM;
  st->hier = conf->enabled & (1u << SCH_EXT_HIERARCHY) && conf->has_enable[SCH_EXT_HIERARCHY];
  int64_t level = sch_args_int(&conf->args, "ancestorReclaimLevel", 0);
  if (level < 0 || level > 64) {
    KC_WARN("capacity: ancestorReclaimLevel should be non-negative, got %lld. Falling back to 0.",
            (long long)level);
    level = 0;
  }
  st->ancestor_reclaim_level = (int)level;
  int32_t root = sch_snapshot_queue(snap, ROOT);
  st->root = root >= 0 ? root : st->n;
  init_attrs(st, snap);
  int rc = 0;
  if (st->hier)
    rc = build_hier(st, snap);
  else
    build_flat(st, snap);
  if (rc < 0 || (rc = sch_add_queue_order_fn(ssn, queue_order, st)) < 0 ||
      (rc = sch_add_reclaimable_fn(ssn, reclaimable, st)) < 0 ||
      (rc = sch_add_unified_evictable_fn(ssn, unified_evictable, st)) < 0 ||
      (rc = sch_add_allocatable_fn(ssn, allocatable, st)) < 0 ||
      (rc = sch_add_preemptive_fn(ssn, preemptive, st)) < 0 ||
      (rc = sch_add_job_enqueueable_fn(ssn, job_enqueueable, st)) < 0 ||
      (rc = sch_add_job_enqueued_fn(ssn, job_enqueued, st)) < 0 ||
      (rc = sch_add_event_handler(ssn, on_allocate, on_deallocate, st)) < 0)
    return rc;
  return 0;
}

static void capacity_close(sch_session *ssn, void *state) {
  cap_state *st = state;
  if (!st)
    return;
  /* The queue metrics, for every queue as the capacity plugin publishes them. */
  sch_snapshot *snap = sch_session_snapshot(ssn);
  for (int32_t i = 0; st->q && i < st->n && i < snap->nqueues; i++) {
    sch_queue *q = &snap->queues[i];
    q->has_share = true;
    q->share = st->q[i].share;
    q->request = st->q[i].request;
    q->inqueue = st->q[i].inqueue;
  }
  free(st->pool);
  free(st->scratch);
  free(st->q);
  free(st);
}

const sch_plugin sch_plugin_capacity = {
    .name = "capacity",
    .open = capacity_open,
    .close = capacity_close,
};
