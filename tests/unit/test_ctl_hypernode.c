/* The hyperNode-controller's core (Volcano's hypernode controller and label discoverer): the
 * configuration, labels -> HyperNode tree, a relabel -> updates, a leaf emptied -> delete. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_hypernode.h"
#include "kc_error.h"

#define TIER1 "example.com/leaf"
#define TIER2 "example.com/spine"

static const char conf_text[] = "networkTopologyDiscovery:\n"
                                "  - source: ufm\n"
                                "    enabled: true\n"
                                "    interval: 10m\n"
                                "  - source: roce\n"
                                "    enabled: false\n"
                                "  - source: label\n"
                                "    enabled: true\n"
                                "    config:\n"
                                "      networkTopologyTypes:\n"
                                "        Topo_A:\n"
                                "          - nodeLabel: \"" TIER2 "\"\n"
                                "          - nodeLabel: \"" TIER1 "\"\n"
                                "          - nodeLabel: \"kubernetes.io/hostname\"\n"
                                "        aVeryLongTopologyTypeName:\n"
                                "          - nodeLabel: a\n"
                                "          - nodeLabel: kubernetes.io/hostname\n"
                                "        twice:\n"
                                "          - nodeLabel: a\n"
                                "          - nodeLabel: a\n";

static ctl_hn_conf *conf(void) {
  ctl_hn_conf *c = NULL;
  char err[128];
  assert_int_equal(ctl_hn_conf_parse(conf_text, strlen(conf_text), &c, err, sizeof(err)), 0);
  return c;
}

static void test_conf(void **state) {
  ctl_hn_conf *c = conf();
  assert_true(c->label);
  assert_int_equal(c->ntypes, 1);
  assert_string_equal(c->types[0].name, "Topo_A");
  assert_int_equal(c->types[0].nkeys, 2);
  assert_string_equal(c->types[0].keys[0], TIER1); /* tier 1 first, the hostname dropped */
  assert_string_equal(c->types[0].keys[1], TIER2);
  assert_int_equal(c->nothers, 1);
  assert_string_equal(c->others[0], "ufm");
  assert_int_equal(c->nwarnings, 2);
  assert_non_null(strstr(c->warnings[0], "exceeds 20"));
  assert_non_null(strstr(c->warnings[1], "duplicate labels"));
  ctl_hn_conf_free(c);

  char err[128] = "";
  const char bad[] = "networkTopologyDiscovery: [unclosed\n";
  assert_int_equal(ctl_hn_conf_parse(bad, strlen(bad), &c, err, sizeof(err)), KC_EINVAL);
  assert_null(c);
  assert_non_null(strstr(err, "failed to parse config"));
  const char scalar[] = "networkTopologyDiscovery: label\n";
  assert_int_equal(ctl_hn_conf_parse(scalar, strlen(scalar), &c, err, sizeof(err)), KC_EINVAL);
  const char off[] = "networkTopologyDiscovery:\n- source: label\n  enabled: false\n";
  assert_int_equal(ctl_hn_conf_parse(off, strlen(off), &c, err, sizeof(err)), 0);
  assert_false(c->label);
  ctl_hn_conf_free(c);
  assert_int_equal(ctl_hn_conf_parse("", 0, &c, err, sizeof(err)), 0);
  assert_false(c->label);
  ctl_hn_conf_free(c);
}

static void test_clean(void **state) {
  char buf[32];
  ctl_hn_clean("Topo_A.b-2/x", buf, sizeof(buf));
  assert_string_equal(buf, "topo-a.b-2-x");
}

