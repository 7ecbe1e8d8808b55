/* Pending requests: see ctl_reqs.h. */
#include "ctl_reqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_log.h"

void ctl_reqs_init(ctl_reqs *r) {
  kc_strmap_init(&r->lists, KC_STRMAP_COPY_KEYS);
}

static void free_reqs(ctl_req *q) {
  for (ctl_req *n; q; q = n) {
    n = q->next;
    free(q);
  }
}

static void list_free(void *v) {
  ctl_reqlist *l = v;
  if (!l)
    return;
  free_reqs(l->head);
  free(l);
}

void ctl_reqs_close(ctl_reqs *r) {
  kc_strmap_close(&r->lists, list_free);
}

static bool has_timeout_policy(const Kiln__JobSpec *sp) {
  for (size_t i = 0; i < sp->n_policies; i++)
    if (sp->policies[i]->timeout)
      return true;
  for (size_t t = 0; t < sp->n_tasks; t++)
    for (size_t i = 0; i < sp->tasks[t]->n_policies; i++)
      if (sp->tasks[t]->policies[i]->timeout)
        return true;
  return false;
}

bool ctl_request_sync_only(const ctl_request *req, const Kiln__Job *job) {
  if (req->action != CTL_ACT_NONE || req->delayed)
    return false;
  if (req->event == CTL_EV_OUT_OF_SYNC || req->event == CTL_EV_POD_RUNNING ||
      req->event == CTL_EV_COMMAND_ISSUED)
    return true;
  if (req->event != CTL_EV_POD_PENDING || !job || !job->spec)
    return false;
  /* PodPending matters only to a policy with a timeout that names it. */
  return !has_timeout_policy(job->spec);
}

static bool req_equal(const ctl_req *a, const ctl_request *b) {
  return a->event == b->event && a->action == b->action && a->delayed == b->delayed &&
         a->has_exit_code == b->has_exit_code &&
         (!a->has_exit_code || a->exit_code == b->exit_code) &&
         strcmp(a->task, b->task ? b->task : "") == 0 && strcmp(a->pod, b->pod ? b->pod : "") == 0;
}

/* The entries not started yet. */
static ctl_req *not_started(const ctl_reqlist *l) {
  return l->busy && l->head ? l->head->next : l->head;
}

/* Removes the entries after prev (NULL: from the head) that only ask for a sync: the
 * request being added runs a sync of its own. Without this a sync queued by the first sign of
 * a pod's deletion runs before the PodEvicted behind it and creates the replacement pod that
 * the policy (RestartTask) then deletes again: a pointless pod, and a window in which a
 * second, outside delete by name (kwok deletes twice without a uid precondition) hits the
 * replacement and counts as a second eviction. */
static void drop_syncs(ctl_reqlist *l, ctl_req *prev) {
  ctl_req **link = prev ? &prev->next : &l->head;
  l->tail = prev;
  while (*link) {
    ctl_req *q = *link;
    if (q->event == CTL_EV_OUT_OF_SYNC && q->action == CTL_ACT_NONE && !q->delayed) {
      *link = q->next;
      free(q);
      l->n--;
      continue;
    }
    l->tail = q;
    link = &q->next;
  }
}

static void append(ctl_reqlist *l, ctl_req *q) {
  if (l->tail)
    l->tail->next = q;
  else
    l->head = q;
  l->tail = q;
  l->n++;
}

static ctl_req *req_new(const ctl_request *req, bool sync_only) {
  ctl_req *q = calloc(1, sizeof(*q));
  if (!q)
    return NULL;
  q->event = sync_only ? CTL_EV_OUT_OF_SYNC : req->event;
  q->action = req->action;
  q->has_exit_code = req->has_exit_code;
  q->exit_code = req->exit_code;
  q->has_job_version = req->has_job_version;
  q->job_version = req->job_version;
  q->delayed = req->delayed;
  snprintf(q->task, sizeof(q->task), "%s", req->task ? req->task : "");
  snprintf(q->pod, sizeof(q->pod), "%s", req->pod ? req->pod : "");
  snprintf(q->job_uid, sizeof(q->job_uid), "%s", req->job_uid ? req->job_uid : "");
  return q;
}

