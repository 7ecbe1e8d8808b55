/* Fuzz target for the job plugins' untrusted input: their arguments and the Job fields they
 * read (tasks' replicas, templates' hostname and subdomain, the number of tasks, whether the
 * job has pods), through the real hooks (ctl__plugins_job_add, _pod_create, _job_update,
 * _job_delete: the plugin table in spec order, with the svc and ssh plugins a training plugin
 * implies) on one pod per input. The Job is decoded once; an input only changes those fields,
 * so an input costs the plugins' work and not a whole sync's (fuzz_sync.c keeps the whole
 * sync of every pod and the restart through the phase machine).
 *
 * The input is a list of lines:
 *   "@<d>"     names plugin d (0-7: pytorch, tensorflow, mpi, ray, hcclrank, svc, ssh, env;
 *              8: a name no plugin has) and sends the argument lines after it there (lines
 *              before any "@" go to pytorch); plugins run in the order they are first named;
 *   "#r<t><n>" gives task t (0-3: master, worker, ps, head) n replicas (a digit, '-' is -1);
 *   "#v<t><v>" gives task t's template variant v (0-3: bit 0 a hostname, bit 1 a subdomain);
 *   "#p<t><i>" makes the pod task t's index i (clamped to the replicas; none when 0);
 *   "#1"       leaves the job only its first task; "#n" says the job has pods already;
 *   anything else is an argument. Lines with a NUL or not UTF-8 are dropped: the API server
 *   never hands those to the controller.
 *
 * Checks: no hook returns a positive code, a refused add says why; a second add creates
 * nothing more (the hooks are idempotent); the pod keeps its name; every object created or
 * rewritten is named in the job's namespace; the delete after it (a restart) deletes every
 * object the add created and forgets every plugin marker. Leaks are reported by the
 * sanitizer. */
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "fuzz_ctl.h"
#include "kc_codec.h"
#include "kc_error.h"
#include "kc_log.h"
#include "plugins/ctl_plugin.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NNAMES 9
#define NTASKS 4

static const char *const names[NNAMES] = {"pytorch", "tensorflow", "mpi", "ray",    "hcclrank",
                                          "svc",     "ssh",        "env", "fz-none"};
static const char *const task_names[NTASKS] = {"master", "worker", "ps", "head"};

/* What one input asks for. */
typedef struct {
  int32_t replicas[NTASKS];
  int variant[NTASKS];
  int pod_task, pod_index;
  bool one_task, has_pods;
  int order[NNAMES]; /* plugin indexes in the order first named */
  size_t nnamed;
  bool named[NNAMES];
} shape;

static const shape defaults = {
    .replicas = {2, 2, 1, 1}, .variant = {0, 1, 0, 2}, .pod_task = 1, .pod_index = 1};

/* Made once: the Job (its tasks' replicas, templates, count and plugins are set per input and
 * put back after), each task's template variants as text (what the plugins read) and their
 * parsed spec (what the pod starts from), and the plugins' fake effects. */
static Kiln__Job *job;
static char *orig_template[NTASKS];
static char *variants[NTASKS][4];
static json_t *variant_spec[NTASKS][4];
static const ctl_pod existing = {.name = "fz-master-0", .task = "master", .phase = CTL_POD_RUNNING};

static void make_variants(size_t t) {
  json_t *base = json_loads(orig_template[t], 0, NULL);
  if (!base)
    abort();
  for (int v = 0; v < 4; v++) {
    json_t *copy = json_deep_copy(base);
    json_t *spec = json_object_get(copy, "spec");
    char host[16];
    snprintf(host, sizeof(host), "h%zu", t);
    if (v & 1)
      json_object_set_new(spec, "hostname", json_string(host));
    else
      json_object_del(spec, "hostname");
    if (v & 2)
      json_object_set_new(spec, "subdomain", json_string("sd"));
    else
      json_object_del(spec, "subdomain");
    variants[t][v] = json_dumps(copy, JSON_COMPACT);
    variant_spec[t][v] = json_incref(spec);
    json_decref(copy);
    if (!variants[t][v] || !variant_spec[t][v])
      abort();
  }
  json_decref(base);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  /* The plugins log every refused flag; the log is not what is being tested. */
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd >= 0)
    kc_log_set_stream_fd(fd);
  json_t *j = json_loads(job_text, 0, NULL);
  char err[256];
  if (!j || kc_job_decode(j, &job, err, sizeof(err)) != 0 || job->spec->n_tasks != NTASKS)
    abort();
  json_decref(j);
  for (size_t t = 0; t < NTASKS; t++) {
    orig_template[t] = job->spec->tasks[t]->template_json;
    make_variants(t);
  }
  return 0;
}

