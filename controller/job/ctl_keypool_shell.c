/* ssh key pairs made ahead on libuv's thread pool (ctl_keypool_shell.h). */
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_keypool_shell.h"
#include "kc_container.h"
#include "kc_log.h"

typedef struct {
  char *priv, *pub;
} pair;

/* One generation. The worker thread reads gen and ctx and writes rc, priv, pub and ns only. */
typedef struct work {
  uv_work_t req;
  struct work *next; /* the pool's list of generations queued or running */
  ctl_keypool *pool;
  int (*gen)(void *ctx, char **priv, char **pub);
  void *ctx;
  int rc;
  char *priv, *pub;
  uint64_t ns;
} work;

struct ctl_keypool {
  uv_loop_t *loop;
  ctl_keypool_options opt;
  ctl_ops ops;
  pair *pairs; /* opt.ready slots, n of them ready */
  size_t n;
  work *works;
  int inflight;
  int last_err; /* of a failed generation not yet reported by a take */
  bool started, paused, closing;
  ctl_keypool_stats st;
};

static void wipe(char *priv, char *pub) {
  if (priv)
    OPENSSL_cleanse(priv, strlen(priv));
  free(priv);
  free(pub);
}

static int pool_keygen(void *ctx, char **priv, char **pub) {
  return ctl_keypool_take(ctx, priv, pub);
}

static int pool_rand_str(void *ctx, char *buf, size_t n) {
  const ctl_keypool *p = ctx;
  return ctl_default_ops.rand_str((void *)p->opt.random, buf, n);
}

int ctl_keypool_new(uv_loop_t *loop, const ctl_keypool_options *opt, ctl_keypool **out) {
  *out = NULL;
  ctl_keypool *p = calloc(1, sizeof(*p));
  if (!p)
    return KC_ENOMEM;
  p->loop = loop;
  if (opt)
    p->opt = *opt;
  if (p->opt.ready == 0)
    p->opt.ready = CTL_KEYPOOL_READY;
  if (p->opt.parallel <= 0)
    p->opt.parallel = CTL_KEYPOOL_PARALLEL;
  if (!p->opt.gen) {
    p->opt.gen = ctl_default_ops.ssh_keygen;
    p->opt.gen_ctx = (void *)p->opt.random;
  }
  p->pairs = calloc(p->opt.ready, sizeof(*p->pairs));
  if (!p->pairs) {
    free(p);
    return KC_ENOMEM;
  }
  p->ops = (ctl_ops){.rand_str = pool_rand_str, .ssh_keygen = pool_keygen, .ctx = p};
  *out = p;
  return 0;
}

static void release(ctl_keypool *p) {
  for (size_t i = 0; i < p->n; i++)
    wipe(p->pairs[i].priv, p->pairs[i].pub);
  free(p->pairs);
  free(p);
}

/* On a worker thread. */
static void gen_work(uv_work_t *req) {
  work *w = container_of(req, work, req);
  uint64_t t0 = uv_hrtime();
  w->rc = w->gen(w->ctx, &w->priv, &w->pub);
  w->ns = uv_hrtime() - t0;
}

static void unlink_work(ctl_keypool *p, work *w) {
  for (work **pp = &p->works; *pp; pp = &(*pp)->next)
    if (*pp == w) {
      *pp = w->next;
      break;
    }
  p->inflight--;
}

static void refill(ctl_keypool *p);

/* On the loop thread: the pair goes into the pool, or its error is kept for a take. */
static void gen_done(uv_work_t *req, int status) {
  work *w = container_of(req, work, req);
  ctl_keypool *p = w->pool;
  unlink_work(p, w);
  if (status == 0 && !p->closing) {
    if (w->ns > p->st.gen_ns_max)
      p->st.gen_ns_max = w->ns;
    if (w->rc == 0 && p->n < p->opt.ready) {
      p->pairs[p->n++] = (pair){w->priv, w->pub};
      p->st.made++;
      w->priv = w->pub = NULL;
    } else if (w->rc) {
      p->st.failed++;
      p->last_err = w->rc;
      p->paused = true;
      KC_WARN("cannot make an ssh key pair: %s; trying again when one is needed",
              kc_strerror(w->rc));
    }
  }
  wipe(w->priv, w->pub);
  free(w);
  if (p->closing) {
    if (p->inflight == 0)
      release(p);
    return;
  }
  refill(p);
}

static int start_one(ctl_keypool *p) {
  work *w = calloc(1, sizeof(*w));
  if (!w)
    return KC_ENOMEM;
  w->pool = p;
  w->gen = p->opt.gen;
  w->ctx = p->opt.gen_ctx;
  int rc = uv_queue_work(p->loop, &w->req, gen_work, gen_done);
  if (rc) {
    free(w);
    return KC_EIO;
  }
  w->next = p->works;
  p->works = w;
  p->inflight++;
  return 0;
}

static void refill(ctl_keypool *p) {
  if (!p->started || p->paused || p->closing)
    return;
  while (p->n + (size_t)p->inflight < p->opt.ready && p->inflight < p->opt.parallel) {
    int rc = start_one(p);
    if (rc) {
      /* Reported by the next take that finds the pool empty, which tries again. */
      p->last_err = rc;
      p->paused = true;
      return;
    }
  }
}

void ctl_keypool_start(ctl_keypool *p) {
  p->started = true;
  refill(p);
}

int ctl_keypool_take(ctl_keypool *p, char **priv, char **pub) {
  *priv = *pub = NULL;
  p->paused = false;
  if (p->n == 0) {
    p->st.empty++;
    int rc = p->last_err ? p->last_err : KC_EAGAIN;
    p->last_err = 0;
    p->started = true;
    refill(p);
    return rc;
  }
  pair got = p->pairs[--p->n];
  p->pairs[p->n] = (pair){0};
  *priv = got.priv;
  *pub = got.pub;
  p->st.taken++;
  refill(p);
  return 0;
}

const ctl_ops *ctl_keypool_ops(ctl_keypool *p) {
  return &p->ops;
}

void ctl_keypool_get_stats(const ctl_keypool *p, ctl_keypool_stats *st) {
  *st = p->st;
  st->ready = p->n;
  st->inflight = p->inflight;
}

void ctl_keypool_free(ctl_keypool *p) {
  if (!p)
    return;
  p->closing = true;
  /* A queued generation is canceled (its callback runs with UV_ECANCELED); a running one
   * cannot be, and its callback comes when it ends. */
  for (work *w = p->works; w; w = w->next)
    KC_IGNORE(uv_cancel((uv_req_t *)&w->req));
  if (p->inflight == 0)
    release(p);
}
