/* The scheduler shell's writes other than binds (see sch_shell.h): PodGroup and Queue
 * status, the queue metrics, events, the why-pending explanations, and the evictions and
 * nominations a session chose. sch_shell.c queues the binds and calls in here for the rest
 * of a result (sch_shell_int.h). */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_clock.h"
#include "kc_codec.h"
#include "kc_error.h"
#include "kc_log.h"
#include "kc_store.h"
#include "kc_str.h"
#include "kc_strmap.h"
#include "kc_time.h"
#include "sch_shell_int.h"

/* That we last wrote to an object's status, and the resourceVersion the cache had then:
 * until the watch brings a newer version, no other write to that object is sent (the session
 * may want a new timestamp every period; sending each would flood a busy API server whose
 * watch lags, and make it lag more). A failed write is retried after a backoff. */
typedef struct {
  char *rv;
  bool in_flight;
  unsigned fails;    /* failed writes in a row */
  uint64_t retry_ms; /* uv_now() before which a failed write is not retried */
  uint64_t sent_ms;  /* uv_now() when it was sent */
} written;

/* Status writes in flight at most: past this, the rest wait for a later period. */
#define SCH_STATUS_WRITES_MAX 256

static void free_written(void *p) {
  written *w = p;
  if (w) {
    free(w->rv);
    free(w);
  }
}

static void free_str(void *p) {
  free(p);
}

/* ---- status writes ---- */

typedef struct {
  sch_shell *sh;
  kc_strmap *map; /* where the write is remembered */
  char *key;
  char *what;
  bool gate; /* the binds of PodGroup key wait for this answer (sch_binder_close_gate) */
} write_ctx;

static void write_done(const kc_api_result *res, void *data) {
  write_ctx *w = data;
  sch_shell *sh = w->sh;
  sh->writes_in_flight--;
  written *wr = sh->closing ? NULL : kc_strmap_get(w->map, w->key);
  if (wr)
    wr->in_flight = false;
  if (!sh->closing && res->err) {
    if (res->err != KC_ENOTFOUND)
      KC_WARN("cannot update %s: %s: %s", w->what, kc_strerror(res->err), res->message);
    if (wr) {
      /* Write it again once the backoff has passed: 1 s, 2 s, ... up to 60 s. */
      unsigned shift = wr->fails < 6 ? wr->fails : 6;
      uint64_t delay = (uint64_t)1000 << shift;
      wr->fails++;
      wr->retry_ms = uv_now(sh->loop) + (delay > 60000 ? 60000 : delay);
      free(wr->rv);
      wr->rv = NULL; /* any version: the retry is due */
    }
  } else if (res->err == 0) {
    if (wr)
      wr->fails = 0;
    KC_V(4, "updated %s", w->what);
  }
  if (w->gate && !sh->closing)
    sch_binder_open(sh->binder, w->key); /* answered, written or not: the binds go */
  free(w->key);
  free(w->what);
  free(w);
  if (sh->closing)
    sch_shell__maybe_release(sh);
}

/* Whether a status write to the object under key may go now: one write per object per
 * cached version rv, a failed one after its backoff, and at most SCH_STATUS_WRITES_MAX in
 * flight (the next period tries again) unless binds wait for it (gate). Asked before the
 * body is built: while a write is in flight or its echo has not come back, every session
 * wants the same status again. */
static bool write_due(const sch_shell *sh, const kc_strmap *map, const char *key, const char *rv,
                      bool gate) {
  const written *prev = kc_strmap_get(map, key);
  if (prev) {
    bool same_version = prev->rv && strcmp(prev->rv, rv ? rv : "") == 0;
    bool backing_off = prev->fails > 0 && uv_now(sh->loop) < prev->retry_ms;
    if (prev->in_flight || same_version || backing_off)
      return false;
  }
  return gate || sh->writes_in_flight < SCH_STATUS_WRITES_MAX;
}

