/* capacity (Volcano pkg/scheduler/plugins/capacity), flat queues: each queue's deserved,
 * guarantee and capability per resource (cpu, memory and scalar resources such as GPUs).
 *
 *   realCapability = (cluster total - every queue's guarantee) + own guarantee, capped by
 *                    the capability (a capability without cpu or memory leaves that
 *                    dimension unlimited);
 *   deserved       = spec.deserved capped by realCapability, raised to the guarantee;
 *   share          = max over deserved's dimensions of allocated / deserved (1 for a queue
 *                    without deserved: best effort, after every queue below its share).
 * Queue order: higher priority, then lower share (equal shares: a queue with deserved
 * first). Allocatable: allocated + the task fits realCapability in the task's dimensions.
 * JobEnqueueable: minResources + allocated + inqueue - elastic fits realCapability.
 * Preemptive (may reclaim): within realCapability, and some requested dimension stays within
 * deserved. Reclaimable: never below the victim queue's guarantee; a victim whose request
 * shares no dimension with its queue's deserved goes first, else its queue must hold more
 * than deserved in a dimension the victim uses. Overused is not registered (Volcano's
 * capacity leaves it to the allocate loop's Allocatable).
 * Hierarchical queues (enableHierarchy, spec.parent, root) are not built yet: a
 * configuration that enables them is logged and run flat. */
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"

#define INF INT64_MAX

typedef struct cap_attr {
  bool active; /* some job of the session is in it */
  double share;
  sch_resource deserved, allocated, request, elastic, inqueue, guarantee, capability,
      real_capability;
} cap_attr;

typedef struct cap_state {
  int32_t n;
  cap_attr *q;
} cap_state;

static int64_t *dimp(sch_resource *r, int d) {
  return d == 0 ? &r->milli_cpu : d == 1 ? &r->memory : &r->scalar[d - 2];
}
static int64_t dimv(const sch_resource *r, int d) {
  return dimp((sch_resource *)r, d)[0];
}
#define NDIMS (2 + SCH_MAX_SCALARS)

/* r = max(r - sub, 0) per dimension (Volcano ExceededPart). */
static void exceeded(sch_resource *r, const sch_resource *sub) {
  for (int d = 0; d < NDIMS; d++) {
    int64_t v = dimv(r, d) - dimv(sub, d);
    *dimp(r, d) = v > 0 ? v : 0;
  }
}

/* r = min(r, cap) per dimension; an INF cap leaves r (Volcano MinDimensionResource). */
static void cap_min(sch_resource *r, const sch_resource *cap) {
  for (int d = 0; d < NDIMS; d++)
    if (dimv(cap, d) != INF && dimv(cap, d) < dimv(r, d))
      *dimp(r, d) = dimv(cap, d);
}

/* used fits limit in every dimension req asks for (Volcano
 * LessEqualWithDimensionAndResourcesName); *short_dims gets those that do not. */
