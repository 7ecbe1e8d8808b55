/* Exact Kubernetes quantities; see kc_quantity.h for the accepted language and the few
 * deliberate differences from apimachinery. The parser keeps every digit in a small
 * decimal array so that binary suffixes with long fractions ("0.000000000001Ki" = 2n)
 * round exactly like Kubernetes' arbitrary-precision path, without any floating point. */
#include "kc_quantity.h"

#include <string.h>

#include "kc_error.h"

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

#define NANO       1000000000LL
/* Largest accepted magnitude in nano-units: the bound sums saturate at, so that every sum
 * Kiln writes (a PodGroup's minResources) parses back. */
#define NANO_LIMIT KC_QUANTITY_NANO_MAX
/* Kubernetes caps a BinarySI value at 2^63-1 units ("9Ei" reads as 9223372036854775807). */
#define BINARY_CAP ((i128)INT64_MAX * NANO)
/* Digit array: every input digit plus the growth of a multiplication by 2^60. */
#define DIGITS_MAX (KC_QUANTITY_MAX_LEN + 24)

struct suffix {
  const char *text;
  int base; /* 10 or 2 */
  int exp;
};

static const struct suffix suffixes[] = {
    {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},  {"M", 10, 6},
    {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18}, {"Ki", 2, 10},
    {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
};

static bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* Interprets the suffix s[0..len). Sets base, exp and fmt; returns 0, KC_EPARSE with
 * *bad = offset of the offending byte within the suffix, or KC_ERANGE for an exponent
 * outside int32 (Kubernetes rejects those rather than truncating them). */
static int parse_suffix(const char *s, size_t len, int *base, int64_t *exp, kc_qformat *fmt,
                        size_t *bad) {
  *bad = 0;
  if (len == 0) {
    *base = 10;
    *exp = 0;
    *fmt = KC_QFMT_DECIMAL_SI;
    return 0;
  }
  for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
    size_t n = strlen(suffixes[i].text);
    if (n == len && memcmp(s, suffixes[i].text, n) == 0) {
      *base = suffixes[i].base;
      *exp = suffixes[i].exp;
      *fmt = suffixes[i].base == 2 ? KC_QFMT_BINARY_SI : KC_QFMT_DECIMAL_SI;
      return 0;
    }
  }
  if ((s[0] != 'e' && s[0] != 'E') || len < 2)
    return KC_EPARSE;
  size_t i = 1;
  bool neg = false;
  if (s[i] == '+' || s[i] == '-') {
    neg = s[i] == '-';
    i++;
  }
  if (i == len) {
    *bad = i;
    return KC_EPARSE;
  }
  int64_t v = 0;
  bool big = false;
  for (; i < len; i++) {
    if (!is_digit(s[i])) {
      *bad = i;
      return KC_EPARSE;
    }
    if (v <= INT32_MAX)
      v = v * 10 + (s[i] - '0');
    if (v > INT32_MAX)
      big = true;
  }
  if (big)
    return KC_ERANGE;
  *base = 10;
  *exp = neg ? -v : v;
  *fmt = KC_QFMT_DECIMAL_EXP;
  return 0;
}

/* d[] holds little-endian decimal digits; multiplies in place by m (m <= 2^10). */
static size_t digits_mul(unsigned char *d, size_t n, unsigned m) {
  unsigned carry = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned v = d[i] * m + carry;
    d[i] = (unsigned char)(v % 10);
    carry = v / 10;
  }
  while (carry && n < DIGITS_MAX) {
    d[n++] = (unsigned char)(carry % 10);
    carry /= 10;
  }
  return n;
}

/* The sign and digits of s[0..len) from *pos: the significant digits go to big[] (most
 * significant first, leading zeros dropped), their count to *nd and the count of those after
 * the point to *ndenom. False when there is no digit at all. */
static bool scan_digits(const char *s, size_t len, size_t *pos, unsigned char *big, size_t *nd,
                        size_t *ndenom, bool *neg) {
  bool any = false;
  *nd = *ndenom = 0;
  *neg = false;
  if (s[*pos] == '+' || s[*pos] == '-') {
    *neg = s[*pos] == '-';
    (*pos)++;
  }
  for (; *pos < len && is_digit(s[*pos]); (*pos)++) {
    any = true;
    if (*nd > 0 || s[*pos] != '0')
      big[(*nd)++] = (unsigned char)(s[*pos] - '0');
  }
  if (*pos < len && s[*pos] == '.') {
    (*pos)++;
    for (; *pos < len && is_digit(s[*pos]); (*pos)++) {
      any = true;
      (*ndenom)++;
      if (*nd > 0 || s[*pos] != '0')
        big[(*nd)++] = (unsigned char)(s[*pos] - '0');
    }
  }
  return any;
}