/* Sends a merge patch of body to ref (write_due said it may go); gate: its answer opens the
 * binder's gate of key. 0 when sent. */
static int patch_status(sch_shell *sh, kc_strmap *map, const char *key, const char *rv,
                        const kc_ref *ref, json_t *body, const char *what, bool gate) {
  written *prev = kc_strmap_get(map, key);
  unsigned fails = prev ? prev->fails : 0;
  written *nw = calloc(1, sizeof(*nw));
  write_ctx *w = calloc(1, sizeof(*w));
  if (nw == NULL || w == NULL || (nw->rv = strdup(rv ? rv : "")) == NULL ||
      (w->key = strdup(key)) == NULL || (w->what = strdup(what)) == NULL) {
    free_written(nw);
    if (w) {
      free(w->key);
      free(w);
    }
    return KC_ENOMEM;
  }
  nw->in_flight = true;
  nw->fails = fails;
  nw->sent_ms = uv_now(sh->loop);
  w->sh = sh;
  w->map = map;
  w->gate = gate;
  void *old = NULL;
  if (kc_strmap_put(map, key, nw, &old) < 0) {
    free_written(nw);
    free(w->key);
    free(w->what);
    free(w);
    return KC_ENOMEM;
  }
  free_written(old);
  /* write_done reads the outcome only; the watch brings the new object. */
  kc_query q = {.discard_body = true};
  int rc = kc_api_call(sh->client, KC_PATCH_MERGE, ref, &q, body, write_done, w);
  if (rc) {
    KC_WARN("cannot update %s: %s", what, kc_strerror(rc));
    if (kc_strmap_del(map, key, &old) == 0)
      free_written(old);
    free(w->key);
    free(w->what);
    free(w);
    return rc;
  }
  sh->writes_in_flight++;
  return 0;
}

/* Whether a job has pods whose bind is in flight (assumed when the session's snapshot was
 * taken, not yet confirmed by the watch) and pods bound but not Running yet. */
static void job_settling(const sch_cache_snap *cs, const sch_snapshot *snap, const sch_job *j,
                         bool *binding, bool *starting) {
  *binding = *starting = false;
  if (j->count[SCH_TASK_BINDING] + j->count[SCH_TASK_BOUND] == 0)
    return;
  for (int32_t i = 0; i < j->ntasks && !*binding; i++) {
    const sch_task *t = &snap->tasks[j->tasks[i]];
    if (t->status != SCH_TASK_BINDING && t->status != SCH_TASK_BOUND)
      continue;
    if (cs && sch_cache_snap_binding(cs, t->pod))
      *binding = true;
    else
      *starting = true;
  }
}

/* Sends the PodGroup's new status (phase, counts, conditions) as a merge patch; gate: the
 * binder's gate of the PodGroup opens on its answer. Whether it was sent. */
static bool send_pod_group(sch_shell *sh, const sch_job *j, const sch_pg_status *ps,
                           const char *phase, Kiln__PodGroupCondition **cptr, size_t n, bool gate) {
  const char *rv = j->pod_group->metadata->resource_version;
  if (!write_due(sh, &sh->pg_written, j->key, rv, gate))
    return false;
  Kiln__PodGroupStatus st = KILN__POD_GROUP_STATUS__INIT;
  st.phase = (char *)phase;
  st.n_conditions = n;
  st.conditions = cptr;
  st.has_running = ps->running != 0;
  st.has_succeeded = ps->succeeded != 0;
  st.has_failed = ps->failed != 0;
  st.running = ps->running;
  st.succeeded = ps->succeeded;
  st.failed = ps->failed;
  json_t *body = NULL;
  char err[256];
  if (kc_podgroup_status_encode(&st, &body, err, sizeof(err)) != 0 ||
      sch_shell_pg_zero_counts(json_object_get(body, "status"), ps) != 0) {
    KC_ERROR("cannot encode the status of PodGroup %s: %s", j->key, body ? "out of memory" : err);
    json_decref(body);
    return false;
  }
  kc_ref ref = {"scheduling.volcano.sh", "v1beta1", "podgroups", j->namespace, j->name, NULL};
  char what[600];
  snprintf(what, sizeof(what), "PodGroup %s status (phase %s)", j->key, phase);
  bool sent = patch_status(sh, &sh->pg_written, j->key, rv, &ref, body, what, gate) == 0;
  json_decref(body);
  return sent;
}

