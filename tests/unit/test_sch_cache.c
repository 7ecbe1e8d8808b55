/* The scheduler cache without a server: objects are put into the informers' stores the way
 * the informers would, and the snapshot message, the assume/forget overlay and the dump are
 * checked. The client points at a port nobody listens on and is never used: the informers
 * are not started. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "failalloc.h"
#include "kc_api.h"
#include "kc_clock.h"
#include "kc_codec.h"
#include "kc_config.h"
#include "kc_error.h"
#include "kc_pb.h"
#include "kc_store.h"
#include "sch_cache.h"
#include "sch_shell.h"

typedef struct {
  uv_loop_t loop;
  kc_config cfg;
  kc_client *client;
  sch_cache *cache;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  if (f == NULL || uv_loop_init(&f->loop) != 0)
    return -1;
  f->cfg.server = strdup("https://127.0.0.1:1");
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(0, 0);
  if (kc_client_new(&f->loop, &f->cfg, &opt, &f->client) != 0)
    return -1;
  sch_cache_options co = {0};
  if (sch_cache_new(f->client, &co, &f->cache) != 0)
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  sch_cache_free(f->cache);
  kc_client_free(f->client);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&f->loop);
  kc_config_close(&f->cfg);
  free(f);
  return rc == 0 ? 0 : -1;
}

/* Decodes JSON text with the informers' decoders and stores the result under its key. */
static void put_pod(sch_cache *c, const char *ns, const char *name, const char *node) {
  char text[1024];
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"uid\":\"u-%s\","
           "\"annotations\":{\"scheduling.k8s.io/group-name\":\"pg\"}},"
           "\"spec\":{\"schedulerName\":\"volcano\",\"nodeName\":\"%s\",\"containers\":[{"
           "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"
           "\"status\":{\"phase\":\"Pending\"}}",
           ns, name, name, node ? node : "");
  json_t *j = json_loads(text, 0, NULL);
  assert_non_null(j);
  Kiln__Pod *p = NULL;
  char err[256];
  assert_int_equal(kc_pod_decode(j, &p, err, sizeof(err)), 0);
  json_decref(j);
  char key[256];
  assert_int_equal(kc_store_key(key, sizeof(key), ns, name), 0);
  assert_int_equal(kc_store_put(sch_cache_store(c, SCH_CACHE_PODS), key, p, "1"), 0);
}

static void put_node(sch_cache *c, const char *name) {
  char text[512];
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":{\"cpu\":\"4\"},"
           "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
           name);
  json_t *j = json_loads(text, 0, NULL);
  Kiln__Node *n = NULL;
  char err[256];
  assert_int_equal(kc_node_decode(j, &n, err, sizeof(err)), 0);
  json_decref(j);
  assert_int_equal(kc_store_put(sch_cache_store(c, SCH_CACHE_NODES), name, n, "1"), 0);
}

static const Kiln__Pod *snap_pod(const sch_cache_snap *s, const char *name) {
  for (size_t i = 0; i < s->msg.n_pods; i++)
    if (strcmp(s->msg.pods[i]->name, name) == 0)
      return s->msg.pods[i];
  return NULL;
}

static void test_not_synced_before_start(void **state) {
  fixture *f = *state;
  assert_false(sch_cache_synced(f->cache));
  sch_cache_tick(f->cache); /* no Queue list yet: must not try to create the default queue */
  assert_int_equal(uv_run(&f->loop, UV_RUN_NOWAIT), 0);
}

static void test_snapshot_borrows_every_store(void **state) {
  fixture *f = *state;
  put_node(f->cache, "n1");
  put_node(f->cache, "n2");
  put_pod(f->cache, "ns", "a", NULL);
  put_pod(f->cache, "ns", "b", "n1");
  sch_cache_snap s, t;
  assert_int_equal(sch_cache_snapshot(f->cache, &s), 0);
  assert_int_equal(s.msg.n_nodes, 2);
  assert_int_equal(s.msg.n_pods, 2);
  assert_int_equal(s.msg.n_pod_groups, 0);
  assert_string_equal(snap_pod(&s, "b")->node_name, "n1");
  assert_string_equal(snap_pod(&s, "a")->node_name, "");
  /* The same object, not a copy, when nothing is assumed. */
  assert_ptr_equal(snap_pod(&s, "a"),
                   kc_store_get(sch_cache_store(f->cache, SCH_CACHE_PODS), "ns/a"));
  assert_int_equal(sch_cache_snapshot(f->cache, &t), 0);
  assert_true(t.msg.generation > s.msg.generation);
  sch_cache_snap_close(&s);
  sch_cache_snap_close(&t);
}

