/* predicates (Volcano pkg/scheduler/plugins/predicates, and the resource check of the
 * allocate action's predicate): can this task run on this node?
 *
 * Checks, in Volcano's order, stopping at the first failure so that every node contributes
 * one reason to the gang's "0/N nodes are available: ..." summary:
 *   1. resources: init_resreq against the node's future idle (idle + releasing - pipelined,
 *      so the allocate action can still pipeline onto resources being released); each
 *      short dimension gives "Insufficient <name>" as kube-scheduler's NodeResourcesFit
 *      does (Volcano names only the first), extended resources included;
 *   2. pod count: "Too many pods" (kube-scheduler NodeResourcesFit);
 *   3. NodeUnschedulable, 4. NodeAffinity (nodeSelector and required affinity),
 *   5. NodePorts, 6. TaintToleration (NoSchedule and NoExecute),
 *   7. InterPodAffinity (the pod's required affinity, its required anti-affinity, then placed
 *      pods' required anti-affinity against it), 8. PodTopologySpread (DoNotSchedule
 *      constraints): sch_interpod.c, which keeps the counts in step with the session's
 *      placements through this plugin's allocate/deallocate events. Both cost nothing when
 *      no pod of the snapshot carries a term or constraint.
 * Arguments: predicate.NodeAffinityEnable, predicate.NodePortsEnable,
 * predicate.TaintTolerationEnable, predicate.PodAffinityEnable,
 * predicate.PodTopologySpreadEnable (all true by default, as in Volcano), and
 * predicate.DynamicResourceAllocationEnable (false by default, as in Volcano): 9. the pod's
 * ResourceClaims (sch_dra.c), whose devices follow the session's placements through the
 * allocate/deallocate events, so a gang's devices commit or roll back with its statement.
 * 10. The volume predicates (sch_volume.c): predicate.NodeVolumeLimitsEnable,
 * predicate.VolumeZoneEnable and predicate.VolumeBindingEnable (true by default, as in
 * Volcano; VolumeRestrictions runs with VolumeBinding), in Volcano's order; the volumes
 * VolumeBinding assumes follow the allocate/deallocate events as the devices do. The
 * volumebinding.* arguments (bindTimeoutSeconds, weight, shape) are the shell's and
 * nodeorder's business: see sch_plugin_predicates_args. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_dra.h"
#include "sch_framework.h"
#include "sch_interpod.h"
#include "sch_match.h"
#include "sch_volume.h"

enum { TASK_VOL = 1, TASK_DRA = 2 };

/* Reason ids interned once per session: the predicate runs tasks x nodes times. */
typedef struct predicates_state {
  bool affinity, ports, taints;
  int32_t too_many_pods, unschedulable, node_affinity, node_ports;
  int32_t insufficient[2 + SCH_MAX_SCALARS]; /* -1 until first used */
  /* The dimensions the last task asks for: the predicate runs for one task over many nodes
   * in a row, and init_resreq does not change during a session. */
  const sch_task *mask_task;
  unsigned mask;
  /* The feature checks that task needs (TASK_VOL: volumes the volume checks read, with vol
   * on; TASK_DRA: claims, with dra on): a pod with neither pays one test per node for them. */
  unsigned char task_checks;
  /* The node-static checks (unschedulable + node affinity, and taints) per node for the
   * current pod shape (sch_pod_key): a gang's tasks share one, so each node is matched once
   * per gang instead of once per task. */
  sch_pod_key key, scratch;
  bool cache_on;
  struct static_verdict *verdicts; /* per node; NULL: no cache */
  int32_t nnodes;
  /* Inter-pod affinity and spread: the enabled checks, 0 when no pod has terms (ipa NULL);
   * one test per fitting node is all the pods without terms pay. */
  unsigned ipa_checks;
  sch_ipa *ipa;
  int32_t ipa_reason[SCH_IPA_SPREAD_LABEL + 1];
  sch_dra *dra; /* the snapshot's, when DynamicResourceAllocation is on */
  sch_vol *vol; /* the snapshot's, when a volume predicate is on */
  sch_vol_checks vol_checks;
  int32_t vol_reason[SCH_VOL_REASONS];
} predicates_state;

