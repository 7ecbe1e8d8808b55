/* The scheduler cache: see sch_cache.h. */
#include "sch_cache.h"

#include "kc_pb.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kc_clock.h"
#include "kc_codec.h"
#include "kc_error.h"
#include "kc_informer.h"
#include "kc_log.h"
#include "kc_store.h"
#include "kc_strmap.h"
#include "sch_kinds.h"

/* A bind decided and not yet confirmed: the node, and the cached pod it was decided for,
 * kept up to date by the pod handlers, so that a snapshot finds assumed pods without a
 * lookup each (50,000 of them after a large session). */
typedef struct {
  const Kiln__Pod *pod; /* borrowed from the pod store; NULL when it was not there */
  /* The device assignment the session chose (deviceshare), in the same block; NULL: none. */
  const char *vgpu_ids, *gpu_index;
  char node[];
} assumption;

/* The informers, one per kind kiln-scheduler reads (sch_kinds.h). */
enum { INF__COUNT = SCH_KIND__COUNT };

struct sch_cache {
  kc_client *client;
  sch_cache_options opt;
  kc_informer *inf[INF__COUNT];
  kc_strmap assumed;  /* "ns/name" -> assumption (owned) */
  kc_strmap evicting; /* "ns/name" -> uid (owned) of a pod the scheduler is evicting */
  uint64_t generation;
  uint64_t confirmed, forgotten;
  bool queue_create_in_flight;
  bool synced_by_hand; /* sch_cache_set_synced */
  /* sch_cache_hold: assumed node names dropped while held wait here (a held snapshot's
   * overlay borrows them). */
  unsigned holds;
  void **dead;
  size_t ndead, capdead;
  bool *alive; /* cleared on free so that an in-flight create's callback does nothing */
};

/* ---- decoders: the informers keep the protobuf views ---- */

static void *decode_pod(json_t *obj, void *ud, char *err, size_t errlen) {
  sch_cache *cache = ud;
  Kiln__Pod *p = NULL;
  if (kc_pod_decode(obj, &p, err, errlen) == 0)
    return p;
  if (cache->opt.on_bad_pod) {
    json_t *md = json_object_get(obj, "metadata");
    cache->opt.on_bad_pod(
        json_string_value(json_object_get(md, "namespace")),
        json_string_value(json_object_get(md, "name")),
        json_string_value(json_object_get(md, "uid")),
        json_string_value(json_object_get(json_object_get(obj, "spec"), "schedulerName")), err,
        cache->opt.ud);
  }
  return NULL;
}
static void *decode_pod_pb(const uint8_t *data, size_t len, void *ud, char *err, size_t errlen) {
  sch_cache *cache = ud;
  Kiln__Pod *p = NULL;
  if (kc_pb_pod_decode(data, len, &p, err, errlen) == 0)
    return p;
  /* Read again for its names only: the rare path. */
  K8s__Pod *k = cache->opt.on_bad_pod ? k8s__pod__unpack(NULL, len, data) : NULL;
  if (k) {
    K8s__ObjectMeta *md = k->metadata;
    cache->opt.on_bad_pod(md ? md->namespace_ : NULL, md ? md->name : NULL, md ? md->uid : NULL,
                          k->spec ? k->spec->scheduler_name : NULL, err, cache->opt.ud);
  }
  kc_pb_free(k);
  return NULL;
}
/* ---- pod handlers: confirm assumptions ---- */

/* Frees an assumption, or keeps it until the hold ends (a held snapshot borrows its node). */
static void node_free(sch_cache *cache, void *s) {
  if (s == NULL)
    return;
  if (cache->holds > 0) {
    if (cache->ndead == cache->capdead) {
      size_t cap = cache->capdead ? cache->capdead * 2 : 64;
      void **v = realloc(cache->dead, cap * sizeof(*v));
      if (v == NULL)
        return; /* leaked rather than freed under a reader */
      cache->dead = v;
      cache->capdead = cap;
    }
    cache->dead[cache->ndead++] = s;
    return;
  }
  free(s);
}

static void drop_assumed(sch_cache *cache, const char *key, bool confirmed) {
  void *old = NULL;
  if (kc_strmap_del(&cache->assumed, key, &old) == 0) {
    node_free(cache, old);
    if (confirmed)
      cache->confirmed++;
  }
}

