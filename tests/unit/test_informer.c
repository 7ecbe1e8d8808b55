/* kc_informer against a scripted API server (libmicrohttpd on loopback): paginated LIST,
 * WATCH from the list's resourceVersion with bookmarks, resume after a dropped stream,
 * relist on 410 (as an ERROR event and as the HTTP status) with exactly the missed adds,
 * updates and deletes, relist after a bad frame, and the decode hook. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "kc_api.h"
#include "kc_error.h"
#include "kc_informer.h"

/* ---- the server: objects, and a script of watch responses ---- */

#define MAX_OBJS    32
#define MAX_WATCHES 8

static struct {
  char name[32];
  long rv;
  char v[16];
  bool present;
} objs[MAX_OBJS];
static long server_rv = 100;

struct watch_reply {
  int status;         /* 200: stream frames; else an error body */
  const char *frames; /* newline-delimited events; "%" is replaced by nothing */
  bool hold;          /* keep the stream open after the frames (until released) */
  bool gated;         /* send nothing until the test opens the gate */
};
static struct watch_reply script[MAX_WATCHES];
static int nscript, watch_hits, list_hits;
static char watch_rv[MAX_WATCHES + 4][32], watch_timeout[MAX_WATCHES + 4][16],
    watch_bookmarks[MAX_WATCHES + 4][8];
static char list_continue[16][32];
static volatile bool release_holds, gate_open;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void set_obj(const char *name, const char *v) { /* add or modify, bumping the rv */
  pthread_mutex_lock(&mu);
  int i, free_slot = -1;
  for (i = 0; i < MAX_OBJS; i++) {
    if (objs[i].present && strcmp(objs[i].name, name) == 0)
      break;
    if (!objs[i].present && free_slot < 0)
      free_slot = i;
  }
  if (i == MAX_OBJS)
    i = free_slot;
  snprintf(objs[i].name, sizeof(objs[i].name), "%s", name);
  snprintf(objs[i].v, sizeof(objs[i].v), "%s", v);
  objs[i].rv = ++server_rv;
  objs[i].present = true;
  pthread_mutex_unlock(&mu);
}

static void del_obj(const char *name) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < MAX_OBJS; i++)
    if (objs[i].present && strcmp(objs[i].name, name) == 0)
      objs[i].present = false;
  server_rv++;
  pthread_mutex_unlock(&mu);
}

static long rv_of(const char *name) {
  long rv = -1;
  pthread_mutex_lock(&mu);
  for (int i = 0; i < MAX_OBJS; i++)
    if (objs[i].present && strcmp(objs[i].name, name) == 0)
      rv = objs[i].rv;
  pthread_mutex_unlock(&mu);
  return rv;
}

static enum MHD_Result respond(struct MHD_Connection *conn, int status, const char *body) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
  MHD_destroy_response(r);
  return ret;
}

struct stream {
  const char *frames;
  size_t len;
  bool hold, gated;
};

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
  struct stream *s = cls;
  if (s->gated && !gate_open && !release_holds) {
    uv_sleep(20);
    return 0;
  }
  if (pos >= s->len) {
    if (!s->hold || release_holds)
      return MHD_CONTENT_READER_END_OF_STREAM;
    uv_sleep(20); /* a thread per connection: only this stream waits */
    return 0;
  }
  size_t n = s->len - (size_t)pos;
  if (n > 9)
    n = 9; /* small pieces: frames arrive split across chunks */
  if (n > max)
    n = max;
  memcpy(buf, s->frames + pos, n);
  return (ssize_t)n;
}

static void stream_free(void *cls) {
  free(cls);
}

static const char *arg(struct MHD_Connection *c, const char *k) {
  const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
  return v ? v : "";
}

