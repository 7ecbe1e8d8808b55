/* Network topology and sub-groups: a PodGroup's networkTopology as the scheduler reads it,
 * the HyperNode its placed tasks hold, the sub-groups of its subGroupPolicy (Volcano
 * SubJobInfo, built with the snapshot), and the session's sub-group and HyperNode extension
 * points (Volcano session_plugins.go SubJobReady, SubJobPipelined, SubJobOrderFn,
 * HyperNodeGradientForJobFn/ForSubJobFn, HyperNodeOrderMapFn). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "sch_hypernode.h"
#include "sch_int.h"
#include "sch_match.h"

/* ---- topology ---- */

void sch_topo_of(const sch_snapshot *snap, const Kiln__NetworkTopology *nt, sch_topo *out) {
  out->mode = SCH_TOPO_NONE;
  out->tier = -1;
  if (nt == NULL)
    return;
  int32_t tier = -1;
  if (nt->has_highest_tier_allowed)
    tier = nt->highest_tier_allowed;
  else if (nt->highest_tier_name && *nt->highest_tier_name)
    tier = sch_hntree_tier_of_name(snap->hntree, nt->highest_tier_name);
  if (tier < 0)
    return;
  out->mode = nt->mode && strcmp(nt->mode, "soft") == 0 ? SCH_TOPO_SOFT : SCH_TOPO_HARD;
  out->tier = tier;
}

void sch_job_topo(const sch_snapshot *snap, const sch_job *j, sch_topo *out) {
  const Kiln__PodGroup *pg = j->pod_group;
  sch_topo_of(snap, pg && pg->spec ? pg->spec->network_topology : NULL, out);
}

void sch_subjob_topo(const sch_snapshot *snap, const sch_subjob *sj, sch_topo *out) {
  const Kiln__PodGroup *pg = snap->jobs[sj->job].pod_group;
  const Kiln__NetworkTopology *nt = NULL;
  if (sj->policy >= 0 && pg && pg->spec && (size_t)sj->policy < pg->spec->n_sub_group_policy)
    nt = pg->spec->sub_group_policy[sj->policy]->network_topology;
  sch_topo_of(snap, nt, out);
}

/* Volcano AllocatedStatus (sch_task_status_allocated, inlined: the snapshot, which builds the
 * sub-groups, calls this file). */
static bool allocated(sch_task_status s) {
  return s == SCH_TASK_ALLOCATED || s == SCH_TASK_BINDING || s == SCH_TASK_BOUND ||
         s == SCH_TASK_RUNNING;
}

static bool placed(const sch_task *t) {
  return t->node >= 0 && (allocated(t->status) || t->status == SCH_TASK_PIPELINED);
}

int32_t sch_tasks_hypernode(const sch_snapshot *snap, const int32_t *tasks, int32_t n) {
  const sch_hntree *tree = snap->hntree;
  int32_t v = -1;
  for (int32_t i = 0; i < n && v != tree->top; i++) {
    const sch_task *t = &snap->tasks[tasks[i]];
    if (placed(t))
      v = sch_hntree_lca(tree, v, tree->node_hn[t->node]);
  }
  return v;
}

int32_t sch_subjob_ready_num(const sch_snapshot *snap, const sch_subjob *sj) {
  int32_t n = 0;
  for (int32_t i = 0; i < sj->ntasks; i++) {
    sch_task_status st = snap->tasks[sj->tasks[i]].status;
    n += allocated(st) || st == SCH_TASK_SUCCEEDED;
  }
  return n;
}

int32_t sch_subjob_pipelined_num(const sch_snapshot *snap, const sch_subjob *sj) {
  int32_t n = sch_subjob_ready_num(snap, sj);
  for (int32_t i = 0; i < sj->ntasks; i++)
    n += snap->tasks[sj->tasks[i]].status == SCH_TASK_PIPELINED;
  return n;
}

/* ---- sub-groups ---- */

static const char *pod_label(const void *obj, const char *key) {
  return sch_pod_label(obj, key);
}

/* "<policy>-<v1>-<v2>" of the policy's matchLabelKeys on the pod (Volcano getSubJobID), or
 * NULL when the policy does not select the pod (its selector, or a missing key). */
