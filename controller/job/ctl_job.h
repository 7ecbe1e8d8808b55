/* The decision core of the job controller (Volcano pkg/controllers/job, reference section 2).
 *
 * ctl_job_sync() is a pure function: it reads a view of one Job and the objects around it
 * (pods, PodGroup, PVCs, queue, pending Commands, the clock) plus the request that
 * triggered the sync, and fills a plan: the new status, the PodGroup to create or update,
 * the PVCs, pods and plugin objects to create, the pods to delete, the events to record,
 * the Commands to delete and the delayed actions to arm or cancel. It never touches the
 * network; randomness (generated names, SSH keys) comes through the injected ctl_ops, so
 * a unit test can drive every row of the phase machine with hand-built objects.
 *
 * The shell executes a plan in this order: delete the Commands (stop on failure: a command
 * runs at most once), write the Job patch, create the PVCs, the plugin objects and the
 * PodGroup, patch-then-delete the pods, create the pods, write the status, delete the
 * PodGroup and plugin objects, record the events, then arm/cancel the delayed actions. A
 * failed write requeues the key with backoff; the next sync recomputes from the stores. */
#ifndef CTL_JOB_H
#define CTL_JOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s.pb-c.h"
#include "volcano.pb-c.h"
#include "kc_error.h"

typedef enum {
  CTL_PHASE_PENDING = 0,
  CTL_PHASE_ABORTING,
  CTL_PHASE_ABORTED,
  CTL_PHASE_RUNNING,
  CTL_PHASE_RESTARTING,
  CTL_PHASE_COMPLETING,
  CTL_PHASE_COMPLETED,
  CTL_PHASE_TERMINATING,
  CTL_PHASE_TERMINATED,
  CTL_PHASE_FAILED,
  CTL_PHASE_COUNT
} ctl_phase;

typedef enum {
  CTL_ACT_NONE = 0, /* unset: policies decide */
  CTL_ACT_SYNC_JOB,
  CTL_ACT_ENQUEUE_JOB,
  CTL_ACT_ABORT_JOB,
  CTL_ACT_RESTART_JOB,
  CTL_ACT_RESTART_TASK,
  CTL_ACT_RESTART_POD,
  CTL_ACT_TERMINATE_JOB,
  CTL_ACT_COMPLETE_JOB,
  CTL_ACT_RESUME_JOB,
  CTL_ACT_RESTART_PARTITION, /* the pods of the target pod's partition (partitionPolicy) */
  CTL_ACT_COUNT
} ctl_action;

typedef enum {
  CTL_EV_NONE = 0,
  CTL_EV_ANY, /* "*" */
  CTL_EV_POD_FAILED,
  CTL_EV_POD_EVICTED,
  CTL_EV_POD_PENDING,
  CTL_EV_POD_RUNNING,
  CTL_EV_UNKNOWN, /* "Unknown": the PodGroup went Unknown (JobUnknown) */
  CTL_EV_TASK_COMPLETED,
  CTL_EV_TASK_FAILED,
  CTL_EV_JOB_UPDATED,
  CTL_EV_OUT_OF_SYNC,
  CTL_EV_COMMAND_ISSUED,
  CTL_EV_COUNT
} ctl_event;

typedef enum {
  CTL_POD_PENDING = 0,
  CTL_POD_RUNNING,
  CTL_POD_SUCCEEDED,
  CTL_POD_FAILED,
  CTL_POD_UNKNOWN,
  CTL_POD_PHASE_COUNT
} ctl_pod_phase;

const char *ctl_phase_name(ctl_phase p);
/* "" and unknown strings parse as Pending (Volcano treats an empty phase as Pending). */
ctl_phase ctl_phase_parse(const char *s);
const char *ctl_action_name(ctl_action a);
ctl_action ctl_action_parse(const char *s); /* CTL_ACT_NONE when unknown */
const char *ctl_event_name(ctl_event e);
ctl_event ctl_event_parse(const char *s); /* CTL_EV_NONE when unknown */
const char *ctl_pod_phase_name(ctl_pod_phase p);

#define CTL_NAME_MAX 254
#define CTL_UID_MAX  64

