#include "kc_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct errinfo {
  const char *name;
  const char *msg;
};

static const struct errinfo table[] = {
#define XX(name, msg) {"KC_E" #name, msg},
    KC_ERRNO_MAP(XX)
#undef XX
};

static const struct errinfo *lookup(int err) {
  if (err <= KC__EBASE || err >= KC__EMAX)
    return NULL;
  return &table[err - KC__EBASE - 1];
}

const char *kc_strerror(int err) {
  if (err == 0)
    return "success";
  const struct errinfo *e = lookup(err);
  return e ? e->msg : "unknown error";
}

const char *kc_err_name(int err) {
  if (err == 0)
    return "KC_OK";
  const struct errinfo *e = lookup(err);
  return e ? e->name : "KC_EUNKNOWN";
}

int kc_err_from_reason(const char *reason) {
  static const struct {
    const char *reason;
    int code;
  } reasons[] = {
      {"BadRequest", KC_EBADREQUEST},
      {"Unauthorized", KC_EUNAUTHORIZED},
      {"Forbidden", KC_EFORBIDDEN},
      {"NotFound", KC_ENOTFOUND},
      {"AlreadyExists", KC_EALREADYEXISTS},
      {"Conflict", KC_ECONFLICT},
      {"Gone", KC_EGONE},
      {"Expired", KC_EEXPIRED},
      {"Invalid", KC_EINVALID},
      {"TooManyRequests", KC_ETOOMANYREQUESTS},
      {"Timeout", KC_ESERVERTIMEOUT},
      {"ServerTimeout", KC_ESERVERTIMEOUT},
      {"InternalError", KC_EINTERNAL},
      {"ServiceUnavailable", KC_EUNAVAILABLE},
  };
  if (reason == NULL)
    return KC_EHTTP;
  for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
    if (strcmp(reasons[i].reason, reason) == 0)
      return reasons[i].code;
  return KC_EHTTP;
}

int kc_err_from_http(long status) {
  if (status >= 200 && status < 300)
    return 0;
  switch (status) {
  case 400:
    return KC_EBADREQUEST;
  case 401:
    return KC_EUNAUTHORIZED;
  case 403:
    return KC_EFORBIDDEN;
  case 404:
    return KC_ENOTFOUND;
  case 409:
    return KC_ECONFLICT;
  case 410:
    return KC_EGONE;
  case 422:
    return KC_EINVALID;
  case 429:
    return KC_ETOOMANYREQUESTS;
  case 500:
    return KC_EINTERNAL;
  case 503:
    return KC_EUNAVAILABLE;
  case 504:
    return KC_ESERVERTIMEOUT;
  default:
    return KC_EHTTP;
  }
}

int kc_errorf(char *err, size_t errlen, int code, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}
