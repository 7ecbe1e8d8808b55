/* The scheduler cache (Volcano SchedulerCache): informers for pods, nodes, PodGroups,
 * Queues and PriorityClasses that keep the compact protobuf views of pod.proto and
 * volcano.proto, plus the tasks this scheduler has decided but the API server has not yet
 * confirmed (assumed binds).
 *
 * Assume, confirm, forget (Volcano's Binding status): when a session decides to bind a pod,
 * the shell assumes it on its node, so that the next session sees the pod as placed and
 * does not place it twice; the watch confirms it (the pod comes back with spec.nodeName,
 * or is deleted) and the assumption is dropped; a failed bind forgets it, and the pod is
 * Pending again in the next session.
 *
 * Every pod is watched, not only ours: pods of other schedulers still use their nodes.
 * Everything runs on the loop thread; only a held snapshot's objects are read elsewhere. */
#ifndef SCH_CACHE_H
#define SCH_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_api.h"
#include "kc_store.h"
#include "snapshot.pb-c.h"

struct sch_conf;

typedef struct sch_cache sch_cache;

/* The informers, for sch_cache_store and the on_change hook. */
typedef enum {
  SCH_CACHE_PODS,
  SCH_CACHE_NODES,
  SCH_CACHE_PODGROUPS,
  SCH_CACHE_QUEUES,
  SCH_CACHE_PRIORITY_CLASSES,
  SCH_CACHE_PDBS,
  SCH_CACHE_DEVICE_CLASSES,
  SCH_CACHE_RESOURCE_SLICES,
  SCH_CACHE_RESOURCE_CLAIMS,
  SCH_CACHE_NUMATOPOLOGIES,
  SCH_CACHE_PVS,
  SCH_CACHE_PVCS,
} sch_cache_kind;

typedef struct {
  const char *default_queue; /* borrowed; NULL: "default" */
  /* Gate for the cache's own writes (the default queue); NULL allows them. Returns 0 when
   * this process may write. */
  int (*may_write)(void *ud);
  void *ud;
  /* Ask for pods and nodes in Kubernetes' protobuf encoding (JSON stays the fallback and
   * the encoding of Volcano's resources). */
  bool protobuf;
  /* Told about a pod the cache cannot decode (an unparsable request, ...): it is left out
   * of scheduling; its namespace, name, uid and schedulerName (each NULL when unknown) and
   * err, the decoder's message, are borrowed for the call. May be NULL. */
  void (*on_bad_pod)(const char *ns, const char *name, const char *uid, const char *scheduler,
                     const char *err, void *ud);
  /* Told about every pod and PodGroup the watch adds or changes (old_obj NULL for an add),
   * after the store has it: the shell starts a session early for new work. Both objects
   * are borrowed for the call. May be NULL. */
  void (*on_change)(sch_cache_kind kind, const void *old_obj, const void *new_obj, void *ud);
  /* Told the key ("ns/name") and uid of every pod and PodGroup the watch (or a relist)
   * deletes, so that what is kept per object elsewhere (the event recorder's correlation,
   * the last status written) goes too. Both borrowed for the call. May be NULL. */
  void (*on_gone)(sch_cache_kind kind, const char *key, const char *uid, void *ud);
  /* --node-selector: "key:value" entries (borrowed); when one is valid, sessions see only
   * the nodes carrying at least one of those labels (Volcano's nodeCanAddCache). */
  const char *const *node_selector;
  size_t nnode_selector;
  /* The scheduler's configuration at start, read by sch_cache_new only: the ConfigMap the
   * deviceshare plugin reads is watched by the name it gives (sch_kind_field_selector), as
   * Volcano reads it once. NULL: the default configuration's. */
  const struct sch_conf *conf;
} sch_cache_options;

/* Whether node n is one the scheduler works with under --node-selector entries sel: true
 * when no entry is valid ("key:value", value not empty, spaces trimmed, as Volcano reads
 * them) or n has one of the labels. Pure. */
bool sch_cache_node_selected(const Kiln__Node *n, const char *const *sel, size_t nsel);

/* *out is new; c and o's strings are borrowed and must outlive the cache. */
int sch_cache_new(kc_client *c, const sch_cache_options *o, sch_cache **out);
/* Starts the informers. */
int sch_cache_start(sch_cache *cache);
/* Stops the informers and frees the cache; run the loop afterwards. NULL is a no-op. */
void sch_cache_free(sch_cache *cache);

/* Every informer has finished its first LIST. */
bool sch_cache_synced(const sch_cache *cache);
/* Benchmark aid: the cache counts as synced with its informers never started, its stores
 * filled through sch_cache_store (tests/bench/loopstall). */
void sch_cache_set_synced(sch_cache *cache);
/* Called from the period: creates the default queue when it is missing (once it is known
 * to be missing after the Queue informer synced, and writes are allowed). */
void sch_cache_tick(sch_cache *cache);

/* A pod the snapshot shows otherwise than the store: assumed on a node (node borrowed from
 * the cache, kept while held), or being evicted. */
