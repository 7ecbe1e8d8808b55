/* The topology domains of gang-aware eviction (see sch_gangevict.h): Volcano's
 * GetCandidateDomains over the HyperNode gradient of the job with the eviction purpose
 * (network-topology-aware's PurposeEvict: a HyperNode whose allocatable could hold the job's
 * minResources at all, the widest tier first, at most maxHyperNodesForEviction of them). */
#include <stdlib.h>
#include <string.h>

#include "sch_gangevict.h"
#include "sch_hypernode.h"

/* Volcano network-topology-aware DefaultEvictMaxHyperNodes. */
#define EVICT_MAX_HYPERNODES 8

/* Volcano isEligibleHyperNode with PurposeEvict: the job's minResources fit what the
 * HyperNode's nodes hold in all (free or not); a job that already holds tasks is not
 * pre-filtered. */
static bool eligible(const sch_snapshot *snap, const sch_job *j, int32_t v, bool placed) {
  if (placed || !j->has_min_resources)
    return true;
  const sch_hypernode *h = &snap->hntree->v[v];
  sch_resource all = {0};
  for (int32_t k = 0; k < h->nnodes; k++)
    sch_resource_add(&all, &snap->nodes[h->nodes[k]].allocatable);
  return sch_resource_less_equal(&j->min_resources, &all);
}

/* Volcano reverseAndCapEvictionGradients: the gradients from the widest back, each in its
 * order, until EVICT_MAX_HYPERNODES are taken (the last ones of a gradient that does not fit
 * whole). out[0..n) with gradient numbers grad; the result is written at the start of out. */
static int32_t reverse_and_cap(int32_t *out, const int32_t *grad, int32_t n, int32_t *tmp) {
  int32_t k = 0, rem = EVICT_MAX_HYPERNODES;
  for (int32_t e = n - 1; e >= 0 && rem > 0;) {
    int32_t s = e;
    while (s > 0 && grad[s - 1] == grad[e])
      s--;
    int32_t take = e - s + 1 < rem ? e - s + 1 : rem;
    for (int32_t x = e - take + 1; x <= e; x++)
      tmp[k++] = out[x];
    rem -= take;
    e = s - 1;
  }
  memcpy(out, tmp, (size_t)k * sizeof(*out));
  return k;
}

int32_t sch__evict_domains(sch_session *ssn, int32_t ji, int32_t *out, int32_t *grad,
                           int32_t *tmp) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  const sch_hntree *t = snap->hntree;
  const sch_job *j = &snap->jobs[ji];
  sch_topo topo;
  sch_job_topo(snap, j, &topo);
  if (topo.mode != SCH_TOPO_HARD) { /* the plugin's [[root]]: the cluster top */
    out[0] = t->top;
    return 1;
  }
  /* a hard topology without the gradient plugin, or with an inconsistent tree, has nowhere
   * to go (Volcano falls back to the cluster top only for jobs without one) */
  if (!t->ready || ssn->cbs[SCH_CB_HN_GRADIENT].n == 0)
    return 0;
  int32_t n = sch_session_hn_gradient(ssn, j, NULL, t->top, out, grad);
  bool placed = sch_tasks_hypernode(snap, j->tasks, j->ntasks) >= 0;
  int32_t k = 0;
  for (int32_t i = 0; i < n; i++)
    if (eligible(snap, j, out[i], placed)) {
      out[k] = out[i];
      grad[k++] = grad[i];
    }
  return reverse_and_cap(out, grad, k, tmp);
}

size_t sch__domain_nodes(sch_session *ssn, int32_t v, const uint8_t *listed, int32_t *out) {
  const sch_hypernode *h = &sch_session_snapshot(ssn)->hntree->v[v];
  size_t n = 0;
  for (int32_t k = 0; k < h->nnodes; k++)
    if (listed[h->nodes[k]])
      out[n++] = h->nodes[k];
  return n;
}
