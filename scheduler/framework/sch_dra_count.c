/* DRA devices counted like extended resources, the resource named by the DeviceClass
 * (issue #29): a queue's capability, deserved and guarantee ("gpu.example.com: 4") then
 * limit them through the capacity and proportion plugins and the enqueue action, and the
 * why-pending line names them as it names nvidia.com/gpu.
 *
 *  - A task asks, per class, for what its claims ask: an allocated claim for the devices of
 *    its allocation (by the class of the request each result answers), an unallocated one
 *    for each request's count (exactly, or the first of firstAvailable), allocationMode All
 *    counting one device until it is allocated. A claim several pods share counts once,
 *    with the first of them in the snapshot. A claim not created yet counts nothing.
 *  - A node offers, per class, the devices on it the class selects (node-local slices and
 *    those of slices for several nodes), taken or free: idle = offered - what its pods ask,
 *    as for any resource. Only classes some task, Queue or PodGroup names are counted.
 *  - A job whose PodGroup has minResources without a class gets the devices of its first
 *    minMember tasks there (kiln-controller computes minResources from the pods' requests,
 *    which do not say what their claims ask).
 * Whether a node can give a pod its devices stays DynamicResources' decision (sch_dra.c):
 * the devices are in a task's resreq, not in init_resreq, which the node fit reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_strmap.h"
#include "sch_dra.h"
#include "sch_int.h"

/* The exact request (or subrequest) a result's request name ("req" or "req/sub") names. */
static const Kiln__DraExactRequest *request_named(const Kiln__DraDeviceClaim *dc,
                                                  const char *name) {
  const char *slash = strchr(name, '/');
  size_t len = slash ? (size_t)(slash - name) : strlen(name);
  for (size_t i = 0; dc && i < dc->n_requests; i++) {
    const Kiln__DraDeviceRequest *r = dc->requests[i];
    if (!r->name || strlen(r->name) != len || strncmp(r->name, name, len) != 0)
      continue;
    if (r->exactly)
      return slash ? NULL : r->exactly;
    for (size_t k = 0; slash && k < r->n_first_available; k++)
      if (r->first_available[k]->name && strcmp(r->first_available[k]->name, slash + 1) == 0)
        return r->first_available[k];
  }
  return NULL;
}

static void add_class(sch_snapshot *s, sch_resource *r, const char *cls, int64_t n) {
  if (!cls || !*cls || n <= 0)
    return;
  int k = sch__snapshot_scalar_slot(s, cls);
  if (k >= 0)
    r->scalar[k] = sch_add_sat(r->scalar[k], sch_mul_sat(n, 1000));
}

/* What claim c asks for, into r. */
static void claim_devices(sch_snapshot *s, const Kiln__ResourceClaim *c, sch_resource *r) {
  const Kiln__DraDeviceClaim *dc = c->spec ? c->spec->devices : NULL;
  const Kiln__DraAllocationResult *a = c->status ? c->status->allocation : NULL;
  if (a && a->devices) {
    for (size_t i = 0; i < a->devices->n_results; i++) {
      const Kiln__DraRequestResult *res = a->devices->results[i];
      const Kiln__DraExactRequest *x = request_named(dc, res->request ? res->request : "");
      if (x)
        add_class(s, r, x->device_class_name, 1);
    }
    return;
  }
  for (size_t i = 0; dc && i < dc->n_requests; i++) {
    const Kiln__DraDeviceRequest *rq = dc->requests[i];
    const Kiln__DraExactRequest *x = rq->exactly             ? rq->exactly
                                     : rq->n_first_available ? rq->first_available[0]
                                                             : NULL;
    if (!x)
      continue;
    bool all = x->allocation_mode && strcmp(x->allocation_mode, "All") == 0;
    add_class(s, r, x->device_class_name, all || !x->has_count ? 1 : x->count);
  }
}

/* The name of the claim of the pod's i-th spec.resourceClaims entry; NULL when a template's
 * claim is not made yet (or the template asked for none). */
static const char *claim_name(const Kiln__Pod *p, size_t i) {
  const Kiln__PodResourceClaim *pc = p->resource_claims[i];
  if (pc->resource_claim_name && pc->resource_claim_name[0])
    return pc->resource_claim_name;
  for (size_t k = 0; k < p->n_resource_claim_statuses; k++) {
    const Kiln__PodResourceClaimStatus *st = p->resource_claim_statuses[k];
    if (st->name && pc->name && strcmp(st->name, pc->name) == 0)
      return st->resource_claim_name && st->resource_claim_name[0] ? st->resource_claim_name : NULL;
  }
  return NULL;
}

typedef struct counter {
  kc_strmap claims;   /* "ns/name" -> index + 1 */
  bool *counted;      /* per claim */
  sch_resource *gang; /* per job: the devices of its first minMember tasks */
  int32_t *ngang;     /* per job: how many tasks those are */
} counter;

