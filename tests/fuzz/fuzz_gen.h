/* What the structured fuzz targets of the two cores share (fuzz_jobsync.c, fuzz_session.c):
 * a reader that turns the input bytes into choices (0 once the input is used up, so a
 * short input is a small, plain case), and an arena for the objects a generator builds, reset
 * per input, so that building costs no malloc and freeing nothing. */
#ifndef FUZZ_GEN_H
#define FUZZ_GEN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const uint8_t *d;
  size_t n, i;
} fz_rd;

static inline uint8_t fz_u8(fz_rd *r) {
  return r->i < r->n ? r->d[r->i++] : 0;
}

static inline uint32_t fz_u32(fz_rd *r) {
  uint32_t v = 0;
  for (int k = 0; k < 4; k++)
    v = (v << 8) | fz_u8(r);
  return v;
}

/* A choice among n (n > 0). */
static inline size_t fz_pick(fz_rd *r, size_t n) {
  return fz_u8(r) % n;
}

static inline int fz_bit(fz_rd *r) {
  return fz_u8(r) & 1;
}

#define FZ_PICK(r, table) ((table)[fz_pick((r), sizeof(table) / sizeof((table)[0]))])

/* A count or size a user writes: mostly small, sometimes one of the extremes. */
static inline int32_t fz_i32(fz_rd *r) {
  static const int32_t big[] = {0, 1000, 1001, 65536, INT32_MAX - 1, INT32_MAX};
  uint8_t b = fz_u8(r);
  return b < 248 ? (int32_t)(b % 8) : big[b % (sizeof(big) / sizeof(big[0]))];
}

/* A count that sizes the work of one input (a task's replicas): like fz_i32, but an extreme
 * only once in 256. An extreme makes the job core build its full burst (1,000 pods, ~50 ms
 * under the sanitizers), so at fz_i32's one in 32 per task those inputs took most of the time
 * and the target ran at ~200 inputs/s; they are still met every few hundred inputs. */
static inline int32_t fz_count(fz_rd *r) {
  static const int32_t big[] = {1000, 1001, 65536, INT32_MAX};
  uint8_t b = fz_u8(r);
  return b < 255 ? (int32_t)(b % 8) : big[fz_u8(r) % (sizeof(big) / sizeof(big[0]))];
}

#define FZ_ARENA (4u << 20)

typedef struct {
  _Alignas(16) unsigned char mem[FZ_ARENA];
  size_t used;
} fz_arena;

/* Zeroed memory for this input; aborts when an input would need more than the arena (the
 * generators bound their counts well below). */
static inline void *fz_alloc(fz_arena *a, size_t n) {
  size_t at = (a->used + 15) & ~(size_t)15;
  if (n > FZ_ARENA - at)
    abort();
  a->used = at + n;
  memset(a->mem + at, 0, n);
  return a->mem + at;
}

static inline char *fz_str(fz_arena *a, const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *c = fz_alloc(a, n);
  memcpy(c, s, n);
  return c;
}

__attribute__((format(printf, 2, 3))) static inline char *fz_fmt(fz_arena *a, const char *f, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, f);
  int n = vsnprintf(buf, sizeof(buf), f, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof(buf))
    abort();
  return fz_str(a, buf);
}

#endif
