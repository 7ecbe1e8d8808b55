/* resource-strategy-fit (Volcano pkg/scheduler/plugins/resource-strategy-fit): a scoring
 * strategy per resource, the sra score for scarce resources, and the proportional predicate.
 *
 * Arguments (nested maps flattened, "resources.nvidia.com/gpu.type"):
 *   resourceStrategyFitWeight  default 10 (also when negative); 0: no strategy score;
 *   resources.<name>.type      MostAllocated | LeastAllocated (anything else: Least);
 *   resources.<name>.weight    default 1 (also when <= 0); without any resources entry:
 *                              cpu and memory, LeastAllocated, weight 1. A <name> may end in
 *                              one trailing '*' (a prefix pattern); the exact name wins,
 *                              then the longest prefix; a lone '*' or one elsewhere is
 *                              ignored;
 *   sra.enable, sra.resources ("a,b"), sra.weight (default 0: no sra score),
 *   sra.resourceWeight.<name> (default 1, also when negative);
 *   proportional.enable, proportional.resources,
 *   proportional.resourceProportion.<name>.cpu / .memory (default 1, also when negative).
 * Strategy score: over the resources the task asks for that have an entry, each scores
 * (used + request) / allocatable (Most) or its complement (Least) times its weight, 0 when
 * the node has none of it; any resource over allocatable zeroes the node. The sum over the
 * weights, times 100 * resourceStrategyFitWeight.
 * sra score: 0 on a node lacking a resource the task asks for; else 1 - (weights of the sra
 * resources the node has) / (their total), times 100 * sra.weight: keep scarce nodes free.
 * Proportional predicate: a task asking for none of the listed resources must leave, of the
 * node's idle cpu and memory, cpu.rate cores and memory.rate GB per unit of each listed
 * resource the node has idle: "proportional of resource <name> check failed" (unresolvable). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"
#include "sch_match.h"

#define RSF_DEFAULT_WEIGHT 10
#define RSF_DIMS           (2 + SCH_MAX_SCALARS) /* cpu, memory, scalar slots */

typedef struct rsf_strategy {
  bool set;
  bool most; /* MostAllocated, else LeastAllocated */
  int64_t weight;
  size_t prefix; /* for a wildcard entry: the prefix length that matched; exact: SIZE_MAX */
} rsf_strategy;

typedef struct rsf_state {
  int64_t weight;
  rsf_strategy dim[RSF_DIMS];
  int64_t sra_weight, sra_sum;
  int64_t sra[RSF_DIMS]; /* per dimension, 0: not an sra resource */
  bool proportional;
  bool prop[SCH_MAX_SCALARS];
  double prop_cpu[SCH_MAX_SCALARS], prop_mem[SCH_MAX_SCALARS];
  int32_t prop_reason[SCH_MAX_SCALARS];
} rsf_state;

/* The dimension of a resource name in this snapshot, -1 when nothing uses it. */
static int dim_of(const sch_snapshot *snap, const char *name) {
  if (strcmp(name, "cpu") == 0)
    return 0;
  if (strcmp(name, "memory") == 0)
    return 1;
  int slot = sch_snapshot_scalar(snap, name);
  return slot < 0 ? -1 : 2 + slot;
}

static const char *dim_name(const sch_snapshot *snap, int d) {
  return d == 0 ? "cpu" : d == 1 ? "memory" : snap->scalar_names[d - 2];
}

static int64_t dim_value(const sch_resource *r, int d) {
  return d == 0 ? r->milli_cpu : d == 1 ? r->memory : r->scalar[d - 2];
}

/* Volcano isValidWildcardPattern: no '*', or one '*' at the end of something longer. */
static bool valid_pattern(const char *p, size_t len) {
  const char *star = memchr(p, '*', len);
  if (star == NULL)
    return true;
  if (len == 1) {
    KC_WARN("Single asterisk '*' is not supported as default strategy. Please use specific "
            "resource patterns like 'cloudml.gpu/*'. Pattern ignored.");
    return false;
  }
  if (star != p + len - 1) {
    KC_WARN("Invalid wildcard pattern '%.*s': only single trailing asterisk is supported (e.g., "
            "'cloudml.gpu/*'). Pattern ignored.",
            (int)len, p);
    return false;
  }
  return true;
}

