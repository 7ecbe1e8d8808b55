#include "kc_http.h"

#include "kc_clock.h"
#include "kc_container.h"
#include "kc_error.h"
#include "kc_exec.h"
#include "kc_log.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef container_of
#endif

#define CONNECT_TIMEOUT_MS   30000L /* client-go's dialer timeout */
#define KEEPALIVE_S          30L    /* client-go's dialer keep-alive */
#define KEEPALIVE_INTVL_S    10L
#define KEEPALIVE_PROBES     3
/* client-go pings an idle HTTP/2 connection after 30 s and drops it 15 s later without an
 * answer; curl 7.88 has no such health check, so the kernel does it: keep-alive probes on an
 * idle socket, and TCP_USER_TIMEOUT for data (a watch's or a request's) left unacknowledged.
 * A silently dead connection then fails within about a minute instead of hanging the watches
 * multiplexed on it until the server's watch timeout. */
#define USER_TIMEOUT_MS      60000
/* The kernel cannot see a connection that is open but silent: a stalled proxy or load
 * balancer still acknowledges every byte and keep-alive probe. client-go finds it with an
 * HTTP/2 PING (after 30 s without a frame, dropped 15 s later without an answer); curl 7.88
 * has no such check, so a request that timed out is our ping: when nothing at all arrived from
 * the server during its whole life and for DEAD_AFTER_MS, the connection is closed and every
 * request on it fails, so watches are made again and writes are retried on a new one. */
#define DEAD_AFTER_MS        15000
#define MAX_STREAMS          250L /* streams we let the server open (pushes are refused) */
/* One connection to the API server. When its streams are all busy (kube-apiserver allows 100
 * per connection), further requests wait inside curl for a free stream; without this limit
 * curl 7.88 opens a new connection for nearly every waiting request, and a burst of a few
 * hundred requests becomes dozens of TLS handshakes. */
#define MAX_HOST_CONNECTIONS 1L

/* One per socket curl asks us to watch; freed in the uv_close callback. */
struct sock_ctx {
  uv_poll_t poll;
  curl_socket_t fd;
  kc_http *h;
  struct sock_ctx *prev, *next;
};

struct kc_http {
  uv_loop_t *loop;
  CURLM *multi;
  uv_timer_t timer;
  kc_config *cfg;
  char *user_agent;
  kc_http_req *reqs;    /* requests added to the multi handle */
  kc_http_req *pending; /* started from inside a curl callback; added afterwards */
  struct sock_ctx *socks;
  int in_curl;      /* depth of curl_multi_socket_action calls */
  int open_handles; /* libuv handles not yet closed (timer + polls) */
  bool closing;
  bool force_token;
  bool openssl; /* curl's TLS is OpenSSL's: on_ssl_ctx may touch its SSL_CTX */
  kc_http_stats stats;
  uint64_t last_rx_ns; /* when a byte of a response last arrived (or the connections began) */
  uint64_t dead_after_ns;
  bool reset_wanted; /* the connection is silent: close it after the current curl call */
  /* tls-server-name: the URL carries that name (SNI and certificate check) and curl connects
   * to the server's real host through connect_to; Host names the real host, as client-go. */
  char *url_base; /* the server URL requests are built on */
  struct curl_slist *connect_to;
  char *host_header;
  /* exec credential plugin: the cached credential, the plugin run in progress, and the
   * requests waiting for it (set up but not yet handed to curl). */
  kc_exec_cred cred;
  bool have_cred;
  uint64_t cred_gen; /* bumped for each new credential */
  kc_exec_run *exec_run;
  kc_http_req *waiting;
};

struct kc_http_req {
  kc_http *h;
  CURL *easy;
  struct curl_slist *headers;
  char *url;
  char *body;
  char *buf; /* response body */
  size_t len, cap, max;
  bool decided;      /* streaming: the status has been looked at */
  uint64_t cred_gen; /* the exec credential this request carries */
  uint64_t start_ns; /* when it was handed to curl */
  bool stream;       /* streaming: deliver chunks (2xx), else buffer an error body */
  int abort_err;
  kc_http_chunk_cb on_chunk;
  kc_http_done_cb on_done;
  void *data;
  kc_http_req *prev, *next;
  char errbuf[CURL_ERROR_SIZE];
};

