/* The binder: see sch_binder.h. */
#include "sch_binder.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_container.h"
#include "kc_error.h"
#include "kc_log.h"
#include "kc_pb.h"
#include "kc_strmap.h"

typedef struct bind_req {
  struct bind_req *next; /* in the delay queue, or behind a gate */
  struct sch_binder *b;
  char *ns, *name, *uid, *node;
  /* Written before the Binding (deviceshare): the node's annotations (its lock) first,
   * then the pod's (the device assignment), each a merge patch; NULL: none. */
  json_t *node_patch, *pod_patch;
  uint64_t t0;       /* uv_hrtime when handed over */
  int64_t created_s; /* the pod's creation, for on_done */
} bind_req;

struct sch_binder {
  uv_loop_t *loop;
  sch_binder_options opt;
  uv_timer_t timer;      /* the delay (test aid) */
  bind_req *head, *tail; /* waiting out the delay */
  kc_strmap gates;       /* group "ns/name" -> gate (owned): binds behind a closed gate */
  kc_strmap patches;     /* pod "ns/name" -> patches (owned), until its bind is queued */
  size_t waiting, in_flight;
  uint64_t sent, bound, failed, gone;
  bool closing, timer_closed;
};

/* What sch_binder_annotate gave for a pod, until its bind takes it. */
typedef struct patches {
  json_t *node_patch, *pod_patch;
} patches;

static void patches_free(void *v) {
  patches *p = v;
  if (!p)
    return;
  json_decref(p->node_patch);
  json_decref(p->pod_patch);
  free(p);
}

static void req_free(bind_req *r) {
  if (r == NULL)
    return;
  json_decref(r->node_patch);
  json_decref(r->pod_patch);
  free(r->ns);
  free(r->name);
  free(r->uid);
  free(r->node);
  free(r);
}

static void maybe_release(sch_binder *b) {
  if (b->closing && b->timer_closed && b->in_flight == 0)
    free(b);
}

static void pod_key(const bind_req *r, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%s", r->ns, r->name);
}

/* The binds waiting for a group's gate to open, in the order they came. */
typedef struct {
  bind_req *head, **tail;
  size_t n;
  int holds; /* sch_binder_hold_gate: opens it takes before it opens */
} gate;

/* A condition patch's callback: only logs. data is the pod key (owned). */
static void condition_done(const kc_api_result *res, void *data) {
  char *key = data;
  if (res->err && res->err != KC_ENOTFOUND && res->err != KC_ECANCELED)
    KC_WARN("cannot set PodScheduled=False on %s: %s: %s", key, kc_strerror(res->err),
            res->message);
  free(key);
}

void sch_pod_unschedulable(kc_client *c, const char *ns, const char *name, const char *reason,
                           const char *message) {
  char key[512];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  json_t *patch =
      json_pack("{s:{s:[{s:s,s:s,s:s,s:s}]}}", "status", "conditions", "type", "PodScheduled",
                "status", "False", "reason", reason, "message", message);
  char *k = strdup(key);
  if (patch == NULL || k == NULL) {
    json_decref(patch);
    free(k);
    return;
  }
  kc_ref ref = {NULL, "v1", "pods", ns, name, "status"};
  if (kc_api_call(c, KC_PATCH_STRATEGIC, &ref, NULL, patch, condition_done, k) != 0)
    free(k);
  json_decref(patch);
}

/* Volcano taskUnschedulable(SchedulerError): PodScheduled=False on the pod's status. */
static void mark_unschedulable(sch_binder *b, const bind_req *r, const char *why) {
  sch_pod_unschedulable(b->opt.client, r->ns, r->name, "SchedulerError", why);
}