/* One "resources.<name>.type|weight" entry applied to the dimensions it names. */
static void apply_strategy(rsf_state *st, const sch_snapshot *snap, const sch_args *args,
                           const char *name, size_t len) {
  char key[320];
  snprintf(key, sizeof(key), "resources.%.*s.type", (int)len, name);
  const char *type = sch_args_get(args, key);
  snprintf(key, sizeof(key), "resources.%.*s.weight", (int)len, name);
  int64_t w = sch_args_int(args, key, 1);
  rsf_strategy s = {true, type && strcmp(type, "MostAllocated") == 0, w <= 0 ? 1 : w, SIZE_MAX};
  bool wild = name[len - 1] == '*';
  for (int d = 0; d < 2 + snap->nscalars && d < RSF_DIMS; d++) {
    const char *dn = dim_name(snap, d);
    if (dn == NULL)
      continue;
    if (!wild) {
      if (strlen(dn) == len && memcmp(dn, name, len) == 0)
        st->dim[d] = s;
      continue;
    }
    size_t plen = len - 1;
    rsf_strategy *cur = &st->dim[d];
    if (strncmp(dn, name, plen) == 0 &&
        (!cur->set || (cur->prefix != SIZE_MAX && plen > cur->prefix))) {
      *cur = s;
      cur->prefix = plen;
    }
  }
}

/* Every resources.<name>.(type|weight) key, each name once; false when there is none. */
static bool parse_resources(rsf_state *st, const sch_snapshot *snap, const sch_args *args) {
  bool any = false;
  for (size_t i = 0; i < args->n; i++) {
    const char *k = args->items[i].key;
    if (strncmp(k, "resources.", 10) != 0)
      continue;
    const char *name = k + 10, *dot = strrchr(name, '.');
    if (dot == NULL || dot == name || (strcmp(dot, ".type") != 0 && strcmp(dot, ".weight") != 0))
      continue;
    size_t len = (size_t)(dot - name);
    /* The .weight key of a name that also has .type is the same entry. */
    if (strcmp(dot, ".weight") == 0) {
      char tkey[320];
      snprintf(tkey, sizeof(tkey), "resources.%.*s.type", (int)len, name);
      if (sch_args_get(args, tkey))
        continue;
    }
    any = true;
    if (valid_pattern(name, len))
      apply_strategy(st, snap, args, name, len);
  }
  return any;
}

/* Calls fn for each trimmed, non-empty name of a "a, b" list. */
static void each_name(const char *list, void (*fn)(void *, const char *), void *arg) {
  char name[256];
  for (const char *p = list; p && *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    const char *s = p, *e = p + len;
    while (s < e && (*s == ' ' || *s == '\t'))
      s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
      e--;
    if (e > s && (size_t)(e - s) < sizeof(name)) {
      memcpy(name, s, (size_t)(e - s));
      name[e - s] = '\0';
      fn(arg, name);
    }
    p = c ? c + 1 : NULL;
  }
}

typedef struct rsf_parse {
  rsf_state *st;
  const sch_snapshot *snap;
  const sch_args *args;
} rsf_parse;

static void sra_resource(void *arg, const char *name) {
  rsf_parse *p = arg;
  char key[320];
  snprintf(key, sizeof(key), "sra.resourceWeight.%s", name);
  int64_t w = sch_args_int(p->args, key, 1);
  if (w < 0)
    w = 1;
  /* A resource no node or pod has still counts in the total, as in Volcano. */
  p->st->sra_sum += w;
  int d = dim_of(p->snap, name);
  if (d >= 0)
    p->st->sra[d] = w;
}

static void prop_resource(void *arg, const char *name) {
  rsf_parse *p = arg;
  int slot = sch_snapshot_scalar(p->snap, name);
  if (slot < 0)
    return;
  char key[320];
  snprintf(key, sizeof(key), "proportional.resourceProportion.%s.cpu", name);
  double cpu = sch_args_double(p->args, key, 1.0);
  snprintf(key, sizeof(key), "proportional.resourceProportion.%s.memory", name);
  double mem = sch_args_double(p->args, key, 1.0);
  p->st->prop[slot] = true;
  p->st->prop_cpu[slot] = cpu < 0 ? 1.0 : cpu;
  p->st->prop_mem[slot] = mem < 0 ? 1.0 : mem;
}

/* ---- callbacks ---- */

