/* The CEL subset of Dynamic Resource Allocation's device selectors (resource.k8s.io/v1
 * DeviceClass spec.selectors[].cel.expression and a claim request's selectors), compiled
 * once and evaluated per device. There is no C CEL library; this is the part of CEL that
 * drivers and their DeviceClasses write, with Kubernetes' semantics
 * (k8s.io/dynamic-resource-allocation/cel):
 *
 *   device.driver == "gpu.example.com"
 *   device.attributes["gpu.example.com"].model == "a100" && device.attributes["x.io"].gen >= 3
 *   !device.attributes["d"].shared || device.attributes["d"].index in [0, 1]
 *   device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0
 *   device.attributes["d"].driverVersion.isGreaterThan(semver("1.2.0"))
 *   has(device.attributes["d"].model) ? device.attributes["d"].model.startsWith("a") : false
 *
 * Values: bool, int, string, version (semver) and quantity; literals true, false, null,
 * decimal integers and "..."/'...' strings with the usual escapes. Operators: ! - (on an
 * integer literal) == != < <= > >= in && || ?: and parentheses; list literals. Functions:
 * has(), semver(), isSemver(), quantity(), isQuantity(), size(); methods compareTo,
 * isGreaterThan, isLessThan, major, minor, patch (versions), compareTo, isGreaterThan,
 * isLessThan, asInteger (quantities), startsWith, endsWith, contains (strings).
 *
 * Kubernetes' rules kept: an attribute name without a domain ("model") is in the driver's
 * domain; device.attributes[domain] of an unknown domain is an empty map, and reading a
 * missing name from it is a runtime error ("no such key: model"), which has() tests; &&
 * and || are commutative over errors (false && error is false); values of different types
 * are never equal, and ordering them is an error ("no such overload").
 *
 * Anything else (macros, arithmetic, regular expressions, floats, cel.bind) does not
 * compile: the error names what is not supported, and the caller keeps the pod pending with
 * it. Input is hostile (any user writes a claim): expressions over SCH_CEL_MAX_LEN bytes or
 * nested deeper than SCH_CEL_MAX_DEPTH are refused, evaluation is linear in the expression's
 * size, and nothing here can crash on any input. */
#ifndef SCH_CEL_H
#define SCH_CEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_error.h"

/* Kubernetes' CELSelectorExpressionMaxLength. */
#define SCH_CEL_MAX_LEN   (10 * 1024)
#define SCH_CEL_MAX_DEPTH 100
/* Room for a compile or runtime error message. */
#define SCH_CEL_ERR_MAX   256

/* The kind of one device attribute (resource.k8s.io/v1 DeviceAttribute: exactly one of
 * int, bool, string, version). */
typedef enum {
  SCH_CEL_ATTR_BOOL = 1,
  SCH_CEL_ATTR_INT,
  SCH_CEL_ATTR_STRING,
  SCH_CEL_ATTR_VERSION,
} sch_cel_attr_kind;

typedef struct sch_cel_attr {
  const char *name; /* "domain/id" or "id" (the driver's domain); borrowed */
  sch_cel_attr_kind kind;
  bool b;
  int64_t i;
  const char *s; /* string or version text; borrowed */
} sch_cel_attr;

typedef struct sch_cel_capacity {
  const char *name;  /* as attribute names */
  const char *value; /* a quantity ("80Gi"); borrowed */
} sch_cel_capacity;

/* What a selector sees of a device: all borrowed. */
typedef struct sch_cel_device {
  const char *driver;
  const sch_cel_attr *attrs;
  size_t nattrs;
  const sch_cel_capacity *capacity;
  size_t ncapacity;
} sch_cel_device;

typedef struct sch_cel sch_cel;

/* Compiles expr. Returns 0 and a *new* program, or KC_ENOMEM, or KC_EPARSE with the reason
 * in err ("undeclared reference to 'foo'", "syntax error at 12: ...", "unsupported: ..."). */
KC_NODISCARD int sch_cel_compile(const char *expr, sch_cel **out, char *err, size_t errlen);
void sch_cel_free(sch_cel *c);

/* Evaluates c against dev: 0 and *match, or KC_EINVAL with the runtime error in err ("no
 * such key: model", "no such overload: int < string", "result is int, not bool"). */
KC_NODISCARD int sch_cel_eval(const sch_cel *c, const sch_cel_device *dev, bool *match, char *err,
                              size_t errlen);

/* Semantic versions (semver 2.0, as resource.k8s.io/v1 version attributes): parse and
 * compare (-1, 0, 1; build metadata ignored, a pre-release sorts before its release).
 * Parse returns false for text that is not a version. */
typedef struct sch_semver {
  uint64_t major, minor, patch;
  const char *pre; /* pre-release identifiers, borrowed from the parsed text; NULL none */
  size_t prelen;
} sch_semver;
bool sch_semver_parse(const char *s, size_t len, sch_semver *v);
int sch_semver_cmp(const sch_semver *a, const sch_semver *b);

#endif