static void maybe_free(kc_http *h) {
  if (h->closing && h->open_handles == 0) {
    free(h->url_base);
    curl_slist_free_all(h->connect_to);
    free(h->host_header);
    free(h->user_agent);
    free(h);
  }
}

static void on_handle_closed(uv_handle_t *handle) {
  kc_http *h;
  if (handle->type == UV_POLL) {
    struct sock_ctx *sc = container_of((uv_poll_t *)handle, struct sock_ctx, poll);
    h = sc->h;
    free(sc);
  } else {
    h = container_of((uv_timer_t *)handle, kc_http, timer);
  }
  h->open_handles--;
  maybe_free(h);
}

static void sock_unlink(kc_http *h, struct sock_ctx *sc) {
  if (sc->prev)
    sc->prev->next = sc->next;
  else
    h->socks = sc->next;
  if (sc->next)
    sc->next->prev = sc->prev;
  sc->prev = sc->next = NULL;
}

static void req_link(kc_http_req **head, kc_http_req *r) {
  r->prev = NULL;
  r->next = *head;
  if (*head)
    (*head)->prev = r;
  *head = r;
}

static void req_unlink(kc_http_req **head, kc_http_req *r) {
  if (r->prev)
    r->prev->next = r->next;
  else
    *head = r->next;
  if (r->next)
    r->next->prev = r->prev;
  r->prev = r->next = NULL;
}

static void req_free(kc_http_req *r) {
  if (!r)
    return;
  if (r->easy)
    curl_easy_cleanup(r->easy);
  curl_slist_free_all(r->headers); /* holds the Authorization header: never logged */
  free(r->url);
  free(r->body);
  free(r->buf);
  free(r);
}

int kc_http_err_from_curl(int code) {
  switch ((CURLcode)code) {
  case CURLE_OK:
    return 0;
  case CURLE_OUT_OF_MEMORY:
    return KC_ENOMEM;
  case CURLE_OPERATION_TIMEDOUT:
    return KC_ETIMEDOUT;
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_COULDNT_CONNECT:
    return KC_ECONNECT;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_CRL_BADFILE:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
  case CURLE_SSL_ENGINE_INITFAILED:
    return KC_ETLS;
  case CURLE_FILESIZE_EXCEEDED:
    return KC_ETOOBIG;
  case CURLE_ABORTED_BY_CALLBACK:
    return KC_ECANCELED;
  default:
    return KC_ETRANSPORT;
  }
}

static void check_done(kc_http *h);

static void finish(kc_http_req *r, CURLcode code) {
  kc_http *h = r->h;
  curl_multi_remove_handle(h->multi, r->easy);
  req_unlink(&h->reqs, r);
  h->stats.in_flight--;
  h->stats.finished++;

  kc_http_result res = {.err = 0,
                        .status = 0,
                        .body = "",
                        .retry_after_ms = -1,
                        .sent = true,
                        .detail = "",
                        .content_type = ""};
  long status = 0, conns = 0;
  curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &conns);
  h->stats.new_connections += (uint64_t)conns;
  long version = 0;
  if (curl_easy_getinfo(r->easy, CURLINFO_HTTP_VERSION, &version) == CURLE_OK &&
      version == CURL_HTTP_VERSION_2_0)
    h->stats.http2_responses++;
  if (code == CURLE_WRITE_ERROR && r->abort_err)
    res.err = r->abort_err;
  else
    res.err = kc_http_err_from_curl((int)code);
  if (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
      code == CURLE_COULDNT_RESOLVE_PROXY)
    res.sent = false;
  if (code == CURLE_OPERATION_TIMEDOUT && h->last_rx_ns <= r->start_ns &&
      uv_hrtime() - h->last_rx_ns >= h->dead_after_ns)
    h->reset_wanted = true;
  if (res.err == 0 || status > 0)
    res.status = status;
  /* client-go's exec round tripper: a 401 on the current credential runs the plugin again
   * (for the next request), however many requests saw that 401 at once. */
  if (status == 401 && h->cfg->exec && h->have_cred && r->cred_gen == h->cred_gen) {
    KC_V(2, "exec: 401 with the cached credential; the plugin runs again for the next request");
    kc_exec_cred_close(&h->cred);
    h->have_cred = false;
  }
  if (res.err)
    res.detail = r->errbuf[0] ? r->errbuf : curl_easy_strerror(code);
  if (status > 0) {
    curl_off_t ra = 0;
    if (curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
      res.retry_after_ms = (int64_t)ra * 1000;
#if LIBCURL_VERSION_NUM >= 0x075400 /* 7.84: "Retry-After: 0" is a header, not its absence */
    else {
      struct curl_header *hdr;
      if (curl_easy_header(r->easy, "Retry-After", 0, CURLH_HEADER, -1, &hdr) == CURLHE_OK)
        res.retry_after_ms = 0;
    }
#endif
  }
  res.content_type = kc_http_req_content_type(r);
  if (r->buf) {
    r->buf[r->len] = '\0';
    res.body = r->buf;
    res.body_len = r->len;
  }
  if (r->on_done)
    r->on_done(r, &res, r->data);
  req_free(r);
}

