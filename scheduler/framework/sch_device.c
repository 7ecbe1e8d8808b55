/* Device bookkeeping: see sch_device.h. The rules are Volcano's (nvidia/vgpu utils.go
 * checkNodeGPUSharingPredicateAndScore and hamicore.go; nvidia/gpushare share.go), each
 * noted where it is applied. */
#include "sch_device.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kc_time.h"

typedef struct dev_node {
  int32_t first, n;
  bool vgpu; /* the node's GPUs are vGPUs (else GPU share / number) */
  bool mig;  /* vGPU sharing mode "mig" (else "hami-core"): its last GPU's, as in Volcano */
} dev_node;

typedef struct dev_task {
  sch_dev_use *u;
  int32_t n;
  bool held;  /* counted in the GPUs' use now */
  bool fresh; /* chosen in this session (else read from the pod) */
  bool vgpu;
} dev_task;

struct sch_devices {
  const sch_snapshot *snap;
  sch_dev_conf conf;
  sch_gpu *gpus;
  int32_t ngpus, cap_gpus;
  char **strs;
  size_t nstrs, cap_strs;
  dev_node *nodes;
  dev_task *tasks;
};

/* ---- small string helpers (no strtok) ---- */

/* The next field of s up to sep (or the end) into [*b, *e); returns where the one after
 * starts, or NULL after the last. */
static const char *field(const char *s, char sep, const char **b, const char **e) {
  const char *p = strchr(s, sep);
  *b = s;
  *e = p ? p : s + strlen(s);
  return p ? p + 1 : NULL;
}

static char *dup_range(sch_devices *d, const char *b, const char *e) {
  if (d->nstrs == d->cap_strs) {
    size_t nc = d->cap_strs ? d->cap_strs * 2 : 16;
    char **v = realloc(d->strs, nc * sizeof(*v));
    if (!v)
      return NULL;
    d->strs = v;
    d->cap_strs = nc;
  }
  char *s = strndup(b, (size_t)(e - b));
  if (s)
    d->strs[d->nstrs++] = s;
  return s;
}

/* Go's strconv.Atoi on [b, e), 0 when it is not an integer (Volcano ignores the error). */
static int64_t atoi_range(const char *b, const char *e, bool *ok) {
  int64_t v = 0;
  bool neg = false;
  const char *p = b;
  if (p < e && (*p == '-' || *p == '+'))
    neg = *p++ == '-';
  *ok = p < e;
  for (; p < e; p++) {
    if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10) {
      *ok = false;
      return 0;
    }
    v = v * 10 + (*p - '0');
  }
  return *ok ? (neg ? -v : v) : 0;
}

static bool eq_range(const char *b, const char *e, const char *s) {
  return (size_t)(e - b) == strlen(s) && strncmp(b, s, (size_t)(e - b)) == 0;
}

/* Go's strconv.ParseBool, false on error. */
static bool parse_bool(const char *b, const char *e) {
  static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
    if (eq_range(b, e, yes[i]))
      return true;
  return false;
}

static int add_gpu(sch_devices *d, const sch_gpu *g) {
  if (d->ngpus == d->cap_gpus) {
    int32_t nc = d->cap_gpus ? d->cap_gpus * 2 : 64;
    sch_gpu *v = realloc(d->gpus, (size_t)nc * sizeof(*v));
    if (!v)
      return KC_ENOMEM;
    d->gpus = v;
    d->cap_gpus = nc;
  }
  d->gpus[d->ngpus++] = *g;
  return 0;
}

/* ---- nodes ---- */

/* Volcano's handshake: a device plugin that has not answered a "Requesting_<time>" within
 * 60 s, or one marked "Deleted", has left: the node has no vGPUs. */
