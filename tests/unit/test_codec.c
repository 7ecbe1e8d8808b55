/* Codecs: Kubernetes JSON fixtures (tests/unit/data) to the protobuf-c types and back,
 * malformed input with field paths, and the memory footprint of the scheduling views. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <libgen.h>
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kc_codec.h"
#include "kc_error.h"
#include "test_fixture.h"

static char data_dir[PATH_MAX];

/* The fixtures live next to this source file; the build runs the binary from
 * <build>/tests/unit and compiles it with a __FILE__ relative to <build>. */
static void find_data_dir(void) {
  const char *env = getenv("KILN_TESTDATA");
  if (env) {
    snprintf(data_dir, sizeof(data_dir), "%s", env);
    return;
  }
  char src[PATH_MAX];
  snprintf(src, sizeof(src), "%s", __FILE__);
  char *srcdir = dirname(src);
  if (srcdir[0] == '/') {
    snprintf(data_dir, sizeof(data_dir), "%s/data", srcdir);
    return;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  char *exedir = dirname(exe);
  snprintf(data_dir, sizeof(data_dir), "%s/../../%s/data", exedir, srcdir);
}

static json_t *load(const char *name) {
  return fx_json_file(data_dir, name, "");
}

static json_t *parse(const char *text) {
  return fx_json_text(text, JSON_DECODE_ANY | JSON_ALLOW_NUL);
}

/* Two messages are equal when their protobuf encodings are. */
static void assert_msg_equal(const ProtobufCMessage *a, const ProtobufCMessage *b) {
  size_t na = protobuf_c_message_get_packed_size(a);
  size_t nb = protobuf_c_message_get_packed_size(b);
  assert_int_equal(na, nb);
  uint8_t *ba = malloc(na + 1), *bb = malloc(nb + 1);
  assert_non_null(ba);
  assert_non_null(bb);
  protobuf_c_message_pack(a, ba);
  protobuf_c_message_pack(b, bb);
  assert_memory_equal(ba, bb, na);
  free(ba);
  free(bb);
}

static int64_t scalar(const Kiln__Resource *r, const char *name) {
  for (size_t i = 0; i < r->n_scalar; i++)
    if (strcmp(r->scalar[i]->name, name) == 0)
      return r->scalar[i]->milli_value;
  return -1;
}

#define MI (1024LL * 1024)
#define GI (1024LL * MI)

/* Volcano's reading of volcano.sh/preemptable (annotation, then label; true without either;
 * an invalid value is false) and volcano.sh/cooldown-time (label, then annotation), and the
 * PodScheduled time that cdp counts from. */
static void test_pod_preemption_keys(void **state) {
  (void)state;
  static const struct {
    const char *meta;
    bool not_preemptable;
    int64_t cooldown_ms;
  } cases[] = {
      {"{}", false, 0},
      {"{\"annotations\": {\"volcano.sh/preemptable\": \"false\"}}", true, 0},
      {"{\"annotations\": {\"volcano.sh/preemptable\": \"true\"},"
       " \"labels\": {\"volcano.sh/preemptable\": \"false\"}}",
       false, 0},
      {"{\"labels\": {\"volcano.sh/preemptable\": \"maybe\"}}", true, 0},
      {"{\"labels\": {\"volcano.sh/cooldown-time\": \"10m\"},"
       " \"annotations\": {\"volcano.sh/cooldown-time\": \"1m\"}}",
       false, 600000},
      {"{\"annotations\": {\"volcano.sh/cooldown-time\": \"90s\"}}", false, 90000},
      {"{\"annotations\": {\"volcano.sh/cooldown-time\": \"soon\"}}", false, 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char text[512];
    snprintf(text, sizeof(text),
             "{\"metadata\": %s, \"spec\": {}, \"status\": {\"phase\": \"Running\","
             " \"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"},"
             " {\"type\": \"PodScheduled\", \"status\": \"True\","
             " \"lastTransitionTime\": \"2026-11-29T16:01:51Z\"}]}}",
             cases[i].meta);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    Kiln__Pod *p = NULL;
    char err[KC_CODEC_ERR_MAX];
    if (kc_pod_decode(j, &p, err, sizeof(err)) != 0)
      fail_msg("case %zu: %s", i, err);
    if (p->not_preemptable != cases[i].not_preemptable || p->cooldown_ms != cases[i].cooldown_ms)
      fail_msg("case %zu: not_preemptable %d cooldown %lld", i, p->not_preemptable,
               (long long)p->cooldown_ms);
    assert_int_equal(p->scheduled_time, 1795968111);
    kc_msg_free(p);
    json_decref(j);
  }
}

/* pod.json's placement: node selector, node affinity, tolerations, host ports. */
static void check_pod_placement(const Kiln__Pod *p) {
  assert_int_equal(p->n_node_selector, 2);
  assert_string_equal(p->node_selector[1]->key, "pool");
  assert_string_equal(p->node_selector[1]->value, "gpu");
  assert_int_equal(p->n_required_node_terms, 1);
  const Kiln__NodeSelectorTerm *t = p->required_node_terms[0];
  assert_int_equal(t->n_match_expressions, 1);
  assert_string_equal(t->match_expressions[0]->operator_, "In");
  assert_int_equal(t->match_expressions[0]->n_values, 2);
  assert_string_equal(t->match_expressions[0]->values[1], "b");
  assert_int_equal(t->n_match_fields, 1);
  assert_string_equal(t->match_fields[0]->key, "metadata.name");
  assert_int_equal(p->n_preferred_node_terms, 1);
  assert_int_equal(p->preferred_node_terms[0]->weight, 10);
  assert_string_equal(p->preferred_node_terms[0]->preference->match_expressions[0]->operator_,
                      "Exists");
  assert_int_equal(p->n_tolerations, 2);
  assert_true(p->tolerations[0]->has_toleration_seconds);
  assert_int_equal(p->tolerations[0]->toleration_seconds, 300);
  assert_false(p->tolerations[1]->has_toleration_seconds);
  assert_string_equal(p->tolerations[1]->value, "gpu");
  assert_int_equal(p->n_host_ports, 1);
  assert_int_equal(p->host_ports[0]->port, 80);
  assert_string_equal(p->host_ports[0]->protocol, "TCP");
  assert_int_equal(p->tolerations[0]->operator_,
                   KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS);
  assert_int_equal(p->tolerations[0]->effect, KILN__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE);
  assert_int_equal(p->tolerations[1]->operator_,
                   KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL);
  assert_int_equal(p->tolerations[1]->effect, KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE);
}

/* The numaaware view: a Guaranteed pod's containers (cpu, nvidia.com/gpu, a request left
 * out being the limit) and its volcano.sh/numa-topology-policy; a pod whose request differs
 * from its limit (Burstable) has none. */
static void test_pod_numa(void **state) {
  (void)state;
  static const char *const pods[] = {
      "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"volcano.sh/numa-topology-policy\":"
      "\"single-numa-node\"}},\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{"
      "\"limits\":{\"cpu\":\"4\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"2\"}}},{\"name\":"
      "\"b\",\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"},\"requests\":"
      "{\"cpu\":\"500m\"}}}]}}",
      "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"a\","
      "\"resources\":{\"limits\":{\"cpu\":\"4\",\"memory\":\"1Gi\"},\"requests\":{\"cpu\":"
      "\"2\"}}}]}}"};
  Kiln__Pod *p = NULL;
  json_t *j = json_loads(pods[0], 0, NULL);
  assert_int_equal(kc_pod_decode(j, &p, NULL, 0), 0);
  json_decref(j);
  assert_non_null(p->numa);
  assert_string_equal(p->numa->policy, "single-numa-node");
  assert_int_equal(p->numa->n_containers, 2);
  assert_string_equal(p->numa->containers[0]->name, "a");
  assert_int_equal(p->numa->containers[0]->cpu_milli, 4000);
  assert_int_equal(p->numa->containers[0]->gpus, 2);
  assert_int_equal(p->numa->containers[1]->cpu_milli, 500);
  kc_msg_free(p);
  j = json_loads(pods[1], 0, NULL);
  assert_int_equal(kc_pod_decode(j, &p, NULL, 0), 0);
  json_decref(j);
  assert_null(p->numa);
  kc_msg_free(p);
}

