/* vcctl job whatif's core (cli/vc_whatif.c): the job controller's plan and one scheduler
 * session over a cluster built here from API JSON, read back for the Job: placement,
 * victims, the queue's refusal, per-node reasons, --at-capacity, and the output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_codec.h"
#include "sch_conf.h"
#include "test_fixture.h"
#include "vc.h"
#include "vc_whatif.h"

#define NOW 1796000000

/* Volcano's default configuration, or the same with preempt after allocate and without
 * overcommit (whose admission counts what a preemptor would free as used, as Volcano's does). */
enum { CONF_DEFAULT, CONF_PREEMPT, CONF_DRA };

/* Volcano's default with the predicates plugin's Dynamic Resource Allocation on. */
static char *conf_dra(void) {
  const char *at = strstr(sch_conf_default_yaml, "  - name: predicates\n");
  assert_non_null(at);
  char *t = NULL;
  assert_true(asprintf(&t,
                       "%.*s  - name: predicates\n    arguments:\n"
                       "      predicate.DynamicResourceAllocationEnable: true\n%s",
                       (int)(at - sch_conf_default_yaml), sch_conf_default_yaml,
                       at + strlen("  - name: predicates\n")) > 0);
  return t;
}

static char *conf_text(int which) {
  const char *rest = strchr(sch_conf_default_yaml, '\n');
  char *t = NULL;
  if (which == CONF_PREEMPT) {
    assert_true(asprintf(&t, "actions: \"enqueue, allocate, preempt, backfill\"%s", rest) > 0);
    char *oc = strstr(t, "  - name: overcommit\n");
    assert_non_null(oc);
    memmove(oc, oc + strlen("  - name: overcommit\n"),
            strlen(oc + strlen("  - name: overcommit\n")) + 1);
  } else if (which == CONF_DRA)
    t = conf_dra();
  else
    t = strdup(sch_conf_default_yaml);
  return t;
}

/* A cluster: objects decoded from JSON into a snapshot message that owns them. */
typedef struct {
  Kiln__Snapshot msg;
  Kiln__Node *nodes[8];
  Kiln__Pod *pods[8];
  Kiln__PodGroup *pgs[8];
  Kiln__Queue *queues[4];
  Kiln__PriorityClass *pcs[4];
  Kiln__DeviceClass *classes[2];
  Kiln__ResourceSlice *slices[4];
  sch_conf *conf;
} cluster;

static void cl_init(cluster *c, int which) {
  memset(c, 0, sizeof(*c));
  kiln__snapshot__init(&c->msg);
  c->msg.nodes = c->nodes;
  c->msg.pods = c->pods;
  c->msg.pod_groups = c->pgs;
  c->msg.queues = c->queues;
  c->msg.priority_classes = c->pcs;
  c->msg.device_classes = c->classes;
  c->msg.resource_slices = c->slices;
  c->msg.time_unix_nano = (int64_t)NOW * 1000000000;
  char err[256], *conf = conf_text(which);
  if (sch_conf_parse(conf, strlen(conf), &c->conf, err, sizeof(err)) != 0)
    fail_msg("conf: %s", err);
  free(conf);
}

static void cl_free(cluster *c) {
  for (size_t i = 0; i < c->msg.n_nodes; i++)
    kc_msg_free(c->nodes[i]);
  for (size_t i = 0; i < c->msg.n_pods; i++)
    kc_msg_free(c->pods[i]);
  for (size_t i = 0; i < c->msg.n_pod_groups; i++)
    kc_msg_free(c->pgs[i]);
  for (size_t i = 0; i < c->msg.n_queues; i++)
    kc_msg_free(c->queues[i]);
  for (size_t i = 0; i < c->msg.n_priority_classes; i++)
    kc_msg_free(c->pcs[i]);
  for (size_t i = 0; i < c->msg.n_device_classes; i++)
    kc_msg_free(c->classes[i]);
  for (size_t i = 0; i < c->msg.n_resource_slices; i++)
    kc_msg_free(c->slices[i]);
  sch_conf_free(c->conf);
}

