/* The scheduler core on hand-built snapshots: resource arithmetic, configuration, snapshot
 * accounting, statements, enqueue, allocate (gang fits / does not fit / pipelines),
 * backfill and priority ordering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "sch_conf.h"
#include "sch_framework.h"
#include "test_sch_plugins_fixture.h"

static const char core_conf[] = "actions: \"enqueue, allocate, backfill\"\n"
                                "tiers:\n"
                                "- plugins:\n"
                                "  - name: priority\n"
                                "  - name: gang\n"
                                "  - name: conformance\n"
                                "- plugins:\n"
                                "  - name: predicates\n"
                                "  - name: nodeorder\n";

static const char *bound_node(const fx *f, const sch_result *r, const char *pod) {
  int32_t t = fx_task(f, pod);
  for (size_t i = 0; i < r->nbinds; i++)
    if (r->binds[i].task == t)
      return f->snap->nodes[r->binds[i].node].name;
  return NULL;
}

/* ---- resources ---- */

static void test_resource_arith(void **state) {
  (void)state;
  sch_resource a = {.milli_cpu = 1000, .memory = 100}, b = {.milli_cpu = 995, .memory = 100};
  /* within the 10 millicore epsilon */
  assert_true(sch_resource_less_equal(&a, &b));
  b.milli_cpu = 990;
  assert_false(sch_resource_less_equal(&a, &b));
  assert_int_equal(sch_resource_insufficient(&a, &b), SCH_DIM_CPU);
  a.scalar[1] = 2000;
  assert_int_equal(sch_resource_insufficient(&a, &b), SCH_DIM_CPU | SCH_DIM_SCALAR(1));
  /* a dimension the request does not ask for never blocks */
  sch_resource req = {.milli_cpu = 500}, idle = {.milli_cpu = 600, .memory = -5};
  assert_int_equal(sch_resource_insufficient(&req, &idle), 0);
  sch_resource sum = a;
  sch_resource_add(&sum, &b);
  sch_resource_sub(&sum, &b);
  assert_true(sch_resource_equal(&sum, &a));
  /* Amounts past int64 saturate instead of wrapping: a queue whose room holds a PodGroup of
   * 1e21 bytes is full, not negative (before, the sum wrapped and the gang fit). */
  sch_resource huge = {.memory = INT64_MAX, .scalar = {[0] = INT64_MAX - 5}}, room = huge;
  sch_resource_add(&room, &huge);
  assert_true(room.memory == INT64_MAX && room.scalar[0] == INT64_MAX);
  sch_resource_sub(&room, &(sch_resource){.memory = INT64_MIN});
  assert_true(room.memory == INT64_MAX);
  sch_resource neg = {.memory = INT64_MIN + 1};
  sch_resource_sub(&neg, &huge);
  assert_true(neg.memory == INT64_MIN);
  sch_resource need = {.milli_cpu = 200, .memory = 1};
  sch_resource_add(&need, &huge);
  assert_false(
      sch_resource_less_equal(&need, &(sch_resource){.milli_cpu = 1000, .memory = 1 << 30}));
  sch_resource d = {.milli_cpu = 1000, .memory = 10};
  sch_resource r1 = {.milli_cpu = 400};
  sch_resource_fit_delta(&d, &r1);
  assert_int_equal(d.milli_cpu, 1000 - 410);
  assert_int_equal(d.memory, 10); /* not requested: untouched */
  sch_resource e = {.milli_cpu = 9};
  assert_true(sch_resource_is_empty(&e));
  e.memory = 1;
  assert_false(sch_resource_is_empty(&e));
}

/* ---- configuration ---- */

static void test_conf_default(void **state) {
  (void)state;
  sch_conf *c = NULL;
  assert_int_equal(sch_conf_default(&c), 0);
  assert_int_equal(c->nactions, 3);
  assert_string_equal(c->actions[0]->name, "enqueue");
  assert_string_equal(c->actions[1]->name, "allocate");
  assert_string_equal(c->actions[2]->name, "backfill");
  assert_int_equal(c->ntiers, 2);
  assert_int_equal(c->tiers[0].nplugins, 3);
  assert_string_equal(c->tiers[0].plugins[0].plugin->name, "priority");
  assert_string_equal(c->tiers[0].plugins[1].plugin->name, "gang");
  assert_string_equal(c->tiers[0].plugins[2].plugin->name, "conformance");
  assert_int_equal(c->tiers[1].nplugins, 5);
  assert_string_equal(c->tiers[1].plugins[4].plugin->name, "nodeorder");
  assert_true(c->tiers[0].plugins[1].enabled & (1u << SCH_EXT_PREEMPTABLE));
  assert_false(c->tiers[1].plugins[1].enabled & (1u << SCH_EXT_HIERARCHY));
  sch_conf_free(c);
}

static void test_conf_custom(void **state) {
  (void)state;
  static const char y[] = "actions: \"allocate,backfill \"\n"
                          "tiers:\n"
                          "- plugins:\n"
                          "  - name: gang\n"
                          "    enablePreemptable: false\n"
                          "    enableJobOrder: no\n"
                          "- plugins:\n"
                          "  - name: binpack\n"
                          "    arguments:\n"
                          "      binpack.weight: 10\n"
                          "      binpack.resources: nvidia.com/gpu\n"
                          "      binpack.resources.nvidia.com/gpu: 2\n"
                          "      nested:\n"
                          "        a: x\n"
                          "configurations:\n"
                          "- name: allocate\n"
                          "  arguments:\n"
                          "    mode: fast\n";
  sch_conf *c = NULL;
  char err[256];
  assert_int_equal(sch_conf_parse(y, strlen(y), &c, err, sizeof(err)), 0);
  assert_int_equal(c->nactions, 2);
  assert_string_equal(c->actions[1]->name, "backfill");
  const sch_plugin_conf *g = &c->tiers[0].plugins[0];
  assert_false(g->enabled & (1u << SCH_EXT_PREEMPTABLE));
  assert_false(g->enabled & (1u << SCH_EXT_JOB_ORDER));
  assert_true(g->enabled & (1u << SCH_EXT_JOB_READY));
  const sch_args *a = &c->tiers[1].plugins[0].args;
  assert_int_equal(sch_args_int(a, "binpack.weight", 1), 10);
  assert_string_equal(sch_args_get(a, "binpack.resources"), "nvidia.com/gpu");
  assert_int_equal(sch_args_int(a, "binpack.resources.nvidia.com/gpu", 1), 2);
  assert_string_equal(sch_args_get(a, "nested.a"), "x");
  assert_null(sch_args_get(a, "absent"));
  assert_true(sch_args_bool(a, "absent", true));
  assert_int_equal(c->nconfigurations, 1);
  assert_string_equal(c->configurations[0].name, "allocate");
  assert_string_equal(sch_args_get(&c->configurations[0].args, "mode"), "fast");
  sch_conf_free(c);
}

