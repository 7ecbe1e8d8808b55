/* Fuzz target for the quantity parser: anything must be rejected cleanly or parse to a
 * value whose canonical form parses back to the same value and, written once more, is a
 * fixed point. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kc_quantity q, r;
  size_t off = 0;
  int rc = kc_quantity_parsen((const char *)data, size, &q, &off);
  if (rc < 0) {
    if (rc != KC_EPARSE && rc != KC_ERANGE && rc != KC_ETOOBIG)
      abort();
    if (off > size)
      abort();
    return 0;
  }
  char buf[KC_QUANTITY_STR_MAX], buf2[KC_QUANTITY_STR_MAX];
  int n = kc_quantity_format(&q, buf, sizeof(buf));
  if (n <= 0 || (size_t)n != strlen(buf))
    abort();
  if (kc_quantity_parse(buf, &r, NULL) != 0 || kc_quantity_cmp(&q, &r) != 0)
    abort();
  /* The canonical form may change once, as Kubernetes' does: a binary 62.5Ki is written
   * "64000", which reads back as a decimal quantity and is written "64k". From then on it
   * is a fixed point. */
  kc_quantity r2;
  char buf3[KC_QUANTITY_STR_MAX];
  int n2 = kc_quantity_format(&r, buf2, sizeof(buf2));
  if (n2 <= 0 || kc_quantity_parse(buf2, &r2, NULL) != 0 || kc_quantity_cmp(&q, &r2) != 0)
    abort();
  if (kc_quantity_format(&r2, buf3, sizeof(buf3)) != n2 || strcmp(buf2, buf3) != 0)
    abort();
  /* Value() and MilliValue() round away from zero and agree with each other. */
  int64_t v = kc_quantity_value(&q), m = kc_quantity_milli(&q);
  if ((v > 0) != (m > 0) || (v < 0) != (m < 0))
    abort();
  /* m / 1000 rounded away from zero, without m + 999 overflowing next to INT64_MAX. */
  int64_t away = m / 1000 + (m % 1000 > 0) - (m % 1000 < 0);
  if (m != INT64_MAX && m != INT64_MIN && away != v)
    abort();
  return 0;
}
