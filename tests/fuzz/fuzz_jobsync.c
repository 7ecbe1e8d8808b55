/* Fuzz target for the job controller's core on a generated world (issue 27): the input bytes
 * are choices, not text. They build a Job (1-6 tasks, some unnamed; replicas and minAvailable
 * from 0 to 2^31-1; templates whose containers request quantities from 1n to past 10^18 of
 * cpu, memory and extended resources; policies with every event and action, exit codes and
 * timeouts; dependsOn, partition policies, volumes, every plugin with arguments; a status in
 * every phase), its pods (any task, index, phase, being deleted, out of sync, of another
 * version), its PodGroup (every phase, conditions), its queue (missing, not a leaf, closed),
 * priority classes, Commands, PVCs, the request that woke the sync (every event and action)
 * and the time; then ctl_job_sync runs once. What the CRD's own rules refuse (tasks sharing a
 * name) is not generated: the controller never sees it.
 *
 * Checks: the sync returns 0 or a negative error; it creates at most the burst it is given (1 to
 * 24 here; 1,000 in the controller); every pod it
 * creates is named <job>-<task>-<index> for one of the job's tasks and an index below its
 * replicas, once, and is not a pod that exists; every pod it deletes exists and is not also
 * created; the status counters are not negative and each phase's total is the sum of the
 * tasks' counts. The sanitizers catch the rest (undefined arithmetic, leaks). */
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_job.h"
#include "fuzz_gen.h"
#include "kc_error.h"
#include "kc_log.h"
#include "kc_strmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_TASKS 6
#define MAX_PODS  16
#define NOW       1796000000

static fz_arena arena;

static const char *const job_names[] = {
    "fz", "a-very-long-job-name-that-fills-most-of-the-sixty-three-chars-x"};
static const char *const task_names[] = {
    "master", "worker", "ps",
    "head",   "",       "a-task-name-long-enough-that-the-pod-name-passes-the-dns-limit-x"};
static const char *const quantities[] = {
    "0",   "1n",  "1m", "1",   "100m", "1Gi", "1E", "8E", "9223372036854775807",
    "1Ei", "1e3", "3",  "0.5", "1Ki",  "2k",  "1P", "4"};
static const char *const resources[] = {
    "cpu",  "memory",       "nvidia.com/gpu", "example.com/x", "ephemeral-storage",
    "pods", "hugepages-2Mi"};
static const char *const timeouts[] = {NULL,    "0s",  "1s", "10m",
                                       "1h30m", "-1s", "x",  "99999999999h"};
static const int32_t exit_codes[] = {0, 1, 2, 137, 255, -1, INT32_MAX};
static const char *const plugin_names[] = {"ssh", "svc",      "env", "pytorch", "tensorflow",
                                           "mpi", "hcclrank", "ray", "nope"};
static const char *const plugin_args[] = {"--master=master",
                                          "--worker=worker",
                                          "--port=23",
                                          "--publish-not-ready-addresses=true",
                                          "--disable-network-policy=true",
                                          "--ssh-key-file-path=/k",
                                          "--head=head",
                                          "--port=0",
                                          "--port=70000",
                                          "--ps=ps",
                                          "--mpi-master=master",
                                          "--headless=true"};
static const char *const pg_phases[] = {NULL,      "",        "Pending",   "Inqueue",
                                        "Running", "Unknown", "Completed", "x"};
static const char *const queue_states[] = {NULL, "Open", "Closed", "Closing", "Unknown"};
static const char *const times[] = {NULL, "2026-11-30T00:00:00Z", "1970-01-01T00:00:00Z", "x",
                                    "9999-12-31T23:59:59Z"};

static const char *pick_task_name(fz_rd *r) {
  size_t k = fz_pick(r, 8);
  return k < 6 ? task_names[k] : k == 6 ? NULL : "t";
}

/* A pod template: containers with requests and limits, hostname, subdomain; sometimes none,
 * an empty one or text that is not JSON. */
