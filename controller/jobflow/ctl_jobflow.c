/* The JobFlow and JobTemplate controllers' decisions (see ctl_jobflow.h). */
#include "ctl_jobflow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cron.h"
#include "kc_codec.h"
#include "kc_error.h"
#include "ctl_note.h"

#define NOTE(p, ...) ctl_note_add((p)->ev, &(p)->nev, CTL_JF_MAX_EVENTS, __VA_ARGS__)

/* ---- the DAG check (Volcano's webhook: LoadVertexs and IsDAG) ---- */

static const json_t *targets_of(const json_t *flow) {
  return json_object_get(json_object_get(flow, "dependsOn"), "targets");
}

static ssize_t flow_index(const json_t *flows, const char *name) {
  size_t i;
  json_t *f;
  json_array_foreach(flows, i, f) if (!strcmp(ctl_jstr(f, "name"), name)) return (ssize_t)i;
  return -1;
}

/* Depth-first search; color 0 unseen, 1 on the path, 2 done. On a cycle, path[0..*depth) is
 * the path from the root and *cycle_at where the cycle starts in it. */
static bool dfs(const json_t *flows, size_t v, char *color, size_t *path, size_t *depth,
                size_t *cycle_at) {
  color[v] = 1;
  path[(*depth)++] = v;
  size_t i;
  json_t *t;
  json_array_foreach(targets_of(json_array_get(flows, v)), i, t) {
    ssize_t w = flow_index(flows, json_string_value(t) ? json_string_value(t) : "");
    if (w < 0)
      continue;
    if (color[w] == 1) {
      for (size_t k = 0; k < *depth; k++)
        if (path[k] == (size_t)w)
          *cycle_at = k;
      return true;
    }
    if (color[w] == 0 && dfs(flows, (size_t)w, color, path, depth, cycle_at))
      return true;
  }
  color[v] = 2;
  (*depth)--;
  return false;
}

int ctl_jobflow_check_dag(const json_t *flows, char *err, size_t errlen, char *cycle,
                          size_t cyclecap) {
  size_t n = json_array_size(flows), i, k;
  json_t *f, *t;
  if (cycle && cyclecap)
    *cycle = 0;
  json_array_foreach(flows, i, f) json_array_foreach(targets_of(f), k, t) {
    const char *name = json_string_value(t) ? json_string_value(t) : "";
    if (flow_index(flows, name) < 0)
      return kc_errorf(err, errlen, KC_EINVAL, "%s: vertex is not defined: %s", CTL_JF_NOT_DAG,
                       name);
  }
  char *color = calloc(n + 1, 1);
  size_t *path = calloc(n + 1, sizeof(*path));
  int rc = 0;
  if (!color || !path) {
    rc = KC_ENOMEM;
    goto out;
  }
  for (i = 0; i < n && !rc; i++) {
    size_t depth = 0, at = 0;
    if (color[i] || !dfs(flows, i, color, path, &depth, &at))
      continue;
    rc = kc_errorf(err, errlen, KC_EINVAL, "%s", CTL_JF_NOT_DAG);
    /* "a -> b -> a": each flow depends on the next. */
    size_t off = 0;
    for (k = at; cycle && k <= depth && off < cyclecap; k++) {
      size_t v = k < depth ? path[k] : path[at];
      int w = snprintf(cycle + off, cyclecap - off, "%s%s", k > at ? " -> " : "",
                       ctl_jstr(json_array_get(flows, v), "name"));
      off += w > 0 ? (size_t)w : 0;
    }
  }
out:
  free(color);
  free(path);
  return rc;
}

/* ---- patchJobTemplate ---- */

