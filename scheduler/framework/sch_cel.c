/* The CEL subset of DRA device selectors: see sch_cel.h.
 *
 * A recursive-descent parser (depth bounded) builds a node array; the evaluator walks it
 * once per device. Values borrow strings from the program and the device, so evaluation
 * allocates nothing. */
#include "sch_cel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_quantity.h"

/* ---- the program ---- */

typedef enum {
  N_NULL,
  N_BOOL,
  N_INT,
  N_STR,
  N_DEVICE, /* the variable `device` */
  N_SELECT, /* a.s */
  N_INDEX,  /* a[b] */
  N_CALL,   /* fn(args at a...), or a method when c >= 0 (the target) */
  N_LIST,   /* [args at a...] */
  N_NOT,
  N_NEG,
  N_BINARY, /* a op b */
  N_COND,   /* a ? b : c */
} node_kind;

typedef enum {
  OP_EQ,
  OP_NE,
  OP_LT,
  OP_LE,
  OP_GT,
  OP_GE,
  OP_IN,
  OP_AND,
  OP_OR,
} binop;

/* Functions and methods, with the number of arguments each takes (methods: besides the
 * target). */
#define FN_MAP(XX)                                                                                 \
  XX(HAS, "has", 1, false)                                                                         \
  XX(SEMVER, "semver", 1, false)                                                                   \
  XX(IS_SEMVER, "isSemver", 1, false)                                                              \
  XX(QUANTITY, "quantity", 1, false)                                                               \
  XX(IS_QUANTITY, "isQuantity", 1, false)                                                          \
  XX(SIZE, "size", 1, false)                                                                       \
  XX(COMPARE_TO, "compareTo", 1, true)                                                             \
  XX(IS_GREATER, "isGreaterThan", 1, true)                                                         \
  XX(IS_LESS, "isLessThan", 1, true)                                                               \
  XX(MAJOR, "major", 0, true)                                                                      \
  XX(MINOR, "minor", 0, true)                                                                      \
  XX(PATCH, "patch", 0, true)                                                                      \
  XX(AS_INTEGER, "asInteger", 0, true)                                                             \
  XX(IS_INTEGER, "isInteger", 0, true)                                                             \
  XX(STARTS_WITH, "startsWith", 1, true)                                                           \
  XX(ENDS_WITH, "endsWith", 1, true)                                                               \
  XX(CONTAINS, "contains", 1, true)                                                                \
  XX(SIZE_M, "size", 0, true)

typedef enum {
#define XX(id, name, nargs, method) FN_##id,
  FN_MAP(XX)
#undef XX
      FN__COUNT
} fn_id;

static const struct {
  const char *name;
  int nargs;
  bool method;
} fns[FN__COUNT] = {
#define XX(id, name, nargs, method) {name, nargs, method},
    FN_MAP(XX)
#undef XX
};

typedef struct node {
  node_kind kind;
  int op;       /* binop or fn_id */
  int32_t a, b; /* operands; for N_CALL/N_LIST the first argument */
  int32_t c;    /* N_COND: else; N_CALL: the method's target, -1 for a function */
  int32_t next; /* the next argument or list element, -1 ends */
  int32_t h;    /* height of the tree below: evaluation recurses this deep */
  int64_t i;
  char *s; /* owned: string literal (unescaped) or selected name */
  size_t slen;
} node;

struct sch_cel {
  node *n;
  int32_t len, cap;
  int32_t root;
};

void sch_cel_free(sch_cel *c) {
  if (c == NULL)
    return;
  for (int32_t i = 0; i < c->len; i++)
    free(c->n[i].s);
  free(c->n);
  free(c);
}

/* ---- lexer ---- */

typedef enum {
  T_EOF,
  T_IDENT,
  T_INT,
  T_STR,
  T_PUNCT, /* one of the operators and brackets, in tok.p */
  T_BAD,
} tok_kind;

typedef struct parser {
  const char *src;
  size_t pos, len;
  tok_kind tok;
  const char *tstart; /* the token's text */
  size_t tlen;
  char p[3]; /* T_PUNCT: "(", "&&", ... */
  int depth;
  sch_cel *prog;
  int rc;
  char *err;
  size_t errlen;
} parser;

