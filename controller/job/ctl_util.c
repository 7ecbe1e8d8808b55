/* Names, the pod view, the status value and plan helpers of the controller core. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_int.h"
#include "kc_codec.h"
#include "kc_error.h"
#include "kc_time.h"

static const char *const phase_names[CTL_PHASE_COUNT] = {
    "Pending",    "Aborting",  "Aborted",     "Running",    "Restarting",
    "Completing", "Completed", "Terminating", "Terminated", "Failed",
};

static const char *const action_names[CTL_ACT_COUNT] = {
    "",           "SyncJob",      "EnqueueJob",  "AbortJob",  "RestartJob",       "RestartTask",
    "RestartPod", "TerminateJob", "CompleteJob", "ResumeJob", "RestartPartition",
};

static const char *const event_names[CTL_EV_COUNT] = {
    "",           "*",          "PodFailed", "PodEvicted",
    "PodPending", "PodRunning", "Unknown",   "TaskCompleted",
    "TaskFailed", "JobUpdated", "OutOfSync", "CommandIssued",
};

static const char *const pod_phase_names[CTL_POD_PHASE_COUNT] = {
    "Pending", "Running", "Succeeded", "Failed", "Unknown",
};

const char *ctl_phase_name(ctl_phase p) {
  return (unsigned)p < CTL_PHASE_COUNT ? phase_names[p] : "Pending";
}

ctl_phase ctl_phase_parse(const char *s) {
  for (int i = 0; s && i < CTL_PHASE_COUNT; i++)
    if (strcmp(s, phase_names[i]) == 0)
      return (ctl_phase)i;
  return CTL_PHASE_PENDING;
}

const char *ctl_action_name(ctl_action a) {
  return (unsigned)a < CTL_ACT_COUNT ? action_names[a] : "";
}

ctl_action ctl_action_parse(const char *s) {
  for (int i = 1; s && i < CTL_ACT_COUNT; i++)
    if (strcmp(s, action_names[i]) == 0)
      return (ctl_action)i;
  return CTL_ACT_NONE;
}

const char *ctl_event_name(ctl_event e) {
  return (unsigned)e < CTL_EV_COUNT ? event_names[e] : "";
}

ctl_event ctl_event_parse(const char *s) {
  for (int i = 1; s && i < CTL_EV_COUNT; i++)
    if (strcmp(s, event_names[i]) == 0)
      return (ctl_event)i;
  return CTL_EV_NONE;
}

const char *ctl_pod_phase_name(ctl_pod_phase p) {
  return (unsigned)p < CTL_POD_PHASE_COUNT ? pod_phase_names[p] : "Unknown";
}

static void copy_str(char *dst, size_t len, const char *src) {
  if (!src)
    src = "";
  size_t n = strlen(src);
  if (n >= len)
    n = len - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static bool parse_int(const char *s, long *out) {
  if (!s || !*s)
    return false;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end)
    return false;
  *out = v;
  return true;
}

static int64_t json_time(const json_t *o, const char *key) {
  int64_t t = 0;
  const char *s = json_string_value(json_object_get(o, key));
  if (s && kc_time_parse(s, &t) != 0)
    t = 0;
  return t;
}

/* The annotations and labels ctl_pod keeps, as strings (NULL: absent), whatever the encoding. */
typedef struct {
  const char *task, *index, *version, *partition;
  bool out_of_sync;
} marks;

static void set_marks(ctl_pod *out, const char *name, const marks *m) {
  copy_str(out->task, sizeof(out->task), m->task);
  long v;
  if (parse_int(m->index, &v) && v >= 0 && v <= INT32_MAX) {
    out->index = (int)v;
  } else {
    /* Pods made before the index annotation existed: the suffix of <job>-<task>-<i>. */
    const char *dash = strrchr(name, '-');
    if (dash && parse_int(dash + 1, &v) && v >= 0 && v <= INT32_MAX)
      out->index = (int)v;
  }
  if (parse_int(m->version, &v))
    out->version = (int)v;
  if (parse_int(m->partition, &v) && v >= 0 && v <= INT32_MAX) {
    out->has_partition = true;
    out->partition = (int)v;
  }
  out->out_of_sync = m->out_of_sync;
}

