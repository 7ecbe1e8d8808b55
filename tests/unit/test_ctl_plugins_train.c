/* The distributed-training job plugins (pytorch, tensorflow, mpi, ray, hcclrank): the env,
 * ports, commands, annotations and objects each gives a job's pods, per task and index, their
 * Go-flag arguments, and the svc/ssh plugins they imply. */
#include "test_ctl_util.h"

#include "plugins/ctl_plugin.h"

#define CT "{\"name\":\"%s\",\"image\":\"busybox:1.36\"}"

/* A task with one container named like the task (or cname). */
static char *task(const char *name, int replicas, const char *extra_spec) {
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  fprintf(f,
          "{\"name\":\"%s\",\"replicas\":%d,\"template\":{\"spec\":{%s%s\"containers\":[" CT "]}}}",
          name, replicas, extra_spec ? extra_spec : "", extra_spec ? "," : "", name);
  fclose(f);
  return out;
}

/* A Job named name with the plugins object (JSON text) and the tasks (stolen strings). */
static json_t *mkjob(const char *name, const char *plugins, char *t1, char *t2, char *t3) {
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  fprintf(f,
          "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
          "\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\",\"creationTimestamp\":"
          "\"2026-11-29T10:00:00Z\",\"resourceVersion\":\"7\"},\"spec\":{\"minAvailable\":1,"
          "\"plugins\":%s,\"tasks\":[%s%s%s%s%s]}}",
          name, name, plugins, t1, t2 ? "," : "", t2 ? t2 : "", t3 ? "," : "", t3 ? t3 : "");
  fclose(f);
  free(t1);
  free(t2);
  free(t3);
  json_t *j = fx_parse(out);
  free(out);
  return j;
}

/* Runs a sync of a Pending job whose PodGroup is Inqueue: plugins added, pods made. */
static void run(fx *f, json_t *job) {
  fx_init_json(f, job, "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":1}");
  fx_pg(f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(f, &req), 0);
}

static json_t *container(const fx *f, const char *pod, const char *list) {
  json_t *p = fx_created_pod(f, pod);
  if (!p)
    fail_msg("pod %s was not created", pod);
  return json_array_get(json_object_get(json_object_get(p, "spec"), list), 0);
}

static const char *env(json_t *ct, const char *name) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(ct, "env"), i, e) {
    if (strcmp(jstr(e, "name"), name) == 0)
      return jstr(e, "value") ? jstr(e, "value") : "";
  }
  return NULL;
}

static size_t env_count(json_t *ct, const char *name) {
  size_t i, n = 0;
  json_t *e;
  json_array_foreach(json_object_get(ct, "env"), i, e) n += strcmp(jstr(e, "name"), name) == 0;
  return n;
}

static json_t *find_kind(json_t *arr, const char *kind, const char *name) {
  size_t i;
  json_t *o;
  json_array_foreach(arr, i, o) {
    const char *n = jstr(o, "metadata.name") ? jstr(o, "metadata.name") : jstr(o, "name");
    if (strcmp(jstr(o, "kind"), kind) == 0 && (!name || strcmp(n, name) == 0))
      return o;
  }
  return NULL;
}

/* ---- Go flag parsing ---- */

typedef struct {
  const char *s;
  int64_t i;
  bool b;
} fl;

static const ctl_flag fdefs[] = {
    {"name", CTL_FLAG_STRING, offsetof(fl, s)},
    {"port", CTL_FLAG_INT, offsetof(fl, i)},
    {"on", CTL_FLAG_BOOL, offsetof(fl, b)},
};

static int parse(fl *out, const char **argv, size_t argc, char *err) {
  Kiln__StringList l = KILN__STRING_LIST__INIT;
  l.items = (char **)argv;
  l.n_items = argc;
  *out = (fl){"def", 7, false};
  return ctl__flags_parse("t", fdefs, 3, &l, out, err, 256);
}

