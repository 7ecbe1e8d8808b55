/* Codecs between Kubernetes JSON (jansson) and the protobuf-c domain types of proto/kiln.
 *
 * Decoders take a borrowed json_t and return a *new* message that the caller frees with
 * kc_msg_free() (or protobuf_c_message_free_unpacked(msg, NULL): every part of a decoded
 * message is allocated with malloc, so protobuf-c's own destructor releases it). On error
 * *out is set to NULL, nothing is leaked, and err (when not NULL) receives a message
 * naming the field path, e.g. "spec.tasks[2].replicas: expected integer". Unknown JSON
 * fields are ignored; JSON null is treated as absent.
 *
 * Encoders take a borrowed message and return a *new* json_t reference.
 *
 * The Volcano types and PriorityClass are converted generically from their descriptors
 * (see the conventions at the top of volcano.proto). Fields the schema does not model
 * (for example metadata.managedFields) are dropped, so an
 * encoded object is fit for a create or a merge patch, not for a full update of an object
 * that was read from the server. Custom resources keep quantities as written ("1.5Gi"),
 * and the decoders accept every form kc_quantity does; encoders write canonical forms. Pods and
 * Nodes are reduced to the scheduling view of pod.proto by hand-written decoders; there is no
 * encoder for them because the processes never write a whole pod or node. */
#ifndef KC_CODEC_H
#define KC_CODEC_H

#include <jansson.h>
#include <stddef.h>

#include "dra.pb-c.h"
#include "meta.pb-c.h"
#include "pod.pb-c.h"
#include "resource.pb-c.h"
#include "storage.pb-c.h"
#include "snapshot.pb-c.h"
#include "volcano.pb-c.h"

/* kc_time_parse and kc_rfc3339_parse moved to kc_time.h; the codec users keep them. */
#include "kc_time.h"
#include "kc_error.h"

/* Suggested size of the err buffer; longer messages are truncated. */
#define KC_CODEC_ERR_MAX 256

/* Frees any message returned by a decoder; NULL is a no-op. */
void kc_msg_free(void *msg);

/* Generic conversion for any message of volcano.proto / meta.proto / resource.proto. */
KC_NODISCARD int kc_codec_decode(const ProtobufCMessageDescriptor *desc, const json_t *json,
                                 ProtobufCMessage **out, char *err, size_t errlen);
KC_NODISCARD int kc_codec_encode(const ProtobufCMessage *msg, json_t **out, char *err,
                                 size_t errlen);

/* A Kubernetes ResourceList ({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}),
 * added into *res (borrowed, not cleared first): cpu in millicores, memory, pods and
 * ephemeral-storage in units rounded up, every other name as a scalar in milli-units. */
KC_NODISCARD int kc_resource_list_decode(const json_t *json, Kiln__Resource *res, char *err,
                                         size_t errlen);
/* The inverse: a new JSON object with canonical quantity strings; zero fields are left
 * out. */
KC_NODISCARD int kc_resource_list_encode(const Kiln__Resource *res, json_t **out);

/* Typed wrappers. */
KC_NODISCARD int kc_podgroup_decode(const json_t *json, Kiln__PodGroup **out, char *err,
                                    size_t errlen);
KC_NODISCARD int kc_podgroup_encode(const Kiln__PodGroup *pg, json_t **out, char *err,
                                    size_t errlen);
KC_NODISCARD int kc_queue_decode(const json_t *json, Kiln__Queue **out, char *err, size_t errlen);
KC_NODISCARD int kc_queue_encode(const Kiln__Queue *q, json_t **out, char *err, size_t errlen);
KC_NODISCARD int kc_job_decode(const json_t *json, Kiln__Job **out, char *err, size_t errlen);
KC_NODISCARD int kc_job_encode(const Kiln__Job *job, json_t **out, char *err, size_t errlen);
KC_NODISCARD int kc_command_decode(const json_t *json, Kiln__Command **out, char *err,
                                   size_t errlen);
