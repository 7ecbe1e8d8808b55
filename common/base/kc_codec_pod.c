/* core/v1 Pod and Node JSON to the scheduling views of pod.proto.
 *
 * Only what the scheduler reads is kept, so that a cache of many pods stays small: empty
 * strings are never allocated (the proto3 default stays in place), and resources are
 * reduced to integers at decode time. Requests follow Kubernetes' PodRequests rule in
 * kc_podres.c, the one the controller uses too (pod-level resources included). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_codec.h"
#include "kc_codec_int.h"
#include "kc_error.h"
#include "kc_flags.h"
#include "kc_podres.h"
#include "kc_time.h"

/* ---- small JSON accessors that report the path ---- */

/* *out = the member, or NULL when absent or null; an error naming WHAT when it is there with
 * another JSON type. */
static int get_typed(kc__cctx *c, const json_t *parent, const char *key, json_type type,
                     const char *what, json_t **out) {
  json_t *v = parent ? json_object_get(parent, key) : NULL;
  *out = NULL;
  if (!v || json_is_null(v))
    return 0;
  if (json_typeof(v) != type) {
    size_t mark = kc__path_key(c, key);
    int rc = kc__fail(c, KC_EINVAL, "expected %s", what);
    kc__path_pop(c, mark);
    return rc;
  }
  *out = v;
  return 0;
}

static int get_object(kc__cctx *c, const json_t *parent, const char *key, json_t **out) {
  return get_typed(c, parent, key, JSON_OBJECT, "object", out);
}

static int get_array(kc__cctx *c, const json_t *parent, const char *key, json_t **out) {
  return get_typed(c, parent, key, JSON_ARRAY, "array", out);
}

/* Replaces *dst (a proto3 string still holding the shared empty default) with a copy of
 * the member; absent, null and "" leave the default, which costs no memory. */
static int get_string(kc__cctx *c, const json_t *parent, const char *key, char **dst) {
  json_t *v = parent ? json_object_get(parent, key) : NULL;
  if (!v || json_is_null(v))
    return 0;
  size_t mark = kc__path_key(c, key);
  int rc = 0;
  if (!json_is_string(v)) {
    rc = kc__fail(c, KC_EINVAL, "expected string");
  } else if (json_string_length(v) > 0) {
    char *s;
    rc = kc__dup_string(c, v, &s);
    if (rc == 0)
      *dst = s;
  }
  if (rc == 0)
    kc__path_pop(c, mark);
  return rc;
}

/* A borrowed string member or NULL; an error when present and not a string. */
static int peek_string(kc__cctx *c, const json_t *parent, const char *key, const char **out) {
  json_t *v;
  int rc = get_typed(c, parent, key, JSON_STRING, "string", &v);
  *out = v ? json_string_value(v) : NULL;
  return rc;
}

static int get_int(kc__cctx *c, const json_t *parent, const char *key, int64_t min, int64_t max,
                   int64_t *dst, bool *found) {
  json_t *v = parent ? json_object_get(parent, key) : NULL;
  if (found)
    *found = false;
  if (!v || json_is_null(v))
    return 0;
  size_t mark = kc__path_key(c, key);
  if (!json_is_integer(v))
    return kc__fail(c, KC_EINVAL, "expected integer");
  json_int_t i = json_integer_value(v);
  if (i < min || i > max)
    return kc__fail(c, KC_ERANGE, "integer %" JSON_INTEGER_FORMAT " out of range", i);
  *dst = i;
  if (found)
    *found = true;
  kc__path_pop(c, mark);
  return 0;
}

static int get_time(kc__cctx *c, const json_t *parent, const char *key, int64_t *dst) {
  const char *s;
  int rc = peek_string(c, parent, key, &s);
  if (rc < 0 || !s)
    return rc;
  if (kc_time_parse(s, dst) < 0) {
    size_t mark = kc__path_key(c, key);
    rc = kc__fail(c, KC_EPARSE, "invalid RFC 3339 time \"%.40s\"", s);
    kc__path_pop(c, mark);
  }
  return rc;
}

static int decode_field_at(kc__cctx *c, ProtobufCMessage *m, const char *field,
                           const json_t *parent, const char *key) {
  json_t *v = parent ? json_object_get(parent, key) : NULL;
  if (!v || json_is_null(v))
    return 0;
  size_t mark = kc__path_key(c, key);
  int rc = kc__decode_field(c, m, field, v);
  if (rc == 0)
    kc__path_pop(c, mark);
  return rc;
}

/* ---- resource arithmetic on Kiln__Resource values ---- */

static void res_reset(Kiln__Resource *r) {
  for (size_t i = 0; i < r->n_scalar; i++)
    kc_msg_free(r->scalar[i]);
  free(r->scalar);
  kiln__resource__init(r);
}

/* ---- taints and tolerations ---- */

