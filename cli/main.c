/* vcctl (also kubectl-vcctl, vsub, vjobs, vqueues, vsuspend, vresume, vcancel by the name it is
 * called by): one function per verb over vc_conn's request/response. A failure prints
 * Volcano's "Failed to <verb> <noun>: <error>" on stdout and exits with status 255. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kc_error.h"
#include "kc_file.h"
#include "vc.h"

#define ERRLEN 1200

typedef struct {
  const vc_args *a;
  vc_conn *conn;
  char err[ERRLEN];
} run_ctx;

static int failf(run_ctx *x, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(run_ctx *x, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->err, sizeof(x->err), fmt, ap);
  va_end(ap);
  return code;
}

/* One call; the connection is made on the first, so a bad command line is reported before
 * the configuration is even read. */
static int raw(run_ctx *x, kc_verb verb, const kc_ref *ref, const kc_query *q, json_t *body,
               vc_reply *r) {
  memset(r, 0, sizeof(*r));
  if (x->conn == NULL) {
    int rc = vc_conn_open(x->a->kubeconfig, x->a->master, &x->conn, r->message, sizeof(r->message));
    if (rc != 0)
      return r->err = rc;
  }
  return vc_call(x->conn, verb, ref, q, body, r);
}

/* The server's words for a failed call (a Status message such as
 * `jobs.batch.volcano.sh "x" not found`), as client-go's error prints them. */
static int call(run_ctx *x, kc_verb verb, const kc_ref *ref, const kc_query *q, json_t *body,
                vc_reply *r) {
  int rc = raw(x, verb, ref, q, body, r);
  if (rc != 0)
    failf(x, rc, "%s", r->message);
  return rc;
}

#define JOBS(ns, name)                                                                             \
  { "batch.volcano.sh", "v1alpha1", "jobs", ns, name, NULL }
#define QUEUES(name)                                                                               \
  { "scheduling.volcano.sh", "v1beta1", "queues", NULL, name, NULL }
#define PODGROUPS(ns, name)                                                                        \
  { "scheduling.volcano.sh", "v1beta1", "podgroups", ns, name, NULL }
#define COMMANDS(ns)                                                                               \
  { "bus.volcano.sh", "v1alpha1", "commands", ns, NULL, NULL }

/* ---- jobs ---- */

/* Reads a whole file (at most 16 MiB) into *buf (new, NUL-terminated). */
static int read_file(run_ctx *x, const char *f, const char *prefix, char **buf, size_t *len) {
  int rc = kc_file_read(f, 16u << 20, buf, len);
  if (rc == KC_ETOOBIG || rc == KC_ENOMEM)
    return failf(x, KC_ETOOBIG, "%s%s is too large", prefix, f);
  if (rc)
    return failf(x, KC_EIO, "%sopen %s: %s", prefix, f, strerror(errno));
  return 0;
}

static int read_job_file(run_ctx *x, json_t **out) {
  const char *f = x->a->filename;
  if (strstr(f, ".yaml") == NULL && strstr(f, ".yml") == NULL)
    return failf(x, KC_EINVAL, "only support yaml file");
  char *buf;
  size_t len;
  int rc = read_file(x, f, "failed to read file, err: ", &buf, &len);
  if (rc != 0)
    return rc;
  char perr[512];
  rc = vc_yaml_to_json(buf, len, out, perr, sizeof(perr));
  free(buf);
  if (rc != 0)
    return failf(x, rc, "Failed to unmarshal file, err:  %s", perr);
  return 0;
}

