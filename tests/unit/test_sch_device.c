/* The deviceshare plugin and its device bookkeeping (sch_device.c): vGPUs shared by memory,
 * GPU share by memory and GPU number, what pods already hold, statements rolling devices
 * back, the annotations written for the shell, and Volcano's reasons. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "sch_device.h"
#include "test_sch_device_fixture.h"

static const char number_yaml[] = "actions: \"enqueue, allocate\"\n"
                                  "tiers:\n"
                                  "- plugins:\n"
                                  "  - name: gang\n"
                                  "  - name: deviceshare\n"
                                  "    arguments:\n"
                                  "      deviceshare.GPUNumberEnable: true\n";

static const char share_yaml[] = "actions: \"enqueue, allocate\"\n"
                                 "tiers:\n"
                                 "- plugins:\n"
                                 "  - name: deviceshare\n"
                                 "    arguments:\n"
                                 "      deviceshare.GPUSharingEnable: true\n";

static const char *bound_node(const fx *f, const sch_result *r, const char *pod) {
  int32_t t = fx_task(f, pod);
  for (size_t i = 0; i < r->nbinds; i++)
    if (r->binds[i].task == t)
      return f->snap->nodes[r->binds[i].node].name;
  return NULL;
}

static const char two_gpus[] = "GPU-a,10,24000,NVIDIA-Tesla-T4,true,hami-core:"
                               "GPU-b,10,24000,NVIDIA-Tesla-T4,true,hami-core:";

/* Four pods of 8000 MiB: three share one 24000 MiB GPU, the fourth takes the other; each is
 * told its GPU in volcano.sh/vgpu-ids-new and volcano.sh/devices-to-allocate. */
static void vgpu_memory_sharing(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_vgpu_node(f, "n1", two_gpus, 2, 24000);
  for (int i = 0; i < 4; i++) {
    char g[16], p[16];
    snprintf(g, sizeof(g), "g%d", i);
    snprintf(p, sizeof(p), "p%d", i);
    fx_pg(f, g, "default", 1, "Inqueue");
    fx_vgpu_pod(f, p, g, 1, 8000, 0, NULL);
  }
  fx_open(f, fx_vgpu_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 4);
  int on_b = 0, on_a = 0;
  for (int i = 0; i < 4; i++) {
    char p[16];
    snprintf(p, sizeof(p), "p%d", i);
    const char *ids = fx_annotation(f, r, p, false, "volcano.sh/vgpu-ids-new");
    assert_non_null(ids);
    assert_string_equal(fx_annotation(f, r, p, false, "volcano.sh/devices-to-allocate"), ids);
    assert_string_equal(fx_annotation(f, r, p, false, "volcano.sh/vgpu-node"), "n1");
    assert_string_equal(fx_annotation(f, r, p, false, "volcano.sh/bind-phase"), "allocating");
    assert_string_equal(fx_annotation(f, r, p, false, "volcano.sh/vgpu-time"), "1795953600");
    assert_null(fx_annotation(f, r, p, true, "hamivgpu"));
    on_b += strcmp(ids, "GPU-b,NVIDIA,8000,0:") == 0;
    on_a += strcmp(ids, "GPU-a,NVIDIA,8000,0:") == 0;
  }
  /* Volcano tries the GPUs from the last registered one. */
  assert_int_equal(on_b, 3);
  assert_int_equal(on_a, 1);
  sch_result_free(r);
  fx_free(f);
}

/* What running pods hold (their volcano.sh/vgpu-ids-new) is not offered again, and the
 * reason says so in Volcano's words. */
static void vgpu_existing_pods_hold(void **state) {
  (void)state;
  fx *f = fx_new();
  /* resources for two GPUs, one registered: only the devices keep the pod out */
  fx_vgpu_node(f, "n1", "GPU-a,10,24000,NVIDIA-Tesla-T4,true,hami-core:", 2, 24000);
  Kiln__Pod *old = fx_vgpu_pod(f, "old", NULL, 1, 20000, 0, "n1");
  fx_pod_devices(old)->vgpu_ids = fx_str("GPU-a,NVIDIA,20000,0:");
  fx_pg(f, "g", "default", 1, "Inqueue");
  fx_vgpu_pod(f, "new", "g", 1, 8000, 0, NULL);
  fx_open(f, fx_vgpu_yaml);
  fx_refused(f, "new", "n1", "hami-vgpuDeviceSharing error");
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  assert_int_equal(r->nannotations, 0);
  sch_result_free(r);
  fx_free(f);
}

