/* The ssh key pool (controller/job/ctl_keypool_shell.c) on a real loop and libuv's thread
 * pool: taking never waits, pairs are made on worker threads and the loop keeps turning
 * meanwhile, the pool refills, a failing random source is reported and not polled, and
 * freeing it with generations queued and running leaks nothing (ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "ctl_keypool_shell.h"
#include "kc_container.h"
#include "kc_error.h"

#define MS 1000000ull

typedef struct {
  uv_loop_t loop;
  uv_timer_t tick;
  ctl_keypool *p;
  uint64_t last_ns, max_gap_ns, deadline_ns;
  bool (*until)(const ctl_keypool_stats *st, void *arg);
  void *arg;
  bool met;
} fx;

static void fx_init(fx *f) {
  memset(f, 0, sizeof(*f));
  assert_int_equal(uv_loop_init(&f->loop), 0);
  assert_int_equal(uv_timer_init(&f->loop, &f->tick), 0);
}

/* Frees the pool and runs the loop until every generation's callback has run. */
static void fx_close(fx *f) {
  ctl_keypool_free(f->p);
  f->p = NULL;
  uv_close((uv_handle_t *)&f->tick, NULL);
  assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&f->loop), 0);
}

/* Every millisecond: the longest gap between two ticks is how long the loop was held. */
static void tick_cb(uv_timer_t *t) {
  fx *f = container_of(t, fx, tick);
  uint64_t now = uv_hrtime();
  if (now - f->last_ns > f->max_gap_ns)
    f->max_gap_ns = now - f->last_ns;
  f->last_ns = now;
  ctl_keypool_stats st;
  ctl_keypool_get_stats(f->p, &st);
  f->met = f->until(&st, f->arg);
  if (f->met || now > f->deadline_ns) {
    uv_timer_stop(t);
    uv_stop(&f->loop);
  }
}

static void run_until(fx *f, bool (*until)(const ctl_keypool_stats *, void *), void *arg,
                      uint64_t max_ms) {
  f->until = until;
  f->arg = arg;
  f->met = false;
  f->last_ns = uv_hrtime();
  f->deadline_ns = f->last_ns + max_ms * MS;
  assert_int_equal(uv_timer_start(&f->tick, tick_cb, 1, 1), 0);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_true(f->met);
}

static bool full(const ctl_keypool_stats *st, void *arg) {
  return st->ready == *(size_t *)arg && st->inflight == 0;
}
static bool idle(const ctl_keypool_stats *st, void *arg) {
  return st->inflight == 0;
}
static bool never(const ctl_keypool_stats *st, void *arg) {
  return false;
}

/* Runs the loop for ms, the pool left alone. */
static void run_for(fx *f, uint64_t ms) {
  f->until = never;
  f->last_ns = uv_hrtime();
  f->deadline_ns = f->last_ns + ms * MS;
  assert_int_equal(uv_timer_start(&f->tick, tick_cb, 1, 1), 0);
  uv_run(&f->loop, UV_RUN_DEFAULT);
}

static uint64_t timed_take(ctl_keypool *p, int want, char **priv, char **pub) {
  const ctl_ops *ops = ctl_keypool_ops(p);
  uint64_t t0 = uv_hrtime();
  int rc = ops->ssh_keygen(ops->ctx, priv, pub);
  uint64_t ns = uv_hrtime() - t0;
  assert_int_equal(rc, want);
  return ns;
}

/* The pair is what the ssh plugin has always written: a PKCS#1 PEM of a 2048-bit RSA key and
 * its authorized_keys line. */
static void check_pair(const char *priv, const char *pub) {
  const char *head = "-----BEGIN RSA PRIVATE KEY-----\n", *tail = "-----END RSA PRIVATE KEY-----\n";
  assert_int_equal(strncmp(priv, head, strlen(head)), 0);
  assert_string_equal(priv + strlen(priv) - strlen(tail), tail);
  BIO *bio = BIO_new_mem_buf(priv, -1);
  EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
  assert_non_null(key);
  assert_int_equal(EVP_PKEY_get_bits(key), 2048);
  EVP_PKEY_free(key);
  BIO_free(bio);
  assert_int_equal(strncmp(pub, "ssh-rsa AAAAB3NzaC1yc2EAAAA", 27), 0);
  assert_string_equal(pub + strlen(pub) - 1, "\n");
  assert_null(strchr(pub + 8, ' '));
}

