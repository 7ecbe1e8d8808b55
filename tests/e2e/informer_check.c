/* Exercises kc_informer, kc_events and kc_leader against a real API server.
 *
 *   informer_check [--kubeconfig F] [--namespace NS] [flags] SCENARIO
 *
 * informer: an informer on the namespace's configmaps (--protobuf: in Kubernetes' protobuf
 *   encoding). Every handler call is appended to
 *   --log ("ADD name rv", "UPDATE name oldrv newrv", "DELETE name rv"); the store is written
 *   to --state ("name rv data.v" per line, unsorted) shortly after each change, and the
 *   informer's counters to --stats. Runs until SIGTERM/SIGINT.
 * events: records repeated, similar and spammy events about configmap --name (--uid) and
 *   exits when every write has been answered.
 * events-recreate: records an event, deletes every event in the namespace, records it again:
 *   the PATCH finds nothing and the event is created again with count 2.
 * leader: elects on Lease --name in the namespace with --identity, printing "LEADING id"
 *   and "STOPPED id"; while leading it writes its identity to configmap --name every 200 ms,
 *   only when kc_leader_fence allows, printing "WROTE" for each write it sends. Runs until
 *   SIGTERM (releasing the lease with --release) or until leadership is lost (exit 3). */
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "kc_api.h"
#include "kc_config.h"
#include "kc_error.h"
#include "kc_events.h"
#include "kc_flags.h"
#include "kc_informer.h"
#include "kc_leader.h"
#include "kc_log.h"
#include "kc_pb.h"

static uv_loop_t loop;
static kc_client *client;
static const char *ns = "default", *name = "informer-check", *identity = NULL, *uid = NULL;
static const char *state_path = NULL, *log_path = NULL, *stats_path = NULL;
static bool release_lease = false;
static int page_size = 50; /* small: several pages even for a small namespace */
static bool protobuf = false;
static int exit_code = 0;

/* ---- informer ---- */

static kc_informer *inf;
static FILE *hlog;
static uv_timer_t dump_timer;
static uv_signal_t sig_term, sig_int;
static bool dirty;

static const char *cm_name(void *obj) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}
static const char *cm_rv(void *obj) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

static void write_file(const char *path, const char *text) {
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (f == NULL)
    return;
  fputs(text, f);
  fclose(f);
  rename(tmp, path);
}

static void dump(uv_timer_t *t) {
  (void)t;
  if (!dirty)
    return;
  dirty = false;
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (m == NULL)
    return;
  kc_store_iter it;
  const char *key;
  void *obj;
  kc_store_iter_init(kc_informer_store(inf), &it);
  while (kc_store_iter_next(&it, &key, &obj)) {
    const char *v = json_string_value(json_object_get(json_object_get(obj, "data"), "v"));
    fprintf(m, "%s %s %s\n", cm_name(obj), cm_rv(obj), v ? v : "-");
  }
  fclose(m);
  if (state_path)
    write_file(state_path, buf);
  free(buf);
  if (stats_path) {
    kc_informer_stats st;
    kc_informer_get_stats(inf, &st);
    char s[512];
    snprintf(s, sizeof(s),
             "synced=%d lists=%" PRIu64 " relists=%" PRIu64 " watches=%" PRIu64 " gone=%" PRIu64
             " events=%" PRIu64 " frame_errors=%" PRIu64 " last_list_items=%zu last_list_ms=%.1f"
             " protobuf_replies=%" PRIu64 " state=%s\n",
             kc_informer_has_synced(inf), st.lists, st.relists, st.watches, st.gone, st.events,
             st.frame_errors, st.last_list_items, (double)st.last_list_ns / 1e6,
             st.protobuf_replies, kc_informer_state_name(kc_informer_get_state(inf)));
    write_file(stats_path, s);
  }
}

/* --protobuf: a ConfigMap in protobuf into the JSON shape the rest of this file reads. */
static void *decode_pb(const uint8_t *data, size_t len, void *ud, char *err, size_t errlen) {
  (void)ud;
  K8s__ConfigMap *cm = k8s__config_map__unpack(NULL, len, data);
  if (!cm || !cm->metadata || !cm->metadata->name) {
    snprintf(err, errlen, "not a protobuf ConfigMap");
    kc_pb_free(cm);
    return NULL;
  }
  json_t *d = json_object();
  for (size_t i = 0; i < cm->n_data; i++)
    json_object_set_new(d, cm->data[i]->key,
                        json_string(cm->data[i]->value ? cm->data[i]->value : ""));
  const char *rv = cm->metadata->resource_version;
  json_t *o = json_pack("{s:{s:s,s:s},s:o}", "metadata", "name", cm->metadata->name,
                        "resourceVersion", rv ? rv : "", "data", d);
  kc_pb_free(cm);
  return o;
}

