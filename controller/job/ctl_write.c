/* What a write's answer means for the plan (ctl_write.h): the executor's decisions, apart
 * from its effects, so that each can be checked without a server. */
#include "ctl_write.h"

#include <stdio.h>
#include <string.h>

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
  if (kind == CTL_W_OBJ_CREATE && err == KC_EALREADYEXISTS) {
    /* Someone's object, or ours from a sync whose status write was lost: read whose. */
    if (stopping) {
      failed(&o, kind, err);
      return o;
    }
    o.next = CTL_WNEXT_OBJ_GET;
    return o;
  }
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

/* The uid of the controller ownerReference in metadata, or NULL. */
static const char *controller_uid(const json_t *meta, const char **kind, const char **name) {
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(meta, "ownerReferences"), i, r) {
    if (!json_is_true(json_object_get(r, "controller")))
      continue;
    *kind = json_string_value(json_object_get(r, "kind"));
    *name = json_string_value(json_object_get(r, "name"));
    return json_string_value(json_object_get(r, "uid"));
  }
  return NULL;
}

ctl_write_outcome ctl_write_owner(int err, const json_t *obj, const char *uid, const char *kind,
                                  const char *name, char *msg, size_t len) {
  ctl_write_outcome o = {0};
  if (len)
    msg[0] = '\0';
  if (err) {
    /* Gone meanwhile (NotFound): the next sync creates it; anything else: try again later. */
    failed(&o, CTL_W_OBJ_OWNER, err);
    return o;
  }
  const json_t *meta = json_object_get(obj, "metadata");
  const char *okind = NULL, *oname = NULL;
  const char *cuid = controller_uid(meta, &okind, &oname);
  if (cuid && uid && uid[0] && strcmp(cuid, uid) == 0)
    return o;
  failed(&o, CTL_W_OBJ_OWNER, KC_EALREADYEXISTS);
  o.in_the_way = true;
  char by[2 * 256 + 64];
  if (cuid)
    snprintf(by, sizeof(by), "its controller is %s %s (uid %s)", okind ? okind : "?",
             oname ? oname : "?", cuid);
  else
    snprintf(by, sizeof(by), "it has no controller");
  snprintf(msg, len,
           "%s %s is in the way: it exists and this Job is not its controller (%s); the Job "
           "does not use it and creates no pod until it is deleted",
           kind ? kind : "object", name ? name : "", by);
  return o;
}

ctl_write_outcome ctl_write_unsent(ctl_write_next next, int err) {
  ctl_write_outcome o = {0};
  if (next == CTL_WNEXT_POD_DELETE && err)
    failed(&o, CTL_W_POD_DELETE, err);
  /* The object there was not checked: it is not used. */
  if (next == CTL_WNEXT_OBJ_GET)
    failed(&o, CTL_W_OBJ_OWNER, err ? err : KC_EALREADYEXISTS);
  return o;
}
