/* The phase machine (reference 2.4): every row of the table as a case, plus a sweep over
 * all (phase, action) cells checking the invariants that hold everywhere. */
#include "test_ctl_util.h"

/* Two workers, gang of 2, maxRetry 3. */
static const char job_text[] =
    "{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\","
    "\"metadata\":{\"name\":\"st\",\"namespace\":\"ns1\",\"uid\":\"u1\","
    "\"creationTimestamp\":\"2026-11-18T00:00:00Z\"},"
    "\"spec\":{\"minAvailable\":2,\"maxRetry\":3,\"queue\":\"default\",%s"
    "\"tasks\":[{\"name\":\"w\",\"replicas\":2,\"template\":{\"spec\":{\"containers\":"
    "[{\"name\":\"c\",\"image\":\"busybox\"}]}}}]}}";

typedef struct {
  const char *name;
  const char *phase;
  ctl_action action;
  ctl_pod_phase p0, p1; /* phases of st-w-0 and st-w-1; CTL_POD_PHASE_COUNT = absent */
  bool p1_deleting;
  int retry;              /* status.retryCount before */
  const char *spec_extra; /* extra spec fields, e.g. "\"minSuccess\":1," */
  /* expectations */
  ctl_phase next;
  bool del0, del1;
  int version; /* status.version after (before: 1) */
  int retry_after;
  bool pg_delete;
  int creates;
} row;

#define NOPOD CTL_POD_PHASE_COUNT
#define R     CTL_POD_RUNNING
#define S     CTL_POD_SUCCEEDED
#define F     CTL_POD_FAILED
#define P     CTL_POD_PENDING

