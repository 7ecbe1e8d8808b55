/* Generic JSON <-> protobuf-c conversion driven by the message descriptors, plus the
 * ResourceList codec and the typed wrappers for the Volcano objects.
 *
 * Conventions (see volcano.proto): a field's JSON name is its proto name in lowerCamelCase
 * (a few acronyms are listed in json_overrides); a string field named *_json carries a raw
 * JSON subtree; a Resource field is a ResourceList; a repeated *Entry message with key and
 * value is a proto map, i.e. a JSON object; a StringList is a JSON array of strings.
 *
 * Error safety: a message is built in place and freed with protobuf-c's own destructor on
 * the first error, so every pointer stored in it is complete and every repeated count only
 * covers initialised elements. */
#include "kc_codec.h"

#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_codec_int.h"
#include "kc_error.h"
#include "kc_quantity.h"

/* ---- path context ---- */

void kc__cctx_init(kc__cctx *c, char *err, size_t errlen) {
  c->path[0] = '\0';
  c->len = 0;
  c->err = err;
  c->errlen = errlen;
  if (err && errlen)
    err[0] = '\0';
}

/* Appends s, truncated to what the buffer holds (the message keeps the prefix). */
static void path_put(kc__cctx *c, const char *s) {
  size_t room = sizeof(c->path) - 1 - c->len, n = strlen(s);
  if (n > room)
    n = room;
  memcpy(c->path + c->len, s, n);
  c->len += n;
  c->path[c->len] = '\0';
}

/* Every field decoded extends the path, error or not: snprintf here was 4.5% of
 * kiln-scheduler's instructions in the one-pod-Job bench (30,000 calls for 600 events). */
static size_t path_append(kc__cctx *c, const char *a, const char *b, const char *d) {
  size_t old = c->len;
  path_put(c, a);
  path_put(c, b);
  path_put(c, d);
  return old;
}

size_t kc__path_key(kc__cctx *c, const char *key) {
  return path_append(c, c->len ? "." : "", key, "");
}

size_t kc__path_index(kc__cctx *c, size_t i) {
  char num[24];
  snprintf(num, sizeof(num), "%zu", i);
  return path_append(c, "[", num, "]");
}

size_t kc__path_mapkey(kc__cctx *c, const char *key) {
  return path_append(c, "[", key, "]");
}

void kc__path_pop(kc__cctx *c, size_t len) {
  c->len = len;
  c->path[len] = '\0';
}

int kc__fail(kc__cctx *c, int code, const char *fmt, ...) {
  if (!c->err || c->errlen == 0)
    return code;
  size_t off = 0;
  if (c->len) {
    int n = snprintf(c->err, c->errlen, "%s: ", c->path);
    off = n < 0 ? 0 : (size_t)n;
    if (off >= c->errlen)
      return code;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err + off, c->errlen - off, fmt, ap);
  va_end(ap);
  return code;
}

int kc__dup_string(kc__cctx *c, const json_t *v, char **out) {
  *out = NULL;
  if (!json_is_string(v))
    return kc__fail(c, KC_EINVAL, "expected string");
  size_t n = json_string_length(v);
  const char *s = json_string_value(v);
  if (memchr(s, '\0', n))
    return kc__fail(c, KC_EINVAL, "string contains a NUL byte");
  char *d = malloc(n + 1);
  if (!d)
    return kc__fail(c, KC_ENOMEM, "out of memory");
  memcpy(d, s, n + 1);
  *out = d;
  return 0;
}

void kc_msg_free(void *msg) {
  if (msg)
    protobuf_c_message_free_unpacked(msg, NULL);
}

/* ---- resources ---- */

Kiln__Resource *kc__resource_new(void) {
  Kiln__Resource *r = malloc(sizeof(*r));
  if (r)
    kiln__resource__init(r);
  return r;
}

Kiln__ResourceQuantity *kc__resource_scalar(Kiln__Resource *res, const char *name) {
  for (size_t i = 0; i < res->n_scalar; i++)
    if (strcmp(res->scalar[i]->name, name) == 0)
      return res->scalar[i];
  Kiln__ResourceQuantity **arr = realloc(res->scalar, (res->n_scalar + 1) * sizeof(*arr));
  if (!arr)
    return NULL;
  res->scalar = arr;
  Kiln__ResourceQuantity *q = malloc(sizeof(*q));
  char *dup = strdup(name);
  if (!q || !dup) {
    free(q);
    free(dup);
    return NULL;
  }
  kiln__resource_quantity__init(q);
  q->name = dup;
  res->scalar[res->n_scalar++] = q;
  return q;
}

