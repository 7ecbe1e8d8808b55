/* Why a gang is pending, said so that the operator knows what to change (issue #13).
 *
 * Volcano's Unschedulable message names the symptom ("0/4 nodes are available: 4
 * Insufficient cpu", "resource in cluster is overused"), which sends the operator looking
 * at other tenants when the pod itself can never fit. Here the limit that holds a gang is
 * told most specific first:
 *   1. a pod that fits no node even when empty: "pod requests 40 cpu; the largest node
 *      allocates 32" (only nodes the pod may run on otherwise count);
 *   2. its queue (the queue plugins record the numbers, sch_session_job_queue_reason);
 *   3. the cluster full: "cluster full: pod requests 8 cpu; the largest free block is 6
 *      cpu (node n1)";
 *   4. the predicates per reason with node counts (kube-scheduler's aggregated message).
 * The condition reason (NotEnoughResources, ...) stays Volcano's, for tools that read it.
 *
 * Pure: reads the session and snapshot, interns strings in the session's reason table. */
#include <stdio.h>
#include <string.h>

#include "kc_error.h"
#include "sch_int.h"
#include "sch_volume.h"

/* Predicate calls one session may spend on explanations: past it, a gang keeps the
 * aggregated message (a cluster of 5,000 nodes explains 40 gangs a session). */
#define WHY_PREDICATE_BUDGET 200000

void sch__why_dim_name(const sch_snapshot *snap, int dim, char *buf, size_t len) {
  const char *name = dim == 0 ? "cpu" : dim == 1 ? "memory" : snap->scalar_names[dim - 2];
  snprintf(buf, len, "%s", name ? name : "?");
}

static int64_t dim_value(const sch_resource *r, int dim) {
  return dim == 0 ? r->milli_cpu : dim == 1 ? r->memory : r->scalar[dim - 2];
}

/* A quantity as an operator writes it: cpu and scalars in whole units when they are
 * ("40", "2"), else in milli-units ("1500m"); memory in Gi, Mi or Ki when exact, else
 * bytes. */
void sch__why_amount(int dim, int64_t v, char *buf, size_t len) {
  if (dim != 1) {
    if (v % 1000 == 0)
      snprintf(buf, len, "%lld", (long long)(v / 1000));
    else
      snprintf(buf, len, "%lldm", (long long)v);
    return;
  }
  static const char *const unit[] = {"Gi", "Mi", "Ki"};
  static const int64_t size[] = {1LL << 30, 1LL << 20, 1LL << 10};
  for (int i = 0; i < 3; i++)
    if (v != 0 && v % size[i] == 0) {
      snprintf(buf, len, "%lld%s", (long long)(v / size[i]), unit[i]);
      return;
    }
  snprintf(buf, len, "%lld", (long long)v);
}

/* "40 cpu" */
static void amount_named(const sch_snapshot *snap, int dim, int64_t v, char *buf, size_t len) {
  char a[32], n[128];
  sch__why_amount(dim, v, a, sizeof(a));
  sch__why_dim_name(snap, dim, n, sizeof(n));
  snprintf(buf, len, "%s %s", a, n);
}

void sch_resource_human(const sch_snapshot *snap, const sch_resource *r, unsigned dims, char *buf,
                        size_t len) {
  size_t off = 0;
  buf[0] = 0;
  for (int d = 0; d < 2 + SCH_MAX_SCALARS && off < len; d++) {
    int64_t v = dim_value(r, d);
    if (dims ? !(dims & (1u << d)) : v == 0)
      continue;
    if (d >= 2 && !snap->scalar_names[d - 2])
      continue;
    char one[160];
    amount_named(snap, d, v, one, sizeof(one));
    off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "", one);
  }
  if (!buf[0])
    snprintf(buf, len, "nothing");
}

static int first_dim(unsigned mask) {
  for (int d = 0; d < 2 + SCH_MAX_SCALARS; d++)
    if (mask & (1u << d))
      return d;
  return -1;
}

/* "pod requests 40 cpu; the largest node allocates 32". With no dimension short of the
 * largest amounts (each node lacks another: one the cpu, one the memory) it is "pod requests
 * 8 cpu, 64Gi memory; no node allocates all of it". */
