/* Request/response for a command-line tool on the asynchronous client.
 *
 * The library never blocks its loop; a CLI has nothing else to do while it waits. So each call
 * is started on the client and the loop is run one turn at a time (UV_RUN_ONCE) until that
 * call's callback has fired: the retries, the token bucket, an exec credential plugin and
 * HTTP/2 all work exactly as in the daemons, and only this file knows the tool waits. */
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "kc_error.h"
#include "vc.h"

struct vc_conn {
  uv_loop_t loop;
  kc_config cfg;
  kc_client *client;
};

typedef struct {
  bool done;
  vc_reply *r;
} waiter;

static void on_done(const kc_api_result *res, void *data) {
  waiter *w = data;
  w->done = true;
  w->r->err = res->err;
  w->r->status = res->status;
  w->r->obj = res->err == 0 ? json_incref(res->obj) : NULL;
  snprintf(w->r->message, sizeof(w->r->message), "%s", res->message);
}

int vc_conn_open(const char *kubeconfig, const char *master, vc_conn **out, char *err,
                 size_t errlen) {
  *out = NULL;
  vc_conn *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return KC_ENOMEM;
  int rc = kc_err_from_uv(uv_loop_init(&c->loop));
  if (rc != 0) {
    free(c);
    return kc_errorf(err, errlen, rc, "cannot start the event loop");
  }
  rc = kc_config_load(&c->cfg, kubeconfig, master, err, errlen);
  if (rc != 0)
    goto fail_loop;
  /* client-go's defaults for a rest.Config that sets none: 5 QPS, burst 10. */
  kc_client_options opt = KC_CLIENT_OPTIONS_INIT(5, 10);
  opt.user_agent = "vcctl/" KILN_VERSION;
  rc = kc_client_new(&c->loop, &c->cfg, &opt, &c->client);
  if (rc != 0) {
    kc_errorf(err, errlen, rc, "cannot create the API client: %s", kc_strerror(rc));
    goto fail_cfg;
  }
  *out = c;
  return 0;
fail_cfg:
  kc_config_close(&c->cfg);
fail_loop:
  uv_loop_close(&c->loop);
  free(c);
  return rc;
}

int vc_call(vc_conn *c, kc_verb verb, const kc_ref *ref, const kc_query *q, json_t *body,
            vc_reply *r) {
  memset(r, 0, sizeof(*r));
  waiter w = {false, r};
  int rc = kc_api_call(c->client, verb, ref, q, body, on_done, &w);
  if (rc != 0) {
    r->err = rc;
    snprintf(r->message, sizeof(r->message), "%s", kc_strerror(rc));
    return rc;
  }
  while (!w.done)
    uv_run(&c->loop, UV_RUN_ONCE);
  return r->err;
}

void vc_reply_clear(vc_reply *r) {
  json_decref(r->obj);
  r->obj = NULL;
}

void vc_conn_close(vc_conn *c) {
  if (c == NULL)
    return;
  kc_client_free(c->client);
  while (uv_run(&c->loop, UV_RUN_DEFAULT) != 0) {
  }
  uv_loop_close(&c->loop);
  kc_config_close(&c->cfg);
  free(c);
}
