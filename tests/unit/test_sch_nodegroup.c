/* The nodegroup plugin on hand-built sessions: Volcano's predicate (each reason, the
 * anti-affinity precedence), its scores, inheritance with enableHierarchy, and two queues
 * bound to two groups whose jobs never cross. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "test_sch_plugins_fixture.h"

#define GROUP_LABEL "volcano.sh/nodegroup-name"

static Kiln__NodeGroupAffinityTerms *terms_new(void) {
  Kiln__NodeGroupAffinityTerms *t = fx_alloc(sizeof(*t));
  kiln__node_group_affinity_terms__init(t);
  return t;
}

/* Adds group to one of q's four lists: anti picks nodeGroupAntiAffinity, required picks the
 * required list (else the preferred one). */
static void queue_group(Kiln__Queue *q, bool anti, bool required, const char *group) {
  if (q->spec->affinity == NULL) {
    q->spec->affinity = fx_alloc(sizeof(*q->spec->affinity));
    kiln__queue_affinity__init(q->spec->affinity);
  }
  Kiln__QueueAffinity *a = q->spec->affinity;
  Kiln__NodeGroupAffinityTerms **tp = anti ? &a->node_group_anti_affinity : &a->node_group_affinity;
  if (*tp == NULL)
    *tp = terms_new();
  Kiln__NodeGroupAffinityTerms *t = *tp;
  if (required)
    FX_APPEND(t->required_during_scheduling_ignored_during_execution,
              t->n_required_during_scheduling_ignored_during_execution, fx_str(group));
  else
    FX_APPEND(t->preferred_during_scheduling_ignored_during_execution,
              t->n_preferred_during_scheduling_ignored_during_execution, fx_str(group));
}

static Kiln__Node *group_node(fx *f, const char *name, const char *group) {
  Kiln__Node *n = fx_node(f, name, 8000, 16 * GI, 110);
  if (group)
    fx_node_label(n, GROUP_LABEL, group);
  return n;
}

static const char nodegroup_yaml[] = "actions: \"allocate\"\n"
                                     "tiers:\n"
                                     "- plugins:\n"
                                     "  - name: nodegroup\n";

