/* The session: callback registry, Volcano's tier dispatch rules (session_plugins.go),
 * reasons, outputs, and open/run/close with the PodGroup and Queue status computation
 * (session.go jobStatus / getPodGroupPhase). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"

/* ---- registration ---- */

static int add_cb(sch_session *ssn, sch_cb_kind kind, sch_ext sw, void (*fn)(void),
                  void (*fn2)(void), void *ctx) {
  if (ssn->cur_plugin && (int)sw >= 0 && !(ssn->cur_plugin->enabled & (1u << sw)))
    return 0;
  sch_cbs *c = &ssn->cbs[kind];
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 4;
    sch_cb *v = realloc(c->v, cap * sizeof(*v));
    if (!v)
      return KC_ENOMEM;
    c->v = v;
    c->cap = cap;
  }
  c->v[c->n++] = (sch_cb){fn, fn2, ctx, ssn->cur_tier};
  return 0;
}

int sch__add_cb(sch_session *ssn, sch_cb_kind kind, int sw, void (*fn)(void), void (*fn2)(void),
                void *ctx) {
  return add_cb(ssn, kind, (sch_ext)sw, fn, fn2, ctx);
}

#define NOSWITCH ((sch_ext)-1)
#define F(fn)    ((void (*)(void))(fn))

int sch_add_job_order_fn(sch_session *ssn, sch_job_order_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_JOB_ORDER, SCH_EXT_JOB_ORDER, F(fn), NULL, ctx);
}
int sch_add_queue_order_fn(sch_session *ssn, sch_queue_order_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_QUEUE_ORDER, SCH_EXT_QUEUE_ORDER, F(fn), NULL, ctx);
}
int sch_add_task_order_fn(sch_session *ssn, sch_task_order_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_TASK_ORDER, SCH_EXT_TASK_ORDER, F(fn), NULL, ctx);
}
int sch_add_predicate_fn(sch_session *ssn, sch_predicate_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_PREDICATE, SCH_EXT_PREDICATE, F(fn), NULL, ctx);
}
int sch_add_node_order_fn(sch_session *ssn, sch_node_order_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_NODE_ORDER, SCH_EXT_NODE_ORDER, F(fn), NULL, ctx);
}
int sch_add_batch_node_order_fn(sch_session *ssn, sch_batch_node_order_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_BATCH_NODE_ORDER, SCH_EXT_NODE_ORDER, F(fn), NULL, ctx);
}
int sch_add_job_valid_fn(sch_session *ssn, sch_job_valid_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_JOB_VALID, NOSWITCH, F(fn), NULL, ctx);
}
int sch_add_job_ready_fn(sch_session *ssn, sch_job_bool_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_JOB_READY, SCH_EXT_JOB_READY, F(fn), NULL, ctx);
}
int sch_add_job_pipelined_fn(sch_session *ssn, sch_job_vote_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_JOB_PIPELINED, SCH_EXT_JOB_PIPELINED, F(fn), NULL, ctx);
}
int sch_add_job_starving_fn(sch_session *ssn, sch_job_bool_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_JOB_STARVING, SCH_EXT_JOB_STARVING, F(fn), NULL, ctx);
}
int sch_add_job_enqueueable_fn(sch_session *ssn, sch_job_vote_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_JOB_ENQUEUEABLE, NOSWITCH, F(fn), NULL, ctx);
}
int sch_add_job_enqueued_fn(sch_session *ssn, sch_job_event_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_JOB_ENQUEUED, SCH_EXT_JOB_ENQUEUED, F(fn), NULL, ctx);
}
int sch_add_overused_fn(sch_session *ssn, sch_queue_bool_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_OVERUSED, SCH_EXT_OVERUSED, F(fn), NULL, ctx);
}
int sch_add_allocatable_fn(sch_session *ssn, sch_allocatable_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_ALLOCATABLE, SCH_EXT_ALLOCATABLE, F(fn), NULL, ctx);
}
int sch_add_preemptive_fn(sch_session *ssn, sch_allocatable_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_PREEMPTIVE, SCH_EXT_PREEMPTIVE, F(fn), NULL, ctx);
}
int sch_add_preemptable_fn(sch_session *ssn, sch_victims_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_PREEMPTABLE, SCH_EXT_PREEMPTABLE, F(fn), NULL, ctx);
}
int sch_add_reclaimable_fn(sch_session *ssn, sch_victims_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_RECLAIMABLE, SCH_EXT_RECLAIMABLE, F(fn), NULL, ctx);
}
int sch_add_unified_evictable_fn(sch_session *ssn, sch_unified_evictable_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_UNIFIED_EVICTABLE, NOSWITCH, F(fn), NULL, ctx);
}
int sch_add_victim_tasks_fn(sch_session *ssn, sch_victim_tasks_fn fn, void *ctx) {
  return add_cb(ssn, SCH_CB_VICTIM_TASKS, SCH_EXT_VICTIM, F(fn), NULL, ctx);
}
int sch_add_event_handler(sch_session *ssn, sch_task_event_fn allocate,
                          sch_task_event_fn deallocate, void *ctx) {
  return add_cb(ssn, SCH_CB_EVENT, NOSWITCH, F(allocate), F(deallocate), ctx);
}

