/* Base64 (RFC 4648, standard alphabet), both ways, through OpenSSL's EVP block codec: Secrets'
 * data fields are written with it and kubeconfig's *-data fields are read with it. */
#ifndef KC_BASE64_H
#define KC_BASE64_H

#include <stddef.h>

#include "kc_error.h"

/* Standard base64 (padded) of n bytes, as a new string (free()); NULL when out of memory or
 * when n is beyond what the codec takes (INT_MAX / 2). */
char *kc_base64_encode(const void *data, size_t n);

/* Decodes len characters of standard base64. Strict: padding is optional, but when present it
 * is one or two '=' that complete the last group of four, and nothing follows it; a lone
 * character in the last group, a character outside the alphabet (URL-safe '-' and '_'
 * included) or '=' elsewhere is refused. Line breaks, spaces and tabs are skipped, as in a
 * wrapped PEM body. On success *out is new memory (free(); NUL-terminated past *outlen) and
 * 0 is returned. On bad input KC_EPARSE with a reason in err that names an offset, never
 * the input's characters (it may be a private key); KC_ENOMEM when out of memory. Scratch
 * copies are wiped before they are freed. */
KC_NODISCARD int kc_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen,
                                  char *err, size_t errlen);

#endif
