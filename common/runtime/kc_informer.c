/* Reflector and informer: see kc_informer.h. */
#include "kc_informer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kc_container.h"
#include "kc_error.h"
#include "kc_json_lean.h"
#include "kc_log.h"
#include "kc_pb.h"

/* ---- frame parser ---- */

void kc_watch_parser_init(kc_watch_parser *p, size_t max_frame) {
  kc_frames_init(p, KC_FRAMES_LINES, max_frame ? max_frame : KC_WATCH_DEFAULT_MAX_FRAME);
}

static bool all_space(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
      return false;
  return true;
}

static const struct {
  const char *name;
  kc_watch_type type;
} watch_types[] = {
    {"ADDED", KC_WATCH_ADDED},       {"MODIFIED", KC_WATCH_MODIFIED}, {"DELETED", KC_WATCH_DELETED},
    {"BOOKMARK", KC_WATCH_BOOKMARK}, {"ERROR", KC_WATCH_ERROR},
};

typedef struct {
  kc_watch_frame_fn fn;
  void *ud;
} json_sink;

/* One complete frame of n bytes that started at stream offset off. */
static int frame(kc_frames *p, const uint8_t *body, size_t n, uint64_t off, void *ud, char *err,
                 size_t errlen) {
  const json_sink *k = ud;
  const char *s = (const char *)body;
  if (all_space(s, n))
    return 0; /* blank line between frames */
  json_error_t jerr;
  /* Without metadata.managedFields, which nothing reads (kc_json_lean.h). */
  json_t *root = kc_json_lean_loadb(s, n, 0, &jerr);
  if (root == NULL) {
    snprintf(err, errlen, "watch frame at offset %" PRIu64 ": invalid JSON at byte %d: %s", off,
             jerr.position, jerr.text);
    return KC_EPARSE;
  }
  int rc = KC_EPARSE;
  const char *tname = json_string_value(json_object_get(root, "type"));
  json_t *obj = json_object_get(root, "object");
  if (tname == NULL) {
    snprintf(err, errlen, "watch frame at offset %" PRIu64 ": no string field \"type\"", off);
    goto out;
  }
  if (!json_is_object(obj)) {
    snprintf(err, errlen, "watch frame at offset %" PRIu64 ": field \"object\" is not an object",
             off);
    goto out;
  }
  size_t i;
  for (i = 0; i < sizeof(watch_types) / sizeof(watch_types[0]); i++)
    if (strcmp(tname, watch_types[i].name) == 0)
      break;
  if (i == sizeof(watch_types) / sizeof(watch_types[0])) {
    snprintf(err, errlen, "watch frame at offset %" PRIu64 ": unknown event type \"%.64s\"", off,
             tname);
    goto out;
  }
  p->frames++;
  rc = k->fn(watch_types[i].type, obj, k->ud);
out:
  json_decref(root);
  return rc;
}

int kc_watch_parser_feed(kc_watch_parser *p, const char *data, size_t len, kc_watch_frame_fn fn,
                         void *ud, char *err, size_t errlen) {
  json_sink k = {fn, ud};
  return kc_frames_feed(p, data, len, frame, &k, err, errlen);
}

int kc_watch_parser_finish(const kc_watch_parser *p, char *err, size_t errlen) {
  if (p->len > 0 && !all_space((const char *)p->buf, p->len)) {
    snprintf(err, errlen,
             "truncated watch frame at offset %" PRIu64 ": %zu bytes without a final newline",
             p->offset, p->len);
    return KC_EPARSE;
  }
  return 0;
}

int kc_watch_status_code(long code, const char *reason, const char *m, char *msg, size_t msglen) {
  if (msg && msglen)
    snprintf(msg, msglen, "%s", m && *m ? m : "watch ERROR event without a message");
  if (code == 410 || (reason && (strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0)))
    return KC_EGONE;
  int rc = reason && *reason ? kc_err_from_reason(reason) : KC_EHTTP;
  if (rc == KC_EHTTP && code > 0) {
    int h = kc_err_from_http(code);
    if (h < 0)
      rc = h;
  }
  return rc;
}

int kc_watch_error_code(const json_t *status, char *msg, size_t msglen) {
  return kc_watch_status_code((long)json_integer_value(json_object_get(status, "code")),
                              json_string_value(json_object_get(status, "reason")),
                              json_string_value(json_object_get(status, "message")), msg, msglen);
}

/* ---- informer ---- */

