/* The request layer: Kubernetes REST calls by group/version/resource on top of kc_http, with
 * client-go's client-side token bucket (--kube-api-qps/--kube-api-burst), retries, and the
 * metav1.Status of a failed call mapped into kc_error.h codes.
 *
 * Retry rule (client-go's, made explicit; see kc_api.c retry_delay):
 *  - 429 TooManyRequests: every verb (the server rejected the request before running it),
 *    after Retry-After (1 s when absent) plus up to half of it again, at random, so that
 *    clients throttled together do not all come back together.
 *  - 5xx with a Retry-After header: every verb, after Retry-After (client-go's checkWait).
 *  - 5xx without Retry-After, and a connection lost after the request was sent: idempotent
 *    verbs only (GET, LIST, UPDATE, DELETE, APPLY, merge and strategic merge patch; not CREATE
 *    nor JSON patch), with backoff 500 ms doubling to 8 s.
 *  - A connection that could not be made: every verb (nothing was sent).
 *  - 401: once, after re-reading the token file (a rotated token) or with the credential an
 *    exec plugin gives when run again.
 *  - A failed exec credential plugin: never (nothing was sent; the next call runs it again).
 *  - Timeouts, TLS errors, other 4xx: never.
 * At most max_retries retries (client-go: 10). Every attempt takes a token from the bucket.
 *
 * Everything runs on the loop thread; a callback is never called from inside the function
 * that started the call. */
#ifndef KC_API_H
#define KC_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "kc_config.h"
#include "kc_flags.h"
#include "kc_http.h"

typedef struct {
  double qps; /* <= 0: no client-side limit */
  int burst;
  int max_retries;        /* default 10 */
  int64_t timeout_ms;     /* per attempt; default 60 s */
  const char *user_agent; /* borrowed; NULL: "kiln/<version>" */
} kc_client_options;

/* Volcano's defaults: the controller 50/100, the scheduler 2000/2000. */
#define KC_CLIENT_OPTIONS_INIT(qps_, burst_)                                                       \
  { .qps = (qps_), .burst = (burst_), .max_retries = 10, .timeout_ms = 60000, .user_agent = NULL }

/* Flag rows for kc_client_options (expand inside a kc_flag array); the defaults are the help
 * text only, the values come from KC_CLIENT_OPTIONS_INIT. */
/* clang-format off */
#define KC_CLIENT_FLAGS(o, qps_def, burst_def)                                                     \
  {"kube-api-qps", KC_FLAG_DOUBLE, &(o)->qps,                                                      \
   "QPS to use while talking with kubernetes apiserver", qps_def, NULL, false, NULL},              \
  {"kube-api-burst", KC_FLAG_INT, &(o)->burst,                                                     \
   "Burst to use while talking with kubernetes apiserver", burst_def, NULL, false, NULL}
/* clang-format on */

typedef enum {
  KC_GET,
  KC_LIST,
  KC_CREATE,          /* POST */
  KC_UPDATE,          /* PUT */
  KC_PATCH_MERGE,     /* application/merge-patch+json */
  KC_PATCH_JSON,      /* application/json-patch+json */
  KC_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (built-in types only) */
  KC_APPLY,           /* server-side apply: application/apply-patch+yaml, needs field_manager */
  KC_DELETE,
  KC_VERB_LAST
} kc_verb;

/* What to address. Strings are borrowed for the duration of the call that takes them. */
typedef struct {
  const char *group;       /* NULL or "" for the core group */
  const char *version;     /* "v1" */
  const char *resource;    /* plural: "configmaps" */
  const char *namespace;   /* NULL: cluster-scoped, or all namespaces for a LIST */
  const char *name;        /* NULL for LIST and CREATE (but CREATE of a subresource) */
  const char *subresource; /* "status", or NULL */
} kc_ref;

/* Optional parameters; zero means unset. Strings are borrowed like kc_ref's. */
typedef struct {
  const char *label_selector;
  const char *field_selector;
  long limit;
  const char *continue_token;
  const char *resource_version;
  const char *resource_version_match;
  long timeout_seconds;
  bool dry_run; /* dryRun=All */
  const char *field_manager;
  bool force;                     /* APPLY: take ownership of conflicting fields */
  const char *propagation_policy; /* DELETE: Orphan, Background, Foreground */
  const char *precondition_uid;   /* DELETE preconditions */
  const char *precondition_resource_version;
  int64_t timeout_ms; /* per-attempt override; 0: the client's */
  /* The leader election's own request: a write that goes whatever the fence says, and no
   * attempt waits for the token bucket (Volcano gives leader election a client of its own, so
   * a controller busy at a low --kube-api-qps does not starve its own lease renewals). */
  bool leader_election;
  /* The Accept header (NULL: application/json), e.g. "application/vnd.kubernetes.protobuf,
   * application/json" for a built-in resource; a reply in protobuf comes as res->body. */
  const char *accept;
  /* A 2xx reply's body is not decoded (res->obj NULL): for a write whose caller reads only
   * the outcome. A PATCH's reply is the whole object, managedFields and all, and decoding
   * it was half of what kiln-scheduler spent parsing JSON. Errors are decoded as ever. */
  bool discard_body;
  /* A 2xx reply in JSON keeps metadata.managedFields. Without it the decoded object omits
   * managedFields wherever it is the field of a metadata object (kc_json_lean.h): no Kiln code
   * reads it, and it is often the largest part of an object. */
  bool managed_fields;
} kc_query;

