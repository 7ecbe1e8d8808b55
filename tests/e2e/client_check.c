/* Exercises the Kubernetes client (kc_config, kc_http, kc_api) against a real API server.
 *
 *   client_check [--kubeconfig F] [--namespace NS] [--qps Q] [--burst B] [--count N] SCENARIO
 *
 * Scenarios: crud, notfound, conflict, multiplex, qps, token, watch. Each prints what it checked
 * and exits 0 when every check held, 1 otherwise (with "client_check: FAIL ..." lines).
 * The program is a test driver: it runs the loop until each call completes, which the
 * library itself never does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "kc_api.h"
#include "kc_config.h"
#include "kc_error.h"
#include "kc_flags.h"
#include "kc_log.h"

static uv_loop_t loop;
static kc_client *client;
static const char *ns = "default";
static int failures;

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "client_check: FAIL line %d: ", __LINE__);                                   \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

/* A finished call, copied out of the callback. */
struct done {
  bool finished;
  int err;
  long status;
  json_t *obj;
  char message[1024];
  char reason[64];
  int attempts;
};

static void on_done(const kc_api_result *res, void *data) {
  struct done *d = data;
  d->finished = true;
  d->err = res->err;
  d->status = res->status;
  d->obj = json_incref(res->obj);
  d->attempts = res->attempts;
  snprintf(d->message, sizeof(d->message), "%s", res->message);
  snprintf(d->reason, sizeof(d->reason), "%s", res->reason);
}

static void done_clear(struct done *d) {
  json_decref(d->obj);
  memset(d, 0, sizeof(*d));
}

/* Runs one call to completion. */
static void call(kc_verb verb, const char *name, const kc_query *q, json_t *body, struct done *d) {
  kc_ref ref = {NULL, "v1", "configmaps", ns, name, NULL};
  memset(d, 0, sizeof(*d));
  int rc = kc_api_call(client, verb, &ref, q, body, on_done, d);
  if (rc) {
    d->finished = true;
    d->err = rc;
    snprintf(d->message, sizeof(d->message), "not started: %s", kc_strerror(rc));
    return;
  }
  while (!d->finished)
    uv_run(&loop, UV_RUN_ONCE);
}

static const char *data_field(json_t *obj, const char *key) {
  return json_string_value(json_object_get(json_object_get(obj, "data"), key));
}

static const char *meta(json_t *obj, const char *key) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static json_t *configmap(const char *name, const char *k, const char *v) {
  return json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                   "metadata", "name", name, "data", k, v);
}

static bool managed_by(json_t *obj, const char *manager, const char *operation) {
  json_t *mf = json_object_get(json_object_get(obj, "metadata"), "managedFields");
  size_t i;
  json_t *e;
  json_array_foreach(mf, i, e) {
    const char *m = json_string_value(json_object_get(e, "manager"));
    const char *op = json_string_value(json_object_get(e, "operation"));
    if (m && op && strcmp(m, manager) == 0 && strcmp(op, operation) == 0)
      return true;
  }
  return false;
}

/* The crud scenario's steps, in order, on the ConfigMap "crud". */
#define CRUD "crud"

