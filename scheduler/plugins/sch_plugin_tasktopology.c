/* task-topology (Volcano pkg/scheduler/plugins/task-topology): keep a job's tasks that like
 * each other on one node and those that do not apart, from its PodGroup's annotations (the
 * job controller copies the Job's annotations there):
 *   volcano.sh/task-topology-affinity       "ps,worker;chief": groups of task names (the
 *                                           volcano.sh/task-spec of the pods) that go
 *                                           together; a group of one: its pods together;
 *   volcano.sh/task-topology-anti-affinity  the same, apart;
 *   volcano.sh/task-topology-task-order     "ps,worker": which task to place first.
 * Every name must be a task of the job (the second-to-last "-" field of a pod's name) and
 * appear once per group, else the job is left alone. Jobs without pending tasks are too.
 *
 * At session open the job's pods with a topology are split into buckets as Volcano does:
 * placed pods by node, then pending ones in order (user order, then the strongest relation:
 * self anti-affinity, inter affinity, self affinity, inter anti-affinity; then by name),
 * each into the bucket it likes most (ties: the bucket asking least, 1 cpu = 1 Gi = 1 GPU),
 * or a new one when it dislikes them all.
 * Task order: pods in a bucket first, bigger buckets first, older buckets first, then the
 * same order as above. Node order: the bucket's pods already on the node, less the
 * anti-affine pods the session placed there, plus the bucket's pending pods (fewer by the
 * ones that would have to go elsewhere for the rest to fit the node's idle + releasing),
 * times task-topology.weight (default 1) scaled to 0..100 by the biggest bucket. A node the
 * pod cannot fit scores 0. Where Volcano drops pods from an oversized bucket in Go map
 * order, Kiln drops them in the order they joined it, so a replay scores alike. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"
#include "sch_match.h"

#define TT_AFFINITY      "volcano.sh/task-topology-affinity"
#define TT_ANTI_AFFINITY "volcano.sh/task-topology-anti-affinity"
#define TT_TASK_ORDER    "volcano.sh/task-topology-task-order"
#define TT_MAX_NAMES     64 /* distinct task names per job the plugin tracks */

#define TT_NAME_MAX 64 /* a task name is a DNS label: at most 63 bytes */

/* Volcano's affinityPriority: the larger, the stronger. */
enum { TT_INTER_ANTI = 1, TT_SELF_AFF = 2, TT_INTER_AFF = 3, TT_SELF_ANTI = 4 };

typedef struct tt_count {
  int32_t node;
  int32_t n;
} tt_count;

typedef struct tt_bucket {
  int32_t *tasks; /* pending task indexes, in the order they joined */
  int32_t ntasks, cap;
  int32_t names[TT_MAX_NAMES]; /* tasks per name, placed ones included */
  double req_score;
  sch_resource request;
  int32_t bound;
  tt_count *nodes; /* placed tasks per node */
  int32_t nnodes, capnodes;
} tt_bucket;

/* Tasks per name the session placed on one node (Volcano nodeTaskSet). */
typedef struct tt_node_set {
  int32_t node;
  int32_t names[TT_MAX_NAMES];
} tt_node_set;

typedef struct tt_job {
  int32_t nnames;
  char names[TT_MAX_NAMES][TT_NAME_MAX];
  uint8_t self_aff[TT_MAX_NAMES], self_anti[TT_MAX_NAMES];
  uint8_t inter_aff[TT_MAX_NAMES][TT_MAX_NAMES], inter_anti[TT_MAX_NAMES][TT_MAX_NAMES];
  int32_t priority[TT_MAX_NAMES]; /* 0: the name has no topology */
  int32_t order[TT_MAX_NAMES];    /* task-order rank, larger first; 0 unlisted */
  tt_bucket *buckets;
  int32_t nbuckets, capbuckets;
  int32_t max_size;
  tt_node_set *sets;
  int32_t nsets, capsets;
} tt_job;

typedef struct tt_state {
  int64_t weight;
  tt_job **by_job;      /* per snapshot job; NULL: no topology */
  int32_t *task_bucket; /* per snapshot task: bucket index, -1 out of bucket */
  int32_t *task_name;   /* per snapshot task: name index in its job, -1 none */
  int32_t njobs, ntasks;
} tt_state;

/* ---- the job's topology from its PodGroup's annotations ---- */