static bool handshake_alive(const char *hs, int64_t now) {
  if (strstr(hs, "Requesting")) {
    const char *u = strchr(hs, '_');
    int y, mo, da, h, mi, s;
    char rfc[40];
    int64_t t = INT64_MIN / 2;
    if (u && sscanf(u + 1, "%4d.%2d.%2d %2d:%2d:%2d", &y, &mo, &da, &h, &mi, &s) == 6) {
      snprintf(rfc, sizeof(rfc), "%04d-%02d-%02dT%02d:%02d:%02dZ", y, mo, da, h, mi, s);
      if (kc_time_parse(rfc, &t) < 0)
        t = INT64_MIN / 2;
    }
    return now <= t + 60;
  }
  return strstr(hs, "Deleted") == NULL;
}

/* A GPU registered in mode "mig" takes the geometries of its type; without them it shares
 * by hami-core (Volcano: "extract mig geometry error and fall back to hamicore mode"). The
 * GPU's mode. */
static bool gpu_mode(sch_devices *d, sch_gpu *g, const char *mb, const char *me) {
  g->mig_group = -1;
  if (!eq_range(mb, me, "mig"))
    return false;
  g->mig = sch_mig_models_for(d->conf.vgpu_config, g->type);
  return g->mig != NULL;
}

/* "UUID,COUNT,MEMORY,TYPE,HEALTH,MODE:" per GPU (Volcano decodeNodeDevices). A GPU of fewer
 * than six fields makes the whole node have none. The node's mode is its last GPU's. */
static int node_vgpus(sch_devices *d, const char *reg, bool *mig) {
  if (!strchr(reg, ':'))
    return 0;
  int32_t first = d->ngpus, id = 0;
  const char *next = reg, *b, *e;
  while (next) {
    next = field(next, ':', &b, &e);
    const char *it = memchr(b, ',', (size_t)(e - b)) ? b : NULL;
    int32_t pos = id++;
    if (!it)
      continue;
    const char *fb[6], *fe[6];
    int nf = 0;
    const char *q = b;
    while (q && q <= e && nf < 6) {
      const char *c = memchr(q, ',', (size_t)(e - q));
      fb[nf] = q;
      fe[nf++] = c ? c : e;
      q = c ? c + 1 : NULL;
    }
    if (nf < 6) {
      d->ngpus = first; /* Volcano: "wrong Node GPU info", no devices */
      return 0;
    }
    bool ok;
    sch_gpu g = {0};
    g.id = pos;
    if (!(g.uuid = dup_range(d, fb[0], fe[0])) || !(g.type = dup_range(d, fb[3], fe[3])))
      return KC_ENOMEM;
    g.number = atoi_range(fb[1], fe[1], &ok);
    g.memory = atoi_range(fb[2], fe[2], &ok);
    g.health = parse_bool(fb[4], fe[4]);
    *mig = gpu_mode(d, &g, fb[5], fe[5]);
    if (add_gpu(d, &g) < 0)
      return KC_ENOMEM;
  }
  return 0;
}

static int64_t cap_value(const Kiln__Resource *r, const char *name, bool *found) {
  *found = false;
  for (size_t i = 0; r && i < r->n_scalar; i++)
    if (strcmp(r->scalar[i]->name, name) == 0) {
      *found = true;
      int64_t m = r->scalar[i]->milli_value;
      return m / 1000 + (m % 1000 > 0); /* Quantity.Value rounds up */
    }
  return 0;
}

/* GPU share / number (Volcano gpushare NewGPUDevices): capacity volcano.sh/gpu-number cards
 * sharing volcano.sh/gpu-memory evenly, less the ids in volcano.sh/gpu-unhealthy-ids. */
static int node_share(sch_devices *d, const Kiln__Node *n) {
  bool has_mem, has_num;
  int64_t mem = cap_value(n->capacity, "volcano.sh/gpu-memory", &has_mem);
  int64_t num = cap_value(n->capacity, "volcano.sh/gpu-number", &has_num);
  if (!has_mem || !has_num || num <= 0)
    return 0;
  const char *bad = n->devices ? n->devices->gpu_unhealthy_ids : NULL;
  for (int64_t i = 0; i < num && i < 4096; i++) {
    bool unhealthy = false;
    const char *next = bad && bad[0] ? bad : NULL, *b, *e;
    while (next && !unhealthy) {
      bool ok;
      next = field(next, ',', &b, &e);
      int64_t v = atoi_range(b, e, &ok);
      unhealthy = ok && v == i;
    }
    if (unhealthy)
      continue;
    sch_gpu g = {.id = (int32_t)i, .memory = mem / num, .health = true, .mig_group = -1};
    if (add_gpu(d, &g) < 0)
      return KC_ENOMEM;
  }
  return 0;
}

