/* Statements (Volcano framework/statement.go): a journal of allocate, pipeline and evict
 * operations on the session, committed or discarded as a unit. Discard undoes the
 * operations in reverse order, so node accounting and job counters return exactly. */
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "sch_int.h"

/* OP_NOMINATE is a pipeline that followed evictions: its commit writes the node into the
 * pod's status.nominatedNodeName (Volcano's Pipeline with evictionOccurred). */
typedef enum { OP_ALLOCATE, OP_PIPELINE, OP_NOMINATE, OP_EVICT } op_kind;

typedef struct op {
  op_kind kind;
  int32_t task;
  sch_task_status prev_status; /* to restore on discard */
  int32_t prev_node;
  char *reason; /* evict */
} op;

struct sch_statement {
  sch_session *ssn;
  op *ops;
  size_t n, cap;
};

sch_statement *sch_statement_new(sch_session *ssn) {
  sch_statement *st = calloc(1, sizeof(*st));
  if (st)
    st->ssn = ssn;
  return st;
}

size_t sch_statement_len(const sch_statement *st) {
  return st->n;
}

static int push(sch_statement *st, op o) {
  if (st->n == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 16;
    op *v = realloc(st->ops, cap * sizeof(*v));
    if (!v)
      return KC_ENOMEM;
    st->ops = v;
    st->cap = cap;
  }
  st->ops[st->n++] = o;
  return 0;
}

static int place(sch_statement *st, int32_t ti, int32_t ni, sch_task_status to, op_kind kind) {
  sch_snapshot *snap = st->ssn->snap;
  if (ti < 0 || ti >= snap->ntasks || ni < 0 || ni >= snap->nnodes)
    return KC_EINVAL;
  sch_task *t = &snap->tasks[ti];
  if (t->status != SCH_TASK_PENDING || t->node >= 0)
    return KC_EINVAL;
  op o = {kind, ti, t->status, t->node, NULL};
  int rc = push(st, o);
  if (rc < 0)
    return rc;
  sch_job_set_status(snap, ti, to);
  sch__node_add_task(snap, ti, ni);
  sch__fire_allocate(st->ssn, t);
  return 0;
}

int sch_statement_allocate(sch_statement *st, int32_t task, int32_t node) {
  return place(st, task, node, SCH_TASK_ALLOCATED, OP_ALLOCATE);
}

int sch_statement_pipeline(sch_statement *st, int32_t task, int32_t node) {
  return place(st, task, node, SCH_TASK_PIPELINED, OP_PIPELINE);
}

int sch_statement_pipeline_nominate(sch_statement *st, int32_t task, int32_t node) {
  return place(st, task, node, SCH_TASK_PIPELINED, OP_NOMINATE);
}

int sch_statement_evict(sch_statement *st, int32_t ti, const char *reason) {
  sch_snapshot *snap = st->ssn->snap;
  if (ti < 0 || ti >= snap->ntasks)
    return KC_EINVAL;
  sch_task *t = &snap->tasks[ti];
  if (t->node < 0 || t->status == SCH_TASK_RELEASING || t->status == SCH_TASK_PIPELINED)
    return KC_EINVAL;
  char *r = strdup(reason ? reason : "");
  if (!r)
    return KC_ENOMEM;
  op o = {OP_EVICT, ti, t->status, t->node, r};
  int rc = push(st, o);
  if (rc < 0) {
    free(r);
    return rc;
  }
  /* Node accounting depends on the status: take the task off, change, put it back. */
  int32_t ni = t->node;
  sch__node_remove_task(snap, ti);
  sch_job_set_status(snap, ti, SCH_TASK_RELEASING);
  sch__node_add_task(snap, ti, ni);
  sch__fire_deallocate(st->ssn, t);
  return 0;
}

static void undo(sch_statement *st, op *o) {
  sch_snapshot *snap = st->ssn->snap;
  sch_task *t = &snap->tasks[o->task];
  switch (o->kind) {
  case OP_ALLOCATE:
  case OP_PIPELINE:
  case OP_NOMINATE:
    sch__node_remove_task(snap, o->task);
    sch_job_set_status(snap, o->task, o->prev_status);
    sch__fire_deallocate(st->ssn, t);
    break;
  case OP_EVICT:
    sch__node_remove_task(snap, o->task);
    sch_job_set_status(snap, o->task, o->prev_status);
    sch__node_add_task(snap, o->task, o->prev_node);
    sch__fire_allocate(st->ssn, t);
    break;
  }
}

static void clear(sch_statement *st) {
  for (size_t i = 0; i < st->n; i++)
    free(st->ops[i].reason);
  st->n = 0;
}

void sch__statement_keep(sch_statement *st) {
  clear(st);
}

void sch_statement_discard(sch_statement *st) {
  for (size_t i = st->n; i-- > 0;)
    undo(st, &st->ops[i]);
  clear(st);
}

int sch_statement_commit(sch_statement *st) {
  sch_snapshot *snap = st->ssn->snap;
  int rc = 0;
  for (size_t i = 0; i < st->n; i++) {
    op *o = &st->ops[i];
    sch_task *t = &snap->tasks[o->task];
    switch (o->kind) {
    case OP_ALLOCATE:
      /* Volcano: the cache binds it; in the session it is Binding from now on. */
      rc = sch__result_bind(st->ssn, o->task, t->node);
      if (rc < 0)
        goto fail;
      sch_job_set_status(snap, o->task, SCH_TASK_BINDING);
      break;
    case OP_PIPELINE:
      break;
    case OP_NOMINATE:
      rc = sch__result_nominate(st->ssn, o->task, t->node);
      if (rc < 0)
        goto fail;
      break;
    case OP_EVICT:
      rc = sch__result_evict(st->ssn, o->task, o->reason);
      if (rc < 0)
        goto fail;
      break;
    }
  }
  clear(st);
  return 0;
fail:
  /* Out of memory half-way: undo what has no output yet so the session stays exact. */
  for (size_t k = st->n; k-- > 0;) {
    op *o = &st->ops[k];
    if (o->kind == OP_ALLOCATE && snap->tasks[o->task].status == SCH_TASK_BINDING)
      continue; /* already bound in the output */
    if (o->kind == OP_EVICT) {
      bool out = false;
      for (size_t e = 0; e < st->ssn->res->nevicts; e++)
        if (st->ssn->res->evicts[e].task == o->task)
          out = true;
      if (out)
        continue;
    }
    undo(st, o);
  }
  clear(st);
  return rc;
}

void sch_statement_free(sch_statement *st) {
  if (!st)
    return;
  sch_statement_discard(st);
  free(st->ops);
  free(st);
}
