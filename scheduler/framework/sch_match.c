/* Matchers and score formulas of kube-scheduler's node filters and scores; see sch_match.h. */
#include "sch_match.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_str.h"
#include "sch_resource.h"

static bool str_empty(const char *s) {
  return s == NULL || s[0] == '\0';
}

const char *sch_node_label(const Kiln__Node *node, const char *key) {
  for (size_t i = 0; i < node->n_labels; i++) {
    if (kc_str_eq(node->labels[i]->key, key))
      return node->labels[i]->value ? node->labels[i]->value : "";
  }
  return NULL;
}

/* strconv.ParseInt(s, 10, 64): optional sign, decimal digits, nothing else. */
static bool parse_int64(const char *s, int64_t *out) {
  if (str_empty(s) || isspace((unsigned char)s[0]))
    return false;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0')
    return false;
  /* strtoll takes "0x" only with base 0 or 16, so base 10 rejects it already. */
  *out = (int64_t)v;
  return true;
}

static bool values_have(const Kiln__NodeSelectorRequirement *req, const char *v) {
  for (size_t i = 0; i < req->n_values; i++) {
    if (kc_str_eq(req->values[i], v))
      return true;
  }
  return false;
}

static bool match_field(const Kiln__NodeSelectorRequirement *req, const Kiln__Node *node) {
  /* nodeSelectorRequirementsAsFieldSelector: In/NotIn with exactly one value; the field set
   * of a node holds metadata.name only, other fields read as "". */
  if (req->n_values != 1)
    return false;
  const char *have = kc_str_eq(req->key, "metadata.name") ? node->name : "";
  bool eq = kc_str_eq(have, req->values[0]);
  if (kc_str_eq(req->operator_, "In"))
    return eq;
  if (kc_str_eq(req->operator_, "NotIn"))
    return !eq;
  return false;
}

bool sch_match_requirement(const Kiln__NodeSelectorRequirement *req, const Kiln__Node *node,
                           bool field) {
  if (req == NULL)
    return false;
  if (field)
    return match_field(req, node);
  const char *op = req->operator_;
  const char *have = sch_node_label(node, req->key);
  if (kc_str_eq(op, "In")) {
    if (req->n_values == 0)
      return false;
    return have != NULL && values_have(req, have);
  }
  if (kc_str_eq(op, "NotIn")) {
    if (req->n_values == 0)
      return false;
    return have == NULL || !values_have(req, have);
  }
  if (kc_str_eq(op, "Exists"))
    return req->n_values == 0 && have != NULL;
  if (kc_str_eq(op, "DoesNotExist"))
    return req->n_values == 0 && have == NULL;
  if (kc_str_eq(op, "Gt") || kc_str_eq(op, "Lt")) {
    int64_t want, got;
    if (req->n_values != 1 || !parse_int64(req->values[0], &want))
      return false;
    if (have == NULL || !parse_int64(have, &got))
      return false;
    return kc_str_eq(op, "Gt") ? got > want : got < want;
  }
  return false;
}

bool sch_match_term(const Kiln__NodeSelectorTerm *term, const Kiln__Node *node) {
  if (term == NULL || (term->n_match_expressions == 0 && term->n_match_fields == 0))
    return false;
  for (size_t i = 0; i < term->n_match_expressions; i++) {
    if (!sch_match_requirement(term->match_expressions[i], node, false))
      return false;
  }
  for (size_t i = 0; i < term->n_match_fields; i++) {
    if (!sch_match_requirement(term->match_fields[i], node, true))
      return false;
  }
  return true;
}

bool sch_match_node_selector(const Kiln__Pod *pod, const Kiln__Node *node) {
  for (size_t i = 0; i < pod->n_node_selector; i++) {
    const char *have = sch_node_label(node, pod->node_selector[i]->key);
    if (have == NULL || !kc_str_eq(have, pod->node_selector[i]->value))
      return false;
  }
  if (pod->n_required_node_terms == 0)
    return true;
  for (size_t i = 0; i < pod->n_required_node_terms; i++) {
    if (sch_match_term(pod->required_node_terms[i], node))
      return true;
  }
  return false;
}

