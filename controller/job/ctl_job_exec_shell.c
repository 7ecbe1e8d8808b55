/* The executor: see ctl_job_exec_shell.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_job_exec_shell.h"

#include "ctl_int.h"
#include "ctl_job_cache.h"
#include "ctl_overlay.h"
#include "ctl_write.h"
#include "kc_codec.h"
#include "kc_clock.h"
#include "kc_error.h"
#include "kc_events.h"
#include "kc_leader.h"
#include "kc_log.h"
#include "kc_pb.h"

#define KEY_MAX (2 * CTL_NAME_MAX)

typedef enum {
  ST_COMMANDS = 0,
  ST_JOB_PATCH,
  ST_CREATE_DEPS, /* PVCs, plugin objects, PodGroup */
  ST_POD_DELETE,
  ST_POD_CREATE,
  ST_STATUS,
  ST_CLEANUP, /* PodGroup and plugin objects delete */
  ST_FINISH,
} stage;

typedef struct {
  const ctl_exec_env *env;
  char key[KEY_MAX];
  char ns[CTL_NAME_MAX], name[CTL_NAME_MAX], uid[CTL_UID_MAX], rv[64];
  Kiln__Job *job; /* a copy for events after the store moved on */
  ctl_plan plan;
  stage st;
  int outstanding;
  size_t create_next;    /* the plan's next pod to create */
  int creates_in_flight; /* pod creations sent and not answered */
  int err;
  bool conflict, commands_ok;
  json_t *create_errors, *delete_errors; /* arrays of messages */
  ctl_exec_counts count;
} exec;

typedef struct {
  exec *x;
  ctl_write_kind kind;
  char name[CTL_NAME_MAX];
  char uid[CTL_UID_MAX];
  bool harmless_exists;   /* AlreadyExists is success */
  bool harmless_notfound; /* NotFound is success */
  bool windowed;          /* a pod creation of the window (stage_pod_create) */
  const json_t *body;     /* what was sent (the plan's), for the owner read of CTL_W_OBJ_CREATE */
  uint64_t sent_ns;
} call;

static void advance(exec *x);
static void send_creates(exec *x);

/* Pod creations in flight at once (stage_pod_create). */
#define CREATE_WINDOW 100

static uint64_t now_ns(void) {
  return uv_hrtime();
}

static void note_error(exec *x, int err, bool conflict) {
  if (!x->err)
    x->err = err;
  if (conflict)
    x->conflict = true;
}

static void call_done(call *c) {
  exec *x = c->x;
  free(c);
  if (--x->outstanding == 0)
    advance(x);
}

/* ---- the call layer ---- */

static void on_result(const kc_api_result *res, void *data);

/* The write fence: 0 or KC_ENOTLEADER. */
static int fence(const ctl_exec_env *env) {
  return env->leader ? kc_leader_fence(env->leader) : 0;
}

static int issue(exec *x, call *c, kc_verb verb, const kc_ref *ref, const kc_query *q,
                 json_t *body) {
  int rc = fence(x->env);
  if (rc == 0)
    rc = kc_api_call(x->env->client, verb, ref, q, body, on_result, c);
  return rc;
}

/* Starts a call owned by the stage; a call that cannot start counts as failed now. Returns
 * the call on its way, NULL when it could not start. */
static call *start(exec *x, ctl_write_kind kind, const char *name, kc_verb verb, const kc_ref *ref,
                   const kc_query *q, json_t *body, bool ok_exists, bool ok_notfound) {
  call *c = calloc(1, sizeof(*c));
  if (!c) {
    note_error(x, KC_ENOMEM, false);
    return NULL;
  }
  c->x = x;
  c->kind = kind;
  c->harmless_exists = ok_exists;
  c->harmless_notfound = ok_notfound;
  c->body = body;
  c->sent_ns = now_ns();
  snprintf(c->name, sizeof(c->name), "%s", name ? name : "");
  x->outstanding++;
  int rc = issue(x, c, verb, ref, q, body);
  if (rc) {
    KC_WARN("job %s: cannot write %s %s: %s", x->key, ref->resource, c->name, kc_strerror(rc));
    note_error(x, rc, false);
    x->outstanding--;
    free(c);
    return NULL;
  }
  return c;
}