static void test_flags(void **state) {
  fl v;
  char err[256];
  const char *a1[] = {"--name=x", "-port", "0x10", "--on"};
  assert_int_equal(parse(&v, a1, 4, err), 0);
  assert_string_equal(v.s, "x");
  assert_int_equal(v.i, 16);
  assert_true(v.b);
  /* a bool never takes the next argument; a non-flag ends the flags */
  const char *a2[] = {"--on", "false", "--port=9"};
  assert_int_equal(parse(&v, a2, 3, err), 0);
  assert_true(v.b);
  assert_int_equal(v.i, 7);
  /* "--" ends them too */
  const char *a3[] = {"--port=1", "--", "--port=2"};
  assert_int_equal(parse(&v, a3, 3, err), 0);
  assert_int_equal(v.i, 1);
  /* an undefined flag stops parsing: what came before stays */
  const char *a4[] = {"--port=3", "--master=m", "--name=late"};
  assert_int_equal(parse(&v, a4, 3, err), KC_EINVAL);
  assert_string_equal(err, "flag provided but not defined: -master");
  assert_int_equal(v.i, 3);
  assert_string_equal(v.s, "def");
  /* a bad number becomes 0 (Go's intValue.Set), a bad bool false */
  const char *a5[] = {"--port=abc"};
  assert_int_equal(parse(&v, a5, 1, err), KC_EINVAL);
  assert_string_equal(err, "invalid value \"abc\" for flag -port: parse error");
  assert_int_equal(v.i, 0);
  const char *a6[] = {"--on=yes"};
  assert_int_equal(parse(&v, a6, 1, err), KC_EINVAL);
  assert_false(v.b);
  const char *a7[] = {"--port"};
  assert_int_equal(parse(&v, a7, 1, err), KC_EINVAL);
  assert_string_equal(err, "flag needs an argument: -port");
  const char *a8[] = {"---port=1"};
  assert_int_equal(parse(&v, a8, 1, err), KC_EINVAL);
  assert_string_equal(err, "bad flag syntax: ---port=1");
  const char *a9[] = {"--port=-12", "--on=F", "--name="};
  assert_int_equal(parse(&v, a9, 3, err), 0);
  assert_int_equal(v.i, -12);
  assert_false(v.b);
  assert_string_equal(v.s, "");
  const char *a10[] = {"--port=99999999999999999999"};
  assert_int_equal(parse(&v, a10, 1, err), KC_EINVAL);
  assert_int_equal(v.i, INT64_MAX);
  const char *a11[] = {"--port=010", "-on=1"};
  assert_int_equal(parse(&v, a11, 2, err), 0);
  assert_int_equal(v.i, 8);
  assert_true(v.b);
}

/* ---- implied plugins ---- */

static void used(const char *plugins, const char *want) {
  json_t *j = mkjob("u", plugins, task("t", 1, NULL), NULL, NULL);
  fx f;
  fx_init_json(&f, j, NULL);
  ctl_plugin_use u[CTL_PLUGIN_USES_MAX];
  size_t n = ctl__plugins_used(f.job->spec, u, CTL_PLUGIN_USES_MAX);
  char got[256] = "";
  for (size_t i = 0; i < n; i++) {
    strncat(got, i ? "," : "", sizeof(got) - strlen(got) - 1);
    strncat(got, u[i].name, sizeof(got) - strlen(got) - 1);
    strncat(got, u[i].args ? "" : "*", sizeof(got) - strlen(got) - 1);
  }
  assert_string_equal(got, want);
  fx_close(&f);
}

static void test_implied(void **state) {
  used("{\"pytorch\":[]}", "pytorch,svc*");
  used("{\"tensorflow\":[]}", "tensorflow,svc*");
  used("{\"ray\":[]}", "ray,svc*");
  used("{\"mpi\":[]}", "mpi,svc*,ssh*");
  used("{\"mpi\":[],\"ssh\":[],\"svc\":[\"--disable-network-policy\"]}", "mpi,ssh,svc");
  used("{\"svc\":[],\"mpi\":[]}", "svc,mpi,ssh*");
  used("{\"env\":[],\"hcclrank\":[]}", "env,hcclrank");
}

