/* Hand-built snapshots for the plugin tests: every object is malloc'd into one
 * Kiln__Snapshot message so that protobuf-c's free_unpacked releases it all, then a session
 * is opened on it with a YAML configuration naming only the plugins under test. */
#ifndef TEST_SCH_PLUGINS_FIXTURE_H
#define TEST_SCH_PLUGINS_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "sch_conf.h"
#include "sch_framework.h"

#define GI     (1024LL * 1024 * 1024)
#define FX_GPU "nvidia.com/gpu"

typedef struct fx {
  Kiln__Snapshot *msg;
  sch_snapshot *snap;
  sch_conf *conf;
  sch_session *ssn;
} fx;

static inline void *fx_alloc(size_t n) {
  void *p = calloc(1, n);
  assert_non_null(p);
  return p;
}

static inline char *fx_str(const char *s) {
  char *d = strdup(s);
  assert_non_null(d);
  return d;
}

#define FX_APPEND(arr, n, item)                                                                    \
  do {                                                                                             \
    void *np_ = realloc((arr), ((n) + 1) * sizeof(*(arr)));                                        \
    assert_non_null(np_);                                                                          \
    (arr) = np_;                                                                                   \
    (arr)[(n)++] = (item);                                                                         \
  } while (0)

static inline fx *fx_new(void) {
  fx *f = fx_alloc(sizeof(*f));
  f->msg = fx_alloc(sizeof(*f->msg));
  kiln__snapshot__init(f->msg);
  /* Taken at 2026-11-29T12:00:00Z, two hours after the fixture's objects were created: the
   * session's clock (waiting times, condition times) is the snapshot's. */
  f->msg->time_unix_nano = 1795953600LL * 1000000000;
  return f;
}

static inline Kiln__Resource *fx_res(int64_t milli_cpu, int64_t memory) {
  Kiln__Resource *r = fx_alloc(sizeof(*r));
  kiln__resource__init(r);
  r->milli_cpu = milli_cpu;
  r->memory = memory;
  return r;
}

static inline void fx_res_scalar(Kiln__Resource *r, const char *name, int64_t milli) {
  Kiln__ResourceQuantity *q = fx_alloc(sizeof(*q));
  kiln__resource_quantity__init(q);
  q->name = fx_str(name);
  q->milli_value = milli;
  FX_APPEND(r->scalar, r->n_scalar, q);
}

static inline Kiln__Node *fx_node(fx *f, const char *name, int64_t milli_cpu, int64_t memory,
                                  int64_t pods) {
  Kiln__Node *n = fx_alloc(sizeof(*n));
  kiln__node__init(n);
  n->name = fx_str(name);
  n->allocatable = fx_res(milli_cpu, memory);
  n->allocatable->pods = pods;
  n->capacity = fx_res(milli_cpu, memory);
  n->capacity->pods = pods;
  n->ready = 1;
  FX_APPEND(f->msg->nodes, f->msg->n_nodes, n);
  return n;
}

/* A node with milli_gpu of FX_GPU besides its cpu and memory. */
static inline Kiln__Node *fx_gpu_node(fx *f, const char *name, int64_t milli_cpu, int64_t memory,
                                      int64_t milli_gpu) {
  Kiln__Node *n = fx_node(f, name, milli_cpu, memory, 110);
  fx_res_scalar(n->allocatable, FX_GPU, milli_gpu);
  return n;
}

static inline void fx_node_label(Kiln__Node *n, const char *k, const char *v) {
  Kiln__Node__LabelsEntry *e = fx_alloc(sizeof(*e));
  kiln__node__labels_entry__init(e);
  e->key = fx_str(k);
  e->value = fx_str(v);
  FX_APPEND(n->labels, n->n_labels, e);
}

static inline void fx_node_taint(Kiln__Node *n, const char *k, const char *v,
                                 Kiln__TaintEffect eff) {
  Kiln__Taint *t = fx_alloc(sizeof(*t));
  kiln__taint__init(t);
  t->key = fx_str(k);
  t->value = fx_str(v);
  t->effect = eff;
  FX_APPEND(n->taints, n->n_taints, t);
}

static inline Kiln__ObjectMeta *fx_meta(const char *ns, const char *name) {
  Kiln__ObjectMeta *m = fx_alloc(sizeof(*m));
  kiln__object_meta__init(m);
  m->name = fx_str(name);
  if (ns)
    m->namespace_ = fx_str(ns);
  m->creation_timestamp = fx_str("2026-11-29T10:00:00Z");
  return m;
}

