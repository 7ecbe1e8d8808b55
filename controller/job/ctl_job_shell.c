/* job-controller: Volcano's pkg/controllers/job, the shell of ctl_job_input_shell.c and
 * ctl_job_exec_shell.c around the core of ctl_sync.c, registered in the controllers table. */
#include "ctl_controllers.h"
#include "ctl_job_shell.h"
#include "kc_log.h"

static int job_init(const ctl_env *env, void **out) {
  ctl_shell_options so = {.workers = env->workers,
                          .max_requeue = env->max_requeue,
                          .default_scheduler = env->nschedulers ? env->schedulers[0] : "volcano",
                          .metrics = env->metrics,
                          .leader = env->leader,
                          .events = env->events,
                          .hub = env->hub};
  ctl_shell *s = NULL;
  int rc = ctl_shell_new(env->loop, env->client, &so, &s);
  *out = s;
  return rc;
}

static int job_start(void *c) {
  return ctl_shell_start(c);
}

static bool job_synced(const void *c) {
  return ctl_shell_synced(c);
}

static void job_stop(void *c, uint64_t deadline_ms, void (*done)(void *), void *ud) {
  ctl_shell_stop(c, deadline_ms, done, ud);
}

static void job_free(void *c) {
  if (!c)
    return;
  ctl_shell_stats st;
  ctl_shell_get_stats(c, &st);
  KC_INFO("job-controller stopped: %llu syncs, %llu pods created (%llu already existed), %llu "
          "deleted, %llu status writes, %d plans abandoned",
          (unsigned long long)st.syncs, (unsigned long long)st.pods_created,
          (unsigned long long)st.pods_create_exists, (unsigned long long)st.pods_deleted,
          (unsigned long long)st.status_writes, st.inflight);
  ctl_shell_free(c);
}

const ctl_controller_def ctl_job_controller = {
    .name = "job-controller",
    .informers = "jobs, pods (volcano.sh/job-name), podgroups, commands, queues, "
                 "persistentvolumeclaims, priorityclasses",
    .init = job_init,
    .start = job_start,
    .synced = job_synced,
    .stop = job_stop,
    .free = job_free,
};
