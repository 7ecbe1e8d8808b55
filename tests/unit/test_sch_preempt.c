/* Preemption: the victim callbacks of each plugin, Volcano's tier voting over them, and
 * the preempt action on hand-built snapshots (victims, nominations, all-or-nothing gangs,
 * preemptionPolicy Never, volcano.sh/preemptable "false"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include <stdlib.h>
#include "sch_conf.h"
#include "sch_framework.h"
#include "test_sch_plugins_fixture.h"

static const char preempt_conf[] = "actions: \"enqueue, allocate, preempt\"\n"
                                   "tiers:\n"
                                   "- plugins:\n"
                                   "  - name: priority\n"
                                   "  - name: gang\n"
                                   "  - name: conformance\n"
                                   "- plugins:\n"
                                   "  - name: predicates\n"
                                   "  - name: nodeorder\n";

static void priority_class(fx *f, const char *name, int32_t value) {
  Kiln__PriorityClass *pc = fx_alloc(sizeof(*pc));
  kiln__priority_class__init(pc);
  pc->metadata = fx_meta(NULL, name);
  pc->has_value = 1;
  pc->value = value;
  FX_APPEND(f->msg->priority_classes, f->msg->n_priority_classes, pc);
}

static bool evicted(const fx *f, const sch_result *r, const char *pod) {
  for (size_t i = 0; i < r->nevicts; i++)
    if (r->evicts[i].task == fx_task(f, pod))
      return true;
  return false;
}

static const char *nominated(const fx *f, const sch_result *r, const char *pod) {
  for (size_t i = 0; i < r->nnominations; i++)
    if (r->nominations[i].task == fx_task(f, pod))
      return f->snap->nodes[r->nominations[i].node].name;
  return NULL;
}

/* Two 2-cpu nodes full of a low job (4 x 1 cpu, minMember low_min); a high gang of two
 * 1-cpu pods waits. */
static fx *full_cluster(int32_t low_min, Kiln__Pod **low, Kiln__Pod **high) {
  fx *f = fx_new();
  priority_class(f, "high", 1000);
  fx_node(f, "n1", 2000, 8 * GI, 110);
  fx_node(f, "n2", 2000, 8 * GI, 110);
  fx_pg(f, "low", "default", low_min, "Running");
  static const char *const ln[] = {"low-0", "low-1", "low-2", "low-3"};
  for (int i = 0; i < 4; i++)
    low[i] = fx_pod(f, ln[i], "low", 1000, GI, i < 2 ? "n1" : "n2");
  Kiln__PodGroup *hp = fx_pg(f, "high", "default", 2, "Inqueue");
  hp->spec->priority_class_name = fx_str("high");
  high[0] = fx_pod(f, "high-0", "high", 1000, GI, NULL);
  high[1] = fx_pod(f, "high-1", "high", 1000, GI, NULL);
  high[0]->priority = high[1]->priority = 1000;
  return f;
}

static void test_preempt_between_jobs(void **state) {
  (void)state;
  Kiln__Pod *low[4], *high[2];
  fx *f = full_cluster(1, low, high);
  fx_open(f, preempt_conf);
  sch_result *r = fx_run(f);
  /* exactly the room the gang needs: two victims, the gang pipelined and nominated */
  assert_int_equal(r->nevicts, 2);
  assert_int_equal(r->nbinds, 0);
  for (size_t i = 0; i < r->nevicts; i++)
    assert_string_equal(r->evicts[i].reason, "preempt");
  assert_non_null(nominated(f, r, "high-0"));
  assert_non_null(nominated(f, r, "high-1"));
  assert_true(r->preempt_attempts >= 2);
  /* no node promised beyond what its victims free */
  for (int32_t n = 0; n < f->snap->nnodes; n++) {
    sch_resource fut;
    sch_node_future_idle(&f->snap->nodes[n], &fut);
    assert_true(fut.milli_cpu >= 0);
  }
  sch_result_free(r);
  fx_free(f);
}

/* Volcano's predicate error cache (predicateErrorCacheEnable, default true): once high-0
 * fails the predicates on n2 (its host port is taken there), n2 stays out of the search for
 * every later task of the same job and role (volcano.sh/task-spec), so high-1, which would
 * fit there, finds no room and the gang gets nothing. With the cache off, or without a
 * role, high-1 preempts on n2. n1 has room for one of them only (low-0 may not go). */