static void test_conf_invalid(void **state) {
  (void)state;
  struct {
    const char *yaml;
    int rc;
    const char *needle;
  } cases[] = {
      {"actions: \"enqueue, allocat\"\n", KC_ENOENT, "allocat"},
      /* a plugin Kiln does not have is skipped, but its entry must still be well formed */
      {"actions: allocate\ntiers:\n- plugins:\n  - name: tdm\n    arguments: [1, 2]\n", KC_EPARSE,
       "plugin tdm: arguments must be a mapping"},
      {"actions: allocate\ntiers:\n- plugins:\n  - name: tdm\n"
       "    enablePredicate: maybe\n",
       KC_EINVAL, "plugin tdm: enablePredicate"},
      {"actions: \"enqueue, allocate, teleport\"\ntiers:\n- plugins:\n  - name: tdm\n", KC_ENOENT,
       "unknown action \"teleport\""},
      {"actions: allocate\ntiers: [\n", KC_EPARSE, "malformed"},
      {"actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enableJobReady: maybe\n",
       KC_EINVAL, "enableJobReady"},
      {"tiers: []\n", KC_EPARSE, "actions"},
      {"- a\n- b\n", KC_EPARSE, "mapping"},
      {"actions: allocate\nconfigurations:\n- name: reshuffle\n", KC_ENOENT, "reshuffle"},
      {"actions: \"allocate, preemptt\"\n", KC_ENOENT, "preemptt"},
      {"actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n"
       "  - name: proportion\n",
       KC_EINVAL, "proportion"},
      /* found by fuzz_schedconf: a second tiers list wrote past the first one's array */
      {"actions: allocate\ntiers:\n- plugins:\n  - name: gang\ntiers:\n- plugins:\n"
       "  - name: gang\n  - name: priority\n",
       KC_EPARSE, "tiers is given twice"},
      {"actions: allocate\nconfigurations:\n- name: allocate\nconfigurations:\n- name: allocate\n"
       "- name: allocate\n",
       KC_EPARSE, "configurations is given twice"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    sch_conf *c = (sch_conf *)1;
    char err[256] = "";
    int rc = sch_conf_parse(cases[i].yaml, strlen(cases[i].yaml), &c, err, sizeof(err));
    if (rc != cases[i].rc || !strstr(err, cases[i].needle))
      fail_msg("case %zu: rc %d err '%s'", i, rc, err);
    assert_null(c);
  }
}

/* Arguments are flattened by walking libyaml's document, where an alias is a reference to its
 * anchor's node: a cycle crashed kiln-replay (SIGSEGV, unbounded recursion) before the walk
 * was bounded, and a "billion laughs" tree ran out of memory. Each is refused by name. */
static char *nested_args(int depth) {
  size_t cap = 256 + (size_t)depth * 8;
  char *y = malloc(cap);
  assert_non_null(y);
  int off = snprintf(y, cap,
                     "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                     "    arguments: ");
  for (int i = 0; i < depth; i++)
    off += snprintf(y + off, cap - (size_t)off, "{a: ");
  off += snprintf(y + off, cap - (size_t)off, "x");
  for (int i = 0; i < depth; i++)
    off += snprintf(y + off, cap - (size_t)off, "}");
  snprintf(y + off, cap - (size_t)off, "\n");
  return y;
}

static char *laughs(int levels, int width) {
  size_t cap = 4096;
  char *y = malloc(cap);
  assert_non_null(y);
  int off = snprintf(y, cap, "actions: allocate\nx0: &x0 lol\n");
  for (int l = 1; l <= levels; l++) {
    off += snprintf(y + off, cap - (size_t)off, "x%d: &x%d {", l, l);
    for (int w = 0; w < width; w++)
      off += snprintf(y + off, cap - (size_t)off, "%sk%d: *x%d", w ? ", " : "", w, l - 1);
    off += snprintf(y + off, cap - (size_t)off, "}\n");
  }
  snprintf(y + off, cap - (size_t)off, "tiers:\n- plugins:\n  - name: gang\n    arguments: *x%d\n",
           levels);
  return y;
}

static char *wide_scalar(size_t bytes, int copies) {
  size_t cap = bytes + 256 + (size_t)copies * 8;
  char *y = malloc(cap);
  assert_non_null(y);
  int off = snprintf(y, cap, "actions: allocate\ns: &s ");
  memset(y + off, 'x', bytes);
  off += (int)bytes;
  off += snprintf(y + off, cap - (size_t)off,
                  "\ntiers:\n- plugins:\n  - name: gang\n    arguments: {list: [");
  for (int i = 0; i < copies; i++)
    off += snprintf(y + off, cap - (size_t)off, "%s*s", i ? ", " : "");
  snprintf(y + off, cap - (size_t)off, "]}\n");
  return y;
}

static void test_conf_alias_bounds(void **state) {
  (void)state;
  struct {
    char *yaml;
    int rc;
    const char *needle;
  } cases[] = {
      {strdup("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    arguments: &a {x: *a}\n"),
       KC_EPARSE, "plugin gang: arguments at x contain themselves"},
      {strdup("actions: allocate\ntiers:\n- plugins:\n  - name: drf\n"
              "    arguments: &a {s: [{p: {q: *a}}]}\n"),
       KC_EPARSE, "plugin drf: arguments at s.0.p.q contain themselves"},
      {strdup("actions: allocate\nconfigurations:\n- name: allocate\n"
              "  arguments: &b {y: {z: *b}}\n"),
       KC_EPARSE, "configurations: arguments at y.z contain themselves"},
      {nested_args(40), KC_ETOOBIG, "nested deeper than 32 levels"},
      {laughs(9, 10), KC_ETOOBIG, "expand to more than 10000 entries"},
      {wide_scalar(64 * 1024, 32), KC_ETOOBIG, "arguments at list expand to more than"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    assert_non_null(cases[i].yaml);
    sch_conf *c = (sch_conf *)1;
    char err[256] = "";
    int rc = sch_conf_parse(cases[i].yaml, strlen(cases[i].yaml), &c, err, sizeof(err));
    if (rc != cases[i].rc || !strstr(err, cases[i].needle))
      fail_msg("case %zu: rc %d err '%s'", i, rc, err);
    assert_null(c);
    free(cases[i].yaml);
  }
  /* Within the bounds, aliases still work: nesting to the limit, a shared anchor, a small
   * tree of references. */
  char *deep = nested_args(32), *tree = laughs(3, 10);
  const char shared[] = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                        "    arguments: &g {w: 1, l: [a, b]}\n  - name: drf\n    arguments: *g\n";
  const char *ok[] = {deep, tree, shared};
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    sch_conf *c = NULL;
    char err[256] = "";
    if (sch_conf_parse(ok[i], strlen(ok[i]), &c, err, sizeof(err)) != 0)
      fail_msg("ok case %zu: %s", i, err);
    if (i == 1)
      assert_string_equal(sch_args_get(&c->tiers[0].plugins[0].args, "k9.k9.k9"), "lol");
    if (i == 2) {
      assert_string_equal(sch_args_get(&c->tiers[0].plugins[1].args, "l"), "a, b");
      assert_int_equal(sch_args_int(&c->tiers[0].plugins[1].args, "w", 0), 1);
    }
    sch_conf_free(c);
  }
  free(deep);
  free(tree);
}

/* A changed file that does not load leaves the configuration in force as it was; one that
 * loads replaces it. */
static void test_conf_reload_keeps_previous(void **state) {
  (void)state;
  static const char good[] = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n"
                             "  - name: gang\n    arguments: {w: 3}\n";
  static const char bad[] = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                            "    arguments: &a {x: *a}\n";
  static const char other[] = "actions: allocate\n";
  sch_conf *cur = NULL;
  char err[256] = "";
  assert_int_equal(sch_conf_reload(&cur, good, strlen(good), err, sizeof(err)), 0);
  assert_non_null(cur);
  sch_conf *before = cur;
  assert_int_equal(sch_conf_reload(&cur, bad, strlen(bad), err, sizeof(err)), KC_EPARSE);
  assert_non_null(strstr(err, "contain themselves"));
  assert_ptr_equal(cur, before);
  assert_int_equal(cur->nactions, 2);
  assert_int_equal(sch_args_int(&cur->tiers[0].plugins[0].args, "w", 0), 3);
  /* The first load failing leaves no configuration (the caller keeps its default). */
  sch_conf *none = NULL;
  assert_int_equal(sch_conf_reload(&none, bad, strlen(bad), err, sizeof(err)), KC_EPARSE);
  assert_null(none);
  assert_int_equal(sch_conf_reload(&cur, other, strlen(other), err, sizeof(err)), 0);
  assert_int_equal(cur->nactions, 1);
  assert_int_equal(cur->ntiers, 0);
  sch_conf_free(cur);
}

/* Every action Volcano registers is built: gangpreempt and gangreclaim load with the others
 * (they were skipped, alone, before they were built), their arguments read. */
static void test_conf_gang_actions(void **state) {
  (void)state;
  static const char y[] = "actions: \"enqueue, gangpreempt, allocate, gangreclaim, backfill\"\n"
                          "tiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
                          "    enablePreemptable: false\n"
                          "configurations:\n- name: gangpreempt\n  arguments:\n    maxDomains: 2\n"
                          "    allowWholeBundle: false\n    wholeBundles: 1\n";
  sch_conf *c = NULL;
  char err[256] = "";
  assert_int_equal(sch_conf_parse(y, strlen(y), &c, err, sizeof(err)), 0);
  assert_int_equal(c->nactions, 5);
  static const char *const names[] = {"enqueue", "gangpreempt", "allocate", "gangreclaim",
                                      "backfill"};
  for (int i = 0; i < 5; i++)
    assert_string_equal(c->actions[i]->name, names[i]);
  assert_int_equal(c->nskipped, 0);
  /* the two arguments gangpreempt reads are not named; a third it does not read is */
  assert_int_equal(c->nignored_action_args, 1);
  assert_string_equal(c->ignored_action_args[0], "gangpreempt: wholeBundles");
  assert_int_equal(c->ntiers, 1);
  assert_int_equal(c->tiers[0].nplugins, 2);
  assert_false(c->tiers[0].plugins[1].enabled & (1u << SCH_EXT_PREEMPTABLE));
  assert_true(sch_action_volcano("shuffle"));
  assert_true(sch_action_volcano("gangreclaim"));
  assert_false(sch_action_volcano("shufle"));
  sch_conf_free(c);
}

/* Issue 28: Volcano's chart configuration with two plugins Kiln does not have (tdm, and
 * a misspelt binpak) and arguments no Kiln plugin reads. As in Volcano the unknown plugins
 * are skipped and everything else stays in force: the tiers, the known plugins with their
 * switches and arguments, the actions. Before, the whole file was refused. */
static void test_conf_skips_unknown_plugins(void **state) {
  (void)state;
  static const char y[] = "actions: \"enqueue, allocate, backfill\"\n"
                          "tiers:\n"
                          "- plugins:\n"
                          "  - name: priority\n"
                          "  - name: gang\n"
                          "    enablePreemptable: false\n"
                          "  - name: conformance\n"
                          "- plugins:\n"
                          "  - name: overcommit\n"
                          "  - name: drf\n"
                          "    enablePreemptable: false\n"
                          "  - name: tdm\n"
                          "    arguments:\n"
                          "      tdm.revocable-zone.rz1: 10:00-21:00\n"
                          "      tdm.evict-period: 1m\n"
                          "  - name: predicates\n"
                          "    arguments:\n"
                          "      predicate.NodeAffinityEnable: false\n"
                          "      predicate.GPUSharingEnable: true\n"
                          "  - name: proportion\n"
                          "  - name: nodeorder\n"
                          "  - name: binpack\n"
                          "    arguments:\n"
                          "      binpack.weight: 10\n"
                          "      binpack.resources: nvidia.com/gpu\n"
                          "      binpack.resources.nvidia.com/gpu: 4\n"
                          "      binpack.typo: 1\n"
                          "  - name: binpak\n"
                          "    arguments:\n"
                          "      binpack.weight: 10\n"
                          "  - name: tdm\n";
  sch_conf *c = NULL;
  char err[256] = "";
  assert_int_equal(sch_conf_parse(y, strlen(y), &c, err, sizeof(err)), 0);
  assert_int_equal(c->nactions, 3);
  assert_int_equal(c->ntiers, 2);
  assert_int_equal(c->tiers[0].nplugins, 3);
  assert_false(c->tiers[0].plugins[1].enabled & (1u << SCH_EXT_PREEMPTABLE));
  static const char *const second[] = {"overcommit", "drf",       "predicates",
                                       "proportion", "nodeorder", "binpack"};
  assert_int_equal(c->tiers[1].nplugins, 6);
  for (size_t i = 0; i < 6; i++)
    assert_string_equal(c->tiers[1].plugins[i].plugin->name, second[i]);
  assert_false(c->tiers[1].plugins[1].enabled & (1u << SCH_EXT_PREEMPTABLE));
  const sch_args *pred = &c->tiers[1].plugins[2].args;
  assert_false(sch_args_bool(pred, "predicate.NodeAffinityEnable", true));
  const sch_args *bp = &c->tiers[1].plugins[5].args;
  assert_int_equal(sch_args_int(bp, "binpack.weight", 1), 10);
  assert_int_equal(sch_args_int(bp, "binpack.resources.nvidia.com/gpu", 1), 4);
  /* Each unknown plugin once, in the file's order. */
  assert_int_equal(c->nskipped_plugins, 2);
  assert_string_equal(c->skipped_plugins[0], "tdm");
  assert_string_equal(c->skipped_plugins[1], "binpak");
  /* Arguments of known plugins that they do not read; a skipped plugin's are not listed. */
  assert_int_equal(c->nignored_args, 2);
  assert_string_equal(c->ignored_args[0], "predicates: predicate.GPUSharingEnable");
  assert_string_equal(c->ignored_args[1], "binpack: binpack.typo");
  sch_conf_free(c);
  /* A reload with such a file replaces the configuration in force. */
  static const char first[] = "actions: allocate\n";
  sch_conf *cur = NULL;
  assert_int_equal(sch_conf_reload(&cur, first, strlen(first), err, sizeof(err)), 0);
  assert_int_equal(sch_conf_reload(&cur, y, strlen(y), err, sizeof(err)), 0);
  assert_int_equal(cur->nactions, 3);
  assert_int_equal(cur->nskipped_plugins, 2);
  sch_conf_free(cur);
}

/* Action arguments (`configurations`) as Volcano's actions read them: the ones Kiln honours
 * pass in silence; one whose behaviour Kiln does not build, with the value given, and one no
 * action reads are each named once. */
static void test_conf_action_args(void **state) {
  (void)state;
  static const char y[] = "actions: \"enqueue, allocate, preempt, backfill\"\n"
                          "configurations:\n"
                          "- name: allocate\n"
                          "  arguments:\n"
                          "    predicateErrorCacheEnable: false\n"
                          "    gateRemovalWorkerNum: 8\n"
                          "- name: preempt\n"
                          "  arguments:\n"
                          "    predicateErrorCacheEnable: true\n"
                          "    minCandidateNodesPercentage: 20\n"
                          "    gangPlacementRetries: 0\n"
                          "- name: backfill\n"
                          "  arguments:\n"
                          "    predicateErrorCacheEnable: false\n"
                          "    predicateErrorCacheEnabled: false\n"
                          "- name: enqueue\n"
                          "  arguments:\n"
                          "    anything: 1\n"
                          "- name: gangpreempt\n"
                          "  arguments:\n"
                          "    maxDomains: 4\n";
  sch_conf *c = NULL;
  char err[256] = "";
  assert_int_equal(sch_conf_parse(y, strlen(y), &c, err, sizeof(err)), 0);
  /* Topology-aware preemption is off, so its tuning does nothing in Volcano either; no
   * retries (0) is what Kiln does; gangpreempt reads maxDomains. */
  assert_int_equal(c->nignored_action_args, 3);
  assert_string_equal(c->ignored_action_args[0], "allocate: gateRemovalWorkerNum");
  assert_string_equal(c->ignored_action_args[1], "backfill: predicateErrorCacheEnabled");
  assert_string_equal(c->ignored_action_args[2], "enqueue: anything");
  assert_int_equal(c->metrics.n, 0);
  sch_conf_free(c);
  static const char topo[] = "actions: \"allocate, preempt\"\n"
                             "configurations:\n"
                             "- name: preempt\n"
                             "  arguments:\n"
                             "    enableTopologyAwarePreemption: true\n"
                             "    topologyAwarePreemptWorkerNum: 4\n"
                             "    gangPlacementRetries: 2\n";
  assert_int_equal(sch_conf_parse(topo, strlen(topo), &c, err, sizeof(err)), 0);
  assert_int_equal(c->nignored_action_args, 3);
  assert_string_equal(c->ignored_action_args[0], "preempt: enableTopologyAwarePreemption");
  assert_string_equal(c->ignored_action_args[1], "preempt: topologyAwarePreemptWorkerNum");
  assert_string_equal(c->ignored_action_args[2], "preempt: gangPlacementRetries");
  sch_conf_free(c);
}

/* `metrics` is Volcano's map of strings: kept (it has no effect in Kiln, logged); another
 * shape refuses the file as Volcano's decoding does; given twice is a mistake. */
static void test_conf_metrics_section(void **state) {
  (void)state;
  static const char y[] = "actions: allocate\n"
                          "metrics:\n"
                          "  type: prometheus\n"
                          "  address: http://prometheus.monitoring:9090\n"
                          "  interval: 30s\n";
  sch_conf *c = NULL;
  char err[256] = "";
  assert_int_equal(sch_conf_parse(y, strlen(y), &c, err, sizeof(err)), 0);
  assert_int_equal(c->metrics.n, 3);
  assert_string_equal(sch_args_get(&c->metrics, "address"), "http://prometheus.monitoring:9090");
  assert_string_equal(sch_args_get(&c->metrics, "interval"), "30s");
  sch_conf_free(c);
  static const char empty[] = "actions: allocate\nmetrics:\n";
  assert_int_equal(sch_conf_parse(empty, strlen(empty), &c, err, sizeof(err)), 0);
  assert_int_equal(c->metrics.n, 0);
  sch_conf_free(c);
  static const char *const bad[] = {
      "actions: allocate\nmetrics: [prometheus]\n",
      "actions: allocate\nmetrics:\n  tls:\n    insecureSkipVerify: true\n",
      "actions: allocate\nmetrics:\n  type: prometheus\nmetrics:\n  type: elasticsearch\n",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    c = NULL;
    assert_int_equal(sch_conf_parse(bad[i], strlen(bad[i]), &c, err, sizeof(err)), KC_EPARSE);
    assert_null(c);
    assert_non_null(strstr(err, "metrics"));
  }
}

/* The argument table names what each plugin reads (patterns included). */
static void test_plugin_args_table(void **state) {
  (void)state;
  const sch_plugin *bp = sch_plugin_find("binpack"), *rs = sch_plugin_find("rescheduling");
  const sch_plugin *gang = sch_plugin_find("gang"), *oc = sch_plugin_find("overcommit");
  assert_true(sch_plugin_reads_arg(bp, "binpack.resources.example.com/foo"));
  assert_false(sch_plugin_reads_arg(bp, "binpack.weights"));
  assert_true(sch_plugin_reads_arg(rs, "strategies.3.params.targetThresholds.memory"));
  assert_false(sch_plugin_reads_arg(rs, "strategies.0.params.thresholds.pods"));
  /* what Volcano's rescheduling reads or lists and Kiln does not use is named with why */
  assert_non_null(sch_plugin_inert_arg(rs, "metricsPeriod"));
  assert_non_null(sch_plugin_inert_arg(rs, "strategies.0.params.thresholds.pods"));
  assert_non_null(sch_plugin_inert_arg(rs, "strategies.1.params.targetThresholds.pod"));
  assert_non_null(sch_plugin_inert_arg(rs, "strategies.0.params.nodeFit"));
  assert_non_null(
      strstr(sch_plugin_inert_arg(rs, "strategies.0.params.thresholdPriority"), "never reads"));
  assert_null(sch_plugin_inert_arg(rs, "strategies.0.params.thresholds.gpu"));
  assert_null(sch_plugin_inert_arg(rs, "metricsperiod"));
  assert_null(sch_plugin_inert_arg(bp, "metricsPeriod"));
  assert_true(sch_plugin_reads_arg(oc, "overcommit-factor"));
  assert_false(sch_plugin_reads_arg(gang, "anything"));
  /* predicates: Volcano's volumebinding arguments, read or named with why */
  const sch_plugin *pr = sch_plugin_find("predicates");
  assert_true(sch_plugin_reads_arg(pr, "volumebinding.bindTimeoutSeconds"));
  assert_true(sch_plugin_reads_arg(pr, "predicate.VolumeBindingEnable"));
  assert_false(sch_plugin_reads_arg(pr, "volumebinding.weight"));
  assert_non_null(
      strstr(sch_plugin_inert_arg(pr, "volumebinding.weight"), "StorageCapacityScoring"));
  assert_non_null(sch_plugin_inert_arg(pr, "volumebinding.shape.1.utilization"));
  assert_null(sch_plugin_inert_arg(pr, "volumebinding.bindTimeout"));
  assert_null(sch_plugin_inert_arg(rs, "volumebinding.weight"));
  assert_non_null(sch_plugin_inert_arg(pr, "predicate.CacheEnable"));
  assert_null(sch_plugin_inert_arg(pr, "predicate.ProportionalEnable"));
}

/* ---- snapshot ---- */

static void test_snapshot_accounting(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 4000, 8 * GI, 110);
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Running");
  fx_pg(f, "lost", "nosuchqueue", 1, "Pending");
  fx_pod(f, "a", "pg", 1000, GI, "n1");
  Kiln__Pod *other = fx_pod(f, "other", NULL, 500, GI, "n1");
  free(other->scheduler_name);
  other->scheduler_name = fx_str("default-scheduler");
  Kiln__Pod *rel = fx_pod(f, "rel", "pg", 1000, GI, "n1");
  rel->deletion_time = 5;
  fx_pod(f, "plain", NULL, 100, 0, NULL);
  fx_pod(f, "orphan", "lost", 100, 0, NULL);
  fx_open(f, core_conf);
  const sch_node *n = fx_snode(f, "n1");
  /* every live pod counts on its node, whoever scheduled it */
  assert_int_equal(n->used.milli_cpu, 2500);
  assert_int_equal(n->idle.milli_cpu, 1500);
  assert_int_equal(n->releasing.milli_cpu, 1000);
  assert_int_equal(n->ntasks, 3);
  assert_int_equal(f->snap->tasks[fx_task(f, "other")].job, -1);
  assert_int_equal(f->snap->tasks[fx_task(f, "rel")].status, SCH_TASK_RELEASING);
  /* the PodGroup naming a missing queue is kept out of every queue */
  assert_int_equal(fx_job(f, "lost")->queue, -1);
  /* a pod without a PodGroup gets a shadow job with minMember 1 */
  const sch_job *sj = fx_job(f, "plain");
  assert_true(sj->shadow);
  assert_int_equal(sj->min_available, 1);
  const sch_job *j = fx_job(f, "pg");
  assert_int_equal(j->count[SCH_TASK_RUNNING], 1);
  assert_int_equal(j->count[SCH_TASK_RELEASING], 1);
  assert_int_equal(j->allocated.milli_cpu, 1000);
  /* ... and says why, on the PodGroup and its pod */
  sch_result *r = fx_run(f);
  assert_null(bound_node(f, r, "orphan"));
  const sch_pg_status *ps = fx_pg_status(f, r, "lost");
  assert_string_equal(ps->condition.message,
                      "1/1 tasks in gang unschedulable: queue nosuchqueue does not exist");
  bool event = false;
  for (size_t i = 0; i < r->nevents; i++)
    if (r->events[i].kind == SCH_EVENT_POD && r->events[i].object == fx_task(f, "orphan"))
      event = strcmp(r->events[i].message, ps->condition.message) == 0;
  assert_true(event);
  sch_result_free(r);
  fx_free(f);
}

/* ---- statements ---- */

static void test_statement_discard_and_commit(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 4000, 8 * GI, 110);
  fx_node(f, "n2", 4000, 8 * GI, 110);
  fx_pg(f, "pg", "default", 3, "Inqueue");
  fx_pod(f, "p0", "pg", 1000, GI, NULL);
  fx_pod(f, "p1", "pg", 1000, GI, NULL);
  fx_pod(f, "p2", "pg", 1000, GI, NULL);
  fx_pod(f, "victim", "pg", 500, GI, "n2");
  fx_open(f, core_conf);
  sch_snapshot *s = f->snap;
  size_t nsz = (size_t)s->nnodes * sizeof(sch_node), jsz = (size_t)s->njobs * sizeof(sch_job);
  sch_node *nodes0 = malloc(nsz);
  sch_job *jobs0 = malloc(jsz);
  sch_task *tasks0 = malloc((size_t)s->ntasks * sizeof(sch_task));
  memcpy(nodes0, s->nodes, nsz);
  memcpy(jobs0, s->jobs, jsz);
  memcpy(tasks0, s->tasks, (size_t)s->ntasks * sizeof(sch_task));
  int32_t n1 = sch_snapshot_node(s, "n1"), n2 = sch_snapshot_node(s, "n2");

  sch_statement *st = sch_statement_new(f->ssn);
  assert_non_null(st);
  assert_int_equal(sch_statement_allocate(st, fx_task(f, "p0"), n1), 0);
  assert_int_equal(sch_statement_pipeline(st, fx_task(f, "p1"), n2), 0);
  assert_int_equal(sch_statement_evict(st, fx_task(f, "victim"), "preempted"), 0);
  assert_int_equal(sch_statement_allocate(st, fx_task(f, "p2"), n2), 0);
  /* a task cannot be placed twice */
  assert_int_equal(sch_statement_allocate(st, fx_task(f, "p0"), n2), KC_EINVAL);
  assert_int_equal(s->nodes[n1].idle.milli_cpu, 3000);
  assert_int_equal(s->nodes[n2].pipelined.milli_cpu, 1000);
  assert_int_equal(s->nodes[n2].releasing.milli_cpu, 500);
  assert_int_equal(fx_job(f, "pg")->count[SCH_TASK_ALLOCATED], 2);
  sch_statement_discard(st);
  /* exactly as before: nodes, jobs and tasks byte for byte */
  assert_memory_equal(s->nodes, nodes0, nsz);
  assert_memory_equal(s->jobs, jobs0, jsz);
  assert_memory_equal(s->tasks, tasks0, (size_t)s->ntasks * sizeof(sch_task));

  assert_int_equal(sch_statement_allocate(st, fx_task(f, "p0"), n1), 0);
  assert_int_equal(sch_statement_evict(st, fx_task(f, "victim"), "preempted"), 0);
  assert_int_equal(sch_statement_commit(st), 0);
  assert_int_equal(sch_statement_len(st), 0);
  assert_int_equal(s->tasks[fx_task(f, "p0")].status, SCH_TASK_BINDING);
  sch_statement_free(st);
  sch_result *r = NULL;
  assert_int_equal(sch_session_close(f->ssn, &r), 0);
  f->ssn = NULL;
  assert_int_equal(r->nbinds, 1);
  assert_string_equal(bound_node(f, r, "p0"), "n1");
  assert_int_equal(r->nevicts, 1);
  assert_int_equal(r->evicts[0].task, fx_task(f, "victim"));
  assert_string_equal(r->evicts[0].reason, "preempted");
  sch_result_free(r);
  free(nodes0);
  free(jobs0);
  free(tasks0);
  fx_free(f);
}