Kiln__TaintEffect kc__taint_effect(const char *s) {
  static const struct {
    const char *name;
    Kiln__TaintEffect effect;
  } effects[] = {
      {"NoSchedule", KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE},
      {"PreferNoSchedule", KILN__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE},
      {"NoExecute", KILN__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE},
  };
  if (!s || !*s)
    return KILN__TAINT_EFFECT__TAINT_EFFECT_ALL;
  for (size_t i = 0; i < sizeof(effects) / sizeof(effects[0]); i++)
    if (strcmp(s, effects[i].name) == 0)
      return effects[i].effect;
  return KILN__TAINT_EFFECT__TAINT_EFFECT_OTHER;
}

static int taint_effect(kc__cctx *c, const json_t *obj, Kiln__TaintEffect *out) {
  const char *s;
  int rc = peek_string(c, obj, "effect", &s);
  *out = kc__taint_effect(rc < 0 ? NULL : s);
  return rc;
}

/* The key, value and effect that a toleration and a taint share. */
static int key_value_effect(kc__cctx *c, const json_t *t, char **key, char **value,
                            Kiln__TaintEffect *effect) {
  int rc = get_string(c, t, "key", key);
  if (rc == 0)
    rc = get_string(c, t, "value", value);
  if (rc == 0)
    rc = taint_effect(c, t, effect);
  return rc;
}

static int tolerations(kc__cctx *c, Kiln__Pod *p, const json_t *spec) {
  json_t *arr;
  int rc = get_array(c, spec, "tolerations", &arr);
  size_t n = arr ? json_array_size(arr) : 0;
  if (rc < 0 || n == 0)
    return rc;
  size_t m0 = kc__path_key(c, "tolerations");
  if (!(p->tolerations = calloc(n, sizeof(*p->tolerations))))
    return kc__fail(c, KC_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *t = json_array_get(arr, i);
    size_t m1 = kc__path_index(c, i);
    if (!json_is_object(t))
      return kc__fail(c, KC_EINVAL, "expected object");
    Kiln__Toleration *tol = malloc(sizeof(*tol));
    if (!tol)
      return kc__fail(c, KC_ENOMEM, "out of memory");
    kiln__toleration__init(tol);
    p->tolerations[p->n_tolerations++] = tol;
    const char *op = NULL;
    bool has_secs = false;
    rc = key_value_effect(c, t, &tol->key, &tol->value, &tol->effect);
    if (rc == 0)
      rc = get_int(c, t, "tolerationSeconds", INT64_MIN, INT64_MAX, &tol->toleration_seconds,
                   &has_secs);
    tol->has_toleration_seconds = has_secs;
    if (rc == 0)
      rc = peek_string(c, t, "operator", &op);
    if (rc < 0)
      return rc;
    if (op && strcmp(op, "Exists") == 0) {
      tol->operator_ = KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS;
    } else if (op && *op && strcmp(op, "Equal") != 0) {
      kc__path_key(c, "operator");
      return kc__fail(c, KC_EINVAL, "unknown operator \"%.20s\"", op);
    }
    kc__path_pop(c, m1);
  }
  kc__path_pop(c, m0);
  return 0;
}

static int taints(kc__cctx *c, Kiln__Node *node, const json_t *spec) {
  json_t *arr;
  int rc = get_array(c, spec, "taints", &arr);
  size_t n = arr ? json_array_size(arr) : 0;
  if (rc < 0 || n == 0)
    return rc;
  size_t m0 = kc__path_key(c, "taints");
  if (!(node->taints = calloc(n, sizeof(*node->taints))))
    return kc__fail(c, KC_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *t = json_array_get(arr, i);
    size_t m1 = kc__path_index(c, i);
    if (!json_is_object(t))
      return kc__fail(c, KC_EINVAL, "expected object");
    Kiln__Taint *taint = malloc(sizeof(*taint));
    if (!taint)
      return kc__fail(c, KC_ENOMEM, "out of memory");
    kiln__taint__init(taint);
    node->taints[node->n_taints++] = taint;
    rc = key_value_effect(c, t, &taint->key, &taint->value, &taint->effect);
    if (rc < 0)
      return rc;
    kc__path_pop(c, m1);
  }
  kc__path_pop(c, m0);
  return 0;
}

/* ---- pod ---- */

/* Requests of one container into *out (reset first); collects host ports for app
 * containers. */
