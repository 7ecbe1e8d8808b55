/* Fuzz target for the scheduler's core on a generated snapshot (issue 27): the input bytes are
 * choices, not text. They build a cluster (1-8 nodes, ready or not, cordoned, tainted,
 * labelled, allocatable from nothing to past 10^18 in cpu, memory, pods and extended
 * resources), queues (weights, capabilities, guarantees and deserved shares up to the
 * extremes, states, a hierarchy with parents that exist, are missing or are the root),
 * PodGroups (every phase, minMember and per-task minimums from 0 to 2^31-1, minResources,
 * missing queues, priority classes, SLA waiting times) and pods (any group or none, every
 * phase, bound to a node that exists or not, requests as large as Kubernetes parses,
 * priorities, gates, deletion, nomination, selectors, tolerations, host ports, affinity and
 * spread terms), and picks one of five scheduler configurations that between them use every
 * action and plugin; then a session opens, runs and closes once.
 *
 * Checks: every call returns 0 or a negative error; every bind is of a pending task of ours,
 * not gated and not being deleted, to a node of the snapshot, once; every eviction is of a
 * task on a node, once; on every node a bind went to, the tasks bound this session fit in
 * what was idle before it, in each resource they ask for (the allocate action binds only
 * into idle room; what evictions free is for pipelining; best-effort tasks, whose requests
 * are all below Volcano's epsilon, are backfilled without a resource check); a PodGroup's
 * counts are not negative. The sanitizers catch the rest (undefined arithmetic, leaks). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_gen.h"
#include "kc_error.h"
#include "kc_log.h"
#include "sch_conf.h"
#include "sch_framework.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_NODES  8
#define MAX_QUEUES 5
#define MAX_PGS    6
#define MAX_PODS   24
#define NOW_S      1796000000LL

static fz_arena arena;

/* Amounts in Kiln's units (millicores, bytes, milli-units): nothing, small, ordinary, large,
 * and the saturated bound a quantity past int64 becomes. */
static const int64_t amounts[] = {0,
                                  1,
                                  10,
                                  100,
                                  500,
                                  1000,
                                  4000,
                                  1LL << 30,
                                  8LL << 30,
                                  1000000000000000000LL,
                                  INT64_MAX / 2,
                                  INT64_MAX - 1,
                                  INT64_MAX};
static const char *const scalar_names[] = {"nvidia.com/gpu", "example.com/x", "hugepages-2Mi",
                                           "ephemeral-storage"};
static const char *const pg_phases[] = {"",        "Pending", "Inqueue",
                                        "Running", "Unknown", "Completed"};
static const char *const queue_states[] = {NULL, "Open", "Closed", "Closing", "Unknown"};
static const char *const zones[] = {"a", "b", "c"};
static const char *const task_names[] = {"", "master", "worker", "ps"};
static const int32_t priorities[] = {0, 1, 100, 1000, -1, INT32_MAX, INT32_MIN};
static const char *const waits[] = {NULL, "0s", "1s", "10m", "x", "-5s", "999999999h"};

/* Five configurations that between them run every action and plugin, with arguments at
 * their edges. Parsed once. */
