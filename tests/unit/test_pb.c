/* Kubernetes' protobuf encoding (kc_pb): objects captured from a real kube-apiserver 1.36 in
 * both encodings (tests/unit/data/pb: GET with Accept application/json and with
 * application/vnd.kubernetes.protobuf) must decode to the same scheduling views; the watch
 * stream gives the same events however it is split; bad input is refused with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_codec.h"
#include "kc_error.h"
#include "kc_pb.h"
#include "test_fixture.h"

typedef struct {
  uint8_t *data;
  size_t len;
} blob;

static blob load(const char *name) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", PB_TESTDATA, name);
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("cannot open %s", path);
  blob b = {malloc(1 << 20), 0};
  assert_non_null(b.data);
  b.len = fread(b.data, 1, 1 << 20, f);
  fclose(f);
  assert_true(b.len > 0);
  return b;
}

static json_t *load_json(const char *name) {
  return fx_json_file(PB_TESTDATA, name, "");
}

static void assert_msg_equal(const ProtobufCMessage *a, const ProtobufCMessage *b) {
  size_t na = protobuf_c_message_get_packed_size(a);
  size_t nb = protobuf_c_message_get_packed_size(b);
  uint8_t *ba = malloc(na + 1), *bb = malloc(nb + 1);
  assert_non_null(ba);
  assert_non_null(bb);
  protobuf_c_message_pack(a, ba);
  protobuf_c_message_pack(b, bb);
  assert_int_equal(na, nb);
  assert_memory_equal(ba, bb, na);
  free(ba);
  free(bb);
}

/* The object inside a captured body, checked to be of kind. */
static K8s__Unknown *unwrap(const blob *b, const char *kind) {
  K8s__Unknown *u = NULL;
  char err[128] = "";
  assert_int_equal(kc_pb_unwrap(b->data, b->len, &u, err, sizeof(err)), 0);
  assert_non_null(u->type_meta);
  assert_string_equal(u->type_meta->kind, kind);
  assert_true(u->has_raw);
  return u;
}

static void pair(const char *base, Kiln__Pod **from_json, Kiln__Pod **from_pb) {
  char name[64], err[KC_CODEC_ERR_MAX] = "";
  snprintf(name, sizeof(name), "%s.json", base);
  json_t *j = load_json(name);
  assert_int_equal(kc_pod_decode(j, from_json, err, sizeof(err)), 0);
  json_decref(j);
  snprintf(name, sizeof(name), "%s.pb", base);
  blob b = load(name);
  K8s__Unknown *u = unwrap(&b, "Pod");
  int rc = kc_pb_pod_decode(u->raw.data, u->raw.len, from_pb, err, sizeof(err));
  if (rc)
    fail_msg("%s: %s", name, err);
  kc_pb_free(u);
  free(b.data);
}

static int64_t scalar(const Kiln__Resource *r, const char *name) {
  for (size_t i = 0; i < r->n_scalar; i++)
    if (strcmp(r->scalar[i]->name, name) == 0)
      return r->scalar[i]->milli_value;
  return -1;
}

/* A pod using every field the view keeps. */
static void test_rich_pod_same_as_json(void **state) {
  (void)state;
  Kiln__Pod *a, *b;
  pair("rich", &a, &b);
  assert_msg_equal(&a->base, &b->base);
  /* The fixture is not trivially equal: each part was decoded. */
  assert_string_equal(b->namespace_, "default");
  assert_string_equal(b->name, "rich");
  assert_string_equal(b->group_name, "pg-1");
  assert_string_equal(b->task_name, "worker");
  assert_string_equal(b->owner_kind, "Job");
  assert_string_equal(b->scheduler_name, "nobody");
  assert_true(b->not_preemptable);
  assert_int_equal(b->cooldown_ms, 90000);
  assert_int_equal(b->n_node_selector, 2);
  assert_int_equal(b->n_tolerations, 3);
  assert_int_equal(b->tolerations[1]->operator_,
                   KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS);
  assert_true(b->tolerations[1]->has_toleration_seconds);
  assert_int_equal(b->n_scheduling_gates, 1);
  assert_int_equal(b->n_required_node_terms, 1);
  assert_int_equal(b->n_preferred_node_terms, 1);
  assert_true(b->has_pod_affinity);
  assert_non_null(b->inter_pod);
  assert_int_equal(b->inter_pod->n_preferred_affinity, 1);
  assert_int_equal(b->inter_pod->n_required_anti_affinity, 1);
  assert_int_equal(b->inter_pod->n_topology_spread_constraints, 1);
  assert_int_equal(b->n_host_ports, 1);
  assert_int_equal(b->host_ports[0]->port, 8080);
  /* The init container runs before the sidecar starts: max(500m + 250m + 100m sidecar, 2)
   * = 2 cpu; the gpu comes from the sidecar. */
  assert_int_equal(b->requests->milli_cpu, 2000);
  assert_int_equal(b->container_requests->milli_cpu, 850);
  assert_int_equal(scalar(b->requests, "nvidia.com/gpu"), 1000);
  assert_int_equal(scalar(b->requests, "example.com/foo"), 3000);
  assert_true(b->packed_labels.len > 0);
  assert_true(b->creation_time > 0);
  assert_int_equal(b->phase, KILN__POD_PHASE__POD_PHASE_PENDING);
  kc_msg_free(a);
  kc_msg_free(b);
}

