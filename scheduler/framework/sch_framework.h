/* The scheduling framework: snapshot types, the session, the plugin and action API.
 *
 * Model (Volcano pkg/scheduler/framework): every period the shell builds a snapshot
 * (sch_snapshot_new, from the same protobuf Snapshot the dump/replay tool uses), opens a
 * session on it with a configuration, runs the configured actions and closes the session,
 * which returns pure data: bind requests, PodGroup/Queue status, events and per-task
 * "why not" reasons. The session never does I/O.
 *
 * Plugins and actions are constant tables (nginx modules): a plugin's open() registers
 * callbacks for the extension points it implements; the session calls them by tier with
 * Volcano's rules (see each sch_session_* dispatcher below). A callback is registered only
 * when the plugin's enableXxx switch for that point is on (all are on by default).
 *
 * Indexes, not pointers, link the objects: tasks, jobs, nodes and queues live in arrays in
 * the snapshot and refer to each other by int32_t index (-1 for none), so a snapshot of
 * 150,000 pods is a handful of allocations.
 *
 * Lifetimes: the snapshot borrows the Kiln__Snapshot message (strings, labels, taints,
 * tolerations are read from it), so the message must outlive the snapshot. A session
 * borrows and *mutates* its snapshot (task states, node accounting): build a new snapshot
 * for every session. A result borrows strings from the snapshot. */
#ifndef SCH_FRAMEWORK_H
#define SCH_FRAMEWORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_strmap.h"
#include "pod.pb-c.h"
#include "sch_resource.h"
#include "snapshot.pb-c.h"
#include "volcano.pb-c.h"
#include "kc_error.h"

/* ------------------------------------------------------------------------------------ */
/* Snapshot                                                                             */
/* ------------------------------------------------------------------------------------ */

/* Volcano's own scheduling gate and opt-in annotation (scheduling v1beta1
 * QueueAllocationGateKey): the SchedulingGatesQueueAdmission feature lifts it once the queue
 * has room; Kiln does not (yet), but counts it as Volcano does (sch_task.queue_gated_only). */
#define SCH_QUEUE_ALLOCATION_GATE "scheduling.volcano.sh/queue-allocation-gate"

/* Volcano TaskStatus. */
#define SCH_TASK_STATUS_MAP(XX)                                                                    \
  XX(PENDING, "Pending")                                                                           \
  XX(ALLOCATED, "Allocated")                                                                       \
  XX(PIPELINED, "Pipelined")                                                                       \
  XX(BINDING, "Binding")                                                                           \
  XX(BOUND, "Bound")                                                                               \
  XX(RUNNING, "Running")                                                                           \
  XX(RELEASING, "Releasing")                                                                       \
  XX(SUCCEEDED, "Succeeded")                                                                       \
  XX(FAILED, "Failed")                                                                             \
  XX(UNKNOWN, "Unknown")

typedef enum {
#define XX(name, str) SCH_TASK_##name,
  SCH_TASK_STATUS_MAP(XX)
#undef XX
      SCH_TASK__COUNT
} sch_task_status;

const char *sch_task_status_str(sch_task_status s);
/* Volcano AllocatedStatus: Bound, Binding, Running, Allocated. */
bool sch_task_status_allocated(sch_task_status s);

/* PodGroup phases. */
typedef enum {
  SCH_PG_PENDING = 0,
  SCH_PG_INQUEUE,
  SCH_PG_RUNNING,
  SCH_PG_UNKNOWN,
  SCH_PG_COMPLETED,
} sch_pg_phase;

const char *sch_pg_phase_str(sch_pg_phase p);
/* "Pending" etc. -> phase; unknown or NULL strings read as Pending. */
sch_pg_phase sch_pg_phase_parse(const char *s);

typedef struct sch_task {
  const Kiln__Pod *pod; /* borrowed from the snapshot message */
  int32_t job;          /* -1: a pod of another scheduler (counts on its node only) */
  int32_t node;         /* -1 while unassigned */
  /* Intrusive list of the tasks on one node (indexes; -1 ends). */
  int32_t node_prev, node_next;
  sch_task_status status;
  int32_t priority;         /* pod spec.priority */
  sch_resource resreq;      /* what it holds once running (Volcano Resreq) */
  sch_resource init_resreq; /* what must fit to place it (Volcano InitResreq) */
  bool best_effort;         /* no request at all */
  /* spec.schedulingGates is not empty (Volcano SchGated): never placed, whatever the gate
   * (scheduling.volcano.sh/queue-allocation-gate included: Kiln does not lift it). */
  bool gated;
  /* Its only gate is scheduling.volcano.sh/queue-allocation-gate (Volcano
   * HasOnlyVolcanoSchedulingGate): a pod waiting for queue room, not for someone else, so
   * its request counts against the queue like an ungated pod's (sch_job_deduct_gated). */
  bool queue_gated_only;
  /* Index into the session's reason table of why it was not placed, -1 if none. */
  int32_t why;
  /* The node-order score of the node the allocate action chose (the replay prints it);
   * scored is false when no scoring happened (one feasible node, no node-order plugin). */
  bool scored;
  double score;
} sch_task;

typedef struct sch_node {
  const Kiln__Node *node; /* borrowed */
  const char *name;       /* borrowed */
  sch_resource allocatable;
  sch_resource capability;
  sch_resource idle;      /* allocatable - used */
  sch_resource used;      /* every task on it, including releasing ones */
  sch_resource releasing; /* tasks being deleted: free soon */
  sch_resource pipelined; /* tasks promised to it this session, not yet placed */
  int64_t max_pods;       /* allocatable pods */
  int32_t ntasks;         /* tasks on it (not counting pipelined) */
  int32_t task_head;      /* first task on it, -1 none */
  /* Kept by the task list (pipelined tasks included) so that scoring never walks it:
   * the sum of init_resreq, and the same with kube-scheduler's non-zero defaults for cpu
   * and memory. */
  sch_resource requested;
  int64_t nonzero_milli_cpu, nonzero_memory;
  bool ready;
  bool unschedulable;
} sch_node;

/* A sub-group of a job (Volcano SubJobInfo): the tasks one subGroupPolicy of the PodGroup
 * selects (labelSelector) with the same values of its matchLabelKeys. Built with the snapshot
 * for the jobs whose PodGroup has a subGroupPolicy; the tasks no policy selects make the
 * job's default sub-group (policy -1, minimum 0). */
