/* The shell's input side: informers and their handlers (Volcano job_controller_handler.go),
 * the per-Job request lists, and the work queue that hands one Job key at a time to
 * ctl_job_sync(). See ctl_job_shell.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"
#include "ctl_delay.h"
#include "ctl_expect.h"
#include "ctl_inf.h"
#include "ctl_int.h"
#include "ctl_job_cache.h"
#include "ctl_job_exec_shell.h"
#include "ctl_job_shell.h"
#include "ctl_keypool_shell.h"
#include "ctl_overlay.h"
#include "ctl_reqs.h"
#include "kc_codec.h"
#include "kc_clock.h"
#include "kc_container.h"
#include "kc_error.h"
#include "kc_events.h"
#include "kc_log.h"
#include "kc_metrics.h"
#include "kc_pb.h"
#include "kc_strmap.h"
#include "kc_workqueue.h"

#define KEY_MAX (2 * CTL_NAME_MAX)

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

/* A Job status whose only change is in the pod counters is written at most
 * CTL_STATUS_BATCH_NS (running among them) or CTL_STATUS_HIDDEN_BATCH_NS (only counters
 * `kubectl get vcjob` does not show) after the first such change was computed (ctl_overlay.h);
 * any other change (phase, retryCount, version, conditions, ...) is written at once. */

/* A pod event that only asks for a sync (no policy acts on it) is batched the same way: the
 * Job is synced at most once per CTL_SYNC_BATCH_NS for such events, as Kubernetes' Job
 * controller enqueues a Job syncJobBatchPeriod after a pod event. Without it, the bind and
 * start of each of a 2,000-pod Job's pods cost a sync over all 2,000 (765 syncs measured; 114
 * with it); the Job's own events, its PodGroup's phase changes, Commands and policy events
 * are not delayed. */
#define CTL_SYNC_BATCH_NS (1000ull * 1000000ull)

/* A plan that met a stale cache (Conflict) is tried again this soon, without backoff. */
#define CTL_CONFLICT_RETRY_NS (50 * 1000000ull)

typedef struct {
  uint64_t last_sync_ns;  /* when a sync of the key last started */
  uint64_t status_due_ns; /* when its deferred counters-only change is written; 0 none */
} ctl_keystate;

struct ctl_shell {
  uv_loop_t *loop;
  ctl_shell_options opt;
  ctl_inf *inf[CTL_INF_COUNT];
  bool synced[CTL_INF_COUNT];
  bool all_synced, started, stopping, freed;
  kc_workqueue *queue;
  ctl_reqs reqs;          /* job key -> its pending requests */
  ctl_expects expect;     /* pods asked for and not seen yet */
  kc_strmap jobs_written; /* job key -> ctl_written* (ctl_overlay.h) */
  kc_strmap pgs_written;  /* PodGroup key -> ctl_written* */
  kc_strmap keys;         /* job key -> ctl_keystate* */
  ctl_delays delays;      /* delayed actions, due on delay_timer */
  uv_timer_t delay_timer;
  bool delay_timer_init;
  ctl_exec_env exec; /* what the executor works with; its metrics are the shell's */
  int inflight;      /* plans being executed */
  ctl_shell_stats stats;
  ctl_keypool *keypool; /* ssh key pairs, made off the loop thread */
  /* shutdown */
  uv_timer_t stop_timer;
  bool stop_timer_init;
  int closing; /* timers whose close callback has not run */
  void (*stop_done)(void *ud);
  void *stop_ud;
};

