/* Volume writes and the wait for the binding before a bind: see sch_volumes.h. */
#include "sch_volumes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kc_container.h"
#include "kc_log.h"
#include "kc_store.h"
#include "kc_str.h"
#include "sch_dra.h"
#include "sch_volume.h"

#define MAX_WRITES         64
#define POLL_MS            100
#define DEFAULT_TIMEOUT_S  600
#define ANN_SELECTED_NODE  "volume.kubernetes.io/selected-node"
#define ANN_BIND_COMPLETED "pv.kubernetes.io/bind-completed"
#define ANN_BOUND_BY_CTL   "pv.kubernetes.io/bound-by-controller"

/* One claim the pod waits for: its volume (pv) or, with pv empty, provisioned. */
typedef struct wclaim {
  char claim[256];
  char pv[256];
} wclaim;

/* One pod's writes and wait; the bind goes when the last claim is bound. */
typedef struct pending {
  sch_volumes *vb;
  struct pending *prev, *next;
  uv_timer_t timer;
  char gate[640];
  char ns[256], pod[256];
  int left;          /* writes unanswered, plus one while they are being sent */
  bool failed;       /* a write failed */
  bool done;         /* settled: the gate opened or dropped */
  uint64_t deadline; /* uv_now */
  int n;
  wclaim w[];
} pending;

struct sch_volumes {
  uv_loop_t *loop;
  kc_client *client;
  sch_binder *binder;
  sch_cache *cache;
  pending *head;
  int live;     /* pendings not yet closed: vb is freed after the last once closing */
  bool closing; /* sch_volumes_free ran: the binder is no longer called */
};

int sch_volumes_new(uv_loop_t *loop, kc_client *client, sch_binder *binder, sch_cache *cache,
                    sch_volumes **out) {
  sch_volumes *vb = calloc(1, sizeof(*vb));
  *out = vb;
  if (vb == NULL)
    return KC_ENOMEM;
  *vb = (sch_volumes){loop, client, binder, cache, NULL, 0, false};
  return 0;
}

int64_t sch_volumes_timeout(const sch_conf *conf) {
  for (size_t i = 0; conf && i < conf->ntiers; i++)
    for (size_t k = 0; k < conf->tiers[i].nplugins; k++) {
      const sch_plugin_conf *pc = &conf->tiers[i].plugins[k];
      if (pc->plugin && kc_str_eq(pc->plugin->name, "predicates"))
        return sch_args_int(&pc->args, "volumebinding.bindTimeoutSeconds", DEFAULT_TIMEOUT_S);
    }
  return DEFAULT_TIMEOUT_S;
}

bool sch_volumes_needed(const sch_snapshot *snap, int32_t t) {
  return (snap->vol && sch_vol_task_has_volumes(&snap->tasks[t])) ||
         (snap->dra && sch_dra_task_has_claims(&snap->tasks[t]));
}

/* ---- settling ---- */

static void closed(uv_handle_t *h) {
  pending *p = container_of((uv_timer_t *)h, pending, timer);
  sch_volumes *vb = p->vb;
  free(p);
  if (--vb->live == 0 && vb->closing)
    free(vb);
}

static void unlink_pending(pending *p) {
  if (p->prev)
    p->prev->next = p->next;
  else if (p->vb->head == p)
    p->vb->head = p->next;
  if (p->next)
    p->next->prev = p->prev;
  p->prev = p->next = NULL;
}

/* The wait is over: the bind goes (ok) or is dropped with why on the pod. */
static void finish(pending *p, bool ok, const char *why) {
  sch_volumes *vb = p->vb;
  p->done = true;
  if (vb->closing) {
    /* the binder drops what waits behind its gates itself */
  } else if (ok) {
    KC_V(4, "volumes of %s/%s bound: binding the pod", p->ns, p->pod);
    sch_binder_open(vb->binder, p->gate);
  } else {
    KC_WARN("not binding %s/%s: %s", p->ns, p->pod, why);
    sch_binder_drop(vb->binder, p->gate);
    sch_pod_unschedulable(vb->client, p->ns, p->pod, "SchedulerError", why);
  }
  unlink_pending(p);
  uv_close((uv_handle_t *)&p->timer, closed);
}

static const char *ann(const Kiln__ObjectMeta *md, const char *key) {
  for (size_t i = 0; md && i < md->n_annotations; i++)
    if (kc_str_eq(md->annotations[i]->key, key))
      return md->annotations[i]->value ? md->annotations[i]->value : "";
  return NULL;
}