static sch_result *run_err_cache(bool role, const char *conf, fx **out) {
  Kiln__Pod *low[4], *high[2];
  fx *f = full_cluster(1, low, high);
  low[0]->not_preemptable = true;
  fx_pod_host_port(low[2], 8080);
  fx_pod_host_port(high[0], 8080);
  high[0]->priority = 1001; /* tried first */
  if (role) {               /* the annotation, or the label (Volcano reads both) */
    high[0]->task_name = fx_str("worker");
    fx_pod_label(high[1], "volcano.sh/task-spec", "worker");
  }
  fx_open(f, conf);
  *out = f;
  return fx_run(f);
}

static void test_preempt_predicate_error_cache(void **state) {
  (void)state;
  static const char off[] = "actions: \"enqueue, allocate, preempt\"\n"
                            "configurations:\n"
                            "- name: preempt\n"
                            "  arguments:\n"
                            "    predicateErrorCacheEnable: false\n"
                            "tiers:\n"
                            "- plugins:\n"
                            "  - name: priority\n"
                            "  - name: gang\n"
                            "  - name: conformance\n"
                            "- plugins:\n"
                            "  - name: predicates\n"
                            "  - name: nodeorder\n";
  fx *f;
  sch_result *r = run_err_cache(true, preempt_conf, &f);
  assert_int_equal(r->nevicts, 0);
  assert_int_equal(r->nnominations, 0);
  sch_result_free(r);
  fx_free(f);
  r = run_err_cache(true, off, &f);
  assert_int_equal(r->nevicts, 2);
  assert_string_equal(nominated(f, r, "high-0"), "n1");
  assert_string_equal(nominated(f, r, "high-1"), "n2");
  sch_result_free(r);
  fx_free(f);
  r = run_err_cache(false, preempt_conf, &f);
  assert_int_equal(r->nevicts, 2);
  assert_string_equal(nominated(f, r, "high-1"), "n2");
  sch_result_free(r);
  fx_free(f);
}