/* A running pod: phase, node, PodScheduled time, the preemptable label. */
static void test_bound_pod_same_as_json(void **state) {
  (void)state;
  Kiln__Pod *a, *b;
  pair("bound", &a, &b);
  assert_msg_equal(&a->base, &b->base);
  assert_int_equal(b->phase, KILN__POD_PHASE__POD_PHASE_RUNNING);
  assert_string_equal(b->node_name, "kwok-node-0");
  assert_true(b->scheduled_time > 0);
  assert_true(b->preemptable);
  assert_true(b->best_effort);
  /* Admission adds two NoExecute tolerations. */
  assert_int_equal(b->n_tolerations, 2);
  /* one container: its image, NUL-ended (ImageLocality) */
  assert_true(b->packed_images.len > 1);
  assert_int_equal(b->packed_images.data[b->packed_images.len - 1], '\0');
  assert_int_equal(strlen((const char *)b->packed_images.data) + 1, b->packed_images.len);
  kc_msg_free(a);
  kc_msg_free(b);
}

static void test_node_same_as_json(void **state) {
  (void)state;
  char err[KC_CODEC_ERR_MAX] = "";
  json_t *j = load_json("node.json");
  Kiln__Node *a, *b;
  assert_int_equal(kc_node_decode(j, &a, err, sizeof(err)), 0);
  json_decref(j);
  blob bl = load("node.pb");
  K8s__Unknown *u = unwrap(&bl, "Node");
  assert_int_equal(kc_pb_node_decode(u->raw.data, u->raw.len, &b, err, sizeof(err)), 0);
  assert_msg_equal(&a->base, &b->base);
  assert_string_equal(b->name, "kwok-node-0");
  assert_int_equal(b->n_taints, 2);
  assert_true(b->ready);
  assert_true(b->allocatable->milli_cpu > 0);
  assert_true(b->n_labels > 3);
  kc_pb_free(u);
  free(bl.data);
  kc_msg_free(a);
  kc_msg_free(b);
}

/* status.images (ImageLocality) and the containers' images, init containers first, decode
 * the same from protobuf as from JSON. */
