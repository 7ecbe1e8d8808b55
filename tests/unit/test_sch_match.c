/* sch_match: node selection, taints and tolerations, host ports and the score formulas against
 * tables drawn from kube-scheduler's behaviour (nodeaffinity, tainttoleration, nodeports,
 * nodeunschedulable, noderesources). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sch_match.h"

/* ---- fixtures built on the stack ---- */

#define MAXL 4

struct fnode {
  Kiln__Node node;
  Kiln__Node__LabelsEntry labels[MAXL];
  Kiln__Node__LabelsEntry *lp[MAXL];
  Kiln__Taint taints[MAXL];
  Kiln__Taint *tp[MAXL];
};

/* labels: "k=v" strings, NULL-terminated. */
static void fnode_init(struct fnode *f, const char *name, const char *const *labels) {
  memset(f, 0, sizeof(*f));
  kiln__node__init(&f->node);
  f->node.name = (char *)name;
  for (size_t i = 0; labels && labels[i] && i < MAXL; i++) {
    kiln__node__labels_entry__init(&f->labels[i]);
    const char *eq = strchr(labels[i], '=');
    /* key and value point into a per-node copy so the fixture owns them */
    f->labels[i].key = strndup(labels[i], (size_t)(eq - labels[i]));
    f->labels[i].value = strdup(eq + 1);
    f->lp[i] = &f->labels[i];
    f->node.n_labels++;
  }
  f->node.labels = f->lp;
}

static void fnode_add_taint(struct fnode *f, const char *key, const char *value,
                            Kiln__TaintEffect effect) {
  size_t i = f->node.n_taints++;
  kiln__taint__init(&f->taints[i]);
  f->taints[i].key = (char *)key;
  f->taints[i].value = (char *)value;
  f->taints[i].effect = effect;
  f->tp[i] = &f->taints[i];
  f->node.taints = f->tp;
}

static void fnode_close(struct fnode *f) {
  for (size_t i = 0; i < f->node.n_labels; i++) {
    free(f->labels[i].key);
    free(f->labels[i].value);
  }
}

static Kiln__NodeSelectorRequirement mkreq(const char *key, const char *op, char **values,
                                           size_t n) {
  Kiln__NodeSelectorRequirement r = KILN__NODE_SELECTOR_REQUIREMENT__INIT;
  r.key = (char *)key;
  r.operator_ = (char *)op;
  r.values = values;
  r.n_values = n;
  return r;
}

/* ---- requirements ---- */

struct req_case {
  const char *key, *op;
  const char *values[3];
  size_t nvalues;
  bool want;
};

static void test_requirement_operators(void **state) {
  (void)state;
  const char *labels[] = {"zone=a", "gpu=true", "cores=16", "bad=x1", NULL};
  struct fnode f;
  fnode_init(&f, "n1", labels);
  static const struct req_case cases[] = {
      {"zone", "In", {"a", "b"}, 2, true},
      {"zone", "In", {"b"}, 1, false},
      {"missing", "In", {"a"}, 1, false},
      {"zone", "In", {0}, 0, false}, /* In needs values */
      {"zone", "NotIn", {"b"}, 1, true},
      {"zone", "NotIn", {"a"}, 1, false},
      {"missing", "NotIn", {"a"}, 1, true}, /* absent label satisfies NotIn */
      {"gpu", "Exists", {0}, 0, true},
      {"missing", "Exists", {0}, 0, false},
      {"gpu", "Exists", {"true"}, 1, false}, /* Exists takes no values */
      {"missing", "DoesNotExist", {0}, 0, true},
      {"gpu", "DoesNotExist", {0}, 0, false},
      {"cores", "Gt", {"8"}, 1, true},
      {"cores", "Gt", {"16"}, 1, false},
      {"cores", "Lt", {"32"}, 1, true},
      {"cores", "Lt", {"-1"}, 1, false},
      {"cores", "Gt", {"+15"}, 1, true},
      {"cores", "Gt", {"8", "9"}, 2, false}, /* exactly one value */
      {"cores", "Gt", {"eight"}, 1, false},
      {"bad", "Gt", {"0"}, 1, false}, /* label not an integer */
      {"missing", "Lt", {"100"}, 1, false},
      {"zone", "Equals", {"a"}, 1, false}, /* unknown operator */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    Kiln__NodeSelectorRequirement r =
        mkreq(cases[i].key, cases[i].op, (char **)cases[i].values, cases[i].nvalues);
    bool got = sch_match_requirement(&r, &f.node, false);
    if (got != cases[i].want)
      fail_msg("case %zu (%s %s): got %d", i, cases[i].key, cases[i].op, got);
  }
  fnode_close(&f);
}

