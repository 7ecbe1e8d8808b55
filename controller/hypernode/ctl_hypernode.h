/* The hyperNode-controller's decisions (Volcano pkg/controllers/hypernode and its label
 * discoverer, discovery/label): the discovery configuration read from
 * volcano-controller-configmap, the HyperNodes that node labels describe, the writes that
 * bring the cluster's label-made HyperNodes to them, and status.nodeCount. Pure functions of
 * JSON objects (borrowed unless said otherwise); the shell is ctl_hypernode_shell.c. */
#ifndef CTL_HYPERNODE_H
#define CTL_HYPERNODE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kc_error.h"

/* The label every discovered HyperNode carries, valued with its source ("label"). */
#define CTL_HN_SOURCE_LABEL  "volcano.sh/network-topology-source"
#define CTL_HN_SOURCE        "label"
/* The key of the ConfigMap's data that holds the configuration. */
#define CTL_HN_CONFIG_KEY    "volcano-controller.conf"
/* Volcano's bound on a topology type's name. */
#define CTL_HN_TYPE_NAME_MAX 20

/* One topology type of the label source: its name and its node label keys, tier 1 first (the
 * configuration lists them top-down and ends with the node's own label, which is dropped). */
typedef struct {
  char *name;
  char **keys;
  size_t nkeys;
} ctl_hn_type;

typedef struct {
  bool label;         /* a `source: label` entry is enabled */
  ctl_hn_type *types; /* in the order of the file */
  size_t ntypes;
  char **others; /* other enabled sources (ufm, roce): not built in Kiln */
  size_t nothers;
  char **warnings; /* what Volcano logs and skips (a type too long, duplicate labels) */
  size_t nwarnings;
} ctl_hn_conf;

/* Parses the text of volcano-controller.conf (Volcano's NetworkTopologyConfig, YAML). *out is
 * new (free with ctl_hn_conf_free). 0; KC_EINVAL with err when it is not YAML or not shaped as
 * Volcano's (Volcano then runs with no discovery); KC_ENOMEM. */
KC_NODISCARD int ctl_hn_conf_parse(const char *text, size_t len, ctl_hn_conf **out, char *err,
                                   size_t errlen);
void ctl_hn_conf_free(ctl_hn_conf *c);

/* Volcano's cleanString: letters lowered, digits, '.' and '-' kept, anything else '-'. buf
 * gets at most cap-1 bytes. */
void ctl_hn_clean(const char *s, char *buf, size_t cap);

/* Whether the topology labels of the configuration differ between two Node objects (either
 * may be NULL: an added or deleted node, which matters when it has any of them). */
bool ctl_hn_node_changed(const ctl_hn_conf *c, const json_t *old_node, const json_t *new_node);

/* The HyperNodes the labels of nodes (an array of Node objects; metadata.name and
 * metadata.labels are read) describe, as Volcano's label discoverer builds them: per type, a
 * node with the tier-1 label is a member of the tier-1 HyperNode of that label's value, which
 * is a member of the tier-2 HyperNode of the tier-2 label's value, and so on up to the first
 * label the node lacks. A HyperNode is named after an existing one (existing: array of every
 * HyperNode object) that carries the same label and value from this source and the name
 * prefix hypernode-<type>-tier<N>, else hypernode-<type>-tier<N>-<5 characters>, the suffix a
 * hash of the label and value (Volcano's is random: a hash gives the same name again after a
 * restart, and to a second pass that runs before the watch shows the first one's creates).
 * Returns a new array of HyperNode objects (labels: the source and the level's label; spec:
 * tier and members by exactMatch, sorted), tier ascending then by name; NULL without memory. */
json_t *ctl_hn_discover(const ctl_hn_conf *c, const json_t *nodes, const json_t *existing);

typedef enum {
  CTL_HN_CREATE, /* obj: the HyperNode to create */
  CTL_HN_UPDATE, /* obj: a JSON merge patch (its labels and spec) */
  CTL_HN_DELETE, /* obj: NULL */
} ctl_hn_op;

typedef struct {
  ctl_hn_op op;
  char *name;
  json_t *obj;
} ctl_hn_action;

/* Volcano's reconcileTopology: desired (from ctl_hn_discover) against existing (every
 * HyperNode): a desired HyperNode that does not exist is created; one that exists with a
 * different tier, members or labels is updated; one of this source that is no longer desired
 * is deleted. Creates and updates come first, tier ascending; deletes last, tier descending.
 * *out is new (ctl_hn_actions_free). 0 or KC_ENOMEM. */
KC_NODISCARD int ctl_hn_reconcile(const json_t *desired, const json_t *existing,
                                  ctl_hn_action **out, size_t *n);
void ctl_hn_actions_free(ctl_hn_action *a, size_t n);

/* Volcano's syncHyperNodeStatus: status.nodeCount is the number of spec.members. True when
 * hn's status differs from it, with the value in *count. */
bool ctl_hn_count_stale(const json_t *hn, int64_t *count);

#endif
