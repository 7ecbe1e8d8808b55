/* The podgroup controller's decisions; see ctl_pg.h. Unit-tested in tests/unit/test_ctl_pg.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "ctl_pg.h"
#include "ctl_job.h"
#include "kc_error.h"

static const json_t *meta(const json_t *o) {
  return json_object_get(o, "metadata");
}

static const char *annotation(const json_t *o, const char *key) {
  return json_string_value(json_object_get(json_object_get(meta(o), "annotations"), key));
}

const json_t *ctl_pg_controller_of(const json_t *obj) {
  size_t i;
  const json_t *ref;
  json_array_foreach(json_object_get(meta(obj), "ownerReferences"), i, ref) {
    if (json_is_true(json_object_get(ref, "controller")))
      return ref;
  }
  return NULL;
}

int ctl_pg_name(const json_t *pod, char *buf, size_t cap) {
  const json_t *owner = ctl_pg_controller_of(pod);
  const char *uid = json_string_value(json_object_get(owner ? owner : meta(pod), "uid"));
  if (!uid || !*uid)
    return KC_EINVAL;
  int n = snprintf(buf, cap, "%s%s", CTL_PG_NAME_PREFIX, uid);
  return n > 0 && (size_t)n < cap ? 0 : KC_EINVAL;
}

ctl_pg_verdict ctl_pg_decide_pod(const json_t *pod, const char *const *schedulers, size_t n) {
  const char *sched =
      json_string_value(json_object_get(json_object_get(pod, "spec"), "schedulerName"));
  bool ours = false;
  for (size_t i = 0; sched && i < n; i++)
    ours = ours || strcmp(schedulers[i], sched) == 0;
  if (!ours || json_object_get(meta(pod), "deletionTimestamp"))
    return CTL_PG_IGNORE;
  const char *group = annotation(pod, CTL_PG_GROUP_NAME);
  if (!group || !*group)
    return CTL_PG_ENSURE_AND_ANNOTATE;
  /* A pod already in its own group (its PodGroup may have been deleted under it) keeps it;
   * a pod in any other group (a Volcano Job's, a hand-made one) is not ours. */
  char name[300];
  if (ctl_pg_name(pod, name, sizeof(name)) == 0 && strcmp(name, group) == 0)
    return CTL_PG_ENSURE;
  return CTL_PG_IGNORE;
}

int32_t ctl_pg_min_member(const json_t *owner_annotations) {
  const char *v = json_string_value(json_object_get(owner_annotations, CTL_PG_MIN_MEMBER));
  if (!v || !*v)
    return 1;
  char *end = NULL;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (errno || *end || n < 0 || n > INT32_MAX)
    return 1;
  return (int32_t)n;
}

static void copy_key(json_t *to, const json_t *from, const char *key) {
  json_t *v = json_object_get(from, key);
  if (json_is_string(v))
    json_object_set(to, key, v);
}

/* The PodGroup's owners: the pod's own when one of them is its controller, else the pod. */
static json_t *owner_refs(const json_t *pod) {
  if (ctl_pg_controller_of(pod))
    return json_deep_copy(json_object_get(meta(pod), "ownerReferences"));
  return json_pack("[{s:s,s:s,s:s?,s:s?,s:b,s:b}]", "apiVersion", "v1", "kind", "Pod", "name",
                   json_string_value(json_object_get(meta(pod), "name")), "uid",
                   json_string_value(json_object_get(meta(pod), "uid")), "controller", 1,
                   "blockOwnerDeletion", 1);
}

json_t *ctl_pg_build(const json_t *pod, const char *name, const json_t *owner_annotations,
                     bool inherit) {
  const json_t *spec = json_object_get(pod, "spec");
  const json_t *pod_ann = json_object_get(meta(pod), "annotations");
  const json_t *pod_labels = json_object_get(meta(pod), "labels");
  int32_t min_member = inherit ? ctl_pg_min_member(owner_annotations) : 1;
  json_t *ann = json_object(), *labels = json_object(), *pgspec = json_object();
  json_t *pg =
      json_pack("{s:s,s:s,s:{s:s,s:s?,s:o?,s:o,s:o},s:o,s:{s:s}}", "apiVersion",
                "scheduling.volcano.sh/v1beta1", "kind", "PodGroup", "metadata", "name", name,
                "namespace", json_string_value(json_object_get(meta(pod), "namespace")),
                "ownerReferences", owner_refs(pod), "annotations", ann, "labels", labels, "spec",
                pgspec, "status", "phase", "Pending");
  json_t *mr = ctl__pod_requests_times(spec, min_member);
  if (!pg || !mr) {
    json_decref(pg);
    json_decref(mr);
    return NULL;
  }
  json_object_set_new(pgspec, "minMember", json_integer(min_member));
  copy_key(pgspec, spec, "priorityClassName");
  json_object_set_new(pgspec, "minResources", mr);
  const char *k;
  json_t *v;
  if (inherit)
    json_object_foreach((json_t *)owner_annotations, k,
                        v) if (strncmp(k, CTL_PG_INHERIT_PREFIX, strlen(CTL_PG_INHERIT_PREFIX)) ==
                                   0 &&
                               json_is_string(v)) json_object_set(ann, k, v);
  /* The pod's own annotations win over inherited ones. */
  const char *queue = json_string_value(json_object_get(pod_ann, CTL_PG_QUEUE_NAME));
  if (queue)
    json_object_set_new(pgspec, "queue", json_string(queue));
  copy_key(ann, pod_ann, "volcano.sh/preemptable");
  copy_key(ann, pod_ann, "volcano.sh/cooldown-time");
  copy_key(ann, pod_ann, "volcano.sh/revocable-zone");
  copy_key(labels, pod_labels, "volcano.sh/preemptable");
  copy_key(labels, pod_labels, "volcano.sh/cooldown-time");
  if (json_object_get(pod_ann, "volcano.sh/jdb-min-available"))
    copy_key(ann, pod_ann, "volcano.sh/jdb-min-available");
  else
    copy_key(ann, pod_ann, "volcano.sh/jdb-max-unavailable");
  return pg;
}

