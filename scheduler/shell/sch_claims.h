/* Dynamic Resource Allocation's writes at bind time (kube-scheduler's DynamicResources
 * PreBind): before a pod that the session gave devices is bound, each of its ResourceClaims
 * gets status.allocation (when the session allocated it) and the pod in status.reservedFor,
 * in one merge patch of the status subresource that carries the resourceVersion the session
 * read, so that a claim changed meanwhile is not overwritten (409: the pod waits for the
 * next session). The pod's bind waits behind a binder gate of its own until every write is
 * answered; if one fails, the bind is dropped and the pod is Pending again. The gate is shared
 * with the volume writes (sch_volumes.h): the bind goes when both are done. */
#ifndef SCH_CLAIMS_H
#define SCH_CLAIMS_H

#include <stdbool.h>
#include <stdint.h>

#include "kc_api.h"
#include "sch_binder.h"
#include "sch_framework.h"

/* Task t of snap is about to be bound, behind the binder's closed gate (the caller queues
 * its bind there). When it has claims to write: the writes go, the gate is held until they
 * are answered (opened once then, or dropped if one failed) and 1 is returned; 0 when it has
 * none; KC_ENOMEM, KC_EINVAL (no such gate). */
KC_NODISCARD int sch_claims_bind(kc_client *c, sch_binder *b, const char *gate,
                                 const sch_snapshot *snap, int32_t t);

#endif