static void test_images_same_as_json(void **state) {
  (void)state;
  char err[KC_CODEC_ERR_MAX] = "";
  K8s__Node k = K8S__NODE__INIT;
  K8s__ObjectMeta m = K8S__OBJECT_META__INIT;
  K8s__NodeStatus st = K8S__NODE_STATUS__INIT;
  K8s__ContainerImage im[2] = {K8S__CONTAINER_IMAGE__INIT, K8S__CONTAINER_IMAGE__INIT};
  char *names[] = {"repo/app:latest", "repo/app@sha256:0123"}, *side[] = {"side:v1"};
  m.name = "n";
  k.metadata = &m;
  k.status = &st;
  im[0].names = names;
  im[0].n_names = 2;
  im[0].has_size_bytes = 1;
  im[0].size_bytes = 524288000;
  im[1].names = side;
  im[1].n_names = 1;
  K8s__ContainerImage *ims[] = {&im[0], &im[1]};
  st.images = ims;
  st.n_images = 2;
  uint8_t buf[512];
  size_t len = k8s__node__pack(&k, buf);
  assert_true(len < sizeof(buf));
  Kiln__Node *a, *b;
  assert_int_equal(kc_pb_node_decode(buf, len, &b, err, sizeof(err)), 0);
  json_t *j = json_loads("{\"metadata\":{\"name\":\"n\"},\"status\":{\"images\":[{\"names\":"
                         "[\"repo/app:latest\",\"repo/app@sha256:0123\"],\"sizeBytes\":524288000},"
                         "{\"names\":[\"side:v1\"]}]}}",
                         0, NULL);
  assert_int_equal(kc_node_decode(j, &a, err, sizeof(err)), 0);
  json_decref(j);
  assert_msg_equal(&a->base, &b->base);
  assert_int_equal(b->n_images, 2);
  assert_int_equal(b->images[0]->n_names, 2);
  assert_string_equal(b->images[0]->names[1], "repo/app@sha256:0123");
  assert_int_equal(b->images[0]->size_bytes, 524288000);
  assert_int_equal(b->images[1]->size_bytes, 0);
  kc_msg_free(a);
  kc_msg_free(b);

  /* a pod: init container first, "" for a container without an image */
  j = json_loads("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":"
                 "\"a\",\"image\":\"repo/app\"},{\"name\":\"b\"}],\"initContainers\":[{"
                 "\"name\":\"i\",\"image\":\"init:1\"}]}}",
                 0, NULL);
  Kiln__Pod *p;
  assert_int_equal(kc_pod_decode(j, &p, err, sizeof(err)), 0);
  json_decref(j);
  static const char want[] = "init:1\0repo/app\0";
  assert_int_equal(p->packed_images.len, sizeof(want));
  assert_memory_equal(p->packed_images.data, want, sizeof(want));
  kc_msg_free(p);
  /* a non-string image is refused like any other bad field */
  j = json_loads("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":"
                 "\"a\",\"image\":7}]}}",
                 0, NULL);
  assert_true(kc_pod_decode(j, &p, err, sizeof(err)) < 0);
  json_decref(j);
}

/* The protobuf of test_devices_same_as_json's pod into buf; its length. */
static size_t pack_device_pod(uint8_t *buf, size_t cap) {
  K8s__Quantity q[5] = {K8S__QUANTITY__INIT, K8S__QUANTITY__INIT, K8S__QUANTITY__INIT,
                        K8S__QUANTITY__INIT, K8S__QUANTITY__INIT};
  q[0].string = "2";
  q[1].string = "8000";
  q[2].string = "30";
  q[3].string = "50";
  q[4].string = "3000";
  K8s__ResourceRequirements__LimitsEntry l[4] = {K8S__RESOURCE_REQUIREMENTS__LIMITS_ENTRY__INIT,
                                                 K8S__RESOURCE_REQUIREMENTS__LIMITS_ENTRY__INIT,
                                                 K8S__RESOURCE_REQUIREMENTS__LIMITS_ENTRY__INIT,
                                                 K8S__RESOURCE_REQUIREMENTS__LIMITS_ENTRY__INIT};
  l[0].key = "volcano.sh/vgpu-number", l[0].value = &q[0];
  l[1].key = "volcano.sh/vgpu-memory", l[1].value = &q[1];
  l[2].key = "volcano.sh/gpu-memory", l[2].value = &q[4];
  l[3].key = "volcano.sh/vgpu-memory", l[3].value = &q[1];
  K8s__ResourceRequirements__RequestsEntry rq = K8S__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
  rq.key = "volcano.sh/vgpu-cores", rq.value = &q[2];
  K8s__ResourceRequirements__LimitsEntry il = K8S__RESOURCE_REQUIREMENTS__LIMITS_ENTRY__INIT;
  il.key = "volcano.sh/gpu-memory", il.value = &q[3];
  K8s__ResourceRequirements r[3] = {K8S__RESOURCE_REQUIREMENTS__INIT,
                                    K8S__RESOURCE_REQUIREMENTS__INIT,
                                    K8S__RESOURCE_REQUIREMENTS__INIT};
  K8s__ResourceRequirements__LimitsEntry *l0[] = {&l[0], &l[1], &l[2]}, *l1[] = {&l[3]},
                                         *li[] = {&il};
  K8s__ResourceRequirements__RequestsEntry *r0[] = {&rq};
  r[0].limits = l0, r[0].n_limits = 3, r[0].requests = r0, r[0].n_requests = 1;
  r[1].limits = l1, r[1].n_limits = 1;
  r[2].limits = li, r[2].n_limits = 1;
  K8s__Container c[3] = {K8S__CONTAINER__INIT, K8S__CONTAINER__INIT, K8S__CONTAINER__INIT};
  c[0].name = "a", c[0].resources = &r[0];
  c[1].name = "b", c[1].resources = &r[1];
  c[2].name = "i", c[2].resources = &r[2];
  K8s__Container *cs[] = {&c[0], &c[1]}, *ics[] = {&c[2]};
  K8s__PodSpec spec = K8S__POD_SPEC__INIT;
  spec.containers = cs, spec.n_containers = 2, spec.init_containers = ics;
  spec.n_init_containers = 1;
  K8s__ObjectMeta__AnnotationsEntry a[2] = {K8S__OBJECT_META__ANNOTATIONS_ENTRY__INIT,
                                            K8S__OBJECT_META__ANNOTATIONS_ENTRY__INIT};
  a[0].key = "volcano.sh/vgpu-ids-new", a[0].value = "GPU-a,NVIDIA,8000,0:";
  a[1].key = "nvidia.com/use-gputype", a[1].value = "A100";
  K8s__ObjectMeta__AnnotationsEntry *as[] = {&a[0], &a[1]};
  K8s__ObjectMeta m = K8S__OBJECT_META__INIT;
  m.name = "p", m.annotations = as, m.n_annotations = 2;
  K8s__Pod k = K8S__POD__INIT;
  k.metadata = &m, k.spec = &spec;
  assert_true(k8s__pod__get_packed_size(&k) <= cap);
  return k8s__pod__pack(&k, buf);
}