static void append_msg(json_t **arr, const char *a, const char *b) {
  char buf[512];
  snprintf(buf, sizeof(buf), "pod %s: %s", a, b);
  if (!*arr)
    *arr = json_array();
  if (*arr)
    json_array_append_new(*arr, json_string(buf));
}

/* The Job a write returned, newer than the cache until the watch brings it. */
static void write_through_job(exec *x, const json_t *obj) {
  Kiln__Job *job = NULL;
  char e[128];
  if (!obj)
    return;
  if (kc_job_decode(obj, &job, e, sizeof(e)) == 0)
    ctl_write_through(x->env->jobs_written, x->key, job, uv_hrtime());
  else
    KC_V(2, "job %s: cannot decode the written Job: %s", x->key, e);
}

/* The Job's creation-to-pod latency, for the histogram. */
static void observe_latency(exec *x) {
  const ctl_exec_env *env = x->env;
  if (!env->m_latency || !x->job->metadata || !x->job->metadata->creation_timestamp)
    return;
  int64_t t;
  if (kc_time_parse(x->job->metadata->creation_timestamp, &t) != 0)
    return;
  kc_series *se;
  double ms = (double)(kc_clock_wall_ns() - t * 1000000000) / 1e6;
  if (kc_metric_series(env->m_latency, NULL, &se) == 0)
    kc_histogram_observe(se, ms < 0 ? 0 : ms);
}

static void count_result(ctl_exec_counts *st, ctl_write_count n) {
  switch (n) {
  case CTL_WCOUNT_POD_DELETED:
    st->pods_deleted++;
    break;
  case CTL_WCOUNT_POD_CREATED:
    st->pods_created++;
    break;
  case CTL_WCOUNT_POD_EXISTS:
    st->pods_create_exists++;
    break;
  case CTL_WCOUNT_STATUS:
    st->status_writes++;
    break;
  default:
    break;
  }
}

/* Keeps what the write returned ahead of the watch (obj borrowed, may be NULL). */
static void keep_written(exec *x, const call *c, ctl_write_keep k, const json_t *obj) {
  char pk[KEY_MAX];
  if (k == CTL_WKEEP_PG_DROP) {
    if (kc_store_key(pk, sizeof(pk), x->ns, c->name) == 0)
      ctl_written_drop(x->env->pgs_written, pk);
    return;
  }
  if (k == CTL_WKEEP_NONE || !obj)
    return;
  if (k == CTL_WKEEP_PG) {
    Kiln__PodGroup *pg = NULL;
    char e[128];
    if (kc_podgroup_decode(obj, &pg, e, sizeof(e)) == 0 &&
        kc_store_key(pk, sizeof(pk), x->ns, c->name) == 0)
      ctl_write_through(x->env->pgs_written, pk, pg, uv_hrtime());
    else
      kc_msg_free(pg);
    return;
  }
  if (k == CTL_WKEEP_JOB_RV) {
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (rv)
      snprintf(x->rv, sizeof(x->rv), "%s", rv);
  }
  write_through_job(x, obj);
}

static void apply_outcome(exec *x, const call *c, const ctl_write_outcome *o, const json_t *obj) {
  count_result(&x->count, o->count);
  if (o->latency)
    observe_latency(x);
  keep_written(x, c, o->keep, obj);
  if (o->expect_del)
    ctl_expect_del(x->env->expect, x->key, c->name);
}

static bool object_ref(const json_t *o, kc_ref *ref, char *group, size_t glen, char *ver,
                       size_t vlen);