/* The PodGroup's status as the session wants it; written when it differs from the cached
 * one (conditions compared by type, status, reason and message: times do not count), and
 * not while its pods are settling (sch_shell_pg_hold; next_held remembers since when)
 * unless its binds wait for it (gate: the maps are not used). Whether it was sent. */
bool sch_shell__write_pod_group(sch_shell *sh, const sch_snapshot *snap, const sch_pg_status *ps,
                                kc_strmap *next_held, kc_strmap *next_invalid, uint64_t now_ms,
                                bool gate) {
  const sch_job *j = &snap->jobs[ps->job];
  const Kiln__PodGroup *pg = j->pod_group;
  if (pg == NULL || pg->metadata == NULL)
    return false;
  const Kiln__PodGroupStatus *cur = pg->status;
  const char *phase = sch_pg_phase_str(ps->phase);
  size_t ncur = cur ? cur->n_conditions : 0;
  Kiln__PodGroupCondition *conds = calloc(ncur + 1, sizeof(*conds));
  Kiln__PodGroupCondition **cptr = calloc(ncur + 1, sizeof(*cptr));
  if (conds == NULL || cptr == NULL) {
    free(conds);
    free(cptr);
    return false;
  }
  bool changed = !cur || !kc_str_eq(cur->phase, phase) || cur->running != ps->running ||
                 cur->succeeded != ps->succeeded || cur->failed != ps->failed;
  bool only_conditions = !changed, cond_changed;
  char ts[KC_TIME_LEN];
  kc_time_format(ps->condition.last_transition_time ? ps->condition.last_transition_time
                                                    : kc_clock_wall_s(),
                 ts);
  size_t n = sch_shell_pg_conditions(cur, ps, ts, conds, cptr, &cond_changed);
  changed = changed || cond_changed;
  if (!gate && changed && only_conditions && j->invalid) {
    /* JobValid's verdict on a gang whose pods are still being created: its counts change
     * every period until the gang is complete, minutes of writes for a large gang. Volcano
     * drops such a job from the session and writes nothing; a gang that stays invalid gets
     * the condition once it has been so for SCH_SHELL_INVALID_QUIET_MS. */
    if (sch_shell_pg_quiet_track(&sh->pg_invalid, next_invalid, j->key, now_ms,
                                 SCH_SHELL_INVALID_QUIET_MS))
      changed = false;
  }
  if (!gate && changed) {
    /* Pods being bound, or bound and not Running yet: Running and the counts follow; one
     * write then says both. The wait for Running starts once the binds are confirmed. */
    bool binding, starting;
    job_settling(sh->run ? &sh->run->cs : NULL, snap, j, &binding, &starting);
    if (sch_shell_pg_hold_track(&sh->pg_held, next_held, j->key, binding, starting, now_ms,
                                sh->period_ms))
      changed = false;
  }
  bool sent = changed && send_pod_group(sh, j, ps, phase, cptr, n, gate);
  free(conds);
  free(cptr);
  return sent;
}

/* An unlimited dimension reads as the largest double, as Volcano's MaxFloat64. */
static double metric_amount(int64_t v) {
  return v == INT64_MAX ? DBL_MAX : (double)v;
}

/* The scalar series of r (milli units, as Volcano's capacity plugin records them): every
 * scalar of the session for the allocation, the ones r names otherwise. */
