/* The scheduler's job, queue, plugin and stage metrics (see sch_metrics.h). */
#include "sch_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"

/* One job's series: the ones named by its namespace and name alone are kept (they are its
 * own); job_retry_counts is named by the job's name only (Volcano's job_id), shared by jobs
 * of that name in other namespaces, so it is looked up when it moves. */
typedef struct job_series {
  char *ns, *name, *queue;
  kc_series *share;           /* job_share, NULL until drf reports one */
  kc_series *duration, *last; /* e2e_job_scheduling_*, NULL until a bind */
} job_series;

static void job_series_free(void *p) {
  job_series *j = p;
  if (!j)
    return;
  free(j->ns);
  free(j->name);
  free(j->queue);
  free(j);
}

const double sch_metrics_buckets_session[20] = {1,
                                                1.5656065579430964,
                                                2.45112389427443,
                                                3.8374956432070686,
                                                6.008008345083047,
                                                9.406177265238869,
                                                14.726372811633231,
                                                23.055705848607904,
                                                36.09616427458753,
                                                56.51239150488555,
                                                88.47617074509654,
                                                138.51887314021627,
                                                216.86605618721043,
                                                339.5269197619527,
                                                531.5655721775325,
                                                832.2225457779193,
                                                1302.933075338009,
                                                2039.8805673101535,
                                                3193.65039360146,
                                                4999.999999999997};

const double sch_metrics_buckets_action[20] = {1,
                                               1.4918955578206108,
                                               2.2257523554448713,
                                               3.3205900518969647,
                                               4.953973547768393,
                                               7.390811129476477,
                                               11.026318292757086,
                                               16.45011528008044,
                                               24.541853911988955,
                                               36.6138828319787,
                                               54.624089151593346,
                                               81.49343595525913,
                                               121.57969509318953,
                                               181.38420703071378,
                                               270.60629272793585,
                                               403.71632603911144,
                                               602.3025934374076,
                                               898.5725636131018,
                                               1340.5764160338647,
                                               1999.9999999999977};

const double sch_metrics_buckets_job[30] = {100,
                                            127.6964028795552,
                                            163.06371308377672,
                                            208.22649600982146,
                                            265.8977452466826,
                                            339.54185601785707,
                                            433.582736405282,
                                            553.6695578962887,
                                            707.0161092726969,
                                            902.8341393202192,
                                            1152.886719880512,
                                            1472.1948705635073,
                                            1879.9398930869224,
                                            2400.6156197697555,
                                            3065.4997934107178,
                                            3914.532966465682,
                                            4998.717787711021,
                                            6383.182805007454,
                                            8151.09483122081,
                                            10408.654894770323,
                                            13291.477888768455,
                                            16972.739153488765,
                                            21673.57736913502,
                                            27676.378675702752,
                                            35341.74001619669,
                                            45130.13071572749,
                                            57629.55353882527,
                                            73590.86686462727,
                                            93972.88983401153,
                                            119999.99999999991};

const double sch_metrics_buckets_plugin[15] = {0.1,
                                               0.16378937069540644,
                                               0.2682695795279726,
                                               0.4393970560760792,
                                               0.7196856730011522,
                                               1.1787686347935875,
                                               1.9306977288832508,
                                               3.1622776601683804,
                                               5.1794746792312125,
                                               8.483428982440724,
                                               13.894954943731381,
                                               22.758459260747898,
                                               37.27593720314942,
                                               61.054022965853314,
                                               100.00000000000006};

const double sch_metrics_buckets_task[30] = {50,
                                             63.8482014397776,
                                             81.53185654188836,
                                             104.11324800491073,
                                             132.9488726233413,
                                             169.77092800892854,
                                             216.791368202641,
                                             276.83477894814433,
                                             353.50805463634845,
                                             451.4170696601096,
                                             576.443359940256,
                                             736.0974352817536,
                                             939.9699465434612,
                                             1200.3078098848778,
                                             1532.7498967053589,
                                             1957.266483232841,
                                             2499.3588938555104,
                                             3191.591402503727,
                                             4075.547415610405,
                                             5204.327447385162,
                                             6645.738944384228,
                                             8486.369576744382,
                                             10836.78868456751,
                                             13838.189337851376,
                                             17670.870008098344,
                                             22565.065357863747,
                                             28814.776769412634,
                                             36795.433432313635,
                                             46986.44491700576,
                                             59999.999999999956};

