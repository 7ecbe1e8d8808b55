/* The table of job plugins (Volcano pkg/controllers/job/plugins), one file each in
 * controller/plugins/, and the hooks that run them in spec order. Each records
 * "plugin-<name>" in status.controlledResources on add so that a second add is a no-op, and forgets
 * it on delete so that a restarted job gets fresh objects. The objects themselves go into the plan;
 * nothing here does I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "kc_error.h"
#include "plugins/ctl_plugin.h"

/* ---- the table ---- */

static const ctl_plugin plugins[] = {
    {"env", ctl__env_job_add, ctl__env_pod_create, NULL, ctl__env_job_delete},
    {"svc", ctl__svc_job_add, ctl__svc_pod_create, ctl__svc_job_update, ctl__svc_job_delete},
    {"ssh", ctl__ssh_job_add, ctl__ssh_pod_create, NULL, ctl__ssh_job_delete},
    {"pytorch", ctl__pytorch_job_add, ctl__pytorch_pod_create, NULL, ctl__pytorch_job_delete},
    {"tensorflow", ctl__tensorflow_job_add, ctl__tensorflow_pod_create, NULL,
     ctl__tensorflow_job_delete},
    {"mpi", ctl__mpi_job_add, ctl__mpi_pod_create, NULL, ctl__mpi_job_delete},
    {"ray", ctl__ray_job_add, ctl__ray_pod_create, NULL, ctl__ray_job_delete},
    {"hcclrank", NULL, ctl__hcclrank_pod_create, NULL, NULL},
};

const ctl_plugin *ctl__plugin_find(const char *name) {
  for (size_t i = 0; name && i < sizeof(plugins) / sizeof(plugins[0]); i++)
    if (strcmp(plugins[i].name, name) == 0)
      return &plugins[i];
  return NULL;
}

int ctl__plugins_job_add(ctl_ctx *c, char *errbuf, size_t len) {
  const Kiln__JobSpec *spec = c->v->job->spec;
  /* Check every name first so an unknown plugin leaves nothing half-created. */
  for (size_t i = 0; i < spec->n_plugins; i++)
    if (!ctl__plugin_find(spec->plugins[i]->key)) {
      snprintf(errbuf, len, "unable to get plugin %s", spec->plugins[i]->key);
      return KC_ENOENT;
    }
  ctl_plugin_use use[CTL_PLUGIN_USES_MAX];
  size_t n = ctl__plugins_used(spec, use, CTL_PLUGIN_USES_MAX);
  for (size_t i = 0; i < n; i++) {
    const ctl_plugin *p = ctl__plugin_find(use[i].name);
    c->errmsg[0] = '\0';
    int rc = p->on_job_add ? p->on_job_add(c, use[i].args) : 0;
    if (rc) {
      if (c->errmsg[0])
        snprintf(errbuf, len, "%s", c->errmsg);
      else
        snprintf(errbuf, len, "%s: %s", p->name, kc_strerror(rc));
      return rc;
    }
  }
  return 0;
}

int ctl__plugins_job_update(ctl_ctx *c) {
  ctl_plugin_use use[CTL_PLUGIN_USES_MAX];
  size_t n = ctl__plugins_used(c->v->job->spec, use, CTL_PLUGIN_USES_MAX);
  for (size_t i = 0; i < n; i++) {
    const ctl_plugin *p = ctl__plugin_find(use[i].name);
    int rc = p && p->on_job_update ? p->on_job_update(c, use[i].args) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

int ctl__plugins_job_delete(ctl_ctx *c) {
  ctl_plugin_use use[CTL_PLUGIN_USES_MAX];
  size_t n = ctl__plugins_used(c->v->job->spec, use, CTL_PLUGIN_USES_MAX);
  for (size_t i = 0; i < n; i++) {
    const ctl_plugin *p = ctl__plugin_find(use[i].name);
    int rc = p && p->on_job_delete ? p->on_job_delete(c, use[i].args) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

int ctl__plugins_pod_create(ctl_ctx *c, json_t *pod, const Kiln__TaskSpec *task, int index) {
  ctl_plugin_use use[CTL_PLUGIN_USES_MAX];
  size_t n = ctl__plugins_used(c->v->job->spec, use, CTL_PLUGIN_USES_MAX);
  for (size_t i = 0; i < n; i++) {
    const ctl_plugin *p = ctl__plugin_find(use[i].name);
    int rc = p && p->on_pod_create ? p->on_pod_create(c, use[i].args, pod, task, index) : 0;
    if (rc)
      return rc;
  }
  return 0;
}
