/* jobflow-controller and jobtemplate-controller: the I/O shells around ctl_jobflow.c (Volcano
 * pkg/controllers/jobflow and pkg/controllers/jobtemplate). One shell type serves both: the
 * flow controller watches JobFlows, JobTemplates and Jobs, syncs a flow when it is added, when
 * it has succeeded with jobRetainPolicy delete, and when a Job it controls changes (Volcano's
 * handlers); the template controller watches JobTemplates and Jobs and syncs a template when
 * it is added or a Job made from it is added. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"
#include "ctl_controllers.h"
#include "ctl_jobflow.h"
#include "ctl_note.h"
#include "ctl_overlay.h"
#include "kc_clock.h"
#include "kc_error.h"
#include "kc_events.h"
#include "ctl_inf.h"
#include "kc_leader.h"
#include "kc_log.h"
#include "kc_metrics.h"
#include "kc_strmap.h"
#include "kc_workqueue.h"

typedef struct {
  ctl_env env;
  bool flows; /* the jobflow controller; else the jobtemplate controller */
  const char *name;
  ctl_inf *inf_flow, *inf_tmpl, *inf_job;
  kc_workqueue *q;
  kc_strmap written; /* key -> ctl_json_written: what our status write returned */
  bool synced, stopping;
  int inflight;
  ctl_drain drain;
  uint64_t syncs, created, deleted, status_writes, errors;
  /* jobflow_succeed_phase_count and jobflow_failed_phase_count; NULL without metrics. */
  kc_metric *m_succeed, *m_failed;
} flow_ctl;

typedef struct {
  flow_ctl *c;
  char key[2 * CTL_NAME_MAX];
  json_t *obj; /* the JobFlow or JobTemplate synced (new ref) */
  ctl_jf_plan plan;
  json_t *tmpl_status; /* jobtemplate: the status to write (new) */
  size_t pending;
  int err;
  char errmsg[300];
} flow_op;

static ctl_inf *main_inf(const flow_ctl *c) {
  return c->flows ? c->inf_flow : c->inf_tmpl;
}

/* ---- Jobs ---- */

static void *decode_job(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  const json_t *m = json_object_get(obj, "metadata"), *st = json_object_get(obj, "status");
  const json_t *labels = json_object_get(m, "labels");
  ctl_jf_job *j = calloc(1, sizeof(*j));
  if (!j) {
    kc_errorf(err, errlen, KC_ENOMEM, "out of memory");
    return NULL;
  }
  snprintf(j->ns, sizeof(j->ns), "%s", ctl_jstr(m, "namespace"));
  snprintf(j->name, sizeof(j->name), "%s", ctl_jstr(m, "name"));
  snprintf(j->phase, sizeof(j->phase), "%s", ctl_jstr(json_object_get(st, "state"), "phase"));
  snprintf(j->created, sizeof(j->created), "%s", ctl_jstr(m, "creationTimestamp"));
  snprintf(j->by_template, sizeof(j->by_template), "%s", ctl_jstr(labels, CTL_JF_BY_TEMPLATE));
  snprintf(j->by_flow, sizeof(j->by_flow), "%s", ctl_jstr(labels, CTL_JF_BY_FLOW));
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(m, "ownerReferences"), i, r) {
    if (json_is_true(json_object_get(r, "controller")) && !strcmp(ctl_jstr(r, "kind"), "JobFlow") &&
        strstr(ctl_jstr(r, "apiVersion"), "volcano"))
      snprintf(j->flow_owner, sizeof(j->flow_owner), "%s", ctl_jstr(r, "name"));
  }
  j->status = json_pack("{}");
  static const char *const keep[] = {"runningDuration", "taskStatusCount", "retryCount"};
  for (size_t k = 0; j->status && k < 3; k++) {
    json_t *v = json_object_get(st, keep[k]);
    if (v)
      json_object_set(j->status, keep[k], v);
  }
  return j;
}

static void free_job(void *p) {
  ctl_jf_job *j = p;
  if (j)
    json_decref(j->status);
  free(j);
}

/* Jobs by the label value that names their flow ("ns.flow") or template ("ns.template"). */
static int index_label(const void *obj, kc_index_out *out, void *ud) {
  const ctl_jf_job *j = obj;
  const char *v = ud ? j->by_flow : j->by_template;
  return *v ? kc_index_out_add(out, v) : 0;
}

static void enqueue(flow_ctl *c, const char *ns, const char *name) {
  if (c->stopping || !*name)
    return;
  char key[2 * CTL_NAME_MAX];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  kc_workqueue_add(c->q, key);
}

