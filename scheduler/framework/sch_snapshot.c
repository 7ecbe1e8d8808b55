/* Snapshot construction from a Kiln__Snapshot message (Volcano cache Snapshot(),
 * getOrCreateJob, createShadowPodGroup, NodeInfo accounting). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_codec.h"
#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"
#include "sch_dra.h"
#include "sch_hypernode.h"
#include "sch_volume.h"

static const char *const status_names[] = {
#define XX(name, str) str,
    SCH_TASK_STATUS_MAP(XX)
#undef XX
};

const char *sch_task_status_str(sch_task_status s) {
  return (unsigned)s < SCH_TASK__COUNT ? status_names[s] : "Unknown";
}

bool sch_task_status_allocated(sch_task_status s) {
  return s == SCH_TASK_BOUND || s == SCH_TASK_BINDING || s == SCH_TASK_RUNNING ||
         s == SCH_TASK_ALLOCATED;
}

static const char *const phase_names[] = {"Pending", "Inqueue", "Running", "Unknown", "Completed"};

const char *sch_pg_phase_str(sch_pg_phase p) {
  return (unsigned)p <= SCH_PG_COMPLETED ? phase_names[p] : "Pending";
}

sch_pg_phase sch_pg_phase_parse(const char *s) {
  if (s)
    for (unsigned i = 0; i <= SCH_PG_COMPLETED; i++)
      if (strcmp(s, phase_names[i]) == 0)
        return (sch_pg_phase)i;
  return SCH_PG_PENDING;
}

/* ---- helpers ---- */

static int own(sch_snapshot *s, char *str) {
  if (!str)
    return KC_ENOMEM;
  if (s->nowned == s->cap_owned) {
    size_t cap = s->cap_owned ? s->cap_owned * 2 : 16;
    char **v = realloc(s->owned, cap * sizeof(*v));
    if (!v) {
      free(str);
      return KC_ENOMEM;
    }
    s->owned = v;
    s->cap_owned = cap;
  }
  s->owned[s->nowned++] = str;
  return 0;
}

/* The names Volcano's NewResource keeps as scalars (IsScalarResourceName, count/ names
 * skipped). A PodGroup's minResources also carries the quota names of the pod quota
 * evaluator (count/pods, requests.cpu, limits.memory, ...): no node offers those, so
 * counting them would keep every such gang out of the queue. */
static bool scalar_name(const char *name) {
  if (strncmp(name, "count/", 6) == 0)
    return false;
  if (strncmp(name, "hugepages-", 10) == 0 || strncmp(name, "attachable-volumes-", 19) == 0 ||
      strstr(name, "kubernetes.io/"))
    return true;
  return strchr(name, '/') && strncmp(name, "requests.", 9) != 0;
}

/* A DeviceClass's name (gpu.example.com) in a Queue's or PodGroup's resources counts its
 * devices (sch_dra_count.c). */
static bool device_class_name(const sch_snapshot *s, const char *name) {
  const Kiln__Snapshot *m = s->msg;
  for (size_t i = 0; i < m->n_device_classes; i++) {
    const Kiln__ObjectMeta *md = m->device_classes[i]->metadata;
    if (md && md->name && strcmp(md->name, name) == 0)
      return true;
  }
  return false;
}

static void res_from(sch_snapshot *s, const Kiln__Resource *r, sch_resource *out) {
  sch_resource_clear(out);
  if (!r)
    return;
  out->milli_cpu = r->milli_cpu;
  out->memory = r->memory;
  if (r->ephemeral_storage > 0) {
    int k = sch__snapshot_scalar_slot(s, "ephemeral-storage");
    if (k >= 0)
      out->scalar[k] =
          r->ephemeral_storage > INT64_MAX / 1000 ? INT64_MAX : r->ephemeral_storage * 1000;
  }
  for (size_t i = 0; i < r->n_scalar; i++) {
    const Kiln__ResourceQuantity *q = r->scalar[i];
    if (!q || !q->name || q->milli_value == 0 ||
        !(scalar_name(q->name) || device_class_name(s, q->name)))
      continue;
    int k = sch__snapshot_scalar_slot(s, q->name);
    if (k >= 0)
      out->scalar[k] = sch_add_sat(out->scalar[k], q->milli_value);
  }
}

