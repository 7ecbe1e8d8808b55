/* The job phase machine (Volcano pkg/controllers/job/state) as a table over (phase, action),
 * and the two kill operations it drives (killJob, killTarget). */
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "kc_codec.h"
#include "kc_error.h"
#include "kc_log.h"

void ctl__set_phase(ctl_ctx *c, ctl_status *st, ctl_phase to) {
  if (st->phase != to)
    KC_V(2, "job %s/%s: %s -> %s (action %s)", ctl__job_ns(c->v->job), ctl__job_name(c->v->job),
         ctl_phase_name(st->phase), ctl_phase_name(to), ctl_action_name(c->action));
  st->phase = to;
}

/* ---- update functions: one per kind of cell ---- */

static bool fn_restart(ctl_ctx *c, ctl_status *st) {
  st->retry_count = ctl__inc_sat(st->retry_count);
  ctl__set_phase(c, st, CTL_PHASE_RESTARTING);
  return true;
}

static bool fn_aborting(ctl_ctx *c, ctl_status *st) {
  ctl__set_phase(c, st, CTL_PHASE_ABORTING);
  return true;
}

static bool fn_completing(ctl_ctx *c, ctl_status *st) {
  ctl__set_phase(c, st, CTL_PHASE_COMPLETING);
  return true;
}

static bool fn_terminating(ctl_ctx *c, ctl_status *st) {
  ctl__set_phase(c, st, CTL_PHASE_TERMINATING);
  return true;
}

/* Pending + sync: Running once minAvailable pods have started. */
static bool fn_pending_sync(ctl_ctx *c, ctl_status *st) {
  if (ctl__job_min_available(c->v->job) <= st->running + st->succeeded + st->failed) {
    ctl__set_phase(c, st, CTL_PHASE_RUNNING);
    return true;
  }
  return false;
}

static int32_t task_succeeded(const ctl_status *st, const char *task, bool *found) {
  for (size_t i = 0; i < st->ntasks; i++)
    if (strcmp(st->tasks[i].name, task) == 0) {
      *found = true;
      return st->tasks[i].count[CTL_POD_SUCCEEDED];
    }
  *found = false;
  return 0;
}

/* Running + sync: decide completion or failure once every pod has finished. */
static bool fn_running_sync(ctl_ctx *c, ctl_status *st) {
  const Kiln__Job *job = c->v->job;
  int32_t total = ctl__total_replicas(job);
  if (total == 0)
    return false; /* scaled to zero: stay Running */
  const Kiln__JobSpec *spec = job->spec;
  bool has_min_success = spec->has_min_success;
  if (has_min_success && st->succeeded >= spec->min_success) {
    ctl__set_phase(c, st, CTL_PHASE_COMPLETED);
    return true;
  }
  int32_t min_available = ctl__job_min_available(job);
  if (st->succeeded + st->failed == total) {
    if (min_available >= ctl__total_task_min_available(job)) {
      for (size_t i = 0; i < spec->n_tasks; i++) {
        const Kiln__TaskSpec *t = spec->tasks[i];
        bool found;
        int32_t ok = task_succeeded(st, t->name ? t->name : "", &found);
        if (t->has_min_available && found && ok < t->min_available) {
          ctl__set_phase(c, st, CTL_PHASE_FAILED);
          return true;
        }
      }
    }
    if (has_min_success && st->succeeded < spec->min_success)
      ctl__set_phase(c, st, CTL_PHASE_FAILED);
    else if (st->succeeded >= min_available)
      ctl__set_phase(c, st, CTL_PHASE_COMPLETED);
    else
      ctl__set_phase(c, st, CTL_PHASE_FAILED);
    return true;
  }
  /* Too many pods waiting to keep the gang: back to Pending. */
  if (st->pending > total - min_available) {
    ctl__set_phase(c, st, CTL_PHASE_PENDING);
    return true;
  }
  return false;
}

static int32_t max_retry(const Kiln__Job *job) {
  return job->spec->has_max_retry ? job->spec->max_retry : 3;
}