static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

int kc__resource_put(Kiln__Resource *res, const char *name, const kc_quantity *q) {
  if (strcmp(name, "cpu") == 0) {
    res->milli_cpu = sat_add(res->milli_cpu, kc_quantity_milli(q));
  } else if (strcmp(name, "memory") == 0) {
    res->memory = sat_add(res->memory, kc_quantity_value(q));
  } else if (strcmp(name, "pods") == 0) {
    res->pods = sat_add(res->pods, kc_quantity_value(q));
  } else if (strcmp(name, "ephemeral-storage") == 0) {
    res->ephemeral_storage = sat_add(res->ephemeral_storage, kc_quantity_value(q));
  } else {
    Kiln__ResourceQuantity *s = kc__resource_scalar(res, name);
    if (!s)
      return KC_ENOMEM;
    s->milli_value = sat_add(s->milli_value, kc_quantity_milli(q));
  }
  return 0;
}

int kc__resource_list_add(kc__cctx *c, const json_t *obj, Kiln__Resource *res) {
  if (!json_is_object(obj))
    return kc__fail(c, KC_EINVAL, "expected object");
  const char *name;
  json_t *v;
  json_object_foreach((json_t *)obj, name, v) {
    size_t mark = kc__path_key(c, name);
    kc_quantity q;
    size_t off = 0;
    int rc;
    char num[32];
    const char *text = NULL;
    if (json_is_string(v)) {
      text = json_string_value(v);
      rc = kc_quantity_parsen(text, json_string_length(v), &q, &off);
    } else if (json_is_integer(v)) {
      /* Quantity's UnmarshalJSON also takes a bare number. */
      int n = snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
      text = num;
      /* The length is known: no strnlen past num (FORTIFY with LTO warns of that bound). */
      rc = kc_quantity_parsen(num, n > 0 && (size_t)n < sizeof(num) ? (size_t)n : strlen(num), &q,
                              &off);
    } else {
      return kc__fail(c, KC_EINVAL, "expected quantity string");
    }
    if (rc < 0)
      return kc__fail(c, rc, "invalid quantity \"%.40s\": %s at offset %zu", text, kc_strerror(rc),
                      off);
    if (kc__resource_put(res, name, &q) < 0)
      return kc__fail(c, KC_ENOMEM, "out of memory");
    kc__path_pop(c, mark);
  }
  return 0;
}

int kc_resource_list_decode(const json_t *json, Kiln__Resource *res, char *err, size_t errlen) {
  kc__cctx c;
  kc__cctx_init(&c, err, errlen);
  return kc__resource_list_add(&c, json, res);
}

static int put_quantity(json_t *obj, const char *name, const kc_quantity *q) {
  char buf[KC_QUANTITY_STR_MAX];
  if (kc_quantity_format(q, buf, sizeof(buf)) < 0)
    return KC_ERANGE;
  return json_object_set_new(obj, name, json_string(buf)) == 0 ? 0 : KC_ENOMEM;
}

int kc_resource_list_encode(const Kiln__Resource *res, json_t **out) {
  *out = NULL;
  json_t *obj = json_object();
  if (!obj)
    return KC_ENOMEM;
  kc_quantity q;
  int rc = 0;
  if (res->milli_cpu) {
    kc_quantity_from_milli(&q, res->milli_cpu, KC_QFMT_DECIMAL_SI);
    rc = rc ? rc : put_quantity(obj, "cpu", &q);
  }
  if (res->memory) {
    kc_quantity_from_value(&q, res->memory, KC_QFMT_BINARY_SI);
    rc = rc ? rc : put_quantity(obj, "memory", &q);
  }
  if (res->pods) {
    kc_quantity_from_value(&q, res->pods, KC_QFMT_DECIMAL_SI);
    rc = rc ? rc : put_quantity(obj, "pods", &q);
  }
  if (res->ephemeral_storage) {
    kc_quantity_from_value(&q, res->ephemeral_storage, KC_QFMT_BINARY_SI);
    rc = rc ? rc : put_quantity(obj, "ephemeral-storage", &q);
  }
  /* A scalar entry exists only because the list named it, so it is written even when zero:
   * "nvidia.com/gpu": "0" (a queue that may not use GPUs, a container asking for none) is
   * not the same list as one without the name, and decode -> encode must keep it. */
  for (size_t i = 0; i < res->n_scalar && !rc; i++) {
    kc_quantity_from_milli(&q, res->scalar[i]->milli_value, KC_QFMT_DECIMAL_SI);
    rc = put_quantity(obj, res->scalar[i]->name, &q);
  }
  if (rc) {
    json_decref(obj);
    return rc;
  }
  *out = obj;
  return 0;
}