/* RFC 3339 -> Unix seconds through the common parser (fractions, UTC offsets); 0 when
 * absent or unparsable, which orders such an object first, as a zero time does in Volcano. */
static int64_t parse_time(const char *ts) {
  int64_t t = 0;
  if (!ts || !*ts || kc_time_parse(ts, &t) != 0)
    return 0;
  return t;
}

static int put_index(kc_strmap *m, const char *key, int32_t idx) {
  int rc = kc_strmap_put(m, key, (void *)(intptr_t)(idx + 1), NULL);
  return rc < 0 ? rc : 0;
}

/* "ns/name" into buf (cap bytes); NULL when it does not fit. Every session keys each cached
 * pod and PodGroup so: asprintf's formatting and heap round trip were a third of building
 * the snapshot (perf, 200 Jobs of 10 with 2,000 running pods). */
static char *ns_key(char *buf, size_t cap, const char *ns, const char *name) {
  size_t a = strlen(ns), b = strlen(name);
  if (a + b + 2 > cap)
    return NULL;
  memcpy(buf, ns, a);
  buf[a] = '/';
  memcpy(buf + a + 1, name, b + 1);
  return buf;
}

/* ns_key's result, owned by the snapshot (freed with it); NULL when out of memory. */
static char *owned_key(sch_snapshot *s, const char *ns, const char *name) {
  size_t n = strlen(ns) + strlen(name) + 2;
  char *key = malloc(n);
  if (!key)
    return NULL;
  ns_key(key, n, ns, name);
  return own(s, key) < 0 ? NULL : key;
}

static int32_t get_index(const kc_strmap *m, const char *key) {
  return (int32_t)(intptr_t)kc_strmap_get(m, key) - 1;
}

int32_t sch_snapshot_node(const sch_snapshot *snap, const char *name) {
  return get_index(&snap->node_index, name);
}
int32_t sch_snapshot_job(const sch_snapshot *snap, const char *ns_name) {
  return get_index(&snap->job_index, ns_name);
}
int32_t sch_snapshot_queue(const sch_snapshot *snap, const char *name) {
  return get_index(&snap->queue_index, name);
}

void sch_node_future_idle(const sch_node *n, sch_resource *out) {
  *out = n->idle;
  sch_resource_add(out, &n->releasing);
  sch_resource_sub(out, &n->pipelined);
}

int32_t sch_job_ready_num(const sch_job *j) {
  return j->count[SCH_TASK_BOUND] + j->count[SCH_TASK_BINDING] + j->count[SCH_TASK_RUNNING] +
         j->count[SCH_TASK_ALLOCATED] + j->count[SCH_TASK_SUCCEEDED];
}
int32_t sch_job_waiting_num(const sch_job *j) {
  return j->count[SCH_TASK_PIPELINED];
}
int32_t sch_job_valid_num(const sch_job *j) {
  return sch_job_ready_num(j) + j->count[SCH_TASK_PENDING] + j->count[SCH_TASK_PIPELINED];
}
void sch_job_deduct_gated(const sch_job *j, sch_resource *r) {
  if (j->gated == 0)
    return;
  sch_resource zero = {0};
  sch_resource_sub(r, &j->gated_resreq);
  sch_resource_set_max(r, &zero);
}

int32_t sch_job_pending_best_effort_num(const sch_snapshot *snap, const sch_job *j) {
  (void)snap;
  return j->pending_best_effort;
}

int32_t sch_job_tally(const sch_snapshot *snap, const sch_job *j, sch_resource *allocated,
                      sch_resource *request) {
  int32_t nallocated = 0;
  for (int32_t k = 0; k < j->ntasks; k++) {
    const sch_task *t = &snap->tasks[j->tasks[k]];
    if (sch_task_status_allocated(t->status)) {
      sch_resource_add(allocated, &t->resreq);
      sch_resource_add(request, &t->resreq);
      nallocated++;
    } else if (t->status == SCH_TASK_PENDING) {
      sch_resource_add(request, &t->resreq);
    }
  }
  return nallocated;
}

