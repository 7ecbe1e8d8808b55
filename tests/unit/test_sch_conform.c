/* Decisions where Kiln must match Volcano exactly (issue 21): the gang plugin's per-task
 * minimums with Volcano's skip rule (checked only when the job's minAvailable is at least
 * the sum of minTaskMember), row by row through the session's JobValid/JobReady/
 * JobPipelined; and what the rule means for allocate (a gang that is met is ready, so jobs
 * of one queue interleave); pods with scheduling gates; and the sla plugin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kc_codec.h"
#include "kc_error.h"
#include "sch_conf.h"
#include "sch_framework.h"
#include "test_sch_plugins_fixture.h"

static const char gang_conf[] = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n";

static const char core_conf[] = "actions: \"enqueue, allocate, backfill\"\n"
                                "tiers:\n"
                                "- plugins:\n"
                                "  - name: priority\n"
                                "  - name: gang\n"
                                "  - name: conformance\n"
                                "- plugins:\n"
                                "  - name: drf\n"
                                "  - name: predicates\n"
                                "  - name: proportion\n"
                                "  - name: nodeorder\n";

static void fx_pg_task_min(Kiln__PodGroup *pg, const char *task, int32_t min) {
  Kiln__PodGroupSpec__MinTaskMemberEntry *e = fx_alloc(sizeof(*e));
  kiln__pod_group_spec__min_task_member_entry__init(e);
  e->key = fx_str(task);
  e->value = min;
  FX_APPEND(pg->spec->min_task_member, pg->spec->n_min_task_member, e);
}

/* One row: a job "pg" with minAvailable, per-task minimums for tasks "a" and "b", and its
 * pods, and what JobValid, JobReady and JobPipelined must say. */
typedef struct row {
  const char *what;
  int32_t min_available;
  int32_t min_a, min_b; /* -1: no minTaskMember entry */
  /* One entry per pod: task name, then status letter: P pending, E pending best-effort,
   * A allocated, L pipelined, R running, S succeeded, F failed. */
  const char *pods[12];
  bool valid, ready, pipelined;
} row;

static sch_task_status status_of(char c) {
  switch (c) {
  case 'A':
    return SCH_TASK_ALLOCATED;
  case 'L':
    return SCH_TASK_PIPELINED;
  case 'S':
    return SCH_TASK_SUCCEEDED;
  case 'F':
    return SCH_TASK_FAILED;
  default:
    return SCH_TASK_PENDING;
  }
}

static void run_row(const row *w) {
  fx *f = fx_new();
  fx_node(f, "n1", 64000, 64 * GI, 110);
  Kiln__PodGroup *pg = fx_pg(f, "pg", "default", w->min_available, "Inqueue");
  if (w->min_a >= 0)
    fx_pg_task_min(pg, "a", w->min_a);
  if (w->min_b >= 0)
    fx_pg_task_min(pg, "b", w->min_b);
  for (int i = 0; w->pods[i]; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p%d", i);
    char st = w->pods[i][1];
    bool be = st == 'E';
    Kiln__Pod *p = fx_pod(f, name, "pg", be ? 0 : 1000, be ? 0 : GI, st == 'R' ? "n1" : NULL);
    p->task_name = fx_str(w->pods[i][0] == 'a' ? "a" : "b");
    if (st == 'S')
      p->phase = KILN__POD_PHASE__POD_PHASE_SUCCEEDED;
    if (st == 'F')
      p->phase = KILN__POD_PHASE__POD_PHASE_FAILED;
  }
  fx_open(f, gang_conf);
  for (int i = 0; w->pods[i]; i++) {
    char name[16];
    snprintf(name, sizeof(name), "p%d", i);
    char st = w->pods[i][1];
    if (st == 'A' || st == 'L')
      sch_job_set_status(f->snap, fx_task(f, name), status_of(st));
  }
  const sch_job *j = fx_job(f, "pg");
  sch_valid v = {.pass = true};
  bool valid = sch_session_job_valid(f->ssn, j, &v);
  if (valid != w->valid)
    fail_msg("%s: valid %d, want %d (%s)", w->what, valid, w->valid, v.message);
  if (!valid && w->min_a >= 0 && strcmp(v.reason, "NotEnoughPodsOfTask") == 0)
    assert_string_equal(v.message, "Not enough valid pods of each task for gang-scheduling");
  if (sch_session_job_ready(f->ssn, j) != w->ready)
    fail_msg("%s: ready %d, want %d", w->what, !w->ready, w->ready);
  if (sch_session_job_pipelined(f->ssn, j) != w->pipelined)
    fail_msg("%s: pipelined %d, want %d", w->what, !w->pipelined, w->pipelined);
  fx_free(f);
}

