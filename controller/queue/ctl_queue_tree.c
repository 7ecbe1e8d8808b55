/* The queue tree rules that need other queues (Volcano's validateHierarchicalQueue and
 * validateHierarchicalQueueResources), as a pure function of a view; see ctl_queue.h.
 * Unit-tested in tests/unit/test_ctl_queue.c. */
#include <stdio.h>
#include <string.h>

#include "ctl_queue.h"
#include "kc_quantity.h"

static bool is_root(const char *name) {
  return !name || !*name || strcmp(name, CTL_QUEUE_ROOT) == 0;
}

static int64_t amount(const ctl_qres *r, const char *name) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->r[i].name, name) == 0)
      return r->r[i].milli;
  return 0;
}

/* Volcano's formatResourceWithType: cpu as a milli quantity, memory in binary units, any
 * other resource as its milli amount with two decimals. */
static void format_amount(const char *name, int64_t milli, char *buf, size_t len) {
  kc_quantity q;
  if (strcmp(name, "cpu") == 0)
    kc_quantity_from_milli(&q, milli, KC_QFMT_DECIMAL_SI);
  else if (strcmp(name, "memory") == 0)
    kc_quantity_from_value(&q, milli / 1000, KC_QFMT_BINARY_SI);
  else {
    snprintf(buf, len, "%.2f", (double)milli);
    return;
  }
  if (kc_quantity_format(&q, buf, len) < 0)
    snprintf(buf, len, "%lld", (long long)milli);
}

/* Volcano's Resource.String(): "cpu 4000.00, memory 0.00[, name amount...]" (cpu in milli,
 * memory in bytes, other resources in milli). */
static void format_resource(const ctl_qres *r, char *buf, size_t len) {
  int off = snprintf(buf, len, "cpu %.2f, memory %.2f", (double)amount(r, "cpu"),
                     (double)(amount(r, "memory") / 1000));
  for (size_t i = 0; i < r->n && off > 0 && (size_t)off < len; i++) {
    const char *n = r->r[i].name;
    if (strcmp(n, "cpu") != 0 && strcmp(n, "memory") != 0 && strcmp(n, "pods") != 0)
      off += snprintf(buf + off, len - (size_t)off, ", %s %.2f", n, (double)r->r[i].milli);
  }
}

static void add_res(ctl_qres *sum, const ctl_qres *r) {
  for (size_t i = 0; i < r->n; i++) {
    size_t k = 0;
    while (k < sum->n && strcmp(sum->r[k].name, r->r[i].name) != 0)
      k++;
    if (k == sum->n) {
      if (sum->n == CTL_QRES_MAX)
        continue;
      sum->r[sum->n].name = r->r[i].name;
      sum->r[sum->n++].milli = 0;
    }
    sum->r[k].milli += r->r[i].milli;
  }
}

/* Volcano LessPartly: the limit is below the total in some dimension. */
static bool less_partly(const ctl_qres *limit, const ctl_qres *total) {
  for (size_t i = 0; i < total->n; i++)
    if (amount(limit, total->r[i].name) < total->r[i].milli)
      return true;
  return false;
}

/* A capability above the nearest ancestor's that names the same resource. */
static bool capability_problem(const ctl_queue_tree_view *v, char *msg, size_t len) {
  const ctl_qres *c = &v->self->capability;
  for (size_t i = 0; i < c->n; i++) {
    if (c->r[i].milli <= 0)
      continue;
    for (size_t a = 0; a < v->nancestors; a++) {
      int64_t up = amount(&v->ancestors[a].capability, c->r[i].name);
      if (up <= 0)
        continue;
      if (c->r[i].milli > up) {
        char mine[64], theirs[64];
        format_amount(c->r[i].name, c->r[i].milli, mine, sizeof(mine));
        format_amount(c->r[i].name, up, theirs, sizeof(theirs));
        snprintf(msg, len, "queue %s capability[%s]=%s exceeds its ancestor's capability=%s",
                 v->self->name, c->r[i].name, mine, theirs);
        return true;
      }
      break;
    }
  }
  return false;
}

/* The parent's children's guarantee, then deserved, summing above the parent's. */
static bool siblings_problem(const ctl_queue_tree_view *v, char *msg, size_t len) {
  const ctl_qnode *parent = &v->ancestors[0];
  for (int which = 0; which < 2; which++) {
    ctl_qres total = {0};
    for (size_t i = 0; i < v->nsiblings; i++)
      add_res(&total, which ? &v->siblings[i].deserved : &v->siblings[i].guarantee);
    add_res(&total, which ? &v->self->deserved : &v->self->guarantee);
    const ctl_qres *limit = which ? &parent->deserved : &parent->guarantee;
    if (!less_partly(limit, &total))
      continue;
    char t[256], l[256];
    format_resource(&total, t, sizeof(t));
    format_resource(limit, l, sizeof(l));
    const char *what = which ? "deserved" : "guarantee";
    snprintf(msg, len,
             "parent queue %s validation failed: sum of children's %s (%s) exceeds parent's %s "
             "limit (%s)",
             parent->name, what, t, what, l);
    return true;
  }
  return false;
}

bool ctl_queue_tree_problem(const ctl_queue_tree_view *v, char *msg, size_t len) {
  if (is_root(v->parent) || strcmp(v->self->name, CTL_QUEUE_ROOT) == 0)
    return false;
  if (v->parent_missing) {
    snprintf(msg, len,
             "failed to get parent queue of queue %s: queues.scheduling.volcano.sh \"%s\" not "
             "found",
             v->self->name, v->parent);
    return true;
  }
  if (v->cycle) {
    snprintf(msg, len, "cycle detected in queue hierarchy for queue %s", v->self->name);
    return true;
  }
  return v->nancestors > 0 && (capability_problem(v, msg, len) || siblings_problem(v, msg, len));
}
