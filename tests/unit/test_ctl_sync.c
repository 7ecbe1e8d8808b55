/* syncJob: pod construction, scale down, minAvailable defaults, dependsOn, status counts,
 * the PodGroup (minResources), PVCs, queue checks and Commands. */
#include "test_ctl_util.h"
#include <time.h>

static const char running_status[] =
    "{\"state\":{\"phase\":\"Running\",\"lastTransitionTime\":\"2026-11-29T10:01:00Z\"},"
    "\"minAvailable\":5,\"version\":2,\"retryCount\":1}";

/* Every pod of the gang is built from its task template with Volcano's keys. */
static void test_pod_from_template(void **state) {
  fx f;
  fx_init(&f, "job-gang.json", running_status);
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 6);
  json_t *pod = fx_created_pod(&f, "gang-ps-0");
  assert_non_null(pod);
  assert_string_equal(jstr(pod, "apiVersion"), "v1");
  assert_string_equal(jstr(pod, "kind"), "Pod");
  assert_string_equal(jstr(pod, "metadata.namespace"), "default");
  /* annotations */
  assert_string_equal(fx_ann(pod, "volcano.sh/task-spec"), "ps");
  assert_string_equal(fx_ann(pod, "volcano.sh/task-index"), "0");
  assert_string_equal(fx_ann(pod, "scheduling.k8s.io/group-name"), "gang-uid-gang");
  assert_string_equal(fx_ann(pod, "volcano.sh/job-name"), "gang");
  assert_string_equal(fx_ann(pod, "volcano.sh/queue-name"), "default");
  assert_string_equal(fx_ann(pod, "volcano.sh/job-version"), "2");
  assert_string_equal(fx_ann(pod, "volcano.sh/template-uid"), "gang-ps");
  assert_string_equal(fx_ann(pod, "volcano.sh/job-retry-count"), "1");
  assert_string_equal(fx_ann(pod, "volcano.sh/preemptable"), "true");
  assert_string_equal(fx_ann(pod, "owner"), "alice"); /* from the template */
  assert_null(fx_ann(pod, "note"));                   /* job annotations are not copied */
  /* labels */
  assert_string_equal(fx_label(pod, "volcano.sh/job-name"), "gang");
  assert_string_equal(fx_label(pod, "volcano.sh/job-namespace"), "default");
  assert_string_equal(fx_label(pod, "volcano.sh/task-spec"), "ps");
  assert_string_equal(fx_label(pod, "volcano.sh/task-index"), "0");
  assert_string_equal(fx_label(pod, "volcano.sh/queue-name"), "default");
  assert_string_equal(fx_label(pod, "volcano.sh/preemptable"), "true");
  assert_string_equal(fx_label(pod, "role"), "ps");
  assert_null(fx_label(pod, "team"));
  /* owner reference */
  json_t *refs = json_object_get(json_object_get(pod, "metadata"), "ownerReferences");
  assert_int_equal(json_array_size(refs), 1);
  json_t *ref = json_array_get(refs, 0);
  assert_string_equal(jstr(ref, "apiVersion"), "batch.volcano.sh/v1alpha1");
  assert_string_equal(jstr(ref, "kind"), "Job");
  assert_string_equal(jstr(ref, "name"), "gang");
  assert_string_equal(jstr(ref, "uid"), "uid-gang");
  assert_true(json_is_true(json_object_get(ref, "controller")));
  assert_true(json_is_true(json_object_get(ref, "blockOwnerDeletion")));
  /* spec from the template, scheduler and priority class from the job */
  assert_string_equal(jstr(pod, "spec.schedulerName"), "volcano");
  assert_string_equal(jstr(pod, "spec.priorityClassName"), "batch-high");
  assert_string_equal(jstr(pod, "spec.restartPolicy"), "OnFailure");
  json_t *ct = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
  assert_string_equal(jstr(ct, "image"), "busybox:1.36");
  /* the template's own priority class wins */
  json_t *ev = fx_created_pod(&f, "gang-evaluator-0");
  assert_string_equal(jstr(ev, "spec.priorityClassName"), "batch-low");
  assert_string_equal(fx_ann(fx_created_pod(&f, "gang-worker-3"), "volcano.sh/task-index"), "3");
  /* created pods count as pending */
  assert_int_equal(f.plan.status.pending, 6);
  fx_close(&f);
}

/* No pod before the scheduler admits the PodGroup; a Warning tells why. */
static void test_no_pods_until_inqueue(void **state) {
  fx f;
  fx_init(&f, "job-gang.json", running_status);
  fx_pg(&f, "Pending",
        "\"conditions\":[{\"type\":\"Unschedulable\",\"status\":\"True\",\"message\":\"5/6 tasks "
        "in gang unschedulable: 0/1 nodes are available\"}]");
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 0);
  const ctl_k8s_event *e = fx_event(&f, "PodGroupPending");
  assert_non_null(e);
  assert_int_equal(e->type, CTL_EVENT_WARNING);
  assert_string_equal(e->message, "PodGroup default:gang unschedulable, reason: 5/6 tasks in gang "
                                  "unschedulable: 0/1 nodes are available");
  fx_close(&f);
}

/* Admitted but not placed: the pods exist and the Job still tells why (describe vcjob). */
static void test_admitted_unschedulable_event(void **state) {
  fx f;
  fx_init(&f, "job-gang.json", running_status);
  fx_pg(&f, "Inqueue",
        "\"conditions\":[{\"type\":\"Unschedulable\",\"status\":\"True\",\"message\":\"6/6 tasks "
        "in gang unschedulable: pod requests 40 cpu; the largest node allocates 32\"}]");
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_true(json_array_size(f.plan.pods_create) > 0);
  const ctl_k8s_event *e = fx_event(&f, "PodGroupPending");
  assert_non_null(e);
  assert_string_equal(e->message, "PodGroup default:gang unschedulable, reason: 6/6 tasks in gang "
                                  "unschedulable: pod requests 40 cpu; the largest node "
                                  "allocates 32");
  fx_close(&f);
  /* once scheduled, nothing is relayed */
  fx_init(&f, "job-gang.json", running_status);
  fx_pg(&f, "Running", "\"conditions\":[{\"type\":\"Scheduled\",\"status\":\"True\"}]");
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_null(fx_event(&f, "PodGroupPending"));
  fx_close(&f);
}

