/* Nodes' load from the metrics source of the scheduler configuration's `metrics` section, for
 * the usage plugin (Volcano pkg/scheduler/metrics/source and its cache's GetMetricsData):
 * every `interval` (30s) the shell asks the source for each node's cpu and memory averages
 * over Volcano's NODE_METRICS_PERIOD (10m), on a libuv worker thread (blocking libcurl calls,
 * so a slow source never holds the loop), and each session gets the last answer in its
 * snapshot (node_usages).
 *
 * type prometheus: `address` is Prometheus' URL; per node, Volcano's two PromQL queries
 * (instance="<node>") as a form POST to /api/v1/query, the first row's value taken.
 * type elasticsearch: `address` is Elasticsearch's URL; per node, Volcano's search of
 * `elasticsearch.index` (metricbeat-*) for the averages of host.cpu.usage and
 * system.memory.actual.used.pct where `elasticsearch.hostnameFieldName` (host.hostname) is the
 * node, times 100; `elasticsearch.username`/`password` as basic auth.
 * `tls.insecureSkipVerify: "true"` skips certificate checks (logged). Another type (Volcano's
 * prometheus_adaptor, the custom metrics API) is named in the log and reads nothing. */
#ifndef SCH_USAGE_H
#define SCH_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "kc_store.h"
#include "sch_framework.h"

typedef struct sch_usage sch_usage;

/* nodes: the cache's node store (borrowed; read on the loop thread when a poll starts). */
KC_NODISCARD int sch_usage_new(uv_loop_t *loop, kc_store *nodes, sch_usage **out);
/* Takes the `metrics` section (copied); a changed one restarts the polling, an empty one stops
 * it. 0 or KC_ENOMEM. */
KC_NODISCARD int sch_usage_configure(sch_usage *u, const sch_args *metrics);
/* Puts the last answer into m->node_usages: *block is new (free it once m is done with). 0 or
 * KC_ENOMEM. */
KC_NODISCARD int sch_usage_fill(sch_usage *u, Kiln__Snapshot *m, void **block);
/* Stops polling and frees u once no poll is in flight; run the loop afterwards. NULL no-op. */
void sch_usage_free(sch_usage *u);

/* Pure parts, for the tests. The value of a Prometheus /api/v1/query answer (the first row of
 * a vector), or false. */
bool sch_usage_prom_value(const char *body, double *out);
/* The cpu and mem averages of an Elasticsearch search answer, times 100 (a null average is
 * 0), or false when it is not one. */
bool sch_usage_es_values(const char *body, double *cpu, double *mem);

#endif