static void test_nodegroup_predicate(void **state) {
  (void)state;
  fx *f = fx_new();
  Kiln__Queue *q = fx_queue(f, "tenant", 1);
  queue_group(q, false, true, "req");
  queue_group(q, false, false, "pref");
  queue_group(q, true, true, "anti-req");
  queue_group(q, true, false, "anti-pref");
  queue_group(q, false, true, "both"); /* required and anti-required: anti wins */
  queue_group(q, true, true, "both");
  fx_queue(f, "plain", 1);
  fx_pg(f, "a", "tenant", 1, "Inqueue");
  fx_pg(f, "b", "plain", 1, "Inqueue");
  fx_pod(f, "a-0", "a", 100, GI, NULL);
  fx_pod(f, "b-0", "b", 100, GI, NULL);
  group_node(f, "unlabelled", NULL);
  group_node(f, "n-req", "req");
  group_node(f, "n-pref", "pref");
  group_node(f, "n-anti-req", "anti-req");
  group_node(f, "n-anti-pref", "anti-pref");
  group_node(f, "n-both", "both");
  group_node(f, "n-other", "other");
  fx_open(f, nodegroup_yaml);

  const char *why;
  assert_int_equal(fx_predicate(f, "a-0", "unlabelled", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "node group label not found");
  assert_int_equal(fx_predicate(f, "a-0", "n-req", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "a-0", "n-pref", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "a-0", "n-anti-pref", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "a-0", "n-anti-req", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "node does not satisfy the node group affinity");
  assert_int_equal(fx_predicate(f, "a-0", "n-both", &why), SCH_UNRESOLVABLE);
  assert_int_equal(fx_predicate(f, "a-0", "n-other", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "node does not satisfy the node group affinity");
  /* A queue without spec.affinity runs nowhere a node group is set up. */
  assert_int_equal(fx_predicate(f, "b-0", "n-req", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "node group affinity not specified");
  fx_free(f);
}

static void test_nodegroup_scores(void **state) {
  (void)state;
  fx *f = fx_new();
  Kiln__Queue *q = fx_queue(f, "tenant", 1);
  queue_group(q, false, true, "req");
  queue_group(q, false, false, "pref");
  queue_group(q, false, true, "req-pref");
  queue_group(q, false, false, "req-pref");
  queue_group(q, true, false, "anti-pref");
  queue_group(q, false, true, "anti-pref");
  fx_pg(f, "a", "tenant", 1, "Inqueue");
  fx_pod(f, "a-0", "a", 100, GI, NULL);
  group_node(f, "unlabelled", NULL);
  group_node(f, "n-req", "req");
  group_node(f, "n-pref", "pref");
  group_node(f, "n-req-pref", "req-pref");
  group_node(f, "n-anti-pref", "anti-pref");
  group_node(f, "n-other", "other");
  fx_open(f, nodegroup_yaml);

  int32_t nodes[6];
  double scores[6];
  for (int i = 0; i < 6; i++)
    nodes[i] = i;
  sch_session_node_scores(f->ssn, &f->snap->tasks[fx_task(f, "a-0")], nodes, 6, scores);
  assert_true(scores[0] == 0);
  assert_true(scores[1] == 100);
  assert_true(scores[2] == 50);
  assert_true(scores[3] == 150);
  assert_true(scores[4] == -1); /* preferred anti-affinity replaces the sum */
  assert_true(scores[5] == 0);
  fx_free(f);
}

static const char hierarchy_yaml[] = "actions: \"allocate\"\n"
                                     "tiers:\n"
                                     "- plugins:\n"
                                     "  - name: nodegroup\n"
                                     "    enableHierarchy: true\n";

/* A child queue without affinity takes its nearest ancestor's only with enableHierarchy;
 * a queue with its own keeps it. */
static void test_nodegroup_hierarchy(void **state) {
  (void)state;
  for (int hier = 0; hier < 2; hier++) {
    fx *f = fx_new();
    Kiln__Queue *root = fx_queue(f, "root", 1);
    queue_group(root, false, true, "shared");
    Kiln__Queue *dept = fx_queue(f, "dept", 1);
    queue_group(dept, false, true, "dept-pool");
    Kiln__Queue *team = fx_queue(f, "team", 1);
    team->spec->parent = fx_str("dept");
    fx_queue(f, "other", 1); /* parent: root */
    fx_pg(f, "t", "team", 1, "Inqueue");
    fx_pg(f, "o", "other", 1, "Inqueue");
    fx_pod(f, "t-0", "t", 100, GI, NULL);
    fx_pod(f, "o-0", "o", 100, GI, NULL);
    group_node(f, "n-dept", "dept-pool");
    group_node(f, "n-shared", "shared");
    fx_open(f, hier ? hierarchy_yaml : nodegroup_yaml);
    const char *why;
    if (hier) {
      assert_int_equal(fx_predicate(f, "t-0", "n-dept", &why), SCH_FIT);
      assert_int_equal(fx_predicate(f, "t-0", "n-shared", &why), SCH_UNRESOLVABLE);
      assert_int_equal(fx_predicate(f, "o-0", "n-shared", &why), SCH_FIT);
    } else {
      assert_int_equal(fx_predicate(f, "t-0", "n-dept", &why), SCH_UNRESOLVABLE);
      assert_string_equal(why, "node group affinity not specified");
      assert_int_equal(fx_predicate(f, "o-0", "n-shared", &why), SCH_UNRESOLVABLE);
    }
    fx_free(f);
  }
}

static const char allocate_yaml[] = "actions: \"allocate\"\n"
                                    "tiers:\n"
                                    "- plugins:\n"
                                    "  - name: gang\n"
                                    "- plugins:\n"
                                    "  - name: predicates\n"
                                    "  - name: nodegroup\n";

/* Two tenants, each bound to its own group: every pod lands in its queue's group, and the
 * overflow of one tenant waits rather than spill into the other's nodes. */
static void test_nodegroup_queues_never_cross(void **state) {
  (void)state;
  fx *f = fx_new();
  Kiln__Queue *qa = fx_queue(f, "qa", 1);
  queue_group(qa, false, true, "ga");
  Kiln__Queue *qb = fx_queue(f, "qb", 1);
  queue_group(qb, false, true, "gb");
  group_node(f, "a1", "ga");
  group_node(f, "b1", "gb");
  group_node(f, "b2", "gb");
  fx_gangs(f, "ja", "qa", 3, 4000, GI, 0); /* 3 x 4 cpu: only 2 fit on a1 */
  fx_gangs(f, "jb", "qb", 2, 4000, GI, 0);
  fx_open(f, allocate_yaml);
  sch_result *r = fx_run(f);
  int on_a = 0, on_b = 0;
  for (size_t i = 0; i < r->nbinds; i++) {
    const char *pod = f->snap->tasks[r->binds[i].task].pod->name;
    const char *node = f->snap->nodes[r->binds[i].node].name;
    if (pod[1] == 'a') {
      assert_string_equal(node, "a1");
      on_a++;
    } else {
      assert_true(node[0] == 'b');
      on_b++;
    }
  }
  assert_int_equal(on_a, 2);
  assert_int_equal(on_b, 2);
  sch_result_free(r);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nodegroup_predicate),
      cmocka_unit_test(test_nodegroup_scores),
      cmocka_unit_test(test_nodegroup_hierarchy),
      cmocka_unit_test(test_nodegroup_queues_never_cross),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