static void copy_str(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

static const char *meta_name(const Kiln__ObjectMeta *m) {
  return m && m->name ? m->name : "";
}
static const char *meta_ns(const Kiln__ObjectMeta *m) {
  return m && m->namespace_ ? m->namespace_ : "";
}

/* ---- decoders (the informers' transform hooks) ---- */

static void *decode_job(json_t *obj, void *ud, char *err, size_t errlen) {
  Kiln__Job *j = NULL;
  return kc_job_decode(obj, &j, err, errlen) == 0 ? j : NULL;
}
static void *decode_pg(json_t *obj, void *ud, char *err, size_t errlen) {
  Kiln__PodGroup *pg = NULL;
  return kc_podgroup_decode(obj, &pg, err, errlen) == 0 ? pg : NULL;
}
static void *decode_cmd(json_t *obj, void *ud, char *err, size_t errlen) {
  Kiln__Command *c = NULL;
  return kc_command_decode(obj, &c, err, errlen) == 0 ? c : NULL;
}
static void *decode_queue(json_t *obj, void *ud, char *err, size_t errlen) {
  Kiln__Queue *q = NULL;
  return kc_queue_decode(obj, &q, err, errlen) == 0 ? q : NULL;
}
static void *decode_pc(json_t *obj, void *ud, char *err, size_t errlen) {
  Kiln__PriorityClass *pc = NULL;
  return kc_priorityclass_decode(obj, &pc, err, errlen) == 0 ? pc : NULL;
}
static void *decode_pvc(json_t *obj, void *ud, char *err, size_t errlen) {
  json_t *meta = json_object_get(obj, "metadata");
  ctl_spvc *p = calloc(1, sizeof(*p));
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  copy_str(p->ns, sizeof(p->ns), json_string_value(json_object_get(meta, "namespace")));
  copy_str(p->name, sizeof(p->name), json_string_value(json_object_get(meta, "name")));
  return p;
}

static void *decode_pod(json_t *obj, void *ud, char *err, size_t errlen) {
  ctl_spod *p = calloc(1, sizeof(*p));
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (ctl_pod_from_json(obj, &p->pod) != 0) {
    snprintf(err, errlen, "not a pod");
    free(p);
    return NULL;
  }
  json_t *meta = json_object_get(obj, "metadata");
  json_t *ann = json_object_get(meta, "annotations");
  copy_str(p->ns, sizeof(p->ns), json_string_value(json_object_get(meta, "namespace")));
  const char *job = json_string_value(json_object_get(ann, CTL_KEY_JOB_NAME));
  if (!job)
    job = json_string_value(json_object_get(json_object_get(meta, "labels"), CTL_KEY_JOB_NAME));
  copy_str(p->job, sizeof(p->job), job);
  size_t i;
  json_t *ref;
  json_array_foreach(json_object_get(meta, "ownerReferences"), i, ref) {
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const char *av = json_string_value(json_object_get(ref, "apiVersion"));
    if (json_is_true(json_object_get(ref, "controller")) && kind && strcmp(kind, "Job") == 0 &&
        av && strcmp(av, CTL_JOB_API_VERSION) == 0) {
      p->job_owned = true;
      copy_str(p->owner_uid, sizeof(p->owner_uid), json_string_value(json_object_get(ref, "uid")));
    }
  }
  return p;
}

/* The same from Kubernetes' protobuf (--kube-api-content-type). */
static void *decode_pod_pb(const uint8_t *data, size_t len, void *ud, char *err, size_t errlen) {
  const ctl_shell *s = ud;
  const K8s__Pod *k = ctl_inf_hub_pod(s->opt.hub, data, len);
  if (k && !ctl_pb_label(k->metadata, CTL_KEY_JOB_NAME)) /* the label selector of defs[] */
    return CTL_INF_SKIP;
  ctl_spod *p = k ? calloc(1, sizeof(*p)) : NULL;
  if (!p || ctl_pod_from_pb(k, &p->pod) != 0) {
    snprintf(err, errlen, "%s", k ? (p ? "not a pod" : "out of memory") : "not a protobuf Pod");
    free(p);
    return NULL;
  }
  const K8s__ObjectMeta *m = k->metadata;
  copy_str(p->ns, sizeof(p->ns), m->namespace_);
  const char *job = ctl_pb_annotation(m, CTL_KEY_JOB_NAME);
  copy_str(p->job, sizeof(p->job), job ? job : ctl_pb_label(m, CTL_KEY_JOB_NAME));
  for (size_t i = 0; i < m->n_owner_references; i++) {
    const K8s__OwnerReference *r = m->owner_references[i];
    if (r->controller && r->kind && strcmp(r->kind, "Job") == 0 && r->api_version &&
        strcmp(r->api_version, CTL_JOB_API_VERSION) == 0) {
      p->job_owned = true;
      copy_str(p->owner_uid, sizeof(p->owner_uid), r->uid);
    }
  }
  return p;
}

/* ---- indexes ---- */

static int index_pod_job(const void *obj, kc_index_out *out, void *ud) {
  const ctl_spod *p = obj;
  if (!p->job[0])
    return 0;
  char key[KEY_MAX];
  if (kc_store_key(key, sizeof(key), p->ns, p->job) != 0)
    return 0;
  return kc_index_out_add(out, key);
}

static int index_cmd_job(const void *obj, kc_index_out *out, void *ud) {
  const Kiln__Command *c = obj;
  if (!c->target || !c->target->name || !c->target->kind || strcmp(c->target->kind, "Job") != 0)
    return 0;
  char key[KEY_MAX];
  if (kc_store_key(key, sizeof(key), meta_ns(c->metadata), c->target->name) != 0)
    return 0;
  return kc_index_out_add(out, key);
}

static int index_pvc_ns(const void *obj, kc_index_out *out, void *ud) {
  return kc_index_out_add(out, ((const ctl_spvc *)obj)->ns);
}

static int index_job_queue(const void *obj, kc_index_out *out, void *ud) {
  return kc_index_out_add(out, ctl__queue(obj));
}

/* Queues by their parent: a queue that is some queue's parent is not a leaf. */
static int index_queue_parent(const void *obj, kc_index_out *out, void *ud) {
  const Kiln__Queue *q = obj;
  if (!q->spec || !q->spec->parent || !*q->spec->parent)
    return 0;
  return kc_index_out_add(out, q->spec->parent);
}

static kc_store *store(const ctl_shell *s, int which) {
  return ctl_inf_store(s->inf[which]);
}

/* ---- requests ---- */

/* Queues a request for the Job key and the key; batch: a pod event (see CTL_SYNC_BATCH_NS). */
static int request(ctl_shell *s, const char *key, const ctl_request *req, bool batch) {
  if (s->stopping)
    return 0;
  const Kiln__Job *job = kc_store_get(store(s, CTL_INF_JOBS), key);
  bool sync_only = ctl_request_sync_only(req, job);
  int rc = ctl_reqs_add(&s->reqs, key, req, sync_only);
  if (rc)
    return rc;
  if (!s->all_synced)
    return 0; /* queued when the caches have synced */
  if (batch && sync_only) {
    ctl_keystate *ks = kc_strmap_get(&s->keys, key);
    uint64_t now = uv_hrtime();
    if (ks && now - ks->last_sync_ns < CTL_SYNC_BATCH_NS)
      return kc_workqueue_add_after(s->queue, key, CTL_SYNC_BATCH_NS - (now - ks->last_sync_ns));
  }
  return kc_workqueue_add(s->queue, key);
}

/* ---- delayed actions ---- */

static void delay_fire(uv_timer_t *t);

/* Keeps the timer armed at the earliest delayed action. */
static void delay_rearm(ctl_shell *s) {
  uint64_t due;
  if (!ctl_delays_next_due(&s->delays, &due)) {
    if (s->delay_timer_init)
      uv_timer_stop(&s->delay_timer);
    return;
  }
  if (!s->delay_timer_init) {
    uv_timer_init(s->loop, &s->delay_timer);
    s->delay_timer_init = true;
  }
  uint64_t now = uv_now(s->loop);
  uv_timer_start(&s->delay_timer, delay_fire, due > now ? due - now : 0, 0);
}

/* Each delayed action that is due comes back as a request with its action. */
static void delay_fire(uv_timer_t *t) {
  ctl_shell *s = container_of(t, ctl_shell, delay_timer);
  char key[KEY_MAX];
  ctl_delayed d;
  while (ctl_delays_pop_due(&s->delays, uv_now(s->loop), key, sizeof(key), &d)) {
    KC_INFO("job %s: delayed action %s (%s) is due", key, ctl_action_name(d.action),
            ctl_event_name(d.event));
    ctl_request r = {.event = d.event,
                     .action = d.action,
                     .task = d.task[0] ? d.task : NULL,
                     .pod = d.pod[0] ? d.pod : NULL,
                     .delayed = true};
    int rc = request(s, key, &r, false);
    if (rc)
      KC_WARN("job %s: cannot queue the delayed action: %s", key, kc_strerror(rc));
  }
  delay_rearm(s);
}

/* After a plan has been written: the timers it cancels go, the one it asks for is armed. */
static void plan_delays(ctl_shell *s, const char *key, const ctl_plan *p) {
  for (size_t i = 0; i < p->ncancels; i++)
    ctl_delays_cancel(&s->delays, key, &p->cancels[i]);
  if (p->has_delayed) {
    uint64_t due = ctl_delay_due_ms(&p->delayed, kc_clock_wall_s(), uv_now(s->loop));
    if (ctl_delays_arm(&s->delays, key, &p->delayed, due) < 0)
      KC_WARN("%s: the delayed action is not armed (out of memory)", key);
  }
  delay_rearm(s);
}

static void drop_key(ctl_shell *s, const char *key) {
  void *old = NULL;
  ctl_reqs_drop_key(&s->reqs, key);
  ctl_expect_drop_key(&s->expect, key);
  ctl_delays_drop_key(&s->delays, key);
  delay_rearm(s);
  ctl_written_drop(&s->jobs_written, key);
  if (kc_strmap_del(&s->keys, key, &old) == 0)
    free(old);
}

/* ---- handlers ---- */

static void simple_request(ctl_shell *s, const char *key, ctl_event ev) {
  ctl_request r = {.event = ev};
  int rc = request(s, key, &r, false);
  if (rc)
    KC_WARN("job %s: cannot queue request %s: %s", key, ctl_event_name(ev), kc_strerror(rc));
}

static void on_job_add(const char *key, void *obj, void *ud) {
  simple_request(ud, key, CTL_EV_OUT_OF_SYNC);
}

static bool spec_equal(const Kiln__Job *a, const Kiln__Job *b) {
  if (!a->spec || !b->spec)
    return a->spec == b->spec;
  size_t la = protobuf_c_message_get_packed_size(&a->spec->base);
  size_t lb = protobuf_c_message_get_packed_size(&b->spec->base);
  if (la != lb)
    return false;
  uint8_t *ba = malloc(la ? la : 1), *bb = malloc(lb ? lb : 1);
  bool eq = false;
  if (ba && bb) {
    protobuf_c_message_pack(&a->spec->base, ba);
    protobuf_c_message_pack(&b->spec->base, bb);
    eq = memcmp(ba, bb, la) == 0;
  }
  free(ba);
  free(bb);
  return eq;
}

static const char *job_phase(const Kiln__Job *j) {
  return j->status && j->status->state && j->status->state->phase ? j->status->state->phase : "";
}

static void on_job_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  const Kiln__Job *o = old_obj, *n = new_obj;
  /* Volcano: only a spec change or a phase change (made by someone else) needs a sync. */
  bool deleting = n->metadata && n->metadata->deletion_timestamp &&
                  !(o->metadata && o->metadata->deletion_timestamp);
  if (!deleting && spec_equal(o, n) && strcmp(job_phase(o), job_phase(n)) == 0)
    return;
  simple_request(ud, key, CTL_EV_OUT_OF_SYNC);
}