static bool fits_dims(const sch_resource *used, const sch_resource *limit,
                      const sch_resource *req, unsigned *short_dims) {
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

static int queue_order(sch_session *ssn, void *ctx, const sch_queue *l, const sch_queue *r) {
  cap_state *st = ctx;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  if (l->priority != r->priority)
    return l->priority > r->priority ? -1 : 1;
  const cap_attr *la = &st->q[l - snap->queues], *ra = &st->q[r - snap->queues];
  if (la->share == ra->share) {
    bool ld = !sch_resource_is_empty(&la->deserved), rd = !sch_resource_is_empty(&ra->deserved);
    return ld == rd ? 0 : ld ? -1 : 1;
  }
  return la->share < ra->share ? -1 : 1;
}

static bool allocatable(sch_session *ssn, void *ctx, const sch_queue *q, const sch_task *t) {
  cap_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  const cap_attr *a = &st->q[q - snap->queues];
  sch_resource future = a->allocated;
  sch_resource_add(&future, &t->resreq);
  unsigned short_dims;
  if (fits_dims(&future, &a->real_capability, &t->resreq, &short_dims))
    return true;
  KC_V(3, "capacity: queue %s has no room for task %s", q->name,
       t->pod && t->pod->name ? t->pod->name : "?");
  if (t->job >= 0 && t->job < snap->njobs) {
    char req[256], cap[256], al[256];
    sch_resource_human(snap, &t->resreq, short_dims, req, sizeof(req));
    sch_resource_human(snap, &a->real_capability, short_dims, cap, sizeof(cap));
    sch_resource_human(snap, &a->allocated, short_dims, al, sizeof(al));
    sch_session_job_queue_reason(ssn, &snap->jobs[t->job],
                                 "queue %s resource quota insufficient: pod requests %s; the "
                                 "queue's capability is %s, %s allocated",
                                 q->name, req, cap, al);
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

static bool preemptive(sch_session *ssn, void *ctx, const sch_queue *q, const sch_task *t) {
  cap_state *st = ctx;
  const cap_attr *a = &st->q[q - sch_session_snapshot(ssn)->queues];
  if (!q->open)
    return false;
  sch_resource future = a->allocated;
  sch_resource_add(&future, &t->resreq);
  if (!fits_dims(&future, &a->real_capability, &t->resreq, NULL))
    return false;
  return within_deserved_partly(&future, &a->deserved, &t->resreq);
}

static int job_enqueueable(sch_session *ssn, void *ctx, const sch_job *j) {
  cap_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  if (j->queue < 0 || j->queue >= st->n)
    return SCH_PERMIT;
  const sch_queue *q = &snap->queues[j->queue];
  if (!q->open)
    return SCH_REJECT;
  if (!j->has_min_resources)
    return SCH_PERMIT;
  const cap_attr *a = &st->q[j->queue];
  sch_resource need = j->min_resources;
  sch_resource_add(&need, &a->allocated);
  sch_resource_add(&need, &a->inqueue);
  sch_resource_sub(&need, &a->elastic);
  unsigned short_dims;
  if (fits_dims(&need, &a->real_capability, &j->min_resources, &short_dims))
    return SCH_PERMIT;
  sch_resource left = a->real_capability;
  sch_resource used = need;
  sch_resource_sub(&used, &j->min_resources);
  sch_resource_sub(&left, &used);
  char gang[256], lft[256], cap[256];
  sch_resource_human(snap, &j->min_resources, short_dims, gang, sizeof(gang));
  sch_resource_human(snap, &left, short_dims, lft, sizeof(lft));
  sch_resource_human(snap, &a->real_capability, short_dims, cap, sizeof(cap));
  sch_session_job_queue_reason(ssn, j,
                               "queue %s resource quota insufficient: the gang needs %s "
                               "(minResources); the queue has %s left of %s",
                               q->name, gang, lft, cap);
  return SCH_REJECT;
}

static void job_enqueued(sch_session *ssn, void *ctx, const sch_job *j) {
  cap_state *st = ctx;
  if (j->has_min_resources && j->queue >= 0 && j->queue < st->n)
    sch_resource_add(&st->q[j->queue].inqueue, &j->min_resources);
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

static bool reclaimable(sch_session *ssn, void *ctx, const sch_task *reclaimer,
                        const int32_t *cands, size_t n, int32_t *victims, size_t *nvictims) {
  cap_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  *nvictims = 0;
  sch_resource *left = calloc((size_t)(st->n ? st->n : 1), sizeof(*left));
  bool *seen = calloc((size_t)(st->n ? st->n : 1), sizeof(*seen));
  if (!left || !seen) {
    free(left);
    free(seen);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    const sch_task *v = &snap->tasks[cands[i]];
    cap_attr *a = attr_of(st, snap, v->job);
    if (!a)
      continue;
    int32_t q = (int32_t)(a - st->q);
    if (!seen[q]) {
      left[q] = a->allocated;
      seen[q] = true;
    }
    sch_resource after = left[q];
    sch_resource_sub(&after, &v->resreq);
    if (!sch_resource_less_equal(&a->guarantee, &after))
      continue; /* the guarantee is never reclaimed */
    if (relevant(&v->resreq, &a->deserved) && !above_deserved(&left[q], &a->deserved, &v->resreq))
      continue;
    left[q] = after;
    victims[(*nvictims)++] = cands[i];
  }
  free(left);
  free(seen);
  return true;
}

static void on_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  cap_attr *a = attr_of(ctx, sch_session_snapshot(ssn), t->job);
  if (a) {
    sch_resource_add(&a->allocated, &t->resreq);
    update_share(a);
  }
}

static void on_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  cap_attr *a = attr_of(ctx, sch_session_snapshot(ssn), t->job);
  if (a) {
    sch_resource_sub(&a->allocated, &t->resreq);
    update_share(a);
  }
}

/* Allocated and requested by its tasks; inqueue: what an admitted gang's minResources still
 * claims beyond its allocation; elastic: what a job holds above its minResources. */
static void account_job(const sch_snapshot *snap, const sch_job *j, cap_attr *a) {
  int32_t nallocated = sch_job_tally(snap, j, &a->allocated, &a->request);
  if (!j->has_min_resources)
    return;
  if (j->phase == SCH_PG_INQUEUE ||
      (j->phase == SCH_PG_RUNNING && nallocated >= j->min_available)) {
    sch_resource rest = j->min_resources;
    exceeded(&rest, &j->allocated);
    sch_resource_add(&a->inqueue, &rest);
  }
  sch_resource el = j->allocated;
  exceeded(&el, &j->min_resources);
  sch_resource_add(&a->elastic, &el);
}

/* A capability leaves the dimensions it does not name (and cpu or memory <= 0) unlimited. */
static void capability_of(const sch_queue *q, sch_resource *out) {
  for (int d = 0; d < NDIMS; d++) {
    int64_t v = q->has_capability ? dimv(&q->capability, d) : 0;
    *dimp(out, d) = v > 0 ? v : INF;
  }
}

static void build(cap_state *st, sch_snapshot *snap) {
  sch_resource total_guarantee = {0};
  for (int32_t i = 0; i < snap->nqueues; i++)
    sch_resource_add(&total_guarantee, &snap->queues[i].guarantee);
  for (int32_t i = 0; i < snap->nqueues; i++) {
    const sch_queue *q = &snap->queues[i];
    cap_attr *a = &st->q[i];
    a->guarantee = q->guarantee;
    a->deserved = q->deserved;
    capability_of(q, &a->capability);
    a->real_capability = snap->total_allocatable;
    exceeded(&a->real_capability, &total_guarantee);
    sch_resource_add(&a->real_capability, &a->guarantee);
    cap_min(&a->real_capability, &a->capability);
  }
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    const sch_job *j = &snap->jobs[ji];
    if (j->queue < 0 || j->queue >= st->n)
      continue;
    st->q[j->queue].active = true;
    account_job(snap, j, &st->q[j->queue]);
  }
  for (int32_t i = 0; i < snap->nqueues; i++) {
    cap_attr *a = &st->q[i];
    cap_min(&a->deserved, &a->real_capability);
    sch_resource_set_max(&a->deserved, &a->guarantee);
    update_share(a);
    /* What the queue status, the overused message and the metrics report. */
    snap->queues[i].deserved = a->deserved;
    snap->queues[i].has_real_capability = true;
    snap->queues[i].real_capability = a->real_capability;
  }
}

static int capacity_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  cap_state *st = calloc(1, sizeof(*st));
  if (!st)
    return KC_ENOMEM;
  *state = st;
  st->n = snap->nqueues;
  st->q = calloc((size_t)(st->n ? st->n : 1), sizeof(*st->q));
  if (!st->q)
    return KC_ENOMEM;
  if (conf->enabled & (1u << SCH_EXT_HIERARCHY) && conf->has_enable[SCH_EXT_HIERARCHY])
    KC_WARN("capacity: enableHierarchy is not supported yet; queues are treated as flat");
  build(st, snap);
  int rc;
  if ((rc = sch_add_queue_order_fn(ssn, queue_order, st)) < 0 ||
      (rc = sch_add_reclaimable_fn(ssn, reclaimable, st)) < 0 ||
      (rc = sch_add_allocatable_fn(ssn, allocatable, st)) < 0 ||
      (rc = sch_add_preemptive_fn(ssn, preemptive, st)) < 0 ||
      (rc = sch_add_job_enqueueable_fn(ssn, job_enqueueable, st)) < 0 ||
      (rc = sch_add_job_enqueued_fn(ssn, job_enqueued, st)) < 0 ||
      (rc = sch_add_event_handler(ssn, on_allocate, on_deallocate, st)) < 0)
    return rc;
  return 0;
}

static void capacity_close(sch_session *ssn, void *state) {
  (void)ssn;
  cap_state *st = state;
  if (!st)
    return;
  free(st->q);
  free(st);
}

const sch_plugin sch_plugin_capacity = {
    .name = "capacity",
    .open = capacity_open,
    .close = capacity_close,
};
