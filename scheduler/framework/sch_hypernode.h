/* The HyperNode tree of a snapshot (Volcano pkg/scheduler/api/hyper_node_info.go and the
 * session's HyperNodes, HyperNodesSetByTier, RealNodesSet, HyperNodeTierNameMap).
 *
 * Each topology.volcano.sh HyperNode of the snapshot message becomes a vertex; its members of
 * type Node are resolved to snapshot node indexes (exactMatch by name, regexMatch on node
 * names, labelMatch on node labels; an empty labelMatch selects nothing, as Volcano's
 * GetMembers), its members of type HyperNode (exactMatch only, as Volcano) become its
 * children. Every vertex knows every node beneath it (Volcano's RealNodesSet). Above the
 * vertices without a parent sits the virtual cluster top, "<cluster-top-hypernode>", whose
 * tier is the highest real tier + 1 (1 when there is none) and which holds every node.
 *
 * A HyperNode named as a member by two parents, or a cycle, makes the tree not ready (Volcano:
 * the build fails and HyperNodesReadyToSchedule is false): jobs with a network topology then
 * wait, with the reason in error[].
 *
 * Regular expressions are POSIX extended ones (regcomp), unanchored as Go's MatchString; the
 * patterns HyperNodes use (node-[0-9]+, ^rack1-.*) read the same in both. */
#ifndef SCH_HYPERNODE_H
#define SCH_HYPERNODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_error.h"
#include "kc_strmap.h"
#include "volcano.pb-c.h"

struct sch_snapshot;

/* Volcano framework.ClusterTopHyperNode. */
#define SCH_HN_CLUSTER_TOP "<cluster-top-hypernode>"

typedef struct sch_hypernode {
  const char *name;           /* borrowed from the message (static for the top) */
  const Kiln__HyperNode *obj; /* borrowed; NULL for the cluster top */
  int32_t tier;
  const char *tier_name; /* borrowed; NULL when the HyperNode has none */
  int32_t parent;        /* vertex index; the top's is -1 */
  int32_t depth;         /* the top's is 0 */
  int32_t *children;     /* vertex indexes, ascending */
  int32_t nchildren;
  int32_t *nodes; /* every node beneath it (snapshot node indexes), ascending */
  int32_t nnodes;
} sch_hypernode;

typedef struct sch_hntree {
  sch_hypernode *v; /* sorted by name; the cluster top last */
  int32_t n;        /* vertices, the top included */
  int32_t top;
  int32_t *tiers; /* the distinct tiers of the real HyperNodes, ascending (HyperNodesTiers) */
  int32_t ntiers;
  /* Per snapshot node: the lowest-tier HyperNode holding it (Volcano FindHyperNodeForNode),
   * the first by name on a tie; the top when no HyperNode holds it. */
  int32_t *node_hn;
  int32_t nnodes;
  bool ready;
  char error[256];
  kc_strmap index; /* name -> vertex + 1 */
} sch_hntree;

/* Builds the tree of hns[0..n) (borrowed: they must outlive the tree) over the nodes of snap.
 * 0 and a *new* tree, or KC_ENOMEM. An inconsistent topology is not an error: the tree comes
 * back with ready false. */
KC_NODISCARD int sch_hntree_new(const Kiln__HyperNode *const *hns, size_t n,
                                const struct sch_snapshot *snap, sch_hntree **out);
void sch_hntree_free(sch_hntree *t);

/* The vertex of a HyperNode name (the top's included), or -1. */
int32_t sch_hntree_find(const sch_hntree *t, const char *name);
/* Lowest common ancestor of two vertices; a negative one stands for "none yet" and gives
 * the other (Volcano GetLCAHyperNode with an empty name). */
int32_t sch_hntree_lca(const sch_hntree *t, int32_t a, int32_t b);
/* Whether node (a snapshot node index) is beneath vertex v. */
bool sch_hntree_has_node(const sch_hntree *t, int32_t v, int32_t node);
/* The tier a tierName stands for (Volcano HyperNodeTierNameMap), or -1 when no HyperNode has
 * that tierName. */
int32_t sch_hntree_tier_of_name(const sch_hntree *t, const char *tier_name);
/* The highest ancestor of v (v included) whose tier is at most max_tier, or -1 when v's own
 * tier is above it (Volcano getHighestAllowedHyperNode). */
int32_t sch_hntree_highest_allowed(const sch_hntree *t, int32_t v, int32_t max_tier);

#endif
