#include "kc_httpd.h"

#include "kc_error.h"
#include "kc_log.h"
#include "kc_metrics.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#define HOST_MAX          256
#define REASON_MAX        256
#define MAX_EXCLUDES      16
/* Per-connection memory MHD may use for the request line and headers; a
 * probe or a scrape needs well under 1 KiB. Larger requests get 431. */
#define CONN_MEMORY_LIMIT (16 * 1024)

typedef struct {
  char *name;
  unsigned which;
  kc_check_fn fn;
  void *ud;
} check;

struct kc_httpd {
  uv_loop_t *loop;
  uv_poll_t poll;
  uv_timer_t timer;
  int open_handles;
  bool handles_init;
  struct MHD_Daemon *daemon;
  int port;
  char *address;
  char host[HOST_MAX];
  int want_port;
  struct kc_metrics *metrics;
  unsigned max_connections, per_ip_connections, timeout_s;
  check *checks;
  size_t nchecks;
  char errmsg[512];
};

/* ---- address ---- */

static bool all_digits(const char *s) {
  if (*s == '\0')
    return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return false;
  return true;
}

int kc_httpd_parse_address(const char *addr, char *host, size_t hostcap, int *port) {
  if (addr == NULL)
    return KC_EINVAL;
  const char *colon = strrchr(addr, ':');
  if (colon == NULL)
    return KC_EINVAL;
  const char *hs = addr;
  size_t hl = (size_t)(colon - addr);
  if (hl > 0 && addr[0] == '[') {
    if (addr[hl - 1] != ']' || hl < 3)
      return KC_EINVAL;
    hs = addr + 1;
    hl -= 2;
  } else if (memchr(addr, ':', hl) != NULL) {
    return KC_EINVAL; /* an IPv6 literal needs brackets */
  }
  const char *ps = colon + 1;
  if (!all_digits(ps) || strlen(ps) > 5)
    return KC_EINVAL;
  long p = strtol(ps, NULL, 10);
  if (p > 65535 || hl >= hostcap)
    return KC_EINVAL;
  memcpy(host, hs, hl);
  host[hl] = '\0';
  *port = (int)p;
  return 0;
}

/* ---- lifecycle ---- */

static int ping(void *ud, char *reason, size_t cap) {
  (void)ud;
  (void)reason;
  (void)cap;
  return 0;
}

int kc_httpd_new(uv_loop_t *loop, const kc_httpd_opts *opts, kc_httpd **out) {
  kc_httpd *h = calloc(1, sizeof(*h));
  if (h == NULL)
    return KC_ENOMEM;
  int rc = kc_httpd_parse_address(opts->address, h->host, sizeof(h->host), &h->want_port);
  if (rc < 0)
    goto fail;
  rc = KC_ENOMEM;
  if ((h->address = strdup(opts->address)) == NULL)
    goto fail;
  h->loop = loop;
  h->port = -1;
  h->metrics = opts->metrics;
  h->max_connections = opts->max_connections ? opts->max_connections : 64;
  h->per_ip_connections = opts->per_ip_connections ? opts->per_ip_connections : 8;
  h->timeout_s = opts->timeout_s ? opts->timeout_s : 10;
  if ((rc = kc_httpd_add_check(h, "ping", KC_CHECK_LIVEZ | KC_CHECK_READYZ, ping, NULL)) < 0)
    goto fail;
  if (opts->ready && (rc = kc_httpd_add_check(h, "informer-sync", KC_CHECK_READYZ, opts->ready,
                                              opts->ready_ud)) < 0)
    goto fail;
  *out = h;
  return 0;
fail:
  kc_httpd_free(h);
  return rc;
}

int kc_httpd_add_check(kc_httpd *h, const char *name, unsigned which, kc_check_fn fn, void *ud) {
  if (name == NULL || *name == '\0' || strchr(name, '/') || fn == NULL ||
      (which & (KC_CHECK_LIVEZ | KC_CHECK_READYZ)) == 0)
    return KC_EINVAL;
  for (size_t i = 0; i < h->nchecks; i++)
    if (strcmp(h->checks[i].name, name) == 0)
      return KC_EEXISTS;
  check *nc = realloc(h->checks, (h->nchecks + 1) * sizeof(*nc));
  if (nc == NULL)
    return KC_ENOMEM;
  h->checks = nc;
  char *n = strdup(name);
  if (n == NULL)
    return KC_ENOMEM;
  h->checks[h->nchecks++] = (check){n, which, fn, ud};
  return 0;
}

const char *kc_httpd_errmsg(const kc_httpd *h) {
  return h->errmsg;
}

int kc_httpd_port(const kc_httpd *h) {
  return h->port;
}

static void on_close(uv_handle_t *handle) {
  kc_httpd *h = handle->data;
  if (--h->open_handles == 0)
    free(h);
}