static void test_scale_down_and_out_of_sync(void **state) {
  fx f;
  fx_init(&f, "job-single.json",
          "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1,\"version\":0}");
  fx_pg(&f, "Running", NULL);
  fx_pod(&f, "main", 0, CTL_POD_RUNNING);
  fx_pod(&f, "main", 1, CTL_POD_RUNNING); /* replicas is 1: scaled down */
  fx_pod(&f, "main", 2, CTL_POD_PENDING)->deletion_ts = FX_NOW - 5;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(f.plan.npods_delete, 1);
  assert_string_equal(f.plan.pods_delete[0].name, "hello-main-1");
  assert_int_equal(f.plan.status.running, 1);
  assert_int_equal(f.plan.status.terminating, 2);
  assert_int_equal(json_array_size(f.plan.pods_create), 0);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_RUNNING);
  fx_close(&f);

  fx_init(&f, "job-single.json", "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1}");
  fx_pg(&f, "Running", NULL);
  fx_pod(&f, "main", 0, CTL_POD_RUNNING)->out_of_sync = true;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_true(fx_deleted(&f, "hello-main-0"));
  assert_int_equal(f.plan.status.terminating, 1);
  fx_close(&f);
}

static void test_status_counts(void **state) {
  fx f;
  fx_init(&f, "job-gang.json", running_status);
  fx_pg(&f, "Running", NULL);
  fx_pod(&f, "ps", 0, CTL_POD_RUNNING);
  fx_pod(&f, "worker", 0, CTL_POD_SUCCEEDED);
  fx_pod(&f, "worker", 1, CTL_POD_FAILED);
  fx_pod(&f, "worker", 2, CTL_POD_UNKNOWN);
  fx_pod(&f, "worker", 3, CTL_POD_PENDING);
  fx_pod(&f, "evaluator", 0, CTL_POD_RUNNING);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  const ctl_status *st = &f.plan.status;
  assert_int_equal(st->running, 2);
  assert_int_equal(st->succeeded, 1);
  assert_int_equal(st->failed, 1);
  assert_int_equal(st->unknown, 1);
  assert_int_equal(st->pending, 1);
  assert_int_equal(st->min_available, 5);
  assert_int_equal(st->version, 2);
  assert_int_equal(st->retry_count, 1);
  json_t *j = ctl_status_to_json(st);
  json_t *tsc = json_object_get(j, "taskStatusCount");
  json_t *w = json_object_get(json_object_get(tsc, "worker"), "phase");
  assert_int_equal(json_integer_value(json_object_get(w, "Succeeded")), 1);
  assert_int_equal(json_integer_value(json_object_get(w, "Failed")), 1);
  assert_int_equal(json_integer_value(json_object_get(w, "Unknown")), 1);
  assert_int_equal(json_integer_value(json_object_get(w, "Pending")), 1);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(json_object_get(tsc, "ps"), "phase"), "Running")),
                   1);
  assert_true(f.plan.status_changed);
  json_decref(j);
  fx_close(&f);
}

/* The same sync twice over the resulting state writes no status. */
static void test_status_unchanged(void **state) {
  fx f;
  fx_init(&f, "job-single.json",
          "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1,\"running\":1,"
          "\"taskStatusCount\":{\"main\":{\"phase\":{\"Running\":1}}}}");
  fx_pg(&f, "Running", NULL);
  fx_pod(&f, "main", 0, CTL_POD_RUNNING);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_false(f.plan.status_changed);
  fx_close(&f);
}

/* Without spec.minAvailable the default is the sum of the tasks' minAvailable. */
static void test_min_available_default(void **state) {
  json_t *j = fx_file("job-gang.json");
  json_object_del(json_object_get(j, "spec"), "minAvailable");
  fx f;
  fx_init_json(&f, j, NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  /* ps 1 (replicas) + worker 4 + evaluator 0 */
  assert_int_equal(f.plan.status.min_available, 5);
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(f.plan.podgroup, "spec"), "minMember")),
      5);
  fx_close(&f);
}

static void test_podgroup(void **state) {
  fx f;
  fx_init(&f, "job-gang.json", NULL);
  f.prios[0] = (ctl_priority){"batch-low", 10};
  f.v.npriorities = 1;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  json_t *pg = f.plan.podgroup;
  assert_non_null(pg);
  assert_false(f.plan.podgroup_update);
  assert_string_equal(f.plan.podgroup_name, "gang-uid-gang");
  assert_string_equal(jstr(pg, "apiVersion"), "scheduling.volcano.sh/v1beta1");
  assert_string_equal(jstr(pg, "kind"), "PodGroup");
  assert_string_equal(jstr(pg, "metadata.name"), "gang-uid-gang");
  assert_string_equal(jstr(pg, "metadata.namespace"), "default");
  assert_string_equal(fx_label(pg, "team"), "ml");
  assert_string_equal(fx_ann(pg, "note"), "gang");
  assert_string_equal(
      jstr(json_array_get(json_object_get(json_object_get(pg, "metadata"), "ownerReferences"), 0),
           "kind"),
      "Job");
  json_t *spec = json_object_get(pg, "spec");
  assert_int_equal(json_integer_value(json_object_get(spec, "minMember")), 5);
  json_t *mtm = json_object_get(spec, "minTaskMember");
  assert_int_equal(json_integer_value(json_object_get(mtm, "ps")), 1);
  assert_int_equal(json_integer_value(json_object_get(mtm, "worker")), 4);
  assert_int_equal(json_integer_value(json_object_get(mtm, "evaluator")), 0);
  assert_string_equal(jstr(spec, "queue"), "default");
  assert_string_equal(jstr(spec, "priorityClassName"), "batch-high");
  /* minAvailable 5 == sum of task minAvailable: 1 ps (500m, 256Mi) + 4 workers (1, 512Mi);
   * the evaluator (priority 10, but minAvailable 0) adds nothing. */
  fx_expect_json(
      json_object_get(spec, "minResources"),
      "{\"count/pods\":\"5\",\"pods\":\"5\",\"cpu\":\"4500m\",\"requests.cpu\":\"4500m\","
      "\"memory\":\"2304Mi\",\"requests.memory\":\"2304Mi\"}");
  assert_null(json_object_get(spec, "subGroupPolicy"));
  fx_close(&f);
}

/* job.minAvailable below the tasks' sum: the first minAvailable pods by priority. */
static void test_min_resources_by_priority(void **state) {
  json_t *j = fx_file("job-gang.json");
  json_object_set_new(json_object_get(j, "spec"), "minAvailable", json_integer(2));
  fx f;
  fx_init_json(&f, j, NULL);
  f.prios[0] = (ctl_priority){"batch-low", 10};
  f.v.npriorities = 1;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  json_t *mr = json_object_get(json_object_get(f.plan.podgroup, "spec"), "minResources");
  /* evaluator first (250m, 128Mi), then ps (500m, 256Mi) */
  fx_expect_json(mr, "{\"count/pods\":\"2\",\"pods\":\"2\",\"cpu\":\"750m\",\"requests.cpu\":"
                     "\"750m\",\"memory\":\"384Mi\",\"requests.memory\":\"384Mi\"}");
  fx_close(&f);
}