/* Sends the follow-up the outcome asks for on the same call; 0 when it is on its way. */
static int follow_up(exec *x, call *c, ctl_write_next next) {
  if (next == CTL_WNEXT_OBJ_GET) {
    char g[128], v[32];
    kc_ref ref = {.namespace = x->ns, .name = c->name};
    kc_query q = {.accept = CTL_ACCEPT_METADATA};
    if (!object_ref(c->body, &ref, g, sizeof(g), v, sizeof(v)))
      return KC_EINVAL;
    c->kind = CTL_W_OBJ_OWNER;
    return issue(x, c, KC_GET, &ref, &q, NULL);
  }
  if (next == CTL_WNEXT_POD_DELETE) {
    kc_ref ref = {.version = "v1", .resource = "pods", .namespace = x->ns, .name = c->name};
    kc_query q = {.precondition_uid = c->uid[0] ? c->uid : NULL};
    c->kind = CTL_W_POD_DELETE;
    c->harmless_notfound = true;
    return issue(x, c, KC_DELETE, &ref, &q, NULL);
  }
  kc_ref ref = {.group = "batch.volcano.sh",
                .version = "v1alpha1",
                .resource = "jobs",
                .namespace = x->ns,
                .name = x->name};
  c->kind = CTL_W_JOB_GET;
  return issue(x, c, KC_GET, &ref, NULL, NULL);
}

static void report_failure(exec *x, const call *c, const ctl_write_outcome *o, const char *msg) {
  if (o->err == KC_ECONFLICT)
    KC_V(2, "job %s: write of %s: %s", x->key, c->name, msg);
  else if (o->err != KC_ECANCELED)
    KC_WARN("job %s: write of %s failed: %s (%s)", x->key, c->name, kc_strerror(o->err), msg);
  if (o->list == CTL_WLIST_CREATE)
    append_msg(&x->create_errors, c->name, msg);
  else if (o->list == CTL_WLIST_DELETE)
    append_msg(&x->delete_errors, c->name, msg);
  note_error(x, o->err, o->conflict);
}

/* A write's answer: the core decides (ctl_write_result), this carries it out. */
static void on_result(const kc_api_result *res, void *data) {
  call *c = data;
  exec *x = c->x;
  char why[1024];
  ctl_write_outcome o = c->kind == CTL_W_OBJ_OWNER
                            ? ctl_write_owner(res->err, res->obj, x->uid,
                                              json_string_value(json_object_get(c->body, "kind")),
                                              c->name, why, sizeof(why))
                            : ctl_write_result(c->kind, c->harmless_exists, c->harmless_notfound,
                                               res->err, x->env->stopping);
  if (o.in_the_way && !x->env->stopping)
    ctl_exec_record_event(x->env, x->job, CTL_EVENT_WARNING, CTL_REASON_IN_THE_WAY, why);
  apply_outcome(x, c, &o, res->obj);
  if (o.next != CTL_WNEXT_NONE) {
    if (o.next == CTL_WNEXT_JOB_GET) {
      KC_V(2, "job %s: status write: %s; reading the Job", x->key, res->message);
      note_error(x, o.err, o.conflict);
    }
    ctl_write_next next = o.next;
    int rc = follow_up(x, c, next);
    if (rc == 0)
      return;
    o = ctl_write_unsent(next, rc);
    apply_outcome(x, c, &o, NULL);
  }
  if (o.err)
    report_failure(x, c, &o, o.in_the_way ? why : res->message);
  if (c->windowed) {
    x->creates_in_flight--;
    send_creates(x); /* before call_done: the stage stays open while creations remain */
  }
  call_done(c);
}

/* ---- stages ---- */

/* The API path of an object the plugins create (apiVersion, kind). */
static bool object_ref(const json_t *o, kc_ref *ref, char *group, size_t glen, char *ver,
                       size_t vlen) {
  const char *av = json_string_value(json_object_get(o, "apiVersion"));
  const char *kind = json_string_value(json_object_get(o, "kind"));
  if (!av || !kind)
    return false;
  const char *slash = strchr(av, '/');
  if (slash) {
    snprintf(group, glen, "%.*s", (int)(slash - av), av);
    snprintf(ver, vlen, "%s", slash + 1);
  } else {
    group[0] = 0;
    snprintf(ver, vlen, "%s", av);
  }
  static const struct {
    const char *kind, *res;
  } kinds[] = {{"Service", "services"},
               {"ConfigMap", "configmaps"},
               {"Secret", "secrets"},
               {"NetworkPolicy", "networkpolicies"},
               {"PersistentVolumeClaim", "persistentvolumeclaims"}};
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if (strcmp(kind, kinds[i].kind) == 0) {
      ref->group = group;
      ref->version = ver;
      ref->resource = kinds[i].res;
      return true;
    }
  return false;
}

