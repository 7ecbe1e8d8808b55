/* extender (Volcano pkg/scheduler/plugins/extender): hands scheduling decisions to an HTTP
 * server. Each configured verb is POSTed as JSON to <extender.urlPrefix>/<verb>:
 *   extender.onSessionOpenVerb   the session's jobs, nodes and queues; when the call fails
 *                                and the extender is not ignorable, no other hook is set;
 *   extender.onSessionCloseVerb  {} at close;
 *   extender.predicateVerb       {"task", "node"} per node -> {"errorMessage"}: a non-empty
 *                                message fails the node with that message;
 *   extender.prioritizeVerb      {"task", "nodes"} -> {"nodeScore": {node: score},
 *                                "errorMessage"} added to the node order (batch);
 *   extender.preemptableVerb, extender.reclaimableVerb
 *                                {"evictor", "evictees"} -> {"status", "victims"};
 *   extender.jobEnqueueableVerb  {"job"} -> {"status"} (1 permit, 0 abstain, -1 reject);
 *   extender.queueOverusedVerb   {"queue"} -> {"overused"};
 *   extender.jobReadyVerb        {"job"} -> {"status": bool}.
 * As in Volcano, the job-enqueueable and queue-overused requests go to the reclaimable
 * verb's path (so an extender written for Volcano sees the same requests).
 * extender.httpTimeout (Go duration, default 1s) bounds each call; extender.ignorable (default
 * false) makes a failed call pass (predicate, permit, not overused) instead of failing.
 *
 * The objects are Volcano's TaskInfo/NodeInfo/JobInfo/QueueInfo field names with the parts
 * Kiln's snapshot holds (a pod's metadata, node name, scheduler name and priority; a node's
 * metadata and resource accounting). The core does no I/O: the call goes through
 * sch_session_options.http, which the shell provides (a blocking POST on the session's worker
 * thread, so the loop is not held); without it every call fails as unreachable. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_log.h"
#include "kc_time.h"
#include "sch_framework.h"
#include "sch_match.h"

/* Volcano's TaskStatus values as Go encodes them (1 << iota from Pending). */
static const int volcano_status[SCH_TASK__COUNT] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

typedef struct ext_state {
  char url[512];
  int64_t timeout_ms;
  const char *open_verb, *close_verb, *predicate_verb, *prioritize_verb, *preemptable_verb,
      *reclaimable_verb, *overused_verb, *enqueueable_verb, *ready_verb;
  bool ignorable;
  const sch_http *http;
} ext_state;

/* ---- JSON of the snapshot's objects ---- */

static json_t *res_json(const sch_snapshot *snap, const sch_resource *r) {
  json_t *sc = json_object();
  for (int i = 0; i < snap->nscalars && i < SCH_MAX_SCALARS; i++)
    if (r->scalar[i] && snap->scalar_names[i])
      json_object_set_new(sc, snap->scalar_names[i], json_real((double)r->scalar[i]));
  return json_pack("{s:f, s:f, s:o}", "MilliCPU", (double)r->milli_cpu, "Memory", (double)r->memory,
                   "ScalarResources", sc);
}

static json_t *pod_labels(const Kiln__Pod *p) {
  json_t *o = json_object();
  const char *d = (const char *)p->packed_labels.data, *end = d + p->packed_labels.len;
  while (d && d < end) {
    const char *k = d, *v = k + strlen(k) + 1;
    if (v >= end)
      break;
    json_object_set_new(o, k, json_string(v));
    d = v + strlen(v) + 1;
  }
  return o;
}

static json_t *task_json(const sch_snapshot *snap, const sch_task *t) {
  const Kiln__Pod *p = t->pod;
  const char *node = t->node >= 0 ? snap->nodes[t->node].name : "";
  json_t *pod =
      json_pack("{s:{s:s, s:s, s:s, s:o}, s:{s:s, s:s, s:i}}", "metadata", "name", p->name,
                "namespace", p->namespace_, "uid", p->uid, "labels", pod_labels(p), "spec",
                "nodeName", node, "schedulerName", p->scheduler_name, "priority", (int)t->priority);
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:o, s:o, s:o}", "UID", p->uid, "Job",
                   t->job >= 0 ? snap->jobs[t->job].key : "", "Name", p->name, "Namespace",
                   p->namespace_, "TaskRole", p->task_name, "NodeName", node, "Status",
                   volcano_status[t->status], "Priority", (int)t->priority, "Resreq",
                   res_json(snap, &t->resreq), "InitResreq", res_json(snap, &t->init_resreq), "Pod",
                   pod);
}