static int build_node(sch_devices *d, int32_t ni, int64_t now) {
  const Kiln__Node *n = d->snap->nodes[ni].node;
  dev_node *dn = &d->nodes[ni];
  dn->first = d->ngpus;
  int rc = 0;
  if (d->conf.vgpu) {
    const Kiln__NodeDevices *nd = n ? n->devices : NULL;
    dn->vgpu = true;
    if (nd && nd->vgpu_register && nd->vgpu_register[0] && nd->vgpu_handshake &&
        nd->vgpu_handshake[0] && handshake_alive(nd->vgpu_handshake, now))
      rc = node_vgpus(d, nd->vgpu_register, &dn->mig);
  } else if ((d->conf.gpu_sharing || d->conf.gpu_number) && n) {
    rc = node_share(d, n);
  }
  dn->n = d->ngpus - dn->first;
  return rc;
}

/* ---- what pods hold ---- */

static const Kiln__PodDevices *pdev(const sch_task *t) {
  return t->pod ? t->pod->devices : NULL;
}

static int push_use(dev_task *dt, sch_dev_use u) {
  sch_dev_use *v = realloc(dt->u, (size_t)(dt->n + 1) * sizeof(*v));
  if (!v)
    return KC_ENOMEM;
  dt->u = v;
  dt->u[dt->n++] = u;
  return 0;
}

/* A MIG instance taken (sign +1: its group becomes the GPU's) or given back (the GPU has no
 * group once it has no instance in use). */
static void apply_mig(sch_gpu *g, const sch_dev_use *u, int sign) {
  if (u->mig_pos < 0 || u->mig_pos >= SCH_MIG_MAX_POSITIONS)
    return;
  uint64_t b = (uint64_t)1 << u->mig_pos;
  if (sign > 0) {
    g->mig_group = u->mig_group;
    g->mig_used |= b;
  } else if ((g->mig_used &= ~b) == 0) {
    g->mig_group = -1;
  }
}

static void apply(sch_devices *d, const dev_task *dt, int sign) {
  for (int32_t i = 0; i < dt->n; i++) {
    sch_gpu *g = &d->gpus[dt->u[i].gpu];
    g->used_num += sign;
    g->used_mem += sign * dt->u[i].mem;
    g->used_core += sign * dt->u[i].core;
    apply_mig(g, &dt->u[i], sign);
  }
}

/* A divisor for the memory a MIG instance counts (gpuMemoryFactor > 1), else 1. */
static int64_t mem_factor(const sch_devices *d) {
  const sch_vgpu_config *c = d->conf.vgpu_config;
  return c && c->gpu_memory_factor > 1 ? c->gpu_memory_factor : 1;
}

/* An assignment's device on a MIG GPU, "UUID[group-position]" (Volcano decodeMIGID, then
 * addMigUsed): the instance's memory counts, not the annotation's; a group the GPU's
 * geometries do not have counts none. false when the id is not of that form (Volcano then
 * counts nothing for it). */
