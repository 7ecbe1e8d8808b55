/* resourcequota (Volcano pkg/scheduler/plugins/resourcequota): a job waits Pending, instead of
 * having its pods refused at create, while its namespace's ResourceQuotas cannot take it.
 *
 * Job enqueueable: a job without spec.minResources passes. Otherwise, for each ResourceQuota
 * of its namespace (its status.hard and status.used), the minResources entries the quota
 * limits, added to what the quota has used and to what this session already let in from the
 * namespace, must each stay within hard; else the job is rejected and its PodGroup gets a
 * Normal Unschedulable event "resource quota insufficient, requested: ..., used: ...,
 * limited: ..." over the entries that do not fit. A job let in adds all its minResources to
 * the namespace's pending use for the rest of the session. Quantities are compared by name
 * as the quota writes them ("requests.cpu", "pods", "count/pods", ...); the job controller
 * puts those names in minResources. The lists in the message are written "map[name:qty]",
 * Go's layout with the quantities as Kubernetes writes them. No arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "kc_quantity.h"
#include "sch_framework.h"

#define RQ_MAX 48 /* resource names per list: a quota names a handful */

typedef struct rq_item {
  const char *name; /* borrowed from the snapshot */
  int64_t milli;
} rq_item;

typedef struct rq_list {
  rq_item it[RQ_MAX];
  int n;
} rq_list;

typedef struct rq_pending {
  const char *ns; /* borrowed */
  rq_list use;
} rq_pending;

typedef struct rq_state {
  rq_pending *pending;
  size_t npending, cap;
} rq_state;

static rq_item *find(rq_list *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->it[i].name, name) == 0)
      return &l->it[i];
  return NULL;
}

/* l[name] += milli (saturating); a name past RQ_MAX is dropped (logged). */
static void put(rq_list *l, const char *name, int64_t milli) {
  rq_item *e = find(l, name);
  if (e) {
    e->milli = sch_add_sat(e->milli, milli);
    return;
  }
  if (l->n == RQ_MAX) {
    KC_WARN("resourcequota: more than %d resource names; %s left out", RQ_MAX, name);
    return;
  }
  l->it[l->n++] = (rq_item){name, milli};
}

static void from_resource(rq_list *l, const Kiln__Resource *r) {
  if (r->milli_cpu)
    put(l, "cpu", r->milli_cpu);
  if (r->memory)
    put(l, "memory", sch_mul_sat(r->memory, 1000));
  if (r->pods)
    put(l, "pods", sch_mul_sat(r->pods, 1000));
  if (r->ephemeral_storage)
    put(l, "ephemeral-storage", sch_mul_sat(r->ephemeral_storage, 1000));
  for (size_t i = 0; i < r->n_scalar; i++)
    if (r->scalar[i]->name)
      put(l, r->scalar[i]->name, r->scalar[i]->milli_value);
}

/* l[key] += the quantity value (a string); an unparsable one is left out (logged). */
static void put_quantity(rq_list *l, const char *key, const char *value) {
  kc_quantity q;
  if (!key || !value || kc_quantity_parse(value, &q, NULL) != 0) {
    KC_WARN("resourcequota: quantity %s=%s is not valid", key ? key : "", value ? value : "");
    return;
  }
  put(l, key, kc_quantity_milli(&q));
}

/* A quota's map of quantity strings (the entries of any map<string, string> field). */
#define FROM_MAP(l, entries, n)                                                                    \
  do {                                                                                             \
    for (size_t i_ = 0; i_ < (n); i_++)                                                            \
      put_quantity((l), (entries)[i_]->key, (entries)[i_]->value);                                 \
  } while (0)

/* "map[a:1 b:2Gi]" of the entries of l whose names are in only (NULL: all). */
static void format_list(const rq_list *l, const rq_list *only, char *buf, size_t len) {
  size_t off = (size_t)snprintf(buf, len, "map[");
  for (int i = 0; i < l->n && off < len; i++) {
    if (only && !find((rq_list *)only, l->it[i].name))
      continue;
    kc_quantity q;
    char qs[64];
    kc_quantity_from_milli(&q, l->it[i].milli, KC_QFMT_DECIMAL_SI);
    if (kc_quantity_format(&q, qs, sizeof(qs)) < 0)
      snprintf(qs, sizeof(qs), "%lldm", (long long)l->it[i].milli);
    off += (size_t)snprintf(buf + off, len - off, "%s%s:%s", off > 4 ? " " : "", l->it[i].name, qs);
  }
  if (off < len)
    snprintf(buf + off, len - off, "]");
}