static int container(kc__cctx *c, Kiln__Pod *p, const json_t *ct, Kiln__Resource *out,
                     bool *sidecar, bool app) {
  res_reset(out);
  if (!json_is_object(ct))
    return kc__fail(c, KC_EINVAL, "expected object");
  json_t *resources, *requests, *ports;
  int rc = get_object(c, ct, "resources", &resources);
  if (rc == 0)
    rc = get_object(c, resources, "requests", &requests);
  if (rc == 0 && requests) {
    size_t m1 = kc__path_key(c, "resources");
    size_t m2 = kc__path_key(c, "requests");
    rc = kc__resource_list_add(c, requests, out);
    if (rc < 0)
      return rc;
    kc__path_pop(c, m2);
    kc__path_pop(c, m1);
  }
  if (rc < 0)
    return rc;
  if (sidecar) {
    const char *policy;
    rc = peek_string(c, ct, "restartPolicy", &policy);
    if (rc < 0)
      return rc;
    *sidecar = policy && strcmp(policy, "Always") == 0;
  }
  if (!app)
    return 0;
  rc = get_array(c, ct, "ports", &ports);
  for (size_t i = 0; rc == 0 && ports && i < json_array_size(ports); i++) {
    json_t *port = json_array_get(ports, i);
    size_t m1 = kc__path_key(c, "ports");
    kc__path_index(c, i);
    if (!json_is_object(port))
      return kc__fail(c, KC_EINVAL, "expected object");
    int64_t hp = 0;
    rc = get_int(c, port, "hostPort", 0, 65535, &hp, NULL);
    if (rc < 0)
      return rc;
    if (hp > 0) {
      Kiln__HostPort **arr = realloc(p->host_ports, (p->n_host_ports + 1) * sizeof(*arr));
      if (!arr)
        return kc__fail(c, KC_ENOMEM, "out of memory");
      p->host_ports = arr;
      Kiln__HostPort *h = malloc(sizeof(*h));
      if (!h)
        return kc__fail(c, KC_ENOMEM, "out of memory");
      kiln__host_port__init(h);
      p->host_ports[p->n_host_ports++] = h;
      h->port = (int32_t)hp;
      rc = get_string(c, port, "protocol", &h->protocol);
      if (rc == 0)
        rc = get_string(c, port, "hostIP", &h->host_ip);
      if (rc < 0)
        return rc;
    }
    kc__path_pop(c, m1);
  }
  return rc;
}

/* A new Resource from an effective ResourceList, with pods set to one; NULL when out of
 * memory. */
static Kiln__Resource *res_from_list(const kc_reslist *l) {
  Kiln__Resource *r = kc__resource_new();
  for (size_t i = 0; r && i < l->n; i++)
    if (kc__resource_put(r, l->e[i].name, &l->e[i].q) < 0) {
      kc_msg_free(r);
      return NULL;
    }
  if (r)
    r->pods = 1;
  return r;
}

/* Every container's requests are checked (an error names the path) and host ports are
 * collected here; the totals come from the rule the controller shares (kc_podres.h). */
static int check_containers(kc__cctx *c, Kiln__Pod *p, const json_t *spec) {
  Kiln__Resource one;
  kiln__resource__init(&one);
  json_t *containers, *inits, *overhead;
  int rc = get_array(c, spec, "containers", &containers);
  if (rc == 0)
    rc = get_array(c, spec, "initContainers", &inits);
  if (rc == 0)
    rc = get_object(c, spec, "overhead", &overhead);
  for (size_t i = 0; rc == 0 && containers && i < json_array_size(containers); i++) {
    size_t mark = kc__path_key(c, "containers");
    kc__path_index(c, i);
    rc = container(c, p, json_array_get(containers, i), &one, NULL, true);
    if (rc == 0)
      kc__path_pop(c, mark);
  }
  for (size_t i = 0; rc == 0 && inits && i < json_array_size(inits); i++) {
    size_t mark = kc__path_key(c, "initContainers");
    kc__path_index(c, i);
    bool sidecar = false;
    rc = container(c, p, json_array_get(inits, i), &one, &sidecar, false);
    if (rc == 0)
      kc__path_pop(c, mark);
  }
  res_reset(&one);
  if (rc == 0 && overhead) {
    size_t mark = kc__path_key(c, "overhead");
    rc = kc__resource_list_add(c, overhead, &one);
    if (rc == 0)
      kc__path_pop(c, mark);
  }
  res_reset(&one);
  return rc;
}

int kc__pod_requests(Kiln__Pod *p, const kc_podres_src *src, const void *spec) {
  kc_reslist all = {0}, run = {0};
  int rc = kc_pod_resources_src(src, spec, "requests", 0, &all);
  if (rc == 0)
    rc = kc_pod_resources_src(src, spec, "requests", KC_PODRES_NO_INIT, &run);
  if (rc == 0) {
    p->requests = res_from_list(&all);
    p->container_requests = res_from_list(&run);
    if (!p->requests || !p->container_requests)
      rc = KC_ENOMEM;
  }
  kc_reslist_free(&all);
  kc_reslist_free(&run);
  if (rc < 0)
    return rc;
  const Kiln__Resource *r = p->requests;
  bool none = r->milli_cpu == 0 && r->memory == 0;
  for (size_t i = 0; none && i < r->n_scalar; i++)
    none = r->scalar[i]->milli_value == 0;
  p->best_effort = none;
  return 0;
}