/* ---- enqueue ---- */

/* A gate that admits a job only when its minResources cpu fits the cluster. */
static int gate_vote(sch_session *ssn, void *ctx, const sch_job *j) {
  int *calls = ctx;
  (*calls)++;
  return j->min_resources.milli_cpu <= sch_session_snapshot(ssn)->total_allocatable.milli_cpu
             ? SCH_ABSTAIN
             : SCH_REJECT;
}
static int gate_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  static int calls;
  return sch_add_job_enqueueable_fn(ssn, gate_vote, &calls);
}
static const sch_plugin gate_plugin = {"gate", gate_open, NULL};

static void test_enqueue_gating(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 4000, 8 * GI, 110);
  fx_queue(f, "default", 1);
  Kiln__Queue *closed = fx_queue(f, "closed", 1);
  closed->status = fx_alloc(sizeof(*closed->status));
  kiln__queue_status__init(closed->status);
  closed->status->state = fx_str("Closed");
  fx_pg_min_resources(fx_pg(f, "small", "default", 1, "Pending"), 2000, GI);
  fx_pg_min_resources(fx_pg(f, "huge", "default", 1, "Pending"), 64000, GI);
  fx_pg(f, "nomin", "default", 1, "Pending");
  fx_pg(f, "inclosed", "closed", 1, "Pending");
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  sch_plugin_conf pc = {.plugin = &gate_plugin, .enabled = ~0u};
  sch_tier tier = {&pc, 1};
  const sch_action *acts[] = {sch_action_find("enqueue")};
  sch_conf conf = {.actions = acts, .nactions = 1, .tiers = &tier, .ntiers = 1};
  sch_session_options o = SCH_SESSION_OPTIONS_DEFAULT;
  o.now = 1000;
  assert_int_equal(sch_session_open(f->snap, &conf, &o, &f->ssn), 0);
  sch_result *r = fx_run(f);
  assert_int_equal(fx_pg_status(f, r, "small")->phase, SCH_PG_INQUEUE);
  assert_int_equal(fx_pg_status(f, r, "huge")->phase, SCH_PG_PENDING);
  assert_int_equal(fx_pg_status(f, r, "nomin")->phase, SCH_PG_INQUEUE); /* no minResources */
  assert_int_equal(fx_pg_status(f, r, "inclosed")->phase, SCH_PG_PENDING);
  assert_int_equal(r->nbinds, 0);
  /* queue counts by phase */
  int32_t qd = sch_snapshot_queue(f->snap, "default");
  assert_int_equal(r->queues[qd].inqueue, 2);
  assert_int_equal(r->queues[qd].pending, 1);
  sch_result_free(r);
  fx_free(f);
}