static void test_pod(void **state) {
  (void)state;
  json_t *j = load("pod.json");
  Kiln__Pod *p = NULL;
  char err[KC_CODEC_ERR_MAX];
  int rc = kc_pod_decode(j, &p, err, sizeof(err));
  if (rc)
    fail_msg("decode: %s", err);
  assert_string_equal(p->namespace_, "team-a");
  assert_string_equal(p->name, "job-1-worker-0");
  assert_string_equal(p->uid, "6f1d7c2e-1b7a-4a52-9c1e-0f3a2b4c5d6e");
  assert_string_equal(p->resource_version, "123456");
  assert_string_equal(p->node_name, "node-7");
  assert_int_equal(p->phase, KILN__POD_PHASE__POD_PHASE_RUNNING);
  assert_string_equal(p->scheduler_name, "volcano");
  assert_string_equal(p->group_name, "job-1-0b8f5c3a-2d4e-4f60-8a1b-9c0d1e2f3a4b");
  assert_string_equal(p->task_name, "worker");
  assert_int_equal(p->priority, 1000);
  assert_string_equal(p->priority_class_name, "high");
  assert_string_equal(p->preemption_policy, "");
  assert_int_equal(p->creation_time, 1795968111);
  assert_int_equal(p->deletion_time, 0);
  assert_true(p->preemptable);
  assert_false(p->best_effort);
  assert_true(p->has_pod_affinity);
  assert_string_equal(p->nominated_node_name, "node-7");

  /* Requests: containers 750m/1536Mi/1 gpu; sidecar 100m/64Mi joins them; init
   * containers peak at 2 cpu (fetch) and 1 cpu + 3Gi on top of the sidecar (migrate);
   * overhead 10m/10Mi on top. */
  assert_int_equal(p->requests->milli_cpu, 2010);
  assert_int_equal(p->requests->memory, 3136 * MI + 10 * MI);
  assert_int_equal(p->requests->pods, 1);
  assert_int_equal(scalar(p->requests, "nvidia.com/gpu"), 1000);
  assert_int_equal(p->container_requests->milli_cpu, 860);
  assert_int_equal(p->container_requests->memory, 1600 * MI + 10 * MI);
  assert_int_equal(scalar(p->container_requests, "nvidia.com/gpu"), 1000);

  check_pod_placement(p);
  /* the controller reference, not the first one */
  assert_string_equal(p->owner_kind, "Job");
  assert_string_equal(p->owner_name, "job-1");
  assert_string_equal(p->owner_uid, "0b8f5c3a-2d4e-4f60-8a1b-9c0d1e2f3a4b");

  /* The view survives the snapshot format unchanged. */
  size_t n = kiln__pod__get_packed_size(p);
  uint8_t *buf = malloc(n);
  assert_non_null(buf);
  kiln__pod__pack(p, buf);
  Kiln__Pod *back = kiln__pod__unpack(NULL, n, buf);
  assert_non_null(back);
  assert_msg_equal(&p->base, &back->base);
  kiln__pod__free_unpacked(back, NULL);
  free(buf);

  kc_msg_free(p);
  json_decref(j);
}

