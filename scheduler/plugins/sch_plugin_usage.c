/* usage (Volcano pkg/scheduler/plugins/usage): nodes by their measured load, from the metrics
 * source of the configuration's `metrics` section (Prometheus, Elasticsearch), which the shell
 * reads every `interval` off the event loop and hands the session in the snapshot
 * (node_usages, sch_usage.c). Its averages are over Volcano's NODE_METRICS_PERIOD (10m).
 *
 * Arguments (Volcano's, with its defaults): usage.weight (5), cpu.weight (1), memory.weight
 * (1), thresholds.cpu (80) and thresholds.mem (80), in percent; a threshold that is not an
 * integer reads as 0, as Volcano's type assertion does.
 * Predicate: a node whose cpu (then memory) average is over its threshold takes no pod, with
 * Volcano's reason ("the CPU load of the node exceeds the upper limit.", "the memory load of
 * the node exceeds the upper limit."), unresolvable; `enablePredicate: false` keeps only the
 * score. Node order: ((100 - cpu) / 100 x cpu.weight + (100 - mem) / 100 x memory.weight) /
 * (cpu.weight + memory.weight) x 100 x usage.weight. A node whose figures are older than 5
 * minutes (MetricsActiveTime), or that has none, passes and scores 0. */
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"

#define USAGE_ACTIVE_S  300 /* MetricsActiveTime */
#define USAGE_MAX_SCORE 100.0

typedef struct usage_state {
  int64_t weight, cpu_weight, mem_weight;
  double cpu_threshold, mem_threshold;
  int64_t now;
  const Kiln__NodeUsage **by_node; /* per node, NULL: none */
  int32_t cpu_reason, mem_reason;
} usage_state;

/* The node's figures when they are recent enough to act on, else NULL. */
static const Kiln__NodeUsage *fresh(const usage_state *st, sch_session *ssn, const sch_node *n) {
  int32_t ni = (int32_t)(n - sch_session_snapshot(ssn)->nodes);
  const Kiln__NodeUsage *u = st->by_node[ni];
  return u && st->now - u->metrics_time <= USAGE_ACTIVE_S ? u : NULL;
}

static int usage_predicate(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n,
                           sch_fit *why) {
  (void)t;
  usage_state *st = ctx;
  const Kiln__NodeUsage *u = fresh(st, ssn, n);
  if (!u)
    return SCH_FIT;
  if (u->cpu > st->cpu_threshold) {
    sch_fit_add(why, st->cpu_reason);
    return SCH_UNRESOLVABLE;
  }
  if (u->memory > st->mem_threshold) {
    sch_fit_add(why, st->mem_reason);
    return SCH_UNRESOLVABLE;
  }
  return SCH_FIT;
}

static double usage_score(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n) {
  (void)t;
  usage_state *st = ctx;
  const Kiln__NodeUsage *u = fresh(st, ssn, n);
  int64_t w = st->cpu_weight + st->mem_weight;
  if (!u || w == 0)
    return 0;
  double cpu = (100 - u->cpu) / 100 * (double)st->cpu_weight;
  double mem = (100 - u->memory) / 100 * (double)st->mem_weight;
  return (cpu + mem) / (double)w * USAGE_MAX_SCORE * (double)st->weight;
}

/* thresholds.<name>: absent keeps the default; not an integer is 0 (Volcano: threshold.(int)). */
static double threshold(const sch_args *a, const char *key, double def) {
  const char *v = sch_args_get(a, key);
  if (!v)
    return def;
  char *end;
  long long n = strtoll(v, &end, 10);
  if (end == v || *end) {
    KC_WARN("usage: %s: %s is not an integer; Volcano reads it as 0", key, v);
    return 0;
  }
  return (double)n;
}

static int usage_setup(sch_session *ssn, const sch_plugin_conf *conf, usage_state *st) {
  const sch_args *a = &conf->args;
  st->weight = sch_args_int(a, "usage.weight", 5);
  st->cpu_weight = sch_args_int(a, "cpu.weight", 1);
  st->mem_weight = sch_args_int(a, "memory.weight", 1);
  st->cpu_threshold = threshold(a, "thresholds.cpu", 80);
  st->mem_threshold = threshold(a, "thresholds.mem", 80);
  st->now = sch_session_opts(ssn)->now;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  st->by_node = calloc((size_t)snap->nnodes + 1, sizeof(*st->by_node));
  if (!st->by_node)
    return KC_ENOMEM;
  for (size_t i = 0; snap->msg && i < snap->msg->n_node_usages; i++) {
    const Kiln__NodeUsage *u = snap->msg->node_usages[i];
    int32_t ni = u->node ? sch_snapshot_node(snap, u->node) : -1;
    if (ni >= 0)
      st->by_node[ni] = u;
  }
  st->cpu_reason = sch_session_reason(ssn, "the CPU load of the node exceeds the upper limit.");
  st->mem_reason = sch_session_reason(ssn, "the memory load of the node exceeds the upper limit.");
  if (st->cpu_reason < 0 || st->mem_reason < 0)
    return KC_ENOMEM;
  int rc = sch_add_predicate_fn(ssn, usage_predicate, st);
  return rc ? rc : sch_add_node_order_fn(ssn, usage_score, st);
}

static void usage_close(sch_session *ssn, void *state) {
  (void)ssn;
  usage_state *st = state;
  if (st)
    free(st->by_node);
  free(st);
}

/* A plugin that fails to open is not closed by the session: it frees its own state. */
static int usage_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  usage_state *st = calloc(1, sizeof(*st));
  if (!st)
    return KC_ENOMEM;
  int rc = usage_setup(ssn, conf, st);
  if (rc < 0) {
    usage_close(ssn, st);
    return rc;
  }
  *state = st;
  return 0;
}

const sch_plugin sch_plugin_usage = {
    .name = "usage",
    .open = usage_open,
    .close = usage_close,
};