/* ---- generic descriptor-driven codec ---- */

static const struct {
  const char *proto, *json;
} json_overrides[] = {
    {"transition_id", "transitionID"},
    {"host_ip", "hostIP"},
    {"volume_id", "volumeID"},
};

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool is_json_text(const ProtobufCFieldDescriptor *f) {
  return f->type == PROTOBUF_C_TYPE_STRING && ends_with(f->name, "_json");
}

static void json_name(const ProtobufCFieldDescriptor *f, char *buf, size_t len) {
  for (size_t i = 0; i < sizeof(json_overrides) / sizeof(json_overrides[0]); i++) {
    if (strcmp(f->name, json_overrides[i].proto) == 0) {
      snprintf(buf, len, "%s", json_overrides[i].json);
      return;
    }
  }
  size_t n = strlen(f->name), k = 0;
  if (is_json_text(f))
    n -= 5;
  bool up = false;
  for (size_t i = 0; i < n && k + 1 < len; i++) {
    char ch = f->name[i];
    if (ch == '_') {
      up = true;
      continue;
    }
    buf[k++] = up && ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch;
    up = false;
  }
  buf[k] = '\0';
}

static bool is_map_entry(const ProtobufCMessageDescriptor *d) {
  return d->n_fields == 2 && ends_with(d->name, "Entry") &&
         protobuf_c_message_descriptor_get_field_by_name(d, "key") &&
         protobuf_c_message_descriptor_get_field_by_name(d, "value");
}

static size_t elem_size(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
    return 4;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
    return 8;
  case PROTOBUF_C_TYPE_BOOL:
    return sizeof(protobuf_c_boolean);
  case PROTOBUF_C_TYPE_ENUM:
    return sizeof(int);
  case PROTOBUF_C_TYPE_FLOAT:
    return sizeof(float);
  case PROTOBUF_C_TYPE_DOUBLE:
    return sizeof(double);
  case PROTOBUF_C_TYPE_BYTES:
    return sizeof(ProtobufCBinaryData);
  default:
    return sizeof(void *);
  }
}

static int decode_message(kc__cctx *c, const ProtobufCMessageDescriptor *desc, const json_t *j,
                          ProtobufCMessage **out);

static int decode_string_list(kc__cctx *c, const json_t *j, ProtobufCMessage **out) {
  if (!json_is_array(j))
    return kc__fail(c, KC_EINVAL, "expected array of strings");
  Kiln__StringList *l = malloc(sizeof(*l));
  if (!l)
    return kc__fail(c, KC_ENOMEM, "out of memory");
  kiln__string_list__init(l);
  size_t n = json_array_size(j);
  if (n && !(l->items = calloc(n, sizeof(char *)))) {
    free(l);
    return kc__fail(c, KC_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    size_t mark = kc__path_index(c, i);
    int rc = kc__dup_string(c, json_array_get(j, i), &l->items[i]);
    if (rc < 0) {
      kc_msg_free(l);
      return rc;
    }
    l->n_items++;
    kc__path_pop(c, mark);
  }
  *out = &l->base;
  return 0;
}

/* Decodes an integer of field f's type from v into dst, refusing what the type cannot hold. */
static int decode_integer(kc__cctx *c, const ProtobufCFieldDescriptor *f, const json_t *v,
                          void *dst) {
  json_int_t i;
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
    if (!json_is_integer(v))
      return kc__fail(c, KC_EINVAL, "expected integer");
    i = json_integer_value(v);
    if (i < INT32_MIN || i > INT32_MAX)
      return kc__fail(c, KC_ERANGE, "integer %" JSON_INTEGER_FORMAT " out of int32 range", i);
    *(int32_t *)dst = (int32_t)i;
    return 0;
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
    if (!json_is_integer(v))
      return kc__fail(c, KC_EINVAL, "expected integer");
    i = json_integer_value(v);
    if (i < 0 || i > UINT32_MAX)
      return kc__fail(c, KC_ERANGE, "integer %" JSON_INTEGER_FORMAT " out of uint32 range", i);
    *(uint32_t *)dst = (uint32_t)i;
    return 0;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
    if (!json_is_integer(v))
      return kc__fail(c, KC_EINVAL, "expected integer");
    *(int64_t *)dst = json_integer_value(v);
    return 0;
  default: /* UINT64, FIXED64 */
    if (!json_is_integer(v) || json_integer_value(v) < 0)
      return kc__fail(c, KC_EINVAL, "expected non-negative integer");
    *(uint64_t *)dst = (uint64_t)json_integer_value(v);
    return 0;
  }
}

