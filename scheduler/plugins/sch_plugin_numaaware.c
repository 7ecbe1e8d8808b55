/* numa-aware (Volcano pkg/scheduler/plugins/numaaware): Guaranteed pods placed where the
 * kubelet's topology manager can align their CPUs and GPUs, from each node's
 * nodeinfo.volcano.sh Numatopology (named after the node; Volcano's resource exporter
 * publishes it). The decisions are sch_numa.c's.
 *
 * Predicate (Guaranteed pods only; the policy is the pod's volcano.sh/numa-topology-policy,
 * the Job task's topologyPolicy): a policy other than none needs a node with a Numatopology
 * ("numa info is empty"), CPUManagerPolicy static ("cpu manager policy isn't static"), the same
 * TopologyManagerPolicy ("task topology polocy[P] is different with node[Q]", Volcano's
 * spelling) and free CPUs ("cpu allocatable map is empty"). Then, on nodes with a static CPU
 * manager and a topology manager policy (whatever the pod's), each container must be admitted
 * by the node's policy ("plugin numa-aware predicates failed for task T container C on node N").
 * Batch node order (pods with a policy other than none): the NUMA nodes the pod's CPUs would
 * span on each node, normalised so that the fewest scores 100 and the most 0, times
 * `weight` (default 1). Allocate and deallocate events take and give back the CPUs and GPUs
 * chosen, so statements roll them back. What a session took is not carried to the next one:
 * the exporter's next report says what the kubelet assigned. */
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "sch_framework.h"
#include "sch_numa.h"

#define NUMA_PLUGIN "numa-aware"

typedef struct numa_state {
  sch_numa_topo *topo; /* per node */
  bool *has_topo;
  int64_t weight;
  /* The assignments of the task predicated last, per node (Volcano's assignRes). */
  int32_t cur_task;
  sch_numa_assign *cur;
  bool *cur_ok;
  /* What each task took (allocate event), to give back on deallocate (the task has left
   * its node by then). */
  struct taken {
    sch_numa_assign a;
    int32_t node;
  } * *taken;
  int32_t ntasks;
} numa_state;

static int32_t task_index(sch_session *ssn, const sch_task *t) {
  return (int32_t)(t - sch_session_snapshot(ssn)->tasks);
}

static int fit_reason(sch_session *ssn, sch_numa_result r, const sch_numa_topo *topo,
                      const sch_task *t, const sch_node *n, int ctr) {
  const Kiln__PodNuma *pn = t->pod->numa;
  switch (r) {
  case SCH_NUMA_NO_INFO:
    return sch_session_reason(ssn, "numa info is empty");
  case SCH_NUMA_NOT_STATIC:
    return sch_session_reason(ssn, "cpu manager policy isn't static");
  case SCH_NUMA_DIFFERENT:
    return sch_session_reasonf(ssn, "task topology polocy[%s] is different with node[%s]",
                               pn->policy, topo->tm_policy);
  case SCH_NUMA_NO_CPU:
    return sch_session_reason(ssn, "cpu allocatable map is empty");
  default: {
    const char *cn = ctr >= 0 && (size_t)ctr < pn->n_containers ? pn->containers[ctr]->name : "";
    return sch_session_reasonf(ssn,
                               "plugin %s predicates failed for task %s container %s on node %s",
                               NUMA_PLUGIN, t->pod->name, cn ? cn : "", n->name);
  }
  }
}

static int numa_predicate(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n,
                          sch_fit *why) {
  numa_state *st = ctx;
  if (!t->pod->numa)
    return SCH_FIT; /* not a Guaranteed pod */
  int32_t ti = task_index(ssn, t);
  int32_t ni = (int32_t)(n - sch_session_snapshot(ssn)->nodes);
  if (st->cur_task != ti) {
    memset(st->cur_ok, 0, (size_t)sch_session_snapshot(ssn)->nnodes * sizeof(*st->cur_ok));
    st->cur_task = ti;
  }
  const sch_numa_topo *topo = st->has_topo[ni] ? &st->topo[ni] : NULL;
  int ctr = -1;
  sch_numa_result r = sch_numa_fit(topo, t->pod->numa, &st->cur[ni], &ctr);
  if (r == SCH_NUMA_FIT || r == SCH_NUMA_PASS) {
    st->cur_ok[ni] = r == SCH_NUMA_FIT;
    return SCH_FIT;
  }
  int32_t id = fit_reason(ssn, r, topo, t, n, ctr);
  if (id >= 0)
    sch_fit_add(why, id);
  return SCH_UNSCHEDULABLE;
}

static bool policy_none(const char *p) {
  return !p || !*p || strcmp(p, "none") == 0;
}