static const char *const conf_texts[] = {
    /* Volcano's default. */
    "actions: \"enqueue, allocate, backfill\"\n"
    "tiers:\n"
    "- plugins:\n  - name: priority\n  - name: gang\n    enablePreemptable: false\n"
    "  - name: conformance\n"
    "- plugins:\n  - name: overcommit\n  - name: drf\n    enablePreemptable: false\n"
    "  - name: predicates\n  - name: proportion\n  - name: nodeorder\n  - name: binpack\n",
    /* Preemption and reclaim. */
    "actions: \"enqueue, allocate, preempt, reclaim, backfill\"\n"
    "tiers:\n"
    "- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n"
    "  - name: pdb\n"
    "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n"
    "  - name: nodeorder\n    arguments:\n      leastrequested.weight: 0\n"
    "      balancedresource.weight: 100\n",
    /* Capacity and a hierarchy. */
    "actions: \"enqueue, allocate, reclaim, backfill\"\n"
    "tiers:\n"
    "- plugins:\n  - name: priority\n  - name: gang\n"
    "- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: capacity\n"
    "    enableHierarchy: true\n  - name: predicates\n  - name: nodeorder\n",
    /* Shuffle, SLA, cooldown protection, rescheduling, binpack weights. */
    "actions: \"enqueue, allocate, shuffle\"\n"
    "tiers:\n"
    "- plugins:\n  - name: priority\n  - name: gang\n  - name: sla\n"
    "    arguments:\n      sla-waiting-time: 1m\n  - name: cdp\n"
    "- plugins:\n  - name: overcommit\n    arguments:\n      overcommit-factor: 10\n"
    "      overcommit-factor.cpu: 1.0\n  - name: predicates\n  - name: proportion\n"
    "  - name: rescheduling\n  - name: binpack\n    arguments:\n      binpack.weight: 10\n"
    "      binpack.cpu: 5\n      binpack.resources: nvidia.com/gpu, example.com/x\n"
    "      binpack.resources.nvidia.com/gpu: 7\n",
    /* Everything at once, preemption before allocation. */
    "actions: \"enqueue, preempt, allocate, reclaim, backfill, shuffle\"\n"
    "tiers:\n"
    "- plugins:\n  - name: priority\n  - name: gang\n    enableJobStarving: true\n"
    "  - name: conformance\n  - name: sla\n"
    "- plugins:\n  - name: overcommit\n  - name: drf\n  - name: predicates\n"
    "  - name: proportion\n  - name: nodeorder\n  - name: binpack\n  - name: cdp\n"
    "  - name: pdb\n  - name: rescheduling\n",
};
#define NCONFS (sizeof(conf_texts) / sizeof(conf_texts[0]))
static sch_conf *confs[NCONFS];

#define ALLOC(T)    ((T *)fz_alloc(&arena, sizeof(T)))
#define ARRAY(T, n) ((T *)fz_alloc(&arena, ((n) + 1) * sizeof(T)))

static int64_t amount(fz_rd *r) {
  return FZ_PICK(r, amounts);
}

static Kiln__Resource *gen_resource(fz_rd *r, bool pods) {
  Kiln__Resource *res = ALLOC(Kiln__Resource);
  kiln__resource__init(res);
  uint8_t b = fz_u8(r);
  res->milli_cpu = b & 1 ? amount(r) : 0;
  res->memory = b & 2 ? amount(r) : 0;
  if (pods)
    res->pods = b & 4 ? amount(r) : 110;
  res->n_scalar = (b >> 3) % 3;
  res->scalar = ARRAY(Kiln__ResourceQuantity *, res->n_scalar);
  for (size_t i = 0; i < res->n_scalar; i++) {
    Kiln__ResourceQuantity *q = ALLOC(Kiln__ResourceQuantity);
    kiln__resource_quantity__init(q);
    q->name = fz_str(&arena, FZ_PICK(r, scalar_names));
    q->milli_value = amount(r);
    res->scalar[i] = q;
  }
  return res;
}

static Kiln__Resource *half_of(const Kiln__Resource *r) {
  Kiln__Resource *h = ALLOC(Kiln__Resource);
  *h = *r;
  h->milli_cpu /= 2;
  h->memory /= 2;
  h->scalar = ARRAY(Kiln__ResourceQuantity *, r->n_scalar);
  for (size_t i = 0; i < r->n_scalar; i++) {
    h->scalar[i] = ALLOC(Kiln__ResourceQuantity);
    *h->scalar[i] = *r->scalar[i];
    h->scalar[i]->milli_value /= 2;
  }
  return h;
}

static Kiln__ObjectMeta *gen_meta(const char *ns, const char *name) {
  Kiln__ObjectMeta *m = ALLOC(Kiln__ObjectMeta);
  kiln__object_meta__init(m);
  m->name = fz_str(&arena, name);
  m->namespace_ = fz_str(&arena, ns);
  m->uid = fz_fmt(&arena, "uid-%s", name);
  m->creation_timestamp = fz_str(&arena, "2026-11-29T10:00:00Z");
  return m;
}