typedef struct sch_cache_overlay {
  const Kiln__Pod *pod;
  const char *node;
  const char *vgpu_ids, *gpu_index; /* an assumed device assignment, or NULL */
  bool evicting;
} sch_cache_overlay;

/* A snapshot message of the cache. */
typedef struct sch_cache_snap {
  Kiln__Snapshot msg; /* its arrays are owned; the objects are borrowed from the cache */
  Kiln__Pod *assumed; /* shallow copies of assumed pods with node_name set, and of pods
                         being evicted with deletion_time set */
  size_t nassumed;
  bool *binding;              /* per assumed copy: assumed on a node (its bind in flight) */
  Kiln__PodDevices *devices;  /* per assumed copy: its devices with the assumed assignment */
  sch_cache_overlay *overlay; /* owned: what sch_cache_snap_finish applies */
  size_t noverlay;
} sch_cache_snap;

/* Fills *out (its arrays new) from the cache as it is now. The borrowed objects stay valid
 * until the loop next runs an informer callback, or, with the cache held (sch_cache_hold
 * before the loop runs again), until sch_cache_unhold: then another thread may read the
 * snapshot while the loop goes on. 0 or KC_ENOMEM. */
int sch_cache_snapshot(sch_cache *cache, sch_cache_snap *out);
/* The same in two steps: the arrays and the list of assumed and evicted pods (loop thread,
 * a copy of pointers and a lookup per assumed pod), then the shallow copies that show them
 * so (sch_cache_snap_finish: reads only the snapshot, so a worker thread may do it while
 * the cache is held). Each 0 or KC_ENOMEM; close the snapshot either way. */
int sch_cache_snapshot_deferred(sch_cache *cache, sch_cache_snap *out);
int sch_cache_snap_finish(sch_cache_snap *s);
void sch_cache_snap_close(sch_cache_snap *s);
/* Whether p (a pod of s's message) was assumed on its node when s was taken: a bind in
 * flight. */
bool sch_cache_snap_binding(const sch_cache_snap *s, const Kiln__Pod *p);
/* Holds every informer's store (kc_store_hold): objects the watch replaces or deletes, and
 * the node names of assumptions confirmed or forgotten, are freed at the matching unhold,
 * not before. Loop thread only. */
void sch_cache_hold(sch_cache *cache);
void sch_cache_unhold(sch_cache *cache);

/* Writes a snapshot of the cache to path as a packed Kiln__Snapshot, mode 0600 (atomically:
 * a mkstemp file in path's directory renamed over path; a symbolic link at path is
 * replaced, never followed). 0, KC_ENOMEM or KC_EIO (logged). */
int sch_cache_dump(sch_cache *cache, const char *path);

/* Marks the pod "ns/name" as bound to node until the watch confirms it. 0 or KC_ENOMEM. */
int sch_cache_assume(sch_cache *cache, const char *key, const char *node);
/* The same, with the device assignment the binder patches onto the pod (its
 * volcano.sh/vgpu-ids-new or volcano.sh/gpu-index, NULL when none; copied): snapshots show
 * the pod holding those devices until the watch confirms the bind, so that no session
 * gives them to another pod while the patch is on its way. 0 or KC_ENOMEM. */
int sch_cache_assume_devices(sch_cache *cache, const char *key, const char *node,
                             const char *vgpu_ids, const char *gpu_index);
/* Drops an assumption (bind failed). No-op when absent. */
void sch_cache_forget(sch_cache *cache, const char *key);
/* The node a pod is assumed on (borrowed), or NULL. */
const char *sch_cache_assumed_node(const sch_cache *cache, const char *key);
size_t sch_cache_nassumed(const sch_cache *cache);

/* Marks the pod "ns/name" (uid) as being evicted: snapshots show it Releasing until the
 * watch sees its deletionTimestamp, its deletion or a new pod under the name, so that no
 * session picks it as a victim twice. 0 or KC_ENOMEM. */
int sch_cache_evicting(sch_cache *cache, const char *key, const char *uid);
/* The eviction did not happen: the pod counts as it is again. No-op when absent. */
void sch_cache_evict_failed(sch_cache *cache, const char *key);
bool sch_cache_is_evicting(const sch_cache *cache, const char *key);

/* Lookups (borrowed until the next informer callback), NULL when absent. */
const Kiln__Pod *sch_cache_pod(const sch_cache *cache, const char *key);
const Kiln__PodGroup *sch_cache_podgroup(const sch_cache *cache, const char *key);
const Kiln__Queue *sch_cache_queue(const sch_cache *cache, const char *name);

/* The informers' stores (borrowed): tools read them; unit tests fill them in place of an
 * API server. Only the loop thread may touch them. */
kc_store *sch_cache_store(sch_cache *cache, sch_cache_kind kind);

typedef struct {
  size_t pods, nodes, pod_groups, queues, priority_classes, assumed;
  uint64_t confirmed, forgotten, decode_errors;
} sch_cache_stats;
void sch_cache_get_stats(const sch_cache *cache, sch_cache_stats *st);

#endif
