/* Event correlation with a fake clock: identical events count up through PATCHes, similar
 * ones combine from the 10th distinct message, the spam filter's 25-token bucket refilled
 * every 5 minutes, the aggregation window, the LRU bound, and deleted objects forgotten. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_events.h"

#define S 1000000000ULL

static const int64_t WALL0 = 1796000000LL * 1000000000LL; /* some Unix time in ns */

static kc_object_ref pod(const char *name) {
  kc_object_ref o = {
      .kind = "Pod", .namespace = "ns1", .name = name, .uid = "u-1", .api_version = "v1"};
  return o;
}

static kc_event_cache *cache(void) {
  kc_event_cache *c = NULL;
  assert_int_equal(kc_event_cache_new("vc-scheduler", NULL, &c), 0);
  return c;
}

static void observe(kc_event_cache *c, const char *name, const char *type, const char *reason,
                    const char *msg, uint64_t t, kc_event_decision *d) {
  kc_object_ref o = pod(name);
  assert_int_equal(kc_event_cache_observe(c, &o, type, reason, msg, t, WALL0 + (int64_t)t, d), 0);
}

static void test_identical_events_count_up(void **state) {
  (void)state;
  kc_event_cache *c = cache();
  kc_event_decision d;
  observe(c, "p1", KC_EVENT_WARNING, "FailedScheduling", "0/3 nodes are available", 0, &d);
  assert_false(d.drop);
  assert_false(d.patch);
  assert_int_equal(d.count, 1);
  char want[64];
  snprintf(want, sizeof(want), "p1.%llx", (unsigned long long)WALL0);
  assert_string_equal(d.name, want);
  assert_string_equal(d.message, "0/3 nodes are available");
  for (int i = 2; i <= 5; i++) {
    observe(c, "p1", KC_EVENT_WARNING, "FailedScheduling", "0/3 nodes are available",
            (uint64_t)i * S, &d);
    assert_false(d.drop);
    assert_true(d.patch);
    assert_int_equal(d.count, i);
    assert_string_equal(d.name, want);
    assert_int_equal(d.first_s, WALL0 / 1000000000LL);
    assert_int_equal(d.last_s, WALL0 / 1000000000LL + i);
  }
  /* Another type, reason, object or source is another event. */
  observe(c, "p1", KC_EVENT_NORMAL, "FailedScheduling", "0/3 nodes are available", 6 * S, &d);
  assert_false(d.patch);
  observe(c, "p1", KC_EVENT_WARNING, "Unschedulable", "0/3 nodes are available", 7 * S, &d);
  assert_false(d.patch);
  observe(c, "p2", KC_EVENT_WARNING, "FailedScheduling", "0/3 nodes are available", 8 * S, &d);
  assert_false(d.patch);
  kc_event_cache *c2 = NULL;
  assert_int_equal(kc_event_cache_new("vc-controller-manager", NULL, &c2), 0);
  kc_event_cache_free(c2);
  kc_event_cache_free(c);
}

static void test_similar_events_combine_from_the_tenth(void **state) {
  (void)state;
  kc_event_cache *c = cache();
  kc_event_decision d;
  char msg[64], names[9][300];
  for (int i = 0; i < 9; i++) {
    snprintf(msg, sizeof(msg), "message %d", i);
    observe(c, "p1", KC_EVENT_WARNING, "FailedCreate", msg, (uint64_t)i * S, &d);
    assert_false(d.patch);
    assert_string_equal(d.message, msg);
    snprintf(names[i], sizeof(names[i]), "%s", d.name);
    for (int j = 0; j < i; j++)
      assert_string_not_equal(names[i], names[j]);
  }
  /* A repeat of a message already seen, before the 10th: counts on its own event. */
  observe(c, "p1", KC_EVENT_WARNING, "FailedCreate", "message 3", 9 * S, &d);
  assert_true(d.patch);
  assert_string_equal(d.name, names[3]);
  assert_int_equal(d.count, 2);
  /* The 10th distinct message: one combined event... */
  observe(c, "p1", KC_EVENT_WARNING, "FailedCreate", "message 9", 10 * S, &d);
  assert_false(d.patch);
  assert_int_equal(d.count, 1);
  assert_string_equal(d.message, "(combined from similar events): message 9");
  char combined[300];
  snprintf(combined, sizeof(combined), "%s", d.name);
  /* ...that every later similar event counts on, with its own message. */
  observe(c, "p1", KC_EVENT_WARNING, "FailedCreate", "message 10", 11 * S, &d);
  assert_true(d.patch);
  assert_string_equal(d.name, combined);
  assert_int_equal(d.count, 2);
  assert_string_equal(d.message, "(combined from similar events): message 10");
  observe(c, "p1", KC_EVENT_WARNING, "FailedCreate", "message 0", 12 * S, &d);
  assert_true(d.patch);
  assert_string_equal(d.name, combined);
  assert_int_equal(d.count, 3);
  /* After 10 minutes without a similar event the aggregation starts over. */
  observe(c, "p1", KC_EVENT_WARNING, "FailedCreate", "message 42", 12 * S + 601 * S, &d);
  assert_false(d.patch);
  assert_string_equal(d.message, "message 42");
  kc_event_cache_free(c);
}