static void node(cluster *c, const char *name, const char *cpu) {
  char text[512];
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":{\"cpu\":\"%s\","
           "\"memory\":\"8Gi\",\"pods\":\"110\"},\"capacity\":{\"cpu\":\"%s\",\"memory\":"
           "\"8Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
           name, cpu, cpu);
  json_t *j = fx_json_text(text, 0);
  assert_int_equal(kc_node_decode(j, &c->nodes[c->msg.n_nodes++], NULL, 0), 0);
  json_decref(j);
}

static void queue(cluster *c, const char *name, const char *spec) {
  char text[512];
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"name\":\"%s\",\"uid\":\"q-%s\"},\"spec\":%s,"
           "\"status\":{\"state\":\"Open\"}}",
           name, name, spec);
  json_t *j = fx_json_text(text, 0);
  assert_int_equal(kc_queue_decode(j, &c->queues[c->msg.n_queues++], NULL, 0), 0);
  json_decref(j);
}

static void pclass(cluster *c, const char *name, int value) {
  char text[256];
  snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"%s\"},\"value\":%d}", name, value);
  json_t *j = fx_json_text(text, 0);
  assert_int_equal(kc_priorityclass_decode(j, &c->pcs[c->msg.n_priority_classes++], NULL, 0), 0);
  json_decref(j);
}

/* A running gang of n pods of cpu on node (minMember 1: all but one are elastic, which a
 * preemptor's admission does not count), owned by Job owner, in queue q at class pc. */
static void running_n(cluster *c, const char *owner, int n, const char *nd, const char *cpu,
                      const char *q, const char *pc) {
  char text[1024];
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"name\":\"%s-pg\",\"namespace\":\"default\",\"uid\":\"pg-%s\","
           "\"creationTimestamp\":\"2026-11-01T00:00:00Z\"},\"spec\":{\"minMember\":1,"
           "\"minResources\":{\"cpu\":\"%s\"},\"queue\":\"%s\",\"priorityClassName\":\"%s\"},"
           "\"status\":{\"phase\":\"Running\"}}",
           owner, owner, cpu, q, pc);
  json_t *j = fx_json_text(text, 0);
  assert_int_equal(kc_podgroup_decode(j, &c->pgs[c->msg.n_pod_groups++], NULL, 0), 0);
  json_decref(j);
  for (int i = 0; i < n; i++) {
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"%s-%d\",\"namespace\":\"default\",\"uid\":"
             "\"pod-%s-%d\",\"creationTimestamp\":\"2026-11-01T00:00:00Z\",\"annotations\":{"
             "\"scheduling.k8s.io/group-name\":\"%s-pg\"},\"ownerReferences\":[{\"apiVersion\":"
             "\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\",\"name\":\"%s\",\"uid\":\"j-%s\","
             "\"controller\":true}]},\"spec\":{\"schedulerName\":\"volcano\",\"nodeName\":"
             "\"%s\",\"priorityClassName\":\"%s\",\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},\"status\":{\"phase\":"
             "\"Running\"}}",
             owner, i, owner, i, owner, owner, owner, nd, pc, cpu);
    j = fx_json_text(text, 0);
    Kiln__Pod **p = &c->pods[c->msg.n_pods++];
    assert_int_equal(kc_pod_decode(j, p, NULL, 0), 0);
    json_decref(j);
    (*p)->priority = 0;
    for (size_t k = 0; k < c->msg.n_priority_classes; k++)
      if (strcmp(c->pcs[k]->metadata->name, pc) == 0)
        (*p)->priority = c->pcs[k]->value;
  }
}

static void running(cluster *c, const char *owner, const char *nd, const char *cpu, const char *q,
                    const char *pc) {
  running_n(c, owner, 1, nd, cpu, q, pc);
}

