/* Kubernetes' volume predicates over one snapshot, as kube-scheduler's plugins have them and
 * Volcano's predicates plugin runs them (predicate.VolumeBindingEnable,
 * predicate.VolumeZoneEnable, predicate.NodeVolumeLimitsEnable, all on by default):
 *
 *  - VolumeBinding. A pod's claims are those of its persistentVolumeClaim volumes and the
 *    "<pod>-<volume>" claims of its generic ephemeral ones (which the pod must own). A claim
 *    bound already (spec.volumeName and pv.kubernetes.io/bind-completed) restricts the pod to
 *    its volume's node affinity; an unbound claim of an Immediate class (or of none) keeps the
 *    pod pending ("pod has unbound immediate PersistentVolumeClaims"); an unbound claim of a
 *    WaitForFirstConsumer class is matched on each node against the class's available
 *    volumes (capacity, access modes, volume mode, selector, node affinity; the smallest that
 *    fits, claims by increasing request as kube-scheduler sorts them) or, when none fits and
 *    the class has a provisioner, against the class's allowedTopologies and, for a CSI
 *    driver with spec.storageCapacity, the CSIStorageCapacity objects of the class.
 *  - VolumeZone: the topology labels (zone, region, GA and beta) of the volumes of bound
 *    claims against the node's.
 *  - NodeVolumeLimits: per CSI driver, the node's CSINode allocatable count against the CSI
 *    volumes of the pods on the node plus the pod's new ones.
 *  - VolumeRestrictions (Kiln runs it with VolumeBinding; Volcano's predicates do not): a
 *    ReadWriteOncePod claim used by another scheduled pod, and GCE PD / AWS EBS / iSCSI /
 *    RBD disks another pod on the node mounts in a conflicting way.
 *
 * Decisions follow the session: sch_vol_place records the volume a placed task's claims take
 * (or the node they are provisioned on), sch_vol_unplace gives them back (a discarded
 * statement, an eviction), so a gang that does not fit leaves nothing assumed. A volume is
 * never chosen for two claims. A pod assumed by an earlier session whose claims are not
 * bound yet (the shell's writes in flight) keeps the volumes it would take on its node.
 * sch_vol_writes gives the shell, for a bound task, what to write before binding it.
 *
 * Messages are kube-scheduler's (Kubernetes 1.36). Not done: VolumeAttributesClasses, CSI
 * migration of in-tree volumes (inline or PV), VolumeAttachments in NodeVolumeLimits, the
 * StorageCapacityScoring score (volumebinding.shape, alpha in Kubernetes). */
#ifndef SCH_VOLUME_H
#define SCH_VOLUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_error.h"
#include "sch_framework.h"

typedef struct sch_vol sch_vol;

/* *out is new (free with sch_vol_free), built over snap (borrowed; it must outlive it).
 * 0 or KC_ENOMEM. */
KC_NODISCARD int sch_vol_new(const sch_snapshot *snap, sch_vol **out);
void sch_vol_free(sch_vol *v);

/* Whether task t has a volume any predicate here reads (most pods pay only this test, inline:
 * the predicates plugin asks it for each node a task tries). */
static inline bool sch_vol_task_has_volumes(const sch_task *t) {
  return t->pod && t->pod->n_volumes > 0;
}

/* The reasons of VolumeBinding's Filter, as bits. */
enum {
  SCH_VOL_NODE_CONFLICT = 1 << 0, /* a bound claim's volume is not reachable from the node */
  SCH_VOL_BIND_CONFLICT = 1 << 1, /* no volume, nor provisioning, for an unbound claim */
  SCH_VOL_NO_SPACE = 1 << 2,      /* the provisioner has too little capacity there */
  SCH_VOL_PV_NOT_EXIST = 1 << 3,  /* a bound claim's volume does not exist */
  SCH_VOL_ZONE_CONFLICT = 1 << 4, /* VolumeZone */
  SCH_VOL_MAX_COUNT = 1 << 5,     /* NodeVolumeLimits */
  SCH_VOL_DISK_CONFLICT = 1 << 6, /* VolumeRestrictions: an inline disk */
  SCH_VOL_RWOP_CONFLICT = 1 << 7, /* VolumeRestrictions: ReadWriteOncePod */
};
#define SCH_VOL_REASONS 8

/* Kube-scheduler's message of reason bit (one of the above). */
const char *sch_vol_reason(unsigned bit);
/* Whether s is a reason given here (a filter's or the prefilter's). */
bool sch_vol_reason_is(const char *s);

/* VolumeBinding's PreFilter (the pod alone): SCH_FIT, or SCH_UNRESOLVABLE with the reason in
 * reason (len bytes): a claim missing or being deleted, an ephemeral claim not the pod's,
 * unbound immediate claims, a class missing. */
int sch_vol_prefilter(sch_vol *v, const sch_task *t, char *reason, size_t len);

/* Which checks sch_vol_filter runs. */
typedef struct sch_vol_checks {
  bool binding, zone, limits, restrictions;
} sch_vol_checks;

/* The checks on node n for t (whose prefilter passed): 0 when it fits, else the reason bits;
 * *unresolvable is set when one of them is (all but the restrictions and limits). */
unsigned sch_vol_filter(sch_vol *v, const sch_task *t, int32_t node, const sch_vol_checks *c,
                        bool *unresolvable);

/* t was placed on node: its unbound claims take their volumes (or are provisioned there)
 * as sch_vol_filter found them, and its claims count it. 0, KC_EINVAL when they no longer
 * fit (nothing changes then), KC_ENOMEM. */
KC_NODISCARD int sch_vol_place(sch_vol *v, const sch_task *t, int32_t node);
/* t left its node: what its placement assumed is given back. */
void sch_vol_unplace(sch_vol *v, const sch_task *t);

/* A write before a bound task's bind: the claim (index into the snapshot message's
 * persistent_volume_claims) gets volume pv (index into persistent_volumes: its
 * spec.claimRef is set), or, with pv -1, is provisioned on node (the claim's
 * volume.kubernetes.io/selected-node annotation). */
typedef struct sch_vol_write {
  int32_t claim;
  int32_t pv;
  int32_t node;
} sch_vol_write;

/* The writes of task t (at most max into out); returns how many. */
size_t sch_vol_writes(const sch_vol *v, const sch_task *t, sch_vol_write *out, size_t max);

/* The names of t's claims this session could not bind on any node, for the why-pending
 * line: "claim-a, claim-b" into buf (empty when none). */
void sch_vol_unbound_names(const sch_vol *v, const sch_task *t, char *buf, size_t len);

#endif
