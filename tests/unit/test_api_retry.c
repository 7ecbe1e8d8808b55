/* kc_http and kc_api against a scripted local HTTP server (libmicrohttpd on loopback): the
 * retry rule, Retry-After, Status mapping, conflict retries, size caps, streaming and cancel,
 * and what goes on the wire (headers, query, DeleteOptions). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <microhttpd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "kc_api.h"
#include "kc_error.h"
#include "kc_http.h"

/* ---- the scripted server ---- */

struct reply {
  int status;
  const char *retry_after; /* NULL: no header */
  const char *body;
};

struct route {
  const char *path;
  struct reply seq[6]; /* the n-th hit gets seq[min(n, len-1)] */
  int hits;
  char method[16], ctype[96], auth[96], agent[96], field_manager[64], force[16];
  char body[2048];
};

#define STATUS(code, reason, msg)                                                                  \
  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"" msg           \
  "\",\"reason\":\"" reason "\",\"code\":" #code "}"
#define CM                                                                                         \
  "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"1\"},"               \
  "\"data\":{\"n\":\"0\"}}"

static struct route routes[] = {
    {"/api/v1/namespaces/t/configmaps/r429",
     {{429, "1", STATUS(429, "TooManyRequests", "slow down")}, {200, NULL, CM}}},
    {"/api/v1/namespaces/t/configmaps/r503",
     {{503, NULL, "busy"}, {503, NULL, "busy"}, {200, NULL, CM}}},
    {"/api/v1/namespaces/t/configmaps", /* POST: create */
     {{500, NULL, STATUS(500, "InternalError", "etcd hiccup")}, {200, NULL, CM}}},
    {"/api/v1/namespaces/ra/configmaps",
     {{503, "0", STATUS(503, "ServiceUnavailable", "starting")}, {201, NULL, CM}}},
    {"/api/v1/namespaces/t/configmaps/missing",
     {{404, NULL, STATUS(404, "NotFound", "configmaps \\\"missing\\\" not found")}}},
    {"/api/v1/namespaces/t/configmaps/notjson", {{200, NULL, "{not json"}}},
    {"/api/v1/namespaces/t/configmaps/big", {{200, NULL, NULL}}}, /* body built at start */
    {"/api/v1/namespaces/t/configmaps/deleteme", {{200, NULL, CM}}},
    {"/api/v1/namespaces/t/configmaps/applied", {{200, NULL, CM}}},
    {"/api/v1/namespaces/t/configmaps/always500",
     {{500, NULL, STATUS(500, "InternalError", "still broken")}}},
    {"/api/v1/namespaces/t/configmaps/always429",
     {{429, "0", STATUS(429, "TooManyRequests", "slow down")}}},
};
enum { R429, R503, RCREATE, RRA, RMISSING, RNOTJSON, RBIG, RDELETE, RAPPLY, R500, R429X };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char big_body[64 * 1024];

/* Conflict script for kc_api_update_retry: PUT fails conflicts_left times, then succeeds. */
static int conflicts_left, rmw_gets, rmw_puts;

static void copy_header(struct MHD_Connection *c, const char *name, char *dst, size_t cap) {
  const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
  snprintf(dst, cap, "%s", v ? v : "");
}

static enum MHD_Result respond(struct MHD_Connection *conn, int status, const char *ra,
                               const char *body) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, "Content-Type", "application/json");
  if (ra)
    MHD_add_response_header(r, "Retry-After", ra);
  enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
  MHD_destroy_response(r);
  return ret;
}

static ssize_t stream_lines(void *cls, uint64_t pos, char *buf, size_t max) {
  static const char lines[] = "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n"
                              "{\"type\":\"DELETED\"}\n";
  (void)cls;
  if (pos >= sizeof(lines) - 1)
    return MHD_CONTENT_READER_END_OF_STREAM;
  size_t n = sizeof(lines) - 1 - (size_t)pos;
  if (n > 7)
    n = 7; /* small pieces, so the client sees several chunks */
  if (n > max)
    n = max;
  memcpy(buf, lines + pos, n);
  return (ssize_t)n;
}

