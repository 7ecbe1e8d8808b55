/* The claims from templates: see vc_whatif_claims.h. */
#include "vc_whatif_claims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_codec.h"
#include "kc_time.h"
#include "vc.h"

/* The annotation kube-controller-manager puts on a claim it made: the pod's claim entry. */
#define POD_CLAIM_NAME "resource.kubernetes.io/pod-claim-name"

static const json_t *find_template(const json_t *templates, const char *name) {
  size_t i;
  const json_t *t;
  json_array_foreach(templates, i, t) {
    if (strcmp(vc_str(t, "metadata.name"), name) == 0)
      return t;
  }
  return NULL;
}

/* The claim as the resourceclaim controller creates it (handleClaim): generateName
 * "<pod>-<entry>-" (the API server's random suffix is "whatif" here), owned by the pod, the
 * template's labels and annotations plus the entry's name, and the template's spec. */
static json_t *claim_json(const json_t *tmpl, const json_t *pod, const char *entry,
                          const char *name, int64_t now) {
  const char *ns = vc_str(pod, "metadata.namespace");
  char uid[600], ts[KC_TIME_LEN];
  snprintf(uid, sizeof(uid), "whatif-claim-%s", name);
  kc_time_format(now, ts);
  json_t *ann = json_deep_copy(vc_at(tmpl, "spec.metadata.annotations"));
  if (!json_is_object(ann)) {
    json_decref(ann);
    ann = json_object();
  }
  if (ann)
    json_object_set_new(ann, POD_CLAIM_NAME, json_string(entry));
  json_t *labels = json_deep_copy(vc_at(tmpl, "spec.metadata.labels"));
  json_t *spec = json_deep_copy(vc_at(tmpl, "spec.spec"));
  return json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:o,s:o,s:[{s:s,s:s,s:s,s:s,s:b,s:b}]},s:o}",
                   "apiVersion", "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata", "name",
                   name, "namespace", ns, "uid", uid, "creationTimestamp", ts, "annotations", ann,
                   "labels", labels ? labels : json_object(), "ownerReferences", "apiVersion", "v1",
                   "kind", "Pod", "name", vc_str(pod, "metadata.name"), "uid",
                   vc_str(pod, "metadata.uid"), "controller", 1, "blockOwnerDeletion", 1, "spec",
                   spec ? spec : json_object());
}

static int add_claim(vc_claims *out, const json_t *claim, char *err, size_t errlen) {
  if (out->n == out->cap) {
    size_t cap = out->cap ? out->cap * 2 : 8;
    Kiln__ResourceClaim **v = realloc(out->items, cap * sizeof(*v));
    if (v == NULL)
      return KC_ENOMEM;
    out->items = v;
    out->cap = cap;
  }
  char derr[KC_CODEC_ERR_MAX];
  if (kc_resourceclaim_decode(claim, &out->items[out->n], derr, sizeof(derr)) != 0)
    return kc_errorf(err, errlen, KC_EINVAL, "claim %s does not decode: %s",
                     vc_str(claim, "metadata.name"), derr);
  out->n++;
  return 0;
}

/* The pod's status.resourceClaimStatuses, made if missing. */
static json_t *claim_statuses(json_t *pod) {
  json_t *st = json_object_get(pod, "status");
  if (!json_is_object(st)) {
    st = json_object();
    json_object_set_new(pod, "status", st);
  }
  json_t *a = json_object_get(st, "resourceClaimStatuses");
  if (!json_is_array(a)) {
    a = json_array();
    json_object_set_new(st, "resourceClaimStatuses", a);
  }
  return a;
}

int vc_claims_for_pod(const json_t *templates, json_t *pod, int64_t now, vc_claims *out, char *err,
                      size_t errlen) {
  size_t i;
  const json_t *pc;
  json_array_foreach(vc_at(pod, "spec.resourceClaims"), i, pc) {
    const char *entry = vc_str(pc, "name"), *tname = vc_str(pc, "resourceClaimTemplateName");
    const json_t *tmpl = tname[0] ? find_template(templates, tname) : NULL;
    if (tmpl == NULL)
      continue;
    char name[512];
    snprintf(name, sizeof(name), "%s-%s-whatif", vc_str(pod, "metadata.name"), entry);
    json_t *claim = claim_json(tmpl, pod, entry, name, now);
    json_t *sts = claim_statuses(pod);
    int rc = claim && sts ? add_claim(out, claim, err, errlen) : KC_ENOMEM;
    json_decref(claim);
    if (rc == 0 && json_array_append_new(
                       sts, json_pack("{s:s,s:s}", "name", entry, "resourceClaimName", name)) != 0)
      rc = KC_ENOMEM;
    if (rc != 0)
      return rc;
  }
  return 0;
}

void vc_claims_free(vc_claims *c) {
  for (size_t i = 0; i < c->n; i++)
    kc_msg_free(c->items[i]);
  free(c->items);
  memset(c, 0, sizeof(*c));
}