/* ---- allocate ---- */

static void test_allocate_gang_fits(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 4000, 8 * GI, 110);
  fx_node(f, "n2", 4000, 8 * GI, 110);
  fx_pg(f, "pg", "default", 3, "Pending");
  fx_pod(f, "p0", "pg", 2000, GI, NULL);
  fx_pod(f, "p1", "pg", 2000, GI, NULL);
  fx_pod(f, "p2", "pg", 2000, GI, NULL);
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 3);
  assert_non_null(bound_node(f, r, "p0"));
  const sch_pg_status *ps = fx_pg_status(f, r, "pg");
  /* Volcano counts a pod once it is bound: the session that binds the gang leaves it
   * Inqueue, and Running follows when the binds are seen. */
  assert_int_equal(ps->phase, SCH_PG_INQUEUE);
  assert_true(ps->has_condition);
  assert_string_equal(ps->condition.type, "Scheduled");
  /* the node accounting of the session matches the binds */
  int64_t used = fx_snode(f, "n1")->used.milli_cpu + fx_snode(f, "n2")->used.milli_cpu;
  assert_int_equal(used, 6000);
  int32_t qd = sch_snapshot_queue(f->snap, "default");
  assert_int_equal(r->queues[qd].allocated.milli_cpu, 6000);
  assert_int_equal(r->nwhy, 0);
  sch_result_free(r);
  fx_free(f);
}

