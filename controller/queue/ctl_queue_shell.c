/* queue-controller: Volcano's pkg/controllers/queue. Informers on Queues, PodGroups and
 * Commands feed one work queue of requests "<Action>/<queue>" and "cmd/<ns>/<name>"; the
 * decisions are ctl_queue_decide (ctl_queue_core.c); this file builds its view and carries
 * its plan out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"
#include "ctl_queue.h"
#include "kc_error.h"
#include "kc_log.h"
#include "kc_metrics.h"
#include "kc_quantity.h"
#include "kc_str.h"
#include "kc_strmap.h"

#define FIELD_MANAGER   "queue-controller"
#define KEY_MAX         600
/* A status whose only change is in the PodGroup counts is written at most this often per
 * queue (state changes are written at once): a burst of Jobs moving through their phases
 * costs one queue write per second, not one per PodGroup transition. */
#define COUNTS_BATCH_NS (1000ull * 1000000ull)

enum { INF_QUEUES = 0, INF_PODGROUPS, INF_COMMANDS, INF_N };

typedef struct {
  ctl_base base;        /* first: the handlers' ud is the base */
  kc_strmap last_write; /* queue -> uint64_t* when its status was last written */
  kc_strmap tree_said;  /* queue -> the tree problem last reported (owned), while it lasts */
  kc_metric *m_pg[CTL_QC_COUNT]; /* volcano_queue_pod_group_<phase>_count */
} queue_ctl;

/* A PodGroup as this controller keeps it. */
typedef struct {
  char queue[CTL_QUEUE_NAME_MAX];
  char phase[16];
  int slot; /* ctl_queue_count_of(phase), once: every sync of its queue counts it */
} qpg;

/* A Command as this controller keeps it; only those targeting a Queue are acted on. */
typedef struct {
  char ns[254], name[254], uid[64], action[64], target[CTL_QUEUE_NAME_MAX];
  bool for_queue;
} qcmd;

/* QueueStatus' PodGroup counts, in ctl_queue_count's order: the status fields and the metric
 * names. */
static const char *const count_fields[CTL_QC_COUNT] = {"pending", "running", "unknown", "inqueue",
                                                       "completed"};

static void copy(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

/* ---- decoders and handlers ---- */

static void *decode_pg(json_t *obj, void *ud, char *err, size_t errlen) {
  qpg *p = calloc(1, sizeof(*p));
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  const char *q = ctl_json_str(obj, "spec", "queue");
  copy(p->queue, sizeof(p->queue), q && *q ? q : "default");
  copy(p->phase, sizeof(p->phase), ctl_json_str(obj, "status", "phase"));
  p->slot = ctl_queue_count_of(p->phase);
  return p;
}

static void *decode_cmd(json_t *obj, void *ud, char *err, size_t errlen) {
  qcmd *c = calloc(1, sizeof(*c));
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  copy(c->ns, sizeof(c->ns), ctl_json_str(obj, "metadata", "namespace"));
  copy(c->name, sizeof(c->name), ctl_json_str(obj, "metadata", "name"));
  copy(c->uid, sizeof(c->uid), ctl_json_str(obj, "metadata", "uid"));
  copy(c->action, sizeof(c->action), json_string_value(json_object_get(obj, "action")));
  const char *kind = ctl_json_str(obj, "target", "kind");
  const char *av = ctl_json_str(obj, "target", "apiVersion");
  const char *target = ctl_json_str(obj, "target", "name");
  /* Volcano's IsQueueReference. */
  c->for_queue = kind && strcmp(kind, "Queue") == 0 && av &&
                 strcmp(av, "scheduling.volcano.sh/v1beta1") == 0 && target && *target;
  copy(c->target, sizeof(c->target), target);
  return c;
}

static int index_pg_queue(const void *obj, kc_index_out *out, void *ud) {
  return kc_index_out_add(out, ((const qpg *)obj)->queue);
}

static void request(ctl_base *b, const char *queue, ctl_queue_action a) {
  char key[KEY_MAX];
  if ((size_t)snprintf(key, sizeof(key), "%s/%s", ctl_queue_action_name(a), queue) < sizeof(key))
    ctl_base_add(b, key);
}

static void on_queue_add(const char *key, void *obj, void *ud) {
  request(ud, key, CTL_QA_SYNC);
}

/* Volcano acts on a queue's update only through Commands and the parent's own sync, which
 * requests its children's OpenQueue/CloseQueue once, from what its cache holds at that moment.
 * The queue and Command informers are separate streams, so that moment can come before the
 * cache has the child's closed-by-parent mark or the parent's new state, and the one request
 * is then lost. Here a change of a queue's state, parent or mark also syncs the queue, and a
 * change of its state syncs its children: their sync reaches the same decision
 * (sync_hierarchy) from the settled cache. */
static const char *queue_mark(const json_t *q) {
  const json_t *ann = json_object_get(json_object_get(q, "metadata"), "annotations");
  return json_string_value(json_object_get(ann, CTL_QUEUE_CLOSED_BY_PARENT));
}

/* capability, deserved or guarantee changed: the tree rules (report_tree) of the queue, its
 * children and its siblings are to be checked again. */
static bool resources_changed(const json_t *o, const json_t *n) {
  static const char *const fields[] = {"capability", "deserved", "guarantee"};
  const json_t *os = json_object_get(o, "spec"), *ns = json_object_get(n, "spec");
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
    const json_t *a = json_object_get(os, fields[i]), *b = json_object_get(ns, fields[i]);
    if ((a || b) && !(a && b && json_equal(a, b)))
      return true;
  }
  return false;
}