static rq_list *pending_of(rq_state *st, const char *ns, bool add) {
  for (size_t i = 0; i < st->npending; i++)
    if (strcmp(st->pending[i].ns, ns) == 0)
      return &st->pending[i].use;
  if (!add)
    return NULL;
  if (st->npending == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 8;
    rq_pending *v = realloc(st->pending, cap * sizeof(*v));
    if (v == NULL)
      return NULL;
    st->pending = v;
    st->cap = cap;
  }
  rq_pending *p = &st->pending[st->npending++];
  memset(p, 0, sizeof(*p));
  p->ns = ns;
  return &p->use;
}

/* One quota against the job's request: true when it fits; else the event is recorded. */
static bool quota_admits(sch_session *ssn, rq_state *st, const sch_job *j, const rq_list *req,
                         const Kiln__ResourceQuota *quota) {
  rq_list hard = {0}, used = {0}, requested = {0}, exceeded = {0};
  if (quota->status) {
    FROM_MAP(&hard, quota->status->hard, quota->status->n_hard);
    FROM_MAP(&used, quota->status->used, quota->status->n_used);
  }
  for (int i = 0; i < req->n; i++)
    if (find(&hard, req->it[i].name))
      put(&requested, req->it[i].name, req->it[i].milli);
  const rq_list *pend = pending_of(st, j->namespace, false);
  for (int i = 0; i < requested.n; i++) {
    const char *name = requested.it[i].name;
    rq_item *u = find(&used, name), *h = find(&hard, name);
    rq_item *p = pend ? find((rq_list *)pend, name) : NULL;
    int64_t total =
        sch_add_sat(sch_add_sat(u ? u->milli : 0, p ? p->milli : 0), requested.it[i].milli);
    if (h && total > h->milli)
      put(&exceeded, name, 0);
  }
  if (exceeded.n == 0)
    return true;
  char r[512], u[512], h[512];
  format_list(&requested, &exceeded, r, sizeof(r));
  format_list(&used, &exceeded, u, sizeof(u));
  format_list(&hard, &exceeded, h, sizeof(h));
  KC_V(4,
       "enqueueable false for job: %s/%s, because :resource quota insufficient, requested: %s, "
       "used: %s, limited: %s",
       j->namespace, j->name, r, u, h);
  (void)sch_session_job_event(ssn, j, "Normal", "Unschedulable",
                              "resource quota insufficient, requested: %s, used: %s, limited: %s",
                              r, u, h);
  return false;
}

static int rq_enqueueable(sch_session *ssn, void *ctx, const sch_job *j) {
  rq_state *st = ctx;
  const Kiln__PodGroup *pg = j->pod_group;
  if (pg == NULL || pg->spec == NULL || pg->spec->min_resources == NULL)
    return SCH_PERMIT;
  rq_list req = {0};
  from_resource(&req, pg->spec->min_resources);
  const Kiln__Snapshot *m = sch_session_snapshot(ssn)->msg;
  for (size_t i = 0; i < m->n_resource_quotas; i++) {
    const Kiln__ResourceQuota *q = m->resource_quotas[i];
    const char *ns = q->metadata ? q->metadata->namespace_ : NULL;
    if (ns && j->namespace && strcmp(ns, j->namespace) == 0 && !quota_admits(ssn, st, j, &req, q))
      return SCH_REJECT;
  }
  rq_list *pend = pending_of(st, j->namespace ? j->namespace : "", true);
  for (int i = 0; pend && i < req.n; i++)
    put(pend, req.it[i].name, req.it[i].milli);
  return SCH_PERMIT;
}

static int rq_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  (void)conf;
  rq_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  *state = st;
  return sch_add_job_enqueueable_fn(ssn, rq_enqueueable, st);
}

static void rq_close(sch_session *ssn, void *state) {
  (void)ssn;
  rq_state *st = state;
  if (st)
    free(st->pending);
  free(st);
}

const sch_plugin sch_plugin_resourcequota = {
    .name = "resourcequota",
    .open = rq_open,
    .close = rq_close,
};
