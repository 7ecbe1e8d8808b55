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
  /* Round up so that waiting the returned delay always covers the debt,
   * but ignore sub-picosecond floating-point noise so that exact rates
   * (10 qps -> 100 ms) give exact delays. */
  double wait_ns = ceil(-b->tokens / b->qps * 1e9 - 1e-3);
  if (wait_ns >= 1.8e19)
    return UINT64_MAX;
  return (uint64_t)wait_ns;
}

void kc_item_backoff_init(kc_item_backoff *b, uint64_t base_ns, uint64_t max_ns) {
  b->base_ns = base_ns;
  b->max_ns = max_ns;
  kc_strmap_init(&b->failures, KC_STRMAP_COPY_KEYS);
}

void kc_item_backoff_close(kc_item_backoff *b) {
  kc_strmap_close(&b->failures, NULL);
}

int kc_item_backoff_when(kc_item_backoff *b, const char *key, uint64_t *delay_ns) {
  uintptr_t n = (uintptr_t)kc_strmap_get(&b->failures, key);
  int rc = kc_strmap_put(&b->failures, key, (void *)(n + 1), NULL);
  if (rc < 0) {
    *delay_ns = b->max_ns;
    return rc;
  }
  /* base * 2^n in floating point, as client-go does, so that large n
   * saturates at max instead of overflowing. */
  double d = (double)b->base_ns * ldexp(1.0, n > 1100 ? 1100 : (int)n);
  *delay_ns = d >= (double)b->max_ns ? b->max_ns : (uint64_t)d;
  return 0;
}

void kc_item_backoff_forget(kc_item_backoff *b, const char *key) {
  (void)kc_strmap_del(&b->failures, key, NULL);
}

int kc_item_backoff_num_requeues(const kc_item_backoff *b, const char *key) {
  uintptr_t n = (uintptr_t)kc_strmap_get(&b->failures, key);
  return n > INT32_MAX ? INT32_MAX : (int)n;
}

void kc_ratelimiter_init(kc_ratelimiter *r, uint64_t base_ns, uint64_t max_ns, double qps,
                         int burst, uint64_t now_ns) {
  kc_item_backoff_init(&r->item, base_ns, max_ns);
  kc_bucket_init(&r->bucket, qps, burst, now_ns);
}

void kc_ratelimiter_init_default(kc_ratelimiter *r, uint64_t now_ns) {
  kc_ratelimiter_init(r, KC_RATELIMIT_DEFAULT_BASE_NS, KC_RATELIMIT_DEFAULT_MAX_NS,
                      KC_RATELIMIT_DEFAULT_QPS, KC_RATELIMIT_DEFAULT_BURST, now_ns);
}

void kc_ratelimiter_close(kc_ratelimiter *r) {
  kc_item_backoff_close(&r->item);
}

int kc_ratelimiter_when(kc_ratelimiter *r, const char *key, uint64_t now_ns, uint64_t *delay_ns) {
  uint64_t item;
  int rc = kc_item_backoff_when(&r->item, key, &item);
  uint64_t bucket = kc_bucket_reserve(&r->bucket, now_ns);
  *delay_ns = item > bucket ? item : bucket;
  return rc;
}

void kc_ratelimiter_forget(kc_ratelimiter *r, const char *key) {
  kc_item_backoff_forget(&r->item, key);
}

int kc_ratelimiter_num_requeues(const kc_ratelimiter *r, const char *key) {
  return kc_item_backoff_num_requeues(&r->item, key);
}