static int pod_resources(kc__cctx *c, Kiln__Pod *p, const json_t *spec) {
  int rc = check_containers(c, p, spec);
  if (rc == 0 && kc__pod_requests(p, &kc_podres_json, spec) < 0)
    rc = kc__fail(c, KC_ENOMEM, "out of memory");
  return rc;
}

/* aff.<key>.requiredDuringScheduling... and preferredDuringScheduling... into the two
 * fields of t (terms decode field by field from their JSON names). */
static int inter_pod_terms(kc__cctx *c, Kiln__InterPodTerms *t, const json_t *aff, const char *key,
                           const char *required, const char *preferred) {
  json_t *pa;
  int rc = get_object(c, aff, key, &pa);
  if (rc < 0 || !pa)
    return rc;
  size_t m = kc__path_key(c, key);
  rc = decode_field_at(c, &t->base, required, pa, "requiredDuringSchedulingIgnoredDuringExecution");
  if (rc == 0)
    rc = decode_field_at(c, &t->base, preferred, pa,
                         "preferredDuringSchedulingIgnoredDuringExecution");
  if (rc == 0)
    kc__path_pop(c, m);
  return rc;
}

static int pod_affinity(kc__cctx *c, Kiln__Pod *p, const json_t *spec) {
  json_t *aff, *na = NULL, *req;
  int rc = get_object(c, spec, "affinity", &aff);
  if (rc < 0 || !aff)
    return rc;
  size_t m0 = kc__path_key(c, "affinity");
  p->has_pod_affinity = json_object_get(aff, "podAffinity") != NULL ||
                        json_object_get(aff, "podAntiAffinity") != NULL;
  rc = inter_pod_terms(c, p->inter_pod, aff, "podAffinity", "required_affinity",
                       "preferred_affinity");
  if (rc == 0)
    rc = inter_pod_terms(c, p->inter_pod, aff, "podAntiAffinity", "required_anti_affinity",
                         "preferred_anti_affinity");
  if (rc == 0)
    rc = get_object(c, aff, "nodeAffinity", &na);
  if (rc < 0 || !na) {
    if (rc == 0)
      kc__path_pop(c, m0);
    return rc;
  }
  size_t m1 = kc__path_key(c, "nodeAffinity");
  rc = get_object(c, na, "requiredDuringSchedulingIgnoredDuringExecution", &req);
  if (rc == 0 && req) {
    size_t m2 = kc__path_key(c, "requiredDuringSchedulingIgnoredDuringExecution");
    rc = decode_field_at(c, &p->base, "required_node_terms", req, "nodeSelectorTerms");
    if (rc == 0)
      kc__path_pop(c, m2);
  }
  if (rc == 0)
    rc = decode_field_at(c, &p->base, "preferred_node_terms", na,
                         "preferredDuringSchedulingIgnoredDuringExecution");
  if (rc == 0) {
    kc__path_pop(c, m1);
    kc__path_pop(c, m0);
  }
  return rc;
}

/* spec.initContainers[].image then spec.containers[].image into packed_images, each ended
 * by a NUL ("" when a container names none), for ImageLocality. */
static int pod_images(kc__cctx *c, Kiln__Pod *p, const json_t *spec) {
  static const char *const lists[] = {"initContainers", "containers"};
  json_t *arr[2];
  int rc = get_array(c, spec, lists[0], &arr[0]);
  if (rc == 0)
    rc = get_array(c, spec, lists[1], &arr[1]);
  size_t total = 0;
  for (int pass = 0; rc == 0 && pass < 2; pass++) {
    if (pass == 1 && (total == 0 || !(p->packed_images.data = malloc(total))))
      return total == 0 ? 0 : kc__fail(c, KC_ENOMEM, "out of memory");
    for (int l = 0; l < 2; l++) {
      for (size_t i = 0; arr[l] && i < json_array_size(arr[l]); i++) {
        json_t *img = json_object_get(json_array_get(arr[l], i), "image");
        size_t n = json_is_string(img) ? json_string_length(img) : 0;
        const char *v = n ? json_string_value(img) : "";
        if (pass == 0 &&
            ((img && !json_is_null(img) && !json_is_string(img)) || (n && memchr(v, '\0', n)))) {
          kc__path_key(c, lists[l]);
          kc__path_index(c, i);
          kc__path_key(c, "image");
          return kc__fail(c, KC_EINVAL,
                          json_is_string(img) ? "string contains a NUL byte" : "expected string");
        }
        if (pass == 0) {
          total += n + 1;
          continue;
        }
        memcpy(p->packed_images.data + p->packed_images.len, n ? v : "", n + 1);
        p->packed_images.len += n + 1;
      }
    }
  }
  return rc;
}

/* spec.schedulingGates: the names, kept so that the scheduler never places a gated pod (the
 * API server refuses its binding) and the cache sees the gates go. */