static void changed(sch_cache *cache, sch_cache_kind kind, const void *old_obj,
                    const void *new_obj) {
  if (cache->opt.on_change)
    cache->opt.on_change(kind, old_obj, new_obj, cache->opt.ud);
}

/* An eviction is confirmed once the pod carries a deletionTimestamp, is gone, or the
 * name belongs to a new pod (the job controller recreates pods under the same name). */
static void drop_evicting(sch_cache *cache, const char *key) {
  void *old = NULL;
  if (kc_strmap_del(&cache->evicting, key, &old) == 0)
    free(old);
}

static void pod_seen(sch_cache *cache, const char *key, const Kiln__Pod *p) {
  if (p->node_name && p->node_name[0])
    drop_assumed(cache, key, true);
  else if (kc_strmap_len(&cache->assumed) > 0) {
    assumption *a = kc_strmap_get(&cache->assumed, key);
    if (a)
      a->pod = p; /* the store's object now */
  }
  const char *uid = kc_strmap_get(&cache->evicting, key);
  if (uid && (p->deletion_time || !p->uid || strcmp(uid, p->uid) != 0))
    drop_evicting(cache, key);
}

static void pod_add(const char *key, void *obj, void *ud) {
  pod_seen(ud, key, obj);
  changed(ud, SCH_CACHE_PODS, NULL, obj);
}

static void pod_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  pod_seen(ud, key, new_obj);
  changed(ud, SCH_CACHE_PODS, old_obj, new_obj);
}

static void podgroup_add(const char *key, void *obj, void *ud) {
  (void)key;
  changed(ud, SCH_CACHE_PODGROUPS, NULL, obj);
}

static void podgroup_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  (void)key;
  changed(ud, SCH_CACHE_PODGROUPS, old_obj, new_obj);
}

static void gone(sch_cache *cache, sch_cache_kind kind, const char *key, const char *uid) {
  if (cache->opt.on_gone)
    cache->opt.on_gone(kind, key, uid ? uid : "", cache->opt.ud);
}

static void pod_delete(const char *key, void *obj, void *ud) {
  const Kiln__Pod *p = obj;
  drop_assumed(ud, key, true);
  drop_evicting(ud, key);
  gone(ud, SCH_CACHE_PODS, key, p ? p->uid : NULL);
}

static void podgroup_delete(const char *key, void *obj, void *ud) {
  const Kiln__PodGroup *pg = obj;
  gone(ud, SCH_CACHE_PODGROUPS, key, pg && pg->metadata ? pg->metadata->uid : NULL);
}

/* ---- lifecycle ---- */

int sch_cache_new(kc_client *c, const sch_cache_options *o, sch_cache **out) {

  *out = NULL;
  sch_cache *cache = calloc(1, sizeof(*cache));
  if (cache == NULL)
    return KC_ENOMEM;
  cache->client = c;
  if (o)
    cache->opt = *o;
  if (cache->opt.default_queue == NULL)
    cache->opt.default_queue = "default";
  kc_strmap_init(&cache->assumed, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&cache->evicting, KC_STRMAP_COPY_KEYS);
  cache->alive = malloc(sizeof(bool));
  if (cache->alive == NULL) {
    free(cache);
    return KC_ENOMEM;
  }
  *cache->alive = true;
  for (int i = 0; i < INF__COUNT; i++) {
    kc_informer_options io = {0};
    io.group = sch_kinds[i].group;
    io.version = sch_kinds[i].version;
    io.resource = sch_kinds[i].resource;
    char sel[320];
    io.field_selector = sch_kind_field_selector(i, cache->opt.conf, sel, sizeof(sel));
    io.protobuf = cache->opt.protobuf && sch_kinds[i].decode_pb;
    kc_informer_handlers h = {0};
    h.decode = sch_kinds[i].decode;
    h.decode_pb = sch_kinds[i].decode_pb;
    h.free_obj = kc_msg_free;
    h.ud = cache;
    if (i == SCH_KIND_POD) {
      /* Pods that do not decode are reported (on_bad_pod). */
      h.decode = decode_pod;
      h.decode_pb = decode_pod_pb;
      h.on_add = pod_add;
      h.on_update = pod_update;
      h.on_delete = pod_delete;
    } else if (i == SCH_KIND_PODGROUP) {
      h.on_add = podgroup_add;
      h.on_update = podgroup_update;
      h.on_delete = podgroup_delete;
    }
    int rc = kc_informer_new(c, &io, &h, &cache->inf[i]);
    if (rc) {
      sch_cache_free(cache);
      return rc;
    }
  }
  cache->opt.conf = NULL; /* borrowed for the informers above only */
  *out = cache;
  return 0;
}