/* Claim i of p: 1 bound, 0 not yet, -1 failed (why in buf). */
static int claim_state(const pending *p, int i, char *buf, size_t len) {
  const wclaim *w = &p->w[i];
  char key[600];
  snprintf(key, sizeof(key), "%s/%s", p->ns, w->claim);
  const Kiln__PersistentVolumeClaim *c =
      kc_store_get(sch_cache_store(p->vb->cache, SCH_CACHE_PVCS), key);
  if (c == NULL) {
    snprintf(buf, len, "binding volumes: persistentvolumeclaim \"%s\" not found", w->claim);
    return -1;
  }
  const char *vol = c->spec && c->spec->volume_name ? c->spec->volume_name : "";
  if (w->pv[0] == '\0' && ann(c->metadata, ANN_SELECTED_NODE) == NULL) {
    snprintf(buf, len, "binding volumes: selectedNode annotation reset for PVC \"%s\"", w->claim);
    return -1;
  }
  if (w->pv[0] && vol[0] && strcmp(vol, w->pv) != 0) {
    snprintf(buf, len, "binding volumes: ClaimRef got reset for pv \"%s\"", w->pv);
    return -1;
  }
  if (w->pv[0] && !vol[0]) {
    const Kiln__PersistentVolume *pv =
        kc_store_get(sch_cache_store(p->vb->cache, SCH_CACHE_PVS), w->pv);
    const Kiln__VolObjectReference *ref = pv && pv->spec ? pv->spec->claim_ref : NULL;
    /* No claimRef: the watch has not brought the write back yet. */
    if (ref && (!kc_str_eq(ref->name, w->claim) || !kc_str_eq(ref->namespace_, p->ns))) {
      snprintf(buf, len, "binding volumes: ClaimRef got reset for pv \"%s\"", w->pv);
      return -1;
    }
  }
  return vol[0] && ann(c->metadata, ANN_BIND_COMPLETED) ? 1 : 0;
}

static void poll_cb(uv_timer_t *h) {
  pending *p = container_of(h, pending, timer);
  char why[512];
  int bound = 0;
  for (int i = 0; i < p->n; i++) {
    int st = claim_state(p, i, why, sizeof(why));
    if (st < 0) {
      finish(p, false, why);
      return;
    }
    bound += st;
  }
  if (bound == p->n) {
    finish(p, true, NULL);
  } else if (uv_now(p->vb->loop) >= p->deadline) {
    finish(p, false, "binding volumes: timed out waiting for the volumes to be bound");
  } else {
    uv_timer_start(&p->timer, poll_cb, POLL_MS, 0);
  }
}

/* One write (or the hold while they are sent) is over. */
static void settle(pending *p) {
  if (--p->left > 0 || p->done)
    return;
  if (p->failed)
    finish(p, false, "binding volumes: a volume or claim could not be written");
  else if (p->vb->closing)
    finish(p, false, "the scheduler is stopping");
  else
    poll_cb(&p->timer);
}

typedef struct write_ctx {
  pending *p;
  char what[300];
} write_ctx;

static void written(const kc_api_result *res, void *data) {
  write_ctx *x = data;
  pending *p = x->p;
  if (res->err) {
    KC_WARN("cannot write %s: %s: %s", x->what, kc_strerror(res->err),
            res->message ? res->message : "");
    p->failed = true;
  } else {
    KC_V(4, "wrote %s", x->what);
  }
  free(x);
  settle(p);
}

/* ---- writes ---- */

/* The merge patch binding volume pv to claim c (GetBindVolumeToClaim). */
static json_t *bind_patch(const Kiln__PersistentVolume *pv, const Kiln__PersistentVolumeClaim *c) {
  const Kiln__ObjectMeta *pm = pv->metadata, *cm = c->metadata;
  json_t *ref = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "kind", "PersistentVolumeClaim",
                          "apiVersion", "v1", "namespace", cm->namespace_ ? cm->namespace_ : "",
                          "name", cm->name, "uid", cm->uid ? cm->uid : "", "resourceVersion",
                          cm->resource_version ? cm->resource_version : "");
  return json_pack("{s:{s:s,s:{s:s}},s:{s:o}}", "metadata", "resourceVersion",
                   pm->resource_version ? pm->resource_version : "", "annotations",
                   ANN_BOUND_BY_CTL, "yes", "spec", "claimRef", ref);
}

static json_t *select_patch(const Kiln__PersistentVolumeClaim *c, const char *node) {
  const Kiln__ObjectMeta *md = c->metadata;
  return json_pack("{s:{s:s,s:{s:s}}}", "metadata", "resourceVersion",
                   md->resource_version ? md->resource_version : "", "annotations",
                   ANN_SELECTED_NODE, node);
}