static int job_run(run_ctx *x) {
  const vc_args *a = x->a;
  if ((a->name == NULL || !a->name[0]) && (a->filename == NULL || !a->filename[0]))
    return failf(x, KC_EINVAL, "job name cannot be left blank");
  json_t *job = NULL;
  int rc;
  if (a->filename && a->filename[0]) {
    json_t *ignored = NULL;
    /* Volcano checks the resource flags even when the job comes from a file. */
    if ((rc = vc_resource_list(a->requests, &ignored, x->err, sizeof(x->err))) == 0) {
      json_decref(ignored);
      rc = vc_resource_list(a->limits, &ignored, x->err, sizeof(x->err));
      json_decref(ignored);
    }
    if (rc == 0)
      rc = read_job_file(x, &job);
  } else {
    rc = vc_job_from_flags(a, &job, x->err, sizeof(x->err));
  }
  if (rc != 0)
    return rc;
  kc_ref ref = JOBS(a->namespace, NULL);
  vc_reply r;
  rc = call(x, KC_CREATE, &ref, NULL, job, &r);
  json_decref(job);
  if (rc == 0)
    printf("run job %s successfully\n", vc_str(r.obj, "metadata.name"));
  vc_reply_clear(&r);
  return rc;
}

/* The Job a what-if asks about: from the file, else from the run flags; in the namespace the
 * file names, else -n's. */
static int whatif_job(run_ctx *x, json_t **job) {
  const vc_args *a = x->a;
  int rc;
  if (a->filename && a->filename[0])
    rc = read_job_file(x, job);
  else if (a->verb == VC_JOB_WHATIF && a->name == NULL)
    return failf(x, KC_EINVAL, "the job's yaml file (-f) is mandatory");
  else
    rc = vc_job_from_flags(a, job, x->err, sizeof(x->err));
  if (rc != 0)
    return rc;
  json_t *md = json_object_get(*job, "metadata");
  if (!json_is_object(md))
    json_object_set_new(*job, "metadata", md = json_object());
  if (!json_is_string(json_object_get(md, "namespace")))
    json_object_set_new(md, "namespace", json_string(a->namespace ? a->namespace : "default"));
  return 0;
}

static int job_whatif(run_ctx *x) {
  json_t *job = NULL;
  int rc = whatif_job(x, &job);
  if (rc != 0)
    return rc;
  if (x->conn == NULL && !(x->a->snapshot && x->a->snapshot[0]))
    rc = vc_conn_open(x->a->kubeconfig, x->a->master, &x->conn, x->err, sizeof(x->err));
  if (rc == 0)
    rc = vc_whatif_cmd(x->a, x->conn, job, x->err, sizeof(x->err));
  json_decref(job);
  return rc;
}

static bool job_matches(const vc_args *a, const json_t *j) {
  if (a->queue && a->queue[0] && strcmp(a->queue, vc_str(j, "spec.queue")) != 0)
    return false;
  if (a->scheduler && a->scheduler[0] && strcmp(a->scheduler, vc_str(j, "spec.schedulerName")) != 0)
    return false;
  return a->selector == NULL || strstr(vc_str(j, "metadata.name"), a->selector) != NULL;
}

static int job_list(run_ctx *x) {
  const vc_args *a = x->a;
  kc_ref ref = JOBS(a->all_namespaces ? NULL : a->namespace, NULL);
  vc_reply r;
  int rc = call(x, KC_LIST, &ref, NULL, NULL, &r);
  if (rc != 0)
    return rc;
  json_t *kept = json_array(), *list = json_pack("{s:o}", "items", kept);
  size_t i;
  json_t *j;
  json_array_foreach(json_object_get(r.obj, "items"), i, j) {
    if (job_matches(a, j))
      json_array_append(kept, j);
  }
  if (json_array_size(kept) == 0)
    printf("No resources found\n");
  else
    vc_print_jobs(stdout, list, a->all_namespaces);
  json_decref(list);
  vc_reply_clear(&r);
  return 0;
}

/* The job's PodGroup: "<job>-<uid>" since Volcano 1.5, "<job>" before. NULL when neither. */
static json_t *job_podgroup(run_ctx *x, const json_t *job) {
  char name[512];
  const char *ns = vc_str(job, "metadata.namespace");
  snprintf(name, sizeof(name), "%s-%s", vc_str(job, "metadata.name"), vc_str(job, "metadata.uid"));
  for (int i = 0; i < 2; i++) {
    kc_ref ref = PODGROUPS(ns, i == 0 ? name : vc_str(job, "metadata.name"));
    vc_reply r;
    if (raw(x, KC_GET, &ref, NULL, NULL, &r) == 0)
      return r.obj;
    vc_reply_clear(&r);
  }
  return NULL;
}