int ctl_pod_from_json(const json_t *pod, ctl_pod *out) {
  if (!json_is_object(pod))
    return KC_EINVAL;
  memset(out, 0, sizeof(*out));
  out->index = -1;
  out->version = -1;
  json_t *meta = json_object_get(pod, "metadata");
  json_t *ann = json_object_get(meta, "annotations");
  json_t *labels = json_object_get(meta, "labels");
  const char *name = json_string_value(json_object_get(meta, "name"));
  if (!name)
    return KC_EINVAL;
  copy_str(out->name, sizeof(out->name), name);
  copy_str(out->uid, sizeof(out->uid), json_string_value(json_object_get(meta, "uid")));
  const char *task = json_string_value(json_object_get(ann, CTL_KEY_TASK_SPEC));
  const char *idx = json_string_value(json_object_get(ann, CTL_KEY_TASK_INDEX));
  marks m = {.task = task ? task : json_string_value(json_object_get(labels, CTL_KEY_TASK_SPEC)),
             .index = idx ? idx : json_string_value(json_object_get(labels, CTL_KEY_TASK_INDEX)),
             .version = json_string_value(json_object_get(ann, CTL_KEY_JOB_VERSION)),
             .partition = json_string_value(json_object_get(labels, CTL_KEY_PARTITION_ID)),
             .out_of_sync = json_string_value(json_object_get(ann, CTL_KEY_OUT_OF_SYNC)) != NULL};
  set_marks(out, name, &m);
  out->creation_ts = json_time(meta, "creationTimestamp");
  out->deletion_ts = json_time(meta, "deletionTimestamp");

  json_t *status = json_object_get(pod, "status");
  const char *phase = json_string_value(json_object_get(status, "phase"));
  out->phase = CTL_POD_PENDING;
  for (int i = 0; phase && i < CTL_POD_PHASE_COUNT; i++)
    if (strcmp(phase, pod_phase_names[i]) == 0)
      out->phase = (ctl_pod_phase)i;
  json_t *cs = json_object_get(status, "containerStatuses");
  size_t i;
  json_t *c;
  out->ready = json_array_size(cs) > 0;
  json_array_foreach(cs, i, c) {
    json_int_t rc = json_integer_value(json_object_get(c, "restartCount"));
    if (rc > 0 && rc < INT32_MAX - out->restarts)
      out->restarts += (int)rc;
    if (!json_is_true(json_object_get(c, "ready")))
      out->ready = false;
    if (i == 0) {
      json_t *term = json_object_get(json_object_get(c, "state"), "terminated");
      json_t *code = json_object_get(term, "exitCode");
      if (json_is_integer(code)) {
        out->has_exit_code = true;
        out->exit_code = (int)json_integer_value(code);
      }
    }
  }
  return 0;
}

const char *ctl_pb_annotation(const K8s__ObjectMeta *m, const char *key) {
  for (size_t i = 0; m && i < m->n_annotations; i++)
    if (m->annotations[i]->key && strcmp(m->annotations[i]->key, key) == 0)
      return m->annotations[i]->value ? m->annotations[i]->value : "";
  return NULL;
}

const char *ctl_pb_label(const K8s__ObjectMeta *m, const char *key) {
  for (size_t i = 0; m && i < m->n_labels; i++)
    if (m->labels[i]->key && strcmp(m->labels[i]->key, key) == 0)
      return m->labels[i]->value ? m->labels[i]->value : "";
  return NULL;
}

static void pb_marks(const K8s__ObjectMeta *m, const char *name, ctl_pod *out) {
  const char *task = ctl_pb_annotation(m, CTL_KEY_TASK_SPEC);
  const char *idx = ctl_pb_annotation(m, CTL_KEY_TASK_INDEX);
  marks k = {.task = task ? task : ctl_pb_label(m, CTL_KEY_TASK_SPEC),
             .index = idx ? idx : ctl_pb_label(m, CTL_KEY_TASK_INDEX),
             .version = ctl_pb_annotation(m, CTL_KEY_JOB_VERSION),
             .partition = ctl_pb_label(m, CTL_KEY_PARTITION_ID),
             .out_of_sync = ctl_pb_annotation(m, CTL_KEY_OUT_OF_SYNC) != NULL};
  set_marks(out, name, &k);
}

