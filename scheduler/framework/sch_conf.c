/* The scheduler configuration file, parsed with libyaml's document API. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_conf.h"

const char sch_conf_default_yaml[] = "actions: \"enqueue, allocate, backfill\"\n"
                                     "tiers:\n"
                                     "- plugins:\n"
                                     "  - name: priority\n"
                                     "  - name: gang\n"
                                     "  - name: conformance\n"
                                     "- plugins:\n"
                                     "  - name: overcommit\n"
                                     "  - name: drf\n"
                                     "  - name: predicates\n"
                                     "  - name: proportion\n"
                                     "  - name: nodeorder\n";

/* ---- arguments ---- */

const char *sch_args_get(const sch_args *a, const char *key) {
  for (size_t i = 0; a && i < a->n; i++)
    if (strcmp(a->items[i].key, key) == 0)
      return a->items[i].value;
  return NULL;
}

int64_t sch_args_int(const sch_args *a, const char *key, int64_t def) {
  const char *v = sch_args_get(a, key);
  if (!v)
    return def;
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end) {
    KC_WARN("scheduler: argument %s=%s is not an integer; using %lld", key, v, (long long)def);
    return def;
  }
  return x;
}

double sch_args_double(const sch_args *a, const char *key, double def) {
  const char *v = sch_args_get(a, key);
  if (!v)
    return def;
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || *end) {
    KC_WARN("scheduler: argument %s=%s is not a number; using %g", key, v, def);
    return def;
  }
  return x;
}

static int parse_bool(const char *v, bool *out) {
  static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "on", "1"};
  static const char *const no[] = {"false", "False", "FALSE", "no", "No", "off", "0"};
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
    if (strcmp(v, yes[i]) == 0)
      return *out = true, 0;
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
    if (strcmp(v, no[i]) == 0)
      return *out = false, 0;
  return KC_EINVAL;
}

bool sch_args_bool(const sch_args *a, const char *key, bool def) {
  const char *v = sch_args_get(a, key);
  bool b;
  if (!v)
    return def;
  if (parse_bool(v, &b) < 0) {
    KC_WARN("scheduler: argument %s=%s is not a boolean; using %s", key, v, def ? "true" : "false");
    return def;
  }
  return b;
}

void sch_args_resource_weights(const sch_args *args, const char *key, const sch_snapshot *snap,
                               int64_t *weights, bool *scored) {
  const char *p = sch_args_get(args, key);
  while (p && *p) {
    while (*p == ' ' || *p == '\t' || *p == ',')
      p++;
    const char *start = p;
    while (*p && *p != ',')
      p++;
    const char *end = p;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
      end--;
    size_t len = (size_t)(end - start);
    char name[256], wkey[512];
    if (len == 0)
      continue;
    if (len >= sizeof(name)) {
      KC_WARN("scheduler: resource name of %zu bytes in %s ignored", len, key);
      continue;
    }
    memcpy(name, start, len);
    name[len] = '\0';
    snprintf(wkey, sizeof(wkey), "%s.%s", key, name);
    int64_t w = sch_args_int(args, wkey, 1);
    int slot = sch_snapshot_scalar(snap, name);
    if (slot < 0) {
      KC_V(4, "scheduler: resource %s of %s is not on any node", name, key);
      continue;
    }
    weights[slot] = w < 0 ? 1 : w;
    scored[slot] = true;
  }
}

void sch_args_free(sch_args *a) {
  for (size_t i = 0; i < a->n; i++) {
    free(a->items[i].key);
    free(a->items[i].value);
  }
  free(a->items);
  a->items = NULL;
  a->n = 0;
}

int sch_args_copy(sch_args *dst, const sch_args *src) {
  dst->n = 0;
  dst->items = calloc(src->n + 1, sizeof(*dst->items));
  if (!dst->items)
    return KC_ENOMEM;
  for (size_t i = 0; i < src->n; i++, dst->n++) {
    dst->items[i].key = strdup(src->items[i].key);
    dst->items[i].value = strdup(src->items[i].value ? src->items[i].value : "");
    if (!dst->items[i].key || !dst->items[i].value) {
      dst->n++;
      sch_args_free(dst);
      return KC_ENOMEM;
    }
  }
  return 0;
}

/* ---- parser ---- */

/* Bounds on what arguments may expand to. libyaml's document keeps an alias as a reference
 * to its anchor's node, so a document of a few bytes can describe a cycle (`&a {x: *a}`) or
 * an exponential tree ("billion laughs"); flattening walks the references. The file itself
 * is at most 1 MiB, a real configuration a few hundred bytes. */
