/* Inter-pod affinity and topology spread (sch_interpod.c, through the predicates and
 * nodeorder plugins and directly): kube-scheduler's InterPodAffinity and PodTopologySpread
 * rules on hand-built snapshots. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <time.h>

#include "sch_interpod.h"
#include "sch_match.h"
#include "test_sch_plugins_fixture.h"

static const char predicates_yaml[] = "actions: \"allocate\"\n"
                                      "tiers:\n"
                                      "- plugins:\n"
                                      "  - name: predicates\n";

static const char gang_yaml[] = "actions: \"allocate\"\n"
                                "tiers:\n"
                                "- plugins:\n"
                                "  - name: gang\n"
                                "- plugins:\n"
                                "  - name: predicates\n"
                                "  - name: nodeorder\n";

/* ---- builders ---- */

/* The pod's inter-pod terms, made on first use. */
static Kiln__InterPodTerms *T(Kiln__Pod *p) {
  if (p->inter_pod == NULL) {
    p->inter_pod = fx_alloc(sizeof(*p->inter_pod));
    kiln__inter_pod_terms__init(p->inter_pod);
  }
  return p->inter_pod;
}

/* A selector with matchLabels {k: v} (k NULL: the empty selector). */
static Kiln__LabelSelector *sel_eq(const char *k, const char *v) {
  Kiln__LabelSelector *s = fx_alloc(sizeof(*s));
  kiln__label_selector__init(s);
  if (k) {
    Kiln__LabelSelector__MatchLabelsEntry *e = fx_alloc(sizeof(*e));
    kiln__label_selector__match_labels_entry__init(e);
    e->key = fx_str(k);
    e->value = fx_str(v);
    FX_APPEND(s->match_labels, s->n_match_labels, e);
  }
  return s;
}

static void sel_expr(Kiln__LabelSelector *s, const char *k, const char *op, const char *v1,
                     const char *v2) {
  Kiln__LabelSelectorRequirement *r = fx_alloc(sizeof(*r));
  kiln__label_selector_requirement__init(r);
  r->key = fx_str(k);
  r->operator_ = fx_str(op);
  if (v1)
    FX_APPEND(r->values, r->n_values, fx_str(v1));
  if (v2)
    FX_APPEND(r->values, r->n_values, fx_str(v2));
  FX_APPEND(s->match_expressions, s->n_match_expressions, r);
}

static Kiln__PodAffinityTerm *term(const char *k, const char *v, const char *topology) {
  Kiln__PodAffinityTerm *t = fx_alloc(sizeof(*t));
  kiln__pod_affinity_term__init(t);
  t->label_selector = sel_eq(k, v);
  t->topology_key = fx_str(topology);
  return t;
}

static Kiln__PodAffinityTerm *required_affinity(Kiln__Pod *p, const char *k, const char *v,
                                                const char *topology) {
  Kiln__PodAffinityTerm *t = term(k, v, topology);
  FX_APPEND(T(p)->required_affinity, T(p)->n_required_affinity, t);
  return t;
}

static Kiln__PodAffinityTerm *required_anti(Kiln__Pod *p, const char *k, const char *v,
                                            const char *topology) {
  Kiln__PodAffinityTerm *t = term(k, v, topology);
  FX_APPEND(T(p)->required_anti_affinity, T(p)->n_required_anti_affinity, t);
  return t;
}

static void preferred(Kiln__Pod *p, bool anti, int32_t weight, const char *k, const char *v,
                      const char *topology) {
  Kiln__WeightedPodAffinityTerm *w = fx_alloc(sizeof(*w));
  kiln__weighted_pod_affinity_term__init(w);
  w->weight = weight;
  w->pod_affinity_term = term(k, v, topology);
  if (anti)
    FX_APPEND(T(p)->preferred_anti_affinity, T(p)->n_preferred_anti_affinity, w);
  else
    FX_APPEND(T(p)->preferred_affinity, T(p)->n_preferred_affinity, w);
}

static Kiln__TopologySpreadConstraint *spread(Kiln__Pod *p, int32_t max_skew, const char *topology,
                                              const char *when, const char *k, const char *v) {
  Kiln__TopologySpreadConstraint *c = fx_alloc(sizeof(*c));
  kiln__topology_spread_constraint__init(c);
  c->max_skew = max_skew;
  c->topology_key = fx_str(topology);
  c->when_unsatisfiable = fx_str(when);
  c->label_selector = sel_eq(k, v);
  FX_APPEND(T(p)->topology_spread_constraints, T(p)->n_topology_spread_constraints, c);
  return c;
}

