/* The scheduler's I/O shell: see sch_shell.h. */
#include "sch_shell.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kc_clock.h"
#include "kc_container.h"
#include "kc_error.h"
#include "kc_file.h"
#include "kc_log.h"
#include "kc_store.h"
#include "kc_str.h"
#include "sch_binder.h"
#include "sch_claims.h"
#include "sch_volumes.h"
#include "sch_cache.h"
#include "sch_evictor.h"
#include "sch_http.h"
#include "sch_conf.h"
#include "sch_framework.h"
#include "sch_metrics.h"
#include "sch_device.h"
#include "sch_shell_int.h"
#include "sch_usage.h"

/* The config file is capped: a Volcano configuration is a few hundred bytes. */
#define MAX_CONF_BYTES (1u << 20)

static int may_write(const sch_shell *sh) {
  return sh->opt.may_write ? sh->opt.may_write(sh->opt.ud) : 0;
}

/* The gate as a callback for the cache (its ud is the shell). */
static int shell_may_write(void *ud) {
  return may_write(ud);
}

static double ms_since(uint64_t t0) {
  return (double)(uv_hrtime() - t0) / 1e6;
}

/* ---- configuration ---- */

static void log_conf(const char *what, const sch_conf *conf) {
  char acts[256] = "";
  size_t off = 0;
  for (size_t i = 0; i < conf->nactions && off < sizeof(acts); i++)
    off += (size_t)snprintf(acts + off, sizeof(acts) - off, "%s%s", i ? ", " : "",
                            conf->actions[i]->name);
  size_t np = 0;
  for (size_t t = 0; t < conf->ntiers; t++)
    np += conf->tiers[t].nplugins;
  char skipped[256] = "";
  off = 0;
  for (size_t i = 0; i < conf->nskipped && off < sizeof(skipped); i++)
    off += (size_t)snprintf(skipped + off, sizeof(skipped) - off, "%s%s",
                            i ? ", " : "; not implemented, skipped: ", conf->skipped[i]);
  char plugins[256] = "";
  off = 0;
  for (size_t i = 0; i < conf->nskipped_plugins && off < sizeof(plugins); i++)
    off += (size_t)snprintf(plugins + off, sizeof(plugins) - off, "%s%s",
                            i ? ", " : " (not implemented, skipped: ", conf->skipped_plugins[i]);
  if (off && off < sizeof(plugins) - 1)
    snprintf(plugins + off, sizeof(plugins) - off, ")");
  KC_INFO("%s: actions \"%s\"%s, %zu tiers, %zu plugins%s", what, acts, skipped, conf->ntiers, np,
          plugins);
}

/* Reads and parses the file; on success replaces sh->conf. */
static int load_conf_file(sch_shell *sh, const char *path) {
  char *buf;
  size_t len;
  int rc = kc_file_read(path, MAX_CONF_BYTES, &buf, &len);
  if (rc == KC_ENOMEM)
    return rc;
  if (rc == KC_ETOOBIG) {
    KC_ERROR("scheduler configuration %s is larger than %u bytes; keeping the %s configuration",
             path, MAX_CONF_BYTES, sh->conf ? "previous" : "default");
    return rc;
  }
  if (rc) {
    KC_ERROR("scheduler configuration %s cannot be read (%s); keeping the %s configuration", path,
             strerror(errno), sh->conf ? "previous" : "default");
    return KC_EIO;
  }
  char err[512] = "";
  bool had = sh->conf != NULL;
  rc = sch_conf_reload(&sh->conf, buf, len, err, sizeof(err));
  free(buf);
  if (rc) {
    KC_ERROR("scheduler configuration %s is invalid (%s: %s); keeping the %s configuration", path,
             kc_strerror(rc), err, had ? "previous" : "default");
    return rc;
  }
  char what[600];
  snprintf(what, sizeof(what), "loaded scheduler configuration %s", path);
  log_conf(what, sh->conf);
  const char *cm = sch_device_config_name(sh->conf, NULL);
  if (sh->device_cm[0] && strcmp(cm, sh->device_cm) != 0)
    KC_WARN("deviceshare.KnownGeometriesCMName is now %s; the scheduler reads the ConfigMap %s "
            "it started with until it restarts (Volcano, too, reads it once)",
            cm, sh->device_cm);
  return 0;
}