/* The deviceshare fields: per-container vGPU requests (limits, else requests; defaults), the
 * gpu-memory/gpu-number totals against the largest init container, the annotations a pod and
 * a node carry; the same from protobuf as from JSON. */
static void test_devices_same_as_json(void **state) {
  (void)state;
  char err[KC_CODEC_ERR_MAX] = "";
  uint8_t buf[1024];
  size_t len = pack_device_pod(buf, sizeof(buf));
  assert_true(len < sizeof(buf));
  Kiln__Pod *pb, *js;
  if (kc_pb_pod_decode(buf, len, &pb, err, sizeof(err)) != 0)
    fail_msg("pb: %s", err);
  json_t *j = json_loads(
      "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"volcano.sh/vgpu-ids-new\":"
      "\"GPU-a,NVIDIA,8000,0:\",\"nvidia.com/use-gputype\":\"A100\"}},\"spec\":{"
      "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"volcano.sh/vgpu-number\":"
      "\"2\",\"volcano.sh/vgpu-memory\":\"8000\",\"volcano.sh/gpu-memory\":\"3000\"},"
      "\"requests\":{\"volcano.sh/vgpu-cores\":\"30\"}}},{\"name\":\"b\",\"resources\":{"
      "\"limits\":{\"volcano.sh/vgpu-memory\":\"8000\"}}}],\"initContainers\":[{\"name\":"
      "\"i\",\"resources\":{\"limits\":{\"volcano.sh/gpu-memory\":\"50\"}}}]}}",
      0, NULL);
  if (kc_pod_decode(j, &js, err, sizeof(err)) != 0)
    fail_msg("json: %s", err);
  json_decref(j);
  assert_non_null(pb->devices);
  assert_msg_equal(&js->devices->base, &pb->devices->base);
  const Kiln__PodDevices *d = pb->devices;
  assert_int_equal(d->n_vgpu, 2);
  assert_int_equal(d->vgpu[0]->nums, 2);
  assert_int_equal(d->vgpu[0]->memory, 8000);
  assert_int_equal(d->vgpu[0]->memory_percentage, 101);
  assert_int_equal(d->vgpu[0]->cores, 30);
  assert_int_equal(d->vgpu[1]->nums, 1); /* memory only: one GPU */
  assert_int_equal(d->vgpu[1]->cores, 0);
  assert_int_equal(d->gpu_memory, 3000); /* the containers' 3000 over the init's 50 */
  assert_string_equal(d->vgpu_ids, "GPU-a,NVIDIA,8000,0:");
  assert_string_equal(d->use_gputype, "A100");
  kc_msg_free(pb);
  kc_msg_free(js);
}

/* spec.volumes: the claim, ephemeral and disk sources beside each volume's name (JSON inlines
 * them, protobuf nests them), the others dropped; the same from protobuf as from JSON. */