static void on_job_delete(const char *key, void *obj, void *ud) {
  ctl_shell *s = ud;
  const Kiln__Job *j = obj;
  drop_key(s, key);
  /* Its uid never comes back: the event recorder's correlation for it can go. */
  kc_event_forget(s->opt.events, j->metadata ? j->metadata->uid : NULL);
  const char *vals[] = {meta_name(j->metadata), ctl__queue(j)};
  if (s->exec.m_completed)
    kc_metric_remove(s->exec.m_completed, vals);
  if (s->exec.m_failed)
    kc_metric_remove(s->exec.m_failed, vals);
  const char *e2e[] = {meta_name(j->metadata), ctl__queue(j),
                       j->metadata && j->metadata->namespace_ ? j->metadata->namespace_ : ""};
  if (s->exec.m_e2e)
    kc_metric_remove(s->exec.m_e2e, e2e);
}

static void pod_job_key(const ctl_spod *p, char *key) {
  kc_store_key(key, KEY_MAX, p->ns, p->job);
}

static bool pod_relevant(const ctl_spod *p) {
  /* Volcano's handlers look only at pods a Job controls, with the three annotations. */
  return p->job_owned && p->job[0] && p->pod.task[0] && p->pod.version >= 0;
}

static void pod_request(ctl_shell *s, const ctl_spod *p, ctl_event ev, bool has_exit,
                        int exit_code) {
  char key[KEY_MAX];
  pod_job_key(p, key);
  ctl_request r = {.event = ev,
                   .task = p->pod.task,
                   .pod = p->pod.name,
                   .job_uid = p->owner_uid,
                   .has_job_version = true,
                   .job_version = p->pod.version,
                   .has_exit_code = has_exit,
                   .exit_code = exit_code};
  int rc = request(s, key, &r, true);
  if (rc)
    KC_WARN("job %s: cannot queue %s for pod %s: %s", key, ctl_event_name(ev), p->pod.name,
            kc_strerror(rc));
}

static void on_pod_add(const char *key, void *obj, void *ud) {
  ctl_shell *s = ud;
  const ctl_spod *p = obj;
  char jk[KEY_MAX];
  pod_job_key(p, jk);
  ctl_expect_observe(&s->expect, jk, &p->pod, false);
  if (!pod_relevant(p))
    return;
  pod_request(s, p, p->pod.out_of_sync ? CTL_EV_OUT_OF_SYNC : CTL_EV_POD_PENDING, false, 0);
}

static const Kiln__TaskSpec *find_task(const Kiln__Job *j, const char *task) {
  for (size_t i = 0; j && j->spec && i < j->spec->n_tasks; i++)
    if (j->spec->tasks[i]->name && strcmp(j->spec->tasks[i]->name, task) == 0)
      return j->spec->tasks[i];
  return NULL;
}

/* Volcano's isControlledBy + task counting over the pod cache. */
static void task_pods(ctl_shell *s, const char *jk, const char *task, int *succeeded,
                      int *restarts) {
  kc_store_iter it;
  *succeeded = *restarts = 0;
  if (kc_store_index_iter(store(s, CTL_INF_PODS), "job", jk, &it) != 0)
    return;
  const char *k;
  void *o;
  while (kc_store_iter_next(&it, &k, &o)) {
    const ctl_spod *p = o;
    if (strcmp(p->pod.task, task) != 0)
      continue;
    if (p->pod.phase == CTL_POD_SUCCEEDED)
      (*succeeded)++;
    *restarts += p->pod.restarts;
  }
}

