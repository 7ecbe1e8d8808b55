/* proportion (Volcano pkg/scheduler/plugins/proportion): the fair share of each queue.
 *
 * Deserved: the cluster total is dealt out by weight among the queues that have jobs, round
 * after round. Each round a queue that is not yet met gets remaining * weight / total
 * weight added, clipped to its real capability (min(capability, total - sum of guarantees
 * + its guarantee), a missing capability dimension being unlimited) and to its request
 * (allocated + pending resreq); it is met when the request fits or the round did not move
 * it; then it is raised to its guarantee. What the round handed out (net) leaves the
 * remainder; the loop ends when nothing remains or nothing moved.
 *
 * Share = max over the deserved dimensions of allocated / deserved.
 *   QueueOrder: smaller share first.
 *   Overused: deserved <= allocated.
 *   Allocatable: allocated + the task's resreq fits deserved in the dimensions it asks for.
 *   JobEnqueueable: minResources + allocated + inqueue - elastic fits the real capability
 *     (jobs without minResources pass); a permitted job's minResources join inqueue.
 *   Preemptive (reclaim may take for the task): the same test as Allocatable.
 *   Reclaimable: victims from queues still above deserved after losing them.
 * Inqueue counts the minResources of Inqueue jobs and, for Running jobs with enough
 * allocated tasks, the part of minResources not yet allocated.
 *
 * The computed deserved replaces sch_queue.deserved in the session's snapshot (which held
 * spec.deserved, a field only the capacity plugin reads), so that status, metrics and the
 * replay tool can show it. */
#include <stdlib.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"

typedef struct queue_attr {
  bool active; /* the queue has jobs */
  int32_t weight;
  sch_resource deserved, allocated, request, elastic, inqueue, guarantee;
  sch_resource real_capability; /* a zero dimension is unlimited */
  double share;
} queue_attr;

typedef struct proportion_state {
  sch_resource total;
  queue_attr *queues;
  int32_t nqueues;
} proportion_state;

static double share_of(int64_t l, int64_t r) {
  if (r == 0)
    return l == 0 ? 0 : 1;
  return (double)l / (double)r;
}

static void update_share(queue_attr *a) {
  /* Volcano iterates deserved's resource names, i.e. its non-zero dimensions. */
  double res = 0, s;
  if (a->deserved.milli_cpu != 0 &&
      (s = share_of(a->allocated.milli_cpu, a->deserved.milli_cpu)) > res)
    res = s;
  if (a->deserved.memory != 0 && (s = share_of(a->allocated.memory, a->deserved.memory)) > res)
    res = s;
  for (int i = 0; i < SCH_MAX_SCALARS; i++) {
    if (a->deserved.scalar[i] != 0 &&
        (s = share_of(a->allocated.scalar[i], a->deserved.scalar[i])) > res)
      res = s;
  }
  a->share = res;
}

static int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* r = min(r, cap) per dimension, where a zero dimension of cap means unlimited
 * (MinDimensionResource with Infinity). */
static void min_capped(sch_resource *r, const sch_resource *cap) {
  if (cap->milli_cpu != 0)
    r->milli_cpu = min64(r->milli_cpu, cap->milli_cpu);
  if (cap->memory != 0)
    r->memory = min64(r->memory, cap->memory);
  for (int i = 0; i < SCH_MAX_SCALARS; i++) {
    if (cap->scalar[i] != 0)
      r->scalar[i] = min64(r->scalar[i], cap->scalar[i]);
  }
}

/* r = min(r, req) per dimension, a zero dimension of req meaning zero (MinDimensionResource
 * with Zero). */
static void min_zero(sch_resource *r, const sch_resource *req) {
  r->milli_cpu = min64(r->milli_cpu, req->milli_cpu);
  r->memory = min64(r->memory, req->memory);
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    r->scalar[i] = min64(r->scalar[i], req->scalar[i]);
}

/* l <= r per dimension with Volcano's epsilons, where a zero dimension of r is unlimited
 * (LessEqual with Infinity). */
static bool fits_capped(const sch_resource *l, const sch_resource *r) {
  if (r->milli_cpu != 0 && l->milli_cpu > sch_add_sat(r->milli_cpu, SCH_MIN_MILLI_CPU))
    return false;
  if (r->memory != 0 && l->memory > sch_add_sat(r->memory, SCH_MIN_MEMORY))
    return false;
  for (int i = 0; i < SCH_MAX_SCALARS; i++) {
    if (r->scalar[i] != 0 && l->scalar[i] > sch_add_sat(r->scalar[i], SCH_MIN_SCALAR))
      return false;
  }
  return true;
}

