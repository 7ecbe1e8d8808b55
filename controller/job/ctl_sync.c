/* ctl_job_sync (Volcano processNextReq + syncJob + initiateJob): commands, policies, queue
 * checks, PVCs, the PodGroup, pod construction and status counting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "kc_codec.h"
#include "kc_error.h"
#include "kc_log.h"
#include "kc_podres.h"
#include "kc_quantity.h"
#include "kc_strmap.h"

#define PG_API_VERSION "scheduling.volcano.sh/v1beta1"

/* Claim names of spec.volumes, with the ones generated in this sync filled in. */
typedef struct {
  char (*names)[CTL_NAME_MAX];
  size_t n;
} claim_names;

static bool pvc_exists(const ctl_job_view *v, const char *name) {
  for (size_t i = 0; i < v->npvcs; i++)
    if (v->pvcs[i] && strcmp(v->pvcs[i], name) == 0)
      return true;
  return false;
}

static json_t *obj_meta(const Kiln__Job *job, const char *name) {
  json_t *refs = json_array();
  json_array_append_new(refs, ctl__owner_ref(job));
  return json_pack("{s:s, s:s, s:o}", "name", name, "namespace", ctl__job_ns(job),
                   "ownerReferences", refs);
}

/* ---- PVCs (createJobIOIfNotExist) ---- */

/* A claim for a volume without one: a fresh name (made from the injected random source, never
 * one an existing claim has) and the PVC to create, into the plan. 0, or the random source's
 * or KC_ENOMEM's code after recording the failure. */
static int generate_claim(ctl_ctx *c, const Kiln__VolumeSpec *vs, char *name, size_t len) {
  const Kiln__Job *job = c->v->job;
  char rnd[16];
  int tries = 0, rc;
  do {
    if ((rc = c->v->ops->rand_str(c->v->ops->ctx, rnd, 12))) {
      ctl__failure(c->plan, "PVCError", "Failed to create PVC, err: no name for the claim: %s",
                   rc == KC_EIO ? "the random source failed" : kc_strerror(rc));
      return rc;
    }
    snprintf(name, len, "%s-pvc-%s", ctl__job_name(job), rnd);
  } while (pvc_exists(c->v, name) && ++tries < 8);
  json_t *pspec = NULL;
  if (vs->volume_claim_json)
    pspec = json_loads(vs->volume_claim_json, 0, NULL);
  json_t *pvc =
      json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "PersistentVolumeClaim",
                "metadata", obj_meta(job, name), "spec", pspec ? pspec : json_object());
  return ctl__append(&c->plan->pvcs, pvc);
}

/* initiate: check named claims and create the unnamed ones; otherwise only collect the
 * names (the generated ones are in the spec by then). */
static int job_io(ctl_ctx *c, claim_names *claims, bool initiate) {
  const Kiln__Job *job = c->v->job;
  const Kiln__JobSpec *spec = job->spec;
  ctl_status *st = &c->plan->status;
  json_t *vols = NULL;
  bool generated = false;
  int rc = 0;
  if (!spec->n_volumes)
    return 0;
  claims->names = calloc(spec->n_volumes, sizeof(*claims->names));
  if (!claims->names)
    return KC_ENOMEM;
  claims->n = spec->n_volumes;
  vols = json_array();
  for (size_t i = 0; i < spec->n_volumes; i++) {
    const Kiln__VolumeSpec *vs = spec->volumes[i];
    char name[CTL_NAME_MAX];
    if (vs->volume_claim_name && *vs->volume_claim_name) {
      snprintf(name, sizeof(name), "%s", vs->volume_claim_name);
      if (initiate && !pvc_exists(c->v, name)) {
        char key[CTL_NAME_MAX + 16];
        snprintf(key, sizeof(key), "volume-pvc-%s", name);
        /* A claim this controller created earlier may simply not be in the cache yet. */
        if (!json_object_get(st->controlled, key)) {
          ctl__event(c->plan, CTL_EVENT_WARNING, "PVCError",
                     "Failed to create PVC, err: pvc %s is not found, the job will be in the "
                     "Pending state until the PVC is created",
                     name);
          snprintf(st->reason, sizeof(st->reason), "PVCError");
          snprintf(st->message, sizeof(st->message), "pvc %s is not found", name);
          c->blocked = true;
        }
      }
    } else if (!initiate) {
      continue;
    } else {
      if ((rc = generate_claim(c, vs, name, sizeof(name))))
        goto out;
      generated = true;
    }
    snprintf(claims->names[i], CTL_NAME_MAX, "%s", name);
    char key[CTL_NAME_MAX + 16];
    snprintf(key, sizeof(key), "volume-pvc-%s", name);
    json_object_set_new(st->controlled, key, json_string(name));
    json_t *vj = json_pack("{s:s, s:s}", "mountPath", vs->mount_path ? vs->mount_path : "",
                           "volumeClaimName", name);
    if (vs->volume_claim_json) {
      json_t *cj = json_loads(vs->volume_claim_json, 0, NULL);
      if (cj)
        json_object_set_new(vj, "volumeClaim", cj);
    }
    json_array_append_new(vols, vj);
  }
  if (generated) {
    /* The generated names go back into the spec so the next sync finds the same claims. */
    if (!c->plan->job_patch)
      c->plan->job_patch = json_object();
    json_t *sp = json_object_get(c->plan->job_patch, "spec");
    if (!sp) {
      sp = json_object();
      json_object_set_new(c->plan->job_patch, "spec", sp);
    }
    json_object_set(sp, "volumes", vols);
  }
out:
  json_decref(vols);
  return rc;
}

/* ---- PodGroup ---- */

static int32_t priority_of(const ctl_job_view *v, const char *pc) {
  for (size_t i = 0; pc && i < v->npriorities; i++)
    if (v->priorities[i].name && strcmp(v->priorities[i].name, pc) == 0)
      return v->priorities[i].value;
  return 0;
}

/* ---- minResources (calcPGMinResources over the quota usage of one pod) ----
 *
 * Volcano sums, per pod it counts, the pod's quota usage (Kubernetes' pod quota
 * evaluator, then every requests.<extended> key also under its bare name): count/pods and
 * pods 1; cpu, memory and ephemeral-storage under their name and requests.<name> from the
 * pod's effective requests, limits.<name> from its effective limits; hugepages-<size> and
 * requests.hugepages-<size>; requests.<extended> and <extended>. Quantities keep the
 * format of their first addend, as resource.Quantity.Add does. */

/* Kubernetes' IsNativeResource: no domain, or a kubernetes.io domain. */
static bool native_resource(const char *name) {
  return !strchr(name, '/') || strstr(name, "kubernetes.io/");
}

static bool qualified_part(const char *s, size_t n, bool dns) {
  if (n == 0 || n > (dns ? 253u : 63u))
    return false;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    bool alnum =
        (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || (!dns && ch >= 'A' && ch <= 'Z');
    if ((i == 0 || i == n - 1) && !alnum)
      return false;
    if (!alnum && ch != '-' && ch != '.' && (dns || ch != '_'))
      return false;
  }
  return true;
}