static void flush_pending(kc_http *h) {
  while (h->pending) {
    kc_http_req *r = h->pending;
    req_unlink(&h->pending, r);
    req_link(&h->reqs, r);
    r->start_ns = uv_hrtime();
    CURLMcode mc = curl_multi_add_handle(h->multi, r->easy);
    if (mc != CURLM_OK) {
      /* Report it like a transport failure: the caller was promised a callback. */
      snprintf(r->errbuf, sizeof(r->errbuf), "curl_multi_add_handle: %s", curl_multi_strerror(mc));
      finish(r, CURLE_FAILED_INIT);
    }
  }
}

static void reset_connections(kc_http *h);

static void socket_action(kc_http *h, curl_socket_t fd, int flags) {
  int running;
  h->in_curl++;
  curl_multi_socket_action(h->multi, fd, flags, &running);
  h->in_curl--;
  check_done(h);
  if (h->reset_wanted)
    reset_connections(h);
  flush_pending(h);
}

static void check_done(kc_http *h) {
  CURLMsg *msg;
  int left;
  while (h->multi && (msg = curl_multi_info_read(h->multi, &left))) {
    if (msg->msg != CURLMSG_DONE)
      continue;
    kc_http_req *r = NULL;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
    finish(r, msg->data.result);
  }
}

static void on_poll(uv_poll_t *p, int status, int events) {
  struct sock_ctx *sc = container_of(p, struct sock_ctx, poll);
  int flags = 0;
  if (status < 0)
    flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE)
    flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE)
    flags |= CURL_CSELECT_OUT;
  socket_action(sc->h, sc->fd, flags);
}

static void on_timer(uv_timer_t *t) {
  kc_http *h = container_of(t, kc_http, timer);
  socket_action(h, CURL_SOCKET_TIMEOUT, 0);
}

/* Ends a request that waited for the exec credential, reporting err to its owner. */
/* Answers r, already unlinked, with err and no response (sent: whether it went out), then
 * frees it. */
static void answer_error(kc_http_req *r, int err, bool sent, const char *detail,
                         bool no_credential) {
  kc_http_result res = {.err = err,
                        .body = "",
                        .content_type = "",
                        .retry_after_ms = -1,
                        .sent = sent,
                        .detail = detail,
                        .no_credential = no_credential};
  if (r->on_done)
    r->on_done(r, &res, r->data);
  req_free(r);
}

