/* Gang-aware eviction (see sch_gangevict.h): Volcano's gangpreempt/gangreclaim Execute,
 * SelectMinimalVictimsAndPlan and BuildNominationPlanInDomain. */
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_flags.h"
#include "kc_log.h"
#include "sch_gangevict.h"
#include "sch_hypernode.h"
#include "sch_search.h"

/* Volcano's default maxDomains (gangpreempt.go, gangreclaim.go). */
#define DEFAULT_MAX_DOMAINS 8

/* One starving job's search. */
typedef struct job_ctx {
  sch_session *ssn;
  const sch__gang_evict *ge;
  int32_t ji;
  int max_domains;
  bool allow_whole;
  int32_t *pending; /* its pending tasks, task order */
  size_t npending;
  sch_resource need;  /* their init requests */
  sch_task demand;    /* the first of them, asking for the need (eviction context) */
  sch__search search; /* node scoring, over the domain's nodes */
  int32_t *future;    /* nodes where a task fits only on future idle */
  int32_t *buf;       /* candidates, then victims */
  int32_t *hn_out, *hn_grad, *hn_tmp; /* the domains (tree vertices) */
  int32_t *dnodes;                    /* the nodes of the domain searched */
  uint8_t *listed;                    /* per snapshot node: in the session's node list */
  int evictions;                      /* evicted by this job's plan, for the log */
} job_ctx;

/* Volcano's eviction worksheet: pending tasks that are not gated and ask for something. */
static size_t pending_tasks(sch_session *ssn, const sch_job *j, int32_t *out) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  size_t n = 0;
  for (int32_t i = 0; i < j->ntasks; i++) {
    const sch_task *t = &snap->tasks[j->tasks[i]];
    if (t->status == SCH_TASK_PENDING && !t->gated && !t->best_effort)
      out[n++] = j->tasks[i];
  }
  qsort_r(out, n, sizeof(*out), sch__task_cmp, ssn);
  return n;
}

/* Volcano simulatePredicate + prioritizeNodesForSimulate: among the domain's nodes where t
 * fits the future idle and passes the predicates for preemption, the best scored of those
 * where it fits the idle already, else of the others; -1 when none. */
static int32_t best_in_domain(job_ctx *c, const sch__domain *d, const sch_task *t) {
  sch_session *ssn = c->ssn;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  size_t nidle = 0, nfut = 0;
  ssn->preempting = true;
  for (size_t k = 0; k < d->nnodes; k++) {
    const sch_node *n = &snap->nodes[d->nodes[k]];
    sch_fit why = {0};
    if (!sch__fits_future(t, n) || sch_session_predicate(ssn, t, n, &why) != SCH_FIT)
      continue;
    if (sch_resource_less_equal(&t->init_resreq, &n->idle))
      c->search.feasible[nidle++] = d->nodes[k];
    else
      c->future[nfut++] = d->nodes[k];
  }
  ssn->preempting = false;
  if (nidle == 0) {
    memcpy(c->search.feasible, c->future, nfut * sizeof(*c->future));
    nidle = nfut;
  }
  if (nidle == 0)
    return -1;
  c->search.nfeasible = nidle;
  return sch__best_node(&c->search, t);
}

/* Places every pending task in d after the victims' evictions, all in st. *ok: each found
 * a node and the job is pipelined. */
static int place_all(job_ctx *c, const sch__domain *d, sch_statement *st, bool evicted, bool *ok) {
  sch_session *ssn = c->ssn;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  const sch_job *j = &snap->jobs[c->ji];
  *ok = false;
  for (size_t i = 0; i < c->npending; i++) {
    int32_t ti = c->pending[i];
    if (!sch_session_allocatable(ssn, &snap->queues[j->queue], &snap->tasks[ti]))
      return 0;
    int32_t ni = best_in_domain(c, d, &snap->tasks[ti]);
    if (ni < 0)
      return 0;
    int rc =
        evicted ? sch_statement_pipeline_nominate(st, ti, ni) : sch_statement_pipeline(st, ti, ni);
    if (rc == KC_ENOMEM)
      return rc;
    if (rc < 0)
      return 0;
  }
  *ok = sch_session_job_pipelined(ssn, j);
  return 0;
}

/* Volcano BuildNominationPlanInDomain, applied: evicts victims[0..nv), places the job in d,
 * and commits when that pipelines it; otherwise undoes everything. */
