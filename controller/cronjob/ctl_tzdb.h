/* The tz database files a CronJob names, read for the core (ctl_cron.h's ctl_tzdb): the read
 * is the shell's, the decision whether a zone exists the core's. */
#ifndef CTL_TZDB_H
#define CTL_TZDB_H

#include <jansson.h>

#include "ctl_cron.h"
#include "kc_error.h"

/* Fills db with the zone files that schedule and time_zone (either may be NULL) name
 * (ctl_cron_zones): each looked up as Go's LoadLocation does, under $ZONEINFO, then the
 * system's zoneinfo directories; a name without a readable file gets data NULL. Also the
 * process' zone (db->local), as Go's time.Local is found ($TZ, else /etc/localtime). 0 or
 * KC_ENOMEM (db is empty then). Free with ctl_tzdb_free. */
KC_NODISCARD int ctl_tzdb_read(ctl_tzdb *db, const char *schedule, const char *time_zone);
/* The same for a CronJob object (borrowed): its spec.schedule and spec.timeZone. */
KC_NODISCARD int ctl_tzdb_read_cronjob(ctl_tzdb *db, const json_t *cj);
void ctl_tzdb_free(ctl_tzdb *db);

#endif