const double sch_metrics_buckets_stage[20] = {0.1,
                                              0.15656065579430967,
                                              0.245112389427443,
                                              0.3837495643207069,
                                              0.6008008345083047,
                                              0.9406177265238869,
                                              1.4726372811633233,
                                              2.3055705848607904,
                                              3.609616427458753,
                                              5.651239150488555,
                                              8.847617074509655,
                                              13.851887314021628,
                                              21.686605618721046,
                                              33.95269197619527,
                                              53.15655721775326,
                                              83.22225457779194,
                                              130.2933075338009,
                                              203.98805673101538,
                                              319.36503936014606,
                                              499.9999999999998};

static int init_jobs(sch_metrics *m, kc_metrics *r) {
  static const char *const e2e_l[] = {"job_name", "queue", "job_namespace", NULL};
  static const char *const share_l[] = {"job_ns", "job_id", NULL};
  static const char *const id_l[] = {"job_id", NULL};
  kc_metric *f;
  int rc;
  if ((rc = kc_metrics_histogram(r, "volcano_e2e_job_scheduling_latency_milliseconds",
                                 "End-to-end job scheduling latency in milliseconds (histogram of "
                                 "per-job duration from creation to last task assumed)",
                                 NULL, sch_metrics_buckets_job, 30, &f)) < 0 ||
      (rc = kc_metric_series(f, NULL, &m->job_latency)) < 0 ||
      (rc = kc_metrics_gauge(r, "volcano_e2e_job_scheduling_duration",
                             "Per-job duration from job creation to last task assumed in "
                             "scheduler cache, in milliseconds",
                             e2e_l, &m->job_duration)) < 0 ||
      (rc = kc_metrics_gauge(r, "volcano_e2e_job_scheduling_start_time",
                             "E2E job scheduling start time", e2e_l, &m->job_start)) < 0 ||
      (rc = kc_metrics_gauge(r, "volcano_e2e_job_scheduling_last_time",
                             "E2E job scheduling last time", e2e_l, &m->job_last)) < 0 ||
      (rc = kc_metrics_gauge(r, "volcano_job_share", "Share for one job", share_l, &m->job_share)) <
          0 ||
      (rc = kc_metrics_counter(r, "volcano_job_retry_counts", "Number of retry counts for one job",
                               id_l, &m->job_retry)) < 0 ||
      (rc = kc_metrics_gauge(r, "volcano_unschedule_task_count",
                             "Number of tasks could not be scheduled", id_l, &m->unsched_tasks)) <
          0 ||
      (rc = kc_metrics_gauge(r, "volcano_unschedule_job_count",
                             "Number of jobs could not be scheduled", NULL, &f)) < 0 ||
      (rc = kc_metric_series(f, NULL, &m->unsched_jobs)) < 0)
    return rc;
  return 0;
}

static int init_queues(sch_metrics *m, kc_metrics *r) {
  static const char *const q_l[] = {"queue_name", NULL};
  static const char *const qr_l[] = {"queue_name", "resource", NULL};
  static const char *const kind[2] = {"request", "inqueue"};
  static const char *const kind_help[2] = {"Request", "Inqueue"};
  kc_metric **fam[2] = {m->q_request, m->q_inqueue};
  int rc;
  for (int k = 0; k < 2; k++) {
    char name[96], help[96];
    snprintf(name, sizeof(name), "volcano_queue_%s_milli_cpu", kind[k]);
    snprintf(help, sizeof(help), "%s CPU count for one queue", kind_help[k]);
    if ((rc = kc_metrics_gauge(r, name, help, q_l, &fam[k][0])) < 0)
      return rc;
    snprintf(name, sizeof(name), "volcano_queue_%s_memory_bytes", kind[k]);
    snprintf(help, sizeof(help), "%s memory for one queue", kind_help[k]);
    if ((rc = kc_metrics_gauge(r, name, help, q_l, &fam[k][1])) < 0)
      return rc;
    snprintf(name, sizeof(name), "volcano_queue_%s_scalar_resources", kind[k]);
    snprintf(help, sizeof(help), "%s scalar resources for one queue", kind_help[k]);
    if ((rc = kc_metrics_gauge(r, name, help, qr_l, &fam[k][2])) < 0)
      return rc;
  }
  if ((rc = kc_metrics_gauge(r, "volcano_queue_share", "Share for one queue", q_l, &m->q_share)) <
          0 ||
      (rc = kc_metrics_gauge(r, "volcano_queue_weight", "Weight for one queue", q_l,
                             &m->q_weight)) < 0 ||
      (rc = kc_metrics_gauge(r, "volcano_queue_overused", "If one queue is overused", q_l,
                             &m->q_overused)) < 0)
    return rc;
  return 0;
}