/* A string field: JSON text fields keep v serialised, the others take v's string. */
static int decode_string(kc__cctx *c, const ProtobufCFieldDescriptor *f, const json_t *v,
                         void *dst) {
  char *s;
  if (is_json_text(f)) {
    s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s)
      return kc__fail(c, KC_ENOMEM, "cannot serialise JSON");
    /* jansson allocates with malloc by default; protobuf-c frees with free. */
  } else {
    int rc = kc__dup_string(c, v, &s);
    if (rc < 0)
      return rc;
  }
  *(char **)dst = s;
  return 0;
}

/* A message field: resource lists and string lists have their own JSON shapes. */
static int decode_submessage(kc__cctx *c, const ProtobufCFieldDescriptor *f, const json_t *v,
                             void *dst) {
  const ProtobufCMessageDescriptor *md = f->descriptor;
  ProtobufCMessage *m = NULL;
  int rc;
  if (md == &kiln__resource__descriptor) {
    Kiln__Resource *r = kc__resource_new();
    if (!r)
      return kc__fail(c, KC_ENOMEM, "out of memory");
    rc = kc__resource_list_add(c, v, r);
    if (rc < 0) {
      kc_msg_free(r);
      return rc;
    }
    m = &r->base;
  } else if (md == &kiln__string_list__descriptor) {
    rc = decode_string_list(c, v, &m);
  } else {
    rc = decode_message(c, md, v, &m);
  }
  if (rc < 0)
    return rc;
  *(ProtobufCMessage **)dst = m;
  return 0;
}

/* Decodes one value of field f from v into dst (the field's storage, or an element of
 * its array). dst is written only on success. */
static int decode_value(kc__cctx *c, const ProtobufCFieldDescriptor *f, const json_t *v,
                        void *dst) {
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
    return decode_integer(c, f, v, dst);
  case PROTOBUF_C_TYPE_BOOL:
    if (!json_is_boolean(v))
      return kc__fail(c, KC_EINVAL, "expected boolean");
    *(protobuf_c_boolean *)dst = json_is_true(v);
    return 0;
  case PROTOBUF_C_TYPE_FLOAT:
  case PROTOBUF_C_TYPE_DOUBLE:
    if (!json_is_number(v))
      return kc__fail(c, KC_EINVAL, "expected number");
    if (f->type == PROTOBUF_C_TYPE_FLOAT)
      *(float *)dst = (float)json_number_value(v);
    else
      *(double *)dst = json_number_value(v);
    return 0;
  case PROTOBUF_C_TYPE_ENUM: {
    if (!json_is_string(v))
      return kc__fail(c, KC_EINVAL, "expected string");
    const ProtobufCEnumValue *ev =
        protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, json_string_value(v));
    if (!ev)
      return kc__fail(c, KC_EINVAL, "unknown value \"%.40s\"", json_string_value(v));
    *(int *)dst = ev->value;
    return 0;
  }
  case PROTOBUF_C_TYPE_STRING:
    return decode_string(c, f, v, dst);
  case PROTOBUF_C_TYPE_MESSAGE:
    return decode_submessage(c, f, v, dst);
  default:
    return kc__fail(c, KC_EINVAL, "unsupported field type");
  }
}

static void set_has(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f) {
  if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING &&
      f->type != PROTOBUF_C_TYPE_MESSAGE)
    *(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
}

