/* The small controllers' framework: what their shells share.
 *
 * ctl_base (queue, podgroup, gc): their informers, one keyed work queue with Volcano's backoff
 * and --max-requeue-num, the writes in flight, the write fence, events, and a stop that waits
 * for the writes. A controller embeds a ctl_base, describes its informers as a table and gives
 * one process function; the base hands it one key at a time (never the same key twice at
 * once).
 *
 * The pieces below it, for shells that keep their own queue and count a whole sync in flight
 * rather than each call (cronjob, jobflow, jobtemplate): ctl_informers_new and
 * ctl_informers_start (also the job controller's), ctl_event_vrecord_json, and ctl_drain, the
 * stop that waits for what is in flight. */
#ifndef CTL_BASE_H
#define CTL_BASE_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "ctl_controllers.h"
#include "kc_events.h"
#include "ctl_inf.h"
#include "kc_workqueue.h"
#include "kc_error.h"

#define CTL_BASE_MAX_INF 4

typedef struct {
  const char *group, *version, *resource;
  const char *label_selector;                                       /* NULL: every object */
  void *(*decode)(json_t *obj, void *ud, char *err, size_t errlen); /* NULL: keep the JSON */
  void (*free_obj)(void *obj);
  void (*add)(const char *key, void *obj, void *ud);
  void (*update)(const char *key, void *old_obj, void *new_obj, void *ud);
  void (*del)(const char *key, void *obj, void *ud);
  const char *field_selector; /* NULL: none; copied by the informer */
  /* The object in Kubernetes' protobuf (a built-in resource; decode then takes a JSON reply):
   * used when the hub asks for protobuf. NULL: JSON only. In protobuf the watch has no
   * selectors and decode_pb applies them (CTL_INF_SKIP), so that every controller's consumer
   * of the resource shares one watch whatever its selectors (Volcano's controllers share
   * one informer of all pods). */
  void *(*decode_pb)(const uint8_t *data, size_t len, void *ud, char *err, size_t errlen);
  const char *namespace; /* NULL: every namespace; copied by the informer */
} ctl_inf_def;

/* Stopping: done(ud) is called from the loop once *inflight is 0 or deadline_ms has passed (a
 * warning names the controller then). Starting it again moves the deadline. */
typedef struct ctl_drain ctl_drain;
struct ctl_drain {
  uv_timer_t timer;
  bool started;
  const char *name; /* static */
  const int *inflight;
  uint64_t deadline;
  void (*done)(void *);
  void *ud;
  void (*closed)(ctl_drain *d);
};

void ctl_drain_start(ctl_drain *d, uv_loop_t *loop, const char *name, const int *inflight,
                     uint64_t deadline_ms, void (*done)(void *), void *ud);
/* When the drain started: closes its timer, calls closed(d) from the loop once it has closed
 * and returns true. Else false, and closed is not called. */
bool ctl_drain_close(ctl_drain *d, void (*closed)(ctl_drain *d));
/* Frees owner (free()) now, or once the drain's timer has closed when it was started. */
void ctl_drain_free_owner(ctl_drain *d, void *owner);

typedef struct ctl_base ctl_base;

/* Handles one key; must end with ctl_base_done (now or from a write's callback). */
typedef void (*ctl_base_process_fn)(ctl_base *b, const char *key);

struct ctl_base {
  ctl_env env;
  const char *name; /* the controller's name (static) */
  ctl_inf *inf[CTL_BASE_MAX_INF];
  size_t ninf;
  bool synced, started, stopping, closing;
  kc_workqueue *queue;
  ctl_base_process_fn process;
  void (*on_synced)(ctl_base *b); /* after every cache listed: queue what needs a sync */
  int inflight;                   /* writes not answered yet */
  uint64_t writes, write_errors, syncs;
  ctl_drain drain;                 /* the stop, waiting for the writes */
  void (*free_owner)(ctl_base *b); /* frees the struct that embeds the base */
};