/* Creates it (dry run first, then twice); uid and rv get what the create returned. */
static void crud_create(char *uid, size_t uidlen, char *rv1, size_t rvlen) {
  struct done d;
  const char *name = CRUD;

  /* A dry-run create is validated but not stored. */
  json_t *cm = configmap(name, "a", "1");
  kc_query dry = {.dry_run = true};
  call(KC_CREATE, NULL, &dry, cm, &d);
  CHECK(d.err == 0 && d.status == 201, "dry-run create: %s %ld %s", kc_err_name(d.err), d.status,
        d.message);
  done_clear(&d);
  call(KC_GET, name, NULL, NULL, &d);
  CHECK(d.err == KC_ENOTFOUND, "dry-run create was stored: %s", kc_err_name(d.err));
  done_clear(&d);

  kc_query fm = {.field_manager = "client-check", .managed_fields = true};
  call(KC_CREATE, NULL, &fm, cm, &d);
  CHECK(d.err == 0 && d.status == 201, "create: %s %ld %s", kc_err_name(d.err), d.status,
        d.message);
  CHECK(d.obj && strcmp(meta(d.obj, "name"), name) == 0, "create returned no object");
  CHECK(d.obj && managed_by(d.obj, "client-check", "Update"), "fieldManager not recorded");
  snprintf(uid, uidlen, "%s", d.obj ? meta(d.obj, "uid") : "");
  snprintf(rv1, rvlen, "%s", d.obj ? meta(d.obj, "resourceVersion") : "");
  done_clear(&d);
  /* Without .managed_fields the reply's metadata comes without managedFields (the lean
   * decode) and with everything else. */
  call(KC_GET, name, NULL, NULL, &d);
  CHECK(d.err == 0 && d.obj && strcmp(meta(d.obj, "uid"), uid) == 0, "get: %s %s",
        kc_err_name(d.err), d.message);
  CHECK(d.obj && !json_object_get(json_object_get(d.obj, "metadata"), "managedFields"),
        "a lean reply kept metadata.managedFields");
  done_clear(&d);

  call(KC_CREATE, NULL, NULL, cm, &d);
  CHECK(d.err == KC_EALREADYEXISTS && d.status == 409, "second create: %s %ld", kc_err_name(d.err),
        d.status);
  CHECK(strstr(d.message, "already exists") != NULL, "AlreadyExists message: %s", d.message);
  CHECK(strcmp(d.reason, "AlreadyExists") == 0, "reason: %s", d.reason);
  CHECK(d.attempts == 1, "a 409 must not be retried, took %d attempts", d.attempts);
  done_clear(&d);
  json_decref(cm);
}

/* A PUT with the current resourceVersion, then with a stale one; rv2 gets the new version. */
static void crud_update(const char *rv1, char *rv2, size_t rvlen) {
  struct done d;
  const char *name = CRUD;
  call(KC_GET, name, NULL, NULL, &d);
  CHECK(d.err == 0 && d.obj && strcmp(data_field(d.obj, "a"), "1") == 0, "get: %s %s",
        kc_err_name(d.err), d.message);
  json_t *obj = json_incref(d.obj);
  done_clear(&d);

  /* PUT with the current resourceVersion, then again with the stale one. */
  json_object_set_new(json_object_get(obj, "data"), "a", json_string("2"));
  call(KC_UPDATE, name, NULL, obj, &d);
  CHECK(d.err == 0 && d.status == 200 && strcmp(data_field(d.obj, "a"), "2") == 0, "update: %s %s",
        kc_err_name(d.err), d.message);
  CHECK(d.obj && strcmp(meta(d.obj, "resourceVersion"), rv1) != 0, "rv did not change");
  snprintf(rv2, rvlen, "%s", d.obj ? meta(d.obj, "resourceVersion") : "");
  done_clear(&d);
  json_object_set_new(json_object_get(obj, "data"), "a", json_string("stale"));
  call(KC_UPDATE, name, NULL, obj, &d);
  CHECK(d.err == KC_ECONFLICT && d.status == 409, "stale update: %s %ld", kc_err_name(d.err),
        d.status);
  CHECK(strstr(d.message, "the object has been modified") != NULL, "Conflict message: %s",
        d.message);
  done_clear(&d);
  json_decref(obj);
}

/* Merge patch, JSON patch, strategic merge patch. */
static void crud_patch(void) {
  struct done d;
  const char *name = CRUD;
  json_t *mp = json_pack("{s:{s:s}}", "data", "b", "merge");
  call(KC_PATCH_MERGE, name, NULL, mp, &d);
  CHECK(d.err == 0 && strcmp(data_field(d.obj, "b"), "merge") == 0, "merge patch: %s %s",
        kc_err_name(d.err), d.message);
  done_clear(&d);
  json_decref(mp);
  json_t *jp = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}]", "op", "test", "path", "/data/a",
                         "value", "2", "op", "add", "path", "/data/c", "value", "json");
  call(KC_PATCH_JSON, name, NULL, jp, &d);
  CHECK(d.err == 0 && strcmp(data_field(d.obj, "c"), "json") == 0, "json patch: %s %s",
        kc_err_name(d.err), d.message);
  done_clear(&d);
  json_decref(jp);
  jp = json_pack("[{s:s, s:s, s:s}]", "op", "test", "path", "/data/a", "value", "nope");
  call(KC_PATCH_JSON, name, NULL, jp, &d);
  CHECK(d.err == KC_EINVALID || d.err == KC_EBADREQUEST || d.err == KC_ECONFLICT ||
            d.err == KC_EHTTP,
        "failed json patch test op: %s %ld", kc_err_name(d.err), d.status);
  CHECK(d.err != 0 && d.message[0], "failed json patch has no message");
  done_clear(&d);
  json_decref(jp);
  json_t *sp = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "patched", "strategic");
  call(KC_PATCH_STRATEGIC, name, NULL, sp, &d);
  CHECK(d.err == 0 && d.obj &&
            strcmp(json_string_value(json_object_get(
                       json_object_get(json_object_get(d.obj, "metadata"), "labels"), "patched")),
                   "strategic") == 0,
        "strategic merge patch: %s %s", kc_err_name(d.err), d.message);
  done_clear(&d);
  json_decref(sp);
}

