/* overcommit (Volcano pkg/scheduler/plugins/overcommit): the enqueue gate on the whole
 * cluster.
 *
 * idle = allocatable of the Ready nodes * factor - their used, per dimension; inqueue =
 * minResources of the Inqueue jobs plus, for Running jobs with at least minMember allocated
 * tasks, the part of minResources they have not allocated yet. A job with minResources is
 * enqueueable when inqueue + its minResources <= idle in the dimensions its minResources asks
 * for (Volcano LessEqualWithDimension: room another gang holds in a resource this one does
 * not ask for never blocks it); a job without minResources always is. Each enqueued job's
 * minResources join inqueue, so one session admits only as much as fits.
 *
 * overcommit-factor (default 1.2) scales every resource; overcommit-factor.<resource> (cpu,
 * memory, nvidia.com/gpu, ...) one resource. A factor below 1 is refused (logged) and 1.2
 * used instead. */
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"

#define DEFAULT_FACTOR 1.2
#define FACTOR_KEY     "overcommit-factor"
#define FACTOR_PREFIX  FACTOR_KEY "."

typedef struct overcommit_state {
  double factor;
  sch_resource idle, inqueue;
} overcommit_state;

static double checked_factor(const char *key, double v) {
  if (v >= 1.0)
    return v;
  KC_WARN("overcommit: invalid input %g for %s overcommit factor (it cannot be less than 1), "
          "using %g",
          v, key, DEFAULT_FACTOR);
  return DEFAULT_FACTOR;
}

/* The dimension of r a factor's resource name means, NULL for a resource no node has. */
static int64_t *factor_dim(const sch_snapshot *snap, sch_resource *r, const char *name) {
  if (strcmp(name, "cpu") == 0)
    return &r->milli_cpu;
  if (strcmp(name, "memory") == 0)
    return &r->memory;
  for (int i = 0; i < snap->nscalars && i < SCH_MAX_SCALARS; i++)
    if (snap->scalar_names[i] && strcmp(snap->scalar_names[i], name) == 0)
      return &r->scalar[i];
  return NULL;
}

/* total * overcommit-factor, then each overcommit-factor.<resource> on its own dimension
 * (Volcano ScaleResourcesWithRatios). */
static void scale_total(const sch_snapshot *snap, const sch_plugin_conf *conf, double factor,
                        sch_resource *total) {
  sch_resource raw = *total;
  sch_resource_multi(total, factor);
  for (size_t i = 0; i < conf->args.n; i++) {
    const char *key = conf->args.items[i].key;
    if (strncmp(key, FACTOR_PREFIX, strlen(FACTOR_PREFIX)) != 0)
      continue;
    const char *name = key + strlen(FACTOR_PREFIX);
    double f = checked_factor(name, sch_args_double(&conf->args, key, factor));
    int64_t *dim = factor_dim(snap, total, name);
    if (dim != NULL)
      *dim = sch_resource_scale(*(factor_dim(snap, &raw, name)), f);
  }
}

/* Volcano CalculateAllocatedTaskNum: tasks Allocated, Binding, Bound or Running. */
static int32_t allocated_tasks(const sch_job *j) {
  return j->count[SCH_TASK_ALLOCATED] + j->count[SCH_TASK_BINDING] + j->count[SCH_TASK_BOUND] +
         j->count[SCH_TASK_RUNNING];
}

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
  if (sch_resource_exceeds_in(&need, &st->idle, &j->min_resources) == 0)
    return SCH_PERMIT;
  KC_V(4, "overcommit: resources in the cluster are overused, job %s stays pending", j->key);
  sch_snapshot *snap = sch_session_snapshot(ssn);
  sch_resource left = st->idle;
  sch_resource_sub(&left, &st->inqueue);
  unsigned dims = sch_resource_exceeds_in(&need, &st->idle, &j->min_resources);
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
  if (!j->has_min_resources)
    return;
  /* What its gated pods ask for is not held until their gates go (DeductSchGatedResources). */
  sch_resource held = j->min_resources;
  sch_job_deduct_gated(j, &held);
  sch_resource_add(&st->inqueue, &held);
}

static int overcommit_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  overcommit_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  *state = st;
  st->factor = checked_factor(FACTOR_KEY, sch_args_double(&conf->args, FACTOR_KEY, DEFAULT_FACTOR));
  sch_resource used = {0};
  for (int32_t i = 0; i < snap->nnodes; i++) {
    /* Volcano's session holds only Ready nodes; cordoned ones still count. */
    if (!snap->nodes[i].ready)
      continue;
    sch_resource_add(&st->idle, &snap->nodes[i].allocatable);
    sch_resource_add(&used, &snap->nodes[i].used);
  }
  scale_total(snap, conf, st->factor, &st->idle);
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
    if (job->phase == SCH_PG_RUNNING && allocated_tasks(job) >= job->min_available)
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