static void resync_near(ctl_base *b, const char *key, const json_t *q) {
  const char *parent = ctl_json_str(q, "spec", "parent");
  kc_store_iter it;
  const char *k;
  void *o;
  kc_store_iter_init(ctl_base_store(b, INF_QUEUES), &it);
  while (kc_store_iter_next(&it, &k, &o)) {
    const char *op = ctl_json_str(o, "spec", "parent");
    if (strcmp(k, key) != 0 && op && (strcmp(op, key) == 0 || (parent && strcmp(op, parent) == 0)))
      request(b, k, CTL_QA_SYNC);
  }
}

static void on_queue_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  const json_t *o = old_obj, *n = new_obj;
  if (resources_changed(o, n)) {
    request(ud, key, CTL_QA_SYNC);
    resync_near(ud, key, n);
  }
  bool state = !kc_str_eq(ctl_json_str(o, "status", "state"), ctl_json_str(n, "status", "state"));
  if (state || !kc_str_eq(ctl_json_str(o, "spec", "parent"), ctl_json_str(n, "spec", "parent")) ||
      !kc_str_eq(queue_mark(o), queue_mark(n)))
    request(ud, key, CTL_QA_SYNC);
  if (!state)
    return;
  kc_store_iter it;
  const char *k;
  void *q;
  kc_store_iter_init(ctl_base_store(ud, INF_QUEUES), &it);
  while (kc_store_iter_next(&it, &k, &q))
    if (kc_str_eq(ctl_json_str(q, "spec", "parent"), key) && strcmp(k, key) != 0)
      request(ud, k, CTL_QA_SYNC);
}

/* A queue gone: its children now name a missing parent (report_tree). */
static void on_queue_delete(const char *key, void *obj, void *ud) {
  resync_near(ud, key, NULL);
}

static void on_pg_add(const char *key, void *obj, void *ud) {
  request(ud, ((qpg *)obj)->queue, CTL_QA_SYNC);
}

static void on_pg_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  const qpg *o = old_obj, *n = new_obj;
  if (strcmp(o->queue, n->queue) != 0)
    request(ud, o->queue, CTL_QA_SYNC);
  if (strcmp(o->queue, n->queue) != 0 || strcmp(o->phase, n->phase) != 0)
    request(ud, n->queue, CTL_QA_SYNC);
}

static void on_cmd_add(const char *key, void *obj, void *ud) {
  const qcmd *c = obj;
  char k[KEY_MAX];
  if (c->for_queue && (size_t)snprintf(k, sizeof(k), "cmd/%s", key) < sizeof(k))
    ctl_base_add(ud, k);
}

static void sync_queue(const char *key, void *obj, void *ud) {
  (void)obj;
  request(ud, key, CTL_QA_SYNC);
}

/* Every queue starts with a sync (the add handlers ran before the caches synced). */
static void all_synced(ctl_base *b) {
  ctl_base_each(b, INF_QUEUES, sync_queue);
  ctl_base_each(b, INF_COMMANDS, on_cmd_add);
}