static int merge_by_key(json_t *base, const json_t *patch, const char *key, bool recursive) {
  size_t i;
  json_t *p;
  json_array_foreach(patch, i, p) {
    const char *k = ctl_jstr(p, key);
    json_t *hit = NULL, *b;
    size_t j;
    json_array_foreach(base, j, b) if (*k && !strcmp(ctl_jstr(b, key), k)) hit = b;
    if (hit && recursive) {
      if (json_object_update_recursive(hit, p))
        return KC_ENOMEM;
    } else if (hit) {
      if (json_object_clear(hit) || json_object_update(hit, p))
        return KC_ENOMEM;
    } else if (json_array_append(base, p)) {
      return KC_ENOMEM;
    }
  }
  return 0;
}

json_t *ctl_jobflow_patch_spec(const json_t *base, const json_t *patch_in) {
  json_t *m = json_is_object(base) ? json_deep_copy(base) : json_object();
  if (!m || !json_is_object(patch_in) || json_object_size(patch_in) == 0)
    return m;
  /* The result shares values with the patch, and a later merge may change a shared one (two
   * patch tasks of one name): the flow in the informer's cache must not be touched. */
  json_t *patch = json_deep_copy(patch_in);
  if (!patch)
    goto fail;
  const char *s = ctl_jstr(patch, "schedulerName");
  if (*s)
    json_object_set_new(m, "schedulerName", json_string(s));
  /* Volcano assigns minAvailable and maxRetry even when the patch leaves them unset (0). */
  json_t *v = json_object_get(patch, "minAvailable");
  v ? json_object_set(m, "minAvailable", v) : json_object_del(m, "minAvailable");
  v = json_object_get(patch, "maxRetry");
  v ? json_object_set(m, "maxRetry", v) : json_object_del(m, "maxRetry");
  /* Volumes by mountPath and tasks by name: matching ones are merged, new ones added. */
  static const struct {
    const char *field, *key;
    bool recursive;
  } lists[] = {{"volumes", "mountPath", false}, {"tasks", "name", true}};
  for (size_t i = 0; i < 2; i++) {
    const json_t *pl = json_object_get(patch, lists[i].field);
    if (!json_is_array(pl))
      continue;
    json_t *bl = json_object_get(m, lists[i].field);
    if (!json_is_array(bl)) {
      bl = json_array();
      json_object_set_new(m, lists[i].field, bl);
    }
    if (!bl || merge_by_key(bl, pl, lists[i].key, lists[i].recursive))
      goto fail;
  }
  /* Plugins: a plugin's arguments are appended to the template's. */
  const json_t *pp = json_object_get(patch, "plugins");
  if (json_is_object(pp)) {
    json_t *bp = json_object_get(m, "plugins");
    if (!json_is_object(bp)) {
      bp = json_object();
      json_object_set_new(m, "plugins", bp);
    }
    const char *name;
    json_t *args;
    json_object_foreach((json_t *)pp, name, args) {
      json_t *have = json_object_get(bp, name);
      if (json_is_array(have) && json_is_array(args))
        json_array_extend(have, args);
      else
        json_object_set(bp, name, args);
    }
  }
  static const char *const replace[] = {"policies", "runningEstimate", "ttlSecondsAfterFinished",
                                        "minSuccess", "networkTopology"};
  for (size_t i = 0; i < sizeof(replace) / sizeof(replace[0]); i++)
    if ((v = json_object_get(patch, replace[i])))
      json_object_set(m, replace[i], v);
  static const char *const nonempty[] = {"queue", "priorityClassName"};
  for (size_t i = 0; i < 2; i++)
    if (*(s = ctl_jstr(patch, nonempty[i])))
      json_object_set_new(m, nonempty[i], json_string(s));
  json_decref(patch);
  return m;
fail:
  json_decref(patch);
  json_decref(m);
  return NULL;
}

/* ---- syncJobFlow ---- */