/* Gang with minTaskMember (Volcano gang.go JobValid, JobReady, JobPipelined), one row each. */
static const row gang_task_rows[] = {
    /* minAvailable 4 < 4+4: the task minimums are skipped (the PodGroup) */
    {"skip: 4 of {4,4}, all pending",
     4,
     4,
     4,
     {"aP", "aP", "aP", "aP", "bP", "bP", "bP", "bP"},
     true,
     false,
     false},
    {"skip: 4 of {4,4}, four of a allocated",
     4,
     4,
     4,
     {"aA", "aA", "aA", "aA", "bP", "bP", "bP", "bP"},
     true,
     true,
     true},
    {"skip: 4 of {4,4}, two of each allocated",
     4,
     4,
     4,
     {"aA", "aA", "aP", "aP", "bA", "bA", "bP", "bP"},
     true,
     true,
     true},
    {"skip: 4 of {4,4}, three allocated",
     4,
     4,
     4,
     {"aA", "aA", "aA", "aP", "bP", "bP", "bP", "bP"},
     true,
     false,
     false},
    /* a Job with minAvailable 1 of 2 replicas: minTaskMember {a: 2} */
    {"skip: 1 of {2}, one allocated", 1, 2, -1, {"aA", "aP"}, true, true, true},
    {"skip: 1 of {2}, only one pod left", 1, 2, -1, {"aP"}, true, false, false},
    /* minAvailable 4 of 8 replicas of one task (the host-port job) */
    {"skip: 4 of {8}, four allocated",
     4,
     8,
     -1,
     {"aA", "aA", "aA", "aA", "aP", "aP", "aP", "aP"},
     true,
     true,
     true},
    /* minAvailable == the sum: every task minimum binds */
    {"apply: 4 of {2,2}, four of a allocated",
     4,
     2,
     2,
     {"aA", "aA", "aA", "aA", "bP", "bP"},
     true,
     false,
     false},
    {"apply: 4 of {2,2}, two of each allocated",
     4,
     2,
     2,
     {"aA", "aA", "aP", "aP", "bA", "bA"},
     true,
     true,
     true},
    {"apply: 4 of {2,2}, no pod of b", 4, 2, 2, {"aP", "aP", "aP", "aP"}, false, false, false},
    {"apply: 4 of {2,2}, one pod of b", 4, 2, 2, {"aP", "aP", "aP", "bP"}, false, false, false},
    /* minAvailable above the sum: still applies */
    {"apply: 5 of {2,2}, b short", 5, 2, 2, {"aA", "aA", "aA", "aA", "bA"}, false, false, false},
    {"apply: 5 of {2,2}, b pending",
     5,
     2,
     2,
     {"aA", "aA", "aA", "aA", "bA", "bP"},
     true,
     false,
     false},
    {"apply: 5 of {2,2}, b met", 5, 2, 2, {"aA", "aA", "aA", "bA", "bA"}, true, true, true},
    /* minAvailable 3 < 2+2: skipped, so four pods of a alone are enough */
    {"skip: 3 of {2,2}, no pod of b", 3, 2, 2, {"aA", "aA", "aA", "aP"}, true, true, true},
    /* pipelined counts for JobPipelined, not for JobReady */
    {"apply: 4 of {2,2}, b pipelined", 4, 2, 2, {"aA", "aA", "bL", "bL"}, true, false, true},
    {"apply: 4 of {2,2}, a pipelined only",
     4,
     2,
     2,
     {"aL", "aL", "aL", "aL", "bP", "bP"},
     true,
     false,
     false},
    /* a best-effort pending task counts as ready for its task (Volcano's empty
     * InitResreq) */
    {"apply: 2 of {1,1}, b best-effort", 2, 1, 1, {"aA", "bE"}, true, true, true},
    /* succeeded pods count everywhere; failed ones nowhere */
    {"apply: 2 of {1,1}, b succeeded", 2, 1, 1, {"aA", "bS"}, true, true, true},
    {"apply: 2 of {1,1}, b failed", 2, 1, 1, {"aA", "bF", "aP"}, false, false, false},
    /* a minimum of 0 is ignored by JobValid and always met by the others */
    {"apply: 2 of {2,0}, no pod of b", 2, 2, 0, {"aA", "aA"}, true, true, true},
    /* no minTaskMember at all: only minAvailable */
    {"none: 2", 2, -1, -1, {"aA", "bA"}, true, true, true},
    {"none: 3, two valid", 3, -1, -1, {"aA", "bA"}, false, false, false},
};