static const char *obj_name(const json_t *o) {
  const char *n = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
  if (!n)
    n = json_string_value(json_object_get(o, "name"));
  return n ? n : "";
}

static void stage_commands(exec *x) {
  for (size_t i = 0; i < x->plan.ncommands_delete; i++) {
    kc_ref ref = {.group = "bus.volcano.sh",
                  .version = "v1alpha1",
                  .resource = "commands",
                  .namespace = x->ns,
                  .name = x->plan.commands_delete[i]};
    start(x, CTL_W_PLAIN, ref.name, KC_DELETE, &ref, NULL, NULL, false, false);
  }
}

static void stage_job_patch(exec *x) {
  if (!x->plan.job_patch)
    return;
  kc_ref ref = {.group = "batch.volcano.sh",
                .version = "v1alpha1",
                .resource = "jobs",
                .namespace = x->ns,
                .name = x->name};
  start(x, CTL_W_JOB_PATCH, x->name, KC_PATCH_MERGE, &ref, NULL, x->plan.job_patch, false, false);
}

static void stage_create_deps(exec *x) {
  size_t i;
  json_t *o;
  json_array_foreach(x->plan.pvcs, i, o) {
    kc_ref ref = {.version = "v1", .resource = "persistentvolumeclaims", .namespace = x->ns};
    start(x, CTL_W_PLAIN, obj_name(o), KC_CREATE, &ref, NULL, o, true, false);
  }
  char g[128], v[32];
  json_array_foreach(x->plan.objects_create, i, o) {
    kc_ref ref = {.namespace = x->ns};
    if (!object_ref(o, &ref, g, sizeof(g), v, sizeof(v))) {
      KC_WARN("job %s: cannot create an object of unknown kind", x->key);
      continue;
    }
    start(x, CTL_W_OBJ_CREATE, obj_name(o), KC_CREATE, &ref, NULL, o, false, false);
  }
  json_array_foreach(x->plan.objects_update, i, o) {
    kc_ref ref = {.namespace = x->ns, .name = obj_name(o)};
    if (!object_ref(o, &ref, g, sizeof(g), v, sizeof(v)))
      continue;
    start(x, CTL_W_PLAIN, ref.name, KC_PATCH_MERGE, &ref, NULL, o, false, false);
  }
  if (x->plan.podgroup) {
    kc_ref ref = {.group = "scheduling.volcano.sh",
                  .version = "v1beta1",
                  .resource = "podgroups",
                  .namespace = x->ns};
    const char *name = obj_name(x->plan.podgroup);
    if (x->plan.podgroup_update) {
      /* Only what the controller owns: the scheduler writes the status. */
      json_t *patch = json_object();
      json_t *meta = json_object();
      json_t *src = json_object_get(x->plan.podgroup, "metadata");
      if (json_object_get(src, "labels"))
        json_object_set(meta, "labels", json_object_get(src, "labels"));
      if (json_object_get(src, "annotations"))
        json_object_set(meta, "annotations", json_object_get(src, "annotations"));
      json_object_set_new(patch, "metadata", meta);
      json_object_set(patch, "spec", json_object_get(x->plan.podgroup, "spec"));
      ref.name = name;
      start(x, CTL_W_PG_WRITE, name, KC_PATCH_MERGE, &ref, NULL, patch, false, false);
      json_decref(patch);
    } else {
      start(x, CTL_W_PG_WRITE, name, KC_CREATE, &ref, NULL, x->plan.podgroup, true, false);
    }
  }
}

static const ctl_spod *store_pod(exec *x, const char *name) {
  char pk[KEY_MAX];
  if (!x->env->pods || kc_store_key(pk, sizeof(pk), x->ns, name) != 0)
    return NULL;
  return kc_store_get(x->env->pods, pk);
}