typedef struct sch_subjob {
  int32_t job;
  int32_t policy;        /* index in spec.subGroupPolicy; -1: the default sub-group */
  const char *key;       /* "<policy name>-<values>", owned by the snapshot */
  int32_t match_index;   /* the first matchLabelKeys value as a number (else 0): the order */
  int32_t min_available; /* subGroupSize (default 1) */
  int32_t *tasks;        /* task indexes, owned by the snapshot */
  int32_t ntasks;
} sch_subjob;

typedef struct sch_job {
  const char *key;                 /* "ns/name", owned by the snapshot */
  const char *namespace;           /* borrowed */
  const char *name;                /* borrowed or owned by the snapshot */
  const Kiln__PodGroup *pod_group; /* borrowed; NULL for a shadow job */
  bool shadow;                     /* a pod without PodGroup: minMember 1 */
  int32_t queue;                   /* index into snapshot queues; -1: it names a missing
                                      queue, and no action schedules it */
  int32_t priority;                /* PriorityClass value of the PodGroup */
  int32_t min_available;
  bool has_min_resources;
  sch_resource min_resources;
  int64_t creation_time; /* Unix seconds */
  sch_pg_phase phase;    /* the session updates it (enqueue) */
  int32_t *tasks;        /* indexes into snapshot tasks, borrowed from the snapshot */
  int32_t ntasks;
  int32_t count[SCH_TASK__COUNT]; /* tasks per status, kept by sch_job_set_status */
  sch_resource allocated;         /* resreq of tasks in allocated statuses */
  sch_resource total_request;     /* resreq of all tasks */
  int32_t pending_best_effort;    /* Pending tasks with no request */
  int32_t gated;                  /* Pending tasks with scheduling gates */
  sch_resource gated_resreq;      /* their resreq, but not queue_gated_only tasks' */
  sch_subjob *subjobs;            /* owned by the snapshot; NULL without subGroupPolicy */
  int32_t nsubjobs;
  /* Session state. */
  bool invalid;          /* failed JobValid: skipped by the actions */
  int32_t fit_message;   /* reason-table index of the aggregated fit error, -1 none */
  int32_t queue_message; /* reason index of "queue ... insufficient", -1 none */
  int32_t why_message;   /* reason index of the actionable explanation (sch_why.c), -1 none */
  bool why_too_big;      /* it says a pod fits no node even when empty */
  /* For the job metrics: the drf plugin's last dominant share (job_share), whether the gang
   * plugin found the job not ready at close (a retry, job_retry_counts), and the tasks it
   * found missing then (unschedule_task_count: 0 when ready, -1 when gang did not look). */
  bool has_share;
  double share;
  bool retried;
  int32_t unready;
} sch_job;

typedef struct sch_queue {
  const char *name;         /* borrowed, or a static "default" for the made-up one */
  const Kiln__Queue *queue; /* borrowed; NULL when created because it was missing */
  int32_t weight;           /* >= 1 */
  bool has_capability;
  sch_resource capability;
  sch_resource guarantee;
  sch_resource deserved;
  bool reclaimable;
  bool open; /* state Open (or unset) */
  int32_t priority;
  int64_t creation_time;
  /* Set by the capacity plugin: the queue's limit (INT64_MAX in a dimension it leaves
   * unlimited), for the queue_real_capacity metrics. */
  bool has_real_capability;
  sch_resource real_capability;
  /* Set by the queue plugins as Volcano's update their queue metrics: with has_share, the
   * session's last share and the queue's request and inqueue resources (proportion for the
   * queues with jobs, capacity for all); has_weight: proportion reports the weight;
   * overused: -1 when never asked, else the last Overused answer. */
  bool has_share;
  double share;
  sch_resource request, inqueue;
  bool has_weight;
  int8_t overused;
} sch_queue;

typedef struct sch_snapshot_options {
  const char *const *scheduler_names; /* pods whose schedulerName is one of these */
  size_t nscheduler_names;            /* 0: {"volcano"} */
  const char *default_queue;          /* NULL: "default" */
} sch_snapshot_options;

typedef struct sch_snapshot {
  const Kiln__Snapshot *msg; /* borrowed */
  sch_node *nodes;
  int32_t nnodes;
  sch_task *tasks;
  int32_t ntasks;
  sch_job *jobs;
  int32_t njobs;
  sch_queue *queues;
  int32_t nqueues;
  const char *scalar_names[SCH_MAX_SCALARS]; /* borrowed from msg */
  int nscalars;
  sch_resource total_allocatable; /* of the ready, schedulable nodes */
  kc_strmap node_index;           /* name -> index + 1 */
  kc_strmap job_index;            /* "ns/name" -> index + 1 */
  kc_strmap queue_index;          /* name -> index + 1 */
  kc_strmap priority_class_index; /* name -> PriorityClass (borrowed) */
  int32_t default_priority;       /* the globalDefault class value, or 0 */
  /* Inter-pod affinity and spread counts (sch_interpod.c), shared by the predicates and
   * nodeorder plugins of the session on this snapshot: NULL until one of them asks. */
  struct sch_ipa *interpod;
  int32_t interpod_refs;
  bool interpod_none; /* asked, and no pod has a term */
  /* Dynamic Resource Allocation (sch_dra.c): made by the predicates plugin when enabled; it
   * outlives the session so that the shell writes the claims of the pods it binds. */
  struct sch_dra *dra;
  /* The DRA state the snapshot built to count each node's devices per class
   * (sch_dra_count.c); the predicates plugin takes it as dra when DRA is on, so that the
   * devices' selectors run once. */
  struct sch_dra *dra_counted;
  /* The HyperNode tree (sch_hypernode.h), always built: with no HyperNode it is the cluster
   * top alone, holding every node. */
  struct sch_hntree *hntree;
  /* The volume predicates (sch_volume.c): made by the predicates plugin when one is enabled;
   * it outlives the session so that the shell binds the volumes of the pods it binds. */
  struct sch_vol *vol;
  /* Private storage. */
  int32_t *task_slots;
  char **owned;
  size_t nowned, cap_owned;
} sch_snapshot;