/* IsExtendedResourceName: a domain-qualified name outside kubernetes.io, not a quota
 * "requests." name, and still a qualified name with "requests." in front. */
static bool extended_resource(const char *name) {
  if (native_resource(name) || strncmp(name, "requests.", 9) == 0)
    return false;
  const char *slash = strchr(name, '/');
  if (strchr(slash + 1, '/'))
    return false;
  return qualified_part(name, (size_t)(slash - name), true) &&
         qualified_part(slash + 1, strlen(slash + 1), false) && (size_t)(slash - name) + 9 <= 253;
}

static int put_prefixed(kc_reslist *l, const char *prefix, const char *name, const kc_quantity *q) {
  char key[CTL_NAME_MAX];
  int n = snprintf(key, sizeof(key), "%s%s", prefix, name);
  if (n < 0 || (size_t)n >= sizeof(key))
    return 0; /* no such name is a valid resource name: skipped, as a quota would not count it */
  return kc_reslist_put(l, key, q, false);
}

/* One pod's quota usage (Volcano util.GetPodQuotaUsage) into *out (cleared first). */
static int pod_usage(const json_t *spec, kc_reslist *out) {
  kc_reslist req = {0}, lim = {0};
  kc_quantity one;
  kc_quantity_from_value(&one, 1, KC_QFMT_DECIMAL_SI);
  out->n = 0;
  int rc = kc_pod_resources(spec, "requests", 0, &req);
  if (!rc)
    rc = kc_pod_resources(spec, "limits", 0, &lim);
  if (!rc)
    rc = kc_reslist_put(out, "count/pods", &one, false);
  if (!rc)
    rc = kc_reslist_put(out, "pods", &one, false);
  static const char *const compute[] = {"cpu", "memory", "ephemeral-storage"};
  for (size_t k = 0; k < 3 && !rc; k++) {
    kc_res_entry *e = kc_reslist_find(&req, compute[k]);
    if (e && !(rc = kc_reslist_put(out, compute[k], &e->q, false)))
      rc = put_prefixed(out, "requests.", compute[k], &e->q);
    if (!rc && (e = kc_reslist_find(&lim, compute[k])))
      rc = put_prefixed(out, "limits.", compute[k], &e->q);
  }
  for (size_t i = 0; i < req.n && !rc; i++) {
    const char *name = req.e[i].name;
    if (strncmp(name, "hugepages-", 10) == 0 &&
        !(rc = kc_reslist_put(out, name, &req.e[i].q, false)))
      rc = put_prefixed(out, "requests.", name, &req.e[i].q);
    /* requests.<extended>, and (Volcano's addition) the bare name next to it */
    if (!rc && extended_resource(name) && !(rc = put_prefixed(out, "requests.", name, &req.e[i].q)))
      rc = kc_reslist_put(out, name, &req.e[i].q, false);
  }
  kc_reslist_free(&req);
  kc_reslist_free(&lim);
  return rc;
}

typedef struct {
  const Kiln__TaskSpec *t;
  int32_t prio;
  size_t order;
} task_prio;

static int cmp_task_prio(const void *a, const void *b) {
  const task_prio *x = a, *y = b;
  if (x->prio != y->prio)
    return x->prio > y->prio ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* A resource list as a ResourceList JSON object (new), or NULL when out of memory. */
static json_t *reslist_json(const kc_reslist *l) {
  json_t *out = json_object();
  for (size_t i = 0; out && i < l->n; i++) {
    char buf[KC_QUANTITY_STR_MAX];
    if (kc_quantity_format(&l->e[i].q, buf, sizeof(buf)) >= 0)
      json_object_set_new(out, l->e[i].name, json_string(buf));
  }
  return out;
}

/* calcPGMinResources: tasks by the priority of their template's class, highest first.
 * When job.minAvailable is below the sum of the tasks' minAvailable, the first
 * minAvailable pods in that order; else each task's minAvailable pods, topped up toward
 * job.minAvailable from the replicas left, in the same order. The task minAvailable is
 * the one Volcano's webhook would have defaulted (replicas, or minPartitions x
 * partitionSize). */
static json_t *min_resources(const ctl_job_view *v) {
  const Kiln__JobSpec *spec = v->job->spec;
  size_t n = spec->n_tasks;
  task_prio *tp = calloc(n ? n : 1, sizeof(*tp));
  int32_t *take = calloc(n ? n : 1, sizeof(*take));
  kc_reslist *usage = calloc(n ? n : 1, sizeof(*usage));
  kc_reslist total = {0};
  json_t *out = NULL;
  if (!tp || !take || !usage)
    goto done;
  for (size_t i = 0; i < n; i++) {
    const Kiln__TaskSpec *t = spec->tasks[i];
    json_t *tmpl = t->template_json ? json_loads(t->template_json, 0, NULL) : NULL;
    json_t *ps = json_object_get(tmpl, "spec");
    tp[i].t = t;
    tp[i].order = i;
    tp[i].prio = priority_of(v, json_string_value(json_object_get(ps, "priorityClassName")));
    int rc = pod_usage(ps, &usage[i]);
    json_decref(tmpl);
    if (rc)
      goto done;
  }
  qsort(tp, n, sizeof(*tp), cmp_task_prio);
  int32_t min_avail = ctl__job_min_available(v->job);
  int32_t left;
  if (min_avail < ctl__total_task_min_available(v->job)) {
    left = min_avail;
    for (size_t i = 0; i < n && left > 0; i++) {
      int32_t k = tp[i].t->replicas < left ? tp[i].t->replicas : left;
      take[tp[i].order] = k;
      left -= k;
    }
  } else {
    int32_t picked = 0;
    for (size_t i = 0; i < n && picked < min_avail; i++) {
      int32_t m = ctl__task_min_available(tp[i].t);
      if (m > min_avail - picked)
        m = min_avail - picked;
      take[tp[i].order] = m > 0 ? m : 0;
      picked += take[tp[i].order];
    }
    left = min_avail - picked;
    for (size_t i = 0; i < n && left > 0; i++) {
      size_t o = tp[i].order;
      int32_t room = tp[i].t->replicas - ctl__task_min_available(tp[i].t);
      if (room <= 0)
        continue;
      int32_t k = room < left ? room : left;
      take[o] += k;
      left -= k;
    }
  }
  /* Sum in the priority order, so a key's format is that of its first addend; a task's
   * pods are one multiplication, not one addition per pod. */
  for (size_t i = 0; i < n; i++) {
    size_t o = tp[i].order;
    if (kc_reslist_add_times(&total, &usage[o], take[o]))
      goto done;
  }
  out = reslist_json(&total);
done:
  for (size_t i = 0; usage && i < n; i++)
    kc_reslist_free(&usage[i]);
  kc_reslist_free(&total);
  free(usage);
  free(take);
  free(tp);
  return out;
}

json_t *ctl__pod_requests_times(const json_t *pod_spec, int32_t times) {
  kc_reslist usage = {0}, total = {0};
  json_t *out = NULL;
  if (pod_usage(pod_spec, &usage))
    goto done;
  if (kc_reslist_add_times(&total, &usage, times))
    goto done;
  out = reslist_json(&total);
done:
  kc_reslist_free(&usage);
  kc_reslist_free(&total);
  return out;
}

static json_t *string_map(Kiln__ObjectMeta__LabelsEntry **e, size_t n) {
  json_t *o = json_object();
  for (size_t i = 0; i < n; i++)
    if (e[i]->key)
      json_object_set_new(o, e[i]->key, json_string(e[i]->value ? e[i]->value : ""));
  return o;
}

static json_t *network_topology(const Kiln__NetworkTopology *t) {
  json_t *nt = json_object();
  if (t->mode)
    json_object_set_new(nt, "mode", json_string(t->mode));
  /* Volcano copies highestTierName only when highestTierAllowed is unset. */
  if (t->has_highest_tier_allowed)
    json_object_set_new(nt, "highestTierAllowed", json_integer(t->highest_tier_allowed));
  else if (t->highest_tier_name && *t->highest_tier_name)
    json_object_set_new(nt, "highestTierName", json_string(t->highest_tier_name));
  return nt;
}

/* A task's partitions as a sub-gang of the PodGroup (Volcano getSubGroupPolicy). */
static json_t *sub_group_policy(const Kiln__TaskSpec *t) {
  const Kiln__PartitionPolicy *pp = t->partition_policy;
  json_t *o = json_pack("{s:s, s:i, s:i, s:{s:{s:s}}, s:[s]}", "name", t->name ? t->name : "",
                        "subGroupSize", (int)pp->partition_size, "minSubGroups",
                        (int)(pp->has_min_partitions ? pp->min_partitions : 0), "labelSelector",
                        "matchLabels", CTL_KEY_TASK_SPEC, t->name ? t->name : "", "matchLabelKeys",
                        CTL_KEY_PARTITION_ID);
  if (o && pp->network_topology)
    json_object_set_new(o, "networkTopology", network_topology(pp->network_topology));
  return o;
}

static json_t *build_podgroup(ctl_ctx *c) {
  const Kiln__Job *job = c->v->job;
  const Kiln__JobSpec *spec = job->spec;
  json_t *meta = obj_meta(job, c->plan->podgroup_name);
  if (job->metadata) {
    json_object_set_new(meta, "labels", string_map(job->metadata->labels, job->metadata->n_labels));
    json_object_set_new(meta, "annotations",
                        string_map((Kiln__ObjectMeta__LabelsEntry **)job->metadata->annotations,
                                   job->metadata->n_annotations));
  }
  json_t *mtm = json_object();
  for (size_t i = 0; i < spec->n_tasks; i++)
    json_object_set_new(mtm, spec->tasks[i]->name ? spec->tasks[i]->name : "",
                        json_integer(ctl__task_min_available(spec->tasks[i])));
  json_t *ps = json_pack("{s:i, s:o, s:s}", "minMember", (int)ctl__job_min_available(job),
                         "minTaskMember", mtm, "queue", ctl__queue(job));
  if (spec->priority_class_name && *spec->priority_class_name)
    json_object_set_new(ps, "priorityClassName", json_string(spec->priority_class_name));
  json_t *mr = min_resources(c->v);
  json_object_set_new(ps, "minResources", mr ? mr : json_object());
  if (spec->network_topology)
    json_object_set_new(ps, "networkTopology", network_topology(spec->network_topology));
  json_t *sgp = json_array();
  for (size_t i = 0; i < spec->n_tasks; i++) {
    const Kiln__TaskSpec *t = spec->tasks[i];
    if (t->partition_policy)
      json_array_append_new(sgp, sub_group_policy(t));
  }
  if (json_array_size(sgp))
    json_object_set_new(ps, "subGroupPolicy", sgp);
  else
    json_decref(sgp);
  return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", PG_API_VERSION, "kind", "PodGroup",
                   "metadata", meta, "spec", ps);
}

