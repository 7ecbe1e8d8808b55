/* deviceshare (Volcano pkg/scheduler/plugins/deviceshare): GPUs shared by memory
 * (volcano.sh/gpu-memory, deviceshare.GPUSharingEnable), whole GPUs by count
 * (volcano.sh/gpu-number, deviceshare.GPUNumberEnable) and vGPUs (volcano.sh/vgpu-number,
 * -memory, -memory-percentage, -cores, deviceshare.VGPUEnable), as Volcano's device plugins
 * register them on nodes. Every switch is false by default; sharing and number together, or
 * either with vGPU, is refused (Volcano exits).
 *
 * Predicate: the task's devices fit on the node (Volcano FilterNode, with its reasons).
 * Node order: with deviceshare.ScheduleWeight > 0 (default 0), the devices' score under
 * deviceshare.SchedulePolicy (binpack: the chosen GPUs' memory use in percent; spread: 100
 * per GPU the task would have alone), rounded, times the weight. Allocate and deallocate
 * events keep the devices' use (sch_device.c), so statements roll it back. At close every
 * task bound in this session with new devices gets the annotations Volcano's Allocate
 * writes, which the shell patches onto the pod before the binding; with
 * deviceshare.NodeLockEnable also the node lock annotation, and a node locked less than
 * 5 minutes ago takes no device task (Volcano's bind fails on it).
 *
 * MIG: the vGPU device configuration is the device-config.yaml of the ConfigMap
 * deviceshare.KnownGeometriesCMName (default volcano-vgpu-device-config) in
 * deviceshare.KnownGeometriesCMNamespace (default kube-system), which the shell watches
 * (sch_kinds.c); its nvidia.knownMigGeometries give the GPUs registered in mode "mig" their
 * geometries, and a vGPU request on them takes a MIG instance (sch_device_mig.c). Without
 * it, or when it does not parse, Volcano's default configuration: no geometries. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "kc_time.h"
#include "sch_device.h"
#include "sch_framework.h"

typedef struct ds_state {
  sch_devices *dev;
  sch_dev_conf conf;
  char policy[64];
  int64_t weight;
  bool node_lock;
  int64_t now;                  /* Unix seconds */
  int64_t now_ns;               /* the snapshot's time, for volcano.sh/predicate-time */
  bool *locked;                 /* per node: its lock is less than 5 minutes old (node_lock only) */
  sch_vgpu_config *vgpu_config; /* the ConfigMap's, or NULL */
} ds_state;

static int ds_predicate(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n,
                        sch_fit *why) {
  ds_state *st = ctx;
  if (!sch_devices_requests(st->dev, t))
    return SCH_FIT;
  int32_t ni = (int32_t)(n - sch_session_snapshot(ssn)->nodes);
  if (st->locked && st->locked[ni]) {
    int32_t r = sch_session_reasonf(ssn, "node %s has been locked within 5 minutes", n->name);
    if (r >= 0)
      sch_fit_add(why, r);
    return SCH_UNSCHEDULABLE;
  }
  double score;
  char msg[256];
  int rc = sch_devices_fit(st->dev, t, ni, &score, msg, sizeof(msg));
  if (rc == SCH_FIT)
    return SCH_FIT;
  if (rc > 0) {
    int32_t r = sch_session_reason(ssn, msg);
    if (r >= 0)
      sch_fit_add(why, r);
    return rc;
  }
  return SCH_UNSCHEDULABLE; /* out of memory: no place */
}

static double ds_score(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n) {
  ds_state *st = ctx;
  if (!sch_devices_requests(st->dev, t))
    return 0;
  double score = 0;
  char msg[256];
  int32_t ni = (int32_t)(n - sch_session_snapshot(ssn)->nodes);
  if (sch_devices_fit(st->dev, t, ni, &score, msg, sizeof(msg)) != SCH_FIT)
    return 0;
  return floor(score + 0.5) * (double)st->weight;
}

static void ds_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  ds_state *st = ctx;
  int32_t ti = (int32_t)(t - sch_session_snapshot(ssn)->tasks);
  int rc = sch_devices_allocate(st->dev, ti);
  if (rc < 0)
    KC_WARN("deviceshare: no devices for %s/%s on its node: %s", t->pod->namespace_, t->pod->name,
            kc_strerror(rc));
}

static void ds_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  ds_state *st = ctx;
  sch_devices_release(st->dev, (int32_t)(t - sch_session_snapshot(ssn)->tasks));
}