static inline Kiln__Queue *fx_queue(fx *f, const char *name, int32_t weight) {
  Kiln__Queue *q = fx_alloc(sizeof(*q));
  kiln__queue__init(q);
  q->metadata = fx_meta(NULL, name);
  q->spec = fx_alloc(sizeof(*q->spec));
  kiln__queue_spec__init(q->spec);
  q->spec->has_weight = 1;
  q->spec->weight = weight;
  FX_APPEND(f->msg->queues, f->msg->n_queues, q);
  return q;
}

static inline void fx_queue_capability(Kiln__Queue *q, int64_t milli_cpu, int64_t memory) {
  q->spec->capability = fx_res(milli_cpu, memory);
}

static inline void fx_queue_guarantee(Kiln__Queue *q, int64_t milli_cpu, int64_t memory) {
  q->spec->guarantee = fx_alloc(sizeof(*q->spec->guarantee));
  kiln__guarantee__init(q->spec->guarantee);
  q->spec->guarantee->resource = fx_res(milli_cpu, memory);
}

/* q's capability: milli_cpu and memory (0: unlimited) and milli_gpu of FX_GPU. */
static inline void fx_queue_gpu_capability(Kiln__Queue *q, int64_t milli_cpu, int64_t memory,
                                           int64_t milli_gpu) {
  q->spec->capability = fx_res(milli_cpu, memory);
  fx_res_scalar(q->spec->capability, FX_GPU, milli_gpu);
}

static inline Kiln__PodGroup *fx_pg(fx *f, const char *name, const char *queue, int32_t min_member,
                                    const char *phase) {
  Kiln__PodGroup *pg = fx_alloc(sizeof(*pg));
  kiln__pod_group__init(pg);
  pg->metadata = fx_meta("ns", name);
  pg->spec = fx_alloc(sizeof(*pg->spec));
  kiln__pod_group_spec__init(pg->spec);
  pg->spec->has_min_member = 1;
  pg->spec->min_member = min_member;
  pg->spec->queue = fx_str(queue);
  pg->status = fx_alloc(sizeof(*pg->status));
  kiln__pod_group_status__init(pg->status);
  pg->status->phase = fx_str(phase);
  FX_APPEND(f->msg->pod_groups, f->msg->n_pod_groups, pg);
  return pg;
}

static inline void fx_pg_min_resources(Kiln__PodGroup *pg, int64_t milli_cpu, int64_t memory) {
  pg->spec->min_resources = fx_res(milli_cpu, memory);
}

/* A pod of ours in PodGroup group (NULL: none); on node (NULL: pending) it is Running. */
static inline Kiln__Pod *fx_pod(fx *f, const char *name, const char *group, int64_t milli_cpu,
                                int64_t memory, const char *node) {
  Kiln__Pod *p = fx_alloc(sizeof(*p));
  kiln__pod__init(p);
  p->namespace_ = fx_str("ns");
  p->name = fx_str(name);
  p->uid = fx_str(name);
  p->scheduler_name = fx_str("volcano");
  if (group)
    p->group_name = fx_str(group);
  p->requests = fx_res(milli_cpu, memory);
  p->requests->pods = 1;
  p->container_requests = fx_res(milli_cpu, memory);
  p->container_requests->pods = 1;
  p->best_effort = milli_cpu == 0 && memory == 0;
  if (node) {
    p->node_name = fx_str(node);
    p->phase = KILN__POD_PHASE__POD_PHASE_RUNNING;
  } else {
    p->phase = KILN__POD_PHASE__POD_PHASE_PENDING;
  }
  FX_APPEND(f->msg->pods, f->msg->n_pods, p);
  return p;
}

static inline void fx_pod_scalar(Kiln__Pod *p, const char *name, int64_t milli) {
  fx_res_scalar(p->requests, name, milli);
  fx_res_scalar(p->container_requests, name, milli);
  p->best_effort = 0;
}

/* n one-pod gangs <prefix><i> (pods <prefix><i>-0) in queue, Inqueue, each pod pending with
 * milli_cpu, memory and milli_gpu of FX_GPU (0: none). */