static json_t *node_json(const sch_snapshot *snap, const sch_node *n) {
  json_t *labels = json_object();
  for (size_t i = 0; i < n->node->n_labels; i++)
    json_object_set_new(labels, n->node->labels[i]->key, json_string(n->node->labels[i]->value));
  return json_pack("{s:s, s:{s:{s:s, s:o}}, s:o, s:o, s:o, s:o, s:o, s:o}", "Name", n->name, "Node",
                   "metadata", "name", n->name, "labels", labels, "Idle", res_json(snap, &n->idle),
                   "Used", res_json(snap, &n->used), "Releasing", res_json(snap, &n->releasing),
                   "Pipelined", res_json(snap, &n->pipelined), "Allocatable",
                   res_json(snap, &n->allocatable), "Capability", res_json(snap, &n->capability));
}

static json_t *job_json(const sch_snapshot *snap, const sch_job *j) {
  return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:s}", "UID", j->key, "Name", j->name,
                   "Namespace", j->namespace, "Queue",
                   j->queue >= 0 ? snap->queues[j->queue].name : "", "MinAvailable",
                   (int)j->min_available, "Priority", (int)j->priority, "PodGroupPhase",
                   sch_pg_phase_str(j->phase));
}

static json_t *queue_json(const sch_queue *q) {
  return json_pack("{s:s, s:s, s:i}", "UID", q->name, "Name", q->name, "Weight", (int)q->weight);
}

/* ---- the call ---- */

/* POSTs body (stolen) to the verb; *out (may be NULL) gets the parsed answer (new). 0, or a
 * negative code with a message in err. */
static int send_verb(const ext_state *st, const char *verb, json_t *body, json_t **out, char *err,
                     size_t errlen) {
  char url[1024];
  snprintf(url, sizeof(url), "%s/%s", st->url, verb);
  char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (text == NULL) {
    snprintf(err, errlen, "cannot encode the %s request", verb);
    return KC_ENOMEM;
  }
  char *resp = NULL;
  size_t resp_len = 0;
  int status = st->http && st->http->post
                   ? st->http->post(st->http->ctx, url, text, strlen(text), st->timeout_ms, &resp,
                                    &resp_len, err, errlen)
                   : KC_EUNAVAILABLE;
  free(text);
  if (status < 0) {
    if (!st->http)
      snprintf(err, errlen, "no HTTP client for the extender at URL %.200s", url);
    free(resp);
    return status;
  }
  if (status != 200) {
    snprintf(err, errlen, "failed %.40s with extender at URL %.120s, code %d", verb, url, status);
    free(resp);
    return KC_EINVAL;
  }
  int rc = 0;
  if (out) {
    json_error_t je;
    *out = json_loadb(resp ? resp : "", resp_len, 0, &je);
    if (*out == NULL) {
      snprintf(err, errlen, "%s", je.text);
      rc = KC_EINVAL;
    }
  }
  free(resp);
  return rc;
}

/* ---- hooks ---- */

static int ext_predicate(sch_session *ssn, void *ctx, const sch_task *t, const sch_node *n,
                         sch_fit *why) {
  ext_state *st = ctx;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  json_t *resp = NULL;
  char err[256] = "";
  int rc =
      send_verb(st, st->predicate_verb,
                json_pack("{s:o, s:o}", "task", task_json(snap, t), "node", node_json(snap, n)),
                &resp, err, sizeof(err));
  if (rc < 0) {
    KC_WARN("Predicate failed with error %s", err);
    if (st->ignorable)
      return SCH_FIT;
    sch_fit_add(why, sch_session_reason(ssn, err));
    return SCH_UNSCHEDULABLE;
  }
  const char *msg = json_string_value(json_object_get(resp, "errorMessage"));
  int verdict = SCH_FIT;
  if (msg && *msg) {
    sch_fit_add(why, sch_session_reason(ssn, msg));
    verdict = SCH_UNSCHEDULABLE;
  }
  json_decref(resp);
  return verdict;
}

