/* kiln-replay: one scheduling session on a snapshot file, offline (issue 7 item 5).
 *
 *   kiln-replay [--scheduler-conf CONF] [--percentage-nodes-to-find P] FILE
 *
 * FILE is a packed Kiln__Snapshot: what `kiln-scheduler --dump-snapshot` (or SIGUSR2) writes,
 * or `tests/bench/sessions --write-snapshot`. CONF is a Volcano scheduler configuration
 * (default: Volcano's). Prints, one per line and in this order:
 *
 *   bind NS/POD -> NODE [score S]     (S: the node-order score that chose it, when scored)
 *   evict NS/POD: REASON                (REASON: preempt, reclaim: the action that chose it)
 *   nominate NS/POD -> NODE             (a preemptor pipelined onto the room its victims free)
 *   unschedulable NS/POD: WHY           (each pending task of ours that was not placed)
 *   gated NS/POD: GATE,...              (a pending pod of ours not tried: its schedulingGates)
 *   podgroup NS/NAME: PHASE [CONDITION REASON: MESSAGE]
 *   summary: N binds, N evicts, N unschedulable, session S s
 *
 * The session's clock and condition ids are fixed (--now, "replay"), so two replays of one file
 * print the same text; that makes a before/after comparison of a change a diff. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kc_error.h"
#include "kc_file.h"
#include "kc_flags.h"
#include "kc_log.h"
#include "sch_conf.h"
#include "sch_conf_file.h"
#include "sch_framework.h"

static const char *pod_ns(const sch_task *t) {
  return t->pod && t->pod->namespace_ ? t->pod->namespace_ : "";
}
static const char *pod_name(const sch_task *t) {
  return t->pod && t->pod->name ? t->pod->name : "?";
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_result(FILE *out, const sch_snapshot *snap, const sch_result *r, double secs) {
  for (size_t i = 0; i < r->nbinds; i++) {
    const sch_task *t = &snap->tasks[r->binds[i].task];
    fprintf(out, "bind %s/%s -> %s", pod_ns(t), pod_name(t), snap->nodes[r->binds[i].node].name);
    if (t->scored)
      fprintf(out, " score %.0f", t->score);
    fputc('\n', out);
  }
  for (size_t i = 0; i < r->nevicts; i++) {
    const sch_task *t = &snap->tasks[r->evicts[i].task];
    fprintf(out, "evict %s/%s: %s\n", pod_ns(t), pod_name(t),
            r->evicts[i].reason ? r->evicts[i].reason : "");
  }
  for (size_t i = 0; i < r->nnominations; i++) {
    const sch_task *t = &snap->tasks[r->nominations[i].task];
    fprintf(out, "nominate %s/%s -> %s\n", pod_ns(t), pod_name(t),
            snap->nodes[r->nominations[i].node].name);
  }
  for (size_t i = 0; i < r->nwhy; i++) {
    const sch_task *t = &snap->tasks[r->why[i].task];
    fprintf(out, "unschedulable %s/%s: %s\n", pod_ns(t), pod_name(t),
            r->why[i].message ? r->why[i].message : "");
  }
  for (int32_t i = 0; i < snap->ntasks; i++) {
    const sch_task *t = &snap->tasks[i];
    if (t->job < 0 || t->status != SCH_TASK_PENDING || !t->gated)
      continue;
    fprintf(out, "gated %s/%s: ", pod_ns(t), pod_name(t));
    for (size_t g = 0; g < t->pod->n_scheduling_gates; g++)
      fprintf(out, "%s%s", g ? "," : "", t->pod->scheduling_gates[g]);
    fputc('\n', out);
  }
  for (size_t i = 0; i < r->npod_groups; i++) {
    const sch_pg_status *ps = &r->pod_groups[i];
    fprintf(out, "podgroup %s: %s", snap->jobs[ps->job].key, sch_pg_phase_str(ps->phase));
    if (ps->has_condition)
      fprintf(out, " %s %s: %s", ps->condition.type ? ps->condition.type : "",
              ps->condition.reason ? ps->condition.reason : "",
              ps->condition.message ? ps->condition.message : "");
    fputc('\n', out);
  }
  fprintf(out, "summary: %zu binds, %zu evicts, %zu unschedulable, session %.3f s\n", r->nbinds,
          r->nevicts, r->nwhy, secs);
}

int main(int argc, char **argv) {
  const char *conf_path = NULL;
  int pct = 0;
  bool help = false;
  kc_flag flags[] = {
      {"scheduler-conf", KC_FLAG_STRING, &conf_path,
       "The absolute path of scheduler configuration file (default: Volcano's default)", NULL, NULL,
       false, NULL},
      {"percentage-nodes-to-find", KC_FLAG_INT, &pct,
       "The percentage of nodes to find and score; 0: adaptive", "0", NULL, false, NULL},
      {"v", KC_FLAG_INT, &kc_log_verbosity, "log verbosity", "0", NULL, false, NULL},
      {"help", KC_FLAG_BOOL, &help, "this help", NULL, NULL, false, NULL},
  };
  const size_t nflags = sizeof(flags) / sizeof(flags[0]);
  char err[512] = "";
  int nargs = 0;
  if (kc_flags_parse(flags, nflags, argc, argv, &nargs, err, sizeof(err)) != 0) {
    fprintf(stderr, "kiln-replay: %s\n", err);
    return 2;
  }
  if (help || nargs != 1) {
    kc_flags_usage(help ? stdout : stderr, "kiln-replay SNAPSHOT-FILE",
                   "runs one scheduling session on a snapshot and prints its decisions", flags,
                   nflags);
    return help ? 0 : 2;
  }
  const char *path = argv[0];
  char *buf = NULL;
  size_t len = 0;
  Kiln__Snapshot *msg = NULL;
  sch_conf *conf = NULL;
  sch_snapshot *snap = NULL;
  sch_session *ssn = NULL;
  sch_result *r = NULL;
  int status = 1;
  /* A dump of a large cluster is a few hundred MB; the bound only stops a wrong file. */
  int rc = kc_file_read(path, (size_t)4 << 30, &buf, &len);
  if (rc != 0) {
    fprintf(stderr, "kiln-replay: cannot read %s: %s\n", path, kc_strerror(rc));
    goto out;
  }
  msg = kiln__snapshot__unpack(NULL, len, (const uint8_t *)buf);
  if (msg == NULL) {
    fprintf(stderr, "kiln-replay: %s is not a Snapshot message\n", path);
    goto out;
  }
  rc = conf_path ? sch_conf_read_file(conf_path, &conf, err, sizeof(err)) : sch_conf_default(&conf);
  if (rc != 0) {
    fprintf(stderr, "kiln-replay: scheduler configuration: %s (%s)\n", err, kc_strerror(rc));
    goto out;
  }
  /* The snapshot's own scheduler name decides which pods are ours, as in the live process. */
  const char *names[1] = {msg->scheduler_name};
  sch_snapshot_options so = {0};
  if (msg->scheduler_name && msg->scheduler_name[0]) {
    so.scheduler_names = names;
    so.nscheduler_names = 1;
  }
  rc = sch_snapshot_new(msg, &so, &snap);
  if (rc != 0) {
    fprintf(stderr, "kiln-replay: snapshot: %s\n", kc_strerror(rc));
    goto out;
  }
  sch_session_options opts = SCH_SESSION_OPTIONS_DEFAULT;
  opts.percentage_nodes_to_find = pct;
  opts.now = msg->time_unix_nano > 0 ? msg->time_unix_nano / 1000000000 : 1;
  opts.session_uid = "replay";
  printf("snapshot %s: %d nodes, %d tasks, %d jobs, %d queues\n", path, snap->nnodes, snap->ntasks,
         snap->njobs, snap->nqueues);
  double t0 = now_s();
  rc = sch_session_open(snap, conf, &opts, &ssn);
  if (rc == 0)
    rc = sch_session_run(ssn);
  if (ssn) {
    int crc = sch_session_close(ssn, &r);
    ssn = NULL;
    if (rc == 0)
      rc = crc;
  }
  double t1 = now_s();
  if (rc != 0) {
    fprintf(stderr, "kiln-replay: session: %s\n", kc_strerror(rc));
    goto out;
  }
  print_result(stdout, snap, r, t1 - t0);
  status = 0;
out:
  sch_result_free(r);
  sch_snapshot_free(snap);
  sch_conf_free(conf);
  if (msg)
    kiln__snapshot__free_unpacked(msg, NULL);
  free(buf);
  return status;
}