static void test_volumes_same_as_json(void **state) {
  (void)state;
  K8s__PvcVolumeSource pvc = K8S__PVC_VOLUME_SOURCE__INIT;
  pvc.claim_name = "data", pvc.has_read_only = 1, pvc.read_only = 1;
  K8s__EphemeralVolumeSource eph = K8S__EPHEMERAL_VOLUME_SOURCE__INIT;
  K8s__AwsEbsVolumeSource ebs = K8S__AWS_EBS_VOLUME_SOURCE__INIT;
  ebs.volume_id = "vol-1";
  K8s__VolumeSource src[4] = {K8S__VOLUME_SOURCE__INIT, K8S__VOLUME_SOURCE__INIT,
                              K8S__VOLUME_SOURCE__INIT, K8S__VOLUME_SOURCE__INIT};
  src[0].persistent_volume_claim = &pvc;
  src[2].ephemeral = &eph;
  src[3].aws_elastic_block_store = &ebs;
  K8s__Volume v[4] = {K8S__VOLUME__INIT, K8S__VOLUME__INIT, K8S__VOLUME__INIT, K8S__VOLUME__INIT};
  static char *const names[] = {"data", "config", "scratch", "disk"};
  K8s__Volume *vs[4];
  for (int i = 0; i < 4; i++)
    v[i].name = names[i], v[i].volume_source = &src[i], vs[i] = &v[i];
  K8s__PodSpec spec = K8S__POD_SPEC__INIT;
  spec.volumes = vs, spec.n_volumes = 4;
  K8s__ObjectMeta m = K8S__OBJECT_META__INIT;
  m.name = "p";
  K8s__Pod k = K8S__POD__INIT;
  k.metadata = &m, k.spec = &spec;
  uint8_t buf[512];
  assert_true(k8s__pod__get_packed_size(&k) <= sizeof(buf));
  size_t len = k8s__pod__pack(&k, buf);
  char err[KC_CODEC_ERR_MAX] = "";
  Kiln__Pod *pb, *js;
  if (kc_pb_pod_decode(buf, len, &pb, err, sizeof(err)) != 0)
    fail_msg("pb: %s", err);
  json_t *j = json_loads("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"volumes\":["
                         "{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":"
                         "\"data\",\"readOnly\":true}},{\"name\":\"config\",\"configMap\":"
                         "{\"name\":\"c\"}},{\"name\":\"scratch\",\"ephemeral\":{"
                         "\"volumeClaimTemplate\":{\"spec\":{}}}},{\"name\":\"disk\","
                         "\"awsElasticBlockStore\":{\"volumeID\":\"vol-1\"}}]}}",
                         0, NULL);
  if (kc_pod_decode(j, &js, err, sizeof(err)) != 0)
    fail_msg("json: %s", err);
  json_decref(j);
  assert_int_equal(pb->n_volumes, 3);
  assert_int_equal(js->n_volumes, 3);
  for (size_t i = 0; i < 3; i++)
    assert_msg_equal(&js->volumes[i]->base, &pb->volumes[i]->base);
  assert_string_equal(pb->volumes[0]->persistent_volume_claim->claim_name, "data");
  assert_true(pb->volumes[0]->persistent_volume_claim->read_only);
  assert_string_equal(pb->volumes[1]->name, "scratch");
  assert_non_null(pb->volumes[1]->ephemeral);
  assert_string_equal(pb->volumes[2]->aws_elastic_block_store->volume_id, "vol-1");
  kc_msg_free(pb);
  kc_msg_free(js);
}

/* A pod with neither device resources nor annotations has no devices; a node's registration
 * and lock read the same from protobuf as from JSON. */