int sch_cache_start(sch_cache *cache) {
  for (int i = 0; i < INF__COUNT; i++) {
    int rc = kc_informer_start(cache->inf[i]);
    if (rc)
      return rc;
  }
  return 0;
}

static void free_str(void *p) {
  free(p);
}

static void free_dead(sch_cache *cache);

void sch_cache_free(sch_cache *cache) {
  if (cache == NULL)
    return;
  for (int i = 0; i < INF__COUNT; i++)
    kc_informer_free(cache->inf[i]);
  kc_strmap_close(&cache->assumed, free_str);
  free_dead(cache);
  kc_strmap_close(&cache->evicting, free_str);
  if (cache->queue_create_in_flight)
    *cache->alive = false; /* the callback frees it */
  else
    free(cache->alive);
  free(cache);
}

void sch_cache_set_synced(sch_cache *cache) {
  cache->synced_by_hand = true;
}

bool sch_cache_snap_binding(const sch_cache_snap *s, const Kiln__Pod *p) {
  if (s->nassumed == 0 || p < s->assumed || p >= s->assumed + s->nassumed)
    return false;
  return s->binding[p - s->assumed];
}

bool sch_cache_synced(const sch_cache *cache) {
  if (cache->synced_by_hand)
    return true;
  /* Numatopologies are optional: a cluster without their CRD (or before its first LIST)
   * schedules on, and pods that need NUMA alignment find no topology yet. So is Volcano's
   * vGPU device configuration (without it, vGPUs share by hami-core, as in Volcano). */
  for (int i = 0; i < INF__COUNT; i++)
    if (i != SCH_KIND_NUMATOPO && i != SCH_KIND_CONFIGMAP && !kc_informer_has_synced(cache->inf[i]))
      return false;
  return true;
}

/* ---- the default and root queues ---- */

/* The create's context: the cache may be freed while the call is in flight. */
typedef struct {
  bool *alive;
  sch_cache *cache;
  char name[254];
} create_ctx;

static void queue_created(const kc_api_result *res, void *data) {
  create_ctx *cx = data;
  if (!*cx->alive) {
    free(cx->alive);
    free(cx);
    return;
  }
  cx->cache->queue_create_in_flight = false;
  if (res->err == 0)
    KC_INFO("created the queue %s", cx->name);
  else if (res->err != KC_EALREADYEXISTS)
    KC_ERROR("cannot create the queue %s: %s: %s", cx->name, kc_strerror(res->err), res->message);
  free(cx);
}

/* Volcano's scheduler makes the default queue and the root of the queue hierarchy (every
 * queue without a parent hangs under root; the queue controller writes that parent), one
 * create at a time, whenever either is missing. */
void sch_cache_tick(sch_cache *cache) {
  if (cache->queue_create_in_flight || !kc_informer_has_synced(cache->inf[SCH_KIND_QUEUE]))
    return;
  const char *name = NULL;
  bool reclaimable = true;
  kc_store *queues = kc_informer_store(cache->inf[SCH_KIND_QUEUE]);
  if (!kc_store_get(queues, cache->opt.default_queue)) {
    name = cache->opt.default_queue;
  } else if (!kc_store_get(queues, "root")) {
    name = "root";
    reclaimable = false;
  }
  if (!name)
    return;
  if (cache->opt.may_write && cache->opt.may_write(cache->opt.ud) != 0)
    return;
  json_t *body = json_pack("{s:s,s:s,s:{s:s},s:{s:i,s:b}}", "apiVersion",
                           "scheduling.volcano.sh/v1beta1", "kind", "Queue", "metadata", "name",
                           name, "spec", "weight", 1, "reclaimable", reclaimable);
  create_ctx *cx = malloc(sizeof(*cx));
  if (body == NULL || cx == NULL) {
    json_decref(body);
    free(cx);
    return;
  }
  cx->alive = cache->alive;
  cx->cache = cache;
  snprintf(cx->name, sizeof(cx->name), "%s", name);
  kc_ref ref = {"scheduling.volcano.sh", "v1beta1", "queues", NULL, NULL, NULL};
  KC_INFO("the queue %s is missing; creating it", name);
  int rc = kc_api_call(cache->client, KC_CREATE, &ref, NULL, body, queue_created, cx);
  json_decref(body);
  if (rc) {
    KC_ERROR("cannot create the queue %s: %s", name, kc_strerror(rc));
    free(cx);
    return;
  }
  cache->queue_create_in_flight = true;
}