static char *subjob_key(const Kiln__SubGroupPolicy *p, const Kiln__Pod *pod, int32_t *index) {
  if (p->label_selector && !sch_selector_matches(p->label_selector, pod_label, pod))
    return NULL;
  size_t len = strlen(p->name ? p->name : "") + 1;
  for (size_t k = 0; k < p->n_match_label_keys; k++) {
    const char *v = sch_pod_label(pod, p->match_label_keys[k]);
    if (v == NULL)
      return NULL;
    len += strlen(v) + 1;
  }
  char *key = malloc(len);
  if (key == NULL)
    return NULL;
  size_t off = (size_t)snprintf(key, len, "%s", p->name ? p->name : "");
  *index = 0;
  for (size_t k = 0; k < p->n_match_label_keys; k++) {
    const char *v = sch_pod_label(pod, p->match_label_keys[k]);
    off += (size_t)snprintf(key + off, len - off, "-%s", v);
    if (k == 0)
      *index = (int32_t)strtol(v, NULL, 10);
  }
  return key;
}

/* The sub-group of j called key (policy pi), added when new. NULL without memory. */
static sch_subjob *subjob_get(sch_job *j, int32_t ji, int32_t pi, char *key, int32_t index,
                              const Kiln__SubGroupPolicy *p) {
  for (int32_t k = 0; k < j->nsubjobs; k++)
    if (strcmp(j->subjobs[k].key, key) == 0) {
      free(key);
      return &j->subjobs[k];
    }
  sch_subjob *sj = &j->subjobs[j->nsubjobs++];
  memset(sj, 0, sizeof(*sj));
  sj->job = ji;
  sj->policy = pi;
  sj->key = key;
  sj->match_index = index;
  sj->min_available =
      p ? (p->has_sub_group_size && p->sub_group_size > 0 ? p->sub_group_size : 1) : 0;
  sj->tasks = malloc((size_t)j->ntasks * sizeof(int32_t));
  return sj->tasks ? sj : NULL;
}

/* Puts task ti of j in the sub-group of the first policy that selects it, else the default. */
static int place_in_subjob(sch_snapshot *snap, int32_t ji, int32_t ti) {
  sch_job *j = &snap->jobs[ji];
  const Kiln__PodGroupSpec *spec = j->pod_group->spec;
  const Kiln__Pod *pod = snap->tasks[ti].pod;
  char *key = NULL;
  int32_t pi = -1, index = 0;
  for (size_t k = 0; k < spec->n_sub_group_policy && key == NULL; k++)
    if ((key = subjob_key(spec->sub_group_policy[k], pod, &index)) != NULL)
      pi = (int32_t)k;
  if (key == NULL && (key = strdup("")) == NULL)
    return KC_ENOMEM;
  sch_subjob *sj = subjob_get(j, ji, pi, key, index, pi >= 0 ? spec->sub_group_policy[pi] : NULL);
  if (sj == NULL)
    return KC_ENOMEM;
  sj->tasks[sj->ntasks++] = ti;
  return 0;
}

int sch__build_subjobs(sch_snapshot *snap) {
  for (int32_t ji = 0; ji < snap->njobs; ji++) {
    sch_job *j = &snap->jobs[ji];
    const Kiln__PodGroup *pg = j->pod_group;
    if (!pg || !pg->spec || pg->spec->n_sub_group_policy == 0 || j->ntasks == 0)
      continue;
    if ((j->subjobs = calloc((size_t)j->ntasks, sizeof(sch_subjob))) == NULL)
      return KC_ENOMEM;
    for (int32_t i = 0; i < j->ntasks; i++) {
      int rc = place_in_subjob(snap, ji, j->tasks[i]);
      if (rc < 0)
        return rc;
    }
  }
  return 0;
}

void sch__free_subjobs(sch_snapshot *snap) {
  for (int32_t ji = 0; snap->jobs && ji < snap->njobs; ji++) {
    sch_job *j = &snap->jobs[ji];
    for (int32_t k = 0; k < j->nsubjobs; k++) {
      free((char *)j->subjobs[k].key);
      free(j->subjobs[k].tasks);
    }
    free(j->subjobs);
  }
}