typedef struct static_verdict {
  bool a_known, b_known;
  int8_t a_rc, b_rc;          /* SCH_FIT or SCH_UNRESOLVABLE */
  int32_t a_reason, b_reason; /* when not SCH_FIT */
} static_verdict;

static int32_t insufficient_reason(sch_session *ssn, predicates_state *st, int dim) {
  if (st->insufficient[dim] >= 0)
    return st->insufficient[dim];
  sch_snapshot *snap = sch_session_snapshot(ssn);
  const char *name = dim == 0   ? "cpu"
                     : dim == 1 ? "memory"
                     : (dim - 2 < snap->nscalars && snap->scalar_names[dim - 2])
                         ? snap->scalar_names[dim - 2]
                         : "unknown";
  char buf[SCH_REASON_MAX];
  sch_reason_insufficient(buf, sizeof(buf), name);
  int32_t id = sch_session_reason(ssn, buf);
  if (id >= 0)
    st->insufficient[dim] = id;
  return id;
}

/* Whether a host port of t is held by a task already on the node (releasing ones included:
 * their ports are not free until the pod is gone). */
static bool ports_conflict(const sch_snapshot *snap, const sch_task *t, const sch_node *n) {
  for (int32_t i = n->task_head; i >= 0; i = snap->tasks[i].node_next) {
    const Kiln__Pod *other = snap->tasks[i].pod;
    if (other == NULL || other->n_host_ports == 0)
      continue;
    if (sch_host_ports_conflict(t->pod, other->host_ports, other->n_host_ports))
      return true;
  }
  return false;
}

/* sch_resource_insufficient(req, future idle of n), without building the future idle: the
 * predicate runs once per task and node. */
static inline bool short_of(int64_t req, int64_t idle, int64_t releasing, int64_t pipelined,
                            int64_t min) {
  return sch_short_of(req, idle, releasing, pipelined, min);
}

static unsigned requested_dims(const sch_resource *req) {
  unsigned m = 0;
  if (req->milli_cpu > 0)
    m |= SCH_DIM_CPU;
  if (req->memory > 0)
    m |= SCH_DIM_MEMORY;
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    if (req->scalar[i] > 0)
      m |= SCH_DIM_SCALAR(i);
  return m;
}

/* reqmask: requested_dims(req). */
static unsigned insufficient_dims(const sch_resource *req, unsigned reqmask, const sch_node *n) {
  unsigned m = 0;
  if (short_of(req->milli_cpu, n->idle.milli_cpu, n->releasing.milli_cpu, n->pipelined.milli_cpu,
               SCH_MIN_MILLI_CPU))
    m |= SCH_DIM_CPU;
  if (short_of(req->memory, n->idle.memory, n->releasing.memory, n->pipelined.memory,
               SCH_MIN_MEMORY))
    m |= SCH_DIM_MEMORY;
  for (int i = 0; (reqmask >> 2) >> i; i++)
    if ((reqmask & SCH_DIM_SCALAR(i)) &&
        short_of(req->scalar[i], n->idle.scalar[i], n->releasing.scalar[i], n->pipelined.scalar[i],
                 SCH_MIN_SCALAR))
      m |= SCH_DIM_SCALAR(i);
  return m;
}

/* Points the cache at t's pod shape, emptying it when the shape changed. */
static void use_template(predicates_state *st, const sch_task *t) {
  st->cache_on = false;
  if (st->verdicts == NULL || t->pod == NULL || sch_pod_key_set(&st->scratch, t->pod) != 0)
    return;
  if (!sch_pod_key_equal(&st->scratch, &st->key)) {
    sch_pod_key tmp = st->key;
    st->key = st->scratch;
    st->scratch = tmp;
    memset(st->verdicts, 0, (size_t)st->nnodes * sizeof(*st->verdicts));
  }
  st->cache_on = true;
}

/* NodeUnschedulable then NodeAffinity. */
static int check_a(predicates_state *st, const sch_task *t, const sch_node *n, int32_t *reason) {
  if (!sch_unschedulable_fits(t->pod, n->node)) {
    *reason = st->unschedulable;
    return SCH_UNRESOLVABLE;
  }
  if (st->affinity && !sch_match_node_selector(t->pod, n->node)) {
    *reason = st->node_affinity;
    return SCH_UNRESOLVABLE;
  }
  return SCH_FIT;
}

