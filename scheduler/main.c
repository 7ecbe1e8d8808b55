/* kiln-scheduler: the Volcano-compatible batch scheduler.
 *
 * main keeps what is the scheduler's own: its flags (Volcano's names and defaults), the
 * scheduling shell (sch_shell.h), SIGUSR2 (dumps the cache as a protobuf Snapshot) and the
 * words of its log lines. The process around them, on one libuv loop, is kc_app (the API
 * client, the event recorder, leader election as the write gate, the health and metrics
 * servers, a clean stop on SIGTERM/SIGINT). */
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "kc_api.h"
#include "kc_app.h"
#include "kc_cli.h"
#include "kc_container.h"
#include "kc_error.h"
#include "kc_httpd.h"
#include "kc_leader.h"
#include "kc_log.h"
#include "kc_pb.h"
#include "sch_shell.h"

static const char summary[] =
    "kiln-scheduler runs the Volcano-compatible gang scheduler: it places PodGroups\n"
    "all-or-nothing onto nodes and binds their pods.";

typedef struct {
  kc_strv scheduler_names;
  const char *scheduler_conf;
  int64_t schedule_period_ns;
  int64_t resync_period_ns;
  const char *default_queue;
  const char *listen_address;
  const char *healthz_address;
  bool enable_healthz;
  bool enable_metrics;
  bool enable_pprof;
  bool priority_class;
  bool csi_storage;
  bool cache_dumper;
  const char *cache_dump_dir;
  const char *plugins_dir;
  int percentage_nodes_to_find;
  int minimum_percentage_nodes_to_find;
  int minimum_feasible_nodes;
  int node_worker_threads;
  const char *dump_snapshot;
  bool dump_and_exit;
  int64_t bind_delay_ns;
  bool session_on_loop;
  const char *content_type;
  bool disable_default_conf;
  kc_strv node_selector; /* nodes sessions see (sch_cache_node_selected) */
  /* Volcano's flags for features kiln-scheduler does not have (rows with an inert text). */
  kc_strv ignored_provisioners;
  int gate_removal_workers, job_updater_workers, task_updater_workers;
  int64_t resource_sync_timeout_ns;
  const char *sharding_mode, *sharding_name;
  kc_client_options client;
  kc_leader_options leader;
} sched_flags;

/* The process: everything main owns, reachable from the loop's callbacks. */
typedef struct {
  kc_app app;
  sched_flags *f;
  sch_shell *shell;
  uv_signal_t sig_usr2;
  uv_timer_t dump_timer; /* --dump-snapshot-and-exit: waits for the sync */
  char dump_path[PATH_MAX];
} sched;

static int may_write(void *ud) {
  sched *s = ud;
  if (s->app.stopping)
    return KC_ENOTLEADER;
  return s->app.leader ? kc_leader_fence(s->app.leader) : 0;
}

/* Nothing drains: the shell stops at once, binds in flight are abandoned. */
static void stop(kc_app *app, int signum) {
  sched *s = container_of(app, sched, app);
  if (signum)
    KC_INFO("received %s, shutting down", strsignal(signum));
  uv_signal_stop(&s->sig_usr2);
  uv_close((uv_handle_t *)&s->sig_usr2, NULL);
  if (!uv_is_closing((uv_handle_t *)&s->dump_timer))
    uv_close((uv_handle_t *)&s->dump_timer, NULL);
  sch_shell_free(s->shell);
  s->shell = NULL;
  kc_app_stopped(app);
}

static void on_usr2(uv_signal_t *h, int signum) {
  sched *s = h->data;
  if (!s->f->cache_dumper) {
    KC_INFO("SIGUSR2: the cache dumper is off (--cache-dumper=false); nothing written");
    return;
  }
  sch_shell_dump(s->shell, s->dump_path);
}

static void on_started_leading(kc_app *app) {
  KC_INFO("became the leader: scheduling");
}

static void on_new_leader(kc_app *app, const char *identity) {
  if (app->leader && strcmp(identity, kc_leader_identity(app->leader)) != 0)
    KC_INFO("the leader is now %s", identity[0] ? identity : "<none>");
}

/* --disable-default-scheduler-config and a changed file that does not load: Volcano exits. */
static void conf_fatal(void *ud) {
  sched *s = ud;
  kc_app_stop(&s->app, 1);
}