/* The part of a pod the controller decides on. */
typedef struct {
  char name[CTL_NAME_MAX];
  char uid[CTL_UID_MAX];
  char task[CTL_NAME_MAX]; /* annotation volcano.sh/task-spec */
  int index;               /* volcano.sh/task-index, or parsed from the name; -1 unknown */
  ctl_pod_phase phase;
  bool has_exit_code;
  int exit_code;       /* containerStatuses[0].state.terminated.exitCode */
  int64_t deletion_ts; /* Unix seconds; 0 when not being deleted */
  int64_t creation_ts; /* Unix seconds */
  int version;         /* volcano.sh/job-version; -1 when absent */
  int restarts;        /* sum of container restartCount */
  bool ready;          /* every container ready */
  bool out_of_sync;    /* annotation volcano.sh/controller-out-of-sync */
  bool has_partition;
  int partition; /* label volcano.sh/partition-id */
} ctl_pod;

/* Fills *out from a core/v1 Pod (borrowed). Returns 0 or KC_EINVAL. */
KC_NODISCARD int ctl_pod_from_json(const json_t *pod, ctl_pod *out);
/* The same from a Pod in Kubernetes' protobuf (borrowed), field for field. */
KC_NODISCARD int ctl_pod_from_pb(const K8s__Pod *pod, ctl_pod *out);
/* A pod's annotation or label in protobuf (borrowed), NULL when absent. */
const char *ctl_pb_annotation(const K8s__ObjectMeta *m, const char *key);
const char *ctl_pb_label(const K8s__ObjectMeta *m, const char *key);

typedef struct {
  const char *name;
  int32_t value;
} ctl_priority;

/* Effects the core needs but must not perform itself (STYLE 8). */
typedef struct {
  /* n random characters from [0-9a-z] into buf (n+1 bytes). Returns 0, or a negative kc
   * error when the random source fails (buf is then ""): never a predictable name. */
  int (*rand_str)(void *ctx, char *buf, size_t n);
  /* A new RSA key pair: *priv a PEM private key, *pub an OpenSSH "ssh-rsa ..." line, both
   * new (free()). Returns 0 or a negative kc error (KC_EIO: no random material; KC_EAGAIN:
   * none ready yet, made off the loop thread: the sync requeues the job shortly instead). */
  int (*ssh_keygen)(void *ctx, char **priv, char **pub);
  void *ctx;
} ctl_ops;

/* A source of random bytes: fills buf with n bytes and returns 0, or returns a negative kc
 * error. The default effects take one as their ctx (NULL: OpenSSL's RAND_bytes), so that a
 * test can make the source fail. */
typedef struct {
  int (*bytes)(void *arg, unsigned char *buf, size_t n);
  void *arg;
} ctl_random;

/* Real randomness and keys (OpenSSL); for the shell. */
extern const ctl_ops ctl_default_ops;

/* What triggered a sync (Volcano apis.Request). Strings are borrowed. */
typedef struct {
  ctl_event event;
  ctl_action action; /* explicit action (Command, fired delayed action), or NONE */
  bool has_exit_code;
  int exit_code;
  const char *task;
  const char *pod;
  const char *job_uid; /* NULL: not checked */
  bool has_job_version;
  int job_version;
  bool delayed; /* a delayed action whose timer fired */
} ctl_request;

/* Everything borrowed; the view is read-only. */
typedef struct {
  const Kiln__Job *job;
  const ctl_pod *pods;
  size_t npods;
  const Kiln__PodGroup *podgroup; /* NULL: none yet */
  const char *const *pvcs;        /* names of PVCs that exist in the namespace */
  size_t npvcs;
  bool queue_exists;
  bool queue_has_children; /* another queue names it as parent: Jobs need a leaf queue */
  const char *queue_state; /* status.state; NULL or "" counts as Open */
  bool queue_extend_clusters;
  const ctl_priority *priorities;
  size_t npriorities;
  Kiln__Command *const *commands; /* Commands targeting this job, oldest first */
  size_t ncommands;
  int64_t now; /* Unix seconds */
  const ctl_ops *ops;
  size_t create_burst; /* pods built in one sync at most; 0: 1,000 (a fuzz target lowers it) */
} ctl_job_view;

typedef struct {
  char name[64];
  int32_t count[CTL_POD_PHASE_COUNT];
} ctl_task_count;

typedef struct {
  ctl_phase phase;
  int64_t at; /* Unix seconds of the transition */
} ctl_condition;

/* Job status as the core computes it. Owns tasks, conds and controlled. */
typedef struct {
  ctl_phase phase;
  char reason[128];
  char message[512];
  int64_t last_transition; /* Unix seconds, 0 unset */
  int32_t pending, running, succeeded, failed, terminating, unknown;
  int32_t min_available, version, retry_count;
  bool has_running_duration;
  int64_t running_duration; /* seconds */
  ctl_task_count *tasks;
  size_t ntasks;
  ctl_condition *conds;
  size_t nconds;
  json_t *controlled; /* object name -> string */
} ctl_status;

