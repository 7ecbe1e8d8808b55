/* sessions: the scheduler's session code on one synthetic snapshot, in process (issue 7
 * item 4). The snapshot is built as a protobuf Kiln__Snapshot, packed and unpacked again, so it
 * is exactly what `kiln-scheduler --dump-snapshot` writes and what kiln-replay reads.
 *
 *   sessions --nodes N --pending P --gang G --running R [--scheduler-conf FILE]
 *            [--write-snapshot FILE] [--node-cpu M] [--pod-cpu M] ...
 *
 * Nodes: 64 cpu / 256Gi / 250 pods by default. Pending pods (500m, 1Gi) come in PodGroups of
 * G with minMember G, phase Pending, so the whole default configuration (enqueue, allocate,
 * backfill) runs. Running pods (100m, 256Mi) are spread round-robin over the nodes in Running
 * PodGroups of G. One queue, "default"; with --queues Q (issue 13), Q queues in a hierarchy
 * under `root` instead: Q/10 parents, each with its share of the leaves, deserved splitting the
 * cluster evenly at each level, the PodGroups spread round-robin over the leaves, and (without
 * --scheduler-conf) Volcano's default tiers with capacity and enableHierarchy in place of
 * proportion.
 *
 * With --claims D (issue 29), Dynamic Resource Allocation: each node publishes a ResourceSlice
 * of D devices of the driver gpu.example.com, the DeviceClass gpu.example.com selects them
 * with a CEL expression, and each pending pod has a ResourceClaim of its own for one device of
 * that class whose request selects a100 devices with CEL; the default configuration with
 * predicate.DynamicResourceAllocationEnable. The devices count as resources of their class in
 * every pod's request and every node's allocatable (sch_dra_count.c).
 *
 * With --volumes V (issue 29), volumes: each node has V local PersistentVolumes of 100Gi
 * (node affinity kubernetes.io/hostname In [node], the node carrying that label) of the
 * StorageClass local-nvme (kubernetes.io/no-provisioner, WaitForFirstConsumer), and each
 * pending pod mounts a PersistentVolumeClaim of its own for 10Gi of that class, unbound: the
 * volume predicates (on by default) match it to a volume on each node tried.
 *
 * Prints one JSON object: placements (binds), the snapshot build time (sch_snapshot_new), the
 * session time (open + run + close), placements per second over the session and over the
 * actions alone, peak RSS (of the message, snapshot and session: the generator's memory is
 * released and the high-water mark reset first), and heap bytes per node and per cached pod. Heap
 * bytes are malloc accounting (mallinfo2: in use, mmapped blocks included) of the unpacked message
 * plus the sch_snapshot: per node from a snapshot of the nodes alone, per pod from the rest of the
 * full one divided by its pods (their PodGroups included). With --write-snapshot the packed
 * snapshot is written (same bytes as a dump) and no session runs. */
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "kc_error.h"
#include "kc_flags.h"
#include "kc_log.h"
#include "sch_conf.h"
#include "sch_conf_file.h"
#include "sch_framework.h"

#define GI (1024LL * 1024 * 1024)
#define MI (1024LL * 1024)