enum {
  ARGS_MAX_DEPTH = 32,          /* nested mappings under `arguments` */
  ARGS_MAX_NODES = 10000,       /* entries and list items visited, aliases expanded */
  ARGS_MAX_BYTES = 1024 * 1024, /* flattened keys and values, aliases expanded */
};

typedef struct parser {
  yaml_document_t doc;
  char *err;
  size_t errlen;
  bool lenient; /* the built-in default: skip plugins that are not registered */
  /* The mappings being flattened, outermost first: a node met again on this path is a
   * cycle made with an alias. */
  const yaml_node_t *open[ARGS_MAX_DEPTH];
  size_t nopen;
  size_t nodes, bytes; /* spent of ARGS_MAX_NODES and ARGS_MAX_BYTES, whole document */
} parser;

__attribute__((format(printf, 3, 4))) static int fail(parser *p, int rc, const char *fmt, ...) {
  if (p->err && p->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static yaml_node_t *node(parser *p, int id) {
  return yaml_document_get_node(&p->doc, id);
}

static const char *scalar(yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int args_add(parser *p, sch_args *a, const char *key, const char *value, const char *where) {
  size_t cost = strlen(key) + strlen(value) + 2;
  if (cost > ARGS_MAX_BYTES - p->bytes)
    return fail(p, KC_ETOOBIG, "%s: arguments expand to more than %d bytes (YAML aliases?)", where,
                ARGS_MAX_BYTES);
  p->bytes += cost;
  sch_arg *v = realloc(a->items, (a->n + 1) * sizeof(*v));
  if (!v)
    return KC_ENOMEM;
  a->items = v;
  char *k = strdup(key), *val = strdup(value);
  if (!k || !val) {
    free(k);
    free(val);
    return KC_ENOMEM;
  }
  a->items[a->n++] = (sch_arg){k, val};
  return 0;
}

/* A mapping of arguments, nested maps flattened to "a.b"; lists joined with ", ". */
static int parse_args(parser *p, yaml_node_t *m, const char *prefix, sch_args *a,
                      const char *where);

/* Charges n visited nodes to the document's budget. */
static int spend(parser *p, size_t n, const char *prefix, const char *where) {
  if (n > ARGS_MAX_NODES - p->nodes)
    return fail(p, KC_ETOOBIG, "%s: arguments%s%s expand to more than %d entries (YAML aliases?)",
                where, *prefix ? " at " : "", prefix, ARGS_MAX_NODES);
  p->nodes += n;
  return 0;
}

static size_t seq_len(const yaml_node_t *v) {
  return (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
}

static bool seq_of_mappings(parser *p, yaml_node_t *v) {
  for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
    yaml_node_t *item = node(p, *it);
    if (item && item->type == YAML_MAPPING_NODE)
      return true;
  }
  return false;
}

/* A list of mappings (rescheduling's strategies) flattens by index: "strategies.0.name",
 * "strategies.0.params.thresholds.cpu", ... */
static int parse_arg_list(parser *p, yaml_node_t *v, const char *prefix, sch_args *a,
                          const char *where) {
  int rc = spend(p, seq_len(v), prefix, where);
  size_t i = 0;
  for (yaml_node_item_t *it = v->data.sequence.items.start;
       rc == 0 && it < v->data.sequence.items.top; it++, i++) {
    yaml_node_t *item = node(p, *it);
    if (!item || item->type != YAML_MAPPING_NODE)
      return fail(p, KC_EPARSE, "%s: %s mixes mappings with other items", where, prefix);
    char *full = NULL;
    if (asprintf(&full, "%s.%zu", prefix, i) < 0)
      return KC_ENOMEM;
    rc = parse_args(p, item, full, a, where);
    free(full);
  }
  return rc;
}

/* A list of scalars is one argument, its items joined with ", " (other items are left out). */
static int parse_arg_joined(parser *p, yaml_node_t *v, const char *key, sch_args *a,
                            const char *where) {
  int rc = spend(p, seq_len(v), key, where);
  if (rc < 0)
    return rc;
  size_t len = 1;
  for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
    const char *s = scalar(node(p, *it));
    len += (s ? strlen(s) : 0) + 2;
    if (len > ARGS_MAX_BYTES) /* checked before the allocation; args_add charges the bytes */
      return fail(p, KC_ETOOBIG, "%s: arguments at %s expand to more than %d bytes (YAML aliases?)",
                  where, key, ARGS_MAX_BYTES);
  }
  char *joined = calloc(1, len);
  if (!joined)
    return KC_ENOMEM;
  size_t off = 0;
  for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
    const char *s = scalar(node(p, *it));
    if (s)
      off += (size_t)snprintf(joined + off, len - off, "%s%s", off ? ", " : "", s);
  }
  rc = args_add(p, a, key, joined, where);
  free(joined);
  return rc;
}

/* One entry of an arguments mapping. */
static int parse_arg(parser *p, const yaml_node_pair_t *kv, const char *prefix, sch_args *a,
                     const char *where) {
  const char *k = scalar(node(p, kv->key));
  yaml_node_t *v = node(p, kv->value);
  if (!k || !v)
    return fail(p, KC_EPARSE, "%s: argument keys must be strings", where);
  char *full = NULL;
  if (asprintf(&full, "%s%s%s", prefix, *prefix ? "." : "", k) < 0)
    return KC_ENOMEM;
  int rc;
  if (v->type == YAML_SCALAR_NODE)
    rc = args_add(p, a, full, scalar(v), where);
  else if (v->type == YAML_MAPPING_NODE)
    rc = parse_args(p, v, full, a, where);
  else if (seq_of_mappings(p, v))
    rc = parse_arg_list(p, v, full, a, where);
  else
    rc = parse_arg_joined(p, v, full, a, where);
  free(full);
  return rc;
}

/* Enters mapping m at prefix: refuses a cycle and nesting past ARGS_MAX_DEPTH. */
static int open_mapping(parser *p, const yaml_node_t *m, const char *prefix, const char *where) {
  for (size_t i = 0; i < p->nopen; i++)
    if (p->open[i] == m)
      return fail(p, KC_EPARSE,
                  "%s: arguments at %s contain themselves (a YAML alias to an enclosing anchor)",
                  where, prefix);
  if (p->nopen == ARGS_MAX_DEPTH)
    return fail(p, KC_ETOOBIG, "%s: arguments at %s are nested deeper than %d levels", where,
                prefix, ARGS_MAX_DEPTH);
  p->open[p->nopen++] = m;
  return 0;
}

static int parse_args(parser *p, yaml_node_t *m, const char *prefix, sch_args *a,
                      const char *where) {
  if (m->type == YAML_SCALAR_NODE && !*scalar(m))
    return 0; /* "arguments:" with nothing */
  if (m->type != YAML_MAPPING_NODE)
    return fail(p, KC_EPARSE, "%s: arguments must be a mapping", where);
  int rc = open_mapping(p, m, prefix, where);
  if (rc < 0)
    return rc;
  rc = spend(p, (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start), prefix, where);
  for (yaml_node_pair_t *kv = m->data.mapping.pairs.start;
       rc == 0 && kv < m->data.mapping.pairs.top; kv++)
    rc = parse_arg(p, kv, prefix, a, where);
  p->nopen--;
  return rc;
}

static int ext_by_key(const char *key) {
  static const char *const keys[] = {
#define XX(name, k) k,
      SCH_EXT_MAP(XX)
#undef XX
  };
  for (int i = 0; i < SCH_EXT__COUNT; i++)
    if (strcmp(keys[i], key) == 0)
      return i;
  /* Volcano spells a few switches both ways. */
  if (strcmp(key, "enabledPredicate") == 0)
    return SCH_EXT_PREDICATE;
  if (strcmp(key, "enabledNodeOrder") == 0)
    return SCH_EXT_NODE_ORDER;
  if (strcmp(key, "enableOverused") == 0)
    return SCH_EXT_OVERUSED;
  if (strcmp(key, "enableAllocatable") == 0)
    return SCH_EXT_ALLOCATABLE;
  if (strcmp(key, "enableClusterOrder") == 0)
    return SCH_EXT_CLUSTER_ORDER;
  return -1;
}

/* Appends a copy of s to the list *v of *n names, once. */
static int note(char ***v, size_t *n, const char *s) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*v)[i], s) == 0)
      return 0;
  char **nv = realloc(*v, (*n + 1) * sizeof(*nv));
  if (!nv)
    return KC_ENOMEM;
  *v = nv;
  if (!(nv[*n] = strdup(s)))
    return KC_ENOMEM;
  (*n)++;
  return 1;
}