static void pb_status(const K8s__PodStatus *st, ctl_pod *out) {
  out->phase = CTL_POD_PENDING;
  for (int i = 0; st->phase && i < CTL_POD_PHASE_COUNT; i++)
    if (strcmp(st->phase, pod_phase_names[i]) == 0)
      out->phase = (ctl_pod_phase)i;
  out->ready = st->n_container_statuses > 0;
  for (size_t i = 0; i < st->n_container_statuses; i++) {
    const K8s__ContainerStatus *c = st->container_statuses[i];
    int32_t rc = c->restart_count;
    if (rc > 0 && rc < INT32_MAX - out->restarts)
      out->restarts += rc;
    if (!c->ready)
      out->ready = false;
    const K8s__ContainerStateTerminated *t = c->state ? c->state->terminated : NULL;
    if (i == 0 && t && t->has_exit_code) {
      out->has_exit_code = true;
      out->exit_code = t->exit_code;
    }
  }
}

int ctl_pod_from_pb(const K8s__Pod *pod, ctl_pod *out) {
  memset(out, 0, sizeof(*out));
  out->index = -1;
  out->version = -1;
  const K8s__ObjectMeta *m = pod->metadata;
  if (!m || !m->name)
    return KC_EINVAL;
  copy_str(out->name, sizeof(out->name), m->name);
  copy_str(out->uid, sizeof(out->uid), m->uid);
  pb_marks(m, m->name, out);
  out->creation_ts = m->creation_timestamp ? m->creation_timestamp->seconds : 0;
  out->deletion_ts = m->deletion_timestamp ? m->deletion_timestamp->seconds : 0;
  out->phase = CTL_POD_PENDING;
  if (pod->status)
    pb_status(pod->status, out);
  return 0;
}

/* ---- durations and times ---- */

void ctl_duration_format(int64_t secs, char *buf, size_t len) {
  if (secs <= 0) {
    snprintf(buf, len, "0s");
    return;
  }
  int64_t h = secs / 3600, m = secs / 60 % 60, s = secs % 60;
  if (h)
    snprintf(buf, len, "%" PRId64 "h%" PRId64 "m%" PRId64 "s", h, m, s);
  else if (m)
    snprintf(buf, len, "%" PRId64 "m%" PRId64 "s", m, s);
  else
    snprintf(buf, len, "%" PRId64 "s", s);
}

int ctl_duration_parse(const char *s, int64_t *secs) {
  int64_t ns;
  if (!s || kc_go_duration(s, &ns, NULL, 0) || ns < 0)
    return KC_EPARSE; /* a timeout or a time spent is never negative */
  *secs = ns / 1000000000;
  return 0;
}

/* ---- status ---- */

void ctl_status_init(ctl_status *st) {
  memset(st, 0, sizeof(*st));
}

void ctl_status_close(ctl_status *st) {
  free(st->tasks);
  free(st->conds);
  json_decref(st->controlled);
  memset(st, 0, sizeof(*st));
}

ctl_task_count *ctl_status_task(ctl_status *st, const char *task) {
  for (size_t i = 0; i < st->ntasks; i++)
    if (strcmp(st->tasks[i].name, task) == 0)
      return &st->tasks[i];
  ctl_task_count *n = realloc(st->tasks, (st->ntasks + 1) * sizeof(*n));
  if (!n)
    return NULL;
  st->tasks = n;
  ctl_task_count *t = &n[st->ntasks++];
  memset(t, 0, sizeof(*t));
  copy_str(t->name, sizeof(t->name), task);
  return t;
}

