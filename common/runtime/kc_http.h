/* The transport: one curl multi handle per process, driven by a libuv loop (curl's socket and
 * timer callbacks on uv_poll and uv_timer, as in curl's multi-uv example). Requests to the API
 * server use HTTP/2 and are multiplexed on one TLS connection (CURLPIPE_MULTIPLEX with
 * PIPEWAIT), so hundreds of requests in flight cost one socket.
 *
 * Every request carries the config's TLS material (always verified) and bearer token; the
 * token comes from kc_config_token, so a rotated token file is picked up. Nothing here logs a
 * header, a body or a token.
 *
 * Threading: everything runs on the loop thread; callbacks are called from the loop, never
 * from inside kc_http_start. */
#ifndef KC_HTTP_H
#define KC_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kc_config.h"

typedef struct kc_http kc_http;
typedef struct kc_http_req kc_http_req;

#define KC_HTTP_DEFAULT_MAX_BODY ((size_t)256 << 20) /* a LIST of many pods fits */
#define KC_HTTP_MAX_ERROR_BODY   ((size_t)64 << 10)  /* Status bodies are small */

/* What a finished request produced. All pointers are borrowed for the callback only. */
typedef struct {
  int err;          /* 0 when a response arrived (any status), else KC_ECONNECT, KC_ETLS,
                       KC_ETIMEDOUT, KC_ETOOBIG, KC_ECANCELED, KC_ETRANSPORT, KC_ENOMEM */
  long status;      /* HTTP status, 0 without a response */
  const char *body; /* NUL-terminated response body (buffered mode, or the error body of a
                       streamed request); "" when none */
  size_t body_len;
  int64_t retry_after_ms;   /* from a Retry-After header, -1 when absent */
  bool sent;                /* the request may have reached the server (false: connect failed) */
  const char *detail;       /* curl's error text for a transport error, "" otherwise */
  bool no_credential;       /* the exec credential plugin failed; nothing was sent (detail says
                               why, err is the plugin's: KC_ENOENT, KC_ETIMEDOUT, KC_EIO, ...) */
  const char *content_type; /* the response's Content-Type, "" when none */
} kc_http_result;

/* Called once per request when it ends; the request is freed after it returns. */
typedef void (*kc_http_done_cb)(kc_http_req *req, const kc_http_result *res, void *data);

/* Streaming mode: called for each piece of a 2xx body as it arrives (a watch). Return 0 to go
 * on, or a negative code to end the request, which then finishes with that code as err. */
typedef int (*kc_http_chunk_cb)(kc_http_req *req, const char *chunk, size_t len, void *data);

typedef struct {
  const char *method;       /* "GET", "POST", "PUT", "PATCH", "DELETE" */
  const char *path;         /* borrowed; "/api/v1/..." with the query, appended to the server */
  const char *content_type; /* for a body, or NULL */
  const char *accept;       /* NULL: "application/json" */
  const void *body;         /* borrowed, copied by kc_http_start; NULL for none */
  size_t body_len;
  int64_t timeout_ms;        /* whole-request deadline; 0: none (watches use the server's) */
  size_t max_body;           /* buffered-mode cap; 0: KC_HTTP_DEFAULT_MAX_BODY */
  kc_http_chunk_cb on_chunk; /* NULL: buffer the body */
  kc_http_done_cb on_done;
  void *data;
} kc_http_spec;

typedef struct {
  uint64_t started; /* requests handed to curl */
  uint64_t finished;
  uint64_t new_connections;   /* sum of CURLINFO_NUM_CONNECTS: connections opened */
  uint64_t http2_responses;   /* responses that came over HTTP/2 */
  uint64_t connection_resets; /* connections closed because the server went silent */
  unsigned in_flight;
} kc_http_stats;

/* Creates the transport on loop. cfg is borrowed and must outlive the transport (the token
 * re-read updates it). user_agent is copied (NULL: "kiln/<version>"). */
int kc_http_new(uv_loop_t *loop, kc_config *cfg, const char *user_agent, kc_http **out);

/* Ends every request (their on_done runs with KC_ECANCELED), then closes the libuv handles;
 * the memory is released by their close callbacks, so run the loop afterwards (uv_run until
 * it returns 0) before uv_loop_close. NULL is a no-op. No kc_http call may follow. */
void kc_http_free(kc_http *h);

/* Starts a request. On success *out (may be NULL) is a borrowed handle valid until on_done
 * returns; on error nothing was started and on_done will not be called. */
int kc_http_start(kc_http *h, const kc_http_spec *spec, kc_http_req **out);

/* Ends a request early: on_done is not called, and req is invalid after this returns. Not
 * for a request's own callbacks: its on_chunk ends it by returning a code, and after on_done
 * it is gone anyway. */
void kc_http_cancel(kc_http_req *req);

/* The Content-Type of a request's response once its headers arrived (from an on_chunk
 * callback), "" before or without one. Borrowed until the next call on req. */
const char *kc_http_req_content_type(kc_http_req *req);

/* Forces the next request to re-read the token file (after a 401). With an exec plugin the
 * transport handles a 401 itself, as client-go's exec round tripper: a 401 on the cached
 * credential drops it, so the next request runs the plugin again (once for any number of
 * requests that saw the same credential refused). Requests wait, unsent, while the plugin
 * runs; an expired credential (expirationTimestamp) is never sent. */
void kc_http_refresh_token(kc_http *h);

/* A connection is closed, and its requests fail with KC_ETRANSPORT, when a request times out
 * after nothing at all arrived from the server during its life and for at least ms (default,
 * ms <= 0: 15 s; client-go's HTTP/2 health check closes a silent connection after 30 + 15 s).
 * Requests started by their callbacks go to a new connection. */
void kc_http_set_dead_after(kc_http *h, int64_t ms);

void kc_http_get_stats(const kc_http *h, kc_http_stats *st);

/* The loop the transport runs on (borrowed). */
uv_loop_t *kc_http_loop(const kc_http *h);

/* Maps a curl result code to a Kiln error code. */
int kc_http_err_from_curl(int curlcode);

#endif