static void on_pod_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  ctl_shell *s = ud;
  const ctl_spod *o = old_obj, *n = new_obj;
  char jk[KEY_MAX];
  pod_job_key(n, jk);
  ctl_expect_observe(&s->expect, jk, &n->pod, false);
  if (!pod_relevant(n))
    return;
  if (n->pod.out_of_sync) {
    pod_request(s, n, CTL_EV_OUT_OF_SYNC, false, 0);
    return;
  }
  const Kiln__Job *job = kc_store_get(store(s, CTL_INF_JOBS), jk);
  ctl_pod_phase op = o->pod.phase, np = n->pod.phase;
  if (np == CTL_POD_FAILED && op != CTL_POD_FAILED) {
    pod_request(s, n, CTL_EV_POD_FAILED, n->pod.has_exit_code, n->pod.exit_code);
    return;
  }
  if (np == CTL_POD_SUCCEEDED && op != CTL_POD_SUCCEEDED) {
    const Kiln__TaskSpec *t = find_task(job, n->pod.task);
    int succ, restarts;
    task_pods(s, jk, n->pod.task, &succ, &restarts);
    if (t && succ >= t->replicas) {
      pod_request(s, n, CTL_EV_TASK_COMPLETED, false, 0);
      return;
    }
  }
  if ((np == CTL_POD_RUNNING || np == CTL_POD_PENDING) && n->pod.restarts > o->pod.restarts) {
    const Kiln__TaskSpec *t = find_task(job, n->pod.task);
    int succ, restarts;
    task_pods(s, jk, n->pod.task, &succ, &restarts);
    int max = t && t->has_max_retry ? t->max_retry : 3;
    if (max == 0)
      max = 3;
    if (max > 0 && restarts >= max) {
      pod_request(s, n, CTL_EV_TASK_FAILED, false, 0);
      return;
    }
  }
  if (np == CTL_POD_RUNNING && op != CTL_POD_RUNNING)
    pod_request(s, n, CTL_EV_POD_RUNNING, false, 0);
  else if (np == CTL_POD_PENDING && op != CTL_POD_PENDING)
    pod_request(s, n, CTL_EV_POD_PENDING, false, 0);
  else
    pod_request(s, n, CTL_EV_OUT_OF_SYNC, false, 0);
}

static void on_pod_delete(const char *key, void *obj, void *ud) {
  ctl_shell *s = ud;
  const ctl_spod *p = obj;
  char jk[KEY_MAX];
  pod_job_key(p, jk);
  ctl_expect_observe(&s->expect, jk, &p->pod, true);
  if (!pod_relevant(p))
    return;
  pod_request(s, p, p->pod.out_of_sync ? CTL_EV_OUT_OF_SYNC : CTL_EV_POD_EVICTED, false, 0);
}

/* The Job a PodGroup belongs to: its controller owner. */
static bool pg_job_key(const Kiln__PodGroup *pg, char *key) {
  const Kiln__ObjectMeta *m = pg->metadata;
  for (size_t i = 0; m && i < m->n_owner_references; i++) {
    const Kiln__OwnerReference *r = m->owner_references[i];
    if (r->kind && strcmp(r->kind, "Job") == 0 && r->name && r->api_version &&
        strcmp(r->api_version, CTL_JOB_API_VERSION) == 0) {
      return kc_store_key(key, KEY_MAX, meta_ns(m), r->name) == 0;
    }
  }
  return false;
}

static const char *pg_phase(const Kiln__PodGroup *pg) {
  return pg->status && pg->status->phase ? pg->status->phase : "";
}

static void on_pg_add(const char *key, void *obj, void *ud) {
  char jk[KEY_MAX];
  if (pg_job_key(obj, jk))
    simple_request(ud, jk, CTL_EV_OUT_OF_SYNC);
}

static void on_pg_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  const Kiln__PodGroup *o = old_obj, *n = new_obj;
  char jk[KEY_MAX];
  if (strcmp(pg_phase(o), pg_phase(n)) == 0 || !pg_job_key(n, jk))
    return;
  simple_request(ud, jk, strcmp(pg_phase(n), "Unknown") == 0 ? CTL_EV_UNKNOWN : CTL_EV_OUT_OF_SYNC);
}

static void on_pg_delete(const char *key, void *obj, void *ud) {
  ctl_shell *s = ud;
  ctl_written_drop(&s->pgs_written, key);
  char jk[KEY_MAX];
  if (pg_job_key(obj, jk))
    simple_request(ud, jk, CTL_EV_OUT_OF_SYNC);
}

static void on_cmd_add(const char *key, void *obj, void *ud) {
  const Kiln__Command *c = obj;
  if (!c->target || !c->target->kind || strcmp(c->target->kind, "Job") != 0 || !c->target->name)
    return;
  char jk[KEY_MAX];
  if (kc_store_key(jk, sizeof(jk), meta_ns(c->metadata), c->target->name) == 0)
    simple_request(ud, jk, CTL_EV_COMMAND_ISSUED);
}

/* A queue that appears or changes state can unblock the Jobs that name it. */
static void queue_changed(ctl_shell *s, const char *name) {
  kc_store_iter it;
  if (kc_store_index_iter(store(s, CTL_INF_JOBS), "queue", name, &it) != 0)
    return;
  const char *k;
  void *o;
  /* Collect first: a request may not change the store, but keep iteration simple. */
  while (kc_store_iter_next(&it, &k, &o))
    simple_request(s, k, CTL_EV_OUT_OF_SYNC);
}

static const char *queue_parent(const Kiln__Queue *q) {
  return q->spec && q->spec->parent ? q->spec->parent : "";
}

/* A queue that appears or goes also changes whether its parent is a leaf. */
static void on_queue_add(const char *key, void *obj, void *ud) {
  queue_changed(ud, meta_name(((Kiln__Queue *)obj)->metadata));
  if (*queue_parent(obj))
    queue_changed(ud, queue_parent(obj));
}
static void on_queue_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  const Kiln__Queue *o = old_obj, *n = new_obj;
  const char *os = o->status && o->status->state ? o->status->state : "";
  const char *ns = n->status && n->status->state ? n->status->state : "";
  if (strcmp(os, ns) != 0)
    queue_changed(ud, meta_name(n->metadata));
  if (strcmp(queue_parent(o), queue_parent(n)) != 0) {
    if (*queue_parent(o))
      queue_changed(ud, queue_parent(o));
    if (*queue_parent(n))
      queue_changed(ud, queue_parent(n));
  }
}
static void on_queue_delete(const char *key, void *obj, void *ud) {
  queue_changed(ud, meta_name(((Kiln__Queue *)obj)->metadata));
  if (*queue_parent(obj))
    queue_changed(ud, queue_parent(obj));
}