/* ---- assume / forget ---- */

int sch_cache_assume(sch_cache *cache, const char *key, const char *node) {
  return sch_cache_assume_devices(cache, key, node, NULL, NULL);
}

int sch_cache_assume_devices(sch_cache *cache, const char *key, const char *node,
                             const char *vgpu_ids, const char *gpu_index) {
  size_t len = strlen(node), lv = vgpu_ids ? strlen(vgpu_ids) + 1 : 0;
  size_t lg = gpu_index ? strlen(gpu_index) + 1 : 0;
  assumption *n = malloc(sizeof(*n) + len + 1 + lv + lg);
  if (n == NULL)
    return KC_ENOMEM;
  n->pod = kc_store_get(kc_informer_store(cache->inf[SCH_KIND_POD]), key);
  memcpy(n->node, node, len + 1);
  n->vgpu_ids = vgpu_ids ? memcpy(n->node + len + 1, vgpu_ids, lv) : NULL;
  n->gpu_index = gpu_index ? memcpy(n->node + len + 1 + lv, gpu_index, lg) : NULL;
  void *old = NULL;
  int rc = kc_strmap_put(&cache->assumed, key, n, &old);
  if (rc < 0) {
    free(n);
    return rc;
  }
  node_free(cache, old);
  return 0;
}

void sch_cache_forget(sch_cache *cache, const char *key) {
  void *old = NULL;
  if (kc_strmap_del(&cache->assumed, key, &old) == 0) {
    node_free(cache, old);
    cache->forgotten++;
  }
}

const char *sch_cache_assumed_node(const sch_cache *cache, const char *key) {
  const assumption *a = kc_strmap_get(&cache->assumed, key);
  return a ? a->node : NULL;
}

size_t sch_cache_nassumed(const sch_cache *cache) {
  return kc_strmap_len(&cache->assumed);
}

int sch_cache_evicting(sch_cache *cache, const char *key, const char *uid) {
  char *u = strdup(uid ? uid : "");
  if (u == NULL)
    return KC_ENOMEM;
  void *old = NULL;
  int rc = kc_strmap_put(&cache->evicting, key, u, &old);
  if (rc < 0) {
    free(u);
    return rc;
  }
  free(old);
  return 0;
}

void sch_cache_evict_failed(sch_cache *cache, const char *key) {
  drop_evicting(cache, key);
}

bool sch_cache_is_evicting(const sch_cache *cache, const char *key) {
  return kc_strmap_has(&cache->evicting, key);
}

/* ---- lookups ---- */

const Kiln__Pod *sch_cache_pod(const sch_cache *cache, const char *key) {
  return kc_store_get(kc_informer_store(cache->inf[SCH_KIND_POD]), key);
}
const Kiln__PodGroup *sch_cache_podgroup(const sch_cache *cache, const char *key) {
  return kc_store_get(kc_informer_store(cache->inf[SCH_KIND_PODGROUP]), key);
}
const Kiln__Queue *sch_cache_queue(const sch_cache *cache, const char *name) {
  return kc_store_get(kc_informer_store(cache->inf[SCH_KIND_QUEUE]), name);
}

kc_store *sch_cache_store(sch_cache *cache, sch_cache_kind kind) {
  static const int inf_of[] = {
      SCH_KIND_POD,           SCH_KIND_NODE,     SCH_KIND_PODGROUP,    SCH_KIND_QUEUE,
      SCH_KIND_PRIORITYCLASS, SCH_KIND_PDB,      SCH_KIND_DEVICECLASS, SCH_KIND_RESOURCESLICE,
      SCH_KIND_RESOURCECLAIM, SCH_KIND_NUMATOPO, SCH_KIND_PV,          SCH_KIND_PVC};
  if ((unsigned)kind >= sizeof(inf_of) / sizeof(inf_of[0]))
    return NULL;
  return kc_informer_store(cache->inf[inf_of[kind]]);
}