static int send_write(pending *p, const sch_snapshot *snap, const sch_vol_write *w) {
  const Kiln__PersistentVolumeClaim *c = snap->msg->persistent_volume_claims[w->claim];
  const Kiln__PersistentVolume *pv = w->pv >= 0 ? snap->msg->persistent_volumes[w->pv] : NULL;
  const char *node = w->node >= 0 ? snap->nodes[w->node].name : "";
  if (pv == NULL && kc_str_eq(ann(c->metadata, ANN_SELECTED_NODE), node))
    return 0; /* selected already: only the wait */
  json_t *body = pv ? bind_patch(pv, c) : select_patch(c, node);
  write_ctx *x = calloc(1, sizeof(*x));
  if (body == NULL || x == NULL) {
    json_decref(body);
    free(x);
    return KC_ENOMEM;
  }
  x->p = p;
  kc_ref ref = {NULL, "v1", "persistentvolumeclaims", c->metadata->namespace_, c->metadata->name,
                NULL};
  if (pv) {
    ref = (kc_ref){NULL, "v1", "persistentvolumes", NULL, pv->metadata->name, NULL};
    snprintf(x->what, sizeof(x->what), "the claimRef of PersistentVolume %s", pv->metadata->name);
  } else {
    snprintf(x->what, sizeof(x->what), "the selected node of PersistentVolumeClaim %s/%s",
             c->metadata->namespace_, c->metadata->name);
  }
  p->left++;
  int rc = kc_api_call(p->vb->client, KC_PATCH_MERGE, &ref, NULL, body, written, x);
  json_decref(body);
  if (rc) {
    p->left--;
    free(x);
  }
  return rc;
}

static pending *pending_new(sch_volumes *vb, const char *gate, const Kiln__Pod *pod,
                            const sch_snapshot *snap, const sch_vol_write *w, size_t n) {
  pending *p = calloc(1, sizeof(*p) + n * sizeof(wclaim));
  if (p == NULL)
    return NULL;
  p->vb = vb;
  snprintf(p->gate, sizeof(p->gate), "%s", gate);
  snprintf(p->ns, sizeof(p->ns), "%s", pod->namespace_);
  snprintf(p->pod, sizeof(p->pod), "%s", pod->name);
  p->n = (int)n;
  for (size_t i = 0; i < n; i++) {
    snprintf(p->w[i].claim, sizeof(p->w[i].claim), "%s",
             snap->msg->persistent_volume_claims[w[i].claim]->metadata->name);
    if (w[i].pv >= 0)
      snprintf(p->w[i].pv, sizeof(p->w[i].pv), "%s",
               snap->msg->persistent_volumes[w[i].pv]->metadata->name);
  }
  return p;
}

int sch_volumes_bind(sch_volumes *vb, const char *gate, const sch_snapshot *snap, int32_t t,
                     int64_t timeout_s) {
  if (snap->vol == NULL || !sch_vol_task_has_volumes(&snap->tasks[t]) || vb->closing)
    return 0;
  sch_vol_write w[MAX_WRITES];
  size_t n = sch_vol_writes(snap->vol, &snap->tasks[t], w, MAX_WRITES);
  if (n == 0)
    return 0;
  pending *p = pending_new(vb, gate, snap->tasks[t].pod, snap, w, n);
  if (p == NULL)
    return KC_ENOMEM;
  int rc = sch_binder_hold_gate(vb->binder, p->gate);
  if (rc) {
    free(p);
    return rc;
  }
  uv_timer_init(vb->loop, &p->timer);
  vb->live++;
  p->deadline = uv_now(vb->loop) + (uint64_t)(timeout_s > 0 ? timeout_s : 0) * 1000;
  p->next = vb->head;
  if (vb->head)
    vb->head->prev = p;
  vb->head = p;
  /* Held at one until every write is sent, so that a quick answer cannot settle it early. */
  p->left = 1;
  for (size_t i = 0; i < n; i++)
    if (send_write(p, snap, &w[i]) != 0)
      p->failed = true;
  settle(p);
  return 1;
}

void sch_volumes_free(sch_volumes *vb) {
  if (vb == NULL)
    return;
  vb->closing = true;
  /* Waits end now; one whose writes are in flight ends with its last callback. vb goes
   * with the last of them. */
  for (pending *p = vb->head, *next; p; p = next) {
    next = p->next;
    if (p->left == 0 && !p->done)
      finish(p, false, "the scheduler is stopping");
  }
  if (vb->live == 0)
    free(vb);
}
