#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <uv.h>

#include "kc_error.h"
#include "kc_httpd.h"
#include "kc_metrics.h"

static void test_parse_address(void **state) {
  (void)state;
  char host[64];
  int port;
  assert_int_equal(kc_httpd_parse_address(":11251", host, sizeof(host), &port), 0);
  assert_string_equal(host, "");
  assert_int_equal(port, 11251);
  assert_int_equal(kc_httpd_parse_address("127.0.0.1:8080", host, sizeof(host), &port), 0);
  assert_string_equal(host, "127.0.0.1");
  assert_int_equal(port, 8080);
  assert_int_equal(kc_httpd_parse_address("[::1]:0", host, sizeof(host), &port), 0);
  assert_string_equal(host, "::1");
  assert_int_equal(port, 0);
  assert_int_equal(kc_httpd_parse_address("localhost:65535", host, sizeof(host), &port), 0);
  assert_string_equal(host, "localhost");
  static const char *const bad[] = {"8080",    ":",     ":65536", ":80a", "::1:80",
                                    "[::1:80", "[]:80", ":-1",    ":+80", "host:123456"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_int_equal(kc_httpd_parse_address(bad[i], host, sizeof(host), &port), KC_EINVAL);
  assert_int_equal(kc_httpd_parse_address("averyveryverylonghostname:80", host, 8, &port),
                   KC_EINVAL);
}

/* ---- a server on the loop, a curl client on a thread ---- */

typedef struct {
  const char *method; /* NULL: GET */
  const char *path;
  int set_ready; /* before the request: -1 leave, 0/1 set */
  bool big_header;
  long status;
  char body[4096];
  size_t body_len;
  char ctype[128];
  char allow[64];
} fetch;

typedef struct {
  int port;
  fetch *fetches;
  size_t n;
  uv_async_t done;
  kc_httpd *h;
  int curl_failures;
} client;

static atomic_int ready_flag;

static int ready_check(void *ud, char *reason, size_t cap) {
  (void)ud;
  if (atomic_load(&ready_flag))
    return 0;
  snprintf(reason, cap, "caches not synced");
  return 1;
}

static int leader_ok(void *ud, char *reason, size_t cap) {
  (void)ud;
  (void)reason;
  (void)cap;
  return 0;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  fetch *f = ud;
  size_t len = sz * n;
  size_t room = sizeof(f->body) - 1 - f->body_len;
  size_t take = len < room ? len : room;
  memcpy(f->body + f->body_len, p, take);
  f->body_len += take;
  f->body[f->body_len] = '\0';
  return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  fetch *f = ud;
  size_t len = sz * n;
  if (len > 7 && strncasecmp(p, "Allow: ", 7) == 0)
    snprintf(f->allow, sizeof(f->allow), "%.*s", (int)(len - 9), p + 7);
  return len;
}

static void client_thread(void *arg) {
  client *cl = arg;
  CURL *e = curl_easy_init();
  for (size_t i = 0; e && i < cl->n; i++) {
    fetch *f = &cl->fetches[i];
    if (f->set_ready >= 0)
      atomic_store(&ready_flag, f->set_ready);
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", cl->port, f->path);
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, f);
    if (f->method && strcmp(f->method, "HEAD") == 0)
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    else if (f->method)
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, f->method);
    struct curl_slist *hdrs = NULL;
    char *big = NULL;
    if (f->big_header) {
      big = malloc(40000);
      memcpy(big, "X-Big: ", 7);
      memset(big + 7, 'a', 40000 - 8);
      big[40000 - 1] = '\0';
      hdrs = curl_slist_append(hdrs, big);
      curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    }
    if (curl_easy_perform(e) != CURLE_OK)
      cl->curl_failures++;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &f->status);
    char *ct = NULL;
    curl_easy_getinfo(e, CURLINFO_CONTENT_TYPE, &ct);
    if (ct)
      snprintf(f->ctype, sizeof(f->ctype), "%s", ct);
    curl_slist_free_all(hdrs);
    free(big);
  }
  curl_easy_cleanup(e);
  uv_async_send(&cl->done);
}

static void on_client_done(uv_async_t *a) {
  client *cl = a->data;
  kc_httpd_free(cl->h);
  cl->h = NULL;
  uv_close((uv_handle_t *)a, NULL);
}

/* A second server on the same port, an address that does not resolve, one without a port:
 * each a clear error naming the address, no crash. */
