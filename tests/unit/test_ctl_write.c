/* What the executor does with each write's answer (controller/ctl_write.c): follow-ups,
 * counters, write-through, expectations and the failure lists, without a server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

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

/* Issue 27 finding 5: a plugin's object found there already is read, not taken as made. */
static void test_object_exists_is_checked(void **state) {
  ctl_write_outcome o = res(CTL_W_OBJ_CREATE, 0);
  assert_int_equal(o.err, 0);
  assert_int_equal(o.next, CTL_WNEXT_NONE);
  /* AlreadyExists is not success, whatever ok_exists says: read whose it is first. */
  o = ctl_write_result(CTL_W_OBJ_CREATE, true, false, KC_EALREADYEXISTS, false);
  assert_int_equal(o.next, CTL_WNEXT_OBJ_GET);
  assert_int_equal(o.err, 0);
  /* Shutting down: no read, and the object is not used. */
  o = ctl_write_result(CTL_W_OBJ_CREATE, true, false, KC_EALREADYEXISTS, true);
  assert_int_equal(o.next, CTL_WNEXT_NONE);
  assert_int_equal(o.err, KC_EALREADYEXISTS);
  o = res(CTL_W_OBJ_CREATE, KC_EFORBIDDEN);
  assert_int_equal(o.err, KC_EFORBIDDEN);
  assert_int_equal(o.list, CTL_WLIST_NONE);
  /* The read could not be sent: not checked, so not used. */
  o = ctl_write_unsent(CTL_WNEXT_OBJ_GET, KC_ENOTLEADER);
  assert_int_equal(o.err, KC_ENOTLEADER);
  assert_false(o.in_the_way);
}

static json_t *meta_owned(const char *uid, bool controller) {
  return json_pack("{s:{s:s,s:[{s:s,s:s,s:s,s:s,s:b}]}}", "metadata", "name", "j-ssh",
                   "ownerReferences", "apiVersion", "batch.volcano.sh/v1alpha1", "kind", "Job",
                   "name", "j", "uid", uid, "controller", controller);
}

static void test_object_owner(void **state) {
  char msg[512];
  /* Ours (a sync before made it and its status write was lost): used. */
  json_t *m = meta_owned("u1", true);
  ctl_write_outcome o = ctl_write_owner(0, m, "u1", "Secret", "j-ssh", msg, sizeof(msg));
  json_decref(m);
  assert_int_equal(o.err, 0);
  assert_false(o.in_the_way);
  /* Another Job's (same name, a Job deleted and made again has another uid). */
  m = meta_owned("u0", true);
  o = ctl_write_owner(0, m, "u1", "Secret", "j-ssh", msg, sizeof(msg));
  json_decref(m);
  assert_int_equal(o.err, KC_EALREADYEXISTS);
  assert_false(o.conflict);
  assert_true(o.in_the_way);
  assert_non_null(strstr(msg, "Secret j-ssh is in the way"));
  assert_non_null(strstr(msg, "its controller is Job j (uid u0)"));
  /* Our uid, but not as its controller: someone else's object naming us. */
  m = meta_owned("u1", false);
  o = ctl_write_owner(0, m, "u1", "ConfigMap", "j-svc", msg, sizeof(msg));
  json_decref(m);
  assert_true(o.in_the_way);
  assert_non_null(strstr(msg, "ConfigMap j-svc"));
  assert_non_null(strstr(msg, "it has no controller"));
  /* Planted with no owner at all. */
  m = json_pack("{s:{s:s}}", "metadata", "name", "j");
  o = ctl_write_owner(0, m, "u1", "Service", "j", msg, sizeof(msg));
  json_decref(m);
  assert_int_equal(o.err, KC_EALREADYEXISTS);
  assert_true(o.in_the_way);
  /* A Job without a uid controls nothing. */
  m = meta_owned("", true);
  o = ctl_write_owner(0, m, "", "Secret", "j-ssh", msg, sizeof(msg));
  json_decref(m);
  assert_true(o.in_the_way);
  /* The read failed or the object went meanwhile: not used, no event; the next sync sees. */
  o = ctl_write_owner(KC_ENOTFOUND, NULL, "u1", "Secret", "j-ssh", msg, sizeof(msg));
  assert_int_equal(o.err, KC_ENOTFOUND);
  assert_false(o.in_the_way);
  assert_string_equal(msg, "");
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
      cmocka_unit_test(test_object_exists_is_checked),
      cmocka_unit_test(test_object_owner),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
