/* Leader election decisions with a fake clock: create, wait, take over an expired lease,
 * renew, the write fence, and the rule that an old leader's writes end before another
 * replica may take the lease. Plus option validation and the flag rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_flags.h"
#include "kc_leader.h"

#define S  1000000000ULL
#define MS 1000000ULL

static void init(kc_leader_core *c, const char *id) {
  kc_leader_core_init(c, id, 15 * S, 10 * S, 2 * S);
}

static kc_lease_record rec(const char *holder, const char *renew, int64_t transitions) {
  kc_lease_record r;
  memset(&r, 0, sizeof(r));
  snprintf(r.holder, sizeof(r.holder), "%s", holder);
  snprintf(r.renew_time, sizeof(r.renew_time), "%s", renew);
  snprintf(r.acquire_time, sizeof(r.acquire_time), "t-acq");
  r.lease_duration_s = 15;
  r.transitions = transitions;
  return r;
}

static void test_create_when_absent(void **state) {
  (void)state;
  kc_leader_core c;
  init(&c, "a");
  kc_lease_record want;
  assert_int_equal(kc_leader_decide(&c, NULL, 100 * S, "T1", &want), KC_LEASE_CREATE);
  assert_string_equal(want.holder, "a");
  assert_string_equal(want.acquire_time, "T1");
  assert_string_equal(want.renew_time, "T1");
  assert_int_equal(want.lease_duration_s, 15);
  assert_int_equal(want.transitions, 0);
  assert_false(kc_leader_core_fence_ok(&c, 100 * S)); /* not before the write succeeded */
}

static void test_wait_then_take_over_unrenewed_lease(void **state) {
  (void)state;
  kc_leader_core c;
  init(&c, "b");
  kc_lease_record cur = rec("a", "R1", 3), want;
  /* First seen at t=1000 s; the holder's own timestamps are never compared with our clock. */
  assert_int_equal(kc_leader_decide(&c, &cur, 1000 * S, "X", &want), KC_LEASE_WAIT);
  assert_int_equal(kc_leader_decide(&c, &cur, 1014 * S, "X", &want), KC_LEASE_WAIT);
  assert_int_equal(kc_leader_decide(&c, &cur, 1015 * S - 1, "X", &want), KC_LEASE_WAIT);
  assert_int_equal(kc_leader_decide(&c, &cur, 1015 * S, "T2", &want), KC_LEASE_UPDATE);
  assert_string_equal(want.holder, "b");
  assert_string_equal(want.acquire_time, "T2");
  assert_string_equal(want.renew_time, "T2");
  assert_int_equal(want.transitions, 4);
}

static void test_renewing_holder_keeps_lease(void **state) {
  (void)state;
  kc_leader_core c;
  init(&c, "b");
  kc_lease_record want;
  char renew[16];
  /* The holder renews every 2 s: we keep waiting however long it goes on. */
  for (unsigned i = 0; i < 60; i++) {
    snprintf(renew, sizeof(renew), "R%u", i);
    kc_lease_record cur = rec("a", renew, 0);
    assert_int_equal(kc_leader_decide(&c, &cur, (uint64_t)i * 2 * S, "X", &want), KC_LEASE_WAIT);
  }
  /* It stops renewing at t=118 s: we take over 15 s after we last saw a change. */
  kc_lease_record cur = rec("a", "R59", 0);
  assert_int_equal(kc_leader_decide(&c, &cur, 132 * S, "X", &want), KC_LEASE_WAIT);
  assert_int_equal(kc_leader_decide(&c, &cur, 133 * S, "X", &want), KC_LEASE_UPDATE);
  /* A lease with its own longer duration is honoured. */
  kc_leader_core d;
  init(&d, "b");
  cur.lease_duration_s = 60;
  assert_int_equal(kc_leader_decide(&d, &cur, 0, "X", &want), KC_LEASE_WAIT);
  assert_int_equal(kc_leader_decide(&d, &cur, 59 * S, "X", &want), KC_LEASE_WAIT);
  assert_int_equal(kc_leader_decide(&d, &cur, 60 * S, "X", &want), KC_LEASE_UPDATE);
}

static void test_next_try_lines_up_with_expiry(void **state) {
  (void)state;
  kc_leader_core c;
  init(&c, "b");
  kc_lease_record cur = rec("a", "R1", 0), want;
  /* Before anything is observed, and while the holder is fresh: the retry period. */
  assert_int_equal(kc_leader_core_next_try_ns(&c, 0, 3 * S), 3 * S);
  kc_leader_decide(&c, &cur, 100 * S, "X", &want); /* observed at 100 s, expires at 115 s */
  assert_int_equal(kc_leader_core_next_try_ns(&c, 101 * S, 3 * S), 3 * S);
  /* Close to expiry: wake just after it rather than a whole period later. */
  assert_int_equal(kc_leader_core_next_try_ns(&c, 114 * S, 3 * S), 1 * S + 1000000);
  assert_int_equal(kc_leader_core_next_try_ns(&c, 120 * S, 3 * S), 1000000);
  /* ...and the try at that moment takes over. */
  assert_int_equal(kc_leader_decide(&c, &cur, 115 * S + 1000000, "T", &want), KC_LEASE_UPDATE);
  /* A leader renews on its period. */
  kc_leader_core_won(&c, &want, 116 * S);
  assert_int_equal(kc_leader_core_next_try_ns(&c, 117 * S, 2 * S), 2 * S);
}