/* Volcano's session skips a plugin it has no builder for ("Failed to get plugin %s.") and
 * runs the others; the file's other plugins, their arguments and the actions stay in force. */
static int skip_plugin(sch_conf *c, const char *name) {
  int rc = note(&c->skipped_plugins, &c->nskipped_plugins, name);
  if (rc > 0)
    KC_ERROR("scheduler config: plugin \"%s\" is not implemented by kiln-scheduler; skipping "
             "it, the rest of the configuration applies",
             name);
  return rc < 0 ? rc : 0;
}

/* Volcano's plugins read the arguments they know and pass over the rest in silence; Kiln
 * names each argument its plugin does not read, so a setting that changes nothing is seen,
 * with the reason when Volcano's plugin reads it (sch_plugin_inert_arg). */
static int check_args(sch_conf *c, const sch_plugin_conf *pc) {
  for (size_t i = 0; i < pc->args.n; i++) {
    const char *key = pc->args.items[i].key;
    if (sch_plugin_reads_arg(pc->plugin, key))
      continue;
    const char *why = sch_plugin_inert_arg(pc->plugin, key);
    char *what = NULL;
    if (asprintf(&what, "%s: %s", pc->plugin->name, key) < 0)
      return KC_ENOMEM;
    int rc = note(&c->ignored_args, &c->nignored_args, what);
    free(what);
    if (rc < 0)
      return rc;
    if (rc > 0 && why)
      KC_WARN("scheduler config: plugin %s: argument \"%s\" is accepted for compatibility with "
              "Volcano and has no effect in Kiln: %s",
              pc->plugin->name, key, why);
    else if (rc > 0)
      KC_WARN("scheduler config: plugin %s: argument \"%s\" is not read by kiln-scheduler's %s; "
              "ignoring it",
              pc->plugin->name, key, pc->plugin->name);
  }
  return 0;
}

