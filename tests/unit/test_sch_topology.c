/* Network-topology-aware gangs on hand-built sessions (the allocate action's HyperNode path,
 * the network-topology-aware plugin, the gang plugin's sub-groups): 32 nodes of one pod each
 * in 4 leaves (tier 1) under 2 spines (tier 2). A hard tier-1 gang of 8 lands under one leaf;
 * of 12 it waits and says why (the tier and the largest free domain); hard tier 2 takes one
 * spine; soft takes the smallest domain that holds it and spreads only when none does; later
 * members go back to the gang's HyperNode; sub-groups each stay within their own leaf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "sch_hypernode.h"
#include "test_sch_plugins_fixture.h"

static const char conf_yaml[] = "actions: \"allocate\"\n"
                                "tiers:\n"
                                "- plugins:\n"
                                "  - name: gang\n"
                                "- plugins:\n"
                                "  - name: predicates\n"
                                "  - name: nodeorder\n"
                                "  - name: network-topology-aware\n";

/* Leaves leaf-0..3 of nodes n<leaf>-<i> (i < 8), 1 cpu each; spine-0: leaf-0, leaf-1;
 * spine-1: leaf-2, leaf-3. */
static fx *fabric(void) {
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  for (int l = 0; l < 4; l++) {
    char leaf[16], node[16];
    snprintf(leaf, sizeof(leaf), "leaf-%d", l);
    Kiln__HyperNode *h = fx_hypernode(f, leaf, 1, "leaf");
    for (int i = 0; i < 8; i++) {
      snprintf(node, sizeof(node), "n%d-%d", l, i);
      fx_node(f, node, 1000, 4 * GI, 110);
      fx_hn_exact(h, "Node", node);
    }
  }
  for (int s = 0; s < 2; s++) {
    char spine[16], leaf[16];
    snprintf(spine, sizeof(spine), "spine-%d", s);
    Kiln__HyperNode *h = fx_hypernode(f, spine, 2, "spine");
    for (int l = 0; l < 2; l++) {
      snprintf(leaf, sizeof(leaf), "leaf-%d", s * 2 + l);
      fx_hn_exact(h, "HyperNode", leaf);
    }
  }
  return f;
}

/* A gang of n pending 1-cpu pods <name>-<i>, minMember n. */
static Kiln__PodGroup *gang(fx *f, const char *name, int n) {
  Kiln__PodGroup *pg = fx_pg(f, name, "default", n, "Inqueue");
  for (int i = 0; i < n; i++) {
    char pod[48];
    snprintf(pod, sizeof(pod), "%s-%d", name, i);
    fx_pod(f, pod, name, 1000, GI, NULL);
  }
  return pg;
}

/* The leaf (its index, from the node name n<leaf>-<i>) of each bound pod of group, counted
 * per leaf into per_leaf[4]; returns the number of binds of the group. */
static int leaves_of(const fx *f, const sch_result *r, const char *group, int per_leaf[4]) {
  int n = 0;
  memset(per_leaf, 0, 4 * sizeof(int));
  for (size_t i = 0; i < r->nbinds; i++) {
    const sch_task *t = &f->snap->tasks[r->binds[i].task];
    if (strncmp(t->pod->name, group, strlen(group)) != 0 || t->pod->name[strlen(group)] != '-')
      continue;
    per_leaf[f->snap->nodes[r->binds[i].node].name[1] - '0']++;
    n++;
  }
  return n;
}

static int leaves_used(const int per_leaf[4]) {
  int n = 0;
  for (int l = 0; l < 4; l++)
    n += per_leaf[l] > 0;
  return n;
}

static void test_hard_tier1_gang_of_8_one_leaf(void **state) {
  (void)state;
  fx *f = fabric();
  fx_pg_topology(gang(f, "g8", 8), "hard", 1);
  fx_open(f, conf_yaml);
  sch_result *r = fx_run(f);
  int per[4];
  assert_int_equal(leaves_of(f, r, "g8", per), 8);
  assert_int_equal(leaves_used(per), 1);
  sch_result_free(r);
  fx_free(f);
}