static void gen_node(fz_rd *r, Kiln__Node *n, size_t i) {
  kiln__node__init(n);
  uint8_t b = fz_u8(r);
  n->name = fz_fmt(&arena, "n%zu", i);
  n->allocatable = gen_resource(r, true);
  n->capacity = n->allocatable;
  n->ready = (b & 7) != 0;
  n->unschedulable = (b & 24) == 24;
  n->n_labels = 2;
  n->labels = ARRAY(Kiln__Node__LabelsEntry *, 2);
  static const char *const keys[] = {"zone", "kubernetes.io/hostname"};
  for (size_t k = 0; k < 2; k++) {
    Kiln__Node__LabelsEntry *e = ALLOC(Kiln__Node__LabelsEntry);
    kiln__node__labels_entry__init(e);
    e->key = fz_str(&arena, keys[k]);
    e->value = k == 0 ? fz_str(&arena, FZ_PICK(r, zones)) : n->name;
    n->labels[k] = e;
  }
  if (b & 32) {
    Kiln__Taint *t = ALLOC(Kiln__Taint);
    kiln__taint__init(t);
    t->key = fz_str(&arena, "dedicated");
    t->value = fz_str(&arena, "gpu");
    t->effect = (Kiln__TaintEffect)fz_pick(r, 5);
    n->n_taints = 1;
    n->taints = ARRAY(Kiln__Taint *, 1);
    n->taints[0] = t;
  }
}

static void gen_queue(fz_rd *r, Kiln__Queue *q, size_t i) {
  kiln__queue__init(q);
  uint8_t b = fz_u8(r);
  q->metadata = gen_meta(NULL, i == 0 ? "default" : i == 1 ? "root" : "");
  if (i > 1)
    q->metadata->name = fz_fmt(&arena, "q%zu", i);
  q->spec = ALLOC(Kiln__QueueSpec);
  kiln__queue_spec__init(q->spec);
  q->spec->has_weight = b & 1;
  q->spec->weight = fz_i32(r);
  if (b & 2)
    q->spec->capability = gen_resource(r, false);
  if (b & 4) {
    q->spec->guarantee = ALLOC(Kiln__Guarantee);
    kiln__guarantee__init(q->spec->guarantee);
    q->spec->guarantee->resource = gen_resource(r, false);
  }
  if (b & 8)
    q->spec->deserved = gen_resource(r, false);
  q->spec->has_reclaimable = b & 16;
  q->spec->reclaimable = b & 32;
  if (i > 1 && (b & 64)) {
    size_t p = fz_pick(r, i + 1);
    q->spec->parent = p == i ? fz_str(&arena, "missing") : fz_fmt(&arena, "q%zu", p);
    if (p < 2)
      q->spec->parent = fz_str(&arena, p == 0 ? "default" : "root");
  }
  if (b & 128) {
    q->spec->has_priority = 1;
    q->spec->priority = FZ_PICK(r, priorities);
  }
  q->status = ALLOC(Kiln__QueueStatus);
  kiln__queue_status__init(q->status);
  q->status->state = fz_str(&arena, FZ_PICK(r, queue_states));
}