/* Builds a snapshot from msg (borrowed: it must outlive the snapshot). Pods join their
 * job through group_name; a pod of ours without one gets a shadow job (keyed by its owner
 * UID or its own UID, minMember 1, default queue); pods of other schedulers only count
 * on their nodes; a PodGroup naming a missing queue gets queue -1 (never scheduled, and
 * its condition says why); the default queue is made up when missing. Returns 0 and a *new*
 * snapshot, or KC_ENOMEM. */
KC_NODISCARD int sch_snapshot_new(const Kiln__Snapshot *msg, const sch_snapshot_options *opt,
                                  sch_snapshot **out);
void sch_snapshot_free(sch_snapshot *snap);

/* Lookups: index or -1. */
int32_t sch_snapshot_node(const sch_snapshot *snap, const char *name);
int32_t sch_snapshot_job(const sch_snapshot *snap, const char *ns_name);
int32_t sch_snapshot_queue(const sch_snapshot *snap, const char *name);
/* Scalar slot of a resource name, -1 if no object in the snapshot uses it. */
int sch_snapshot_scalar(const sch_snapshot *snap, const char *name);

/* kube-scheduler's non-zero requests: a pod without a cpu or memory request counts as this
 * much when nodes are scored. */
#define SCH_NONZERO_MILLI_CPU 100
#define SCH_NONZERO_MEMORY    (200LL * 1024 * 1024)

/* Volcano NodeInfo.FutureIdle: idle + releasing - pipelined. */
void sch_node_future_idle(const sch_node *n, sch_resource *out);

/* "40 cpu, 64Gi memory, 2 nvidia.com/gpu": the dimensions in dims (SCH_DIM_* bits; 0: the
 * ones r has) as an operator writes them (sch_why.c); "nothing" when none. */
void sch_resource_human(const sch_snapshot *snap, const sch_resource *r, unsigned dims, char *buf,
                        size_t len);

/* Job counters (Volcano JobInfo): ready = allocated statuses + Succeeded; waiting =
 * Pipelined; valid = Pending + allocated statuses + Succeeded + Pipelined. */
int32_t sch_job_ready_num(const sch_job *j);
int32_t sch_job_waiting_num(const sch_job *j);
int32_t sch_job_valid_num(const sch_job *j);
int32_t sch_job_pending_best_effort_num(const sch_snapshot *snap, const sch_job *j);
/* Adds the job's tasks in allocated statuses to *allocated and *request, its Pending ones
 * to *request (the queue plugins' accounting); returns how many are allocated. */
int32_t sch_job_tally(const sch_snapshot *snap, const sch_job *j, sch_resource *allocated,
                      sch_resource *request);
/* Volcano DeductSchGatedResources: r less the resreq of the job's gated tasks (but those
 * gated only by the queue-allocation gate), per dimension and never below zero. What an
 * admitted job holds in its queue (capacity, proportion, overcommit), so that gated pods do
 * not keep other jobs out. */
void sch_job_deduct_gated(const sch_job *j, sch_resource *r);

/* ------------------------------------------------------------------------------------ */
/* Configuration                                                                        */
/* ------------------------------------------------------------------------------------ */

/* Extension points that have an enable switch in the configuration file. */
#define SCH_EXT_MAP(XX)                                                                            \
  XX(JOB_ORDER, "enableJobOrder")                                                                  \
  XX(QUEUE_ORDER, "enableQueueOrder")                                                              \
  XX(TASK_ORDER, "enableTaskOrder")                                                                \
  XX(PREDICATE, "enablePredicate")                                                                 \
  XX(BEST_NODE, "enableBestNode")                                                                  \
  XX(NODE_ORDER, "enableNodeOrder")                                                                \
  XX(JOB_READY, "enableJobReady")                                                                  \
  XX(JOB_PIPELINED, "enableJobPipelined")                                                          \
  XX(JOB_STARVING, "enableJobStarving")                                                            \
  XX(JOB_ENQUEUED, "enableJobEnqueued")                                                            \
  XX(PREEMPTABLE, "enablePreemptable")                                                             \
  XX(RECLAIMABLE, "enableReclaimable")                                                             \
  XX(PREEMPTIVE, "enablePreemptive")                                                               \
  XX(OVERUSED, "enabledOverused")                                                                  \
  XX(ALLOCATABLE, "enabledAllocatable")                                                            \
  XX(CLUSTER_ORDER, "enabledClusterOrder")                                                         \
  XX(HIERARCHY, "enableHierarchy")                                                                 \
  XX(TARGET_JOB, "enableTargetJob")                                                                \
  XX(RESERVED_NODES, "enableReservedNodes")                                                        \
  XX(VICTIM, "enabledVictim")                                                                      \
  XX(HYPERNODE_ORDER, "enabledHyperNodeOrder")                                                     \
  XX(SUBJOB_READY, "enabledSubJobReady")                                                           \
  XX(SUBJOB_PIPELINED, "enabledSubJobPipelined")                                                   \
  XX(SUBJOB_ORDER, "enabledSubJobOrder")                                                           \
  XX(HYPERNODE_GRADIENT, "enabledHyperNodeGradient")

typedef enum {
#define XX(name, key) SCH_EXT_##name,
  SCH_EXT_MAP(XX)
#undef XX
      SCH_EXT__COUNT
} sch_ext;

/* Plugin or action arguments, flattened to strings ("a.b: 1" for nested maps). */
typedef struct sch_arg {
  char *key;
  char *value;
} sch_arg;

typedef struct sch_args {
  sch_arg *items;
  size_t n;
} sch_args;

/* Borrowed value or NULL. */
const char *sch_args_get(const sch_args *a, const char *key);
/* The value parsed, or def when absent or unparsable (logged). */
int64_t sch_args_int(const sch_args *a, const char *key, int64_t def);
double sch_args_double(const sch_args *a, const char *key, double def);
bool sch_args_bool(const sch_args *a, const char *key, bool def);
/* key names a comma list of resources ("nvidia.com/gpu, example.com/foo"): for each one some
 * object of snap uses, weights[slot] = the argument "<key>.<name>" (1 when absent or negative)
 * and scored[slot] = true (binpack.resources, hypernode.binpack.resources). */
void sch_args_resource_weights(const sch_args *args, const char *key, const sch_snapshot *snap,
                               int64_t *weights, bool *scored);
