/* The shell's HTTP client for sessions (sch_http.c). */
#ifndef SCH_HTTP_H
#define SCH_HTTP_H

#include "sch_framework.h"

/* Blocking POSTs with libcurl; for a session on a worker thread. */
extern const sch_http sch_shell_http;

/* One blocking POST, for code off the event loop (a session, a worker thread). */
typedef struct sch_http_req {
  const char *url, *content_type, *body;
  size_t len;
  int64_t timeout_ms;
  size_t max_body;             /* the answer's cap; 0: 16 MiB */
  bool insecure;               /* skip the server certificate's check */
  const char *user, *password; /* basic authentication when user is set */
} sch_http_req;

/* The answer's HTTP status and its body (new, NUL-terminated, in *resp), or a negative KC error
 * with the reason in err. */
int sch_http_post(const sch_http_req *r, char **resp, size_t *resp_len, char *err, size_t errlen);

#endif