/* ---- node accounting ---- */

void sch__node_add_task(sch_snapshot *snap, int32_t ti, int32_t ni) {
  sch_task *t = &snap->tasks[ti];
  sch_node *n = &snap->nodes[ni];
  t->node = ni;
  t->node_prev = -1;
  t->node_next = n->task_head;
  if (n->task_head >= 0)
    snap->tasks[n->task_head].node_prev = ti;
  n->task_head = ti;
  n->ntasks++;
  sch_resource_add(&n->requested, &t->init_resreq);
  n->nonzero_milli_cpu =
      sch_add_sat(n->nonzero_milli_cpu,
                  t->init_resreq.milli_cpu ? t->init_resreq.milli_cpu : SCH_NONZERO_MILLI_CPU);
  n->nonzero_memory = sch_add_sat(n->nonzero_memory, t->init_resreq.memory ? t->init_resreq.memory
                                                                           : SCH_NONZERO_MEMORY);
  switch (t->status) {
  case SCH_TASK_RELEASING:
    sch_resource_sub(&n->idle, &t->resreq);
    sch_resource_add(&n->releasing, &t->resreq);
    sch_resource_add(&n->used, &t->resreq);
    break;
  case SCH_TASK_PIPELINED:
    sch_resource_add(&n->pipelined, &t->resreq);
    break;
  default:
    sch_resource_sub(&n->idle, &t->resreq);
    sch_resource_add(&n->used, &t->resreq);
    break;
  }
}

void sch__node_remove_task(sch_snapshot *snap, int32_t ti) {
  sch_task *t = &snap->tasks[ti];
  if (t->node < 0)
    return;
  sch_node *n = &snap->nodes[t->node];
  if (t->node_prev >= 0)
    snap->tasks[t->node_prev].node_next = t->node_next;
  else
    n->task_head = t->node_next;
  if (t->node_next >= 0)
    snap->tasks[t->node_next].node_prev = t->node_prev;
  n->ntasks--;
  sch_resource_sub(&n->requested, &t->init_resreq);
  n->nonzero_milli_cpu =
      sch_sub_sat(n->nonzero_milli_cpu,
                  t->init_resreq.milli_cpu ? t->init_resreq.milli_cpu : SCH_NONZERO_MILLI_CPU);
  n->nonzero_memory = sch_sub_sat(n->nonzero_memory, t->init_resreq.memory ? t->init_resreq.memory
                                                                           : SCH_NONZERO_MEMORY);
  switch (t->status) {
  case SCH_TASK_RELEASING:
    sch_resource_add(&n->idle, &t->resreq);
    sch_resource_sub(&n->releasing, &t->resreq);
    sch_resource_sub(&n->used, &t->resreq);
    break;
  case SCH_TASK_PIPELINED:
    sch_resource_sub(&n->pipelined, &t->resreq);
    break;
  default:
    sch_resource_add(&n->idle, &t->resreq);
    sch_resource_sub(&n->used, &t->resreq);
    break;
  }
  t->node = -1;
  t->node_prev = t->node_next = -1;
}

void sch_job_set_status(sch_snapshot *snap, int32_t ti, sch_task_status st) {
  sch_task *t = &snap->tasks[ti];
  if (t->job >= 0) {
    sch_job *j = &snap->jobs[t->job];
    j->count[t->status]--;
    if (sch_task_status_allocated(t->status))
      sch_resource_sub(&j->allocated, &t->resreq);
    if (t->status == SCH_TASK_PENDING && t->best_effort)
      j->pending_best_effort--;
    j->count[st]++;
    if (sch_task_status_allocated(st))
      sch_resource_add(&j->allocated, &t->resreq);
    if (st == SCH_TASK_PENDING && t->best_effort)
      j->pending_best_effort++;
  }
  t->status = st;
}