struct kc_informer {
  kc_client *client;
  kc_http *http;
  char *group, *version, *resource, *ns, *label, *field;
  long page_size;
  int64_t resync_ms, min_watch_timeout_s;
  kc_informer_handlers h;
  kc_store *store;
  kc_informer_state state;
  kc_informer_state after_backoff; /* WATCH or RELIST */
  uv_timer_t timer;                /* backoff */
  uv_timer_t resync;
  int open_handles;
  kc_http_req *watch_req;
  bool list_in_flight, freeing, synced, started;
  /* The items of the LIST pages so far, decoded page by page: a JSON copy of every page
   * until the last one came would hold ~35 KB per pod (1.8 GB measured for 50,000 pods),
   * the decoded objects ~1 KB. */
  struct listed *pending;
  size_t npending, cap_pending;
  char *cont; /* continue token of the next page */
  char *last_rv;
  kc_watch_parser parser;
  kc_pb_stream pb_stream;
  bool protobuf;        /* ask for protobuf */
  bool watch_decided;   /* the current watch's encoding is known */
  bool watch_pb;        /* ... and it is protobuf */
  bool list_pb;         /* the last LIST page came in protobuf */
  unsigned failures;    /* consecutive, for the backoff */
  unsigned gone_streak; /* 410s since the last healthy watch */
  uint64_t watch_started_ns, watch_events, list_started_ns;
  char errmsg[512]; /* why the current watch ended */
  uint64_t rng;
  kc_informer_stats stats;
};

struct listed {
  char *key, *rv;
  void *obj; /* decoded; NULL when it could not be (the cached copy is kept) */
};

static const uint64_t BACKOFF_INITIAL_NS = 800ULL * 1000 * 1000;
static const uint64_t BACKOFF_MAX_NS = 30ULL * 1000 * 1000 * 1000;
/* A watch is healthy (the backoff resets) when it delivered an event or lasted this long. */
static const uint64_t HEALTHY_WATCH_NS = 10ULL * 1000 * 1000 * 1000;

uint64_t kc_informer_backoff_ns(unsigned n, double r) {
  if (n == 0)
    return 0;
  uint64_t d = BACKOFF_INITIAL_NS;
  for (unsigned i = 1; i < n && d < BACKOFF_MAX_NS; i++)
    d *= 2;
  if (d > BACKOFF_MAX_NS)
    d = BACKOFF_MAX_NS;
  if (r < 0)
    r = 0;
  if (r >= 1)
    r = 0.999999;
  uint64_t j = d + (uint64_t)((double)d * r); /* client-go's jitter factor 1.0 */
  return j > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : j;
}

static double rnd(kc_informer *inf) { /* splitmix64 */
  uint64_t z = (inf->rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 11) / (double)(1ULL << 53);
}

static const char *desc(const kc_informer *inf) {
  return inf->resource;
}

/* ---- the state machine ---- */

static void enter_list(kc_informer *inf);
static void enter_watch(kc_informer *inf);
static void enter_backoff(kc_informer *inf);

static const struct {
  const char *name;
  void (*enter)(kc_informer *inf);
} states[KC_INF_STATE_LAST] = {
    [KC_INF_IDLE] = {"idle", NULL},           [KC_INF_LIST] = {"list", enter_list},
    [KC_INF_WATCH] = {"watch", enter_watch},  [KC_INF_BACKOFF] = {"backoff", enter_backoff},
    [KC_INF_RELIST] = {"relist", enter_list}, [KC_INF_STOPPED] = {"stopped", NULL},
};

const char *kc_informer_state_name(kc_informer_state s) {
  return s < KC_INF_STATE_LAST ? states[s].name : "?";
}

static void set_state(kc_informer *inf, kc_informer_state s, const char *why) {
  if (inf->state == KC_INF_WATCH && s == KC_INF_WATCH)
    KC_V(2, "informer %s: watch -> watch (%s)", desc(inf), why);
  else
    KC_INFO("informer %s: %s -> %s (%s)", desc(inf), states[inf->state].name, states[s].name, why);
  inf->state = s;
  if (states[s].enter)
    states[s].enter(inf);
}

static void fail_to(kc_informer *inf, kc_informer_state next, const char *why) {
  inf->failures++;
  inf->after_backoff = next;
  set_state(inf, KC_INF_BACKOFF, why);
}

static void backoff_cb(uv_timer_t *t) {
  kc_informer *inf = container_of(t, kc_informer, timer);
  set_state(inf, inf->after_backoff, "backoff over");
}

static void enter_backoff(kc_informer *inf) {
  uint64_t ns = kc_informer_backoff_ns(inf->failures, rnd(inf));
  KC_V(1, "informer %s: retrying (%s) in %" PRIu64 " ms after %u failures", desc(inf),
       states[inf->after_backoff].name, ns / 1000000, inf->failures);
  uv_timer_start(&inf->timer, backoff_cb, ns / 1000000, 0);
}