static const kc_app_hooks hooks = {
    .stop = stop, .started_leading = on_started_leading, .new_leader = on_new_leader};

static void dump_tick(uv_timer_t *t) {
  sched *s = t->data;
  char reason[64];
  if (sch_shell_ready(s->shell, reason, sizeof(reason)) != 0)
    return;
  int rc = sch_shell_dump(s->shell, s->dump_path);
  kc_app_stop(&s->app, rc == 0 ? 0 : 1);
}

static int start_http(sched *s) {
  sched_flags *f = s->f;
  kc_httpd *h;
  int rc;
  bool same =
      f->enable_metrics && f->enable_healthz && strcmp(f->listen_address, f->healthz_address) == 0;
  if (f->enable_metrics) {
    rc = kc_app_serve(&s->app, f->listen_address, true, sch_shell_ready, s->shell, &h);
    if (rc) {
      KC_ERROR("metrics server: %s", h ? kc_httpd_errmsg(h) : kc_strerror(rc));
      return rc;
    }
    KC_INFO("serving /metrics on %s", f->listen_address);
  }
  if (f->enable_healthz && !same) {
    rc = kc_app_serve(&s->app, f->healthz_address, false, sch_shell_ready, s->shell, &h);
    if (rc) {
      KC_ERROR("healthz server: %s", h ? kc_httpd_errmsg(h) : kc_strerror(rc));
      return rc;
    }
    KC_INFO("serving /healthz and /readyz on %s", f->healthz_address);
  }
  return 0;
}

/* The shell's options, from the flags. */
static sch_shell_options shell_options(sched *s) {
  const sched_flags *f = s->f;
  sch_shell_options so = {0};
  so.scheduler_names = f->scheduler_names.v;
  so.nscheduler_names = f->scheduler_names.n;
  so.scheduler_conf = f->scheduler_conf;
  so.schedule_period_ns = f->schedule_period_ns;
  so.default_queue = f->default_queue;
  so.percentage_nodes_to_find = f->percentage_nodes_to_find;
  so.minimum_percentage_nodes_to_find = f->minimum_percentage_nodes_to_find;
  so.minimum_feasible_nodes = f->minimum_feasible_nodes;
  so.dump_path = s->dump_path;
  so.bind_delay_ms = f->bind_delay_ns / 1000000;
  so.session_on_loop = f->session_on_loop;
  so.protobuf = strcmp(f->content_type, KC_PB_CONTENT_TYPE) == 0;
  so.may_write = may_write;
  so.ud = s;
  so.no_default_conf = f->disable_default_conf;
  so.node_selector = f->node_selector.v;
  so.nnode_selector = f->node_selector.n;
  so.on_fatal = conf_fatal;
  return so;
}

