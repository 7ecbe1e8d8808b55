/* drf (Volcano pkg/scheduler/plugins/drf): dominant resource fairness between jobs.
 *
 * A job's share is its dominant share: the largest allocated / total over the resources the
 * cluster has (total = allocatable of the schedulable nodes; allocated = resreq of the tasks
 * in allocated statuses). JobOrder puts the smaller share first; the allocate/deallocate
 * handlers keep shares current while the session places tasks. Preemptable keeps a victim
 * when the preemptor's share after taking its request stays below (or within 1e-6 of) the
 * victim job's share after losing the victim.
 *
 * Hierarchical DRF (enableHierarchy: true) and namespace order are not implemented: with
 * enableHierarchy the plugin logs that and behaves as plain DRF. Volcano refuses drf
 * hierarchy together with proportion anyway, and both are off by default. */
#include <math.h>
#include <stdlib.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"

#define SHARE_DELTA 0.000001

typedef struct drf_attr {
  sch_resource allocated;
  double share;
} drf_attr;

typedef struct drf_state {
  sch_resource total;
  int nscalars;
  drf_attr *jobs; /* one per snapshot job */
  int32_t njobs;
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
  (void)ssn;
}

static void on_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  drf_state *st = ctx;
  if (t->job < 0 || t->job >= st->njobs)
    return;
  drf_attr *a = &st->jobs[t->job];
  sch_resource_sub(&a->allocated, &t->resreq);
  a->share = dominant_share(st, &a->allocated);
  (void)ssn;
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
  if (conf->has_enable[SCH_EXT_HIERARCHY] && (conf->enabled & (1u << SCH_EXT_HIERARCHY)))
    KC_WARN("drf: enableHierarchy is not supported by this scheduler; using plain DRF");
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
  int rc = sch_add_preemptable_fn(ssn, preemptable, st);
  if (rc == 0)
    rc = sch_add_job_order_fn(ssn, job_order, st);
  if (rc == 0)
    rc = sch_add_event_handler(ssn, on_allocate, on_deallocate, st);
  return rc;
}

static void drf_close(sch_session *ssn, void *state) {
  (void)ssn;
  drf_state *st = state;
  if (st == NULL)
    return;
  free(st->jobs);
  free(st);
}

const sch_plugin sch_plugin_drf = {
    .name = "drf",
    .open = drf_open,
    .close = drf_close,
};