static void test_allocate_gang_does_not_fit(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 2000, 8 * GI, 110);
  fx_node(f, "n2", 2000, 8 * GI, 110);
  Kiln__Node *g = fx_node(f, "gpu1", 8000, 8 * GI, 110);
  fx_node_taint(g, "gpu", "true", KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE);
  fx_pg(f, "pg", "default", 3, "Inqueue");
  for (int i = 0; i < 4; i++) {
    char name[8];
    snprintf(name, sizeof(name), "p%d", i);
    fx_pod(f, name, "pg", 2000, GI, NULL);
  }
  fx_open(f, core_conf);
  sch_resource idle1 = fx_snode(f, "n1")->idle;
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  /* the discarded gang left the accounting as it was */
  assert_true(sch_resource_equal(&fx_snode(f, "n1")->idle, &idle1));
  assert_int_equal(fx_job(f, "pg")->count[SCH_TASK_PENDING], 4);
  const sch_pg_status *ps = fx_pg_status(f, r, "pg");
  assert_int_equal(ps->phase, SCH_PG_INQUEUE);
  assert_string_equal(ps->condition.type, "Unschedulable");
  assert_string_equal(ps->condition.reason, "NotEnoughResources");
  assert_string_equal(ps->condition.message,
                      "3/4 tasks in gang unschedulable: cluster full: pod requests 2 cpu; the "
                      "largest free block is 0 cpu (node n1) after 2 pod(s) of the gang were "
                      "placed");
  /* an Unschedulable event on the PodGroup, FailedScheduling on each pending pod */
  int pg_events = 0, pod_events = 0;
  for (size_t i = 0; i < r->nevents; i++) {
    if (r->events[i].kind == SCH_EVENT_PODGROUP) {
      pg_events++;
      assert_string_equal(r->events[i].reason, "Unschedulable");
      assert_string_equal(r->events[i].message, ps->condition.message);
    } else {
      pod_events++;
      assert_string_equal(r->events[i].reason, "FailedScheduling");
    }
  }
  assert_int_equal(pg_events, 1);
  assert_int_equal(pod_events, 4);
  assert_int_equal(r->nwhy, 4);
  sch_result_free(r);
  fx_free(f);
}