static bool fn_restarting(ctl_ctx *c, ctl_status *st) {
  if (st->retry_count >= max_retry(c->v->job)) {
    ctl__set_phase(c, st, CTL_PHASE_FAILED);
    return true;
  }
  if (ctl__total_replicas(c->v->job) - st->terminating >= st->min_available) {
    ctl__set_phase(c, st, CTL_PHASE_PENDING);
    return true;
  }
  return false;
}

static bool fn_resume(ctl_ctx *c, ctl_status *st) {
  st->retry_count = ctl__inc_sat(st->retry_count);
  ctl__set_phase(c, st, CTL_PHASE_RESTARTING);
  return true;
}

static bool all_gone(const ctl_status *st) {
  return st->terminating == 0 && st->pending == 0 && st->running == 0;
}

static bool fn_aborted(ctl_ctx *c, ctl_status *st) {
  if (!all_gone(st))
    return false;
  ctl__set_phase(c, st, CTL_PHASE_ABORTED);
  return true;
}

static bool fn_completed(ctl_ctx *c, ctl_status *st) {
  if (!all_gone(st))
    return false;
  ctl__set_phase(c, st, CTL_PHASE_COMPLETED);
  return true;
}

static bool fn_terminated(ctl_ctx *c, ctl_status *st) {
  if (!all_gone(st))
    return false;
  ctl__set_phase(c, st, CTL_PHASE_TERMINATED);
  return true;
}

/* ---- the table ---- */

typedef enum { OP_SYNC = 0, OP_KILL_JOB, OP_KILL_TARGET } op_kind;

typedef struct {
  op_kind op;
  ctl_retain retain;
  ctl_update_fn fn;
} cell;

#define KILL_NONE(f)                                                                               \
  { OP_KILL_JOB, CTL_RETAIN_NONE, f }
#define KILL_SOFT(f)                                                                               \
  { OP_KILL_JOB, CTL_RETAIN_SOFT, f }
#define TARGET(f)                                                                                  \
  { OP_KILL_TARGET, CTL_RETAIN_NONE, f }
#define SYNC(f)                                                                                    \
  { OP_SYNC, CTL_RETAIN_NONE, f }

/* Pending and Running share their kill cells and differ in the sync fn. */
#define LIVE_ROW(syncfn)                                                                           \
  {                                                                                                \
    [CTL_ACT_NONE] = SYNC(syncfn), [CTL_ACT_SYNC_JOB] = SYNC(syncfn),                              \
    [CTL_ACT_ENQUEUE_JOB] = SYNC(syncfn), [CTL_ACT_ABORT_JOB] = KILL_SOFT(fn_aborting),            \
    [CTL_ACT_RESTART_JOB] = KILL_NONE(fn_restart), [CTL_ACT_RESTART_TASK] = TARGET(fn_restart),    \
    [CTL_ACT_RESTART_POD] = TARGET(fn_restart),                                                    \
    [CTL_ACT_TERMINATE_JOB] = KILL_SOFT(fn_terminating),                                           \
    [CTL_ACT_COMPLETE_JOB] = KILL_SOFT(fn_completing), [CTL_ACT_RESUME_JOB] = SYNC(syncfn),        \
    [CTL_ACT_RESTART_PARTITION] = TARGET(fn_restart),                                              \
  }

#define ALL(x)                                                                                     \
  {                                                                                                \
    [CTL_ACT_NONE] = x, [CTL_ACT_SYNC_JOB] = x, [CTL_ACT_ENQUEUE_JOB] = x,                         \
    [CTL_ACT_ABORT_JOB] = x, [CTL_ACT_RESTART_JOB] = x, [CTL_ACT_RESTART_TASK] = x,                \
    [CTL_ACT_RESTART_POD] = x, [CTL_ACT_TERMINATE_JOB] = x, [CTL_ACT_COMPLETE_JOB] = x,            \
    [CTL_ACT_RESUME_JOB] = x, [CTL_ACT_RESTART_PARTITION] = x,                                     \
  }

