/* A byte stream cut into frames: see kc_frames.h. */
#include "kc_frames.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kc_frames_init(kc_frames *f, kc_frames_rule rule, size_t max_frame) {
  memset(f, 0, sizeof(*f));
  f->rule = rule;
  f->max_frame = max_frame;
}

void kc_frames_close(kc_frames *f) {
  free(f->buf);
  f->buf = NULL;
  f->len = f->cap = 0;
}

void kc_frames_reset(kc_frames *f) {
  f->len = 0;
  f->offset = 0;
  f->frames = 0;
}

/* The bytes around a body: the newline after it, or the length before it. */
static size_t framing(const kc_frames *f) {
  return f->rule == KC_FRAMES_LINES ? 1 : 4;
}

/* The caller has checked that the frame fits: the buffer stops at one whole frame. */
static int append(kc_frames *f, const uint8_t *d, size_t n) {
  size_t need = f->len + n;
  if (need > f->cap) {
    size_t cap = f->cap ? f->cap : 4096;
    while (cap < need)
      cap *= 2;
    if (cap > f->max_frame + framing(f))
      cap = f->max_frame + framing(f);
    uint8_t *b = realloc(f->buf, cap);
    if (!b)
      return KC_ENOMEM;
    f->buf = b;
    f->cap = cap;
  }
  memcpy(f->buf + f->len, d, n);
  f->len += n;
  return 0;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* How many of the chunk's n bytes belong to the current frame (*take), and the frame's whole
 * length when they complete it (*whole, else 0). KC_ETOOBIG when the frame is too long, known
 * as soon as its length is: a prefix split between chunks is read across the two. */
static int boundary(const kc_frames *f, const uint8_t *d, size_t n, size_t *take, size_t *whole) {
  *whole = 0;
  if (f->rule == KC_FRAMES_LINES) {
    const uint8_t *nl = memchr(d, '\n', n);
    size_t seg = nl ? (size_t)(nl - d) : n;
    if (f->len + seg > f->max_frame)
      return KC_ETOOBIG;
    *take = nl ? seg + 1 : seg;
    *whole = nl ? f->len + seg + 1 : 0;
    return 0;
  }
  if (f->len + n < 4) {
    *take = n;
    return 0;
  }
  uint8_t head[4];
  const uint8_t *h = f->len >= 4 ? f->buf : d;
  if (f->len > 0 && f->len < 4) {
    memcpy(head, f->buf, f->len);
    memcpy(head + f->len, d, 4 - f->len);
    h = head;
  }
  uint32_t body = be32(h);
  if (body > f->max_frame)
    return KC_ETOOBIG;
  size_t want = 4 + (size_t)body;
  *take = want - f->len < n ? want - f->len : n;
  *whole = f->len + *take == want ? want : 0;
  return 0;
}

int kc_frames_feed(kc_frames *f, const void *data, size_t len, kc_frames_fn fn, void *ud, char *err,
                   size_t errlen) {
  const uint8_t *d = data;
  while (len > 0) {
    size_t take, whole;
    if (boundary(f, d, len, &take, &whole)) {
      snprintf(err, errlen, "watch frame at offset %" PRIu64 " is longer than the %zu-byte limit",
               f->offset, f->max_frame);
      return KC_ETOOBIG;
    }
    const uint8_t *frame = d; /* read in place when the chunk holds all of it */
    if (!whole || f->len > 0) {
      int rc = append(f, d, take);
      if (rc)
        return rc;
      frame = f->buf;
    }
    d += take;
    len -= take;
    if (!whole)
      continue;
    size_t pre = f->rule == KC_FRAMES_BE32 ? 4 : 0;
    int rc = fn(f, frame + pre, whole - framing(f), f->offset, ud, err, errlen);
    f->offset += whole; /* where the next frame starts */
    f->len = 0;
    if (rc)
      return rc;
  }
  return 0;
}
