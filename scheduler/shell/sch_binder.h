/* The binder (Volcano AddBindTask / processBindTask / DefaultBinder.Bind): committed
 * allocations become POST pods/<name>/binding calls, all in flight at once over the shared
 * HTTP/2 connection (the client's QPS bucket paces them).
 *
 * The caller assumes the pod in the cache before handing it over. On success the pod gets
 * a Normal "Scheduled" event ("Successfully assigned ns/pod to node") and the assumption
 * stays until the watch confirms it; on failure the assumption is forgotten (the pod is
 * Pending again in the next session), and unless the pod is gone it gets PodScheduled=False
 * and a Warning FailedScheduling event saying why the bind failed. */
#ifndef SCH_BINDER_H
#define SCH_BINDER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "kc_api.h"
#include "kc_events.h"
#include "sch_cache.h"
#include "kc_error.h"

typedef struct sch_binder sch_binder;

typedef struct {
  kc_client *client;         /* borrowed */
  sch_cache *cache;          /* borrowed */
  kc_event_recorder *events; /* borrowed; NULL: no events */
  /* Gate for every write; NULL allows them. 0 when this process may write. */
  int (*may_write)(void *ud);
  void *ud;
  /* Called after each bind attempt ends: ok, the time from hand-over to the answer, and the
   * pod's creation time given to sch_binder_bind. */
  void (*on_done)(int err, uint64_t latency_ns, int64_t created_s, void *done_ud);
  void *done_ud;
  /* Test aid: hold every bind this long before sending it (0: none). */
  int64_t delay_ms;
  /* Send each Binding in Kubernetes' protobuf encoding (kube-scheduler's default) rather
   * than JSON; the answer is read in either. */
  bool protobuf;
} sch_binder_options;

/* *out is new. */
KC_NODISCARD int sch_binder_new(uv_loop_t *loop, const sch_binder_options *o, sch_binder **out);
/* Cancels the binds not yet sent (their assumptions are forgotten), stops the delay
 * timer; calls in flight end with their callbacks from the client. Run the loop
 * afterwards. NULL is a no-op. */
void sch_binder_free(sch_binder *b);

/* PodScheduled=False with reason and message on pod ns/name's status, through c (best effort:
 * a failed write is logged; a pod gone or a client closing is not). The binder's bind
 * failures and the shell's explanations both write it. */
void sch_pod_unschedulable(kc_client *c, const char *ns, const char *name, const char *reason,
                           const char *message);

/* Queues a bind of pod ns/name (uid may be NULL) to node; created_s (the pod's creation, Unix
 * seconds, 0 unknown) goes back to on_done. Strings are copied. 0 or KC_ENOMEM. */
KC_NODISCARD int sch_binder_bind(sch_binder *b, const char *ns, const char *name, const char *uid,
                                 const char *node, int64_t created_s);

/* Patches to send before the next bind of pod key ("ns/name"), each a merge patch or NULL,
 * both *stolen*: node_patch on the node it binds to, then pod_patch on the pod; a failed
 * patch fails the bind as a failed Binding does (rolled back, the pod told why). Call it
 * before sch_binder_bind / sch_binder_bind_in. 0 or KC_ENOMEM. */
KC_NODISCARD int sch_binder_annotate(sch_binder *b, const char *key, json_t *node_patch,
                                     json_t *pod_patch);

/* Gates: the binds of PodGroup group (its "ns/name") wait behind a closed gate until
 * sch_binder_open opens it, so that a status write sent first is answered before any of its
 * pods is bound. sch_binder_close_gate closes group's gate: 0, 1 when it was closed already,
 * or KC_ENOMEM; sch_binder_bind_in is sch_binder_bind, behind group's gate while that is
 * closed; sch_binder_open sends what waited and forgets the gate (no gate: no-op). */
KC_NODISCARD int sch_binder_close_gate(sch_binder *b, const char *group);
KC_NODISCARD int sch_binder_bind_in(sch_binder *b, const char *group, const char *ns,
                                    const char *name, const char *uid, const char *node,
                                    int64_t created_s);
void sch_binder_open(sch_binder *b, const char *group);
/* One more sch_binder_open that group's closed gate waits for before it opens (several
 * writes before one bind: each opens it once). 0, or KC_EINVAL when it is not closed. */
KC_NODISCARD int sch_binder_hold_gate(sch_binder *b, const char *group);
/* Drops what waits behind group's gate, unsent (their assumptions are forgotten: the pods are
 * Pending again in the next session), and forgets the gate. No gate: no-op. */
void sch_binder_drop(sch_binder *b, const char *group);

typedef struct {
  uint64_t sent, bound, failed, gone;
  size_t in_flight, waiting;
} sch_binder_stats;
void sch_binder_get_stats(const sch_binder *b, sch_binder_stats *st);

#endif