static int32_t too_big(sch_session *ssn, const sch_task *t, const sch_resource *largest,
                       unsigned short_mask) {
  int d = first_dim(short_mask);
  if (d < 0) {
    char all[256];
    sch_resource_human(ssn->snap, &t->init_resreq, 0, all, sizeof(all));
    return sch_session_reasonf(ssn, "pod requests %s; no node allocates all of it", all);
  }
  char req[160], big[32];
  amount_named(ssn->snap, d, dim_value(&t->init_resreq, d), req, sizeof(req));
  sch__why_amount(d, dim_value(largest, d), big, sizeof(big));
  return sch_session_reasonf(ssn, "pod requests %s; the largest node allocates %s", req, big);
}

/* Per dimension, the largest allocatable of the session's nodes (computed once). */
static const sch_resource *largest_node(sch_session *ssn) {
  if (!ssn->why_largest_done) {
    sch_resource_clear(&ssn->why_largest);
    for (int32_t k = 0; k < ssn->nnode_list; k++)
      sch_resource_set_max(&ssn->why_largest, &ssn->snap->nodes[ssn->node_list[k]].allocatable);
    ssn->why_largest_done = true;
  }
  return &ssn->why_largest;
}

/* How well t fits free: the smallest free/requested ratio over what t asks for. */
static double fit_ratio(const sch_resource *req, const sch_resource *free_) {
  double best = -1;
  for (int d = 0; d < 2 + SCH_MAX_SCALARS; d++) {
    int64_t r = dim_value(req, d);
    if (r <= 0)
      continue;
    double x = (double)dim_value(free_, d) / (double)r;
    if (best < 0 || x < best)
      best = x;
  }
  return best;
}

/* "cluster full: pod requests 8 cpu; the largest free block is 6 cpu (node n1)" */
static int32_t cluster_full(sch_session *ssn, const sch_task *t, const sch_node *n,
                            const sch_resource *free_, int32_t placed) {
  unsigned mask = sch_resource_insufficient(&t->init_resreq, free_);
  if (mask == 0)
    return -1; /* it failed on something the resources do not explain */
  int d = first_dim(mask);
  char req[160], blk[160], after[96] = "";
  amount_named(ssn->snap, d, dim_value(&t->init_resreq, d), req, sizeof(req));
  amount_named(ssn->snap, d, dim_value(free_, d) > 0 ? dim_value(free_, d) : 0, blk, sizeof(blk));
  if (placed > 0)
    snprintf(after, sizeof(after), " after %d pod(s) of the gang were placed", placed);
  return sch_session_reasonf(ssn,
                             "cluster full: pod requests %s; the largest free block is %s "
                             "(node %s)%s",
                             req, blk, n->name ? n->name : "?", after);
}

/* The volume reason among f's, -1 none. */
static int32_t volume_reason(sch_session *ssn, const sch_fit *f) {
  for (int i = 0; i < f->n; i++)
    if (sch_vol_reason_is(sch_session_reason_str(ssn, f->reasons[i])))
      return f->reasons[i];
  return -1;
}

/* Every node that takes t otherwise refuses it for its volumes: the claims named, with the
 * first such node's reason. */
static int32_t volumes_held(sch_session *ssn, const sch_task *t, int32_t reason, int32_t placed) {
  char names[512], after[96] = "";
  if (ssn->snap->vol == NULL)
    return -1;
  sch_vol_unbound_names(ssn->snap->vol, t, names, sizeof(names));
  if (placed > 0)
    snprintf(after, sizeof(after), " after %d pod(s) of the gang were placed", placed);
  return sch_session_reasonf(
      ssn, "volumes: no node can take pod %s/%s%s%s%s: %s", t->pod->namespace_, t->pod->name,
      names[0] ? " with its claim(s) " : "", names, after, sch_session_reason_str(ssn, reason));
}

/* t found no node. Returns the reason id of the most specific explanation, -1 when the
 * aggregated predicate message says it best (no node takes the pod for other reasons),
 * or KC_ENOMEM. *is_too_big tells the first kind (it outranks a queue limit). placed: the
 * gang's pods this attempt already placed. */