/* TaintToleration (NoSchedule, NoExecute). */
static int check_b(sch_session *ssn, predicates_state *st, const sch_task *t, const sch_node *n,
                   int32_t *reason) {
  if (!st->taints)
    return SCH_FIT;
  const Kiln__Taint *taint = sch_untolerated_taint(t->pod, n->node);
  if (taint == NULL)
    return SCH_FIT;
  char buf[SCH_REASON_MAX];
  sch_reason_taint(buf, sizeof(buf), taint);
  *reason = sch_session_reason(ssn, buf);
  return SCH_UNRESOLVABLE;
}

/* DynamicResources: the claims of t (which has some) on the node. */
static int check_dra(sch_session *ssn, predicates_state *st, const sch_task *t, int32_t node,
                     sch_fit *why) {
  char reason[SCH_REASON_MAX];
  int rc = sch_dra_filter(st->dra, t, node, reason, sizeof(reason));
  if (rc == SCH_FIT)
    return rc;
  if (rc < 0)
    snprintf(reason, sizeof(reason), "cannot allocate all claims: %s", kc_strerror(rc));
  sch_fit_add(why, sch_session_reason(ssn, reason));
  return rc == SCH_UNRESOLVABLE ? SCH_UNRESOLVABLE : SCH_UNSCHEDULABLE;
}

static void dra_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  (void)ssn;
  predicates_state *st = ctx;
  int rc = sch_dra_place(st->dra, t, t->node);
  if (rc)
    KC_WARN("%s/%s: its claims could not be allocated on the node chosen: %s", t->pod->namespace_,
            t->pod->name, kc_strerror(rc));
}

static void dra_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  (void)ssn;
  predicates_state *st = ctx;
  sch_dra_unplace(st->dra, t);
}

static int open_dra(sch_session *ssn, predicates_state *st, const sch_plugin_conf *conf) {
  if (!sch_args_bool(&conf->args, "predicate.DynamicResourceAllocationEnable", false))
    return 0;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  if (snap->dra == NULL && snap->dra_counted) {
    snap->dra = snap->dra_counted;
    snap->dra_counted = NULL;
  }
  if (snap->dra == NULL) {
    int rc = sch_dra_new(snap, &snap->dra);
    if (rc)
      return rc;
  }
  st->dra = snap->dra;
  return sch_add_event_handler(ssn, dra_allocate, dra_deallocate, st);
}

/* The volume predicates for t (which has volumes): VolumeBinding's PreFilter, then the filters on
 * the node. */
static int check_volumes(sch_session *ssn, predicates_state *st, const sch_task *t, int32_t node,
                         sch_fit *why) {
  char reason[SCH_REASON_MAX];
  if (st->vol_checks.binding && sch_vol_prefilter(st->vol, t, reason, sizeof(reason)) != SCH_FIT) {
    sch_fit_add(why, sch_session_reason(ssn, reason));
    return SCH_UNRESOLVABLE;
  }
  bool unresolvable = false;
  unsigned bits = sch_vol_filter(st->vol, t, node, &st->vol_checks, &unresolvable);
  for (int i = 0; i < SCH_VOL_REASONS; i++)
    if (bits & (1u << i))
      sch_fit_add(why, st->vol_reason[i]);
  return bits == 0 ? SCH_FIT : unresolvable ? SCH_UNRESOLVABLE : SCH_UNSCHEDULABLE;
}

static void vol_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  (void)ssn;
  predicates_state *st = ctx;
  int rc = sch_vol_place(st->vol, t, t->node);
  if (rc)
    KC_WARN("%s/%s: its volumes could not be bound on the node chosen: %s", t->pod->namespace_,
            t->pod->name, kc_strerror(rc));
}

static void vol_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  (void)ssn;
  predicates_state *st = ctx;
  sch_vol_unplace(st->vol, t);
}

