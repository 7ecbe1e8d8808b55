/* The claims a Job's pods would get from ResourceClaimTemplates (vc_whatif.h): what
 * kube-controller-manager's resourceclaim controller does for a new pod, since what-if pods
 * are never created. Pure. */
#ifndef VC_WHATIF_CLAIMS_H
#define VC_WHATIF_CLAIMS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_error.h"
#include "snapshot.pb-c.h"

typedef struct {
  Kiln__ResourceClaim **items; /* owned */
  size_t n, cap;
} vc_claims;

/* pod is the planned pod (JSON, with its namespace and uid). For each spec.resourceClaims
 * entry naming a template of templates (an array of ResourceClaimTemplates, may be NULL), a
 * claim made from it, owned by the pod, joins out, and the pod's status.resourceClaimStatuses
 * names it. An entry whose template is not there gets no claim (the controller makes none;
 * the session then says the claim is not created yet). 0, KC_ENOMEM, or KC_EINVAL with err. */
KC_NODISCARD int vc_claims_for_pod(const json_t *templates, json_t *pod, int64_t now,
                                   vc_claims *out, char *err, size_t errlen);
void vc_claims_free(vc_claims *c);

#endif