static void fail_waiting(kc_http *h, kc_http_req *r, int err, const char *detail,
                         bool no_credential) {
  req_unlink(&h->waiting, r);
  h->stats.in_flight--;
  h->stats.finished++;
  answer_error(r, err, false, detail, no_credential);
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
  kc_http *h = userp;
  struct sock_ctx *sc = socketp;
  if (what == CURL_POLL_REMOVE) {
    if (sc) {
      uv_poll_stop(&sc->poll);
      curl_multi_assign(h->multi, fd, NULL);
      sock_unlink(h, sc);
      uv_close((uv_handle_t *)&sc->poll, on_handle_closed);
    }
    return 0;
  }
  if (!sc) {
    sc = calloc(1, sizeof(*sc));
    if (!sc)
      return -1;
    if (uv_poll_init_socket(h->loop, &sc->poll, fd) != 0) {
      free(sc);
      return -1;
    }
    sc->fd = fd;
    sc->h = h;
    sc->next = h->socks;
    if (h->socks)
      h->socks->prev = sc;
    h->socks = sc;
    h->open_handles++;
    curl_multi_assign(h->multi, fd, sc);
  }
  int ev = 0;
  if (what & CURL_POLL_IN)
    ev |= UV_READABLE;
  if (what & CURL_POLL_OUT)
    ev |= UV_WRITABLE;
  return uv_poll_start(&sc->poll, ev, on_poll) == 0 ? 0 : -1;
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp) {
  kc_http *h = userp;
  /* curl forbids calling socket_action from here; a 0 ms timer runs it on the next turn. */
  if (timeout_ms < 0)
    uv_timer_stop(&h->timer);
  else
    uv_timer_start(&h->timer, on_timer, (uint64_t)timeout_ms, 0);
  return 0;
}

static CURLM *multi_new(kc_http *h) {
  CURLM *m = curl_multi_init();
  if (!m)
    return NULL;
  curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
  curl_multi_setopt(m, CURLMOPT_SOCKETDATA, h);
  curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, on_curl_timer);
  curl_multi_setopt(m, CURLMOPT_TIMERDATA, h);
  curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
  curl_multi_setopt(m, CURLMOPT_MAX_CONCURRENT_STREAMS, MAX_STREAMS);
  curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, MAX_HOST_CONNECTIONS);
  return m;
}

/* Stops watching the sockets of the current multi handle; the polls close asynchronously. */
static void close_polls(kc_http *h) {
  while (h->socks) {
    struct sock_ctx *sc = h->socks;
    sock_unlink(h, sc);
    uv_poll_stop(&sc->poll);
    uv_close((uv_handle_t *)&sc->poll, on_handle_closed);
  }
}

/* Closes every connection (a new multi handle takes the old one's place) and fails the
 * requests that were on them with KC_ETRANSPORT; what their callbacks start goes to the new
 * connection. Called outside curl only. */
static void reset_connections(kc_http *h) {
  CURLM *fresh = multi_new(h);
  h->reset_wanted = false;
  if (!fresh)
    return; /* out of memory: the next silent timeout tries again */
  uint64_t silent_ms = (uv_hrtime() - h->last_rx_ns) / 1000000;
  KC_WARN("http: nothing received from the API server for %llu ms and a request timed out: "
          "closing the connection and connecting again",
          (unsigned long long)silent_ms);
  h->stats.connection_resets++;
  kc_http_req *dead = h->reqs;
  h->reqs = NULL;
  for (kc_http_req *r = dead; r; r = r->next)
    curl_multi_remove_handle(h->multi, r->easy);
  close_polls(h);
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, NULL);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, NULL);
  curl_multi_cleanup(h->multi);
  uv_timer_stop(&h->timer);
  h->multi = fresh;
  h->last_rx_ns = uv_hrtime();
  char detail[128];
  snprintf(detail, sizeof(detail), "connection closed: nothing from the server for %llu ms",
           (unsigned long long)silent_ms);
  h->in_curl++; /* what the callbacks start waits in pending for the new handle */
  while (dead) {
    kc_http_req *r = dead;
    req_unlink(&dead, r);
    h->stats.in_flight--;
    h->stats.finished++;
    answer_error(r, KC_ETRANSPORT, true, detail, false);
  }
  h->in_curl--;
}