static void check_bind_errors(uv_loop_t *loop, int port) {
  /* The same port again. */
  char addr[64];
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
  kc_httpd_opts o2 = {.address = addr};
  kc_httpd *h2;
  assert_int_equal(kc_httpd_new(loop, &o2, &h2), 0);
  assert_int_equal(kc_httpd_start(h2), KC_EADDRINUSE);
  char want_err[128];
  snprintf(want_err, sizeof(want_err), "listen %s: address already in use", addr);
  assert_string_equal(kc_httpd_errmsg(h2), want_err);
  kc_httpd_free(h2);
  kc_httpd_opts o3 = {.address = "no-such-host.invalid:0"};
  assert_int_equal(kc_httpd_new(loop, &o3, &h2), 0);
  assert_int_equal(kc_httpd_start(h2), KC_EINVAL);
  assert_non_null(strstr(kc_httpd_errmsg(h2), "no-such-host.invalid:0"));
  kc_httpd_free(h2);
  kc_httpd_opts o4 = {.address = "nohost"};
  assert_int_equal(kc_httpd_new(loop, &o4, &h2), KC_EINVAL);
}

/* What test_endpoints fetched before the server was ready (f[0..5]). */
static void check_not_ready(const fetch *f) {
  /* healthz and livez are fine, readyz is 503 with reason. */
  assert_int_equal(f[0].status, 503); /* healthz includes readiness */
  assert_int_equal(f[1].status, 200);
  assert_string_equal(f[1].body, "ok");
  assert_string_equal(f[1].ctype, "text/plain; charset=utf-8");
  assert_int_equal(f[2].status, 503);
  /* Checks are listed in the order they were added. */
  assert_string_equal(f[2].body, "[+]ping ok\n"
                                 "[-]informer-sync failed: caches not synced\n"
                                 "[+]leader ok\n"
                                 "readyz check failed\n");
  assert_int_equal(f[3].status, 503);
  assert_string_equal(f[3].body, f[2].body);
  assert_int_equal(f[4].status, 503);
  assert_non_null(strstr(f[4].body, "healthz check failed\n"));
  assert_int_equal(f[5].status, 200);
  assert_string_equal(f[5].body, "ok");
}

/* ... and once ready (f[6..16]). */
static void check_ready(const fetch *f) {
  /* Ready. */
  assert_int_equal(f[6].status, 200);
  assert_string_equal(f[6].body, "ok");
  assert_int_equal(f[7].status, 200);
  assert_string_equal(f[7].body, "[+]ping ok\n"
                                 "[+]informer-sync ok\n"
                                 "[+]leader ok\n"
                                 "readyz check passed\n");
  assert_int_equal(f[8].status, 200);
  assert_int_equal(f[9].status, 404);
  /* Metrics. */
  assert_int_equal(f[10].status, 200);
  assert_string_equal(f[10].ctype, "text/plain; version=0.0.4; charset=utf-8");
  assert_string_equal(f[10].body, "# HELP kiln_test_total A test counter.\n"
                                  "# TYPE kiln_test_total counter\n"
                                  "kiln_test_total 3\n");
  assert_int_equal(f[11].status, 404);
  assert_int_equal(f[12].status, 405);
  assert_string_equal(f[12].allow, "GET, HEAD");
  assert_int_equal(f[13].status, 405);
  assert_int_equal(f[14].status, 200);
  assert_int_equal(f[14].body_len, 0);
  /* Oversized request headers are refused, and the server keeps serving. */
  assert_int_equal(f[15].status, 431);
  assert_int_equal(f[16].status, 200);
  assert_string_equal(f[16].body, "[+]ping ok\n[+]leader ok\nlivez check passed\n");
}