static int parse_plugin(parser *p, sch_conf *c, yaml_node_t *m, sch_plugin_conf *pc, bool *skip) {
  *skip = false;
  if (m->type != YAML_MAPPING_NODE)
    return fail(p, KC_EPARSE, "tiers: each plugin must be a mapping with a name");
  const char *name = NULL;
  for (yaml_node_pair_t *kv = m->data.mapping.pairs.start; kv < m->data.mapping.pairs.top; kv++)
    if (scalar(node(p, kv->key)) && strcmp(scalar(node(p, kv->key)), "name") == 0)
      name = scalar(node(p, kv->value));
  if (!name || !*name)
    return fail(p, KC_EPARSE, "tiers: a plugin has no name");
  /* A plugin Kiln does not have is still parsed, so that a malformed entry refuses the file
   * as Volcano's YAML decoding does; the caller then drops it. */
  pc->plugin = sch_plugin_find(name);
  *skip = pc->plugin == NULL;
  /* Every switch defaults to on (ApplyPluginConfDefaults) except enableHierarchy, which
   * only drf reads and which must be asked for. */
  pc->enabled = ((1u << SCH_EXT__COUNT) - 1) & ~(1u << SCH_EXT_HIERARCHY);
  for (yaml_node_pair_t *kv = m->data.mapping.pairs.start; kv < m->data.mapping.pairs.top; kv++) {
    const char *k = scalar(node(p, kv->key));
    yaml_node_t *v = node(p, kv->value);
    if (!k || !v)
      return fail(p, KC_EPARSE, "plugin %s: keys must be strings", name);
    if (strcmp(k, "name") == 0)
      continue;
    if (strcmp(k, "arguments") == 0) {
      char where[128];
      snprintf(where, sizeof(where), "plugin %s", name);
      int rc = parse_args(p, v, "", &pc->args, where);
      if (rc < 0)
        return rc;
      continue;
    }
    int e = ext_by_key(k);
    if (e < 0) {
      KC_V(2, "scheduler config: plugin %s: ignoring unknown field %s", name, k);
      continue;
    }
    bool b;
    if (!scalar(v) || parse_bool(scalar(v), &b) < 0)
      return fail(p, KC_EINVAL, "plugin %s: %s must be true or false", name, k);
    pc->has_enable[e] = true;
    if (b)
      pc->enabled |= 1u << e;
    else
      pc->enabled &= ~(1u << e);
  }
  if (*skip)
    return p->lenient ? 0 : skip_plugin(c, name);
  return check_args(c, pc);
}