/* ---- extension points ---- */

#define F(fn) ((void (*)(void))(fn))

int sch_add_subjob_ready_fn(sch_session *ssn, sch_subjob_bool_fn fn, void *ctx) {
  return sch__add_cb(ssn, SCH_CB_SUBJOB_READY, SCH_EXT_SUBJOB_READY, F(fn), NULL, ctx);
}
int sch_add_subjob_pipelined_fn(sch_session *ssn, sch_subjob_bool_fn fn, void *ctx) {
  return sch__add_cb(ssn, SCH_CB_SUBJOB_PIPELINED, SCH_EXT_SUBJOB_PIPELINED, F(fn), NULL, ctx);
}
int sch_add_subjob_order_fn(sch_session *ssn, sch_subjob_order_fn fn, void *ctx) {
  return sch__add_cb(ssn, SCH_CB_SUBJOB_ORDER, SCH_EXT_SUBJOB_ORDER, F(fn), NULL, ctx);
}
int sch_add_hn_gradient_fn(sch_session *ssn, sch_hn_gradient_fn fn, void *ctx) {
  return sch__add_cb(ssn, SCH_CB_HN_GRADIENT, SCH_EXT_HYPERNODE_GRADIENT, F(fn), NULL, ctx);
}
int sch_add_hn_order_fn(sch_session *ssn, sch_hn_order_fn fn, void *ctx) {
  return sch__add_cb(ssn, SCH_CB_HN_ORDER, SCH_EXT_HYPERNODE_ORDER, F(fn), NULL, ctx);
}

static bool all_agree(sch_session *ssn, sch_cb_kind kind, const sch_job *j, const sch_subjob *sj) {
  const sch_cbs *c = &ssn->cbs[kind];
  for (size_t i = 0; i < c->n; i++)
    if (!((sch_subjob_bool_fn)c->v[i].fn)(ssn, c->v[i].ctx, j, sj))
      return false;
  return true;
}

bool sch_session_subjob_ready(sch_session *ssn, const sch_job *j, const sch_subjob *sj) {
  return all_agree(ssn, SCH_CB_SUBJOB_READY, j, sj);
}

bool sch_session_subjob_pipelined(sch_session *ssn, const sch_job *j, const sch_subjob *sj) {
  return all_agree(ssn, SCH_CB_SUBJOB_PIPELINED, j, sj);
}

int sch_session_subjob_order(sch_session *ssn, const sch_subjob *l, const sch_subjob *r) {
  const sch_cbs *c = &ssn->cbs[SCH_CB_SUBJOB_ORDER];
  for (size_t i = 0; i < c->n; i++) {
    int v = ((sch_subjob_order_fn)c->v[i].fn)(ssn, c->v[i].ctx, l, r);
    if (v)
      return v;
  }
  if (l->match_index != r->match_index)
    return l->match_index < r->match_index ? -1 : 1;
  return strcmp(l->key, r->key);
}

int32_t sch_session_hn_gradient(sch_session *ssn, const sch_job *j, const sch_subjob *sj,
                                int32_t root, int32_t *out, int32_t *grad) {
  const sch_cbs *c = &ssn->cbs[SCH_CB_HN_GRADIENT];
  for (size_t i = 0; i < c->n; i++) {
    int32_t n = ((sch_hn_gradient_fn)c->v[i].fn)(ssn, c->v[i].ctx, j, sj, root, out, grad);
    if (n >= 0)
      return n;
  }
  out[0] = root;
  grad[0] = 0;
  return 1;
}

void sch_session_hn_scores(sch_session *ssn, const sch_job *j, const sch_subjob *sj,
                           const int32_t *hns, size_t n, double *scores) {
  for (size_t i = 0; i < n; i++)
    scores[i] = 0;
  const sch_cbs *c = &ssn->cbs[SCH_CB_HN_ORDER];
  for (size_t i = 0; i < c->n; i++)
    ((sch_hn_order_fn)c->v[i].fn)(ssn, c->v[i].ctx, j, sj, hns, n, scores);
}
