/* The HTTP client the shell lends a session (sch_http, for the extender plugin): one blocking
 * POST with libcurl's easy interface. The session runs on a libuv worker thread (sch_shell.c
 * run_work), so a slow extender holds that session, as in Volcano, and never the loop: watches,
 * binds, leases and metrics go on. Each call has its own handle (a session's calls are
 * sequential; connection reuse across them would need a handle per worker thread). */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "sch_http.h"

#define SCH_HTTP_MAX_BODY (16u << 20) /* an extender's answer is small: cap it */

typedef struct body_buf {
  char *data;
  size_t len, max;
  bool too_big;
} body_buf;

static size_t on_data(char *p, size_t size, size_t n, void *ud) {
  body_buf *b = ud;
  size_t add = size * n;
  if (b->len + add > b->max) {
    b->too_big = true;
    return 0;
  }
  char *d = realloc(b->data, b->len + add + 1);
  if (d == NULL)
    return 0;
  memcpy(d + b->len, p, add);
  b->len += add;
  d[b->len] = '\0';
  b->data = d;
  return add;
}

static void set_options(CURL *h, const sch_http_req *r, struct curl_slist *hdr, body_buf *b) {
  curl_easy_setopt(h, CURLOPT_URL, r->url);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
  if (r->insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (r->user) {
    curl_easy_setopt(h, CURLOPT_USERNAME, r->user);
    curl_easy_setopt(h, CURLOPT_PASSWORD, r->password ? r->password : "");
  }
}

int sch_http_post(const sch_http_req *r, char **resp, size_t *resp_len, char *err, size_t errlen) {
  *resp = NULL;
  *resp_len = 0;
  CURL *h = curl_easy_init();
  if (h == NULL)
    return kc_errorf(err, errlen, KC_ENOMEM, "cannot create an HTTP handle");
  char ct[128];
  snprintf(ct, sizeof(ct), "Content-Type: %s", r->content_type);
  struct curl_slist *hdr = curl_slist_append(NULL, ct);
  body_buf b = {.max = r->max_body ? r->max_body : SCH_HTTP_MAX_BODY};
  set_options(h, r, hdr, &b);
  CURLcode cc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(hdr);
  curl_easy_cleanup(h);
  if (cc != CURLE_OK) {
    free(b.data);
    return kc_errorf(err, errlen, cc == CURLE_OPERATION_TIMEDOUT ? KC_ETIMEDOUT : KC_ETRANSPORT,
                     "Post \"%s\": %s", r->url,
                     b.too_big ? "answer too large" : curl_easy_strerror(cc));
  }
  *resp = b.data;
  *resp_len = b.len;
  return (int)status;
}

static int post(void *ctx, const char *url, const char *body, size_t len, int64_t timeout_ms,
                char **resp, size_t *resp_len, char *err, size_t errlen) {
  (void)ctx;
  sch_http_req r = {.url = url,
                    .content_type = "application/json",
                    .body = body,
                    .len = len,
                    .timeout_ms = timeout_ms};
  return sch_http_post(&r, resp, resp_len, err, errlen);
}

const sch_http sch_shell_http = {post, NULL};
