/* kc_app: the start-up and stop both Kiln programs share, without an API server (the client
 * is made but never called: no elector here; leadership is covered by the e2e suites). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "kc_app.h"
#include "kc_container.h"
#include "kc_error.h"

static char kubeconfig[256];

/* The program around the app: counts the hook calls; drains for drain_ms before it reports
 * the stop (0: at once, from the hook; -1: never). */
typedef struct {
  kc_app app;
  int stops;
  int last_signum;
  int drain_ms;
  uv_timer_t drain;
  uv_timer_t kick; /* what the test does once the loop runs */
  int kicks;
  bool drained;
  bool client_while_draining; /* the shared parts were still there when the drain ended */
} prog;

static void drained(uv_timer_t *t) {
  prog *p = t->data;
  p->drained = true;
  p->client_while_draining = p->app.client != NULL && p->app.events != NULL;
  kc_app_stopped(&p->app);
}

static void on_stop(kc_app *a, int signum) {
  prog *p = container_of(a, prog, app);
  p->stops++;
  p->last_signum = signum;
  if (p->drain_ms == 0) {
    kc_app_stopped(a);
  } else if (p->drain_ms > 0) {
    uv_timer_start(&p->drain, drained, (uint64_t)p->drain_ms, 0);
  }
}

static const kc_app_hooks hooks = {.stop = on_stop};

static int always_ready(void *ud, char *reason, size_t cap) {
  return 0;
}

static void open_prog(prog *p, int drain_ms) {
  memset(p, 0, sizeof(*p));
  p->drain_ms = drain_ms;
  assert_int_equal(kc_app_init(&p->app, &hooks, kubeconfig, NULL), 0);
  kc_client_options copt = KC_CLIENT_OPTIONS_INIT(5, 10);
  assert_int_equal(kc_app_open(&p->app, &copt, "test"), 0);
  assert_non_null(p->app.client);
  assert_non_null(p->app.metrics);
  assert_non_null(p->app.events);
  assert_null(p->app.leader);
  uv_timer_init(&p->app.loop, &p->drain);
  uv_timer_init(&p->app.loop, &p->kick);
  p->drain.data = p->kick.data = p;
}

/* Runs the app to its end; the program's own timers close with it. */
static int run_prog(prog *p) {
  int code = kc_app_run(&p->app);
  uv_close((uv_handle_t *)&p->drain, NULL);
  uv_close((uv_handle_t *)&p->kick, NULL);
  assert_int_equal(kc_app_close(&p->app), 0);
  return code;
}

static void test_bad_kubeconfig(void **state) {
  kc_app a;
  int rc = kc_app_init(&a, &hooks, "/nonexistent/kubeconfig", NULL);
  assert_int_not_equal(rc, 0);
  /* Nothing was left open: the same memory initializes again. */
  assert_int_equal(kc_app_init(&a, &hooks, kubeconfig, NULL), 0);
  assert_int_equal(kc_app_close(&a), 0);
}

static void test_close_without_run(void **state) {
  prog p;
  open_prog(&p, 0);
  kc_httpd *h;
  assert_int_equal(kc_app_serve(&p.app, "127.0.0.1:0", true, always_ready, NULL, &h), 0);
  assert_non_null(h);
  assert_true(kc_httpd_port(h) > 0);
  uv_close((uv_handle_t *)&p.drain, NULL);
  uv_close((uv_handle_t *)&p.kick, NULL);
  /* A setup failure: the program never ran; close frees everything, no hook is called. */
  assert_int_equal(kc_app_close(&p.app), 0);
  assert_int_equal(p.stops, 0);
}