int64_t sch_preferred_affinity_score(const Kiln__Pod *pod, const Kiln__Node *node) {
  int64_t score = 0;
  for (size_t i = 0; i < pod->n_preferred_node_terms; i++) {
    const Kiln__PreferredSchedulingTerm *t = pod->preferred_node_terms[i];
    if (t == NULL || t->weight == 0)
      continue;
    if (sch_match_term(t->preference, node))
      score += t->weight;
  }
  return score;
}

bool sch_toleration_tolerates(const Kiln__Toleration *tol, const Kiln__Taint *taint) {
  if (tol->effect != KILN__TAINT_EFFECT__TAINT_EFFECT_ALL && tol->effect != taint->effect)
    return false;
  if (!str_empty(tol->key) && !kc_str_eq(tol->key, taint->key))
    return false;
  switch (tol->operator_) {
  case KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS:
    return true;
  case KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EQUAL:
    return kc_str_eq(tol->value, taint->value);
  default:
    return false;
  }
}

bool sch_tolerations_tolerate(Kiln__Toleration *const *tols, size_t n, const Kiln__Taint *taint) {
  for (size_t i = 0; i < n; i++) {
    if (sch_toleration_tolerates(tols[i], taint))
      return true;
  }
  return false;
}

const Kiln__Taint *sch_untolerated_taint(const Kiln__Pod *pod, const Kiln__Node *node) {
  for (size_t i = 0; i < node->n_taints; i++) {
    const Kiln__Taint *t = node->taints[i];
    if (t->effect != KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE &&
        t->effect != KILN__TAINT_EFFECT__TAINT_EFFECT_NO_EXECUTE)
      continue;
    if (!sch_tolerations_tolerate(pod->tolerations, pod->n_tolerations, t))
      return t;
  }
  return NULL;
}

bool sch_unschedulable_fits(const Kiln__Pod *pod, const Kiln__Node *node) {
  if (!node->unschedulable)
    return true;
  Kiln__Taint t = KILN__TAINT__INIT;
  t.key = (char *)SCH_TAINT_UNSCHEDULABLE;
  t.value = (char *)"";
  t.effect = KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE;
  return sch_tolerations_tolerate(pod->tolerations, pod->n_tolerations, &t);
}

int64_t sch_intolerable_prefer_no_schedule(const Kiln__Pod *pod, const Kiln__Node *node) {
  int64_t count = 0;
  for (size_t i = 0; i < node->n_taints; i++) {
    const Kiln__Taint *t = node->taints[i];
    if (t->effect != KILN__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE)
      continue;
    bool tolerated = false;
    for (size_t j = 0; j < pod->n_tolerations && !tolerated; j++) {
      const Kiln__Toleration *tol = pod->tolerations[j];
      /* Only tolerations of effect PreferNoSchedule or empty take part (PreScore). */
      if (tol->effect != KILN__TAINT_EFFECT__TAINT_EFFECT_ALL &&
          tol->effect != KILN__TAINT_EFFECT__TAINT_EFFECT_PREFER_NO_SCHEDULE)
        continue;
      tolerated = sch_toleration_tolerates(tol, t);
    }
    if (!tolerated)
      count++;
  }
  return count;
}

static const char *port_ip(const Kiln__HostPort *p) {
  return str_empty(p->host_ip) ? "0.0.0.0" : p->host_ip;
}

static const char *port_proto(const Kiln__HostPort *p) {
  return str_empty(p->protocol) ? "TCP" : p->protocol;
}

bool sch_host_port_conflict(const Kiln__HostPort *want, Kiln__HostPort *const *used, size_t n) {
  if (want == NULL || want->port <= 0)
    return false;
  const char *ip = port_ip(want);
  const char *proto = port_proto(want);
  bool any_ip = strcmp(ip, "0.0.0.0") == 0;
  for (size_t i = 0; i < n; i++) {
    const Kiln__HostPort *u = used[i];
    if (u == NULL || u->port != want->port || !kc_str_eq(port_proto(u), proto))
      continue;
    const char *uip = port_ip(u);
    if (any_ip || strcmp(uip, "0.0.0.0") == 0 || strcmp(uip, ip) == 0)
      return true;
  }
  return false;
}