/* util.NormalizeScore(100, reverse): the most NUMA nodes 0, none 100. */
static void numa_batch_score(sch_session *ssn, void *ctx, const sch_task *t, const int32_t *nodes,
                             size_t n, double *scores) {
  numa_state *st = ctx;
  if (!t->pod->numa || policy_none(t->pod->numa->policy) || st->cur_task != task_index(ssn, t))
    return;
  int64_t max = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t ni = nodes[i];
    int64_t span = st->cur_ok[ni] ? sch_numa_span(&st->topo[ni], &st->cur[ni]) : 0;
    max = span > max ? span : max;
  }
  for (size_t i = 0; i < n; i++) {
    int32_t ni = nodes[i];
    int64_t span = st->cur_ok[ni] ? sch_numa_span(&st->topo[ni], &st->cur[ni]) : 0;
    int64_t s = max == 0 ? 100 : 100 - 100 * span / max;
    scores[i] += (double)(s * st->weight);
  }
}

static void numa_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  numa_state *st = ctx;
  int32_t ti = task_index(ssn, t);
  if (t->node < 0 || st->cur_task != ti || !st->cur_ok[t->node] || st->taken[ti])
    return;
  struct taken *k = malloc(sizeof(*k));
  if (!k)
    return; /* the CPUs stay counted free: the kubelet has the last word */
  k->a = st->cur[t->node];
  k->node = t->node;
  sch_numa_take(&st->topo[t->node], &k->a);
  st->taken[ti] = k;
}

static void numa_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  numa_state *st = ctx;
  int32_t ti = task_index(ssn, t);
  if (!st->taken[ti])
    return;
  sch_numa_give(&st->topo[st->taken[ti]->node], &st->taken[ti]->a);
  free(st->taken[ti]);
  st->taken[ti] = NULL;
}

static void numa_close(sch_session *ssn, void *state) {
  numa_state *st = state;
  if (!st)
    return;
  for (int32_t i = 0; st->taken && i < st->ntasks; i++)
    free(st->taken[i]);
  int32_t nn = sch_session_snapshot(ssn)->nnodes;
  for (int32_t i = 0; st->topo && st->has_topo && i < nn; i++)
    if (st->has_topo[i])
      sch_numa_topo_close(&st->topo[i]);
  free(st->topo);
  free(st->has_topo);
  free(st->cur);
  free(st->cur_ok);
  free(st->taken);
  free(st);
}

/* Each node's Numatopology (the object named after it); an unreadable one counts as none. */
static int read_topologies(const sch_snapshot *snap, numa_state *st) {
  const Kiln__Snapshot *m = snap->msg;
  for (size_t i = 0; m && i < m->n_numatopologies; i++) {
    const Kiln__Numatopology *nt = m->numatopologies[i];
    int32_t ni = nt->metadata ? sch_snapshot_node(snap, nt->metadata->name) : -1;
    if (ni < 0 || st->has_topo[ni])
      continue;
    int rc = sch_numa_topo_init(&st->topo[ni], nt);
    if (rc == KC_ENOMEM)
      return rc;
    st->has_topo[ni] = rc == 0;
  }
  return 0;
}

static int numa_setup(sch_session *ssn, const sch_plugin_conf *conf, numa_state *st) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  size_t nn = (size_t)snap->nnodes + 1, nt = (size_t)snap->ntasks + 1;
  st->weight = sch_args_int(&conf->args, "weight", 1);
  st->cur_task = -1;
  st->ntasks = snap->ntasks;
  st->topo = calloc(nn, sizeof(*st->topo));
  st->has_topo = calloc(nn, sizeof(*st->has_topo));
  st->cur = calloc(nn, sizeof(*st->cur));
  st->cur_ok = calloc(nn, sizeof(*st->cur_ok));
  st->taken = calloc(nt, sizeof(*st->taken));
  if (!st->topo || !st->has_topo || !st->cur || !st->cur_ok || !st->taken)
    return KC_ENOMEM;
  int rc = read_topologies(snap, st);
  if (rc == 0)
    rc = sch_add_predicate_fn(ssn, numa_predicate, st);
  if (rc == 0)
    rc = sch_add_batch_node_order_fn(ssn, numa_batch_score, st);
  if (rc == 0)
    rc = sch_add_event_handler(ssn, numa_allocate, numa_deallocate, st);
  return rc;
}

/* A plugin that fails to open is not closed by the session: it frees its own state. */
static int numa_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  numa_state *st = calloc(1, sizeof(*st));
  if (!st)
    return KC_ENOMEM;
  int rc = numa_setup(ssn, conf, st);
  if (rc < 0) {
    numa_close(ssn, st);
    return rc;
  }
  *state = st;
  return 0;
}

const sch_plugin sch_plugin_numaaware = {
    .name = NUMA_PLUGIN,
    .open = numa_open,
    .close = numa_close,
};