static void on_add(const char *key, void *obj, void *ud) {
  (void)key;
  (void)ud;
  fprintf(hlog, "ADD %s %s\n", cm_name(obj), cm_rv(obj));
  fflush(hlog);
  dirty = true;
}
static void on_update(const char *key, void *old, void *obj, void *ud) {
  (void)key;
  (void)ud;
  fprintf(hlog, "UPDATE %s %s %s\n", cm_name(obj), cm_rv(old), cm_rv(obj));
  fflush(hlog);
  dirty = true;
}
static void on_delete(const char *key, void *obj, void *ud) {
  (void)key;
  (void)ud;
  fprintf(hlog, "DELETE %s %s\n", cm_name(obj), cm_rv(obj));
  fflush(hlog);
  dirty = true;
}
static void on_synced(void *ud) {
  (void)ud;
  fprintf(hlog, "SYNCED\n");
  fflush(hlog);
  dirty = true;
}

static void on_signal_informer(uv_signal_t *s, int signum) {
  (void)s;
  (void)signum;
  dirty = true;
  dump(NULL);
  kc_informer_free(inf);
  inf = NULL;
  uv_close((uv_handle_t *)&dump_timer, NULL);
  uv_close((uv_handle_t *)&sig_term, NULL);
  uv_close((uv_handle_t *)&sig_int, NULL);
  kc_client_free(client);
  client = NULL;
}

static void scenario_informer(void) {
  hlog = log_path ? fopen(log_path, "a") : stdout;
  if (hlog == NULL) {
    perror(log_path);
    exit_code = 1;
    return;
  }
  kc_informer_options o = {0};
  o.version = "v1";
  o.resource = "configmaps";
  o.namespace = ns;
  o.page_size = page_size;
  o.protobuf = protobuf;
  kc_informer_handlers h = {0};
  h.decode_pb = decode_pb;
  h.on_add = on_add;
  h.on_update = on_update;
  h.on_delete = on_delete;
  h.on_synced = on_synced;
  int rc = kc_informer_new(client, &o, &h, &inf);
  if (rc == 0)
    rc = kc_informer_start(inf);
  if (rc) {
    fprintf(stderr, "informer_check: %s\n", kc_strerror(rc));
    exit_code = 1;
    return;
  }
  uv_timer_init(&loop, &dump_timer);
  uv_timer_start(&dump_timer, dump, 50, 50);
  uv_signal_init(&loop, &sig_term);
  uv_signal_start(&sig_term, on_signal_informer, SIGTERM);
  uv_signal_init(&loop, &sig_int);
  uv_signal_start(&sig_int, on_signal_informer, SIGINT);
  uv_run(&loop, UV_RUN_DEFAULT);
  if (hlog != stdout)
    fclose(hlog);
}

/* ---- events ---- */

static kc_event_recorder *rec;
static uv_timer_t poll_timer;

static void events_poll(uv_timer_t *t) {
  if (kc_event_pending(rec) > 0)
    return;
  kc_event_stats st;
  kc_event_get_stats(rec, &st);
  printf("recorded=%" PRIu64 " spam_dropped=%" PRIu64 " created=%" PRIu64 " patched=%" PRIu64
         " failed=%" PRIu64 "\n",
         st.recorded, st.dropped_spam, st.created, st.patched, st.failed);
  if (st.failed)
    exit_code = 1;
  kc_event_recorder_free(rec);
  rec = NULL;
  uv_close((uv_handle_t *)t, NULL);
}

static void scenario_events(void) {
  int rc = kc_event_recorder_new(client, "informer-check", NULL, &rec);
  if (rc) {
    fprintf(stderr, "informer_check: %s\n", kc_strerror(rc));
    exit_code = 1;
    return;
  }
  kc_object_ref o = {
      .kind = "ConfigMap", .namespace = ns, .name = name, .uid = uid, .api_version = "v1"};
  /* 5 identical: one event, count 5. */
  for (int i = 0; i < 5; i++)
    kc_event_record(rec, &o, KC_EVENT_WARNING, "Repeated", "the same thing happened again");
  /* 12 similar (distinct messages): 9 events, then one combined with count 3. */
  for (int i = 0; i < 12; i++)
    kc_event_record(rec, &o, KC_EVENT_NORMAL, "Similar", "similar thing number %d", i);
  /* 40 identical about another object: the spam filter lets 25 through (count 25). */
  kc_object_ref o2 = o;
  char other[300];
  snprintf(other, sizeof(other), "%s-spam", name);
  o2.name = other;
  for (int i = 0; i < 40; i++)
    kc_event_record(rec, &o2, KC_EVENT_NORMAL, "Spammy", "spam");
  uv_timer_init(&loop, &poll_timer);
  uv_timer_start(&poll_timer, events_poll, 20, 20);
  uv_run(&loop, UV_RUN_DEFAULT);
}