bool sch_host_ports_conflict(const Kiln__Pod *pod, Kiln__HostPort *const *used, size_t n) {
  for (size_t i = 0; i < pod->n_host_ports; i++) {
    if (sch_host_port_conflict(pod->host_ports[i], used, n))
      return true;
  }
  return false;
}

void sch_reason_insufficient(char *buf, size_t len, const char *resource) {
  if (len == 0)
    return;
  snprintf(buf, len, "Insufficient %s", resource ? resource : "");
}

void sch_reason_taint(char *buf, size_t len, const Kiln__Taint *taint) {
  if (len == 0)
    return;
  snprintf(buf, len, "node(s) had untolerated taint {%s: %s}", taint->key ? taint->key : "",
           taint->value ? taint->value : "");
}

int64_t sch_least_requested_score(int64_t requested, int64_t capacity) {
  if (capacity <= 0 || requested > capacity)
    return 0;
  /* In 128 bits: capacity may be near 2^63 (a node reporting a saturated amount). */
  return (int64_t)(((__int128)capacity - requested) * SCH_MAX_NODE_SCORE / capacity);
}

int64_t sch_most_requested_score(int64_t requested, int64_t capacity) {
  if (capacity <= 0)
    return 0;
  /* Pods without requests are counted at kube-scheduler's minimum, which can push the sum
   * past capacity; the score saturates instead of exceeding 100. */
  if (requested > capacity)
    requested = capacity;
  return (int64_t)((__int128)requested * SCH_MAX_NODE_SCORE / capacity);
}

int64_t sch_allocated_score(const int64_t *requested, const int64_t *allocatable,
                            const int64_t *weights, size_t n, bool most) {
  int64_t score = 0, weight_sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (allocatable[i] == 0)
      continue;
    int64_t s = most ? sch_most_requested_score(requested[i], allocatable[i])
                     : sch_least_requested_score(requested[i], allocatable[i]);
    score = sch_add_sat(score, sch_mul_sat(s, weights[i]));
    weight_sum = sch_add_sat(weight_sum, weights[i]);
  }
  if (weight_sum == 0)
    return 0;
  return score / weight_sum;
}

int64_t sch_balanced_score(const int64_t *requested, const int64_t *allocatable, size_t n) {
  double fractions[16];
  size_t m = 0;
  double total = 0;
  for (size_t i = 0; i < n && m < sizeof(fractions) / sizeof(fractions[0]); i++) {
    if (allocatable[i] == 0)
      continue;
    double f = (double)requested[i] / (double)allocatable[i];
    if (f > 1)
      f = 1;
    fractions[m++] = f;
    total += f;
  }
  double std = 0;
  if (m == 2) {
    std = fabs((fractions[0] - fractions[1]) / 2);
  } else if (m > 2) {
    double mean = total / (double)m, sum = 0;
    for (size_t i = 0; i < m; i++)
      sum += (fractions[i] - mean) * (fractions[i] - mean);
    std = sqrt(sum / (double)m);
  }
  return (int64_t)((1 - std) * (double)SCH_MAX_NODE_SCORE);
}

void sch_normalize_scores(int64_t *scores, size_t n, int64_t max_score, bool reverse) {
  int64_t highest = 0;
  for (size_t i = 0; i < n; i++) {
    if (scores[i] > highest)
      highest = scores[i];
  }
  if (highest == 0) {
    if (reverse) {
      for (size_t i = 0; i < n; i++)
        scores[i] = max_score;
    }
    return;
  }
  for (size_t i = 0; i < n; i++) {
    int64_t s = max_score * scores[i] / highest;
    scores[i] = reverse ? max_score - s : s;
  }
}

