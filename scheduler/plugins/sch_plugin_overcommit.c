/* overcommit (Volcano pkg/scheduler/plugins/overcommit): the enqueue gate on the whole
 * cluster.
 *
 * idle = allocatable of the Ready nodes * overcommit-factor - their used; inqueue = minResources of
 * the Inqueue jobs plus, for Running jobs with at least minMember running pods, the part of
 * minResources they have not allocated yet. A job with minResources is enqueueable when
 * inqueue + its minResources <= idle; a job without minResources always is. Each enqueued
 * job's minResources join inqueue, so one session admits only as much as fits.
 * overcommit-factor defaults to 1.2; a value below 1 is refused (logged) and the default
 * used. */
#include <stdlib.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"

#define DEFAULT_FACTOR 1.2

typedef struct overcommit_state {
  double factor;
  sch_resource idle, inqueue;
} overcommit_state;

static void add_unallocated_min(sch_resource *into, const sch_job *j) {
  sch_resource rest = j->min_resources;
  sch_resource_sub(&rest, &j->allocated);
  if (rest.milli_cpu < 0)
    rest.milli_cpu = 0;
  if (rest.memory < 0)
    rest.memory = 0;
  for (int i = 0; i < SCH_MAX_SCALARS; i++) {
    if (rest.scalar[i] < 0)
      rest.scalar[i] = 0;
  }
  sch_job_deduct_gated(j, &rest);
  sch_resource_add(into, &rest);
}

static int job_enqueueable(sch_session *ssn, void *ctx, const sch_job *j) {
  overcommit_state *st = ctx;
  if (!j->has_min_resources) {
    KC_V(4, "overcommit: job %s has no minResources, permit", j->key);
    return SCH_PERMIT;
  }
  sch_resource need = st->inqueue;
  sch_resource_add(&need, &j->min_resources);
  if (sch_resource_less_equal(&need, &st->idle))
    return SCH_PERMIT;
  KC_V(4, "overcommit: resources in the cluster are overused, job %s stays pending", j->key);
  sch_snapshot *snap = sch_session_snapshot(ssn);
  sch_resource left = st->idle;
  sch_resource_sub(&left, &st->inqueue);
  unsigned dims = sch_resource_insufficient(&j->min_resources, &left);
  char gang[256], lft[256];
  sch_resource_human(snap, &j->min_resources, dims, gang, sizeof(gang));
  sch_resource_human(snap, &left, dims, lft, sizeof(lft));
  sch_session_job_queue_reason(ssn, j,
                               "resource in cluster is overused: the gang needs %s "
                               "(minResources); the cluster has %s left (allocatable x %g "
                               "overcommit, less what runs and what admitted gangs hold)",
                               gang, lft, st->factor);
  return SCH_REJECT;
}

static void job_enqueued(sch_session *ssn, void *ctx, const sch_job *j) {
  (void)ssn;
  overcommit_state *st = ctx;
  if (j->has_min_resources)
    sch_resource_add(&st->inqueue, &j->min_resources);
}

static int overcommit_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  overcommit_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  *state = st;
  st->factor = sch_args_double(&conf->args, "overcommit-factor", DEFAULT_FACTOR);
  if (st->factor < 1.0) {
    KC_WARN("overcommit: invalid overcommit-factor %g (it cannot be less than 1), using %g",
            st->factor, DEFAULT_FACTOR);
    st->factor = DEFAULT_FACTOR;
  }
  sch_resource used = {0};
  for (int32_t i = 0; i < snap->nnodes; i++) {
    /* Volcano's session holds only Ready nodes; cordoned ones still count. */
    if (!snap->nodes[i].ready)
      continue;
    sch_resource_add(&st->idle, &snap->nodes[i].allocatable);
    sch_resource_add(&used, &snap->nodes[i].used);
  }
  sch_resource_multi(&st->idle, st->factor);
  sch_resource_sub(&st->idle, &used);

  for (int32_t j = 0; j < snap->njobs; j++) {
    const sch_job *job = &snap->jobs[j];
    if (!job->has_min_resources)
      continue;
    if (job->phase == SCH_PG_INQUEUE) {
      sch_resource held = job->min_resources;
      sch_job_deduct_gated(job, &held);
      sch_resource_add(&st->inqueue, &held);
      continue;
    }
    int32_t running =
        job->pod_group && job->pod_group->status ? job->pod_group->status->running : 0;
    if (job->phase == SCH_PG_RUNNING && running >= job->min_available)
      add_unallocated_min(&st->inqueue, job);
  }
  int rc = sch_add_job_enqueueable_fn(ssn, job_enqueueable, st);
  if (rc == 0)
    rc = sch_add_job_enqueued_fn(ssn, job_enqueued, st);
  return rc;
}

static void overcommit_close(sch_session *ssn, void *state) {
  (void)ssn;
  free(state);
}

const sch_plugin sch_plugin_overcommit = {
    .name = "overcommit",
    .open = overcommit_open,
    .close = overcommit_close,
};