typedef struct gen_opts {
  bool shapes; /* labels, taints, selectors, affinity and tolerations (see shape_node) */
  /* Running PodGroups are low priority with minMember 1, pending ones high priority: the
   * preempt action has victims everywhere. */
  bool preempt;
  int nodes, pending, gang, running;
  int queues; /* 0: the one queue "default"; else a hierarchy of that many under root */
  /* --topology T (issue 30): HyperNodes in 3 tiers (leaves of leaf_nodes nodes, 8 leaves a
   * spine, 8 spines a tier-3 domain), the pending gangs hard with highestTierAllowed T, and the
   * network-topology-aware plugin in the configuration; 0: none. */
  int topology, leaf_nodes;
  int claims;  /* devices per node; each pending pod claims one (0: no DRA objects) */
  int volumes; /* local PersistentVolumes per node; each pending pod a claim (0: none) */
  int node_milli_cpu, node_gi, node_pods;
  int pod_milli_cpu, pod_mi;
  int run_milli_cpu, run_mi;
  /* --vgpu G (issue 31): every node registers G vGPUs of 24,000 MiB (split 10) as Volcano's
   * vGPU device plugin does, every pending pod asks for one of vgpu_mem MiB, and the
   * configuration adds deviceshare with VGPUEnable. */
  int vgpu, vgpu_mem;
} gen_opts;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_bytes(void) {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

/* Allocation helpers: every piece is malloc'd so that kiln__snapshot__free_unpacked frees the
 * whole generated message. They abort on failure: this is a benchmark, not a server. */
static void *xcalloc(size_t n) {
  void *p = calloc(1, n);
  if (p == NULL) {
    fprintf(stderr, "sessions: out of memory\n");
    exit(1);
  }
  return p;
}

static char *xstrf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xstrf(const char *fmt, ...) {
  char buf[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  size_t n = strlen(buf) + 1;
  char *s = xcalloc(n);
  memcpy(s, buf, n);
  return s;
}

static Kiln__Resource *res(int64_t milli_cpu, int64_t memory, int64_t pods) {
  Kiln__Resource *r = xcalloc(sizeof(*r));
  kiln__resource__init(r);
  r->milli_cpu = milli_cpu;
  r->memory = memory;
  r->pods = pods;
  return r;
}

static Kiln__ObjectMeta *meta(const char *ns, char *name) {
  Kiln__ObjectMeta *m = xcalloc(sizeof(*m));
  kiln__object_meta__init(m);
  m->name = name;
  if (ns)
    m->namespace_ = xstrf("%s", ns);
  m->uid = xstrf("uid-%s", name);
  m->creation_timestamp = xstrf("2026-11-29T10:00:00Z");
  return m;
}

static Kiln__PodGroup *pod_group(char *name, int32_t min_member, const char *phase,
                                 const char *priority_class, const char *queue) {
  Kiln__PodGroup *pg = xcalloc(sizeof(*pg));
  kiln__pod_group__init(pg);
  pg->metadata = meta("bench", name);
  pg->spec = xcalloc(sizeof(*pg->spec));
  kiln__pod_group_spec__init(pg->spec);
  pg->spec->has_min_member = 1;
  pg->spec->min_member = min_member;
  pg->spec->queue = xstrf("%s", queue);
  if (priority_class)
    pg->spec->priority_class_name = xstrf("%s", priority_class);
  pg->status = xcalloc(sizeof(*pg->status));
  kiln__pod_group_status__init(pg->status);
  pg->status->phase = xstrf("%s", phase);
  return pg;
}

static Kiln__Pod *pod(const char *group, int k, int64_t milli_cpu, int64_t memory,
                      const char *node) {
  Kiln__Pod *p = xcalloc(sizeof(*p));
  kiln__pod__init(p);
  p->namespace_ = xstrf("bench");
  p->name = xstrf("%s-%d", group, k);
  p->uid = xstrf("uid-%s-%d", group, k);
  p->scheduler_name = xstrf("volcano");
  p->group_name = xstrf("%s", group);
  p->task_name = xstrf("worker");
  p->requests = res(milli_cpu, memory, 1);
  p->container_requests = res(milli_cpu, memory, 1);
  p->owner_kind = xstrf("Job");
  p->owner_name = xstrf("%s", group);
  p->creation_time = 1796000000;
  if (node) {
    p->node_name = xstrf("%s", node);
    p->phase = KILN__POD_PHASE__POD_PHASE_RUNNING;
  } else {
    p->phase = KILN__POD_PHASE__POD_PHASE_PENDING;
  }
  return p;
}

/* --shapes: node i is in zone-(i%4); every 7th node has a NoSchedule taint dedicated=infra,
 * every 5th a PreferNoSchedule taint spot. Pending PodGroup g's pods (all alike, one
 * template) select their zone (g%3 == 1), tolerate dedicated (g%3 == 2), prefer zone-1
 * (g%4 == 0), tolerate spot (g odd); every 17th from the 5th selects zone-9, which no node
 * has, so that some gangs cannot fit for a reason that is not resources. */
static void shape_node(Kiln__Node *n, int i) {
  n->n_labels = 1;
  n->labels = xcalloc(sizeof(*n->labels));
  n->labels[0] = xcalloc(sizeof(*n->labels[0]));
  kiln__node__labels_entry__init(n->labels[0]);
  n->labels[0]->key = xstrf("zone");
  n->labels[0]->value = xstrf("zone-%d", i % 4);
  n->taints = xcalloc(2 * sizeof(*n->taints));
  if (i % 7 == 0) {
    Kiln__Taint *t = n->taints[n->n_taints++] = xcalloc(sizeof(*t));
    kiln__taint__init(t);
    t->key = xstrf("dedicated");
    t->value = xstrf("infra");
    t->effect = KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE;
  }
  if (i % 5 == 0) {
    Kiln__Taint *t = n->taints[n->n_taints++] = xcalloc(sizeof(*t));
    kiln__taint__init(t);
    t->key = xstrf("spot");
    t->value = xstrf("true");
    t->effect = KILN__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE;
  }
}

static void add_toleration(Kiln__Pod *p, const char *key, const char *value,
                           Kiln__TolerationOperator op, Kiln__TaintEffect effect) {
  Kiln__Toleration **v = realloc(p->tolerations, (p->n_tolerations + 1) * sizeof(*v));
  if (v == NULL) {
    fprintf(stderr, "sessions: out of memory\n");
    exit(1);
  }
  p->tolerations = v;
  Kiln__Toleration *t = v[p->n_tolerations++] = xcalloc(sizeof(*t));
  kiln__toleration__init(t);
  t->key = xstrf("%s", key);
  t->operator_ = op;
  t->value = xstrf("%s", value);
  t->effect = effect;
}

static void shape_pod(Kiln__Pod *p, int g) {
  int zone = g % 17 == 5 ? 9 : g % 3 == 1 ? g % 4 : -1;
  if (zone >= 0) {
    p->n_node_selector = 1;
    p->node_selector = xcalloc(sizeof(*p->node_selector));
    p->node_selector[0] = xcalloc(sizeof(*p->node_selector[0]));
    kiln__pod__node_selector_entry__init(p->node_selector[0]);
    p->node_selector[0]->key = xstrf("zone");
    p->node_selector[0]->value = xstrf("zone-%d", zone);
  }
  if (g % 3 == 2)
    add_toleration(p, "dedicated", "infra", KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL,
                   KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE);
  if (g % 2 == 1)
    add_toleration(p, "spot", "", KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS,
                   KILN__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE);
  if (g % 4 == 0) {
    Kiln__NodeSelectorRequirement *req = xcalloc(sizeof(*req));
    kiln__node_selector_requirement__init(req);
    req->key = xstrf("zone");
    req->operator_ = xstrf("In");
    req->n_values = 1;
    req->values = xcalloc(sizeof(*req->values));
    req->values[0] = xstrf("zone-1");
    Kiln__NodeSelectorTerm *term = xcalloc(sizeof(*term));
    kiln__node_selector_term__init(term);
    term->n_match_expressions = 1;
    term->match_expressions = xcalloc(sizeof(*term->match_expressions));
    term->match_expressions[0] = req;
    Kiln__PreferredSchedulingTerm *pt = xcalloc(sizeof(*pt));
    kiln__preferred_scheduling_term__init(pt);
    pt->weight = 10;
    pt->preference = term;
    p->n_preferred_node_terms = 1;
    p->preferred_node_terms = xcalloc(sizeof(*p->preferred_node_terms));
    p->preferred_node_terms[0] = pt;
  }
}

#define DRA_CLASS "gpu.example.com"

static Kiln__DraDeviceSelector *cel(const char *expr) {
  Kiln__DraDeviceSelector *s = xcalloc(sizeof(*s));
  kiln__dra_device_selector__init(s);
  s->cel = xcalloc(sizeof(*s->cel));
  kiln__dra_cel_selector__init(s->cel);
  s->cel->expression = xstrf("%s", expr);
  return s;
}

/* --claims: node's slice of n devices "<node>-gpu-<k>" (model a100, index k). */
static Kiln__ResourceSlice *slice(const char *node, int n) {
  Kiln__ResourceSlice *rs = xcalloc(sizeof(*rs));
  kiln__resource_slice__init(rs);
  rs->metadata = meta(NULL, xstrf("%s-gpu", node));
  rs->spec = xcalloc(sizeof(*rs->spec));
  kiln__resource_slice_spec__init(rs->spec);
  rs->spec->driver = xstrf(DRA_CLASS);
  rs->spec->node_name = xstrf("%s", node);
  rs->spec->pool = xcalloc(sizeof(*rs->spec->pool));
  kiln__dra_pool__init(rs->spec->pool);
  rs->spec->pool->name = xstrf("%s", node);
  rs->spec->n_devices = (size_t)n;
  rs->spec->devices = xcalloc((size_t)n * sizeof(*rs->spec->devices));
  for (int k = 0; k < n; k++) {
    Kiln__DraDevice *d = rs->spec->devices[k] = xcalloc(sizeof(*d));
    kiln__dra_device__init(d);
    d->name = xstrf("%s-gpu-%d", node, k);
    d->n_attributes = 2;
    d->attributes = xcalloc(2 * sizeof(*d->attributes));
    for (int a = 0; a < 2; a++) {
      Kiln__DraDevice__AttributesEntry *e = d->attributes[a] = xcalloc(sizeof(*e));
      kiln__dra_device__attributes_entry__init(e);
      e->key = xstrf("%s", a ? "index" : "model");
      e->value = xcalloc(sizeof(*e->value));
      kiln__dra_device_attribute__init(e->value);
      if (a) {
        e->value->has_int_ = 1;
        e->value->int_ = k;
      } else {
        e->value->string = xstrf("a100");
      }
    }
  }
  return rs;
}

/* --claims: the claim of pending pod p, for one device of the class, and p's entry for it. */
static Kiln__ResourceClaim *claim_for(Kiln__Pod *p) {
  Kiln__ResourceClaim *c = xcalloc(sizeof(*c));
  kiln__resource_claim__init(c);
  c->metadata = meta("bench", xstrf("%s", p->name));
  c->spec = xcalloc(sizeof(*c->spec));
  kiln__resource_claim_spec__init(c->spec);
  c->spec->devices = xcalloc(sizeof(*c->spec->devices));
  kiln__dra_device_claim__init(c->spec->devices);
  Kiln__DraDeviceRequest *r = xcalloc(sizeof(*r));
  kiln__dra_device_request__init(r);
  r->name = xstrf("gpu");
  r->exactly = xcalloc(sizeof(*r->exactly));
  kiln__dra_exact_request__init(r->exactly);
  r->exactly->device_class_name = xstrf(DRA_CLASS);
  r->exactly->has_count = 1;
  r->exactly->count = 1;
  r->exactly->n_selectors = 1;
  r->exactly->selectors = xcalloc(sizeof(*r->exactly->selectors));
  r->exactly->selectors[0] = cel("device.attributes[\"" DRA_CLASS "\"].model == \"a100\"");
  c->spec->devices->n_requests = 1;
  c->spec->devices->requests = xcalloc(sizeof(*c->spec->devices->requests));
  c->spec->devices->requests[0] = r;
  Kiln__PodResourceClaim *pc = xcalloc(sizeof(*pc));
  kiln__pod_resource_claim__init(pc);
  pc->name = xstrf("gpu");
  pc->resource_claim_name = xstrf("%s", p->name);
  p->n_resource_claims = 1;
  p->resource_claims = xcalloc(sizeof(*p->resource_claims));
  p->resource_claims[0] = pc;
  return c;
}

#define VOL_CLASS "local-nvme"

/* Appends the label k=v to node n. */
static void add_node_label(Kiln__Node *n, const char *k, const char *v) {
  Kiln__Node__LabelsEntry **l = xcalloc((n->n_labels + 1) * sizeof(*l));
  if (n->n_labels)
    memcpy(l, n->labels, n->n_labels * sizeof(*l));
  free(n->labels);
  n->labels = l;
  Kiln__Node__LabelsEntry *e = l[n->n_labels++] = xcalloc(sizeof(*e));
  kiln__node__labels_entry__init(e);
  e->key = xstrf("%s", k);
  e->value = xstrf("%s", v);
}

/* --volumes: node's hostname affinity (kubernetes.io/hostname In [node]). */
static Kiln__VolumeNodeAffinity *on_host(const char *node) {
  Kiln__NodeSelectorRequirement *r = xcalloc(sizeof(*r));
  kiln__node_selector_requirement__init(r);
  r->key = xstrf("kubernetes.io/hostname");
  r->operator_ = xstrf("In");
  r->n_values = 1;
  r->values = xcalloc(sizeof(*r->values));
  r->values[0] = xstrf("%s", node);
  Kiln__NodeSelectorTerm *t = xcalloc(sizeof(*t));
  kiln__node_selector_term__init(t);
  t->n_match_expressions = 1;
  t->match_expressions = xcalloc(sizeof(*t->match_expressions));
  t->match_expressions[0] = r;
  Kiln__VolumeNodeAffinity *na = xcalloc(sizeof(*na));
  kiln__volume_node_affinity__init(na);
  na->required = xcalloc(sizeof(*na->required));
  kiln__vol_node_selector__init(na->required);
  na->required->n_node_selector_terms = 1;
  na->required->node_selector_terms = xcalloc(sizeof(t));
  na->required->node_selector_terms[0] = t;
  return na;
}

/* --volumes: the k-th local volume of node (100Gi, Available, only on that node). */
static Kiln__PersistentVolume *local_pv(const char *node, int k) {
  Kiln__PersistentVolume *pv = xcalloc(sizeof(*pv));
  kiln__persistent_volume__init(pv);
  pv->metadata = meta(NULL, xstrf("%s-pv-%d", node, k));
  Kiln__PersistentVolumeSpec *sp = pv->spec = xcalloc(sizeof(*sp));
  kiln__persistent_volume_spec__init(sp);
  sp->n_capacity = 1;
  sp->capacity = xcalloc(sizeof(*sp->capacity));
  sp->capacity[0] = xcalloc(sizeof(*sp->capacity[0]));
  kiln__persistent_volume_spec__capacity_entry__init(sp->capacity[0]);
  sp->capacity[0]->key = xstrf("storage");
  sp->capacity[0]->value = xstrf("100Gi");
  sp->n_access_modes = 1;
  sp->access_modes = xcalloc(sizeof(*sp->access_modes));
  sp->access_modes[0] = xstrf("ReadWriteOnce");
  sp->storage_class_name = xstrf(VOL_CLASS);
  sp->node_affinity = on_host(node);
  pv->status = xcalloc(sizeof(*pv->status));
  kiln__persistent_volume_status__init(pv->status);
  pv->status->phase = xstrf("Available");
  return pv;
}

/* --volumes: the StorageClass and every node's volumes (and hostname label). */
static void add_volumes(Kiln__Snapshot *m, const gen_opts *o) {
  Kiln__StorageClass *sc = xcalloc(sizeof(*sc));
  kiln__storage_class__init(sc);
  sc->metadata = meta(NULL, xstrf(VOL_CLASS));
  sc->provisioner = xstrf("kubernetes.io/no-provisioner");
  sc->volume_binding_mode = xstrf("WaitForFirstConsumer");
  m->n_storage_classes = 1;
  m->storage_classes = xcalloc(sizeof(*m->storage_classes));
  m->storage_classes[0] = sc;
  m->n_persistent_volumes = (size_t)o->nodes * (size_t)o->volumes;
  m->persistent_volumes = xcalloc(m->n_persistent_volumes * sizeof(*m->persistent_volumes));
  for (int i = 0; i < o->nodes; i++) {
    add_node_label(m->nodes[i], "kubernetes.io/hostname", m->nodes[i]->name);
    for (int k = 0; k < o->volumes; k++)
      m->persistent_volumes[(size_t)i * (size_t)o->volumes + (size_t)k] =
          local_pv(m->nodes[i]->name, k);
  }
}

/* --volumes: the unbound claim of pending pod p (10Gi of the class), and p's volume. */
static Kiln__PersistentVolumeClaim *pvc_for(Kiln__Pod *p) {
  Kiln__PersistentVolumeClaim *c = xcalloc(sizeof(*c));
  kiln__persistent_volume_claim__init(c);
  c->metadata = meta("bench", xstrf("%s-data", p->name));
  Kiln__PersistentVolumeClaimSpec *sp = c->spec = xcalloc(sizeof(*sp));
  kiln__persistent_volume_claim_spec__init(sp);
  sp->n_access_modes = 1;
  sp->access_modes = xcalloc(sizeof(*sp->access_modes));
  sp->access_modes[0] = xstrf("ReadWriteOnce");
  sp->storage_class_name = xstrf(VOL_CLASS);
  sp->resources = xcalloc(sizeof(*sp->resources));
  kiln__vol_resources__init(sp->resources);
  sp->resources->n_requests = 1;
  sp->resources->requests = xcalloc(sizeof(*sp->resources->requests));
  sp->resources->requests[0] = xcalloc(sizeof(*sp->resources->requests[0]));
  kiln__vol_resources__requests_entry__init(sp->resources->requests[0]);
  sp->resources->requests[0]->key = xstrf("storage");
  sp->resources->requests[0]->value = xstrf("10Gi");
  c->status = xcalloc(sizeof(*c->status));
  kiln__persistent_volume_claim_status__init(c->status);
  c->status->phase = xstrf("Pending");
  Kiln__PodVolume *v = xcalloc(sizeof(*v));
  kiln__pod_volume__init(v);
  v->name = xstrf("data");
  v->persistent_volume_claim = xcalloc(sizeof(*v->persistent_volume_claim));
  kiln__pod_pvc_source__init(v->persistent_volume_claim);
  v->persistent_volume_claim->claim_name = xstrf("%s-data", p->name);
  p->n_volumes = 1;
  p->volumes = xcalloc(sizeof(*p->volumes));
  p->volumes[0] = v;
  return c;
}

/* --claims: the DeviceClass and every node's slice. */
static void add_devices(Kiln__Snapshot *m, const gen_opts *o) {
  Kiln__DeviceClass *dc = xcalloc(sizeof(*dc));
  kiln__device_class__init(dc);
  dc->metadata = meta(NULL, xstrf(DRA_CLASS));
  dc->spec = xcalloc(sizeof(*dc->spec));
  kiln__device_class_spec__init(dc->spec);
  dc->spec->n_selectors = 1;
  dc->spec->selectors = xcalloc(sizeof(*dc->spec->selectors));
  dc->spec->selectors[0] = cel("device.driver == \"" DRA_CLASS "\"");
  m->n_device_classes = 1;
  m->device_classes = xcalloc(sizeof(*m->device_classes));
  m->device_classes[0] = dc;
  m->n_resource_slices = (size_t)o->nodes;
  m->resource_slices = xcalloc((size_t)o->nodes * sizeof(*m->resource_slices));
  for (int i = 0; i < o->nodes; i++)
    m->resource_slices[i] = slice(m->nodes[i]->name, o->claims);
}

/* A *new* message (free with kiln__snapshot__free_unpacked(msg, NULL)). nodes_only leaves out
 * pods and PodGroups (for the per-node memory figure). */
static Kiln__Queue *queue(const char *name, const char *parent, int64_t deserved_milli_cpu) {
  Kiln__Queue *q = xcalloc(sizeof(*q));
  kiln__queue__init(q);
  q->metadata = meta(NULL, xstrf("%s", name));
  q->spec = xcalloc(sizeof(*q->spec));
  kiln__queue_spec__init(q->spec);
  q->spec->has_weight = 1;
  q->spec->weight = 1;
  if (parent)
    q->spec->parent = xstrf("%s", parent);
  if (deserved_milli_cpu > 0)
    q->spec->deserved = res(deserved_milli_cpu, 0, 0);
  return q;
}

/* --queues Q: root, Q/10 parents (at least 1) and Q - parents leaves; deserved cpu splits the
 * cluster evenly among the parents and each parent's among its leaves. */
static int nparents(const gen_opts *o) {
  return o->queues / 10 > 0 ? o->queues / 10 : 1;
}

static void leaf_name(const gen_opts *o, int i, char *buf, size_t len) {
  if (o->queues == 0)
    snprintf(buf, len, "default");
  else
    snprintf(buf, len, "leaf-%03d", i % (o->queues - nparents(o)));
}

static void add_queues(Kiln__Snapshot *m, const gen_opts *o) {
  if (o->queues == 0) {
    m->n_queues = 1;
    m->queues = xcalloc(sizeof(*m->queues));
    m->queues[0] = queue("default", NULL, 0);
    return;
  }
  int np = nparents(o), nl = o->queues - np;
  int64_t total = (int64_t)o->nodes * o->node_milli_cpu;
  m->n_queues = (size_t)o->queues + 1;
  m->queues = xcalloc(m->n_queues * sizeof(*m->queues));
  m->queues[0] = queue("root", NULL, 0);
  for (int p = 0; p < np; p++) {
    char name[32];
    snprintf(name, sizeof(name), "parent-%03d", p);
    m->queues[1 + p] = queue(name, NULL, total / np);
  }
  for (int l = 0; l < nl; l++) {
    char name[32], parent[32];
    snprintf(name, sizeof(name), "leaf-%03d", l);
    snprintf(parent, sizeof(parent), "parent-%03d", l % np);
    int per_parent = nl / np + (l % np < nl % np ? 1 : 0);
    m->queues[1 + np + l] = queue(name, parent, total / np / per_parent);
  }
}

/* A HyperNode of the tier with members of type (Node or HyperNode) named <prefix><i>, i in
 * from..to-1 written with width digits. */
static Kiln__HyperNode *hypernode(char *name, int32_t tier, const char *type, const char *prefix,
                                  int width, int from, int to) {
  Kiln__HyperNode *h = xcalloc(sizeof(*h));
  kiln__hyper_node__init(h);
  h->metadata = meta(NULL, name);
  h->spec = xcalloc(sizeof(*h->spec));
  kiln__hyper_node_spec__init(h->spec);
  h->spec->has_tier = 1;
  h->spec->tier = tier;
  h->spec->n_members = (size_t)(to - from);
  h->spec->members = xcalloc((size_t)(to - from) * sizeof(*h->spec->members));
  for (int i = from; i < to; i++) {
    Kiln__HyperNodeMember *mb = h->spec->members[i - from] = xcalloc(sizeof(*mb));
    kiln__hyper_node_member__init(mb);
    mb->type = xstrf("%s", type);
    mb->selector = xcalloc(sizeof(*mb->selector));
    kiln__hyper_node_selector__init(mb->selector);
    mb->selector->exact_match = xcalloc(sizeof(*mb->selector->exact_match));
    kiln__hyper_node_exact_match__init(mb->selector->exact_match);
    mb->selector->exact_match->name = xstrf("%s%0*d", prefix, width, i);
  }
  return h;
}

/* --topology: leaves of leaf_nodes nodes, spines of 8 leaves, tier-3 domains of 8 spines. */
static void add_hypernodes(Kiln__Snapshot *m, const gen_opts *o) {
  int leaves = (o->nodes + o->leaf_nodes - 1) / o->leaf_nodes;
  int spines = (leaves + 7) / 8, tops = (spines + 7) / 8;
  m->n_hyper_nodes = (size_t)(leaves + spines + tops);
  m->hyper_nodes = xcalloc(m->n_hyper_nodes * sizeof(*m->hyper_nodes));
  size_t k = 0;
  for (int i = 0; i < leaves; i++) {
    int to = (i + 1) * o->leaf_nodes < o->nodes ? (i + 1) * o->leaf_nodes : o->nodes;
    m->hyper_nodes[k++] =
        hypernode(xstrf("leaf-%04d", i), 1, "Node", "node-", 5, i * o->leaf_nodes, to);
  }
  for (int i = 0; i < spines; i++)
    m->hyper_nodes[k++] = hypernode(xstrf("spine-%03d", i), 2, "HyperNode", "leaf-", 4, i * 8,
                                    (i + 1) * 8 < leaves ? (i + 1) * 8 : leaves);
  for (int i = 0; i < tops; i++)
    m->hyper_nodes[k++] = hypernode(xstrf("block-%02d", i), 3, "HyperNode", "spine-", 3, i * 8,
                                    (i + 1) * 8 < spines ? (i + 1) * 8 : spines);
}

/* The node's vGPU registration and a live handshake (sch_device.c reads both). */
static void vgpu_node(Kiln__Node *n, int i, int gpus, int64_t now) {
  n->devices = xcalloc(sizeof(*n->devices));
  kiln__node_devices__init(n->devices);
  size_t cap = (size_t)gpus * 64 + 1, off = 0;
  char *reg = xcalloc(cap);
  for (int g = 0; g < gpus; g++)
    off += (size_t)snprintf(reg + off, cap - off,
                            "GPU-%05d-%02d,10,24000,NVIDIA-A100,true,hami-core:", i, g);
  n->devices->vgpu_register = reg;
  struct tm tm;
  time_t t = (time_t)now;
  gmtime_r(&t, &tm);
  n->devices->vgpu_handshake = xstrf("Requesting_%04d.%02d.%02d %02d:%02d:%02d", tm.tm_year + 1900,
                                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void vgpu_pod(Kiln__Pod *p, int64_t mem) {
  p->devices = xcalloc(sizeof(*p->devices));
  kiln__pod_devices__init(p->devices);
  p->devices->n_vgpu = 1;
  p->devices->vgpu = xcalloc(sizeof(*p->devices->vgpu));
  Kiln__VgpuRequest *v = p->devices->vgpu[0] = xcalloc(sizeof(*v));
  kiln__vgpu_request__init(v);
  v->nums = 1;
  v->memory = mem;
  v->memory_percentage = 101;
}

/* The pending PodGroups of gang pods (hard topology with --topology) and their pods, from
 * pods[np] and pod_groups[ng] on. */
static void add_pending(Kiln__Snapshot *m, const gen_opts *o, int gang, int pend_groups, size_t np,
                        size_t ng) {
  for (int g = 0; g < pend_groups; g++) {
    int size = o->pending - g * gang < gang ? o->pending - g * gang : gang;
    char qname[32];
    leaf_name(o, g, qname, sizeof(qname));
    Kiln__PodGroup *pg = m->pod_groups[ng++] =
        pod_group(xstrf("job-%06d", g), size, "Pending", o->preempt ? "high" : NULL, qname);
    if (o->topology) {
      pg->spec->network_topology = xcalloc(sizeof(*pg->spec->network_topology));
      kiln__network_topology__init(pg->spec->network_topology);
      pg->spec->network_topology->mode = xstrf("hard");
      pg->spec->network_topology->has_highest_tier_allowed = 1;
      pg->spec->network_topology->highest_tier_allowed = o->topology;
    }
    char group[32];
    snprintf(group, sizeof(group), "job-%06d", g);
    for (int k = 0; k < size; k++) {
      Kiln__Pod *p = m->pods[np++] = pod(group, k, o->pod_milli_cpu, (int64_t)o->pod_mi * MI, NULL);
      if (o->preempt)
        p->priority = 1000;
      if (o->shapes)
        shape_pod(p, g);
      if (o->vgpu > 0)
        vgpu_pod(p, o->vgpu_mem);
      if (o->claims > 0)
        m->resource_claims[np - 1 - (size_t)o->running] = claim_for(p);
      if (o->volumes > 0)
        m->persistent_volume_claims[np - 1 - (size_t)o->running] = pvc_for(p);
    }
  }
}

static Kiln__Snapshot *generate(const gen_opts *o, bool nodes_only) {
  Kiln__Snapshot *m = xcalloc(sizeof(*m));
  kiln__snapshot__init(m);
  m->time_unix_nano = (int64_t)time(NULL) * 1000000000; /* taken now, as a live one */
  m->scheduler_name = xstrf("volcano");
  add_queues(m, o);
  m->n_nodes = (size_t)o->nodes;
  m->nodes = xcalloc((size_t)o->nodes * sizeof(*m->nodes));
  for (int i = 0; i < o->nodes; i++) {
    Kiln__Node *n = m->nodes[i] = xcalloc(sizeof(*n));
    kiln__node__init(n);
    n->name = xstrf("node-%05d", i);
    n->allocatable = res(o->node_milli_cpu, (int64_t)o->node_gi * GI, o->node_pods);
    n->capacity = res(o->node_milli_cpu, (int64_t)o->node_gi * GI, o->node_pods);
    n->ready = 1;
    if (o->shapes)
      shape_node(n, i);
    if (o->vgpu > 0)
      vgpu_node(n, i, o->vgpu, m->time_unix_nano / 1000000000);
  }
  if (o->claims > 0)
    add_devices(m, o);
  if (o->volumes > 0)
    add_volumes(m, o);
  if (nodes_only)
    return m;
  if (o->topology)
    add_hypernodes(m, o);
  if (o->claims > 0) {
    m->n_resource_claims = (size_t)o->pending;
    m->resource_claims =
        xcalloc((o->pending ? (size_t)o->pending : 1) * sizeof(*m->resource_claims));
  }
  if (o->volumes > 0) {
    m->n_persistent_volume_claims = (size_t)o->pending;
    m->persistent_volume_claims =
        xcalloc((o->pending ? (size_t)o->pending : 1) * sizeof(*m->persistent_volume_claims));
  }
  if (o->preempt) {
    static const struct {
      const char *name;
      int32_t value;
    } classes[] = {{"low", 10}, {"high", 1000}};
    m->n_priority_classes = 2;
    m->priority_classes = xcalloc(2 * sizeof(*m->priority_classes));
    for (int i = 0; i < 2; i++) {
      Kiln__PriorityClass *pc = m->priority_classes[i] = xcalloc(sizeof(*pc));
      kiln__priority_class__init(pc);
      pc->metadata = meta(NULL, xstrf("%s", classes[i].name));
      pc->has_value = 1;
      pc->value = classes[i].value;
    }
  }
  int gang = o->gang > 0 ? o->gang : 1;
  int run_groups = (o->running + gang - 1) / gang, pend_groups = (o->pending + gang - 1) / gang;
  m->n_pod_groups = (size_t)(run_groups + pend_groups);
  m->pod_groups = xcalloc((m->n_pod_groups ? m->n_pod_groups : 1) * sizeof(*m->pod_groups));
  m->n_pods = (size_t)(o->running + o->pending);
  m->pods = xcalloc((m->n_pods ? m->n_pods : 1) * sizeof(*m->pods));
  size_t np = 0, ng = 0;
  for (int g = 0; g < run_groups; g++) {
    int size = o->running - g * gang < gang ? o->running - g * gang : gang;
    char qname[32];
    leaf_name(o, g, qname, sizeof(qname));
    m->pod_groups[ng++] = pod_group(xstrf("run-%06d", g), o->preempt ? 1 : size, "Running",
                                    o->preempt ? "low" : NULL, qname);
    char group[32];
    snprintf(group, sizeof(group), "run-%06d", g);
    for (int k = 0; k < size; k++) {
      int i = g * gang + k;
      m->pods[np++] =
          pod(group, k, o->run_milli_cpu, (int64_t)o->run_mi * MI, m->nodes[i % o->nodes]->name);
    }
  }
  add_pending(m, o, gang, pend_groups, np, ng);
  return m;
}

/* Packs msg into a *new* buffer (*len bytes). */
static uint8_t *pack(const Kiln__Snapshot *msg, size_t *len) {
  *len = kiln__snapshot__get_packed_size(msg);
  uint8_t *buf = xcalloc(*len ? *len : 1);
  kiln__snapshot__pack(msg, buf);
  return buf;
}

/* Heap bytes held by the unpacked message and its sch_snapshot (both freed again). */
static int cached_bytes(const uint8_t *buf, size_t len, size_t *out) {
  size_t h0 = heap_bytes();
  Kiln__Snapshot *msg = kiln__snapshot__unpack(NULL, len, buf);
  if (msg == NULL)
    return KC_EINVAL;
  sch_snapshot *snap = NULL;
  int rc = sch_snapshot_new(msg, NULL, &snap);
  if (rc == 0)
    *out = heap_bytes() - h0;
  sch_snapshot_free(snap);
  kiln__snapshot__free_unpacked(msg, NULL);
  return rc;
}

static bool reset_peak_rss(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (f == NULL)
    return false;
  bool ok = fputs("5", f) >= 0;
  return fclose(f) == 0 && ok;
}

/* VmHWM from /proc/self/status, or getrusage's maximum where there is no /proc. */
static long peak_rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof(line), f)) {
    if (strncmp(line, "VmHWM:", 6) == 0) {
      char *end;
      kb = strtol(line + 6, &end, 10);
      break;
    }
  }
  if (f)
    fclose(f);
  if (kb < 0) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    kb = ru.ru_maxrss;
  }
  return kb;
}