/* Server-side apply: our manager owns data.d; another manager's change to it conflicts unless
 * forced. rv_now gets the version after the forced apply. */
static void crud_apply(char *rv_now, size_t rvlen) {
  struct done d;
  const char *name = CRUD;
  json_t *cfg = configmap(name, "d", "applied");
  kc_query ssa = {.field_manager = "client-check-ssa", .managed_fields = true};
  call(KC_APPLY, name, &ssa, cfg, &d);
  CHECK(d.err == 0 && strcmp(data_field(d.obj, "d"), "applied") == 0, "apply: %s %s",
        kc_err_name(d.err), d.message);
  CHECK(d.obj && managed_by(d.obj, "client-check-ssa", "Apply"), "apply manager missing");
  CHECK(d.obj && strcmp(data_field(d.obj, "a"), "2") == 0, "apply dropped other fields");
  done_clear(&d);
  json_decref(cfg);
  cfg = configmap(name, "d", "other");
  kc_query other = {.field_manager = "someone-else"};
  call(KC_APPLY, name, &other, cfg, &d);
  CHECK(d.err == KC_ECONFLICT && d.status == 409, "conflicting apply: %s %ld %s",
        kc_err_name(d.err), d.status, d.message);
  CHECK(strstr(d.message, "client-check-ssa") != NULL, "apply conflict names no manager: %s",
        d.message);
  done_clear(&d);
  other.force = true;
  call(KC_APPLY, name, &other, cfg, &d);
  CHECK(d.err == 0 && strcmp(data_field(d.obj, "d"), "other") == 0, "forced apply: %s %s",
        kc_err_name(d.err), d.message);
  snprintf(rv_now, rvlen, "%s", d.obj ? meta(d.obj, "resourceVersion") : "");
  done_clear(&d);
  json_decref(cfg);
}

/* Delete with preconditions: a wrong UID and a stale resourceVersion are refused. */
static void crud_delete(const char *uid, const char *rv2, const char *rv_now) {
  struct done d;
  const char *name = CRUD;
  kc_query pre = {.precondition_uid = "00000000-0000-0000-0000-000000000000"};
  call(KC_DELETE, name, &pre, NULL, &d);
  CHECK(d.err == KC_ECONFLICT, "delete with a wrong uid: %s %ld %s", kc_err_name(d.err), d.status,
        d.message);
  CHECK(strstr(d.message, "recondition") != NULL, "precondition message: %s", d.message);
  done_clear(&d);
  kc_query stale = {.precondition_uid = uid, .precondition_resource_version = rv2};
  call(KC_DELETE, name, &stale, NULL, &d);
  CHECK(d.err == KC_ECONFLICT, "delete with a stale rv: %s %s", kc_err_name(d.err), d.message);
  done_clear(&d);
  kc_query good = {.precondition_uid = uid,
                   .precondition_resource_version = rv_now,
                   .propagation_policy = "Background"};
  call(KC_DELETE, name, &good, NULL, &d);
  CHECK(d.err == 0 && d.status == 200, "delete: %s %ld %s", kc_err_name(d.err), d.status,
        d.message);
  done_clear(&d);
  call(KC_GET, name, NULL, NULL, &d);
  CHECK(d.err == KC_ENOTFOUND, "after delete: %s", kc_err_name(d.err));
  done_clear(&d);
}