/* A lock annotation younger than 5 minutes (Volcano nodelock.LockNode refuses it). */
static int mark_locked(ds_state *st, const sch_snapshot *snap) {
  if (!(st->locked = calloc((size_t)snap->nnodes + 1, sizeof(*st->locked))))
    return KC_ENOMEM;
  for (int32_t i = 0; i < snap->nnodes; i++) {
    const Kiln__NodeDevices *nd = snap->nodes[i].node ? snap->nodes[i].node->devices : NULL;
    const char *v = nd ? (st->conf.vgpu ? nd->vgpu_lock : nd->gpu_lock) : NULL;
    int64_t at;
    if (v && v[0] && kc_time_parse(v, &at) == 0)
      st->locked[i] = st->now - at <= 5 * 60;
    else if (v && v[0])
      st->locked[i] = true; /* Volcano: an unparsable lock time fails the lock */
  }
  return 0;
}

/* Volcano loadConfigFromCM: the ConfigMap's device-config.yaml, parsed; NULL (the default
 * configuration) when there is none or it does not parse. */
/* A ConfigMap or namespace name the API server could hold (lower-case DNS characters), so
 * that it goes into a field selector as one name. */
static bool object_name(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > 253)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
          s[i] == '.'))
      return false;
  return true;
}

/* The plugin's arguments (a may be NULL); a name no object can have is the default's. */
static void config_name(const sch_args *a, const char **name, const char **ns) {
  *name = a ? sch_args_get(a, "deviceshare.KnownGeometriesCMName") : NULL;
  *ns = a ? sch_args_get(a, "deviceshare.KnownGeometriesCMNamespace") : NULL;
  *name = object_name(*name) ? *name : SCH_DEVICE_CONFIG_NAME;
  *ns = object_name(*ns) ? *ns : SCH_DEVICE_CONFIG_NAMESPACE;
}

const char *sch_device_config_name(const sch_conf *conf, const char **ns) {
  const sch_args *a = NULL;
  for (size_t i = 0; conf && !a && i < conf->ntiers; i++)
    for (size_t k = 0; !a && k < conf->tiers[i].nplugins; k++) {
      const sch_plugin_conf *pc = &conf->tiers[i].plugins[k];
      if (pc->plugin && strcmp(pc->plugin->name, "deviceshare") == 0)
        a = &pc->args;
    }
  const char *name, *n;
  config_name(a, &name, &n);
  if (ns)
    *ns = n;
  return name;
}

static sch_vgpu_config *device_config(const sch_snapshot *snap, const sch_args *a) {
  const char *name, *ns;
  config_name(a, &name, &ns);
  for (size_t i = 0; snap->msg && i < snap->msg->n_config_maps; i++) {
    const Kiln__ConfigMap *cm = snap->msg->config_maps[i];
    if (!cm->metadata || !cm->metadata->name || strcmp(cm->metadata->name, name) != 0 ||
        !cm->metadata->namespace_ || strcmp(cm->metadata->namespace_, ns) != 0)
      continue;
    for (size_t k = 0; k < cm->n_data; k++) {
      if (strcmp(cm->data[k]->key, "device-config.yaml") != 0 || !cm->data[k]->value)
        continue;
      sch_vgpu_config *c = NULL;
      char err[256] = "";
      const char *y = cm->data[k]->value;
      if (sch_vgpu_config_parse(y, strlen(y), &c, err, sizeof(err)) != 0)
        KC_V(3, "Volcano device config not found, using default config: %s/%s: %s", ns, name, err);
      return c;
    }
  }
  KC_V(3, "Volcano device config not found, using default config: %s/%s", ns, name);
  return NULL;
}

