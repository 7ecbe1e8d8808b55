/* Lifecycle policies: matching order (task before job), events and `*`, exit codes,
 * stale requests, delayed actions and their cancellation. The job is the gang fixture:
 *   job:       PodEvicted -> RestartJob; exitCode 3 -> AbortJob
 *   worker:    TaskCompleted -> CompleteJob; [PodFailed, Unknown] -> RestartJob
 *   evaluator: PodFailed -> RestartTask; PodPending -> RestartPod after 10m */
#include "test_ctl_util.h"

static const char status[] = "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":5,"
                             "\"version\":2,\"retryCount\":0}";

static void setup(fx *f) {
  fx_init(f, "job-gang.json", status);
  fx_pg(f, "Running", NULL);
  fx_pod(f, "ps", 0, CTL_POD_RUNNING);
  for (int i = 0; i < 4; i++)
    fx_pod(f, "worker", i, CTL_POD_RUNNING);
  fx_pod(f, "evaluator", 0, CTL_POD_PENDING);
}

typedef struct {
  const char *name;
  ctl_event event;
  const char *task;
  const char *pod;
  bool has_exit;
  int exit_code;
  int version; /* request job version; -1 = not set */
  ctl_action want;
} pcase;

static const pcase cases[] = {
    {"job PodEvicted", CTL_EV_POD_EVICTED, "ps", "gang-ps-0", false, 0, 2, CTL_ACT_RESTART_JOB},
    {"job exit code", CTL_EV_POD_FAILED, "ps", "gang-ps-0", true, 3, 2, CTL_ACT_ABORT_JOB},
    {"no policy for PodFailed on ps", CTL_EV_POD_FAILED, "ps", "gang-ps-0", true, 1, 2,
     CTL_ACT_SYNC_JOB},
    {"task events list", CTL_EV_POD_FAILED, "worker", "gang-worker-1", true, 1, 2,
     CTL_ACT_RESTART_JOB},
    {"task events list Unknown", CTL_EV_UNKNOWN, "worker", "", false, 0, 2, CTL_ACT_RESTART_JOB},
    {"task before job (exit code 3 on a worker)", CTL_EV_POD_FAILED, "worker", "gang-worker-1",
     true, 3, 2, CTL_ACT_RESTART_JOB},
    {"task TaskCompleted", CTL_EV_TASK_COMPLETED, "worker", "", false, 0, 2, CTL_ACT_COMPLETE_JOB},
    {"evaluator RestartTask", CTL_EV_POD_FAILED, "evaluator", "gang-evaluator-0", true, 1, 2,
     CTL_ACT_RESTART_TASK},
    {"job policy reached through a task without match", CTL_EV_POD_EVICTED, "evaluator",
     "gang-evaluator-0", false, 0, 2, CTL_ACT_RESTART_JOB},
    {"stale version only syncs", CTL_EV_POD_EVICTED, "ps", "gang-ps-0", false, 0, 1,
     CTL_ACT_SYNC_JOB},
    {"OutOfSync syncs", CTL_EV_OUT_OF_SYNC, "worker", "gang-worker-0", false, 0, 2,
     CTL_ACT_SYNC_JOB},
    {"PodRunning syncs", CTL_EV_POD_RUNNING, "evaluator", "gang-evaluator-0", false, 0, 2,
     CTL_ACT_SYNC_JOB},
};

static void test_matching(void **state) {
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const pcase *c = &cases[i];
    fx f;
    setup(&f);
    ctl_request req = {.event = c->event,
                       .task = c->task,
                       .pod = c->pod,
                       .has_exit_code = c->has_exit,
                       .exit_code = c->exit_code,
                       .has_job_version = c->version >= 0,
                       .job_version = c->version};
    assert_int_equal(fx_sync(&f, &req), 0);
    if (f.plan.action != c->want)
      fail_msg("%s: action %s, want %s", c->name, ctl_action_name(f.plan.action),
               ctl_action_name(c->want));
    fx_close(&f);
  }
}

