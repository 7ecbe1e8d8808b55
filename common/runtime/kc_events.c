/* Event recorder with client-go's correlation: see kc_events.h. */
#include "kc_events.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_clock.h"
#include "kc_error.h"
#include "kc_time.h"
#include "kc_log.h"
#include "kc_strmap.h"

/* client-go tools/record/events_cache.go */
#define CACHE_SIZE      4096
#define SPAM_BURST      25.0
#define SPAM_QPS        (1.0 / 300.0)
#define AGG_MAX_EVENTS  10
#define AGG_INTERVAL_NS (600ULL * 1000000000ULL)
#define QUEUE_MAX       1000
#define COMBINED_PREFIX "(combined from similar events): "
/* Deleted objects whose entries are swept together (see kc_event_cache_forget). */
#define FORGET_BATCH    64

/* Every cache value starts with this header so one LRU eviction serves all three maps. */
typedef struct {
  uint64_t used; /* monotonic ns of the last use */
} lru_hdr;

typedef struct {
  lru_hdr h;
  double tokens;
  uint64_t last_ns;
} spam_rec;

typedef struct {
  lru_hdr h;
  uint64_t msgs[AGG_MAX_EVENTS]; /* hashes of the distinct messages seen */
  int n;
  uint64_t last_ns;
} agg_rec;

typedef struct {
  lru_hdr h;
  char name[300];
  int count;
  int64_t first_s;
} log_rec;

struct kc_event_cache {
  char *component, *host;
  kc_strmap spam, agg, log;
  kc_strmap gone; /* uids of deleted objects whose entries the next sweep removes */
};

int kc_event_cache_new(const char *component, const char *host, kc_event_cache **out) {
  kc_event_cache *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return KC_ENOMEM;
  c->component = strdup(component ? component : "");
  c->host = strdup(host ? host : "");
  if (c->component == NULL || c->host == NULL) {
    free(c->component);
    free(c->host);
    free(c);
    return KC_ENOMEM;
  }
  kc_strmap_init(&c->spam, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&c->agg, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&c->log, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&c->gone, KC_STRMAP_COPY_KEYS);
  *out = c;
  return 0;
}

void kc_event_cache_free(kc_event_cache *c) {
  if (c == NULL)
    return;
  kc_strmap_close(&c->spam, free);
  kc_strmap_close(&c->agg, free);
  kc_strmap_close(&c->log, free);
  kc_strmap_close(&c->gone, NULL);
  free(c->component);
  free(c->host);
  free(c);
}

/* Removes the least recently used entry when the map is over its size. */
static void evict(kc_strmap *m) {
  while (kc_strmap_len(m) > CACHE_SIZE) {
    size_t pos = 0;
    kc_strmap_slot *sl, *oldest = NULL;
    while ((sl = kc_strmap_next(m, &pos)))
      if (oldest == NULL || ((lru_hdr *)sl->val)->used < ((lru_hdr *)oldest->val)->used)
        oldest = sl;
    void *old = NULL;
    char *key = strdup(oldest->key);
    if (key == NULL)
      return;
    kc_strmap_del(m, key, &old);
    free(key);
    free(old);
  }
}

/* Finds key's record or adds a zeroed one of size sz. NULL on ENOMEM. */
static void *lookup(kc_strmap *m, const char *key, size_t sz, uint64_t now, bool *fresh) {
  lru_hdr *r = kc_strmap_get(m, key);
  *fresh = r == NULL;
  if (r == NULL) {
    r = calloc(1, sz);
    if (r == NULL || kc_strmap_put(m, key, r, NULL)) {
      free(r);
      return NULL;
    }
    r->used = now;
    evict(m);
  }
  r->used = now;
  return r;
}

/* The uid field of a cache key (component, host, kind, namespace, name, uid, ...; each ends
 * with a unit separator): copied into buf, "" when the key is shorter. */
