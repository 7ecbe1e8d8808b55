/* Lifecycle policies (Volcano applyPolicies): which action a request leads to. */
#include <string.h>

#include "ctl_int.h"

static bool policy_has_event(const Kiln__LifecyclePolicy *p, ctl_event ev) {
  if (p->event && ctl_event_parse(p->event) == ev)
    return true;
  for (size_t i = 0; i < p->n_events; i++)
    if (ctl_event_parse(p->events[i]) == ev)
      return true;
  return false;
}

static bool policy_has_events(const Kiln__LifecyclePolicy *p) {
  return (p->event && *p->event) || p->n_events > 0;
}

/* One policy against one request: true on a match, with the action and the delay. */
static bool match(const Kiln__LifecyclePolicy *p, const ctl_request *req, ctl_action *action,
                  int64_t *delay) {
  int64_t timeout = 0;
  bool has_timeout = p->timeout && ctl_duration_parse(p->timeout, &timeout) == 0;
  bool hit = false;
  if (policy_has_events(p) && req->event != CTL_EV_NONE) {
    hit = policy_has_event(p, req->event) || policy_has_event(p, CTL_EV_ANY);
    /* A PodPending policy only means something with a timeout: every pod starts Pending. */
    if (hit && req->event == CTL_EV_POD_PENDING && !has_timeout)
      hit = false;
  }
  if (!hit && p->has_exit_code && req->has_exit_code && p->exit_code == req->exit_code)
    hit = true;
  if (!hit)
    return false;
  *action = ctl_action_parse(p->action);
  if (*action == CTL_ACT_NONE)
    *action = CTL_ACT_SYNC_JOB;
  *delay = has_timeout ? timeout : 0;
  return true;
}

void ctl__apply_policies(const Kiln__Job *job, const ctl_request *req, ctl_action *action,
                         int64_t *delay) {
  *delay = 0;
  if (req->action != CTL_ACT_NONE) {
    *action = req->action;
    return;
  }
  *action = CTL_ACT_SYNC_JOB;
  if (req->event == CTL_EV_OUT_OF_SYNC || req->event == CTL_EV_COMMAND_ISSUED ||
      req->event == CTL_EV_POD_RUNNING)
    return;
  if (req->job_uid && job->metadata && job->metadata->uid &&
      strcmp(req->job_uid, job->metadata->uid) != 0)
    return;
  /* Requests from pods of an older version of the job only resync it. */
  int32_t version = job->status ? job->status->version : 0;
  if (req->has_job_version && req->job_version < version)
    return;
  const Kiln__JobSpec *spec = job->spec;
  if (!spec)
    return;
  /* Task policies override job policies. */
  if (req->task && *req->task) {
    for (size_t i = 0; i < spec->n_tasks; i++) {
      const Kiln__TaskSpec *t = spec->tasks[i];
      if (!t->name || strcmp(t->name, req->task) != 0)
        continue;
      for (size_t k = 0; k < t->n_policies; k++)
        if (match(t->policies[k], req, action, delay))
          return;
      break;
    }
  }
  for (size_t k = 0; k < spec->n_policies; k++)
    if (match(spec->policies[k], req, action, delay))
      return;
  *action = CTL_ACT_SYNC_JOB;
  *delay = 0;
}
