/* Device bookkeeping for the deviceshare plugin (Volcano pkg/scheduler/api/devices/nvidia/
 * gpushare and nvidia/vgpu): which GPU of which node holds how much memory and how many cores
 * for how many pods, over one session.
 *
 * The table is built from the snapshot: each node's GPUs from what Volcano's device plugins
 * register (vGPU: the volcano.sh/node-vgpu-register annotation with each GPU's id, split
 * count, memory, type, health and mode; GPU share and GPU number: the node's volcano.sh/
 * gpu-memory and volcano.sh/gpu-number capacity less volcano.sh/gpu-unhealthy-ids), and what
 * the pods already on them hold from the assignment annotations the scheduler wrote
 * (volcano.sh/vgpu-ids-new, volcano.sh/gpu-index). The session's allocate and deallocate
 * events then add and take away tasks, so a discarded statement gives the devices back
 * exactly. Pure: no I/O, no clock (the caller gives the time). */
#ifndef SCH_DEVICE_H
#define SCH_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sch_framework.h"
#include "kc_error.h"

/* Volcano's device names (node.Others keys), which its messages carry. */
#define SCH_DEV_VGPU_NAME  "hamivgpu"
#define SCH_DEV_SHARE_NAME "GpuShare"

/* ---- Volcano's vGPU device configuration (config vgpu.go): the nvidia section of the
 * device-config.yaml key of the volcano-vgpu-device-config ConfigMap, as far as the
 * scheduler uses it ---- */

/* Positions (instances) of one MIG geometry group that are tracked; real GPUs have at most 7. */
#define SCH_MIG_MAX_POSITIONS 64

/* A MIG instance template (MigTemplate): "1g.10gb", its memory (MiB) and how many. */
typedef struct sch_mig_template {
  char *name;
  int64_t memory;
  int32_t count;
} sch_mig_template;

/* A geometry (Geometry): the group's name and its instances. A MIG instance is named by its
 * position in the group: the counts of the instances before it plus its index among its own. */
typedef struct sch_mig_group {
  char *group;
  sch_mig_template *inst;
  int32_t ninst;
} sch_mig_group;

/* One knownMigGeometries entry (AllowedMigGeometries): GPU models and their geometries. */
typedef struct sch_mig_models {
  char **models;
  int32_t nmodels;
  sch_mig_group *groups; /* allowedGeometries, in order */
  int32_t ngroups;
} sch_mig_models;

typedef struct sch_vgpu_config {
  sch_mig_models *known; /* knownMigGeometries */
  int32_t nknown;
  int64_t gpu_memory_factor; /* gpuMemoryFactor: > 1 multiplies a request's memory */
} sch_vgpu_config;

/* The ConfigMap the deviceshare plugin reads device-config.yaml from: its
 * deviceshare.KnownGeometriesCMName and deviceshare.KnownGeometriesCMNamespace in conf
 * (the first deviceshare entry), else volcano-vgpu-device-config in kube-system. *ns may be
 * NULL. Both borrowed from conf or static. */
#define SCH_DEVICE_CONFIG_NAME      "volcano-vgpu-device-config"
#define SCH_DEVICE_CONFIG_NAMESPACE "kube-system"
const char *sch_device_config_name(const sch_conf *conf, const char **ns);

/* Parses device-config.yaml (Volcano's yaml.Unmarshal into Config). 0 and a new config, or
 * KC_EINVAL / KC_ETOOBIG with the reason in err, or KC_ENOMEM. */
KC_NODISCARD int sch_vgpu_config_parse(const char *yaml, size_t len, sch_vgpu_config **out,
                                       char *err, size_t errlen);
void sch_vgpu_config_free(sch_vgpu_config *c);
/* extractGeometryFromType: the first entry one of whose models the GPU type contains, or NULL
 * (the GPU then falls back to hami-core). */
const sch_mig_models *sch_mig_models_for(const sch_vgpu_config *c, const char *type);
/* findMatch: fits a request of request MiB to a MIG instance of m. With a group in use
 * (group_in_use >= 0, its used positions in the mask used) only in that group and only on an
 * instance kind it already uses; else in the first group, in order, with an instance big
 * enough. Instances are tried smallest first. true with the group, the position and the
 * instance's memory; false when none fits. */
bool sch_mig_find(const sch_mig_models *m, int32_t group_in_use, uint64_t used, int64_t request,
                  int32_t *group, int32_t *pos, int64_t *mem);
/* findPosition: the instance of g position pos belongs to, or -1. */
int32_t sch_mig_instance_at(const sch_mig_group *g, int32_t pos);