static int decode_map(kc__cctx *c, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                      const json_t *v) {
  if (!json_is_object(v))
    return kc__fail(c, KC_EINVAL, "expected object");
  const ProtobufCMessageDescriptor *ed = f->descriptor;
  const ProtobufCFieldDescriptor *kf = protobuf_c_message_descriptor_get_field_by_name(ed, "key");
  const ProtobufCFieldDescriptor *vf = protobuf_c_message_descriptor_get_field_by_name(ed, "value");
  size_t *np = (size_t *)((char *)m + f->quantifier_offset);
  ProtobufCMessage ***arrp = (ProtobufCMessage ***)((char *)m + f->offset);
  size_t n = json_object_size(v);
  if (n == 0)
    return 0;
  if (!(*arrp = calloc(n, sizeof(ProtobufCMessage *))))
    return kc__fail(c, KC_ENOMEM, "out of memory");
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)v, key, val) {
    size_t mark = kc__path_mapkey(c, key);
    ProtobufCMessage *e = calloc(1, ed->sizeof_message);
    if (!e)
      return kc__fail(c, KC_ENOMEM, "out of memory");
    ed->message_init(e);
    char *k = strdup(key);
    if (!k) {
      kc_msg_free(e);
      return kc__fail(c, KC_ENOMEM, "out of memory");
    }
    *(char **)((char *)e + kf->offset) = k;
    int rc = json_is_null(val) ? 0 : decode_value(c, vf, val, (char *)e + vf->offset);
    if (rc < 0) {
      kc_msg_free(e);
      return rc;
    }
    if (!json_is_null(val))
      set_has(e, vf);
    (*arrp)[(*np)++] = e;
    kc__path_pop(c, mark);
  }
  return 0;
}

static int decode_field(kc__cctx *c, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                        const json_t *v) {
  if (f->label != PROTOBUF_C_LABEL_REPEATED) {
    int rc = decode_value(c, f, v, (char *)m + f->offset);
    if (rc == 0)
      set_has(m, f);
    return rc;
  }
  if (f->type == PROTOBUF_C_TYPE_MESSAGE && is_map_entry(f->descriptor))
    return decode_map(c, m, f, v);
  if (!json_is_array(v))
    return kc__fail(c, KC_EINVAL, "expected array");
  size_t n = json_array_size(v);
  if (n == 0)
    return 0;
  size_t sz = elem_size(f->type);
  size_t *np = (size_t *)((char *)m + f->quantifier_offset);
  char **arrp = (char **)((char *)m + f->offset);
  if (!(*arrp = calloc(n, sz)))
    return kc__fail(c, KC_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    size_t mark = kc__path_index(c, i);
    int rc = decode_value(c, f, json_array_get(v, i), *arrp + i * sz);
    if (rc < 0)
      return rc;
    (*np)++;
    kc__path_pop(c, mark);
  }
  return 0;
}

static int decode_message(kc__cctx *c, const ProtobufCMessageDescriptor *desc, const json_t *j,
                          ProtobufCMessage **out) {
  *out = NULL;
  if (!json_is_object(j))
    return kc__fail(c, KC_EINVAL, "expected object");
  ProtobufCMessage *m = calloc(1, desc->sizeof_message);
  if (!m)
    return kc__fail(c, KC_ENOMEM, "out of memory");
  desc->message_init(m);
  for (unsigned i = 0; i < desc->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &desc->fields[i];
    char name[64];
    json_name(f, name, sizeof(name));
    json_t *v = json_object_get(j, name);
    if (!v || json_is_null(v))
      continue;
    size_t mark = kc__path_key(c, name);
    int rc = decode_field(c, m, f, v);
    if (rc < 0) {
      kc_msg_free(m);
      return rc;
    }
    kc__path_pop(c, mark);
  }
  *out = m;
  return 0;
}

int kc__decode_message(kc__cctx *c, const ProtobufCMessageDescriptor *desc, const json_t *j,
                       ProtobufCMessage **out) {
  return decode_message(c, desc, j, out);
}

int kc__decode_field(kc__cctx *c, ProtobufCMessage *m, const char *name, const json_t *v) {
  const ProtobufCFieldDescriptor *f =
      protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
  if (!f)
    return kc__fail(c, KC_EINVAL, "no field %s in %s", name, m->descriptor->name);
  if (!v || json_is_null(v))
    return 0;
  return decode_field(c, m, f, v);
}

