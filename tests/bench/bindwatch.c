/* bindwatch: measures binding throughput the way kube-scheduler's scheduler_perf does, from
 * outside any scheduler, so Kiln, kube-scheduler and the ceiling client are measured alike.
 *
 *   bindwatch [--kubeconfig F] --namespace NS --count N [--label-selector S]
 *             [--job-label KEY] [--ready-file F] [--timeout SECONDS]
 *
 * It LISTs then WATCHes pods (kc_http streaming; one HTTP/2 stream) and notes, on its own
 * monotonic clock, when each pod was first seen and when it was first seen with
 * spec.nodeName set ("scheduled" in scheduler_perf's and CL2's sense: the binding was
 * stored). The clock starts when the watch is open (scheduler_perf starts its collector
 * before creating the measured pods; the bench creates them after --ready-file appears) and
 * stops when N pods are bound.
 *
 * Throughput samples follow scheduler_perf's throughputCollector: a 1 s ticker; ticks before
 * the first bound pod are ignored; the first tick with a bound pod is skipped (it becomes t0,
 * since sampling and creation start at different times); a tick with no new pod is merged
 * into the next non-empty one, whose rate (new pods / actual elapsed time) is then recorded
 * once per merged tick; the partial interval after the last tick is not sampled. The
 * SchedulingThroughput Average is the mean of the samples, percentiles are nearest-rank.
 *
 * Also reported: makespan (first pod seen -> last pod bound) and N / makespan; per-pod
 * seen -> bound latency; with --job-label, per-job latency from the job's first pod seen to
 * its last pod bound (the job is the label's value). Prints one JSON object on stdout; exit
 * 1 when the timeout fired before N pods were bound.
 *
 * For clocks that start outside bindwatch (a Job's creation, the first Job created), the JSON
 * also carries t0_unix, the wall-clock time of the clock's start, so that t0_unix + an offset
 * is a CLOCK_REALTIME instant: first_seen_s / last_seen_s (the first and last pod seen, whose
 * span gives the rate pods were created) and, with --job-label, each job's first pod seen and
 * last pod bound (jobs.by_job). */
#include <jansson.h>
#include <uv.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_tput.h"
#include "kc_api.h"
#include "kc_config.h"
#include "kc_error.h"
#include "kc_flags.h"
#include "kc_http.h"
#include "kc_log.h"

#define MAX_LINE ((size_t)16 << 20) /* one watch frame; etcd caps an object at 1.5 MB */

typedef struct {
  uint64_t seen, bound; /* ns since the clock started; bound 0: not yet */
  int job;              /* index into jobs, -1 without the job label */
} pod_rec;

typedef struct {
  uint64_t first_seen, last_bound;
  int pods, bound;
} job_rec;

typedef struct {
  double *v;
  size_t n, cap;
} dvec;

static uv_loop_t loop;
static uv_timer_t ticker, deadline;
static kc_client *client;
static kc_http_req *watch_req;
static const char *ns = "bench";
static const char *label_selector = NULL;
static const char *job_label = NULL;
static const char *ready_file = NULL;
static int expected = 1;
static double timeout_s = 600;

static uint64_t t0;       /* uv_hrtime when the clock started */
static double t0_unix;    /* CLOCK_REALTIME at t0, seconds */
static json_t *by_name;   /* pod name -> index into pods */
static json_t *by_job;    /* job value -> index into jobs */
static json_t *job_names; /* index into jobs -> job value */
static pod_rec *pods;
static size_t npods, cap_pods;
static job_rec *jobs;
static size_t njobs, cap_jobs;
static int bound_count;
static char rv[64];
static char *line;
static size_t line_len;
static bool finished, timed_out, relist_needed, in_chunk;
static int fatal;
static uint64_t watch_restarts, events;

static bench_tput tput; /* scheduler_perf's collector */
static json_t *series;  /* [[seconds, bound], ...] one per tick */

static void start_list(void);
static void finish(void);

