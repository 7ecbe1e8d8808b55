/* vcctl job whatif: the controller's plan and one scheduler session over the cluster as read
 * (see vc_whatif.h). */
#include "vc_whatif.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_job.h"
#include "kc_codec.h"
#include "kc_strmap.h"
#include "kc_time.h"
#include "sch_claim_status.h"
#include "sch_dra.h"
#include "vc.h"
#include "vc_whatif_claims.h"

/* Syncs of the controller core at most: the first creates the PodGroup, the one after the
 * scheduler admitted it creates the pods; a Job with generated claims needs one more. */
#define PLAN_ROUNDS 4
/* The session's transition id and the uids of the objects that do not exist yet. */
#define WHATIF_ID   "whatif"

static char *dupstr(const char *s) {
  return s ? strdup(s) : NULL;
}

/* ---- the controller's plan ---- */

/* Randomness the plan asks for (generated claim names, ssh keys): fixed, so two what-ifs of
 * one Job agree; no pod's placement depends on it. */
static int fixed_rand(void *ctx, char *buf, size_t n) {
  (void)ctx;
  for (size_t i = 0; i < n; i++)
    buf[i] = (char)('a' + (int)(i % 26));
  buf[n] = '\0';
  return 0;
}
static int fixed_keygen(void *ctx, char **priv, char **pub) {
  (void)ctx;
  *priv = strdup("what-if: no key");
  *pub = strdup("ssh-rsa what-if");
  if (*priv && *pub)
    return 0;
  free(*priv);
  free(*pub);
  *priv = *pub = NULL;
  return KC_ENOMEM;
}
static const ctl_ops whatif_ops = {fixed_rand, fixed_keygen, NULL};

static const char *job_queue(const json_t *job) {
  const char *q = vc_str(job, "spec.queue");
  return q[0] ? q : "default";
}

static const Kiln__Queue *find_queue(const Kiln__Snapshot *c, const char *name) {
  for (size_t i = 0; i < c->n_queues; i++) {
    const Kiln__Queue *q = c->queues[i];
    if (q->metadata && q->metadata->name && strcmp(q->metadata->name, name) == 0)
      return q;
  }
  return NULL;
}

static bool queue_has_children(const Kiln__Snapshot *c, const char *name) {
  for (size_t i = 0; i < c->n_queues; i++) {
    const Kiln__Queue *q = c->queues[i];
    if (q->spec && q->spec->parent && strcmp(q->spec->parent, name) == 0)
      return true;
  }
  return false;
}

/* What the controller's view holds besides the Job: the objects it would have created so
 * far, as its caches would then show them. */
typedef struct {
  json_t *job;        /* the Job as it would be stored (patches and status applied) */
  Kiln__PodGroup *pg; /* the planned PodGroup, admitted (Inqueue), or NULL */
  json_t *pvcs;       /* names of the claims it would have created */
  ctl_priority *prios;
  size_t nprios;
} plan_state;

static int plan_view(const vc_whatif_in *in, plan_state *s, Kiln__Job *kj, ctl_job_view *v,
                     const char ***pvcs) {
  memset(v, 0, sizeof(*v));
  size_t n = json_array_size(s->pvcs);
  *pvcs = calloc(n ? n : 1, sizeof(**pvcs));
  if (*pvcs == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < n; i++)
    (*pvcs)[i] = json_string_value(json_array_get(s->pvcs, i));
  const char *qname = job_queue(s->job);
  const Kiln__Queue *q = find_queue(in->cluster, qname);
  v->job = kj;
  v->podgroup = s->pg;
  v->pvcs = *pvcs;
  v->npvcs = n;
  v->queue_exists = q != NULL;
  v->queue_has_children = queue_has_children(in->cluster, qname);
  v->queue_state = q && q->status ? q->status->state : NULL;
  v->priorities = s->prios;
  v->npriorities = s->nprios;
  v->now = in->now;
  v->ops = &whatif_ops;
  return 0;
}

/* One sync of the controller core on the state so far. plan is initialised here. */
static int plan_round(const vc_whatif_in *in, plan_state *s, ctl_plan *plan, char *err,
                      size_t errlen) {
  Kiln__Job *kj = NULL;
  char derr[KC_CODEC_ERR_MAX];
  ctl_plan_init(plan);
  if (kc_job_decode(s->job, &kj, derr, sizeof(derr)) != 0)
    return kc_errorf(err, errlen, KC_EINVAL, "the Job does not decode: %s", derr);
  ctl_job_view v;
  const char **pvcs = NULL;
  int rc = plan_view(in, s, kj, &v, &pvcs);
  if (rc == 0) {
    /* What kiln-controller syncs a new Job with (Volcano's addJob: OutOfSync). */
    ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
    rc = ctl_job_sync(&v, &req, plan);
    if (rc != 0)
      kc_errorf(err, errlen, rc, "the job controller cannot plan the Job: %s",
                plan->failure_message[0] ? plan->failure_message : kc_strerror(rc));
  }
  free(pvcs);
  kc_msg_free(kj);
  return rc;
}

