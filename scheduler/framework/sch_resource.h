/* Resource arithmetic with Volcano's semantics (pkg/scheduler/api/resource_info.go).
 *
 * A resource is a fixed-size value: cpu in millicores, memory in bytes and up to
 * SCH_MAX_SCALARS scalar resources (nvidia.com/gpu, ephemeral-storage, hugepages-*) in
 * milli-units. Scalar names are interned per snapshot (sch_snapshot.scalar_names): slot i
 * means the same name in every resource of one snapshot. A zero field means "none", as in
 * a Kubernetes ResourceList. Pod counts are not part of the arithmetic (Volcano keeps them
 * apart as MaxTaskNum); the node and task structures carry them.
 *
 * Comparisons tolerate Volcano's minimum resource: two amounts within 10 millicores,
 * 1 byte or 10 milli-units of a scalar are equal, so rounding never blocks a fit. */
#ifndef SCH_RESOURCE_H
#define SCH_RESOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCH_MAX_SCALARS 8

/* Volcano's minResource epsilons. */
#define SCH_MIN_MILLI_CPU 10
#define SCH_MIN_MEMORY    1
#define SCH_MIN_SCALAR    10

/* Dimension bits used by sch_resource_insufficient: bit 0 cpu, bit 1 memory, bit 2+i
 * scalar slot i. */
#define SCH_DIM_CPU       (1u << 0)
#define SCH_DIM_MEMORY    (1u << 1)
#define SCH_DIM_SCALAR(i) (1u << (2 + (i)))

typedef struct sch_resource {
  int64_t milli_cpu;
  int64_t memory;
  int64_t scalar[SCH_MAX_SCALARS];
} sch_resource;

/* Saturating int64 arithmetic for amounts users write (a node may report 2^63-1 bytes, a pod
 * ask for 1e21): a sum past the bounds stays at the bound instead of being undefined. */
static inline int64_t sch_add_sat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

static inline int64_t sch_sub_sat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r))
    return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}

static inline int64_t sch_mul_sat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}

/* req does not fit into idle + releasing - pipelined by at least eps (Volcano's FutureIdle
 * and minResource), in saturating arithmetic. */
static inline bool sch_short_of(int64_t req, int64_t idle, int64_t releasing, int64_t pipelined,
                                int64_t eps) {
  int64_t fut = sch_sub_sat(sch_add_sat(idle, releasing), pipelined);
  return req > 0 && req > fut && sch_sub_sat(req, fut) >= eps;
}

static inline void sch_resource_clear(sch_resource *r) {
  *r = (sch_resource){0};
}

/* r += a, saturating at the int64 bounds. */
void sch_resource_add(sch_resource *r, const sch_resource *a);
/* r -= a, saturating; exact below the bounds (statements rely on add/sub being inverse). */
void sch_resource_sub(sch_resource *r, const sch_resource *a);
/* r = max(r, a) per dimension (Volcano SetMaxResource). */
void sch_resource_set_max(sch_resource *r, const sch_resource *a);
/* r *= ratio, per dimension, rounded down (Volcano Multi), saturating at the int64 bounds. */
void sch_resource_multi(sch_resource *r, double ratio);
/* One dimension times ratio, rounded down and saturating (a NaN ratio leaves v). */
int64_t sch_resource_scale(int64_t v, double ratio);

/* Volcano LessEqual(r, Zero): every dimension of l is below r or within the epsilon. */
bool sch_resource_less_equal(const sch_resource *l, const sch_resource *r);
/* Volcano Less: every dimension strictly less (with l zero dims compared against r). */
bool sch_resource_less(const sch_resource *l, const sch_resource *r);
/* The dimensions in which req does not fit into avail (SCH_DIM_* bits), 0 when it fits:
 * only the dimensions req asks for (> 0) count, like LessEqualWithResourcesName. */
unsigned sch_resource_insufficient(const sch_resource *req, const sch_resource *avail);
/* The dimensions in which l exceeds r (beyond the epsilon), counting only the dimensions
 * dims_of asks for (> 0): Volcano LessEqualWithDimension(l, r, dims_of) is "== 0". */
unsigned sch_resource_exceeds_in(const sch_resource *l, const sch_resource *r,
                                 const sch_resource *dims_of);
/* Volcano IsEmpty: every dimension below its epsilon. */
bool sch_resource_is_empty(const sch_resource *r);
/* All fields exactly zero. */
bool sch_resource_is_zero(const sch_resource *r);
bool sch_resource_equal(const sch_resource *a, const sch_resource *b);
/* Volcano FitDelta: for each dimension req asks for, r -= req + epsilon; a negative field
 * afterwards means "short by that much". */
void sch_resource_fit_delta(sch_resource *r, const sch_resource *req);

/* Writes "cpu 1500m, memory 2147483648, nvidia.com/gpu 2" (names from the snapshot's
 * scalar table, borrowed) into buf, NUL-terminated and truncated to len. */
void sch_resource_format(const sch_resource *r, const char *const *scalar_names, char *buf,
                         size_t len);

#endif