static bool read_mig_id(const sch_devices *d, const sch_gpu *g, const char *id, sch_dev_use *u) {
  const char *open = strchr(id, '['), *close = strchr(id, ']');
  if (!open || !close || open > close)
    return false;
  const char *dash = memchr(open + 1, '-', (size_t)(close - open - 1));
  if (!dash || memchr(dash + 1, '-', (size_t)(close - dash - 1)))
    return false;
  bool ok;
  int64_t pos = atoi_range(dash + 1, close, &ok);
  if (!ok)
    return false;
  u->mem = 0;
  for (int32_t k = 0; g->mig && k < g->mig->ngroups; k++) {
    const sch_mig_group *grp = &g->mig->groups[k];
    if (!eq_range(open + 1, dash, grp->group))
      continue;
    int32_t inst = pos < INT32_MAX ? sch_mig_instance_at(grp, (int32_t)pos) : -1;
    if (inst >= 0) {
      u->mig_group = k;
      u->mig_pos = (int32_t)pos;
      u->mem = grp->inst[inst].memory / mem_factor(d);
    }
    break;
  }
  return true;
}

/* volcano.sh/vgpu-ids-new: containers by ';', devices "UUID,TYPE,MEM,CORES" by ':'; each
 * goes to the node's first GPU whose UUID the entry's contains (Volcano addResource). */
static int read_vgpu_ids(sch_devices *d, dev_task *dt, const dev_node *dn, const char *ids) {
  int32_t ctr = 0;
  const char *cnext = ids, *cb, *ce;
  while (cnext) {
    cnext = field(cnext, ';', &cb, &ce);
    const char *q = cb;
    while (q && q < ce) {
      const char *c = memchr(q, ':', (size_t)(ce - q)), *end = c ? c : ce;
      const char *f[5] = {q}, *fe[5];
      int nf = 1;
      for (const char *p = q; p < end && nf < 5; p++)
        if (*p == ',') {
          fe[nf - 1] = p;
          f[nf++] = p + 1;
        }
      if (nf >= 4) {
        fe[nf - 1] = end;
        bool ok;
        char uuid[256];
        snprintf(uuid, sizeof(uuid), "%.*s", (int)(fe[0] - f[0]), f[0]);
        int64_t mem = atoi_range(f[2], fe[2], &ok);
        sch_dev_use u = {-1, ctr, mem, atoi_range(f[3], fe[3], &ok), -1, -1, mem};
        for (int32_t g = dn->first; g < dn->first + dn->n && u.gpu < 0; g++)
          if (strstr(uuid, d->gpus[g].uuid))
            u.gpu = g;
        bool counted = u.gpu >= 0 && (!dn->mig || read_mig_id(d, &d->gpus[u.gpu], uuid, &u));
        if (counted && push_use(dt, u) < 0)
          return KC_ENOMEM;
      }
      q = c ? c + 1 : NULL;
    }
    ctr++;
  }
  return 0;
}

/* volcano.sh/gpu-index "0,1": every id must parse, or the pod holds none (GetGPUIndex). */
static int read_gpu_index(sch_devices *d, dev_task *dt, const dev_node *dn, const char *idx,
                          int64_t mem) {
  const char *next = idx, *b, *e;
  int32_t start = dt->n;
  while (next) {
    bool ok;
    next = field(next, ',', &b, &e);
    int64_t id = atoi_range(b, e, &ok);
    if (!ok) {
      dt->n = start;
      return 0;
    }
    for (int32_t g = dn->first; g < dn->first + dn->n; g++)
      if (d->gpus[g].id == id && push_use(dt, (sch_dev_use){g, 0, mem, 0, -1, -1, mem}) < 0)
        return KC_ENOMEM;
  }
  return 0;
}

static int read_task(sch_devices *d, int32_t ti) {
  const sch_task *t = &d->snap->tasks[ti];
  const Kiln__PodDevices *pd = pdev(t);
  if (!pd || t->node < 0 ||
      !(sch_task_status_allocated(t->status) || t->status == SCH_TASK_RELEASING))
    return 0;
  dev_task *dt = &d->tasks[ti];
  const dev_node *dn = &d->nodes[t->node];
  int rc = 0;
  if (dn->vgpu && pd->vgpu_ids && pd->vgpu_ids[0]) {
    dt->vgpu = true;
    rc = read_vgpu_ids(d, dt, dn, pd->vgpu_ids);
  } else if (!dn->vgpu && (pd->gpu_memory > 0 || pd->gpu_number > 0) && pd->gpu_index &&
             pd->gpu_index[0]) {
    rc = read_gpu_index(d, dt, dn, pd->gpu_index, pd->gpu_memory);
  }
  if (rc == 0 && dt->n > 0) {
    dt->held = true;
    apply(d, dt, +1);
  }
  return rc;
}