/* ---- object helpers ---- */

static int obj_key(const json_t *obj, char *key, size_t cap, const char **rv) {
  json_t *md = json_object_get(obj, "metadata");
  const char *name = json_string_value(json_object_get(md, "name"));
  const char *ns = json_string_value(json_object_get(md, "namespace"));
  *rv = json_string_value(json_object_get(md, "resourceVersion"));
  if (*rv == NULL)
    *rv = "";
  if (name == NULL || *name == '\0')
    return KC_EPARSE;
  return kc_store_key(key, cap, ns, name);
}

static void *decode(kc_informer *inf, json_t *obj, const char *key) {
  if (inf->h.decode == NULL)
    return json_incref(obj);
  char err[256] = "";
  void *o = inf->h.decode(obj, inf->h.ud, err, sizeof(err));
  if (o == NULL) {
    inf->stats.decode_errors++;
    KC_ERROR("informer %s: cannot decode %s, skipped: %s", desc(inf), key, err);
  }
  return o;
}

/* Through the store, which frees it now or, while held, when the hold ends. */
static void free_obj(kc_informer *inf, void *o) {
  kc_store_release_obj(inf->store, o);
}

static void set_rv(kc_informer *inf, const char *rv) {
  if (rv == NULL || *rv == '\0' || strcmp(rv, inf->last_rv) == 0)
    return;
  char *c = strdup(rv);
  if (c == NULL)
    return; /* keep the older one: a resume from it replays, never skips */
  free(inf->last_rv);
  inf->last_rv = c;
}

/* Stores o (decoded from the object at key, or NULL when that failed) and tells the
 * handlers. skip_same: an unchanged resourceVersion is stored silently (a relist's item not
 * missed). */
static int store_decoded(kc_informer *inf, const char *key, const char *rv, void *o,
                         bool skip_same) {
  const char *old_rv = kc_store_rv(inf->store, key);
  bool same = old_rv && strcmp(old_rv, rv) == 0;
  if (o == NULL) {
    /* Keep the cached object as it was: nothing cached is corrupted. In a relist it must
     * still count as seen, or the sweep would report it deleted: put it back as it was. */
    void *keep = NULL;
    if (skip_same && old_rv) {
      char *rv_copy = strdup(old_rv);
      if (rv_copy && kc_store_take(inf->store, key, &keep) == 0)
        kc_store_put(inf->store, key, keep, rv_copy);
      free(rv_copy);
    }
    return 0;
  }
  void *old = NULL;
  if (old_rv && !(skip_same && same))
    kc_store_take(inf->store, key, &old);
  else if (skip_same && same) {
    /* Unchanged: the cached object stays (handlers hold no stale pointer), marked seen. */
    void *keep = NULL;
    char *rv_copy = strdup(old_rv);
    int rc = rv_copy && kc_store_take(inf->store, key, &keep) == 0
                 ? kc_store_put(inf->store, key, keep, rv_copy)
                 : KC_ENOMEM;
    free(rv_copy);
    free_obj(inf, o);
    return rc;
  }
  int rc = kc_store_put(inf->store, key, o, rv);
  if (rc) {
    KC_ERROR("informer %s: cannot store %s: %s", desc(inf), key, kc_strerror(rc));
    if (old) {
      /* The key is no longer in the store: handlers that keep pointers to its object
       * (the scheduler's assumptions) hear it as a delete. */
      if (inf->h.on_delete)
        inf->h.on_delete(key, old, inf->h.ud);
      free_obj(inf, old);
    }
    return rc;
  }
  if (old) {
    if (inf->h.on_update)
      inf->h.on_update(key, old, o, inf->h.ud);
    free_obj(inf, old);
  } else if (inf->h.on_add) {
    inf->h.on_add(key, o, inf->h.ud);
  }
  return 0;
}

/* A watch event's object: decoded and stored. */
static int upsert(kc_informer *inf, json_t *json, bool skip_same) {
  char key[512];
  const char *rv;
  int rc = obj_key(json, key, sizeof(key), &rv);
  if (rc)
    return rc;
  return store_decoded(inf, key, rv, decode(inf, json, key), skip_same);
}

/* The protobuf counterparts of decode and upsert: data is the object message. */
static void *decode_pb(kc_informer *inf, const uint8_t *data, size_t len, const char *key) {
  char err[256] = "";
  void *o = inf->h.decode_pb(data, len, inf->h.ud, err, sizeof(err));
  if (o == NULL) {
    inf->stats.decode_errors++;
    KC_ERROR("informer %s: cannot decode %s, skipped: %s", desc(inf), key, err);
  }
  return o;
}

