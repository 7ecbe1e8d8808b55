/* Inter-pod affinity and topology spread over a session; see sch_interpod.h. */
#include "sch_interpod.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_strmap.h"
#include "sch_match.h"

#define HOSTNAME_KEY "kubernetes.io/hostname"

/* One topology key: the domain of every node (-1: the node lacks the label). */
typedef struct topo_key {
  const char *name; /* borrowed from a pod's term */
  int32_t *dom;     /* per node */
  int32_t ndom;
  size_t off; /* of this key's domains in the count arrays */
} topo_key;

/* One spread constraint of the current shape. */
typedef struct spread {
  const Kiln__TopologySpreadConstraint *c;
  int key;
  bool filter;   /* DoNotSchedule; else ScheduleAnyway (scored) */
  bool self;     /* the pod matches its own selector */
  uint8_t *elig; /* per node: counted (all the group's keys, inclusion policies) */
  int64_t *cnt;  /* per domain of key */
  uint8_t *present;
  int32_t npresent;
  int64_t min;
  bool min_dirty;
} spread;

struct sch_ipa {
  const sch_snapshot *snap;
  int64_t hard_weight;
  topo_key *keys;
  int nkeys;
  size_t ndoms;        /* sum of the keys' ndom */
  int32_t *with_terms; /* tasks whose pods carry terms */
  int32_t nwith_terms;
  /* The current shape. */
  bool valid;
  const sch_task *task; /* the last task looked at */
  const Kiln__Pod *pod; /* its exemplar */
  bool pod_terms;
  sch_pod_key key, scratch;
  int64_t *aff, *anti, *exist, *score; /* ndoms each */
  int64_t aff_nonzero;
  bool score_touched;
  spread *sp;
  size_t nsp, cap_sp;
  int64_t *raw; /* scoring scratch */
  uint8_t *seen;
  size_t cap_raw;
};

static const Kiln__InterPodTerms no_terms = KILN__INTER_POD_TERMS__INIT;

/* The pod's terms (borrowed); none is an empty set. */
static const Kiln__InterPodTerms *terms(const Kiln__Pod *p) {
  return p->inter_pod ? p->inter_pod : &no_terms;
}

static const char *pod_label(const void *pod, const char *key) {
  return sch_pod_label(pod, key);
}

/* ---- keys and domains ---- */

static int key_index(const sch_ipa *a, const char *name) {
  for (int i = 0; i < a->nkeys; i++)
    if (strcmp(a->keys[i].name, name) == 0)
      return i;
  return -1;
}

static int add_key(sch_ipa *a, const char *name, int *cap) {
  if (name == NULL || key_index(a, name) >= 0)
    return 0;
  if (a->nkeys == *cap) {
    int ncap = *cap ? *cap * 2 : 4;
    topo_key *k = realloc(a->keys, (size_t)ncap * sizeof(*k));
    if (k == NULL)
      return KC_ENOMEM;
    a->keys = k;
    *cap = ncap;
  }
  a->keys[a->nkeys++] = (topo_key){.name = name};
  return 0;
}

static int add_term_keys(sch_ipa *a, const Kiln__Pod *p, int *cap) {
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < terms(p)->n_required_affinity; i++)
    rc = add_key(a, terms(p)->required_affinity[i]->topology_key, cap);
  for (size_t i = 0; rc == 0 && i < terms(p)->n_required_anti_affinity; i++)
    rc = add_key(a, terms(p)->required_anti_affinity[i]->topology_key, cap);
  for (size_t i = 0; rc == 0 && i < terms(p)->n_preferred_affinity; i++)
    if (terms(p)->preferred_affinity[i]->pod_affinity_term)
      rc = add_key(a, terms(p)->preferred_affinity[i]->pod_affinity_term->topology_key, cap);
  for (size_t i = 0; rc == 0 && i < terms(p)->n_preferred_anti_affinity; i++)
    if (terms(p)->preferred_anti_affinity[i]->pod_affinity_term)
      rc = add_key(a, terms(p)->preferred_anti_affinity[i]->pod_affinity_term->topology_key, cap);
  for (size_t i = 0; rc == 0 && i < terms(p)->n_topology_spread_constraints; i++)
    rc = add_key(a, terms(p)->topology_spread_constraints[i]->topology_key, cap);
  return rc;
}