static void resource_free(Kiln__Resource *r) {
  for (size_t k = 0; k < r->n_scalar; k++) {
    free(r->scalar[k]->name);
    free(r->scalar[k]);
  }
  free(r->scalar);
  r->scalar = NULL;
  r->n_scalar = 0;
}

static int64_t scalar_of(const Kiln__Resource *r, const char *name) {
  for (size_t k = 0; r && k < r->n_scalar; k++)
    if (r->scalar[k]->name && strcmp(r->scalar[k]->name, name) == 0)
      return r->scalar[k]->milli_value;
  return 0;
}

/* Equal lists (a missing entry and a zero one are the same); have may be NULL. */
static bool resource_equal(const Kiln__Resource *have, const Kiln__Resource *want) {
  static const Kiln__Resource none = KILN__RESOURCE__INIT;
  if (!have)
    have = &none;
  if (have->milli_cpu != want->milli_cpu || have->memory != want->memory ||
      have->pods != want->pods || have->ephemeral_storage != want->ephemeral_storage)
    return false;
  for (size_t k = 0; k < want->n_scalar; k++)
    if (scalar_of(have, want->scalar[k]->name) != want->scalar[k]->milli_value)
      return false;
  for (size_t k = 0; k < have->n_scalar; k++)
    if (have->scalar[k]->name &&
        scalar_of(want, have->scalar[k]->name) != have->scalar[k]->milli_value)
      return false;
  return true;
}

/* Whether the live PodGroup already has the spec fields the controller syncs. */
static bool podgroup_current(const Kiln__PodGroup *pg, const json_t *want) {
  const Kiln__PodGroupSpec *s = pg->spec;
  json_t *ws = json_object_get(want, "spec");
  if (!s)
    return false;
  if (s->min_member != json_integer_value(json_object_get(ws, "minMember")))
    return false;
  const char *wpc = json_string_value(json_object_get(ws, "priorityClassName"));
  const char *pc = s->priority_class_name ? s->priority_class_name : "";
  if (strcmp(pc, wpc ? wpc : "") != 0)
    return false;
  json_t *mtm = json_object_get(ws, "minTaskMember");
  if (json_object_size(mtm) != s->n_min_task_member)
    return false;
  for (size_t i = 0; i < s->n_min_task_member; i++) {
    json_t *w = json_object_get(mtm, s->min_task_member[i]->key ? s->min_task_member[i]->key : "");
    if (!w || json_integer_value(w) != s->min_task_member[i]->value)
      return false;
  }
  /* Both sides through the same decoder: the live list holds the canonical strings the
   * API server stored, the wanted one those the controller formatted. */
  Kiln__Resource wres = KILN__RESOURCE__INIT;
  bool same = kc_resource_list_decode(json_object_get(ws, "minResources"), &wres, NULL, 0) == 0 &&
              resource_equal(s->min_resources, &wres);
  resource_free(&wres);
  return same;
}

