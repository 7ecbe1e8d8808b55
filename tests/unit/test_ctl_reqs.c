/* The job shell's pending requests (controller/job/ctl_reqs.c), without a server: which
 * requests only ask for a sync, how a new request merges with those pending (a sync is
 * implied by anything pending, a policy event drops the plain syncs before it, an equal
 * request is not queued twice, the cap), and the head's life while its plan executes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "ctl_reqs.h"
#include "kc_codec.h"
#include "kc_error.h"

#define KEY "ns/j"

static ctl_reqlist *list(ctl_reqs *r) {
  return kc_strmap_get(&r->lists, KEY);
}

/* The pending events, head first, as "OutOfSync,PodEvicted". */
static const char *events(ctl_reqs *r) {
  static char buf[512];
  buf[0] = 0;
  const ctl_reqlist *l = list(r);
  size_t n = 0;
  for (const ctl_req *q = l ? l->head : NULL; q; q = q->next, n++)
    snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", n ? "," : "",
             ctl_event_name(q->event));
  assert_int_equal(n, l ? l->n : 0);
  return buf;
}

/* Adds req, deciding whether it only asks for a sync as the shell does (no Job cached). */
static void add(ctl_reqs *r, const ctl_request *req) {
  assert_int_equal(ctl_reqs_add(r, KEY, req, ctl_request_sync_only(req, NULL)), 0);
}

static void add_event(ctl_reqs *r, ctl_event ev, const char *pod) {
  ctl_request req = {.event = ev, .pod = pod, .task = pod ? "w" : NULL};
  add(r, &req);
}

static Kiln__Job *job_with_timeout(bool timeout) {
  json_t *j = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:[{s:s,s:[{s:s,s:s}]}]}}", "apiVersion",
                        "batch.volcano.sh/v1alpha1", "kind", "Job", "metadata", "name", "j",
                        "namespace", "ns", "spec", "tasks", "name", "w", "policies", "event",
                        "PodPending", "action", "RestartJob");
  if (timeout)
    json_object_set_new(
        json_array_get(
            json_object_get(json_array_get(json_object_get(json_object_get(j, "spec"), "tasks"), 0),
                            "policies"),
            0),
        "timeout", json_string("1m"));
  Kiln__Job *job = NULL;
  char e[128];
  assert_int_equal(kc_job_decode(j, &job, e, sizeof(e)), 0);
  json_decref(j);
  return job;
}

static void test_sync_only(void **state) {
  ctl_request r = {.event = CTL_EV_OUT_OF_SYNC};
  assert_true(ctl_request_sync_only(&r, NULL));
  r.event = CTL_EV_POD_RUNNING;
  assert_true(ctl_request_sync_only(&r, NULL));
  r.event = CTL_EV_COMMAND_ISSUED;
  assert_true(ctl_request_sync_only(&r, NULL));
  r.event = CTL_EV_POD_FAILED;
  assert_false(ctl_request_sync_only(&r, NULL));
  r.event = CTL_EV_POD_EVICTED;
  assert_false(ctl_request_sync_only(&r, NULL));
  /* An explicit action or a fired delayed action is never only a sync. */
  r = (ctl_request){.event = CTL_EV_OUT_OF_SYNC, .action = CTL_ACT_ABORT_JOB};
  assert_false(ctl_request_sync_only(&r, NULL));
  r = (ctl_request){.event = CTL_EV_OUT_OF_SYNC, .delayed = true};
  assert_false(ctl_request_sync_only(&r, NULL));
  /* PodPending matters only to a policy with a timeout. */
  r = (ctl_request){.event = CTL_EV_POD_PENDING};
  assert_false(ctl_request_sync_only(&r, NULL)); /* no Job: not known */
  Kiln__Job *plain = job_with_timeout(false), *timed = job_with_timeout(true);
  assert_true(ctl_request_sync_only(&r, plain));
  assert_false(ctl_request_sync_only(&r, timed));
  kc_msg_free(plain);
  kc_msg_free(timed);
}

static void test_syncs_merge(void **state) {
  ctl_reqs r;
  ctl_reqs_init(&r);
  /* A sync-only event is kept as a plain sync... */
  add_event(&r, CTL_EV_POD_RUNNING, "j-w-0");
  assert_string_equal(events(&r), "OutOfSync");
  assert_string_equal(list(&r)->head->pod, "j-w-0");
  /* ...and implies every later one. */
  add_event(&r, CTL_EV_OUT_OF_SYNC, NULL);
  add_event(&r, CTL_EV_POD_RUNNING, "j-w-1");
  add_event(&r, CTL_EV_COMMAND_ISSUED, NULL);
  assert_string_equal(events(&r), "OutOfSync");
  ctl_reqs_close(&r);
}

static void test_policy_event_drops_pending_syncs(void **state) {
  ctl_reqs r;
  ctl_reqs_init(&r);
  add_event(&r, CTL_EV_OUT_OF_SYNC, NULL);
  add_event(&r, CTL_EV_POD_EVICTED, "j-w-0");
  /* The sync would have made the replacement pod the eviction's policy deletes again. */
  assert_string_equal(events(&r), "PodEvicted");
  add_event(&r, CTL_EV_OUT_OF_SYNC, NULL); /* implied by the eviction's sync */
  assert_string_equal(events(&r), "PodEvicted");
  add_event(&r, CTL_EV_POD_EVICTED, "j-w-0"); /* the same again */
  assert_string_equal(events(&r), "PodEvicted");
  add_event(&r, CTL_EV_POD_EVICTED, "j-w-1"); /* another pod */
  add_event(&r, CTL_EV_POD_FAILED, "j-w-0");
  assert_string_equal(events(&r), "PodEvicted,PodEvicted,PodFailed");
  /* A delayed action is kept, and so is an explicit one: they are not plain syncs. */
  ctl_request d = {.event = CTL_EV_OUT_OF_SYNC, .action = CTL_ACT_RESTART_JOB, .delayed = true};
  add(&r, &d);
  add(&r, &d);
  assert_string_equal(events(&r), "PodEvicted,PodEvicted,PodFailed,OutOfSync");
  assert_true(list(&r)->tail->delayed);
  ctl_reqs_close(&r);
}

