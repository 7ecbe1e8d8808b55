/* vcctl's pure parts: command lines (vc_args.c), the objects it writes (vc_objects.c) and
 * what it prints (vc_print.c, vc_view.c), against Volcano's words and columns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "kc_error.h"
#include "vc.h"

/* ---- helpers ---- */

static const char *env_vals[8][2];
static const char *fake_env(const char *name) {
  for (int i = 0; i < 8 && env_vals[i][0]; i++)
    if (strcmp(env_vals[i][0], name) == 0)
      return env_vals[i][1];
  return NULL;
}

/* Parses a space-separated command line (no quoting). */
static int parse(const char *line, vc_args *a, char *err, size_t errlen) {
  static char buf[512];
  static char *argv[32];
  snprintf(buf, sizeof(buf), "%s", line);
  int argc = 0;
  for (char *p = buf; *p && argc < 31;) {
    argv[argc++] = p;
    p += strcspn(p, " ");
    if (*p)
      *p++ = '\0';
  }
  argv[argc] = NULL;
  return vc_args_parse(argc, argv, fake_env, a, err, errlen);
}

static json_t *load(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  if (j == NULL)
    fail_msg("bad fixture: %s at %d", e.text, e.line);
  return j;
}

/* Captures what fn prints. */
#define CAPTURE(buf, call)                                                                         \
  do {                                                                                             \
    size_t len_;                                                                                   \
    FILE *out = open_memstream(&(buf), &len_);                                                     \
    call;                                                                                          \
    fclose(out);                                                                                   \
  } while (0)

/* ---- arguments ---- */