/* A PVC a Pending Job waits for. */
static void on_pvc_add(const char *key, void *obj, void *ud) {
  ctl_shell *s = ud;
  const ctl_spvc *p = obj;
  kc_store_iter it;
  kc_store_iter_init(store(s, CTL_INF_JOBS), &it);
  const char *k;
  void *o;
  while (kc_store_iter_next(&it, &k, &o)) {
    const Kiln__Job *j = o;
    const char *ph = job_phase(j);
    if (strcmp(meta_ns(j->metadata), p->ns) == 0 && (!*ph || strcmp(ph, "Pending") == 0))
      simple_request(s, k, CTL_EV_OUT_OF_SYNC);
  }
}

/* ---- the sync of one key ---- */

static int cmp_cmd(const void *a, const void *b) {
  const Kiln__Command *x = *(Kiln__Command *const *)a, *y = *(Kiln__Command *const *)b;
  const char *tx =
      x->metadata && x->metadata->creation_timestamp ? x->metadata->creation_timestamp : "";
  const char *ty =
      y->metadata && y->metadata->creation_timestamp ? y->metadata->creation_timestamp : "";
  int c = strcmp(tx, ty);
  return c ? c : strcmp(meta_name(x->metadata), meta_name(y->metadata));
}

typedef struct {
  ctl_pod *pods;
  size_t npods, cap;
  const char **pvcs;
  size_t npvcs;
  ctl_priority *prio;
  size_t nprio;
  Kiln__Command **cmds;
  size_t ncmds;
} view_bufs;

static void view_bufs_free(view_bufs *b) {
  free(b->pods);
  free(b->pvcs);
  free(b->prio);
  free(b->cmds);
}

static int push_pod(view_bufs *b, const ctl_pod *p) {
  if (b->npods == b->cap) {
    size_t nc = b->cap ? 2 * b->cap : 16;
    ctl_pod *np = realloc(b->pods, nc * sizeof(*np));
    if (!np)
      return KC_ENOMEM;
    b->pods = np;
    b->cap = nc;
  }
  b->pods[b->npods++] = *p;
  return 0;
}

/* The Job's pods: the cached ones (those whose deletion we asked for shown terminating),
 * then the ones whose creation we asked for and the cache does not have yet. */
static int view_pods(ctl_shell *s, const char *key, const Kiln__Job *job, int64_t now,
                     uint64_t now_ns, view_bufs *b) {
  kc_store *pods = store(s, CTL_INF_PODS);
  const char *uid = job->metadata ? job->metadata->uid : NULL;
  kc_store_iter it;
  const char *k;
  void *o;
  if (kc_store_index_iter(pods, "job", key, &it) == 0) {
    while (kc_store_iter_next(&it, &k, &o)) {
      const ctl_spod *sp = o;
      /* A pod of an older Job with the same name is not ours. */
      if (sp->job_owned && uid && strcmp(sp->owner_uid, uid) != 0)
        continue;
      ctl_pod p = sp->pod;
      if (ctl_expect_deleting(&s->expect, key, &p, now_ns))
        p.deletion_ts = now; /* asked to delete: terminating */
      if (push_pod(b, &p))
        return KC_ENOMEM;
    }
  }
  size_t pos = 0;
  const ctl_pod *p;
  while ((p = ctl_expect_next_create(&s->expect, key, now_ns, &pos))) {
    char pk[KEY_MAX];
    kc_store_key(pk, sizeof(pk), meta_ns(job->metadata), p->name);
    if (!kc_store_get(pods, pk) && push_pod(b, p))
      return KC_ENOMEM;
  }
  return 0;
}

/* The Job's PodGroup, named <job>-<uid>; before Volcano 1.5 it was named after the Job. */
static const Kiln__PodGroup *view_podgroup(ctl_shell *s, const char *key, const Kiln__Job *job,
                                           uint64_t now_ns) {
  kc_store *pgs = store(s, CTL_INF_PODGROUPS);
  char pk[KEY_MAX], name[KEY_MAX];
  snprintf(name, sizeof(name), "%s-%s", meta_name(job->metadata),
           job->metadata && job->metadata->uid ? job->metadata->uid : "");
  kc_store_key(pk, sizeof(pk), meta_ns(job->metadata), name);
  const Kiln__PodGroup *pg = ctl_newest(&s->pgs_written, pgs, pk, now_ns, NULL);
  return pg ? pg : ctl_newest(&s->pgs_written, pgs, key, now_ns, NULL);
}

/* The names of the PVCs in the Job's namespace. */
static int view_pvcs(ctl_shell *s, const Kiln__Job *job, view_bufs *b) {
  kc_store *pvcs = store(s, CTL_INF_PVCS);
  const char *ns = meta_ns(job->metadata);
  size_t n = kc_store_index_count(pvcs, "ns", ns);
  if (!n)
    return 0;
  if (!(b->pvcs = calloc(n, sizeof(*b->pvcs))))
    return KC_ENOMEM;
  kc_store_iter it;
  const char *k;
  void *o;
  kc_store_index_iter(pvcs, "ns", ns, &it);
  while (kc_store_iter_next(&it, &k, &o) && b->npvcs < n)
    b->pvcs[b->npvcs++] = ((ctl_spvc *)o)->name;
  return 0;
}

static int view_priorities(ctl_shell *s, view_bufs *b) {
  kc_store *pcs = store(s, CTL_INF_PRIORITY);
  size_t n = kc_store_len(pcs);
  if (!n)
    return 0;
  if (!(b->prio = calloc(n, sizeof(*b->prio))))
    return KC_ENOMEM;
  kc_store_iter it;
  const char *k;
  void *o;
  kc_store_iter_init(pcs, &it);
  while (kc_store_iter_next(&it, &k, &o) && b->nprio < n) {
    const Kiln__PriorityClass *pc = o;
    b->prio[b->nprio].name = meta_name(pc->metadata);
    b->prio[b->nprio++].value = pc->value;
  }
  return 0;
}

/* The Commands that target the Job, oldest first. */
static int view_commands(ctl_shell *s, const char *key, view_bufs *b) {
  kc_store *cmds = store(s, CTL_INF_COMMANDS);
  size_t n = kc_store_index_count(cmds, "job", key);
  if (!n)
    return 0;
  if (!(b->cmds = calloc(n, sizeof(*b->cmds))))
    return KC_ENOMEM;
  kc_store_iter it;
  const char *k;
  void *o;
  kc_store_index_iter(cmds, "job", key, &it);
  while (kc_store_iter_next(&it, &k, &o) && b->ncmds < n)
    b->cmds[b->ncmds++] = o;
  qsort(b->cmds, b->ncmds, sizeof(*b->cmds), cmp_cmd);
  return 0;
}

