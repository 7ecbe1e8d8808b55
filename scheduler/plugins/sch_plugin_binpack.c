/* binpack (Volcano pkg/scheduler/plugins/binpack): prefer the node that would be fullest.
 *
 * For every resource the task asks for and that has a weight (binpack.cpu, binpack.memory,
 * and the names listed in binpack.resources with binpack.resources.<name>, each 1 by
 * default; a negative weight reads as 1), the node scores (used + request) * weight /
 * allocatable, or 0 when the node would be over its allocatable. The sum is divided by the
 * sum of the weights that took part and scaled to 0..100 * binpack.weight (default 1). A
 * binpack.weight of 0 disables the plugin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "sch_framework.h"
#include "sch_match.h"

typedef struct binpack_state {
  int64_t weight, cpu, memory;
  int64_t scalar[SCH_MAX_SCALARS]; /* per snapshot slot; 0: not scored */
  bool scored[SCH_MAX_SCALARS];
} binpack_state;

static double binpack_score(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n) {
  binpack_state *st = ctx;
  const sch_resource *req = &t->resreq;
  double score = 0;
  int64_t weight_sum = 0;
  if (req->milli_cpu != 0) {
    score += sch_binpack_resource_score((double)req->milli_cpu, (double)n->allocatable.milli_cpu,
                                        (double)n->used.milli_cpu, (int)st->cpu);
    weight_sum += st->cpu;
  }
  if (req->memory != 0) {
    score += sch_binpack_resource_score((double)req->memory, (double)n->allocatable.memory,
                                        (double)n->used.memory, (int)st->memory);
    weight_sum += st->memory;
  }
  for (int i = 0; i < SCH_MAX_SCALARS; i++) {
    if (req->scalar[i] == 0 || !st->scored[i])
      continue;
    score += sch_binpack_resource_score((double)req->scalar[i], (double)n->allocatable.scalar[i],
                                        (double)n->used.scalar[i], (int)st->scalar[i]);
    weight_sum += st->scalar[i];
  }
  if (weight_sum > 0)
    score /= (double)weight_sum;
  return score * (double)(SCH_MAX_NODE_SCORE * st->weight);
}

/* binpack.resources: "nvidia.com/gpu, example.com/foo". Names no object of the snapshot
 * uses have no slot and cannot score. */
static void parse_resources(binpack_state *st, sch_session *ssn, const sch_args *args) {
  sch_args_resource_weights(args, "binpack.resources", sch_session_snapshot(ssn), st->scalar,
                            st->scored);
}

static int binpack_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  binpack_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  *state = st;
  st->weight = sch_args_int(&conf->args, "binpack.weight", 1);
  st->cpu = sch_args_int(&conf->args, "binpack.cpu", 1);
  if (st->cpu < 0)
    st->cpu = 1;
  st->memory = sch_args_int(&conf->args, "binpack.memory", 1);
  if (st->memory < 0)
    st->memory = 1;
  parse_resources(st, ssn, &conf->args);
  if (st->weight == 0) {
    KC_INFO("binpack weight is zero, skip node order function");
    return 0;
  }
  return sch_add_node_order_fn(ssn, binpack_score, st);
}

static void binpack_close(sch_session *ssn, void *state) {
  (void)ssn;
  free(state);
}

const sch_plugin sch_plugin_binpack = {
    .name = "binpack",
    .open = binpack_open,
    .close = binpack_close,
};