static void scenario_crud(void) {
  char uid[64], rv1[32], rv2[32], rv_now[32];
  crud_create(uid, sizeof(uid), rv1, sizeof(rv1));
  crud_update(rv1, rv2, sizeof(rv2));
  crud_patch();
  crud_apply(rv_now, sizeof(rv_now));
  crud_delete(uid, rv2, rv_now);

  /* Leave one object for the suite to compare with kubectl. */
  struct done d;
  json_t *cm = configmap("kept", "from", "client-check");
  call(KC_CREATE, NULL, NULL, cm, &d);
  CHECK(d.err == 0, "create kept: %s %s", kc_err_name(d.err), d.message);
  done_clear(&d);
  json_decref(cm);
}

static void scenario_notfound(void) {
  struct done d;
  call(KC_GET, "does-not-exist", NULL, NULL, &d);
  CHECK(d.err == KC_ENOTFOUND && d.status == 404, "get: %s %ld", kc_err_name(d.err), d.status);
  CHECK(strcmp(d.message, "configmaps \"does-not-exist\" not found") == 0, "message: '%s'",
        d.message);
  CHECK(strcmp(d.reason, "NotFound") == 0, "reason: '%s'", d.reason);
  CHECK(d.obj && strcmp(json_string_value(json_object_get(d.obj, "kind")), "Status") == 0,
        "no Status object");
  CHECK(d.attempts == 1, "a 404 must not be retried (%d attempts)", d.attempts);
  printf("%s: %s\n", kc_err_name(d.err), d.message);
  done_clear(&d);
  /* A missing namespace too, and a delete of nothing. */
  const char *saved = ns;
  ns = "no-such-namespace-kiln";
  json_t *cm = configmap("x", "a", "b");
  call(KC_CREATE, NULL, NULL, cm, &d);
  CHECK(d.err == KC_ENOTFOUND, "create in a missing namespace: %s", kc_err_name(d.err));
  CHECK(strstr(d.message, "no-such-namespace-kiln") != NULL, "message: %s", d.message);
  done_clear(&d);
  json_decref(cm);
  ns = saved;
  call(KC_DELETE, "does-not-exist", NULL, NULL, &d);
  CHECK(d.err == KC_ENOTFOUND, "delete: %s", kc_err_name(d.err));
  done_clear(&d);
}

/* ---- conflict: concurrent read-modify-write loops on one counter ---- */

static int mutate_calls;

static int increment(json_t *obj, void *data) {
  (void)data;
  mutate_calls++;
  json_t *d = json_object_get(obj, "data");
  const char *v = json_string_value(json_object_get(d, "n"));
  if (!v)
    return KC_EINVAL;
  char *end;
  long n = strtol(v, &end, 10);
  if (*end)
    return KC_EINVAL;
  char buf[32];
  snprintf(buf, sizeof(buf), "%ld", n + 1);
  return json_object_set_new(d, "n", json_string(buf)) ? KC_ENOMEM : 0;
}

static void scenario_conflict(int writers) {
  struct done d;
  const char *name = "counter";
  json_t *cm = configmap(name, "n", "0");
  call(KC_CREATE, NULL, NULL, cm, &d);
  CHECK(d.err == 0, "create: %s %s", kc_err_name(d.err), d.message);
  done_clear(&d);
  json_decref(cm);
  /* Every failed PUT means another writer succeeded in between, so each of N writers fails at
   * most N-1 times: with N <= 5 all of them finish within retry.DefaultRetry's 5 tries. */
  int total = 0, rounds = 0;
  bool conflicted = false;
  while (!conflicted && rounds < 5) {
    rounds++;
    mutate_calls = 0;
    struct done *ds = calloc((size_t)writers, sizeof(*ds));
    kc_ref ref = {NULL, "v1", "configmaps", ns, name, NULL};
    kc_query q = {.field_manager = "client-check"};
    for (int i = 0; i < writers; i++) {
      int rc = kc_api_update_retry(client, &ref, &q, increment, on_done, &ds[i]);
      CHECK(rc == 0, "update_retry: %s", kc_err_name(rc));
      if (rc)
        ds[i].finished = true;
    }
    for (int i = 0; i < writers; i++) {
      while (!ds[i].finished)
        uv_run(&loop, UV_RUN_ONCE);
      CHECK(ds[i].err == 0, "writer %d: %s %s", i, kc_err_name(ds[i].err), ds[i].message);
      done_clear(&ds[i]);
    }
    free(ds);
    total += writers;
    conflicted = mutate_calls > writers;
    printf("round %d: %d writers, %d tries (%d conflicts retried)\n", rounds, writers, mutate_calls,
           mutate_calls - writers);
  }
  CHECK(conflicted, "no conflict happened in %d rounds", rounds);
  call(KC_GET, name, NULL, NULL, &d);
  char want[16];
  snprintf(want, sizeof(want), "%d", total);
  CHECK(d.err == 0 && strcmp(data_field(d.obj, "n"), want) == 0, "counter %s, want %s",
        d.obj ? data_field(d.obj, "n") : "?", want);
  printf("counter=%s\n", d.obj ? data_field(d.obj, "n") : "?");
  done_clear(&d);
}