/* A node without the device plugin's registration has no vGPUs (Volcano's message), a node
 * whose plugin left the handshake unanswered for more than 60 s neither, and a core-100 task
 * wants a card to itself. */
static void vgpu_node_without_devices(void **state) {
  (void)state;
  fx *f = fx_new();
  Kiln__Node *plain = fx_node(f, "plain", 32000, 64 * GI, 110);
  fx_res_scalar(plain->allocatable, "volcano.sh/vgpu-number", 10000);
  fx_res_scalar(plain->allocatable, "volcano.sh/vgpu-memory", 24000000);
  Kiln__Node *gone = fx_vgpu_node(f, "gone", two_gpus, 2, 24000);
  free(gone->devices->vgpu_handshake);
  gone->devices->vgpu_handshake = fx_str("Requesting_2026.11.29 11:58:59");
  Kiln__Node *busy =
      fx_vgpu_node(f, "busy", "GPU-c,10,24000,NVIDIA-Tesla-T4,true,hami-core:", 1, 24000);
  (void)busy;
  Kiln__Pod *old = fx_vgpu_pod(f, "old", NULL, 1, 1000, 10, "busy");
  fx_pod_devices(old)->vgpu_ids = fx_str("GPU-c,NVIDIA,1000,10:");
  fx_pg(f, "g", "default", 1, "Inqueue");
  fx_vgpu_pod(f, "whole", "g", 1, 1000, 100, NULL);
  fx_open(f, fx_vgpu_yaml);
  fx_refused(f, "whole", "plain", "node not initialized with devicehamivgpu");
  fx_refused(f, "whole", "gone", "node not initialized with devicehamivgpu");
  fx_refused(f, "whole", "busy", "hami-vgpuDeviceSharing error");
  fx_free(f);
}

/* A gang of three that only two GPUs' memory can take binds none, and the statement's
 * discard gives every GPU back: a later one-pod job still finds room. */
static void vgpu_gang_rolls_back(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_vgpu_node(f, "n1", two_gpus, 2, 24000);
  fx_pg(f, "gang", "default", 3, "Inqueue");
  for (int i = 0; i < 3; i++) {
    char p[16];
    snprintf(p, sizeof(p), "gang-%d", i);
    fx_vgpu_pod(f, p, "gang", 1, 16000, 0, NULL);
  }
  Kiln__PodGroup *late = fx_pg(f, "late", "default", 1, "Inqueue");
  free(late->metadata->creation_timestamp);
  late->metadata->creation_timestamp = fx_str("2026-11-29T11:00:00Z");
  fx_vgpu_pod(f, "late-0", "late", 2, 24000, 0, NULL);
  fx_open(f, fx_vgpu_yaml);
  sch_result *r = fx_run(f);
  assert_null(bound_node(f, r, "gang-0"));
  assert_null(bound_node(f, r, "gang-1"));
  assert_null(bound_node(f, r, "gang-2"));
  /* both whole GPUs were free again for a pod of two */
  assert_non_null(bound_node(f, r, "late-0"));
  assert_string_equal(fx_annotation(f, r, "late-0", false, "volcano.sh/vgpu-ids-new"),
                      "GPU-b,NVIDIA,24000,0:GPU-a,NVIDIA,24000,0:");
  sch_result_free(r);
  fx_free(f);
}

/* The bookkeeping itself: allocate and release are exact inverses, and a pod's own
 * assignment comes back unchanged after it is released (an undone eviction). */
