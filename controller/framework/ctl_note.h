/* What the small controllers' cores (CronJob, JobFlow) share: the events a plan carries and the
 * lookup of a string field in the objects they read. */
#ifndef CTL_NOTE_H
#define CTL_NOTE_H

#include <jansson.h>
#include <stddef.h>

/* An event a core decided on; the shell records it on the object synced. */
typedef struct {
  char type[8]; /* Normal, Warning */
  char reason[40];
  char message[600];
} ctl_note;

/* Appends one to v (n of cap used); ignored when full (the plan keeps its first cap). */
void ctl_note_add(ctl_note *v, size_t *n, size_t cap, const char *type, const char *reason,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* o[key] when it is a string (borrowed), else "". o may be NULL. */
const char *ctl_jstr(const json_t *o, const char *key);

#endif