static void gen_podgroup(fz_rd *r, Kiln__PodGroup *pg, size_t i, size_t nqueues) {
  kiln__pod_group__init(pg);
  uint8_t b = fz_u8(r);
  pg->metadata = gen_meta("ns", "");
  pg->metadata->name = fz_fmt(&arena, "pg%zu", i);
  const char *wait = FZ_PICK(r, waits);
  if (wait) {
    pg->metadata->n_annotations = 1;
    pg->metadata->annotations = ARRAY(Kiln__ObjectMeta__AnnotationsEntry *, 1);
    Kiln__ObjectMeta__AnnotationsEntry *e = ALLOC(Kiln__ObjectMeta__AnnotationsEntry);
    kiln__object_meta__annotations_entry__init(e);
    e->key = fz_str(&arena, "sla-waiting-time");
    e->value = fz_str(&arena, wait);
    pg->metadata->annotations[0] = e;
  }
  pg->spec = ALLOC(Kiln__PodGroupSpec);
  kiln__pod_group_spec__init(pg->spec);
  pg->spec->has_min_member = 1;
  pg->spec->min_member = fz_i32(r);
  size_t qi = fz_pick(r, nqueues + 1);
  pg->spec->queue = qi < nqueues ? fz_fmt(&arena, "q%zu", qi) : fz_str(&arena, "missing");
  if (qi == 0)
    pg->spec->queue = fz_str(&arena, b & 1 ? "default" : "");
  if (b & 2)
    pg->spec->min_resources = gen_resource(r, false);
  if (b & 4)
    pg->spec->priority_class_name = fz_str(&arena, b & 8 ? "high" : "nope");
  if (b & 16) {
    pg->spec->n_min_task_member = 1;
    pg->spec->min_task_member = ARRAY(Kiln__PodGroupSpec__MinTaskMemberEntry *, 1);
    Kiln__PodGroupSpec__MinTaskMemberEntry *e = ALLOC(Kiln__PodGroupSpec__MinTaskMemberEntry);
    kiln__pod_group_spec__min_task_member_entry__init(e);
    e->key = fz_str(&arena, FZ_PICK(r, task_names));
    e->value = fz_i32(r);
    pg->spec->min_task_member[0] = e;
  }
  pg->status = ALLOC(Kiln__PodGroupStatus);
  kiln__pod_group_status__init(pg->status);
  pg->status->phase = fz_str(&arena, FZ_PICK(r, pg_phases));
  pg->status->has_running = b & 32;
  pg->status->running = fz_i32(r);
}

static Kiln__LabelSelector *gen_selector(fz_rd *r) {
  Kiln__LabelSelector *s = ALLOC(Kiln__LabelSelector);
  kiln__label_selector__init(s);
  s->n_match_labels = 1;
  s->match_labels = ARRAY(Kiln__LabelSelector__MatchLabelsEntry *, 1);
  Kiln__LabelSelector__MatchLabelsEntry *e = ALLOC(Kiln__LabelSelector__MatchLabelsEntry);
  kiln__label_selector__match_labels_entry__init(e);
  e->key = fz_str(&arena, "app");
  e->value = fz_str(&arena, fz_bit(r) ? "a" : "b");
  s->match_labels[0] = e;
  return s;
}

/* Affinity, anti-affinity and spread over zones or hosts. */
static Kiln__InterPodTerms *gen_inter_pod(fz_rd *r) {
  Kiln__InterPodTerms *t = ALLOC(Kiln__InterPodTerms);
  kiln__inter_pod_terms__init(t);
  uint8_t b = fz_u8(r);
  const char *key = b & 1 ? "zone" : "kubernetes.io/hostname";
  Kiln__PodAffinityTerm *term = ALLOC(Kiln__PodAffinityTerm);
  kiln__pod_affinity_term__init(term);
  term->label_selector = gen_selector(r);
  term->topology_key = fz_str(&arena, key);
  if (b & 2) {
    t->n_required_affinity = 1;
    t->required_affinity = ARRAY(Kiln__PodAffinityTerm *, 1);
    t->required_affinity[0] = term;
  } else if (b & 4) {
    t->n_required_anti_affinity = 1;
    t->required_anti_affinity = ARRAY(Kiln__PodAffinityTerm *, 1);
    t->required_anti_affinity[0] = term;
  } else {
    Kiln__WeightedPodAffinityTerm *w = ALLOC(Kiln__WeightedPodAffinityTerm);
    kiln__weighted_pod_affinity_term__init(w);
    w->weight = b & 8 ? 100 : 1;
    w->pod_affinity_term = term;
    t->n_preferred_anti_affinity = 1;
    t->preferred_anti_affinity = ARRAY(Kiln__WeightedPodAffinityTerm *, 1);
    t->preferred_anti_affinity[0] = w;
  }
  if (b & 16) {
    Kiln__TopologySpreadConstraint *c = ALLOC(Kiln__TopologySpreadConstraint);
    kiln__topology_spread_constraint__init(c);
    c->max_skew = fz_i32(r);
    c->topology_key = fz_str(&arena, key);
    c->when_unsatisfiable = fz_str(&arena, b & 32 ? "DoNotSchedule" : "ScheduleAnyway");
    c->label_selector = gen_selector(r);
    c->min_domains = b & 64 ? fz_i32(r) : 0;
    t->n_topology_spread_constraints = 1;
    t->topology_spread_constraints = ARRAY(Kiln__TopologySpreadConstraint *, 1);
    t->topology_spread_constraints[0] = c;
  }
  return t;
}