static void bind_done(const kc_api_result *res, void *data) {
  bind_req *r = data;
  sch_binder *b = r->b;
  b->in_flight--;
  if (b->closing) {
    req_free(r);
    maybe_release(b);
    return;
  }
  char key[512];
  pod_key(r, key, sizeof(key));
  uint64_t lat = uv_hrtime() - r->t0;
  if (res->err == 0) {
    b->bound++;
    KC_V(3, "bound %s to %s in %.1f ms", key, r->node, (double)lat / 1e6);
    if (b->opt.events) {
      kc_object_ref o = kc_pod_ref(r->ns, r->name, r->uid);
      kc_event_record(b->opt.events, &o, KC_EVENT_NORMAL, "Scheduled",
                      "Successfully assigned %s/%s to %s", r->ns, r->name, r->node);
    }
  } else {
    /* Roll back: the pod is Pending again for the next session. */
    sch_cache_forget(b->opt.cache, key);
    if (res->err == KC_ENOTFOUND) {
      b->gone++;
      KC_INFO("bind %s to %s: the pod is gone (%s); rolled back", key, r->node, res->message);
    } else {
      b->failed++;
      KC_WARN("bind %s to %s failed: %s: %s; rolled back, retried next session", key, r->node,
              kc_strerror(res->err), res->message);
      char why[768];
      snprintf(why, sizeof(why), "binding to %s failed: %s", r->node, res->message);
      mark_unschedulable(b, r, why);
      if (b->opt.events) {
        kc_object_ref o = kc_pod_ref(r->ns, r->name, r->uid);
        kc_event_record(b->opt.events, &o, KC_EVENT_WARNING, "FailedScheduling", "%s", why);
      }
    }
  }
  if (b->opt.on_done)
    b->opt.on_done(res->err, lat, r->created_s, b->opt.done_ud);
  req_free(r);
}

/* POST pods/NAME/binding with the Binding as JSON or as protobuf. */
static int send_json(sch_binder *b, bind_req *r, const kc_ref *ref) {
  json_t *body;
  if (r->uid)
    body = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind",
                     "Binding", "metadata", "name", r->name, "namespace", r->ns, "uid", r->uid,
                     "target", "apiVersion", "v1", "kind", "Node", "name", r->node);
  else
    body = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind", "Binding",
                     "metadata", "name", r->name, "namespace", r->ns, "target", "apiVersion", "v1",
                     "kind", "Node", "name", r->node);
  kc_query q = {.discard_body = true}; /* bind_done reads the outcome only */
  int rc = body ? kc_api_call(b->opt.client, KC_CREATE, ref, &q, body, bind_done, r) : KC_ENOMEM;
  json_decref(body);
  return rc;
}

static int send_pb(sch_binder *b, bind_req *r, const kc_ref *ref) {
  uint8_t *body = NULL;
  size_t len = 0;
  int rc = kc_pb_binding_encode(r->ns, r->name, r->uid, r->node, &body, &len);
  if (rc == 0)
    rc = kc_api_call_raw(b->opt.client, KC_CREATE, ref, &(kc_query){.discard_body = true}, body,
                         len, KC_PB_CONTENT_TYPE, bind_done, r);
  free(body);
  return rc;
}

static int send_bind(sch_binder *b, bind_req *r) {
  kc_ref ref = {NULL, "v1", "pods", r->ns, r->name, "binding"};
  return b->opt.protobuf ? send_pb(b, r, &ref) : send_json(b, r, &ref);
}

static int send_next(sch_binder *b, bind_req *r);

/* A patch before the Binding answered: on to the next step, or the bind fails with it. */
static void patch_done(const kc_api_result *res, void *data) {
  bind_req *r = data;
  sch_binder *b = r->b;
  if (res->err || b->closing) {
    bind_done(res, r);
    return;
  }
  int rc = send_next(b, r);
  if (rc) {
    kc_api_result fail = {.err = rc, .reason = "", .message = kc_strerror(rc)};
    bind_done(&fail, r);
  }
}

/* The node's patch, then the pod's, then the Binding (Volcano's device Allocate locks the
 * node and patches the pod before the bind). Each patch is dropped once sent. */
static int send_next(sch_binder *b, bind_req *r) {
  json_t *body = r->node_patch ? r->node_patch : r->pod_patch;
  if (!body)
    return send_bind(b, r);
  bool node = body == r->node_patch;
  kc_ref ref = node ? (kc_ref){NULL, "v1", "nodes", NULL, r->node, NULL}
                    : (kc_ref){NULL, "v1", "pods", r->ns, r->name, NULL};
  int rc = kc_api_call(b->opt.client, KC_PATCH_MERGE, &ref, &(kc_query){.discard_body = true}, body,
                       patch_done, r);
  if (rc == 0) {
    if (node)
      r->node_patch = NULL;
    else
      r->pod_patch = NULL;
    json_decref(body);
  }
  return rc;
}