static int dvec_push(dvec *d, double x) {
  if (d->n == d->cap) {
    size_t nc = d->cap ? d->cap * 2 : 64;
    double *nv = realloc(d->v, nc * sizeof(*nv));
    if (!nv)
      return KC_ENOMEM;
    d->v = nv;
    d->cap = nc;
  }
  d->v[d->n++] = x;
  return 0;
}

static uint64_t now_rel(void) {
  return uv_hrtime() - t0;
}

static int job_index(const char *value) {
  json_t *ix = json_object_get(by_job, value);
  if (ix)
    return (int)json_integer_value(ix);
  if (njobs == cap_jobs) {
    size_t nc = cap_jobs ? cap_jobs * 2 : 256;
    job_rec *nj = realloc(jobs, nc * sizeof(*nj));
    if (!nj)
      return KC_ENOMEM;
    jobs = nj;
    cap_jobs = nc;
  }
  jobs[njobs] = (job_rec){.first_seen = now_rel()};
  if (json_array_append_new(job_names, json_string(value)) != 0)
    return KC_ENOMEM;
  json_object_set_new(by_job, value, json_integer((json_int_t)njobs));
  return (int)njobs++;
}

/* Notes one observation of a pod (from the LIST or an event). */
static int observe(json_t *pod) {
  json_t *meta = json_object_get(pod, "metadata");
  const char *name = json_string_value(json_object_get(meta, "name"));
  if (!name)
    return 0;
  const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
  json_t *ix = json_object_get(by_name, name);
  pod_rec *p;
  if (ix) {
    p = &pods[json_integer_value(ix)];
  } else {
    if (npods == cap_pods) {
      size_t nc = cap_pods ? cap_pods * 2 : 1024;
      pod_rec *np = realloc(pods, nc * sizeof(*np));
      if (!np)
        return KC_ENOMEM;
      pods = np;
      cap_pods = nc;
    }
    int job = -1;
    const char *jv =
        job_label ? json_string_value(json_object_get(json_object_get(meta, "labels"), job_label))
                  : NULL;
    if (jv && (job = job_index(jv)) < 0)
      return job;
    p = &pods[npods];
    *p = (pod_rec){.seen = now_rel(), .job = job};
    if (json_object_set_new(by_name, name, json_integer((json_int_t)npods)) != 0)
      return KC_ENOMEM;
    npods++;
    if (job >= 0)
      jobs[job].pods++;
  }
  if (p->bound == 0 && node && node[0]) {
    p->bound = now_rel();
    if (p->bound == 0)
      p->bound = 1;
    bound_count++;
    if (p->job >= 0) {
      jobs[p->job].bound++;
      jobs[p->job].last_bound = p->bound;
    }
  }
  return 0;
}

static void note_rv(json_t *obj) {
  const char *v =
      json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
  if (v && strlen(v) < sizeof(rv))
    snprintf(rv, sizeof(rv), "%s", v);
}

/* One newline-delimited watch frame. */
static int on_frame(const char *text, size_t len) {
  json_error_t jerr;
  json_t *ev = json_loadb(text, len, 0, &jerr);
  if (!ev) {
    KC_ERROR("watch frame is not JSON: %s", jerr.text);
    return KC_EPARSE;
  }
  int rc = 0;
  const char *type = json_string_value(json_object_get(ev, "type"));
  json_t *obj = json_object_get(ev, "object");
  events++;
  if (!type || !obj) {
    rc = KC_EPARSE;
  } else if (strcmp(type, "ERROR") == 0) {
    /* 410 Gone: the resourceVersion is too old; list again. */
    KC_WARN("watch error event: %s", json_string_value(json_object_get(obj, "message")));
    relist_needed = true;
    rc = KC_EGONE;
  } else {
    note_rv(obj);
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)
      rc = observe(obj);
  }
  json_decref(ev);
  if (rc == 0 && bound_count >= expected)
    finish();
  return rc;
}