/* ---- many calls at once ---- */

static double now_s(void) {
  return (double)uv_hrtime() / 1e9;
}

static void run_many(int count, unsigned *max_in_flight, int *errors) {
  struct done *ds = calloc((size_t)count, sizeof(*ds));
  kc_ref ref = {NULL, "v1", "configmaps", ns, NULL, NULL};
  kc_query q = {.limit = 1};
  *max_in_flight = 0;
  *errors = 0;
  for (int i = 0; i < count; i++) {
    int rc = kc_api_call(client, KC_LIST, &ref, &q, NULL, on_done, &ds[i]);
    if (rc) {
      ds[i].finished = true;
      ds[i].err = rc;
    }
  }
  for (int i = 0; i < count; i++) {
    while (!ds[i].finished) {
      uv_run(&loop, UV_RUN_ONCE);
      kc_http_stats st;
      kc_http_get_stats(kc_client_http(client), &st);
      if (st.in_flight > *max_in_flight)
        *max_in_flight = st.in_flight;
    }
    if (ds[i].err) {
      (*errors)++;
      fprintf(stderr, "call %d: %s %s\n", i, kc_err_name(ds[i].err), ds[i].message);
    }
    done_clear(&ds[i]);
  }
  free(ds);
}

static void scenario_multiplex(int count) {
  /* Warm up: one call opens the connection and learns that it speaks HTTP/2. */
  struct done d;
  call(KC_GET, "absent", NULL, NULL, &d);
  done_clear(&d);
  unsigned max_in_flight;
  int errors;
  run_many(count, &max_in_flight, &errors);
  kc_http_stats st;
  kc_http_get_stats(kc_client_http(client), &st);
  printf("requests=%llu http2=%llu connections=%llu max_in_flight=%u errors=%d\n",
         (unsigned long long)st.finished, (unsigned long long)st.http2_responses,
         (unsigned long long)st.new_connections, max_in_flight, errors);
  CHECK(st.http2_responses == st.finished, "only %llu of %llu responses used HTTP/2",
        (unsigned long long)st.http2_responses, (unsigned long long)st.finished);
  CHECK(errors == 0, "%d calls failed", errors);
  CHECK(st.new_connections == 1, "%llu connections for %d calls; want 1 (HTTP/2)",
        (unsigned long long)st.new_connections, count + 1);
  CHECK(max_in_flight >= (unsigned)count / 2, "only %u calls were in flight at once",
        max_in_flight);
}

static void scenario_qps(int count, double qps, int burst) {
  double t0 = now_s();
  unsigned max_in_flight;
  int errors;
  run_many(count, &max_in_flight, &errors);
  double took = now_s() - t0;
  double want = (count - burst) / qps;
  printf("calls=%d qps=%g burst=%d took=%.2fs floor=%.2fs rate=%.1f/s\n", count, qps, burst, took,
         want, count / took);
  CHECK(errors == 0, "%d calls failed", errors);
  CHECK(took >= want * 0.95, "took %.2fs, the limiter allows no less than %.2fs", took, want);
  CHECK(took <= want + 3.0, "took %.2fs, far slower than the %.2fs the limiter needs", took, want);
}

/* Polls until the token file holds a token the server accepts: 401 while it is bogus, then
 * 403 (the service account may not read namespaces) once the suite writes a real one. */
/* One GET and what came of it, "KC_EFORBIDDEN 403: <message>", to see who the server thinks
 * we are or why no answer came (TLS, credential plugin). Fails without an answer. */
