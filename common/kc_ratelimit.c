#include "kc_ratelimit.h"

#include <math.h>

void kc_bucket_init(kc_bucket *b, double qps, int burst, uint64_t now_ns) {
  b->qps = qps;
  b->burst = burst < 1 ? 1.0 : (double)burst;
  b->tokens = b->burst;
  b->last_ns = now_ns;
}

/* Refills for the time elapsed since the last call, capped at burst. */
static void advance(kc_bucket *b, uint64_t now_ns) {
  if (now_ns <= b->last_ns)
    return;
  double elapsed_s = (double)(now_ns - b->last_ns) / 1e9;
  double t = b->tokens + elapsed_s * b->qps;
  b->tokens = t > b->burst ? b->burst : t;
  b->last_ns = now_ns;
}

uint64_t kc_bucket_reserve(kc_bucket *b, uint64_t now_ns) {
  if (!(b->qps > 0))
    return 0;
  advance(b, now_ns);
  b->tokens -= 1.0;
  if (b->tokens >= 0)
    return 0;
  /* Round up so that waiting the returned delay always yields the token. */
  double wait_ns = ceil(-b->tokens / b->qps * 1e9);
  if (wait_ns >= 1.8e19)
    return UINT64_MAX;
  return (uint64_t)wait_ns;
}
