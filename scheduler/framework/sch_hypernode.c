/* The HyperNode tree of a snapshot: see sch_hypernode.h. */
#include "sch_hypernode.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sch_framework.h"
#include "sch_match.h"

typedef struct {
  int32_t *v;
  int32_t n, cap;
} ibuf;

static int ibuf_push(ibuf *b, int32_t x) {
  if (b->n == b->cap) {
    int32_t cap = b->cap ? b->cap * 2 : 16;
    int32_t *nv = realloc(b->v, (size_t)cap * sizeof(*nv));
    if (nv == NULL)
      return KC_ENOMEM;
    b->v = nv;
    b->cap = cap;
  }
  b->v[b->n++] = x;
  return 0;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

static const char *hn_name(const Kiln__HyperNode *h) {
  return h && h->metadata && h->metadata->name ? h->metadata->name : "";
}

static int cmp_hn(const void *a, const void *b) {
  return strcmp(hn_name(*(const Kiln__HyperNode *const *)a),
                hn_name(*(const Kiln__HyperNode *const *)b));
}

static const char *node_label(const void *obj, const char *key) {
  return sch_node_label(obj, key);
}

static bool is_type(const Kiln__HyperNodeMember *m, const char *type) {
  return m && m->type && strcmp(m->type, type) == 0 && m->selector;
}

/* The nodes one member of type Node selects, pushed into out (Volcano GetMembers). */
static int member_nodes(const Kiln__HyperNodeMember *m, const sch_snapshot *snap, ibuf *out) {
  const Kiln__HyperNodeSelector *sel = m->selector;
  int rc = 0;
  if (sel->exact_match && sel->exact_match->name && *sel->exact_match->name) {
    /* the snapshot's name index (index + 1), read here: sch_snapshot.c builds this tree */
    int32_t i = (int32_t)(intptr_t)kc_strmap_get(&snap->node_index, sel->exact_match->name) - 1;
    if (i >= 0)
      rc = ibuf_push(out, i);
  }
  if (rc == 0 && sel->regex_match && sel->regex_match->pattern) {
    regex_t re;
    if (regcomp(&re, sel->regex_match->pattern, REG_EXTENDED | REG_NOSUB) == 0) {
      for (int32_t i = 0; i < snap->nnodes && rc == 0; i++)
        if (regexec(&re, snap->nodes[i].name, 0, NULL, 0) == 0)
          rc = ibuf_push(out, i);
      regfree(&re);
    }
  }
  const Kiln__LabelSelector *ls = sel->label_match;
  if (rc == 0 && ls && (ls->n_match_labels > 0 || ls->n_match_expressions > 0))
    for (int32_t i = 0; i < snap->nnodes && rc == 0; i++)
      if (sch_selector_matches(ls, node_label, snap->nodes[i].node))
        rc = ibuf_push(out, i);
  return rc;
}

static void fail_parent(sch_hntree *t, const char *member, const char *parent, const char *other) {
  if (!t->ready)
    return;
  t->ready = false;
  snprintf(t->error, sizeof(t->error),
           "HyperNode %s already has a parent %s, and cannot set another parent %s", member, parent,
           other);
}

static void fail_cycle(sch_hntree *t, const char *name) {
  if (!t->ready)
    return;
  t->ready = false;
  snprintf(t->error, sizeof(t->error),
           "cyclic dependency detected: HyperNode %s is already in the ancestor chain", name);
}

/* Parents from the HyperNode members: a second parent makes the tree not ready. */
static void link_parents(sch_hntree *t) {
  for (int32_t i = 0; i < t->top; i++) {
    const Kiln__HyperNodeSpec *sp = t->v[i].obj->spec;
    for (size_t k = 0; sp && k < sp->n_members; k++) {
      const Kiln__HyperNodeMember *m = sp->members[k];
      if (!is_type(m, "HyperNode") || !m->selector->exact_match || !m->selector->exact_match->name)
        continue;
      int32_t c = sch_hntree_find(t, m->selector->exact_match->name);
      if (c < 0 || c == t->top)
        continue; /* not (yet) in the cache: Volcano waits for it too */
      if (t->v[c].parent >= 0 && t->v[c].parent != i)
        fail_parent(t, t->v[c].name, t->v[t->v[c].parent].name, t->v[i].name);
      else
        t->v[c].parent = i;
    }
  }
}

/* Depths from the top; a cycle makes the tree not ready. */
static void set_depths(sch_hntree *t) {
  for (int32_t i = 0; i < t->top && t->ready; i++) {
    int32_t d = 0, p = i;
    while (t->v[p].parent != t->top && d <= t->top) {
      p = t->v[p].parent;
      d++;
    }
    if (d > t->top)
      fail_cycle(t, t->v[i].name);
    t->v[i].depth = d + 1;
  }
}

static int add_children(sch_hntree *t) {
  for (int32_t i = 0; i < t->top; i++)
    t->v[t->v[i].parent].nchildren++;
  for (int32_t i = 0; i < t->n; i++)
    if (t->v[i].nchildren > 0) {
      t->v[i].children = malloc((size_t)t->v[i].nchildren * sizeof(int32_t));
      if (t->v[i].children == NULL)
        return KC_ENOMEM;
      t->v[i].nchildren = 0;
    }
  for (int32_t i = 0; i < t->top; i++) {
    sch_hypernode *p = &t->v[t->v[i].parent];
    p->children[p->nchildren++] = i;
  }
  return 0;
}

/* The parent links and depths; an inconsistent topology leaves every HyperNode under the
 * top with only its own node members. */
static int build_links(sch_hntree *t) {
  link_parents(t);
  for (int32_t i = 0; i < t->top; i++)
    if (t->v[i].parent < 0)
      t->v[i].parent = t->top;
  set_depths(t);
  if (!t->ready)
    for (int32_t i = 0; i < t->top; i++) {
      t->v[i].parent = t->top;
      t->v[i].depth = 1;
    }
  return add_children(t);
}

/* v's nodes: its own node members and its children's nodes (children first: deeper). */
static int collect_nodes(sch_hntree *t, int32_t vi, const sch_snapshot *snap, int32_t *stamp,
                         ibuf *buf) {
  sch_hypernode *v = &t->v[vi];
  buf->n = 0;
  int rc = 0;
  const Kiln__HyperNodeSpec *sp = v->obj->spec;
  for (size_t k = 0; sp && k < sp->n_members && rc == 0; k++)
    if (is_type(sp->members[k], "Node"))
      rc = member_nodes(sp->members[k], snap, buf);
  for (int32_t c = 0; c < v->nchildren && rc == 0; c++) {
    const sch_hypernode *ch = &t->v[v->children[c]];
    for (int32_t k = 0; k < ch->nnodes && rc == 0; k++)
      rc = ibuf_push(buf, ch->nodes[k]);
  }
  if (rc)
    return rc;
  int32_t n = 0;
  for (int32_t k = 0; k < buf->n; k++)
    if (stamp[buf->v[k]] != vi + 1) {
      stamp[buf->v[k]] = vi + 1;
      buf->v[n++] = buf->v[k];
    }
  v->nnodes = n;
  if (n == 0) /* buf->v may be NULL: qsort and memcpy may not be given it */
    return 0;
  qsort(buf->v, (size_t)n, sizeof(int32_t), cmp_i32);
  if ((v->nodes = malloc((size_t)n * sizeof(int32_t))) == NULL)
    return KC_ENOMEM;
  memcpy(v->nodes, buf->v, (size_t)n * sizeof(int32_t));
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* order[0..top) sorted by key(v) then index: keys[] is scratch of top int64s. */
static void sort_by(const sch_hntree *t, int32_t *order, int64_t *keys, bool by_depth) {
  for (int32_t i = 0; i < t->top; i++) {
    int64_t k = by_depth ? (int64_t)INT32_MAX - t->v[i].depth : (int64_t)t->v[i].tier;
    keys[i] = k * ((int64_t)1 << 32) + i;
  }
  if (t->top > 0)
    qsort(keys, (size_t)t->top, sizeof(int64_t), cmp_i64);
  for (int32_t i = 0; i < t->top; i++)
    order[i] = (int32_t)(keys[i] & 0xffffffff);
}

/* Every vertex's nodes, deepest first so that children are done before their parents. */
static int build_node_sets(sch_hntree *t, const sch_snapshot *snap, int32_t *order, int64_t *keys) {
  int32_t *stamp = calloc((size_t)snap->nnodes + 1, sizeof(int32_t));
  if (stamp == NULL)
    return KC_ENOMEM;
  ibuf buf = {0};
  sort_by(t, order, keys, true);
  int rc = 0;
  for (int32_t k = 0; k < t->top && rc == 0; k++)
    rc = collect_nodes(t, order[k], snap, stamp, &buf);
  free(stamp);
  free(buf.v);
  sch_hypernode *top = &t->v[t->top];
  top->nnodes = snap->nnodes;
  if (rc == 0 && snap->nnodes > 0 &&
      (top->nodes = malloc((size_t)snap->nnodes * sizeof(int32_t))) == NULL)
    rc = KC_ENOMEM;
  for (int32_t i = 0; rc == 0 && i < snap->nnodes; i++)
    top->nodes[i] = i;
  return rc;
}

/* The distinct tiers, the top's tier, and each node's lowest-tier HyperNode. */
static int build_tiers(sch_hntree *t, int32_t *order, int64_t *keys) {
  sort_by(t, order, keys, false);
  if (t->top > 0 && (t->tiers = malloc((size_t)t->top * sizeof(int32_t))) == NULL)
    return KC_ENOMEM;
  for (int32_t k = 0; k < t->top; k++) {
    int32_t tier = t->v[order[k]].tier;
    if (t->ntiers == 0 || t->tiers[t->ntiers - 1] != tier)
      t->tiers[t->ntiers++] = tier;
  }
  int32_t high = t->ntiers ? t->tiers[t->ntiers - 1] : 0;
  t->v[t->top].tier = high < INT32_MAX ? high + 1 : high;
  for (int32_t i = 0; i < t->nnodes; i++)
    t->node_hn[i] = -1;
  for (int32_t k = 0; k < t->top; k++) {
    const sch_hypernode *v = &t->v[order[k]];
    for (int32_t j = 0; j < v->nnodes; j++)
      if (t->node_hn[v->nodes[j]] < 0)
        t->node_hn[v->nodes[j]] = order[k];
  }
  for (int32_t i = 0; i < t->nnodes; i++)
    if (t->node_hn[i] < 0)
      t->node_hn[i] = t->top;
  return 0;
}

/* The vertices, sorted by name (duplicates dropped), the top last, and the name index. */
static int build_vertices(sch_hntree *t, const Kiln__HyperNode *const *hns, size_t n) {
  const Kiln__HyperNode **sorted = n ? malloc(n * sizeof(*sorted)) : NULL;
  t->v = calloc(n + 1, sizeof(*t->v));
  if ((n && sorted == NULL) || t->v == NULL) {
    free(sorted);
    return KC_ENOMEM;
  }
  if (n) { /* memcpy and qsort may not be given NULL, even for no element */
    memcpy(sorted, hns, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), cmp_hn);
  }
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (!*hn_name(sorted[i]) || (t->n > 0 && strcmp(t->v[t->n - 1].name, hn_name(sorted[i])) == 0))
      continue;
    sch_hypernode *v = &t->v[t->n];
    v->obj = sorted[i];
    v->name = hn_name(sorted[i]);
    v->tier = sorted[i]->spec && sorted[i]->spec->has_tier ? sorted[i]->spec->tier : 0;
    v->tier_name = sorted[i]->spec && sorted[i]->spec->tier_name && *sorted[i]->spec->tier_name
                       ? sorted[i]->spec->tier_name
                       : NULL;
    v->parent = -1;
    rc = kc_strmap_put(&t->index, v->name, (void *)(intptr_t)(t->n + 1), NULL);
    t->n++;
  }
  free(sorted);
  t->top = t->n;
  t->v[t->top].name = SCH_HN_CLUSTER_TOP;
  t->v[t->top].parent = -1;
  t->n++;
  if (rc == 0)
    rc = kc_strmap_put(&t->index, SCH_HN_CLUSTER_TOP, (void *)(intptr_t)t->n, NULL);
  return rc;
}

