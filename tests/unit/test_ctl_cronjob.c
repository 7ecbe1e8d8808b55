/* The CronJob controller's decisions (ctl_cronjob_sync) on a fake clock: history, orphans and
 * stale references, suspend, zones and schedules, missed schedules, the concurrency policies
 * and the Job it creates, each with Volcano's events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_cron.h"
#include "ctl_cronjob.h"
#include "ctl_tzdb.h"
#include "kc_codec.h"
#include "kc_error.h"

static int64_t ts(const char *s) {
  int64_t ms = 0;
  assert_int_equal(kc_rfc3339_parse(s, &ms), 0);
  return ms;
}

/* A CronJob "nightly" in ns "ns", uid "cj-uid", created at 10:00:10, every minute unless
 * spec_extra changes it; status as given. */
/* ctl_cronjob_sync given the zone files cj names, read as the shell reads them. */
static int sync_cj(const json_t *cj, const ctl_cj_job *jobs, size_t n, ctl_cj_lookup_fn lookup,
                   void *ud, int64_t now_ms, ctl_cj_plan *p) {
  ctl_tzdb db;
  assert_int_equal(ctl_tzdb_read_cronjob(&db, cj), 0);
  int rc = ctl_cronjob_sync(cj, &db, jobs, n, lookup, ud, now_ms, p);
  ctl_tzdb_free(&db);
  return rc;
}

static json_t *cronjob(const char *spec_extra, const char *status) {
  char buf[2048];
  snprintf(buf, sizeof(buf),
           "{\"metadata\":{\"name\":\"nightly\",\"namespace\":\"ns\",\"uid\":\"cj-uid\","
           "\"creationTimestamp\":\"2026-12-01T10:00:10Z\"},"
           "\"spec\":{\"schedule\":\"* * * * *\",\"timeZone\":\"UTC\",\"concurrencyPolicy\":"
           "\"Allow\",\"successfulJobsHistoryLimit\":2,\"failedJobsHistoryLimit\":1,"
           "\"jobTemplate\":{\"metadata\":{\"labels\":{\"l\":\"v\"},\"annotations\":{\"a\":\"b\"}},"
           "\"spec\":{\"tasks\":[{\"name\":\"m\",\"replicas\":1}]}}%s%s},\"status\":%s}",
           spec_extra ? "," : "", spec_extra ? spec_extra : "", status ? status : "{}");
  json_error_t e;
  json_t *j = json_loads(buf, 0, &e);
  if (!j)
    fail_msg("bad fixture: %s: %s", e.text, buf);
  return j;
}

static ctl_cj_job job(const char *name, const char *uid, const char *phase, const char *created,
                      const char *finished) {
  ctl_cj_job j = {0};
  snprintf(j.name, sizeof(j.name), "%s", name);
  snprintf(j.uid, sizeof(j.uid), "%s", uid);
  snprintf(j.phase, sizeof(j.phase), "%s", phase);
  snprintf(j.finished_at, sizeof(j.finished_at), "%s", finished ? finished : "");
  j.created_ms = created ? ts(created) : 0;
  return j;
}

/* Jobs outside the CronJob's control, by name: "other" exists with uid "other-uid". */
static const char *lookup(void *ud, const char *ns, const char *name) {
  (void)ud;
  (void)ns;
  return strcmp(name, "other") == 0 ? "other-uid" : NULL;
}

static const ctl_cj_event *find_event(const ctl_cj_plan *p, const char *reason) {
  for (size_t i = 0; i < p->nev; i++)
    if (!strcmp(p->ev[i].reason, reason))
      return &p->ev[i];
  return NULL;
}

static void expect_event(const ctl_cj_plan *p, const char *type, const char *reason,
                         const char *msg) {
  const ctl_cj_event *e = find_event(p, reason);
  if (!e)
    fail_msg("no %s event", reason);
  assert_string_equal(e->type, type);
  if (msg)
    assert_string_equal(e->message, msg);
}