static void test_pod_best_effort(void **state) {
  (void)state;
  json_t *j = parse("{\"metadata\":{\"name\":\"be\"},\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
                    "\"status\":{\"phase\":\"Weird\"}}");
  Kiln__Pod *p;
  assert_int_equal(kc_pod_decode(j, &p, NULL, 0), 0);
  assert_true(p->best_effort);
  assert_int_equal(p->requests->pods, 1);
  assert_int_equal(p->phase, KILN__POD_PHASE__POD_PHASE_UNKNOWN);
  assert_string_equal(p->owner_kind, "");
  assert_string_equal(p->namespace_, "");
  kc_msg_free(p);
  json_decref(j);
}

static void test_node(void **state) {
  (void)state;
  json_t *j = load("node.json");
  Kiln__Node *n;
  char err[KC_CODEC_ERR_MAX];
  int rc = kc_node_decode(j, &n, err, sizeof(err));
  if (rc)
    fail_msg("decode: %s", err);
  assert_string_equal(n->name, "node-7");
  assert_int_equal(n->n_labels, 3);
  assert_string_equal(n->labels[2]->key, "type");
  assert_int_equal(n->n_taints, 1);
  assert_int_equal(n->taints[0]->effect, KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE);
  assert_string_equal(n->taints[0]->value, "fake");
  assert_true(n->unschedulable);
  assert_true(n->ready);
  assert_int_equal(n->allocatable->milli_cpu, 7800);
  assert_int_equal(n->allocatable->memory, 31 * GI);
  assert_int_equal(n->allocatable->pods, 110);
  assert_int_equal(n->allocatable->ephemeral_storage, 95 * GI);
  assert_int_equal(scalar(n->allocatable, "nvidia.com/gpu"), 4000);
  assert_int_equal(n->capacity->milli_cpu, 8000);
  kc_msg_free(n);
  json_decref(j);
}

/* decode -> encode gives back the fixture exactly (all its fields are modelled and its
 * quantities canonical), and decode again gives the same message. */
static void roundtrip(const char *file, const ProtobufCMessageDescriptor *desc,
                      ProtobufCMessage **keep) {
  json_t *j = load(file);
  ProtobufCMessage *m = NULL, *m2 = NULL;
  char err[KC_CODEC_ERR_MAX];
  if (kc_codec_decode(desc, j, &m, err, sizeof(err)))
    fail_msg("%s: decode: %s", file, err);
  json_t *e = NULL;
  if (kc_codec_encode(m, &e, err, sizeof(err)))
    fail_msg("%s: encode: %s", file, err);
  if (!json_equal(j, e)) {
    char *a = json_dumps(j, JSON_SORT_KEYS), *b = json_dumps(e, JSON_SORT_KEYS);
    fprintf(stderr, "in:  %s\nout: %s\n", a, b);
    free(a);
    free(b);
    fail_msg("%s: encoded JSON differs", file);
  }
  assert_int_equal(kc_codec_decode(desc, e, &m2, err, sizeof(err)), 0);
  assert_msg_equal(m, m2);
  kc_msg_free(m2);
  json_decref(e);
  json_decref(j);
  if (keep)
    *keep = m;
  else
    kc_msg_free(m);
}

static void test_roundtrip(void **state) {
  (void)state;
  ProtobufCMessage *m;
  roundtrip("podgroup.json", &kiln__pod_group__descriptor, &m);
  Kiln__PodGroup *pg = (Kiln__PodGroup *)m;
  assert_int_equal(pg->spec->min_member, 3);
  assert_int_equal(pg->spec->n_min_task_member, 2);
  assert_string_equal(pg->spec->min_task_member[1]->key, "worker");
  assert_int_equal(pg->spec->min_task_member[1]->value, 2);
  assert_int_equal(pg->spec->min_resources->milli_cpu, 2500);
  assert_int_equal(pg->spec->min_resources->memory, 3 * GI);
  assert_int_equal(scalar(pg->spec->min_resources, "nvidia.com/gpu"), 2000);
  assert_true(pg->spec->network_topology->has_highest_tier_allowed);
  assert_string_equal(pg->status->conditions[0]->transition_id, "7c8d");
  assert_true(pg->status->has_failed);
  kc_msg_free(m);

  roundtrip("queue.json", &kiln__queue__descriptor, &m);
  Kiln__Queue *q = (Kiln__Queue *)m;
  assert_int_equal(q->spec->weight, 4);
  assert_true(q->spec->has_reclaimable);
  assert_false(q->spec->reclaimable);
  assert_int_equal(q->spec->guarantee->resource->milli_cpu, 8000);
  assert_int_equal(q->status->allocated->pods, 17);
  /* The nodegroup plugin's node groups. */
  assert_string_equal(q->spec->affinity->node_group_affinity
                          ->required_during_scheduling_ignored_during_execution[0],
                      "gpu-a");
  assert_int_equal(q->spec->affinity->node_group_anti_affinity
                       ->n_preferred_during_scheduling_ignored_during_execution,
                   0);
  kc_msg_free(m);

  roundtrip("job.json", &kiln__job__descriptor, &m);
  Kiln__Job *job = (Kiln__Job *)m;
  assert_int_equal(job->spec->n_tasks, 2);
  assert_true(job->spec->tasks[0]->has_min_available);
  assert_false(job->spec->tasks[1]->has_min_available);
  assert_int_equal(job->spec->tasks[1]->replicas, 2);
  assert_non_null(strstr(job->spec->tasks[0]->template_json, "\"restartPolicy\":\"Never\""));
  assert_string_equal(job->spec->tasks[1]->depends_on->name[0], "ps");
  assert_int_equal(job->spec->tasks[1]->policies[0]->n_events, 2);
  assert_true(job->spec->policies[1]->has_exit_code);
  assert_int_equal(job->spec->policies[1]->exit_code, 3);
  assert_int_equal(job->spec->n_plugins, 3);
  assert_string_equal(job->spec->plugins[1]->key, "svc");
  assert_int_equal(job->spec->plugins[1]->value->n_items, 1);
  assert_int_equal(job->spec->ttl_seconds_after_finished, 600);
  assert_non_null(strstr(job->spec->volumes[0]->volume_claim_json, "ReadWriteOnce"));
  assert_string_equal(job->status->task_status_count[1]->key, "worker");
  assert_int_equal(job->status->task_status_count[1]->value->phase[1]->value, 1);
  assert_string_equal(job->status->conditions[1]->status, "Running");
  assert_string_equal(job->metadata->finalizers[0], "kiln.sh/cleanup");
  kc_msg_free(m);

  roundtrip("command.json", &kiln__command__descriptor, &m);
  assert_string_equal(((Kiln__Command *)m)->action, "AbortJob");
  assert_string_equal(((Kiln__Command *)m)->target->kind, "Job");
  kc_msg_free(m);

  roundtrip("priorityclass.json", &kiln__priority_class__descriptor, &m);
  assert_int_equal(((Kiln__PriorityClass *)m)->value, 1000);
  kc_msg_free(m);
}

