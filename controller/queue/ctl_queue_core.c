/* The queue controller's decisions; see ctl_queue.h. Pure: unit-tested in
 * tests/unit/test_ctl_queue.c. */
#include <stdio.h>
#include <string.h>

#include "ctl_queue.h"
#include "kc_error.h"

static const char OPEN[] = "Open", CLOSED[] = "Closed", CLOSING[] = "Closing",
                  UNKNOWN[] = "Unknown";

const char *ctl_queue_action_name(ctl_queue_action a) {
  return a == CTL_QA_OPEN ? "OpenQueue" : a == CTL_QA_CLOSE ? "CloseQueue" : "SyncQueue";
}

ctl_queue_action ctl_queue_action_parse(const char *s) {
  if (s && strcmp(s, "OpenQueue") == 0)
    return CTL_QA_OPEN;
  if (s && strcmp(s, "CloseQueue") == 0)
    return CTL_QA_CLOSE;
  return CTL_QA_SYNC;
}

int ctl_queue_count_of(const char *phase) {
  static const char *const names[CTL_QC_COUNT] = {"Pending", "Running", "Unknown", "Inqueue",
                                                  "Completed"};
  for (int i = 0; phase && i < CTL_QC_COUNT; i++)
    if (strcmp(phase, names[i]) == 0)
      return i;
  return -1;
}

static bool is(const char *state, const char *want) {
  return state && strcmp(state, want) == 0;
}

static bool closed_or_closing(const char *state) {
  return is(state, CLOSED) || is(state, CLOSING);
}

static void annotate(ctl_queue_plan *p, const char *queue, const char *value) {
  if (p->nannotate > CTL_QUEUE_MAX_FANOUT)
    return;
  ctl_queue_annotate *a = &p->annotate[p->nannotate++];
  snprintf(a->queue, sizeof(a->queue), "%s", queue);
  a->value = value;
}

static void enqueue(ctl_queue_plan *p, const char *queue, ctl_queue_action action) {
  if (p->nenqueue > CTL_QUEUE_MAX_FANOUT)
    return;
  ctl_queue_request *r = &p->enqueue[p->nenqueue++];
  snprintf(r->queue, sizeof(r->queue), "%s", queue);
  r->action = action;
}

/* The status to write: state plus the counts of the view; written when either differs. */
static void set_status(const ctl_queue_view *v, ctl_queue_plan *p, const char *state) {
  const char *have = v->q.state ? v->q.state : "";
  p->state = state;
  p->state_changed = strcmp(have, state) != 0;
  memcpy(p->counts, v->counts, sizeof(p->counts));
  bool counts_differ =
      !v->has_status_counts || memcmp(v->status_counts, v->counts, sizeof(v->counts)) != 0;
  p->write_status = p->state_changed || counts_differ;
  p->counts_only = !p->state_changed && counts_differ;
}

/* Volcano syncHierarchicalQueue: a queue follows a parent that closes, and reopens with it
 * when it was closed because of it. */
static void sync_hierarchy(const ctl_queue_view *v, ctl_queue_plan *p) {
  if (is(v->q.name, CTL_QUEUE_ROOT) || !v->parent)
    return;
  if (closed_or_closing(v->parent->state)) {
    if (!closed_or_closing(p->state)) {
      annotate(p, v->q.name, "true");
      enqueue(p, v->q.name, CTL_QA_CLOSE);
    }
  } else if (is(v->parent->state, OPEN) && closed_or_closing(p->state) &&
             is(v->q.closed_by_parent, "true")) {
    enqueue(p, v->q.name, CTL_QA_OPEN);
  }
}

/* Volcano syncQueue: the default parent, the counts, the state the machine chose. */
static int do_sync(const ctl_queue_view *v, ctl_queue_plan *p, const char *state) {
  p->set_parent_root = !is(v->q.name, CTL_QUEUE_ROOT) && (!v->q.parent || !*v->q.parent);
  set_status(v, p, state);
  sync_hierarchy(v, p);
  return 0;
}

/* Volcano openQueue: the parent must be open; children closed by this queue reopen. */
static int do_open(const ctl_queue_view *v, ctl_queue_plan *p) {
  if (!is(v->q.state, OPEN)) {
    const char *parent = v->q.parent ? v->q.parent : "";
    if (*parent && !is(parent, CTL_QUEUE_ROOT)) {
      if (!v->parent) {
        snprintf(p->errmsg, sizeof(p->errmsg), "Failed to get parent queue %s of queue %s", parent,
                 v->q.name);
        return p->err = KC_EINVAL;
      }
      if (closed_or_closing(v->parent->state)) {
        snprintf(p->errmsg, sizeof(p->errmsg),
                 "Failed to open queue %s because its parent queue %s is closing or closed. "
                 "Open the parent queue first.",
                 v->q.name, parent);
        return p->err = KC_EINVAL;
      }
    }
    for (size_t i = 0; i < v->nchildren; i++)
      if (is(v->children[i].closed_by_parent, "true"))
        enqueue(p, v->children[i].name, CTL_QA_OPEN);
  }
  set_status(v, p, OPEN);
  p->fail_reason = "OpenQueue";
  if (!is(v->q.closed_by_parent, "false"))
    annotate(p, v->q.name, "false");
  return 0;
}

/* Volcano closeQueue: children close with it (marked closed by their parent); the queue is
 * Closing while PodGroups remain in it, then Closed. root is never closed. */
static int do_close(const ctl_queue_view *v, ctl_queue_plan *p) {
  if (!closed_or_closing(v->q.state)) {
    if (is(v->q.name, CTL_QUEUE_ROOT)) {
      snprintf(p->errmsg, sizeof(p->errmsg), "Root queue cannot be closed");
      return 0;
    }
    for (size_t i = 0; i < v->nchildren; i++)
      if (!closed_or_closing(v->children[i].state)) {
        annotate(p, v->children[i].name, "true");
        enqueue(p, v->children[i].name, CTL_QA_CLOSE);
      }
  }
  set_status(v, p, v->npodgroups ? CLOSING : CLOSED);
  p->fail_reason = "CloseQueue";
  if (p->state_changed) {
    p->event_reason = "CloseQueue";
    p->event_message = "Close queue succeed";
  }
  return 0;
}

int ctl_queue_decide(const ctl_queue_view *v, ctl_queue_action a, ctl_queue_plan *p) {
  memset(p, 0, sizeof(*p));
  const char *st = v->q.state ? v->q.state : "";
  const char *by_pgs = v->npodgroups ? CLOSING : CLOSED;
  if (!*st || is(st, OPEN)) { /* state/open.go */
    if (a == CTL_QA_CLOSE)
      return do_close(v, p);
    return do_sync(v, p, OPEN);
  }
  if (is(st, CLOSED)) { /* state/closed.go */
    if (a == CTL_QA_OPEN)
      return do_open(v, p);
    return do_sync(v, p, CLOSED);
  }
  if (is(st, CLOSING)) { /* state/closing.go */
    if (a == CTL_QA_OPEN)
      return do_open(v, p);
    return do_sync(v, p, by_pgs);
  }
  if (is(st, UNKNOWN)) { /* state/unknown.go */
    if (a == CTL_QA_OPEN)
      return do_open(v, p);
    if (a == CTL_QA_CLOSE)
      return do_close(v, p);
    return do_sync(v, p, UNKNOWN);
  }
  snprintf(p->errmsg, sizeof(p->errmsg), "queue %s state %s is invalid", v->q.name, st);
  return p->err = KC_EINVAL;
}