/* Registered as Volcano registers them; their series come only from what Kiln does not do
 * (drf's namespace order, kube-scheduler's goroutine accounting), as in Volcano's release. */
static int init_unfilled(kc_metrics *r) {
  static const char *const ns_l[] = {"namespace_name", NULL};
  static const char *const op_l[] = {"operation", NULL};
  kc_metric *f;
  int rc;
  if ((rc = kc_metrics_gauge(r, "volcano_namespace_share", "Share for one namespace", ns_l, &f)) <
          0 ||
      (rc = kc_metrics_gauge(r, "volcano_namespace_weight", "Weight for one namespace", ns_l, &f)) <
          0 ||
      (rc = kc_metrics_gauge(r, "volcano_namespace_weighted_share",
                             "Weighted share for one namespace", ns_l, &f)) < 0 ||
      (rc = kc_metrics_gauge(r, "volcano_goroutines",
                             "Number of running goroutines split by the work they do such as "
                             "binding.",
                             op_l, &f)) < 0)
    return rc;
  return 0;
}

static int init_timings(sch_metrics *m, kc_metrics *r) {
  static const char *const plugin_l[] = {"plugin", "OnSession", NULL};
  static const char *const stage_l[] = {"stage", NULL};
  static const double reclaim_b[] = {0, 1, 2, 5, 10, 20, 50};
  kc_metric *f;
  int rc;
  if ((rc = kc_metrics_histogram(r, "volcano_plugin_scheduling_latency_milliseconds",
                                 "Plugin scheduling latency in milliseconds", plugin_l,
                                 sch_metrics_buckets_plugin, 15, &m->plugin)) < 0 ||
      (rc = kc_metrics_histogram(
           r, "volcano_task_scheduling_latency_milliseconds",
           "Task scheduling latency from creation to various stages in milliseconds", stage_l,
           sch_metrics_buckets_task, 30, &m->task_latency)) < 0 ||
      (rc = kc_metrics_histogram(r, "volcano_scheduling_stage_duration_milliseconds",
                                 "Duration of per-task scheduling stages (Predicate, Scoring, "
                                 "PreBind, Bind) in milliseconds",
                                 stage_l, sch_metrics_buckets_stage, SCH_METRICS_STAGE_BUCKETS,
                                 &m->stage)) < 0 ||
      (rc = kc_metrics_histogram(
           r, "volcano_pod_reclaim_victims",
           "Distribution of reclaim victims actually evicted per successful task reclaim", NULL,
           reclaim_b, sizeof(reclaim_b) / sizeof(reclaim_b[0]), &f)) < 0 ||
      (rc = kc_metric_series(f, NULL, &m->reclaim_victims)) < 0 ||
      (rc = kc_metrics_counter(r, "volcano_total_reclaim_attempts",
                               "Total task-level reclaim attempts by this scheduler instance "
                               "since start",
                               NULL, &f)) < 0 ||
      (rc = kc_metric_series(f, NULL, &m->reclaim_attempts)) < 0)
    return rc;
  return 0;
}

