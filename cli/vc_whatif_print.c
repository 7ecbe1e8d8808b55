/* vcctl job whatif's output (vc_whatif.h): describe-style text and the same as JSON. */
#include <stdlib.h>
#include <string.h>

#include "vc_whatif.h"

/* Per-node reasons the text shows; -o json has them all. */
#define TEXT_NODES 20

static const char *yes(bool b) {
  return b ? "yes" : "no";
}

/* Under a placed pod: each claim and the devices it would get. */
static void print_claims(FILE *out, const json_t *claims) {
  size_t i;
  const json_t *c;
  json_array_foreach(claims, i, c) {
    fprintf(out, "    claim %s:", json_string_value(json_object_get(c, "claim")));
    const json_t *res =
        json_object_get(json_object_get(json_object_get(c, "allocation"), "devices"), "results");
    if (json_is_true(json_object_get(c, "allocatedBefore")))
      fputs(" allocated before", out);
    size_t k;
    const json_t *d;
    json_array_foreach(res, k, d) {
      fprintf(out, "%s %s/%s/%s", k ? "," : "", json_string_value(json_object_get(d, "driver")),
              json_string_value(json_object_get(d, "pool")),
              json_string_value(json_object_get(d, "device")));
    }
    fputc('\n', out);
  }
}

static void print_tasks(FILE *out, const vc_whatif *w) {
  if (w->ntasks == 0) {
    fprintf(out, "Tasks:        <none>\n");
    return;
  }
  size_t wn = strlen("POD"), wnode = strlen("NODE");
  for (size_t i = 0; i < w->ntasks; i++) {
    size_t a = strlen(w->tasks[i].name), b = w->tasks[i].node ? strlen(w->tasks[i].node) : 6;
    wn = a > wn ? a : wn;
    wnode = b > wnode ? b : wnode;
  }
  fprintf(out, "Tasks:\n  %-*s  %-*s  %s\n", (int)wn, "POD", (int)wnode, "NODE", "ACTION");
  for (size_t i = 0; i < w->ntasks; i++) {
    const vc_whatif_task *t = &w->tasks[i];
    fprintf(out, "  %-*s  %-*s  %s\n", (int)wn, t->name, (int)wnode, t->node ? t->node : "<none>",
            t->how ? t->how : "pending");
    print_claims(out, t->claims);
  }
}

static void print_victims(FILE *out, const vc_whatif *w) {
  if (w->nvictims == 0) {
    fprintf(out, "Victims:      <none>\n");
    return;
  }
  size_t wj = strlen("JOB"), wp = strlen("POD"), wq = strlen("QUEUE");
  for (size_t i = 0; i < w->nvictims; i++) {
    size_t a = strlen(w->victims[i].job), b = strlen(w->victims[i].pod),
           c = strlen(w->victims[i].queue);
    wj = a > wj ? a : wj;
    wp = b > wp ? b : wp;
    wq = c > wq ? c : wq;
  }
  fprintf(out, "Victims:\n  %-*s  %-*s  %-10s  %-*s  %-8s  %s\n", (int)wj, "JOB", (int)wp, "POD",
          "PRIORITY", (int)wq, "QUEUE", "ACTION", "NODE");
  for (size_t i = 0; i < w->nvictims; i++) {
    const vc_whatif_victim *v = &w->victims[i];
    fprintf(out, "  %-*s  %-*s  %-10d  %-*s  %-8s  %s\n", (int)wj, v->job, (int)wp, v->pod,
            v->priority, (int)wq, v->queue, v->action, v->node);
  }
}

static void print_nodes(FILE *out, const vc_whatif *w) {
  if (w->nnodes_reasons == 0)
    return;
  fprintf(out, "Node Reasons (pod %s):\n", w->reasons_task);
  size_t shown = w->nnodes_reasons < TEXT_NODES ? w->nnodes_reasons : TEXT_NODES;
  for (size_t i = 0; i < shown; i++)
    fprintf(out, "  %s: %s\n", w->nodes[i].node, w->nodes[i].reason);
  if (shown < w->nnodes_reasons)
    fprintf(out, "  ... %zu more nodes (-o json lists every node)\n", w->nnodes_reasons - shown);
}

