/* Kubernetes' protobuf envelope, keys, Status, Binding and the watch stream: see kc_pb.h. */
#include "kc_pb.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t magic[4] = {'k', '8', 's', 0};

bool kc_pb_is_envelope(const void *data, size_t len) {
  return data && len >= sizeof(magic) && memcmp(data, magic, sizeof(magic)) == 0;
}

void kc_pb_free(void *msg) {
  if (msg)
    protobuf_c_message_free_unpacked(msg, NULL);
}

static void say(char *err, size_t errlen, const char *what) {
  if (err && errlen)
    snprintf(err, errlen, "%s", what);
}

int kc_pb_unwrap(const void *data, size_t len, K8s__Unknown **out, char *err, size_t errlen) {
  *out = NULL;
  if (!kc_pb_is_envelope(data, len)) {
    say(err, errlen, "not a Kubernetes protobuf body (no k8s\\0 magic)");
    return KC_EPARSE;
  }
  K8s__Unknown *u =
      k8s__unknown__unpack(NULL, len - sizeof(magic), (const uint8_t *)data + sizeof(magic));
  if (!u) {
    say(err, errlen, "the runtime.Unknown envelope does not decode");
    return KC_EPARSE;
  }
  /* The API server never compresses an object inside the envelope; a body that says it did
   * cannot be read here. */
  if (u->content_encoding && u->content_encoding[0]) {
    say(err, errlen, "the envelope's content is encoded (contentEncoding set)");
    kc_pb_free(u);
    return KC_EPARSE;
  }
  *out = u;
  return 0;
}

int kc_pb_object_key(const void *data, size_t len, char *key, size_t keylen, char **rv) {
  *rv = NULL;
  K8s__ObjectKey *k = k8s__object_key__unpack(NULL, len, data);
  if (!k)
    return KC_EPARSE;
  const K8s__KeyMeta *m = k->metadata;
  int rc = KC_EPARSE;
  if (m && m->name && m->name[0]) {
    int n = m->namespace_ && m->namespace_[0]
                ? snprintf(key, keylen, "%s/%s", m->namespace_, m->name)
                : snprintf(key, keylen, "%s", m->name);
    rc = n < 0 || (size_t)n >= keylen ? KC_ETOOBIG : 0;
  }
  if (rc == 0 && !(*rv = strdup(m->resource_version ? m->resource_version : "")))
    rc = KC_ENOMEM;
  kc_pb_free(k);
  return rc;
}

int kc_pb_object_rv(const void *data, size_t len, char **rv) {
  *rv = NULL;
  K8s__ObjectKey *k = k8s__object_key__unpack(NULL, len, data);
  if (!k)
    return KC_EPARSE;
  const char *v = k->metadata && k->metadata->resource_version ? k->metadata->resource_version : "";
  *rv = strdup(v);
  kc_pb_free(k);
  return *rv ? 0 : KC_ENOMEM;
}

int kc_pb_status(const void *data, size_t len, int32_t *code, char *reason, size_t reasonlen,
                 char *msg, size_t msglen) {
  K8s__Status *s = k8s__status__unpack(NULL, len, data);
  if (!s)
    return KC_EPARSE;
  *code = s->has_code ? s->code : 0;
  if (reason && reasonlen)
    snprintf(reason, reasonlen, "%s", s->reason ? s->reason : "");
  if (msg && msglen)
    snprintf(msg, msglen, "%s", s->message ? s->message : "");
  kc_pb_free(s);
  return 0;
}