static void key_uid(const char *key, char *buf, size_t cap) {
  for (int field = 0; field < 5 && key; field++) {
    key = strchr(key, '\x1f');
    if (key)
      key++;
  }
  const char *end = key ? strchr(key, '\x1f') : NULL;
  size_t n = end ? (size_t)(end - key) : 0;
  if (n >= cap)
    n = 0; /* longer than any uid we were told about: it cannot match */
  if (n)
    memcpy(buf, key, n);
  buf[n] = '\0';
}

/* Removes from m every entry of an object in c->gone. Deletion moves slots, so the keys are
 * collected first. */
static void sweep(kc_event_cache *c, kc_strmap *m) {
  size_t n = 0, pos = 0;
  char **doomed = calloc(kc_strmap_len(m) + 1, sizeof(*doomed));
  if (doomed == NULL)
    return; /* the LRU bound still holds */
  kc_strmap_slot *sl;
  char uid[256];
  while ((sl = kc_strmap_next(m, &pos))) {
    key_uid(sl->key, uid, sizeof(uid));
    if (uid[0] && kc_strmap_has(&c->gone, uid) && (doomed[n] = strdup(sl->key)))
      n++;
  }
  for (size_t i = 0; i < n; i++) {
    void *old = NULL;
    if (kc_strmap_del(m, doomed[i], &old) == 0)
      free(old);
    free(doomed[i]);
  }
  free(doomed);
}

void kc_event_cache_forget(kc_event_cache *c, const char *uid) {
  if (c == NULL || uid == NULL || *uid == '\0' || strlen(uid) >= 256)
    return;
  if (kc_strmap_put(&c->gone, uid, NULL, NULL) < 0)
    return; /* remembered less: the LRU bound still holds */
  if (kc_strmap_len(&c->gone) < FORGET_BATCH)
    return;
  kc_event_cache_flush(c);
}

void kc_event_cache_flush(kc_event_cache *c) {
  if (c == NULL || kc_strmap_len(&c->gone) == 0)
    return;
  sweep(c, &c->spam);
  sweep(c, &c->agg);
  sweep(c, &c->log);
  kc_strmap_close(&c->gone, NULL);
  kc_strmap_init(&c->gone, KC_STRMAP_COPY_KEYS);
}

size_t kc_event_cache_len(const kc_event_cache *c) {
  return c ? kc_strmap_len(&c->spam) + kc_strmap_len(&c->agg) + kc_strmap_len(&c->log) : 0;
}

/* Appends s and a unit separator, so that different splits of the fields never collide. */
static int add_part(char *buf, size_t cap, size_t *len, const char *s) {
  int w = snprintf(buf + *len, cap - *len, "%s\x1f", s ? s : "");
  if (w < 0 || (size_t)w >= cap - *len)
    return KC_ETOOBIG;
  *len += (size_t)w;
  return 0;
}

/* Keys: spam = source + object; aggregate = spam + type + reason; event = aggregate +
 * message, written into key; *spam_len and *agg_len mark where the first two end. */
static int event_key(const kc_event_cache *c, const kc_object_ref *obj, const char *type,
                     const char *reason, const char *msg, char *key, size_t cap, size_t *spam_len,
                     size_t *agg_len) {
  size_t len = 0;
  const char *parts[] = {c->component, c->host,  obj->kind,       obj->namespace,
                         obj->name,    obj->uid, obj->api_version};
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
    if (add_part(key, cap, &len, parts[i]))
      return KC_EINVAL;
  *spam_len = len;
  if (add_part(key, cap, &len, type) || add_part(key, cap, &len, reason))
    return KC_EINVAL;
  *agg_len = len;
  if (add_part(key, cap, &len, msg))
    return KC_EINVAL;
  return 0;
}

/* The spam filter's token bucket of one source and object: whether one more event passes at
 * now_ns (it takes a token). */
