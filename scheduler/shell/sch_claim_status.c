/* A claim's status.allocation: see sch_claim_status.h. */
#include "sch_claim_status.h"

json_t *sch_claim_allocation(const sch_snapshot *snap, const sch_dra_write *w) {
  json_t *results = json_array();
  for (int32_t i = 0; results && i < w->nresults; i++) {
    const sch_dra_result *r = &w->results[i];
    json_array_append_new(results, json_pack("{s:s,s:s,s:s,s:s}", "request", r->request, "driver",
                                             r->driver, "pool", r->pool, "device", r->device));
  }
  json_t *a = json_pack("{s:{s:o}}", "devices", "results", results);
  if (a && w->node_local && w->node >= 0) {
    json_t *sel =
        json_pack("{s:[{s:[{s:s,s:s,s:[s]}]}]}", "nodeSelectorTerms", "matchFields", "key",
                  "metadata.name", "operator", "In", "values", snap->nodes[w->node].name);
    json_object_set_new(a, "nodeSelector", sel);
  }
  return a;
}
