#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "kc_error.h"
#include "kc_metrics.h"
#include "kc_workqueue.h"

#define MS  1000000ULL
#define SEC 1000000000ULL

static uint64_t fake_now;
static uint64_t fake_clock(void *ud) {
  (void)ud;
  return fake_now;
}

static kc_workqueue *new_fake(void) {
  kc_workqueue_opts o = {.name = "test", .clock = fake_clock};
  kc_workqueue *q = NULL;
  assert_int_equal(kc_workqueue_new(NULL, &o, &q), 0);
  return q;
}

static void expect_get(kc_workqueue *q, const char *want) {
  const char *k = NULL;
  assert_int_equal(kc_workqueue_get(q, &k), 0);
  assert_string_equal(k, want);
}

static void test_dedup_and_fifo(void **state) {
  (void)state;
  fake_now = 1 * SEC;
  kc_workqueue *q = new_fake();
  assert_int_equal(kc_workqueue_add(q, "ns/a"), 0);
  assert_int_equal(kc_workqueue_add(q, "ns/b"), 0);
  assert_int_equal(kc_workqueue_add(q, "ns/a"), 0);
  assert_int_equal(kc_workqueue_len(q), 2);
  expect_get(q, "ns/a");
  expect_get(q, "ns/b");
  const char *k;
  assert_int_equal(kc_workqueue_get(q, &k), KC_ENOENT);
  kc_workqueue_done(q, "ns/a");
  kc_workqueue_done(q, "ns/b");
  assert_int_equal(kc_workqueue_len(q), 0);
  assert_int_equal(kc_workqueue_processing(q), 0);
  kc_workqueue_free(q);
}

static void test_not_processed_twice_requeue_on_done(void **state) {
  (void)state;
  kc_workqueue *q = new_fake();
  assert_int_equal(kc_workqueue_add(q, "ns/a"), 0);
  expect_get(q, "ns/a");
  /* Added twice while processing: not handed out again until done. */
  assert_int_equal(kc_workqueue_add(q, "ns/a"), 0);
  assert_int_equal(kc_workqueue_add(q, "ns/a"), 0);
  const char *k;
  assert_int_equal(kc_workqueue_len(q), 0);
  assert_int_equal(kc_workqueue_get(q, &k), KC_ENOENT);
  kc_workqueue_done(q, "ns/a");
  assert_int_equal(kc_workqueue_len(q), 1);
  expect_get(q, "ns/a");
  kc_workqueue_done(q, "ns/a");
  /* Not dirty any more: done does not re-queue. */
  assert_int_equal(kc_workqueue_len(q), 0);
  assert_int_equal(kc_workqueue_get(q, &k), KC_ENOENT);
  /* done on an unknown key is harmless. */
  kc_workqueue_done(q, "ns/zzz");
  kc_workqueue_free(q);
}

static void test_add_after_heap_order(void **state) {
  (void)state;
  fake_now = 100 * SEC;
  kc_workqueue *q = new_fake();
  assert_int_equal(kc_workqueue_add_after(q, "c", 30 * MS), 0);
  assert_int_equal(kc_workqueue_add_after(q, "a", 10 * MS), 0);
  assert_int_equal(kc_workqueue_add_after(q, "b", 20 * MS), 0);
  /* Re-adding with a later time keeps the earlier one; earlier wins. */
  assert_int_equal(kc_workqueue_add_after(q, "a", 50 * MS), 0);
  assert_int_equal(kc_workqueue_add_after(q, "c", 5 * MS), 0);
  assert_int_equal(kc_workqueue_waiting(q), 3);
  assert_int_equal(kc_workqueue_tick(q), 5 * MS);
  assert_int_equal(kc_workqueue_len(q), 0);
  fake_now += 5 * MS;
  assert_int_equal(kc_workqueue_tick(q), 5 * MS);
  expect_get(q, "c");
  fake_now += 15 * MS;
  assert_int_equal(kc_workqueue_tick(q), UINT64_MAX);
  expect_get(q, "a");
  expect_get(q, "b");
  /* add_after 0 is a plain add. */
  assert_int_equal(kc_workqueue_add_after(q, "d", 0), 0);
  assert_int_equal(kc_workqueue_len(q), 1);
  kc_workqueue_done(q, "a");
  kc_workqueue_done(q, "b");
  kc_workqueue_done(q, "c");
  kc_workqueue_free(q);
}

