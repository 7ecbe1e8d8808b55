#include "kc_api.h"

#include "kc_container.h"
#include "kc_error.h"
#include "kc_json_lean.h"
#include "kc_log.h"
#include "kc_pb.h"
#include "kc_ratelimit.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef container_of
#endif

#define NS_PER_MS              1000000ull
#define BACKOFF_BASE_MS        500
#define BACKOFF_MAX_MS         8000
#define RETRY_AFTER_DEFAULT_MS 1000  /* client-go's artificial Retry-After */
#define RETRY_AFTER_MAX_MS     60000 /* a broken proxy must not park a call for hours */
#define CONFLICT_STEPS         5     /* retry.DefaultRetry */
#define CONFLICT_DELAY_MS      10.0
#define CONFLICT_JITTER        0.1

struct call;
struct rmw;

struct kc_client {
  uv_loop_t *loop;
  kc_http *http;
  kc_bucket bucket;
  kc_client_options opt;
  struct call *calls;
  struct rmw *rmws; /* read-modify-write loops, for kc_client_free */
  uint64_t rng;
  bool closing;
  kc_fence_fn fence; /* NULL: every write may go */
  void *fence_ud;
};

typedef enum { CALL_THROTTLED, CALL_BACKOFF, CALL_IN_FLIGHT } call_state;

struct call {
  kc_client *c;
  uv_timer_t timer; /* throttle and backoff waits; the call is freed in its close callback */
  kc_verb verb;
  call_state state;
  char *path;
  char *body;
  size_t body_len;
  char *ctype;  /* the body's content type; NULL: the verb's */
  char *accept; /* NULL: application/json */
  int64_t timeout_ms;
  int attempts;
  bool fenced;      /* a write that each attempt checks against the client's fence */
  bool unthrottled; /* the leader election's: no attempt waits for the token bucket */
  bool token_refreshed;
  bool discard_body;   /* kc_query.discard_body */
  bool managed_fields; /* kc_query.managed_fields */
  kc_http_req *req;
  kc_api_cb cb;
  void *data;
  struct call *prev, *next;
};

static const struct {
  const char *method;
  const char *content_type;
  bool idempotent;
} verbs[KC_VERB_LAST] = {
    [KC_GET] = {"GET", NULL, true},
    [KC_LIST] = {"GET", NULL, true},
    [KC_CREATE] = {"POST", "application/json", false},
    [KC_UPDATE] = {"PUT", "application/json", true},
    [KC_PATCH_MERGE] = {"PATCH", "application/merge-patch+json", true},
    /* A JSON patch may append to a list or test-and-replace: running it twice differs. */
    [KC_PATCH_JSON] = {"PATCH", "application/json-patch+json", false},
    [KC_PATCH_STRATEGIC] = {"PATCH", "application/strategic-merge-patch+json", true},
    [KC_APPLY] = {"PATCH", "application/apply-patch+yaml", true},
    [KC_DELETE] = {"DELETE", "application/json", true},
};

/* ---- a growable string for paths ---- */

typedef struct {
  char *s;
  size_t len, cap;
  int err;
} sbuf;

