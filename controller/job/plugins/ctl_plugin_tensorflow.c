/* tensorflow (Volcano distributed-framework/tensorflow): TF_CONFIG, the cluster spec every
 * TensorFlow process reads, in every container: {"cluster": {ps, worker, chief, evaluator:
 * ["<host>:<port>", ...]}, "task": {"type", "index"}}. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_plugin.h"
#include "kc_error.h"

typedef struct {
  const char *ps, *worker, *chief, *evaluator;
  int64_t port;
} settings;

static const ctl_flag flags[] = {
    {"ps", CTL_FLAG_STRING, offsetof(settings, ps)},
    {"worker", CTL_FLAG_STRING, offsetof(settings, worker)},
    {"chief", CTL_FLAG_STRING, offsetof(settings, chief)},
    {"evaluator", CTL_FLAG_STRING, offsetof(settings, evaluator)},
    {"port", CTL_FLAG_INT, offsetof(settings, port)},
};

int ctl__tensorflow_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  ctl__plugin_mark(c, "tensorflow", true);
  return 0;
}

int ctl__tensorflow_job_delete(ctl_ctx *c, const Kiln__StringList *args) {
  ctl__plugin_mark(c, "tensorflow", false);
  return 0;
}

/* The role of a task: one of TensorFlow's four, or (an unknown task) its own name. */
static const char *role(const settings *s, const char *task) {
  if (strcmp(task, s->chief) == 0)
    return "chief";
  if (strcmp(task, s->worker) == 0)
    return "worker";
  if (strcmp(task, s->ps) == 0)
    return "ps";
  if (strcmp(task, s->evaluator) == 0)
    return "evaluator";
  return task;
}

/* New: the cluster object, keys in Go's struct order (ps, worker, chief, evaluator), a role
 * with no hosts left out (omitempty). A task takes the first role its name matches (Go's
 * switch), and a later task of the same role replaces an earlier one. */
static json_t *cluster_spec(const Kiln__Job *job, const settings *s) {
  const char *const roles[] = {s->ps, s->worker, s->chief, s->evaluator};
  const char *const keys[] = {"ps", "worker", "chief", "evaluator"};
  json_t *hosts[4] = {NULL, NULL, NULL, NULL};
  for (size_t ti = 0; ti < job->spec->n_tasks; ti++) {
    const Kiln__TaskSpec *t = job->spec->tasks[ti];
    size_t r = 0;
    while (r < 4 && strcmp(t->name ? t->name : "", roles[r]) != 0)
      r++;
    if (r == 4)
      continue;
    json_decref(hosts[r]);
    hosts[r] = json_array();
    char host[CTL_NAME_MAX], sub[CTL_NAME_MAX];
    ctl__plugin_template_host(t, host, sizeof(host), sub, sizeof(sub));
    for (int32_t i = 0; i < t->replicas; i++) {
      char d[CTL_NAME_MAX * 3], h[CTL_NAME_MAX * 3 + 24];
      ctl__domain_name_of(job, t, host, sub, (int)i, d, sizeof(d));
      snprintf(h, sizeof(h), "%s:%lld", d, (long long)s->port);
      json_array_append_new(hosts[r], json_string(h));
    }
  }
  json_t *cluster = json_object();
  for (size_t r = 0; r < 4; r++) {
    if (hosts[r] && json_array_size(hosts[r]))
      json_object_set_new(cluster, keys[r], hosts[r]);
    else
      json_decref(hosts[r]);
  }
  return cluster;
}

int ctl__tensorflow_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                               const Kiln__TaskSpec *t, int index) {
  const Kiln__Job *job = c->v->job;
  /* A stand-alone TensorFlow process needs no cluster. */
  if (job->spec->n_tasks == 1 && job->spec->tasks[0]->replicas == 1)
    return 0;
  settings s = {"ps", "worker", "chief", "evaluator", 2222};
  char err[256];
  /* A bad flag is logged inside and the values parsed so far stay (Volcano). */
  KC_IGNORE(ctl__flags_parse("tensorflow", flags, sizeof(flags) / sizeof(flags[0]), args, &s, err,
                             sizeof(err)));
  json_t *spec = json_pack("{s:o, s:{s:s, s:i}}", "cluster", cluster_spec(job, &s), "task", "type",
                           role(&s, t->name ? t->name : ""), "index", index);
  char *raw = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
  json_decref(spec);
  if (!raw)
    return KC_ENOMEM;
  size_t i;
  json_t *ct;
  json_array_foreach(ctl__pod_containers(pod, false), i, ct)
      ctl__container_env(ct, "TF_CONFIG", raw);
  free(raw);
  return 0;
}
