/* The job controller's delayed actions (Volcano's delayActionMap): actions a policy asked for
 * after a timeout, pending until they are due or cancelled. A pure module: times come in as
 * arguments (due times in the caller's monotonic milliseconds); the shell keeps one timer
 * armed at ctl_delays_next_due() and replays each due action as a request. */
#ifndef CTL_DELAY_H
#define CTL_DELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_job.h"
#include "kc_error.h"

typedef struct ctl_delay ctl_delay;

typedef struct {
  ctl_delay *head, *tail; /* in the order armed */
  size_t n;
} ctl_delays;

void ctl_delays_init(ctl_delays *d);
/* Frees every pending action. */
void ctl_delays_close(ctl_delays *d);

/* When dl (its .at in Unix seconds) is due on a monotonic clock that reads now_ms while the
 * wall clock reads now_s: at once when .at has passed. */
uint64_t ctl_delay_due_ms(const ctl_delayed *dl, int64_t now_s, uint64_t now_ms);

/* Arms dl (copied) for the Job key, due at due_ms. One action per (key, event, action, task,
 * pod): arming it again keeps the first, as Volcano does. 1 armed, 0 kept, KC_ENOMEM. */
KC_NODISCARD int ctl_delays_arm(ctl_delays *d, const char *key, const ctl_delayed *dl,
                                uint64_t due_ms);
/* Cancels the Job key's actions that c selects; returns how many. */
size_t ctl_delays_cancel(ctl_delays *d, const char *key, const ctl_cancel *c);
/* Cancels every action of the Job key. */
void ctl_delays_drop_key(ctl_delays *d, const char *key);
/* The earliest due time; false when nothing is pending. */
bool ctl_delays_next_due(const ctl_delays *d, uint64_t *due_ms);
/* Takes out the earliest action due at now_ms (the first armed among equals) into *key
 * (cap bytes) and *out; false when none is due. */
bool ctl_delays_pop_due(ctl_delays *d, uint64_t now_ms, char *key, size_t cap, ctl_delayed *out);

#endif