static void queue_scalar_metrics(kc_metric *m, const sch_snapshot *snap, const sch_queue *q,
                                 const sch_resource *r, bool all) {
  for (int k = 0; m && k < snap->nscalars; k++) {
    kc_series *s;
    if ((all || r->scalar[k] > 0) &&
        kc_metric_series(m, (const char *const[]){q->name, snap->scalar_names[k]}, &s) == 0)
      kc_gauge_set(s, metric_amount(r->scalar[k]));
  }
}

static void queue_resource_metrics(sch_shell *sh, const sch_snapshot *snap, const sch_queue *q,
                                   const sch_resource *allocated) {
  const sch_resource *r[3] = {&q->deserved, q->has_capability ? &q->capability : NULL,
                              q->has_real_capability ? &q->real_capability : NULL};
  for (int i = 0; i < 3; i++) {
    kc_series *s;
    if (!r[i] || !sh->m_q_res[i][0] || !sh->m_q_res[i][1])
      continue;
    if (kc_metric_series(sh->m_q_res[i][0], (const char *const[]){q->name}, &s) == 0)
      kc_gauge_set(s, metric_amount(r[i]->milli_cpu));
    if (kc_metric_series(sh->m_q_res[i][1], (const char *const[]){q->name}, &s) == 0)
      kc_gauge_set(s, metric_amount(r[i]->memory));
    queue_scalar_metrics(sh->m_q_scalar[i], snap, q, r[i], false);
  }
  queue_scalar_metrics(sh->m_q_scalar[3], snap, q, allocated, true);
}

static void write_queue(sch_shell *sh, const sch_snapshot *snap, const sch_queue_status *qs) {
  const sch_queue *q = &snap->queues[qs->queue];
  if (sh->m_q_cpu) {
    kc_series *s;
    if (kc_metric_series(sh->m_q_cpu, (const char *const[]){q->name}, &s) == 0)
      kc_gauge_set(s, (double)qs->allocated.milli_cpu);
    if (kc_metric_series(sh->m_q_mem, (const char *const[]){q->name}, &s) == 0)
      kc_gauge_set(s, (double)qs->allocated.memory);
  }
  queue_resource_metrics(sh, snap, q, &qs->allocated);
  if (q->queue == NULL || q->queue->metadata == NULL)
    return; /* made up by the snapshot: the cache creates it */
  const Kiln__Resource *have = q->queue->status ? q->queue->status->allocated : NULL;
  if (sch_shell_resource_matches(snap, &qs->allocated, have))
    return;
  /* At most one write per queue per period: early sessions do not add queue writes. */
  const written *prev = kc_strmap_get(&sh->q_written, q->name);
  if (prev && prev->fails == 0 && uv_now(sh->loop) < prev->sent_ms + sh->period_ms)
    return;
  if (!write_due(sh, &sh->q_written, q->name, q->queue->metadata->resource_version, false))
    return;
  Kiln__Resource res = KILN__RESOURCE__INIT;
  Kiln__ResourceQuantity sq[SCH_MAX_SCALARS];
  Kiln__ResourceQuantity *sp[SCH_MAX_SCALARS];
  res.milli_cpu = qs->allocated.milli_cpu;
  res.memory = qs->allocated.memory;
  for (int i = 0; i < snap->nscalars; i++) {
    if (qs->allocated.scalar[i] == 0)
      continue;
    Kiln__ResourceQuantity init = KILN__RESOURCE_QUANTITY__INIT;
    sq[res.n_scalar] = init;
    sq[res.n_scalar].name = (char *)snap->scalar_names[i];
    sq[res.n_scalar].milli_value = qs->allocated.scalar[i];
    sp[res.n_scalar] = &sq[res.n_scalar];
    res.n_scalar++;
  }
  res.scalar = sp;
  Kiln__QueueStatus st = KILN__QUEUE_STATUS__INIT;
  st.allocated = &res;
  json_t *body = NULL;
  char err[256];
  if (kc_queue_status_encode(&st, &body, err, sizeof(err)) != 0) {
    KC_ERROR("cannot encode the status of Queue %s: %s", q->name, err);
    return;
  }
  /* An empty allocation must still clear the old one: allocated {} would be a no-op in a
   * merge patch, so say null for the dimensions that went to zero. */
  json_t *alloc = json_object_get(json_object_get(body, "status"), "allocated");
  if (alloc == NULL) {
    alloc = json_object();
    json_object_set_new(json_object_get(body, "status"), "allocated", alloc);
  }
  if (have && alloc) {
    if (have->milli_cpu && !qs->allocated.milli_cpu)
      json_object_set_new(alloc, "cpu", json_null());
    if (have->memory && !qs->allocated.memory)
      json_object_set_new(alloc, "memory", json_null());
    for (size_t k = 0; k < have->n_scalar; k++)
      if (have->scalar[k]->name && !json_object_get(alloc, have->scalar[k]->name))
        json_object_set_new(alloc, have->scalar[k]->name, json_null());
  }
  kc_ref ref = {"scheduling.volcano.sh", "v1beta1", "queues", NULL, q->name, "status"};
  char what[300];
  snprintf(what, sizeof(what), "Queue %s status", q->name);
  patch_status(sh, &sh->q_written, q->name, q->queue->metadata->resource_version, &ref, body, what,
               false);
  json_decref(body);
}

