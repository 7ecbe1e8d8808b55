/* NUMA alignment (sch_numa.h): Volcano's numaaware policies and hint providers. */
#include "sch_numa.h"

#include <stdlib.h>
#include <string.h>

#include "kc_quantity.h"
#include "sch_framework.h"

#define CPU_MANAGER_POLICY      "CPUManagerPolicy"
#define TOPOLOGY_MANAGER_POLICY "TopologyManagerPolicy"
#define RES_CPU                 "cpu"
#define RES_GPU                 "nvidia.com/gpu"

/* ---- sets ---- */

bool sch_cpuset_has(const sch_cpuset *s, int cpu) {
  return cpu >= 0 && cpu < SCH_NUMA_MAX_CPUS && (s->w[cpu / 64] >> (cpu % 64) & 1);
}

static void cpuset_add(sch_cpuset *s, int cpu) {
  s->w[cpu / 64] |= 1ull << (cpu % 64);
}

int sch_cpuset_count(const sch_cpuset *s) {
  int n = 0;
  for (size_t i = 0; i < sizeof(s->w) / sizeof(s->w[0]); i++)
    n += __builtin_popcountll(s->w[i]);
  return n;
}

static int parse_id(const char **p, int max) {
  const char *s = *p;
  if (*s < '0' || *s > '9')
    return -1;
  long v = 0;
  while (*s >= '0' && *s <= '9' && v < max)
    v = v * 10 + (*s++ - '0');
  *p = s;
  return v < max ? (int)v : -1;
}

int sch_cpuset_parse(const char *list, sch_cpuset *s) {
  memset(s, 0, sizeof(*s));
  const char *p = list ? list : "";
  while (*p) {
    int a = parse_id(&p, SCH_NUMA_MAX_CPUS), b = a;
    if (a >= 0 && *p == '-') {
      p++;
      b = parse_id(&p, SCH_NUMA_MAX_CPUS);
    }
    if (a < 0 || b < a || (*p && *p != ','))
      return KC_EINVAL;
    for (int c = a; c <= b; c++)
      cpuset_add(s, c);
    if (*p == ',')
      p++;
  }
  return 0;
}

/* ---- reading a Numatopology ---- */

static const char *policy_of(const Kiln__NumatopoSpec *sp, const char *key) {
  for (size_t i = 0; sp && i < sp->n_policies; i++)
    if (sp->policies[i]->key && strcmp(sp->policies[i]->key, key) == 0)
      return sp->policies[i]->value ? sp->policies[i]->value : "";
  return "";
}

static const Kiln__NumaResourceInfo *numares(const Kiln__NumatopoSpec *sp, const char *name) {
  for (size_t i = 0; sp && i < sp->n_numares; i++)
    if (sp->numares[i]->key && strcmp(sp->numares[i]->key, name) == 0)
      return sp->numares[i]->value;
  return NULL;
}

/* A map key that is a decimal id below max, else -1. */
static int key_id(const char *key, int max) {
  const char *p = key ? key : "";
  int v = parse_id(&p, max);
  return *p ? -1 : v;
}

/* A CPU for sorting by socket, core, id (no shared state: sessions may run on threads). */
typedef struct {
  int32_t socket, core;
  int16_t id;
} cpu_key;