static Kiln__Node *zone_node(fx *f, const char *name, const char *zone) {
  Kiln__Node *n = fx_node(f, name, 8000, 16 * GI, 110);
  fx_node_label(n, "kubernetes.io/hostname", name);
  if (zone)
    fx_node_label(n, "zone", zone);
  return n;
}

static Kiln__Pod *labelled_pod(fx *f, const char *name, const char *group, const char *node,
                               const char *app) {
  Kiln__Pod *p = fx_pod(f, name, group, 100, GI, node);
  if (app)
    fx_pod_label(p, "app", app);
  return p;
}

/* Node name of the bind of pod in res, or NULL. */
static const char *bound_to(const fx *f, const sch_result *res, const char *pod) {
  for (size_t i = 0; i < res->nbinds; i++)
    if (strcmp(f->snap->tasks[res->binds[i].task].pod->name, pod) == 0)
      return f->snap->nodes[res->binds[i].node].name;
  return NULL;
}

/* ---- matching ---- */

/* matchLabelKeys / mismatchLabelKeys take the owner's values (t as test_selectors_and_terms
 * leaves it, web its owner); then a nil selector matches nothing. */
static void check_label_keys(fx *f, Kiln__PodAffinityTerm *t, Kiln__Pod *web) {
  Kiln__Pod *web2 = labelled_pod(f, "web2", NULL, NULL, "web");
  fx_pod_label(web2, "tier", "back");
  char *tier[] = {"tier"};
  t->match_label_keys = tier;
  t->n_match_label_keys = 1;
  assert_true(sch_affinity_term_matches(t, web, web));
  assert_false(sch_affinity_term_matches(t, web, web2));
  t->match_label_keys = NULL;
  t->n_match_label_keys = 0;
  t->mismatch_label_keys = tier;
  t->n_mismatch_label_keys = 1;
  assert_false(sch_affinity_term_matches(t, web, web));
  assert_true(sch_affinity_term_matches(t, web, web2));
  char *absent[] = {"nope"}; /* a key the owner lacks adds nothing */
  t->mismatch_label_keys = absent;
  assert_true(sch_affinity_term_matches(t, web, web));
  t->mismatch_label_keys = NULL;
  t->n_mismatch_label_keys = 0;
  t->label_selector = NULL;
  assert_false(sch_affinity_term_matches(t, web, web)); /* nil selector */
}

static void test_selectors_and_terms(void **state) {
  (void)state;
  fx *f = fx_new();
  Kiln__Pod *web = labelled_pod(f, "web", NULL, NULL, "web");
  fx_pod_label(web, "tier", "front");
  Kiln__Pod *db = labelled_pod(f, "db", NULL, NULL, "db");
  free(db->namespace_);
  db->namespace_ = fx_str("data");

  /* nil matches nothing, empty everything. */
  assert_false(sch_selector_matches(NULL, sch_namespace_label, "x"));
  Kiln__LabelSelector *s = sel_eq(NULL, NULL);
  assert_true(sch_selector_empty(s));
  Kiln__PodAffinityTerm everything = KILN__POD_AFFINITY_TERM__INIT;
  everything.label_selector = s;
  assert_true(sch_affinity_term_matches(&everything, web, web));
  sel_expr(s, "app", "In", "web", "api");
  sel_expr(s, "tier", "Exists", NULL, NULL);
  sel_expr(s, "gone", "DoesNotExist", NULL, NULL);
  sel_expr(s, "app", "NotIn", "db", NULL);
  Kiln__PodAffinityTerm t = KILN__POD_AFFINITY_TERM__INIT;
  t.label_selector = s;
  t.topology_key = "zone";
  assert_true(sch_affinity_term_matches(&t, web, web));
  assert_false(sch_affinity_term_matches(&t, web, db)); /* other namespace, and app=db */
  /* An invalid requirement matches nothing. */
  Kiln__LabelSelector *bad = sel_eq(NULL, NULL);
  sel_expr(bad, "app", "In", NULL, NULL);
  t.label_selector = bad;
  assert_false(sch_affinity_term_matches(&t, web, web));

  /* Namespaces: the owner's own by default; a list; a namespaceSelector on the name label. */
  Kiln__LabelSelector *any = sel_eq(NULL, NULL);
  t.label_selector = any;
  assert_false(sch_affinity_term_matches(&t, web, db));
  char *nss[] = {"data"};
  t.namespaces = nss;
  t.n_namespaces = 1;
  assert_true(sch_affinity_term_matches(&t, web, db));
  assert_false(sch_affinity_term_matches(&t, web, web));
  t.namespaces = NULL;
  t.n_namespaces = 0;
  Kiln__LabelSelector *by_name = sel_eq("kubernetes.io/metadata.name", "data");
  t.namespace_selector = by_name;
  assert_true(sch_affinity_term_matches(&t, web, db));
  assert_false(sch_affinity_term_matches(&t, web, web));
  Kiln__LabelSelector *all_ns = sel_eq(NULL, NULL);
  t.namespace_selector = all_ns;
  assert_true(sch_affinity_term_matches(&t, web, db));
  assert_true(sch_affinity_term_matches(&t, web, web));
  Kiln__LabelSelector *team = sel_eq("team", "x"); /* a label the scheduler does not know */
  t.namespace_selector = team;
  assert_false(sch_affinity_term_matches(&t, web, db));
  t.namespace_selector = NULL;

  check_label_keys(f, &t, web);
  kiln__label_selector__free_unpacked(s, NULL);
  kiln__label_selector__free_unpacked(bad, NULL);
  kiln__label_selector__free_unpacked(any, NULL);
  kiln__label_selector__free_unpacked(all_ns, NULL);
  kiln__label_selector__free_unpacked(by_name, NULL);
  kiln__label_selector__free_unpacked(team, NULL);
  fx_free(f);
}