static void test_hard_tier1_gang_of_12_waits_and_says_why(void **state) {
  (void)state;
  fx *f = fabric();
  fx_pg_topology(gang(f, "g12", 12), "hard", 1);
  fx_open(f, conf_yaml);
  sch_result *r = fx_run(f);
  int per[4];
  assert_int_equal(leaves_of(f, r, "g12", per), 0);
  const char *msg = fx_pg_message(f, r, "g12");
  assert_non_null(strstr(msg, "no HyperNode of tier <= 1 holds the 12 pods the gang needs"));
  assert_non_null(strstr(msg, "the largest free domain, leaf-0 (tier 1), has room for 8"));
  sch_result_free(r);
  fx_free(f);
}

/* Tier 2 allowed: 12 pods under one spine, over its two leaves. */
static void test_hard_tier2_one_spine(void **state) {
  (void)state;
  fx *f = fabric();
  fx_pg_topology(gang(f, "g12", 12), "hard", 2);
  fx_open(f, conf_yaml);
  sch_result *r = fx_run(f);
  int per[4];
  assert_int_equal(leaves_of(f, r, "g12", per), 12);
  assert_true((per[0] + per[1] == 12) || (per[2] + per[3] == 12));
  sch_result_free(r);
  fx_free(f);
}

/* Soft: 8 pods fit a leaf and take one; 20 fit no spine and spread over the cluster. */
static void test_soft_spreads_only_when_no_leaf_fits(void **state) {
  (void)state;
  fx *f = fabric();
  fx_pg_topology(gang(f, "s8", 8), "soft", 1);
  fx_pg_topology(gang(f, "s20", 20), "soft", 1);
  fx_open(f, conf_yaml);
  sch_result *r = fx_run(f);
  int per[4];
  assert_int_equal(leaves_of(f, r, "s8", per), 8);
  assert_int_equal(leaves_used(per), 1);
  assert_int_equal(leaves_of(f, r, "s20", per), 20);
  assert_true(leaves_used(per) >= 3);
  sch_result_free(r);
  fx_free(f);
}

/* Two members already run in leaf-2: the two pending ones go back to it, though leaf-0 is
 * first by name and emptier. */
static void test_later_members_go_back(void **state) {
  (void)state;
  fx *f = fabric();
  Kiln__PodGroup *pg = fx_pg(f, "g", "default", 4, "Running");
  fx_pg_topology(pg, "hard", 1);
  fx_pod(f, "g-0", "g", 1000, GI, "n2-0");
  fx_pod(f, "g-1", "g", 1000, GI, "n2-1");
  fx_pod(f, "g-2", "g", 1000, GI, NULL);
  fx_pod(f, "g-3", "g", 1000, GI, NULL);
  fx_open(f, conf_yaml);
  sch_result *r = fx_run(f);
  int per[4];
  assert_int_equal(leaves_of(f, r, "g", per), 2);
  assert_int_equal(per[2], 2);
  sch_result_free(r);
  fx_free(f);
}