static int parse_tiers(parser *p, yaml_node_t *seq, sch_conf *c) {
  if (seq->type != YAML_SEQUENCE_NODE)
    return fail(p, KC_EPARSE, "tiers must be a list");
  size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
  c->tiers = calloc(n ? n : 1, sizeof(*c->tiers));
  if (!c->tiers)
    return KC_ENOMEM;
  for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
       it++) {
    yaml_node_t *t = node(p, *it);
    sch_tier *tier = &c->tiers[c->ntiers++];
    if (!t || t->type != YAML_MAPPING_NODE)
      return fail(p, KC_EPARSE, "tiers[%zu] must be a mapping with plugins", c->ntiers - 1);
    yaml_node_t *plugins = NULL;
    for (yaml_node_pair_t *kv = t->data.mapping.pairs.start; kv < t->data.mapping.pairs.top; kv++)
      if (scalar(node(p, kv->key)) && strcmp(scalar(node(p, kv->key)), "plugins") == 0)
        plugins = node(p, kv->value);
    if (!plugins || plugins->type != YAML_SEQUENCE_NODE)
      return fail(p, KC_EPARSE, "tiers[%zu].plugins must be a list", c->ntiers - 1);
    size_t np = (size_t)(plugins->data.sequence.items.top - plugins->data.sequence.items.start);
    tier->plugins = calloc(np ? np : 1, sizeof(*tier->plugins));
    if (!tier->plugins)
      return KC_ENOMEM;
    for (yaml_node_item_t *pi = plugins->data.sequence.items.start;
         pi < plugins->data.sequence.items.top; pi++) {
      bool skip;
      sch_plugin_conf *pc = &tier->plugins[tier->nplugins];
      yaml_node_t *pn = node(p, *pi);
      if (!pn)
        return fail(p, KC_EPARSE, "tiers: bad plugin entry");
      int rc = parse_plugin(p, c, pn, pc, &skip);
      if (!skip || rc < 0)
        tier->nplugins++; /* counted so that sch_conf_free releases its args */
      if (rc < 0)
        return rc;
      if (skip) {
        sch_args_free(&pc->args);
        memset(pc, 0, sizeof(*pc));
      }
      for (size_t k = 0; k + 1 < tier->nplugins; k++)
        if (!skip && tier->plugins[k].plugin == pc->plugin)
          return fail(p, KC_EINVAL, "plugin \"%s\" appears twice in a tier", pc->plugin->name);
    }
  }
  return 0;
}

/* A Volcano action Kiln does not build: logged as an error and remembered, not fatal, so
 * that the operator's tiers and the other actions still apply. */
static int skip_action(sch_conf *c, const char *name) {
  char **v = realloc(c->skipped, (c->nskipped + 1) * sizeof(*v));
  if (!v)
    return KC_ENOMEM;
  c->skipped = v;
  if (!(v[c->nskipped] = strdup(name)))
    return KC_ENOMEM;
  c->nskipped++;
  KC_ERROR("scheduler config: action \"%s\" is not implemented by kiln-scheduler; skipping "
           "that action, the others run",
           name);
  return 0;
}

