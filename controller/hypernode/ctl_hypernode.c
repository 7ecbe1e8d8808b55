/* The hyperNode-controller's decisions; see ctl_hypernode.h. Unit-tested in
 * tests/unit/test_ctl_hypernode.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "ctl_hypernode.h"
#include "kc_error.h"
#include "kc_strmap.h"

/* ---- the configuration ---- */

static void conf_free_strv(char **v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

void ctl_hn_conf_free(ctl_hn_conf *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->ntypes; i++) {
    free(c->types[i].name);
    conf_free_strv(c->types[i].keys, c->types[i].nkeys);
  }
  free(c->types);
  conf_free_strv(c->others, c->nothers);
  conf_free_strv(c->warnings, c->nwarnings);
  free(c);
}

static int strv_add(char ***v, size_t *n, const char *s) {
  char **nv = realloc(*v, (*n + 1) * sizeof(**v));
  if (!nv)
    return KC_ENOMEM;
  *v = nv;
  if (!(nv[*n] = strdup(s)))
    return KC_ENOMEM;
  (*n)++;
  return 0;
}

static yaml_node_t *ynode(yaml_document_t *d, int id) {
  return yaml_document_get_node(d, id);
}

static const char *yscalar(const yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of key in mapping m, or NULL. */
static yaml_node_t *yget(yaml_document_t *d, const yaml_node_t *m, const char *key) {
  if (!m || m->type != YAML_MAPPING_NODE)
    return NULL;
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
    const char *k = yscalar(ynode(d, p->key));
    if (k && strcmp(k, key) == 0)
      return ynode(d, p->value);
  }
  return NULL;
}

/* YAML 1.1's true, as Go's yaml.v2 reads a bool. */
static bool ytrue(const yaml_node_t *n) {
  static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                    "on",   "On",   "ON",   "y",   "Y"};
  const char *s = yscalar(n);
  for (size_t i = 0; s && i < sizeof(yes) / sizeof(yes[0]); i++)
    if (strcmp(s, yes[i]) == 0)
      return true;
  return false;
}

__attribute__((format(printf, 2, 3))) static int warn(ctl_hn_conf *c, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return strv_add(&c->warnings, &c->nwarnings, buf);
}

/* One entry of networkTopologyTypes (Volcano parseCfg): skipped with a warning when its name
 * is too long, a level has no nodeLabel or two levels repeat a label. */
static int add_type(yaml_document_t *d, ctl_hn_conf *c, const char *name,
                    const yaml_node_t *levels) {
  if (strlen(name) > CTL_HN_TYPE_NAME_MAX)
    return warn(c, "The length of topologyTypeName exceeds 20. topologyTypeName is %s", name);
  if (!levels || levels->type != YAML_SEQUENCE_NODE)
    return warn(c, "Cannot get networkTopologyTypes: the levels of %s are not a list", name);
  size_t n = (size_t)(levels->data.sequence.items.top - levels->data.sequence.items.start);
  const char **labels = calloc(n ? n : 1, sizeof(*labels));
  if (!labels)
    return KC_ENOMEM;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    labels[i] = yscalar(yget(d, ynode(d, levels->data.sequence.items.start[i]), "nodeLabel"));
    if (!labels[i])
      labels[i] = "";
    for (size_t j = 0; j < i && rc == 0; j++)
      if (strcmp(labels[i], labels[j]) == 0)
        rc = 1;
  }
  if (rc == 1) {
    free(labels);
    return warn(
        c, "The configMap format is incorrect, topology type %s: there are duplicate labels", name);
  }
  ctl_hn_type *nt = realloc(c->types, (c->ntypes + 1) * sizeof(*nt));
  if (!nt) {
    free(labels);
    return KC_ENOMEM;
  }
  c->types = nt;
  ctl_hn_type *t = &nt[c->ntypes];
  memset(t, 0, sizeof(*t));
  c->ntypes++;
  rc = (t->name = strdup(name)) ? 0 : KC_ENOMEM;
  /* Top-down in the file, the last being the node itself: tier 1 is the one before it. */
  for (size_t i = n; rc == 0 && i-- > 1;)
    rc = strv_add(&t->keys, &t->nkeys, labels[i - 1]);
  free(labels);
  return rc;
}

