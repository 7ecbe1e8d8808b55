/* Pure matchers and scoring formulas that the predicates, nodeorder and binpack plugins apply
 * to the scheduling views of pods and nodes (pod.proto). Nothing here knows about sessions:
 * every function reads borrowed messages and returns a verdict or a score, so each rule can be
 * checked against a table.
 *
 * The rules are kube-scheduler's (NodeAffinity, TaintToleration, NodeUnschedulable, NodePorts
 * filters; NodeResourcesFit LeastAllocated/MostAllocated, NodeResourcesBalancedAllocation,
 * NodeAffinity and TaintToleration scores), which Volcano's predicates and nodeorder plugins
 * call. The reason strings are kube-scheduler's, so the gang plugin can aggregate them into
 * the message operators already know ("0/3 nodes are available: 2 Insufficient cpu, ..."). */
#ifndef SCH_MATCH_H
#define SCH_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pod.pb-c.h"
#include "kc_error.h"

#define SCH_REASON_NODE_AFFINITY "node(s) didn't match Pod's node affinity/selector"
#define SCH_REASON_NODE_PORTS    "node(s) didn't have free ports for the requested pod ports"
#define SCH_REASON_UNSCHEDULABLE "node(s) were unschedulable"
#define SCH_REASON_TOO_MANY_PODS "Too many pods"
/* "Insufficient <resource>" and "node(s) had untolerated taint {k: v}" are built by
 * sch_reason_insufficient() and sch_reason_taint(). */
#define SCH_REASON_MAX           320

/* The taint key the node lifecycle controller pairs with spec.unschedulable. */
#define SCH_TAINT_UNSCHEDULABLE "node.kubernetes.io/unschedulable"

/* kube-scheduler's score range. */
#define SCH_MAX_NODE_SCORE 100

/* ---- node selection (NodeAffinity filter) ---- */

/* The value of label key on node (borrowed), or NULL when the node has no such label. */
const char *sch_node_label(const Kiln__Node *node, const char *key);

/* One requirement of matchExpressions (labels) or, with field set, of matchFields (only
 * metadata.name is a node field). Operators In, NotIn, Exists, DoesNotExist, Gt, Lt; a
 * requirement Kubernetes would refuse to parse (In with no values, Gt with a value that is
 * not an integer, an unknown operator, a field operator other than In/NotIn) matches
 * nothing, as a term with a parse error does in kube-scheduler. */
bool sch_match_requirement(const Kiln__NodeSelectorRequirement *req, const Kiln__Node *node,
                           bool field);

/* A term: every expression and every field requirement holds. An empty term matches
 * nothing. */
bool sch_match_term(const Kiln__NodeSelectorTerm *term, const Kiln__Node *node);

/* spec.nodeSelector (every pair equal) and the required node affinity (terms ORed; no terms
 * means no constraint). */
bool sch_match_node_selector(const Kiln__Pod *pod, const Kiln__Node *node);

/* Sum of the weights of the preferred terms that match (NodeAffinity Score, before
 * normalisation). Terms of weight 0 and empty terms are skipped. */
int64_t sch_preferred_affinity_score(const Kiln__Pod *pod, const Kiln__Node *node);

/* ---- taints and tolerations ---- */

/* Toleration.ToleratesTaint: the effect matches (or the toleration's is empty), the key
 * matches (or the toleration's is empty), and Exists, or Equal with equal values. */
bool sch_toleration_tolerates(const Kiln__Toleration *tol, const Kiln__Taint *taint);
bool sch_tolerations_tolerate(Kiln__Toleration *const *tols, size_t n, const Kiln__Taint *taint);

/* The first NoSchedule or NoExecute taint of node that pod does not tolerate (borrowed), or
 * NULL. PreferNoSchedule taints never block. */
const Kiln__Taint *sch_untolerated_taint(const Kiln__Pod *pod, const Kiln__Node *node);

/* NodeUnschedulable: false when the node is cordoned and the pod does not tolerate
 * node.kubernetes.io/unschedulable:NoSchedule. */
bool sch_unschedulable_fits(const Kiln__Pod *pod, const Kiln__Node *node);

/* TaintToleration Score before normalisation: the number of PreferNoSchedule taints of node
 * not tolerated by the pod's tolerations of effect PreferNoSchedule or empty. */
int64_t sch_intolerable_prefer_no_schedule(const Kiln__Pod *pod, const Kiln__Node *node);

/* ---- host ports (NodePorts filter) ---- */

/* Whether want conflicts with one of the n ports in use: same port and protocol (TCP when
 * empty) on the same host IP, where 0.0.0.0 (or empty) overlaps every IP. Ports <= 0 never
 * conflict. */
bool sch_host_port_conflict(const Kiln__HostPort *want, Kiln__HostPort *const *used, size_t n);

/* Whether any host port of pod conflicts with the ports in use. */
bool sch_host_ports_conflict(const Kiln__Pod *pod, Kiln__HostPort *const *used, size_t n);

/* ---- label selectors and inter-pod affinity terms (InterPodAffinity, PodTopologySpread) ---- */

#define SCH_REASON_POD_AFFINITY           "node(s) didn't match pod affinity rules"
#define SCH_REASON_POD_ANTI_AFFINITY      "node(s) didn't match pod anti-affinity rules"
#define SCH_REASON_EXISTING_ANTI_AFFINITY "node(s) didn't satisfy existing pods anti-affinity rules"
#define SCH_REASON_SPREAD                 "node(s) didn't match pod topology spread constraints"
#define SCH_REASON_SPREAD_LABEL                                                                    \
  "node(s) didn't match pod topology spread constraints (missing required label)"

