/* What kiln-scheduler reads from the API server: each kind its cache lists and watches
 * cluster-wide, the decoder it keeps the objects with, and where they go in the snapshot
 * message. One table: the cache's informers are made from it, and `vcctl job whatif`
 * (cli/vc_whatif_cmd.c) lists the same kinds with the same decoders into the same message, so
 * a what-if reads the cluster exactly as the scheduler does. Pure: no I/O. */
#ifndef SCH_KINDS_H
#define SCH_KINDS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.pb-c.h"

typedef enum {
  SCH_KIND_POD,
  SCH_KIND_NODE,
  SCH_KIND_PODGROUP,
  SCH_KIND_QUEUE,
  SCH_KIND_PRIORITYCLASS,
  SCH_KIND_PDB,
  SCH_KIND_QUOTA,
  SCH_KIND_DEVICECLASS,
  SCH_KIND_RESOURCESLICE,
  SCH_KIND_RESOURCECLAIM,
  SCH_KIND_NUMATOPO,
  SCH_KIND_HYPERNODE,
  SCH_KIND_PV,
  SCH_KIND_PVC,
  SCH_KIND_STORAGECLASS,
  SCH_KIND_CSINODE,
  SCH_KIND_CSIDRIVER,
  SCH_KIND_CSICAPACITY,
  SCH_KIND_CONFIGMAP,
  SCH_KIND__COUNT
} sch_kind_id;

typedef struct {
  const char *group, *version, *resource; /* group NULL: the core group */
  /* NULL: every object of the kind; else only those it selects (fieldSelector). */
  const char *field_selector;
  /* A new message (kc_msg_free) from the object, or NULL with the reason in err; ud unused
   * (the informer's handler signature). */
  void *(*decode)(json_t *obj, void *ud, char *err, size_t errlen);
  /* The same from the protobuf wire form, for the kinds that have one (else NULL). */
  void *(*decode_pb)(const uint8_t *data, size_t len, void *ud, char *err, size_t errlen);
  /* Where the kind's objects go in a Kiln__Snapshot: its array and count fields. */
  size_t items_off, count_off;
} sch_kind;

extern const sch_kind sch_kinds[SCH_KIND__COUNT];

struct sch_conf;

/* The field selector kiln-scheduler lists and watches kind k with under conf (NULL: the
 * default configuration): the table's, but for the ConfigMaps the one the deviceshare
 * plugin reads, by its configured name (sch_device_config_name), made in buf. */
const char *sch_kind_field_selector(int k, const struct sch_conf *conf, char *buf, size_t len);

/* Kind k's array and count in snapshot message m. */
static inline void ***sch_kind_items(Kiln__Snapshot *m, int k) {
  return (void ***)(void *)((char *)m + sch_kinds[k].items_off);
}
static inline size_t *sch_kind_count(Kiln__Snapshot *m, int k) {
  return (size_t *)(void *)((char *)m + sch_kinds[k].count_off);
}

#endif