static int try_plan(job_ctx *c, const sch__domain *d, const int32_t *victims, size_t nv, bool *ok) {
  sch_statement *st = sch_statement_new(c->ssn);
  if (!st)
    return KC_ENOMEM;
  int rc = 0;
  *ok = false;
  for (size_t i = 0; i < nv && rc != KC_ENOMEM; i++)
    rc = sch_statement_evict(st, victims[i], c->ge->name);
  if (rc != KC_ENOMEM)
    rc = place_all(c, d, st, nv > 0, ok);
  if (rc == 0 && *ok) {
    rc = sch_statement_commit(st);
    c->evictions = (int)nv;
  } else {
    sch_statement_discard(st);
  }
  sch_statement_free(st);
  return rc;
}

/* What the domain's nodes have idle or releasing (Volcano SumIdleAndReleasing). */
static void domain_free(const sch_snapshot *snap, const sch__domain *d, sch_resource *out) {
  sch_resource_clear(out);
  for (size_t k = 0; k < d->nnodes; k++) {
    sch_resource_add(out, &snap->nodes[d->nodes[k]].idle);
    sch_resource_add(out, &snap->nodes[d->nodes[k]].releasing);
  }
}

/* Volcano SelectMinimalVictimsAndPlan: bundles that still leave the need uncovered are taken
 * whole; the one that covers it is taken task by task (a whole bundle only entire), trying
 * a plan at each step where the need is covered. *ok: a plan committed. */
static int select_and_plan(job_ctx *c, const sch__domain *d, const sch__bundles *b, bool *ok) {
  const sch_snapshot *snap = sch_session_snapshot(c->ssn);
  sch_resource avail;
  domain_free(snap, d, &avail);
  size_t nv = 0;
  *ok = false;
  for (size_t i = 0; i < b->n; i++) {
    const sch__bundle *x = &b->v[i];
    sch_resource probe = avail;
    sch_resource_add(&probe, &x->local);
    if (!sch_resource_less_equal(&c->need, &probe)) {
      avail = probe;
      memcpy(c->buf + nv, x->tasks, x->ntasks * sizeof(*x->tasks));
      nv += x->ntasks;
      continue;
    }
    for (size_t k = 0; k < x->ntasks; k++) {
      sch_resource_add(&avail, &snap->tasks[x->tasks[k]].resreq);
      c->buf[nv++] = x->tasks[k];
      if ((x->type == SCH__BUNDLE_WHOLE && k + 1 < x->ntasks) ||
          !sch_resource_less_equal(&c->need, &avail))
        continue;
      int rc = try_plan(c, d, c->buf, nv, ok);
      if (rc < 0 || *ok)
        return rc;
    }
  }
  return 0;
}

static int cmp_job_task(const void *a, const void *b, void *arg) {
  const sch_snapshot *snap = arg;
  int32_t l = *(const int32_t *)a, r = *(const int32_t *)b;
  int32_t lj = snap->tasks[l].job, rj = snap->tasks[r].job;
  return lj != rj ? (lj < rj ? -1 : 1) : (l < r ? -1 : l > r);
}

/* A PodGroup's volcano.sh/preemptable (annotation first, then label), Go's ParseBool, or NULL
 * when it says nothing. */
static const char *pg_preemptable(const Kiln__ObjectMeta *m) {
  for (size_t i = 0; m && i < m->n_annotations; i++)
    if (m->annotations[i]->key && strcmp(m->annotations[i]->key, "volcano.sh/preemptable") == 0)
      return m->annotations[i]->value ? m->annotations[i]->value : "";
  for (size_t i = 0; m && i < m->n_labels; i++)
    if (m->labels[i]->key && strcmp(m->labels[i]->key, "volcano.sh/preemptable") == 0)
      return m->labels[i]->value ? m->labels[i]->value : "";
  return NULL;
}

/* Volcano IsJobPreemptableForGangEviction: a job whose PodGroup says nothing may lose tasks;
 * one that says volcano.sh/preemptable only when that is true (JobInfo.Preemptable). */
static bool job_preemptable(const sch_job *j) {
  const char *v = pg_preemptable(j->pod_group ? j->pod_group->metadata : NULL);
  bool b = false;
  return !v || (kc_parse_bool(v, &b) == 0 && b);
}