static int on_chunk(kc_http_req *req, const char *chunk, size_t len, void *data) {
  (void)req;
  (void)data;
  int rc = 0;
  in_chunk = true;
  for (size_t i = 0; i < len && !finished; i++) {
    if (chunk[i] == '\n') {
      if (line_len > 0) {
        rc = on_frame(line, line_len);
        line_len = 0;
        if (rc)
          break;
      }
      continue;
    }
    if (line_len + 1 >= MAX_LINE) {
      rc = KC_ETOOBIG;
      break;
    }
    line[line_len++] = chunk[i];
  }
  in_chunk = false;
  /* A stream ends itself by returning a code (kc_http_cancel is not for its own callbacks). */
  return rc ? rc : finished ? KC_ECANCELED : 0;
}

static void on_watch_done(kc_http_req *req, const kc_http_result *res, void *data);

/* Opens the watch from rv. */
static void start_watch(void) {
  kc_ref ref = {.version = "v1", .resource = "pods", .namespace = ns};
  kc_query q = {.label_selector = label_selector, .resource_version = rv, .timeout_seconds = 1800};
  char *path = NULL;
  int rc = kc_api_path(KC_LIST, &ref, &q, true, &path);
  kc_http_spec spec = {
      .method = "GET", .path = path, .on_chunk = on_chunk, .on_done = on_watch_done};
  if (rc == 0)
    rc = kc_http_start(kc_client_http(client), &spec, &watch_req);
  free(path);
  if (rc) {
    KC_ERROR("cannot start the watch: %s", kc_strerror(rc));
    fatal = rc;
    finish();
  }
}

static void on_watch_done(kc_http_req *req, const kc_http_result *res, void *data) {
  (void)req;
  (void)data;
  watch_req = NULL;
  line_len = 0;
  if (finished)
    return;
  watch_restarts++;
  KC_V(1, "watch ended (%s, HTTP %ld); %s", kc_strerror(res->err), res->status,
       relist_needed || res->status == 410 ? "listing again" : "resuming");
  if (relist_needed || res->status == 410 || rv[0] == '\0') {
    relist_needed = false;
    start_list();
    return;
  }
  start_watch();
}

static void write_ready(void) {
  if (!ready_file)
    return;
  FILE *f = fopen(ready_file, "w");
  if (f) {
    fputs("watching\n", f);
    fclose(f);
  } else {
    KC_ERROR("cannot write %s", ready_file);
  }
}

static void on_list(const kc_api_result *res, void *data) {
  (void)data;
  if (finished)
    return;
  if (res->err) {
    KC_ERROR("listing pods: %s: %s", kc_strerror(res->err), res->message);
    fatal = res->err;
    finish();
    return;
  }
  bool first = t0 == 0;
  if (first) {
    struct timespec ts;
    t0 = uv_hrtime();
    clock_gettime(CLOCK_REALTIME, &ts);
    t0_unix = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
  }
  json_t *item;
  size_t i;
  json_array_foreach(json_object_get(res->obj, "items"), i, item) {
    int rc = observe(item);
    if (rc) {
      fatal = rc;
      finish();
      return;
    }
  }
  note_rv(res->obj);
  if (bound_count >= expected) {
    finish();
    return;
  }
  start_watch();
  if (first && !finished)
    write_ready();
}

static void start_list(void) {
  kc_ref ref = {.version = "v1", .resource = "pods", .namespace = ns};
  kc_query q = {.label_selector = label_selector};
  rv[0] = '\0';
  int rc = kc_api_call(client, KC_LIST, &ref, &q, NULL, on_list, NULL);
  if (rc) {
    fatal = rc;
    finish();
  }
}

/* scheduler_perf's throughputCollector tick. */
static void on_tick(uv_timer_t *t) {
  (void)t;
  uint64_t now = now_rel();
  json_array_append_new(series, json_pack("[f,i]", (double)now / 1e9, bound_count));
  if (bench_tput_tick(&tput, now, bound_count) != 0)
    fatal = KC_ENOMEM;
}

static void on_deadline(uv_timer_t *t) {
  (void)t;
  timed_out = true;
  finish();
}

static void finish(void) {
  if (finished)
    return;
  finished = true;
  uv_timer_stop(&ticker);
  uv_timer_stop(&deadline);
  if (watch_req && !in_chunk) {
    kc_http_cancel(watch_req);
    watch_req = NULL;
  }
}