void ctl__append_condition(ctl_status *st, ctl_phase phase, int64_t t) {
  /* One entry per phase: a repeated phase moves to the end with the new time. */
  size_t j = 0;
  for (size_t i = 0; i < st->nconds; i++)
    if (st->conds[i].phase != phase)
      st->conds[j++] = st->conds[i];
  st->nconds = j;
  ctl_condition *n = realloc(st->conds, (st->nconds + 1) * sizeof(*n));
  if (!n)
    return; /* the condition list is advisory; the phase itself is already set */
  st->conds = n;
  n[st->nconds].phase = phase;
  n[st->nconds].at = t;
  st->nconds++;
}

int ctl_status_from_pb(ctl_status *st, const Kiln__JobStatus *pb) {
  ctl_status_init(st);
  st->controlled = json_object();
  if (!st->controlled)
    return KC_ENOMEM;
  if (!pb)
    return 0;
  if (pb->state) {
    st->phase = ctl_phase_parse(pb->state->phase);
    copy_str(st->reason, sizeof(st->reason), pb->state->reason);
    copy_str(st->message, sizeof(st->message), pb->state->message);
    if (pb->state->last_transition_time)
      /* An unparsable time stays unset, as an absent one. */
      KC_IGNORE(kc_time_parse(pb->state->last_transition_time, &st->last_transition));
  }
  st->pending = pb->pending;
  st->running = pb->running;
  st->succeeded = pb->succeeded;
  st->failed = pb->failed;
  st->terminating = pb->terminating;
  st->unknown = pb->unknown;
  st->min_available = pb->min_available;
  st->version = pb->version;
  st->retry_count = pb->retry_count;
  if (pb->running_duration && ctl_duration_parse(pb->running_duration, &st->running_duration) == 0)
    st->has_running_duration = true;
  for (size_t i = 0; i < pb->n_task_status_count; i++) {
    Kiln__JobStatus__TaskStatusCountEntry *e = pb->task_status_count[i];
    ctl_task_count *t = ctl_status_task(st, e->key ? e->key : "");
    if (!t)
      goto nomem;
    for (size_t k = 0; e->value && k < e->value->n_phase; k++)
      for (int p = 0; p < CTL_POD_PHASE_COUNT; p++)
        if (e->value->phase[k]->key && strcmp(e->value->phase[k]->key, pod_phase_names[p]) == 0)
          t->count[p] = e->value->phase[k]->value;
  }
  for (size_t i = 0; i < pb->n_conditions; i++) {
    int64_t t = 0;
    if (pb->conditions[i]->last_transition_time)
      KC_IGNORE(kc_time_parse(pb->conditions[i]->last_transition_time, &t));
    ctl_condition *n = realloc(st->conds, (st->nconds + 1) * sizeof(*n));
    if (!n)
      goto nomem;
    st->conds = n;
    n[st->nconds].phase = ctl_phase_parse(pb->conditions[i]->status);
    n[st->nconds++].at = t;
  }
  for (size_t i = 0; i < pb->n_controlled_resources; i++) {
    Kiln__JobStatus__ControlledResourcesEntry *e = pb->controlled_resources[i];
    if (e->key &&
        json_object_set_new(st->controlled, e->key, json_string(e->value ? e->value : "")))
      goto nomem;
  }
  return 0;
nomem:
  ctl_status_close(st);
  return KC_ENOMEM;
}

int ctl__status_copy(ctl_status *dst, const ctl_status *src) {
  *dst = *src;
  dst->tasks = NULL;
  dst->conds = NULL;
  dst->controlled = json_deep_copy(src->controlled ? src->controlled : json_object());
  if (src->ntasks) {
    dst->tasks = malloc(src->ntasks * sizeof(*dst->tasks));
    if (dst->tasks)
      memcpy(dst->tasks, src->tasks, src->ntasks * sizeof(*dst->tasks));
  }
  if (src->nconds) {
    dst->conds = malloc(src->nconds * sizeof(*dst->conds));
    if (dst->conds)
      memcpy(dst->conds, src->conds, src->nconds * sizeof(*dst->conds));
  }
  if (!dst->controlled || (src->ntasks && !dst->tasks) || (src->nconds && !dst->conds)) {
    ctl_status_close(dst);
    return KC_ENOMEM;
  }
  return 0;
}

