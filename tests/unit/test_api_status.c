#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_api.h"
#include "kc_error.h"

static int parse(long http, const char *body, kc_status *st) {
  return kc_status_parse(http, body, body ? strlen(body) : 0, st, NULL);
}

/* Status bodies as kube-apiserver writes them for each reason. */
static void test_reasons(void **state) {
  (void)state;
  static const struct {
    long http;
    const char *reason;
    int want;
  } cases[] = {
      {404, "NotFound", KC_ENOTFOUND},
      {409, "AlreadyExists", KC_EALREADYEXISTS},
      {409, "Conflict", KC_ECONFLICT},
      {410, "Gone", KC_EGONE},
      {410, "Expired", KC_EEXPIRED},
      {429, "TooManyRequests", KC_ETOOMANYREQUESTS},
      {422, "Invalid", KC_EINVALID},
      {403, "Forbidden", KC_EFORBIDDEN},
      {401, "Unauthorized", KC_EUNAUTHORIZED},
      {400, "BadRequest", KC_EBADREQUEST},
      {504, "Timeout", KC_ESERVERTIMEOUT},
      {500, "InternalError", KC_EINTERNAL},
      {503, "ServiceUnavailable", KC_EUNAVAILABLE},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char body[512];
    snprintf(body, sizeof(body),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"configmaps \\\"x\\\" says %s\",\"reason\":\"%s\",\"details\":"
             "{\"name\":\"x\",\"kind\":\"configmaps\"},\"code\":%ld}",
             cases[i].reason, cases[i].reason, cases[i].http);
    kc_status st;
    int rc = parse(cases[i].http, body, &st);
    if (rc != cases[i].want)
      fail_msg("%s: got %s, want %s", cases[i].reason, kc_err_name(rc), kc_err_name(cases[i].want));
    assert_int_equal(st.err, rc);
    assert_int_equal(st.code, cases[i].http);
    assert_string_equal(st.reason, cases[i].reason);
    char want_msg[128];
    snprintf(want_msg, sizeof(want_msg), "configmaps \"x\" says %s", cases[i].reason);
    assert_string_equal(st.message, want_msg);
  }
}

static void test_conflict_message_kept(void **state) {
  (void)state;
  const char *body =
      "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
      "\"message\":\"Operation cannot be fulfilled on configmaps \\\"cm\\\": the object has been "
      "modified; please apply your changes to the latest version and try again\","
      "\"reason\":\"Conflict\",\"details\":{\"name\":\"cm\",\"kind\":\"configmaps\"},\"code\":409}";
  kc_status st;
  json_t *obj = NULL;
  assert_int_equal(kc_status_parse(409, body, strlen(body), &st, &obj), KC_ECONFLICT);
  assert_non_null(strstr(st.message, "the object has been modified"));
  assert_non_null(obj);
  assert_string_equal(json_string_value(json_object_get(json_object_get(obj, "details"), "name")),
                      "cm");
  json_decref(obj);
}

/* No reason or an unknown one: the code decides, as client-go's reasonForError does. */
static void test_fallback_to_code(void **state) {
  (void)state;
  kc_status st;
  assert_int_equal(parse(404, "{\"kind\":\"Status\",\"code\":404,\"message\":\"gone\"}", &st),
                   KC_ENOTFOUND);
  assert_string_equal(st.message, "gone");
  assert_string_equal(st.reason, "");
  assert_int_equal(
      parse(409, "{\"kind\":\"Status\",\"reason\":\"SomethingNew\",\"code\":409}", &st),
      KC_ECONFLICT);
  assert_non_null(strstr(st.message, "status code 409"));
  /* Status.code wins over the HTTP status when both are present. */
  assert_int_equal(parse(500, "{\"kind\":\"Status\",\"code\":429}", &st), KC_ETOOMANYREQUESTS);
  assert_int_equal(st.code, 429);
  /* An unmapped 5xx is still a server error. */
  assert_int_equal(parse(502, "{\"kind\":\"Status\",\"code\":502}", &st), KC_EINTERNAL);
  assert_int_equal(
      parse(405, "{\"kind\":\"Status\",\"code\":405,\"reason\":\"MethodNotAllowed\"}", &st),
      KC_EHTTP);
}

/* Bodies that are not a Status: a proxy's HTML, plain text, nothing, broken JSON. */
static void test_not_a_status(void **state) {
  (void)state;
  kc_status st;
  assert_int_equal(parse(503, "<html>\n<b>upstream down</b></html>", &st), KC_EUNAVAILABLE);
  assert_non_null(strstr(st.message, "status code 503"));
  assert_non_null(strstr(st.message, "upstream down"));
  assert_null(strchr(st.message, '\n')); /* control characters are not passed on */
  assert_int_equal(parse(404, NULL, &st), KC_ENOTFOUND);
  assert_string_equal(st.message, "the server responded with the status code 404");
  assert_int_equal(parse(409, "{\"kind\":\"Status\"", &st), KC_ECONFLICT);
  assert_int_equal(parse(403, "{\"kind\":\"Pod\"}", &st), KC_EFORBIDDEN);
  assert_int_equal(parse(418, "teapot", &st), KC_EHTTP);
  /* A long body is cut, not overflowed. */
  char big[4096];
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  assert_int_equal(parse(500, big, &st), KC_EINTERNAL);
  assert_true(strlen(st.message) < 400);
  /* A huge Status message is truncated to the buffer. */
  char *huge = malloc(10000);
  assert_non_null(huge);
  int n = snprintf(huge, 10000, "{\"kind\":\"Status\",\"reason\":\"Invalid\",\"message\":\"");
  memset(huge + n, 'm', 5000);
  snprintf(huge + n + 5000, 10000 - (size_t)n - 5000, "\"}");
  assert_int_equal(parse(422, huge, &st), KC_EINVALID);
  assert_int_equal(strlen(st.message), sizeof(st.message) - 1);
  free(huge);
}

