/* The podgroup controller's decisions (Volcano pkg/controllers/podgroup): which plain pods it
 * groups, the PodGroup it makes for them, and when a workload's PodGroup goes. Pure functions
 * of JSON objects (borrowed); the shell is ctl_ctrl_pg.c. */
#ifndef CTL_PG_H
#define CTL_PG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "k8s.pb-c.h"
#include "kc_error.h"

#define CTL_PG_NAME_PREFIX    "podgroup-"
#define CTL_PG_GROUP_NAME     "scheduling.k8s.io/group-name"
#define CTL_PG_QUEUE_NAME     "scheduling.volcano.sh/queue-name"
#define CTL_PG_MIN_MEMBER     "scheduling.volcano.sh/group-min-member"
#define CTL_PG_INHERIT_PREFIX "volcano.sh/"

/* The controller ownerReference of obj (borrowed), or NULL (metav1.GetControllerOf). */
const json_t *ctl_pg_controller_of(const json_t *obj);
/* Volcano helpers.GeneratePodgroupName: "podgroup-" + the controller owner's UID, else the
 * pod's UID. 0, or KC_EINVAL when the UID is missing or does not fit. */
KC_NODISCARD int ctl_pg_name(const json_t *pod, char *buf, size_t cap);

typedef enum {
  CTL_PG_IGNORE = 0, /* not ours: another scheduler, terminating, or in someone else's group */
  CTL_PG_ENSURE,     /* its group should exist (create it if missing) */
  CTL_PG_ENSURE_AND_ANNOTATE, /* ... and the pod needs the group-name annotation */
} ctl_pg_verdict;

/* What to do with a pod: schedulerName one of schedulers[], not terminating, and no
 * scheduling.k8s.io/group-name annotation other than its own group's name. */
ctl_pg_verdict ctl_pg_decide_pod(const json_t *pod, const char *const *schedulers, size_t n);

/* The minMember the owners' annotations ask for (scheduling.volcano.sh/group-min-member, a
 * non-negative int32; anything else is 1, as Volcano logs and keeps 1). */
int32_t ctl_pg_min_member(const json_t *owner_annotations);

/* Volcano buildPodGroupFromPod: the PodGroup (new) named name for pod. owner_annotations
 * (may be NULL) are the annotations of the pod's owners; with inherit they give minMember and
 * every volcano.sh/ annotation. NULL when out of memory. */
json_t *ctl_pg_build(const json_t *pod, const char *name, const json_t *owner_annotations,
                     bool inherit);

/* A pod in Kubernetes' protobuf (borrowed): false when ctl_pg_decide_pod would ignore it
 * (read from the protobuf, so that the pods that are not ours cost no JSON). */
bool ctl_pg_pb_candidate(const K8s__Pod *pod, const char *const *schedulers, size_t n);
/* The part of the pod's JSON that ctl_pg_decide_pod, ctl_pg_name and ctl_pg_build read
 * (metadata's name, namespace, uid, annotations, labels and ownerReferences; spec's scheduler
 * name, priority class, containers' and init containers' resources and restart policy,
 * overhead and pod-level resources), as the server would send it: new, NULL without memory. */
json_t *ctl_pg_pod_json(const K8s__Pod *pod);
/* A ReplicaSet or StatefulSet whose spec.replicas is 0 (absent means 1). */
bool ctl_pg_scaled_to_zero(const json_t *workload);

#endif
