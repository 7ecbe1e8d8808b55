/* Leader election on coordination.k8s.io/v1 Leases (client-go's leaderelection with a
 * LeaseLock), with Volcano's flags and defaults.
 *
 * Every retry period (2 s, jittered by up to 1.2x like client-go's JitterUntil) the elector
 * GETs the Lease and decides: create it, take it over (the holder has not been seen to
 * renew for leaseDurationSeconds, measured on our own monotonic clock from the moment we
 * first saw its current record, so clock skew between replicas does not matter), renew it,
 * or wait. Writes are PUTs carrying the Lease's resourceVersion (optimistic concurrency: a
 * concurrent writer gets 409 and tries again next period). holderIdentity is
 * "<hostname>_<uuid>"; leaseTransitions counts changes of holder.
 *
 * The write fence: a replica may write only while
 *     now < (monotonic time the last successful renew was SENT) + renewDeadline.
 * Another replica can observe that renewal no earlier than it was sent, and may take over
 * only leaseDuration after observing it, so with renewDeadline < leaseDuration (validated)
 * every write of the old leader happens before the lease can pass. kc_leader_fence() is
 * computed from the clock on each call, so it is right even if the loop was stalled; when
 * the deadline passes a timer also calls on_stopped_leading.
 *
 * The decision logic is the pure kc_leader_core, testable with a fake clock. */
#ifndef KC_LEADER_H
#define KC_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_api.h"
#include "kc_flags.h"
#include "kc_error.h"

typedef struct {
  bool leader_elect;
  int64_t lease_duration_ns; /* flags give nanoseconds (KC_FLAG_DURATION) */
  int64_t renew_deadline_ns;
  int64_t retry_period_ns;
  const char *resource_lock; /* only "leases" is supported */
  const char *resource_name;
  const char *resource_namespace;
  const char *lock_object_namespace; /* Volcano's deprecated flag: overrides the namespace */
  bool release_on_cancel;            /* give the lease up on a clean shutdown */
} kc_leader_options;

#define KC_LEADER_NS_PER_S 1000000000LL
/* Volcano's defaults (vc-scheduler: name = scheduler name; vc-controller-manager:
 * "vc-controller-manager"), namespace volcano-system. */
#define KC_LEADER_OPTIONS_INIT(name_)                                                              \
  {                                                                                                \
    .leader_elect = true, .lease_duration_ns = 15 * KC_LEADER_NS_PER_S,                            \
    .renew_deadline_ns = 10 * KC_LEADER_NS_PER_S, .retry_period_ns = 2 * KC_LEADER_NS_PER_S,       \
    .resource_lock = "leases", .resource_name = (name_), .resource_namespace = "volcano-system",   \
    .lock_object_namespace = NULL, .release_on_cancel = false                                      \
  }

/* Flag rows (expand inside a kc_flag array), with Volcano's names and help defaults. */
/* clang-format off */
#define KC_LEADER_FLAGS(o, name_def)                                                               \
  {"leader-elect", KC_FLAG_BOOL, &(o)->leader_elect,                                               \
   "Start a leader election client and gain leadership before executing the main loop. Enable "    \
   "this when running replicated components for high availability.", "true", NULL, false, NULL},  \
  {"leader-elect-lease-duration", KC_FLAG_DURATION, &(o)->lease_duration_ns,                       \
   "The duration that non-leader candidates will wait after observing a leadership renewal until " \
   "attempting to acquire leadership of a led but unrenewed leader slot.", "15s", NULL, false,     \
   NULL},                                                                                          \
  {"leader-elect-renew-deadline", KC_FLAG_DURATION, &(o)->renew_deadline_ns,                       \
   "The interval between attempts by the acting master to renew a leadership slot before it "     \
   "stops leading. This must be less than the lease duration.", "10s", NULL, false, NULL},         \
  {"leader-elect-retry-period", KC_FLAG_DURATION, &(o)->retry_period_ns,                           \
   "The duration the clients should wait between attempting acquisition and renewal of a "         \
   "leadership.", "2s", NULL, false, NULL},                                                        \
  {"leader-elect-resource-lock", KC_FLAG_STRING, &(o)->resource_lock,                              \
   "The type of resource object that is used for locking during leader election. Supported "       \
   "options are 'leases'.", "leases", NULL, false, NULL},                                          \
  {"leader-elect-resource-name", KC_FLAG_STRING, &(o)->resource_name,                              \
   "The name of resource object that is used for locking during leader election.", name_def,       \
   NULL, false, NULL},                                                                             \
  {"leader-elect-resource-namespace", KC_FLAG_STRING, &(o)->resource_namespace,                    \
   "The namespace of resource object that is used for locking during leader election.",            \
   "volcano-system", NULL, false, NULL},                                                           \
  {"lock-object-namespace", KC_FLAG_STRING, &(o)->lock_object_namespace,                           \
   "Define the namespace of the lock object. (deprecated: use --leader-elect-resource-namespace)",  \
   NULL, NULL, false, NULL}
/* clang-format on */

/* client-go's rule: leaseDuration > renewDeadline > 1.2 * retryPeriod > 0, a name, and the
 * "leases" lock. KC_EINVAL with the reason in err. */
