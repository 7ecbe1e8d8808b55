/* The registry of plugins and actions. A new plugin or action adds one extern line and one
 * table entry here (and a plugin the arguments it reads, in plugin_args); the configuration
 * parser skips plugin names that are not listed, as Volcano does, and names them in the log. */
#include <fnmatch.h>
#include <string.h>

#include "sch_framework.h"
#include "sch_int.h"

extern const sch_plugin sch_plugin_gang;
extern const sch_plugin sch_plugin_priority;
extern const sch_plugin sch_plugin_conformance;
/* Other plugins: one extern line each, below. */
extern const sch_plugin sch_plugin_binpack;
extern const sch_plugin sch_plugin_cdp;
extern const sch_plugin sch_plugin_deviceshare;
extern const sch_plugin sch_plugin_drf;
extern const sch_plugin sch_plugin_nodeorder;
extern const sch_plugin sch_plugin_overcommit;
extern const sch_plugin sch_plugin_pdb;
extern const sch_plugin sch_plugin_predicates;
extern const sch_plugin sch_plugin_proportion;
extern const sch_plugin sch_plugin_capacity;
extern const sch_plugin sch_plugin_rescheduling;
extern const sch_plugin sch_plugin_sla;
extern const sch_plugin sch_plugin_nodegroup;
extern const sch_plugin sch_plugin_numaaware;
extern const sch_plugin sch_plugin_tasktopology;
extern const sch_plugin sch_plugin_usage;
extern const sch_plugin sch_plugin_rsf;
extern const sch_plugin sch_plugin_extender;
extern const sch_plugin sch_plugin_resourcequota;
extern const sch_plugin sch_plugin_networktopology;

extern const sch_action sch_action_enqueue;
extern const sch_action sch_action_allocate;
extern const sch_action sch_action_backfill;
extern const sch_action sch_action_preempt;
extern const sch_action sch_action_reclaim;
extern const sch_action sch_action_shuffle;
extern const sch_action sch_action_gangpreempt;
extern const sch_action sch_action_gangreclaim;

static const sch_plugin *const plugins[] = {
    &sch_plugin_gang,
    &sch_plugin_priority,
    &sch_plugin_conformance,
    /* Other plugins: one line each, below. */
    &sch_plugin_binpack,
    &sch_plugin_cdp,
    &sch_plugin_deviceshare,
    &sch_plugin_drf,
    &sch_plugin_nodeorder,
    &sch_plugin_overcommit,
    &sch_plugin_pdb,
    &sch_plugin_predicates,
    &sch_plugin_proportion,
    &sch_plugin_capacity,
    &sch_plugin_rescheduling,
    &sch_plugin_sla,
    &sch_plugin_nodegroup,
    &sch_plugin_numaaware,
    &sch_plugin_tasktopology,
    &sch_plugin_usage,
    &sch_plugin_rsf,
    &sch_plugin_extender,
    &sch_plugin_resourcequota,
    &sch_plugin_networktopology,
};