/* A Job of replicas pods asking cpu each, minAvailable min, in queue q at class pc. */
static json_t *job(int replicas, int min, const char *cpu, const char *q, const char *pc) {
  char text[1024];
  snprintf(text, sizeof(text),
           "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\",\"metadata\":{"
           "\"name\":\"gang\",\"namespace\":\"default\",\"uid\":\"uid-gang\"},\"spec\":{"
           "\"minAvailable\":%d,\"schedulerName\":\"volcano\",\"queue\":\"%s\","
           "\"priorityClassName\":\"%s\",\"tasks\":[{\"name\":\"w\",\"replicas\":%d,"
           "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\","
           "\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]}}}]}}",
           min, q, pc, replicas, cpu);
  return fx_json_text(text, 0);
}

static vc_whatif *run_with(cluster *c, json_t *j, bool at_capacity, const json_t *templates) {
  vc_whatif_in in = {j, &c->msg, c->conf, NOW, at_capacity, templates};
  vc_whatif *w = NULL;
  char err[512] = "";
  int rc = vc_whatif_run(&in, &w, err, sizeof(err));
  if (rc != 0)
    fail_msg("whatif: %s (%s)", err, kc_strerror(rc));
  return w;
}

static vc_whatif *run(cluster *c, json_t *j, bool at_capacity) {
  return run_with(c, j, at_capacity, NULL);
}

/* The gang's pods come from the controller's plan (names, PodGroup "<job>-<uid>") and land
 * where room is: the node with 1 cpu left takes no 2-cpu pod. */
static void test_placement(void **state) {
  (void)state;
  cluster c;
  cl_init(&c, CONF_DEFAULT);
  node(&c, "n1", "4");
  node(&c, "n2", "4");
  queue(&c, "default", "{\"weight\":1}");
  pclass(&c, "low", 1);
  running(&c, "busy", "n1", "3", "default", "low");
  json_t *j = job(2, 2, "2", "default", "low");
  vc_whatif *w = run(&c, j, false);
  assert_string_equal(w->podgroup, "gang-uid-gang");
  assert_true(w->admitted);
  assert_true(w->placed);
  assert_int_equal(w->ntasks, 2);
  assert_string_equal(w->tasks[0].name, "gang-w-0");
  for (size_t i = 0; i < w->ntasks; i++) {
    assert_non_null(w->tasks[i].node);
    assert_string_equal(w->tasks[i].node, "n2");
    assert_string_equal(w->tasks[i].how, "allocate");
  }
  assert_int_equal(w->nvictims, 0);
  assert_null(w->why_pending);
  assert_int_equal(w->nnodes, 2);
  assert_int_equal(w->npods, 1); /* the cluster as read: the Job's pods are not in it */
  vc_whatif_free(w);
  json_decref(j);
  cl_free(&c);
}

/* A gang its queue's capability cannot hold: not admitted, with the queue's message as the
 * PodGroup would get it and `vcctl job view`'s line. */
static void test_queue_refuses(void **state) {
  (void)state;
  cluster c;
  cl_init(&c, CONF_DEFAULT);
  node(&c, "n1", "8");
  queue(&c, "default", "{\"weight\":1}");
  queue(&c, "small", "{\"weight\":1,\"capability\":{\"cpu\":\"2\"}}");
  pclass(&c, "low", 1);
  json_t *j = job(2, 2, "2", "small", "low");
  vc_whatif *w = run(&c, j, false);
  assert_false(w->admitted);
  assert_false(w->placed);
  assert_string_equal(w->phase, "Pending");
  assert_non_null(w->message);
  assert_non_null(strstr(w->message, "queue small"));
  assert_non_null(w->why_pending);
  assert_non_null(strstr(w->why_pending, w->message));
  assert_null(w->tasks[0].node);
  vc_whatif_free(w);
  json_decref(j);
  cl_free(&c);
}

