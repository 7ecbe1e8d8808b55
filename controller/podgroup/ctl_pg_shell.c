/* pg-controller: Volcano's pkg/controllers/podgroup. Pods whose schedulerName is one of
 * --scheduler-name and that have no scheduling.k8s.io/group-name get a PodGroup
 * (podgroup-<controller owner UID>, or podgroup-<pod UID>) and the annotation naming it, so a
 * Deployment, StatefulSet or bare pod is scheduled as a gang; a ReplicaSet or StatefulSet
 * scaled to zero loses its PodGroup. Decisions: ctl_pg_core.c. Keys: "pod/<ns>/<name>",
 * "rs/<ns>/<name>", "sts/<ns>/<name>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"
#include "ctl_job.h"
#include "ctl_pg.h"
#include "kc_error.h"
#include "kc_log.h"
#include "kc_pb.h"

enum { INF_PODS = 0, INF_RS, INF_STS, INF_PGS, INF_N };

typedef struct {
  ctl_base base; /* first */
  uint64_t created, annotated, deleted;
} pg_ctl;

/* A pod as kept: the JSON only for pods this controller may group (ours, no group yet or
 * its own group); Volcano Job pods and other schedulers' pods keep a few bytes. */
typedef struct {
  char owner_uid[64];
  json_t *json;
} pg_pod;

/* A PodGroup as kept: its controller owner. */
typedef struct {
  char uid[64], owner_kind[32], owner_name[254], owner_uid[64];
} pg_group;