int kc_http_new(uv_loop_t *loop, kc_config *cfg, const char *user_agent, kc_http **out) {
  kc_http *h = calloc(1, sizeof(*h));
  if (!h)
    return KC_ENOMEM;
  h->loop = loop;
  h->cfg = cfg;
  h->user_agent = strdup(user_agent ? user_agent : "kiln/" KILN_VERSION);
  if (!h->user_agent)
    goto fail_ua;
  /* Reference-counted by curl; Kiln calls it from the loop thread only. */
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    goto fail_global;
  const curl_version_info_data *vi = curl_version_info(CURLVERSION_NOW);
  h->openssl = vi && vi->ssl_version && strncmp(vi->ssl_version, "OpenSSL/", 8) == 0;
  char *url = NULL, *connect_to = NULL, *host = NULL;
  if (kc_config_tls_target(cfg, &url, &connect_to, &host) != 0)
    goto fail_global_target;
  if (connect_to) {
    size_t n = strlen(host) + sizeof("Host: ");
    h->connect_to = curl_slist_append(NULL, connect_to);
    if ((h->host_header = malloc(n)))
      snprintf(h->host_header, n, "Host: %s", host);
    h->url_base = url;
    url = NULL;
  } else {
    h->url_base = strdup(cfg->server);
  }
  free(url);
  free(connect_to);
  free(host);
  if (!h->url_base || (cfg->tls_server_name && (!h->connect_to || !h->host_header)))
    goto fail_target;
  if (cfg->tls_server_name)
    KC_V(1, "connecting to %s with TLS server name %s", cfg->server, cfg->tls_server_name);
  h->multi = multi_new(h);
  if (!h->multi)
    goto fail_multi;
  if (uv_timer_init(loop, &h->timer) != 0)
    goto fail_timer;
  h->open_handles = 1;
  h->dead_after_ns = (uint64_t)DEAD_AFTER_MS * 1000000;
  h->last_rx_ns = uv_hrtime();
  *out = h;
  return 0;
fail_timer:
  curl_multi_cleanup(h->multi);
fail_multi:
fail_target:
  free(h->url_base);
  curl_slist_free_all(h->connect_to);
  free(h->host_header);
fail_global_target:
  curl_global_cleanup();
fail_global:
  free(h->user_agent);
fail_ua:
  free(h);
  return KC_ENOMEM;
}

void kc_http_free(kc_http *h) {
  if (!h)
    return;
  h->closing = true; /* an on_done below that starts a request gets KC_ECANCELED */
  kc_exec_cancel(h->exec_run);
  h->exec_run = NULL;
  while (h->waiting)
    fail_waiting(h, h->waiting, KC_ECANCELED, "transport closed", false);
  kc_exec_cred_close(&h->cred);
  h->have_cred = false;
  while (h->pending) {
    kc_http_req *r = h->pending;
    req_unlink(&h->pending, r);
    answer_error(r, KC_ECANCELED, false, "transport closed", false);
  }
  while (h->reqs) {
    kc_http_req *r = h->reqs;
    curl_multi_remove_handle(h->multi, r->easy);
    req_unlink(&h->reqs, r);
    h->stats.in_flight--;
    answer_error(r, KC_ECANCELED, false, "transport closed", false);
  }
  /* Stop curl from calling back while it tears down its connections; we close the polls. */
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, NULL);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, NULL);
  curl_multi_cleanup(h->multi);
  h->multi = NULL;
  curl_global_cleanup();
  close_polls(h);
  uv_timer_stop(&h->timer);
  uv_close((uv_handle_t *)&h->timer, on_handle_closed);
}

const char *kc_http_req_content_type(kc_http_req *req) {
  char *ct = NULL;
  if (curl_easy_getinfo(req->easy, CURLINFO_CONTENT_TYPE, &ct) != CURLE_OK || !ct)
    return "";
  return ct;
}

