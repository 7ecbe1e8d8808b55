/* Allocation failure injection for one test binary, linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc: every direct call from Kiln's own code
 * goes through these (libc, jansson and protobuf-c allocate through their own references
 * and are not affected). failalloc_after(k) lets k allocations succeed and refuses the
 * next one only, so that a caller which ignores the failure cannot hide it behind a later
 * one that it does check. Include from exactly one file of the binary. */
#ifndef FAILALLOC_H
#define FAILALLOC_H
#include <stdbool.h>
#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

static long failalloc_left = -1; /* -1: off */
static long failalloc_failed;    /* allocations refused since failalloc_after(): 0 or 1 */

static inline void failalloc_after(long k) {
  failalloc_left = k;
  failalloc_failed = 0;
}

static inline void failalloc_off(void) {
  failalloc_left = -1;
}

static inline bool failalloc_refuse(void) {
  if (failalloc_left < 0)
    return false;
  if (failalloc_left == 0) {
    failalloc_failed++;
    failalloc_left = -1;
    return true;
  }
  failalloc_left--;
  return false;
}

void *__wrap_malloc(size_t n) {
  return failalloc_refuse() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m) {
  return failalloc_refuse() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n) {
  return failalloc_refuse() ? NULL : __real_realloc(p, n);
}
#endif
