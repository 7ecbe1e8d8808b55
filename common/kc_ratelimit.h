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

typedef struct {
  double qps;     /* refill rate; <= 0 means unlimited */
  double burst;   /* capacity */
  double tokens;  /* current tokens, negative when reservations are queued */
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

#endif