static void stage_pod_delete(exec *x) {
  json_t *patch =
      json_pack("{s:{s:{s:s}}}", "metadata", "annotations", CTL_KEY_OUT_OF_SYNC, "true");
  for (size_t i = 0; i < x->plan.npods_delete; i++) {
    const char *name = x->plan.pods_delete[i].name;
    const ctl_spod *sp = store_pod(x, name);
    ctl_pod p = {0};
    snprintf(p.name, sizeof(p.name), "%s", name);
    if (sp)
      snprintf(p.uid, sizeof(p.uid), "%s", sp->pod.uid);
    if (ctl_expect_add(x->env->expect, x->key, &p, false, uv_hrtime()) < 0)
      KC_WARN("%s: pod %s: its deletion is not expected (out of memory)", x->key, p.name);
    call *c = calloc(1, sizeof(*c));
    if (!c || !patch) {
      free(c);
      note_error(x, KC_ENOMEM, false);
      break;
    }
    c->x = x;
    c->kind = CTL_W_POD_PATCH;
    snprintf(c->name, sizeof(c->name), "%s", name);
    snprintf(c->uid, sizeof(c->uid), "%s", p.uid);
    kc_ref ref = {.version = "v1", .resource = "pods", .namespace = x->ns, .name = name};
    x->outstanding++;
    int rc = issue(x, c, KC_PATCH_MERGE, &ref, NULL, patch);
    if (rc) {
      x->outstanding--;
      free(c);
      ctl_expect_del(x->env->expect, x->key, name);
      note_error(x, rc, false);
    }
  }
  json_decref(patch);
}

/* Sends the plan's pod creations, at most CREATE_WINDOW in flight: each answer sends the
 * next, so that one loop turn serializes and sends a window, not a burst of 1,000 (which ran
 * the loop past 100 ms on a loaded machine). After a creation fails the rest wait for the
 * next sync, as Kubernetes' controllers stop a batch at its first error: a tenant's exhausted
 * pod quota costs one window of refusals, not a thousand. */
static void send_creates(exec *x) {
  size_t n = json_array_size(x->plan.pods_create);
  /* The created pod is not read back (the watch brings it): in protobuf its reply costs the
   * API server less to encode and nothing to parse here. */
  kc_query q = {.accept = x->env->protobuf ? KC_PB_CONTENT_TYPE : NULL};
  while (x->create_next < n && x->creates_in_flight < CREATE_WINDOW && !x->err &&
         !x->env->stopping) {
    json_t *o = json_array_get(x->plan.pods_create, x->create_next++);
    ctl_pod p;
    if (ctl_pod_from_json(o, &p) != 0)
      continue;
    p.phase = CTL_POD_PENDING;
    if (ctl_expect_add(x->env->expect, x->key, &p, true, uv_hrtime()) < 0)
      KC_WARN("%s: pod %s: its creation is not expected (out of memory)", x->key, p.name);
    kc_ref ref = {.version = "v1", .resource = "pods", .namespace = x->ns};
    call *c = start(x, CTL_W_POD_CREATE, p.name, KC_CREATE, &ref, &q, o, true, false);
    if (c) {
      c->windowed = true;
      x->creates_in_flight++;
    } else {
      ctl_expect_del(x->env->expect, x->key, p.name);
    }
  }
  if (x->create_next < n && x->creates_in_flight == 0)
    KC_V(2, "job %s: %zu pod creations left for the next sync after an error", x->key,
         n - x->create_next);
}

static void stage_pod_create(exec *x) {
  x->create_next = 0;
  send_creates(x);
}

static void stage_status(exec *x) {
  if (!x->plan.status_changed)
    return;
  /* A PUT of the status subresource replaces the whole status; the resourceVersion makes a
   * status computed from a stale cache fail with Conflict instead of going back in time. */
  json_t *body = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:o}", "apiVersion", CTL_JOB_API_VERSION,
                           "kind", "Job", "metadata", "name", x->name, "namespace", x->ns,
                           "resourceVersion", x->rv, "status", ctl_status_to_json(&x->plan.status));
  if (!body) {
    note_error(x, KC_ENOMEM, false);
    return;
  }
  kc_ref ref = {.group = "batch.volcano.sh",
                .version = "v1alpha1",
                .resource = "jobs",
                .namespace = x->ns,
                .name = x->name,
                .subresource = "status"};
  if (kc_log_v_enabled(4, __FILE__)) {
    /* Which writes a Job gets, and why: what -v=4 shows to count them. */
    char *js = json_dumps(json_object_get(body, "status"), JSON_COMPACT | JSON_SORT_KEYS);
    KC_V(4, "job %s: status write: %s", x->key, js ? js : "?");
    free(js);
  }
  start(x, CTL_W_STATUS, x->name, KC_UPDATE, &ref, NULL, body, false, false);
  json_decref(body);
}