/* Selector, tolerations, host port, gates, labels and terms: what the predicates read. */
static void gen_pod_placement(fz_rd *r, Kiln__Pod *p, uint8_t b) {
  if (b & 1) {
    p->n_node_selector = 1;
    p->node_selector = ARRAY(Kiln__Pod__NodeSelectorEntry *, 1);
    Kiln__Pod__NodeSelectorEntry *e = ALLOC(Kiln__Pod__NodeSelectorEntry);
    kiln__pod__node_selector_entry__init(e);
    e->key = fz_str(&arena, "zone");
    e->value = fz_str(&arena, FZ_PICK(r, zones));
    p->node_selector[0] = e;
  }
  if (b & 2) {
    Kiln__Toleration *t = ALLOC(Kiln__Toleration);
    kiln__toleration__init(t);
    t->key = fz_str(&arena, b & 4 ? "dedicated" : "");
    t->operator_ = (Kiln__TolerationOperator)fz_pick(r, 2);
    t->value = fz_str(&arena, "gpu");
    t->effect = (Kiln__TaintEffect)fz_pick(r, 5);
    p->n_tolerations = 1;
    p->tolerations = ARRAY(Kiln__Toleration *, 1);
    p->tolerations[0] = t;
  }
  if (b & 8) {
    Kiln__HostPort *hp = ALLOC(Kiln__HostPort);
    kiln__host_port__init(hp);
    hp->port = b & 16 ? 80 : 65535;
    p->n_host_ports = 1;
    p->host_ports = ARRAY(Kiln__HostPort *, 1);
    p->host_ports[0] = hp;
  }
  if ((b & 96) == 96) {
    p->n_scheduling_gates = 1;
    p->scheduling_gates = ARRAY(char *, 1);
    p->scheduling_gates[0] = fz_str(&arena, "example.com/gate");
  }
  if (b & 128) {
    static const char lbl[] = "app\0a";
    p->packed_labels.data = fz_alloc(&arena, sizeof(lbl));
    memcpy(p->packed_labels.data, lbl, sizeof(lbl));
    p->packed_labels.len = sizeof(lbl);
    p->has_pod_affinity = true;
    p->inter_pod = gen_inter_pod(r);
  }
}

