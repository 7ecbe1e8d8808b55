/* MIG geometries for vGPU (sch_device_mig.c and the deviceshare plugin): Volcano's
 * volcano-vgpu-device-config ConfigMap read, a request fitted to the smallest instance of
 * the first group that holds it, then only to instance kinds of the group in use, what
 * running pods hold, the assignment annotation ("UUID[group-position]"), statements giving
 * instances back, and the pod's volcano.sh/vgpu-mode against the node's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sch_conf.h"
#include "sch_device.h"
#include "test_sch_device_fixture.h"

/* The shape of the device plugin's default geometries (A30 and A100 40GB). */
static const char geometries[] =
    "nvidia:\n"
    "  resourceCountName: volcano.sh/vgpu-number\n"
    "  knownMigGeometries:\n"
    "  - models: [ \"A30\" ]\n"
    "    allowedGeometries:\n"
    "      - group: group1\n"
    "        geometries:\n"
    "        - name: 1g.6gb\n"
    "          memory: 6144\n"
    "          count: 4\n"
    "  - models: [ \"A100-SXM4-40GB\", \"A100-40GB-PCIe\", \"A100-PCIE-40GB\" ]\n"
    "    allowedGeometries:\n"
    "      - group: \"group1\"\n"
    "        geometries:\n"
    "        - name: 1g.5gb\n"
    "          memory: 5120\n"
    "          count: 7\n"
    "      - group: \"group2\"\n"
    "        geometries:\n"
    "        - name: 2g.10gb\n"
    "          memory: 10240\n"
    "          count: 3\n"
    "        - name: 1g.5gb\n"
    "          memory: 5120\n"
    "          count: 1\n"
    "      - group: \"group3\"\n"
    "        geometries:\n"
    "        - name: 3g.20gb\n"
    "          memory: 20480\n"
    "          count: 2\n";

static const char a100[] = "GPU-a,10,40960,NVIDIA-A100-PCIE-40GB,true,mig:";

static sch_vgpu_config *parse_ok(const char *y) {
  sch_vgpu_config *c = NULL;
  char err[256] = "";
  assert_int_equal(sch_vgpu_config_parse(y, strlen(y), &c, err, sizeof(err)), 0);
  assert_non_null(c);
  return c;
}

/* The nvidia section's knownMigGeometries in Volcano's field names; a type takes the first
 * entry one of whose models it contains. */
static void config_parses_geometries(void **state) {
  (void)state;
  sch_vgpu_config *c = parse_ok(geometries);
  assert_int_equal(c->nknown, 2);
  assert_int_equal(c->known[1].nmodels, 3);
  assert_string_equal(c->known[1].models[2], "A100-PCIE-40GB");
  assert_int_equal(c->known[1].ngroups, 3);
  const sch_mig_group *g2 = &c->known[1].groups[1];
  assert_string_equal(g2->group, "group2");
  assert_int_equal(g2->ninst, 2);
  assert_string_equal(g2->inst[0].name, "2g.10gb");
  assert_int_equal(g2->inst[0].memory, 10240);
  assert_int_equal(g2->inst[0].count, 3);
  assert_int_equal(c->gpu_memory_factor, 0);
  assert_ptr_equal(sch_mig_models_for(c, "NVIDIA-A100-PCIE-40GB"), &c->known[1]);
  assert_ptr_equal(sch_mig_models_for(c, "NVIDIA-A30"), &c->known[0]);
  assert_null(sch_mig_models_for(c, "NVIDIA-Tesla-T4"));
  /* positions: 2g.10gb at 0..2, then 1g.5gb at 3 */
  assert_int_equal(sch_mig_instance_at(g2, 2), 0);
  assert_int_equal(sch_mig_instance_at(g2, 3), 1);
  assert_int_equal(sch_mig_instance_at(g2, 4), -1);
  sch_vgpu_config_free(c);
  /* nothing about MIG: no geometries; not YAML or a memory that is not a number: refused */
  c = parse_ok("nvidia:\n  deviceSplitCount: 10\n  gpuMemoryFactor: 2\n");
  assert_int_equal(c->nknown, 0);
  assert_int_equal(c->gpu_memory_factor, 2);
  sch_vgpu_config_free(c);
  char err[256] = "";
  c = NULL;
  assert_int_equal(sch_vgpu_config_parse("nvidia: [", 9, &c, err, sizeof(err)), KC_EINVAL);
  assert_null(c);
  const char *bad_mem = "nvidia:\n  knownMigGeometries:\n  - models: [A30]\n"
                        "    allowedGeometries:\n    - group: g\n      geometries:\n"
                        "      - {name: x, memory: lots, count: 1}\n";
  assert_int_equal(sch_vgpu_config_parse(bad_mem, strlen(bad_mem), &c, err, sizeof(err)),
                   KC_EINVAL);
  assert_non_null(strstr(err, "memory"));
}