static void test_gang_task_minimum_rows(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(gang_task_rows) / sizeof(gang_task_rows[0]); i++)
    run_row(&gang_task_rows[i]);
}

static int binds_of(const fx *f, const sch_result *r, const char *job) {
  const sch_job *j = fx_job(f, job);
  int n = 0;
  for (size_t i = 0; i < r->nbinds; i++)
    if (f->snap->tasks[r->binds[i].task].job == (int32_t)(j - f->snap->jobs))
      n++;
  return n;
}

/* The PodGroup: minMember 4, minTaskMember {4, 4}, room for 4 pods: 4 bind. */
static void test_allocate_min_member_below_task_sum(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 4000, 16 * GI, 110);
  Kiln__PodGroup *pg = fx_pg(f, "pg", "default", 4, "Inqueue");
  fx_pg_task_min(pg, "a", 4);
  fx_pg_task_min(pg, "b", 4);
  for (int i = 0; i < 8; i++) {
    char name[8];
    snprintf(name, sizeof(name), "p%d", i);
    fx_pod(f, name, "pg", 1000, GI, NULL)->task_name = fx_str(i < 4 ? "a" : "b");
  }
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 4);
  sch_result_free(r);
  fx_free(f);
}

/* Three jobs of 16 pods (minAvailable 2, minTaskMember {worker: 16} as the job controller
 * writes it) in one queue with room for 6: each gets its gang, 2/2/2. */
static void test_allocate_interleaves_ready_jobs(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 6000, 64 * GI, 110);
  const char *jobs[] = {"j1", "j2", "j3"};
  for (int k = 0; k < 3; k++) {
    Kiln__PodGroup *pg = fx_pg(f, jobs[k], "default", 2, "Inqueue");
    fx_pg_task_min(pg, "worker", 16);
    for (int i = 0; i < 16; i++) {
      char name[16];
      snprintf(name, sizeof(name), "%s-%d", jobs[k], i);
      fx_pod(f, name, jobs[k], 1000, GI, NULL)->task_name = fx_str("worker");
    }
  }
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 6);
  for (int k = 0; k < 3; k++)
    assert_int_equal(binds_of(f, r, jobs[k]), 2);
  sch_result_free(r);
  fx_free(f);
}

/* ---- scheduling gates ---- */

static Kiln__Pod *gated_pod(fx *f, const char *name, const char *group, const char *gate) {
  Kiln__Pod *p = fx_pod(f, name, group, 1000, GI, NULL);
  p->scheduling_gates = fx_alloc(sizeof(*p->scheduling_gates));
  p->scheduling_gates[0] = fx_str(gate);
  p->n_scheduling_gates = 1;
  return p;
}

/* The codec carries spec.schedulingGates into the scheduler's pod. */
static void test_codec_scheduling_gates(void **state) {
  (void)state;
  static const char js[] =
      "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"schedulingGates\":"
      "[{\"name\":\"example.com/a\"},{\"name\":\"scheduling.volcano.sh/queue-allocation-gate\"}],"
      "\"containers\":[{\"name\":\"c\"}]}}";
  json_t *j = json_loads(js, 0, NULL);
  assert_non_null(j);
  Kiln__Pod *p = NULL;
  char err[128] = "";
  assert_int_equal(kc_pod_decode(j, &p, err, sizeof(err)), 0);
  assert_int_equal(p->n_scheduling_gates, 2);
  assert_string_equal(p->scheduling_gates[1], "scheduling.volcano.sh/queue-allocation-gate");
  kc_msg_free(&p->base);
  json_decref(j);
  /* a gate without a name is refused with its path */
  j = json_loads("{\"spec\":{\"schedulingGates\":[{}]}}", 0, NULL);
  assert_int_not_equal(kc_pod_decode(j, &p, err, sizeof(err)), 0);
  assert_non_null(strstr(err, "spec.schedulingGates[0]"));
  json_decref(j);
}

