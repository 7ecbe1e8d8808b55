/* The job controller's expectations (controller/job/ctl_expect.c), without a server: what
 * confirms a create or a delete, how the view shows what is not confirmed yet, and the TTL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>

#include "ctl_expect.h"

#define KEY "ns/j"
#define SEC 1000000000ull

static ctl_pod pod(const char *name, const char *uid) {
  ctl_pod p = {.index = -1, .version = -1};
  snprintf(p.name, sizeof(p.name), "%s", name);
  snprintf(p.uid, sizeof(p.uid), "%s", uid);
  return p;
}

static void test_create_confirmed_by_the_pod(void **state) {
  ctl_expects e;
  ctl_expects_init(&e);
  ctl_pod p = pod("j-w-0", "");
  assert_int_equal(ctl_expect_add(&e, KEY, &p, true, 10 * SEC), 0);
  assert_non_null(ctl_expect_get(&e, KEY, "j-w-0"));
  assert_null(ctl_expect_get(&e, "ns/other", "j-w-0"));
  ctl_pod seen = pod("j-w-0", "u1");
  ctl_expect_observe(&e, KEY, &seen, true); /* a delete does not confirm a create */
  assert_non_null(ctl_expect_get(&e, KEY, "j-w-0"));
  ctl_expect_observe(&e, KEY, &seen, false);
  assert_null(ctl_expect_get(&e, KEY, "j-w-0"));
  ctl_expects_close(&e);
}

static void test_delete_confirmed_by_that_uid(void **state) {
  ctl_expects e;
  ctl_expects_init(&e);
  ctl_pod p = pod("j-w-0", "u1");
  assert_int_equal(ctl_expect_add(&e, KEY, &p, false, 10 * SEC), 0);
  ctl_pod same = pod("j-w-0", "u1"), other = pod("j-w-0", "u2");
  ctl_expect_observe(&e, KEY, &same, false); /* an update of the pod asked to go */
  assert_non_null(ctl_expect_get(&e, KEY, "j-w-0"));
  ctl_expect_observe(&e, KEY, &other, true); /* another pod of that name went */
  assert_non_null(ctl_expect_get(&e, KEY, "j-w-0"));
  ctl_expect_observe(&e, KEY, &same, true);
  assert_null(ctl_expect_get(&e, KEY, "j-w-0"));
  /* A replacement of the same name with another uid confirms it too. */
  assert_int_equal(ctl_expect_add(&e, KEY, &p, false, 10 * SEC), 0);
  ctl_expect_observe(&e, KEY, &other, false);
  assert_null(ctl_expect_get(&e, KEY, "j-w-0"));
  /* Without a uid any deletion of the name does. */
  ctl_pod nouid = pod("j-w-0", "");
  assert_int_equal(ctl_expect_add(&e, KEY, &nouid, false, 10 * SEC), 0);
  ctl_expect_observe(&e, KEY, &other, true);
  assert_null(ctl_expect_get(&e, KEY, "j-w-0"));
  ctl_expects_close(&e);
}

static void test_view_decisions_and_ttl(void **state) {
  ctl_expects e;
  ctl_expects_init(&e);
  ctl_pod gone = pod("j-w-0", "u1"), made = pod("j-w-1", "");
  uint64_t t0 = 10 * SEC;
  assert_int_equal(ctl_expect_add(&e, KEY, &gone, false, t0), 0);
  assert_int_equal(ctl_expect_add(&e, KEY, &made, true, t0), 0);
  ctl_pod cached = pod("j-w-0", "u1");
  assert_true(ctl_expect_deleting(&e, KEY, &cached, t0 + SEC));
  ctl_pod newer = pod("j-w-0", "u2"); /* not the pod asked to go */
  assert_false(ctl_expect_deleting(&e, KEY, &newer, t0 + SEC));
  cached.deletion_ts = 5; /* shown terminating by the cache already */
  assert_false(ctl_expect_deleting(&e, KEY, &cached, t0 + SEC));
  cached.deletion_ts = 0;
  size_t pos = 0;
  const ctl_pod *p = ctl_expect_next_create(&e, KEY, t0 + SEC, &pos);
  assert_non_null(p);
  assert_string_equal(p->name, "j-w-1");
  assert_null(ctl_expect_next_create(&e, KEY, t0 + SEC, &pos));
  /* Past the TTL neither is trusted. */
  uint64_t late = t0 + CTL_EXPECT_TTL_NS;
  assert_false(ctl_expect_deleting(&e, KEY, &cached, late));
  pos = 0;
  assert_null(ctl_expect_next_create(&e, KEY, late, &pos));
  /* A Job's expectations go with it; deleting one that is not there is harmless. */
  ctl_expect_del(&e, KEY, "j-w-9");
  ctl_expect_del(&e, KEY, "j-w-1");
  assert_null(ctl_expect_get(&e, KEY, "j-w-1"));
  ctl_expect_drop_key(&e, KEY);
  assert_null(ctl_expect_get(&e, KEY, "j-w-0"));
  assert_int_equal(kc_strmap_len(&e.jobs), 0);
  ctl_expects_close(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_confirmed_by_the_pod),
      cmocka_unit_test(test_delete_confirmed_by_that_uid),
      cmocka_unit_test(test_view_decisions_and_ttl),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