/* The view of one Job: the caches, plus the expectations the watch has not confirmed. */
static int build_view(ctl_shell *s, const char *key, const Kiln__Job *job, ctl_job_view *v,
                      view_bufs *b) {
  memset(v, 0, sizeof(*v));
  v->job = job;
  v->now = kc_clock_wall_s();
  v->ops = ctl_keypool_ops(s->keypool);
  uint64_t now_ns = uv_hrtime();
  int rc = view_pods(s, key, job, v->now, now_ns, b);
  if (rc)
    return rc;
  v->pods = b->pods;
  v->npods = b->npods;
  v->podgroup = view_podgroup(s, key, job, now_ns);
  if ((rc = view_pvcs(s, job, b)))
    return rc;
  v->pvcs = b->pvcs;
  v->npvcs = b->npvcs;
  const Kiln__Queue *q = kc_store_get(store(s, CTL_INF_QUEUES), ctl__queue(job));
  v->queue_exists = q != NULL;
  v->queue_has_children =
      q && kc_store_index_count(store(s, CTL_INF_QUEUES), "parent", ctl__queue(job)) > 0;
  v->queue_state = q && q->status ? q->status->state : NULL;
  if ((rc = view_priorities(s, b)))
    return rc;
  v->priorities = b->prio;
  v->npriorities = b->nprio;
  if ((rc = view_commands(s, key, b)))
    return rc;
  v->commands = b->cmds;
  v->ncommands = b->ncmds;
  return 0;
}

static void finish_key(ctl_shell *s, const char *key) {
  bool more = ctl_reqs_finish(&s->reqs, key);
  kc_workqueue_done(s->queue, key);
  if (more && !s->stopping)
    kc_workqueue_add(s->queue, key);
}

static ctl_keystate *keystate(ctl_shell *s, const char *key) {
  ctl_keystate *ks = kc_strmap_get(&s->keys, key);
  if (!ks && (ks = calloc(1, sizeof(*ks))) && kc_strmap_put(&s->keys, key, ks, NULL) < 0) {
    free(ks);
    ks = NULL;
  }
  return ks;
}

/* Defers a counters-only status write (ctl_status_due): clears plan->status_changed and
 * schedules the sync that writes it. */
static void batch_status(ctl_shell *s, const char *key, const Kiln__Job *job, ctl_plan *plan) {
  ctl_keystate *ks = kc_strmap_get(&s->keys, key);
  ctl_change c =
      plan->status_changed ? ctl_status_change(job->status, &plan->status) : CTL_CHANGE_SHOWN;
  if (c == CTL_CHANGE_SHOWN) {
    if (ks)
      ks->status_due_ns = 0;
    return;
  }
  uint64_t now = uv_hrtime();
  if (!ks && !(ks = keystate(s, key)))
    return; /* written now */
  ks->status_due_ns = ctl_status_due(ks->status_due_ns, now, c);
  if (!ks->status_due_ns)
    return;
  plan->status_changed = false;
  s->stats.status_deferred++;
  kc_workqueue_add_after(s->queue, key, ks->status_due_ns - now);
}

/* The key is finished for now and comes back after its per-item backoff. */
static void requeue(kc_workqueue *q, const char *key) {
  kc_workqueue_done(q, key);
  kc_workqueue_add_rate_limited(q, key);
}

/* Volcano: after --max-requeue-num failures the Job is terminated. */
static void retry_limit(ctl_shell *s, const char *key, const Kiln__Job *job, ctl_req *head) {
  if (!ctl_req_over_limit(head, s->opt.max_requeue))
    return;
  char msg[160];
  snprintf(msg, sizeof(msg), "Job failed on action %s for retry limit reached",
           ctl_action_name(head->action == CTL_ACT_NONE ? CTL_ACT_SYNC_JOB : head->action));
  ctl_exec_record_event(&s->exec, job, CTL_EVENT_NORMAL, "ExecuteAction", msg);
  KC_WARN("job %s: %s", key, msg);
  head->action = CTL_ACT_TERMINATE_JOB;
  head->failures = 0;
}

/* Builds the view and runs the core on it; on failure says why (log and the plan's one
 * event) and closes the plan. */
static int sync_once(ctl_shell *s, const char *key, const Kiln__Job *job, const ctl_request *req,
                     ctl_plan *plan) {
  ctl_job_view v;
  view_bufs b = {0};
  s->stats.syncs++;
  ctl_keystate *ks = keystate(s, key);
  if (ks)
    ks->last_sync_ns = uv_hrtime();
  int rc = build_view(s, key, job, &v, &b);
  if (rc == 0)
    rc = ctl_job_sync(&v, req, plan);
  view_bufs_free(&b);
  if (rc == 0) {
    batch_status(s, key, job, plan);
    return 0;
  }
  KC_ERROR("job %s: sync (%s) failed: %s%s%s", key, ctl_event_name(req->event), kc_strerror(rc),
           plan->failure_reason[0] ? ": " : "", plan->failure_message);
  /* The one event the failed sync left to say why; the rest of its plan is not carried out. */
  if (plan->failure_reason[0])
    ctl_exec_record_event(&s->exec, job, CTL_EVENT_WARNING, plan->failure_reason,
                          plan->failure_message);
  ctl_plan_close(plan);
  s->stats.sync_errors++;
  return rc;
}

/* Syncs the key's next request and hands the plan to the executor. */
static void process_key(kc_workqueue *q, const char *qkey, void *ud) {
  ctl_shell *s = ud;
  /* The queue's key dies with kc_workqueue_done; requeues after it need a copy. */
  char key[KEY_MAX];
  snprintf(key, sizeof(key), "%s", qkey);
  if (s->stopping) {
    kc_workqueue_done(q, key);
    return;
  }
  const char *job_rv = NULL;
  const Kiln__Job *job =
      kc_store_get(store(s, CTL_INF_JOBS), key)
          ? ctl_newest(&s->jobs_written, store(s, CTL_INF_JOBS), key, uv_hrtime(), &job_rv)
          : NULL; /* not cached: deleted, whatever we wrote last */
  if (!job) {
    drop_key(s, key);
    kc_workqueue_forget(q, key);
    kc_workqueue_done(q, key);
    return;
  }
  ctl_req *head = ctl_reqs_head(&s->reqs, key);
  if (!head) {
    requeue(q, key);
    return;
  }
  retry_limit(s, key, job, head);
  ctl_request req = ctl_req_request(head);
  ctl_plan plan;
  ctl_plan_init(&plan);
  int rc = sync_once(s, key, job, &req, &plan);
  if (rc) {
    ctl_reqs_end(&s->reqs, key, rc, false);
    requeue(q, key);
    return;
  }
  KC_V(3, "job %s: %s/%s: %s -> %s, %zu pods to create, %zu to delete", key,
       ctl_event_name(req.event), ctl_action_name(plan.action), ctl_phase_name(plan.old_phase),
       ctl_phase_name(plan.status.phase), json_array_size(plan.pods_create), plan.npods_delete);
  ctl_reqs_begin(&s->reqs, key);
  s->inflight++;
  if ((rc = ctl_exec_start(&s->exec, key, job, job_rv, &plan))) {
    s->inflight--;
    ctl_reqs_end(&s->reqs, key, rc, false);
    requeue(q, key);
  }
}

