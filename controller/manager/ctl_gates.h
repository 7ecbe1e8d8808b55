/* --controllers, as Volcano's cmd/controller-manager reads it: pure functions over the
 * option's entries (ctl_gates.c), apart from the controller table so that the core can use
 * them without the shell's headers. */
#ifndef CTL_GATES_H
#define CTL_GATES_H

#include <stdbool.h>
#include <stddef.h>
#include "kc_error.h"

/* Volcano's names that this build does not run (yet): accepted by --controllers and
 * reported, never an error. NULL-terminated. */
extern const char *const ctl_controllers_later[];

/* Volcano's checkControllers: '*' may only be combined with '-name'/'+name' entries, and a
 * name may not appear twice (as name, +name or -name). 0, or KC_EINVAL with the message in
 * err. Unknown names are not errors (Volcano ignores them); see ctl_controllers_unknown. */
KC_NODISCARD int ctl_controllers_check(const char *const *v, size_t n, char *err, size_t cap);
/* Volcano's isControllerEnabled: the first entry naming the controller decides (name or
 * +name: on, -name: off); otherwise it runs only when '*' is listed. An empty list enables
 * everything. */
bool ctl_controller_enabled(const char *name, const char *const *v, size_t n);
/* The first entry of v (without its +/- sign) that names neither a controller of known[]
 * (NULL-terminated) nor one of ctl_controllers_later, or NULL. */
const char *ctl_controllers_unknown(const char *const *v, size_t n, const char *const *known);

#endif