/* ---- pytorch ---- */

static void test_pytorch(void **state) {
  fx f;
  run(&f, mkjob("pt", "{\"pytorch\":[\"--master=master\",\"--worker=worker\",\"--port=23456\"]}",
                task("master", 1, NULL), task("worker", 2, NULL), task("extra", 2, NULL)));
  json_t *m = container(&f, "pt-master-0", "containers");
  assert_string_equal(env(m, "MASTER_ADDR"), "pt-master-0.pt");
  assert_string_equal(env(m, "MASTER_PORT"), "23456");
  assert_string_equal(env(m, "WORLD_SIZE"), "3"); /* master + workers, not extra */
  assert_string_equal(env(m, "RANK"), "0");
  fx_expect_json(json_object_get(m, "ports"),
                 "[{\"name\":\"pytorchjob-port\",\"containerPort\":23456}]");
  for (int i = 0; i < 2; i++) {
    char pod[32], want[8];
    snprintf(pod, sizeof(pod), "pt-worker-%d", i);
    snprintf(want, sizeof(want), "%d", i + 1);
    json_t *w = container(&f, pod, "containers");
    assert_string_equal(env(w, "RANK"), want);
    assert_string_equal(env(w, "MASTER_ADDR"), "pt-master-0.pt");
    assert_string_equal(env(w, "WORLD_SIZE"), "3");
    assert_int_equal(env_count(w, "RANK"), 1);
  }
  /* a task that is neither master nor worker: the master's address, no rank */
  json_t *x = container(&f, "pt-extra-1", "containers");
  assert_string_equal(env(x, "MASTER_ADDR"), "pt-master-0.pt");
  assert_null(env(x, "RANK"));
  /* svc is implied: its host lists and objects are there too */
  assert_non_null(env(m, "VC_WORKER_HOSTS"));
  assert_non_null(find_kind(f.plan.objects_create, "Service", "pt"));
  assert_non_null(find_kind(f.plan.objects_create, "ConfigMap", "pt-svc"));
  assert_string_equal(jstr(fx_created_pod(&f, "pt-worker-1"), "spec.subdomain"), "pt");
  json_t *ctl = f.plan.status.controlled;
  assert_string_equal(json_string_value(json_object_get(ctl, "plugin-pytorch")), "pytorch");
  assert_string_equal(json_string_value(json_object_get(ctl, "plugin-svc")), "svc");
  assert_null(json_object_get(json_object_get(fx_created_pod(&f, "pt-worker-0"), "spec"),
                              "initContainers"));
  fx_close(&f);
}

