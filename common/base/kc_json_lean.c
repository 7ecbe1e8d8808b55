/* The lean JSON decode: see kc_json_lean.h. yajl calls back once per token; the callbacks
 * keep a stack of the open containers and add each value to the innermost one as soon as it is
 * complete, so the tree is whole at every step and an error frees it with one json_decref. */
#include "kc_json_lean.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#define LEAN_MAX_DEPTH JSON_PARSER_MAX_DEPTH
#define LEAN_INLINE    64 /* open containers kept without a heap allocation */

typedef struct {
  json_t *c; /* the open object or array (borrowed: its parent or the root holds it) */
  bool meta; /* an object that is the value of a "metadata" key */
} lean_frame;

typedef struct {
  yajl_handle h;
  json_t *root;
  size_t end;     /* the byte offset after the root value, once it is complete */
  lean_frame *st; /* open containers, innermost last */
  size_t n, cap;
  char *key; /* the key whose value comes next (in the innermost object) */
  size_t key_len, key_cap;
  size_t skip;    /* containers open inside a managedFields value being skipped */
  bool skip_next; /* the next value is a managedFields value */
  int code;       /* json_error_code of the failure a callback reported */
  char why[JSON_ERROR_TEXT_LENGTH];
  /* Not cleared at the start (kc_json_lean_loadb clears what comes before inl). */
  lean_frame inl[LEAN_INLINE];
  char key_inl[128];
} lean;

static int fail(lean *l, enum json_error_code code, const char *why) {
  l->code = (int)code;
  snprintf(l->why, sizeof(l->why), "%s", why);
  return 0; /* yajl: cancel the parse */
}

/* ---- which inputs yajl would read differently from jansson ---- */

static int hex4(const unsigned char *p) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    int c = p[i], d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (d < 0)
      return -1;
    v = v * 16 + d;
  }
  return v;
}

/* The length of the escape at p (p[0] == '\\') when yajl decodes it as jansson does, 0 when
 * not: \u0000 without JSON_ALLOW_NUL (jansson refuses it), a lone or ill-paired surrogate
 * (jansson refuses it; yajl writes '?' or a wrong code point). */
static size_t escape_ok(const unsigned char *p, size_t left, size_t flags) {
  if (left < 2 || p[1] != 'u')
    return left < 2 ? 1 : 2;
  int u = left >= 6 ? hex4(p + 2) : -1;
  if (u < 0)
    return 2; /* yajl refuses it as jansson does */
  if (u == 0)
    return (flags & JSON_ALLOW_NUL) ? 6 : 0;
  if (u >= 0xDC00 && u <= 0xDFFF)
    return 0;
  if (u < 0xD800 || u > 0xDBFF)
    return 6;
  int lo = left >= 12 && p[6] == '\\' && p[7] == 'u' ? hex4(p + 8) : -1;
  return lo >= 0xDC00 && lo <= 0xDFFF ? 12 : 0;
}

/* The length of the well-formed UTF-8 sequence at p (p[0] >= 0x80), 0 when it is not one:
 * no overlong forms, no surrogates, nothing above U+10FFFF (what jansson accepts). */
static size_t utf8_ok(const unsigned char *p, size_t left) {
  unsigned c = p[0];
  size_t n = c >= 0xC2 && c <= 0xDF   ? 2
             : c >= 0xE0 && c <= 0xEF ? 3
             : c >= 0xF0 && c <= 0xF4 ? 4
                                      : 0;
  if (n == 0 || n > left)
    return 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80)
      return 0;
  unsigned c1 = p[1];
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
      (c == 0xF4 && c1 > 0x8F))
    return 0;
  return n;
}

/* True when yajl reads buf as jansson does (see kc_json_lean.h). */
static bool yajl_agrees(const unsigned char *buf, size_t len, size_t flags) {
  size_t i = 0;
  while (i < len) {
    unsigned char c = buf[i];
    size_t step = 1;
    if (c == '\\')
      step = escape_ok(buf + i, len - i, flags);
    else if (c >= 0x80)
      step = utf8_ok(buf + i, len - i);
    else if (c == '\v' || c == '\f' || c == '\0')
      step = 0;
    if (step == 0)
      return false;
    i += step;
  }
  return true;
}

/* ---- the tree ---- */

/* Adds v (a new reference) to the innermost container, or makes it the root. */
static int add(lean *l, json_t *v) {
  if (v == NULL)
    return fail(l, json_error_out_of_memory, "out of memory");
  if (l->n == 0) {
    l->root = v;
    return 1;
  }
  json_t *top = l->st[l->n - 1].c;
  int rc = json_is_array(top) ? json_array_append_new(top, v)
                              : json_object_setn_new_nocheck(top, l->key, l->key_len, v);
  return rc == 0 ? 1 : fail(l, json_error_out_of_memory, "out of memory");
}