static const ctl_inf_def defs[INF_N] = {
    [INF_QUEUES] = {"scheduling.volcano.sh", "v1beta1", "queues", NULL, NULL, NULL, on_queue_add,
                    on_queue_update, on_queue_delete},
    [INF_PODGROUPS] = {"scheduling.volcano.sh", "v1beta1", "podgroups", NULL, decode_pg, free,
                       on_pg_add, on_pg_update, on_pg_add},
    [INF_COMMANDS] = {"bus.volcano.sh", "v1alpha1", "commands", NULL, decode_cmd, free, on_cmd_add,
                      NULL, NULL},
};

/* ---- the view ---- */

static ctl_queue_ref ref_of(const json_t *q) {
  const json_t *ann = json_object_get(json_object_get(q, "metadata"), "annotations");
  const char *state = ctl_json_str(q, "status", "state");
  const char *parent = ctl_json_str(q, "spec", "parent");
  return (ctl_queue_ref){.name = ctl_json_str(q, "metadata", "name"),
                         .state = state ? state : "",
                         .parent = parent ? parent : "",
                         .closed_by_parent =
                             json_string_value(json_object_get(ann, CTL_QUEUE_CLOSED_BY_PARENT))};
}

typedef struct {
  ctl_queue_view v;
  ctl_queue_ref parent;
  ctl_queue_ref *children;
} view_buf;

static int build_view(ctl_base *b, const json_t *q, view_buf *vb) {
  memset(vb, 0, sizeof(*vb));
  ctl_queue_view *v = &vb->v;
  v->q = ref_of(q);
  const json_t *st = json_object_get(q, "status");
  /* Volcano's QueueStatus omits a zero count (omitempty), so an absent count is 0; one that
   * is there but not a number makes the status be written again. */
  v->has_status_counts = true;
  for (int i = 0; i < CTL_QC_COUNT; i++) {
    const json_t *n = json_object_get(st, count_fields[i]);
    v->has_status_counts = v->has_status_counts && (!n || json_is_integer(n));
    v->status_counts[i] = (int32_t)json_integer_value(n);
  }
  kc_store_iter it;
  const char *k;
  void *o;
  if (kc_store_index_iter(ctl_base_store(b, INF_PODGROUPS), "queue", v->q.name, &it) == 0)
    while (kc_store_iter_next(&it, &k, &o)) {
      int slot = ((qpg *)o)->slot;
      if (slot >= 0)
        v->counts[slot]++;
      v->npodgroups++;
    }
  kc_store *queues = ctl_base_store(b, INF_QUEUES);
  /* The parent the queue will have once synced: root when it names none. */
  const char *pname = *v->q.parent ? v->q.parent : CTL_QUEUE_ROOT;
  const json_t *pq = strcmp(v->q.name, CTL_QUEUE_ROOT) != 0 ? kc_store_get(queues, pname) : NULL;
  if (pq) {
    vb->parent = ref_of(pq);
    v->parent = &vb->parent;
  }
  size_t n = kc_store_len(queues), nk = 0;
  if (n && !(vb->children = calloc(n, sizeof(*vb->children))))
    return KC_ENOMEM;
  kc_store_iter_init(queues, &it);
  while (kc_store_iter_next(&it, &k, &o)) {
    ctl_queue_ref r = ref_of(o);
    if (strcmp(r.parent, v->q.name) == 0 && strcmp(r.name, v->q.name) != 0)
      vb->children[nk++] = r;
  }
  v->children = vb->children;
  v->nchildren = nk;
  return 0;
}

/* ---- the queue tree rules that need other queues ---- */

static void qres_of(const json_t *list, ctl_qres *out) {
  const char *k;
  json_t *v;
  out->n = 0;
  json_object_foreach((json_t *)list, k, v) {
    char num[32];
    const char *text = json_string_value(v);
    if (!text && json_is_integer(v)) {
      snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
      text = num;
    }
    kc_quantity q;
    if (out->n == CTL_QRES_MAX || !text || kc_quantity_parse(text, &q, NULL) != 0)
      continue;
    out->r[out->n].name = k;
    out->r[out->n++].milli = kc_quantity_milli(&q);
  }
}

