/* What a write's answer means for the plan (ctl_write.h): the executor's decisions, apart
 * from its effects, so that each can be checked without a server. */
#include "ctl_write.h"

#include "kc_error.h"

/* A failed write of a pod goes in the list of the Warning event the plan ends with, and its
 * expectation goes: the watch will not show it. */
static void failed(ctl_write_outcome *o, ctl_write_kind kind, int err) {
  o->err = err;
  o->conflict = err == KC_ECONFLICT;
  if (kind == CTL_W_POD_CREATE) {
    o->expect_del = true;
    o->list = CTL_WLIST_CREATE;
  } else if (kind == CTL_W_POD_DELETE || kind == CTL_W_POD_PATCH) {
    o->expect_del = true;
    o->list = CTL_WLIST_DELETE;
  }
}

ctl_write_outcome ctl_write_result(ctl_write_kind kind, bool ok_exists, bool ok_notfound, int err,
                                   bool stopping) {
  ctl_write_outcome o = {0};
  int e = err;
  if ((e == KC_EALREADYEXISTS && ok_exists) || (e == KC_ENOTFOUND && ok_notfound))
    e = 0;
  switch (kind) {
  case CTL_W_POD_PATCH:
    if (e == KC_ENOTFOUND) { /* gone already: nothing to delete */
      o.expect_del = true;
      return o;
    }
    /* Volcano: marked out of sync, now delete it (with the uid as a precondition, so a pod of
     * the same name made meanwhile is kept). */
    if (e == 0 && !stopping)
      o.next = CTL_WNEXT_POD_DELETE;
    break;
  case CTL_W_POD_DELETE:
    /* A Conflict here is a failed uid precondition: that pod is already gone. */
    if (e == KC_ECONFLICT)
      e = 0;
    if (e == 0)
      o.count = CTL_WCOUNT_POD_DELETED;
    break;
  case CTL_W_POD_CREATE:
    if (err == KC_EALREADYEXISTS) {
      o.count = CTL_WCOUNT_POD_EXISTS;
      o.expect_del = true;
    } else if (e == 0) {
      o.count = CTL_WCOUNT_POD_CREATED;
      o.latency = true;
    }
    break;
  case CTL_W_STATUS:
    if (e == 0) {
      o.count = CTL_WCOUNT_STATUS;
      o.keep = CTL_WKEEP_JOB;
    } else if (e == KC_ECONFLICT && !stopping) {
      /* Someone else wrote the Job (or the cache and our last write are both behind): read
       * it once, so the next sync starts from the server's copy instead of waiting for the
       * watch and failing again. */
      o.err = e;
      o.conflict = true;
      o.next = CTL_WNEXT_JOB_GET;
      return o;
    }
    break;
  case CTL_W_JOB_PATCH:
    if (e == 0)
      o.keep = CTL_WKEEP_JOB_RV;
    break;
  case CTL_W_JOB_GET:
    if (e == 0)
      o.keep = CTL_WKEEP_JOB;
    return o; /* the Conflict that sent it is counted already */
  case CTL_W_PG_WRITE:
    /* An AlreadyExists returns the Status, not the PodGroup. */
    if (e == 0 && err == 0)
      o.keep = CTL_WKEEP_PG;
    break;
  case CTL_W_PG_DELETE:
    if (e == 0)
      o.keep = CTL_WKEEP_PG_DROP;
    break;
  default:
    break;
  }
  if (e)
    failed(&o, kind, e);
  return o;
}

ctl_write_outcome ctl_write_unsent(ctl_write_next next, int err) {
  ctl_write_outcome o = {0};
  if (next == CTL_WNEXT_POD_DELETE && err)
    failed(&o, CTL_W_POD_DELETE, err);
  return o;
}
