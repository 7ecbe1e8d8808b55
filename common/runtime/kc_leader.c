/* Leader election on Leases: see kc_leader.h. */
#include "kc_leader.h"

#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kc_clock.h"
#include "kc_container.h"
#include "kc_error.h"
#include "kc_time.h"
#include "kc_log.h"

int kc_leader_validate(const kc_leader_options *o, char *err, size_t errlen) {
  if (o->lease_duration_ns <= 0 || o->renew_deadline_ns <= 0 || o->retry_period_ns <= 0) {
    snprintf(err, errlen, "leader election durations must be greater than zero");
    return KC_EINVAL;
  }
  if (o->lease_duration_ns <= o->renew_deadline_ns) {
    snprintf(err, errlen, "leaseDuration must be greater than renewDeadline");
    return KC_EINVAL;
  }
  if ((double)o->renew_deadline_ns <= 1.2 * (double)o->retry_period_ns) {
    snprintf(err, errlen, "renewDeadline must be greater than retryPeriod*JitterFactor(1.2)");
    return KC_EINVAL;
  }
  if (o->resource_name == NULL || *o->resource_name == '\0') {
    snprintf(err, errlen, "--leader-elect-resource-name must not be empty");
    return KC_EINVAL;
  }
  if (o->resource_lock == NULL || strcmp(o->resource_lock, "leases") != 0) {
    snprintf(err, errlen, "--leader-elect-resource-lock %s is not supported (only leases)",
             o->resource_lock ? o->resource_lock : "(null)");
    return KC_EINVAL;
  }
  return 0;
}

/* ---- pure core ---- */

void kc_leader_core_init(kc_leader_core *c, const char *identity, uint64_t lease_ns,
                         uint64_t deadline_ns, uint64_t retry_ns) {
  memset(c, 0, sizeof(*c));
  c->identity = identity;
  c->lease_ns = lease_ns;
  c->deadline_ns = deadline_ns;
  c->retry_ns = retry_ns;
}

static bool same_record(const kc_lease_record *a, const kc_lease_record *b) {
  return strcmp(a->holder, b->holder) == 0 && strcmp(a->renew_time, b->renew_time) == 0 &&
         strcmp(a->acquire_time, b->acquire_time) == 0 &&
         a->lease_duration_s == b->lease_duration_s && a->transitions == b->transitions;
}

kc_lease_action kc_leader_decide(kc_leader_core *c, const kc_lease_record *cur, uint64_t now_ns,
                                 const char *now_str, kc_lease_record *want) {
  memset(want, 0, sizeof(*want));
  snprintf(want->holder, sizeof(want->holder), "%s", c->identity);
  want->lease_duration_s = (int64_t)(c->lease_ns / 1000000000ULL);
  snprintf(want->renew_time, sizeof(want->renew_time), "%s", now_str);
  if (cur == NULL) {
    snprintf(want->acquire_time, sizeof(want->acquire_time), "%s", now_str);
    want->transitions = 0;
    return KC_LEASE_CREATE;
  }
  if (!c->have_observed || !same_record(&c->observed, cur)) {
    c->observed = *cur;
    c->have_observed = true;
    c->observed_ns = now_ns;
  }
  bool mine = strcmp(cur->holder, c->identity) == 0;
  if (!mine && cur->holder[0] != '\0') {
    uint64_t dur =
        cur->lease_duration_s > 0 ? (uint64_t)cur->lease_duration_s * 1000000000ULL : c->lease_ns;
    if (c->observed_ns + dur > now_ns)
      return KC_LEASE_WAIT; /* held, and seen renewed within its duration */
  }
  if (mine) {
    snprintf(want->acquire_time, sizeof(want->acquire_time), "%s", cur->acquire_time);
    want->transitions = cur->transitions;
  } else {
    snprintf(want->acquire_time, sizeof(want->acquire_time), "%s", now_str);
    want->transitions = cur->transitions + 1;
  }
  return KC_LEASE_UPDATE;
}