int sch_hntree_new(const Kiln__HyperNode *const *hns, size_t n, const sch_snapshot *snap,
                   sch_hntree **out) {
  *out = NULL;
  sch_hntree *t = calloc(1, sizeof(*t));
  if (t == NULL)
    return KC_ENOMEM;
  t->ready = true;
  kc_strmap_init(&t->index, KC_STRMAP_BORROW_KEYS);
  t->nnodes = snap->nnodes;
  int rc = build_vertices(t, hns, n);
  int32_t *order = rc == 0 ? malloc(((size_t)t->n + 1) * sizeof(int32_t)) : NULL;
  int64_t *keys = rc == 0 ? malloc(((size_t)t->n + 1) * sizeof(int64_t)) : NULL;
  t->node_hn = rc == 0 ? malloc(((size_t)t->nnodes + 1) * sizeof(int32_t)) : NULL;
  if (rc == 0 && (order == NULL || keys == NULL || t->node_hn == NULL))
    rc = KC_ENOMEM;
  if (rc == 0)
    rc = build_links(t);
  if (rc == 0)
    rc = build_node_sets(t, snap, order, keys);
  if (rc == 0)
    rc = build_tiers(t, order, keys);
  free(order);
  free(keys);
  if (rc) {
    sch_hntree_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

void sch_hntree_free(sch_hntree *t) {
  if (t == NULL)
    return;
  for (int32_t i = 0; t->v && i < t->n; i++) {
    free(t->v[i].children);
    free(t->v[i].nodes);
  }
  free(t->v);
  free(t->tiers);
  free(t->node_hn);
  kc_strmap_close(&t->index, NULL);
  free(t);
}

int32_t sch_hntree_find(const sch_hntree *t, const char *name) {
  if (t == NULL || name == NULL)
    return -1;
  return (int32_t)(intptr_t)kc_strmap_get(&t->index, name) - 1;
}

int32_t sch_hntree_lca(const sch_hntree *t, int32_t a, int32_t b) {
  if (a < 0)
    return b;
  if (b < 0)
    return a;
  while (t->v[a].depth > t->v[b].depth)
    a = t->v[a].parent;
  while (t->v[b].depth > t->v[a].depth)
    b = t->v[b].parent;
  while (a != b) {
    a = t->v[a].parent;
    b = t->v[b].parent;
  }
  return a;
}

bool sch_hntree_has_node(const sch_hntree *t, int32_t v, int32_t node) {
  if (v < 0 || v >= t->n)
    return false;
  return bsearch(&node, t->v[v].nodes, (size_t)t->v[v].nnodes, sizeof(int32_t), cmp_i32) != NULL;
}

int32_t sch_hntree_tier_of_name(const sch_hntree *t, const char *tier_name) {
  for (int32_t i = 0; tier_name && i < t->top; i++)
    if (t->v[i].tier_name && strcmp(t->v[i].tier_name, tier_name) == 0)
      return t->v[i].tier;
  return -1;
}

int32_t sch_hntree_highest_allowed(const sch_hntree *t, int32_t v, int32_t max_tier) {
  int32_t best = -1;
  for (int32_t p = v; p >= 0 && t->v[p].tier <= max_tier; p = t->v[p].parent)
    best = p;
  return best;
}