/* Interns every node's value of each key. */
static int build_domains(sch_ipa *a) {
  const sch_snapshot *snap = a->snap;
  for (int k = 0; k < a->nkeys; k++) {
    topo_key *tk = &a->keys[k];
    tk->dom = malloc((size_t)(snap->nnodes ? snap->nnodes : 1) * sizeof(*tk->dom));
    if (tk->dom == NULL)
      return KC_ENOMEM;
    kc_strmap values;
    kc_strmap_init(&values, KC_STRMAP_BORROW_KEYS);
    for (int32_t n = 0; n < snap->nnodes; n++) {
      const char *v = snap->nodes[n].node ? sch_node_label(snap->nodes[n].node, tk->name) : NULL;
      tk->dom[n] = -1;
      if (v == NULL)
        continue;
      void *got = kc_strmap_get(&values, v);
      if (got != NULL) {
        tk->dom[n] = (int32_t)((intptr_t)got - 1);
        continue;
      }
      if (kc_strmap_put(&values, v, (void *)(intptr_t)(tk->ndom + 1), NULL) < 0) {
        kc_strmap_close(&values, NULL);
        return KC_ENOMEM;
      }
      tk->dom[n] = tk->ndom++;
    }
    kc_strmap_close(&values, NULL);
    tk->off = a->ndoms;
    a->ndoms += (size_t)tk->ndom;
  }
  return 0;
}

/* The count slot of key name for node ni, or -1 (unknown key, or the node lacks it). */
static ptrdiff_t slot(const sch_ipa *a, const char *name, int32_t ni) {
  int k = name ? key_index(a, name) : -1;
  if (k < 0 || ni < 0)
    return -1;
  int32_t d = a->keys[k].dom[ni];
  return d < 0 ? -1 : (ptrdiff_t)(a->keys[k].off + (size_t)d);
}

int sch_ipa_new(const sch_snapshot *snap, int64_t hard_weight, sch_ipa **out) {
  *out = NULL;
  int32_t with = 0;
  for (int32_t i = 0; i < snap->ntasks; i++)
    if (snap->tasks[i].pod && sch_pod_has_interpod(snap->tasks[i].pod))
      with++;
  if (with == 0)
    return 0;
  sch_ipa *a = calloc(1, sizeof(*a));
  if (a == NULL)
    return KC_ENOMEM;
  a->snap = snap;
  a->hard_weight = hard_weight;
  int rc = KC_ENOMEM;
  a->with_terms = malloc((size_t)with * sizeof(*a->with_terms));
  if (a->with_terms == NULL)
    goto fail;
  int cap = 0;
  for (int32_t i = 0; i < snap->ntasks; i++) {
    const Kiln__Pod *p = snap->tasks[i].pod;
    if (p && sch_pod_has_interpod(p)) {
      a->with_terms[a->nwith_terms++] = i;
      if ((rc = add_term_keys(a, p, &cap)) < 0)
        goto fail;
    }
  }
  if ((rc = build_domains(a)) < 0)
    goto fail;
  rc = KC_ENOMEM;
  size_t nd = a->ndoms ? a->ndoms : 1;
  a->aff = calloc(nd, sizeof(int64_t));
  a->anti = calloc(nd, sizeof(int64_t));
  a->exist = calloc(nd, sizeof(int64_t));
  a->score = calloc(nd, sizeof(int64_t));
  if (!a->aff || !a->anti || !a->exist || !a->score)
    goto fail;
  *out = a;
  return 0;
fail:
  sch_ipa_free(a);
  return rc;
}

static void free_spreads(sch_ipa *a) {
  for (size_t i = 0; i < a->nsp; i++) {
    free(a->sp[i].elig);
    free(a->sp[i].cnt);
    free(a->sp[i].present);
  }
  a->nsp = 0;
}

