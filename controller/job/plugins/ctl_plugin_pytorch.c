/* pytorch (Volcano distributed-framework/pytorch): MASTER_ADDR, MASTER_PORT, WORLD_SIZE and
 * RANK in every container, the "pytorchjob-port" container port, and, when asked for, an
 * init container that holds a worker until the master's port answers. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ctl_plugin.h"
#include "kc_error.h"
#include "kc_log.h"

#define WAIT_CONTAINER "wait-for-master"

typedef struct {
  const char *master, *worker, *wait_image;
  int64_t port, wait_timeout;
  bool wait;
} settings;

static const ctl_flag flags[] = {
    {"master", CTL_FLAG_STRING, offsetof(settings, master)},
    {"worker", CTL_FLAG_STRING, offsetof(settings, worker)},
    {"port", CTL_FLAG_INT, offsetof(settings, port)},
    {"wait-master-enabled", CTL_FLAG_BOOL, offsetof(settings, wait)},
    {"wait-master-timeout", CTL_FLAG_INT, offsetof(settings, wait_timeout)},
    {"wait-master-image", CTL_FLAG_STRING, offsetof(settings, wait_image)},
};

static void parse(const Kiln__StringList *args, settings *s) {
  *s = (settings){"master", "worker", "busybox:1.36.1", 23456, 300, false};
  char err[256];
  /* A bad flag is logged inside and the values parsed so far stay (Volcano). */
  KC_IGNORE(ctl__flags_parse("pytorch", flags, sizeof(flags) / sizeof(flags[0]), args, s, err,
                             sizeof(err)));
}

int ctl__pytorch_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  ctl__plugin_mark(c, "pytorch", true);
  return 0;
}

int ctl__pytorch_job_delete(ctl_ctx *c, const Kiln__StringList *args) {
  ctl__plugin_mark(c, "pytorch", false);
  return 0;
}

/* WORLD_SIZE counts the master and worker tasks only: other tasks (a data loader, a
 * tensorboard) are not ranks. */
static int64_t world_size(const Kiln__Job *job, const settings *s) {
  int64_t n = 0;
  for (size_t i = 0; i < job->spec->n_tasks; i++) {
    const char *name = job->spec->tasks[i]->name ? job->spec->tasks[i]->name : "";
    if (strcmp(name, s->master) == 0 || strcmp(name, s->worker) == 0)
      n += job->spec->tasks[i]->replicas;
  }
  return n;
}

/* A POSIX sh loop that works in busybox, alpine or bash images: nc -z when there is one, else
 * bash's /dev/tcp (under timeout(1) when there is one), until the master answers or the
 * deadline passes. The host is a DNS name built from Kubernetes names, so it needs no quoting. */
static void wait_script(char *out, size_t len, const char *host, int64_t port, int64_t timeout) {
  snprintf(out, len,
           "host=%s; port=%lld; timeout=%lld; start=$(date +%%s); "
           "echo \"waiting for master $host:$port (timeout ${timeout}s)\"; "
           "while true; do "
           "if command -v nc >/dev/null 2>&1; then nc -z -w 2 \"$host\" \"$port\" && break; "
           "elif command -v timeout >/dev/null 2>&1; then "
           "timeout 2 sh -c \"echo > /dev/tcp/$host/$port\" 2>/dev/null && break; "
           "else (echo > /dev/tcp/$host/$port) 2>/dev/null && break; fi; "
           "now=$(date +%%s); if [ $((now - start)) -ge \"$timeout\" ]; then "
           "echo \"master $host:$port not ready after ${timeout}s\"; exit 1; fi; "
           "sleep 2; done; echo \"master $host:$port is ready\"",
           host, (long long)port, (long long)timeout);
}

static void add_wait_container(json_t *pod, const settings *s, const char *master_addr) {
  json_t *spec = json_object_get(pod, "spec");
  json_t *inits = ctl__pod_containers(pod, true);
  size_t i;
  json_t *ct;
  json_array_foreach(inits, i, ct) {
    const char *n = json_string_value(json_object_get(ct, "name"));
    if (n && strcmp(n, WAIT_CONTAINER) == 0)
      return; /* the template brings its own */
  }
  if (!inits) {
    inits = json_array();
    json_object_set_new(spec, "initContainers", inits);
  }
  char script[2048];
  wait_script(script, sizeof(script), master_addr, s->port, s->wait_timeout);
  json_array_append_new(inits,
                        json_pack("{s:s, s:s, s:[s, s, s], s:{}}", "name", WAIT_CONTAINER, "image",
                                  s->wait_image, "command", "sh", "-c", script, "resources"));
}

int ctl__pytorch_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                            const Kiln__TaskSpec *t, int index) {
  const Kiln__Job *job = c->v->job;
  settings s;
  parse(args, &s);
  int mi = ctl__task_index(job, s.master);
  if (mi < 0) {
    KC_ERROR("job %s doesn't have task %s", ctl__job_name(job), s.master);
    return 0;
  }
  const char *task = t->name ? t->name : "";
  bool is_worker = strcmp(task, s.worker) == 0, is_master = strcmp(task, s.master) == 0;
  char addr[CTL_NAME_MAX * 3], port[24], world[24], rank[24];
  ctl__domain_name(job, job->spec->tasks[mi], 0, addr, sizeof(addr));
  snprintf(port, sizeof(port), "%lld", (long long)s.port);
  snprintf(world, sizeof(world), "%lld", (long long)world_size(job, &s));
  snprintf(rank, sizeof(rank), "%d", is_worker ? index + 1 : 0);
  size_t i;
  json_t *ct;
  json_array_foreach(ctl__pod_containers(pod, false), i, ct) {
    ctl__container_port(ct, "pytorchjob-port", s.port);
    ctl__container_env(ct, "MASTER_ADDR", addr);
    ctl__container_env(ct, "MASTER_PORT", port);
    ctl__container_env(ct, "WORLD_SIZE", world);
    if (is_worker || is_master)
      ctl__container_env(ct, "RANK", rank);
  }
  if (s.wait && is_worker && !is_master)
    add_wait_container(pod, &s, addr);
  return 0;
}