void ctl_status_init(ctl_status *st);
void ctl_status_close(ctl_status *st);
/* From a decoded status (borrowed, may be NULL). Returns 0 or KC_ENOMEM. */
KC_NODISCARD int ctl_status_from_pb(ctl_status *st, const Kiln__JobStatus *pb);
/* New JSON object: the body of .status. */
json_t *ctl_status_to_json(const ctl_status *st);
ctl_task_count *ctl_status_task(ctl_status *st, const char *task); /* finds or adds */

typedef enum { CTL_EVENT_NORMAL = 0, CTL_EVENT_WARNING } ctl_event_type;

typedef struct {
  ctl_event_type type;
  char reason[64];
  char *message; /* owned */
} ctl_k8s_event;

typedef struct {
  char name[CTL_NAME_MAX];
  char reason[64];
} ctl_pod_delete;

/* Scope of a delayed-action cancel: every timer of the job, of one task, or of one pod
 * (optionally only timers armed by the given events, a bitmask of 1u << ctl_event). */
typedef enum { CTL_SCOPE_JOB = 0, CTL_SCOPE_TASK, CTL_SCOPE_POD } ctl_scope;

typedef struct {
  ctl_scope scope;
  char name[CTL_NAME_MAX]; /* task or pod name; empty for the job scope */
  uint32_t events;         /* 0 = any */
} ctl_cancel;

typedef struct {
  int64_t at; /* Unix seconds */
  ctl_action action;
  ctl_event event;
  char task[CTL_NAME_MAX];
  char pod[CTL_NAME_MAX];
} ctl_delayed;

typedef struct {
  ctl_action action; /* what was executed */
  ctl_phase old_phase;
  bool status_changed;
  ctl_status status; /* the new status (always filled) */
  /* Merge patch of the Job (generated PVC names in spec.volumes; the default<i> names of
   * unnamed tasks, spec.tasks whole with metadata.resourceVersion as a precondition; the
   * forwarding annotation), or NULL. The shell must apply it, and see the result in its cache,
   * before the next sync of the job, or a second claim name would be generated. */
  json_t *job_patch;
  json_t *podgroup; /* PodGroup to create, or to update when podgroup_update */
  bool podgroup_update;
  bool podgroup_delete;
  char podgroup_name[CTL_NAME_MAX];
  json_t *pvcs;           /* array of PersistentVolumeClaims to create */
  json_t *objects_create; /* array: Service, ConfigMap, Secret, NetworkPolicy */
  /* Objects to replace (the svc ConfigMap, rewritten on every sync of a started job as
   * Volcano's OnJobUpdate does); write only when the live data differs. */
  json_t *objects_update;
  json_t *objects_delete; /* array of {apiVersion, kind, name} */
  json_t *pods_create;    /* array of complete Pods */
  ctl_pod_delete *pods_delete;
  size_t npods_delete;
  ctl_k8s_event *events;
  size_t nevents;
  char (*commands_delete)[CTL_NAME_MAX];
  size_t ncommands_delete;
  /* A delayed action to arm, keyed by (job, pod or task, event). Re-arming a key that is
   * armed keeps the first deadline (a Pending pod reports PodPending on every update).
   * When it fires, the shell replays it as a request with .action and .delayed set. */
  bool has_delayed;
  ctl_delayed delayed;
  ctl_cancel *cancels;
  size_t ncancels;
  int64_t requeue_after; /* seconds, 0: none */
  /* When ctl_job_sync fails: the Warning event that says why (failure_reason "" when it has
   * none). The shell records it, drops the rest of the plan and retries with backoff. */
  char failure_reason[64];
  char failure_message[256];
} ctl_plan;

void ctl_plan_init(ctl_plan *p);
void ctl_plan_close(ctl_plan *p);

/* Decides what to do for one request. view and req are borrowed; plan must be initialised
 * and is filled (its old content kept). Returns 0, KC_EINVAL for a view without a job, or
 * KC_ENOMEM. A Job the controller cannot act on is not an error: the plan carries a Warning
 * event and a status reason. */
KC_NODISCARD int ctl_job_sync(const ctl_job_view *view, const ctl_request *req, ctl_plan *plan);

/* Formats a Go duration ("1h2m3s", "0s") into buf. */
void ctl_duration_format(int64_t secs, char *buf, size_t len);
/* Parses a Go duration ("10m", "1h30m", "90s", "1.5h") to seconds (rounded down), through
 * kc_go_duration; a negative one is refused. Returns 0 or KC_EPARSE. */
KC_NODISCARD int ctl_duration_parse(const char *s, int64_t *secs);

#endif