#define ALL_BUT_RESUME(x, resume)                                                                  \
  {                                                                                                \
    [CTL_ACT_NONE] = x, [CTL_ACT_SYNC_JOB] = x, [CTL_ACT_ENQUEUE_JOB] = x,                         \
    [CTL_ACT_ABORT_JOB] = x, [CTL_ACT_RESTART_JOB] = x, [CTL_ACT_RESTART_TASK] = x,                \
    [CTL_ACT_RESTART_POD] = x, [CTL_ACT_TERMINATE_JOB] = x, [CTL_ACT_COMPLETE_JOB] = x,            \
    [CTL_ACT_RESUME_JOB] = resume, [CTL_ACT_RESTART_PARTITION] = x,                                \
  }

static const cell table[CTL_PHASE_COUNT][CTL_ACT_COUNT] = {
    [CTL_PHASE_PENDING] = LIVE_ROW(fn_pending_sync),
    [CTL_PHASE_RUNNING] = LIVE_ROW(fn_running_sync),
    [CTL_PHASE_RESTARTING] =
        {
            [CTL_ACT_NONE] = KILL_NONE(fn_restarting),
            [CTL_ACT_SYNC_JOB] = SYNC(fn_restarting),
            [CTL_ACT_ENQUEUE_JOB] = KILL_NONE(fn_restarting),
            [CTL_ACT_ABORT_JOB] = KILL_NONE(fn_restarting),
            [CTL_ACT_RESTART_JOB] = KILL_NONE(fn_restarting),
            [CTL_ACT_RESTART_TASK] = TARGET(fn_restarting),
            [CTL_ACT_RESTART_POD] = TARGET(fn_restarting),
            [CTL_ACT_TERMINATE_JOB] = KILL_NONE(fn_restarting),
            [CTL_ACT_COMPLETE_JOB] = KILL_NONE(fn_restarting),
            [CTL_ACT_RESUME_JOB] = KILL_NONE(fn_restarting),
            [CTL_ACT_RESTART_PARTITION] = TARGET(fn_restarting),
        },
    [CTL_PHASE_ABORTING] = ALL_BUT_RESUME(KILL_SOFT(fn_aborted), KILL_SOFT(fn_resume)),
    [CTL_PHASE_ABORTED] = ALL_BUT_RESUME(KILL_SOFT(NULL), KILL_SOFT(fn_resume)),
    [CTL_PHASE_COMPLETING] = ALL(KILL_SOFT(fn_completed)),
    [CTL_PHASE_TERMINATING] = ALL(KILL_SOFT(fn_terminated)),
    [CTL_PHASE_COMPLETED] = ALL(KILL_SOFT(NULL)),
    [CTL_PHASE_TERMINATED] = ALL(KILL_SOFT(NULL)),
    [CTL_PHASE_FAILED] = ALL(KILL_SOFT(NULL)),
};

int ctl__state_execute(ctl_ctx *c, ctl_phase phase, ctl_action action, const ctl_state_ops *ops) {
  if ((unsigned)phase >= CTL_PHASE_COUNT)
    phase = CTL_PHASE_PENDING;
  if ((unsigned)action >= CTL_ACT_COUNT)
    action = CTL_ACT_SYNC_JOB;
  const cell *e = &table[phase][action];
  switch (e->op) {
  case OP_KILL_JOB:
    return ops->kill_job(c, e->retain, e->fn);
  case OP_KILL_TARGET:
    return ops->kill_target(c, e->fn);
  case OP_SYNC:
  default:
    return ops->sync_job(c, e->fn);
  }
}

/* ---- killJob / killTarget ---- */

static void count_pod(ctl_status *st, const ctl_pod *p) {
  switch (p->phase) {
  case CTL_POD_PENDING:
    st->pending++;
    break;
  case CTL_POD_RUNNING:
    st->running++;
    break;
  case CTL_POD_SUCCEEDED:
    st->succeeded++;
    break;
  case CTL_POD_FAILED:
    st->failed++;
    break;
  default:
    st->unknown++;
    break;
  }
  ctl_task_count *t = ctl_status_task(st, p->task);
  if (t)
    t->count[p->phase < CTL_POD_PHASE_COUNT ? p->phase : CTL_POD_UNKNOWN]++;
}