static json_t *dist_json(dvec *d, const char *unit) {
  bench_tput_summary m;
  bench_tput_summarize(d->v, d->n, &m);
  return json_pack("{s:s,s:i,s:f,s:f,s:f,s:f,s:f,s:f}", "unit", unit, "n", (int)m.n, "average",
                   m.average, "perc50", m.perc50, "perc90", m.perc90, "perc95", m.perc95, "perc99",
                   m.perc99, "max", m.max);
}

static json_t *report(void) {
  uint64_t first_seen = UINT64_MAX, last_seen = 0, last_bound = 0;
  dvec pod_lat = {0}, job_lat = {0};
  int rc = 0;
  for (size_t i = 0; i < npods; i++) {
    if (pods[i].seen < first_seen)
      first_seen = pods[i].seen;
    if (pods[i].seen > last_seen)
      last_seen = pods[i].seen;
    if (pods[i].bound) {
      if (pods[i].bound > last_bound)
        last_bound = pods[i].bound;
      rc |= dvec_push(&pod_lat, (double)(pods[i].bound - pods[i].seen) / 1e6);
    }
  }
  int jobs_done = 0;
  json_t *by = json_object();
  for (size_t j = 0; j < njobs; j++) {
    if (by)
      json_object_set_new(by, json_string_value(json_array_get(job_names, j)),
                          json_pack("{s:i,s:i,s:f,s:f}", "pods", jobs[j].pods, "bound",
                                    jobs[j].bound, "first_seen_s", (double)jobs[j].first_seen / 1e9,
                                    "last_bound_s", (double)jobs[j].last_bound / 1e9));
    if (jobs[j].bound == jobs[j].pods) {
      jobs_done++;
      rc |= dvec_push(&job_lat, (double)(jobs[j].last_bound - jobs[j].first_seen) / 1e6);
    }
  }
  double makespan = last_bound > first_seen && first_seen != UINT64_MAX
                        ? (double)(last_bound - first_seen) / 1e9
                        : 0;
  /* Copy before dist_json sorts: the series keeps the order of the ticks. */
  json_t *raw = json_array();
  for (size_t i = 0; i < tput.n; i++)
    json_array_append_new(raw, json_real(tput.v[i]));
  dvec samples = {.v = tput.v, .n = tput.n, .cap = tput.cap};
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  json_t *out = json_pack(
      "{s:s,s:b,s:i,s:i,s:i,s:f,s:f,s:f,s:o,s:o,s:o,s:o,s:I,s:I,s:f,s:i}", "namespace", ns,
      "complete", !timed_out && !fatal && bound_count >= expected, "expected", expected, "seen",
      (int)npods, "bound", bound_count, "makespan_s", makespan, "makespan_per_s",
      makespan > 0 ? bound_count / makespan : 0.0, "duration_s",
      last_bound ? (double)last_bound / 1e9 : 0.0, "throughput", dist_json(&samples, "pods/s"),
      "samples", raw, "series", json_incref(series), "pod_latency", dist_json(&pod_lat, "ms"),
      "events", (json_int_t)events, "watch_restarts", (json_int_t)watch_restarts, "cpu_seconds",
      cpu, "peak_rss_kb", (int)ru.ru_maxrss);
  if (out) {
    json_object_set_new(out, "t0_unix", json_real(t0_unix));
    json_object_set_new(out, "first_seen_s", json_real(npods ? (double)first_seen / 1e9 : 0.0));
    json_object_set_new(out, "last_seen_s", json_real((double)last_seen / 1e9));
  }
  if (out && job_label)
    json_object_set_new(out, "jobs",
                        json_pack("{s:s,s:i,s:i,s:o,s:o}", "label", job_label, "seen", (int)njobs,
                                  "complete", jobs_done, "latency", dist_json(&job_lat, "ms"),
                                  "by_job", by ? by : json_object()));
  else
    json_decref(by);
  if (out && rc)
    json_object_set_new(out, "error", json_string("out of memory while reporting"));
  free(pod_lat.v);
  free(job_lat.v);
  return out;
}