static void gen_pod(fz_rd *r, Kiln__Pod *p, size_t i, size_t npgs, size_t nnodes) {
  kiln__pod__init(p);
  uint8_t b = fz_u8(r), c = fz_u8(r);
  p->namespace_ = fz_str(&arena, "ns");
  p->name = fz_fmt(&arena, "p%zu", i);
  p->uid = fz_fmt(&arena, "uid-p%zu", i);
  p->scheduler_name = fz_str(&arena, (b & 7) == 7 ? "default-scheduler" : "volcano");
  size_t g = fz_pick(r, npgs + 1);
  if (g < npgs)
    p->group_name = fz_fmt(&arena, "pg%zu", g);
  p->task_name = fz_str(&arena, FZ_PICK(r, task_names));
  p->priority = FZ_PICK(r, priorities);
  p->requests = gen_resource(r, false);
  p->requests->pods = 1;
  /* What the app containers ask for (held once running) is at most the pod's request (what
   * must fit to start: init containers and overhead included), as the codec derives both. */
  p->container_requests = b & 8 ? half_of(p->requests) : p->requests;
  p->best_effort =
      p->requests->milli_cpu == 0 && p->requests->memory == 0 && p->requests->n_scalar == 0;
  p->phase = (Kiln__PodPhase)fz_pick(r, 6);
  size_t n = fz_pick(r, nnodes + 2);
  if (n < nnodes && p->phase != KILN__POD_PHASE__POD_PHASE_PENDING)
    p->node_name = fz_fmt(&arena, "n%zu", n);
  else if (n == nnodes && (b & 16))
    p->node_name = fz_str(&arena, "gone");
  if (b & 32)
    p->nominated_node_name = fz_fmt(&arena, "n%zu", fz_pick(r, nnodes + 1));
  p->creation_time = NOW_S - (int64_t)fz_pick(r, 8) * 600;
  if ((b & 192) == 192)
    p->deletion_time = NOW_S - 1;
  p->preemptable = c & 1;
  p->not_preemptable = (c & 6) == 6;
  p->cooldown_ms = c & 8 ? 600000 : 0;
  p->scheduled_time = c & 16 ? NOW_S - 60 : 0;
  p->owner_kind = fz_str(&arena, c & 32 ? "ReplicaSet" : "Job");
  p->owner_name = fz_str(&arena, "owner");
  gen_pod_placement(r, p, fz_u8(r));
}

static Kiln__Snapshot *gen_snapshot(fz_rd *r) {
  Kiln__Snapshot *s = ALLOC(Kiln__Snapshot);
  kiln__snapshot__init(s);
  s->time_unix_nano = NOW_S * 1000000000LL;
  s->scheduler_name = fz_str(&arena, "volcano");
  s->n_nodes = 1 + fz_pick(r, MAX_NODES);
  s->nodes = ARRAY(Kiln__Node *, s->n_nodes);
  for (size_t i = 0; i < s->n_nodes; i++)
    gen_node(r, s->nodes[i] = ALLOC(Kiln__Node), i);
  s->n_queues = 1 + fz_pick(r, MAX_QUEUES);
  s->queues = ARRAY(Kiln__Queue *, s->n_queues);
  for (size_t i = 0; i < s->n_queues; i++)
    gen_queue(r, s->queues[i] = ALLOC(Kiln__Queue), i);
  s->n_pod_groups = fz_pick(r, MAX_PGS + 1);
  s->pod_groups = ARRAY(Kiln__PodGroup *, s->n_pod_groups);
  for (size_t i = 0; i < s->n_pod_groups; i++)
    gen_podgroup(r, s->pod_groups[i] = ALLOC(Kiln__PodGroup), i, s->n_queues);
  s->n_pods = fz_pick(r, MAX_PODS + 1);
  s->pods = ARRAY(Kiln__Pod *, s->n_pods);
  for (size_t i = 0; i < s->n_pods; i++)
    gen_pod(r, s->pods[i] = ALLOC(Kiln__Pod), i, s->n_pod_groups, s->n_nodes);
  s->n_priority_classes = 1;
  s->priority_classes = ARRAY(Kiln__PriorityClass *, 1);
  Kiln__PriorityClass *pc = ALLOC(Kiln__PriorityClass);
  kiln__priority_class__init(pc);
  pc->metadata = gen_meta(NULL, "high");
  pc->has_value = 1;
  pc->value = FZ_PICK(r, priorities);
  s->priority_classes[0] = pc;
  return s;
}

/* ---- checks ---- */

/* One dimension: what the tasks bound this session hold once running (resreq) fits in what
 * was idle before, and each one's request to start (init_resreq, init containers included)
 * fitted too (Volcano fits InitResreq and holds Resreq); eps per task. */
static bool over(__int128 held, int64_t most_init, bool asked, int64_t idle, int64_t k,
                 int64_t eps) {
  return asked && (held > (__int128)idle + k * eps || (__int128)most_init > (__int128)idle + eps);
}

