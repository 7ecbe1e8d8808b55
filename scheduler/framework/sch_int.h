/* Scheduler core internals shared by the sch_*.c files (second tier, sch__ prefix). */
#ifndef SCH_INT_H
#define SCH_INT_H

#include "sch_framework.h"
#include "kc_error.h"

/* Callback kinds in the session's registry. */
typedef enum {
  SCH_CB_JOB_ORDER,
  SCH_CB_QUEUE_ORDER,
  SCH_CB_TASK_ORDER,
  SCH_CB_PREDICATE,
  SCH_CB_NODE_ORDER,
  SCH_CB_BATCH_NODE_ORDER,
  SCH_CB_JOB_VALID,
  SCH_CB_JOB_READY,
  SCH_CB_JOB_PIPELINED,
  SCH_CB_JOB_STARVING,
  SCH_CB_JOB_ENQUEUEABLE,
  SCH_CB_JOB_ENQUEUED,
  SCH_CB_OVERUSED,
  SCH_CB_ALLOCATABLE,
  SCH_CB_PREEMPTIVE,
  SCH_CB_PREEMPTABLE,
  SCH_CB_RECLAIMABLE,
  SCH_CB_UNIFIED_EVICTABLE,
  SCH_CB_VICTIM_TASKS,
  SCH_CB_EVENT,
  SCH_CB_SUBJOB_READY,
  SCH_CB_SUBJOB_PIPELINED,
  SCH_CB_SUBJOB_ORDER,
  SCH_CB_HN_GRADIENT,
  SCH_CB_HN_ORDER,
  SCH_CB__COUNT
} sch_cb_kind;

typedef struct sch_cb {
  void (*fn)(void);  /* cast back to the kind's type */
  void (*fn2)(void); /* deallocate handler for SCH_CB_EVENT */
  void *ctx;
  int tier;
} sch_cb;

typedef struct sch_cbs {
  sch_cb *v;
  size_t n, cap;
} sch_cbs;

/* A PodGroup condition recorded by a plugin during the session. */
typedef struct sch_job_cond {
  bool set;
  bool unschedulable; /* else Scheduled */
  int32_t reason;     /* reason-table ids */
  int32_t message;
} sch_job_cond;

struct sch_session {
  sch_snapshot *snap;
  const sch_conf *conf;
  sch_session_options opts;
  char uid[40];
  sch_cbs cbs[SCH_CB__COUNT];
  /* The plugin being opened (registration target). */
  int cur_tier;
  const sch_plugin_conf *cur_plugin;
  void **plugin_state; /* one per plugin, tier order */
  size_t nplugins;
  /* Ready nodes, the ones actions consider (Volcano's NodeList). */
  int32_t *node_list;
  int32_t nnode_list;
  uint32_t next_node; /* where the next predicate scan starts */
  bool preempting;    /* sch_session_preempting */
  /* sch_why.c: the largest node per dimension, and the predicate calls spent. */
  sch_resource why_largest;
  bool why_largest_done;
  int64_t why_budget;
  /* Reason strings: id -> string, string -> id + 1. */
  char **reasons;
  size_t nreasons, cap_reasons;
  kc_strmap reason_index;
  /* Per-job conditions. */
  sch_job_cond *job_cond;
  /* Output under construction. */
  sch_result *res;
  size_t cap_binds, cap_evicts, cap_events, cap_nominations, cap_annotations;
};

/* Registration shared with sch_topology.c (sch_session.c). */
KC_NODISCARD int sch__add_cb(sch_session *ssn, sch_cb_kind kind, int sw, void (*fn)(void),
                             void (*fn2)(void), void *ctx);
/* The sub-groups of the jobs with a subGroupPolicy (sch_topology.c), at snapshot build. */
KC_NODISCARD int sch__build_subjobs(sch_snapshot *snap);
void sch__free_subjobs(sch_snapshot *snap);

/* Node accounting (Volcano NodeInfo.AddTask/RemoveTask) by the task's status; the task
 * must have t->node set for add. */
void sch__node_add_task(sch_snapshot *snap, int32_t task, int32_t node);
void sch__node_remove_task(sch_snapshot *snap, int32_t task);

/* The scalar slot of name in snap (made on first use), or -1 when all are taken. */
int sch__snapshot_scalar_slot(sch_snapshot *snap, const char *name);

/* DRA devices counted as resources named by their DeviceClass, like extended resources
 * (sch_dra_count.c): each task's claims into its resreq (not init_resreq: whether a node
 * has the devices is DynamicResources' question), before the tasks are placed; then each
 * node's devices per class into its allocatable, capability and idle, and the gang's devices
 * into a job's minResources where the PodGroup names none. 0 or KC_ENOMEM. */