static char *gen_template(fz_rd *r) {
  uint8_t kind = fz_u8(r);
  if (kind % 16 == 15)
    return kind & 16 ? NULL : fz_str(&arena, kind & 32 ? "{" : "{}");
  char res[1024] = "";
  size_t off = 0, nres = fz_pick(r, 4);
  for (size_t i = 0; i < nres; i++)
    off += (size_t)snprintf(res + off, sizeof(res) - off, "%s\"%s\":\"%s\"", i ? "," : "",
                            FZ_PICK(r, resources), FZ_PICK(r, quantities));
  bool limits = fz_bit(r);
  return fz_fmt(&arena,
                "{\"metadata\":{\"labels\":{\"l\":\"v\"}},\"spec\":{%s%s\"restartPolicy\":\"%s\","
                "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"ports\":[{\"containerPort\":"
                "22}],\"resources\":{\"requests\":{%s}%s%s%s}}]%s}}",
                kind & 1 ? "\"hostname\":\"h\"," : "", kind & 2 ? "\"subdomain\":\"s\"," : "",
                kind & 4 ? "OnFailure" : "Never", res, limits ? ",\"limits\":{" : "",
                limits ? res : "", limits ? "}" : "",
                kind & 8 ? ",\"initContainers\":[{\"name\":\"i\"}]" : "");
}

static Kiln__LifecyclePolicy *gen_policy(fz_rd *r) {
  Kiln__LifecyclePolicy *p = fz_alloc(&arena, sizeof(*p));
  kiln__lifecycle_policy__init(p);
  size_t a = fz_pick(r, CTL_ACT_COUNT + 1);
  p->action = fz_str(&arena, a < CTL_ACT_COUNT ? ctl_action_name((ctl_action)a) : "Bogus");
  size_t e = fz_pick(r, CTL_EV_COUNT + 1);
  if (e < CTL_EV_COUNT)
    p->event = fz_str(&arena, ctl_event_name((ctl_event)e));
  p->n_events = fz_pick(r, 3);
  p->events = fz_alloc(&arena, (p->n_events + 1) * sizeof(char *));
  for (size_t i = 0; i < p->n_events; i++)
    p->events[i] = fz_str(&arena, ctl_event_name((ctl_event)fz_pick(r, CTL_EV_COUNT)));
  if ((p->has_exit_code = fz_bit(r)))
    p->exit_code = FZ_PICK(r, exit_codes);
  p->timeout = fz_str(&arena, FZ_PICK(r, timeouts));
  return p;
}

static void gen_policies(fz_rd *r, size_t *n, Kiln__LifecyclePolicy ***out) {
  *n = fz_pick(r, 4);
  *out = fz_alloc(&arena, (*n + 1) * sizeof(**out));
  for (size_t i = 0; i < *n; i++)
    (*out)[i] = gen_policy(r);
}

static Kiln__TaskSpec *gen_task(fz_rd *r) {
  Kiln__TaskSpec *t = fz_alloc(&arena, sizeof(*t));
  kiln__task_spec__init(t);
  t->name = fz_str(&arena, pick_task_name(r));
  t->has_replicas = true;
  t->replicas = fz_count(r);
  if ((t->has_min_available = fz_bit(r)))
    t->min_available = fz_i32(r);
  if ((t->has_max_retry = fz_bit(r)))
    t->max_retry = fz_i32(r);
  t->template_json = gen_template(r);
  gen_policies(r, &t->n_policies, &t->policies);
  uint8_t extra = fz_u8(r);
  if (extra & 1) {
    Kiln__DependsOn *d = fz_alloc(&arena, sizeof(*d));
    kiln__depends_on__init(d);
    d->n_name = 1 + fz_pick(r, 2);
    d->name = fz_alloc(&arena, d->n_name * sizeof(char *));
    for (size_t i = 0; i < d->n_name; i++)
      d->name[i] = fz_str(&arena, fz_bit(r) ? pick_task_name(r) : "nope");
    d->iteration = fz_str(&arena, extra & 2 ? "any" : extra & 4 ? "all" : NULL);
    t->depends_on = d;
  }
  if (extra & 8) {
    Kiln__PartitionPolicy *pp = fz_alloc(&arena, sizeof(*pp));
    kiln__partition_policy__init(pp);
    pp->has_total_partitions = pp->has_partition_size = true;
    pp->total_partitions = fz_i32(r);
    pp->partition_size = fz_i32(r);
    if ((pp->has_min_partitions = fz_bit(r)))
      pp->min_partitions = fz_i32(r);
    t->partition_policy = pp;
  }
  if (extra & 16)
    t->topology_policy = fz_str(&arena, extra & 32 ? "single-numa-node" : "x");
  return t;
}