static int sync_podgroup(ctl_ctx *c) {
  json_t *pg = build_podgroup(c);
  if (!pg)
    return KC_ENOMEM;
  if (!c->v->podgroup) {
    c->plan->podgroup = pg;
    c->plan->podgroup_update = false;
  } else if (!podgroup_current(c->v->podgroup, pg)) {
    /* The update is a merge patch: a name the live list has and the new one lacks must be
     * removed explicitly (null), or the lists would never compare equal. */
    const Kiln__Resource *have = c->v->podgroup->spec ? c->v->podgroup->spec->min_resources : NULL;
    json_t *mr = json_object_get(json_object_get(pg, "spec"), "minResources");
    if (have && mr) {
      static const char *const fixed[] = {"cpu", "memory", "pods", "ephemeral-storage"};
      const int64_t vals[] = {have->milli_cpu, have->memory, have->pods, have->ephemeral_storage};
      for (size_t k = 0; k < 4; k++)
        if (vals[k] && !json_object_get(mr, fixed[k]))
          json_object_set_new(mr, fixed[k], json_null());
      for (size_t k = 0; k < have->n_scalar; k++) {
        const char *n = have->scalar[k]->name;
        if (n && have->scalar[k]->milli_value && !json_object_get(mr, n))
          json_object_set_new(mr, n, json_null());
      }
    }
    c->plan->podgroup = pg;
    c->plan->podgroup_update = true;
  } else {
    json_decref(pg);
  }
  return 0;
}

/* Warning PodGroupPending for the newest true condition that is not Scheduled. */
static void podgroup_event(ctl_ctx *c) {
  const Kiln__PodGroup *pg = c->v->podgroup;
  if (!pg || !pg->status)
    return;
  for (size_t i = pg->status->n_conditions; i-- > 0;) {
    const Kiln__PodGroupCondition *cd = pg->status->conditions[i];
    if (!cd->status || strcmp(cd->status, "True") != 0)
      continue;
    if (cd->type && strcmp(cd->type, "Scheduled") == 0)
      return;
    char type[64];
    snprintf(type, sizeof(type), "%s", cd->type ? cd->type : "");
    for (char *p = type; *p; p++)
      if (*p >= 'A' && *p <= 'Z')
        *p = (char)(*p - 'A' + 'a');
    ctl__event(c->plan, CTL_EVENT_WARNING, "PodGroupPending", "PodGroup %s:%s %s, reason: %s",
               ctl__job_ns(c->v->job), ctl__job_name(c->v->job), type,
               cd->message ? cd->message : "");
    return;
  }
}

/* ---- pods (createJobPod) ---- */

static json_t *obj_child(json_t *o, const char *key, bool array) {
  json_t *v = json_object_get(o, key);
  if (!v || (array ? !json_is_array(v) : !json_is_object(v))) {
    v = array ? json_array() : json_object();
    json_object_set_new(o, key, v);
  }
  return v;
}

static void set_if_absent(json_t *o, const char *key, const char *val) {
  const char *cur = json_string_value(json_object_get(o, key));
  if ((!cur || !*cur) && val && *val)
    json_object_set_new(o, key, json_string(val));
}

/* Job volumes: one pod volume per claim, mounted into every container of spec. Non-zero when
 * no name could be drawn for a new volume (c->errmsg says why). */
static int mount_job_volumes(ctl_ctx *c, json_t *spec, const claim_names *claims) {
  const char *jname = ctl__job_name(c->v->job);
  const Kiln__JobSpec *js = c->v->job->spec;
  char buf[CTL_NAME_MAX * 2];
  for (size_t i = 0; i < claims->n; i++) {
    if (!claims->names[i][0])
      continue;
    json_t *vols = obj_child(spec, "volumes", true);
    const char *vname = NULL;
    size_t k;
    json_t *vol;
    json_array_foreach(vols, k, vol) {
      const char *cn = json_string_value(
          json_object_get(json_object_get(vol, "persistentVolumeClaim"), "claimName"));
      if (cn && strcmp(cn, claims->names[i]) == 0)
        vname = json_string_value(json_object_get(vol, "name"));
    }
    if (!vname) {
      char rnd[16];
      int rc = c->v->ops->rand_str(c->v->ops->ctx, rnd, 12);
      if (rc) {
        snprintf(c->errmsg, sizeof(c->errmsg), "no name for the volume of claim %s: %s",
                 claims->names[i], rc == KC_EIO ? "the random source failed" : kc_strerror(rc));
        return rc;
      }
      snprintf(buf, sizeof(buf), "%s-%s", jname, rnd);
      json_array_append_new(vols, json_pack("{s:s, s:{s:s}}", "name", buf, "persistentVolumeClaim",
                                            "claimName", claims->names[i]));
      vname = buf;
    }
    json_t *ct;
    json_array_foreach(json_object_get(spec, "containers"), k, ct) {
      json_array_append_new(
          obj_child(ct, "volumeMounts", true),
          json_pack("{s:s, s:s}", "name", vname, "mountPath",
                    js->volumes[i]->mount_path ? js->volumes[i]->mount_path : ""));
    }
  }
  return 0;
}

/* The annotations the job controller puts on pod index of task t, besides the template's. */
static void set_pod_annotations(ctl_ctx *c, json_t *ann, const Kiln__TaskSpec *t, int index) {
  const Kiln__Job *job = c->v->job;
  const char *jname = ctl__job_name(job);
  const char *tname = t->name ? t->name : "";
  char idx[16], ver[16], retry[16], buf[CTL_NAME_MAX * 2];
  snprintf(idx, sizeof(idx), "%d", index);
  snprintf(ver, sizeof(ver), "%d", (int)c->plan->status.version);
  snprintf(retry, sizeof(retry), "%d", (int)c->plan->status.retry_count);
  json_object_set_new(ann, CTL_KEY_TASK_SPEC, json_string(tname));
  json_object_set_new(ann, CTL_KEY_GROUP_NAME, json_string(c->plan->podgroup_name));
  json_object_set_new(ann, CTL_KEY_JOB_NAME, json_string(jname));
  json_object_set_new(ann, CTL_KEY_QUEUE_NAME, json_string(ctl__queue(job)));
  json_object_set_new(ann, CTL_KEY_JOB_VERSION, json_string(ver));
  snprintf(buf, sizeof(buf), "%s-%s", jname, tname);
  json_object_set_new(ann, CTL_KEY_TEMPLATE_UID, json_string(buf));
  json_object_set_new(ann, CTL_KEY_TASK_INDEX, json_string(idx));
  json_object_set_new(ann, CTL_KEY_RETRY_COUNT, json_string(retry));
  if (t->topology_policy && *t->topology_policy)
    json_object_set_new(ann, CTL_KEY_NUMA_POLICY, json_string(t->topology_policy));
  static const char *const copied_ann[] = {"volcano.sh/preemptable", "volcano.sh/cooldown-time",
                                           "volcano.sh/revocable-zone"};
  const Kiln__ObjectMeta *jm = job->metadata;
  for (size_t i = 0; jm && i < sizeof(copied_ann) / sizeof(copied_ann[0]); i++) {
    const char *v = CTL_MAP_GET(jm->annotations, jm->n_annotations, copied_ann[i]);
    if (v)
      json_object_set_new(ann, copied_ann[i], json_string(v));
  }
  if (jm) {
    const char *v = CTL_MAP_GET(jm->annotations, jm->n_annotations, "volcano.sh/jdb-min-available");
    if (v)
      json_object_set_new(ann, "volcano.sh/jdb-min-available", json_string(v));
    else if ((v = CTL_MAP_GET(jm->annotations, jm->n_annotations,
                              "volcano.sh/jdb-max-unavailable")))
      json_object_set_new(ann, "volcano.sh/jdb-max-unavailable", json_string(v));
  }
}