static void test_assumed_pod_is_bound_in_snapshot_until_forgotten(void **state) {
  fixture *f = *state;
  put_node(f->cache, "n1");
  put_pod(f->cache, "ns", "a", NULL);
  put_pod(f->cache, "ns", "b", NULL);
  assert_int_equal(sch_cache_assume(f->cache, "ns/a", "n1"), 0);
  assert_string_equal(sch_cache_assumed_node(f->cache, "ns/a"), "n1");
  assert_null(sch_cache_assumed_node(f->cache, "ns/b"));
  sch_cache_snap s;
  assert_int_equal(sch_cache_snapshot(f->cache, &s), 0);
  const Kiln__Pod *a = snap_pod(&s, "a");
  assert_string_equal(a->node_name, "n1");
  assert_string_equal(a->uid, "u-a"); /* the rest of the pod is the cached one */
  assert_string_equal(snap_pod(&s, "b")->node_name, "");
  /* The cached pod itself is untouched. */
  const Kiln__Pod *cached = kc_store_get(sch_cache_store(f->cache, SCH_CACHE_PODS), "ns/a");
  assert_string_equal(cached->node_name, "");
  assert_ptr_not_equal(a, cached);
  sch_cache_snap_close(&s);

  sch_cache_forget(f->cache, "ns/a");
  sch_cache_forget(f->cache, "ns/never"); /* no-op */
  assert_int_equal(sch_cache_nassumed(f->cache), 0);
  assert_int_equal(sch_cache_snapshot(f->cache, &s), 0);
  assert_string_equal(snap_pod(&s, "a")->node_name, "");
  sch_cache_snap_close(&s);
  sch_cache_stats st;
  sch_cache_get_stats(f->cache, &st);
  assert_int_equal(st.forgotten, 1);
  assert_int_equal(st.pods, 2);
  assert_int_equal(st.nodes, 1);
}

/* A pod the API server already shows on a node wins over a stale assumption. */
static void test_real_node_wins_over_assumption(void **state) {
  fixture *f = *state;
  put_pod(f->cache, "ns", "a", "n2");
  assert_int_equal(sch_cache_assume(f->cache, "ns/a", "n1"), 0);
  sch_cache_snap s;
  assert_int_equal(sch_cache_snapshot(f->cache, &s), 0);
  assert_string_equal(snap_pod(&s, "a")->node_name, "n2");
  assert_int_equal(s.nassumed, 0);
  sch_cache_snap_close(&s);
}

static void test_dump_round_trips(void **state) {
  fixture *f = *state;
  put_node(f->cache, "n1");
  put_pod(f->cache, "ns", "a", NULL);
  put_pod(f->cache, "ns", "b", NULL);
  assert_int_equal(sch_cache_assume(f->cache, "ns/b", "n1"), 0);
  char path[] = "/tmp/test_sch_cache_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(sch_cache_dump(f->cache, path), 0);
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  static uint8_t buf[1 << 16];
  size_t n = fread(buf, 1, sizeof(buf), fp);
  fclose(fp);
  unlink(path);
  Kiln__Snapshot *m = kiln__snapshot__unpack(NULL, n, buf);
  assert_non_null(m);
  assert_int_equal(m->n_nodes, 1);
  assert_int_equal(m->n_pods, 2);
  int onto_n1 = 0;
  for (size_t i = 0; i < m->n_pods; i++)
    if (strcmp(m->pods[i]->name, "b") == 0 && strcmp(m->pods[i]->node_name, "n1") == 0)
      onto_n1++;
  assert_int_equal(onto_n1, 1); /* the replay sees what the session saw */
  kiln__snapshot__free_unpacked(m, NULL);
  /* A directory that does not exist: an error, no crash, nothing left behind. */
  assert_int_equal(sch_cache_dump(f->cache, "/nonexistent-dir/x.pb"), KC_EIO);
}