static int fail(parser *ps, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(parser *ps, int rc, const char *fmt, ...) {
  if (ps->rc == 0) {
    ps->rc = rc;
    if (ps->err && ps->errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(ps->err, ps->errlen, fmt, ap);
      va_end(ap);
    }
  }
  return -1;
}

static bool is_ident_start(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}
static bool is_digit(char ch) {
  return ch >= '0' && ch <= '9';
}

/* The operators of two characters first, then one. */
static bool lex_punct(parser *ps) {
  static const char *const two[] = {"&&", "||", "==", "!=", "<=", ">="};
  static const char one[] = "()[].,!-<>?:{}+*/%";
  const char *s = ps->src + ps->pos;
  for (size_t i = 0; i < sizeof(two) / sizeof(two[0]); i++)
    if (ps->pos + 1 < ps->len && s[0] == two[i][0] && s[1] == two[i][1]) {
      memcpy(ps->p, two[i], 3);
      ps->tlen = 2;
      return true;
    }
  if (*s && strchr(one, *s)) {
    ps->p[0] = *s;
    ps->p[1] = '\0';
    ps->tlen = 1;
    return true;
  }
  return false;
}

static void lex_string(parser *ps) {
  char q = ps->src[ps->pos];
  size_t i = ps->pos + 1;
  while (i < ps->len && ps->src[i] != q && ps->src[i] != '\n') {
    if (ps->src[i] == '\\' && i + 1 < ps->len)
      i++;
    i++;
  }
  if (i >= ps->len || ps->src[i] != q) {
    ps->tok = T_BAD;
    fail(ps, KC_EPARSE, "syntax error at %zu: unterminated string", ps->pos);
    return;
  }
  ps->tok = T_STR;
  ps->tlen = i + 1 - ps->pos;
}

static void next(parser *ps) {
  while (ps->pos < ps->len && strchr(" \t\r\n", ps->src[ps->pos]))
    ps->pos += 1;
  ps->tstart = ps->src + ps->pos;
  ps->tlen = 0;
  if (ps->pos >= ps->len) {
    ps->tok = T_EOF;
    return;
  }
  char ch = ps->src[ps->pos];
  if (is_ident_start(ch)) {
    size_t i = ps->pos;
    while (i < ps->len && (is_ident_start(ps->src[i]) || is_digit(ps->src[i])))
      i++;
    ps->tok = T_IDENT;
    ps->tlen = i - ps->pos;
  } else if (is_digit(ch)) {
    size_t i = ps->pos;
    while (i < ps->len && (is_digit(ps->src[i]) || is_ident_start(ps->src[i]) || ps->src[i] == '.'))
      i++;
    ps->tok = T_INT;
    ps->tlen = i - ps->pos;
  } else if (ch == '"' || ch == '\'') {
    lex_string(ps);
  } else if (lex_punct(ps)) {
    ps->tok = T_PUNCT;
  } else {
    ps->tok = T_BAD;
    fail(ps, KC_EPARSE, "syntax error at %zu: unexpected character", ps->pos);
  }
  ps->pos += ps->tlen;
}

static bool at(const parser *ps, const char *punct) {
  return ps->tok == T_PUNCT && strcmp(ps->p, punct) == 0;
}
static bool at_word(const parser *ps, const char *w) {
  return ps->tok == T_IDENT && ps->tlen == strlen(w) && memcmp(ps->tstart, w, ps->tlen) == 0;
}

static int expect(parser *ps, const char *punct) {
  if (!at(ps, punct))
    return fail(ps, KC_EPARSE, "syntax error at %zu: expected '%s'", (size_t)(ps->tstart - ps->src),
                punct);
  next(ps);
  return 0;
}

/* ---- nodes ---- */

static int32_t add(parser *ps, node_kind k) {
  sch_cel *c = ps->prog;
  if (c->len == c->cap) {
    int32_t cap = c->cap ? c->cap * 2 : 16;
    node *v = realloc(c->n, (size_t)cap * sizeof(*v));
    if (v == NULL)
      return fail(ps, KC_ENOMEM, "out of memory");
    c->n = v;
    c->cap = cap;
  }
  c->n[c->len] = (node){.kind = k, .a = -1, .b = -1, .c = -1, .next = -1};
  return c->len++;
}

/* Sets n's height from its operands' (the arguments' too) and refuses a tree the evaluator
 * would recurse through too deeply (a chain of a thousand &&). Returns n or -1. */
static int32_t seal(parser *ps, int32_t n) {
  if (n < 0)
    return -1;
  node *v = ps->prog->n;
  int32_t h = 0;
  int32_t kids[3] = {v[n].a, v[n].b, v[n].c};
  for (int k = 0; k < 3; k++)
    if (kids[k] >= 0 && v[kids[k]].h > h)
      h = v[kids[k]].h;
  if (v[n].kind == N_CALL || v[n].kind == N_LIST)
    for (int32_t a = v[n].a; a >= 0; a = v[a].next)
      if (v[a].h > h)
        h = v[a].h;
  v[n].h = h + 1;
  if (v[n].h > SCH_CEL_MAX_DEPTH)
    return fail(ps, KC_EPARSE, "expression nested deeper than %d", SCH_CEL_MAX_DEPTH);
  return n;
}

static int32_t add2(parser *ps, node_kind k, int op, int32_t a, int32_t b) {
  if (a < 0 || b < 0)
    return -1;
  int32_t i = add(ps, k);
  if (i >= 0) {
    ps->prog->n[i].op = op;
    ps->prog->n[i].a = a;
    ps->prog->n[i].b = b;
  }
  return seal(ps, i);
}

static int set_text(parser *ps, int32_t i, const char *s, size_t len) {
  char *t = malloc(len + 1);
  if (t == NULL)
    return fail(ps, KC_ENOMEM, "out of memory");
  memcpy(t, s, len);
  t[len] = '\0';
  ps->prog->n[i].s = t;
  ps->prog->n[i].slen = len;
  return 0;
}

static int unescape(char e, char *out) {
  switch (e) {
  case '\\':
  case '"':
  case '\'':
  case '`':
  case '?':
    *out = e;
    return 0;
  case 'n':
    *out = '\n';
    return 0;
  case 't':
    *out = '\t';
    return 0;
  case 'r':
    *out = '\r';
    return 0;
  default:
    return -1;
  }
}

/* A string literal's text without quotes and escapes. */
static int32_t string_literal(parser *ps) {
  const char *s = ps->tstart + 1;
  size_t len = ps->tlen - 2, k = 0;
  char *buf = malloc(len + 1);
  if (buf == NULL)
    return fail(ps, KC_ENOMEM, "out of memory");
  for (size_t i = 0; i < len; i++) {
    char ch = s[i];
    if (ch == '\\' && unescape(s[++i], &ch) < 0) {
      free(buf);
      return fail(ps, KC_EPARSE, "unsupported escape '\\%c' in a string", s[i]);
    }
    buf[k++] = ch;
  }
  buf[k] = '\0';
  int32_t n = add(ps, N_STR);
  if (n < 0) {
    free(buf);
    return -1;
  }
  ps->prog->n[n].s = buf;
  ps->prog->n[n].slen = k;
  next(ps);
  return n;
}

static int32_t int_literal(parser *ps) {
  int64_t v = 0;
  for (size_t i = 0; i < ps->tlen; i++) {
    char ch = ps->tstart[i];
    if (!is_digit(ch))
      return fail(ps, KC_EPARSE, "unsupported: the literal '%.*s' (only decimal integers)",
                  (int)ps->tlen, ps->tstart);
    if (v > (INT64_MAX - (ch - '0')) / 10)
      return fail(ps, KC_EPARSE, "integer literal out of range: %.*s", (int)ps->tlen, ps->tstart);
    v = v * 10 + (ch - '0');
  }
  int32_t n = add(ps, N_INT);
  if (n >= 0)
    ps->prog->n[n].i = v;
  next(ps);
  return n;
}

static int32_t expr(parser *ps);

/* "(a, b, ...)" or "[a, b, ...]" up to close; the first argument's index (-1: none) and
 * their count. */
static int args(parser *ps, const char *close, int32_t *first, int *count) {
  *first = -1;
  *count = 0;
  int32_t last = -1;
  while (!at(ps, close)) {
    if (ps->tok == T_EOF)
      return fail(ps, KC_EPARSE, "syntax error at %zu: unexpected end of expression", ps->pos);
    if (*count > 0 && expect(ps, ",") < 0)
      return -1;
    int32_t a = expr(ps);
    if (a < 0)
      return -1;
    if (last < 0)
      *first = a;
    else
      ps->prog->n[last].next = a;
    last = a;
    (*count)++;
  }
  next(ps);
  return 0;
}

static int find_fn(const char *name, size_t len, bool method) {
  for (int f = 0; f < FN__COUNT; f++)
    if (fns[f].method == method && strlen(fns[f].name) == len &&
        memcmp(fns[f].name, name, len) == 0)
      return f;
  return -1;
}

/* name(args) or target.name(args). */
static int32_t call(parser *ps, const char *name, size_t len, int32_t target) {
  int f = find_fn(name, len, target >= 0);
  if (f < 0)
    return fail(ps, KC_EPARSE, "unsupported: the function '%.*s'", (int)len, name);
  int32_t first;
  int count;
  if (args(ps, ")", &first, &count) < 0)
    return -1;
  if (count != fns[f].nargs)
    return fail(ps, KC_EPARSE, "found no matching overload for '%s' with %d argument(s)",
                fns[f].name, count);
  if (f == FN_HAS && ps->prog->n[first].kind != N_SELECT)
    return fail(ps, KC_EPARSE, "invalid argument to has() macro");
  int32_t n = add(ps, N_CALL);
  if (n >= 0) {
    ps->prog->n[n].op = f;
    ps->prog->n[n].a = first;
    ps->prog->n[n].c = target;
  }
  return seal(ps, n);
}

static int32_t identifier(parser *ps) {
  const char *name = ps->tstart;
  size_t len = ps->tlen;
  next(ps);
  if (at(ps, "(")) {
    next(ps);
    return call(ps, name, len, -1);
  }
  if (len == 4 && memcmp(name, "true", 4) == 0) {
    int32_t n = add(ps, N_BOOL);
    if (n >= 0)
      ps->prog->n[n].i = 1;
    return n;
  }
  if (len == 5 && memcmp(name, "false", 5) == 0)
    return add(ps, N_BOOL);
  if (len == 4 && memcmp(name, "null", 4) == 0)
    return add(ps, N_NULL);
  if (len == 6 && memcmp(name, "device", 6) == 0)
    return add(ps, N_DEVICE);
  return fail(ps, KC_EPARSE, "undeclared reference to '%.*s'", (int)len, name);
}

static int32_t primary(parser *ps) {
  switch (ps->tok) {
  case T_IDENT:
    return identifier(ps);
  case T_INT:
    return int_literal(ps);
  case T_STR:
    return string_literal(ps);
  case T_PUNCT:
    if (at(ps, "(")) {
      next(ps);
      int32_t e = expr(ps);
      return e < 0 || expect(ps, ")") < 0 ? -1 : e;
    }
    if (at(ps, "[")) {
      next(ps);
      int32_t first;
      int count;
      if (args(ps, "]", &first, &count) < 0)
        return -1;
      int32_t n = add(ps, N_LIST);
      if (n >= 0)
        ps->prog->n[n].a = first;
      return seal(ps, n);
    }
    if (at(ps, "{"))
      return fail(ps, KC_EPARSE, "unsupported: map literals");
    break;
  default:
    break;
  }
  if (ps->tok == T_EOF)
    return fail(ps, KC_EPARSE, "syntax error at %zu: unexpected end of expression", ps->pos);
  return fail(ps, KC_EPARSE, "syntax error at %zu: unexpected '%.*s'",
              (size_t)(ps->tstart - ps->src), (int)ps->tlen, ps->tstart);
}

/* primary, then any number of .name, .name(args) and [index]. */
static int32_t member(parser *ps) {
  int32_t e = primary(ps);
  while (e >= 0) {
    if (at(ps, "[")) {
      next(ps);
      int32_t i = expr(ps);
      if (i < 0 || expect(ps, "]") < 0)
        return -1;
      e = add2(ps, N_INDEX, 0, e, i);
    } else if (at(ps, ".")) {
      next(ps);
      if (ps->tok != T_IDENT)
        return fail(ps, KC_EPARSE, "syntax error at %zu: expected a name after '.'",
                    (size_t)(ps->tstart - ps->src));
      const char *name = ps->tstart;
      size_t len = ps->tlen;
      next(ps);
      if (at(ps, "(")) {
        next(ps);
        e = call(ps, name, len, e);
        continue;
      }
      int32_t s = add(ps, N_SELECT);
      if (s < 0 || set_text(ps, s, name, len) < 0)
        return -1;
      ps->prog->n[s].a = e;
      e = seal(ps, s);
    } else {
      break;
    }
  }
  return e;
}

static int32_t unary(parser *ps) {
  if (++ps->depth > SCH_CEL_MAX_DEPTH)
    return fail(ps, KC_EPARSE, "expression nested deeper than %d", SCH_CEL_MAX_DEPTH);
  int32_t r;
  if (at(ps, "!") || at(ps, "-")) {
    node_kind k = at(ps, "!") ? N_NOT : N_NEG;
    next(ps);
    int32_t a = unary(ps);
    r = a < 0 ? -1 : add(ps, k);
    if (r >= 0)
      ps->prog->n[r].a = a;
    r = seal(ps, r);
  } else {
    r = member(ps);
  }
  ps->depth--;
  return r;
}

static int relop(const parser *ps) {
  static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
  for (int i = 0; i < 6; i++)
    if (at(ps, ops[i]))
      return OP_EQ + i;
  return at_word(ps, "in") ? OP_IN : -1;
}

static int32_t relation(parser *ps) {
  int32_t e = unary(ps);
  while (e >= 0) {
    if (at(ps, "+") || at(ps, "-") || at(ps, "*") || at(ps, "/") || at(ps, "%"))
      return fail(ps, KC_EPARSE, "unsupported: arithmetic ('%s')", ps->p);
    int op = relop(ps);
    if (op < 0)
      break;
    next(ps);
    e = add2(ps, N_BINARY, op, e, unary(ps));
  }
  return e;
}

static int32_t conjunction(parser *ps) {
  int32_t e = relation(ps);
  while (e >= 0 && at(ps, "&&")) {
    next(ps);
    e = add2(ps, N_BINARY, OP_AND, e, relation(ps));
  }
  return e;
}

static int32_t disjunction(parser *ps) {
  int32_t e = conjunction(ps);
  while (e >= 0 && at(ps, "||")) {
    next(ps);
    e = add2(ps, N_BINARY, OP_OR, e, conjunction(ps));
  }
  return e;
}

static int32_t expr(parser *ps) {
  if (++ps->depth > SCH_CEL_MAX_DEPTH)
    return fail(ps, KC_EPARSE, "expression nested deeper than %d", SCH_CEL_MAX_DEPTH);
  int32_t e = disjunction(ps);
  if (e >= 0 && at(ps, "?")) {
    next(ps);
    int32_t t = expr(ps);
    if (t < 0 || expect(ps, ":") < 0) {
      ps->depth--;
      return -1;
    }
    int32_t f = expr(ps);
    int32_t n = add2(ps, N_COND, 0, e, t);
    if (n >= 0 && f >= 0)
      ps->prog->n[n].c = f;
    e = f < 0 ? -1 : seal(ps, n);
  }
  ps->depth--;
  return e;
}

int sch_cel_compile(const char *src, sch_cel **out, char *err, size_t errlen) {
  *out = NULL;
  if (err && errlen)
    err[0] = '\0';
  sch_cel *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return KC_ENOMEM;
  parser ps = {.src = src ? src : "", .prog = c, .err = err, .errlen = errlen};
  ps.len = strlen(ps.src);
  if (ps.len > SCH_CEL_MAX_LEN)
    fail(&ps, KC_EPARSE, "expression longer than %d bytes", SCH_CEL_MAX_LEN);
  else {
    next(&ps);
    c->root = expr(&ps);
    if (c->root >= 0 && ps.tok != T_EOF)
      fail(&ps, KC_EPARSE, "syntax error at %zu: unexpected '%.*s'", (size_t)(ps.tstart - ps.src),
           (int)ps.tlen, ps.tstart);
  }
  if (ps.rc == 0 && c->root < 0)
    fail(&ps, KC_EPARSE, "syntax error");
  if (ps.rc) {
    sch_cel_free(c);
    return ps.rc;
  }
  *out = c;
  return 0;
}

/* ---- semantic versions ---- */

/* Digits without a leading zero (semver's numeric identifier). */
static bool numeric(const char *s, size_t len, uint64_t *v) {
  if (len == 0 || (len > 1 && s[0] == '0') || len > 19)
    return false;
  *v = 0;
  for (size_t i = 0; i < len; i++) {
    if (!is_digit(s[i]))
      return false;
    *v = *v * 10 + (uint64_t)(s[i] - '0');
  }
  return true;
}

/* Dot-separated non-empty identifiers of [0-9A-Za-z-]; numeric ones without leading zeros
 * when check_numeric. */
static bool identifiers(const char *s, size_t len, bool check_numeric) {
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && s[i] != '.') {
      char ch = s[i];
      if (!(is_digit(ch) || is_ident_start(ch) || ch == '-') || ch == '_')
        return false;
      continue;
    }
    size_t n = i - start;
    if (n == 0)
      return false;
    bool all_digits = true;
    for (size_t k = start; k < i; k++)
      all_digits &= is_digit(s[k]);
    if (check_numeric && all_digits && n > 1 && s[start] == '0')
      return false;
    start = i + 1;
  }
  return true;
}