/* The planned PodGroup as the controller's cache would show it once the scheduler admitted
 * it, for the next sync. */
static int admit_podgroup(plan_state *s, const json_t *pg) {
  json_t *copy = json_deep_copy(pg);
  if (copy == NULL)
    return KC_ENOMEM;
  json_object_set_new(copy, "status", json_pack("{s:s}", "phase", "Inqueue"));
  kc_msg_free(s->pg);
  s->pg = NULL;
  int rc = kc_podgroup_decode(copy, &s->pg, NULL, 0);
  json_decref(copy);
  return rc;
}

/* Carries a plan's effects into the state: the Job's patch and status, the claims, the
 * PodGroup. */
static int plan_apply(plan_state *s, ctl_plan *plan, json_t **pg_out) {
  if (plan->job_patch)
    json_object_update_recursive(s->job, plan->job_patch);
  json_t *st = ctl_status_to_json(&plan->status);
  if (st == NULL)
    return KC_ENOMEM;
  json_object_set_new(s->job, "status", st);
  size_t i;
  json_t *pvc;
  json_array_foreach(plan->pvcs, i, pvc) {
    json_t *name = json_object_get(json_object_get(pvc, "metadata"), "name");
    if (name)
      json_array_append(s->pvcs, name);
  }
  if (plan->podgroup && !plan->podgroup_update && *pg_out == NULL) {
    *pg_out = json_incref(plan->podgroup);
    return admit_podgroup(s, plan->podgroup);
  }
  return 0;
}

static int plan_prios(const Kiln__Snapshot *c, plan_state *s) {
  s->prios = calloc(c->n_priority_classes ? c->n_priority_classes : 1, sizeof(*s->prios));
  if (s->prios == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < c->n_priority_classes; i++) {
    const Kiln__PriorityClass *pc = c->priority_classes[i];
    if (pc->metadata && pc->metadata->name)
      s->prios[s->nprios++] = (ctl_priority){pc->metadata->name, pc->value};
  }
  return 0;
}

/* The Job's PodGroup (*pg, new) and pods (*pods, a new array; empty with *why set when the
 * controller would create none now). job is the Job with its uid and namespace. */
static int plan_job(const vc_whatif_in *in, json_t *job, json_t **pg, json_t **pods, char **why,
                    char *err, size_t errlen) {
  plan_state s = {.job = json_incref(job), .pvcs = json_array()};
  *pg = *pods = NULL;
  int rc = s.pvcs ? plan_prios(in->cluster, &s) : KC_ENOMEM;
  for (int round = 0; rc == 0 && round < PLAN_ROUNDS && *pods == NULL; round++) {
    ctl_plan plan;
    rc = plan_round(in, &s, &plan, err, errlen);
    if (rc == 0)
      rc = plan_apply(&s, &plan, pg);
    if (rc == 0 && json_array_size(plan.pods_create) > 0)
      *pods = json_incref(plan.pods_create);
    else if (rc == 0 && round == PLAN_ROUNDS - 1) {
      const char *m = plan.status.message[0]  ? plan.status.message
                      : plan.status.reason[0] ? plan.status.reason
                                              : "the job controller would create no pod";
      *why = strdup(m);
      if (*why == NULL)
        rc = KC_ENOMEM;
    }
    ctl_plan_close(&plan);
  }
  if (rc == 0 && *pods == NULL && (*pods = json_array()) == NULL)
    rc = KC_ENOMEM;
  if (rc != 0) {
    json_decref(*pg);
    json_decref(*pods);
    *pg = *pods = NULL;
  }
  kc_msg_free(s.pg);
  json_decref(s.pvcs);
  json_decref(s.job);
  free(s.prios);
  return rc;
}

/* ---- the objects the cluster would get ---- */

/* The value the API server's Priority admission gives a pod of that class. */
static int32_t class_value(const Kiln__Snapshot *c, const char *name) {
  int32_t def = 0;
  for (size_t i = 0; i < c->n_priority_classes; i++) {
    const Kiln__PriorityClass *pc = c->priority_classes[i];
    const char *n = pc->metadata ? pc->metadata->name : NULL;
    if (name && name[0] && n && strcmp(n, name) == 0)
      return pc->value;
    if (pc->global_default)
      def = pc->value;
  }
  return def;
}

