/* Reading the zone files a CronJob names (ctl_tzdb.h). */
#include "ctl_tzdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_file.h"

/* Go's platformZoneSources, after $ZONEINFO. */
static const char *const zoneinfo_dirs[] = {"/usr/share/zoneinfo/", "/usr/share/lib/zoneinfo/",
                                            "/usr/lib/locale/TZ/", "/etc/zoneinfo/"};

/* A zone file is a few KiB; the bound only stops a wrong file. */
#define ZONE_MAX_BYTES (1u << 20)

/* The first file of that name that is a zone, else the first file of that name (data NULL
 * when there is none). 0 or KC_ENOMEM. */
static int read_zone(const char *name, char **data, size_t *len) {
  const char *env = getenv("ZONEINFO");
  char path[512];
  *data = NULL;
  *len = 0;
  for (size_t i = 0; i <= sizeof(zoneinfo_dirs) / sizeof(zoneinfo_dirs[0]); i++) {
    int n;
    if (i == 0) {
      if (!env || !*env)
        continue;
      n = snprintf(path, sizeof(path), "%s/%s", env, name);
    } else {
      n = snprintf(path, sizeof(path), "%s%s", zoneinfo_dirs[i - 1], name);
    }
    if (n < 0 || (size_t)n >= sizeof(path))
      continue;
    char *buf;
    size_t blen;
    int rc = kc_file_read(path, ZONE_MAX_BYTES, &buf, &blen);
    if (rc == KC_ENOMEM)
      return rc;
    if (rc != 0)
      continue;
    /* As Go's loadLocation: a file that is no zone gives way to the next source; with none
     * better, the core sees the first file and says why it is refused. */
    if (!*data || ctl_tzif(buf, blen)) {
      free(*data);
      *data = buf;
      *len = blen;
    } else {
      free(buf);
    }
    if (ctl_tzif(*data, *len))
      return 0;
  }
  return 0;
}

/* One file by its path: data NULL when it cannot be read. 0 or KC_ENOMEM. */
static int read_path(const char *path, char **data, size_t *len) {
  *data = NULL;
  *len = 0;
  int rc = kc_file_read(path, ZONE_MAX_BYTES, data, len);
  if (rc == KC_ENOMEM)
    return rc;
  if (rc != 0) {
    *data = NULL;
    *len = 0;
  }
  return 0;
}

/* The process' zone as Go's initLocal finds it: no $TZ is /etc/localtime; $TZ "" or "UTC" is
 * UTC (no file); ":" is dropped; an absolute path is that file; any other name is looked up in
 * the zone directories. A file the core cannot load leaves it UTC, as Go falls back. */
static int read_local(ctl_tzfile *f) {
  snprintf(f->name, sizeof(f->name), "Local");
  const char *tz = getenv("TZ");
  if (!tz)
    return read_path("/etc/localtime", &f->data, &f->len);
  if (*tz == ':')
    tz++;
  if (!*tz || strcmp(tz, "UTC") == 0)
    return 0;
  if (*tz == '/')
    return read_path(tz, &f->data, &f->len);
  return read_zone(tz, &f->data, &f->len);
}

int ctl_tzdb_read(ctl_tzdb *db, const char *schedule, const char *time_zone) {
  char names[CTL_TZDB_MAX][CTL_TZ_MAX];
  memset(db, 0, sizeof(*db));
  size_t n = ctl_cron_zones(schedule, time_zone, names);
  for (size_t i = 0; i < n; i++) {
    ctl_tzfile *z = &db->zone[db->n++];
    snprintf(z->name, sizeof(z->name), "%s", names[i]);
    if (read_zone(z->name, &z->data, &z->len) != 0) {
      ctl_tzdb_free(db);
      return KC_ENOMEM;
    }
  }
  if (read_local(&db->local) != 0) {
    ctl_tzdb_free(db);
    return KC_ENOMEM;
  }
  return 0;
}

int ctl_tzdb_read_cronjob(ctl_tzdb *db, const json_t *cj) {
  const json_t *spec = json_object_get(cj, "spec");
  return ctl_tzdb_read(db, json_string_value(json_object_get(spec, "schedule")),
                       json_string_value(json_object_get(spec, "timeZone")));
}

void ctl_tzdb_free(ctl_tzdb *db) {
  for (size_t i = 0; i < db->n; i++)
    free(db->zone[i].data);
  free(db->local.data);
  memset(db, 0, sizeof(*db));
}
