/* What the shells of the small controllers (cronjob, jobflow, jobtemplate) share: recording an
 * event on the object a sync is about, and draining the writes in flight when they stop. */
#ifndef CTL_MINI_H
#define CTL_MINI_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct kc_event_recorder;

/* Records an event on obj (borrowed; its metadata names it) of kind and apiVersion. rec may be
 * NULL (nothing is recorded). */
void ctl_mini_vevent(struct kc_event_recorder *rec, const char *kind, const char *api_version,
                     const json_t *obj, const char *type, const char *reason, const char *fmt,
                     va_list ap) __attribute__((format(printf, 7, 0)));

/* Stopping: done(ud) is called from the loop once *inflight is 0 or deadline_ms has passed. */
typedef struct {
  uv_timer_t timer;
  bool started;
  const int *inflight;
  uint64_t deadline;
  void (*done)(void *);
  void *ud;
} ctl_drain;

void ctl_drain_start(ctl_drain *d, uv_loop_t *loop, const int *inflight, uint64_t deadline_ms,
                     void (*done)(void *), void *ud);
/* Frees owner (free()) now, or once the drain's timer has closed when it was started. */
void ctl_drain_free_owner(ctl_drain *d, void *owner);

#endif