/* The low gang needs all four of its pods: nobody may take one. */
static void test_preempt_keeps_min_available(void **state) {
  (void)state;
  Kiln__Pod *low[4], *high[2];
  fx *f = full_cluster(4, low, high);
  fx_open(f, preempt_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  assert_int_equal(r->nnominations, 0);
  assert_int_equal(r->nreclaimed, 0);
  assert_int_equal(r->reclaim_attempts, 0); /* no reclaim configured */
  sch_result_free(r);
  fx_free(f);
  /* minMember 3: one pod may go, but the gang needs two places: all or nothing */
  f = full_cluster(3, low, high);
  fx_open(f, preempt_conf);
  r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  assert_int_equal(r->nnominations, 0);
  sch_result_free(r);
  fx_free(f);
}

static void test_preempt_policy_never_and_not_preemptable(void **state) {
  (void)state;
  Kiln__Pod *low[4], *high[2];
  fx *f = full_cluster(1, low, high);
  high[0]->preemption_policy = fx_str("Never");
  high[1]->preemption_policy = fx_str("Never");
  fx_open(f, preempt_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  sch_result_free(r);
  fx_free(f);

  f = full_cluster(1, low, high);
  for (int i = 0; i < 4; i++)
    low[i]->not_preemptable = true;
  fx_open(f, preempt_conf);
  r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  sch_result_free(r);
  fx_free(f);

  /* only two marked: the other two make the room */
  f = full_cluster(1, low, high);
  low[0]->not_preemptable = low[2]->not_preemptable = true;
  fx_open(f, preempt_conf);
  r = fx_run(f);
  assert_int_equal(r->nevicts, 2);
  assert_true(evicted(f, r, "low-1"));
  assert_true(evicted(f, r, "low-3"));
  sch_result_free(r);
  fx_free(f);
}

/* Equal priority: nobody is a victim; another queue's pods are not preempt's business. */
static void test_preempt_needs_lower_priority_same_queue(void **state) {
  (void)state;
  Kiln__Pod *low[4], *high[2];
  fx *f = full_cluster(1, low, high);
  Kiln__PodGroup *hp = f->msg->pod_groups[1];
  free(hp->spec->priority_class_name);
  hp->spec->priority_class_name = NULL;
  high[0]->priority = high[1]->priority = 0;
  fx_open(f, preempt_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  sch_result_free(r);
  fx_free(f);

  f = full_cluster(1, low, high);
  fx_queue(f, "other", 1);
  hp = f->msg->pod_groups[1];
  free(hp->spec->queue);
  hp->spec->queue = fx_str("other");
  fx_open(f, preempt_conf);
  r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  sch_result_free(r);
  fx_free(f);
}

/* Inside one job: a pending high-priority task replaces a lower task of the same job. */
static void test_preempt_inside_job(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 2000, 8 * GI, 110);
  fx_pg(f, "mixed", "default", 3, "Running");
  fx_pod(f, "m-0", "mixed", 1000, GI, "n1");
  fx_pod(f, "m-1", "mixed", 1000, GI, "n1");
  Kiln__Pod *urgent = fx_pod(f, "m-urgent", "mixed", 1000, GI, NULL);
  urgent->priority = 50;
  fx_open(f, "actions: \"allocate, preempt\"\ntiers:\n- plugins:\n  - name: priority\n"
             "  - name: conformance\n");
  sch_result *r = fx_run(f);
  assert_int_equal(r->nevicts, 1);
  assert_string_equal(nominated(f, r, "m-urgent"), "n1");
  sch_result_free(r);
  fx_free(f);
}

/* ---- reclaim ---- */

static const char reclaim_conf[] = "actions: \"enqueue, allocate, reclaim\"\n"
                                   "tiers:\n"
                                   "- plugins:\n"
                                   "  - name: priority\n"
                                   "  - name: gang\n"
                                   "  - name: conformance\n"
                                   "- plugins:\n"
                                   "  - name: drf\n"
                                   "  - name: predicates\n"
                                   "  - name: proportion\n";

/* Queue qa (weight 1) fills two 2-cpu nodes; queue qb (weight 1) has four pods waiting. */
static fx *two_queues(Kiln__Queue **qa) {
  fx *f = fx_new();
  fx_node(f, "n1", 2000, 8 * GI, 110);
  fx_node(f, "n2", 2000, 8 * GI, 110);
  *qa = fx_queue(f, "qa", 1);
  fx_queue(f, "qb", 1);
  fx_pg(f, "a", "qa", 1, "Running");
  fx_pg(f, "b", "qb", 1, "Inqueue");
  static const char *const an[] = {"a-0", "a-1", "a-2", "a-3"};
  static const char *const bn[] = {"b-0", "b-1", "b-2", "b-3"};
  for (int i = 0; i < 4; i++) {
    fx_pod(f, an[i], "a", 1000, GI, i < 2 ? "n1" : "n2");
    fx_pod(f, bn[i], "b", 1000, GI, NULL);
  }
  return f;
}

static void test_reclaim_half(void **state) {
  (void)state;
  Kiln__Queue *qa;
  fx *f = two_queues(&qa);
  fx_open(f, reclaim_conf);
  sch_result *r = fx_run(f);
  /* equal weights: qb deserves half of the four cpus, and takes exactly that */
  assert_int_equal(r->nevicts, 2);
  for (size_t i = 0; i < r->nevicts; i++) {
    assert_string_equal(r->evicts[i].reason, "reclaim");
    assert_int_equal(f->snap->tasks[r->evicts[i].task].job, fx_job(f, "a") - f->snap->jobs);
  }
  assert_int_equal(r->nnominations, 2);
  /* The reclaim metrics: two tasks placed with one victim each, and every try counted. */
  assert_int_equal(r->nreclaimed, 2);
  assert_int_equal(r->reclaim_victims[0], 1);
  assert_int_equal(r->reclaim_victims[1], 1);
  assert_true(r->reclaim_attempts >= 2);
  sch_result_free(r);
  fx_free(f);
}

static void test_reclaim_not_from_unreclaimable_queue(void **state) {
  (void)state;
  Kiln__Queue *qa;
  fx *f = two_queues(&qa);
  qa->spec->has_reclaimable = 1;
  qa->spec->reclaimable = 0;
  fx_open(f, reclaim_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nevicts, 0);
  assert_int_equal(r->nnominations, 0);
  assert_int_equal(r->nreclaimed, 0);
  assert_true(r->reclaim_attempts >= 1); /* tried, nothing to take */
  sch_result_free(r);
  fx_free(f);
}

/* ---- shuffle and rescheduling ---- */

static const char shuffle_conf[] = "actions: \"shuffle\"\n"
                                   "tiers:\n"
                                   "- plugins:\n"
                                   "  - name: rescheduling\n"
                                   "    arguments:\n"
                                   "      interval: 10m\n"
                                   "      strategies:\n"
                                   "      - name: lowNodeUtilization\n"
                                   "        params:\n"
                                   "          thresholds: {cpu: 20, memory: 20}\n"
                                   "          targetThresholds: {cpu: 60, memory: 60}\n";

/* n1 is full (4 of 4 cpu), n2 empty: lowest priority first, n1 gives up pods until it is
 * at or under 60%: two of its four. The session starts from carry, as the shell hands it
 * what the session before left (r->carry). */
static sch_result *shuffle_once(int64_t now, bool configured_conf, sch_carry carry) {
  fx *f = fx_new();
  fx_node(f, "n1", 4000, 16 * GI, 110);
  fx_node(f, "n2", 4000, 16 * GI, 110);
  fx_pg(f, "j", "default", 1, "Running");
  static const char *const names[] = {"p0", "p1", "p2", "p3"};
  for (int i = 0; i < 4; i++)
    fx_pod(f, names[i], "j", 1000, GI, "n1")->priority = i == 2 ? -5 : i;
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  const char *y = configured_conf ? shuffle_conf
                                  : "actions: shuffle\ntiers:\n- plugins:\n"
                                    "  - name: rescheduling\n";
  assert_int_equal(sch_conf_parse(y, strlen(y), &f->conf, NULL, 0), 0);
  sch_session_options o = SCH_SESSION_OPTIONS_DEFAULT;
  o.now = now;
  o.carry = carry;
  assert_int_equal(sch_session_open(f->snap, f->conf, &o, &f->ssn), 0);
  sch_result *r = fx_run(f);
  for (size_t i = 0; i < r->nevicts; i++) {
    assert_string_equal(r->evicts[i].reason, "shuffle");
    /* remember the names: the snapshot goes with f */
    const char *name = f->snap->tasks[r->evicts[i].task].pod->name;
    r->evicts[i].task = name[1] - '0';
  }
  fx_free(f);
  return r;
}

static void test_shuffle_low_node_utilization(void **state) {
  (void)state;
  /* a list of mappings in arguments flattens by index */
  sch_conf *c = NULL;
  assert_int_equal(sch_conf_parse(shuffle_conf, strlen(shuffle_conf), &c, NULL, 0), 0);
  const sch_args *a = &c->tiers[0].plugins[0].args;
  assert_string_equal(sch_args_get(a, "strategies.0.name"), "lowNodeUtilization");
  assert_string_equal(sch_args_get(a, "strategies.0.params.targetThresholds.cpu"), "60");
  assert_string_equal(sch_args_get(a, "interval"), "10m");
  sch_conf_free(c);
  sch_result *r = shuffle_once(2000000, true, (sch_carry)SCH_CARRY_INIT);
  assert_int_equal(r->nevicts, 2);
  assert_int_equal(r->evicts[0].task, 2); /* priority -5 first */
  assert_int_equal(r->evicts[1].task, 0); /* then priority 0 */
  sch_carry carry = r->carry;
  assert_int_equal(carry.rescheduling_last_run, 2000000);
  sch_result_free(r);
  /* within the interval: the strategies do not run, and the last run stays */
  r = shuffle_once(2000000 + 300, true, carry);
  assert_int_equal(r->nevicts, 0);
  assert_int_equal(r->carry.rescheduling_last_run, 2000000);
  sch_result_free(r);
  /* after it they do; Volcano's default thresholds (100%) never find a high node */
  r = shuffle_once(2000000 + 601, false, carry);
  assert_int_equal(r->nevicts, 0);
  assert_int_equal(r->carry.rescheduling_last_run, 2000000 + 601);
  sch_result_free(r);
}

/* Two independent sessions over the same snapshot and options decide the same: what the
 * first did is not kept in the process (a replay of a dumped snapshot matches the live run). */
static void test_shuffle_sessions_independent(void **state) {
  (void)state;
  for (int i = 0; i < 2; i++) {
    sch_result *r = shuffle_once(3000000, true, (sch_carry)SCH_CARRY_INIT);
    assert_int_equal(r->nevicts, 2);
    assert_int_equal(r->evicts[0].task, 2);
    assert_int_equal(r->evicts[1].task, 0);
    assert_int_equal(r->carry.rescheduling_last_run, 3000000);
    sch_result_free(r);
  }
  /* A carry from a run a minute earlier holds the strategies back, whatever ran before. */
  sch_result *r = shuffle_once(3000000, true, (sch_carry){3000000 - 60});
  assert_int_equal(r->nevicts, 0);
  sch_result_free(r);
}

/* lowNodeUtilization with Volcano's comparisons: a node is low when every dimension is under
 * its threshold (at it is not low), and a high node gives up pods while a dimension is at or
 * over its target. n1 is full (4 pods of 1000m on 4000m); n2 has 8000m, with pods_n2 pods of
 * 1000m. Returns the number of victims. */
static size_t lnu_victims(const char *thr, const char *target, int pods_n2) {
  char y[512];
  snprintf(y, sizeof(y),
           "actions: shuffle\ntiers:\n- plugins:\n  - name: rescheduling\n    arguments:\n"
           "      strategies:\n      - name: lowNodeUtilization\n        params:\n"
           "          thresholds: {cpu: %s, memory: 90}\n"
           "          targetThresholds: {cpu: %s, memory: 100}\n",
           thr, target);
  fx *f = fx_new();
  fx_node(f, "n1", 4000, 16 * GI, 110);
  fx_node(f, "n2", 8000, 16 * GI, 110);
  fx_pg(f, "j", "default", 1, "Running");
  static const char *const names[] = {"p0", "p1", "p2", "p3", "q0", "q1", "q2", "q3"};
  for (int i = 0; i < 4; i++)
    fx_pod(f, names[i], "j", 1000, GI, "n1");
  for (int i = 0; i < pods_n2; i++)
    fx_pod(f, names[4 + i], "j", 1000, GI, "n2");
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  assert_int_equal(sch_conf_parse(y, strlen(y), &f->conf, NULL, 0), 0);
  sch_session_options o = SCH_SESSION_OPTIONS_DEFAULT;
  o.now = 1000000;
  assert_int_equal(sch_session_open(f->snap, f->conf, &o, &f->ssn), 0);
  sch_result *r = fx_run(f);
  size_t n = r->nevicts;
  sch_result_free(r);
  fx_free(f);
  return n;
}

static void test_lnu_volcano_comparisons(void **state) {
  (void)state;
  /* n2 at 25% cpu: low under a 26% threshold, not low at exactly 25% (then no node is low) */
  assert_int_equal(lnu_victims("26", "60", 2), 2);
  assert_int_equal(lnu_victims("25", "60", 2), 0);
  /* target 50%: n1 goes 100, 75, 50 and, still at its target, gives up a third pod */
  assert_int_equal(lnu_victims("20", "50", 0), 3);
  /* target 60%: 100, 75, then 50 is under it */
  assert_int_equal(lnu_victims("20", "60", 0), 2);
}

/* ---- victim callbacks, plugin by plugin ---- */

static void test_priority_victims(void **state) {
  (void)state;
  fx *f = fx_new();
  priority_class(f, "mid", 10);
  fx_node(f, "n1", 8000, 8 * GI, 110);
  Kiln__PodGroup *a = fx_pg(f, "a", "default", 1, "Running");
  a->spec->priority_class_name = fx_str("mid");
  fx_pg(f, "b", "default", 1, "Running");
  Kiln__PodGroup *c = fx_pg(f, "c", "default", 1, "Running");
  c->spec->priority_class_name = fx_str("mid");
  fx_pod(f, "a0", "a", 100, 0, "n1");
  fx_pod(f, "b0", "b", 100, 0, "n1");
  fx_pod(f, "c0", "c", 100, 0, "n1");
  Kiln__Pod *lowtask = fx_pod(f, "c1", "c", 100, 0, "n1");
  lowtask->priority = -1;
  Kiln__Pod *pre = fx_pod(f, "c-pre", "c", 100, 0, NULL);
  pre->priority = 5;
  fx_open(f, "actions: allocate\ntiers:\n- plugins:\n  - name: priority\n");
  int32_t cands[] = {fx_task(f, "a0"), fx_task(f, "b0"), fx_task(f, "c0"), fx_task(f, "c1")};
  int32_t out[4];
  int n = sch_session_preemptable(f->ssn, &f->snap->tasks[fx_task(f, "c-pre")], cands, 4, out);
  /* a: same job priority (not lower); b: lower job; c0 (priority 0 < 5) and c1: own job,
   * lower task priority */
  assert_int_equal(n, 3);
  assert_int_equal(out[0], fx_task(f, "b0"));
  assert_int_equal(out[1], fx_task(f, "c0"));
  assert_int_equal(out[2], fx_task(f, "c1"));
  fx_free(f);
}

/* gang with enablePreemptable: false does not vote; conformance alone decides. */
static void test_gang_switch_off(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 8000, 8 * GI, 110);
  fx_pg(f, "g", "default", 2, "Running");
  fx_pod(f, "g0", "g", 100, 0, "n1");
  fx_pod(f, "g1", "g", 100, 0, "n1");
  fx_pg(f, "hi", "default", 1, "Inqueue");
  fx_pod(f, "pre", "hi", 100, 0, NULL);
  fx_open(f, "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enablePreemptable: false\n"
             "  - name: conformance\n");
  int32_t cands[] = {fx_task(f, "g0"), fx_task(f, "g1")};
  int32_t out[2];
  const sch_task *pre = &f->snap->tasks[fx_task(f, "pre")];
  assert_int_equal(sch_session_preemptable(f->ssn, pre, cands, 2, out), 2);
  fx_free(f);
}

/* cdp: a running pod inside its cooldown time is no victim; after it, or without the key,
 * it is. */
static void test_cdp_victims(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 8000, 8 * GI, 110);
  fx_pg(f, "j", "default", 1, "Running");
  Kiln__Pod *hot = fx_pod(f, "hot", "j", 100, 0, "n1");
  Kiln__Pod *cold = fx_pod(f, "cold", "j", 100, 0, "n1");
  fx_pod(f, "plain", "j", 100, 0, "n1");
  hot->cooldown_ms = cold->cooldown_ms = 600000; /* 10m */
  hot->scheduled_time = 1000000 - 60;            /* scheduled a minute ago */
  cold->scheduled_time = 1000000 - 3600;         /* an hour ago */
  fx_pod(f, "pre", NULL, 100, 0, NULL);
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  static const char y[] = "actions: allocate\ntiers:\n- plugins:\n  - name: cdp\n";
  assert_int_equal(sch_conf_parse(y, strlen(y), &f->conf, NULL, 0), 0);
  sch_session_options o = SCH_SESSION_OPTIONS_DEFAULT;
  o.now = 1000000;
  assert_int_equal(sch_session_open(f->snap, f->conf, &o, &f->ssn), 0);
  int32_t cands[] = {fx_task(f, "hot"), fx_task(f, "cold"), fx_task(f, "plain")};
  int32_t out[3];
  const sch_task *pre = &f->snap->tasks[fx_task(f, "pre")];
  assert_int_equal(sch_session_preemptable(f->ssn, pre, cands, 3, out), 2);
  assert_int_equal(out[0], fx_task(f, "cold"));
  assert_int_equal(out[1], fx_task(f, "plain"));
  assert_int_equal(sch_session_reclaimable(f->ssn, pre, cands, 3, out), 2);
  fx_free(f);
}