KC_NODISCARD int kc_leader_validate(const kc_leader_options *o, char *err, size_t errlen);

/* ---- the pure core ---- */

/* The Lease spec, as read or to be written. Times are MicroTime strings, compared only for
 * equality (a change of record is what we observe, never the other side's clock). */
typedef struct {
  char holder[256];
  char acquire_time[40];
  char renew_time[40];
  int64_t lease_duration_s;
  int64_t transitions;
} kc_lease_record;

typedef enum { KC_LEASE_WAIT, KC_LEASE_CREATE, KC_LEASE_UPDATE } kc_lease_action;

typedef struct {
  const char *identity; /* borrowed */
  uint64_t lease_ns, deadline_ns, retry_ns;
  kc_lease_record observed; /* the last record read or written */
  bool have_observed;
  uint64_t observed_ns; /* monotonic time observed changed */
  bool leading;
  uint64_t renew_sent_ns; /* monotonic send time of the last successful write */
} kc_leader_core;

void kc_leader_core_init(kc_leader_core *c, const char *identity, uint64_t lease_ns,
                         uint64_t deadline_ns, uint64_t retry_ns);
/* Decides what to do with the current Lease (NULL: it does not exist) at monotonic time
 * now_ns; now_str is the wall clock as a MicroTime. For CREATE and UPDATE *want is the
 * record to write. Records cur as observed. */
kc_lease_action kc_leader_decide(kc_leader_core *c, const kc_lease_record *cur, uint64_t now_ns,
                                 const char *now_str, kc_lease_record *want);
/* A write of *written that was sent at sent_ns succeeded: we lead until sent_ns + deadline.
 * Returns true when this began our leadership. */
bool kc_leader_core_won(kc_leader_core *c, const kc_lease_record *written, uint64_t sent_ns);
/* The delay before the next try: delay_ns (the jittered retry period), or less when the
 * observed holder's lease expires sooner, so a candidate takes over as soon as it may
 * instead of up to one more retry period later. */
uint64_t kc_leader_core_next_try_ns(const kc_leader_core *c, uint64_t now_ns, uint64_t delay_ns);
/* Whether writes are allowed at now_ns (leading, and within the renew deadline). */
bool kc_leader_core_fence_ok(const kc_leader_core *c, uint64_t now_ns);
/* When leading and the deadline has passed, ends the leadership and returns true. */
bool kc_leader_core_expire(kc_leader_core *c, uint64_t now_ns);
/* Nanoseconds from now_ns to the renew deadline, 0 when not leading or when it has passed
 * (a write can succeed after the deadline: lease writes may take the 60 s request timeout). */
uint64_t kc_leader_core_deadline_left_ns(const kc_leader_core *c, uint64_t now_ns);
/* Whether a write sent at sent_ns and answered at now_ns came back too late to begin a
 * leadership: its renew deadline has already passed. */
bool kc_leader_core_late(const kc_leader_core *c, uint64_t sent_ns, uint64_t now_ns);

/* ---- the elector ---- */

typedef struct kc_leader kc_leader;

typedef struct {
  void (*on_started_leading)(void *ud);
  /* Mandatory: leadership ended (renew deadline passed, or the lease was lost). Writes are
   * already fenced off when this runs; Volcano exits the process here. */
  void (*on_stopped_leading)(void *ud);
  /* The observed holder changed (identity borrowed, "" when released). Optional. */
  void (*on_new_leader)(const char *identity, void *ud);
  void *ud;
} kc_leader_callbacks;

/* *out is new. o's strings are copied; c is borrowed and must outlive the elector. identity
 * NULL: "<hostname>_<uuid>". KC_EINVAL (see kc_leader_validate, or no on_stopped_leading). */
KC_NODISCARD int kc_leader_new(kc_client *c, const kc_leader_options *o, const char *identity,
                               const kc_leader_callbacks *cb, kc_leader **out);
KC_NODISCARD int kc_leader_start(kc_leader *l);
/* Stops electing. If leading, writes are fenced at once (no callback is called); with
 * release_on_cancel the Lease is then given up (holder "", duration 1 s) so another replica
 * takes over without waiting. The memory is released after that write and the timers'
 * close callbacks: run the loop afterwards. Free it before its client. NULL is a no-op. */
void kc_leader_free(kc_leader *l);

/* 0 when this process may write, else KC_ENOTLEADER: check it before every write. */
KC_NODISCARD int kc_leader_fence(const kc_leader *l);
bool kc_leader_is_leader(const kc_leader *l);
/* Borrowed. */
const char *kc_leader_identity(const kc_leader *l);
/* The holder last observed (borrowed, "" when unknown). */
const char *kc_leader_holder(const kc_leader *l);

/* Writes "<hostname>_<uuid v4>" into buf. 0, KC_ETOOBIG or KC_EIO. */
KC_NODISCARD int kc_leader_make_identity(char *buf, size_t cap);
/* The wall clock as a Kubernetes MicroTime ("2026-11-29T16:30:00.123456Z"). */
void kc_leader_microtime(char buf[40]);

#endif