static ctl_reqlist *list_get(ctl_reqs *r, const char *key) {
  ctl_reqlist *l = kc_strmap_get(&r->lists, key);
  if (l)
    return l;
  if (!(l = calloc(1, sizeof(*l))))
    return NULL;
  if (kc_strmap_put(&r->lists, key, l, NULL) < 0) {
    free(l);
    return NULL;
  }
  return l;
}

int ctl_reqs_add(ctl_reqs *r, const char *key, const ctl_request *req, bool sync_only) {
  ctl_reqlist *l = list_get(r, key);
  if (!l)
    return KC_ENOMEM;
  ctl_req *first = not_started(l);
  if (first && sync_only)
    return 0;
  if (first) {
    drop_syncs(l, l->busy && l->head ? l->head : NULL);
    first = not_started(l);
  }
  for (const ctl_req *q = first; q; q = q->next)
    if (req_equal(q, req))
      return 0;
  if (l->n >= CTL_REQS_MAX) { /* the cap (STYLE 13): the queued requests already imply a sync */
    KC_WARN("job %s: %zu requests pending; dropping %s", key, l->n, ctl_event_name(req->event));
    return 0;
  }
  ctl_req *q = req_new(req, sync_only);
  if (!q)
    return KC_ENOMEM;
  append(l, q);
  return 0;
}

ctl_req *ctl_reqs_head(ctl_reqs *r, const char *key) {
  ctl_reqlist *l = list_get(r, key);
  if (!l)
    return NULL;
  if (!l->head) {
    ctl_request sync = {.event = CTL_EV_OUT_OF_SYNC};
    ctl_req *q = req_new(&sync, false);
    if (!q)
      return NULL;
    append(l, q);
  }
  return l->head;
}

void ctl_reqs_begin(ctl_reqs *r, const char *key) {
  ctl_reqlist *l = kc_strmap_get(&r->lists, key);
  if (l)
    l->busy = true;
}

void ctl_reqs_end(ctl_reqs *r, const char *key, int err, bool conflict) {
  ctl_reqlist *l = kc_strmap_get(&r->lists, key);
  if (!l)
    return;
  l->busy = false;
  if (err == 0 && l->head) {
    ctl_req *h = l->head;
    l->head = h->next;
    if (!l->head)
      l->tail = NULL;
    l->n--;
    free(h);
  } else if (l->head && !conflict) {
    l->head->failures++;
  }
}

bool ctl_reqs_finish(ctl_reqs *r, const char *key) {
  ctl_reqlist *l = kc_strmap_get(&r->lists, key);
  if (l && l->n > 0)
    return true;
  void *old = NULL;
  if (l && kc_strmap_del(&r->lists, key, &old) == 0)
    list_free(old);
  return false;
}

void ctl_reqs_drop_key(ctl_reqs *r, const char *key) {
  void *old = NULL;
  ctl_reqlist *l = kc_strmap_get(&r->lists, key);
  if (l && l->busy && l->head) {
    /* The head is executing; it stays in its list, in the map, and is freed when it
     * finishes. Trimmed in place: taking the list out and putting it back could fail for
     * want of memory and lose the executing request. */
    free_reqs(l->head->next);
    l->head->next = NULL;
    l->tail = l->head;
    l->n = 1;
  } else if (kc_strmap_del(&r->lists, key, &old) == 0) {
    list_free(old);
  }
}

ctl_request ctl_req_request(const ctl_req *r) {
  ctl_request q = {.event = r->event,
                   .action = r->action,
                   .has_exit_code = r->has_exit_code,
                   .exit_code = r->exit_code,
                   .task = r->task[0] ? r->task : NULL,
                   .pod = r->pod[0] ? r->pod : NULL,
                   .job_uid = r->job_uid[0] ? r->job_uid : NULL,
                   .has_job_version = r->has_job_version,
                   .job_version = r->job_version,
                   .delayed = r->delayed};
  return q;
}

bool ctl_req_over_limit(const ctl_req *r, int max_requeue) {
  return max_requeue >= 0 && r->failures > max_requeue && r->action != CTL_ACT_TERMINATE_JOB;
}
