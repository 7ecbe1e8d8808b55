/* The start-up and the stop every Kiln program shares (see kc_app.h). */
#include "kc_app.h"

#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"

int kc_app_init(kc_app *a, const kc_app_hooks *hooks, const char *kubeconfig, const char *master) {
  memset(a, 0, sizeof(*a));
  a->hooks = hooks;
  int rc = uv_loop_init(&a->loop);
  if (rc != 0)
    return kc_err_from_uv(rc);
  /* Only before the loop first runs; without it the busy-time metrics count waits too. */
  a->idle_time = kc_loopwatch_configure(&a->loop) == 0;
  if (!a->idle_time)
    KC_WARN("the event loop cannot measure its idle time; its busy-time metrics are off");
  char err[512] = "";
  rc = kc_config_load(&a->cfg, kubeconfig, master, err, sizeof(err));
  if (rc) {
    KC_ERROR("cannot load the client configuration: %s", err);
    uv_loop_close(&a->loop);
    return rc;
  }
  /* The handles kc_app_stopped closes exist from here on, whatever fails later. */
  uv_signal_init(&a->loop, &a->sigterm);
  uv_signal_init(&a->loop, &a->sigint);
  uv_timer_init(&a->loop, &a->later);
  uv_timer_init(&a->loop, &a->trim);
  a->sigterm.data = a->sigint.data = a->later.data = a->trim.data = a;
  return 0;
}

int kc_app_open(kc_app *a, const kc_client_options *copt, const char *component) {
  int rc = kc_client_new(&a->loop, &a->cfg, copt, &a->client);
  if (rc == 0)
    rc = kc_metrics_new(&a->metrics);
  if (rc == 0)
    rc = kc_event_recorder_new(a->client, component, NULL, &a->events);
  if (rc == 0 && a->idle_time)
    rc = kc_loopwatch_new(&a->loop, a->metrics, &a->loopwatch);
  return rc;
}

static void begin_stop(kc_app *a, int code, int signum) {
  if (a->stopping)
    return;
  a->stopping = true;
  a->exit_code = code;
  a->hooks->stop(a, signum);
}

void kc_app_stop(kc_app *a, int code) {
  begin_stop(a, code, 0);
}

static void on_signal(uv_signal_t *h, int signum) {
  kc_app *a = h->data;
  if (a->stopping) {
    KC_WARN("second signal %d: exiting now", signum);
    exit(1);
  }
  begin_stop(a, 0, signum);
}

static void stop_later(uv_timer_t *t) {
  kc_app_stop(t->data, 1);
}

static void started_leading(void *ud) {
  kc_app *a = ud;
  if (!a->stopping && a->hooks->started_leading)
    a->hooks->started_leading(a);
}

static void stopped_leading(void *ud) {
  kc_app *a = ud;
  /* Volcano exits here: a new leader may already be writing. Writes are already fenced; the
   * elector is freed on the next turn of the loop, not from inside its own callback. */
  KC_ERROR("leader election lost; exiting");
  uv_timer_start(&a->later, stop_later, 0, 0);
}

static void new_leader(const char *identity, void *ud) {
  kc_app *a = ud;
  if (a->hooks->new_leader)
    a->hooks->new_leader(a, identity);
}

/* The client's write fence: writes go only while this replica holds the lease (and none once
 * the elector is gone). */
static int app_fence(void *ud) {
  const kc_app *a = ud;
  return kc_leader_fence(a->leader);
}

int kc_app_elect(kc_app *a, const kc_leader_options *lopt) {
  kc_leader_callbacks cb = {.on_started_leading = started_leading,
                            .on_stopped_leading = stopped_leading,
                            .on_new_leader = new_leader,
                            .ud = a};
  a->lopt = lopt;
  int rc = kc_leader_new(a->client, lopt, NULL, &cb, &a->leader);
  if (rc == 0)
    kc_client_set_fence(a->client, app_fence, a);
  return rc;
}

int kc_app_serve(kc_app *a, const char *address, bool with_metrics, kc_check_fn ready, void *ud,
                 kc_httpd **out) {
  *out = NULL;
  size_t i = 0;
  while (i < KC_APP_MAX_SERVERS && a->servers[i])
    i++;
  if (i == KC_APP_MAX_SERVERS)
    return KC_ENOMEM;
  kc_httpd_opts ho = {.address = address,
                      .metrics = with_metrics ? a->metrics : NULL,
                      .ready = ready,
                      .ready_ud = ud};
  int rc = kc_httpd_new(&a->loop, &ho, &a->servers[i]);
  if (rc)
    return rc;
  *out = a->servers[i];
  return kc_httpd_start(a->servers[i]);
}

/* Objects come and go (pods, sessions' snapshots, watch buffers): glibc's heap keeps the
 * pages of what was freed below its high water, and as new objects land elsewhere in it the
 * resident set creeps up to that high water although the bytes in use stay flat (the soak
 * measured 2.2 MB in use in a 9.4 MB heap). malloc_trim gives the free pages back. It walks
 * the free chunks: 5-7 ms of CPU for a contrived heap of 50,000 holes, far fewer here, so
 * every 10 s it stays a rounding error and a short stall of the loop. */
#define TRIM_PERIOD_MS 10000

static void trim_heap(uv_timer_t *t) {
  (void)t;
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

int kc_app_start(kc_app *a) {
  uv_signal_start(&a->sigterm, on_signal, SIGTERM);
  uv_signal_start(&a->sigint, on_signal, SIGINT);
  uv_timer_start(&a->trim, trim_heap, TRIM_PERIOD_MS, TRIM_PERIOD_MS);
  uv_unref((uv_handle_t *)&a->trim); /* never what keeps the loop running */
  if (!a->leader)
    return 0;
  const kc_leader_options *o = a->lopt;
  const char *ns = o->lock_object_namespace && *o->lock_object_namespace ? o->lock_object_namespace
                                                                         : o->resource_namespace;
  KC_INFO("leader election on lease %s/%s as %s", ns, o->resource_name,
          kc_leader_identity(a->leader));
  return kc_leader_start(a->leader);
}

void kc_app_stopped(kc_app *a) {
  if (a->released)
    return;
  a->released = true;
  kc_loopwatch_free(a->loopwatch);
  a->loopwatch = NULL;
  /* The elector and the recorder before their client; the client's calls end (cancelled). */
  kc_leader_free(a->leader);
  a->leader = NULL;
  kc_event_recorder_free(a->events);
  a->events = NULL;
  kc_client_free(a->client);
  a->client = NULL;
  for (size_t i = 0; i < KC_APP_MAX_SERVERS; i++) {
    kc_httpd_free(a->servers[i]);
    a->servers[i] = NULL;
  }
  uv_close((uv_handle_t *)&a->sigterm, NULL);
  uv_close((uv_handle_t *)&a->sigint, NULL);
  uv_close((uv_handle_t *)&a->later, NULL);
  uv_close((uv_handle_t *)&a->trim, NULL);
}

int kc_app_run(kc_app *a) {
  uv_run(&a->loop, UV_RUN_DEFAULT);
  return a->exit_code;
}

int kc_app_close(kc_app *a) {
  kc_app_stopped(a);
  uv_run(&a->loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&a->loop);
  kc_metrics_free(a->metrics);
  a->metrics = NULL;
  kc_config_close(&a->cfg);
  return rc ? KC_EIO : 0;
}