static void gen_plugins(fz_rd *r, Kiln__JobSpec *s) {
  uint16_t used = 0;
  size_t n = fz_pick(r, 4);
  s->plugins = fz_alloc(&arena, (n + 1) * sizeof(*s->plugins));
  for (size_t i = 0; i < n; i++) {
    size_t k = fz_pick(r, sizeof(plugin_names) / sizeof(plugin_names[0]));
    if (used & (1u << k))
      continue;
    used = (uint16_t)(used | (1u << k));
    Kiln__JobSpec__PluginsEntry *e = fz_alloc(&arena, sizeof(*e));
    kiln__job_spec__plugins_entry__init(e);
    e->key = fz_str(&arena, plugin_names[k]);
    e->value = fz_alloc(&arena, sizeof(*e->value));
    kiln__string_list__init(e->value);
    e->value->n_items = fz_pick(r, 3);
    e->value->items = fz_alloc(&arena, (e->value->n_items + 1) * sizeof(char *));
    for (size_t a = 0; a < e->value->n_items; a++)
      e->value->items[a] = fz_str(&arena, FZ_PICK(r, plugin_args));
    s->plugins[s->n_plugins++] = e;
  }
}

static void gen_volumes(fz_rd *r, Kiln__JobSpec *s) {
  s->n_volumes = fz_pick(r, 3);
  s->volumes = fz_alloc(&arena, (s->n_volumes + 1) * sizeof(*s->volumes));
  for (size_t i = 0; i < s->n_volumes; i++) {
    Kiln__VolumeSpec *v = fz_alloc(&arena, sizeof(*v));
    kiln__volume_spec__init(v);
    uint8_t b = fz_u8(r);
    v->mount_path = fz_fmt(&arena, "/v%d", b & 1);
    v->volume_claim_name = fz_str(&arena, b & 2 ? "claim" : b & 4 ? "pvc0" : NULL);
    if (b & 8)
      v->volume_claim_json =
          fz_str(&arena, b & 16 ? "{"
                                : "{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":"
                                  "{\"requests\":{\"storage\":\"1Gi\"}}}");
    s->volumes[i] = v;
  }
}

static Kiln__JobSpec *gen_spec(fz_rd *r) {
  Kiln__JobSpec *s = fz_alloc(&arena, sizeof(*s));
  kiln__job_spec__init(s);
  s->n_tasks = 1 + fz_pick(r, MAX_TASKS);
  s->tasks = fz_alloc(&arena, s->n_tasks * sizeof(*s->tasks));
  for (size_t i = 0; i < s->n_tasks; i++) {
    s->tasks[i] = gen_task(r);
    /* The CRD refuses a Job whose tasks share a name. */
    const char *n = s->tasks[i]->name;
    for (size_t k = 0; n && *n && k < i; k++)
      if (s->tasks[k]->name && strcmp(s->tasks[k]->name, n) == 0)
        s->tasks[i]->name = fz_fmt(&arena, "t%zu", i);
  }
  if ((s->has_min_available = fz_bit(r)))
    s->min_available = fz_i32(r);
  if ((s->has_max_retry = fz_bit(r)))
    s->max_retry = fz_i32(r);
  if ((s->has_min_success = fz_bit(r)))
    s->min_success = fz_i32(r);
  if ((s->has_ttl_seconds_after_finished = fz_bit(r)))
    s->ttl_seconds_after_finished = fz_i32(r);
  gen_policies(r, &s->n_policies, &s->policies);
  gen_plugins(r, s);
  gen_volumes(r, s);
  uint8_t b = fz_u8(r);
  s->queue = fz_str(&arena, b & 1 ? "default" : b & 2 ? "q" : NULL);
  s->priority_class_name = fz_str(&arena, b & 4 ? "high" : b & 8 ? "nope" : NULL);
  s->scheduler_name = fz_str(&arena, b & 16 ? "volcano" : NULL);
  return s;
}

