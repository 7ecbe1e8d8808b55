/* Reflector and informer (client-go's Reflector + SharedIndexInformer, one consumer).
 *
 * A paginated LIST (limit/continue, 500 per page) fills a kc_store; then a WATCH from the
 * list's resourceVersion with allowWatchBookmarks=true and a timeoutSeconds drawn at random
 * from [300, 600] keeps it current. The watch stream's newline-delimited JSON frames are
 * parsed incrementally with a capped buffer (kc_watch_parser). A dropped connection or a
 * server-side timeout resumes the watch from the last resourceVersion seen (bookmarks
 * included). A 410 Gone / Expired (as the HTTP status or as an ERROR event), a frame that
 * cannot be parsed, or an unknown event type relists; the relist goes through
 * kc_store_replace_begin/_end, so exactly the adds, updates and deletes missed in the gap
 * reach the handlers (an object deleted during the gap is reported as deleted, an object
 * whose resourceVersion did not change is not reported at all). Failures back off from
 * 800 ms doubling to 30 s with jitter, reset after a healthy watch (one that delivered an
 * event or stayed open 10 s). LISTs go through kc_api (QPS bucket, retries); the WATCH is a
 * kc_http stream of its own and takes no token (one per informer, re-opened rarely).
 *
 * The stream is a state machine as data (STYLE.md 7): IDLE -> LIST -> WATCH, with BACKOFF
 * and RELIST; every transition is logged "old -> new (why)".
 *
 * Everything runs on the loop thread; handlers are called from the loop after the store was
 * updated, never from inside kc_informer_start. */
#ifndef KC_INFORMER_H
#define KC_INFORMER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_api.h"
#include "kc_frames.h"
#include "kc_store.h"
#include "kc_error.h"

/* ---- the watch frame parser (pure; fed by the stream, tested on its own) ---- */

typedef enum {
  KC_WATCH_ADDED,
  KC_WATCH_MODIFIED,
  KC_WATCH_DELETED,
  KC_WATCH_BOOKMARK,
  KC_WATCH_ERROR, /* the object is a metav1.Status */
} kc_watch_type;

#define KC_WATCH_DEFAULT_MAX_FRAME ((size_t)16 << 20) /* one object; etcd's own limit is 1.5 MB */

/* Newline-delimited frames (kc_frames.h, KC_FRAMES_LINES): kc_frames_close frees one,
 * kc_frames_reset starts it again for a new connection. */
typedef kc_frames kc_watch_parser;

/* Called once per complete frame; obj is borrowed for the call. Return 0 to go on or a
 * negative code to stop feeding (kc_watch_parser_feed returns it). */
typedef int (*kc_watch_frame_fn)(kc_watch_type type, json_t *obj, void *ud);

/* max_frame 0: KC_WATCH_DEFAULT_MAX_FRAME. */
void kc_watch_parser_init(kc_watch_parser *p, size_t max_frame);
/* Feeds one chunk of the stream; frames may be split anywhere. Returns 0, the callback's
 * code, KC_ETOOBIG (a frame longer than max_frame), KC_EPARSE (not JSON, not an object with
 * "type" and "object", or an unknown type) or KC_ENOMEM, with a message naming the stream
 * offset in err. After an error the parser must be reset (kc_frames_reset). */
KC_NODISCARD int kc_watch_parser_feed(kc_watch_parser *p, const char *data, size_t len,
                                      kc_watch_frame_fn fn, void *ud, char *err, size_t errlen);
/* At the end of the stream: KC_EPARSE when a partial frame is left over (truncated). */
KC_NODISCARD int kc_watch_parser_finish(const kc_watch_parser *p, char *err, size_t errlen);

/* The code of a Status with this code, reason and message (either may be 0 / NULL), as
 * kc_watch_error_code gives it; the message goes to msg. */
int kc_watch_status_code(long code, const char *reason, const char *message, char *msg,
                         size_t msglen);

/* The code of a watch ERROR event's Status: KC_EGONE for 410 or reason Expired/Gone, else
 * the reason's or the code's mapping. Writes Status.message to msg. */
int kc_watch_error_code(const json_t *status, char *msg, size_t msglen);

/* ---- the informer ---- */

typedef struct kc_informer kc_informer;