static int32_t name_find(const tt_job *m, const char *s, size_t len) {
  for (int32_t i = 0; i < m->nnames; i++)
    if (strlen(m->names[i]) == len && memcmp(m->names[i], s, len) == 0)
      return i;
  return -1;
}

/* Whether a pod of job j has s[0..len) as the second-to-last "-" field of its name (Volcano
 * affinityCheck's taskRef). */
static bool job_has_task(const sch_snapshot *snap, const sch_job *j, const char *s, size_t len) {
  for (int32_t k = 0; k < j->ntasks; k++) {
    const char *pod = snap->tasks[j->tasks[k]].pod->name;
    const char *last = pod ? strrchr(pod, '-') : NULL;
    if (last == NULL)
      continue;
    const char *start = last;
    while (start > pod && start[-1] != '-')
      start--;
    if ((size_t)(last - start) == len && memcmp(start, s, len) == 0)
      return true;
  }
  return false;
}

/* The index of name s[0..len), interned; -1 when the job has no such task or the table is
 * full. */
static int32_t name_ref(const sch_snapshot *snap, const sch_job *j, tt_job *m, const char *s,
                        size_t len) {
  int32_t i = name_find(m, s, len);
  if (i >= 0)
    return i;
  if (len >= TT_NAME_MAX || m->nnames == TT_MAX_NAMES || !job_has_task(snap, j, s, len))
    return -1;
  memcpy(m->names[m->nnames], s, len);
  m->names[m->nnames][len] = '\0';
  return m->nnames++;
}

static void mark(tt_job *m, int32_t name, int32_t prio) {
  if (prio > m->priority[name])
    m->priority[name] = prio;
}

/* One group "a,b,c" (s[0..len)) of the affinity (anti false) or anti-affinity annotation,
 * or, with order set, the task-order list. Returns false on a name the job does not have or
 * a name given twice (Volcano then ignores the job's topology). */
static bool apply_group(const sch_snapshot *snap, const sch_job *j, tt_job *m, const char *s,
                        size_t len, bool anti, bool order) {
  int32_t idx[TT_MAX_NAMES], pos[TT_MAX_NAMES];
  int32_t n = 0, tokens = 0;
  const char *end = s + len;
  for (const char *p = s;; tokens++) {
    const char *c = memchr(p, ',', (size_t)(end - p));
    const char *te = c ? c : end;
    if (te > p) {
      int32_t id = name_ref(snap, j, m, p, (size_t)(te - p));
      if (id < 0 || n == TT_MAX_NAMES)
        return false;
      for (int32_t k = 0; k < n; k++)
        if (idx[k] == id)
          return false;
      pos[n] = tokens;
      idx[n++] = id;
    }
    if (c == NULL)
      break;
    p = c + 1;
  }
  tokens++;
  if (order) {
    /* Volcano ranks by position among every item, empty ones included. */
    for (int32_t k = 0; k < n; k++)
      m->order[idx[k]] = tokens - pos[k];
    return true;
  }
  if (tokens == 1) {
    if (n == 1) {
      (anti ? m->self_anti : m->self_aff)[idx[0]] = 1;
      mark(m, idx[0], anti ? TT_SELF_ANTI : TT_SELF_AFF);
    }
    return true;
  }
  for (int32_t a = 0; a < n; a++) {
    for (int32_t b = 0; b < a; b++) {
      uint8_t(*mat)[TT_MAX_NAMES] = anti ? m->inter_anti : m->inter_aff;
      mat[idx[a]][idx[b]] = mat[idx[b]][idx[a]] = 1;
    }
    mark(m, idx[a], anti ? TT_INTER_ANTI : TT_INTER_AFF);
  }
  return true;
}

/* "g1;g2;..." */
static bool apply_annotation(const sch_snapshot *snap, const sch_job *j, tt_job *m, const char *v,
                             bool anti) {
  for (const char *p = v;;) {
    const char *c = strchr(p, ';');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (!apply_group(snap, j, m, p, len, anti, false))
      return false;
    if (c == NULL)
      return true;
    p = c + 1;
  }
}

static const char *pg_annotation(const Kiln__PodGroup *pg, const char *key) {
  const Kiln__ObjectMeta *md = pg ? pg->metadata : NULL;
  for (size_t i = 0; md && i < md->n_annotations; i++)
    if (md->annotations[i]->key && strcmp(md->annotations[i]->key, key) == 0)
      return md->annotations[i]->value ? md->annotations[i]->value : "";
  return NULL;
}