/* A status the controller could have written: the counts of each phase are the sums of one
 * task's counts (what the check after the sync expects too). */
static Kiln__JobStatus *gen_status(fz_rd *r, const char *task) {
  uint8_t b = fz_u8(r);
  if (b % 8 == 7)
    return NULL;
  Kiln__JobStatus *st = fz_alloc(&arena, sizeof(*st));
  kiln__job_status__init(st);
  st->state = fz_alloc(&arena, sizeof(*st->state));
  kiln__job_state__init(st->state);
  size_t ph = fz_pick(r, CTL_PHASE_COUNT + 2);
  st->state->phase = fz_str(&arena, ph < CTL_PHASE_COUNT   ? ctl_phase_name((ctl_phase)ph)
                                    : ph > CTL_PHASE_COUNT ? "x"
                                                           : "");
  st->state->last_transition_time = fz_str(&arena, FZ_PICK(r, times));
  st->has_version = st->has_retry_count = st->has_min_available = true;
  st->version = fz_i32(r);
  st->retry_count = fz_i32(r);
  st->min_available = fz_i32(r);
  if (b & 8)
    st->running_duration = fz_str(&arena, b & 16 ? "1h" : "x");
  int32_t *totals[] = {&st->pending, &st->running, &st->succeeded, &st->failed, &st->unknown};
  st->has_pending = st->has_running = st->has_succeeded = st->has_failed = st->has_unknown = true;
  st->n_task_status_count = 1;
  st->task_status_count = fz_alloc(&arena, sizeof(*st->task_status_count));
  Kiln__JobStatus__TaskStatusCountEntry *e = fz_alloc(&arena, sizeof(*e));
  kiln__job_status__task_status_count_entry__init(e);
  e->key = fz_str(&arena, task);
  e->value = fz_alloc(&arena, sizeof(*e->value));
  kiln__task_state__init(e->value);
  e->value->phase = fz_alloc(&arena, CTL_POD_PHASE_COUNT * sizeof(*e->value->phase));
  for (int p = 0; p < CTL_POD_PHASE_COUNT; p++) {
    Kiln__TaskState__PhaseEntry *pe = fz_alloc(&arena, sizeof(*pe));
    kiln__task_state__phase_entry__init(pe);
    pe->key = fz_str(&arena, ctl_pod_phase_name((ctl_pod_phase)p));
    pe->has_value = true;
    pe->value = *totals[p] = (int32_t)fz_pick(r, 4);
    e->value->phase[e->value->n_phase++] = pe;
  }
  st->task_status_count[0] = e;
  st->has_terminating = true;
  st->terminating = (int32_t)fz_pick(r, 4);
  return st;
}

static Kiln__Job *gen_job(fz_rd *r) {
  Kiln__Job *j = fz_alloc(&arena, sizeof(*j));
  kiln__job__init(j);
  j->metadata = fz_alloc(&arena, sizeof(*j->metadata));
  kiln__object_meta__init(j->metadata);
  j->metadata->name = fz_str(&arena, FZ_PICK(r, job_names));
  j->metadata->namespace_ = fz_str(&arena, "ns");
  j->metadata->uid = fz_str(&arena, "uid-1");
  j->metadata->resource_version = fz_str(&arena, "7");
  j->metadata->creation_timestamp = fz_str(&arena, FZ_PICK(r, times));
  if (fz_u8(r) == 255)
    j->metadata->deletion_timestamp = fz_str(&arena, "2026-11-30T00:00:00Z");
  j->spec = gen_spec(r);
  const char *t0 = j->spec->tasks[0]->name;
  j->status = gen_status(r, t0 && *t0 ? t0 : "default0");
  return j;
}