/* Flow: a Job a JobFlow controls changed (updateJob). Template: a Job made from a template was
 * added (addJob). */
static void on_job_add(const char *key, void *obj, void *ud) {
  (void)key;
  flow_ctl *c = ud;
  const ctl_jf_job *j = obj;
  char ns[CTL_NAME_MAX], name[CTL_NAME_MAX];
  if (!c->flows && ctl_jf_split_ref(j->by_template, ns, sizeof(ns), name, sizeof(name)))
    enqueue(c, ns, name);
}
static void on_job_update(const char *key, void *o, void *n, void *ud) {
  (void)key;
  (void)o;
  flow_ctl *c = ud;
  const ctl_jf_job *j = n;
  if (c->flows)
    enqueue(c, j->ns, j->flow_owner);
}

static void on_main_add(const char *key, void *obj, void *ud) {
  (void)obj;
  flow_ctl *c = ud;
  if (!c->stopping)
    kc_workqueue_add(c->q, key);
}
/* updateJobFlow: only a flow that has succeeded with jobRetainPolicy delete is synced again. */
static void on_flow_update(const char *key, void *o, void *n, void *ud) {
  (void)o;
  const json_t *f = n;
  if (!strcmp(ctl_jstr(json_object_get(json_object_get(f, "status"), "state"), "phase"),
              "Succeed") &&
      !strcmp(ctl_jstr(json_object_get(f, "spec"), "jobRetainPolicy"), "delete"))
    on_main_add(key, n, ud);
}

static bool all_synced(const flow_ctl *c) {
  ctl_inf *v[3] = {c->inf_flow, c->inf_tmpl, c->inf_job};
  for (int i = 0; i < 3; i++)
    if (v[i] && !ctl_inf_has_synced(v[i]))
      return false;
  return true;
}

static void on_synced(void *ud) {
  flow_ctl *c = ud;
  if (c->synced || !all_synced(c))
    return;
  c->synced = true;
  kc_store_iter it;
  const char *key;
  void *obj;
  kc_store_iter_init(ctl_inf_store(main_inf(c)), &it);
  while (kc_store_iter_next(&it, &key, &obj))
    kc_workqueue_add(c->q, key);
  KC_INFO("%s: caches synced, %zu %s", c->name, kc_store_len(ctl_inf_store(main_inf(c))),
          c->flows ? "jobflows" : "jobtemplates");
}

/* ---- the view ---- */

static const ctl_jf_job *lk_job(void *ud, const char *ns, const char *name) {
  flow_ctl *c = ud;
  char key[2 * CTL_NAME_MAX];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  return kc_store_get(ctl_inf_store(c->inf_job), key);
}

static const json_t *lk_template(void *ud, const char *ns, const char *name) {
  flow_ctl *c = ud;
  char key[2 * CTL_NAME_MAX];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  return kc_store_get(ctl_inf_store(c->inf_tmpl), key);
}

/* The Jobs whose label names "ns.name" (index "flow" or "template"), in namespace ns. */
static const ctl_jf_job **labelled(flow_ctl *c, const char *index, const char *ns, const char *name,
                                   size_t *n) {
  char v[2 * CTL_NAME_MAX];
  snprintf(v, sizeof(v), "%s.%s", ns, name);
  kc_store *st = ctl_inf_store(c->inf_job);
  const ctl_jf_job **out = calloc(kc_store_index_count(st, index, v) + 1, sizeof(*out));
  if (!out)
    return NULL;
  kc_store_iter it;
  const char *k;
  void *obj;
  *n = 0;
  if (kc_store_index_iter(st, index, v, &it) == 0)
    while (kc_store_iter_next(&it, &k, &obj))
      if (!strcmp(((ctl_jf_job *)obj)->ns, ns))
        out[(*n)++] = obj;
  return out;
}

/* ---- carrying a plan out ---- */