/* Without --scheduler-conf: Volcano's default configuration (sch_conf_default_yaml) with its
 * text `from` replaced by `to` and `extra` appended: preempt after allocate for --preempt,
 * capacity (enableHierarchy) in place of proportion, and binpack, for --queues. */
static int default_conf_with(const char *from, const char *to, const char *extra, char *out,
                             size_t cap) {
  /* On top of an earlier edit in out (--queues, --topology and --claims combine). */
  char *d = strdup(out[0] ? out : sch_conf_default_yaml);
  if (!d)
    return KC_ENOMEM;
  const char *at = strstr(d, from);
  int n = at ? snprintf(out, cap, "%.*s%s%s%s", (int)(at - d), d, to, at + strlen(from), extra) : 0;
  free(d);
  if (!at)
    return KC_EINVAL;
  return n < 0 || (size_t)n >= cap ? KC_ETOOBIG : 0;
}

static int read_conf(const char *path, sch_conf **out) {
  if (path == NULL || path[0] == '\0')
    return sch_conf_default(out);
  char err[512] = "";
  int rc = sch_conf_read_file(path, out, err, sizeof(err));
  if (rc != 0)
    fprintf(stderr, "sessions: scheduler configuration: %s\n", err);
  return rc;
}

int main(int argc, char **argv) {
  gen_opts o = {0};
  const char *conf_path = NULL, *write_path = NULL;
  bool help = false;
  kc_flag flags[] = {
      {"nodes", KC_FLAG_INT, &o.nodes, "nodes", "1000", NULL, false, NULL},
      {"pending", KC_FLAG_INT, &o.pending, "pending pods", "10000", NULL, false, NULL},
      {"gang", KC_FLAG_INT, &o.gang, "pods per PodGroup (minMember)", "10", NULL, false, NULL},
      {"running", KC_FLAG_INT, &o.running, "running pods", "0", NULL, false, NULL},
      {"node-cpu", KC_FLAG_INT, &o.node_milli_cpu, "node cpu (milli)", "64000", NULL, false, NULL},
      {"node-memory-gi", KC_FLAG_INT, &o.node_gi, "node memory (Gi)", "256", NULL, false, NULL},
      {"node-pods", KC_FLAG_INT, &o.node_pods, "node pod capacity", "250", NULL, false, NULL},
      {"pod-cpu", KC_FLAG_INT, &o.pod_milli_cpu, "pending pod cpu (milli)", "500", NULL, false,
       NULL},
      {"pod-memory-mi", KC_FLAG_INT, &o.pod_mi, "pending pod memory (Mi)", "1024", NULL, false,
       NULL},
      {"running-cpu", KC_FLAG_INT, &o.run_milli_cpu, "running pod cpu (milli)", "100", NULL, false,
       NULL},
      {"running-memory-mi", KC_FLAG_INT, &o.run_mi, "running pod memory (Mi)", "256", NULL, false,
       NULL},
      {"preempt", KC_FLAG_BOOL, &o.preempt,
       "running PodGroups low priority (minMember 1), pending ones high; preempt runs", "false",
       NULL, false, NULL},
      {"vgpu", KC_FLAG_INT, &o.vgpu, "vGPUs per node (24,000 MiB each; deviceshare VGPUEnable)",
       "0", NULL, false, NULL},
      {"vgpu-memory", KC_FLAG_INT, &o.vgpu_mem, "vGPU memory per pending pod (MiB)", "8000", NULL,
       false, NULL},
      {"queues", KC_FLAG_INT, &o.queues,
       "queues in a hierarchy under root (capacity with enableHierarchy), 0: one queue", "0", NULL,
       false, NULL},
      {"topology", KC_FLAG_INT, &o.topology,
       "HyperNodes in 3 tiers, gangs hard with this highestTierAllowed, network-topology-aware "
       "(0: none)",
       "0", NULL, false, NULL},
      {"leaf-nodes", KC_FLAG_INT, &o.leaf_nodes, "nodes per tier-1 HyperNode (--topology)", "16",
       NULL, false, NULL},
      {"volumes", KC_FLAG_INT, &o.volumes,
       "local PersistentVolumes per node (WaitForFirstConsumer); each pending pod claims one "
       "(0: none)",
       "0", NULL, false, NULL},
      {"claims", KC_FLAG_INT, &o.claims,
       "DRA: devices per node in a ResourceSlice; each pending pod claims one (0: none)", "0", NULL,
       false, NULL},
      {"shapes", KC_FLAG_BOOL, &o.shapes,
       "node labels and taints, pod selectors, affinity and tolerations (varied per gang)", "false",
       NULL, false, NULL},
      {"scheduler-conf", KC_FLAG_STRING, &conf_path,
       "scheduler configuration file (default: Volcano's default)", NULL, NULL, false, NULL},
      {"write-snapshot", KC_FLAG_STRING, &write_path,
       "write the packed Snapshot to FILE and run nothing", NULL, NULL, false, NULL},
      {"v", KC_FLAG_INT, &kc_log_verbosity, "log verbosity", "0", NULL, false, NULL},
      {"help", KC_FLAG_BOOL, &help, "this help", NULL, NULL, false, NULL},
  };
  const size_t nflags = sizeof(flags) / sizeof(flags[0]);
  /* Defaults are applied by parsing them: the table's def strings are for --help only. */
  o = (gen_opts){false, false, 1000, 10000, 10,  0,    0,   0,   16, 0,
                 0,     64000, 256,  250,   500, 1024, 100, 256, 0,  8000};
  char err[256];
  int nargs = 0;
  if (kc_flags_parse(flags, nflags, argc, argv, &nargs, err, sizeof(err)) != 0 || nargs > 0) {
    fprintf(stderr, "sessions: %s\n", nargs > 0 ? "unexpected argument" : err);
    return 2;
  }
  if (help) {
    kc_flags_usage(stdout, "sessions", "the scheduler's session code on a synthetic snapshot",
                   flags, nflags);
    return 0;
  }
  if (o.nodes < 1 || o.pending < 0 || o.gang < 1 || o.running < 0 || o.queues < 0 ||
      o.queues == 1 || o.topology < 0 || o.leaf_nodes < 1 || o.vgpu < 0 || o.vgpu_mem < 1 ||
      o.claims < 0 || o.volumes < 0) {
    fprintf(stderr, "sessions: --nodes and --gang want >= 1, --pending and --running >= 0, "
                    "--queues 0 or >= 2, --topology >= 0, --leaf-nodes >= 1, --vgpu >= 0, "
                    "--vgpu-memory >= 1, --claims >= 0, --volumes >= 0\n");
    return 2;
  }

  Kiln__Snapshot *gen = generate(&o, false);
  size_t len;
  uint8_t *buf = pack(gen, &len);
  kiln__snapshot__free_unpacked(gen, NULL);
  if (write_path) {
    FILE *f = fopen(write_path, "wb");
    bool ok = f && fwrite(buf, 1, len, f) == len;
    ok = f && fclose(f) == 0 && ok;
    free(buf);
    if (!ok) {
      fprintf(stderr, "sessions: cannot write %s\n", write_path);
      return 1;
    }
    fprintf(stderr, "sessions: wrote %s (%zu bytes)\n", write_path, len);
    return 0;
  }

  int rc = 1;
  size_t node_bytes = 0, all_bytes = 0;
  Kiln__Snapshot *nodes_msg = generate(&o, true);
  size_t nlen;
  uint8_t *nbuf = pack(nodes_msg, &nlen);
  kiln__snapshot__free_unpacked(nodes_msg, NULL);
  int mrc = cached_bytes(nbuf, nlen, &node_bytes);
  free(nbuf);
  if (mrc == 0)
    mrc = cached_bytes(buf, len, &all_bytes);
  if (mrc != 0) {
    fprintf(stderr, "sessions: snapshot: %s\n", kc_strerror(mrc));
    free(buf);
    return 1;
  }

  sch_conf *conf = NULL;
  sch_snapshot *snap = NULL;
  sch_session *ssn = NULL;
  sch_result *r = NULL;
  Kiln__Snapshot *msg = kiln__snapshot__unpack(NULL, len, buf);
  /* The peak RSS reported is what the unpacked message, the snapshot and the session need:
   * the packed bytes and the generator's garbage go first, then the high-water mark is reset
   * (Linux clear_refs 5); where that is not possible it is the whole run's. */
  free(buf);
  buf = NULL;
  malloc_trim(0);
  bool hwm_reset = reset_peak_rss();
  if (msg == NULL)
    goto out;
  char builtin[768] = "";
  if (conf_path == NULL && o.preempt &&
      default_conf_with("allocate, backfill", "allocate, preempt, backfill", "", builtin,
                        sizeof(builtin)) != 0)
    goto out;
  if (conf_path == NULL && !o.preempt && o.queues &&
      default_conf_with("  - name: proportion\n", "  - name: capacity\n    enableHierarchy: true\n",
                        "  - name: binpack\n", builtin, sizeof(builtin)) != 0)
    goto out;
  if (conf_path == NULL && !o.preempt && !o.queues && o.topology &&
      default_conf_with("  - name: nodeorder\n", "  - name: nodeorder\n",
                        "  - name: network-topology-aware\n", builtin, sizeof(builtin)) != 0)
    goto out;
  if (conf_path == NULL && !o.preempt && !o.queues && !o.topology && o.vgpu > 0 &&
      default_conf_with("  - name: nodeorder\n",
                        "  - name: nodeorder\n  - name: deviceshare\n    arguments:\n"
                        "      deviceshare.VGPUEnable: true\n",
                        "", builtin, sizeof(builtin)) != 0)
    goto out;
  if (conf_path == NULL && o.claims > 0 &&
      default_conf_with("  - name: predicates\n",
                        "  - name: predicates\n    arguments:\n"
                        "      predicate.DynamicResourceAllocationEnable: true\n",
                        "", builtin, sizeof(builtin)) != 0)
    goto out;
  if (builtin[0]) {
    if (sch_conf_parse(builtin, strlen(builtin), &conf, err, sizeof(err)) != 0) {
      fprintf(stderr, "sessions: %s\n", err);
      goto out;
    }
  } else if (read_conf(conf_path, &conf) != 0) {
    goto out;
  }
  double t0 = now_s();
  if (sch_snapshot_new(msg, NULL, &snap) != 0)
    goto out;
  double t1 = now_s();
  if (sch_session_open(snap, conf, NULL, &ssn) != 0)
    goto out;
  double t2 = now_s();
  int run_rc = sch_session_run(ssn);
  double t3 = now_s();
  int close_rc = sch_session_close(ssn, &r);
  ssn = NULL;
  double t4 = now_s();
  if (run_rc != 0 || close_rc != 0) {
    fprintf(stderr, "sessions: session failed: %s\n", kc_strerror(run_rc ? run_rc : close_rc));
    goto out;
  }
  long peak_kb = peak_rss_kb();
  size_t npods = (size_t)o.pending + (size_t)o.running;
  double session_s = t4 - t1;
  printf("{\"nodes\":%d,\"pending\":%d,\"gang\":%d,\"running\":%d,\"queues\":%d,"
         "\"topology\":%d,\"hypernodes\":%zu,\"vgpu\":%d,\"claims\":%d,\"volumes\":%d,"
         "\"placements\":%zu,"
         "\"snapshot_s\":%.4f,\"session_s\":%.4f,\"open_s\":%.4f,\"actions_s\":%.4f,"
         "\"close_s\":%.4f,\"placements_per_s\":%.0f,\"actions_placements_per_s\":%.0f,"
         "\"peak_rss_kb\":%ld,\"peak_rss_session_only\":%s,\"snapshot_bytes\":%zu,\"bytes_per_"
         "node\":%.0f,"
         "\"bytes_per_pod\":%.0f,\"preempt\":%s,\"nominations\":%zu,\"evictions\":%zu,"
         "\"nominations_per_s\":%.0f,\"victims_per_s\":%.0f}\n",
         o.nodes, o.pending, o.gang, o.running, o.queues, o.topology, msg->n_hyper_nodes, o.vgpu,
         o.claims, o.volumes, r->nbinds, t1 - t0, session_s, t2 - t1, t3 - t2, t4 - t3,
         session_s > 0 ? (double)r->nbinds / session_s : 0,
         t3 > t2 ? (double)r->nbinds / (t3 - t2) : 0, peak_kb, hwm_reset ? "true" : "false",
         all_bytes, (double)node_bytes / o.nodes,
         npods ? (double)(all_bytes - node_bytes) / (double)npods : 0, o.preempt ? "true" : "false",
         r->nnominations, r->nevicts, session_s > 0 ? (double)r->nnominations / session_s : 0,
         session_s > 0 ? (double)r->nevicts / session_s : 0);
  rc = 0;
out:
  sch_result_free(r);
  sch_snapshot_free(snap);
  sch_conf_free(conf);
  if (msg)
    kiln__snapshot__free_unpacked(msg, NULL);
  free(buf);
  return rc;
}