static int upsert_pb(kc_informer *inf, const uint8_t *data, size_t len) {
  char key[512], *rv = NULL;
  int rc = kc_pb_object_key(data, len, key, sizeof(key), &rv);
  if (rc == 0)
    rc = store_decoded(inf, key, rv, decode_pb(inf, data, len, key), false);
  free(rv);
  return rc;
}

static void gone_cb(const char *key, void *obj, void *ud) {
  kc_informer *inf = ud;
  if (inf->h.on_delete)
    inf->h.on_delete(key, obj, inf->h.ud);
}

/* ---- LIST ---- */

static void list_cb(const kc_api_result *res, void *data);
static void list_done(kc_informer *inf, const char *rv);

/* Protobuf first, JSON when the server or a proxy cannot (kube-scheduler's default). */
#define PB_ACCEPT KC_PB_CONTENT_TYPE ", application/json"

static void release(kc_informer *inf);

/* The collection the informer reads, with its selectors. */
static void collection(const kc_informer *inf, kc_ref *ref, kc_query *q) {
  *ref = (kc_ref){inf->group, inf->version, inf->resource, inf->ns, NULL, NULL};
  *q = (kc_query){.label_selector = inf->label, .field_selector = inf->field};
}

static int list_page(kc_informer *inf) {
  kc_ref ref;
  kc_query q;
  collection(inf, &ref, &q);
  q.limit = inf->page_size;
  q.continue_token = inf->cont;
  q.accept = inf->protobuf ? PB_ACCEPT : NULL;
  int rc = kc_api_call(inf->client, KC_LIST, &ref, &q, NULL, list_cb, inf);
  if (rc == 0)
    inf->list_in_flight = true;
  return rc;
}

static void pending_clear(kc_informer *inf) {
  for (size_t i = 0; i < inf->npending; i++) {
    struct listed *l = &inf->pending[i];
    free(l->key);
    free(l->rv);
    if (l->obj)
      free_obj(inf, l->obj);
  }
  free(inf->pending);
  inf->pending = NULL;
  inf->npending = inf->cap_pending = 0;
}

/* Room for n more items in pending. 0 or KC_ENOMEM. */
static int pending_reserve(kc_informer *inf, size_t n) {
  if (inf->npending + n > inf->cap_pending) {
    size_t cap = inf->cap_pending ? inf->cap_pending : 64;
    while (cap < inf->npending + n)
      cap *= 2;
    struct listed *p = realloc(inf->pending, cap * sizeof(*p));
    if (p == NULL)
      return KC_ENOMEM;
    inf->pending = p;
    inf->cap_pending = cap;
  }
  return 0;
}

/* Decodes one page's items into pending. 0 or KC_ENOMEM. */
static int pending_add_page(kc_informer *inf, json_t *items) {
  size_t n = json_array_size(items);
  if (pending_reserve(inf, n))
    return KC_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    json_t *item = json_array_get(items, i);
    char key[512];
    const char *rv;
    if (obj_key(item, key, sizeof(key), &rv) != 0) {
      KC_ERROR("informer %s: listed item %zu has no metadata.name, skipped", desc(inf),
               inf->npending + i);
      continue;
    }
    struct listed *l = &inf->pending[inf->npending];
    l->key = strdup(key);
    l->rv = strdup(rv);
    if (l->key == NULL || l->rv == NULL) {
      free(l->key);
      free(l->rv);
      return KC_ENOMEM;
    }
    l->obj = decode(inf, item, key);
    inf->npending++;
  }
  return 0;
}

/* A protobuf LIST page ("k8s\0" + Unknown + a list whose items stay bytes): its items into
 * pending, *cont and *rv new copies of its continue token and resourceVersion. 0, KC_EPARSE
 * or KC_ENOMEM. */
static int pending_add_page_pb(kc_informer *inf, const uint8_t *body, size_t len, char **cont,
                               char **rv) {
  K8s__Unknown *u = NULL;
  K8s__RawList *l = NULL;
  char err[128];
  int rc = kc_pb_unwrap(body, len, &u, err, sizeof(err));
  if (rc == 0 && !(l = k8s__raw_list__unpack(NULL, u->has_raw ? u->raw.len : 0, u->raw.data))) {
    snprintf(err, sizeof(err), "the list does not decode");
    rc = KC_EPARSE;
  }
  if (rc) {
    KC_ERROR("informer %s: bad protobuf LIST page: %s", desc(inf), err);
    goto out;
  }
  const K8s__ListMeta *md = l->metadata;
  *cont = strdup(md && md->continue_ ? md->continue_ : "");
  *rv = strdup(md && md->resource_version ? md->resource_version : "");
  if (!*cont || !*rv || pending_reserve(inf, l->n_items)) {
    rc = KC_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < l->n_items; i++) {
    struct listed *it = &inf->pending[inf->npending];
    char key[512];
    if (kc_pb_object_key(l->items[i].data, l->items[i].len, key, sizeof(key), &it->rv) != 0) {
      KC_ERROR("informer %s: listed item %zu has no metadata.name, skipped", desc(inf),
               inf->npending);
      continue;
    }
    if (!(it->key = strdup(key))) {
      free(it->rv);
      rc = KC_ENOMEM;
      goto out;
    }
    it->obj = decode_pb(inf, l->items[i].data, l->items[i].len, key);
    inf->npending++;
  }
out:
  kc_pb_free(l);
  kc_pb_free(u);
  return rc;
}

