/* kiln-controller: the Volcano-compatible job controller (vc-controller-manager's job
 * controller). Flags keep Volcano's names and defaults so its Deployment arguments work. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "ctl_shell.h"
#include "kc_api.h"
#include "kc_cli.h"
#include "kc_config.h"
#include "kc_error.h"
#include "kc_events.h"
#include "kc_httpd.h"
#include "kc_leader.h"
#include "kc_log.h"
#include "kc_metrics.h"

static const char summary[] =
    "kiln-controller runs the Volcano-compatible job controller: it turns batch.volcano.sh Jobs\n"
    "into PodGroups and pods and drives their phase machine.";

#define SHUTDOWN_DEADLINE_MS 10000

typedef struct {
  uv_loop_t loop;
  kc_config cfg;
  bool cfg_loaded;
  kc_client *client;
  kc_metrics *metrics;
  kc_event_recorder *events;
  kc_leader *leader;
  ctl_shell *shell;
  kc_httpd *healthz, *metrics_srv;
  uv_signal_t sigterm, sigint;
  bool stopping;
  int exit_code;
} app;

static int ready_check(void *ud, char *reason, size_t cap) {
  app *a = ud;
  /* A standby replica is healthy: kc_httpd's /healthz runs this check too, and a failing
   * standby would be restarted by its liveness probe for no reason. */
  if (a->leader && !kc_leader_is_leader(a->leader))
    return 0;
  if (a->shell && ctl_shell_synced(a->shell))
    return 0;
  snprintf(reason, cap, "caches not synced");
  return 1;
}

static void stopped(void *ud) {
  app *a = ud;
  ctl_shell_stats st;
  ctl_shell_get_stats(a->shell, &st);
  KC_INFO("stopped: %llu syncs, %llu pods created (%llu already existed), %llu deleted, %llu "
          "status writes, %d plans abandoned",
          (unsigned long long)st.syncs, (unsigned long long)st.pods_created,
          (unsigned long long)st.pods_create_exists, (unsigned long long)st.pods_deleted,
          (unsigned long long)st.status_writes, st.inflight);
  kc_leader_free(a->leader);
  a->leader = NULL;
  kc_event_recorder_free(a->events);
  a->events = NULL;
  /* The client first: its calls end (cancelled) while the shell can still take the results. */
  kc_client_free(a->client);
  a->client = NULL;
  ctl_shell_free(a->shell);
  a->shell = NULL;
  kc_httpd_free(a->healthz);
  kc_httpd_free(a->metrics_srv);
  a->healthz = a->metrics_srv = NULL;
  uv_close((uv_handle_t *)&a->sigterm, NULL);
  uv_close((uv_handle_t *)&a->sigint, NULL);
}

static void shutdown_app(app *a, int code) {
  if (a->stopping)
    return;
  a->stopping = true;
  a->exit_code = code;
  /* Stop taking work, let the writes in flight finish (up to the deadline), then close. */
  ctl_shell_stop(a->shell, SHUTDOWN_DEADLINE_MS, stopped, a);
}

static void on_signal(uv_signal_t *h, int signum) {
  app *a = h->data;
  if (a->stopping) {
    KC_WARN("second signal %d: exiting now", signum);
    exit(1);
  }
  KC_INFO("signal %d: shutting down", signum);
  shutdown_app(a, 0);
}

static void started_leading(void *ud) {
  app *a = ud;
  if (a->stopping)
    return; /* leadership lost once already: this process is on its way out */
  KC_INFO("leading: starting the job controller");
  int rc = ctl_shell_start(a->shell);
  if (rc) {
    KC_ERROR("cannot start the job controller: %s", kc_strerror(rc));
    shutdown_app(a, 1);
  }
}

static void stopped_leading(void *ud) {
  app *a = ud;
  /* Volcano exits here: a replica that lost the lease must not act on its caches. */
  KC_ERROR("leader election lost; exiting");
  shutdown_app(a, 1);
}

static void new_leader(const char *identity, void *ud) {
  KC_INFO("new leader: %s", *identity ? identity : "<none>");
}

