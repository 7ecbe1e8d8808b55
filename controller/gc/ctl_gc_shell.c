/* gc-controller: Volcano's pkg/controllers/garbagecollector. Finished Jobs with
 * ttlSecondsAfterFinished are queued; once the TTL has passed the Job is read again from the
 * API server (the cached one may be stale: its TTL may have been changed) and, if it still
 * has expired, deleted with foreground propagation and its UID as precondition. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"
#include "ctl_gc.h"
#include "kc_clock.h"
#include "kc_codec.h"
#include "kc_error.h"
#include "kc_log.h"

typedef struct {
  char ns[254], name[254], uid[64], phase[32];
  ctl_gc_job j; /* phase points into this struct */
} gc_job;

typedef struct {
  ctl_base base; /* first */
  uint64_t deleted;
} gc_ctl;

static void copy(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

/* Fills g from a Job's JSON (borrowed). */
static void job_of(const json_t *obj, gc_job *g) {
  memset(g, 0, sizeof(*g));
  const json_t *meta = json_object_get(obj, "metadata");
  copy(g->ns, sizeof(g->ns), json_string_value(json_object_get(meta, "namespace")));
  copy(g->name, sizeof(g->name), json_string_value(json_object_get(meta, "name")));
  copy(g->uid, sizeof(g->uid), json_string_value(json_object_get(meta, "uid")));
  const json_t *state = json_object_get(json_object_get(obj, "status"), "state");
  copy(g->phase, sizeof(g->phase), json_string_value(json_object_get(state, "phase")));
  g->j.phase = g->phase;
  const json_t *ttl = json_object_get(json_object_get(obj, "spec"), "ttlSecondsAfterFinished");
  g->j.has_ttl = json_is_integer(ttl);
  g->j.ttl_s = json_integer_value(ttl);
  g->j.deleting = json_object_get(meta, "deletionTimestamp") != NULL;
  const char *t = json_string_value(json_object_get(state, "lastTransitionTime"));
  g->j.has_finish = t && kc_rfc3339_parse(t, &g->j.finish_ms) == 0;
}

static void *decode_job(json_t *obj, void *ud, char *err, size_t errlen) {
  gc_job *g = malloc(sizeof(*g));
  if (!g) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  job_of(obj, g);
  return g;
}

/* Volcano addJob/updateJob: only Jobs that need cleaning up are queued. */
static void on_job(const char *key, void *obj, void *ud) {
  const gc_job *g = obj;
  if (!g->j.deleting && ctl_gc_needs_cleanup(&g->j))
    ctl_base_add(ud, key);
}

static void on_job_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  on_job(key, new_obj, ud);
}

static void all_synced(ctl_base *b) {
  ctl_base_each(b, 0, on_job);
}

static const ctl_inf_def defs[] = {
    {"batch.volcano.sh", "v1alpha1", "jobs", NULL, decode_job, free, on_job, on_job_update, NULL},
};

typedef struct {
  char key[600];
  gc_job g;
} gc_run;

static void deleted(ctl_base *b, const kc_api_result *res, void *ud) {
  gc_run *r = ud;
  int err = res->err;
  if (err == 0) {
    ((gc_ctl *)b)->deleted++;
    KC_INFO("gc-controller: deleted Job %s/%s, %lld s after it finished", r->g.ns, r->g.name,
            (long long)r->g.j.ttl_s);
  } else if (err == KC_ENOTFOUND || err == KC_ECONFLICT) {
    err = 0; /* gone, or a new Job with the same name: its own checks will run */
  } else {
    KC_WARN("gc-controller: cannot delete Job %s/%s: %s", r->g.ns, r->g.name, res->message);
  }
  ctl_base_done(b, r->key, err, NULL);
  free(r);
}

/* The fresh copy: decide again on it, and delete exactly it. */
static void reread(ctl_base *b, const kc_api_result *res, void *ud) {
  gc_run *r = ud;
  if (res->err) {
    ctl_base_done(b, r->key, res->err == KC_ENOTFOUND ? 0 : res->err, NULL);
    free(r);
    return;
  }
  job_of(res->obj, &r->g);
  ctl_gc_verdict v;
  int64_t wait_ms;
  int rc = ctl_gc_decide(&r->g.j, kc_clock_wall_ms(), &v, &wait_ms);
  if (rc || v != CTL_GC_EXPIRED) {
    if (v == CTL_GC_WAIT)
      ctl_base_add_after(b, r->key, (uint64_t)wait_ms * 1000000ull);
    ctl_base_done(b, r->key, rc, NULL);
    free(r);
    return;
  }
  KC_V(4, "gc-controller: cleaning up Job %s/%s", r->g.ns, r->g.name);
  kc_ref ref = {"batch.volcano.sh", "v1alpha1", "jobs", r->g.ns, r->g.name, NULL};
  kc_query q = {.propagation_policy = "Foreground", .precondition_uid = r->g.uid};
  rc = ctl_base_call(b, KC_DELETE, &ref, &q, NULL, deleted, r);
  if (rc) {
    ctl_base_done(b, r->key, rc, NULL);
    free(r);
  }
}

static void process(ctl_base *b, const char *key) {
  const gc_job *g = kc_store_get(ctl_base_store(b, 0), key);
  if (!g) {
    ctl_base_done(b, key, 0, NULL);
    return;
  }
  ctl_gc_verdict v;
  int64_t wait_ms;
  int rc = ctl_gc_decide(&g->j, kc_clock_wall_ms(), &v, &wait_ms);
  if (rc)
    KC_WARN("gc-controller: unable to find the time when the Job %s finished", key);
  if (rc || v != CTL_GC_EXPIRED) {
    if (v == CTL_GC_WAIT)
      ctl_base_add_after(b, key, (uint64_t)wait_ms * 1000000ull);
    ctl_base_done(b, key, rc, NULL);
    return;
  }
  gc_run *r = malloc(sizeof(*r));
  if (!r) {
    ctl_base_done(b, key, KC_ENOMEM, NULL);
    return;
  }
  copy(r->key, sizeof(r->key), key);
  r->g = *g;
  r->g.j.phase = r->g.phase;
  kc_ref ref = {"batch.volcano.sh", "v1alpha1", "jobs", g->ns, g->name, NULL};
  /* A GET is not a write, but it goes through the same counting so a stop waits for it. */
  rc = ctl_base_call(b, KC_GET, &ref, NULL, NULL, reread, r);
  if (rc) {
    free(r);
    ctl_base_done(b, key, rc, NULL);
  }
}

static int gc_init(const ctl_env *env, void **out) {
  gc_ctl *gc = calloc(1, sizeof(*gc));
  if (!gc)
    return KC_ENOMEM;
  *out = gc;
  gc->base.on_synced = all_synced;
  return ctl_base_init(&gc->base, env, "gc-controller", defs, 1, env->workers_gc, process);
}

static void free_owner(ctl_base *b) {
  free(b);
}
static void gc_free(void *c) {
  if (!c)
    return;
  gc_ctl *gc = c;
  KC_INFO("gc-controller stopped: %llu Jobs deleted", (unsigned long long)gc->deleted);
  ctl_base_close(&gc->base, free_owner);
}

const ctl_controller_def ctl_gc_controller = {
    .name = "gc-controller",
    .informers = "jobs",
    .init = gc_init,
    .start = ctl_base_def_start,
    .synced = ctl_base_def_synced,
    .stop = ctl_base_def_stop,
    .free = gc_free,
};