static int job_view(run_ctx *x) {
  const vc_args *a = x->a;
  if (a->name == NULL || !a->name[0]) {
    if (a->list_if_no_name)
      return job_list(x);
    return failf(x, KC_EINVAL,
                 "job name (specified by --name or -N) is mandatory to view a "
                 "particular job");
  }
  kc_ref ref = JOBS(a->namespace, a->name);
  vc_reply r;
  int rc = call(x, KC_GET, &ref, NULL, NULL, &r);
  if (rc != 0)
    return rc;
  json_t *pg = job_podgroup(x, r.obj);
  /* The job's own events; Volcano matches event names "<job>.*", the field selector asks
   * the server for exactly the events about this object. */
  char sel[600];
  snprintf(sel, sizeof(sel), "involvedObject.name=%s,involvedObject.kind=Job", a->name);
  kc_ref eref = {NULL, "v1", "events", a->namespace, NULL, NULL};
  kc_query q = {.field_selector = sel};
  vc_reply ev;
  raw(x, KC_LIST, &eref, &q, NULL, &ev);
  vc_print_job_view(stdout, r.obj, pg, ev.obj, (int64_t)time(NULL));
  vc_reply_clear(&ev);
  json_decref(pg);
  vc_reply_clear(&r);
  return 0;
}

static int job_command(run_ctx *x, const char *action, const char *verb) {
  const vc_args *a = x->a;
  if (a->name == NULL || !a->name[0])
    return failf(x, KC_EINVAL, "job name is mandatory to %s a particular job", verb);
  kc_ref ref = JOBS(a->namespace, a->name);
  vc_reply r;
  int rc = call(x, KC_GET, &ref, NULL, NULL, &r);
  if (rc != 0)
    return rc;
  json_t *cmd = NULL;
  rc = vc_command_for(r.obj, "batch.volcano.sh/v1alpha1", "Job",
                      vc_str(r.obj, "metadata.namespace"), action, &cmd);
  vc_reply_clear(&r);
  if (rc != 0)
    return failf(x, rc, "cannot build the %s Command: %s", action, kc_strerror(rc));
  kc_ref cref = COMMANDS(a->namespace);
  rc = call(x, KC_CREATE, &cref, NULL, cmd, &r);
  json_decref(cmd);
  vc_reply_clear(&r);
  return rc;
}

static int job_delete(run_ctx *x, bool cancel) {
  const vc_args *a = x->a;
  if (a->name == NULL || !a->name[0])
    return failf(x, KC_EINVAL, "job name is mandatory to %s a particular job",
                 cancel ? "cancel" : "delete");
  kc_ref ref = JOBS(a->namespace, a->name);
  vc_reply r;
  int rc = call(x, KC_DELETE, &ref, NULL, NULL, &r);
  vc_reply_clear(&r);
  if (rc == 0)
    printf("%s job %s successfully\n", cancel ? "cancel" : "delete", a->name);
  return rc;
}

/* ---- queues ---- */

static int list_podgroups(run_ctx *x, vc_reply *pgs, const char *queue) {
  kc_ref ref = PODGROUPS(NULL, NULL);
  int rc = raw(x, KC_LIST, &ref, NULL, NULL, pgs);
  if (rc != 0 && queue)
    return failf(x, rc, "failed to list podgroup for queue %s with err: %s", queue, pgs->message);
  if (rc != 0)
    return failf(x, rc, "failed to list podgroups with err: %s", pgs->message);
  return 0;
}

