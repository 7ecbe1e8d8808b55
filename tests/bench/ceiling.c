/* ceiling: the most pods per second this API server and etcd accept, measured with the
 * smallest client that does a scheduler's writes: create N plain pods, then bind each with
 * POST pods/NAME/binding, both at full concurrency on one HTTP/2 connection (kc_http through
 * kc_api, the client-side limiter off by default).
 *
 *   ceiling [--kubeconfig F] [--namespace NS] [--count N] [--inflight W] [--mode M] ...
 *
 * Modes: "both" (create then bind: reports Lc, L and create+bind pods/s), "create" (only
 * create, e.g. plain pods for a peer scheduler: --scheduler-name default-scheduler), "bind"
 * (bind pods NAME-PREFIX0..N-1 that already exist).
 *
 * Pods get a schedulerName nobody serves unless told otherwise, so only this tool binds
 * them. Binding targets the cluster's nodes round-robin (listed once, before the clock).
 *
 * Prints one JSON object on stdout: per phase the pods done, errors, seconds from the first
 * request sent to the last answer, rate, and latency p50/p99 (request handed to the client
 * to answer, so it includes time waiting for the in-flight window but not for the window
 * slot); plus this process' CPU seconds and peak RSS. Exit 1 when any request failed. */
#include <jansson.h>
#include <uv.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "kc_api.h"
#include "kc_config.h"
#include "kc_error.h"
#include "kc_flags.h"
#include "kc_log.h"

/* The sweep on the shared 2-core development machine (500 kwok nodes, 2,000 pods, three runs
 * each, 2026-11-29): creates+binds per second 38 at 50 in flight, 36 at 200, 37 at 1000;
 * binds alone 81, 81, 86. The API server is CPU-bound from 50 on, so a larger window only
 * adds queueing (p99 2 s at 50, 7 s at 200, 25-32 s at 1000); 50 is the smallest window that
 * reaches the plateau. Sweep again (--inflight) on a bigger or quieter machine. */
#define DEFAULT_INFLIGHT "50"

typedef enum { PHASE_CREATE, PHASE_BIND } phase_kind;

typedef struct {
  phase_kind kind;
  int next;      /* next pod index to start */
  int done;      /* answered */
  int ok;        /* answered 2xx */
  int in_flight; /* started, not answered */
  int errors;
  int retried; /* calls that needed more than one attempt */
  uint64_t t_first, t_last;
  double *lat_ms; /* per pod, NaN-free: only successful calls */
  int nlat;
  char first_error[256];
} phase;

typedef struct {
  phase *ph;
  int index;
  uint64_t t_start;
} call_ctx;

static uv_loop_t loop;
static kc_client *client;
static const char *ns = "bench";
static const char *prefix = "ceiling-";
static const char *run_label = "ceiling"; /* value of kiln.bench/run on every pod */
static const char *scheduler_name = "kiln-bench-nobody";
static const char *job_label = NULL; /* "key=value" added to every pod */
static const char *cpu_request = "100m";
static const char *mem_request = "128Mi";
static int count = 1000;
static int inflight = 50;
static json_t *node_names; /* array of strings */

static void pump(phase *ph);

static void pod_name(int i, char *buf, size_t len) {
  snprintf(buf, len, "%s%d", prefix, i);
}

static json_t *pod_object(int i) {
  char name[256];
  pod_name(i, name, sizeof(name));
  json_t *labels = json_pack("{s:s}", "kiln.bench/run", run_label);
  if (labels && job_label) {
    const char *eq = strchr(job_label, '=');
    if (eq) {
      char key[254];
      size_t kl = (size_t)(eq - job_label);
      if (kl >= sizeof(key))
        kl = sizeof(key) - 1;
      memcpy(key, job_label, kl);
      key[kl] = '\0';
      json_object_set_new(labels, key, json_string(eq + 1));
    }
  }
  if (!labels)
    return NULL;
  return json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:s,s:[{s:s,s:s,s:{s:{s:s,s:s}}}],"
                   "s:i,s:[{s:s,s:s,s:s}]}}",
                   "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", ns,
                   "labels", labels, "spec", "schedulerName", scheduler_name, "containers", "name",
                   "c", "image", "kiln.bench/fake", "resources", "requests", "cpu", cpu_request,
                   "memory", mem_request, "terminationGracePeriodSeconds", 0, "tolerations", "key",
                   "kwok.x-k8s.io/node", "operator", "Exists", "effect", "NoSchedule");
}

