/* kiln-controller: Volcano's vc-controller-manager. Flags keep Volcano's names and defaults so
 * its Deployment arguments work.
 *
 * main keeps what is the process's own: its flags, the manager of the controllers that
 * --controllers selects (ctl_controllers.h; started when this replica leads, drained on the
 * way out) and the words of its log lines. The process around them is kc_app
 * (common/kc_app.h). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_controllers.h"
#include "kc_api.h"
#include "kc_app.h"
#include "kc_cli.h"
#include "kc_container.h"
#include "kc_error.h"
#include "kc_httpd.h"
#include "kc_leader.h"
#include "kc_log.h"
#include "kc_pb.h"

static const char summary[] =
    "kiln-controller runs Volcano's controllers (vc-controller-manager): the job controller turns\n"
    "batch.volcano.sh Jobs into PodGroups and pods, the queue controller keeps Queue states, the\n"
    "podgroup controller groups plain pods, and the gc controller deletes finished Jobs.";

#define SHUTDOWN_DEADLINE_MS 10000

/* Why Volcano's sharding-controller flags change nothing here (kc_flag.inert). */
#define CTL_NO_SHARDING "Kiln has no sharding-controller (NodeShards are not managed)"

typedef struct {
  kc_app app;
  ctl_manager *mgr;
} app;

static int ready_check(void *ud, char *reason, size_t cap) {
  app *a = ud;
  /* A standby replica is healthy: kc_httpd's /healthz runs this check too, and a failing
   * standby would be restarted by its liveness probe for no reason. */
  if (a->app.leader && !kc_leader_is_leader(a->app.leader))
    return 0;
  if (a->mgr && ctl_manager_synced(a->mgr))
    return 0;
  snprintf(reason, cap, "caches not synced");
  return 1;
}

/* The shared parts go first: the client's calls end (cancelled) while the controllers can
 * still take the results. */
static void release(app *a) {
  kc_app_stopped(&a->app);
  ctl_manager_free(a->mgr);
  a->mgr = NULL;
}

static void stopped(void *ud) {
  app *a = ud;
  KC_INFO("stopped");
  release(a);
}

static void stop(kc_app *k, int signum) {
  app *a = container_of(k, app, app);
  if (signum)
    KC_INFO("signal %d: shutting down", signum);
  /* Stop taking work, let the writes in flight finish (up to the deadline), then close. */
  ctl_manager_stop(a->mgr, SHUTDOWN_DEADLINE_MS, stopped, a);
}

static void started_leading(kc_app *k) {
  app *a = container_of(k, app, app);
  KC_INFO("leading: starting %zu controllers", ctl_manager_running(a->mgr));
  int rc = ctl_manager_start(a->mgr);
  if (rc) {
    KC_ERROR("cannot start the controllers: %s", kc_strerror(rc));
    kc_app_stop(k, 1);
  }
}

static void new_leader(kc_app *k, const char *identity) {
  KC_INFO("new leader: %s", *identity ? identity : "<none>");
}

static const kc_app_hooks hooks = {
    .stop = stop, .started_leading = started_leading, .new_leader = new_leader};

