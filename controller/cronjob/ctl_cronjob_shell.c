/* cronjob-controller: the I/O shell around ctl_cronjob.c (Volcano pkg/controllers/cronjob).
 * Informers on CronJobs and Jobs (every Job, kept as a small summary), one keyed work queue;
 * a sync builds the CronJob's view (its status as our last write returned it while the watch
 * lags, its Jobs plus the ones we created and the watch has not shown), runs the core, then
 * carries the plan out in order: deletions together, the creation, the status update.
 *
 * --cronjob-test-clock-speed (tests only) makes the controller's clock run faster than the
 * wall clock from its start, so an end-to-end test sees an every-minute CronJob fire every
 * second or two. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"
#include "ctl_controllers.h"
#include "ctl_cronjob.h"
#include "ctl_tzdb.h"
#include "ctl_note.h"
#include "ctl_overlay.h"
#include "kc_clock.h"
#include "kc_codec.h"
#include "kc_error.h"
#include "kc_events.h"
#include "ctl_inf.h"
#include "kc_leader.h"
#include "kc_log.h"
#include "kc_strmap.h"
#include "kc_workqueue.h"

/* A Job as the cronjob controller keeps it. */
typedef struct {
  ctl_cj_job j;
  char ns[CTL_NAME_MAX];
  char owner[CTL_NAME_MAX]; /* the controlling CronJob's name, "" when none */
  char owner_uid[CTL_UID_MAX];
  int64_t seen_ns; /* expectations: when the Job was created */
} cj_job;

typedef struct {
  ctl_env env;
  ctl_inf *inf_cj, *inf_job;
  kc_workqueue *q;
  kc_strmap written; /* CronJob key -> ctl_json_written: what our status write returned */
  kc_strmap expect;  /* Job key -> cj_job we created, until the watch shows it */
  bool synced, stopping;
  int inflight;
  ctl_drain drain;
  double speed;
  int64_t origin_ms;
  uint64_t syncs, created, deleted, status_writes, errors;
} cron_ctl;

typedef struct {
  cron_ctl *c;
  char key[2 * CTL_NAME_MAX];
  json_t *cj; /* the view's CronJob (new ref) */
  ctl_cj_plan plan;
  size_t pending;
  bool replace_failed;
  int err;
} cj_op;

#define EXPECT_TTL_NS (300ull * 1000000000ull)

static int64_t now_ms(const cron_ctl *c) {
  int64_t w = kc_clock_wall_ms();
  return c->speed == 1.0 ? w : c->origin_ms + (int64_t)((double)(w - c->origin_ms) * c->speed);
}

/* ---- the Job summary (the informer's transform) ---- */

static void *decode_job(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  const json_t *m = json_object_get(obj, "metadata");
  const json_t *state = json_object_get(json_object_get(obj, "status"), "state");
  cj_job *j = calloc(1, sizeof(*j));
  if (!j) {
    kc_errorf(err, errlen, KC_ENOMEM, "out of memory");
    return NULL;
  }
  snprintf(j->j.name, sizeof(j->j.name), "%s", ctl_jstr(m, "name"));
  snprintf(j->j.uid, sizeof(j->j.uid), "%s", ctl_jstr(m, "uid"));
  snprintf(j->ns, sizeof(j->ns), "%s", ctl_jstr(m, "namespace"));
  snprintf(j->j.phase, sizeof(j->j.phase), "%s", ctl_jstr(state, "phase"));
  snprintf(j->j.finished_at, sizeof(j->j.finished_at), "%s", ctl_jstr(state, "lastTransitionTime"));
  int64_t ms;
  if (kc_rfc3339_parse(ctl_jstr(m, "creationTimestamp"), &ms) == 0)
    j->j.created_ms = ms;
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(m, "ownerReferences"), i, r) {
    if (json_is_true(json_object_get(r, "controller")) && !strcmp(ctl_jstr(r, "kind"), "CronJob") &&
        !strcmp(ctl_jstr(r, "apiVersion"), CTL_CJ_API)) {
      snprintf(j->owner, sizeof(j->owner), "%s", ctl_jstr(r, "name"));
      snprintf(j->owner_uid, sizeof(j->owner_uid), "%s", ctl_jstr(r, "uid"));
    }
  }
  return j;
}

