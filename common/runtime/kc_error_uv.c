/* libuv's error codes in the one error table (kc_error.h). Apart from kc_error.c because
 * the base library, which the pure cores link, does not depend on libuv. */
#include <uv.h>

#include "kc_error.h"

int kc_err_from_uv(int uverr) {
  switch (uverr) {
  case 0:
    return 0;
  case UV_ENOMEM:
  case UV_ENOBUFS:
    return KC_ENOMEM;
  case UV_EINVAL:
  case UV_EBADF:
    return KC_EINVAL;
  case UV_EADDRINUSE:
    return KC_EADDRINUSE;
  case UV_ECONNREFUSED:
  case UV_ECONNRESET:
  case UV_ENETUNREACH:
  case UV_EHOSTUNREACH:
  case UV_EADDRNOTAVAIL:
    return KC_ECONNECT;
  case UV_ETIMEDOUT:
    return KC_ETIMEDOUT;
  case UV_ECANCELED:
    return KC_ECANCELED;
  case UV_ENOENT:
    return KC_ENOENT;
  case UV_EEXIST:
    return KC_EEXISTS;
  case UV_E2BIG:
  case UV_EMSGSIZE:
    return KC_ETOOBIG;
  default:
    return KC_EIO;
  }
}
