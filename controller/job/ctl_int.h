/* Internal interfaces between the files of the controller core (second tier: ctl__). */
#ifndef CTL_INT_H
#define CTL_INT_H

#include <string.h>

#include "ctl_job.h"
#include "kc_error.h"

/* Annotation and label keys (Volcano batch/v1alpha1 labels.go, scheduling constants). */
#define CTL_KEY_TASK_SPEC     "volcano.sh/task-spec"
#define CTL_KEY_TASK_INDEX    "volcano.sh/task-index"
#define CTL_KEY_JOB_NAME      "volcano.sh/job-name"
#define CTL_KEY_JOB_NAMESPACE "volcano.sh/job-namespace"
#define CTL_KEY_QUEUE_NAME    "volcano.sh/queue-name"
#define CTL_KEY_JOB_VERSION   "volcano.sh/job-version"
#define CTL_KEY_TEMPLATE_UID  "volcano.sh/template-uid"
#define CTL_KEY_RETRY_COUNT   "volcano.sh/job-retry-count"
#define CTL_KEY_GROUP_NAME    "scheduling.k8s.io/group-name"
#define CTL_KEY_OUT_OF_SYNC   "volcano.sh/controller-out-of-sync"
#define CTL_KEY_NUMA_POLICY   "volcano.sh/numa-topology-policy"
#define CTL_KEY_FORWARDING    "volcano.sh/job-forwarding"
#define CTL_KEY_PARTITION_ID  "volcano.sh/partition-id"
#define CTL_JOB_API_VERSION   "batch.volcano.sh/v1alpha1"

typedef struct {
  const ctl_job_view *v;
  const ctl_request *req;
  ctl_plan *plan;
  ctl_action action;
  bool initiated;     /* status was just initialised (phase was empty) */
  bool blocked;       /* initiation failed: keep the phase, create nothing */
  char errmsg[192];   /* why an effect failed, for the event that reports it */
  char *tf_cluster;   /* the tensorflow plugin's cluster JSON, made once per sync (owned) */
  size_t built_bytes; /* the pods built this sync, by their templates' size (the burst) */
} ctl_ctx;

/* A state's status update (Volcano UpdateStatusFn): true when the phase changed. */
typedef bool (*ctl_update_fn)(ctl_ctx *c, ctl_status *st);

typedef enum { CTL_RETAIN_NONE = 0, CTL_RETAIN_SOFT } ctl_retain;

/* The operations the phase machine drives (Volcano state/factory.go KillJob, KillTarget,
 * SyncJob), injected so the table can be tested on its own. */
typedef struct {
  int (*kill_job)(ctl_ctx *c, ctl_retain retain, ctl_update_fn fn);
  int (*kill_target)(ctl_ctx *c, ctl_update_fn fn);
  int (*sync_job)(ctl_ctx *c, ctl_update_fn fn);
} ctl_state_ops;

/* The real operations, in ctl_sync.c (which runs the table): the table's file calls nothing
 * of the sync's, so the two do not call each other. */
extern const ctl_state_ops ctl__real_ops;
/* Volcano's KillJob and KillTarget (ctl_state.c). */
KC_NODISCARD int ctl__kill_job(ctl_ctx *c, ctl_retain retain, ctl_update_fn fn);
KC_NODISCARD int ctl__kill_target(ctl_ctx *c, ctl_update_fn fn);

/* Runs one (phase, action) cell of the table. */
KC_NODISCARD int ctl__state_execute(ctl_ctx *c, ctl_phase phase, ctl_action action,
                                    const ctl_state_ops *ops);
/* The single place a job's phase changes; logs old -> new. */
void ctl__set_phase(ctl_ctx *c, ctl_status *st, ctl_phase to);

/* Shared by kill and sync (ctl_state.c) and the sync operation (ctl_sync.c). */
void ctl__count_pod(ctl_status *st, const ctl_pod *p);
void ctl__reset_counts(ctl_status *st);
void ctl__apply_fn(ctl_ctx *c, ctl_status *st, ctl_update_fn fn);
KC_NODISCARD int ctl__sync_job(ctl_ctx *c, ctl_update_fn fn);

/* Policy lookup (Volcano applyPolicies). Sets *action and *delay (seconds, 0 none). */
void ctl__apply_policies(const Kiln__Job *job, const ctl_request *req, ctl_action *action,
                         int64_t *delay);

