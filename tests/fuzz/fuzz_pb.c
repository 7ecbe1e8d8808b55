/* Fuzz target for Kubernetes' protobuf encoding (kc_pb): the input is read every way the
 * processes read protobuf from the API server. As a watch stream, fed whole and in chunks
 * whose sizes come from its first byte: both must give the same events and verdict, only
 * documented errors, each with a message. As a response body ("k8s\0" + Unknown), and as
 * a bare object: the list page's items, the envelope's object and the input itself are
 * decoded as a Pod, a Node, a Status and an object key, which may fail but must not
 * crash, leak or read out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_codec.h"
#include "kc_error.h"
#include "kc_pb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every decoder on one object message. */
static void object(const uint8_t *d, size_t n) {
  char err[256], key[128], reason[32], msg[64], *rv = NULL;
  Kiln__Pod *p = NULL;
  Kiln__Node *node = NULL;
  if (kc_pb_pod_decode(d, n, &p, err, sizeof(err)) == 0) {
    if (!p)
      abort();
    kc_msg_free(p);
  } else if (p || !err[0]) {
    abort(); /* a failure leaves nothing behind and says why */
  }
  if (kc_pb_node_decode(d, n, &node, err, sizeof(err)) == 0)
    kc_msg_free(node);
  else if (node)
    abort();
  if (kc_pb_object_key(d, n, key, sizeof(key), &rv) == 0) {
    if (!rv || !key[0])
      abort();
    free(rv);
  } else if (rv) {
    abort();
  }
  int32_t code;
  if (kc_pb_status(d, n, &code, reason, sizeof(reason), msg, sizeof(msg)) < 0)
    return;
}

typedef struct {
  uint64_t events, hash;
} seen;

static int on_event(const char *type, const char *kind, const uint8_t *d, size_t n, void *ud) {
  seen *s = ud;
  if (!type || !kind)
    abort();
  for (const char *c = type; *c; c++)
    s->hash = s->hash * 131 + (unsigned char)*c;
  for (const char *c = kind; *c; c++)
    s->hash = s->hash * 137 + (unsigned char)*c;
  for (size_t i = 0; i < n; i++)
    s->hash = s->hash * 139 + d[i];
  s->events++;
  object(d, n);
  return 0;
}

static int stream(const uint8_t *d, size_t n, size_t step, seen *s) {
  kc_pb_stream st;
  char err[256] = "";
  /* A small frame limit so that KC_ETOOBIG is reachable. */
  kc_pb_stream_init(&st, 4096);
  int rc = 0;
  for (size_t off = 0; rc == 0 && off < n; off += step) {
    size_t k = step < n - off ? step : n - off;
    rc = kc_pb_stream_feed(&st, d + off, k, on_event, s, err, sizeof(err));
  }
  if (rc == 0)
    rc = kc_pb_stream_finish(&st, err, sizeof(err));
  if (rc != 0 && rc != KC_ETOOBIG && rc != KC_EPARSE && rc != KC_ENOMEM)
    abort();
  if (rc != 0 && !err[0])
    abort();
  kc_frames_close(&st);
  return rc;
}

static void body(const uint8_t *d, size_t n) {
  K8s__Unknown *u = NULL;
  char err[128] = "";
  if (kc_pb_unwrap(d, n, &u, err, sizeof(err)) < 0) {
    if (u || !err[0])
      abort();
    return;
  }
  const uint8_t *raw = u->has_raw ? u->raw.data : (const uint8_t *)"";
  size_t len = u->has_raw ? u->raw.len : 0;
  object(raw, len);
  K8s__RawList *l = k8s__raw_list__unpack(NULL, len, raw);
  for (size_t i = 0; l && i < l->n_items; i++)
    object(l->items[i].data, l->items[i].len);
  kc_pb_free(l);
  kc_pb_free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  size_t step = (size_t)(data[0] % 61) + 1;
  seen whole = {0}, split = {0};
  int a = stream(data + 1, size - 1, size, &whole);
  int b = stream(data + 1, size - 1, step, &split);
  if (a != b || whole.events != split.events || whole.hash != split.hash)
    abort();
  body(data + 1, size - 1);
  object(data + 1, size - 1);
  return 0;
}