/* Re-reads the file when it changed since the last look. */
static void check_conf(sch_shell *sh) {
  const char *path = sh->opt.scheduler_conf;
  if (path == NULL || path[0] == '\0')
    return;
  struct stat st;
  if (stat(path, &st) != 0) {
    if (sh->conf_seen || sh->conf == NULL)
      KC_WARN("scheduler configuration %s: %s; keeping the %s configuration", path, strerror(errno),
              sh->conf ? "current" : "default");
    sh->conf_seen = false;
    if (sh->opt.no_default_conf && sh->conf) {
      KC_ERROR("Failed to read scheduler config and default configuration fallback is disabled");
      if (sh->opt.on_fatal)
        sh->opt.on_fatal(sh->opt.ud);
    }
    return;
  }
  if (sh->conf_seen && st.st_mtim.tv_sec == sh->conf_mtime.tv_sec &&
      st.st_mtim.tv_nsec == sh->conf_mtime.tv_nsec && st.st_size == sh->conf_size &&
      st.st_ino == sh->conf_ino)
    return;
  bool first = !sh->conf_seen && sh->sessions == 0;
  sh->conf_seen = true;
  sh->conf_mtime = st.st_mtim;
  sh->conf_size = st.st_size;
  sh->conf_ino = st.st_ino;
  if (!first)
    KC_INFO("scheduler configuration %s changed; reloading", path);
  if (load_conf_file(sh, path) != 0 && sh->opt.no_default_conf && !first) {
    KC_ERROR("Invalid scheduler configuration and default configuration fallback is disabled");
    if (sh->opt.on_fatal)
      sh->opt.on_fatal(sh->opt.ud);
  }
}

/* The configuration at start: the file's, else Volcano's default (unless
 * --disable-default-scheduler-config, which makes a missing or bad file fatal). */
static int initial_conf(sch_shell *sh) {
  bool have_path = sh->opt.scheduler_conf && sh->opt.scheduler_conf[0];
  if (have_path)
    check_conf(sh);
  if (sh->conf == NULL && sh->opt.no_default_conf) {
    KC_ERROR("%s", have_path ? "Invalid scheduler configuration and default configuration "
                               "fallback is disabled"
                             : "No --scheduler-conf path provided and default configuration "
                               "fallback is disabled");
    return KC_EINVAL;
  }
  if (sh->conf == NULL) {
    int rc = sch_conf_default(&sh->conf);
    if (rc)
      return rc;
    log_conf("using the default scheduler configuration", sh->conf);
  }
  return 0;
}

/* ---- metrics ---- */

static void setup_metrics(sch_shell *sh) {
  kc_metrics *r = sh->metrics;
  if (r == NULL)
    return;
  const double *lat = sch_metrics_buckets_session, *act = sch_metrics_buckets_action;
  kc_metric *m;
  static const char *const result_l[] = {"result", NULL};
  static const char *const action_l[] = {"action", NULL};
  static const char *const queue_l[] = {"queue_name", NULL};
  if (kc_metrics_histogram(r, "volcano_e2e_scheduling_latency_milliseconds",
                           "Duration of a single scheduling session execution in milliseconds. "
                           "It covers the entire cycle from session open, action executions to "
                           "session close.",
                           NULL, lat, 20, &m) == 0)
    kc_metric_series(m, NULL, &sh->m_e2e);
  if (kc_metrics_histogram(r, "volcano_open_session_duration_milliseconds",
                           "Duration of opening a scheduling session in milliseconds, including "
                           "cache snapshot and session initialization.",
                           NULL, lat, 20, &m) == 0)
    kc_metric_series(m, NULL, &sh->m_open);
  kc_metrics_histogram(r, "volcano_action_scheduling_latency_milliseconds",
                       "Action scheduling latency in milliseconds", action_l, act, 20,
                       &sh->m_action);
  if (kc_metrics_counter(r, "volcano_schedule_attempts_total",
                         "Number of attempts to schedule pods, by the result. 'unschedulable' "
                         "means a pod could not be scheduled, while 'error' means an internal "
                         "scheduler problem.",
                         result_l, &m) == 0) {
    kc_metric_series(m, (const char *const[]){"scheduled"}, &sh->m_attempt_ok);
    kc_metric_series(m, (const char *const[]){"unschedulable"}, &sh->m_attempt_unsched);
    kc_metric_series(m, (const char *const[]){"error"}, &sh->m_attempt_err);
  }
  kc_metrics_gauge(r, "volcano_queue_allocated_milli_cpu", "Allocated CPU count for one queue",
                   queue_l, &sh->m_q_cpu);
  kc_metrics_gauge(r, "volcano_queue_allocated_memory_bytes", "Allocated memory for one queue",
                   queue_l, &sh->m_q_mem);
  static const char *const qres[3][2] = {
      {"volcano_queue_deserved_milli_cpu", "volcano_queue_deserved_memory_bytes"},
      {"volcano_queue_capacity_milli_cpu", "volcano_queue_capacity_memory_bytes"},
      {"volcano_queue_real_capacity_milli_cpu", "volcano_queue_real_capacity_memory_bytes"}};
  static const char *const qhelp[3] = {"Deserved", "Capacity", "Capacity"};
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 2; k++) {
      char help[96];
      snprintf(help, sizeof(help), "%s %s for one queue", qhelp[i], k ? "memory" : "CPU count");
      kc_metrics_gauge(r, qres[i][k], help, queue_l, &sh->m_q_res[i][k]);
    }
  static const char *const queue_res_l[] = {"queue_name", "resource", NULL};
  static const char *const qscalar[4] = {
      "volcano_queue_deserved_scalar_resources", "volcano_queue_capacity_scalar_resources",
      "volcano_queue_real_capacity_scalar_resources", "volcano_queue_allocated_scalar_resources"};
  static const char *const qscalar_help[4] = {
      "Deserved scalar resources for one queue", "Capacity scalar resources for one queue",
      "Capacity scalar resources for one queue", "Allocated scalar resources for one queue"};
  for (int i = 0; i < 4; i++)
    kc_metrics_gauge(r, qscalar[i], qscalar_help[i], queue_res_l, &sh->m_q_scalar[i]);
  if (kc_metrics_gauge(r, "volcano_pod_preemption_victims", "Number of selected preemption victims",
                       NULL, &m) == 0)
    kc_metric_series(m, NULL, &sh->m_preempt_victims);
  if (kc_metrics_counter(r, "volcano_total_preemption_attempts",
                         "Total preemption attempts in the cluster till now", NULL, &m) == 0)
    kc_metric_series(m, NULL, &sh->m_preempt_attempts);
  kc_metrics_counter(r, "volcano_eviction_transactions_total",
                     "Evictions the scheduler started, by the action that chose the victim",
                     action_l, &sh->m_evictions);
  int rc = sch_metrics_init(&sh->mx, r);
  if (rc < 0)
    KC_ERROR("cannot register the job and queue metrics: %s", kc_strerror(rc));
}