/* Plan helpers; all return 0 or KC_ENOMEM. */
int ctl__event(ctl_plan *p, ctl_event_type type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fills p->failure_reason/message: the event a failing sync leaves for the shell. */
void ctl__failure(ctl_plan *p, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
KC_NODISCARD int ctl__delete_pod(ctl_plan *p, const char *name, const char *reason);
KC_NODISCARD int ctl__cancel(ctl_plan *p, ctl_scope scope, const char *name, uint32_t events);
KC_NODISCARD int ctl__append(json_t **arr, json_t *obj); /* steals obj */
KC_NODISCARD int ctl__status_copy(ctl_status *dst, const ctl_status *src);
void ctl__append_condition(ctl_status *st, ctl_phase phase, int64_t t);

/* Totals over the spec. */
/* n + 1, or INT32_MAX when n is: the status's version and retry count, which a status written
 * by another hand may hold at the top already. */
static inline int32_t ctl__inc_sat(int32_t n) {
  return n < INT32_MAX ? n + 1 : n;
}
int32_t ctl__total_replicas(const Kiln__Job *job);
int32_t ctl__task_min_available(const Kiln__TaskSpec *t);
int32_t ctl__total_task_min_available(const Kiln__Job *job);
int32_t ctl__job_min_available(const Kiln__Job *job);

/* Volcano's webhook names a task without a name default<index> when the Job is created;
 * Kiln has no webhook, so the core sees every Job through a shallow copy whose unnamed
 * tasks carry that name. *use is the job to read: in itself when every task is named
 * (nothing allocated), else nj->job. Returns 0 or KC_ENOMEM. */
typedef struct {
  Kiln__Job job;
  Kiln__JobSpec spec;
  Kiln__TaskSpec *tasks;
  Kiln__TaskSpec **ptrs;
  char (*names)[32];
  size_t nnamed; /* tasks that were given a name */
} ctl_named_job;
KC_NODISCARD int ctl__name_tasks(const Kiln__Job *in, ctl_named_job *nj, const Kiln__Job **use);
void ctl__named_job_close(ctl_named_job *nj);
bool ctl__task_unnamed(const Kiln__TaskSpec *t);
const Kiln__TaskSpec *ctl__find_task(const Kiln__Job *job, const char *name);
/* The partition a RestartPartition request targets: the partition-id label of the request's
 * pod, or (the pod already gone) its index over the task's partitionSize; -1 when none. */
KC_NODISCARD int ctl__request_partition(const ctl_ctx *c);

const char *ctl__job_name(const Kiln__Job *job);
const char *ctl__job_ns(const Kiln__Job *job);
const char *ctl__job_uid(const Kiln__Job *job);
/* Value of key in a protobuf-c string map (labels, annotations), or NULL. */
#define CTL_MAP_GET(entries, n, k)                                                                 \
  ({                                                                                               \
    const char *v_ = NULL;                                                                         \
    for (size_t i_ = 0; i_ < (n); i_++)                                                            \
      if ((entries)[i_]->key && strcmp((entries)[i_]->key, (k)) == 0) {                            \
        v_ = (entries)[i_]->value;                                                                 \
        break;                                                                                     \
      }                                                                                            \
    v_;                                                                                            \
  })
json_t *ctl__owner_ref(const Kiln__Job *job); /* new */
const char *ctl__queue(const Kiln__Job *job);
/* Volcano util.CalTaskRequests: a pod's quota usage (GetPodQuotaUsage, as minResources counts
 * it) times `times`, as a ResourceList (new), or NULL when out of memory. */
json_t *ctl__pod_requests_times(const json_t *pod_spec, int32_t times);

/* Job plugins (nginx-style constant table). Callbacks are idempotent; pod is the pod
 * under construction (borrowed, mutated in place). */
typedef struct {
  const char *name;
  int (*on_job_add)(ctl_ctx *c, const Kiln__StringList *args);
  int (*on_pod_create)(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                       const Kiln__TaskSpec *task, int index);
  int (*on_job_update)(ctl_ctx *c, const Kiln__StringList *args);
  int (*on_job_delete)(ctl_ctx *c, const Kiln__StringList *args);
} ctl_plugin;

const ctl_plugin *ctl__plugin_find(const char *name);
/* The plugin hooks over every plugin the job names. Unknown plugin names make *_add return
 * KC_ENOENT with the name in errbuf. */
KC_NODISCARD int ctl__plugins_job_add(ctl_ctx *c, char *errbuf, size_t len);
KC_NODISCARD int ctl__plugins_job_update(ctl_ctx *c);
KC_NODISCARD int ctl__plugins_job_delete(ctl_ctx *c);
KC_NODISCARD int ctl__plugins_pod_create(ctl_ctx *c, json_t *pod, const Kiln__TaskSpec *task,
                                         int index);

#endif