bool kc_leader_core_won(kc_leader_core *c, const kc_lease_record *written, uint64_t sent_ns) {
  bool began = !c->leading;
  c->observed = *written;
  c->have_observed = true;
  c->observed_ns = sent_ns;
  c->leading = true;
  c->renew_sent_ns = sent_ns;
  return began;
}

uint64_t kc_leader_core_next_try_ns(const kc_leader_core *c, uint64_t now_ns, uint64_t delay_ns) {
  if (c->leading || !c->have_observed || c->observed.holder[0] == '\0' ||
      strcmp(c->observed.holder, c->identity) == 0)
    return delay_ns;
  uint64_t dur = c->observed.lease_duration_s > 0
                     ? (uint64_t)c->observed.lease_duration_s * 1000000000ULL
                     : c->lease_ns;
  uint64_t expiry = c->observed_ns + dur;
  uint64_t left = expiry > now_ns ? expiry - now_ns : 0;
  left += 1000000; /* just past it */
  return left < delay_ns ? left : delay_ns;
}

bool kc_leader_core_fence_ok(const kc_leader_core *c, uint64_t now_ns) {
  return c->leading && now_ns < c->renew_sent_ns + c->deadline_ns;
}

bool kc_leader_core_expire(kc_leader_core *c, uint64_t now_ns) {
  if (!c->leading || now_ns < c->renew_sent_ns + c->deadline_ns)
    return false;
  c->leading = false;
  return true;
}

uint64_t kc_leader_core_deadline_left_ns(const kc_leader_core *c, uint64_t now_ns) {
  uint64_t end = c->renew_sent_ns + c->deadline_ns;
  return c->leading && end > now_ns ? end - now_ns : 0;
}

bool kc_leader_core_late(const kc_leader_core *c, uint64_t sent_ns, uint64_t now_ns) {
  return now_ns >= sent_ns + c->deadline_ns;
}

/* ---- helpers ---- */

