/* The scheduler shell's rules, pure functions of their arguments (unit-tested in
 * tests/unit/test_sch_cache.c): see sch_shell.h. */
#include <stdio.h>
#include <string.h>

#include "kc_error.h"
#include "kc_str.h"
#include "kc_strmap.h"
#include "sch_shell.h"

bool sch_shell_pg_quiet(uint64_t invalid_since_ms, uint64_t now_ms, uint64_t quiet_ms) {
  return now_ms < invalid_since_ms + quiet_ms;
}

bool sch_shell_pg_hold(bool binding, bool starting, uint64_t held_since_ms, uint64_t now_ms,
                       uint64_t hold_ms) {
  if (binding)
    return true;
  if (!starting)
    return false;
  return held_since_ms == 0 || now_ms < held_since_ms + hold_ms;
}

bool sch_shell_pg_quiet_track(const kc_strmap *prev, kc_strmap *next, const char *key,
                              uint64_t now_ms, uint64_t quiet_ms) {
  uintptr_t seen = (uintptr_t)kc_strmap_get(prev, key);
  uint64_t since = seen ? (uint64_t)seen - 1 : now_ms;
  /* Out of memory: the start would be forgotten and the quiet time never end; write now. */
  if (kc_strmap_put(next, key, (void *)(uintptr_t)(since + 1), NULL) < 0)
    return false;
  return sch_shell_pg_quiet(since, now_ms, quiet_ms);
}

bool sch_shell_pg_hold_track(const kc_strmap *prev, kc_strmap *next, const char *key, bool binding,
                             bool starting, uint64_t now_ms, uint64_t hold_ms) {
  uintptr_t held = (uintptr_t)kc_strmap_get(prev, key);
  uint64_t since = held ? (uint64_t)held - 1 : 0;
  if (!sch_shell_pg_hold(binding, starting, since, now_ms, hold_ms))
    return false;
  /* Binds in flight hold with no clock. A settling hold needs its start kept; when it
   * cannot be (out of memory) the status goes out now rather than be held for ever. */
  if (!binding &&
      kc_strmap_put(next, key, (void *)(uintptr_t)((since ? since : now_ms) + 1), NULL) < 0)
    return false;
  return true;
}

size_t sch_shell_pg_conditions(const Kiln__PodGroupStatus *cur, const sch_pg_status *ps,
                               const char *ts, Kiln__PodGroupCondition *conds,
                               Kiln__PodGroupCondition **cptr, bool *changed) {
  size_t ncur = cur ? cur->n_conditions : 0, n = 0;
  bool placed = false;
  *changed = false;
  for (size_t i = 0; i < ncur; i++) {
    const Kiln__PodGroupCondition *c = cur->conditions[i];
    Kiln__PodGroupCondition *o = &conds[n];
    *o = *c;
    if (ps->has_condition && kc_str_eq(c->type, ps->condition.type)) {
      placed = true;
      if (!kc_str_eq(c->status, ps->condition.status) ||
          !kc_str_eq(c->reason, ps->condition.reason) ||
          !kc_str_eq(c->message, ps->condition.message)) {
        *changed = true;
        o->status = (char *)ps->condition.status;
        o->reason = (char *)ps->condition.reason;
        o->message = (char *)ps->condition.message;
        o->transition_id = (char *)ps->condition.transition_id;
        o->last_transition_time = (char *)ts;
      }
    } else if (ps->has_condition && strcmp(ps->condition.type, "Scheduled") == 0 &&
               kc_str_eq(c->type, "Unschedulable") && kc_str_eq(c->status, "True")) {
      *changed = true;
      o->status = "False";
      o->last_transition_time = (char *)ts;
    }
    cptr[n++] = o;
  }
  if (ps->has_condition && !placed) {
    Kiln__PodGroupCondition init = KILN__POD_GROUP_CONDITION__INIT;
    Kiln__PodGroupCondition *o = &conds[n];
    *o = init;
    o->type = (char *)ps->condition.type;
    o->status = (char *)ps->condition.status;
    o->reason = (char *)ps->condition.reason;
    o->message = (char *)ps->condition.message;
    o->transition_id = (char *)ps->condition.transition_id;
    o->last_transition_time = (char *)ts;
    cptr[n++] = o;
    *changed = true;
  }
  return n;
}

bool sch_shell_still_pending(const Kiln__Pod *then, const Kiln__Pod *now) {
  return now != NULL && kc_str_eq(then->uid, now->uid) &&
         (now->node_name == NULL || now->node_name[0] == '\0') && now->deletion_time == 0;
}