int sch_metrics_init(sch_metrics *m, kc_metrics *reg) {
  memset(m, 0, sizeof(*m));
  kc_strmap_init(&m->jobs, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&m->queues, KC_STRMAP_COPY_KEYS);
  if (reg == NULL)
    return 0;
  int rc;
  if ((rc = init_jobs(m, reg)) < 0 || (rc = init_queues(m, reg)) < 0 ||
      (rc = init_unfilled(reg)) < 0 || (rc = init_timings(m, reg)) < 0)
    return rc;
  m->reg = reg;
  return 0;
}

void sch_metrics_close(sch_metrics *m) {
  kc_strmap_close(&m->jobs, job_series_free);
  kc_strmap_close(&m->queues, NULL);
}

/* ---- per session ---- */

static void observe_named(kc_metric *f, const char *const *labels, double ms) {
  kc_series *s;
  if (kc_metric_series(f, labels, &s) == 0)
    kc_histogram_observe(s, ms);
}

static void timings(sch_metrics *m, const sch_result *res) {
  for (size_t i = 0; i < res->nplugin_times; i++) {
    const sch_plugin_time *pt = &res->plugin_times[i];
    if (!pt->plugin || !pt->plugin[0])
      continue;
    observe_named(m->plugin, (const char *const[]){pt->plugin, "OnSessionOpen"},
                  (double)pt->open_ns / 1e6);
    observe_named(m->plugin, (const char *const[]){pt->plugin, "OnSessionClose"},
                  (double)pt->close_ns / 1e6);
  }
  static const char *const stage_names[SCH_STAGE__COUNT] = {"Predicate", "Scoring"};
  for (int st = 0; st < SCH_STAGE__COUNT; st++) {
    const sch_hist *h = &res->stages[st];
    kc_series *s;
    if (h->n && kc_metric_series(m->stage, (const char *const[]){stage_names[st]}, &s) == 0)
      (void)kc_histogram_merge(s, h->counts, SCH_METRICS_STAGE_BUCKETS + 1, h->n, h->sum);
  }
}

static job_series *job_of(sch_metrics *m, const sch_snapshot *snap, const sch_job *j) {
  job_series *e = kc_strmap_get(&m->jobs, j->key);
  if (e)
    return e;
  e = calloc(1, sizeof(*e));
  const char *queue = j->queue >= 0 ? snap->queues[j->queue].name : "";
  if (!e || !(e->ns = strdup(j->namespace ? j->namespace : "")) ||
      !(e->name = strdup(j->name ? j->name : "")) || !(e->queue = strdup(queue)) ||
      kc_strmap_put(&m->jobs, j->key, e, NULL) < 0) {
    job_series_free(e);
    return NULL;
  }
  return e;
}

/* Volcano's gang sets, at close, every job's missing tasks (0 when ready) and counts a retry
 * of each job not ready; the job count is of those. Both are named by the job's name alone. */
static void gang_values(sch_metrics *m, const sch_snapshot *snap) {
  int64_t unready_jobs = 0;
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    const sch_job *j = &snap->jobs[ji];
    kc_series *s;
    if (j->unready < 0 || !j->name || !job_of(m, snap, j))
      continue; /* job_of: its series go with it */
    if (j->unready > 0)
      unready_jobs++;
    if (kc_metric_series(m->unsched_tasks, (const char *const[]){j->name}, &s) == 0)
      kc_gauge_set(s, (double)j->unready);
    if (j->retried && kc_metric_series(m->job_retry, (const char *const[]){j->name}, &s) == 0)
      kc_counter_inc(s);
  }
  kc_gauge_set(m->unsched_jobs, (double)unready_jobs);
}

static void job_values(sch_metrics *m, const sch_snapshot *snap) {
  gang_values(m, snap);
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    const sch_job *j = &snap->jobs[ji];
    if (!j->has_share)
      continue;
    job_series *e = job_of(m, snap, j);
    if (e && !e->share &&
        kc_metric_series(m->job_share, (const char *const[]){e->ns, e->name}, &e->share) < 0)
      e->share = NULL;
    if (e && e->share)
      kc_gauge_set(e->share, j->share);
  }
}

/* Volcano sets these as each task of a job is allocated: the duration since the job's
 * creation (its gauge and the histogram) and the time. Kiln's allocations are the binds. */