/* Every value passes here first: 1 to build it, 2 to parse it without building it (it is or
 * is inside a managedFields value), 0 to stop. */
static int value_begin(lean *l) {
  if (l->n + l->skip + 1 > LEAN_MAX_DEPTH)
    return fail(l, json_error_stack_overflow, "maximum parsing depth reached");
  if (l->skip > 0)
    return 2;
  if (l->skip_next) {
    l->skip_next = false;
    return 2;
  }
  return 1;
}

static int scalar_begin(lean *l) {
  if (l->n == 0 && l->skip == 0)
    return fail(l, json_error_invalid_syntax, "'[' or '{' expected");
  return value_begin(l);
}

static int on_null(void *ctx) {
  lean *l = ctx;
  int b = scalar_begin(l);
  return b == 1 ? add(l, json_null()) : b;
}

static int on_bool(void *ctx, int v) {
  lean *l = ctx;
  int b = scalar_begin(l);
  return b == 1 ? add(l, json_boolean(v)) : b;
}

/* jansson's reading of a number's text: an integer unless it has a fraction or an exponent.
 * *out gets the value unless out is NULL (a skipped value is only checked). */
static int number_value(lean *l, const char *s, size_t n, json_t **out) {
  char small[64], *t = n < sizeof(small) ? small : malloc(n + 1);
  if (t == NULL)
    return fail(l, json_error_out_of_memory, "out of memory");
  memcpy(t, s, n);
  t[n] = '\0';
  bool real = memchr(t, '.', n) || memchr(t, 'e', n) || memchr(t, 'E', n);
  errno = 0;
  int ok = 1;
  if (!real) {
    long long v = strtoll(t, NULL, 10);
    if (errno == ERANGE)
      ok = fail(l, json_error_numeric_overflow,
                v < 0 ? "too big negative integer" : "too big integer");
    else if (out)
      *out = json_integer((json_int_t)v);
  } else {
    double d = strtod(t, NULL);
    if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL))
      ok = fail(l, json_error_numeric_overflow, "real number overflow");
    else if (out)
      *out = json_real(d);
  }
  if (t != small)
    free(t);
  return ok;
}

static int on_number(void *ctx, const char *s, size_t n) {
  lean *l = ctx;
  int b = scalar_begin(l);
  json_t *v = NULL;
  if (b == 0 || !number_value(l, s, n, b == 1 ? &v : NULL))
    return 0;
  return b == 1 ? add(l, v) : 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t n) {
  lean *l = ctx;
  int b = scalar_begin(l);
  return b == 1 ? add(l, json_stringn_nocheck((const char *)s, n)) : b;
}

static int on_key(void *ctx, const unsigned char *s, size_t n) {
  lean *l = ctx;
  if (memchr(s, '\0', n))
    return fail(l, json_error_null_byte_in_key, "NUL byte in object key not supported");
  if (l->skip > 0)
    return 1;
  if (n > l->key_cap) {
    char *k = malloc(n);
    if (k == NULL)
      return fail(l, json_error_out_of_memory, "out of memory");
    if (l->key != l->key_inl)
      free(l->key);
    l->key = k;
    l->key_cap = n;
  }
  memcpy(l->key, s, n);
  l->key_len = n;
  l->skip_next = l->st[l->n - 1].meta && n == 13 && memcmp(s, "managedFields", 13) == 0;
  return 1;
}

static bool key_is(const lean *l, const char *k) {
  return l->key_len == strlen(k) && memcmp(l->key, k, l->key_len) == 0;
}

static int push(lean *l, json_t *c, bool meta) {
  if (l->n == l->cap) {
    size_t cap = l->cap * 2;
    lean_frame *st =
        l->st == l->inl ? malloc(cap * sizeof(*st)) : realloc(l->st, cap * sizeof(*st));
    if (st == NULL)
      return fail(l, json_error_out_of_memory, "out of memory");
    if (l->st == l->inl)
      memcpy(st, l->inl, sizeof(l->inl));
    l->st = st;
    l->cap = cap;
  }
  l->st[l->n++] = (lean_frame){c, meta};
  return 1;
}

static int open_container(lean *l, bool object) {
  int b = value_begin(l);
  if (b != 1) {
    l->skip += b == 2;
    return b != 0;
  }
  bool meta = object && l->n > 0 && json_is_object(l->st[l->n - 1].c) && key_is(l, "metadata");
  json_t *c = object ? json_object() : json_array();
  if (!add(l, c))
    return 0;
  return push(l, c, meta);
}