static const row rows[] = {
    /* Pending */
    {"Pending RestartJob", "Pending", CTL_ACT_RESTART_JOB, R, S, false, 0, "", CTL_PHASE_RESTARTING,
     true, true, 2, 1, true, 0},
    {"Pending RestartTask", "Pending", CTL_ACT_RESTART_TASK, R, S, false, 0, "",
     CTL_PHASE_RESTARTING, true, true, 1, 1, false, 0},
    {"Pending RestartPod", "Pending", CTL_ACT_RESTART_POD, R, S, false, 0, "", CTL_PHASE_RESTARTING,
     true, false, 1, 1, false, 0},
    {"Pending AbortJob", "Pending", CTL_ACT_ABORT_JOB, R, S, false, 0, "", CTL_PHASE_ABORTING, true,
     false, 2, 0, true, 0},
    {"Pending CompleteJob", "Pending", CTL_ACT_COMPLETE_JOB, R, S, false, 0, "",
     CTL_PHASE_COMPLETING, true, false, 2, 0, true, 0},
    {"Pending TerminateJob", "Pending", CTL_ACT_TERMINATE_JOB, R, F, false, 0, "",
     CTL_PHASE_TERMINATING, true, false, 2, 0, true, 0},
    {"Pending SyncJob gang started", "Pending", CTL_ACT_SYNC_JOB, R, R, false, 0, "",
     CTL_PHASE_RUNNING, false, false, 1, 0, false, 0},
    {"Pending SyncJob gang short", "Pending", CTL_ACT_SYNC_JOB, R, P, false, 0, "",
     CTL_PHASE_PENDING, false, false, 1, 0, false, 0},
    {"Pending SyncJob creates", "Pending", CTL_ACT_SYNC_JOB, NOPOD, NOPOD, false, 0, "",
     CTL_PHASE_PENDING, false, false, 1, 0, false, 2},
    {"Pending ResumeJob syncs", "Pending", CTL_ACT_RESUME_JOB, R, NOPOD, false, 0, "",
     CTL_PHASE_PENDING, false, false, 1, 0, false, 1},
    {"Pending RestartPartition without partition ids", "Pending", CTL_ACT_RESTART_PARTITION, R, S,
     false, 0, "", CTL_PHASE_RESTARTING, false, false, 1, 1, false, 0},
    /* Running */
    {"Running RestartJob", "Running", CTL_ACT_RESTART_JOB, R, R, false, 0, "", CTL_PHASE_RESTARTING,
     true, true, 2, 1, true, 0},
    {"Running RestartJob last retry keeps finished", "Running", CTL_ACT_RESTART_JOB, R, F, false, 2,
     "", CTL_PHASE_RESTARTING, true, false, 2, 3, true, 0},
    {"Running RestartTask", "Running", CTL_ACT_RESTART_TASK, R, R, false, 0, "",
     CTL_PHASE_RESTARTING, true, true, 1, 1, false, 0},
    {"Running RestartPod", "Running", CTL_ACT_RESTART_POD, R, R, false, 0, "", CTL_PHASE_RESTARTING,
     true, false, 1, 1, false, 0},
    {"Running AbortJob", "Running", CTL_ACT_ABORT_JOB, R, S, false, 0, "", CTL_PHASE_ABORTING, true,
     false, 2, 0, true, 0},
    {"Running TerminateJob", "Running", CTL_ACT_TERMINATE_JOB, R, R, false, 0, "",
     CTL_PHASE_TERMINATING, true, true, 2, 0, true, 0},
    {"Running CompleteJob", "Running", CTL_ACT_COMPLETE_JOB, R, S, false, 0, "",
     CTL_PHASE_COMPLETING, true, false, 2, 0, true, 0},
    {"Running SyncJob all succeeded", "Running", CTL_ACT_SYNC_JOB, S, S, false, 0, "",
     CTL_PHASE_COMPLETED, false, false, 1, 0, false, 0},
    {"Running SyncJob one failed", "Running", CTL_ACT_SYNC_JOB, S, F, false, 0, "",
     CTL_PHASE_FAILED, false, false, 1, 0, false, 0},
    {"Running SyncJob minSuccess reached", "Running", CTL_ACT_SYNC_JOB, S, R, false, 0,
     "\"minSuccess\":1,", CTL_PHASE_COMPLETED, false, false, 1, 0, false, 0},
    {"Running SyncJob minSuccess missed", "Running", CTL_ACT_SYNC_JOB, F, F, false, 0,
     "\"minSuccess\":1,", CTL_PHASE_FAILED, false, false, 1, 0, false, 0},
    {"Running SyncJob still running", "Running", CTL_ACT_SYNC_JOB, R, S, false, 0, "",
     CTL_PHASE_RUNNING, false, false, 1, 0, false, 0},
    {"Running SyncJob gang lost", "Running", CTL_ACT_SYNC_JOB, R, P, false, 0, "",
     CTL_PHASE_PENDING, false, false, 1, 0, false, 0},
    {"Running RestartPartition without partition ids", "Running", CTL_ACT_RESTART_PARTITION, R, R,
     false, 0, "", CTL_PHASE_RESTARTING, false, false, 1, 1, false, 0},
    /* Restarting */
    {"Restarting SyncJob pods gone", "Restarting", CTL_ACT_SYNC_JOB, NOPOD, NOPOD, false, 1, "",
     CTL_PHASE_PENDING, false, false, 1, 1, false, 2},
    {"Restarting SyncJob still terminating", "Restarting", CTL_ACT_SYNC_JOB, R, R, true, 1, "",
     CTL_PHASE_RESTARTING, false, false, 1, 1, false, 0},
    {"Restarting SyncJob retries exhausted", "Restarting", CTL_ACT_SYNC_JOB, NOPOD, NOPOD, false, 3,
     "", CTL_PHASE_FAILED, false, false, 1, 3, false, 2},
    {"Restarting RestartPod", "Restarting", CTL_ACT_RESTART_POD, R, R, false, 1, "",
     CTL_PHASE_RESTARTING, true, false, 1, 1, false, 0},
    {"Restarting RestartJob", "Restarting", CTL_ACT_RESTART_JOB, R, R, false, 1, "",
     CTL_PHASE_RESTARTING, true, true, 2, 1, true, 0},
    {"Restarting AbortJob kills all", "Restarting", CTL_ACT_ABORT_JOB, NOPOD, NOPOD, false, 1, "",
     CTL_PHASE_PENDING, false, false, 2, 1, true, 0},
    {"Restarting RestartPartition", "Restarting", CTL_ACT_RESTART_PARTITION, R, R, false, 1, "",
     CTL_PHASE_PENDING, false, false, 1, 1, false, 0},
    {"Completed RestartPartition ignored", "Completed", CTL_ACT_RESTART_PARTITION, S, S, false, 0,
     "", CTL_PHASE_COMPLETED, false, false, 2, 0, true, 0},
    /* Aborting */
    {"Aborting ResumeJob", "Aborting", CTL_ACT_RESUME_JOB, R, S, false, 0, "", CTL_PHASE_RESTARTING,
     true, false, 2, 1, true, 0},
    {"Aborting SyncJob pods left", "Aborting", CTL_ACT_SYNC_JOB, R, S, false, 0, "",
     CTL_PHASE_ABORTING, true, false, 2, 0, true, 0},
    {"Aborting SyncJob done", "Aborting", CTL_ACT_SYNC_JOB, S, F, false, 0, "", CTL_PHASE_ABORTED,
     false, false, 2, 0, true, 0},
    /* Aborted */
    {"Aborted ResumeJob", "Aborted", CTL_ACT_RESUME_JOB, S, NOPOD, false, 0, "",
     CTL_PHASE_RESTARTING, false, false, 2, 1, true, 0},
    {"Aborted SyncJob", "Aborted", CTL_ACT_SYNC_JOB, R, S, false, 0, "", CTL_PHASE_ABORTED, true,
     false, 2, 0, true, 0},
    /* Completing / Terminating */
    {"Completing pods left", "Completing", CTL_ACT_SYNC_JOB, R, S, false, 0, "",
     CTL_PHASE_COMPLETING, true, false, 2, 0, true, 0},
    {"Completing done", "Completing", CTL_ACT_SYNC_JOB, S, S, false, 0, "", CTL_PHASE_COMPLETED,
     false, false, 2, 0, true, 0},
    {"Terminating pods left", "Terminating", CTL_ACT_RESTART_JOB, R, F, false, 0, "",
     CTL_PHASE_TERMINATING, true, false, 2, 0, true, 0},
    {"Terminating done", "Terminating", CTL_ACT_SYNC_JOB, F, NOPOD, false, 0, "",
     CTL_PHASE_TERMINATED, false, false, 2, 0, true, 0},
    /* Finished */
    {"Completed RestartJob ignored", "Completed", CTL_ACT_RESTART_JOB, S, S, false, 0, "",
     CTL_PHASE_COMPLETED, false, false, 2, 0, true, 0},
    {"Terminated ResumeJob ignored", "Terminated", CTL_ACT_RESUME_JOB, F, NOPOD, false, 0, "",
     CTL_PHASE_TERMINATED, false, false, 2, 0, true, 0},
    {"Failed SyncJob soft kill", "Failed", CTL_ACT_SYNC_JOB, R, F, false, 0, "", CTL_PHASE_FAILED,
     true, false, 2, 0, true, 0},
};

