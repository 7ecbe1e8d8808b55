/* Internals shared by the shell (ctl_shell.c) and the executor (ctl_exec.c). */
#ifndef CTL_SHELL_INT_H
#define CTL_SHELL_INT_H

#include "ctl_job.h"
#include "ctl_job_shell.h"
#include "ctl_inf.h"
#include "kc_metrics.h"
#include "kc_strmap.h"
#include "kc_workqueue.h"
#include "kc_error.h"

enum {
  CTL_INF_JOBS = 0,
  CTL_INF_PODS,
  CTL_INF_PODGROUPS,
  CTL_INF_COMMANDS,
  CTL_INF_QUEUES,
  CTL_INF_PVCS,
  CTL_INF_PRIORITY,
  CTL_INF_COUNT
};

/* A pod as the pod store keeps it: the core's view plus what the handlers route by. */
typedef struct {
  ctl_pod pod;
  char ns[CTL_NAME_MAX];
  char job[CTL_NAME_MAX];      /* annotation volcano.sh/job-name */
  char owner_uid[CTL_UID_MAX]; /* controller ownerRef uid when it is a Job */
  bool job_owned;
} ctl_spod;

/* A PVC: only its namespace and name matter. */
typedef struct {
  char ns[CTL_NAME_MAX];
  char name[CTL_NAME_MAX];
} ctl_spvc;

/* One queued request (Volcano apis.Request), strings owned. */
typedef struct ctl_req {
  struct ctl_req *next;
  ctl_event event;
  ctl_action action;
  bool has_exit_code, has_job_version, delayed;
  int exit_code, job_version;
  int failures;
  char task[CTL_NAME_MAX];
  char pod[CTL_NAME_MAX];
  char job_uid[CTL_UID_MAX];
} ctl_req;

typedef struct {
  ctl_req *head, *tail;
  size_t n;
  bool busy; /* head is being executed */
} ctl_reqlist;

/* What this controller asked for and the watch has not shown yet (client-go's expectations,
 * by name): a created pod is shown in the view as Pending until the store has it, a deleted
 * pod as terminating until the store loses it. */
typedef struct {
  bool create;
  ctl_pod pod;    /* create: the pod as sent; delete: name and uid */
  uint64_t at_ns; /* when asked; expectations expire after CTL_EXPECT_TTL_NS */
} ctl_expect;

#define CTL_EXPECT_TTL_NS (300ull * 1000000000ull)

/* A Job status whose only change is in the pod counters (pending, running, ..., taskStatusCount)
 * is written at most this long after the first such change was computed; any other change
 * (phase, retryCount, version, conditions, ...) is written at once. Kubernetes' Job controller
 * batches pod-driven status updates the same way (syncJobBatchPeriod, 1 s): with one-pod Jobs
 * the count of a pod that is created and starts within the period is never written twice. */
#define CTL_STATUS_BATCH_NS (1000ull * 1000000ull)

/* A pod event that only asks for a sync (no policy acts on it) is batched the same way: the
 * Job is synced at most once per CTL_SYNC_BATCH_NS for such events, as Kubernetes' Job
 * controller enqueues a Job syncJobBatchPeriod after a pod event. Without it, the bind and
 * start of each of a 2,000-pod Job's pods cost a sync over all 2,000 (765 syncs measured; 114
 * with it); the Job's own events, its PodGroup's phase changes, Commands and policy events
 * are not delayed. */
#define CTL_SYNC_BATCH_NS (1000ull * 1000000ull)

typedef struct {
  uint64_t last_sync_ns;  /* when a sync of the key last started */
  uint64_t status_due_ns; /* when its counters-only change was first deferred; 0 none */
} ctl_keystate;

typedef struct ctl_delay {
  uv_timer_t timer;
  struct ctl_shell *shell;
  struct ctl_delay *prev, *next;
  char key[2 * CTL_NAME_MAX];
  ctl_delayed d;
} ctl_delay;

struct ctl_shell {
  uv_loop_t *loop;
  kc_client *client;
  ctl_shell_options opt;
  ctl_inf *inf[CTL_INF_COUNT];
  bool synced[CTL_INF_COUNT];
  bool all_synced, started, stopping, freed;
  kc_workqueue *queue;
  kc_strmap reqs;         /* job key -> ctl_reqlist* */
  kc_strmap expect;       /* job key -> kc_strmap* (pod name -> ctl_expect*) */
  kc_strmap jobs_written; /* job key -> ctl_written* (ctl_overlay.h) */
  kc_strmap pgs_written;  /* PodGroup key -> ctl_written* */
  kc_strmap keys;         /* job key -> ctl_keystate* */
  ctl_delay *delays;
  int inflight; /* plans being executed */
  ctl_shell_stats stats;
  /* shutdown */
  uv_timer_t stop_timer;
  bool stop_timer_init;
  void (*stop_done)(void *ud);
  void *stop_ud;
  /* metrics */
  kc_metric *m_latency, *m_completed, *m_failed;
};

/* The executor: carries out plan (stolen) for key; when every write has finished it calls
 * ctl__exec_done(s, key, err, conflict). */
KC_NODISCARD int ctl__exec_start(ctl_shell *s, const char *key, const Kiln__Job *job,
                                 const char *job_rv, ctl_plan *plan);
void ctl__exec_done(ctl_shell *s, const char *key, int err, bool conflict);

/* Expectations (ctl_exec.c). */
KC_NODISCARD int ctl__expect_add(ctl_shell *s, const char *key, const ctl_pod *pod, bool create);
void ctl__expect_del(ctl_shell *s, const char *key, const char *pod);
void ctl__expect_observe(ctl_shell *s, const char *key, const ctl_spod *p, bool deleted);
void ctl__expect_drop_key(ctl_shell *s, const char *key);
kc_strmap *ctl__expect_map(ctl_shell *s, const char *key);

/* Delayed actions (ctl_exec.c). */
KC_NODISCARD int ctl__delay_arm(ctl_shell *s, const char *key, const ctl_delayed *d, int64_t now);
void ctl__delay_cancel(ctl_shell *s, const char *key, const ctl_cancel *c);
void ctl__delay_drop_key(ctl_shell *s, const char *key);

/* Requests (ctl_shell.c). req's strings are copied. */
KC_NODISCARD int ctl__request(ctl_shell *s, const char *key, const ctl_request *req);

/* Events on the Job, best effort (ctl_exec.c). */
void ctl__record_event(ctl_shell *s, const Kiln__Job *job, ctl_event_type type, const char *reason,
                       const char *message);

/* The write fence: 0 or KC_ENOTLEADER. */
KC_NODISCARD int ctl__fence(const ctl_shell *s);

#endif
