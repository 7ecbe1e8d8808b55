/* Cron schedules as Volcano's CronJob controller reads them: robfig/cron v3's ParseStandard
 * (five fields, names, ranges, steps, `?`, the @descriptors and @every, an optional TZ= or
 * CRON_TZ= prefix) and its Next, plus the schedule arithmetic of the controller
 * (mostRecentScheduleTime, nextScheduleTime, nextScheduleTimeDuration, which Volcano took from
 * Kubernetes' CronJob controller).
 *
 * Pure: every function takes the time it works from (Unix milliseconds) as an argument, so the
 * tests run on a fake clock. Zones come as the bytes of their tz database files, which the shell
 * reads and passes in (ctl_tzdb): the core reads no file and no environment, and converts
 * between UTC and wall time itself (ctl_tz.h) the way Go's time package does. */
#ifndef CTL_CRON_H
#define CTL_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "no time", Go's zero time.Time where robfig gives up (no match within five years). */
#define CTL_CRON_NEVER INT64_MIN

#define CTL_TZ_MAX 128

typedef struct {
  uint64_t minute, hour, dom, month, dow; /* bit sets; CTL_CRON_STAR marks `*` and `?` */
  int64_t every_ms;                       /* @every: a constant delay (whole seconds); else 0 */
  char tz[CTL_TZ_MAX];                    /* the zone ("" = the process' local zone) */
  const char *tzdata; /* its file (borrowed from the db given to ctl_cron_parse); NULL: UTC */
  size_t tzlen;
} ctl_cron;

#define CTL_CRON_STAR (1ull << 63)

/* The tz database files one decision may need, as the shell read them (ctl_tzdb_read in
 * ctl_tzdb.h): a CronJob names at most two zones (its timeZone and a TZ= in its schedule),
 * and a schedule without a zone runs in the process' zone (Go's time.Local: local). The core
 * reads no file: it is given each zone's bytes (data NULL when no file of that name was found;
 * for local, when the process' zone is UTC). */
#define CTL_TZDB_MAX 2
typedef struct {
  char name[CTL_TZ_MAX];
  char *data; /* owned by whoever filled the db */
  size_t len;
} ctl_tzfile;
typedef struct {
  ctl_tzfile zone[CTL_TZDB_MAX];
  size_t n;
  ctl_tzfile local;
} ctl_tzdb;

/* The zone names of a schedule's TZ=/CRON_TZ= prefix and of time_zone (either may be NULL)
 * whose files the tz database must give: not "", "UTC" or "Local", not a path that leaves
 * the database (see ctl_tz_name_ok), each once. Returns how many were written to names. */
size_t ctl_cron_zones(const char *schedule, const char *time_zone,
                      char names[CTL_TZDB_MAX][CTL_TZ_MAX]);
/* Go's LoadLocation refuses names with a ".." element or a leading slash or backslash. */
bool ctl_tz_name_ok(const char *name);
/* Whether len bytes at data are a zone file (TZif); data may be NULL. */
bool ctl_tzif(const char *data, size_t len);

/* Checks a zone name as Go's time.LoadLocation does: "" and "UTC" are UTC, "Local" the
 * process' zone, any other name must be a TZif file of the tz database (its bytes in db, which
 * may be NULL: no files). 0, or KC_EINVAL with Go's message ("unknown time zone X", "time:
 * invalid location name", "malformed time zone information") in err. */
int ctl_tz_check(const char *name, const ctl_tzdb *db, char *err, size_t errlen);

/* Parses spec into *out as robfig's ParseStandard, with the zone files of db (may be NULL: UTC
 * for the process' zone); *out borrows its zone's file from db, which must outlive its use.
 * 0, or KC_EPARSE with robfig's message in err ("expected exactly 5 fields, found 4: [...]",
 * "end of range (61) above maximum (59): 0-61", "provided bad location Mars/Base: unknown time
 * zone Mars/Base", ...). */
int ctl_cron_parse(const char *spec, const ctl_tzdb *db, ctl_cron *out, char *err, size_t errlen);

/* The first activation strictly after t_ms (whole seconds), or CTL_CRON_NEVER. */
int64_t ctl_cron_next(const ctl_cron *c, int64_t t_ms);

/* The schedule a CronJob runs (Volcano's formatSchedule): the schedule as written when it
 * mentions TZ (*tz_in_schedule set: the timeZone field is then ignored), else "TZ=<zone>
 * <schedule>" when timeZone is set and loads. out gets at most cap-1 bytes; KC_ETOOBIG. */
int ctl_cron_format(const char *schedule, const char *time_zone, const ctl_tzdb *db, char *out,
                    size_t cap, bool *tz_in_schedule);

typedef enum { CTL_MISSED_NONE, CTL_MISSED_FEW, CTL_MISSED_MANY } ctl_missed;

/* What mostRecentScheduleTime needs of a CronJob. */
typedef struct {
  int64_t created_ms;       /* metadata.creationTimestamp */
  int64_t last_schedule_ms; /* status.lastScheduleTime, or CTL_CRON_NEVER */
  int64_t deadline_s;       /* spec.startingDeadlineSeconds, or -1 */
} ctl_cron_times;

/* mostRecentScheduleTime: *earliest, *recent (CTL_CRON_NEVER when nothing is due) and the
 * missed count class. KC_ERANGE (with Volcano's message) for a schedule whose two next times
 * are less than a second apart (a date that never comes, "0 0 31 2 *"). */
int ctl_cron_most_recent(const ctl_cron *c, const ctl_cron_times *t, int64_t now_ms,
                         bool with_deadline, int64_t *earliest, int64_t *recent, ctl_missed *missed,
                         char *err, size_t errlen);

/* nextScheduleTimeDuration: milliseconds from now to the next activation plus 100 ms. */
int64_t ctl_cron_requeue_ms(const ctl_cron *c, const ctl_cron_times *t, int64_t now_ms);

/* Formats t_ms in the zone tz ("" = UTC, as Volcano's LoadLocation("") gives; other zones
 * from db, which may be NULL) as Go's time.RFC3339 ("2026-12-01T10:05:00-05:00", "Z" for a
 * zero offset). 0 or KC_EINVAL. */
int ctl_cron_rfc3339(int64_t t_ms, const char *tz, const ctl_tzdb *db, char *out, size_t cap);

/* Go's time.ParseDuration ("1h30m", "2.5s", "-90ms"), kc_go_duration, truncated to whole
 * milliseconds (a JobFlow's retained duration, and @every). 0 or KC_EPARSE with Go's
 * message. */
int ctl_go_duration(const char *s, int64_t *out_ms, char *err, size_t errlen);

#endif
