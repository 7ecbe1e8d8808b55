/* Claim writes before a bind: see sch_claims.h. */
#include "sch_claims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kc_log.h"
#include "sch_claim_status.h"
#include "sch_dra.h"

#define MAX_WRITES 64

/* One pod's writes: the bind goes when the last is answered, unless one failed. */
typedef struct pending {
  sch_binder *binder;
  char gate[600];
  int left;
  bool failed;
} pending;

typedef struct write_ctx {
  pending *p;
  char what[600];
} write_ctx;

/* One write (or the hold) is over. */
static void settle(pending *p) {
  if (--p->left > 0)
    return;
  if (p->failed)
    sch_binder_drop(p->binder, p->gate);
  else
    sch_binder_open(p->binder, p->gate);
  free(p);
}

static void written(const kc_api_result *res, void *data) {
  write_ctx *w = data;
  pending *p = w->p;
  if (res->err) {
    KC_WARN("cannot write the allocation of ResourceClaim %s: %s: %s", w->what,
            kc_strerror(res->err), res->message ? res->message : "");
    p->failed = true;
  } else {
    KC_V(4, "wrote ResourceClaim %s", w->what);
  }
  free(w);
  settle(p);
}

/* The whole of status.reservedFor: what the claim has, and the pod unless it is there. */
static json_t *reserved_for(const Kiln__ResourceClaim *c, const Kiln__Pod *pod, bool has) {
  json_t *arr = json_array();
  const Kiln__ResourceClaimStatus *st = c->status;
  for (size_t i = 0; arr && st && i < st->n_reserved_for; i++) {
    const Kiln__DraConsumerReference *r = st->reserved_for[i];
    json_t *o = json_object();
    if (r->api_group)
      json_object_set_new(o, "apiGroup", json_string(r->api_group));
    if (r->resource)
      json_object_set_new(o, "resource", json_string(r->resource));
    if (r->name)
      json_object_set_new(o, "name", json_string(r->name));
    if (r->uid)
      json_object_set_new(o, "uid", json_string(r->uid));
    json_array_append_new(arr, o);
  }
  if (arr && !has)
    json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "resource", "pods", "name", pod->name,
                                         "uid", pod->uid ? pod->uid : ""));
  return arr;
}

static int send_write(kc_client *cl, pending *p, const sch_snapshot *snap, const Kiln__Pod *pod,
                      const sch_dra_write *w) {
  const Kiln__ResourceClaim *c = snap->msg->resource_claims[w->claim];
  const Kiln__ObjectMeta *md = c->metadata;
  json_t *status = json_pack("{s:o}", "reservedFor", reserved_for(c, pod, w->reserved));
  if (status && w->allocate)
    json_object_set_new(status, "allocation", sch_claim_allocation(snap, w));
  json_t *body = json_pack("{s:{s:s},s:o}", "metadata", "resourceVersion",
                           md->resource_version ? md->resource_version : "", "status", status);
  write_ctx *x = calloc(1, sizeof(*x));
  if (body == NULL || x == NULL) {
    json_decref(body);
    free(x);
    return KC_ENOMEM;
  }
  x->p = p;
  snprintf(x->what, sizeof(x->what), "%s/%s", md->namespace_, md->name);
  kc_ref ref = {"resource.k8s.io", "v1", "resourceclaims", md->namespace_, md->name, "status"};
  p->left++;
  int rc = kc_api_call(cl, KC_PATCH_MERGE, &ref, NULL, body, written, x);
  json_decref(body);
  if (rc) {
    p->left--;
    free(x);
  }
  return rc;
}

int sch_claims_bind(kc_client *c, sch_binder *b, const char *gate, const sch_snapshot *snap,
                    int32_t t) {
  if (snap->dra == NULL || !sch_dra_task_has_claims(&snap->tasks[t]))
    return 0;
  sch_dra_write w[MAX_WRITES];
  const Kiln__Pod *pod = snap->tasks[t].pod;
  size_t n = sch_dra_writes(snap->dra, &snap->tasks[t], w, MAX_WRITES);
  if (n == 0)
    return 0;
  pending *p = calloc(1, sizeof(*p));
  if (p == NULL)
    return KC_ENOMEM;
  p->binder = b;
  snprintf(p->gate, sizeof(p->gate), "%s", gate);
  int rc = sch_binder_hold_gate(b, p->gate);
  if (rc) {
    free(p);
    return rc;
  }
  /* Held at one until every write is sent, so that a quick answer cannot open the gate
   * early. */
  p->left = 1;
  for (size_t i = 0; i < n; i++)
    if (send_write(c, p, snap, pod, &w[i]) != 0)
      p->failed = true;
  settle(p);
  return 1;
}