bool sch_semver_parse(const char *s, size_t len, sch_semver *v) {
  memset(v, 0, sizeof(*v));
  const char *end = s + len;
  const char *plus = memchr(s, '+', len);
  if (plus) {
    if (!identifiers(plus + 1, (size_t)(end - plus - 1), false))
      return false;
    end = plus;
  }
  const char *dash = memchr(s, '-', (size_t)(end - s));
  if (dash) {
    if (!identifiers(dash + 1, (size_t)(end - dash - 1), true))
      return false;
    v->pre = dash + 1;
    v->prelen = (size_t)(end - dash - 1);
    end = dash;
  }
  uint64_t *parts[3] = {&v->major, &v->minor, &v->patch};
  const char *p = s;
  for (int i = 0; i < 3; i++) {
    const char *dot = i < 2 ? memchr(p, '.', (size_t)(end - p)) : end;
    if (dot == NULL || !numeric(p, (size_t)(dot - p), parts[i]))
      return false;
    p = dot + 1;
  }
  return true;
}

/* One pre-release identifier against another: numeric ones by value and before
 * alphanumeric ones, the rest in ASCII order. */
static int ident_cmp(const char *a, size_t alen, const char *b, size_t blen) {
  uint64_t x, y;
  bool na = numeric(a, alen, &x), nb = numeric(b, blen, &y);
  if (na && nb)
    return x < y ? -1 : x > y;
  if (na != nb)
    return na ? -1 : 1;
  int c = memcmp(a, b, alen < blen ? alen : blen);
  if (c)
    return c < 0 ? -1 : 1;
  return alen < blen ? -1 : alen > blen;
}