static int serve(app *a, const char *addr, bool with_metrics) {
  kc_httpd *h;
  int rc = kc_app_serve(&a->app, addr, with_metrics, ready_check, a, &h);
  if (rc && h)
    KC_ERROR("cannot serve on %s: %s", addr, kc_httpd_errmsg(h));
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
  double cron_speed = 1;
  const char *listen = ":8081", *healthz = ":11251", *content_type = KC_PB_CONTENT_TYPE;
  bool enable_healthz = false, enable_metrics = false, inherit = true;
  /* Volcano's sharding controller's flags (not built here: rows with an inert text). */
  static const char *shard_def[] = {"volcano:volcano:0.0:0.6:false:2:100",
                                    "agent-scheduler:agent:0.7:1.0:true:2:100"};
  kc_strv shard_configs = {.v = shard_def, .n = 2};
  int64_t shard_sync_ns = 60000000000LL;
  bool node_event_trigger = true;
  const char *shard_cm = "volcano-sharding-configmap", *shard_cm_ns = "volcano-system";
  const kc_flag flags[] = {
      KC_CLI_COMMON_FLAGS(&common),
      KC_CLIENT_FLAGS(&copt, "50", "100"),
      KC_LEADER_FLAGS(&lopt, "vc-controller-manager"),
      {"scheduler-name", KC_FLAG_STRINGS, &schedulers,
       "Volcano will handle pods whose .spec.SchedulerName is same as scheduler-name", "[volcano]",
       NULL, false, NULL},
      {"worker-threads", KC_FLAG_INT, &workers,
       "The number of threads syncing job operations concurrently. Larger number = faster job "
       "updating, but more CPU load (Kiln: Jobs synced at once on its one event loop)",
       "3", NULL, false, NULL},
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
       "Specify controller gates. Use '*' for all controllers, all knownController: "
       "[cronjob-controller gc-controller job-controller pg-controller queue-controller], and we "
       "can use '-' to "
       "disable controllers, e.g. \"*,-job-controller,-queue-controller\" to disable job and "
       "queue controllers. As in Volcano, an entry that names a controller decides for it and "
       "the others run only when '*' is listed.",
       "[*]", NULL, true, NULL},
      {"worker-threads-for-podgroup", KC_FLAG_INT, &wt_pg,
       "The number of threads syncing podgroup operations. The larger the number, the faster "
       "the podgroup processing, but requires more CPU load.",
       "5", NULL, false, NULL},
      {"worker-threads-for-queue", KC_FLAG_INT, &wt_queue,
       "The number of threads syncing queue operations. The larger the number, the faster the "
       "queue processing, but requires more CPU load.",
       "5", NULL, false, NULL},
      {"worker-threads-for-gc", KC_FLAG_INT, &wt_gc,
       "The number of threads for recycling jobs. The larger the number, the faster the job "
       "recycling, but requires more CPU load.",
       "1", NULL, false, NULL},
      {"worker-threads-for-cronjob", KC_FLAG_INT, &wt_cron,
       "The number of threads syncing cronjob operations.", "3", NULL, false, NULL},
      {"cronjob-test-clock-speed", KC_FLAG_DOUBLE, &cron_speed,
       "For tests only: the cronjob controller's clock runs this many times faster than the "
       "wall clock from the start (60: an every-minute CronJob fires every second).",
       "1", NULL, false, NULL},
      {"inherit-owner-annotations", KC_FLAG_BOOL, &inherit,
       "Enable inherit owner annotations for pods when create podgroup; it is enabled by "
       "default",
       "true", NULL, false, NULL},
      {"kube-api-content-type", KC_FLAG_STRING, &content_type,
       "Kiln (kube-controller-manager's flag): content type of requests sent to apiserver for "
       "pods, application/vnd.kubernetes.protobuf or application/json; Volcano's resources are "
       "always JSON",
       KC_PB_CONTENT_TYPE, NULL, false, NULL},
      {"scheduler-configs", KC_FLAG_STRINGS, &shard_configs,
       "Deprecated: use a sharding ConfigMap (--sharding-configmap) instead. Format: "
       "name:type:min_util:max_util:prefer_warmup:min_nodes:max_nodes.",
       "[volcano:volcano:0.0:0.6:false:2:100,agent-scheduler:agent:0.7:1.0:true:2:100]", NULL, true,
       NULL, CTL_NO_SHARDING},
      {"shard-sync-period", KC_FLAG_DURATION, &shard_sync_ns, "Period for shard synchronization",
       "1m0s", NULL, false, NULL, CTL_NO_SHARDING},
      {"enable-node-event-trigger", KC_FLAG_BOOL, &node_event_trigger,
       "Enable node event trigger for shard updates", "true", NULL, false, NULL, CTL_NO_SHARDING},
      {"sharding-configmap", KC_FLAG_STRING, &shard_cm,
       "Name of the ConfigMap that contains sharding configuration (key: sharding.yaml).",
       "volcano-sharding-configmap", NULL, false, NULL, CTL_NO_SHARDING},
      {"sharding-configmap-namespace", KC_FLAG_STRING, &shard_cm_ns,
       "Namespace of the sharding configuration ConfigMap.", "volcano-system", NULL, false, NULL,
       CTL_NO_SHARDING},
  };
  int rc = kc_cli_parse("kiln-controller", summary, flags, sizeof(flags) / sizeof(flags[0]),
                        &common, argc, argv);
  kc_strv_free(&shard_configs);
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
  else if (cron_speed < 1 || cron_speed > 3600)
    bad = "--cronjob-test-clock-speed must be between 1 and 3600";
  else if (wt_pg < 1 || wt_queue < 1 || wt_gc < 1 || wt_cron < 1)
    bad = "--worker-threads-for-podgroup, -queue, -gc and -cronjob must be at least 1";
  else if (ctl_controllers_check(controllers.v, controllers.n, err, sizeof(err)) != 0)
    bad = err;
  else if (strcmp(content_type, KC_PB_CONTENT_TYPE) != 0 &&
           strcmp(content_type, "application/json") != 0)
    bad = "--kube-api-content-type must be " KC_PB_CONTENT_TYPE " or application/json";
  else if (max_requeue < -1)
    bad = "--max-requeue-num must be -1 (unlimited) or more";
  else if (enable_metrics && kc_httpd_parse_address(listen, host, sizeof(host), &port) != 0)
    bad = "--listen-address must be host:port";
  else if (enable_healthz && kc_httpd_parse_address(healthz, host, sizeof(host), &port) != 0)
    bad = "--healthz-address must be host:port";
  if (!bad && lopt.leader_elect && kc_leader_validate(&lopt, err, sizeof(err)) != 0)
    bad = err;
  if (bad) {
    fprintf(stderr, "kiln-controller: %s\n", bad);
    return 2;
  }
  KC_INFO("kiln-controller %s starting (kubeconfig=%s, qps=%g, burst=%d, workers=%d)", KILN_VERSION,
          common.kubeconfig ? common.kubeconfig : "<in-cluster>", copt.qps, copt.burst, workers);

  app a = {0};
  if (kc_app_init(&a.app, &hooks, common.kubeconfig, common.master) != 0) {
    kc_strv_free(&schedulers);
    kc_strv_free(&controllers);
    return 1;
  }
  int code = 1;
  copt.user_agent = "kiln-controller/" KILN_VERSION;
  if ((rc = kc_app_open(&a.app, &copt, "vc-controller-manager"))) {
    KC_ERROR("cannot set up the client: %s", kc_strerror(rc));
    goto fail;
  }
  if (lopt.leader_elect && (rc = kc_app_elect(&a.app, &lopt))) {
    KC_ERROR("cannot set up leader election: %s", kc_strerror(rc));
    goto fail;
  }
  ctl_env env = {.loop = &a.app.loop,
                 .client = a.app.client,
                 .metrics = a.app.metrics,
                 .leader = a.app.leader,
                 .events = a.app.events,
                 .schedulers = schedulers.v,
                 .nschedulers = schedulers.n,
                 .workers = workers,
                 .workers_pg = wt_pg,
                 .workers_queue = wt_queue,
                 .workers_gc = wt_gc,
                 .workers_cron = wt_cron,
                 .cron_clock_speed = cron_speed,
                 .max_requeue = max_requeue,
                 .inherit_owner_annotations = inherit,
                 .protobuf = strcmp(content_type, KC_PB_CONTENT_TYPE) == 0};
  if ((rc = ctl_manager_new(&env, controllers.v, controllers.n, &a.mgr))) {
    KC_ERROR("cannot set up the controllers: %s", kc_strerror(rc));
    goto fail;
  }
  bool same = enable_healthz && enable_metrics && strcmp(listen, healthz) == 0;
  if ((enable_healthz && serve(&a, healthz, same) != 0) ||
      (enable_metrics && !same && serve(&a, listen, true) != 0))
    goto fail;
  /* With an elector the controllers start when this replica leads (started_leading). */
  rc = kc_app_start(&a.app);
  if (rc == 0 && !a.app.leader)
    rc = ctl_manager_start(a.mgr);
  if (rc) {
    KC_ERROR("cannot start: %s", kc_strerror(rc));
    kc_app_stop(&a.app, 1);
  }
  code = kc_app_run(&a.app);
  KC_INFO("exiting with status %d", code);
  goto done;
fail:
  release(&a);
done:
  kc_app_close(&a.app);
  kc_strv_free(&schedulers);
  kc_strv_free(&controllers);
  return code;
}