/* Creates the informers of defs (ud of their handlers: the base) and the work queue
 * (workers keys at once). 0 or a kc_error code; on failure call ctl_base_close. */
KC_NODISCARD int ctl_base_init(ctl_base *b, const ctl_env *env, const char *name,
                               const ctl_inf_def *defs, size_t ninf, int workers,
                               ctl_base_process_fn process);
KC_NODISCARD int ctl_base_start(ctl_base *b);

/* The informers of a controller, as the base and the job controller's shell (ctl_shell.c) make
 * them: one per def into inf[0..n) (shared through hub when it is not NULL), each handler
 * called with ud and synced_cb(ud) after each first LIST. *made counts those created (the
 * caller frees them, also on failure). 0 or a kc_error code. */
KC_NODISCARD int ctl_informers_new(ctl_inf_hub *hub, kc_client *c, const ctl_inf_def *defs,
                                   size_t n, void (*synced_cb)(void *ud), void *ud, ctl_inf **inf,
                                   size_t *made);
/* Starts inf[0..n), stopping at the first that cannot start. */
KC_NODISCARD int ctl_informers_start(ctl_inf *const *inf, size_t n);
bool ctl_base_synced(const ctl_base *b);
void ctl_base_stop(ctl_base *b, uint64_t deadline_ms, void (*done)(void *ud), void *ud);
/* The same three as ctl_controller_def hooks, for a controller whose struct begins with its
 * ctl_base. */
KC_NODISCARD int ctl_base_def_start(void *c);
bool ctl_base_def_synced(const void *c);
void ctl_base_def_stop(void *c, uint64_t deadline_ms, void (*done)(void *ud), void *ud);
/* Frees everything the base holds, then free_owner(b) once no write is in flight and the
 * timer has closed (the client's shutdown answers the rest with KC_ECANCELED). */
void ctl_base_close(ctl_base *b, void (*free_owner)(ctl_base *b));

kc_store *ctl_base_store(const ctl_base *b, size_t i);
/* Calls fn(key, obj, b) for every object of informer i (an on_synced walks a cache this way
 * with its add handler). */
void ctl_base_each(ctl_base *b, size_t i, void (*fn)(const char *key, void *obj, void *ud));
/* Queues a key (no-op while stopping or before the caches synced: on_synced queues all). */
void ctl_base_add(ctl_base *b, const char *key);
void ctl_base_add_after(ctl_base *b, const char *key, uint64_t delay_ns);
/* Ends the processing of key: err 0 forgets its failures; otherwise it is requeued with
 * backoff until --max-requeue-num, after which give_up(b, key, err) is called (may be NULL)
 * and the key dropped. */
void ctl_base_done(ctl_base *b, const char *key, int err,
                   void (*give_up)(ctl_base *, const char *, int));

/* A write through the client, counted in flight. cb (may be NULL) gets the result unless
 * the base is closing. Refused with KC_ENOTLEADER when the fence is closed. */
typedef void (*ctl_base_cb)(ctl_base *b, const kc_api_result *res, void *ud);
KC_NODISCARD int ctl_base_call(ctl_base *b, kc_verb verb, const kc_ref *ref, const kc_query *q,
                               json_t *body, ctl_base_cb cb, void *ud);

/* An event on obj (best effort; logged when no recorder is configured). */
void ctl_base_event(ctl_base *b, const kc_object_ref *obj, const char *type, const char *reason,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Records an event on obj (borrowed; its metadata names it) of kind and apiVersion. rec may be
 * NULL (nothing is recorded). */
void ctl_event_vrecord_json(struct kc_event_recorder *rec, const char *kind,
                            const char *api_version, const json_t *obj, const char *type,
                            const char *reason, const char *fmt, va_list ap)
    __attribute__((format(printf, 7, 0)));

/* JSON helpers for decoders: a string at obj.a.b (NULL when absent). */
const char *ctl_json_str(const json_t *obj, const char *a, const char *b);

#endif