/* Gated pods are never placed, not even the queue-allocation gate's, and get no
 * FailedScheduling; their PodGroup is admitted all the same (Volcano's enqueue does not look
 * at gates), so it is Inqueue. Without the gates the same gang binds. */
static void test_gated_pods_not_placed(void **state) {
  (void)state;
  for (int gated = 1; gated >= 0; gated--) {
    fx *f = fx_new();
    fx_node(f, "n1", 8000, 16 * GI, 110);
    fx_pg(f, "pg", "default", 2, "Pending");
    if (gated) {
      gated_pod(f, "p0", "pg", "example.com/wait");
      gated_pod(f, "p1", "pg", "scheduling.volcano.sh/queue-allocation-gate");
    } else {
      fx_pod(f, "p0", "pg", 1000, GI, NULL);
      fx_pod(f, "p1", "pg", 1000, GI, NULL);
    }
    fx_open(f, core_conf);
    sch_result *r = fx_run(f);
    assert_int_equal(r->nbinds, gated ? 0 : 2);
    /* Gated: admitted, not placed. Bound in this session: still Inqueue (Volcano counts a
     * pod once its bind is seen). */
    assert_int_equal(fx_pg_status(f, r, "pg")->phase, SCH_PG_INQUEUE);
    if (gated) {
      assert_int_equal(r->nwhy, 0);
      for (size_t i = 0; i < r->nevents; i++)
        assert_int_not_equal(r->events[i].kind, SCH_EVENT_POD);
    }
    sch_result_free(r);
    fx_free(f);
  }
}

/* One gated pod of a gang of 2 already admitted: the other is not bound alone. */
static void test_gated_pod_holds_gang(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 8000, 16 * GI, 110);
  fx_pg(f, "pg", "default", 2, "Inqueue");
  fx_pod(f, "p0", "pg", 1000, GI, NULL);
  gated_pod(f, "p1", "pg", "example.com/wait");
  fx_open(f, core_conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  sch_result_free(r);
  fx_free(f);
}

/* An admitted job whose pods are gated holds none of its minResources in the queue
 * (Volcano DeductSchGatedResources), so another job that fits is admitted and bound. */
static void test_gated_job_holds_no_queue_resources(void **state) {
  (void)state;
  for (int gated = 1; gated >= 0; gated--) {
    fx *f = fx_new();
    fx_node(f, "n1", 4000, 8 * GI, 110);
    Kiln__PodGroup *a = fx_pg(f, "a", "default", 4, "Inqueue");
    fx_pg_min_resources(a, 4000, 4 * GI);
    for (int i = 0; i < 4; i++) {
      char name[8];
      snprintf(name, sizeof(name), "a%d", i);
      if (gated)
        gated_pod(f, name, "a", "example.com/wait");
    }
    Kiln__PodGroup *b = fx_pg(f, "b", "default", 4, "Pending");
    fx_pg_min_resources(b, 4000, 4 * GI);
    for (int i = 0; i < 4; i++) {
      char name[8];
      snprintf(name, sizeof(name), "b%d", i);
      fx_pod(f, name, "b", 1000, GI, NULL);
    }
    fx_open(f, core_conf);
    sch_result *r = fx_run(f);
    /* without gates (its pods not created yet) a holds its minResources and b waits */
    assert_int_equal(binds_of(f, r, "b"), gated ? 4 : 0);
    assert_int_equal(binds_of(f, r, "a"), 0);
    sch_result_free(r);
    fx_free(f);
  }
}

/* A Deployment's gang whose 4 pods are all created gated (a queueing controller lifts the
 * gates once the PodGroup is Inqueue): enqueue admits it although no pod could bind yet,
 * and the next sessions, the gates gone, place all 4 and it runs. */