void sch_cache_get_stats(const sch_cache *cache, sch_cache_stats *st) {
  memset(st, 0, sizeof(*st));
  st->pods = kc_store_len(kc_informer_store(cache->inf[SCH_KIND_POD]));
  st->nodes = kc_store_len(kc_informer_store(cache->inf[SCH_KIND_NODE]));
  st->pod_groups = kc_store_len(kc_informer_store(cache->inf[SCH_KIND_PODGROUP]));
  st->queues = kc_store_len(kc_informer_store(cache->inf[SCH_KIND_QUEUE]));
  st->priority_classes = kc_store_len(kc_informer_store(cache->inf[SCH_KIND_PRIORITYCLASS]));
  st->assumed = kc_strmap_len(&cache->assumed);
  st->confirmed = cache->confirmed;
  st->forgotten = cache->forgotten;
  for (int i = 0; i < INF__COUNT; i++) {
    kc_informer_stats is;
    kc_informer_get_stats(cache->inf[i], &is);
    st->decode_errors += is.decode_errors;
  }
}

/* ---- snapshots ---- */

void sch_cache_hold(sch_cache *cache) {
  cache->holds++;
  for (int i = 0; i < INF__COUNT; i++)
    kc_store_hold(kc_informer_store(cache->inf[i]));
}

static void free_dead(sch_cache *cache) {
  for (size_t i = 0; i < cache->ndead; i++)
    free(cache->dead[i]);
  free(cache->dead);
  cache->dead = NULL;
  cache->ndead = cache->capdead = 0;
}

void sch_cache_unhold(sch_cache *cache) {
  for (int i = 0; i < INF__COUNT; i++)
    kc_store_unhold(kc_informer_store(cache->inf[i]));
  if (cache->holds > 0 && --cache->holds == 0)
    free_dead(cache);
}

/* Copies the store's object pointers into a new array; *n receives the count. */
static int store_array(kc_store *s, void ***out, size_t *n) {
  size_t len = kc_store_len(s), i = 0;
  *out = NULL;
  *n = 0;
  if (len == 0)
    return 0;
  void **v = malloc(len * sizeof(*v));
  if (v == NULL)
    return KC_ENOMEM;
  kc_store_iter it;
  const char *key;
  void *obj;
  kc_store_iter_init(s, &it);
  while (i < len && kc_store_iter_next(&it, &key, &obj))
    v[i++] = obj;
  *out = v;
  *n = i;
  return 0;
}

/* Adds the overlay entry of an assumption that still applies (the pod has no node yet). */
static void overlay_assumed(sch_cache_snap *out, size_t cap, const assumption *a) {
  const Kiln__Pod *p = a->pod;
  if (p == NULL || (p->node_name && p->node_name[0]) || out->noverlay >= cap)
    return; /* the API server's node wins over a stale assumption */
  out->overlay[out->noverlay++] = (sch_cache_overlay){
      .pod = p, .node = a->node, .vgpu_ids = a->vgpu_ids, .gpu_index = a->gpu_index};
}

/* Adds the overlay entry of a pod being evicted, unless that no longer applies to it. */
static void overlay_evicting(sch_cache *cache, sch_cache_snap *out, size_t cap, const char *key,
                             const char *uid) {
  const Kiln__Pod *p = kc_store_get(kc_informer_store(cache->inf[SCH_KIND_POD]), key);
  if (p == NULL || out->noverlay >= cap || p->deletion_time || !p->uid || strcmp(uid, p->uid))
    return;
  out->overlay[out->noverlay++] = (sch_cache_overlay){.pod = p, .evicting = true};
}

/* One --node-selector entry as Volcano reads it: name and value around the first ':', each
 * trimmed; false when there is no ':' or nothing after it. */
static bool selector_entry(const char *e, const char **k, size_t *klen, const char **v,
                           size_t *vlen) {
  const char *colon = strchr(e, ':');
  if (!colon || !colon[1])
    return false;
  *k = e;
  *klen = (size_t)(colon - e);
  *v = colon + 1;
  *vlen = strlen(*v);
  while (*klen && isspace((unsigned char)**k))
    (*k)++, (*klen)--;
  while (*klen && isspace((unsigned char)(*k)[*klen - 1]))
    (*klen)--;
  while (*vlen && isspace((unsigned char)**v))
    (*v)++, (*vlen)--;
  while (*vlen && isspace((unsigned char)(*v)[*vlen - 1]))
    (*vlen)--;
  return true;
}