static void test_exit_codes_differ(void **state) {
  ctl_reqs r;
  ctl_reqs_init(&r);
  ctl_request f = {.event = CTL_EV_POD_FAILED, .pod = "p", .has_exit_code = true, .exit_code = 1};
  add(&r, &f);
  add(&r, &f);
  f.exit_code = 2;
  add(&r, &f);
  f.has_exit_code = false;
  add(&r, &f);
  assert_string_equal(events(&r), "PodFailed,PodFailed,PodFailed");
  ctl_reqs_close(&r);
}

static void test_busy_head_stays(void **state) {
  ctl_reqs r;
  ctl_reqs_init(&r);
  add_event(&r, CTL_EV_OUT_OF_SYNC, NULL);
  ctl_req *h = ctl_reqs_head(&r, KEY);
  assert_non_null(h);
  ctl_reqs_begin(&r, KEY);
  /* The executing sync implies nothing about the caches after it: a new one is queued. */
  add_event(&r, CTL_EV_POD_RUNNING, "j-w-0");
  assert_string_equal(events(&r), "OutOfSync,OutOfSync");
  /* A policy event drops the queued sync, never the executing head. */
  add_event(&r, CTL_EV_POD_EVICTED, "j-w-0");
  assert_string_equal(events(&r), "OutOfSync,PodEvicted");
  assert_ptr_equal(list(&r)->head, h);
  /* The Job goes: all but the executing head. */
  ctl_reqs_drop_key(&r, KEY);
  assert_string_equal(events(&r), "OutOfSync");
  /* Its plan ends: the head goes, and so does the empty list. */
  ctl_reqs_end(&r, KEY, 0, false);
  assert_string_equal(events(&r), "");
  assert_false(ctl_reqs_finish(&r, KEY));
  assert_null(list(&r));
  ctl_reqs_close(&r);
}

static void test_failures_count(void **state) {
  ctl_reqs r;
  ctl_reqs_init(&r);
  /* An empty list runs a plain sync. */
  ctl_req *h = ctl_reqs_head(&r, KEY);
  assert_non_null(h);
  assert_int_equal(h->event, CTL_EV_OUT_OF_SYNC);
  ctl_reqs_begin(&r, KEY);
  ctl_reqs_end(&r, KEY, KC_EFORBIDDEN, false);
  assert_int_equal(h->failures, 1);
  assert_false(list(&r)->busy);
  /* A conflict is a stale cache, not the request's failure. */
  ctl_reqs_end(&r, KEY, KC_ECONFLICT, true);
  assert_int_equal(h->failures, 1);
  assert_false(ctl_req_over_limit(h, 1));
  assert_false(ctl_req_over_limit(h, -1));
  ctl_reqs_end(&r, KEY, KC_EFORBIDDEN, false);
  assert_true(ctl_req_over_limit(h, 1));
  h->action = CTL_ACT_TERMINATE_JOB; /* terminating already: not again */
  assert_false(ctl_req_over_limit(h, 1));
  assert_ptr_equal(ctl_reqs_head(&r, KEY), h);
  assert_true(ctl_reqs_finish(&r, KEY)); /* still pending */
  ctl_reqs_close(&r);
}

static void test_request_view(void **state) {
  ctl_reqs r;
  ctl_reqs_init(&r);
  ctl_request in = {.event = CTL_EV_POD_FAILED,
                    .task = "w",
                    .pod = "j-w-0",
                    .job_uid = "u1",
                    .has_job_version = true,
                    .job_version = 3,
                    .has_exit_code = true,
                    .exit_code = 137};
  add(&r, &in);
  ctl_request out = ctl_req_request(ctl_reqs_head(&r, KEY));
  assert_int_equal(out.event, CTL_EV_POD_FAILED);
  assert_string_equal(out.task, "w");
  assert_string_equal(out.pod, "j-w-0");
  assert_string_equal(out.job_uid, "u1");
  assert_true(out.has_job_version);
  assert_int_equal(out.job_version, 3);
  assert_int_equal(out.exit_code, 137);
  ctl_reqs_end(&r, KEY, 0, false);
  out = ctl_req_request(ctl_reqs_head(&r, KEY)); /* the plain sync: no strings */
  assert_null(out.task);
  assert_null(out.pod);
  assert_null(out.job_uid);
  ctl_reqs_close(&r);
}

static void test_cap(void **state) {
  ctl_reqs r;
  ctl_reqs_init(&r);
  char pod[32];
  for (int i = 0; i < CTL_REQS_MAX + 5; i++) {
    snprintf(pod, sizeof(pod), "j-w-%d", i);
    add_event(&r, CTL_EV_POD_EVICTED, pod);
  }
  assert_int_equal(list(&r)->n, CTL_REQS_MAX);
  ctl_reqs_close(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sync_only),
      cmocka_unit_test(test_syncs_merge),
      cmocka_unit_test(test_policy_event_drops_pending_syncs),
      cmocka_unit_test(test_exit_codes_differ),
      cmocka_unit_test(test_busy_head_stays),
      cmocka_unit_test(test_failures_count),
      cmocka_unit_test(test_request_view),
      cmocka_unit_test(test_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