static bool spam_allow(spam_rec *sp, bool fresh, uint64_t now_ns) {
  if (fresh) {
    sp->tokens = SPAM_BURST;
    sp->last_ns = now_ns;
  }
  if (now_ns > sp->last_ns) {
    sp->tokens += (double)(now_ns - sp->last_ns) / 1e9 * SPAM_QPS;
    if (sp->tokens > SPAM_BURST)
      sp->tokens = SPAM_BURST;
    sp->last_ns = now_ns;
  }
  if (sp->tokens < 1.0)
    return false;
  sp->tokens -= 1.0;
  return true;
}

/* Notes message hash h among the similar events of ag: true when there are enough different
 * messages to combine them into one event. */
static bool agg_combined(agg_rec *ag, bool fresh, uint64_t now_ns, uint64_t h) {
  if (!fresh && now_ns - ag->last_ns > AGG_INTERVAL_NS)
    ag->n = 0; /* the similar events are too far apart: start over */
  ag->last_ns = now_ns;
  int i;
  for (i = 0; i < ag->n && ag->msgs[i] != h; i++)
    ;
  if (i == ag->n && ag->n < AGG_MAX_EVENTS)
    ag->msgs[ag->n++] = h;
  return ag->n >= AGG_MAX_EVENTS;
}

int kc_event_cache_observe(kc_event_cache *c, const kc_object_ref *obj, const char *type,
                           const char *reason, const char *message, uint64_t now_ns,
                           int64_t wall_ns, kc_event_decision *d) {
  memset(d, 0, sizeof(*d));
  if (obj == NULL || obj->name == NULL || *obj->name == '\0' || obj->kind == NULL ||
      reason == NULL || *reason == '\0' || type == NULL ||
      (strcmp(type, KC_EVENT_NORMAL) != 0 && strcmp(type, KC_EVENT_WARNING) != 0))
    return KC_EINVAL;
  if (message == NULL)
    message = "";
  /* The message is cut to the stored length first, so identical stored events always share
   * a key. */
  char msg[KC_EVENT_MAX_MESSAGE + 1];
  snprintf(msg, sizeof(msg), "%s", message);
  char key[2048 + KC_EVENT_MAX_MESSAGE];
  size_t spam_len, agg_len;
  if (event_key(c, obj, type, reason, msg, key, sizeof(key), &spam_len, &agg_len))
    return KC_EINVAL;
  bool fresh;

  /* 1. spam filter */
  char saved_spam = key[spam_len];
  key[spam_len] = '\0';
  spam_rec *sp = lookup(&c->spam, key, sizeof(*sp), now_ns, &fresh);
  if (sp == NULL)
    return KC_ENOMEM;
  if (!spam_allow(sp, fresh, now_ns)) {
    d->drop = true;
    return 0;
  }
  key[spam_len] = saved_spam;

  /* 2. aggregator */
  char saved = key[agg_len];
  key[agg_len] = '\0';
  agg_rec *ag = lookup(&c->agg, key, sizeof(*ag), now_ns, &fresh);
  if (ag == NULL)
    return KC_ENOMEM;
  if (agg_combined(ag, fresh, now_ns, kc_strmap_hash(msg))) {
    snprintf(d->message, sizeof(d->message), "%s%s", COMBINED_PREFIX, msg);
    /* the logger key is the aggregate key: every similar event counts on one event */
  } else {
    snprintf(d->message, sizeof(d->message), "%s", msg);
    key[agg_len] = saved;
  }

  /* 3. logger */
  log_rec *lg = lookup(&c->log, key, sizeof(*lg), now_ns, &fresh);
  if (lg == NULL)
    return KC_ENOMEM;
  int64_t wall_s = wall_ns / 1000000000LL;
  if (fresh) {
    snprintf(lg->name, sizeof(lg->name), "%s.%" PRIx64, obj->name, (uint64_t)wall_ns);
    lg->count = 0;
    lg->first_s = wall_s;
  }
  lg->count++;
  d->patch = !fresh;
  d->count = lg->count;
  d->first_s = lg->first_s;
  d->last_s = wall_s;
  snprintf(d->name, sizeof(d->name), "%s", lg->name);
  return 0;
}