/* The job's topology, or NULL (none, invalid, or no memory: *rc says which). */
static tt_job *read_topology(const sch_snapshot *snap, const sch_job *j, int *rc) {
  *rc = 0;
  const char *aff = pg_annotation(j->pod_group, TT_AFFINITY);
  const char *anti = pg_annotation(j->pod_group, TT_ANTI_AFFINITY);
  const char *order = pg_annotation(j->pod_group, TT_TASK_ORDER);
  if (!aff && !anti && !order)
    return NULL;
  tt_job *m = calloc(1, sizeof(*m));
  if (m == NULL) {
    *rc = KC_ENOMEM;
    return NULL;
  }
  if ((aff && !apply_annotation(snap, j, m, aff, false)) ||
      (anti && !apply_annotation(snap, j, m, anti, true)) ||
      (order && !apply_group(snap, j, m, order, strlen(order), false, true))) {
    KC_V(4, "Failed to read task topology from job <%s/%s> annotations", j->namespace, j->name);
    free(m);
    return NULL;
  }
  return m;
}

/* ---- buckets ---- */

static void job_free(tt_job *m) {
  if (m == NULL)
    return;
  for (int32_t b = 0; b < m->nbuckets; b++) {
    free(m->buckets[b].tasks);
    free(m->buckets[b].nodes);
  }
  free(m->buckets);
  free(m->sets);
  free(m);
}

/* Volcano Bucket.CalcResReq: 1 millicore, 1 Mi of memory or ephemeral storage and 1 milli-unit
 * of another scalar each count 1. */
static double req_score(const sch_snapshot *snap, const sch_resource *r) {
  double score = (double)r->milli_cpu + (double)(r->memory / 1024 / 1024);
  for (int i = 0; i < snap->nscalars && i < SCH_MAX_SCALARS; i++) {
    if (snap->scalar_names[i] && strcmp(snap->scalar_names[i], "ephemeral-storage") == 0)
      score += (double)(r->scalar[i] / 1000 / 1024 / 1024);
    else
      score += (double)r->scalar[i];
  }
  return score;
}

static int grow(void **arr, int32_t *cap, int32_t need, size_t size) {
  if (need <= *cap)
    return 0;
  int32_t nc = *cap ? *cap * 2 : 8;
  while (nc < need)
    nc *= 2;
  void *v = realloc(*arr, (size_t)nc * size);
  if (v == NULL)
    return KC_ENOMEM;
  *arr = v;
  *cap = nc;
  return 0;
}

static int32_t *node_count(tt_count **arr, int32_t *n, int32_t *cap, int32_t node, bool add) {
  for (int32_t i = 0; i < *n; i++)
    if ((*arr)[i].node == node)
      return &(*arr)[i].n;
  if (!add || grow((void **)arr, cap, *n + 1, sizeof(**arr)) < 0)
    return NULL;
  (*arr)[*n] = (tt_count){node, 0};
  return &(*arr)[(*n)++].n;
}

static int32_t bucket_new(tt_job *m) {
  if (grow((void **)&m->buckets, &m->capbuckets, m->nbuckets + 1, sizeof(*m->buckets)) < 0)
    return -1;
  memset(&m->buckets[m->nbuckets], 0, sizeof(*m->buckets));
  return m->nbuckets++;
}

/* Volcano JobManager.AddTaskToBucket. */
static int bucket_add(const sch_snapshot *snap, tt_state *st, tt_job *m, int32_t b, int32_t ti) {
  tt_bucket *bk = &m->buckets[b];
  const sch_task *t = &snap->tasks[ti];
  st->task_bucket[ti] = b;
  bk->names[st->task_name[ti]]++;
  if (t->node >= 0) {
    int32_t *c = node_count(&bk->nodes, &bk->nnodes, &bk->capnodes, t->node, true);
    if (c == NULL)
      return KC_ENOMEM;
    (*c)++;
    bk->bound++;
  } else {
    if (grow((void **)&bk->tasks, &bk->cap, bk->ntasks + 1, sizeof(*bk->tasks)) < 0)
      return KC_ENOMEM;
    bk->tasks[bk->ntasks++] = ti;
    sch_resource_add(&bk->request, &t->resreq);
    bk->req_score += req_score(snap, &t->resreq);
  }
  if (bk->ntasks + bk->bound > m->max_size)
    m->max_size = bk->ntasks + bk->bound;
  return 0;
}