static int open_state(sch_session *ssn, const sch_plugin_conf *conf, ds_state *st) {
  const sch_args *a = &conf->args;
  st->conf.gpu_sharing = sch_args_bool(a, "deviceshare.GPUSharingEnable", false);
  st->conf.gpu_number = sch_args_bool(a, "deviceshare.GPUNumberEnable", false);
  st->conf.vgpu = sch_args_bool(a, "deviceshare.VGPUEnable", false);
  st->node_lock = sch_args_bool(a, "deviceshare.NodeLockEnable", false);
  const char *policy = sch_args_get(a, "deviceshare.SchedulePolicy");
  snprintf(st->policy, sizeof(st->policy), "%s", policy ? policy : "");
  st->conf.policy = st->policy;
  st->weight = sch_args_int(a, "deviceshare.ScheduleWeight", 0);
  if (st->conf.gpu_sharing && st->conf.gpu_number) {
    KC_ERROR("deviceshare: can not define true in both gpu sharing and gpu number");
    return KC_EINVAL;
  }
  if ((st->conf.gpu_sharing || st->conf.gpu_number) && st->conf.vgpu) {
    KC_ERROR("deviceshare: gpu-share and vgpu can't be used together");
    return KC_EINVAL;
  }
  if (!st->conf.gpu_sharing && !st->conf.gpu_number && !st->conf.vgpu)
    return 0; /* no device registered: Volcano's predicate and score find nothing to do */
  sch_snapshot *snap = sch_session_snapshot(ssn);
  st->now = sch_session_opts(ssn)->now;
  if (st->conf.vgpu)
    st->conf.vgpu_config = st->vgpu_config = device_config(snap, a);
  st->now_ns =
      snap->msg && snap->msg->time_unix_nano ? snap->msg->time_unix_nano : st->now * 1000000000LL;
  int rc = sch_devices_new(snap, &st->conf, st->now, &st->dev);
  if (rc == 0 && st->node_lock)
    rc = mark_locked(st, snap);
  if (rc == 0)
    rc = sch_add_predicate_fn(ssn, ds_predicate, st);
  if (rc == 0 && st->weight > 0)
    rc = sch_add_node_order_fn(ssn, ds_score, st);
  if (rc == 0)
    rc = sch_add_event_handler(ssn, ds_allocate, ds_deallocate, st);
  return rc;
}

static void ds_free(ds_state *st) {
  sch_devices_free(st->dev);
  sch_vgpu_config_free(st->vgpu_config);
  free(st->locked);
  free(st);
}

/* The session does not close the plugin whose open fails: it frees its own state then. */
static int ds_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  ds_state *st = calloc(1, sizeof(*st));
  if (!st)
    return KC_ENOMEM;
  int rc = open_state(ssn, conf, st);
  if (rc < 0)
    ds_free(st);
  else
    *state = st;
  return rc;
}

/* Volcano's Allocate: the annotations of one bound task (and the node lock first). */
static int annotate(sch_session *ssn, ds_state *st, int32_t ti) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  const sch_task *t = &snap->tasks[ti];
  char ids[4096], now[32], when[KC_TIME_LEN];
  int rc = sch_devices_encode(st->dev, ti, ids, sizeof(ids));
  if (rc < 0)
    return rc == KC_ENOENT ? 0 : rc;
  bool vgpu = sch_devices_is_vgpu(st->dev, ti);
  if (st->node_lock) {
    kc_time_format(st->now, when);
    rc = sch_session_annotate(ssn, ti, true, vgpu ? SCH_DEV_VGPU_NAME : "gpu", when);
    if (rc < 0)
      return rc;
  }
  if (!vgpu) {
    snprintf(now, sizeof(now), "%lld", (long long)st->now_ns);
    rc = sch_session_annotate(ssn, ti, false, "volcano.sh/predicate-time", now);
    return rc ? rc : sch_session_annotate(ssn, ti, false, "volcano.sh/gpu-index", ids);
  }
  snprintf(now, sizeof(now), "%lld", (long long)st->now);
  const char *kv[][2] = {
      {"volcano.sh/vgpu-node", snap->nodes[t->node].name},
      {"volcano.sh/vgpu-time", now},
      {"volcano.sh/vgpu-ids-new", ids},
      {"volcano.sh/devices-to-allocate", ids},
      {"volcano.sh/bind-phase", "allocating"},
      {"volcano.sh/bind-time", now},
  };
  for (size_t i = 0; rc == 0 && i < sizeof(kv) / sizeof(kv[0]); i++)
    rc = sch_session_annotate(ssn, ti, false, kv[i][0], kv[i][1]);
  return rc;
}

static void ds_close(sch_session *ssn, void *state) {
  ds_state *st = state;
  if (!st)
    return;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  for (int32_t i = 0; st->dev && i < snap->ntasks; i++) {
    int32_t n;
    bool fresh;
    if (snap->tasks[i].status != SCH_TASK_BINDING || !sch_devices_held(st->dev, i, &n, &fresh) ||
        !fresh)
      continue;
    if (annotate(ssn, st, i) < 0)
      KC_ERROR("deviceshare: out of memory writing the devices of %s/%s",
               snap->tasks[i].pod->namespace_, snap->tasks[i].pod->name);
  }
  ds_free(st);
}

const sch_plugin sch_plugin_deviceshare = {
    .name = "deviceshare",
    .open = ds_open,
    .close = ds_close,
};