/* The labels the job controller puts on pod index of task t, besides the template's. */
static void set_pod_labels(ctl_ctx *c, json_t *labels, const Kiln__TaskSpec *t, int index) {
  const Kiln__Job *job = c->v->job;
  char idx[16], buf[CTL_NAME_MAX * 2];
  snprintf(idx, sizeof(idx), "%d", index);
  json_object_set_new(labels, CTL_KEY_TASK_INDEX, json_string(idx));
  json_object_set_new(labels, CTL_KEY_JOB_NAME, json_string(ctl__job_name(job)));
  json_object_set_new(labels, CTL_KEY_TASK_SPEC, json_string(t->name ? t->name : ""));
  json_object_set_new(labels, CTL_KEY_JOB_NAMESPACE, json_string(ctl__job_ns(job)));
  json_object_set_new(labels, CTL_KEY_QUEUE_NAME, json_string(ctl__queue(job)));
  static const char *const copied_labels[] = {"volcano.sh/preemptable", "volcano.sh/cooldown-time"};
  const Kiln__ObjectMeta *jm = job->metadata;
  for (size_t i = 0; jm && i < sizeof(copied_labels) / sizeof(copied_labels[0]); i++) {
    const char *v = CTL_MAP_GET(jm->labels, jm->n_labels, copied_labels[i]);
    if (v)
      json_object_set_new(labels, copied_labels[i], json_string(v));
  }
  if (t->partition_policy && t->partition_policy->partition_size > 0) {
    snprintf(buf, sizeof(buf), "%d", index / t->partition_policy->partition_size);
    json_object_set_new(labels, CTL_KEY_PARTITION_ID, json_string(buf));
  }
}

/* tmpl is the task's parsed template (borrowed, may be NULL). NULL when out of memory, or when
 * a plugin refused the pod or no volume name could be drawn: then *plugin_rc holds the
 * error (and c->errmsg, when set, says why). */
static json_t *create_job_pod(ctl_ctx *c, const Kiln__TaskSpec *t, const json_t *tmpl, int index,
                              const claim_names *claims, int *plugin_rc) {
  *plugin_rc = 0;
  const Kiln__Job *job = c->v->job;
  char name[CTL_NAME_MAX * 2];
  snprintf(name, sizeof(name), "%s-%s-%d", ctl__job_name(job), t->name ? t->name : "", index);
  json_t *tmeta = json_object_get(tmpl, "metadata");
  json_t *spec = json_object_get(tmpl, "spec");
  spec = spec ? json_deep_copy(spec) : json_object();
  json_t *labels = json_deep_copy(json_object_get(tmeta, "labels"));
  json_t *ann = json_deep_copy(json_object_get(tmeta, "annotations"));
  if (!labels)
    labels = json_object();
  if (!ann)
    ann = json_object();
  json_t *meta = obj_meta(job, name);
  json_object_set_new(meta, "labels", labels);
  json_object_set_new(meta, "annotations", ann);
  json_t *pod = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
                          meta, "spec", spec);
  if (!pod)
    return NULL;
  const Kiln__JobSpec *js = job->spec;
  set_if_absent(spec, "schedulerName", js->scheduler_name);
  set_if_absent(spec, "priorityClassName", js->priority_class_name);
  if ((*plugin_rc = mount_job_volumes(c, spec, claims)) != 0) {
    json_decref(pod);
    return NULL;
  }
  set_pod_annotations(c, ann, t, index);
  set_pod_labels(c, labels, t, index);
  if (c->v->queue_extend_clusters) {
    json_object_set_new(labels, CTL_KEY_FORWARDING, json_string("true"));
    json_object_set_new(ann, CTL_KEY_FORWARDING, json_string("true"));
  }
  if ((*plugin_rc = ctl__plugins_pod_create(c, pod, t, index)) != 0) {
    json_decref(pod);
    return NULL;
  }
  return pod;
}

/* A dependency is ready when minAvailable of its pods run with every container ready, or
 * have succeeded. */
static bool task_ready(const ctl_job_view *v, const Kiln__TaskSpec *dep) {
  int32_t ready = 0;
  for (size_t i = 0; i < v->npods; i++) {
    const ctl_pod *p = &v->pods[i];
    if (strcmp(p->task, dep->name ? dep->name : "") != 0 || p->deletion_ts)
      continue;
    if ((p->phase == CTL_POD_RUNNING && p->ready) || p->phase == CTL_POD_SUCCEEDED)
      ready++;
  }
  return ready >= ctl__task_min_available(dep);
}

static bool depends_ready(const ctl_job_view *v, const Kiln__TaskSpec *t) {
  if (!t->depends_on || !t->depends_on->n_name)
    return true;
  bool any = t->depends_on->iteration && strcmp(t->depends_on->iteration, "any") == 0;
  for (size_t i = 0; i < t->depends_on->n_name; i++) {
    const Kiln__TaskSpec *dep = ctl__find_task(v->job, t->depends_on->name[i]);
    bool ok = dep && task_ready(v, dep);
    if (any && ok)
      return true;
    if (!any && !ok)
      return false;
  }
  return !any;
}

static bool pg_admitted(const Kiln__PodGroup *pg) {
  const char *ph = pg && pg->status ? pg->status->phase : NULL;
  return ph && *ph && strcmp(ph, "Pending") != 0;
}

/* At most this many pods are built in one sync: a Job's replicas are the user's number (up
 * to 2^31-1), and building every missing pod at once would hold the loop and the memory in
 * proportion to it. The rest come in the next syncs (the plan asks for one at once), each
 * bounded the same way. Kubernetes' ReplicaSet controller bounds its creates per sync too
 * (burstReplicas, 500); twice that keeps a 1,000-pod gang to one sync. */
#define CTL_CREATE_BURST 1000
/* And at most this much pod template text per sync (each pod counted by its task's template
 * plus what the controller adds): building and sending the pods costs in proportion to their
 * size, and a burst of 1,000 pods of 3 KiB held kiln-controller's loop past 100 ms. A
 * template of up to ~500 bytes still gives 1,000 pods a sync, one of 4 KiB about 220; at
 * least one pod is always built. */
#define CTL_CREATE_BYTES (1024u * 1024u)
#define CTL_POD_OVERHEAD 512u

/* How many of the view's pods the walk of task t meets: those named <job>-<task>-<index> for an
 * index below its replicas (one per name). A pod of the task under another name is never met,
 * and counting it would walk all the replicas (up to 2^31-1) looking for it. */
