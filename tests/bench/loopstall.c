/* loopstall: how long kiln-scheduler's event loop goes without turning while sessions run
 * (issue 15 target 3), in process, on a snapshot written by `sessions --write-snapshot` or
 * `kiln-scheduler --dump-snapshot`.
 *
 *   loopstall --snapshot FILE [--seconds S] [--period 1s] [--session-on-loop]
 *
 * The real scheduler shell (cache, session, result applied, binder) runs on a libuv loop with
 * the snapshot's objects in its informers' stores; no API server: the client points at a
 * port nobody listens on, binds are held back (the binder's delay) so that none is sent
 * during the run, and the few status writes fail at once. A 1 ms timer stands in for the
 * watch events the loop would decode: its lateness is the stall an event would see. Prints
 * one JSON object: sessions applied, the loop's longest busy stretch (kc_loopwatch, the same
 * figure as volcano_event_loop_longest_busy_milliseconds), the timer's worst lateness, how
 * many stretches went over 20 ms, and the longest session (start to result applied); and the
 * longest stretch in the loop thread's CPU time, the figure that a loaded machine does not
 * inflate.
 * --session-on-loop runs each session on the loop thread, as before the worker thread. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "kc_api.h"
#include "kc_codec.h"
#include "kc_config.h"
#include "kc_error.h"
#include "kc_flags.h"
#include "kc_log.h"
#include "kc_loopwatch.h"
#include "kc_store.h"
#include "sch_cache.h"
#include "sch_shell.h"

typedef struct {
  uv_prepare_t prep; /* the loop thread's CPU time per iteration */
  uint64_t cpu0, longest_cpu_ns, t_start, longest_at_ns;
  uv_timer_t tick, period, stop;
  sch_shell *sh;
  uint64_t last_tick, worst_late_ns, over20;
  uint64_t session_t0, longest_session_ns, seen_sessions;
  bool stopping;
} bench;

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time does not run while the loop waits: the loop thread's CPU time between two
 * prepares is one stretch's work, whatever the machine's load did to its wall time. */
static void on_prepare(uv_prepare_t *p) {
  bench *b = p->data;
  uint64_t c = thread_cpu_ns();
  if (c - b->cpu0 > b->longest_cpu_ns) {
    b->longest_cpu_ns = c - b->cpu0;
    b->longest_at_ns = uv_hrtime() - b->t_start;
  }
  b->cpu0 = c;
}

static void on_tick(uv_timer_t *t) {
  bench *b = t->data;
  uint64_t now = uv_hrtime(), gap = now - b->last_tick;
  uint64_t late = gap > 1000000 ? gap - 1000000 : 0;
  if (late > b->worst_late_ns)
    b->worst_late_ns = late;
  if (late > 20000000)
    b->over20++;
  b->last_tick = now;
  /* A session's end shows as a new count: its length from start to result applied. */
  uint64_t n = sch_shell_sessions(b->sh);
  if (n != b->seen_sessions) {
    uint64_t d = now - b->session_t0;
    if (d > b->longest_session_ns)
      b->longest_session_ns = d;
    b->seen_sessions = n;
  }
}

static void on_period(uv_timer_t *t) {
  bench *b = t->data;
  if (sch_shell_session_running(b->sh))
    return;
  uint64_t before = sch_shell_sessions(b->sh);
  b->session_t0 = uv_hrtime();
  sch_shell_run_once(b->sh);
  if (sch_shell_sessions(b->sh) != before) { /* ran on the loop: done already */
    uint64_t d = uv_hrtime() - b->session_t0;
    if (d > b->longest_session_ns)
      b->longest_session_ns = d;
    b->seen_sessions = sch_shell_sessions(b->sh);
  }
}

static void on_stop(uv_timer_t *t) {
  bench *b = t->data;
  b->stopping = true;
  uv_timer_stop(&b->tick);
  uv_timer_stop(&b->period);
  uv_close((uv_handle_t *)&b->tick, NULL);
  uv_close((uv_handle_t *)&b->period, NULL);
  uv_close((uv_handle_t *)&b->stop, NULL);
  uv_close((uv_handle_t *)&b->prep, NULL);
}

/* Moves every object of the message into the cache's stores (each is its own allocation in
 * an unpacked message: the stores free them one by one). */
#define MOVE(arr, n, kind, NS, NAME)                                                               \
  for (size_t i = 0; i < m->n; i++) {                                                              \
    char key[512];                                                                                 \
    kc_store_key(key, sizeof(key), NS, NAME);                                                      \
    if (kc_store_put(sch_cache_store(c, kind), key, m->arr[i], "1") != 0)                          \
      return KC_ENOMEM;                                                                            \
    m->arr[i] = NULL;                                                                              \
  }                                                                                                \
  m->n = 0

static int fill(sch_cache *c, Kiln__Snapshot *m) {
  MOVE(nodes, n_nodes, SCH_CACHE_NODES, NULL, m->nodes[i]->name);
  MOVE(pods, n_pods, SCH_CACHE_PODS, m->pods[i]->namespace_, m->pods[i]->name);
  MOVE(pod_groups, n_pod_groups, SCH_CACHE_PODGROUPS, m->pod_groups[i]->metadata->namespace_,
       m->pod_groups[i]->metadata->name);
  MOVE(queues, n_queues, SCH_CACHE_QUEUES, NULL, m->queues[i]->metadata->name);
  MOVE(priority_classes, n_priority_classes, SCH_CACHE_PRIORITY_CLASSES, NULL,
       m->priority_classes[i]->metadata->name);
  sch_cache_set_synced(c);
  return 0;
}