/* The leaf is full but for one node: the pending member waits rather than leave the leaf. */
static void test_hard_member_never_leaves_its_leaf(void **state) {
  (void)state;
  fx *f = fabric();
  Kiln__PodGroup *pg = fx_pg(f, "g", "default", 3, "Running");
  fx_pg_topology(pg, "hard", 1);
  for (int i = 0; i < 8; i++) {
    char pod[16], node[16];
    snprintf(pod, sizeof(pod), "o-%d", i);
    snprintf(node, sizeof(node), "n3-%d", i);
    fx_pod(f, pod, NULL, 1000, GI, node); /* leaf-3 full of another's pods */
  }
  fx_pod(f, "g-0", "g", 1000, GI, NULL);
  fx_pod(f, "g-1", "g", 1000, GI, NULL);
  /* g-2 runs in leaf-3 (o-0 made room for it before): the gang is held there. */
  free(f->msg->pods[0]->node_name);
  f->msg->pods[0]->node_name = fx_str("n3-7");
  fx_pod(f, "g-2", "g", 1000, GI, "n3-0");
  fx_open(f, conf_yaml);
  sch_result *r = fx_run(f);
  int per[4];
  /* g-2 holds leaf-3, which is full: g-0 and g-1 wait rather than go elsewhere. */
  assert_int_equal(leaves_of(f, r, "g", per), 0);
  assert_non_null(strstr(fx_pg_message(f, r, "g"), "no HyperNode of tier <= 1"));
  sch_result_free(r);
  fx_free(f);
}

/* A Job of 2 x 4 with sub-groups (subGroupSize 4, hard tier 1 each) under a hard tier-2 job:
 * each sub-group's 4 pods share one leaf, both under one spine. */
static void test_subgroups_each_in_one_leaf(void **state) {
  (void)state;
  fx *f = fabric();
  Kiln__PodGroup *pg = fx_pg(f, "sg", "default", 8, "Inqueue");
  fx_pg_topology(pg, "hard", 2);
  Kiln__SubGroupPolicy *p = fx_alloc(sizeof(*p));
  kiln__sub_group_policy__init(p);
  p->name = fx_str("worker");
  p->has_sub_group_size = 1;
  p->sub_group_size = 4;
  p->has_min_sub_groups = 1;
  p->min_sub_groups = 2;
  p->match_label_keys = fx_alloc(sizeof(char *));
  p->match_label_keys[0] = fx_str("volcano.sh/partition-id");
  p->n_match_label_keys = 1;
  p->network_topology = fx_alloc(sizeof(*p->network_topology));
  kiln__network_topology__init(p->network_topology);
  p->network_topology->mode = fx_str("hard");
  p->network_topology->has_highest_tier_allowed = 1;
  p->network_topology->highest_tier_allowed = 1;
  FX_APPEND(pg->spec->sub_group_policy, pg->spec->n_sub_group_policy, p);
  /* Leaves 0 and 1 have room for 6 pods each: two sub-groups of 4 need both leaves. */
  for (int i = 0; i < 2; i++) {
    char pod[16], node[16];
    snprintf(pod, sizeof(pod), "o-%d", i);
    snprintf(node, sizeof(node), "n0-%d", i);
    fx_pod(f, pod, NULL, 1000, GI, node);
    snprintf(pod, sizeof(pod), "p-%d", i);
    snprintf(node, sizeof(node), "n1-%d", i);
    fx_pod(f, pod, NULL, 1000, GI, node);
  }
  for (int i = 0; i < 8; i++) {
    char pod[16], part[4];
    snprintf(pod, sizeof(pod), "sg-%d", i);
    snprintf(part, sizeof(part), "%d", i / 4);
    fx_pod_label(fx_pod(f, pod, "sg", 1000, GI, NULL), "volcano.sh/partition-id", part);
  }
  fx_open(f, conf_yaml);
  assert_int_equal(fx_job(f, "sg")->nsubjobs, 2);
  sch_result *r = fx_run(f);
  int per[4];
  assert_int_equal(leaves_of(f, r, "sg", per), 8);
  for (int part = 0; part < 2; part++) {
    int leaf = -1;
    for (size_t i = 0; i < r->nbinds; i++) {
      const sch_task *t = &f->snap->tasks[r->binds[i].task];
      if (strncmp(t->pod->name, "sg-", 3) != 0 || (t->pod->name[3] - '0') / 4 != part)
        continue;
      int l = f->snap->nodes[r->binds[i].node].name[1] - '0';
      if (leaf < 0)
        leaf = l;
      assert_int_equal(l, leaf);
    }
  }
  assert_true(per[0] + per[1] == 8 || per[2] + per[3] == 8);
  sch_result_free(r);
  fx_free(f);
}