/* Volcano getTaskStatus. */
static sch_task_status pod_status(const Kiln__Pod *p) {
  switch (p->phase) {
  case KILN__POD_PHASE__POD_PHASE_RUNNING:
    return p->deletion_time ? SCH_TASK_RELEASING : SCH_TASK_RUNNING;
  case KILN__POD_PHASE__POD_PHASE_PENDING:
  case KILN__POD_PHASE__POD_PHASE_UNSET:
    if (p->deletion_time)
      return SCH_TASK_RELEASING;
    return (p->node_name && *p->node_name) ? SCH_TASK_BOUND : SCH_TASK_PENDING;
  case KILN__POD_PHASE__POD_PHASE_SUCCEEDED:
    return SCH_TASK_SUCCEEDED;
  case KILN__POD_PHASE__POD_PHASE_FAILED:
    return SCH_TASK_FAILED;
  default:
    return SCH_TASK_UNKNOWN;
  }
}

static bool ours(const sch_snapshot_options *opt, const char *sched) {
  static const char *const def[] = {"volcano"};
  const char *const *names = def;
  size_t n = 1;
  if (opt && opt->nscheduler_names) {
    names = opt->scheduler_names;
    n = opt->nscheduler_names;
  }
  if (!sched)
    sched = "";
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], sched) == 0)
      return true;
  return false;
}

static int add_job(sch_snapshot *s, size_t *cap, sch_job **out) {
  if ((size_t)s->njobs == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    sch_job *v = realloc(s->jobs, nc * sizeof(*v));
    if (!v)
      return KC_ENOMEM;
    s->jobs = v;
    *cap = nc;
  }
  sch_job *j = &s->jobs[s->njobs++];
  memset(j, 0, sizeof(*j));
  j->fit_message = -1;
  j->queue_message = -1;
  j->why_message = -1;
  j->unready = -1;
  *out = j;
  return 0;
}

static int32_t pc_value(const sch_snapshot *s, const char *name, bool *found) {
  const Kiln__PriorityClass *pc =
      name && *name ? kc_strmap_get(&s->priority_class_index, name) : NULL;
  if (found)
    *found = pc != NULL;
  return pc ? pc->value : s->default_priority;
}

static int build_queues(sch_snapshot *s, const Kiln__Snapshot *msg, const char *defq) {
  s->queues = calloc(msg->n_queues + 1, sizeof(*s->queues));
  if (!s->queues)
    return KC_ENOMEM;
  for (size_t i = 0; i < msg->n_queues; i++) {
    const Kiln__Queue *q = msg->queues[i];
    if (!q || !q->metadata || !q->metadata->name)
      continue;
    if (kc_strmap_has(&s->queue_index, q->metadata->name))
      continue;
    sch_queue *sq = &s->queues[s->nqueues];
    sq->name = q->metadata->name;
    sq->queue = q;
    sq->weight = 1;
    sq->reclaimable = true;
    sq->open = true;
    sq->overused = -1;
    sq->creation_time = parse_time(q->metadata->creation_timestamp);
    if (q->spec) {
      if (q->spec->has_weight && q->spec->weight > 0)
        sq->weight = q->spec->weight;
      if (q->spec->capability) {
        sq->has_capability = true;
        res_from(s, q->spec->capability, &sq->capability);
      }
      if (q->spec->guarantee && q->spec->guarantee->resource)
        res_from(s, q->spec->guarantee->resource, &sq->guarantee);
      if (q->spec->deserved)
        res_from(s, q->spec->deserved, &sq->deserved);
      if (q->spec->has_reclaimable)
        sq->reclaimable = q->spec->reclaimable;
      if (q->spec->has_priority)
        sq->priority = q->spec->priority;
    }
    if (q->status && q->status->state && *q->status->state)
      sq->open = strcmp(q->status->state, "Open") == 0;
    int rc = put_index(&s->queue_index, sq->name, s->nqueues);
    if (rc < 0)
      return rc;
    s->nqueues++;
  }
  if (!kc_strmap_has(&s->queue_index, defq)) {
    /* Volcano creates the default queue when it is missing; until the shell has, the
     * session behaves as if it existed with weight 1. */
    sch_queue *sq = &s->queues[s->nqueues];
    sq->name = defq;
    sq->weight = 1;
    sq->reclaimable = true;
    sq->open = true;
    sq->overused = -1;
    int rc = put_index(&s->queue_index, sq->name, s->nqueues);
    if (rc < 0)
      return rc;
    s->nqueues++;
  }
  return 0;
}