static void test_gated_gang_admitted_then_runs(void **state) {
  (void)state;
  for (int gated = 1; gated >= 0; gated--) {
    fx *f = fx_new();
    fx_node(f, "n1", 8000, 16 * GI, 110);
    /* before the gates are lifted the PodGroup is new; after, it is the one admitted */
    Kiln__PodGroup *pg = fx_pg(f, "pg", "default", 4, gated ? "Pending" : "Inqueue");
    fx_pg_min_resources(pg, 4000, 4 * GI);
    for (int i = 0; i < 4; i++) {
      char name[8];
      snprintf(name, sizeof(name), "p%d", i);
      if (gated)
        gated_pod(f, name, "pg", "example.com/queue-controller");
      else
        fx_pod(f, name, "pg", 1000, GI, NULL);
    }
    fx_open(f, core_conf);
    sch_result *r = fx_run(f);
    assert_int_equal(r->nbinds, gated ? 0 : 4);
    /* Inqueue both times: the session binding the 4 leaves it so (Volcano counts a pod once
     * its bind is seen; Running comes in the session after). */
    assert_int_equal(fx_pg_status(f, r, "pg")->phase, SCH_PG_INQUEUE);
    sch_result_free(r);
    fx_free(f);
  }
}

/* capacity and proportion hold none of a gated gang's requests in its queue, whether it
 * was admitted earlier or in this session (Volcano DeductSchGatedResources at session open
 * and in JobEnqueueable/JobEnqueued): gang a, first in job order, all gated, is admitted
 * into a queue of 4 cpu, and b, which needs the 4 cpu, is admitted after it and binds. */
static void test_gated_gang_holds_nothing_in_queue(void **state) {
  (void)state;
  static const char *plugins[] = {"capacity", "proportion"};
  for (int k = 0; k < 2; k++) {
    for (int admitted = 0; admitted <= 1; admitted++) {
      char conf[256];
      snprintf(conf, sizeof(conf),
               "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n"
               "  - name: gang\n- plugins:\n  - name: predicates\n  - name: %s\n",
               plugins[k]);
      fx *f = fx_new();
      fx_node(f, "n1", 8000, 16 * GI, 110);
      fx_queue_capability(fx_queue(f, "q", 1), 4000, 8 * GI);
      Kiln__PodGroup *a = fx_pg(f, "a", "q", 4, admitted ? "Inqueue" : "Pending");
      free(a->metadata->creation_timestamp);
      a->metadata->creation_timestamp = fx_str("2026-11-29T09:00:00Z");
      fx_pg_min_resources(a, 4000, 4 * GI);
      Kiln__PodGroup *b = fx_pg(f, "b", "q", 4, "Pending");
      fx_pg_min_resources(b, 4000, 4 * GI);
      for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "a%d", i);
        gated_pod(f, name, "a", "example.com/wait");
        snprintf(name, sizeof(name), "b%d", i);
        fx_pod(f, name, "b", 1000, GI, NULL);
      }
      fx_open(f, conf);
      sch_result *r = fx_run(f);
      assert_int_equal(fx_pg_status(f, r, "a")->phase, SCH_PG_INQUEUE);
      assert_int_equal(binds_of(f, r, "a"), 0);
      assert_int_equal(binds_of(f, r, "b"), 4);
      sch_result_free(r);
      fx_free(f);
    }
  }
}

/* A pod gated only by Volcano's queue-allocation gate waits for room in its queue, not for
 * someone else, so Volcano counts its request against the queue (GetSchGatedPodResources
 * leaves it out of the deduction): admitted gang a of such pods holds its minResources and
 * b, which needs the same 4 cpu, waits. With another gate as well, a holds nothing. */
