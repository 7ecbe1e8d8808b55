/* Dynamic Resource Allocation with structured parameters (kube-scheduler's DynamicResources
 * plugin and k8s.io/dynamic-resource-allocation/structured, which Volcano's predicates run
 * with predicate.DynamicResourceAllocationEnable), over one snapshot.
 *
 * The devices are those of the snapshot's ResourceSlices (per node by nodeName, or on every
 * node matching nodeSelector, or allNodes); a DeviceClass selects them with CEL (sch_cel.h);
 * a pod's spec.resourceClaims name ResourceClaims directly or through a template (the claim
 * kube-controller-manager's resourceclaim controller made, in status.resourceClaimStatuses).
 *
 *  - A claim allocated already (status.allocation) holds its devices: they are never given
 *    twice, and a pod sharing it may only go where its allocation's node selector allows.
 *  - An unallocated claim is allocated on the node being tried: for each request (exactly,
 *    or the first of firstAvailable that can be met), allocationMode ExactCount takes count
 *    free devices (1 by default) that match the class's selectors and the request's,
 *    All takes every matching device on the node and needs at least one, all free.
 *  - sch_dra_place records what a placed task took (the predicates plugin's allocate event),
 *    sch_dra_unplace gives it back (deallocate: a discarded statement, an eviction), so a
 *    gang's devices come and go with its statement. A claim is allocated once however many
 *    of the session's tasks share it.
 *  - sch_dra_writes tells the shell, for a bound task, the claims to write before binding:
 *    status.allocation (when this session allocated it) and the pod in reservedFor.
 *
 * Messages are kube-scheduler's where it has one; a node without the devices says
 * "have no free device of class C" so that the gang's summary reads "0/8 nodes are
 * available: 8 have no free device of class C". A class or request whose CEL does not
 * compile or fails at run time keeps the pod pending with the expression's error.
 *
 * Not done (left for later): constraints (matchAttribute), device taints, consumable
 * capacity, admin access beyond not counting such devices as taken, pool generations (every
 * slice of a pool counts), and the search is greedy (a request takes the first matching
 * free devices; kube-scheduler backtracks across requests). */
#ifndef SCH_DRA_H
#define SCH_DRA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_error.h"
#include "sch_framework.h"

typedef struct sch_dra sch_dra;

/* *out is new (free with sch_dra_free), built over snap (borrowed; it must outlive it).
 * 0 or KC_ENOMEM. A snapshot without ResourceSlices or claims still gives a (cheap) state. */
KC_NODISCARD int sch_dra_new(const sch_snapshot *snap, sch_dra **out);
void sch_dra_free(sch_dra *d);

/* Whether task t asks for claims at all (pods without spec.resourceClaims pay this test,
 * inline: the predicates plugin asks it for each node a task tries). */
static inline bool sch_dra_task_has_claims(const sch_task *t) {
  return t->pod && t->pod->n_resource_claims > 0;
}

/* Can t's claims be met on node n, counting what the session placed? SCH_FIT, or
 * SCH_UNSCHEDULABLE / SCH_UNRESOLVABLE with the reason written into reason (len bytes). */
int sch_dra_filter(sch_dra *d, const sch_task *t, int32_t node, char *reason, size_t len);

/* t was placed on node (after sch_dra_filter said it fits): its unallocated claims take
 * their devices, all its claims count it. 0, or the error of sch_dra_filter (nothing
 * changes then). */
KC_NODISCARD int sch_dra_place(sch_dra *d, const sch_task *t, int32_t node);
/* t left its node: each claim forgets it, and a claim this session allocated frees its
 * devices when no task holds it any more. */
void sch_dra_unplace(sch_dra *d, const sch_task *t);

/* How many devices on node the class cls selects, taken or free (0 for a class that does
 * not exist or whose selectors do not compile; a device whose selector fails at run time is
 * not counted). */
int64_t sch_dra_class_devices(sch_dra *d, const char *cls, int32_t node);

/* One device of an allocation result. */
typedef struct sch_dra_result {
  const char *request, *driver, *pool, *device; /* borrowed from the snapshot */
} sch_dra_result;

/* A claim write for a bound task: claim is the index into the snapshot message's
 * resource_claims; when allocate is set the session allocated it: results (nresults) and,
 * when node_local, a node selector for node go into status.allocation. The task goes into
 * status.reservedFor either way (unless it is there already). */
typedef struct sch_dra_write {
  int32_t claim;
  bool allocate;
  bool node_local;
  int32_t node;
  const sch_dra_result *results; /* borrowed from d */
  int32_t nresults;
  bool reserved; /* the pod is in reservedFor already */
} sch_dra_write;

/* The writes for task t (at most max into out); returns how many. */
size_t sch_dra_writes(const sch_dra *d, const sch_task *t, sch_dra_write *out, size_t max);

#endif