static int run(sched *s, kc_cli_common *common) {
  sched_flags *f = s->f;
  char err[512] = "";
  int rc = kc_app_init(&s->app, &hooks, common->kubeconfig, common->master);
  if (rc)
    return rc;
  if (f->schedule_period_ns <= 0) {
    KC_ERROR("--schedule-period must be positive");
    kc_app_close(&s->app);
    return KC_EINVAL;
  }
  if (f->leader.leader_elect && kc_leader_validate(&f->leader, err, sizeof(err)) != 0) {
    KC_ERROR("leader election: %s", err);
    kc_app_close(&s->app);
    return KC_EINVAL;
  }
  if (f->enable_pprof)
    KC_WARN("--enable-pprof is accepted for compatibility; there is no pprof in a C process");
  if (f->plugins_dir && f->plugins_dir[0])
    KC_WARN("--plugins-dir is ignored: plugins are built in");
  if (f->dump_snapshot && f->dump_snapshot[0])
    snprintf(s->dump_path, sizeof(s->dump_path), "%s", f->dump_snapshot);
  else
    snprintf(s->dump_path, sizeof(s->dump_path), "%s/volcano-scheduler-%d.snapshot.pb",
             f->cache_dump_dir ? f->cache_dump_dir : "/tmp", (int)uv_os_getpid());

  /* The handles stop() closes exist from here on, so every failure below can use it. */
  uv_signal_init(&s->app.loop, &s->sig_usr2);
  uv_timer_init(&s->app.loop, &s->dump_timer);
  s->sig_usr2.data = s->dump_timer.data = s;
  rc = kc_app_open(&s->app, &f->client, f->scheduler_names.v[0]);
  sch_shell_options so = shell_options(s);
  if (rc == 0)
    rc = sch_shell_new(&s->app.loop, s->app.client, s->app.events, s->app.metrics, &so, &s->shell);
  if (rc == 0)
    uv_signal_start(&s->sig_usr2, on_usr2, SIGUSR2);
  if (rc == 0 && f->dump_and_exit) {
    rc = kc_app_start(&s->app);
    if (rc == 0)
      rc = sch_shell_start(s->shell);
    if (rc == 0)
      uv_timer_start(&s->dump_timer, dump_tick, 100, 100);
  } else if (rc == 0) {
    rc = start_http(s);
    /* The shell runs on a standby replica too; may_write keeps its writes to the leader. */
    if (rc == 0 && f->leader.leader_elect)
      rc = kc_app_elect(&s->app, &f->leader);
    if (rc == 0)
      rc = kc_app_start(&s->app);
    if (rc == 0)
      rc = sch_shell_start(s->shell);
  }
  if (rc) {
    KC_ERROR("cannot start: %s", kc_strerror(rc));
    kc_app_stop(&s->app, 1);
  } else {
    KC_INFO("scheduling every %gs as %s (%zu scheduler name(s))",
            (double)f->schedule_period_ns / 1e9, f->scheduler_names.v[0], f->scheduler_names.n);
  }
  rc = kc_app_run(&s->app) ? KC_EIO : 0;
  if (kc_app_close(&s->app) != 0)
    KC_WARN("the loop still had handles at exit");
  return rc;
}