/* Fills what the API server would: namespace, uid, creation time. */
static void stamp(json_t *obj, const char *ns, const char *uid, int64_t now) {
  json_t *md = json_object_get(obj, "metadata");
  if (md == NULL) {
    md = json_object();
    json_object_set_new(obj, "metadata", md);
  }
  char ts[KC_TIME_LEN];
  kc_time_format(now, ts);
  if (!json_is_string(json_object_get(md, "namespace")))
    json_object_set_new(md, "namespace", json_string(ns));
  json_object_set_new(md, "uid", json_string(uid));
  json_object_set_new(md, "creationTimestamp", json_string(ts));
}

/* The pods as the API server would store them, with the claims kube-controller-manager would
 * make from their templates (into claims). */
static int decode_pods(const vc_whatif_in *in, const char *ns, json_t *pods, Kiln__Pod ***out,
                       size_t *n, vc_claims *claims, char *err, size_t errlen) {
  *n = 0;
  *out = calloc(json_array_size(pods) + 1, sizeof(**out));
  if (*out == NULL)
    return KC_ENOMEM;
  size_t i;
  json_t *p;
  json_array_foreach(pods, i, p) {
    char uid[CTL_NAME_MAX + 16], derr[KC_CODEC_ERR_MAX];
    snprintf(uid, sizeof(uid), WHATIF_ID "-%s", vc_str(p, "metadata.name"));
    stamp(p, ns, uid, in->now);
    int rc = vc_claims_for_pod(in->claim_templates, p, in->now, claims, err, errlen);
    if (rc != 0)
      return rc;
    Kiln__Pod *kp = NULL;
    if (kc_pod_decode(p, &kp, derr, sizeof(derr)) != 0)
      return kc_errorf(err, errlen, KC_EINVAL, "pod %s does not decode: %s",
                       vc_str(p, "metadata.name"), derr);
    kp->priority = class_value(in->cluster, kp->priority_class_name);
    (*out)[(*n)++] = kp;
  }
  return 0;
}

static int decode_podgroup(const vc_whatif_in *in, const char *ns, json_t *pg, Kiln__PodGroup **out,
                           char *err, size_t errlen) {
  char derr[KC_CODEC_ERR_MAX];
  stamp(pg, ns, WHATIF_ID "-podgroup", in->now);
  /* As the controller creates it: not yet admitted. */
  json_object_set_new(pg, "status", json_pack("{s:s}", "phase", "Pending"));
  if (kc_podgroup_decode(pg, out, derr, sizeof(derr)) != 0)
    return kc_errorf(err, errlen, KC_EINVAL, "the PodGroup does not decode: %s", derr);
  return 0;
}

/* ---- the snapshot ---- */

typedef struct {
  Kiln__Snapshot msg; /* the cluster's arrays copied (pointers borrowed), ours appended */
  Kiln__Pod **pods;   /* ours, owned */
  size_t npods;
  Kiln__PodGroup *pg; /* ours, owned */
  vc_claims claims;   /* ours: made from templates for our pods */
} world;

/* Frees the message's arrays (their objects are borrowed or owned elsewhere). */
static void world_msg_clear(world *w) {
  free(w->msg.pods);
  free(w->msg.pod_groups);
  free(w->msg.resource_claims);
  w->msg.pods = NULL;
  w->msg.pod_groups = NULL;
  w->msg.resource_claims = NULL;
}

static void world_close(world *w) {
  world_msg_clear(w);
  vc_claims_free(&w->claims);
  for (size_t i = 0; i < w->npods; i++)
    kc_msg_free(w->pods[i]);
  free(w->pods);
  kc_msg_free(w->pg);
}

/* Whether the cluster's PodGroup g is of queue q (a PodGroup without one is "default"). */
static bool pg_in_queue(const Kiln__PodGroup *g, const char *q) {
  const char *gq = g->spec && g->spec->queue && g->spec->queue[0] ? g->spec->queue : "default";
  return strcmp(gq, q) == 0;
}

static int pg_key(const char *ns, const char *name, char *buf, size_t len) {
  return snprintf(buf, len, "%s/%s", ns ? ns : "", name ? name : "") < (int)len ? 0 : KC_EINVAL;
}

