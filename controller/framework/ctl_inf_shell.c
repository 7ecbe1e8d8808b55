/* Informers shared between controllers; see ctl_inf.h.
 *
 * The shared kc_informer stores, per object, a bundle: each consumer's decoded object, made
 * from the one parsed JSON. Its handlers move each consumer's object into that consumer's
 * store and call the consumer's handler, as kc_informer would have. An object a consumer's
 * store took belongs to that store; the bundle frees only the ones nobody took (an unchanged
 * object of a relist, which no handler hears about). Bundles carry their own free functions:
 * the shared informer's store may outlive the consumers and the hub (kc_informer_free releases
 * it once the loop has run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_inf.h"
#include "kc_log.h"
#include "kc_pb.h"
#include "kc_str.h"

#define MAX_CONSUMERS 8

const char ctl_inf_skip = 0;

typedef struct shared shared;

struct ctl_inf {
  ctl_inf_hub *hub; /* NULL: own informer */
  shared *sh;       /* NULL: own informer */
  kc_informer *own;
  size_t slot;
  kc_informer_handlers h;
  kc_store *store; /* the consumer's, with sh */
  bool started;
  ctl_inf *next_dead;
};

typedef struct {
  void *obj;
  void (*free_obj)(void *);
  bool taken; /* a consumer store owns obj now */
  bool skip;  /* the consumer does not want the object (CTL_INF_SKIP) */
} entry;

typedef struct {
  size_t n;
  entry e[];
} bundle;

struct shared {
  shared *next;
  char *group, *version, *resource, *ns, *label, *field;
  bool protobuf; /* every consumer has decode_pb */
  kc_informer *inf;
  ctl_inf *c[MAX_CONSUMERS]; /* a freed consumer's slot stays NULL */
  size_t n, live;
  /* Freed consumers: their stores stay until the watch stops, as a kc_informer's store
   * outlives kc_informer_free until the loop has run (a caller may still hold an object). */
  ctl_inf *dead;
  bool started;
};

struct ctl_inf_hub {
  kc_client *client;
  shared *list;
  size_t consumers; /* live ctl_inf made through the hub */
  bool protobuf;
  bool freeing;
  /* The last pod message ctl_inf_hub_pod unpacked, and the bytes it came from. */
  K8s__Pod *pod;
  uint8_t *pod_bytes;
  size_t pod_len;
};

static void forget_pod(ctl_inf_hub *hub) {
  kc_pb_free(hub->pod);
  free(hub->pod_bytes);
  hub->pod = NULL;
  hub->pod_bytes = NULL;
  hub->pod_len = 0;
}

const K8s__Pod *ctl_inf_hub_pod(ctl_inf_hub *hub, const uint8_t *data, size_t len) {
  if (hub->pod && hub->pod_len == len && memcmp(hub->pod_bytes, data, len) == 0)
    return hub->pod;
  forget_pod(hub);
  if (!(hub->pod_bytes = malloc(len ? len : 1)) ||
      !(hub->pod = k8s__pod__unpack(NULL, len, data))) {
    forget_pod(hub);
    return NULL;
  }
  memcpy(hub->pod_bytes, data, len);
  hub->pod_len = len;
  return hub->pod;
}

static void json_free(void *o) {
  json_decref(o);
}

typedef void (*free_fn)(void *);

static free_fn consumer_free_fn(const ctl_inf *ci) {
  return ci->h.decode ? ci->h.free_obj : json_free;
}

static const char *meta_str(json_t *obj, const char *field) {
  const char *s = json_string_value(json_object_get(json_object_get(obj, "metadata"), field));
  return s ? s : "";
}

/* ---- the shared informer's hooks (ud: the shared entry) ---- */

/* Each consumer's object from the one parsed event: obj (JSON) or data/len (protobuf). */
static bundle *bundle_make(shared *sh, json_t *obj, const uint8_t *data, size_t len, char *err,
                           size_t errlen) {
  bundle *b = calloc(1, sizeof(*b) + sh->n * sizeof(entry));
  if (!b) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  b->n = sh->n;
  for (size_t i = 0; i < sh->n; i++) {
    const ctl_inf *ci = sh->c[i];
    if (!ci)
      continue;
    b->e[i].free_obj = consumer_free_fn(ci);
    if (obj && !ci->h.decode) {
      b->e[i].obj = json_incref(obj);
      continue;
    }
    char e[256] = "";
    b->e[i].obj = obj ? ci->h.decode(obj, ci->h.ud, e, sizeof(e))
                      : ci->h.decode_pb(data, len, ci->h.ud, e, sizeof(e));
    if (b->e[i].obj == CTL_INF_SKIP) {
      b->e[i].obj = NULL;
      b->e[i].skip = true;
    }
    if (b->e[i].obj || b->e[i].skip) /* as kc_informer: else skipped, the cached copy kept */
      continue;
    if (obj)
      KC_ERROR("informer %s: cannot decode %s/%s, skipped: %s", sh->resource,
               meta_str(obj, "namespace"), meta_str(obj, "name"), e);
    else
      KC_ERROR("informer %s: cannot decode an object, skipped: %s", sh->resource, e);
  }
  return b;
}