int sch_devices_new(const sch_snapshot *snap, const sch_dev_conf *conf, int64_t now,
                    sch_devices **out) {
  *out = NULL;
  sch_devices *d = calloc(1, sizeof(*d));
  if (!d)
    return KC_ENOMEM;
  d->snap = snap;
  d->conf = *conf;
  d->nodes = calloc((size_t)snap->nnodes + 1, sizeof(*d->nodes));
  d->tasks = calloc((size_t)snap->ntasks + 1, sizeof(*d->tasks));
  int rc = d->nodes && d->tasks ? 0 : KC_ENOMEM;
  for (int32_t i = 0; rc == 0 && i < snap->nnodes; i++)
    rc = build_node(d, i, now);
  for (int32_t i = 0; rc == 0 && i < snap->ntasks; i++)
    rc = read_task(d, i);
  if (rc < 0) {
    sch_devices_free(d);
    return rc;
  }
  *out = d;
  return 0;
}

void sch_devices_free(sch_devices *d) {
  if (!d)
    return;
  for (int32_t i = 0; d->tasks && i < d->snap->ntasks; i++)
    free(d->tasks[i].u);
  for (size_t i = 0; i < d->nstrs; i++)
    free(d->strs[i]);
  free(d->strs);
  free(d->tasks);
  free(d->nodes);
  free(d->gpus);
  free(d);
}

/* ---- requests and fit ---- */

static bool wants_vgpu(const sch_devices *d, const sch_task *t) {
  const Kiln__PodDevices *pd = pdev(t);
  return d->conf.vgpu && pd && pd->n_vgpu > 0;
}

static bool wants_share(const sch_devices *d, const sch_task *t) {
  const Kiln__PodDevices *pd = pdev(t);
  return pd && ((d->conf.gpu_sharing && pd->gpu_memory > 0) ||
                (d->conf.gpu_number && pd->gpu_number > 0));
}

bool sch_devices_requests(const sch_devices *d, const sch_task *t) {
  return wants_vgpu(d, t) || wants_share(d, t);
}

int32_t sch_devices_node(const sch_devices *d, int32_t node, int32_t *first) {
  *first = d->nodes[node].first;
  return d->nodes[node].n;
}

const sch_gpu *sch_devices_gpu(const sch_devices *d, int32_t gpu) {
  return &d->gpus[gpu];
}

/* Case-insensitive strings.Contains(ToUpper(hay), ToUpper(needle[0..n))). */
static bool contains_upper(const char *hay, const char *needle, size_t n) {
  if (n == 0)
    return true;
  for (const char *h = hay; *h; h++)
    if (strncasecmp(h, needle, n) == 0)
      return true;
  return false;
}

/* Some comma-separated item of list is in type (Volcano checkGPUtype's loops). */
static bool any_in(const char *list, const char *type) {
  const char *next = list, *b, *e;
  while (next) {
    next = field(next, ',', &b, &e);
    if (contains_upper(type, b, (size_t)(e - b)))
      return true;
  }
  return false;
}

/* Volcano checkType: an NVIDIA card, then nvidia.com/use-gputype, else nouse-gputype. */
static bool type_ok(const Kiln__PodDevices *pd, const sch_gpu *g) {
  if (!strstr(g->type, "NVIDIA"))
    return false;
  if (pd->use_gputype && pd->use_gputype[0])
    return any_in(pd->use_gputype, g->type);
  if (pd->nouse_gputype && pd->nouse_gputype[0])
    return !any_in(pd->nouse_gputype, g->type);
  return true;
}