static inline void fx_gangs(fx *f, const char *prefix, const char *queue, int n, int64_t milli_cpu,
                            int64_t memory, int64_t milli_gpu) {
  for (int i = 0; i < n; i++) {
    char g[32], p[40];
    snprintf(g, sizeof(g), "%s%d", prefix, i);
    snprintf(p, sizeof(p), "%s-0", g);
    fx_pg(f, g, queue, 1, "Inqueue");
    Kiln__Pod *pod = fx_pod(f, p, g, milli_cpu, memory, NULL);
    if (milli_gpu)
      fx_pod_scalar(pod, FX_GPU, milli_gpu);
  }
}

static inline void fx_pod_toleration(Kiln__Pod *p, const char *key, Kiln__TolerationOperator op,
                                     const char *value, Kiln__TaintEffect eff) {
  Kiln__Toleration *t = fx_alloc(sizeof(*t));
  kiln__toleration__init(t);
  t->key = fx_str(key);
  t->operator_ = op;
  t->value = fx_str(value);
  t->effect = eff;
  FX_APPEND(p->tolerations, p->n_tolerations, t);
}

static inline void fx_pod_host_port(Kiln__Pod *p, int32_t port) {
  Kiln__HostPort *hp = fx_alloc(sizeof(*hp));
  kiln__host_port__init(hp);
  hp->port = port;
  FX_APPEND(p->host_ports, p->n_host_ports, hp);
}

/* A HyperNode of the given tier (tier_name NULL: none), with no member yet. */
static inline Kiln__HyperNode *fx_hypernode(fx *f, const char *name, int32_t tier,
                                            const char *tier_name) {
  Kiln__HyperNode *h = fx_alloc(sizeof(*h));
  kiln__hyper_node__init(h);
  h->metadata = fx_meta(NULL, name);
  h->spec = fx_alloc(sizeof(*h->spec));
  kiln__hyper_node_spec__init(h->spec);
  h->spec->has_tier = 1;
  h->spec->tier = tier;
  if (tier_name)
    h->spec->tier_name = fx_str(tier_name);
  FX_APPEND(f->msg->hyper_nodes, f->msg->n_hyper_nodes, h);
  return h;
}

static inline Kiln__HyperNodeSelector *fx_hn_member(Kiln__HyperNode *h, const char *type) {
  Kiln__HyperNodeMember *m = fx_alloc(sizeof(*m));
  kiln__hyper_node_member__init(m);
  m->type = fx_str(type);
  m->selector = fx_alloc(sizeof(*m->selector));
  kiln__hyper_node_selector__init(m->selector);
  FX_APPEND(h->spec->members, h->spec->n_members, m);
  return m->selector;
}

/* A member by name: type "Node" or "HyperNode". */
static inline void fx_hn_exact(Kiln__HyperNode *h, const char *type, const char *name) {
  Kiln__HyperNodeSelector *s = fx_hn_member(h, type);
  s->exact_match = fx_alloc(sizeof(*s->exact_match));
  kiln__hyper_node_exact_match__init(s->exact_match);
  s->exact_match->name = fx_str(name);
}

static inline void fx_hn_regex(Kiln__HyperNode *h, const char *pattern) {
  Kiln__HyperNodeSelector *s = fx_hn_member(h, "Node");
  s->regex_match = fx_alloc(sizeof(*s->regex_match));
  kiln__hyper_node_regex_match__init(s->regex_match);
  s->regex_match->pattern = fx_str(pattern);
}

/* Nodes whose label k is v. */
static inline void fx_hn_label(Kiln__HyperNode *h, const char *k, const char *v) {
  Kiln__HyperNodeSelector *s = fx_hn_member(h, "Node");
  s->label_match = fx_alloc(sizeof(*s->label_match));
  kiln__label_selector__init(s->label_match);
  Kiln__LabelSelector__MatchLabelsEntry *e = fx_alloc(sizeof(*e));
  kiln__label_selector__match_labels_entry__init(e);
  e->key = fx_str(k);
  e->value = fx_str(v);
  FX_APPEND(s->label_match->match_labels, s->label_match->n_match_labels, e);
}