static void job_binds(sch_metrics *m, const sch_snapshot *snap, const sch_result *res,
                      int64_t now_ms) {
  for (size_t i = 0; i < res->nbinds; i++) {
    int32_t ji = snap->tasks[res->binds[i].task].job;
    if (ji < 0)
      continue;
    const sch_job *j = &snap->jobs[ji];
    double ms = j->creation_time > 0 ? (double)(now_ms - j->creation_time * 1000) : 0;
    if (ms < 0)
      ms = 0;
    kc_histogram_observe(m->job_latency, ms);
    job_series *e = job_of(m, snap, j);
    if (!e)
      continue;
    const char *const l[] = {e->name, e->queue, e->ns};
    if (!e->duration && kc_metric_series(m->job_duration, l, &e->duration) < 0)
      e->duration = NULL;
    if (!e->last && kc_metric_series(m->job_last, l, &e->last) < 0)
      e->last = NULL;
    if (e->duration)
      kc_gauge_set(e->duration, ms);
    if (e->last)
      kc_gauge_set(e->last, (double)(now_ms / 1000));
  }
}

/* Volcano's DeleteJobMetrics for the jobs that left. */
static void drop_job(sch_metrics *m, job_series *e) {
  const char *const e2e[] = {e->name, e->queue, e->ns};
  kc_metric_remove(m->job_duration, e2e);
  kc_metric_remove(m->job_start, e2e);
  kc_metric_remove(m->job_last, e2e);
  kc_metric_remove(m->job_share, (const char *const[]){e->ns, e->name});
  kc_metric_remove(m->job_retry, (const char *const[]){e->name});
  kc_metric_remove(m->unsched_tasks, (const char *const[]){e->name});
}

static void drop_gone(sch_metrics *m, const sch_snapshot *snap) {
  size_t n = kc_strmap_len(&m->jobs), k = 0, pos = 0;
  if (n == 0)
    return;
  const char **gone = malloc(n * sizeof(*gone));
  if (!gone)
    return; /* next session */
  kc_strmap_slot *sl;
  while ((sl = kc_strmap_next(&m->jobs, &pos)))
    if (sch_snapshot_job(snap, sl->key) < 0)
      gone[k++] = sl->key;
  for (size_t i = 0; i < k; i++) {
    void *old = NULL;
    char *key = strdup(gone[i]);
    if (key && kc_strmap_del(&m->jobs, key, &old) == 0) {
      drop_job(m, old);
      job_series_free(old);
    }
    free(key);
  }
  free(gone);
}

static void set_named(kc_metric *f, const char *q, double v) {
  kc_series *s;
  if (kc_metric_series(f, (const char *const[]){q}, &s) == 0)
    kc_gauge_set(s, v);
}

static void queue_resources(kc_metric *const f[3], const sch_snapshot *snap, const sch_queue *q,
                            const sch_resource *r) {
  set_named(f[0], q->name, (double)r->milli_cpu);
  set_named(f[1], q->name, (double)r->memory);
  for (int k = 0; k < snap->nscalars; k++) {
    kc_series *s;
    if (r->scalar[k] > 0 &&
        kc_metric_series(f[2], (const char *const[]){q->name, snap->scalar_names[k]}, &s) == 0)
      kc_gauge_set(s, (double)r->scalar[k]);
  }
}

static void queue_values(sch_metrics *m, const sch_snapshot *snap) {
  for (int32_t i = 0; i < snap->nqueues; i++) {
    const sch_queue *q = &snap->queues[i];
    if (q->has_share) {
      set_named(m->q_share, q->name, q->share);
      queue_resources(m->q_request, snap, q, &q->request);
      queue_resources(m->q_inqueue, snap, q, &q->inqueue);
    }
    if (q->has_weight)
      set_named(m->q_weight, q->name, (double)q->weight);
    if (q->overused >= 0)
      set_named(m->q_overused, q->name, q->overused ? 1 : 0);
  }
}

/* Volcano's DeleteQueueMetrics: a queue gone takes its series with it, in every queue family
 * of the registry (the shell's allocated, deserved and capacity ones too). */
