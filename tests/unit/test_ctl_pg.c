/* The podgroup controller's decisions (Volcano pkg/controllers/podgroup): which pods it
 * groups, the PodGroup's name, owners, minMember, minResources, queue, priority class and
 * annotations, and a workload scaled to zero. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_pg.h"
#include "kc_error.h"

static json_t *parse(const char *s) {
  json_error_t e;
  json_t *j = json_loads(s, 0, &e);
  if (!j)
    fail_msg("bad fixture: %s", e.text);
  return j;
}

static const char *const scheds[] = {"volcano", "kiln"};

static json_t *rs_pod(const char *extra_ann) {
  char buf[2048];
  snprintf(buf, sizeof(buf),
           "{\"metadata\":{\"name\":\"web-abc\",\"namespace\":\"ns1\",\"uid\":\"pod-uid\","
           "\"annotations\":{%s},\"labels\":{\"volcano.sh/preemptable\":\"true\",\"app\":\"web\"},"
           "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
           "\"name\":\"web-5d\",\"uid\":\"rs-uid\",\"controller\":true}]},"
           "\"spec\":{\"schedulerName\":\"volcano\",\"priorityClassName\":\"high\","
           "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"250m\","
           "\"memory\":\"64Mi\"}}}]}}",
           extra_ann);
  return parse(buf);
}

static void test_name(void **state) {
  char name[128];
  json_t *p = rs_pod("");
  assert_int_equal(ctl_pg_name(p, name, sizeof(name)), 0);
  assert_string_equal(name, "podgroup-rs-uid");
  json_object_del(json_object_get(p, "metadata"), "ownerReferences");
  assert_int_equal(ctl_pg_name(p, name, sizeof(name)), 0);
  assert_string_equal(name, "podgroup-pod-uid");
  json_decref(p);
}

static void test_decide(void **state) {
  json_t *p = rs_pod("");
  assert_int_equal(ctl_pg_decide_pod(p, scheds, 2), CTL_PG_ENSURE_AND_ANNOTATE);
  assert_int_equal(ctl_pg_decide_pod(p, scheds + 1, 1), CTL_PG_IGNORE); /* another scheduler */
  json_decref(p);
  p = rs_pod("\"scheduling.k8s.io/group-name\":\"podgroup-rs-uid\"");
  assert_int_equal(ctl_pg_decide_pod(p, scheds, 2), CTL_PG_ENSURE); /* already its own */
  json_decref(p);
  p = rs_pod("\"scheduling.k8s.io/group-name\":\"job1-0a1b\"");
  assert_int_equal(ctl_pg_decide_pod(p, scheds, 2), CTL_PG_IGNORE); /* a Volcano Job's */
  json_decref(p);
  p = rs_pod("");
  json_object_set_new(json_object_get(p, "metadata"), "deletionTimestamp",
                      json_string("2026-12-01T00:00:00Z"));
  assert_int_equal(ctl_pg_decide_pod(p, scheds, 2), CTL_PG_IGNORE);
  json_decref(p);
}

static void test_build(void **state) {
  json_t *p = rs_pod("\"scheduling.volcano.sh/queue-name\":\"q1\",\"volcano.sh/preemptable\":"
                     "\"false\",\"volcano.sh/jdb-max-unavailable\":\"1\"");
  json_t *owner =
      parse("{\"scheduling.volcano.sh/group-min-member\":\"3\",\"volcano.sh/preemptable\":"
            "\"true\",\"volcano.sh/hierarchy\":\"root/a\",\"other.io/x\":\"y\"}");
  json_t *pg = ctl_pg_build(p, "podgroup-rs-uid", owner, true);
  assert_non_null(pg);
  const json_t *m = json_object_get(pg, "metadata"), *s = json_object_get(pg, "spec");
  assert_string_equal(json_string_value(json_object_get(m, "name")), "podgroup-rs-uid");
  assert_string_equal(json_string_value(json_object_get(m, "namespace")), "ns1");
  const json_t *ref = json_array_get(json_object_get(m, "ownerReferences"), 0);
  assert_string_equal(json_string_value(json_object_get(ref, "kind")), "ReplicaSet");
  assert_int_equal(json_integer_value(json_object_get(s, "minMember")), 3);
  assert_string_equal(json_string_value(json_object_get(s, "queue")), "q1");
  assert_string_equal(json_string_value(json_object_get(s, "priorityClassName")), "high");
  const json_t *mr = json_object_get(s, "minResources");
  assert_string_equal(json_string_value(json_object_get(mr, "cpu")), "750m"); /* 3 x 250m */
  assert_string_equal(json_string_value(json_object_get(mr, "requests.memory")), "192Mi");
  assert_string_equal(json_string_value(json_object_get(mr, "pods")), "3");
  const json_t *ann = json_object_get(m, "annotations");
  assert_string_equal(json_string_value(json_object_get(ann, "volcano.sh/hierarchy")), "root/a");
  /* the pod's own annotation wins over the owner's */
  assert_string_equal(json_string_value(json_object_get(ann, "volcano.sh/preemptable")), "false");
  assert_null(json_object_get(ann, "other.io/x"));
  assert_string_equal(json_string_value(json_object_get(ann, "volcano.sh/jdb-max-unavailable")),
                      "1");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(m, "labels"), "volcano.sh/preemptable")),
      "true");
  assert_null(json_object_get(json_object_get(m, "labels"), "app"));
  assert_string_equal(json_string_value(json_object_get(json_object_get(pg, "status"), "phase")),
                      "Pending");
  json_decref(pg);
  /* --inherit-owner-annotations=false: neither minMember nor annotations come from owners */
  pg = ctl_pg_build(p, "podgroup-rs-uid", owner, false);
  s = json_object_get(pg, "spec");
  assert_int_equal(json_integer_value(json_object_get(s, "minMember")), 1);
  assert_null(json_object_get(json_object_get(json_object_get(pg, "metadata"), "annotations"),
                              "volcano.sh/hierarchy"));
  json_decref(pg);
  json_decref(owner);
  json_decref(p);
}