int main(int argc, char **argv) {
  static const char *default_names[] = {"volcano"};
  kc_cli_common common = {.logtostderr = true};
  sched_flags f = {
      .scheduler_names = {.v = default_names, .n = 1, .set = false},
      .schedule_period_ns = 1000000000LL,
      .default_queue = "default",
      .listen_address = ":8080",
      .healthz_address = ":11251",
      .priority_class = true,
      .csi_storage = true,
      .cache_dumper = true,
      .cache_dump_dir = "/tmp",
      .minimum_percentage_nodes_to_find = 5,
      .minimum_feasible_nodes = 100,
      .node_worker_threads = 20,
      .client = KC_CLIENT_OPTIONS_INIT(2000, 2000),
      .leader = KC_LEADER_OPTIONS_INIT("volcano"),
      .content_type = KC_PB_CONTENT_TYPE,
      .gate_removal_workers = 5,
      .job_updater_workers = 1,
      .task_updater_workers = 1,
      .resource_sync_timeout_ns = 60000000000LL,
      .sharding_mode = "none",
      .sharding_name = "volcano",
  };
  /* clang-format off */
  const kc_flag flags[] = {
    KC_CLI_COMMON_FLAGS(&common),
    KC_CLIENT_FLAGS(&f.client, "2000", "2000"),
    KC_LEADER_FLAGS(&f.leader, "volcano"),
    {"scheduler-name", KC_FLAG_STRINGS, &f.scheduler_names,
     "vc-scheduler will handle pods whose .spec.SchedulerName is same as scheduler-name",
     "[volcano]", NULL, true, NULL},
    {"scheduler-conf", KC_FLAG_STRING, &f.scheduler_conf,
     "The absolute path of scheduler configuration file", NULL, NULL, false, NULL},
    {"schedule-period", KC_FLAG_DURATION, &f.schedule_period_ns,
     "The period between each scheduling cycle", "1s", NULL, false, NULL},
    {"resync-period", KC_FLAG_DURATION, &f.resync_period_ns,
     "The default resync period for k8s native informer factory", "0s", NULL, false, NULL,
     "informers resume their watches and relist on 410; nothing is replayed on a timer"},
    {"default-queue", KC_FLAG_STRING, &f.default_queue,
     "The default queue name of the job", "default", NULL, false, NULL},
    {"listen-address", KC_FLAG_STRING, &f.listen_address,
     "The address to listen on for HTTP requests (/metrics).", ":8080", NULL, false, NULL},
    {"healthz-address", KC_FLAG_STRING, &f.healthz_address,
     "The address to listen on for the health check server.", ":11251", NULL, false, NULL},
    {"enable-healthz", KC_FLAG_BOOL, &f.enable_healthz, "Enable the health check",
     "false", NULL, false, NULL},
    {"enable-metrics", KC_FLAG_BOOL, &f.enable_metrics,
     "Enable the metrics function", "false", NULL, false, NULL},
    {"enable-pprof", KC_FLAG_BOOL, &f.enable_pprof,
     "Enable the pprof endpoint (accepted; has no effect)", "false", NULL, false, NULL},
    {"priority-class", KC_FLAG_BOOL, &f.priority_class,
     "Enable PriorityClass to provide the capacity of preemption at pod group level",
     "true", NULL, false, NULL},
    {"csi-storage", KC_FLAG_BOOL, &f.csi_storage,
     "Enable tracking of available storage capacity", "true", NULL, false, NULL,
     "kiln-scheduler does not watch CSIDriver or CSIStorageCapacity objects"},
    {"cache-dumper", KC_FLAG_BOOL, &f.cache_dumper,
     "Enable the cache dumper (SIGUSR2 writes the cache as a protobuf Snapshot)", "true",
     NULL, false, NULL},
    {"cache-dump-dir", KC_FLAG_STRING, &f.cache_dump_dir,
     "The target dir where the json file put at when dump cache info", "/tmp", NULL, false,
     NULL},
    {"plugins-dir", KC_FLAG_STRING, &f.plugins_dir,
     "vc-scheduler will load custom plugins which are in this directory (ignored)", NULL,
     NULL, false, NULL},
    {"percentage-nodes-to-find", KC_FLAG_INT, &f.percentage_nodes_to_find,
     "The percentage of nodes to find and score, if <=0 use an adaptive percentage", "0",
     NULL, false, NULL},
    {"minimum-percentage-nodes-to-find", KC_FLAG_INT, &f.minimum_percentage_nodes_to_find,
     "The minimum percentage of nodes to find and score", "5", NULL, false, NULL},
    {"minimum-feasible-nodes", KC_FLAG_INT, &f.minimum_feasible_nodes,
     "The minimum feasible nodes to find and score", "100", NULL, false, NULL},
    {"node-worker-threads", KC_FLAG_INT, &f.node_worker_threads,
     "The number of threads syncing node operations.", "20", NULL, false, NULL,
     "node events are handled on the one event loop thread"},
    {"dump-snapshot", KC_FLAG_STRING, &f.dump_snapshot,
     "Kiln: the file SIGUSR2 writes the cache to, as a protobuf kiln.Snapshot (default: "
     "<cache-dump-dir>/volcano-scheduler-<pid>.snapshot.pb)", NULL, NULL, false, NULL},
    {"dump-snapshot-and-exit", KC_FLAG_BOOL, &f.dump_and_exit,
     "Kiln: write the snapshot once the cache has synced, then exit without scheduling",
     "false", NULL, false, NULL},
    {"bind-delay", KC_FLAG_DURATION, &f.bind_delay_ns,
     "Kiln test aid: hold every bind this long between the decision and the API call", "0s",
     NULL, false, NULL},
    {"kube-api-content-type", KC_FLAG_STRING, &f.content_type,
     "Kiln (kube-scheduler's flag): content type of requests sent to apiserver for pods, nodes "
     "and bindings, application/vnd.kubernetes.protobuf or application/json; Volcano's "
     "resources are always JSON", KC_PB_CONTENT_TYPE, NULL, false, NULL},
    {"session-on-loop", KC_FLAG_BOOL, &f.session_on_loop,
     "Kiln test aid: run each session on the event loop thread instead of a worker thread "
     "(the benchmark's before)", "false", NULL, false, NULL},
    {"disable-default-scheduler-config", KC_FLAG_BOOL, &f.disable_default_conf,
     "The flag indicates whether the scheduler should avoid using the default configuration "
     "if the provided scheduler configuration is invalid.", "false", NULL, false, NULL},
    {"node-selector", KC_FLAG_STRINGS, &f.node_selector,
     "volcano only work with the labeled node, like: --node-selector=volcano.sh/role:train "
     "--node-selector=volcano.sh/role:serving", NULL, NULL, true, NULL},
    {"ignored-provisioners", KC_FLAG_STRINGS, &f.ignored_provisioners,
     "The provisioners that will be ignored during pod pvc request computation and "
     "preemption.", NULL, NULL, true, NULL,
     "kiln-scheduler does not count PVCs against CSI node limits, so there is nothing to "
     "leave out"},
    {"gate-removal-worker-num", KC_FLAG_INT, &f.gate_removal_workers,
     "The number of async workers for scheduling gate removal (used when "
     "SchedulingGatesQueueAdmission is enabled).", "5", NULL, false, NULL,
     "kiln-scheduler does not remove scheduling gates (SchedulingGatesQueueAdmission)"},
    {"job-updater-worker-num", KC_FLAG_INT, &f.job_updater_workers,
     "The number of workers writing PodGroup status at session close.", NULL, NULL, false, NULL,
     "status writes go out from the event loop, all in flight at once"},
    {"task-updater-worker-num", KC_FLAG_INT, &f.task_updater_workers,
     "The number of workers writing pod conditions at session close.", NULL, NULL, false, NULL,
     "status writes go out from the event loop, all in flight at once"},
    {"resource-sync-timeout", KC_FLAG_DURATION, &f.resource_sync_timeout_ns,
     "timeout on waiting for handler handling initial resources synchronization before "
     "starting scheduler, default is 60s, 0 skip waiting", "1m0s", NULL, false, NULL,
     "kiln-scheduler always waits until every informer has listed before its first session"},
    {"scheduler-sharding-mode", KC_FLAG_STRING, &f.sharding_mode,
     "The node sharding mode for scheduling, none(default)|hard|soft mode is supported",
     "none", NULL, false, NULL,
     "there is no node sharding; kiln-scheduler runs as in mode none"},
    {"scheduler-sharding-name", KC_FLAG_STRING, &f.sharding_name,
     "The name of shard used for this scheduler", "volcano", NULL, false, NULL,
     "there is no node sharding (NodeShards are not read)"},
  };
  /* clang-format on */
  int rc = kc_cli_parse("kiln-scheduler", summary, flags, sizeof(flags) / sizeof(flags[0]), &common,
                        argc, argv);
  if (rc >= 0)
    return rc;
  if (strcmp(f.content_type, KC_PB_CONTENT_TYPE) != 0 &&
      strcmp(f.content_type, "application/json") != 0) {
    fprintf(stderr,
            "kiln-scheduler: --kube-api-content-type must be " KC_PB_CONTENT_TYPE
            " or application/json, not \"%s\"\n",
            f.content_type);
    kc_strv_free(&f.scheduler_names);
    return 2;
  }
  const char *bad = NULL;
  if (f.scheduler_names.n == 0)
    bad = "--scheduler-name must not be empty";
  else if (strchr(f.default_queue, '/'))
    bad = "default-queue must be a cluster Queue name";
  else if (f.job_updater_workers <= 0)
    bad = "job-updater-worker-num must be greater than 0";
  else if (f.task_updater_workers <= 0)
    bad = "task-updater-worker-num must be greater than 0";
  if (bad) {
    fprintf(stderr, "kiln-scheduler: %s\n", bad);
    kc_strv_free(&f.scheduler_names);
    kc_strv_free(&f.node_selector);
    kc_strv_free(&f.ignored_provisioners);
    return 2;
  }
  if (!f.priority_class)
    KC_WARN("--priority-class=false is not supported; PriorityClasses are always honoured");
  /* Volcano: the lease is named after the scheduler unless told otherwise. */
  if (f.leader.resource_name == NULL || f.leader.resource_name[0] == '\0' ||
      strcmp(f.leader.resource_name, "volcano") == 0)
    f.leader.resource_name = f.scheduler_names.v[0];
  KC_INFO("kiln-scheduler %s starting (kubeconfig=%s)", KILN_VERSION,
          common.kubeconfig ? common.kubeconfig : "<in-cluster>");
  signal(SIGPIPE, SIG_IGN);
  sched s;
  memset(&s, 0, sizeof(s));
  s.f = &f;
  rc = run(&s, &common);
  kc_strv_free(&f.scheduler_names);
  kc_strv_free(&f.node_selector);
  kc_strv_free(&f.ignored_provisioners);
  KC_INFO("kiln-scheduler stopped");
  return rc ? 1 : 0;
}
