/* Nodes' load from the metrics source (sch_usage.h). */
#include "sch_usage.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_clock.h"
#include "kc_container.h"
#include "kc_error.h"
#include "kc_log.h"
#include "kc_time.h"
#include "sch_http.h"
#include "snapshot.pb-c.h"

#define USAGE_PERIOD      "10m"             /* Volcano's NODE_METRICS_PERIOD */
#define USAGE_INTERVAL_MS 30000             /* the `interval` default */
#define USAGE_TIMEOUT_MS  10000             /* one request */
#define USAGE_MAX_BODY    ((size_t)1 << 20) /* an answer is a few hundred bytes */

typedef struct usage_row {
  char *node;
  double cpu, mem;
  int64_t time; /* Unix seconds */
} usage_row;

/* One poll: what the worker reads (copies) and what it writes. */
typedef struct usage_job {
  uv_work_t req;
  struct sch_usage *u;
  sch_args conf; /* the metrics section, owned */
  usage_row *rows;
  size_t nrows;
} usage_job;

struct sch_usage {
  uv_loop_t *loop;
  kc_store *nodes;
  uv_timer_t timer;
  sch_args conf;   /* owned */
  usage_row *rows; /* the last answer, owned */
  size_t nrows;
  usage_job *job; /* in flight, or NULL */
  bool closing, timer_closed;
};

/* ---- sch_args copies ---- */

static bool args_equal(const sch_args *a, const sch_args *b) {
  if (a->n != b->n)
    return false;
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->items[i].key, b->items[i].key) != 0 ||
        strcmp(a->items[i].value ? a->items[i].value : "", b->items[i].value) != 0)
      return false;
  return true;
}

static const char *arg(const sch_args *a, const char *key, const char *def) {
  const char *v = sch_args_get(a, key);
  return v && *v ? v : def;
}

static void rows_free(usage_row *rows, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(rows[i].node);
  free(rows);
}

/* ---- parsing (pure) ---- */

bool sch_usage_prom_value(const char *body, double *out) {
  json_t *j = json_loads(body ? body : "", 0, NULL);
  json_t *data = json_object_get(j, "data");
  const char *type = json_string_value(json_object_get(data, "resultType"));
  json_t *row = json_array_get(json_object_get(data, "result"), 0);
  const char *v = json_string_value(json_array_get(json_object_get(row, "value"), 1));
  bool ok = type && strcmp(type, "vector") == 0 && v;
  if (ok) {
    char *end;
    *out = strtod(v, &end);
    ok = end != v;
  }
  json_decref(j);
  return ok;
}

bool sch_usage_es_values(const char *body, double *cpu, double *mem) {
  json_t *j = json_loads(body ? body : "", 0, NULL);
  json_t *aggs = json_object_get(j, "aggregations");
  bool ok = json_is_object(aggs);
  if (ok) {
    *cpu = json_number_value(json_object_get(json_object_get(aggs, "cpu"), "value")) * 100;
    *mem = json_number_value(json_object_get(json_object_get(aggs, "mem"), "value")) * 100;
  }
  json_decref(j);
  return ok;
}

/* ---- the worker's requests ---- */

/* A blocking POST of body (content type ct) to url; the answer's body (new) or NULL. */
static char *post(const sch_args *conf, const char *url, const char *ct, const char *body) {
  sch_http_req r = {.url = url,
                    .content_type = ct,
                    .body = body,
                    .len = strlen(body),
                    .timeout_ms = USAGE_TIMEOUT_MS,
                    .max_body = USAGE_MAX_BODY,
                    .insecure = strcmp(arg(conf, "tls.insecureSkipVerify", ""), "true") == 0,
                    .user = arg(conf, "elasticsearch.username", NULL),
                    .password = arg(conf, "elasticsearch.password", "")};
  char *ans = NULL, err[256] = "";
  size_t len;
  int status = sch_http_post(&r, &ans, &len, err, sizeof(err));
  if (status / 100 != 2) {
    KC_WARN("metrics source %s: %s", url, status < 0 ? err : "not 2xx");
    free(ans);
    return NULL;
  }
  return ans;
}