/* ---- filters ---- */

static void test_anti_affinity_and_symmetry(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  zone_node(f, "a", "z1");
  zone_node(f, "b", "z1");
  zone_node(f, "c", "z2");
  labelled_pod(f, "cache", NULL, "a", "cache");
  Kiln__Pod *guard = labelled_pod(f, "guard", NULL, "c", "guard");
  required_anti(guard, "app", "web", "zone"); /* no web pod in z2 */
  Kiln__Pod *p = labelled_pod(f, "p", "pg", NULL, "batch");
  required_anti(p, "app", "cache", "kubernetes.io/hostname");
  labelled_pod(f, "w", "pg", NULL, "web");
  labelled_pod(f, "plain", "pg", NULL, "other");
  fx_open(f, predicates_yaml);

  const char *why;
  assert_int_equal(fx_predicate(f, "p", "a", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "node(s) didn't match pod anti-affinity rules");
  assert_int_equal(fx_predicate(f, "p", "b", &why), SCH_FIT);
  /* The guard's anti-affinity keeps web pods out of its whole zone. */
  assert_int_equal(fx_predicate(f, "w", "c", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "node(s) didn't satisfy existing pods anti-affinity rules");
  assert_int_equal(fx_predicate(f, "w", "a", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "plain", "c", &why), SCH_FIT);
  fx_free(f);
}

static void test_affinity(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  zone_node(f, "a", "z1");
  zone_node(f, "b", "z1");
  zone_node(f, "c", "z2");
  zone_node(f, "nolabel", NULL);
  labelled_pod(f, "db", NULL, "a", "db");
  Kiln__Pod *p = labelled_pod(f, "p", "pg", NULL, "web");
  required_affinity(p, "app", "db", "zone");
  /* First of a group with affinity to itself: nothing matches yet, it matches itself. */
  Kiln__Pod *first = labelled_pod(f, "first", "pg", NULL, "solo");
  required_affinity(first, "app", "solo", "zone");
  /* Affinity to something absent that it does not match itself: nowhere. */
  Kiln__Pod *lost = labelled_pod(f, "lost", "pg", NULL, "web");
  required_affinity(lost, "app", "missing", "zone");
  fx_open(f, predicates_yaml);

  const char *why;
  assert_int_equal(fx_predicate(f, "p", "a", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "p", "b", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "p", "c", &why), SCH_UNRESOLVABLE);
  assert_string_equal(why, "node(s) didn't match pod affinity rules");
  assert_int_equal(fx_predicate(f, "p", "nolabel", &why), SCH_UNRESOLVABLE);
  assert_int_equal(fx_predicate(f, "first", "c", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "first", "nolabel", &why), SCH_UNRESOLVABLE);
  assert_int_equal(fx_predicate(f, "lost", "a", &why), SCH_UNRESOLVABLE);
  fx_free(f);
}

/* A gang with required affinity to itself: the first pod may go anywhere (nothing matches
 * yet and it matches its own term), the others follow it into its zone. */
static void test_gang_self_affinity_session(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 4, "Inqueue");
  zone_node(f, "a1", "z1");
  zone_node(f, "a2", "z1");
  zone_node(f, "b1", "z2");
  zone_node(f, "b2", "z2");
  for (int i = 0; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p-%d", i);
    Kiln__Pod *p = labelled_pod(f, name, "pg", NULL, "team");
    required_affinity(p, "app", "team", "zone");
  }
  fx_open(f, gang_yaml);
  sch_result *res = fx_run(f);
  assert_int_equal(res->nbinds, 4);
  char first = bound_to(f, res, "p-0")[0];
  for (int i = 1; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p-%d", i);
    assert_int_equal(bound_to(f, res, name)[0], first);
  }
  sch_result_free(res);
  fx_free(f);
}

/* A gang whose pods repel each other per host: one per node, the extra one left with the
 * reason; a gang that cannot fit at all is discarded and its tentative pods stop counting. */
static void test_gang_anti_affinity_session(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "big", "default", 3, "Inqueue");
  fx_pg(f, "spread", "default", 2, "Inqueue");
  zone_node(f, "a", "z1");
  zone_node(f, "b", "z2");
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof(name), "big-%d", i);
    Kiln__Pod *p = labelled_pod(f, name, "big", NULL, "big");
    required_anti(p, "app", "big", "kubernetes.io/hostname");
    snprintf(name, sizeof(name), "spread-%d", i);
    p = labelled_pod(f, name, "spread", NULL, "spread");
    required_anti(p, "app", "spread", "kubernetes.io/hostname");
    /* Also away from big's pods, which must no longer count once big is discarded. */
    required_anti(p, "app", "big", "kubernetes.io/hostname");
  }
  fx_open(f, gang_yaml);
  sch_result *res = fx_run(f);
  assert_int_equal(res->nbinds, 2);
  const char *n0 = NULL, *n1 = NULL;
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof(name), "big-%d", i);
    assert_null(bound_to(f, res, name));
    snprintf(name, sizeof(name), "spread-%d", i);
    const char *n = bound_to(f, res, name);
    if (n && !n0)
      n0 = n;
    else if (n)
      n1 = n;
  }
  assert_non_null(n0);
  assert_non_null(n1);
  assert_string_not_equal(n0, n1);
  bool reason = false;
  for (size_t i = 0; i < res->npod_groups; i++) {
    const sch_pg_status *pg = &res->pod_groups[i];
    if (strcmp(f->snap->jobs[pg->job].name, "big") == 0 && pg->has_condition &&
        strstr(pg->condition.message, "anti-affinity rules"))
      reason = true;
  }
  assert_true(reason);
  sch_result_free(res);
  fx_free(f);
}