static size_t pods_to_meet(const ctl_job_view *v, const kc_strmap *byname, const char *tname,
                           int32_t replicas) {
  const char *job = ctl__job_name(v->job);
  size_t jl = strlen(job), tl = strlen(tname), n = 0;
  for (size_t k = 0; k < v->npods; k++) {
    const char *nm = v->pods[k].name;
    if (kc_strmap_get(byname, nm) != &v->pods[k] || strncmp(nm, job, jl) != 0 || nm[jl] != '-' ||
        strncmp(nm + jl + 1, tname, tl) != 0 || nm[jl + 1 + tl] != '-')
      continue;
    const char *d = nm + jl + tl + 2;
    int64_t idx = 0;
    size_t i = 0;
    for (; d[i] >= '0' && d[i] <= '9' && idx < replicas; i++)
      idx = idx * 10 + (d[i] - '0');
    n += i > 0 && d[i] == '\0' && idx < replicas && (d[0] != '0' || i == 1);
  }
  return n;
}

/* An existing pod of the walk: counted, or deleted when out of sync. */
static int keep_pod(ctl_ctx *c, const ctl_pod *p) {
  ctl_status *st = &c->plan->status;
  if (p->deletion_ts) {
    st->terminating++;
    return 0;
  }
  if (p->out_of_sync) {
    st->terminating++;
    return ctl__delete_pod(c->plan, p->name, "OutOfSync");
  }
  ctl__count_pod(st, p);
  return 0;
}

/* Pod `i` of task t is missing: built into the plan (counted as pending). */
static int build_pod(ctl_ctx *c, const Kiln__TaskSpec *t, json_t *tmpl, int i,
                     const claim_names *claims) {
  int rc = 0;
  c->errmsg[0] = '\0';
  json_t *pod = create_job_pod(c, t, tmpl, i, claims, &rc);
  if (!pod && c->errmsg[0])
    ctl__failure(c->plan, "FailedCreate", "Error creating pods: %s", c->errmsg);
  if (!pod || (rc = ctl__append(&c->plan->pods_create, pod)))
    return rc ? rc : KC_ENOMEM;
  ctl_pod fresh = {.phase = CTL_POD_PENDING};
  snprintf(fresh.task, sizeof(fresh.task), "%s", t->name ? t->name : "");
  ctl__count_pod(&c->plan->status, &fresh);
  return 0;
}

typedef struct {
  const claim_names *claims;
  kc_strmap *byname; /* pod name -> pod of the view */
  bool *seen;        /* per view pod: met by a task's walk */
} pod_walk;

/* Task t's pods by index: the existing ones kept, the missing ones built. The work is in
 * proportion to the pods that exist and the pods built, never to replicas: once every pod
 * of the task has been met, an index past the burst or one that may not be created yet ends
 * the walk. */
static int walk_task(ctl_ctx *c, pod_walk *w, const Kiln__TaskSpec *t, json_t *tmpl) {
  const ctl_job_view *v = c->v;
  const char *tname = t->name ? t->name : "";
  bool can_create = depends_ready(v, t);
  size_t have = pods_to_meet(v, w->byname, tname, t->replicas), met = 0;
  size_t cost = (t->template_json ? strlen(t->template_json) : 0) + CTL_POD_OVERHEAD;
  char name[CTL_NAME_MAX * 2];
  int rc;
  for (int32_t i = 0; i < t->replicas; i++) {
    snprintf(name, sizeof(name), "%s-%s-%d", ctl__job_name(v->job), tname, (int)i);
    const ctl_pod *p = kc_strmap_get(w->byname, name);
    if (p) {
      w->seen[p - v->pods] = true;
      met++;
      if ((rc = keep_pod(c, p)))
        return rc;
      continue;
    }
    size_t built = json_array_size(c->plan->pods_create);
    bool burst = built >= (v->create_burst ? v->create_burst : CTL_CREATE_BURST) ||
                 (built > 0 && c->built_bytes + cost > CTL_CREATE_BYTES);
    if (can_create && !burst) {
      if ((rc = build_pod(c, t, tmpl, (int)i, w->claims)))
        return rc;
      c->built_bytes += cost;
      continue;
    }
    /* dependency pods also requeue on update; past the burst, the rest in the next sync */
    c->plan->requeue_after = can_create ? 1 : 5;
    if (met >= have)
      break;
  }
  return 0;
}

/* Pods of task `tname` beyond replicas (scale down) or with a foreign name. */
static int scale_down_task(ctl_ctx *c, bool *seen, const char *tname) {
  const ctl_job_view *v = c->v;
  int rc;
  for (size_t k = 0; k < v->npods; k++) {
    const ctl_pod *p = &v->pods[k];
    if (seen[k] || strcmp(p->task, tname) != 0)
      continue;
    seen[k] = true;
    c->plan->status.terminating++;
    if (!p->deletion_ts && (rc = ctl__delete_pod(c->plan, p->name, "ScaleDown")))
      return rc;
  }
  return 0;
}

static int sync_pods(ctl_ctx *c, const claim_names *claims) {
  const ctl_job_view *v = c->v;
  const Kiln__JobSpec *spec = v->job->spec;
  int rc = 0;
  json_t *tmpl = NULL;
  kc_strmap byname; /* pod name -> pod; keys borrowed from the view */
  kc_strmap_init(&byname, KC_STRMAP_BORROW_KEYS);
  pod_walk w = {.claims = claims, .byname = &byname};
  w.seen = calloc(v->npods ? v->npods : 1, sizeof(*w.seen));
  if (!w.seen)
    return KC_ENOMEM;
  for (size_t k = 0; k < v->npods; k++)
    if (kc_strmap_put(&byname, v->pods[k].name, (void *)&v->pods[k], NULL) < 0) {
      rc = KC_ENOMEM;
      goto out;
    }
  for (size_t ti = 0; ti < spec->n_tasks && rc == 0; ti++) {
    const Kiln__TaskSpec *t = spec->tasks[ti];
    json_decref(tmpl);
    tmpl = t->template_json ? json_loads(t->template_json, 0, NULL) : NULL;
    rc = walk_task(c, &w, t, tmpl);
    if (rc == 0)
      rc = scale_down_task(c, w.seen, t->name ? t->name : "");
  }
out:
  json_decref(tmpl);
  kc_strmap_close(&byname, NULL);
  free(w.seen);
  return rc;
}

/* The checks the API server cannot make (they need the Queue objects): the queue must exist
 * and be a leaf, and, for a job that has not started, be open. When one fails the status says
 * why and the sync stops (true). The messages contain the words of Volcano's job webhook and
 * of its capacity plugin, which operators search for. */
