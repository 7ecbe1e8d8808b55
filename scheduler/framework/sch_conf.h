/* The scheduler configuration file (Volcano pkg/scheduler/conf, util.go): YAML with
 * `actions: "enqueue, allocate, backfill"`, `tiers` of `plugins` with their enableXxx
 * switches and `arguments`, and per-action `configurations`. */
#ifndef SCH_CONF_H
#define SCH_CONF_H

#include <stddef.h>

#include "sch_framework.h"
#include "kc_error.h"

/* Volcano's built-in default configuration text (plugins not in the registry are left
 * out of the default, so that it always loads). */
extern const char sch_conf_default_yaml[];

/* Parses len bytes of YAML. Returns 0 and a *new* configuration, or KC_EPARSE (malformed
 * YAML or a wrong shape) / KC_ENOENT (an action Volcano does not have either) / KC_EINVAL (a
 * bad value) with a message naming the culprit in err (may be NULL). As in Volcano, a plugin
 * kiln-scheduler does not have is skipped and the rest applies (conf->skipped_plugins), and
 * an argument no plugin reads changes nothing (conf->ignored_args); each is logged once. */
KC_NODISCARD int sch_conf_parse(const char *yaml, size_t len, sch_conf **out, char *err,
                                size_t errlen);
/* A changed file: parses len bytes of YAML and, when they load, frees *cur and stores the
 * *new* configuration there. When they do not, returns sch_conf_parse's error and message
 * and leaves *cur (the configuration in force, or NULL) untouched. */
KC_NODISCARD int sch_conf_reload(sch_conf **cur, const char *yaml, size_t len, char *err,
                                 size_t errlen);
/* The default configuration as a *new* sch_conf. */
KC_NODISCARD int sch_conf_default(sch_conf **out);
void sch_conf_free(sch_conf *conf);

#endif