static int queue_list(run_ctx *x) {
  kc_ref ref = QUEUES(NULL);
  vc_reply r, pgs = {0};
  int rc = call(x, KC_LIST, &ref, NULL, NULL, &r);
  if (rc == 0 && json_array_size(json_object_get(r.obj, "items")) == 0)
    printf("No resources found\n");
  else if (rc == 0 && (rc = list_podgroups(x, &pgs, NULL)) == 0)
    vc_print_queues(stdout, r.obj, pgs.obj);
  vc_reply_clear(&pgs);
  vc_reply_clear(&r);
  return rc;
}

static int queue_get(run_ctx *x) {
  const vc_args *a = x->a;
  if (a->name == NULL || !a->name[0]) {
    if (a->list_if_no_name)
      return queue_list(x);
    return failf(x, KC_EINVAL, "name is mandatory to get the particular queue details");
  }
  kc_ref ref = QUEUES(a->name);
  vc_reply r, pgs = {0};
  int rc = call(x, KC_GET, &ref, NULL, NULL, &r);
  if (rc == 0 && (rc = list_podgroups(x, &pgs, a->name)) == 0)
    vc_print_queue(stdout, r.obj, pgs.obj);
  vc_reply_clear(&pgs);
  vc_reply_clear(&r);
  return rc;
}

static int queue_create(run_ctx *x) {
  const vc_args *a = x->a;
  json_t *q = vc_queue_new(a->name, a->weight, a->state);
  if (q == NULL)
    return failf(x, KC_ENOMEM, "out of memory");
  kc_ref ref = QUEUES(NULL);
  vc_reply r;
  int rc = call(x, KC_CREATE, &ref, NULL, q, &r);
  json_decref(q);
  vc_reply_clear(&r);
  return rc;
}

static int queue_delete(run_ctx *x) {
  if (x->a->name == NULL || !x->a->name[0])
    return failf(x, KC_EINVAL, "queue name must be specified");
  kc_ref ref = QUEUES(x->a->name);
  vc_reply r;
  int rc = call(x, KC_DELETE, &ref, NULL, NULL, &r);
  vc_reply_clear(&r);
  return rc;
}

static int queue_operate(run_ctx *x) {
  const vc_args *a = x->a;
  if (a->name == NULL || !a->name[0])
    return failf(x, KC_EINVAL, "Queue name must be specified");
  const char *act = a->action ? a->action : "";
  kc_ref ref = QUEUES(a->name);
  vc_reply r;
  int rc;
  if (strcmp(act, "update") == 0) {
    if (a->weight == 0)
      return failf(x, KC_EINVAL,
                   "When update queue %s, weight must be specified, the value "
                   "must be greater than 0",
                   a->name);
    json_t *patch = json_pack("{s:{s:i}}", "spec", "weight", a->weight);
    rc = call(x, KC_PATCH_MERGE, &ref, NULL, patch, &r);
    json_decref(patch);
    vc_reply_clear(&r);
    return rc;
  }
  const char *action = strcmp(act, "open") == 0    ? "OpenQueue"
                       : strcmp(act, "close") == 0 ? "CloseQueue"
                                                   : NULL;
  if (act[0] == '\0')
    return failf(x, KC_EINVAL, "Action can not be null");
  if (action == NULL)
    return failf(x, KC_EINVAL, "Action %s invalid, valid actions are open, close and update", act);
  if ((rc = call(x, KC_GET, &ref, NULL, NULL, &r)) != 0)
    return rc;
  json_t *cmd = NULL;
  /* Volcano's vcctl puts queue Commands in the "default" namespace. */
  rc = vc_command_for(r.obj, "scheduling.volcano.sh/v1beta1", "Queue", "default", action, &cmd);
  vc_reply_clear(&r);
  if (rc != 0)
    return failf(x, rc, "cannot build the %s Command: %s", action, kc_strerror(rc));
  kc_ref cref = COMMANDS("default");
  rc = call(x, KC_CREATE, &cref, NULL, cmd, &r);
  json_decref(cmd);
  vc_reply_clear(&r);
  return rc;
}

/* ---- pods ---- */

static const char *label(const json_t *o, const char *key) {
  return json_string_value(json_object_get(vc_at(o, "metadata.labels"), key));
}