static void core_allocate_release(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_vgpu_node(f, "n1", two_gpus, 2, 24000);
  Kiln__Pod *old = fx_vgpu_pod(f, "old", NULL, 1, 4000, 30, "n1");
  fx_pod_devices(old)->vgpu_ids = fx_str("GPU-a,NVIDIA,4000,30:");
  fx_vgpu_pod(f, "new", NULL, 2, 10000, 20, NULL);
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  sch_dev_conf conf = {.vgpu = true, .policy = "binpack"};
  sch_devices *d;
  assert_int_equal(sch_devices_new(f->snap, &conf, 1795953600, &d), 0);
  int32_t first, n = sch_devices_node(d, 0, &first);
  assert_int_equal(n, 2);
  const sch_gpu *a = sch_devices_gpu(d, first), *b = sch_devices_gpu(d, first + 1);
  assert_string_equal(a->uuid, "GPU-a");
  assert_int_equal(a->used_num, 1);
  assert_int_equal(a->used_mem, 4000);
  assert_int_equal(a->used_core, 30);
  int32_t nt = fx_task(f, "new"), ot = fx_task(f, "old");
  double score;
  char why[128];
  assert_int_equal(sch_devices_fit(d, &f->snap->tasks[nt], 0, &score, why, sizeof(why)), SCH_FIT);
  /* binpack: b at 10000/24000, a at 14000/24000 after adding: 41.67 + 58.33 */
  assert_true(score > 99.9 && score < 100.1);
  f->snap->tasks[nt].node = 0;
  assert_int_equal(sch_devices_allocate(d, nt), 0);
  assert_int_equal(a->used_mem, 14000);
  assert_int_equal(b->used_mem, 10000);
  assert_int_equal(a->used_core, 50);
  char enc[256];
  assert_int_equal(sch_devices_encode(d, nt, enc, sizeof(enc)), 0);
  assert_string_equal(enc, "GPU-b,NVIDIA,10000,20:GPU-a,NVIDIA,10000,20:");
  assert_int_equal(sch_devices_encode(d, nt, enc, 8), KC_ERANGE);
  sch_devices_release(d, nt);
  sch_devices_release(d, nt); /* twice is once */
  assert_int_equal(a->used_mem, 4000);
  assert_int_equal(b->used_mem, 0);
  assert_int_equal(b->used_num, 0);
  sch_devices_release(d, ot);
  assert_int_equal(a->used_num, 0);
  assert_int_equal(sch_devices_allocate(d, ot), 0);
  assert_int_equal(a->used_mem, 4000);
  assert_int_equal(a->used_core, 30);
  int32_t held;
  bool fresh = true;
  assert_non_null(sch_devices_held(d, ot, &held, &fresh));
  assert_int_equal(held, 1);
  assert_false(fresh);
  sch_devices_free(d);
  fx_free(f);
}

/* GPU number: two pods of volcano.sh/gpu-number 2 on a 4-card node take cards 0,1 and 2,3;
 * a third finds no idle card, with Volcano's reason. */
static void gpu_number_never_shares(void **state) {
  (void)state;
  fx *f = fx_new();
  Kiln__Node *n = fx_node(f, "n1", 32000, 64 * GI, 110);
  fx_res_scalar(n->capacity, "volcano.sh/gpu-number", 4000);
  fx_res_scalar(n->capacity, "volcano.sh/gpu-memory", 4 * 16000 * 1000LL);
  fx_res_scalar(n->allocatable, "volcano.sh/gpu-number", 4000);
  for (int i = 0; i < 3; i++) {
    char g[16], p[16];
    snprintf(g, sizeof(g), "g%d", i);
    snprintf(p, sizeof(p), "p%d", i);
    Kiln__PodGroup *pg = fx_pg(f, g, "default", 1, "Inqueue");
    char ts[32];
    snprintf(ts, sizeof(ts), "2026-11-29T10:00:0%dZ", i);
    free(pg->metadata->creation_timestamp);
    pg->metadata->creation_timestamp = fx_str(ts);
    Kiln__Pod *pod = fx_pod(f, p, g, 100, GI, NULL);
    fx_pod_devices(pod)->gpu_number = 2;
  }
  fx_open(f, number_yaml);
  sch_result *r = fx_run(f);
  assert_string_equal(fx_annotation(f, r, "p0", false, "volcano.sh/gpu-index"), "0,1");
  assert_string_equal(fx_annotation(f, r, "p1", false, "volcano.sh/gpu-index"), "2,3");
  assert_string_equal(fx_annotation(f, r, "p0", false, "volcano.sh/predicate-time"),
                      "1795953600000000000");
  assert_null(bound_node(f, r, "p2"));
  sch_result_free(r);
  fx_free(f);
  /* the third's reason, with the first two running on their cards */
  f = fx_new();
  n = fx_node(f, "n1", 32000, 64 * GI, 110);
  fx_res_scalar(n->capacity, "volcano.sh/gpu-number", 4000);
  fx_res_scalar(n->capacity, "volcano.sh/gpu-memory", 4 * 16000 * 1000LL);
  fx_node_devices(n)->gpu_unhealthy_ids = fx_str("3");
  Kiln__Pod *p0 = fx_pod(f, "p0", NULL, 100, GI, "n1");
  fx_pod_devices(p0)->gpu_number = 2;
  fx_pod_devices(p0)->gpu_index = fx_str("0,1");
  Kiln__Pod *p1 = fx_pod(f, "p1", NULL, 100, GI, NULL);
  fx_pod_devices(p1)->gpu_number = 2;
  fx_open(f, number_yaml);
  fx_refused(f, "p1", "n1", "GpuNumber no enough gpu number on node n1");
  fx_free(f);
}

