/* A binary heap of indexes ordered by a session comparator (Volcano util.PriorityQueue),
 * shared by the actions. */
#include <stdlib.h>

#include "kc_error.h"
#include "sch_int.h"

int sch__heap_push(sch_session *ssn, sch__heap *h, sch__heap_cmp cmp, int32_t x) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 8;
    int32_t *v = realloc(h->v, cap * sizeof(*v));
    if (!v)
      return KC_ENOMEM;
    h->v = v;
    h->cap = cap;
  }
  size_t i = h->n++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (cmp(ssn, x, h->v[p]) >= 0)
      break;
    h->v[i] = h->v[p];
    i = p;
  }
  h->v[i] = x;
  return 0;
}

int32_t sch__heap_pop(sch_session *ssn, sch__heap *h, sch__heap_cmp cmp) {
  int32_t top = h->v[0];
  int32_t x = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && cmp(ssn, h->v[c + 1], h->v[c]) < 0)
      c++;
    if (cmp(ssn, h->v[c], x) >= 0)
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n)
    h->v[i] = x;
  return top;
}

/* The session's job, queue and task orders over snapshot indexes. */
int sch__job_cmp(sch_session *ssn, int32_t a, int32_t b) {
  return sch_session_job_order(ssn, &ssn->snap->jobs[a], &ssn->snap->jobs[b]);
}
int sch__queue_cmp(sch_session *ssn, int32_t a, int32_t b) {
  return sch_session_queue_order(ssn, &ssn->snap->queues[a], &ssn->snap->queues[b]);
}
int sch__task_cmp(const void *a, const void *b, void *arg) {
  sch_session *ssn = arg;
  return sch_session_task_order(ssn, &ssn->snap->tasks[*(const int32_t *)a],
                                &ssn->snap->tasks[*(const int32_t *)b]);
}