static enum MHD_Result list(struct MHD_Connection *conn) {
  long limit = strtol(arg(conn, "limit"), NULL, 10);
  long start = strtol(arg(conn, "continue"), NULL, 10);
  pthread_mutex_lock(&mu);
  snprintf(list_continue[list_hits % 16], sizeof(list_continue[0]), "%s", arg(conn, "continue"));
  list_hits++;
  json_t *items = json_array();
  long idx = 0, next = 0;
  for (int i = 0; i < MAX_OBJS; i++) {
    if (!objs[i].present)
      continue;
    if (idx >= start && (limit <= 0 || idx < start + limit)) {
      char rv[24];
      snprintf(rv, sizeof(rv), "%ld", objs[i].rv);
      json_array_append_new(items, json_pack("{s:{s:s, s:s, s:s}, s:{s:s}}", "metadata", "name",
                                             objs[i].name, "namespace", "t", "resourceVersion", rv,
                                             "data", "v", objs[i].v));
    } else if (idx >= start + limit && next == 0) {
      next = idx;
    }
    idx++;
  }
  char rv[24], cont[24] = "";
  snprintf(rv, sizeof(rv), "%ld", server_rv);
  if (next)
    snprintf(cont, sizeof(cont), "%ld", next);
  pthread_mutex_unlock(&mu);
  json_t *body = json_pack("{s:s, s:{s:s, s:s}, s:o}", "kind", "ConfigMapList", "metadata",
                           "resourceVersion", rv, "continue", cont, "items", items);
  char *text = json_dumps(body, 0);
  json_decref(body);
  enum MHD_Result ret = respond(conn, 200, text);
  free(text);
  return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **con_cls) {
  (void)cls, (void)method, (void)version, (void)data, (void)size, (void)con_cls;
  if (strcmp(url, "/api/v1/namespaces/t/configmaps") != 0)
    return respond(conn, 404, "{}");
  if (strcmp(arg(conn, "watch"), "1") != 0 && strcmp(arg(conn, "watch"), "true") != 0)
    return list(conn);
  pthread_mutex_lock(&mu);
  int n = watch_hits++;
  if (n < MAX_WATCHES + 4) {
    snprintf(watch_rv[n], sizeof(watch_rv[0]), "%s", arg(conn, "resourceVersion"));
    snprintf(watch_timeout[n], sizeof(watch_timeout[0]), "%s", arg(conn, "timeoutSeconds"));
    snprintf(watch_bookmarks[n], sizeof(watch_bookmarks[0]), "%s",
             arg(conn, "allowWatchBookmarks"));
  }
  struct watch_reply rep = n < nscript ? script[n] : (struct watch_reply){200, "", true};
  pthread_mutex_unlock(&mu);
  if (rep.status != 200)
    return respond(conn, rep.status,
                   "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Expired\","
                   "\"message\":\"too old resource version\",\"code\":410}");
  struct stream *s = calloc(1, sizeof(*s));
  s->frames = rep.frames;
  s->len = strlen(rep.frames);
  s->hold = rep.hold;
  s->gated = rep.gated;
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64, stream_reader, s, stream_free);
  enum MHD_Result ret = MHD_queue_response(conn, 200, r);
  MHD_destroy_response(r);
  return ret;
}

/* ---- the client side ---- */

static struct MHD_Daemon *daemon_;
static uv_loop_t loop;
static uv_timer_t ticker;
static kc_config cfg;
static kc_client *client;
static kc_informer *inf;

static char calls[64][64];
static int ncalls;

static const char *obj_name(void *o) {
  return json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
}

static void on_add(const char *key, void *o, void *ud) {
  (void)ud;
  assert_non_null(kc_store_get(kc_informer_store(inf), key)); /* stored before the call */
  snprintf(calls[ncalls++ % 64], sizeof(calls[0]), "add %s", obj_name(o));
}
static void on_update(const char *key, void *old, void *o, void *ud) {
  (void)ud;
  assert_ptr_equal(kc_store_get(kc_informer_store(inf), key), o);
  const char *ov = json_string_value(json_object_get(json_object_get(old, "data"), "v"));
  const char *nv = json_string_value(json_object_get(json_object_get(o, "data"), "v"));
  snprintf(calls[ncalls++ % 64], sizeof(calls[0]), "update %s %s>%s", obj_name(o), ov ? ov : "",
           nv ? nv : "");
}
static void on_delete(const char *key, void *o, void *ud) {
  (void)ud;
  assert_null(kc_store_get(kc_informer_store(inf), key)); /* removed before the call */
  snprintf(calls[ncalls++ % 64], sizeof(calls[0]), "delete %s", obj_name(o));
}

static void tick(uv_timer_t *t) {
  (void)t;
}

/* Runs the loop until cond() holds (fails after 5 s). */
static void run_until(bool (*cond)(void)) {
  uint64_t deadline = uv_hrtime() + 5000000000ULL;
  while (!cond()) {
    assert_true(uv_hrtime() < deadline);
    uv_run(&loop, UV_RUN_ONCE);
  }
}