/* Volcano's two PromQL queries for one node; a query without data leaves 0. */
static void prom_node(const sch_args *conf, usage_row *r) {
  char q[2][512], url[1024];
  snprintf(q[0], sizeof(q[0]),
           "avg_over_time((100 - (avg by (instance) (rate(node_cpu_seconds_total{mode=\"idle\","
           "instance=\"%s\"}[5m])) * 100))[%s:30s])",
           r->node, USAGE_PERIOD);
  snprintf(q[1], sizeof(q[1]),
           "100*avg_over_time(((1-node_memory_MemAvailable_bytes{instance=\"%s\"}/"
           "node_memory_MemTotal_bytes{instance=\"%s\"}))[%s:30s])",
           r->node, r->node, USAGE_PERIOD);
  snprintf(url, sizeof(url), "%s/api/v1/query", arg(conf, "address", ""));
  for (int i = 0; i < 2; i++) {
    char *enc = curl_easy_escape(NULL, q[i], 0);
    char form[2048];
    snprintf(form, sizeof(form), "query=%s&time=%lld", enc ? enc : "",
             (long long)kc_clock_wall_ms() / 1000);
    curl_free(enc);
    char *body = post(conf, url, "application/x-www-form-urlencoded", form);
    double v;
    if (body && sch_usage_prom_value(body, &v))
      *(i == 0 ? &r->cpu : &r->mem) = v;
    else
      KC_WARN("Warning querying Prometheus: no data found for %s", q[i]);
    free(body);
  }
}

static void es_node(const sch_args *conf, usage_row *r) {
  char url[1024], body[1024];
  snprintf(url, sizeof(url), "%s/%s/_search", arg(conf, "address", ""),
           arg(conf, "elasticsearch.index", "metricbeat-*"));
  snprintf(body, sizeof(body),
           "{\"size\":0,\"query\":{\"bool\":{\"must\":[{\"range\":{\"@timestamp\":{\"gte\":"
           "\"now-%s\",\"lt\":\"now\"}}},{\"term\":{\"%s\":\"%s\"}}]}},\"aggs\":{\"cpu\":{\"avg\":"
           "{\"field\":\"host.cpu.usage\"}},\"mem\":{\"avg\":{\"field\":"
           "\"system.memory.actual.used.pct\"}}}}",
           USAGE_PERIOD, arg(conf, "elasticsearch.hostnameFieldName", "host.hostname"), r->node);
  char *ans = post(conf, url, "application/json", body);
  if (!ans || !sch_usage_es_values(ans, &r->cpu, &r->mem))
    KC_WARN("elasticsearch: no averages for node %s", r->node);
  free(ans);
}

static void poll_work(uv_work_t *req) {
  usage_job *j = container_of(req, usage_job, req);
  bool es = strcmp(arg(&j->conf, "type", ""), "elasticsearch") == 0;
  for (size_t i = 0; i < j->nrows; i++) {
    if (es)
      es_node(&j->conf, &j->rows[i]);
    else
      prom_node(&j->conf, &j->rows[i]);
    j->rows[i].time = kc_clock_wall_ms() / 1000;
  }
}

static void usage_destroy(sch_usage *u);

static void poll_after(uv_work_t *req, int status) {
  usage_job *j = container_of(req, usage_job, req);
  sch_usage *u = j->u;
  u->job = NULL;
  if (status == 0 && !u->closing) {
    rows_free(u->rows, u->nrows);
    u->rows = j->rows;
    u->nrows = j->nrows;
    KC_V(4, "metrics: the load of %zu nodes read", u->nrows);
  } else {
    rows_free(j->rows, j->nrows);
  }
  sch_args_free(&j->conf);
  free(j);
  if (u->closing && u->timer_closed)
    usage_destroy(u);
}

/* ---- polling, on the loop thread ---- */

/* A new job for every node of the cache, or NULL when out of memory. */
static usage_job *job_new(sch_usage *u) {
  usage_job *j = calloc(1, sizeof(*j));
  size_t n = kc_store_len(u->nodes);
  if (!j || !(j->rows = calloc(n + 1, sizeof(*j->rows))) || sch_args_copy(&j->conf, &u->conf) < 0) {
    if (j)
      free(j->rows);
    free(j);
    return NULL;
  }
  j->u = u;
  kc_store_iter it;
  kc_store_iter_init(u->nodes, &it);
  const char *key;
  void *obj;
  while (j->nrows < n && kc_store_iter_next(&it, &key, &obj))
    if ((j->rows[j->nrows].node = strdup(key)) != NULL)
      j->nrows++;
  return j;
}

static void poll_start(sch_usage *u) {
  if (u->job || u->closing || u->conf.n == 0)
    return; /* one at a time: the next tick comes after this one's answer */
  usage_job *j = job_new(u);
  if (!j) {
    KC_ERROR("metrics: out of memory starting a poll");
    return;
  }
  u->job = j;
  int rc = uv_queue_work(u->loop, &j->req, poll_work, poll_after);
  if (rc != 0) {
    KC_WARN("metrics: cannot start a worker: %s", uv_strerror(rc));
    u->job = NULL;
    rows_free(j->rows, j->nrows);
    sch_args_free(&j->conf);
    free(j);
  }
}