static json_t *job_for(const json_t *flow, const json_t *f, const json_t *tmpl) {
  const json_t *m = json_object_get(flow, "metadata");
  const char *ns = ctl_jstr(m, "namespace"), *fname = ctl_jstr(m, "name"),
             *tname = ctl_jstr(f, "name");
  char name[2 * CTL_NAME_MAX], by_t[2 * CTL_NAME_MAX], by_f[2 * CTL_NAME_MAX];
  snprintf(name, sizeof(name), "%s-%s", fname, tname);
  snprintf(by_t, sizeof(by_t), "%s.%s", ns, tname);
  snprintf(by_f, sizeof(by_f), "%s.%s", ns, fname);
  const json_t *patch = json_object_get(json_object_get(f, "patch"), "jobSpec");
  json_t *spec = ctl_jobflow_patch_spec(json_object_get(tmpl, "spec"), patch);
  if (!spec)
    return NULL;
  return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}, s:[{s:s, s:s, s:s, s:s, "
                   "s:b, s:b}]}, s:o}",
                   "apiVersion", "batch.volcano.sh/v1alpha1", "kind", "Job", "metadata", "name",
                   name, "namespace", ns, "labels", CTL_JF_BY_TEMPLATE, by_t, CTL_JF_BY_FLOW, by_f,
                   "annotations", CTL_JF_BY_TEMPLATE, by_t, CTL_JF_BY_FLOW, by_f, "ownerReferences",
                   "apiVersion", CTL_JF_API, "kind", "JobFlow", "name", fname, "uid",
                   ctl_jstr(m, "uid"), "controller", 1, "blockOwnerDeletion", 1, "spec", spec);
}

/* judge: every target's Job exists and has completed. */
static bool targets_done(const json_t *flow, const json_t *f, const ctl_jf_lookup *lk) {
  const json_t *m = json_object_get(flow, "metadata");
  size_t i;
  json_t *t;
  json_array_foreach(targets_of(f), i, t) {
    char name[2 * CTL_NAME_MAX];
    snprintf(name, sizeof(name), "%s-%s", ctl_jstr(m, "name"), json_string_value(t) ?: "");
    const ctl_jf_job *j = lk->job(lk->ud, ctl_jstr(m, "namespace"), name);
    if (!j || strcmp(j->phase, "Completed") != 0)
      return false;
  }
  return true;
}

/* deployJob. */
static int deploy(const json_t *flow, const ctl_jf_lookup *lk, ctl_jf_plan *p) {
  const json_t *m = json_object_get(flow, "metadata");
  const char *ns = ctl_jstr(m, "namespace");
  const json_t *flows = json_object_get(json_object_get(flow, "spec"), "flows");
  size_t i;
  json_t *f;
  json_array_foreach(flows, i, f) {
    char name[2 * CTL_NAME_MAX];
    snprintf(name, sizeof(name), "%s-%s", ctl_jstr(m, "name"), ctl_jstr(f, "name"));
    if (lk->job(lk->ud, ns, name))
      continue;
    if (targets_of(f) && !targets_done(flow, f, lk))
      continue;
    const json_t *tmpl = lk->template(lk->ud, ns, ctl_jstr(f, "name"));
    if (!tmpl) {
      p->err = kc_errorf(p->errmsg, sizeof(p->errmsg), KC_ENOTFOUND,
                         "getting JobTemplate \"%s\" in ns \"%s\": jobtemplates.flow.volcano.sh "
                         "\"%s\" not found",
                         ctl_jstr(f, "name"), ns, ctl_jstr(f, "name"));
      return 0;
    }
    json_t *job = job_for(flow, f, tmpl);
    json_t **v = job ? realloc(p->create, (p->ncreate + 1) * sizeof(*v)) : NULL;
    if (!v) {
      json_decref(job);
      return KC_ENOMEM;
    }
    p->create = v;
    p->create[p->ncreate++] = job;
  }
  return 0;
}

static int cmp_jobs(const void *a, const void *b) {
  return strcmp((*(const ctl_jf_job *const *)a)->name, (*(const ctl_jf_job *const *)b)->name);
}