/* The cluster's claims, and ours when our pods are in the message. */
static int world_claims(world *w, const Kiln__Snapshot *c) {
  size_t ours = w->npods > 0 ? w->claims.n : 0;
  w->msg.resource_claims = calloc(c->n_resource_claims + ours + 1, sizeof(*w->msg.resource_claims));
  if (w->msg.resource_claims == NULL)
    return KC_ENOMEM;
  if (c->n_resource_claims)
    memcpy(w->msg.resource_claims, c->resource_claims,
           c->n_resource_claims * sizeof(*c->resource_claims));
  if (ours)
    memcpy(w->msg.resource_claims + c->n_resource_claims, w->claims.items,
           ours * sizeof(*w->claims.items));
  w->msg.n_resource_claims = c->n_resource_claims + ours;
  return 0;
}

/* The snapshot message: the cluster, less (at capacity) the other work of the Job's queue,
 * plus the Job's PodGroup and pods. */
static int world_msg(const vc_whatif_in *in, world *w, const char *queue, bool drop_queue) {
  const Kiln__Snapshot *c = in->cluster;
  kc_strmap gone;
  kc_strmap_init(&gone, KC_STRMAP_COPY_KEYS);
  w->msg = *c;
  w->msg.resource_claims = NULL;
  w->msg.pods = calloc(c->n_pods + w->npods + 1, sizeof(*w->msg.pods));
  w->msg.pod_groups = calloc(c->n_pod_groups + 2, sizeof(*w->msg.pod_groups));
  int rc = w->msg.pods && w->msg.pod_groups ? 0 : KC_ENOMEM;
  w->msg.n_pods = w->msg.n_pod_groups = 0;
  char key[512];
  for (size_t i = 0; rc == 0 && i < c->n_pod_groups; i++) {
    const Kiln__PodGroup *g = c->pod_groups[i];
    if (drop_queue && pg_in_queue(g, queue) && g->metadata &&
        pg_key(g->metadata->namespace_, g->metadata->name, key, sizeof(key)) == 0) {
      rc = kc_strmap_put(&gone, key, (void *)g, NULL) < 0 ? KC_ENOMEM : 0;
      continue;
    }
    w->msg.pod_groups[w->msg.n_pod_groups++] = c->pod_groups[i];
  }
  for (size_t i = 0; rc == 0 && i < c->n_pods; i++) {
    const Kiln__Pod *p = c->pods[i];
    if (drop_queue && p->group_name && p->group_name[0] &&
        pg_key(p->namespace_, p->group_name, key, sizeof(key)) == 0 && kc_strmap_get(&gone, key))
      continue;
    w->msg.pods[w->msg.n_pods++] = c->pods[i];
  }
  kc_strmap_close(&gone, NULL);
  for (size_t i = 0; rc == 0 && i < w->npods; i++)
    w->msg.pods[w->msg.n_pods++] = w->pods[i];
  if (rc == 0)
    rc = world_claims(w, c);
  if (rc == 0 && w->pg)
    w->msg.pod_groups[w->msg.n_pod_groups++] = w->pg;
  return rc;
}

/* ---- reading the session ---- */

static const char *task_pod_name(const sch_task *t) {
  return t->pod && t->pod->name ? t->pod->name : "?";
}

/* Each node's reason for task t, in the session's state after its actions (the Job's own
 * placed pods count on their nodes). */
static int node_reasons(sch_session *ssn, sch_snapshot *snap, const sch_task *t, vc_whatif *w) {
  w->nodes = calloc((size_t)snap->nnodes + 1, sizeof(*w->nodes));
  if (w->nodes == NULL)
    return KC_ENOMEM;
  for (int32_t i = 0; i < snap->nnodes; i++) {
    const sch_node *n = &snap->nodes[i];
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m == NULL)
      return KC_ENOMEM;
    sch_fit fit = {0};
    int verdict = !n->ready ? SCH_UNSCHEDULABLE : sch_session_predicate(ssn, t, n, &fit);
    if (!n->ready)
      fputs("node is not ready", m);
    for (int k = 0; k < fit.n; k++)
      fprintf(m, "%s%s", k ? "; " : "", sch_session_reason_str(ssn, fit.reasons[k]));
    if (verdict == SCH_FIT) {
      sch_resource idle;
      sch_node_future_idle(n, &idle);
      unsigned shortm = sch_resource_insufficient(&t->init_resreq, &idle);
      for (int d = 0; d < 2 + snap->nscalars; d++)
        if (shortm & (1u << d))
          fprintf(m, "%sInsufficient %s", ftell(m) ? "; " : "",
                  d == 0   ? "cpu"
                  : d == 1 ? "memory"
                           : snap->scalar_names[d - 2]);
      if (ftell(m) == 0)
        fputs("fits", m);
    }
    fclose(m);
    w->nodes[w->nnodes_reasons].node = dupstr(n->name);
    w->nodes[w->nnodes_reasons++].reason = buf;
    if (w->nodes[w->nnodes_reasons - 1].node == NULL)
      return KC_ENOMEM;
  }
  w->reasons_task = dupstr(task_pod_name(t));
  return w->reasons_task ? 0 : KC_ENOMEM;
}

