/* A snapshot's scalar resource slots (sch_snapshot.scalar_names), apart from sch_snapshot.c
 * so that the files filling them (sch_dra_count.c) do not call back into it. */
#include <string.h>

#include "kc_log.h"
#include "sch_int.h"

int sch__snapshot_scalar_slot(sch_snapshot *s, const char *name) {
  for (int i = 0; i < s->nscalars; i++)
    if (strcmp(s->scalar_names[i], name) == 0)
      return i;
  if (s->nscalars == SCH_MAX_SCALARS) {
    KC_WARN("scheduler: more than %d scalar resources; ignoring %s", SCH_MAX_SCALARS, name);
    return -1;
  }
  s->scalar_names[s->nscalars] = name;
  return s->nscalars++;
}

int sch_snapshot_scalar(const sch_snapshot *snap, const char *name) {
  for (int i = 0; i < snap->nscalars; i++)
    if (strcmp(snap->scalar_names[i], name) == 0)
      return i;
  return -1;
}