/* The candidates on d's nodes, as bundles per job. */
static int domain_bundles(job_ctx *c, const sch__domain *d, sch__bundles *out) {
  sch_snapshot *snap = sch_session_snapshot(c->ssn);
  const sch_job *j = &snap->jobs[c->ji];
  size_t n = 0;
  for (size_t k = 0; k < d->nnodes; k++)
    for (int32_t t = snap->nodes[d->nodes[k]].task_head; t >= 0; t = snap->tasks[t].node_next)
      if (snap->tasks[t].job >= 0 && snap->tasks[t].job != c->ji &&
          !snap->tasks[t].pod->not_preemptable &&
          job_preemptable(&snap->jobs[snap->tasks[t].job]) &&
          c->ge->candidate(c->ssn, j, &snap->tasks[t]))
        c->buf[n++] = t;
  qsort_r(c->buf, n, sizeof(*c->buf), cmp_job_task, snap);
  for (size_t s = 0, e; s < n; s = e) {
    for (e = s + 1; e < n && snap->tasks[c->buf[e]].job == snap->tasks[c->buf[s]].job;)
      e++;
    int rc = sch__bundles_add_job(c->ssn, snap->tasks[c->buf[s]].job, c->buf + s, e - s, out);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* One domain: its bundles, ordered and filtered, then the minimal victims that place the
 * job. *ok: a plan committed. */
static int evict_in_domain(job_ctx *c, const sch__domain *d, bool *ok) {
  sch__bundles b = {0};
  bool by_queue = c->ge->kind == SCH_EVICT_GANG_RECLAIM;
  sch_eviction_ctx ec = {c->ge->kind, c->ji, &c->demand, d->name};
  *ok = false;
  int rc = domain_bundles(c, d, &b);
  if (rc == 0 && b.n) {
    sch__bundles_sort(c->ssn, &b, &c->need, by_queue);
    rc = sch__bundles_gate(c->ssn, &b, &ec, c->allow_whole);
  }
  if (rc == 0 && b.n) {
    sch__bundles_sort(c->ssn, &b, &c->need, by_queue);
    rc = select_and_plan(c, d, &b, ok);
  }
  sch__bundles_free(&b);
  return rc;
}

/* The domains of the job, best first, each searched until a plan commits. */
static int evict_for_job(job_ctx *c, bool *ok) {
  sch_snapshot *snap = sch_session_snapshot(c->ssn);
  int32_t nd = sch__evict_domains(c->ssn, c->ji, c->hn_out, c->hn_grad, c->hn_tmp);
  *ok = false;
  for (int32_t i = 0; i < nd && i < c->max_domains && !*ok; i++) {
    if (!sch_session_job_starving(c->ssn, &snap->jobs[c->ji]))
      break;
    int32_t v = c->hn_out[i];
    sch__domain d = {snap->hntree->v[v].name, c->dnodes, 0};
    d.nnodes = sch__domain_nodes(c->ssn, v, c->listed, c->dnodes);
    if (d.nnodes == 0)
      continue;
    int rc = evict_in_domain(c, &d, ok);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* The job's pending demand; false when it has none or (reclaim) its queue may not take
 * from others for it (Volcano Preemptive over the pending tasks). */
static bool job_demand(job_ctx *c) {
  sch_snapshot *snap = sch_session_snapshot(c->ssn);
  const sch_job *j = &snap->jobs[c->ji];
  c->npending = pending_tasks(c->ssn, j, c->pending);
  if (c->npending == 0)
    return false;
  sch_resource_clear(&c->need);
  sch_resource resreq = {0};
  for (size_t i = 0; i < c->npending; i++) {
    sch_resource_add(&c->need, &snap->tasks[c->pending[i]].init_resreq);
    sch_resource_add(&resreq, &snap->tasks[c->pending[i]].resreq);
  }
  c->demand = snap->tasks[c->pending[0]];
  c->demand.init_resreq = c->need;
  c->demand.resreq = resreq;
  if (c->ge->kind != SCH_EVICT_GANG_RECLAIM)
    return true;
  if (sch_session_preemptive(c->ssn, &snap->queues[j->queue], &c->demand))
    return true;
  KC_V(3, "Queue <%s> cannot reclaim for job <%s>, skip", snap->queues[j->queue].name, j->key);
  return false;
}

/* One starving job: its own statement per plan, committed only when it pipelines the job. */
static int run_job(job_ctx *c) {
  bool ok = false;
  c->evictions = 0;
  if (!job_demand(c))
    return 0;
  int rc = evict_for_job(c, &ok);
  const sch_job *j = &sch_session_snapshot(c->ssn)->jobs[c->ji];
  if (rc == 0 && ok)
    KC_V(3, "%s: job %s pipelined, %d victim(s) evicted", c->ge->name, j->key, c->evictions);
  return rc;
}

/* Jobs that may evict: not Pending, valid, in a known queue, starving. */
static bool evictor_job(sch_session *ssn, sch_job *j) {
  sch_valid v;
  if (j->phase == SCH_PG_PENDING || j->queue < 0 || j->invalid ||
      !sch_session_job_valid(ssn, j, &v))
    return false;
  return true;
}

static int push_jobs(sch_session *ssn, sch__heap *queues, sch__heap *jobs, bool *seen) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  int rc = 0;
  for (int32_t ji = 0; ji < snap->njobs && rc == 0; ji++) {
    sch_job *j = &snap->jobs[ji];
    if (!evictor_job(ssn, j))
      continue;
    if (!seen[j->queue]) {
      seen[j->queue] = true;
      rc = sch__heap_push(ssn, queues, sch__queue_cmp, j->queue);
    }
    if (rc == 0 && sch_session_job_starving(ssn, j))
      rc = sch__heap_push(ssn, &jobs[j->queue], sch__job_cmp, ji);
  }
  return rc;
}

static int run_queues(job_ctx *c, sch__heap *queues, sch__heap *jobs) {
  sch_session *ssn = c->ssn;
  sch_snapshot *snap = sch_session_snapshot(ssn);
  while (queues->n) {
    int32_t qi = sch__heap_pop(ssn, queues, sch__queue_cmp);
    if (c->ge->kind == SCH_EVICT_GANG_RECLAIM && sch_session_overused(ssn, &snap->queues[qi]))
      continue;
    while (jobs[qi].n) {
      c->ji = sch__heap_pop(ssn, &jobs[qi], sch__job_cmp);
      int rc = run_job(c);
      if (rc < 0)
        return rc;
    }
  }
  return 0;
}

/* Volcano parseArguments: maxDomains (<= 0 falls back to the default, with a warning) and
 * allowWholeBundle. */
static void parse_args(job_ctx *c) {
  const sch_args *a = sch_session_action_args(c->ssn, c->ge->name);
  int64_t max = sch_args_int(a, "maxDomains", DEFAULT_MAX_DOMAINS);
  if (max <= 0) {
    KC_WARN("Invalid maxDomains value %lld for action %s, falling back to default %d",
            (long long)max, c->ge->name, DEFAULT_MAX_DOMAINS);
    max = DEFAULT_MAX_DOMAINS;
  }
  c->max_domains = max > INT32_MAX ? INT32_MAX : (int)max;
  c->allow_whole = sch_args_bool(a, "allowWholeBundle", true);
}

int sch__gang_evict_execute(sch_session *ssn, const sch__gang_evict *ge) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  size_t cap = (size_t)(snap->ntasks > snap->nnodes ? snap->ntasks : snap->nnodes) + 1;
  job_ctx c = {.ssn = ssn, .ge = ge};
  parse_args(&c);
  c.pending = malloc(cap * sizeof(int32_t));
  c.future = malloc(cap * sizeof(int32_t));
  c.buf = malloc(cap * sizeof(int32_t));
  size_t nv = (size_t)snap->hntree->n + 1;
  c.hn_out = malloc(nv * sizeof(int32_t));
  c.hn_grad = malloc(nv * sizeof(int32_t));
  c.hn_tmp = malloc(nv * sizeof(int32_t));
  c.dnodes = malloc(cap * sizeof(int32_t));
  c.listed = calloc(cap, 1);
  for (int32_t k = 0; c.listed && k < ssn->nnode_list; k++)
    c.listed[ssn->node_list[k]] = 1;
  bool *seen = calloc((size_t)snap->nqueues + 1, sizeof(*seen));
  sch__heap queues = {0};
  sch__heap *jobs = calloc((size_t)snap->nqueues + 1, sizeof(*jobs));
  int rc = sch__search_init(&c.search, ssn);
  if (rc == 0 && (!c.pending || !c.future || !c.buf || !c.hn_out || !c.hn_grad || !c.hn_tmp ||
                  !c.dnodes || !c.listed || !seen || !jobs))
    rc = KC_ENOMEM;
  if (rc == 0)
    rc = push_jobs(ssn, &queues, jobs, seen);
  if (rc == 0)
    rc = run_queues(&c, &queues, jobs);
  for (int32_t q = 0; jobs && q < snap->nqueues; q++)
    free(jobs[q].v);
  free(jobs);
  free(queues.v);
  free(seen);
  sch__search_close(&c.search);
  free(c.pending);
  free(c.future);
  free(c.buf);
  free(c.hn_out);
  free(c.hn_grad);
  free(c.hn_tmp);
  free(c.dnodes);
  free(c.listed);
  return rc;
}