void sch_ipa_free(sch_ipa *a) {
  if (a == NULL)
    return;
  for (int k = 0; k < a->nkeys; k++)
    free(a->keys[k].dom);
  free(a->keys);
  free(a->with_terms);
  free(a->aff);
  free(a->anti);
  free(a->exist);
  free(a->score);
  free_spreads(a);
  free(a->sp);
  free(a->raw);
  free(a->seen);
  sch_pod_key_close(&a->key);
  sch_pod_key_close(&a->scratch);
  free(a);
}

static void on_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  (void)ssn;
  sch_ipa_placed(ctx, t);
}

static void on_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  (void)ssn;
  sch_ipa_removed(ctx, t);
}

int sch_ipa_acquire(sch_session *ssn, sch_ipa **out) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  *out = NULL;
  if (snap->interpod != NULL) {
    snap->interpod_refs++;
    *out = snap->interpod;
    return 0;
  }
  if (snap->interpod_none)
    return 0;
  sch_ipa *a = NULL;
  int rc = sch_ipa_new(snap, 1, &a);
  if (rc < 0)
    return rc;
  if (a == NULL) {
    snap->interpod_none = true;
    return 0;
  }
  if ((rc = sch_add_event_handler(ssn, on_allocate, on_deallocate, a)) < 0) {
    sch_ipa_free(a);
    return rc;
  }
  snap->interpod = a;
  snap->interpod_refs = 1;
  *out = a;
  return 0;
}

void sch_ipa_release(sch_session *ssn, sch_ipa *a) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  if (a == NULL || snap->interpod != a || --snap->interpod_refs > 0)
    return;
  sch_ipa_free(a);
  snap->interpod = NULL;
}

/* ---- counting ---- */

/* Whether a task on a node counts as an existing pod: an evicted one (Releasing without a
 * deletion timestamp: it left in this session) does not. */
static bool counted(const sch_task *x) {
  return x->node >= 0 && x->pod != NULL &&
         !(x->status == SCH_TASK_RELEASING && x->pod->deletion_time == 0);
}

static void bump(int64_t *v, ptrdiff_t s, int64_t by, int64_t *nonzero) {
  if (s < 0 || by == 0)
    return;
  bool was = v[s] != 0;
  v[s] += by;
  if (nonzero)
    *nonzero += (v[s] != 0) - was;
}

static bool matches_all(const Kiln__Pod *owner, Kiln__PodAffinityTerm *const *terms, size_t n,
                        const Kiln__Pod *target) {
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!sch_affinity_term_matches(terms[i], owner, target))
      return false;
  return true;
}

static void score_terms(sch_ipa *a, Kiln__WeightedPodAffinityTerm *const *terms, size_t n,
                        const Kiln__Pod *owner, const Kiln__Pod *target, int32_t ni, int64_t mult) {
  for (size_t i = 0; i < n; i++) {
    const Kiln__PodAffinityTerm *t = terms[i]->pod_affinity_term;
    if (t == NULL || terms[i]->weight == 0 || !sch_affinity_term_matches(t, owner, target))
      continue;
    ptrdiff_t s = slot(a, t->topology_key, ni);
    if (s >= 0) {
      a->score[s] += (int64_t)terms[i]->weight * mult;
      a->score_touched = true;
    }
  }
}

