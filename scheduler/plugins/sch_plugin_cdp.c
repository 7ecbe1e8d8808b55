/* cdp, cooldown protection (Volcano pkg/scheduler/plugins/cdp): a pod that carries
 * volcano.sh/cooldown-time (label first, then annotation; a Go duration such as "10m") is
 * not a victim of preempt or reclaim until that long after it was scheduled (the
 * lastTransitionTime of its PodScheduled=True condition), as long as it is Running. Pods
 * without the key, with an invalid duration, or not Running are left to the other plugins.
 * Registers Preemptable and Reclaimable (switches enablePreemptable, enableReclaimable). */
#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"

static bool cooling(const sch_task *t, int64_t now) {
  const Kiln__Pod *p = t->pod;
  if (p->cooldown_ms <= 0 || p->phase != KILN__POD_PHASE__POD_PHASE_RUNNING ||
      p->scheduled_time <= 0)
    return false;
  return p->scheduled_time * 1000 + p->cooldown_ms > now * 1000;
}

static bool victims(sch_session *ssn, void *ctx, const sch_task *preemptor, const int32_t *cands,
                    size_t n, int32_t *out, size_t *nout) {
  (void)ctx;
  (void)preemptor;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  int64_t now = sch_session_opts(ssn)->now;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const sch_task *t = &snap->tasks[cands[i]];
    if (cooling(t, now)) {
      KC_V(4, "cdp: %s/%s is in its cooldown time", t->pod->namespace_, t->pod->name);
      continue;
    }
    out[k++] = cands[i];
  }
  *nout = k;
  return true;
}

static int cdp_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  (void)conf;
  (void)state;
  int rc = sch_add_preemptable_fn(ssn, victims, NULL);
  if (rc == 0)
    rc = sch_add_reclaimable_fn(ssn, victims, NULL);
  return rc;
}

const sch_plugin sch_plugin_cdp = {"cdp", cdp_open, NULL};