/* Found by fuzz_codec (tests/fuzz/corpus/codec/zero-scalar): a scalar resource of zero was
 * decoded into an entry but not encoded, so a PodGroup changed on decode -> encode. */
static void test_zero_scalar_kept(void **state) {
  (void)state;
  json_t *j =
      json_loads("{\"cpu\":\"1\",\"nvidia.com/gpu\":\"0\",\"example.com/x\":\"2\"}", 0, NULL);
  Kiln__Resource r = KILN__RESOURCE__INIT;
  assert_int_equal(kc_resource_list_decode(j, &r, NULL, 0), 0);
  json_t *out = NULL;
  assert_int_equal(kc_resource_list_encode(&r, &out), 0);
  assert_string_equal(json_string_value(json_object_get(out, "nvidia.com/gpu")), "0");
  assert_string_equal(json_string_value(json_object_get(out, "example.com/x")), "2");
  assert_int_equal(json_object_size(out), 3);
  json_decref(out);
  json_decref(j);
  for (size_t i = 0; i < r.n_scalar; i++) {
    free(r.scalar[i]->name);
    free(r.scalar[i]);
  }
  free(r.scalar);
}

static void test_typed_wrappers(void **state) {
  (void)state;
  json_t *j = load("job.json");
  Kiln__Job *job;
  assert_int_equal(kc_job_decode(j, &job, NULL, 0), 0);
  json_t *st;
  assert_int_equal(kc_job_status_encode(job->status, &st, NULL, 0), 0);
  assert_true(json_equal(json_object_get(st, "status"), json_object_get(j, "status")));
  json_decref(st);
  json_t *all;
  assert_int_equal(kc_job_encode(job, &all, NULL, 0), 0);
  assert_true(json_equal(all, j));
  json_decref(all);
  kc_msg_free(job);
  json_decref(j);

  assert_int_equal(kc_job_status_encode(NULL, &st, NULL, 0), 0);
  char *text = json_dumps(st, JSON_COMPACT);
  assert_string_equal(text, "{\"status\":{}}");
  free(text);
  json_decref(st);
}

/* Status bodies built by the processes themselves. */
static void test_status_encode(void **state) {
  (void)state;
  Kiln__PodGroupStatus pst = KILN__POD_GROUP_STATUS__INIT;
  Kiln__PodGroupCondition cond = KILN__POD_GROUP_CONDITION__INIT;
  Kiln__PodGroupCondition *conds[] = {&cond};
  pst.phase = "Inqueue";
  pst.has_running = 1;
  pst.running = 2;
  cond.type = "Unschedulable";
  cond.status = "True";
  cond.transition_id = "abc";
  pst.n_conditions = 1;
  pst.conditions = conds;
  json_t *j;
  assert_int_equal(kc_podgroup_status_encode(&pst, &j, NULL, 0), 0);
  char *text = json_dumps(j, JSON_COMPACT);
  assert_string_equal(text, "{\"status\":{\"phase\":\"Inqueue\",\"conditions\":[{\"type\":"
                            "\"Unschedulable\",\"status\":\"True\",\"transitionID\":\"abc\"}],"
                            "\"running\":2}}");
  free(text);
  json_decref(j);

  Kiln__QueueStatus qst = KILN__QUEUE_STATUS__INIT;
  Kiln__Resource alloc = KILN__RESOURCE__INIT;
  Kiln__ResourceQuantity gpu = KILN__RESOURCE_QUANTITY__INIT;
  Kiln__ResourceQuantity *sc[] = {&gpu};
  alloc.milli_cpu = 1500;
  alloc.memory = 1 * GI;
  gpu.name = "nvidia.com/gpu";
  gpu.milli_value = 3000;
  alloc.n_scalar = 1;
  alloc.scalar = sc;
  qst.state = "Open";
  qst.allocated = &alloc;
  assert_int_equal(kc_queue_status_encode(&qst, &j, NULL, 0), 0);
  text = json_dumps(j, JSON_COMPACT);
  assert_string_equal(text, "{\"status\":{\"state\":\"Open\",\"allocated\":{\"cpu\":\"1500m\","
                            "\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"3\"}}}");
  free(text);
  json_decref(j);

  /* opaque JSON that is not JSON is refused with its path */
  Kiln__TaskSpec task = KILN__TASK_SPEC__INIT;
  task.template_json = "{not json";
  char err[KC_CODEC_ERR_MAX];
  assert_int_equal(kc_codec_encode(&task.base, &j, err, sizeof(err)), KC_EINVAL);
  assert_null(j);
  assert_non_null(strstr(err, "template: stored JSON text is invalid"));
}