static void on_tick(uv_timer_t *t) {
  poll_start(container_of(t, sch_usage, timer));
}

int sch_usage_new(uv_loop_t *loop, kc_store *nodes, sch_usage **out) {
  sch_usage *u = calloc(1, sizeof(*u));
  if (!u)
    return KC_ENOMEM;
  u->loop = loop;
  u->nodes = nodes;
  int rc = uv_timer_init(loop, &u->timer);
  if (rc != 0) {
    free(u);
    return kc_err_from_uv(rc);
  }
  *out = u;
  return 0;
}

/* Whether the section names a source this file reads; logs why not otherwise. */
static bool supported(const sch_args *m) {
  const char *type = arg(m, "type", "");
  if (!*type) {
    KC_INFO("The metrics type is not set in the volcano scheduler configmap file. As a result, "
            "the CPU and memory load information of the node is not collected.");
    return false;
  }
  if (strcmp(type, "prometheus") != 0 && strcmp(type, "elasticsearch") != 0) {
    KC_ERROR("data cannot be collected from the %s monitoring system. The supported monitoring "
             "systems are elasticsearch, prometheus (kiln-scheduler does not read "
             "prometheus_adaptor yet)",
             type);
    return false;
  }
  if (!*arg(m, "address", "")) {
    KC_ERROR("metrics address is empty");
    return false;
  }
  if (strcmp(arg(m, "tls.insecureSkipVerify", ""), "true") == 0)
    KC_WARN("WARNING: TLS certificate verification is disabled which is insecure. This should "
            "not be used in production environments");
  return true;
}

int sch_usage_configure(sch_usage *u, const sch_args *metrics) {
  static const sch_args none = {NULL, 0};
  const sch_args *m = metrics && metrics->n && supported(metrics) ? metrics : &none;
  if (args_equal(&u->conf, m))
    return 0;
  sch_args_free(&u->conf);
  uv_timer_stop(&u->timer);
  if (m->n == 0)
    return 0;
  int rc = sch_args_copy(&u->conf, m);
  if (rc < 0)
    return rc;
  int64_t ns = 0;
  const char *iv = arg(m, "interval", NULL);
  uint64_t ms = USAGE_INTERVAL_MS;
  if (iv && kc_go_duration(iv, &ns, NULL, 0) == 0 && ns > 0)
    ms = (uint64_t)(ns / 1000000) ? (uint64_t)(ns / 1000000) : 1;
  KC_INFO("metrics: reading node load from %s at %s every %llu ms", arg(m, "type", ""),
          arg(m, "address", ""), (unsigned long long)ms);
  uv_timer_start(&u->timer, on_tick, 0, ms);
  return 0;
}

int sch_usage_fill(sch_usage *u, Kiln__Snapshot *m, void **block) {
  *block = NULL;
  if (!u || u->nrows == 0)
    return 0;
  size_t names = 0;
  for (size_t i = 0; i < u->nrows; i++)
    names += strlen(u->rows[i].node) + 1;
  size_t n = u->nrows;
  char *b = malloc(n * (sizeof(Kiln__NodeUsage *) + sizeof(Kiln__NodeUsage)) + names);
  if (!b)
    return KC_ENOMEM;
  Kiln__NodeUsage **ptrs = (Kiln__NodeUsage **)(void *)b;
  Kiln__NodeUsage *vals = (Kiln__NodeUsage *)(void *)(b + n * sizeof(*ptrs));
  char *str = (char *)(vals + n);
  for (size_t i = 0; i < n; i++) {
    kiln__node_usage__init(&vals[i]);
    size_t len = strlen(u->rows[i].node) + 1;
    memcpy(str, u->rows[i].node, len);
    vals[i].node = str;
    str += len;
    vals[i].cpu = u->rows[i].cpu;
    vals[i].memory = u->rows[i].mem;
    vals[i].metrics_time = u->rows[i].time;
    ptrs[i] = &vals[i];
  }
  m->node_usages = ptrs;
  m->n_node_usages = n;
  *block = b;
  return 0;
}

static void usage_destroy(sch_usage *u) {
  rows_free(u->rows, u->nrows);
  sch_args_free(&u->conf);
  free(u);
}

static void timer_closed(uv_handle_t *h) {
  sch_usage *u = container_of((uv_timer_t *)h, sch_usage, timer);
  u->timer_closed = true;
  if (!u->job)
    usage_destroy(u);
}

void sch_usage_free(sch_usage *u) {
  if (!u)
    return;
  u->closing = true;
  if (u->job)
    uv_cancel((uv_req_t *)&u->job->req); /* a running poll finishes; its answer is dropped */
  uv_close((uv_handle_t *)&u->timer, timer_closed);
}