static int pre_cmp(const sch_semver *a, const sch_semver *b) {
  if (!a->pre || !b->pre)
    return a->pre ? -1 : b->pre ? 1 : 0;
  size_t i = 0, j = 0;
  while (i < a->prelen && j < b->prelen) {
    const char *da = memchr(a->pre + i, '.', a->prelen - i);
    const char *db = memchr(b->pre + j, '.', b->prelen - j);
    size_t la = da ? (size_t)(da - a->pre) - i : a->prelen - i;
    size_t lb = db ? (size_t)(db - b->pre) - j : b->prelen - j;
    int c = ident_cmp(a->pre + i, la, b->pre + j, lb);
    if (c)
      return c;
    i += la + 1;
    j += lb + 1;
  }
  return i < a->prelen ? 1 : j < b->prelen ? -1 : 0;
}

int sch_semver_cmp(const sch_semver *a, const sch_semver *b) {
  const uint64_t x[3] = {a->major, a->minor, a->patch}, y[3] = {b->major, b->minor, b->patch};
  for (int i = 0; i < 3; i++)
    if (x[i] != y[i])
      return x[i] < y[i] ? -1 : 1;
  return pre_cmp(a, b);
}

/* ---- evaluation ---- */

typedef enum {
  V_ERR,
  V_NULL,
  V_BOOL,
  V_INT,
  V_STR,
  V_VER,
  V_QTY,
  V_DEVICE,
  V_ATTRS,     /* device.attributes */
  V_CAPS,      /* device.capacity */
  V_DOM_ATTRS, /* device.attributes[domain]: s is the domain */
  V_DOM_CAPS,
  V_LIST, /* a list literal: i is its node */
} vkind;