static void copy(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

static const char *meta_str(const json_t *o, const char *k) {
  return ctl_json_str(o, "metadata", k);
}

/* ---- decoders, indexes, handlers ---- */

static void *decode_pod(json_t *obj, void *ud, char *err, size_t errlen) {
  ctl_base *b = ud;
  pg_pod *p = calloc(1, sizeof(*p));
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  const json_t *owner = ctl_pg_controller_of(obj);
  copy(p->owner_uid, sizeof(p->owner_uid), json_string_value(json_object_get(owner, "uid")));
  if (ctl_pg_decide_pod(obj, b->env.schedulers, b->env.nschedulers) != CTL_PG_IGNORE)
    p->json = json_incref(obj);
  return p;
}

/* ---- the same from Kubernetes' protobuf ---- */

static void *decode_pod_pb(const uint8_t *data, size_t len, void *ud, char *err, size_t errlen) {
  ctl_base *b = ud;
  const K8s__Pod *k = ctl_inf_hub_pod(b->env.hub, data, len);
  pg_pod *p = k && k->metadata ? calloc(1, sizeof(*p)) : NULL;
  if (!p) {
    snprintf(err, errlen, "%s", k && k->metadata ? "out of memory" : "not a protobuf Pod");
    return NULL;
  }
  const char *sched = k->spec ? k->spec->scheduler_name : NULL;
  if (b->env.nschedulers == 1 && (!sched || strcmp(sched, b->env.schedulers[0]) != 0)) {
    free(p); /* the field selector pg_init gives a JSON watch */
    return CTL_INF_SKIP;
  }
  const K8s__OwnerReference *owner = NULL;
  for (size_t i = 0; !owner && i < k->metadata->n_owner_references; i++)
    if (k->metadata->owner_references[i]->controller)
      owner = k->metadata->owner_references[i];
  copy(p->owner_uid, sizeof(p->owner_uid), owner ? owner->uid : NULL);
  if (ctl_pg_pb_candidate(k, b->env.schedulers, b->env.nschedulers)) {
    p->json = ctl_pg_pod_json(k);
    if (p->json &&
        ctl_pg_decide_pod(p->json, b->env.schedulers, b->env.nschedulers) == CTL_PG_IGNORE) {
      json_decref(p->json);
      p->json = NULL;
    }
  }
  return p;
}

static void free_pod(void *o) {
  pg_pod *p = o;
  if (p)
    json_decref(p->json);
  free(p);
}

static void *decode_pg(json_t *obj, void *ud, char *err, size_t errlen) {
  pg_group *g = calloc(1, sizeof(*g));
  if (!g) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  copy(g->uid, sizeof(g->uid), meta_str(obj, "uid"));
  const json_t *o = ctl_pg_controller_of(obj);
  copy(g->owner_kind, sizeof(g->owner_kind), json_string_value(json_object_get(o, "kind")));
  copy(g->owner_name, sizeof(g->owner_name), json_string_value(json_object_get(o, "name")));
  copy(g->owner_uid, sizeof(g->owner_uid), json_string_value(json_object_get(o, "uid")));
  return g;
}

static int index_pod_owner(const void *obj, kc_index_out *out, void *ud) {
  const pg_pod *p = obj;
  return p->owner_uid[0] ? kc_index_out_add(out, p->owner_uid) : 0;
}

static void add_key(ctl_base *b, const char *kind, const char *key) {
  char k[600];
  if ((size_t)snprintf(k, sizeof(k), "%s/%s", kind, key) < sizeof(k))
    ctl_base_add(b, k);
}

/* Volcano addPod: every pod add is a request (the decision reads the pod). */
static void on_pod_add(const char *key, void *obj, void *ud) {
  if (((pg_pod *)obj)->json)
    add_key(ud, "pod", key);
}

static void on_rs(const char *key, void *obj, void *ud) {
  if (ctl_pg_scaled_to_zero(obj))
    add_key(ud, "rs", key);
}
static void on_rs_update(const char *key, void *o, void *n, void *ud) {
  on_rs(key, n, ud);
}
static void on_sts(const char *key, void *obj, void *ud) {
  if (ctl_pg_scaled_to_zero(obj))
    add_key(ud, "sts", key);
}
static void on_sts_update(const char *key, void *o, void *n, void *ud) {
  on_sts(key, n, ud);
}

/* Volcano deletePodGroup: a group deleted under live pods is made again for them. */
static void on_pg_delete(const char *key, void *obj, void *ud) {
  ctl_base *b = ud;
  const pg_group *g = obj;
  kc_store_iter it;
  const char *k;
  void *o;
  if (!g->owner_uid[0] ||
      kc_store_index_iter(ctl_base_store(b, INF_PODS), "owner", g->owner_uid, &it) != 0)
    return;
  while (kc_store_iter_next(&it, &k, &o))
    on_pod_add(k, o, b);
  if (strcmp(g->owner_kind, "Pod") == 0) {
    char pk[600];
    const char *slash = strchr(key, '/');
    if (slash && (size_t)snprintf(pk, sizeof(pk), "%.*s/%s", (int)(slash - key), key,
                                  g->owner_name) < sizeof(pk))
      add_key(b, "pod", pk);
  }
}

static void all_synced(ctl_base *b) {
  ctl_base_each(b, INF_PODS, on_pod_add);
  ctl_base_each(b, INF_RS, on_rs);
  ctl_base_each(b, INF_STS, on_sts);
}

/* ---- a pod: its group exists and it is annotated ---- */

typedef struct {
  char key[600];
  char ns[254], pod[254], uid[64], group[300];
  bool annotate;
} pod_run;

static void annotated(ctl_base *b, const kc_api_result *res, void *ud) {
  pod_run *r = ud;
  int err = res->err == KC_ENOTFOUND ? 0 : res->err;
  if (res->err == 0) {
    ((pg_ctl *)b)->annotated++;
    KC_V(4, "Bound Pod <%s/%s> to PodGroup <%s/%s>", r->ns, r->pod, r->ns, r->group);
  } else if (err) {
    KC_WARN("Failed to update pod <%s/%s>: %s", r->ns, r->pod, res->message);
  }
  ctl_base_done(b, r->key, err, NULL);
  free(r);
}

static void annotate(ctl_base *b, pod_run *r) {
  if (!r->annotate) {
    ctl_base_done(b, r->key, 0, NULL);
    free(r);
    return;
  }
  kc_ref ref = {NULL, "v1", "pods", r->ns, r->pod, NULL};
  json_t *patch = json_pack("{s:{s:s,s:{s:s}}}", "metadata", "uid", r->uid, "annotations",
                            CTL_PG_GROUP_NAME, r->group);
  int rc =
      patch ? ctl_base_call(b, KC_PATCH_STRATEGIC, &ref, NULL, patch, annotated, r) : KC_ENOMEM;
  json_decref(patch);
  if (rc) {
    ctl_base_done(b, r->key, rc, NULL);
    free(r);
  }
}

static void created(ctl_base *b, const kc_api_result *res, void *ud) {
  pod_run *r = ud;
  if (res->err && res->err != KC_EALREADYEXISTS) {
    KC_WARN("Failed to create normal PodGroup for Pod <%s/%s>: %s", r->ns, r->pod, res->message);
    ctl_base_done(b, r->key, res->err, NULL);
    free(r);
    return;
  }
  if (res->err == 0) {
    ((pg_ctl *)b)->created++;
    KC_V(2, "PodGroup <%s/%s> created for Pod <%s/%s>", r->ns, r->group, r->ns, r->pod);
  }
  annotate(b, r);
}

/* The annotations of the pod's owners that this controller caches (ReplicaSets and
 * StatefulSets), the first owner's value winning; new, or NULL when it has none. */
static json_t *owner_annotations(ctl_base *b, const json_t *pod) {
  json_t *out = NULL;
  size_t i;
  const json_t *ref;
  const char *ns = meta_str(pod, "namespace");
  json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i, ref) {
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    int which = kind && strcmp(kind, "ReplicaSet") == 0    ? INF_RS
                : kind && strcmp(kind, "StatefulSet") == 0 ? INF_STS
                                                           : -1;
    char key[600];
    if (which < 0 || !name || kc_store_key(key, sizeof(key), ns, name) != 0)
      continue;
    const json_t *w = kc_store_get(ctl_base_store(b, (size_t)which), key);
    const json_t *ann = json_object_get(json_object_get(w, "metadata"), "annotations");
    if (ann && !out)
      out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ann, k, v) if (!json_object_get(out, k))
        json_object_set(out, k, v);
  }
  return out;
}