static int index_owner(const void *obj, kc_index_out *out, void *ud) {
  (void)ud;
  const cj_job *j = obj;
  if (!*j->owner)
    return 0;
  char key[2 * CTL_NAME_MAX];
  snprintf(key, sizeof(key), "%s/%s", j->ns, j->owner);
  return kc_index_out_add(out, key);
}

/* ---- handlers (Volcano's addJob/updateJob/deleteJob and the CronJob handlers) ---- */

static void enqueue_owner(cron_ctl *c, const cj_job *j) {
  if (!*j->owner || c->stopping)
    return;
  char key[2 * CTL_NAME_MAX];
  snprintf(key, sizeof(key), "%s/%s", j->ns, j->owner);
  const json_t *cj = kc_store_get(ctl_inf_store(c->inf_cj), key);
  if (cj && !strcmp(ctl_jstr(json_object_get(cj, "metadata"), "uid"), j->owner_uid))
    kc_workqueue_add(c->q, key);
}

static void on_job_add(const char *key, void *obj, void *ud) {
  (void)key;
  enqueue_owner(ud, obj);
}
static void on_job_update(const char *key, void *o, void *n, void *ud) {
  (void)key;
  enqueue_owner(ud, n);
  if (strcmp(((cj_job *)o)->owner_uid, ((cj_job *)n)->owner_uid) != 0)
    enqueue_owner(ud, o);
}
static void on_job_delete(const char *key, void *obj, void *ud) {
  (void)key;
  enqueue_owner(ud, obj);
}
static void on_cj(const char *key, void *obj, void *ud) {
  (void)obj;
  cron_ctl *c = ud;
  if (!c->stopping)
    kc_workqueue_add(c->q, key);
}
static void on_cj_update(const char *key, void *o, void *n, void *ud) {
  (void)o;
  on_cj(key, n, ud);
}

static void on_synced(void *ud) {
  cron_ctl *c = ud;
  if (c->synced || !ctl_inf_has_synced(c->inf_cj) || !ctl_inf_has_synced(c->inf_job))
    return;
  c->synced = true;
  kc_store_iter it;
  const char *key;
  void *obj;
  kc_store_iter_init(ctl_inf_store(c->inf_cj), &it);
  while (kc_store_iter_next(&it, &key, &obj))
    kc_workqueue_add(c->q, key);
  KC_INFO("cronjob-controller: caches synced, %zu cronjobs",
          kc_store_len(ctl_inf_store(c->inf_cj)));
}

/* ---- the view ---- */

static const char *lookup_uid(void *ud, const char *ns, const char *name) {
  cron_ctl *c = ud;
  char key[2 * CTL_NAME_MAX];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  const cj_job *j = kc_store_get(ctl_inf_store(c->inf_job), key);
  if (!j)
    j = kc_strmap_get(&c->expect, key);
  return j ? j->j.uid : NULL;
}

/* Drops the expectations the cache has caught up with, or that are too old to trust. */
static void prune_expect(cron_ctl *c) {
  kc_store *st = ctl_inf_store(c->inf_job);
  uint64_t now = uv_hrtime();
  for (bool again = true; again;) {
    again = false;
    size_t pos = 0;
    kc_strmap_slot *sl;
    while ((sl = kc_strmap_next(&c->expect, &pos))) {
      cj_job *e = sl->val;
      if (kc_store_get(st, sl->key) || now - (uint64_t)e->seen_ns > EXPECT_TTL_NS) {
        void *old;
        kc_strmap_del(&c->expect, sl->key, &old);
        free(old);
        again = true;
        break;
      }
    }
  }
}