/* The name a task's pods carry (the controller names unnamed tasks default<i>). */
static void task_name(const Kiln__Job *job, size_t i, char *buf, size_t len) {
  const char *n = job->spec->tasks[i]->name;
  if (n && *n)
    snprintf(buf, len, "%s", n);
  else
    snprintf(buf, len, "default%zu", i);
}

static size_t gen_pods(fz_rd *r, const Kiln__Job *job, ctl_pod *pods) {
  size_t n = fz_pick(r, MAX_PODS + 1);
  int32_t version = job->status ? job->status->version : 0;
  for (size_t i = 0; i < n; i++) {
    ctl_pod *p = &pods[i];
    memset(p, 0, sizeof(*p));
    uint8_t b = fz_u8(r);
    size_t ti = fz_pick(r, job->spec->n_tasks + 1);
    if (ti < job->spec->n_tasks)
      task_name(job, ti, p->task, sizeof(p->task));
    else
      snprintf(p->task, sizeof(p->task), "other");
    p->index = b & 1 ? -1 : (int)fz_pick(r, 9);
    if (b & 2)
      snprintf(p->name, sizeof(p->name), "stray-%zu", i);
    else
      snprintf(p->name, sizeof(p->name), "%s-%s-%d", job->metadata->name, p->task,
               p->index < 0 ? 0 : p->index);
    snprintf(p->uid, sizeof(p->uid), "pod-uid-%zu", i);
    p->phase = (ctl_pod_phase)fz_pick(r, CTL_POD_PHASE_COUNT);
    p->deletion_ts = b & 4 ? NOW - 5 : 0;
    p->out_of_sync = b & 8;
    p->version = b & 16 ? version : b & 32 ? -1 : version - 1;
    if ((p->has_exit_code = b & 64))
      p->exit_code = FZ_PICK(r, exit_codes);
    p->restarts = (int)fz_pick(r, 4);
    p->ready = b & 128;
    p->creation_ts = NOW - (int64_t)fz_pick(r, 4) * 600;
    if ((p->has_partition = fz_bit(r)))
      p->partition = (int)fz_pick(r, 4);
  }
  return n;
}

static Kiln__PodGroup *gen_podgroup(fz_rd *r, const Kiln__Job *job) {
  uint8_t b = fz_u8(r);
  const char *phase = pg_phases[b % 8];
  if (!phase)
    return NULL;
  Kiln__PodGroup *pg = fz_alloc(&arena, sizeof(*pg));
  kiln__pod_group__init(pg);
  pg->metadata = fz_alloc(&arena, sizeof(*pg->metadata));
  kiln__object_meta__init(pg->metadata);
  pg->metadata->name = fz_fmt(&arena, "%s-uid-1", job->metadata->name);
  pg->spec = fz_alloc(&arena, sizeof(*pg->spec));
  kiln__pod_group_spec__init(pg->spec);
  pg->spec->has_min_member = true;
  pg->spec->min_member = fz_i32(r);
  pg->status = fz_alloc(&arena, sizeof(*pg->status));
  kiln__pod_group_status__init(pg->status);
  pg->status->phase = fz_str(&arena, phase);
  if (b & 8) {
    Kiln__PodGroupCondition *c = fz_alloc(&arena, sizeof(*c));
    kiln__pod_group_condition__init(c);
    c->type = fz_str(&arena, b & 16 ? "Unschedulable" : "Scheduled");
    c->status = fz_str(&arena, b & 32 ? "True" : "False");
    c->reason = fz_str(&arena, "NotEnoughResources");
    c->message = fz_str(&arena, b & 64 ? "3/4 tasks in gang unschedulable" : "");
    c->last_transition_time = fz_str(&arena, FZ_PICK(r, times));
    pg->status->conditions = fz_alloc(&arena, sizeof(*pg->status->conditions));
    pg->status->conditions[0] = c;
    pg->status->n_conditions = 1;
  }
  return pg;
}