/* Frees every key and value and empties a. */
void sch_args_free(sch_args *a);
/* dst becomes an owned copy of src (an absent value copied as ""); KC_ENOMEM leaves dst empty. */
int sch_args_copy(sch_args *dst, const sch_args *src);

struct sch_plugin;
struct sch_action;

typedef struct sch_plugin_conf {
  const struct sch_plugin *plugin; /* from the registry */
  uint32_t enabled;                /* bit SCH_EXT_x set: that switch is on */
  bool has_enable[SCH_EXT__COUNT]; /* the file said it (for round trips) */
  sch_args args;
} sch_plugin_conf;

typedef struct sch_tier {
  sch_plugin_conf *plugins;
  size_t nplugins;
} sch_tier;

typedef struct sch_action_conf {
  char *name;
  sch_args args;
} sch_action_conf;

typedef struct sch_conf {
  const struct sch_action **actions; /* in execution order */
  size_t nactions;
  sch_tier *tiers;
  size_t ntiers;
  sch_action_conf *configurations; /* per-action arguments */
  size_t nconfigurations;
  /* Actions the file lists that Volcano has and Kiln does not build (owned names): they
   * were skipped, each with an error in the log. */
  char **skipped;
  size_t nskipped;
  /* Plugins the file lists that kiln-scheduler does not have (owned names): skipped, as
   * Volcano skips a plugin it cannot find, each named once in the log when the file loads. */
  char **skipped_plugins;
  size_t nskipped_plugins;
  /* Plugin arguments no kiln-scheduler plugin reads, as "plugin: key" (owned): kept in the
   * plugin's args (they change nothing) and named once in the log when the file loads. */
  char **ignored_args;
  size_t nignored_args;
  /* Action arguments (`configurations`) that change nothing in kiln-scheduler, as
   * "action: key" (owned): ones its action does not read, and ones Volcano reads for a
   * behaviour Kiln does not build, with the value given; each named once in the log. */
  char **ignored_action_args;
  size_t nignored_action_args;
  /* The `metrics` section (Volcano's map of strings: type, address, interval, ...), kept as
   * given; the shell reads nodes' load from that source for the usage plugin (sch_usage.c). */
  sch_args metrics;
} sch_conf;

/* ------------------------------------------------------------------------------------ */
/* Session                                                                              */
/* ------------------------------------------------------------------------------------ */

typedef struct sch_session sch_session;

/* What one session hands the next through the shell: a plugin keeps nothing of its own
 * between sessions (Volcano keeps such things in package variables), so a session is a
 * function of its snapshot and options, and a replay decides as the live session did. The
 * session starts from sch_session_options.carry; sch_result.carry is what the shell gives
 * the next session. */
typedef struct sch_carry {
  int64_t rescheduling_last_run; /* Unix seconds the rescheduling strategies last ran; -1 */
} sch_carry;

#define SCH_CARRY_INIT                                                                             \
  { -1 }

/* The stages a session times when it has a clock (Volcano's scheduling_stage_duration):
 * one node search of a task (Predicate), one scoring of its feasible nodes (Scoring). */
typedef enum { SCH_STAGE_PREDICATE, SCH_STAGE_SCORING, SCH_STAGE__COUNT } sch_stage;

#define SCH_HIST_MAX_BOUNDS 32

/* Observations in milliseconds counted into buckets: counts[i] those <= bounds[i] (and above
 * bounds[i - 1]), counts[nbounds] those above every bound. */
typedef struct sch_hist {
  uint64_t counts[SCH_HIST_MAX_BOUNDS + 1];
  uint64_t n;
  double sum;
} sch_hist;

/* An HTTP client the shell lends the session (the extender plugin): post sends body (len
 * bytes, JSON) to url and waits at most timeout_ms; it returns the HTTP status and a *new*
 * *resp (the body, *resp_len bytes; the caller frees it), or a negative KC_E* with a message
 * in err. It blocks the calling thread: the shell runs sessions off its event loop. */
typedef struct sch_http {
  int (*post)(void *ctx, const char *url, const char *body, size_t len, int64_t timeout_ms,
              char **resp, size_t *resp_len, char *err, size_t errlen);
  void *ctx;
} sch_http;

typedef struct sch_session_options {
  int percentage_nodes_to_find;         /* 0: adaptive (Volcano) */
  int minimum_percentage_nodes_to_find; /* 5 */
  int minimum_feasible_nodes;           /* 100 */
  int64_t now;                          /* Unix seconds; 0: the snapshot's time       */
  const char *session_uid;              /* transitionID; NULL: from the snapshot time */
  sch_carry carry;                      /* from the session before; SCH_CARRY_INIT    */
  /* A monotonic clock in nanoseconds, for the timing metrics only (plugin open and close,
   * the stages); NULL: nothing is timed (the replay, the tests). No decision reads it. */
  uint64_t (*clock_ns)(void);
  /* The stages' bucket bounds in milliseconds, increasing (at most SCH_HIST_MAX_BOUNDS). */
  const double *stage_bounds;
  size_t nstage_bounds;
  /* For the extender plugin; NULL: its calls fail as unreachable (the replay, the tests). */
  const sch_http *http;
} sch_session_options;

#define SCH_SESSION_OPTIONS_DEFAULT                                                                \
  { 0, 5, 100, 0, NULL, SCH_CARRY_INIT, NULL, NULL, 0, NULL }

/* Votes of the tri-state extension points (JobPipelined, JobEnqueueable). */
enum { SCH_REJECT = -1, SCH_ABSTAIN = 0, SCH_PERMIT = 1 };

/* Predicate results. */
enum {
  SCH_FIT = 0,
  SCH_UNSCHEDULABLE = 1, /* the node could take the task if something changed */
  SCH_UNRESOLVABLE = 2,  /* preemption would not help (affinity, taint, ...) */
};

#define SCH_FIT_MAX_REASONS 4

/* Why one task does not fit on one node: reason ids from sch_session_reason(). */
typedef struct sch_fit {
  int n;
  int32_t reasons[SCH_FIT_MAX_REASONS];
} sch_fit;

/* Adds a reason id (ignored past SCH_FIT_MAX_REASONS or when already present). */
void sch_fit_add(sch_fit *f, int32_t reason);

