/* rescheduling (Volcano pkg/scheduler/plugins/rescheduling): every `interval` (a Go
 * duration, default 5m; an invalid one is 5m) it registers the VictimTasks functions of its
 * strategies, which the shuffle action (and the end of preempt) evicts. The one strategy
 * Volcano has is lowNodeUtilization (the default):
 *
 *   - a node is low when every dimension (cpu, memory) is under `thresholds` percent (an
 *     unschedulable node is never low), high when it is not low and some dimension is over
 *     `targetThresholds` percent (defaults 100, 100: nothing is ever high);
 *   - nothing happens when no node is low, every node is low, or no node is high;
 *   - the room on the low nodes is the sum of (targetThreshold - utilization) of each;
 *   - high nodes, fullest first (cpu% + memory%), give up their pods lowest priority first
 *     (best-effort first among equals) while some dimension of the node is still at or over
 *     its target and the low nodes still have room in both dimensions; only Running tasks of
 *     our jobs are victims.
 *
 * Volcano measures utilization with a metrics source (the usage plugin's Prometheus or
 * Elasticsearch averages); Kiln has none, so utilization is what the pods on the node
 * request, over its allocatable (what kube-descheduler's LowNodeUtilization also uses),
 * leaving out pods being deleted.
 *
 * Arguments, as in Volcano's configuration:
 *   interval: 5m
 *   strategies:
 *   - name: lowNodeUtilization
 *     params: {thresholds: {cpu: 20, memory: 20}, targetThresholds: {cpu: 80, memory: 80}}
 * Volcano also reads `metricsPeriod` (which window of the metrics source's averages to
 * compare) and a `pod` threshold it never compares, and lists thresholdPriorityClassName,
 * nodeFit, ... in its defaults without reading them: the configuration loader names those as
 * having no effect (sch_registry.c). The interval is measured across sessions, as Volcano's
 * util.IsToBeExecuted does, on the session's `now`. When the strategies last ran comes in with the
 * session's options and goes out with its result (sch_carry), which the shell hands to the next
 * session: Volcano keeps it in a package variable, which would make a replay depend on the
 * process's history. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_flags.h"
#include "kc_log.h"
#include "sch_framework.h"

#define DEFAULT_INTERVAL_S 300

typedef struct lnu_conf {
  double thr_cpu, thr_mem, target_cpu, target_mem;
} lnu_conf;

typedef struct node_use {
  int32_t node;
  double cpu, mem; /* percent of allocatable */
} node_use;

static double pct(int64_t used, int64_t total) {
  return total > 0 ? (double)used * 100.0 / (double)total : 0;
}

/* Pods being deleted do not count: they are leaving, and counting them would evict again
 * for the same excess at the next interval. */
static void node_uses(const sch_snapshot *snap, node_use *u) {
  for (int32_t n = 0; n < snap->nnodes; n++) {
    const sch_node *nd = &snap->nodes[n];
    int64_t cpu = sch_sub_sat(nd->used.milli_cpu, nd->releasing.milli_cpu);
    int64_t mem = sch_sub_sat(nd->used.memory, nd->releasing.memory);
    u[n] = (node_use){n, pct(cpu, nd->allocatable.milli_cpu), pct(mem, nd->allocatable.memory)};
  }
}

static int by_use_desc(const void *a, const void *b) {
  const node_use *l = a, *r = b;
  double sl = l->cpu + l->mem, sr = r->cpu + r->mem;
  return sl > sr ? -1 : sl < sr;
}

/* High: some dimension over its target. */
static bool over_target(const node_use *u, const lnu_conf *c) {
  return u->cpu > c->target_cpu || u->mem > c->target_mem;
}

/* A high node gives up pods while some dimension is at or over its target (Volcano's
 * isContinueEvictPods compares with >=, its high filter with >). */
static bool at_target(const node_use *u, const lnu_conf *c) {
  return u->cpu >= c->target_cpu || u->mem >= c->target_mem;
}

/* Pods of node n, candidates only, lowest priority first, best-effort first among equals. */
static int victim_order(const void *a, const void *b, void *arg) {
  const sch_snapshot *snap = arg;
  const sch_task *l = &snap->tasks[*(const int32_t *)a], *r = &snap->tasks[*(const int32_t *)b];
  if (l->priority != r->priority)
    return l->priority < r->priority ? -1 : 1;
  if (l->best_effort != r->best_effort)
    return l->best_effort ? -1 : 1;
  return (*(const int32_t *)a > *(const int32_t *)b) - (*(const int32_t *)a < *(const int32_t *)b);
}

/* Takes victims from one high node into out while it is over target and room is left. */
static void drain(const sch_snapshot *snap, node_use *u, const lnu_conf *c, const bool *is_cand,
                  double room[2], int32_t *out, size_t *nout, int32_t *scratch) {
  const sch_node *nd = &snap->nodes[u->node];
  size_t n = 0;
  for (int32_t k = nd->task_head; k >= 0; k = snap->tasks[k].node_next)
    if (is_cand[k])
      scratch[n++] = k;
  qsort_r(scratch, n, sizeof(*scratch), victim_order, (void *)snap);
  for (size_t i = 0; i < n; i++) {
    if (!at_target(u, c) || room[0] <= 0 || room[1] <= 0)
      return;
    const sch_task *t = &snap->tasks[scratch[i]];
    room[0] -= (double)t->resreq.milli_cpu;
    room[1] -= (double)t->resreq.memory;
    u->cpu -= pct(t->resreq.milli_cpu, nd->allocatable.milli_cpu);
    u->mem -= pct(t->resreq.memory, nd->allocatable.memory);
    out[(*nout)++] = scratch[i];
  }
}