/* findMatch: a fresh GPU takes the first group with an instance that holds the request, the
 * smallest such; a group in use only its instance kinds in use, at their first free place. */
static void find_fits_geometries(void **state) {
  (void)state;
  sch_vgpu_config *c = parse_ok(geometries);
  const sch_mig_models *m = &c->known[1];
  int32_t group, pos;
  int64_t mem;
  assert_true(sch_mig_find(m, -1, 0, 4000, &group, &pos, &mem));
  assert_int_equal(group, 0); /* group1's 1g.5gb */
  assert_int_equal(pos, 0);
  assert_int_equal(mem, 5120);
  assert_true(sch_mig_find(m, -1, 0, 8000, &group, &pos, &mem));
  assert_int_equal(group, 1); /* group2's 2g.10gb, the first group with room for 8000 */
  assert_int_equal(pos, 0);
  assert_int_equal(mem, 10240);
  /* group2 in use at 0 and 1: the next 2g.10gb is 2 */
  assert_true(sch_mig_find(m, 1, 0x3, 8000, &group, &pos, &mem));
  assert_int_equal(pos, 2);
  /* a small request on that group: its 1g.5gb (position 3) is a kind not in use, so the
   * 2g.10gb it uses is taken (Volcano's pickFromGroup) */
  assert_true(sch_mig_find(m, 1, 0x1, 4000, &group, &pos, &mem));
  assert_int_equal(pos, 1);
  assert_int_equal(mem, 10240);
  /* group1 in use at 0: its next 1g.5gb */
  assert_true(sch_mig_find(m, 0, 0x1, 100, &group, &pos, &mem));
  assert_int_equal(group, 0);
  assert_int_equal(pos, 1);
  assert_int_equal(mem, 5120);
  /* group2's one 1g.5gb (position 3) in use and full: the 2g.10gb in use */
  assert_true(sch_mig_find(m, 1, 0x1 | 0x8, 100, &group, &pos, &mem));
  assert_int_equal(pos, 1);
  assert_false(sch_mig_find(m, 1, 0x7 | 0x8, 100, &group, &pos, &mem));
  /* all three 2g.10gb taken: 8000 does not fit in the group in use */
  assert_false(sch_mig_find(m, 1, 0x7, 8000, &group, &pos, &mem));
  assert_int_equal(pos, -1);
  /* larger than every instance; no geometries */
  assert_false(sch_mig_find(m, -1, 0, 30000, &group, &pos, &mem));
  assert_false(sch_mig_find(NULL, -1, 0, 1, &group, &pos, &mem));
  sch_vgpu_config_free(c);
}

/* A node of gpus A100 40GB GPUs (40960 MiB each) registered as reg. */
static Kiln__Node *mig_node(fx *f, const char *name, const char *reg, int64_t gpus) {
  return fx_vgpu_node(f, name, reg, gpus, 40960);
}

/* One vGPU of mem MiB. */
static Kiln__Pod *mig_pod(fx *f, const char *name, const char *group, int64_t mem,
                          const char *node) {
  return fx_vgpu_pod(f, name, group, 1, mem, 0, node);
}