static void enter_list(kc_informer *inf) {
  pending_clear(inf);
  free(inf->cont);
  inf->cont = NULL;
  inf->list_started_ns = uv_hrtime();
  int rc = list_page(inf);
  if (rc) {
    KC_ERROR("informer %s: cannot start LIST: %s", desc(inf), kc_strerror(rc));
    fail_to(inf, KC_INF_RELIST, "list not started");
  }
}

static void apply_list(kc_informer *inf, const char *rv) {
  size_t i, n = inf->npending;
  kc_store_replace_begin(inf->store);
  for (i = 0; i < n; i++) {
    struct listed *l = &inf->pending[i];
    store_decoded(inf, l->key, l->rv, l->obj, true);
    l->obj = NULL; /* the store's (or freed) now */
  }
  kc_store_replace_end(inf->store, gone_cb, inf);
  pending_clear(inf);
  set_rv(inf, rv);
  inf->stats.last_list_items = n;
  inf->stats.last_list_ns = uv_hrtime() - inf->list_started_ns;
}

static void list_cb(const kc_api_result *res, void *data) {
  kc_informer *inf = data;
  inf->list_in_flight = false;
  if (inf->freeing) {
    release(inf);
    return;
  }
  if (res->err) {
    KC_ERROR("informer %s: LIST failed: %s: %s", desc(inf), kc_strerror(res->err), res->message);
    fail_to(inf, KC_INF_RELIST, "list failed");
    return;
  }
  char *pcont = NULL, *prv = NULL;
  const char *cont, *rv;
  inf->list_pb = res->body != NULL;
  if (res->body) {
    inf->stats.protobuf_replies++;
    int rc = pending_add_page_pb(inf, res->body, res->body_len, &pcont, &prv);
    cont = pcont;
    rv = prv;
    if (rc) {
      free(pcont);
      free(prv);
      fail_to(inf, KC_INF_RELIST, rc == KC_ENOMEM ? "out of memory" : "bad list page");
      return;
    }
  } else {
    json_t *md = json_object_get(res->obj, "metadata");
    if (pending_add_page(inf, json_object_get(res->obj, "items"))) {
      fail_to(inf, KC_INF_RELIST, "out of memory");
      return;
    }
    cont = json_string_value(json_object_get(md, "continue"));
    rv = json_string_value(json_object_get(md, "resourceVersion"));
  }
  if (cont && *cont) {
    char *c = strdup(cont);
    free(inf->cont);
    inf->cont = c;
    free(pcont);
    free(prv);
    int rc = c ? list_page(inf) : KC_ENOMEM;
    if (rc)
      fail_to(inf, KC_INF_RELIST, "next page not started");
    return;
  }
  free(pcont);
  list_done(inf, rv);
  free(prv);
}

/* The last page came: the list replaces the store. */
static void list_done(kc_informer *inf, const char *rv) {
  bool relist = inf->state == KC_INF_RELIST;
  apply_list(inf, rv);
  inf->stats.lists++;
  if (relist)
    inf->stats.relists++;
  char why[128];
  snprintf(why, sizeof(why), "listed %zu in %" PRIu64 " ms at rv %s%s", inf->stats.last_list_items,
           inf->stats.last_list_ns / 1000000, inf->last_rv, inf->list_pb ? " (protobuf)" : "");
  bool first = !inf->synced;
  inf->synced = true;
  set_state(inf, KC_INF_WATCH, why);
  if (first && inf->h.on_synced && !inf->freeing)
    inf->h.on_synced(inf->h.ud);
}

/* ---- WATCH ---- */

/* A deleted object's key: out of the store, the handlers told. */
static void delete_key(kc_informer *inf, const char *key) {
  void *old = NULL;
  if (kc_store_take(inf->store, key, &old) == 0) {
    if (inf->h.on_delete)
      inf->h.on_delete(key, old, inf->h.ud);
    free_obj(inf, old);
  }
}