static void test_pytorch_args(void **state) {
  fx f;
  /* a port the template already opens is not added twice; hostname/subdomain of the master
   * template make its address */
  run(&f, mkjob("pa",
                "{\"pytorch\":[\"--master=lead\",\"--worker=follow\",\"--port=5000\","
                "\"--wait-master-enabled\",\"--wait-master-timeout=600\"],\"svc\":[]}",
                task("lead", 1, "\"hostname\":\"boss\",\"subdomain\":\"grp\""),
                task("follow", 1, NULL), NULL));
  json_t *m = container(&f, "pa-lead-0", "containers");
  assert_string_equal(env(m, "MASTER_ADDR"), "boss.grp");
  assert_string_equal(env(m, "MASTER_PORT"), "5000");
  assert_string_equal(env(m, "WORLD_SIZE"), "2");
  json_t *w = container(&f, "pa-follow-0", "containers");
  assert_string_equal(env(w, "RANK"), "1");
  /* only the worker waits for the master */
  assert_null(container(&f, "pa-lead-0", "initContainers"));
  json_t *ic = container(&f, "pa-follow-0", "initContainers");
  assert_string_equal(jstr(ic, "name"), "wait-for-master");
  assert_string_equal(jstr(ic, "image"), "busybox:1.36.1");
  json_t *cmd = json_object_get(ic, "command");
  assert_string_equal(json_string_value(json_array_get(cmd, 0)), "sh");
  assert_string_equal(json_string_value(json_array_get(cmd, 1)), "-c");
  const char *script = json_string_value(json_array_get(cmd, 2));
  assert_non_null(strstr(script, "host=boss.grp; port=5000; timeout=600;"));
  assert_non_null(strstr(script, "nc -z"));
  fx_close(&f);

  /* a template port of the same number stays alone */
  json_t *j = mkjob("pb", "{\"pytorch\":[\"--port=5000\"]}", task("master", 1, NULL),
                    task("worker", 1, NULL), NULL);
  json_t *ct = json_array_get(
      json_object_get(
          json_object_get(
              json_object_get(
                  json_array_get(json_object_get(json_object_get(j, "spec"), "tasks"), 0),
                  "template"),
              "spec"),
          "containers"),
      0);
  json_object_set_new(ct, "ports", fx_parse("[{\"name\":\"mine\",\"containerPort\":5000}]"));
  run(&f, j);
  fx_expect_json(json_object_get(container(&f, "pb-master-0", "containers"), "ports"),
                 "[{\"name\":\"mine\",\"containerPort\":5000}]");
  fx_close(&f);

  /* no master task: the pods are left alone */
  run(&f, mkjob("pn", "{\"pytorch\":[]}", task("worker", 2, NULL), NULL, NULL));
  json_t *n = container(&f, "pn-worker-1", "containers");
  assert_null(env(n, "MASTER_ADDR"));
  assert_null(json_object_get(n, "ports"));
  fx_close(&f);
}

/* ---- tensorflow ---- */