static void complete(call_ctx *cx, int err, int attempts, const char *message) {
  phase *ph = cx->ph;
  uint64_t now = uv_hrtime();
  ph->in_flight--;
  ph->done++;
  ph->t_last = now;
  if (attempts > 1)
    ph->retried++;
  if (err == 0) {
    ph->ok++;
    ph->lat_ms[ph->nlat++] = (double)(now - cx->t_start) / 1e6;
  } else {
    if (ph->errors++ == 0)
      snprintf(ph->first_error, sizeof(ph->first_error), "%s: %s", kc_strerror(err), message);
    KC_V(1, "pod %d: %s: %s", cx->index, kc_strerror(err), message);
  }
  free(cx);
  pump(ph);
}

static void on_answer(const kc_api_result *res, void *data) {
  complete(data, res->err, res->attempts, res->message);
}

/* kc_api_call has no named CREATE (POST .../pods/NAME/binding), so the bind goes to kc_http
 * directly, once, with the answer decoded by kc_status_parse like kc_api does. */
static void on_bind_done(kc_http_req *req, const kc_http_result *res, void *data) {
  (void)req;
  if (res->err) {
    complete(data, res->err, 1, res->detail);
  } else if (res->status / 100 != 2) {
    kc_status st;
    kc_status_parse(res->status, res->body, res->body_len, &st, NULL);
    complete(data, st.err, 1, st.message);
  } else {
    complete(data, 0, 1, "");
  }
}

static int start_bind(call_ctx *cx, const kc_ref *ref, json_t *body) {
  char *path = NULL, *text = NULL;
  int rc = kc_api_path(KC_GET, ref, NULL, false, &path);
  if (rc == 0 && !(text = json_dumps(body, JSON_COMPACT)))
    rc = KC_ENOMEM;
  if (rc == 0) {
    kc_http_spec spec = {.method = "POST",
                         .path = path,
                         .content_type = "application/json",
                         .body = text,
                         .body_len = strlen(text),
                         .timeout_ms = 60000,
                         .on_done = on_bind_done,
                         .data = cx};
    rc = kc_http_start(kc_client_http(client), &spec, NULL);
  }
  free(path);
  free(text);
  return rc;
}

