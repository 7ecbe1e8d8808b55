/* The HyperNode tree of a snapshot (sch_hypernode.c, Volcano's HyperNodesInfo): members by
 * exactMatch, regexMatch and labelMatch resolved to nodes, nested HyperNodes, the nodes under
 * each, tiers and tier names, the cluster top, lowest common ancestors, and the topologies
 * Volcano refuses to build (a HyperNode with two parents, a cycle). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "sch_hypernode.h"
#include "test_sch_plugins_fixture.h"

/* n0..n7; n4 and n5 labelled rack=c; n6, n7 in no HyperNode. leaf-a: n0, n1 by name; leaf-b:
 * ^n[23]$; leaf-c: rack=c; spine-1: leaf-a, leaf-b; spine-2: leaf-c. */
static fx *two_spines(void) {
  fx *f = fx_new();
  for (int i = 0; i < 8; i++) {
    char name[8];
    snprintf(name, sizeof(name), "n%d", i);
    Kiln__Node *n = fx_node(f, name, 8000, 32 * GI, 110);
    if (i == 4 || i == 5)
      fx_node_label(n, "rack", "c");
  }
  Kiln__HyperNode *s1 = fx_hypernode(f, "spine-1", 2, "spine");
  fx_hn_exact(s1, "HyperNode", "leaf-a");
  fx_hn_exact(s1, "HyperNode", "leaf-b");
  fx_hn_exact(fx_hypernode(f, "spine-2", 2, "spine"), "HyperNode", "leaf-c");
  Kiln__HyperNode *a = fx_hypernode(f, "leaf-a", 1, "leaf");
  fx_hn_exact(a, "Node", "n0");
  fx_hn_exact(a, "Node", "n1");
  fx_hn_exact(a, "Node", "no-such-node");
  fx_hn_regex(fx_hypernode(f, "leaf-b", 1, "leaf"), "^n[23]$");
  fx_hn_label(fx_hypernode(f, "leaf-c", 1, "leaf"), "rack", "c");
  return f;
}

static const sch_hypernode *vertex(const sch_hntree *t, const char *name) {
  int32_t i = sch_hntree_find(t, name);
  assert_true(i >= 0);
  return &t->v[i];
}

/* The node names under a vertex, space separated. */
static const char *nodes_of(const fx *f, const char *name) {
  static char buf[256];
  const sch_hypernode *v = vertex(f->snap->hntree, name);
  buf[0] = 0;
  for (int32_t i = 0; i < v->nnodes; i++) {
    strncat(buf, i ? " " : "", sizeof(buf) - strlen(buf) - 1);
    strncat(buf, f->snap->nodes[v->nodes[i]].name, sizeof(buf) - strlen(buf) - 1);
  }
  return buf;
}

static void test_members_resolve_to_nodes(void **state) {
  (void)state;
  fx *f = two_spines();
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  const sch_hntree *t = f->snap->hntree;
  assert_true(t->ready);
  assert_string_equal(nodes_of(f, "leaf-a"), "n0 n1");
  assert_string_equal(nodes_of(f, "leaf-b"), "n2 n3");
  assert_string_equal(nodes_of(f, "leaf-c"), "n4 n5");
  assert_string_equal(nodes_of(f, "spine-1"), "n0 n1 n2 n3");
  assert_string_equal(nodes_of(f, "spine-2"), "n4 n5");
  assert_string_equal(nodes_of(f, SCH_HN_CLUSTER_TOP), "n0 n1 n2 n3 n4 n5 n6 n7");
  /* Tiers 1 and 2; the top one above. */
  assert_int_equal(t->ntiers, 2);
  assert_int_equal(t->tiers[0], 1);
  assert_int_equal(t->tiers[1], 2);
  assert_int_equal(vertex(t, SCH_HN_CLUSTER_TOP)->tier, 3);
  assert_int_equal(sch_hntree_tier_of_name(t, "spine"), 2);
  assert_int_equal(sch_hntree_tier_of_name(t, "leaf"), 1);
  assert_int_equal(sch_hntree_tier_of_name(t, "core"), -1);
  fx_free(f);
}