KC_NODISCARD int sch__dra_count_tasks(sch_snapshot *snap);
KC_NODISCARD int sch__dra_count_nodes(sch_snapshot *snap);

/* Records a condition for a job (the last one wins). 0 or KC_ENOMEM. */
KC_NODISCARD int sch__job_condition(sch_session *ssn, const sch_job *j, bool unschedulable,
                                    const char *reason, const char *message);
KC_NODISCARD int sch__result_bind(sch_session *ssn, int32_t task, int32_t node);
KC_NODISCARD int sch__result_evict(sch_session *ssn, int32_t task, const char *reason);
KC_NODISCARD int sch__result_nominate(sch_session *ssn, int32_t task, int32_t node);
KC_NODISCARD int sch__result_event(sch_session *ssn, sch_event_kind kind, int32_t object,
                                   const char *type, const char *reason, const char *message);

/* Forgets the recorded operations without undoing them: a pipelined gang keeps its
 * places for the rest of the session but produces no bind (Volcano leaves such a
 * statement neither committed nor discarded). */
void sch__statement_keep(sch_statement *st);

/* Fires the event handlers. */
void sch__fire_allocate(sch_session *ssn, const sch_task *t);
void sch__fire_deallocate(sch_session *ssn, const sch_task *t);

/* A binary heap of indexes (sch_heap.c); zero-initialised is empty; free h->v. The
 * comparator is negative when a goes first. */
typedef int (*sch__heap_cmp)(sch_session *ssn, int32_t a, int32_t b);
typedef struct sch__heap {
  int32_t *v;
  size_t n, cap;
} sch__heap;
KC_NODISCARD int sch__heap_push(sch_session *ssn, sch__heap *h, sch__heap_cmp cmp, int32_t x);
int32_t sch__heap_pop(sch_session *ssn, sch__heap *h, sch__heap_cmp cmp);

/* The session's orders as heap comparators (job and queue indexes) and as a qsort_r
 * comparator of task indexes (arg: the session). */
int sch__job_cmp(sch_session *ssn, int32_t a, int32_t b);
int sch__queue_cmp(sch_session *ssn, int32_t a, int32_t b);
int sch__task_cmp(const void *a, const void *b, void *arg);
/* Victim helpers shared by preempt and reclaim (sch_action_preempt.c). A task may be a
 * victim of preemptor: Running or Bound, ours, not marked volcano.sh/preemptable "false",
 * and best-effort when the preemptor is. */
bool sch__may_be_victim(const sch_task *preemptor, const sch_task *t);
/* Volcano getTaskRole: the volcano.sh/task-spec annotation, else the label; NULL or "" when
 * the pod has neither (sch_action_preempt.c). */
const char *sch__task_role(const Kiln__Pod *pod);
/* Lowest first (Volcano BuildVictimsPriorityQueue). */
void sch__sort_victims(sch_session *ssn, int32_t *v, size_t n);
/* Volcano ValidateVictims: some victims, and with them t fits the node's future idle. */
bool sch__victims_suffice(const sch_snapshot *snap, const sch_task *t, const sch_node *n,
                          const int32_t *v, size_t nv);
/* t's init request fits n's future idle. */
bool sch__fits_future(const sch_task *t, const sch_node *n);
/* Evicts, with reason, the VictimTasks plugins' choice among the Running tasks of our jobs
 * (sch_action_shuffle.c): the shuffle action, and the end of preempt. 0 or KC_ENOMEM. */
KC_NODISCARD int sch__evict_victim_tasks(sch_session *ssn, const char *reason);
/* Why pending (sch_why.c). t found no node: the reason id of the most specific
 * explanation, -1 when the aggregated predicate message says it best, or KC_ENOMEM;
 * *is_too_big when a pod fits no node even empty. placed: gang pods placed so far. */
int32_t sch__why_unplaced(sch_session *ssn, const sch_task *t, int32_t placed, bool *is_too_big);
/* The detail of a not-ready gang's Unschedulable message, most specific first; empty when
 * nothing explains it. */
void sch__why_detail(sch_session *ssn, const sch_job *j, char *buf, size_t len);
/* "40" cpu, "1500m", "64Gi" memory: dim 0 cpu, 1 memory, 2+i scalar slot i. */
void sch__why_amount(int dim, int64_t v, char *buf, size_t len);
void sch__why_dim_name(const sch_snapshot *snap, int dim, char *buf, size_t len);
/* The options' clock in nanoseconds, 0 without one (metrics only: no decision reads it). */
uint64_t sch__clock(const sch_session *ssn);
/* One observation of stage since start (a sch__clock reading); nothing without a clock. */
void sch__stage_done(sch_session *ssn, sch_stage stage, uint64_t start);
/* The configuration lists the action. */
bool sch__action_configured(const sch_session *ssn, const char *name);

#endif