static void test_allocate_pipelines_onto_releasing(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 4000, 8 * GI, 110);
  fx_pg(f, "old", "default", 1, "Running");
  Kiln__Pod *going = fx_pod(f, "going", "old", 4000, GI, "n1");
  going->deletion_time = 10;
  fx_pg(f, "new", "default", 1, "Inqueue");
  fx_pod(f, "waiting", "new", 3000, GI, NULL);
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  const sch_task *t = &f->snap->tasks[fx_task(f, "waiting")];
  assert_int_equal(t->status, SCH_TASK_PIPELINED);
  assert_string_equal(f->snap->nodes[t->node].name, "n1");
  assert_int_equal(fx_snode(f, "n1")->pipelined.milli_cpu, 3000);
  sch_result_free(r);
  fx_free(f);
}

static void test_backfill_best_effort(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 1000, GI, 110);
  fx_pg(f, "full", "default", 1, "Running");
  fx_pod(f, "hog", "full", 1000, GI, "n1");
  fx_pg(f, "be", "default", 1, "Inqueue");
  fx_pod(f, "besteffort", "be", 0, 0, NULL);
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_string_equal(bound_node(f, r, "besteffort"), "n1");
  sch_result_free(r);

  /* without backfill, allocate leaves it alone */
  fx *g = fx_new();
  fx_node(g, "n1", 1000, GI, 110);
  fx_pg(g, "be", "default", 1, "Inqueue");
  fx_pod(g, "besteffort", "be", 0, 0, NULL);
  fx_open(g, "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n");
  r = fx_run(g);
  assert_int_equal(r->nbinds, 0);
  sch_result_free(r);
  fx_free(g);
  fx_free(f);
}

/* A pending best-effort pod in PodGroup group (Running, minMember 1) of queue q. */
static Kiln__Pod *be_pod(fx *f, const char *name, const char *group, const char *q) {
  bool have = false;
  for (size_t i = 0; i < f->msg->n_pod_groups; i++)
    have = have || strcmp(f->msg->pod_groups[i]->metadata->name, group) == 0;
  if (!have)
    fx_pg(f, group, q, 1, "Running");
  return fx_pod(f, name, group, 0, 0, NULL);
}

/* Backfill walks Volcano's order (pickUpPendingTasks), not the snapshot's: queues by the
 * queue order, jobs by the job order, tasks by the task order. */
static void test_backfill_order(void **state) {
  (void)state;
  /* queues: qb is older, so its job goes first although qa's job comes first in the
   * snapshot; the node holds one pod */
  fx *f = fx_new();
  fx_node(f, "n1", 1000, GI, 1);
  Kiln__Queue *qa = fx_queue(f, "qa", 1);
  free(qa->metadata->creation_timestamp);
  qa->metadata->creation_timestamp = fx_str("2026-11-29T11:00:00Z");
  fx_queue(f, "qb", 1);
  be_pod(f, "a-pod", "a", "qa");
  be_pod(f, "b-pod", "b", "qb");
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_non_null(bound_node(f, r, "b-pod"));
  sch_result_free(r);
  fx_free(f);

  /* jobs by priority, then tasks by pod priority: room for two pods */
  f = fx_new();
  fx_node(f, "n1", 1000, GI, 2);
  Kiln__PriorityClass *pc = fx_alloc(sizeof(*pc));
  kiln__priority_class__init(pc);
  pc->metadata = fx_meta(NULL, "high");
  pc->has_value = 1;
  pc->value = 1000;
  FX_APPEND(f->msg->priority_classes, f->msg->n_priority_classes, pc);
  be_pod(f, "low-pod", "a-low", "default");
  fx_pg(f, "b-high", "default", 1, "Running")->spec->priority_class_name = fx_str("high");
  be_pod(f, "first", "b-high", "default")->priority = 1;
  be_pod(f, "urgent", "b-high", "default")->priority = 50;
  be_pod(f, "middle", "b-high", "default")->priority = 10;
  fx_open(f, core_conf);
  r = fx_run(f);
  assert_int_equal(r->nbinds, 2);
  assert_non_null(bound_node(f, r, "urgent"));
  assert_non_null(bound_node(f, r, "middle"));
  sch_result_free(r);
  fx_free(f);

  /* the first task no node accepts ends backfill, as in Volcano: the tolerating pod of the
   * younger job is not tried */
  f = fx_new();
  fx_node_taint(fx_node(f, "n1", 1000, GI, 110), "gpu", "true",
                KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE);
  Kiln__PodGroup *old = fx_pg(f, "a-old", "default", 1, "Running");
  free(old->metadata->creation_timestamp);
  old->metadata->creation_timestamp = fx_str("2026-01-01T00:00:00Z");
  be_pod(f, "intolerant", "a-old", "default");
  fx_pod_toleration(be_pod(f, "tolerant", "b-young", "default"), "gpu",
                    KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL, "true",
                    KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE);
  fx_open(f, core_conf);
  r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  sch_result_free(r);
  fx_free(f);
}

static void test_priority_order(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 2000, 8 * GI, 110);
  Kiln__PriorityClass *pc = fx_alloc(sizeof(*pc));
  kiln__priority_class__init(pc);
  pc->metadata = fx_meta(NULL, "high");
  pc->has_value = 1;
  pc->value = 1000;
  FX_APPEND(f->msg->priority_classes, f->msg->n_priority_classes, pc);
  Kiln__PodGroup *low = fx_pg(f, "a-low", "default", 1, "Inqueue");
  free(low->metadata->creation_timestamp);
  low->metadata->creation_timestamp = fx_str("2026-01-01T00:00:00Z"); /* older */
  Kiln__PodGroup *high = fx_pg(f, "b-high", "default", 1, "Inqueue");
  high->spec->priority_class_name = fx_str("high");
  fx_pod(f, "lowpod", "a-low", 2000, GI, NULL);
  fx_pod(f, "highpod", "b-high", 2000, GI, NULL);
  /* inside one job, the higher pod priority goes first */
  fx_pg(f, "c-mixed", "default", 1, "Inqueue");
  Kiln__Pod *m1 = fx_pod(f, "m-first", "c-mixed", 100, 0, NULL);
  Kiln__Pod *m2 = fx_pod(f, "m-urgent", "c-mixed", 100, 0, NULL);
  m1->priority = 1;
  m2->priority = 50;
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_non_null(bound_node(f, r, "highpod"));
  assert_null(bound_node(f, r, "lowpod"));
  assert_null(bound_node(f, r, "m-first"));
  assert_null(bound_node(f, r, "m-urgent"));
  sch_result_free(r);
  fx_free(f);

  f = fx_new();
  fx_node(f, "n1", 150, 8 * GI, 110);
  fx_pg(f, "c-mixed", "default", 1, "Inqueue");
  m1 = fx_pod(f, "m-first", "c-mixed", 100, 0, NULL);
  m2 = fx_pod(f, "m-urgent", "c-mixed", 100, 0, NULL);
  m1->priority = 1;
  m2->priority = 50;
  fx_open(f, core_conf);
  r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_non_null(bound_node(f, r, "m-urgent"));
  sch_result_free(r);
  fx_free(f);
}

