/* Fuzz target for the CEL subset of DRA device selectors (sch_cel.c): every input is a
 * claim's or class's expression, hostile; it must compile or be refused with KC_EPARSE, and
 * a program must evaluate against a device to a verdict or KC_EINVAL, never crash, leak or
 * recurse without bound. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "sch_cel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const sch_cel_attr attrs[] = {
      {.name = "model", .kind = SCH_CEL_ATTR_STRING, .s = "a100"},
      {.name = "index", .kind = SCH_CEL_ATTR_INT, .i = 3},
      {.name = "x.io/v", .kind = SCH_CEL_ATTR_VERSION, .s = "1.2.3"},
      {.name = "x.io/bad", .kind = SCH_CEL_ATTR_VERSION, .s = "1.2"},
      {.name = "shared", .kind = SCH_CEL_ATTR_BOOL, .b = true},
  };
  static const sch_cel_capacity caps[] = {{"memory", "80Gi"}, {"x.io/odd", "1.5"}};
  static const sch_cel_device dev = {"gpu.example.com", attrs, 5, caps, 2};
  char *expr = malloc(size + 1);
  if (expr == NULL)
    return 0;
  memcpy(expr, data, size);
  expr[size] = '\0';
  sch_cel *c = NULL;
  char err[SCH_CEL_ERR_MAX];
  int rc = sch_cel_compile(expr, &c, err, sizeof(err));
  if (rc != 0 && (rc != KC_EPARSE && rc != KC_ENOMEM))
    abort();
  if (rc != 0 && (c != NULL || (rc == KC_EPARSE && err[0] == '\0')))
    abort();
  if (rc == 0) {
    bool m = true;
    rc = sch_cel_eval(c, &dev, &m, err, sizeof(err));
    if ((rc != 0 && rc != KC_EINVAL) || (rc != 0 && m) || (rc != 0 && err[0] == '\0'))
      abort();
    sch_cel_free(c);
  }
  free(expr);
  return 0;
}