/* Adds (sign 1) or removes (-1) the existing pod of task x on node ni. */
static void account(sch_ipa *a, const sch_task *x, int32_t ni, int64_t sign) {
  const Kiln__Pod *P = a->pod, *X = x->pod;
  if (X == NULL || ni < 0 || (!a->pod_terms && !sch_pod_has_interpod(X)))
    return;
  /* The incoming pod's required terms. */
  if (terms(P)->n_required_affinity &&
      matches_all(P, terms(P)->required_affinity, terms(P)->n_required_affinity, X))
    for (size_t i = 0; i < terms(P)->n_required_affinity; i++)
      bump(a->aff, slot(a, terms(P)->required_affinity[i]->topology_key, ni), sign,
           &a->aff_nonzero);
  for (size_t i = 0; i < terms(P)->n_required_anti_affinity; i++) {
    const Kiln__PodAffinityTerm *t = terms(P)->required_anti_affinity[i];
    if (sch_affinity_term_matches(t, P, X))
      bump(a->anti, slot(a, t->topology_key, ni), sign, NULL);
  }
  /* The existing pod's required anti-affinity against the incoming pod. */
  for (size_t i = 0; i < terms(X)->n_required_anti_affinity; i++) {
    const Kiln__PodAffinityTerm *t = terms(X)->required_anti_affinity[i];
    if (sch_affinity_term_matches(t, X, P))
      bump(a->exist, slot(a, t->topology_key, ni), sign, NULL);
  }
  /* Scores, both directions (InterPodAffinity processExistingPod). */
  score_terms(a, terms(P)->preferred_affinity, terms(P)->n_preferred_affinity, P, X, ni, sign);
  score_terms(a, terms(P)->preferred_anti_affinity, terms(P)->n_preferred_anti_affinity, P, X, ni,
              -sign);
  if (a->hard_weight > 0)
    for (size_t i = 0; i < terms(X)->n_required_affinity; i++) {
      const Kiln__PodAffinityTerm *t = terms(X)->required_affinity[i];
      ptrdiff_t s = sch_affinity_term_matches(t, X, P) ? slot(a, t->topology_key, ni) : -1;
      if (s >= 0) {
        a->score[s] += a->hard_weight * sign;
        a->score_touched = true;
      }
    }
  score_terms(a, terms(X)->preferred_affinity, terms(X)->n_preferred_affinity, X, P, ni, sign);
  score_terms(a, terms(X)->preferred_anti_affinity, terms(X)->n_preferred_anti_affinity, X, P, ni,
              -sign);
  /* Spread: matching pods of the same namespace, terminating ones left out. */
  if (a->nsp == 0 || X->deletion_time != 0 ||
      strcmp(X->namespace_ ? X->namespace_ : "", P->namespace_ ? P->namespace_ : "") != 0)
    return;
  for (size_t i = 0; i < a->nsp; i++) {
    spread *sp = &a->sp[i];
    int32_t d = a->keys[sp->key].dom[ni];
    if (!sp->elig[ni] || d < 0 || !sch_spread_selects(sp->c, P, X))
      continue;
    sp->cnt[d] += sign;
    sp->min_dirty = true;
  }
}

static bool has_all_keys(const sch_ipa *a, const Kiln__Pod *P, bool filter, int32_t ni) {
  for (size_t i = 0; i < terms(P)->n_topology_spread_constraints; i++) {
    const Kiln__TopologySpreadConstraint *c = terms(P)->topology_spread_constraints[i];
    bool f = c->when_unsatisfiable == NULL || strcmp(c->when_unsatisfiable, "ScheduleAnyway") != 0;
    if (f == filter && slot(a, c->topology_key, ni) < 0)
      return false;
  }
  return true;
}

static bool policy_is(const char *v, const char *want, bool dflt) {
  return v == NULL || v[0] == '\0' ? dflt : strcmp(v, want) == 0;
}

