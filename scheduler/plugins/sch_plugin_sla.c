/* sla (Volcano pkg/scheduler/plugins/sla): a job may say how long it is willing to wait.
 *
 * The waiting time is the PodGroup annotation sla-waiting-time (the job controller copies
 * a Job's annotations onto its PodGroup), else the plugin argument sla-waiting-time, both
 * in Go duration syntax ("1h2m3s4ms5us6ns"); an unparsable or non-positive value means
 * none. Then:
 *  - job order: a job with a waiting time goes before one without; between two, the
 *    earlier deadline (creation time + waiting time) goes first;
 *  - JobEnqueueable and JobPipelined: Permit once the job has waited its time (which ends
 *    the search in this plugin's tier, so a later tier's quota check cannot hold the job
 *    back), otherwise Abstain. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_flags.h"
#include "kc_log.h"
#include "sch_framework.h"

#define SLA_KEY  "sla-waiting-time"
#define NS_PER_S 1000000000LL

typedef struct sla_state {
  int64_t global_ns; /* 0: none */
  int64_t *job_ns;   /* per snapshot job; 0: the global one applies */
} sla_state;

static const char *pg_annotation(const sch_job *j, const char *key) {
  const Kiln__ObjectMeta *m = j->pod_group ? j->pod_group->metadata : NULL;
  for (size_t i = 0; m && i < m->n_annotations; i++)
    if (m->annotations[i] && m->annotations[i]->key && strcmp(m->annotations[i]->key, key) == 0)
      return m->annotations[i]->value ? m->annotations[i]->value : "";
  return NULL;
}

/* The job's waiting time in ns, 0 for none. */
static int64_t waiting_ns(const sla_state *st, const sch_snapshot *snap, const sch_job *j) {
  int64_t own = st->job_ns[j - snap->jobs];
  return own > 0 ? own : st->global_ns;
}

static int sla_job_order(sch_session *ssn, void *ctx, const sch_job *l, const sch_job *r) {
  const sla_state *st = ctx;
  const sch_snapshot *snap = sch_session_snapshot(ssn);
  int64_t lw = waiting_ns(st, snap, l), rw = waiting_ns(st, snap, r);
  if (lw == 0)
    return rw == 0 ? 0 : 1;
  if (rw == 0)
    return -1;
  int64_t ld = l->creation_time * NS_PER_S + lw, rd = r->creation_time * NS_PER_S + rw;
  return ld < rd ? -1 : ld > rd;
}

/* Permit once the job has waited its time; Abstain before, or without a waiting time. */
static int sla_permit(sch_session *ssn, void *ctx, const sch_job *j) {
  const sla_state *st = ctx;
  int64_t w = waiting_ns(st, sch_session_snapshot(ssn), j);
  if (w == 0)
    return SCH_ABSTAIN;
  int64_t waited = (sch_session_opts(ssn)->now - j->creation_time) * NS_PER_S;
  return waited < w ? SCH_ABSTAIN : SCH_PERMIT;
}

/* Go's ParseDuration of a waiting time: its ns, or 0 when it is not a positive duration. */
static int64_t parse_waiting(const char *v) {
  int64_t ns = 0;
  return kc_parse_duration(v, &ns) == 0 && ns > 0 ? ns : 0;
}

static int sla_open(sch_session *ssn, const sch_plugin_conf *conf, void **state) {
  sch_snapshot *snap = sch_session_snapshot(ssn);
  sla_state *st = calloc(1, sizeof(*st));
  int rc = KC_ENOMEM;
  if (!st)
    return rc;
  st->job_ns = calloc((size_t)(snap->njobs ? snap->njobs : 1), sizeof(*st->job_ns));
  if (!st->job_ns)
    goto fail;
  const char *g = sch_args_get(&conf->args, SLA_KEY);
  if (g && (st->global_ns = parse_waiting(g)) == 0)
    KC_WARN("sla: invalid global %s \"%s\" (a positive duration such as 1h2m3s): ignored", SLA_KEY,
            g);
  for (int32_t i = 0; i < snap->njobs; i++) {
    const char *v = pg_annotation(&snap->jobs[i], SLA_KEY);
    /* Every session reads it again: say it only at a verbosity that asks for it. */
    if (v && (st->job_ns[i] = parse_waiting(v)) == 0)
      KC_V(2, "sla: job %s: invalid %s annotation \"%s\": ignored", snap->jobs[i].key, SLA_KEY, v);
  }
  if ((rc = sch_add_job_order_fn(ssn, sla_job_order, st)) < 0 ||
      (rc = sch_add_job_enqueueable_fn(ssn, sla_permit, st)) < 0 ||
      (rc = sch_add_job_pipelined_fn(ssn, sla_permit, st)) < 0)
    goto fail;
  *state = st;
  return 0;
fail:
  /* The session closes only the plugins that opened: this one frees its own state. */
  free(st->job_ns);
  free(st);
  return rc;
}

static void sla_close(sch_session *ssn, void *state) {
  (void)ssn;
  sla_state *st = state;
  if (st)
    free(st->job_ns);
  free(st);
}

const sch_plugin sch_plugin_sla = {.name = "sla", .open = sla_open, .close = sla_close};