static const char *const kind_names[] = {
    "error", "null_type", "bool", "int", "string", "Semver", "Quantity", "kubernetes.DRADevice",
    "map",   "map",       "map",  "map", "list"};

typedef struct val {
  vkind k;
  bool b;
  int64_t i;
  const char *s;
  size_t slen;
  sch_semver ver;
  kc_quantity q;
} val;

typedef struct eval {
  const sch_cel *c;
  const sch_cel_device *dev;
  char *err;
  size_t errlen;
} eval;

static val verr(eval *ev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static val verr(eval *ev, const char *fmt, ...) {
  if (ev->err && ev->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev->err, ev->errlen, fmt, ap);
    va_end(ap);
  }
  return (val){.k = V_ERR};
}

static val vbool(bool b) {
  return (val){.k = V_BOOL, .b = b};
}
static val vint(int64_t i) {
  return (val){.k = V_INT, .i = i};
}

/* An attribute or capacity name split as Kubernetes does: "domain/id", or the driver's
 * domain for a bare "id". */
static void split_name(const char *name, const char *driver, const char **dom, size_t *domlen,
                       const char **id) {
  const char *slash = strchr(name, '/');
  if (slash) {
    *dom = name;
    *domlen = (size_t)(slash - name);
    *id = slash + 1;
  } else {
    *dom = driver ? driver : "";
    *domlen = strlen(*dom);
    *id = name;
  }
}

static bool name_is(const char *name, const char *driver, const char *dom, size_t domlen,
                    const char *id, size_t idlen) {
  const char *d, *i;
  size_t dl;
  split_name(name ? name : "", driver, &d, &dl, &i);
  if (dl != domlen || memcmp(d, dom, dl) != 0)
    return false;
  return id == NULL || (strlen(i) == idlen && memcmp(i, id, idlen) == 0);
}

static val attr_value(eval *ev, const sch_cel_attr *a) {
  switch (a->kind) {
  case SCH_CEL_ATTR_BOOL:
    return vbool(a->b);
  case SCH_CEL_ATTR_INT:
    return vint(a->i);
  case SCH_CEL_ATTR_STRING:
    return (val){.k = V_STR, .s = a->s ? a->s : "", .slen = a->s ? strlen(a->s) : 0};
  case SCH_CEL_ATTR_VERSION: {
    val v = {.k = V_VER};
    if (a->s && sch_semver_parse(a->s, strlen(a->s), &v.ver))
      return v;
    return verr(ev, "attribute %s: parse semantic version: %s", a->name ? a->name : "",
                a->s ? a->s : "");
  }
  }
  return verr(ev, "attribute %s: unsupported attribute value", a->name ? a->name : "");
}