/* events-recreate: an event whose object was deleted server-side is created again by the
 * PATCH that finds it gone, with the count carried on. */
static int step, deletes_left;

static void deleted_cb(const kc_api_result *res, void *data) {
  (void)data;
  if (res->err)
    fprintf(stderr, "informer_check: delete event: %s\n", res->message);
  deletes_left--;
}

static void listed_cb(const kc_api_result *res, void *data) {
  (void)data;
  size_t i;
  json_t *it;
  json_array_foreach(json_object_get(res->obj, "items"), i, it) {
    const char *n = json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
    kc_ref ref = {NULL, "v1", "events", ns, n, NULL};
    if (n && kc_api_call(client, KC_DELETE, &ref, NULL, NULL, deleted_cb, NULL) == 0)
      deletes_left++;
  }
  printf("deleted %d events\n", deletes_left);
  step = 3;
}

static void recreate_step(uv_timer_t *t) {
  kc_object_ref o = {
      .kind = "ConfigMap", .namespace = ns, .name = name, .uid = uid, .api_version = "v1"};
  kc_ref list_ref = {NULL, "v1", "events", ns, NULL, NULL};
  switch (step) {
  case 0:
    kc_event_record(rec, &o, KC_EVENT_NORMAL, "Again", "once more");
    step = 1;
    break;
  case 1:
    if (kc_event_pending(rec) == 0 &&
        kc_api_call(client, KC_LIST, &list_ref, NULL, NULL, listed_cb, NULL) == 0)
      step = 2;
    break;
  case 3:
    if (deletes_left == 0) {
      kc_event_record(rec, &o, KC_EVENT_NORMAL, "Again", "once more");
      step = 4;
    }
    break;
  case 4:
    if (kc_event_pending(rec) == 0)
      events_poll(t);
    break;
  }
}

static void scenario_events_recreate(void) {
  int rc = kc_event_recorder_new(client, "informer-check", NULL, &rec);
  if (rc) {
    fprintf(stderr, "informer_check: %s\n", kc_strerror(rc));
    exit_code = 1;
    return;
  }
  uv_timer_init(&loop, &poll_timer);
  uv_timer_start(&poll_timer, recreate_step, 20, 20);
  uv_run(&loop, UV_RUN_DEFAULT);
}

/* ---- leader ---- */

static kc_leader *leader;
static uv_timer_t work_timer;
static bool writing;

static void work_done(const kc_api_result *res, void *data) {
  (void)data;
  writing = false;
  if (res->err && res->err != KC_ECANCELED)
    fprintf(stderr, "informer_check: write as leader failed: %s\n", res->message);
}

/* While leading, the "work": a merge patch that names us, only through the fence. */
static void work(uv_timer_t *t) {
  (void)t;
  if (writing || kc_leader_fence(leader) != 0)
    return;
  json_t *patch = json_pack("{s:{s:s}}", "data", "writer", kc_leader_identity(leader));
  kc_ref ref = {NULL, "v1", "configmaps", ns, name, NULL};
  if (patch && kc_api_call(client, KC_PATCH_MERGE, &ref, NULL, patch, work_done, NULL) == 0) {
    writing = true;
    printf("WROTE\n");
    fflush(stdout);
  }
  json_decref(patch);
}

static void shutdown_leader(void) {
  kc_leader_free(leader);
  leader = NULL;
  uv_close((uv_handle_t *)&work_timer, NULL);
  uv_close((uv_handle_t *)&sig_term, NULL);
  uv_close((uv_handle_t *)&sig_int, NULL);
}

static void started(void *ud) {
  (void)ud;
  printf("LEADING %s\n", kc_leader_identity(leader));
  fflush(stdout);
}

static void stopped(void *ud) {
  (void)ud;
  printf("STOPPED %s fence=%d\n", kc_leader_identity(leader), kc_leader_fence(leader));
  fflush(stdout);
  exit_code = 3; /* like Volcano: leadership lost ends the process */
  shutdown_leader();
  uv_stop(&loop); /* main frees the client: not from inside one of its callbacks */
}

static void new_leader(const char *id, void *ud) {
  (void)ud;
  printf("HOLDER %s\n", *id ? id : "-");
  fflush(stdout);
}

static uv_timer_t exit_timer;

static void exit_now(uv_timer_t *t) {
  uv_close((uv_handle_t *)t, NULL);
  uv_stop(&loop);
}