struct upload {
  char body[2048];
  size_t len;
};

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **con_cls) {
  (void)cls;
  (void)version;
  if (!*con_cls) {
    *con_cls = calloc(1, sizeof(struct upload));
    return *con_cls ? MHD_YES : MHD_NO;
  }
  struct upload *up = *con_cls;
  if (*size) {
    size_t n = *size < sizeof(up->body) - 1 - up->len ? *size : sizeof(up->body) - 1 - up->len;
    memcpy(up->body + up->len, data, n);
    up->len += n;
    *size = 0;
    return MHD_YES;
  }
  if (strcmp(url, "/api/v1/namespaces/t/configmaps/slow") == 0) {
    uv_sleep(300); /* a thread per connection: only this one waits */
    return respond(conn, 200, NULL, CM);
  }
  if (strcmp(url, "/api/v1/namespaces/t/configmaps/stream") == 0) {
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64, stream_lines, NULL, NULL);
    enum MHD_Result ret = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return ret;
  }
  if (strcmp(url, "/api/v1/namespaces/t/configmaps/rmw") == 0) {
    pthread_mutex_lock(&mu);
    bool put = strcmp(method, "PUT") == 0;
    bool conflict = put && conflicts_left-- > 0;
    if (put)
      rmw_puts++;
    else
      rmw_gets++;
    pthread_mutex_unlock(&mu);
    if (conflict)
      return respond(conn, 409, NULL, STATUS(409, "Conflict", "the object has been modified"));
    return respond(conn, 200, NULL, put ? up->body : CM);
  }
  for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
    struct route *rt = &routes[i];
    if (strcmp(url, rt->path) != 0)
      continue;
    pthread_mutex_lock(&mu);
    size_t len = 0;
    while (len < 6 && rt->seq[len].status)
      len++;
    struct reply rep = rt->seq[(size_t)rt->hits < len ? (size_t)rt->hits : len - 1];
    rt->hits++;
    snprintf(rt->method, sizeof(rt->method), "%s", method);
    copy_header(conn, "Content-Type", rt->ctype, sizeof(rt->ctype));
    copy_header(conn, "Authorization", rt->auth, sizeof(rt->auth));
    copy_header(conn, "User-Agent", rt->agent, sizeof(rt->agent));
    const char *fm = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "fieldManager");
    const char *force = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "force");
    snprintf(rt->field_manager, sizeof(rt->field_manager), "%s", fm ? fm : "");
    snprintf(rt->force, sizeof(rt->force), "%s", force ? force : "");
    snprintf(rt->body, sizeof(rt->body), "%.*s", (int)up->len, up->body);
    pthread_mutex_unlock(&mu);
    return respond(conn, rep.status, rep.retry_after, rep.body ? rep.body : big_body);
  }
  return respond(conn, 404, NULL, STATUS(404, "NotFound", "no route"));
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  free(*con_cls);
  *con_cls = NULL;
}

/* ---- the client side ---- */

static struct MHD_Daemon *daemon_;
static uv_loop_t loop;
static kc_config cfg;
static kc_client *client;
static char server_url[64];

struct done {
  bool finished;
  int err;
  long status;
  int attempts;
  json_t *obj;
  char message[256];
};

static void on_done(const kc_api_result *res, void *data) {
  struct done *d = data;
  d->finished = true;
  d->err = res->err;
  d->status = res->status;
  d->attempts = res->attempts;
  d->obj = json_incref(res->obj);
  snprintf(d->message, sizeof(d->message), "%s", res->message);
}

static void wait_done(bool *flag) {
  while (!*flag)
    uv_run(&loop, UV_RUN_ONCE);
}

static void run_call(kc_verb verb, const char *ns, const char *name, const kc_query *q,
                     json_t *body, struct done *d) {
  kc_ref ref = {NULL, "v1", "configmaps", ns, name, NULL};
  memset(d, 0, sizeof(*d));
  assert_int_equal(kc_api_call(client, verb, &ref, q, body, on_done, d), 0);
  assert_false(d->finished); /* never from inside kc_api_call */
  wait_done(&d->finished);
}

