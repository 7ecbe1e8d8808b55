/* Fixtures shared by the deviceshare tests (test_sch_device.c, test_sch_device_mig.c), on top
 * of test_sch_plugins_fixture.h: nodes as Volcano's vGPU device plugin registers them, pods
 * asking for vGPUs, and the annotations a result writes. */
#ifndef TEST_SCH_DEVICE_FIXTURE_H
#define TEST_SCH_DEVICE_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "test_sch_plugins_fixture.h"

/* deviceshare with vGPUs on, after gang and predicates. */
static const char fx_vgpu_yaml[] = "actions: \"enqueue, allocate\"\n"
                                   "tiers:\n"
                                   "- plugins:\n"
                                   "  - name: gang\n"
                                   "  - name: predicates\n"
                                   "  - name: deviceshare\n"
                                   "    arguments:\n"
                                   "      deviceshare.VGPUEnable: true\n";

/* The node's device fields, made on first use. */
static inline Kiln__NodeDevices *fx_node_devices(Kiln__Node *n) {
  if (!n->devices) {
    n->devices = fx_alloc(sizeof(*n->devices));
    kiln__node_devices__init(n->devices);
  }
  return n->devices;
}

/* The pod's device fields, made on first use. */
static inline Kiln__PodDevices *fx_pod_devices(Kiln__Pod *p) {
  if (!p->devices) {
    p->devices = fx_alloc(sizeof(*p->devices));
    kiln__pod_devices__init(p->devices);
  }
  return p->devices;
}

/* A node as Volcano's vGPU device plugin registers it: GPUs "UUID,10,MEM,NVIDIA-T4,true,
 * hami-core" each with MEM MiB, and the node's allocatable vgpu-number and vgpu-memory. */
static inline Kiln__Node *fx_vgpu_node(fx *f, const char *name, const char *reg, int64_t gpus,
                                       int64_t mem) {
  Kiln__Node *n = fx_node(f, name, 32000, 64 * GI, 110);
  fx_res_scalar(n->allocatable, "volcano.sh/vgpu-number", gpus * 10 * 1000);
  fx_res_scalar(n->allocatable, "volcano.sh/vgpu-memory", gpus * mem * 1000);
  fx_node_devices(n)->vgpu_register = fx_str(reg);
  fx_node_devices(n)->vgpu_handshake = fx_str("Reported_2026.11.29 11:59:00");
  return n;
}

/* A pod asking for nums vGPUs of mem MiB and cores percent each. */
static inline Kiln__Pod *fx_vgpu_pod(fx *f, const char *name, const char *group, int32_t nums,
                                     int64_t mem, int32_t cores, const char *node) {
  Kiln__Pod *p = fx_pod(f, name, group, 100, GI, node);
  fx_pod_scalar(p, "volcano.sh/vgpu-number", (int64_t)nums * 1000);
  fx_pod_scalar(p, "volcano.sh/vgpu-memory", mem * 1000);
  Kiln__VgpuRequest *r = fx_alloc(sizeof(*r));
  kiln__vgpu_request__init(r);
  r->nums = nums;
  r->memory = mem;
  r->memory_percentage = 101;
  r->cores = cores;
  Kiln__PodDevices *d = fx_pod_devices(p);
  FX_APPEND(d->vgpu, d->n_vgpu, r);
  return p;
}

/* The value of annotation key the result writes for pod (on the node with node), or NULL. */
static inline const char *fx_annotation(const fx *f, const sch_result *r, const char *pod,
                                        bool node, const char *key) {
  int32_t t = fx_task(f, pod);
  for (size_t i = 0; i < r->nannotations; i++)
    if (r->annotations[i].task == t && r->annotations[i].node == node &&
        strcmp(r->annotations[i].key, key) == 0)
      return r->annotations[i].value;
  return NULL;
}

/* That the predicates refuse pod on node, and Volcano's reason for it. */
static inline void fx_refused(fx *f, const char *pod, const char *node, const char *reason) {
  const char *why;
  assert_int_equal(fx_predicate(f, pod, node, &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, reason);
}

#endif
