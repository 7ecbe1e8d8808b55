/* env (Volcano pkg/controllers/job/plugins/env): VK_TASK_INDEX and VC_TASK_INDEX in every
 * container and init container. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_plugin.h"
#include "kc_error.h"

static void env_add(json_t *ct, void *arg) {
  const char *idx = arg;
  json_t *env = ctl__json_child(ct, "env", true);
  json_array_append_new(env, json_pack("{s:s, s:s}", "name", "VK_TASK_INDEX", "value", idx));
  json_array_append_new(env, json_pack("{s:s, s:s}", "name", "VC_TASK_INDEX", "value", idx));
}

int ctl__env_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                        const Kiln__TaskSpec *t, int index) {
  char idx[16];
  snprintf(idx, sizeof(idx), "%d", index);
  ctl__each_container(pod, env_add, idx);
  return 0;
}

int ctl__env_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  ctl__plugin_mark(c, "env", true);
  return 0;
}

int ctl__env_job_delete(ctl_ctx *c, const Kiln__StringList *args) {
  ctl__plugin_mark(c, "env", false);
  return 0;
}