/* The first pod of the Job the session left Pending (not gated), or NULL. */
static const sch_task *first_unplaced(const sch_snapshot *snap, int32_t j) {
  const sch_job *job = &snap->jobs[j];
  for (int32_t i = 0; i < job->ntasks; i++) {
    const sch_task *t = &snap->tasks[job->tasks[i]];
    if (t->status == SCH_TASK_PENDING && !t->gated)
      return t;
  }
  return NULL;
}

/* The devices a placed task gets: each of its claims, and for the ones this session allocates
 * the status.allocation kiln-scheduler then writes (sch_claim_status.h). NULL: no claims
 * (or DRA off). */
static int task_claims(const sch_snapshot *snap, const sch_task *t, json_t **out) {
  *out = NULL;
  if (snap->dra == NULL || !sch_dra_task_has_claims(t))
    return 0;
  sch_dra_write wr[VC_WHATIF_MAX_CLAIMS];
  size_t n = sch_dra_writes(snap->dra, t, wr, VC_WHATIF_MAX_CLAIMS);
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++) {
    const Kiln__ResourceClaim *c = snap->msg->resource_claims[wr[i].claim];
    const char *name = c->metadata && c->metadata->name ? c->metadata->name : "";
    json_t *alloc = wr[i].allocate ? sch_claim_allocation(snap, &wr[i]) : json_null();
    if (json_array_append_new(a, json_pack("{s:s,s:b,s:o}", "claim", name, "allocatedBefore",
                                           !wr[i].allocate, "allocation", alloc)) != 0) {
      json_decref(a);
      return KC_ENOMEM;
    }
  }
  *out = a;
  return a ? 0 : KC_ENOMEM;
}

static int read_tasks(const sch_snapshot *snap, const sch_result *r, int32_t j, vc_whatif *w) {
  const sch_job *job = &snap->jobs[j];
  w->tasks = calloc((size_t)job->ntasks + 1, sizeof(*w->tasks));
  if (w->tasks == NULL)
    return KC_ENOMEM;
  for (int32_t i = 0; i < job->ntasks; i++) {
    int32_t ti = job->tasks[i];
    const sch_task *t = &snap->tasks[ti];
    vc_whatif_task *o = &w->tasks[w->ntasks++];
    if ((o->name = dupstr(task_pod_name(t))) == NULL)
      return KC_ENOMEM;
    for (size_t b = 0; b < r->nbinds && !o->how; b++)
      if (r->binds[b].task == ti) {
        o->node = dupstr(snap->nodes[r->binds[b].node].name);
        o->how = t->best_effort ? "backfill" : "allocate";
      }
    if (!o->how && t->status == SCH_TASK_PIPELINED && t->node >= 0) {
      o->node = dupstr(snap->nodes[t->node].name);
      o->how = "pipelined";
    }
    for (size_t k = 0; k < r->nnominations && !o->how; k++)
      if (r->nominations[k].task == ti) {
        o->node = dupstr(snap->nodes[r->nominations[k].node].name);
        o->how = "pipelined";
      }
    for (size_t k = 0; k < r->nwhy && !o->how && !o->why; k++)
      if (r->why[k].task == ti && (o->why = dupstr(r->why[k].message)) == NULL)
        return KC_ENOMEM;
    if (o->how && o->node == NULL)
      return KC_ENOMEM;
    if (o->how && task_claims(snap, t, &o->claims) != 0)
      return KC_ENOMEM;
  }
  return 0;
}

static char *strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *strf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    s = NULL;
  va_end(ap);
  return s;
}

