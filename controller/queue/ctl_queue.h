/* The queue controller's decisions (Volcano pkg/controllers/queue: the state machine of
 * state/{open,closed,closing,unknown}.go and the actions of queue_controller_action.go), as a
 * pure function of a view. The shell (ctl_ctrl_queue.c) builds the view from its stores and
 * carries the plan out.
 *
 * Who writes what on a Queue: this controller owns status.state and the PodGroup counts
 * (pending, running, unknown, inqueue, completed), written by server-side apply with field
 * manager "queue-controller"; kiln-scheduler owns status.allocated (a merge patch after its
 * sessions), as Volcano's scheduler does. Neither writes the other's fields. */
#ifndef CTL_QUEUE_H
#define CTL_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kc_error.h"

#define CTL_QUEUE_NAME_MAX 254

/* Volcano's Queue actions (bus/v1alpha1): SyncQueue is every request that is not a Command
 * saying OpenQueue or CloseQueue. */
typedef enum { CTL_QA_SYNC = 0, CTL_QA_OPEN, CTL_QA_CLOSE } ctl_queue_action;

/* The PodGroup phases a queue counts, in status field order. */
typedef enum {
  CTL_QC_PENDING = 0,
  CTL_QC_RUNNING,
  CTL_QC_UNKNOWN,
  CTL_QC_INQUEUE,
  CTL_QC_COMPLETED,
  CTL_QC_COUNT
} ctl_queue_count;

#define CTL_QUEUE_ROOT             "root"
#define CTL_QUEUE_CLOSED_BY_PARENT "volcano.sh/closed-by-parent"

/* Another queue as the view shows it (parent or child); strings borrowed. */
typedef struct {
  const char *name;
  const char *state;            /* status.state, "" none */
  const char *parent;           /* spec.parent, "" none */
  const char *closed_by_parent; /* the annotation, NULL when absent */
} ctl_queue_ref;

typedef struct {
  ctl_queue_ref q;
  int32_t status_counts[CTL_QC_COUNT]; /* as stored in its status */
  bool has_status_counts;              /* the status carries the counts at all */
  int32_t counts[CTL_QC_COUNT];        /* its PodGroups, by phase */
  size_t npodgroups;                   /* its PodGroups, any phase */
  const ctl_queue_ref *parent;         /* NULL: not found (or q is root) */
  const ctl_queue_ref *children;       /* queues whose spec.parent is q */
  size_t nchildren;
} ctl_queue_view;

typedef struct {
  char queue[CTL_QUEUE_NAME_MAX];
  const char *value; /* "true" / "false" (static) */
} ctl_queue_annotate;

typedef struct {
  char queue[CTL_QUEUE_NAME_MAX];
  ctl_queue_action action;
} ctl_queue_request;

#define CTL_QUEUE_MAX_FANOUT 64 /* children acted on per sync; the rest on the next one */

typedef struct {
  int err; /* KC_EINVAL: refused; errmsg says why (requeued with backoff) */
  char errmsg[256];
  bool set_parent_root; /* JSON patch spec.parent = root (Volcano updateQueueParent) */
  bool write_status;    /* apply state + counts */
  bool state_changed;
  const char *state; /* the state to write (static) */
  int32_t counts[CTL_QC_COUNT];
  bool counts_only; /* only the counts differ (the shell may batch such writes) */
  /* on a successful state write */
  const char *event_reason; /* NULL none */
  const char *event_message;
  /* the Warning reason when the write fails ("OpenQueue"/"CloseQueue"), NULL: none */
  const char *fail_reason;
  ctl_queue_annotate annotate[CTL_QUEUE_MAX_FANOUT + 1];
  size_t nannotate;
  ctl_queue_request enqueue[CTL_QUEUE_MAX_FANOUT + 1];
  size_t nenqueue;
} ctl_queue_plan;

/* Volcano's handleQueue: picks the state by status.state ("" is Open), runs the action. */
KC_NODISCARD int ctl_queue_decide(const ctl_queue_view *v, ctl_queue_action a, ctl_queue_plan *p);

/* Names: "SyncQueue", "OpenQueue", "CloseQueue"; parse maps any other string to SYNC
 * (Volcano's default branch). */
const char *ctl_queue_action_name(ctl_queue_action a);
ctl_queue_action ctl_queue_action_parse(const char *s);
/* The count slot of a PodGroup phase, or -1 (no phase yet, or not one of the five). */
int ctl_queue_count_of(const char *phase);

/* ---- the queue tree rules that need other queues (ctl_queue_tree.c) ----
 * Volcano's queue webhook refuses a queue whose parent does not exist, whose capability is
 * above its nearest ancestor's, or whose siblings' guarantee or deserved would sum above the
 * parent's. Without a webhook, the controller reports them after the fact. */

#define CTL_QRES_MAX 8

/* A resource list: names borrowed, amounts in milli units. */
typedef struct {
  size_t n;
  struct {
    const char *name;
    int64_t milli;
  } r[CTL_QRES_MAX];
} ctl_qres;

typedef struct {
  const char *name;
  ctl_qres capability, deserved, guarantee;
} ctl_qnode;

typedef struct {
  const ctl_qnode *self;
  const char *parent;         /* spec.parent, "" none: under root, nothing to check */
  bool parent_missing;        /* no queue of that name */
  bool cycle;                 /* following the parents comes back around */
  const ctl_qnode *ancestors; /* the parent first, up to (not including) root */
  size_t nancestors;
  const ctl_qnode *siblings; /* the parent's other children */
  size_t nsiblings;
} ctl_queue_tree_view;

/* The first rule the queue breaks, in Volcano's words, written into msg; false when none. */
bool ctl_queue_tree_problem(const ctl_queue_tree_view *v, char *msg, size_t len);

#endif
