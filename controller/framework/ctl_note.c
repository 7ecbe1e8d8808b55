/* Events of a plan and string fields (see ctl_note.h). */
#include "ctl_note.h"

#include <stdarg.h>
#include <stdio.h>

void ctl_note_add(ctl_note *v, size_t *n, size_t cap, const char *type, const char *reason,
                  const char *fmt, ...) {
  if (*n >= cap)
    return;
  ctl_note *e = &v[(*n)++];
  snprintf(e->type, sizeof(e->type), "%s", type);
  snprintf(e->reason, sizeof(e->reason), "%s", reason);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof(e->message), fmt, ap);
  va_end(ap);
}

const char *ctl_jstr(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}