/* ---- dispatch ---- */

#define EACH(ssn, kind, cb)                                                                        \
  for (sch_cb *cb = (ssn)->cbs[kind].v, *cb##_end = cb ? cb + (ssn)->cbs[kind].n : cb;             \
       cb < cb##_end; cb++)

static int cmp_i64(int64_t a, int64_t b) {
  return a < b ? -1 : a > b;
}

int sch_session_job_order(sch_session *ssn, const sch_job *l, const sch_job *r) {
  EACH(ssn, SCH_CB_JOB_ORDER, cb) {
    int v = ((sch_job_order_fn)cb->fn)(ssn, cb->ctx, l, r);
    if (v)
      return v;
  }
  int c = cmp_i64(l->creation_time, r->creation_time);
  return c ? c : strcmp(l->key, r->key);
}

int sch_session_queue_order(sch_session *ssn, const sch_queue *l, const sch_queue *r) {
  EACH(ssn, SCH_CB_QUEUE_ORDER, cb) {
    int v = ((sch_queue_order_fn)cb->fn)(ssn, cb->ctx, l, r);
    if (v)
      return v;
  }
  int c = cmp_i64(l->creation_time, r->creation_time);
  return c ? c : strcmp(l->name, r->name);
}

int sch_session_task_order(sch_session *ssn, const sch_task *l, const sch_task *r) {
  EACH(ssn, SCH_CB_TASK_ORDER, cb) {
    int v = ((sch_task_order_fn)cb->fn)(ssn, cb->ctx, l, r);
    if (v)
      return v;
  }
  int c = cmp_i64(l->pod->creation_time, r->pod->creation_time);
  if (c)
    return c;
  c = strcmp(l->pod->uid ? l->pod->uid : "", r->pod->uid ? r->pod->uid : "");
  return c ? c : strcmp(l->pod->name ? l->pod->name : "", r->pod->name ? r->pod->name : "");
}

int sch_session_predicate(sch_session *ssn, const sch_task *t, const sch_node *n, sch_fit *why) {
  EACH(ssn, SCH_CB_PREDICATE, cb) {
    int v = ((sch_predicate_fn)cb->fn)(ssn, cb->ctx, t, n, why);
    if (v != SCH_FIT)
      return v;
  }
  return SCH_FIT;
}

void sch_session_node_scores(sch_session *ssn, const sch_task *t, const int32_t *nodes, size_t n,
                             double *scores) {
  for (size_t i = 0; i < n; i++)
    scores[i] = 0;
  EACH(ssn, SCH_CB_NODE_ORDER, cb) {
    for (size_t i = 0; i < n; i++)
      scores[i] += ((sch_node_order_fn)cb->fn)(ssn, cb->ctx, t, &ssn->snap->nodes[nodes[i]]);
  }
  EACH(ssn, SCH_CB_BATCH_NODE_ORDER, cb) {
    ((sch_batch_node_order_fn)cb->fn)(ssn, cb->ctx, t, nodes, n, scores);
  }
}

bool sch_session_job_valid(sch_session *ssn, const sch_job *j, sch_valid *out) {
  out->pass = true;
  out->reason[0] = out->message[0] = '\0';
  EACH(ssn, SCH_CB_JOB_VALID, cb) {
    sch_valid v = {.pass = true};
    if (((sch_job_valid_fn)cb->fn)(ssn, cb->ctx, j, &v) && !v.pass) {
      *out = v;
      return false;
    }
  }
  return true;
}

bool sch_session_job_ready(sch_session *ssn, const sch_job *j) {
  EACH(ssn, SCH_CB_JOB_READY, cb) {
    if (!((sch_job_bool_fn)cb->fn)(ssn, cb->ctx, j))
      return false;
  }
  return true;
}

/* Permit/Abstain/Reject voting: a Reject is final; a Permit settles its tier. */
static bool vote(sch_session *ssn, sch_cb_kind kind, const sch_job *j) {
  const sch_cbs *c = &ssn->cbs[kind];
  size_t i = 0;
  while (i < c->n) {
    int tier = c->v[i].tier;
    bool permit = false;
    for (; i < c->n && c->v[i].tier == tier; i++) {
      int v = ((sch_job_vote_fn)c->v[i].fn)(ssn, c->v[i].ctx, j);
      if (v < 0)
        return false;
      if (v > 0)
        permit = true;
    }
    if (permit)
      return true;
  }
  return true;
}

bool sch_session_job_pipelined(sch_session *ssn, const sch_job *j) {
  return vote(ssn, SCH_CB_JOB_PIPELINED, j);
}

bool sch_session_job_enqueueable(sch_session *ssn, const sch_job *j) {
  return vote(ssn, SCH_CB_JOB_ENQUEUEABLE, j);
}

bool sch_session_job_starving(sch_session *ssn, const sch_job *j) {
  const sch_cbs *c = &ssn->cbs[SCH_CB_JOB_STARVING];
  size_t i = 0;
  while (i < c->n) {
    int tier = c->v[i].tier;
    for (; i < c->n && c->v[i].tier == tier; i++)
      if (!((sch_job_bool_fn)c->v[i].fn)(ssn, c->v[i].ctx, j))
        return false;
    return true; /* this tier had an opinion and every plugin said yes */
  }
  return false;
}

void sch_session_job_enqueued(sch_session *ssn, const sch_job *j) {
  EACH(ssn, SCH_CB_JOB_ENQUEUED, cb) {
    ((sch_job_event_fn)cb->fn)(ssn, cb->ctx, j);
  }
}

bool sch_session_overused(sch_session *ssn, const sch_queue *q) {
  EACH(ssn, SCH_CB_OVERUSED, cb) {
    if (((sch_queue_bool_fn)cb->fn)(ssn, cb->ctx, q))
      return true;
  }
  return false;
}

bool sch_session_allocatable(sch_session *ssn, const sch_queue *q, const sch_task *t) {
  EACH(ssn, SCH_CB_ALLOCATABLE, cb) {
    if (!((sch_allocatable_fn)cb->fn)(ssn, cb->ctx, q, t))
      return false;
  }
  return true;
}

bool sch_session_preemptive(sch_session *ssn, const sch_queue *q, const sch_task *t) {
  EACH(ssn, SCH_CB_PREEMPTIVE, cb) {
    if (!((sch_allocatable_fn)cb->fn)(ssn, cb->ctx, q, t))
      return false;
  }
  return true;
}

/* One plugin's victim choice (task-level or unified). */
static bool victims_vote(sch_session *ssn, sch_cb_kind kind, const sch_cb *cb,
                         const sch_task *preemptor, const sch_eviction_ctx *ec,
                         const int32_t *cands, size_t n, int32_t *tmp, size_t *k) {
  if (kind == SCH_CB_UNIFIED_EVICTABLE)
    return ((sch_unified_evictable_fn)cb->fn)(ssn, cb->ctx, ec, cands, n, tmp, k);
  return ((sch_victims_fn)cb->fn)(ssn, cb->ctx, preemptor, cands, n, tmp, k);
}

/* Volcano's Preemptable/Reclaimable: the first plugin that votes starts the set, each
 * later voter intersects it, an empty vote empties it; the tier in which anybody voted
 * decides (an empty answer there is final: Volcano keeps its "initialised" flag across
 * tiers, so a later tier can only intersect with nothing). */
static int victims(sch_session *ssn, sch_cb_kind kind, const sch_task *preemptor,
                   const sch_eviction_ctx *ec, const int32_t *cands, size_t n, int32_t *out) {
  const sch_cbs *c = &ssn->cbs[kind];
  int32_t *tmp = malloc((n ? n : 1) * sizeof(*tmp));
  if (!tmp)
    return KC_ENOMEM;
  bool voted = false;
  size_t nout = 0;
  for (size_t i = 0; i < c->n; i++) {
    if (voted && c->v[i].tier != c->v[i - 1].tier)
      break;
    size_t k = 0;
    if (!victims_vote(ssn, kind, &c->v[i], preemptor, ec, cands, n, tmp, &k))
      continue;
    if (!voted) {
      memcpy(out, tmp, k * sizeof(*tmp));
      nout = k;
      voted = true;
      continue;
    }
    size_t m = 0; /* intersection, in out's order */
    for (size_t a = 0; a < nout; a++)
      for (size_t b = 0; b < k; b++)
        if (out[a] == tmp[b]) {
          out[m++] = out[a];
          break;
        }
    nout = m;
  }
  free(tmp);
  return (int)nout;
}

int sch_session_preemptable(sch_session *ssn, const sch_task *preemptor, const int32_t *cands,
                            size_t n, int32_t *out) {
  return victims(ssn, SCH_CB_PREEMPTABLE, preemptor, NULL, cands, n, out);
}

int sch_session_reclaimable(sch_session *ssn, const sch_task *preemptor, const int32_t *cands,
                            size_t n, int32_t *out) {
  return victims(ssn, SCH_CB_RECLAIMABLE, preemptor, NULL, cands, n, out);
}

int sch_session_unified_evictable(sch_session *ssn, const sch_eviction_ctx *ec,
                                  const int32_t *cands, size_t n, int32_t *out) {
  return victims(ssn, SCH_CB_UNIFIED_EVICTABLE, ec->task, ec, cands, n, out);
}

int sch_session_victim_tasks(sch_session *ssn, const int32_t *cands, size_t n, int32_t *out) {
  int32_t *tmp = malloc((n ? n : 1) * sizeof(*tmp));
  if (!tmp)
    return KC_ENOMEM;
  size_t nout = 0;
  EACH(ssn, SCH_CB_VICTIM_TASKS, cb) {
    size_t k = 0;
    ((sch_victim_tasks_fn)cb->fn)(ssn, cb->ctx, cands, n, tmp, &k);
    for (size_t i = 0; i < k; i++) {
      bool dup = false;
      for (size_t j = 0; j < nout && !dup; j++)
        dup = out[j] == tmp[i];
      if (!dup && nout < n)
        out[nout++] = tmp[i];
    }
  }
  free(tmp);
  return (int)nout;
}

void sch__fire_allocate(sch_session *ssn, const sch_task *t) {
  EACH(ssn, SCH_CB_EVENT, cb) {
    if (cb->fn)
      ((sch_task_event_fn)cb->fn)(ssn, cb->ctx, t);
  }
}

void sch__fire_deallocate(sch_session *ssn, const sch_task *t) {
  EACH(ssn, SCH_CB_EVENT, cb) {
    if (cb->fn2)
      ((sch_task_event_fn)cb->fn2)(ssn, cb->ctx, t);
  }
}

/* ---- reasons ---- */

void sch_fit_add(sch_fit *f, int32_t reason) {
  if (reason < 0)
    return;
  for (int i = 0; i < f->n; i++)
    if (f->reasons[i] == reason)
      return;
  if (f->n < SCH_FIT_MAX_REASONS)
    f->reasons[f->n++] = reason;
}

int32_t sch_session_reason(sch_session *ssn, const char *reason) {
  int32_t id = (int32_t)(intptr_t)kc_strmap_get(&ssn->reason_index, reason) - 1;
  if (id >= 0)
    return id;
  if (ssn->nreasons == ssn->cap_reasons) {
    size_t cap = ssn->cap_reasons ? ssn->cap_reasons * 2 : 32;
    char **v = realloc(ssn->reasons, cap * sizeof(*v));
    if (!v)
      return KC_ENOMEM;
    ssn->reasons = v;
    ssn->cap_reasons = cap;
  }
  char *s = strdup(reason);
  if (!s)
    return KC_ENOMEM;
  if (kc_strmap_put(&ssn->reason_index, s, (void *)(intptr_t)(ssn->nreasons + 1), NULL) < 0) {
    free(s);
    return KC_ENOMEM;
  }
  ssn->reasons[ssn->nreasons] = s;
  return (int32_t)ssn->nreasons++;
}

int32_t sch_session_reasonf(sch_session *ssn, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return sch_session_reason(ssn, buf);
}

const char *sch_session_reason_str(const sch_session *ssn, int32_t id) {
  return id >= 0 && (size_t)id < ssn->nreasons ? ssn->reasons[id] : "";
}

/* ---- accessors and outputs ---- */

sch_snapshot *sch_session_snapshot(sch_session *ssn) {
  return ssn->snap;
}

bool sch_session_preempting(const sch_session *ssn) {
  return ssn->preempting;
}

/* Whether the session's configuration runs the action named name. */
bool sch__action_configured(const sch_session *ssn, const char *name) {
  for (size_t i = 0; ssn->conf && i < ssn->conf->nactions; i++)
    if (strcmp(ssn->conf->actions[i]->name, name) == 0)
      return true;
  return false;
}

const sch_session_options *sch_session_opts(const sch_session *ssn) {
  return &ssn->opts;
}

sch_carry *sch_session_carry(sch_session *ssn) {
  return &ssn->res->carry;
}

const sch_args *sch_session_action_args(const sch_session *ssn, const char *action) {
  static const sch_args none;
  for (size_t i = 0; ssn->conf && i < ssn->conf->nconfigurations; i++)
    if (strcmp(ssn->conf->configurations[i].name, action) == 0)
      return &ssn->conf->configurations[i].args;
  return &none;
}

#define GROW(ptr, n, cap)                                                                          \
  do {                                                                                             \
    if ((n) == (cap)) {                                                                            \
      size_t nc_ = (cap) ? (cap)*2 : 16;                                                           \
      void *v_ = realloc((ptr), nc_ * sizeof(*(ptr)));                                             \
      if (!v_)                                                                                     \
        return KC_ENOMEM;                                                                          \
      (ptr) = v_;                                                                                  \
      (cap) = nc_;                                                                                 \
    }                                                                                              \
  } while (0)

int sch__result_bind(sch_session *ssn, int32_t task, int32_t node) {
  sch_result *r = ssn->res;
  GROW(r->binds, r->nbinds, ssn->cap_binds);
  r->binds[r->nbinds++] = (sch_bind){task, node};
  return 0;
}

int sch__result_evict(sch_session *ssn, int32_t task, const char *reason) {
  sch_result *r = ssn->res;
  GROW(r->evicts, r->nevicts, ssn->cap_evicts);
  char *s = strdup(reason ? reason : "");
  if (!s)
    return KC_ENOMEM;
  r->evicts[r->nevicts++] = (sch_evict){task, s};
  return 0;
}

int sch__result_nominate(sch_session *ssn, int32_t task, int32_t node) {
  sch_result *r = ssn->res;
  GROW(r->nominations, r->nnominations, ssn->cap_nominations);
  r->nominations[r->nnominations++] = (sch_bind){task, node};
  return 0;
}

int sch__result_event(sch_session *ssn, sch_event_kind kind, int32_t object, const char *type,
                      const char *reason, const char *message) {
  sch_result *r = ssn->res;
  GROW(r->events, r->nevents, ssn->cap_events);
  char *s = strdup(message ? message : "");
  if (!s)
    return KC_ENOMEM;
  r->events[r->nevents++] = (sch_event){kind, object, type, reason, s};
  return 0;
}

int sch_session_annotate(sch_session *ssn, int32_t task, bool node, const char *key,
                         const char *value) {
  sch_result *r = ssn->res;
  GROW(r->annotations, r->nannotations, ssn->cap_annotations);
  char *k = strdup(key), *v = strdup(value);
  if (!k || !v) {
    free(k);
    free(v);
    return KC_ENOMEM;
  }
  r->annotations[r->nannotations++] = (sch_annotation){task, node, k, v};
  return 0;
}

int sch_session_job_event(sch_session *ssn, const sch_job *j, const char *type, const char *reason,
                          const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (j->shadow)
    return 0;
  return sch__result_event(ssn, SCH_EVENT_PODGROUP, (int32_t)(j - ssn->snap->jobs), type, reason,
                           buf);
}

int sch_session_job_queue_reason(sch_session *ssn, const sch_job *j, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  int32_t id = sch_session_reason(ssn, buf);
  if (id < 0)
    return id;
  ssn->snap->jobs[j - ssn->snap->jobs].queue_message = id;
  return 0;
}

int sch__job_condition(sch_session *ssn, const sch_job *j, bool unschedulable, const char *reason,
                       const char *message) {
  int32_t r = sch_session_reason(ssn, reason);
  int32_t m = sch_session_reason(ssn, message);
  if (r < 0 || m < 0)
    return KC_ENOMEM;
  ssn->job_cond[j - ssn->snap->jobs] = (sch_job_cond){true, unschedulable, r, m};
  return 0;
}

/* ---- lifecycle ---- */

static void session_free(sch_session *ssn) {
  for (int k = 0; k < SCH_CB__COUNT; k++)
    free(ssn->cbs[k].v);
  free(ssn->plugin_state);
  free(ssn->node_list);
  kc_strmap_close(&ssn->reason_index, NULL);
  for (size_t i = 0; i < ssn->nreasons; i++)
    free(ssn->reasons[i]);
  free(ssn->reasons);
  free(ssn->job_cond);
  sch_result_free(ssn->res);
  free(ssn);
}

uint64_t sch__clock(const sch_session *ssn) {
  return ssn->opts.clock_ns ? ssn->opts.clock_ns() : 0;
}

void sch__stage_done(sch_session *ssn, sch_stage stage, uint64_t start) {
  if (!ssn->opts.clock_ns)
    return;
  double ms = (double)(ssn->opts.clock_ns() - start) / 1e6;
  sch_hist *h = &ssn->res->stages[stage];
  size_t n =
      ssn->opts.nstage_bounds < SCH_HIST_MAX_BOUNDS ? ssn->opts.nstage_bounds : SCH_HIST_MAX_BOUNDS;
  size_t b = 0;
  while (b < n && ms > ssn->opts.stage_bounds[b])
    b++;
  h->counts[b]++;
  h->n++;
  h->sum += ms;
}

static void close_plugins(sch_session *ssn, size_t upto) {
  size_t k = 0;
  for (size_t t = 0; ssn->conf && t < ssn->conf->ntiers; t++)
    for (size_t p = 0; p < ssn->conf->tiers[t].nplugins; p++, k++) {
      if (k >= upto)
        return;
      const sch_plugin *pl = ssn->conf->tiers[t].plugins[p].plugin;
      uint64_t t0 = sch__clock(ssn);
      if (pl && pl->close)
        pl->close(ssn, ssn->plugin_state[k]);
      if (ssn->res->plugin_times && k < ssn->res->nplugin_times)
        ssn->res->plugin_times[k].close_ns = sch__clock(ssn) - t0;
    }
}

int sch_session_open(sch_snapshot *snap, const sch_conf *conf, const sch_session_options *opts,
                     sch_session **out) {
  static const sch_session_options defaults = SCH_SESSION_OPTIONS_DEFAULT;
  *out = NULL;
  sch_session *ssn = calloc(1, sizeof(*ssn));
  if (!ssn)
    return KC_ENOMEM;
  ssn->snap = snap;
  ssn->conf = conf;
  ssn->opts = opts ? *opts : defaults;
  /* The clock and the session's identity come from the snapshot (the time it was taken),
   * so a replay of a dumped snapshot makes the same decisions and writes the same
   * conditions as the live session did. */
  int64_t taken = snap->msg ? snap->msg->time_unix_nano : 0;
  if (!ssn->opts.now)
    ssn->opts.now = taken / 1000000000;
  if (ssn->opts.session_uid)
    snprintf(ssn->uid, sizeof(ssn->uid), "%s", ssn->opts.session_uid);
  else
    snprintf(ssn->uid, sizeof(ssn->uid), "%llx", (unsigned long long)taken);
  ssn->opts.session_uid = ssn->uid;
  kc_strmap_init(&ssn->reason_index, KC_STRMAP_BORROW_KEYS);
  ssn->res = calloc(1, sizeof(*ssn->res));
  ssn->job_cond = calloc((size_t)(snap->njobs ? snap->njobs : 1), sizeof(*ssn->job_cond));
  ssn->node_list = malloc((size_t)(snap->nnodes ? snap->nnodes : 1) * sizeof(int32_t));
  size_t np = 0;
  for (size_t t = 0; conf && t < conf->ntiers; t++)
    np += conf->tiers[t].nplugins;
  ssn->nplugins = np;
  ssn->plugin_state = calloc(np ? np : 1, sizeof(void *));
  if (ssn->res && ssn->opts.clock_ns && np &&
      (ssn->res->plugin_times = calloc(np, sizeof(*ssn->res->plugin_times))))
    ssn->res->nplugin_times = np;
  if (!ssn->res || !ssn->job_cond || !ssn->node_list || !ssn->plugin_state ||
      (ssn->opts.clock_ns && np && !ssn->res->plugin_times)) {
    session_free(ssn);
    return KC_ENOMEM;
  }
  ssn->res->carry = ssn->opts.carry;
  for (int32_t i = 0; i < snap->nnodes; i++)
    if (snap->nodes[i].ready)
      ssn->node_list[ssn->nnode_list++] = i;

  size_t k = 0;
  for (size_t t = 0; conf && t < conf->ntiers; t++) {
    for (size_t p = 0; p < conf->tiers[t].nplugins; p++, k++) {
      const sch_plugin_conf *pc = &conf->tiers[t].plugins[p];
      ssn->cur_tier = (int)t;
      ssn->cur_plugin = pc;
      uint64_t t0 = sch__clock(ssn);
      int rc =
          pc->plugin && pc->plugin->open ? pc->plugin->open(ssn, pc, &ssn->plugin_state[k]) : 0;
      if (ssn->res->plugin_times) {
        ssn->res->plugin_times[k].plugin = pc->plugin ? pc->plugin->name : "";
        ssn->res->plugin_times[k].open_ns = sch__clock(ssn) - t0;
      }
      if (rc < 0) {
        KC_ERROR("scheduler: plugin %s failed to open: %s", pc->plugin->name, kc_strerror(rc));
        close_plugins(ssn, k);
        session_free(ssn);
        return rc;
      }
    }
  }
  ssn->cur_plugin = NULL;
  *out = ssn;
  return 0;
}

int sch_session_run(sch_session *ssn) {
  for (size_t i = 0; ssn->conf && i < ssn->conf->nactions; i++) {
    const sch_action *a = ssn->conf->actions[i];
    int rc = a->execute(ssn);
    if (rc < 0) {
      KC_ERROR("scheduler: action %s failed: %s", a->name, kc_strerror(rc));
      return rc;
    }
  }
  return 0;
}

/* Volcano getPodGroupPhase: pods count once they are bound (ScheduledStatus: Bound,
 * Running, Succeeded, Failed), not while this session allocates or binds them, so the
 * session that enqueues a group and binds its pods leaves it Inqueue; Running follows once
 * the binds are seen. Completed when every such pod has finished. A group with no pod
 * counted stays as it is (Volcano would call a minMember 0 group with none Completed). */
static sch_pg_phase pg_phase(const sch_job *j, bool unschedulable_now) {
  if (j->count[SCH_TASK_RUNNING] > 0 && unschedulable_now)
    return SCH_PG_UNKNOWN;
  int32_t completed = j->count[SCH_TASK_SUCCEEDED] + j->count[SCH_TASK_FAILED];
  int32_t scheduled = j->count[SCH_TASK_BOUND] + j->count[SCH_TASK_RUNNING] + completed;
  if (scheduled >= j->min_available && scheduled > 0)
    return scheduled == completed ? SCH_PG_COMPLETED : SCH_PG_RUNNING;
  return j->phase == SCH_PG_INQUEUE ? SCH_PG_INQUEUE : SCH_PG_PENDING;
}

static int task_why(sch_session *ssn, int32_t task, const char *msg) {
  sch_result *r = ssn->res;
  if (r->nwhy % 64 == 0) {
    void *v = realloc(r->why, (r->nwhy + 64) * sizeof(*r->why));
    if (!v)
      return KC_ENOMEM;
    r->why = v;
  }
  char *s = strdup(msg);
  if (!s)
    return KC_ENOMEM;
  r->why[r->nwhy++] = (sch_task_why){task, s};
  return 0;
}

static int build_status(sch_session *ssn) {
  sch_snapshot *snap = ssn->snap;
  sch_result *r = ssn->res;
  r->pod_groups = calloc((size_t)(snap->njobs ? snap->njobs : 1), sizeof(*r->pod_groups));
  r->queues = calloc((size_t)(snap->nqueues ? snap->nqueues : 1), sizeof(*r->queues));
  if (!r->pod_groups || !r->queues)
    return KC_ENOMEM;
  for (int32_t q = 0; q < snap->nqueues; q++)
    r->queues[r->nqueues++].queue = q;
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    sch_job *j = &snap->jobs[ji];
    const sch_job_cond *c = &ssn->job_cond[ji];
    bool unsched = c->set && c->unschedulable;
    sch_pg_phase ph = pg_phase(j, unsched);
    if (j->queue >= 0) {
      sch_queue_status *qs = &r->queues[j->queue];
      sch_resource_add(&qs->allocated, &j->allocated);
      switch (ph) {
      case SCH_PG_PENDING:
        qs->pending++;
        break;
      case SCH_PG_INQUEUE:
        qs->inqueue++;
        break;
      case SCH_PG_RUNNING:
        qs->running++;
        break;
      case SCH_PG_UNKNOWN:
        qs->unknown++;
        break;
      case SCH_PG_COMPLETED:
        qs->completed++;
        break;
      }
    }
    if (j->shadow)
      continue;
    sch_pg_status *ps = &r->pod_groups[r->npod_groups++];
    ps->job = ji;
    ps->phase = ph;
    ps->running = j->count[SCH_TASK_RUNNING];
    ps->succeeded = j->count[SCH_TASK_SUCCEEDED];
    ps->failed = j->count[SCH_TASK_FAILED];
    if (c->set) {
      ps->has_condition = true;
      ps->condition.type = c->unschedulable ? "Unschedulable" : "Scheduled";
      ps->condition.status = "True";
      ps->condition.reason = sch_session_reason_str(ssn, c->reason);
      ps->condition.message = sch_session_reason_str(ssn, c->message);
      ps->condition.transition_id = ssn->uid;
      ps->condition.last_transition_time = ssn->opts.now;
    }
  }
  /* Explanations: every pending task of ours that is still pending says why. A job that
   * failed JobValid (a gang whose pods are still being created: NotEnoughTasks) was not
   * tried: Volcano drops it from the session, so its pods get neither PodScheduled=False nor
   * FailedScheduling; the PodGroup's condition says why. */
  for (int32_t ti = 0; ti < snap->ntasks; ti++) {
    sch_task *t = &snap->tasks[ti];
    /* A gated pod was not tried: the API server already says SchedulingGated. */
    if (t->job < 0 || t->status != SCH_TASK_PENDING || t->gated)
      continue;
    const sch_job *j = &snap->jobs[t->job];
    if (j->invalid)
      continue;
    const sch_job_cond *c = &ssn->job_cond[t->job];
    const char *msg = NULL;
    if (t->why >= 0)
      msg = sch_session_reason_str(ssn, t->why);
    else if (c->set && c->unschedulable)
      msg = sch_session_reason_str(ssn, c->message);
    else if (j->fit_message >= 0)
      msg = sch_session_reason_str(ssn, j->fit_message);
    if (!msg)
      continue;
    if (task_why(ssn, ti, msg) < 0 ||
        sch__result_event(ssn, SCH_EVENT_POD, ti, "Warning", "FailedScheduling", msg) < 0)
      return KC_ENOMEM;
  }
  return 0;
}

