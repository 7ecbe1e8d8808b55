/* A fake transport for one test binary, linked with -Wl,--wrap=kc_api_call: every call the
 * code under test makes is recorded in fake_calls[] (not sent), and the test answers it with
 * fake_answer(), in the order it chooses. Include from exactly one file of the binary, after
 * cmocka.h. */
#ifndef FAKE_API_H
#define FAKE_API_H

#include <stdio.h>

#include "kc_api.h"

typedef struct {
  kc_verb verb;
  char resource[64];
  char path[256]; /* ns/name/subresource */
  char precondition_uid[64];
  json_t *body; /* a reference of our own (fake_reset drops it) */
  kc_api_cb cb;
  void *data;
} fake_call;

static fake_call fake_calls[256];
static size_t fake_ncalls;
static int fake_refuse_with; /* non-zero: kc_api_call fails with it, nothing sent */

int __wrap_kc_api_call(kc_client *c, kc_verb verb, const kc_ref *ref, const kc_query *q,
                       json_t *body, kc_api_cb cb, void *data);
int __wrap_kc_api_call(kc_client *c, kc_verb verb, const kc_ref *ref, const kc_query *q,
                       json_t *body, kc_api_cb cb, void *data) {
  if (fake_refuse_with)
    return fake_refuse_with;
  assert_true(fake_ncalls < sizeof(fake_calls) / sizeof(fake_calls[0]));
  fake_call *s = &fake_calls[fake_ncalls++];
  s->verb = verb;
  snprintf(s->resource, sizeof(s->resource), "%s", ref->resource ? ref->resource : "");
  snprintf(s->path, sizeof(s->path), "%s/%s/%s", ref->namespace ? ref->namespace : "",
           ref->name ? ref->name : "", ref->subresource ? ref->subresource : "");
  snprintf(s->precondition_uid, sizeof(s->precondition_uid), "%s",
           q && q->precondition_uid ? q->precondition_uid : "");
  s->body = json_incref(body);
  s->cb = cb;
  s->data = data;
  return 0;
}

/* Answers call i with err and HTTP status; obj (borrowed, may be NULL) is what came back. */
static void fake_answer(size_t i, int err, long status, json_t *obj, const char *message) {
  kc_api_result res = {.err = err,
                       .status = status,
                       .obj = obj,
                       .reason = "",
                       .message = message ? message : "",
                       .attempts = 1};
  fake_calls[i].cb(&res, fake_calls[i].data);
}

/* Forgets every recorded call (their callbacks must have run or be abandoned). */
static void fake_reset(void) {
  for (size_t i = 0; i < fake_ncalls; i++)
    json_decref(fake_calls[i].body);
  memset(fake_calls, 0, sizeof(fake_calls));
  fake_ncalls = 0;
  fake_refuse_with = 0;
}

#endif
