/* hcclrank (Volcano distributed-framework/hcclrank): the pod's rank in the HCCL (Ascend)
 * collective as the annotation hccl/rankIndex: the RANK env another plugin (pytorch) already
 * gave the pod, else the master's own index or, for a worker, the master replicas plus its
 * index. Nothing is created or marked for the job. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ctl_plugin.h"
#include "kc_error.h"

#define HCCL_RANK_KEY "hccl/rankIndex"

typedef struct {
  const char *master, *worker;
} settings;

static const ctl_flag flags[] = {
    {"master", CTL_FLAG_STRING, offsetof(settings, master)},
    {"worker", CTL_FLAG_STRING, offsetof(settings, worker)},
};

/* The first plain value of env name in the pod's containers, or NULL. Borrowed. */
static const char *pod_env(json_t *pod, const char *name) {
  size_t i, j;
  json_t *ct, *e;
  json_array_foreach(ctl__pod_containers(pod, false), i, ct) {
    json_array_foreach(json_object_get(ct, "env"), j, e) {
      const char *n = json_string_value(json_object_get(e, "name"));
      if (n && strcmp(n, name) == 0) {
        const char *v = json_string_value(json_object_get(e, "value"));
        return v ? v : "";
      }
    }
  }
  return NULL;
}

int ctl__hcclrank_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                             const Kiln__TaskSpec *t, int index) {
  const Kiln__Job *job = c->v->job;
  json_t *ann = ctl__pod_meta_map(pod, "annotations");
  const char *have = json_string_value(json_object_get(ann, HCCL_RANK_KEY));
  if (have && *have)
    return 0;
  const char *rank = pod_env(pod, "RANK");
  if (rank && *rank) {
    json_object_set_new(ann, HCCL_RANK_KEY, json_string(rank));
    return 0;
  }
  settings s = {"master", "worker"};
  char err[256];
  /* A bad flag is logged inside and the values parsed so far stay (Volcano). */
  KC_IGNORE(ctl__flags_parse("hcclrank", flags, sizeof(flags) / sizeof(flags[0]), args, &s, err,
                             sizeof(err)));
  const char *task = t->name ? t->name : "";
  int64_t r;
  if (strcmp(task, s.master) == 0) {
    r = index;
  } else if (strcmp(task, s.worker) == 0) {
    int mi = ctl__task_index(job, s.master);
    r = (mi < 0 ? 0 : job->spec->tasks[mi]->replicas) + (int64_t)index;
  } else {
    return 0;
  }
  char buf[24];
  snprintf(buf, sizeof(buf), "%lld", (long long)r);
  json_object_set_new(ann, HCCL_RANK_KEY, json_string(buf));
  return 0;
}