/* pdb: each budget of the pod's namespace that selects it spends one of its
 * disruptionsAllowed; a pod that would take one below zero is no victim; a pod the budget
 * lists in disruptedPods spends nothing; an unlabeled pod is never returned (Volcano). */
/* A budget "low-pdb" in ns selecting app=low that allows `allowed` disruptions. */
static Kiln__PodDisruptionBudget *add_budget(fx *f, int32_t allowed) {
  Kiln__PodDisruptionBudget *b = fx_alloc(sizeof(*b));
  kiln__pod_disruption_budget__init(b);
  b->metadata = fx_meta("ns", "low-pdb");
  b->spec = fx_alloc(sizeof(*b->spec));
  kiln__pod_disruption_budget_spec__init(b->spec);
  b->spec->selector = fx_alloc(sizeof(*b->spec->selector));
  kiln__label_selector__init(b->spec->selector);
  Kiln__LabelSelector__MatchLabelsEntry *e = fx_alloc(sizeof(*e));
  kiln__label_selector__match_labels_entry__init(e);
  e->key = fx_str("app");
  e->value = fx_str("low");
  FX_APPEND(b->spec->selector->match_labels, b->spec->selector->n_match_labels, e);
  b->status = fx_alloc(sizeof(*b->status));
  kiln__pod_disruption_budget_status__init(b->status);
  b->status->disruptions_allowed = allowed;
  FX_APPEND(f->msg->pod_disruption_budgets, f->msg->n_pod_disruption_budgets, b);
  return b;
}