static int open_volumes(sch_session *ssn, predicates_state *st, const sch_plugin_conf *conf) {
  sch_vol_checks *c = &st->vol_checks;
  c->limits = sch_args_bool(&conf->args, "predicate.NodeVolumeLimitsEnable", true);
  c->zone = sch_args_bool(&conf->args, "predicate.VolumeZoneEnable", true);
  c->binding = sch_args_bool(&conf->args, "predicate.VolumeBindingEnable", true);
  c->restrictions = c->binding;
  if (!c->limits && !c->zone && !c->binding)
    return 0;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  if (snap->vol == NULL) {
    int rc = sch_vol_new(snap, &snap->vol);
    if (rc)
      return rc;
  }
  st->vol = snap->vol;
  for (int i = 0; i < SCH_VOL_REASONS; i++)
    if ((st->vol_reason[i] = sch_session_reason(ssn, sch_vol_reason(1u << i))) < 0)
      return KC_ENOMEM;
  return c->binding ? sch_add_event_handler(ssn, vol_allocate, vol_deallocate, st) : 0;
}

static int predicate(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n,
                     sch_fit *why) {
  predicates_state *st = ctx;
  sch_snapshot *snap = sch_session_snapshot(ssn);

  if (st->mask_task != t) {
    st->mask_task = t;
    st->mask = requested_dims(&t->init_resreq);
    st->task_checks = (unsigned char)((st->vol && sch_vol_task_has_volumes(t) ? TASK_VOL : 0) |
                                      (st->dra && sch_dra_task_has_claims(t) ? TASK_DRA : 0));
    use_template(st, t);
  }
  /* Preempt and reclaim ask which nodes could take the task once victims go: room is
   * their business (Volcano PredicateForPreemptAction). */
  bool room = !sch_session_preempting(ssn);
  unsigned short_dims = room ? insufficient_dims(&t->init_resreq, st->mask, n) : 0;
  if (short_dims != 0) {
    for (int d = 0; d < 2 + SCH_MAX_SCALARS; d++) {
      if (short_dims & (1u << d))
        sch_fit_add(why, insufficient_reason(ssn, st, d));
    }
    return SCH_UNSCHEDULABLE;
  }
  /* A node that reports no pod capacity is treated as unlimited rather than full, so that
   * an odd node object does not silently absorb no work at all. */
  if (room && n->max_pods > 0 && n->ntasks >= n->max_pods) {
    sch_fit_add(why, st->too_many_pods);
    return SCH_UNSCHEDULABLE;
  }
  if (t->pod == NULL || n->node == NULL)
    return SCH_FIT;
  int32_t ni = (int32_t)(n - snap->nodes);
  static_verdict scratch = {0};
  static_verdict *v = st->cache_on && ni >= 0 && ni < st->nnodes ? &st->verdicts[ni] : &scratch;
  if (!v->a_known) {
    v->a_rc = (int8_t)check_a(st, t, n, &v->a_reason);
    v->a_known = true;
  }
  if (v->a_rc != SCH_FIT) {
    sch_fit_add(why, v->a_reason);
    return v->a_rc;
  }
  if (st->ports && t->pod->n_host_ports > 0 && ports_conflict(snap, t, n)) {
    sch_fit_add(why, st->node_ports);
    return SCH_UNSCHEDULABLE;
  }
  if (!v->b_known) {
    v->b_rc = (int8_t)check_b(ssn, st, t, n, &v->b_reason);
    /* A reason that could not be interned (out of memory) is not remembered. */
    v->b_known = v->b_rc == SCH_FIT || v->b_reason >= 0;
  }
  if (v->b_rc != SCH_FIT) {
    sch_fit_add(why, v->b_reason);
    return v->b_rc;
  }
  if (st->ipa_checks != 0) {
    sch_ipa_verdict iv = sch_ipa_filter(st->ipa, t, ni, st->ipa_checks);
    if (iv != SCH_IPA_FIT) {
      sch_fit_add(why, st->ipa_reason[iv]);
      /* kube-scheduler: affinity and missing spread labels are UnschedulableAndUnresolvable;
       * anti-affinity and skew could change when pods go away. */
      return iv == SCH_IPA_AFFINITY || iv == SCH_IPA_SPREAD_LABEL ? SCH_UNRESOLVABLE
                                                                  : SCH_UNSCHEDULABLE;
    }
  }
  if (st->task_checks == 0)
    return SCH_FIT; /* the common pod: no volume, no claim */
  int rc = st->task_checks & TASK_VOL ? check_volumes(ssn, st, t, ni, why) : SCH_FIT;
  return rc == SCH_FIT && (st->task_checks & TASK_DRA) ? check_dra(ssn, st, t, ni, why) : rc;
}

