#include "kc_workqueue.h"

#include "kc_error.h"
#include "kc_log.h"
#include "kc_metrics.h"
#include "kc_strmap.h"

#include <stdlib.h>
#include <string.h>

/* One record per key that is queued, delayed or being processed; it lives
 * in q->items (which owns the key string) and is freed when it is none of
 * the three. `dirty` is client-go's dirty set: the key needs processing. */
typedef struct {
  const char *key; /* the map's copy */
  uint64_t queued_ns;
  uint64_t start_ns;
  uint64_t ready_ns; /* when delayed */
  size_t heap_idx;   /* SIZE_MAX when not delayed */
  bool dirty;
  bool queued;
  bool processing;
  bool pumped; /* handed out through the process callback */
} item;

struct kc_workqueue {
  char *name;
  uv_loop_t *loop;
  uv_timer_t timer;
  uv_idle_t idle;
  int open_handles;
  bool closing;
  bool shutting_down;

  kc_clock_fn clock;
  void *clock_ud;
  kc_ratelimiter limiter;
  kc_workqueue_hooks hooks;
  kc_workqueue_process_fn process;
  void *process_ud;
  int workers;
  int in_flight;
  bool in_pump;

  /* Series fed by kc_workqueue_use_metrics (borrowed from the registry). */
  kc_metrics *reg;
  kc_series *m_depth, *m_adds, *m_latency, *m_work, *m_retries, *m_unfinished, *m_longest;

  kc_strmap items; /* key (copied) -> item */
  size_t nprocessing;

  /* FIFO ring of queued items. */
  item **ring;
  size_t ring_cap, ring_head, ring_len;

  /* Min-heap of delayed items by ready_ns. */
  item **heap;
  size_t heap_cap, heap_len;
};

static uint64_t hrtime_clock(void *ud) {
  (void)ud;
  return uv_hrtime();
}

static uint64_t now(const kc_workqueue *q) {
  return q->clock(q->clock_ud);
}

/* ---- items ---- */

static item *item_get_or_new(kc_workqueue *q, const char *key, int *err) {
  item *it = kc_strmap_get(&q->items, key);
  if (it != NULL)
    return it;
  it = calloc(1, sizeof(*it));
  if (it == NULL) {
    *err = KC_ENOMEM;
    return NULL;
  }
  it->heap_idx = SIZE_MAX;
  int rc = kc_strmap_put(&q->items, key, it, NULL);
  if (rc < 0) {
    free(it);
    *err = rc;
    return NULL;
  }
  it->key = kc_strmap_find(&q->items, key)->key;
  return it;
}

/* Drops the record once nothing refers to it. */
static void item_release(kc_workqueue *q, item *it) {
  if (it->dirty || it->processing || it->heap_idx != SIZE_MAX)
    return;
  /* Deleting frees the key string it->key points to: copy nothing after. */
  (void)kc_strmap_del(&q->items, it->key, NULL);
  free(it);
}

/* ---- FIFO ---- */

static int ring_push(kc_workqueue *q, item *it) {
  if (q->ring_len == q->ring_cap) {
    size_t ncap = q->ring_cap ? q->ring_cap * 2 : 16;
    item **nr = malloc(ncap * sizeof(*nr));
    if (nr == NULL)
      return KC_ENOMEM;
    for (size_t i = 0; i < q->ring_len; i++)
      nr[i] = q->ring[(q->ring_head + i) % q->ring_cap];
    free(q->ring);
    q->ring = nr;
    q->ring_cap = ncap;
    q->ring_head = 0;
  }
  q->ring[(q->ring_head + q->ring_len) % q->ring_cap] = it;
  q->ring_len++;
  return 0;
}

static item *ring_pop(kc_workqueue *q) {
  if (q->ring_len == 0)
    return NULL;
  item *it = q->ring[q->ring_head];
  q->ring_head = (q->ring_head + 1) % q->ring_cap;
  q->ring_len--;
  return it;
}

/* ---- heap ---- */

static void heap_set(kc_workqueue *q, size_t i, item *it) {
  q->heap[i] = it;
  it->heap_idx = i;
}