bool ctl_pg_scaled_to_zero(const json_t *workload) {
  const json_t *r = json_object_get(json_object_get(workload, "spec"), "replicas");
  return json_is_integer(r) && json_integer_value(r) == 0;
}

/* ---- pods in Kubernetes' protobuf ---- */

bool ctl_pg_pb_candidate(const K8s__Pod *k, const char *const *schedulers, size_t n) {
  const char *sched = k->spec ? k->spec->scheduler_name : NULL;
  bool ours = false;
  for (size_t i = 0; sched && i < n; i++)
    ours = ours || strcmp(schedulers[i], sched) == 0;
  if (!ours || !k->metadata || k->metadata->deletion_timestamp)
    return false;
  const char *group = ctl_pb_annotation(k->metadata, CTL_PG_GROUP_NAME);
  const K8s__OwnerReference *owner = NULL;
  for (size_t i = 0; !owner && i < k->metadata->n_owner_references; i++)
    if (k->metadata->owner_references[i]->controller)
      owner = k->metadata->owner_references[i];
  const char *uid = owner ? owner->uid : k->metadata->uid;
  char own[300];
  return !group || !*group ||
         (uid && *uid &&
          (size_t)snprintf(own, sizeof(own), "%s%s", CTL_PG_NAME_PREFIX, uid) < sizeof(own) &&
          strcmp(own, group) == 0);
}

/* An empty string of a protobuf field is what JSON's omitempty leaves out. */
static const char *nz(const char *s) {
  return s && *s ? s : NULL;
}

static json_t *pb_map_json(void *const *entries, size_t n) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < n; i++) {
    const K8s__ObjectMeta__LabelsEntry *e = entries[i];
    if (e->key)
      json_object_set_new(o, e->key, json_string(e->value ? e->value : ""));
  }
  return o;
}

static json_t *pb_qty_json(K8s__ResourceRequirements__LimitsEntry *const *e, size_t n) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < n; i++)
    if (e[i]->key && e[i]->value && e[i]->value->string)
      json_object_set_new(o, e[i]->key, json_string(e[i]->value->string));
  return o;
}

static json_t *pb_res_json(const K8s__ResourceRequirements *r) {
  if (!r)
    return json_object();
  return json_pack(
      "{s:o,s:o}", "requests",
      pb_qty_json((K8s__ResourceRequirements__LimitsEntry *const *)r->requests, r->n_requests),
      "limits", pb_qty_json(r->limits, r->n_limits));
}

static json_t *pb_containers_json(K8s__Container *const *c, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    json_array_append_new(a, json_pack("{s:s*,s:s*,s:o}", "name", nz(c[i]->name), "restartPolicy",
                                       nz(c[i]->restart_policy), "resources",
                                       pb_res_json(c[i]->resources)));
  return a;
}

static json_t *pb_owners_json(const K8s__ObjectMeta *m) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < m->n_owner_references; i++) {
    const K8s__OwnerReference *r = m->owner_references[i];
    json_t *o = json_pack("{s:s*,s:s*,s:s*,s:s*}", "apiVersion", nz(r->api_version), "kind",
                          nz(r->kind), "name", nz(r->name), "uid", nz(r->uid));
    if (o && r->has_controller)
      json_object_set_new(o, "controller", json_boolean(r->controller));
    if (o && r->has_block_owner_deletion)
      json_object_set_new(o, "blockOwnerDeletion", json_boolean(r->block_owner_deletion));
    json_array_append_new(a, o);
  }
  return a;
}

json_t *ctl_pg_pod_json(const K8s__Pod *k) {
  const K8s__ObjectMeta *m = k->metadata;
  K8s__PodSpec empty = K8S__POD_SPEC__INIT;
  const K8s__PodSpec *s = k->spec ? k->spec : &empty;
  return json_pack(
      "{s:{s:s*,s:s*,s:s*,s:o,s:o,s:o},s:{s:s*,s:s*,s:o,s:o,s:o,s:o}}", "metadata", "name",
      nz(m->name), "namespace", nz(m->namespace_), "uid", nz(m->uid), "annotations",
      pb_map_json((void *const *)m->annotations, m->n_annotations), "labels",
      pb_map_json((void *const *)m->labels, m->n_labels), "ownerReferences", pb_owners_json(m),
      "spec", "schedulerName", nz(s->scheduler_name), "priorityClassName",
      nz(s->priority_class_name), "containers", pb_containers_json(s->containers, s->n_containers),
      "initContainers", pb_containers_json(s->init_containers, s->n_init_containers), "overhead",
      pb_qty_json((K8s__ResourceRequirements__LimitsEntry *const *)s->overhead, s->n_overhead),
      "resources", pb_res_json(s->resources));
}