void kc_httpd_free(kc_httpd *h) {
  if (h == NULL)
    return;
  /* Take the epoll fd out of libuv before MHD closes it. */
  if (h->handles_init) {
    uv_close((uv_handle_t *)&h->poll, on_close);
    uv_close((uv_handle_t *)&h->timer, on_close);
  }
  if (h->daemon)
    MHD_stop_daemon(h->daemon); /* also closes the listening socket */
  h->daemon = NULL;
  for (size_t i = 0; i < h->nchecks; i++)
    free(h->checks[i].name);
  free(h->checks);
  free(h->address);
  h->checks = NULL;
  h->address = NULL;
  if (!h->handles_init)
    free(h);
}

/* ---- response helpers ---- */

typedef struct {
  char *p;
  size_t len, cap;
  bool oom;
} textbuf;

static void tb_printf(textbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(textbuf *b, const char *fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = true;
      return;
    }
    if (b->p && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    size_t ncap = b->cap ? b->cap * 2 : 256;
    while (ncap < b->len + (size_t)n + 1)
      ncap *= 2;
    char *np = realloc(b->p, ncap);
    if (np == NULL) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
}

/* Queues a response that takes ownership of body (malloc'd) or copies a
 * static text when body is NULL. */
static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *ctype,
                               char *body, size_t len, const char *stext) {
  struct MHD_Response *r;
  if (body)
    r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  else
    r = MHD_create_response_from_buffer(strlen(stext), (void *)stext, MHD_RESPMEM_PERSISTENT);
  if (r == NULL) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

#define TEXT_PLAIN "text/plain; charset=utf-8"

typedef struct {
  const char *names[MAX_EXCLUDES];
  size_t n;
} excludes;

static enum MHD_Result collect_exclude(void *cls, enum MHD_ValueKind kind, const char *key,
                                       const char *value) {
  (void)kind;
  excludes *ex = cls;
  if (strcmp(key, "exclude") == 0 && value && ex->n < MAX_EXCLUDES)
    ex->names[ex->n++] = value;
  return MHD_YES;
}

static bool excluded(const excludes *ex, const char *name) {
  for (size_t i = 0; i < ex->n; i++)
    if (strcmp(ex->names[i], name) == 0)
      return true;
  return false;
}

/* One of /healthz, /livez, /readyz; `only` is a single check's name from
 * "/readyz/<name>" or NULL. */
static enum MHD_Result serve_health(kc_httpd *h, struct MHD_Connection *c, const char *endpoint,
                                    unsigned mask, const char *only) {
  bool verbose =
      MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, "verbose", 7, NULL, NULL) == MHD_YES;
  excludes ex = {{0}, 0};
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_exclude, &ex);
  textbuf b = {0};
  bool failed = false, any = false;
  for (size_t i = 0; i < h->nchecks; i++) {
    const check *k = &h->checks[i];
    if ((k->which & mask) == 0 || excluded(&ex, k->name))
      continue;
    if (only && strcmp(only, k->name) != 0)
      continue;
    any = true;
    char reason[REASON_MAX] = "";
    if (k->fn(k->ud, reason, sizeof(reason)) == 0) {
      tb_printf(&b, "[+]%s ok\n", k->name);
      continue;
    }
    failed = true;
    reason[sizeof(reason) - 1] = '\0';
    tb_printf(&b, "[-]%s failed: %s\n", k->name, reason[0] ? reason : "unknown reason");
    KC_V(2, "%s check %s failed: %s", endpoint, k->name, reason);
  }
  if (only && !any) {
    free(b.p);
    return respond(c, MHD_HTTP_NOT_FOUND, TEXT_PLAIN, NULL, 0, "404 page not found\n");
  }
  if (!failed && !verbose) {
    free(b.p);
    return respond(c, MHD_HTTP_OK, TEXT_PLAIN, NULL, 0, "ok");
  }
  tb_printf(&b, "%s check %s\n", endpoint, failed ? "failed" : "passed");
  if (b.oom) {
    free(b.p);
    return MHD_NO;
  }
  return respond(c, failed ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK, TEXT_PLAIN, b.p, b.len,
                 NULL);
}

static enum MHD_Result serve_metrics(kc_httpd *h, struct MHD_Connection *c) {
  char *text;
  size_t len;
  int rc = kc_metrics_render(h->metrics, &text, &len);
  if (rc < 0) {
    KC_ERROR("rendering /metrics: %s", kc_strerror(rc));
    return respond(c, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT_PLAIN, NULL, 0, "metrics unavailable\n");
  }
  return respond(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL);
}