static void heap_up(kc_workqueue *q, size_t i) {
  item *it = q->heap[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (q->heap[parent]->ready_ns <= it->ready_ns)
      break;
    heap_set(q, i, q->heap[parent]);
    i = parent;
  }
  heap_set(q, i, it);
}

static void heap_down(kc_workqueue *q, size_t i) {
  item *it = q->heap[i];
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    uint64_t best = it->ready_ns;
    if (l < q->heap_len && q->heap[l]->ready_ns < best) {
      m = l;
      best = q->heap[l]->ready_ns;
    }
    if (l + 1 < q->heap_len && q->heap[l + 1]->ready_ns < best)
      m = l + 1;
    if (m == i)
      break;
    heap_set(q, i, q->heap[m]);
    i = m;
  }
  heap_set(q, i, it);
}

static int heap_push(kc_workqueue *q, item *it) {
  if (q->heap_len == q->heap_cap) {
    size_t ncap = q->heap_cap ? q->heap_cap * 2 : 16;
    item **nh = realloc(q->heap, ncap * sizeof(*nh));
    if (nh == NULL)
      return KC_ENOMEM;
    q->heap = nh;
    q->heap_cap = ncap;
  }
  heap_set(q, q->heap_len++, it);
  heap_up(q, it->heap_idx);
  return 0;
}

static item *heap_pop(kc_workqueue *q) {
  item *top = q->heap[0];
  top->heap_idx = SIZE_MAX;
  if (--q->heap_len > 0) {
    heap_set(q, 0, q->heap[q->heap_len]);
    heap_down(q, 0);
  }
  return top;
}

/* ---- loop glue ---- */

static void on_idle(uv_idle_t *h);
static void on_timer(uv_timer_t *h);

/* Arms the one-shot idle that feeds the process callback when a key is
 * queued and a worker slot is free. Deferred to the loop so that adds made
 * from a watch callback never run work on the watch callback's stack. */
static void schedule_pump(kc_workqueue *q) {
  if (q->loop == NULL || q->process == NULL || q->closing || q->in_pump)
    return;
  if (q->ring_len == 0 || q->in_flight >= q->workers)
    return;
  if (!uv_is_active((uv_handle_t *)&q->idle))
    uv_idle_start(&q->idle, on_idle);
}

static void arm_timer(kc_workqueue *q) {
  if (q->loop == NULL || q->closing)
    return;
  if (q->heap_len == 0) {
    uv_timer_stop(&q->timer);
    return;
  }
  uint64_t t = now(q), due = q->heap[0]->ready_ns;
  uint64_t wait_ns = due > t ? due - t : 0;
  uint64_t ms = (wait_ns + 999999) / 1000000; /* round up: never early */
  uv_timer_start(&q->timer, on_timer, ms, 0);
}

static void report_depth(kc_workqueue *q) {
  if (q->hooks.depth)
    q->hooks.depth(q->hooks.ud, q->ring_len);
}

static void pump(kc_workqueue *q) {
  q->in_pump = true;
  while (!q->closing && q->in_flight < q->workers) {
    const char *key;
    if (kc_workqueue_get(q, &key) != 0)
      break;
    item *it = kc_strmap_get(&q->items, key);
    it->pumped = true;
    q->in_flight++;
    q->process(q, key, q->process_ud);
  }
  q->in_pump = false;
}

static void on_idle(uv_idle_t *h) {
  kc_workqueue *q = h->data;
  uv_idle_stop(h);
  pump(q);
}

static void on_timer(uv_timer_t *h) {
  kc_workqueue *q = h->data;
  (void)kc_workqueue_tick(q);
}

static void on_close(uv_handle_t *h) {
  kc_workqueue *q = h->data;
  if (--q->open_handles > 0)
    return;
  free(q);
}

/* ---- public ---- */

