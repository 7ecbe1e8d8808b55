/* Shared pieces of the small controllers' shells (see ctl_mini.h). */
#include "ctl_mini.h"

#include <stdlib.h>

#include "ctl_note.h"
#include "kc_events.h"

void ctl_mini_vevent(struct kc_event_recorder *rec, const char *kind, const char *api_version,
                     const json_t *obj, const char *type, const char *reason, const char *fmt,
                     va_list ap) {
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

static void drain_tick(uv_timer_t *t) {
  ctl_drain *d = t->data;
  if (*d->inflight > 0 && uv_now(t->loop) < d->deadline)
    return;
  uv_timer_stop(t);
  if (d->done) {
    void (*done)(void *) = d->done;
    d->done = NULL;
    done(d->ud);
  }
}

void ctl_drain_start(ctl_drain *d, uv_loop_t *loop, const int *inflight, uint64_t deadline_ms,
                     void (*done)(void *), void *ud) {
  d->inflight = inflight;
  d->deadline = uv_now(loop) + deadline_ms;
  d->done = done;
  d->ud = ud;
  uv_timer_init(loop, &d->timer);
  d->timer.data = d;
  d->started = true;
  uv_timer_start(&d->timer, drain_tick, 0, 20);
}

static void free_data(uv_handle_t *h) {
  free(h->data);
}

void ctl_drain_free_owner(ctl_drain *d, void *owner) {
  if (!d->started) {
    free(owner);
    return;
  }
  d->timer.data = owner;
  uv_close((uv_handle_t *)&d->timer, free_data);
}