static int target_watches;
static bool watches_reached(void) {
  pthread_mutex_lock(&mu);
  bool ok = watch_hits >= target_watches;
  pthread_mutex_unlock(&mu);
  return ok && kc_informer_get_state(inf) == KC_INF_WATCH;
}
static void run_until_watch(int n) {
  target_watches = n;
  run_until(watches_reached);
  /* let the stream's frames be handled */
  uint64_t until = uv_hrtime() + 150000000ULL;
  while (uv_hrtime() < until)
    uv_run(&loop, UV_RUN_ONCE);
}

static int target_calls;
static bool calls_reached(void) {
  return ncalls >= target_calls;
}

static void start(const kc_informer_handlers *h, long page) {
  kc_informer_options o = {0};
  o.version = "v1";
  o.resource = "configmaps";
  o.namespace = "t";
  o.page_size = page;
  kc_informer_handlers def = {0};
  def.on_add = on_add;
  def.on_update = on_update;
  def.on_delete = on_delete;
  assert_int_equal(kc_informer_new(client, &o, h ? h : &def, &inf), 0);
  assert_int_equal(kc_informer_start(inf), 0);
  assert_int_equal(kc_informer_start(inf), KC_EINVAL);
}

static bool has_call(const char *c) {
  for (int i = 0; i < ncalls && i < 64; i++)
    if (strcmp(calls[i], c) == 0)
      return true;
  return false;
}

static int setup(void **state) {
  (void)state;
  memset(objs, 0, sizeof(objs));
  memset(script, 0, sizeof(script));
  nscript = watch_hits = list_hits = ncalls = 0;
  server_rv = 100;
  release_holds = gate_open = false;
  daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                             NULL, NULL, handler, NULL, MHD_OPTION_END);
  if (!daemon_)
    return -1;
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
  char url[64];
  snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)info->port);
  if (uv_loop_init(&loop))
    return -1;
  uv_timer_init(&loop, &ticker);
  uv_timer_start(&ticker, tick, 10, 10);
  memset(&cfg, 0, sizeof(cfg));
  cfg.server = strdup(url);
  cfg.token = strdup("tok");
  cfg.namespace = strdup("default");
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(0, 0);
  return kc_client_new(&loop, &cfg, &opt, &client) ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  kc_informer_free(inf);
  inf = NULL;
  release_holds = true;
  kc_client_free(client);
  uv_close((uv_handle_t *)&ticker, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  kc_config_close(&cfg);
  int rc = uv_loop_close(&loop);
  MHD_stop_daemon(daemon_);
  return rc == 0 ? 0 : -1;
}

#define EV(type, name, rv, v)                                                                      \
  "{\"type\":\"" type "\",\"object\":{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"t\","    \
  "\"resourceVersion\":\"" rv "\"},\"data\":{\"v\":\"" v "\"}}}\n"

static void test_list_pages_then_watch_events_and_bookmark(void **state) {
  (void)state;
  char name[16];
  for (int i = 0; i < 7; i++) {
    snprintf(name, sizeof(name), "o%d", i);
    set_obj(name, "1");
  }
  script[0] = (struct watch_reply){
      200,
      EV("ADDED", "n1", "201", "1") EV("MODIFIED", "o1", "202", "2")
          EV("DELETED", "o2", "203", "1") "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{"
                                          "\"resourceVersion\":\"250\"}}}\n",
      true};
  nscript = 1;
  start(NULL, 3);
  run_until_watch(1);
  target_calls = 10;
  run_until(calls_reached);
  assert_true(kc_informer_has_synced(inf));
  assert_int_equal(list_hits, 3); /* 7 objects in pages of 3 */
  assert_string_equal(list_continue[0], "");
  assert_string_equal(list_continue[1], "3");
  assert_string_equal(list_continue[2], "6");
  assert_string_equal(watch_rv[0], "107"); /* the list's resourceVersion */
  assert_string_equal(watch_bookmarks[0], "true");
  long to = strtol(watch_timeout[0], NULL, 10);
  assert_true(to >= 300 && to <= 600);
  assert_int_equal(ncalls, 7 + 3);
  assert_true(has_call("add o6"));
  assert_true(has_call("add n1"));
  assert_true(has_call("update o1 1>2"));
  assert_true(has_call("delete o2"));
  assert_int_equal((int)kc_store_len(kc_informer_store(inf)), 7);
  assert_string_equal(kc_informer_last_rv(inf), "250");
  assert_string_equal(kc_store_rv(kc_informer_store(inf), "t/o1"), "202");
}

