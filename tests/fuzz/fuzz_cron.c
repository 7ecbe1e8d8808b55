/* Fuzz target for the cron schedule parser (CronJob spec.schedule comes from any user): any
 * input must be refused cleanly or parse to a schedule whose next activations strictly
 * increase, land on whole seconds and match what was asked for. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cron.h"
#include "ctl_tzdb.h"
#include "kc_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256)
    return 0;
  char spec[257];
  memcpy(spec, data, size);
  spec[size] = '\0';
  ctl_cron c;
  char err[256];
  ctl_tzdb db;
  if (ctl_tzdb_read(&db, spec, NULL) != 0)
    return 0;
  int rc = ctl_cron_parse(spec, &db, &c, err, sizeof(err));
  if (rc) {
    ctl_tzdb_free(&db);
    if (rc != KC_EPARSE || !err[0])
      abort();
    return 0;
  }
  if (!c.every_ms && (!c.minute || !c.hour || !c.dom || !c.month || !c.dow))
    abort();
  if ((c.minute & ~CTL_CRON_STAR) >> 60 || (c.hour & ~CTL_CRON_STAR) >> 24 || (c.month & 1) ||
      (c.dom & 1))
    abort();
  /* 2026-12-01T12:07:30.5Z, then a few activations on. */
  int64_t t = 1796126850500;
  for (int i = 0; i < 4; i++) {
    int64_t n = ctl_cron_next(&c, t);
    if (n == CTL_CRON_NEVER)
      break;
    if (n <= t || n % 1000 != 0)
      abort();
    if (!c.every_ms && (n / 1000) % 60 != 0)
      abort();
    t = n;
  }
  ctl_tzdb_free(&db); /* c borrows its zone's file */
  return 0;
}