/* Real keys: the first take finds none and returns at once; pairs arrive while the loop keeps
 * turning; takes hand them out at once; the pool refills to its size and no further. */
static void test_take_never_waits(void **state) {
  fx f;
  fx_init(&f);
  size_t n = 4;
  assert_int_equal(ctl_keypool_new(&f.loop, &(ctl_keypool_options){.ready = n}, &f.p), 0);
  ctl_keypool_start(f.p);
  char *priv = NULL, *pub = NULL;
  uint64_t longest = timed_take(f.p, KC_EAGAIN, &priv, &pub);
  assert_null(priv);
  assert_null(pub);
  run_until(&f, full, &n, 60000);
  char *pubs[4];
  for (size_t i = 0; i < n; i++) {
    uint64_t ns = timed_take(f.p, 0, &priv, &pub);
    longest = ns > longest ? ns : longest;
    check_pair(priv, pub);
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(pubs[j], pub);
    pubs[i] = pub;
    free(priv);
  }
  assert_int_equal(timed_take(f.p, KC_EAGAIN, &priv, &pub) < 50 * MS, 1);
  run_until(&f, full, &n, 60000);
  ctl_keypool_stats st;
  ctl_keypool_get_stats(f.p, &st);
  print_message("longest take %.3f ms, longest generation %.1f ms, loop held at most %.1f ms\n",
                (double)longest / 1e6, (double)st.gen_ns_max / 1e6, (double)f.max_gap_ns / 1e6);
  /* A take does no generation: microseconds, while a pair takes tens of milliseconds or more. */
  assert_true(longest < 50 * MS);
  assert_int_equal(st.made, 2 * n);
  assert_int_equal(st.taken, n);
  assert_int_equal(st.empty, 2);
  assert_int_equal(st.failed, 0);
  for (size_t i = 0; i < n; i++)
    free(pubs[i]);
  fx_close(&f); /* with 4 pairs ready: wiped and freed */
}

/* A generator that takes 300 ms and notes the thread it runs on. */
static uv_thread_t loop_thread;
static atomic_int on_loop, off_loop;

static int slow_gen(void *ctx, char **priv, char **pub) {
  uv_thread_t self = uv_thread_self();
  if (uv_thread_equal(&self, &loop_thread))
    atomic_fetch_add(&on_loop, 1);
  else
    atomic_fetch_add(&off_loop, 1);
  uv_sleep(300);
  *priv = strdup("-----BEGIN RSA PRIVATE KEY-----\nslow\n-----END RSA PRIVATE KEY-----\n");
  *pub = strdup("ssh-rsa AAAAslow\n");
  return 0;
}

/* Pairs are made on worker threads, never the loop's: with each taking 300 ms, the loop's
 * 1 ms timer never waits anywhere near that long. */
static void test_made_off_the_loop(void **state) {
  fx f;
  fx_init(&f);
  loop_thread = uv_thread_self();
  atomic_store(&on_loop, 0);
  atomic_store(&off_loop, 0);
  size_t n = 4;
  ctl_keypool_options o = {.ready = n, .parallel = 2, .gen = slow_gen};
  assert_int_equal(ctl_keypool_new(&f.loop, &o, &f.p), 0);
  ctl_keypool_start(f.p);
  run_until(&f, full, &n, 10000);
  char *priv, *pub;
  timed_take(f.p, 0, &priv, &pub);
  free(priv);
  free(pub);
  run_until(&f, full, &n, 10000);
  print_message("loop held at most %.1f ms while 300 ms generations ran\n",
                (double)f.max_gap_ns / 1e6);
  assert_int_equal(atomic_load(&on_loop), 0);
  assert_int_equal(atomic_load(&off_loop), 5);
  assert_true(f.max_gap_ns < 150 * MS);
  fx_close(&f);
}

/* A random source that fails while `broken` is set (RAND_bytes returning 0). */
static atomic_int broken, draws;
static int flaky_source(void *arg, unsigned char *buf, size_t len) {
  atomic_fetch_add(&draws, 1);
  memset(buf, 0, len);
  return atomic_load(&broken) ? KC_EIO : 0;
}