/* Volcano GPUScore, after the task was added to g. */
static double gpu_score(const char *policy, const sch_gpu *g) {
  if (policy && strcmp(policy, "binpack") == 0)
    return g->memory > 0 ? 100.0 * (double)g->used_mem / (double)g->memory : 0;
  if (policy && strcmp(policy, "spread") == 0)
    return g->used_num == 1 ? 100 : 0;
  return 0;
}

/* Volcano MIGFactory.TryAddPod: the request (times gpuMemoryFactor) to an instance of the
 * GPU's geometries; u then counts the instance's memory (divided by the factor). As in
 * Volcano, the scratch GPU's instances in use do not change while one task is fitted. */
static bool try_mig(const sch_devices *d, const sch_gpu *g, sch_dev_use *u) {
  int64_t f = mem_factor(d), inst_mem;
  if (!sch_mig_find(g->mig, g->mig_group, g->mig_used, u->asked * f, &u->mig_group, &u->mig_pos,
                    &inst_mem))
    return false;
  u->mem = inst_mem / f;
  return true;
}

/* Chooses t's vGPUs on node over a scratch copy of its GPUs (the real table is not
 * touched). uses (capacity cap) receives them; false when some container finds too few. */
static bool choose_vgpu(const sch_devices *d, const sch_task *t, const dev_node *dn,
                        sch_gpu *scratch, sch_dev_use *uses, int32_t cap, int32_t *nuses,
                        double *score) {
  const Kiln__PodDevices *pd = pdev(t);
  memcpy(scratch, d->gpus + dn->first, (size_t)dn->n * sizeof(*scratch));
  *nuses = 0;
  *score = 0;
  for (size_t c = 0; c < pd->n_vgpu; c++) {
    const Kiln__VgpuRequest *r = pd->vgpu[c];
    int64_t nums = r->nums;
    if (nums > dn->n)
      return false; /* "no enough gpu cards on node" */
    for (int32_t i = dn->n - 1; i >= 0 && nums > 0; i--) {
      sch_gpu *g = &scratch[i];
      if (g->number <= g->used_num)
        continue;
      int64_t mem = r->memory_percentage != 101
                        ? (int64_t)((double)g->memory * (double)r->memory_percentage / 100.0)
                        : r->memory;
      if (g->memory - g->used_mem < mem || g->used_core + r->cores > 100)
        continue;
      if (r->cores == 100 && g->used_num > 0) /* a whole card's cores: alone on it */
        continue;
      if (g->used_core == 100 && r->cores == 0) /* no core-less task on a full card */
        continue;
      if (!type_ok(pd, g))
        continue;
      sch_dev_use u = {dn->first + i, (int32_t)c, mem, r->cores, -1, -1, mem};
      if (dn->mig && !try_mig(d, g, &u))
        continue;
      g->used_num++;
      g->used_mem += u.mem;
      g->used_core += r->cores;
      nums--;
      if (*nuses < cap)
        uses[(*nuses)++] = u;
      *score += gpu_score(d->conf.policy, g);
    }
    if (nums > 0)
      return false; /* "not enough gpu fitted on this node" */
  }
  return true;
}

/* GPU share (by memory) and GPU number (whole idle cards), ids ascending (Volcano
 * predicateGPUbyMemory / predicateGPUbyNumber). Returns the reason prefix on failure. */