static void ext_prioritize(sch_session *ssn, void *ctx, const sch_task *t, const int32_t *nodes,
                           size_t n, double *scores) {
  ext_state *st = ctx;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  json_t *arr = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(arr, node_json(snap, &snap->nodes[nodes[i]]));
  json_t *resp = NULL;
  char err[256] = "";
  if (send_verb(st, st->prioritize_verb,
                json_pack("{s:o, s:o}", "task", task_json(snap, t), "nodes", arr), &resp, err,
                sizeof(err)) < 0) {
    KC_WARN("Prioritize failed with error %s", err);
    return;
  }
  json_t *ns = json_object_get(resp, "nodeScore");
  const char *msg = json_string_value(json_object_get(resp, "errorMessage"));
  if ((msg && *msg) || !json_is_object(ns))
    KC_WARN("Prioritize failed with error %s", msg ? msg : "no nodeScore");
  else
    for (size_t i = 0; i < n; i++) {
      json_t *v = json_object_get(ns, snap->nodes[nodes[i]].name);
      if (json_is_number(v))
        scores[i] += json_number_value(v);
    }
  json_decref(resp);
}

/* Preemptable and reclaimable: the victims the extender names (by UID) among the candidates. */
static bool ext_victims(sch_session *ssn, ext_state *st, const char *verb, const sch_task *ev,
                        const int32_t *cands, size_t n, int32_t *victims, size_t *nvictims) {
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  json_t *arr = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(arr, task_json(snap, &snap->tasks[cands[i]]));
  json_t *resp = NULL;
  char err[256] = "";
  *nvictims = 0;
  if (send_verb(st, verb, json_pack("{s:o, s:o}", "evictor", task_json(snap, ev), "evictees", arr),
                &resp, err, sizeof(err)) < 0) {
    KC_WARN("%s failed with error %s", verb, err);
    return true; /* Volcano: no victims, Permit when ignorable, else Reject */
  }
  json_int_t status = json_integer_value(json_object_get(resp, "status"));
  json_t *v = json_object_get(resp, "victims");
  for (size_t i = 0; i < n && json_is_array(v); i++) {
    size_t k;
    json_t *it;
    json_array_foreach(v, k, it) {
      const char *uid = json_string_value(json_object_get(it, "UID"));
      if (uid && strcmp(uid, snap->tasks[cands[i]].pod->uid) == 0) {
        victims[(*nvictims)++] = cands[i];
        break;
      }
    }
  }
  json_decref(resp);
  return status != 0 || *nvictims > 0;
}

static bool ext_preemptable(sch_session *ssn, void *ctx, const sch_task *ev, const int32_t *cands,
                            size_t n, int32_t *victims, size_t *nvictims) {
  ext_state *st = ctx;
  return ext_victims(ssn, st, st->preemptable_verb, ev, cands, n, victims, nvictims);
}

static bool ext_reclaimable(sch_session *ssn, void *ctx, const sch_task *ev, const int32_t *cands,
                            size_t n, int32_t *victims, size_t *nvictims) {
  ext_state *st = ctx;
  return ext_victims(ssn, st, st->reclaimable_verb, ev, cands, n, victims, nvictims);
}

static int ext_enqueueable(sch_session *ssn, void *ctx, const sch_job *j) {
  ext_state *st = ctx;
  json_t *resp = NULL;
  char err[256] = "";
  if (send_verb(st, st->reclaimable_verb,
                json_pack("{s:o}", "job", job_json(sch_session_snapshot(ssn), j)), &resp, err,
                sizeof(err)) < 0) {
    KC_WARN("JobEnqueueable failed with error %s", err);
    return st->ignorable ? SCH_PERMIT : SCH_REJECT;
  }
  json_int_t status = json_integer_value(json_object_get(resp, "status"));
  json_decref(resp);
  return status > 0 ? SCH_PERMIT : status < 0 ? SCH_REJECT : SCH_ABSTAIN;
}

static bool ext_overused(sch_session *ssn, void *ctx, const sch_queue *q) {
  (void)ssn;
  ext_state *st = ctx;
  json_t *resp = NULL;
  char err[256] = "";
  if (send_verb(st, st->reclaimable_verb, json_pack("{s:o}", "queue", queue_json(q)), &resp, err,
                sizeof(err)) < 0) {
    KC_WARN("QueueOverused failed with error %s", err);
    return !st->ignorable;
  }
  bool over = json_is_true(json_object_get(resp, "overused"));
  json_decref(resp);
  return over;
}

static bool ext_ready(sch_session *ssn, void *ctx, const sch_job *j) {
  ext_state *st = ctx;
  json_t *resp = NULL;
  char err[256] = "";
  if (send_verb(st, st->ready_verb,
                json_pack("{s:o}", "job", job_json(sch_session_snapshot(ssn), j)), &resp, err,
                sizeof(err)) < 0) {
    KC_WARN("JobReady failed with error %s", err);
    return !st->ignorable;
  }
  bool ready = json_is_true(json_object_get(resp, "status"));
  json_decref(resp);
  return ready;
}

/* ---- session ---- */