/* Per dimension max(0, a - b) (Volcano ExceededPart). */
static void exceeded_part(sch_resource *out, const sch_resource *a, const sch_resource *b) {
  out->milli_cpu = max64(0, a->milli_cpu - b->milli_cpu);
  out->memory = max64(0, a->memory - b->memory);
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    out->scalar[i] = max64(0, a->scalar[i] - b->scalar[i]);
}

static queue_attr *attr_of(proportion_state *st, const sch_snapshot *snap, const sch_queue *q) {
  int32_t i = (int32_t)(q - snap->queues);
  return i >= 0 && i < st->nqueues ? &st->queues[i] : NULL;
}

static queue_attr *job_attr(proportion_state *st, const sch_snapshot *snap, int32_t job) {
  if (job < 0 || job >= snap->njobs)
    return NULL;
  int32_t q = snap->jobs[job].queue;
  return q >= 0 && q < st->nqueues ? &st->queues[q] : NULL;
}

/* Rounds of the deserved-share loop at most. Volcano's loop has no bound; with extreme
 * weights, capabilities and guarantees (found by fuzz_session) its remaining room shrinks
 * by a sliver a round and the loop ran for minutes. Ordinary clusters settle in a few
 * rounds. */
#define MAX_ROUNDS 1000

static void compute_deserved(proportion_state *st) {
  sch_resource remaining = st->total;
  bool *met = calloc(st->nqueues > 0 ? (size_t)st->nqueues : 1, sizeof(*met));
  if (met == NULL) {
    KC_WARN("proportion: out of memory computing deserved shares");
    return;
  }
  for (int round = 0;; round++) {
    if (round == MAX_ROUNDS) {
      KC_V(2, "proportion: deserved shares not settled after %d rounds; using them as they are",
           MAX_ROUNDS);
      break;
    }
    int64_t total_weight = 0;
    for (int32_t i = 0; i < st->nqueues; i++) {
      if (st->queues[i].active && !met[i])
        total_weight += st->queues[i].weight;
    }
    if (total_weight == 0)
      break;
    sch_resource old_remaining = remaining, increased = {0}, decreased = {0};
    for (int32_t i = 0; i < st->nqueues; i++) {
      queue_attr *a = &st->queues[i];
      if (!a->active || met[i])
        continue;
      sch_resource old = a->deserved, add = remaining;
      sch_resource_multi(&add, (double)a->weight / (double)total_weight);
      sch_resource_add(&a->deserved, &add);
      min_capped(&a->deserved, &a->real_capability);
      min_zero(&a->deserved, &a->request);
      if (sch_resource_less_equal(&a->request, &a->deserved) ||
          sch_resource_equal(&a->deserved, &old))
        met[i] = true;
      sch_resource_set_max(&a->deserved, &a->guarantee);
      update_share(a);
      sch_resource inc, dec;
      exceeded_part(&inc, &a->deserved, &old);
      exceeded_part(&dec, &old, &a->deserved);
      sch_resource_add(&increased, &inc);
      sch_resource_add(&decreased, &dec);
    }
    sch_resource_sub(&remaining, &increased);
    sch_resource_add(&remaining, &decreased);
    if (sch_resource_is_empty(&remaining) || sch_resource_equal(&remaining, &old_remaining))
      break;
  }
  free(met);
}

static int queue_order(sch_session *ssn, void *ctx, const sch_queue *l, const sch_queue *r) {
  proportion_state *st = ctx;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  const queue_attr *la = attr_of(st, snap, l), *ra = attr_of(st, snap, r);
  if (la == NULL || ra == NULL || la->share == ra->share)
    return 0;
  return la->share < ra->share ? -1 : 1;
}

static bool overused(sch_session *ssn, void *ctx, const sch_queue *q) {
  proportion_state *st = ctx;
  const queue_attr *a = attr_of(st, sch_session_snapshot(ssn), q);
  if (a == NULL)
    return false;
  bool over = sch_resource_less_equal(&a->deserved, &a->allocated);
  sch_session_snapshot(ssn)->queues[q - sch_session_snapshot(ssn)->queues].overused = over;
  if (over)
    KC_V(3, "proportion: queue %s is overused (share %.2f)", q->name, a->share);
  return over;
}

