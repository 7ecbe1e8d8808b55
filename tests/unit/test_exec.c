/* Credential plugins (kc_exec) and how the transport uses them: the ExecCredential parser
 * and its errors, KUBERNETES_EXEC_INFO, running real scripts (arguments, environment, exit
 * codes, a missing command with its install hint, a hung plugin killed at the timeout, output
 * caps, cancel), and kc_http against a local server: one plugin run for many requests, the
 * credential cached until it expires, run again on a 401. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "kc_api.h"
#include "kc_codec.h"
#include "kc_config.h"
#include "kc_error.h"
#include "kc_exec.h"
#include "kc_http.h"

#define V1      "client.authentication.k8s.io/v1"
#define V1BETA1 "client.authentication.k8s.io/v1beta1"
#define PEM_C   "-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n"
#define PEM_K   "-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n"

static char dir[] = "/tmp/kc-exec-XXXXXX";

static void write_file(const char *name, const char *content, int mode) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(content, f);
  fclose(f);
  chmod(path, (mode_t)mode);
}

static char *read_back(const char *name) {
  static char buf[4096];
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void remove_file(const char *name) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  unlink(path);
}

/* ---- the parser ---- */

static void test_parse_output(void **state) {
  (void)state;
  kc_exec_config x = {.api_version = V1};
  kc_exec_cred c;
  char err[256];
  const char *ok = "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{"
                   "\"token\":\"abc\",\"expirationTimestamp\":\"2030-01-02T03:04:05Z\"}}";
  assert_int_equal(kc_exec_parse(&x, ok, strlen(ok), &c, err, sizeof(err)), 0);
  assert_string_equal(c.token, "abc");
  assert_null(c.cert);
  assert_int_equal(c.expiry_ms, 1893553445000LL);
  assert_false(kc_exec_cred_expired(&c, 1893553445000LL));
  assert_true(kc_exec_cred_expired(&c, 1893553445001LL));
  kc_exec_cred_close(&c);
  assert_null(c.token);

  const char *pair = "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"spec\":{},"
                     "\"status\":{\"clientCertificateData\":\"" PEM_C "\","
                     "\"clientKeyData\":\"" PEM_K "\"}}";
  assert_int_equal(kc_exec_parse(&x, pair, strlen(pair), &c, err, sizeof(err)), 0);
  assert_null(c.token);
  assert_non_null(strstr(c.cert, "BEGIN CERTIFICATE"));
  assert_int_equal(c.cert_len, strlen(c.cert));
  assert_non_null(strstr(c.key, "BEGIN PRIVATE KEY"));
  assert_int_equal(c.expiry_ms, 0); /* no expiry: cached until a 401 */
  assert_false(kc_exec_cred_expired(&c, INT64_MAX));
  kc_exec_cred_close(&c);

  static const struct {
    const char *api, *out;
    int code;
    const char *want;
  } bad[] = {
      {V1, "", KC_EPARSE, "decoding stdout: line"},
      {V1, "token: abc", KC_EPARSE, "decoding stdout"},
      {V1, "[1]", KC_EPARSE, "decoding stdout: not a JSON object"},
      {V1, "{\"apiVersion\":\"" V1 "\",\"status\":{\"token\":\"a\"}}", KC_EPARSE,
       "decoding stdout: kind is \"\", want ExecCredential"},
      {V1, "{\"apiVersion\":\"" V1BETA1 "\",\"kind\":\"ExecCredential\",\"status\":{}}", KC_EINVAL,
       "exec plugin is configured to use API version " V1 ", plugin returned version " V1BETA1},
      {V1BETA1, "{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"a\"}}", KC_EINVAL,
       "plugin returned version (none)"},
      {V1, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\"}", KC_EINVAL,
       "exec plugin didn't return a status field"},
      {V1, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":[]}", KC_EPARSE,
       "decoding stdout: status: not an object"},
      {V1, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"\"}}",
       KC_EINVAL, "exec plugin didn't return a token or cert/key pair"},
      {V1, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":7}}",
       KC_EPARSE, "decoding stdout: status.token: not a string"},
      {V1,
       "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{"
       "\"clientCertificateData\":\"" PEM_C "\"}}",
       KC_EINVAL, "exec plugin returned only certificate or key, not both"},
      {V1,
       "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{"
       "\"clientCertificateData\":\"TUlJQg==\",\"clientKeyData\":\"" PEM_K "\"}}",
       KC_EINVAL, "status.clientCertificateData is not PEM"},
      {V1,
       "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{"
       "\"token\":\"a\",\"expirationTimestamp\":\"tomorrow\"}}",
       KC_EPARSE, "status.expirationTimestamp: \"tomorrow\" is not an RFC 3339 time"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    x.api_version = (char *)bad[i].api;
    err[0] = '\0';
    int rc = kc_exec_parse(&x, bad[i].out, strlen(bad[i].out), &c, err, sizeof(err));
    if (rc != bad[i].code || !strstr(err, bad[i].want))
      fail_msg("case %zu: got %s \"%s\", want %s containing \"%s\"", i, kc_err_name(rc), err,
               kc_err_name(bad[i].code), bad[i].want);
    assert_null(c.token);
    assert_null(c.cert);
  }
}

static void test_rfc3339(void **state) {
  (void)state;
  int64_t ms;
  assert_int_equal(kc_rfc3339_parse("1970-01-01T00:00:00Z", &ms), 0);
  assert_int_equal(ms, 0);
  assert_int_equal(kc_rfc3339_parse("2024-02-29T12:00:00.25Z", &ms), 0);
  assert_int_equal(ms, 1709208000250LL);
  assert_int_equal(kc_rfc3339_parse("2024-02-29T13:30:00.250999+01:30", &ms), 0);
  assert_int_equal(ms, 1709208000250LL);
  assert_int_equal(kc_rfc3339_parse("2024-02-29T10:00:00-02:00", &ms), 0);
  assert_int_equal(ms, 1709208000000LL);
  static const char *const bad[] = {
      "",
      "2024-02-29",
      "2024-02-29 12:00:00Z",
      "2023-02-29T12:00:00Z",
      "2024-13-01T00:00:00Z",
      "2024-01-01T24:00:00Z",
      "2024-01-01T00:00:00",
      "2024-01-01T00:00:00.Z",
      "2024-01-01T00:00:00+0100",
      "2024-01-01T00:00:00Zjunk",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    if (kc_rfc3339_parse(bad[i], &ms) != KC_EPARSE)
      fail_msg("\"%s\" was accepted", bad[i]);
}

static void test_exec_info(void **state) {
  (void)state;
  kc_exec_config x = {.api_version = V1};
  kc_config c = {.server = "https://127.0.0.1:6443", .exec = &x};
  char *info;
  assert_int_equal(kc_exec_info(&c, &info), 0);
  assert_string_equal(info, "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
                            "\",\"spec\":{\"interactive\":false}}");
  free(info);
  /* provideClusterInfo: the cluster as the plugin would find it in a kubeconfig. */
  x.provide_cluster_info = true;
  c.tls_server_name = "kubernetes";
  c.proxy_url = "http://p:3128";
  c.ca.data = "ca!";
  c.ca.len = 3;
  assert_int_equal(kc_exec_info(&c, &info), 0);
  assert_string_equal(info, "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
                            "\",\"spec\":{\"interactive\":false,\"cluster\":{"
                            "\"server\":\"https://127.0.0.1:6443\",\"tls-server-name\":"
                            "\"kubernetes\",\"certificate-authority-data\":\"Y2Eh\","
                            "\"proxy-url\":\"http://p:3128\"}}}");
  free(info);
}

/* ---- running plugins ---- */

static uv_loop_t loop;

struct result {
  bool called;
  int rc;
  char token[128];
  int64_t expiry_ms;
  char msg[1024];
};

static void on_result(int rc, kc_exec_cred *cred, const char *msg, void *data) {
  struct result *r = data;
  r->called = true;
  r->rc = rc;
  snprintf(r->msg, sizeof(r->msg), "%s", msg);
  if (cred && cred->token)
    snprintf(r->token, sizeof(r->token), "%s", cred->token);
  if (cred)
    r->expiry_ms = cred->expiry_ms;
}

/* A config whose user runs dir/<script> with args a1 "two words" and REGION=eu. */
static void exec_config(kc_config *c, const char *server, const char *script, const char *mode) {
  char yaml[2048], err[256] = "";
  snprintf(yaml, sizeof(yaml),
           "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
           "clusters:\n- name: c\n  cluster: {server: '%s'}\n"
           "users:\n- name: u\n  user:\n    exec:\n      apiVersion: " V1 "\n"
           "      command: ./%s\n      args: [a1, two words]\n"
           "      env: [{name: REGION, value: eu}, {name: HOME, value: /plugin-home}]\n"
           "      installHint: 'get it from https://example.com/plugin'\n"
           "      interactiveMode: %s\n",
           server, script, mode);
  int rc = kc_config_parse_kubeconfig(c, yaml, strlen(yaml), dir, NULL, NULL, err, sizeof(err));
  if (rc)
    fail_msg("%s", err);
}

static struct result run(kc_config *c) {
  struct result r = {0};
  kc_exec_run *run;
  assert_int_equal(kc_exec_start(&loop, c, on_result, &r, &run), 0);
  assert_false(r.called); /* never from inside kc_exec_start */
  while (!r.called)
    uv_run(&loop, UV_RUN_ONCE);
  return r;
}

#define PLUGIN                                                                                     \
  "#!/bin/sh\n"                                                                                    \
  "d=$(dirname \"$0\")\n"                                                                          \
  "[ -e \"$d/fail\" ] && { echo 'plugin: told to fail' >&2; exit 3; }\n"                           \
  "n=$(( $(cat \"$d/count\" 2>/dev/null || echo 0) + 1 ))\n"                                       \
  "echo $n > \"$d/count\"\n"                                                                       \
  "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$d/info\"\n"                                          \
  "printf '%s|' \"$@\" \"$REGION\" \"$HOME\" > \"$d/args\"\n"                                      \
  "exp=$(cat \"$d/exp\" 2>/dev/null)\n"                                                            \
  "printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":"                     \
  "{\"token\":\"tok-%s\"%s}}\\n' \"$n\" \"${exp:+,\\\"expirationTimestamp\\\":\\\"$exp\\\"}\"\n"

static void test_run_plugin(void **state) {
  (void)state;
  kc_config c;
  write_file("plugin", PLUGIN, 0755);
  write_file("exp", "2030-01-02T03:04:05Z", 0644);
  exec_config(&c, "https://h:1", "plugin", "IfAvailable");
  struct result r = run(&c);
  assert_int_equal(r.rc, 0);
  assert_string_equal(r.token, "tok-1");
  assert_int_equal(r.expiry_ms, 1893553445000LL);
  /* Arguments and env as configured; the kubeconfig's env replaces an inherited name. */
  assert_string_equal(read_back("args"), "a1|two words|eu|/plugin-home|");
  assert_string_equal(read_back("info"), "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1
                                         "\",\"spec\":{\"interactive\":false}}");

  /* A failing plugin: its exit code, and its stderr went to ours. */
  write_file("fail", "", 0644);
  r = run(&c);
  assert_int_equal(r.rc, KC_EIO);
  assert_non_null(strstr(r.msg, "exec: executable "));
  assert_non_null(strstr(r.msg, "/plugin failed with exit code 3"));
  remove_file("fail");

  /* Output that is no ExecCredential. */
  write_file("plugin", "#!/bin/sh\necho hello\n", 0755);
  r = run(&c);
  assert_int_equal(r.rc, KC_EPARSE);
  assert_non_null(strstr(r.msg, "decoding stdout"));
  write_file("plugin",
             "#!/bin/sh\necho '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\"}'\n", 0755);
  r = run(&c);
  assert_int_equal(r.rc, KC_EINVAL);
  assert_string_equal(r.msg, "exec plugin didn't return a status field");
  /* Too much output is cut off, not buffered without end. */
  write_file("plugin", "#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' x\n", 0755);
  r = run(&c);
  assert_int_equal(r.rc, KC_ETOOBIG);
  /* Killed by a signal. */
  write_file("plugin", "#!/bin/sh\nkill -9 $$\n", 0755);
  r = run(&c);
  assert_int_equal(r.rc, KC_EIO);
  assert_non_null(strstr(r.msg, "killed by signal 9"));
  kc_config_close(&c);

  /* A command that is not there: the install hint is in the message. */
  exec_config(&c, "https://h:1", "not-installed", "Never");
  r = run(&c);
  assert_int_equal(r.rc, KC_ENOENT);
  assert_non_null(strstr(r.msg, "not-installed not found"));
  assert_non_null(strstr(r.msg, "get it from https://example.com/plugin"));
  kc_config_close(&c);
  /* Found but not executable. */
  write_file("noexec", "#!/bin/sh\n", 0644);
  exec_config(&c, "https://h:1", "noexec", "Never");
  r = run(&c);
  assert_int_equal(r.rc, KC_EIO);
  assert_non_null(strstr(r.msg, "cannot run"));
  kc_config_close(&c);
}

static void test_hung_plugin_times_out(void **state) {
  (void)state;
  kc_config c;
  /* The child it leaves behind holds stdout open too: the whole group is killed. */
  write_file("hang", "#!/bin/sh\nsleep 60 &\nsleep 60\n", 0755);
  exec_config(&c, "https://h:1", "hang", "Never");
  c.exec->timeout_ms = 300;
  uint64_t t0 = uv_hrtime();
  struct result r = run(&c);
  double s = (double)(uv_hrtime() - t0) / 1e9;
  assert_int_equal(r.rc, KC_ETIMEDOUT);
  assert_non_null(strstr(r.msg, "did not finish within 0.3 s and was killed"));
  assert_true(s >= 0.29 && s < 5);

  /* Cancel: no callback, and the loop ends cleanly once the child is reaped. */
  struct result never = {0};
  kc_exec_run *run_;
  assert_int_equal(kc_exec_start(&loop, &c, on_result, &never, &run_), 0);
  uv_run(&loop, UV_RUN_NOWAIT);
  kc_exec_cancel(run_);
  t0 = uv_hrtime();
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_false(never.called);
  assert_true((double)(uv_hrtime() - t0) / 1e9 < 5);
  kc_config_close(&c);
}

/* ---- through the transport ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char reject[64]; /* a token the server now refuses */
static char last_auth[128];
static int server_hits;

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **con_cls) {
  (void)cls, (void)url, (void)method, (void)version, (void)data, (void)size, (void)con_cls;
  const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
  pthread_mutex_lock(&mu);
  server_hits++;
  snprintf(last_auth, sizeof(last_auth), "%s", auth ? auth : "");
  bool ok = auth && strncmp(auth, "Bearer tok-", 11) == 0 && strcmp(auth + 7, reject) != 0;
  pthread_mutex_unlock(&mu);
  const char *body = ok ? "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{}}"
                        : "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                          "\"reason\":\"Unauthorized\",\"code\":401}";
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(conn, ok ? 200 : 401, r);
  MHD_destroy_response(r);
  return ret;
}

struct got {
  bool finished;
  int err;
  long status;
  int attempts;
  char detail[600];
};

static void raw_done(kc_http_req *req, const kc_http_result *res, void *data) {
  (void)req;
  struct got *g = data;
  g->finished = true;
  g->err = res->err;
  g->status = res->status;
  snprintf(g->detail, sizeof(g->detail), "%s", res->detail);
}

static void api_done(const kc_api_result *res, void *data) {
  struct got *g = data;
  g->finished = true;
  g->err = res->err;
  g->status = res->status;
  g->attempts = res->attempts;
  snprintf(g->detail, sizeof(g->detail), "%s", res->message);
}

static int runs(void) {
  char *s = read_back("count");
  return s ? (int)strtol(s, NULL, 10) : 0; /* a number this test wrote */
}

static void get_many(kc_http *h, int n, struct got *g) {
  kc_http_spec spec = {.method = "GET",
                       .path = "/api/v1/namespaces/t/configmaps/x",
                       .timeout_ms = 5000,
                       .on_done = raw_done};
  for (int i = 0; i < n; i++) {
    memset(&g[i], 0, sizeof(g[i]));
    spec.data = &g[i];
    assert_int_equal(kc_http_start(h, &spec, NULL), 0);
  }
  for (int i = 0; i < n; i++)
    while (!g[i].finished)
      uv_run(&loop, UV_RUN_ONCE);
}

static void set_reject(const char *tok) {
  pthread_mutex_lock(&mu);
  snprintf(reject, sizeof(reject), "%s", tok);
  pthread_mutex_unlock(&mu);
}

/* One GET of configmap t/x through kc_api (with its retries), run to its end. */
static void api_get(kc_client *client, struct got *a) {
  kc_ref ref = {NULL, "v1", "configmaps", "t", "x", NULL};
  memset(a, 0, sizeof(*a));
  assert_int_equal(kc_api_call(client, KC_GET, &ref, NULL, NULL, api_done, a), 0);
  while (!a->finished)
    uv_run(&loop, UV_RUN_ONCE);
}

/* Eight requests at once wait for one plugin run, then all carry its token; cached after. */
static void transport_first_run(kc_http *h) {
  struct got g[8];
  get_many(h, 8, g);
  for (int i = 0; i < 8; i++)
    if (g[i].err || g[i].status != 200)
      fail_msg("request %d: %s %ld %s", i, kc_err_name(g[i].err), g[i].status, g[i].detail);
  assert_int_equal(runs(), 1);
  assert_string_equal(last_auth, "Bearer tok-1");
  get_many(h, 3, g);
  assert_int_equal(runs(), 1);
}

static void transport_refresh_on_401(kc_client *client, kc_http *h) {
  struct got g[1], a;
  /* The server stops taking tok-1: the 401 runs the plugin once, kc_api's one retry carries
   * the new token. */
  set_reject("tok-1");
  api_get(client, &a);
  assert_int_equal(a.err, 0);
  assert_int_equal(a.attempts, 2);
  assert_int_equal(runs(), 2);
  assert_string_equal(last_auth, "Bearer tok-2");

  /* A 401 on a token the plugin keeps giving: one more run per 401, no loop. */
  set_reject("tok-3");
  write_file("plugin",
             "#!/bin/sh\necho 3 > \"$(dirname \"$0\")/count\"\n"
             "echo '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
             "\"status\":{\"token\":\"tok-3\"}}'\n",
             0755);
  get_many(h, 1, g); /* tok-2 is fine still */
  assert_int_equal(g[0].status, 200);
  set_reject("tok-2");
  api_get(client, &a);
  assert_int_equal(a.err, 0); /* tok-3 is accepted (reject moved to tok-2) */
  assert_int_equal(a.attempts, 2);
}

/* Expiry: a credential past its expirationTimestamp is not used again. */
static void transport_expiry(kc_http *h) {
  struct got g[2];
  set_reject("tok-3");
  get_many(h, 1, g);
  assert_int_equal(g[0].status, 401); /* drops tok-3 */
  set_reject("");
  write_file("plugin", PLUGIN, 0755);
  write_file("exp", "2001-01-01T00:00:00Z", 0644);
  write_file("count", "10\n", 0644);
  get_many(h, 1, g);
  assert_int_equal(g[0].status, 200);
  assert_int_equal(runs(), 11);
  get_many(h, 1, g);
  assert_int_equal(runs(), 12); /* tok-11 had expired: run again */
  assert_string_equal(last_auth, "Bearer tok-12");
  write_file("exp", "2999-01-01T00:00:00Z", 0644);
  get_many(h, 1, g);
  get_many(h, 2, g);
  assert_int_equal(runs(), 13); /* valid until 2999: cached */
}

/* A plugin that fails now fails the request with its message, and the next request runs it
 * again rather than keep a broken state. */
static void transport_plugin_fails(kc_client *client, kc_http *h) {
  struct got g[2], a;
  set_reject("tok-13");
  get_many(h, 1, g);
  assert_int_equal(g[0].status, 401); /* drops tok-13 */
  write_file("fail", "", 0644);
  get_many(h, 2, g);
  assert_int_equal(g[0].err, KC_EIO);
  assert_int_equal(g[1].err, KC_EIO);
  assert_non_null(strstr(g[0].detail, "getting credentials: exec: executable "));
  assert_non_null(strstr(g[0].detail, "failed with exit code 3"));
  /* kc_api does not retry it (max_retries is 3 here): one attempt, the plugin's error. */
  api_get(client, &a);
  assert_int_equal(a.err, KC_EIO);
  assert_int_equal(a.attempts, 1);
  assert_non_null(strstr(a.detail, "getting credentials: exec: executable"));
  remove_file("fail");
  int hits_before = server_hits;
  get_many(h, 1, g);
  assert_int_equal(g[0].status, 200);
  assert_int_equal(runs(), 14);
  assert_int_equal(server_hits, hits_before + 1);
}

/* Closing while requests wait for a hung plugin: they end as cancelled. Frees client. */
static void transport_close_while_waiting(kc_client *client, kc_http *h) {
  struct got g[1];
  write_file("plugin", "#!/bin/sh\nsleep 60\n", 0755);
  set_reject("tok-14");
  get_many(h, 1, g); /* 401: the credential is dropped */
  kc_http_spec spec = {.method = "GET",
                       .path = "/api/v1/namespaces/t/configmaps/x",
                       .on_done = raw_done,
                       .data = &g[0]};
  memset(&g[0], 0, sizeof(g[0]));
  assert_int_equal(kc_http_start(h, &spec, NULL), 0);
  uv_run(&loop, UV_RUN_NOWAIT);
  kc_client_free(client);
  assert_true(g[0].finished);
  assert_int_equal(g[0].err, KC_ECANCELED);
  uv_run(&loop, UV_RUN_DEFAULT);
}

static void test_transport_caches_and_refreshes(void **state) {
  (void)state;
  struct MHD_Daemon *d =
      MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                       NULL, handler, NULL, MHD_OPTION_END);
  assert_non_null(d);
  char url[64];
  snprintf(url, sizeof(url), "http://127.0.0.1:%u",
           (unsigned)MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port);
  write_file("plugin", PLUGIN, 0755);
  remove_file("count");
  write_file("exp", "", 0644); /* no expiry */
  kc_config c;
  exec_config(&c, url, "plugin", "Never");
  kc_client *client;
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(0, 0);
  opt.max_retries = 3;
  opt.timeout_ms = 5000;
  assert_int_equal(kc_client_new(&loop, &c, &opt, &client), 0);
  kc_http *h = kc_client_http(client);

  transport_first_run(h);
  transport_refresh_on_401(client, h);
  transport_expiry(h);
  transport_plugin_fails(client, h);
  transport_close_while_waiting(client, h);
  kc_config_close(&c);
  MHD_stop_daemon(d);
}

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(dir) || uv_loop_init(&loop))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  static const char *const names[] = {"plugin", "count", "info", "args",
                                      "exp",    "fail",  "hang", "noexec"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    remove_file(names[i]);
  rmdir(dir);
  return uv_loop_close(&loop) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_output),
      cmocka_unit_test(test_rfc3339),
      cmocka_unit_test(test_exec_info),
      cmocka_unit_test(test_run_plugin),
      cmocka_unit_test(test_hung_plugin_times_out),
      cmocka_unit_test(test_transport_caches_and_refreshes),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