/* An existing PodGroup is updated only when the synced fields differ. */
static void test_podgroup_update(void **state) {
  fx f;
  fx_init(&f, "job-single.json", "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1}");
  json_t *pgj = fx_parse("{\"metadata\":{\"name\":\"hello-uid-hello\"},\"spec\":{\"minMember\":1,"
                         "\"minTaskMember\":{\"main\":1},\"queue\":\"default\",\"minResources\":"
                         "{\"count/pods\":\"1\",\"pods\":\"1\",\"cpu\":\"100m\",\"requests.cpu\":"
                         "\"100m\",\"memory\":\"64Mi\",\"requests.memory\":\"64Mi\"}},"
                         "\"status\":{\"phase\":\"Running\"}}");
  assert_int_equal(kc_podgroup_decode(pgj, &f.pg, NULL, 0), 0);
  json_decref(pgj);
  f.v.podgroup = f.pg;
  fx_pod(&f, "main", 0, CTL_POD_RUNNING);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_null(f.plan.podgroup);
  f.pg->spec->min_member = 3;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_non_null(f.plan.podgroup);
  assert_true(f.plan.podgroup_update);
  fx_close(&f);

  /* A PodGroup written before the quota keys (only cpu and memory) is brought up to date. */
  fx_init(&f, "job-single.json", "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1}");
  pgj = fx_parse("{\"metadata\":{\"name\":\"hello-uid-hello\"},\"spec\":{\"minMember\":1,"
                 "\"minTaskMember\":{\"main\":1},\"queue\":\"default\",\"minResources\":"
                 "{\"cpu\":\"100m\",\"memory\":\"64Mi\"}},\"status\":{\"phase\":\"Running\"}}");
  assert_int_equal(kc_podgroup_decode(pgj, &f.pg, NULL, 0), 0);
  json_decref(pgj);
  f.v.podgroup = f.pg;
  fx_pod(&f, "main", 0, CTL_POD_RUNNING);
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_non_null(f.plan.podgroup);
  assert_true(f.plan.podgroup_update);
  fx_close(&f);

  /* minAvailable 0 asks for nothing: the patch removes what the live list holds. */
  json_t *j = fx_file("job-single.json");
  json_object_set_new(json_object_get(j, "spec"), "minAvailable", json_integer(0));
  fx_init_json(&f, j, "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":0}");
  pgj = fx_parse("{\"metadata\":{\"name\":\"hello-uid-hello\"},\"spec\":{\"minMember\":1,"
                 "\"minTaskMember\":{\"main\":1},\"queue\":\"default\",\"minResources\":"
                 "{\"count/pods\":\"1\",\"pods\":\"1\",\"cpu\":\"100m\",\"memory\":\"64Mi\"}},"
                 "\"status\":{\"phase\":\"Running\"}}");
  assert_int_equal(kc_podgroup_decode(pgj, &f.pg, NULL, 0), 0);
  json_decref(pgj);
  f.v.podgroup = f.pg;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_true(f.plan.podgroup_update);
  fx_expect_json(json_object_get(json_object_get(f.plan.podgroup, "spec"), "minResources"),
                 "{\"count/pods\":null,\"pods\":null,\"cpu\":null,\"memory\":null}");
  fx_close(&f);
}

/* A task with dependsOn waits until its dependency has minAvailable ready pods. */
static void test_depends_on(void **state) {
  fx f;
  fx_init(&f, "job-depends.json", "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":2}");
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 1);
  assert_non_null(fx_created_pod(&f, "pipeline-prep-0"));
  assert_true(f.plan.requeue_after > 0);
  /* running but not ready: still waiting */
  fx_pod(&f, "prep", 0, CTL_POD_RUNNING)->ready = false;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 0);
  f.pods[0].ready = true;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 2);
  assert_non_null(fx_created_pod(&f, "pipeline-train-1"));
  fx_close(&f);
}