static void send_one(sch_binder *b, bind_req *r) {
  char key[512];
  pod_key(r, key, sizeof(key));
  if (b->opt.may_write && b->opt.may_write(b->opt.ud) != 0) {
    KC_WARN("bind %s to %s dropped: not the leader", key, r->node);
    sch_cache_forget(b->opt.cache, key);
    req_free(r);
    return;
  }
  int rc = send_next(b, r);
  if (rc) {
    KC_ERROR("bind %s to %s not sent: %s", key, r->node, kc_strerror(rc));
    sch_cache_forget(b->opt.cache, key);
    b->failed++;
    req_free(r);
    return;
  }
  b->sent++;
  b->in_flight++;
}

static void arm(sch_binder *b);

static void timer_cb(uv_timer_t *t) {
  sch_binder *b = container_of(t, sch_binder, timer);
  uint64_t now = uv_hrtime(), delay = (uint64_t)b->opt.delay_ms * 1000000;
  while (b->head && b->head->t0 + delay <= now) {
    bind_req *r = b->head;
    b->head = r->next;
    if (b->head == NULL)
      b->tail = NULL;
    b->waiting--;
    r->next = NULL;
    send_one(b, r);
  }
  arm(b);
}

static void arm(sch_binder *b) {
  if (b->head == NULL || uv_is_active((uv_handle_t *)&b->timer))
    return;
  uint64_t now = uv_hrtime(), due = b->head->t0 + (uint64_t)b->opt.delay_ms * 1000000;
  uint64_t ms = due > now ? (due - now + 999999) / 1000000 : 0;
  uv_timer_start(&b->timer, timer_cb, ms, 0);
}

int sch_binder_new(uv_loop_t *loop, const sch_binder_options *o, sch_binder **out) {
  *out = NULL;
  if (o == NULL || o->client == NULL || o->cache == NULL)
    return KC_EINVAL;
  sch_binder *b = calloc(1, sizeof(*b));
  if (b == NULL)
    return KC_ENOMEM;
  b->loop = loop;
  b->opt = *o;
  kc_strmap_init(&b->gates, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&b->patches, KC_STRMAP_COPY_KEYS);
  if (uv_timer_init(loop, &b->timer) != 0) {
    free(b);
    return KC_EIO;
  }
  *out = b;
  return 0;
}

/* A gate's binds are not sent: their assumptions are forgotten (sch_binder_free). */
static void drop_gate(sch_binder *b, gate *g) {
  while (g->head) {
    bind_req *r = g->head;
    g->head = r->next;
    char key[512];
    pod_key(r, key, sizeof(key));
    sch_cache_forget(b->opt.cache, key);
    req_free(r);
  }
  free(g);
}

static void timer_closed(uv_handle_t *h) {
  sch_binder *b = container_of((uv_timer_t *)h, sch_binder, timer);
  b->timer_closed = true;
  maybe_release(b);
}

void sch_binder_free(sch_binder *b) {
  if (b == NULL)
    return;
  b->closing = true;
  while (b->head) {
    bind_req *r = b->head;
    b->head = r->next;
    char key[512];
    pod_key(r, key, sizeof(key));
    sch_cache_forget(b->opt.cache, key);
    req_free(r);
  }
  b->tail = NULL;
  b->waiting = 0;
  size_t pos = 0;
  kc_strmap_slot *s;
  while ((s = kc_strmap_next(&b->gates, &pos)))
    drop_gate(b, s->val);
  kc_strmap_close(&b->gates, NULL);
  kc_strmap_close(&b->patches, patches_free);
  uv_close((uv_handle_t *)&b->timer, timer_closed);
}