int sch_session_close(sch_session *ssn, sch_result **out) {
  *out = NULL;
  close_plugins(ssn, ssn->nplugins);
  int rc = build_status(ssn);
  if (rc < 0) {
    session_free(ssn);
    return rc;
  }
  /* Reason strings the result points to must outlive the session: hand them over. */
  sch_result *r = ssn->res;
  r->strings = ssn->reasons;
  r->nstrings = ssn->nreasons;
  ssn->reasons = NULL;
  ssn->nreasons = 0;
  /* The transition id points into the session; copy it into the result's strings. */
  char *uid = strdup(ssn->uid);
  char **v = uid ? realloc(r->strings, (r->nstrings + 1) * sizeof(*v)) : NULL;
  if (!v) {
    free(uid);
    session_free(ssn);
    return KC_ENOMEM;
  }
  r->strings = v;
  r->strings[r->nstrings++] = uid;
  for (size_t i = 0; i < r->npod_groups; i++)
    if (r->pod_groups[i].has_condition)
      r->pod_groups[i].condition.transition_id = uid;
  ssn->res = NULL;
  session_free(ssn);
  *out = r;
  return 0;
}

void sch_result_free(sch_result *r) {
  if (!r)
    return;
  free(r->binds);
  for (size_t i = 0; i < r->nevicts; i++)
    free(r->evicts[i].reason);
  free(r->evicts);
  free(r->nominations);
  free(r->pod_groups);
  free(r->queues);
  for (size_t i = 0; i < r->nevents; i++)
    free(r->events[i].message);
  free(r->events);
  for (size_t i = 0; i < r->nwhy; i++)
    free(r->why[i].message);
  free(r->why);
  for (size_t i = 0; i < r->nannotations; i++) {
    free(r->annotations[i].key);
    free(r->annotations[i].value);
  }
  free(r->annotations);
  free(r->plugin_times);
  free(r->reclaim_victims);
  for (size_t i = 0; i < r->nstrings; i++)
    free(r->strings[i]);
  free(r->strings);
  free(r);
}