/* The ConfigMap as the shell's watch puts it in the snapshot. */
static void device_config_map(fx *f, const char *ns, const char *yaml) {
  Kiln__ConfigMap *cm = fx_alloc(sizeof(*cm));
  kiln__config_map__init(cm);
  cm->metadata = fx_meta(ns, "volcano-vgpu-device-config");
  Kiln__ConfigMap__DataEntry *e = fx_alloc(sizeof(*e));
  kiln__config_map__data_entry__init(e);
  e->key = fx_str("device-config.yaml");
  e->value = fx_str(yaml);
  FX_APPEND(cm->data, cm->n_data, e);
  FX_APPEND(f->msg->config_maps, f->msg->n_config_maps, cm);
}

static const char *ids_of(const fx *f, const sch_result *r, const char *pod) {
  return fx_annotation(f, r, pod, false, "volcano.sh/vgpu-ids-new");
}

/* A running pod holds group2's first 2g.10gb; three pods of 8000 MiB: two take the group's
 * other 2g.10gb instances, the third finds none (the GPU's memory would still hold it). */
static void session_assigns_instances(void **state) {
  (void)state;
  fx *f = fx_new();
  device_config_map(f, "kube-system", geometries);
  mig_node(f, "n1", a100, 1);
  Kiln__Pod *old = mig_pod(f, "old", NULL, 9000, "n1");
  old->devices->vgpu_ids = fx_str("GPU-a[group2-0],NVIDIA,9000,0:");
  for (int i = 0; i < 3; i++) {
    char g[8], p[8];
    snprintf(g, sizeof(g), "g%d", i);
    snprintf(p, sizeof(p), "p%d", i);
    fx_pg(f, g, "default", 1, "Inqueue");
    mig_pod(f, p, g, 8000, NULL);
  }
  fx_open(f, fx_vgpu_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 2);
  assert_string_equal(ids_of(f, r, "p0"), "GPU-a[group2-1],NVIDIA,8000,0:");
  assert_string_equal(ids_of(f, r, "p1"), "GPU-a[group2-2],NVIDIA,8000,0:");
  assert_null(ids_of(f, r, "p2"));
  sch_result_free(r);
  fx_free(f);
}

/* Without the ConfigMap (or in another namespace than deviceshare.KnownGeometriesCMNamespace)
 * a GPU registered as "mig" shares by hami-core; a pod asking for volcano.sh/vgpu-mode "mig"
 * then fits no node, in Volcano's reason. The namespace argument finds it elsewhere. */
static void session_without_config_is_hami_core(void **state) {
  (void)state;
  fx *f = fx_new();
  device_config_map(f, "volcano-system", geometries);
  mig_node(f, "n1", a100, 1);
  fx_pg(f, "g", "default", 1, "Inqueue");
  mig_pod(f, "plain", "g", 8000, NULL);
  fx_pg(f, "h", "default", 1, "Inqueue");
  Kiln__Pod *wants = mig_pod(f, "wants", "h", 8000, NULL);
  wants->devices->vgpu_mode = fx_str("mig");
  fx_open(f, fx_vgpu_yaml);
  fx_refused(f, "wants", "n1", "hami-vgpuDeviceSharing error");
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_string_equal(ids_of(f, r, "plain"), "GPU-a,NVIDIA,8000,0:");
  sch_result_free(r);
  fx_free(f);

  f = fx_new();
  device_config_map(f, "volcano-system", geometries);
  mig_node(f, "n1", a100, 1);
  fx_pg(f, "h", "default", 1, "Inqueue");
  wants = mig_pod(f, "wants", "h", 8000, NULL);
  wants->devices->vgpu_mode = fx_str("mig");
  char conf[512];
  snprintf(conf, sizeof(conf), "%s      deviceshare.KnownGeometriesCMNamespace: volcano-system\n",
           fx_vgpu_yaml);
  fx_open(f, conf);
  r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_string_equal(ids_of(f, r, "wants"), "GPU-a[group2-0],NVIDIA,8000,0:");
  sch_result_free(r);
  fx_free(f);
}