static int hits(int i) {
  pthread_mutex_lock(&mu);
  int n = routes[i].hits;
  pthread_mutex_unlock(&mu);
  return n;
}

static double next_qps; /* the token bucket of the next client: 0 none, else burst 1 */

static void new_client(const char *server, int max_retries) {
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = strdup(server);
  cfg.token = strdup("tok-123");
  cfg.namespace = strdup("default");
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(next_qps, next_qps > 0 ? 1 : 0);
  opt.max_retries = max_retries;
  opt.timeout_ms = 5000;
  opt.user_agent = "kiln-test/1";
  assert_int_equal(kc_client_new(&loop, &cfg, &opt, &client), 0);
}

static void free_client(void) {
  kc_client_free(client);
  client = NULL;
  uv_run(&loop, UV_RUN_DEFAULT);
  kc_config_close(&cfg);
}

static int setup(void **state) {
  (void)state;
  memset(big_body, 'a', sizeof(big_body) - 1);
  daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                             NULL, NULL, handler, NULL, MHD_OPTION_NOTIFY_COMPLETED, completed,
                             NULL, MHD_OPTION_END);
  if (!daemon_)
    return -1;
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
  snprintf(server_url, sizeof(server_url), "http://127.0.0.1:%u", (unsigned)info->port);
  if (uv_loop_init(&loop))
    return -1;
  new_client(server_url, 10);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  free_client();
  int rc = uv_loop_close(&loop);
  MHD_stop_daemon(daemon_);
  return rc == 0 ? 0 : -1;
}

static void test_429_waits_for_retry_after(void **state) {
  (void)state;
  struct done d;
  uint64_t t0 = uv_hrtime();
  run_call(KC_GET, "t", "r429", NULL, NULL, &d);
  double took = (double)(uv_hrtime() - t0) / 1e9;
  assert_int_equal(d.err, 0);
  assert_int_equal(d.attempts, 2);
  assert_int_equal(hits(R429), 2);
  assert_true(took >= 0.95); /* Retry-After: 1 */
  assert_string_equal(json_string_value(json_object_get(d.obj, "kind")), "ConfigMap");
  json_decref(d.obj);
  /* What went on the wire. */
  assert_string_equal(routes[R429].auth, "Bearer tok-123");
  assert_string_equal(routes[R429].agent, "kiln-test/1");
}

static void test_5xx_retried_for_idempotent_get(void **state) {
  (void)state;
  struct done d;
  run_call(KC_GET, "t", "r503", NULL, NULL, &d);
  assert_int_equal(d.err, 0);
  assert_int_equal(d.attempts, 3);
  assert_int_equal(hits(R503), 3);
  json_decref(d.obj);
}

static void test_5xx_not_retried_for_create(void **state) {
  (void)state;
  struct done d;
  json_t *cm = json_pack("{s:{s:s}}", "metadata", "name", "x");
  run_call(KC_CREATE, "t", NULL, NULL, cm, &d);
  assert_int_equal(d.err, KC_EINTERNAL);
  assert_int_equal(d.status, 500);
  assert_int_equal(d.attempts, 1);
  assert_int_equal(hits(RCREATE), 1);
  assert_string_equal(d.message, "etcd hiccup");
  assert_string_equal(routes[RCREATE].method, "POST");
  assert_string_equal(routes[RCREATE].ctype, "application/json");
  assert_string_equal(routes[RCREATE].body, "{\"metadata\":{\"name\":\"x\"}}");
  json_decref(d.obj);
  /* With Retry-After the server asks for a retry: every verb honours it. */
  run_call(KC_CREATE, "ra", NULL, NULL, cm, &d);
  assert_int_equal(d.err, 0);
  assert_int_equal(d.status, 201);
  assert_int_equal(d.attempts, 2);
  json_decref(d.obj);
  json_decref(cm);
}