static void lnu_victims(sch_session *ssn, void *ctx, const int32_t *cands, size_t n, int32_t *out,
                        size_t *nout) {
  const lnu_conf *c = ctx;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  *nout = 0;
  node_use *u = calloc((size_t)snap->nnodes + 1, sizeof(*u));
  bool *is_cand = calloc((size_t)snap->ntasks + 1, sizeof(*is_cand));
  int32_t *scratch = malloc(((size_t)snap->ntasks + 1) * sizeof(*scratch));
  if (!u || !is_cand || !scratch)
    goto out;
  for (size_t i = 0; i < n; i++)
    is_cand[cands[i]] = true;
  node_uses(snap, u);
  double room[2] = {0, 0};
  size_t nlow = 0, nhigh = 0;
  for (int32_t i = 0; i < snap->nnodes; i++) {
    const sch_node *nd = &snap->nodes[i];
    if (!nd->unschedulable && u[i].cpu < c->thr_cpu && u[i].mem < c->thr_mem) {
      nlow++;
      room[0] += (c->target_cpu - u[i].cpu) * (double)nd->allocatable.milli_cpu / 100.0;
      room[1] += (c->target_mem - u[i].mem) * (double)nd->allocatable.memory / 100.0;
    } else if (over_target(&u[i], c)) {
      u[nhigh++] = u[i]; /* i >= nhigh: compacting in place is safe */
    }
  }
  if (nlow == 0 || nlow == (size_t)snap->nnodes || nhigh == 0) {
    KC_V(4, "rescheduling: %zu low and %zu high nodes: nothing to move", nlow, nhigh);
    goto out;
  }
  qsort(u, nhigh, sizeof(*u), by_use_desc);
  for (size_t h = 0; h < nhigh; h++)
    drain(snap, &u[h], c, is_cand, room, out, nout, scratch);
  KC_V(3, "rescheduling: lowNodeUtilization chose %zu victims on %zu high nodes", *nout, nhigh);
out:
  free(u);
  free(is_cand);
  free(scratch);
}

static double arg_pct(const sch_args *a, const char *prefix, const char *dim, double def) {
  char key[160];
  snprintf(key, sizeof(key), "%s.%s", prefix, dim);
  return sch_args_double(a, key, def);
}

/* Reads the lowNodeUtilization strategy's params (or its defaults); false when the
 * configuration lists strategies and none of them is lowNodeUtilization. */
static bool read_lnu(const sch_args *a, lnu_conf *c) {
  *c = (lnu_conf){100, 100, 100, 100};
  if (!sch_args_get(a, "strategies.0.name"))
    return true;
  for (int i = 0;; i++) {
    char key[96], prefix[96];
    snprintf(key, sizeof(key), "strategies.%d.name", i);
    const char *name = sch_args_get(a, key);
    if (!name)
      return false;
    if (strcmp(name, "lowNodeUtilization") != 0) {
      KC_WARN("rescheduling: strategy \"%s\" is not one Volcano has; ignored", name);
      continue;
    }
    snprintf(prefix, sizeof(prefix), "strategies.%d.params.thresholds", i);
    c->thr_cpu = arg_pct(a, prefix, "cpu", 100);
    c->thr_mem = arg_pct(a, prefix, "memory", 100);
    snprintf(prefix, sizeof(prefix), "strategies.%d.params.targetThresholds", i);
    c->target_cpu = arg_pct(a, prefix, "cpu", 100);
    c->target_mem = arg_pct(a, prefix, "memory", 100);
    return true;
  }
}

static int rescheduling_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  int64_t interval = DEFAULT_INTERVAL_S, ns;
  const char *iv = sch_args_get(&conf->args, "interval");
  if (iv && kc_parse_duration(iv, &ns) == 0 && ns > 0)
    interval = ns / 1000000000;
  int64_t now = sch_session_opts(ssn)->now;
  int64_t last_run = sch_session_opts(ssn)->carry.rescheduling_last_run;
  if (last_run >= 0 && now - last_run < interval && now >= last_run)
    return 0;
  lnu_conf *c = malloc(sizeof(*c));
  if (!c)
    return KC_ENOMEM;
  *state = c;
  if (!read_lnu(&conf->args, c))
    return 0;
  sch_session_carry(ssn)->rescheduling_last_run = now;
  return sch_add_victim_tasks_fn(ssn, lnu_victims, c);
}

static void rescheduling_close(sch_session *ssn, void *state) {
  (void)ssn;
  free(state);
}

const sch_plugin sch_plugin_rescheduling = {"rescheduling", rescheduling_open, rescheduling_close};