static void task_devices(sch_snapshot *s, counter *c, sch_task *t) {
  const Kiln__Pod *p = t->pod;
  sch_resource dv = {0};
  for (size_t i = 0; i < p->n_resource_claims; i++) {
    const char *name = claim_name(p, i);
    char key[600];
    if (!name || (size_t)snprintf(key, sizeof(key), "%s/%s", p->namespace_ ? p->namespace_ : "",
                                  name) >= sizeof(key))
      continue;
    int32_t ci = (int32_t)(intptr_t)kc_strmap_get(&c->claims, key) - 1;
    if (ci < 0 || c->counted[ci])
      continue;
    c->counted[ci] = true;
    claim_devices(s, s->msg->resource_claims[ci], &dv);
  }
  sch_resource_add(&t->resreq, &dv);
  if (t->job >= 0 && c->ngang[t->job] < s->jobs[t->job].min_available) {
    c->ngang[t->job]++;
    sch_resource_add(&c->gang[t->job], &dv);
  }
}

/* A job's minResources takes its gang's devices in the dimensions it leaves empty. */
static void gang_devices(sch_snapshot *s, const counter *c) {
  for (int32_t j = 0; j < s->njobs; j++) {
    sch_job *job = &s->jobs[j];
    if (!job->has_min_resources)
      continue;
    for (int k = 0; k < SCH_MAX_SCALARS; k++)
      if (job->min_resources.scalar[k] == 0)
        job->min_resources.scalar[k] = c->gang[j].scalar[k];
  }
}

static int index_claims(const Kiln__Snapshot *m, counter *c) {
  for (size_t i = 0; i < m->n_resource_claims; i++) {
    const Kiln__ObjectMeta *md = m->resource_claims[i]->metadata;
    char key[600];
    if (!md || !md->name ||
        (size_t)snprintf(key, sizeof(key), "%s/%s", md->namespace_ ? md->namespace_ : "",
                         md->name) >= sizeof(key) ||
        kc_strmap_has(&c->claims, key))
      continue;
    if (kc_strmap_put(&c->claims, key, (void *)(intptr_t)(i + 1), NULL) < 0)
      return KC_ENOMEM;
  }
  return 0;
}

int sch__dra_count_tasks(sch_snapshot *s) {
  const Kiln__Snapshot *m = s->msg;
  if (m->n_resource_claims == 0)
    return 0;
  counter c = {0};
  kc_strmap_init(&c.claims, KC_STRMAP_COPY_KEYS);
  size_t nj = s->njobs ? (size_t)s->njobs : 1;
  c.counted = calloc(m->n_resource_claims, sizeof(*c.counted));
  c.gang = calloc(nj, sizeof(*c.gang));
  c.ngang = calloc(nj, sizeof(*c.ngang));
  int rc = c.counted && c.gang && c.ngang ? index_claims(m, &c) : KC_ENOMEM;
  for (int32_t i = 0; rc == 0 && i < s->ntasks; i++)
    if (s->tasks[i].pod->n_resource_claims > 0)
      task_devices(s, &c, &s->tasks[i]);
  if (rc == 0)
    gang_devices(s, &c);
  kc_strmap_close(&c.claims, NULL);
  free(c.counted);
  free(c.gang);
  free(c.ngang);
  return rc;
}

/* Node ni offers n devices of the class in scalar slot k. */
static void offer(sch_snapshot *s, int32_t ni, int k, int64_t n) {
  sch_node *nd = &s->nodes[ni];
  int64_t v = sch_mul_sat(n, 1000);
  nd->allocatable.scalar[k] = sch_add_sat(nd->allocatable.scalar[k], v);
  nd->capability.scalar[k] = sch_add_sat(nd->capability.scalar[k], v);
  nd->idle.scalar[k] = sch_add_sat(nd->idle.scalar[k], v);
  if (nd->ready)
    s->total_allocatable.scalar[k] = sch_add_sat(s->total_allocatable.scalar[k], v);
}

/* Whether a class before the i-th has its name (the first one counts). */
static bool named_before(const Kiln__Snapshot *m, size_t i) {
  const char *name = m->device_classes[i]->metadata->name;
  for (size_t k = 0; k < i; k++) {
    const Kiln__ObjectMeta *md = m->device_classes[k]->metadata;
    if (md && md->name && strcmp(md->name, name) == 0)
      return true;
  }
  return false;
}

int sch__dra_count_nodes(sch_snapshot *s) {
  const Kiln__Snapshot *m = s->msg;
  bool any = false;
  for (size_t i = 0; i < m->n_device_classes && !any && m->n_resource_slices; i++) {
    const Kiln__ObjectMeta *md = m->device_classes[i]->metadata;
    any = md && md->name && sch_snapshot_scalar(s, md->name) >= 0;
  }
  if (!any)
    return 0;
  int rc = sch_dra_new(s, &s->dra_counted);
  if (rc)
    return rc;
  for (size_t i = 0; i < m->n_device_classes; i++) {
    const Kiln__ObjectMeta *md = m->device_classes[i]->metadata;
    int k = md && md->name && !named_before(m, i) ? sch_snapshot_scalar(s, md->name) : -1;
    for (int32_t ni = 0; k >= 0 && ni < s->nnodes; ni++)
      offer(s, ni, k, sch_dra_class_devices(s->dra_counted, md->name, ni));
  }
  return 0;
}