static void *bundle_decode(json_t *obj, void *ud, char *err, size_t errlen) {
  return bundle_make(ud, obj, NULL, 0, err, errlen);
}

/* Protobuf consumers all have decode_pb (ctl_inf_new checks it). */
static void *bundle_decode_pb(const uint8_t *data, size_t len, void *ud, char *err, size_t errlen) {
  return bundle_make(ud, NULL, data, len, err, errlen);
}

static void bundle_free(void *o) {
  bundle *b = o;
  for (size_t i = 0; i < b->n; i++)
    if (b->e[i].obj && !b->e[i].taken)
      b->e[i].free_obj(b->e[i].obj);
  free(b);
}

/* Puts e's object in the consumer's store and tells its handlers (add or update). */
static void mirror(ctl_inf *ci, const char *key, const char *rv, entry *e) {
  void *old = NULL;
  bool had = kc_store_take(ci->store, key, &old) == 0;
  int rc = kc_store_put(ci->store, key, e->obj, rv);
  e->taken = true; /* the store steals it, also when the put fails */
  if (rc) {
    KC_ERROR("informer: cannot store %s: %s", key, kc_strerror(rc));
    if (had) {
      if (ci->h.on_delete)
        ci->h.on_delete(key, old, ci->h.ud);
      kc_store_release_obj(ci->store, old);
    }
    return;
  }
  if (had) {
    if (ci->h.on_update)
      ci->h.on_update(key, old, e->obj, ci->h.ud);
    kc_store_release_obj(ci->store, old);
  } else if (ci->h.on_add) {
    ci->h.on_add(key, e->obj, ci->h.ud);
  }
}

/* The consumer's copy of key goes (it had one): on_delete. */
static void drop(ctl_inf *ci, const char *key) {
  void *old = NULL;
  if (kc_store_take(ci->store, key, &old) != 0)
    return;
  if (ci->h.on_delete)
    ci->h.on_delete(key, old, ci->h.ud);
  kc_store_release_obj(ci->store, old);
}

static void shared_upsert(const char *key, void *obj, void *ud) {
  shared *sh = ud;
  bundle *b = obj;
  const char *rv = kc_store_rv(kc_informer_store(sh->inf), key);
  for (size_t i = 0; i < b->n && i < sh->n; i++) {
    if (!sh->c[i])
      continue;
    if (b->e[i].skip)
      drop(sh->c[i], key);
    else if (b->e[i].obj && !b->e[i].taken)
      mirror(sh->c[i], key, rv, &b->e[i]);
  }
}

static void shared_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  (void)old_obj; /* each consumer's old object is the one in its own store */
  shared_upsert(key, new_obj, ud);
}

static void shared_delete(const char *key, void *obj, void *ud) {
  shared *sh = ud;
  (void)obj;
  for (size_t i = 0; i < sh->n; i++)
    if (sh->c[i])
      drop(sh->c[i], key);
}

static void shared_synced(void *ud) {
  shared *sh = ud;
  for (size_t i = 0; i < sh->n; i++)
    if (sh->c[i] && sh->c[i]->h.on_synced)
      sh->c[i]->h.on_synced(sh->c[i]->h.ud);
}

/* ---- the hub ---- */

int ctl_inf_hub_new(kc_client *c, bool protobuf, ctl_inf_hub **out) {
  ctl_inf_hub *hub = calloc(1, sizeof(*hub));
  if (!hub)
    return KC_ENOMEM;
  hub->client = c;
  hub->protobuf = protobuf;
  *out = hub;
  return 0;
}

bool ctl_inf_hub_protobuf(const ctl_inf_hub *hub) {
  return hub && hub->protobuf;
}

void ctl_inf_hub_free(ctl_inf_hub *hub) {
  if (!hub)
    return;
  if (hub->consumers > 0) {
    hub->freeing = true; /* the last ctl_inf_free frees it */
    return;
  }
  forget_pod(hub);
  free(hub);
}

static void shared_free(shared *sh) {
  kc_informer_free(sh->inf);
  while (sh->dead) {
    ctl_inf *d = sh->dead;
    sh->dead = d->next_dead;
    kc_store_free(d->store);
    free(d);
  }
  free(sh->group);
  free(sh->version);
  free(sh->resource);
  free(sh->ns);
  free(sh->label);
  free(sh->field);
  free(sh);
}

static bool shareable(const kc_informer_options *o) {
  return o->page_size == 0 && o->max_frame == 0 && o->resync_ms == 0 && o->min_watch_timeout_s == 0;
}

