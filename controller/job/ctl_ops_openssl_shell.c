/* The default effects of the job plugins (ctl_ops): randomness and ssh key pairs from
 * OpenSSL. Tests inject their own ops, or a ctl_random source that can fail. */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "kc_error.h"

static int draw(void *ctx, unsigned char *buf, size_t n) {
  const ctl_random *src = ctx;
  if (src)
    return src->bytes(src->arg, buf, n);
  return RAND_bytes(buf, (int)n) == 1 ? 0 : KC_EIO;
}

static int default_rand_str(void *ctx, char *buf, size_t n) {
  static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  unsigned char r[64];
  if (n > sizeof(r))
    n = sizeof(r);
  int rc = draw(ctx, r, n);
  if (rc) {
    /* Never a fallback: names made of zeros would be the same for every job. */
    buf[0] = '\0';
    return rc;
  }
  for (size_t i = 0; i < n; i++)
    buf[i] = alphabet[r[i] % 36];
  buf[n] = '\0';
  return 0;
}

/* RFC 4253 string/mpint encoding into buf at *off. */
static void put_u32(unsigned char *buf, size_t *off, uint32_t v) {
  buf[(*off)++] = (unsigned char)(v >> 24);
  buf[(*off)++] = (unsigned char)(v >> 16);
  buf[(*off)++] = (unsigned char)(v >> 8);
  buf[(*off)++] = (unsigned char)v;
}

static void put_mpint(unsigned char *buf, size_t *off, const BIGNUM *bn) {
  int n = BN_num_bytes(bn);
  unsigned char tmp[1024];
  BN_bn2bin(bn, tmp);
  bool pad = n > 0 && (tmp[0] & 0x80);
  put_u32(buf, off, (uint32_t)(n + pad));
  if (pad)
    buf[(*off)++] = 0;
  memcpy(buf + *off, tmp, (size_t)n);
  *off += (size_t)n;
}

static int default_ssh_keygen(void *ctx, char **priv, char **pub) {
  *priv = *pub = NULL;
  /* EVP_RSA_gen draws from OpenSSL's generator, the one RAND_bytes reads. Drawing through
   * the source first stops a failed generator here with KC_EIO (and lets a test fail it);
   * EVP_RSA_gen failing on its own is KC_EIO too: no key is ever made without randomness. */
  unsigned char probe[32];
  int rc = draw(ctx, probe, sizeof(probe));
  OPENSSL_cleanse(probe, sizeof(probe));
  if (rc)
    return rc;
  EVP_PKEY *key = EVP_RSA_gen(2048);
  if (!key)
    return KC_EIO;
  rc = KC_ENOMEM;
  BIO *bio = NULL;
  BIGNUM *n = NULL, *e = NULL;
  unsigned char *blob = NULL, *enc = NULL;
  if (!(bio = BIO_new(BIO_s_mem())))
    goto out;
  /* PKCS#1 "RSA PRIVATE KEY", the form Volcano writes. */
  if (!PEM_write_bio_PrivateKey_traditional(bio, key, NULL, NULL, 0, NULL, NULL))
    goto out;
  char *data;
  long len = BIO_get_mem_data(bio, &data);
  if (len <= 0 || !(*priv = strndup(data, (size_t)len)))
    goto out;
  if (!EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_N, &n) ||
      !EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_E, &e) || BN_num_bytes(n) > 1000)
    goto out;
  blob = malloc(2048);
  if (!blob)
    goto out;
  size_t off = 0;
  put_u32(blob, &off, 7);
  memcpy(blob + off, "ssh-rsa", 7);
  off += 7;
  put_mpint(blob, &off, e);
  put_mpint(blob, &off, n);
  enc = malloc(4 * ((off + 2) / 3) + 1);
  if (!enc)
    goto out;
  EVP_EncodeBlock(enc, blob, (int)off);
  size_t pl = strlen((char *)enc) + 16;
  if (!(*pub = malloc(pl)))
    goto out;
  snprintf(*pub, pl, "ssh-rsa %s\n", enc);
  rc = 0;
out:
  if (rc) {
    free(*priv);
    *priv = NULL;
  }
  free(enc);
  free(blob);
  BN_free(n);
  BN_free(e);
  BIO_free(bio);
  EVP_PKEY_free(key);
  return rc;
}

const ctl_ops ctl_default_ops = {
    .rand_str = default_rand_str,
    .ssh_keygen = default_ssh_keygen,
    .ctx = NULL,
};