/* Matches "/healthz" or "/healthz/<name>"; *rest is the name or NULL. */
static bool route(const char *url, const char *prefix, const char **rest) {
  size_t n = strlen(prefix);
  if (strncmp(url, prefix, n) != 0)
    return false;
  if (url[n] == '\0') {
    *rest = NULL;
    return true;
  }
  if (url[n] == '/' && url[n + 1] != '\0') {
    *rest = url + n + 1;
    return true;
  }
  return false;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls) {
  (void)version;
  (void)upload_data;
  (void)req_cls;
  kc_httpd *h = cls;
  /* Answer on the first call, with the headers: a body, if any, is never
   * read (MHD discards it and closes the connection). */
  *upload_data_size = 0;
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
    return respond(c, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_PLAIN, NULL, 0, "405 method not allowed\n");
  const char *rest;
  if (route(url, "/healthz", &rest))
    return serve_health(h, c, "healthz", KC_CHECK_LIVEZ | KC_CHECK_READYZ, rest);
  if (route(url, "/livez", &rest))
    return serve_health(h, c, "livez", KC_CHECK_LIVEZ, rest);
  if (route(url, "/readyz", &rest))
    return serve_health(h, c, "readyz", KC_CHECK_LIVEZ | KC_CHECK_READYZ, rest);
  if (strcmp(url, "/metrics") == 0 && h->metrics)
    return serve_metrics(h, c);
  return respond(c, MHD_HTTP_NOT_FOUND, TEXT_PLAIN, NULL, 0, "404 page not found\n");
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char line[512];
  vsnprintf(line, sizeof(line), fmt, ap);
  size_t n = strlen(line);
  while (n > 0 && line[n - 1] == '\n')
    line[--n] = '\0';
  KC_V(2, "httpd: %s", line);
}

/* ---- loop glue ---- */

static void on_timer(uv_timer_t *t);

/* Runs MHD once and re-arms the timer with the time MHD wants to be called
 * again (0 when it has buffered work, none when it only waits for I/O). */
static void drive(kc_httpd *h) {
  if (h->daemon == NULL)
    return;
  MHD_run(h->daemon);
  MHD_UNSIGNED_LONG_LONG ms;
  if (MHD_get_timeout(h->daemon, &ms) == MHD_YES)
    uv_timer_start(&h->timer, on_timer, (uint64_t)ms, 0);
  else
    uv_timer_stop(&h->timer);
}

static void on_poll(uv_poll_t *p, int status, int events) {
  (void)events;
  kc_httpd *h = p->data;
  if (status < 0)
    KC_WARN("httpd: poll error on %s: %s", h->address, uv_strerror(status));
  drive(h);
}

static void on_timer(uv_timer_t *t) {
  drive(t->data);
}

/* Creates the listening socket ourselves rather than through MHD, so that a
 * taken port is reported as such (MHD only returns NULL). */
static int listen_socket(kc_httpd *h, int *out_fd) {
  char port[8];
  snprintf(port, sizeof(port), "%d", h->want_port);
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  hints.ai_family = AF_UNSPEC;
  const char *host = h->host[0] ? h->host : NULL;
  if (host == NULL)
    hints.ai_family = AF_INET6; /* ":port": dual-stack [::], IPv4 fallback below */
  int gai = getaddrinfo(host, port, &hints, &res);
  if (gai != 0 && host == NULL) {
    hints.ai_family = AF_INET;
    gai = getaddrinfo(host, port, &hints, &res);
  }
  if (gai != 0) {
    snprintf(h->errmsg, sizeof(h->errmsg), "listen %s: %s", h->address, gai_strerror(gai));
    return KC_EINVAL;
  }
  int fd = -1, err = 0;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1, zero = 0;
    /* SO_REUSEADDR lets a restarted process bind past TIME_WAIT; on Linux
     * it does not let two listeners share the port. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6 && host == NULL)
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0)
      break;
    err = errno;
    close(fd);
    fd = -1;
    if (err == EADDRINUSE)
      break;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    snprintf(h->errmsg, sizeof(h->errmsg), "listen %s: %s", h->address,
             err == EADDRINUSE ? kc_strerror(KC_EADDRINUSE) : strerror(err));
    return err == EADDRINUSE ? KC_EADDRINUSE : KC_EIO;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
    h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
  *out_fd = fd;
  return 0;
}

int kc_httpd_start(kc_httpd *h) {
  if (h->daemon)
    return KC_EINVAL;
  h->errmsg[0] = '\0';
  int fd = -1;
  int rc = listen_socket(h, &fd);
  if (rc < 0)
    return rc;
  h->daemon = MHD_start_daemon(
      MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, handle, h, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned int)h->max_connections,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)h->per_ip_connections,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)h->timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      (size_t)CONN_MEMORY_LIMIT, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, MHD_OPTION_END);
  if (h->daemon == NULL) {
    close(fd);
    h->port = -1;
    snprintf(h->errmsg, sizeof(h->errmsg), "serve %s: cannot start libmicrohttpd", h->address);
    return KC_EIO;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
  if (info == NULL || !h->handles_init) {
    if (info == NULL || uv_poll_init(h->loop, &h->poll, info->epoll_fd) != 0) {
      MHD_stop_daemon(h->daemon);
      h->daemon = NULL;
      h->port = -1;
      snprintf(h->errmsg, sizeof(h->errmsg), "serve %s: cannot poll MHD's epoll fd", h->address);
      return KC_EIO;
    }
    uv_timer_init(h->loop, &h->timer);
    h->poll.data = h;
    h->timer.data = h;
    h->open_handles = 2;
    h->handles_init = true;
  }
  uv_poll_start(&h->poll, UV_READABLE, on_poll);
  KC_INFO("serving /healthz, /livez, /readyz%s on %s (port %d)", h->metrics ? ", /metrics" : "",
          h->address, h->port);
  return 0;
}
