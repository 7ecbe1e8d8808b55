/* ssh key pairs made ahead, off the loop thread (issue 27).
 *
 * An RSA-2048 key pair takes from 50 ms to over a second to make. The ssh plugin needs one per
 * Secret it creates, and the core runs on the loop thread: made there, a few ssh Jobs retrying
 * stalled the whole controller for seconds. The pool keeps a few pairs ready, made on libuv's
 * thread pool (uv_queue_work), and refills as they are taken. Taking never waits: with none
 * ready it returns KC_EAGAIN and the sync requeues the Job a moment later (ctl_sync.c).
 *
 * A worker thread touches only its own work item (the generator, its context, its result);
 * the pair goes into the pool in the after-work callback, on the loop thread. Everything
 * else runs on the loop thread. */
#ifndef CTL_KEYPOOL_SHELL_H
#define CTL_KEYPOOL_SHELL_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "ctl_job.h"
#include "kc_error.h"

#define CTL_KEYPOOL_READY    4 /* pairs kept ready by default */
#define CTL_KEYPOOL_PARALLEL 2 /* pairs made at once by default, of libuv's 4 threads */

typedef struct ctl_keypool ctl_keypool;

typedef struct {
  size_t ready; /* pairs kept ready; 0: CTL_KEYPOOL_READY */
  int parallel; /* pairs made at once; 0: CTL_KEYPOOL_PARALLEL */
  /* The random source of the default generator and of the names (ctl_ops.rand_str); NULL:
   * OpenSSL's. Borrowed; its bytes() is called on worker threads too. */
  const ctl_random *random;
  /* Makes one pair on a worker thread, as ctl_ops.ssh_keygen; NULL: ctl_default_ops' with
   * random as its context. It must be thread-safe and touch nothing the loop owns. */
  int (*gen)(void *ctx, char **priv, char **pub);
  void *gen_ctx;
} ctl_keypool_options;

typedef struct {
  uint64_t made;   /* pairs made */
  uint64_t taken;  /* pairs handed out */
  uint64_t empty;  /* takes that found none ready */
  uint64_t failed; /* generations that failed */
  uint64_t gen_ns_max;
  size_t ready; /* pairs ready now */
  int inflight; /* generations queued or running */
} ctl_keypool_stats;

/* *out is new and makes nothing until ctl_keypool_start. 0 or KC_ENOMEM. */
KC_NODISCARD int ctl_keypool_new(uv_loop_t *loop, const ctl_keypool_options *opt,
                                 ctl_keypool **out);
/* Starts filling the pool (a controller that is not the leader makes no keys). */
void ctl_keypool_start(ctl_keypool *p);
/* A ready pair, new (*priv PEM PKCS#1, *pub an "ssh-rsa ..." line, both free()), and a
 * refill started. Never waits. With none ready: KC_EAGAIN, or once the error of the last
 * generation (KC_EIO: the random source failed) when it failed; the pool tries again then.
 * A generation that fails stops the refilling until the next take, so a broken source is not
 * polled in a loop. */
KC_NODISCARD int ctl_keypool_take(ctl_keypool *p, char **priv, char **pub);
/* The effects for the core: ssh_keygen takes from the pool, rand_str draws from opt.random.
 * Borrowed; valid while the pool is. */
const ctl_ops *ctl_keypool_ops(ctl_keypool *p);
void ctl_keypool_get_stats(const ctl_keypool *p, ctl_keypool_stats *st);
/* Frees the pool: ready pairs are wiped, queued generations canceled; one that is running
 * finishes on its thread and its pair is wiped in its callback, which frees the memory last.
 * Run the loop afterwards. NULL is a no-op. */
void ctl_keypool_free(ctl_keypool *p);

#endif