static void add_counts(ctl_shell_stats *st, const ctl_exec_counts *c) {
  st->pods_created += c->pods_created;
  st->pods_create_exists += c->pods_create_exists;
  st->pods_deleted += c->pods_deleted;
  st->status_writes += c->status_writes;
}

/* The executor's result: the request is done or failed, the key forgotten or requeued. */
static void exec_done(const ctl_exec_result *r, void *ud) {
  ctl_shell *s = ud;
  const char *key = r->key;
  s->inflight--;
  add_counts(&s->stats, &r->count);
  if (s->freed)
    return;
  if (!s->stopping && r->err == 0) {
    plan_delays(s, key, r->plan);
    if (r->plan->requeue_after > 0)
      kc_workqueue_add_after(s->queue, key, (uint64_t)r->plan->requeue_after * 1000000000ull);
  }
  ctl_reqs_end(&s->reqs, key, r->err, r->conflict);
  if (s->stopping) {
    kc_workqueue_done(s->queue, key);
    return;
  }
  if (r->err == 0) {
    kc_workqueue_forget(s->queue, key);
    finish_key(s, key);
  } else if (r->conflict) {
    /* A stale cache, not a failure: try again once the watch has caught up. */
    s->stats.conflicts++;
    kc_workqueue_done(s->queue, key);
    kc_workqueue_add_after(s->queue, key, CTL_CONFLICT_RETRY_NS);
  } else {
    requeue(s->queue, key);
  }
}

/* ---- metrics ---- */

static int register_metrics(ctl_shell *s) {
  kc_metrics *m = s->opt.metrics;
  if (!m)
    return 0;
  static const char *const job_labels[] = {"job_name", "queue_name", NULL};
  static const char *const e2e_labels[] = {"job_name", "queue", "job_namespace", NULL};
  double buckets[15];
  int rc = kc_metrics_exponential_buckets(5, 2, 15, buckets);
  if (rc == 0)
    rc = kc_metrics_histogram(m, "volcano_controller_job_to_pod_creation_latency_milliseconds",
                              "Latency from VCJob creation to pod created in milliseconds", NULL,
                              buckets, 15, &s->exec.m_latency);
  if (rc == 0)
    rc = kc_metrics_gauge(m, "volcano_controller_job_e2e_creation_duration_milliseconds",
                          "End-to-end duration from VCJob creation to all pods created, in "
                          "milliseconds",
                          e2e_labels, &s->exec.m_e2e);
  if (rc == 0)
    rc = kc_metrics_counter(m, "volcano_job_completed_phase_count", "Number of job completed phase",
                            job_labels, &s->exec.m_completed);
  if (rc == 0)
    rc = kc_metrics_counter(m, "volcano_job_failed_phase_count", "Number of job failed phase",
                            job_labels, &s->exec.m_failed);
  /* volcano_queue_pod_group_*_count are the queue controller's (ctl_ctrl_queue.c). */
  if (rc == 0)
    rc = kc_workqueue_use_metrics(s->queue, m);
  return rc;
}

/* ---- lifetime ---- */

static const ctl_inf_def defs[CTL_INF_COUNT] = {
    [CTL_INF_JOBS] = {"batch.volcano.sh", "v1alpha1", "jobs", NULL, decode_job, kc_msg_free,
                      on_job_add, on_job_update, on_job_delete},
    /* Only pods a Job made carry this label; the rest of the cluster is not cached. */
    [CTL_INF_PODS] = {"", "v1", "pods", CTL_KEY_JOB_NAME, decode_pod, free, on_pod_add,
                      on_pod_update, on_pod_delete, NULL, decode_pod_pb},
    [CTL_INF_PODGROUPS] = {"scheduling.volcano.sh", "v1beta1", "podgroups", NULL, decode_pg,
                           kc_msg_free, on_pg_add, on_pg_update, on_pg_delete},
    [CTL_INF_COMMANDS] = {"bus.volcano.sh", "v1alpha1", "commands", NULL, decode_cmd, kc_msg_free,
                          on_cmd_add, NULL, NULL},
    [CTL_INF_QUEUES] = {"scheduling.volcano.sh", "v1beta1", "queues", NULL, decode_queue,
                        kc_msg_free, on_queue_add, on_queue_update, on_queue_delete},
    [CTL_INF_PVCS] = {"", "v1", "persistentvolumeclaims", NULL, decode_pvc, free, on_pvc_add, NULL,
                      NULL},
    [CTL_INF_PRIORITY] = {"scheduling.k8s.io", "v1", "priorityclasses", NULL, decode_pc,
                          kc_msg_free, NULL, NULL, NULL},
};

static const char *const inf_names[CTL_INF_COUNT] = {
    "jobs", "pods", "podgroups", "commands", "queues", "persistentvolumeclaims", "priorityclasses"};

/* Called by each informer after its first LIST; the shell starts handing out keys when
 * every cache has synced, so no sync ever sees a partial view. */
static void on_synced(void *ud) {
  ctl_shell *s = ud;
  for (int i = 0; i < CTL_INF_COUNT; i++)
    if (!s->synced[i] && s->inf[i] && ctl_inf_has_synced(s->inf[i])) {
      s->synced[i] = true;
      KC_INFO("cache of %s synced (%zu objects)", inf_names[i], kc_store_len(store(s, i)));
    }
  for (int i = 0; i < CTL_INF_COUNT; i++)
    if (!s->synced[i])
      return;
  if (s->all_synced)
    return;
  s->all_synced = true;
  /* Every Job starts with a sync (the add handlers queued a request for each). */
  size_t pos = 0;
  kc_strmap_slot *sl;
  while ((sl = kc_strmap_next(&s->reqs.lists, &pos)))
    kc_workqueue_add(s->queue, sl->key);
  KC_INFO("all caches synced; %zu jobs to sync", kc_strmap_len(&s->reqs.lists));
}