/* The pod's controller owner when it is a ReplicaSet or StatefulSet: *known is false when
 * the cache has not seen it yet (its annotations are not known: wait for it, as Volcano
 * reads the owner from the API server), and the result is whether it is scaled to zero (a
 * workload going to zero keeps no group: its pods are on their way out). */
static bool owner_scaled_to_zero(ctl_base *b, const json_t *pod, bool *known) {
  const json_t *owner = ctl_pg_controller_of(pod);
  const char *kind = json_string_value(json_object_get(owner, "kind"));
  int which = kind && strcmp(kind, "ReplicaSet") == 0    ? INF_RS
              : kind && strcmp(kind, "StatefulSet") == 0 ? INF_STS
                                                         : -1;
  char key[600];
  *known = true;
  if (which < 0 || kc_store_key(key, sizeof(key), meta_str(pod, "namespace"),
                                json_string_value(json_object_get(owner, "name"))) != 0)
    return false;
  const json_t *w = kc_store_get(ctl_base_store(b, (size_t)which), key);
  *known = w != NULL;
  return w && ctl_pg_scaled_to_zero(w);
}

static void process_pod(ctl_base *b, const char *key, const char *pkey) {
  const pg_pod *p = kc_store_get(ctl_base_store(b, INF_PODS), pkey);
  ctl_pg_verdict v = p && p->json
                         ? ctl_pg_decide_pod(p->json, b->env.schedulers, b->env.nschedulers)
                         : CTL_PG_IGNORE;
  bool known = true;
  pod_run *r = v != CTL_PG_IGNORE && !owner_scaled_to_zero(b, p->json, &known) && known
                   ? calloc(1, sizeof(*r))
                   : NULL;
  if (!r) {
    ctl_base_done(b, key, known ? 0 : KC_ENOENT, NULL);
    return;
  }
  copy(r->key, sizeof(r->key), key);
  copy(r->ns, sizeof(r->ns), meta_str(p->json, "namespace"));
  copy(r->pod, sizeof(r->pod), meta_str(p->json, "name"));
  copy(r->uid, sizeof(r->uid), meta_str(p->json, "uid"));
  r->annotate = v == CTL_PG_ENSURE_AND_ANNOTATE;
  char gkey[600];
  if (ctl_pg_name(p->json, r->group, sizeof(r->group)) != 0 ||
      kc_store_key(gkey, sizeof(gkey), r->ns, r->group) != 0) {
    ctl_base_done(b, key, 0, NULL);
    free(r);
    return;
  }
  if (kc_store_get(ctl_base_store(b, INF_PGS), gkey)) {
    annotate(b, r);
    return;
  }
  json_t *owners = b->env.inherit_owner_annotations ? owner_annotations(b, p->json) : NULL;
  json_t *pg = ctl_pg_build(p->json, r->group, owners, b->env.inherit_owner_annotations);
  json_decref(owners);
  kc_ref ref = {"scheduling.volcano.sh", "v1beta1", "podgroups", r->ns, NULL, NULL};
  int rc = pg ? ctl_base_call(b, KC_CREATE, &ref, NULL, pg, created, r) : KC_ENOMEM;
  json_decref(pg);
  if (rc) {
    ctl_base_done(b, key, rc, NULL);
    free(r);
  }
}

/* ---- a workload scaled to zero: its group goes ---- */

typedef struct {
  char key[600];
  char ns[254], group[300];
} wl_run;

static void group_deleted(ctl_base *b, const kc_api_result *res, void *ud) {
  wl_run *r = ud;
  int err = res->err == KC_ENOTFOUND || res->err == KC_ECONFLICT ? 0 : res->err;
  if (res->err == 0) {
    ((pg_ctl *)b)->deleted++;
    KC_V(2, "deleted PodGroup %s/%s: its workload scaled to 0", r->ns, r->group);
  } else if (err) {
    KC_WARN("Failed to delete PodGroup %s/%s: %s", r->ns, r->group, res->message);
  }
  ctl_base_done(b, r->key, err, NULL);
  free(r);
}