int sch_shell_foreign_groups(const sch_snapshot *snap, kc_strmap *foreign) {
  char key[512];
  int rc = 0;
  for (int32_t ti = 0; ti < snap->ntasks; ti++) {
    const Kiln__Pod *p = snap->tasks[ti].pod;
    if (snap->tasks[ti].job >= 0 || p->group_name == NULL || p->group_name[0] == '\0')
      continue;
    if ((size_t)snprintf(key, sizeof(key), "%s/%s", p->namespace_, p->group_name) < sizeof(key) &&
        kc_strmap_put(foreign, key, NULL, NULL) < 0)
      rc = KC_ENOMEM;
  }
  return rc;
}

size_t sch_shell_slice_end(size_t next, size_t n, size_t slice) {
  return n - next > slice ? next + slice : n;
}

uint64_t sch_shell_early_delay(uint64_t now_ms, uint64_t last_session_ms, uint64_t delay_ms,
                               uint64_t min_gap_ms) {
  uint64_t at = now_ms + delay_ms, earliest = last_session_ms + min_gap_ms;
  return at >= earliest ? delay_ms : earliest - now_ms;
}

static bool ours(const char *sn, const char *const *names, size_t n) {
  if (n == 0)
    return kc_str_eq(sn, "volcano");
  for (size_t i = 0; i < n; i++)
    if (kc_str_eq(sn, names[i]))
      return true;
  return false;
}

static bool pg_pending(const Kiln__PodGroup *pg) {
  const char *ph = pg && pg->status ? pg->status->phase : NULL;
  return ph == NULL || ph[0] == '\0' || strcmp(ph, "Pending") == 0;
}

bool sch_shell_pg_leads(const Kiln__PodGroup *pg, sch_pg_phase phase) {
  return pg != NULL && pg->metadata != NULL && pg_pending(pg) && phase != SCH_PG_PENDING;
}

bool sch_shell_is_new_work(sch_cache_kind kind, const void *old_obj, const void *new_obj,
                           const char *const *names, size_t n) {
  if (new_obj == NULL)
    return false;
  if (kind == SCH_CACHE_PODS) {
    const Kiln__Pod *p = new_obj;
    return old_obj == NULL && (p->node_name == NULL || p->node_name[0] == '\0') &&
           p->deletion_time == 0 &&
           (p->phase == KILN__POD_PHASE__POD_PHASE_PENDING ||
            p->phase == KILN__POD_PHASE__POD_PHASE_UNSET) &&
           ours(p->scheduler_name, names, n);
  }
  if (kind == SCH_CACHE_PODGROUPS)
    return old_obj == NULL || (pg_pending(new_obj) && !pg_pending(old_obj));
  return false;
}

/* Volcano's PodGroupStatus counters are omitempty: a zero count is absent from the object
 * (`kubectl get podgroup` shows no RUNNINGS), so a count that is zero is sent as null, which
 * in a merge patch removes the field a non-zero count left. */
int sch_shell_pg_zero_counts(json_t *status, const sch_pg_status *ps) {
  static const char *const names[] = {"running", "succeeded", "failed"};
  const int32_t vals[] = {ps->running, ps->succeeded, ps->failed};
  if (status == NULL)
    return KC_EINVAL;
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (vals[i] == 0 && json_object_set_new(status, names[i], json_null()) != 0)
      return KC_ENOMEM;
  return 0;
}

bool sch_shell_resource_matches(const sch_snapshot *snap, const sch_resource *want,
                                const Kiln__Resource *have) {
  if (have == NULL)
    return sch_resource_is_zero(want);
  if (have->milli_cpu != want->milli_cpu || have->memory != want->memory)
    return false;
  int nonzero = 0;
  for (int i = 0; i < snap->nscalars; i++) {
    if (want->scalar[i] == 0)
      continue;
    nonzero++;
    bool found = false;
    for (size_t k = 0; k < have->n_scalar; k++)
      if (kc_str_eq(have->scalar[k]->name, snap->scalar_names[i]) &&
          have->scalar[k]->milli_value == want->scalar[i])
        found = true;
    if (!found)
      return false;
  }
  size_t have_nonzero = 0;
  for (size_t k = 0; k < have->n_scalar; k++)
    if (have->scalar[k]->milli_value != 0)
      have_nonzero++;
  return have_nonzero == (size_t)nonzero;
}