static void bind_done(int err, uint64_t latency_ns, int64_t created_s, void *ud) {
  sch_shell *sh = ud;
  sch_metrics_bound(&sh->mx, err, latency_ns, created_s, kc_clock_wall_ms());
}

/* ---- one cycle ---- */

static void timer_cb(uv_timer_t *t);

/* The first of task's annotations in res (sorted by task), or res->nannotations. */
static size_t first_annotation(const sch_result *res, int32_t task) {
  size_t lo = 0, hi = res->nannotations;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (res->annotations[mid].task < task)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* task's annotations (deviceshare) as the binder's patches, and the assignment the cache
 * assumes with the node. 0 or KC_ENOMEM; nothing to do without annotations. */
static int annotate_bind(sch_shell *sh, const sch_result *res, int32_t task, const char *key,
                         const char *node) {
  size_t i = res->nannotations ? first_annotation(res, task) : res->nannotations;
  if (i == res->nannotations || res->annotations[i].task != task)
    return sch_cache_assume(sh->cache, key, node);
  json_t *ann[2] = {NULL, NULL}; /* node, pod */
  const char *vgpu_ids = NULL, *gpu_index = NULL;
  int rc = 0;
  for (; rc == 0 && i < res->nannotations && res->annotations[i].task == task; i++) {
    const sch_annotation *a = &res->annotations[i];
    json_t **o = &ann[a->node ? 0 : 1];
    if (!*o && !(*o = json_object()))
      rc = KC_ENOMEM;
    if (rc == 0 && json_object_set_new(*o, a->key, json_string(a->value)) != 0)
      rc = KC_ENOMEM;
    if (!a->node && strcmp(a->key, "volcano.sh/vgpu-ids-new") == 0)
      vgpu_ids = a->value;
    if (!a->node && strcmp(a->key, "volcano.sh/gpu-index") == 0)
      gpu_index = a->value;
  }
  json_t *patch[2] = {NULL, NULL};
  for (int k = 0; rc == 0 && k < 2; k++)
    if (ann[k] && !(patch[k] = json_pack("{s:{s:O}}", "metadata", "annotations", ann[k])))
      rc = KC_ENOMEM;
  json_decref(ann[0]);
  json_decref(ann[1]);
  if (rc == 0)
    rc = sch_cache_assume_devices(sh->cache, key, node, vgpu_ids, gpu_index);
  if (rc == 0)
    return sch_binder_annotate(sh->binder, key, patch[0], patch[1]);
  json_decref(patch[0]);
  json_decref(patch[1]);
  return rc;
}

/* Queues the bind of task t (pod p) to node. A pod with volumes or ResourceClaims to write
 * first waits behind a gate of its own, which each writer holds until its writes are done
 * (sch_volumes.h, sch_claims.h); the others go behind their PodGroup's gate (group). */
static int bind_one(sch_shell *sh, const sch_snapshot *snap, int32_t t, const char *group,
                    const char *node, int64_t timeout_s) {
  const Kiln__Pod *p = snap->tasks[t].pod;
  if (!sch_volumes_needed(snap, t))
    return sch_binder_bind_in(sh->binder, group, p->namespace_, p->name, p->uid, node,
                              p->creation_time);
  char gate[640];
  snprintf(gate, sizeof(gate), "prebind:%s/%s#%llu", p->namespace_, p->name,
           (unsigned long long)++sh->prebinds);
  int rc = sch_binder_close_gate(sh->binder, gate);
  if (rc != 0)
    return rc < 0 ? rc : KC_EINVAL;
  int v = sch_volumes_bind(sh->volumes, gate, snap, t, timeout_s);
  int c = v < 0 ? v : sch_claims_bind(sh->client, sh->binder, gate, snap, t);
  if (v < 0 || c < 0) {
    sch_binder_drop(sh->binder, gate);
    return v < 0 ? v : c;
  }
  rc = sch_binder_bind_in(sh->binder, gate, p->namespace_, p->name, p->uid, node, p->creation_time);
  sch_binder_open(sh->binder, gate); /* our hold: the bind goes when the writers' are done */
  return rc;
}

/* Binds first: they are what users wait for. The session read a snapshot while the watch
 * went on: a pod deleted, recreated under its name or bound meanwhile is left alone (the
 * next session sees it as it is now). */
static void apply_binds(sch_shell *sh, const sch_snapshot *snap, const sch_result *res, size_t from,
                        size_t to) {
  char key[512];
  int64_t now_ms = kc_clock_wall_ms();
  int64_t timeout_s = sch_volumes_timeout(sh->conf);
  for (size_t i = from; i < to; i++) {
    const sch_task *t = &snap->tasks[res->binds[i].task];
    const Kiln__Pod *p = t->pod;
    const char *node = snap->nodes[res->binds[i].node].name;
    if (kc_store_key(key, sizeof(key), p->namespace_, p->name) != 0)
      continue;
    if (!sch_shell_still_pending(p, sch_cache_pod(sh->cache, key))) {
      sh->binds_stale++;
      KC_V(4, "not binding %s: it changed while the session ran", key);
      continue;
    }
    const char *group = t->job >= 0 ? snap->jobs[t->job].key : NULL;
    if (annotate_bind(sh, res, res->binds[i].task, key, node) != 0 ||
        bind_one(sh, snap, res->binds[i].task, group, node, timeout_s) != 0) {
      sch_cache_forget(sh->cache, key);
      KC_ERROR("cannot queue the bind of %s to %s: out of memory", key, node);
      continue;
    }
    sch_metrics_assumed(&sh->mx, p->creation_time, now_ms);
  }
}

/* A PodGroup that the API server shows Pending and whose pods this session binds: its
 * status (the phase the session decided, Inqueue or later) is written first and its binds
 * wait behind the binder's gate until the answer, so no client ever reads it Pending with
 * a pod of it bound. Volcano writes that status at session close while the binds are on
 * their way. It is the write a later session would have made anyway (held while the pods
 * settle), made earlier: the count of writes stays; a write that is not due (in flight,
 * failed and backing off) leaves the binds to go at once. */
static void gate_writes(sch_shell *sh, const sch_snapshot *snap, const sch_result *res) {
  if (res->nbinds == 0 || may_write(sh) != 0)
    return;
  bool *binds = calloc((size_t)snap->njobs + 1, sizeof(*binds));
  if (binds == NULL)
    return; /* out of memory: the binds go as they would have */
  for (size_t i = 0; i < res->nbinds; i++) {
    int32_t job = snap->tasks[res->binds[i].task].job;
    if (job >= 0)
      binds[job] = true;
  }
  uint64_t now_ms = uv_now(sh->loop);
  for (size_t i = 0; i < res->npod_groups; i++) {
    const sch_pg_status *ps = &res->pod_groups[i];
    const sch_job *j = &snap->jobs[ps->job];
    if (!binds[ps->job] || !sch_shell_pg_leads(j->pod_group, ps->phase))
      continue;
    /* Closed already: an earlier write of it is unanswered and these binds join its wait. */
    if (sch_binder_close_gate(sh->binder, j->key) != 0)
      continue;
    if (!sch_shell__write_pod_group(sh, snap, ps, NULL, NULL, now_ms, true))
      sch_binder_open(sh->binder, j->key);
  }
  free(binds);
}

/* ---- the session, off the loop thread ---- */

static void run_free(sch_run *r) {
  sch_result_free(r->res);
  sch_snapshot_free(r->snap);
  sch_cache_snap_close(&r->cs);
  free(r->usage_block);
  r->usage_block = NULL;
  free(r->action_ns);
  r->res = NULL;
  r->snap = NULL;
  r->action_ns = NULL;
}

/* Worker thread: nothing here touches the shell, the cache or the metrics. */
static void run_work(uv_work_t *req) {
  sch_run *r = req->data;
  uint64_t tw = uv_hrtime();
  r->rc = sch_cache_snap_finish(&r->cs);
  if (r->rc == 0)
    r->rc = sch_snapshot_new(&r->cs.msg, &r->so, &r->snap);
  sch_session *ssn = NULL;
  if (r->rc == 0)
    r->rc = sch_session_open(r->snap, r->conf, &r->sopt, &ssn);
  r->open_ns = uv_hrtime() - tw;
  if (r->rc == 0) {
    /* The configured actions in order, each timed (sch_session_run without the clock). */
    for (size_t i = 0; i < r->conf->nactions; i++) {
      const sch_action *a = r->conf->actions[i];
      uint64_t ta = uv_hrtime();
      int arc = a->execute(ssn);
      r->action_ns[i] = uv_hrtime() - ta + 1;
      if (arc < 0) {
        KC_ERROR("action %s failed: %s; the session ends here", a->name, kc_strerror(arc));
        break;
      }
    }
    r->rc = sch_session_close(ssn, &r->res);
  }
  r->work_ns = uv_hrtime() - tw;
  uv_mutex_lock(&r->mu);
  r->done = true;
  uv_cond_signal(&r->cv);
  uv_mutex_unlock(&r->mu);
}

static void apply_cb(uv_idle_t *h);

static void observe_run(sch_shell *sh, const sch_run *r) {
  if (sh->m_open)
    kc_histogram_observe(sh->m_open, (double)r->open_ns / 1e6);
  for (size_t i = 0; sh->m_action && i < r->conf->nactions; i++) {
    kc_series *s;
    if (r->action_ns[i] &&
        kc_metric_series(sh->m_action, (const char *const[]){r->conf->actions[i]->name}, &s) == 0)
      kc_histogram_observe(s, (double)(r->action_ns[i] - 1) / 1e6);
  }
}

static void run_destroy(sch_run *r) {
  run_free(r);
  uv_mutex_destroy(&r->mu);
  uv_cond_destroy(&r->cv);
  free(r);
}

/* The session is over, applied or not: the cache's hold ends and the run goes. */
static void run_end(sch_shell *sh, sch_run *r) {
  sh->run = NULL;
  sch_cache_unhold(sh->cache);
  sh->sessions++;
  run_destroy(r);
}

/* The result has been applied (or the session failed): the hold ends. */
static void run_finish(sch_shell *sh, sch_run *r) {
  if (r->rc == 0)
    /* Quiet when nothing happened: an idle scheduler runs a session every second. */
    KC_V(r->res->nbinds || r->res->nevicts ? 3 : 5,
         "session %llu: %zu binds, %zu evictions, %zu unschedulable tasks, %zu events in "
         "%.2f ms (on a worker %.2f ms; on the loop: snapshot %.2f ms, result %.2f ms of which "
         "statuses and events %.2f ms)",
         (unsigned long long)sh->sessions, r->res->nbinds, r->res->nevicts, r->res->nwhy,
         r->res->nevents, ms_since(r->t0), (double)r->work_ns / 1e6, (double)r->snap_ns / 1e6,
         (double)r->apply_ns / 1e6, (double)r->rest_ns / 1e6);
  if (sh->m_e2e)
    kc_histogram_observe(sh->m_e2e, ms_since(r->t0));
  if (r->rc) {
    KC_ERROR("scheduling cycle failed: %s", kc_strerror(r->rc));
    if (sh->m_attempt_err)
      kc_counter_inc(sh->m_attempt_err);
  }
  run_end(sh, r);
}

/* One slice of the binds per turn of the loop, so that 50,000 binds do not hold it; the
 * rest of the result once they are all queued. */
static void apply_step(sch_shell *sh, sch_run *r) {
  uint64_t t = uv_hrtime();
  if (r->next_bind == 0)
    gate_writes(sh, r->snap, r->res);
  size_t n = r->res->nbinds, to = sch_shell_slice_end(r->next_bind, n, SCH_SHELL_BIND_SLICE);
  apply_binds(sh, r->snap, r->res, r->next_bind, to);
  r->next_bind = to;
  if (to < n) {
    r->apply_ns += uv_hrtime() - t;
    /* Not a 0 ms timer: libuv would run it again in the same turn. */
    if (!uv_is_active((uv_handle_t *)&sh->apply))
      uv_idle_start(&sh->apply, apply_cb);
    return;
  }
  uv_idle_stop(&sh->apply);
  uint64_t tr = uv_hrtime();
  if (may_write(sh) == 0) /* the binder checks each bind itself */
    sch_shell__apply_rest(sh, r->snap, r->res);
  r->rest_ns = uv_hrtime() - tr;
  r->apply_ns += uv_hrtime() - t;
  run_finish(sh, r);
}

static void apply_cb(uv_idle_t *h) {
  sch_shell *sh = container_of(h, sch_shell, apply);
  if (sh->run && sh->run->applying)
    apply_step(sh, sh->run);
  else
    uv_idle_stop(h);
}

/* Loop thread: the worker is done; its result goes out. */
static void run_after(uv_work_t *req, int status) {
  sch_run *r = req->data;
  sch_shell *sh = r->sh;
  if (sh->closing) {
    /* sch_shell_free waited for the worker (or cancelled it) and released the rest. */
    sh->run = NULL;
    run_destroy(r);
    sch_shell__maybe_release(sh);
    return;
  }
  if (status != 0 && r->rc == 0)
    r->rc = kc_err_from_uv(status);
  if (r->rc) {
    run_finish(sh, r);
    return;
  }
  observe_run(sh, r);
  sh->carry = r->res->carry; /* the next session continues from this one */
  if (may_write(sh) != 0) {
    /* Leadership went while the session ran: its result is not ours to write. */
    KC_INFO("session %llu: no longer the leader; its result is dropped",
            (unsigned long long)sh->sessions);
    run_end(sh, r);
    return;
  }
  r->applying = true;
  apply_step(sh, r);
}

/* A new run over a snapshot taken now; NULL when out of memory. */
static sch_run *run_new(sch_shell *sh, int *rc) {
  sch_run *r = calloc(1, sizeof(*r));
  *rc = KC_ENOMEM;
  if (r == NULL)
    return NULL;
  r->action_ns = calloc(sh->conf->nactions + 1, sizeof(*r->action_ns));
  if (r->action_ns == NULL || uv_mutex_init(&r->mu) != 0)
    goto fail_actions;
  if (uv_cond_init(&r->cv) != 0)
    goto fail_mutex;
  r->req.data = r;
  r->sh = sh;
  r->conf = sh->conf;
  r->t0 = uv_hrtime();
  r->so = (sch_snapshot_options){sh->opt.scheduler_names, sh->opt.nscheduler_names,
                                 sh->opt.default_queue};
  r->sopt = (sch_session_options)SCH_SESSION_OPTIONS_DEFAULT;
  r->sopt.percentage_nodes_to_find = sh->opt.percentage_nodes_to_find;
  r->sopt.minimum_percentage_nodes_to_find = sh->opt.minimum_percentage_nodes_to_find;
  r->sopt.minimum_feasible_nodes = sh->opt.minimum_feasible_nodes;
  r->sopt.carry = sh->carry;
  r->sopt.http = &sch_shell_http; /* the extender plugin's calls block the worker, not the loop */
  if (sh->mx.reg) {
    r->sopt.clock_ns = kc_clock_mono_ns;
    r->sopt.stage_bounds = sch_metrics_buckets_stage;
    r->sopt.nstage_bounds = SCH_METRICS_STAGE_BUCKETS;
  }
  *rc = sch_cache_snapshot_deferred(sh->cache, &r->cs);
  if (*rc == 0 && (*rc = sch_usage_fill(sh->usage, &r->cs.msg, &r->usage_block)) != 0)
    sch_cache_snap_close(&r->cs);
  r->snap_ns = uv_hrtime() - r->t0;
  if (*rc == 0)
    return r;
  uv_cond_destroy(&r->cv);
fail_mutex:
  uv_mutex_destroy(&r->mu);
fail_actions:
  free(r->action_ns);
  free(r);
  return NULL;
}

int sch_shell_run_once(sch_shell *sh) {
  if (sh->run)
    return 0; /* one at a time: the next period comes after this one's result */
  if (!sch_cache_synced(sh->cache)) {
    if (!sh->logged_not_synced)
      KC_INFO("waiting for the cache to sync before scheduling");
    sh->logged_not_synced = true;
    return 0;
  }
  check_conf(sh);
  if (sch_usage_configure(sh->usage, &sh->conf->metrics) != 0)
    KC_ERROR("metrics: out of memory reading the metrics section");
  sch_cache_tick(sh->cache);
  if (may_write(sh) != 0)
    return 0; /* not the leader: only the leader schedules */
  sh->last_session_ms = uv_now(sh->loop);
  int rc;
  sch_run *r = run_new(sh, &rc);
  if (r == NULL) {
    KC_ERROR("scheduling cycle failed: %s", kc_strerror(rc));
    if (sh->m_attempt_err)
      kc_counter_inc(sh->m_attempt_err);
    return rc;
  }
  sch_cache_hold(sh->cache);
  sh->run = r;
  if (sh->opt.session_on_loop) {
    /* As before the worker: session and whole result in this one turn of the loop. */
    run_work(&r->req);
    if (r->rc == 0) {
      observe_run(sh, r);
      uint64_t t = uv_hrtime();
      gate_writes(sh, r->snap, r->res);
      apply_binds(sh, r->snap, r->res, 0, r->res->nbinds);
      sch_shell__apply_rest(sh, r->snap, r->res);
      r->apply_ns = uv_hrtime() - t;
    }
    run_finish(sh, r);
    return 0;
  }
  rc = uv_queue_work(sh->loop, &r->req, run_work, run_after);
  if (rc != 0) {
    /* No worker: run it here rather than not at all. */
    KC_WARN("cannot start a worker for the session (%s); running it on the loop", uv_strerror(rc));
    run_work(&r->req);
    run_after(&r->req, 0);
  }
  return 0;
}

/* One session; the next is a full period later unless new work comes first. */
static void session_now(sch_shell *sh) {
  uv_timer_stop(&sh->early);
  uv_timer_start(&sh->timer, timer_cb, sh->period_ms, sh->period_ms);
  sch_shell_run_once(sh);
}

static void timer_cb(uv_timer_t *t) {
  session_now(container_of(t, sch_shell, timer));
}

static void early_cb(uv_timer_t *t) {
  session_now(container_of(t, sch_shell, early));
}

/* The cache's hook: new work arms the early timer (armed at most once; one session at a time:
 * an early session due while one is in flight is left to the period). */
static void cache_changed(sch_cache_kind kind, const void *old_obj, const void *new_obj, void *ud) {
  sch_shell *sh = ud;
  if (sh->closing || sh->opt.early_session_ns <= 0 || uv_is_active((uv_handle_t *)&sh->early) ||
      !sch_shell_is_new_work(kind, old_obj, new_obj, sh->opt.scheduler_names,
                             sh->opt.nscheduler_names))
    return;
  uint64_t delay =
      sch_shell_early_delay(uv_now(sh->loop), sh->last_session_ms,
                            (uint64_t)(sh->opt.early_session_ns / 1000000), SCH_SHELL_MIN_GAP_MS);
  if (uv_is_active((uv_handle_t *)&sh->timer) && uv_timer_get_due_in(&sh->timer) <= delay)
    return; /* the period comes first anyway */
  uv_timer_start(&sh->early, early_cb, delay, 0);
}

/* A deleted pod or PodGroup: the event recorder forgets it (its uid never comes back), and
 * the status last written to a PodGroup goes (a PodGroup of the same name is a new object
 * with its own versions); without that every Job ever scheduled left both behind. */
static void cache_gone(sch_cache_kind kind, const char *key, const char *uid, void *ud) {
  sch_shell *sh = ud;
  kc_event_forget(sh->events, uid);
  if (kind == SCH_CACHE_PODGROUPS)
    sch_shell__forget_pod_group(sh, key);
}

/* ---- lifecycle ---- */

static void bad_pod(const char *ns, const char *name, const char *uid, const char *sn,
                    const char *err, void *ud) {
  sch_shell *sh = ud;
  bool ours = false;
  size_t n = sh->opt.nscheduler_names;
  for (size_t i = 0; i < n; i++)
    if (kc_str_eq(sn, sh->opt.scheduler_names[i]))
      ours = true;
  if (n == 0)
    ours = kc_str_eq(sn, "volcano");
  if (!ours || name == NULL || sh->events == NULL || may_write(sh) != 0)
    return;
  kc_object_ref o = kc_pod_ref(ns, name, uid);
  kc_event_record(sh->events, &o, KC_EVENT_WARNING, "FailedScheduling",
                  "the scheduler cannot read this pod, it is not scheduled: %s", err);
}

/* What the shell owns besides its handles: the binder, evictor, cache, configuration and
 * maps (on a failed start or at the end). */
static void free_parts(sch_shell *sh) {
  sch_usage_free(sh->usage);
  sh->usage = NULL;
  sch_volumes_free(sh->volumes);
  sh->volumes = NULL;
  sch_binder_free(sh->binder);
  sh->binder = NULL;
  sch_evictor_free(sh->evictor);
  sh->evictor = NULL;
  sch_cache_free(sh->cache);
  sh->cache = NULL;
  sch_conf_free(sh->conf);
  sh->conf = NULL;
  sch_shell__status_close(sh);
  sch_metrics_close(&sh->mx);
}

int sch_shell_new(uv_loop_t *loop, kc_client *c, kc_event_recorder *events, kc_metrics *metrics,
                  const sch_shell_options *o, sch_shell **out) {
  *out = NULL;
  sch_shell *sh = calloc(1, sizeof(*sh));
  if (sh == NULL)
    return KC_ENOMEM;
  sh->loop = loop;
  sh->client = c;
  sh->events = events;
  sh->metrics = metrics;
  sh->opt = *o;
  sh->carry = (sch_carry)SCH_CARRY_INIT;
  if (sh->opt.schedule_period_ns <= 0)
    sh->opt.schedule_period_ns = 1000000000LL;
  if (sh->opt.default_queue == NULL)
    sh->opt.default_queue = "default";
  sh->period_ms = (uint64_t)(sh->opt.schedule_period_ns / 1000000);
  if (sh->period_ms == 0)
    sh->period_ms = 1;
  sch_shell__status_init(sh);
  int rc = sch_metrics_init(&sh->mx, NULL); /* inert until setup_metrics; 0 without a registry */
  if (rc == 0)
    rc = initial_conf(sh);
  if (rc)
    goto fail;
  sch_cache_options co = {.node_selector = sh->opt.node_selector,
                          .nnode_selector = sh->opt.nnode_selector,
                          .default_queue = sh->opt.default_queue,
                          .may_write = shell_may_write,
                          .ud = sh,
                          .protobuf = sh->opt.protobuf,
                          .on_bad_pod = bad_pod,
                          .on_change = cache_changed,
                          .on_gone = cache_gone,
                          .conf = sh->conf};
  snprintf(sh->device_cm, sizeof(sh->device_cm), "%s", sch_device_config_name(sh->conf, NULL));
  rc = sch_cache_new(c, &co, &sh->cache);
  if (rc == 0)
    rc = sch_usage_new(loop, sch_cache_store(sh->cache, SCH_CACHE_NODES), &sh->usage);
  if (rc)
    goto fail;
  sch_binder_options bo = {0};
  bo.client = c;
  bo.cache = sh->cache;
  bo.events = events;
  bo.may_write = o->may_write;
  bo.ud = o->ud;
  bo.delay_ms = o->bind_delay_ms;
  bo.protobuf = o->protobuf;
  bo.on_done = bind_done;
  bo.done_ud = sh;
  rc = sch_binder_new(loop, &bo, &sh->binder);
  if (rc == 0)
    rc = sch_volumes_new(loop, c, sh->binder, sh->cache, &sh->volumes);
  if (rc == 0)
    rc = sch_evictor_new(c, events, sh->cache, &sh->evictor);
  if (rc)
    goto fail;
  rc = KC_EIO; /* the handles open in order; sch_shell_free closes those that are */
  if (uv_timer_init(loop, &sh->timer) != 0)
    goto fail;
  sh->timers_open = 1;
  if (uv_timer_init(loop, &sh->early) != 0)
    goto fail;
  sh->timers_open = 2;
  if (uv_idle_init(loop, &sh->apply) != 0)
    goto fail;
  sh->timers_open = 3;
  setup_metrics(sh);
  *out = sh;
  return 0;
fail:
  sch_shell_free(sh);
  return rc;
}

int sch_shell_start(sch_shell *sh) {
  int rc = sch_cache_start(sh->cache);
  if (rc)
    return rc;
  uv_timer_start(&sh->timer, timer_cb, sh->period_ms, sh->period_ms);
  return 0;
}

static void timer_closed(uv_handle_t *h) {
  sch_shell *sh = h->data;
  sh->timers_open--;
  sch_shell__maybe_release(sh);
}

/* A session in flight still reads the cache's objects and the configuration: it is
 * cancelled if it has not started, else waited for (sessions take well under a second);
 * its result is dropped when the loop calls back. */
static void stop_run(sch_shell *sh) {
  sch_run *r = sh->run;
  if (r && r->applying) {
    /* Back from the worker, part-way through its result: the rest is dropped. */
    sh->run = NULL;
    run_destroy(r);
    return;
  }
  if (r == NULL || uv_cancel((uv_req_t *)&r->req) == 0)
    return;
  uv_mutex_lock(&r->mu);
  while (!r->done)
    uv_cond_wait(&r->cv, &r->mu);
  uv_mutex_unlock(&r->mu);
}

void sch_shell_free(sch_shell *sh) {
  if (sh == NULL)
    return;
  sh->closing = true;
  stop_run(sh);
  free_parts(sh);
  uv_handle_t *handles[] = {(uv_handle_t *)&sh->timer, (uv_handle_t *)&sh->early,
                            (uv_handle_t *)&sh->apply}; /* in the order sch_shell_new opens them */
  int open = sh->timers_open;
  if (open == 0) {
    sch_shell__maybe_release(sh);
    return;
  }
  for (int i = 0; i < open; i++) {
    handles[i]->data = sh;
    uv_close(handles[i], timer_closed);
  }
}

int sch_shell_dump(sch_shell *sh, const char *path) {
  if (path == NULL)
    path = sh->opt.dump_path;
  if (path == NULL)
    return KC_EINVAL;
  return sch_cache_dump(sh->cache, path);
}

int sch_shell_ready(void *ud, char *reason, size_t cap) {
  sch_shell *sh = ud;
  if (sch_cache_synced(sh->cache))
    return 0;
  snprintf(reason, cap, "caches not synced");
  return 1;
}

size_t sch_shell_binds_pending(const sch_shell *sh) {
  sch_binder_stats st;
  sch_binder_get_stats(sh->binder, &st);
  return st.in_flight + st.waiting;
}

sch_cache *sch_shell_cache(sch_shell *sh) {
  return sh->cache;
}

uint64_t sch_shell_sessions(const sch_shell *sh) {
  return sh->sessions;
}

bool sch_shell_session_running(const sch_shell *sh) {
  return sh->run != NULL;
}