/* `*` matches any event; an explicit action in the request wins over policies. */
static void test_any_and_explicit(void **state) {
  json_t *j = fx_file("job-single.json");
  json_object_set_new(json_object_get(j, "spec"), "policies",
                      fx_parse("[{\"event\":\"*\",\"action\":\"TerminateJob\"}]"));
  fx f;
  fx_init_json(&f, j, "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1}");
  fx_pg(&f, "Running", NULL);
  fx_pod(&f, "main", 0, CTL_POD_RUNNING);
  ctl_request req = {.event = CTL_EV_TASK_FAILED, .task = "main"};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(f.plan.action, CTL_ACT_TERMINATE_JOB);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_TERMINATING);
  ctl_request req2 = {.event = CTL_EV_TASK_FAILED, .task = "main", .action = CTL_ACT_RESTART_JOB};
  assert_int_equal(fx_sync(&f, &req2), 0);
  assert_int_equal(f.plan.action, CTL_ACT_RESTART_JOB);
  /* a request for another incarnation of the job (different UID) only syncs */
  ctl_request req3 = {.event = CTL_EV_TASK_FAILED, .task = "main", .job_uid = "other"};
  assert_int_equal(fx_sync(&f, &req3), 0);
  assert_int_equal(f.plan.action, CTL_ACT_SYNC_JOB);
  fx_close(&f);
}

/* PodPending with a timeout becomes a delayed action; without one it never matches. */
static void test_delayed_pod_pending(void **state) {
  fx f;
  setup(&f);
  ctl_request req = {.event = CTL_EV_POD_PENDING,
                     .task = "evaluator",
                     .pod = "gang-evaluator-0",
                     .has_job_version = true,
                     .job_version = 2};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_true(f.plan.has_delayed);
  assert_int_equal(f.plan.delayed.at, FX_NOW + 600);
  assert_int_equal(f.plan.delayed.action, CTL_ACT_RESTART_POD);
  assert_int_equal(f.plan.delayed.event, CTL_EV_POD_PENDING);
  assert_string_equal(f.plan.delayed.pod, "gang-evaluator-0");
  assert_string_equal(f.plan.delayed.task, "evaluator");
  const ctl_k8s_event *e = fx_event(&f, "ExecuteAction");
  assert_non_null(e);
  assert_string_equal(e->message, "Execute action RestartPod after 10m0s");
  /* nothing is executed now */
  assert_int_equal(f.plan.action, CTL_ACT_NONE);
  assert_int_equal(f.plan.npods_delete, 0);
  assert_false(f.plan.status_changed);

  /* The timer fires: the shell replays the request with the action and delayed set. */
  ctl_request fired = req;
  fired.action = CTL_ACT_RESTART_POD;
  fired.delayed = true;
  assert_int_equal(fx_sync(&f, &fired), 0);
  assert_false(f.plan.has_delayed);
  assert_int_equal(f.plan.action, CTL_ACT_RESTART_POD);
  assert_true(fx_deleted(&f, "gang-evaluator-0"));
  assert_int_equal(f.plan.npods_delete, 1);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_RESTARTING);
  /* other delayed actions of the same pod are cancelled */
  assert_int_equal(f.plan.ncancels, 1);
  assert_int_equal(f.plan.cancels[0].scope, CTL_SCOPE_POD);
  assert_string_equal(f.plan.cancels[0].name, "gang-evaluator-0");
  assert_int_equal(f.plan.cancels[0].events, 0);
  fx_close(&f);

  /* the same event for a task without a timeout policy matches nothing */
  setup(&f);
  ctl_request ps = {.event = CTL_EV_POD_PENDING, .task = "worker", .pod = "gang-worker-0"};
  assert_int_equal(fx_sync(&f, &ps), 0);
  assert_false(f.plan.has_delayed);
  assert_int_equal(f.plan.action, CTL_ACT_SYNC_JOB);
  fx_close(&f);
}

/* A pod that leaves Pending cancels its PodPending timer; one that runs again cancels
 * PodFailed/PodEvicted timers too. */
