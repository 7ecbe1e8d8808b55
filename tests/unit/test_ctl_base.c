/* The small controllers' framework (controller/framework/ctl_base_shell.c) on a real loop, with
 * no server: the drain waits for what is in flight and no longer than its deadline, calls done
 * once, closes its timer before the owner goes; a ctl_base stops and closes through it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "ctl_base.h"

typedef struct {
  ctl_drain drain;
  int inflight;
  int done_calls;
  uint64_t done_at;
  uv_loop_t *loop;
  bool closed;
} owner;

static void on_done(void *ud) {
  owner *o = ud;
  o->done_calls++;
  o->done_at = uv_now(o->loop);
}

static void settle(uv_timer_t *t) {
  owner *o = t->data;
  o->inflight = 0;
  uv_close((uv_handle_t *)t, NULL);
}

static void on_closed(ctl_drain *d) {
  owner *o = (owner *)((char *)d - offsetof(owner, drain));
  o->closed = true;
}

/* done comes when the writes are answered, well before the deadline. */
static void test_drain_waits_for_inflight(void **state) {
  (void)state;
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  owner o = {.inflight = 2, .loop = &loop};
  uv_timer_t t;
  uv_timer_init(&loop, &t);
  t.data = &o;
  uv_timer_start(&t, settle, 60, 0);
  uint64_t t0 = uv_now(&loop);
  ctl_drain_start(&o.drain, &loop, "test", &o.inflight, 10000, on_done, &o);
  while (o.done_calls == 0)
    uv_run(&loop, UV_RUN_ONCE);
  assert_true(o.done_at - t0 >= 60);
  assert_true(o.done_at - t0 < 5000);
  assert_true(ctl_drain_close(&o.drain, on_closed));
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_true(o.closed);
  assert_false(o.drain.started);
  assert_int_equal(o.done_calls, 1);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* A write that never answers: done at the deadline, once. Starting again moves it. */
static void test_drain_deadline(void **state) {
  (void)state;
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  owner o = {.inflight = 1, .loop = &loop};
  uint64_t t0 = uv_now(&loop);
  ctl_drain_start(&o.drain, &loop, "test", &o.inflight, 50, on_done, &o);
  ctl_drain_start(&o.drain, &loop, "test", &o.inflight, 100, on_done, &o);
  while (o.done_calls == 0)
    uv_run(&loop, UV_RUN_ONCE);
  assert_true(o.done_at - t0 >= 100);
  for (int i = 0; i < 5; i++)
    uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(o.done_calls, 1);
  assert_true(ctl_drain_close(&o.drain, on_closed));
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_true(o.closed);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* Never started: nothing to close, the owner goes now; started: once its timer has closed. */
static void test_drain_free_owner(void **state) {
  (void)state;
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  owner *a = calloc(1, sizeof(*a));
  assert_non_null(a);
  assert_false(ctl_drain_close(&a->drain, on_closed));
  ctl_drain_free_owner(&a->drain, a); /* freed here: a leak or a double free fails the run */
  owner *b = calloc(1, sizeof(*b));
  assert_non_null(b);
  b->loop = &loop;
  ctl_drain_start(&b->drain, &loop, "test", &b->inflight, 1000, on_done, b);
  while (b->done_calls == 0)
    uv_run(&loop, UV_RUN_ONCE);
  ctl_drain_free_owner(&b->drain, b);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
}

typedef struct {
  ctl_base base; /* first: free_owner frees the base's address */
} ctl;

static int stopped;
static void on_stopped(void *ud) {
  (void)ud;
  stopped++;
}
static void process(ctl_base *b, const char *key) {
  ctl_base_done(b, key, 0, NULL);
}
static bool owner_freed;
static void free_owner(ctl_base *b) {
  owner_freed = true;
  free(b);
}

/* A base with no informers: it stops through the drain at once (nothing in flight) and its
 * owner is freed only after the drain's timer has closed. */
static void test_base_stop_and_close(void **state) {
  (void)state;
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  ctl *c = calloc(1, sizeof(*c));
  assert_non_null(c);
  ctl_env env = {.loop = &loop, .max_requeue = 15};
  assert_int_equal(ctl_base_init(&c->base, &env, "test-controller", NULL, 0, 1, process), 0);
  assert_int_equal(ctl_base_start(&c->base), 0);
  ctl_base_stop(&c->base, 1000, on_stopped, NULL);
  while (stopped == 0)
    uv_run(&loop, UV_RUN_ONCE);
  ctl_base_close(&c->base, free_owner);
  assert_false(owner_freed); /* the timer is still closing */
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_true(owner_freed);
  assert_int_equal(stopped, 1);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_drain_waits_for_inflight),
      cmocka_unit_test(test_drain_deadline),
      cmocka_unit_test(test_drain_free_owner),
      cmocka_unit_test(test_base_stop_and_close),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