static void setup(fx *f, const char *phase, int retry, const char *spec_extra) {
  char text[2048], status[256];
  snprintf(text, sizeof(text), job_text, spec_extra);
  snprintf(status, sizeof(status),
           "{\"state\":{\"phase\":\"%s\",\"lastTransitionTime\":\"2026-11-18T00:10:00Z\"},"
           "\"minAvailable\":2,\"version\":1,\"retryCount\":%d}",
           phase, retry);
  fx_init_json(f, fx_parse(text), status);
  fx_pg(f, "Inqueue", NULL);
}

static void run_row(const row *r) {
  fx f;
  setup(&f, r->phase, r->retry, r->spec_extra);
  if (r->p0 != NOPOD)
    fx_pod(&f, "w", 0, r->p0);
  if (r->p1 != NOPOD) {
    ctl_pod *p = fx_pod(&f, "w", 1, r->p1);
    if (r->p1_deleting)
      p->deletion_ts = FX_NOW - 1;
  }
  ctl_request req = {.action = r->action, .task = "w", .pod = "st-w-0"};
  assert_int_equal(fx_sync(&f, &req), 0);
  if (f.plan.status.phase != r->next)
    fail_msg("%s: phase %s, want %s", r->name, ctl_phase_name(f.plan.status.phase),
             ctl_phase_name(r->next));
  if (fx_deleted(&f, "st-w-0") != r->del0 || fx_deleted(&f, "st-w-1") != r->del1)
    fail_msg("%s: deleted w-0 %d w-1 %d, want %d %d", r->name, fx_deleted(&f, "st-w-0"),
             fx_deleted(&f, "st-w-1"), r->del0, r->del1);
  if (f.plan.status.version != r->version)
    fail_msg("%s: version %d, want %d", r->name, f.plan.status.version, r->version);
  if (f.plan.status.retry_count != r->retry_after)
    fail_msg("%s: retryCount %d, want %d", r->name, f.plan.status.retry_count, r->retry_after);
  if (f.plan.podgroup_delete != r->pg_delete)
    fail_msg("%s: podgroup delete %d, want %d", r->name, f.plan.podgroup_delete, r->pg_delete);
  if ((int)json_array_size(f.plan.pods_create) != r->creates)
    fail_msg("%s: %zu pods created, want %d", r->name, json_array_size(f.plan.pods_create),
             r->creates);
  /* A phase change stamps the time and ends the condition list with the new phase. */
  if (r->next != ctl_phase_parse(r->phase)) {
    assert_true(f.plan.status_changed);
    assert_int_equal(f.plan.status.last_transition, FX_NOW);
    assert_true(f.plan.status.nconds > 0);
    assert_int_equal(f.plan.status.conds[f.plan.status.nconds - 1].phase, r->next);
  }
  /* Non-sync actions are announced. */
  const ctl_k8s_event *e = fx_event(&f, "ExecuteAction");
  if (r->action != CTL_ACT_SYNC_JOB) {
    assert_non_null(e);
    char want[64];
    snprintf(want, sizeof(want), "Start to execute action %s ", ctl_action_name(r->action));
    assert_string_equal(e->message, want);
  } else {
    assert_null(e);
  }
  fx_close(&f);
}