static void test_pvc(void **state) {
  fx f;
  fx_init(&f, "job-pvc.json", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  /* the named claim does not exist yet */
  assert_int_equal(fx_sync(&f, &req), 0);
  const ctl_k8s_event *e = fx_event(&f, "PVCError");
  assert_non_null(e);
  assert_int_equal(e->type, CTL_EVENT_WARNING);
  assert_string_equal(e->message, "Failed to create PVC, err: pvc shared-datasets is not found, "
                                  "the job will be in the Pending state until the PVC is created");
  assert_int_equal(f.plan.status.phase, CTL_PHASE_PENDING);
  assert_string_equal(f.plan.status.reason, "PVCError");
  assert_null(f.plan.podgroup);
  /* once it exists: one generated claim, its name written back, controlledResources */
  f.pvcs[0] = "shared-datasets";
  f.v.npvcs = 1;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_null(fx_event(&f, "PVCError"));
  assert_int_equal(json_array_size(f.plan.pvcs), 1);
  json_t *pvc = json_array_get(f.plan.pvcs, 0);
  const char *name = jstr(pvc, "metadata.name");
  assert_int_equal(strncmp(name, "with-pvc-pvc-", 13), 0);
  assert_int_equal(strlen(name), 13 + 12);
  assert_string_equal(jstr(pvc, "spec.resources.requests.storage"), "1Gi");
  json_t *vols = json_object_get(json_object_get(f.plan.job_patch, "spec"), "volumes");
  assert_string_equal(jstr(json_array_get(vols, 0), "volumeClaimName"), name);
  assert_string_equal(jstr(json_array_get(vols, 1), "volumeClaimName"), "shared-datasets");
  char key[300];
  snprintf(key, sizeof(key), "volume-pvc-%s", name);
  assert_string_equal(json_string_value(json_object_get(f.plan.status.controlled, key)), name);
  assert_non_null(f.plan.podgroup);
  fx_close(&f);
}

/* Pods mount every job volume. */
static void test_pod_volumes(void **state) {
  json_t *j = fx_file("job-pvc.json");
  json_t *v0 = json_array_get(json_object_get(json_object_get(j, "spec"), "volumes"), 0);
  json_object_set_new(v0, "volumeClaimName", json_string("with-pvc-pvc-abc"));
  fx f;
  fx_init_json(&f, j, "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":2}");
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  json_t *pod = fx_created_pod(&f, "with-pvc-trainer-0");
  assert_non_null(pod);
  json_t *vols = json_object_get(json_object_get(pod, "spec"), "volumes");
  assert_int_equal(json_array_size(vols), 2);
  assert_string_equal(jstr(json_array_get(vols, 1), "persistentVolumeClaim.claimName"),
                      "shared-datasets");
  json_t *ct = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
  json_t *mounts = json_object_get(ct, "volumeMounts");
  assert_int_equal(json_array_size(mounts), 2);
  assert_string_equal(jstr(json_array_get(mounts, 0), "mountPath"), "/scratch");
  assert_string_equal(jstr(json_array_get(mounts, 0), "name"),
                      jstr(json_array_get(vols, 0), "name"));
  fx_close(&f);
}

static void test_queue_checks(void **state) {
  fx f;
  fx_init(&f, "job-single.json", NULL);
  f.v.queue_exists = false;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  const ctl_k8s_event *e = fx_event(&f, "QueueNotFound");
  assert_non_null(e);
  assert_int_equal(e->type, CTL_EVENT_WARNING);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_PENDING);
  assert_string_equal(f.plan.status.reason, "QueueNotFound");
  /* Volcano's job webhook words, with the API server's not-found error. */
  assert_non_null(strstr(e->message, "unable to find job queue: queues.scheduling.volcano.sh "
                                     "\"default\" not found"));
  assert_null(f.plan.podgroup);
  assert_true(f.plan.requeue_after > 0);
  f.v.queue_exists = true;
  f.v.queue_has_children = true;
  assert_int_equal(fx_sync(&f, &req), 0);
  e = fx_event(&f, "QueueNotLeaf");
  assert_non_null(e);
  assert_int_equal(e->type, CTL_EVENT_WARNING);
  assert_string_equal(f.plan.status.reason, "QueueNotLeaf");
  assert_non_null(strstr(f.plan.status.message, "The Queue <default> of Job <"));
  assert_non_null(strstr(f.plan.status.message, "/hello> is not leaf queue"));
  assert_null(f.plan.podgroup);
  f.v.queue_has_children = false;
  f.v.queue_state = "Closed";
  assert_int_equal(fx_sync(&f, &req), 0);
  e = fx_event(&f, "QueueNotOpen");
  assert_non_null(e);
  assert_int_equal(e->type, CTL_EVENT_WARNING);
  /* Volcano's webhook words for the same refusal */
  assert_non_null(strstr(e->message, "can only submit job to queue with state `Open`, queue "
                                     "`default` status is `Closed`"));
  assert_null(f.plan.podgroup);
  f.v.queue_state = "Closing"; /* also not Open */
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_non_null(fx_event(&f, "QueueNotOpen"));
  assert_null(f.plan.podgroup);
  f.v.queue_state = "Open";
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_null(fx_event(&f, "QueueNotOpen"));
  assert_non_null(f.plan.podgroup);
  assert_string_equal(f.plan.status.reason, "");
  fx_close(&f);
}

/* A Command is deleted first and its action runs once. */
static void test_command(void **state) {
  fx f;
  fx_init(&f, "job-single.json", "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1}");
  fx_pg(&f, "Running", NULL);
  fx_pod(&f, "main", 0, CTL_POD_RUNNING);
  json_t *cj = fx_parse("{\"metadata\":{\"name\":\"hello-abortjob-x1\"},\"action\":\"AbortJob\","
                        "\"target\":{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":"
                        "\"Job\",\"name\":\"hello\"}}");
  assert_int_equal(kc_command_decode(cj, &f.cmds[0], NULL, 0), 0);
  json_decref(cj);
  f.v.commands = f.cmds;
  f.v.ncommands = 1;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(f.plan.ncommands_delete, 1);
  assert_string_equal(f.plan.commands_delete[0], "hello-abortjob-x1");
  const ctl_k8s_event *e = fx_event(&f, "CommandIssued");
  assert_non_null(e);
  assert_string_equal(e->message, "Start to execute command AbortJob, and clean it up to make "
                                  "sure executed not more than once.");
  assert_int_equal(f.plan.action, CTL_ACT_ABORT_JOB);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_ABORTING);
  assert_true(fx_deleted(&f, "hello-main-0"));
  /* once the command is gone the same request only syncs */
  f.v.ncommands = 0;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(f.plan.ncommands_delete, 0);
  assert_int_equal(f.plan.action, CTL_ACT_SYNC_JOB);
  fx_close(&f);
}

/* ttlSecondsAfterFinished is the gc-controller's (tests/unit/test_ctl_gc.c): the job controller
 * neither deletes the finished job nor requeues it for that. */
static void test_ttl_is_not_the_job_controllers(void **state) {
  fx f;
  fx_init(&f, "job-gang.json",
          "{\"state\":{\"phase\":\"Completed\",\"lastTransitionTime\":\"2026-11-30T00:00:00Z\"}}");
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  f.v.now += 7200; /* long past the fixture's ttl of 3600 */
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(f.plan.requeue_after, 0);
  fx_close(&f);
}

static void test_pod_from_json(void **state) {
  json_t *j = fx_parse(
      "{\"metadata\":{\"name\":\"gang-worker-2\",\"uid\":\"p1\",\"creationTimestamp\":"
      "\"2026-11-29T10:00:00Z\",\"deletionTimestamp\":\"2026-11-29T10:05:00Z\",\"annotations\":{"
      "\"volcano.sh/task-spec\":\"worker\",\"volcano.sh/job-version\":\"3\","
      "\"volcano.sh/controller-out-of-sync\":\"true\"}},\"status\":{\"phase\":\"Failed\","
      "\"containerStatuses\":[{\"ready\":false,\"restartCount\":2,\"state\":{\"terminated\":{"
      "\"exitCode\":3}}},{\"ready\":true,\"restartCount\":1}]}}");
  ctl_pod p;
  assert_int_equal(ctl_pod_from_json(j, &p), 0);
  assert_string_equal(p.name, "gang-worker-2");
  assert_string_equal(p.task, "worker");
  assert_int_equal(p.index, 2);
  assert_int_equal(p.phase, CTL_POD_FAILED);
  assert_true(p.has_exit_code);
  assert_int_equal(p.exit_code, 3);
  assert_int_equal(p.version, 3);
  assert_int_equal(p.restarts, 3);
  assert_false(p.ready);
  assert_true(p.out_of_sync);
  assert_true(p.deletion_ts > p.creation_ts);
  json_decref(j);
  assert_int_equal(ctl_pod_from_json(NULL, &p), KC_EINVAL);
}