struct bad {
  const char *kind;
  const char *json;
  int rc;
  const char *err; /* expected prefix */
};

static const struct bad bads[] = {
    {"job",
     "{\"spec\":{\"tasks\":[{\"name\":\"a\",\"replicas\":1},{\"name\":\"b\"},"
     "{\"name\":\"c\",\"replicas\":\"three\"}]}}",
     KC_EINVAL, "spec.tasks[2].replicas: expected integer"},
    {"job", "{\"spec\":{\"tasks\":[{\"replicas\":3000000000}]}}", KC_ERANGE,
     "spec.tasks[0].replicas: integer 3000000000 out of int32 range"},
    {"job", "{\"metadata\":{\"labels\":{\"a\":1}}}", KC_EINVAL,
     "metadata.labels[a]: expected string"},
    {"job", "{\"spec\":{\"plugins\":{\"ssh\":\"x\"}}}", KC_EINVAL,
     "spec.plugins[ssh]: expected array of strings"},
    {"job", "{\"spec\":{\"tasks\":{}}}", KC_EINVAL, "spec.tasks: expected array"},
    {"job", "{\"status\":{\"taskStatusCount\":{\"w\":{\"phase\":{\"Running\":true}}}}}", KC_EINVAL,
     "status.taskStatusCount[w].phase[Running]: expected integer"},
    {"job", "{\"metadata\":{\"name\":\"a\\u0000b\"}}", KC_EINVAL,
     "metadata.name: string contains a NUL byte"},
    {"podgroup", "{\"spec\":{\"minResources\":{\"cpu\":\"12Qi\"}}}", KC_EPARSE,
     "spec.minResources.cpu: invalid quantity \"12Qi\": parse error at offset 2"},
    {"podgroup", "[]", KC_EINVAL, "expected object"},
    {"podgroup", "{\"spec\":\"x\"}", KC_EINVAL, "spec: expected object"},
    {"queue", "{\"spec\":{\"reclaimable\":\"yes\"}}", KC_EINVAL,
     "spec.reclaimable: expected boolean"},
    {"queue", "{\"spec\":{\"capability\":{\"memory\":\"1e30\"}}}", KC_ERANGE,
     "spec.capability.memory: invalid quantity \"1e30\": value out of range"},
    {"queue", "{\"spec\":{\"capability\":{\"cpu\":[1]}}}", KC_EINVAL,
     "spec.capability.cpu: expected quantity string"},
    {"pod",
     "{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":"
     "{\"cpu\":\"1x\"}}}]}}",
     KC_EPARSE, "spec.containers[0].resources.requests.cpu: invalid quantity \"1x\""},
    {"pod", "{\"spec\":{\"initContainers\":[{}, {\"restartPolicy\":7}]}}", KC_EINVAL,
     "spec.initContainers[1].restartPolicy: expected string"},
    {"pod", "{\"spec\":{\"containers\":[{\"ports\":[{\"hostPort\":70000}]}]}}", KC_ERANGE,
     "spec.containers[0].ports[0].hostPort: integer 70000 out of range"},
    {"pod", "{\"metadata\":{\"creationTimestamp\":\"yesterday\"}}", KC_EPARSE,
     "metadata.creationTimestamp: invalid RFC 3339 time"},
    {"pod", "{\"metadata\":{\"annotations\":{\"scheduling.k8s.io/group-name\":{}}}}", KC_EINVAL,
     "metadata.annotations.scheduling.k8s.io/group-name: expected string"},
    {"pod", "{\"spec\":{\"tolerations\":{}}}", KC_EINVAL, "spec.tolerations: expected array"},
    {"pod", "{\"spec\":{\"priority\":\"high\"}}", KC_EINVAL, "spec.priority: expected integer"},
    {"pod",
     "{\"spec\":{\"affinity\":{\"nodeAffinity\":{"
     "\"requiredDuringSchedulingIgnoredDuringExecution\":"
     "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"k\",\"values\":[1]}]}]}}}}}",
     KC_EINVAL,
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms["
     "0]"
     ".matchExpressions[0].values[0]: expected string"},
    {"pod", "{\"metadata\":{\"ownerReferences\":[{\"controller\":true,\"uid\":5}]}}", KC_EINVAL,
     "metadata.ownerReferences[0].uid: expected string"},
    {"pod", "\"pod\"", KC_EINVAL, "expected object"},
    {"pod", "{\"spec\":{\"tolerations\":[{\"key\":\"a\"},{\"operator\":\"Maybe\"}]}}", KC_EINVAL,
     "spec.tolerations[1].operator: unknown operator \"Maybe\""},
    {"pod", "{\"spec\":{\"tolerations\":[{\"tolerationSeconds\":\"300\"}]}}", KC_EINVAL,
     "spec.tolerations[0].tolerationSeconds: expected integer"},
    {"pod", "{\"spec\":{\"tolerations\":[7]}}", KC_EINVAL, "spec.tolerations[0]: expected object"},
    {"node", "{\"spec\":{\"taints\":[{\"key\":\"a\"},{\"effect\":\"NoSchedule\"},[]]}}", KC_EINVAL,
     "spec.taints[2]: expected object"},
    {"node", "{\"status\":{\"allocatable\":{\"memory\":\"1e30\"}}}", KC_ERANGE,
     "status.allocatable.memory: invalid quantity \"1e30\": value out of range"},
    {"node", "{\"spec\":{\"unschedulable\":\"true\"}}", KC_EINVAL,
     "spec.unschedulable: expected boolean"},
    {"node", "{\"spec\":{\"taints\":[{\"key\":\"a\"},{\"effect\":false}]}}", KC_EINVAL,
     "spec.taints[1].effect: expected string"},
    {"node", "{\"metadata\":{\"labels\":[]}}", KC_EINVAL, "metadata.labels: expected object"},
};

static int decode_kind(const char *kind, const json_t *j, void **out, char *err, size_t n) {
  if (strcmp(kind, "job") == 0)
    return kc_job_decode(j, (Kiln__Job **)out, err, n);
  if (strcmp(kind, "podgroup") == 0)
    return kc_podgroup_decode(j, (Kiln__PodGroup **)out, err, n);
  if (strcmp(kind, "queue") == 0)
    return kc_queue_decode(j, (Kiln__Queue **)out, err, n);
  if (strcmp(kind, "pod") == 0)
    return kc_pod_decode(j, (Kiln__Pod **)out, err, n);
  return kc_node_decode(j, (Kiln__Node **)out, err, n);
}

static void test_malformed(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
    json_t *j = parse(bads[i].json);
    void *out = (void *)&out; /* must be reset to NULL */
    char err[KC_CODEC_ERR_MAX];
    int rc = decode_kind(bads[i].kind, j, &out, err, sizeof(err));
    if (rc != bads[i].rc)
      fail_msg("%s %s: rc %s, want %s (%s)", bads[i].kind, bads[i].json, kc_err_name(rc),
               kc_err_name(bads[i].rc), err);
    if (strncmp(err, bads[i].err, strlen(bads[i].err)) != 0)
      fail_msg("%s: error \"%s\", want \"%s...\"", bads[i].json, err, bads[i].err);
    assert_null(out);
    /* a tiny error buffer truncates and stays terminated; no buffer is fine too */
    char small[8];
    assert_int_equal(decode_kind(bads[i].kind, j, &out, small, sizeof(small)), rc);
    assert_true(strlen(small) < sizeof(small));
    assert_int_equal(decode_kind(bads[i].kind, j, &out, NULL, 0), rc);
    json_decref(j);
  }
}

