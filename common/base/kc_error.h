/* Kiln error codes: one table gives each code its value, name and message.
 * Functions return 0 on success or a negative KC_E* code (libuv style). */
#ifndef KC_ERROR_H
#define KC_ERROR_H

#include <stddef.h>

/* On the functions that return an error code: a caller that drops the code gets a warning
 * (an error under -Werror, as CI builds). Where a failure truly changes nothing, say so with
 * KC_IGNORE(call), which GCC, unlike a cast to void, accepts. A few best-effort calls (event
 * recording, metric registration, work-queue adds) are not marked yet: their callers include
 * shells other work was rewriting when this landed. */
#define KC_NODISCARD __attribute__((warn_unused_result))
#define KC_IGNORE(x) ((void)!(x))

/* XX(name, message). Kubernetes Status.reason values keep their API spelling
 * in the message so that callers can report them verbatim. */
#define KC_ERRNO_MAP(XX)                                                                           \
  XX(NOMEM, "out of memory")                                                                       \
  XX(INVAL, "invalid argument")                                                                    \
  XX(RANGE, "value out of range")                                                                  \
  XX(PARSE, "parse error")                                                                         \
  XX(IO, "input/output error")                                                                     \
  XX(TOOBIG, "message too large")                                                                  \
  XX(TIMEDOUT, "timed out")                                                                        \
  XX(CANCELED, "canceled")                                                                         \
  XX(CONNECT, "cannot connect to the API server")                                                  \
  XX(TLS, "TLS handshake or certificate error")                                                    \
  XX(TRANSPORT, "transport error")                                                                 \
  XX(HTTP, "unexpected HTTP status")                                                               \
  XX(BADREQUEST, "BadRequest")                                                                     \
  XX(UNAUTHORIZED, "Unauthorized")                                                                 \
  XX(FORBIDDEN, "Forbidden")                                                                       \
  XX(NOTFOUND, "NotFound")                                                                         \
  XX(ALREADYEXISTS, "AlreadyExists")                                                               \
  XX(CONFLICT, "Conflict")                                                                         \
  XX(GONE, "Gone")                                                                                 \
  XX(EXPIRED, "Expired")                                                                           \
  XX(INVALID, "Invalid")                                                                           \
  XX(TOOMANYREQUESTS, "TooManyRequests")                                                           \
  XX(SERVERTIMEOUT, "ServerTimeout")                                                               \
  XX(INTERNAL, "InternalError")                                                                    \
  XX(UNAVAILABLE, "ServiceUnavailable")                                                            \
  XX(NOTLEADER, "not the leader")                                                                  \
  XX(EXISTS, "already exists")                                                                     \
  XX(NOENT, "no such entry")                                                                       \
  XX(ADDRINUSE, "address already in use")                                                          \
  XX(AGAIN, "not ready yet, try again shortly")

typedef enum {
  KC_OK = 0,
  KC__EBASE = -1000,
#define XX(name, msg) KC_E##name,
  KC_ERRNO_MAP(XX)
#undef XX
      KC__EMAX
} kc_errno;

/* The message for an error code, or "unknown error". Never NULL, static. */
const char *kc_strerror(int err);
/* Formats a message into err (errlen bytes; NULL or 0: no message) and returns code: the one
 * way a function that takes an error buffer reports a failure. */
int kc_errorf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The symbolic name ("KC_ENOTFOUND"), static. */
const char *kc_err_name(int err);
/* Maps a Kubernetes Status.reason string to a code; KC_EHTTP when unknown. */
int kc_err_from_reason(const char *reason);
/* Maps an HTTP status code to a code (0 for 2xx). */
int kc_err_from_http(long status);
/* Maps a libuv error (UV_E*, negative) to a code (0 for 0); KC_EIO when there is no closer one.
 * (curl's CURLcode values are mapped where the transport sees them, in kc_http.c.) */
int kc_err_from_uv(int uverr);

#endif