/* A directive line (see the top): applies it and returns true; false for an argument. */
static bool directive(const char *l, size_t len, shape *sh, size_t *cur) {
  if (len == 2 && l[0] == '@' && l[1] >= '0' && l[1] < '0' + NNAMES) {
    *cur = (size_t)(l[1] - '0');
    return true;
  }
  if (len == 2 && l[0] == '#' && (l[1] == '1' || l[1] == 'n')) {
    if (l[1] == '1')
      sh->one_task = true;
    else
      sh->has_pods = true;
    return true;
  }
  if (len != 4 || l[0] != '#' || l[2] < '0' || l[2] >= '0' + NTASKS)
    return false;
  int t = l[2] - '0';
  char d = l[3];
  bool digit = d >= '0' && d <= '9';
  if (l[1] == 'r' && (digit || d == '-'))
    sh->replicas[t] = digit ? d - '0' : -1;
  else if (l[1] == 'v' && d >= '0' && d <= '3')
    sh->variant[t] = d - '0';
  else if (l[1] == 'p' && digit)
    sh->pod_task = t, sh->pod_index = d - '0';
  else
    return false;
  return true;
}

static void name_plugin(shape *sh, size_t p) {
  if (!sh->named[p]) {
    sh->named[p] = true;
    sh->order[sh->nnamed++] = (int)p;
  }
}

/* An argument the API server would carry: no NUL, valid UTF-8 (the codec's own check). */
static bool acceptable(const char *l, size_t len) {
  if (memchr(l, '\0', len))
    return false;
  json_t *s = json_stringn(l, len);
  json_decref(s);
  return s != NULL;
}

/* Splits text (size bytes, NUL-terminated, modified in place) into the shape and each
 * plugin's arguments: args[p] (allocated, n[p] items pointing into text). */
static int read_input(char *text, size_t size, shape *sh, char **args[NNAMES], size_t n[NNAMES]) {
  size_t lines = 1;
  for (size_t i = 0; i < size; i++)
    lines += text[i] == '\n';
  for (size_t p = 0; p < NNAMES; p++)
    if (!(args[p] = malloc(lines * sizeof(char *))))
      return KC_ENOMEM;
  size_t cur = 0, start = 0;
  for (size_t i = 0; i <= size; i++) {
    if (i < size && text[i] != '\n')
      continue;
    char *line = text + start;
    size_t len = i - start;
    start = i + 1;
    text[i] = '\0';
    if (directive(line, len, sh, &cur)) {
      if (line[0] == '@')
        name_plugin(sh, cur);
    } else if (acceptable(line, len)) {
      name_plugin(sh, cur);
      args[cur][n[cur]++] = line;
    }
  }
  return 0;
}

/* Sets the job's fields from the shape; put_back() restores them. */
static void apply(const shape *sh, Kiln__JobSpec__PluginsEntry **ptrs, size_t nptrs) {
  Kiln__JobSpec *spec = job->spec;
  for (size_t t = 0; t < NTASKS; t++) {
    spec->tasks[t]->replicas = sh->replicas[t];
    spec->tasks[t]->template_json = variants[t][sh->variant[t]];
  }
  spec->n_tasks = sh->one_task ? 1 : NTASKS;
  spec->plugins = ptrs;
  spec->n_plugins = nptrs;
}

static void put_back(void) {
  Kiln__JobSpec *spec = job->spec;
  for (size_t t = 0; t < NTASKS; t++)
    spec->tasks[t]->template_json = orig_template[t];
  spec->n_tasks = NTASKS;
  spec->plugins = NULL;
  spec->n_plugins = 0;
}

/* The pod the sync would build for the shape's task and index, as far as the plugins look
 * at it (name, the task annotations and labels, the template's spec); NULL when that task
 * has no pods. */
static json_t *make_pod(const shape *sh, int *task, int *index) {
  *task = sh->one_task ? 0 : sh->pod_task;
  int32_t replicas = sh->replicas[*task];
  if (replicas <= 0)
    return NULL;
  *index = sh->pod_index < replicas ? sh->pod_index : replicas - 1;
  char name[64], idx[16];
  snprintf(name, sizeof(name), "fz-%s-%d", task_names[*task], *index);
  snprintf(idx, sizeof(idx), "%d", *index);
  json_t *spec = json_deep_copy(variant_spec[*task][sh->variant[*task]]);
  json_t *pod =
      json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}}, s:o}", "apiVersion",
                "v1", "kind", "Pod", "metadata", "name", name, "namespace", "ns", "labels",
                CTL_KEY_TASK_SPEC, task_names[*task], CTL_KEY_TASK_INDEX, idx, CTL_KEY_JOB_NAME,
                "fz", "annotations", CTL_KEY_TASK_SPEC, task_names[*task], CTL_KEY_TASK_INDEX, idx,
                CTL_KEY_JOB_NAME, "fz", "spec", spec);
  if (!pod)
    abort();
  return pod;
}