static void test_job_run_flags_and_defaults(void **state) {
  vc_args a;
  char err[256];
  assert_int_equal(parse("vcctl job run -N j1", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_RUN);
  assert_string_equal(a.what, "run job");
  assert_string_equal(a.name, "j1");
  assert_string_equal(a.namespace, "default");
  assert_string_equal(a.image, "busybox");
  assert_string_equal(a.scheduler, "volcano");
  assert_string_equal(a.requests, "cpu=1000m,memory=100Mi");
  assert_int_equal(a.min, 1);
  assert_int_equal(a.replicas, 1);
  assert_int_equal(parse("vcctl job run --name=j2 -n ns -m 2 -r 3 -i img -S kiln -R cpu=1 "
                         "--limits cpu=2 -f j.yaml -k /kc -s https://h:6443",
                         &a, err, sizeof(err)),
                   0);
  assert_string_equal(a.name, "j2");
  assert_string_equal(a.namespace, "ns");
  assert_int_equal(a.min, 2);
  assert_int_equal(a.replicas, 3);
  assert_string_equal(a.image, "img");
  assert_string_equal(a.scheduler, "kiln");
  assert_string_equal(a.requests, "cpu=1");
  assert_string_equal(a.limits, "cpu=2");
  assert_string_equal(a.filename, "j.yaml");
  assert_string_equal(a.kubeconfig, "/kc");
  assert_string_equal(a.master, "https://h:6443");
}

static void test_job_list_and_view_flags(void **state) {
  vc_args a;
  char err[256];
  assert_int_equal(
      parse("vcctl job list --all-namespaces -q q1 -S volcano --selector ab", &a, err, sizeof(err)),
      0);
  assert_int_equal(a.verb, VC_JOB_LIST);
  assert_true(a.all_namespaces);
  assert_string_equal(a.queue, "q1");
  assert_string_equal(a.scheduler, "volcano");
  assert_string_equal(a.selector, "ab");
  assert_int_equal(parse("vcctl job view -n ns -N j", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_VIEW);
  assert_string_equal(a.what, "view job");
  assert_false(a.list_if_no_name);
  for (const char *const *w = (const char *const[]){"suspend", "resume", "delete", NULL}; *w; w++) {
    char line[64];
    snprintf(line, sizeof(line), "vcctl job %s -N j -n ns", *w);
    assert_int_equal(parse(line, &a, err, sizeof(err)), 0);
    assert_string_equal(a.name, "j");
    assert_string_equal(a.namespace, "ns");
  }
}

static void test_queue_and_pod_flags(void **state) {
  vc_args a;
  char err[256];
  assert_int_equal(parse("vcctl queue create", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_QUEUE_CREATE);
  assert_string_equal(a.name, "test");
  assert_int_equal(a.weight, 1);
  assert_string_equal(a.state, "Open");
  assert_int_equal(parse("vcctl queue operate -n q -a close -w 3", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_QUEUE_OPERATE);
  assert_string_equal(a.what, "operate queue");
  assert_string_equal(a.action, "close");
  assert_int_equal(a.weight, 3);
  assert_int_equal(parse("vcctl queue operate -n q", &a, err, sizeof(err)), 0);
  assert_int_equal(a.weight, 0);
  assert_int_equal(parse("vcctl pod list -j j -q q --all-namespaces", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_POD_LIST);
  assert_string_equal(a.job, "j");
  assert_string_equal(a.queue, "q");
  assert_true(a.all_namespaces);
  assert_int_equal(parse("vcctl queue get -n q", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_QUEUE_GET);
  assert_int_equal(parse("vcctl queue list", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_QUEUE_LIST);
}

/* The shortcuts swap the letters: -N is the namespace, -n the name. */
static void test_shortcuts_by_program_name(void **state) {
  vc_args a;
  char err[256];
  assert_int_equal(parse("/usr/bin/vsuspend -N ns -n j", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_SUSPEND);
  assert_string_equal(a.what, "");
  assert_string_equal(a.namespace, "ns");
  assert_string_equal(a.name, "j");
  assert_int_equal(parse("vresume -n j", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_RESUME);
  assert_string_equal(a.namespace, "default");
  assert_int_equal(parse("vcancel -n j", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_DELETE);
  assert_int_equal(parse("vjobs", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_VIEW);
  assert_true(a.list_if_no_name);
  assert_int_equal(parse("vqueues -n q", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_QUEUE_GET);
  assert_true(a.list_if_no_name);
  /* vsub: defaults from VOLCANO_* first, then Volcano's. */
  memset(env_vals, 0, sizeof(env_vals));
  assert_int_equal(parse("vsub -n j -c sleep", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_RUN);
  assert_string_equal(a.image, "busybox");
  assert_string_equal(a.scheduler, "volcano");
  assert_string_equal(a.namespace, "default");
  assert_string_equal(a.command, "sleep");
  env_vals[0][0] = "VOLCANO_DEFAULT_IMAGE", env_vals[0][1] = "alpine";
  env_vals[1][0] = "VOLCANO_SCHEDULER_NAME", env_vals[1][1] = "kiln";
  env_vals[2][0] = "VOLCANO_DEFAULT_JOB_NAMESPACE", env_vals[2][1] = "team";
  assert_int_equal(parse("vsub -n j", &a, err, sizeof(err)), 0);
  assert_string_equal(a.image, "alpine");
  assert_string_equal(a.scheduler, "kiln");
  assert_string_equal(a.namespace, "team");
  assert_int_equal(parse("vsub -n j -N mine -i x", &a, err, sizeof(err)), 0);
  assert_string_equal(a.namespace, "mine");
  assert_string_equal(a.image, "x");
  memset(env_vals, 0, sizeof(env_vals));
  /* The kubectl plugin is vcctl. */
  assert_int_equal(parse("/home/u/bin/kubectl-vcctl job list", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_JOB_LIST);
}

static void test_help_and_bad_lines(void **state) {
  vc_args a;
  char err[256];
  assert_int_equal(parse("vcctl", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_HELP);
  assert_int_equal(parse("vcctl job", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_HELP);
  assert_string_equal(a.what, "job");
  assert_int_equal(parse("vcctl job run --help", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_HELP);
  assert_int_equal(parse("vcctl version", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_VERSION);
  assert_int_equal(parse("vcctl jobs list", &a, err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "unknown command \"jobs\" for \"vcctl\"");
  assert_int_equal(parse("vcctl job start", &a, err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "unknown command \"start\" for \"vcctl job\"");
  assert_int_equal(parse("vcctl job view myjob", &a, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "unexpected argument \"myjob\""));
  assert_int_equal(parse("vcctl job list --bogus", &a, err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "unknown flag: --bogus");
  assert_int_equal(parse("vcctl job run -N j -m many", &a, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "\"many\""));
  /* vsub has no -f and vcctl job run no -c. */
  assert_int_equal(parse("vsub -n j -f x.yaml", &a, err, sizeof(err)), KC_EINVAL);
  assert_int_equal(parse("vcctl job run -N j -c ls", &a, err, sizeof(err)), KC_EINVAL);
  char *text = NULL;
  assert_int_equal(parse("vcctl queue operate -h", &a, err, sizeof(err)), 0);
  CAPTURE(text, vc_usage(out, "vcctl", &a));
  assert_non_null(strstr(text, "vcctl queue operate [flags]"));
  assert_non_null(strstr(text, "-a, --action string"));
  free(text);
}

/* ---- objects ---- */

static void test_resource_list(void **state) {
  json_t *r;
  char err[256];
  assert_int_equal(
      vc_resource_list("cpu=1000m,memory=100Mi,nvidia.com/gpu=1", &r, err, sizeof(err)), 0);
  assert_string_equal(json_string_value(json_object_get(r, "cpu")), "1000m");
  assert_string_equal(json_string_value(json_object_get(r, "memory")), "100Mi");
  assert_string_equal(json_string_value(json_object_get(r, "nvidia.com/gpu")), "1");
  json_decref(r);
  assert_int_equal(vc_resource_list("", &r, err, sizeof(err)), 0);
  assert_null(r);
  assert_int_equal(vc_resource_list("cpu", &r, err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "invalid argument syntax cpu, expected <resource>=<value>");
  assert_int_equal(vc_resource_list("cpu=1,memory=a=b", &r, err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "invalid argument syntax memory=a=b, expected <resource>=<value>");
  assert_int_equal(vc_resource_list("cpu=lots", &r, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "quantities must match the regular expression"));
}

static void test_shlex(void **state) {
  json_t *w;
  char err[128];
  assert_int_equal(vc_shlex("sh -c 'echo a  b' \"x \\\"y\\\"\" c\\ d", &w, err, sizeof(err)), 0);
  assert_int_equal(json_array_size(w), 5);
  assert_string_equal(json_string_value(json_array_get(w, 0)), "sh");
  assert_string_equal(json_string_value(json_array_get(w, 2)), "echo a  b");
  assert_string_equal(json_string_value(json_array_get(w, 3)), "x \"y\"");
  assert_string_equal(json_string_value(json_array_get(w, 4)), "c d");
  json_decref(w);
  assert_int_equal(vc_shlex("echo 'open", &w, err, sizeof(err)), KC_EINVAL);
  assert_int_equal(vc_shlex("   ", &w, err, sizeof(err)), 0);
  assert_int_equal(json_array_size(w), 0);
  json_decref(w);
}

static void test_job_from_flags(void **state) {
  vc_args a;
  char err[256];
  json_t *job;
  assert_int_equal(
      parse("vsub -n j1 -N ns -m 2 -r 3 -R cpu=500m -L cpu=1 -c sleep_10", &a, err, sizeof(err)),
      0);
  assert_int_equal(vc_job_from_flags(&a, &job, err, sizeof(err)), 0);
  assert_string_equal(vc_str(job, "apiVersion"), "batch.volcano.sh/v1alpha1");
  assert_string_equal(vc_str(job, "kind"), "Job");
  assert_string_equal(vc_str(job, "metadata.name"), "j1");
  assert_string_equal(vc_str(job, "metadata.namespace"), "ns");
  assert_int_equal(vc_num(job, "spec.minAvailable"), 2);
  assert_string_equal(vc_str(job, "spec.schedulerName"), "volcano");
  json_t *task = json_array_get(vc_at(job, "spec.tasks"), 0);
  assert_int_equal(vc_num(task, "replicas"), 3);
  assert_string_equal(vc_str(task, "template.spec.restartPolicy"), "Never");
  assert_string_equal(
      json_string_value(json_object_get(vc_at(task, "template.metadata.labels"), "job.volcano.sh")),
      "j1");
  json_t *c = json_array_get(vc_at(task, "template.spec.containers"), 0);
  assert_string_equal(vc_str(c, "name"), "j1");
  assert_string_equal(vc_str(c, "image"), "busybox");
  assert_string_equal(vc_str(c, "imagePullPolicy"), "IfNotPresent");
  assert_string_equal(vc_str(c, "resources.requests.cpu"), "500m");
  assert_string_equal(vc_str(c, "resources.limits.cpu"), "1");
  assert_string_equal(json_string_value(json_array_get(json_object_get(c, "command"), 0)),
                      "sleep_10");
  json_decref(job);
  /* A bad request list stops the build with Volcano's message. */
  assert_int_equal(parse("vcctl job run -N j -R cpu", &a, err, sizeof(err)), 0);
  assert_int_equal(vc_job_from_flags(&a, &job, err, sizeof(err)), KC_EINVAL);
  assert_null(job);
}

static void test_command_for(void **state) {
  json_t *job = load("{\"metadata\":{\"name\":\"j1\",\"namespace\":\"ns\",\"uid\":\"u-1\"}}");
  json_t *cmd;
  assert_int_equal(vc_command_for(job, "batch.volcano.sh/v1alpha1", "Job", "ns", "AbortJob", &cmd),
                   0);
  assert_string_equal(vc_str(cmd, "apiVersion"), "bus.volcano.sh/v1alpha1");
  assert_string_equal(vc_str(cmd, "kind"), "Command");
  assert_string_equal(vc_str(cmd, "metadata.generateName"), "j1-abortjob-");
  assert_string_equal(vc_str(cmd, "metadata.namespace"), "ns");
  assert_string_equal(vc_str(cmd, "action"), "AbortJob");
  json_t *ref = json_array_get(vc_at(cmd, "metadata.ownerReferences"), 0);
  assert_string_equal(vc_str(ref, "kind"), "Job");
  assert_string_equal(vc_str(ref, "uid"), "u-1");
  assert_true(json_is_true(json_object_get(ref, "controller")));
  assert_true(json_is_true(json_object_get(ref, "blockOwnerDeletion")));
  assert_true(json_equal(ref, json_object_get(cmd, "target")));
  json_decref(cmd);
  json_decref(job);
  json_t *q = load("{\"metadata\":{\"name\":\"q1\",\"uid\":\"u-2\"}}");
  assert_int_equal(
      vc_command_for(q, "scheduling.volcano.sh/v1beta1", "Queue", "default", "CloseQueue", &cmd),
      0);
  assert_string_equal(vc_str(cmd, "metadata.generateName"), "q1-closequeue-");
  assert_string_equal(vc_str(cmd, "target.apiVersion"), "scheduling.volcano.sh/v1beta1");
  json_decref(cmd);
  json_decref(q);
  json_t *noid = load("{\"metadata\":{\"name\":\"x\"}}");
  assert_int_equal(vc_command_for(noid, "v", "Job", "ns", "AbortJob", &cmd), KC_EINVAL);
  json_decref(noid);
}

static void test_yaml_to_json(void **state) {
  const char *y = "apiVersion: batch.volcano.sh/v1alpha1\n"
                  "kind: Job\n"
                  "metadata: {name: j, labels: {a: \"1\"}}\n"
                  "spec:\n"
                  "  minAvailable: 2\n"
                  "  ratio: 0.5\n"
                  "  on: yes\n"
                  "  off: false\n"
                  "  none: ~\n"
                  "  neg: -3\n"
                  "  ver: '007'\n"
                  "  tasks:\n"
                  "  - replicas: 2\n"
                  "    name: t\n";
  json_t *j;
  char err[256];
  assert_int_equal(vc_yaml_to_json(y, strlen(y), &j, err, sizeof(err)), 0);
  assert_int_equal(vc_num(j, "spec.minAvailable"), 2);
  assert_true(json_is_real(vc_at(j, "spec.ratio")));
  assert_true(json_is_true(vc_at(j, "spec.on")));
  assert_true(json_is_false(vc_at(j, "spec.off")));
  assert_true(json_is_null(vc_at(j, "spec.none")));
  assert_int_equal(vc_num(j, "spec.neg"), -3);
  assert_string_equal(vc_str(j, "spec.ver"), "007");
  assert_string_equal(json_string_value(json_object_get(vc_at(j, "metadata.labels"), "a")), "1");
  assert_int_equal(vc_num(json_array_get(vc_at(j, "spec.tasks"), 0), "replicas"), 2);
  json_decref(j);
  assert_int_equal(vc_yaml_to_json("a: [1\n", 6, &j, err, sizeof(err)), KC_EPARSE);
  assert_non_null(strstr(err, "yaml: line"));
  assert_int_equal(vc_yaml_to_json("- 1\n", 4, &j, err, sizeof(err)), KC_EPARSE);
}

/* An alias is a reference to its anchor's node: a cycle and an exponential tree (a
 * 700-byte file that expands to a million nodes) are refused with go-yaml's words; before
 * the bound the tree converted in full and the cycle said only "not a mapping". */
static void test_yaml_aliases(void **state) {
  (void)state;
  char y[2048];
  int off = snprintf(y, sizeof(y), "x0: &x0 lol\n");
  for (int l = 1; l <= 6; l++) {
    off += snprintf(y + off, sizeof(y) - (size_t)off, "x%d: &x%d [", l, l);
    for (int w = 0; w < 10; w++)
      off += snprintf(y + off, sizeof(y) - (size_t)off, "%s*x%d", w ? ", " : "", l - 1);
    off += snprintf(y + off, sizeof(y) - (size_t)off, "]\n");
  }
  json_t *j = NULL;
  char err[256] = "";
  assert_int_equal(vc_yaml_to_json(y, strlen(y), &j, err, sizeof(err)), KC_EPARSE);
  assert_string_equal(err, "yaml: document contains excessive aliasing");
  assert_null(j);
  static const char self[] = "spec: &a {tasks: [*a]}\n";
  assert_int_equal(vc_yaml_to_json(self, strlen(self), &j, err, sizeof(err)), KC_EPARSE);
  assert_string_equal(err, "yaml: an anchor's value contains itself");
  /* A template shared by name, as people write them, still converts. */
  static const char shared[] = "t: &t {replicas: 2, template: {spec: {a: 1}}}\n"
                               "spec: {tasks: [*t, *t, *t]}\n";
  assert_int_equal(vc_yaml_to_json(shared, strlen(shared), &j, err, sizeof(err)), 0);
  assert_int_equal(vc_num(json_array_get(vc_at(j, "spec.tasks"), 2), "replicas"), 2);
  json_decref(j);
}

/* ---- output ---- */

static void test_human_duration(void **state) {
  static const struct {
    int64_t s;
    const char *want;
  } cases[] = {{-5, "<invalid>"},
               {-1, "0s"},
               {0, "0s"},
               {119, "119s"},
               {120, "2m"},
               {125, "2m5s"},
               {600, "10m"},
               {3 * 3600 - 1, "179m"},
               {3 * 3600, "3h"},
               {3 * 3600 + 60, "3h1m"},
               {8 * 3600, "8h"},
               {47 * 3600, "47h"},
               {50 * 3600, "2d2h"},
               {48 * 3600, "2d"},
               {9 * 86400, "9d"},
               {3 * 365 * 86400 + 4 * 86400, "3y4d"},
               {9 * 365 * 86400, "9y"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char buf[32];
    vc_human_duration(cases[i].s, buf, sizeof(buf));
    assert_string_equal(buf, cases[i].want);
  }
  char buf[32];
  vc_since(NULL, 100, buf, sizeof(buf));
  assert_string_equal(buf, "<unknown>");
  vc_since("1970-01-01T00:00:40Z", 100, buf, sizeof(buf));
  assert_string_equal(buf, "60s");
}

static const char *jobs_json =
    "{\"items\":["
    "{\"metadata\":{\"name\":\"train\",\"namespace\":\"team-a\","
    "\"creationTimestamp\":\"2026-11-30T08:00:00Z\",\"labels\":{\"volcano.sh/job-type\":\"MPI\"}},"
    "\"spec\":{\"tasks\":[{\"replicas\":2},{\"replicas\":4}]},"
    "\"status\":{\"state\":{\"phase\":\"Running\"},\"minAvailable\":6,\"running\":6,"
    "\"retryCount\":1}},"
    "{\"metadata\":{\"name\":\"a-much-longer-name\",\"namespace\":\"b\","
    "\"creationTimestamp\":\"2026-12-01T09:00:00Z\"},"
    "\"spec\":{\"tasks\":[{\"replicas\":1}]},"
    "\"status\":{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":1,\"pending\":1}}]}";

static void test_print_jobs(void **state) {
  json_t *list = load(jobs_json);
  char *text = NULL;
  CAPTURE(text, vc_print_jobs(out, list, false));
  /* Name is as wide as the longest name plus 3; the rest are Volcano's fixed widths. */
  const char *want =
      "Name                 Creation       Phase       JobType     Replicas    Min   Pending   "
      "Running   Succeeded   Failed    Unknown     RetryCount\n"
      "train                2026-11-30     Running     MPI         6           6     0         "
      "6         0           0         0           1         \n"
      "a-much-longer-name   2026-12-01     Pending     Batch       1           1     1         "
      "0         0           0         0           0         \n";
  assert_string_equal(text, want);
  free(text);
  CAPTURE(text, vc_print_jobs(out, list, true));
  assert_memory_equal(text, "Namespace   Name                 Creation", 40);
  assert_non_null(strstr(text, "\nteam-a      train                2026-11-30"));
  free(text);
  json_decref(list);
}

static void test_print_queues(void **state) {
  json_t *qs =
      load("{\"items\":[{\"metadata\":{\"name\":\"default\"},\"spec\":{\"weight\":1},"
           "\"status\":{\"state\":\"Open\"}},{\"metadata\":{\"name\":\"q2\"},"
           "\"spec\":{\"weight\":4,\"parent\":\"root\"},\"status\":{\"state\":\"Closed\"}}]}");
  json_t *pgs = load("{\"items\":["
                     "{\"spec\":{\"queue\":\"default\"},\"status\":{\"phase\":\"Running\"}},"
                     "{\"spec\":{\"queue\":\"default\"},\"status\":{\"phase\":\"Running\"}},"
                     "{\"spec\":{\"queue\":\"default\"},\"status\":{\"phase\":\"Inqueue\"}},"
                     "{\"spec\":{\"queue\":\"q2\"},\"status\":{\"phase\":\"Pending\"}},"
                     "{\"spec\":{\"queue\":\"q2\"},\"status\":{\"phase\":\"Completed\"}},"
                     "{\"spec\":{\"queue\":\"gone\"},\"status\":{\"phase\":\"Running\"}}]}");
  char *text = NULL;
  CAPTURE(text, vc_print_queues(out, qs, pgs));
  assert_string_equal(text,
                      "Name                     Weight  State   Inqueue Pending Running Unknown "
                      "Completed\n"
                      "default                  1       Open    1       0       2       0       "
                      "0       \n"
                      "q2                       4       Closed  0       1       0       0       "
                      "1       \n");
  free(text);
  CAPTURE(text, vc_print_queue(out, json_array_get(json_object_get(qs, "items"), 1), pgs));
  assert_string_equal(text,
                      "Name                     Weight  State   Parent  Inqueue Pending Running "
                      "Unknown Completed\n"
                      "q2                       4       Closed  root    0       1       0       "
                      "0       1       \n");
  free(text);
  json_decref(qs);
  json_decref(pgs);
}

static void test_print_pods(void **state) {
  /* now = 2026-12-01T10:00:00Z */
  int64_t now = 1796119200;
  json_t *pods = load(
      "{\"items\":["
      "{\"metadata\":{\"name\":\"j-worker-0\",\"creationTimestamp\":\"2026-12-01T09:59:00Z\"},"
      "\"spec\":{\"containers\":[{\"name\":\"c\"}]},"
      "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
      "\"containerStatuses\":[{\"name\":\"c\",\"ready\":true,\"restartCount\":2,"
      "\"state\":{\"running\":{}},\"lastState\":{\"terminated\":{\"finishedAt\":"
      "\"2026-12-01T09:59:30Z\"}}}]}},"
      "{\"metadata\":{\"name\":\"j-ps-0\",\"creationTimestamp\":\"2026-12-01T07:00:00Z\"},"
      "\"spec\":{\"containers\":[{\"name\":\"c\"}]},"
      "\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":[{\"name\":\"c\","
      "\"state\":{\"terminated\":{\"reason\":\"Completed\",\"exitCode\":0}}}]}},"
      "{\"metadata\":{\"name\":\"j-init-0\",\"creationTimestamp\":\"2026-12-01T09:00:00Z\"},"
      "\"spec\":{\"initContainers\":[{\"name\":\"i\"}],\"containers\":[{\"name\":\"c\"}]},"
      "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"i\","
      "\"state\":{\"running\":{}}}]}},"
      "{\"metadata\":{\"name\":\"j-gone-0\",\"creationTimestamp\":\"2026-11-28T10:00:00Z\","
      "\"deletionTimestamp\":\"2026-12-01T09:59:59Z\"},"
      "\"spec\":{\"containers\":[{\"name\":\"c\"},{\"name\":\"d\"}]},"
      "\"status\":{\"phase\":\"Running\"}},"
      "{\"metadata\":{\"name\":\"j-gated-0\",\"creationTimestamp\":\"2026-12-01T09:58:00Z\"},"
      "\"spec\":{\"containers\":[{\"name\":\"c\"}]},"
      "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
      "\"status\":\"False\",\"reason\":\"SchedulingGated\"}]}},"
      "{\"metadata\":{\"name\":\"j-crash-0\",\"creationTimestamp\":\"2026-12-01T09:00:00Z\"},"
      "\"spec\":{\"containers\":[{\"name\":\"c\"}]},"
      "\"status\":{\"phase\":\"Failed\",\"containerStatuses\":[{\"name\":\"c\","
      "\"state\":{\"terminated\":{\"exitCode\":3}}}]}}]}");
  char *text = NULL;
  CAPTURE(text, vc_print_pods(out, pods, now));
  /* Each column is as wide as its widest cell plus 8 (the titles do not count). */
  assert_string_equal(
      text, "Name              Ready      Status                 Restart            Age        \n"
            "j-worker-0        1/1        Running                2 (30s ago)        60s        \n"
            "j-ps-0            0/1        Completed              0                  3h         \n"
            "j-init-0          0/1        Init:0/1               0                  60m        \n"
            "j-gone-0          0/2        Terminating            0                  3d         \n"
            "j-gated-0         0/1        SchedulingGated        0                  2m         \n"
            "j-crash-0         0/1        ExitCode:3             0                  60m        \n");
  free(text);
  json_decref(pods);
}

static void test_why_pending(void **state) {
  char buf[512];
  json_t *running = load("{\"status\":{\"state\":{\"phase\":\"Running\"}}}");
  json_t *pending = load("{\"status\":{\"state\":{\"phase\":\"Pending\"}}}");
  assert_false(vc_why_pending(running, NULL, buf, sizeof(buf)));
  assert_string_equal(buf, "");
  assert_true(vc_why_pending(pending, NULL, buf, sizeof(buf)));
  assert_non_null(strstr(buf, "no PodGroup"));
  /* The newest true condition that is not Scheduled is the reason. */
  json_t *pg =
      load("{\"metadata\":{\"name\":\"j-uid\"},\"spec\":{\"minMember\":3,\"queue\":\"q\"},"
           "\"status\":{\"phase\":\"Inqueue\",\"conditions\":["
           "{\"type\":\"Unschedulable\",\"status\":\"True\",\"reason\":\"NotEnoughResources\","
           "\"message\":\"old\",\"lastTransitionTime\":\"2026-12-01T09:00:00Z\"},"
           "{\"type\":\"Scheduled\",\"status\":\"True\",\"reason\":\"tasks in gang are ready to be "
           "scheduled\",\"message\":\"\",\"lastTransitionTime\":\"2026-12-01T09:30:00Z\"},"
           "{\"type\":\"Unschedulable\",\"status\":\"True\",\"reason\":\"NotEnoughResources\","
           "\"message\":\"3/3 tasks in gang unschedulable: 3 Insufficient cpu\","
           "\"lastTransitionTime\":\"2026-12-01T09:10:00Z\"},"
           "{\"type\":\"Unschedulable\",\"status\":\"False\",\"message\":\"newest but false\","
           "\"lastTransitionTime\":\"2026-12-01T09:50:00Z\"}]}}");
  assert_true(vc_why_pending(pending, pg, buf, sizeof(buf)));
  assert_string_equal(buf, "3/3 tasks in gang unschedulable: 3 Insufficient cpu (PodGroup j-uid "
                           "is Inqueue: Unschedulable, reason NotEnoughResources)");
  json_t *fresh = load("{\"metadata\":{\"name\":\"j-uid\"},\"spec\":{\"minMember\":3,"
                       "\"queue\":\"q\"},\"status\":{\"phase\":\"Pending\"}}");
  assert_true(vc_why_pending(pending, fresh, buf, sizeof(buf)));
  assert_non_null(strstr(buf, "PodGroup j-uid is Pending"));
  assert_non_null(strstr(buf, "queue q"));
  json_decref(fresh);
  json_decref(pg);
  json_decref(running);
  json_decref(pending);
}

static void test_job_view(void **state) {
  json_t *job =
      load("{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
           "\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\",\"uid\":\"u1\",\"generation\":1,"
           "\"resourceVersion\":\"42\",\"creationTimestamp\":\"2026-12-01T09:00:00Z\"},"
           "\"spec\":{\"minAvailable\":2,\"schedulerName\":\"volcano\",\"plugins\":{\"env\":[]},"
           "\"tasks\":[{\"name\":\"w\",\"replicas\":2,\"template\":{\"spec\":{\"restartPolicy\":"
           "\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"command\":[\"sleep\","
           "\"1\"],\"resources\":{\"requests\":{\"cpu\":\"1000m\",\"memory\":\"1024Mi\"}}}]}}}]},"
           "\"status\":{\"state\":{\"phase\":\"Pending\"},\"minAvailable\":2,\"pending\":2}}");
  json_t *events = load("{\"items\":[{\"type\":\"Warning\",\"reason\":\"PodGroupPending\","
                        "\"count\":3,\"firstTimestamp\":\"2026-12-01T09:00:00Z\","
                        "\"lastTimestamp\":\"2026-12-01T09:59:00Z\",\"source\":{\"component\":"
                        "\"vc-controller-manager\"},\"message\":\" waiting \\n\"}]}");
  char *text = NULL;
  CAPTURE(text, vc_print_job_view(out, job, NULL, events, 1796119200));
  assert_non_null(strstr(text, "Name:       \tj\nNamespace:  \tns\nLabels:     \t<none>\n"));
  assert_non_null(strstr(text, "  Creation Timestamp:\t2026-12-01 09:00:00 +0000 UTC\n"));
  assert_non_null(
      strstr(text, "  Min Available:     \t2\n  Plugins:\n    Env:\t[]\n    Ssh:\t[]\n"));
  assert_non_null(strstr(text, "            sleep\n            1\n"));
  /* Quantities print in their canonical form. */
  assert_non_null(strstr(text, "              Cpu:   \t1\n              Memory:\t1Gi\n"));
  assert_non_null(strstr(text, "Status:\n  Pending:      \t2\n  Min Available:\t2\n  State:\n"
                               "    Phase:\tPending\n"));
  assert_non_null(strstr(text, "Why Pending:\tno PodGroup"));
  assert_non_null(strstr(text, "Warning        \tPodGroupPending"));
  assert_non_null(strstr(text, "60s (x3 over 60m)"));
  assert_non_null(strstr(text, "\twaiting\n"));
  free(text);
  json_decref(events);
  CAPTURE(text, vc_print_job_view(out, job, NULL, NULL, 0));
  assert_non_null(strstr(text, "Events: \t<none>\n"));
  free(text);
  json_decref(job);
}

static void test_flow_commands(void **state) {
  vc_args a;
  char err[256];
  assert_int_equal(parse("vcctl jobflow create -f flows.yaml", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_FLOW_CREATE);
  assert_string_equal(a.group, "jobflow");
  assert_string_equal(a.what, "create jobflow");
  assert_string_equal(a.file, "flows.yaml");
  assert_int_equal(parse("vcctl jobtemplate describe -N t -n ns -o json", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_FLOW_DESCRIBE);
  assert_string_equal(a.group, "jobtemplate");
  assert_string_equal(a.format, "json");
  assert_string_equal(a.name, "t");
  assert_string_equal(a.namespace, "ns");
  assert_int_equal(parse("vcctl jobflow describe", &a, err, sizeof(err)), 0);
  assert_string_equal(a.format, "yaml");
  assert_int_equal(parse("vcctl jobflow list --all-namespaces", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_FLOW_LIST);
  assert_true(a.all_namespaces);
  assert_int_equal(parse("vcctl jobflow delete -N f -f x.yaml", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_FLOW_DELETE);
  assert_int_equal(parse("vcctl jobflow get -N f", &a, err, sizeof(err)), 0);
  assert_int_equal(a.verb, VC_FLOW_GET);
  assert_string_equal(a.namespace, "default");
  assert_int_equal(parse("vcctl jobflow run", &a, err, sizeof(err)), KC_EINVAL);
  assert_string_equal(err, "unknown command \"run\" for \"vcctl jobflow\"");
}

static void test_print_flows(void **state) {
  json_t *list = load("{\"items\":[{\"metadata\":{\"name\":\"flow-one\",\"namespace\":"
                      "\"ns\",\"creationTimestamp\":\"2026-12-01T09:59:00Z\"},\"status\":"
                      "{\"state\":{\"phase\":\"Succeed\"}}},{\"metadata\":{\"name\":\"f2\","
                      "\"namespace\":\"a-longer-ns\"}}]}");
  char *text = NULL;
  CAPTURE(text, vc_print_flows(out, list, true, 1796119200));
  /* Each column as wide as its widest cell or title, plus 4. */
  assert_string_equal(text, "Name        Namespace      Phase      Age          \n"
                            "flow-one    ns             Succeed    60s          \n"
                            "f2          a-longer-ns               <unknown>    \n");
  free(text);
  CAPTURE(text, vc_print_flows(out, list, false, 1796119200));
  assert_string_equal(text, "Name        Namespace      \n"
                            "flow-one    ns             \n"
                            "f2          a-longer-ns    \n");
  free(text);
  json_decref(list);
}

static void test_yaml_docs_and_back(void **state) {
  const char *y = "# comment only\n---\na: 1\n---\n---\nb: [x, 'true']\n";
  json_t *docs;
  char err[256];
  assert_int_equal(vc_yaml_docs_to_json(y, strlen(y), &docs, err, sizeof(err)), 0);
  assert_int_equal(json_array_size(docs), 2);
  assert_int_equal(vc_num(json_array_get(docs, 0), "a"), 1);
  json_decref(docs);
  /* Written back, strings that would read as other types are quoted, and the text reads
   * back as the same object. */
  json_t *obj = load("{\"s\":\"plain\",\"t\":\"true\",\"num\":\"007\",\"ts\":"
                     "\"2026-12-01T11:35:08Z\",\"i\":3,\"b\":false,\"z\":null,"
                     "\"l\":[1,\"two\",{\"k\":\"v: w\"}],\"e\":{}}");
  char *text = NULL;
  CAPTURE(text, assert_int_equal(vc_json_to_yaml(out, obj), 0));
  assert_non_null(strstr(text, "s: plain\n"));
  assert_non_null(strstr(text, "t: \"true\"\n"));
  assert_non_null(strstr(text, "num: \"007\"\n"));
  assert_non_null(strstr(text, "ts: \"2026-12-01T11:35:08Z\"\n"));
  assert_int_equal(vc_yaml_docs_to_json(text, strlen(text), &docs, err, sizeof(err)), 0);
  assert_true(json_equal(json_array_get(docs, 0), obj));
  json_decref(docs);
  free(text);
  json_decref(obj);
}

int main(void) {
  setenv("TZ", "UTC", 1);
  tzset();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_job_run_flags_and_defaults),
      cmocka_unit_test(test_job_list_and_view_flags),
      cmocka_unit_test(test_queue_and_pod_flags),
      cmocka_unit_test(test_shortcuts_by_program_name),
      cmocka_unit_test(test_help_and_bad_lines),
      cmocka_unit_test(test_resource_list),
      cmocka_unit_test(test_shlex),
      cmocka_unit_test(test_job_from_flags),
      cmocka_unit_test(test_command_for),
      cmocka_unit_test(test_yaml_to_json),
      cmocka_unit_test(test_yaml_aliases),
      cmocka_unit_test(test_human_duration),
      cmocka_unit_test(test_print_jobs),
      cmocka_unit_test(test_print_queues),
      cmocka_unit_test(test_print_pods),
      cmocka_unit_test(test_why_pending),
      cmocka_unit_test(test_job_view),
      cmocka_unit_test(test_flow_commands),
      cmocka_unit_test(test_print_flows),
      cmocka_unit_test(test_yaml_docs_and_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