/* A node a low-priority Job fills, and a high-priority gang's what-if (*j new). */
static vc_whatif *preempt_case(cluster *c, json_t **j) {
  cl_init(c, CONF_PREEMPT);
  node(c, "n1", "4");
  queue(c, "default", "{\"weight\":1}");
  pclass(c, "low", 1);
  pclass(c, "high", 1000);
  running_n(c, "old", 2, "n1", "2", "default", "low");
  *j = job(1, 1, "2", "default", "high");
  return run(c, *j, false);
}

/* A high-priority gang on a full node: preempt names the low-priority Job's pod, with its
 * priority and queue, and the gang waits for it (pipelined). */
static void test_victims(void **state) {
  (void)state;
  cluster c;
  json_t *j;
  vc_whatif *w = preempt_case(&c, &j);
  assert_int_equal(w->priority, 1000);
  assert_true(w->admitted);
  assert_false(w->placed);
  assert_true(w->after_eviction);
  assert_int_equal(w->nvictims, 1);
  assert_string_equal(w->victims[0].job, "default/old");
  assert_string_equal(w->victims[0].pod, "default/old-1");
  assert_string_equal(w->victims[0].queue, "default");
  assert_string_equal(w->victims[0].action, "preempt");
  assert_string_equal(w->victims[0].node, "n1");
  assert_int_equal(w->victims[0].priority, 1);
  assert_string_equal(w->tasks[0].how, "pipelined");
  assert_string_equal(w->tasks[0].node, "n1");
  vc_whatif_free(w);
  json_decref(j);
  cl_free(&c);
}

/* A pod no node holds: each node's reason, and the gang's why-pending line. */
static void test_node_reasons(void **state) {
  (void)state;
  cluster c;
  cl_init(&c, CONF_DEFAULT);
  node(&c, "n1", "4");
  node(&c, "n2", "2");
  queue(&c, "default", "{\"weight\":1}");
  json_t *j = job(1, 1, "8", "default", "");
  vc_whatif *w = run(&c, j, false);
  assert_false(w->placed);
  assert_string_equal(w->reasons_task, "gang-w-0");
  assert_int_equal(w->nnodes_reasons, 2);
  for (size_t i = 0; i < w->nnodes_reasons; i++)
    assert_non_null(strstr(w->nodes[i].reason, "Insufficient cpu"));
  assert_non_null(w->why_pending);
  vc_whatif_free(w);
  json_decref(j);
  cl_free(&c);
}

/* At capacity: the queue's other work is left out, so a gang today's use keeps out fits its
 * share; one larger than the share does not. */
static void test_at_capacity(void **state) {
  (void)state;
  cluster c;
  cl_init(&c, CONF_DEFAULT);
  node(&c, "n1", "4");
  queue(&c, "default", "{\"weight\":1}");
  queue(&c, "team", "{\"weight\":1,\"capability\":{\"cpu\":\"4\"}}");
  pclass(&c, "low", 1);
  running(&c, "mine", "n1", "4", "team", "low");
  json_t *j = job(1, 1, "2", "team", "low");
  vc_whatif *w = run(&c, j, false);
  assert_false(w->placed);
  vc_whatif_free(w);
  w = run(&c, j, true);
  assert_true(w->at_capacity);
  assert_true(w->placed);
  assert_string_equal(w->tasks[0].node, "n1");
  vc_whatif_free(w);
  json_decref(j);
  j = job(1, 1, "6", "team", "low");
  w = run(&c, j, true);
  assert_false(w->placed);
  vc_whatif_free(w);
  json_decref(j);
  cl_free(&c);
}

