/* NUMA alignment for the numa-aware plugin (Volcano pkg/scheduler/plugins/numaaware, its
 * policy package and its cpumanager and gpumanager hint providers, which follow the
 * kubelet's topology manager): one node's topology from its nodeinfo.volcano.sh
 * Numatopology, the CPUs and GPUs still free on it over a session, and whether a Guaranteed
 * pod's containers can be aligned on it under the node's topology manager policy (none,
 * best-effort, restricted, single-numa-node), with the CPUs and GPUs they would get.
 *
 * Hints, as the kubelet makes them: for each resource a container asks for, every set of
 * NUMA nodes (a mask) whose free CPUs (GPUs) cover the request, preferred when the mask is as
 * small as any mask whose CPUs could cover it at all. The hints of the resources are merged
 * by trying every combination (one hint per resource, ANDed): a preferred merged hint beats
 * a non-preferred one, then the narrower (fewer nodes, then the lower mask). best-effort
 * admits whatever comes out; restricted and single-numa-node (which keeps only one-node
 * hints) admit only a preferred one; none admits without aligning. Pure: no I/O. */
#ifndef SCH_NUMA_H
#define SCH_NUMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_error.h"
#include "pod.pb-c.h"

/* CPU ids beyond this, NUMA nodes beyond 64 (hints over at most 16) and GPU indexes beyond
 * 64 make a Numatopology unreadable (the node counts as having none). */
#define SCH_NUMA_MAX_CPUS  1024
#define SCH_NUMA_MAX_NODES 64
#define SCH_NUMA_MAX_HINT  16
#define SCH_NUMA_MAX_GPUS  64

typedef struct sch_cpuset {
  uint64_t w[SCH_NUMA_MAX_CPUS / 64];
} sch_cpuset;

bool sch_cpuset_has(const sch_cpuset *s, int cpu);
int sch_cpuset_count(const sch_cpuset *s);
/* Parses a Linux cpuset list ("0-3,8,10-11"; "" is empty) into *s. 0, or KC_EINVAL. */
KC_NODISCARD int sch_cpuset_parse(const char *list, sch_cpuset *s);

/* One node's topology and what is free on it (the session changes avail, gpu_avail). */
typedef struct sch_numa_topo {
  const char *tm_policy;  /* policies.TopologyManagerPolicy, "" when absent (borrowed) */
  const char *cpu_policy; /* policies.CPUManagerPolicy, "" when absent (borrowed) */
  int ncpus;              /* CPUs in cpuDetail */
  int16_t *cpu_numa;      /* per CPU id up to max_cpu: NUMA node, -1 not in cpuDetail */
  int16_t *order;         /* the CPU ids by socket, core, id (takeByTopology's order) */
  int32_t *socket, *core; /* per CPU id */
  int max_cpu;            /* highest CPU id + 1 */
  uint64_t numa_nodes;    /* the NUMA nodes of the CPUs */
  sch_cpuset reserved;    /* resReserved cpu, rounded up, taken by topology */
  sch_cpuset avail;       /* numares cpu allocatable (the session takes from it) */
  bool has_cpu_res;       /* numares has cpu */
  int8_t gpu_numa[SCH_NUMA_MAX_GPUS]; /* gpuDetail: per GPU index, -1 when absent */
  uint64_t gpu_avail;                 /* numares nvidia.com/gpu allocatable */
  bool has_gpu_detail, has_gpu_res;
} sch_numa_topo;

/* Reads nt (borrowed: the topology borrows its policy strings). 0, KC_EINVAL (unreadable:
 * an id out of range or a bad cpuset; the topology is left empty), or KC_ENOMEM. */
KC_NODISCARD int sch_numa_topo_init(sch_numa_topo *t, const Kiln__Numatopology *nt);
void sch_numa_topo_close(sch_numa_topo *t);

/* What a pod takes on a node. */
typedef struct sch_numa_assign {
  sch_cpuset cpus;
  uint64_t gpus;
} sch_numa_assign;

void sch_numa_take(sch_numa_topo *t, const sch_numa_assign *a);
void sch_numa_give(sch_numa_topo *t, const sch_numa_assign *a);

/* Volcano's answers (filterNodeByPolicy and the predicate). */
typedef enum {
  SCH_NUMA_FIT,         /* aligned; *out holds the assignment */
  SCH_NUMA_PASS,        /* fits without an assignment (nothing to align on this node) */
  SCH_NUMA_NO_INFO,     /* "numa info is empty" */
  SCH_NUMA_NOT_STATIC,  /* "cpu manager policy isn't static" */
  SCH_NUMA_DIFFERENT,   /* "task topology polocy[%s] is different with node[%s]" */
  SCH_NUMA_NO_CPU,      /* "cpu allocatable map is empty" */
  SCH_NUMA_NOT_ADMITTED /* "plugin numa-aware predicates failed for task ... container ..." */
} sch_numa_result;

/* Whether the pod (its NUMA view, NULL when it is not Guaranteed) fits on the node (its
 * topology, NULL when it has no Numatopology) as things stand, without changing anything.
 * On SCH_NUMA_NOT_ADMITTED *container is the index of the container that was refused. */
sch_numa_result sch_numa_fit(const sch_numa_topo *t, const Kiln__PodNuma *pod, sch_numa_assign *out,
                             int *container);

/* The number of NUMA nodes a's CPUs are on (the score's input). */
int sch_numa_span(const sch_numa_topo *t, const sch_numa_assign *a);

#endif
