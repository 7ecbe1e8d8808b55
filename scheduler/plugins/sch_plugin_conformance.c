/* The conformance plugin (Volcano pkg/scheduler/plugins/conformance): critical pods are
 * never victims. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_int.h"

static bool critical(const sch_task *t) {
  const char *pc = t->pod->priority_class_name;
  const char *ns = t->pod->namespace_;
  return (pc && (strcmp(pc, "system-cluster-critical") == 0 ||
                 strcmp(pc, "system-node-critical") == 0)) ||
         (ns && strcmp(ns, "kube-system") == 0);
}

static bool conformance_victims(sch_session *ssn, void *ctx, const sch_task *preemptor,
                                const int32_t *cands, size_t n, int32_t *out, size_t *nout) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!critical(&ssn->snap->tasks[cands[i]]))
      out[k++] = cands[i];
  *nout = k;
  return true;
}

static int conformance_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  int rc;
  if ((rc = sch_add_preemptable_fn(ssn, conformance_victims, NULL)) < 0 ||
      (rc = sch_add_reclaimable_fn(ssn, conformance_victims, NULL)) < 0)
    return rc;
  return 0;
}

const sch_plugin sch_plugin_conformance = {"conformance", conformance_open, NULL};