/* Any response header is a sign of life of the connection (a watch's, before its first event). */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata) {
  kc_http_req *r = userdata;
  (void)ptr;
  r->h->last_rx_ns = uv_hrtime();
  return size * nmemb;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
  kc_http_req *r = userdata;
  size_t n = size * nmemb;
  r->h->last_rx_ns = uv_hrtime();
  if (r->on_chunk && !r->decided) {
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    r->stream = status >= 200 && status < 300;
    r->decided = true;
    if (!r->stream)
      r->max = KC_HTTP_MAX_ERROR_BODY;
  }
  if (r->stream) {
    int rc = r->on_chunk(r, ptr, n, r->data);
    if (rc) {
      r->abort_err = rc;
      return 0; /* curl ends the transfer with CURLE_WRITE_ERROR */
    }
    return n;
  }
  if (n > r->max - r->len) {
    r->abort_err = KC_ETOOBIG;
    return 0;
  }
  if (r->len + n + 1 > r->cap) {
    size_t cap = r->cap ? r->cap : 16384;
    while (cap < r->len + n + 1)
      cap *= 2;
    if (cap > r->max + 1)
      cap = r->max + 1;
    char *nb = realloc(r->buf, cap);
    if (!nb) {
      r->abort_err = KC_ENOMEM;
      return 0;
    }
    r->buf = nb;
    r->cap = cap;
  }
  memcpy(r->buf + r->len, ptr, n);
  r->len += n;
  return n;
}

static int add_header(struct curl_slist **list, const char *name, const char *value) {
  size_t n = strlen(name) + strlen(value) + 3;
  char *line = malloc(n);
  if (!line)
    return KC_ENOMEM;
  snprintf(line, n, "%s: %s", name, value);
  struct curl_slist *nl = curl_slist_append(*list, line);
  /* The line may hold a token: wipe our copy (curl keeps its own). */
  memset(line, 0, n);
  free(line);
  if (!nl)
    return KC_ENOMEM;
  *list = nl;
  return 0;
}

static void set_pem(CURL *e, const kc_pem *p, CURLoption file_opt, CURLoption blob_opt) {
  if (p->data) {
    struct curl_blob blob = {.data = p->data, .len = p->len, .flags = CURL_BLOB_COPY};
    curl_easy_setopt(e, blob_opt, &blob);
  } else if (p->file) {
    curl_easy_setopt(e, file_opt, p->file);
  }
}

static int on_sockopt(void *data, curl_socket_t fd, curlsocktype purpose) {
  (void)data;
  if (purpose != CURLSOCKTYPE_IPCXN)
    return CURL_SOCKOPT_OK;
  int probes = KEEPALIVE_PROBES;
  unsigned int timeout = USER_TIMEOUT_MS;
  /* Best effort: a socket that refuses (not TCP, another OS) keeps curl's keep-alive. */
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
#ifdef TCP_USER_TIMEOUT
  (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof(timeout));
#else
  (void)timeout;
#endif
  return CURL_SOCKOPT_OK;
}

/* curl's OpenSSL backend sets SSL_MODE_RELEASE_BUFFERS: each TLS record read then
 * allocated a 17 KB buffer and freed it again, and glibc consolidated its fast bins for each
 * such request (perf of kiln-scheduler in the one-pod-Job bench: 6% of its CPU in
 * malloc_consolidate and the allocations under SSL_read). The buffers are kept instead:
 * about 34 KB per connection. */
static CURLcode on_ssl_ctx(CURL *e, void *ssl_ctx, void *ud) {
  (void)e;
  (void)ud;
  SSL_CTX_clear_mode((SSL_CTX *)ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
  return CURLE_OK;
}

static int setup_easy(kc_http *h, kc_http_req *r, const kc_http_spec *s) {
  CURL *e = r->easy;
  const kc_config *cfg = h->cfg;
  int rc;
  curl_easy_setopt(e, CURLOPT_URL, r->url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, r);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85 */
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
#else
  curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTPS | CURLPROTO_HTTP));