/* The spread constraints of the shape, with the nodes each counts on. */
static int build_spreads(sch_ipa *a) {
  const Kiln__Pod *P = a->pod;
  const sch_snapshot *snap = a->snap;
  free_spreads(a);
  if (terms(P)->n_topology_spread_constraints > a->cap_sp) {
    spread *v = realloc(a->sp, terms(P)->n_topology_spread_constraints * sizeof(*v));
    if (v == NULL)
      return KC_ENOMEM;
    a->sp = v;
    a->cap_sp = terms(P)->n_topology_spread_constraints;
  }
  for (size_t i = 0; i < terms(P)->n_topology_spread_constraints; i++) {
    const Kiln__TopologySpreadConstraint *c = terms(P)->topology_spread_constraints[i];
    int k = c->topology_key ? key_index(a, c->topology_key) : -1;
    if (k < 0)
      continue; /* an empty key: the API refuses it */
    spread *sp = &a->sp[a->nsp];
    *sp = (spread){.c = c, .key = k, .min_dirty = true};
    sp->filter =
        c->when_unsatisfiable == NULL || strcmp(c->when_unsatisfiable, "ScheduleAnyway") != 0;
    sp->self = c->label_selector != NULL && sch_selector_matches(c->label_selector, pod_label, P);
    size_t nd = (size_t)(a->keys[k].ndom ? a->keys[k].ndom : 1);
    sp->elig = calloc((size_t)(snap->nnodes ? snap->nnodes : 1), 1);
    sp->cnt = calloc(nd, sizeof(*sp->cnt));
    sp->present = calloc(nd, 1);
    a->nsp++;
    if (!sp->elig || !sp->cnt || !sp->present)
      return KC_ENOMEM;
    bool honor_affinity = policy_is(c->node_affinity_policy, "Honor", true);
    bool honor_taints = policy_is(c->node_taints_policy, "Honor", false);
    for (int32_t n = 0; n < snap->nnodes; n++) {
      const Kiln__Node *node = snap->nodes[n].node;
      int32_t d = a->keys[k].dom[n];
      if (node == NULL || d < 0 || !has_all_keys(a, P, sp->filter, n))
        continue;
      if (honor_affinity && !sch_match_node_selector(P, node))
        continue;
      if (honor_taints && sch_untolerated_taint(P, node) != NULL)
        continue;
      sp->elig[n] = 1;
      if (!sp->present[d]) {
        sp->present[d] = 1;
        sp->npresent++;
      }
    }
  }
  return 0;
}

/* Makes the counts those of t's shape. */
static int use_shape(sch_ipa *a, const sch_task *t) {
  if (a->task == t && a->valid)
    return 0;
  a->task = t;
  int rc = sch_pod_interpod_key_set(&a->scratch, t->pod);
  if (rc < 0) {
    a->valid = false;
    return rc;
  }
  if (a->valid && sch_pod_key_equal(&a->scratch, &a->key)) {
    a->pod = t->pod; /* the same shape: any exemplar will do */
    return 0;
  }
  sch_pod_key tmp = a->key;
  a->key = a->scratch;
  a->scratch = tmp;
  a->valid = false;
  a->pod = t->pod;
  a->pod_terms = sch_pod_has_interpod(t->pod);
  size_t nd = a->ndoms ? a->ndoms : 1;
  memset(a->aff, 0, nd * sizeof(int64_t));
  memset(a->anti, 0, nd * sizeof(int64_t));
  memset(a->exist, 0, nd * sizeof(int64_t));
  memset(a->score, 0, nd * sizeof(int64_t));
  a->aff_nonzero = 0;
  a->score_touched = false;
  if ((rc = build_spreads(a)) < 0) {
    free_spreads(a);
    a->key.len = 0;
    return rc;
  }
  const sch_snapshot *snap = a->snap;
  if (a->pod_terms) {
    for (int32_t n = 0; n < snap->nnodes; n++)
      for (int32_t x = snap->nodes[n].task_head; x >= 0; x = snap->tasks[x].node_next)
        if (counted(&snap->tasks[x]))
          account(a, &snap->tasks[x], n, 1);
  } else {
    /* Only pods with terms of their own can say anything about a pod without any. */
    for (int32_t i = 0; i < a->nwith_terms; i++) {
      const sch_task *x = &snap->tasks[a->with_terms[i]];
      if (counted(x))
        account(a, x, x->node, 1);
    }
  }
  a->valid = true;
  return 0;
}

void sch_ipa_placed(sch_ipa *a, const sch_task *t) {
  if (a && a->valid && counted(t))
    account(a, t, t->node, 1);
}

void sch_ipa_removed(sch_ipa *a, const sch_task *t) {
  if (a == NULL || !a->valid)
    return;
  if (t->node >= 0 && !counted(t))
    account(a, t, t->node, -1); /* evicted: still on its node, no longer counted */
  else
    a->valid = false; /* its node is gone from the task: count again when next asked */
}

/* ---- filter ---- */

static sch_ipa_verdict interpod_filter(sch_ipa *a, const Kiln__Pod *P, int32_t ni);
static sch_ipa_verdict spread_filter(sch_ipa *a, int32_t ni);