static json_t *stamp(int64_t ms) {
  char buf[48];
  return ms != CTL_CRON_NEVER && ctl_cron_rfc3339(ms, "UTC", NULL, buf, sizeof(buf)) == 0
             ? json_string(buf)
             : json_null();
}

/* getRunningHistories: the previous entry's history, with a new phase appended when it
 * changed. */
static json_t *histories(const json_t *prev_list, const ctl_jf_job *j, int64_t now_ms) {
  size_t i;
  json_t *e;
  json_array_foreach(prev_list, i, e) {
    json_t *h = json_object_get(e, "runningHistories");
    if (strcmp(ctl_jstr(e, "name"), j->name) != 0 || !json_is_array(h))
      continue;
    h = json_deep_copy(h);
    json_t *last = json_array_get(h, json_array_size(h) - 1);
    if (last && strcmp(ctl_jstr(last, "state"), j->phase) != 0) {
      json_object_set_new(last, "endTimestamp", stamp(now_ms));
      json_t *n = json_pack("{s:o, s:n}", "startTimestamp", stamp(now_ms), "endTimestamp");
      if (*j->phase)
        json_object_set_new(n, "state", json_string(j->phase));
      json_array_append_new(h, n);
    }
    return h;
  }
  if (!*j->phase)
    return NULL;
  return json_pack("[{s:o, s:n, s:s}]", "startTimestamp", stamp(now_ms), "endTimestamp", "state",
                   j->phase);
}

static int64_t parse_ms(const char *s) {
  int64_t ms;
  return *s && kc_rfc3339_parse(s, &ms) == 0 ? ms : CTL_CRON_NEVER;
}

static json_t *job_status_entry(const json_t *prev_list, const ctl_jf_job *j, int64_t now_ms) {
  int64_t created = parse_ms(j->created), dur = 0, end = CTL_CRON_NEVER;
  const char *rd = ctl_jstr(j->status, "runningDuration");
  if (*rd && created != CTL_CRON_NEVER && ctl_go_duration(rd, &dur, NULL, 0) == 0)
    end = created + dur;
  json_t *e = json_pack("{s:s, s:o, s:o}", "name", j->name, "startTimestamp", stamp(created),
                        "endTimestamp", stamp(end));
  if (!e)
    return NULL;
  if (*j->phase)
    json_object_set_new(e, "state", json_string(j->phase));
  json_int_t rc = json_integer_value(json_object_get(j->status, "retryCount"));
  if (rc)
    json_object_set_new(e, "restartCount", json_integer(rc));
  json_t *h = histories(prev_list, j, now_ms);
  if (h && json_array_size(h))
    json_object_set_new(e, "runningHistories", h);
  else
    json_decref(h);
  return e;
}

/* The lists by phase: Volcano's map also holds Completing and Terminating, which are then in
 * no list at all (and not in unKnowJobs either). */
static const char *list_for(const char *phase) {
  static const struct {
    const char *phase, *list;
  } t[] = {{"Pending", "pendingJobs"},
           {"Running", "runningJobs"},
           {"Failed", "failedJobs"},
           {"Completed", "completedJobs"},
           {"Terminated", "terminatedJobs"},
           {"Completing", ""},
           {"Terminating", ""}};
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    if (!strcmp(t[i].phase, phase))
      return t[i].list;
  return "unKnowJobs";
}