/* The outcome of a call. Everything is borrowed for the callback only (json_incref or copy to
 * keep). */
typedef struct {
  int err;             /* 0, a Status.reason code (KC_ENOTFOUND, KC_ECONFLICT, ...), or a
                          transport code (KC_ECONNECT, KC_ETIMEDOUT, ...) */
  long status;         /* HTTP status of the last attempt, 0 without one */
  json_t *obj;         /* 2xx: the decoded body (object), NULL when empty; error: the Status
                          object when the server sent one */
  const char *reason;  /* Status.reason, or "" */
  const char *message; /* the server's Status.message, or a description; never NULL */
  int attempts;
  /* 2xx in Kubernetes' protobuf encoding (asked for with kc_query.accept): the body as it
   * came ("k8s\0" + Unknown), obj NULL; otherwise NULL and 0. */
  const uint8_t *body;
  size_t body_len;
} kc_api_result;

typedef void (*kc_api_cb)(const kc_api_result *res, void *data);

typedef struct kc_client kc_client;

/* Creates a client with its own transport on loop. cfg is borrowed and must outlive it. */
int kc_client_new(uv_loop_t *loop, kc_config *cfg, const kc_client_options *opt, kc_client **out);
/* Ends every call (callbacks run with KC_ECANCELED) and frees the client; libuv handles close
 * asynchronously, so run the loop to completion before uv_loop_close. Not from a callback of
 * this client. NULL is a no-op. */
void kc_client_free(kc_client *c);

/* The write fence: returns 0 while this replica may write, else KC_ENOTLEADER. */
typedef int (*kc_fence_fn)(void *ud);

/* Every attempt of a write (any verb but GET and LIST, unless kc_query.leader_election) asks fence
 * first, right before it is sent, retries included; a closed fence ends the call with
 * KC_ENOTLEADER and nothing sent. NULL (the default) lets every write go. */
void kc_client_set_fence(kc_client *c, kc_fence_fn fence, void *ud);

/* The transport (borrowed), for streams such as watches. */
kc_http *kc_client_http(kc_client *c);
/* Takes a token from the client's bucket; returns the ns to wait before sending. */
uint64_t kc_client_reserve(kc_client *c);

/* Starts a call. body (borrowed, serialized before returning) is the object for CREATE and
 * UPDATE, the patch for PATCH_* (an array for JSON patch), the configuration for APPLY, and
 * NULL otherwise. Returns 0 and later calls cb exactly once, or returns an error
 * (KC_EINVAL for a bad ref or query) and never calls cb. */
int kc_api_call(kc_client *c, kc_verb verb, const kc_ref *ref, const kc_query *q, json_t *body,
                kc_api_cb cb, void *data);

/* kc_api_call with a body already encoded (len bytes, borrowed, copied before returning) of
 * content_type, such as a protobuf Binding for KC_CREATE. The answer is read as above. */
int kc_api_call_raw(kc_client *c, kc_verb verb, const kc_ref *ref, const kc_query *q,
                    const void *body, size_t len, const char *content_type, kc_api_cb cb,
                    void *data);

/* Re-read, modify, write, and retry on 409 Conflict, like client-go's retry.RetryOnConflict
 * with retry.DefaultRetry (5 tries, 10 ms apart, jitter 0.1). Each try GETs ref, calls
 * mutate on the fetched object (borrowed; change it in place, return 0 to write it or a
 * negative code to stop with that code), then PUTs it to ref. cb gets the last result. */
typedef int (*kc_mutate_fn)(json_t *obj, void *data);
int kc_api_update_retry(kc_client *c, const kc_ref *ref, const kc_query *q, kc_mutate_fn mutate,
                        kc_api_cb cb, void *data);

/* Builds "/api/v1/namespaces/ns/configmaps/name?query" into *out (new memory, free it).
 * watch adds watch=1 and allowWatchBookmarks=true. KC_EINVAL when a part is missing or a name
 * contains a character that cannot appear in a Kubernetes name. */
int kc_api_path(kc_verb verb, const kc_ref *ref, const kc_query *q, bool watch, char **out);

/* A decoded failure (metav1.Status). */
typedef struct {
  int err;            /* the kc_error.h code */
  long code;          /* Status.code, else the HTTP status */
  char reason[64];    /* Status.reason, or "" */
  char message[1024]; /* Status.message (truncated), or a description of the response */
} kc_status;

/* Decodes the body of a non-2xx response (JSON, or a protobuf Status): a Status object's reason
 * picks the code (falling back to the HTTP status when the reason is empty or unknown, as client-go
 * does); any other body gives the HTTP status' code and a message quoting the start of the body.
 * Returns st->err. If obj is not NULL it receives the parsed Status (new reference) or NULL. */
int kc_status_parse(long http_status, const char *body, size_t len, kc_status *st, json_t **obj);

#endif
