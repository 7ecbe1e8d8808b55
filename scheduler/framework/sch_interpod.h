/* Inter-pod affinity and topology spread over a session (kube-scheduler's InterPodAffinity
 * and PodTopologySpread plugins, which Volcano's predicates and nodeorder plugins run).
 *
 * One sch_ipa per plugin instance keeps, for the pod shape it last saw (namespace, labels,
 * terms, constraints, node selection and tolerations: sch_pod_interpod_key_set), the
 * counts those plugins compute in PreFilter/PreScore, per topology domain:
 *   - pods matching all of the pod's required affinity terms, and each anti-affinity term;
 *   - placed pods whose required anti-affinity terms match the pod (symmetry);
 *   - the preferred-term score of each domain (both directions, and placed pods' required
 *     affinity at hardPodAffinityWeight);
 *   - matching pods per domain for each spread constraint, over the nodes the constraint's
 *     nodeAffinityPolicy / nodeTaintsPolicy admit.
 * The counts follow the session: the plugins forward their allocate/deallocate events, so
 * tasks placed earlier in the session (and a gang's own tasks) count, and a discarded
 * statement takes them back. A new shape (or a deallocation whose node is no longer known)
 * recounts from the node lists.
 *
 * Pay only when terms exist: sch_ipa_new gives NULL when no pod of the snapshot carries a
 * term or constraint, and the plugins then skip all of this. A pod without terms is checked
 * only against the placed pods that carry some (existing anti-affinity, symmetric scores).
 *
 * Topology spread has no system default constraints here (kube-scheduler would derive soft
 * hostname/zone spreading from Services, ReplicaSets and StatefulSets selecting the pod;
 * Volcano Job pods have none of those owners and Kiln does not watch Services).
 * namespaceSelector sees only the label kubernetes.io/metadata.name of a namespace. */
#ifndef SCH_INTERPOD_H
#define SCH_INTERPOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sch_framework.h"
#include "kc_error.h"

typedef struct sch_ipa sch_ipa;

/* Filter verdicts (the reason is the kube-scheduler message of the same name). */
typedef enum {
  SCH_IPA_FIT = 0,
  SCH_IPA_AFFINITY,      /* SCH_REASON_POD_AFFINITY, unresolvable */
  SCH_IPA_ANTI_AFFINITY, /* SCH_REASON_POD_ANTI_AFFINITY */
  SCH_IPA_EXISTING_ANTI, /* SCH_REASON_EXISTING_ANTI_AFFINITY */
  SCH_IPA_SPREAD,        /* SCH_REASON_SPREAD */
  SCH_IPA_SPREAD_LABEL,  /* SCH_REASON_SPREAD_LABEL, unresolvable */
} sch_ipa_verdict;

/* *out = a *new* state for snap (borrowed, must outlive it), or NULL when no pod of the
 * snapshot carries an inter-pod term or spread constraint. hard_weight: hardPodAffinityWeight
 * (kube-scheduler's default is 1). 0 or KC_ENOMEM. */
KC_NODISCARD int sch_ipa_new(const sch_snapshot *snap, int64_t hard_weight, sch_ipa **out);
void sch_ipa_free(sch_ipa *a);

/* The session's shared state: the first plugin to ask creates it (*out NULL when no pod has
 * a term) and registers the event handlers that keep it in step; later ones get the same
 * state, so the predicates and nodeorder plugins count once. Each acquire that gave a state
 * is paired with sch_ipa_release (the last one frees it). 0 or KC_ENOMEM. */
KC_NODISCARD int sch_ipa_acquire(sch_session *ssn, sch_ipa **out);
void sch_ipa_release(sch_session *ssn, sch_ipa *a);

/* Event handlers: t was placed on t->node (allocate, pipeline, undone eviction), or taken
 * off (undone allocation, eviction). */
void sch_ipa_placed(sch_ipa *a, const sch_task *t);
void sch_ipa_removed(sch_ipa *a, const sch_task *t);

enum { SCH_IPA_CHECK_AFFINITY = 1, SCH_IPA_CHECK_SPREAD = 2 };

/* InterPodAffinity then PodTopologySpread (DoNotSchedule constraints) for t on node ni,
 * each when its bit is in checks; the first failure is returned. */
sch_ipa_verdict sch_ipa_filter(sch_ipa *a, const sch_task *t, int32_t ni, unsigned checks);

/* Scores of t on nodes[0..n), each normalised to 0..100 as kube-scheduler does: the
 * InterPodAffinity score into aff (when non-NULL) and the PodTopologySpread score of the
 * ScheduleAnyway constraints into spread (when non-NULL). Entries are set to 0 when the pod
 * has nothing to score. KC_ENOMEM leaves the scores at 0. */
KC_NODISCARD int sch_ipa_scores(sch_ipa *a, const sch_task *t, const int32_t *nodes, size_t n,
                                int64_t *aff, int64_t *spread);

#endif