static void stage_cleanup(exec *x) {
  if (x->plan.podgroup_delete && x->plan.podgroup_name[0]) {
    kc_ref ref = {.group = "scheduling.volcano.sh",
                  .version = "v1beta1",
                  .resource = "podgroups",
                  .namespace = x->ns,
                  .name = x->plan.podgroup_name};
    start(x, CTL_W_PG_DELETE, ref.name, KC_DELETE, &ref, NULL, NULL, false, true);
  }
  size_t i;
  json_t *o;
  char g[128], v[32];
  json_array_foreach(x->plan.objects_delete, i, o) {
    kc_ref ref = {.namespace = x->ns, .name = obj_name(o)};
    if (!object_ref(o, &ref, g, sizeof(g), v, sizeof(v)))
      continue;
    start(x, CTL_W_PLAIN, ref.name, KC_DELETE, &ref, NULL, NULL, false, true);
  }
}

static void record_list(exec *x, const char *reason, const char *what, json_t *msgs) {
  char *list = json_dumps(msgs, JSON_COMPACT);
  char buf[1024];
  snprintf(buf, sizeof(buf), "Error %s pods: %s", what, list ? list : "[]");
  free(list);
  ctl_exec_record_event(x->env, x->job, CTL_EVENT_WARNING, reason, buf);
}

static void phase_metrics(exec *x) {
  const ctl_exec_env *env = x->env;
  ctl_phase to = x->plan.status.phase;
  if (!x->plan.status_changed || to == x->plan.old_phase)
    return;
  kc_metric *m = to == CTL_PHASE_COMPLETED ? env->m_completed
                 : to == CTL_PHASE_FAILED  ? env->m_failed
                                           : NULL;
  const char *vals[] = {x->name, ctl__queue(x->job)};
  kc_series *se;
  if (m && kc_metric_series(m, vals, &se) == 0)
    kc_counter_inc(se);
}

/* Volcano's controller_job_e2e_creation_duration_milliseconds: once a sync has created the
 * Job's pods without an error, the time from the Job's creation. */
static void creation_metrics(exec *x) {
  const ctl_exec_env *env = x->env;
  if (!env->m_e2e || x->count.pods_created == 0 || x->create_errors || !x->job->metadata ||
      !x->job->metadata->creation_timestamp)
    return;
  int64_t t;
  if (kc_time_parse(x->job->metadata->creation_timestamp, &t) != 0)
    return;
  double ms = (double)(kc_clock_wall_ns() - t * 1000000000) / 1e6;
  const char *vals[] = {x->name, ctl__queue(x->job), x->ns};
  kc_series *se;
  if (kc_metric_series(env->m_e2e, vals, &se) == 0)
    kc_gauge_set(se, ms < 0 ? 0 : ms);
}

static void exec_free(exec *x) {
  ctl_plan_close(&x->plan);
  kc_msg_free(x->job);
  json_decref(x->create_errors);
  json_decref(x->delete_errors);
  free(x);
}

static void finish(exec *x) {
  const ctl_exec_env *env = x->env;
  ctl_plan *p = &x->plan;
  if (!env->stopping) {
    if (x->create_errors)
      record_list(x, "FailedCreate", "creating", x->create_errors);
    if (x->delete_errors)
      record_list(x, "FailedDelete", "deleting", x->delete_errors);
    /* The plan's own events once its Commands are gone (a Command's action ran). */
    if (x->commands_ok)
      for (size_t i = 0; i < p->nevents; i++)
        ctl_exec_record_event(env, x->job, p->events[i].type, p->events[i].reason,
                              p->events[i].message ? p->events[i].message : "");
    if (!x->err) {
      phase_metrics(x);
      creation_metrics(x);
    }
  }
  ctl_exec_result r = {
      .key = x->key, .err = x->err, .conflict = x->conflict, .plan = p, .count = x->count};
  env->done(&r, env->ud);
  exec_free(x);
}