static void test_match_fields(void **state) {
  (void)state;
  struct fnode f;
  fnode_init(&f, "node-7", NULL);
  char *v1[] = {"node-7"};
  char *v2[] = {"node-8"};
  char *v3[] = {"node-7", "node-8"};
  Kiln__NodeSelectorRequirement r = mkreq("metadata.name", "In", v1, 1);
  assert_true(sch_match_requirement(&r, &f.node, true));
  r = mkreq("metadata.name", "In", v2, 1);
  assert_false(sch_match_requirement(&r, &f.node, true));
  r = mkreq("metadata.name", "NotIn", v2, 1);
  assert_true(sch_match_requirement(&r, &f.node, true));
  r = mkreq("metadata.name", "In", v3, 2); /* field selectors take exactly one value */
  assert_false(sch_match_requirement(&r, &f.node, true));
  r = mkreq("metadata.name", "Exists", NULL, 0);
  assert_false(sch_match_requirement(&r, &f.node, true));
  r = mkreq("metadata.uid", "NotIn", v1, 1); /* unknown field reads "" */
  assert_true(sch_match_requirement(&r, &f.node, true));
  fnode_close(&f);
}

/* ---- terms, nodeSelector, required and preferred affinity ---- */

/* matchFields and preferred terms, on the nodes and terms of test_selector_and_affinity
 * (t1: zone In [b]; t2: zone In [a] AND disk Exists). */
static void check_fields_and_preferred(Kiln__Pod *pod, struct fnode *a, struct fnode *b,
                                       Kiln__NodeSelectorTerm *t1, Kiln__NodeSelectorTerm *t2) {
  /* matchFields ANDed with matchExpressions in one term. */
  char *vname[] = {"a"};
  Kiln__NodeSelectorRequirement fr = mkreq("metadata.name", "In", vname, 1);
  Kiln__NodeSelectorRequirement *fre[] = {&fr};
  Kiln__NodeSelectorTerm tf = KILN__NODE_SELECTOR_TERM__INIT;
  tf.match_fields = fre;
  tf.n_match_fields = 1;
  tf.match_expressions = t1->match_expressions; /* zone In [b] */
  tf.n_match_expressions = 1;
  Kiln__NodeSelectorTerm *fterms[] = {&tf};
  pod->required_node_terms = fterms;
  assert_false(sch_match_node_selector(pod, &a->node)); /* name ok, zone not */
  assert_false(sch_match_node_selector(pod, &b->node)); /* zone ok, name not */
  tf.n_match_expressions = 0;
  assert_true(sch_match_node_selector(pod, &a->node));
  pod->n_required_node_terms = 0;

  /* Preferred terms: weights of matching terms add up; weight 0 is ignored. */
  Kiln__PreferredSchedulingTerm p1 = KILN__PREFERRED_SCHEDULING_TERM__INIT;
  Kiln__PreferredSchedulingTerm p2 = KILN__PREFERRED_SCHEDULING_TERM__INIT;
  Kiln__PreferredSchedulingTerm p3 = KILN__PREFERRED_SCHEDULING_TERM__INIT;
  p1.weight = 10;
  p1.preference = t2; /* zone a and disk */
  p2.weight = 3;
  p2.preference = t1; /* zone b */
  p3.weight = 0;
  p3.preference = t2;
  Kiln__PreferredSchedulingTerm *pref[] = {&p1, &p2, &p3};
  pod->preferred_node_terms = pref;
  pod->n_preferred_node_terms = 3;
  assert_int_equal(sch_preferred_affinity_score(pod, &a->node), 10);
  assert_int_equal(sch_preferred_affinity_score(pod, &b->node), 3);
  p2.preference = t2;
  assert_int_equal(sch_preferred_affinity_score(pod, &a->node), 13);
  assert_int_equal(sch_preferred_affinity_score(pod, &b->node), 0);
}