static void test_serve(void **state) {
  prog p;
  open_prog(&p, 0);
  kc_httpd *h1, *h2, *h3;
  assert_int_equal(kc_app_serve(&p.app, "127.0.0.1:0", true, always_ready, NULL, &h1), 0);
  int port = kc_httpd_port(h1);
  char taken[64];
  snprintf(taken, sizeof(taken), "127.0.0.1:%d", port);
  /* The port in use: the server exists, so its message says why. */
  assert_int_equal(kc_app_serve(&p.app, taken, false, always_ready, NULL, &h2), KC_EADDRINUSE);
  assert_non_null(h2);
  assert_non_null(strstr(kc_httpd_errmsg(h2), "in use"));
  /* No room for a third; a bad address makes no server. */
  assert_int_equal(kc_app_serve(&p.app, "127.0.0.1:0", false, always_ready, NULL, &h3), KC_ENOMEM);
  assert_null(h3);
  kc_app_stop(&p.app, 1);
  assert_int_equal(run_prog(&p), 1);
  assert_int_equal(p.stops, 1);
}

static void test_bad_address(void **state) {
  prog p;
  open_prog(&p, 0);
  kc_httpd *h;
  assert_int_equal(kc_app_serve(&p.app, "nope", false, always_ready, NULL, &h), KC_EINVAL);
  assert_null(h);
  kc_app_stop(&p.app, 1);
  assert_int_equal(run_prog(&p), 1);
}

static void stop_twice(uv_timer_t *t) {
  prog *p = t->data;
  kc_app_stop(&p->app, 1);
  kc_app_stop(&p->app, 0); /* ignored: the stop has begun */
}

static void test_stop_drains(void **state) {
  prog p;
  open_prog(&p, 50);
  assert_int_equal(kc_app_start(&p.app), 0);
  uv_timer_start(&p.kick, stop_twice, 0, 0);
  uint64_t t0 = uv_hrtime();
  /* The loop runs until the program reports the drain done, and no longer. */
  assert_int_equal(run_prog(&p), 1);
  assert_true(p.drained);
  assert_true(p.client_while_draining);
  assert_true(uv_hrtime() - t0 >= 40 * 1000000ull);
  assert_int_equal(p.stops, 1);
  assert_int_equal(p.last_signum, 0);
  assert_null(p.app.client);
  assert_null(p.app.events);
  assert_null(p.app.metrics);
}

static void send_term(uv_timer_t *t) {
  assert_int_equal(uv_kill(uv_os_getpid(), SIGTERM), 0);
}

static void test_signal_stops(void **state) {
  prog p;
  open_prog(&p, 0);
  assert_int_equal(kc_app_start(&p.app), 0);
  uv_timer_start(&p.kick, send_term, 0, 0);
  assert_int_equal(run_prog(&p), 0);
  assert_int_equal(p.stops, 1);
  assert_int_equal(p.last_signum, SIGTERM);
}

static void send_int_twice(uv_timer_t *t) {
  prog *p = t->data;
  p->kicks++;
  uv_kill(uv_os_getpid(), SIGINT);
}

/* A program that never finishes its drain; a second signal ends the process with status 1. */
static void test_second_signal_exits(void **state) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(10); /* a child that does not exit fails the test instead of hanging it */
    prog p;
    open_prog(&p, -1);
    kc_app_start(&p.app);
    uv_timer_start(&p.kick, send_int_twice, 0, 50);
    kc_app_run(&p.app);
    _exit(p.stops == 1 ? 42 : 43); /* not reached when the second signal exits */
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 1);
}

int main(void) {
  char dir[] = "/tmp/kc_app_test.XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", dir);
  FILE *f = fopen(kubeconfig, "w");
  if (!f)
    return 1;
  fputs("apiVersion: v1\nkind: Config\n"
        "clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\n"
        "users:\n- name: u\n  user:\n    token: t\n"
        "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
        "current-context: x\n",
        f);
  fclose(f);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_kubeconfig),
      cmocka_unit_test(test_close_without_run),
      cmocka_unit_test(test_serve),
      cmocka_unit_test(test_bad_address),
      cmocka_unit_test(test_stop_drains),
      cmocka_unit_test(test_signal_stops),
      cmocka_unit_test(test_second_signal_exits),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  unlink(kubeconfig);
  rmdir(dir);
  return rc;
}