static void test_pdb_victims(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 8000, 8 * GI, 110);
  fx_pg(f, "j", "default", 1, "Running");
  static const char *const low[] = {"l0", "l1", "l2"};
  for (int i = 0; i < 3; i++)
    fx_pod_label(fx_pod(f, low[i], "j", 100, 0, "n1"), "app", "low");
  fx_pod_label(fx_pod(f, "other", "j", 100, 0, "n1"), "app", "other");
  fx_pod(f, "bare", "j", 100, 0, "n1");
  fx_pod(f, "pre", NULL, 100, 0, NULL);
  Kiln__PodDisruptionBudget *b = add_budget(f, 1);
  Kiln__PodDisruptionBudgetStatus__DisruptedPodsEntry *d = fx_alloc(sizeof(*d));
  kiln__pod_disruption_budget_status__disrupted_pods_entry__init(d);
  d->key = fx_str("l2");
  d->value = fx_str("2026-12-01T10:00:00Z");
  FX_APPEND(b->status->disrupted_pods, b->status->n_disrupted_pods, d);
  fx_open(f, "actions: preempt\ntiers:\n- plugins:\n  - name: pdb\n");
  int32_t cands[] = {fx_task(f, "l0"), fx_task(f, "l1"), fx_task(f, "l2"), fx_task(f, "other"),
                     fx_task(f, "bare")};
  int32_t out[5];
  const sch_task *pre = &f->snap->tasks[fx_task(f, "pre")];
  assert_int_equal(sch_session_preemptable(f->ssn, pre, cands, 5, out), 3);
  assert_int_equal(out[0], fx_task(f, "l0"));    /* spends the one disruption allowed */
  assert_int_equal(out[1], fx_task(f, "l2"));    /* already disrupted: spends nothing */
  assert_int_equal(out[2], fx_task(f, "other")); /* no budget selects it */
  assert_int_equal(sch_session_reclaimable(f->ssn, pre, cands, 5, out), 3);
  fx_free(f);

  /* In the preempt action: a gang that needs two victims under a budget allowing one gets
   * none (the first preemptor's victim counts for the second); a budget allowing two lets
   * it through. */
  for (int32_t allowed = 1; allowed <= 2; allowed++) {
    Kiln__Pod *lp[4], *hp[2];
    f = full_cluster(1, lp, hp);
    for (int i = 0; i < 4; i++)
      fx_pod_label(lp[i], "app", "low");
    add_budget(f, allowed);
    fx_open(f, "actions: \"enqueue, allocate, preempt\"\ntiers:\n- plugins:\n"
               "  - name: priority\n  - name: gang\n  - name: pdb\n"
               "- plugins:\n  - name: predicates\n");
    sch_result *r = fx_run(f);
    assert_int_equal(r->nevicts, allowed == 1 ? 0 : 2);
    sch_result_free(r);
    fx_free(f);
  }
}

