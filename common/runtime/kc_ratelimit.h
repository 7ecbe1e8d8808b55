/* Rate limiters, pure and clock-free: every call takes the current time in
 * nanoseconds (any monotonic origin) so tests can drive them with a fake clock.
 *
 * kc_bucket is a token bucket with the semantics of golang.org/x/time/rate's
 * Reserve: a reservation always takes its token now, tokens may go negative,
 * and the caller waits the returned delay before acting. client-go's
 * --kube-api-qps/--kube-api-burst limiter and the work queue's overall
 * limiter are both this bucket. */
#ifndef KC_RATELIMIT_H
#define KC_RATELIMIT_H

#include <stdint.h>

#include "kc_strmap.h"

typedef struct {
  double qps;    /* refill rate; <= 0 means unlimited */
  double burst;  /* capacity */
  double tokens; /* current tokens, negative when reservations are queued */
  uint64_t last_ns;
} kc_bucket;

/* Starts full (burst tokens), as x/time/rate does on first use. qps <= 0 makes
 * the bucket unlimited. A burst below 1 is raised to 1 so that a finite rate
 * can always make progress (x/time/rate would refuse every reservation). */
void kc_bucket_init(kc_bucket *b, double qps, int burst, uint64_t now_ns);

/* Takes one token now and returns the nanoseconds to wait before using it
 * (0 when a token was available). A clock that moves backwards is treated as
 * no time passing. */
uint64_t kc_bucket_reserve(kc_bucket *b, uint64_t now_ns);

/* client-go's ItemExponentialFailureRateLimiter: the n-th consecutive
 * failure of a key (counting from 0) waits base * 2^n, capped at max.
 * Failure counts are kept per key until forget. */
typedef struct {
  uint64_t base_ns;
  uint64_t max_ns;
  kc_strmap failures; /* key (copied) -> count, stored in the pointer */
} kc_item_backoff;

void kc_item_backoff_init(kc_item_backoff *b, uint64_t base_ns, uint64_t max_ns);
void kc_item_backoff_close(kc_item_backoff *b);
/* Records a failure of key and stores the delay to wait in *delay_ns.
 * 0 or KC_ENOMEM (then *delay_ns is max, so a caller that ignores the error
 * still backs off). key is borrowed. */
int kc_item_backoff_when(kc_item_backoff *b, const char *key, uint64_t *delay_ns);
void kc_item_backoff_forget(kc_item_backoff *b, const char *key);
int kc_item_backoff_num_requeues(const kc_item_backoff *b, const char *key);

/* client-go's DefaultControllerRateLimiter: the max of the per-key backoff
 * and an overall token bucket, so a burst of distinct keys is also limited. */
#define KC_RATELIMIT_DEFAULT_BASE_NS (5ULL * 1000 * 1000)           /* 5 ms */
#define KC_RATELIMIT_DEFAULT_MAX_NS  (1000ULL * 1000 * 1000 * 1000) /* 1000 s */
#define KC_RATELIMIT_DEFAULT_QPS     10.0
#define KC_RATELIMIT_DEFAULT_BURST   100

typedef struct {
  kc_item_backoff item;
  kc_bucket bucket;
} kc_ratelimiter;

void kc_ratelimiter_init(kc_ratelimiter *r, uint64_t base_ns, uint64_t max_ns, double qps,
                         int burst, uint64_t now_ns);
/* The defaults above: 5 ms to 1000 s per key, 10 qps with a burst of 100. */
void kc_ratelimiter_init_default(kc_ratelimiter *r, uint64_t now_ns);
void kc_ratelimiter_close(kc_ratelimiter *r);
/* Records a failure of key; *delay_ns = max(per-key backoff, bucket wait).
 * 0 or KC_ENOMEM (with a max-backoff delay still set). */
int kc_ratelimiter_when(kc_ratelimiter *r, const char *key, uint64_t now_ns, uint64_t *delay_ns);
/* Clears the per-key failures (the bucket is not refunded, as in client-go). */
void kc_ratelimiter_forget(kc_ratelimiter *r, const char *key);
int kc_ratelimiter_num_requeues(const kc_ratelimiter *r, const char *key);

#endif