/* The PodGroup's networkTopology: mode "hard" or "soft", highestTierAllowed (< 0: unset). */
static inline void fx_pg_topology(Kiln__PodGroup *pg, const char *mode, int32_t tier) {
  pg->spec->network_topology = fx_alloc(sizeof(*pg->spec->network_topology));
  kiln__network_topology__init(pg->spec->network_topology);
  pg->spec->network_topology->mode = fx_str(mode);
  if (tier >= 0) {
    pg->spec->network_topology->has_highest_tier_allowed = 1;
    pg->spec->network_topology->highest_tier_allowed = tier;
  }
}

/* Builds the snapshot and opens a session with yaml as the configuration. */
static inline void fx_open(fx *f, const char *yaml) {
  char err[256] = "";
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  int rc = sch_conf_parse(yaml, strlen(yaml), &f->conf, err, sizeof(err));
  if (rc != 0)
    fail_msg("configuration: %s", err);
  assert_int_equal(sch_session_open(f->snap, f->conf, NULL, &f->ssn), 0);
}

/* Appends k NUL v NUL to the pod's packed labels. */
static inline void fx_pod_label(Kiln__Pod *p, const char *k, const char *v) {
  size_t kl = strlen(k) + 1, vl = strlen(v) + 1, len = p->packed_labels.len;
  uint8_t *d = realloc(p->packed_labels.data, len + kl + vl);
  assert_non_null(d);
  memcpy(d + len, k, kl);
  memcpy(d + len + kl, v, vl);
  p->packed_labels.data = d;
  p->packed_labels.len = len + kl + vl;
}

/* Runs the session's actions and closes it; the result is the caller's. */
static inline sch_result *fx_run(fx *f) {
  sch_result *r = NULL;
  assert_int_equal(sch_session_run(f->ssn), 0);
  assert_int_equal(sch_session_close(f->ssn, &r), 0);
  f->ssn = NULL;
  assert_non_null(r);
  return r;
}

static inline void fx_free(fx *f) {
  if (f->ssn) {
    sch_result *r = NULL;
    assert_int_equal(sch_session_close(f->ssn, &r), 0);
    sch_result_free(r);
  }
  sch_conf_free(f->conf);
  sch_snapshot_free(f->snap);
  kiln__snapshot__free_unpacked(f->msg, NULL);
  free(f);
}

/* Task index of the pod called name. */
static inline int32_t fx_task(const fx *f, const char *name) {
  for (int32_t i = 0; i < f->snap->ntasks; i++) {
    if (strcmp(f->snap->tasks[i].pod->name, name) == 0)
      return i;
  }
  fail_msg("no task %s", name);
  return -1;
}

static inline const sch_node *fx_snode(const fx *f, const char *name) {
  int32_t i = sch_snapshot_node(f->snap, name);
  assert_true(i >= 0);
  return &f->snap->nodes[i];
}

static inline const sch_job *fx_job(const fx *f, const char *name) {
  char key[256];
  snprintf(key, sizeof(key), "ns/%s", name);
  int32_t i = sch_snapshot_job(f->snap, key);
  assert_true(i >= 0);
  return &f->snap->jobs[i];
}

static inline const sch_queue *fx_squeue(const fx *f, const char *name) {
  int32_t i = sch_snapshot_queue(f->snap, name);
  assert_true(i >= 0);
  return &f->snap->queues[i];
}

/* The predicate's verdict for pod on node, and its first reason ("" when it fits). */
static inline int fx_predicate(fx *f, const char *pod, const char *node, const char **reason) {
  sch_fit why = {0};
  int rc = sch_session_predicate(f->ssn, &f->snap->tasks[fx_task(f, pod)], fx_snode(f, node), &why);
  *reason = why.n > 0 ? sch_session_reason_str(f->ssn, why.reasons[0]) : "";
  return rc;
}

/* The status the result gives the PodGroup called name. */
static inline const sch_pg_status *fx_pg_status(const fx *f, const sch_result *r,
                                                const char *name) {
  const sch_job *j = fx_job(f, name);
  for (size_t i = 0; i < r->npod_groups; i++)
    if (r->pod_groups[i].job == (int32_t)(j - f->snap->jobs))
      return &r->pod_groups[i];
  fail_msg("no status for %s", name);
  return NULL;
}

/* The condition message the result gives the PodGroup called name ("" without one). */
static inline const char *fx_pg_message(const fx *f, const sch_result *r, const char *name) {
  const sch_pg_status *s = fx_pg_status(f, r, name);
  return s->has_condition ? s->condition.message : "";
}

#endif