static void test_dropped_stream_resumes_from_last_rv(void **state) {
  (void)state;
  set_obj("a", "1");
  script[0] = (struct watch_reply){200, EV("MODIFIED", "a", "300", "2"), false};
  script[1] = (struct watch_reply){200, EV("MODIFIED", "a", "301", "3"), true};
  nscript = 2;
  start(NULL, 0);
  run_until_watch(2);
  target_calls = 3;
  run_until(calls_reached);
  assert_int_equal(list_hits, 1); /* resumed, not relisted */
  assert_string_equal(watch_rv[1], "300");
  assert_true(has_call("update a 2>3"));
  kc_informer_stats st;
  kc_informer_get_stats(inf, &st);
  assert_int_equal((int)st.relists, 0);
}

static void check_gap_result(void) {
  kc_informer_stats st;
  kc_informer_get_stats(inf, &st);
  assert_int_equal((int)st.relists, 1);
  assert_int_equal((int)st.gone, 1);
  assert_int_equal(list_hits, 2);
  /* Exactly the missed changes, nothing for the unchanged object. */
  assert_int_equal(ncalls, 3 + 3);
  assert_true(has_call("update b 1>2"));
  assert_true(has_call("delete c"));
  assert_true(has_call("add d"));
  char rv[24];
  snprintf(rv, sizeof(rv), "%ld", rv_of("b"));
  assert_string_equal(kc_store_rv(kc_informer_store(inf), "t/b"), rv);
  assert_null(kc_store_get(kc_informer_store(inf), "t/c"));
  assert_int_equal((int)kc_store_len(kc_informer_store(inf)), 3);
}

static void test_error_event_410_relists_exact_diff(void **state) {
  (void)state;
  set_obj("a", "1");
  set_obj("b", "1");
  set_obj("c", "1");
  script[0] = (struct watch_reply){
      200,
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n",
      false, true};
  nscript = 1;
  start(NULL, 0);
  target_watches = 1;
  run_until(watches_reached);
  /* The gap, before the 410 frame is sent. */
  set_obj("b", "2");
  del_obj("c");
  set_obj("d", "1");
  gate_open = true;
  run_until_watch(2);
  check_gap_result();
  assert_string_equal(watch_rv[1], "106"); /* from the relist's resourceVersion */
}

static void test_http_410_relists_exact_diff(void **state) {
  (void)state;
  set_obj("a", "1");
  set_obj("b", "1");
  set_obj("c", "1");
  /* The first stream ends once the gate opens; resuming then gets 410. */
  script[0] = (struct watch_reply){200, "", false, true};
  script[1] = (struct watch_reply){410, NULL, false, false};
  nscript = 2;
  start(NULL, 0);
  target_watches = 1;
  run_until(watches_reached);
  set_obj("b", "2");
  del_obj("c");
  set_obj("d", "1");
  gate_open = true;
  run_until_watch(3);
  check_gap_result();
}

static void test_bad_frame_relists(void **state) {
  (void)state;
  static const char *bad[] = {
      EV("ADDED", "x", "400", "1") "{\"type\":\"TELEPORTED\",\"object\":{}}\n",
      EV("ADDED", "x", "400", "1") "{\"type\":\"ADDED\",\"object\":{\"metad\n",
  };
  for (size_t i = 0; i < 2; i++) {
    assert_int_equal(setup(NULL), 0);
    set_obj("a", "1");
    script[0] = (struct watch_reply){200, bad[i], false};
    nscript = 1;
    start(NULL, 0);
    run_until_watch(2);
    kc_informer_stats st;
    kc_informer_get_stats(inf, &st);
    assert_int_equal((int)st.frame_errors, 1);
    assert_int_equal((int)st.relists, 1);
    /* x was never on the server: the relist reports it deleted; a is untouched. */
    assert_true(has_call("add x"));
    assert_true(has_call("delete x"));
    assert_int_equal(ncalls, 3);
    assert_int_equal((int)kc_store_len(kc_informer_store(inf)), 1);
    assert_int_equal(teardown(NULL), 0);
  }
}

/* The decode hook: the store keeps a compact form; an object that does not decode is
 * skipped and the cached version stays. */