static int read_victims(const sch_snapshot *snap, const sch_result *r, vc_whatif *w) {
  w->victims = calloc(r->nevicts + 1, sizeof(*w->victims));
  if (w->victims == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < r->nevicts; i++) {
    const sch_task *t = &snap->tasks[r->evicts[i].task];
    const sch_job *job = t->job >= 0 ? &snap->jobs[t->job] : NULL;
    const Kiln__Pod *p = t->pod;
    vc_whatif_victim *v = &w->victims[w->nvictims++];
    const char *ns = p && p->namespace_ ? p->namespace_ : "";
    if (p && p->owner_kind && strcmp(p->owner_kind, "Job") == 0 && p->owner_name)
      v->job = strf("%s/%s", ns, p->owner_name);
    else
      v->job = dupstr(job ? job->key : "");
    v->pod = strf("%s/%s", ns, task_pod_name(t));
    v->node = dupstr(t->node >= 0 ? snap->nodes[t->node].name : "");
    v->queue = dupstr(job && job->queue >= 0 ? snap->queues[job->queue].name : "");
    v->priority = job ? job->priority : t->priority;
    v->action = dupstr(r->evicts[i].reason ? r->evicts[i].reason : "");
    if (!v->job || !v->pod || !v->node || !v->queue || !v->action)
      return KC_ENOMEM;
  }
  return 0;
}

/* The line `vcctl job view` prints for the PodGroup as the session leaves it. */
static int why_line(const sch_pg_status *ps, vc_whatif *w) {
  json_t *conds = json_array();
  if (ps->has_condition)
    json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s}", "type", ps->condition.type,
                                           "status", ps->condition.status, "reason",
                                           ps->condition.reason ? ps->condition.reason : "",
                                           "message", w->message ? w->message : ""));
  json_t *pg = json_pack("{s:{s:s},s:{s:s,s:i},s:{s:s,s:o}}", "metadata", "name", w->podgroup,
                         "spec", "queue", w->queue, "minMember", w->min_available, "status",
                         "phase", w->phase, "conditions", conds);
  if (pg == NULL)
    return KC_ENOMEM;
  char buf[2048];
  if (vc_why_pending(NULL, pg, buf, sizeof(buf)) && (w->why_pending = strdup(buf)) == NULL) {
    json_decref(pg);
    return KC_ENOMEM;
  }
  json_decref(pg);
  return 0;
}

static int read_status(const sch_result *r, int32_t j, vc_whatif *w) {
  const sch_pg_status *ps = NULL;
  for (size_t i = 0; i < r->npod_groups && !ps; i++)
    if (r->pod_groups[i].job == j)
      ps = &r->pod_groups[i];
  sch_pg_phase phase = ps ? ps->phase : SCH_PG_PENDING;
  w->admitted = phase == SCH_PG_INQUEUE || phase == SCH_PG_RUNNING;
  if ((w->phase = dupstr(sch_pg_phase_str(phase))) == NULL)
    return KC_ENOMEM;
  if (ps && ps->has_condition && strcmp(ps->condition.type, "Scheduled") != 0) {
    w->reason = dupstr(ps->condition.reason ? ps->condition.reason : "");
    w->message = dupstr(ps->condition.message ? ps->condition.message : "");
    if (!w->reason || !w->message)
      return KC_ENOMEM;
  }
  size_t placed = 0, pipelined = 0;
  for (size_t i = 0; i < w->ntasks; i++) {
    if (w->tasks[i].how && strcmp(w->tasks[i].how, "pipelined") == 0)
      pipelined++;
    else if (w->tasks[i].how)
      placed++;
  }
  w->placed = placed > 0 && placed >= (size_t)w->min_available;
  w->after_eviction =
      !w->placed && placed + pipelined > 0 && placed + pipelined >= (size_t)w->min_available;
  if (w->placed || w->after_eviction)
    return 0;
  static const sch_pg_status none = {0};
  return why_line(ps ? ps : &none, w);
}

/* ---- the session ---- */

typedef struct {
  const sch_resource *cap; /* at capacity: the queue's limit; NULL today */
  sch_resource deserved;   /* out: the queue's deserved share as the session left it */
  bool has_deserved;
} session_knobs;

static void opts_for(const vc_whatif_in *in, sch_session_options *o) {
  *o = (sch_session_options)SCH_SESSION_OPTIONS_DEFAULT;
  o->now = in->now;
  o->session_uid = WHATIF_ID;
}

/* One session over w's message; reads the answer for the Job's PodGroup key into out when it
 * is not NULL. */
