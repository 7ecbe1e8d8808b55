/* tensorflow (Volcano distributed-framework/tensorflow): TF_CONFIG, the cluster spec every
 * TensorFlow process reads, in every container: {"cluster": {ps, worker, chief, evaluator:
 * ["<host>:<port>", ...]}, "task": {"type", "index"}}. */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
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

/* TF_CONFIG goes into every pod of the Job and names every host of its roles: its size grows
 * with replicas, and a pod object holds about 1.5 MiB in all. A cluster past this many bytes
 * fails the plugin with a message instead of building it for every pod. */
#define TF_CLUSTER_MAX (128u * 1024u)

/* The bytes the cluster's host list of task t would take, at most (each host no longer than
 * its last index's), saturating. */
static uint64_t role_bytes(const Kiln__Job *job, const Kiln__TaskSpec *t, const settings *s) {
  if (t->replicas <= 0)
    return 0;
  char host[CTL_NAME_MAX], sub[CTL_NAME_MAX], d[CTL_NAME_MAX * 3];
  ctl__plugin_template_host(t, host, sizeof(host), sub, sizeof(sub));
  ctl__domain_name_of(job, t, host, sub, (int)(t->replicas - 1), d, sizeof(d));
  uint64_t each = strlen(d) + 24 + (uint64_t)(s->port < 0 ? 1 : 0);
  return each * (uint64_t)t->replicas;
}

/* The index of the role a task named `name` takes (Go's switch: the first that matches), or 4. */
static size_t role_of(const settings *s, const char *name) {
  const char *const roles[] = {s->ps, s->worker, s->chief, s->evaluator};
  size_t r = 0;
  while (r < 4 && strcmp(name, roles[r]) != 0)
    r++;
  return r;
}

/* New: the cluster object, keys in Go's struct order (ps, worker, chief, evaluator), a role
 * with no hosts left out (omitempty). A task takes the first role its name matches (Go's
 * switch), and a later task of the same role replaces an earlier one. NULL with *too_big when
 * the hosts would pass TF_CLUSTER_MAX. */
static json_t *cluster_spec(const Kiln__Job *job, const settings *s, bool *too_big) {
  const char *const keys[] = {"ps", "worker", "chief", "evaluator"};
  const Kiln__TaskSpec *last[4] = {NULL, NULL, NULL, NULL};
  for (size_t ti = 0; ti < job->spec->n_tasks; ti++) {
    size_t r = role_of(s, job->spec->tasks[ti]->name ? job->spec->tasks[ti]->name : "");
    if (r < 4)
      last[r] = job->spec->tasks[ti];
  }
  uint64_t total = 0;
  for (size_t r = 0; r < 4; r++)
    total += last[r] ? role_bytes(job, last[r], s) : 0;
  *too_big = total > TF_CLUSTER_MAX;
  if (*too_big)
    return NULL;
  json_t *cluster = json_object();
  for (size_t r = 0; cluster && r < 4; r++) {
    const Kiln__TaskSpec *t = last[r];
    if (!t || t->replicas <= 0)
      continue;
    json_t *hosts = json_array();
    char host[CTL_NAME_MAX], sub[CTL_NAME_MAX];
    ctl__plugin_template_host(t, host, sizeof(host), sub, sizeof(sub));
    for (int32_t i = 0; hosts && i < t->replicas; i++) {
      char d[CTL_NAME_MAX * 3], h[CTL_NAME_MAX * 3 + 24];
      ctl__domain_name_of(job, t, host, sub, (int)i, d, sizeof(d));
      snprintf(h, sizeof(h), "%s:%lld", d, (long long)s->port);
      json_array_append_new(hosts, json_string(h));
    }
    json_object_set_new(cluster, keys[r], hosts);
  }
  return cluster;
}

/* The cluster's JSON text, made once per sync (c->tf_cluster) and shared by the Job's pods. */
static const char *cluster_text(ctl_ctx *c, const settings *s, int *rc) {
  if (c->tf_cluster)
    return c->tf_cluster;
  bool too_big = false;
  json_t *cluster = cluster_spec(c->v->job, s, &too_big);
  if (too_big) {
    snprintf(c->errmsg, sizeof(c->errmsg),
             "tensorflow: the cluster of %" PRIu64 " pods does not fit in TF_CONFIG (at most %u "
             "bytes)",
             (uint64_t)ctl__total_replicas(c->v->job), TF_CLUSTER_MAX);
    *rc = KC_ETOOBIG;
    return NULL;
  }
  c->tf_cluster = cluster ? json_dumps(cluster, JSON_COMPACT) : NULL;
  json_decref(cluster);
  *rc = c->tf_cluster ? 0 : KC_ENOMEM;
  return c->tf_cluster;
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
  int rc;
  const char *cluster = cluster_text(c, &s, &rc);
  if (!cluster)
    return rc;
  /* {"cluster":...,"task":{"type":...,"index":...}}: the role is a task name (a DNS label)
   * or a fixed word, so it needs no escaping. */
  char *raw = NULL;
  if (asprintf(&raw, "{\"cluster\":%s,\"task\":{\"type\":\"%s\",\"index\":%d}}", cluster,
               role(&s, t->name ? t->name : ""), index) < 0)
    return KC_ENOMEM;
  size_t i;
  json_t *ct;
  json_array_foreach(ctl__pod_containers(pod, false), i, ct)
      ctl__container_env(ct, "TF_CONFIG", raw);
  free(raw);
  return 0;
}