static void test_creates_the_due_job(void **state) {
  (void)state;
  json_t *cj = cronjob(NULL, NULL);
  ctl_cj_plan p;
  /* 10:00:40: nothing due; look again at 10:01:00.100. */
  assert_int_equal(sync_cj(cj, NULL, 0, lookup, NULL, ts("2026-12-01T10:00:40Z"), &p), 0);
  assert_null(p.create);
  assert_int_equal(p.err, 0);
  assert_true(p.requeue);
  assert_int_equal(p.requeue_ms, 20100);
  ctl_cj_plan_free(&p);
  /* 10:01:30: the 10:01 Job, named by its minute, with the template's labels and annotations,
   * the scheduled time, and a controller reference. */
  assert_int_equal(sync_cj(cj, NULL, 0, lookup, NULL, ts("2026-12-01T10:01:30Z"), &p), 0);
  assert_non_null(p.create);
  assert_true(p.scheduled_ms == ts("2026-12-01T10:01:00Z"));
  json_t *m = json_object_get(p.create, "metadata");
  char want[64];
  snprintf(want, sizeof(want), "nightly-%lld", (long long)(ts("2026-12-01T10:01:00Z") / 60000));
  assert_string_equal(json_string_value(json_object_get(m, "name")), want);
  assert_string_equal(json_string_value(json_object_get(p.create, "kind")), "Job");
  assert_string_equal(json_string_value(json_object_get(json_object_get(m, "labels"), "l")), "v");
  json_t *ann = json_object_get(m, "annotations");
  assert_string_equal(json_string_value(json_object_get(ann, "a")), "b");
  assert_string_equal(json_string_value(json_object_get(ann, CTL_CJ_SCHEDULED_ANNOTATION)),
                      "2026-12-01T10:01:00Z");
  json_t *ref = json_array_get(json_object_get(m, "ownerReferences"), 0);
  assert_string_equal(json_string_value(json_object_get(ref, "kind")), "CronJob");
  assert_string_equal(json_string_value(json_object_get(ref, "uid")), "cj-uid");
  assert_true(json_is_true(json_object_get(ref, "controller")));
  assert_true(json_is_true(json_object_get(ref, "blockOwnerDeletion")));
  assert_non_null(json_object_get(json_object_get(p.create, "spec"), "tasks"));
  /* The requeue counts from the new lastScheduleTime: 10:02:00.100. */
  assert_int_equal(p.requeue_ms, 30100);
  /* What the shell writes after the create. */
  json_t *made = json_pack("{s:{s:s, s:s, s:s, s:s}}", "metadata", "name", want, "namespace", "ns",
                           "uid", "job-1", "resourceVersion", "7");
  assert_int_equal(ctl_cj_status_add_active(p.status, made, p.scheduled_ms), 0);
  assert_string_equal(json_string_value(json_object_get(p.status, "lastScheduleTime")),
                      "2026-12-01T10:01:00Z");
  json_t *a = json_array_get(json_object_get(p.status, "active"), 0);
  assert_string_equal(json_string_value(json_object_get(a, "uid")), "job-1");
  assert_string_equal(json_string_value(json_object_get(a, "apiVersion")), CTL_CJ_API);
  json_decref(made);
  ctl_cj_plan_free(&p);
  json_decref(cj);
}

static void test_already_scheduled(void **state) {
  (void)state;
  json_t *cj = cronjob(NULL, "{\"lastScheduleTime\":\"2026-12-01T10:01:00Z\"}");
  ctl_cj_plan p;
  assert_int_equal(sync_cj(cj, NULL, 0, lookup, NULL, ts("2026-12-01T10:01:30Z"), &p), 0);
  assert_null(p.create);
  assert_int_equal(p.requeue_ms, 30100);
  ctl_cj_plan_free(&p);
  json_decref(cj);
}

static void test_finished_jobs_and_history(void **state) {
  (void)state;
  json_t *cj = cronjob(NULL, "{\"lastScheduleTime\":\"2026-12-01T10:05:00Z\",\"active\":"
                             "[{\"name\":\"j4\",\"namespace\":\"ns\",\"uid\":\"u4\"}]}");
  ctl_cj_job jobs[] = {
      job("j1", "u1", "Completed", "2026-12-01T10:01:01Z", "2026-12-01T10:01:30Z"),
      job("j2", "u2", "Completed", "2026-12-01T10:02:01Z", "2026-12-01T10:02:30Z"),
      job("j3", "u3", "Failed", "2026-12-01T10:03:01Z", "2026-12-01T10:03:30Z"),
      job("j4", "u4", "Completed", "2026-12-01T10:04:01Z", "2026-12-01T10:04:30Z"),
      job("j0", "u0", "Failed", "2026-12-01T10:00:01Z", "2026-12-01T10:00:30Z"),
      job("jt", "ut", "Terminated", "2026-12-01T10:00:02Z", "2026-12-01T10:00:31Z"),
  };
  ctl_cj_plan p;
  assert_int_equal(sync_cj(cj, jobs, 6, lookup, NULL, ts("2026-12-01T10:05:30Z"), &p), 0);
  /* j4 leaves the active list; the newest completion is lastSuccessfulTime. */
  expect_event(&p, "Normal", "SawCompletedJob", "Saw completed job: j4 in active, remove");
  assert_int_equal(json_array_size(json_object_get(p.status, "active")), 0);
  assert_string_equal(json_string_value(json_object_get(p.status, "lastSuccessfulTime")),
                      "2026-12-01T10:04:30Z");
  assert_true(p.write_status);
  /* 3 completed, limit 2: the oldest (j1); 2 failed, limit 1: the oldest (j0). Terminated
   * counts in neither. */
  assert_int_equal(p.ndel, 2);
  assert_string_equal(p.del[0].name, "j1");
  assert_string_equal(p.del[0].uid, "u1");
  assert_false(p.del[0].replace);
  assert_string_equal(p.del[1].name, "j0");
  ctl_cj_plan_free(&p);
  json_decref(cj);
}