static void test_spread_filter(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  zone_node(f, "a1", "z1");
  zone_node(f, "a2", "z1");
  zone_node(f, "b1", "z2");
  zone_node(f, "nolabel", NULL);
  Kiln__Node *c1 = zone_node(f, "c1", "z3");
  fx_node_label(c1, "pool", "other");
  fx_node_taint(c1, "dedicated", "x", KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE);
  labelled_pod(f, "e1", NULL, "a1", "s");
  labelled_pod(f, "e2", NULL, "a2", "s");
  labelled_pod(f, "e3", NULL, "b1", "s");
  labelled_pod(f, "e4", NULL, "c1", "s");
  Kiln__Pod *gone = labelled_pod(f, "terminating", NULL, "b1", "s");
  gone->deletion_time = 1; /* terminating pods do not count */
  /* Only z1 and z2 are admitted: c1 fails the selector (nodeAffinityPolicy Honor). */
  Kiln__Pod *p = labelled_pod(f, "p", "pg", NULL, "s");
  spread(p, 1, "zone", "DoNotSchedule", "app", "s");
  Kiln__NodeSelectorTerm *nt = fx_alloc(sizeof(*nt));
  kiln__node_selector_term__init(nt);
  Kiln__NodeSelectorRequirement *r = fx_alloc(sizeof(*r));
  kiln__node_selector_requirement__init(r);
  r->key = fx_str("pool");
  r->operator_ = fx_str("DoesNotExist");
  FX_APPEND(nt->match_expressions, nt->n_match_expressions, r);
  FX_APPEND(p->required_node_terms, p->n_required_node_terms, nt);
  /* The same with minDomains 3: two domains only, so the global minimum is 0. */
  Kiln__Pod *q = labelled_pod(f, "q", "pg", NULL, "s");
  spread(q, 1, "zone", "DoNotSchedule", "app", "s")->min_domains = 3;
  Kiln__NodeSelectorTerm *nt2 = fx_alloc(sizeof(*nt2));
  kiln__node_selector_term__init(nt2);
  Kiln__NodeSelectorRequirement *r2 = fx_alloc(sizeof(*r2));
  kiln__node_selector_requirement__init(r2);
  r2->key = fx_str("pool");
  r2->operator_ = fx_str("DoesNotExist");
  FX_APPEND(nt2->match_expressions, nt2->n_match_expressions, r2);
  FX_APPEND(q->required_node_terms, q->n_required_node_terms, nt2);
  /* nodeAffinityPolicy Ignore and nodeTaintsPolicy Honor: c1 counts for neither reason...
   * its taint keeps it out, so z3 is still not a domain. */
  Kiln__Pod *t = labelled_pod(f, "t", "pg", NULL, "s");
  Kiln__TopologySpreadConstraint *tc = spread(t, 1, "zone", "DoNotSchedule", "app", "s");
  tc->node_affinity_policy = fx_str("Ignore");
  tc->node_taints_policy = fx_str("Honor");
  /* Ignore both: z3 (1 pod) counts; min stays 1. And a selector nobody matches. */
  Kiln__Pod *u = labelled_pod(f, "u", "pg", NULL, "s");
  spread(u, 1, "zone", "DoNotSchedule", "app", "none")->node_affinity_policy = fx_str("Ignore");
  fx_open(f, predicates_yaml);

  const char *why;
  /* z1 has 2, z2 has 1 (the terminating pod is left out): min 1. */
  assert_int_equal(fx_predicate(f, "p", "a1", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "node(s) didn't match pod topology spread constraints");
  assert_int_equal(fx_predicate(f, "p", "b1", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "p", "nolabel", &why), SCH_UNRESOLVABLE);
  assert_string_equal(
      why, "node(s) didn't match pod topology spread constraints (missing required label)");
  assert_int_equal(fx_predicate(f, "q", "b1", &why), SCH_UNSCHEDULABLE); /* 1 + 1 - 0 > 1 */
  assert_int_equal(fx_predicate(f, "t", "b1", &why), SCH_FIT);
  assert_int_equal(fx_predicate(f, "t", "a1", &why), SCH_UNSCHEDULABLE);
  /* u: nothing matches "none" anywhere, every domain has 0; self does not match: fits. */
  assert_int_equal(fx_predicate(f, "u", "a1", &why), SCH_FIT);
  fx_free(f);
}

/* maxSkew 1 over two zones: a gang of 4 lands 2/2. */
static void test_spread_gang_session(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 4, "Inqueue");
  zone_node(f, "a1", "z1");
  zone_node(f, "a2", "z1");
  zone_node(f, "a3", "z1");
  zone_node(f, "b1", "z2");
  /* Make z1 attractive to the resource scores: b1 is half full. */
  fx_pod(f, "filler", NULL, 4000, 8 * GI, "b1");
  for (int i = 0; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p-%d", i);
    Kiln__Pod *p = labelled_pod(f, name, "pg", NULL, "s");
    spread(p, 1, "zone", "DoNotSchedule", "app", "s");
  }
  fx_open(f, gang_yaml);
  sch_result *res = fx_run(f);
  assert_int_equal(res->nbinds, 4);
  int z1 = 0, z2 = 0;
  for (int i = 0; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p-%d", i);
    const char *n = bound_to(f, res, name);
    assert_non_null(n);
    if (n[0] == 'a')
      z1++;
    else
      z2++;
  }
  assert_int_equal(z1, 2);
  assert_int_equal(z2, 2);
  sch_result_free(res);
  fx_free(f);
}