/* ---- events and explanations ---- */

/* Records the event unless the same message was recorded for it in the previous session;
 * next (this session's map) remembers it. */
static void event_once(sch_shell *sh, kc_strmap *next, const kc_object_ref *o, const char *type,
                       const char *reason, const char *message) {
  char key[700];
  snprintf(key, sizeof(key), "%s\x1f%s/%s\x1f%s", o->kind, o->namespace ? o->namespace : "",
           o->name, reason);
  const char *prev = kc_strmap_get(&sh->ev_last, key);
  if (kc_strmap_has(next, key))
    return; /* already this session */
  char *m = strdup(message);
  if (m == NULL)
    return;
  if (kc_strmap_put(next, key, m, NULL) < 0) {
    free(m);
    return;
  }
  if (prev && strcmp(prev, message) == 0)
    return;
  if (sh->events)
    kc_event_record(sh->events, o, type, reason, "%s", message);
}

/* What a pod was last told, and when. */
typedef struct {
  char *msg;
  uint64_t at_ns;
} explained;

static void free_explained(void *p) {
  explained *e = p;
  if (e) {
    free(e->msg);
    free(e);
  }
}

/* PodScheduled=False (reason Unschedulable) and a FailedScheduling event with the session's
 * explanation. A pod is told at once the first time; after that only when the explanation
 * changed and EXPLAIN_INTERVAL_NS has passed (the message carries counts that change every
 * period while a gang fills up), and at most EXPLAIN_BUDGET pods per period, so a large
 * pending gang does not turn into a write storm against the API server. */
#define EXPLAIN_INTERVAL_NS (30ull * 1000000000ull)
#define EXPLAIN_BUDGET      100

static void explain_pod(sch_shell *sh, kc_strmap *next, const Kiln__Pod *p, const char *msg,
                        int *budget, uint64_t now) {
  char key[512];
  if (kc_store_key(key, sizeof(key), p->namespace_, p->name) != 0 || kc_strmap_has(next, key))
    return;
  const explained *prev = kc_strmap_get(&sh->why_last, key);
  bool due =
      prev == NULL || (strcmp(prev->msg, msg) != 0 && now - prev->at_ns >= EXPLAIN_INTERVAL_NS);
  bool write = due && *budget > 0;
  if (!write && prev == NULL)
    return; /* not told yet: next period */
  explained *e = calloc(1, sizeof(*e));
  if (e == NULL || (e->msg = strdup(write ? msg : prev->msg)) == NULL ||
      kc_strmap_put(next, key, e, NULL) < 0) {
    free_explained(e);
    return;
  }
  e->at_ns = write ? now : prev->at_ns;
  if (!write)
    return;
  (*budget)--;
  sch_pod_unschedulable(sh->client, p->namespace_, p->name, "Unschedulable", msg);
  if (sh->events) {
    kc_object_ref o = kc_pod_ref(p->namespace_, p->name, p->uid);
    kc_event_record(sh->events, &o, KC_EVENT_WARNING, "FailedScheduling", "%s", msg);
  }
}