static void test_orphans_and_stale_references(void **state) {
  (void)state;
  json_t *cj = cronjob("\"suspend\":true",
                       "{\"active\":[{\"name\":\"gone\",\"namespace\":\"ns\",\"uid\":\"g\"},"
                       "{\"name\":\"other\",\"namespace\":\"ns\",\"uid\":\"old-uid\"},"
                       "{\"name\":\"mine\",\"namespace\":\"ns\",\"uid\":\"m\"}]}");
  ctl_cj_job jobs[] = {job("mine", "m", "Running", "2026-12-01T10:01:01Z", NULL),
                       job("lost", "l", "Running", "2026-12-01T10:02:01Z", NULL)};
  ctl_cj_plan p;
  assert_int_equal(sync_cj(cj, jobs, 2, lookup, NULL, ts("2026-12-01T10:05:30Z"), &p), 0);
  expect_event(&p, "Warning", "OrphanedJob",
               "Detected orphaned job forgotted or not managed by controller: lost (UID: l)");
  assert_int_equal(json_array_size(json_object_get(p.status, "active")), 1);
  assert_string_equal(json_string_value(json_object_get(
                          json_array_get(json_object_get(p.status, "active"), 0), "name")),
                      "mine");
  int stale = 0;
  for (size_t i = 0; i < p.nev; i++)
    stale += !strcmp(p.ev[i].reason, "StaleReference");
  assert_int_equal(stale, 2);
  /* Suspended: nothing is scheduled, and no requeue. */
  assert_null(p.create);
  assert_false(p.requeue);
  ctl_cj_plan_free(&p);
  json_decref(cj);
}

static void test_bad_zone_and_schedule(void **state) {
  (void)state;
  ctl_cj_plan p;
  json_t *cj = cronjob(NULL, NULL);
  json_object_set_new(json_object_get(cj, "spec"), "timeZone", json_string("Mars/Olympus"));
  assert_int_equal(sync_cj(cj, NULL, 0, lookup, NULL, ts("2026-12-01T10:05:30Z"), &p), 0);
  expect_event(&p, "Warning", "InvalidTimeZone",
               "Invalid time zone \"Mars/Olympus\": unknown time zone Mars/Olympus");
  assert_int_equal(p.err, KC_EINVAL);
  assert_null(p.create);
  ctl_cj_plan_free(&p);
  json_object_set_new(json_object_get(cj, "spec"), "timeZone", json_string("UTC"));
  json_object_set_new(json_object_get(cj, "spec"), "schedule", json_string("5-3 * * * *"));
  assert_int_equal(sync_cj(cj, NULL, 0, lookup, NULL, ts("2026-12-01T10:05:30Z"), &p), 0);
  expect_event(&p, "Warning", "UnParseableCronJobSchedule",
               "unparseable schedule for cronjob: 5-3 * * * *");
  assert_int_equal(p.err, KC_EPARSE);
  ctl_cj_plan_free(&p);
  /* TZ in the schedule: warned about, the timeZone field ignored. */
  json_object_set_new(json_object_get(cj, "spec"), "schedule",
                      json_string("CRON_TZ=Asia/Tokyo 0 9 * * *"));
  assert_int_equal(sync_cj(cj, NULL, 0, lookup, NULL, ts("2026-12-02T00:00:30Z"), &p), 0);
  expect_event(&p, "Warning", "UnsupportedSchedule", NULL);
  assert_non_null(p.create);
  assert_true(p.scheduled_ms == ts("2026-12-02T00:00:00Z"));
  ctl_cj_plan_free(&p);
  /* A date that never comes. */
  json_object_set_new(json_object_get(cj, "spec"), "schedule", json_string("0 0 31 2 *"));
  assert_int_equal(sync_cj(cj, NULL, 0, lookup, NULL, ts("2026-12-02T00:00:30Z"), &p), 0);
  expect_event(&p, "Warning", "InvalidSchedule",
               "Error getting schedule time: time difference between two schedules is less "
               "than 1 second");
  assert_int_equal(p.err, KC_ERANGE);
  ctl_cj_plan_free(&p);
  json_decref(cj);
}