static void test_selector_and_affinity(void **state) {
  (void)state;
  const char *la[] = {"zone=a", "disk=ssd", NULL};
  const char *lb[] = {"zone=b", NULL};
  struct fnode a, b;
  fnode_init(&a, "a", la);
  fnode_init(&b, "b", lb);

  Kiln__Pod pod = KILN__POD__INIT;
  assert_true(sch_match_node_selector(&pod, &a.node)); /* no constraint */

  Kiln__Pod__NodeSelectorEntry sel = KILN__POD__NODE_SELECTOR_ENTRY__INIT;
  sel.key = "disk";
  sel.value = "ssd";
  Kiln__Pod__NodeSelectorEntry *selp[] = {&sel};
  pod.node_selector = selp;
  pod.n_node_selector = 1;
  assert_true(sch_match_node_selector(&pod, &a.node));
  assert_false(sch_match_node_selector(&pod, &b.node));
  pod.n_node_selector = 0;

  /* term1: zone In [b]; term2: zone In [a] AND disk Exists. ORed. */
  char *vb[] = {"b"};
  char *va[] = {"a"};
  Kiln__NodeSelectorRequirement r1 = mkreq("zone", "In", vb, 1);
  Kiln__NodeSelectorRequirement r2 = mkreq("zone", "In", va, 1);
  Kiln__NodeSelectorRequirement r3 = mkreq("disk", "DoesNotExist", NULL, 0);
  Kiln__NodeSelectorRequirement *t1e[] = {&r1};
  Kiln__NodeSelectorRequirement *t2e[] = {&r2, &r3};
  Kiln__NodeSelectorTerm t1 = KILN__NODE_SELECTOR_TERM__INIT;
  Kiln__NodeSelectorTerm t2 = KILN__NODE_SELECTOR_TERM__INIT;
  t1.match_expressions = t1e;
  t1.n_match_expressions = 1;
  t2.match_expressions = t2e;
  t2.n_match_expressions = 2;
  Kiln__NodeSelectorTerm *terms[] = {&t1, &t2};
  pod.required_node_terms = terms;
  pod.n_required_node_terms = 2;
  assert_true(sch_match_node_selector(&pod, &b.node));  /* term 1 */
  assert_false(sch_match_node_selector(&pod, &a.node)); /* term 2 fails on disk */
  r3.operator_ = "Exists";
  assert_true(sch_match_node_selector(&pod, &a.node)); /* term 2 now holds */

  /* An empty term matches nothing, even alone. */
  Kiln__NodeSelectorTerm empty = KILN__NODE_SELECTOR_TERM__INIT;
  Kiln__NodeSelectorTerm *only_empty[] = {&empty};
  pod.required_node_terms = only_empty;
  pod.n_required_node_terms = 1;
  assert_false(sch_match_node_selector(&pod, &a.node));

  check_fields_and_preferred(&pod, &a, &b, &t1, &t2);

  fnode_close(&a);
  fnode_close(&b);
}

/* ---- taints and tolerations ---- */

struct tol_case {
  const char *tkey;
  Kiln__TolerationOperator op;
  const char *tvalue;
  Kiln__TaintEffect teffect;
  const char *key, *value;
  Kiln__TaintEffect effect;
  bool want;
};

#define EQ     KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL
#define EXISTS KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS
#define ALL    KILN__TAINT_EFFECT__TAINT_EFFECT_ALL
#define NS     KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE
#define PNS    KILN__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE
#define NE     KILN__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE

