/* The node plugins on hand-built sessions: predicates (each reason string, pipelining onto
 * releasing resources, the enable arguments), nodeorder (kube-scheduler's numbers) and
 * binpack (Volcano's formula and weights). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "test_sch_plugins_fixture.h"

#define NS     KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE
#define PNS    KILN__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE
#define EQ     KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL
#define EXISTS KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS

static const char predicates_yaml[] = "actions: \"allocate\"\n"
                                      "tiers:\n"
                                      "- plugins:\n"
                                      "  - name: predicates\n";

static void test_predicates_reasons(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  fx_node(f, "small", 1000, 4 * GI, 110);
  Kiln__Node *gpu = fx_node(f, "tainted", 8000, 16 * GI, 110);
  fx_node_taint(gpu, "soft", "x", PNS); /* never blocks */
  fx_node_taint(gpu, "gpu", "true", NS);
  Kiln__Node *cordoned = fx_node(f, "cordoned", 8000, 16 * GI, 110);
  cordoned->unschedulable = 1;
  Kiln__Node *labelled = fx_node(f, "labelled", 8000, 16 * GI, 110);
  fx_node_label(labelled, "zone", "a");
  fx_node(f, "full", 8000, 16 * GI, 1);
  fx_pod(f, "resident", NULL, 100, GI, "full");
  Kiln__Pod *web = fx_pod(f, "web", NULL, 100, GI, "labelled");
  fx_pod_host_port(web, 8080);

  Kiln__Pod *p = fx_pod(f, "p", "pg", 2000, 2 * GI, NULL);
  Kiln__Pod__NodeSelectorEntry *sel = fx_alloc(sizeof(*sel));
  kiln__pod__node_selector_entry__init(sel);
  sel->key = fx_str("zone");
  sel->value = fx_str("b");
  (void)p;
  Kiln__Pod *q = fx_pod(f, "q", "pg", 100, GI, NULL);
  fx_pod_host_port(q, 8080);
  Kiln__Pod *g = fx_pod(f, "g", "pg", 1000, GI, NULL);
  fx_pod_scalar(g, "nvidia.com/gpu", 1000);
  Kiln__Pod *sel_pod = fx_pod(f, "s", "pg", 100, GI, NULL);
  FX_APPEND(sel_pod->node_selector, sel_pod->n_node_selector, sel);
  fx_open(f, predicates_yaml);

  const char *why;
  assert_int_equal(fx_predicate(f, "p", "small", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "Insufficient cpu");
  assert_int_equal(fx_predicate(f, "p", "tainted", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "node(s) had untolerated taint {gpu: true}");
  assert_int_equal(fx_predicate(f, "p", "cordoned", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "node(s) were unschedulable");
  assert_int_equal(fx_predicate(f, "p", "labelled", &why), SCH_FIT);
  assert_string_equal(why, "");
  assert_int_equal(fx_predicate(f, "p", "full", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "Too many pods");
  assert_int_equal(fx_predicate(f, "q", "labelled", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "node(s) didn't have free ports for the requested pod ports");
  assert_int_equal(fx_predicate(f, "q", "small", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "g", "labelled", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "Insufficient nvidia.com/gpu");
  assert_int_equal(fx_predicate(f, "s", "labelled", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "node(s) didn't match Pod's node affinity/selector");
  fx_free(f);
}

static void test_predicates_tolerations_and_gpu(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  Kiln__Node *n = fx_node(f, "gpu-node", 8000, 16 * GI, 110);
  fx_res_scalar(n->allocatable, "nvidia.com/gpu", 2000);
  fx_node_taint(n, "gpu", "true", NS);
  n->unschedulable = 1;
  Kiln__Pod *p = fx_pod(f, "p", "pg", 1000, GI, NULL);
  fx_pod_scalar(p, "nvidia.com/gpu", 2000);
  fx_pod_toleration(p, "gpu", EQ, "true", NS);
  fx_pod_toleration(p, "node.kubernetes.io/unschedulable", EXISTS, "", NS);
  Kiln__Pod *big = fx_pod(f, "big", "pg", 1000, GI, NULL);
  fx_pod_scalar(big, "nvidia.com/gpu", 3000);
  fx_pod_toleration(big, "", EXISTS, "", KILN__TAINT_EFFECT__TAINT_EFFECT_ALL);
  fx_open(f, predicates_yaml);

  const char *why;
  assert_int_equal(fx_predicate(f, "p", "gpu-node", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "big", "gpu-node", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "Insufficient nvidia.com/gpu");
  fx_free(f);
}

/* A node filled by a pod being deleted still passes: the allocate action may pipeline onto
 * the resources it releases (future idle). */
static void test_predicates_future_idle(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  fx_node(f, "n", 4000, 8 * GI, 110);
  Kiln__Pod *old = fx_pod(f, "old", NULL, 4000, 8 * GI, "n");
  old->deletion_time = 1;
  fx_pod(f, "p", "pg", 2000, 2 * GI, NULL);
  fx_open(f, predicates_yaml);
  const sch_node *sn = fx_snode(f, "n");
  assert_true(sn->idle.milli_cpu == 0);
  const char *why;
  assert_int_equal(fx_predicate(f, "p", "n", &why), SCH_FIT);
  fx_free(f);
}

static void test_predicates_arguments(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  Kiln__Node *n = fx_node(f, "n", 4000, 8 * GI, 110);
  fx_node_taint(n, "gpu", "true", NS);
  fx_pod(f, "p", "pg", 1000, GI, NULL);
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: predicates\n"
             "    arguments:\n"
             "      predicate.TaintTolerationEnable: false\n");
  const char *why;
  assert_int_equal(fx_predicate(f, "p", "n", &why), SCH_FIT);
  fx_free(f);
}

/* Scores of every registered node-order function for pod over the named nodes. */
static void scores_of(fx *f, const char *pod, const char *const *nodes, size_t n, double *scores) {
  int32_t idx[8];
  assert_true(n <= 8);
  for (size_t i = 0; i < n; i++)
    idx[i] = sch_snapshot_node(f->snap, nodes[i]);
  sch_session_node_scores(f->ssn, &f->snap->tasks[fx_task(f, pod)], idx, n, scores);
}

static void test_nodeorder_scores(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  Kiln__Node *a = fx_node(f, "a", 4000, 8 * GI, 110);
  fx_node_label(a, "disk", "ssd");
  fx_node(f, "b", 4000, 8 * GI, 110);
  Kiln__Node *c = fx_node(f, "c", 4000, 8 * GI, 110);
  fx_node_taint(c, "spot", "yes", PNS);
  fx_pod(f, "resident", NULL, 2000, 2 * GI, "b");
  fx_pod(f, "besteffort", NULL, 0, 0, "c"); /* counts as 100m/200Mi in least-requested */
  Kiln__Pod *p = fx_pod(f, "p", "pg", 1000, 2 * GI, NULL);
  /* preferred: disk=ssd, weight 5 */
  Kiln__PreferredSchedulingTerm *pt = fx_alloc(sizeof(*pt));
  kiln__preferred_scheduling_term__init(pt);
  pt->weight = 5;
  pt->preference = fx_alloc(sizeof(*pt->preference));
  kiln__node_selector_term__init(pt->preference);
  Kiln__NodeSelectorRequirement *r = fx_alloc(sizeof(*r));
  kiln__node_selector_requirement__init(r);
  r->key = fx_str("disk");
  r->operator_ = fx_str("Exists");
  FX_APPEND(pt->preference->match_expressions, pt->preference->n_match_expressions, r);
  FX_APPEND(p->preferred_node_terms, p->n_preferred_node_terms, pt);
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: nodeorder\n");

  /* a: least cpu 3000/4000 -> 75, memory 6/8 -> 75 => 75; balanced .25/.25 -> 100;
   *    affinity 5 * 2 = 10; taints: none -> 100 * 3 = 300.            total 485
   * b: least cpu 1000/4000 -> 25, memory 4/8 -> 50 => (25*50+50*50)/100 = 37;
   *    balanced .75/.5 -> 87; taints 300.                               total 424
   * c: least cpu (4000-1100)*100/4000 = 72, memory (8Gi-2Gi-200Mi)*100/8Gi = 72 => 72;
   *    balanced (real requests) .25/.25 -> 100; one PreferNoSchedule taint -> 0. total 172 */
  const char *nodes[] = {"a", "b", "c"};
  double s[3];
  scores_of(f, "p", nodes, 3, s);
  assert_true(s[0] == 485.0);
  assert_true(s[1] == 424.0);
  assert_true(s[2] == 172.0);
  fx_free(f);
}

static void node_image(Kiln__Node *n, int64_t mib, const char *name1, const char *name2) {
  Kiln__NodeImage *im = fx_alloc(sizeof(*im));
  kiln__node_image__init(im);
  im->size_bytes = mib * 1024 * 1024;
  FX_APPEND(im->names, im->n_names, fx_str(name1));
  if (name2)
    FX_APPEND(im->names, im->n_names, fx_str(name2));
  FX_APPEND(n->images, n->n_images, im);
}

/* imagelocality.weight (kube-scheduler ImageLocality): the images of the pod's containers
 * that the node holds, by size times the share of nodes holding them, clamped to
 * [23 MiB, 1000 MiB per container] and mapped onto 0..100; a name without a tag is
 * ":latest"; a node naming an image twice counts once. */
static void test_nodeorder_image_locality(void **state) {
  (void)state;
  static const char *const weights[] = {"2", "0"};
  for (int w = 0; w < 2; w++) {
    fx *f = fx_new();
    fx_queue(f, "default", 1);
    fx_pg(f, "pg", "default", 1, "Inqueue");
    Kiln__Node *a = fx_node(f, "a", 4000, 8 * GI, 110);
    node_image(a, 500, "repo/app:latest", "repo/app@sha256:0123");
    node_image(a, 500, "repo/app:latest", NULL);
    Kiln__Node *b = fx_node(f, "b", 4000, 8 * GI, 110);
    node_image(b, 500, "repo/app:latest", NULL);
    node_image(b, 200, "side:v1", NULL);
    Kiln__Node *c = fx_node(f, "c", 4000, 8 * GI, 110);
    node_image(c, 900, "repo/app:v2", NULL);
    Kiln__Pod *p = fx_pod(f, "p", "pg", 1000, GI, NULL);
    static const char packed[] = "side:v1\0repo/app"; /* two containers */
    p->packed_images.len = sizeof(packed);
    p->packed_images.data = fx_alloc(sizeof(packed));
    memcpy(p->packed_images.data, packed, sizeof(packed));
    char conf[512];
    snprintf(conf, sizeof(conf),
             "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: nodeorder\n    arguments:\n"
             "      leastrequested.weight: 0\n      balancedresource.weight: 0\n"
             "      nodeaffinity.weight: 0\n      tainttoleration.weight: 0\n"
             "      podaffinity.weight: 0\n      podtopologyspread.weight: 0\n"
             "      imagelocality.weight: %s\n",
             weights[w]);
    fx_open(f, conf);
    assert_int_equal(f->conf->nignored_args, 0); /* the weight is read */
    /* a: repo/app:latest on 2 of 3 nodes: 500 MiB * 2/3 = 349525333 B, clamped into
     *    [23 MiB, 2000 MiB] -> 100 * (349525333 - 24117248) / 2073034752 = 15, x2 = 30;
     * b: plus side:v1 on 1 of 3: 200 MiB / 3 = 69905066 B -> 19, x2 = 38;
     * c: repo/app:v2 is not repo/app:latest -> 0. */
    const char *nodes[] = {"a", "b", "c"};
    double s[3];
    scores_of(f, "p", nodes, 3, s);
    assert_true(s[0] == (w == 0 ? 30.0 : 0.0));
    assert_true(s[1] == (w == 0 ? 38.0 : 0.0));
    assert_true(s[2] == 0.0);
    fx_free(f);
  }
}

static void test_nodeorder_weights(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  fx_node(f, "a", 4000, 8 * GI, 110);
  fx_node(f, "b", 4000, 8 * GI, 110);
  fx_pod(f, "resident", NULL, 2000, 2 * GI, "b");
  fx_pod(f, "p", "pg", 1000, 2 * GI, NULL);
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: nodeorder\n"
             "    arguments:\n"
             "      leastrequested.weight: 0\n"
             "      balancedresource.weight: 0\n"
             "      tainttoleration.weight: 0\n"
             "      mostrequested.weight: 2\n");
  /* most: a cpu 25, memory 25 -> 25; b cpu 75, memory 50 -> 62; times 2 */
  const char *nodes[] = {"a", "b"};
  double s[2];
  scores_of(f, "p", nodes, 2, s);
  assert_true(s[0] == 50.0);
  assert_true(s[1] == 124.0);
  fx_free(f);
}

static void test_binpack(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  Kiln__Node *a = fx_node(f, "a", 4000, 8 * GI, 110);
  fx_res_scalar(a->allocatable, "nvidia.com/gpu", 4000);
  fx_node(f, "b", 4000, 8 * GI, 110);
  Kiln__Pod *r = fx_pod(f, "resident", NULL, 2000, 2 * GI, "a");
  fx_pod_scalar(r, "nvidia.com/gpu", 1000);
  fx_pod(f, "p", "pg", 1000, 2 * GI, NULL);
  Kiln__Pod *g = fx_pod(f, "g", "pg", 1000, 2 * GI, NULL);
  fx_pod_scalar(g, "nvidia.com/gpu", 1000);
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: binpack\n"
             "    arguments:\n"
             "      binpack.weight: 2\n"
             "      binpack.cpu: 3\n"
             "      binpack.resources: nvidia.com/gpu, example.com/none\n"
             "      binpack.resources.nvidia.com/gpu: 4\n");
  const char *nodes[] = {"a", "b"};
  double s[2];
  /* p on a: cpu 3 * 3000/4000 = 2.25, memory 1 * 4/8 = .5 -> 2.75 / 4 * 100 * 2 = 137.5;
   * on b: cpu 3 * 1000/4000 = .75, memory .25 -> 1 / 4 * 200 = 50 */
  scores_of(f, "p", nodes, 2, s);
  assert_true(s[0] == 137.5);
  assert_true(s[1] == 50.0);
  /* g on a adds gpu 4 * 2000/4000 = 2: (2.75 + 2) / 8 * 200 = 118.75; on b the gpu does not
   * fit (no capacity): (1 + 0) / 8 * 200 = 25 */
  scores_of(f, "g", nodes, 2, s);
  assert_true(s[0] == 118.75);
  assert_true(s[1] == 25.0);
  fx_free(f);
}

static void test_binpack_weight_zero(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  fx_node(f, "a", 4000, 8 * GI, 110);
  fx_pod(f, "p", "pg", 1000, 2 * GI, NULL);
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: binpack\n"
             "    arguments:\n"
             "      binpack.weight: 0\n");
  const char *nodes[] = {"a"};
  double s[1];
  scores_of(f, "p", nodes, 1, s);
  assert_true(s[0] == 0.0);
  fx_free(f);
}

/* The allocate action with predicates and nodeorder: the selector, the taint and the
 * preferred affinity each decide where their pod goes. */
static void test_allocate_places_by_rules(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 3, "Inqueue");
  Kiln__Node *t = fx_node(f, "tainted", 8000, 16 * GI, 110);
  fx_node_taint(t, "dedicated", "db", NS);
  Kiln__Node *ssd = fx_node(f, "ssd", 8000, 16 * GI, 110);
  fx_node_label(ssd, "disk", "ssd");
  fx_node(f, "plain", 8000, 16 * GI, 110);

  Kiln__Pod *sel = fx_pod(f, "wants-ssd", "pg", 1000, GI, NULL);
  Kiln__Pod__NodeSelectorEntry *e = fx_alloc(sizeof(*e));
  kiln__pod__node_selector_entry__init(e);
  e->key = fx_str("disk");
  e->value = fx_str("ssd");
  FX_APPEND(sel->node_selector, sel->n_node_selector, e);
  /* Tolerates the taint and prefers it by name (matchFields). */
  Kiln__Pod *db = fx_pod(f, "db", "pg", 1000, GI, NULL);
  fx_pod_toleration(db, "dedicated", EQ, "db", NS);
  Kiln__PreferredSchedulingTerm *pt = fx_alloc(sizeof(*pt));
  kiln__preferred_scheduling_term__init(pt);
  pt->weight = 100;
  pt->preference = fx_alloc(sizeof(*pt->preference));
  kiln__node_selector_term__init(pt->preference);
  Kiln__NodeSelectorRequirement *r = fx_alloc(sizeof(*r));
  kiln__node_selector_requirement__init(r);
  r->key = fx_str("metadata.name");
  r->operator_ = fx_str("In");
  FX_APPEND(r->values, r->n_values, fx_str("tainted"));
  FX_APPEND(pt->preference->match_fields, pt->preference->n_match_fields, r);
  FX_APPEND(db->preferred_node_terms, db->n_preferred_node_terms, pt);
  fx_pod(f, "any", "pg", 1000, GI, NULL);
  fx_open(f, "actions: \"allocate\"\n"
             "tiers:\n"
             "- plugins:\n"
             "  - name: gang\n"
             "- plugins:\n"
             "  - name: predicates\n"
             "  - name: nodeorder\n");
  assert_int_equal(sch_session_run(f->ssn), 0);
  sch_result *res = NULL;
  assert_int_equal(sch_session_close(f->ssn, &res), 0);
  f->ssn = NULL;
  assert_int_equal(res->nbinds, 3);
  for (size_t i = 0; i < res->nbinds; i++) {
    const char *pod = f->snap->tasks[res->binds[i].task].pod->name;
    const char *node = f->snap->nodes[res->binds[i].node].name;
    if (strcmp(pod, "wants-ssd") == 0)
      assert_string_equal(node, "ssd");
    else if (strcmp(pod, "db") == 0)
      assert_string_equal(node, "tainted");
    else
      assert_string_not_equal(node, "tainted");
  }
  sch_result_free(res);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_predicates_reasons),
      cmocka_unit_test(test_predicates_tolerations_and_gpu),
      cmocka_unit_test(test_predicates_future_idle),
      cmocka_unit_test(test_predicates_arguments),
      cmocka_unit_test(test_nodeorder_scores),
      cmocka_unit_test(test_nodeorder_weights),
      cmocka_unit_test(test_nodeorder_image_locality),
      cmocka_unit_test(test_binpack),
      cmocka_unit_test(test_binpack_weight_zero),
      cmocka_unit_test(test_allocate_places_by_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