static int on_start_map(void *ctx) {
  return open_container(ctx, true);
}

static int on_start_array(void *ctx) {
  return open_container(ctx, false);
}

static int on_end(void *ctx) {
  lean *l = ctx;
  if (l->skip > 0)
    l->skip--;
  else if (--l->n == 0)
    l->end = yajl_get_bytes_consumed(l->h);
  return 1;
}

static const yajl_callbacks lean_callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_bool,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

/* ---- the loader ---- */

static void set_error(json_error_t *e, const char *buf, size_t off, int code, const char *why) {
  if (e == NULL)
    return;
  int line = 1, col = 0;
  for (size_t i = 0; i < off; i++) {
    col++;
    if (buf[i] == '\n') {
      line++;
      col = 0;
    }
  }
  memset(e, 0, sizeof(*e));
  e->line = line;
  e->column = col;
  e->position = off > INT32_MAX ? INT32_MAX : (int)off;
  snprintf(e->source, sizeof(e->source), "<buffer>");
  size_t n = strnlen(why, sizeof(e->text) - 2); /* the last byte holds the code */
  memcpy(e->text, why, n);
  e->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)code;
}

/* yajl's own message for a syntax error, without its trailing newline. */
static void yajl_reason(yajl_handle h, const char *buf, size_t len, char *out, size_t outlen) {
  unsigned char *m = yajl_get_error(h, 0, (const unsigned char *)buf, len);
  snprintf(out, outlen, "%s", m ? (const char *)m : "invalid JSON");
  out[strcspn(out, "\n")] = '\0';
  if (m)
    yajl_free_error(h, m);
}

/* True when only JSON whitespace follows the value; else *off gets where something does. */
static bool only_space(const char *buf, size_t len, size_t end, size_t *off) {
  for (size_t i = end; i < len; i++)
    if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' && buf[i] != '\r') {
      *off = i;
      return false;
    }
  return true;
}

static json_t *lean_parse(lean *l, const char *buf, size_t len, json_error_t *error) {
  yajl_handle h = l->h = yajl_alloc(&lean_callbacks, NULL, l);
  if (h == NULL) {
    set_error(error, buf, 0, json_error_out_of_memory, "out of memory");
    return NULL;
  }
  yajl_status st = yajl_parse(h, (const unsigned char *)buf, len);
  size_t off = yajl_get_bytes_consumed(h);
  if (st == yajl_status_ok) {
    st = yajl_complete_parse(h);
    off = len;
  }
  if (st == yajl_status_ok && (l->root == NULL || !only_space(buf, len, l->end, &off))) {
    /* yajl refuses an empty text itself; it takes an unterminated string after the value
     * for an incomplete token */
    fail(l, json_error_end_of_input_expected,
         l->root ? "end of file expected" : "'[' or '{' expected");
    st = yajl_status_client_canceled;
  }
  if (st != yajl_status_ok) {
    char why[JSON_ERROR_TEXT_LENGTH];
    if (st == yajl_status_client_canceled)
      snprintf(why, sizeof(why), "%s", l->why);
    else
      yajl_reason(h, buf, len, why, sizeof(why));
    set_error(error, buf, off,
              st == yajl_status_client_canceled ? l->code : (int)json_error_invalid_syntax, why);
    json_decref(l->root);
    l->root = NULL;
  }
  yajl_free(h);
  return l->root;
}

json_t *kc_json_lean_loadb(const char *buf, size_t len, size_t flags, json_error_t *error) {
  if (buf == NULL) {
    set_error(error, "", 0, json_error_invalid_argument, "wrong arguments");
    return NULL;
  }
  if (!yajl_agrees((const unsigned char *)buf, len, flags)) {
    json_t *j = json_loadb(buf, len, flags, error);
    kc_json_drop_managed_fields(j);
    return j;
  }
  lean l;
  memset(&l, 0, offsetof(lean, inl));
  l.st = l.inl;
  l.cap = LEAN_INLINE;
  l.key = l.key_inl;
  l.key_cap = sizeof(l.key_inl);
  json_t *root = lean_parse(&l, buf, len, error);
  if (l.st != l.inl)
    free(l.st);
  if (l.key != l.key_inl)
    free(l.key);
  return root;
}

void kc_json_drop_managed_fields(json_t *j) {
  const char *k;
  json_t *v;
  size_t i;
  if (json_is_object(j)) {
    json_object_foreach(j, k, v) {
      if (strcmp(k, "metadata") == 0 && json_is_object(v))
        json_object_del(v, "managedFields");
      kc_json_drop_managed_fields(v);
    }
  } else if (json_is_array(j)) {
    json_array_foreach(j, i, v) kc_json_drop_managed_fields(v);
  }
}
