/* What the executor does with each write's answer (controller/ctl_write.c): follow-ups,
 * counters, write-through, expectations and the failure lists, without a server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ctl_write.h"
#include "kc_error.h"

static ctl_write_outcome res(ctl_write_kind k, int err) {
  bool ok_exists = k == CTL_W_POD_CREATE || k == CTL_W_PG_WRITE || k == CTL_W_PLAIN;
  bool ok_notfound = k == CTL_W_POD_DELETE || k == CTL_W_PG_DELETE;
  return ctl_write_result(k, ok_exists, ok_notfound, err, false);
}

static void test_pod_patch_then_delete(void **state) {
  ctl_write_outcome o = res(CTL_W_POD_PATCH, 0);
  assert_int_equal(o.next, CTL_WNEXT_POD_DELETE);
  assert_int_equal(o.err, 0);
  assert_false(o.expect_del);
  /* Shutting down: marked, but not deleted now. */
  o = ctl_write_result(CTL_W_POD_PATCH, false, false, 0, true);
  assert_int_equal(o.next, CTL_WNEXT_NONE);
  assert_int_equal(o.err, 0);
  /* Gone already: no delete, no error, the expectation goes. */
  o = res(CTL_W_POD_PATCH, KC_ENOTFOUND);
  assert_int_equal(o.next, CTL_WNEXT_NONE);
  assert_int_equal(o.err, 0);
  assert_true(o.expect_del);
  assert_int_equal(o.list, CTL_WLIST_NONE);
  /* Refused: reported in the delete list. */
  o = res(CTL_W_POD_PATCH, KC_EFORBIDDEN);
  assert_int_equal(o.err, KC_EFORBIDDEN);
  assert_false(o.conflict);
  assert_true(o.expect_del);
  assert_int_equal(o.list, CTL_WLIST_DELETE);
}

static void test_pod_delete(void **state) {
  ctl_write_outcome o = res(CTL_W_POD_DELETE, 0);
  assert_int_equal(o.count, CTL_WCOUNT_POD_DELETED);
  assert_int_equal(o.err, 0);
  assert_false(o.expect_del); /* the watch confirms it */
  /* The uid precondition failed: that pod is gone, which is what was asked. */
  o = res(CTL_W_POD_DELETE, KC_ECONFLICT);
  assert_int_equal(o.err, 0);
  assert_int_equal(o.count, CTL_WCOUNT_POD_DELETED);
  o = res(CTL_W_POD_DELETE, KC_ENOTFOUND);
  assert_int_equal(o.err, 0);
  o = res(CTL_W_POD_DELETE, KC_EINTERNAL);
  assert_int_equal(o.err, KC_EINTERNAL);
  assert_int_equal(o.count, CTL_WCOUNT_NONE);
  assert_int_equal(o.list, CTL_WLIST_DELETE);
  assert_true(o.expect_del);
}

static void test_pod_create(void **state) {
  ctl_write_outcome o = res(CTL_W_POD_CREATE, 0);
  assert_int_equal(o.count, CTL_WCOUNT_POD_CREATED);
  assert_true(o.latency);
  assert_false(o.expect_del);
  /* There already: counted apart, no latency, and the watch will not show a new pod. */
  o = res(CTL_W_POD_CREATE, KC_EALREADYEXISTS);
  assert_int_equal(o.err, 0);
  assert_int_equal(o.count, CTL_WCOUNT_POD_EXISTS);
  assert_false(o.latency);
  assert_true(o.expect_del);
  o = ctl_write_result(CTL_W_POD_CREATE, false, false, KC_EALREADYEXISTS, false);
  assert_int_equal(o.err, KC_EALREADYEXISTS);
  assert_int_equal(o.list, CTL_WLIST_CREATE);
  o = res(CTL_W_POD_CREATE, KC_EINVALID);
  assert_int_equal(o.err, KC_EINVALID);
  assert_int_equal(o.list, CTL_WLIST_CREATE);
  assert_true(o.expect_del);
  assert_false(o.latency);
}

