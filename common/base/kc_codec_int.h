/* Internal to the codec files: the field-path context used for error messages and
 * small helpers shared by the generic and the pod/node codecs. */
#ifndef KC_CODEC_INT_H
#define KC_CODEC_INT_H

#include <jansson.h>
#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "kc_podres.h"
#include "kc_quantity.h"
#include "pod.pb-c.h"
#include "resource.pb-c.h"
#include "kc_error.h"

#define KC__PATH_MAX 192

typedef struct {
  char path[KC__PATH_MAX];
  size_t len;
  char *err;
  size_t errlen;
} kc__cctx;

void kc__cctx_init(kc__cctx *c, char *err, size_t errlen);
/* Append ".key" (or "key" at the root), "[i]" or "[key]"; return the length to restore
 * with kc__path_pop. */
size_t kc__path_key(kc__cctx *c, const char *key);
size_t kc__path_index(kc__cctx *c, size_t i);
size_t kc__path_mapkey(kc__cctx *c, const char *key);
void kc__path_pop(kc__cctx *c, size_t len);
/* Writes "<path>: <message>" to the error buffer and returns code. */
int kc__fail(kc__cctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A new copy of a JSON string value, failing on embedded NUL bytes; *out NULL on error. */
KC_NODISCARD int kc__dup_string(kc__cctx *c, const json_t *v, char **out);

/* Adds a ResourceList object into res; the path of c must name the object. */
KC_NODISCARD int kc__resource_list_add(kc__cctx *c, const json_t *obj, Kiln__Resource *res);
/* Adds q under name into res (cpu in millis, memory/pods/ephemeral-storage in units, any
 * other name a scalar in millis), saturating. Returns 0 or KC_ENOMEM. */
KC_NODISCARD int kc__resource_put(Kiln__Resource *res, const char *name, const kc_quantity *q);
/* The generic decoder on a sub-tree: a new message of desc (*out NULL on error), or one
 * field (by proto name) of an existing message. The path of c must name j or v. */
KC_NODISCARD int kc__decode_message(kc__cctx *c, const ProtobufCMessageDescriptor *desc,
                                    const json_t *j, ProtobufCMessage **out);
KC_NODISCARD int kc__decode_field(kc__cctx *c, ProtobufCMessage *m, const char *name,
                                  const json_t *v);

/* A new zero Resource, or NULL when out of memory. */
Kiln__Resource *kc__resource_new(void);
/* Scalar lookup/insert by name (new entry starts at 0); NULL when out of memory. */
Kiln__ResourceQuantity *kc__resource_scalar(Kiln__Resource *res, const char *name);

/* ---- shared by the JSON and the protobuf pod/node decoders ---- */

/* A taint's or toleration's effect by name ("" or NULL: every effect). */
Kiln__TaintEffect kc__taint_effect(const char *s);
/* status.phase by name (NULL: unset; unknown names: Unknown). */
Kiln__PodPhase kc__pod_phase(const char *s);
/* Drops the spec.volumes entries with none of the sources the volume predicates read
 * (configMap, secret, projected, emptyDir, ...), so that a pod pays for the ones it has. */
void kc__pod_volumes_prune(Kiln__Pod *p);
/* requests, container_requests and best_effort of p from a spec read through src. 0 or
 * KC_ENOMEM. */
KC_NODISCARD int kc__pod_requests(Kiln__Pod *p, const kc_podres_src *src, const void *spec);
/* preemptable, not_preemptable and cooldown_ms from the values of the volcano.sh/preemptable
 * annotation and label and the volcano.sh/cooldown-time label and annotation (NULL: absent). */
void kc__pod_volcano_keys(Kiln__Pod *p, const char *ann_preempt, const char *label_preempt,
                          const char *label_cooldown, const char *ann_cooldown);
/* p->devices (deviceshare) from the app and init containers' resources read through src and
 * the annotations ann(meta, key) returns (NULL: absent; meta NULL: none); left NULL when the
 * pod has none of them. 0 or KC_ENOMEM. */
KC_NODISCARD int kc__pod_devices(Kiln__Pod *p, const kc_podres_src *src, const void *spec,
                                 const char *(*ann)(const void *meta, const char *key),
                                 const void *meta);
/* p->numa (numaaware) the same way: set only when the pod is Guaranteed. 0 or KC_ENOMEM. */
KC_NODISCARD int kc__pod_numa(Kiln__Pod *p, const kc_podres_src *src, const void *spec,
                              const char *(*ann)(const void *meta, const char *key),
                              const void *meta);
/* n->devices from the node's annotations, the same way. 0 or KC_ENOMEM. */
KC_NODISCARD int kc__node_devices(Kiln__Node *n,
                                  const char *(*ann)(const void *meta, const char *key),
                                  const void *meta);

#endif