/* The tasks bound to node n this session fit in what was idle before it, in each dimension
 * they ask for. A best-effort task (every request below Volcano's epsilon) is backfilled
 * with no resource check, as in Volcano. */
static void check_node(const sch_snapshot *snap, const sch_result *res, int32_t n,
                       const sch_resource *idle0) {
  __int128 held[2 + SCH_MAX_SCALARS] = {0};
  int64_t init[2 + SCH_MAX_SCALARS] = {0};
  int64_t k = 0;
  for (size_t i = 0; i < res->nbinds; i++) {
    const sch_task *t = &snap->tasks[res->binds[i].task];
    if (res->binds[i].node != n || t->best_effort)
      continue;
    k++;
    const int64_t h[2 + SCH_MAX_SCALARS] = {t->resreq.milli_cpu, t->resreq.memory};
    const int64_t q[2 + SCH_MAX_SCALARS] = {t->init_resreq.milli_cpu, t->init_resreq.memory};
    for (int d = 0; d < 2 + SCH_MAX_SCALARS; d++) {
      int64_t hd = d < 2 ? h[d] : t->resreq.scalar[d - 2];
      int64_t qd = d < 2 ? q[d] : t->init_resreq.scalar[d - 2];
      held[d] += hd;
      if (qd > init[d])
        init[d] = qd;
    }
  }
  if (k == 0)
    return;
  const int64_t idle[2] = {idle0->milli_cpu, idle0->memory};
  const int64_t eps[2] = {SCH_MIN_MILLI_CPU, SCH_MIN_MEMORY};
  for (int d = 0; d < 2 + SCH_MAX_SCALARS; d++) {
    int64_t id = d < 2 ? idle[d] : idle0->scalar[d - 2];
    if (over(held[d], init[d], init[d] > 0, id, k, d < 2 ? eps[d] : SCH_MIN_SCALAR)) {
      if (getenv("FZ_DEBUG"))
        fprintf(stderr, "node %s dimension %d: idle %lld, held %lld, largest request %lld\n",
                snap->nodes[n].name, d, (long long)id, (long long)held[d], (long long)init[d]);
      abort();
    }
  }
}

static void check_result(const sch_snapshot *snap, const sch_result *res, const sch_resource *idle0,
                         const int32_t *node0, bool *seen) {
  memset(seen, 0, (size_t)snap->ntasks * sizeof(*seen));
  for (size_t i = 0; i < res->nbinds; i++) {
    int32_t t = res->binds[i].task, n = res->binds[i].node;
    if (t < 0 || t >= snap->ntasks || n < 0 || n >= snap->nnodes || seen[t])
      abort();
    seen[t] = true;
    const sch_task *task = &snap->tasks[t];
    if (task->job < 0 || node0[t] >= 0 || task->gated || task->pod->deletion_time)
      abort();
  }
  for (int32_t n = 0; n < snap->nnodes; n++)
    check_node(snap, res, n, &idle0[n]);
  memset(seen, 0, (size_t)snap->ntasks * sizeof(*seen));
  for (size_t i = 0; i < res->nevicts; i++) {
    int32_t t = res->evicts[i].task;
    if (t < 0 || t >= snap->ntasks || seen[t] || node0[t] < 0)
      abort();
    seen[t] = true;
  }
  for (size_t i = 0; i < res->npod_groups; i++) {
    const sch_pg_status *s = &res->pod_groups[i];
    if (s->job < 0 || s->job >= snap->njobs || s->running < 0 || s->succeeded < 0 || s->failed < 0)
      abort();
  }
}

static void debug_resource(const char *what, const Kiln__Resource *r) {
  if (!r)
    return;
  fprintf(stderr, "  %s: cpu %lld mem %lld pods %lld", what, (long long)r->milli_cpu,
          (long long)r->memory, (long long)r->pods);
  for (size_t i = 0; i < r->n_scalar; i++)
    fprintf(stderr, " %s %lld", r->scalar[i]->name, (long long)r->scalar[i]->milli_value);
  fprintf(stderr, "\n");
}