static void test_node_devices_same_as_json(void **state) {
  (void)state;
  char err[KC_CODEC_ERR_MAX] = "";
  uint8_t buf[1024];
  size_t len;
  Kiln__Pod *js;
  json_t *j;
  j = json_loads("{\"metadata\":{\"name\":\"q\"},\"spec\":{\"containers\":[{\"name\":\"a\"}]}}", 0,
                 NULL);
  assert_int_equal(kc_pod_decode(j, &js, err, sizeof(err)), 0);
  json_decref(j);
  assert_null(js->devices);
  kc_msg_free(js);

  K8s__ObjectMeta__AnnotationsEntry na[2] = {K8S__OBJECT_META__ANNOTATIONS_ENTRY__INIT,
                                             K8S__OBJECT_META__ANNOTATIONS_ENTRY__INIT};
  na[0].key = "volcano.sh/node-vgpu-register",
  na[0].value = "GPU-a,10,24000,NVIDIA,true,hami-core:";
  na[1].key = "hamivgpu", na[1].value = "2026-11-29T12:00:00Z";
  K8s__ObjectMeta__AnnotationsEntry *nas[] = {&na[0], &na[1]};
  K8s__ObjectMeta nm = K8S__OBJECT_META__INIT;
  nm.name = "n", nm.annotations = nas, nm.n_annotations = 2;
  K8s__Node kn = K8S__NODE__INIT;
  kn.metadata = &nm;
  len = k8s__node__pack(&kn, buf);
  Kiln__Node *npb, *njs;
  assert_int_equal(kc_pb_node_decode(buf, len, &npb, err, sizeof(err)), 0);
  j = json_loads(
      "{\"metadata\":{\"name\":\"n\",\"annotations\":{\"volcano.sh/node-vgpu-register\":"
      "\"GPU-a,10,24000,NVIDIA,true,hami-core:\",\"hamivgpu\":\"2026-11-29T12:00:00Z\"}}}",
      0, NULL);
  assert_int_equal(kc_node_decode(j, &njs, err, sizeof(err)), 0);
  json_decref(j);
  assert_non_null(npb->devices);
  assert_msg_equal(&njs->devices->base, &npb->devices->base);
  assert_string_equal(npb->devices->vgpu_register, "GPU-a,10,24000,NVIDIA,true,hami-core:");
  assert_string_equal(npb->devices->vgpu_lock, "2026-11-29T12:00:00Z");
  kc_msg_free(npb);
  kc_msg_free(njs);
}

/* A LIST page: its items are read one by one as bytes, with their keys. */
static void test_list_page(void **state) {
  (void)state;
  blob bl = load("podlist.pb");
  K8s__Unknown *u = unwrap(&bl, "PodList");
  K8s__RawList *l = k8s__raw_list__unpack(NULL, u->raw.len, u->raw.data);
  assert_non_null(l);
  assert_non_null(l->metadata);
  assert_true(l->metadata->continue_ && l->metadata->continue_[0]); /* limit=1 of 2 */
  assert_true(l->metadata->resource_version && l->metadata->resource_version[0]);
  assert_int_equal(l->n_items, 1);
  char key[256], *rv = NULL;
  assert_int_equal(kc_pb_object_key(l->items[0].data, l->items[0].len, key, sizeof(key), &rv), 0);
  assert_string_equal(key, "default/bound");
  assert_true(rv[0] != '\0');
  free(rv);
  assert_int_equal(kc_pb_object_key(l->items[0].data, l->items[0].len, key, 8, &rv), KC_ETOOBIG);
  assert_null(rv);
  Kiln__Pod *p;
  char err[128];
  assert_int_equal(kc_pb_pod_decode(l->items[0].data, l->items[0].len, &p, err, sizeof(err)), 0);
  assert_string_equal(p->name, "bound");
  kc_msg_free(p);
  kc_pb_free(l);
  kc_pb_free(u);
  free(bl.data);
}

typedef struct {
  char log[2048];
  size_t events;
} seen;

static int on_event(const char *type, const char *kind, const uint8_t *data, size_t len, void *ud) {
  seen *s = ud;
  char key[256] = "-", *rv = NULL;
  if (strcmp(kind, "Pod") == 0) {
    Kiln__Pod *p;
    char err[128];
    assert_int_equal(kc_pb_pod_decode(data, len, &p, err, sizeof(err)), 0);
    kc_msg_free(p);
  }
  if (kc_pb_object_key(data, len, key, sizeof(key), &rv) == 0)
    free(rv);
  if (strcmp(type, "BOOKMARK") == 0) { /* no name, but the resourceVersion to resume from */
    assert_int_equal(kc_pb_object_rv(data, len, &rv), 0);
    assert_true(rv[0] != '\0');
    free(rv);
  }
  size_t n = strlen(s->log);
  snprintf(s->log + n, sizeof(s->log) - n, "%s %s %s;", type, kind, key);
  s->events++;
  return 0;
}

static void feed(const blob *b, size_t step, seen *s) {
  kc_pb_stream st;
  char err[256] = "";
  kc_pb_stream_init(&st, 0);
  memset(s, 0, sizeof(*s));
  for (size_t off = 0; off < b->len; off += step) {
    size_t n = step < b->len - off ? step : b->len - off;
    assert_int_equal(kc_pb_stream_feed(&st, b->data + off, n, on_event, s, err, sizeof(err)), 0);
  }
  assert_int_equal(kc_pb_stream_finish(&st, err, sizeof(err)), 0);
  kc_frames_close(&st);
}

