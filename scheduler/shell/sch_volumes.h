/* VolumeBinding's writes at bind time (kube-scheduler's VolumeBinding PreBind, which
 * Volcano's predicates plugin runs before it binds): before a pod whose unbound
 * WaitForFirstConsumer claims the session matched is bound,
 *  - a volume chosen for a claim gets spec.claimRef (and pv.kubernetes.io/bound-by-controller),
 *  - a claim to provision gets the volume.kubernetes.io/selected-node annotation,
 * each in one merge patch carrying the resourceVersion the session read (a volume changed
 * meanwhile is not overwritten: 409, the pod waits for the next session). Then, as PreBind
 * does, the pod waits until kube-controller-manager's PV controller (or the provisioner and
 * it) has bound every such claim (spec.volumeName and pv.kubernetes.io/bind-completed, read
 * from the cache's watch), at most volumebinding.bindTimeoutSeconds (600 by default, as in
 * Volcano). Its bind waits behind a binder gate shared with the ResourceClaim writes
 * (sch_claims.h); a failed write, a claim whose selected node was taken off (the provisioner
 * gave up), a volume bound to another claim or the timeout drop the bind: the pod is Pending
 * again, told why on its PodScheduled condition, and the next session tries again. */
#ifndef SCH_VOLUMES_H
#define SCH_VOLUMES_H

#include <stdint.h>

#include <uv.h>

#include "kc_api.h"
#include "sch_binder.h"
#include "sch_cache.h"
#include "sch_framework.h"

typedef struct sch_volumes sch_volumes;

/* *out is new; client, binder and cache are borrowed and must outlive it. 0 or KC_ENOMEM. */
KC_NODISCARD int sch_volumes_new(uv_loop_t *loop, kc_client *client, sch_binder *binder,
                                 sch_cache *cache, sch_volumes **out);
/* Stops every wait (their binds are dropped with the binder); writes in flight end with
 * their callbacks. Run the loop afterwards. NULL is a no-op. */
void sch_volumes_free(sch_volumes *vb);

/* volumebinding.bindTimeoutSeconds of conf's predicates plugin (600 without one). */
int64_t sch_volumes_timeout(const sch_conf *conf);

/* Task t of snap is about to be bound, behind the binder's closed gate (the caller queues
 * its bind there). When it has volume writes: they go, the gate is held until every claim
 * is bound (opened once then, or dropped) and 1 is returned; 0 when it has none; KC_ENOMEM,
 * KC_EINVAL (no such gate). */
KC_NODISCARD int sch_volumes_bind(sch_volumes *vb, const char *gate, const sch_snapshot *snap,
                                  int32_t t, int64_t timeout_s);

/* Whether task t of snap has anything to write before its bind (volumes or claims). */
bool sch_volumes_needed(const sch_snapshot *snap, int32_t t);

#endif