static void test_queue_gated_pods_hold_their_queue(void **state) {
  (void)state;
  for (int other = 0; other <= 1; other++) {
    fx *f = fx_new();
    fx_node(f, "n1", 4000, 8 * GI, 110);
    Kiln__PodGroup *a = fx_pg(f, "a", "default", 4, "Inqueue");
    fx_pg_min_resources(a, 4000, 4 * GI);
    Kiln__PodGroup *b = fx_pg(f, "b", "default", 4, "Pending");
    fx_pg_min_resources(b, 4000, 4 * GI);
    for (int i = 0; i < 4; i++) {
      char name[8];
      snprintf(name, sizeof(name), "a%d", i);
      Kiln__Pod *p = gated_pod(f, name, "a", SCH_QUEUE_ALLOCATION_GATE);
      if (other) {
        free(p->scheduling_gates[0]);
        free(p->scheduling_gates);
        p->scheduling_gates = fx_alloc(2 * sizeof(*p->scheduling_gates));
        p->scheduling_gates[0] = fx_str("example.com/wait");
        p->scheduling_gates[1] = fx_str(SCH_QUEUE_ALLOCATION_GATE);
        p->n_scheduling_gates = 2;
      }
      snprintf(name, sizeof(name), "b%d", i);
      fx_pod(f, name, "b", 1000, GI, NULL);
    }
    fx_open(f, core_conf);
    sch_result *r = fx_run(f);
    assert_int_equal(binds_of(f, r, "b"), other ? 4 : 0);
    assert_int_equal(binds_of(f, r, "a"), 0);
    sch_result_free(r);
    fx_free(f);
  }
}

/* A gated high-priority gang takes nothing from a full cluster: preempt leaves its tasks
 * out (they could not bind on what the victims free); ungated, the same gang does. */
static void test_gated_pods_preempt_nothing(void **state) {
  (void)state;
  static const char conf[] = "actions: \"enqueue, allocate, preempt\"\ntiers:\n- plugins:\n"
                             "  - name: priority\n  - name: gang\n  - name: conformance\n"
                             "- plugins:\n  - name: predicates\n";
  for (int gated = 1; gated >= 0; gated--) {
    fx *f = fx_new();
    Kiln__PriorityClass *pc = fx_alloc(sizeof(*pc));
    kiln__priority_class__init(pc);
    pc->metadata = fx_meta(NULL, "high");
    pc->has_value = 1;
    pc->value = 1000;
    FX_APPEND(f->msg->priority_classes, f->msg->n_priority_classes, pc);
    fx_node(f, "n1", 2000, 8 * GI, 110);
    fx_pg(f, "low", "default", 1, "Running");
    fx_pod(f, "low-0", "low", 1000, GI, "n1");
    fx_pod(f, "low-1", "low", 1000, GI, "n1");
    Kiln__PodGroup *hp = fx_pg(f, "high", "default", 1, "Inqueue");
    hp->spec->priority_class_name = fx_str("high");
    Kiln__Pod *h = gated ? gated_pod(f, "high-0", "high", "example.com/wait")
                         : fx_pod(f, "high-0", "high", 1000, GI, NULL);
    h->priority = 1000;
    fx_open(f, conf);
    sch_result *r = fx_run(f);
    assert_int_equal(r->nevicts, gated ? 0 : 1);
    sch_result_free(r);
    fx_free(f);
  }
}

/* ---- sla ---- */

static void fx_pg_annotation(Kiln__PodGroup *pg, const char *k, const char *v) {
  Kiln__ObjectMeta__AnnotationsEntry *e = fx_alloc(sizeof(*e));
  kiln__object_meta__annotations_entry__init(e);
  e->key = fx_str(k);
  e->value = fx_str(v);
  FX_APPEND(pg->metadata->annotations, pg->metadata->n_annotations, e);
}

static Kiln__PodGroup *sla_job(fx *f, const char *name, const char *created, const char *sla) {
  Kiln__PodGroup *pg = fx_pg(f, name, "default", 1, "Inqueue");
  free(pg->metadata->creation_timestamp);
  pg->metadata->creation_timestamp = fx_str(created);
  if (sla)
    fx_pg_annotation(pg, "sla-waiting-time", sla);
  char pod[32];
  snprintf(pod, sizeof(pod), "%s-0", name);
  fx_pod(f, pod, name, 1000, GI, NULL);
  return pg;
}