static int run_session(const vc_whatif_in *in, world *wd, const char *key, session_knobs *k,
                       vc_whatif *out) {
  const char *sched = vc_str(in->job, "spec.schedulerName");
  const char *names[1] = {sched[0] ? sched : "volcano"};
  sch_snapshot_options so = {names, 1, NULL};
  sch_snapshot *snap = NULL;
  sch_session *ssn = NULL;
  sch_result *r = NULL;
  int rc = sch_snapshot_new(&wd->msg, &so, &snap);
  int32_t j = rc == 0 ? sch_snapshot_job(snap, key) : -1;
  if (rc == 0 && j < 0)
    rc = KC_EINVAL; /* the PodGroup did not join the snapshot */
  int32_t q = j >= 0 ? snap->jobs[j].queue : -1;
  if (rc == 0 && k->cap && q >= 0) {
    snap->queues[q].capability = *k->cap;
    snap->queues[q].has_capability = true;
  }
  sch_session_options o;
  opts_for(in, &o);
  if (rc == 0)
    rc = sch_session_open(snap, in->conf, &o, &ssn);
  if (rc == 0)
    rc = sch_session_run(ssn);
  const sch_task *t = rc == 0 && out ? first_unplaced(snap, j) : NULL;
  if (t)
    rc = node_reasons(ssn, snap, t, out);
  if (ssn) {
    int crc = sch_session_close(ssn, &r);
    rc = rc ? rc : crc;
  }
  if (rc == 0 && q >= 0) {
    k->deserved = snap->queues[q].deserved;
    k->has_deserved = !sch_resource_is_zero(&k->deserved);
  }
  if (rc == 0 && out && (rc = read_tasks(snap, r, j, out)) == 0 &&
      (rc = read_victims(snap, r, out)) == 0) {
    out->priority = snap->jobs[j].priority;
    rc = read_status(r, j, out);
  }
  sch_result_free(r);
  sch_snapshot_free(snap);
  return rc;
}

/* ---- the entry point ---- */

static int describe_job(const vc_whatif_in *in, const json_t *job, const json_t *pg, vc_whatif *w) {
  w->job = dupstr(vc_str(job, "metadata.name"));
  w->namespace = dupstr(vc_str(job, "metadata.namespace"));
  w->podgroup = dupstr(pg ? vc_str(pg, "metadata.name") : "");
  w->queue = dupstr(job_queue(job));
  w->min_available = pg ? (int32_t)vc_num(pg, "spec.minMember") : 0;
  w->nnodes = (int)in->cluster->n_nodes;
  w->npods = (int)in->cluster->n_pods;
  w->npodgroups = (int)in->cluster->n_pod_groups;
  w->nqueues = (int)in->cluster->n_queues;
  w->at_capacity = in->at_capacity;
  return w->job && w->namespace && w->podgroup && w->queue ? 0 : KC_ENOMEM;
}

/* The Job as the controller reads it: a namespace, a uid and a creation time (the API
 * server's, when it gave them). */
static json_t *job_copy(const vc_whatif_in *in) {
  json_t *job = json_deep_copy(in->job);
  if (job == NULL)
    return NULL;
  const char *ns = vc_str(job, "metadata.namespace");
  char uid[64];
  snprintf(uid, sizeof(uid), "%s",
           vc_str(job, "metadata.uid")[0] ? vc_str(job, "metadata.uid") : WHATIF_ID "-job");
  const char *ts = vc_str(job, "metadata.creationTimestamp");
  int64_t created = in->now, ms;
  if (ts[0] && kc_rfc3339_parse(ts, &ms) == 0)
    created = ms / 1000;
  char nsbuf[256];
  snprintf(nsbuf, sizeof(nsbuf), "%s", ns[0] ? ns : "default");
  stamp(job, nsbuf, uid, created);
  return job;
}

static int whatif_world(const vc_whatif_in *in, json_t *job, vc_whatif *w, world *wd, json_t **pg,
                        char *err, size_t errlen) {
  json_t *pods = NULL;
  int rc = plan_job(in, job, pg, &pods, &w->controller_message, err, errlen);
  if (rc == 0)
    rc = describe_job(in, job, *pg, w);
  const char *ns = w->namespace ? w->namespace : "default";
  if (rc == 0 && *pg)
    rc = decode_podgroup(in, ns, *pg, &wd->pg, err, errlen);
  if (rc == 0)
    rc = decode_pods(in, ns, pods, &wd->pods, &wd->npods, &wd->claims, err, errlen);
  json_decref(pods);
  return rc;
}

/* kiln-controller creates a Job's pods only once the scheduler admitted its PodGroup, so the
 * PodGroup first meets a session alone: when that session leaves it Pending, what the PodGroup
 * then shows (phase, condition, its message counting the tasks that exist: none) is that
 * session's, not one that saw pods never created. *admitted says which; when false, w's
 * status fields take the gate's answer (the session with the pods still gives the per-node
 * reasons). */
