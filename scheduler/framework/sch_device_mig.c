/* Volcano's vGPU device configuration and its MIG geometries (pkg/scheduler/api/devices/
 * config vgpu.go, nvidia/vgpu mig.go): see sch_device.h. Pure: the YAML text comes from the
 * ConfigMap the shell watches. */
#include "sch_device.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* A configuration is a few hundred bytes; aliases can make a small document describe a
 * large tree, so what is visited is bounded. */
enum { MIG_MAX_VISITS = 10000 };

typedef struct walk {
  yaml_document_t doc;
  size_t visits;
  char *err;
  size_t errlen;
} walk;

__attribute__((format(printf, 3, 4))) static int bad(walk *w, int rc, const char *fmt, ...) {
  if (w->err && w->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, w->errlen, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static yaml_node_t *get(walk *w, int id) {
  return yaml_document_get_node(&w->doc, id);
}

/* The value of key in mapping m (NULL when m is not a mapping or has no such key). */
static yaml_node_t *member(walk *w, yaml_node_t *m, const char *key) {
  if (!m || m->type != YAML_MAPPING_NODE)
    return NULL;
  for (yaml_node_pair_t *kv = m->data.mapping.pairs.start; kv < m->data.mapping.pairs.top; kv++) {
    yaml_node_t *k = get(w, kv->key);
    if (k && k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
      return get(w, kv->value);
  }
  return NULL;
}

static const char *text(yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The items of sequence n (0 when it is not one), charged to the visit budget. */
static int items(walk *w, yaml_node_t *n, yaml_node_item_t **first, size_t *count) {
  *first = NULL;
  *count = 0;
  if (!n || n->type != YAML_SEQUENCE_NODE)
    return 0;
  *first = n->data.sequence.items.start;
  *count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
  if (*count > MIG_MAX_VISITS - w->visits)
    return bad(w, KC_ETOOBIG, "more than %d items (YAML aliases?)", MIG_MAX_VISITS);
  w->visits += *count;
  return 0;
}

/* A YAML integer as Go's yaml.v2 reads one into an int32 (anything else: the error). */
static int integer(walk *w, yaml_node_t *n, const char *what, int64_t *out) {
  const char *s = text(n);
  *out = 0;
  if (!s)
    return n ? bad(w, KC_EINVAL, "%s is not a number", what) : 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || v < 0 || v > INT32_MAX)
    return bad(w, KC_EINVAL, "%s: cannot read %s as a number", what, s);
  *out = v;
  return 0;
}

static char *dup_text(yaml_node_t *n) {
  return strdup(text(n) ? text(n) : "");
}

static int parse_instance(walk *w, yaml_node_t *n, sch_mig_template *t) {
  if (!(t->name = dup_text(member(w, n, "name"))))
    return KC_ENOMEM;
  int64_t count = 0;
  int rc = integer(w, member(w, n, "memory"), "memory", &t->memory);
  if (rc == 0)
    rc = integer(w, member(w, n, "count"), "count", &count);
  t->count = (int32_t)count;
  return rc;
}

/* One group: its name and instances; positions past 64 are not used. */
static int parse_group(walk *w, yaml_node_t *n, sch_mig_group *g) {
  yaml_node_item_t *it;
  size_t k;
  if (!(g->group = dup_text(member(w, n, "group"))))
    return KC_ENOMEM;
  int rc = items(w, member(w, n, "geometries"), &it, &k);
  if (rc == 0 && k > 0 && !(g->inst = calloc(k, sizeof(*g->inst))))
    rc = KC_ENOMEM;
  int32_t positions = 0;
  for (size_t i = 0; rc == 0 && i < k; i++) {
    rc = parse_instance(w, get(w, it[i]), &g->inst[g->ninst++]);
    sch_mig_template *t = &g->inst[g->ninst - 1];
    t->count =
        t->count > SCH_MIG_MAX_POSITIONS - positions ? SCH_MIG_MAX_POSITIONS - positions : t->count;
    positions += t->count;
  }
  return rc;
}

static int parse_models(walk *w, yaml_node_t *n, sch_mig_models *m) {
  yaml_node_item_t *it;
  size_t k;
  int rc = items(w, member(w, n, "models"), &it, &k);
  if (rc == 0 && k > 0 && !(m->models = calloc(k, sizeof(*m->models))))
    rc = KC_ENOMEM;
  for (size_t i = 0; rc == 0 && i < k; i++)
    if (!(m->models[m->nmodels++] = dup_text(get(w, it[i]))))
      rc = KC_ENOMEM;
  if (rc == 0)
    rc = items(w, member(w, n, "allowedGeometries"), &it, &k);
  if (rc == 0 && k > 0 && !(m->groups = calloc(k, sizeof(*m->groups))))
    rc = KC_ENOMEM;
  for (size_t i = 0; rc == 0 && i < k; i++)
    rc = parse_group(w, get(w, it[i]), &m->groups[m->ngroups++]);
  return rc;
}

static int parse_nvidia(walk *w, yaml_node_t *nv, sch_vgpu_config *c) {
  int rc = integer(w, member(w, nv, "gpuMemoryFactor"), "gpuMemoryFactor", &c->gpu_memory_factor);
  yaml_node_item_t *it;
  size_t k;
  if (rc == 0)
    rc = items(w, member(w, nv, "knownMigGeometries"), &it, &k);
  if (rc == 0 && k > 0 && !(c->known = calloc(k, sizeof(*c->known))))
    rc = KC_ENOMEM;
  for (size_t i = 0; rc == 0 && i < k; i++)
    rc = parse_models(w, get(w, it[i]), &c->known[c->nknown++]);
  return rc;
}

int sch_vgpu_config_parse(const char *yaml, size_t len, sch_vgpu_config **out, char *err,
                          size_t errlen) {
  *out = NULL;
  walk w = {.err = err, .errlen = errlen};
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p))
    return KC_ENOMEM;
  yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
  int ok = yaml_parser_load(&p, &w.doc);
  if (!ok) {
    int rc = bad(&w, KC_EINVAL, "line %zu: %s", p.problem_mark.line + 1,
                 p.problem ? p.problem : "not YAML");
    yaml_parser_delete(&p);
    return rc;
  }
  yaml_parser_delete(&p);
  sch_vgpu_config *c = calloc(1, sizeof(*c));
  int rc = c ? 0 : KC_ENOMEM;
  yaml_node_t *root = yaml_document_get_root_node(&w.doc);
  if (rc == 0 && root && root->type != YAML_MAPPING_NODE)
    rc = bad(&w, KC_EINVAL, "not a mapping");
  if (rc == 0)
    rc = parse_nvidia(&w, member(&w, root, "nvidia"), c);
  yaml_document_delete(&w.doc);
  if (rc < 0) {
    sch_vgpu_config_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

void sch_vgpu_config_free(sch_vgpu_config *c) {
  if (!c)
    return;
  for (int32_t i = 0; i < c->nknown; i++) {
    sch_mig_models *m = &c->known[i];
    for (int32_t j = 0; j < m->nmodels; j++)
      free(m->models[j]);
    for (int32_t j = 0; j < m->ngroups; j++) {
      for (int32_t k = 0; k < m->groups[j].ninst; k++)
        free(m->groups[j].inst[k].name);
      free(m->groups[j].inst);
      free(m->groups[j].group);
    }
    free(m->models);
    free(m->groups);
  }
  free(c->known);
  free(c);
}

/* Volcano extractGeometryFromType: the first entry one of whose models the type contains. */
const sch_mig_models *sch_mig_models_for(const sch_vgpu_config *c, const char *type) {
  for (int32_t i = 0; c && i < c->nknown; i++)
    for (int32_t j = 0; j < c->known[i].nmodels; j++)
      if (strstr(type, c->known[i].models[j]))
        return &c->known[i];
  return NULL;
}

/* ---- fitting a request to an instance (Volcano findMatch, pickFromGroup) ---- */

static int32_t first_position(const sch_mig_group *g, int32_t inst) {
  int32_t pos = 0;
  for (int32_t i = 0; i < inst; i++)
    pos += g->inst[i].count;
  return pos;
}

int32_t sch_mig_instance_at(const sch_mig_group *g, int32_t pos) {
  int32_t sum = 0;
  for (int32_t i = 0; i < g->ninst; i++) {
    if (pos >= sum && pos < sum + g->inst[i].count)
      return i;
    sum += g->inst[i].count;
  }
  return -1;
}

static uint64_t bit(int32_t pos) {
  return pos >= 0 && pos < SCH_MIG_MAX_POSITIONS ? (uint64_t)1 << pos : 0;
}

/* pickFromGroup: the instances by memory ascending (ties in their order); with nothing used
 * the smallest that holds the request, else only instances of a kind already in use, at
 * their first free place. The position, or -1. */
static int32_t pick(const sch_mig_group *g, uint64_t used, int64_t request, int64_t *mem) {
  int32_t done[SCH_MIG_MAX_POSITIONS] = {0}, ndone = 0;
  while (ndone < g->ninst && ndone < SCH_MIG_MAX_POSITIONS) {
    int32_t best = -1;
    for (int32_t i = 0; i < g->ninst; i++) {
      bool seen = false;
      for (int32_t j = 0; j < ndone && !seen; j++)
        seen = done[j] == i;
      if (!seen && (best < 0 || g->inst[i].memory < g->inst[best].memory))
        best = i;
    }
    done[ndone++] = best;
    const sch_mig_template *t = &g->inst[best];
    int32_t from = first_position(g, best), nused = 0, free_at = -1;
    for (int32_t k = 0; k < t->count; k++) {
      bool u = (used & bit(from + k)) != 0;
      nused += u;
      if (!u && free_at < 0)
        free_at = from + k;
    }
    if (t->memory < request)
      continue;
    if (used == 0 || (nused > 0 && nused < t->count)) {
      *mem = t->memory;
      return used == 0 ? from : free_at;
    }
  }
  return -1;
}

bool sch_mig_find(const sch_mig_models *m, int32_t group_in_use, uint64_t used, int64_t request,
                  int32_t *group, int32_t *pos, int64_t *mem) {
  *group = *pos = -1;
  *mem = 0;
  if (!m)
    return false;
  if (group_in_use >= 0) {
    if (group_in_use >= m->ngroups)
      return false;
    *pos = pick(&m->groups[group_in_use], used, request, mem);
    *group = *pos >= 0 ? group_in_use : -1;
    return *pos >= 0;
  }
  for (int32_t i = 0; i < m->ngroups; i++)
    if ((*pos = pick(&m->groups[i], 0, request, mem)) >= 0) {
      *group = i;
      return true;
    }
  return false;
}