static void expect_path(kc_verb verb, const kc_ref *ref, const kc_query *q, bool watch,
                        const char *want) {
  char *p = NULL;
  int rc = kc_api_path(verb, ref, q, watch, &p);
  if (rc != 0)
    fail_msg("path for %s: %s", want, kc_err_name(rc));
  assert_string_equal(p, want);
  free(p);
}

static void test_paths(void **state) {
  (void)state;
  kc_ref cm = {NULL, "v1", "configmaps", "ns1", "cm", NULL};
  expect_path(KC_GET, &cm, NULL, false, "/api/v1/namespaces/ns1/configmaps/cm");
  kc_ref jobs = {"batch.volcano.sh", "v1alpha1", "jobs", "default", NULL, NULL};
  kc_query q = {.label_selector = "app=x,tier!=db",
                .limit = 500,
                .continue_token = "abc=",
                .resource_version = "12"};
  expect_path(KC_LIST, &jobs, &q, false,
              "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs?labelSelector=app%3Dx"
              "%2Ctier%21%3Ddb&limit=500&continue=abc%3D&resourceVersion=12");
  kc_ref nodes = {"", "v1", "nodes", NULL, NULL, NULL};
  kc_query w = {.resource_version = "100", .timeout_seconds = 300};
  expect_path(KC_LIST, &nodes, &w, true,
              "/api/v1/nodes?resourceVersion=100&timeoutSeconds=300&watch=1&"
              "allowWatchBookmarks=true");
  kc_ref status = {"batch.volcano.sh", "v1alpha1", "jobs", "ns", "j1", "status"};
  kc_query ssa = {.field_manager = "kiln-controller", .force = true, .dry_run = true};
  expect_path(KC_APPLY, &status, &ssa, false,
              "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j1/status?dryRun=All&"
              "fieldManager=kiln-controller&force=true");
  /* force only means something for apply. */
  expect_path(KC_PATCH_MERGE, &status, &ssa, false,
              "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j1/status?dryRun=All&"
              "fieldManager=kiln-controller");
  kc_ref create = {NULL, "v1", "pods", "ns", NULL, NULL};
  expect_path(KC_CREATE, &create, NULL, false, "/api/v1/namespaces/ns/pods");
  kc_ref binding = {NULL, "v1", "pods", "ns", "p1", "binding"};
  expect_path(KC_CREATE, &binding, NULL, false, "/api/v1/namespaces/ns/pods/p1/binding");
}

static void test_bad_refs(void **state) {
  (void)state;
  char *p = NULL;
  kc_ref noname = {NULL, "v1", "configmaps", "ns", NULL, NULL};
  assert_int_equal(kc_api_path(KC_GET, &noname, NULL, false, &p), KC_EINVAL);
  kc_ref named = {NULL, "v1", "configmaps", "ns", "x", NULL};
  assert_int_equal(kc_api_path(KC_LIST, &named, NULL, false, &p), KC_EINVAL);
  assert_int_equal(kc_api_path(KC_CREATE, &named, NULL, false, &p), KC_EINVAL);
  kc_ref slash = {NULL, "v1", "configmaps", "ns", "a/b", NULL};
  assert_int_equal(kc_api_path(KC_GET, &slash, NULL, false, &p), KC_EINVAL);
  kc_ref dots = {NULL, "v1", "configmaps", "..", "x", NULL};
  assert_int_equal(kc_api_path(KC_GET, &dots, NULL, false, &p), KC_EINVAL);
  kc_ref query = {NULL, "v1", "configmaps", "ns", "x?watch=1", NULL};
  assert_int_equal(kc_api_path(KC_DELETE, &query, NULL, false, &p), KC_EINVAL);
  kc_ref noversion = {NULL, NULL, "configmaps", "ns", "x", NULL};
  assert_int_equal(kc_api_path(KC_GET, &noversion, NULL, false, &p), KC_EINVAL);
  /* Server-side apply without a field manager would be refused by the server. */
  assert_int_equal(kc_api_path(KC_APPLY, &named, NULL, false, &p), KC_EINVAL);
  assert_null(p);
}

/* The Volcano-compatible flags land in kc_client_options; defaults come from the initializer. */
static void test_client_flags(void **state) {
  (void)state;
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(2000, 2000);
  const kc_flag flags[] = {KC_CLIENT_FLAGS(&opt, "2000", "2000")};
  char a0[] = "prog", a1[] = "--kube-api-qps=50.5", a2[] = "--kube-api-burst", a3[] = "100";
  char *argv[] = {a0, a1, a2, a3, NULL};
  char err[128] = "";
  assert_true(opt.qps == 2000.0 && opt.burst == 2000 && opt.max_retries == 10);
  assert_int_equal(kc_flags_parse(flags, 2, 4, argv, NULL, err, sizeof(err)), 0);
  assert_true(opt.qps == 50.5);
  assert_int_equal(opt.burst, 100);
  char b1[] = "--kube-api-burst=lots";
  char *bad[] = {a0, b1, NULL};
  assert_int_equal(kc_flags_parse(flags, 2, 2, bad, NULL, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "kube-api-burst"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reasons),
      cmocka_unit_test(test_conflict_message_kept),
      cmocka_unit_test(test_fallback_to_code),
      cmocka_unit_test(test_not_a_status),
      cmocka_unit_test(test_paths),
      cmocka_unit_test(test_bad_refs),
      cmocka_unit_test(test_client_flags),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