static void test_released_lease_is_taken_at_once(void **state) {
  (void)state;
  kc_leader_core c;
  init(&c, "b");
  kc_lease_record cur = rec("", "R", 7), want;
  cur.lease_duration_s = 1;
  assert_int_equal(kc_leader_decide(&c, &cur, 5 * S, "T", &want), KC_LEASE_UPDATE);
  assert_int_equal(want.transitions, 8);
}

static void test_renew_keeps_acquire_time_and_transitions(void **state) {
  (void)state;
  kc_leader_core c;
  init(&c, "a");
  kc_lease_record cur = rec("a", "R1", 5), want;
  assert_int_equal(kc_leader_decide(&c, &cur, 10 * S, "T9", &want), KC_LEASE_UPDATE);
  assert_string_equal(want.acquire_time, "t-acq");
  assert_string_equal(want.renew_time, "T9");
  assert_int_equal(want.transitions, 5);
}

static void test_fence_and_deadline(void **state) {
  (void)state;
  kc_leader_core c;
  init(&c, "a");
  kc_lease_record want;
  kc_leader_decide(&c, NULL, 0, "T0", &want);
  assert_true(kc_leader_core_won(&c, &want, 1 * S)); /* sent at 1 s */
  assert_true(kc_leader_core_fence_ok(&c, 1 * S));
  assert_true(kc_leader_core_fence_ok(&c, 11 * S - 1));
  assert_false(kc_leader_core_fence_ok(&c, 11 * S));
  assert_false(kc_leader_core_expire(&c, 10 * S));
  /* A renew sent at 3 s (answered later) moves the deadline to 13 s. */
  assert_false(kc_leader_core_won(&c, &want, 3 * S));
  assert_true(kc_leader_core_fence_ok(&c, 12 * S));
  assert_false(kc_leader_core_expire(&c, 12 * S));
  assert_true(kc_leader_core_expire(&c, 13 * S));
  assert_false(kc_leader_core_fence_ok(&c, 13 * S));
  assert_false(kc_leader_core_expire(&c, 14 * S)); /* once */
  /* Winning again starts a new leadership. */
  assert_true(kc_leader_core_won(&c, &want, 20 * S));
}

/* A lease write that succeeds after its renew deadline (it may take the 60 s request
 * timeout): the time left is 0, not an unsigned wrap to centuries, so the deadline timer ends
 * the leadership at once; and such a write does not begin one. */
static void test_write_answered_after_deadline(void **state) {
  (void)state;
  kc_leader_core c;
  init(&c, "a");
  kc_lease_record want;
  kc_leader_decide(&c, NULL, 0, "T0", &want);
  assert_false(kc_leader_core_late(&c, 1 * S, 11 * S - 1));
  assert_true(kc_leader_core_late(&c, 1 * S, 11 * S));
  assert_true(kc_leader_core_late(&c, 1 * S, 61 * S));
  assert_int_equal(kc_leader_core_deadline_left_ns(&c, 2 * S), 0); /* not leading */
  assert_true(kc_leader_core_won(&c, &want, 1 * S));
  assert_int_equal(kc_leader_core_deadline_left_ns(&c, 1 * S), 10 * S);
  assert_int_equal(kc_leader_core_deadline_left_ns(&c, 11 * S - 1), 1);
  /* a renewal sent at 5 s answered at 65 s */
  assert_false(kc_leader_core_won(&c, &want, 5 * S));
  assert_int_equal(kc_leader_core_deadline_left_ns(&c, 65 * S), 0);
  assert_int_equal(kc_leader_core_deadline_left_ns(&c, 15 * S), 0);
  assert_false(kc_leader_core_fence_ok(&c, 65 * S));
  assert_true(kc_leader_core_expire(&c, 65 * S));
  assert_int_equal(kc_leader_core_deadline_left_ns(&c, 65 * S), 0);
}

/* The safety property, over many timings: the last instant the old leader may write comes
 * before the first instant another replica decides to take the lease. */