/* The default dump name is predictable and in /tmp: links planted at the name and at the
 * old temporary name (path.tmp, opened with fopen before) must not be written through, and
 * the file is 0600 whatever the umask (it was 0666 & ~umask). */
static void test_dump_does_not_follow_planted_links(void **state) {
  fixture *f = *state;
  put_node(f->cache, "n1");
  char dir[] = "/tmp/test_sch_dump_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char victim[128], path[128], tmp[160];
  snprintf(victim, sizeof(victim), "%s/victim", dir);
  snprintf(path, sizeof(path), "%s/volcano-scheduler-1.snapshot.pb", dir);
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *fp = fopen(victim, "w");
  assert_non_null(fp);
  fputs("keep", fp);
  fclose(fp);
  assert_int_equal(symlink(victim, tmp), 0);
  assert_int_equal(symlink(victim, path), 0);
  mode_t old = umask(0);
  int rc = sch_cache_dump(f->cache, path);
  umask(old);
  assert_int_equal(rc, 0);
  char got[16] = "";
  fp = fopen(victim, "r");
  assert_non_null(fp);
  assert_non_null(fgets(got, sizeof(got), fp));
  fclose(fp);
  assert_string_equal(got, "keep");
  struct stat st;
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_mode & 07777, 0600);
  assert_true(st.st_size > 0);
  /* Nothing else is left in the directory: the victim, the link at .tmp, the dump. */
  int n = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += e->d_name[0] != '.';
  closedir(d);
  assert_int_equal(n, 3);
  unlink(tmp);
  unlink(path);
  unlink(victim);
  assert_int_equal(rmdir(dir), 0);
}

/* ---- the shell's rules ---- */

static void test_new_work_is_a_pending_pod_of_ours_or_a_pending_pod_group(void **state) {
  (void)state;
  const char *names[] = {"volcano", "kiln"};
  Kiln__Pod p = KILN__POD__INIT;
  p.name = "p";
  p.scheduler_name = "kiln";
  p.phase = KILN__POD_PHASE__POD_PHASE_PENDING;
  p.node_name = "";
  assert_true(sch_shell_is_new_work(SCH_CACHE_PODS, NULL, &p, names, 2));
  /* An update (our condition patch, a confirmation, a resync) is not new work. */
  assert_false(sch_shell_is_new_work(SCH_CACHE_PODS, &p, &p, names, 2));
  /* Another scheduler's pod; the default name without a list. */
  assert_false(sch_shell_is_new_work(SCH_CACHE_PODS, NULL, &p, NULL, 0));
  p.scheduler_name = "volcano";
  assert_true(sch_shell_is_new_work(SCH_CACHE_PODS, NULL, &p, NULL, 0));
  p.scheduler_name = "default-scheduler";
  assert_false(sch_shell_is_new_work(SCH_CACHE_PODS, NULL, &p, names, 2));
  p.scheduler_name = "volcano";
  /* Already on a node, terminating, or finished: nothing to place. */
  p.node_name = "n1";
  assert_false(sch_shell_is_new_work(SCH_CACHE_PODS, NULL, &p, names, 2));
  p.node_name = "";
  p.deletion_time = 5;
  assert_false(sch_shell_is_new_work(SCH_CACHE_PODS, NULL, &p, names, 2));
  p.deletion_time = 0;
  p.phase = KILN__POD_PHASE__POD_PHASE_SUCCEEDED;
  assert_false(sch_shell_is_new_work(SCH_CACHE_PODS, NULL, &p, names, 2));

  Kiln__PodGroup a = KILN__POD_GROUP__INIT, b = KILN__POD_GROUP__INIT;
  Kiln__PodGroupStatus sa = KILN__POD_GROUP_STATUS__INIT, sb = KILN__POD_GROUP_STATUS__INIT;
  a.status = &sa;
  b.status = &sb;
  /* A new PodGroup, whatever its phase; one that went back to Pending. */
  assert_true(sch_shell_is_new_work(SCH_CACHE_PODGROUPS, NULL, &a, names, 2));
  sa.phase = "Running";
  sb.phase = "Pending";
  assert_true(sch_shell_is_new_work(SCH_CACHE_PODGROUPS, &a, &b, names, 2));
  /* Our own writes (Pending -> Inqueue -> Running) and resyncs are not. */
  assert_false(sch_shell_is_new_work(SCH_CACHE_PODGROUPS, &b, &a, names, 2));
  assert_false(sch_shell_is_new_work(SCH_CACHE_PODGROUPS, &b, &b, names, 2));
  /* Nodes and queues never start a session early. */
  assert_false(sch_shell_is_new_work(SCH_CACHE_NODES, NULL, &a, names, 2));
}

