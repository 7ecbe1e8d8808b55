/* The job controller's pending requests (Volcano apis.Request), a list per Job key, and how a
 * new request merges with those already pending. A pure module. The work queue holds only
 * keys; the list says what the next sync of a key is for: its head, or a plain sync when the
 * list is empty (a resync, a requeue). The head stays in place while its plan executes
 * ("busy"), and goes once the plan has succeeded. */
#ifndef CTL_REQS_H
#define CTL_REQS_H

#include <stdbool.h>
#include <stddef.h>

#include "ctl_job.h"
#include "kc_error.h"
#include "kc_strmap.h"

/* Per Job; beyond it a new request is dropped (the pending ones already imply a sync). */
#define CTL_REQS_MAX 4096

/* One pending request, strings owned. */
typedef struct ctl_req {
  struct ctl_req *next;
  ctl_event event;
  ctl_action action;
  bool has_exit_code, has_job_version, delayed;
  int exit_code, job_version;
  int failures; /* syncs or plans of this request that failed */
  char task[CTL_NAME_MAX];
  char pod[CTL_NAME_MAX];
  char job_uid[CTL_UID_MAX];
} ctl_req;

typedef struct {
  ctl_req *head, *tail;
  size_t n;
  bool busy; /* the head's plan is executing */
} ctl_reqlist;

typedef struct {
  kc_strmap lists; /* job key -> ctl_reqlist*; iterate it for the keys with requests */
} ctl_reqs;

void ctl_reqs_init(ctl_reqs *r);
void ctl_reqs_close(ctl_reqs *r);

/* Whether req's only effect is a sync of job (borrowed, may be NULL): one pending is as good
 * as many, because every sync reads the caches as they are when it runs. A PodPending is one
 * unless a policy of the Job has a timeout. */
bool ctl_request_sync_only(const ctl_request *req, const Kiln__Job *job);

/* Adds req (strings copied) to the Job key's list, merged with the requests not yet started:
 * a sync_only request (ctl_request_sync_only) is implied by any of them and is not added (an
 * added one is kept as a plain OutOfSync); any other request drops the plain syncs pending
 * (it runs a sync of its own) and is not added when an equal one is pending. 0 or KC_ENOMEM. */
KC_NODISCARD int ctl_reqs_add(ctl_reqs *r, const char *key, const ctl_request *req, bool sync_only);
/* The request the next sync of key is for: the head of its list, a plain sync added when the
 * list is empty. NULL when out of memory. */
ctl_req *ctl_reqs_head(ctl_reqs *r, const char *key);
/* The head's plan is executing: it stays the head until ctl_reqs_end. */
void ctl_reqs_begin(ctl_reqs *r, const char *key);
/* The head's sync or plan ended with err: on success the head goes; on a failure other than a
 * conflict (a stale cache, not the request's fault) its failures count one more. */
void ctl_reqs_end(ctl_reqs *r, const char *key, int err, bool conflict);
/* Whether key has requests left; an empty list goes. */
bool ctl_reqs_finish(ctl_reqs *r, const char *key);
/* Forgets the Job key's requests, all but the head while its plan executes (freed when it
 * ends). */
void ctl_reqs_drop_key(ctl_reqs *r, const char *key);

/* r as the core's type, borrowing its strings. */
ctl_request ctl_req_request(const ctl_req *r);
/* Whether r has failed more than max_requeue times (-1: unlimited) and is not a termination
 * already: Volcano then terminates the Job (--max-requeue-num). */
bool ctl_req_over_limit(const ctl_req *r, int max_requeue);

#endif