static int add_source(yaml_document_t *d, ctl_hn_conf *c, const yaml_node_t *entry) {
  const char *source = yscalar(yget(d, entry, "source"));
  if (!source || !ytrue(yget(d, entry, "enabled")))
    return 0;
  if (strcmp(source, CTL_HN_SOURCE) != 0)
    return strv_add(&c->others, &c->nothers, source);
  if (c->label)
    return 0; /* Volcano reads the first enabled entry of a source */
  c->label = true;
  const yaml_node_t *types = yget(d, yget(d, entry, "config"), "networkTopologyTypes");
  if (!types)
    return 0;
  if (types->type != YAML_MAPPING_NODE)
    return warn(c, "Cannot get networkTopologyTypes: %s", "not a mapping");
  for (yaml_node_pair_t *p = types->data.mapping.pairs.start; p < types->data.mapping.pairs.top;
       p++) {
    const char *name = yscalar(ynode(d, p->key));
    int rc = name ? add_type(d, c, name, ynode(d, p->value)) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

int ctl_hn_conf_parse(const char *text, size_t len, ctl_hn_conf **out, char *err, size_t errlen) {
  *out = NULL;
  ctl_hn_conf *c = calloc(1, sizeof(*c));
  if (!c)
    return KC_ENOMEM;
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) {
    free(c);
    return KC_ENOMEM;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    snprintf(err, errlen, "failed to parse config: %s at line %zu",
             parser.problem ? parser.problem : "invalid YAML", parser.problem_mark.line + 1);
    yaml_parser_delete(&parser);
    free(c);
    return KC_EINVAL;
  }
  int rc = 0;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  yaml_node_t *list = yget(&doc, root, "networkTopologyDiscovery");
  if (root && root->type != YAML_MAPPING_NODE &&
      !(root->type == YAML_SCALAR_NODE && !*yscalar(root))) {
    snprintf(err, errlen, "failed to parse config: the document is not a mapping");
    rc = KC_EINVAL;
  } else if (list && list->type != YAML_SEQUENCE_NODE) {
    snprintf(err, errlen, "failed to parse config: networkTopologyDiscovery is not a list");
    rc = KC_EINVAL;
  }
  for (yaml_node_item_t *it = list && rc == 0 ? list->data.sequence.items.start : NULL;
       it && it < list->data.sequence.items.top && rc == 0; it++)
    rc = add_source(&doc, c, ynode(&doc, *it));
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  if (rc) {
    ctl_hn_conf_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

/* ---- discovery ---- */

void ctl_hn_clean(const char *s, char *buf, size_t cap) {
  size_t n = 0;
  for (; s && *s && n + 1 < cap; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch >= 'A' && ch <= 'Z')
      buf[n++] = (char)(ch - 'A' + 'a');
    else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-')
      buf[n++] = (char)ch;
    else
      buf[n++] = '-';
  }
  if (cap)
    buf[n] = 0;
}

static const json_t *labels_of(const json_t *obj) {
  return json_object_get(json_object_get(obj, "metadata"), "labels");
}

static const char *name_of(const json_t *obj) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

static const char *label_of(const json_t *obj, const char *key) {
  return json_string_value(json_object_get(labels_of(obj), key));
}

bool ctl_hn_node_changed(const ctl_hn_conf *c, const json_t *old_node, const json_t *new_node) {
  for (size_t t = 0; c && t < c->ntypes; t++)
    for (size_t k = 0; k < c->types[t].nkeys; k++) {
      const char *a = old_node ? label_of(old_node, c->types[t].keys[k]) : NULL;
      const char *b = new_node ? label_of(new_node, c->types[t].keys[k]) : NULL;
      if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
        return true;
    }
  return false;
}

/* A HyperNode being built: the object, and its members as a set. */
typedef struct {
  json_t *obj;
  kc_strmap members; /* borrowed keys: the names are in the node objects or other builds */
  int tier;
} build;

static void build_free(void *v) {
  build *b = v;
  if (!b)
    return;
  json_decref(b->obj);
  kc_strmap_close(&b->members, NULL);
  free(b);
}

/* An existing HyperNode of this source labelled key=value whose name starts with prefix: the
 * first by name (Volcano sorts them). */
static const char *reuse(const json_t *existing, const char *key, const char *value,
                         const char *prefix) {
  const char *best = NULL;
  size_t i;
  const json_t *hn;
  json_array_foreach(existing, i, hn) {
    const char *src = label_of(hn, CTL_HN_SOURCE_LABEL), *v = label_of(hn, key), *n = name_of(hn);
    if (n && src && v && strcmp(src, CTL_HN_SOURCE) == 0 && strcmp(v, value) == 0 &&
        strncmp(n, prefix, strlen(prefix)) == 0 && (!best || strcmp(n, best) < 0))
      best = n;
  }
  return best;
}

static bool exists(const json_t *existing, const char *name) {
  size_t i;
  const json_t *hn;
  json_array_foreach(existing, i, hn) {
    const char *n = name_of(hn);
    if (n && strcmp(n, name) == 0)
      return true;
  }
  return false;
}

/* hypernode-<type>-tier<N>-<suffix>: five characters of Kubernetes' rand.String alphabet from
 * an FNV-1a hash of the label, its value and the attempt. */
static void new_name(const char *type, int tier, const char *key, const char *value, int attempt,
                     char *buf, size_t cap) {
  static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  uint64_t h = 1469598103934665603ull;
  const char *parts[] = {key, value};
  for (size_t p = 0; p < 2; p++)
    for (const char *s = parts[p];; s++) {
      h = (h ^ (unsigned char)*s) * 1099511628211ull;
      if (!*s)
        break;
    }
  h = (h ^ (uint64_t)attempt) * 1099511628211ull;
  char suffix[6];
  for (int i = 0; i < 5; i++) {
    suffix[i] = alphabet[h % (sizeof(alphabet) - 1)];
    h /= sizeof(alphabet) - 1;
  }
  suffix[5] = 0;
  snprintf(buf, cap, "hypernode-%s-tier%d-%s", type, tier, suffix);
}

typedef struct {
  const ctl_hn_conf *c;
  const json_t *existing;
  kc_strmap builds; /* name -> build (copied keys) */
  kc_strmap byval;  /* key "\n" value -> name (copied keys; values point at build keys) */
} discovery;

static build *build_new(const char *name, int tier, const char *key, const char *value) {
  build *b = calloc(1, sizeof(*b));
  if (!b)
    return NULL;
  b->tier = tier;
  kc_strmap_init(&b->members, KC_STRMAP_BORROW_KEYS);
  b->obj =
      json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:{s:i}}", "apiVersion",
                "topology.volcano.sh/v1alpha1", "kind", "HyperNode", "metadata", "name", name,
                "labels", CTL_HN_SOURCE_LABEL, CTL_HN_SOURCE, key, value, "spec", "tier", tier);
  if (!b->obj) {
    free(b);
    return NULL;
  }
  return b;
}

