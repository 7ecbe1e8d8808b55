/* mpi (Volcano distributed-framework/mpi): the ssh port ("mpijob-port") on every container
 * and init container, and on the master MPI_HOST, the comma-separated worker host names that
 * mpiexec --host takes. The svc and ssh plugins it implies provide the names and the keys. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_plugin.h"
#include "kc_error.h"
#include "kc_log.h"

typedef struct {
  const char *master, *worker;
  int64_t port;
} settings;

static const ctl_flag flags[] = {
    {"master", CTL_FLAG_STRING, offsetof(settings, master)},
    {"worker", CTL_FLAG_STRING, offsetof(settings, worker)},
    {"port", CTL_FLAG_INT, offsetof(settings, port)},
};

int ctl__mpi_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  ctl__plugin_mark(c, "mpi", true);
  return 0;
}

int ctl__mpi_job_delete(ctl_ctx *c, const Kiln__StringList *args) {
  ctl__plugin_mark(c, "mpi", false);
  return 0;
}

/* New string: the task's host names joined by ','; a fixed template hostname is one host
 * however many replicas there are. */
static char *task_hosts(const Kiln__Job *job, const Kiln__TaskSpec *t) {
  char host[CTL_NAME_MAX], sub[CTL_NAME_MAX];
  ctl__plugin_template_host(t, host, sizeof(host), sub, sizeof(sub));
  int32_t n = t->replicas > 0 ? (host[0] ? 1 : t->replicas) : 0;
  size_t cap = (size_t)n * (CTL_NAME_MAX * 3 + 1) + 1, len = 0;
  char *out = malloc(cap);
  if (!out)
    return NULL;
  out[0] = '\0';
  for (int32_t i = 0; i < n; i++) {
    char d[CTL_NAME_MAX * 3];
    ctl__domain_name_of(job, t, host, sub, (int)i, d, sizeof(d));
    int w = snprintf(out + len, cap - len, "%s%s", i ? "," : "", d);
    if (w < 0 || (size_t)w >= cap - len)
      break; /* cannot happen with the capacity above */
    len += (size_t)w;
  }
  return out;
}

int ctl__mpi_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                        const Kiln__TaskSpec *t, int index) {
  const Kiln__Job *job = c->v->job;
  settings s = {"master", "worker", 22};
  char err[256];
  /* A bad flag is logged inside and the values parsed so far stay (Volcano). */
  KC_IGNORE(
      ctl__flags_parse("mpi", flags, sizeof(flags) / sizeof(flags[0]), args, &s, err, sizeof(err)));
  char *hosts = NULL;
  if (t->name && strcmp(t->name, s.master) == 0) {
    int wi = ctl__task_index(job, s.worker);
    /* Volcano indexes the task list with -1 here and panics; a master without workers
     * simply gets no host list. */
    if (wi < 0)
      KC_ERROR("job %s doesn't have task %s", ctl__job_name(job), s.worker);
    else if (!(hosts = task_hosts(job, job->spec->tasks[wi])))
      return KC_ENOMEM;
  }
  for (int init = 1; init >= 0; init--) {
    size_t i;
    json_t *ct;
    json_array_foreach(ctl__pod_containers(pod, init), i, ct) {
      ctl__container_port(ct, "mpijob-port", s.port);
      if (hosts)
        ctl__container_env(ct, "MPI_HOST", hosts);
    }
  }
  free(hosts);
  return 0;
}