/* getAllJobStatus. */
static json_t *all_status(const json_t *old, const ctl_jf_job *const *jobs, size_t n,
                          int64_t now_ms) {
  json_t *st = json_object(), *cond = json_object();
  const json_t *prev = json_object_get(old, "jobStatusList");
  json_t *list = json_is_array(prev) ? json_deep_copy(prev) : json_array();
  if (!st || !cond || !list)
    goto fail;
  for (size_t i = 0; i < n; i++) {
    const ctl_jf_job *j = jobs[i];
    const char *l = list_for(j->phase);
    if (*l) {
      json_t *a = json_object_get(st, l);
      if (!a) {
        a = json_array();
        json_object_set_new(st, l, a);
      }
      json_array_append_new(a, json_string(j->name));
    }
    json_t *c = json_pack("{s:o}", "createTime", stamp(parse_ms(j->created)));
    if (*j->phase)
      json_object_set_new(c, "phase", json_string(j->phase));
    const json_t *v = json_object_get(j->status, "runningDuration");
    if (v)
      json_object_set(c, "runningDuration", (json_t *)v);
    v = json_object_get(j->status, "taskStatusCount");
    if (json_object_size(v))
      json_object_set(c, "taskStatusCount", (json_t *)v);
    json_object_set_new(cond, j->name, c);
    json_t *e = job_status_entry(prev, j, now_ms);
    if (!e)
      goto fail;
    size_t k;
    json_t *have;
    bool found = false;
    json_array_foreach(list, k, have) if (!strcmp(ctl_jstr(have, "name"), j->name)) {
      json_array_set(list, k, e);
      found = true;
    }
    if (!found)
      json_array_append(list, e);
    json_decref(e);
  }
  if (json_object_size(cond))
    json_object_set(st, "conditions", cond);
  if (json_array_size(list))
    json_object_set(st, "jobStatusList", list);
  json_decref(cond);
  json_decref(list);
  return st;
fail:
  json_decref(st);
  json_decref(cond);
  json_decref(list);
  return NULL;
}

/* The state machine's update functions (Volcano's state/pending.go and running.go). A flow
 * still Pending when its last Job completes goes straight to Succeed: short Jobs may finish
 * before a sync sees them running, and a flow left Running then would never be synced again
 * (its own status write does not bring it back, and finished Jobs send no more events). */
static const char *next_phase(const char *phase, const json_t *st, size_t nflows) {
  size_t running = json_array_size(json_object_get(st, "runningJobs")),
         completed = json_array_size(json_object_get(st, "completedJobs")),
         failed = json_array_size(json_object_get(st, "failedJobs")),
         terminated = json_array_size(json_object_get(st, "terminatedJobs"));
  bool pending = !*phase || !strcmp(phase, "Pending");
  if (!pending && strcmp(phase, "Running") != 0)
    return phase;
  if (completed == nflows)
    return "Succeed";
  if (failed > 0 || terminated > 0)
    return "Failed";
  if (pending)
    return running > 0 || completed > 0 ? "Running" : "Pending";
  return phase;
}

/* Volcano's states count a flow as they decide it: the pending state both ways (a flow whose
 * Jobs all completed before a sync saw one running succeeds from Pending), the running state
 * only a success. */
static const char *counted_phase(const char *phase, const char *next) {
  bool pending = !*phase || !strcmp(phase, "Pending");
  if (!strcmp(next, "Succeed") && (pending || !strcmp(phase, "Running")))
    return "Succeed";
  if (!strcmp(next, "Failed") && pending)
    return "Failed";
  return NULL;
}

static int fail_flow(const json_t *old, const char *msg, ctl_jf_plan *p) {
  NOTE(p, "Warning", "InvalidJobFlow", "%s", msg);
  p->status = json_is_object(old) ? json_deep_copy(old) : json_object();
  if (!p->status)
    return KC_ENOMEM;
  json_object_set_new(p->status, "state", json_pack("{s:s}", "phase", "Failed"));
  return 0;
}