/* A watch captured while a pod was created, labelled and deleted. */
static void test_watch_stream_any_split(void **state) {
  (void)state;
  blob b = load("watch.pb");
  seen whole, part;
  feed(&b, b.len, &whole);
  assert_non_null(strstr(whole.log, "ADDED Pod default/w1;"));
  assert_non_null(strstr(whole.log, "MODIFIED Pod default/w1;"));
  assert_non_null(strstr(whole.log, "DELETED Pod default/w1;"));
  assert_non_null(strstr(whole.log, "BOOKMARK Pod"));
  for (size_t step = 1; step < 9; step++) {
    feed(&b, step, &part);
    assert_string_equal(part.log, whole.log);
  }
  /* Cut short: the partial frame is reported. */
  kc_pb_stream st;
  char err[256] = "";
  kc_pb_stream_init(&st, 0);
  assert_int_equal(kc_pb_stream_feed(&st, b.data, b.len - 3, on_event, &part, err, sizeof(err)), 0);
  assert_int_equal(kc_pb_stream_finish(&st, err, sizeof(err)), KC_EPARSE);
  assert_non_null(strstr(err, "truncated"));
  kc_frames_close(&st);
  /* A frame over the limit. */
  kc_pb_stream_init(&st, 64);
  assert_int_equal(kc_pb_stream_feed(&st, b.data, b.len, on_event, &part, err, sizeof(err)),
                   KC_ETOOBIG);
  kc_frames_close(&st);
  free(b.data);
}

static void test_bad_frames(void **state) {
  (void)state;
  seen s = {0};
  char err[256] = "";
  kc_pb_stream st;
  /* JSON where protobuf was expected: the first 4 bytes read as a huge length. */
  kc_pb_stream_init(&st, 0);
  const char *json = "{\"type\":\"ADDED\",\"object\":{}}\n";
  assert_int_equal(kc_pb_stream_feed(&st, json, strlen(json), on_event, &s, err, sizeof(err)),
                   KC_ETOOBIG);
  kc_frames_close(&st);
  /* The same length prefix a byte at a time: refused as soon as its fourth byte arrives, not
   * waited on until the stream ends (found by fuzz_pb: corpus/pb/split-long-prefix). */
  kc_pb_stream_init(&st, 4096);
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(kc_pb_stream_feed(&st, json + i, 1, on_event, &s, err, sizeof(err)), 0);
  assert_int_equal(kc_pb_stream_feed(&st, json + 3, 1, on_event, &s, err, sizeof(err)), KC_ETOOBIG);
  assert_non_null(strstr(err, "offset 0 is longer than the 4096-byte limit"));
  kc_frames_close(&st);
  /* A frame that is a WatchEvent without an enveloped object. */
  K8s__WatchEvent ev = K8S__WATCH_EVENT__INIT;
  K8s__RawExtension raw = K8S__RAW_EXTENSION__INIT;
  ev.type = (char *)"ADDED";
  ev.object = &raw;
  raw.has_raw = true;
  raw.raw.data = (uint8_t *)"{}";
  raw.raw.len = 2;
  uint8_t buf[64] = {0};
  size_t n = k8s__watch_event__pack(&ev, buf + 4);
  buf[3] = (uint8_t)n;
  kc_pb_stream_init(&st, 0);
  assert_int_equal(kc_pb_stream_feed(&st, buf, n + 4, on_event, &s, err, sizeof(err)), KC_EPARSE);
  assert_non_null(strstr(err, "magic"));
  kc_frames_close(&st);
  /* Not protobuf at all. */
  uint8_t junk[] = {0, 0, 0, 3, 0xff, 0xff, 0xff};
  kc_pb_stream_init(&st, 0);
  assert_int_equal(kc_pb_stream_feed(&st, junk, sizeof(junk), on_event, &s, err, sizeof(err)),
                   KC_EPARSE);
  kc_frames_close(&st);
  assert_int_equal(s.events, 0);
  K8s__Unknown *u;
  assert_int_equal(kc_pb_unwrap("{}", 2, &u, err, sizeof(err)), KC_EPARSE);
  assert_null(u);
}

