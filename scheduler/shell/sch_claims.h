/* Dynamic Resource Allocation's writes at bind time (kube-scheduler's DynamicResources
 * PreBind): before a pod that the session gave devices is bound, each of its ResourceClaims
 * gets status.allocation (when the session allocated it) and the pod in status.reservedFor,
 * in one merge patch of the status subresource that carries the resourceVersion the session
 * read, so that a claim changed meanwhile is not overwritten (409: the pod waits for the
 * next session). The pod's bind waits behind a binder gate of its own until every write is
 * answered; if one fails, the bind is dropped and the pod is Pending again. */
#ifndef SCH_CLAIMS_H
#define SCH_CLAIMS_H

#include <stdbool.h>
#include <stdint.h>

#include "kc_api.h"
#include "sch_binder.h"
#include "sch_framework.h"

/* Task t of snap is about to be bound to node. When it has claims to write: the writes go,
 * its bind is queued behind them (created_s as sch_binder_bind takes it) and 1 is returned;
 * 0 when it has none (the caller binds it as usual); KC_ENOMEM. */
KC_NODISCARD int sch_claims_bind(kc_client *c, sch_binder *b, const sch_snapshot *snap, int32_t t,
                                 int32_t node, int64_t created_s);

#endif