int ctl_jobflow_sync(const json_t *flow, const ctl_jf_job *const *jobs, size_t njobs,
                     const ctl_jf_lookup *lk, int64_t now_ms, ctl_jf_plan *p) {
  memset(p, 0, sizeof(*p));
  const json_t *spec = json_object_get(flow, "spec"), *old = json_object_get(flow, "status");
  const char *phase = ctl_jstr(json_object_get(old, "state"), "phase");
  if (*phase && strcmp(phase, "Pending") && strcmp(phase, "Running") && strcmp(phase, "Succeed") &&
      strcmp(phase, "Failed") && strcmp(phase, "Terminating")) {
    p->err = kc_errorf(p->errmsg, sizeof(p->errmsg), KC_EINVAL, "jobflow %s state %s is invalid",
                       ctl_jstr(json_object_get(flow, "metadata"), "name"), phase);
    return 0;
  }
  /* Failed and Terminating do nothing. */
  if (!strcmp(phase, "Failed") || !strcmp(phase, "Terminating"))
    return 0;
  if (!strcmp(ctl_jstr(spec, "jobRetainPolicy"), "delete") && !strcmp(phase, "Succeed")) {
    p->del = calloc(njobs + 1, sizeof(*p->del));
    if (!p->del)
      return KC_ENOMEM;
    for (size_t i = 0; i < njobs; i++)
      snprintf(p->del[p->ndel++], CTL_NAME_MAX, "%s", jobs[i]->name);
    return 0;
  }
  char err[600], cycle[sizeof(p->cycle)];
  if (ctl_jobflow_check_dag(json_object_get(spec, "flows"), err, sizeof(err), cycle,
                            sizeof(cycle))) {
    snprintf(p->cycle, sizeof(p->cycle), "%s", cycle);
    return fail_flow(old, err, p);
  }
  int rc = deploy(flow, lk, p);
  if (rc || p->err)
    return rc;
  const ctl_jf_job **sorted = calloc(njobs + 1, sizeof(*sorted));
  if (!sorted)
    return KC_ENOMEM;
  memcpy(sorted, jobs, njobs * sizeof(*sorted));
  qsort(sorted, njobs, sizeof(*sorted), cmp_jobs);
  json_t *st = all_status(old, sorted, njobs, now_ms);
  free(sorted);
  if (!st)
    return KC_ENOMEM;
  size_t nflows = json_array_size(json_object_get(spec, "flows"));
  const char *next = next_phase(phase, st, nflows);
  p->counted = counted_phase(phase, next);
  json_object_set_new(st, "state", json_pack("{s:s}", "phase", next));
  if (json_is_object(old) && json_equal(st, (json_t *)old))
    json_decref(st);
  else
    p->status = st;
  return 0;
}

void ctl_jf_plan_free(ctl_jf_plan *p) {
  for (size_t i = 0; i < p->ncreate; i++)
    json_decref(p->create[i]);
  free(p->create);
  free(p->del);
  json_decref(p->status);
  memset(p, 0, sizeof(*p));
}

/* ---- the JobTemplate controller ---- */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *ctl_jobtemplate_status(const json_t *tmpl, const char *const *names, size_t n) {
  if (n == 0)
    return NULL;
  const char **v = malloc(n * sizeof(*v));
  if (!v)
    return NULL;
  memcpy(v, names, n * sizeof(*v));
  qsort(v, n, sizeof(*v), cmp_str);
  json_t *list = json_array();
  for (size_t i = 0; list && i < n; i++)
    json_array_append_new(list, json_string(v[i]));
  free(v);
  const json_t *old = json_object_get(tmpl, "status");
  if (!list || json_equal(list, json_object_get(old, "jobDependsOnList"))) {
    json_decref(list);
    return NULL;
  }
  json_t *st = json_is_object(old) ? json_deep_copy(old) : json_object();
  json_object_set_new(st, "jobDependsOnList", list);
  return st;
}

bool ctl_jf_split_ref(const char *v, char *ns, size_t nscap, char *name, size_t namecap) {
  const char *dot = strchr(v, '.');
  if (!dot || strchr(dot + 1, '.'))
    return false;
  snprintf(ns, nscap, "%.*s", (int)(dot - v), v);
  snprintf(name, namecap, "%s", dot + 1);
  return true;
}
