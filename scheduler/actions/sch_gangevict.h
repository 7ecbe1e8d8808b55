/* Gang-aware eviction, shared by the gangpreempt and gangreclaim actions (Volcano
 * pkg/scheduler/actions/utils: bundle.go, simulate.go, select_victims.go, util.go; design
 * docs/design/gang-aware-eviction-design.md). Second tier (sch__).
 *
 * A starving job's pending tasks are placed inside one topology domain at a time (a set of
 * nodes: a HyperNode, or the whole cluster), best domain first and at most maxDomains of
 * them. In a domain, the candidate victims are grouped by job into bundles: a job's tasks
 * above its minAvailable (and above each task's minTaskMember when those bind) form its
 * *safe* bundle, evicting them breaks nothing; the rest form its *whole* bundle, evicting
 * any of them restarts the job, so it goes all or nothing (and only with allowWholeBundle).
 * The bundles are ordered (safe first, lower priority first, then the most freed per
 * resource destroyed), the plugins that register a UnifiedEvictable callback filter them
 * once per domain, and bundles are taken in order until the domain's idle, releasing and
 * freed resources cover the job's demand: the last bundle only as far as needed, task by
 * task when safe. With those victims evicted the job's pending tasks are placed on the
 * domain's nodes (predicates, node order); when every one finds a node and the job is
 * pipelined, the evictions and nominations commit; otherwise all is undone and the next
 * bundle or domain is tried. */
#ifndef SCH_GANGEVICT_H
#define SCH_GANGEVICT_H

#include "sch_int.h"

/* Volcano BundleSafe, BundleWhole: the order they are taken in. */
typedef enum { SCH__BUNDLE_SAFE, SCH__BUNDLE_WHOLE } sch__bundle_type;

typedef struct sch__bundle {
  sch__bundle_type type;
  int32_t job;
  int32_t *tasks; /* owned; lowest priority first */
  size_t ntasks;
  sch_resource local;  /* what its tasks hold in the domain */
  sch_resource global; /* whole: every task of the job (what breaking it costs); safe: 0 */
} sch__bundle;

typedef struct sch__bundles {
  sch__bundle *v;
  size_t n, cap;
} sch__bundles;

void sch__bundles_free(sch__bundles *b);
/* Volcano CreateJobBundles: splits the candidates local[0..n) of job ji (sorted in place,
 * lowest priority first) into its safe and whole bundles, appended to out. 0 or KC_ENOMEM. */
KC_NODISCARD int sch__bundles_add_job(sch_session *ssn, int32_t ji, int32_t *local, size_t n,
                                      sch__bundles *out);
/* Volcano bundleROI: what the bundle frees of the need over what it destroys, each summed over
 * the dimensions the need asks for as a fraction of the need (freed capped at the need);
 * infinite when it destroys nothing. */
double sch__bundle_roi(const sch__bundle *b, const sch_resource *need);
/* Victim order. Preemption: safe before whole, lower job priority first, the job order
 * reversed, the higher ROI first. Reclaim (by_queue): first the victim queues, the queue
 * order reversed (the queue served last gives first), then safe before whole, lower job
 * priority first, the higher ROI first. Equal bundles keep a fixed order (job, first task). */
void sch__bundles_sort(sch_session *ssn, sch__bundles *b, const sch_resource *need, bool by_queue);
/* Flattens the bundles in their order, asks the UnifiedEvictable plugins once, and keeps a
 * whole bundle only when every task of it is allowed (and allow_whole), a safe bundle
 * shrunk to its allowed tasks. 0 or KC_ENOMEM. */
KC_NODISCARD int sch__bundles_gate(sch_session *ssn, sch__bundles *b, const sch_eviction_ctx *ec,
                                   bool allow_whole);

/* A topology domain: the nodes one search may use. */
typedef struct sch__domain {
  const char *name; /* the HyperNode (SCH_HN_CLUSTER_TOP: the whole cluster) */
  const int32_t *nodes;
  size_t nnodes;
} sch__domain;

/* The HyperNodes (tree vertices) job ji may evict in, best first (Volcano GetCandidateDomains
 * with network-topology-aware's eviction gradient): without a hard networkTopology the cluster
 * top alone; with one, the gradient's HyperNodes that could hold its minResources, the widest
 * tier first, at most 8; none without the gradient plugin or with an inconsistent tree. out,
 * grad and tmp hold the tree's vertex count. Returns the count (sch_gangevict_domain.c). */
int32_t sch__evict_domains(sch_session *ssn, int32_t ji, int32_t *out, int32_t *grad, int32_t *tmp);
/* The nodes of vertex v that the session's node list has (listed, per snapshot node). */
size_t sch__domain_nodes(sch_session *ssn, int32_t v, const uint8_t *listed, int32_t *out);

/* One of the two actions. */
typedef struct sch__gang_evict {
  const char *name; /* the action: its configuration arguments and the eviction reason */
  sch_eviction_kind kind;
  /* Whether t, on a node of the domain, may be a victim of the starving job j. */
  bool (*candidate)(sch_session *ssn, const sch_job *j, const sch_task *t);
} sch__gang_evict;

/* Runs the action (queues in queue order; in each, the starving jobs in job order). For
 * reclaim, an overused queue is skipped and its queue must be Preemptive for the job's
 * whole demand. 0 or KC_ENOMEM. */
KC_NODISCARD int sch__gang_evict_execute(sch_session *ssn, const sch__gang_evict *ge);

#endif