KC_NODISCARD int kc_priorityclass_decode(const json_t *json, Kiln__PriorityClass **out, char *err,
                                         size_t errlen);
/* policy/v1 PodDisruptionBudget: selector, disruptionsAllowed and disruptedPods (the pdb
 * plugin's view). */
KC_NODISCARD int kc_pdb_decode(const json_t *json, Kiln__PodDisruptionBudget **out, char *err,
                               size_t errlen);
/* core/v1 ResourceQuota: spec.hard, status.hard and status.used (the resourcequota plugin's
 * view). */
KC_NODISCARD int kc_resourcequota_decode(const json_t *json, Kiln__ResourceQuota **out, char *err,
                                         size_t errlen);
/* resource.k8s.io/v1 DeviceClass, ResourceSlice and ResourceClaim (dra.proto's view). */
KC_NODISCARD int kc_deviceclass_decode(const json_t *json, Kiln__DeviceClass **out, char *err,
                                       size_t errlen);
KC_NODISCARD int kc_resourceslice_decode(const json_t *json, Kiln__ResourceSlice **out, char *err,
                                         size_t errlen);
KC_NODISCARD int kc_resourceclaim_decode(const json_t *json, Kiln__ResourceClaim **out, char *err,
                                         size_t errlen);
/* nodeinfo.volcano.sh/v1alpha1 Numatopology (the numaaware plugin's view). */
KC_NODISCARD int kc_numatopology_decode(const json_t *json, Kiln__Numatopology **out, char *err,
                                        size_t errlen);
/* topology.volcano.sh/v1alpha1 HyperNode: tier, tierName, members (the scheduler's tree). */
KC_NODISCARD int kc_hypernode_decode(const json_t *json, Kiln__HyperNode **out, char *err,
                                     size_t errlen);
/* core/v1 PersistentVolume and PersistentVolumeClaim, storage.k8s.io/v1 StorageClass, CSINode,
 * CSIDriver and CSIStorageCapacity (storage.proto's view). */
KC_NODISCARD int kc_pv_decode(const json_t *json, Kiln__PersistentVolume **out, char *err,
                              size_t errlen);
KC_NODISCARD int kc_pvc_decode(const json_t *json, Kiln__PersistentVolumeClaim **out, char *err,
                               size_t errlen);
KC_NODISCARD int kc_storageclass_decode(const json_t *json, Kiln__StorageClass **out, char *err,
                                        size_t errlen);
KC_NODISCARD int kc_csinode_decode(const json_t *json, Kiln__CsiNode **out, char *err,
                                   size_t errlen);
KC_NODISCARD int kc_csidriver_decode(const json_t *json, Kiln__CsiDriver **out, char *err,
                                     size_t errlen);
KC_NODISCARD int kc_csistoragecapacity_decode(const json_t *json, Kiln__CsiStorageCapacity **out,
                                              char *err, size_t errlen);
/* v1 ConfigMap: name, namespace and data (Volcano's vGPU device configuration). */
KC_NODISCARD int kc_configmap_decode(const json_t *json, Kiln__ConfigMap **out, char *err,
                                     size_t errlen);

/* Status bodies for writes: {"status": {...}}, usable as a merge patch or, with metadata
 * added by the caller, as the body of an update of the status subresource. A NULL status
 * gives {"status": {}}. */
KC_NODISCARD int kc_podgroup_status_encode(const Kiln__PodGroupStatus *st, json_t **out, char *err,
                                           size_t errlen);
KC_NODISCARD int kc_queue_status_encode(const Kiln__QueueStatus *st, json_t **out, char *err,
                                        size_t errlen);
KC_NODISCARD int kc_job_status_encode(const Kiln__JobStatus *st, json_t **out, char *err,
                                      size_t errlen);

/* core/v1 Pod and Node to their scheduling views (pod.proto). */
KC_NODISCARD int kc_pod_decode(const json_t *json, Kiln__Pod **out, char *err, size_t errlen);
KC_NODISCARD int kc_node_decode(const json_t *json, Kiln__Node **out, char *err, size_t errlen);

#endif