int ctl_shell_new(uv_loop_t *loop, kc_client *c, const ctl_shell_options *opt, ctl_shell **out) {
  ctl_shell *s = calloc(1, sizeof(*s));
  if (!s)
    return KC_ENOMEM;
  s->loop = loop;
  s->opt = *opt;
  if (s->opt.workers <= 0)
    s->opt.workers = 3;
  ctl_reqs_init(&s->reqs);
  ctl_expects_init(&s->expect);
  ctl_delays_init(&s->delays);
  kc_strmap_init(&s->jobs_written, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&s->pgs_written, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&s->keys, KC_STRMAP_COPY_KEYS);
  /* Volcano's job queue: per-key backoff 5 ms to 180 s. */
  kc_workqueue_opts qo = {.name = "job",
                          .backoff_base_ns = 5 * 1000000ull,
                          .backoff_max_ns = 180ull * 1000000000ull,
                          .qps = -1,
                          .process = process_key,
                          .process_ud = s,
                          .workers = s->opt.workers};
  int rc = kc_workqueue_new(loop, &qo, &s->queue);
  if (rc)
    goto fail;
  size_t made;
  if ((rc = ctl_informers_new(opt->hub, c, defs, CTL_INF_COUNT, on_synced, s, s->inf, &made)))
    goto fail;
  if ((rc = kc_store_add_index(store(s, CTL_INF_PODS), "job", index_pod_job, NULL)) ||
      (rc = kc_store_add_index(store(s, CTL_INF_COMMANDS), "job", index_cmd_job, NULL)) ||
      (rc = kc_store_add_index(store(s, CTL_INF_PVCS), "ns", index_pvc_ns, NULL)) ||
      (rc = kc_store_add_index(store(s, CTL_INF_JOBS), "queue", index_job_queue, NULL)) ||
      (rc = kc_store_add_index(store(s, CTL_INF_QUEUES), "parent", index_queue_parent, NULL)))
    goto fail;
  s->exec = (ctl_exec_env){.client = c,
                           .leader = opt->leader,
                           .events = opt->events,
                           .protobuf = ctl_inf_hub_protobuf(opt->hub),
                           .pods = store(s, CTL_INF_PODS),
                           .expect = &s->expect,
                           .jobs_written = &s->jobs_written,
                           .pgs_written = &s->pgs_written,
                           .done = exec_done,
                           .ud = s};
  if ((rc = register_metrics(s)) || (rc = ctl_keypool_new(loop, NULL, &s->keypool)))
    goto fail;
  *out = s;
  return 0;
fail:
  ctl_shell_free(s);
  return rc;
}

int ctl_shell_start(ctl_shell *s) {
  if (s->started)
    return KC_EINVAL;
  s->started = true;
  ctl_keypool_start(s->keypool);
  return ctl_informers_start(s->inf, CTL_INF_COUNT);
}

bool ctl_shell_synced(const ctl_shell *s) {
  return s->all_synced;
}

void ctl_shell_get_stats(const ctl_shell *s, ctl_shell_stats *st) {
  *st = s->stats;
  st->inflight = s->inflight;
}

static void stop_timer_cb(uv_timer_t *t) {
  ctl_shell *s = container_of(t, ctl_shell, stop_timer);
  if (s->inflight > 0 && uv_now(s->loop) < (uint64_t)(uintptr_t)t->data)
    return;
  if (s->inflight > 0)
    KC_WARN("shutdown deadline passed with %d plans still writing", s->inflight);
  uv_timer_stop(t);
  void (*done)(void *) = s->stop_done;
  s->stop_done = NULL;
  if (done)
    done(s->stop_ud);
}

/* No more work is taken; plans in flight start no further stage. */
static void set_stopping(ctl_shell *s) {
  s->stopping = true;
  s->exec.stopping = true;
  s->exec.pods = NULL; /* its informer goes */
}

void ctl_shell_stop(ctl_shell *s, uint64_t deadline_ms, void (*done)(void *ud), void *ud) {
  if (s->stopping)
    return;
  set_stopping(s);
  for (int i = 0; i < CTL_INF_COUNT; i++) {
    ctl_inf_free(s->inf[i]);
    s->inf[i] = NULL;
  }
  kc_workqueue_shutdown(s->queue);
  s->stop_done = done;
  s->stop_ud = ud;
  uv_timer_init(s->loop, &s->stop_timer);
  s->stop_timer_init = true;
  s->stop_timer.data = (void *)(uintptr_t)(uv_now(s->loop) + deadline_ms);
  uv_timer_start(&s->stop_timer, stop_timer_cb, 0, 20);
}

/* The shell's memory goes with the close callback of its last timer. */
static void release(ctl_shell *s) {
  if (--s->closing == 0)
    free(s);
}
static void stop_timer_closed(uv_handle_t *h) {
  release(container_of((uv_timer_t *)h, ctl_shell, stop_timer));
}
static void delay_timer_closed(uv_handle_t *h) {
  release(container_of((uv_timer_t *)h, ctl_shell, delay_timer));
}

void ctl_shell_free(ctl_shell *s) {
  if (!s)
    return;
  s->freed = true;
  set_stopping(s);
  for (int i = 0; i < CTL_INF_COUNT; i++)
    ctl_inf_free(s->inf[i]);
  ctl_reqs_close(&s->reqs);
  ctl_expects_close(&s->expect);
  ctl_delays_close(&s->delays);
  ctl_written_close(&s->jobs_written);
  ctl_written_close(&s->pgs_written);
  kc_strmap_close(&s->keys, free);
  kc_workqueue_free(s->queue);
  ctl_keypool_free(s->keypool);
  s->closing = s->stop_timer_init + s->delay_timer_init;
  if (s->closing == 0) {
    free(s);
    return;
  }
  if (s->stop_timer_init) {
    uv_timer_stop(&s->stop_timer);
    uv_close((uv_handle_t *)&s->stop_timer, stop_timer_closed);
  }
  if (s->delay_timer_init) {
    uv_timer_stop(&s->delay_timer);
    uv_close((uv_handle_t *)&s->delay_timer, delay_timer_closed);
  }
}