/* A large job: every pod once, names indexed, counts exact; then a scale down by half. */
static void test_large_job(void **state) {
  enum { N = 2000 };
  fx f;
  fx_init_json(&f,
               fx_parse("{\"metadata\":{\"name\":\"big\",\"uid\":\"ub\",\"namespace\":"
                        "\"default\"},\"spec\":{\"minAvailable\":2000,\"tasks\":[{\"name\":"
                        "\"w\",\"replicas\":2000,\"template\":{\"spec\":{\"containers\":[{"
                        "\"name\":\"c\",\"image\":\"busybox\"}]}}}]}}"),
               "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":2000}");
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  /* At most 1,000 pods are built in one sync, and the plan asks for the next sync at once. */
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), N / 2);
  assert_int_equal(f.plan.status.pending, N / 2);
  assert_int_equal(f.plan.requeue_after, 1);
  assert_non_null(fx_created_pod(&f, "big-w-999"));
  assert_null(fx_created_pod(&f, "big-w-1000"));

  ctl_pod *pods = calloc(N, sizeof(*pods));
  assert_non_null(pods);
  for (int i = 0; i < N; i++) {
    snprintf(pods[i].name, sizeof(pods[i].name), "big-w-%d", N - 1 - i); /* any order */
    snprintf(pods[i].task, sizeof(pods[i].task), "w");
    pods[i].index = N - 1 - i;
    pods[i].phase = CTL_POD_RUNNING;
  }
  /* With the first half there, the next sync builds the second. */
  f.v.pods = pods + N / 2;
  f.v.npods = N / 2;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), N / 2);
  assert_non_null(fx_created_pod(&f, "big-w-1000"));
  assert_non_null(fx_created_pod(&f, "big-w-1999"));
  f.v.pods = pods;
  f.v.npods = N;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 0);
  assert_int_equal(f.plan.npods_delete, 0);
  assert_int_equal(f.plan.status.running, N);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_RUNNING);

  f.job->spec->tasks[0]->replicas = N / 2;
  f.job->spec->min_available = N / 2;
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(f.plan.npods_delete, N / 2);
  assert_int_equal(f.plan.status.running, N / 2);
  assert_int_equal(f.plan.status.terminating, N / 2);
  for (size_t i = 0; i < f.plan.npods_delete; i++) {
    long idx = strtol(strrchr(f.plan.pods_delete[i].name, '-') + 1, NULL, 10);
    assert_true(idx >= N / 2);
  }
  fx_close(&f);
  free(pods);
}

/* A view may lower the burst (the job-sync fuzz target does): the sync builds that many, asks
 * for the next sync at once, and the next builds the ones after them. */
static void test_burst_lowered_by_the_view(void **state) {
  fx f;
  fx_init_json(&f,
               fx_parse("{\"metadata\":{\"name\":\"lo\",\"uid\":\"ul\",\"namespace\":"
                        "\"default\"},\"spec\":{\"minAvailable\":1,\"tasks\":[{\"name\":"
                        "\"w\",\"replicas\":10,\"template\":{\"spec\":{\"containers\":[{"
                        "\"name\":\"c\",\"image\":\"busybox\"}]}}}]}}"),
               "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":1}");
  fx_pg(&f, "Inqueue", NULL);
  f.v.create_burst = 3;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 3);
  assert_non_null(fx_created_pod(&f, "lo-w-2"));
  assert_null(fx_created_pod(&f, "lo-w-3"));
  assert_int_equal(f.plan.requeue_after, 1);
  for (int i = 0; i < 3; i++)
    fx_pod(&f, "w", i, CTL_POD_PENDING);
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 3);
  assert_non_null(fx_created_pod(&f, "lo-w-3"));
  assert_non_null(fx_created_pod(&f, "lo-w-5"));
  fx_close(&f);
}

/* replicas is the user's number, up to 2^31-1: a sync builds at most 1,000 pods and walks no
 * further than the pods that exist, so it takes no longer than a small Job's (before, it built
 * every pod, or walked every index while a dependency held them back). */
static void test_replicas_at_the_schema_maximum(void **state) {
  fx f;
  fx_init_json(&f,
               fx_parse("{\"metadata\":{\"name\":\"huge\",\"uid\":\"uh\",\"namespace\":"
                        "\"default\"},\"spec\":{\"minAvailable\":1,\"tasks\":[{\"name\":"
                        "\"a\",\"replicas\":2147483647,\"template\":{\"spec\":{\"containers\""
                        ":[{\"name\":\"c\",\"image\":\"busybox\"}]}}},{\"name\":\"b\","
                        "\"replicas\":2147483647,\"dependsOn\":{\"name\":[\"a\"]},"
                        "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
                        "\"busybox\"}]}}}]}}"),
               "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":1}");
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 1000);
  assert_non_null(fx_created_pod(&f, "huge-a-999"));
  assert_null(fx_created_pod(&f, "huge-b-0")); /* b waits for a */
  assert_true(f.plan.requeue_after > 0);
  /* Again with some of a's pods there: still 1,000 new ones, none of b's. */
  fx_pod(&f, "a", 0, CTL_POD_RUNNING);
  fx_pod(&f, "a", 5, CTL_POD_PENDING);
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 1000);
  assert_non_null(fx_created_pod(&f, "huge-a-1001"));
  assert_null(fx_created_pod(&f, "huge-a-1002"));
  fx_close(&f);
}

/* The quota usage Volcano sums per pod: requests and limits of every kind, sidecars and
 * init containers, overhead, hugepages and an extended resource. */