int main(int argc, char **argv) {
  const char *kubeconfig = NULL, *master = NULL;
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(-1, 0);
  int nargs = 0;
  const kc_flag flags[] = {
      {"kubeconfig", KC_FLAG_STRING, &kubeconfig, "kubeconfig", NULL, NULL, false, NULL},
      {"master", KC_FLAG_STRING, &master, "API server URL", NULL, NULL, false, NULL},
      {"namespace", KC_FLAG_STRING, &ns, "namespace to watch", "bench", NULL, false, NULL},
      {"label-selector", KC_FLAG_STRING, &label_selector, "pods to count", NULL, NULL, false, NULL},
      {"count", KC_FLAG_INT, &expected, "stop when this many pods are bound", "1", NULL, false,
       NULL},
      {"job-label", KC_FLAG_STRING, &job_label, "label whose value names a pod's job", NULL, NULL,
       false, NULL},
      {"ready-file", KC_FLAG_STRING, &ready_file, "written once the watch is open", NULL, NULL,
       false, NULL},
      {"timeout", KC_FLAG_DOUBLE, &timeout_s, "seconds before giving up", "600", NULL, false, NULL},
      {"v", KC_FLAG_INT, &kc_log_verbosity, "log verbosity", "0", NULL, false, NULL},
  };
  char err[512];
  if (kc_flags_parse(flags, sizeof(flags) / sizeof(flags[0]), argc, argv, &nargs, err,
                     sizeof(err)) != 0 ||
      nargs != 0 || expected < 1 || timeout_s <= 0) {
    fprintf(stderr,
            "usage: bindwatch --namespace NS --count N [--label-selector S] "
            "[--job-label K] [--ready-file F] [--timeout S]%s%s\n",
            err[0] ? ": " : "", err);
    return 2;
  }
  kc_config cfg;
  if (kc_config_load(&cfg, kubeconfig, master, err, sizeof(err)) != 0) {
    fprintf(stderr, "bindwatch: %s\n", err);
    return 1;
  }
  int exit_code = 1, rc;
  json_t *out = NULL;
  by_name = json_object();
  by_job = json_object();
  job_names = json_array();
  series = json_array();
  line = malloc(MAX_LINE);
  bench_tput_init(&tput);
  uv_loop_init(&loop);
  uv_timer_init(&loop, &ticker);
  uv_timer_init(&loop, &deadline);
  if (!by_name || !by_job || !job_names || !series || !line) {
    fprintf(stderr, "bindwatch: out of memory\n");
    goto out;
  }
  if ((rc = kc_client_new(&loop, &cfg, &opt, &client)) != 0) {
    fprintf(stderr, "bindwatch: %s\n", kc_strerror(rc));
    goto out;
  }
  uv_timer_start(&ticker, on_tick, 1000, 1000);
  uv_timer_start(&deadline, on_deadline, (uint64_t)(timeout_s * 1000), 0);
  start_list();
  while (!finished)
    uv_run(&loop, UV_RUN_ONCE);
  if (fatal)
    fprintf(stderr, "bindwatch: %s\n", kc_strerror(fatal));
  if (timed_out)
    fprintf(stderr, "bindwatch: timed out after %.0f s with %d of %d pods bound\n", timeout_s,
            bound_count, expected);
  out = report();
  char *text = out ? json_dumps(out, JSON_COMPACT) : NULL;
  if (text) {
    puts(text);
    free(text);
    exit_code = timed_out || fatal ? 1 : 0;
  }
out:
  kc_client_free(client);
  uv_close((uv_handle_t *)&ticker, NULL);
  uv_close((uv_handle_t *)&deadline, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  json_decref(out);
  json_decref(by_name);
  json_decref(by_job);
  json_decref(job_names);
  json_decref(series);
  free(line);
  free(pods);
  free(jobs);
  bench_tput_close(&tput);
  kc_config_close(&cfg);
  return exit_code;
}