/* The name of the HyperNode for key=value at tier in this pass: one named already, one that
 * exists, or a new one free in both. NULL without memory or a free name. */
static const char *hn_for(discovery *d, const char *type, int tier, const char *key,
                          const char *value) {
  char vk[1024];
  snprintf(vk, sizeof(vk), "%s\n%s", key, value);
  const char *name = kc_strmap_get(&d->byval, vk);
  if (name)
    return name;
  char clean[64], prefix[128], buf[160];
  ctl_hn_clean(type, clean, sizeof(clean));
  snprintf(prefix, sizeof(prefix), "hypernode-%s-tier%d", clean, tier);
  const char *old = reuse(d->existing, key, value, prefix);
  if (old && !kc_strmap_has(&d->builds, old))
    snprintf(buf, sizeof(buf), "%s", old);
  else
    for (int attempt = 0;; attempt++) {
      if (attempt == 20) /* Volcano's loopCount */
        return NULL;
      new_name(clean, tier, key, value, attempt, buf, sizeof(buf));
      if (!exists(d->existing, buf) && !kc_strmap_has(&d->builds, buf))
        break;
    }
  build *b = build_new(buf, tier, key, value);
  if (!b || kc_strmap_put(&d->builds, buf, b, NULL) < 0) {
    build_free(b);
    return NULL;
  }
  name = kc_strmap_find(&d->builds, buf)->key;
  if (kc_strmap_put(&d->byval, vk, (void *)name, NULL) < 0)
    return NULL;
  return name;
}