static size_t gen_commands(fz_rd *r, const Kiln__Job *job, Kiln__Command **cmds) {
  size_t n = fz_pick(r, 4);
  n = n == 3 ? 0 : n;
  for (size_t i = 0; i < n; i++) {
    Kiln__Command *c = fz_alloc(&arena, sizeof(*c));
    kiln__command__init(c);
    c->metadata = fz_alloc(&arena, sizeof(*c->metadata));
    kiln__object_meta__init(c->metadata);
    c->metadata->name = fz_fmt(&arena, "cmd-%zu", i);
    size_t a = fz_pick(r, CTL_ACT_COUNT + 1);
    c->action = fz_str(&arena, a < CTL_ACT_COUNT ? ctl_action_name((ctl_action)a) : "x");
    c->target = fz_alloc(&arena, sizeof(*c->target));
    kiln__owner_reference__init(c->target);
    c->target->kind = fz_str(&arena, "Job");
    c->target->name = fz_str(&arena, job->metadata->name);
    cmds[i] = c;
  }
  return n;
}

static int fake_rand(void *ctx, char *buf, size_t n) {
  memset(buf, 'a', n);
  buf[n] = '\0';
  return 0;
}

static int fake_keygen(void *ctx, char **priv, char **pub) {
  *priv = strdup("k");
  *pub = strdup("ssh-rsa AAAA\n");
  return *priv && *pub ? 0 : KC_ENOMEM;
}

static const ctl_ops ops = {.rand_str = fake_rand, .ssh_keygen = fake_keygen};

typedef struct {
  ctl_pod pods[MAX_PODS];
  Kiln__Command *cmds[3];
  ctl_priority prios[2];
  const char *pvcs[2];
  ctl_job_view v;
  ctl_request req;
} world;

static void gen_request(fz_rd *r, world *w) {
  ctl_request *q = &w->req;
  memset(q, 0, sizeof(*q));
  q->event = (ctl_event)fz_pick(r, CTL_EV_COUNT);
  q->action = (ctl_action)fz_pick(r, CTL_ACT_COUNT);
  if ((q->has_exit_code = fz_bit(r)))
    q->exit_code = FZ_PICK(r, exit_codes);
  uint8_t b = fz_u8(r);
  size_t ti = fz_pick(r, w->v.job->spec->n_tasks);
  q->task = b & 1 ? w->v.job->spec->tasks[ti]->name : b & 2 ? "nope" : NULL;
  size_t pi = fz_pick(r, w->v.npods + 1);
  q->pod = pi < w->v.npods ? w->pods[pi].name : b & 4 ? "nope" : NULL;
  q->job_uid = b & 8 ? "uid-1" : b & 16 ? "other" : NULL;
  if ((q->has_job_version = b & 32))
    q->job_version = w->v.job->status ? w->v.job->status->version : 0;
  q->delayed = b & 64;
}

static void gen_world(fz_rd *r, world *w) {
  memset(&w->v, 0, sizeof(w->v));
  w->v.job = gen_job(r);
  w->v.npods = gen_pods(r, w->v.job, w->pods);
  w->v.pods = w->pods;
  w->v.podgroup = gen_podgroup(r, w->v.job);
  uint8_t b = fz_u8(r);
  w->v.queue_exists = !(b & 1);
  w->v.queue_has_children = (b & 6) == 6;
  w->v.queue_state = queue_states[(b >> 3) % 5];
  w->v.queue_extend_clusters = (b & 0xc0) == 0xc0;
  w->prios[0] = (ctl_priority){"high", b & 64 ? INT32_MAX : 1000};
  w->prios[1] = (ctl_priority){"low", INT32_MIN};
  w->v.priorities = w->prios;
  w->v.npriorities = fz_pick(r, 3);
  w->pvcs[0] = "pvc0";
  w->pvcs[1] = "claim";
  w->v.pvcs = w->pvcs;
  w->v.npvcs = fz_pick(r, 3);
  w->v.ncommands = gen_commands(r, w->v.job, w->cmds);
  w->v.commands = w->cmds;
  w->v.now = NOW + (int64_t)fz_u32(r) % 100000;
  w->v.ops = &ops;
  gen_request(r, w);
  /* The burst bound is one comparison whatever its size; a small one keeps an execution to
   * tens of pods built instead of 1,000 (which made the target 189 executions a second). */
  w->v.create_burst = 1 + fz_pick(r, 24);
}