static void test_min_resources_quota_keys(void **state) {
  fx f;
  fx_init_json(
      &f,
      fx_parse(
          "{\"metadata\":{\"name\":\"q\",\"namespace\":\"default\",\"uid\":\"uid-q\"},"
          "\"spec\":{\"tasks\":[{\"name\":\"t\",\"replicas\":2,\"template\":{\"spec\":{"
          "\"overhead\":{\"cpu\":\"50m\",\"memory\":\"10Mi\"},"
          "\"initContainers\":["
          "{\"name\":\"side\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":"
          "\"100m\",\"memory\":\"128Mi\"},\"limits\":{\"memory\":\"256Mi\"}}},"
          "{\"name\":\"init\",\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"64Mi\"}}}],"
          "\"containers\":["
          "{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\","
          "\"ephemeral-storage\":\"1Gi\",\"nvidia.com/gpu\":\"1\",\"hugepages-2Mi\":\"4Mi\"},"
          "\"limits\":{\"cpu\":\"1\",\"memory\":\"2Gi\",\"nvidia.com/gpu\":\"1\"}}},"
          "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":0.25}}}]}}}]}}"),
      NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  /* Per pod: requests cpu max(500m+250m+100m sidecar, 2 init + 100m sidecar) + 50m overhead
   * = 2150m, memory max(1Gi+128Mi, 64Mi+128Mi) + 10Mi = 1162Mi; limits cpu 1 + 50m, memory
   * 2Gi + 256Mi sidecar + 10Mi. Two pods. */
  fx_expect_json(
      json_object_get(json_object_get(f.plan.podgroup, "spec"), "minResources"),
      "{\"count/pods\":\"2\",\"pods\":\"2\","
      "\"cpu\":\"4300m\",\"requests.cpu\":\"4300m\",\"limits.cpu\":\"2100m\","
      "\"memory\":\"2324Mi\",\"requests.memory\":\"2324Mi\",\"limits.memory\":\"4628Mi\","
      "\"ephemeral-storage\":\"2Gi\",\"requests.ephemeral-storage\":\"2Gi\","
      "\"hugepages-2Mi\":\"8Mi\",\"requests.hugepages-2Mi\":\"8Mi\","
      "\"nvidia.com/gpu\":\"2\",\"requests.nvidia.com/gpu\":\"2\"}");
  fx_close(&f);

  /* Pod-level requests win for cpu and memory; a container with limits only has no
   * requests (a template is not defaulted); minAvailable 0 asks for nothing. */
  fx_init_json(&f,
               fx_parse("{\"metadata\":{\"name\":\"q\",\"namespace\":\"default\",\"uid\":\"u\"},"
                        "\"spec\":{\"tasks\":[{\"name\":\"t\",\"replicas\":1,\"template\":{"
                        "\"spec\":{\"resources\":{\"requests\":{\"cpu\":\"3\"}},\"containers\":[{"
                        "\"name\":\"a\",\"resources\":{\"limits\":{\"memory\":\"1G\"}}}]}}}]}}"),
               NULL);
  assert_int_equal(fx_sync(&f, &req), 0);
  fx_expect_json(json_object_get(json_object_get(f.plan.podgroup, "spec"), "minResources"),
                 "{\"count/pods\":\"1\",\"pods\":\"1\",\"cpu\":\"3\",\"requests.cpu\":\"3\","
                 "\"limits.memory\":\"1G\"}");
  fx_close(&f);
  fx_init_json(&f,
               fx_parse("{\"metadata\":{\"name\":\"q\",\"namespace\":\"default\",\"uid\":\"u\"},"
                        "\"spec\":{\"minAvailable\":0,\"tasks\":[{\"name\":\"t\",\"replicas\":1,"
                        "\"minAvailable\":0,\"template\":{\"spec\":{\"containers\":[{\"name\":"
                        "\"a\"}]}}}]}}"),
               NULL);
  assert_int_equal(fx_sync(&f, &req), 0);
  fx_expect_json(json_object_get(json_object_get(f.plan.podgroup, "spec"), "minResources"), "{}");
  fx_close(&f);
}

/* The crash of issue 27: one task of 1,000 replicas asking for 1E of an extended resource.
 * The PodGroup's minResources sum past 10^18 units; it used to format with a suffix table
 * index past its end and kill the process. Now it is "1e21", as Kubernetes writes it. */
