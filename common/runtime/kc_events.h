/* A core/v1 Event recorder with client-go's correlation (tools/record events_cache.go), as
 * Volcano uses it (record.NewBroadcaster -> CoreV1().Events("")).
 *
 * Each recorded event passes, in order:
 *  1. the spam filter: a token bucket per (source, involved object), burst 25, refilled at
 *     one token per 5 minutes; an event without a token is dropped;
 *  2. the aggregator: events of the same (source, object, type, reason) with different
 *     messages are "similar"; within 10 minutes of the last one, from the 10th distinct
 *     message on they are written as ONE event whose message is
 *     "(combined from similar events): <latest message>";
 *  3. the logger: an event identical to one already written (same source, object, type,
 *     reason and message, or the same combined event) increments that event's count and
 *     lastTimestamp with a PATCH instead of creating another.
 * Both caches are LRUs of 4096 entries. Their keys hold the object's uid, which a deleted
 * object never gets back: kc_event_forget drops its entries (client-go keeps them until the
 * LRU pushes them out, ~5 MB at 4096 each, grown over the first few thousand objects). New events
 * are named "<object name>.<hex unix nanoseconds>" like client-go's.
 *
 * Writes go out through kc_api one at a time in order (so a PATCH never overtakes the CREATE
 * it counts on); kc_event_record only queues (at most 1000 waiting, then new events are
 * dropped, as client-go does) and never blocks. A PATCH that finds the event gone creates it
 * again.
 *
 * The correlation is the pure kc_event_cache, testable with a fake clock. Everything runs on
 * the loop thread. */
#ifndef KC_EVENTS_H
#define KC_EVENTS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_api.h"
#include "kc_error.h"

/* The involved object. Strings are borrowed for the call. */
typedef struct {
  const char *kind;
  const char *namespace; /* NULL or "" for a cluster-scoped object (event goes to "default") */
  const char *name;
  const char *uid;
  const char *api_version;
  const char *resource_version;
  const char *field_path;
} kc_object_ref;

/* The reference of a core/v1 Pod (strings borrowed), the object of most events. */
static inline kc_object_ref kc_pod_ref(const char *ns, const char *name, const char *uid) {
  return (kc_object_ref){
      .kind = "Pod", .namespace = ns, .name = name, .uid = uid, .api_version = "v1"};
}

#define KC_EVENT_NORMAL  "Normal"
#define KC_EVENT_WARNING "Warning"

#define KC_EVENT_MAX_MESSAGE 1024 /* longer messages are cut (the API's note field limit) */

/* ---- the correlator (pure) ---- */

typedef struct kc_event_cache kc_event_cache;

typedef struct {
  bool drop;  /* the spam filter refused it */
  bool patch; /* PATCH the existing event `name`; otherwise CREATE it */
  char name[300];
  char message[KC_EVENT_MAX_MESSAGE + 64]; /* the message to write (maybe combined) */
  int count;
  int64_t first_s, last_s; /* wall clock, Unix seconds */
} kc_event_decision;

/* component and host are copied (host may be NULL). *out is new. */
KC_NODISCARD int kc_event_cache_new(const char *component, const char *host, kc_event_cache **out);
void kc_event_cache_free(kc_event_cache *c);
/* Correlates one event at monotonic time now_ns and wall time wall_ns (Unix nanoseconds).
 * 0, KC_EINVAL (no object name, kind, reason or type), KC_ENOMEM. */
KC_NODISCARD int kc_event_cache_observe(kc_event_cache *c, const kc_object_ref *obj,
                                        const char *type, const char *reason, const char *message,
                                        uint64_t now_ns, int64_t wall_ns, kc_event_decision *d);
/* The object with this uid was deleted: its entries can never be hit again (a new object
 * gets a new uid). They are removed together with those of other deleted objects, after
 * every 64th uid or at kc_event_cache_flush, so a burst of deletions costs one pass. */
void kc_event_cache_forget(kc_event_cache *c, const char *uid);
void kc_event_cache_flush(kc_event_cache *c);
/* Entries held, all three maps together. */
size_t kc_event_cache_len(const kc_event_cache *c);

/* ---- the recorder ---- */

typedef struct kc_event_recorder kc_event_recorder;

typedef struct {
  uint64_t recorded, dropped_spam, dropped_full, created, patched, failed;
  size_t cached; /* correlation entries held */
} kc_event_stats;

/* component is the source ("vc-scheduler", "vc-controller-manager"); host may be NULL.
 * c is borrowed and must outlive the recorder. *out is new. */
KC_NODISCARD int kc_event_recorder_new(kc_client *c, const char *component, const char *host,
                                       kc_event_recorder **out);
/* Drops the events still queued; the memory is released when the write in flight ends, so
 * run the loop afterwards. Free it before its client. NULL is a no-op. */
void kc_event_recorder_free(kc_event_recorder *r);

/* Queues an event (type KC_EVENT_NORMAL or KC_EVENT_WARNING). Returns 0 when queued or
 * counted, KC_ETOOBIG when the queue is full (dropped), KC_EINVAL for a bad object or type;
 * a spam-filtered event returns 0 (it is counted in the stats). Never blocks. */
int kc_event_record(kc_event_recorder *r, const kc_object_ref *obj, const char *type,
                    const char *reason, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int kc_event_vrecord(kc_event_recorder *r, const kc_object_ref *obj, const char *type,
                     const char *reason, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));

void kc_event_get_stats(const kc_event_recorder *r, kc_event_stats *st);
/* The object with this uid was deleted (see kc_event_cache_forget). r may be NULL. */
void kc_event_forget(kc_event_recorder *r, const char *uid);
/* Events queued or in flight. */
size_t kc_event_pending(const kc_event_recorder *r);

#endif