static int scheduling_gates(kc__cctx *c, Kiln__Pod *p, const json_t *spec) {
  json_t *arr;
  int rc = get_array(c, spec, "schedulingGates", &arr);
  size_t n = arr ? json_array_size(arr) : 0;
  if (rc < 0 || n == 0)
    return rc;
  size_t m0 = kc__path_key(c, "schedulingGates");
  if (!(p->scheduling_gates = calloc(n, sizeof(*p->scheduling_gates))))
    return kc__fail(c, KC_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *g = json_array_get(arr, i);
    size_t m1 = kc__path_index(c, i);
    json_t *name = json_is_object(g) ? json_object_get(g, "name") : NULL;
    if (!json_is_string(name))
      return kc__fail(c, KC_EINVAL, "expected an object with a string name");
    if ((rc = kc__dup_string(c, name, &p->scheduling_gates[p->n_scheduling_gates])) < 0)
      return rc;
    p->n_scheduling_gates++;
    kc__path_pop(c, m1);
  }
  kc__path_pop(c, m0);
  return 0;
}

static bool volume_read(const Kiln__PodVolume *v) {
  return v->persistent_volume_claim || v->ephemeral || v->gce_persistent_disk ||
         v->aws_elastic_block_store || v->iscsi || v->rbd;
}

void kc__pod_volumes_prune(Kiln__Pod *p) {
  size_t k = 0;
  for (size_t i = 0; i < p->n_volumes; i++) {
    if (p->volumes[i] && volume_read(p->volumes[i]))
      p->volumes[k++] = p->volumes[i];
    else
      kc_msg_free(p->volumes[i]);
  }
  p->n_volumes = k;
  if (k == 0) {
    free(p->volumes);
    p->volumes = NULL;
  }
}

/* spec.volumes: the ones the volume predicates read. */
static int pod_volumes(kc__cctx *c, Kiln__Pod *p, const json_t *spec) {
  int rc = decode_field_at(c, &p->base, "volumes", spec, "volumes");
  if (rc == 0)
    kc__pod_volumes_prune(p);
  return rc;
}

static int pod_spec(kc__cctx *c, Kiln__Pod *p, const json_t *spec) {
  int64_t prio = 0;
  int rc = get_string(c, spec, "nodeName", &p->node_name);
  if (rc == 0)
    rc = get_string(c, spec, "schedulerName", &p->scheduler_name);
  if (rc == 0)
    rc = get_string(c, spec, "priorityClassName", &p->priority_class_name);
  if (rc == 0)
    rc = get_string(c, spec, "preemptionPolicy", &p->preemption_policy);
  if (rc == 0)
    rc = get_int(c, spec, "priority", INT32_MIN, INT32_MAX, &prio, NULL);
  p->priority = (int32_t)prio;
  if (rc == 0)
    rc = decode_field_at(c, &p->base, "node_selector", spec, "nodeSelector");
  if (rc == 0)
    rc = tolerations(c, p, spec);
  if (rc == 0)
    rc = scheduling_gates(c, p, spec);
  if (rc == 0)
    rc = decode_field_at(c, &p->base, "resource_claims", spec, "resourceClaims");
  if (rc == 0)
    rc = pod_volumes(c, p, spec);
  if (rc == 0)
    rc = pod_images(c, p, spec);
  /* The inter-pod terms go into a message of their own that only pods with some keep. */
  if (rc == 0 && !(p->inter_pod = malloc(sizeof(*p->inter_pod))))
    rc = KC_ENOMEM;
  if (rc == 0)
    kiln__inter_pod_terms__init(p->inter_pod);
  if (rc == 0)
    rc = pod_affinity(c, p, spec);
  if (rc == 0)
    rc = decode_field_at(c, &p->inter_pod->base, "topology_spread_constraints", spec,
                         "topologySpreadConstraints");
  if (rc == 0) {
    Kiln__InterPodTerms *t = p->inter_pod;
    if (!t->n_required_affinity && !t->n_preferred_affinity && !t->n_required_anti_affinity &&
        !t->n_preferred_anti_affinity && !t->n_topology_spread_constraints) {
      kc_msg_free(&t->base);
      p->inter_pod = NULL;
    }
  }
  if (rc == 0)
    rc = pod_resources(c, p, spec);
  return rc;
}

/* strconv.ParseBool's true spellings; anything else (including its false ones) is false. */
static bool truthy(const char *v) {
  static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
  for (size_t i = 0; v && i < sizeof(yes) / sizeof(yes[0]); i++)
    if (strcmp(v, yes[i]) == 0)
      return true;
  return false;
}