static int cpu_cmp(const void *a, const void *b) {
  const cpu_key *x = a, *y = b;
  if (x->socket != y->socket)
    return x->socket < y->socket ? -1 : 1;
  if (x->core != y->core)
    return x->core < y->core ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static int sort_cpus(sch_numa_topo *t) {
  cpu_key *k = malloc((size_t)(t->ncpus > 0 ? t->ncpus : 1) * sizeof(*k));
  if (!k)
    return KC_ENOMEM;
  for (int i = 0; i < t->ncpus; i++)
    k[i] = (cpu_key){t->socket[t->order[i]], t->core[t->order[i]], t->order[i]};
  qsort(k, (size_t)t->ncpus, sizeof(*k), cpu_cmp);
  for (int i = 0; i < t->ncpus; i++)
    t->order[i] = k[i].id;
  free(k);
  return 0;
}

static int read_cpus(sch_numa_topo *t, const Kiln__NumatopoSpec *sp) {
  for (size_t i = 0; i < sp->n_cpu_detail; i++) {
    int id = key_id(sp->cpu_detail[i]->key, SCH_NUMA_MAX_CPUS);
    if (id < 0)
      return KC_EINVAL;
    t->max_cpu = id + 1 > t->max_cpu ? id + 1 : t->max_cpu;
  }
  size_t n = t->max_cpu > 0 ? (size_t)t->max_cpu : 1;
  t->cpu_numa = malloc(n * sizeof(*t->cpu_numa));
  t->order = malloc(n * sizeof(*t->order));
  t->socket = calloc(n, sizeof(*t->socket));
  t->core = calloc(n, sizeof(*t->core));
  if (!t->cpu_numa || !t->order || !t->socket || !t->core)
    return KC_ENOMEM;
  for (size_t i = 0; i < n; i++)
    t->cpu_numa[i] = -1;
  for (size_t i = 0; i < sp->n_cpu_detail; i++) {
    int id = key_id(sp->cpu_detail[i]->key, SCH_NUMA_MAX_CPUS);
    const Kiln__NumaCpuInfo *ci = sp->cpu_detail[i]->value;
    int numa = ci ? ci->numa : 0;
    if (numa < 0 || numa >= SCH_NUMA_MAX_NODES)
      return KC_EINVAL;
    if (t->cpu_numa[id] < 0)
      t->order[t->ncpus++] = (int16_t)id;
    t->cpu_numa[id] = (int16_t)numa;
    t->socket[id] = ci ? ci->socket : 0;
    t->core[id] = ci ? ci->core : 0;
    t->numa_nodes |= 1ull << numa;
  }
  return sort_cpus(t);
}

static int read_gpus(sch_numa_topo *t, const Kiln__NumatopoSpec *sp) {
  memset(t->gpu_numa, -1, sizeof(t->gpu_numa));
  for (size_t i = 0; i < sp->n_gpu_detail; i++) {
    int id = key_id(sp->gpu_detail[i]->key, SCH_NUMA_MAX_GPUS);
    const Kiln__NumaGpuInfo *gi = sp->gpu_detail[i]->value;
    int numa = gi ? gi->numa : 0;
    if (id < 0 || numa < 0 || numa >= SCH_NUMA_MAX_NODES)
      return KC_EINVAL;
    t->gpu_numa[id] = (int8_t)numa;
    t->has_gpu_detail = true;
  }
  const Kiln__NumaResourceInfo *g = numares(sp, RES_GPU);
  if (!g)
    return 0;
  sch_cpuset s;
  if (sch_cpuset_parse(g->allocatable, &s) < 0)
    return KC_EINVAL;
  for (size_t i = 1; i < sizeof(s.w) / sizeof(s.w[0]); i++)
    if (s.w[i])
      return KC_EINVAL;
  t->gpu_avail = s.w[0];
  t->has_gpu_res = true;
  return 0;
}

static void take_topology(const sch_numa_topo *t, const sch_cpuset *from, int n, sch_cpuset *out);

/* resReserved cpu: the quantity rounded up, taken by topology from every CPU. */
static void read_reserved(sch_numa_topo *t, const Kiln__NumatopoSpec *sp) {
  for (size_t i = 0; i < sp->n_res_reserved; i++) {
    const Kiln__NumatopoSpec__ResReservedEntry *e = sp->res_reserved[i];
    if (!e->key || strcmp(e->key, RES_CPU) != 0 || !e->value)
      continue;
    kc_quantity q;
    if (kc_quantity_parse(e->value, &q, NULL) < 0)
      return;
    int64_t milli = kc_quantity_milli(&q);
    if (milli <= 0)
      return;
    int64_t n = (milli + 999) / 1000;
    sch_cpuset all = {0};
    for (int k = 0; k < t->ncpus; k++)
      cpuset_add(&all, t->order[k]);
    take_topology(t, &all, n > t->ncpus ? t->ncpus : (int)n, &t->reserved);
  }
}

int sch_numa_topo_init(sch_numa_topo *t, const Kiln__Numatopology *nt) {
  memset(t, 0, sizeof(*t));
  const Kiln__NumatopoSpec *sp = nt ? nt->spec : NULL;
  t->tm_policy = policy_of(sp, TOPOLOGY_MANAGER_POLICY);
  t->cpu_policy = policy_of(sp, CPU_MANAGER_POLICY);
  memset(t->gpu_numa, -1, sizeof(t->gpu_numa));
  if (!sp)
    return 0;
  int rc = read_cpus(t, sp);
  if (rc == 0)
    rc = read_gpus(t, sp);
  const Kiln__NumaResourceInfo *c = numares(sp, RES_CPU);
  if (rc == 0 && c) {
    rc = sch_cpuset_parse(c->allocatable, &t->avail);
    t->has_cpu_res = rc == 0;
  }
  if (rc == 0)
    read_reserved(t, sp);
  if (rc < 0) {
    const char *tm = t->tm_policy, *cp = t->cpu_policy;
    sch_numa_topo_close(t);
    t->tm_policy = tm;
    t->cpu_policy = cp;
    memset(t->gpu_numa, -1, sizeof(t->gpu_numa));
  }
  return rc;
}

void sch_numa_topo_close(sch_numa_topo *t) {
  free(t->cpu_numa);
  free(t->order);
  free(t->socket);
  free(t->core);
  memset(t, 0, sizeof(*t));
}

void sch_numa_take(sch_numa_topo *t, const sch_numa_assign *a) {
  for (size_t i = 0; i < sizeof(a->cpus.w) / sizeof(a->cpus.w[0]); i++)
    t->avail.w[i] &= ~a->cpus.w[i];
  t->gpu_avail &= ~a->gpus;
}

void sch_numa_give(sch_numa_topo *t, const sch_numa_assign *a) {
  for (size_t i = 0; i < sizeof(a->cpus.w) / sizeof(a->cpus.w[0]); i++)
    t->avail.w[i] |= a->cpus.w[i];
  t->gpu_avail |= a->gpus;
}

/* ---- takeByTopology: whole sockets, then whole cores, then single CPUs ---- */

/* The run of t->order from *i with the same key (socket, or socket and core). */
static int run_end(const sch_numa_topo *t, int i, bool core) {
  int a = t->order[i], j = i + 1;
  while (j < t->ncpus && t->socket[t->order[j]] == t->socket[a] &&
         (!core || t->core[t->order[j]] == t->core[a]))
    j++;
  return j;
}

static void take_runs(const sch_numa_topo *t, const sch_cpuset *from, bool core, int *n,
                      sch_cpuset *out) {
  for (int i = 0; i<t->ncpus && * n> 0;) {
    int j = run_end(t, i, core);
    bool free_run = j - i <= *n;
    for (int k = i; free_run && k < j; k++)
      free_run = sch_cpuset_has(from, t->order[k]) && !sch_cpuset_has(out, t->order[k]);
    for (int k = i; free_run && k < j; k++)
      cpuset_add(out, t->order[k]);
    if (free_run)
      *n -= j - i;
    i = j;
  }
}

/* n CPUs of from into *out (cleared first); fewer when from has fewer. */
static void take_topology(const sch_numa_topo *t, const sch_cpuset *from, int n, sch_cpuset *out) {
  memset(out, 0, sizeof(*out));
  take_runs(t, from, false, &n, out);
  take_runs(t, from, true, &n, out);
  for (int k = 0; k < t->ncpus && n > 0; k++) {
    int c = t->order[k];
    if (sch_cpuset_has(from, c) && !sch_cpuset_has(out, c)) {
      cpuset_add(out, c);
      n--;
    }
  }
}

int sch_numa_span(const sch_numa_topo *t, const sch_numa_assign *a) {
  uint64_t m = 0;
  for (int c = 0; c < t->max_cpu; c++)
    if (sch_cpuset_has(&a->cpus, c) && t->cpu_numa[c] >= 0)
      m |= 1ull << t->cpu_numa[c];
  return __builtin_popcountll(m);
}

/* ---- hints (Volcano policy.TopologyHint; any: a nil NUMANodeAffinity) ---- */

typedef struct {
  uint64_t mask;
  bool any, preferred;
} hint;

typedef struct {
  hint *h;
  int n;
} hint_list;

/* The NUMA ids of a mask, at most SCH_NUMA_MAX_HINT of them (-1: more). */
static int numa_ids(uint64_t nodes, int *ids) {
  int n = 0;
  for (int i = 0; i < SCH_NUMA_MAX_NODES; i++)
    if (nodes >> i & 1) {
      if (n == SCH_NUMA_MAX_HINT)
        return -1;
      ids[n++] = i;
    }
  return n;
}

static uint64_t subset_mask(const int *ids, int n, unsigned sub) {
  uint64_t m = 0;
  for (int i = 0; i < n; i++)
    if (sub >> i & 1)
      m |= 1ull << ids[i];
  return m;
}

/* Every mask over nodes whose count of free ids (per node in avail_per) covers request;
 * the preferred ones are those of the minimal size: min_size, or (min_size < 0) the
 * smallest mask that covers request. *l is new (NULL when empty). */
static int mask_hints(uint64_t nodes, const int *avail_per, const int *total_per, int request,
                      hint_list *l) {
  int ids[SCH_NUMA_MAX_HINT], k = numa_ids(nodes, ids);
  l->h = NULL;
  l->n = 0;
  if (k <= 0)
    return 0;
  l->h = malloc(((size_t)1 << k) * sizeof(*l->h));
  if (!l->h)
    return KC_ENOMEM;
  int min_size = total_per ? k : k + 1;
  for (unsigned sub = 1; sub < (1u << k); sub++) {
    int size = __builtin_popcount(sub), have = 0, total = 0;
    for (int i = 0; i < k; i++)
      if (sub >> i & 1) {
        have += avail_per[ids[i]];
        total += total_per ? total_per[ids[i]] : 0;
      }
    if (total_per && total >= request && size < min_size)
      min_size = size;
    if (have < request)
      continue;
    if (!total_per && size < min_size)
      min_size = size;
    l->h[l->n++] = (hint){subset_mask(ids, k, sub), false, false};
  }
  for (int i = 0; i < l->n; i++)
    l->h[i].preferred = __builtin_popcountll(l->h[i].mask) == min_size;
  return 0;
}

/* cpumanager GetTopologyHints: 1 and a list, or 0 for no preference (nil). */
static int cpu_hints(const sch_numa_topo *t, const Kiln__NumaContainer *c, hint_list *l) {
  if (c->cpu_milli <= 0 || c->cpu_milli % 1000 != 0 || !t->has_cpu_res)
    return 0;
  int avail[SCH_NUMA_MAX_NODES] = {0}, total[SCH_NUMA_MAX_NODES] = {0};
  for (int k = 0; k < t->ncpus; k++) {
    int cpu = t->order[k];
    total[t->cpu_numa[cpu]]++;
    if (sch_cpuset_has(&t->avail, cpu) && !sch_cpuset_has(&t->reserved, cpu))
      avail[t->cpu_numa[cpu]]++;
  }
  int ids[SCH_NUMA_MAX_HINT];
  if (numa_ids(t->numa_nodes, ids) < 0)
    return 0;
  int rc = mask_hints(t->numa_nodes, avail, total, (int)(c->cpu_milli / 1000), l);
  return rc < 0 ? rc : 1;
}

/* gpumanager GetTopologyHints, the same way. */
static int gpu_hints(const sch_numa_topo *t, const Kiln__NumaContainer *c, hint_list *l) {
  if (c->gpus <= 0 || !t->has_gpu_detail || !t->has_gpu_res)
    return 0;
  int avail[SCH_NUMA_MAX_NODES] = {0}, ids[SCH_NUMA_MAX_HINT];
  uint64_t nodes = 0;
  for (int g = 0; g < SCH_NUMA_MAX_GPUS; g++)
    if (t->gpu_numa[g] >= 0) {
      nodes |= 1ull << t->gpu_numa[g];
      avail[t->gpu_numa[g]] += (int)(t->gpu_avail >> g & 1);
    }
  if (numa_ids(nodes, ids) < 0)
    return 0; /* more than 16 NUMA nodes: no hints, no preference */
  int rc = mask_hints(nodes, avail, NULL, c->gpus > INT32_MAX ? INT32_MAX : (int)c->gpus, l);
  return rc < 0 ? rc : 1;
}

/* filterProvidersHints: no preference is one preferred any hint; no possible hint is one
 * non-preferred any hint. */
static void filter_hints(hint_list *l, int has, hint *one) {
  if (has && l->n > 0)
    return;
  free(l->h);
  *one = (hint){0, true, has == 0};
  l->h = one;
  l->n = 1;
}

static bool narrower(uint64_t a, uint64_t b) {
  int ca = __builtin_popcountll(a), cb = __builtin_popcountll(b);
  return ca == cb ? a < b : ca < cb;
}

/* mergeFilteredHints over the two providers' lists. */
static hint merge_hints(uint64_t nodes, const hint_list *cpu, const hint_list *gpu) {
  hint best = {nodes, false, false};
  for (int i = 0; i < cpu->n; i++)
    for (int j = 0; j < gpu->n; j++) {
      const hint *a = &cpu->h[i], *b = &gpu->h[j];
      hint m = {nodes & (a->any ? nodes : a->mask) & (b->any ? nodes : b->mask), false,
                a->preferred && b->preferred};
      if (m.mask == 0)
        continue;
      if (m.preferred != best.preferred) {
        if (m.preferred)
          best = m;
        continue;
      }
      if (narrower(m.mask, best.mask))
        best = m;
    }
  return best;
}

/* single-numa-node keeps the preferred hints that are any or one node. */
static void single_numa(hint_list *l) {
  int n = 0;
  for (int i = 0; i < l->n; i++)
    if (l->h[i].preferred && (l->h[i].any || __builtin_popcountll(l->h[i].mask) == 1))
      l->h[n++] = l->h[i];
  l->n = n;
}

typedef enum { POL_NONE, POL_BEST_EFFORT, POL_RESTRICTED, POL_SINGLE } policy;

static policy policy_parse(const char *s) {
  if (strcmp(s, "best-effort") == 0)
    return POL_BEST_EFFORT;
  if (strcmp(s, "restricted") == 0)
    return POL_RESTRICTED;
  if (strcmp(s, "single-numa-node") == 0)
    return POL_SINGLE;
  return POL_NONE;
}

/* The policy's Predicate for one container: the best hint and whether it is admitted. */
static int admit(const sch_numa_topo *t, policy pol, const Kiln__NumaContainer *c, hint *best,
                 bool *ok) {
  *best = (hint){0, true, false};
  *ok = true;
  if (pol == POL_NONE)
    return 0;
  hint_list cl = {NULL, 0}, gl = {NULL, 0};
  hint one_c, one_g;
  int hc = cpu_hints(t, c, &cl);
  int hg = hc < 0 ? 0 : gpu_hints(t, c, &gl);
  if (hc < 0 || hg < 0) {
    free(cl.h);
    return KC_ENOMEM;
  }
  filter_hints(&cl, hc, &one_c);
  filter_hints(&gl, hg, &one_g);
  if (pol == POL_SINGLE) {
    single_numa(&cl);
    single_numa(&gl);
  }
  *best = merge_hints(t->numa_nodes, &cl, &gl);
  *ok = pol == POL_BEST_EFFORT || best->preferred;
  if (cl.h != &one_c)
    free(cl.h);
  if (gl.h != &one_g)
    free(gl.h);
  return 0;
}

/* ---- allocation (the providers' Allocate) ---- */

static void cpu_allocate(const sch_numa_topo *t, const hint *best, const Kiln__NumaContainer *c,
                         sch_cpuset *out) {
  memset(out, 0, sizeof(*out));
  int request = c->cpu_milli > 0 && c->cpu_milli % 1000 == 0 ? (int)(c->cpu_milli / 1000) : 0;
  sch_cpuset avail = t->avail, aligned = {0}, rest;
  for (size_t i = 0; i < sizeof(avail.w) / sizeof(avail.w[0]); i++)
    avail.w[i] &= ~t->reserved.w[i];
  if (!best->any) {
    for (int k = 0; k < t->ncpus; k++) {
      int cpu = t->order[k];
      if (sch_cpuset_has(&avail, cpu) && (best->mask >> t->cpu_numa[cpu] & 1))
        cpuset_add(&aligned, cpu);
    }
    int n = sch_cpuset_count(&aligned);
    take_topology(t, &aligned, request < n ? request : n, out);
  }
  int left = request - sch_cpuset_count(out);
  for (size_t i = 0; i < sizeof(avail.w) / sizeof(avail.w[0]); i++)
    avail.w[i] &= ~out->w[i];
  if (sch_cpuset_count(&avail) < left) {
    memset(out, 0, sizeof(*out)); /* not enough CPUs: Volcano assigns none */
    return;
  }
  take_topology(t, &avail, left, &rest);
  for (size_t i = 0; i < sizeof(rest.w) / sizeof(rest.w[0]); i++)
    out->w[i] |= rest.w[i];
}

static uint64_t take_gpus(uint64_t from, int64_t n) {
  uint64_t out = 0;
  for (int g = 0; g < SCH_NUMA_MAX_GPUS && n > 0; g++)
    if (from >> g & 1) {
      out |= 1ull << g;
      n--;
    }
  return out;
}

static uint64_t gpu_allocate(const sch_numa_topo *t, const hint *best,
                             const Kiln__NumaContainer *c) {
  if (c->gpus <= 0 || !t->has_gpu_res)
    return 0;
  uint64_t out = 0;
  if (!best->any) {
    uint64_t aligned = 0;
    for (int g = 0; g < SCH_NUMA_MAX_GPUS; g++)
      if (t->gpu_numa[g] >= 0 && (best->mask >> t->gpu_numa[g] & 1))
        aligned |= 1ull << g;
    out = take_gpus(t->gpu_avail & aligned, c->gpus);
  }
  int64_t left = c->gpus - __builtin_popcountll(out);
  return out | take_gpus(t->gpu_avail & ~out, left);
}

/* ---- the predicate ---- */

static bool policy_none(const char *p) {
  return !p || !*p || strcmp(p, "none") == 0;
}

/* filterNodeByPolicy: SCH_NUMA_FIT to go on aligning. */
static sch_numa_result filter_node(const sch_numa_topo *t, const Kiln__PodNuma *pod) {
  if (policy_none(pod->policy)) {
    bool skip = !t || strcmp(t->cpu_policy, "static") != 0 || policy_none(t->tm_policy);
    return skip ? SCH_NUMA_PASS : SCH_NUMA_FIT;
  }
  if (!t)
    return SCH_NUMA_NO_INFO;
  if (strcmp(t->cpu_policy, "static") != 0)
    return SCH_NUMA_NOT_STATIC;
  if (strcmp(pod->policy, t->tm_policy) != 0)
    return SCH_NUMA_DIFFERENT;
  if (sch_cpuset_count(&t->avail) == 0)
    return SCH_NUMA_NO_CPU;
  return SCH_NUMA_FIT;
}

sch_numa_result sch_numa_fit(const sch_numa_topo *t, const Kiln__PodNuma *pod, sch_numa_assign *out,
                             int *container) {
  memset(out, 0, sizeof(*out));
  if (!pod)
    return SCH_NUMA_PASS;
  sch_numa_result r = filter_node(t, pod);
  if (r != SCH_NUMA_FIT)
    return r;
  sch_numa_topo w = *t; /* the containers take from a copy of what is free */
  policy pol = policy_parse(t->tm_policy);
  for (size_t i = 0; i < pod->n_containers; i++) {
    hint best;
    bool ok;
    if (admit(&w, pol, pod->containers[i], &best, &ok) < 0 || !ok) {
      *container = (int)i;
      return SCH_NUMA_NOT_ADMITTED;
    }
    sch_numa_assign a = {0};
    cpu_allocate(&w, &best, pod->containers[i], &a.cpus);
    a.gpus = gpu_allocate(&w, &best, pod->containers[i]);
    sch_numa_take(&w, &a);
    for (size_t k = 0; k < sizeof(a.cpus.w) / sizeof(a.cpus.w[0]); k++)
      out->cpus.w[k] |= a.cpus.w[k];
    out->gpus |= a.gpus;
  }
  return SCH_NUMA_FIT;
}