static bool queue_blocks(ctl_ctx *c) {
  const ctl_job_view *v = c->v;
  const Kiln__Job *job = v->job;
  ctl_status *st = &c->plan->status;
  const char *qs = v->queue_state && *v->queue_state ? v->queue_state : "Open";
  bool not_started = st->phase == CTL_PHASE_PENDING && st->running + st->succeeded == 0;
  if (v->queue_exists && !v->queue_has_children && (!not_started || strcmp(qs, "Open") == 0))
    return false;
  const char *reason = !v->queue_exists        ? "QueueNotFound"
                       : v->queue_has_children ? "QueueNotLeaf"
                                               : "QueueNotOpen";
  if (!v->queue_exists)
    snprintf(st->message, sizeof(st->message),
             "unable to find job queue: queues.scheduling.volcano.sh \"%s\" not found; the "
             "job stays Pending until it is created",
             ctl__queue(job));
  else if (v->queue_has_children)
    snprintf(st->message, sizeof(st->message),
             "The Queue <%s> of Job <%s/%s> is not leaf queue; jobs can only be submitted to "
             "a queue without child queues",
             ctl__queue(job), ctl__job_ns(job), ctl__job_name(job));
  else /* Volcano's webhook refuses the Job with these words */
    snprintf(st->message, sizeof(st->message),
             "can only submit job to queue with state `Open`, queue `%s` status is `%s`; the "
             "job stays Pending until it opens",
             ctl__queue(job), qs);
  snprintf(st->reason, sizeof(st->reason), "%s", reason);
  ctl__event(c->plan, CTL_EVENT_WARNING, reason, "%s", st->message);
  c->plan->requeue_after = 30;
  return true;
}

/* The job's plugins, then its PVCs (initiateJob for a Pending job; the update hooks and the
 * claim names otherwise). *stop is set when the sync ends here with the returned code. */
static int plugins_and_claims(ctl_ctx *c, claim_names *claims, bool *stop) {
  ctl_status *st = &c->plan->status;
  *stop = true;
  if (st->phase != CTL_PHASE_PENDING) {
    int rc = ctl__plugins_job_update(c);
    if (rc)
      return rc;
    /* Pods need the claim names; they are in the spec once the job has started. */
    *stop = false;
    return job_io(c, claims, false);
  }
  char err[256] = "";
  int rc = ctl__plugins_job_add(c, err, sizeof(err));
  if (rc == KC_ENOENT) {
    ctl__event(c->plan, CTL_EVENT_WARNING, "PluginError",
               "Execute plugin when job add failed, err: %s", err);
    snprintf(st->reason, sizeof(st->reason), "PluginError");
    snprintf(st->message, sizeof(st->message), "%s", err);
    return 0;
  }
  if (rc == KC_EAGAIN) {
    /* An effect a plugin needs is being made off the loop (an ssh key pair): the job stays
     * as it is, the plugins done so far keep their objects and markers, the rest run when
     * it comes back a moment later. Not a failure: no event, no backoff. */
    c->plan->requeue_after = 1;
    return 0;
  }
  if (rc) {
    /* No fallback (a key from no randomness would be guessable): the sync fails, says
     * why, and is retried with backoff as Volcano retries a failed initiateJob. */
    ctl__failure(c->plan, "PluginError", "Execute plugin when job add failed, err: %s", err);
    return rc;
  }
  rc = job_io(c, claims, true);
  *stop = rc || c->blocked;
  return rc;
}

const ctl_state_ops ctl__real_ops = {
    .kill_job = ctl__kill_job,
    .kill_target = ctl__kill_target,
    .sync_job = ctl__sync_job,
};

int ctl__sync_job(ctl_ctx *c, ctl_update_fn fn) {
  const ctl_job_view *v = c->v;
  const Kiln__Job *job = v->job;
  ctl_status *st = &c->plan->status;
  claim_names claims = {0};
  int rc = 0;
  bool stop;
  if (job->metadata && job->metadata->deletion_timestamp)
    return 0;
  const char *phase = job->status && job->status->state ? job->status->state->phase : NULL;
  if (!phase || !*phase) {
    /* initJobStatus */
    ctl__set_phase(c, st, CTL_PHASE_PENDING);
    st->last_transition = v->now;
    st->min_available = ctl__job_min_available(job);
    ctl__append_condition(st, CTL_PHASE_PENDING, v->now);
    c->initiated = true;
  }
  if (queue_blocks(c))
    return 0;
  if (v->queue_extend_clusters && job->metadata &&
      !CTL_MAP_GET(job->metadata->annotations, job->metadata->n_annotations, CTL_KEY_FORWARDING)) {
    if (!c->plan->job_patch)
      c->plan->job_patch = json_object();
    json_object_set_new(c->plan->job_patch, "metadata",
                        json_pack("{s:{s:s}}", "annotations", CTL_KEY_FORWARDING, "true"));
  }
  /* A reason left by an earlier blocked sync no longer applies. */
  if (!strncmp(st->reason, "Queue", 5) || !strcmp(st->reason, "PluginError") ||
      !strcmp(st->reason, "PVCError")) {
    st->reason[0] = '\0';
    st->message[0] = '\0';
  }
  if ((rc = plugins_and_claims(c, &claims, &stop)) || stop || (rc = sync_podgroup(c)))
    goto out;
  ctl__reset_counts(st);
  if (!pg_admitted(v->podgroup)) {
    /* Until the scheduler admits the gang (Inqueue) no pod is created. */
    for (size_t i = 0; i < v->npods; i++) {
      if (v->pods[i].deletion_ts)
        st->terminating++;
      else
        ctl__count_pod(st, &v->pods[i]);
    }
  } else if ((rc = sync_pods(c, &claims))) {
    goto out;
  }
  /* Admitted, yet the gang may still not fit (a pod no node can hold, the cluster full): the
   * scheduler's reason reaches `kubectl describe vcjob` too. Volcano relays it only before
   * admission, which leaves an admitted gang's Job silent. */
  podgroup_event(c);
  st->min_available = ctl__job_min_available(job);
  ctl__apply_fn(c, st, fn);
out:
  free(claims.names);
  return rc;
}

/* ---- entry point ---- */

static uint32_t bit(ctl_event e) {
  return 1u << e;
}

/* Writes the default<i> names of unnamed tasks into the spec once, as Volcano's webhook
 * stores them at creation: spec.tasks whole (a merge patch replaces lists), guarded by the
 * resourceVersion read so a concurrent change of replicas is not overwritten. */
static int name_tasks_patch(ctl_plan *plan, const Kiln__Job *named) {
  const Kiln__JobSpec *spec = named->spec;
  json_t *tasks = json_array();
  if (!tasks)
    return KC_ENOMEM;
  for (size_t i = 0; i < spec->n_tasks; i++) {
    json_t *t = NULL;
    int rc = kc_codec_encode((const ProtobufCMessage *)spec->tasks[i], &t, NULL, 0);
    if (rc || json_array_append_new(tasks, t)) {
      json_decref(tasks);
      return rc ? rc : KC_ENOMEM;
    }
  }
  if (!plan->job_patch && !(plan->job_patch = json_object())) {
    json_decref(tasks);
    return KC_ENOMEM;
  }
  json_t *sp = json_object_get(plan->job_patch, "spec");
  if (!sp) {
    sp = json_object();
    json_object_set_new(plan->job_patch, "spec", sp);
  }
  json_object_set_new(sp, "tasks", tasks);
  const char *rv = named->metadata ? named->metadata->resource_version : NULL;
  if (rv && *rv) {
    json_t *meta = json_object_get(plan->job_patch, "metadata");
    if (!meta) {
      meta = json_object();
      json_object_set_new(plan->job_patch, "metadata", meta);
    }
    json_object_set_new(meta, "resourceVersion", json_string(rv));
  }
  return 0;
}

