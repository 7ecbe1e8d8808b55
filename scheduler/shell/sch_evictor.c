/* The evictor: see sch_evictor.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kc_clock.h"
#include "kc_error.h"
#include "kc_time.h"
#include "kc_log.h"
#include "kc_store.h"
#include "sch_evictor.h"

/* One eviction in flight: everything it needs after the pod may have left the cache. The
 * evictor lists them so that, when it is freed first, they forget the cache (set to NULL)
 * and finish without it. */
typedef struct eviction {
  struct sch_evictor *ev;
  sch_cache *cache;
  kc_client *client;
  char *ns, *name, *uid, *key;
  struct eviction *prev, *next;
} eviction;

struct sch_evictor {
  kc_client *client;
  kc_event_recorder *events;
  sch_cache *cache;
  uint64_t count;
  eviction *in_flight;
};

static void eviction_free(eviction *e) {
  if (e) {
    if (e->ev) {
      if (e->prev)
        e->prev->next = e->next;
      else
        e->ev->in_flight = e->next;
      if (e->next)
        e->next->prev = e->prev;
    }
    free(e->ns);
    free(e->name);
    free(e->uid);
    free(e->key);
    free(e);
  }
}

int sch_evictor_new(kc_client *c, kc_event_recorder *events, sch_cache *cache, sch_evictor **out) {
  sch_evictor *ev = calloc(1, sizeof(*ev));
  if (ev == NULL)
    return KC_ENOMEM;
  ev->client = c;
  ev->events = events;
  ev->cache = cache;
  *out = ev;
  return 0;
}

void sch_evictor_free(sch_evictor *ev) {
  if (ev == NULL)
    return;
  for (eviction *e = ev->in_flight; e; e = e->next) {
    e->ev = NULL;
    e->cache = NULL;
  }
  free(ev);
}

static void forget(eviction *e) {
  if (e->cache)
    sch_cache_evict_failed(e->cache, e->key);
}

uint64_t sch_evictor_count(const sch_evictor *ev) {
  return ev->count;
}

static void failed(eviction *e, const kc_api_result *res, const char *what) {
  if (res->err != KC_ECANCELED) {
    KC_WARN("cannot evict %s (%s): %s: %s; it is schedulable again", e->key, what,
            kc_strerror(res->err), res->message);
    forget(e);
  }
  eviction_free(e);
}

static void deleted(const kc_api_result *res, void *data) {
  eviction *e = data;
  if (res->err && res->err != KC_ENOTFOUND && res->err != KC_ECONFLICT) {
    failed(e, res, "delete");
    return;
  }
  /* Gone, or the name now belongs to a new pod (the UID precondition failed): either way the
   * watch drops the mark. */
  eviction_free(e);
}

static void status_written(const kc_api_result *res, void *data) {
  eviction *e = data;
  if (res->err == KC_ENOTFOUND) {
    eviction_free(e);
    return;
  }
  if (res->err) {
    failed(e, res, "status");
    return;
  }
  kc_ref ref = {NULL, "v1", "pods", e->ns, e->name, NULL};
  kc_query q = {0};
  q.precondition_uid = e->uid;
  if (kc_api_call(e->client, KC_DELETE, &ref, &q, NULL, deleted, e) != 0) {
    KC_WARN("cannot evict %s: the delete could not start", e->key);
    forget(e);
    eviction_free(e);
  }
}

/* Ready=False (Evict) and DisruptionTarget=True (PreemptionByScheduler): a strategic merge
 * patch merges conditions by type, so the pod's other conditions stay. */
static json_t *status_patch(const char *msg) {
  char now[KC_TIME_LEN];
  kc_clock_rfc3339(now);
  return json_pack("{s:{s:[{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:s}]}}", "status", "conditions",
                   "type", "Ready", "status", "False", "reason", "Evict", "message", msg,
                   "lastTransitionTime", now, "type", "DisruptionTarget", "status", "True",
                   "reason", "PreemptionByScheduler", "message", msg, "lastTransitionTime", now);
}