/* Keeps `inflight` calls running until every pod has been started. */
static void pump(phase *ph) {
  while (ph->next < count && ph->in_flight < inflight) {
    int i = ph->next++;
    call_ctx *cx = malloc(sizeof(*cx));
    if (!cx) {
      ph->errors++;
      ph->done++;
      continue;
    }
    cx->ph = ph;
    cx->index = i;
    char name[256];
    pod_name(i, name, sizeof(name));
    json_t *body;
    kc_ref ref = {.version = "v1", .resource = "pods", .namespace = ns};
    if (ph->kind == PHASE_CREATE) {
      body = pod_object(i);
    } else {
      const char *node =
          json_string_value(json_array_get(node_names, (size_t)i % json_array_size(node_names)));
      ref.name = name;
      ref.subresource = "binding";
      body = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind",
                       "Binding", "metadata", "name", name, "namespace", ns, "target", "apiVersion",
                       "v1", "kind", "Node", "name", node);
    }
    cx->t_start = uv_hrtime();
    if (ph->t_first == 0)
      ph->t_first = cx->t_start;
    int rc = !body ? KC_ENOMEM
             : ph->kind == PHASE_CREATE
                 ? kc_api_call(client, KC_CREATE, &ref, NULL, body, on_answer, cx)
                 : start_bind(cx, &ref, body);
    json_decref(body);
    if (rc != 0) {
      if (ph->errors++ == 0)
        snprintf(ph->first_error, sizeof(ph->first_error), "%s", kc_strerror(rc));
      ph->done++;
      free(cx);
      continue;
    }
    ph->in_flight++;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double percentile(const double *v, int n, double p) {
  if (n == 0)
    return 0;
  int rank = (int)(p / 100.0 * n + 0.999999);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return v[rank - 1];
}

static int run_phase(phase *ph, phase_kind kind) {
  memset(ph, 0, sizeof(*ph));
  ph->kind = kind;
  ph->lat_ms = calloc((size_t)count + 1, sizeof(double));
  if (!ph->lat_ms)
    return KC_ENOMEM;
  pump(ph);
  while (ph->done < count)
    uv_run(&loop, UV_RUN_ONCE);
  qsort(ph->lat_ms, (size_t)ph->nlat, sizeof(double), cmp_double);
  return 0;
}

static double phase_seconds(const phase *ph) {
  return ph->t_last > ph->t_first ? (double)(ph->t_last - ph->t_first) / 1e9 : 0;
}

static json_t *phase_json(const phase *ph) {
  double s = phase_seconds(ph);
  return json_pack("{s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:s?}", "pods", ph->ok, "errors", ph->errors,
                   "retried", ph->retried, "seconds", s, "per_s", s > 0 ? ph->ok / s : 0.0,
                   "p50_ms", percentile(ph->lat_ms, ph->nlat, 50), "p99_ms",
                   percentile(ph->lat_ms, ph->nlat, 99), "first_error",
                   ph->errors ? ph->first_error : NULL);
}

typedef struct {
  int done;
  int err;
  char msg[256];
} sync_call;

static void on_sync(const kc_api_result *res, void *data) {
  sync_call *sc = data;
  sc->done = 1;
  sc->err = res->err;
  snprintf(sc->msg, sizeof(sc->msg), "%s", res->message);
  if (res->err == 0 && res->obj && json_object_get(res->obj, "items")) {
    json_t *item;
    size_t i;
    json_array_foreach(json_object_get(res->obj, "items"), i, item) {
      const char *n = json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
      if (n)
        json_array_append_new(node_names, json_string(n));
    }
  }
}

static int call_sync(kc_verb verb, const kc_ref *ref, const kc_query *q, json_t *body, char *msg,
                     size_t msglen) {
  sync_call sc = {0};
  int rc = kc_api_call(client, verb, ref, q, body, on_sync, &sc);
  if (rc)
    return rc;
  while (!sc.done)
    uv_run(&loop, UV_RUN_ONCE);
  snprintf(msg, msglen, "%s", sc.msg);
  return sc.err;
}

static int prepare(bool need_nodes) {
  char msg[256];
  json_t *nsobj = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                            "metadata", "name", ns);
  kc_ref nsref = {.version = "v1", .resource = "namespaces"};
  int rc = nsobj ? call_sync(KC_CREATE, &nsref, NULL, nsobj, msg, sizeof(msg)) : KC_ENOMEM;
  json_decref(nsobj);
  if (rc != 0 && rc != KC_EALREADYEXISTS) {
    fprintf(stderr, "ceiling: creating namespace %s: %s: %s\n", ns, kc_strerror(rc), msg);
    return rc;
  }
  if (!need_nodes)
    return 0;
  kc_ref nref = {.version = "v1", .resource = "nodes"};
  rc = call_sync(KC_LIST, &nref, NULL, NULL, msg, sizeof(msg));
  if (rc != 0) {
    fprintf(stderr, "ceiling: listing nodes: %s: %s\n", kc_strerror(rc), msg);
    return rc;
  }
  if (json_array_size(node_names) == 0) {
    fprintf(stderr, "ceiling: the cluster has no nodes to bind to\n");
    return KC_EINVAL;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *kubeconfig = NULL, *master = NULL, *mode = "both";
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(-1, 0);
  int nargs = 0;
  const kc_flag flags[] = {
      {"kubeconfig", KC_FLAG_STRING, &kubeconfig, "kubeconfig", NULL, NULL, false, NULL},
      {"master", KC_FLAG_STRING, &master, "API server URL", NULL, NULL, false, NULL},
      {"namespace", KC_FLAG_STRING, &ns, "namespace (created if missing)", "bench", NULL, false,
       NULL},
      {"prefix", KC_FLAG_STRING, &prefix, "pod name prefix", "ceiling-", NULL, false, NULL},
      {"run", KC_FLAG_STRING, &run_label, "value of the kiln.bench/run label", "ceiling", NULL,
       false, NULL},
      {"count", KC_FLAG_INT, &count, "pods", "1000", NULL, false, NULL},
      {"inflight", KC_FLAG_INT, &inflight, "requests in flight", DEFAULT_INFLIGHT, NULL, false,
       NULL},
      {"mode", KC_FLAG_STRING, &mode, "both, create or bind", "both", NULL, false, NULL},
      {"scheduler-name", KC_FLAG_STRING, &scheduler_name, "spec.schedulerName of created pods",
       "kiln-bench-nobody", NULL, false, NULL},
      {"label", KC_FLAG_STRING, &job_label, "extra pod label KEY=VALUE", NULL, NULL, false, NULL},
      {"cpu", KC_FLAG_STRING, &cpu_request, "cpu request per pod", "100m", NULL, false, NULL},
      {"memory", KC_FLAG_STRING, &mem_request, "memory request per pod", "128Mi", NULL, false,
       NULL},
      KC_CLIENT_FLAGS(&opt, "-1", "0"),
      {"v", KC_FLAG_INT, &kc_log_verbosity, "log verbosity", "0", NULL, false, NULL},
  };
  char err[512];
  if (kc_flags_parse(flags, sizeof(flags) / sizeof(flags[0]), argc, argv, &nargs, err,
                     sizeof(err)) != 0 ||
      nargs != 0 || count < 1 || inflight < 1) {
    fprintf(stderr, "usage: ceiling [--count N] [--inflight W] [--mode both|create|bind] ...%s%s\n",
            err[0] ? ": " : "", err);
    return 2;
  }
  bool do_create = strcmp(mode, "both") == 0 || strcmp(mode, "create") == 0;
  bool do_bind = strcmp(mode, "both") == 0 || strcmp(mode, "bind") == 0;
  if (!do_create && !do_bind) {
    fprintf(stderr, "ceiling: --mode wants both, create or bind, got %s\n", mode);
    return 2;
  }
  kc_config cfg;
  if (kc_config_load(&cfg, kubeconfig, master, err, sizeof(err)) != 0) {
    fprintf(stderr, "ceiling: %s\n", err);
    return 1;
  }
  int rc = 1, exit_code = 1;
  phase create = {0}, bind = {0};
  json_t *out = NULL;
  node_names = json_array();
  uv_loop_init(&loop);
  if (!node_names || (rc = kc_client_new(&loop, &cfg, &opt, &client)) != 0) {
    fprintf(stderr, "ceiling: %s\n", kc_strerror(rc ? rc : KC_ENOMEM));
    goto out_loop;
  }
  if (prepare(do_bind) != 0)
    goto out_client;
  if (do_create && run_phase(&create, PHASE_CREATE) != 0)
    goto out_client;
  if (do_bind && run_phase(&bind, PHASE_BIND) != 0)
    goto out_client;

  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  kc_http_stats hs;
  kc_http_get_stats(kc_client_http(client), &hs);
  out =
      json_pack("{s:s,s:i,s:i,s:s,s:i,s:f,s:i,s:I,s:I}", "mode", mode, "count", count, "inflight",
                inflight, "namespace", ns, "nodes", (int)json_array_size(node_names), "cpu_seconds",
                cpu, "peak_rss_kb", (int)ru.ru_maxrss, "connections",
                (json_int_t)hs.new_connections, "http2_responses", (json_int_t)hs.http2_responses);
  if (!out)
    goto out_client;
  if (do_create)
    json_object_set_new(out, "create", phase_json(&create));
  if (do_bind)
    json_object_set_new(out, "bind", phase_json(&bind));
  if (do_create && do_bind) {
    /* Both phases back to back: each pod costs one create and one bind. */
    double s = phase_seconds(&create) + phase_seconds(&bind);
    json_object_set_new(out, "create_bind_per_s", json_real(s > 0 ? bind.ok / s : 0.0));
  }
  char *text = json_dumps(out, JSON_COMPACT);
  if (text) {
    puts(text);
    free(text);
  }
  exit_code = create.errors + bind.errors ? 1 : 0;
  if (create.errors)
    fprintf(stderr, "ceiling: %d creates failed, first: %s\n", create.errors, create.first_error);
  if (bind.errors)
    fprintf(stderr, "ceiling: %d binds failed, first: %s\n", bind.errors, bind.first_error);
out_client:
  kc_client_free(client);
out_loop:
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  json_decref(out);
  json_decref(node_names);
  free(create.lat_ms);
  free(bind.lat_ms);
  kc_config_close(&cfg);
  return exit_code;
}
