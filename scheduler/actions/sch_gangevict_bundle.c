/* Victim bundles of gang-aware eviction (see sch_gangevict.h): Volcano's bundle.go. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "sch_gangevict.h"

void sch__bundles_free(sch__bundles *b) {
  for (size_t i = 0; i < b->n; i++)
    free(b->v[i].tasks);
  free(b->v);
  memset(b, 0, sizeof(*b));
}

static int bundle_push(sch__bundles *b, const sch_snapshot *snap, sch__bundle_type type,
                       int32_t job, const int32_t *tasks, size_t n) {
  if (n == 0)
    return 0;
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 8;
    sch__bundle *v = realloc(b->v, cap * sizeof(*v));
    if (!v)
      return KC_ENOMEM;
    b->v = v;
    b->cap = cap;
  }
  int32_t *own = malloc(n * sizeof(*own));
  if (!own)
    return KC_ENOMEM;
  memcpy(own, tasks, n * sizeof(*own));
  sch__bundle *x = &b->v[b->n++];
  *x = (sch__bundle){.type = type, .job = job, .tasks = own, .ntasks = n};
  for (size_t i = 0; i < n; i++)
    sch_resource_add(&x->local, &snap->tasks[own[i]].resreq);
  if (type == SCH__BUNDLE_WHOLE)
    x->global = snap->jobs[job].total_request; /* Volcano sumJobTasks: every task's Resreq */
  return 0;
}

static const char *uid_of(const sch_task *t) {
  return t->pod->uid ? t->pod->uid : "";
}

/* Lowest task priority first, then by pod UID (Volcano CreateJobBundles). */
static int local_cmp(const void *a, const void *b, void *arg) {
  const sch_snapshot *snap = arg;
  const sch_task *l = &snap->tasks[*(const int32_t *)a], *r = &snap->tasks[*(const int32_t *)b];
  if (l->priority != r->priority)
    return l->priority < r->priority ? -1 : 1;
  return strcmp(uid_of(l), uid_of(r));
}

/* Per minTaskMember entry, the tasks of that role the job may still lose (Volcano's
 * roleSurplus: ready tasks of the role less its minimum); enforced only when minAvailable
 * is at least the minimums' sum, as the gang plugin's task check. */
typedef struct roles {
  const Kiln__PodGroupSpec *spec;
  int32_t *surplus; /* NULL: not enforced */
} roles;

static bool role_ready(const sch_task *t) {
  return sch_task_status_allocated(t->status) || t->status == SCH_TASK_SUCCEEDED ||
         (t->status == SCH_TASK_PENDING && t->best_effort);
}

static int roles_init(const sch_snapshot *snap, const sch_job *j, roles *r) {
  memset(r, 0, sizeof(*r));
  const Kiln__PodGroupSpec *spec = j->pod_group ? j->pod_group->spec : NULL;
  if (!spec || spec->n_min_task_member == 0)
    return 0;
  int64_t total = 0;
  for (size_t i = 0; i < spec->n_min_task_member; i++)
    total += spec->min_task_member[i] ? spec->min_task_member[i]->value : 0;
  if ((int64_t)j->min_available < total)
    return 0;
  r->spec = spec;
  r->surplus = calloc(spec->n_min_task_member, sizeof(*r->surplus));
  if (!r->surplus)
    return KC_ENOMEM;
  for (size_t i = 0; i < spec->n_min_task_member; i++) {
    const Kiln__PodGroupSpec__MinTaskMemberEntry *e = spec->min_task_member[i];
    const char *key = e && e->key ? e->key : "";
    int32_t ready = 0;
    for (int32_t k = 0; k < j->ntasks; k++) {
      const sch_task *t = &snap->tasks[j->tasks[k]];
      const char *role = sch__task_role(t->pod);
      if (role && strcmp(role, key) == 0 && role_ready(t))
        ready++;
    }
    r->surplus[i] = ready - (e ? e->value : 0);
  }
  return 0;
}