static void test_rows(void **state) {
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
    run_row(&rows[i]);
}

/* Every cell: finished phases never move, kills count deleted pods as terminating, and
 * status counts add up to the pods. */
static void test_all_cells(void **state) {
  for (int ph = 0; ph < CTL_PHASE_COUNT; ph++) {
    for (int a = CTL_ACT_SYNC_JOB; a < CTL_ACT_COUNT; a++) {
      fx f;
      setup(&f, ctl_phase_name((ctl_phase)ph), 0, "");
      fx_pod(&f, "w", 0, R);
      fx_pod(&f, "w", 1, S);
      ctl_request req = {.action = (ctl_action)a, .task = "w", .pod = "st-w-1"};
      assert_int_equal(fx_sync(&f, &req), 0);
      const ctl_status *st = &f.plan.status;
      if (ph == CTL_PHASE_COMPLETED || ph == CTL_PHASE_TERMINATED || ph == CTL_PHASE_FAILED)
        assert_int_equal(st->phase, ph);
      int32_t sum =
          st->pending + st->running + st->succeeded + st->failed + st->unknown + st->terminating;
      assert_int_equal(sum, 2);
      assert_int_equal(st->terminating, (int32_t)f.plan.npods_delete);
      assert_int_equal(f.plan.old_phase, ph);
      fx_close(&f);
    }
  }
}

/* RestartPartition kills the target pod's partition (by its partition-id label) and keeps
 * the PodGroup, in each phase that accepts it. */
static void test_restart_partition(void **state) {
  static const struct {
    const char *phase;
    int retry;
    ctl_phase next;
    int retry_after;
  } cases[] = {
      {"Pending", 0, CTL_PHASE_RESTARTING, 1},
      {"Running", 0, CTL_PHASE_RESTARTING, 1},
      {"Restarting", 1, CTL_PHASE_RESTARTING, 1}, /* one of two pods terminating < minAvailable */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    fx f;
    setup(&f, cases[i].phase, cases[i].retry, "");
    ctl_pod *p0 = fx_pod(&f, "w", 0, R);
    ctl_pod *p1 = fx_pod(&f, "w", 1, F);
    p0->has_partition = p1->has_partition = true;
    p0->partition = 0;
    p1->partition = 1;
    ctl_request req = {.action = CTL_ACT_RESTART_PARTITION, .task = "w", .pod = "st-w-1"};
    assert_int_equal(fx_sync(&f, &req), 0);
    assert_false(fx_deleted(&f, "st-w-0"));
    assert_true(fx_deleted(&f, "st-w-1"));
    assert_int_equal(f.plan.status.phase, cases[i].next);
    assert_int_equal(f.plan.status.retry_count, cases[i].retry_after);
    assert_int_equal(f.plan.status.version, 1);
    assert_false(f.plan.podgroup_delete);
    fx_close(&f);
  }
}