static ctl_qnode node_of(const json_t *q) {
  const json_t *spec = json_object_get(q, "spec");
  ctl_qnode n = {.name = ctl_json_str(q, "metadata", "name")};
  qres_of(json_object_get(spec, "capability"), &n.capability);
  qres_of(json_object_get(spec, "deserved"), &n.deserved);
  qres_of(json_object_get(json_object_get(spec, "guarantee"), "resource"), &n.guarantee);
  return n;
}

static bool under_root(const char *parent) {
  return !parent || !*parent || strcmp(parent, CTL_QUEUE_ROOT) == 0;
}

/* The first tree rule q breaks (ctl_queue_tree_problem), or false. */
static bool tree_problem(ctl_base *b, const json_t *q, char *msg, size_t len) {
  kc_store *queues = ctl_base_store(b, INF_QUEUES);
  ctl_qnode self = node_of(q);
  const char *parent = ctl_json_str(q, "spec", "parent");
  ctl_queue_tree_view v = {.self = &self, .parent = parent ? parent : ""};
  if (under_root(parent) || !self.name)
    return false;
  size_t n = kc_store_len(queues);
  ctl_qnode *anc = calloc(n + 1, sizeof(*anc)), *sib = calloc(n + 1, sizeof(*sib));
  bool found = false;
  if (anc && sib) {
    const char *cur = parent;
    v.parent_missing = kc_store_get(queues, parent) == NULL;
    while (!under_root(cur) && !v.parent_missing) {
      const json_t *pq = kc_store_get(queues, cur);
      if (!pq)
        break;
      if (strcmp(cur, self.name) == 0 || v.nancestors == n) {
        v.cycle = true;
        break;
      }
      anc[v.nancestors++] = node_of(pq);
      cur = ctl_json_str(pq, "spec", "parent");
    }
    kc_store_iter it;
    const char *k;
    void *o;
    kc_store_iter_init(queues, &it);
    while (kc_store_iter_next(&it, &k, &o)) {
      const char *op = ctl_json_str(o, "spec", "parent");
      if (op && strcmp(op, parent) == 0 && strcmp(k, self.name) != 0)
        sib[v.nsiblings++] = node_of(o);
    }
    v.ancestors = anc;
    v.siblings = sib;
    found = ctl_queue_tree_problem(&v, msg, len);
  }
  free(anc);
  free(sib);
  return found;
}

/* A Warning on the queue when it breaks a tree rule, once per problem (Volcano's webhook
 * would have refused the change that made it). */
static void report_tree(queue_ctl *qc, const json_t *q, const char *name) {
  char msg[512];
  ctl_base *b = &qc->base;
  void *old = NULL;
  if (!tree_problem(b, q, msg, sizeof(msg))) {
    if (kc_strmap_del(&qc->tree_said, name, &old) == 0)
      free(old);
    return;
  }
  const char *said = kc_strmap_get(&qc->tree_said, name);
  if (said && strcmp(said, msg) == 0)
    return;
  KC_WARN("queue %s: %s", name, msg);
  kc_object_ref o = {.kind = "Queue", .name = name, .api_version = "scheduling.volcano.sh/v1beta1"};
  ctl_base_event(b, &o, KC_EVENT_WARNING, "InvalidHierarchy", "%s", msg);
  char *copy_msg = strdup(msg);
  if (copy_msg && kc_strmap_put(&qc->tree_said, name, copy_msg, &old) < 0)
    free(copy_msg);
  else
    free(old);
}

/* ---- carrying a plan out ---- */

/* One sync's writes; when the last answers, the key is done. */
typedef struct {
  queue_ctl *qc;
  char key[KEY_MAX];
  char queue[CTL_QUEUE_NAME_MAX];
  ctl_queue_action action;
  char old_state[16];
  ctl_queue_plan plan;
  int pending, err;
  bool status_failed;
  char status_msg[512];
} run;

static void give_up(ctl_base *b, const char *key, int err) {
  const char *slash = strchr(key, '/');
  if (!slash || strncmp(key, "cmd/", 4) == 0)
    return;
  /* Volcano handleQueueErr: a Warning named after the action once the retries are spent. */
  char action[32];
  snprintf(action, sizeof(action), "%.*s", (int)(slash - key), key);
  kc_object_ref o = {
      .kind = "Queue", .name = slash + 1, .api_version = "scheduling.volcano.sh/v1beta1"};
  ctl_base_event(b, &o, KC_EVENT_WARNING, action, "%s queue failed for %s", action,
                 kc_strerror(err));
}