/* Every jansson call below can fail for want of memory. The status is PUT whole, so a
 * missing field would erase it on the server: any failure makes the whole result NULL. */
static bool put(json_t *o, const char *key, json_t *v) {
  return json_object_set_new(o, key, v) == 0; /* steals v, and fails on NULL v or NULL o */
}

static bool put_time(json_t *o, const char *key, int64_t t) {
  char tbuf[40];
  kc_time_format(t, tbuf);
  return put(o, key, json_string(tbuf));
}

/* o when everything went in, else NULL (o released). */
static json_t *all_or_nothing(json_t *o, bool ok) {
  if (ok)
    return o;
  json_decref(o);
  return NULL;
}

static json_t *state_json(const ctl_status *st) {
  json_t *state = json_object();
  bool ok = put(state, "phase", json_string(ctl_phase_name(st->phase)));
  if (st->reason[0])
    ok = ok && put(state, "reason", json_string(st->reason));
  if (st->message[0])
    ok = ok && put(state, "message", json_string(st->message));
  if (st->last_transition)
    ok = ok && put_time(state, "lastTransitionTime", st->last_transition);
  return all_or_nothing(state, ok);
}

static json_t *tasks_json(const ctl_status *st) {
  json_t *tsc = json_object();
  bool ok = tsc != NULL;
  for (size_t i = 0; ok && i < st->ntasks; i++) {
    json_t *ph = json_object();
    for (int p = 0; ph && ok && p < CTL_POD_PHASE_COUNT; p++)
      if (st->tasks[i].count[p])
        ok = put(ph, pod_phase_names[p], json_integer(st->tasks[i].count[p]));
    json_t *t = json_object();
    if (!ok) {
      json_decref(ph);
      json_decref(t);
    } else if (!put(t, "phase", ph)) { /* steals ph, even when it fails */
      json_decref(t);
      ok = false;
    } else {
      ok = put(tsc, st->tasks[i].name, t); /* steals t */
    }
  }
  return all_or_nothing(tsc, ok);
}

static json_t *conditions_json(const ctl_status *st) {
  json_t *a = json_array();
  bool ok = a != NULL;
  for (size_t i = 0; ok && i < st->nconds; i++) {
    json_t *c = json_object();
    ok = put(c, "status", json_string(ctl_phase_name(st->conds[i].phase))) &&
         put_time(c, "lastTransitionTime", st->conds[i].at) && json_array_append(a, c) == 0;
    json_decref(c);
  }
  return all_or_nothing(a, ok);
}

json_t *ctl_status_to_json(const ctl_status *st) {
  json_t *o = json_object();
  bool ok = put(o, "state", state_json(st));
  static const char *const names[] = {"minAvailable", "pending", "running", "succeeded", "failed",
                                      "terminating",  "unknown", "version", "retryCount"};
  const int32_t vals[] = {st->min_available, st->pending, st->running, st->succeeded,  st->failed,
                          st->terminating,   st->unknown, st->version, st->retry_count};
  /* Volcano's JobStatus tags every counter omitempty: a zero is left out, so `kubectl get
   * vcjob -o yaml` and the RUNNINGS column read as Volcano's do. The PUT replaces the whole
   * status, so a counter that drops to zero goes away. */
  for (size_t i = 0; ok && i < sizeof(names) / sizeof(names[0]); i++)
    if (vals[i] != 0)
      ok = put(o, names[i], json_integer(vals[i]));
  if (ok && st->has_running_duration) {
    char tbuf[40];
    ctl_duration_format(st->running_duration, tbuf, sizeof(tbuf));
    ok = put(o, "runningDuration", json_string(tbuf));
  }
  if (ok && st->ntasks)
    ok = put(o, "taskStatusCount", tasks_json(st));
  if (ok && st->controlled && json_object_size(st->controlled))
    ok = json_object_set(o, "controlledResources", st->controlled) == 0;
  if (ok && st->nconds)
    ok = put(o, "conditions", conditions_json(st));
  return all_or_nothing(o, ok);
}

/* ---- plan ---- */

void ctl_plan_init(ctl_plan *p) {
  memset(p, 0, sizeof(*p));
}