/* Volcano checkTaskSetAffinity: how much task name likes a set of tasks (counts per name):
 * + for each liked one (unless only_anti), - for each disliked one. */
static int32_t set_affinity(const tt_job *m, int32_t name, const int32_t *counts, bool only_anti) {
  int32_t aff = 0;
  for (int32_t o = 0; o < m->nnames; o++) {
    if (counts[o] == 0)
      continue;
    bool same = o == name;
    if (!only_anti && (same ? m->self_aff[name] : m->inter_aff[name][o]))
      aff += counts[o];
    if (same ? m->self_anti[name] : m->inter_anti[name][o])
      aff -= counts[o];
  }
  return aff;
}

/* Volcano taskAffinityOrder: the user's order, then the strongest relation; 1 when l
 * comes after... larger is placed first. */
static int affinity_order(const tt_job *m, int32_t ln, int32_t rn) {
  if (ln == rn)
    return 0;
  if (m->order[ln] != m->order[rn])
    return m->order[ln] > m->order[rn] ? 1 : -1;
  if (m->priority[ln] != m->priority[rn])
    return m->priority[ln] > m->priority[rn] ? 1 : -1;
  return 0;
}

typedef struct tt_sort_ctx {
  const sch_snapshot *snap;
  const tt_state *st;
  const tt_job *m;
} tt_sort_ctx;

/* The order tasks join buckets (Volcano sorts TaskOrder in reverse): placed tasks first by
 * node name, then the pending ones by affinity_order, larger first, then by pod name. */
static int construct_cmp(const void *a, const void *b, void *arg) {
  const tt_sort_ctx *c = arg;
  int32_t l = *(const int32_t *)a, r = *(const int32_t *)b;
  const sch_task *lt = &c->snap->tasks[l], *rt = &c->snap->tasks[r];
  bool lp = lt->node >= 0, rp = rt->node >= 0;
  if (lp != rp)
    return lp ? -1 : 1;
  if (lp)
    return strcmp(c->snap->nodes[lt->node].name, c->snap->nodes[rt->node].name);
  int o = affinity_order(c->m, c->st->task_name[l], c->st->task_name[r]);
  if (o != 0)
    return -o;
  return strcmp(lt->pod->name, rt->pod->name);
}

/* Volcano buildBucket: tasks (sorted) each into the bucket it likes most. */
static int build_buckets(const sch_snapshot *snap, tt_state *st, tt_job *m, const int32_t *tasks,
                         int32_t n) {
  tt_count *by_node = NULL; /* node -> bucket + 1 */
  int32_t nby = 0, capby = 0;
  int rc = 0;
  for (int32_t i = 0; i < n && rc == 0; i++) {
    int32_t ti = tasks[i], name = st->task_name[ti], sel = -1, best = INT32_MIN;
    const sch_task *t = &snap->tasks[ti];
    int32_t *slot = NULL;
    if (t->node >= 0) {
      best = 0;
      slot = node_count(&by_node, &nby, &capby, t->node, true);
      if (slot == NULL) {
        rc = KC_ENOMEM;
        break;
      }
      sel = *slot - 1;
    } else {
      for (int32_t b = 0; b < m->nbuckets; b++) {
        int32_t aff = set_affinity(m, name, m->buckets[b].names, false);
        if (aff > best ||
            (aff == best && sel >= 0 && m->buckets[b].req_score < m->buckets[sel].req_score)) {
          best = aff;
          sel = b;
        }
      }
    }
    if (best < 0 || sel < 0) {
      if ((sel = bucket_new(m)) < 0) {
        rc = KC_ENOMEM;
        break;
      }
      if (slot)
        *slot = sel + 1;
    }
    rc = bucket_add(snap, st, m, sel, ti);
  }
  free(by_node);
  return rc;
}