/* The dump/replay snapshot carries decoded objects through the protobuf wire format. */
static void test_snapshot(void **state) {
  (void)state;
  json_t *pj = load("pod.json"), *nj = load("node.json"), *gj = load("podgroup.json");
  json_t *qj = load("queue.json"), *cj = load("priorityclass.json");
  Kiln__Pod *p;
  Kiln__Node *n;
  Kiln__PodGroup *pg;
  Kiln__Queue *q;
  Kiln__PriorityClass *pc;
  assert_int_equal(kc_pod_decode(pj, &p, NULL, 0), 0);
  assert_int_equal(kc_node_decode(nj, &n, NULL, 0), 0);
  assert_int_equal(kc_podgroup_decode(gj, &pg, NULL, 0), 0);
  assert_int_equal(kc_queue_decode(qj, &q, NULL, 0), 0);
  assert_int_equal(kc_priorityclass_decode(cj, &pc, NULL, 0), 0);
  Kiln__Snapshot snap = KILN__SNAPSHOT__INIT;
  snap.generation = 7;
  snap.scheduler_name = "volcano";
  snap.n_pods = 1;
  snap.pods = &p;
  snap.n_nodes = 1;
  snap.nodes = &n;
  snap.n_pod_groups = 1;
  snap.pod_groups = &pg;
  snap.n_queues = 1;
  snap.queues = &q;
  snap.n_priority_classes = 1;
  snap.priority_classes = &pc;
  size_t len = kiln__snapshot__get_packed_size(&snap);
  uint8_t *buf = malloc(len);
  assert_non_null(buf);
  kiln__snapshot__pack(&snap, buf);
  Kiln__Snapshot *back = kiln__snapshot__unpack(NULL, len, buf);
  assert_non_null(back);
  assert_int_equal(back->generation, 7);
  assert_int_equal(back->pods[0]->requests->milli_cpu, 2010);
  assert_int_equal(back->pod_groups[0]->spec->min_member, 3);
  assert_msg_equal(&snap.base, &back->base);
  kiln__snapshot__free_unpacked(back, NULL);
  free(buf);
  kc_msg_free(p);
  kc_msg_free(n);
  kc_msg_free(pg);
  kc_msg_free(q);
  kc_msg_free(pc);
  json_decref(pj);
  json_decref(nj);
  json_decref(gj);
  json_decref(qj);
  json_decref(cj);
}

static void test_time(void **state) {
  (void)state;
  int64_t t;
  assert_int_equal(kc_time_parse("1970-01-01T00:00:00Z", &t), 0);
  assert_int_equal(t, 0);
  assert_int_equal(kc_time_parse("2026-11-29T16:01:51.123456Z", &t), 0);
  assert_int_equal(t, 1795968111);
  assert_int_equal(kc_time_parse("2026-11-29T18:01:51+02:00", &t), 0);
  assert_int_equal(t, 1795968111);
  assert_int_equal(kc_time_parse("2000-02-29T00:00:00Z", &t), 0);
  assert_int_equal(t, 951782400);
  assert_int_equal(kc_time_parse("2026-11-29 16:01:51Z", &t), KC_EPARSE);
  assert_int_equal(kc_time_parse("2026-11-29T16:01:51", &t), KC_EPARSE);
  assert_int_equal(kc_time_parse("2026-13-29T16:01:51Z", &t), KC_EPARSE);
  assert_int_equal(kc_time_parse("2026-11-29T16:01:51Zjunk", &t), KC_EPARSE);
}

#define IP(p) ((p)->inter_pod)