static void op_event(flow_op *op, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void op_event(flow_op *op, const char *type, const char *reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ctl_event_vrecord_json(op->c->env.events, op->c->flows ? "JobFlow" : "JobTemplate", CTL_JF_API,
                         op->obj, type, reason, fmt, ap);
  va_end(ap);
}

static void op_fail(flow_op *op, int err, const char *msg) {
  if (op->err)
    return;
  op->err = err ? err : KC_EINVAL;
  snprintf(op->errmsg, sizeof(op->errmsg), "%s", msg);
}

/* handleJobFlowErr: retried with backoff up to --max-requeue-num, then dropped with a Warning
 * event "SyncJobFlow" (the action's name). */
static void finish(flow_op *op) {
  flow_ctl *c = op->c;
  c->inflight--;
  if (op->err && !c->stopping) {
    c->errors++;
    int max = c->env.max_requeue;
    if (max == -1 || kc_workqueue_num_requeues(c->q, op->key) < max) {
      KC_V(2, "%s: error syncing %s: %s", c->name, op->key, op->errmsg);
      kc_workqueue_add_rate_limited(c->q, op->key);
    } else {
      if (c->flows)
        op_event(op, KC_EVENT_WARNING, "SyncJobFlow", "SyncJobFlow JobFlow failed for %s",
                 op->errmsg);
      KC_WARN("%s: dropping %s out of the queue: %s", c->name, op->key, op->errmsg);
      kc_workqueue_forget(c->q, op->key);
    }
  } else {
    kc_workqueue_forget(c->q, op->key);
  }
  kc_workqueue_done(c->q, op->key);
  json_decref(op->obj);
  json_decref(op->tmpl_status);
  ctl_jf_plan_free(&op->plan);
  free(op);
}

static void status_done(const kc_api_result *res, void *data) {
  flow_op *op = data;
  if (res->err == 0 && res->obj) {
    op->c->status_writes++;
    /* Without the entry the next sync reads the cache, possibly older: a conflict, retried. */
    if (ctl_json_write_through(&op->c->written, op->key, res->obj, uv_hrtime()))
      KC_WARN("%s: out of memory keeping the status written for %s", op->c->name, op->key);
  } else if (res->err) {
    KC_ERROR("%s: failed to update status of %s: %s", op->c->name, op->key, res->message);
    op_fail(op, res->err, res->message);
  }
  finish(op);
}

static void write_status(flow_op *op) {
  json_t *st = op->c->flows ? op->plan.status : op->tmpl_status;
  if (!st || op->err || op->c->stopping ||
      (op->c->env.leader && kc_leader_fence(op->c->env.leader))) {
    finish(op);
    return;
  }
  const json_t *m = json_object_get(op->obj, "metadata");
  kc_ref ref = {.group = "flow.volcano.sh",
                .version = "v1alpha1",
                .resource = op->c->flows ? "jobflows" : "jobtemplates",
                .namespace = ctl_jstr(m, "namespace"),
                .name = ctl_jstr(m, "name"),
                .subresource = "status"};
  json_t *body = json_deep_copy(op->obj);
  int rc = body ? json_object_set(body, "status", st) : KC_ENOMEM;
  if (rc == 0)
    rc = kc_api_call(op->c->env.client, KC_UPDATE, &ref, NULL, body, status_done, op);
  json_decref(body);
  if (rc) {
    op_fail(op, rc, kc_strerror(rc));
    finish(op);
  }
}

typedef struct {
  flow_op *op;
  size_t i;
} write_ctx;

static void created(const kc_api_result *res, void *data) {
  write_ctx *w = data;
  flow_op *op = w->op;
  const char *name = ctl_jstr(json_object_get(op->plan.create[w->i], "metadata"), "name");
  free(w);
  if (res->err == 0) {
    op->c->created++;
    op_event(op, KC_EVENT_NORMAL, "Created", "create a job named %s!", name);
  } else if (res->err != KC_EALREADYEXISTS) {
    op_fail(op, res->err, res->message);
  }
  if (--op->pending == 0)
    write_status(op);
}

static void deleted(const kc_api_result *res, void *data) {
  write_ctx *w = data;
  flow_op *op = w->op;
  free(w);
  if (res->err == 0 || res->err == KC_ENOTFOUND)
    op->c->deleted++;
  else
    op_fail(op, res->err, res->message);
  if (--op->pending == 0)
    write_status(op);
}

/* Creations and deletions all in flight together, then the status. */
static void run_writes(flow_op *op) {
  const char *ns = ctl_jstr(json_object_get(op->obj, "metadata"), "namespace");
  bool fenced = op->c->env.leader && kc_leader_fence(op->c->env.leader);
  op->pending = 1;
  size_t total = op->plan.ncreate + op->plan.ndel;
  for (size_t i = 0; !fenced && i < total; i++) {
    write_ctx *w = malloc(sizeof(*w));
    if (!w) {
      op_fail(op, KC_ENOMEM, "out of memory");
      break;
    }
    w->op = op;
    bool create = i < op->plan.ncreate;
    w->i = create ? i : i - op->plan.ncreate;
    kc_ref ref = {.group = "batch.volcano.sh",
                  .version = "v1alpha1",
                  .resource = "jobs",
                  .namespace = ns,
                  .name = create ? NULL : op->plan.del[w->i]};
    op->pending++;
    int rc = create ? kc_api_call(op->c->env.client, KC_CREATE, &ref, NULL, op->plan.create[w->i],
                                  created, w)
                    : kc_api_call(op->c->env.client, KC_DELETE, &ref, NULL, NULL, deleted, w);
    if (rc) {
      op->pending--;
      free(w);
      op_fail(op, rc, kc_strerror(rc));
    }
  }
  if (--op->pending == 0)
    write_status(op);
}

/* Volcano's jobflow_*_phase_count, by the flow's namespace. */
static void count_phase(flow_ctl *c, const json_t *flow, const char *phase) {
  kc_metric *m = !strcmp(phase, "Succeed") ? c->m_succeed : c->m_failed;
  const char *ns = ctl_jstr(json_object_get(flow, "metadata"), "namespace");
  kc_series *se;
  if (m && kc_metric_series(m, (const char *const[]){ns}, &se) == 0)
    kc_counter_inc(se);
}

static int register_metrics(flow_ctl *c, kc_metrics *m) {
  static const char *const labels[] = {"jobflow_namespace", NULL};
  int rc = kc_metrics_counter(m, "volcano_jobflow_succeed_phase_count",
                              "Number of jobflow succeed phase", labels, &c->m_succeed);
  if (rc == 0)
    rc = kc_metrics_counter(m, "volcano_jobflow_failed_phase_count",
                            "Number of jobflow failed phase", labels, &c->m_failed);
  return rc;
}

static int plan_op(flow_ctl *c, flow_op *op) {
  const json_t *m = json_object_get(op->obj, "metadata");
  size_t n = 0;
  const ctl_jf_job **jobs = labelled(c, c->flows ? "flow" : "template", ctl_jstr(m, "namespace"),
                                     ctl_jstr(m, "name"), &n);
  if (!jobs)
    return KC_ENOMEM;
  int rc = 0;
  if (c->flows) {
    ctl_jf_lookup lk = {.job = lk_job, .template = lk_template, .ud = c};
    rc = ctl_jobflow_sync(op->obj, jobs, n, &lk, kc_clock_wall_ms(), &op->plan);
    if (rc == 0 && op->plan.counted)
      count_phase(c, op->obj, op->plan.counted);
    if (rc == 0 && *op->plan.cycle)
      KC_WARN("%s: %s is not a DAG, the cycle: %s", c->name, op->key, op->plan.cycle);
    for (size_t i = 0; rc == 0 && i < op->plan.nev; i++)
      op_event(op, op->plan.ev[i].type, op->plan.ev[i].reason, "%s", op->plan.ev[i].message);
    if (op->plan.err)
      op_fail(op, op->plan.err, op->plan.errmsg);
  } else {
    const char **names = calloc(n + 1, sizeof(*names));
    for (size_t i = 0; names && i < n; i++)
      names[i] = jobs[i]->name;
    op->tmpl_status = names ? ctl_jobtemplate_status(op->obj, names, n) : NULL;
    rc = names ? 0 : KC_ENOMEM;
    free(names);
  }
  free(jobs);
  return rc;
}

static void process(kc_workqueue *q, const char *key, void *ud) {
  flow_ctl *c = ud;
  /* After stop the informers are gone, while the shut-down queue still hands out its keys. */
  const json_t *obj =
      c->stopping ? NULL
                  : ctl_json_newest(&c->written, ctl_inf_store(main_inf(c)), key, uv_hrtime());
  flow_op *op = obj && !c->stopping ? calloc(1, sizeof(*op)) : NULL;
  if (!op) {
    if (obj && !c->stopping)
      kc_workqueue_add_rate_limited(q, key);
    else
      kc_workqueue_forget(q, key);
    kc_workqueue_done(q, key);
    return;
  }
  c->syncs++;
  c->inflight++;
  op->c = c;
  snprintf(op->key, sizeof(op->key), "%s", key);
  op->obj = json_incref((json_t *)obj);
  int rc = plan_op(c, op);
  if (rc) {
    op_fail(op, rc, kc_strerror(rc));
    finish(op);
    return;
  }
  if (c->flows)
    run_writes(op);
  else
    write_status(op);
}

/* ---- lifecycle ---- */

static int new_informer(flow_ctl *c, const char *group, const char *resource,
                        const kc_informer_handlers *h, ctl_inf **out) {
  kc_informer_options o = {.group = group, .version = "v1alpha1", .resource = resource};
  return ctl_inf_new(c->env.hub, c->env.client, &o, h, out);
}

static int flow_init(const ctl_env *env, bool flows, void **out) {
  flow_ctl *c = calloc(1, sizeof(*c));
  if (!c)
    return KC_ENOMEM;
  c->env = *env;
  c->flows = flows;
  c->name = flows ? "jobflow-controller" : "jobtemplate-controller";
  kc_strmap_init(&c->written, KC_STRMAP_COPY_KEYS);
  kc_workqueue_opts qo = {
      .name = flows ? "jobflow" : "jobtemplate", .process = process, .process_ud = c, .workers = 1};
  int rc = kc_workqueue_new(env->loop, &qo, &c->q);
  if (rc)
    goto fail;
  if (env->metrics)
    kc_workqueue_use_metrics(c->q, env->metrics);
  if (flows && env->metrics && (rc = register_metrics(c, env->metrics)) < 0)
    goto fail;
  kc_informer_handlers fh = {
      .on_add = on_main_add, .on_update = on_flow_update, .on_synced = on_synced, .ud = c};
  kc_informer_handlers th = {.on_add = flows ? NULL : on_main_add, .on_synced = on_synced, .ud = c};
  kc_informer_handlers jh = {.decode = decode_job,
                             .free_obj = free_job,
                             .on_add = on_job_add,
                             .on_update = on_job_update,
                             .on_synced = on_synced,
                             .ud = c};
  if ((flows && (rc = new_informer(c, "flow.volcano.sh", "jobflows", &fh, &c->inf_flow))) ||
      (rc = new_informer(c, "flow.volcano.sh", "jobtemplates", &th, &c->inf_tmpl)) ||
      (rc = new_informer(c, "batch.volcano.sh", "jobs", &jh, &c->inf_job)) ||
      (rc = kc_store_add_index(ctl_inf_store(c->inf_job), flows ? "flow" : "template", index_label,
                               flows ? (void *)c : NULL)))
    goto fail;
  *out = c;
  return 0;
fail:
  ctl_inf_free(c->inf_flow);
  ctl_inf_free(c->inf_tmpl);
  ctl_inf_free(c->inf_job);
  kc_workqueue_free(c->q);
  ctl_json_written_close(&c->written);
  free(c);
  return rc;
}

static int jobflow_init(const ctl_env *env, void **out) {
  return flow_init(env, true, out);
}
static int jobtemplate_init(const ctl_env *env, void **out) {
  return flow_init(env, false, out);
}

static int flow_start(void *p) {
  flow_ctl *c = p;
  int rc = c->inf_flow ? ctl_inf_start(c->inf_flow) : 0;
  if (!rc)
    rc = ctl_inf_start(c->inf_tmpl);
  return rc ? rc : ctl_inf_start(c->inf_job);
}

static bool flow_synced(const void *p) {
  return ((const flow_ctl *)p)->synced;
}

static void flow_stop(void *p, uint64_t deadline_ms, void (*done)(void *), void *ud) {
  flow_ctl *c = p;
  if (c->stopping)
    return;
  c->stopping = true;
  ctl_inf_free(c->inf_flow);
  ctl_inf_free(c->inf_tmpl);
  ctl_inf_free(c->inf_job);
  c->inf_flow = c->inf_tmpl = c->inf_job = NULL;
  kc_workqueue_shutdown(c->q);
  ctl_drain_start(&c->drain, c->env.loop, c->name, &c->inflight, deadline_ms, done, ud);
}

static void flow_free(void *p) {
  flow_ctl *c = p;
  if (!c)
    return;
  KC_INFO("%s stopped: %llu syncs, %llu jobs created, %llu deleted, %llu status writes, %llu "
          "errors",
          c->name, (unsigned long long)c->syncs, (unsigned long long)c->created,
          (unsigned long long)c->deleted, (unsigned long long)c->status_writes,
          (unsigned long long)c->errors);
  ctl_inf_free(c->inf_flow);
  ctl_inf_free(c->inf_tmpl);
  ctl_inf_free(c->inf_job);
  kc_workqueue_free(c->q);
  ctl_json_written_close(&c->written);
  ctl_drain_free_owner(&c->drain, c);
}

const ctl_controller_def ctl_jobflow_controller = {
    .name = "jobflow-controller",
    .informers = "jobflows, jobtemplates, jobs",
    .init = jobflow_init,
    .start = flow_start,
    .synced = flow_synced,
    .stop = flow_stop,
    .free = flow_free,
};

const ctl_controller_def ctl_jobtemplate_controller = {
    .name = "jobtemplate-controller",
    .informers = "jobtemplates, jobs",
    .init = jobtemplate_init,
    .start = flow_start,
    .synced = flow_synced,
    .stop = flow_stop,
    .free = flow_free,
};