static void sb_addn(sbuf *b, const char *s, size_t n) {
  if (b->err)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 128;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *ns = realloc(b->s, cap);
    if (!ns) {
      b->err = KC_ENOMEM;
      return;
    }
    b->s = ns;
    b->cap = cap;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void sb_add(sbuf *b, const char *s) {
  sb_addn(b, s, strlen(s));
}

static void sb_param(sbuf *b, bool *first, const char *key, const char *value) {
  sb_add(b, *first ? "?" : "&");
  *first = false;
  sb_add(b, key);
  sb_add(b, "=");
  char *esc = curl_easy_escape(NULL, value, 0);
  if (!esc) {
    b->err = KC_ENOMEM;
    return;
  }
  sb_add(b, esc);
  curl_free(esc);
}

/* A path segment must be a plausible Kubernetes name: never empty, no separators. */
static bool segment_ok(const char *s) {
  if (!s || !s[0] || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
    return false;
  return strpbrk(s, "/?#%& \t\r\n") == NULL;
}

int kc_api_path(kc_verb verb, const kc_ref *ref, const kc_query *q, bool watch, char **out) {
  static const kc_query none = {0};
  if (!q)
    q = &none;
  if (verb >= KC_VERB_LAST || !segment_ok(ref->version) || !segment_ok(ref->resource))
    return KC_EINVAL;
  /* A CREATE names its object only when it posts to a subresource (pods/NAME/binding). */
  bool named = verb != KC_LIST && (verb != KC_CREATE || ref->subresource != NULL);
  if (named != (ref->name != NULL) || (ref->name && !segment_ok(ref->name)))
    return KC_EINVAL;
  if ((ref->namespace && !segment_ok(ref->namespace)) ||
      (ref->subresource && !segment_ok(ref->subresource)) ||
      (ref->group && ref->group[0] && !segment_ok(ref->group)))
    return KC_EINVAL;
  if (verb == KC_APPLY && !q->field_manager)
    return KC_EINVAL; /* the server requires it; fail before spending a request */
  sbuf b = {0};
  if (ref->group && ref->group[0]) {
    sb_add(&b, "/apis/");
    sb_add(&b, ref->group);
  } else {
    sb_add(&b, "/api");
  }
  sb_add(&b, "/");
  sb_add(&b, ref->version);
  if (ref->namespace) {
    sb_add(&b, "/namespaces/");
    sb_add(&b, ref->namespace);
  }
  sb_add(&b, "/");
  sb_add(&b, ref->resource);
  if (ref->name) {
    sb_add(&b, "/");
    sb_add(&b, ref->name);
  }
  if (ref->subresource) {
    sb_add(&b, "/");
    sb_add(&b, ref->subresource);
  }
  bool first = true;
  char num[32];
  if (q->label_selector)
    sb_param(&b, &first, "labelSelector", q->label_selector);
  if (q->field_selector)
    sb_param(&b, &first, "fieldSelector", q->field_selector);
  if (q->limit > 0) {
    snprintf(num, sizeof(num), "%ld", q->limit);
    sb_param(&b, &first, "limit", num);
  }
  if (q->continue_token)
    sb_param(&b, &first, "continue", q->continue_token);
  if (q->resource_version)
    sb_param(&b, &first, "resourceVersion", q->resource_version);
  if (q->resource_version_match)
    sb_param(&b, &first, "resourceVersionMatch", q->resource_version_match);
  if (q->timeout_seconds > 0) {
    snprintf(num, sizeof(num), "%ld", q->timeout_seconds);
    sb_param(&b, &first, "timeoutSeconds", num);
  }
  if (watch) {
    sb_param(&b, &first, "watch", "1");
    sb_param(&b, &first, "allowWatchBookmarks", "true");
  }
  if (q->dry_run)
    sb_param(&b, &first, "dryRun", "All");
  if (q->field_manager)
    sb_param(&b, &first, "fieldManager", q->field_manager);
  if (verb == KC_APPLY && q->force)
    sb_param(&b, &first, "force", "true");
  if (b.err) {
    free(b.s);
    return b.err;
  }
  *out = b.s;
  return 0;
}

/* ---- Status ---- */

/* Copies s into dst, replacing control characters so that a hostile body cannot forge log
 * lines, and truncating. */
static void copy_clean(char *dst, size_t cap, const char *s, size_t n) {
  size_t j = 0;
  for (size_t i = 0; i < n && j + 1 < cap; i++) {
    unsigned char ch = (unsigned char)s[i];
    dst[j++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
  }
  dst[j] = '\0';
}

/* A protobuf Status body into st; false when body is not one. */
static bool status_pb(const char *body, size_t len, kc_status *st) {
  K8s__Unknown *u = NULL;
  int32_t code = 0;
  char msg[sizeof(st->message)];
  bool ok = kc_pb_unwrap(body, len, &u, NULL, 0) == 0 && u->type_meta && u->type_meta->kind &&
            strcmp(u->type_meta->kind, "Status") == 0 &&
            kc_pb_status(u->has_raw ? u->raw.data : NULL, u->has_raw ? u->raw.len : 0, &code,
                         st->reason, sizeof(st->reason), msg, sizeof(msg)) == 0;
  kc_pb_free(u);
  if (!ok)
    return false;
  copy_clean(st->reason, sizeof(st->reason), st->reason, strlen(st->reason));
  if (code > 0)
    st->code = code;
  st->err = st->reason[0] ? kc_err_from_reason(st->reason) : KC_EHTTP;
  if (st->err == KC_EHTTP)
    st->err = kc_err_from_http(st->code);
  if (msg[0])
    copy_clean(st->message, sizeof(st->message), msg, strlen(msg));
  else
    snprintf(st->message, sizeof(st->message),
             "the server responded with the status code %ld but did not return more information",
             st->code);
  if (st->err == KC_EHTTP && st->code >= 500)
    st->err = KC_EINTERNAL;
  return true;
}

int kc_status_parse(long http_status, const char *body, size_t len, kc_status *st, json_t **obj) {
  memset(st, 0, sizeof(*st));
  st->code = http_status;
  if (obj)
    *obj = NULL;
  if (kc_pb_is_envelope(body, len) && status_pb(body, len, st))
    return st->err;
  json_t *root = body && len ? json_loadb(body, len, 0, NULL) : NULL;
  const char *kind = json_string_value(json_object_get(root, "kind"));
  if (root && json_is_object(root) && kind && strcmp(kind, "Status") == 0) {
    const char *reason = json_string_value(json_object_get(root, "reason"));
    const char *msg = json_string_value(json_object_get(root, "message"));
    json_t *code = json_object_get(root, "code");
    if (json_is_integer(code) && json_integer_value(code) > 0)
      st->code = (long)json_integer_value(code);
    if (reason)
      copy_clean(st->reason, sizeof(st->reason), reason, strlen(reason));
    st->err = reason && reason[0] ? kc_err_from_reason(reason) : KC_EHTTP;
    if (st->err == KC_EHTTP)
      st->err = kc_err_from_http(st->code);
    if (msg && msg[0])
      copy_clean(st->message, sizeof(st->message), msg, strlen(msg));
    else
      snprintf(st->message, sizeof(st->message),
               "the server responded with the status code %ld but did not return more "
               "information",
               st->code);
    if (obj)
      *obj = root;
    else
      json_decref(root);
  } else {
    json_decref(root);
    st->err = kc_err_from_http(http_status);
    if (st->err == 0) /* a 2xx is not a failure; the caller should not be here */
      st->err = KC_EHTTP;
    int n = snprintf(st->message, sizeof(st->message),
                     "the server responded with the status "
                     "code %ld",
                     http_status);
    if (len && n > 0 && (size_t)n + 3 < sizeof(st->message)) {
      memcpy(st->message + n, ": ", 3);
      copy_clean(st->message + n + 2, sizeof(st->message) - (size_t)n - 2, body,
                 len < 256 ? len : 256);
    }
  }
  if (st->err == KC_EHTTP && st->code >= 500)
    st->err = KC_EINTERNAL;
  return st->err;
}

/* ---- client ---- */

static double rand01(kc_client *c) {
  c->rng ^= c->rng << 13;
  c->rng ^= c->rng >> 7;
  c->rng ^= c->rng << 17;
  return (double)(c->rng >> 11) / (double)(1ull << 53);
}

int kc_client_new(uv_loop_t *loop, kc_config *cfg, const kc_client_options *opt, kc_client **out) {
  kc_client *c = calloc(1, sizeof(*c));
  if (!c)
    return KC_ENOMEM;
  c->loop = loop;
  c->opt = *opt;
  if (c->opt.max_retries < 0)
    c->opt.max_retries = 0;
  if (c->opt.timeout_ms <= 0)
    c->opt.timeout_ms = 60000;
  c->rng = uv_hrtime() | 1;
  kc_bucket_init(&c->bucket, opt->qps, opt->burst, uv_hrtime());
  int rc = kc_http_new(loop, cfg, opt->user_agent, &c->http);
  if (rc) {
    free(c);
    return rc;
  }
  *out = c;
  return 0;
}

void kc_client_set_fence(kc_client *c, kc_fence_fn fence, void *ud) {
  c->fence = fence;
  c->fence_ud = ud;
}

kc_http *kc_client_http(kc_client *c) {
  return c->http;
}

uint64_t kc_client_reserve(kc_client *c) {
  return kc_bucket_reserve(&c->bucket, uv_hrtime());
}

static void call_closed(uv_handle_t *h) {
  struct call *k = container_of((uv_timer_t *)h, struct call, timer);
  free(k->path);
  free(k->body);
  free(k->accept);
  free(k->ctype);
  free(k);
}

static void call_unlink(struct call *k) {
  kc_client *c = k->c;
  if (k->prev)
    k->prev->next = k->next;
  else if (c->calls == k)
    c->calls = k->next;
  if (k->next)
    k->next->prev = k->prev;
  k->prev = k->next = NULL;
}

/* Delivers the result and releases the call. */
static void complete(struct call *k, const kc_api_result *res) {
  call_unlink(k);
  uv_timer_stop(&k->timer);
  k->cb(res, k->data);
  uv_close((uv_handle_t *)&k->timer, call_closed);
}

static void complete_err(struct call *k, int err, const char *message) {
  kc_api_result res = {.err = err, .reason = "", .message = message, .attempts = k->attempts};
  complete(k, &res);
}

static void on_http_done(kc_http_req *req, const kc_http_result *hr, void *data);

static void send_now(struct call *k) {
  kc_client *c = k->c;
  kc_http_spec spec = {
      .method = verbs[k->verb].method,
      .path = k->path,
      .content_type = !k->body   ? NULL
                      : k->ctype ? k->ctype
                                 : verbs[k->verb].content_type,
      .accept = k->accept,
      .body = k->body,
      .body_len = k->body_len,
      .timeout_ms = k->timeout_ms,
      .on_done = on_http_done,
      .data = k,
  };
  /* Checked here, at each attempt, and not only when the call was made: a write may wait for
   * the token bucket or a retry (a 429's Retry-After) past the end of the lease. */
  if (k->fenced && c->fence && c->fence(c->fence_ud) != 0) {
    KC_V(2, "%s %s: not sent, this replica no longer holds the lease", spec.method, k->path);
    complete_err(k, KC_ENOTLEADER, "not sent: this replica no longer holds the lease");
    return;
  }
  k->attempts++;
  k->state = CALL_IN_FLIGHT;
  int rc = kc_http_start(c->http, &spec, &k->req);
  if (rc) {
    k->req = NULL;
    complete_err(k, rc, "cannot start the request");
  }
}

static void on_timer(uv_timer_t *t);

/* Every attempt, retries included, waits for a token as client-go's throttle does. */
static void throttle_then_send(struct call *k) {
  uint64_t wait = k->unthrottled ? 0 : kc_client_reserve(k->c);
  if (wait == 0) {
    send_now(k);
    return;
  }
  k->state = CALL_THROTTLED;
  uv_timer_start(&k->timer, on_timer, (wait + NS_PER_MS - 1) / NS_PER_MS, 0);
}

static void on_timer(uv_timer_t *t) {
  struct call *k = container_of(t, struct call, timer);
  if (k->state == CALL_BACKOFF)
    throttle_then_send(k);
  else
    send_now(k);
}

/* The delay before retrying, or -1 not to retry (the rule is in kc_api.h). */
static int64_t retry_delay(struct call *k, const kc_http_result *hr) {
  kc_client *c = k->c;
  bool idem = verbs[k->verb].idempotent;
  if (k->attempts > c->opt.max_retries)
    return -1;
  /* A failed credential plugin is not retried here (client-go neither): a hung one would
   * cost its timeout per attempt. The next call runs it again. */
  if (hr->no_credential)
    return -1;
  int64_t backoff = BACKOFF_BASE_MS << (k->attempts > 5 ? 4 : k->attempts - 1);
  if (backoff > BACKOFF_MAX_MS)
    backoff = BACKOFF_MAX_MS;
  backoff += (int64_t)((double)backoff * 0.1 * rand01(c));
  if (hr->err) {
    if (!hr->sent)
      return backoff;
    return hr->err == KC_ETRANSPORT && idem ? backoff : -1;
  }
  long s = hr->status;
  int64_t ra = hr->retry_after_ms;
  if (ra > RETRY_AFTER_MAX_MS)
    ra = RETRY_AFTER_MAX_MS;
  if (s == 429) {
    /* The server sends every throttled client the same Retry-After (1 s): retried exactly
     * then, they all arrive together again and most are refused again. Up to half as long
     * again spreads them out (the server asked for at least that long). */
    int64_t wait = ra >= 0 ? ra : RETRY_AFTER_DEFAULT_MS;
    return wait + (int64_t)((double)wait * 0.5 * rand01(c));
  }
  if (s >= 500 && s <= 599) {
    if (ra >= 0)
      return ra;
    return idem ? backoff : -1;
  }
  return -1;
}

static void on_http_done(kc_http_req *req, const kc_http_result *hr, void *data) {
  struct call *k = data;
  kc_client *c = k->c;
  k->req = NULL;
  if (c->closing) {
    complete_err(k, KC_ECANCELED, "client closed");
    return;
  }
  bool ok = hr->err == 0 && hr->status >= 200 && hr->status < 300;
  if (!ok) {
    if (hr->err == 0 && hr->status == 401 && !k->token_refreshed) {
      k->token_refreshed = true;
      kc_http_refresh_token(c->http);
      KC_V(2, "%s %s: 401, retrying once with a re-read token", verbs[k->verb].method, k->path);
      throttle_then_send(k);
      return;
    }
    int64_t delay = retry_delay(k, hr);
    if (delay >= 0) {
      KC_V(2, "%s %s: attempt %d failed (%s, HTTP %ld), retrying in %lld ms", verbs[k->verb].method,
           k->path, k->attempts, hr->err ? kc_strerror(hr->err) : "ok", hr->status,
           (long long)delay);
      k->state = CALL_BACKOFF;
      uv_timer_start(&k->timer, on_timer, (uint64_t)delay, 0);
      return;
    }
  }
  kc_api_result res = {
      .err = 0, .status = hr->status, .reason = "", .message = "", .attempts = k->attempts};
  json_t *obj = NULL;
  kc_status st;
  char msg[768]; /* room for an exec plugin's install hint */
  if (hr->err) {
    res.err = hr->err;
    snprintf(msg, sizeof(msg), "%s %s: %s", verbs[k->verb].method, k->path, hr->detail);
    res.message = msg;
  } else if (ok && hr->content_type &&
             strncmp(hr->content_type, KC_PB_CONTENT_TYPE, strlen(KC_PB_CONTENT_TYPE)) == 0) {
    res.body = (const uint8_t *)hr->body;
    res.body_len = hr->body_len;
  } else if (ok) {
    if (hr->body_len && !k->discard_body) {
      json_error_t je;
      obj = k->managed_fields ? json_loadb(hr->body, hr->body_len, 0, &je)
                              : kc_json_lean_loadb(hr->body, hr->body_len, 0, &je);
      if (!obj) {
        res.err = KC_EPARSE;
        snprintf(msg, sizeof(msg), "decoding the response: invalid JSON at byte %d: %s",
                 je.position, je.text);
        res.message = msg;
      }
    }
  } else {
    res.err = kc_status_parse(hr->status, hr->body, hr->body_len, &st, &obj);
    res.reason = st.reason;
    res.message = st.message;
  }
  res.obj = obj;
  complete(k, &res);
  json_decref(obj);
}

static int delete_body(const kc_query *q, json_t **out) {
  *out = NULL;
  if (!q->propagation_policy && !q->precondition_uid && !q->precondition_resource_version)
    return 0;
  json_t *o = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
  if (!o)
    return KC_ENOMEM;
  if (q->propagation_policy &&
      json_object_set_new(o, "propagationPolicy", json_string(q->propagation_policy)))
    goto fail;
  if (q->precondition_uid || q->precondition_resource_version) {
    json_t *p = json_object();
    if (!p || json_object_set_new(o, "preconditions", p))
      goto fail;
    if (q->precondition_uid && json_object_set_new(p, "uid", json_string(q->precondition_uid)))
      goto fail;
    if (q->precondition_resource_version &&
        json_object_set_new(p, "resourceVersion", json_string(q->precondition_resource_version)))
      goto fail;
  }
  *out = o;
  return 0;
fail:
  json_decref(o);
  return KC_ENOMEM;
}

/* Queues k (its body already set) for its first attempt; frees it on failure. */
static int call_start(kc_client *c, kc_verb verb, const kc_ref *ref, const kc_query *q,
                      struct call *k, kc_api_cb cb, void *data) {
  int rc = kc_api_path(verb, ref, q, false, &k->path);
  if (rc == 0 && q->accept && !(k->accept = strdup(q->accept)))
    rc = KC_ENOMEM;
  if (rc == 0 && uv_timer_init(c->loop, &k->timer) != 0)
    rc = KC_ENOMEM;
  if (rc) {
    free(k->path);
    free(k->body);
    free(k->accept);
    free(k->ctype);
    free(k);
    return rc;
  }
  k->c = c;
  k->verb = verb;
  k->cb = cb;
  k->data = data;
  k->timeout_ms = q->timeout_ms > 0 ? q->timeout_ms : c->opt.timeout_ms;
  k->fenced = verb != KC_GET && verb != KC_LIST && !q->leader_election;
  k->unthrottled = q->leader_election;
  k->discard_body = q->discard_body;
  k->managed_fields = q->managed_fields;
  k->next = c->calls;
  if (c->calls)
    c->calls->prev = k;
  c->calls = k;
  /* Even without a wait the send happens on the next loop turn, so that a failure to start
   * reaches cb from the loop and never from inside this function. */
  uint64_t wait = k->unthrottled ? 0 : kc_client_reserve(c);
  k->state = CALL_THROTTLED;
  uv_timer_start(&k->timer, on_timer, (wait + NS_PER_MS - 1) / NS_PER_MS, 0);
  return 0;
}

int kc_api_call(kc_client *c, kc_verb verb, const kc_ref *ref, const kc_query *q, json_t *body,
                kc_api_cb cb, void *data) {
  static const kc_query none = {0};
  if (!q)
    q = &none;
  if (c->closing)
    return KC_ECANCELED;
  if (!cb || verb >= KC_VERB_LAST)
    return KC_EINVAL;
  bool wants_body = verb != KC_GET && verb != KC_LIST && verb != KC_DELETE;
  if (wants_body != (body != NULL))
    return KC_EINVAL;
  if (verb == KC_PATCH_JSON ? !json_is_array(body) : (body && !json_is_object(body)))
    return KC_EINVAL;
  struct call *k = calloc(1, sizeof(*k));
  if (!k)
    return KC_ENOMEM;
  json_t *del = NULL;
  int rc = verb == KC_DELETE ? delete_body(q, &del) : 0;
  json_t *payload = del ? del : body;
  if (rc == 0 && payload) {
    /* JSON is YAML, so the apply content type takes the same bytes. */
    k->body = json_dumps(payload, JSON_COMPACT);
    if (!k->body)
      rc = KC_ENOMEM;
    else
      k->body_len = strlen(k->body);
  }
  json_decref(del);
  if (rc) {
    free(k);
    return rc;
  }
  return call_start(c, verb, ref, q, k, cb, data);
}

int kc_api_call_raw(kc_client *c, kc_verb verb, const kc_ref *ref, const kc_query *q,
                    const void *body, size_t len, const char *content_type, kc_api_cb cb,
                    void *data) {
  static const kc_query none = {0};
  if (!q)
    q = &none;
  if (c->closing)
    return KC_ECANCELED;
  if (!cb || !body || !content_type || (verb != KC_CREATE && verb != KC_UPDATE))
    return KC_EINVAL;
  struct call *k = calloc(1, sizeof(*k));
  if (!k)
    return KC_ENOMEM;
  k->body = malloc(len ? len : 1);
  k->ctype = strdup(content_type);
  if (!k->body || !k->ctype) {
    free(k->body);
    free(k->ctype);
    free(k);
    return KC_ENOMEM;
  }
  memcpy(k->body, body, len);
  k->body_len = len;
  return call_start(c, verb, ref, q, k, cb, data);
}

static void rmw_cancel_all(kc_client *c);

void kc_client_free(kc_client *c) {
  if (!c)
    return;
  c->closing = true;
  rmw_cancel_all(c);
  while (c->calls) {
    struct call *k = c->calls;
    if (k->req) {
      kc_http_cancel(k->req);
      k->req = NULL;
    }
    complete_err(k, KC_ECANCELED, "client closed");
  }
  kc_http_free(c->http);
  free(c);
}

/* ---- read-modify-write with retry on conflict ---- */

struct rmw {
  kc_client *c;
  uv_timer_t timer;
  char *s[6]; /* group, version, resource, namespace, name, subresource */
  char *field_manager;
  bool dry_run;
  kc_mutate_fn mutate;
  kc_api_cb cb;
  void *data;
  int tries;
  struct rmw *prev, *next;
};

static void rmw_closed(uv_handle_t *h) {
  struct rmw *m = container_of((uv_timer_t *)h, struct rmw, timer);
  for (int i = 0; i < 6; i++)
    free(m->s[i]);
  free(m->field_manager);
  free(m);
}

static void rmw_ref(const struct rmw *m, kc_ref *ref, kc_query *q) {
  *ref = (kc_ref){m->s[0], m->s[1], m->s[2], m->s[3], m->s[4], m->s[5]};
  *q = (kc_query){.field_manager = m->field_manager, .dry_run = m->dry_run};
}

static void rmw_finish(struct rmw *m, const kc_api_result *res) {
  kc_client *c = m->c;
  if (m->prev)
    m->prev->next = m->next;
  else if (c->rmws == m)
    c->rmws = m->next;
  if (m->next)
    m->next->prev = m->prev;
  m->prev = m->next = NULL;
  uv_timer_stop(&m->timer);
  m->cb(res, m->data);
  uv_close((uv_handle_t *)&m->timer, rmw_closed);
}

static void rmw_get(struct rmw *m);

static void rmw_on_timer(uv_timer_t *t) {
  rmw_get(container_of(t, struct rmw, timer));
}

static void rmw_on_put(const kc_api_result *res, void *data) {
  struct rmw *m = data;
  if (res->err == KC_ECONFLICT && m->tries < CONFLICT_STEPS && !m->c->closing) {
    double ms = CONFLICT_DELAY_MS * (1.0 + CONFLICT_JITTER * rand01(m->c));
    KC_V(3, "update conflicted (try %d of %d), re-reading: %s", m->tries, CONFLICT_STEPS,
         res->message);
    uv_timer_start(&m->timer, rmw_on_timer, (uint64_t)(ms + 0.5), 0);
    return;
  }
  rmw_finish(m, res);
}

static void rmw_on_get(const kc_api_result *res, void *data) {
  struct rmw *m = data;
  if (res->err || !json_is_object(res->obj)) {
    kc_api_result r = *res;
    if (!r.err) {
      r.err = KC_EPARSE;
      r.message = "the GET response is not an object";
    }
    rmw_finish(m, &r);
    return;
  }
  int rc = m->mutate(res->obj, m->data);
  if (rc == 0) {
    kc_ref ref;
    kc_query q;
    rmw_ref(m, &ref, &q);
    rc = kc_api_call(m->c, KC_UPDATE, &ref, &q, res->obj, rmw_on_put, m);
    if (rc == 0)
      return;
  }
  kc_api_result r = {.err = rc,
                     .status = res->status,
                     .obj = res->obj,
                     .reason = "",
                     .message = rc < 0 ? kc_strerror(rc) : "",
                     .attempts = res->attempts};
  rmw_finish(m, &r);
}

static void rmw_get(struct rmw *m) {
  kc_ref ref;
  kc_query q;
  rmw_ref(m, &ref, &q);
  m->tries++;
  q.field_manager = NULL; /* GET takes no fieldManager */
  q.dry_run = false;
  int rc = kc_api_call(m->c, KC_GET, &ref, &q, NULL, rmw_on_get, m);
  if (rc) {
    kc_api_result r = {.err = rc, .reason = "", .message = kc_strerror(rc)};
    rmw_finish(m, &r);
  }
}

int kc_api_update_retry(kc_client *c, const kc_ref *ref, const kc_query *q, kc_mutate_fn mutate,
                        kc_api_cb cb, void *data) {
  if (!mutate || !cb || !ref->name)
    return KC_EINVAL;
  char *probe;
  int rc = kc_api_path(KC_UPDATE, ref, q, false, &probe);
  if (rc)
    return rc;
  free(probe);
  struct rmw *m = calloc(1, sizeof(*m));
  if (!m)
    return KC_ENOMEM;
  const char *src[6] = {ref->group,     ref->version, ref->resource,
                        ref->namespace, ref->name,    ref->subresource};
  for (int i = 0; i < 6; i++)
    if (src[i] && !(m->s[i] = strdup(src[i])))
      goto nomem;
  if (q && q->field_manager && !(m->field_manager = strdup(q->field_manager)))
    goto nomem;
  if (uv_timer_init(c->loop, &m->timer) != 0)
    goto nomem;
  m->c = c;
  m->dry_run = q && q->dry_run;
  m->mutate = mutate;
  m->cb = cb;
  m->data = data;
  kc_ref r;
  kc_query qq;
  rmw_ref(m, &r, &qq);
  qq.field_manager = NULL;
  qq.dry_run = false;
  m->tries = 1;
  rc = kc_api_call(c, KC_GET, &r, &qq, NULL, rmw_on_get, m);
  if (rc) {
    uv_close((uv_handle_t *)&m->timer, rmw_closed);
    return rc;
  }
  m->next = c->rmws;
  if (c->rmws)
    c->rmws->prev = m;
  c->rmws = m;
  return 0;
nomem:
  for (int i = 0; i < 6; i++)
    free(m->s[i]);
  free(m->field_manager);
  free(m);
  return KC_ENOMEM;
}

/* Ends loops waiting between tries; those with a call in flight end through that call. */
static void rmw_cancel_all(kc_client *c) {
  struct rmw *m = c->rmws, *next;
  for (; m; m = next) {
    next = m->next;
    if (uv_is_active((uv_handle_t *)&m->timer)) {
      kc_api_result r = {.err = KC_ECANCELED, .reason = "", .message = "client closed"};
      rmw_finish(m, &r);
    }
  }
}