int kc_workqueue_new(uv_loop_t *loop, const kc_workqueue_opts *opts, kc_workqueue **out) {
  static const kc_workqueue_opts defaults = {0};
  if (opts == NULL)
    opts = &defaults;
  if (opts->workers < 0)
    return KC_EINVAL;
  kc_workqueue *q = calloc(1, sizeof(*q));
  if (q == NULL)
    return KC_ENOMEM;
  q->name = strdup(opts->name ? opts->name : "");
  if (q->name == NULL) {
    free(q);
    return KC_ENOMEM;
  }
  q->clock = opts->clock ? opts->clock : hrtime_clock;
  q->clock_ud = opts->clock_ud;
  kc_ratelimiter_init(&q->limiter,
                      opts->backoff_base_ns ? opts->backoff_base_ns : KC_RATELIMIT_DEFAULT_BASE_NS,
                      opts->backoff_max_ns ? opts->backoff_max_ns : KC_RATELIMIT_DEFAULT_MAX_NS,
                      opts->qps != 0 ? opts->qps : KC_RATELIMIT_DEFAULT_QPS,
                      opts->burst ? opts->burst : KC_RATELIMIT_DEFAULT_BURST, now(q));
  q->process = opts->process;
  q->process_ud = opts->process_ud;
  q->workers = opts->workers ? opts->workers : 1;
  kc_strmap_init(&q->items, KC_STRMAP_COPY_KEYS);
  q->loop = loop;
  if (loop != NULL) {
    /* Neither handle fails to init on a valid loop. */
    uv_timer_init(loop, &q->timer);
    uv_idle_init(loop, &q->idle);
    q->timer.data = q;
    q->idle.data = q;
    /* Idle handles keep the loop alive only while started; the timer only
     * while armed. An idle queue never holds the loop open. */
    q->open_handles = 2;
  }
  *out = q;
  return 0;
}

static void free_item(void *p) {
  free(p);
}

static void collect_unfinished(kc_metrics *r, void *ud);

void kc_workqueue_free(kc_workqueue *q) {
  if (q == NULL)
    return;
  if (q->reg) {
    /* The series outlive the queue in the registry: leave no stale work. */
    kc_metrics_remove_collector(q->reg, collect_unfinished, q);
    kc_gauge_set(q->m_unfinished, 0);
    kc_gauge_set(q->m_longest, 0);
  }
  kc_workqueue_shutdown(q);
  q->closing = true;
  kc_strmap_close(&q->items, free_item);
  kc_ratelimiter_close(&q->limiter);
  free(q->ring);
  free(q->heap);
  free(q->name);
  q->ring = NULL;
  q->heap = NULL;
  q->name = NULL;
  q->ring_len = q->heap_len = 0;
  if (q->loop == NULL) {
    free(q);
    return;
  }
  uv_close((uv_handle_t *)&q->timer, on_close);
  uv_close((uv_handle_t *)&q->idle, on_close);
}

void kc_workqueue_set_hooks(kc_workqueue *q, const kc_workqueue_hooks *hooks) {
  if (hooks)
    q->hooks = *hooks;
  else
    memset(&q->hooks, 0, sizeof(q->hooks));
}

int kc_workqueue_add(kc_workqueue *q, const char *key) {
  if (q->shutting_down)
    return KC_ECANCELED;
  int err = 0;
  item *it = item_get_or_new(q, key, &err);
  if (it == NULL)
    return err;
  if (it->dirty)
    return 0;
  it->dirty = true;
  if (q->hooks.add)
    q->hooks.add(q->hooks.ud);
  it->queued_ns = now(q);
  if (it->processing)
    return 0; /* re-queued by done() */
  int rc = ring_push(q, it);
  if (rc < 0) {
    it->dirty = false;
    item_release(q, it);
    return rc;
  }
  it->queued = true;
  report_depth(q);
  schedule_pump(q);
  return 0;
}

int kc_workqueue_add_after(kc_workqueue *q, const char *key, uint64_t delay_ns) {
  if (q->shutting_down)
    return KC_ECANCELED;
  if (delay_ns == 0)
    return kc_workqueue_add(q, key);
  uint64_t t = now(q);
  uint64_t ready = delay_ns > UINT64_MAX - t ? UINT64_MAX : t + delay_ns;
  int err = 0;
  item *it = item_get_or_new(q, key, &err);
  if (it == NULL)
    return err;
  if (it->heap_idx != SIZE_MAX) {
    /* Already waiting: keep the earlier time, as client-go does. */
    if (ready < it->ready_ns) {
      it->ready_ns = ready;
      heap_up(q, it->heap_idx);
      arm_timer(q);
    }
    return 0;
  }
  it->ready_ns = ready;
  int rc = heap_push(q, it);
  if (rc < 0) {
    item_release(q, it);
    return rc;
  }
  if (it->heap_idx == 0)
    arm_timer(q);
  return 0;
}

