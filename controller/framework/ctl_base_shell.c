/* The small controllers' framework; see ctl_base.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"
#include "ctl_note.h"
#include "kc_container.h"
#include "kc_error.h"
#include "kc_leader.h"
#include "kc_log.h"

const char *ctl_json_str(const json_t *obj, const char *a, const char *b) {
  const json_t *v = json_object_get(obj, a);
  if (b)
    v = json_object_get(v, b);
  return json_string_value(v);
}

kc_store *ctl_base_store(const ctl_base *b, size_t i) {
  return i < b->ninf && b->inf[i] ? ctl_inf_store(b->inf[i]) : NULL;
}

void ctl_base_each(ctl_base *b, size_t i, void (*fn)(const char *key, void *obj, void *ud)) {
  kc_store_iter it;
  const char *k;
  void *o;
  kc_store_iter_init(ctl_base_store(b, i), &it);
  while (kc_store_iter_next(&it, &k, &o))
    fn(k, o, b);
}

static void on_synced(void *ud) {
  ctl_base *b = ud;
  for (size_t i = 0; i < b->ninf; i++)
    if (!ctl_inf_has_synced(b->inf[i]))
      return;
  if (b->synced)
    return;
  b->synced = true;
  KC_INFO("%s: caches synced", b->name);
  if (b->on_synced)
    b->on_synced(b);
}

static void process_key(kc_workqueue *q, const char *key, void *ud) {
  ctl_base *b = ud;
  if (b->stopping) {
    kc_workqueue_done(q, key);
    return;
  }
  b->syncs++;
  b->process(b, key);
}

int ctl_base_init(ctl_base *b, const ctl_env *env, const char *name, const ctl_inf_def *defs,
                  size_t ninf, int workers, ctl_base_process_fn process) {
  b->env = *env;
  b->name = name;
  b->process = process;
  if (ninf > CTL_BASE_MAX_INF)
    return KC_EINVAL;
  /* Volcano's controllers use workqueue.DefaultControllerRateLimiter: 5 ms doubling to
   * 1000 s per key, and an overall 10 qps / 100 burst bucket. */
  kc_workqueue_opts qo = {.name = name,
                          .backoff_base_ns = 5 * 1000000ull,
                          .backoff_max_ns = 1000ull * 1000000000ull,
                          .process = process_key,
                          .process_ud = b,
                          .workers = workers > 0 ? workers : 1};
  int rc = kc_workqueue_new(env->loop, &qo, &b->queue);
  if (rc)
    return rc;
  if (env->metrics && (rc = kc_workqueue_use_metrics(b->queue, env->metrics)))
    return rc;
  return ctl_informers_new(env->hub, env->client, defs, ninf, on_synced, b, b->inf, &b->ninf);
}

int ctl_informers_new(ctl_inf_hub *hub, kc_client *c, const ctl_inf_def *defs, size_t n,
                      void (*synced_cb)(void *), void *ud, ctl_inf **inf, size_t *made) {
  *made = 0;
  for (size_t i = 0; i < n; i++) {
    const ctl_inf_def *d = &defs[i];
    bool pb = d->decode_pb && ctl_inf_hub_protobuf(hub);
    kc_informer_options io = {.group = d->group,
                              .version = d->version,
                              .resource = d->resource,
                              .namespace = d->namespace,
                              .label_selector = pb ? NULL : d->label_selector,
                              .field_selector = pb ? NULL : d->field_selector,
                              .protobuf = pb};
    kc_informer_handlers h = {.decode = d->decode,
                              .decode_pb = d->decode_pb,
                              .free_obj = d->free_obj,
                              .on_add = d->add,
                              .on_update = d->update,
                              .on_delete = d->del,
                              .on_synced = synced_cb,
                              .ud = ud};
    int rc = ctl_inf_new(hub, c, &io, &h, &inf[i]);
    if (rc)
      return rc;
    (*made)++;
  }
  return 0;
}

int ctl_informers_start(ctl_inf *const *inf, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int rc = ctl_inf_start(inf[i]);
    if (rc)
      return rc;
  }
  return 0;
}

int ctl_base_start(ctl_base *b) {
  if (b->started)
    return KC_EINVAL;
  b->started = true;
  return ctl_informers_start(b->inf, b->ninf);
}

bool ctl_base_synced(const ctl_base *b) {
  return b->synced;
}

int ctl_base_def_start(void *c) {
  return ctl_base_start(c);
}

bool ctl_base_def_synced(const void *c) {
  return ctl_base_synced(c);
}

void ctl_base_def_stop(void *c, uint64_t deadline_ms, void (*done)(void *ud), void *ud) {
  ctl_base_stop(c, deadline_ms, done, ud);
}

void ctl_base_add(ctl_base *b, const char *key) {
  if (!b->stopping && b->synced)
    kc_workqueue_add(b->queue, key);
}

void ctl_base_add_after(ctl_base *b, const char *key, uint64_t delay_ns) {
  if (!b->stopping && b->synced)
    kc_workqueue_add_after(b->queue, key, delay_ns);
}

void ctl_base_done(ctl_base *b, const char *key, int err,
                   void (*give_up)(ctl_base *, const char *, int)) {
  if (err == 0 || b->stopping) {
    kc_workqueue_forget(b->queue, key);
    kc_workqueue_done(b->queue, key);
    return;
  }
  int max = b->env.max_requeue;
  if (max < 0 || kc_workqueue_num_requeues(b->queue, key) < max) {
    kc_workqueue_done(b->queue, key);
    kc_workqueue_add_rate_limited(b->queue, key);
    return;
  }
  if (give_up)
    give_up(b, key, err);
  KC_V(2, "%s: dropping %s out of the queue: %s", b->name, key, kc_strerror(err));
  kc_workqueue_forget(b->queue, key);
  kc_workqueue_done(b->queue, key);
}