/* After RestartPartition: the delayed actions of every pod of that partition. */
static int cancel_partition(ctl_ctx *c) {
  int part = ctl__request_partition(c);
  const char *task = c->req->task ? c->req->task : "";
  int rc = 0;
  for (size_t i = 0; part >= 0 && i < c->v->npods && !rc; i++) {
    const ctl_pod *p = &c->v->pods[i];
    if (p->has_partition && p->partition == part && strcmp(p->task, task) == 0)
      rc = ctl__cancel(c->plan, CTL_SCOPE_POD, p->name, 0);
  }
  return rc;
}

/* A Command is deleted before its action runs, so it runs at most once: the first one becomes
 * the request (later ones wait for the next sync). 0 or KC_ENOMEM. */
static int take_command(const ctl_job_view *view, ctl_request *r, ctl_plan *plan) {
  const Kiln__Command *cmd = view->commands[0];
  const char *cname = cmd->metadata && cmd->metadata->name ? cmd->metadata->name : "";
  char(*cd)[CTL_NAME_MAX] =
      realloc(plan->commands_delete, (plan->ncommands_delete + 1) * sizeof(*cd));
  if (!cd)
    return KC_ENOMEM;
  plan->commands_delete = cd;
  snprintf(cd[plan->ncommands_delete++], CTL_NAME_MAX, "%s", cname);
  ctl__event(plan, CTL_EVENT_NORMAL, "CommandIssued",
             "Start to execute command %s, and clean it up to make sure executed not more "
             "than once.",
             cmd->action ? cmd->action : "");
  r->action = ctl_action_parse(cmd->action);
  r->event = CTL_EV_COMMAND_ISSUED;
  if (r->action == CTL_ACT_NONE)
    r->action = CTL_ACT_SYNC_JOB;
  if (view->ncommands > 1)
    plan->requeue_after = 1;
  return 0;
}

/* Delayed actions armed for the request's pod stop making sense once it moved on. */
static int cancel_moved_pod(const ctl_request *r, ctl_plan *plan) {
  if (!r->pod || !*r->pod || r->event == CTL_EV_POD_PENDING || r->event == CTL_EV_NONE ||
      r->event == CTL_EV_OUT_OF_SYNC || r->event == CTL_EV_COMMAND_ISSUED || r->delayed)
    return 0;
  int rc = ctl__cancel(plan, CTL_SCOPE_POD, r->pod, bit(CTL_EV_POD_PENDING));
  if (!rc && r->event == CTL_EV_POD_RUNNING)
    rc = ctl__cancel(plan, CTL_SCOPE_POD, r->pod, bit(CTL_EV_POD_FAILED) | bit(CTL_EV_POD_EVICTED));
  return rc;
}

/* A policy with a timeout: the action is armed to run after delay instead of now. */
static void arm_delayed(const ctl_job_view *view, const ctl_request *r, ctl_action action,
                        int64_t delay, ctl_plan *plan) {
  char d[32];
  ctl_duration_format(delay, d, sizeof(d));
  plan->has_delayed = true;
  plan->delayed.at = view->now + delay;
  plan->delayed.action = action;
  plan->delayed.event = r->event;
  snprintf(plan->delayed.task, sizeof(plan->delayed.task), "%s", r->task ? r->task : "");
  snprintf(plan->delayed.pod, sizeof(plan->delayed.pod), "%s", r->pod ? r->pod : "");
  ctl__event(plan, CTL_EVENT_NORMAL, "ExecuteAction", "Execute action %s after %s",
             ctl_action_name(action), d);
  plan->action = CTL_ACT_NONE;
}

/* Once an action ran, the other delayed actions of its scope are moot. */
static int cancel_after(ctl_ctx *c, ctl_action action) {
  const ctl_request *r = c->req;
  switch (action) {
  case CTL_ACT_SYNC_JOB:
  case CTL_ACT_ENQUEUE_JOB:
    return 0;
  case CTL_ACT_RESTART_TASK:
    return ctl__cancel(c->plan, CTL_SCOPE_TASK, r->task ? r->task : "", 0);
  case CTL_ACT_RESTART_POD:
    return ctl__cancel(c->plan, CTL_SCOPE_POD, r->pod ? r->pod : "", 0);
  case CTL_ACT_RESTART_PARTITION:
    return cancel_partition(c);
  default:
    return ctl__cancel(c->plan, CTL_SCOPE_JOB, "", 0);
  }
}

/* The request (r, which c->req points to) after Commands and policies, acted on: the body of
 * ctl_job_sync between reading the status and comparing it. */
static int sync_request(ctl_ctx *c, ctl_request *r, const ctl_named_job *named,
                        const Kiln__Job *job) {
  ctl_plan *plan = c->plan;
  int rc;
  if (c->v->ncommands && (rc = take_command(c->v, r, plan)))
    return rc;
  if ((rc = cancel_moved_pod(r, plan)))
    return rc;
  ctl_action action;
  int64_t delay;
  ctl__apply_policies(job, r, &action, &delay);
  if (delay > 0 && !r->delayed) {
    arm_delayed(c->v, r, action, delay, plan);
    return 0;
  }
  if (action != CTL_ACT_SYNC_JOB)
    ctl__event(plan, CTL_EVENT_NORMAL, "ExecuteAction", "Start to execute action %s ",
               ctl_action_name(action));
  c->action = action;
  plan->action = action;
  if ((rc = ctl__state_execute(c, plan->status.phase, action, &ctl__real_ops)) ||
      (rc = cancel_after(c, action)))
    return rc;
  if (named->nnamed)
    return name_tasks_patch(plan, job);
  /* ttlSecondsAfterFinished is the gc-controller's (ctl_ctrl_gc.c), as in Volcano. */
  return 0;
}

int ctl_job_sync(const ctl_job_view *view, const ctl_request *req, ctl_plan *plan) {
  if (!view || !view->job || !view->job->spec || !req || !plan)
    return KC_EINVAL;
  ctl_named_job named;
  const Kiln__Job *job;
  int rc = ctl__name_tasks(view->job, &named, &job);
  if (rc)
    return rc;
  ctl_job_view nv = *view;
  nv.job = job;
  ctl_request r = *req;
  ctl_ctx c = {.v = &nv, .req = &r, .plan = plan};
  if ((rc = ctl_status_from_pb(&plan->status, job->status))) {
    ctl__named_job_close(&named);
    return rc;
  }
  json_t *before = ctl_status_to_json(&plan->status);
  if (!before) {
    ctl__named_job_close(&named);
    return KC_ENOMEM;
  }
  plan->old_phase = plan->status.phase;
  snprintf(plan->podgroup_name, sizeof(plan->podgroup_name), "%s-%s", ctl__job_name(job),
           ctl__job_uid(job));
  if (!job->metadata || !job->metadata->deletion_timestamp)
    rc = sync_request(&c, &r, &named, job);
  json_t *after = ctl_status_to_json(&plan->status);
  if (!after && !rc)
    rc = KC_ENOMEM;
  plan->status_changed = !json_equal(before, after);
  json_decref(before);
  json_decref(after);
  free(c.tf_cluster);
  ctl__named_job_close(&named);
  return rc;
}