static void test_status(void **state) {
  ctl_write_outcome o = res(CTL_W_STATUS, 0);
  assert_int_equal(o.count, CTL_WCOUNT_STATUS);
  assert_int_equal(o.keep, CTL_WKEEP_JOB);
  /* Conflict: read the Job once; a conflict, not a failure. */
  o = res(CTL_W_STATUS, KC_ECONFLICT);
  assert_int_equal(o.next, CTL_WNEXT_JOB_GET);
  assert_int_equal(o.err, KC_ECONFLICT);
  assert_true(o.conflict);
  assert_int_equal(o.keep, CTL_WKEEP_NONE);
  /* Shutting down: no read, the conflict is all. */
  o = ctl_write_result(CTL_W_STATUS, false, false, KC_ECONFLICT, true);
  assert_int_equal(o.next, CTL_WNEXT_NONE);
  assert_true(o.conflict);
  o = res(CTL_W_STATUS, KC_EFORBIDDEN);
  assert_int_equal(o.err, KC_EFORBIDDEN);
  assert_false(o.conflict);
  assert_int_equal(o.list, CTL_WLIST_NONE);
  assert_int_equal(o.count, CTL_WCOUNT_NONE);
}

static void test_job_get_and_patch(void **state) {
  ctl_write_outcome o = res(CTL_W_JOB_GET, 0);
  assert_int_equal(o.keep, CTL_WKEEP_JOB);
  /* A failed read adds nothing: the Conflict before it is what the plan reports. */
  o = res(CTL_W_JOB_GET, KC_EINTERNAL);
  assert_int_equal(o.err, 0);
  assert_int_equal(o.keep, CTL_WKEEP_NONE);
  o = res(CTL_W_JOB_PATCH, 0);
  assert_int_equal(o.keep, CTL_WKEEP_JOB_RV);
  o = res(CTL_W_JOB_PATCH, KC_ECONFLICT);
  assert_int_equal(o.err, KC_ECONFLICT);
  assert_true(o.conflict);
  assert_int_equal(o.next, CTL_WNEXT_NONE);
}

static void test_podgroup(void **state) {
  assert_int_equal(res(CTL_W_PG_WRITE, 0).keep, CTL_WKEEP_PG);
  /* AlreadyExists is success but returns no PodGroup to keep. */
  ctl_write_outcome o = res(CTL_W_PG_WRITE, KC_EALREADYEXISTS);
  assert_int_equal(o.err, 0);
  assert_int_equal(o.keep, CTL_WKEEP_NONE);
  assert_int_equal(res(CTL_W_PG_DELETE, 0).keep, CTL_WKEEP_PG_DROP);
  assert_int_equal(res(CTL_W_PG_DELETE, KC_ENOTFOUND).keep, CTL_WKEEP_PG_DROP);
  o = res(CTL_W_PG_DELETE, KC_EFORBIDDEN);
  assert_int_equal(o.err, KC_EFORBIDDEN);
  assert_int_equal(o.keep, CTL_WKEEP_NONE);
  assert_int_equal(o.list, CTL_WLIST_NONE);
  assert_false(o.expect_del);
}

static void test_plain(void **state) {
  assert_int_equal(res(CTL_W_PLAIN, KC_EALREADYEXISTS).err, 0);
  ctl_write_outcome o = ctl_write_result(CTL_W_PLAIN, false, true, KC_ENOTFOUND, false);
  assert_int_equal(o.err, 0);
  o = res(CTL_W_PLAIN, KC_ENOTFOUND);
  assert_int_equal(o.err, KC_ENOTFOUND);
  assert_int_equal(o.list, CTL_WLIST_NONE);
  assert_false(o.expect_del);
  assert_int_equal(o.count, CTL_WCOUNT_NONE);
}

static void test_unsent(void **state) {
  ctl_write_outcome o = ctl_write_unsent(CTL_WNEXT_POD_DELETE, KC_ENOTLEADER);
  assert_int_equal(o.err, KC_ENOTLEADER);
  assert_true(o.expect_del);
  assert_int_equal(o.list, CTL_WLIST_DELETE);
  o = ctl_write_unsent(CTL_WNEXT_JOB_GET, KC_ENOMEM);
  assert_int_equal(o.err, 0);
  assert_false(o.expect_del);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pod_patch_then_delete),
      cmocka_unit_test(test_pod_delete),
      cmocka_unit_test(test_pod_create),
      cmocka_unit_test(test_status),
      cmocka_unit_test(test_job_get_and_patch),
      cmocka_unit_test(test_podgroup),
      cmocka_unit_test(test_plain),
      cmocka_unit_test(test_unsent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