static void test_spam_filter(void **state) {
  (void)state;
  kc_event_cache *c = cache();
  kc_event_decision d;
  uint64_t t = 0;
  for (int i = 0; i < 25; i++) {
    observe(c, "p1", KC_EVENT_NORMAL, "Scheduled", "same", t, &d);
    assert_false(d.drop);
    t += 1 * S;
  }
  observe(c, "p1", KC_EVENT_NORMAL, "Scheduled", "same", t, &d);
  assert_true(d.drop);
  /* Any event about the same object is in the same bucket... */
  observe(c, "p1", KC_EVENT_WARNING, "Other", "x", t, &d);
  assert_true(d.drop);
  /* ...another object is not. */
  observe(c, "p2", KC_EVENT_WARNING, "Other", "x", t, &d);
  assert_false(d.drop);
  /* One token per 300 s: 25 s have passed since the first, so 275 s more give one. */
  t = 299 * S;
  observe(c, "p1", KC_EVENT_NORMAL, "Scheduled", "same", t, &d);
  assert_true(d.drop);
  t = 300 * S;
  observe(c, "p1", KC_EVENT_NORMAL, "Scheduled", "same", t, &d);
  assert_false(d.drop);
  assert_int_equal(d.count, 26); /* the drops were not counted */
  observe(c, "p1", KC_EVENT_NORMAL, "Scheduled", "same", t + S, &d);
  assert_true(d.drop);
  /* Bad input. */
  kc_object_ref o = pod("p1");
  assert_int_equal(kc_event_cache_observe(c, &o, "Fatal", "R", "m", t, WALL0, &d), KC_EINVAL);
  assert_int_equal(kc_event_cache_observe(c, &o, KC_EVENT_NORMAL, "", "m", t, WALL0, &d),
                   KC_EINVAL);
  o.name = NULL;
  assert_int_equal(kc_event_cache_observe(c, &o, KC_EVENT_NORMAL, "R", "m", t, WALL0, &d),
                   KC_EINVAL);
  kc_event_cache_free(c);
}

static void test_lru_bound(void **state) {
  (void)state;
  kc_event_cache *c = cache();
  kc_event_decision d;
  char name[32];
  /* 5000 objects: the oldest entries are evicted, so p0's event is new again. */
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof(name), "p%d", i);
    observe(c, name, KC_EVENT_NORMAL, "Scheduled", "m", (uint64_t)i * 1000, &d);
    assert_false(d.patch);
  }
  observe(c, "p4999", KC_EVENT_NORMAL, "Scheduled", "m", 5000 * 1000, &d);
  assert_true(d.patch);
  observe(c, "p0", KC_EVENT_NORMAL, "Scheduled", "m", 5001 * 1000, &d);
  assert_false(d.patch);
  assert_int_equal(d.count, 1);
  kc_event_cache_free(c);
}

static void observe_uid(kc_event_cache *c, const char *name, const char *uid, uint64_t t,
                        kc_event_decision *d) {
  kc_object_ref o = pod(name);
  o.uid = uid;
  assert_int_equal(
      kc_event_cache_observe(c, &o, KC_EVENT_NORMAL, "Scheduled", "m", t, WALL0 + (int64_t)t, d),
      0);
}

/* Pods come and go under a churn of 10,000: once deleted, a pod's entries go (its uid is
 * never seen again), so the cache holds what the live pods need, not the last 4096 of
 * everything; a live pod's event still counts up. */
static void test_deleted_objects_are_forgotten(void **state) {
  (void)state;
  kc_event_cache *c = cache();
  kc_event_decision d;
  char name[32], uid[32];
  observe_uid(c, "live", "u-live", 0, &d);
  for (int i = 0; i < 10000; i++) {
    snprintf(name, sizeof(name), "p%d", i);
    snprintf(uid, sizeof(uid), "u-%d", i);
    observe_uid(c, name, uid, (uint64_t)i * 1000, &d);
    assert_false(d.patch);
    kc_event_cache_forget(c, uid);
    /* the live pod and at most one batch of deleted ones, in three maps */
    assert_true(kc_event_cache_len(c) <= 3 * (1 + 64));
  }
  kc_event_cache_flush(c);
  assert_int_equal(kc_event_cache_len(c), 3);
  observe_uid(c, "live", "u-live", 10000 * 1000, &d);
  assert_true(d.patch);
  assert_int_equal(d.count, 2);
  /* A pod under the same name (Volcano recreates them so) has a new uid: a new event. */
  observe_uid(c, "p9999", "u-new", 10001 * 1000, &d);
  assert_false(d.patch);
  /* Forgetting what was never seen, twice, or nothing is harmless. */
  kc_event_cache_forget(c, "u-unknown");
  kc_event_cache_forget(c, "u-unknown");
  kc_event_cache_forget(c, NULL);
  kc_event_cache_forget(c, "");
  kc_event_cache_flush(c);
  assert_int_equal(kc_event_cache_len(c), 6);
  kc_event_cache_free(c);
}

static void test_long_message_is_cut_consistently(void **state) {
  (void)state;
  kc_event_cache *c = cache();
  kc_event_decision d;
  char *big = malloc(3000);
  assert_non_null(big);
  memset(big, 'x', 2999);
  big[2999] = '\0';
  observe(c, "p1", KC_EVENT_NORMAL, "R", big, 0, &d);
  assert_int_equal((int)strlen(d.message), KC_EVENT_MAX_MESSAGE);
  big[2000] = 'y'; /* differs only past the cut: the same stored event */
  observe(c, "p1", KC_EVENT_NORMAL, "R", big, S, &d);
  assert_true(d.patch);
  free(big);
  kc_event_cache_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identical_events_count_up),
      cmocka_unit_test(test_similar_events_combine_from_the_tenth),
      cmocka_unit_test(test_spam_filter),
      cmocka_unit_test(test_lru_bound),
      cmocka_unit_test(test_deleted_objects_are_forgotten),
      cmocka_unit_test(test_long_message_is_cut_consistently),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