static const char *choose_share(const sch_devices *d, const sch_task *t, const dev_node *dn,
                                sch_dev_use *uses, int32_t cap, int32_t *nuses) {
  const Kiln__PodDevices *pd = pdev(t);
  *nuses = 0;
  if (d->conf.gpu_sharing && pd->gpu_memory > 0) {
    int32_t best = -1;
    for (int32_t g = dn->first; g < dn->first + dn->n; g++) {
      const sch_gpu *x = &d->gpus[g];
      int64_t idle = x->memory - x->used_mem;
      if (idle >= pd->gpu_memory && (best < 0 || x->id < d->gpus[best].id))
        best = g;
    }
    if (best < 0)
      return "GpuShare no enough gpu memory on node";
    if (cap > 0)
      uses[(*nuses)++] = (sch_dev_use){best, 0, pd->gpu_memory, 0, -1, -1, pd->gpu_memory};
  }
  if (d->conf.gpu_number && pd->gpu_number > 0) {
    int64_t idle = 0;
    for (int32_t g = dn->first; g < dn->first + dn->n; g++)
      idle += d->gpus[g].used_num == 0;
    if (idle < pd->gpu_number)
      return "GpuNumber no enough gpu number on node";
    *nuses = 0; /* Volcano's Allocate: the number's ids are the pod's gpu-index */
    for (int32_t g = dn->first; g < dn->first + dn->n && *nuses < pd->gpu_number; g++)
      if (d->gpus[g].used_num == 0 && *nuses < cap)
        uses[(*nuses)++] = (sch_dev_use){g, 0, pd->gpu_memory, 0, -1, -1, pd->gpu_memory};
  }
  return NULL;
}

static int32_t uses_cap(const sch_task *t) {
  const Kiln__PodDevices *pd = pdev(t);
  int64_t n = 1;
  for (size_t c = 0; pd && c < pd->n_vgpu; c++)
    n += pd->vgpu[c]->nums > 0 ? pd->vgpu[c]->nums : 0;
  if (pd && pd->gpu_number > 0)
    n += pd->gpu_number;
  return n > 65536 ? 65536 : (int32_t)n;
}

/* Fit and choice in one: uses may be NULL (cap 0) to only answer. */
static int decide(const sch_devices *d, const sch_task *t, int32_t node, sch_dev_use *uses,
                  int32_t cap, int32_t *nuses, double *score, char *why, size_t len) {
  const dev_node *dn = &d->nodes[node];
  const char *name = d->snap->nodes[node].name;
  *score = 0;
  *nuses = 0;
  if (wants_vgpu(d, t)) {
    const Kiln__PodDevices *pd = pdev(t);
    if (dn->n == 0) {
      snprintf(why, len, "node not initialized with device%s", SCH_DEV_VGPU_NAME);
      return SCH_UNSCHEDULABLE;
    }
    /* volcano.sh/vgpu-mode, when the pod names one, is the node's ("pod required sharing
     * mode %s is not the same as the node mode %s"). */
    if (pd->vgpu_mode && pd->vgpu_mode[0] &&
        strcmp(pd->vgpu_mode, dn->mig ? "mig" : "hami-core") != 0) {
      snprintf(why, len, "hami-vgpuDeviceSharing error");
      return SCH_UNSCHEDULABLE;
    }
    sch_gpu stack[16], *scratch = dn->n <= 16 ? stack : malloc((size_t)dn->n * sizeof(*scratch));
    if (!scratch)
      return KC_ENOMEM;
    sch_dev_use one;
    bool ok = choose_vgpu(d, t, dn, scratch, uses ? uses : &one, uses ? cap : 0, nuses, score);
    if (scratch != stack)
      free(scratch);
    if (!ok) {
      snprintf(why, len, "hami-vgpuDeviceSharing error");
      return SCH_UNSCHEDULABLE;
    }
  } else if (wants_share(d, t)) {
    if (dn->n == 0) {
      snprintf(why, len, "node not initialized with device%s", SCH_DEV_SHARE_NAME);
      return SCH_UNSCHEDULABLE;
    }
    sch_dev_use one;
    const char *fail = choose_share(d, t, dn, uses ? uses : &one, uses ? cap : 0, nuses);
    if (fail) {
      snprintf(why, len, "%s %s", fail, name);
      return SCH_UNSCHEDULABLE;
    }
  }
  return SCH_FIT;
}

int sch_devices_fit(const sch_devices *d, const sch_task *t, int32_t node, double *score, char *why,
                    size_t len) {
  int32_t n;
  return decide(d, t, node, NULL, 0, &n, score, why, len);
}