static void test_early_delay_keeps_the_gap_between_sessions(void **state) {
  (void)state;
  /* Long after the last session: the delay as asked. */
  assert_int_equal(sch_shell_early_delay(10000, 5000, 20, 200), 20);
  /* 50 ms after a session started: wait until 200 ms have passed since it. */
  assert_int_equal(sch_shell_early_delay(10050, 10000, 20, 200), 150);
  /* Exactly on the gap. */
  assert_int_equal(sch_shell_early_delay(10180, 10000, 20, 200), 20);
}

static void test_pod_group_write_waits_for_binds_then_at_most_a_period(void **state) {
  (void)state;
  /* Nothing settling: written at once. */
  assert_false(sch_shell_pg_hold(false, false, 0, 5000, 1000));
  assert_false(sch_shell_pg_hold(false, false, 4000, 5000, 1000));
  /* Binds in flight: held however long they take. */
  assert_true(sch_shell_pg_hold(true, false, 0, 5000, 1000));
  assert_true(sch_shell_pg_hold(true, true, 1000, 5000, 1000));
  /* Bound, not Running yet: held for one period from the first hold. */
  assert_true(sch_shell_pg_hold(false, true, 0, 5000, 1000));
  assert_true(sch_shell_pg_hold(false, true, 5000, 5999, 1000));
  assert_false(sch_shell_pg_hold(false, true, 5000, 6000, 1000));
}

static void test_incomplete_gang_condition_is_quiet_for_a_while(void **state) {
  (void)state;
  assert_true(sch_shell_pg_quiet(5000, 5000, 30000));
  assert_true(sch_shell_pg_quiet(5000, 34999, 30000));
  assert_false(sch_shell_pg_quiet(5000, 35000, 30000));
}

/* The holds remember since when in the next period's map. When that memory cannot be
 * written (allocation refused) the status goes out now: a hold that forgot its start would
 * begin again every period and the status would never be written. */
static void test_pod_group_hold_without_memory_writes(void **state) {
  (void)state;
  kc_strmap prev, next;
  kc_strmap_init(&prev, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&next, KC_STRMAP_COPY_KEYS);
  /* with memory: held, and remembered */
  assert_true(sch_shell_pg_quiet_track(&prev, &next, "ns/pg", 5000, 30000));
  assert_true(kc_strmap_has(&next, "ns/pg"));
  kc_strmap_close(&next, NULL);
  kc_strmap_init(&next, KC_STRMAP_COPY_KEYS);
  assert_true(sch_shell_pg_hold_track(&prev, &next, "ns/pg", false, true, 5000, 1000));
  assert_true(kc_strmap_has(&next, "ns/pg"));
  kc_strmap_close(&next, NULL);
  /* without: written now */
  kc_strmap_init(&next, KC_STRMAP_COPY_KEYS);
  failalloc_after(0);
  bool quiet = sch_shell_pg_quiet_track(&prev, &next, "ns/pg", 5000, 30000);
  failalloc_off();
  assert_int_equal(failalloc_failed, 1);
  assert_false(quiet);
  failalloc_after(0);
  bool held = sch_shell_pg_hold_track(&prev, &next, "ns/pg", false, true, 5000, 1000);
  failalloc_off();
  assert_int_equal(failalloc_failed, 1);
  assert_false(held);
  /* binds in flight hold without memory: the hold ends with them, not with a clock */
  failalloc_after(0);
  assert_true(sch_shell_pg_hold_track(&prev, &next, "ns/pg", true, false, 5000, 1000));
  failalloc_off();
  kc_strmap_close(&next, NULL);
  kc_strmap_close(&prev, NULL);
}