/* Volcano Score: the strategy score of node n for t. */
static double strategy_score(const rsf_state *st, const sch_task *t, const sch_node *n) {
  double score = 0;
  int64_t wsum = 0;
  for (int d = 0; d < RSF_DIMS; d++) {
    int64_t req = dim_value(&t->resreq, d);
    if (req <= 0 || !st->dim[d].set)
      continue;
    double cap = (double)dim_value(&n->allocatable, d);
    double used = (double)dim_value(&n->used, d) + (double)req;
    int64_t w = st->dim[d].weight;
    if (cap != 0) {
      if (used > cap)
        return 0;
      score += (st->dim[d].most ? used : cap - used) * (double)w / cap;
    }
    wsum += w;
  }
  if (wsum > 0)
    score /= (double)wsum;
  return score * SCH_MAX_NODE_SCORE * (double)st->weight;
}

/* Volcano sraScore. */
static double sra_score(const rsf_state *st, const sch_task *t, const sch_node *n) {
  for (int d = 0; d < RSF_DIMS; d++)
    if (dim_value(&t->resreq, d) > 0 && dim_value(&n->allocatable, d) == 0)
      return 0;
  double score = 0;
  for (int d = 0; d < RSF_DIMS; d++)
    if (st->sra[d] && dim_value(&n->allocatable, d) > 0)
      score += (double)st->sra[d];
  if (st->sra_sum > 0)
    score = 1.0 - score / (double)st->sra_sum;
  return score * SCH_MAX_NODE_SCORE * (double)st->sra_weight;
}

static double rsf_node_order(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n) {
  (void)ssn;
  const rsf_state *st = ctx;
  double score = 0;
  if (st->weight > 0)
    score += strategy_score(st, t, n);
  if (st->sra_weight > 0)
    score += sra_score(st, t, n);
  return score;
}

/* Volcano checkNodeResourceIsProportional. */
static int rsf_predicate(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n,
                         sch_fit *why) {
  rsf_state *st = ctx;
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    if (st->prop[i] && t->resreq.scalar[i] > 0)
      return SCH_FIT;
  for (int i = 0; i < SCH_MAX_SCALARS; i++) {
    if (!st->prop[i] || n->allocatable.scalar[i] <= 0)
      continue;
    double value = (double)n->idle.scalar[i];
    double cpu = value * st->prop_cpu[i], mem = value * st->prop_mem[i] * 1000 * 1000;
    if ((double)(n->idle.milli_cpu - t->resreq.milli_cpu) < cpu ||
        (double)(n->idle.memory - t->resreq.memory) < mem) {
      if (st->prop_reason[i] < 0)
        st->prop_reason[i] = sch_session_reasonf(ssn, "proportional of resource %s check failed",
                                                 sch_session_snapshot(ssn)->scalar_names[i]);
      sch_fit_add(why, st->prop_reason[i]);
      return SCH_UNRESOLVABLE;
    }
  }
  return SCH_FIT;
}

/* ---- session ---- */

static void rsf_parse_args(rsf_state *st, const sch_snapshot *snap, const sch_args *args) {
  st->weight = sch_args_int(args, "resourceStrategyFitWeight", RSF_DEFAULT_WEIGHT);
  if (st->weight < 0)
    st->weight = RSF_DEFAULT_WEIGHT;
  if (!parse_resources(st, snap, args)) {
    st->dim[0] = st->dim[1] = (rsf_strategy){true, false, 1, SIZE_MAX};
  }
  rsf_parse p = {st, snap, args};
  if (sch_args_bool(args, "sra.enable", false)) {
    st->sra_weight = sch_args_int(args, "sra.weight", 0);
    each_name(sch_args_get(args, "sra.resources"), sra_resource, &p);
  }
  if (sch_args_bool(args, "proportional.enable", false)) {
    st->proportional = true;
    each_name(sch_args_get(args, "proportional.resources"), prop_resource, &p);
  }
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    st->prop_reason[i] = -1;
}

static int rsf_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  rsf_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  rsf_parse_args(st, sch_session_snapshot(ssn), &conf->args);
  *state = st;
  int rc = 0;
  if (st->proportional)
    rc = sch_add_predicate_fn(ssn, rsf_predicate, st);
  else
    KC_V(4, "proportional policy is not enabled, skip predicate function");
  if (rc == 0 && st->weight <= 0 && st->sra_weight <= 0)
    KC_V(4, "The weights of both resourceStrategyFit and sra are zero, skip node order function");
  else if (rc == 0)
    rc = sch_add_node_order_fn(ssn, rsf_node_order, st);
  return rc;
}

static void rsf_close(sch_session *ssn, void *state) {
  (void)ssn;
  free(state);
}

const sch_plugin sch_plugin_rsf = {
    .name = "resource-strategy-fit",
    .open = rsf_open,
    .close = rsf_close,
};