static void test_backoff_sequence_and_forget(void **state) {
  (void)state;
  fake_now = 0;
  kc_workqueue_opts o = {.clock = fake_clock, .backoff_max_ns = 1 * SEC};
  kc_workqueue *q;
  assert_int_equal(kc_workqueue_new(NULL, &o, &q), 0);
  uint64_t expect = 5 * MS;
  for (int i = 0; i < 12; i++) {
    assert_int_equal(kc_workqueue_num_requeues(q, "ns/j"), i);
    assert_int_equal(kc_workqueue_add_rate_limited(q, "ns/j"), 0);
    /* Not ready one ns early, ready exactly on time. */
    assert_int_equal(kc_workqueue_tick(q), expect);
    fake_now += expect - 1;
    kc_workqueue_tick(q);
    assert_int_equal(kc_workqueue_len(q), 0);
    fake_now += 1;
    kc_workqueue_tick(q);
    expect_get(q, "ns/j");
    kc_workqueue_done(q, "ns/j");
    expect = expect * 2 > 1 * SEC ? 1 * SEC : expect * 2;
  }
  /* 5,10,...,640 ms then capped at 1 s. */
  assert_int_equal(expect, 1 * SEC);
  kc_workqueue_forget(q, "ns/j");
  assert_int_equal(kc_workqueue_num_requeues(q, "ns/j"), 0);
  assert_int_equal(kc_workqueue_add_rate_limited(q, "ns/j"), 0);
  assert_int_equal(kc_workqueue_tick(q), 5 * MS);
  kc_workqueue_free(q);
}

static int hook_adds, hook_retries, hook_work;
static size_t hook_depth;
static double hook_latency;
static void h_depth(void *ud, size_t d) {
  (void)ud;
  hook_depth = d;
}
static void h_add(void *ud) {
  (void)ud;
  hook_adds++;
}
static void h_latency(void *ud, double s) {
  (void)ud;
  hook_latency = s;
}
static void h_work(void *ud, double s) {
  (void)ud;
  (void)s;
  hook_work++;
}
static void h_retry(void *ud) {
  (void)ud;
  hook_retries++;
}

static void test_hooks_and_shutdown(void **state) {
  (void)state;
  fake_now = 0;
  kc_workqueue *q = new_fake();
  kc_workqueue_hooks h = {h_depth, h_add, h_latency, h_work, h_retry, NULL};
  kc_workqueue_set_hooks(q, &h);
  kc_workqueue_add(q, "a");
  kc_workqueue_add(q, "a");
  kc_workqueue_add(q, "b");
  assert_int_equal(hook_adds, 2);
  assert_int_equal(hook_depth, 2);
  fake_now = 250 * MS;
  expect_get(q, "a");
  assert_true(hook_latency > 0.249 && hook_latency < 0.251);
  assert_int_equal(hook_depth, 1);
  fake_now = 1 * SEC;
  double total, longest;
  kc_workqueue_unfinished(q, &total, &longest);
  assert_true(longest > 0.749 && longest < 0.751);
  kc_workqueue_add_rate_limited(q, "c");
  assert_int_equal(hook_retries, 1);
  assert_int_equal(kc_workqueue_waiting(q), 1);
  kc_workqueue_add(q, "a"); /* dirty while processing */
  kc_workqueue_shutdown(q);
  assert_true(kc_workqueue_shutting_down(q));
  assert_int_equal(kc_workqueue_waiting(q), 0);
  assert_int_equal(kc_workqueue_add(q, "x"), KC_ECANCELED);
  /* Queued keys still drain, including the one re-queued by done. */
  expect_get(q, "b");
  kc_workqueue_done(q, "a");
  assert_int_equal(hook_work, 1);
  expect_get(q, "a");
  const char *k;
  assert_int_equal(kc_workqueue_get(q, &k), KC_ECANCELED);
  kc_workqueue_free(q); /* frees with keys still in processing */
}

static void expect_line(const char *text, const char *line) {
  if (strstr(text, line) == NULL)
    fail_msg("missing line %s in:\n%s", line, text);
}