/* ---- writes ---- */

typedef struct {
  ctl_base *b;
  ctl_base_cb cb;
  void *ud;
} call;

static void maybe_free(ctl_base *b) {
  if (b->closing && b->inflight == 0 && !b->drain.started && b->free_owner) {
    void (*f)(ctl_base *) = b->free_owner;
    b->free_owner = NULL;
    f(b);
  }
}

static void call_done(const kc_api_result *res, void *data) {
  call *c = data;
  ctl_base *b = c->b;
  b->inflight--;
  if (res->err && res->err != KC_ECANCELED)
    b->write_errors++;
  if (!b->closing && c->cb)
    c->cb(b, res, c->ud);
  free(c);
  maybe_free(b);
}

int ctl_base_call(ctl_base *b, kc_verb verb, const kc_ref *ref, const kc_query *q, json_t *body,
                  ctl_base_cb cb, void *ud) {
  if (b->closing)
    return KC_ECANCELED;
  if (b->env.leader && kc_leader_fence(b->env.leader) != 0)
    return KC_ENOTLEADER;
  call *c = calloc(1, sizeof(*c));
  if (!c)
    return KC_ENOMEM;
  c->b = b;
  c->cb = cb;
  c->ud = ud;
  int rc = kc_api_call(b->env.client, verb, ref, q, body, call_done, c);
  if (rc) {
    free(c);
    return rc;
  }
  b->inflight++;
  b->writes++;
  return 0;
}

void ctl_base_event(ctl_base *b, const kc_object_ref *obj, const char *type, const char *reason,
                    const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  KC_V(2, "%s: event %s %s %s/%s: %s", b->name, type, reason, obj->namespace ? obj->namespace : "",
       obj->name, msg);
  if (b->env.events) {
    int rc = kc_event_record(b->env.events, obj, type, reason, "%s", msg);
    if (rc)
      KC_WARN("%s: cannot record event %s on %s: %s", b->name, reason, obj->name, kc_strerror(rc));
  }
}

/* ---- events on a JSON object ---- */

void ctl_event_vrecord_json(struct kc_event_recorder *rec, const char *kind,
                            const char *api_version, const json_t *obj, const char *type,
                            const char *reason, const char *fmt, va_list ap) {
  if (!rec)
    return;
  const json_t *m = json_object_get(obj, "metadata");
  kc_object_ref ref = {.kind = kind,
                       .namespace = ctl_jstr(m, "namespace"),
                       .name = ctl_jstr(m, "name"),
                       .uid = ctl_jstr(m, "uid"),
                       .api_version = api_version,
                       .resource_version = ctl_jstr(m, "resourceVersion")};
  kc_event_vrecord(rec, &ref, type, reason, fmt, ap);
}

/* ---- the drain: a stop that waits for what is in flight ---- */

static void drain_tick(uv_timer_t *t) {
  ctl_drain *d = container_of(t, ctl_drain, timer);
  if (*d->inflight > 0 && uv_now(t->loop) < d->deadline)
    return;
  if (*d->inflight > 0)
    KC_WARN("%s: shutdown deadline passed with %d writes in flight", d->name, *d->inflight);
  uv_timer_stop(t);
  void (*done)(void *) = d->done;
  d->done = NULL;
  if (done)
    done(d->ud);
}

void ctl_drain_start(ctl_drain *d, uv_loop_t *loop, const char *name, const int *inflight,
                     uint64_t deadline_ms, void (*done)(void *), void *ud) {
  d->name = name;
  d->inflight = inflight;
  d->deadline = uv_now(loop) + deadline_ms;
  d->done = done;
  d->ud = ud;
  if (!d->started) {
    uv_timer_init(loop, &d->timer);
    d->started = true;
  }
  uv_timer_start(&d->timer, drain_tick, 0, 20);
}

static void drain_closed(uv_handle_t *h) {
  ctl_drain *d = container_of((uv_timer_t *)h, ctl_drain, timer);
  d->started = false;
  d->closed(d);
}

bool ctl_drain_close(ctl_drain *d, void (*closed)(ctl_drain *d)) {
  if (!d->started)
    return false;
  d->closed = closed;
  uv_timer_stop(&d->timer);
  uv_close((uv_handle_t *)&d->timer, drain_closed);
  return true;
}

static void free_ud(ctl_drain *d) {
  free(d->ud);
}

void ctl_drain_free_owner(ctl_drain *d, void *owner) {
  d->ud = owner;
  if (!ctl_drain_close(d, free_ud))
    free(owner);
}

/* ---- stop and close ---- */

void ctl_base_stop(ctl_base *b, uint64_t deadline_ms, void (*done)(void *ud), void *ud) {
  b->stopping = true;
  for (size_t i = 0; i < b->ninf; i++) {
    ctl_inf_free(b->inf[i]);
    b->inf[i] = NULL;
  }
  kc_workqueue_shutdown(b->queue);
  ctl_drain_start(&b->drain, b->env.loop, b->name, &b->inflight, deadline_ms, done, ud);
}

static void base_drain_closed(ctl_drain *d) {
  maybe_free(container_of(d, ctl_base, drain));
}

void ctl_base_close(ctl_base *b, void (*free_owner)(ctl_base *b)) {
  b->stopping = b->closing = true;
  b->free_owner = free_owner;
  for (size_t i = 0; i < b->ninf; i++) {
    ctl_inf_free(b->inf[i]);
    b->inf[i] = NULL;
  }
  kc_workqueue_free(b->queue);
  b->queue = NULL;
  if (!ctl_drain_close(&b->drain, base_drain_closed))
    maybe_free(b);
}
