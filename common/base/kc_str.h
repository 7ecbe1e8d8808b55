/* String predicates for the cores and the shells. */
#ifndef KC_STR_H
#define KC_STR_H

#include <stdbool.h>
#include <string.h>

/* Whether a and b hold the same text, NULL reading as "": protobuf-c and jansson both give
 * NULL for a string that is absent, and Kubernetes treats absent and empty alike. */
static inline bool kc_str_eq(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

#endif