/* The text and the JSON say the same. */
static void test_output(void **state) {
  (void)state;
  cluster c;
  json_t *j;
  vc_whatif *w = preempt_case(&c, &j);
  char *text = NULL;
  size_t len;
  FILE *out = open_memstream(&text, &len);
  vc_whatif_print(out, w);
  fclose(out);
  assert_non_null(strstr(text, "Job:          default/gang\n"));
  assert_non_null(strstr(text, "Admitted:     yes"));
  assert_non_null(strstr(text, "Placed:       once the victims below are gone"));
  assert_non_null(strstr(text, "default/old-1"));
  assert_non_null(strstr(text, "preempt"));
  json_t *o = vc_whatif_json(w);
  assert_true(json_is_true(json_object_get(o, "admitted")));
  assert_true(json_is_true(json_object_get(o, "placedAfterEviction")));
  json_t *v = json_array_get(json_object_get(o, "victims"), 0);
  assert_string_equal(json_string_value(json_object_get(v, "job")), "default/old");
  assert_int_equal(json_integer_value(json_object_get(v, "priority")), 1);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(json_object_get(o, "tasks"), 0), "node")),
      "n1");
  json_decref(o);
  free(text);
  vc_whatif_free(w);
  json_decref(j);
  cl_free(&c);
}

/* ---- Dynamic Resource Allocation ---- */

#define GPU "gpu.example.com"

/* The DeviceClass GPU, and on node nd a ResourceSlice of n devices <nd>-gpu-<i>. */
static void devices(cluster *c, const char *nd, int n) {
  char text[2048];
  if (c->msg.n_device_classes == 0) {
    json_t *j = fx_json_text("{\"metadata\":{\"name\":\"" GPU "\"},\"spec\":{\"selectors\":"
                             "[{\"cel\":{\"expression\":\"device.driver == '" GPU "'\"}}]}}",
                             0);
    assert_int_equal(kc_deviceclass_decode(j, &c->classes[c->msg.n_device_classes++], NULL, 0), 0);
    json_decref(j);
  }
  int at = snprintf(text, sizeof(text),
                    "{\"metadata\":{\"name\":\"%s-gpus\"},\"spec\":{\"driver\":\"" GPU "\","
                    "\"nodeName\":\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":1,"
                    "\"resourceSliceCount\":1},\"devices\":[",
                    nd, nd, nd);
  for (int i = 0; i < n; i++)
    at += snprintf(text + at, sizeof(text) - (size_t)at, "%s{\"name\":\"%s-gpu-%d\"}", i ? "," : "",
                   nd, i);
  snprintf(text + at, sizeof(text) - (size_t)at, "]}}");
  json_t *j = fx_json_text(text, 0);
  assert_int_equal(kc_resourceslice_decode(j, &c->slices[c->msg.n_resource_slices++], NULL, 0), 0);
  json_decref(j);
}

/* A Job of one pod of 1 cpu claiming devices through the template "two-gpus". */
static json_t *device_job(void) {
  return fx_json_text(
      "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\",\"metadata\":{"
      "\"name\":\"gang\",\"namespace\":\"default\",\"uid\":\"uid-gang\"},\"spec\":{"
      "\"minAvailable\":1,\"schedulerName\":\"volcano\",\"queue\":\"default\",\"tasks\":[{"
      "\"name\":\"w\",\"replicas\":1,\"template\":{\"spec\":{\"resourceClaims\":[{"
      "\"name\":\"gpu\",\"resourceClaimTemplateName\":\"two-gpus\"}],\"containers\":[{"
      "\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"1\"},"
      "\"claims\":[{\"name\":\"gpu\"}]}}]}}}]}}",
      0);
}

static json_t *two_gpus(void) {
  return fx_json_text("[{\"metadata\":{\"name\":\"two-gpus\",\"namespace\":\"default\"},"
                      "\"spec\":{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpus\","
                      "\"exactly\":{\"deviceClassName\":\"" GPU "\",\"count\":2}}]}}}}]",
                      0);
}

/* A pod claiming two devices through a template: the claim kube-controller-manager would make
 * joins the snapshot, the pod goes to the one node with two devices, and the answer names the
 * devices as the claim's status.allocation. Without the template the claim is never made and
 * the pod is not placed. */