/* One node through one type's levels (Volcano generateHyperNodeInfo). */
static int walk(discovery *d, const ctl_hn_type *t, const json_t *node) {
  const char *member = name_of(node);
  for (size_t i = 0; member && i < t->nkeys; i++) {
    const char *value = label_of(node, t->keys[i]);
    if (!value)
      break;
    const char *name = hn_for(d, t->name, (int)i + 1, t->keys[i], value);
    if (!name)
      return KC_ENOMEM;
    build *b = kc_strmap_get(&d->builds, name);
    if (kc_strmap_put(&b->members, member, NULL, NULL) < 0)
      return KC_ENOMEM;
    member = name;
  }
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The build's members, sorted, into its spec. */
static int finish(build *b) {
  size_t n = kc_strmap_len(&b->members), k = 0, i = 0;
  const char **names = calloc(n ? n : 1, sizeof(*names));
  json_t *members = json_array();
  if (!names || !members) {
    free(names);
    json_decref(members);
    return KC_ENOMEM;
  }
  kc_strmap_slot *s;
  while ((s = kc_strmap_next(&b->members, &i)))
    names[k++] = s->key;
  qsort(names, n, sizeof(*names), cmp_str);
  int rc = 0;
  for (i = 0; i < n && rc == 0; i++)
    rc = json_array_append_new(members, json_pack("{s:s, s:{s:{s:s}}}", "type",
                                                  b->tier == 1 ? "Node" : "HyperNode", "selector",
                                                  "exactMatch", "name", names[i]))
             ? KC_ENOMEM
             : 0;
  free(names);
  if (rc || json_object_set_new(json_object_get(b->obj, "spec"), "members", members)) {
    if (!rc)
      json_decref(members);
    return KC_ENOMEM;
  }
  return 0;
}

static int tier_of(const json_t *hn) {
  return (int)json_integer_value(json_object_get(json_object_get(hn, "spec"), "tier"));
}

static int cmp_hn(const void *a, const void *b) {
  const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
  int tx = tier_of(x), ty = tier_of(y);
  return tx != ty ? (tx < ty ? -1 : 1) : strcmp(name_of(x), name_of(y));
}

static int cmp_node(const void *a, const void *b) {
  const char *x = name_of(*(const json_t *const *)a), *y = name_of(*(const json_t *const *)b);
  return strcmp(x ? x : "", y ? y : "");
}

/* The builds as a sorted array (new), or NULL. */
static json_t *collect(discovery *d) {
  size_t n = kc_strmap_len(&d->builds), k = 0, i = 0;
  json_t **objs = calloc(n ? n : 1, sizeof(*objs));
  json_t *out = json_array();
  kc_strmap_slot *s;
  while (objs && out && (s = kc_strmap_next(&d->builds, &i))) {
    build *b = s->val;
    if (finish(b))
      break;
    objs[k++] = b->obj;
  }
  if (!objs || !out || k != n) {
    free(objs);
    json_decref(out);
    return NULL;
  }
  qsort(objs, n, sizeof(*objs), cmp_hn);
  for (i = 0; i < n; i++)
    if (json_array_append(out, objs[i])) {
      json_decref(out);
      out = NULL;
      break;
    }
  free(objs);
  return out;
}

json_t *ctl_hn_discover(const ctl_hn_conf *c, const json_t *nodes, const json_t *existing) {
  discovery d = {.c = c, .existing = existing};
  kc_strmap_init(&d.builds, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&d.byval, KC_STRMAP_COPY_KEYS);
  size_t n = json_array_size(nodes);
  const json_t **sorted = calloc(n ? n : 1, sizeof(*sorted));
  json_t *out = NULL;
  int rc = sorted ? 0 : KC_ENOMEM;
  for (size_t i = 0; i < n && sorted; i++)
    sorted[i] = json_array_get(nodes, i);
  if (sorted) /* Volcano walks the lister's order; by name, the names do not depend on it */
    qsort(sorted, n, sizeof(*sorted), cmp_node);
  for (size_t i = 0; rc == 0 && i < n; i++)
    for (size_t t = 0; rc == 0 && c && t < c->ntypes; t++)
      rc = walk(&d, &c->types[t], sorted[i]);
  if (rc == 0)
    out = collect(&d);
  free(sorted);
  kc_strmap_close(&d.byval, NULL);
  kc_strmap_close(&d.builds, build_free);
  return out;
}

/* ---- reconciling ---- */

void ctl_hn_actions_free(ctl_hn_action *a, size_t n) {
  for (size_t i = 0; a && i < n; i++) {
    free(a[i].name);
    json_decref(a[i].obj);
  }
  free(a);
}

static const json_t *find(const json_t *list, const char *name) {
  size_t i;
  const json_t *hn;
  json_array_foreach(list, i, hn) {
    const char *n = name_of(hn);
    if (n && strcmp(n, name) == 0)
      return hn;
  }
  return NULL;
}

/* Whether have already has want's tier, members and labels. */
static bool same(const json_t *want, const json_t *have) {
  const json_t *ws = json_object_get(want, "spec"), *hs = json_object_get(have, "spec");
  if (!json_equal(json_object_get(ws, "tier"), json_object_get(hs, "tier")) ||
      !json_equal(json_object_get(ws, "members"), json_object_get(hs, "members")))
    return false;
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)labels_of(want), k, v) {
    if (!json_equal(v, json_object_get(labels_of(have), k)))
      return false;
  }
  return true;
}

