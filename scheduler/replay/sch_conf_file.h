/* The scheduler configuration read from a file, for the offline tools (kiln-replay, the
 * sessions bench): the read is theirs, the parse is the core's (sch_conf_parse). */
#ifndef SCH_CONF_FILE_H
#define SCH_CONF_FILE_H

#include <stddef.h>

#include "kc_error.h"
#include "sch_conf.h"

/* Reads and parses the file at path (at most 1 MiB): sch_conf_parse's results, or KC_EIO /
 * KC_ETOOBIG / KC_ENOMEM with the reason in err. */
KC_NODISCARD int sch_conf_read_file(const char *path, sch_conf **out, char *err, size_t errlen);

#endif