static int build_nodes(sch_snapshot *s, const Kiln__Snapshot *msg) {
  s->nodes = calloc(msg->n_nodes ? msg->n_nodes : 1, sizeof(*s->nodes));
  if (!s->nodes)
    return KC_ENOMEM;
  for (size_t i = 0; i < msg->n_nodes; i++) {
    const Kiln__Node *kn = msg->nodes[i];
    if (!kn || !kn->name || kc_strmap_has(&s->node_index, kn->name))
      continue;
    sch_node *n = &s->nodes[s->nnodes];
    n->node = kn;
    n->name = kn->name;
    res_from(s, kn->allocatable, &n->allocatable);
    res_from(s, kn->capacity, &n->capability);
    n->idle = n->allocatable;
    n->max_pods = kn->allocatable ? kn->allocatable->pods : 0;
    n->task_head = -1;
    n->ready = kn->ready;
    n->unschedulable = kn->unschedulable;
    if (n->ready)
      sch_resource_add(&s->total_allocatable, &n->allocatable);
    int rc = put_index(&s->node_index, n->name, s->nnodes);
    if (rc < 0)
      return rc;
    s->nnodes++;
  }
  return 0;
}

static int build_jobs_from_podgroups(sch_snapshot *s, const Kiln__Snapshot *msg, const char *defq,
                                     size_t *cap) {
  for (size_t i = 0; i < msg->n_pod_groups; i++) {
    const Kiln__PodGroup *pg = msg->pod_groups[i];
    if (!pg || !pg->metadata || !pg->metadata->name || !pg->metadata->namespace_)
      continue;
    const char *qname = pg->spec && pg->spec->queue && *pg->spec->queue ? pg->spec->queue : defq;
    int32_t qi = sch_snapshot_queue(s, qname);
    if (qi < 0)
      KC_WARN("scheduler: the queue %s of PodGroup %s/%s does not exist; not scheduling it", qname,
              pg->metadata->namespace_, pg->metadata->name);
    char *key = owned_key(s, pg->metadata->namespace_, pg->metadata->name);
    if (!key)
      return KC_ENOMEM;
    if (kc_strmap_has(&s->job_index, key))
      continue;
    int rc;
    sch_job *j;
    if ((rc = add_job(s, cap, &j)) < 0)
      return rc;
    j->key = key;
    j->namespace = pg->metadata->namespace_;
    j->name = pg->metadata->name;
    j->pod_group = pg;
    j->queue = qi;
    j->min_available = pg->spec && pg->spec->has_min_member ? pg->spec->min_member : 1;
    j->priority = pc_value(s, pg->spec ? pg->spec->priority_class_name : NULL, NULL);
    if (pg->spec && pg->spec->min_resources) {
      j->has_min_resources = true;
      res_from(s, pg->spec->min_resources, &j->min_resources);
    }
    j->creation_time = parse_time(pg->metadata->creation_timestamp);
    j->phase = sch_pg_phase_parse(pg->status ? pg->status->phase : NULL);
    if ((rc = put_index(&s->job_index, key, s->njobs - 1)) < 0)
      return rc;
  }
  return 0;
}

