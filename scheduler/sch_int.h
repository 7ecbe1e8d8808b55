/* Scheduler core internals shared by the sch_*.c files (second tier, sch__ prefix). */
#ifndef SCH_INT_H
#define SCH_INT_H

#include "sch_framework.h"

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
  SCH_CB_PREEMPTABLE,
  SCH_CB_RECLAIMABLE,
  SCH_CB_EVENT,
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
  /* Reason strings: id -> string, string -> id + 1. */
  char **reasons;
  size_t nreasons, cap_reasons;
  kc_strmap reason_index;
  /* Per-job conditions. */
  sch_job_cond *job_cond;
  /* Output under construction. */
  sch_result *res;
  size_t cap_binds, cap_evicts, cap_events;
};

/* Node accounting (Volcano NodeInfo.AddTask/RemoveTask) by the task's status; the task
 * must have t->node set for add. */
void sch__node_add_task(sch_snapshot *snap, int32_t task, int32_t node);
void sch__node_remove_task(sch_snapshot *snap, int32_t task);

/* Records a condition for a job (the last one wins). 0 or KC_ENOMEM. */
int sch__job_condition(sch_session *ssn, const sch_job *j, bool unschedulable, const char *reason,
                       const char *message);
int sch__result_bind(sch_session *ssn, int32_t task, int32_t node);
int sch__result_evict(sch_session *ssn, int32_t task, const char *reason);
int sch__result_event(sch_session *ssn, sch_event_kind kind, int32_t object, const char *type,
                      const char *reason, const char *message);

/* Forgets the recorded operations without undoing them: a pipelined gang keeps its
 * places for the rest of the session but produces no bind (Volcano leaves such a
 * statement neither committed nor discarded). */
void sch__statement_keep(sch_statement *st);

/* Fires the event handlers. */
void sch__fire_allocate(sch_session *ssn, const sch_task *t);
void sch__fire_deallocate(sch_session *ssn, const sch_task *t);

#endif
