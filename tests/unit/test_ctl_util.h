/* Fixtures shared by the controller core tests: a Job decoded from tests/unit/data/ctl (or
 * inline JSON) with a status, a PodGroup in a phase, hand-built pods, and fake effects. */
#ifndef TEST_CTL_UTIL_H
#define TEST_CTL_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_job.h"
#include "test_fixture.h"
#include "kc_codec.h"
#include "kc_error.h"

#define FX_MAX_PODS 32
#define FX_NOW      1796000000 /* 2026-11-30T00:53:20Z, after the fixtures were created */

typedef struct {
  Kiln__Job *job;
  Kiln__PodGroup *pg;
  ctl_pod pods[FX_MAX_PODS];
  size_t npods;
  const char *pvcs[4];
  ctl_priority prios[4];
  Kiln__Command *cmds[2];
  ctl_job_view v;
  ctl_plan plan;
  int rand_calls;
} fx;

static inline int fake_rand(void *ctx, char *buf, size_t n) {
  int *calls = ctx;
  for (size_t i = 0; i < n; i++)
    buf[i] = (char)('a' + (int)((i + (size_t)*calls) % 26));
  buf[n] = '\0';
  (*calls)++;
  return 0;
}

static inline int fake_keygen(void *ctx, char **priv, char **pub) {
  *priv = strdup("-----BEGIN RSA PRIVATE KEY-----\nfake\n-----END RSA PRIVATE KEY-----\n");
  *pub = strdup("ssh-rsa AAAAfake\n");
  return *priv && *pub ? 0 : KC_ENOMEM;
}

static inline json_t *fx_parse(const char *text) {
  return fx_json_text(text, 0);
}

static inline json_t *fx_file(const char *name) {
  return fx_json_file(CTL_TESTDATA, name, "");
}

static ctl_ops fx_ops;

/* Decodes job JSON (stolen) with an optional status (JSON text). */
static inline void fx_init_json(fx *f, json_t *job, const char *status) {
  memset(f, 0, sizeof(*f));
  if (status)
    json_object_set_new(job, "status", fx_parse(status));
  char err[256];
  int rc = kc_job_decode(job, &f->job, err, sizeof(err));
  json_decref(job);
  if (rc)
    fail_msg("job decode: %s", err);
  fx_ops.rand_str = fake_rand;
  fx_ops.ssh_keygen = fake_keygen;
  fx_ops.ctx = &f->rand_calls;
  f->v.job = f->job;
  f->v.queue_exists = true;
  f->v.queue_state = "Open";
  f->v.now = FX_NOW;
  f->v.ops = &fx_ops;
  f->v.pvcs = f->pvcs;
  f->v.priorities = f->prios;
  ctl_plan_init(&f->plan);
}

static inline void fx_init(fx *f, const char *file, const char *status) {
  fx_init_json(f, fx_file(file), status);
}

/* A PodGroup in the given phase ("" for none yet: leaves it NULL). */
static inline void fx_pg(fx *f, const char *phase, const char *extra_status) {
  kc_msg_free(f->pg);
  f->pg = NULL;
  f->v.podgroup = NULL;
  if (!phase)
    return;
  char text[1024];
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"name\":\"pg\"},\"spec\":{\"minMember\":1},"
           "\"status\":{\"phase\":\"%s\"%s%s}}",
           phase, extra_status ? "," : "", extra_status ? extra_status : "");
  json_t *j = fx_parse(text);
  assert_int_equal(kc_podgroup_decode(j, &f->pg, NULL, 0), 0);
  json_decref(j);
  f->v.podgroup = f->pg;
}

static inline ctl_pod *fx_pod(fx *f, const char *task, int index, ctl_pod_phase phase) {
  assert_true(f->npods < FX_MAX_PODS);
  ctl_pod *p = &f->pods[f->npods++];
  memset(p, 0, sizeof(*p));
  snprintf(p->name, sizeof(p->name), "%s-%s-%d", f->job->metadata->name, task, index);
  snprintf(p->uid, sizeof(p->uid), "uid-%s-%d", task, index);
  snprintf(p->task, sizeof(p->task), "%s", task);
  p->index = index;
  p->phase = phase;
  p->version = f->job->status ? f->job->status->version : 0;
  p->ready = phase == CTL_POD_RUNNING;
  p->creation_ts = FX_NOW - 60;
  f->v.pods = f->pods;
  f->v.npods = f->npods;
  return p;
}

static inline int fx_sync(fx *f, const ctl_request *req) {
  ctl_plan_close(&f->plan);
  ctl_plan_init(&f->plan);
  return ctl_job_sync(&f->v, req, &f->plan);
}

static inline int fx_sync_action(fx *f, ctl_action a) {
  ctl_request r = {.action = a};
  return fx_sync(f, &r);
}

static inline void fx_close(fx *f) {
  ctl_plan_close(&f->plan);
  kc_msg_free(f->job);
  kc_msg_free(f->pg);
  for (size_t i = 0; i < 2; i++)
    kc_msg_free(f->cmds[i]);
}

static inline bool fx_deleted(const fx *f, const char *name) {
  for (size_t i = 0; i < f->plan.npods_delete; i++)
    if (strcmp(f->plan.pods_delete[i].name, name) == 0)
      return true;
  return false;
}

static inline const ctl_k8s_event *fx_event(const fx *f, const char *reason) {
  for (size_t i = 0; i < f->plan.nevents; i++)
    if (strcmp(f->plan.events[i].reason, reason) == 0)
      return &f->plan.events[i];
  return NULL;
}

static inline json_t *fx_created_pod(const fx *f, const char *name) {
  size_t i;
  json_t *p;
  json_array_foreach(f->plan.pods_create, i, p) {
    const char *n = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
    if (n && strcmp(n, name) == 0)
      return p;
  }
  return NULL;
}

static inline const char *jstr(const json_t *o, const char *path) {
  /* dotted path with keys only; "~" stands for "/" inside keys is not needed here */
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", path);
  const json_t *cur = o;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save))
    cur = json_object_get(cur, tok);
  return json_string_value(cur);
}

/* got must equal the JSON text want (object key order aside); prints both when not. */
static inline void fx_expect_json(const json_t *got, const char *want) {
  json_t *w = fx_parse(want);
  if (!json_equal((json_t *)got, w)) {
    char *g = got ? json_dumps(got, JSON_SORT_KEYS) : NULL;
    char *x = json_dumps(w, JSON_SORT_KEYS);
    print_error("got  %s\nwant %s\n", g ? g : "(null)", x);
    free(g);
    free(x);
    json_decref(w);
    fail();
  }
  json_decref(w);
}

static inline const char *fx_ann(const json_t *obj, const char *key) {
  return json_string_value(
      json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), key));
}

static inline const char *fx_label(const json_t *obj, const char *key) {
  return json_string_value(
      json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), key));
}

#endif
