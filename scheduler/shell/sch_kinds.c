/* What kiln-scheduler reads: see sch_kinds.h. */
#include "sch_kinds.h"

#include <stdio.h>

#include "kc_codec.h"
#include "kc_pb.h"
#include "sch_device.h"

static void *decode_pod(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__Pod *p = NULL;
  return kc_pod_decode(obj, &p, err, errlen) == 0 ? p : NULL;
}
static void *decode_pod_pb(const uint8_t *data, size_t len, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__Pod *p = NULL;
  return kc_pb_pod_decode(data, len, &p, err, errlen) == 0 ? p : NULL;
}
static void *decode_node_pb(const uint8_t *data, size_t len, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__Node *n = NULL;
  return kc_pb_node_decode(data, len, &n, err, errlen) == 0 ? n : NULL;
}
static void *decode_node(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__Node *n = NULL;
  return kc_node_decode(obj, &n, err, errlen) == 0 ? n : NULL;
}
static void *decode_podgroup(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__PodGroup *pg = NULL;
  return kc_podgroup_decode(obj, &pg, err, errlen) == 0 ? pg : NULL;
}
static void *decode_queue(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__Queue *q = NULL;
  return kc_queue_decode(obj, &q, err, errlen) == 0 ? q : NULL;
}
static void *decode_pc(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__PriorityClass *pc = NULL;
  return kc_priorityclass_decode(obj, &pc, err, errlen) == 0 ? pc : NULL;
}
static void *decode_pdb(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__PodDisruptionBudget *pdb = NULL;
  return kc_pdb_decode(obj, &pdb, err, errlen) == 0 ? pdb : NULL;
}
static void *decode_quota(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__ResourceQuota *q = NULL;
  return kc_resourcequota_decode(obj, &q, err, errlen) == 0 ? q : NULL;
}
static void *decode_deviceclass(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__DeviceClass *dc = NULL;
  return kc_deviceclass_decode(obj, &dc, err, errlen) == 0 ? dc : NULL;
}
static void *decode_resourceslice(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__ResourceSlice *rs = NULL;
  return kc_resourceslice_decode(obj, &rs, err, errlen) == 0 ? rs : NULL;
}
static void *decode_resourceclaim(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__ResourceClaim *rc = NULL;
  return kc_resourceclaim_decode(obj, &rc, err, errlen) == 0 ? rc : NULL;
}

static void *decode_numatopo(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__Numatopology *nt = NULL;
  return kc_numatopology_decode(obj, &nt, err, errlen) == 0 ? nt : NULL;
}

#define STORAGE_DECODE(fn, type, dec)                                                              \
  static void *fn(json_t *obj, void *ud, char *err, size_t errlen) {                               \
    (void)ud;                                                                                      \
    type *x = NULL;                                                                                \
    return dec(obj, &x, err, errlen) == 0 ? x : NULL;                                              \
  }
STORAGE_DECODE(decode_pv, Kiln__PersistentVolume, kc_pv_decode)
STORAGE_DECODE(decode_pvc, Kiln__PersistentVolumeClaim, kc_pvc_decode)
STORAGE_DECODE(decode_storageclass, Kiln__StorageClass, kc_storageclass_decode)
STORAGE_DECODE(decode_csinode, Kiln__CsiNode, kc_csinode_decode)
STORAGE_DECODE(decode_csidriver, Kiln__CsiDriver, kc_csidriver_decode)
STORAGE_DECODE(decode_csicapacity, Kiln__CsiStorageCapacity, kc_csistoragecapacity_decode)

#define AT(field) offsetof(Kiln__Snapshot, field), offsetof(Kiln__Snapshot, n_##field)

static void *decode_configmap(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__ConfigMap *cm = NULL;
  return kc_configmap_decode(obj, &cm, err, errlen) == 0 ? cm : NULL;
}

static void *decode_hypernode(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  Kiln__HyperNode *hn = NULL;
  return kc_hypernode_decode(obj, &hn, err, errlen) == 0 ? hn : NULL;
}