/* A held cache keeps the objects a snapshot borrowed while the watch replaces and deletes
 * them (ASan sees any use after free), and the node name an assumption lends the overlay
 * outlives the assumption; the overlay is applied after the changes, as a worker does. */
static void test_held_snapshot_outlives_watch_changes(void **state) {
  fixture *f = *state;
  put_node(f->cache, "n1");
  put_pod(f->cache, "ns", "a", NULL);
  put_pod(f->cache, "ns", "b", NULL);
  put_pod(f->cache, "ns", "c", NULL);
  assert_int_equal(sch_cache_assume(f->cache, "ns/b", "n1"), 0);
  assert_int_equal(sch_cache_assume(f->cache, "ns/c", "n1"), 0);
  assert_int_equal(sch_cache_evicting(f->cache, "ns/c", "u-c"), 0);
  sch_cache_snap s;
  assert_int_equal(sch_cache_snapshot_deferred(f->cache, &s), 0);
  sch_cache_hold(f->cache);
  put_pod(f->cache, "ns", "a", "n1"); /* replaced */
  put_pod(f->cache, "ns", "b", "n1");
  sch_cache_forget(f->cache, "ns/b"); /* the assumption and its node string go */
  assert_int_equal(sch_cache_assume(f->cache, "ns/c", "n2"), 0); /* replaced */
  assert_int_equal(kc_store_delete(sch_cache_store(f->cache, SCH_CACHE_NODES), "n1"), 0);
  assert_int_equal(sch_cache_snap_finish(&s), 0);
  const Kiln__Pod *a = snap_pod(&s, "a"), *b = snap_pod(&s, "b"), *c = snap_pod(&s, "c");
  assert_string_equal(a->uid, "u-a");
  assert_string_equal(a->node_name, "");
  assert_string_equal(b->node_name, "n1");
  assert_string_equal(c->node_name, "n1"); /* one copy: assumed and being evicted */
  assert_true(c->deletion_time != 0);
  assert_int_equal(s.nassumed, 2);
  assert_string_equal(s.msg.nodes[0]->name, "n1");
  assert_int_equal(kc_store_nheld(sch_cache_store(f->cache, SCH_CACHE_PODS)), 2);
  sch_cache_snap_close(&s);
  sch_cache_unhold(f->cache);
  assert_int_equal(kc_store_nheld(sch_cache_store(f->cache, SCH_CACHE_PODS)), 0);
}

static void test_bind_only_a_pod_still_pending(void **state) {
  (void)state;
  Kiln__Pod then = KILN__POD__INIT, now = KILN__POD__INIT;
  then.uid = now.uid = "u1";
  then.node_name = now.node_name = "";
  assert_true(sch_shell_still_pending(&then, &now));
  assert_false(sch_shell_still_pending(&then, NULL)); /* deleted */
  now.node_name = "n1";
  assert_false(sch_shell_still_pending(&then, &now)); /* bound meanwhile */
  now.node_name = NULL;
  assert_true(sch_shell_still_pending(&then, &now));
  now.deletion_time = 5;
  assert_false(sch_shell_still_pending(&then, &now)); /* terminating */
  now.deletion_time = 0;
  now.uid = "u2";
  assert_false(sch_shell_still_pending(&then, &now)); /* recreated under its name */
}