static void test_cancellation(void **state) {
  fx f;
  setup(&f);
  ctl_request run = {.event = CTL_EV_POD_RUNNING, .task = "evaluator", .pod = "gang-evaluator-0"};
  assert_int_equal(fx_sync(&f, &run), 0);
  assert_int_equal(f.plan.ncancels, 2);
  assert_int_equal(f.plan.cancels[0].scope, CTL_SCOPE_POD);
  assert_string_equal(f.plan.cancels[0].name, "gang-evaluator-0");
  assert_int_equal(f.plan.cancels[0].events, 1u << CTL_EV_POD_PENDING);
  assert_int_equal(f.plan.cancels[1].events,
                   (1u << CTL_EV_POD_FAILED) | (1u << CTL_EV_POD_EVICTED));
  fx_close(&f);

  /* still pending (resync): nothing cancelled */
  setup(&f);
  ctl_request pend = {.event = CTL_EV_OUT_OF_SYNC, .task = "evaluator", .pod = "gang-evaluator-0"};
  assert_int_equal(fx_sync(&f, &pend), 0);
  assert_int_equal(f.plan.ncancels, 0);
  fx_close(&f);

  /* a job-wide action cancels every timer of the job; RestartTask those of the task */
  setup(&f);
  ctl_request evict = {.event = CTL_EV_POD_EVICTED, .task = "ps", .pod = "gang-ps-0"};
  assert_int_equal(fx_sync(&f, &evict), 0);
  assert_int_equal(f.plan.action, CTL_ACT_RESTART_JOB);
  bool job_scope = false;
  for (size_t i = 0; i < f.plan.ncancels; i++)
    job_scope |= f.plan.cancels[i].scope == CTL_SCOPE_JOB;
  assert_true(job_scope);
  ctl_request tf = {.event = CTL_EV_POD_FAILED,
                    .task = "evaluator",
                    .pod = "gang-evaluator-0",
                    .has_exit_code = true,
                    .exit_code = 1};
  assert_int_equal(fx_sync(&f, &tf), 0);
  assert_int_equal(f.plan.action, CTL_ACT_RESTART_TASK);
  bool task_scope = false;
  for (size_t i = 0; i < f.plan.ncancels; i++)
    task_scope |= f.plan.cancels[i].scope == CTL_SCOPE_TASK &&
                  strcmp(f.plan.cancels[i].name, "evaluator") == 0;
  assert_true(task_scope);
  fx_close(&f);
}

/* exit code policy end to end: RestartJob until maxRetry, then Failed. */
static void test_restart_until_max_retry(void **state) {
  json_t *j = fx_file("job-single.json");
  json_t *spec = json_object_get(j, "spec");
  json_object_set_new(spec, "maxRetry", json_integer(2));
  json_object_set_new(spec, "policies", fx_parse("[{\"exitCode\":3,\"action\":\"RestartJob\"}]"));
  fx f;
  fx_init_json(&f, j,
               "{\"state\":{\"phase\":\"Running\"},\"minAvailable\":1,\"retryCount\":1,"
               "\"version\":4}");
  fx_pg(&f, "Running", NULL);
  ctl_pod *p = fx_pod(&f, "main", 0, CTL_POD_FAILED);
  p->has_exit_code = true;
  p->exit_code = 3;
  ctl_request req = {.event = CTL_EV_POD_FAILED,
                     .task = "main",
                     .pod = "hello-main-0",
                     .has_exit_code = true,
                     .exit_code = 3,
                     .has_job_version = true,
                     .job_version = 4};
  assert_int_equal(fx_sync(&f, &req), 0);
  assert_int_equal(f.plan.action, CTL_ACT_RESTART_JOB);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_RESTARTING);
  assert_int_equal(f.plan.status.retry_count, 2);
  assert_int_equal(f.plan.status.version, 5);
  /* last retry: the failed pod is kept */
  assert_false(fx_deleted(&f, "hello-main-0"));
  fx_close(&f);

  /* Restarting with retryCount 3, the default maxRetry: Failed */
  fx_init_json(&f, fx_file("job-single.json"),
               "{\"state\":{\"phase\":\"Restarting\"},\"minAvailable\":1,\"retryCount\":3}");
  ctl_request sync = {.event = CTL_EV_OUT_OF_SYNC};
  assert_int_equal(fx_sync(&f, &sync), 0);
  assert_int_equal(f.plan.status.phase, CTL_PHASE_FAILED);
  fx_close(&f);
}

static void test_durations(void **state) {
  int64_t s;
  assert_int_equal(ctl_duration_parse("10m", &s), 0);
  assert_int_equal(s, 600);
  assert_int_equal(ctl_duration_parse("1h30m5s", &s), 0);
  assert_int_equal(s, 5405);
  assert_int_equal(ctl_duration_parse("1.5h", &s), 0);
  assert_int_equal(s, 5400);
  assert_int_equal(ctl_duration_parse("500ms", &s), 0);
  assert_int_equal(s, 0);
  assert_int_equal(ctl_duration_parse("10x", &s), KC_EPARSE);
  assert_int_equal(ctl_duration_parse("", &s), KC_EPARSE);
  char b[32];
  ctl_duration_format(5405, b, sizeof(b));
  assert_string_equal(b, "1h30m5s");
  ctl_duration_format(45, b, sizeof(b));
  assert_string_equal(b, "45s");
  ctl_duration_format(0, b, sizeof(b));
  assert_string_equal(b, "0s");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matching),
      cmocka_unit_test(test_any_and_explicit),
      cmocka_unit_test(test_delayed_pod_pending),
      cmocka_unit_test(test_cancellation),
      cmocka_unit_test(test_restart_until_max_retry),
      cmocka_unit_test(test_durations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