static void test_tensorflow(void **state) {
  fx f;
  run(&f, mkjob("tf", "{\"tensorflow\":[\"--ps=ps\",\"--worker=worker\",\"--port=2222\"]}",
                task("ps", 1, NULL), task("worker", 2, NULL), task("chief", 1, NULL)));
  assert_string_equal(
      env(container(&f, "tf-worker-1", "containers"), "TF_CONFIG"),
      "{\"cluster\":{\"ps\":[\"tf-ps-0.tf:2222\"],\"worker\":[\"tf-worker-0.tf:2222\","
      "\"tf-worker-1.tf:2222\"],\"chief\":[\"tf-chief-0.tf:2222\"]},\"task\":{\"type\":"
      "\"worker\",\"index\":1}}");
  assert_string_equal(
      env(container(&f, "tf-ps-0", "containers"), "TF_CONFIG"),
      "{\"cluster\":{\"ps\":[\"tf-ps-0.tf:2222\"],\"worker\":[\"tf-worker-0.tf:2222\","
      "\"tf-worker-1.tf:2222\"],\"chief\":[\"tf-chief-0.tf:2222\"]},\"task\":{\"type\":\"ps\","
      "\"index\":0}}");
  /* no container ports: TensorFlow's plugin opens none */
  assert_null(json_object_get(container(&f, "tf-ps-0", "containers"), "ports"));
  assert_string_equal(
      json_string_value(json_object_get(f.plan.status.controlled, "plugin-tensorflow")),
      "tensorflow");
  fx_close(&f);

  /* renamed roles and port; a task outside the roles is its own type and not in the cluster */
  run(&f, mkjob("tg", "{\"tensorflow\":[\"--ps=param\",\"--worker=trainer\",\"--port=3333\"]}",
                task("param", 2, NULL), task("trainer", 1, NULL), task("board", 1, NULL)));
  assert_string_equal(env(container(&f, "tg-board-0", "containers"), "TF_CONFIG"),
                      "{\"cluster\":{\"ps\":[\"tg-param-0.tg:3333\",\"tg-param-1.tg:3333\"],"
                      "\"worker\":[\"tg-trainer-0.tg:3333\"]},\"task\":{\"type\":\"board\","
                      "\"index\":0}}");
  fx_close(&f);

  /* one name for two roles: the cluster takes it as ps (Go's switch order there), the task
   * type says worker (the order of Volcano's getTaskType) */
  run(&f, mkjob("td", "{\"tensorflow\":[\"--ps=worker\"]}", task("worker", 2, NULL), NULL, NULL));
  assert_string_equal(env(container(&f, "td-worker-0", "containers"), "TF_CONFIG"),
                      "{\"cluster\":{\"ps\":[\"td-worker-0.td:2222\",\"td-worker-1.td:2222\"]},"
                      "\"task\":{\"type\":\"worker\",\"index\":0}}");
  fx_close(&f);

  /* A cluster past what TF_CONFIG may hold fails the pods' creation with a message, at once:
   * before, every pod of the sync built the whole list (6,000 hosts in each of 1,000 pods; and
   * the svc plugin's own bound is larger, 1 MiB). */
  fx_init_json(
      &f, mkjob("tb", "{\"tensorflow\":[]}", task("ps", 1, NULL), task("worker", 6000, NULL), NULL),
      "{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":1}");
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), KC_ETOOBIG);
  /* the shell reports the plan's failure as a Warning event and retries with backoff */
  assert_string_equal(f.plan.failure_reason, "FailedCreate");
  assert_non_null(strstr(f.plan.failure_message, "does not fit in TF_CONFIG"));
  fx_close(&f);
  /* Just under the bound it is built, once for the sync, the same text in every pod. */
  run(&f, mkjob("tc", "{\"tensorflow\":[]}", task("ps", 1, NULL), task("worker", 900, NULL), NULL));
  const char *w0 = env(container(&f, "tc-worker-0", "containers"), "TF_CONFIG");
  const char *w899 = env(container(&f, "tc-worker-899", "containers"), "TF_CONFIG");
  assert_true(strlen(w0) > 20000);
  assert_int_equal(strncmp(w0, w899, strlen(w0) - 20), 0);
  assert_non_null(strstr(w899, "\"task\":{\"type\":\"worker\",\"index\":899}}"));
  fx_close(&f);

  /* stand-alone: one task, one replica, no TF_CONFIG */
  run(&f, mkjob("ts", "{\"tensorflow\":[]}", task("worker", 1, NULL), NULL, NULL));
  assert_null(env(container(&f, "ts-worker-0", "containers"), "TF_CONFIG"));
  fx_close(&f);
}

/* ---- mpi ---- */