static void test_status_error_not_retried(void **state) {
  (void)state;
  struct done d;
  run_call(KC_GET, "t", "missing", NULL, NULL, &d);
  assert_int_equal(d.err, KC_ENOTFOUND);
  assert_int_equal(d.attempts, 1);
  assert_string_equal(d.message, "configmaps \"missing\" not found");
  assert_string_equal(json_string_value(json_object_get(d.obj, "reason")), "NotFound");
  json_decref(d.obj);
  run_call(KC_GET, "t", "notjson", NULL, NULL, &d);
  assert_int_equal(d.err, KC_EPARSE);
  assert_non_null(strstr(d.message, "decoding the response"));
  assert_null(d.obj);
}

/* discard_body: a 2xx reply is not decoded (a body that would not parse passes), an error
 * still is. */
static void test_discard_body(void **state) {
  (void)state;
  struct done d;
  kc_query q = {.discard_body = true};
  run_call(KC_GET, "t", "notjson", &q, NULL, &d);
  assert_int_equal(d.err, 0);
  assert_null(d.obj);
  run_call(KC_GET, "t", "applied", &q, NULL, &d);
  assert_int_equal(d.err, 0);
  assert_null(d.obj);
  run_call(KC_GET, "t", "missing", &q, NULL, &d);
  assert_int_equal(d.err, KC_ENOTFOUND);
  assert_string_equal(d.message, "configmaps \"missing\" not found");
  json_decref(d.obj);
}

static void test_timeout_is_per_call_and_final(void **state) {
  (void)state;
  struct done d;
  kc_query q = {.timeout_ms = 100};
  uint64_t t0 = uv_hrtime();
  run_call(KC_GET, "t", "slow", &q, NULL, &d);
  double took = (double)(uv_hrtime() - t0) / 1e9;
  assert_int_equal(d.err, KC_ETIMEDOUT);
  assert_int_equal(d.attempts, 1); /* the caller's deadline: not retried */
  assert_true(took < 0.29);
  run_call(KC_GET, "t", "slow", NULL, NULL, &d); /* the client's 5 s default is enough */
  assert_int_equal(d.err, 0);
  json_decref(d.obj);
}

static void test_retries_are_bounded(void **state) {
  (void)state;
  free_client();
  new_client(server_url, 2);
  struct done d;
  run_call(KC_GET, "t", "always500", NULL, NULL, &d);
  assert_int_equal(d.err, KC_EINTERNAL);
  assert_int_equal(d.attempts, 3); /* 1 + max_retries */
  assert_int_equal(hits(R500), 3);
  json_decref(d.obj);
  free_client();
  new_client(server_url, 10);
}

static void test_connection_refused(void **state) {
  (void)state;
  free_client();
  new_client("http://127.0.0.1:1", 1);
  struct done d;
  json_t *empty = json_object();
  run_call(KC_CREATE, "t", NULL, NULL, empty, &d);
  json_decref(empty);
  /* Nothing was sent, so even a create is retried. */
  assert_int_equal(d.err, KC_ECONNECT);
  assert_int_equal(d.attempts, 2);
  assert_int_equal(d.status, 0);
  assert_non_null(strstr(d.message, "POST /api/v1/namespaces/t/configmaps"));
  free_client();
  new_client(server_url, 10);
}