static void test_parents_lca_and_lowest_hypernode(void **state) {
  (void)state;
  fx *f = two_spines();
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  const sch_hntree *t = f->snap->hntree;
  int32_t a = sch_hntree_find(t, "leaf-a"), b = sch_hntree_find(t, "leaf-b");
  int32_t c = sch_hntree_find(t, "leaf-c"), s1 = sch_hntree_find(t, "spine-1");
  assert_int_equal(t->v[a].parent, s1);
  assert_int_equal(sch_hntree_lca(t, a, b), s1);
  assert_int_equal(sch_hntree_lca(t, a, c), t->top);
  assert_int_equal(sch_hntree_lca(t, -1, c), c);
  assert_int_equal(sch_hntree_lca(t, a, a), a);
  /* Each node's lowest HyperNode; a node in none has the top. */
  assert_int_equal(t->node_hn[sch_snapshot_node(f->snap, "n2")], b);
  assert_int_equal(t->node_hn[sch_snapshot_node(f->snap, "n5")], c);
  assert_int_equal(t->node_hn[sch_snapshot_node(f->snap, "n7")], t->top);
  assert_true(sch_hntree_has_node(t, s1, sch_snapshot_node(f->snap, "n3")));
  assert_false(sch_hntree_has_node(t, s1, sch_snapshot_node(f->snap, "n4")));
  /* The highest ancestor within a tier: leaf-a itself at tier 1, spine-1 at 2, none at 0. */
  assert_int_equal(sch_hntree_highest_allowed(t, a, 1), a);
  assert_int_equal(sch_hntree_highest_allowed(t, a, 2), s1);
  assert_int_equal(sch_hntree_highest_allowed(t, a, 0), -1);
  fx_free(f);
}

/* No HyperNode: the cluster top alone, tier 1, with every node. */
static void test_no_hypernodes(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n0", 1000, GI, 10);
  fx_node(f, "n1", 1000, GI, 10);
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  const sch_hntree *t = f->snap->hntree;
  assert_true(t->ready);
  assert_int_equal(t->n, 1);
  assert_int_equal(t->ntiers, 0);
  assert_int_equal(t->v[t->top].tier, 1);
  assert_int_equal(t->v[t->top].nnodes, 2);
  assert_int_equal(t->node_hn[1], t->top);
  fx_free(f);
}

/* An empty labelMatch selects nothing (Volcano GetMembers), and an invalid pattern nothing. */
static void test_empty_label_match_and_bad_regex(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n0", 1000, GI, 10);
  Kiln__HyperNode *h = fx_hypernode(f, "h", 1, NULL);
  Kiln__HyperNodeSelector *s = fx_hn_member(h, "Node");
  s->label_match = fx_alloc(sizeof(*s->label_match));
  kiln__label_selector__init(s->label_match);
  fx_hn_regex(h, "n(0");
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  assert_int_equal(vertex(f->snap->hntree, "h")->nnodes, 0);
  fx_free(f);
}

/* A HyperNode that two others name as a member: not ready, in Volcano's words. */
static void test_two_parents_not_ready(void **state) {
  (void)state;
  fx *f = two_spines();
  fx_hn_exact(f->msg->hyper_nodes[1], "HyperNode", "leaf-a"); /* spine-2 */
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  const sch_hntree *t = f->snap->hntree;
  assert_false(t->ready);
  assert_string_equal(t->error, "HyperNode leaf-a already has a parent spine-1, and cannot set "
                                "another parent spine-2");
  /* Everything hangs under the top, with its own nodes only. */
  assert_int_equal(vertex(t, "leaf-a")->parent, t->top);
  assert_int_equal(vertex(t, "spine-1")->nnodes, 0);
  fx_free(f);
}

static void test_cycle_not_ready(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n0", 1000, GI, 10);
  fx_hn_exact(fx_hypernode(f, "x", 2, NULL), "HyperNode", "y");
  fx_hn_exact(fx_hypernode(f, "y", 1, NULL), "HyperNode", "x");
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  assert_false(f->snap->hntree->ready);
  assert_non_null(strstr(f->snap->hntree->error, "cyclic dependency detected"));
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_members_resolve_to_nodes),
      cmocka_unit_test(test_parents_lca_and_lowest_hypernode),
      cmocka_unit_test(test_no_hypernodes),
      cmocka_unit_test(test_empty_label_match_and_bad_regex),
      cmocka_unit_test(test_two_parents_not_ready),
      cmocka_unit_test(test_cycle_not_ready),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