/* A failed generation is reported once by a take (KC_EIO: the sync fails and says why) and
 * the pool stops trying until the next take: a broken source is not polled in a loop. Once
 * the source works again, pairs come. The names draw from the same source. */
static void test_broken_source(void **state) {
  fx f;
  fx_init(&f);
  atomic_store(&broken, 1);
  atomic_store(&draws, 0);
  ctl_random src = {flaky_source, NULL};
  size_t n = 2;
  ctl_keypool_options o = {.ready = n, .parallel = 1, .random = &src};
  assert_int_equal(ctl_keypool_new(&f.loop, &o, &f.p), 0);
  const ctl_ops *ops = ctl_keypool_ops(f.p);
  char name[13] = "x";
  assert_int_equal(ops->rand_str(ops->ctx, name, 12), KC_EIO);
  assert_string_equal(name, "");
  ctl_keypool_start(f.p);
  run_until(&f, idle, NULL, 10000);
  run_for(&f, 50);
  ctl_keypool_stats st;
  ctl_keypool_get_stats(f.p, &st);
  assert_int_equal(st.failed, 1);
  assert_int_equal(st.inflight, 0);
  char *priv, *pub;
  timed_take(f.p, KC_EIO, &priv, &pub);    /* reported, and tried again */
  timed_take(f.p, KC_EAGAIN, &priv, &pub); /* the retry is running */
  run_until(&f, idle, NULL, 10000);
  ctl_keypool_get_stats(f.p, &st);
  assert_int_equal(st.failed, 2);
  atomic_store(&broken, 0); /* no generation in flight reads it now */
  timed_take(f.p, KC_EIO, &priv, &pub);
  run_until(&f, full, &n, 60000);
  timed_take(f.p, 0, &priv, &pub);
  check_pair(priv, pub);
  free(priv);
  free(pub);
  assert_int_equal(ops->rand_str(ops->ctx, name, 12), 0);
  assert_int_equal(strlen(name), 12);
  ctl_keypool_get_stats(f.p, &st);
  assert_int_equal(st.made, 2);
  assert_int_equal(st.failed, 2);
  fx_close(&f);
}

/* A generator held at a gate until the test opens it. */
static uv_sem_t gate;
static atomic_int entered;

static int gated_gen(void *ctx, char **priv, char **pub) {
  atomic_fetch_add(&entered, 1);
  uv_sem_wait(&gate);
  *priv = strdup("-----BEGIN RSA PRIVATE KEY-----\ngated\n-----END RSA PRIVATE KEY-----\n");
  *pub = strdup("ssh-rsa AAAAgated\n");
  return 0;
}

/* Freed with 8 generations asked for, more than libuv has threads: the queued ones are
 * canceled, the running ones end later and their pairs are wiped and freed in their callbacks;
 * the loop then closes with nothing left (ASan checks the memory). */
static void test_free_in_flight(void **state) {
  fx f;
  fx_init(&f);
  assert_int_equal(uv_sem_init(&gate, 0), 0);
  atomic_store(&entered, 0);
  ctl_keypool_options o = {.ready = 8, .parallel = 8, .gen = gated_gen};
  assert_int_equal(ctl_keypool_new(&f.loop, &o, &f.p), 0);
  ctl_keypool_start(f.p);
  ctl_keypool_stats st;
  ctl_keypool_get_stats(f.p, &st);
  assert_int_equal(st.inflight, 8);
  for (int i = 0; i < 5000 && atomic_load(&entered) == 0; i++)
    uv_sleep(1);
  assert_true(atomic_load(&entered) > 0);
  ctl_keypool_free(f.p);
  f.p = NULL;
  for (int i = 0; i < 8; i++)
    uv_sem_post(&gate);
  uv_close((uv_handle_t *)&f.tick, NULL);
  assert_int_equal(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&f.loop), 0);
  print_message("%d of 8 generations ran, the rest were canceled\n", atomic_load(&entered));
  assert_true(atomic_load(&entered) <= 8);
  uv_sem_destroy(&gate);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_take_never_waits),
      cmocka_unit_test(test_made_off_the_loop),
      cmocka_unit_test(test_broken_source),
      cmocka_unit_test(test_free_in_flight),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
