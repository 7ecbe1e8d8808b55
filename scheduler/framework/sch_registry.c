/* The registry of plugins and actions. A new plugin or action adds one extern line and one
 * table entry here; the configuration parser refuses names that are not listed. */
#include <string.h>

#include "sch_framework.h"
#include "sch_int.h"

extern const sch_plugin sch_plugin_gang;
extern const sch_plugin sch_plugin_priority;
extern const sch_plugin sch_plugin_conformance;
/* Other plugins: one extern line each, below. */
extern const sch_plugin sch_plugin_binpack;
extern const sch_plugin sch_plugin_cdp;
extern const sch_plugin sch_plugin_drf;
extern const sch_plugin sch_plugin_nodeorder;
extern const sch_plugin sch_plugin_overcommit;
extern const sch_plugin sch_plugin_pdb;
extern const sch_plugin sch_plugin_predicates;
extern const sch_plugin sch_plugin_proportion;
extern const sch_plugin sch_plugin_capacity;
extern const sch_plugin sch_plugin_rescheduling;
extern const sch_plugin sch_plugin_sla;

extern const sch_action sch_action_enqueue;
extern const sch_action sch_action_allocate;
extern const sch_action sch_action_backfill;
extern const sch_action sch_action_preempt;
extern const sch_action sch_action_reclaim;
extern const sch_action sch_action_shuffle;

static const sch_plugin *const plugins[] = {
    &sch_plugin_gang,
    &sch_plugin_priority,
    &sch_plugin_conformance,
    /* Other plugins: one line each, below. */
    &sch_plugin_binpack,
    &sch_plugin_cdp,
    &sch_plugin_drf,
    &sch_plugin_nodeorder,
    &sch_plugin_overcommit,
    &sch_plugin_pdb,
    &sch_plugin_predicates,
    &sch_plugin_proportion,
    &sch_plugin_capacity,
    &sch_plugin_rescheduling,
    &sch_plugin_sla,
};

static const sch_action *const actions[] = {
    &sch_action_enqueue, &sch_action_allocate, &sch_action_backfill,
    &sch_action_preempt, &sch_action_reclaim,  &sch_action_shuffle,
};

const sch_plugin *sch_plugin_find(const char *name) {
  for (size_t i = 0; i < sizeof(plugins) / sizeof(plugins[0]); i++)
    if (strcmp(plugins[i]->name, name) == 0)
      return plugins[i];
  return NULL;
}

/* Every action name Volcano registers (pkg/scheduler/actions/factory.go). A configuration
 * that names one Kiln has not built is still the operator's configuration: that action is
 * skipped with an error and the rest of the file applies. */
static const char *const volcano_actions[] = {
    "enqueue", "allocate", "backfill",    "preempt",
    "reclaim", "shuffle",  "gangpreempt", "gangreclaim",
};

bool sch_action_volcano(const char *name) {
  for (size_t i = 0; i < sizeof(volcano_actions) / sizeof(volcano_actions[0]); i++)
    if (strcmp(volcano_actions[i], name) == 0)
      return true;
  return false;
}

const sch_action *sch_action_find(const char *name) {
  for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
    if (strcmp(actions[i]->name, name) == 0)
      return actions[i];
  return NULL;
}