const sch_kind sch_kinds[SCH_KIND__COUNT] = {
    [SCH_KIND_POD] = {NULL, "v1", "pods", NULL, decode_pod, decode_pod_pb, AT(pods)},
    [SCH_KIND_NODE] = {NULL, "v1", "nodes", NULL, decode_node, decode_node_pb, AT(nodes)},
    [SCH_KIND_PODGROUP] = {"scheduling.volcano.sh", "v1beta1", "podgroups", NULL, decode_podgroup,
                           NULL, AT(pod_groups)},
    [SCH_KIND_QUEUE] = {"scheduling.volcano.sh", "v1beta1", "queues", NULL, decode_queue, NULL,
                        AT(queues)},
    [SCH_KIND_PRIORITYCLASS] = {"scheduling.k8s.io", "v1", "priorityclasses", NULL, decode_pc, NULL,
                                AT(priority_classes)},
    /* Volcano's PodDisruptionBudgetsSupport gate (on by default): the pdb plugin's input. */
    [SCH_KIND_PDB] = {"policy", "v1", "poddisruptionbudgets", NULL, decode_pdb, NULL,
                      AT(pod_disruption_budgets)},
    /* The resourcequota plugin's input: each namespace's quota status. */
    [SCH_KIND_QUOTA] = {NULL, "v1", "resourcequotas", NULL, decode_quota, NULL,
                        AT(resource_quotas)},
    /* Dynamic Resource Allocation (GA; Volcano's predicate.DynamicResourceAllocationEnable):
     * devices per node and driver, the classes that select them, and the claims. */
    [SCH_KIND_DEVICECLASS] = {"resource.k8s.io", "v1", "deviceclasses", NULL, decode_deviceclass,
                              NULL, AT(device_classes)},
    [SCH_KIND_RESOURCESLICE] = {"resource.k8s.io", "v1", "resourceslices", NULL,
                                decode_resourceslice, NULL, AT(resource_slices)},
    [SCH_KIND_RESOURCECLAIM] = {"resource.k8s.io", "v1", "resourceclaims", NULL,
                                decode_resourceclaim, NULL, AT(resource_claims)},
    /* The numa-aware plugin's input (Volcano's resource exporter writes one per node); a
     * cluster without the CRD has none. */
    [SCH_KIND_NUMATOPO] = {"nodeinfo.volcano.sh", "v1alpha1", "numatopologies", NULL,
                           decode_numatopo, NULL, AT(numatopologies)},
    /* The network topology: the allocate action's HyperNode path and the
     * network-topology-aware plugin. */
    [SCH_KIND_HYPERNODE] = {"topology.volcano.sh", "v1alpha1", "hypernodes", NULL, decode_hypernode,
                            NULL, AT(hyper_nodes)},
    /* The volume predicates (VolumeBinding, VolumeZone, NodeVolumeLimits; on by default in
     * Volcano): volumes, claims, classes, the CSI drivers' per-node limits, whether they
     * publish capacity, and the capacities. */
    [SCH_KIND_PV] = {NULL, "v1", "persistentvolumes", NULL, decode_pv, NULL,
                     AT(persistent_volumes)},
    [SCH_KIND_PVC] = {NULL, "v1", "persistentvolumeclaims", NULL, decode_pvc, NULL,
                      AT(persistent_volume_claims)},
    [SCH_KIND_STORAGECLASS] = {"storage.k8s.io", "v1", "storageclasses", NULL, decode_storageclass,
                               NULL, AT(storage_classes)},
    [SCH_KIND_CSINODE] = {"storage.k8s.io", "v1", "csinodes", NULL, decode_csinode, NULL,
                          AT(csi_nodes)},
    [SCH_KIND_CSIDRIVER] = {"storage.k8s.io", "v1", "csidrivers", NULL, decode_csidriver, NULL,
                            AT(csi_drivers)},
    [SCH_KIND_CSICAPACITY] = {"storage.k8s.io", "v1", "csistoragecapacities", NULL,
                              decode_csicapacity, NULL, AT(csi_storage_capacities)},
    /* Volcano's vGPU device configuration (the deviceshare plugin's MIG geometries): the
     * ConfigMaps named deviceshare.KnownGeometriesCMName, in any namespace (the plugin takes
     * the one of deviceshare.KnownGeometriesCMNamespace); the name is the configuration's
     * at start (sch_kind_field_selector), the default's here. */
    [SCH_KIND_CONFIGMAP] = {NULL, "v1", "configmaps", "metadata.name=" SCH_DEVICE_CONFIG_NAME,
                            decode_configmap, NULL, AT(config_maps)},
};

const char *sch_kind_field_selector(int k, const struct sch_conf *conf, char *buf, size_t len) {
  if (k != SCH_KIND_CONFIGMAP)
    return sch_kinds[k].field_selector;
  snprintf(buf, len, "metadata.name=%s", sch_device_config_name(conf, NULL));
  return buf;
}
