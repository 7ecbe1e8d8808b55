/* Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource) in exact
 * fixed-point arithmetic.
 *
 * A quantity is held as a signed count of nano-units (10^-9) in 128 bits, which is exact
 * for every value Kubernetes can express at nano precision up to KC_QUANTITY_NANO_MAX
 * (2^127-1 nano-units, about 1.7e29 units). Parsing
 * follows ParseQuantity: an optional sign, digits with an optional fraction ("1.", ".5",
 * "1.G" are valid), then one suffix: binary Ki Mi Gi Ti Pi Ei, decimal n u m "" k M G T P E,
 * or a decimal exponent e<int>/E<int>. Digits below one nano-unit round the magnitude up
 * (away from zero), as Kubernetes does ("0.1n" -> "1n").
 *
 * Where Kiln differs from Kubernetes, on purpose:
 *  - values whose magnitude exceeds KC_QUANTITY_NANO_MAX are rejected (KC_ERANGE);
 *    Kubernetes keeps them in arbitrary precision. Like Kubernetes, a BinarySI value above
 *    2^63-1 units is capped there ("9Ei" -> "9223372036854775807");
 *  - a number must contain at least one digit ("-" and "." are rejected, Kubernetes reads 0);
 *  - strings longer than KC_QUANTITY_MAX_LEN are rejected (KC_ETOOBIG).
 * The API server canonicalises every quantity it stores, so these cases never come from it. */
#ifndef KC_QUANTITY_H
#define KC_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kc_error.h"

#define KC_QUANTITY_MAX_LEN 256
/* Longest canonical string, with its NUL: sign, 39 digits (a saturated sum), 1-character
 * suffix; an e-exponent only follows a much shorter mantissa. */
#define KC_QUANTITY_STR_MAX 48

/* The suffix family a quantity was written in; it decides its canonical form. */
typedef enum {
  KC_QFMT_DECIMAL_SI = 0, /* 12M, 100m, 5 */
  KC_QFMT_BINARY_SI,      /* 12Mi */
  KC_QFMT_DECIMAL_EXP,    /* 12e6 */
} kc_qformat;

typedef struct {
  __extension__ __int128 nano; /* value * 10^9, exact */
  kc_qformat format;
} kc_quantity;

/* Parses s (NUL-terminated). Returns 0, KC_EPARSE (bad syntax or unknown suffix),
 * KC_ERANGE (magnitude over KC_QUANTITY_NANO_MAX, or an exponent outside int32) or
 * KC_ETOOBIG.
 * On error *q is left unchanged and, when err_offset is not NULL, *err_offset is the byte
 * offset of the first character that could not be accepted. */
KC_NODISCARD int kc_quantity_parse(const char *s, kc_quantity *q, size_t *err_offset);

/* Like kc_quantity_parse for a string of len bytes that need not be NUL-terminated
 * (an embedded NUL is a parse error). */
KC_NODISCARD int kc_quantity_parsen(const char *s, size_t len, kc_quantity *q, size_t *err_offset);

/* The value in milli-units, rounded away from zero (Quantity.MilliValue); saturates at
 * INT64_MAX/INT64_MIN, which values above 2^63/1000 units reach. */
int64_t kc_quantity_milli(const kc_quantity *q);

/* The value in units, rounded away from zero (Quantity.Value: "1500m" -> 2); saturates at
 * INT64_MAX/INT64_MIN. */
int64_t kc_quantity_value(const kc_quantity *q);

/* Builders for quantities the processes write: from milli-units (cpu) with DecimalSI
 * format, or from units with the given format (BinarySI for memory). */
void kc_quantity_from_milli(kc_quantity *q, int64_t milli, kc_qformat fmt);
void kc_quantity_from_value(kc_quantity *q, int64_t value, kc_qformat fmt);

/* Sums and products saturate at +-KC_QUANTITY_NANO_MAX nano-units (2^127-1, about 1.7e29
 * units): exact far past anything one parsed value (at most 2^63-1 units) times an int32
 * count can reach, and never undefined. */
#define KC_QUANTITY_NANO_MAX (__extension__((__int128)(~(unsigned __int128)0 >> 1)))

/* *sum += *q, saturating. A zero sum takes q's format (Quantity.Add). */
void kc_quantity_add(kc_quantity *sum, const kc_quantity *q);

/* *q *= k, saturating; the format is kept (Quantity.Mul). */
void kc_quantity_mul(kc_quantity *q, int64_t k);

/* -1, 0 or 1 as a < b, a == b, a > b (formats are ignored). */
int kc_quantity_cmp(const kc_quantity *a, const kc_quantity *b);

/* Writes the canonical form the API server would store ("1000m" -> "1", "1024Mi" -> "1Gi",
 * "1.5Gi" -> "1536Mi", "0.5Ki" -> "512") into buf, NUL-terminated. Like Kubernetes, a
 * DecimalSI value whose exponent is past "E" (10^18) is written with an e-exponent
 * ("1000E" -> "1e21"), so every value in range formats as a valid quantity. Returns the string
 * length, or KC_ERANGE when len is too small (KC_QUANTITY_STR_MAX always suffices). */
int kc_quantity_format(const kc_quantity *q, char *buf, size_t len);

#endif
