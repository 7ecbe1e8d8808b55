/* kiln-controller's pods in Kubernetes' protobuf: the job controller's pod view and the
 * podgroup controller's decisions and PodGroup come out the same as from the JSON of the same
 * pod, on pods captured from kube-apiserver 1.36 in both encodings (tests/unit/data/pb). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_job.h"
#include "ctl_pg.h"
#include "kc_error.h"
#include "kc_pb.h"
#include "test_fixture.h"

static json_t *load_json(const char *base) {
  return fx_json_file(PB_TESTDATA, base, ".json");
}

/* The Pod message inside base.pb (a "k8s\0" + Unknown body). */
static K8s__Pod *load_pb(const char *base) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s.pb", PB_TESTDATA, base);
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("cannot open %s", path);
  uint8_t *buf = malloc(1 << 20);
  assert_non_null(buf);
  size_t len = fread(buf, 1, 1 << 20, f);
  fclose(f);
  K8s__Unknown *u = NULL;
  assert_int_equal(kc_pb_unwrap(buf, len, &u, NULL, 0), 0);
  assert_string_equal(u->type_meta->kind, "Pod");
  K8s__Pod *p = k8s__pod__unpack(NULL, u->raw.len, u->raw.data);
  assert_non_null(p);
  kc_pb_free(u);
  free(buf);
  return p;
}

static const char *const fixtures[] = {"ctlpod", "pgpod", "bound", "rich"};

static void views(const char *base, ctl_pod *a, ctl_pod *b) {
  json_t *j = load_json(base);
  K8s__Pod *k = load_pb(base);
  assert_int_equal(ctl_pod_from_json(j, a), 0);
  assert_int_equal(ctl_pod_from_pb(k, b), 0);
  json_decref(j);
  kc_pb_free(k);
}

static void test_pod_view_same_as_json(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
    ctl_pod a, b;
    views(fixtures[i], &a, &b);
    if (memcmp(&a, &b, sizeof(a)) != 0)
      fail_msg("%s: the protobuf view differs from the JSON one", fixtures[i]);
  }
}

/* The fixture exercises every field of the view, so equality above means something. */
static void test_pod_view_fields(void **state) {
  (void)state;
  ctl_pod a, b;
  views("ctlpod", &a, &b);
  assert_string_equal(b.name, "j1-worker-7");
  assert_string_equal(b.task, "worker");
  assert_int_equal(b.index, 3);
  assert_int_equal(b.version, 2);
  assert_int_equal(b.phase, CTL_POD_FAILED);
  assert_true(b.has_exit_code);
  assert_int_equal(b.exit_code, 3);
  assert_int_equal(b.restarts, 3);
  assert_false(b.ready);
  assert_true(b.out_of_sync);
  assert_true(b.has_partition);
  assert_int_equal(b.partition, 1);
  assert_true(b.deletion_ts >= b.creation_ts && b.creation_ts > 0);
  views("bound", &a, &b);
  assert_int_equal(b.phase, CTL_POD_RUNNING);
  assert_true(b.ready);
  assert_false(b.has_exit_code);
}

static void test_pg_same_as_json(void **state) {
  (void)state;
  static const char *const scheds[] = {"volcano"};
  int groups = 0;
  for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
    json_t *j = load_json(fixtures[i]);
    K8s__Pod *k = load_pb(fixtures[i]);
    json_t *c = ctl_pg_pod_json(k);
    assert_non_null(c);
    ctl_pg_verdict v = ctl_pg_decide_pod(j, scheds, 1);
    assert_int_equal(ctl_pg_decide_pod(c, scheds, 1), v);
    assert_int_equal(ctl_pg_pb_candidate(k, scheds, 1), v != CTL_PG_IGNORE);
    char n1[300], n2[300];
    assert_int_equal(ctl_pg_name(j, n1, sizeof(n1)), 0);
    assert_int_equal(ctl_pg_name(c, n2, sizeof(n2)), 0);
    assert_string_equal(n1, n2);
    json_t *ann = json_pack("{s:s}", CTL_PG_MIN_MEMBER, "3");
    json_t *p1 = ctl_pg_build(j, n1, ann, true), *p2 = ctl_pg_build(c, n2, ann, true);
    if (!json_equal(p1, p2)) {
      char *s1 = json_dumps(p1, JSON_SORT_KEYS), *s2 = json_dumps(p2, JSON_SORT_KEYS);
      fail_msg("%s: PodGroups differ:\n%s\n%s", fixtures[i], s1, s2);
    }
    groups += v != CTL_PG_IGNORE;
    json_decref(p1);
    json_decref(p2);
    json_decref(ann);
    json_decref(c);
    json_decref(j);
    kc_pb_free(k);
  }
  assert_true(groups >= 1); /* pgpod is one it groups; ctlpod is in a Job's group */
}

/* pgpod's PodGroup carries what the conversion must keep: both owners (blockOwnerDeletion
 * too), the priority class, the queue, the volcano.sh/ annotations and labels, and the
 * sidecar's, init container's and pod-level resources in minResources. */
static void test_pg_fields(void **state) {
  (void)state;
  K8s__Pod *k = load_pb("pgpod");
  json_t *c = ctl_pg_pod_json(k);
  json_t *pg = ctl_pg_build(c, "podgroup-x", NULL, true);
  assert_non_null(pg);
  json_t *spec = json_object_get(pg, "spec"), *meta = json_object_get(pg, "metadata");
  assert_string_equal(json_string_value(json_object_get(spec, "priorityClassName")), "high");
  assert_string_equal(json_string_value(json_object_get(spec, "queue")), "q1");
  json_t *refs = json_object_get(meta, "ownerReferences");
  assert_int_equal(json_array_size(refs), 2);
  assert_true(json_is_true(json_object_get(json_array_get(refs, 0), "blockOwnerDeletion")));
  assert_non_null(
      json_object_get(json_object_get(meta, "annotations"), "volcano.sh/revocable-zone"));
  assert_non_null(json_object_get(json_object_get(meta, "labels"), "volcano.sh/cooldown-time"));
  json_t *mr = json_object_get(spec, "minResources");
  assert_string_equal(json_string_value(json_object_get(mr, "nvidia.com/gpu")), "1");
  assert_non_null(json_object_get(mr, "cpu"));
  json_decref(pg);
  json_decref(c);
  kc_pb_free(k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pod_view_same_as_json),
      cmocka_unit_test(test_pod_view_fields),
      cmocka_unit_test(test_pg_same_as_json),
      cmocka_unit_test(test_pg_fields),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