static void on_signal_leader(uv_signal_t *s, int signum) {
  (void)s;
  (void)signum;
  shutdown_leader();
  /* Give the release (if any) a moment; the client's connection may keep the loop alive. */
  uv_timer_init(&loop, &exit_timer);
  uv_timer_start(&exit_timer, exit_now, 1000, 0);
}

static void scenario_leader(void) {
  kc_leader_options o = KC_LEADER_OPTIONS_INIT(name);
  o.resource_namespace = ns;
  o.release_on_cancel = release_lease;
  kc_leader_callbacks cb = {started, stopped, new_leader, NULL};
  int rc = kc_leader_new(client, &o, identity, &cb, &leader);
  if (rc == 0)
    rc = kc_leader_start(leader);
  if (rc) {
    fprintf(stderr, "informer_check: %s\n", kc_strerror(rc));
    exit_code = 1;
    return;
  }
  printf("IDENTITY %s\n", kc_leader_identity(leader));
  fflush(stdout);
  uv_timer_init(&loop, &work_timer);
  uv_timer_start(&work_timer, work, 200, 200);
  uv_signal_init(&loop, &sig_term);
  uv_signal_start(&sig_term, on_signal_leader, SIGTERM);
  uv_signal_init(&loop, &sig_int);
  uv_signal_start(&sig_int, on_signal_leader, SIGINT);
  uv_run(&loop, UV_RUN_DEFAULT);
}

int main(int argc, char **argv) {
  const char *kubeconfig = NULL;
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(-1, 0);
  int nargs = 0;
  const kc_flag flags[] = {
      {"kubeconfig", KC_FLAG_STRING, &kubeconfig, "kubeconfig", NULL, NULL, false, NULL},
      {"namespace", KC_FLAG_STRING, &ns, "namespace", "default", NULL, false, NULL},
      {"name", KC_FLAG_STRING, &name, "object or lease name", NULL, NULL, false, NULL},
      {"uid", KC_FLAG_STRING, &uid, "uid of the events' object", NULL, NULL, false, NULL},
      {"identity", KC_FLAG_STRING, &identity, "leader identity", NULL, NULL, false, NULL},
      {"release", KC_FLAG_BOOL, &release_lease, "release the lease on SIGTERM", "false", NULL,
       false, NULL},
      {"state", KC_FLAG_STRING, &state_path, "store dump file", NULL, NULL, false, NULL},
      {"log", KC_FLAG_STRING, &log_path, "handler log file", NULL, NULL, false, NULL},
      {"stats", KC_FLAG_STRING, &stats_path, "informer counters file", NULL, NULL, false, NULL},
      {"page", KC_FLAG_INT, &page_size, "informer LIST page size", "50", NULL, false, NULL},
      {"protobuf", KC_FLAG_BOOL, &protobuf, "informer: ask for Kubernetes' protobuf encoding",
       "false", NULL, false, NULL},
      {"v", KC_FLAG_INT, &kc_log_verbosity, "log verbosity", "0", NULL, false, NULL},
  };
  char err[512];
  if (kc_flags_parse(flags, sizeof(flags) / sizeof(flags[0]), argc, argv, &nargs, err,
                     sizeof(err)) != 0 ||
      nargs != 1) {
    fprintf(stderr, "usage: informer_check [flags] informer|events|events-recreate|leader\n%s\n",
            nargs != 1 ? "" : err);
    return 2;
  }
  const char *scenario = argv[0];
  kc_config cfg;
  if (kc_config_load(&cfg, kubeconfig, NULL, err, sizeof(err)) != 0) {
    fprintf(stderr, "informer_check: %s\n", err);
    return 1;
  }
  uv_loop_init(&loop);
  int rc = kc_client_new(&loop, &cfg, &opt, &client);
  if (rc) {
    fprintf(stderr, "informer_check: %s\n", kc_strerror(rc));
    return 1;
  }
  if (strcmp(scenario, "informer") == 0)
    scenario_informer();
  else if (strcmp(scenario, "events") == 0)
    scenario_events();
  else if (strcmp(scenario, "events-recreate") == 0)
    scenario_events_recreate();
  else if (strcmp(scenario, "leader") == 0)
    scenario_leader();
  else {
    fprintf(stderr, "informer_check: unknown scenario %s\n", scenario);
    exit_code = 2;
  }
  kc_client_free(client);
  uv_run(&loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&loop);
  if (rc) {
    fprintf(stderr, "informer_check: loop did not close cleanly: %s\n", uv_strerror(rc));
    exit_code = 1;
  }
  kc_config_close(&cfg);
  return exit_code;
}
