#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kc_error.h"
#include "kc_ratelimit.h"

#define MS  1000000ULL
#define SEC 1000000000ULL

static void test_bucket_burst_then_rate(void **state) {
  (void)state;
  kc_bucket b;
  uint64_t t = 5 * SEC;
  kc_bucket_init(&b, 10, 3, t);
  /* The first burst tokens are free. */
  for (int i = 0; i < 3; i++)
    assert_int_equal(kc_bucket_reserve(&b, t), 0);
  /* Then each reservation queues behind the previous one, 100 ms apart. */
  assert_int_equal(kc_bucket_reserve(&b, t), 100 * MS);
  assert_int_equal(kc_bucket_reserve(&b, t), 200 * MS);
  assert_int_equal(kc_bucket_reserve(&b, t), 300 * MS);
  /* After 300 ms all the debt is paid: the next token takes another 100 ms. */
  t += 300 * MS;
  assert_int_equal(kc_bucket_reserve(&b, t), 100 * MS);
  /* A long idle period refills only up to the burst. */
  t += 100 * SEC;
  for (int i = 0; i < 3; i++)
    assert_int_equal(kc_bucket_reserve(&b, t), 0);
  assert_int_equal(kc_bucket_reserve(&b, t), 100 * MS);
}

static void test_bucket_measured_rate(void **state) {
  (void)state;
  /* Callers that wait as told get qps on average after the burst. */
  kc_bucket b;
  uint64_t t = 0;
  kc_bucket_init(&b, 50, 10, t);
  int granted = 0;
  while (t < 10 * SEC) {
    uint64_t w = kc_bucket_reserve(&b, t);
    t += w;
    if (t <= 10 * SEC)
      granted++;
  }
  /* 10 burst + 50/s * 10 s = 510 (one edge either way). */
  assert_in_range(granted, 509, 511);
}

static void test_bucket_unlimited_and_clock(void **state) {
  (void)state;
  kc_bucket b;
  kc_bucket_init(&b, 0, 0, 0);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(kc_bucket_reserve(&b, 0), 0);
  kc_bucket_init(&b, -1, 5, 0);
  assert_int_equal(kc_bucket_reserve(&b, 0), 0);
  /* burst 0 is raised to 1; a clock going backwards adds no tokens. */
  kc_bucket_init(&b, 1, 0, 10 * SEC);
  assert_int_equal(kc_bucket_reserve(&b, 10 * SEC), 0);
  assert_int_equal(kc_bucket_reserve(&b, 5 * SEC), 1 * SEC);
  /* Fractional rates round up to a whole nanosecond. */
  kc_bucket_init(&b, 3, 1, 0);
  assert_int_equal(kc_bucket_reserve(&b, 0), 0);
  assert_int_equal(kc_bucket_reserve(&b, 0), 333333334);
}

static void test_item_backoff_sequence(void **state) {
  (void)state;
  kc_item_backoff ib;
  kc_item_backoff_init(&ib, 5 * MS, 1000 * SEC);
  uint64_t d, expect = 5 * MS;
  for (int i = 0; i < 40; i++) {
    assert_int_equal(kc_item_backoff_num_requeues(&ib, "ns/a"), i);
    assert_int_equal(kc_item_backoff_when(&ib, "ns/a", &d), 0);
    assert_int_equal(d, expect);
    expect = expect * 2 > 1000 * SEC ? 1000 * SEC : expect * 2;
  }
  /* 5 ms * 2^17 = 655 s, 2^18 would be 1310 s: capped from the 19th failure. */
  assert_int_equal(expect, 1000 * SEC);
  /* Other keys are independent. */
  assert_int_equal(kc_item_backoff_when(&ib, "ns/b", &d), 0);
  assert_int_equal(d, 5 * MS);
  kc_item_backoff_forget(&ib, "ns/a");
  assert_int_equal(kc_item_backoff_num_requeues(&ib, "ns/a"), 0);
  assert_int_equal(kc_item_backoff_when(&ib, "ns/a", &d), 0);
  assert_int_equal(d, 5 * MS);
  kc_item_backoff_forget(&ib, "never-seen");
  /* Huge failure counts saturate instead of overflowing. */
  for (int i = 0; i < 3000; i++)
    assert_int_equal(kc_item_backoff_when(&ib, "ns/c", &d), 0);
  assert_int_equal(d, 1000 * SEC);
  kc_item_backoff_close(&ib);
}

static void test_default_limiter_max_of(void **state) {
  (void)state;
  kc_ratelimiter r;
  uint64_t t = 1000;
  kc_ratelimiter_init_default(&r, t);
  uint64_t d;
  char key[32];
  /* 100 distinct keys fit in the burst: each waits only its own 5 ms. */
  for (int i = 0; i < 100; i++) {
    snprintf(key, sizeof(key), "ns/k%d", i);
    assert_int_equal(kc_ratelimiter_when(&r, key, t, &d), 0);
    assert_int_equal(d, 5 * MS);
  }
  /* The 101st distinct key waits for the bucket (10 qps): 100 ms. */
  assert_int_equal(kc_ratelimiter_when(&r, "ns/other", t, &d), 0);
  assert_int_equal(d, 100 * MS);
  assert_int_equal(kc_ratelimiter_num_requeues(&r, "ns/k3"), 1);
  /* With time passing, the per-key backoff dominates again. */
  t += 1000 * SEC;
  for (int i = 0; i < 5; i++)
    assert_int_equal(kc_ratelimiter_when(&r, "ns/k3", t, &d), 0);
  assert_int_equal(d, 5 * MS << 5);
  kc_ratelimiter_forget(&r, "ns/k3");
  assert_int_equal(kc_ratelimiter_num_requeues(&r, "ns/k3"), 0);
  kc_ratelimiter_close(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bucket_burst_then_rate),
      cmocka_unit_test(test_bucket_measured_rate),
      cmocka_unit_test(test_bucket_unlimited_and_clock),
      cmocka_unit_test(test_item_backoff_sequence),
      cmocka_unit_test(test_default_limiter_max_of),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
