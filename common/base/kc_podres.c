/* Kubernetes' pod resource rule, shared by the controller and the scheduler. See kc_podres.h. */
#include "kc_podres.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"

kc_res_entry *kc_reslist_find(const kc_reslist *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->e[i].name, name) == 0)
      return &l->e[i];
  return NULL;
}

int kc_reslist_put(kc_reslist *l, const char *name, const kc_quantity *q, bool add) {
  kc_res_entry *e = kc_reslist_find(l, name);
  if (e) {
    if (!add)
      e->q = *q;
    else
      kc_quantity_add(&e->q, q);
    return 0;
  }
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 8;
    kc_res_entry *ne = realloc(l->e, nc * sizeof(*ne));
    if (!ne)
      return KC_ENOMEM;
    l->e = ne;
    l->cap = nc;
  }
  e = &l->e[l->n++];
  snprintf(e->name, sizeof(e->name), "%s", name);
  e->q = *q;
  return 0;
}

void kc_reslist_free(kc_reslist *l) {
  free(l->e);
  memset(l, 0, sizeof(*l));
}

bool kc_json_quantity(const json_t *v, kc_quantity *q) {
  char num[64];
  const char *text;
  if (json_is_string(v))
    text = json_string_value(v);
  else if (json_is_integer(v))
    snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v)), text = num;
  else if (json_is_real(v))
    snprintf(num, sizeof(num), "%.15g", json_real_value(v)), text = num;
  else
    return false;
  return kc_quantity_parse(text, q, NULL) == 0;
}

/* Adds a ResourceList object into l (addResourceList). */
static int add_json(kc_reslist *l, const json_t *list) {
  const char *name;
  json_t *v;
  json_object_foreach((json_t *)list, name, v) {
    kc_quantity q;
    if (kc_json_quantity(v, &q) && kc_reslist_put(l, name, &q, true))
      return KC_ENOMEM;
  }
  return 0;
}

/* Keeps, per name, the larger of l and m (maxResourceList). */
static int max_list(kc_reslist *l, const kc_reslist *m) {
  for (size_t i = 0; i < m->n; i++) {
    kc_res_entry *e = kc_reslist_find(l, m->e[i].name);
    if (e && kc_quantity_cmp(&m->e[i].q, &e->q) <= 0)
      continue;
    if (kc_reslist_put(l, m->e[i].name, &m->e[i].q, false))
      return KC_ENOMEM;
  }
  return 0;
}

int kc_reslist_add(kc_reslist *l, const kc_reslist *m) {
  for (size_t i = 0; i < m->n; i++)
    if (kc_reslist_put(l, m->e[i].name, &m->e[i].q, true))
      return KC_ENOMEM;
  return 0;
}

int kc_reslist_add_times(kc_reslist *l, const kc_reslist *m, int64_t k) {
  for (size_t i = 0; i < m->n && k > 0; i++) {
    kc_quantity q = m->e[i].q;
    kc_quantity_mul(&q, k);
    if (kc_reslist_put(l, m->e[i].name, &q, true))
      return KC_ENOMEM;
  }
  return 0;
}

/* The JSON form of a pod spec as a kc_podres_src. */
static const json_t *json_ct(const void *spec, bool init, size_t i) {
  return json_array_get(json_object_get(spec, init ? "initContainers" : "containers"), i);
}

static size_t json_count(const void *spec, bool init) {
  return json_array_size(json_object_get(spec, init ? "initContainers" : "containers"));
}

static int json_add(const void *spec, bool init, size_t i, const char *kind, kc_reslist *l) {
  return add_json(l, json_object_get(json_object_get(json_ct(spec, init, i), "resources"), kind));
}

static bool json_sidecar(const void *spec, size_t i) {
  const char *rp = json_string_value(json_object_get(json_ct(spec, true, i), "restartPolicy"));
  return rp && strcmp(rp, "Always") == 0;
}

static int json_pod_level(const void *spec, const char *kind, kc_reslist *l) {
  return add_json(l, json_object_get(json_object_get(spec, "resources"), kind));
}

static int json_overhead(const void *spec, kc_reslist *l) {
  return add_json(l, json_object_get(spec, "overhead"));
}

static const char *json_name(const void *spec, bool init, size_t i) {
  return json_string_value(json_object_get(json_ct(spec, init, i), "name"));
}

const kc_podres_src kc_podres_json = {json_count,     json_add,      json_sidecar,
                                      json_pod_level, json_overhead, json_name};

/* Init containers into out (sidecars) and *init (the largest ordinary one with the sidecars
 * started before it). */
static int init_containers(const kc_podres_src *src, const void *spec, const char *kind,
                           unsigned flags, kc_reslist *out, kc_reslist *init) {
  kc_reslist side = {0}, tmp = {0}, one = {0};
  int rc = 0;
  size_t n = src->count(spec, true);
  for (size_t i = 0; i < n; i++) {
    tmp.n = 0;
    one.n = 0;
    if (src->sidecar(spec, i)) {
      if ((rc = src->add(spec, true, i, kind, &one)) || (rc = kc_reslist_add(out, &one)) ||
          (rc = kc_reslist_add(&side, &one)) || (rc = kc_reslist_add(&tmp, &side)))
        break;
    } else if (flags & KC_PODRES_NO_INIT) {
      continue;
    } else if ((rc = src->add(spec, true, i, kind, &tmp)) || (rc = kc_reslist_add(&tmp, &side))) {
      break;
    }
    if ((rc = max_list(init, &tmp)))
      break;
  }
  kc_reslist_free(&side);
  kc_reslist_free(&tmp);
  kc_reslist_free(&one);
  return rc;
}

int kc_pod_resources_src(const kc_podres_src *src, const void *spec, const char *kind,
                         unsigned flags, kc_reslist *out) {
  kc_reslist init = {0}, tmp = {0};
  int rc = 0;
  size_t n = src->count(spec, false);
  for (size_t i = 0; i < n; i++)
    if ((rc = src->add(spec, false, i, kind, out)))
      goto out;
  if ((rc = init_containers(src, spec, kind, flags, out, &init)) || (rc = max_list(out, &init)))
    goto out;
  /* Pod-level resources (only cpu and memory are supported there) are the pod's total. */
  if ((rc = src->pod_level(spec, kind, &tmp)))
    goto out;
  static const char *const supported[] = {"cpu", "memory"};
  for (size_t k = 0; k < 2; k++) {
    const kc_res_entry *e = kc_reslist_find(&tmp, supported[k]);
    if (e && (rc = kc_reslist_put(out, supported[k], &e->q, false)))
      goto out;
  }
  tmp.n = 0;
  if ((rc = src->overhead(spec, &tmp)))
    goto out;
  for (size_t i = 0; i < tmp.n; i++) {
    if (strcmp(kind, "limits") == 0 && !kc_reslist_find(out, tmp.e[i].name))
      continue;
    if ((rc = kc_reslist_put(out, tmp.e[i].name, &tmp.e[i].q, true)))
      goto out;
  }
out:
  kc_reslist_free(&init);
  kc_reslist_free(&tmp);
  return rc;
}

int kc_pod_resources(const json_t *spec, const char *kind, unsigned flags, kc_reslist *out) {
  return kc_pod_resources_src(&kc_podres_json, spec, kind, flags, out);
}