static void reset_counts(ctl_status *st) {
  st->pending = st->running = st->succeeded = st->failed = st->terminating = st->unknown = 0;
  free(st->tasks);
  st->tasks = NULL;
  st->ntasks = 0;
}

/* Applies a state's fn; on a phase change stamps the time and appends the condition. */
static void apply_fn(ctl_ctx *c, ctl_status *st, ctl_update_fn fn) {
  if (fn && fn(c, st)) {
    st->last_transition = c->v->now;
    ctl__append_condition(st, st->phase, c->v->now);
  }
}

int ctl__kill_job(ctl_ctx *c, ctl_retain retain, ctl_update_fn fn) {
  const Kiln__Job *job = c->v->job;
  ctl_status *st = &c->plan->status;
  if (job->metadata && job->metadata->deletion_timestamp)
    return 0;
  /* On the last retry failed and succeeded pods are kept for inspection. */
  bool last_retry = st->retry_count >= max_retry(job) - 1;
  reset_counts(st);
  for (size_t i = 0; i < c->v->npods; i++) {
    const ctl_pod *p = &c->v->pods[i];
    if (p->deletion_ts) {
      st->terminating++;
      continue;
    }
    bool soft_kept = p->phase == CTL_POD_SUCCEEDED || p->phase == CTL_POD_FAILED;
    bool retain_pod = (retain == CTL_RETAIN_SOFT || last_retry) && soft_kept;
    if (!retain_pod) {
      int rc = ctl__delete_pod(c->plan, p->name, ctl_action_name(c->action));
      if (rc)
        return rc;
      st->terminating++;
      continue;
    }
    count_pod(st, p);
  }
  st->version = ctl__inc_sat(st->version);
  st->min_available = ctl__job_min_available(job);
  if (job->metadata && job->metadata->creation_timestamp) {
    int64_t created = 0;
    if (kc_time_parse(job->metadata->creation_timestamp, &created) == 0 && st->last_transition) {
      st->running_duration = st->last_transition - created;
      st->has_running_duration = true;
    }
  }
  apply_fn(c, st, fn);
  int rc = ctl__plugins_job_delete(c);
  if (rc)
    return rc;
  c->plan->podgroup_delete = true;
  return 0;
}

static bool is_target(const ctl_ctx *c, const ctl_pod *p, int partition) {
  const ctl_request *r = c->req;
  if (c->action == CTL_ACT_RESTART_POD)
    return r->pod && strcmp(p->name, r->pod) == 0;
  if (c->action == CTL_ACT_RESTART_TASK)
    return r->task && strcmp(p->task, r->task) == 0;
  if (c->action == CTL_ACT_RESTART_PARTITION)
    return partition >= 0 && r->task && strcmp(p->task, r->task) == 0 && p->has_partition &&
           p->partition == partition;
  return false;
}

int ctl__kill_target(ctl_ctx *c, ctl_update_fn fn) {
  const Kiln__Job *job = c->v->job;
  ctl_status *st = &c->plan->status;
  if (job->metadata && job->metadata->deletion_timestamp)
    return 0;
  int partition = c->action == CTL_ACT_RESTART_PARTITION ? ctl__request_partition(c) : -1;
  reset_counts(st);
  for (size_t i = 0; i < c->v->npods; i++) {
    const ctl_pod *p = &c->v->pods[i];
    if (p->deletion_ts) {
      st->terminating++;
      continue;
    }
    if (is_target(c, p, partition)) {
      int rc = ctl__delete_pod(c->plan, p->name, ctl_action_name(c->action));
      if (rc)
        return rc;
      st->terminating++;
      continue;
    }
    count_pod(st, p);
  }
  st->min_available = ctl__job_min_available(job);
  apply_fn(c, st, fn);
  return 0;
}

void ctl__count_pod(ctl_status *st, const ctl_pod *p) {
  count_pod(st, p);
}

void ctl__reset_counts(ctl_status *st) {
  reset_counts(st);
}

void ctl__apply_fn(ctl_ctx *c, ctl_status *st, ctl_update_fn fn) {
  apply_fn(c, st, fn);
}