static int gate_session(const vc_whatif_in *in, world *wd, const char *key, session_knobs *k,
                        vc_whatif *w, vc_whatif **gate) {
  *gate = calloc(1, sizeof(**gate));
  vc_whatif *g = *gate;
  if (g == NULL)
    return KC_ENOMEM;
  g->podgroup = dupstr(w->podgroup);
  g->queue = dupstr(w->queue);
  g->min_available = w->min_available;
  int rc = g->podgroup && g->queue ? 0 : KC_ENOMEM;
  size_t np = wd->npods;
  wd->npods = 0;
  if (rc == 0)
    rc = world_msg(in, wd, w->queue, in->at_capacity);
  wd->npods = np;
  session_knobs gk = *k;
  if (rc == 0)
    rc = run_session(in, wd, key, &gk, g);
  world_msg_clear(wd);
  return rc;
}

/* The gate refused: the PodGroup's status is the gate's (see gate_session). */
static void take_gate_status(vc_whatif *w, vc_whatif *g) {
#define SWAP_FIELD(f)                                                                              \
  do {                                                                                             \
    char *t_ = w->f;                                                                               \
    w->f = g->f;                                                                                   \
    g->f = t_;                                                                                     \
  } while (0)
  SWAP_FIELD(phase);
  SWAP_FIELD(reason);
  SWAP_FIELD(message);
  SWAP_FIELD(why_pending);
#undef SWAP_FIELD
  w->admitted = w->placed = w->after_eviction = false;
}

int vc_whatif_run(const vc_whatif_in *in, vc_whatif **out, char *err, size_t errlen) {
  *out = NULL;
  vc_whatif *w = calloc(1, sizeof(*w));
  json_t *job = job_copy(in), *pg = NULL;
  world wd = {0};
  if (w == NULL || job == NULL) {
    free(w);
    json_decref(job);
    return KC_ENOMEM;
  }
  int rc = whatif_world(in, job, w, &wd, &pg, err, errlen);
  if (rc == 0 && wd.pg == NULL)
    rc = kc_errorf(err, errlen, KC_EINVAL, "the job controller would create no PodGroup: %s",
                   w->controller_message ? w->controller_message : "no reason given");
  char key[512];
  if (rc == 0)
    rc = pg_key(w->namespace, w->podgroup, key, sizeof(key));
  session_knobs k = {0};
  if (rc == 0 && in->at_capacity && (rc = world_msg(in, &wd, w->queue, false)) == 0) {
    /* Today's session gives the queue's deserved share with this Job's demand in it. */
    rc = run_session(in, &wd, key, &k, NULL);
    world_msg_clear(&wd);
    k.cap = k.has_deserved ? &k.deserved : NULL;
  }
  vc_whatif *gate = NULL;
  if (rc == 0 && wd.npods > 0)
    rc = gate_session(in, &wd, key, &k, w, &gate);
  if (rc == 0)
    rc = world_msg(in, &wd, w->queue, in->at_capacity);
  if (rc == 0)
    rc = run_session(in, &wd, key, &k, w);
  if (rc == 0 && gate && !gate->admitted)
    take_gate_status(w, gate);
  vc_whatif_free(gate);
  if (rc != 0 && err && !err[0])
    kc_errorf(err, errlen, rc, "the scheduling session failed: %s", kc_strerror(rc));
  world_close(&wd);
  json_decref(pg);
  json_decref(job);
  if (rc != 0) {
    vc_whatif_free(w);
    return rc;
  }
  *out = w;
  return 0;
}

void vc_whatif_free(vc_whatif *w) {
  if (w == NULL)
    return;
  for (size_t i = 0; i < w->ntasks; i++) {
    free(w->tasks[i].name);
    free(w->tasks[i].node);
    free(w->tasks[i].why);
    json_decref(w->tasks[i].claims);
  }
  free(w->tasks);
  for (size_t i = 0; i < w->nvictims; i++) {
    vc_whatif_victim *v = &w->victims[i];
    free(v->job);
    free(v->pod);
    free(v->node);
    free(v->queue);
    free(v->action);
  }
  free(w->victims);
  for (size_t i = 0; i < w->nnodes_reasons; i++) {
    free(w->nodes[i].node);
    free(w->nodes[i].reason);
  }
  free(w->nodes);
  free(w->job);
  free(w->namespace);
  free(w->podgroup);
  free(w->queue);
  free(w->controller_message);
  free(w->phase);
  free(w->reason);
  free(w->message);
  free(w->why_pending);
  free(w->reasons_task);
  free(w);
}