static void test_names_roundtrip(void **state) {
  for (int i = 0; i < CTL_PHASE_COUNT; i++)
    assert_int_equal(ctl_phase_parse(ctl_phase_name((ctl_phase)i)), i);
  for (int i = 1; i < CTL_ACT_COUNT; i++)
    assert_int_equal(ctl_action_parse(ctl_action_name((ctl_action)i)), i);
  for (int i = 1; i < CTL_EV_COUNT; i++)
    assert_int_equal(ctl_event_parse(ctl_event_name((ctl_event)i)), i);
  assert_int_equal(ctl_phase_parse(""), CTL_PHASE_PENDING);
  assert_int_equal(ctl_action_parse("Bogus"), CTL_ACT_NONE);
  assert_int_equal(ctl_action_parse("RestartPartition"), CTL_ACT_RESTART_PARTITION);
}

/* An empty phase initialises the status: Pending, minAvailable, one condition. */
static void test_init_status(void **state) {
  fx f;
  fx_init(&f, "job-gang.json", NULL);
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_PENDING);
  assert_int_equal(f.plan.status.min_available, 5);
  assert_int_equal(f.plan.status.nconds, 1);
  assert_int_equal(f.plan.status.conds[0].phase, CTL_PHASE_PENDING);
  assert_true(f.plan.status_changed);
  json_t *st = ctl_status_to_json(&f.plan.status);
  assert_string_equal(jstr(st, "state.phase"), "Pending");
  /* Volcano's counters are omitempty: a zero is absent, a non-zero one is written. */
  assert_int_equal(json_integer_value(json_object_get(st, "minAvailable")), 5);
  static const char *const zero[] = {"pending",     "running", "succeeded", "failed",
                                     "terminating", "unknown", "version",   "retryCount"};
  for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
    if (json_object_get(st, zero[i]))
      fail_msg("status.%s is written as 0; Volcano leaves a zero counter out", zero[i]);
  assert_string_equal(json_string_value(json_object_get(
                          json_array_get(json_object_get(st, "conditions"), 0), "status")),
                      "Pending");
  json_decref(st);
  /* No PodGroup yet: it is created, no pod is. */
  assert_non_null(f.plan.podgroup);
  assert_false(f.plan.podgroup_update);
  assert_int_equal(json_array_size(f.plan.pods_create), 0);
  fx_close(&f);
}

/* Repeated phases keep one condition each, the newest last. */
static void test_condition_dedup(void **state) {
  fx f;
  fx_init_json(&f,
               fx_parse("{\"metadata\":{\"name\":\"c\",\"uid\":\"u\"},\"spec\":{\"tasks\":"
                        "[{\"name\":\"t\",\"replicas\":1}]}}"),
               "{\"state\":{\"phase\":\"Running\"},\"conditions\":[{\"status\":\"Pending\","
               "\"lastTransitionTime\":\"2026-11-18T00:00:00Z\"},{\"status\":\"Running\","
               "\"lastTransitionTime\":\"2026-11-18T00:01:00Z\"},{\"status\":\"Restarting\","
               "\"lastTransitionTime\":\"2026-11-18T00:02:00Z\"}]}");
  fx_pg(&f, "Running", NULL);
  fx_pod(&f, "t", 0, CTL_POD_PENDING);
  assert_int_equal(fx_sync_action(&f, CTL_ACT_SYNC_JOB), 0);
  /* one pending pod > 1 - 1: back to Pending */
  assert_int_equal(f.plan.status.phase, CTL_PHASE_PENDING);
  assert_int_equal(f.plan.status.nconds, 3);
  assert_int_equal(f.plan.status.conds[0].phase, CTL_PHASE_RUNNING);
  assert_int_equal(f.plan.status.conds[1].phase, CTL_PHASE_RESTARTING);
  assert_int_equal(f.plan.status.conds[2].phase, CTL_PHASE_PENDING);
  fx_close(&f);
}