/* The minTaskMember entry of t's role, -1 when none binds it. */
static int role_of(const roles *r, const sch_task *t) {
  const char *role = sch__task_role(t->pod);
  for (size_t i = 0; r->surplus && role && i < r->spec->n_min_task_member; i++) {
    const Kiln__PodGroupSpec__MinTaskMemberEntry *e = r->spec->min_task_member[i];
    if (e && e->key && strcmp(e->key, role) == 0)
      return (int)i;
  }
  return -1;
}

/* Safe while the job and the task's role both have a task to spare, each safe task
 * spending one of each; the others are the whole bundle. */
static int split(sch__bundles *out, const sch_snapshot *snap, int32_t ji, const int32_t *local,
                 size_t n, int32_t surplus, roles *r) {
  int32_t *safe = malloc((n ? n : 1) * sizeof(*safe));
  int32_t *whole = malloc((n ? n : 1) * sizeof(*whole));
  size_t ns = 0, nw = 0;
  int rc = KC_ENOMEM;
  if (!safe || !whole)
    goto out;
  for (size_t i = 0; i < n; i++) {
    int ri = role_of(r, &snap->tasks[local[i]]);
    if (surplus > 0 && (ri < 0 || r->surplus[ri] > 0)) {
      safe[ns++] = local[i];
      surplus--;
      if (ri >= 0)
        r->surplus[ri]--;
    } else {
      whole[nw++] = local[i];
    }
  }
  if ((rc = bundle_push(out, snap, SCH__BUNDLE_SAFE, ji, safe, ns)) == 0)
    rc = bundle_push(out, snap, SCH__BUNDLE_WHOLE, ji, whole, nw);
out:
  free(safe);
  free(whole);
  return rc;
}

int sch__bundles_add_job(sch_session *ssn, int32_t ji, int32_t *local, size_t n,
                         sch__bundles *out) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  const sch_job *j = &snap->jobs[ji];
  if (n == 0)
    return 0;
  qsort_r(local, n, sizeof(*local), local_cmp, (void *)snap);
  int32_t surplus = sch_job_ready_num(j) - j->min_available;
  if (surplus < 0) /* already not gang-ready: nothing more to break, every task is safe */
    return bundle_push(out, snap, SCH__BUNDLE_SAFE, ji, local, n);
  roles r;
  int rc = roles_init(snap, j, &r);
  if (rc == 0)
    rc = split(out, snap, ji, local, n, surplus, &r);
  free(r.surplus);
  return rc;
}

static double dim(const sch_resource *r, int d) {
  return (double)(d == 0 ? r->milli_cpu : d == 1 ? r->memory : r->scalar[d - 2]);
}

/* Sum over the need's dimensions of res / need, res capped at the need when cap is set. */
static double score(const sch_resource *res, const sch_resource *need, bool cap) {
  double s = 0;
  for (int d = 0; d < 2 + SCH_MAX_SCALARS; d++) {
    double n = dim(need, d), v = dim(res, d);
    if (n <= 0)
      continue;
    s += (cap && v > n ? n : v) / n;
  }
  return s;
}

double sch__bundle_roi(const sch__bundle *b, const sch_resource *need) {
  double global = score(&b->global, need, false);
  return global == 0 ? INFINITY : score(&b->local, need, true) / global;
}

typedef struct sort_ctx {
  sch_session *ssn;
  const sch_resource *need;
  bool by_queue;
} sort_ctx;

static int cmp_int(int64_t a, int64_t b) {
  return a < b ? -1 : a > b;
}

/* The fixed order of equals (Volcano stableBundleLess): job, first task, size. */
static int stable_cmp(const sch_snapshot *snap, const sch__bundle *l, const sch__bundle *r) {
  int v = strcmp(snap->jobs[l->job].key, snap->jobs[r->job].key);
  if (v)
    return v;
  if (l->ntasks && r->ntasks &&
      (v = strcmp(uid_of(&snap->tasks[l->tasks[0]]), uid_of(&snap->tasks[r->tasks[0]]))))
    return v;
  return cmp_int((int64_t)l->ntasks, (int64_t)r->ntasks);
}

