/* The ResourceClaim status kiln-scheduler writes for a bound pod (kube-scheduler's
 * DynamicResources PreBind): status.allocation as JSON from the session's allocation. Pure;
 * the shell sends it (sch_claims.c), vcctl's what-if prints it as the prediction. */
#ifndef SCH_CLAIM_STATUS_H
#define SCH_CLAIM_STATUS_H

#include <jansson.h>

#include "sch_dra.h"
#include "sch_framework.h"

/* status.allocation for write w of snap's session: the devices and, for node-local ones, the
 * node. A new reference, or NULL (out of memory). */
json_t *sch_claim_allocation(const sch_snapshot *snap, const sch_dra_write *w);

#endif
