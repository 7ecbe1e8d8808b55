/* pdb (Volcano pkg/scheduler/plugins/pdb): preempt and reclaim never take a pod its
 * PodDisruptionBudgets cannot spare.
 *
 * Every call starts from each budget's status.disruptionsAllowed (what kube-controller-
 * manager's disruption controller computed); each candidate, in order, spends one from every
 * budget of its namespace whose selector matches its labels (a budget without a selector, or
 * with an empty one, matches nothing), unless the budget already lists it in
 * status.disruptedPods; a candidate that drives any budget below zero is no victim. A pod
 * without labels matches no budget and, as in Volcano, is not returned either.
 *
 * Unlike Volcano, the victims this session has already evicted count against the budgets
 * too: Volcano starts every call from the status again, so two preemptors of one session
 * could each spend the last allowed disruption.
 *
 * Registers Preemptable and Reclaimable (switches enablePreemptable, enableReclaimable).
 * Volcano also registers the same filter as a VictimTasks function, which would make shuffle
 * evict every pod a budget allows; Kiln leaves that out (docs/development.md). */
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"
#include "sch_match.h"

static const char *pod_label(const void *pod, const char *key) {
  return sch_pod_label(pod, key);
}

static bool disrupted(const Kiln__PodDisruptionBudget *b, const char *pod) {
  const Kiln__PodDisruptionBudgetStatus *st = b->status;
  for (size_t i = 0; st && i < st->n_disrupted_pods; i++)
    if (st->disrupted_pods[i]->key && strcmp(st->disrupted_pods[i]->key, pod) == 0)
      return true;
  return false;
}

static bool budget_matches(const Kiln__PodDisruptionBudget *b, const Kiln__Pod *p) {
  if (!b->metadata || !b->metadata->namespace_ || strcmp(b->metadata->namespace_, p->namespace_))
    return false;
  const Kiln__LabelSelector *sel = b->spec ? b->spec->selector : NULL;
  if (sel == NULL || sch_selector_empty(sel))
    return false;
  return sch_selector_matches(sel, pod_label, p);
}

/* The tasks this session evicted (statement evictions not undone), kept by the event
 * handlers: an eviction fires deallocate with the task Releasing, its undo fires allocate. */
typedef struct pdb_state {
  int32_t *evicted;
  size_t n, cap;
} pdb_state;

static void on_allocate(sch_session *ssn, void *ctx, const sch_task *t) {
  pdb_state *st = ctx;
  int32_t ti = (int32_t)(t - sch_session_snapshot(ssn)->tasks);
  for (size_t i = st->n; i-- > 0;)
    if (st->evicted[i] == ti) {
      st->evicted[i] = st->evicted[--st->n];
      return;
    }
}

static void on_deallocate(sch_session *ssn, void *ctx, const sch_task *t) {
  pdb_state *st = ctx;
  if (t->status != SCH_TASK_RELEASING)
    return;
  if (st->n == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 16;
    int32_t *v = realloc(st->evicted, cap * sizeof(*v));
    if (v == NULL)
      return; /* out of memory: this eviction is not counted */
    st->evicted = v;
    st->cap = cap;
  }
  st->evicted[st->n++] = (int32_t)(t - sch_session_snapshot(ssn)->tasks);
}

/* Spends budgets for pod p: false when one goes below zero. */
static bool spend(const Kiln__Snapshot *m, int32_t *allowed, const Kiln__Pod *p) {
  bool ok = true;
  if (p->packed_labels.len == 0)
    return false;
  for (size_t b = 0; b < m->n_pod_disruption_budgets; b++) {
    const Kiln__PodDisruptionBudget *pdb = m->pod_disruption_budgets[b];
    if (!budget_matches(pdb, p) || disrupted(pdb, p->name))
      continue;
    if (--allowed[b] < 0)
      ok = false;
  }
  return ok;
}

static bool victims(sch_session *ssn, void *ctx, const sch_task *preemptor, const int32_t *cands,
                    size_t n, int32_t *out, size_t *nout) {
  const pdb_state *st = ctx;
  (void)preemptor;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  const Kiln__Snapshot *m = snap->msg;
  size_t nb = m->n_pod_disruption_budgets;
  int32_t *allowed = calloc(nb ? nb : 1, sizeof(*allowed));
  *nout = 0;
  if (allowed == NULL)
    return true; /* out of memory: no victim is the safe answer */
  for (size_t b = 0; b < nb; b++)
    allowed[b] = m->pod_disruption_budgets[b]->status
                     ? m->pod_disruption_budgets[b]->status->disruptions_allowed
                     : 0;
  for (size_t i = 0; nb > 0 && i < st->n; i++)
    spend(m, allowed, snap->tasks[st->evicted[i]].pod);
  for (size_t i = 0; i < n; i++) {
    const Kiln__Pod *p = snap->tasks[cands[i]].pod;
    if (p->packed_labels.len == 0)
      continue;
    if (!spend(m, allowed, p)) {
      KC_V(4, "pdb: %s/%s would break a PodDisruptionBudget; not a victim", p->namespace_, p->name);
      continue;
    }
    out[(*nout)++] = cands[i];
  }
  free(allowed);
  return true;
}

static int pdb_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  (void)conf;
  pdb_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  *state = st;
  int rc = sch_add_preemptable_fn(ssn, victims, st);
  if (rc == 0)
    rc = sch_add_reclaimable_fn(ssn, victims, st);
  if (rc == 0)
    rc = sch_add_event_handler(ssn, on_allocate, on_deallocate, st);
  return rc;
}

static void pdb_close(sch_session *ssn, void *state) {
  (void)ssn;
  pdb_state *st = state;
  if (st)
    free(st->evicted);
  free(st);
}

const sch_plugin sch_plugin_pdb = {"pdb", pdb_open, pdb_close};