/* name is <job>-<task>-<index> for a task of the job and an index below its replicas. */
static bool named_for_task(const Kiln__Job *job, const char *name) {
  size_t jl = strlen(job->metadata->name);
  if (strncmp(name, job->metadata->name, jl) != 0 || name[jl] != '-')
    return false;
  const char *rest = name + jl + 1;
  for (size_t i = 0; i < job->spec->n_tasks; i++) {
    char t[CTL_NAME_MAX];
    task_name(job, i, t, sizeof(t));
    size_t tl = strlen(t);
    if (strncmp(rest, t, tl) != 0 || rest[tl] != '-')
      continue;
    const char *num = rest + tl + 1;
    char *end = NULL;
    long idx = strtol(num, &end, 10);
    bool canonical = *num >= '0' && *num <= '9' && (*num != '0' || num[1] == '\0');
    if (canonical && end && *end == '\0' && idx >= 0 && idx < job->spec->tasks[i]->replicas)
      return true;
  }
  return false;
}

static void check_pods(const world *w, const ctl_plan *plan) {
  if (json_array_size(plan->pods_create) > w->v.create_burst)
    abort();
  kc_strmap existing, created;
  kc_strmap_init(&existing, KC_STRMAP_BORROW_KEYS);
  kc_strmap_init(&created, KC_STRMAP_BORROW_KEYS);
  for (size_t i = 0; i < w->v.npods; i++)
    if (kc_strmap_put(&existing, w->pods[i].name, NULL, NULL) < 0)
      abort();
  size_t i;
  json_t *pod;
  json_array_foreach(plan->pods_create, i, pod) {
    const char *n = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
    if (!n || !named_for_task(w->v.job, n) || kc_strmap_has(&existing, n))
      abort();
    if (kc_strmap_put(&created, n, NULL, NULL) != 0) { /* 1: created twice */
      if (getenv("FZ_DEBUG"))
        for (size_t t = 0; t < w->v.job->spec->n_tasks; t++)
          fprintf(stderr, "task %s replicas %d; twice: %s\n", w->v.job->spec->tasks[t]->name,
                  w->v.job->spec->tasks[t]->replicas, n);
      abort();
    }
  }
  for (i = 0; i < plan->npods_delete; i++) {
    const char *n = plan->pods_delete[i].name;
    if (!kc_strmap_has(&existing, n) || kc_strmap_has(&created, n))
      abort();
  }
  kc_strmap_close(&existing, NULL);
  kc_strmap_close(&created, NULL);
}

static void check_status(const ctl_status *st) {
  int32_t totals[] = {st->pending, st->running, st->succeeded, st->failed, st->unknown};
  if (st->terminating < 0)
    abort();
  for (int p = 0; p < CTL_POD_PHASE_COUNT; p++) {
    int64_t sum = 0;
    for (size_t t = 0; t < st->ntasks; t++) {
      if (st->tasks[t].count[p] < 0)
        abort();
      sum += st->tasks[t].count[p];
    }
    if (totals[p] < 0 || sum != totals[p])
      abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* The core logs what it refuses; the log is not what is being tested (and stderr is where
   * the fuzzer and the sanitizers report). */
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd >= 0)
    kc_log_set_stream_fd(fd);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static world w;
  fz_rd r = {.d = data, .n = size};
  arena.used = 0;
  gen_world(&r, &w);
  ctl_plan plan;
  ctl_plan_init(&plan);
  int rc = ctl_job_sync(&w.v, &w.req, &plan);
  if (rc > 0)
    abort();
  if (rc == 0) {
    check_pods(&w, &plan);
    check_status(&plan.status);
  }
  ctl_plan_close(&plan);
  return 0;
}
