/* Delayed actions: see ctl_delay.h. A list in arming order; a Job has a handful at most. */
#include "ctl_delay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_log.h"

struct ctl_delay {
  ctl_delay *prev, *next;
  char key[2 * CTL_NAME_MAX];
  ctl_delayed d;
  uint64_t due_ms;
};

void ctl_delays_init(ctl_delays *d) {
  memset(d, 0, sizeof(*d));
}

static void unlink_one(ctl_delays *d, ctl_delay *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    d->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    d->tail = e->prev;
  d->n--;
  free(e);
}

void ctl_delays_close(ctl_delays *d) {
  while (d->head)
    unlink_one(d, d->head);
}

uint64_t ctl_delay_due_ms(const ctl_delayed *dl, int64_t now_s, uint64_t now_ms) {
  int64_t secs = dl->at - now_s;
  return now_ms + (secs > 0 ? (uint64_t)secs * 1000 : 0);
}

static bool same(const ctl_delay *e, const char *key, const ctl_delayed *dl) {
  return strcmp(e->key, key) == 0 && e->d.event == dl->event && e->d.action == dl->action &&
         strcmp(e->d.task, dl->task) == 0 && strcmp(e->d.pod, dl->pod) == 0;
}

int ctl_delays_arm(ctl_delays *d, const char *key, const ctl_delayed *dl, uint64_t due_ms) {
  for (const ctl_delay *e = d->head; e; e = e->next)
    if (same(e, key, dl))
      return 0;
  ctl_delay *e = calloc(1, sizeof(*e));
  if (!e)
    return KC_ENOMEM;
  e->d = *dl;
  e->due_ms = due_ms;
  snprintf(e->key, sizeof(e->key), "%s", key);
  e->prev = d->tail;
  if (d->tail)
    d->tail->next = e;
  else
    d->head = e;
  d->tail = e;
  d->n++;
  return 1;
}

static bool selected(const ctl_delay *e, const char *key, const ctl_cancel *c) {
  if (strcmp(e->key, key) != 0)
    return false;
  if (c->events && !(c->events & (1u << e->d.event)))
    return false;
  if (c->scope == CTL_SCOPE_TASK)
    return strcmp(e->d.task, c->name) == 0;
  if (c->scope == CTL_SCOPE_POD)
    return strcmp(e->d.pod, c->name) == 0;
  return true;
}

size_t ctl_delays_cancel(ctl_delays *d, const char *key, const ctl_cancel *c) {
  size_t n = 0;
  for (ctl_delay *e = d->head, *next; e; e = next) {
    next = e->next;
    if (!selected(e, key, c))
      continue;
    KC_V(2, "job %s: delayed action %s cancelled", key, ctl_action_name(e->d.action));
    unlink_one(d, e);
    n++;
  }
  return n;
}

void ctl_delays_drop_key(ctl_delays *d, const char *key) {
  ctl_cancel all = {.scope = CTL_SCOPE_JOB};
  ctl_delays_cancel(d, key, &all);
}

static ctl_delay *earliest(const ctl_delays *d) {
  ctl_delay *best = NULL;
  for (ctl_delay *e = d->head; e; e = e->next)
    if (!best || e->due_ms < best->due_ms)
      best = e;
  return best;
}

bool ctl_delays_next_due(const ctl_delays *d, uint64_t *due_ms) {
  const ctl_delay *e = earliest(d);
  if (e)
    *due_ms = e->due_ms;
  return e != NULL;
}

bool ctl_delays_pop_due(ctl_delays *d, uint64_t now_ms, char *key, size_t cap, ctl_delayed *out) {
  ctl_delay *e = earliest(d);
  if (!e || e->due_ms > now_ms)
    return false;
  snprintf(key, cap, "%s", e->key);
  *out = e->d;
  unlink_one(d, e);
  return true;
}