static void scenario_get(void) {
  struct done d;
  call(KC_GET, "does-not-exist", NULL, NULL, &d);
  printf("%s %ld: %s\n", d.err ? kc_err_name(d.err) : "OK", d.status, d.message);
  CHECK(d.status != 0, "no answer from the server after %d attempts", d.attempts);
  done_clear(&d);
}

static void scenario_token(double timeout_s) {
  int unauthorized = 0;
  double deadline = now_s() + timeout_s;
  for (;;) {
    struct done d;
    call(KC_GET, "x", NULL, NULL, &d);
    int err = d.err;
    if (err == KC_EUNAUTHORIZED)
      unauthorized++;
    else
      printf("after %d unauthorized: %s: %s\n", unauthorized, kc_err_name(err), d.message);
    done_clear(&d);
    if (err != KC_EUNAUTHORIZED) {
      CHECK(err == KC_EFORBIDDEN || err == KC_ENOTFOUND, "unexpected %s", kc_err_name(err));
      break;
    }
    if (now_s() > deadline) {
      CHECK(false, "still unauthorized after %.0fs", timeout_s);
      break;
    }
    uv_sleep(200);
  }
  CHECK(unauthorized > 0, "the bogus token was never refused");
}

/* ---- a watch stream on kc_http: chunks as they come, cancel without losing the connection */

struct stream {
  bool finished;
  int err;
  long status;
  char data[8192];
  size_t len;
  int chunks;
  const char *stop_at; /* cancel once the data contains this */
};

static int stream_chunk(kc_http_req *req, const char *chunk, size_t len, void *data) {
  (void)req;
  struct stream *s = data;
  s->chunks++;
  size_t n = len < sizeof(s->data) - 1 - s->len ? len : sizeof(s->data) - 1 - s->len;
  memcpy(s->data + s->len, chunk, n);
  s->len += n;
  s->data[s->len] = '\0';
  return s->stop_at && strstr(s->data, s->stop_at) ? KC_ECANCELED : 0;
}

static void stream_done(kc_http_req *req, const kc_http_result *res, void *data) {
  (void)req;
  struct stream *s = data;
  s->finished = true;
  s->err = res->err;
  s->status = res->status;
}

static void start_watch(long timeout_seconds, struct stream *s) {
  kc_ref ref = {NULL, "v1", "configmaps", ns, NULL, NULL};
  kc_query q = {.timeout_seconds = timeout_seconds};
  char *path = NULL;
  int rc = kc_api_path(KC_LIST, &ref, &q, true, &path);
  CHECK(rc == 0, "watch path: %s", kc_err_name(rc));
  kc_http_spec spec = {
      .method = "GET", .path = path, .on_chunk = stream_chunk, .on_done = stream_done, .data = s};
  rc = kc_http_start(kc_client_http(client), &spec, NULL);
  CHECK(rc == 0, "watch start: %s", kc_err_name(rc));
  if (rc)
    s->finished = true;
  free(path);
}

static void scenario_watch(void) {
  struct done d;
  struct stream full = {0}, cut = {.stop_at = "\"w1\""};
  start_watch(3, &full);
  start_watch(30, &cut);
  /* Let both watches reach the server before the write they should see. */
  double t0 = now_s();
  while (now_s() - t0 < 0.5)
    uv_run(&loop, UV_RUN_NOWAIT);
  json_t *cm = configmap("w1", "k", "v");
  call(KC_CREATE, NULL, NULL, cm, &d);
  CHECK(d.err == 0, "create: %s %s", kc_err_name(d.err), d.message);
  done_clear(&d);
  json_decref(cm);
  while (!cut.finished)
    uv_run(&loop, UV_RUN_ONCE);
  CHECK(cut.err == KC_ECANCELED, "cancelled watch ended with %s", kc_err_name(cut.err));
  /* The other watch ends when the server's timeoutSeconds runs out. */
  while (!full.finished)
    uv_run(&loop, UV_RUN_ONCE);
  CHECK(full.err == 0 && full.status == 200, "watch: %s %ld", kc_err_name(full.err), full.status);
  /* Newline-delimited events (a BOOKMARK may come first); one is our ADDED. */
  int events = 0, added_w1 = 0;
  for (const char *line = full.data; *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    json_error_t je;
    json_t *ev = json_loadb(line, n, 0, &je);
    CHECK(ev != NULL, "event %d does not parse: %s", events, je.text);
    const char *type = json_string_value(json_object_get(ev, "type"));
    const char *name = meta(json_object_get(ev, "object"), "name");
    if (type && name && strcmp(type, "ADDED") == 0 && strcmp(name, "w1") == 0)
      added_w1++;
    json_decref(ev);
    events++;
    line += n + (nl ? 1 : 0);
  }
  CHECK(added_w1 == 1, "%d ADDED events for w1 in %d events", added_w1, events);
  kc_http_stats st;
  kc_http_get_stats(kc_client_http(client), &st);
  printf("watch: %d chunks, %zu bytes; cancelled after %d chunks; connections=%llu\n", full.chunks,
         full.len, cut.chunks, (unsigned long long)st.new_connections);
  /* Cancelling resets one HTTP/2 stream, not the connection under the other watch. */
  CHECK(st.new_connections == 1, "%llu connections", (unsigned long long)st.new_connections);
}