static void test_delete_options_and_apply(void **state) {
  (void)state;
  struct done d;
  kc_query q = {.precondition_uid = "u-1",
                .precondition_resource_version = "7",
                .propagation_policy = "Background"};
  run_call(KC_DELETE, "t", "deleteme", &q, NULL, &d);
  assert_int_equal(d.err, 0);
  json_decref(d.obj);
  assert_string_equal(routes[RDELETE].method, "DELETE");
  json_t *body = json_loads(routes[RDELETE].body, 0, NULL);
  assert_non_null(body);
  assert_string_equal(json_string_value(json_object_get(body, "kind")), "DeleteOptions");
  assert_string_equal(json_string_value(json_object_get(body, "propagationPolicy")), "Background");
  json_t *pre = json_object_get(body, "preconditions");
  assert_string_equal(json_string_value(json_object_get(pre, "uid")), "u-1");
  assert_string_equal(json_string_value(json_object_get(pre, "resourceVersion")), "7");
  json_decref(body);

  json_t *cfgobj = json_pack("{s:s, s:s}", "apiVersion", "v1", "kind", "ConfigMap");
  kc_query ssa = {.field_manager = "kiln", .force = true};
  run_call(KC_APPLY, "t", "applied", &ssa, cfgobj, &d);
  assert_int_equal(d.err, 0);
  json_decref(d.obj);
  assert_string_equal(routes[RAPPLY].method, "PATCH");
  assert_string_equal(routes[RAPPLY].ctype, "application/apply-patch+yaml");
  assert_string_equal(routes[RAPPLY].field_manager, "kiln");
  assert_string_equal(routes[RAPPLY].force, "true");
  run_call(KC_PATCH_MERGE, "t", "applied", NULL, cfgobj, &d);
  json_decref(d.obj);
  assert_string_equal(routes[RAPPLY].ctype, "application/merge-patch+json");
  assert_string_equal(routes[RAPPLY].force, ""); /* force is apply-only */
  json_decref(cfgobj);

  /* Bodies that do not fit the verb are refused up front. */
  kc_ref ref = {NULL, "v1", "configmaps", "t", "x", NULL};
  json_t *obj = json_object();
  assert_int_equal(kc_api_call(client, KC_GET, &ref, NULL, obj, on_done, &d), KC_EINVAL);
  assert_int_equal(kc_api_call(client, KC_PATCH_JSON, &ref, NULL, obj, on_done, &d), KC_EINVAL);
  assert_int_equal(kc_api_call(client, KC_UPDATE, &ref, NULL, NULL, on_done, &d), KC_EINVAL);
  json_decref(obj);
}

/* kc_api_update_retry hands the same data to mutate and cb; the server counts the tries. */
static int bump(json_t *obj, void *data) {
  (void)data;
  return json_object_set_new(json_object_get(obj, "data"), "n", json_string("1"));
}

static void test_update_retry_on_conflict(void **state) {
  (void)state;
  kc_ref ref = {NULL, "v1", "configmaps", "t", "rmw", NULL};
  struct done d = {0};
  pthread_mutex_lock(&mu);
  conflicts_left = 2;
  rmw_gets = rmw_puts = 0;
  pthread_mutex_unlock(&mu);
  assert_int_equal(kc_api_update_retry(client, &ref, NULL, bump, on_done, &d), KC_OK);
  wait_done(&d.finished);
  assert_int_equal(d.err, 0);
  assert_int_equal(rmw_gets, 3);
  assert_int_equal(rmw_puts, 3);
  assert_string_equal(json_string_value(json_object_get(json_object_get(d.obj, "data"), "n")), "1");
  json_decref(d.obj);

  /* Always conflicting: gives up after retry.DefaultRetry's 5 tries with the 409. */
  memset(&d, 0, sizeof(d));
  pthread_mutex_lock(&mu);
  conflicts_left = 100;
  rmw_gets = rmw_puts = 0;
  pthread_mutex_unlock(&mu);
  assert_int_equal(kc_api_update_retry(client, &ref, NULL, bump, on_done, &d), KC_OK);
  wait_done(&d.finished);
  assert_int_equal(d.err, KC_ECONFLICT);
  assert_int_equal(rmw_puts, 5);
  assert_int_equal(rmw_gets, 5);
  assert_non_null(strstr(d.message, "modified"));
  json_decref(d.obj);
}

/* ---- kc_http directly: caps, streaming, cancel ---- */

struct raw {
  bool finished;
  int err;
  long status;
  size_t body_len;
  int chunks;
  char data[256];
  size_t len;
  int stop_after; /* chunks before returning KC_ECANCELED; 0: never */
};

static void raw_done(kc_http_req *req, const kc_http_result *res, void *data) {
  (void)req;
  struct raw *r = data;
  r->finished = true;
  r->err = res->err;
  r->status = res->status;
  r->body_len = res->body_len;
}

static int raw_chunk(kc_http_req *req, const char *chunk, size_t len, void *data) {
  (void)req;
  struct raw *r = data;
  r->chunks++;
  if (r->len + len < sizeof(r->data)) {
    memcpy(r->data + r->len, chunk, len);
    r->len += len;
  }
  return r->stop_after && r->chunks >= r->stop_after ? KC_ECANCELED : 0;
}