static bool has_pod(const json_t *items, const char *name) {
  size_t i;
  json_t *p;
  json_array_foreach(items, i, p) {
    if (strcmp(vc_str(p, "metadata.name"), name) == 0)
      return true;
  }
  return false;
}

/* Pods of a queue: the vcjob pods labelled with it, then other pods annotated with it. */
static json_t *pods_of_queue(const json_t *all, const char *queue) {
  json_t *items = json_array();
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(all, "items"), i, p) {
    const char *l = label(p, "volcano.sh/queue-name");
    if (l && strcmp(l, queue) == 0)
      json_array_append(items, p);
  }
  json_array_foreach(json_object_get(all, "items"), i, p) {
    const char *an = json_string_value(
        json_object_get(vc_at(p, "metadata.annotations"), "scheduling.volcano.sh/queue-name"));
    if (an && strcmp(an, queue) == 0 && !has_pod(items, vc_str(p, "metadata.name")))
      json_array_append(items, p);
  }
  return json_pack("{s:o}", "items", items);
}

static int pod_list(run_ctx *x) {
  const vc_args *a = x->a;
  bool by_job = a->job && a->job[0], by_queue = a->queue && a->queue[0];
  char sel[600];
  snprintf(sel, sizeof(sel), by_job ? "volcano.sh/job-name in (%s)" : "volcano.sh/job-name",
           by_job ? a->job : "");
  kc_ref ref = {NULL, "v1", "pods", a->all_namespaces ? NULL : a->namespace, NULL, NULL};
  kc_query q = {.label_selector = (by_queue && !by_job) ? NULL : sel};
  vc_reply r;
  int rc = call(x, KC_LIST, &ref, &q, NULL, &r);
  if (rc != 0)
    return rc;
  json_t *pods = json_incref(r.obj);
  if (by_job && by_queue) {
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(pods, "items"), i, p) {
      const char *l = label(p, "volcano.sh/queue-name");
      if (l && strcmp(l, a->queue) != 0)
        rc =
            failf(x, KC_EINVAL, "the input vcjob %s does not match the queue %s", a->job, a->queue);
    }
  } else if (by_queue) {
    json_decref(pods);
    pods = pods_of_queue(r.obj, a->queue);
  }
  if (rc == 0 && json_array_size(json_object_get(pods, "items")) == 0)
    printf("No resources found\n");
  else if (rc == 0)
    vc_print_pods(stdout, pods, (int64_t)time(NULL));
  json_decref(pods);
  vc_reply_clear(&r);
  return rc;
}

/* ---- jobflows and jobtemplates (flow.volcano.sh) ---- */

typedef struct {
  const char *resource, *kind;
  bool with_phase;
} flow_kind;

static flow_kind kind_of(const vc_args *a) {
  if (a->group && strcmp(a->group, "jobtemplate") == 0)
    return (flow_kind){"jobtemplates", "JobTemplate", false};
  return (flow_kind){"jobflows", "JobFlow", true};
}

/* Fails with utilerrors.NewAggregate's text of msgs (a JSON array of strings): one error alone,
 * several as "[a, b]". 0 when there is none. */
static int fail_aggregate(run_ctx *x, const json_t *msgs) {
  size_t n = json_array_size(msgs), i, len;
  if (n == 0)
    return 0;
  char *text = NULL;
  FILE *m = open_memstream(&text, &len);
  if (m == NULL)
    return failf(x, KC_ENOMEM, "out of memory");
  json_t *v;
  json_array_foreach(msgs, i, v)
      fprintf(m, "%s%s", i ? ", " : (n > 1 ? "[" : ""), json_string_value(v));
  fputs(n > 1 ? "]" : "", m);
  fclose(m);
  failf(x, KC_EINVAL, "%s", text);
  free(text);
  return KC_EINVAL;
}