/* 32 nodes n00..n31: leaf l<i/8>, spine s<i/16>; the nodes of `bare` have no labels. */
static json_t *cluster(int moved, const char *moved_leaf, const char *drop_leaf) {
  json_t *nodes = json_array();
  for (int i = 0; i < 32; i++) {
    char name[8], leaf[8], spine[8];
    snprintf(name, sizeof(name), "n%02d", i);
    snprintf(leaf, sizeof(leaf), "l%d", i / 8);
    snprintf(spine, sizeof(spine), "s%d", i / 16);
    const char *lv = i == moved ? moved_leaf : leaf;
    if (drop_leaf && strcmp(lv, drop_leaf) == 0)
      json_array_append_new(
          nodes, json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", name, "labels", TIER2, spine));
    else
      json_array_append_new(nodes,
                            json_pack("{s:{s:s, s:{s:s, s:s, s:s}}}", "metadata", "name", name,
                                      "labels", TIER1, lv, TIER2,
                                      i == moved && strcmp(moved_leaf, "l2") == 0 ? "s1" : spine,
                                      "other", "x"));
  }
  return nodes;
}

static const json_t *by_label(const json_t *hns, const char *key, const char *value) {
  size_t i;
  const json_t *hn;
  json_array_foreach(hns, i, hn) {
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(hn, "metadata"), "labels"), key));
    if (v && strcmp(v, value) == 0)
      return hn;
  }
  return NULL;
}

static const char *name(const json_t *hn) {
  return json_string_value(json_object_get(json_object_get(hn, "metadata"), "name"));
}

static const json_t *members(const json_t *hn) {
  return json_object_get(json_object_get(hn, "spec"), "members");
}

static const char *member(const json_t *hn, size_t i) {
  return json_string_value(json_object_get(
      json_object_get(json_object_get(json_array_get(members(hn), i), "selector"), "exactMatch"),
      "name"));
}

static void test_tree(void **state) {
  ctl_hn_conf *c = conf();
  json_t *nodes = cluster(-1, NULL, NULL), *none = json_array();
  json_t *hns = ctl_hn_discover(c, nodes, none);
  assert_non_null(hns);
  assert_int_equal(json_array_size(hns), 6);
  for (int l = 0; l < 4; l++) {
    char v[4];
    snprintf(v, sizeof(v), "l%d", l);
    const json_t *leaf = by_label(hns, TIER1, v);
    assert_non_null(leaf);
    assert_int_equal(json_array_size(members(leaf)), 8);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(members(leaf), 0), "type")), "Node");
    char first[8];
    snprintf(first, sizeof(first), "n%02d", l * 8);
    assert_string_equal(member(leaf, 0), first);
    assert_int_equal(strncmp(name(leaf), "hypernode-topo-a-tier1-", 23), 0);
    assert_int_equal(strlen(name(leaf)), 28);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(leaf, "metadata"), "labels"), CTL_HN_SOURCE_LABEL)),
        "label");
    int64_t count;
    assert_true(ctl_hn_count_stale(leaf, &count));
    assert_int_equal(count, 8);
  }
  /* Each spine has its two leaves as HyperNode members; tier 1 comes first in the list. */
  const json_t *s0 = by_label(hns, TIER2, "s0");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(s0, "spec"), "tier")), 2);
  assert_int_equal(json_array_size(members(s0)), 2);
  assert_string_equal(json_string_value(json_object_get(json_array_get(members(s0), 0), "type")),
                      "HyperNode");
  const char *l0 = name(by_label(hns, TIER1, "l0")), *l1 = name(by_label(hns, TIER1, "l1"));
  assert_true((strcmp(member(s0, 0), l0) == 0 && strcmp(member(s0, 1), l1) == 0) ||
              (strcmp(member(s0, 0), l1) == 0 && strcmp(member(s0, 1), l0) == 0));
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(json_array_get(hns, 5), "spec"), "tier")),
      2);
  /* Nothing exists yet: six creates. */
  ctl_hn_action *a;
  size_t n;
  assert_int_equal(ctl_hn_reconcile(hns, none, &a, &n), 0);
  assert_int_equal(n, 6);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(a[i].op, CTL_HN_CREATE);
  ctl_hn_actions_free(a, n);
  /* The same labels again, with those existing: the same names, nothing to write. */
  json_t *again = ctl_hn_discover(c, nodes, hns);
  assert_true(json_equal(again, hns));
  assert_int_equal(ctl_hn_reconcile(again, hns, &a, &n), 0);
  assert_int_equal(n, 0);
  ctl_hn_actions_free(a, n);
  json_decref(again);
  json_decref(hns);
  json_decref(nodes);
  json_decref(none);
  ctl_hn_conf_free(c);
}