typedef struct {
  char name[16];
  int v;
} compact;

static int live_compact;

static void *decode(json_t *obj, void *ud, char *err, size_t errlen) {
  (void)ud;
  const char *v = json_string_value(json_object_get(json_object_get(obj, "data"), "v"));
  if (v == NULL || *v < '0' || *v > '9') {
    snprintf(err, errlen, "data.v is not a digit");
    return NULL;
  }
  compact *c = calloc(1, sizeof(*c));
  snprintf(c->name, sizeof(c->name), "%s", obj_name(obj));
  c->v = *v - '0';
  live_compact++;
  return c;
}

static void free_compact(void *o) {
  live_compact--;
  free(o);
}

static int compact_updates;
static void on_update_compact(const char *key, void *old, void *o, void *ud) {
  (void)key, (void)ud;
  assert_int_equal(((compact *)old)->v + 1, ((compact *)o)->v);
  compact_updates++;
}

static void test_decode_hook(void **state) {
  (void)state;
  set_obj("a", "1");
  set_obj("bad", "z");
  script[0] = (struct watch_reply){
      200, EV("MODIFIED", "a", "500", "2") EV("MODIFIED", "a", "501", "q"), false, false};
  /* The resumed watch gets 410 once the test has changed a on the server. */
  script[1] =
      (struct watch_reply){200, "{\"type\":\"ERROR\",\"object\":{\"code\":410}}\n", false, true};
  nscript = 2;
  kc_informer_handlers h = {0};
  h.decode = decode;
  h.free_obj = free_compact;
  h.on_update = on_update_compact;
  start(&h, 0);
  run_until_watch(2);
  kc_informer_stats st;
  kc_informer_get_stats(inf, &st);
  assert_int_equal((int)st.decode_errors, 2); /* bad in the LIST, a's second update */
  compact *c = kc_store_get(kc_informer_store(inf), "t/a");
  assert_non_null(c);
  assert_int_equal(c->v, 2); /* the undecodable update left the cached one */
  assert_int_equal(compact_updates, 1);
  /* A relist where a does not decode keeps the cached a rather than calling it deleted. */
  set_obj("a", "q");
  gate_open = true;
  run_until_watch(3);
  kc_informer_get_stats(inf, &st);
  assert_int_equal((int)st.relists, 1);
  assert_int_equal((int)st.decode_errors, 4);
  assert_int_equal((int)kc_store_len(kc_informer_store(inf)), 1);
  c = kc_store_get(kc_informer_store(inf), "t/a");
  assert_non_null(c);
  assert_int_equal(c->v, 2);
  assert_int_equal(live_compact, 1);
  kc_informer_free(inf);
  inf = NULL;
  release_holds = true;
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(live_compact, 0);
}

static int resyncs;
static void on_resync(const char *key, void *old, void *o, void *ud) {
  (void)key, (void)ud;
  assert_ptr_equal(old, o); /* a resync replays the cached object */
  resyncs++;
}
static bool two_rounds(void) {
  return resyncs >= 4;
}

static void test_resync_replays_cache(void **state) {
  (void)state;
  set_obj("a", "1");
  set_obj("b", "1");
  kc_informer_options o = {0};
  o.version = "v1";
  o.resource = "configmaps";
  o.namespace = "t";
  o.resync_ms = 1000;
  kc_informer_handlers h = {0};
  h.on_update = on_resync;
  assert_int_equal(kc_informer_new(client, &o, &h, &inf), 0);
  assert_int_equal(kc_informer_start(inf), 0);
  uint64_t t0 = uv_hrtime();
  run_until(two_rounds);
  uint64_t took = uv_hrtime() - t0;
  assert_true(took >= 1900000000ULL); /* two periods of 1 s, no API call */
  assert_int_equal(list_hits, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_list_pages_then_watch_events_and_bookmark, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_dropped_stream_resumes_from_last_rv, setup, teardown),
      cmocka_unit_test_setup_teardown(test_error_event_410_relists_exact_diff, setup, teardown),
      cmocka_unit_test_setup_teardown(test_http_410_relists_exact_diff, setup, teardown),
      cmocka_unit_test(test_bad_frame_relists),
      cmocka_unit_test_setup_teardown(test_decode_hook, setup, teardown),
      cmocka_unit_test_setup_teardown(test_resync_replays_cache, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