/* The job of one of our pods: its PodGroup's, or a shadow job made on first sight. */
static int job_of_pod(sch_snapshot *s, const Kiln__Pod *p, const char *defq, size_t *cap,
                      int32_t *out) {
  *out = -1;
  const char *ns = p->namespace_ ? p->namespace_ : "";
  bool shadow = !(p->group_name && *p->group_name);
  const char *name = p->group_name;
  if (shadow)
    name = p->owner_uid && *p->owner_uid ? p->owner_uid : (p->uid ? p->uid : p->name);
  if (!name)
    return 0;
  char buf[512];
  char *key = ns_key(buf, sizeof(buf), ns, name);
  /* Longer than the API server's names allow: a key of its own. */
  if (!key && !(key = owned_key(s, ns, name)))
    return KC_ENOMEM;
  int32_t ji = sch_snapshot_job(s, key);
  if (ji >= 0 || !shadow) {
    *out = ji;
    return 0;
  }
  if (key == buf && !(key = owned_key(s, ns, name)))
    return KC_ENOMEM;
  int rc;
  int32_t qi = sch_snapshot_queue(s, defq);
  sch_job *j;
  if ((rc = add_job(s, cap, &j)) < 0)
    return rc;
  j->key = key;
  j->namespace = ns;
  j->name = name;
  j->shadow = true;
  j->queue = qi;
  j->min_available = 1;
  j->priority = pc_value(s, p->priority_class_name, NULL);
  j->creation_time = p->creation_time;
  /* A shadow PodGroup is never enqueued by anyone: it is admitted at once. */
  j->phase = SCH_PG_INQUEUE;
  if ((rc = put_index(&s->job_index, key, s->njobs - 1)) < 0)
    return rc;
  *out = s->njobs - 1;
  return 0;
}

static bool terminated(sch_task_status st) {
  return st == SCH_TASK_SUCCEEDED || st == SCH_TASK_FAILED;
}

static int index_priority_classes(sch_snapshot *s, const Kiln__Snapshot *msg) {
  for (size_t i = 0; i < msg->n_priority_classes; i++) {
    const Kiln__PriorityClass *pc = msg->priority_classes[i];
    if (!pc || !pc->metadata || !pc->metadata->name)
      continue;
    if (kc_strmap_put(&s->priority_class_index, pc->metadata->name, (void *)pc, NULL) < 0)
      return KC_ENOMEM;
    if (pc->has_global_default && pc->global_default)
      s->default_priority = pc->value;
  }
  return 0;
}

/* One task per pod; the pods of ours join their job (made for them when they have none). */
static int build_tasks(sch_snapshot *s, const Kiln__Snapshot *msg, const sch_snapshot_options *opt,
                       const char *defq, size_t *cap_jobs) {
  s->tasks = calloc(msg->n_pods ? msg->n_pods : 1, sizeof(*s->tasks));
  if (!s->tasks)
    return KC_ENOMEM;
  for (size_t i = 0; i < msg->n_pods; i++) {
    const Kiln__Pod *p = msg->pods[i];
    if (!p)
      continue;
    sch_task *t = &s->tasks[s->ntasks];
    t->pod = p;
    t->job = -1;
    t->node = t->node_prev = t->node_next = -1;
    t->why = -1;
    t->status = pod_status(p);
    t->priority = p->priority;
    res_from(s, p->container_requests, &t->resreq);
    res_from(s, p->requests, &t->init_resreq);
    t->best_effort = p->best_effort ||
                     (sch_resource_is_empty(&t->init_resreq) && sch_resource_is_empty(&t->resreq));
    t->gated = p->n_scheduling_gates > 0;
    /* The API server refuses a gate named twice, so one gate is "only this one". */
    t->queue_gated_only = p->n_scheduling_gates == 1 && p->scheduling_gates[0] &&
                          strcmp(p->scheduling_gates[0], SCH_QUEUE_ALLOCATION_GATE) == 0;
    if (ours(opt, p->scheduler_name)) {
      int rc = job_of_pod(s, p, defq, cap_jobs, &t->job);
      if (rc < 0)
        return rc;
    }
    s->ntasks++;
  }
  return 0;
}

/* Adds task i to its job's counts and sums. */
static void job_add_task(sch_snapshot *s, int32_t i) {
  const sch_task *t = &s->tasks[i];
  sch_job *j = &s->jobs[t->job];
  j->tasks[j->ntasks++] = i;
  j->count[t->status]++;
  sch_resource_add(&j->total_request, &t->resreq);
  if (sch_task_status_allocated(t->status))
    sch_resource_add(&j->allocated, &t->resreq);
  if (t->status == SCH_TASK_PENDING && t->best_effort)
    j->pending_best_effort++;
  if (t->status == SCH_TASK_PENDING && t->gated) {
    j->gated++;
    if (!t->queue_gated_only)
      sch_resource_add(&j->gated_resreq, &t->resreq);
  }
}