/* m[key] for a domain map (V_DOM_ATTRS, V_DOM_CAPS): found tells whether the key exists
 * (for has() and in); a missing key is the error "no such key". */
static val dom_lookup(eval *ev, const val *m, const char *key, size_t keylen, bool *found) {
  const sch_cel_device *d = ev->dev;
  *found = true;
  if (m->k == V_DOM_ATTRS) {
    for (size_t i = 0; i < d->nattrs; i++)
      if (name_is(d->attrs[i].name, d->driver, m->s, m->slen, key, keylen))
        return attr_value(ev, &d->attrs[i]);
  } else {
    for (size_t i = 0; i < d->ncapacity; i++) {
      if (!name_is(d->capacity[i].name, d->driver, m->s, m->slen, key, keylen))
        continue;
      val v = {.k = V_QTY};
      const char *t = d->capacity[i].value ? d->capacity[i].value : "";
      if (kc_quantity_parse(t, &v.q, NULL) == 0)
        return v;
      return verr(ev, "capacity %.*s: not a quantity: %s", (int)keylen, key, t);
    }
  }
  *found = false;
  return verr(ev, "no such key: %.*s", (int)keylen, key);
}

static bool domain_present(const eval *ev, const val *m, const char *dom, size_t domlen) {
  const sch_cel_device *d = ev->dev;
  if (m->k == V_ATTRS) {
    for (size_t i = 0; i < d->nattrs; i++)
      if (name_is(d->attrs[i].name, d->driver, dom, domlen, NULL, 0))
        return true;
  } else {
    for (size_t i = 0; i < d->ncapacity; i++)
      if (name_is(d->capacity[i].name, d->driver, dom, domlen, NULL, 0))
        return true;
  }
  return false;
}

static val ev_node(eval *ev, int32_t n);

/* a.name, or has(a.name) when test. */
static val ev_select(eval *ev, const node *nd, bool test) {
  val a = ev_node(ev, nd->a);
  if (a.k == V_ERR)
    return a;
  if (a.k == V_DEVICE) {
    bool known = true;
    val r = {.k = V_ERR};
    if (strcmp(nd->s, "driver") == 0)
      r = (val){.k = V_STR, .s = ev->dev->driver ? ev->dev->driver : ""};
    else if (strcmp(nd->s, "attributes") == 0)
      r.k = V_ATTRS;
    else if (strcmp(nd->s, "capacity") == 0)
      r.k = V_CAPS;
    else
      known = false;
    if (test)
      return vbool(known);
    if (!known)
      return verr(ev, "no such key: %s", nd->s);
    r.slen = r.s ? strlen(r.s) : 0;
    return r;
  }
  if (a.k == V_DOM_ATTRS || a.k == V_DOM_CAPS) {
    bool found;
    val r = dom_lookup(ev, &a, nd->s, nd->slen, &found);
    return test ? (found ? vbool(true) : vbool(false)) : r;
  }
  if (a.k == V_ATTRS || a.k == V_CAPS) {
    if (test)
      return vbool(domain_present(ev, &a, nd->s, nd->slen));
    return (val){.k = a.k == V_ATTRS ? V_DOM_ATTRS : V_DOM_CAPS, .s = nd->s, .slen = nd->slen};
  }
  return verr(ev, "no such key: %s (on %s)", nd->s, kind_names[a.k]);
}

static val ev_index(eval *ev, const node *nd) {
  val a = ev_node(ev, nd->a);
  if (a.k == V_ERR)
    return a;
  val k = ev_node(ev, nd->b);
  if (k.k == V_ERR)
    return k;
  if ((a.k == V_ATTRS || a.k == V_CAPS) && k.k == V_STR)
    return (val){.k = a.k == V_ATTRS ? V_DOM_ATTRS : V_DOM_CAPS, .s = k.s, .slen = k.slen};
  if ((a.k == V_DOM_ATTRS || a.k == V_DOM_CAPS) && k.k == V_STR) {
    bool found;
    return dom_lookup(ev, &a, k.s, k.slen, &found);
  }
  return verr(ev, "no such overload: %s[%s]", kind_names[a.k], kind_names[k.k]);
}

/* -1, 0, 1, or 2 when the two cannot be ordered. */
static int order(const val *a, const val *b) {
  if (a->k != b->k)
    return 2;
  switch (a->k) {
  case V_BOOL:
    return (int)a->b - (int)b->b;
  case V_INT:
    return a->i < b->i ? -1 : a->i > b->i;
  case V_STR: {
    size_t n = a->slen < b->slen ? a->slen : b->slen;
    int c = memcmp(a->s, b->s, n);
    if (c)
      return c < 0 ? -1 : 1;
    return a->slen < b->slen ? -1 : a->slen > b->slen;
  }
  default:
    return 2;
  }
}

/* CEL's heterogeneous equality: values of different types are not equal. */
static val equal(eval *ev, const val *a, const val *b) {
  if (a->k != b->k)
    return vbool(false);
  switch (a->k) {
  case V_NULL:
    return vbool(true);
  case V_BOOL:
  case V_INT:
  case V_STR:
    return vbool(order(a, b) == 0);
  case V_VER:
    return vbool(sch_semver_cmp(&a->ver, &b->ver) == 0);
  case V_QTY:
    return vbool(kc_quantity_cmp(&a->q, &b->q) == 0);
  default:
    return verr(ev, "no such overload: %s == %s", kind_names[a->k], kind_names[b->k]);
  }
}