/* Job valid: a gang with fewer pods than minMember is not tried and says why. */
static void test_gang_not_enough_tasks(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 8000, 8 * GI, 110);
  fx_pg(f, "pg", "default", 3, "Inqueue");
  fx_pod(f, "p0", "pg", 100, 0, NULL);
  fx_pod(f, "p1", "pg", 100, 0, NULL);
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  const sch_pg_status *ps = fx_pg_status(f, r, "pg");
  assert_string_equal(ps->condition.reason, "NotEnoughTasks");
  assert_string_equal(ps->condition.message,
                      "Not enough valid tasks for gang-scheduling, valid: 2, min: 3");
  /* The job was not tried (Volcano drops it from the session): its pods are not told
   * FailedScheduling while the rest of the gang is being created. */
  assert_int_equal(r->nwhy, 0);
  for (size_t i = 0; i < r->nevents; i++)
    assert_string_not_equal(r->events[i].reason, "FailedScheduling");
  sch_result_free(r);
  fx_free(f);
}

/* Tier rules: victims are the intersection inside a tier; conformance protects
 * kube-system and critical pods, gang keeps minAvailable. */
static void test_victims(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 8000, 8 * GI, 110);
  fx_pg(f, "g", "default", 2, "Running");
  fx_pod(f, "g0", "g", 100, 0, "n1");
  fx_pod(f, "g1", "g", 100, 0, "n1");
  fx_pod(f, "g2", "g", 100, 0, "n1");
  Kiln__Pod *sys = fx_pod(f, "sys", NULL, 100, 0, "n1");
  free(sys->namespace_);
  sys->namespace_ = fx_str("kube-system");
  fx_pg(f, "hi", "default", 1, "Inqueue");
  Kiln__Pod *pre = fx_pod(f, "pre", "hi", 100, 0, NULL);
  pre->priority = 100;
  fx_open(f, "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: conformance\n");
  int32_t cands[] = {fx_task(f, "g0"), fx_task(f, "g1"), fx_task(f, "g2"), fx_task(f, "sys")};
  int32_t out[4];
  int n = sch_session_preemptable(f->ssn, &f->snap->tasks[fx_task(f, "pre")], cands, 4, out);
  /* gang: only one of g's three may go (minAvailable 2); conformance: not sys */
  assert_int_equal(n, 1);
  assert_int_equal(out[0], fx_task(f, "g0"));
  fx_free(f);
}

/* ---- tier rules with scripted plugins ---- */

typedef struct script {
  int vote;  /* enqueueable / pipelined */
  int order; /* job order answer */
  int calls;
} script;

static script scripts[3];

static int s_vote(sch_session *ssn, void *ctx, const sch_job *j) {
  script *s = ctx;
  s->calls++;
  return s->vote;
}
static int s_order(sch_session *ssn, void *ctx, const sch_job *l, const sch_job *r) {
  return ((script *)ctx)->order;
}
static int s_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  /* the plugin's index is its first argument */
  script *s = &scripts[sch_args_int(&conf->args, "i", 0)];
  int rc = sch_add_job_enqueueable_fn(ssn, s_vote, s);
  if (rc == 0)
    rc = sch_add_job_pipelined_fn(ssn, s_vote, s);
  if (rc == 0)
    rc = sch_add_job_order_fn(ssn, s_order, s);
  return rc;
}
static const sch_plugin script_plugin = {"script", s_open, NULL};

static void test_tier_rules(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_pg(f, "a", "default", 1, "Pending");
  fx_pg(f, "b", "default", 1, "Pending");
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  sch_arg args[3] = {{"i", "0"}, {"i", "1"}, {"i", "2"}};
  sch_plugin_conf t0[2] = {{.plugin = &script_plugin, .enabled = ~0u, .args = {&args[0], 1}},
                           {.plugin = &script_plugin, .enabled = ~0u, .args = {&args[1], 1}}};
  sch_plugin_conf t1[1] = {{.plugin = &script_plugin, .enabled = ~0u, .args = {&args[2], 1}}};
  sch_tier tiers[2] = {{t0, 2}, {t1, 1}};
  const sch_action *acts[] = {sch_action_find("allocate")};
  sch_conf conf = {.actions = acts, .nactions = 1, .tiers = tiers, .ntiers = 2};
  const sch_job *a = fx_job(f, "a"), *b = fx_job(f, "b");
  struct {
    int v0, v1, v2;
    bool want;
    int calls2; /* was tier 1 asked? */
  } votes[] = {
      {SCH_PERMIT, SCH_ABSTAIN, SCH_REJECT, true, 0},   /* a permit settles tier 0 */
      {SCH_ABSTAIN, SCH_ABSTAIN, SCH_REJECT, false, 1}, /* tier 0 abstains: tier 1 rejects */
      {SCH_PERMIT, SCH_REJECT, SCH_PERMIT, false, 0},   /* a reject is final */
      {SCH_ABSTAIN, SCH_ABSTAIN, SCH_ABSTAIN, true, 1}, /* nobody objects */
  };
  for (size_t i = 0; i < sizeof(votes) / sizeof(votes[0]); i++) {
    memset(scripts, 0, sizeof(scripts));
    scripts[0].vote = votes[i].v0;
    scripts[1].vote = votes[i].v1;
    scripts[2].vote = votes[i].v2;
    sch_session *ssn;
    assert_int_equal(sch_session_open(f->snap, &conf, NULL, &ssn), 0);
    assert_int_equal(sch_session_job_enqueueable(ssn, a), votes[i].want);
    assert_int_equal(scripts[2].calls, votes[i].calls2);
    assert_int_equal(sch_session_job_pipelined(ssn, a), votes[i].want);
    sch_result *r;
    assert_int_equal(sch_session_close(ssn, &r), 0);
    sch_result_free(r);
  }
  /* order: the first plugin with an answer decides, across tiers */
  memset(scripts, 0, sizeof(scripts));
  scripts[2].order = 1;
  sch_session *ssn;
  assert_int_equal(sch_session_open(f->snap, &conf, NULL, &ssn), 0);
  assert_int_equal(sch_session_job_order(ssn, a, b), 1);
  sch_result *r;
  assert_int_equal(sch_session_close(ssn, &r), 0);
  sch_result_free(r);
  /* a switch turned off: the callback is not registered, the fallback (key) decides */
  t1[0].enabled &= ~(1u << SCH_EXT_JOB_ORDER);
  assert_int_equal(sch_session_open(f->snap, &conf, NULL, &ssn), 0);
  assert_true(sch_session_job_order(ssn, a, b) < 0);
  assert_int_equal(sch_session_close(ssn, &r), 0);
  sch_result_free(r);
  fx_free(f);
}

/* Volcano's node search: at most max(minimum feasible, percentage) nodes per task, and the
 * next task resumes where the last scan stopped. */