int kc_workqueue_add_rate_limited(kc_workqueue *q, const char *key) {
  if (q->shutting_down)
    return KC_ECANCELED;
  uint64_t delay;
  int rc = kc_ratelimiter_when(&q->limiter, key, now(q), &delay);
  if (rc < 0)
    KC_WARN("workqueue %s: %s while recording a retry of %s", q->name, kc_strerror(rc), key);
  if (q->hooks.retry)
    q->hooks.retry(q->hooks.ud);
  return kc_workqueue_add_after(q, key, delay);
}

void kc_workqueue_forget(kc_workqueue *q, const char *key) {
  kc_ratelimiter_forget(&q->limiter, key);
}

int kc_workqueue_num_requeues(const kc_workqueue *q, const char *key) {
  return kc_ratelimiter_num_requeues(&q->limiter, key);
}

int kc_workqueue_get(kc_workqueue *q, const char **key) {
  item *it = ring_pop(q);
  if (it == NULL)
    return q->shutting_down ? KC_ECANCELED : KC_ENOENT;
  it->queued = false;
  it->dirty = false;
  it->processing = true;
  q->nprocessing++;
  it->start_ns = now(q);
  if (q->hooks.latency)
    q->hooks.latency(q->hooks.ud, (double)(it->start_ns - it->queued_ns) / 1e9);
  report_depth(q);
  *key = it->key;
  return 0;
}

void kc_workqueue_done(kc_workqueue *q, const char *key) {
  item *it = kc_strmap_get(&q->items, key);
  if (it == NULL || !it->processing)
    return;
  it->processing = false;
  q->nprocessing--;
  if (it->pumped) {
    it->pumped = false;
    q->in_flight--;
  }
  if (q->hooks.work)
    q->hooks.work(q->hooks.ud, (double)(now(q) - it->start_ns) / 1e9);
  if (it->dirty) {
    if (ring_push(q, it) == 0) {
      it->queued = true;
      report_depth(q);
    } else {
      /* Out of memory: the key stays dirty but cannot be queued now; the
       * caller's next add of it is also deduplicated, so log it loudly. */
      KC_ERROR("workqueue %s: out of memory re-queueing %s; dropped", q->name, key);
      it->dirty = false;
    }
  }
  item_release(q, it);
  schedule_pump(q);
}

uint64_t kc_workqueue_tick(kc_workqueue *q) {
  uint64_t t = now(q);
  while (q->heap_len > 0 && q->heap[0]->ready_ns <= t) {
    item *it = heap_pop(q);
    int rc = kc_workqueue_add(q, it->key);
    if (rc < 0)
      KC_ERROR("workqueue %s: %s adding delayed %s", q->name, kc_strerror(rc), it->key);
    item_release(q, it);
  }
  arm_timer(q);
  if (q->heap_len == 0)
    return UINT64_MAX;
  return q->heap[0]->ready_ns - t;
}

void kc_workqueue_shutdown(kc_workqueue *q) {
  if (q->shutting_down)
    return;
  q->shutting_down = true;
  while (q->heap_len > 0)
    item_release(q, heap_pop(q));
  if (q->loop != NULL && !q->closing)
    uv_timer_stop(&q->timer);
}

bool kc_workqueue_shutting_down(const kc_workqueue *q) {
  return q->shutting_down;
}

size_t kc_workqueue_len(const kc_workqueue *q) {
  return q->ring_len;
}

size_t kc_workqueue_waiting(const kc_workqueue *q) {
  return q->heap_len;
}

size_t kc_workqueue_processing(const kc_workqueue *q) {
  return q->nprocessing;
}

void kc_workqueue_unfinished(const kc_workqueue *q, double *total_s, double *longest_s) {
  uint64_t t = now(q);
  double total = 0, longest = 0;
  size_t pos = 0;
  kc_strmap_slot *s;
  while ((s = kc_strmap_next(&q->items, &pos))) {
    const item *it = s->val;
    if (!it->processing)
      continue;
    double d = (double)(t - it->start_ns) / 1e9;
    total += d;
    if (d > longest)
      longest = d;
  }
  *total_s = total;
  *longest_s = longest;
}