int kc_codec_decode(const ProtobufCMessageDescriptor *desc, const json_t *json,
                    ProtobufCMessage **out, char *err, size_t errlen) {
  kc__cctx c;
  kc__cctx_init(&c, err, errlen);
  if (!out)
    return KC_EINVAL;
  *out = NULL;
  if (!desc || !json)
    return kc__fail(&c, KC_EINVAL, "no input");
  return decode_message(&c, desc, json, out);
}

/* ---- encoding ---- */

static int encode_message(kc__cctx *c, const ProtobufCMessage *m, json_t **out);

/* A string field: JSON text stored as a string is decoded back into its value. */
static int encode_string(kc__cctx *c, const ProtobufCFieldDescriptor *f, const char *s,
                         json_t **out) {
  json_t *v;
  if (is_json_text(f)) {
    json_error_t jerr;
    v = json_loads(s, JSON_DECODE_ANY, &jerr);
    if (!v)
      return kc__fail(c, KC_EINVAL, "stored JSON text is invalid: %s", jerr.text);
  } else {
    v = json_string(s);
    if (!v)
      return kc__fail(c, KC_EINVAL, "string is not valid UTF-8");
  }
  *out = v;
  return 0;
}

/* A message field: resources and string lists have JSON forms of their own. */
static int encode_submessage(kc__cctx *c, const ProtobufCFieldDescriptor *f,
                             const ProtobufCMessage *sub, json_t **out) {
  json_t *v = NULL;
  if (f->descriptor == &kiln__resource__descriptor) {
    int rc = kc_resource_list_encode((const Kiln__Resource *)sub, &v);
    if (rc < 0)
      return kc__fail(c, rc, "cannot encode resources");
  } else if (f->descriptor == &kiln__string_list__descriptor) {
    const Kiln__StringList *l = (const Kiln__StringList *)sub;
    v = json_array();
    for (size_t i = 0; v && i < l->n_items; i++)
      if (json_array_append_new(v, json_string(l->items[i])) < 0) {
        json_decref(v);
        return kc__fail(c, KC_EINVAL, "cannot encode string list");
      }
  } else {
    return encode_message(c, sub, out);
  }
  if (!v)
    return kc__fail(c, KC_ENOMEM, "out of memory");
  *out = v;
  return 0;
}

static int encode_value(kc__cctx *c, const ProtobufCFieldDescriptor *f, const void *src,
                        json_t **out) {
  json_t *v = NULL;
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
    v = json_integer(*(const int32_t *)src);
    break;
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
    v = json_integer(*(const uint32_t *)src);
    break;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
    v = json_integer(*(const int64_t *)src);
    break;
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
    if (*(const uint64_t *)src > (uint64_t)INT64_MAX)
      return kc__fail(c, KC_ERANGE, "integer too large for JSON");
    v = json_integer((json_int_t) * (const uint64_t *)src);
    break;
  case PROTOBUF_C_TYPE_BOOL:
    v = json_boolean(*(const protobuf_c_boolean *)src);
    break;
  case PROTOBUF_C_TYPE_FLOAT:
    v = json_real(*(const float *)src);
    break;
  case PROTOBUF_C_TYPE_DOUBLE:
    v = json_real(*(const double *)src);
    break;
  case PROTOBUF_C_TYPE_ENUM: {
    const ProtobufCEnumValue *ev =
        protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)src);
    if (!ev)
      return kc__fail(c, KC_EINVAL, "unknown enum value %d", *(const int *)src);
    v = json_string(ev->name);
    break;
  }
  case PROTOBUF_C_TYPE_STRING:
    return encode_string(c, f, *(char *const *)src, out);
  case PROTOBUF_C_TYPE_MESSAGE:
    return encode_submessage(c, f, *(ProtobufCMessage *const *)src, out);
  default:
    return kc__fail(c, KC_EINVAL, "unsupported field type");
  }
  if (!v)
    return kc__fail(c, KC_ENOMEM, "out of memory");
  *out = v;
  return 0;
}

static bool all_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i])
      return false;
  return true;
}

/* Whether a singular field is present: has_x for proto2 scalars, non-NULL for strings and
 * messages, and omitempty (non-zero, non-empty) for proto3 fields. */