static void test_foreign_groups_are_those_of_pods_without_our_job(void **state) {
  (void)state;
  Kiln__Pod p[3] = {KILN__POD__INIT, KILN__POD__INIT, KILN__POD__INIT};
  p[0].namespace_ = "ns";
  p[0].group_name = "theirs";
  p[1].namespace_ = "ns";
  p[1].group_name = "ours";
  p[2].namespace_ = "ns";
  p[2].group_name = ""; /* a plain pod of another scheduler */
  sch_task t[3] = {{.pod = &p[0], .job = -1}, {.pod = &p[1], .job = 0}, {.pod = &p[2], .job = -1}};
  sch_snapshot snap = {0};
  snap.tasks = t;
  snap.ntasks = 3;
  kc_strmap m;
  kc_strmap_init(&m, KC_STRMAP_COPY_KEYS);
  assert_int_equal(sch_shell_foreign_groups(&snap, &m), 0);
  assert_int_equal(kc_strmap_len(&m), 1);
  assert_true(kc_strmap_has(&m, "ns/theirs"));
  kc_strmap_close(&m, NULL);
}

/* The session's condition replaces the one of its type, a missing one is added, and an
 * Unschedulable=True turns False once the gang is Scheduled; times alone are no change. */
static void test_pod_group_conditions_merge(void **state) {
  (void)state;
  Kiln__PodGroupCondition c0 = KILN__POD_GROUP_CONDITION__INIT;
  c0.type = "Unschedulable";
  c0.status = "True";
  c0.reason = "NotEnoughResources";
  c0.message = "1/2 tasks in gang unschedulable";
  c0.last_transition_time = "2026-01-01T00:00:00Z";
  Kiln__PodGroupCondition *cp[] = {&c0};
  Kiln__PodGroupStatus cur = KILN__POD_GROUP_STATUS__INIT;
  cur.n_conditions = 1;
  cur.conditions = cp;
  sch_pg_status ps = {0};
  ps.has_condition = true;
  ps.condition.type = "Unschedulable";
  ps.condition.status = "True";
  ps.condition.reason = "NotEnoughResources";
  ps.condition.message = "1/2 tasks in gang unschedulable";
  Kiln__PodGroupCondition conds[2];
  Kiln__PodGroupCondition *cptr[2];
  bool changed = true;
  const char *ts = "2026-02-02T00:00:00Z";
  assert_int_equal(sch_shell_pg_conditions(&cur, &ps, ts, conds, cptr, &changed), 1);
  assert_false(changed);
  assert_string_equal(cptr[0]->last_transition_time, "2026-01-01T00:00:00Z");
  ps.condition.message = "2/2 tasks in gang unschedulable";
  assert_int_equal(sch_shell_pg_conditions(&cur, &ps, ts, conds, cptr, &changed), 1);
  assert_true(changed);
  assert_string_equal(cptr[0]->message, "2/2 tasks in gang unschedulable");
  assert_string_equal(cptr[0]->last_transition_time, ts);
  ps.condition.type = "Scheduled";
  ps.condition.reason = "tasks in gang are ready to be scheduled";
  assert_int_equal(sch_shell_pg_conditions(&cur, &ps, ts, conds, cptr, &changed), 2);
  assert_true(changed);
  assert_string_equal(cptr[0]->type, "Unschedulable");
  assert_string_equal(cptr[0]->status, "False");
  assert_string_equal(cptr[1]->type, "Scheduled");
  assert_string_equal(cptr[1]->status, "True");
  /* No status yet: only the session's condition. */
  assert_int_equal(sch_shell_pg_conditions(NULL, &ps, ts, conds, cptr, &changed), 1);
  assert_true(changed);
  ps.has_condition = false;
  assert_int_equal(sch_shell_pg_conditions(NULL, &ps, ts, conds, cptr, &changed), 0);
  assert_false(changed);
}

/* A zero count is null in the merge patch (removed from the object, as Volcano's omitempty
 * leaves it out); a non-zero one is kept as encoded. */