static void test_mpi(void **state) {
  fx f;
  json_t *j = mkjob("mp", "{\"mpi\":[\"--master=mpimaster\",\"--worker=mpiworker\"]}",
                    task("mpimaster", 1, "\"initContainers\":[{\"name\":\"i\",\"image\":\"b\"}]"),
                    task("mpiworker", 2, NULL), NULL);
  run(&f, j);
  json_t *m = container(&f, "mp-mpimaster-0", "containers");
  assert_string_equal(env(m, "MPI_HOST"), "mp-mpiworker-0.mp,mp-mpiworker-1.mp");
  fx_expect_json(json_object_get(m, "ports"), "[{\"name\":\"mpijob-port\",\"containerPort\":22}]");
  json_t *mi = container(&f, "mp-mpimaster-0", "initContainers");
  assert_string_equal(env(mi, "MPI_HOST"), "mp-mpiworker-0.mp,mp-mpiworker-1.mp");
  fx_expect_json(json_object_get(mi, "ports"), "[{\"name\":\"mpijob-port\",\"containerPort\":22}]");
  json_t *w = container(&f, "mp-mpiworker-1", "containers");
  assert_null(env(w, "MPI_HOST"));
  fx_expect_json(json_object_get(w, "ports"), "[{\"name\":\"mpijob-port\",\"containerPort\":22}]");
  /* svc and ssh are implied: the host ConfigMap and the key Secret, mounted */
  assert_non_null(find_kind(f.plan.objects_create, "Secret", "mp-ssh"));
  assert_non_null(find_kind(f.plan.objects_create, "ConfigMap", "mp-svc"));
  json_t *ctl = f.plan.status.controlled;
  assert_string_equal(json_string_value(json_object_get(ctl, "plugin-mpi")), "mpi");
  assert_string_equal(json_string_value(json_object_get(ctl, "plugin-ssh")), "ssh");
  fx_close(&f);

  /* named explicitly (Volcano's example): each object once; a fixed worker hostname is one
   * host; the template's port 22 is not doubled */
  j = mkjob("mq", "{\"mpi\":[\"--port=22\"],\"ssh\":[],\"svc\":[]}", task("master", 1, NULL),
            task("worker", 3, "\"hostname\":\"w\""), NULL);
  run(&f, j);
  assert_int_equal(json_array_size(f.plan.objects_create), 4); /* CM, Service, NP, Secret */
  assert_string_equal(env(container(&f, "mq-master-0", "containers"), "MPI_HOST"), "w.mq");
  fx_close(&f);

  /* no worker task: no host list (Volcano would crash here), ports still opened */
  run(&f, mkjob("mr", "{\"mpi\":[\"--port=2222\"]}", task("master", 1, NULL), NULL, NULL));
  json_t *r = container(&f, "mr-master-0", "containers");
  assert_null(env(r, "MPI_HOST"));
  fx_expect_json(json_object_get(r, "ports"),
                 "[{\"name\":\"mpijob-port\",\"containerPort\":2222}]");
  fx_close(&f);
}

/* ---- ray ---- */

static void test_ray(void **state) {
  fx f;
  run(&f, mkjob("ry", "{\"ray\":[\"--head=head\",\"--worker=worker\"]}", task("head", 1, NULL),
                task("worker", 2, NULL), NULL));
  json_t *svc = find_kind(f.plan.objects_create, "Service", "ry-head-svc");
  assert_non_null(svc);
  fx_expect_json(json_object_get(svc, "spec"),
                 "{\"selector\":{\"volcano.sh/job-name\":\"ry\",\"volcano.sh/job-namespace\":"
                 "\"ns\",\"volcano.sh/task-spec\":\"head\"},\"ports\":["
                 "{\"name\":\"gcs\",\"port\":6379,\"targetPort\":\"gcs\",\"protocol\":\"TCP\"},"
                 "{\"name\":\"dashboard\",\"port\":8265,\"targetPort\":\"dashboard\","
                 "\"protocol\":\"TCP\"},{\"name\":\"client-server\",\"port\":10001,\"targetPort\":"
                 "\"client-server\",\"protocol\":\"TCP\"}]}");
  assert_string_equal(
      jstr(json_array_get(json_object_get(json_object_get(svc, "metadata"), "ownerReferences"), 0),
           "uid"),
      "uid-ry");
  /* the headless svc Service is implied alongside */
  assert_non_null(find_kind(f.plan.objects_create, "Service", "ry"));
  json_t *h = container(&f, "ry-head-0", "containers");
  fx_expect_json(json_object_get(h, "ports"),
                 "[{\"name\":\"gcs\",\"containerPort\":6379},{\"name\":\"dashboard\","
                 "\"containerPort\":8265},{\"name\":\"client-server\",\"containerPort\":10001}]");
  fx_expect_json(json_object_get(h, "command"),
                 "[\"sh\",\"-c\",\"ray start --head --block --dashboard-host=0.0.0.0 --port=6379 "
                 "--dashboard-port=8265 --ray-client-server-port=10001\"]");
  json_t *w = container(&f, "ry-worker-1", "containers");
  fx_expect_json(json_object_get(w, "command"),
                 "[\"sh\",\"-c\",\"ray start --block --address=ry-head-0.ry:6379\"]");
  assert_null(json_object_get(w, "ports"));
  fx_close(&f);

  /* restart: the head Service goes with the svc objects, the marker is forgotten */
  fx_init_json(&f,
               mkjob("ry", "{\"ray\":[]}", task("head", 1, NULL), task("worker", 1, NULL), NULL),
               "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1,\"controlledResources\":{"
               "\"plugin-ray\":\"ray\",\"plugin-svc\":\"svc\"}}");
  fx_pg(&f, "Running", NULL);
  assert_int_equal(fx_sync_action(&f, CTL_ACT_RESTART_JOB), 0);
  assert_non_null(find_kind(f.plan.objects_delete, "Service", "ry-head-svc"));
  assert_non_null(find_kind(f.plan.objects_delete, "Service", "ry"));
  assert_null(json_object_get(f.plan.status.controlled, "plugin-ray"));
  fx_close(&f);

  /* a container not named like the role is left alone; no head task fails the pod */
  run(&f, mkjob("rz", "{\"ray\":[\"--headContainer=main\",\"--port=7000\"]}", task("head", 1, NULL),
                task("worker", 1, NULL), NULL));
  assert_null(json_object_get(container(&f, "rz-head-0", "containers"), "command"));
  fx_expect_json(json_object_get(container(&f, "rz-worker-0", "containers"), "command"),
                 "[\"sh\",\"-c\",\"ray start --block --address=rz-head-0.rz:7000\"]");
  fx_close(&f);
  fx_init_json(&f, mkjob("rh", "{\"ray\":[]}", task("worker", 1, NULL), NULL, NULL),
               "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1}");
  fx_pg(&f, "Inqueue", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), KC_EINVAL); /* the plugin's error, not out of memory */
  fx_close(&f);
}

