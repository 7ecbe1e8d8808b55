/* The node search shared by the allocate and backfill actions: the feasible nodes of a task,
 * resuming where the last scan stopped, with kube-scheduler's aggregated message when there
 * are none, and the best of them by the session's node order. Second tier (sch__). */
#ifndef SCH_SEARCH_H
#define SCH_SEARCH_H

#include "sch_int.h"
#include "kc_error.h"

typedef struct sch__search {
  sch_session *ssn;
  int32_t *feasible;
  size_t nfeasible;
  double *scores;
  int32_t *hist; /* per reason id */
  size_t cap_hist;
  int32_t *touched;
  size_t ntouched, cap_touched;
  int32_t insufficient[2 + SCH_MAX_SCALARS]; /* reason ids, -1 until interned */
} sch__search;

/* Sets up s over ssn (borrowed). 0 or KC_ENOMEM; sch__search_close is due either way. */
KC_NODISCARD int sch__search_init(sch__search *s, sch_session *ssn);
void sch__search_close(sch__search *s);
/* Finds feasible nodes for t into s->feasible, resuming where the last scan stopped; with
 * check_resources false only the predicates count. With none, returns the id of the
 * aggregated reason; otherwise -1; KC_ENOMEM (< -1) on failure. */
int32_t sch__find_nodes(sch__search *s, const sch_task *t, bool check_resources);
/* sch__find_nodes for task t of job j, keeping the reason when no node fits: on t (t->why) and,
 * the first time, on j (fit_message). 1 when nodes were found, 0 when none, or KC_ENOMEM. */
KC_NODISCARD int sch__find_fit(sch__search *s, sch_job *j, sch_task *t, bool check_resources);
/* The highest-scoring feasible node (the first of equals); *score gets its score and
 * *scored is true when the node order callbacks ran. */
int32_t sch__best_node_scored(sch__search *s, const sch_task *t, double *score, bool *scored);
int32_t sch__best_node(sch__search *s, const sch_task *t);

/* The allocate action's task loop (sch_action_allocate.c): places tasks[0..n) of j (sorted
 * here by the task order) through st, in the session's node list; stops at the first task
 * that fits nowhere (its reason recorded), when sj (NULL: the job) is ready, or, for the job,
 * when it became ready with tasks left (*again). 0 or a negative KC_E*. */
KC_NODISCARD int sch__place_tasks(sch_session *ssn, sch__search *s, int32_t qi, sch_job *j,
                                  int32_t *tasks, size_t n, sch_statement *st, const sch_subjob *sj,
                                  bool *again);
/* The tasks among tasks[0..n) allocate may place (pending, not best-effort, not gated) into
 * out; their count. */
size_t sch__placeable(const sch_snapshot *snap, const int32_t *tasks, int32_t n, int32_t *out);

/* The HyperNode path (sch_allocate_topo.c, Volcano allocate's allocateForJob): whether the
 * job takes it (a networkTopology with a tier, or sub-groups), and the placement of one job
 * inside the lowest-tier HyperNode that holds it. */
bool sch__job_needs_hypernode(const sch_snapshot *snap, const sch_job *j);
KC_NODISCARD int sch__allocate_hypernode(sch_session *ssn, sch__search *s, int32_t qi, int32_t ji,
                                         bool *again);

#endif