static void test_relabel_moves_node(void **state) {
  ctl_hn_conf *c = conf();
  json_t *nodes = cluster(-1, NULL, NULL), *none = json_array();
  json_t *before = ctl_hn_discover(c, nodes, none);
  json_t *moved = cluster(0, "l2", NULL); /* n00 from l0 (spine s0) to l2 (spine s1) */
  json_t *after = ctl_hn_discover(c, moved, before);
  assert_int_equal(json_array_size(after), 6);
  const json_t *l0 = by_label(after, TIER1, "l0"), *l2 = by_label(after, TIER1, "l2");
  assert_string_equal(name(l0), name(by_label(before, TIER1, "l0")));
  assert_int_equal(json_array_size(members(l0)), 7);
  assert_int_equal(json_array_size(members(l2)), 9);
  assert_string_equal(member(l2, 0), "n00");
  ctl_hn_action *a;
  size_t n;
  assert_int_equal(ctl_hn_reconcile(after, before, &a, &n), 0);
  assert_int_equal(n, 2); /* the two leaves; the spines keep their members */
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(a[i].op, CTL_HN_UPDATE);
    const json_t *spec = json_object_get(a[i].obj, "spec");
    assert_int_equal(json_integer_value(json_object_get(spec, "tier")), 1);
    assert_true(json_array_size(json_object_get(spec, "members")) == 7 ||
                json_array_size(json_object_get(spec, "members")) == 9);
    assert_non_null(json_object_get(json_object_get(a[i].obj, "metadata"), "labels"));
  }
  ctl_hn_actions_free(a, n);
  json_decref(after);
  json_decref(moved);
  json_decref(before);
  json_decref(nodes);
  json_decref(none);
  ctl_hn_conf_free(c);
}