double sch_binpack_resource_score(double requested, double capacity, double used, int weight) {
  if (capacity == 0 || weight == 0)
    return 0;
  double after = requested + used;
  if (after > capacity)
    return 0;
  return after * (double)weight / capacity;
}

/* A pod message carrying only the fields the node-static checks read; the arrays are
 * borrowed, and packing does not write through them. */
static void node_static_view(Kiln__Pod *view, const Kiln__Pod *pod) {
  view->n_node_selector = pod->n_node_selector;
  view->node_selector = pod->node_selector;
  view->n_required_node_terms = pod->n_required_node_terms;
  view->required_node_terms = pod->required_node_terms;
  view->n_preferred_node_terms = pod->n_preferred_node_terms;
  view->preferred_node_terms = pod->preferred_node_terms;
  view->n_tolerations = pod->n_tolerations;
  view->tolerations = pod->tolerations;
}

static int pack_key(sch_pod_key *k, const Kiln__Pod *view);

int sch_pod_key_set(sch_pod_key *k, const Kiln__Pod *pod) {
  Kiln__Pod view = KILN__POD__INIT;
  node_static_view(&view, pod);
  return pack_key(k, &view);
}

int sch_pod_interpod_key_set(sch_pod_key *k, const Kiln__Pod *pod) {
  Kiln__Pod view = KILN__POD__INIT;
  node_static_view(&view, pod);
  view.namespace_ = pod->namespace_;
  view.packed_labels = pod->packed_labels;
  view.inter_pod = pod->inter_pod;
  return pack_key(k, &view);
}

static int pack_key(sch_pod_key *k, const Kiln__Pod *view) {
  size_t need = kiln__pod__get_packed_size(view);
  if (need + 1 > k->cap) {
    size_t cap = k->cap ? k->cap : 64;
    while (cap < need + 1)
      cap *= 2;
    uint8_t *b = realloc(k->buf, cap);
    if (b == NULL) {
      k->len = 0;
      return KC_ENOMEM;
    }
    k->buf = b;
    k->cap = cap;
  }
  /* A leading 1 marks a valid key, so that an empty key (0 bytes) matches nothing. */
  k->buf[0] = 1;
  k->len = 1 + kiln__pod__pack(view, k->buf + 1);
  return 0;
}

bool sch_pod_key_equal(const sch_pod_key *a, const sch_pod_key *b) {
  return a->len > 0 && a->len == b->len && memcmp(a->buf, b->buf, a->len) == 0;
}

void sch_pod_key_close(sch_pod_key *k) {
  free(k->buf);
  *k = (sch_pod_key){0};
}

/* ---- label selectors and inter-pod affinity terms ---- */

const char *sch_pod_label(const Kiln__Pod *pod, const char *key) {
  const char *s = (const char *)pod->packed_labels.data;
  if (s == NULL)
    return NULL;
  const char *end = s + pod->packed_labels.len;
  /* key NUL value NUL ...; a truncated tail (never written by the codec) ends the scan. */
  while (s != NULL && s < end) {
    const char *k = s;
    const char *knul = memchr(k, '\0', (size_t)(end - k));
    if (knul == NULL)
      break;
    const char *v = knul + 1;
    const char *vnul = v < end ? memchr(v, '\0', (size_t)(end - v)) : NULL;
    if (vnul == NULL)
      break;
    if (strcmp(k, key) == 0)
      return v;
    s = vnul + 1;
  }
  return NULL;
}

static const char *pod_label_fn(const void *pod, const char *key) {
  return sch_pod_label(pod, key);
}

const char *sch_namespace_label(const void *ns_name, const char *key) {
  return kc_str_eq(key, SCH_LABEL_NAMESPACE_NAME) ? (const char *)ns_name : NULL;
}

static bool strv_has(char *const *v, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (kc_str_eq(v[i], s))
      return true;
  return false;
}