static void test_missed_and_deadline(void **state) {
  (void)state;
  ctl_cj_plan p;
  json_t *cj = cronjob(NULL, NULL);
  /* Two hours late: one Job for the latest schedule, and TooManyMissedTimes. */
  assert_int_equal(sync_cj(cj, NULL, 0, lookup, NULL, ts("2026-12-01T12:00:30Z"), &p), 0);
  expect_event(&p, "Warning", "TooManyMissedTimes",
               "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or "
               "check clock skew");
  assert_true(p.scheduled_ms == ts("2026-12-01T12:00:00Z"));
  ctl_cj_plan_free(&p);
  /* With a 20 s deadline, 30 s late is too late. */
  json_object_set_new(json_object_get(cj, "spec"), "startingDeadlineSeconds", json_integer(20));
  assert_int_equal(sync_cj(cj, NULL, 0, lookup, NULL, ts("2026-12-01T12:00:30Z"), &p), 0);
  assert_null(p.create);
  assert_null(find_event(&p, "TooManyMissedTimes"));
  ctl_cj_plan_free(&p);
  json_decref(cj);
}

static void test_concurrency(void **state) {
  (void)state;
  const char *st = "{\"lastScheduleTime\":\"2026-12-01T10:01:00Z\",\"active\":"
                   "[{\"name\":\"run\",\"namespace\":\"ns\",\"uid\":\"r\"}]}";
  ctl_cj_job running = job("run", "r", "Running", "2026-12-01T10:01:01Z", NULL);
  ctl_cj_plan p;
  json_t *cj = cronjob("\"concurrencyPolicy\":\"Forbid\"", st);
  assert_int_equal(sync_cj(cj, &running, 1, lookup, NULL, ts("2026-12-01T10:02:30Z"), &p), 0);
  expect_event(&p, "Warning", "ForbidConcurrent",
               "Skipping job creation because another job is already running");
  assert_null(p.create);
  assert_int_equal(p.ndel, 0);
  assert_int_equal(p.requeue_ms, 30100);
  ctl_cj_plan_free(&p);
  json_decref(cj);
  cj = cronjob("\"concurrencyPolicy\":\"Replace\"", st);
  assert_int_equal(sync_cj(cj, &running, 1, lookup, NULL, ts("2026-12-01T10:02:30Z"), &p), 0);
  expect_event(&p, "Warning", "ReplaceConcurrent", "Replacing active job for CronJob");
  assert_int_equal(p.ndel, 1);
  assert_string_equal(p.del[0].name, "run");
  assert_true(p.del[0].replace);
  assert_non_null(p.create);
  assert_int_equal(json_array_size(json_object_get(p.status, "active")), 0);
  ctl_cj_plan_free(&p);
  json_decref(cj);
  cj = cronjob(NULL, st);
  assert_int_equal(sync_cj(cj, &running, 1, lookup, NULL, ts("2026-12-01T10:02:30Z"), &p), 0);
  assert_non_null(p.create);
  assert_int_equal(p.ndel, 0);
  ctl_cj_plan_free(&p);
  json_decref(cj);
}

static void test_controlled_by(void **state) {
  (void)state;
  json_t *j = json_pack("{s:{s:[{s:s, s:s, s:s, s:b}]}}", "metadata", "ownerReferences", "kind",
                        "CronJob", "name", "nightly", "uid", "cj-uid", "controller", 1);
  char owner[64];
  assert_true(ctl_cj_controlled_by(j, "cj-uid", owner, sizeof(owner)));
  assert_false(ctl_cj_controlled_by(j, "other", owner, sizeof(owner)));
  assert_string_equal(owner, "nightly");
  json_decref(j);
  j = json_pack("{s:{}}", "metadata");
  assert_false(ctl_cj_controlled_by(j, "cj-uid", owner, sizeof(owner)));
  assert_string_equal(owner, "none");
  json_decref(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_creates_the_due_job),
      cmocka_unit_test(test_already_scheduled),
      cmocka_unit_test(test_finished_jobs_and_history),
      cmocka_unit_test(test_orphans_and_stale_references),
      cmocka_unit_test(test_bad_zone_and_schedule),
      cmocka_unit_test(test_missed_and_deadline),
      cmocka_unit_test(test_concurrency),
      cmocka_unit_test(test_controlled_by),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