static bool present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f) {
  const char *p = (const char *)m + f->offset;
  if (f->type == PROTOBUF_C_TYPE_STRING) {
    const char *s = *(char *const *)p;
    return s && (f->label == PROTOBUF_C_LABEL_OPTIONAL || s[0]);
  }
  if (f->type == PROTOBUF_C_TYPE_MESSAGE)
    return *(void *const *)p != NULL;
  if (f->label == PROTOBUF_C_LABEL_OPTIONAL)
    return *(const protobuf_c_boolean *)((const char *)m + f->quantifier_offset);
  return !all_zero(p, elem_size(f->type));
}

static int encode_field(kc__cctx *c, const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                        json_t **out) {
  *out = NULL;
  if (f->label != PROTOBUF_C_LABEL_REPEATED)
    return encode_value(c, f, (const char *)m + f->offset, out);
  size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
  const char *arr = *(char *const *)((const char *)m + f->offset);
  bool map = f->type == PROTOBUF_C_TYPE_MESSAGE && is_map_entry(f->descriptor);
  json_t *j = map ? json_object() : json_array();
  if (!j)
    return kc__fail(c, KC_ENOMEM, "out of memory");
  size_t sz = elem_size(f->type);
  for (size_t i = 0; i < n; i++) {
    json_t *v = NULL;
    int rc;
    if (map) {
      const ProtobufCMessage *e = ((ProtobufCMessage *const *)arr)[i];
      const ProtobufCMessageDescriptor *ed = f->descriptor;
      const ProtobufCFieldDescriptor *kf =
          protobuf_c_message_descriptor_get_field_by_name(ed, "key");
      const ProtobufCFieldDescriptor *vf =
          protobuf_c_message_descriptor_get_field_by_name(ed, "value");
      const char *key = *(char *const *)((const char *)e + kf->offset);
      if (!key)
        key = "";
      size_t mark = kc__path_mapkey(c, key);
      rc = present(e, vf) ? encode_value(c, vf, (const char *)e + vf->offset, &v) : 0;
      if (rc == 0 && !v)
        v = json_null();
      if (rc == 0 && json_object_set_new(j, key, v) < 0)
        rc = kc__fail(c, KC_EINVAL, "bad map key");
      kc__path_pop(c, mark);
    } else {
      size_t mark = kc__path_index(c, i);
      rc = encode_value(c, f, arr + i * sz, &v);
      if (rc == 0 && json_array_append_new(j, v) < 0)
        rc = kc__fail(c, KC_ENOMEM, "out of memory");
      kc__path_pop(c, mark);
    }
    if (rc < 0) {
      json_decref(j);
      return rc;
    }
  }
  *out = j;
  return 0;
}

static int encode_message(kc__cctx *c, const ProtobufCMessage *m, json_t **out) {
  *out = NULL;
  const ProtobufCMessageDescriptor *desc = m->descriptor;
  json_t *obj = json_object();
  if (!obj)
    return kc__fail(c, KC_ENOMEM, "out of memory");
  for (unsigned i = 0; i < desc->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &desc->fields[i];
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      if (*(const size_t *)((const char *)m + f->quantifier_offset) == 0)
        continue;
    } else if (!present(m, f)) {
      continue;
    }
    char name[64];
    json_name(f, name, sizeof(name));
    size_t mark = kc__path_key(c, name);
    json_t *v;
    int rc = encode_field(c, m, f, &v);
    if (rc == 0 && json_object_set_new(obj, name, v) < 0)
      rc = kc__fail(c, KC_ENOMEM, "out of memory");
    if (rc < 0) {
      json_decref(obj);
      return rc;
    }
    kc__path_pop(c, mark);
  }
  *out = obj;
  return 0;
}

int kc_codec_encode(const ProtobufCMessage *msg, json_t **out, char *err, size_t errlen) {
  kc__cctx c;
  kc__cctx_init(&c, err, errlen);
  if (!out)
    return KC_EINVAL;
  *out = NULL;
  if (!msg)
    return kc__fail(&c, KC_EINVAL, "no message");
  return encode_message(&c, msg, out);
}

/* ---- typed wrappers ---- */

#define TYPED_DECODE(fn, type, desc)                                                               \
  int fn(const json_t *json, type **out, char *err, size_t errlen) {                               \
    ProtobufCMessage *m = NULL;                                                                    \
    int rc = kc_codec_decode(&desc, json, &m, err, errlen);                                        \
    if (out)                                                                                       \
      *out = (type *)m;                                                                            \
    return rc;                                                                                     \
  }