static const sch_action *const actions[] = {
    &sch_action_enqueue, &sch_action_allocate, &sch_action_backfill,    &sch_action_preempt,
    &sch_action_reclaim, &sch_action_shuffle,  &sch_action_gangpreempt, &sch_action_gangreclaim,
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

/* The arguments each plugin reads, as fnmatch(3) patterns ('*' also matches '.' and '/', so
 * "binpack.resources.*" covers "binpack.resources.nvidia.com/gpu"). An argument a plugin does
 * not list here is named in the log when the configuration loads (it changes nothing), so a
 * plugin that starts reading a new argument lists it here too. Plugins not in this table
 * read no arguments. */
static const struct {
  const char *plugin;
  const char *const *keys; /* NULL-terminated */
} plugin_args[] = {
    {"binpack", (const char *const[]){"binpack.weight", "binpack.cpu", "binpack.memory",
                                      "binpack.resources", "binpack.resources.*", NULL}},
    {"capacity", (const char *const[]){"ancestorReclaimLevel", NULL}},
    {"deviceshare",
     (const char *const[]){"deviceshare.GPUSharingEnable", "deviceshare.NodeLockEnable",
                           "deviceshare.GPUNumberEnable", "deviceshare.VGPUEnable",
                           "deviceshare.SchedulePolicy", "deviceshare.ScheduleWeight",
                           "deviceshare.KnownGeometriesCMName",
                           "deviceshare.KnownGeometriesCMNamespace", NULL}},
    {"extender", (const char *const[]){"extender.urlPrefix", "extender.httpTimeout",
                                       "extender.onSessionOpenVerb", "extender.onSessionCloseVerb",
                                       "extender.predicateVerb", "extender.prioritizeVerb",
                                       "extender.preemptableVerb", "extender.reclaimableVerb",
                                       "extender.queueOverusedVerb", "extender.jobEnqueueableVerb",
                                       "extender.jobReadyVerb", "extender.ignorable", NULL}},
    {"network-topology-aware",
     (const char *const[]){"weight", "hypernode.binpack.cpu", "hypernode.binpack.memory",
                           "hypernode.binpack.resources", "hypernode.binpack.resources.*",
                           "hypernode.binpack.normal-pod.enable",
                           "hypernode.binpack.normal-pod.fading", NULL}},
    {"nodeorder", (const char *const[]){"leastrequested.weight", "mostrequested.weight",
                                        "balancedresource.weight", "nodeaffinity.weight",
                                        "tainttoleration.weight", "podaffinity.weight",
                                        "podtopologyspread.weight", "imagelocality.weight", NULL}},
    {"numa-aware", (const char *const[]){"weight", NULL}},
    {"overcommit", (const char *const[]){"overcommit-factor", "overcommit-factor.*", NULL}},
    {"predicates",
     (const char *const[]){
         "predicate.PodAffinityEnable", "predicate.PodTopologySpreadEnable",
         "predicate.NodeAffinityEnable", "predicate.NodePortsEnable",
         "predicate.TaintTolerationEnable", "predicate.DynamicResourceAllocationEnable",
         "predicate.NodeVolumeLimitsEnable", "predicate.VolumeZoneEnable",
         "predicate.VolumeBindingEnable", "volumebinding.bindTimeoutSeconds", NULL}},
    {"resource-strategy-fit",
     (const char *const[]){"resourceStrategyFitWeight", "resources.*.type", "resources.*.weight",
                           "sra.enable", "sra.resources", "sra.weight", "sra.resourceWeight.*",
                           "proportional.enable", "proportional.resources",
                           "proportional.resourceProportion.*", NULL}},
    {"rescheduling",
     (const char *const[]){"interval", "strategies.*.name", "strategies.*.params.thresholds.cpu",
                           "strategies.*.params.thresholds.memory",
                           "strategies.*.params.targetThresholds.cpu",
                           "strategies.*.params.targetThresholds.memory", NULL}},
    {"sla", (const char *const[]){"sla-waiting-time", NULL}},
    {"task-topology", (const char *const[]){"task-topology.weight", NULL}},
    {"usage", (const char *const[]){"usage.weight", "cpu.weight", "memory.weight", "thresholds.cpu",
                                    "thresholds.mem", NULL}},
};

bool sch_plugin_reads_arg(const sch_plugin *p, const char *key) {
  for (size_t i = 0; i < sizeof(plugin_args) / sizeof(plugin_args[0]); i++) {
    if (strcmp(plugin_args[i].plugin, p->name) != 0)
      continue;
    for (const char *const *k = plugin_args[i].keys; *k; k++)
      if (fnmatch(*k, key, 0) == 0)
        return true;
  }
  return false;
}

/* Arguments Volcano's plugin reads or lists that change nothing in kiln-scheduler, each with
 * why (patterns as in plugin_args). The configuration loader names each one once with its
 * reason, where an argument in neither table is named as not read. */
static const struct {
  const char *plugin, *key, *why;
} plugin_inert_args[] = {
    {"rescheduling", "metricsPeriod",
     "it chooses which window of a metrics source's usage averages Volcano compares; "
     "kiln-scheduler's rescheduling measures a node by its pods' requests over its "
     "allocatable"},
    {"rescheduling", "strategies.*.params.thresholds.pod",
     "Volcano reads it and compares only cpu and memory (a node's usage has no pod count)"},
    {"rescheduling", "strategies.*.params.thresholds.pods",
     "Volcano reads only \"pod\", and compares only cpu and memory"},
    {"rescheduling", "strategies.*.params.targetThresholds.pod",
     "Volcano reads it and compares only cpu and memory (a node's usage has no pod count)"},
    {"rescheduling", "strategies.*.params.targetThresholds.pods",
     "Volcano reads only \"pod\", and compares only cpu and memory"},
    {"rescheduling", "strategies.*.params.thresholdPriorityClassName",
     "Volcano lists it among lowNodeUtilization's defaults and never reads it"},
    {"rescheduling", "strategies.*.params.thresholdPriority",
     "Volcano lists it among lowNodeUtilization's defaults and never reads it"},
    {"rescheduling", "strategies.*.params.nodeFit",
     "Volcano lists it among lowNodeUtilization's defaults and never reads it"},
    {"rescheduling", "strategies.*.params.numberOfNodes",
     "Volcano lists it among lowNodeUtilization's defaults and never reads it"},
    {"predicates", "predicate.CacheEnable",
     "Volcano's cache (off by default) keeps the node checks' answer (unschedulable, node "
     "affinity, taints) per node and pod template (volcano.sh/template-uid), so it changes how "
     "often they are computed, not their answers"},
    {"predicates", "volumebinding.weight",
     "Volcano multiplies VolumeBinding's node score by it (1), a score that only Kubernetes' "
     "StorageCapacityScoring feature gate (alpha, off by default) makes other than 0; "
     "kiln-scheduler does not score volumes, as Volcano with the gate off"},
    {"predicates", "volumebinding.shape*",
     "Volcano reads it only with Kubernetes' StorageCapacityScoring feature gate (alpha, off "
     "by default); kiln-scheduler does not score volumes, as Volcano with the gate off"},
};

const char *sch_plugin_inert_arg(const sch_plugin *p, const char *key) {
  for (size_t i = 0; i < sizeof(plugin_inert_args) / sizeof(plugin_inert_args[0]); i++)
    if (strcmp(plugin_inert_args[i].plugin, p->name) == 0 &&
        fnmatch(plugin_inert_args[i].key, key, 0) == 0)
      return plugin_inert_args[i].why;
  return NULL;
}

const sch_action *sch_action_find(const char *name) {
  for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
    if (strcmp(actions[i]->name, name) == 0)
      return actions[i];
  return NULL;
}
