/* Fuzz target for the JSON codecs: arbitrary bytes, parsed by jansson, fed to the pod,
 * node and Volcano decoders. Decoding must fail cleanly or succeed, and a decoded Job or
 * PodGroup must survive encode -> decode unchanged. Leaks are reported by the sanitizer. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const ProtobufCMessage *a, const ProtobufCMessage *b) {
  size_t na = protobuf_c_message_get_packed_size(a);
  if (na != protobuf_c_message_get_packed_size(b))
    abort();
  uint8_t *x = malloc(na + 1), *y = malloc(na + 1);
  if (!x || !y)
    abort();
  protobuf_c_message_pack(a, x);
  protobuf_c_message_pack(b, y);
  if (memcmp(x, y, na) != 0)
    abort();
  free(x);
  free(y);
}

static void roundtrip(const ProtobufCMessageDescriptor *desc, const json_t *j) {
  ProtobufCMessage *m = NULL, *m2 = NULL;
  char err[KC_CODEC_ERR_MAX];
  if (kc_codec_decode(desc, j, &m, err, sizeof(err)) != 0) {
    if (m || strlen(err) >= sizeof(err))
      abort();
    return;
  }
  json_t *e = NULL;
  /* Encoding can refuse only strings that are not UTF-8, which jansson never yields. */
  if (kc_codec_encode(m, &e, err, sizeof(err)) != 0)
    abort();
  if (kc_codec_decode(desc, e, &m2, err, sizeof(err)) != 0)
    abort();
  same(m, m2);
  kc_msg_free(m2);
  kc_msg_free(m);
  json_decref(e);
}

static void decode_all(json_t *j) {
  char err[KC_CODEC_ERR_MAX];
  Kiln__Pod *p = NULL;
  if (kc_pod_decode(j, &p, err, sizeof(err)) == 0) {
    size_t n = kiln__pod__get_packed_size(p);
    uint8_t *buf = malloc(n + 1);
    if (!buf)
      abort();
    kiln__pod__pack(p, buf);
    Kiln__Pod *back = kiln__pod__unpack(NULL, n, buf);
    if (!back)
      abort();
    same(&p->base, &back->base);
    kiln__pod__free_unpacked(back, NULL);
    free(buf);
    kc_msg_free(p);
  } else if (p) {
    abort();
  }
  Kiln__Node *node = NULL;
  if (kc_node_decode(j, &node, err, sizeof(err)) == 0)
    kc_msg_free(node);
  else if (node)
    abort();
  roundtrip(&kiln__job__descriptor, j);
  roundtrip(&kiln__pod_group__descriptor, j);
  roundtrip(&kiln__queue__descriptor, j);
}

/* Type confusion: every node of a well-formed document replaced in turn by values of the
 * wrong shape, so that each error path of the decoders (and its clean-up) runs. Byte
 * mutations alone rarely get past the JSON parser into the deep fields. */
static size_t budget;

static void confuse(json_t *root, json_t *node) {
  static const char *const wrong[] = {"null", "true", "-1", "3000000000", "1.5",      "\"12Qi\"",
                                      "\"\"", "[]",   "{}", "[1]",        "{\"a\":1}"};
  if (json_is_object(node)) {
    const char *key;
    json_t *child;
    void *tmp;
    json_object_foreach_safe(node, tmp, key, child) {
      json_incref(child);
      for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]) && budget; i++, budget--) {
        json_object_set_new(node, key, json_loads(wrong[i], JSON_DECODE_ANY, NULL));
        decode_all(root);
      }
      json_object_set(node, key, child);
      confuse(root, child);
      json_decref(child);
    }
  } else if (json_is_array(node)) {
    for (size_t k = 0; k < json_array_size(node); k++) {
      json_t *child = json_incref(json_array_get(node, k));
      for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]) && budget; i++, budget--) {
        json_array_set_new(node, k, json_loads(wrong[i], JSON_DECODE_ANY, NULL));
        decode_all(root);
      }
      json_array_set(node, k, child);
      confuse(root, child);
      json_decref(child);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
  if (!j)
    return 0;
  decode_all(j);
  /* The structural pass costs thousands of decodes per input: it is meant for seed
   * documents (the meson test sets KILN_FUZZ_STRUCTURAL), not for every mutation. */
  static int structural = -1;
  if (structural < 0)
    structural = getenv("KILN_FUZZ_STRUCTURAL") != NULL;
  if (structural) {
    budget = 20000;
    confuse(j, j);
  }
  json_decref(j);
  return 0;
}