/* x in list, or key in map. */
static val member_of(eval *ev, const val *x, const val *l) {
  if (l->k == V_LIST) {
    bool err = false;
    for (int32_t e = ev->c->n[l->i].a; e >= 0; e = ev->c->n[e].next) {
      val v = ev_node(ev, e);
      val eq = v.k == V_ERR ? v : equal(ev, x, &v);
      if (eq.k == V_BOOL && eq.b)
        return eq;
      err |= eq.k == V_ERR;
    }
    return err ? (val){.k = V_ERR} : vbool(false);
  }
  if (x->k == V_STR && (l->k == V_DOM_ATTRS || l->k == V_DOM_CAPS)) {
    bool found;
    dom_lookup(ev, l, x->s, x->slen, &found);
    return vbool(found);
  }
  if (x->k == V_STR && (l->k == V_ATTRS || l->k == V_CAPS))
    return vbool(domain_present(ev, l, x->s, x->slen));
  return verr(ev, "no such overload: %s in %s", kind_names[x->k], kind_names[l->k]);
}

/* && and ||, commutative over errors: the side that decides wins even when the other
 * failed. */
static val logic(eval *ev, const node *nd) {
  bool is_and = nd->op == OP_AND;
  val a = ev_node(ev, nd->a);
  if (a.k == V_BOOL && a.b != is_and)
    return a;
  val b = ev_node(ev, nd->b);
  if (b.k == V_BOOL && b.b != is_and)
    return b;
  if (a.k == V_ERR)
    return a;
  if (b.k == V_ERR)
    return b;
  if (a.k != V_BOOL || b.k != V_BOOL)
    return verr(ev, "no such overload: %s %s %s", kind_names[a.k], is_and ? "&&" : "||",
                kind_names[b.k]);
  return vbool(is_and);
}

static val binary(eval *ev, const node *nd) {
  static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">=", "in"};
  if (nd->op == OP_AND || nd->op == OP_OR)
    return logic(ev, nd);
  val a = ev_node(ev, nd->a);
  if (a.k == V_ERR)
    return a;
  val b = ev_node(ev, nd->b);
  if (b.k == V_ERR)
    return b;
  if (nd->op == OP_IN)
    return member_of(ev, &a, &b);
  if (nd->op == OP_EQ || nd->op == OP_NE) {
    val r = equal(ev, &a, &b);
    if (r.k == V_BOOL && nd->op == OP_NE)
      r.b = !r.b;
    return r;
  }
  int c = order(&a, &b);
  if (c == 2)
    return verr(ev, "no such overload: %s %s %s", kind_names[a.k], ops[nd->op], kind_names[b.k]);
  switch (nd->op) {
  case OP_LT:
    return vbool(c < 0);
  case OP_LE:
    return vbool(c <= 0);
  case OP_GT:
    return vbool(c > 0);
  default:
    return vbool(c >= 0);
  }
}

/* size(): code points of a string, entries of a list or map. */
static val size_of(eval *ev, const val *a) {
  int64_t n = 0;
  if (a->k == V_STR) {
    for (size_t i = 0; i < a->slen; i++)
      n += ((unsigned char)a->s[i] & 0xC0) != 0x80;
  } else if (a->k == V_LIST) {
    for (int32_t e = ev->c->n[a->i].a; e >= 0; e = ev->c->n[e].next)
      n++;
  } else if (a->k == V_DOM_ATTRS || a->k == V_DOM_CAPS) {
    const sch_cel_device *d = ev->dev;
    bool attrs = a->k == V_DOM_ATTRS;
    size_t m = attrs ? d->nattrs : d->ncapacity;
    for (size_t i = 0; i < m; i++)
      n += name_is(attrs ? d->attrs[i].name : d->capacity[i].name, d->driver, a->s, a->slen, NULL,
                   0);
  } else {
    return verr(ev, "no such overload: size(%s)", kind_names[a->k]);
  }
  return vint(n);
}

/* semver(s), isSemver(s), quantity(s), isQuantity(s). */
static val parse_fn(eval *ev, int fn, const val *a) {
  if (a->k != V_STR)
    return verr(ev, "no such overload: %s(%s)", fns[fn].name, kind_names[a->k]);
  val r = {.k = fn == FN_SEMVER || fn == FN_IS_SEMVER ? V_VER : V_QTY};
  bool ok = r.k == V_VER ? sch_semver_parse(a->s, a->slen, &r.ver)
                         : kc_quantity_parsen(a->s, a->slen, &r.q, NULL) == 0;
  if (fn == FN_IS_SEMVER || fn == FN_IS_QUANTITY)
    return vbool(ok);
  if (!ok)
    return verr(ev, "%s: could not parse '%.*s'", fns[fn].name, (int)a->slen, a->s);
  return r;
}

/* compareTo, isGreaterThan, isLessThan on two versions or two quantities. */
static val compare_fn(eval *ev, int fn, const val *t, const val *a) {
  int c;
  if (t->k == V_VER && a->k == V_VER)
    c = sch_semver_cmp(&t->ver, &a->ver);
  else if (t->k == V_QTY && a->k == V_QTY)
    c = kc_quantity_cmp(&t->q, &a->q);
  else
    return verr(ev, "no such overload: %s.%s(%s)", kind_names[t->k], fns[fn].name,
                kind_names[a->k]);
  if (fn == FN_COMPARE_TO)
    return vint(c);
  return vbool(fn == FN_IS_GREATER ? c > 0 : c < 0);
}

