/* The health and metrics server: /healthz, /livez, /readyz and /metrics,
 * served by libmicrohttpd from the libuv loop thread.
 *
 * MHD runs without a thread of its own (MHD_USE_EPOLL, external polling):
 * its epoll fd sits in a uv_poll and MHD_run is called from there and from
 * a uv_timer armed with MHD_get_timeout, so check callbacks and the metrics
 * registry are only ever touched from the loop thread, like everything else.
 *
 * Health follows Kubernetes' healthz conventions: 200 "ok" when every check
 * passes, otherwise 503 with one "[+]name ok" / "[-]name failed: reason"
 * line per check; "?verbose" lists the checks on success too; "?exclude=name"
 * skips a check; "/readyz/<name>" runs one check. /healthz runs every check,
 * /livez the liveness checks, /readyz liveness and readiness checks. Only GET
 * and HEAD are served (405 otherwise); request headers are capped by MHD's
 * per-connection memory limit and request bodies are never read. One client
 * address holds at most per_ip_connections at once (a further one is closed
 * on accept), all clients max_connections, and an idle connection is closed
 * after timeout_s. */
#ifndef KC_HTTPD_H
#define KC_HTTPD_H

#include <stddef.h>

#include <uv.h>
#include "kc_error.h"

struct kc_metrics;
typedef struct kc_httpd kc_httpd;

/* A check: 0 when healthy; otherwise non-zero with a short reason written
 * into reason (cap bytes, NUL-terminated), e.g. "caches not synced". Runs
 * on the loop thread during a request: keep it cheap. */
typedef int (*kc_check_fn)(void *ud, char *reason, size_t cap);

enum { KC_CHECK_LIVEZ = 1, KC_CHECK_READYZ = 2 };

typedef struct {
  const char *address;        /* Volcano-style ":11251", "127.0.0.1:8080", "[::1]:0" */
  struct kc_metrics *metrics; /* borrowed; NULL: /metrics is 404 */
  kc_check_fn ready;          /* optional readiness check "informer-sync" */
  void *ready_ud;
  unsigned max_connections; /* 0: 64 */
  /* Connections at once from one client address; 0: 8. Any pod that reaches the port could
   * otherwise hold every connection, and the kubelet's probes would fail. */
  unsigned per_ip_connections;
  unsigned timeout_s; /* idle connection timeout; 0: 10 s */
} kc_httpd_opts;

/* Splits an address into host (empty for all interfaces, brackets removed
 * from IPv6 literals) and port (0..65535). 0 or KC_EINVAL. */
KC_NODISCARD int kc_httpd_parse_address(const char *addr, char *host, size_t hostcap, int *port);

/* *out is new. opts->address is copied. A built-in "ping" check is always
 * present. 0, KC_EINVAL (bad address), KC_ENOMEM. */
KC_NODISCARD int kc_httpd_new(uv_loop_t *loop, const kc_httpd_opts *opts, kc_httpd **out);
/* Adds a check (name copied) for KC_CHECK_LIVEZ and/or KC_CHECK_READYZ.
 * 0, KC_EINVAL, KC_EEXISTS, KC_ENOMEM. */
KC_NODISCARD int kc_httpd_add_check(kc_httpd *h, const char *name, unsigned which, kc_check_fn fn,
                                    void *ud);
/* Binds, listens and starts serving. 0; KC_EADDRINUSE when the port is
 * taken; KC_EINVAL when the host does not resolve; KC_EIO otherwise.
 * kc_httpd_errmsg then names the address and the cause. */
KC_NODISCARD int kc_httpd_start(kc_httpd *h);
/* The last start error as text ("listen 127.0.0.1:8080: address already in
 * use"), or "" (borrowed). */
const char *kc_httpd_errmsg(const kc_httpd *h);
/* The bound port (useful with port 0), or -1 when not started. */
int kc_httpd_port(const kc_httpd *h);
/* Stops serving, closes every connection and the handles; memory is
 * released in the close callbacks, so run the loop afterwards. NULL is a
 * no-op. */
void kc_httpd_free(kc_httpd *h);

#endif