int32_t sch__why_unplaced(sch_session *ssn, const sch_task *t, int32_t placed, bool *is_too_big) {
  const sch_snapshot *snap = ssn->snap;
  *is_too_big = false;
  if (ssn->why_budget + ssn->nnode_list > WHY_PREDICATE_BUDGET) {
    /* Out of budget: bigger than every node still shows without asking predicates (the
     * size named is then the cluster's largest node, usable by the pod or not). */
    const sch_resource *all = largest_node(ssn);
    unsigned mask = sch_resource_insufficient(&t->init_resreq, all);
    if (!mask)
      return -1;
    *is_too_big = true;
    return too_big(ssn, t, all, mask);
  }
  ssn->why_budget += ssn->nnode_list;
  /* Predicates with the resources and pod count left out, as if each node were empty. */
  bool was = ssn->preempting;
  ssn->preempting = true;
  sch_resource largest = {0}, best_free = {0};
  int32_t eligible = 0, best = -1, vol_nodes = 0, vol_reason = -1;
  double best_ratio = -1;
  for (int32_t k = 0; k < ssn->nnode_list; k++) {
    const sch_node *n = &snap->nodes[ssn->node_list[k]];
    sch_fit f = {0};
    if (sch_session_predicate(ssn, t, n, &f) != SCH_FIT) {
      int32_t vr = volume_reason(ssn, &f);
      vol_nodes += vr >= 0;
      vol_reason = vol_reason >= 0 ? vol_reason : vr;
      continue;
    }
    eligible++;
    sch_resource_set_max(&largest, &n->allocatable);
    if (sch_resource_insufficient(&t->init_resreq, &n->allocatable))
      continue;
    sch_resource fut;
    sch_node_future_idle(n, &fut);
    double r = fit_ratio(&t->init_resreq, &fut);
    if (best < 0 || r > best_ratio) {
      best = ssn->node_list[k];
      best_ratio = r;
      best_free = fut;
    }
  }
  ssn->preempting = was;
  /* Volumes are checked last: a node refusing for them takes the pod otherwise. */
  if (eligible == 0)
    return vol_nodes > 0 ? volumes_held(ssn, t, vol_reason, placed) : -1;
  if (best < 0) {
    *is_too_big = true;
    return too_big(ssn, t, &largest, sch_resource_insufficient(&t->init_resreq, &largest));
  }
  return cluster_full(ssn, t, &snap->nodes[best], &best_free, placed);
}

/* A gang whose pods were not tried (its queue held it, or it is not admitted yet): a pod
 * bigger than every node still says so. */
static int32_t too_big_untried(sch_session *ssn, const sch_job *j) {
  const sch_resource *all = largest_node(ssn);
  for (int32_t i = 0; i < j->ntasks; i++) {
    const sch_task *t = &ssn->snap->tasks[j->tasks[i]];
    if (t->status != SCH_TASK_PENDING)
      continue;
    unsigned mask = sch_resource_insufficient(&t->init_resreq, all);
    if (mask)
      return too_big(ssn, t, all, mask);
  }
  return -1;
}

/* The detail after "N/M tasks in gang unschedulable: " for a gang that is not ready;
 * empty when nothing explains it (the caller falls back to Volcano's histogram). */
void sch__why_detail(sch_session *ssn, const sch_job *j, char *buf, size_t len) {
  int32_t id = -1;
  if (j->why_message >= 0 && j->why_too_big)
    id = j->why_message;
  else if (j->why_message < 0 && (id = too_big_untried(ssn, j)) >= 0)
    ;
  else if (j->queue_message >= 0)
    id = j->queue_message;
  else if (j->why_message >= 0)
    id = j->why_message;
  else
    id = j->fit_message;
  snprintf(buf, len, "%s", id >= 0 ? sch_session_reason_str(ssn, id) : "");
}

int sch_session_gang_quota_reason(sch_session *ssn, const sch_job *j, const char *qname,
                                  const sch_resource *left, const sch_resource *cap,
                                  unsigned dims) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  char gang[256], lft[256], capb[256];
  sch_resource_human(snap, &j->min_resources, dims, gang, sizeof(gang));
  sch_resource_human(snap, left, dims, lft, sizeof(lft));
  sch_resource_human(snap, cap, dims, capb, sizeof(capb));
  return sch_session_job_queue_reason(ssn, j,
                                      "queue %s resource quota insufficient: the gang needs %s "
                                      "(minResources); the queue has %s left of %s",
                                      qname, gang, lft, capb);
}
