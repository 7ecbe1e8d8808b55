/* nodegroup (Volcano pkg/scheduler/plugins/nodegroup): a queue's jobs run on the node groups
 * its spec.affinity names, a node's group being its volcano.sh/nodegroup-name label.
 *
 * Predicate, for a task of a job in queue Q on a node:
 *   - a node without the label: "node group label not found";
 *   - Q without spec.affinity (and, with enableHierarchy, no ancestor with one):
 *     "node group affinity not specified";
 *   - otherwise the node's group passes when it is in the required or preferred affinity
 *     list, is not in the required anti-affinity list, or is in the preferred anti-affinity
 *     list (checked in that order, the later overriding); else "node does not satisfy the
 *     node group affinity". Every failure is unresolvable (preempting will not help).
 * Node order: 0 for a node without the label or a queue without affinity; else 100 when the
 * group is required, plus 50 when preferred, and -1 (replacing the sum) when it is in the
 * preferred anti-affinity list.
 * enableHierarchy (off by default): a queue without affinity takes its nearest ancestor's
 * (spec.parent, root when empty). No arguments. */
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"
#include "sch_match.h"

#define NODEGROUP_LABEL "volcano.sh/nodegroup-name"
#define NODEGROUP_ROOT  "root"
#define NODEGROUP_BASE  100.0

typedef struct nodegroup_state {
  /* Per queue: the queue whose spec.affinity applies (itself or an ancestor), -1 none. */
  int32_t *source;
  int32_t nqueues;
  int32_t no_label, no_affinity, unsatisfied; /* reason ids */
} nodegroup_state;

static const Kiln__QueueAffinity *queue_affinity(const sch_snapshot *snap, int32_t q) {
  const Kiln__Queue *kq = snap->queues[q].queue;
  return kq && kq->spec ? kq->spec->affinity : NULL;
}

static bool has_group(char **list, size_t n, const char *group) {
  for (size_t i = 0; i < n; i++)
    if (list[i] && strcmp(list[i], group) == 0)
      return true;
  return false;
}

#define REQUIRED(terms, g)                                                                         \
  ((terms) && has_group((terms)->required_during_scheduling_ignored_during_execution,              \
                        (terms)->n_required_during_scheduling_ignored_during_execution, (g)))
#define PREFERRED(terms, g)                                                                        \
  ((terms) && has_group((terms)->preferred_during_scheduling_ignored_during_execution,             \
                        (terms)->n_preferred_during_scheduling_ignored_during_execution, (g)))

/* Volcano queueGroupAffinity.predicate: anti-affinity outranks affinity, but a group in the
 * preferred anti-affinity list passes (it only scores low). */
static bool affinity_admits(const Kiln__QueueAffinity *a, const char *group) {
  bool ok = REQUIRED(a->node_group_affinity, group) || PREFERRED(a->node_group_affinity, group);
  if (REQUIRED(a->node_group_anti_affinity, group))
    ok = false;
  if (PREFERRED(a->node_group_anti_affinity, group))
    ok = true;
  return ok;
}

static double affinity_score(const Kiln__QueueAffinity *a, const char *group) {
  double score = 0;
  if (REQUIRED(a->node_group_affinity, group))
    score += NODEGROUP_BASE;
  if (PREFERRED(a->node_group_affinity, group))
    score += 0.5 * NODEGROUP_BASE;
  if (PREFERRED(a->node_group_anti_affinity, group))
    score = -1;
  return score;
}

/* The affinity that applies to a task's queue, NULL when none. */
static const Kiln__QueueAffinity *task_affinity(sch_session *ssn, const nodegroup_state *st,
                                                const sch_task *t) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  if (t->job < 0)
    return NULL;
  int32_t q = snap->jobs[t->job].queue;
  if (q < 0 || q >= st->nqueues || st->source[q] < 0)
    return NULL;
  return queue_affinity(snap, st->source[q]);
}