static void test_devices(void **state) {
  (void)state;
  cluster c;
  cl_init(&c, CONF_DRA);
  node(&c, "n1", "4");
  node(&c, "n2", "4");
  node(&c, "n3", "4");
  queue(&c, "default", "{\"weight\":1}");
  devices(&c, "n1", 1);
  devices(&c, "n3", 2);
  json_t *j = device_job(), *t = two_gpus();
  vc_whatif *w = run_with(&c, j, false, t);
  assert_true(w->placed);
  assert_string_equal(w->tasks[0].node, "n3");
  json_t *claim = json_array_get(w->tasks[0].claims, 0);
  assert_non_null(claim);
  assert_string_equal(json_string_value(json_object_get(claim, "claim")), "gang-w-0-gpu-whatif");
  json_t *res = vc_at(claim, "allocation.devices.results");
  assert_int_equal(json_array_size(res), 2);
  /* The two devices of n3, in the order the allocator took them. */
  const char *d0 = vc_str(json_array_get(res, 0), "device"),
             *d1 = vc_str(json_array_get(res, 1), "device");
  assert_true((strcmp(d0, "n3-gpu-0") == 0 && strcmp(d1, "n3-gpu-1") == 0) ||
              (strcmp(d0, "n3-gpu-1") == 0 && strcmp(d1, "n3-gpu-0") == 0));
  assert_string_equal(vc_str(json_array_get(res, 0), "pool"), "n3");
  assert_string_equal(vc_str(json_array_get(res, 0), "driver"), GPU);
  json_t *term = json_array_get(vc_at(claim, "allocation.nodeSelector.nodeSelectorTerms"), 0);
  json_t *field = json_array_get(json_object_get(term, "matchFields"), 0);
  assert_string_equal(vc_str(field, "key"), "metadata.name");
  assert_string_equal(json_string_value(json_array_get(json_object_get(field, "values"), 0)), "n3");
  char *text = NULL, line[256];
  size_t len;
  FILE *out = open_memstream(&text, &len);
  vc_whatif_print(out, w);
  fclose(out);
  snprintf(line, sizeof(line), "    claim gang-w-0-gpu-whatif: " GPU "/n3/%s, " GPU "/n3/%s\n", d0,
           d1);
  assert_non_null(strstr(text, line));
  free(text);
  vc_whatif_free(w);
  w = run(&c, j, false);
  assert_false(w->placed);
  assert_null(w->tasks[0].claims);
  assert_non_null(w->tasks[0].why);
  assert_non_null(strstr(w->tasks[0].why, "not created yet"));
  vc_whatif_free(w);
  json_decref(t);
  json_decref(j);
  cl_free(&c);
}

/* The command lines: job whatif, and job run --dry-run as the same verb. */
static void test_args(void **state) {
  (void)state;
  vc_args a;
  char err[256];
  char *argv1[] = {"vcctl",
                   "job",
                   "whatif",
                   "-f",
                   "j.yaml",
                   "-o",
                   "json",
                   "--at-capacity",
                   "--scheduler-configmap",
                   "ns/cm",
                   NULL};
  assert_int_equal(vc_args_parse(10, argv1, NULL, &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_WHATIF);
  assert_string_equal(a.filename, "j.yaml");
  assert_string_equal(a.format, "json");
  assert_true(a.at_capacity);
  assert_string_equal(a.sched_configmap, "ns/cm");
  char *argv2[] = {"vcctl", "job", "run", "-f", "j.yaml", "--dry-run", NULL};
  assert_int_equal(vc_args_parse(6, argv2, NULL, &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_WHATIF);
  assert_string_equal(a.what, "run job");
  char *argv3[] = {"vcctl", "job", "run", "-f", "j.yaml", NULL};
  assert_int_equal(vc_args_parse(5, argv3, NULL, &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_RUN);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_placement),   cmocka_unit_test(test_queue_refuses),
      cmocka_unit_test(test_victims),     cmocka_unit_test(test_node_reasons),
      cmocka_unit_test(test_at_capacity), cmocka_unit_test(test_output),
      cmocka_unit_test(test_args),        cmocka_unit_test(test_devices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