static bool allocatable(sch_session *ssn, void *ctx, const sch_queue *q, const sch_task *t) {
  proportion_state *st = ctx;
  const queue_attr *a = attr_of(st, sch_session_snapshot(ssn), q);
  if (a == NULL)
    return true;
  /* Only the dimensions the task asks for count (Volcano LessEqualWithDimension). */
  sch_resource free_ = a->deserved;
  sch_resource_sub(&free_, &a->allocated);
  unsigned short_dims = sch_resource_insufficient(&t->resreq, &free_);
  if (short_dims == 0)
    return true;
  KC_V(3, "proportion: queue %s has no room for task %s (share %.2f)", q->name,
       t->pod && t->pod->name ? t->pod->name : "?", a->share);
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  if (t->job >= 0 && t->job < snap->njobs) {
    /* The numbers the operator compares: what the pod asks and what the queue holds. */
    char req[256], des[256], alloc[256];
    sch_resource_human(snap, &t->resreq, short_dims, req, sizeof(req));
    sch_resource_human(snap, &a->deserved, short_dims, des, sizeof(des));
    sch_resource_human(snap, &a->allocated, short_dims, alloc, sizeof(alloc));
    sch_session_job_queue_reason(ssn, &snap->jobs[t->job],
                                 "queue %s resource quota insufficient: pod requests %s; the "
                                 "queue's deserved share is %s, %s allocated",
                                 q->name, req, des, alloc);
  }
  return false;
}

static int job_enqueueable(sch_session *ssn, void *ctx, const sch_job *j) {
  proportion_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  queue_attr *a = job_attr(st, snap, (int32_t)(j - snap->jobs));
  if (a == NULL || !j->has_min_resources)
    return SCH_PERMIT;
  sch_resource need = j->min_resources;
  sch_resource_add(&need, &a->allocated);
  sch_resource_add(&need, &a->inqueue);
  sch_resource_sub(&need, &a->elastic);
  if (fits_capped(&need, &a->real_capability)) {
    /* Its gated pods' requests are not held (Volcano DeductSchGatedResources). */
    sch_resource held = j->min_resources;
    sch_job_deduct_gated(j, &held);
    sch_resource_add(&a->inqueue, &held);
    return SCH_PERMIT;
  }
  const char *qname = j->queue >= 0 && j->queue < snap->nqueues ? snap->queues[j->queue].name : "";
  /* What is left of the queue's capability (or of the cluster, less the guarantees of the
   * other queues) against what the gang needs to start. */
  sch_resource used = need, left = a->real_capability;
  sch_resource_sub(&used, &j->min_resources);
  sch_resource_sub(&left, &used);
  unsigned dims = sch_resource_insufficient(&j->min_resources, &left);
  sch_session_gang_quota_reason(ssn, j, qname, &left, &a->real_capability, dims);
  KC_V(3, "proportion: job %s rejected: queue %s resource quota insufficient", j->key, qname);
  return SCH_REJECT;
}

static bool reclaimable(sch_session *ssn, void *ctx, const sch_task *reclaimer,
                        const int32_t *cands, size_t n, int32_t *victims, size_t *nvictims) {
  proportion_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  *nvictims = 0;
  /* What each queue keeps as victims are taken, per queue (Volcano's allocations map). */
  sch_resource *left = calloc(st->nqueues > 0 ? (size_t)st->nqueues : 1, sizeof(*left));
  bool *seen = calloc(st->nqueues > 0 ? (size_t)st->nqueues : 1, sizeof(*seen));
  if (left == NULL || seen == NULL) {
    free(left);
    free(seen);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    const sch_task *v = &snap->tasks[cands[i]];
    if (v->job < 0 || v->job >= snap->njobs)
      continue;
    int32_t q = snap->jobs[v->job].queue;
    if (q < 0 || q >= st->nqueues)
      continue;
    if (!seen[q]) {
      left[q] = st->queues[q].allocated;
      seen[q] = true;
    }
    /* LessPartly: the queue holds less than the reclaimer wants in some dimension. */
    if (sch_resource_insufficient(&reclaimer->resreq, &left[q]) != 0)
      continue;
    if (!sch_resource_less_equal(&left[q], &st->queues[q].deserved)) {
      sch_resource_sub(&left[q], &v->resreq);
      victims[(*nvictims)++] = cands[i];
    }
  }
  free(left);
  free(seen);
  return true;
}

static void on_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  queue_attr *a = job_attr(ctx, sch_session_snapshot(ssn), t->job);
  if (a == NULL)
    return;
  sch_resource_add(&a->allocated, &t->resreq);
  update_share(a);
}

