/* Resource arithmetic, Volcano's resource_info.go semantics (see sch_resource.h). */
#include "sch_resource.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Saturating (sch_add_sat, sch_sub_sat in sch_resource.h): amounts come from users (a PodGroup's
 * minResources may say 1e21 bytes), and a sum that wrapped would turn a queue's remaining room
 * negative, or a gang that fits nowhere into one that fits (and signed overflow is undefined).
 * Below the int64 bounds add and sub stay exact inverses, which statements rely on. */
void sch_resource_add(sch_resource *r, const sch_resource *a) {
  r->milli_cpu = sch_add_sat(r->milli_cpu, a->milli_cpu);
  r->memory = sch_add_sat(r->memory, a->memory);
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    r->scalar[i] = sch_add_sat(r->scalar[i], a->scalar[i]);
}

void sch_resource_sub(sch_resource *r, const sch_resource *a) {
  r->milli_cpu = sch_sub_sat(r->milli_cpu, a->milli_cpu);
  r->memory = sch_sub_sat(r->memory, a->memory);
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    r->scalar[i] = sch_sub_sat(r->scalar[i], a->scalar[i]);
}

void sch_resource_set_max(sch_resource *r, const sch_resource *a) {
  if (a->milli_cpu > r->milli_cpu)
    r->milli_cpu = a->milli_cpu;
  if (a->memory > r->memory)
    r->memory = a->memory;
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    if (a->scalar[i] > r->scalar[i])
      r->scalar[i] = a->scalar[i];
}

int64_t sch_resource_scale(int64_t v, double ratio) {
  double x = (double)v * ratio;
  if (x != x)
    return v;
  /* 2^63 is exact as a double; anything at or past it does not convert. */
  if (x >= 9223372036854775808.0)
    return INT64_MAX;
  if (x <= -9223372036854775808.0)
    return INT64_MIN;
  return (int64_t)x;
}

void sch_resource_multi(sch_resource *r, double ratio) {
  r->milli_cpu = sch_resource_scale(r->milli_cpu, ratio);
  r->memory = sch_resource_scale(r->memory, ratio);
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    r->scalar[i] = sch_resource_scale(r->scalar[i], ratio);
}

/* Volcano's lessEqualFunc: l < r, or |l - r| < epsilon. */
static inline bool le(int64_t l, int64_t r, int64_t eps) {
  if (l < r)
    return true;
  return sch_sub_sat(l, r) < eps; /* l >= r: a difference past int64 is no tie */
}

bool sch_resource_less_equal(const sch_resource *l, const sch_resource *r) {
  if (!le(l->milli_cpu, r->milli_cpu, SCH_MIN_MILLI_CPU))
    return false;
  if (!le(l->memory, r->memory, SCH_MIN_MEMORY))
    return false;
  for (int i = 0; i < SCH_MAX_SCALARS; i++) {
    /* A scalar l does not ask for never blocks (Volcano skips l's zero scalars). */
    if (l->scalar[i] <= 0)
      continue;
    if (!le(l->scalar[i], r->scalar[i], SCH_MIN_SCALAR))
      return false;
  }
  return true;
}

bool sch_resource_less(const sch_resource *l, const sch_resource *r) {
  if (!(l->milli_cpu < r->milli_cpu) || !(l->memory < r->memory))
    return false;
  for (int i = 0; i < SCH_MAX_SCALARS; i++) {
    if (l->scalar[i] == 0 && r->scalar[i] == 0)
      continue;
    if (!(l->scalar[i] < r->scalar[i]))
      return false;
  }
  return true;
}

unsigned sch_resource_exceeds_in(const sch_resource *l, const sch_resource *r,
                                 const sch_resource *dims_of) {
  unsigned m = 0;
  if (dims_of->milli_cpu > 0 && !le(l->milli_cpu, r->milli_cpu, SCH_MIN_MILLI_CPU))
    m |= SCH_DIM_CPU;
  if (dims_of->memory > 0 && !le(l->memory, r->memory, SCH_MIN_MEMORY))
    m |= SCH_DIM_MEMORY;
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    if (dims_of->scalar[i] > 0 && !le(l->scalar[i], r->scalar[i], SCH_MIN_SCALAR))
      m |= SCH_DIM_SCALAR(i);
  return m;
}

unsigned sch_resource_insufficient(const sch_resource *req, const sch_resource *avail) {
  return sch_resource_exceeds_in(req, avail, req);
}

bool sch_resource_is_empty(const sch_resource *r) {
  if (r->milli_cpu >= SCH_MIN_MILLI_CPU || r->memory >= SCH_MIN_MEMORY)
    return false;
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    if (r->scalar[i] >= SCH_MIN_SCALAR)
      return false;
  return true;
}

bool sch_resource_is_zero(const sch_resource *r) {
  static const sch_resource zero;
  return memcmp(r, &zero, sizeof(zero)) == 0;
}

bool sch_resource_equal(const sch_resource *a, const sch_resource *b) {
  return memcmp(a, b, sizeof(*a)) == 0;
}

void sch_resource_fit_delta(sch_resource *r, const sch_resource *req) {
  if (req->milli_cpu > 0)
    r->milli_cpu = sch_sub_sat(r->milli_cpu, sch_add_sat(req->milli_cpu, SCH_MIN_MILLI_CPU));
  if (req->memory > 0)
    r->memory = sch_sub_sat(r->memory, sch_add_sat(req->memory, SCH_MIN_MEMORY));
  for (int i = 0; i < SCH_MAX_SCALARS; i++)
    if (req->scalar[i] > 0)
      r->scalar[i] = sch_sub_sat(r->scalar[i], sch_add_sat(req->scalar[i], SCH_MIN_SCALAR));
}

void sch_resource_format(const sch_resource *r, const char *const *scalar_names, char *buf,
                         size_t len) {
  if (len == 0)
    return;
  int n =
      snprintf(buf, len, "cpu %lldm, memory %lld", (long long)r->milli_cpu, (long long)r->memory);
  for (int i = 0; i < SCH_MAX_SCALARS && n >= 0 && (size_t)n < len; i++) {
    if (r->scalar[i] == 0)
      continue;
    const char *name = scalar_names && scalar_names[i] ? scalar_names[i] : "scalar";
    int k = snprintf(buf + n, len - (size_t)n, ", %s %lldm", name, (long long)r->scalar[i]);
    if (k < 0)
      break;
    n += k;
  }
}