static shared *find_shared(ctl_inf_hub *hub, const kc_informer_options *o) {
  for (shared *sh = hub->list; sh; sh = sh->next)
    if (!sh->started && sh->n < MAX_CONSUMERS && kc_str_eq(sh->group, o->group) &&
        kc_str_eq(sh->version, o->version) && kc_str_eq(sh->resource, o->resource) &&
        kc_str_eq(sh->ns, o->namespace) && kc_str_eq(sh->label, o->label_selector) &&
        kc_str_eq(sh->field, o->field_selector) && sh->protobuf == o->protobuf)
      return sh;
  return NULL;
}

static char *dup_or_null(const char *s, bool *bad) {
  char *d = s ? strdup(s) : NULL;
  if (s && !d)
    *bad = true;
  return d;
}

static int new_shared(ctl_inf_hub *hub, const kc_informer_options *o, shared **out) {
  shared *sh = calloc(1, sizeof(*sh));
  if (!sh)
    return KC_ENOMEM;
  bool bad = false;
  sh->group = dup_or_null(o->group, &bad);
  sh->version = dup_or_null(o->version, &bad);
  sh->resource = dup_or_null(o->resource, &bad);
  sh->ns = dup_or_null(o->namespace, &bad);
  sh->label = dup_or_null(o->label_selector, &bad);
  sh->field = dup_or_null(o->field_selector, &bad);
  sh->protobuf = o->protobuf;
  kc_informer_handlers h = {.decode = bundle_decode,
                            .decode_pb = o->protobuf ? bundle_decode_pb : NULL,
                            .free_obj = bundle_free,
                            .on_add = shared_upsert,
                            .on_update = shared_update,
                            .on_delete = shared_delete,
                            .on_synced = shared_synced,
                            .ud = sh};
  int rc = bad ? KC_ENOMEM : kc_informer_new(hub->client, o, &h, &sh->inf);
  if (rc) {
    shared_free(sh);
    return rc;
  }
  sh->next = hub->list;
  hub->list = sh;
  *out = sh;
  return 0;
}

/* ---- consumers ---- */

int ctl_inf_new(ctl_inf_hub *hub, kc_client *c, const kc_informer_options *o,
                const kc_informer_handlers *h, ctl_inf **out) {
  if ((h->decode && !h->free_obj) || (o->protobuf && (!h->decode_pb || !h->decode)))
    return KC_EINVAL;
  ctl_inf *ci = calloc(1, sizeof(*ci));
  if (!ci)
    return KC_ENOMEM;
  ci->h = *h;
  int rc;
  if (!hub || !shareable(o)) {
    if ((rc = kc_informer_new(c, o, h, &ci->own)))
      goto fail;
    *out = ci;
    return 0;
  }
  shared *sh = find_shared(hub, o);
  if (!sh && (rc = new_shared(hub, o, &sh)))
    goto fail;
  if ((rc = kc_store_new(consumer_free_fn(ci), &ci->store))) {
    if (sh->live == 0) { /* made for this consumer only */
      hub->list = sh->next;
      shared_free(sh);
    }
    goto fail;
  }
  ci->hub = hub;
  ci->sh = sh;
  ci->slot = sh->n;
  sh->c[sh->n++] = ci;
  sh->live++;
  hub->consumers++;
  *out = ci;
  return 0;
fail:
  free(ci);
  return rc;
}

kc_store *ctl_inf_store(ctl_inf *inf) {
  return inf->sh ? inf->store : kc_informer_store(inf->own);
}

bool ctl_inf_has_synced(const ctl_inf *inf) {
  return kc_informer_has_synced(inf->sh ? inf->sh->inf : inf->own);
}

int ctl_inf_start(ctl_inf *inf) {
  if (inf->started)
    return KC_EINVAL;
  inf->started = true;
  if (!inf->sh)
    return kc_informer_start(inf->own);
  if (inf->sh->started)
    return 0;
  inf->sh->started = true;
  return kc_informer_start(inf->sh->inf);
}

static void unlink_shared(ctl_inf_hub *hub, shared *sh) {
  for (shared **p = &hub->list; *p; p = &(*p)->next)
    if (*p == sh) {
      *p = sh->next;
      return;
    }
}

void ctl_inf_free(ctl_inf *inf) {
  if (!inf)
    return;
  if (!inf->sh) {
    kc_informer_free(inf->own);
    free(inf);
    return;
  }
  shared *sh = inf->sh;
  ctl_inf_hub *hub = inf->hub;
  sh->c[inf->slot] = NULL; /* no handler of it runs again */
  inf->next_dead = sh->dead;
  sh->dead = inf;
  if (--sh->live == 0) {
    unlink_shared(hub, sh);
    shared_free(sh); /* the objects the stores took go with them; bundles mark them taken */
  }
  if (--hub->consumers == 0 && hub->freeing) {
    forget_pod(hub);
    free(hub);
  }
}
