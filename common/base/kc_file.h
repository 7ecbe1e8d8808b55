/* Reading a whole file, the one way: bounded, NUL-terminated, errors from the one table. */
#ifndef KC_FILE_H
#define KC_FILE_H

#include <stddef.h>
#include "kc_error.h"

/* Reads the file at path into *out (new, free(); NUL-terminated after *len bytes, so text can
 * be parsed in place). max bounds what is read: a larger file is KC_ETOOBIG, so a file fed
 * from outside cannot exhaust memory. Returns 0, KC_ENOENT (no such file), KC_EIO (another
 * open or read error; errno still says which, for the caller's message), KC_ETOOBIG or
 * KC_ENOMEM; *out is NULL and *len 0 on every error. */
KC_NODISCARD int kc_file_read(const char *path, size_t max, char **out, size_t *len);

#endif