/* ---- scores ---- */

static void test_scores(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  zone_node(f, "a", "z1");
  zone_node(f, "b", "z2");
  zone_node(f, "c", "z3");
  labelled_pod(f, "db1", NULL, "a", "db");
  labelled_pod(f, "db2", NULL, "a", "db");
  labelled_pod(f, "noisy", NULL, "b", "noisy");
  /* An existing pod that wants web pods near it (required: hardPodAffinityWeight 1). */
  Kiln__Pod *fan = labelled_pod(f, "fan", NULL, "c", "fan");
  required_affinity(fan, "app", "web", "zone");
  Kiln__Pod *p = labelled_pod(f, "p", "pg", NULL, "web");
  preferred(p, false, 10, "app", "db", "zone");
  preferred(p, true, 5, "app", "noisy", "zone");
  Kiln__Pod *s = labelled_pod(f, "s", "pg", NULL, "db");
  spread(s, 1, "zone", "ScheduleAnyway", "app", "db");
  Kiln__Pod *plain = labelled_pod(f, "plain", "pg", NULL, "other");
  fx_open(f, predicates_yaml);

  sch_ipa *a = NULL;
  assert_int_equal(sch_ipa_new(f->snap, 1, &a), 0);
  assert_non_null(a);
  int32_t nodes[3] = {sch_snapshot_node(f->snap, "a"), sch_snapshot_node(f->snap, "b"),
                      sch_snapshot_node(f->snap, "c")};
  int64_t aff[3], spr[3];
  /* raw: a = 2*10 = 20, b = -5, c = +1 (fan) -> min-max: 100, 0, 24. */
  assert_int_equal(sch_ipa_scores(a, &f->snap->tasks[fx_task(f, "p")], nodes, 3, aff, spr), 0);
  assert_int_equal(aff[0], 100);
  assert_int_equal(aff[1], 0);
  assert_int_equal(aff[2], 24);
  assert_int_equal(spr[0] + spr[1] + spr[2], 0); /* no ScheduleAnyway constraint */
  /* spread: z1 has 2 db pods; weight log(3 + 2); a = round(2 * 1.609) = 3, b = c = 0
   * -> 100 * (3 + 0 - s) / 3: 0, 100, 100. */
  assert_int_equal(sch_ipa_scores(a, &f->snap->tasks[fx_task(f, "s")], nodes, 3, aff, spr), 0);
  assert_int_equal(spr[0], 0);
  assert_int_equal(spr[1], 100);
  assert_int_equal(spr[2], 100);
  assert_int_equal(aff[0] + aff[1] + aff[2], 0);
  /* A pod without terms is not web: fan does not want it; nothing to score. */
  assert_int_equal(sch_ipa_scores(a, &f->snap->tasks[fx_task(f, "plain")], nodes, 3, aff, spr), 0);
  assert_int_equal(aff[0] + aff[1] + aff[2], 0);
  sch_ipa_free(a);
  (void)plain;
  fx_free(f);
}