static int64_t spread_min(sch_ipa *a, spread *sp) {
  if (!sp->min_dirty)
    return sp->min;
  int64_t m = INT32_MAX;
  const topo_key *k = &a->keys[sp->key];
  for (int32_t d = 0; d < k->ndom; d++)
    if (sp->present[d] && sp->cnt[d] < m)
      m = sp->cnt[d];
  sp->min = m;
  sp->min_dirty = false;
  return m;
}

sch_ipa_verdict sch_ipa_filter(sch_ipa *a, const sch_task *t, int32_t ni, unsigned checks) {
  if (a == NULL || t->pod == NULL || use_shape(a, t) < 0)
    return SCH_IPA_FIT; /* out of memory: the constraint is not enforced rather than all nodes lost
                         */
  const Kiln__Pod *P = a->pod;
  if (checks & SCH_IPA_CHECK_AFFINITY) {
    sch_ipa_verdict v = interpod_filter(a, P, ni);
    if (v != SCH_IPA_FIT)
      return v;
  }
  if (checks & SCH_IPA_CHECK_SPREAD)
    return spread_filter(a, ni);
  return SCH_IPA_FIT;
}

static sch_ipa_verdict interpod_filter(sch_ipa *a, const Kiln__Pod *P, int32_t ni) {
  if (terms(P)->n_required_affinity) {
    bool exist = true;
    for (size_t i = 0; i < terms(P)->n_required_affinity; i++) {
      ptrdiff_t s = slot(a, terms(P)->required_affinity[i]->topology_key, ni);
      if (s < 0)
        return SCH_IPA_AFFINITY; /* every topology label must exist on the node */
      if (a->aff[s] <= 0)
        exist = false;
    }
    /* The first pod of a group with affinity to itself. */
    if (!exist && !(a->aff_nonzero == 0 &&
                    matches_all(P, terms(P)->required_affinity, terms(P)->n_required_affinity, P)))
      return SCH_IPA_AFFINITY;
  }
  for (size_t i = 0; i < terms(P)->n_required_anti_affinity; i++) {
    ptrdiff_t s = slot(a, terms(P)->required_anti_affinity[i]->topology_key, ni);
    if (s >= 0 && a->anti[s] > 0)
      return SCH_IPA_ANTI_AFFINITY;
  }
  for (int k = 0; k < a->nkeys; k++) {
    int32_t d = a->keys[k].dom[ni];
    if (d >= 0 && a->exist[a->keys[k].off + (size_t)d] > 0)
      return SCH_IPA_EXISTING_ANTI;
  }
  return SCH_IPA_FIT;
}

static sch_ipa_verdict spread_filter(sch_ipa *a, int32_t ni) {
  for (size_t i = 0; i < a->nsp; i++) {
    spread *sp = &a->sp[i];
    if (!sp->filter)
      continue;
    int32_t d = a->keys[sp->key].dom[ni];
    if (d < 0)
      return SCH_IPA_SPREAD_LABEL;
    int64_t min = spread_min(a, sp);
    int32_t min_domains = sp->c->min_domains > 0 ? sp->c->min_domains : 1;
    if (sp->npresent < min_domains)
      min = 0;
    int64_t skew = sp->cnt[d] + (sp->self ? 1 : 0) - min;
    if (skew > (int64_t)sp->c->max_skew)
      return SCH_IPA_SPREAD;
  }
  return SCH_IPA_FIT;
}

/* ---- scores ---- */

static int scratch(sch_ipa *a, size_t n) {
  size_t need = n > (size_t)a->snap->nnodes ? n : (size_t)a->snap->nnodes;
  if (need <= a->cap_raw)
    return 0;
  int64_t *r = realloc(a->raw, need * sizeof(*r));
  if (r == NULL)
    return KC_ENOMEM;
  a->raw = r;
  uint8_t *s = realloc(a->seen, need);
  if (s == NULL)
    return KC_ENOMEM;
  a->seen = s;
  a->cap_raw = need;
  return 0;
}