static void drop_queue(sch_metrics *m, const char *name) {
  static const char *const kinds[] = {"allocated", "request",  "deserved",
                                      "inqueue",   "capacity", "real_capacity"};
  static const char *const dims[] = {"milli_cpu", "memory_bytes", "scalar_resources"};
  static const char *const single[] = {"share", "weight", "overused"};
  char fam[96];
  for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
    for (size_t d = 0; d < sizeof(dims) / sizeof(dims[0]); d++) {
      snprintf(fam, sizeof(fam), "volcano_queue_%s_%s", kinds[k], dims[d]);
      kc_metric *f = kc_metrics_find(m->reg, fam);
      if (f)
        kc_metric_remove_matching(f, "queue_name", name);
    }
  for (size_t i = 0; i < sizeof(single) / sizeof(single[0]); i++) {
    snprintf(fam, sizeof(fam), "volcano_queue_%s", single[i]);
    kc_metric *f = kc_metrics_find(m->reg, fam);
    if (f)
      kc_metric_remove_matching(f, "queue_name", name);
  }
}

static void queues_gone(sch_metrics *m, const sch_snapshot *snap) {
  for (int32_t i = 0; i < snap->nqueues; i++)
    if (!kc_strmap_has(&m->queues, snap->queues[i].name) &&
        kc_strmap_put(&m->queues, snap->queues[i].name, NULL, NULL) < 0)
      return; /* out of memory: tried again next session */
  size_t n = kc_strmap_len(&m->queues), k = 0, pos = 0;
  char **gone = n ? calloc(n, sizeof(*gone)) : NULL;
  if (!gone)
    return;
  kc_strmap_slot *sl;
  while ((sl = kc_strmap_next(&m->queues, &pos)))
    if (sch_snapshot_queue(snap, sl->key) < 0 && (gone[k] = strdup(sl->key)))
      k++;
  for (size_t i = 0; i < k; i++) {
    drop_queue(m, gone[i]);
    kc_strmap_del(&m->queues, gone[i], NULL);
    free(gone[i]);
  }
  free(gone);
}

void sch_metrics_session(sch_metrics *m, const sch_snapshot *snap, const sch_result *res,
                         int64_t now_ms) {
  if (!m->reg || !snap || !res)
    return;
  timings(m, res);
  kc_counter_add(m->reclaim_attempts, (double)res->reclaim_attempts);
  for (size_t i = 0; i < res->nreclaimed; i++)
    kc_histogram_observe(m->reclaim_victims, (double)res->reclaim_victims[i]);
  job_values(m, snap);
  job_binds(m, snap, res, now_ms);
  queue_values(m, snap);
  drop_gone(m, snap);
  queues_gone(m, snap);
}

void sch_metrics_assumed(sch_metrics *m, int64_t created_s, int64_t now_ms) {
  if (!m->reg || created_s <= 0)
    return;
  if (!m->assumed &&
      kc_metric_series(m->task_latency, (const char *const[]){"Assumed"}, &m->assumed) < 0)
    m->assumed = NULL;
  double ms = (double)(now_ms - created_s * 1000);
  if (m->assumed)
    kc_histogram_observe(m->assumed, ms > 0 ? ms : 0);
}

void sch_metrics_bound(sch_metrics *m, int err, uint64_t latency_ns, int64_t created_s,
                       int64_t now_ms) {
  if (!m->reg)
    return;
  /* Kept: a bind costs no lookup. */
  if (!m->bind_stage &&
      kc_metric_series(m->stage, (const char *const[]){"Bind"}, &m->bind_stage) < 0)
    m->bind_stage = NULL;
  if (!m->bound && kc_metric_series(m->task_latency, (const char *const[]){"Bound"}, &m->bound) < 0)
    m->bound = NULL;
  if (m->bind_stage)
    kc_histogram_observe(m->bind_stage, (double)latency_ns / 1e6);
  if (err == 0 && created_s > 0 && m->bound) {
    double ms = (double)(now_ms - created_s * 1000);
    kc_histogram_observe(m->bound, ms > 0 ? ms : 0);
  }
}