/* ---- the recorder ---- */

typedef struct item {
  struct item *next;
  json_t *event; /* the whole Event, for a CREATE (or after a PATCH found nothing) */
  json_t *patch; /* NULL: create */
  char ns[256];
  char name[300];
} item;

struct kc_event_recorder {
  kc_client *client;
  kc_event_cache *cache;
  char *component, *host;
  item *head, *tail, *current;
  size_t queued;
  bool freeing;
  kc_event_stats stats;
};

int kc_event_recorder_new(kc_client *c, const char *component, const char *host,
                          kc_event_recorder **out) {
  if (c == NULL || component == NULL || *component == '\0')
    return KC_EINVAL;
  kc_event_recorder *r = calloc(1, sizeof(*r));
  if (r == NULL)
    return KC_ENOMEM;
  int rc = kc_event_cache_new(component, host, &r->cache);
  r->component = strdup(component);
  r->host = host ? strdup(host) : NULL;
  if (rc || r->component == NULL || (host && r->host == NULL)) {
    kc_event_cache_free(r->cache);
    free(r->component);
    free(r->host);
    free(r);
    return rc ? rc : KC_ENOMEM;
  }
  r->client = c;
  *out = r;
  return 0;
}

static void item_free(item *it) {
  json_decref(it->event);
  json_decref(it->patch);
  free(it);
}

static void release(kc_event_recorder *r) {
  kc_event_cache_free(r->cache);
  free(r->component);
  free(r->host);
  free(r);
}

void kc_event_recorder_free(kc_event_recorder *r) {
  if (r == NULL)
    return;
  item *it = r->head;
  while (it) {
    item *n = it->next;
    item_free(it);
    it = n;
  }
  r->head = r->tail = NULL;
  r->freeing = true;
  if (r->current == NULL)
    release(r);
}

static void process(kc_event_recorder *r);

static int send_item(kc_event_recorder *r, item *it);

static void write_cb(const kc_api_result *res, void *data) {
  kc_event_recorder *r = data;
  item *it = r->current;
  if (r->freeing) {
    item_free(it);
    r->current = NULL;
    release(r);
    return;
  }
  if (it->patch && res->err == KC_ENOTFOUND) {
    /* The event was deleted (or its create failed): create it again with this count. */
    json_decref(it->patch);
    it->patch = NULL;
    if (send_item(r, it) == 0)
      return;
  }
  if (res->err) {
    r->stats.failed++;
    KC_WARN("Server rejected event %s/%s (will not retry!): %s: %s", it->ns, it->name,
            kc_strerror(res->err), res->message);
  } else if (it->patch) {
    r->stats.patched++;
  } else {
    r->stats.created++;
  }
  item_free(it);
  r->current = NULL;
  process(r);
}

static int send_item(kc_event_recorder *r, item *it) {
  kc_ref ref = {NULL, "v1", "events", it->ns, it->patch ? it->name : NULL, NULL};
  kc_query q = {.discard_body = true}; /* write_cb reads the outcome only */
  return kc_api_call(r->client, it->patch ? KC_PATCH_STRATEGIC : KC_CREATE, &ref, &q,
                     it->patch ? it->patch : it->event, write_cb, r);
}

static void process(kc_event_recorder *r) {
  while (r->current == NULL && r->head) {
    item *it = r->head;
    r->head = it->next;
    if (r->head == NULL)
      r->tail = NULL;
    r->queued--;
    it->next = NULL;
    int rc = send_item(r, it);
    if (rc) {
      r->stats.failed++;
      KC_WARN("cannot write event %s/%s: %s", it->ns, it->name, kc_strerror(rc));
      item_free(it);
      continue;
    }
    r->current = it;
  }
}

static json_t *str_or_null(const char *s) {
  return s && *s ? json_string(s) : NULL;
}

