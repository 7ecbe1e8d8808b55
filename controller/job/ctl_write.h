/* What the result of one of the executor's writes means for the Job's plan: a pure function
 * of the write and its answer (ctl_write.c), so that the executor (ctl_job_exec_shell.c) keeps the
 * effects (counting, the write-through, expectations, the follow-up call, the event lists). */
#ifndef CTL_WRITE_H
#define CTL_WRITE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The writes the executor sends. */
typedef enum {
  CTL_W_PLAIN = 0, /* Commands, PVCs and plugin objects */
  CTL_W_POD_PATCH, /* marks a pod out of sync before deleting it (Volcano's order) */
  CTL_W_POD_DELETE,
  CTL_W_POD_CREATE,
  CTL_W_STATUS,
  CTL_W_JOB_PATCH,
  CTL_W_JOB_GET, /* after a Conflict on the status: the Job as it is now */
  CTL_W_PG_WRITE,
  CTL_W_PG_DELETE,
  /* A plugin's object (Secret, Service, ConfigMap, NetworkPolicy): one found there already is
   * used only when this Job is its controller, so AlreadyExists is answered by reading it. */
  CTL_W_OBJ_CREATE,
  CTL_W_OBJ_OWNER, /* that read: the metadata of the object in the way */
} ctl_write_kind;

/* A call to send next on the same write instead of finishing it. */
typedef enum {
  CTL_WNEXT_NONE = 0,
  CTL_WNEXT_POD_DELETE, /* the marked pod, with its uid as a precondition */
  CTL_WNEXT_JOB_GET,    /* read the Job the status write conflicted on */
  CTL_WNEXT_OBJ_GET,    /* read the metadata of the object a plugin's create found there */
} ctl_write_next;

/* Which of the shell's counters the result adds one to. */
typedef enum {
  CTL_WCOUNT_NONE = 0,
  CTL_WCOUNT_POD_DELETED,
  CTL_WCOUNT_POD_CREATED,
  CTL_WCOUNT_POD_EXISTS, /* a create found the pod there already */
  CTL_WCOUNT_STATUS,
} ctl_write_count;

/* What of the object the server returned the shell keeps ahead of its watch. */
typedef enum {
  CTL_WKEEP_NONE = 0,
  CTL_WKEEP_JOB,    /* the Job, as the write returned it */
  CTL_WKEEP_JOB_RV, /* the Job, and its resourceVersion for the status write that follows */
  CTL_WKEEP_PG,     /* the PodGroup */
  CTL_WKEEP_PG_DROP /* forget the PodGroup written before: it is deleted */
} ctl_write_keep;

/* The list of failed pods a Warning event reports at the end of the plan. */
typedef enum { CTL_WLIST_NONE = 0, CTL_WLIST_CREATE, CTL_WLIST_DELETE } ctl_write_list;

typedef struct {
  int err;       /* what the plan counts as failed (0: the write did what was asked) */
  bool conflict; /* err is a Conflict: the next sync starts from a fresh copy, no backoff */
  ctl_write_next next;
  ctl_write_count count;
  ctl_write_keep keep;
  ctl_write_list list;
  bool expect_del; /* the pod's expectation goes: the watch will not show what was asked */
  bool latency;    /* a pod was created: observe the Job's creation-to-pod latency */
  bool in_the_way; /* an object of that name that the Job does not control: a Warning event */
} ctl_write_outcome;

/* The Accept header of the CTL_WNEXT_OBJ_GET read: metadata only, so that the controller
 * never holds the data of a Secret it does not own. */
#define CTL_ACCEPT_METADATA "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

/* The Warning event's reason for an object in the way. */
#define CTL_REASON_IN_THE_WAY "ObjectInTheWay"

/* The outcome of a write of kind that the server answered with err (0 or a negative code
 * from kc_error.h). ok_exists / ok_notfound: AlreadyExists / NotFound mean the write's aim
 * holds already. stopping: the controller is shutting down, so no follow-up is sent. */
ctl_write_outcome ctl_write_result(ctl_write_kind kind, bool ok_exists, bool ok_notfound, int err,
                                   bool stopping);

/* The outcome of the CTL_W_OBJ_OWNER read of the object (kind and name, as created) a
 * plugin's create found there: err and obj (its metadata, borrowed, may be NULL) as the server
 * answered, uid the Job's. Used (err 0) only when its controller ownerReference is the Job;
 * otherwise the write fails, so that no pod of the plan mounts or joins it, and msg (len
 * bytes) says which object is in the way, for the Warning event (o.in_the_way). */
ctl_write_outcome ctl_write_owner(int err, const json_t *obj, const char *uid, const char *kind,
                                  const char *name, char *msg, size_t len);

/* The outcome when the follow-up `next` of a write could not be sent (err from the call). */
ctl_write_outcome ctl_write_unsent(ctl_write_next next, int err);

#endif