static void run_finish(run *r) {
  ctl_base *b = &r->qc->base;
  const ctl_queue_plan *p = &r->plan;
  kc_object_ref o = {
      .kind = "Queue", .name = r->queue, .api_version = "scheduling.volcano.sh/v1beta1"};
  if (r->status_failed && p->fail_reason) {
    if (strcmp(p->fail_reason, "CloseQueue") == 0)
      ctl_base_event(b, &o, KC_EVENT_WARNING, p->fail_reason, "Close queue failed for %s",
                     r->status_msg);
    else
      ctl_base_event(b, &o, KC_EVENT_WARNING, p->fail_reason,
                     "Update queue status from %s to %s failed for %s", r->old_state, p->state,
                     r->status_msg);
  }
  if (r->err == 0) {
    if (p->state_changed) {
      KC_INFO("queue %s: %s -> %s (%s)", r->queue, *r->old_state ? r->old_state : "<none>",
              p->state, ctl_queue_action_name(r->action));
      if (p->event_reason)
        ctl_base_event(b, &o, KC_EVENT_NORMAL, p->event_reason, "%s", p->event_message);
    }
    for (size_t i = 0; i < p->nenqueue; i++)
      request(b, p->enqueue[i].queue, p->enqueue[i].action);
  }
  ctl_base_done(b, r->key, r->err, give_up);
  free(r);
}

static void write_done(ctl_base *b, const kc_api_result *res, void *ud) {
  run *r = ud;
  if (res->err && !r->err) {
    r->err = res->err;
    KC_WARN("queue %s: write failed: %s", r->queue, res->message);
  }
  if (--r->pending == 0)
    run_finish(r);
}

static void status_done(ctl_base *b, const kc_api_result *res, void *ud) {
  run *r = ud;
  if (res->err) {
    r->status_failed = true;
    copy(r->status_msg, sizeof(r->status_msg), res->message);
  } else {
    uint64_t *t = kc_strmap_get(&r->qc->last_write, r->queue);
    if (t ||
        ((t = malloc(sizeof(*t))) && kc_strmap_put(&r->qc->last_write, r->queue, t, NULL) >= 0))
      *t = uv_hrtime();
  }
  write_done(b, res, ud);
}

static void issue(run *r, kc_verb verb, const kc_ref *ref, const kc_query *q, json_t *body,
                  ctl_base_cb cb) {
  int rc = ctl_base_call(&r->qc->base, verb, ref, q, body, cb, r);
  if (rc) {
    if (!r->err)
      r->err = rc;
    return;
  }
  r->pending++;
}

/* The applied status: the state and the counts that are not zero. Volcano's QueueStatus omits
 * a zero count (omitempty); a count this manager applied before and leaves out now is removed
 * by the server-side apply, as Volcano's whole-status update removes it. */
static json_t *status_body(const char *queue, const ctl_queue_plan *p) {
  json_t *body =
      json_pack("{s:s,s:s,s:{s:s},s:{s:s}}", "apiVersion", "scheduling.volcano.sh/v1beta1", "kind",
                "Queue", "metadata", "name", queue, "status", "state", p->state);
  json_t *st = json_object_get(body, "status");
  for (int i = 0; st && i < CTL_QC_COUNT; i++)
    if (p->counts[i] && json_object_set_new(st, count_fields[i], json_integer(p->counts[i])) != 0) {
      json_decref(body);
      return NULL;
    }
  return body;
}

/* Counts-only changes wait for the batch period (see COUNTS_BATCH_NS). */
static bool defer_counts(queue_ctl *qc, run *r) {
  if (!r->plan.counts_only)
    return false;
  const uint64_t *t = kc_strmap_get(&qc->last_write, r->queue);
  uint64_t now = uv_hrtime();
  if (!t || now - *t >= COUNTS_BATCH_NS)
    return false;
  ctl_base_add_after(&qc->base, r->key, COUNTS_BATCH_NS - (now - *t));
  return true;
}