int kc_leader_make_identity(char *buf, size_t cap) {
  char host[256];
  if (gethostname(host, sizeof(host)) != 0)
    return KC_EIO;
  host[sizeof(host) - 1] = '\0';
  unsigned char u[16];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return KC_EIO;
  ssize_t n = read(fd, u, sizeof(u));
  close(fd);
  if (n != (ssize_t)sizeof(u))
    return KC_EIO;
  u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* version 4 */
  u[8] = (unsigned char)((u[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  int w =
      snprintf(buf, cap, "%s_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
               host, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
               u[12], u[13], u[14], u[15]);
  return w < 0 || (size_t)w >= cap ? KC_ETOOBIG : 0;
}

void kc_leader_microtime(char buf[40]) {
  kc_clock_rfc3339_micro(buf);
}

static void read_record(const json_t *lease, kc_lease_record *r) {
  memset(r, 0, sizeof(*r));
  json_t *spec = json_object_get(lease, "spec");
  const char *s;
  if ((s = json_string_value(json_object_get(spec, "holderIdentity"))))
    snprintf(r->holder, sizeof(r->holder), "%s", s);
  if ((s = json_string_value(json_object_get(spec, "acquireTime"))))
    snprintf(r->acquire_time, sizeof(r->acquire_time), "%s", s);
  if ((s = json_string_value(json_object_get(spec, "renewTime"))))
    snprintf(r->renew_time, sizeof(r->renew_time), "%s", s);
  r->lease_duration_s = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
  r->transitions = json_integer_value(json_object_get(spec, "leaseTransitions"));
}

/* Sets lease's spec to r (empty holder and times are written as such). */
static int write_record(json_t *lease, const kc_lease_record *r) {
  json_t *spec =
      json_pack("{s:s, s:I, s:s, s:s, s:I}", "holderIdentity", r->holder, "leaseDurationSeconds",
                (json_int_t)r->lease_duration_s, "acquireTime", r->acquire_time, "renewTime",
                r->renew_time, "leaseTransitions", (json_int_t)r->transitions);
  if (spec == NULL || json_object_set_new(lease, "spec", spec))
    return KC_ENOMEM;
  return 0;
}

/* ---- the elector ---- */

/* The elector's own Lease requests: its writes go whatever the write fence says (taking the
 * lease is how the fence opens, releasing it happens after the fence has closed), and none
 * waits behind the controllers' writes in the token bucket. */
static const kc_query own_lease = {.leader_election = true};

struct kc_leader {
  kc_client *client;
  char *name, *ns;
  char identity[320];
  bool release_on_cancel;
  kc_leader_core core;
  kc_leader_callbacks cb;
  uv_timer_t tick;     /* the next try */
  uv_timer_t deadline; /* the end of leadership unless renewed */
  int open_handles;
  bool in_flight, freeing, started;
  uint64_t sent_ns;        /* send time of the write in flight */
  kc_lease_record writing; /* the record in flight */
  json_t *last;            /* the Lease as last written by us (for the release) */
  uint64_t seed;
};

static double jitter(kc_leader *l) { /* [0, 1) */
  l->seed = l->seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(l->seed >> 11) / (double)(1ULL << 53);
}

static void release_mem(kc_leader *l) {
  if (!l->freeing || l->open_handles > 0 || l->in_flight)
    return;
  json_decref(l->last);
  free(l->name);
  free(l->ns);
  free(l);
}

static void tick_cb(uv_timer_t *t);

static void schedule(kc_leader *l) {
  if (l->freeing)
    return;
  /* client-go: the acquire loop is JitterUntil(retryPeriod, 1.2); the renew loop is not. */
  double f = l->core.leading ? 1.0 : 1.0 + 1.2 * jitter(l);
  uint64_t ns =
      kc_leader_core_next_try_ns(&l->core, uv_hrtime(), (uint64_t)((double)l->core.retry_ns * f));
  uv_timer_start(&l->tick, tick_cb, ns / 1000000, 0);
}

static void stop_leading(kc_leader *l, const char *why) {
  KC_ERROR("leader election: %s lost leadership of %s/%s: %s", l->identity, l->ns, l->name, why);
  uv_timer_stop(&l->deadline);
  l->cb.on_stopped_leading(l->cb.ud);
}

static void deadline_cb(uv_timer_t *t) {
  kc_leader *l = container_of(t, kc_leader, deadline);
  if (kc_leader_core_expire(&l->core, uv_hrtime()))
    stop_leading(l, "renew deadline passed without a successful renewal");
  else if (l->core.leading) /* renewed meanwhile: re-arm */
    uv_timer_start(&l->deadline, deadline_cb,
                   kc_leader_core_deadline_left_ns(&l->core, uv_hrtime()) / 1000000 + 1, 0);
}

static void observe_holder(kc_leader *l, const char *before) {
  if (strcmp(before, l->core.observed.holder) != 0) {
    KC_INFO("leader election: %s/%s is held by %s", l->ns, l->name,
            l->core.observed.holder[0] ? l->core.observed.holder : "(nobody)");
    if (l->cb.on_new_leader)
      l->cb.on_new_leader(l->core.observed.holder, l->cb.ud);
  }
}

static void write_cb(const kc_api_result *res, void *data) {
  kc_leader *l = data;
  l->in_flight = false;
  if (l->freeing) {
    release_mem(l);
    return;
  }
  if (res->err) {
    KC_V(1, "leader election: writing %s/%s failed: %s: %s", l->ns, l->name, kc_strerror(res->err),
         res->message);
    schedule(l);
    return;
  }
  char before[256];
  snprintf(before, sizeof(before), "%s", l->core.observed.holder);
  json_decref(l->last);
  l->last = json_incref(res->obj);
  uint64_t now = uv_hrtime();
  if (!l->core.leading && kc_leader_core_late(&l->core, l->sent_ns, now)) {
    /* Its deadline passed in flight: leading on it would be leading unfenced. The lease is
     * ours now, so the next try renews it at once. */
    KC_V(1, "leader election: the write of %s/%s came back after the renew deadline", l->ns,
         l->name);
    schedule(l);
    return;
  }
  bool began = kc_leader_core_won(&l->core, &l->writing, l->sent_ns);
  if (began) {
    KC_INFO("leader election: %s acquired %s/%s (transitions %" PRId64 ")", l->identity, l->ns,
            l->name, l->writing.transitions);
  }
  observe_holder(l, before);
  /* 0 when a renewal came back after its deadline: the timer ends the leadership at once. */
  uint64_t left = kc_leader_core_deadline_left_ns(&l->core, now);
  uv_timer_start(&l->deadline, deadline_cb, left / 1000000 + 1, 0);
  if (began && l->cb.on_started_leading)
    l->cb.on_started_leading(l->cb.ud);
  schedule(l);
}

static void get_cb(const kc_api_result *res, void *data) {
  kc_leader *l = data;
  l->in_flight = false;
  if (l->freeing) {
    release_mem(l);
    return;
  }
  if (res->err && res->err != KC_ENOTFOUND) {
    KC_V(1, "leader election: reading %s/%s failed: %s: %s", l->ns, l->name, kc_strerror(res->err),
         res->message);
    schedule(l);
    return;
  }
  kc_lease_record cur, want;
  char before[256], now_str[40];
  snprintf(before, sizeof(before), "%s", l->core.observed.holder);
  if (res->err == 0)
    read_record(res->obj, &cur);
  kc_leader_microtime(now_str);
  kc_lease_action act =
      kc_leader_decide(&l->core, res->err ? NULL : &cur, uv_hrtime(), now_str, &want);
  observe_holder(l, before);
  if (act == KC_LEASE_WAIT) {
    if (l->core.leading) { /* someone else holds it now: we lost it */
      l->core.leading = false;
      stop_leading(l, "the lease is held by another replica");
    }
    schedule(l);
    return;
  }
  json_t *lease =
      act == KC_LEASE_CREATE
          ? json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "coordination.k8s.io/v1", "kind",
                      "Lease", "metadata", "name", l->name, "namespace", l->ns)
          : json_deep_copy(res->obj);
  kc_ref ref = {
      "coordination.k8s.io", "v1", "leases", l->ns, act == KC_LEASE_CREATE ? NULL : l->name, NULL};
  int rc = lease ? write_record(lease, &want) : KC_ENOMEM;
  if (rc == 0) {
    l->writing = want;
    l->sent_ns = uv_hrtime();
    rc = kc_api_call(l->client, act == KC_LEASE_CREATE ? KC_CREATE : KC_UPDATE, &ref, &own_lease,
                     lease, write_cb, l);
  }
  json_decref(lease);
  if (rc) {
    KC_ERROR("leader election: cannot write %s/%s: %s", l->ns, l->name, kc_strerror(rc));
    schedule(l);
    return;
  }
  l->in_flight = true;
}

static void tick_cb(uv_timer_t *t) {
  kc_leader *l = container_of(t, kc_leader, tick);
  if (l->in_flight || l->freeing)
    return;
  kc_ref ref = {"coordination.k8s.io", "v1", "leases", l->ns, l->name, NULL};
  kc_query q = own_lease;
  /* A try may not outlast the retry period, so a stuck request cannot hold up the next. */
  q.timeout_ms = (int64_t)(l->core.retry_ns / 1000000);
  int rc = kc_api_call(l->client, KC_GET, &ref, &q, NULL, get_cb, l);
  if (rc) {
    KC_ERROR("leader election: cannot read %s/%s: %s", l->ns, l->name, kc_strerror(rc));
    schedule(l);
    return;
  }
  l->in_flight = true;
}

int kc_leader_new(kc_client *c, const kc_leader_options *o, const char *identity,
                  const kc_leader_callbacks *cb, kc_leader **out) {
  char err[160];
  if (c == NULL || o == NULL || cb == NULL || cb->on_stopped_leading == NULL)
    return KC_EINVAL;
  if (kc_leader_validate(o, err, sizeof(err))) {
    KC_ERROR("leader election: %s", err);
    return KC_EINVAL;
  }
  const char *ns = o->lock_object_namespace && *o->lock_object_namespace ? o->lock_object_namespace
                                                                         : o->resource_namespace;
  if (ns == NULL || *ns == '\0')
    return KC_EINVAL;
  kc_leader *l = calloc(1, sizeof(*l));
  if (l == NULL)
    return KC_ENOMEM;
  int rc = 0;
  if (identity)
    snprintf(l->identity, sizeof(l->identity), "%s", identity);
  else
    rc = kc_leader_make_identity(l->identity, sizeof(l->identity));
  l->name = strdup(o->resource_name);
  l->ns = strdup(ns);
  if (rc == 0 && (l->name == NULL || l->ns == NULL))
    rc = KC_ENOMEM;
  if (rc) {
    free(l->name);
    free(l->ns);
    free(l);
    return rc;
  }
  l->client = c;
  l->cb = *cb;
  l->release_on_cancel = o->release_on_cancel;
  l->seed = uv_hrtime() ^ ((uint64_t)getpid() << 20);
  kc_leader_core_init(&l->core, l->identity, (uint64_t)o->lease_duration_ns,
                      (uint64_t)o->renew_deadline_ns, (uint64_t)o->retry_period_ns);
  uv_loop_t *loop = kc_http_loop(kc_client_http(c));
  uv_timer_init(loop, &l->tick);
  uv_timer_init(loop, &l->deadline);
  l->tick.data = l;
  l->deadline.data = l;
  l->open_handles = 2;
  *out = l;
  return 0;
}

int kc_leader_start(kc_leader *l) {
  if (l->started)
    return KC_EINVAL;
  l->started = true;
  KC_INFO("leader election: %s trying to acquire %s/%s", l->identity, l->ns, l->name);
  uv_timer_start(&l->tick, tick_cb, 0, 0);
  return 0;
}

static void closed_cb(uv_handle_t *h) {
  kc_leader *l = h->data;
  l->open_handles--;
  release_mem(l);
}

void kc_leader_free(kc_leader *l) {
  if (l == NULL || l->freeing)
    return;
  bool was_leading = l->core.leading;
  l->core.leading = false; /* the fence closes first */
  l->freeing = true;
  uv_timer_stop(&l->tick);
  uv_timer_stop(&l->deadline);
  uv_close((uv_handle_t *)&l->tick, closed_cb);
  uv_close((uv_handle_t *)&l->deadline, closed_cb);
  if (was_leading && l->release_on_cancel && l->last && !l->in_flight) {
    /* client-go's release: empty holder, 1 s duration, times now, transitions kept. */
    kc_lease_record r = l->core.observed;
    r.holder[0] = '\0';
    r.lease_duration_s = 1;
    kc_leader_microtime(r.renew_time);
    snprintf(r.acquire_time, sizeof(r.acquire_time), "%s", r.renew_time);
    kc_ref ref = {"coordination.k8s.io", "v1", "leases", l->ns, l->name, NULL};
    if (write_record(l->last, &r) == 0 &&
        kc_api_call(l->client, KC_UPDATE, &ref, &own_lease, l->last, write_cb, l) == 0) {
      KC_INFO("leader election: %s releasing %s/%s", l->identity, l->ns, l->name);
      l->in_flight = true;
    }
  }
}

int kc_leader_fence(const kc_leader *l) {
  return kc_leader_is_leader(l) ? 0 : KC_ENOTLEADER;
}

bool kc_leader_is_leader(const kc_leader *l) {
  return l && !l->freeing && kc_leader_core_fence_ok(&l->core, uv_hrtime());
}

const char *kc_leader_identity(const kc_leader *l) {
  return l->identity;
}

const char *kc_leader_holder(const kc_leader *l) {
  return l->core.observed.holder;
}