/* Interns a reason string for this session and returns its id (>= 0), or KC_ENOMEM.
 * Kube-scheduler's wording, so that aggregated messages read the same:
 * "Insufficient cpu", "node(s) had untolerated taint {gpu: true}", ... */
int32_t sch_session_reason(sch_session *ssn, const char *reason);
int32_t sch_session_reasonf(sch_session *ssn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The string of a reason id (borrowed, valid until the session closes). */
const char *sch_session_reason_str(const sch_session *ssn, int32_t id);

/* JobValid result: pass, or fail with a PodGroup condition reason and message. */
typedef struct sch_valid {
  bool pass;
  char reason[64];
  char message[256];
} sch_valid;

/* Callback types. Every callback gets the session and the ctx its plugin registered. */
typedef int (*sch_job_order_fn)(sch_session *ssn, void *ctx, const sch_job *l, const sch_job *r);
typedef int (*sch_queue_order_fn)(sch_session *ssn, void *ctx, const sch_queue *l,
                                  const sch_queue *r);
typedef int (*sch_task_order_fn)(sch_session *ssn, void *ctx, const sch_task *l, const sch_task *r);
/* SCH_FIT, or SCH_UNSCHEDULABLE/SCH_UNRESOLVABLE with reasons added to *why. */
typedef int (*sch_predicate_fn)(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n,
                                sch_fit *why);
typedef double (*sch_node_order_fn)(sch_session *ssn, void *ctx, const sch_task *t,
                                    const sch_node *n);
/* Adds each node's score into scores[i] (same order as nodes). */
typedef void (*sch_batch_node_order_fn)(sch_session *ssn, void *ctx, const sch_task *t,
                                        const int32_t *nodes, size_t n, double *scores);
/* Fills *out and returns true when it has an opinion (Volcano: non-nil ValidateResult). */
typedef bool (*sch_job_valid_fn)(sch_session *ssn, void *ctx, const sch_job *j, sch_valid *out);
typedef bool (*sch_job_bool_fn)(sch_session *ssn, void *ctx, const sch_job *j);
/* SCH_PERMIT, SCH_ABSTAIN or SCH_REJECT. */
typedef int (*sch_job_vote_fn)(sch_session *ssn, void *ctx, const sch_job *j);
typedef void (*sch_job_event_fn)(sch_session *ssn, void *ctx, const sch_job *j);
typedef bool (*sch_queue_bool_fn)(sch_session *ssn, void *ctx, const sch_queue *q);
typedef bool (*sch_allocatable_fn)(sch_session *ssn, void *ctx, const sch_queue *q,
                                   const sch_task *t);
/* Victim selection: candidates are task indexes; write the chosen subset into victims
 * (capacity ncandidates) and its size into *nvictims, and return true; or return false to
 * abstain. */
typedef bool (*sch_victims_fn)(sch_session *ssn, void *ctx, const sch_task *preemptor,
                               const int32_t *candidates, size_t ncandidates, int32_t *victims,
                               size_t *nvictims);
/* Gang-aware eviction (Volcano UnifiedEvictableFn and EvictionContext): the gangpreempt and
 * gangreclaim actions ask once per domain which of their ordered candidates may go. Only
 * plugins that register this take part (no fallback to the task-level callbacks). */
typedef enum { SCH_EVICT_GANG_PREEMPT, SCH_EVICT_GANG_RECLAIM } sch_eviction_kind;

typedef struct sch_eviction_ctx {
  sch_eviction_kind kind;
  int32_t job;          /* the starving job */
  const sch_task *task; /* its pending demand as one task (the sum of their requests) */
  const char *domain;   /* the HyperNode whose nodes are searched; "" the whole cluster */
} sch_eviction_ctx;

/* As sch_victims_fn, for an eviction context. */
typedef bool (*sch_unified_evictable_fn)(sch_session *ssn, void *ctx, const sch_eviction_ctx *ec,
                                         const int32_t *candidates, size_t ncandidates,
                                         int32_t *victims, size_t *nvictims);
/* Victims chosen among the candidates without a preemptor (Volcano VictimTasksFn: the
 * rescheduling plugin's strategies, for shuffle): write them into out (capacity n). */
typedef void (*sch_victim_tasks_fn)(sch_session *ssn, void *ctx, const int32_t *cands, size_t n,
                                    int32_t *out, size_t *nout);
/* Event handlers (Volcano EventHandler AllocateFunc/DeallocateFunc): called after a task
 * is allocated/pipelined, or deallocated/evicted, in a statement. */
typedef void (*sch_task_event_fn)(sch_session *ssn, void *ctx, const sch_task *t);

/* Registration, from a plugin's open(). Each stores (fn, ctx) under the plugin being
 * opened, in its tier; it is a no-op when that plugin's switch for the point is off.
 * Returns 0 or KC_ENOMEM. */
KC_NODISCARD int sch_add_job_order_fn(sch_session *ssn, sch_job_order_fn fn, void *ctx);
KC_NODISCARD int sch_add_queue_order_fn(sch_session *ssn, sch_queue_order_fn fn, void *ctx);
KC_NODISCARD int sch_add_task_order_fn(sch_session *ssn, sch_task_order_fn fn, void *ctx);
KC_NODISCARD int sch_add_predicate_fn(sch_session *ssn, sch_predicate_fn fn, void *ctx);
KC_NODISCARD int sch_add_node_order_fn(sch_session *ssn, sch_node_order_fn fn, void *ctx);
KC_NODISCARD int sch_add_batch_node_order_fn(sch_session *ssn, sch_batch_node_order_fn fn,
                                             void *ctx);
KC_NODISCARD int sch_add_job_valid_fn(sch_session *ssn, sch_job_valid_fn fn, void *ctx);
KC_NODISCARD int sch_add_job_ready_fn(sch_session *ssn, sch_job_bool_fn fn, void *ctx);
KC_NODISCARD int sch_add_job_pipelined_fn(sch_session *ssn, sch_job_vote_fn fn, void *ctx);
KC_NODISCARD int sch_add_job_starving_fn(sch_session *ssn, sch_job_bool_fn fn, void *ctx);
KC_NODISCARD int sch_add_job_enqueueable_fn(sch_session *ssn, sch_job_vote_fn fn, void *ctx);
KC_NODISCARD int sch_add_job_enqueued_fn(sch_session *ssn, sch_job_event_fn fn, void *ctx);
KC_NODISCARD int sch_add_overused_fn(sch_session *ssn, sch_queue_bool_fn fn, void *ctx);
KC_NODISCARD int sch_add_allocatable_fn(sch_session *ssn, sch_allocatable_fn fn, void *ctx);
/* Whether queue q may take resources from other queues for t (reclaim). */
KC_NODISCARD int sch_add_preemptive_fn(sch_session *ssn, sch_allocatable_fn fn, void *ctx);
KC_NODISCARD int sch_add_preemptable_fn(sch_session *ssn, sch_victims_fn fn, void *ctx);
KC_NODISCARD int sch_add_reclaimable_fn(sch_session *ssn, sch_victims_fn fn, void *ctx);
KC_NODISCARD int sch_add_unified_evictable_fn(sch_session *ssn, sch_unified_evictable_fn fn,
                                              void *ctx);
KC_NODISCARD int sch_add_victim_tasks_fn(sch_session *ssn, sch_victim_tasks_fn fn, void *ctx);
KC_NODISCARD int sch_add_event_handler(sch_session *ssn, sch_task_event_fn allocate,
                                       sch_task_event_fn deallocate, void *ctx);

/* Dispatchers, with Volcano's tier rules (session_plugins.go):
 *  - order fns: in tier/plugin order, the first non-zero answer wins (negative: l first);
 *    then creation time, then key/uid;
 *  - predicate: every registered predicate must pass (the first failure is returned);
 *  - node order: the sum of every plugin's score (batch and per node);
 *  - job valid: the first plugin that fails the job decides;
 *  - job ready, allocatable, preemptive: every plugin must agree;
 *  - job pipelined, job enqueueable: a Reject anywhere is final; inside a tier, a Permit
 *    ends the search at that tier; no vote at all is a yes;
 *  - job starving: the first tier with an opinion decides; none is a no;
 *  - overused: any plugin says yes;
 *  - victim tasks: the union of every plugin's victims;
 *  - preemptable/reclaimable: the victims are the intersection of the choices of the
 *    plugins that vote in the first tier where any plugin votes (possibly empty). */
int sch_session_job_order(sch_session *ssn, const sch_job *l, const sch_job *r);
int sch_session_queue_order(sch_session *ssn, const sch_queue *l, const sch_queue *r);
int sch_session_task_order(sch_session *ssn, const sch_task *l, const sch_task *r);
int sch_session_predicate(sch_session *ssn, const sch_task *t, const sch_node *n, sch_fit *why);
/* Scores nodes[0..n) for t into scores (zeroed first). */
void sch_session_node_scores(sch_session *ssn, const sch_task *t, const int32_t *nodes, size_t n,
                             double *scores);
bool sch_session_job_valid(sch_session *ssn, const sch_job *j, sch_valid *out);
bool sch_session_job_ready(sch_session *ssn, const sch_job *j);
bool sch_session_job_pipelined(sch_session *ssn, const sch_job *j);
bool sch_session_job_starving(sch_session *ssn, const sch_job *j);
bool sch_session_job_enqueueable(sch_session *ssn, const sch_job *j);
void sch_session_job_enqueued(sch_session *ssn, const sch_job *j);
bool sch_session_overused(sch_session *ssn, const sch_queue *q);
bool sch_session_allocatable(sch_session *ssn, const sch_queue *q, const sch_task *t);
bool sch_session_preemptive(sch_session *ssn, const sch_queue *q, const sch_task *t);
/* Victims out (capacity n); returns their count, or a negative KC_E*. */
KC_NODISCARD int sch_session_preemptable(sch_session *ssn, const sch_task *preemptor,
                                         const int32_t *cands, size_t n, int32_t *victims);
KC_NODISCARD int sch_session_reclaimable(sch_session *ssn, const sch_task *preemptor,
                                         const int32_t *cands, size_t n, int32_t *victims);
/* Volcano UnifiedEvictable: the tier rule of preemptable/reclaimable over the plugins that
 * registered sch_add_unified_evictable_fn; none voting is no victim. */
KC_NODISCARD int sch_session_unified_evictable(sch_session *ssn, const sch_eviction_ctx *ec,
                                               const int32_t *cands, size_t n, int32_t *victims);
/* The union of every VictimTasks plugin's choice among cands, each task once, into victims
 * (capacity n); returns the count or KC_ENOMEM. */
KC_NODISCARD int sch_session_victim_tasks(sch_session *ssn, const int32_t *cands, size_t n,
                                          int32_t *victims);

/* Accessors. */
sch_snapshot *sch_session_snapshot(sch_session *ssn);
/* True while preempt or reclaim look for nodes: resources and pod count are what victims
 * free, so predicates leave them out. */
bool sch_session_preempting(const sch_session *ssn);
const sch_session_options *sch_session_opts(const sch_session *ssn);
/* What this session hands the next one (sch_result.carry): it starts as the options' carry. */
sch_carry *sch_session_carry(sch_session *ssn);
/* The arguments of an action from the configuration's `configurations` (never NULL). */
const sch_args *sch_session_action_args(const sch_session *ssn, const char *action);

/* Outputs a plugin may add. Events on a job's PodGroup ("Normal"/"Warning"): */
int sch_session_job_event(sch_session *ssn, const sch_job *j, const char *type, const char *reason,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Records why a job cannot go on because of its queue (proportion, overcommit): it becomes
 * the job's Unschedulable message when no fit error explains it better. */
int sch_session_job_queue_reason(sch_session *ssn, const sch_job *j, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The queue reason of a gang its queue cannot admit (capacity, proportion): "queue Q resource
 * quota insufficient: the gang needs G (minResources); the queue has L left of C", in the
 * dimensions dims (SCH_DIM_* bits). */
int sch_session_gang_quota_reason(sch_session *ssn, const sch_job *j, const char *qname,
                                  const sch_resource *left, const sch_resource *cap, unsigned dims);

/* Records an annotation for the shell to write before binding task (see sch_annotation);
 * key and value are copied. 0 or KC_ENOMEM. */
KC_NODISCARD int sch_session_annotate(sch_session *ssn, int32_t task, bool node, const char *key,
                                      const char *value);

/* ------------------------------------------------------------------------------------ */
/* Network topology and sub-groups (sch_topology.c; the tree is sch_hypernode.h)          */
/* ------------------------------------------------------------------------------------ */

/* A networkTopology as Volcano reads it (JobInfo.IsHardTopologyMode / IsSoftTopologyMode):
 * mode hard (the CRD's default) or soft, and the tier from highestTierAllowed, else from
 * highestTierName through the HyperNodes' tierName. Without a tier there is no constraint
 * (Volcano logs the unknown tier name and schedules the job as any other). */
typedef enum { SCH_TOPO_NONE = 0, SCH_TOPO_HARD, SCH_TOPO_SOFT } sch_topo_mode;

typedef struct sch_topo {
  sch_topo_mode mode;
  int32_t tier; /* the highest tier allowed (hard) or preferred (soft); -1 with NONE */
} sch_topo;

void sch_topo_of(const sch_snapshot *snap, const Kiln__NetworkTopology *nt, sch_topo *out);
/* The job's (its PodGroup's) and a sub-group's (its policy's) topology. */
void sch_job_topo(const sch_snapshot *snap, const sch_job *j, sch_topo *out);
void sch_subjob_topo(const sch_snapshot *snap, const sch_subjob *sj, sch_topo *out);
/* The HyperNode (tree vertex) that holds the placed tasks among tasks[0..n): the lowest
 * common ancestor of the lowest HyperNodes of their nodes, tasks in allocated statuses and
 * pipelined ones counted (Volcano's AllocatedHyperNode, recovered from the placed pods as its
 * current release does, so a restarted task goes back beside the running ones); -1 when none
 * is placed. */
int32_t sch_tasks_hypernode(const sch_snapshot *snap, const int32_t *tasks, int32_t n);
/* Tasks of the sub-group in allocated statuses or Succeeded; the same with Pipelined ones. */
int32_t sch_subjob_ready_num(const sch_snapshot *snap, const sch_subjob *sj);
int32_t sch_subjob_pipelined_num(const sch_snapshot *snap, const sch_subjob *sj);

/* SubJobReady / SubJobPipelined (gang), SubJobOrder (negative: l first). */
typedef bool (*sch_subjob_bool_fn)(sch_session *ssn, void *ctx, const sch_job *j,
                                   const sch_subjob *sj);
typedef int (*sch_subjob_order_fn)(sch_session *ssn, void *ctx, const sch_subjob *l,
                                   const sch_subjob *r);
/* HyperNodeGradientForJobFn / ForSubJobFn (sj NULL: the job): the HyperNodes under root (a
 * tree vertex, root included) the job or sub-group may be placed in, into out (capacity: the
 * tree's vertex count) in gradient order, grad[k] the gradient of out[k] (ascending from 0).
 * Returns the count (0: nowhere), or -1 to abstain. */
typedef int32_t (*sch_hn_gradient_fn)(sch_session *ssn, void *ctx, const sch_job *j,
                                      const sch_subjob *sj, int32_t root, int32_t *out,
                                      int32_t *grad);
/* HyperNodeOrderFn: adds each HyperNode's score for the job or sub-group into scores[i]. */
typedef void (*sch_hn_order_fn)(sch_session *ssn, void *ctx, const sch_job *j, const sch_subjob *sj,
                                const int32_t *hns, size_t n, double *scores);

KC_NODISCARD int sch_add_subjob_ready_fn(sch_session *ssn, sch_subjob_bool_fn fn, void *ctx);
KC_NODISCARD int sch_add_subjob_pipelined_fn(sch_session *ssn, sch_subjob_bool_fn fn, void *ctx);
KC_NODISCARD int sch_add_subjob_order_fn(sch_session *ssn, sch_subjob_order_fn fn, void *ctx);
KC_NODISCARD int sch_add_hn_gradient_fn(sch_session *ssn, sch_hn_gradient_fn fn, void *ctx);
KC_NODISCARD int sch_add_hn_order_fn(sch_session *ssn, sch_hn_order_fn fn, void *ctx);

/* Dispatchers: ready and pipelined need every plugin's yes (none: yes); the order is the
 * first non-zero answer, then matchIndex, then the key; the gradient is the first plugin's
 * that answers (none: root alone); the HyperNode scores are summed (zeroed first). */
bool sch_session_subjob_ready(sch_session *ssn, const sch_job *j, const sch_subjob *sj);
bool sch_session_subjob_pipelined(sch_session *ssn, const sch_job *j, const sch_subjob *sj);
int sch_session_subjob_order(sch_session *ssn, const sch_subjob *l, const sch_subjob *r);
int32_t sch_session_hn_gradient(sch_session *ssn, const sch_job *j, const sch_subjob *sj,
                                int32_t root, int32_t *out, int32_t *grad);
void sch_session_hn_scores(sch_session *ssn, const sch_job *j, const sch_subjob *sj,
                           const int32_t *hns, size_t n, double *scores);

/* ------------------------------------------------------------------------------------ */
/* Statements (Volcano Statement)                                                       */
/* ------------------------------------------------------------------------------------ */

typedef struct sch_statement sch_statement;

/* A *new* statement on ssn; NULL on allocation failure. */
sch_statement *sch_statement_new(sch_session *ssn);
/* Discards whatever is still recorded, then frees; NULL is a no-op. */
void sch_statement_free(sch_statement *st);
/* Task -> Allocated on node (idle must hold init_resreq); fires allocate handlers. */
KC_NODISCARD int sch_statement_allocate(sch_statement *st, int32_t task, int32_t node);
/* Task -> Pipelined on node (placed on resources being released). */
KC_NODISCARD int sch_statement_pipeline(sch_statement *st, int32_t task, int32_t node);
/* The same, after evictions made room on node: the commit also nominates the node for the
 * pod (status.nominatedNodeName). */
KC_NODISCARD int sch_statement_pipeline_nominate(sch_statement *st, int32_t task, int32_t node);
/* Task -> Releasing (a victim); fires deallocate handlers. reason is copied. */
KC_NODISCARD int sch_statement_evict(sch_statement *st, int32_t task, const char *reason);
/* Applies: allocations become bind requests (task -> Binding), evictions become evict
 * requests, pipelined tasks stay pipelined for this session. The statement is emptied. */
KC_NODISCARD int sch_statement_commit(sch_statement *st);
/* Undoes every recorded operation in reverse order; node accounting and job counters
 * come back exactly. The statement is emptied. */
void sch_statement_discard(sch_statement *st);
size_t sch_statement_len(const sch_statement *st);

/* Moves a task to a new status, keeping the job's counters exact (Volcano
 * UpdateTaskStatus). Used by statements and actions. */
void sch_job_set_status(sch_snapshot *snap, int32_t task, sch_task_status st);

/* ------------------------------------------------------------------------------------ */
/* Plugins and actions                                                                  */
/* ------------------------------------------------------------------------------------ */

typedef struct sch_plugin {
  const char *name;
  /* Registers callbacks. *state (initially NULL) is kept for close. 0 or KC_E*. */
  int (*open)(sch_session *ssn, const sch_plugin_conf *conf, void **state);
  /* May be NULL. Frees state; may add session outputs. */
  void (*close)(sch_session *ssn, void *state);
} sch_plugin;

typedef struct sch_action {
  const char *name;
  int (*execute)(sch_session *ssn);
} sch_action;

/* The registry (sch_registry.c): NULL when the name is not registered. */
const sch_plugin *sch_plugin_find(const char *name);
const sch_action *sch_action_find(const char *name);
/* Whether Volcano registers an action of that name (implemented here or not). */
bool sch_action_volcano(const char *name);
/* Whether plugin p reads the argument key (its table in sch_registry.c). */
bool sch_plugin_reads_arg(const sch_plugin *p, const char *key);
/* Why an argument of Volcano's plugin p changes nothing in kiln-scheduler (borrowed, static),
 * or NULL when it is not one of those. */
const char *sch_plugin_inert_arg(const sch_plugin *p, const char *key);

/* ------------------------------------------------------------------------------------ */
/* Session lifecycle and output                                                         */
/* ------------------------------------------------------------------------------------ */

typedef struct sch_bind {
  int32_t task;
  int32_t node;
} sch_bind;

typedef struct sch_evict {
  int32_t task;
  char *reason; /* owned by the result */
} sch_evict;

typedef struct sch_condition {
  const char *type;   /* "Unschedulable" | "Scheduled" (static) */
  const char *status; /* "True" (static) */
  const char *reason; /* owned by the result */
  const char *message;
  const char *transition_id;
  int64_t last_transition_time;
} sch_condition;

/* One PodGroup's status as the session sees it at close. The shell writes it only when it
 * differs from the PodGroup it read. */
typedef struct sch_pg_status {
  int32_t job;
  sch_pg_phase phase;
  int32_t running, succeeded, failed;
  bool has_condition;
  sch_condition condition;
} sch_pg_status;

typedef struct sch_queue_status {
  int32_t queue;
  sch_resource allocated;
  int32_t pending, inqueue, running, unknown, completed; /* PodGroups per phase */
} sch_queue_status;

typedef enum { SCH_EVENT_POD, SCH_EVENT_PODGROUP } sch_event_kind;

typedef struct sch_event {
  sch_event_kind kind;
  int32_t object;     /* task index or job index */
  const char *type;   /* "Normal" | "Warning" (static) */
  const char *reason; /* static */
  char *message;      /* owned by the result */
} sch_event;

/* Why a pending task of ours was not placed (for FailedScheduling and the replay tool). */
typedef struct sch_task_why {
  int32_t task;
  char *message; /* owned */
} sch_task_why;

/* An annotation the shell writes before it binds a committed task (the deviceshare plugin's
 * device assignment, which Volcano's device plugins read at container start): on the task's
 * pod, or, with node set, on the node the task binds to (the node lock), node ones first. */
typedef struct sch_annotation {
  int32_t task;
  bool node;
  char *key, *value; /* owned by the result */
} sch_annotation;

/* How long a plugin's open and close took (Volcano's plugin_scheduling_latency). */
typedef struct sch_plugin_time {
  const char *plugin; /* static, the plugin's name */
  uint64_t open_ns, close_ns;
} sch_plugin_time;

typedef struct sch_result {
  sch_bind *binds;
  size_t nbinds;
  sch_evict *evicts;
  size_t nevicts;
  sch_bind *nominations; /* pipelined preemptors and the node freed for them */
  size_t nnominations;
  int64_t preempt_attempts; /* nodes the preempt action tried victims on */
  int32_t last_victims;     /* victims the last of those tries chose */
  int64_t reclaim_attempts; /* tasks the reclaim action tried to place */
  int32_t *reclaim_victims; /* per task it placed, the victims it evicted (nreclaimed) */
  size_t nreclaimed;
  sch_pg_status *pod_groups; /* every non-shadow job */
  size_t npod_groups;
  sch_queue_status *queues;
  size_t nqueues;
  sch_event *events;
  size_t nevents;
  sch_task_why *why;
  size_t nwhy;
  sch_annotation *annotations; /* by task, a task's together; for tasks in binds */
  size_t nannotations;
  sch_carry carry; /* for the next session's options (see sch_carry) */
  /* With a clock in the options: each configured plugin's open and close, in tier order,
   * and the stages' durations. */
  sch_plugin_time *plugin_times;
  size_t nplugin_times;
  sch_hist stages[SCH_STAGE__COUNT];
  char **strings; /* private: owned strings */
  size_t nstrings;
} sch_result;

/* Opens a session: plugins open in tier order and register callbacks; jobs that fail
 * JobValid are marked invalid (with an Unschedulable condition). snap and conf are
 * borrowed for the session's life; opts may be NULL. 0 and a *new* session, or KC_E*. */
KC_NODISCARD int sch_session_open(sch_snapshot *snap, const sch_conf *conf,
                                  const sch_session_options *opts, sch_session **out);
/* Runs the configured actions in order. Stops at the first action error. */
KC_NODISCARD int sch_session_run(sch_session *ssn);
/* Plugins close (gang writes conditions), statuses are computed, and the session is freed.
 * *out receives a *new* result (free with sch_result_free), or NULL with an error. The
 * session is freed in every case. */
KC_NODISCARD int sch_session_close(sch_session *ssn, sch_result **out);
void sch_result_free(sch_result *r);

#endif