void kc__pod_volcano_keys(Kiln__Pod *p, const char *ann_preempt, const char *label_preempt,
                          const char *label_cooldown, const char *ann_cooldown) {
  /* Volcano reads the preemptable annotation first, then the label. */
  p->preemptable = ann_preempt ? truthy(ann_preempt) : truthy(label_preempt);
  p->not_preemptable = (ann_preempt || label_preempt) && !p->preemptable;
  /* cdp reads the cooldown label first, then the annotation. */
  const char *cd = label_cooldown ? label_cooldown : ann_cooldown;
  int64_t ns = 0;
  if (cd && kc_parse_duration(cd, &ns) == 0 && ns > 0)
    p->cooldown_ms = ns / 1000000;
}

static int owner(kc__cctx *c, Kiln__Pod *p, const json_t *meta) {
  json_t *refs;
  int rc = get_array(c, meta, "ownerReferences", &refs);
  for (size_t i = 0; rc == 0 && refs && i < json_array_size(refs); i++) {
    json_t *ref = json_array_get(refs, i);
    if (!json_is_true(json_object_get(ref, "controller")))
      continue;
    size_t mark = kc__path_key(c, "ownerReferences");
    kc__path_index(c, i);
    rc = get_string(c, ref, "kind", &p->owner_kind);
    if (rc == 0)
      rc = get_string(c, ref, "name", &p->owner_name);
    if (rc == 0)
      rc = get_string(c, ref, "uid", &p->owner_uid);
    if (rc == 0)
      kc__path_pop(c, mark);
    break;
  }
  return rc;
}

/* metadata.labels into packed_labels: key NUL value NUL, for each label. */
static int pack_labels(kc__cctx *c, Kiln__Pod *p, const json_t *labels) {
  size_t len = 0;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)labels, k, v) {
    if (!json_is_string(v)) {
      size_t mark = kc__path_key(c, "labels");
      kc__path_mapkey(c, k);
      int rc = kc__fail(c, KC_EPARSE, "label value is not a string");
      kc__path_pop(c, mark);
      return rc;
    }
    len += strlen(k) + json_string_length(v) + 2;
  }
  if (len == 0)
    return 0;
  uint8_t *buf = malloc(len);
  if (!buf)
    return KC_ENOMEM;
  size_t off = 0;
  json_object_foreach((json_t *)labels, k, v) {
    size_t kl = strlen(k) + 1, vl = json_string_length(v);
    memcpy(buf + off, k, kl);
    off += kl;
    memcpy(buf + off, json_string_value(v), vl);
    off += vl;
    buf[off++] = '\0';
  }
  p->packed_labels.data = buf;
  p->packed_labels.len = len;
  return 0;
}

static int pod_meta(kc__cctx *c, Kiln__Pod *p, const json_t *meta) {
  json_t *ann, *labels;
  int rc = get_string(c, meta, "namespace", &p->namespace_);
  if (rc == 0)
    rc = get_string(c, meta, "name", &p->name);
  if (rc == 0)
    rc = get_string(c, meta, "uid", &p->uid);
  if (rc == 0)
    rc = get_string(c, meta, "resourceVersion", &p->resource_version);
  if (rc == 0)
    rc = get_time(c, meta, "creationTimestamp", &p->creation_time);
  if (rc == 0)
    rc = get_time(c, meta, "deletionTimestamp", &p->deletion_time);
  if (rc == 0)
    rc = get_object(c, meta, "annotations", &ann);
  if (rc == 0)
    rc = get_object(c, meta, "labels", &labels);
  if (rc == 0 && labels)
    rc = pack_labels(c, p, labels);
  if (rc == 0 && ann) {
    size_t mark = kc__path_key(c, "annotations");
    rc = get_string(c, ann, "scheduling.k8s.io/group-name", &p->group_name);
    if (rc == 0)
      rc = get_string(c, ann, "volcano.sh/task-spec", &p->task_name);
    if (rc == 0)
      kc__path_pop(c, mark);
  }
  if (rc == 0) {
    static const char preempt[] = "volcano.sh/preemptable", cooldown[] = "volcano.sh/cooldown-time";
    json_t *a = ann ? json_object_get(ann, preempt) : NULL;
    json_t *l = labels ? json_object_get(labels, preempt) : NULL;
    /* A present key that is not a string counts as present and false. */
    kc__pod_volcano_keys(p, a ? (json_is_string(a) ? json_string_value(a) : "") : NULL,
                         l ? (json_is_string(l) ? json_string_value(l) : "") : NULL,
                         json_string_value(labels ? json_object_get(labels, cooldown) : NULL),
                         json_string_value(ann ? json_object_get(ann, cooldown) : NULL));
  }
  if (rc == 0)
    rc = owner(c, p, meta);
  return rc;
}

