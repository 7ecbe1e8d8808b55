/* Whole-file reads (kc_file.h): configuration, kubeconfig credentials, CA bundles, scheduler
 * configurations, dumped snapshots and vcctl's job files all come through here. */
#include "kc_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "kc_error.h"

int kc_file_read(const char *path, size_t max, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return errno == ENOENT ? KC_ENOENT : KC_EIO;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  int rc = KC_ENOMEM, saved = 0;
  while (buf) {
    if (n + 1 == cap) {
      /* The buffer is full: the file is larger than max once n reaches past it. */
      if (n > max) {
        rc = KC_ETOOBIG;
        break;
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb)
        break;
      buf = nb;
      cap *= 2;
    }
    size_t r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0) {
      saved = errno;
      rc = ferror(f) ? KC_EIO : n > max ? KC_ETOOBIG : 0;
      break;
    }
  }
  fclose(f);
  if (rc) {
    free(buf);
    errno = saved;
    return rc;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return 0;
}
