/* The resources a pod asks for, by Kubernetes' rule (PodRequests / PodLimits), in one
 * place for the controller (quota usage, a PodGroup's minResources) and the scheduler
 * (a task's request): the containers summed; restartable init containers (sidecars) added;
 * each ordinary init container running alone on top of the sidecars started before it, the
 * largest taken where it exceeds that; pod-level spec.resources (cpu, memory) replacing the
 * aggregate; the overhead added (to limits only where a limit exists). */
#ifndef KC_PODRES_H
#define KC_PODRES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kc_quantity.h"
#include "kc_error.h"

#define KC_RES_NAME_MAX 254

typedef struct {
  char name[KC_RES_NAME_MAX];
  kc_quantity q;
} kc_res_entry;

/* A ResourceList: names in first-seen order. Zero-initialise; kc_reslist_free() when done. */
typedef struct {
  kc_res_entry *e;
  size_t n, cap;
} kc_reslist;

kc_res_entry *kc_reslist_find(const kc_reslist *l, const char *name);
/* Sets (add false) or adds (add true) q under name; a sum keeps the format of its first
 * non-zero addend, as resource.Quantity.Add does. Returns 0 or KC_ENOMEM. */
KC_NODISCARD int kc_reslist_put(kc_reslist *l, const char *name, const kc_quantity *q, bool add);
/* Adds every entry of m into l. Returns 0 or KC_ENOMEM. */
KC_NODISCARD int kc_reslist_add(kc_reslist *l, const kc_reslist *m);
/* Adds every entry of m, times k, into l: one saturating multiplication per entry, however
 * large k is (k <= 0 adds nothing). Returns 0 or KC_ENOMEM. */
KC_NODISCARD int kc_reslist_add_times(kc_reslist *l, const kc_reslist *m, int64_t k);
void kc_reslist_free(kc_reslist *l);

/* A quantity written as a string or a bare JSON number; false when unparsable. */
bool kc_json_quantity(const json_t *v, kc_quantity *q);

/* Skip the ordinary init containers: what runs once the pod has started (Volcano's
 * resreq beside its init-inclusive initResreq). */
#define KC_PODRES_NO_INIT 1u

/* A pod spec in some encoding (JSON, Kubernetes protobuf), read through callbacks so that
 * the rule below is written once. spec is borrowed. */
typedef struct {
  size_t (*count)(const void *spec, bool init); /* containers, or init containers */
  /* Adds the container's resources.<kind> ("requests", "limits") into l; unparsable
   * quantities are skipped. 0 or KC_ENOMEM. */
  int (*add)(const void *spec, bool init, size_t i, const char *kind, kc_reslist *l);
  bool (*sidecar)(const void *spec, size_t i); /* init container i restarts Always */
  int (*pod_level)(const void *spec, const char *kind, kc_reslist *l); /* spec.resources */
  int (*overhead)(const void *spec, kc_reslist *l);                    /* spec.overhead */
  /* The container's name (borrowed), NULL when it has none. */
  const char *(*name)(const void *spec, bool init, size_t i);
} kc_podres_src;

/* A pod spec as a JSON object (json_t). */
extern const kc_podres_src kc_podres_json;

KC_NODISCARD int kc_pod_resources_src(const kc_podres_src *src, const void *spec, const char *kind,
                                      unsigned flags, kc_reslist *out);

/* The effective "requests" or "limits" (kind) of a pod spec (borrowed) added into *out.
 * Unparsable quantities are skipped (the API server refuses them first). Returns 0 or
 * KC_ENOMEM. */
KC_NODISCARD int kc_pod_resources(const json_t *spec, const char *kind, unsigned flags,
                                  kc_reslist *out);

#endif