/* Inter-pod (anti-)affinity terms, spread constraints and labels: a nil selector stays NULL
 * (it matches nothing), an empty one is kept as a message without entries. */
static void test_pod_interpod(void **state) {
  (void)state;
  json_t *j = parse(
      "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"labels\":{\"app\":\"web\"}},"
      "\"spec\":{\"affinity\":{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
      "[{\"labelSelector\":{\"matchLabels\":{\"app\":\"db\"},\"matchExpressions\":[{\"key\":"
      "\"tier\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]}]},\"topologyKey\":\"zone\","
      "\"namespaces\":[\"data\"],\"namespaceSelector\":{},\"matchLabelKeys\":[\"rev\"]}],"
      "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":30,\"podAffinityTerm\":"
      "{\"labelSelector\":{},\"topologyKey\":\"kubernetes.io/hostname\","
      "\"mismatchLabelKeys\":[\"team\"]}}]},\"podAntiAffinity\":{"
      "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":\"zone\"}]}},"
      "\"topologySpreadConstraints\":[{\"maxSkew\":2,\"topologyKey\":\"zone\","
      "\"whenUnsatisfiable\":\"ScheduleAnyway\",\"labelSelector\":{\"matchLabels\":{\"app\":"
      "\"web\"}},\"minDomains\":3,\"nodeAffinityPolicy\":\"Ignore\",\"nodeTaintsPolicy\":"
      "\"Honor\",\"matchLabelKeys\":[\"pod-template-hash\"]}],\"containers\":[]}}");
  Kiln__Pod *p = NULL;
  char err[KC_CODEC_ERR_MAX] = "";
  if (kc_pod_decode(j, &p, err, sizeof(err)) != 0)
    fail_msg("decode: %s", err);
  static const char packed[] = "app\0web";
  assert_int_equal(p->packed_labels.len, sizeof(packed));
  assert_memory_equal(p->packed_labels.data, packed, sizeof(packed));
  assert_true(p->has_pod_affinity);
  assert_non_null(p->inter_pod);
  assert_int_equal(IP(p)->n_required_affinity, 1);
  Kiln__PodAffinityTerm *t = IP(p)->required_affinity[0];
  assert_string_equal(t->topology_key, "zone");
  assert_int_equal(t->label_selector->n_match_labels, 1);
  assert_string_equal(t->label_selector->match_labels[0]->value, "db");
  assert_int_equal(t->label_selector->n_match_expressions, 1);
  assert_string_equal(t->label_selector->match_expressions[0]->operator_, "In");
  assert_int_equal(t->label_selector->match_expressions[0]->n_values, 2);
  assert_int_equal(t->n_namespaces, 1);
  assert_non_null(t->namespace_selector);
  assert_int_equal(t->namespace_selector->n_match_labels, 0);
  assert_int_equal(t->n_match_label_keys, 1);
  assert_int_equal(IP(p)->n_preferred_affinity, 1);
  assert_int_equal(IP(p)->preferred_affinity[0]->weight, 30);
  Kiln__PodAffinityTerm *pt = IP(p)->preferred_affinity[0]->pod_affinity_term;
  assert_non_null(pt->label_selector);
  assert_null(pt->namespace_selector);
  assert_string_equal(pt->mismatch_label_keys[0], "team");
  assert_int_equal(IP(p)->n_required_anti_affinity, 1);
  assert_null(IP(p)->required_anti_affinity[0]->label_selector);
  assert_int_equal(IP(p)->n_preferred_anti_affinity, 0);
  assert_int_equal(IP(p)->n_topology_spread_constraints, 1);
  Kiln__TopologySpreadConstraint *c = IP(p)->topology_spread_constraints[0];
  assert_int_equal(c->max_skew, 2);
  assert_string_equal(c->when_unsatisfiable, "ScheduleAnyway");
  assert_int_equal(c->min_domains, 3);
  assert_string_equal(c->node_affinity_policy, "Ignore");
  assert_string_equal(c->node_taints_policy, "Honor");
  assert_string_equal(c->match_label_keys[0], "pod-template-hash");
  kc_msg_free(p);
  json_decref(j);

  /* A label value that is not a string is refused with its path. */
  j = parse("{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"x\",\"b\":1}}}");
  p = (Kiln__Pod *)&p;
  assert_true(kc_pod_decode(j, &p, err, sizeof(err)) < 0);
  assert_null(p);
  if (strstr(err, "labels[b]") == NULL)
    fail_msg("error does not name the label: %s", err);
  json_decref(j);

  /* A wrong type deep inside a term is refused with its path. */
  j = parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"topologySpreadConstraints\":"
            "[{\"maxSkew\":\"one\"}]}}");
  p = (Kiln__Pod *)&p;
  assert_true(kc_pod_decode(j, &p, err, sizeof(err)) < 0);
  assert_null(p);
  if (strstr(err, "topologySpreadConstraints") == NULL || strstr(err, "maxSkew") == NULL)
    fail_msg("error does not name the field: %s", err);
  json_decref(j);
}

/* Heap bytes held by a decoded message: every block it owns, with glibc's 8-byte chunk
 * header (under AddressSanitizer malloc_usable_size reports the requested size, so the
 * figure is a lower bound there). */
static size_t block(const void *p) {
  return p ? malloc_usable_size((void *)p) + 8 : 0;
}