const char *kc_workqueue_name(const kc_workqueue *q) {
  return q->name;
}

/* ---- metrics ---- */

static void m_depth(void *ud, size_t d) {
  kc_gauge_set(((kc_workqueue *)ud)->m_depth, (double)d);
}
static void m_add(void *ud) {
  kc_counter_inc(((kc_workqueue *)ud)->m_adds);
}
static void m_latency(void *ud, double s) {
  kc_histogram_observe(((kc_workqueue *)ud)->m_latency, s);
}
static void m_work(void *ud, double s) {
  kc_histogram_observe(((kc_workqueue *)ud)->m_work, s);
}
static void m_retry(void *ud) {
  kc_counter_inc(((kc_workqueue *)ud)->m_retries);
}

static void collect_unfinished(kc_metrics *r, void *ud) {
  (void)r;
  kc_workqueue *q = ud;
  double total, longest;
  kc_workqueue_unfinished(q, &total, &longest);
  kc_gauge_set(q->m_unfinished, total);
  kc_gauge_set(q->m_longest, longest);
}

/* Finds the family (shared by every queue, told apart by the name label) or
 * registers it, then takes this queue's series. */
static int wq_series(kc_metrics *r, kc_metric_type type, const char *name, const char *help,
                     const char *qname, kc_series **out) {
  static const char *const labels[] = {"name", NULL};
  /* controller-runtime's buckets: 10 ns to 1000 s, by factors of ten. */
  double buckets[12];
  kc_metric *m = kc_metrics_find(r, name);
  int rc = 0;
  if (m == NULL) {
    if (type == KC_METRIC_COUNTER)
      rc = kc_metrics_counter(r, name, help, labels, &m);
    else if (type == KC_METRIC_GAUGE)
      rc = kc_metrics_gauge(r, name, help, labels, &m);
    else if ((rc = kc_metrics_exponential_buckets(10e-9, 10, 12, buckets)) == 0)
      rc = kc_metrics_histogram(r, name, help, labels, buckets, 12, &m);
    if (rc < 0)
      return rc;
  } else if (kc_metric_get_type(m) != type) {
    return KC_EEXISTS;
  }
  const char *values[] = {qname};
  return kc_metric_series(m, values, out);
}

int kc_workqueue_use_metrics(kc_workqueue *q, kc_metrics *r) {
  int rc;
  const char *n = q->name;
  if ((rc = wq_series(r, KC_METRIC_GAUGE, "workqueue_depth", "Current depth of the work queue.", n,
                      &q->m_depth)) < 0 ||
      (rc = wq_series(r, KC_METRIC_COUNTER, "workqueue_adds_total",
                      "Adds accepted by the work queue.", n, &q->m_adds)) < 0 ||
      (rc = wq_series(r, KC_METRIC_HISTOGRAM, "workqueue_queue_duration_seconds",
                      "Seconds a key waits in the queue before a worker takes it.", n,
                      &q->m_latency)) < 0 ||
      (rc = wq_series(r, KC_METRIC_HISTOGRAM, "workqueue_work_duration_seconds",
                      "Seconds from taking a key to marking it done.", n, &q->m_work)) < 0 ||
      (rc = wq_series(r, KC_METRIC_COUNTER, "workqueue_retries_total",
                      "Rate-limited re-adds to the work queue.", n, &q->m_retries)) < 0 ||
      (rc = wq_series(r, KC_METRIC_GAUGE, "workqueue_unfinished_work_seconds",
                      "Seconds of work in progress not yet counted in work_duration; "
                      "steady growth means a stuck worker.",
                      n, &q->m_unfinished)) < 0 ||
      (rc = wq_series(r, KC_METRIC_GAUGE, "workqueue_longest_running_processor_seconds",
                      "Seconds the longest-running key of the queue has been in processing.", n,
                      &q->m_longest)) < 0)
    return rc;
  if (q->reg == NULL) {
    if ((rc = kc_metrics_add_collector(r, collect_unfinished, q)) < 0)
      return rc;
    q->reg = r;
  }
  kc_workqueue_hooks h = {m_depth, m_add, m_latency, m_work, m_retry, q};
  kc_workqueue_set_hooks(q, &h);
  return 0;
}