#endif
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  /* Wait for an existing connection to say whether it multiplexes rather than opening a
   * new one for each request started in the same loop turn. */
  curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, KEEPALIVE_S);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, KEEPALIVE_INTVL_S);
  curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, on_sockopt);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
  if (s->timeout_ms > 0)
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)s->timeout_ms);
  if (!cfg->disable_compression)
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* gzip for large LISTs */
  curl_easy_setopt(e, CURLOPT_USERAGENT, h->user_agent);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
  if (h->openssl)
    curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
  if (cfg->ca.data || cfg->ca.file) {
    /* Trust only the configured CA, as client-go does, not the system store as well. */
    curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
    set_pem(e, &cfg->ca, CURLOPT_CAINFO, CURLOPT_CAINFO_BLOB);
  }
  set_pem(e, &cfg->cert, CURLOPT_SSLCERT, CURLOPT_SSLCERT_BLOB);
  set_pem(e, &cfg->key, CURLOPT_SSLKEY, CURLOPT_SSLKEY_BLOB);
  if (cfg->proxy_url)
    curl_easy_setopt(e, CURLOPT_PROXY, cfg->proxy_url);
  if (h->connect_to) {
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, h->connect_to);
    struct curl_slist *hl = curl_slist_append(r->headers, h->host_header);
    if (!hl)
      return KC_ENOMEM;
    r->headers = hl;
  }
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, r);

  if ((rc = add_header(&r->headers, "Accept", s->accept ? s->accept : "application/json")))
    return rc;
  if (s->content_type && (rc = add_header(&r->headers, "Content-Type", s->content_type)))
    return rc;
  /* No "Expect: 100-continue" round trip on HTTP/1.1 uploads. */
  struct curl_slist *nl = curl_slist_append(r->headers, "Expect:");
  if (!nl)
    return KC_ENOMEM;
  r->headers = nl;
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);

  if (s->body) {
    r->body = malloc(s->body_len ? s->body_len : 1);
    if (!r->body)
      return KC_ENOMEM;
    memcpy(r->body, s->body, s->body_len);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->body_len);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
  }
  if (strcmp(s->method, "GET") == 0) {
    if (s->body)
      return KC_EINVAL;
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else if (strcmp(s->method, "POST") != 0 || !s->body) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, s->method);
  }
  return 0;
}

/* The credential part of a request: the bearer token (from the config or the exec plugin) and
 * a client certificate from the plugin. Done last, right before the request goes to curl. */