/* msg packed behind the magic in an Unknown of the given kind: a new buffer. */
static int envelope(const ProtobufCMessage *msg, const char *kind, uint8_t **out, size_t *len) {
  K8s__RuntimeTypeMeta tm = K8S__RUNTIME_TYPE_META__INIT;
  K8s__Unknown u = K8S__UNKNOWN__INIT;
  size_t n = protobuf_c_message_get_packed_size(msg);
  uint8_t *raw = malloc(n ? n : 1);
  if (!raw)
    return KC_ENOMEM;
  protobuf_c_message_pack(msg, raw);
  tm.api_version = (char *)"v1";
  tm.kind = (char *)kind;
  u.type_meta = &tm;
  u.has_raw = true;
  u.raw.data = raw;
  u.raw.len = n;
  size_t total = sizeof(magic) + k8s__unknown__get_packed_size(&u);
  uint8_t *buf = malloc(total);
  if (buf) {
    memcpy(buf, magic, sizeof(magic));
    k8s__unknown__pack(&u, buf + sizeof(magic));
  }
  free(raw);
  if (!buf)
    return KC_ENOMEM;
  *out = buf;
  *len = total;
  return 0;
}

int kc_pb_binding_encode(const char *ns, const char *name, const char *uid, const char *node,
                         uint8_t **out, size_t *len) {
  if (!ns || !name || !node)
    return KC_EINVAL;
  K8s__ObjectMeta meta = K8S__OBJECT_META__INIT;
  K8s__ObjectReference target = K8S__OBJECT_REFERENCE__INIT;
  K8s__Binding b = K8S__BINDING__INIT;
  meta.name = (char *)name;
  meta.namespace_ = (char *)ns;
  meta.uid = (char *)uid; /* the API server checks it against the pod's: a recreated pod
                             of the same name is not bound by a stale decision */
  target.kind = (char *)"Node";
  target.name = (char *)node;
  target.api_version = (char *)"v1";
  b.metadata = &meta;
  b.target = &target;
  return envelope(&b.base, "Binding", out, len);
}

/* ---- the watch stream ---- */

void kc_pb_stream_init(kc_pb_stream *s, size_t max_frame) {
  kc_frames_init(s, KC_FRAMES_BE32, max_frame ? max_frame : KC_PB_DEFAULT_MAX_FRAME);
}

typedef struct {
  kc_pb_event_fn fn;
  void *ud;
} pb_sink;

/* One whole WatchEvent of n bytes at stream offset off. */
static int event(kc_frames *s, const uint8_t *f, size_t n, uint64_t off, void *ud, char *err,
                 size_t errlen) {
  const pb_sink *k = ud;
  s->frames++;
  K8s__WatchEvent *ev = k8s__watch_event__unpack(NULL, n, f);
  K8s__Unknown *u = NULL;
  char why[160];
  int rc = KC_EPARSE;
  if (!ev) {
    snprintf(err, errlen, "watch frame at offset %" PRIu64 ": not a WatchEvent", off);
    return rc;
  }
  if (!ev->type || !ev->type[0]) {
    snprintf(err, errlen, "watch frame at offset %" PRIu64 ": no event type", off);
  } else if (!ev->object || !ev->object->has_raw) {
    snprintf(err, errlen, "watch frame at offset %" PRIu64 ": no object", off);
  } else if (kc_pb_unwrap(ev->object->raw.data, ev->object->raw.len, &u, why, sizeof(why)) < 0) {
    snprintf(err, errlen, "watch frame at offset %" PRIu64 ": %s", off, why);
  } else {
    const char *kind = u->type_meta && u->type_meta->kind ? u->type_meta->kind : "";
    rc = k->fn(ev->type, kind, u->has_raw ? u->raw.data : (const uint8_t *)"",
               u->has_raw ? u->raw.len : 0, k->ud);
  }
  kc_pb_free(u);
  kc_pb_free(ev);
  return rc;
}

int kc_pb_stream_feed(kc_pb_stream *s, const void *data, size_t len, kc_pb_event_fn fn, void *ud,
                      char *err, size_t errlen) {
  pb_sink k = {fn, ud};
  return kc_frames_feed(s, data, len, event, &k, err, errlen);
}

int kc_pb_stream_finish(const kc_pb_stream *s, char *err, size_t errlen) {
  if (s->len > 0) {
    snprintf(err, errlen, "truncated watch frame at offset %" PRIu64 ": %zu bytes of a frame",
             s->offset, s->len);
    return KC_EPARSE;
  }
  return 0;
}