/* The label every namespace carries (the API server sets it to the namespace's name). */
#define SCH_LABEL_NAMESPACE_NAME "kubernetes.io/metadata.name"

/* The value of label key on pod (borrowed, from its packed_labels), or NULL when the pod has
 * no such label. */
const char *sch_pod_label(const Kiln__Pod *pod, const char *key);

/* Reads a label of some object: its value (borrowed) or NULL. */
typedef const char *(*sch_label_fn)(const void *obj, const char *key);

/* metav1.LabelSelectorAsSelector(sel).Matches(labels of obj): NULL matches nothing, an empty
 * selector everything; matchLabels pairs are equalities; expressions In, NotIn, Exists,
 * DoesNotExist. A selector Kubernetes would refuse (In/NotIn without values, Exists with
 * values, an unknown operator) matches nothing. */
bool sch_selector_matches(const Kiln__LabelSelector *sel, sch_label_fn get, const void *obj);

/* Whether the selector has no requirement at all (NULL counts as not empty: it is
 * labels.Nothing()). */
bool sch_selector_empty(const Kiln__LabelSelector *sel);

/* The labels of a namespace as the scheduler knows them: only kubernetes.io/metadata.name
 * (obj is the namespace name). */
const char *sch_namespace_label(const void *ns_name, const char *key);

/* AffinityTerm.Matches for the term of owner against target: target's namespace is one the
 * term names (none and no namespaceSelector: owner's own), or the namespaceSelector matches
 * target's namespace; and the labelSelector, narrowed by matchLabelKeys (target has owner's
 * value) and mismatchLabelKeys (target does not), matches target's labels. */
bool sch_affinity_term_matches(const Kiln__PodAffinityTerm *term, const Kiln__Pod *owner,
                               const Kiln__Pod *target);

/* A topology spread constraint's selector (with matchLabelKeys from owner) on target's
 * labels; false when the effective selector is empty, as countPodsMatchSelector counts
 * nothing then. The namespace is not checked. */
bool sch_spread_selects(const Kiln__TopologySpreadConstraint *c, const Kiln__Pod *owner,
                        const Kiln__Pod *target);

/* Whether pod carries any inter-pod affinity term or topology spread constraint. */
bool sch_pod_has_interpod(const Kiln__Pod *pod);

/* ---- reasons ---- */

/* "Insufficient <name>" into buf (NUL-terminated, truncated to len). */
void sch_reason_insufficient(char *buf, size_t len, const char *resource);
/* "node(s) had untolerated taint {<key>: <value>}" into buf. */
void sch_reason_taint(char *buf, size_t len, const Kiln__Taint *taint);

/* ---- scoring formulas (kube-scheduler noderesources, integer arithmetic as Go's) ---- */

/* (capacity - requested) * 100 / capacity; 0 when capacity is 0 or requested > capacity. */
int64_t sch_least_requested_score(int64_t requested, int64_t capacity);
/* requested * 100 / capacity with requested capped at capacity; 0 when capacity is 0. */
int64_t sch_most_requested_score(int64_t requested, int64_t capacity);

/* Weighted mean of the per-resource scores over the n resources whose allocatable is not 0
 * (LeastAllocated when most is false, MostAllocated when true); 0 when none counts.
 * requested[i] is what the node would hold with the pod. */
int64_t sch_allocated_score(const int64_t *requested, const int64_t *allocatable,
                            const int64_t *weights, size_t n, bool most);

/* BalancedAllocation: (1 - std) * 100 truncated, where std is the standard deviation of the
 * requested/allocatable fractions (capped at 1) of the resources whose allocatable is not 0;
 * with two resources |f0 - f1| / 2. */
int64_t sch_balanced_score(const int64_t *requested, const int64_t *allocatable, size_t n);

/* DefaultNormalizeScore: scales scores to 0..max_score by the highest one, then reverses
 * them (max_score - s) when reverse is set; when every score is 0 they become max_score if
 * reverse, else stay 0. */
void sch_normalize_scores(int64_t *scores, size_t n, int64_t max_score, bool reverse);

/* Volcano binpack: (used + requested) * weight / capacity, 0 when capacity or weight is 0 or
 * the node would be over capacity. */
double sch_binpack_resource_score(double requested, double capacity, double used, int weight);

/* A pod's node-static shape: its nodeSelector, required and preferred node affinity and
 * tolerations, packed. Two pods with equal keys get the same answer from
 * sch_match_node_selector, sch_preferred_affinity_score, sch_untolerated_taint,
 * sch_unschedulable_fits and sch_intolerable_prefer_no_schedule on every node, so the tasks
 * of a gang (one template) can share those answers. Equal shapes written in another order
 * give unequal keys: a cache miss, never a wrong answer. */
typedef struct sch_pod_key {
  uint8_t *buf; /* owned */
  size_t len, cap;
} sch_pod_key;

/* Sets k to pod's key: 0, or KC_ENOMEM (k is then empty and equals no key). */
KC_NODISCARD int sch_pod_key_set(sch_pod_key *k, const Kiln__Pod *pod);
/* The same with what inter-pod affinity and topology spread read besides: namespace,
 * labels, pod (anti-)affinity terms and spread constraints. */
KC_NODISCARD int sch_pod_interpod_key_set(sch_pod_key *k, const Kiln__Pod *pod);
bool sch_pod_key_equal(const sch_pod_key *a, const sch_pod_key *b);
void sch_pod_key_close(sch_pod_key *k);

#endif