static bind_req *req_new(sch_binder *b, const char *ns, const char *name, const char *uid,
                         const char *node, int64_t created_s) {
  bind_req *r = calloc(1, sizeof(*r));
  if (r == NULL)
    return NULL;
  r->b = b;
  r->ns = strdup(ns);
  r->name = strdup(name);
  r->uid = uid && uid[0] ? strdup(uid) : NULL;
  r->node = strdup(node);
  r->t0 = uv_hrtime();
  r->created_s = created_s;
  if (!r->ns || !r->name || !r->node || (uid && uid[0] && !r->uid)) {
    req_free(r);
    return NULL;
  }
  char key[512];
  void *v = NULL;
  pod_key(r, key, sizeof(key));
  if (kc_strmap_len(&b->patches) && kc_strmap_del(&b->patches, key, &v) == 0) {
    patches *p = v;
    r->node_patch = p->node_patch;
    r->pod_patch = p->pod_patch;
    free(p);
  }
  return r;
}

/* Sends r now, or after the delay (test aid). */
static void go(sch_binder *b, bind_req *r) {
  if (b->opt.delay_ms <= 0) {
    send_one(b, r);
    return;
  }
  if (b->tail)
    b->tail->next = r;
  else
    b->head = r;
  b->tail = r;
  b->waiting++;
  arm(b);
}

int sch_binder_bind(sch_binder *b, const char *ns, const char *name, const char *uid,
                    const char *node, int64_t created_s) {
  bind_req *r = req_new(b, ns, name, uid, node, created_s);
  if (r == NULL)
    return KC_ENOMEM;
  go(b, r);
  return 0;
}

int sch_binder_annotate(sch_binder *b, const char *key, json_t *node_patch, json_t *pod_patch) {
  patches *p = calloc(1, sizeof(*p));
  if (!p) {
    json_decref(node_patch);
    json_decref(pod_patch);
    return KC_ENOMEM;
  }
  p->node_patch = node_patch;
  p->pod_patch = pod_patch;
  void *old = NULL;
  if (kc_strmap_put(&b->patches, key, p, &old) < 0) {
    patches_free(p);
    return KC_ENOMEM;
  }
  patches_free(old);
  return 0;
}

int sch_binder_close_gate(sch_binder *b, const char *group) {
  if (kc_strmap_has(&b->gates, group))
    return 1;
  gate *g = calloc(1, sizeof(*g));
  if (g == NULL)
    return KC_ENOMEM;
  g->tail = &g->head;
  if (kc_strmap_put(&b->gates, group, g, NULL) < 0) {
    free(g);
    return KC_ENOMEM;
  }
  return 0;
}

int sch_binder_bind_in(sch_binder *b, const char *group, const char *ns, const char *name,
                       const char *uid, const char *node, int64_t created_s) {
  gate *g = group && kc_strmap_len(&b->gates) ? kc_strmap_get(&b->gates, group) : NULL;
  if (g == NULL)
    return sch_binder_bind(b, ns, name, uid, node, created_s);
  bind_req *r = req_new(b, ns, name, uid, node, created_s);
  if (r == NULL)
    return KC_ENOMEM;
  *g->tail = r;
  g->tail = &r->next;
  g->n++;
  b->waiting++;
  return 0;
}

int sch_binder_hold_gate(sch_binder *b, const char *group) {
  gate *g = kc_strmap_get(&b->gates, group);
  if (g == NULL)
    return KC_EINVAL;
  g->holds++;
  return 0;
}

void sch_binder_open(sch_binder *b, const char *group) {
  void *v = NULL;
  gate *held = b->closing ? NULL : kc_strmap_get(&b->gates, group);
  if (held && held->holds > 0) {
    held->holds--;
    return;
  }
  if (b->closing || kc_strmap_del(&b->gates, group, &v) != 0)
    return;
  gate *g = v;
  b->waiting -= g->n;
  while (g->head) {
    bind_req *r = g->head;
    g->head = r->next;
    r->next = NULL;
    go(b, r);
  }
  free(g);
}

void sch_binder_drop(sch_binder *b, const char *group) {
  void *v = NULL;
  if (b->closing || kc_strmap_del(&b->gates, group, &v) != 0)
    return;
  gate *g = v;
  b->waiting -= g->n;
  drop_gate(b, g);
}

void sch_binder_get_stats(const sch_binder *b, sch_binder_stats *st) {
  st->sent = b->sent;
  st->bound = b->bound;
  st->failed = b->failed;
  st->gone = b->gone;
  st->in_flight = b->in_flight;
  st->waiting = b->waiting;
}
