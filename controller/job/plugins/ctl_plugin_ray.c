/* ray (Volcano distributed-framework/ray): the head container gets the GCS, dashboard and
 * client-server ports and the "ray start --head" command, worker containers "ray start
 * --address=<head>:<port>", and the job a Service <job>-head-svc in front of the head. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ctl_plugin.h"
#include "kc_error.h"
#include "kc_log.h"

typedef struct {
  const char *head, *head_container, *worker, *worker_container;
  int64_t port, dashboard_port, client_port;
} settings;

static const ctl_flag flags[] = {
    {"head", CTL_FLAG_STRING, offsetof(settings, head)},
    {"headContainer", CTL_FLAG_STRING, offsetof(settings, head_container)},
    {"worker", CTL_FLAG_STRING, offsetof(settings, worker)},
    {"workerContainer", CTL_FLAG_STRING, offsetof(settings, worker_container)},
    {"port", CTL_FLAG_INT, offsetof(settings, port)},
    {"dashboardPort", CTL_FLAG_INT, offsetof(settings, dashboard_port)},
    {"clientPort", CTL_FLAG_INT, offsetof(settings, client_port)},
};

static void parse(const Kiln__StringList *args, settings *s) {
  *s = (settings){"head", "head", "worker", "worker", 6379, 8265, 10001};
  char err[256];
  /* A bad flag is logged inside and the values parsed so far stay (Volcano). */
  KC_IGNORE(
      ctl__flags_parse("ray", flags, sizeof(flags) / sizeof(flags[0]), args, s, err, sizeof(err)));
}

static void head_svc_name(const Kiln__Job *job, char *out, size_t len) {
  snprintf(out, len, "%s-head-svc", ctl__job_name(job));
}

/* New: the (ClusterIP) Service selecting the head task's pods by port name. */
static json_t *head_service(const Kiln__Job *job, const settings *s) {
  char name[CTL_NAME_MAX + 16];
  head_svc_name(job, name, sizeof(name));
  return json_pack(
      "{s:s, s:s, s:o, s:{s:{s:s, s:s, s:s}, s:[{s:s, s:I, s:s, s:s}, {s:s, s:I, s:s, s:s}, "
      "{s:s, s:I, s:s, s:s}]}}",
      "apiVersion", "v1", "kind", "Service", "metadata", ctl__plugin_meta(job, name), "spec",
      "selector", CTL_KEY_JOB_NAME, ctl__job_name(job), CTL_KEY_JOB_NAMESPACE, ctl__job_ns(job),
      CTL_KEY_TASK_SPEC, s->head, "ports", "name", "gcs", "port", (json_int_t)(int32_t)s->port,
      "targetPort", "gcs", "protocol", "TCP", "name", "dashboard", "port",
      (json_int_t)(int32_t)s->dashboard_port, "targetPort", "dashboard", "protocol", "TCP", "name",
      "client-server", "port", (json_int_t)(int32_t)s->client_port, "targetPort", "client-server",
      "protocol", "TCP");
}

int ctl__ray_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  if (ctl__plugin_marked(c, "ray"))
    return 0;
  settings s;
  parse(args, &s);
  json_t *svc = head_service(c->v->job, &s);
  int rc = svc ? ctl__append(&c->plan->objects_create, svc) : KC_ENOMEM;
  if (!rc)
    ctl__plugin_mark(c, "ray", true);
  return rc;
}

int ctl__ray_job_delete(ctl_ctx *c, const Kiln__StringList *args) {
  if (!ctl__plugin_marked(c, "ray"))
    return 0;
  char name[CTL_NAME_MAX + 16];
  head_svc_name(c->v->job, name, sizeof(name));
  int rc = ctl__plugin_delete(c, "v1", "Service", name);
  if (!rc)
    ctl__plugin_mark(c, "ray", false);
  return rc;
}

static void set_command(json_t *ct, const char *line) {
  json_object_set_new(ct, "command", json_pack("[s, s, s]", "sh", "-c", line));
}

int ctl__ray_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                        const Kiln__TaskSpec *t, int index) {
  const Kiln__Job *job = c->v->job;
  settings s;
  parse(args, &s);
  int hi = ctl__task_index(job, s.head);
  if (hi < 0) {
    /* Volcano fails the pod's creation, so the job's sync fails and is retried. */
    KC_ERROR("job %s doesn't have head task %s", ctl__job_name(job), s.head);
    return KC_EINVAL;
  }
  const char *task = t->name ? t->name : "";
  char line[CTL_NAME_MAX * 3 + 160], addr[CTL_NAME_MAX * 3];
  size_t i;
  json_t *ct;
  json_array_foreach(ctl__pod_containers(pod, false), i, ct) {
    const char *cn = json_string_value(json_object_get(ct, "name"));
    cn = cn ? cn : "";
    if (strcmp(task, s.head) == 0 && strcmp(cn, s.head_container) == 0) {
      ctl__container_port(ct, "gcs", s.port);
      ctl__container_port(ct, "dashboard", s.dashboard_port);
      ctl__container_port(ct, "client-server", s.client_port);
      snprintf(line, sizeof(line),
               "ray start --head --block --dashboard-host=0.0.0.0 --port=%lld "
               "--dashboard-port=%lld --ray-client-server-port=%lld",
               (long long)s.port, (long long)s.dashboard_port, (long long)s.client_port);
      set_command(ct, line);
    }
    if (strcmp(task, s.worker) == 0 && strcmp(cn, s.worker_container) == 0) {
      ctl__domain_name(job, job->spec->tasks[hi], 0, addr, sizeof(addr));
      snprintf(line, sizeof(line), "ray start --block --address=%s:%lld", addr, (long long)s.port);
      set_command(ct, line);
    }
  }
  return 0;
}
