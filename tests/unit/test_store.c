#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_store.h"
#include "kc_strmap.h"

typedef struct {
  int id;
  int node;      /* -1: unscheduled (no index value) */
  int groups[3]; /* -1: none; duplicates allowed */
} obj;

static int live_objs;

static obj *obj_new(int id, int node, int g0, int g1, int g2) {
  obj *o = malloc(sizeof(*o));
  assert_non_null(o);
  *o = (obj){id, node, {g0, g1, g2}};
  live_objs++;
  return o;
}

static void obj_free(void *p) {
  live_objs--;
  free(p);
}

static int by_node(const void *p, kc_index_out *out, void *ud) {
  (void)ud;
  const obj *o = p;
  if (o->node < 0)
    return 0;
  char buf[32];
  snprintf(buf, sizeof(buf), "node-%d", o->node);
  return kc_index_out_add(out, buf);
}

static int by_group(const void *p, kc_index_out *out, void *ud) {
  (void)ud;
  const obj *o = p;
  for (int i = 0; i < 3; i++) {
    if (o->groups[i] < 0)
      continue;
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "pg-%dXXX", o->groups[i]);
    int rc = kc_index_out_addn(out, buf, (size_t)n - 3);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int fail_on_negative_id(const void *p, kc_index_out *out, void *ud) {
  (void)out;
  (void)ud;
  return ((const obj *)p)->id < 0 ? KC_EINVAL : 0;
}

static void test_strmap_basics(void **state) {
  (void)state;
  kc_strmap m;
  kc_strmap_init(&m, KC_STRMAP_COPY_KEYS);
  assert_null(kc_strmap_get(&m, "x"));
  assert_int_equal(kc_strmap_del(&m, "x", NULL), KC_ENOENT);
  char k[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(k, sizeof(k), "k%d", i);
    assert_int_equal(kc_strmap_put(&m, k, (void *)(intptr_t)(i + 1), NULL), 0);
  }
  void *old = NULL;
  assert_int_equal(kc_strmap_put(&m, "k7", (void *)(intptr_t)99, &old), 1);
  assert_int_equal((intptr_t)old, 8);
  for (int i = 0; i < 5000; i += 2) {
    snprintf(k, sizeof(k), "k%d", i);
    assert_int_equal(kc_strmap_del(&m, k, NULL), 0);
  }
  assert_int_equal(kc_strmap_len(&m), 2500);
  for (int i = 0; i < 5000; i++) {
    snprintf(k, sizeof(k), "k%d", i);
    intptr_t want = i % 2 ? (i == 7 ? 99 : i + 1) : 0;
    assert_int_equal((intptr_t)kc_strmap_get(&m, k), want);
  }
  size_t pos = 0, n = 0;
  while (kc_strmap_next(&m, &pos))
    n++;
  assert_int_equal(n, 2500);
  kc_strmap_close(&m, NULL);
}

static void test_basic_ops(void **state) {
  (void)state;
  kc_store *s;
  assert_int_equal(kc_store_new(obj_free, &s), 0);
  assert_int_equal(kc_store_add_index(s, "node", by_node, NULL), 0);
  assert_int_equal(kc_store_add_index(s, "node", by_node, NULL), KC_EEXISTS);
  char key[64];
  assert_int_equal(kc_store_key(key, sizeof(key), "default", "p1"), 0);
  assert_string_equal(key, "default/p1");
  assert_int_equal(kc_store_key(key, sizeof(key), NULL, "n1"), 0);
  assert_string_equal(key, "n1");
  assert_int_equal(kc_store_key(key, sizeof(key), "", "n1"), 0);
  assert_string_equal(key, "n1");
  assert_int_equal(kc_store_key(key, 5, "default", "p1"), KC_ETOOBIG);

  assert_int_equal(kc_store_put(s, "default/p1", obj_new(1, 3, -1, -1, -1), "100"), 0);
  /* Indexes may only be added to an empty store. */
  assert_int_equal(kc_store_add_index(s, "late", by_node, NULL), KC_EINVAL);
  assert_string_equal(kc_store_rv(s, "default/p1"), "100");
  assert_null(kc_store_rv(s, "default/p2"));
  assert_int_equal(kc_store_index_count(s, "node", "node-3"), 1);
  /* Update moves it between index values and frees the old object. */
  assert_int_equal(kc_store_put(s, "default/p1", obj_new(1, 4, -1, -1, -1), NULL), 0);
  assert_string_equal(kc_store_rv(s, "default/p1"), "");
  assert_int_equal(kc_store_index_count(s, "node", "node-3"), 0);
  assert_int_equal(kc_store_index_count(s, "node", "node-4"), 1);
  assert_int_equal(live_objs, 1);
  kc_store_iter it;
  assert_int_equal(kc_store_index_iter(s, "nope", "x", &it), KC_ENOENT);
  assert_int_equal(kc_store_index_iter(s, "node", "node-9", &it), 0);
  assert_false(kc_store_iter_next(&it, NULL, NULL));
  void *o = NULL;
  assert_int_equal(kc_store_take(s, "default/p1", &o), 0);
  assert_int_equal(((obj *)o)->node, 4);
  obj_free(o);
  assert_int_equal(kc_store_delete(s, "default/p1"), KC_ENOENT);
  assert_int_equal(kc_store_index_count(s, "node", "node-4"), 0);
  assert_int_equal(kc_store_index_values(s, "node", &it), 0);
  assert_false(kc_store_iter_next(&it, NULL, NULL));
  kc_store_free(s);
  assert_int_equal(live_objs, 0);
  kc_store_free(NULL);
}

static void test_failing_index_fn_leaves_store_unchanged(void **state) {
  (void)state;
  kc_store *s;
  assert_int_equal(kc_store_new(obj_free, &s), 0);
  assert_int_equal(kc_store_add_index(s, "node", by_node, NULL), 0);
  assert_int_equal(kc_store_add_index(s, "check", fail_on_negative_id, NULL), 0);
  assert_int_equal(kc_store_put(s, "a", obj_new(1, 1, -1, -1, -1), "1"), 0);
  /* The bad object is freed (stolen), the old one stays with its index. */
  assert_int_equal(kc_store_put(s, "a", obj_new(-1, 2, -1, -1, -1), "2"), KC_EINVAL);
  assert_int_equal(((obj *)kc_store_get(s, "a"))->id, 1);
  assert_string_equal(kc_store_rv(s, "a"), "1");
  assert_int_equal(kc_store_index_count(s, "node", "node-1"), 1);
  assert_int_equal(kc_store_index_count(s, "node", "node-2"), 0);
  assert_int_equal(live_objs, 1);
  kc_store_free(s);
  assert_int_equal(live_objs, 0);
}

/* ---- random churn against a brute-force model ---- */

#define NKEYS   3000
#define NNODES  40
#define NGROUPS 300

static obj model[NKEYS];
static bool present[NKEYS];

static void check_against_model(kc_store *s) {
  size_t n = 0;
  for (int i = 0; i < NKEYS; i++) {
    char key[32];
    snprintf(key, sizeof(key), "ns%d/pod-%d", i % 7, i);
    obj *o = kc_store_get(s, key);
    if (!present[i]) {
      assert_null(o);
      continue;
    }
    n++;
    assert_non_null(o);
    assert_memory_equal(o, &model[i], sizeof(obj));
  }
  assert_int_equal(kc_store_len(s), n);
  assert_int_equal(live_objs, (int)n);

  /* Every node value: exact membership. */
  size_t node_values = 0;
  for (int nd = 0; nd < NNODES; nd++) {
    char v[32];
    snprintf(v, sizeof(v), "node-%d", nd);
    size_t want = 0;
    for (int i = 0; i < NKEYS; i++)
      want += present[i] && model[i].node == nd;
    assert_int_equal(kc_store_index_count(s, "node", v), want);
    kc_store_iter it;
    assert_int_equal(kc_store_index_iter(s, "node", v, &it), 0);
    const char *k;
    void *p;
    size_t got = 0;
    while (kc_store_iter_next(&it, &k, &p)) {
      got++;
      assert_int_equal(((obj *)p)->node, nd);
      assert_ptr_equal(kc_store_get(s, k), p);
    }
    assert_int_equal(got, want);
    node_values += want > 0;
  }
  kc_store_iter it;
  assert_int_equal(kc_store_index_values(s, "node", &it), 0);
  size_t nv = 0;
  while (kc_store_iter_next(&it, NULL, NULL))
    nv++;
  assert_int_equal(nv, node_values);

  /* Group values, with an object counted once even when it lists a group
   * twice. */
  size_t group_values = 0;
  for (int g = 0; g < NGROUPS; g++) {
    char v[32];
    snprintf(v, sizeof(v), "pg-%d", g);
    size_t want = 0;
    for (int i = 0; i < NKEYS; i++)
      want += present[i] &&
              (model[i].groups[0] == g || model[i].groups[1] == g || model[i].groups[2] == g);
    assert_int_equal(kc_store_index_count(s, "group", v), want);
    group_values += want > 0;
  }
  assert_int_equal(kc_store_index_values(s, "group", &it), 0);
  nv = 0;
  while (kc_store_iter_next(&it, NULL, NULL))
    nv++;
  assert_int_equal(nv, group_values);

  /* Full iteration sees each present key once. */
  kc_store_iter_init(s, &it);
  size_t seen = 0;
  const char *k;
  while (kc_store_iter_next(&it, &k, NULL))
    seen++;
  assert_int_equal(seen, n);
}

static int rnd_group(void) {
  return rand() % 4 == 0 ? -1 : rand() % NGROUPS;
}

static int gone_count;
static void on_gone(const char *key, void *o, void *ud) {
  (void)ud;
  int id = ((obj *)o)->id;
  char want[32];
  snprintf(want, sizeof(want), "ns%d/pod-%d", id % 7, id);
  assert_string_equal(key, want);
  assert_true(present[id]);
  present[id] = false;
  gone_count++;
}

static void test_random_churn(void **state) {
  (void)state;
  srand(12345);
  memset(present, 0, sizeof(present));
  kc_store *s;
  assert_int_equal(kc_store_new(obj_free, &s), 0);
  assert_int_equal(kc_store_add_index(s, "node", by_node, NULL), 0);
  assert_int_equal(kc_store_add_index(s, "group", by_group, NULL), 0);
  for (int round = 0; round < 6; round++) {
    for (int op = 0; op < 20000; op++) {
      int i = rand() % NKEYS;
      char key[32], rv[16];
      snprintf(key, sizeof(key), "ns%d/pod-%d", i % 7, i);
      if (rand() % 4 == 0) {
        int rc = kc_store_delete(s, key);
        assert_int_equal(rc, present[i] ? 0 : KC_ENOENT);
        present[i] = false;
      } else {
        int node = rand() % 5 == 0 ? -1 : rand() % NNODES;
        int g0 = rnd_group(), g1 = rand() % 3 == 0 ? g0 : rnd_group(), g2 = rnd_group();
        snprintf(rv, sizeof(rv), "%d", op);
        assert_int_equal(kc_store_put(s, key, obj_new(i, node, g0, g1, g2), rv), 0);
        model[i] = (obj){i, node, {g0, g1, g2}};
        present[i] = true;
        assert_string_equal(kc_store_rv(s, key), rv);
      }
    }
    check_against_model(s);
  }
  /* A relist that keeps about half the objects reports the rest as gone. */
  kc_store_replace_begin(s);
  int kept = 0;
  for (int i = 0; i < NKEYS; i++) {
    if (!present[i] || i % 2)
      continue;
    char key[32];
    snprintf(key, sizeof(key), "ns%d/pod-%d", i % 7, i);
    assert_int_equal(kc_store_put(s, key,
                                  obj_new(i, model[i].node, model[i].groups[0], model[i].groups[1],
                                          model[i].groups[2]),
                                  "relist"),
                     0);
    kept++;
  }
  int before = (int)kc_store_len(s);
  gone_count = 0;
  kc_store_replace_end(s, on_gone, NULL);
  assert_int_equal(gone_count, before - kept);
  assert_int_equal((int)kc_store_len(s), kept);
  check_against_model(s);
  kc_store_free(s);
  assert_int_equal(live_objs, 0);
}

/* A held store keeps what it would free (put over, delete, the relist sweep, an object
 * taken and released) until the last unhold; the objects stay readable until then. */
static void test_hold_defers_frees(void **state) {
  (void)state;
  live_objs = 0;
  kc_store *s;
  assert_int_equal(kc_store_new(obj_free, &s), 0);
  obj *a = obj_new(1, 0, -1, -1, -1), *b = obj_new(2, 0, -1, -1, -1);
  assert_int_equal(kc_store_put(s, "a", a, "1"), 0);
  assert_int_equal(kc_store_put(s, "b", b, "1"), 0);
  kc_store_hold(s);
  kc_store_hold(s); /* counted */
  assert_int_equal(kc_store_put(s, "a", obj_new(1, 1, -1, -1, -1), "2"), 0);
  assert_int_equal(kc_store_delete(s, "b"), 0);
  void *t = NULL;
  kc_store_put(s, "c", obj_new(3, 0, -1, -1, -1), "1");
  assert_int_equal(kc_store_take(s, "c", &t), 0);
  kc_store_release_obj(s, t);
  assert_int_equal(kc_store_nheld(s), 3);
  assert_int_equal(live_objs, 4);
  assert_int_equal(a->id, 1); /* still readable */
  assert_int_equal(b->node, 0);
  kc_store_unhold(s);
  assert_int_equal(live_objs, 4);
  kc_store_unhold(s);
  assert_int_equal(kc_store_nheld(s), 0);
  assert_int_equal(live_objs, 1);
  kc_store_unhold(s); /* not held: no-op */
  /* Not held: freed at once. */
  assert_int_equal(kc_store_delete(s, "a"), 0);
  assert_int_equal(live_objs, 0);
  /* Freeing a held store frees what it kept. */
  kc_store_put(s, "d", obj_new(4, 0, -1, -1, -1), "1");
  kc_store_hold(s);
  kc_store_put(s, "d", obj_new(4, 1, -1, -1, -1), "2");
  kc_store_free(s);
  assert_int_equal(live_objs, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hold_defers_frees),
      cmocka_unit_test(test_strmap_basics),
      cmocka_unit_test(test_basic_ops),
      cmocka_unit_test(test_failing_index_fn_leaves_store_unchanged),
      cmocka_unit_test(test_random_churn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