Kiln__PodPhase kc__pod_phase(const char *s) {
  static const struct {
    const char *name;
    Kiln__PodPhase phase;
  } phases[] = {
      {"Pending", KILN__POD_PHASE__POD_PHASE_PENDING},
      {"Running", KILN__POD_PHASE__POD_PHASE_RUNNING},
      {"Succeeded", KILN__POD_PHASE__POD_PHASE_SUCCEEDED},
      {"Failed", KILN__POD_PHASE__POD_PHASE_FAILED},
  };
  if (!s)
    return KILN__POD_PHASE__POD_PHASE_UNSET;
  for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
    if (strcmp(s, phases[i].name) == 0)
      return phases[i].phase;
  return KILN__POD_PHASE__POD_PHASE_UNKNOWN;
}

/* The PodScheduled=True condition's lastTransitionTime (the cdp plugin's clock). */
static int scheduled_since(kc__cctx *c, Kiln__Pod *p, const json_t *status) {
  json_t *conds = json_object_get(status, "conditions");
  for (size_t i = 0; json_is_array(conds) && i < json_array_size(conds); i++) {
    json_t *cond = json_array_get(conds, i);
    const char *type = json_string_value(json_object_get(cond, "type"));
    const char *st = json_string_value(json_object_get(cond, "status"));
    if (type && st && strcmp(type, "PodScheduled") == 0 && strcmp(st, "True") == 0)
      return get_time(c, cond, "lastTransitionTime", &p->scheduled_time);
  }
  return 0;
}

/* An annotation of a metadata object (json_t), for kc__pod_devices / kc__node_devices. */
static const char *json_ann(const void *meta, const char *key) {
  return json_string_value(json_object_get(json_object_get(meta, "annotations"), key));
}