static void raw_get(const char *path, size_t max_body, int stop_after, bool stream, struct raw *r) {
  memset(r, 0, sizeof(*r));
  r->stop_after = stop_after;
  kc_http_spec s = {.method = "GET",
                    .path = path,
                    .timeout_ms = 5000,
                    .max_body = max_body,
                    .on_chunk = stream ? raw_chunk : NULL,
                    .on_done = raw_done,
                    .data = r};
  assert_int_equal(kc_http_start(kc_client_http(client), &s, NULL), 0);
  wait_done(&r->finished);
}

static void test_body_cap(void **state) {
  (void)state;
  struct raw r;
  raw_get("/api/v1/namespaces/t/configmaps/big", 1000, 0, false, &r);
  assert_int_equal(r.err, KC_ETOOBIG);
  raw_get("/api/v1/namespaces/t/configmaps/big", 0, 0, false, &r);
  assert_int_equal(r.err, 0);
  assert_int_equal(r.body_len, sizeof(big_body) - 1);
}

static void test_streaming_and_cancel(void **state) {
  (void)state;
  struct raw r;
  raw_get("/api/v1/namespaces/t/configmaps/stream", 0, 0, true, &r);
  assert_int_equal(r.err, 0);
  assert_int_equal(r.status, 200);
  assert_true(r.chunks >= 2);
  r.data[r.len] = '\0';
  assert_string_equal(r.data, "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n"
                              "{\"type\":\"DELETED\"}\n");
  assert_int_equal(r.body_len, 0); /* streamed, not buffered */
  raw_get("/api/v1/namespaces/t/configmaps/stream", 0, 1, true, &r);
  assert_int_equal(r.err, KC_ECANCELED);
  assert_int_equal(r.chunks, 1);
  /* A streamed request that fails buffers its error body for the Status. */
  raw_get("/api/v1/namespaces/t/configmaps/missing", 0, 0, true, &r);
  assert_int_equal(r.err, 0);
  assert_int_equal(r.status, 404);
  assert_int_equal(r.chunks, 0);
  assert_true(r.body_len > 0);

  /* kc_http_cancel, before it is sent and while the server works on it: no callback, and
   * the transport stays usable. */
  struct raw never = {0};
  kc_http_req *req;
  kc_http_spec s = {.method = "GET",
                    .path = "/api/v1/namespaces/t/configmaps/slow",
                    .on_done = raw_done,
                    .data = &never};
  assert_int_equal(kc_http_start(kc_client_http(client), &s, &req), 0);
  kc_http_cancel(req);
  assert_int_equal(kc_http_start(kc_client_http(client), &s, &req), 0);
  for (int i = 0; i < 20; i++) /* connect and send; the reply takes 300 ms */
    uv_run(&loop, UV_RUN_NOWAIT);
  kc_http_stats st;
  kc_http_get_stats(kc_client_http(client), &st);
  assert_int_equal(st.in_flight, 1);
  kc_http_cancel(req);
  kc_http_get_stats(kc_client_http(client), &st);
  assert_int_equal(st.in_flight, 0);
  raw_get("/api/v1/namespaces/t/configmaps/missing", 0, 0, false, &r);
  assert_int_equal(r.status, 404);
  assert_false(never.finished);
}