static void test_min_resources_past_exa(void **state) {
  fx f;
  fx_init_json(&f,
               fx_parse("{\"metadata\":{\"name\":\"x\",\"namespace\":\"default\",\"uid\":\"u\"},"
                        "\"spec\":{\"tasks\":[{\"name\":\"t\",\"replicas\":1000,\"template\":{"
                        "\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{"
                        "\"example.com/x\":\"1E\"},\"limits\":{\"example.com/x\":\"1E\"}}}]}}}]}}"),
               NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  fx_expect_json(json_object_get(json_object_get(f.plan.podgroup, "spec"), "minResources"),
                 "{\"count/pods\":\"1k\",\"pods\":\"1k\",\"requests.example.com/x\":\"1e21\","
                 "\"example.com/x\":\"1e21\"}");
  fx_close(&f);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Replicas as large as the schema allows (2^31-1, in two tasks): the sync's work is per task,
 * not per replica (it used to add a pod's request 2^31-1 times), the totals are exact or
 * saturated, never wrapped, and the counts over all tasks saturate at 2^31-1. */
static void test_replicas_schema_max(void **state) {
  fx f;
  fx_init_json(
      &f,
      fx_parse("{\"metadata\":{\"name\":\"x\",\"namespace\":\"default\",\"uid\":\"u\"},"
               "\"spec\":{\"tasks\":[{\"name\":\"a\",\"replicas\":2147483647,\"template\":{"
               "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{"
               "\"cpu\":\"1\",\"memory\":\"1Gi\",\"example.com/x\":\"1E\","
               "\"example.com/y\":\"1e29\"}}}]}}},"
               "{\"name\":\"b\",\"replicas\":2147483647,\"minAvailable\":0,\"template\":{"
               "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}]}}"),
      NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  double t0 = now_s();
  assert_int_equal(fx_sync(&f, &req), 0);
  double took = now_s() - t0;
  if (took > 1.0)
    fail_msg("sync took %.2f s", took);
  json_t *spec = json_object_get(f.plan.podgroup, "spec");
  assert_int_equal(json_integer_value(json_object_get(spec, "minMember")), INT32_MAX);
  fx_expect_json(json_object_get(spec, "minResources"),
                 "{\"count/pods\":\"2147483647\",\"pods\":\"2147483647\","
                 "\"cpu\":\"2147483647\",\"requests.cpu\":\"2147483647\","
                 "\"memory\":\"2147483647Gi\",\"requests.memory\":\"2147483647Gi\","
                 "\"requests.example.com/x\":\"2147483647E\",\"example.com/x\":\"2147483647E\","
                 "\"requests.example.com/y\":\"170141183460469231731687303715884105727e-9\","
                 "\"example.com/y\":\"170141183460469231731687303715884105727e-9\"}");
  assert_int_equal(f.plan.status.min_available, INT32_MAX);
  fx_close(&f);
}

/* A task with a partitionPolicy: minTaskMember minPartitions x partitionSize, one
 * subGroupPolicy, and the partition id on each of its pods. */
static void test_partition_podgroup_and_pods(void **state) {
  fx f;
  fx_init(&f, "job-partition.json", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  json_t *spec = json_object_get(f.plan.podgroup, "spec");
  assert_int_equal(json_integer_value(json_object_get(spec, "minMember")), 5);
  fx_expect_json(json_object_get(spec, "minTaskMember"), "{\"launcher\":1,\"worker\":4}");
  fx_expect_json(json_object_get(spec, "subGroupPolicy"),
                 "[{\"name\":\"worker\",\"subGroupSize\":2,\"minSubGroups\":2,"
                 "\"labelSelector\":{\"matchLabels\":{\"volcano.sh/task-spec\":\"worker\"}},"
                 "\"matchLabelKeys\":[\"volcano.sh/partition-id\"],"
                 "\"networkTopology\":{\"mode\":\"hard\",\"highestTierAllowed\":1}}]");
  fx_expect_json(json_object_get(spec, "minResources"),
                 "{\"count/pods\":\"5\",\"pods\":\"5\",\"cpu\":\"4250m\",\"requests.cpu\":"
                 "\"4250m\",\"limits.cpu\":\"8\",\"memory\":\"4Gi\",\"requests.memory\":\"4Gi\","
                 "\"limits.memory\":\"4Gi\"}");
  fx_close(&f);

  fx_init(&f, "job-partition.json", "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":5}");
  fx_pg(&f, "Inqueue", NULL);
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 7);
  static const char *const want[] = {"0", "0", "1", "1", "2", "2"};
  for (int i = 0; i < 6; i++) {
    char name[64];
    snprintf(name, sizeof(name), "part-worker-%d", i);
    json_t *pod = fx_created_pod(&f, name);
    assert_non_null(pod);
    assert_string_equal(fx_label(pod, "volcano.sh/partition-id"), want[i]);
    /* and the pod view reads it back */
    ctl_pod p;
    assert_int_equal(ctl_pod_from_json(pod, &p), 0);
    assert_true(p.has_partition);
    assert_int_equal(p.partition, i / 2);
  }
  assert_null(fx_label(fx_created_pod(&f, "part-launcher-0"), "volcano.sh/partition-id"));
  fx_close(&f);
}

static void partition_pods(fx *f, ctl_pod_phase failed3) {
  fx_pod(f, "launcher", 0, CTL_POD_RUNNING);
  for (int i = 0; i < 6; i++) {
    ctl_pod *p = fx_pod(f, "worker", i, i == 3 ? failed3 : CTL_POD_RUNNING);
    p->has_partition = true;
    p->partition = i / 2;
  }
}

/* PodFailed in a partition: only that partition's pods go, the PodGroup stays. */
static void test_restart_partition(void **state) {
  fx f;
  fx_init(&f, "job-partition.json",
          "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":5,\"version\":2}");
  fx_pg(&f, "Running", NULL);
  partition_pods(&f, CTL_POD_FAILED);
  ctl_request req = {.event = CTL_EV_POD_FAILED,
                     .task = "worker",
                     .pod = "part-worker-3",
                     .has_exit_code = true,
                     .exit_code = 1,
                     .has_job_version = true,
                     .job_version = 2};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(f.plan.action, CTL_ACT_RESTART_PARTITION);
  assert_int_equal(f.plan.npods_delete, 2);
  assert_true(fx_deleted(&f, "part-worker-2"));
  assert_true(fx_deleted(&f, "part-worker-3"));
  assert_int_equal(f.plan.status.phase, CTL_PHASE_RESTARTING);
  assert_int_equal(f.plan.status.retry_count, 1);
  assert_int_equal(f.plan.status.version, 2);
  assert_int_equal(f.plan.status.terminating, 2);
  assert_int_equal(f.plan.status.running, 5);
  assert_false(f.plan.podgroup_delete);
  assert_string_equal(fx_event(&f, "ExecuteAction")->message,
                      "Start to execute action RestartPartition ");
  /* the delayed actions of exactly those two pods are cancelled */
  assert_int_equal(f.plan.ncancels, 3); /* PodPending of the failed pod, then the partition */
  assert_string_equal(f.plan.cancels[1].name, "part-worker-2");
  assert_string_equal(f.plan.cancels[2].name, "part-worker-3");
  fx_close(&f);

  /* The failed pod already gone: its partition comes from its index (3 / 2 = 1). */
  fx_init(&f, "job-partition.json",
          "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":5,\"version\":2}");
  fx_pg(&f, "Running", NULL);
  partition_pods(&f, CTL_POD_FAILED);
  f.v.npods--;                                          /* drop worker-5 */
  memmove(&f.pods[4], &f.pods[5], 2 * sizeof(ctl_pod)); /* and worker-3 */
  f.v.npods--;
  ctl_request cmd = {.action = CTL_ACT_RESTART_PARTITION, .task = "worker", .pod = "part-worker-3"};
  assert_int_equal(fx_sync(&f, &cmd), 0);
  assert_int_equal(f.plan.npods_delete, 1);
  assert_true(fx_deleted(&f, "part-worker-2"));
  fx_close(&f);
}

/* Volcano's webhook names unnamed tasks default<i>; the controller does the same
 * everywhere: pod names, keys, minTaskMember, plugins, status and policies. */
static void test_unnamed_tasks(void **state) {
  fx f;
  fx_init(&f, "job-unnamed.json", "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":3}");
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(json_array_size(f.plan.pods_create), 3);
  json_t *pod = fx_created_pod(&f, "anon-default0-1");
  assert_non_null(pod);
  assert_non_null(fx_created_pod(&f, "anon-default0-0"));
  assert_non_null(fx_created_pod(&f, "anon-default1-0"));
  assert_string_equal(fx_label(pod, "volcano.sh/task-spec"), "default0");
  assert_string_equal(fx_ann(pod, "volcano.sh/task-spec"), "default0");
  assert_string_equal(fx_ann(pod, "volcano.sh/template-uid"), "anon-default0");
  assert_string_equal(jstr(pod, "spec.hostname"), "anon-default0-1");
  /* env plugin: the index of the pod in its task */
  json_t *env = json_object_get(
      json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0), "env");
  bool vk = false;
  size_t ei;
  json_t *ev;
  json_array_foreach(env, ei, ev) if (strcmp(jstr(ev, "name"), "VK_TASK_INDEX") == 0) {
    assert_string_equal(jstr(ev, "value"), "1");
    vk = true;
  }
  assert_true(vk);
  json_t *spec = json_object_get(f.plan.podgroup, "spec");
  fx_expect_json(json_object_get(spec, "minTaskMember"), "{\"default0\":2,\"default1\":1}");
  /* svc: the task's hosts under its name */
  size_t i;
  json_t *o, *cm = NULL;
  json_array_foreach(f.plan.objects_create, i, o) if (strcmp(jstr(o, "kind"), "ConfigMap") == 0)
      cm = o;
  assert_non_null(cm);
  json_t *data = json_object_get(cm, "data");
  assert_string_equal(json_string_value(json_object_get(data, "default0.host")),
                      "anon-default0-0.anon\nanon-default0-1.anon");
  assert_string_equal(json_string_value(json_object_get(data, "VC_DEFAULT1_NUM")), "1");
  /* the names go into the spec once, the rest of each task unchanged */
  json_t *jp = f.plan.job_patch;
  assert_non_null(jp);
  assert_string_equal(jstr(jp, "metadata.resourceVersion"), "41");
  json_t *tasks = json_object_get(json_object_get(jp, "spec"), "tasks");
  assert_int_equal(json_array_size(tasks), 2);
  fx_expect_json(json_array_get(tasks, 0),
                 "{\"name\":\"default0\",\"replicas\":2,\"template\":{\"spec\":{\"containers\":"
                 "[{\"name\":\"a\",\"image\":\"busybox:1.36\"}]}}}");
  fx_expect_json(json_array_get(tasks, 1),
                 "{\"name\":\"default1\",\"replicas\":1,\"minAvailable\":1,\"policies\":[{"
                 "\"event\":\"PodFailed\",\"action\":\"RestartTask\"}],\"template\":{\"spec\":{"
                 "\"containers\":[{\"name\":\"b\",\"image\":\"busybox:1.36\"}]}}}");
  /* status.taskStatusCount */
  assert_int_equal(f.plan.status.ntasks, 2);
  assert_string_equal(f.plan.status.tasks[0].name, "default0");
  assert_int_equal(f.plan.status.tasks[0].count[CTL_POD_PENDING], 2);
  fx_close(&f);

  /* A task policy of the second task matches requests from its pods. */
  fx_init(&f, "job-unnamed.json", "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":3}");
  fx_pg(&f, "Running", NULL);
  fx_pod(&f, "default0", 0, CTL_POD_RUNNING);
  fx_pod(&f, "default0", 1, CTL_POD_RUNNING);
  fx_pod(&f, "default1", 0, CTL_POD_FAILED);
  ctl_request failed = {.event = CTL_EV_POD_FAILED, .task = "default1", .pod = "anon-default1-0"};
  assert_int_equal(fx_sync(&f, &failed), 0);
  assert_int_equal(f.plan.action, CTL_ACT_RESTART_TASK);
  assert_int_equal(f.plan.npods_delete, 1);
  assert_true(fx_deleted(&f, "anon-default1-0"));
  fx_close(&f);

  /* Named tasks: no patch. */
  fx_init(&f, "job-single.json", "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1}");
  fx_pg(&f, "Running", NULL);
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_null(f.plan.job_patch);
  fx_close(&f);
}

/* Pods of a large template come fewer to a sync: 1,000 pods of ~4 KiB made kiln-controller's
 * loop run past 100 ms (the hostile campaign's batch 2). At most 1 MiB of template text is
 * built per sync, and the plan asks for the next sync at once. */
static void test_burst_bounded_by_template_size(void **state) {
  char big[4096];
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  char *text = NULL;
  assert_true(asprintf(&text,
                       "{\"metadata\":{\"name\":\"x\",\"namespace\":\"default\",\"uid\":\"u\"},"
                       "\"spec\":{\"minAvailable\":1,\"tasks\":[{\"name\":\"t\",\"replicas\":1000,"
                       "\"template\":{\"metadata\":{\"annotations\":{\"a\":\"%s\"}},\"spec\":{"
                       "\"containers\":[{\"name\":\"c\"}]}}}]}}",
                       big) > 0);
  fx f;
  fx_init_json(&f, fx_parse(text), "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":1}");
  free(text);
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  size_t n = json_array_size(f.plan.pods_create);
  /* (4095 + ~70 template bytes + 512 per pod) into 1 MiB: 224 pods. */
  assert_true(n >= 215 && n <= 230);
  assert_int_equal(f.plan.requeue_after, 1);
  assert_non_null(fx_created_pod(&f, "x-t-0"));
  assert_null(fx_created_pod(&f, "x-t-999"));
  fx_close(&f);
}

/* A pod of a task under a name no index gives (made by another hand, with the task's
 * annotation) is never met by the walk over the task's indexes: the walk stops past the burst
 * all the same and the pod is deleted as foreign, where it walked all 2^31-1 replicas looking
 * for it before (minutes on the loop; found by fuzz_jobsync). */
static void test_foreign_pod_name_bounded(void **state) {
  fx f;
  fx_init_json(&f,
               fx_parse("{\"metadata\":{\"name\":\"x\",\"namespace\":\"default\",\"uid\":"
                        "\"u\"},\"spec\":{\"minAvailable\":1,\"tasks\":[{\"name\":\"a\","
                        "\"replicas\":2147483647,\"template\":{\"spec\":{\"containers\":[{"
                        "\"name\":\"c\"}]}}}]}}"),
               "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1}");
  fx_pg(&f, "Running", NULL);
  ctl_pod *p = fx_pod(&f, "a", 0, CTL_POD_RUNNING);
  snprintf(p->name, sizeof(p->name), "x-a-00");
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  double t0 = now_s();
  assert_int_equal(fx_sync(&f, &req), 0);
  double took = now_s() - t0;
  if (took > 1.0)
    fail_msg("sync took %.2f s", took);
  assert_int_equal(json_array_size(f.plan.pods_create), 1000);
  assert_true(fx_deleted(&f, "x-a-00"));
  fx_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pod_from_template),
      cmocka_unit_test(test_no_pods_until_inqueue),
      cmocka_unit_test(test_admitted_unschedulable_event),
      cmocka_unit_test(test_scale_down_and_out_of_sync),
      cmocka_unit_test(test_status_counts),
      cmocka_unit_test(test_status_unchanged),
      cmocka_unit_test(test_min_available_default),
      cmocka_unit_test(test_podgroup),
      cmocka_unit_test(test_min_resources_by_priority),
      cmocka_unit_test(test_podgroup_update),
      cmocka_unit_test(test_min_resources_quota_keys),
      cmocka_unit_test(test_min_resources_past_exa),
      cmocka_unit_test(test_replicas_schema_max),
      cmocka_unit_test(test_foreign_pod_name_bounded),
      cmocka_unit_test(test_burst_bounded_by_template_size),
      cmocka_unit_test(test_burst_lowered_by_the_view),
      cmocka_unit_test(test_partition_podgroup_and_pods),
      cmocka_unit_test(test_restart_partition),
      cmocka_unit_test(test_unnamed_tasks),
      cmocka_unit_test(test_depends_on),
      cmocka_unit_test(test_pvc),
      cmocka_unit_test(test_pod_volumes),
      cmocka_unit_test(test_queue_checks),
      cmocka_unit_test(test_command),
      cmocka_unit_test(test_ttl_is_not_the_job_controllers),
      cmocka_unit_test(test_pod_from_json),
      cmocka_unit_test(test_large_job),
      cmocka_unit_test(test_replicas_at_the_schema_maximum),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
