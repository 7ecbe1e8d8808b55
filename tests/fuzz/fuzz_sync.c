/* Fuzz target for a whole Job sync with the training plugins (the cheaper, per-plugin target
 * is fuzz_plugins.c; this one keeps what only a full sync reaches: every pod of every task
 * built by the real pod builder, the PodGroup and the restart through the phase machine).
 * The input is a list of lines, each an argument of the plugin chosen by the last
 * "@<digit>" line (pytorch, tensorflow, mpi, ray, hcclrank, svc, ssh, env). A Job with
 * master, worker, ps and head tasks and every plugin is synced with its PodGroup admitted,
 * then restarted. The sync may refuse (ray without its head), never crash; every pod it
 * creates carries the job's name. Leaks are reported by the sanitizer. About 2.5 ms of CPU
 * per input under ASan: run it for depth, fuzz_plugins for breadth. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_job.h"
#include "fuzz_ctl.h"
#include "kc_codec.h"
#include "kc_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {"pytorch",  "tensorflow", "mpi", "ray",
                                    "hcclrank", "svc",        "ssh", "env"};
#define NPLUGINS (sizeof(names) / sizeof(names[0]))

/* New: {name: [args...]} for every plugin from the input lines. */
static json_t *plugins_from(const uint8_t *data, size_t size) {
  json_t *args[NPLUGINS];
  for (size_t i = 0; i < NPLUGINS; i++)
    args[i] = json_array();
  size_t cur = 0, start = 0;
  for (size_t i = 0; i <= size; i++) {
    if (i < size && data[i] != '\n')
      continue;
    size_t len = i - start;
    const char *line = (const char *)data + start;
    start = i + 1;
    if (len == 2 && line[0] == '@' && line[1] >= '0' && line[1] < '0' + (int)NPLUGINS) {
      cur = (size_t)(line[1] - '0');
      continue;
    }
    /* arguments are JSON strings: what is not UTF-8 the API server would refuse */
    json_t *s = json_stringn(line, len);
    if (s)
      json_array_append_new(args[cur], s);
  }
  json_t *p = json_object();
  for (size_t i = 0; i < NPLUGINS; i++)
    json_object_set_new(p, names[i], args[i]);
  return p;
}

static void check_pods(const ctl_plan *plan) {
  size_t i;
  json_t *pod;
  json_array_foreach(plan->pods_create, i, pod) {
    const char *n = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
    if (!n || strncmp(n, "fz-", 3) != 0)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *j = json_loads(job_text, 0, NULL);
  if (!j)
    abort();
  json_object_set_new(json_object_get(j, "spec"), "plugins", plugins_from(data, size));
  json_object_set_new(j, "status", json_pack("{s:{s:s}}", "state", "phase", "Pending"));
  Kiln__Job *job = NULL;
  Kiln__PodGroup *pg = NULL;
  json_t *pgj = json_loads("{\"metadata\":{\"name\":\"pg\"},\"spec\":{\"minMember\":1},"
                           "\"status\":{\"phase\":\"Inqueue\"}}",
                           0, NULL);
  if (kc_podgroup_decode(pgj, &pg, NULL, 0) != 0)
    abort();
  /* The codec refuses some strings (a NUL inside): the controller never sees that Job. */
  if (kc_job_decode(j, &job, NULL, 0) != 0)
    goto out;
  ctl_job_view v = {.job = job, .podgroup = pg, .queue_exists = true, .now = 1, .ops = &ops};
  ctl_request req = {.event = CTL_EV_OUT_OF_SYNC};
  ctl_plan plan;
  ctl_plan_init(&plan);
  int rc = ctl_job_sync(&v, &req, &plan);
  if (rc > 0)
    abort();
  check_pods(&plan);
  ctl_plan_close(&plan);
  ctl_request restart = {.action = CTL_ACT_RESTART_JOB};
  ctl_plan_init(&plan);
  if (ctl_job_sync(&v, &restart, &plan) > 0)
    abort();
  ctl_plan_close(&plan);
out:
  kc_msg_free(job);
  kc_msg_free(pg);
  json_decref(j);
  json_decref(pgj);
  return 0;
}