/* GPU share: the lowest card with the memory left; a node with no gpu capacity has none;
 * the node lock is written first when enabled, and a fresh lock keeps device tasks off. */
static void gpu_share_by_memory(void **state) {
  (void)state;
  fx *f = fx_new();
  Kiln__Node *n = fx_node(f, "n1", 32000, 64 * GI, 110);
  fx_res_scalar(n->capacity, "volcano.sh/gpu-number", 2000);
  fx_res_scalar(n->capacity, "volcano.sh/gpu-memory", 2 * 16000 * 1000LL);
  Kiln__Node *locked = fx_node(f, "locked", 32000, 64 * GI, 110);
  fx_res_scalar(locked->capacity, "volcano.sh/gpu-number", 2000);
  fx_res_scalar(locked->capacity, "volcano.sh/gpu-memory", 2 * 16000 * 1000LL);
  fx_node_devices(locked)->gpu_lock = fx_str("2026-11-29T11:58:00Z");
  fx_node(f, "plain", 32000, 64 * GI, 110);
  Kiln__Pod *old = fx_pod(f, "old", NULL, 100, GI, "n1");
  fx_pod_devices(old)->gpu_memory = 10000;
  fx_pod_devices(old)->gpu_index = fx_str("0");
  Kiln__Pod *p = fx_pod(f, "p", NULL, 100, GI, NULL);
  fx_pod_devices(p)->gpu_memory = 8000;
  char yaml[512];
  snprintf(yaml, sizeof(yaml), "%s      deviceshare.NodeLockEnable: true\n", share_yaml);
  fx_open(f, yaml);
  fx_refused(f, "p", "plain", "node not initialized with deviceGpuShare");
  fx_refused(f, "p", "locked", "node locked has been locked within 5 minutes");
  sch_result *r = fx_run(f);
  assert_string_equal(bound_node(f, r, "p"), "n1");
  assert_string_equal(fx_annotation(f, r, "p", false, "volcano.sh/gpu-index"), "1");
  assert_string_equal(fx_annotation(f, r, "p", true, "gpu"), "2026-11-29T12:00:00Z");
  /* the node lock comes before the pod's annotations */
  assert_true(r->annotations[0].node);
  sch_result_free(r);
  fx_free(f);
}

/* Volcano exits on these; here the session does not open. */
static void conflicting_switches(void **state) {
  (void)state;
  static const char *const bad[] = {
      "      deviceshare.GPUSharingEnable: true\n      deviceshare.GPUNumberEnable: true\n",
      "      deviceshare.GPUNumberEnable: true\n      deviceshare.VGPUEnable: true\n",
  };
  for (size_t i = 0; i < 2; i++) {
    fx *f = fx_new();
    fx_node(f, "n1", 1000, GI, 10);
    char yaml[512], err[256];
    snprintf(yaml, sizeof(yaml),
             "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: deviceshare\n"
             "    arguments:\n%s",
             bad[i]);
    assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
    assert_int_equal(sch_conf_parse(yaml, strlen(yaml), &f->conf, err, sizeof(err)), 0);
    assert_int_equal(sch_session_open(f->snap, f->conf, NULL, &f->ssn), KC_EINVAL);
    f->ssn = NULL;
    fx_free(f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(vgpu_memory_sharing),       cmocka_unit_test(vgpu_existing_pods_hold),
      cmocka_unit_test(vgpu_node_without_devices), cmocka_unit_test(vgpu_gang_rolls_back),
      cmocka_unit_test(core_allocate_release),     cmocka_unit_test(gpu_number_never_shares),
      cmocka_unit_test(gpu_share_by_memory),       cmocka_unit_test(conflicting_switches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