static void process_workload(ctl_base *b, const char *key, int which, const char *kind,
                             const char *wkey) {
  const json_t *w = kc_store_get(ctl_base_store(b, (size_t)which), wkey);
  const char *uid = w ? meta_str(w, "uid") : NULL;
  wl_run *r = w && uid && ctl_pg_scaled_to_zero(w) ? calloc(1, sizeof(*r)) : NULL;
  if (!r) {
    ctl_base_done(b, key, 0, NULL);
    return;
  }
  copy(r->key, sizeof(r->key), key);
  copy(r->ns, sizeof(r->ns), meta_str(w, "namespace"));
  snprintf(r->group, sizeof(r->group), "%s%s", CTL_PG_NAME_PREFIX, uid);
  char gkey[600];
  kc_store_key(gkey, sizeof(gkey), r->ns, r->group);
  const pg_group *g = kc_store_get(ctl_base_store(b, INF_PGS), gkey);
  /* Only the group this controller made for exactly this workload (Volcano ownedByWorkload). */
  if (!g || strcmp(g->owner_kind, kind) != 0 || strcmp(g->owner_uid, uid) != 0 ||
      strcmp(g->owner_name, meta_str(w, "name") ? meta_str(w, "name") : "") != 0) {
    ctl_base_done(b, key, 0, NULL);
    free(r);
    return;
  }
  kc_ref ref = {"scheduling.volcano.sh", "v1beta1", "podgroups", r->ns, r->group, NULL};
  kc_query q = {.precondition_uid = g->uid};
  int rc = ctl_base_call(b, KC_DELETE, &ref, &q, NULL, group_deleted, r);
  if (rc) {
    ctl_base_done(b, key, rc, NULL);
    free(r);
  }
}

static void process(ctl_base *b, const char *key) {
  if (strncmp(key, "pod/", 4) == 0)
    process_pod(b, key, key + 4);
  else if (strncmp(key, "rs/", 3) == 0)
    process_workload(b, key, INF_RS, "ReplicaSet", key + 3);
  else if (strncmp(key, "sts/", 4) == 0)
    process_workload(b, key, INF_STS, "StatefulSet", key + 4);
  else
    ctl_base_done(b, key, 0, NULL);
}

/* ---- the table entry ---- */

static int pg_init(const ctl_env *env, void **out) {
  pg_ctl *pc = calloc(1, sizeof(*pc));
  if (!pc)
    return KC_ENOMEM;
  *out = pc;
  pc->base.on_synced = all_synced;
  /* With one scheduler name the API server filters the pods (spec.schedulerName is a pod
   * field selector), so the cache holds only pods that may be ours. */
  ctl_inf_def defs[INF_N] = {
      [INF_PODS] = {"", "v1", "pods", NULL, decode_pod, free_pod, on_pod_add, NULL, NULL, NULL,
                    decode_pod_pb},
      [INF_RS] = {"apps", "v1", "replicasets", NULL, NULL, NULL, on_rs, on_rs_update, NULL},
      [INF_STS] = {"apps", "v1", "statefulsets", NULL, NULL, NULL, on_sts, on_sts_update, NULL},
      [INF_PGS] = {"scheduling.volcano.sh", "v1beta1", "podgroups", NULL, decode_pg, free, NULL,
                   NULL, on_pg_delete},
  };
  char sel[300];
  if (env->nschedulers == 1 &&
      (size_t)snprintf(sel, sizeof(sel), "spec.schedulerName=%s", env->schedulers[0]) < sizeof(sel))
    defs[INF_PODS].field_selector = sel;
  int rc = ctl_base_init(&pc->base, env, "pg-controller", defs, INF_N, env->workers_pg, process);
  if (rc == 0)
    rc = kc_store_add_index(ctl_base_store(&pc->base, INF_PODS), "owner", index_pod_owner, NULL);
  return rc;
}

static void free_owner(ctl_base *b) {
  free(b);
}
static void pg_free(void *c) {
  if (!c)
    return;
  pg_ctl *pc = c;
  KC_INFO("pg-controller stopped: %llu PodGroups created, %llu pods annotated, %llu PodGroups "
          "deleted",
          (unsigned long long)pc->created, (unsigned long long)pc->annotated,
          (unsigned long long)pc->deleted);
  ctl_base_close(&pc->base, free_owner);
}

const ctl_controller_def ctl_pg_controller = {
    .name = "pg-controller",
    .informers = "pods (spec.schedulerName), replicasets, statefulsets, podgroups",
    .init = pg_init,
    .start = ctl_base_def_start,
    .synced = ctl_base_def_synced,
    .stop = ctl_base_def_stop,
    .free = pg_free,
};