/* The magnitude D * 10^shift in nano-units, D the little-endian digits d[0..nd), rounded up
 * when digits below a nano-unit are dropped. 0, or KC_ERANGE past NANO_LIMIT. */
static int to_nanos(const unsigned char *d, size_t nd, int64_t shift, i128 *out) {
  i128 nano = 0;
  bool sticky = false;
  size_t lo = 0; /* first kept digit */
  *out = 0;
  if (nd == 0)
    return 0;
  if (shift < 0) {
    uint64_t drop = (uint64_t)(-shift);
    lo = drop >= nd ? nd : (size_t)drop;
    for (size_t i = 0; i < lo; i++)
      sticky |= d[i] != 0;
    shift = 0;
  }
  size_t kept = nd - lo;
  /* A kept number with 40 or more digits is at least 10^39 > NANO_LIMIT; below that the
   * arithmetic is checked digit by digit. */
  if (kept > 0 && (int64_t)kept - 1 + shift >= 39)
    return KC_ERANGE;
  bool over = false;
  for (size_t i = nd; i > lo && !over; i--)
    over = __builtin_mul_overflow(nano, 10, &nano) || __builtin_add_overflow(nano, d[i - 1], &nano);
  for (int64_t i = 0; i < shift && !over; i++)
    over = __builtin_mul_overflow(nano, 10, &nano);
  /* round the magnitude up to the next nano-unit */
  if (!over)
    over = __builtin_add_overflow(nano, (int)sticky, &nano);
  if (over || nano > NANO_LIMIT)
    return KC_ERANGE;
  *out = nano;
  return 0;
}

int kc_quantity_parsen(const char *s, size_t len, kc_quantity *q, size_t *err_offset) {
  size_t dummy;
  if (!err_offset)
    err_offset = &dummy;
  *err_offset = 0;
  if (!s || !q)
    return KC_EINVAL;
  if (len == 0)
    return KC_EPARSE;
  if (len > KC_QUANTITY_MAX_LEN) {
    *err_offset = KC_QUANTITY_MAX_LEN;
    return KC_ETOOBIG;
  }

  unsigned char big[DIGITS_MAX]; /* significant digits, most significant first */
  size_t nd, ndenom, pos = 0;
  bool neg;
  if (!scan_digits(s, len, &pos, big, &nd, &ndenom, &neg)) {
    *err_offset = pos;
    return KC_EPARSE;
  }

  int base;
  int64_t exp;
  kc_qformat fmt;
  size_t bad;
  int rc = parse_suffix(s + pos, len - pos, &base, &exp, &fmt, &bad);
  if (rc < 0) {
    *err_offset = pos + bad;
    return rc;
  }

  /* Little-endian copy for the arithmetic. */
  unsigned char d[DIGITS_MAX];
  for (size_t i = 0; i < nd; i++)
    d[i] = big[nd - 1 - i];
  if (base == 2)
    for (int64_t k = exp; k > 0; k -= 10)
      nd = digits_mul(d, nd, 1u << (k >= 10 ? 10 : k));
  int64_t shift = (base == 10 ? exp : 0) - (int64_t)ndenom + 9; /* nanos = D * 10^shift */

  i128 nano;
  rc = to_nanos(d, nd, shift, &nano);
  if (fmt == KC_QFMT_BINARY_SI && (rc == KC_ERANGE || nano > BINARY_CAP))
    rc = 0, nano = BINARY_CAP;
  if (rc < 0)
    return rc; /* *err_offset stays 0: the whole quantity is out of range */
  /* Kubernetes shows a binary quantity below one unit in decimal form. */
  if (fmt == KC_QFMT_BINARY_SI && nano > 0 && nano < NANO)
    fmt = KC_QFMT_DECIMAL_SI;
  q->nano = neg ? -nano : nano;
  q->format = fmt;
  return 0;
}

int kc_quantity_parse(const char *s, kc_quantity *q, size_t *err_offset) {
  if (!s) {
    if (err_offset)
      *err_offset = 0;
    return KC_EINVAL;
  }
  size_t len = strnlen(s, KC_QUANTITY_MAX_LEN + 1);
  return kc_quantity_parsen(s, len, q, err_offset);
}

/* |v| / div rounded away from zero, with the sign of v, saturated to int64. */
static int64_t scaled(i128 v, int64_t div) {
  bool neg = v < 0;
  u128 m = neg ? (u128)(-v) : (u128)v;
  u128 r = m / (u128)div + (m % (u128)div != 0);
  if (r > (u128)INT64_MAX)
    return neg ? INT64_MIN : INT64_MAX;
  return neg ? -(int64_t)r : (int64_t)r;
}