static bool has_label(const Kiln__Node *n, const char *k, size_t klen, const char *v, size_t vlen) {
  for (size_t i = 0; i < n->n_labels; i++) {
    const char *lk = n->labels[i]->key, *lv = n->labels[i]->value;
    if (lk && lv && strlen(lk) == klen && strlen(lv) == vlen && !memcmp(lk, k, klen) &&
        !memcmp(lv, v, vlen))
      return true;
  }
  return false;
}

bool sch_cache_node_selected(const Kiln__Node *n, const char *const *sel, size_t nsel) {
  bool any = false;
  for (size_t i = 0; i < nsel; i++) {
    const char *k, *v;
    size_t klen, vlen;
    if (!selector_entry(sel[i], &k, &klen, &v, &vlen))
      continue;
    any = true;
    if (has_label(n, k, klen, v, vlen))
      return true;
  }
  return !any;
}

/* Leaves out of the message the nodes --node-selector does not select. */
static void select_nodes(const sch_cache *cache, Kiln__Snapshot *m) {
  if (cache->opt.nnode_selector == 0)
    return;
  size_t n = 0;
  for (size_t i = 0; i < m->n_nodes; i++)
    if (sch_cache_node_selected(m->nodes[i], cache->opt.node_selector, cache->opt.nnode_selector))
      m->nodes[n++] = m->nodes[i];
  m->n_nodes = n;
}

int sch_cache_snapshot_deferred(sch_cache *cache, sch_cache_snap *out) {
  memset(out, 0, sizeof(*out));
  Kiln__Snapshot init = KILN__SNAPSHOT__INIT;
  out->msg = init;
  Kiln__Snapshot *m = &out->msg;
  m->generation = ++cache->generation;
  m->time_unix_nano = kc_clock_wall_ns();
  int rc = 0;
  for (int k = 0; k < SCH_KIND__COUNT && rc == 0; k++)
    rc = store_array(kc_informer_store(cache->inf[k]), sch_kind_items(m, k), sch_kind_count(m, k));
  if (rc == 0)
    select_nodes(cache, m);
  /* Assumed pods and pods being evicted: listed here (a lookup each), applied to the
   * message by sch_cache_snap_finish, which may run on another thread. */
  size_t cap = kc_strmap_len(&cache->assumed) + kc_strmap_len(&cache->evicting);
  if (rc == 0 && cap > 0 && (out->overlay = calloc(cap, sizeof(*out->overlay))) == NULL)
    rc = KC_ENOMEM;
  if (rc) {
    sch_cache_snap_close(out);
    return rc;
  }
  kc_strmap_slot *sl;
  size_t pos = 0;
  while ((sl = kc_strmap_next(&cache->assumed, &pos)))
    overlay_assumed(out, cap, sl->val);
  pos = 0;
  while ((sl = kc_strmap_next(&cache->evicting, &pos)))
    overlay_evicting(cache, out, cap, sl->key, sl->val);
  return 0;
}

static int overlay_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const sch_cache_overlay *)a)->pod;
  uintptr_t y = (uintptr_t)((const sch_cache_overlay *)b)->pod;
  return x < y ? -1 : x > y;
}