static int parse_actions(parser *p, const char *s, sch_conf *c) {
  char *copy = strdup(s);
  if (!copy)
    return KC_ENOMEM;
  size_t n = 1;
  for (const char *q = s; *q; q++)
    n += *q == ',';
  c->actions = calloc(n, sizeof(*c->actions));
  int rc = c->actions ? 0 : KC_ENOMEM;
  for (char *tok = copy, *next; rc == 0 && tok; tok = next) {
    next = strchr(tok, ',');
    if (next)
      *next++ = '\0';
    while (*tok == ' ' || *tok == '\t' || *tok == '\n')
      tok++;
    char *end = tok + strlen(tok);
    while (end > tok && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n'))
      *--end = '\0';
    if (!*tok)
      continue;
    const sch_action *a = sch_action_find(tok);
    if (!a && sch_action_volcano(tok)) {
      rc = skip_action(c, tok);
      continue;
    }
    if (!a) {
      rc = fail(p, KC_ENOENT, "unknown action \"%s\"", tok);
      break;
    }
    c->actions[c->nactions++] = a;
  }
  free(copy);
  if (rc == 0 && c->nactions == 0)
    rc = fail(p, KC_EINVAL, "no actions configured");
  return rc;
}

/* ---- action arguments ---- */

/* Why an argument Volcano's action reads changes nothing in Kiln with the values given, or
 * NULL when Kiln does what Volcano does with them. */
typedef const char *(*inert_fn)(const sch_args *a, const char *key);

static const char *same_outcome(const sch_args *a, const char *key) {
  (void)sch_args_bool(a, key, true); /* a value that is not a boolean is named, as in Volcano */
  return NULL;
}

static const char *no_gate_removal(const sch_args *a, const char *key) {
  (void)a;
  (void)key;
  return "kiln-scheduler does not remove scheduling gates (SchedulingGatesQueueAdmission is not "
         "built)";
}

static const char *topology_aware(const sch_args *a, const char *key) {
  if (!sch_args_bool(a, "enableTopologyAwarePreemption", false))
    return NULL; /* Volcano reads it only for topology-aware preemption, off here */
  return strcmp(key, "enableTopologyAwarePreemption") == 0
             ? "topology-aware preemption is not built; preempt tries the nodes one by one, as "
               "Volcano does without it"
             : "it shapes topology-aware preemption only, which is not built";
}

static const char *read_int(const sch_args *a, const char *key) {
  (void)sch_args_int(a, key, 0); /* a value that is not an integer is named */
  return NULL;
}

static const char *gang_retries(const sch_args *a, const char *key) {
  return sch_args_int(a, key, 0) > 0 ? "preempt does not retry a gang's placement on other nodes"
                                     : NULL;
}

/* The arguments each action's parseArguments reads in Volcano. predicateErrorCacheEnable
 * (default true) spares re-running predicates that failed for a sibling task of the same role
 * on a node. preempt keeps it for the whole action (sch_action_preempt.c); allocate and
 * backfill only add pods, so such a node cannot pass later, and Volcano's reclaim starts a
 * new cache per task: their placements are the same either way. */
static const struct action_arg {
  const char *action, *key;
  inert_fn inert;
} action_args[] = {
    {"allocate", "predicateErrorCacheEnable", same_outcome},
    {"allocate", "gateRemovalWorkerNum", no_gate_removal},
    {"backfill", "predicateErrorCacheEnable", same_outcome},
    {"reclaim", "predicateErrorCacheEnable", same_outcome},
    {"preempt", "predicateErrorCacheEnable", same_outcome},
    {"preempt", "enableTopologyAwarePreemption", topology_aware},
    {"preempt", "enableNodeOrderScoreInPreemption", topology_aware},
    {"preempt", "topologyAwarePreemptWorkerNum", topology_aware},
    {"preempt", "minCandidateNodesPercentage", topology_aware},
    {"preempt", "minCandidateNodesAbsolute", topology_aware},
    {"preempt", "maxCandidateNodesAbsolute", topology_aware},
    {"preempt", "gangPlacementRetries", gang_retries},
    {"gangpreempt", "maxDomains", read_int},
    {"gangpreempt", "allowWholeBundle", same_outcome},
    {"gangreclaim", "maxDomains", read_int},
    {"gangreclaim", "allowWholeBundle", same_outcome},
};

static const struct action_arg *action_arg_find(const char *action, const char *key) {
  for (size_t i = 0; i < sizeof(action_args) / sizeof(action_args[0]); i++)
    if (strcmp(action_args[i].action, action) == 0 && strcmp(action_args[i].key, key) == 0)
      return &action_args[i];
  return NULL;
}

/* Names, once each, the arguments of a built action that change nothing in kiln-scheduler:
 * one the action does not read (Volcano passes over it in silence), or one whose behaviour
 * is not built (a warning with the reason). */
static int check_action_args(sch_conf *c, const sch_action_conf *ac) {
  if (!sch_action_find(ac->name))
    return 0; /* an action Kiln does not build is skipped, and logged, already */
  for (size_t i = 0; i < ac->args.n; i++) {
    const char *key = ac->args.items[i].key;
    const struct action_arg *known = action_arg_find(ac->name, key);
    const char *why = known ? known->inert(&ac->args, key) : NULL;
    if (known && !why)
      continue;
    char *what = NULL;
    if (asprintf(&what, "%s: %s", ac->name, key) < 0)
      return KC_ENOMEM;
    int rc = note(&c->ignored_action_args, &c->nignored_action_args, what);
    free(what);
    if (rc < 0)
      return rc;
    if (rc > 0 && why)
      KC_WARN("scheduler config: action %s: argument \"%s\" is accepted for compatibility with "
              "Volcano and has no effect in Kiln: %s",
              ac->name, key, why);
    else if (rc > 0)
      KC_WARN("scheduler config: action %s: argument \"%s\" is not read by kiln-scheduler's %s; "
              "ignoring it",
              ac->name, key, ac->name);
  }
  return 0;
}

/* Volcano's `metrics` is a map of strings (type, address, interval, tls settings) from which
 * its cache fetches node usage for the usage plugin; anything else refuses the file. */
static int parse_metrics(parser *p, yaml_node_t *m, sch_conf *c) {
  if (m->type == YAML_SCALAR_NODE && !*scalar(m))
    return 0; /* "metrics:" with nothing */
  if (m->type != YAML_MAPPING_NODE)
    return fail(p, KC_EPARSE, "metrics must be a mapping of strings");
  for (yaml_node_pair_t *kv = m->data.mapping.pairs.start; kv < m->data.mapping.pairs.top; kv++) {
    const char *k = scalar(node(p, kv->key)), *v = scalar(node(p, kv->value));
    if (!k || !v)
      return fail(p, KC_EPARSE, "metrics: %s must be a string", k ? k : "each key");
    int rc = args_add(p, &c->metrics, k, v, "metrics");
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int parse_configurations(parser *p, yaml_node_t *seq, sch_conf *c) {
  if (seq->type != YAML_SEQUENCE_NODE)
    return fail(p, KC_EPARSE, "configurations must be a list");
  size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
  c->configurations = calloc(n ? n : 1, sizeof(*c->configurations));
  if (!c->configurations)
    return KC_ENOMEM;
  for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
       it++) {
    yaml_node_t *m = node(p, *it);
    if (!m || m->type != YAML_MAPPING_NODE)
      return fail(p, KC_EPARSE, "configurations: each entry must be a mapping");
    sch_action_conf *ac = &c->configurations[c->nconfigurations++];
    for (yaml_node_pair_t *kv = m->data.mapping.pairs.start; kv < m->data.mapping.pairs.top; kv++) {
      const char *k = scalar(node(p, kv->key));
      yaml_node_t *v = node(p, kv->value);
      if (!k || !v)
        continue;
      if (strcmp(k, "name") == 0 && scalar(v)) {
        free(ac->name);
        if (!(ac->name = strdup(scalar(v))))
          return KC_ENOMEM;
      } else if (strcmp(k, "arguments") == 0) {
        int rc = parse_args(p, v, "", &ac->args, "configurations");
        if (rc < 0)
          return rc;
      }
    }
    if (!ac->name)
      return fail(p, KC_EPARSE, "configurations: an entry has no name");
    if (!sch_action_find(ac->name) && !sch_action_volcano(ac->name))
      return fail(p, KC_ENOENT, "configurations: unknown action \"%s\"", ac->name);
  }
  for (size_t i = 0; i < c->nconfigurations; i++) {
    int rc = check_action_args(c, &c->configurations[i]);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* Volcano refuses hierarchical drf next to proportion: both would order the queues. */
static bool hdrf_with_proportion(const sch_conf *c) {
  bool hdrf = false, proportion = false;
  for (size_t t = 0; t < c->ntiers; t++)
    for (size_t k = 0; k < c->tiers[t].nplugins; k++) {
      const sch_plugin_conf *pc = &c->tiers[t].plugins[k];
      if (strcmp(pc->plugin->name, "drf") == 0 && (pc->enabled & (1u << SCH_EXT_HIERARCHY)))
        hdrf = true;
      if (strcmp(pc->plugin->name, "proportion") == 0)
        proportion = true;
    }
  return hdrf && proportion;
}

/* The document's root mapping (actions, tiers, configurations) into c. */
static int parse_root(parser *p, yaml_node_t *root, sch_conf *c) {
  if (!root || root->type != YAML_MAPPING_NODE)
    return fail(p, KC_EPARSE, "the configuration must be a YAML mapping");
  const char *actions = NULL;
  bool seen_tiers = false, seen_conf = false, seen_metrics = false;
  for (yaml_node_pair_t *kv = root->data.mapping.pairs.start; kv < root->data.mapping.pairs.top;
       kv++) {
    const char *k = scalar(node(p, kv->key));
    yaml_node_t *v = node(p, kv->value);
    if (!k || !v)
      continue;
    /* A repeated key is a mistake in the file (Go's YAML decoder refuses it too); each list
     * is parsed into arrays sized for one occurrence. */
    bool *seen = strcmp(k, "tiers") == 0            ? &seen_tiers
                 : strcmp(k, "configurations") == 0 ? &seen_conf
                 : strcmp(k, "metrics") == 0        ? &seen_metrics
                                                    : NULL;
    if (seen && *seen)
      return fail(p, KC_EPARSE, "%s is given twice", k);
    if (seen)
      *seen = true;
    int rc = 0;
    if (strcmp(k, "actions") == 0) {
      if (!(actions = scalar(v)))
        return fail(p, KC_EPARSE, "actions must be a string such as \"enqueue, allocate\"");
    } else if (strcmp(k, "tiers") == 0) {
      rc = parse_tiers(p, v, c);
    } else if (strcmp(k, "configurations") == 0) {
      rc = parse_configurations(p, v, c);
    } else if (strcmp(k, "metrics") == 0) {
      rc = parse_metrics(p, v, c);
    } else {
      KC_V(2, "scheduler config: ignoring unknown field %s", k);
    }
    if (rc < 0)
      return rc;
  }
  if (!actions)
    return fail(p, KC_EPARSE, "no actions configured");
  int rc = parse_actions(p, actions, c);
  if (rc < 0)
    return rc;
  if (hdrf_with_proportion(c))
    return fail(p, KC_EINVAL, "drf with enableHierarchy cannot be used together with proportion");
  return 0;
}

static int parse(const char *yaml, size_t len, bool lenient, sch_conf **out, char *err,
                 size_t errlen) {
  *out = NULL;
  if (err && errlen)
    err[0] = '\0';
  parser p = {.err = err, .errlen = errlen, .lenient = lenient};
  yaml_parser_t yp;
  if (!yaml_parser_initialize(&yp))
    return KC_ENOMEM;
  yaml_parser_set_input_string(&yp, (const unsigned char *)yaml, len);
  if (!yaml_parser_load(&yp, &p.doc)) {
    int rc = fail(&p, KC_EPARSE, "malformed YAML at line %zu: %s", yp.problem_mark.line + 1,
                  yp.problem ? yp.problem : "?");
    yaml_parser_delete(&yp);
    return rc;
  }
  yaml_parser_delete(&yp);
  sch_conf *c = calloc(1, sizeof(*c));
  int rc = c ? parse_root(&p, yaml_document_get_root_node(&p.doc), c) : KC_ENOMEM;
  yaml_document_delete(&p.doc);
  if (rc < 0) {
    sch_conf_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

int sch_conf_parse(const char *yaml, size_t len, sch_conf **out, char *err, size_t errlen) {
  return parse(yaml, len, false, out, err, errlen);
}

int sch_conf_reload(sch_conf **cur, const char *yaml, size_t len, char *err, size_t errlen) {
  sch_conf *next = NULL;
  int rc = sch_conf_parse(yaml, len, &next, err, errlen);
  if (rc < 0)
    return rc; /* *cur stays in force */
  sch_conf_free(*cur);
  *cur = next;
  return 0;
}

int sch_conf_default(sch_conf **out) {
  char err[256];
  int rc = parse(sch_conf_default_yaml, strlen(sch_conf_default_yaml), true, out, err, sizeof(err));
  if (rc < 0)
    KC_ERROR("scheduler: the built-in configuration does not load: %s", err);
  return rc;
}

void sch_conf_free(sch_conf *c) {
  if (!c)
    return;
  free(c->actions);
  for (size_t t = 0; c->tiers && t < c->ntiers; t++) {
    for (size_t p = 0; p < c->tiers[t].nplugins; p++)
      sch_args_free(&c->tiers[t].plugins[p].args);
    free(c->tiers[t].plugins);
  }
  free(c->tiers);
  for (size_t i = 0; c->configurations && i < c->nconfigurations; i++) {
    free(c->configurations[i].name);
    sch_args_free(&c->configurations[i].args);
  }
  free(c->configurations);
  for (size_t i = 0; i < c->nskipped; i++)
    free(c->skipped[i]);
  free(c->skipped);
  for (size_t i = 0; i < c->nskipped_plugins; i++)
    free(c->skipped_plugins[i]);
  free(c->skipped_plugins);
  for (size_t i = 0; i < c->nignored_args; i++)
    free(c->ignored_args[i]);
  free(c->ignored_args);
  for (size_t i = 0; i < c->nignored_action_args; i++)
    free(c->ignored_action_args[i]);
  free(c->ignored_action_args);
  sch_args_free(&c->metrics);
  free(c);
}
