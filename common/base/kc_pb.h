/* Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf) for pods, nodes and
 * bindings, over Kiln's own subset schema (proto/kiln/k8s.proto).
 *
 * A body is "k8s\0" then a runtime.Unknown whose raw is the object; a watch stream is
 * frames of a 4-byte big-endian length then a metav1.WatchEvent whose object.raw is again
 * "k8s\0" + Unknown (see k8s.proto). The decoders produce the same scheduling views
 * (pod.proto) as the JSON decoders of kc_codec.h, field for field; a unit test holds them
 * equal on objects captured from a real API server in both encodings.
 *
 * Pure functions of their input (no I/O), in libkiln_base. Errors: KC_EPARSE (not
 * protobuf, a bad envelope or a wrong kind), KC_EINVAL (a field the JSON decoder would
 * refuse too, such as a bad quantity), KC_ETOOBIG, KC_ENOMEM; err (when not NULL) says
 * what and where. */
#ifndef KC_PB_H
#define KC_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s.pb-c.h"
#include "pod.pb-c.h"
#include "kc_error.h"
#include "kc_frames.h"

#define KC_PB_CONTENT_TYPE "application/vnd.kubernetes.protobuf"

/* True when data starts with the "k8s\0" magic. */
bool kc_pb_is_envelope(const void *data, size_t len);

/* Unwraps "k8s\0" + Unknown: *out is new (free with kc_pb_free); its raw is the object and
 * its type_meta names the kind. */
KC_NODISCARD int kc_pb_unwrap(const void *data, size_t len, K8s__Unknown **out, char *err,
                              size_t errlen);
/* Frees any message of k8s.proto; NULL is a no-op. */
void kc_pb_free(void *msg);

/* The key ("namespace/name" or "name") and a new copy of the resourceVersion (*rv, free())
 * of an object message (a Pod, a Node, any object whose metadata is field 1). */
KC_NODISCARD int kc_pb_object_key(const void *data, size_t len, char *key, size_t keylen,
                                  char **rv);

/* Only the resourceVersion (*rv new, "" when none): a BOOKMARK's object has no name. */
KC_NODISCARD int kc_pb_object_rv(const void *data, size_t len, char **rv);

/* A metav1.Status body (the object of an Unknown of kind Status) into its code, reason and
 * message (copied, truncated; reason and msg may be NULL). */
KC_NODISCARD int kc_pb_status(const void *data, size_t len, int32_t *code, char *reason,
                              size_t reasonlen, char *msg, size_t msglen);

/* A Pod or Node message (the raw of its Unknown, or a list item) to its scheduling view: *out
 * new (kc_msg_free), NULL on error. */
KC_NODISCARD int kc_pb_pod_decode(const void *data, size_t len, Kiln__Pod **out, char *err,
                                  size_t errlen);
KC_NODISCARD int kc_pb_node_decode(const void *data, size_t len, Kiln__Node **out, char *err,
                                   size_t errlen);

/* A v1 Binding of namespace/name (uid may be NULL: no precondition) to node, as a whole
 * request body ("k8s\0" + Unknown): *out new (free()), *len its length. */
KC_NODISCARD int kc_pb_binding_encode(const char *ns, const char *name, const char *uid,
                                      const char *node, uint8_t **out, size_t *len);

/* ---- the watch stream ---- */

#define KC_PB_DEFAULT_MAX_FRAME ((size_t)16 << 20)

/* Length-prefixed frames (kc_frames.h, KC_FRAMES_BE32): kc_frames_close frees one,
 * kc_frames_reset starts it again for a new connection. */
typedef kc_frames kc_pb_stream;

/* One event: type is the WatchEvent's type ("ADDED", ...), kind the object's (from its
 * Unknown: "Pod", "Status", ...), data/len the object message. All borrowed for the call.
 * Return 0 to go on or a negative code to stop (kc_pb_stream_feed returns it). */
typedef int (*kc_pb_event_fn)(const char *type, const char *kind, const uint8_t *data, size_t len,
                              void *ud);

/* max_frame 0: KC_PB_DEFAULT_MAX_FRAME. */
void kc_pb_stream_init(kc_pb_stream *s, size_t max_frame);
/* Feeds one chunk; frames may be split anywhere. Returns 0, the callback's code,
 * KC_ETOOBIG (a length over max_frame), KC_EPARSE (a frame that is not a WatchEvent with a
 * type and an enveloped object) or KC_ENOMEM, with the stream offset in err. After an error,
 * kc_frames_reset before feeding again. */
KC_NODISCARD int kc_pb_stream_feed(kc_pb_stream *s, const void *data, size_t len, kc_pb_event_fn fn,
                                   void *ud, char *err, size_t errlen);
/* At the end of the stream: KC_EPARSE when a partial frame is left over. */
KC_NODISCARD int kc_pb_stream_finish(const kc_pb_stream *s, char *err, size_t errlen);

#endif