typedef struct {
  /* The transform hook: turns the JSON of one object (borrowed) into what the store keeps
   * (new; freed through free_obj). NULL keeps the JSON itself (json_incref, json_decref).
   * Returning NULL skips the object with the error in err (logged with its key). */
  void *(*decode)(json_t *obj, void *ud, char *err, size_t errlen);
  void (*free_obj)(void *obj); /* NULL with decode NULL: json_decref */
  /* With kc_informer_options.protobuf: the same for one object in Kubernetes' protobuf
   * encoding (the object message, e.g. a Pod, borrowed for the call; see kc_pb.h). A reply
   * the server sent in JSON anyway still goes through decode. */
  void *(*decode_pb)(const uint8_t *data, size_t len, void *ud, char *err, size_t errlen);
  /* Handlers; every object is borrowed for the call. */
  void (*on_add)(const char *key, void *obj, void *ud);
  void (*on_update)(const char *key, void *old_obj, void *new_obj, void *ud);
  void (*on_delete)(const char *key, void *obj, void *ud);
  /* Called once when the first LIST has been stored (has_synced became true). */
  void (*on_synced)(void *ud);
  void *ud;
} kc_informer_handlers;

typedef struct {
  const char *group; /* the resource to list and watch; strings are copied */
  const char *version;
  const char *resource;
  const char *namespace; /* NULL: all namespaces */
  const char *label_selector;
  const char *field_selector;
  long page_size;    /* 0: 500 */
  size_t max_frame;  /* 0: KC_WATCH_DEFAULT_MAX_FRAME */
  int64_t resync_ms; /* 0: no resync; else on_update(obj, obj) for every object this often */
  int64_t min_watch_timeout_s; /* 0: 300 (the timeout is drawn from [min, 2*min]) */
  /* Ask for application/vnd.kubernetes.protobuf (JSON accepted as the fallback), for
   * built-in resources only; needs handlers.decode_pb. */
  bool protobuf;
} kc_informer_options;

typedef enum {
  KC_INF_IDLE,
  KC_INF_LIST,    /* the first LIST */
  KC_INF_WATCH,   /* streaming */
  KC_INF_BACKOFF, /* waiting before the next LIST or WATCH */
  KC_INF_RELIST,  /* a LIST after the watch could not resume */
  KC_INF_STOPPED,
  KC_INF_STATE_LAST
} kc_informer_state;

typedef struct {
  uint64_t lists, relists, watches, events, bookmarks, gone, frame_errors, decode_errors;
  uint64_t protobuf_replies; /* LIST pages and watches the server answered in protobuf */
  uint64_t last_list_ns;     /* wall time of the last LIST (all pages, store update included) */
  size_t last_list_items;
} kc_informer_stats;

/* *out is new; the informer uses c (borrowed, must outlive it). Add indexes to
 * kc_informer_store() before kc_informer_start. KC_EINVAL, KC_ENOMEM. */
KC_NODISCARD int kc_informer_new(kc_client *c, const kc_informer_options *o,
                                 const kc_informer_handlers *h, kc_informer **out);
/* Starts the first LIST. 0 or KC_EINVAL (already started). */
KC_NODISCARD int kc_informer_start(kc_informer *inf);
/* Stops every request and frees the informer; the memory is released once the libuv timer
 * has closed and an in-flight LIST has ended, so run the loop afterwards. No handler is
 * called after this. Not from a handler (the stream is mid-frame there). Free the informer
 * before its client: it would otherwise retry on a freed transport. NULL is a no-op. */
void kc_informer_free(kc_informer *inf);

/* The store (borrowed). Read it from the loop thread only; never change it. */
kc_store *kc_informer_store(kc_informer *inf);
bool kc_informer_has_synced(const kc_informer *inf);
/* The last resourceVersion seen (borrowed, "" before the first LIST). */
const char *kc_informer_last_rv(const kc_informer *inf);
kc_informer_state kc_informer_get_state(const kc_informer *inf);
const char *kc_informer_state_name(kc_informer_state s);
void kc_informer_get_stats(const kc_informer *inf, kc_informer_stats *st);

/* The reflector's backoff, exposed for tests: the n-th consecutive failure (n >= 1) waits
 * min(800 ms * 2^(n-1), 30 s) scaled by jitter in [1, 2) (r in [0, 1)), capped at 30 s. */
uint64_t kc_informer_backoff_ns(unsigned n, double r);

#endif
