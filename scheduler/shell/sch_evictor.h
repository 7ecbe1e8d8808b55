/* The evictor (Volcano pkg/scheduler/cache defaultEvictor and SchedulerCache.Evict), and
 * the nominatedNodeName of preemptors.
 *
 * An eviction, in Volcano's order: a Warning event `Evict` "Pod is evicted, because of
 * <reason>" on the pod; the pod's status gets Ready=False (reason Evict) and
 * DisruptionTarget=True (reason PreemptionByScheduler), both with that message; then the
 * pod is deleted (with its UID as precondition, so a pod recreated under the same name is
 * never hit); the PodGroup gets a Normal event `Evict` whose message is the reason. From
 * the moment it starts until the watch shows the deletion, the cache shows the pod as
 * Releasing (sch_cache_evicting), so no later session chooses it again; a failed status
 * update or delete gives the pod back to scheduling, as Volcano's resync does.
 *
 * Everything runs on the loop thread. */
#ifndef SCH_EVICTOR_H
#define SCH_EVICTOR_H

#include "kc_api.h"
#include "kc_events.h"
#include "pod.pb-c.h"
#include "sch_cache.h"
#include "volcano.pb-c.h"
#include "kc_error.h"

typedef struct sch_evictor sch_evictor;

/* c, events (may be NULL) and cache are borrowed and must outlive the evictor. */
KC_NODISCARD int sch_evictor_new(kc_client *c, kc_event_recorder *events, sch_cache *cache,
                                 sch_evictor **out);
/* Calls in flight finish on their own, without touching the cache. NULL: no-op. */
void sch_evictor_free(sch_evictor *ev);

/* Starts evicting p (borrowed for the call) for reason ("preempt", "reclaim", "shuffle");
 * pg (may be NULL) gets the PodGroup event. 0; KC_EEXISTS when the pod is already being
 * evicted (nothing is done twice); KC_ENOMEM. */
KC_NODISCARD int sch_evictor_evict(sch_evictor *ev, const Kiln__Pod *p, const Kiln__PodGroup *pg,
                                   const char *reason);
/* Writes status.nominatedNodeName = node on p, unless it already says so. 0 or KC_ENOMEM. */
KC_NODISCARD int sch_evictor_nominate(sch_evictor *ev, const Kiln__Pod *p, const char *node);

/* Evictions started since the evictor was made. */
uint64_t sch_evictor_count(const sch_evictor *ev);

#endif