static Kiln__Snapshot *load(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = len > 0 ? malloc((size_t)len) : NULL;
  Kiln__Snapshot *m = NULL;
  if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len)
    m = kiln__snapshot__unpack(NULL, (size_t)len, buf);
  fclose(f);
  free(buf);
  return m;
}

int main(int argc, char **argv) {
  const char *snap_path = NULL;
  int seconds = 10;
  int64_t period_ns = 1000000000LL;
  bool on_loop = false;
  kc_flag flags[] = {
      {"snapshot", KC_FLAG_STRING, &snap_path, "packed kiln.Snapshot", NULL, NULL, false, NULL},
      {"seconds", KC_FLAG_INT, &seconds, "how long to run", "10", NULL, false, NULL},
      {"period", KC_FLAG_DURATION, &period_ns, "schedule period", "1s", NULL, false, NULL},
      {"session-on-loop", KC_FLAG_BOOL, &on_loop, "sessions on the loop thread (before)", "false",
       NULL, false, NULL},
  };
  char err[256];
  int nargs = 0;
  int rc =
      kc_flags_parse(flags, sizeof(flags) / sizeof(flags[0]), argc, argv, &nargs, err, sizeof(err));
  if (rc || snap_path == NULL || nargs > 0) {
    fprintf(stderr, "loopstall: %s\n", rc ? err : "--snapshot FILE is required");
    return 2;
  }
  /* The status writes to nobody fail with a warning each: not this tool's output. */
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0 && getenv("LOOPSTALL_LOG") == NULL)
    kc_log_set_stream_fd(devnull);
  else
    /* LOOPSTALL_LOG=3 (or 5, idle sessions too): the shell's line per session, where the
     * loop's time went. */
    kc_log_verbosity = (int)strtol(getenv("LOOPSTALL_LOG"), NULL, 10);
  Kiln__Snapshot *m = load(snap_path);
  if (m == NULL) {
    fprintf(stderr, "loopstall: cannot read %s\n", snap_path);
    return 1;
  }
  size_t nnodes = m->n_nodes, npods = m->n_pods;
  uv_loop_t loop;
  uv_loop_init(&loop);
  kc_loopwatch_configure(&loop);
  kc_config cfg = {0};
  cfg.server = strdup("https://127.0.0.1:1");
  kc_client_options copt = KC_CLIENT_OPTIONS_INIT(0, 0);
  kc_client *client = NULL;
  kc_loopwatch *lw = NULL;
  bench b = {0};
  sch_shell_options so = {0};
  so.schedule_period_ns = period_ns;
  so.bind_delay_ms = 3600 * 1000; /* held: nothing is sent during the run */
  so.session_on_loop = on_loop;
  if (kc_client_new(&loop, &cfg, &copt, &client) != 0 ||
      sch_shell_new(&loop, client, NULL, NULL, &so, &b.sh) != 0 ||
      fill(sch_shell_cache(b.sh), m) != 0 || kc_loopwatch_new(&loop, NULL, &lw) != 0) {
    fprintf(stderr, "loopstall: setup failed\n");
    return 1;
  }
  kiln__snapshot__free_unpacked(m, NULL);
  uv_timer_init(&loop, &b.tick);
  uv_timer_init(&loop, &b.period);
  uv_timer_init(&loop, &b.stop);
  b.tick.data = b.period.data = b.stop.data = b.prep.data = &b;
  uv_prepare_init(&loop, &b.prep);
  b.cpu0 = thread_cpu_ns();
  b.t_start = uv_hrtime();
  uv_prepare_start(&b.prep, on_prepare);
  b.last_tick = uv_hrtime();
  uv_timer_start(&b.tick, on_tick, 1, 1);
  uv_timer_start(&b.period, on_period, 0, (uint64_t)(period_ns / 1000000));
  uv_timer_start(&b.stop, on_stop, (uint64_t)seconds * 1000, 0);
  uv_run(&loop, UV_RUN_ONCE);
  while (!b.stopping)
    uv_run(&loop, UV_RUN_ONCE);
  printf("{\"nodes\":%zu,\"pods\":%zu,\"session_on_loop\":%s,\"sessions\":%llu,"
         "\"longest_busy_ms\":%.1f,\"longest_busy_cpu_ms\":%.1f,\"longest_cpu_at_s\":%.2f,\"worst_"
         "tick_late_ms\":%.1f,\"stretches_over_20ms\":%llu,"
         "\"longest_session_ms\":%.1f}\n",
         nnodes, npods, on_loop ? "true" : "false", (unsigned long long)sch_shell_sessions(b.sh),
         (double)kc_loopwatch_longest_ns(lw) / 1e6, (double)b.longest_cpu_ns / 1e6,
         (double)b.longest_at_ns / 1e9, (double)b.worst_late_ns / 1e6, (unsigned long long)b.over20,
         (double)b.longest_session_ns / 1e6);
  kc_loopwatch_free(lw);
  sch_shell_free(b.sh);
  kc_client_free(client);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  kc_config_close(&cfg);
  return 0;
}