/* FZ_DEBUG=1: the generated world, to turn a finding into a unit test. */
static void debug_snapshot(const Kiln__Snapshot *s) {
  for (size_t i = 0; i < s->n_nodes; i++) {
    fprintf(stderr, "node %s ready %d\n", s->nodes[i]->name, s->nodes[i]->ready);
    debug_resource("allocatable", s->nodes[i]->allocatable);
  }
  for (size_t i = 0; i < s->n_queues; i++) {
    const Kiln__QueueSpec *q = s->queues[i]->spec;
    fprintf(stderr, "queue %s weight %d(%d) parent %s state %s\n", s->queues[i]->metadata->name,
            q->weight, q->has_weight, q->parent ? q->parent : "-",
            s->queues[i]->status->state ? s->queues[i]->status->state : "-");
    debug_resource("capability", q->capability);
    debug_resource("guarantee", q->guarantee ? q->guarantee->resource : NULL);
    debug_resource("deserved", q->deserved);
  }
  for (size_t i = 0; i < s->n_pod_groups; i++) {
    const Kiln__PodGroup *pg = s->pod_groups[i];
    fprintf(stderr, "podgroup %s queue %s min %d phase %s\n", pg->metadata->name, pg->spec->queue,
            pg->spec->min_member, pg->status->phase);
    debug_resource("minResources", pg->spec->min_resources);
  }
  for (size_t i = 0; i < s->n_pods; i++) {
    const Kiln__Pod *p = s->pods[i];
    fprintf(stderr, "pod %s group %s phase %d node %s\n", p->name,
            p->group_name ? p->group_name : "-", p->phase, p->node_name ? p->node_name : "-");
    debug_resource("requests", p->requests);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* The plugins log what they refuse; the log is not what is being tested (and stderr is
   * where the fuzzer and the sanitizers report). */
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd >= 0)
    kc_log_set_stream_fd(fd);
  for (size_t i = 0; i < NCONFS; i++) {
    char err[256];
    if (sch_conf_parse(conf_texts[i], strlen(conf_texts[i]), &confs[i], err, sizeof(err)) != 0) {
      fprintf(stdout, "configuration %zu: %s\n", i, err);
      abort();
    }
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static sch_resource idle0[MAX_NODES];
  static int32_t node0[MAX_PODS];
  static bool seen[MAX_PODS];
  fz_rd r = {.d = data, .n = size};
  arena.used = 0;
  size_t ci = fz_pick(&r, NCONFS);
  const sch_conf *conf = confs[ci];
  if (getenv("FZ_DEBUG"))
    fprintf(stderr, "configuration %zu\n", ci);
  Kiln__Snapshot *msg = gen_snapshot(&r);
  if (getenv("FZ_DEBUG"))
    debug_snapshot(msg);
  sch_snapshot *snap = NULL;
  int rc = sch_snapshot_new(msg, NULL, &snap);
  if (rc > 0)
    abort();
  if (rc < 0)
    return 0;
  if (snap->nnodes > MAX_NODES || snap->ntasks > MAX_PODS)
    abort();
  for (int32_t n = 0; n < snap->nnodes; n++)
    idle0[n] = snap->nodes[n].idle;
  for (int32_t t = 0; t < snap->ntasks; t++)
    node0[t] = snap->tasks[t].node;
  sch_session *ssn = NULL;
  rc = sch_session_open(snap, conf, NULL, &ssn);
  if (rc > 0)
    abort();
  if (rc == 0) {
    rc = sch_session_run(ssn);
    if (rc > 0)
      abort();
    sch_result *res = NULL;
    rc = sch_session_close(ssn, &res);
    if (rc > 0 || (rc == 0 && !res))
      abort();
    if (res)
      check_result(snap, res, idle0, node0, seen);
    sch_result_free(res);
  }
  sch_snapshot_free(snap);
  return 0;
}