static int add_auth(kc_http *h, kc_http_req *r) {
  const char *token;
  if (h->cfg->exec) {
    token = h->cred.token;
    r->cred_gen = h->cred_gen;
    if (h->cred.cert) {
      struct curl_blob cert = {
          .data = h->cred.cert, .len = h->cred.cert_len, .flags = CURL_BLOB_COPY};
      struct curl_blob key = {.data = h->cred.key, .len = h->cred.key_len, .flags = CURL_BLOB_COPY};
      curl_easy_setopt(r->easy, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(r->easy, CURLOPT_SSLKEY_BLOB, &key);
    }
  } else {
    token = kc_config_token(h->cfg, uv_hrtime(), h->force_token);
    h->force_token = false;
  }
  if (token && token[0]) {
    size_t n = strlen(token) + 8;
    char *v = malloc(n);
    if (!v)
      return KC_ENOMEM;
    snprintf(v, n, "Bearer %s", token);
    int rc = add_header(&r->headers, "Authorization", v);
    memset(v, 0, n);
    free(v);
    if (rc)
      return rc;
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
  }
  return 0;
}

/* Hands a set-up request to curl, or to the pending list from inside a curl callback. */
static int submit(kc_http *h, kc_http_req *r) {
  if (h->in_curl) {
    /* curl refuses to add a handle from inside its own callbacks (a watch's chunk). */
    req_link(&h->pending, r);
    return 0;
  }
  req_link(&h->reqs, r);
  r->start_ns = uv_hrtime();
  CURLMcode mc = curl_multi_add_handle(h->multi, r->easy);
  if (mc != CURLM_OK) {
    req_unlink(&h->reqs, r);
    return mc == CURLM_OUT_OF_MEMORY ? KC_ENOMEM : KC_ETRANSPORT;
  }
  return 0;
}

static void on_exec_done(int rc, kc_exec_cred *cred, const char *msg, void *data) {
  kc_http *h = data;
  h->exec_run = NULL;
  if (rc) {
    /* The whole message once in the log (an install hint can be long), and to each waiting
     * request; the next request runs the plugin again, as client-go does. */
    KC_WARN("getting credentials: %s", msg);
    char detail[512];
    snprintf(detail, sizeof(detail), "getting credentials: %s", msg);
    while (h->waiting)
      fail_waiting(h, h->waiting, rc, detail, true);
    return;
  }
  kc_exec_cred_close(&h->cred);
  h->cred = *cred;
  memset(cred, 0, sizeof(*cred));
  h->have_cred = true;
  h->cred_gen++;
  KC_V(2, "exec: new credential (%s%s%s)", h->cred.token ? "token" : "",
       h->cred.token && h->cred.cert ? ", " : "", h->cred.cert ? "client certificate" : "");
  /* Oldest first (the list is built by pushing at the head). */
  kc_http_req *tail = h->waiting;
  while (tail && tail->next)
    tail = tail->next;
  while (tail) {
    kc_http_req *r = tail;
    tail = r->prev;
    req_unlink(&h->waiting, r);
    int err = add_auth(h, r);
    if (!err)
      err = submit(h, r);
    if (err) {
      req_link(&h->waiting, r);
      fail_waiting(h, r, err, "cannot start the request", false);
    }
  }
}

int kc_http_start(kc_http *h, const kc_http_spec *s, kc_http_req **out) {
  if (h->closing)
    return KC_ECANCELED;
  if (!s->method || !s->path || s->path[0] != '/' || !s->on_done)
    return KC_EINVAL;
  kc_http_req *r = calloc(1, sizeof(*r));
  if (!r)
    return KC_ENOMEM;
  r->h = h;
  r->on_chunk = s->on_chunk;
  r->on_done = s->on_done;
  r->data = s->data;
  r->max = s->max_body ? s->max_body : KC_HTTP_DEFAULT_MAX_BODY;
  size_t n = strlen(h->url_base) + strlen(s->path) + 1;
  int rc = KC_ENOMEM;
  if (!(r->url = malloc(n)))
    goto fail;
  snprintf(r->url, n, "%s%s", h->url_base, s->path);
  if (!(r->easy = curl_easy_init()))
    goto fail;
  if ((rc = setup_easy(h, r, s)))
    goto fail;
  if (h->cfg->exec && h->have_cred && kc_exec_cred_expired(&h->cred, kc_clock_wall_ms())) {
    KC_V(2, "exec: the credential expired; running the plugin again");
    kc_exec_cred_close(&h->cred);
    h->have_cred = false;
  }
  if (h->cfg->exec && !h->have_cred) {
    /* Wait for the plugin; one run serves every request that arrives meanwhile. */
    if (!h->exec_run && (rc = kc_exec_start(h->loop, h->cfg, on_exec_done, h, &h->exec_run)))
      goto fail;
    req_link(&h->waiting, r);
  } else {
    if ((rc = add_auth(h, r)) || (rc = submit(h, r)))
      goto fail;
  }
  h->stats.started++;
  h->stats.in_flight++;
  if (out)
    *out = r;
  return 0;
fail:
  req_free(r);
  return rc;
}

void kc_http_cancel(kc_http_req *r) {
  if (!r)
    return;
  kc_http *h = r->h;
  bool pending = false, waiting = false;
  for (kc_http_req *p = h->pending; p; p = p->next)
    if (p == r)
      pending = true;
  for (kc_http_req *p = h->waiting; p; p = p->next)
    if (p == r)
      waiting = true;
  if (pending) {
    req_unlink(&h->pending, r);
  } else if (waiting) {
    req_unlink(&h->waiting, r); /* the plugin run goes on: its credential is cached */
  } else {
    curl_multi_remove_handle(h->multi, r->easy);
    req_unlink(&h->reqs, r);
  }
  h->stats.in_flight--;
  h->stats.finished++;
  req_free(r);
}

void kc_http_refresh_token(kc_http *h) {
  h->force_token = true;
}

void kc_http_set_dead_after(kc_http *h, int64_t ms) {
  h->dead_after_ns = ms > 0 ? (uint64_t)ms * 1000000 : (uint64_t)DEAD_AFTER_MS * 1000000;
}

void kc_http_get_stats(const kc_http *h, kc_http_stats *st) {
  *st = h->stats;
}

uv_loop_t *kc_http_loop(const kc_http *h) {
  return h->loop;
}