static int push(ctl_hn_action **a, size_t *n, ctl_hn_op op, const char *name, json_t *obj) {
  ctl_hn_action *na = realloc(*a, (*n + 1) * sizeof(*na));
  char *nm = strdup(name);
  if (!na || !nm) {
    if (na)
      *a = na;
    free(nm);
    json_decref(obj);
    return KC_ENOMEM;
  }
  *a = na;
  na[(*n)++] = (ctl_hn_action){op, nm, obj};
  return 0;
}

static int cmp_del(const void *a, const void *b) {
  return -cmp_hn(a, b); /* tier descending (names descending too: stable enough) */
}

int ctl_hn_reconcile(const json_t *desired, const json_t *existing, ctl_hn_action **out,
                     size_t *n) {
  *out = NULL;
  *n = 0;
  int rc = 0;
  size_t i;
  const json_t *want;
  json_array_foreach(desired, i, want) {
    const char *name = name_of(want);
    const json_t *have = find(existing, name);
    if (!have)
      rc = push(out, n, CTL_HN_CREATE, name, json_deep_copy(want));
    else if (!same(want, have))
      rc = push(out, n, CTL_HN_UPDATE, name,
                json_pack("{s:{s:O}, s:O}", "metadata", "labels",
                          json_object_get(json_object_get(want, "metadata"), "labels"), "spec",
                          json_object_get(want, "spec")));
    if (rc)
      break;
  }
  size_t m = json_array_size(existing), k = 0;
  const json_t **gone = calloc(m ? m : 1, sizeof(*gone));
  if (!gone)
    rc = KC_ENOMEM;
  for (i = 0; rc == 0 && i < m; i++) {
    const json_t *hn = json_array_get(existing, i);
    const char *src = label_of(hn, CTL_HN_SOURCE_LABEL), *name = name_of(hn);
    if (name && src && strcmp(src, CTL_HN_SOURCE) == 0 && !find(desired, name))
      gone[k++] = hn;
  }
  if (rc == 0)
    qsort(gone, k, sizeof(*gone), cmp_del);
  for (i = 0; rc == 0 && i < k; i++)
    rc = push(out, n, CTL_HN_DELETE, name_of(gone[i]), NULL);
  free(gone);
  if (rc) {
    ctl_hn_actions_free(*out, *n);
    *out = NULL;
    *n = 0;
  }
  return rc;
}

bool ctl_hn_count_stale(const json_t *hn, int64_t *count) {
  *count = (int64_t)json_array_size(json_object_get(json_object_get(hn, "spec"), "members"));
  const json_t *have = json_object_get(json_object_get(hn, "status"), "nodeCount");
  /* Volcano's status has nodeCount omitempty: an absent one reads as 0. */
  return (have ? json_integer_value(have) : 0) != *count;
}