static void test_old_leader_stops_before_takeover(void **state) {
  (void)state;
  for (uint64_t sent = 0; sent < 5 * S; sent += 250 * MS) {
    for (uint64_t lag = 0; lag < 3 * S; lag += 500 * MS) {
      kc_leader_core a, b;
      init(&a, "a");
      init(&b, "b");
      kc_lease_record want;
      kc_leader_decide(&a, NULL, sent, "T", &want);
      kc_leader_core_won(&a, &want, sent);
      /* b reads the record lag after a sent it; a never renews again. */
      uint64_t t = sent + lag, takeover = 0;
      for (; t < sent + 60 * S; t += 100 * MS) {
        kc_lease_record got;
        if (kc_leader_decide(&b, &want, t, "U", &got) == KC_LEASE_UPDATE) {
          takeover = t;
          break;
        }
      }
      assert_true(takeover > 0);
      assert_true(takeover >= sent + 15 * S);
      /* a's fence closed 5 s (leaseDuration - renewDeadline) before that. */
      assert_false(kc_leader_core_fence_ok(&a, sent + 10 * S));
      assert_true(kc_leader_core_fence_ok(&a, sent + 10 * S - 1));
    }
  }
}

static void test_validate(void **state) {
  (void)state;
  char err[160];
  kc_leader_options o = KC_LEADER_OPTIONS_INIT("volcano");
  assert_int_equal(kc_leader_validate(&o, err, sizeof(err)), 0);
  o.renew_deadline_ns = 15 * KC_LEADER_NS_PER_S;
  assert_int_equal(kc_leader_validate(&o, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "leaseDuration must be greater than renewDeadline"));
  o.renew_deadline_ns = 10 * KC_LEADER_NS_PER_S;
  o.retry_period_ns = 9 * KC_LEADER_NS_PER_S; /* 1.2 * 9 s > 10 s */
  assert_int_equal(kc_leader_validate(&o, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "JitterFactor"));
  o.retry_period_ns = 0;
  assert_int_equal(kc_leader_validate(&o, err, sizeof(err)), KC_EINVAL);
  o.retry_period_ns = 2 * KC_LEADER_NS_PER_S;
  o.resource_lock = "endpoints";
  assert_int_equal(kc_leader_validate(&o, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "endpoints"));
}

static void test_flags(void **state) {
  (void)state;
  kc_leader_options o = KC_LEADER_OPTIONS_INIT("vc-controller-manager");
  kc_flag flags[] = {KC_LEADER_FLAGS(&o, "vc-controller-manager")};
  char *argv[] = {"prog",
                  "--leader-elect=false",
                  "--leader-elect-lease-duration=30s",
                  "--leader-elect-renew-deadline",
                  "20s",
                  "--leader-elect-retry-period=500ms",
                  "--leader-elect-resource-name=other",
                  "--leader-elect-resource-namespace=kube-system",
                  "--lock-object-namespace=legacy"};
  char err[128];
  int nargs = 0;
  assert_int_equal(
      kc_flags_parse(flags, sizeof(flags) / sizeof(flags[0]), 9, argv, &nargs, err, sizeof(err)),
      0);
  assert_false(o.leader_elect);
  assert_int_equal(o.lease_duration_ns, 30 * KC_LEADER_NS_PER_S);
  assert_int_equal(o.renew_deadline_ns, 20 * KC_LEADER_NS_PER_S);
  assert_int_equal(o.retry_period_ns, 500 * 1000000LL);
  assert_string_equal(o.resource_name, "other");
  assert_string_equal(o.resource_namespace, "kube-system");
  assert_string_equal(o.lock_object_namespace, "legacy");
  assert_string_equal(o.resource_lock, "leases");
}

static void test_identity(void **state) {
  (void)state;
  char a[320], b[320], tiny[8];
  assert_int_equal(kc_leader_make_identity(a, sizeof(a)), 0);
  assert_int_equal(kc_leader_make_identity(b, sizeof(b)), 0);
  assert_string_not_equal(a, b);
  const char *u = strrchr(a, '_');
  assert_non_null(u);
  assert_int_equal((int)strlen(u + 1), 36);
  assert_int_equal(u[15], '4'); /* version 4 */
  assert_int_equal(kc_leader_make_identity(tiny, sizeof(tiny)), KC_ETOOBIG);
  char t[40];
  kc_leader_microtime(t);
  assert_int_equal((int)strlen(t), 27); /* 2026-11-29T16:30:00.123456Z */
  assert_int_equal(t[26], 'Z');
  assert_int_equal(t[19], '.');
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_when_absent),
      cmocka_unit_test(test_wait_then_take_over_unrenewed_lease),
      cmocka_unit_test(test_renewing_holder_keeps_lease),
      cmocka_unit_test(test_next_try_lines_up_with_expiry),
      cmocka_unit_test(test_released_lease_is_taken_at_once),
      cmocka_unit_test(test_renew_keeps_acquire_time_and_transitions),
      cmocka_unit_test(test_fence_and_deadline),
      cmocka_unit_test(test_old_leader_stops_before_takeover),
      cmocka_unit_test(test_write_answered_after_deadline),
      cmocka_unit_test(test_validate),
      cmocka_unit_test(test_flags),
      cmocka_unit_test(test_identity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