static void test_close_cancels_pending_calls(void **state) {
  (void)state;
  free_client();
  new_client(server_url, 10);
  struct done d[3];
  kc_ref ref = {NULL, "v1", "configmaps", "t", "r429", NULL};
  for (int i = 0; i < 3; i++) {
    memset(&d[i], 0, sizeof(d[i]));
    assert_int_equal(kc_api_call(client, KC_GET, &ref, NULL, NULL, on_done, &d[i]), 0);
  }
  kc_client_free(client); /* before any was sent */
  client = NULL;
  for (int i = 0; i < 3; i++) {
    assert_true(d[i].finished);
    assert_int_equal(d[i].err, KC_ECANCELED);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  kc_config_close(&cfg);
  new_client(server_url, 10);
}

/* ---- a black hole: a server that accepts connections and never answers ---- */

static int hole_fd = -1, hole_accepted;
static pthread_t hole_thread;

static void *hole_accept(void *arg) {
  (void)arg;
  int fds[16], n = 0;
  for (;;) {
    int fd = accept(hole_fd, NULL, NULL);
    if (fd < 0)
      break;
    if (n < 16)
      fds[n++] = fd; /* held open and never read: the kernel acknowledges what is sent */
    else
      close(fd);
    pthread_mutex_lock(&mu);
    hole_accepted++;
    pthread_mutex_unlock(&mu);
  }
  while (n > 0)
    close(fds[--n]);
  return NULL;
}

static int hole_start(void) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  hole_fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(hole_fd >= 0);
  assert_int_equal(bind(hole_fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(hole_fd, 16), 0);
  assert_int_equal(getsockname(hole_fd, (struct sockaddr *)&a, &len), 0);
  assert_int_equal(pthread_create(&hole_thread, NULL, hole_accept, NULL), 0);
  return ntohs(a.sin_port);
}

static void hole_stop(void) {
  shutdown(hole_fd, SHUT_RDWR); /* wakes the accept */
  pthread_join(hole_thread, NULL);
  close(hole_fd);
  hole_fd = -1;
}

static int hole_count(void) {
  pthread_mutex_lock(&mu);
  int n = hole_accepted;
  pthread_mutex_unlock(&mu);
  return n;
}

/* A timed GET, then a stream (a watch, no deadline) that waits behind it for the one
 * connection; runs the loop until the GET ends. */
static void get_then_watch(kc_http *h, struct raw *get, struct raw *watch) {
  memset(get, 0, sizeof(*get));
  memset(watch, 0, sizeof(*watch));
  kc_http_spec g = {.method = "GET",
                    .path = "/api/v1/namespaces/t/configmaps/x",
                    .timeout_ms = 200,
                    .on_done = raw_done,
                    .data = get};
  kc_http_spec w = {.method = "GET",
                    .path = "/api/v1/namespaces/t/configmaps?watch=1",
                    .on_chunk = raw_chunk,
                    .on_done = raw_done,
                    .data = watch};
  assert_int_equal(kc_http_start(h, &g, NULL), 0);
  assert_int_equal(kc_http_start(h, &w, NULL), 0);
  wait_done(&get->finished);
  assert_int_equal(get->err, KC_ETIMEDOUT);
}

/* A connection that accepts and then stays silent (a stalled proxy) is not seen by TCP: the
 * transport closes it when a request times out with nothing received for the dead-after
 * time, every request on it (the watch) ends with a transport error, and the next request
 * opens a new connection. A timeout alone, after less silence than that, closes nothing. */
static void test_silent_connection_is_closed(void **state) {
  (void)state;
  char url[64];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", hole_start());
  free_client();
  new_client(url, 0);
  kc_http *h = kc_client_http(client);
  struct raw get, watch;
  kc_http_stats st;
  kc_http_req *w = NULL;
  get_then_watch(h, &get, &watch); /* the default: 15 s of silence */
  for (int i = 0; i < 20; i++)
    uv_run(&loop, UV_RUN_NOWAIT);
  kc_http_get_stats(h, &st);
  assert_int_equal(st.connection_resets, 0);
  assert_false(watch.finished);
  assert_int_equal(st.in_flight, 1);
  /* The watch is the only request left: cancel it by walking to it through a new start. */
  free_client(); /* ends the watch with KC_ECANCELED */
  assert_int_equal(watch.err, KC_ECANCELED);
  new_client(url, 0);
  h = kc_client_http(client);
  kc_http_set_dead_after(h, 100);
  get_then_watch(h, &get, &watch);
  wait_done(&watch.finished);
  assert_int_equal(watch.err, KC_ETRANSPORT);
  kc_http_get_stats(h, &st);
  assert_int_equal(st.connection_resets, 1);
  assert_int_equal(st.in_flight, 0);
  int before = hole_count();
  struct done d;
  kc_query q = {.timeout_ms = 200};
  run_call(KC_GET, "t", "x", &q, NULL, &d);
  assert_int_equal(d.err, KC_ETIMEDOUT);
  for (int i = 0; i < 100 && hole_count() == before; i++)
    uv_sleep(20);
  assert_true(hole_count() > before); /* a new connection */
  (void)w;
  free_client();
  hole_stop();
  new_client(server_url, 10);
}

/* The write fence is asked at each attempt: a write whose first attempt got a 429 while the
 * fence was open is not sent again once it has closed. Reads and unfenced writes go. */
static int fence_opens; /* how many more times the fence says yes */

static int test_fence(void *ud) {
  (void)ud;
  return fence_opens-- > 0 ? 0 : KC_ENOTLEADER;
}

static void test_fence_checked_at_each_attempt(void **state) {
  (void)state;
  kc_client_set_fence(client, test_fence, NULL);
  struct done d;
  json_t *cm = json_pack("{s:{s:s}}", "metadata", "name", "always429");
  fence_opens = 2;
  run_call(KC_UPDATE, "t", "always429", NULL, cm, &d);
  assert_int_equal(d.err, KC_ENOTLEADER);
  assert_int_equal(d.attempts, 2);
  assert_int_equal(hits(R429X), 2); /* the third attempt, after Retry-After, was not sent */
  fence_opens = 0;
  run_call(KC_CREATE, "t", NULL, NULL, cm, &d);
  assert_int_equal(d.err, KC_ENOTLEADER);
  assert_int_equal(d.attempts, 0);
  run_call(KC_GET, "t", "missing", NULL, NULL, &d); /* reads pass */
  assert_int_equal(d.err, KC_ENOTFOUND);
  json_decref(d.obj);
  kc_query own = {.leader_election = true};
  run_call(KC_DELETE, "t", "deleteme", &own, NULL, &d);
  assert_int_equal(d.err, 0);
  json_decref(d.obj);
  json_decref(cm);
  kc_client_set_fence(client, NULL, NULL);
}

/* The leader election's requests do not wait behind the others in the token bucket: a
 * controller busy at a low --kube-api-qps must still renew its lease in time. */
static void test_leader_election_skips_bucket(void **state) {
  (void)state;
  free_client();
  next_qps = 1;
  new_client(server_url, 10);
  struct done d;
  run_call(KC_GET, "t", "missing", NULL, NULL, &d); /* takes the one token */
  json_decref(d.obj);
  kc_query own = {.leader_election = true};
  uint64_t t0 = uv_hrtime();
  run_call(KC_GET, "t", "missing", &own, NULL, &d);
  json_decref(d.obj);
  double took = (double)(uv_hrtime() - t0) / 1e9;
  assert_true(took < 0.5);
  t0 = uv_hrtime();
  run_call(KC_GET, "t", "missing", NULL, NULL, &d);
  json_decref(d.obj);
  took = (double)(uv_hrtime() - t0) / 1e9;
  assert_true(took >= 0.5); /* the bucket refills at 1/s */
  free_client();
  next_qps = 0;
  new_client(server_url, 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_429_waits_for_retry_after),
      cmocka_unit_test(test_5xx_retried_for_idempotent_get),
      cmocka_unit_test(test_5xx_not_retried_for_create),
      cmocka_unit_test(test_status_error_not_retried),
      cmocka_unit_test(test_discard_body),
      cmocka_unit_test(test_timeout_is_per_call_and_final),
      cmocka_unit_test(test_retries_are_bounded),
      cmocka_unit_test(test_connection_refused),
      cmocka_unit_test(test_delete_options_and_apply),
      cmocka_unit_test(test_update_retry_on_conflict),
      cmocka_unit_test(test_body_cap),
      cmocka_unit_test(test_streaming_and_cancel),
      cmocka_unit_test(test_close_cancels_pending_calls),
      cmocka_unit_test(test_silent_connection_is_closed),
      cmocka_unit_test(test_fence_checked_at_each_attempt),
      cmocka_unit_test(test_leader_election_skips_bucket),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
