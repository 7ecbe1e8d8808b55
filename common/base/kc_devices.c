/* The device fields of a pod or node (Kiln__PodDevices, Kiln__NodeDevices) from its spec and
 * annotations, read the way Volcano's deviceshare code reads them (pkg/scheduler/api/devices:
 * nvidia/vgpu resourcereqs, nvidia/gpushare getGPUMemoryOfPod/getGPUNumberOfPod), written once
 * for the JSON and the protobuf decoders. */
#include <stdlib.h>
#include <string.h>

#include "kc_codec_int.h"

static const char *const pod_keys[] = {"volcano.sh/vgpu-ids-new", "volcano.sh/gpu-index",
                                       "nvidia.com/use-gputype", "nvidia.com/nouse-gputype",
                                       "volcano.sh/vgpu-mode"};
static const char *const node_keys[] = {"volcano.sh/node-vgpu-register",
                                        "volcano.sh/node-vgpu-handshake",
                                        "volcano.sh/gpu-unhealthy-ids", "hamivgpu", "gpu"};

/* A quantity's integer value (Go's Quantity.Value, rounded up), -1 when absent. */
static int64_t value(const kc_reslist *l, const char *name) {
  kc_res_entry *e = kc_reslist_find(l, name);
  return e ? kc_quantity_value(&e->q) : -1;
}

/* One container's limits and requests: lim, req reset and filled. */
static int read_ct(const kc_podres_src *src, const void *spec, bool init, size_t i, kc_reslist *lim,
                   kc_reslist *req) {
  lim->n = req->n = 0;
  int rc = src->add(spec, init, i, "limits", lim);
  return rc ? rc : src->add(spec, init, i, "requests", req);
}

/* Limit, else request; def when neither. */
static int64_t lim_req(const kc_reslist *lim, const kc_reslist *req, const char *name,
                       int64_t def) {
  int64_t v = value(lim, name);
  if (v < 0)
    v = value(req, name);
  return v < 0 ? def : v;
}

static int add_vgpu(Kiln__PodDevices *d, const kc_reslist *lim, const kc_reslist *req) {
  int64_t nums = value(lim, "volcano.sh/vgpu-number");
  bool mem_only = nums < 0;
  if (mem_only && value(lim, "volcano.sh/vgpu-memory") < 0)
    return 0;
  Kiln__VgpuRequest *v = malloc(sizeof(*v));
  Kiln__VgpuRequest **arr = v ? realloc(d->vgpu, (d->n_vgpu + 1) * sizeof(*arr)) : NULL;
  if (!arr) {
    free(v);
    return KC_ENOMEM;
  }
  d->vgpu = arr;
  kiln__vgpu_request__init(v);
  d->vgpu[d->n_vgpu++] = v;
  v->nums = mem_only ? 1 : (int32_t)(nums > INT32_MAX ? INT32_MAX : nums);
  v->memory = lim_req(lim, req, "volcano.sh/vgpu-memory", 0);
  int64_t pct = lim_req(lim, req, "volcano.sh/vgpu-memory-percentage", 101);
  /* Volcano: neither memory nor a percentage asks for the whole card. */
  if (pct == 101 && v->memory == 0)
    pct = 100;
  v->memory_percentage = (int32_t)(pct > INT32_MAX ? INT32_MAX : pct);
  int64_t cores = lim_req(lim, req, "volcano.sh/vgpu-cores", 0);
  v->cores = (int32_t)(cores > INT32_MAX ? INT32_MAX : cores);
  return 0;
}

static int64_t nonneg(int64_t v) {
  return v < 0 ? 0 : v;
}

static int dup_ann(char **dst, const char *v) {
  if (!v || !v[0])
    return 0;
  if (!(*dst = strdup(v)))
    return KC_ENOMEM;
  return 0;
}

int kc__pod_devices(Kiln__Pod *p, const kc_podres_src *src, const void *spec,
                    const char *(*ann)(const void *meta, const char *key), const void *meta) {
  Kiln__PodDevices *d = malloc(sizeof(*d));
  if (!d)
    return KC_ENOMEM;
  kiln__pod_devices__init(d);
  kc_reslist lim = {0}, req = {0};
  int rc = 0;
  int64_t mem = 0, num = 0, init_mem = 0, init_num = 0;
  size_t n = spec ? src->count(spec, false) : 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    rc = read_ct(src, spec, false, i, &lim, &req);
    if (rc == 0)
      rc = add_vgpu(d, &lim, &req);
    mem += nonneg(value(&lim, "volcano.sh/gpu-memory"));
    num += nonneg(value(&lim, "volcano.sh/gpu-number"));
  }
  n = spec ? src->count(spec, true) : 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    rc = read_ct(src, spec, true, i, &lim, &req);
    int64_t m = nonneg(value(&lim, "volcano.sh/gpu-memory"));
    int64_t g = nonneg(value(&lim, "volcano.sh/gpu-number"));
    init_mem = m > init_mem ? m : init_mem;
    init_num = g > init_num ? g : init_num;
  }
  kc_reslist_free(&lim);
  kc_reslist_free(&req);
  d->gpu_memory = mem > init_mem ? mem : init_mem;
  d->gpu_number = num > init_num ? num : init_num;
  char **dst[] = {&d->vgpu_ids, &d->gpu_index, &d->use_gputype, &d->nouse_gputype, &d->vgpu_mode};
  bool any = d->n_vgpu || d->gpu_memory || d->gpu_number;
  for (size_t i = 0; rc == 0 && meta && i < sizeof(pod_keys) / sizeof(pod_keys[0]); i++) {
    const char *v = ann(meta, pod_keys[i]);
    rc = dup_ann(dst[i], v);
    any = any || (v && v[0]);
  }
  if (rc < 0 || !any) {
    kiln__pod_devices__free_unpacked(d, NULL);
    return rc;
  }
  p->devices = d;
  return 0;
}

int kc__node_devices(Kiln__Node *n, const char *(*ann)(const void *meta, const char *key),
                     const void *meta) {
  if (!meta)
    return 0;
  Kiln__NodeDevices *d = malloc(sizeof(*d));
  if (!d)
    return KC_ENOMEM;
  kiln__node_devices__init(d);
  char **dst[] = {&d->vgpu_register, &d->vgpu_handshake, &d->gpu_unhealthy_ids, &d->vgpu_lock,
                  &d->gpu_lock};
  bool any = false;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < sizeof(node_keys) / sizeof(node_keys[0]); i++) {
    const char *v = ann(meta, node_keys[i]);
    rc = dup_ann(dst[i], v);
    any = any || (v && v[0]);
  }
  if (rc < 0 || !any) {
    kiln__node_devices__free_unpacked(d, NULL);
    return rc;
  }
  n->devices = d;
  return 0;
}