/* Every object is named, in the job's namespace. */
static void check_objects(const json_t *arr) {
  size_t i;
  json_t *o;
  json_array_foreach(arr, i, o) {
    json_t *meta = json_object_get(o, "metadata");
    const char *n = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (!n || !*n || !ns || strcmp(ns, "ns") != 0)
      abort();
  }
}

/* Every object the add created is deleted again, by kind and name. */
static void check_deleted(const json_t *created, const json_t *deleted) {
  size_t i, k;
  json_t *o, *d;
  json_array_foreach(created, i, o) {
    const char *kind = json_string_value(json_object_get(o, "kind"));
    const char *n = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
    bool found = false;
    json_array_foreach(deleted, k, d) {
      const char *dk = json_string_value(json_object_get(d, "kind"));
      const char *dn = json_string_value(json_object_get(d, "name"));
      found = found || (kind && dk && n && dn && strcmp(kind, dk) == 0 && strcmp(n, dn) == 0);
    }
    if (!found)
      abort();
  }
}

/* The hooks a sync and a restart run, with the checks listed at the top. */
static void run_hooks(const shape *sh) {
  ctl_job_view v = {.job = job, .queue_exists = true, .now = 1, .ops = &ops};
  if (sh->has_pods)
    v.pods = &existing, v.npods = 1;
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  ctl_plan plan;
  ctl_plan_init(&plan);
  if (!(plan.status.controlled = json_object()))
    abort();
  ctl_ctx c = {.v = &v, .req = &req, .plan = &plan};
  char err[256] = "";
  int rc = ctl__plugins_job_add(&c, err, sizeof(err));
  if (rc > 0 || (rc < 0 && !err[0]) || (rc == KC_ENOENT) != sh->named[NNAMES - 1])
    abort();
  if (rc < 0)
    goto out;
  size_t created = json_array_size(plan.objects_create);
  if (ctl__plugins_job_add(&c, err, sizeof(err)) != 0 ||
      json_array_size(plan.objects_create) != created)
    abort();
  int task, index;
  json_t *pod = make_pod(sh, &task, &index);
  if (pod) {
    if (ctl__plugins_pod_create(&c, pod, job->spec->tasks[task], index) > 0)
      abort();
    const char *n = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
    if (!n || strncmp(n, "fz-", 3) != 0)
      abort();
    json_decref(pod);
  }
  if (ctl__plugins_job_update(&c) > 0)
    abort();
  check_objects(plan.objects_create);
  check_objects(plan.objects_update);
  if (ctl__plugins_job_delete(&c) != 0)
    abort();
  check_deleted(plan.objects_create, plan.objects_delete);
  const char *key;
  json_t *val;
  json_object_foreach(plan.status.controlled, key, val) {
    if (strncmp(key, "plugin-", 7) == 0)
      abort();
  }
out:
  free(c.tf_cluster); /* the tensorflow plugin's per-sync cluster, as ctl_job_sync frees it */
  ctl_plan_close(&plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  shape sh = defaults;
  char **args[NNAMES] = {0};
  size_t n[NNAMES] = {0};
  if (read_input(text, size, &sh, args, n) == 0) {
    Kiln__StringList lists[NNAMES];
    Kiln__JobSpec__PluginsEntry entries[NNAMES], *ptrs[NNAMES];
    for (size_t i = 0; i < sh.nnamed; i++) {
      int p = sh.order[i];
      lists[i] = (Kiln__StringList)KILN__STRING_LIST__INIT;
      lists[i].n_items = n[p];
      lists[i].items = args[p];
      entries[i] = (Kiln__JobSpec__PluginsEntry)KILN__JOB_SPEC__PLUGINS_ENTRY__INIT;
      entries[i].key = (char *)names[p];
      entries[i].value = &lists[i];
      ptrs[i] = &entries[i];
    }
    apply(&sh, ptrs, sh.nnamed);
    run_hooks(&sh);
    put_back();
  }
  for (size_t p = 0; p < NNAMES; p++)
    free(args[p]);
  free(text);
  return 0;
}
