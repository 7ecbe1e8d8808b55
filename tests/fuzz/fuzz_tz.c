/* Fuzz target for the zone file reader (controller/cronjob/ctl_tz.c): the bytes of a file
 * under the zone directories or $ZONEINFO, which the CronJob shell reads for a name a user
 * wrote. Any input must load as a zone or be refused (and then act as UTC), and a loaded zone
 * must convert any instant without reading out of its bytes: the wall time it gives is a real
 * calendar time at the offset the lookup gave, inside the span the lookup gave. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_at(const ctl_tz *z, int64_t t) {
  int64_t start, end;
  int32_t off = ctl_tz_lookup(z, t, &start, &end);
  if (start > t || end < start)
    abort(); /* the span starts at or before the instant (Go's footer spans end with the
              * year's 365th day, so a leap year's last day may lie past the end) */
  ctl_civil c;
  ctl_tz_civil(z, t, &c);
  if (c.off != off || c.mon < 1 || c.mon > 12 || c.mday < 1 || c.mday > 31 || c.hour > 23 ||
      c.min > 59 || c.sec > 59 || c.wday < 0 || c.wday > 6)
    abort();
  (void)ctl_tz_date(z, c.year, c.mon, c.mday, c.hour, c.min, c.sec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16)
    return 0;
  /* A copy of exactly size bytes, so that a read past the end is seen by the sanitizer. */
  char *buf = malloc(size ? size : 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  ctl_tz z;
  if (!ctl_tz_load(&z, buf, size) && ctl_tz_lookup(&z, 0, NULL, NULL) != 0)
    abort(); /* a refused file is UTC */
  /* Instants from the year -10000 to 9999 (a cron schedule's are in this century). */
  static const int64_t probes[] = {-377705116800, -5364662400, -1,         0,           1000000000,
                                   1796137200,    2532528000,  4108690800, 253402300799};
  for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
    check_at(&z, probes[i]);
  free(buf);
  return 0;
}