void ctl_plan_close(ctl_plan *p) {
  ctl_status_close(&p->status);
  json_decref(p->job_patch);
  json_decref(p->podgroup);
  json_decref(p->pvcs);
  json_decref(p->objects_create);
  json_decref(p->objects_update);
  json_decref(p->objects_delete);
  json_decref(p->pods_create);
  free(p->pods_delete);
  for (size_t i = 0; i < p->nevents; i++)
    free(p->events[i].message);
  free(p->events);
  free(p->commands_delete);
  free(p->cancels);
  memset(p, 0, sizeof(*p));
}

int ctl__event(ctl_plan *p, ctl_event_type type, const char *reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return KC_EINVAL;
  char *msg = malloc((size_t)n + 1);
  if (!msg)
    return KC_ENOMEM;
  va_start(ap, fmt);
  vsnprintf(msg, (size_t)n + 1, fmt, ap);
  va_end(ap);
  ctl_k8s_event *e = realloc(p->events, (p->nevents + 1) * sizeof(*e));
  if (!e) {
    free(msg);
    return KC_ENOMEM;
  }
  p->events = e;
  e[p->nevents].type = type;
  copy_str(e[p->nevents].reason, sizeof(e[p->nevents].reason), reason);
  e[p->nevents].message = msg;
  p->nevents++;
  return 0;
}

void ctl__failure(ctl_plan *p, const char *reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->failure_message, sizeof(p->failure_message), fmt, ap);
  va_end(ap);
  copy_str(p->failure_reason, sizeof(p->failure_reason), reason);
}

/* Callers visit each pod once, so no duplicate check (it would be quadratic in a mass kill). */
int ctl__delete_pod(ctl_plan *p, const char *name, const char *reason) {
  ctl_pod_delete *d = realloc(p->pods_delete, (p->npods_delete + 1) * sizeof(*d));
  if (!d)
    return KC_ENOMEM;
  p->pods_delete = d;
  copy_str(d[p->npods_delete].name, sizeof(d->name), name);
  copy_str(d[p->npods_delete].reason, sizeof(d->reason), reason);
  p->npods_delete++;
  return 0;
}

int ctl__cancel(ctl_plan *p, ctl_scope scope, const char *name, uint32_t events) {
  ctl_cancel *c = realloc(p->cancels, (p->ncancels + 1) * sizeof(*c));
  if (!c)
    return KC_ENOMEM;
  p->cancels = c;
  c[p->ncancels].scope = scope;
  copy_str(c[p->ncancels].name, sizeof(c->name), name);
  c[p->ncancels].events = events;
  p->ncancels++;
  return 0;
}

int ctl__append(json_t **arr, json_t *obj) {
  if (!obj)
    return KC_ENOMEM;
  if (!*arr && !(*arr = json_array())) {
    json_decref(obj);
    return KC_ENOMEM;
  }
  return json_array_append_new(*arr, obj) ? KC_ENOMEM : 0;
}

/* ---- spec helpers ---- */

/* Counts a user writes (each up to 2^31-1 by the schema) combine saturating at the int32
 * bounds, never wrapping. */