/* One node with room for one pod, two jobs: which one gets it. */
static const char *sla_winner(const char *global, const char *old_sla, const char *new_sla) {
  static char winner[8];
  char conf[512];
  snprintf(conf, sizeof(conf),
           "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n"
           "  - name: gang\n  - name: sla\n%s- plugins:\n  - name: predicates\n",
           global ? global : "");
  fx *f = fx_new();
  fx_node(f, "n1", 1000, 8 * GI, 110);
  sla_job(f, "old", "2026-11-29T10:00:00Z", old_sla);
  sla_job(f, "new", "2026-11-29T10:05:00Z", new_sla);
  fx_open(f, conf);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  snprintf(winner, sizeof(winner), "%s", binds_of(f, r, "new") ? "new" : "old");
  sch_result_free(r);
  fx_free(f);
  return winner;
}

static void test_sla_job_order(void **state) {
  (void)state;
  static const char g2h[] = "    arguments:\n      sla-waiting-time: 2h\n";
  /* without any waiting time the older job goes first */
  assert_string_equal(sla_winner(NULL, NULL, NULL), "old");
  /* a job with a waiting time overtakes one without */
  assert_string_equal(sla_winner(NULL, NULL, "1h"), "new");
  /* both: the earlier deadline; the global argument applies to the job without its own */
  assert_string_equal(sla_winner(g2h, NULL, "1h"), "new");   /* 12:00 vs 11:05 */
  assert_string_equal(sla_winner(g2h, NULL, "3h"), "old");   /* 12:00 vs 13:05 */
  assert_string_equal(sla_winner(NULL, "1h", "50m"), "new"); /* 11:00 vs 10:55 */
  assert_string_equal(sla_winner(NULL, "1h", "1h1m"), "old");
  /* Go duration syntax, and an unparsable or non-positive value is no waiting time */
  assert_string_equal(sla_winner(NULL, NULL, "1h2m3s4ms5us6ns"), "new");
  assert_string_equal(sla_winner(NULL, NULL, "soon"), "old");
  assert_string_equal(sla_winner(NULL, NULL, "-1h"), "old");
  assert_string_equal(sla_winner(NULL, NULL, "0"), "old");
}

/* A job that has waited its time is enqueued although the queue's check in a later tier
 * (proportion) would turn it away; one still within its time, or without one, is not. */
static void test_sla_enqueue_overrides_quota(void **state) {
  (void)state;
  static const char conf[] = "actions: \"enqueue\"\ntiers:\n- plugins:\n  - name: gang\n"
                             "  - name: sla\n- plugins:\n  - name: proportion\n";
  const char *slas[] = {"1s", "100000h", NULL};
  const sch_pg_phase want[] = {SCH_PG_INQUEUE, SCH_PG_PENDING, SCH_PG_PENDING};
  for (int k = 0; k < 3; k++) {
    fx *f = fx_new();
    fx_node(f, "n1", 2000, 8 * GI, 110);
    Kiln__PodGroup *pg = fx_pg(f, "big", "default", 1, "Pending");
    fx_pg_min_resources(pg, 4000, GI);
    if (slas[k])
      fx_pg_annotation(pg, "sla-waiting-time", slas[k]);
    fx_pod(f, "big-0", "big", 4000, GI, NULL);
    fx_open(f, conf);
    sch_result *r = fx_run(f);
    if (fx_pg_status(f, r, "big")->phase != want[k])
      fail_msg("sla %s: phase %d, want %d", slas[k] ? slas[k] : "none",
               fx_pg_status(f, r, "big")->phase, want[k]);
    sch_result_free(r);
    fx_free(f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gang_task_minimum_rows),
      cmocka_unit_test(test_allocate_min_member_below_task_sum),
      cmocka_unit_test(test_allocate_interleaves_ready_jobs),
      cmocka_unit_test(test_codec_scheduling_gates),
      cmocka_unit_test(test_gated_pods_not_placed),
      cmocka_unit_test(test_gated_pod_holds_gang),
      cmocka_unit_test(test_gated_job_holds_no_queue_resources),
      cmocka_unit_test(test_gated_gang_admitted_then_runs),
      cmocka_unit_test(test_gated_gang_holds_nothing_in_queue),
      cmocka_unit_test(test_queue_gated_pods_hold_their_queue),
      cmocka_unit_test(test_gated_pods_preempt_nothing),
      cmocka_unit_test(test_sla_job_order),
      cmocka_unit_test(test_sla_enqueue_overrides_quota),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