/* Methods without arguments: major, minor, patch, asInteger, isInteger, size. */
static val nullary(eval *ev, int fn, const val *t) {
  if (t->k == V_VER && (fn == FN_MAJOR || fn == FN_MINOR || fn == FN_PATCH)) {
    uint64_t v = fn == FN_MAJOR ? t->ver.major : fn == FN_MINOR ? t->ver.minor : t->ver.patch;
    return v > INT64_MAX ? verr(ev, "integer overflow") : vint((int64_t)v);
  }
  if (t->k == V_QTY && (fn == FN_AS_INTEGER || fn == FN_IS_INTEGER)) {
    const __int128 giga = 1000000000;
    bool whole =
        t->q.nano % giga == 0 && t->q.nano / giga <= INT64_MAX && t->q.nano / giga >= INT64_MIN;
    if (fn == FN_IS_INTEGER)
      return vbool(whole);
    return whole ? vint((int64_t)(t->q.nano / giga))
                 : verr(ev, "cannot convert value to integer: overflow or fraction");
  }
  if (fn == FN_SIZE_M)
    return size_of(ev, t);
  return verr(ev, "no such overload: %s.%s()", kind_names[t->k], fns[fn].name);
}

static val string_fn(eval *ev, int fn, const val *t, const val *a) {
  if (t->k != V_STR || a->k != V_STR)
    return verr(ev, "no such overload: %s.%s(%s)", kind_names[t->k], fns[fn].name,
                kind_names[a->k]);
  if (a->slen > t->slen)
    return vbool(false);
  if (fn == FN_STARTS_WITH)
    return vbool(memcmp(t->s, a->s, a->slen) == 0);
  if (fn == FN_ENDS_WITH)
    return vbool(memcmp(t->s + t->slen - a->slen, a->s, a->slen) == 0);
  for (size_t i = 0; i + a->slen <= t->slen; i++)
    if (memcmp(t->s + i, a->s, a->slen) == 0)
      return vbool(true);
  return vbool(false);
}

static val ev_call(eval *ev, const node *nd) {
  int fn = nd->op;
  if (fn == FN_HAS)
    return ev_select(ev, &ev->c->n[nd->a], true);
  val t = {.k = V_NULL};
  if (nd->c >= 0 && (t = ev_node(ev, nd->c)).k == V_ERR)
    return t;
  val a = {.k = V_NULL};
  if (nd->a >= 0 && (a = ev_node(ev, nd->a)).k == V_ERR)
    return a;
  switch (fn) {
  case FN_SEMVER:
  case FN_IS_SEMVER:
  case FN_QUANTITY:
  case FN_IS_QUANTITY:
    return parse_fn(ev, fn, &a);
  case FN_SIZE:
    return size_of(ev, &a);
  case FN_COMPARE_TO:
  case FN_IS_GREATER:
  case FN_IS_LESS:
    return compare_fn(ev, fn, &t, &a);
  case FN_STARTS_WITH:
  case FN_ENDS_WITH:
  case FN_CONTAINS:
    return string_fn(ev, fn, &t, &a);
  default:
    return nullary(ev, fn, &t);
  }
}

static val ev_node(eval *ev, int32_t n) {
  const node *nd = &ev->c->n[n];
  switch (nd->kind) {
  case N_NULL:
    return (val){.k = V_NULL};
  case N_BOOL:
    return vbool(nd->i != 0);
  case N_INT:
    return vint(nd->i);
  case N_STR:
    return (val){.k = V_STR, .s = nd->s, .slen = nd->slen};
  case N_DEVICE:
    return (val){.k = V_DEVICE};
  case N_SELECT:
    return ev_select(ev, nd, false);
  case N_INDEX:
    return ev_index(ev, nd);
  case N_CALL:
    return ev_call(ev, nd);
  case N_LIST:
    return (val){.k = V_LIST, .i = n};
  case N_NOT: {
    val a = ev_node(ev, nd->a);
    if (a.k == V_BOOL)
      a.b = !a.b;
    return a.k == V_BOOL || a.k == V_ERR ? a : verr(ev, "no such overload: !%s", kind_names[a.k]);
  }
  case N_NEG: {
    val a = ev_node(ev, nd->a);
    if (a.k == V_INT && a.i != INT64_MIN)
      return vint(-a.i);
    return a.k == V_ERR ? a : verr(ev, "no such overload: -%s", kind_names[a.k]);
  }
  case N_BINARY:
    return binary(ev, nd);
  case N_COND: {
    val a = ev_node(ev, nd->a);
    if (a.k != V_BOOL)
      return a.k == V_ERR ? a : verr(ev, "no such overload: %s ? _ : _", kind_names[a.k]);
    return ev_node(ev, a.b ? nd->b : nd->c);
  }
  }
  return verr(ev, "internal error: node %d", (int)nd->kind);
}

int sch_cel_eval(const sch_cel *c, const sch_cel_device *dev, bool *match, char *err,
                 size_t errlen) {
  *match = false;
  if (err && errlen)
    err[0] = '\0';
  static const sch_cel_device none = {0};
  eval ev = {.c = c, .dev = dev ? dev : &none, .err = err, .errlen = errlen};
  val r = ev_node(&ev, c->root);
  if (r.k == V_BOOL) {
    *match = r.b;
    return 0;
  }
  if (r.k != V_ERR)
    verr(&ev, "CEL result of type %s could not be converted to bool", kind_names[r.k]);
  else if (err && errlen && err[0] == '\0')
    verr(&ev, "evaluation failed");
  return KC_EINVAL;
}