int sch_devices_allocate(sch_devices *d, int32_t task) {
  const sch_task *t = &d->snap->tasks[task];
  dev_task *dt = &d->tasks[task];
  if (dt->held || t->node < 0)
    return 0;
  if (dt->n > 0 && !dt->fresh) { /* a pod's own assignment, back after an undone eviction */
    dt->held = true;
    apply(d, dt, +1);
    return 0;
  }
  if (!sch_devices_requests(d, t))
    return 0;
  int32_t cap = uses_cap(t), n = 0;
  sch_dev_use *u = malloc((size_t)cap * sizeof(*u));
  if (!u)
    return KC_ENOMEM;
  double score;
  char why[256];
  int rc = decide(d, t, t->node, u, cap, &n, &score, why, sizeof(why));
  if (rc != SCH_FIT) {
    free(u);
    return rc < 0 ? rc : KC_ENOENT;
  }
  free(dt->u);
  dt->u = u;
  dt->n = n;
  dt->fresh = true;
  dt->held = true;
  dt->vgpu = wants_vgpu(d, t);
  apply(d, dt, +1);
  return 0;
}

void sch_devices_release(sch_devices *d, int32_t task) {
  dev_task *dt = &d->tasks[task];
  if (!dt->held)
    return;
  apply(d, dt, -1);
  dt->held = false;
}

const sch_dev_use *sch_devices_held(const sch_devices *d, int32_t task, int32_t *n, bool *fresh) {
  const dev_task *dt = &d->tasks[task];
  *n = dt->held ? dt->n : 0;
  *fresh = dt->fresh;
  return dt->held ? dt->u : NULL;
}

bool sch_devices_is_vgpu(const sch_devices *d, int32_t task) {
  return d->tasks[task].vgpu;
}

static int put(char *buf, size_t len, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int put(char *buf, size_t len, size_t *off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *off, len - *off, fmt, ap);
  va_end(ap);
  if (w < 0 || (size_t)w >= len - *off)
    return KC_ERANGE;
  *off += (size_t)w;
  return 0;
}

/* One device of volcano.sh/vgpu-ids-new: "UUID,NVIDIA,MEM,CORES:", a MIG instance's UUID
 * being "UUID[group-position]" (Volcano encodeMIGID) and MEM the request. */
static int put_vgpu(const sch_devices *d, const sch_dev_use *u, char *buf, size_t len,
                    size_t *off) {
  const sch_gpu *g = &d->gpus[u->gpu];
  if (u->mig_pos >= 0 && g->mig && u->mig_group >= 0 && u->mig_group < g->mig->ngroups)
    return put(buf, len, off, "%s[%s-%d],NVIDIA,%lld,%lld:", g->uuid,
               g->mig->groups[u->mig_group].group, u->mig_pos, (long long)u->asked,
               (long long)u->core);
  return put(buf, len, off, "%s,NVIDIA,%lld,%lld:", g->uuid, (long long)u->asked,
             (long long)u->core);
}

int sch_devices_encode(const sch_devices *d, int32_t task, char *buf, size_t len) {
  const dev_task *dt = &d->tasks[task];
  if (!dt->held || dt->n == 0 || len == 0)
    return KC_ENOENT;
  size_t off = 0;
  buf[0] = '\0';
  int rc = 0;
  if (dt->vgpu) {
    const Kiln__PodDevices *pd = pdev(&d->snap->tasks[task]);
    for (size_t c = 0; rc == 0 && c < pd->n_vgpu; c++) {
      if (c > 0)
        rc = put(buf, len, &off, ";");
      for (int32_t i = 0; rc == 0 && i < dt->n; i++)
        if (dt->u[i].ctr == (int32_t)c)
          rc = put_vgpu(d, &dt->u[i], buf, len, &off);
    }
    return rc;
  }
  for (int32_t i = 0; rc == 0 && i < dt->n; i++)
    rc = put(buf, len, &off, "%s%d", i ? "," : "", d->gpus[dt->u[i].gpu].id);
  return rc;
}