/* An event applied with rc: the error, or its resourceVersion (may be NULL) kept and the
 * event counted. */
static int event_done(kc_informer *inf, int rc, const char *rv) {
  if (rc == KC_EPARSE) {
    snprintf(inf->errmsg, sizeof(inf->errmsg), "watch event without metadata.name");
    return rc;
  }
  if (rc)
    return rc;
  set_rv(inf, rv);
  inf->watch_events++;
  inf->stats.events++;
  return 0;
}

static int on_frame(kc_watch_type type, json_t *obj, void *ud) {
  kc_informer *inf = ud;
  char key[512];
  const char *rv = NULL;
  int rc;
  switch (type) {
  case KC_WATCH_BOOKMARK:
    inf->stats.bookmarks++;
    obj_key(obj, key, sizeof(key), &rv);
    set_rv(inf, rv);
    return 0;
  case KC_WATCH_ERROR:
    return kc_watch_error_code(obj, inf->errmsg, sizeof(inf->errmsg));
  case KC_WATCH_ADDED:
  case KC_WATCH_MODIFIED:
    rc = upsert(inf, obj, false);
    break;
  case KC_WATCH_DELETED:
    rc = obj_key(obj, key, sizeof(key), &rv);
    if (rc == 0)
      delete_key(inf, key);
    break;
  default:
    return KC_EPARSE;
  }
  if (rc == 0)
    obj_key(obj, key, sizeof(key), &rv);
  return event_done(inf, rc, rv);
}

/* One protobuf watch event; the same steps as on_frame. */
static int on_pb_event(const char *type, const char *kind, const uint8_t *data, size_t len,
                       void *ud) {
  kc_informer *inf = ud;
  char key[512], *rv = NULL;
  int rc;
  if (strcmp(type, "ERROR") == 0) {
    int32_t code = 0;
    char reason[64] = "", msg[400] = "";
    if (strcmp(kind, "Status") != 0 ||
        kc_pb_status(data, len, &code, reason, sizeof(reason), msg, sizeof(msg)) != 0)
      return KC_EPARSE;
    return kc_watch_status_code(code, reason, msg, inf->errmsg, sizeof(inf->errmsg));
  }
  if (strcmp(type, "BOOKMARK") == 0) {
    inf->stats.bookmarks++;
    if (kc_pb_object_rv(data, len, &rv) == 0)
      set_rv(inf, rv);
    free(rv);
    return 0;
  }
  if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
    rc = upsert_pb(inf, data, len);
  } else if (strcmp(type, "DELETED") == 0) {
    rc = kc_pb_object_key(data, len, key, sizeof(key), &rv);
    if (rc == 0)
      delete_key(inf, key);
    free(rv);
    rv = NULL;
  } else {
    snprintf(inf->errmsg, sizeof(inf->errmsg), "unknown watch event type \"%.64s\"", type);
    return KC_EPARSE;
  }
  if (rc == 0 && kc_pb_object_key(data, len, key, sizeof(key), &rv) != 0)
    rv = NULL;
  rc = event_done(inf, rc, rv);
  free(rv);
  return rc;
}

static int watch_chunk(kc_http_req *req, const char *chunk, size_t len, void *data) {
  kc_informer *inf = data;
  if (!inf->watch_decided) {
    /* The server answers in what it can: a proxy or an older server may send JSON. */
    const char *ct = kc_http_req_content_type(req);
    inf->watch_pb = strncmp(ct, KC_PB_CONTENT_TYPE, strlen(KC_PB_CONTENT_TYPE)) == 0;
    inf->watch_decided = true;
    if (inf->watch_pb)
      inf->stats.protobuf_replies++;
  }
  if (inf->watch_pb)
    return kc_pb_stream_feed(&inf->pb_stream, chunk, len, on_pb_event, inf, inf->errmsg,
                             sizeof(inf->errmsg));
  return kc_watch_parser_feed(&inf->parser, chunk, len, on_frame, inf, inf->errmsg,
                              sizeof(inf->errmsg));
}