/* Placements made in the session count, and a discarded statement takes them back. */
static void test_session_accounting(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  zone_node(f, "a", "z1");
  zone_node(f, "b", "z2");
  Kiln__Pod *x = labelled_pod(f, "x", "pg", NULL, "x");
  required_anti(x, "app", "x", "zone");
  Kiln__Pod *y = labelled_pod(f, "y", "pg", NULL, "x");
  required_anti(y, "app", "x", "zone");
  fx_open(f, predicates_yaml);
  const char *why;
  int32_t na = sch_snapshot_node(f->snap, "a");
  assert_int_equal(fx_predicate(f, "y", "a", &why), SCH_FIT);
  sch_statement *st = sch_statement_new(f->ssn);
  assert_non_null(st);
  assert_int_equal(sch_statement_allocate(st, fx_task(f, "x"), na), 0);
  assert_int_equal(fx_predicate(f, "y", "a", &why), SCH_UNSCHEDULABLE);
  assert_string_equal(why, "node(s) didn't match pod anti-affinity rules");
  assert_int_equal(fx_predicate(f, "y", "b", &why), SCH_FIT);
  sch_statement_discard(st);
  assert_int_equal(fx_predicate(f, "y", "a", &why), SCH_FIT);
  /* Evicting a placed pod takes it out of the counts; undoing the eviction puts it back. */
  assert_int_equal(sch_statement_allocate(st, fx_task(f, "x"), na), 0);
  assert_int_equal(sch_statement_commit(st), 0);
  assert_int_equal(fx_predicate(f, "y", "a", &why), SCH_UNSCHEDULABLE);
  assert_int_equal(sch_statement_evict(st, fx_task(f, "x"), "test"), 0);
  assert_int_equal(fx_predicate(f, "y", "a", &why), SCH_FIT);
  sch_statement_discard(st);
  assert_int_equal(fx_predicate(f, "y", "a", &why), SCH_UNSCHEDULABLE);
  sch_statement_free(st);
  fx_free(f);
}