static bool requirement_holds(const Kiln__LabelSelectorRequirement *r, sch_label_fn get,
                              const void *obj) {
  const char *have = get(obj, r->key ? r->key : "");
  const char *op = r->operator_;
  if (kc_str_eq(op, "In"))
    return r->n_values > 0 && have != NULL && strv_has(r->values, r->n_values, have);
  if (kc_str_eq(op, "NotIn"))
    return r->n_values > 0 && (have == NULL || !strv_has(r->values, r->n_values, have));
  if (kc_str_eq(op, "Exists"))
    return r->n_values == 0 && have != NULL;
  if (kc_str_eq(op, "DoesNotExist"))
    return r->n_values == 0 && have == NULL;
  return false;
}

bool sch_selector_matches(const Kiln__LabelSelector *sel, sch_label_fn get, const void *obj) {
  if (sel == NULL)
    return false;
  for (size_t i = 0; i < sel->n_match_labels; i++) {
    const char *have = get(obj, sel->match_labels[i]->key ? sel->match_labels[i]->key : "");
    if (have == NULL || !kc_str_eq(have, sel->match_labels[i]->value))
      return false;
  }
  for (size_t i = 0; i < sel->n_match_expressions; i++)
    if (!requirement_holds(sel->match_expressions[i], get, obj))
      return false;
  return true;
}

bool sch_selector_empty(const Kiln__LabelSelector *sel) {
  return sel != NULL && sel->n_match_labels == 0 && sel->n_match_expressions == 0;
}

/* matchLabelKeys (equal) and mismatchLabelKeys (not equal): a key owner does not carry adds
 * nothing, as the API server's merge skips it. */
static bool label_keys_hold(char *const *keys, size_t n, bool equal, const Kiln__Pod *owner,
                            const Kiln__Pod *target) {
  for (size_t i = 0; i < n; i++) {
    const char *want = sch_pod_label(owner, keys[i] ? keys[i] : "");
    if (want == NULL)
      continue;
    const char *have = sch_pod_label(target, keys[i]);
    bool same = have != NULL && kc_str_eq(have, want);
    if (same != equal)
      return false;
  }
  return true;
}

bool sch_affinity_term_matches(const Kiln__PodAffinityTerm *term, const Kiln__Pod *owner,
                               const Kiln__Pod *target) {
  const char *ns = target->namespace_ ? target->namespace_ : "";
  bool in_ns;
  if (term->n_namespaces == 0 && term->namespace_selector == NULL)
    in_ns = kc_str_eq(owner->namespace_, ns);
  else
    in_ns = strv_has(term->namespaces, term->n_namespaces, ns) ||
            sch_selector_matches(term->namespace_selector, sch_namespace_label, ns);
  if (!in_ns || term->label_selector == NULL)
    return false;
  return sch_selector_matches(term->label_selector, pod_label_fn, target) &&
         label_keys_hold(term->match_label_keys, term->n_match_label_keys, true, owner, target) &&
         label_keys_hold(term->mismatch_label_keys, term->n_mismatch_label_keys, false, owner,
                         target);
}

bool sch_spread_selects(const Kiln__TopologySpreadConstraint *c, const Kiln__Pod *owner,
                        const Kiln__Pod *target) {
  if (c->label_selector == NULL)
    return false;
  bool narrowed = false;
  for (size_t i = 0; i < c->n_match_label_keys && !narrowed; i++)
    narrowed = sch_pod_label(owner, c->match_label_keys[i] ? c->match_label_keys[i] : "") != NULL;
  if (sch_selector_empty(c->label_selector) && !narrowed)
    return false;
  return sch_selector_matches(c->label_selector, pod_label_fn, target) &&
         label_keys_hold(c->match_label_keys, c->n_match_label_keys, true, owner, target);
}

bool sch_pod_has_interpod(const Kiln__Pod *pod) {
  const Kiln__InterPodTerms *t = pod->inter_pod;
  return t != NULL &&
         (t->n_required_affinity || t->n_preferred_affinity || t->n_required_anti_affinity ||
          t->n_preferred_anti_affinity || t->n_topology_spread_constraints);
}