static void place_three(sch_session_options *o, const char **want) {
  fx *f = fx_new();
  char name[32];
  for (int i = 0; i < 300; i++) {
    snprintf(name, sizeof(name), "n%03d", i);
    fx_node(f, name, 4000, 8 * GI, 110);
  }
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof(name), "j%d", i);
    fx_pg(f, name, "default", 1, "Inqueue");
    snprintf(name, sizeof(name), "p%d", i);
    char grp[8];
    snprintf(grp, sizeof(grp), "j%d", i);
    fx_pod(f, name, grp, 1000, GI, NULL);
  }
  static const char y[] = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n";
  char err[128];
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  assert_int_equal(sch_conf_parse(y, strlen(y), &f->conf, err, sizeof(err)), 0);
  assert_int_equal(sch_session_open(f->snap, f->conf, o, &f->ssn), 0);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 3);
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof(name), "p%d", i);
    assert_string_equal(bound_node(f, r, name), want[i]);
  }
  sch_result_free(r);
  fx_free(f);
}

static void test_node_search_window(void **state) {
  (void)state;
  sch_session_options o = SCH_SESSION_OPTIONS_DEFAULT;
  /* 300 nodes: adaptive 50 - 300/125 = 48% = 144 nodes per scan */
  place_three(&o, (const char *[]){"n000", "n144", "n288"});
  o.minimum_feasible_nodes = 50;
  o.percentage_nodes_to_find = 10; /* 30 < 50: the minimum wins */
  place_three(&o, (const char *[]){"n000", "n050", "n100"});
  o.percentage_nodes_to_find = 100; /* every node, every time */
  place_three(&o, (const char *[]){"n000", "n000", "n000"});
}

/* PodGroup phases at close (Volcano getPodGroupPhase). */
static void test_pg_phases(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 2000, 8 * GI, 110);
  fx_pg(f, "done", "default", 2, "Running");
  Kiln__Pod *d0 = fx_pod(f, "d0", "done", 100, 0, "n1");
  Kiln__Pod *d1 = fx_pod(f, "d1", "done", 100, 0, "n1");
  d0->phase = d1->phase = KILN__POD_PHASE__POD_PHASE_SUCCEEDED;
  /* one running, two more needed that do not fit: Unknown */
  fx_pg(f, "partial", "default", 3, "Running");
  fx_pod(f, "r0", "partial", 1000, 0, "n1");
  fx_pod(f, "r1", "partial", 4000, 0, NULL);
  fx_pod(f, "r2", "partial", 4000, 0, NULL);
  fx_pg(f, "running", "default", 1, "Inqueue");
  fx_pod(f, "x0", "running", 500, 0, "n1");
  fx_pg(f, "waiting", "default", 1, "Inqueue"); /* no pods yet */
  /* Failed pods count as scheduled and completed (Volcano ScheduledStatus, CompletedStatus) */
  fx_pg(f, "failed", "default", 2, "Running");
  Kiln__Pod *f0 = fx_pod(f, "f0", "failed", 100, 0, "n1");
  Kiln__Pod *f1 = fx_pod(f, "f1", "failed", 100, 0, "n1");
  f0->phase = KILN__POD_PHASE__POD_PHASE_FAILED;
  f1->phase = KILN__POD_PHASE__POD_PHASE_SUCCEEDED;
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(fx_pg_status(f, r, "done")->phase, SCH_PG_COMPLETED);
  assert_int_equal(fx_pg_status(f, r, "done")->succeeded, 2);
  assert_int_equal(fx_pg_status(f, r, "partial")->phase, SCH_PG_UNKNOWN);
  assert_int_equal(fx_pg_status(f, r, "partial")->running, 1);
  assert_int_equal(fx_pg_status(f, r, "running")->phase, SCH_PG_RUNNING);
  assert_int_equal(fx_pg_status(f, r, "failed")->phase, SCH_PG_COMPLETED);
  assert_int_equal(fx_pg_status(f, r, "failed")->failed, 1);
  const sch_pg_status *w = fx_pg_status(f, r, "waiting");
  assert_int_equal(w->phase, SCH_PG_INQUEUE);
  assert_string_equal(w->condition.message,
                      "1/0 tasks in gang unschedulable: pod group is not ready, 1 minAvailable");
  sch_result_free(r);
  fx_free(f);
}

/* A job turned away by its queue (proportion, default configuration) says so. */
static void test_queue_share_exhausted(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 8000, 8 * GI, 110);
  fx_queue(f, "default", 1);
  fx_queue_capability(fx_queue(f, "small", 1), 1000, GI);
  fx_pg_min_resources(fx_pg(f, "big", "small", 1, "Pending"), 4000, GI);
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  assert_int_equal(sch_conf_default(&f->conf), 0);
  assert_int_equal(sch_session_open(f->snap, f->conf, NULL, &f->ssn), 0);
  sch_result *r = fx_run(f);
  const sch_pg_status *ps = fx_pg_status(f, r, "big");
  assert_int_equal(ps->phase, SCH_PG_PENDING);
  assert_string_equal(ps->condition.message,
                      "1/0 tasks in gang unschedulable: queue small resource quota "
                      "insufficient: the gang needs 4 cpu (minResources); the queue has 1 cpu "
                      "left of 1 cpu");
  bool event = false;
  for (size_t i = 0; i < r->nevents; i++)
    if (r->events[i].kind == SCH_EVENT_PODGROUP &&
        strcmp(r->events[i].message, ps->condition.message) == 0)
      event = true;
  assert_true(event);
  sch_result_free(r);
  fx_free(f);
}

/* Creation times with UTC offsets order jobs by the instant they name: 10:00+05:00 is
 * 05:00Z, older than 06:00Z, so that gang goes first on a node with room for one. */
static void test_creation_time_offsets(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 1000, GI, 110);
  Kiln__PodGroup *late = fx_pg(f, "a-late", "default", 1, "Inqueue");
  free(late->metadata->creation_timestamp);
  late->metadata->creation_timestamp = fx_str("2026-01-01T06:00:00Z");
  Kiln__PodGroup *early = fx_pg(f, "z-early", "default", 1, "Inqueue");
  free(early->metadata->creation_timestamp);
  early->metadata->creation_timestamp = fx_str("2026-01-01T10:00:00.5+05:00");
  fx_pod(f, "latepod", "a-late", 1000, 0, NULL);
  fx_pod(f, "earlypod", "z-early", 1000, 0, NULL);
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_non_null(bound_node(f, r, "earlypod"));
  sch_result_free(r);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resource_arith),
      cmocka_unit_test(test_conf_default),
      cmocka_unit_test(test_conf_custom),
      cmocka_unit_test(test_conf_invalid),
      cmocka_unit_test(test_conf_alias_bounds),
      cmocka_unit_test(test_conf_reload_keeps_previous),
      cmocka_unit_test(test_conf_gang_actions),
      cmocka_unit_test(test_conf_skips_unknown_plugins),
      cmocka_unit_test(test_conf_action_args),
      cmocka_unit_test(test_conf_metrics_section),
      cmocka_unit_test(test_plugin_args_table),
      cmocka_unit_test(test_snapshot_accounting),
      cmocka_unit_test(test_statement_discard_and_commit),
      cmocka_unit_test(test_enqueue_gating),
      cmocka_unit_test(test_allocate_gang_fits),
      cmocka_unit_test(test_allocate_gang_does_not_fit),
      cmocka_unit_test(test_allocate_pipelines_onto_releasing),
      cmocka_unit_test(test_backfill_best_effort),
      cmocka_unit_test(test_backfill_order),
      cmocka_unit_test(test_priority_order),
      cmocka_unit_test(test_gang_not_enough_tasks),
      cmocka_unit_test(test_victims),
      cmocka_unit_test(test_tier_rules),
      cmocka_unit_test(test_node_search_window),
      cmocka_unit_test(test_pg_phases),
      cmocka_unit_test(test_queue_share_exhausted),
      cmocka_unit_test(test_creation_time_offsets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