static void execute(run *r) {
  const ctl_queue_plan *p = &r->plan;
  r->pending = 1; /* held until every write is issued */
  kc_ref ref = {"scheduling.volcano.sh", "v1beta1", "queues", NULL, r->queue, NULL};
  if (p->set_parent_root) { /* Volcano updateQueueParent: a JSON patch adding spec.parent */
    json_t *patch =
        json_pack("[{s:s,s:s,s:s}]", "op", "add", "path", "/spec/parent", "value", CTL_QUEUE_ROOT);
    issue(r, KC_PATCH_JSON, &ref, NULL, patch, write_done);
    json_decref(patch);
  }
  for (size_t i = 0; i < p->nannotate; i++) {
    kc_ref aref = ref;
    aref.name = p->annotate[i].queue;
    json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations",
                              CTL_QUEUE_CLOSED_BY_PARENT, p->annotate[i].value);
    issue(r, KC_PATCH_MERGE, &aref, NULL, patch, write_done);
    json_decref(patch);
  }
  if (p->write_status && !defer_counts(r->qc, r)) {
    kc_ref sref = ref;
    sref.subresource = "status";
    kc_query q = {.field_manager = FIELD_MANAGER, .force = true};
    json_t *body = status_body(r->queue, p);
    if (body)
      issue(r, KC_APPLY, &sref, &q, body, status_done);
    else if (!r->err)
      r->err = KC_ENOMEM;
    json_decref(body);
  }
  if (--r->pending == 0)
    run_finish(r);
}

static void process_queue(queue_ctl *qc, const char *key, const char *slash) {
  ctl_base *b = &qc->base;
  const json_t *q = kc_store_get(ctl_base_store(b, INF_QUEUES), slash + 1);
  if (!q) { /* deleted */
    ctl_base_done(b, key, 0, NULL);
    return;
  }
  run *r = calloc(1, sizeof(*r));
  view_buf vb;
  int rc = r ? build_view(b, q, &vb) : KC_ENOMEM;
  if (rc) {
    free(r);
    ctl_base_done(b, key, rc, give_up);
    return;
  }
  report_tree(qc, q, slash + 1);
  r->qc = qc;
  copy(r->key, sizeof(r->key), key);
  copy(r->queue, sizeof(r->queue), slash + 1);
  char action[32];
  snprintf(action, sizeof(action), "%.*s", (int)(slash - key), key);
  r->action = ctl_queue_action_parse(action);
  copy(r->old_state, sizeof(r->old_state), vb.v.q.state);
  rc = ctl_queue_decide(&vb.v, r->action, &r->plan);
  free(vb.children);
  if (*r->plan.errmsg)
    KC_V(2, "queue %s: %s", r->queue, r->plan.errmsg);
  if (rc) {
    KC_WARN("sync queue %s failed for %s, action is %s", r->queue, r->plan.errmsg,
            ctl_queue_action_name(r->action));
    free(r);
    ctl_base_done(b, key, rc, give_up);
    return;
  }
  execute(r);
}

/* Volcano handleCommand: the Command is deleted first (at most once), then its action is
 * queued for the Queue it targets. */
typedef struct {
  char key[KEY_MAX];
  char queue[CTL_QUEUE_NAME_MAX];
  ctl_queue_action action;
} cmd_run;

static void cmd_deleted(ctl_base *b, const kc_api_result *res, void *ud) {
  cmd_run *c = ud;
  int err = res->err == KC_ENOTFOUND ? 0 : res->err;
  if (res->err == 0)
    request(b, c->queue, c->action);
  else if (err)
    KC_WARN("queue-controller: failed to delete command %s: %s", c->key + 4, res->message);
  ctl_base_done(b, c->key, err, NULL);
  free(c);
}

static void process_cmd(queue_ctl *qc, const char *key) {
  ctl_base *b = &qc->base;
  const qcmd *cmd = kc_store_get(ctl_base_store(b, INF_COMMANDS), key + 4);
  cmd_run *c = cmd ? calloc(1, sizeof(*c)) : NULL;
  if (!c) {
    ctl_base_done(b, key, cmd ? KC_ENOMEM : 0, NULL);
    return;
  }
  copy(c->key, sizeof(c->key), key);
  copy(c->queue, sizeof(c->queue), cmd->target);
  c->action = ctl_queue_action_parse(cmd->action);
  kc_ref ref = {"bus.volcano.sh", "v1alpha1", "commands", cmd->ns, cmd->name, NULL};
  kc_query q = {.precondition_uid = cmd->uid};
  int rc = ctl_base_call(b, KC_DELETE, &ref, &q, NULL, cmd_deleted, c);
  if (rc) {
    free(c);
    ctl_base_done(b, key, rc, NULL);
  }
}