static void test_pod_owner_and_min_member(void **state) {
  json_t *p = rs_pod("");
  json_object_del(json_object_get(p, "metadata"), "ownerReferences");
  json_t *pg = ctl_pg_build(p, "podgroup-pod-uid", NULL, true);
  const json_t *ref =
      json_array_get(json_object_get(json_object_get(pg, "metadata"), "ownerReferences"), 0);
  assert_string_equal(json_string_value(json_object_get(ref, "kind")), "Pod");
  assert_string_equal(json_string_value(json_object_get(ref, "uid")), "pod-uid");
  assert_true(json_is_true(json_object_get(ref, "controller")));
  assert_null(json_object_get(json_object_get(pg, "spec"), "queue")); /* the CRD's default */
  json_decref(pg);
  json_decref(p);
  json_t *a = parse("{\"scheduling.volcano.sh/group-min-member\":\"-2\"}");
  assert_int_equal(ctl_pg_min_member(a), 1);
  json_object_set_new(a, "scheduling.volcano.sh/group-min-member", json_string("x"));
  assert_int_equal(ctl_pg_min_member(a), 1);
  json_object_set_new(a, "scheduling.volcano.sh/group-min-member", json_string("0"));
  assert_int_equal(ctl_pg_min_member(a), 0);
  assert_int_equal(ctl_pg_min_member(NULL), 1);
  json_decref(a);
}

/* group-min-member as large as an int32 holds: minResources is the pod's request times
 * 2^31-1 in one multiplication (it used to be 2^31-1 additions on the event loop). */
static void test_min_member_max(void **state) {
  json_t *p = rs_pod("");
  json_t *owner = parse("{\"scheduling.volcano.sh/group-min-member\":\"2147483647\"}");
  json_t *pg = ctl_pg_build(p, "podgroup-rs-uid", owner, true);
  assert_non_null(pg);
  const json_t *s = json_object_get(pg, "spec");
  assert_int_equal(json_integer_value(json_object_get(s, "minMember")), INT32_MAX);
  const json_t *mr = json_object_get(s, "minResources");
  /* 250m and 64Mi times 2^31-1 */
  assert_string_equal(json_string_value(json_object_get(mr, "cpu")), "536870911750m");
  assert_string_equal(json_string_value(json_object_get(mr, "memory")), "137438953408Mi");
  assert_string_equal(json_string_value(json_object_get(mr, "pods")), "2147483647");
  json_decref(pg);
  json_decref(owner);
  json_decref(p);
}

static void test_scaled_to_zero(void **state) {
  json_t *w = parse("{\"spec\":{\"replicas\":0}}");
  assert_true(ctl_pg_scaled_to_zero(w));
  json_object_set_new(json_object_get(w, "spec"), "replicas", json_integer(2));
  assert_false(ctl_pg_scaled_to_zero(w));
  json_object_del(json_object_get(w, "spec"), "replicas"); /* defaults to 1 */
  assert_false(ctl_pg_scaled_to_zero(w));
  json_decref(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_name),           cmocka_unit_test(test_decide),
      cmocka_unit_test(test_build),          cmocka_unit_test(test_pod_owner_and_min_member),
      cmocka_unit_test(test_scaled_to_zero), cmocka_unit_test(test_min_member_max),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
