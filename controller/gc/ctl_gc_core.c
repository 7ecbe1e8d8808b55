/* The gc controller's decision; see ctl_gc.h. Unit-tested in tests/unit/test_ctl_gc.c. */
#include <string.h>

#include "ctl_gc.h"
#include "kc_error.h"

bool ctl_gc_needs_cleanup(const ctl_gc_job *j) {
  const char *p = j->phase ? j->phase : "";
  return j->has_ttl &&
         (strcmp(p, "Completed") == 0 || strcmp(p, "Failed") == 0 || strcmp(p, "Terminated") == 0);
}

int ctl_gc_decide(const ctl_gc_job *j, int64_t now_ms, ctl_gc_verdict *verdict, int64_t *wait_ms) {
  *verdict = CTL_GC_KEEP;
  *wait_ms = 0;
  if (j->deleting || !ctl_gc_needs_cleanup(j))
    return 0;
  if (!j->has_finish)
    return KC_EINVAL;
  int64_t expire = j->finish_ms + j->ttl_s * 1000;
  if (expire <= now_ms) {
    *verdict = CTL_GC_EXPIRED;
    return 0;
  }
  *verdict = CTL_GC_WAIT;
  *wait_ms = expire - now_ms;
  return 0;
}