/* create -f FILE, or delete -f FILE: each document in turn, the failures gathered. */
static int flow_each_doc(run_ctx *x, bool create) {
  flow_kind k = kind_of(x->a);
  char *buf;
  size_t len;
  int rc = read_file(x, x->a->file ? x->a->file : "", "", &buf, &len);
  if (rc != 0)
    return rc;
  json_t *docs;
  char perr[512];
  rc = vc_yaml_docs_to_json(buf, len, &docs, perr, sizeof(perr));
  free(buf);
  if (rc != 0)
    return failf(x, rc, "%s", perr);
  json_t *errs = json_array();
  size_t i;
  json_t *d;
  json_array_foreach(docs, i, d) {
    const char *ns =
        vc_str(d, "metadata.namespace")[0] ? vc_str(d, "metadata.namespace") : "default";
    kc_ref ref = {"flow.volcano.sh",
                  "v1alpha1",
                  k.resource,
                  ns,
                  create ? NULL : vc_str(d, "metadata.name"),
                  NULL};
    vc_reply r;
    if (raw(x, create ? KC_CREATE : KC_DELETE, &ref, NULL, create ? d : NULL, &r) == 0) {
      printf("%s %s: %s/%s\n", create ? "Created" : "Deleted", k.kind, ns,
             vc_str(d, "metadata.name"));
    } else {
      json_array_append_new(errs, json_sprintf("%s %s %s/%s: %s", create ? "create" : "delete",
                                               k.kind, ns, vc_str(d, "metadata.name"), r.message));
    }
    vc_reply_clear(&r);
  }
  json_decref(docs);
  rc = fail_aggregate(x, errs);
  json_decref(errs);
  return rc;
}

static int flow_list(run_ctx *x) {
  flow_kind k = kind_of(x->a);
  kc_ref ref = {"flow.volcano.sh",
                "v1alpha1",
                k.resource,
                x->a->all_namespaces ? NULL : x->a->namespace,
                NULL,
                NULL};
  vc_reply r;
  int rc = call(x, KC_LIST, &ref, NULL, NULL, &r);
  if (rc == 0 && json_array_size(json_object_get(r.obj, "items")) == 0)
    printf("No resources found\n");
  else if (rc == 0)
    vc_print_flows(stdout, r.obj, k.with_phase, (int64_t)time(NULL));
  vc_reply_clear(&r);
  return rc;
}

static int flow_get(run_ctx *x) {
  flow_kind k = kind_of(x->a);
  if (x->a->name == NULL || !x->a->name[0])
    return failf(x, KC_EINVAL, "name is mandatory to get the particular %s details", x->a->group);
  kc_ref ref = {"flow.volcano.sh", "v1alpha1", k.resource, x->a->namespace, x->a->name, NULL};
  vc_reply r;
  int rc = call(x, KC_GET, &ref, NULL, NULL, &r);
  if (rc == 0) {
    json_t *one = json_pack("{s:[O]}", "items", r.obj);
    vc_print_flows(stdout, one, k.with_phase, (int64_t)time(NULL));
    json_decref(one);
  }
  vc_reply_clear(&r);
  return rc;
}

static int flow_delete(run_ctx *x) {
  flow_kind k = kind_of(x->a);
  if (x->a->file && x->a->file[0])
    return flow_each_doc(x, false);
  if (x->a->name == NULL || !x->a->name[0])
    return failf(x, KC_EINVAL, "%s name must be specified", x->a->group);
  kc_ref ref = {"flow.volcano.sh", "v1alpha1", k.resource, x->a->namespace, x->a->name, NULL};
  vc_reply r;
  int rc = call(x, KC_GET, &ref, NULL, NULL, &r);
  vc_reply_clear(&r);
  if (rc == 0 && (rc = call(x, KC_DELETE, &ref, NULL, NULL, &r)) == 0)
    printf("Deleted %s: %s/%s\n", k.kind, x->a->namespace, x->a->name);
  vc_reply_clear(&r);
  return rc;
}