/* Runs stages until one has writes in flight; their last result calls advance again. */
static void advance(exec *x) {
  for (;;) {
    if (x->st == ST_COMMANDS && !x->err)
      x->commands_ok = true;
    if (x->err && x->st < ST_FINISH)
      x->st = ST_FINISH; /* a failed write: the next sync recomputes from the stores */
    else if (x->st < ST_FINISH)
      x->st++;
    if (x->st == ST_FINISH || x->env->stopping) {
      finish(x);
      return;
    }
    switch (x->st) {
    case ST_JOB_PATCH:
      stage_job_patch(x);
      break;
    case ST_CREATE_DEPS:
      stage_create_deps(x);
      break;
    case ST_POD_DELETE:
      stage_pod_delete(x);
      break;
    case ST_POD_CREATE:
      stage_pod_create(x);
      break;
    case ST_STATUS:
      stage_status(x);
      break;
    case ST_CLEANUP:
      stage_cleanup(x);
      break;
    default:
      break;
    }
    if (x->outstanding > 0)
      return;
  }
}

/* A private copy of the Job (for events after the store has moved on). New, or NULL. */
static Kiln__Job *copy_job(const Kiln__Job *job) {
  size_t len = kiln__job__get_packed_size(job);
  uint8_t *buf = malloc(len ? len : 1);
  if (!buf)
    return NULL;
  kiln__job__pack(job, buf);
  Kiln__Job *j = kiln__job__unpack(NULL, len, buf);
  free(buf);
  return j;
}

int ctl_exec_start(const ctl_exec_env *env, const char *key, const Kiln__Job *job,
                   const char *job_rv, ctl_plan *plan) {
  exec *x = calloc(1, sizeof(*x));
  if (!x) {
    ctl_plan_close(plan);
    return KC_ENOMEM;
  }
  x->env = env;
  snprintf(x->key, sizeof(x->key), "%s", key);
  const Kiln__ObjectMeta *m = job->metadata;
  snprintf(x->ns, sizeof(x->ns), "%s", m && m->namespace_ ? m->namespace_ : "");
  snprintf(x->name, sizeof(x->name), "%s", m && m->name ? m->name : "");
  snprintf(x->uid, sizeof(x->uid), "%s", m && m->uid ? m->uid : "");
  snprintf(x->rv, sizeof(x->rv), "%s", job_rv ? job_rv : "");
  x->job = copy_job(job);
  x->plan = *plan; /* steals the plan's memory */
  ctl_plan_init(plan);
  if (!x->job) {
    exec_free(x);
    return KC_ENOMEM;
  }
  x->st = ST_COMMANDS;
  stage_commands(x);
  if (x->outstanding == 0)
    advance(x);
  return 0;
}

/* ---- events ---- */

void ctl_exec_record_event(const ctl_exec_env *env, const Kiln__Job *job, ctl_event_type type,
                           const char *reason, const char *message) {
  const Kiln__ObjectMeta *m = job->metadata;
  kc_object_ref ref = {.kind = "Job",
                       .api_version = CTL_JOB_API_VERSION,
                       .namespace = m && m->namespace_ ? m->namespace_ : "",
                       .name = m && m->name ? m->name : "",
                       .uid = m ? m->uid : NULL,
                       .resource_version = m ? m->resource_version : NULL};
  const char *t = type == CTL_EVENT_WARNING ? KC_EVENT_WARNING : KC_EVENT_NORMAL;
  KC_V(2, "event on job %s/%s: %s %s: %s", ref.namespace, ref.name, t, reason, message);
  if (!env->events || fence(env) != 0)
    return;
  int rc = kc_event_record(env->events, &ref, t, reason, "%s", message);
  if (rc)
    KC_V(2, "event %s on job %s/%s not recorded: %s", reason, ref.namespace, ref.name,
         kc_strerror(rc));
}