int main(int argc, char **argv) {
  const char *kubeconfig = NULL, *master = NULL;
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(-1, 0); /* unlimited unless asked */
  int count = 200, nargs = 0;
  double timeout = 30, exec_timeout = 0;
  const kc_flag flags[] = {
      {"kubeconfig", KC_FLAG_STRING, &kubeconfig, "kubeconfig", NULL, NULL, false, NULL},
      {"master", KC_FLAG_STRING, &master, "API server URL", NULL, NULL, false, NULL},
      {"namespace", KC_FLAG_STRING, &ns, "namespace", "default", NULL, false, NULL},
      KC_CLIENT_FLAGS(&opt, "-1", "0"),
      {"count", KC_FLAG_INT, &count, "calls for multiplex and qps", "200", NULL, false, NULL},
      {"timeout", KC_FLAG_DOUBLE, &timeout, "seconds for the token scenario", "30", NULL, false,
       NULL},
      {"exec-timeout", KC_FLAG_DOUBLE, &exec_timeout,
       "seconds a credential plugin may run (0: the default)", "0", NULL, false, NULL},
      {"v", KC_FLAG_INT, &kc_log_verbosity, "log verbosity", "0", NULL, false, NULL},
  };
  char err[512];
  if (kc_flags_parse(flags, sizeof(flags) / sizeof(flags[0]), argc, argv, &nargs, err,
                     sizeof(err)) != 0 ||
      nargs != 1) {
    fprintf(
        stderr,
        "usage: client_check [flags] crud|notfound|conflict|multiplex|qps|token|watch|get\n%s\n",
        nargs != 1 ? "" : err);
    return 2;
  }
  const char *scenario = argv[0];
  kc_config cfg;
  if (kc_config_load(&cfg, kubeconfig, master, err, sizeof(err)) != 0) {
    fprintf(stderr, "client_check: %s\n", err);
    return 1;
  }
  if (cfg.exec && exec_timeout > 0)
    cfg.exec->timeout_ms = (uint64_t)(exec_timeout * 1000);
  uv_loop_init(&loop);
  int rc = kc_client_new(&loop, &cfg, &opt, &client);
  if (rc) {
    fprintf(stderr, "client_check: %s\n", kc_strerror(rc));
    return 1;
  }
  if (strcmp(scenario, "crud") == 0)
    scenario_crud();
  else if (strcmp(scenario, "notfound") == 0)
    scenario_notfound();
  else if (strcmp(scenario, "conflict") == 0)
    scenario_conflict(count > 5 ? 5 : count);
  else if (strcmp(scenario, "multiplex") == 0)
    scenario_multiplex(count);
  else if (strcmp(scenario, "qps") == 0)
    scenario_qps(count, opt.qps, opt.burst);
  else if (strcmp(scenario, "token") == 0)
    scenario_token(timeout);
  else if (strcmp(scenario, "watch") == 0)
    scenario_watch();
  else if (strcmp(scenario, "get") == 0)
    scenario_get();
  else {
    fprintf(stderr, "client_check: unknown scenario %s\n", scenario);
    failures++;
  }
  kc_client_free(client);
  uv_run(&loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&loop);
  CHECK(rc == 0, "loop did not close cleanly: %s", uv_strerror(rc));
  kc_config_close(&cfg);
  if (failures == 0)
    printf("client_check %s: ok\n", scenario);
  return failures ? 1 : 0;
}