static void test_endpoints(void **state) {
  (void)state;
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  kc_metrics *reg;
  assert_int_equal(kc_metrics_new(&reg), 0);
  kc_metric *m;
  assert_int_equal(kc_metrics_counter(reg, "kiln_test_total", "A test counter.", NULL, &m), 0);
  kc_series *s;
  assert_int_equal(kc_metric_series(m, NULL, &s), 0);
  kc_counter_add(s, 3);

  kc_httpd_opts o = {.address = "127.0.0.1:0", .metrics = reg, .ready = ready_check};
  kc_httpd *h;
  assert_int_equal(kc_httpd_new(&loop, &o, &h), 0);
  assert_int_equal(kc_httpd_add_check(h, "ping", KC_CHECK_LIVEZ, leader_ok, NULL), KC_EEXISTS);
  assert_int_equal(kc_httpd_add_check(h, "leader", KC_CHECK_LIVEZ, leader_ok, NULL), 0);
  assert_int_equal(kc_httpd_add_check(h, "bad/name", KC_CHECK_LIVEZ, leader_ok, NULL), KC_EINVAL);
  assert_int_equal(kc_httpd_port(h), -1);
  assert_int_equal(kc_httpd_start(h), 0);
  int port = kc_httpd_port(h);
  assert_true(port > 0);

  check_bind_errors(&loop, port);

  fetch f[] = {
      {.path = "/healthz", .set_ready = 0},
      {.path = "/livez", .set_ready = -1},
      {.path = "/readyz", .set_ready = -1},
      {.path = "/readyz?verbose", .set_ready = -1},
      {.path = "/healthz", .set_ready = -1},
      {.path = "/readyz?exclude=informer-sync", .set_ready = -1},
      {.path = "/readyz", .set_ready = 1},
      {.path = "/readyz?verbose", .set_ready = -1},
      {.path = "/readyz/informer-sync", .set_ready = -1},
      {.path = "/readyz/nope", .set_ready = -1},
      {.path = "/metrics", .set_ready = -1},
      {.path = "/nope", .set_ready = -1},
      {.method = "POST", .path = "/healthz", .set_ready = -1},
      {.method = "DELETE", .path = "/metrics", .set_ready = -1},
      {.method = "HEAD", .path = "/livez", .set_ready = -1},
      {.path = "/livez", .set_ready = -1, .big_header = true},
      {.path = "/livez?verbose=1", .set_ready = -1},
  };
  client cl = {.port = port, .fetches = f, .n = sizeof(f) / sizeof(f[0]), .h = h};
  assert_int_equal(uv_async_init(&loop, &cl.done, on_client_done), 0);
  cl.done.data = &cl;
  uv_thread_t tid;
  assert_int_equal(uv_thread_create(&tid, client_thread, &cl), 0);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_thread_join(&tid), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
  kc_metrics_free(reg);

  check_not_ready(f);
  check_ready(f);
}

/* ---- one client cannot hold every connection ---- */

typedef struct {
  int port;
  uv_async_t done;
  kc_httpd *h;
  long held_out, other_ip, after_close; /* HTTP status of each request; 0: no response */
  int held;                             /* raw connections opened from 127.0.0.1 */
} limit_client;

static long get_livez(int port, const char *from) {
  CURL *e = curl_easy_init();
  char url[64];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/livez", port);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_TIMEOUT, 5L);
  curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  if (from)
    curl_easy_setopt(e, CURLOPT_INTERFACE, from);
  long status = 0;
  if (curl_easy_perform(e) == CURLE_OK)
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(e);
  return status;
}

static void limit_thread(void *arg) {
  limit_client *cl = arg;
  int fds[8];
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cl->port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  /* A client that opens connections and sends nothing on them, as many as it is allowed. */
  for (cl->held = 0; cl->held < 8; cl->held++) {
    fds[cl->held] = socket(AF_INET, SOCK_STREAM, 0);
    if (fds[cl->held] < 0 || connect(fds[cl->held], (struct sockaddr *)&sa, sizeof(sa)) != 0)
      break;
  }
  uv_sleep(200); /* accepted by the server's loop */
  cl->held_out = get_livez(cl->port, "127.0.0.1");
  /* Another address (the kubelet's, Prometheus') is still served. */
  cl->other_ip = get_livez(cl->port, "127.0.0.2");
  for (int i = 0; i < cl->held; i++)
    close(fds[i]);
  /* Once the idle connections are gone, the first client is served again. */
  for (int i = 0; i < 50 && (cl->after_close = get_livez(cl->port, "127.0.0.1")) != 200; i++)
    uv_sleep(50);
  uv_async_send(&cl->done);
}

static void on_limit_done(uv_async_t *a) {
  limit_client *cl = a->data;
  kc_httpd_free(cl->h);
  cl->h = NULL;
  uv_close((uv_handle_t *)a, NULL);
}

static void test_per_client_limit(void **state) {
  (void)state;
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  kc_httpd_opts o = {.address = "127.0.0.1:0"}; /* the defaults: 8 per address, 64 in all */
  kc_httpd *h;
  assert_int_equal(kc_httpd_new(&loop, &o, &h), 0);
  assert_int_equal(kc_httpd_start(h), 0);
  limit_client cl = {.port = kc_httpd_port(h), .h = h};
  assert_int_equal(uv_async_init(&loop, &cl.done, on_limit_done), 0);
  cl.done.data = &cl;
  uv_thread_t tid;
  assert_int_equal(uv_thread_create(&tid, limit_thread, &cl), 0);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_thread_join(&tid), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_int_equal(cl.held, 8);
  assert_int_equal(cl.held_out, 0); /* the ninth connection from 127.0.0.1 is closed */
  assert_int_equal(cl.other_ip, 200);
  assert_int_equal(cl.after_close, 200);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_address),
      cmocka_unit_test(test_endpoints),
      cmocka_unit_test(test_per_client_limit),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  curl_global_cleanup();
  return rc;
}