/* Tasks per job, in one array; and every live pod with a node counts there, whoever
 * scheduled it. */
static int place_tasks(sch_snapshot *s) {
  s->task_slots = malloc((size_t)(s->ntasks ? s->ntasks : 1) * sizeof(int32_t));
  if (!s->task_slots)
    return KC_ENOMEM;
  for (int32_t i = 0; i < s->ntasks; i++)
    if (s->tasks[i].job >= 0)
      s->jobs[s->tasks[i].job].ntasks++;
  int32_t off = 0;
  for (int32_t j = 0; j < s->njobs; j++) {
    s->jobs[j].tasks = s->task_slots + off;
    off += s->jobs[j].ntasks;
    s->jobs[j].ntasks = 0;
  }
  for (int32_t i = 0; i < s->ntasks; i++) {
    const sch_task *t = &s->tasks[i];
    if (t->job >= 0)
      job_add_task(s, i);
    if (t->pod->node_name && *t->pod->node_name && !terminated(t->status) &&
        t->status != SCH_TASK_PENDING) {
      int32_t ni = sch_snapshot_node(s, t->pod->node_name);
      if (ni >= 0)
        sch__node_add_task(s, i, ni);
    }
  }
  return 0;
}

int sch_snapshot_new(const Kiln__Snapshot *msg, const sch_snapshot_options *opt,
                     sch_snapshot **out) {
  *out = NULL;
  const char *defq = opt && opt->default_queue ? opt->default_queue : "default";
  sch_snapshot *s = calloc(1, sizeof(*s));
  if (!s)
    return KC_ENOMEM;
  s->msg = msg;
  kc_strmap_init(&s->node_index, KC_STRMAP_BORROW_KEYS);
  kc_strmap_init(&s->job_index, KC_STRMAP_BORROW_KEYS);
  kc_strmap_init(&s->queue_index, KC_STRMAP_BORROW_KEYS);
  kc_strmap_init(&s->priority_class_index, KC_STRMAP_BORROW_KEYS);
  size_t cap_jobs = 0;
  int rc;
  if ((rc = index_priority_classes(s, msg)) < 0 || (rc = build_queues(s, msg, defq)) < 0 ||
      (rc = build_nodes(s, msg)) < 0 ||
      (rc = build_jobs_from_podgroups(s, msg, defq, &cap_jobs)) < 0 ||
      (rc = build_tasks(s, msg, opt, defq, &cap_jobs)) < 0 || (rc = sch__dra_count_tasks(s)) < 0 ||
      (rc = place_tasks(s)) < 0 || (rc = sch__dra_count_nodes(s)) < 0 ||
      (rc = sch_hntree_new((const Kiln__HyperNode *const *)msg->hyper_nodes, msg->n_hyper_nodes, s,
                           &s->hntree)) < 0 ||
      (rc = sch__build_subjobs(s)) < 0) {
    sch_snapshot_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

void sch_snapshot_free(sch_snapshot *s) {
  if (!s)
    return;
  sch_dra_free(s->dra);
  sch_dra_free(s->dra_counted);
  sch_hntree_free(s->hntree);
  sch__free_subjobs(s);
  sch_vol_free(s->vol);
  kc_strmap_close(&s->node_index, NULL);
  kc_strmap_close(&s->job_index, NULL);
  kc_strmap_close(&s->queue_index, NULL);
  kc_strmap_close(&s->priority_class_index, NULL);
  for (size_t i = 0; i < s->nowned; i++)
    free(s->owned[i]);
  free(s->owned);
  free(s->nodes);
  free(s->tasks);
  free(s->jobs);
  free(s->queues);
  free(s->task_slots);
  free(s);
}