/* A gang of four pods of 8000 MiB on one MIG GPU (three 2g.10gb) binds none, and its
 * statement gives the instances back: a one-pod job after it takes position 0. */
static void session_gang_gives_instances_back(void **state) {
  (void)state;
  fx *f = fx_new();
  device_config_map(f, "kube-system", geometries);
  mig_node(f, "n1", a100, 1);
  fx_pg(f, "gang", "default", 4, "Inqueue");
  for (int i = 0; i < 4; i++) {
    char p[8];
    snprintf(p, sizeof(p), "m%d", i);
    mig_pod(f, p, "gang", 8000, NULL);
  }
  fx_pg(f, "solo", "default", 1, "Inqueue");
  mig_pod(f, "s", "solo", 20000, NULL);
  fx_open(f, fx_vgpu_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  /* group3's 3g.20gb: the gang's group2 was given back, so the GPU had no group in use */
  assert_string_equal(ids_of(f, r, "s"), "GPU-a[group3-0],NVIDIA,20000,0:");
  sch_result_free(r);
  fx_free(f);
}

/* gpuMemoryFactor 2: a request of 3000 MiB is fitted as 6000 (group2's 2g.10gb, not group1's
 * 1g.5gb), the GPU counts 10240 / 2 = 5120 MiB of it, and the annotation names the request. */
static void session_memory_factor(void **state) {
  (void)state;
  fx *f = fx_new();
  char y[sizeof(geometries) + 64];
  snprintf(y, sizeof(y), "%s  gpuMemoryFactor: 2\n", geometries);
  device_config_map(f, "kube-system", y);
  mig_node(f, "n1", a100, 1);
  fx_pg(f, "g", "default", 1, "Inqueue");
  mig_pod(f, "p", "g", 3000, NULL);
  fx_open(f, fx_vgpu_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_string_equal(ids_of(f, r, "p"), "GPU-a[group2-0],NVIDIA,3000,0:");
  sch_result_free(r);
  fx_free(f);
}

/* The ConfigMap's name and namespace: the first deviceshare entry's arguments, Volcano's
 * defaults without them, and the defaults for a name no object can have (it goes into the
 * watch's field selector). */
static void config_name_from_arguments(void **state) {
  (void)state;
  static const struct {
    const char *args, *name, *ns;
  } cases[] = {
      {"", "volcano-vgpu-device-config", "kube-system"},
      {"      deviceshare.KnownGeometriesCMName: hami-scheduler-device\n"
       "      deviceshare.KnownGeometriesCMNamespace: volcano-system\n",
       "hami-scheduler-device", "volcano-system"},
      {"      deviceshare.KnownGeometriesCMName: \"a,metadata.namespace=x\"\n",
       "volcano-vgpu-device-config", "kube-system"},
      {"      deviceshare.KnownGeometriesCMNamespace: Kube_System\n", "volcano-vgpu-device-config",
       "kube-system"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char yaml[512], err[256];
    snprintf(yaml, sizeof(yaml),
             "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: deviceshare\n"
             "    arguments:\n      deviceshare.VGPUEnable: true\n%s",
             cases[i].args);
    sch_conf *conf = NULL;
    assert_int_equal(sch_conf_parse(yaml, strlen(yaml), &conf, err, sizeof(err)), 0);
    const char *ns = NULL;
    assert_string_equal(sch_device_config_name(conf, &ns), cases[i].name);
    assert_string_equal(ns, cases[i].ns);
    sch_conf_free(conf);
  }
  const char *ns = NULL;
  assert_string_equal(sch_device_config_name(NULL, &ns), "volcano-vgpu-device-config");
  assert_string_equal(ns, "kube-system");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(config_name_from_arguments),
      cmocka_unit_test(config_parses_geometries),
      cmocka_unit_test(find_fits_geometries),
      cmocka_unit_test(session_assigns_instances),
      cmocka_unit_test(session_without_config_is_hami_core),
      cmocka_unit_test(session_gang_gives_instances_back),
      cmocka_unit_test(session_memory_factor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