/* ---- hcclrank ---- */

static void test_hcclrank(void **state) {
  fx f;
  run(&f, mkjob("hc", "{\"hcclrank\":[]}", task("master", 2, NULL), task("worker", 2, NULL),
                task("other", 1, NULL)));
  assert_string_equal(fx_ann(fx_created_pod(&f, "hc-master-1"), "hccl/rankIndex"), "1");
  assert_string_equal(fx_ann(fx_created_pod(&f, "hc-worker-0"), "hccl/rankIndex"), "2");
  assert_string_equal(fx_ann(fx_created_pod(&f, "hc-worker-1"), "hccl/rankIndex"), "3");
  assert_null(fx_ann(fx_created_pod(&f, "hc-other-0"), "hccl/rankIndex"));
  /* nothing recorded for the job */
  assert_null(json_object_get(f.plan.status.controlled, "plugin-hcclrank"));
  fx_close(&f);

  /* after pytorch, the RANK it gave wins; a template's own annotation is kept */
  json_t *j = mkjob("hp", "{\"pytorch\":[],\"hcclrank\":[\"--master=master\"]}",
                    task("master", 1, NULL), task("worker", 2, NULL), NULL);
  json_t *t1 = json_object_get(
      json_array_get(json_object_get(json_object_get(j, "spec"), "tasks"), 1), "template");
  json_object_set_new(t1, "metadata", fx_parse("{\"annotations\":{\"hccl/rankIndex\":\"9\"}}"));
  run(&f, j);
  assert_string_equal(fx_ann(fx_created_pod(&f, "hp-master-0"), "hccl/rankIndex"), "0");
  assert_string_equal(fx_ann(fx_created_pod(&f, "hp-worker-1"), "hccl/rankIndex"), "9");
  fx_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flags),      cmocka_unit_test(test_implied),
      cmocka_unit_test(test_pytorch),    cmocka_unit_test(test_pytorch_args),
      cmocka_unit_test(test_tensorflow), cmocka_unit_test(test_mpi),
      cmocka_unit_test(test_ray),        cmocka_unit_test(test_hcclrank),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