static void test_leaf_emptied_deleted(void **state) {
  ctl_hn_conf *c = conf();
  json_t *nodes = cluster(-1, NULL, NULL), *none = json_array();
  json_t *before = ctl_hn_discover(c, nodes, none);
  /* A HyperNode someone made by hand (no source label) is never touched. */
  json_t *existing = json_deep_copy(before);
  json_array_append_new(
      existing, json_pack("{s:{s:s}, s:{s:i}}", "metadata", "name", "manual", "spec", "tier", 3));
  json_t *dropped = cluster(-1, NULL, "l3"); /* n24..n31 lose their leaf label */
  json_t *after = ctl_hn_discover(c, dropped, existing);
  assert_int_equal(json_array_size(after), 5);
  assert_null(by_label(after, TIER1, "l3"));
  assert_int_equal(json_array_size(members(by_label(after, TIER2, "s1"))), 1);
  ctl_hn_action *a;
  size_t n;
  assert_int_equal(ctl_hn_reconcile(after, existing, &a, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(a[0].op, CTL_HN_UPDATE); /* s1 loses l3: updates first, deletes last */
  assert_string_equal(a[0].name, name(by_label(before, TIER2, "s1")));
  assert_int_equal(a[1].op, CTL_HN_DELETE);
  assert_string_equal(a[1].name, name(by_label(before, TIER1, "l3")));
  assert_null(a[1].obj);
  ctl_hn_actions_free(a, n);
  /* With every label gone, every label-made HyperNode goes, the spines (tier 2) first. */
  json_t *empty = ctl_hn_discover(c, none, existing);
  assert_int_equal(json_array_size(empty), 0);
  assert_int_equal(ctl_hn_reconcile(empty, existing, &a, &n), 0);
  assert_int_equal(n, 6);
  const char *s0 = name(by_label(before, TIER2, "s0")), *s1 = name(by_label(before, TIER2, "s1"));
  assert_true((strcmp(a[0].name, s0) == 0 && strcmp(a[1].name, s1) == 0) ||
              (strcmp(a[0].name, s1) == 0 && strcmp(a[1].name, s0) == 0));
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(a[i].op, CTL_HN_DELETE);
    assert_string_not_equal(a[i].name, "manual");
  }
  ctl_hn_actions_free(a, n);
  json_decref(empty);
  json_decref(after);
  json_decref(dropped);
  json_decref(existing);
  json_decref(before);
  json_decref(nodes);
  json_decref(none);
  ctl_hn_conf_free(c);
}

/* A HyperNode Volcano made (a random suffix) for the same label and value is kept, by name. */
static void test_existing_name_reused(void **state) {
  ctl_hn_conf *c = conf();
  json_t *nodes = cluster(-1, NULL, NULL);
  json_t *existing = json_pack("[{s:{s:s, s:{s:s, s:s}}, s:{s:i}}]", "metadata", "name",
                               "hypernode-topo-a-tier1-zzzzz", "labels", CTL_HN_SOURCE_LABEL,
                               "label", TIER1, "l1", "spec", "tier", 1);
  json_t *hns = ctl_hn_discover(c, nodes, existing);
  assert_string_equal(name(by_label(hns, TIER1, "l1")), "hypernode-topo-a-tier1-zzzzz");
  json_decref(hns);
  json_decref(existing);
  json_decref(nodes);
  ctl_hn_conf_free(c);
}

static void test_node_changed(void **state) {
  ctl_hn_conf *c = conf();
  json_t *a = json_pack("{s:{s:s, s:{s:s, s:s}}}", "metadata", "name", "n", "labels", TIER1, "l0",
                        "other", "1");
  json_t *b = json_pack("{s:{s:s, s:{s:s, s:s}}}", "metadata", "name", "n", "labels", TIER1, "l0",
                        "other", "2");
  json_t *d = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", "n", "labels", TIER1, "l1");
  json_t *plain = json_pack("{s:{s:s}}", "metadata", "name", "p");
  assert_false(ctl_hn_node_changed(c, a, b)); /* another label */
  assert_true(ctl_hn_node_changed(c, a, d));
  assert_true(ctl_hn_node_changed(c, NULL, a));
  assert_false(ctl_hn_node_changed(c, NULL, plain));
  assert_false(ctl_hn_node_changed(c, plain, NULL));
  json_decref(a);
  json_decref(b);
  json_decref(d);
  json_decref(plain);
  ctl_hn_conf_free(c);
}

static void test_count(void **state) {
  int64_t count;
  json_t *hn = json_pack("{s:{s:[{},{}]}, s:{s:i}}", "spec", "members", "status", "nodeCount", 2);
  assert_false(ctl_hn_count_stale(hn, &count));
  assert_int_equal(count, 2);
  json_object_set_new(json_object_get(hn, "status"), "nodeCount", json_integer(3));
  assert_true(ctl_hn_count_stale(hn, &count));
  json_decref(hn);
  hn = json_pack("{s:{}}", "spec");
  assert_false(ctl_hn_count_stale(hn, &count)); /* 0 members, nodeCount absent (omitempty) */
  json_decref(hn);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conf),
      cmocka_unit_test(test_clean),
      cmocka_unit_test(test_tree),
      cmocka_unit_test(test_relabel_moves_node),
      cmocka_unit_test(test_leaf_emptied_deleted),
      cmocka_unit_test(test_existing_name_reused),
      cmocka_unit_test(test_node_changed),
      cmocka_unit_test(test_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
