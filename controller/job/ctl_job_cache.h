/* What the job controller's caches hold, for the files that read them: the input side
 * (ctl_job_input_shell.c) decodes these, the executor reads the pod cache. */
#ifndef CTL_JOB_CACHE_H
#define CTL_JOB_CACHE_H

#include <stdbool.h>

#include "ctl_job.h"

/* A pod as the pod cache keeps it: the core's view plus what the handlers route by. */
typedef struct {
  ctl_pod pod;
  char ns[CTL_NAME_MAX];
  char job[CTL_NAME_MAX];      /* annotation volcano.sh/job-name */
  char owner_uid[CTL_UID_MAX]; /* controller ownerRef uid when it is a Job */
  bool job_owned;
} ctl_spod;

/* A PVC: only its namespace and name matter. */
typedef struct {
  char ns[CTL_NAME_MAX];
  char name[CTL_NAME_MAX];
} ctl_spvc;

#endif