int sch_cache_snap_finish(sch_cache_snap *s) {
  if (s->noverlay == 0)
    return 0;
  /* By pod: a pod both assumed and being evicted is one copy with both. */
  qsort(s->overlay, s->noverlay, sizeof(*s->overlay), overlay_cmp);
  size_t n = 0;
  for (size_t i = 0; i < s->noverlay; i++) {
    if (n > 0 && s->overlay[n - 1].pod == s->overlay[i].pod) {
      if (s->overlay[i].node) {
        s->overlay[n - 1].node = s->overlay[i].node;
        s->overlay[n - 1].vgpu_ids = s->overlay[i].vgpu_ids;
        s->overlay[n - 1].gpu_index = s->overlay[i].gpu_index;
      }
      s->overlay[n - 1].evicting |= s->overlay[i].evicting;
      continue;
    }
    s->overlay[n++] = s->overlay[i];
  }
  s->noverlay = n;
  s->assumed = calloc(n, sizeof(*s->assumed));
  s->binding = calloc(n, sizeof(*s->binding));
  s->devices = calloc(n, sizeof(*s->devices));
  if (s->assumed == NULL || s->binding == NULL || s->devices == NULL)
    return KC_ENOMEM;
  Kiln__Snapshot *m = &s->msg;
  for (size_t i = 0; i < m->n_pods && s->nassumed < n; i++) {
    sch_cache_overlay key = {.pod = m->pods[i]};
    const sch_cache_overlay *o = bsearch(&key, s->overlay, n, sizeof(*s->overlay), overlay_cmp);
    if (o == NULL)
      continue;
    s->binding[s->nassumed] = o->node != NULL;
    Kiln__Pod *c = &s->assumed[s->nassumed++];
    *c = *m->pods[i];
    if (o->node)
      c->node_name = (char *)o->node;
    if (c->devices && (o->vgpu_ids || o->gpu_index)) {
      /* the annotations the binder patches on: counted before the watch shows them */
      Kiln__PodDevices *d = &s->devices[s->nassumed - 1];
      *d = *c->devices;
      if (o->vgpu_ids)
        d->vgpu_ids = (char *)o->vgpu_ids;
      if (o->gpu_index)
        d->gpu_index = (char *)o->gpu_index;
      c->devices = d;
    }
    if (o->evicting)
      c->deletion_time = 1;
    m->pods[i] = c;
  }
  return 0;
}

int sch_cache_snapshot(sch_cache *cache, sch_cache_snap *out) {
  int rc = sch_cache_snapshot_deferred(cache, out);
  if (rc == 0 && (rc = sch_cache_snap_finish(out)) != 0)
    sch_cache_snap_close(out);
  return rc;
}

void sch_cache_snap_close(sch_cache_snap *s) {
  for (int k = 0; k < SCH_KIND__COUNT; k++)
    free(*sch_kind_items(&s->msg, k));
  free(s->assumed);
  free(s->binding);
  free(s->devices);
  free(s->overlay);
  memset(s, 0, sizeof(*s));
}

/* Writes len bytes to path through a temporary file in path's own directory. The dump's
 * default name is predictable and in /tmp, which anyone may write: the temporary file is
 * made with mkstemp (an unguessable name, O_CREAT|O_EXCL, so a link planted there is never
 * followed) and mode 0600 (the snapshot holds every pod spec), then renamed over path, which
 * replaces whatever link is at path instead of writing through it. */
static int write_private(const char *path, const uint8_t *buf, size_t len) {
  char tmp[4096];
  if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp)) {
    KC_ERROR("dump snapshot: path too long: %s", path);
    return KC_EIO;
  }
  int fd = mkstemp(tmp);
  if (fd < 0) {
    KC_ERROR("dump snapshot: cannot create a file next to %s: %s", path, strerror(errno));
    return KC_EIO;
  }
  bool ok = fchmod(fd, S_IRUSR | S_IWUSR) == 0;
  for (size_t off = 0; ok && off < len;) {
    ssize_t n = write(fd, buf + off, len - off);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    off += ok ? (size_t)n : 0;
  }
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    KC_ERROR("dump snapshot: cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    return KC_EIO;
  }
  return 0;
}

int sch_cache_dump(sch_cache *cache, const char *path) {
  sch_cache_snap s;
  int rc = sch_cache_snapshot(cache, &s);
  if (rc)
    return rc;
  size_t len = kiln__snapshot__get_packed_size(&s.msg);
  uint8_t *buf = malloc(len ? len : 1);
  if (buf == NULL) {
    sch_cache_snap_close(&s);
    return KC_ENOMEM;
  }
  kiln__snapshot__pack(&s.msg, buf);
  rc = write_private(path, buf, len);
  if (rc == 0)
    KC_INFO("dumped the cache to %s (%zu nodes, %zu pods, %zu podgroups, %zu queues, %zu bytes)",
            path, s.msg.n_nodes, s.msg.n_pods, s.msg.n_pod_groups, s.msg.n_queues, len);
  free(buf);
  sch_cache_snap_close(&s);
  return rc;
}