/* The Jobs the CronJob controls: the cache's, and the ones we created that it lacks. */
static ctl_cj_job *owned_jobs(cron_ctl *c, const char *key, const char *uid, size_t *n) {
  prune_expect(c);
  kc_store *st = ctl_inf_store(c->inf_job);
  size_t cap = kc_store_index_count(st, "owner", key) + kc_strmap_len(&c->expect) + 1, k = 0;
  ctl_cj_job *v = calloc(cap, sizeof(*v));
  if (!v)
    return NULL;
  kc_store_iter it;
  const char *jk;
  void *obj;
  if (kc_store_index_iter(st, "owner", key, &it) == 0)
    while (kc_store_iter_next(&it, &jk, &obj))
      if (!strcmp(((cj_job *)obj)->owner_uid, uid) && k < cap)
        v[k++] = ((cj_job *)obj)->j;
  size_t pos = 0;
  kc_strmap_slot *sl;
  while ((sl = kc_strmap_next(&c->expect, &pos)))
    if (!strcmp(((cj_job *)sl->val)->owner_uid, uid) && k < cap)
      v[k++] = ((cj_job *)sl->val)->j;
  *n = k;
  return v;
}

/* ---- carrying a plan out ---- */

static void op_event(cj_op *op, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void op_event(cj_op *op, const char *type, const char *reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ctl_event_vrecord_json(op->c->env.events, "CronJob", CTL_CJ_API, op->cj, type, reason, fmt, ap);
  va_end(ap);
}

static void finish(cj_op *op) {
  cron_ctl *c = op->c;
  c->inflight--;
  if (op->err) {
    c->errors++;
    KC_V(2, "cronjob %s: %s", op->key, op->plan.errmsg[0] ? op->plan.errmsg : kc_strerror(op->err));
    if (!c->stopping)
      kc_workqueue_add_rate_limited(c->q, op->key);
  } else {
    kc_workqueue_forget(c->q, op->key);
    if (op->plan.requeue && !c->stopping) {
      double real = (double)op->plan.requeue_ms / c->speed;
      kc_workqueue_add_after(c->q, op->key, (uint64_t)(real < 0 ? 0 : real) * 1000000ull);
    }
  }
  kc_workqueue_done(c->q, op->key);
  json_decref(op->cj);
  ctl_cj_plan_free(&op->plan);
  free(op);
}

static void status_done(const kc_api_result *res, void *data) {
  cj_op *op = data;
  cron_ctl *c = op->c;
  if (res->err == 0 && res->obj) {
    /* Without the entry the next sync reads the cache, possibly older: a conflict, retried. */
    if (ctl_json_write_through(&c->written, op->key, res->obj, uv_hrtime()))
      KC_WARN("cronjob-controller: out of memory keeping the status written for %s", op->key);
    c->status_writes++;
  } else if (res->err) {
    KC_ERROR("Failed to update status for CronJob <%s>, err: %s", op->key, res->message);
    if (!op->err)
      op->err = res->err;
  }
  finish(op);
}

static void write_status(cj_op *op) {
  if (!op->plan.write_status || op->c->stopping ||
      (op->c->env.leader && kc_leader_fence(op->c->env.leader))) {
    finish(op);
    return;
  }
  json_t *body = json_deep_copy(op->cj);
  const json_t *m = json_object_get(op->cj, "metadata");
  kc_ref ref = {.group = "batch.volcano.sh",
                .version = "v1alpha1",
                .resource = "cronjobs",
                .namespace = ctl_jstr(m, "namespace"),
                .name = ctl_jstr(m, "name"),
                .subresource = "status"};
  int rc = body ? json_object_set(body, "status", op->plan.status) : KC_ENOMEM;
  if (rc == 0)
    rc = kc_api_call(op->c->env.client, KC_UPDATE, &ref, NULL, body, status_done, op);
  json_decref(body);
  if (rc) {
    op->err = rc < 0 ? rc : KC_ENOMEM;
    finish(op);
  }
}

static void remember_created(cj_op *op, const json_t *job) {
  const json_t *m = json_object_get(job, "metadata");
  cj_job *e = decode_job((json_t *)job, NULL, NULL, 0);
  if (!e)
    return;
  e->seen_ns = (int64_t)uv_hrtime();
  char key[2 * CTL_NAME_MAX];
  snprintf(key, sizeof(key), "%s/%s", ctl_jstr(m, "namespace"), ctl_jstr(m, "name"));
  void *old = NULL;
  /* 1 (replaced) keeps e too: only a failure leaves it ours to free. */
  if (kc_strmap_put(&op->c->expect, key, e, &old) < 0)
    free(e);
  free(old);
}

static void got_existing(const kc_api_result *res, void *data) {
  cj_op *op = data;
  const char *uid = ctl_jstr(json_object_get(op->cj, "metadata"), "uid");
  char owner[CTL_NAME_MAX];
  if (res->err) {
    op->err = res->err;
  } else if (!ctl_cj_controlled_by(res->obj, uid, owner, sizeof(owner))) {
    op_event(op, KC_EVENT_WARNING, "ForeignJob",
             "Job %s exists but is not owned by this CronJob (current owner: %s)",
             ctl_jstr(json_object_get(res->obj, "metadata"), "name"), owner);
  } else if (!ctl_cj_finished(ctl_jstr(
                 json_object_get(json_object_get(res->obj, "status"), "state"), "phase"))) {
    ctl_cj_status_add_active(op->plan.status, res->obj, op->plan.scheduled_ms);
    op->plan.write_status = true;
  }
  write_status(op);
}

static bool namespace_terminating(const json_t *st) {
  size_t i;
  json_t *cause;
  json_array_foreach(
      json_object_get(json_object_get(st, "details"), "causes"), i,
      cause) if (!strcmp(ctl_jstr(cause, "reason"), "NamespaceTerminating") ||
                 !strcmp(ctl_jstr(cause, "type"), "NamespaceTerminating")) return true;
  return false;
}

static void created(const kc_api_result *res, void *data) {
  cj_op *op = data;
  const json_t *m = json_object_get(op->cj, "metadata");
  const json_t *jm = json_object_get(op->plan.create, "metadata");
  if (res->err == 0 && res->obj) {
    op->c->created++;
    remember_created(op, res->obj);
    op_event(op, KC_EVENT_NORMAL, "SuccessfulCreate", "Created job %s for CronJob %s/%s",
             ctl_jstr(json_object_get(res->obj, "metadata"), "name"), ctl_jstr(m, "namespace"),
             ctl_jstr(m, "name"));
    ctl_cj_status_add_active(op->plan.status, res->obj, op->plan.scheduled_ms);
    op->plan.write_status = true;
  } else if (res->err == KC_EALREADYEXISTS) {
    kc_ref ref = {.group = "batch.volcano.sh",
                  .version = "v1alpha1",
                  .resource = "jobs",
                  .namespace = ctl_jstr(jm, "namespace"),
                  .name = ctl_jstr(jm, "name")};
    if (kc_api_call(op->c->env.client, KC_GET, &ref, NULL, NULL, got_existing, op) == 0)
      return;
    op->err = KC_EINVAL;
  } else if (namespace_terminating(res->obj)) {
    op_event(op, KC_EVENT_WARNING, "NamespaceTerminating",
             "Namespace %s is terminating, skipping job creation", ctl_jstr(m, "namespace"));
    op->err = res->err;
  } else {
    op_event(op, KC_EVENT_WARNING, "FailedCreate", "Failed to create job: %s", res->message);
    op->err = res->err;
  }
  write_status(op);
}

static void create_job(cj_op *op) {
  if (!op->plan.create || op->replace_failed || op->c->stopping ||
      (op->c->env.leader && kc_leader_fence(op->c->env.leader))) {
    if (op->replace_failed && !op->err)
      op->err = KC_EINVAL;
    write_status(op);
    return;
  }
  const json_t *jm = json_object_get(op->plan.create, "metadata");
  kc_ref ref = {.group = "batch.volcano.sh",
                .version = "v1alpha1",
                .resource = "jobs",
                .namespace = ctl_jstr(jm, "namespace")};
  int rc = kc_api_call(op->c->env.client, KC_CREATE, &ref, NULL, op->plan.create, created, op);
  if (rc) {
    op->err = rc;
    write_status(op);
  }
}

typedef struct {
  cj_op *op;
  size_t i;
} del_ctx;

/* Volcano's deleteJobByClient records a success as Normal "FailedDelete" and a failure as
 * Warning "SuccessfulDelete" (the two reasons are swapped there); kept as Volcano writes them
 * since tools watching the events match on them. */
static void deleted(const kc_api_result *res, void *data) {
  del_ctx *d = data;
  cj_op *op = d->op;
  const ctl_cj_delete *del = &op->plan.del[d->i];
  free(d);
  if (res->err == 0 || res->err == KC_ENOTFOUND) {
    op->c->deleted++;
    op_event(op, KC_EVENT_NORMAL, "FailedDelete", "Deleted job \"%s\"", del->name);
  } else {
    op_event(op, KC_EVENT_WARNING, "SuccessfulDelete", "Error deleting job \"%s\": %s", del->name,
             res->message);
    if (del->replace)
      op->replace_failed = true;
  }
  if (--op->pending == 0)
    create_job(op);
}

static void run_plan(cj_op *op) {
  const json_t *m = json_object_get(op->cj, "metadata");
  for (size_t i = 0; i < op->plan.nev; i++)
    op_event(op, op->plan.ev[i].type, op->plan.ev[i].reason, "%s", op->plan.ev[i].message);
  if (op->plan.err) {
    op->err = op->plan.err;
  }
  bool fenced = op->c->env.leader && kc_leader_fence(op->c->env.leader);
  op->pending = 1;
  for (size_t i = 0; !fenced && i < op->plan.ndel; i++) {
    del_ctx *d = malloc(sizeof(*d));
    if (!d)
      break;
    d->op = op;
    d->i = i;
    kc_ref ref = {.group = "batch.volcano.sh",
                  .version = "v1alpha1",
                  .resource = "jobs",
                  .namespace = ctl_jstr(m, "namespace"),
                  .name = op->plan.del[i].name};
    kc_query q = {.precondition_uid = op->plan.del[i].uid, .propagation_policy = "Background"};
    op->pending++;
    if (kc_api_call(op->c->env.client, KC_DELETE, &ref, &q, NULL, deleted, d) != 0) {
      op->pending--;
      free(d);
    }
  }
  if (--op->pending == 0)
    create_job(op);
}

static void process(kc_workqueue *q, const char *key, void *ud) {
  cron_ctl *c = ud;
  /* After stop the informers are gone, while the shut-down queue still hands out its keys. */
  const json_t *cj =
      c->stopping ? NULL : ctl_json_newest(&c->written, ctl_inf_store(c->inf_cj), key, uv_hrtime());
  const json_t *m = json_object_get(cj, "metadata");
  if (!cj || json_object_get(m, "deletionTimestamp")) {
    kc_workqueue_forget(q, key);
    kc_workqueue_done(q, key);
    return;
  }
  c->syncs++;
  cj_op *op = calloc(1, sizeof(*op));
  size_t n = 0;
  ctl_cj_job *jobs = op ? owned_jobs(c, key, ctl_jstr(m, "uid"), &n) : NULL;
  if (!op || !jobs) {
    free(op);
    free(jobs);
    kc_workqueue_add_rate_limited(q, key);
    kc_workqueue_done(q, key);
    return;
  }
  op->c = c;
  snprintf(op->key, sizeof(op->key), "%s", key);
  op->cj = json_incref((json_t *)cj);
  ctl_tzdb zones;
  int rc = ctl_tzdb_read_cronjob(&zones, cj);
  if (rc == 0)
    rc = ctl_cronjob_sync(cj, &zones, jobs, n, lookup_uid, c, now_ms(c), &op->plan);
  ctl_tzdb_free(&zones);
  free(jobs);
  c->inflight++;
  if (rc) {
    op->err = rc;
    finish(op);
    return;
  }
  run_plan(op);
}

/* ---- lifecycle ---- */

static int cron_init(const ctl_env *env, void **out) {
  cron_ctl *c = calloc(1, sizeof(*c));
  if (!c)
    return KC_ENOMEM;
  c->env = *env;
  c->speed = env->cron_clock_speed > 0 ? env->cron_clock_speed : 1.0;
  c->origin_ms = kc_clock_wall_ms();
  kc_strmap_init(&c->written, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&c->expect, KC_STRMAP_COPY_KEYS);
  /* client-go's default controller rate limiter: 5 ms doubling to 1000 s, 10 qps / 100. */
  kc_workqueue_opts qo = {.name = "cronjob",
                          .process = process,
                          .process_ud = c,
                          .workers = env->workers_cron > 0 ? env->workers_cron : 3};
  int rc = kc_workqueue_new(env->loop, &qo, &c->q);
  if (rc)
    goto fail;
  if (env->metrics)
    kc_workqueue_use_metrics(c->q, env->metrics);
  kc_informer_options co = {
      .group = "batch.volcano.sh", .version = "v1alpha1", .resource = "cronjobs"};
  kc_informer_handlers ch = {.on_add = on_cj,
                             .on_update = on_cj_update,
                             .on_delete = on_cj,
                             .on_synced = on_synced,
                             .ud = c};
  kc_informer_options jo = {.group = "batch.volcano.sh", .version = "v1alpha1", .resource = "jobs"};
  kc_informer_handlers jh = {.decode = decode_job,
                             .free_obj = free,
                             .on_add = on_job_add,
                             .on_update = on_job_update,
                             .on_delete = on_job_delete,
                             .on_synced = on_synced,
                             .ud = c};
  if ((rc = ctl_inf_new(env->hub, env->client, &co, &ch, &c->inf_cj)) ||
      (rc = ctl_inf_new(env->hub, env->client, &jo, &jh, &c->inf_job)) ||
      (rc = kc_store_add_index(ctl_inf_store(c->inf_job), "owner", index_owner, NULL)))
    goto fail;
  if (c->speed != 1.0)
    KC_WARN("cronjob-controller: the clock runs %gx faster than the wall clock (tests only)",
            c->speed);
  *out = c;
  return 0;
fail:
  ctl_inf_free(c->inf_cj);
  ctl_inf_free(c->inf_job);
  kc_workqueue_free(c->q);
  ctl_json_written_close(&c->written);
  kc_strmap_close(&c->expect, NULL);
  free(c);
  return rc;
}

static int cron_start(void *p) {
  cron_ctl *c = p;
  int rc = ctl_inf_start(c->inf_cj);
  return rc ? rc : ctl_inf_start(c->inf_job);
}

static bool cron_synced(const void *p) {
  return ((const cron_ctl *)p)->synced;
}

static void cron_stop(void *p, uint64_t deadline_ms, void (*done)(void *), void *ud) {
  cron_ctl *c = p;
  if (c->stopping)
    return;
  c->stopping = true;
  ctl_inf_free(c->inf_cj);
  ctl_inf_free(c->inf_job);
  c->inf_cj = c->inf_job = NULL;
  kc_workqueue_shutdown(c->q);
  ctl_drain_start(&c->drain, c->env.loop, "cronjob-controller", &c->inflight, deadline_ms, done,
                  ud);
}

static void cron_free(void *p) {
  cron_ctl *c = p;
  if (!c)
    return;
  KC_INFO("cronjob-controller stopped: %llu syncs, %llu jobs created, %llu deleted, %llu status "
          "writes, %llu errors",
          (unsigned long long)c->syncs, (unsigned long long)c->created,
          (unsigned long long)c->deleted, (unsigned long long)c->status_writes,
          (unsigned long long)c->errors);
  ctl_inf_free(c->inf_cj);
  ctl_inf_free(c->inf_job);
  kc_workqueue_free(c->q);
  ctl_json_written_close(&c->written);
  kc_strmap_close(&c->expect, free);
  ctl_drain_free_owner(&c->drain, c);
}

const ctl_controller_def ctl_cronjob_controller = {
    .name = "cronjob-controller",
    .informers = "cronjobs, jobs",
    .init = cron_init,
    .start = cron_start,
    .synced = cron_synced,
    .stop = cron_stop,
    .free = cron_free,
};