static json_t *open_request(const sch_snapshot *snap) {
  json_t *jobs = json_object(), *nodes = json_object(), *queues = json_object();
  for (int32_t i = 0; i < snap->njobs; i++)
    json_object_set_new(jobs, snap->jobs[i].key, job_json(snap, &snap->jobs[i]));
  for (int32_t i = 0; i < snap->nnodes; i++)
    json_object_set_new(nodes, snap->nodes[i].name, node_json(snap, &snap->nodes[i]));
  for (int32_t i = 0; i < snap->nqueues; i++)
    json_object_set_new(queues, snap->queues[i].name, queue_json(&snap->queues[i]));
  return json_pack("{s:o, s:o, s:o, s:{}, s:{}}", "Jobs", jobs, "Nodes", nodes, "Queues", queues,
                   "NamespaceInfo", "RevocableNodes");
}

static const char *verb(const sch_args *a, const char *key) {
  const char *v = sch_args_get(a, key);
  return v && *v ? v : NULL;
}

static void ext_parse(ext_state *st, const sch_args *a) {
  const char *prefix = sch_args_get(a, "extender.urlPrefix");
  snprintf(st->url, sizeof(st->url), "%s", prefix ? prefix : "");
  for (size_t len = strlen(st->url); len > 0 && st->url[len - 1] == '/'; len--)
    st->url[len - 1] = '\0';
  st->open_verb = verb(a, "extender.onSessionOpenVerb");
  st->close_verb = verb(a, "extender.onSessionCloseVerb");
  st->predicate_verb = verb(a, "extender.predicateVerb");
  st->prioritize_verb = verb(a, "extender.prioritizeVerb");
  st->preemptable_verb = verb(a, "extender.preemptableVerb");
  st->reclaimable_verb = verb(a, "extender.reclaimableVerb");
  st->overused_verb = verb(a, "extender.queueOverusedVerb");
  st->enqueueable_verb = verb(a, "extender.jobEnqueueableVerb");
  st->ready_verb = verb(a, "extender.jobReadyVerb");
  st->ignorable = sch_args_bool(a, "extender.ignorable", false);
  st->timeout_ms = 1000;
  const char *t = sch_args_get(a, "extender.httpTimeout");
  int64_t ns;
  if (t && *t && kc_go_duration(t, &ns, NULL, 0) == 0)
    st->timeout_ms = ns / 1000000 > 0 ? ns / 1000000 : 1;
}

static int ext_register(sch_session *ssn, ext_state *st) {
  int rc = 0;
  if (st->predicate_verb)
    rc = sch_add_predicate_fn(ssn, ext_predicate, st);
  if (rc == 0 && st->prioritize_verb)
    rc = sch_add_batch_node_order_fn(ssn, ext_prioritize, st);
  if (rc == 0 && st->preemptable_verb)
    rc = sch_add_preemptable_fn(ssn, ext_preemptable, st);
  if (rc == 0 && st->reclaimable_verb)
    rc = sch_add_reclaimable_fn(ssn, ext_reclaimable, st);
  if (rc == 0 && st->enqueueable_verb)
    rc = sch_add_job_enqueueable_fn(ssn, ext_enqueueable, st);
  if (rc == 0 && st->overused_verb)
    rc = sch_add_overused_fn(ssn, ext_overused, st);
  if (rc == 0 && st->ready_verb)
    rc = sch_add_job_ready_fn(ssn, ext_ready, st);
  return rc;
}

static int ext_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  ext_state *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return KC_ENOMEM;
  *state = st;
  ext_parse(st, &conf->args);
  st->http = sch_session_opts(ssn)->http;
  KC_V(4, "Initialize extender plugin with endpoint address %s", st->url);
  if (st->open_verb) {
    char err[256] = "";
    int rc = send_verb(st, st->open_verb, open_request(sch_session_snapshot(ssn)), NULL, err,
                       sizeof(err));
    if (rc < 0) {
      KC_WARN("OnSessionOpen failed with error %s", err);
      if (!st->ignorable)
        return 0;
    }
  }
  return ext_register(ssn, st);
}

static void ext_close(sch_session *ssn, void *state) {
  (void)ssn;
  ext_state *st = state;
  if (st && st->close_verb) {
    char err[256] = "";
    if (send_verb(st, st->close_verb, json_object(), NULL, err, sizeof(err)) < 0)
      KC_WARN("OnSessionClose failed with error %s", err);
  }
  free(st);
}

const sch_plugin sch_plugin_extender = {
    .name = "extender",
    .open = ext_open,
    .close = ext_close,
};