static void record(sch_evictor *ev, const Kiln__Pod *p, const Kiln__PodGroup *pg,
                   const char *reason, const char *msg) {
  if (ev->events == NULL)
    return;
  kc_object_ref o = kc_pod_ref(p->namespace_, p->name, p->uid);
  kc_event_record(ev->events, &o, KC_EVENT_WARNING, "Evict", "%s", msg);
  if (pg == NULL || pg->metadata == NULL)
    return;
  kc_object_ref g = {.kind = "PodGroup",
                     .namespace = pg->metadata->namespace_,
                     .name = pg->metadata->name,
                     .uid = pg->metadata->uid,
                     .api_version = "scheduling.volcano.sh/v1beta1"};
  kc_event_record(ev->events, &g, KC_EVENT_NORMAL, "Evict", "%s", reason);
}

int sch_evictor_evict(sch_evictor *ev, const Kiln__Pod *p, const Kiln__PodGroup *pg,
                      const char *reason) {
  char key[512];
  if (kc_store_key(key, sizeof(key), p->namespace_, p->name) != 0)
    return KC_EINVAL;
  if (sch_cache_is_evicting(ev->cache, key))
    return KC_EEXISTS;
  eviction *e = calloc(1, sizeof(*e));
  char *msg = NULL;
  json_t *patch = NULL;
  int rc = KC_ENOMEM;
  if (e == NULL || asprintf(&msg, "Pod is evicted, because of %s", reason) < 0) {
    msg = NULL;
    goto out;
  }
  e->cache = ev->cache;
  e->client = ev->client;
  e->ns = strdup(p->namespace_);
  e->name = strdup(p->name);
  e->uid = strdup(p->uid ? p->uid : "");
  e->key = strdup(key);
  if (!e->ns || !e->name || !e->uid || !e->key || (patch = status_patch(msg)) == NULL ||
      (rc = sch_cache_evicting(ev->cache, key, p->uid)) < 0)
    goto out;
  KC_INFO("evicting %s: %s", key, msg);
  record(ev, p, pg, reason, msg);
  ev->count++;
  kc_ref ref = {NULL, "v1", "pods", p->namespace_, p->name, "status"};
  if (kc_api_call(ev->client, KC_PATCH_STRATEGIC, &ref, NULL, patch, status_written, e) != 0) {
    sch_cache_evict_failed(ev->cache, key);
    rc = KC_EINVAL;
    goto out;
  }
  e->ev = ev;
  e->next = ev->in_flight;
  if (ev->in_flight)
    ev->in_flight->prev = e;
  ev->in_flight = e;
  e = NULL;
  rc = 0;
out:
  eviction_free(e);
  json_decref(patch);
  free(msg);
  return rc;
}

static void nominated(const kc_api_result *res, void *data) {
  char *key = data;
  if (res->err && res->err != KC_ENOTFOUND && res->err != KC_ECANCELED)
    KC_WARN("cannot nominate a node for %s: %s: %s", key, kc_strerror(res->err), res->message);
  free(key);
}

int sch_evictor_nominate(sch_evictor *ev, const Kiln__Pod *p, const char *node) {
  if (p->nominated_node_name && strcmp(p->nominated_node_name, node) == 0)
    return 0;
  char *key = NULL;
  if (asprintf(&key, "%s/%s", p->namespace_, p->name) < 0)
    return KC_ENOMEM;
  json_t *patch = json_pack("{s:{s:s}}", "status", "nominatedNodeName", node);
  kc_ref ref = {NULL, "v1", "pods", p->namespace_, p->name, "status"};
  if (patch == NULL ||
      kc_api_call(ev->client, KC_PATCH_STRATEGIC, &ref, NULL, patch, nominated, key) != 0) {
    free(key);
    json_decref(patch);
    return KC_ENOMEM;
  }
  json_decref(patch);
  KC_V(3, "nominated %s for %s/%s", node, p->namespace_, p->name);
  return 0;
}
