/* Fuzz target for the lean decode (kc_json_lean.h): on any input, with and without
 * JSON_ALLOW_NUL, kc_json_lean_loadb must fail exactly when json_loadb fails (with a reason and
 * a byte offset inside the input) and otherwise build json_loadb's tree without
 * metadata.managedFields. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_json_lean.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *s, size_t size, size_t flags) {
  json_error_t je, le;
  json_t *ref = json_loadb(s, size, flags, &je);
  kc_json_drop_managed_fields(ref);
  json_t *lean = kc_json_lean_loadb(s, size, flags, &le);
  if ((ref == NULL) != (lean == NULL))
    abort();
  if (ref && !json_equal(ref, lean))
    abort();
  if (!lean && (le.text[0] == '\0' || le.position < 0 || (size_t)le.position > size))
    abort();
  json_decref(ref);
  json_decref(lean);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check((const char *)data, size, 0);
  check((const char *)data, size, JSON_ALLOW_NUL);
  return 0;
}