static void print_detail(const vc_args *a, json_t *obj, flow_kind k) {
  json_object_del(json_object_get(obj, "metadata"), "managedFields");
  if (!vc_str(obj, "apiVersion")[0] || !vc_str(obj, "kind")[0]) {
    json_object_set_new(obj, "apiVersion", json_string("flow.volcano.sh/v1alpha1"));
    json_object_set_new(obj, "kind", json_string(k.kind));
  }
  if (strcmp(a->format, "json") == 0) {
    json_dumpf(obj, stdout, JSON_INDENT(2));
    printf("\n");
  } else if (strcmp(a->format, "yaml") == 0) {
    if (vc_json_to_yaml(stdout, obj) != 0)
      fprintf(stderr, "cannot write the object as YAML\n");
  } else {
    printf("Unsupported format: %s", a->format);
  }
}

static int flow_describe(run_ctx *x) {
  flow_kind k = kind_of(x->a);
  bool one = x->a->name && x->a->name[0];
  kc_ref ref = {"flow.volcano.sh",       "v1alpha1", k.resource, x->a->namespace,
                one ? x->a->name : NULL, NULL};
  vc_reply r;
  int rc = call(x, one ? KC_GET : KC_LIST, &ref, NULL, NULL, &r);
  if (rc == 0 && one) {
    print_detail(x->a, r.obj, k);
  } else if (rc == 0) {
    const json_t *items = json_object_get(r.obj, "items");
    size_t i, n = json_array_size(items);
    json_t *it;
    json_array_foreach(items, i, it) {
      print_detail(x->a, it, k);
      if (n != 1 && i < n - 1)
        printf("---------------------------------\n");
    }
  }
  vc_reply_clear(&r);
  return rc;
}

static int run(run_ctx *x) {
  switch (x->a->verb) {
  case VC_JOB_RUN:
    return job_run(x);
  case VC_JOB_LIST:
    return job_list(x);
  case VC_JOB_VIEW:
    return job_view(x);
  case VC_JOB_WHATIF:
    return job_whatif(x);
  case VC_JOB_SUSPEND:
    return job_command(x, "AbortJob", "suspend");
  case VC_JOB_RESUME:
    return job_command(x, "ResumeJob", "resume");
  case VC_JOB_DELETE:
    return job_delete(x, x->a->what[0] == '\0');
  case VC_QUEUE_CREATE:
    return queue_create(x);
  case VC_QUEUE_GET:
    return queue_get(x);
  case VC_QUEUE_LIST:
    return queue_list(x);
  case VC_QUEUE_OPERATE:
    return queue_operate(x);
  case VC_QUEUE_DELETE:
    return queue_delete(x);
  case VC_POD_LIST:
    return pod_list(x);
  case VC_FLOW_CREATE:
    return flow_each_doc(x, true);
  case VC_FLOW_LIST:
    return flow_list(x);
  case VC_FLOW_GET:
    return flow_get(x);
  case VC_FLOW_DELETE:
    return flow_delete(x);
  case VC_FLOW_DESCRIBE:
    return flow_describe(x);
  default:
    return failf(x, KC_EINVAL, "nothing to do");
  }
}

int main(int argc, char **argv) {
  vc_args a;
  char err[ERRLEN];
  const char *prog = vc_prog_name(argc > 0 ? argv[0] : NULL);
  if (strcmp(prog, "kubectl-vcctl") == 0)
    prog = "kubectl vcctl";
  if (vc_args_parse(argc, argv, NULL, &a, err, sizeof(err)) != 0) {
    fprintf(stderr, "Error: %s\nRun '%s --help' for usage.\n", err, prog);
    return 1;
  }
  if (a.verb == VC_HELP) {
    vc_usage(stdout, prog, &a);
    return 0;
  }
  if (a.verb == VC_VERSION) {
    printf("API Version: v1alpha1\nVersion: %s (kiln)\n", KILN_VERSION);
    return 0;
  }
  run_ctx x = {.a = &a};
  int rc = run(&x);
  vc_conn_close(x.conn);
  if (rc != 0) {
    printf("Failed to%s%s: %s\n", a.what[0] ? " " : "", a.what, x.err);
    return 255; /* os.Exit(-1) */
  }
  return 0;
}