static json_t *build_event(const kc_event_recorder *r, const kc_object_ref *o, const char *ns,
                           const char *type, const char *reason, const kc_event_decision *d) {
  char first[32], last[32];
  kc_time_format(d->first_s, first);
  kc_time_format(d->last_s, last);
  json_t *inv = json_pack("{s:s, s:s}", "kind", o->kind, "name", o->name);
  if (inv == NULL)
    return NULL;
  const struct {
    const char *k, *v;
  } opt[] = {{"namespace", o->namespace},
             {"uid", o->uid},
             {"apiVersion", o->api_version},
             {"resourceVersion", o->resource_version},
             {"fieldPath", o->field_path}};
  for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++) {
    json_t *v = str_or_null(opt[i].v);
    if (v)
      json_object_set_new(inv, opt[i].k, v);
  }
  json_t *src = json_pack("{s:s}", "component", r->component);
  if (src && r->host)
    json_object_set_new(src, "host", json_string(r->host));
  json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:o*, s:s, s:s, s:i, s:s, s:s}",
                         "apiVersion", "v1", "kind", "Event", "metadata", "name", d->name,
                         "namespace", ns, "involvedObject", inv, "reason", reason, "message",
                         d->message, "source", src, "firstTimestamp", first, "lastTimestamp", last,
                         "count", d->count, "type", type, "reportingComponent", r->component);
  if (ev && r->host)
    json_object_set_new(ev, "reportingInstance", json_string(r->host));
  return ev;
}

int kc_event_vrecord(kc_event_recorder *r, const kc_object_ref *obj, const char *type,
                     const char *reason, const char *fmt, va_list ap) {
  if (r == NULL || r->freeing)
    return KC_EINVAL;
  char msg[KC_EVENT_MAX_MESSAGE + 1];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  kc_event_decision d;
  int rc = kc_event_cache_observe(r->cache, obj, type, reason, msg, kc_clock_mono_ns(),
                                  kc_clock_wall_ns(), &d);
  if (rc)
    return rc;
  r->stats.recorded++;
  if (d.drop) {
    r->stats.dropped_spam++;
    KC_V(4, "event %s %s on %s/%s dropped by the spam filter", type, reason,
         obj->namespace ? obj->namespace : "", obj->name);
    return 0;
  }
  if (r->queued >= QUEUE_MAX) {
    r->stats.dropped_full++;
    return KC_ETOOBIG;
  }
  item *it = calloc(1, sizeof(*it));
  if (it == NULL)
    return KC_ENOMEM;
  const char *ns = obj->namespace && *obj->namespace ? obj->namespace : "default";
  snprintf(it->ns, sizeof(it->ns), "%s", ns);
  snprintf(it->name, sizeof(it->name), "%s", d.name);
  it->event = build_event(r, obj, ns, type, reason, &d);
  if (it->event && d.patch) {
    char last[32];
    kc_time_format(d.last_s, last);
    it->patch =
        json_pack("{s:i, s:s, s:s}", "count", d.count, "lastTimestamp", last, "message", d.message);
  }
  if (it->event == NULL || (d.patch && it->patch == NULL)) {
    item_free(it);
    return KC_ENOMEM;
  }
  if (r->tail)
    r->tail->next = it;
  else
    r->head = it;
  r->tail = it;
  r->queued++;
  KC_V(4, "event %s %s on %s/%s: %s (count %d)", type, reason, ns, obj->name, d.message, d.count);
  process(r);
  return 0;
}

int kc_event_record(kc_event_recorder *r, const kc_object_ref *obj, const char *type,
                    const char *reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = kc_event_vrecord(r, obj, type, reason, fmt, ap);
  va_end(ap);
  return rc;
}

void kc_event_get_stats(const kc_event_recorder *r, kc_event_stats *st) {
  *st = r->stats;
  st->cached = kc_event_cache_len(r->cache);
}

void kc_event_forget(kc_event_recorder *r, const char *uid) {
  if (r)
    kc_event_cache_forget(r->cache, uid);
}

size_t kc_event_pending(const kc_event_recorder *r) {
  return r->queued + (r->current ? 1 : 0);
}