static void swap_map(kc_strmap *cur, kc_strmap *next) {
  kc_strmap_close(cur, free_str);
  *cur = *next;
}

/* Victims (Volcano's Evict), the nodes freed for the preemptors, and the preemption
 * metrics. */
static void evict_and_nominate(sch_shell *sh, const sch_snapshot *snap, const sch_result *res) {
  for (size_t i = 0; i < res->nevicts; i++) {
    const sch_task *t = &snap->tasks[res->evicts[i].task];
    const Kiln__PodGroup *pg = t->job >= 0 ? snap->jobs[t->job].pod_group : NULL;
    const char *reason = res->evicts[i].reason;
    int rc = sch_evictor_evict(sh->evictor, t->pod, pg, reason);
    if (rc == KC_EEXISTS)
      KC_WARN("%s/%s is already being evicted; not again", t->pod->namespace_, t->pod->name);
    else if (rc < 0)
      KC_ERROR("cannot start evicting %s/%s: %s", t->pod->namespace_, t->pod->name,
               kc_strerror(rc));
    kc_series *s;
    if (rc == 0 && sh->m_evictions &&
        kc_metric_series(sh->m_evictions, (const char *const[]){reason}, &s) == 0)
      kc_counter_inc(s);
  }
  for (size_t i = 0; i < res->nnominations; i++) {
    const sch_task *t = &snap->tasks[res->nominations[i].task];
    if (sch_evictor_nominate(sh->evictor, t->pod, snap->nodes[res->nominations[i].node].name) < 0)
      KC_ERROR("cannot nominate a node for %s/%s: out of memory", t->pod->namespace_, t->pod->name);
  }
  if (res->preempt_attempts > 0) {
    if (sh->m_preempt_attempts)
      kc_counter_add(sh->m_preempt_attempts, (double)res->preempt_attempts);
    if (sh->m_preempt_victims)
      kc_gauge_set(sh->m_preempt_victims, res->last_victims);
  }
}

/* ---- the rest of a result ---- */

/* Whether the PodGroup of job j is another scheduler's to write (see sch_shell__apply_rest). */
static bool foreign_job(const sch_job *j, const kc_strmap *foreign, bool foreign_unknown) {
  return j->ntasks == 0 && (foreign_unknown || kc_strmap_has(foreign, j->key));
}

static void write_statuses(sch_shell *sh, const sch_snapshot *snap, const sch_result *res,
                           const kc_strmap *foreign, bool foreign_unknown) {
  kc_strmap next_held, next_invalid;
  kc_strmap_init(&next_held, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&next_invalid, KC_STRMAP_COPY_KEYS);
  uint64_t now_ms = uv_now(sh->loop);
  for (size_t i = 0; i < res->npod_groups; i++) {
    const sch_job *j = &snap->jobs[res->pod_groups[i].job];
    if (!foreign_job(j, foreign, foreign_unknown))
      sch_shell__write_pod_group(sh, snap, &res->pod_groups[i], &next_held, &next_invalid, now_ms,
                                 false);
  }
  kc_strmap_close(&sh->pg_held, NULL);
  sh->pg_held = next_held;
  kc_strmap_close(&sh->pg_invalid, NULL);
  sh->pg_invalid = next_invalid;
  for (size_t i = 0; i < res->nqueues; i++)
    write_queue(sh, snap, &res->queues[i]);
}

