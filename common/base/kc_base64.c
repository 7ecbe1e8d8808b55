/* Base64 through OpenSSL's EVP_EncodeBlock and EVP_DecodeBlock. EVP_DecodeBlock alone is not
 * strict: it reads '=' anywhere as six zero bits, wants padded groups of four and reports the
 * padding as decoded zero bytes. So the input's shape is checked here first (alphabet, where
 * padding may stand, the length of the last group), the missing padding is added, and the
 * output length is computed from the count of data characters. */
#include "kc_base64.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

char *kc_base64_encode(const void *data, size_t n) {
  if (n > INT_MAX / 2)
    return NULL;
  unsigned char *out = malloc(4 * ((n + 2) / 3) + 1);
  if (out)
    EVP_EncodeBlock(out, data, (int)n);
  return (char *)out;
}

static bool is_space(char ch) {
  return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t';
}

static bool in_alphabet(char ch) {
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
         ch == '+' || ch == '/';
}

/* Copies the base64 characters of in (no whitespace) to buf and checks their shape; *ndata is
 * the count of data characters, without padding. */
static int gather(const char *in, size_t len, char *buf, size_t *ndata, char *err, size_t errlen) {
  size_t n = 0, pad = 0;
  for (size_t i = 0; i < len; i++) {
    char ch = in[i];
    if (is_space(ch))
      continue;
    if (ch == '=') {
      pad++;
    } else if (!in_alphabet(ch)) {
      return kc_errorf(err, errlen, KC_EPARSE, "byte %zu is not a base64 character", i);
    } else if (pad) {
      return kc_errorf(err, errlen, KC_EPARSE, "data after padding at byte %zu", i);
    } else {
      buf[n++] = ch;
    }
  }
  if (n % 4 == 1)
    return kc_errorf(err, errlen, KC_EPARSE, "truncated: a lone character in the last group");
  if (pad && (n % 4 == 0 || (n + pad) % 4 != 0))
    return kc_errorf(err, errlen, KC_EPARSE, "wrong padding: %zu '=' after %zu data characters",
                     pad, n);
  *ndata = n;
  return 0;
}

int kc_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen, char *err,
                     size_t errlen) {
  if (len > INT_MAX - 4)
    return kc_errorf(err, errlen, KC_EPARSE, "%zu bytes is too long", len);
  size_t cap = len + 4; /* the data plus up to three '=' and a NUL */
  char *buf = malloc(cap);
  unsigned char *bytes = buf ? malloc(cap / 4 * 3 + 1) : NULL;
  if (!bytes) {
    free(buf);
    return kc_errorf(err, errlen, KC_ENOMEM, "out of memory");
  }
  size_t n = 0;
  int rc = gather(in, len, buf, &n, err, errlen);
  if (rc == 0) {
    size_t padded = (n + 3) / 4 * 4;
    memset(buf + n, '=', padded - n);
    if (EVP_DecodeBlock(bytes, (const unsigned char *)buf, (int)padded) < 0)
      rc = kc_errorf(err, errlen, KC_EPARSE, "rejected by the decoder");
  }
  OPENSSL_cleanse(buf, cap);
  free(buf);
  if (rc) {
    OPENSSL_cleanse(bytes, cap / 4 * 3 + 1);
    free(bytes);
    return rc;
  }
  *outlen = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0); /* 2 or 3 characters carry 1 or 2 bytes */
  bytes[*outlen] = '\0';
  *out = bytes;
  return 0;
}