static int start_httpd(app *a, const char *addr, bool with_metrics, kc_httpd **out) {
  kc_httpd_opts ho = {.address = addr,
                      .metrics = with_metrics ? a->metrics : NULL,
                      .ready = ready_check,
                      .ready_ud = a};
  int rc = kc_httpd_new(&a->loop, &ho, out);
  if (rc == 0 && (rc = kc_httpd_start(*out)) != 0)
    KC_ERROR("cannot serve on %s: %s", addr, kc_httpd_errmsg(*out));
  else if (rc)
    KC_ERROR("bad address %s: %s", addr, kc_strerror(rc));
  return rc;
}

int main(int argc, char **argv) {
  kc_cli_common common = {.logtostderr = true};
  kc_client_options copt = KC_CLIENT_OPTIONS_INIT(50, 100);
  kc_leader_options lopt = KC_LEADER_OPTIONS_INIT("vc-controller-manager");
  static const char *sched_def[] = {"volcano"};
  static const char *ctrl_def[] = {"*"};
  kc_strv schedulers = {.v = sched_def, .n = 1};
  kc_strv controllers = {.v = ctrl_def, .n = 1};
  int workers = 3, max_requeue = 15, wt_pg = 5, wt_queue = 5, wt_gc = 1, wt_cron = 3;
  const char *listen = ":8081", *healthz = ":11251";
  bool enable_healthz = false, enable_metrics = false, inherit = true;
  const kc_flag flags[] = {
      KC_CLI_COMMON_FLAGS(&common),
      KC_CLIENT_FLAGS(&copt, "50", "100"),
      KC_LEADER_FLAGS(&lopt, "vc-controller-manager"),
      {"scheduler-name", KC_FLAG_STRINGS, &schedulers,
       "Volcano will handle pods whose .spec.SchedulerName is same as scheduler-name", "[volcano]",
       NULL, false, NULL},
      {"worker-threads", KC_FLAG_INT, &workers,
       "The number of Jobs synced at once (Kiln runs them on one event loop).", "3", NULL, false,
       NULL},
      {"max-requeue-num", KC_FLAG_INT, &max_requeue,
       "The number of times a job, queue or command will be requeued before it is dropped out "
       "of the queue (-1: unlimited)",
       "15", NULL, false, NULL},
      {"listen-address", KC_FLAG_STRING, &listen, "The address to listen on for HTTP requests.",
       ":8081", NULL, false, NULL},
      {"healthz-address", KC_FLAG_STRING, &healthz,
       "The address to listen on for the health check server.", ":11251", NULL, false, NULL},
      {"enable-healthz", KC_FLAG_BOOL, &enable_healthz, "Enable the health check", "false", NULL,
       false, NULL},
      {"enable-metrics", KC_FLAG_BOOL, &enable_metrics, "Enable the metrics function", "false",
       NULL, false, NULL},
      {"controllers", KC_FLAG_STRINGS, &controllers,
       "Controllers to enable; Kiln runs the job controller (accepted for compatibility).", "[*]",
       NULL, true, NULL},
      {"worker-threads-for-podgroup", KC_FLAG_INT, &wt_pg, "Accepted for compatibility.", "5", NULL,
       false, NULL},
      {"worker-threads-for-queue", KC_FLAG_INT, &wt_queue, "Accepted for compatibility.", "5", NULL,
       false, NULL},
      {"worker-threads-for-gc", KC_FLAG_INT, &wt_gc, "Accepted for compatibility.", "1", NULL,
       false, NULL},
      {"worker-threads-for-cronjob", KC_FLAG_INT, &wt_cron, "Accepted for compatibility.", "3",
       NULL, false, NULL},
      {"inherit-owner-annotations", KC_FLAG_BOOL, &inherit, "Accepted for compatibility.", "true",
       NULL, false, NULL},
  };
  int rc = kc_cli_parse("kiln-controller", summary, flags, sizeof(flags) / sizeof(flags[0]),
                        &common, argc, argv);
  if (rc >= 0)
    return rc;
  char err[512];
  int port;
  char host[256];
  const char *bad = NULL;
  if (copt.qps < 0 || copt.burst < 0)
    bad = "--kube-api-qps and --kube-api-burst must not be negative";
  else if (workers < 1)
    bad = "--worker-threads must be at least 1";
  else if (max_requeue < -1)
    bad = "--max-requeue-num must be -1 (unlimited) or more";
  else if (enable_metrics && kc_httpd_parse_address(listen, host, sizeof(host), &port) != 0)
    bad = "--listen-address must be host:port";
  else if (enable_healthz && kc_httpd_parse_address(healthz, host, sizeof(host), &port) != 0)
    bad = "--healthz-address must be host:port";
  if (!bad && lopt.lock_object_namespace && *lopt.lock_object_namespace)
    lopt.resource_namespace = lopt.lock_object_namespace;
  if (!bad && lopt.leader_elect && kc_leader_validate(&lopt, err, sizeof(err)) != 0)
    bad = err;
  if (bad) {
    fprintf(stderr, "kiln-controller: %s\n", bad);
    return 2;
  }
  KC_INFO("kiln-controller %s starting (kubeconfig=%s, qps=%g, burst=%d, workers=%d)", KILN_VERSION,
          common.kubeconfig ? common.kubeconfig : "<in-cluster>", copt.qps, copt.burst, workers);

  app a = {0};
  if (uv_loop_init(&a.loop) != 0)
    return 1;
  rc = kc_config_load(&a.cfg, common.kubeconfig, common.master, err, sizeof(err));
  if (rc) {
    KC_ERROR("cannot load the client configuration: %s", err);
    uv_loop_close(&a.loop);
    return 1;
  }
  a.cfg_loaded = true;
  copt.user_agent = "kiln-controller/" KILN_VERSION;
  if ((rc = kc_client_new(&a.loop, &a.cfg, &copt, &a.client)) ||
      (rc = kc_metrics_new(&a.metrics)) ||
      (rc = kc_event_recorder_new(a.client, "vc-controller-manager", NULL, &a.events))) {
    KC_ERROR("cannot set up the client: %s", kc_strerror(rc));
    a.exit_code = 1;
    goto out;
  }
  if (lopt.leader_elect) {
    kc_leader_callbacks cb = {.on_started_leading = started_leading,
                              .on_stopped_leading = stopped_leading,
                              .on_new_leader = new_leader,
                              .ud = &a};
    if ((rc = kc_leader_new(a.client, &lopt, NULL, &cb, &a.leader))) {
      KC_ERROR("cannot set up leader election: %s", kc_strerror(rc));
      a.exit_code = 1;
      goto out;
    }
  }
  ctl_shell_options so = {.workers = workers,
                          .max_requeue = max_requeue,
                          .default_scheduler = schedulers.n ? schedulers.v[0] : "volcano",
                          .metrics = a.metrics,
                          .leader = a.leader,
                          .events = a.events};
  if ((rc = ctl_shell_new(&a.loop, a.client, &so, &a.shell))) {
    KC_ERROR("cannot set up the job controller: %s", kc_strerror(rc));
    a.exit_code = 1;
    goto out;
  }
  bool same = enable_healthz && enable_metrics && strcmp(listen, healthz) == 0;
  if ((enable_healthz && start_httpd(&a, healthz, same, &a.healthz) != 0) ||
      (enable_metrics && !same && start_httpd(&a, listen, true, &a.metrics_srv) != 0)) {
    a.exit_code = 1;
    goto out;
  }
  uv_signal_init(&a.loop, &a.sigterm);
  uv_signal_init(&a.loop, &a.sigint);
  a.sigterm.data = a.sigint.data = &a;
  uv_signal_start(&a.sigterm, on_signal, SIGTERM);
  uv_signal_start(&a.sigint, on_signal, SIGINT);
  if (a.leader) {
    KC_INFO("leader election on lease %s/%s as %s", lopt.resource_namespace, lopt.resource_name,
            kc_leader_identity(a.leader));
    rc = kc_leader_start(a.leader);
  } else {
    rc = ctl_shell_start(a.shell);
  }
  if (rc) {
    KC_ERROR("cannot start: %s", kc_strerror(rc));
    shutdown_app(&a, 1);
  }
  uv_run(&a.loop, UV_RUN_DEFAULT);
  KC_INFO("exiting with status %d", a.exit_code);
  goto done;
out:
  kc_leader_free(a.leader);
  kc_event_recorder_free(a.events);
  kc_client_free(a.client);
  ctl_shell_free(a.shell);
  kc_httpd_free(a.healthz);
  kc_httpd_free(a.metrics_srv);
  uv_run(&a.loop, UV_RUN_DEFAULT);
done:
  kc_metrics_free(a.metrics);
  kc_strv_free(&schedulers);
  kc_strv_free(&controllers);
  if (a.cfg_loaded)
    kc_config_close(&a.cfg);
  uv_loop_close(&a.loop);
  return a.exit_code;
}