static int32_t sat32(int64_t v) {
  return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

int32_t ctl__total_replicas(const Kiln__Job *job) {
  int64_t n = 0;
  for (size_t i = 0; job->spec && i < job->spec->n_tasks; i++)
    n = sat32(n + job->spec->tasks[i]->replicas);
  return (int32_t)n;
}

int32_t ctl__task_min_available(const Kiln__TaskSpec *t) {
  if (t->has_min_available)
    return t->min_available;
  if (t->partition_policy && t->partition_policy->min_partitions > 0)
    return sat32((int64_t)t->partition_policy->min_partitions *
                 t->partition_policy->partition_size);
  return t->replicas;
}

int32_t ctl__total_task_min_available(const Kiln__Job *job) {
  int64_t n = 0;
  for (size_t i = 0; job->spec && i < job->spec->n_tasks; i++)
    n = sat32(n + ctl__task_min_available(job->spec->tasks[i]));
  return (int32_t)n;
}

/* The webhook defaults spec.minAvailable to the sum of the tasks' minAvailable; a Job
 * created without the webhook gets the same default here. */
int32_t ctl__job_min_available(const Kiln__Job *job) {
  if (job->spec && job->spec->has_min_available)
    return job->spec->min_available;
  return ctl__total_task_min_available(job);
}

bool ctl__task_unnamed(const Kiln__TaskSpec *t) {
  return !t->name || !*t->name;
}

int ctl__name_tasks(const Kiln__Job *in, ctl_named_job *nj, const Kiln__Job **use) {
  memset(nj, 0, sizeof(*nj));
  *use = in;
  const Kiln__JobSpec *spec = in->spec;
  size_t n = spec ? spec->n_tasks : 0, unnamed = 0;
  for (size_t i = 0; i < n; i++)
    if (ctl__task_unnamed(spec->tasks[i]))
      unnamed++;
  if (!unnamed)
    return 0;
  nj->tasks = calloc(n, sizeof(*nj->tasks));
  nj->ptrs = calloc(n, sizeof(*nj->ptrs));
  nj->names = calloc(n, sizeof(*nj->names));
  if (!nj->tasks || !nj->ptrs || !nj->names) {
    ctl__named_job_close(nj);
    return KC_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    nj->tasks[i] = *spec->tasks[i];
    if (ctl__task_unnamed(spec->tasks[i])) {
      snprintf(nj->names[i], sizeof(nj->names[i]), "default%zu", i);
      nj->tasks[i].name = nj->names[i];
    }
    nj->ptrs[i] = &nj->tasks[i];
  }
  nj->spec = *spec;
  nj->spec.tasks = nj->ptrs;
  nj->job = *in;
  nj->job.spec = &nj->spec;
  nj->nnamed = unnamed;
  *use = &nj->job;
  return 0;
}

void ctl__named_job_close(ctl_named_job *nj) {
  free(nj->tasks);
  free(nj->ptrs);
  free(nj->names);
  memset(nj, 0, sizeof(*nj));
}

const Kiln__TaskSpec *ctl__find_task(const Kiln__Job *job, const char *name) {
  for (size_t i = 0; name && job->spec && i < job->spec->n_tasks; i++)
    if (job->spec->tasks[i]->name && strcmp(job->spec->tasks[i]->name, name) == 0)
      return job->spec->tasks[i];
  return NULL;
}

int ctl__request_partition(const ctl_ctx *c) {
  const ctl_request *r = c->req;
  if (!r->pod || !*r->pod)
    return -1;
  for (size_t i = 0; i < c->v->npods; i++) {
    const ctl_pod *p = &c->v->pods[i];
    if (strcmp(p->name, r->pod) == 0)
      return p->has_partition ? p->partition : -1;
  }
  const Kiln__TaskSpec *t = ctl__find_task(c->v->job, r->task);
  if (!t || !t->partition_policy || t->partition_policy->partition_size <= 0)
    return -1;
  const char *dash = strrchr(r->pod, '-');
  long idx;
  if (!dash || !parse_int(dash + 1, &idx) || idx < 0 || idx > INT32_MAX)
    return -1;
  return (int)(idx / t->partition_policy->partition_size);
}

const char *ctl__job_name(const Kiln__Job *job) {
  return job->metadata && job->metadata->name ? job->metadata->name : "";
}

const char *ctl__job_ns(const Kiln__Job *job) {
  return job->metadata && job->metadata->namespace_ ? job->metadata->namespace_ : "default";
}

const char *ctl__job_uid(const Kiln__Job *job) {
  return job->metadata && job->metadata->uid ? job->metadata->uid : "";
}

const char *ctl__queue(const Kiln__Job *job) {
  return job->spec && job->spec->queue && *job->spec->queue ? job->spec->queue : "default";
}

json_t *ctl__owner_ref(const Kiln__Job *job) {
  return json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "apiVersion", CTL_JOB_API_VERSION, "kind",
                   "Job", "name", ctl__job_name(job), "uid", ctl__job_uid(job), "controller", 1,
                   "blockOwnerDeletion", 1);
}