/* A Status as the server sends it for a 410 (built with protobuf-c here). */
static void test_status(void **state) {
  (void)state;
  K8s__Status st = K8S__STATUS__INIT;
  st.reason = (char *)"Expired";
  st.message = (char *)"too old resource version: 1 (500)";
  st.has_code = true;
  st.code = 410;
  uint8_t buf[128];
  size_t n = k8s__status__pack(&st, buf);
  int32_t code = 0;
  char reason[32], msg[64];
  assert_int_equal(kc_pb_status(buf, n, &code, reason, sizeof(reason), msg, sizeof(msg)), 0);
  assert_int_equal(code, 410);
  assert_string_equal(reason, "Expired");
  assert_string_equal(msg, "too old resource version: 1 (500)");
}

static void test_binding_body(void **state) {
  (void)state;
  uint8_t *body = NULL;
  size_t len = 0;
  assert_int_equal(kc_pb_binding_encode("ns1", "p1", "uid-1", "node-7", &body, &len), 0);
  blob b = {body, len};
  K8s__Unknown *u = unwrap(&b, "Binding");
  assert_string_equal(u->type_meta->api_version, "v1");
  K8s__Binding *bd = k8s__binding__unpack(NULL, u->raw.len, u->raw.data);
  assert_non_null(bd);
  assert_string_equal(bd->metadata->name, "p1");
  assert_string_equal(bd->metadata->namespace_, "ns1");
  assert_string_equal(bd->metadata->uid, "uid-1");
  assert_string_equal(bd->target->kind, "Node");
  assert_string_equal(bd->target->name, "node-7");
  kc_pb_free(bd);
  kc_pb_free(u);
  free(body);
  assert_int_equal(kc_pb_binding_encode("ns1", "p1", NULL, NULL, &body, &len), KC_EINVAL);
}

/* What the JSON decoder refuses, the protobuf one refuses too. */
static void test_bad_fields_refused(void **state) {
  (void)state;
  K8s__Pod pod = K8S__POD__INIT;
  K8s__PodSpec spec = K8S__POD_SPEC__INIT;
  K8s__Container ct = K8S__CONTAINER__INIT, *cts[] = {&ct};
  K8s__ResourceRequirements rr = K8S__RESOURCE_REQUIREMENTS__INIT;
  K8s__ResourceRequirements__RequestsEntry e = K8S__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT,
                                           *es[] = {&e};
  K8s__Quantity q = K8S__QUANTITY__INIT;
  pod.spec = &spec;
  spec.n_containers = 1;
  spec.containers = cts;
  ct.resources = &rr;
  rr.n_requests = 1;
  rr.requests = es;
  e.key = (char *)"cpu";
  e.value = &q;
  q.string = (char *)"lots";
  uint8_t buf[256];
  size_t n = k8s__pod__pack(&pod, buf);
  Kiln__Pod *p = (Kiln__Pod *)1;
  char err[128] = "";
  assert_int_equal(kc_pb_pod_decode(buf, n, &p, err, sizeof(err)), KC_EINVAL);
  assert_null(p);
  assert_non_null(strstr(err, "spec.containers[0].resources.requests"));
  q.string = (char *)"1";
  K8s__Toleration t = K8S__TOLERATION__INIT, *ts[] = {&t};
  t.operator_ = (char *)"Sometimes";
  spec.n_tolerations = 1;
  spec.tolerations = ts;
  n = k8s__pod__pack(&pod, buf);
  assert_int_equal(kc_pb_pod_decode(buf, n, &p, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "unknown operator"));
  spec.n_tolerations = 0;
  n = k8s__pod__pack(&pod, buf);
  assert_int_equal(kc_pb_pod_decode(buf, n, &p, err, sizeof(err)), 0);
  assert_int_equal(p->requests->milli_cpu, 1000);
  kc_msg_free(p);
  assert_int_equal(kc_pb_pod_decode("\xff\xff", 2, &p, err, sizeof(err)), KC_EPARSE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rich_pod_same_as_json),
      cmocka_unit_test(test_volumes_same_as_json),
      cmocka_unit_test(test_bound_pod_same_as_json),
      cmocka_unit_test(test_node_same_as_json),
      cmocka_unit_test(test_images_same_as_json),
      cmocka_unit_test(test_devices_same_as_json),
      cmocka_unit_test(test_node_devices_same_as_json),
      cmocka_unit_test(test_list_page),
      cmocka_unit_test(test_watch_stream_any_split),
      cmocka_unit_test(test_bad_frames),
      cmocka_unit_test(test_status),
      cmocka_unit_test(test_binding_body),
      cmocka_unit_test(test_bad_fields_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