/* runningDuration = lastTransitionTime - creationTimestamp on a full kill. */
static void test_running_duration(void **state) {
  fx f;
  setup(&f, "Running", 0, "");
  fx_pod(&f, "w", 0, R);
  assert_int_equal(fx_sync_action(&f, CTL_ACT_ABORT_JOB), 0);
  assert_true(f.plan.status.has_running_duration);
  assert_int_equal(f.plan.status.running_duration, 600);
  json_t *st = ctl_status_to_json(&f.plan.status);
  assert_string_equal(jstr(st, "runningDuration"), "10m0s");
  json_decref(st);
  fx_close(&f);
}

/* jansson's allocator failing at the k-th allocation, for every k until the encoding
 * succeeds: the status is either complete or absent (NULL), never missing fields, since a
 * PUT of it replaces the whole status. */
static int alloc_left = -1;

static void *failing_malloc(size_t n) {
  if (alloc_left == 0)
    return NULL;
  if (alloc_left > 0)
    alloc_left--;
  return malloc(n);
}

static void test_status_json_out_of_memory(void **state) {
  fx f;
  setup(&f, "Running", 0, "");
  fx_pod(&f, "w", 0, R);
  assert_int_equal(fx_sync_action(&f, CTL_ACT_ABORT_JOB), 0);
  ctl_task_count *tc = ctl_status_task(&f.plan.status, "w");
  assert_non_null(tc);
  tc->count[0] = 1;
  json_t *full = ctl_status_to_json(&f.plan.status);
  assert_non_null(full);
  assert_non_null(json_object_get(full, "conditions"));
  int k;
  for (k = 0; k < 10000; k++) {
    alloc_left = k;
    json_set_alloc_funcs(failing_malloc, free);
    json_t *st = ctl_status_to_json(&f.plan.status);
    bool exhausted = alloc_left == 0;
    alloc_left = -1;
    json_set_alloc_funcs(malloc, free);
    if (st) {
      if (!json_equal(st, full)) {
        char *got = json_dumps(st, JSON_SORT_KEYS);
        fail_msg("allocation %d failed and the status came back incomplete: %s", k, got);
      }
      json_decref(st);
      if (!exhausted)
        break; /* no allocation failed: every k has been tried */
    }
  }
  assert_true(k > 10); /* the sweep did fail allocations */
  json_decref(full);
  fx_close(&f);
}

/* A status at the top of int32 (written by another hand: the counters are the status's, and the
 * schema bounds them only by int32) stays there through a restart instead of wrapping to
 * negative (found by fuzz_jobsync; undefined behaviour before). */
static void test_counters_saturate(void **state) {
  fx f;
  char text[2048];
  snprintf(text, sizeof(text), job_text, "");
  json_t *j = fx_parse(text);
  json_object_set_new(json_object_get(j, "spec"), "maxRetry", json_integer(INT32_MAX));
  fx_init_json(&f, j,
               "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":2,"
               "\"version\":2147483647,\"retryCount\":2147483646}");
  fx_pg(&f, "Running", NULL);
  fx_pod(&f, "w", 0, CTL_POD_RUNNING);
  assert_int_equal(fx_sync_action(&f, CTL_ACT_RESTART_JOB), 0);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_RESTARTING);
  assert_int_equal(f.plan.status.version, INT32_MAX);
  assert_int_equal(f.plan.status.retry_count, INT32_MAX);
  fx_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows),
      cmocka_unit_test(test_all_cells),
      cmocka_unit_test(test_restart_partition),
      cmocka_unit_test(test_names_roundtrip),
      cmocka_unit_test(test_init_status),
      cmocka_unit_test(test_condition_dedup),
      cmocka_unit_test(test_running_duration),
      cmocka_unit_test(test_status_json_out_of_memory),
      cmocka_unit_test(test_counters_saturate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
