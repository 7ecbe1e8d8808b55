/* The podgroup controller's decisions; see ctl_pg.h. Unit-tested in tests/unit/test_ctl_pg.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "ctl_pg.h"
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