static void test_toleration_table(void **state) {
  (void)state;
  static const struct tol_case cases[] = {
      {"gpu", EQ, "true", NS, "gpu", "true", NS, true},
      {"gpu", EQ, "false", NS, "gpu", "true", NS, false},
      {"gpu", EQ, "", NS, "gpu", "", NS, true},
      {"gpu", EXISTS, "", NS, "gpu", "anything", NS, true},
      {"gpu", EXISTS, "", NS, "other", "x", NS, false},
      {"", EXISTS, "", ALL, "any", "x", NE, true}, /* empty key + Exists: everything */
      {"", EXISTS, "", NS, "any", "x", NE, false}, /* ... of that effect only */
      {"", EQ, "x", ALL, "any", "x", NS, true},    /* empty key, Equal compares values */
      {"gpu", EQ, "true", ALL, "gpu", "true", PNS, true},
      {"gpu", EQ, "true", NE, "gpu", "true", NS, false},
      {"gpu", EQ, "true", NS, "gpu", "true", NE, false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    Kiln__Toleration tol = KILN__TOLERATION__INIT;
    tol.key = (char *)cases[i].tkey;
    tol.operator_ = cases[i].op;
    tol.value = (char *)cases[i].tvalue;
    tol.effect = cases[i].teffect;
    Kiln__Taint taint = KILN__TAINT__INIT;
    taint.key = (char *)cases[i].key;
    taint.value = (char *)cases[i].value;
    taint.effect = cases[i].effect;
    if (sch_toleration_tolerates(&tol, &taint) != cases[i].want)
      fail_msg("toleration case %zu", i);
  }
}

static void test_untolerated_taint_and_reason(void **state) {
  (void)state;
  struct fnode f;
  fnode_init(&f, "n", NULL);
  fnode_add_taint(&f, "soft", "1", PNS);
  fnode_add_taint(&f, "gpu", "true", NS);
  fnode_add_taint(&f, "maint", "", NE);
  Kiln__Pod pod = KILN__POD__INIT;
  const Kiln__Taint *t = sch_untolerated_taint(&pod, &f.node);
  assert_non_null(t);
  assert_string_equal(t->key, "gpu"); /* PreferNoSchedule skipped, first blocking one wins */
  char buf[SCH_REASON_MAX];
  sch_reason_taint(buf, sizeof(buf), t);
  assert_string_equal(buf, "node(s) had untolerated taint {gpu: true}");

  Kiln__Toleration tg = KILN__TOLERATION__INIT;
  tg.key = "gpu";
  tg.value = "true";
  Kiln__Toleration *tols[] = {&tg, NULL};
  pod.tolerations = tols;
  pod.n_tolerations = 1;
  t = sch_untolerated_taint(&pod, &f.node);
  assert_non_null(t);
  assert_string_equal(t->key, "maint");
  Kiln__Toleration tm = KILN__TOLERATION__INIT;
  tm.key = "maint";
  tm.operator_ = EXISTS;
  tm.effect = NE;
  tols[1] = &tm;
  pod.n_tolerations = 2;
  assert_null(sch_untolerated_taint(&pod, &f.node));

  /* PreferNoSchedule count: "soft" is not tolerated; a NoSchedule-only toleration of it
   * would not count either. */
  assert_int_equal(sch_intolerable_prefer_no_schedule(&pod, &f.node), 1);
  Kiln__Toleration ts = KILN__TOLERATION__INIT;
  ts.key = "soft";
  ts.operator_ = EXISTS;
  ts.effect = NS;
  Kiln__Toleration *tols2[] = {&ts};
  pod.tolerations = tols2;
  pod.n_tolerations = 1;
  assert_int_equal(sch_intolerable_prefer_no_schedule(&pod, &f.node), 1);
  ts.effect = PNS;
  assert_int_equal(sch_intolerable_prefer_no_schedule(&pod, &f.node), 0);
  ts.effect = ALL;
  assert_int_equal(sch_intolerable_prefer_no_schedule(&pod, &f.node), 0);

  sch_reason_insufficient(buf, sizeof(buf), "nvidia.com/gpu");
  assert_string_equal(buf, "Insufficient nvidia.com/gpu");
  fnode_close(&f);
}

static void test_unschedulable(void **state) {
  (void)state;
  struct fnode f;
  fnode_init(&f, "n", NULL);
  Kiln__Pod pod = KILN__POD__INIT;
  assert_true(sch_unschedulable_fits(&pod, &f.node));
  f.node.unschedulable = 1;
  assert_false(sch_unschedulable_fits(&pod, &f.node));
  Kiln__Toleration t = KILN__TOLERATION__INIT;
  t.key = SCH_TAINT_UNSCHEDULABLE;
  t.operator_ = EXISTS;
  t.effect = NE; /* wrong effect */
  Kiln__Toleration *tols[] = {&t};
  pod.tolerations = tols;
  pod.n_tolerations = 1;
  assert_false(sch_unschedulable_fits(&pod, &f.node));
  t.effect = NS;
  assert_true(sch_unschedulable_fits(&pod, &f.node));
  fnode_close(&f);
}

/* ---- host ports ---- */

static void test_host_ports(void **state) {
  (void)state;
  Kiln__HostPort u1 = KILN__HOST_PORT__INIT, u2 = KILN__HOST_PORT__INIT;
  u1.port = 8080; /* TCP on every address */
  u2.port = 53;
  u2.protocol = "UDP";
  u2.host_ip = "10.0.0.1";
  Kiln__HostPort *used[] = {&u1, &u2};
  struct {
    int32_t port;
    const char *proto, *ip;
    bool want;
  } cases[] = {
      {8080, "", "", true},
      {8080, "TCP", "10.0.0.9", true}, /* the used one listens on 0.0.0.0 */
      {8080, "UDP", "", false},
      {8081, "", "", false},
      {53, "UDP", "10.0.0.1", true},
      {53, "UDP", "10.0.0.2", false},
      {53, "UDP", "0.0.0.0", true}, /* wildcard overlaps the specific address */
      {53, "TCP", "", false},
      {0, "", "", false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    Kiln__HostPort w = KILN__HOST_PORT__INIT;
    w.port = cases[i].port;
    w.protocol = (char *)cases[i].proto;
    w.host_ip = (char *)cases[i].ip;
    if (sch_host_port_conflict(&w, used, 2) != cases[i].want)
      fail_msg("port case %zu", i);
  }
  Kiln__Pod pod = KILN__POD__INIT;
  assert_false(sch_host_ports_conflict(&pod, used, 2));
  Kiln__HostPort w1 = KILN__HOST_PORT__INIT, w2 = KILN__HOST_PORT__INIT;
  w1.port = 9000;
  w2.port = 8080;
  Kiln__HostPort *want[] = {&w1, &w2};
  pod.host_ports = want;
  pod.n_host_ports = 2;
  assert_true(sch_host_ports_conflict(&pod, used, 2));
  assert_false(sch_host_ports_conflict(&pod, used, 0));
}

/* ---- scores ---- */

static void test_resource_scores(void **state) {
  (void)state;
  /* kube-scheduler least_allocated_test: node 4000m/10000, pod+existing 3000m/5000 ->
   * cpu (1000*100/4000)=25, memory (5000*100/10000)=50, equal weights -> 37. */
  int64_t req[] = {3000, 5000}, alloc[] = {4000, 10000}, w[] = {50, 50}, w1[] = {1, 1};
  assert_int_equal(sch_least_requested_score(3000, 4000), 25);
  assert_int_equal(sch_allocated_score(req, alloc, w, 2, false), 37);
  /* most: cpu 75, memory 50 -> 62 */
  assert_int_equal(sch_allocated_score(req, alloc, w1, 2, true), 62);
  /* over capacity: least gives 0, most saturates at 100 */
  assert_int_equal(sch_least_requested_score(5000, 4000), 0);
  assert_int_equal(sch_most_requested_score(5000, 4000), 100);
  /* a resource the node lacks does not count */
  int64_t alloc0[] = {4000, 0};
  assert_int_equal(sch_allocated_score(req, alloc0, w, 2, false), 25);
  assert_int_equal(sch_allocated_score(req, (int64_t[]){0, 0}, w, 2, false), 0);

  /* balanced: fractions 0.75 and 0.5 -> std 0.125 -> 87 */
  assert_int_equal(sch_balanced_score(req, alloc, 2), 87);
  /* equal fractions -> 100; one resource -> 100 */
  assert_int_equal(sch_balanced_score((int64_t[]){2, 5}, (int64_t[]){4, 10}, 2), 100);
  assert_int_equal(sch_balanced_score((int64_t[]){3}, (int64_t[]){4}, 1), 100);
  /* three resources: 0.5, 0.25, 1 (capped from 2) -> mean 0.5833, std 0.3118 -> 68 */
  assert_int_equal(sch_balanced_score((int64_t[]){2, 1, 4}, (int64_t[]){4, 4, 2}, 3), 68);

  int64_t s[] = {0, 2, 4};
  sch_normalize_scores(s, 3, 100, true);
  assert_int_equal(s[0], 100);
  assert_int_equal(s[1], 50);
  assert_int_equal(s[2], 0);
  int64_t z[] = {0, 0};
  sch_normalize_scores(z, 2, 100, true);
  assert_int_equal(z[0], 100);
  int64_t p[] = {1, 3};
  sch_normalize_scores(p, 2, 100, false);
  assert_int_equal(p[0], 33);
  assert_int_equal(p[1], 100);

  assert_true(sch_binpack_resource_score(1000, 4000, 1000, 2) == 1.0);
  assert_true(sch_binpack_resource_score(1000, 4000, 3500, 2) == 0.0);
  assert_true(sch_binpack_resource_score(1000, 0, 0, 2) == 0.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_requirement_operators),
      cmocka_unit_test(test_match_fields),
      cmocka_unit_test(test_selector_and_affinity),
      cmocka_unit_test(test_toleration_table),
      cmocka_unit_test(test_untolerated_taint_and_reason),
      cmocka_unit_test(test_unschedulable),
      cmocka_unit_test(test_host_ports),
      cmocka_unit_test(test_resource_scores),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