static int nodegroup_predicate(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n,
                               sch_fit *why) {
  nodegroup_state *st = ctx;
  const char *group = sch_node_label(n->node, NODEGROUP_LABEL);
  if (group == NULL) {
    sch_fit_add(why, st->no_label);
    return SCH_UNRESOLVABLE;
  }
  const Kiln__QueueAffinity *a = task_affinity(ssn, st, t);
  if (a == NULL) {
    sch_fit_add(why, st->no_affinity);
    return SCH_UNRESOLVABLE;
  }
  if (!affinity_admits(a, group)) {
    sch_fit_add(why, st->unsatisfied);
    return SCH_UNRESOLVABLE;
  }
  return SCH_FIT;
}

static double nodegroup_score(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n) {
  const char *group = sch_node_label(n->node, NODEGROUP_LABEL);
  if (group == NULL)
    return 0;
  const Kiln__QueueAffinity *a = task_affinity(ssn, ctx, t);
  return a ? affinity_score(a, group) : 0;
}

/* The queue's parent index: spec.parent, or root when empty; -1 for root itself or a parent
 * that is not in the snapshot. */
static int32_t parent_of(const sch_snapshot *snap, int32_t q) {
  if (strcmp(snap->queues[q].name, NODEGROUP_ROOT) == 0)
    return -1;
  const Kiln__Queue *kq = snap->queues[q].queue;
  const char *p =
      kq && kq->spec && kq->spec->parent && *kq->spec->parent ? kq->spec->parent : NODEGROUP_ROOT;
  int32_t pi = sch_snapshot_queue(snap, p);
  if (pi < 0)
    KC_WARN("Parent queue %s not found for queue %s, unable to build hierarchy.", p,
            snap->queues[q].name);
  return pi;
}

static void resolve_sources(const sch_snapshot *snap, nodegroup_state *st, bool hierarchy) {
  for (int32_t q = 0; q < st->nqueues; q++) {
    st->source[q] = queue_affinity(snap, q) ? q : -1;
    if (st->source[q] >= 0 || !hierarchy)
      continue;
    /* The nearest ancestor with an affinity; a cycle ends the walk (at most nqueues steps). */
    int32_t p = parent_of(snap, q);
    for (int32_t steps = 0; p >= 0 && steps < st->nqueues; steps++) {
      if (p == q) {
        KC_WARN("Cycle detected in queue hierarchy for queue %s, skipping ancestor building.",
                snap->queues[q].name);
        break;
      }
      if (queue_affinity(snap, p)) {
        st->source[q] = p;
        break;
      }
      p = parent_of(snap, p);
    }
  }
}

static void nodegroup_close(sch_session *ssn, void *state) {
  (void)ssn;
  nodegroup_state *st = state;
  if (st)
    free(st->source);
  free(st);
}

static int nodegroup_setup(sch_session *ssn, const sch_plugin_conf *conf, nodegroup_state *st) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  st->nqueues = snap->nqueues;
  st->source = calloc(snap->nqueues > 0 ? (size_t)snap->nqueues : 1, sizeof(*st->source));
  if (st->source == NULL)
    return KC_ENOMEM;
  bool hierarchy =
      conf->has_enable[SCH_EXT_HIERARCHY] && (conf->enabled & (1u << SCH_EXT_HIERARCHY));
  resolve_sources(snap, st, hierarchy);
  st->no_label = sch_session_reason(ssn, "node group label not found");
  st->no_affinity = sch_session_reason(ssn, "node group affinity not specified");
  st->unsatisfied = sch_session_reason(ssn, "node does not satisfy the node group affinity");
  if (st->no_label < 0 || st->no_affinity < 0 || st->unsatisfied < 0)
    return KC_ENOMEM;
  int rc = sch_add_node_order_fn(ssn, nodegroup_score, st);
  if (rc == 0)
    rc = sch_add_predicate_fn(ssn, nodegroup_predicate, st);
  return rc;
}

/* A plugin that fails to open is not closed by the session: it frees its own state. */
static int nodegroup_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  nodegroup_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  int rc = nodegroup_setup(ssn, conf, st);
  if (rc < 0) {
    nodegroup_close(ssn, st);
    return rc;
  }
  *state = st;
  return 0;
}

const sch_plugin sch_plugin_nodegroup = {
    .name = "nodegroup",
    .open = nodegroup_open,
    .close = nodegroup_close,
};