int64_t kc_quantity_milli(const kc_quantity *q) {
  return scaled(q->nano, 1000000);
}

int64_t kc_quantity_value(const kc_quantity *q) {
  return scaled(q->nano, NANO);
}

void kc_quantity_from_milli(kc_quantity *q, int64_t milli, kc_qformat fmt) {
  q->nano = (i128)milli * 1000000;
  q->format = fmt;
}

void kc_quantity_from_value(kc_quantity *q, int64_t value, kc_qformat fmt) {
  q->nano = (i128)value * NANO;
  q->format = fmt;
}

static i128 clamp(i128 v) {
  return v < -KC_QUANTITY_NANO_MAX ? -KC_QUANTITY_NANO_MAX : v;
}

void kc_quantity_add(kc_quantity *sum, const kc_quantity *q) {
  i128 r;
  if (sum->nano == 0)
    sum->format = q->format;
  if (__builtin_add_overflow(sum->nano, q->nano, &r))
    r = q->nano < 0 ? -KC_QUANTITY_NANO_MAX : KC_QUANTITY_NANO_MAX;
  sum->nano = clamp(r);
}

void kc_quantity_mul(kc_quantity *q, int64_t k) {
  i128 r;
  if (__builtin_mul_overflow(q->nano, (i128)k, &r))
    r = (q->nano < 0) != (k < 0) ? -KC_QUANTITY_NANO_MAX : KC_QUANTITY_NANO_MAX;
  q->nano = clamp(r);
}

int kc_quantity_cmp(const kc_quantity *a, const kc_quantity *b) {
  return (a->nano > b->nano) - (a->nano < b->nano);
}

/* Appends the decimal digits of m to buf at *n; false when it does not fit. */
static bool put_u128(char *buf, size_t len, size_t *n, u128 m) {
  char tmp[40];
  size_t k = 0;
  do {
    tmp[k++] = (char)('0' + (int)(m % 10));
    m /= 10;
  } while (m);
  if (*n + k >= len)
    return false;
  while (k)
    buf[(*n)++] = tmp[--k];
  return true;
}

static bool put_str(char *buf, size_t len, size_t *n, const char *s) {
  size_t k = strlen(s);
  if (*n + k >= len)
    return false;
  memcpy(buf + *n, s, k);
  *n += k;
  return true;
}

int kc_quantity_format(const kc_quantity *q, char *buf, size_t len) {
  size_t n = 0;
  if (!buf || len == 0)
    return KC_ERANGE;
  buf[0] = '\0';
  if (q->nano == 0) {
    if (!put_str(buf, len, &n, "0"))
      return KC_ERANGE;
    buf[n] = '\0';
    return (int)n;
  }
  bool neg = q->nano < 0;
  u128 m = neg ? -(u128)q->nano : (u128)q->nano;
  if (neg && !put_str(buf, len, &n, "-"))
    return KC_ERANGE;

  kc_qformat fmt = q->format;
  /* BinarySI only when it is exact in whole units and at least 1Ki; otherwise Kubernetes
   * falls back to DecimalSI rather than round. */
  if (fmt == KC_QFMT_BINARY_SI && (m < (u128)1024 * NANO || m % NANO != 0))
    fmt = KC_QFMT_DECIMAL_SI;

  if (fmt == KC_QFMT_BINARY_SI) {
    static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    u128 u = m / NANO;
    int e = 0;
    while (e < 6 && u % 1024 == 0) {
      u /= 1024;
      e++;
    }
    if (!put_u128(buf, len, &n, u) || !put_str(buf, len, &n, bin[e]))
      return KC_ERANGE;
    buf[n] = '\0';
    return (int)n;
  }

  /* Decimal: strip factors of ten into the exponent, then lower the exponent to a
   * multiple of three so that an SI suffix (or a short e-exponent) names it. */
  int e = -9;
  while (m % 10 == 0) {
    m /= 10;
    e++;
  }
  while (e % 3 != 0) {
    m *= 10;
    e--;
  }
  if (!put_u128(buf, len, &n, m))
    return KC_ERANGE;
  /* e is at least -9 (a nano-unit) and at most 30 (2^127 nano-units). DecimalSI has
   * suffixes up to E (10^18); past it Kubernetes writes an e-exponent, and so do we. */
  static const char *const dec[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
  if (fmt == KC_QFMT_DECIMAL_SI && e <= 18) {
    if (!put_str(buf, len, &n, dec[(e + 9) / 3]))
      return KC_ERANGE;
  } else if (e != 0) {
    if (!put_str(buf, len, &n, e < 0 ? "e-" : "e") ||
        !put_u128(buf, len, &n, (u128)(e < 0 ? -e : e)))
      return KC_ERANGE;
  }
  buf[n] = '\0';
  return (int)n;
}
