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