static void process(ctl_base *b, const char *key) {
  queue_ctl *qc = (queue_ctl *)b;
  const char *slash = strchr(key, '/');
  if (strncmp(key, "cmd/", 4) == 0)
    process_cmd(qc, key);
  else if (slash)
    process_queue(qc, key, slash);
  else
    ctl_base_done(b, key, 0, NULL);
}

/* ---- metrics ---- */

/* Volcano's queue controller exports the PodGroups of each queue per phase; recomputed here
 * on every scrape from the caches, so a deleted PodGroup or queue never leaves a stale count. */
static void collect(kc_metrics *r, void *ud) {
  queue_ctl *qc = ud;
  kc_store *queues = ctl_base_store(&qc->base, INF_QUEUES);
  kc_store *pgs = ctl_base_store(&qc->base, INF_PODGROUPS);
  if (!queues || !pgs)
    return; /* stopped */
  kc_store_iter it;
  const char *k;
  void *o;
  kc_series *se;
  kc_store_iter_init(queues, &it);
  while (kc_store_iter_next(&it, &k, &o))
    for (int i = 0; i < CTL_QC_COUNT; i++)
      if (kc_metric_series(qc->m_pg[i], (const char *const[]){k}, &se) == 0)
        kc_gauge_set(se, 0);
  kc_store_iter_init(pgs, &it);
  while (kc_store_iter_next(&it, &k, &o)) {
    const qpg *p = o;
    int slot = p->slot;
    if (slot >= 0 && kc_metric_series(qc->m_pg[slot], (const char *const[]){p->queue}, &se) == 0)
      kc_gauge_add(se, 1);
  }
}

static int register_metrics(queue_ctl *qc, kc_metrics *m) {
  static const char *const labels[] = {"queue_name", NULL};
  int rc = 0;
  for (int i = 0; rc == 0 && i < CTL_QC_COUNT; i++) {
    char name[96], help[128];
    snprintf(name, sizeof(name), "volcano_queue_pod_group_%s_count", count_fields[i]);
    /* Volcano's help: "The number of Inqueue PodGroup in this queue". */
    snprintf(help, sizeof(help), "The number of %c%s PodGroup in this queue",
             count_fields[i][0] - 'a' + 'A', count_fields[i] + 1);
    rc = kc_metrics_gauge(m, name, help, labels, &qc->m_pg[i]);
  }
  return rc ? rc : kc_metrics_add_collector(m, collect, qc);
}

/* ---- the table entry ---- */

static int queue_init(const ctl_env *env, void **out) {
  queue_ctl *qc = calloc(1, sizeof(*qc));
  if (!qc)
    return KC_ENOMEM;
  kc_strmap_init(&qc->last_write, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&qc->tree_said, KC_STRMAP_COPY_KEYS);
  *out = qc;
  int rc =
      ctl_base_init(&qc->base, env, "queue-controller", defs, INF_N, env->workers_queue, process);
  if (rc == 0)
    rc =
        kc_store_add_index(ctl_base_store(&qc->base, INF_PODGROUPS), "queue", index_pg_queue, NULL);
  if (rc == 0 && env->metrics)
    rc = register_metrics(qc, env->metrics);
  qc->base.on_synced = all_synced;
  return rc;
}

static void free_owner(ctl_base *b) {
  queue_ctl *qc = (queue_ctl *)b;
  kc_strmap_close(&qc->last_write, free);
  kc_strmap_close(&qc->tree_said, free);
  free(qc);
}

static void queue_free(void *c) {
  if (!c)
    return;
  ctl_base *b = c;
  if (b->env.metrics && ((queue_ctl *)b)->m_pg[CTL_QC_COUNT - 1])
    kc_metrics_remove_collector(b->env.metrics, collect, b);
  KC_INFO("queue-controller stopped: %llu syncs, %llu writes (%llu failed)",
          (unsigned long long)b->syncs, (unsigned long long)b->writes,
          (unsigned long long)b->write_errors);
  ctl_base_close(b, free_owner);
}

const ctl_controller_def ctl_queue_controller = {
    .name = "queue-controller",
    .informers = "queues, podgroups, commands",
    .init = queue_init,
    .start = ctl_base_def_start,
    .synced = ctl_base_def_synced,
    .stop = ctl_base_def_stop,
    .free = queue_free,
};