typedef struct sch_dev_conf {
  bool gpu_sharing; /* deviceshare.GPUSharingEnable: volcano.sh/gpu-memory */
  bool gpu_number;  /* deviceshare.GPUNumberEnable: volcano.sh/gpu-number */
  bool vgpu;        /* deviceshare.VGPUEnable: volcano.sh/vgpu-* */
  /* deviceshare.SchedulePolicy: "binpack", "spread", anything else scores 0. */
  const char *policy;
  /* The vGPU device configuration (borrowed), NULL: Volcano's default (no MIG geometries:
   * every GPU shares by hami-core). */
  const sch_vgpu_config *vgpu_config;
} sch_dev_conf;

/* One GPU. vGPU: number is the split count (pods that may share it) and memory in MiB;
 * GPU share/number: memory is the card's share of the node's gpu-memory. */
typedef struct sch_gpu {
  const char *uuid; /* vGPU only; owned by the table */
  const char *type; /* vGPU only */
  int32_t id;       /* vGPU: position in the annotation; GPU share: card index */
  int64_t number, memory;
  bool health;
  int64_t used_num, used_mem, used_core;
  /* MIG (the GPU registered in mode "mig" with geometries for its type): the geometries, the
   * group in use (-1: none) and its positions in use. */
  const sch_mig_models *mig;
  int32_t mig_group;
  uint64_t mig_used;
} sch_gpu;

/* One device a task holds: a GPU (table index), in the task's ctr-th requesting container
 * (vGPU), with this much memory and cores; on a MIG GPU the instance (group and position,
 * else -1) whose memory mem counts, the request being asked. */
typedef struct sch_dev_use {
  int32_t gpu;
  int32_t ctr;
  int64_t mem, core;
  int32_t mig_group, mig_pos;
  int64_t asked;
} sch_dev_use;

typedef struct sch_devices sch_devices;

/* Builds the table for snap (borrowed; it must outlive the table). now: Unix seconds (the
 * vGPU handshake's 60 s). 0 and a *new* table, or KC_ENOMEM. */
KC_NODISCARD int sch_devices_new(const sch_snapshot *snap, const sch_dev_conf *conf, int64_t now,
                                 sch_devices **out);
void sch_devices_free(sch_devices *d);

/* Volcano HasDeviceRequest: t asks for a device kind that is enabled. */
bool sch_devices_requests(const sch_devices *d, const sch_task *t);
/* The node's GPUs: *first is the table index of the first, the count is returned (0: the
 * node has none of the enabled kind). */
int32_t sch_devices_node(const sch_devices *d, int32_t node, int32_t *first);
const sch_gpu *sch_devices_gpu(const sch_devices *d, int32_t gpu);

/* Whether t's devices fit on node as things stand (Volcano FilterNode), without changing
 * anything. SCH_FIT with *score (the GPUs' score under the policy, summed), or
 * SCH_UNSCHEDULABLE with Volcano's reason in why (capacity len). A task asking for nothing
 * fits with score 0. */
int sch_devices_fit(const sch_devices *d, const sch_task *t, int32_t node, double *score, char *why,
                    size_t len);

/* Event handlers. allocate: t (now on node t->node) takes its devices: the ones it held
 * before when it is a pod the snapshot found with an assignment, else newly chosen ones
 * (0 also when t asks for nothing; KC_ENOSPC when they no longer fit; KC_ENOMEM).
 * release: t gives them back (no-op when it holds none). */
KC_NODISCARD int sch_devices_allocate(sch_devices *d, int32_t task);
void sch_devices_release(sch_devices *d, int32_t task);

/* What task holds now (borrowed until the next change), and whether it was chosen in this
 * session (the shell has to write it) rather than read from the pod. */
const sch_dev_use *sch_devices_held(const sch_devices *d, int32_t task, int32_t *n, bool *fresh);

/* The assignment annotation's value for task's devices into buf: vGPU's
 * volcano.sh/vgpu-ids-new ("UUID,NVIDIA,MEM,CORES:" per device, containers joined by ';'),
 * or GPU share's volcano.sh/gpu-index ("0" or "0,1"). 0, or KC_ERANGE when buf is short,
 * KC_ENOENT when task holds nothing. */
KC_NODISCARD int sch_devices_encode(const sch_devices *d, int32_t task, char *buf, size_t len);
/* The kind task's devices are of: true vGPU, false GPU share/number. */
bool sch_devices_is_vgpu(const sch_devices *d, int32_t task);

#endif