TYPED_DECODE(kc_podgroup_decode, Kiln__PodGroup, kiln__pod_group__descriptor)
TYPED_DECODE(kc_queue_decode, Kiln__Queue, kiln__queue__descriptor)
TYPED_DECODE(kc_job_decode, Kiln__Job, kiln__job__descriptor)
TYPED_DECODE(kc_command_decode, Kiln__Command, kiln__command__descriptor)
TYPED_DECODE(kc_priorityclass_decode, Kiln__PriorityClass, kiln__priority_class__descriptor)
TYPED_DECODE(kc_pdb_decode, Kiln__PodDisruptionBudget, kiln__pod_disruption_budget__descriptor)
TYPED_DECODE(kc_resourcequota_decode, Kiln__ResourceQuota, kiln__resource_quota__descriptor)
TYPED_DECODE(kc_deviceclass_decode, Kiln__DeviceClass, kiln__device_class__descriptor)
TYPED_DECODE(kc_resourceslice_decode, Kiln__ResourceSlice, kiln__resource_slice__descriptor)
TYPED_DECODE(kc_resourceclaim_decode, Kiln__ResourceClaim, kiln__resource_claim__descriptor)
TYPED_DECODE(kc_numatopology_decode, Kiln__Numatopology, kiln__numatopology__descriptor)
TYPED_DECODE(kc_hypernode_decode, Kiln__HyperNode, kiln__hyper_node__descriptor)
TYPED_DECODE(kc_pv_decode, Kiln__PersistentVolume, kiln__persistent_volume__descriptor)
TYPED_DECODE(kc_pvc_decode, Kiln__PersistentVolumeClaim, kiln__persistent_volume_claim__descriptor)
TYPED_DECODE(kc_storageclass_decode, Kiln__StorageClass, kiln__storage_class__descriptor)
TYPED_DECODE(kc_csinode_decode, Kiln__CsiNode, kiln__csi_node__descriptor)
TYPED_DECODE(kc_csidriver_decode, Kiln__CsiDriver, kiln__csi_driver__descriptor)
TYPED_DECODE(kc_csistoragecapacity_decode, Kiln__CsiStorageCapacity,
             kiln__csi_storage_capacity__descriptor)
TYPED_DECODE(kc_configmap_decode, Kiln__ConfigMap, kiln__config_map__descriptor)

int kc_podgroup_encode(const Kiln__PodGroup *pg, json_t **out, char *err, size_t errlen) {
  return kc_codec_encode(pg ? &pg->base : NULL, out, err, errlen);
}

int kc_queue_encode(const Kiln__Queue *q, json_t **out, char *err, size_t errlen) {
  return kc_codec_encode(q ? &q->base : NULL, out, err, errlen);
}

int kc_job_encode(const Kiln__Job *job, json_t **out, char *err, size_t errlen) {
  return kc_codec_encode(job ? &job->base : NULL, out, err, errlen);
}

static int status_body(const ProtobufCMessage *st, json_t **out, char *err, size_t errlen) {
  kc__cctx c;
  kc__cctx_init(&c, err, errlen);
  if (!out)
    return KC_EINVAL;
  *out = NULL;
  json_t *body = json_object();
  if (!body)
    return kc__fail(&c, KC_ENOMEM, "out of memory");
  json_t *s = NULL;
  kc__path_key(&c, "status");
  int rc = st ? encode_message(&c, st, &s) : ((s = json_object()) ? 0 : KC_ENOMEM);
  if (rc == 0 && json_object_set_new(body, "status", s) < 0)
    rc = kc__fail(&c, KC_ENOMEM, "out of memory");
  if (rc < 0) {
    json_decref(body);
    return rc;
  }
  *out = body;
  return 0;
}

int kc_podgroup_status_encode(const Kiln__PodGroupStatus *st, json_t **out, char *err,
                              size_t errlen) {
  return status_body(st ? &st->base : NULL, out, err, errlen);
}

int kc_queue_status_encode(const Kiln__QueueStatus *st, json_t **out, char *err, size_t errlen) {
  return status_body(st ? &st->base : NULL, out, err, errlen);
}

int kc_job_status_encode(const Kiln__JobStatus *st, json_t **out, char *err, size_t errlen) {
  return status_body(st ? &st->base : NULL, out, err, errlen);
}
