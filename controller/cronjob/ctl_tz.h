/* Time zones from the bytes of a tz database file (TZif, RFC 8536), converted the way Go's
 * time package converts them, so that a schedule's wall times land where Volcano's (robfig/cron
 * v3 on Go) do. Pure: the shell reads the file (ctl_tzdb.h) and the core is given its bytes.
 *
 * As Go: version 2+ files are read from their 64-bit block, version 1 files from the 32-bit
 * one; a time after the last transition follows the POSIX TZ rule in the file's footer
 * ("EST5EDT,M3.2.0,M11.1.0"); a time before the first transition takes Go's first zone. */
#ifndef CTL_TZ_H
#define CTL_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One rule of a POSIX TZ footer: when DST starts or ends. */
typedef struct {
  char kind;  /* 'J' (Jn: 1..365, no Feb 29), 'D' (n: 0..365), 'M' (Mm.w.d) */
  int day;    /* day of year, or weekday (0 = Sunday) for 'M' */
  int week;   /* 1..5 (5 = the last) for 'M' */
  int mon;    /* 1..12 for 'M' */
  int32_t at; /* seconds after local midnight (may be negative or past 24h) */
} ctl_tzrule;

/* A loaded zone: pointers into the file's bytes (borrowed: they must outlive the zone). */
typedef struct {
  const unsigned char *tx;    /* transition times, big-endian, width bytes each */
  const unsigned char *idx;   /* the type of each transition */
  const unsigned char *types; /* 6 bytes each: UT offset (int32), isdst, abbreviation index */
  uint32_t ntx, ntypes;       /* ntypes 0: UTC */
  unsigned width;             /* 4 (version 1) or 8 */
  bool rule;                  /* a usable POSIX TZ footer */
  bool rule_dst;              /* the footer has DST (start and end below) */
  int32_t std_off, dst_off;   /* seconds east of UTC */
  ctl_tzrule start, end;
} ctl_tz;

/* UTC. */
void ctl_tz_utc(ctl_tz *z);
/* Loads len bytes at data (borrowed) as Go's LoadLocationFromTZData does. Returns false for
 * data Go refuses ("malformed time zone information"); *z is UTC then. */
bool ctl_tz_load(ctl_tz *z, const char *data, size_t len);

/* The offset (seconds east of UTC) in effect at Unix second t, and the span [*start, *end)
 * the zone holds it over, as Go's Location.lookup (the footer's span is the year around
 * t, which is all time.Date needs). start and end may be NULL. */
int32_t ctl_tz_lookup(const ctl_tz *z, int64_t t, int64_t *start, int64_t *end);

/* A wall time. */
typedef struct {
  int64_t year;
  int mon;  /* 1..12 */
  int mday; /* 1..31 */
  int hour, min, sec;
  int wday;    /* 0 = Sunday */
  int32_t off; /* the offset it was computed with */
} ctl_civil;

/* Unix second t as a wall time in z. */
void ctl_tz_civil(const ctl_tz *z, int64_t t, ctl_civil *out);
/* Go's time.Date: the Unix second of a wall time in z. Out-of-range fields are normalised
 * (month 13 is January next year, day 0 the last of the month before, hour 25 tomorrow 01).
 * A wall time that does not exist (a DST gap) or exists twice (an overlap) resolves as Go's
 * does: Go looks the offset up at the wall time read as UTC and checks it once, so New York's
 * 02:30 on a spring-forward day is 01:30 EST and Berlin's 02:30 is 03:30 CEST (forward for
 * zones east of UTC, back for zones west of it), and an overlap takes the offset in effect
 * at the wall time read as UTC. */
int64_t ctl_tz_date(const ctl_tz *z, int64_t year, int64_t mon, int64_t day, int64_t hour,
                    int64_t min, int64_t sec);

/* Days since 1970-01-01 of a proleptic Gregorian date (mon 1..12, any day), and back. */
int64_t ctl_days_from_civil(int64_t y, int mon, int64_t day);
void ctl_civil_from_days(int64_t days, int64_t *y, int *mon, int *day);

#endif
