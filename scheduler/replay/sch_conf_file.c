/* The scheduler configuration read from a file (sch_conf_file.h): kc_file_read, then the
 * core's parser on the bytes. */
#include "sch_conf_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_file.h"

int sch_conf_read_file(const char *path, sch_conf **out, char *err, size_t errlen) {
  enum { MAX_BYTES = 1 << 20 };
  *out = NULL;
  char *buf;
  size_t len;
  int rc = kc_file_read(path, MAX_BYTES, &buf, &len);
  if (rc == KC_ENOMEM)
    return rc;
  if (rc == KC_ETOOBIG) {
    if (err)
      snprintf(err, errlen, "%s: larger than %d bytes", path, MAX_BYTES);
    return rc;
  }
  if (rc) {
    if (err)
      snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return KC_EIO;
  }
  rc = sch_conf_parse(buf, len, out, err, errlen);
  free(buf);
  return rc;
}