/* The snapshot is stamped with the shell clock's wall time (a test sets it). */
static void test_snapshot_time_is_the_shell_clock(void **state) {
  fixture *f = *state;
  kc_clock_fake(1795968111123456789LL, 7);
  sch_cache_snap s;
  assert_int_equal(sch_cache_snapshot_deferred(f->cache, &s), 0);
  kc_clock_real();
  assert_int_equal(sch_cache_snap_finish(&s), 0);
  assert_int_equal(s.msg.time_unix_nano, 1795968111123456789LL);
  sch_cache_snap_close(&s);
}

static void test_pod_group_zero_counts_are_removed(void **state) {
  (void)state;
  sch_pg_status ps = {.running = 2, .succeeded = 0, .failed = 0};
  json_t *st = json_pack("{s:s,s:i}", "phase", "Running", "running", 2);
  assert_int_equal(sch_shell_pg_zero_counts(st, &ps), 0);
  assert_int_equal(json_integer_value(json_object_get(st, "running")), 2);
  assert_true(json_is_null(json_object_get(st, "succeeded")));
  assert_true(json_is_null(json_object_get(st, "failed")));
  ps.running = 0;
  ps.failed = 1;
  json_object_set_new(st, "failed", json_integer(1));
  assert_int_equal(sch_shell_pg_zero_counts(st, &ps), 0);
  assert_true(json_is_null(json_object_get(st, "running")));
  assert_int_equal(json_integer_value(json_object_get(st, "failed")), 1);
  assert_int_equal(sch_shell_pg_zero_counts(NULL, &ps), KC_EINVAL);
  json_decref(st);
}

/* --node-selector (issue 28): a node is used when it carries one of the "key:value" labels,
 * or when no entry is valid (Volcano passes over an entry without ':' or value). */
static void test_node_selector(void **state) {
  (void)state;
  json_t *j = json_loads("{\"metadata\":{\"name\":\"n1\",\"labels\":{\"volcano.sh/role\":"
                         "\"train\",\"zone\":\"a\"}}}",
                         0, NULL);
  Kiln__Node *n = NULL;
  char err[256];
  assert_int_equal(kc_node_decode(j, &n, err, sizeof(err)), 0);
  json_decref(j);
  const char *train[] = {"volcano.sh/role:serving", " volcano.sh/role : train "};
  const char *serving[] = {"volcano.sh/role:serving", "zone:b"};
  const char *invalid[] = {"volcano.sh/role", "zone:", ""};
  assert_true(sch_cache_node_selected(n, train, 2));
  assert_false(sch_cache_node_selected(n, serving, 2));
  assert_true(sch_cache_node_selected(n, invalid, 3));
  assert_false(sch_cache_node_selected(n, (const char *[]){"zone:a:b"}, 1));
  assert_true(sch_cache_node_selected(n, NULL, 0));
  kc_pb_free(n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pod_group_zero_counts_are_removed),
      cmocka_unit_test(test_pod_group_hold_without_memory_writes),
      cmocka_unit_test_setup_teardown(test_not_synced_before_start, setup, teardown),
      cmocka_unit_test_setup_teardown(test_snapshot_borrows_every_store, setup, teardown),
      cmocka_unit_test_setup_teardown(test_assumed_pod_is_bound_in_snapshot_until_forgotten, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_real_node_wins_over_assumption, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dump_round_trips, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dump_does_not_follow_planted_links, setup, teardown),
      cmocka_unit_test(test_new_work_is_a_pending_pod_of_ours_or_a_pending_pod_group),
      cmocka_unit_test(test_early_delay_keeps_the_gap_between_sessions),
      cmocka_unit_test(test_pod_group_write_waits_for_binds_then_at_most_a_period),
      cmocka_unit_test(test_incomplete_gang_condition_is_quiet_for_a_while),
      cmocka_unit_test_setup_teardown(test_held_snapshot_outlives_watch_changes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_snapshot_time_is_the_shell_clock, setup, teardown),
      cmocka_unit_test(test_bind_only_a_pod_still_pending),
      cmocka_unit_test(test_foreign_groups_are_those_of_pods_without_our_job),
      cmocka_unit_test(test_pod_group_conditions_merge),
      cmocka_unit_test(test_node_selector),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
