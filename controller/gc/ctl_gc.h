/* The gc controller's decision (Volcano pkg/controllers/garbagecollector): a finished Job
 * with ttlSecondsAfterFinished is deleted once that long has passed since it finished. Pure;
 * the shell is ctl_ctrl_gc.c. */
#ifndef CTL_GC_H
#define CTL_GC_H

#include <stdbool.h>
#include <stdint.h>
#include "kc_error.h"

/* What the decision reads of a Job. */
typedef struct {
  const char *phase; /* status.state.phase */
  bool has_ttl;
  int64_t ttl_s;     /* spec.ttlSecondsAfterFinished */
  bool deleting;     /* metadata.deletionTimestamp is set */
  bool has_finish;   /* status.state.lastTransitionTime is set */
  int64_t finish_ms; /* ... as Unix milliseconds */
} ctl_gc_job;

typedef enum {
  CTL_GC_KEEP = 0, /* not finished, no TTL, or already being deleted */
  CTL_GC_WAIT,     /* check again after *wait_ms */
  CTL_GC_EXPIRED,  /* delete it (after re-reading it) */
} ctl_gc_verdict;

/* Volcano's needsCleanup: a TTL and phase Completed, Failed or Terminated. */
bool ctl_gc_needs_cleanup(const ctl_gc_job *j);
/* Volcano's processTTL at now_ms. KC_EINVAL when a finished Job has no lastTransitionTime
 * (Volcano: "unable to find the time when the Job finished"). A finish time in the future
 * (clock skew) simply waits. */
KC_NODISCARD int ctl_gc_decide(const ctl_gc_job *j, int64_t now_ms, ctl_gc_verdict *verdict,
                               int64_t *wait_ms);

#endif