static int queue_cmp(sch_session *ssn, const sch__bundle *l, const sch__bundle *r) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  int32_t lq = snap->jobs[l->job].queue, rq = snap->jobs[r->job].queue;
  if (lq == rq || lq < 0 || rq < 0)
    return 0;
  int v = -sch_session_queue_order(ssn, &snap->queues[lq], &snap->queues[rq]);
  return v ? v : strcmp(snap->queues[lq].name, snap->queues[rq].name);
}

static int bundle_cmp(const void *a, const void *b, void *arg) {
  const sort_ctx *c = arg;
  const sch_snapshot *snap = sch_session_snapshot(c->ssn);
  const sch__bundle *l = a, *r = b;
  int v;
  if (c->by_queue && (v = queue_cmp(c->ssn, l, r)))
    return v;
  if (l->type != r->type)
    return l->type < r->type ? -1 : 1;
  const sch_job *lj = &snap->jobs[l->job], *rj = &snap->jobs[r->job];
  if (l->job != r->job && (v = cmp_int(lj->priority, rj->priority)))
    return v;
  if (!c->by_queue && l->job != r->job && (v = -sch_session_job_order(c->ssn, lj, rj)))
    return v;
  double lr = sch__bundle_roi(l, c->need), rr = sch__bundle_roi(r, c->need);
  if (lr != rr)
    return lr > rr ? -1 : 1;
  return stable_cmp(snap, l, r);
}

void sch__bundles_sort(sch_session *ssn, sch__bundles *b, const sch_resource *need, bool by_queue) {
  sort_ctx c = {ssn, need, by_queue};
  qsort_r(b->v, b->n, sizeof(*b->v), bundle_cmp, &c);
}

/* Keeps bundle x by the allowed set: whole all or nothing, safe shrunk. */
static bool keep(sch__bundle *x, const sch_snapshot *snap, const uint8_t *allowed,
                 bool allow_whole) {
  size_t k = 0;
  for (size_t i = 0; i < x->ntasks; i++)
    if (allowed[x->tasks[i]])
      x->tasks[k++] = x->tasks[i];
  if (x->type == SCH__BUNDLE_WHOLE)
    return allow_whole && k == x->ntasks;
  x->ntasks = k;
  sch_resource_clear(&x->local);
  for (size_t i = 0; i < k; i++)
    sch_resource_add(&x->local, &snap->tasks[x->tasks[i]].resreq);
  return k > 0;
}

int sch__bundles_gate(sch_session *ssn, sch__bundles *b, const sch_eviction_ctx *ec,
                      bool allow_whole) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  size_t total = 0;
  for (size_t i = 0; i < b->n; i++)
    total += b->v[i].ntasks;
  int32_t *cands = malloc((total ? total : 1) * sizeof(*cands));
  int32_t *victims = malloc((total ? total : 1) * sizeof(*victims));
  uint8_t *allowed = calloc((size_t)snap->ntasks + 1, 1);
  int rc = KC_ENOMEM;
  if (!cands || !victims || !allowed)
    goto out;
  size_t n = 0;
  for (size_t i = 0; i < b->n; i++)
    for (size_t k = 0; k < b->v[i].ntasks; k++)
      cands[n++] = b->v[i].tasks[k];
  int nv = sch_session_unified_evictable(ssn, ec, cands, n, victims);
  if ((rc = nv < 0 ? nv : 0) < 0)
    goto out;
  for (int i = 0; i < nv; i++)
    allowed[victims[i]] = 1;
  size_t k = 0;
  for (size_t i = 0; i < b->n; i++) {
    if (keep(&b->v[i], snap, allowed, allow_whole))
      b->v[k++] = b->v[i];
    else
      free(b->v[i].tasks);
  }
  b->n = k;
out:
  free(cands);
  free(victims);
  free(allowed);
  return rc;
}