static void affinity_scores(sch_ipa *a, const int32_t *nodes, size_t n, int64_t *out) {
  if (!a->score_touched)
    return;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < n; i++) {
    int64_t s = 0;
    for (int k = 0; k < a->nkeys; k++) {
      int32_t d = a->keys[k].dom[nodes[i]];
      if (d >= 0)
        s += a->score[a->keys[k].off + (size_t)d];
    }
    out[i] = s;
    if (s < lo)
      lo = s;
    if (s > hi)
      hi = s;
  }
  /* Min-max to 0..100, truncated as Go's int64(float64) does. */
  for (size_t i = 0; i < n; i++)
    out[i] =
        hi > lo
            ? (int64_t)((double)SCH_MAX_NODE_SCORE * ((double)(out[i] - lo) / (double)(hi - lo)))
            : 0;
}

static void spread_scores(sch_ipa *a, const int32_t *nodes, size_t n, int64_t *out) {
  const Kiln__Pod *P = a->pod;
  bool any = false;
  for (size_t c = 0; c < a->nsp; c++)
    any = any || !a->sp[c].filter;
  if (!any)
    return;
  /* Nodes without every ScheduleAnyway key are ignored (score 0). */
  uint8_t *ignored = a->seen;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    ignored[i] = !has_all_keys(a, P, false, nodes[i]);
    kept += !ignored[i];
  }
  for (size_t i = 0; i < n; i++)
    out[i] = 0;
  double *w = calloc(a->nsp, sizeof(*w));
  uint8_t *dseen = NULL;
  if (w == NULL)
    return;
  for (size_t c = 0; c < a->nsp; c++) {
    spread *sp = &a->sp[c];
    if (sp->filter)
      continue;
    size_t size = 0;
    if (strcmp(a->keys[sp->key].name, HOSTNAME_KEY) == 0) {
      size = kept;
    } else {
      const topo_key *k = &a->keys[sp->key];
      dseen = calloc((size_t)(k->ndom ? k->ndom : 1), 1);
      if (dseen == NULL) {
        free(w);
        return;
      }
      for (size_t i = 0; i < n; i++) {
        int32_t d = k->dom[nodes[i]];
        if (!ignored[i] && d >= 0 && !dseen[d]) {
          dseen[d] = 1;
          size++;
        }
      }
      free(dseen);
    }
    w[c] = log((double)size + 2);
  }
  int64_t lo = INT64_MAX, hi = 0;
  for (size_t i = 0; i < n; i++) {
    if (ignored[i])
      continue;
    double s = 0;
    for (size_t c = 0; c < a->nsp; c++) {
      spread *sp = &a->sp[c];
      int32_t d = a->keys[sp->key].dom[nodes[i]];
      if (sp->filter || d < 0)
        continue;
      s += (double)sp->cnt[d] * w[c] + (double)(sp->c->max_skew - 1);
    }
    out[i] = (int64_t)llround(s);
    if (out[i] < lo)
      lo = out[i];
    if (out[i] > hi)
      hi = out[i];
  }
  free(w);
  /* Fewer matching pods score higher; every kept node scores 100 when all are 0. */
  for (size_t i = 0; i < n; i++) {
    if (ignored[i])
      out[i] = 0;
    else if (hi == 0)
      out[i] = SCH_MAX_NODE_SCORE;
    else
      out[i] = SCH_MAX_NODE_SCORE * (hi + lo - out[i]) / hi;
  }
}

int sch_ipa_scores(sch_ipa *a, const sch_task *t, const int32_t *nodes, size_t n, int64_t *aff,
                   int64_t *spread_out) {
  for (size_t i = 0; i < n; i++) {
    if (aff)
      aff[i] = 0;
    if (spread_out)
      spread_out[i] = 0;
  }
  if (a == NULL || t->pod == NULL || n == 0)
    return 0;
  int rc = use_shape(a, t);
  if (rc == 0)
    rc = scratch(a, n);
  if (rc < 0)
    return rc;
  if (aff)
    affinity_scores(a, nodes, n, aff);
  if (spread_out)
    spread_scores(a, nodes, n, spread_out);
  return 0;
}