static void watch_done(kc_http_req *req, const kc_http_result *res, void *data) {
  (void)req;
  kc_informer *inf = data;
  inf->watch_req = NULL;
  if (inf->freeing)
    return;
  uint64_t lasted = uv_hrtime() - inf->watch_started_ns;
  if (inf->watch_events > 0 || lasted >= HEALTHY_WATCH_NS)
    inf->failures = inf->gone_streak = 0;
  int err = res->err;
  if (err == 0 && res->status >= 200 && res->status < 300)
    err = inf->watch_pb ? kc_pb_stream_finish(&inf->pb_stream, inf->errmsg, sizeof(inf->errmsg))
                        : kc_watch_parser_finish(&inf->parser, inf->errmsg, sizeof(inf->errmsg));
  char why[600];
  if (err == 0 && res->status >= 200 && res->status < 300) {
    snprintf(why, sizeof(why), "stream ended after %" PRIu64 " s; resuming from rv %s",
             lasted / 1000000000, inf->last_rv);
    set_state(inf, KC_INF_WATCH, why);
    return;
  }
  if (err == 0) { /* a non-2xx answer to the WATCH */
    if (res->status == 401)
      kc_http_refresh_token(inf->http); /* a rotated token: the retry re-reads the file */
    kc_status st;
    err = kc_status_parse(res->status, res->body, res->body_len, &st, NULL);
    snprintf(inf->errmsg, sizeof(inf->errmsg), "HTTP %ld: %.400s", res->status, st.message);
    if (res->status == 410)
      err = KC_EGONE;
  }
  if (err == KC_EGONE || err == KC_EEXPIRED) {
    /* The expected way out of a long gap: relist at once. Only 410s in a row, with no
     * healthy watch between them, back off. */
    inf->stats.gone++;
    snprintf(why, sizeof(why), "resourceVersion %s is gone: %s", inf->last_rv, inf->errmsg);
    inf->after_backoff = KC_INF_RELIST;
    if (inf->gone_streak++ == 0) {
      set_state(inf, KC_INF_RELIST, why);
    } else {
      inf->failures++;
      set_state(inf, KC_INF_BACKOFF, why);
    }
    return;
  }
  if (err == KC_EPARSE || err == KC_ETOOBIG) {
    /* An event may have been lost with the bad frame: only a relist is exact again. */
    inf->stats.frame_errors++;
    KC_ERROR("informer %s: bad watch stream, relisting: %s", desc(inf), inf->errmsg);
    snprintf(why, sizeof(why), "bad frame: %s", inf->errmsg);
    inf->failures++;
    inf->after_backoff = KC_INF_RELIST;
    set_state(inf, inf->failures > 1 ? KC_INF_BACKOFF : KC_INF_RELIST, why);
    return;
  }
  if (inf->errmsg[0] && res->err == 0) /* the server's answer */
    snprintf(why, sizeof(why), "watch failed: %s", inf->errmsg);
  else
    snprintf(why, sizeof(why), "watch failed after %" PRIu64 " s: %s%s%s", lasted / 1000000000,
             kc_strerror(err), res->detail && *res->detail ? ": " : "",
             res->detail ? res->detail : "");
  fail_to(inf, KC_INF_WATCH, why);
}

static void enter_watch(kc_informer *inf) {
  kc_ref ref;
  kc_query q;
  collection(inf, &ref, &q);
  q.resource_version = inf->last_rv;
  q.timeout_seconds =
      (long)(inf->min_watch_timeout_s + (int64_t)(rnd(inf) * (double)inf->min_watch_timeout_s));
  char *path = NULL;
  int rc = kc_api_path(KC_LIST, &ref, &q, true, &path);
  if (rc == 0) {
    kc_frames_reset(&inf->parser);
    kc_frames_reset(&inf->pb_stream);
    inf->watch_decided = inf->watch_pb = false;
    inf->errmsg[0] = '\0';
    inf->watch_events = 0;
    inf->watch_started_ns = uv_hrtime();
    kc_http_spec spec = {0};
    spec.method = "GET";
    spec.path = path;
    spec.accept = inf->protobuf ? PB_ACCEPT : NULL;
    spec.on_chunk = watch_chunk;
    spec.on_done = watch_done;
    spec.data = inf;
    rc = kc_http_start(inf->http, &spec, &inf->watch_req);
    free(path);
  }
  if (rc) {
    KC_ERROR("informer %s: cannot start WATCH: %s", desc(inf), kc_strerror(rc));
    fail_to(inf, KC_INF_WATCH, "watch not started");
    return;
  }
  inf->stats.watches++;
}

/* ---- resync ---- */

static void resync_cb(uv_timer_t *t) {
  kc_informer *inf = container_of(t, kc_informer, resync);
  if (!inf->synced || inf->h.on_update == NULL)
    return;
  kc_store_iter it;
  const char *key;
  void *obj;
  kc_store_iter_init(inf->store, &it);
  while (kc_store_iter_next(&it, &key, &obj))
    inf->h.on_update(key, obj, obj, inf->h.ud);
}

/* ---- lifetime ---- */

static char *dup_opt(const char *s, bool *bad) {
  if (s == NULL)
    return NULL;
  char *d = strdup(s);
  if (d == NULL)
    *bad = true;
  return d;
}