/* Volcano ConstructBucket over the job's tasks whose name has a topology. */
static int construct(const sch_snapshot *snap, tt_state *st, const sch_job *j, tt_job *m) {
  int32_t *tasks = malloc((size_t)(j->ntasks > 0 ? j->ntasks : 1) * sizeof(*tasks));
  if (tasks == NULL)
    return KC_ENOMEM;
  int32_t n = 0;
  for (int32_t k = 0; k < j->ntasks; k++) {
    int32_t ti = j->tasks[k];
    const char *tn = snap->tasks[ti].pod->task_name;
    int32_t id = tn && *tn ? name_find(m, tn, strlen(tn)) : -1;
    if (id < 0 || m->priority[id] == 0)
      continue;
    st->task_name[ti] = id;
    tasks[n++] = ti;
  }
  tt_sort_ctx c = {snap, st, m};
  qsort_r(tasks, (size_t)n, sizeof(*tasks), construct_cmp, &c);
  int rc = build_buckets(snap, st, m, tasks, n);
  free(tasks);
  return rc;
}

/* ---- callbacks ---- */

static const tt_bucket *task_bucket(const tt_state *st, const tt_job *m, int32_t ti) {
  int32_t b = st->task_bucket[ti];
  return b >= 0 ? &m->buckets[b] : NULL;
}

static int32_t task_index(sch_session *ssn, const sch_task *t) {
  return (int32_t)(t - sch_session_snapshot(ssn)->tasks);
}

/* Volcano TaskOrderFn (negative: l first). */
static int tt_task_order(sch_session *ssn, void *ctx, const sch_task *l, const sch_task *r) {
  tt_state *st = ctx;
  if (l->job < 0 || r->job < 0 || !st->by_job[l->job] || !st->by_job[r->job])
    return 0;
  int32_t li = task_index(ssn, l), ri = task_index(ssn, r);
  const tt_job *lm = st->by_job[l->job];
  const tt_bucket *lb = task_bucket(st, lm, li), *rb = task_bucket(st, st->by_job[r->job], ri);
  if ((lb != NULL) != (rb != NULL))
    return lb ? -1 : 1;
  if (l->job != r->job || lb == NULL)
    return 0;
  if (lb->ntasks != rb->ntasks)
    return lb->ntasks > rb->ntasks ? -1 : 1;
  if (lb == rb)
    return -affinity_order(lm, st->task_name[li], st->task_name[ri]);
  return st->task_bucket[li] < st->task_bucket[ri] ? -1 : 1;
}

/* Volcano calcBucketScore: the unscaled score of node n for task t. */
static int32_t bucket_score(sch_session *ssn, const tt_state *st, const tt_job *m,
                            const sch_task *t, const sch_node *n) {
  sch_resource max = n->idle;
  sch_resource_add(&max, &n->releasing);
  if (sch_resource_insufficient(&t->resreq, &max) != 0)
    return 0;
  int32_t ti = task_index(ssn, t);
  const tt_bucket *bk = task_bucket(st, m, ti);
  if (bk == NULL)
    return 0;
  int32_t ni = (int32_t)(n - sch_session_snapshot(ssn)->nodes);
  int32_t score = 0;
  for (int32_t i = 0; i < bk->nnodes; i++)
    if (bk->nodes[i].node == ni)
      score = bk->nodes[i].n;
  for (int32_t i = 0; i < m->nsets; i++) {
    if (m->sets[i].node != ni)
      continue;
    int32_t aff = set_affinity(m, st->task_name[ti], m->sets[i].names, true);
    if (aff < 0)
      score += aff;
  }
  score += bk->ntasks;
  if (sch_resource_less_equal(&bk->request, &max))
    return score;
  sch_resource remains = bk->request;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  for (int32_t i = 0; i < bk->ntasks; i++) {
    if (bk->tasks[i] == ti)
      continue;
    sch_resource_sub(&remains, &snap->tasks[bk->tasks[i]].resreq);
    score--;
    if (sch_resource_less_equal(&remains, &max))
      break;
  }
  return score;
}

static double tt_node_order(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n) {
  tt_state *st = ctx;
  const tt_job *m = t->job >= 0 ? st->by_job[t->job] : NULL;
  if (m == NULL)
    return 0;
  double score = (double)bucket_score(ssn, st, m, t, n) * (double)st->weight;
  if (m->max_size != 0)
    score = score * SCH_MAX_NODE_SCORE / (double)m->max_size;
  return score;
}

/* Volcano AllocateFunc -> JobManager.TaskBound. Like Volcano, nothing undoes it when the
 * statement is discarded. */
