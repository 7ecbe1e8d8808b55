/* The numaaware fields of a pod (Kiln__PodNuma) from its spec and annotations, written once
 * for the JSON and the protobuf decoders: Kubernetes' QoS class (only Guaranteed pods get
 * one, as only they are looked at by Volcano's numaaware), each app container's cpu and
 * nvidia.com/gpu request, and the volcano.sh/numa-topology-policy annotation. */
#include <stdlib.h>
#include <string.h>

#include "kc_codec_int.h"

#define NUMA_POLICY_KEY "volcano.sh/numa-topology-policy"
#define NUMA_GPU        "nvidia.com/gpu"

/* A quantity in milli-units, -1 when absent. */
static int64_t milli(const kc_reslist *l, const char *name) {
  kc_res_entry *e = kc_reslist_find(l, name);
  return e ? kc_quantity_milli(&e->q) : -1;
}

/* Kubernetes GetPodQOS for one container: it limits cpu and memory (non-zero), and requests
 * exactly that (a request left out is defaulted from the limit by the API server). */
static bool guaranteed_ct(const kc_reslist *lim, const kc_reslist *req) {
  static const char *const names[] = {"cpu", "memory"};
  for (size_t i = 0; i < 2; i++) {
    int64_t l = milli(lim, names[i]), r = milli(req, names[i]);
    if (l <= 0 || (r >= 0 && r != l))
      return false;
  }
  return true;
}

static int read_ct(const kc_podres_src *src, const void *spec, bool init, size_t i, kc_reslist *lim,
                   kc_reslist *req) {
  lim->n = req->n = 0;
  int rc = src->add(spec, init, i, "limits", lim);
  return rc ? rc : src->add(spec, init, i, "requests", req);
}

static int add_container(Kiln__PodNuma *d, const kc_podres_src *src, const void *spec, size_t i,
                         const kc_reslist *lim, const kc_reslist *req) {
  Kiln__NumaContainer *c = malloc(sizeof(*c));
  Kiln__NumaContainer **arr =
      c ? realloc(d->containers, (d->n_containers + 1) * sizeof(*arr)) : NULL;
  if (!arr) {
    free(c);
    return KC_ENOMEM;
  }
  d->containers = arr;
  kiln__numa_container__init(c);
  d->containers[d->n_containers++] = c;
  const char *name = src->name ? src->name(spec, false, i) : NULL;
  if (name && !(c->name = strdup(name)))
    return KC_ENOMEM;
  /* A request left out is the limit (API server defaulting). */
  c->cpu_milli = milli(req, "cpu");
  if (c->cpu_milli < 0)
    c->cpu_milli = milli(lim, "cpu");
  int64_t g = milli(req, NUMA_GPU);
  if (g < 0)
    g = milli(lim, NUMA_GPU);
  c->gpus = g > 0 ? (g + 999) / 1000 : 0;
  return 0;
}

/* Whether every init container is Guaranteed too (GetPodQOS looks at them all). */
static int init_guaranteed(const kc_podres_src *src, const void *spec, kc_reslist *lim,
                           kc_reslist *req, bool *ok) {
  size_t n = src->count(spec, true);
  *ok = true;
  for (size_t i = 0; *ok && i < n; i++) {
    int rc = read_ct(src, spec, true, i, lim, req);
    if (rc)
      return rc;
    *ok = guaranteed_ct(lim, req);
  }
  return 0;
}

int kc__pod_numa(Kiln__Pod *p, const kc_podres_src *src, const void *spec,
                 const char *(*ann)(const void *meta, const char *key), const void *meta) {
  size_t n = spec ? src->count(spec, false) : 0;
  if (n == 0)
    return 0;
  Kiln__PodNuma *d = malloc(sizeof(*d));
  if (!d)
    return KC_ENOMEM;
  kiln__pod_numa__init(d);
  kc_reslist lim = {0}, req = {0};
  bool ok = true;
  int rc = init_guaranteed(src, spec, &lim, &req, &ok);
  for (size_t i = 0; rc == 0 && ok && i < n; i++) {
    rc = read_ct(src, spec, false, i, &lim, &req);
    ok = rc == 0 && guaranteed_ct(&lim, &req);
    if (ok)
      rc = add_container(d, src, spec, i, &lim, &req);
  }
  kc_reslist_free(&lim);
  kc_reslist_free(&req);
  const char *pol = meta ? ann(meta, NUMA_POLICY_KEY) : NULL;
  if (rc == 0 && ok && pol && pol[0] && !(d->policy = strdup(pol)))
    rc = KC_ENOMEM;
  if (rc < 0 || !ok) {
    kiln__pod_numa__free_unpacked(d, NULL);
    return rc;
  }
  p->numa = d;
  return 0;
}