int kc_pod_decode(const json_t *json, Kiln__Pod **out, char *err, size_t errlen) {
  kc__cctx c;
  kc__cctx_init(&c, err, errlen);
  if (!out)
    return KC_EINVAL;
  *out = NULL;
  if (!json_is_object(json))
    return kc__fail(&c, KC_EINVAL, "expected object");
  Kiln__Pod *p = malloc(sizeof(*p));
  if (!p)
    return kc__fail(&c, KC_ENOMEM, "out of memory");
  kiln__pod__init(p);
  json_t *meta, *spec, *status;
  const char *phase = NULL;
  int rc = get_object(&c, json, "metadata", &meta);
  if (rc == 0)
    rc = get_object(&c, json, "spec", &spec);
  if (rc == 0)
    rc = get_object(&c, json, "status", &status);
  if (rc == 0 && meta) {
    size_t mark = kc__path_key(&c, "metadata");
    rc = pod_meta(&c, p, meta);
    if (rc == 0)
      kc__path_pop(&c, mark);
  }
  if (rc == 0) {
    size_t mark = kc__path_key(&c, "spec");
    rc = pod_spec(&c, p, spec);
    if (rc == 0)
      kc__path_pop(&c, mark);
  }
  if (rc == 0 && status) {
    size_t mark = kc__path_key(&c, "status");
    rc = peek_string(&c, status, "phase", &phase);
    if (rc == 0)
      rc = get_string(&c, status, "nominatedNodeName", &p->nominated_node_name);
    if (rc == 0)
      rc =
          decode_field_at(&c, &p->base, "resource_claim_statuses", status, "resourceClaimStatuses");
    if (rc == 0)
      rc = scheduled_since(&c, p, status);
    if (rc == 0)
      kc__path_pop(&c, mark);
  }
  p->phase = kc__pod_phase(phase);
  if (rc == 0 && kc__pod_devices(p, &kc_podres_json, spec, json_ann, meta) < 0)
    rc = kc__fail(&c, KC_ENOMEM, "out of memory");
  if (rc == 0 && kc__pod_numa(p, &kc_podres_json, spec, json_ann, meta) < 0)
    rc = kc__fail(&c, KC_ENOMEM, "out of memory");
  if (rc < 0) {
    kc_msg_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

/* ---- node ---- */

/* One entry of status.images: its names and sizeBytes. */
static int node_image(kc__cctx *c, Kiln__NodeImage *im, const json_t *j) {
  json_t *names;
  if (!json_is_object(j))
    return kc__fail(c, KC_EINVAL, "expected object");
  int rc = get_array(c, j, "names", &names);
  if (rc == 0)
    rc = get_int(c, j, "sizeBytes", 0, INT64_MAX, &im->size_bytes, NULL);
  size_t n = names ? json_array_size(names) : 0;
  if (rc < 0 || n == 0)
    return rc;
  if (!(im->names = calloc(n, sizeof(*im->names))))
    return kc__fail(c, KC_ENOMEM, "out of memory");
  size_t m0 = kc__path_key(c, "names");
  for (size_t i = 0; i < n; i++) {
    size_t m1 = kc__path_index(c, i);
    if ((rc = kc__dup_string(c, json_array_get(names, i), &im->names[im->n_names])) < 0)
      return rc;
    im->n_names++;
    kc__path_pop(c, m1);
  }
  kc__path_pop(c, m0);
  return 0;
}

/* status.images, for ImageLocality. */
static int node_images(kc__cctx *c, Kiln__Node *node, const json_t *status) {
  json_t *arr;
  int rc = get_array(c, status, "images", &arr);
  size_t n = arr ? json_array_size(arr) : 0;
  if (rc < 0 || n == 0)
    return rc;
  size_t m0 = kc__path_key(c, "images");
  if (!(node->images = calloc(n, sizeof(*node->images))))
    return kc__fail(c, KC_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    size_t m1 = kc__path_index(c, i);
    Kiln__NodeImage *im = malloc(sizeof(*im));
    if (!im)
      return kc__fail(c, KC_ENOMEM, "out of memory");
    kiln__node_image__init(im);
    node->images[node->n_images++] = im;
    if ((rc = node_image(c, im, json_array_get(arr, i))) < 0)
      return rc;
    kc__path_pop(c, m1);
  }
  kc__path_pop(c, m0);
  return 0;
}

/* ready from the Ready condition of status.conditions (may be NULL). */
static void node_ready(Kiln__Node *n, const json_t *conds) {
  for (size_t i = 0; conds && i < json_array_size(conds); i++) {
    json_t *cond = json_array_get(conds, i);
    const char *type = json_string_value(json_object_get(cond, "type"));
    const char *st = json_string_value(json_object_get(cond, "status"));
    if (type && strcmp(type, "Ready") == 0)
      n->ready = st && strcmp(st, "True") == 0;
  }
}

int kc_node_decode(const json_t *json, Kiln__Node **out, char *err, size_t errlen) {
  kc__cctx c;
  kc__cctx_init(&c, err, errlen);
  if (!out)
    return KC_EINVAL;
  *out = NULL;
  if (!json_is_object(json))
    return kc__fail(&c, KC_EINVAL, "expected object");
  Kiln__Node *n = malloc(sizeof(*n));
  if (!n)
    return kc__fail(&c, KC_ENOMEM, "out of memory");
  kiln__node__init(n);
  json_t *meta, *spec, *status, *alloc = NULL, *cap = NULL, *conds = NULL;
  int rc = get_object(&c, json, "metadata", &meta);
  if (rc == 0)
    rc = get_object(&c, json, "spec", &spec);
  if (rc == 0)
    rc = get_object(&c, json, "status", &status);
  if (rc == 0 && meta) {
    size_t mark = kc__path_key(&c, "metadata");
    rc = get_string(&c, meta, "name", &n->name);
    if (rc == 0)
      rc = get_string(&c, meta, "uid", &n->uid);
    if (rc == 0)
      rc = get_string(&c, meta, "resourceVersion", &n->resource_version);
    if (rc == 0)
      rc = decode_field_at(&c, &n->base, "labels", meta, "labels");
    if (rc == 0 && kc__node_devices(n, json_ann, meta) < 0)
      rc = kc__fail(&c, KC_ENOMEM, "out of memory");
    if (rc == 0)
      kc__path_pop(&c, mark);
  }
  if (rc == 0 && spec) {
    size_t mark = kc__path_key(&c, "spec");
    json_t *u = json_object_get(spec, "unschedulable");
    if (u && !json_is_null(u) && !json_is_boolean(u)) {
      kc__path_key(&c, "unschedulable");
      rc = kc__fail(&c, KC_EINVAL, "expected boolean");
    }
    n->unschedulable = json_is_true(u);
    if (rc == 0)
      rc = taints(&c, n, spec);
    if (rc == 0)
      kc__path_pop(&c, mark);
  }
  if (rc == 0 && status) {
    size_t mark = kc__path_key(&c, "status");
    rc = get_object(&c, status, "allocatable", &alloc);
    if (rc == 0)
      rc = get_object(&c, status, "capacity", &cap);
    if (rc == 0)
      rc = get_array(&c, status, "conditions", &conds);
    if (rc == 0 && !((n->allocatable = kc__resource_new()) && (n->capacity = kc__resource_new())))
      rc = kc__fail(&c, KC_ENOMEM, "out of memory");
    if (rc == 0 && alloc) {
      size_t m = kc__path_key(&c, "allocatable");
      rc = kc__resource_list_add(&c, alloc, n->allocatable);
      if (rc == 0)
        kc__path_pop(&c, m);
    }
    if (rc == 0 && cap) {
      size_t m = kc__path_key(&c, "capacity");
      rc = kc__resource_list_add(&c, cap, n->capacity);
      if (rc == 0)
        kc__path_pop(&c, m);
    }
    if (rc == 0)
      node_ready(n, conds);
    if (rc == 0)
      rc = node_images(&c, n, status);
    if (rc == 0)
      kc__path_pop(&c, mark);
  }
  if (rc < 0) {
    kc_msg_free(n);
    return rc;
  }
  *out = n;
  return 0;
}