static void record_events(sch_shell *sh, const sch_snapshot *snap, const sch_result *res,
                          const kc_strmap *foreign, bool foreign_unknown) {
  kc_strmap next_ev;
  kc_strmap_init(&next_ev, KC_STRMAP_COPY_KEYS);
  for (size_t i = 0; i < res->nevents; i++) {
    const sch_event *e = &res->events[i];
    kc_object_ref o = {0};
    if (e->kind == SCH_EVENT_POD) {
      if (strcmp(e->reason, "FailedScheduling") == 0)
        continue; /* told with the explanations, rate-limited */
      const Kiln__Pod *p = snap->tasks[e->object].pod;
      o = kc_pod_ref(p->namespace_, p->name, p->uid);
    } else {
      const sch_job *j = &snap->jobs[e->object];
      if (j->pod_group == NULL || j->pod_group->metadata == NULL ||
          foreign_job(j, foreign, foreign_unknown))
        continue;
      o = (kc_object_ref){.kind = "PodGroup",
                          .namespace = j->namespace,
                          .name = j->name,
                          .uid = j->pod_group->metadata->uid,
                          .api_version = "scheduling.volcano.sh/v1beta1"};
    }
    event_once(sh, &next_ev, &o, e->type, e->reason, e->message);
  }
  swap_map(&sh->ev_last, &next_ev);
}

/* Explanations, and the attempts counter (the unschedulable gauges are sch_metrics'). */
static void explain_all(sch_shell *sh, const sch_snapshot *snap, const sch_result *res) {
  kc_strmap next_why;
  kc_strmap_init(&next_why, KC_STRMAP_COPY_KEYS);
  int budget = EXPLAIN_BUDGET;
  uint64_t now = uv_hrtime();
  for (size_t i = 0; i < res->nwhy; i++) {
    const sch_task *t = &snap->tasks[res->why[i].task];
    explain_pod(sh, &next_why, t->pod, res->why[i].message, &budget, now);
  }
  kc_strmap_close(&sh->why_last, free_explained);
  sh->why_last = next_why;
  if (sh->m_attempt_ok) {
    kc_counter_add(sh->m_attempt_ok, (double)res->nbinds);
    kc_counter_add(sh->m_attempt_unsched, (double)res->nwhy);
  }
}

void sch_shell__apply_rest(sch_shell *sh, const sch_snapshot *snap, const sch_result *res) {
  evict_and_nominate(sh, snap, res);
  /* A PodGroup whose pods all belong to another scheduler is that scheduler's to write:
   * this session sees it with no tasks and would report it unschedulable. Out of memory
   * while listing them: any PodGroup with no task of ours may be another scheduler's, so
   * none such is written this period. */
  kc_strmap foreign;
  kc_strmap_init(&foreign, KC_STRMAP_COPY_KEYS);
  bool foreign_unknown = sch_shell_foreign_groups(snap, &foreign) != 0;
  write_statuses(sh, snap, res, &foreign, foreign_unknown);
  record_events(sh, snap, res, &foreign, foreign_unknown);
  kc_strmap_close(&foreign, NULL);
  explain_all(sh, snap, res);
  sch_metrics_session(&sh->mx, snap, res, kc_clock_wall_ms());
}

/* ---- the maps ---- */

void sch_shell__status_init(sch_shell *sh) {
  kc_strmap_init(&sh->pg_written, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&sh->pg_held, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&sh->pg_invalid, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&sh->q_written, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&sh->why_last, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&sh->ev_last, KC_STRMAP_COPY_KEYS);
}

void sch_shell__status_close(sch_shell *sh) {
  kc_strmap_close(&sh->pg_written, free_written);
  kc_strmap_close(&sh->q_written, free_written);
  kc_strmap_close(&sh->pg_held, NULL);
  kc_strmap_close(&sh->pg_invalid, NULL);
  kc_strmap_close(&sh->why_last, free_explained);
  kc_strmap_close(&sh->ev_last, free_str);
}

void sch_shell__forget_pod_group(sch_shell *sh, const char *key) {
  void *old = NULL;
  if (kc_strmap_del(&sh->pg_written, key, &old) == 0)
    free_written(old); /* a write still in flight finds no entry and leaves it so */
}