/* Without the plugin there is no gradient: the job goes to the cluster top, as in Volcano. */
static void test_without_plugin_no_gradient(void **state) {
  (void)state;
  fx *f = fabric();
  fx_pg_topology(gang(f, "g12", 12), "hard", 1);
  fx_open(f, "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n");
  sch_result *r = fx_run(f);
  int per[4];
  assert_int_equal(leaves_of(f, r, "g12", per), 12);
  sch_result_free(r);
  fx_free(f);
}

/* A HyperNode with two parents: the topology is not ready and the gang says so. */
static void test_not_ready_topology_waits(void **state) {
  (void)state;
  fx *f = fabric();
  fx_hn_exact(f->msg->hyper_nodes[5], "HyperNode", "leaf-0"); /* spine-1 takes leaf-0 too */
  fx_pg_topology(gang(f, "g8", 8), "hard", 1);
  fx_open(f, conf_yaml);
  sch_result *r = fx_run(f);
  int per[4];
  assert_int_equal(leaves_of(f, r, "g8", per), 0);
  assert_non_null(strstr(fx_pg_message(f, r, "g8"), "hyperNodes are not ready for scheduling"));
  sch_result_free(r);
  fx_free(f);
}

static const char nta_only_yaml[] = "actions: \"allocate\"\n"
                                    "tiers:\n"
                                    "- plugins:\n"
                                    "  - name: gang\n"
                                    "  - name: predicates\n"
                                    "  - name: network-topology-aware\n";

/* A pod without a topology packs HyperNodes (hypernode.binpack.normal-pod.enable): half of
 * leaf-1 is taken, so the pod goes there rather than to leaf-0, first by name. */
static void test_normal_pod_packs_hypernodes(void **state) {
  (void)state;
  fx *f = fabric();
  for (int i = 0; i < 4; i++) {
    char pod[16], node[16];
    snprintf(pod, sizeof(pod), "o-%d", i);
    snprintf(node, sizeof(node), "n1-%d", i);
    fx_pod(f, pod, NULL, 1000, GI, node);
  }
  gang(f, "p", 1);
  fx_open(f, nta_only_yaml);
  sch_result *r = fx_run(f);
  int per[4];
  assert_int_equal(leaves_of(f, r, "p", per), 1);
  assert_int_equal(per[1], 1);
  sch_result_free(r);
  fx_free(f);
}

/* A HyperNode tier of two billion (a user's number) neither hangs the normal-pod scoring,
 * which weighs every tier between the lowest and the highest, nor overflows the top's tier. */
static void test_huge_tier(void **state) {
  (void)state;
  fx *f = fabric();
  fx_hn_exact(fx_hypernode(f, "far", INT32_MAX, NULL), "HyperNode", "spine-0");
  gang(f, "p", 1);
  fx_open(f, nta_only_yaml);
  assert_int_equal(f->snap->hntree->v[f->snap->hntree->top].tier, INT32_MAX);
  sch_result *r = fx_run(f);
  int per[4];
  assert_int_equal(leaves_of(f, r, "p", per), 1);
  sch_result_free(r);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hard_tier1_gang_of_8_one_leaf),
      cmocka_unit_test(test_hard_tier1_gang_of_12_waits_and_says_why),
      cmocka_unit_test(test_hard_tier2_one_spine),
      cmocka_unit_test(test_soft_spreads_only_when_no_leaf_fits),
      cmocka_unit_test(test_later_members_go_back),
      cmocka_unit_test(test_hard_member_never_leaves_its_leaf),
      cmocka_unit_test(test_subgroups_each_in_one_leaf),
      cmocka_unit_test(test_without_plugin_no_gradient),
      cmocka_unit_test(test_not_ready_topology_waits),
      cmocka_unit_test(test_normal_pod_packs_hypernodes),
      cmocka_unit_test(test_huge_tier),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