static void on_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  queue_attr *a = job_attr(ctx, sch_session_snapshot(ssn), t->job);
  if (a == NULL)
    return;
  sch_resource_sub(&a->allocated, &t->resreq);
  update_share(a);
}

/* Tasks in allocated statuses, and the part of minResources a running job has not used
 * yet (Volcano util.GetInqueueResource). */
static void account_job(const sch_snapshot *snap, const sch_job *j, queue_attr *a) {
  int32_t nallocated = sch_job_tally(snap, j, &a->allocated, &a->request);
  if (j->phase == SCH_PG_INQUEUE && j->has_min_resources) {
    sch_resource held = j->min_resources;
    sch_job_deduct_gated(j, &held);
    sch_resource_add(&a->inqueue, &held);
  }
  if (j->phase == SCH_PG_RUNNING && j->has_min_resources && nallocated >= j->min_available) {
    sch_resource rest;
    exceeded_part(&rest, &j->min_resources, &j->allocated);
    sch_job_deduct_gated(j, &rest);
    sch_resource_add(&a->inqueue, &rest);
  }
  /* Elastic: what the job holds above its minResources. */
  if (j->has_min_resources) {
    sch_resource el;
    exceeded_part(&el, &j->allocated, &j->min_resources);
    sch_resource_add(&a->elastic, &el);
  }
}

static int proportion_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  (void)conf;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  proportion_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  *state = st;
  st->total = snap->total_allocatable;
  st->nqueues = snap->nqueues;
  st->queues = calloc(snap->nqueues > 0 ? (size_t)snap->nqueues : 1, sizeof(*st->queues));
  if (st->queues == NULL)
    return KC_ENOMEM;

  sch_resource total_guarantee = {0};
  for (int32_t i = 0; i < snap->nqueues; i++)
    sch_resource_add(&total_guarantee, &snap->queues[i].guarantee);
  for (int32_t i = 0; i < snap->nqueues; i++) {
    const sch_queue *q = &snap->queues[i];
    queue_attr *a = &st->queues[i];
    a->weight = q->weight > 0 ? q->weight : 1;
    a->guarantee = q->guarantee;
    a->real_capability = st->total;
    sch_resource_sub(&a->real_capability, &total_guarantee);
    sch_resource_add(&a->real_capability, &q->guarantee);
    if (q->has_capability)
      min_capped(&a->real_capability, &q->capability);
  }
  for (int32_t j = 0; j < snap->njobs; j++) {
    const sch_job *job = &snap->jobs[j];
    if (job->queue < 0 || job->queue >= st->nqueues)
      continue;
    st->queues[job->queue].active = true;
    account_job(snap, job, &st->queues[job->queue]);
  }
  compute_deserved(st);
  for (int32_t i = 0; i < snap->nqueues; i++) {
    snap->queues[i].deserved = st->queues[i].deserved;
    update_share(&st->queues[i]);
  }

  int rc = sch_add_queue_order_fn(ssn, queue_order, st);
  if (rc == 0)
    rc = sch_add_reclaimable_fn(ssn, reclaimable, st);
  if (rc == 0)
    rc = sch_add_overused_fn(ssn, overused, st);
  if (rc == 0)
    rc = sch_add_allocatable_fn(ssn, allocatable, st);
  /* Volcano's Preemptive is the same test: the queue stays within deserved with the task. */
  if (rc == 0)
    rc = sch_add_preemptive_fn(ssn, allocatable, st);
  if (rc == 0)
    rc = sch_add_job_enqueueable_fn(ssn, job_enqueueable, st);
  if (rc == 0)
    rc = sch_add_event_handler(ssn, on_allocate, on_deallocate, st);
  return rc;
}

static void proportion_close(sch_session *ssn, void *state) {
  proportion_state *st = state;
  if (st == NULL)
    return;
  /* The queue metrics of the queues with jobs, as Volcano's proportion leaves them. */
  sch_snapshot *snap = sch_session_snapshot(ssn);
  for (int32_t i = 0; st->queues && i < st->nqueues && i < snap->nqueues; i++) {
    const queue_attr *a = &st->queues[i];
    if (!a->active)
      continue;
    sch_queue *q = &snap->queues[i];
    q->has_share = q->has_weight = true;
    q->share = a->share;
    q->request = a->request;
    q->inqueue = a->inqueue;
  }
  free(st->queues);
  free(st);
}

const sch_plugin sch_plugin_proportion = {
    .name = "proportion",
    .open = proportion_open,
    .close = proportion_close,
};