/* ---- tier voting with scripted plugins ---- */

typedef struct vscript {
  bool vote;
  const char *const *names; /* NULL-terminated victim names */
} vscript;

static vscript vscripts[4];
static fx *vfx;

static bool v_fn(sch_session *ssn, void *ctx, const sch_task *preemptor, const int32_t *cands,
                 size_t n, int32_t *out, size_t *nout) {
  vscript *s = ctx;
  *nout = 0;
  if (!s->vote)
    return false;
  for (size_t i = 0; i < n; i++)
    for (const char *const *p = s->names; p && *p; p++)
      if (cands[i] == fx_task(vfx, *p))
        out[(*nout)++] = cands[i];
  return true;
}
static int v_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  return sch_add_preemptable_fn(ssn, v_fn, &vscripts[sch_args_int(&conf->args, "i", 0)]);
}
static const sch_plugin vplugin = {"vscript", v_open, NULL};

static void test_victim_tier_voting(void **state) {
  (void)state;
  fx *f = vfx = fx_new();
  fx_node(f, "n1", 8000, 8 * GI, 110);
  fx_pg(f, "j", "default", 1, "Running");
  fx_pod(f, "a", "j", 100, 0, "n1");
  fx_pod(f, "b", "j", 100, 0, "n1");
  fx_pod(f, "c", "j", 100, 0, "n1");
  fx_pod(f, "p", NULL, 100, 0, NULL);
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  sch_arg args[4] = {{"i", "0"}, {"i", "1"}, {"i", "2"}, {"i", "3"}};
  sch_plugin_conf t0[2] = {{.plugin = &vplugin, .enabled = ~0u, .args = {&args[0], 1}},
                           {.plugin = &vplugin, .enabled = ~0u, .args = {&args[1], 1}}};
  sch_plugin_conf t1[2] = {{.plugin = &vplugin, .enabled = ~0u, .args = {&args[2], 1}},
                           {.plugin = &vplugin, .enabled = ~0u, .args = {&args[3], 1}}};
  sch_tier tiers[2] = {{t0, 2}, {t1, 2}};
  const sch_action *acts[] = {sch_action_find("allocate")};
  sch_conf conf = {.actions = acts, .nactions = 1, .tiers = tiers, .ntiers = 2};
  static const char *const ab[] = {"a", "b", NULL}, *const bc[] = {"b", "c", NULL},
                           *const none[] = {NULL}, *const abc[] = {"a", "b", "c", NULL},
                           *const c[] = {"c", NULL};
  struct {
    vscript s[4];
    int want;
    const char *first;
  } cases[] = {
      /* intersection inside the deciding tier */
      {{{true, ab}, {true, bc}, {true, abc}, {true, abc}}, 1, "b"},
      /* the first tier with a voter decides, even with nothing: later tiers cannot revive */
      {{{true, none}, {false, NULL}, {true, abc}, {true, abc}}, 0, NULL},
      {{{true, ab}, {true, c}, {true, abc}, {true, abc}}, 0, NULL},
      /* nobody in tier 0 votes: tier 1 decides */
      {{{false, NULL}, {false, NULL}, {true, bc}, {true, abc}}, 2, "b"},
      /* nobody votes at all: no victims */
      {{{false, NULL}, {false, NULL}, {false, NULL}, {false, NULL}}, 0, NULL},
  };
  int32_t cands[] = {fx_task(f, "a"), fx_task(f, "b"), fx_task(f, "c")};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    memcpy(vscripts, cases[i].s, sizeof(vscripts));
    sch_session *ssn;
    assert_int_equal(sch_session_open(f->snap, &conf, NULL, &ssn), 0);
    int32_t out[3];
    int n = sch_session_preemptable(ssn, &f->snap->tasks[fx_task(f, "p")], cands, 3, out);
    if (n != cases[i].want)
      fail_msg("case %zu: %d victims, want %d", i, n, cases[i].want);
    if (cases[i].first)
      assert_int_equal(out[0], fx_task(f, cases[i].first));
    sch_result *r;
    assert_int_equal(sch_session_close(ssn, &r), 0);
    sch_result_free(r);
  }
  fx_free(f);
}

int main(void) {
  if (getenv("V"))
    kc_log_verbosity = 5;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_preempt_between_jobs),
      cmocka_unit_test(test_preempt_keeps_min_available),
      cmocka_unit_test(test_preempt_predicate_error_cache),
      cmocka_unit_test(test_preempt_policy_never_and_not_preemptable),
      cmocka_unit_test(test_preempt_needs_lower_priority_same_queue),
      cmocka_unit_test(test_preempt_inside_job),
      cmocka_unit_test(test_reclaim_half),
      cmocka_unit_test(test_reclaim_not_from_unreclaimable_queue),
      cmocka_unit_test(test_shuffle_low_node_utilization),
      cmocka_unit_test(test_shuffle_sessions_independent),
      cmocka_unit_test(test_lnu_volcano_comparisons),
      cmocka_unit_test(test_priority_victims),
      cmocka_unit_test(test_gang_switch_off),
      cmocka_unit_test(test_cdp_victims),
      cmocka_unit_test(test_pdb_victims),
      cmocka_unit_test(test_victim_tier_voting),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