void vc_whatif_print(FILE *out, const vc_whatif *w) {
  fprintf(out, "Job:          %s/%s\n", w->namespace, w->job);
  fprintf(out, "PodGroup:     %s (queue %s, priority %d, minMember %d)\n", w->podgroup, w->queue,
          w->priority, w->min_available);
  fprintf(out, "Cluster:      %d nodes, %d pods, %d PodGroups, %d queues (nothing was written)\n",
          w->nnodes, w->npods, w->npodgroups, w->nqueues);
  if (w->at_capacity)
    fprintf(out,
            "Mode:         at capacity: the queue's deserved share, its other work left out\n");
  if (w->controller_message)
    fprintf(out, "Controller:   %s\n", w->controller_message);
  fprintf(out, "Admitted:     %s (enqueue: PodGroup %s)\n", yes(w->admitted), w->phase);
  if (w->placed)
    fprintf(out, "Placed:       yes\n");
  else if (w->after_eviction)
    fprintf(out, "Placed:       once the victims below are gone (pipelined)\n");
  else
    fprintf(out, "Placed:       no\n");
  print_tasks(out, w);
  print_victims(out, w);
  if (w->why_pending)
    fprintf(out, "Why Pending:  %s\n", w->why_pending);
  for (size_t i = 0; i < w->ntasks; i++)
    if (w->tasks[i].why)
      fprintf(out, "  %s: %s\n", w->tasks[i].name, w->tasks[i].why);
  print_nodes(out, w);
  if (w->session_s > 0)
    fprintf(out, "Took:         %.3f s\n", w->session_s);
}

static json_t *opt_str(const char *s) {
  return s ? json_string(s) : json_null();
}

static json_t *tasks_json(const vc_whatif *w) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < w->ntasks; i++) {
    const vc_whatif_task *t = &w->tasks[i];
    json_t *o = json_pack("{s:s,s:o,s:o,s:o}", "pod", t->name, "node", opt_str(t->node), "action",
                          opt_str(t->how), "why", opt_str(t->why));
    if (o && t->claims)
      json_object_set(o, "claims", t->claims);
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *victims_json(const vc_whatif *w) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < w->nvictims; i++) {
    const vc_whatif_victim *v = &w->victims[i];
    json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:s,s:i,s:s}", "job", v->job, "pod", v->pod,
                                       "node", v->node, "queue", v->queue, "priority", v->priority,
                                       "action", v->action));
  }
  return a;
}

static json_t *nodes_json(const vc_whatif *w) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < w->nnodes_reasons; i++)
    json_array_append_new(
        a, json_pack("{s:s,s:s}", "node", w->nodes[i].node, "reason", w->nodes[i].reason));
  return a;
}

json_t *vc_whatif_json(const vc_whatif *w) {
  json_t *o = json_pack(
      "{s:s,s:s,s:s,s:s,s:i,s:i,s:b,s:{s:i,s:i,s:i,s:i},s:o,s:s,s:b,s:b,s:b}", "job", w->job,
      "namespace", w->namespace, "podGroup", w->podgroup, "queue", w->queue, "priority",
      w->priority, "minMember", w->min_available, "atCapacity", w->at_capacity, "cluster", "nodes",
      w->nnodes, "pods", w->npods, "podGroups", w->npodgroups, "queues", w->nqueues,
      "controllerMessage", opt_str(w->controller_message), "phase", w->phase, "admitted",
      w->admitted, "placed", w->placed, "placedAfterEviction", w->after_eviction);
  if (o == NULL)
    return NULL;
  json_object_set_new(o, "tasks", tasks_json(w));
  json_object_set_new(o, "victims", victims_json(w));
  json_object_set_new(o, "reason", opt_str(w->reason));
  json_object_set_new(o, "message", opt_str(w->message));
  json_object_set_new(o, "whyPending", opt_str(w->why_pending));
  json_object_set_new(o, "nodeReasonsFor", opt_str(w->reasons_task));
  json_object_set_new(o, "nodeReasons", nodes_json(w));
  return o;
}