static void test_metrics_binding(void **state) {
  (void)state;
  fake_now = 0;
  kc_metrics *reg;
  assert_int_equal(kc_metrics_new(&reg), 0);
  kc_workqueue *q = new_fake();
  kc_workqueue *q2;
  kc_workqueue_opts o2 = {.name = "other", .clock = fake_clock};
  assert_int_equal(kc_workqueue_new(NULL, &o2, &q2), 0);
  assert_int_equal(kc_workqueue_use_metrics(q, reg), 0);
  assert_int_equal(kc_workqueue_use_metrics(q2, reg), 0);
  kc_workqueue_add(q, "a");
  kc_workqueue_add(q, "b");
  kc_workqueue_add(q2, "z");
  fake_now = 2 * SEC;
  expect_get(q, "a");
  fake_now = 2750 * MS;
  kc_workqueue_add_rate_limited(q, "c");
  char *text;
  size_t len;
  assert_int_equal(kc_metrics_render(reg, &text, &len), 0);
  expect_line(text, "\nworkqueue_adds_total{name=\"other\"} 1\n");
  expect_line(text, "\nworkqueue_adds_total{name=\"test\"} 2\n");
  expect_line(text, "\nworkqueue_depth{name=\"test\"} 1\n");
  expect_line(text, "\nworkqueue_retries_total{name=\"test\"} 1\n");
  expect_line(text, "\nworkqueue_queue_duration_seconds_bucket{name=\"test\",le=\"1\"} 0\n");
  expect_line(text, "\nworkqueue_queue_duration_seconds_bucket{name=\"test\",le=\"10\"} 1\n");
  expect_line(text, "\nworkqueue_queue_duration_seconds_sum{name=\"test\"} 2\n");
  expect_line(text, "\nworkqueue_longest_running_processor_seconds{name=\"test\"} 0.75\n");
  expect_line(text, "\nworkqueue_unfinished_work_seconds{name=\"test\"} 0.75\n");
  expect_line(text, "# TYPE workqueue_work_duration_seconds histogram\n");
  free(text);
  kc_workqueue_done(q, "a");
  kc_workqueue_free(q);
  kc_workqueue_free(q2);
  /* The freed queue's collector is gone: rendering must not touch it. */
  assert_int_equal(kc_metrics_render(reg, &text, &len), 0);
  expect_line(text, "\nworkqueue_work_duration_seconds_count{name=\"test\"} 1\n");
  free(text);
  kc_metrics_free(reg);
}

/* ---- on a real loop ---- */

typedef struct {
  kc_workqueue *q;
  int active, max_active, processed;
  int a_count, b_count, b_active, b_max_active;
  uv_timer_t finish;
  char pending[8][16];
  int npending;
} loop_ctx;

static void finish_one(uv_timer_t *t) {
  loop_ctx *c = t->data;
  /* Completes every pending key; the first "ns/a" fails and retries. */
  for (int i = 0; i < c->npending; i++) {
    const char *key = c->pending[i];
    if (strcmp(key, "ns/a") == 0 && c->a_count == 1)
      kc_workqueue_add_rate_limited(c->q, key);
    else
      kc_workqueue_forget(c->q, key);
    c->active--;
    if (strcmp(key, "ns/b") == 0)
      c->b_active--;
    kc_workqueue_done(c->q, key);
  }
  c->npending = 0;
}

static void process(kc_workqueue *q, const char *key, void *ud) {
  loop_ctx *c = ud;
  c->active++;
  if (c->active > c->max_active)
    c->max_active = c->active;
  c->processed++;
  if (strcmp(key, "ns/a") == 0)
    c->a_count++;
  if (strcmp(key, "ns/b") == 0) {
    c->b_count++;
    if (++c->b_active > c->b_max_active)
      c->b_max_active = c->b_active;
  }
  /* Processing is asynchronous: finish on a later loop iteration. */
  snprintf(c->pending[c->npending++], sizeof(c->pending[0]), "%s", key);
  uv_timer_start(&c->finish, finish_one, 1, 0);
  /* An add of ns/b while it is processed must not start a second
   * concurrent run, but must run it once more after done. */
  if (c->b_count == 1 && strcmp(key, "ns/b") == 0) {
    kc_workqueue_add(q, "ns/b");
    kc_workqueue_add(q, "ns/b");
  }
}

static void test_on_loop(void **state) {
  (void)state;
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  loop_ctx c = {0};
  uv_timer_init(&loop, &c.finish);
  c.finish.data = &c;
  kc_workqueue_opts o = {.name = "loop", .process = process, .process_ud = &c, .workers = 2};
  assert_int_equal(kc_workqueue_new(&loop, &o, &c.q), 0);
  kc_workqueue_add(c.q, "ns/a");
  kc_workqueue_add(c.q, "ns/b");
  kc_workqueue_add(c.q, "ns/c");
  /* Nothing runs on the caller's stack. */
  assert_int_equal(c.processed, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(c.max_active, 2);
  assert_int_equal(c.a_count, 2); /* failed once, retried after backoff */
  assert_int_equal(c.b_count, 2);
  assert_int_equal(c.b_max_active, 1);
  assert_int_equal(c.processed, 5);
  assert_int_equal(c.active, 0);
  assert_int_equal(kc_workqueue_len(c.q), 0);
  assert_int_equal(kc_workqueue_num_requeues(c.q, "ns/a"), 0);
  kc_workqueue_free(c.q);
  uv_close((uv_handle_t *)&c.finish, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dedup_and_fifo),
      cmocka_unit_test(test_not_processed_twice_requeue_on_done),
      cmocka_unit_test(test_add_after_heap_order),
      cmocka_unit_test(test_backoff_sequence_and_forget),
      cmocka_unit_test(test_hooks_and_shutdown),
      cmocka_unit_test(test_metrics_binding),
      cmocka_unit_test(test_on_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