static void store_free_obj(void *o) {
  json_decref(o);
}

int kc_informer_new(kc_client *c, const kc_informer_options *o, const kc_informer_handlers *h,
                    kc_informer **out) {
  if (c == NULL || o == NULL || h == NULL || o->version == NULL || o->resource == NULL)
    return KC_EINVAL;
  if ((h->decode && h->free_obj == NULL) || (o->protobuf && !h->decode_pb))
    return KC_EINVAL;
  kc_informer *inf = calloc(1, sizeof(*inf));
  if (inf == NULL)
    return KC_ENOMEM;
  bool bad = false;
  inf->client = c;
  inf->http = kc_client_http(c);
  inf->group = dup_opt(o->group, &bad);
  inf->version = dup_opt(o->version, &bad);
  inf->resource = dup_opt(o->resource, &bad);
  inf->ns = dup_opt(o->namespace, &bad);
  inf->label = dup_opt(o->label_selector, &bad);
  inf->field = dup_opt(o->field_selector, &bad);
  inf->last_rv = dup_opt("", &bad);
  inf->page_size = o->page_size > 0 ? o->page_size : 500;
  inf->resync_ms = o->resync_ms > 0 ? (o->resync_ms < 1000 ? 1000 : o->resync_ms) : 0;
  inf->min_watch_timeout_s = o->min_watch_timeout_s > 0 ? o->min_watch_timeout_s : 300;
  inf->h = *h;
  inf->rng = uv_hrtime() ^ ((uint64_t)getpid() << 32);
  kc_watch_parser_init(&inf->parser, o->max_frame);
  kc_pb_stream_init(&inf->pb_stream, o->max_frame);
  inf->protobuf = o->protobuf;
  int rc = KC_ENOMEM;
  if (bad)
    goto fail;
  rc = kc_store_new(h->decode ? h->free_obj : store_free_obj, &inf->store);
  if (rc)
    goto fail;
  uv_loop_t *loop = kc_http_loop(inf->http);
  uv_timer_init(loop, &inf->timer);
  uv_timer_init(loop, &inf->resync);
  inf->open_handles = 2;
  *out = inf;
  return 0;
fail:
  inf->open_handles = 0;
  inf->freeing = true;
  release(inf);
  return rc;
}

int kc_informer_start(kc_informer *inf) {
  if (inf->started)
    return KC_EINVAL;
  inf->started = true;
  if (inf->resync_ms)
    uv_timer_start(&inf->resync, resync_cb, (uint64_t)inf->resync_ms, (uint64_t)inf->resync_ms);
  set_state(inf, KC_INF_LIST, "started");
  return 0;
}

static void release(kc_informer *inf) {
  if (!inf->freeing || inf->open_handles > 0 || inf->list_in_flight)
    return;
  pending_clear(inf); /* through the store: before it goes */
  kc_store_free(inf->store);
  kc_frames_close(&inf->parser);
  kc_frames_close(&inf->pb_stream);
  free(inf->cont);
  free(inf->last_rv);
  free(inf->group);
  free(inf->version);
  free(inf->resource);
  free(inf->ns);
  free(inf->label);
  free(inf->field);
  free(inf);
}

static void closed_cb(uv_handle_t *hd) {
  kc_informer *inf = hd->data;
  inf->open_handles--;
  release(inf);
}

void kc_informer_free(kc_informer *inf) {
  if (inf == NULL || inf->freeing)
    return;
  if (inf->state != KC_INF_IDLE)
    KC_V(1, "informer %s: %s -> stopped (freed)", desc(inf), states[inf->state].name);
  inf->state = KC_INF_STOPPED;
  inf->freeing = true;
  if (inf->watch_req) {
    kc_http_cancel(inf->watch_req);
    inf->watch_req = NULL;
  }
  inf->timer.data = inf;
  inf->resync.data = inf;
  uv_timer_stop(&inf->timer);
  uv_timer_stop(&inf->resync);
  uv_close((uv_handle_t *)&inf->timer, closed_cb);
  uv_close((uv_handle_t *)&inf->resync, closed_cb);
}

kc_store *kc_informer_store(kc_informer *inf) {
  return inf->store;
}

bool kc_informer_has_synced(const kc_informer *inf) {
  return inf->synced;
}

const char *kc_informer_last_rv(const kc_informer *inf) {
  return inf->last_rv;
}

kc_informer_state kc_informer_get_state(const kc_informer *inf) {
  return inf->state;
}

void kc_informer_get_stats(const kc_informer *inf, kc_informer_stats *st) {
  *st = inf->stats;
}