static void tt_allocated(sch_session *ssn, void *ctx, const sch_task *t) {
  tt_state *st = ctx;
  tt_job *m = t->job >= 0 ? st->by_job[t->job] : NULL;
  int32_t ti = task_index(ssn, t);
  if (m == NULL || t->node < 0)
    return;
  int32_t name = st->task_name[ti];
  if (name >= 0) {
    tt_node_set *set = NULL;
    for (int32_t i = 0; i < m->nsets && !set; i++)
      if (m->sets[i].node == t->node)
        set = &m->sets[i];
    if (set == NULL && grow((void **)&m->sets, &m->capsets, m->nsets + 1, sizeof(*m->sets)) == 0) {
      set = &m->sets[m->nsets++];
      memset(set, 0, sizeof(*set));
      set->node = t->node;
    }
    if (set)
      set->names[name]++;
  }
  int32_t b = st->task_bucket[ti];
  if (b < 0)
    return;
  tt_bucket *bk = &m->buckets[b];
  int32_t *c = node_count(&bk->nodes, &bk->nnodes, &bk->capnodes, t->node, true);
  if (c)
    (*c)++;
  bk->bound++;
  for (int32_t i = 0; i < bk->ntasks; i++) {
    if (bk->tasks[i] != ti)
      continue;
    memmove(&bk->tasks[i], &bk->tasks[i + 1], (size_t)(bk->ntasks - i - 1) * sizeof(*bk->tasks));
    bk->ntasks--;
    sch_resource_sub(&bk->request, &t->resreq);
    bk->req_score -= req_score(sch_session_snapshot(ssn), &t->resreq);
    break;
  }
}

/* ---- session ---- */

static void tt_close(sch_session *ssn, void *state) {
  (void)ssn;
  tt_state *st = state;
  if (st == NULL)
    return;
  for (int32_t j = 0; st->by_job && j < st->njobs; j++)
    job_free(st->by_job[j]);
  free(st->by_job);
  free(st->task_bucket);
  free(st->task_name);
  free(st);
}

static int tt_init_jobs(sch_session *ssn, tt_state *st) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  st->njobs = snap->njobs;
  st->ntasks = snap->ntasks;
  st->by_job = calloc((size_t)(snap->njobs > 0 ? snap->njobs : 1), sizeof(*st->by_job));
  st->task_bucket = malloc((size_t)(snap->ntasks > 0 ? snap->ntasks : 1) * sizeof(int32_t));
  st->task_name = malloc((size_t)(snap->ntasks > 0 ? snap->ntasks : 1) * sizeof(int32_t));
  if (!st->by_job || !st->task_bucket || !st->task_name)
    return KC_ENOMEM;
  for (int32_t i = 0; i < snap->ntasks; i++)
    st->task_bucket[i] = st->task_name[i] = -1;
  for (int32_t j = 0; j < snap->njobs; j++) {
    const sch_job *job = &snap->jobs[j];
    if (job->count[SCH_TASK_PENDING] == 0 || job->pod_group == NULL)
      continue;
    int rc;
    tt_job *m = read_topology(snap, job, &rc);
    if (m == NULL) {
      if (rc < 0)
        return rc;
      continue;
    }
    st->by_job[j] = m;
    if ((rc = construct(snap, st, job, m)) < 0)
      return rc;
  }
  return 0;
}

static int tt_setup(sch_session *ssn, const sch_plugin_conf *conf, tt_state *st) {
  st->weight = sch_args_int(&conf->args, "task-topology.weight", 1);
  KC_V(3, "start to init task topology plugin, weight[%lld]", (long long)st->weight);
  int rc = tt_init_jobs(ssn, st);
  if (rc == 0)
    rc = sch_add_task_order_fn(ssn, tt_task_order, st);
  if (rc == 0)
    rc = sch_add_node_order_fn(ssn, tt_node_order, st);
  if (rc == 0)
    rc = sch_add_event_handler(ssn, tt_allocated, NULL, st);
  return rc;
}

/* A plugin that fails to open is not closed by the session: it frees its own state. */
static int tt_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  tt_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  int rc = tt_setup(ssn, conf, st);
  if (rc < 0) {
    tt_close(ssn, st);
    return rc;
  }
  *state = st;
  return 0;
}

const sch_plugin sch_plugin_tasktopology = {
    .name = "task-topology",
    .open = tt_open,
    .close = tt_close,
};