static size_t msg_bytes(const ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  size_t total = block(m);
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    const char *p = (const char *)m + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
      void *const *arr = *(void *const *const *)p;
      if (!n)
        continue;
      total += block(arr);
      for (size_t k = 0; k < n; k++) {
        if (f->type == PROTOBUF_C_TYPE_STRING)
          total += block(arr[k]);
        else if (f->type == PROTOBUF_C_TYPE_MESSAGE)
          total += msg_bytes(arr[k]);
      }
    } else if (f->type == PROTOBUF_C_TYPE_BYTES) {
      const ProtobufCBinaryData *b = (const ProtobufCBinaryData *)p;
      if (b->len)
        total += block(b->data);
    } else if (f->type == PROTOBUF_C_TYPE_STRING) {
      const char *s = *(char *const *)p;
      if (s && s != protobuf_c_empty_string && s != f->default_value)
        total += block(s);
    } else if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(void *const *)p) {
      total += msg_bytes(*(ProtobufCMessage *const *)p);
    }
  }
  return total;
}

static void test_memory(void **state) {
  (void)state;
  json_t *pj = load("pod.json");
  json_t *nj = load("node.json");
  Kiln__Pod *p;
  Kiln__Node *n;
  assert_int_equal(kc_pod_decode(pj, &p, NULL, 0), 0);
  assert_int_equal(kc_node_decode(nj, &n, NULL, 0), 0);
  size_t pb = msg_bytes(&p->base), nb = msg_bytes(&n->base);
  /* A typical pod from a Volcano job (no affinity, the two default tolerations). */
  json_t *plain = parse(
      "{\"metadata\":{\"name\":\"job-1-worker-12\",\"namespace\":\"default\",\"uid\":"
      "\"6f1d7c2e-1b7a-4a52-9c1e-0f3a2b4c5d6e\",\"resourceVersion\":\"1234567\","
      "\"creationTimestamp\":\"2026-11-29T16:01:51Z\",\"annotations\":{"
      "\"scheduling.k8s.io/group-name\":\"job-1-0b8f5c3a-2d4e-4f60-8a1b-9c0d1e2f3a4b\","
      "\"volcano.sh/task-spec\":\"worker\"},\"ownerReferences\":[{\"apiVersion\":"
      "\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\",\"name\":\"job-1\",\"uid\":"
      "\"0b8f5c3a-2d4e-4f60-8a1b-9c0d1e2f3a4b\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
      "\"spec\":{\"schedulerName\":\"volcano\",\"nodeName\":\"node-123\",\"priority\":0,"
      "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
      "\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":"
      "\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
      "\"tolerationSeconds\":300}],\"containers\":[{\"name\":\"main\",\"resources\":{"
      "\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":\"Running\"}}");
  Kiln__Pod *pp;
  assert_int_equal(kc_pod_decode(plain, &pp, NULL, 0), 0);
  size_t ppb = msg_bytes(&pp->base);
  /* The same with the five labels Volcano's job controller puts on its pods. */
  json_object_set_new(
      json_object_get(plain, "metadata"), "labels",
      parse("{\"volcano.sh/job-name\":\"job-1\",\"volcano.sh/job-namespace\":"
            "\"default\",\"volcano.sh/queue-name\":\"default\","
            "\"volcano.sh/task-spec\":\"worker\",\"volcano.sh/task-index\":\"12\"}"));
  Kiln__Pod *lp;
  assert_int_equal(kc_pod_decode(plain, &lp, NULL, 0), 0);
  size_t lpb = msg_bytes(&lp->base);
  kc_msg_free(lp);
  print_message("memory: typical pod %zu B (%zu B with Volcano's labels), feature-rich pod %zu B, "
                "node %zu B\n",
                ppb, lpb, pb, nb);
  assert_true(lpb < 1536); /* the pod view's target, labels included */
  assert_true(ppb < 1536);
  assert_true(pb < 3072); /* affinity terms, sidecars and host ports cost extra */
  assert_true(nb < 4096);
  assert_true(ppb > sizeof(Kiln__Pod)); /* the measure sees the strings too */
  kc_msg_free(pp);
  kc_msg_free(p);
  kc_msg_free(n);
  json_decref(plain);
  json_decref(pj);
  json_decref(nj);
}

/* Pod-level spec.resources (cpu, memory) are the pod's total: they replace what the
 * containers and init containers add up to, and the overhead still comes on top, the same
 * rule the controller counts a PodGroup's minResources with. */
static void test_pod_level_resources(void **state) {
  (void)state;
  json_t *j = parse("{\"metadata\":{\"name\":\"pl\"},\"spec\":{"
                    "\"resources\":{\"requests\":{\"cpu\":\"4\",\"memory\":\"8Gi\"}},"
                    "\"overhead\":{\"cpu\":\"10m\"},"
                    "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":"
                    "{\"cpu\":\"6\"}}}],"
                    "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":"
                    "{\"cpu\":\"1\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"}}}]}}");
  Kiln__Pod *p;
  char err[KC_CODEC_ERR_MAX];
  if (kc_pod_decode(j, &p, err, sizeof(err)) != 0)
    fail_msg("decode: %s", err);
  assert_int_equal(p->requests->milli_cpu, 4010);
  assert_int_equal(p->requests->memory, 8 * GI);
  assert_int_equal(scalar(p->requests, "nvidia.com/gpu"), 1000);
  assert_int_equal(p->container_requests->milli_cpu, 4010);
  assert_int_equal(p->container_requests->memory, 8 * GI);
  kc_msg_free(p);
  json_decref(j);
}

int main(void) {
  find_data_dir();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pod),
      cmocka_unit_test(test_pod_numa),
      cmocka_unit_test(test_pod_preemption_keys),
      cmocka_unit_test(test_pod_best_effort),
      cmocka_unit_test(test_pod_level_resources),
      cmocka_unit_test(test_node),
      cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_typed_wrappers),
      cmocka_unit_test(test_status_encode),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_snapshot),
      cmocka_unit_test(test_time),
      cmocka_unit_test(test_memory),
      cmocka_unit_test(test_pod_interpod),
      cmocka_unit_test(test_zero_scalar_kept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
