/* --controllers, as Volcano's cmd/controller-manager reads it (options.checkControllers and
 * app.isControllerEnabled). Pure: no I/O, unit-tested in tests/unit/test_ctl_gates.c. */
#include <stdio.h>
#include <string.h>

#include "ctl_gates.h"
#include "kc_error.h"

/* Volcano controllers that this build does not run: a Deployment written for Volcano may
 * name them. A controller that lands moves from here to the table in ctl_controllers.c. */
const char *const ctl_controllers_later[] = {"hyperjob-controller", "sharding-controller", NULL};

static const char *bare(const char *e) {
  return (e[0] == '-' || e[0] == '+') ? e + 1 : e;
}

int ctl_controllers_check(const char *const *v, size_t n, char *err, size_t cap) {
  for (size_t i = 0; i < n; i++) {
    const char *e = v[i];
    if (strcmp(e, "*") == 0) {
      /* Volcano refuses '*' next to plain names (they would mean nothing): only the
       * explicit +name/-name exceptions may follow it. */
      for (size_t j = 0; j < n; j++)
        if (j != i && v[j][0] != '-' && v[j][0] != '+') {
          snprintf(err, cap, "wildcard '*' cannot be combined with other input");
          return KC_EINVAL;
        }
      continue;
    }
    if (!*bare(e)) {
      snprintf(err, cap, "controllers option '%s' names no controller", e);
      return KC_EINVAL;
    }
    for (size_t j = 0; j < i; j++)
      if (strcmp(v[j], "*") != 0 && strcmp(bare(v[j]), bare(e)) == 0) {
        snprintf(err, cap, "controllers option %s cannot have both '-' and '+' prefixes", e);
        return KC_EINVAL;
      }
  }
  return 0;
}

bool ctl_controller_enabled(const char *name, const char *const *v, size_t n) {
  if (n == 0)
    return true;
  bool star = false;
  for (size_t i = 0; i < n; i++) {
    const char *e = v[i];
    if (strcmp(e, "*") == 0) {
      star = true;
      continue;
    }
    if (strcmp(bare(e), name) == 0)
      return e[0] != '-';
  }
  return star;
}

static bool in_list(const char *name, const char *const *list) {
  for (size_t i = 0; list && list[i]; i++)
    if (strcmp(list[i], name) == 0)
      return true;
  return false;
}

const char *ctl_controllers_unknown(const char *const *v, size_t n, const char *const *known) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i], "*") == 0)
      continue;
    const char *b = bare(v[i]);
    if (!in_list(b, known) && !in_list(b, ctl_controllers_later))
      return b;
  }
  return NULL;
}
