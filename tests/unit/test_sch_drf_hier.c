/* Hierarchical DRF (drf with enableHierarchy, scheduler/plugins/sch_plugin_drf.c): queues
 * ordered down their tree by share / weight with saturated nodes last, the tree from
 * spec.parent or the hierarchy annotations, reclaim victims where the reclaimer's queue
 * still orders first, and no drf at all for a session whose tree cannot be built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "test_sch_plugins_fixture.h"

static const char conf[] = "actions: \"allocate, reclaim\"\n"
                           "tiers:\n"
                           "- plugins:\n"
                           "  - name: drf\n"
                           "    enableHierarchy: true\n";

static Kiln__Queue *hq(fx *f, const char *name, const char *parent, int32_t weight) {
  Kiln__Queue *q = fx_queue(f, name, weight);
  if (parent)
    q->spec->parent = fx_str(parent);
  return q;
}

/* A job in queue with `running` one-cpu pods on n1 and `pending` more waiting. */
static void job(fx *f, const char *name, const char *queue, int running, int pending) {
  fx_pg(f, name, queue, 1, "Running");
  for (int i = 0; i < running + pending; i++) {
    char p[32];
    snprintf(p, sizeof(p), "%s-%d", name, i);
    fx_pod(f, p, name, 1000, 0, i < running ? "n1" : NULL);
  }
}

/* root -> a -> a1 (2 of 4 cpu held), root -> b (1 of 4): a's share 2/16 against b's 1/16
 * puts b first; with weight 4 on a, a's 2/16/4 goes first. */
static void test_queue_order_by_share_and_weight(void **state) {
  (void)state;
  for (int w = 1; w <= 4; w += 3) {
    fx *f = fx_new();
    fx_node(f, "n1", 16000, 64 * GI, 110);
    hq(f, "root", NULL, 1);
    hq(f, "a", NULL, w);
    hq(f, "a1", "a", 1);
    hq(f, "b", NULL, 1);
    job(f, "ja", "a1", 2, 2);
    job(f, "jb", "b", 1, 3);
    fx_open(f, conf);
    int o = sch_session_queue_order(f->ssn, fx_squeue(f, "b"), fx_squeue(f, "a1"));
    assert_true(w == 1 ? o < 0 : o > 0);
    fx_free(f);
  }
}

/* The annotations, when both are set, place the queue instead of spec.parent: x claims
 * root/heavy with weight 8, so it orders before b although it holds more. */
static void test_annotations_place_the_queue(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n1", 16000, 64 * GI, 110);
  hq(f, "root", NULL, 1);
  Kiln__Queue *x = hq(f, "x", NULL, 1);
  x->metadata->n_annotations = 2;
  x->metadata->annotations = fx_alloc(2 * sizeof(*x->metadata->annotations));
  const char *kv[2][2] = {{"volcano.sh/hierarchy", "root/heavy"},
                          {"volcano.sh/hierarchy-weights", "1/8"}};
  for (int i = 0; i < 2; i++) {
    Kiln__ObjectMeta__AnnotationsEntry *e = fx_alloc(sizeof(*e));
    kiln__object_meta__annotations_entry__init(e);
    e->key = fx_str(kv[i][0]);
    e->value = fx_str(kv[i][1]);
    x->metadata->annotations[i] = e;
  }
  hq(f, "b", NULL, 1);
  job(f, "jx", "x", 3, 2);
  job(f, "jb", "b", 1, 3);
  fx_open(f, conf);
  assert_true(sch_session_queue_order(f->ssn, fx_squeue(f, "x"), fx_squeue(f, "b")) < 0);
  fx_free(f);
}

/* b reclaims from a1: a victim is taken while b, with the task and without the victim, still
 * orders before a; not when a holds little. */
static void test_reclaim_victims(void **state) {
  (void)state;
  for (int held = 2; held <= 6; held += 4) {
    fx *f = fx_new();
    fx_node(f, "n1", 16000, 64 * GI, 110);
    hq(f, "root", NULL, 1);
    hq(f, "a", NULL, 1);
    hq(f, "a1", "a", 1);
    hq(f, "b", NULL, 1);
    job(f, "ja", "a1", held, 2);
    job(f, "jb", "b", 1, 3);
    fx_open(f, conf);
    int32_t cands[] = {fx_task(f, "ja-0")};
    int32_t v[1];
    const sch_task *t = &f->snap->tasks[fx_task(f, "jb-1")];
    int nv = sch_session_reclaimable(f->ssn, t, cands, 1, v);
    assert_int_equal(nv, held == 6 ? 1 : 0);
    fx_free(f);
  }
}

/* A parent that does not exist: Volcano leaves drf out of the session. j2 holds less than
 * j1, so drf orders j2 first; without drf the session's own order (j1 first) decides. */
static void test_broken_tree_leaves_drf_out(void **state) {
  (void)state;
  for (int broken = 0; broken <= 1; broken++) {
    fx *f = fx_new();
    fx_node(f, "n1", 16000, 64 * GI, 110);
    hq(f, "root", NULL, 1);
    hq(f, "lost", broken ? "gone" : "root", 1);
    job(f, "j1", "lost", 4, 1);
    job(f, "j2", "lost", 1, 1);
    fx_open(f, conf);
    int o = sch_session_job_order(f->ssn, fx_job(f, "j1"), fx_job(f, "j2"));
    assert_true(broken ? o < 0 : o > 0);
    fx_free(f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_queue_order_by_share_and_weight),
      cmocka_unit_test(test_annotations_place_the_queue),
      cmocka_unit_test(test_reclaim_victims),
      cmocka_unit_test(test_broken_tree_leaves_drf_out),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