/* At some scale: 100 gangs of 10 on 200 nodes in 4 zones, each gang one pod per node and
 * spread over the zones with maxSkew 1, among 400 running pods; prints the session time. */
static void test_scale(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  char name[32], zone[16], app[16];
  for (int i = 0; i < 200; i++) {
    snprintf(name, sizeof(name), "n%03d", i);
    snprintf(zone, sizeof(zone), "z%d", i % 4);
    zone_node(f, name, zone);
  }
  for (int i = 0; i < 400; i++) {
    snprintf(name, sizeof(name), "run%03d", i);
    char node[16];
    snprintf(node, sizeof(node), "n%03d", i % 200);
    labelled_pod(f, name, NULL, node, i % 2 ? "old" : "g7"); /* g7 pods already run */
  }
  for (int g = 0; g < 100; g++) {
    char pg[16];
    snprintf(pg, sizeof(pg), "g%d", g);
    fx_pg(f, pg, "default", 10, "Inqueue");
    snprintf(app, sizeof(app), "g%d", g);
    for (int k = 0; k < 10; k++) {
      snprintf(name, sizeof(name), "g%d-%d", g, k);
      Kiln__Pod *p = labelled_pod(f, name, pg, NULL, app);
      required_anti(p, "app", app, "kubernetes.io/hostname");
      spread(p, 1, "zone", "DoNotSchedule", "app", app);
    }
  }
  fx_open(f, gang_yaml);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  sch_result *res = fx_run(f);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  print_message("scale: 1000 pods with terms, 200 nodes: %.3f s, %zu binds\n",
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
                res->nbinds);
  assert_int_equal(res->nbinds, 1000);
  /* Per gang: 10 distinct nodes, zones within 1 of each other. g7 already runs on the even
   * nodes (zones 0 and 2), so its new pods take odd nodes only, in zones 1 and 3. */
  int zones[100][4] = {{0}};
  int32_t seen[100][10];
  int nseen[100] = {0};
  for (size_t i = 0; i < res->nbinds; i++) {
    const sch_task *t = &f->snap->tasks[res->binds[i].task];
    int g = (int)strtol(sch_pod_label(t->pod, "app") + 1, NULL, 10);
    int32_t ni = res->binds[i].node;
    for (int k = 0; k < nseen[g]; k++)
      assert_int_not_equal(seen[g][k], ni);
    seen[g][nseen[g]++] = ni;
    if (g == 7)
      assert_int_equal(ni % 2, 1);
    zones[g][ni % 4]++;
  }
  for (int g = 0; g < 100; g++) {
    int lo = 99, hi = 0;
    for (int z = 0; z < 4; z++) {
      lo = zones[g][z] < lo ? zones[g][z] : lo;
      hi = zones[g][z] > hi ? zones[g][z] : hi;
    }
    if (g != 7 && hi - lo > 1)
      fail_msg("gang g%d spread %d..%d over zones", g, lo, hi);
  }
  sch_result_free(res);
  fx_free(f);
}

/* Without any term in the snapshot there is no state at all. */
static void test_no_terms_no_state(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_queue(f, "default", 1);
  fx_pg(f, "pg", "default", 1, "Inqueue");
  zone_node(f, "a", "z1");
  labelled_pod(f, "e", NULL, "a", "x");
  labelled_pod(f, "p", "pg", NULL, "x");
  fx_open(f, predicates_yaml);
  sch_ipa *a = (sch_ipa *)1;
  assert_int_equal(sch_ipa_new(f->snap, 1, &a), 0);
  assert_null(a);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_selectors_and_terms),
      cmocka_unit_test(test_anti_affinity_and_symmetry),
      cmocka_unit_test(test_affinity),
      cmocka_unit_test(test_gang_anti_affinity_session),
      cmocka_unit_test(test_gang_self_affinity_session),
      cmocka_unit_test(test_spread_filter),
      cmocka_unit_test(test_spread_gang_session),
      cmocka_unit_test(test_scores),
      cmocka_unit_test(test_session_accounting),
      cmocka_unit_test(test_no_terms_no_state),
      cmocka_unit_test(test_scale),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