static int open_interpod(sch_session *ssn, predicates_state *st, const sch_plugin_conf *conf) {
  static const char *const reasons[] = {
      [SCH_IPA_AFFINITY] = SCH_REASON_POD_AFFINITY,
      [SCH_IPA_ANTI_AFFINITY] = SCH_REASON_POD_ANTI_AFFINITY,
      [SCH_IPA_EXISTING_ANTI] = SCH_REASON_EXISTING_ANTI_AFFINITY,
      [SCH_IPA_SPREAD] = SCH_REASON_SPREAD,
      [SCH_IPA_SPREAD_LABEL] = SCH_REASON_SPREAD_LABEL,
  };
  if (sch_args_bool(&conf->args, "predicate.PodAffinityEnable", true))
    st->ipa_checks |= SCH_IPA_CHECK_AFFINITY;
  if (sch_args_bool(&conf->args, "predicate.PodTopologySpreadEnable", true))
    st->ipa_checks |= SCH_IPA_CHECK_SPREAD;
  if (st->ipa_checks == 0)
    return 0;
  int rc = sch_ipa_acquire(ssn, &st->ipa);
  if (rc < 0 || st->ipa == NULL) {
    st->ipa_checks = 0;
    return rc;
  }
  for (int i = SCH_IPA_AFFINITY; i <= SCH_IPA_SPREAD_LABEL; i++)
    if ((st->ipa_reason[i] = sch_session_reason(ssn, reasons[i])) < 0)
      return KC_ENOMEM;
  return 0;
}

static int predicates_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  predicates_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  st->affinity = sch_args_bool(&conf->args, "predicate.NodeAffinityEnable", true);
  st->ports = sch_args_bool(&conf->args, "predicate.NodePortsEnable", true);
  st->taints = sch_args_bool(&conf->args, "predicate.TaintTolerationEnable", true);
  for (size_t i = 0; i < sizeof(st->insufficient) / sizeof(st->insufficient[0]); i++)
    st->insufficient[i] = -1;
  st->too_many_pods = sch_session_reason(ssn, SCH_REASON_TOO_MANY_PODS);
  st->unschedulable = sch_session_reason(ssn, SCH_REASON_UNSCHEDULABLE);
  st->node_affinity = sch_session_reason(ssn, SCH_REASON_NODE_AFFINITY);
  st->node_ports = sch_session_reason(ssn, SCH_REASON_NODE_PORTS);
  *state = st;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  if (snap->nnodes > 0) {
    /* Without the cache every node is matched for every task: slower, same answers. */
    st->verdicts = calloc((size_t)snap->nnodes, sizeof(*st->verdicts));
    if (st->verdicts)
      st->nnodes = snap->nnodes;
  }
  if (st->too_many_pods < 0 || st->unschedulable < 0 || st->node_affinity < 0 || st->node_ports < 0)
    return KC_ENOMEM;
  int rc = open_interpod(ssn, st, conf);
  if (rc == 0)
    rc = open_dra(ssn, st, conf);
  if (rc == 0)
    rc = open_volumes(ssn, st, conf);
  if (rc < 0)
    return rc;
  return sch_add_predicate_fn(ssn, predicate, st);
}

static void predicates_close(sch_session *ssn, void *state) {
  predicates_state *st = state;
  if (st) {
    sch_pod_key_close(&st->key);
    sch_pod_key_close(&st->scratch);
    free(st->verdicts);
    sch_ipa_release(ssn, st->ipa);
  }
  free(state);
}

const sch_plugin sch_plugin_predicates = {
    .name = "predicates",
    .open = predicates_open,
    .close = predicates_close,
};
