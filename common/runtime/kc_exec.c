#include "kc_exec.h"

#include "kc_base64.h"
#include "kc_codec.h"
#include "kc_container.h"
#include "kc_error.h"
#include "kc_file.h"
#include "kc_log.h"

#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef container_of
#endif

#define CA_FILE_MAX ((size_t)1 << 20)

extern char **environ;

void kc_exec_cred_close(kc_exec_cred *cred) {
  if (!cred)
    return;
  if (cred->token)
    kc_secret_free(cred->token, strlen(cred->token));
  kc_secret_free(cred->cert, cred->cert_len);
  kc_secret_free(cred->key, cred->key_len);
  memset(cred, 0, sizeof(*cred));
}

bool kc_exec_cred_expired(const kc_exec_cred *cred, int64_t now_ms) {
  return cred->expiry_ms != 0 && now_ms > cred->expiry_ms;
}

/* ---- RFC 3339 ---- */

/* ---- output ---- */

/* A status field that must be a string when present; "" and null count as absent. */
static int status_str(json_t *status, const char *key, const char **out, char *err, size_t errlen) {
  json_t *v = json_object_get(status, key);
  *out = NULL;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v))
    return kc_errorf(err, errlen, KC_EPARSE, "decoding stdout: status.%s: not a string", key);
  if (json_string_length(v))
    *out = json_string_value(v);
  return 0;
}

int kc_exec_parse(const kc_exec_config *x, const char *out, size_t len, kc_exec_cred *cred,
                  char *err, size_t errlen) {
  memset(cred, 0, sizeof(*cred));
  json_error_t je;
  json_t *o = json_loadb(out, len, 0, &je);
  int rc;
  if (!o)
    return kc_errorf(err, errlen, KC_EPARSE, "decoding stdout: line %d column %d: %s", je.line,
                     je.column, je.text);
  const char *kind = json_string_value(json_object_get(o, "kind"));
  const char *api = json_string_value(json_object_get(o, "apiVersion"));
  json_t *status = json_object_get(o, "status");
  const char *token, *cert, *key, *exp;
  if (!json_is_object(o)) {
    rc = kc_errorf(err, errlen, KC_EPARSE, "decoding stdout: not a JSON object");
  } else if (!kind || strcmp(kind, "ExecCredential") != 0) {
    rc = kc_errorf(err, errlen, KC_EPARSE, "decoding stdout: kind is \"%s\", want ExecCredential",
                   kind ? kind : "");
  } else if (!api || strcmp(api, x->api_version) != 0) {
    rc = kc_errorf(err, errlen, KC_EINVAL,
                   "exec plugin is configured to use API version %s, plugin returned version %s",
                   x->api_version, api ? api : "(none)");
  } else if (!status || json_is_null(status)) {
    rc = kc_errorf(err, errlen, KC_EINVAL, "exec plugin didn't return a status field");
  } else if (!json_is_object(status)) {
    rc = kc_errorf(err, errlen, KC_EPARSE, "decoding stdout: status: not an object");
  } else if ((rc = status_str(status, "token", &token, err, errlen)) ||
             (rc = status_str(status, "clientCertificateData", &cert, err, errlen)) ||
             (rc = status_str(status, "clientKeyData", &key, err, errlen)) ||
             (rc = status_str(status, "expirationTimestamp", &exp, err, errlen))) {
    /* err is set */
  } else if (!token && !cert && !key) {
    rc = kc_errorf(err, errlen, KC_EINVAL, "exec plugin didn't return a token or cert/key pair");
  } else if (!cert != !key) {
    rc =
        kc_errorf(err, errlen, KC_EINVAL, "exec plugin returned only certificate or key, not both");
  } else if (cert && (!strstr(cert, "-----BEGIN ") || !strstr(key, "-----BEGIN "))) {
    /* curl checks the pair itself at the handshake; this catches base64 given for PEM. */
    rc = kc_errorf(
        err, errlen, KC_EINVAL,
        "failed parsing client key/certificate: status.%s is not PEM (clientCertificateData "
        "and clientKeyData hold PEM text, not base64)",
        strstr(cert, "-----BEGIN ") ? "clientKeyData" : "clientCertificateData");
  } else if (exp && kc_rfc3339_parse(exp, &cred->expiry_ms) != 0) {
    rc = kc_errorf(err, errlen, KC_EPARSE,
                   "decoding stdout: status.expirationTimestamp: \"%s\" is not an RFC 3339 time",
                   exp);
  } else {
    rc = 0;
    if ((token && !(cred->token = strdup(token))) ||
        (cert && (!(cred->cert = strdup(cert)) || !(cred->key = strdup(key))))) {
      kc_exec_cred_close(cred);
      rc = kc_errorf(err, errlen, KC_ENOMEM, "exec plugin: out of memory");
    } else if (cert) {
      cred->cert_len = strlen(cred->cert);
      cred->key_len = strlen(cred->key);
    }
  }
  if (rc)
    cred->expiry_ms = 0;
  /* The parsed text holds the secrets too: wipe the strings jansson allocated. */
  if (json_is_object(status)) {
    const char *k;
    json_t *v;
    json_object_foreach(status, k, v) {
      if (json_is_string(v)) {
        volatile char *s = (volatile char *)json_string_value(v);
        for (size_t i = 0; s[i]; i++)
          s[i] = 0;
      }
    }
  }
  json_decref(o);
  return rc;
}

/* ---- KUBERNETES_EXEC_INFO ---- */

/* The CA bytes for spec.cluster: inline data, or the file read now (client-go reads it too). */
static int ca_base64(const kc_pem *ca, char **out) {
  *out = NULL;
  if (ca->data) {
    *out = kc_base64_encode(ca->data, ca->len);
    return *out ? 0 : KC_ENOMEM;
  }
  if (!ca->file)
    return 0;
  /* A CA bundle is read as bytes; any failure to read it is KC_EIO to the caller. */
  char *buf = NULL;
  size_t n = 0;
  int rc = kc_file_read(ca->file, CA_FILE_MAX - 1, &buf, &n);
  if (rc == KC_ENOENT)
    rc = KC_EIO;
  if (rc == 0 && !(*out = kc_base64_encode(buf, n)))
    rc = KC_ENOMEM;
  free(buf);
  return rc;
}

int kc_exec_info(const kc_config *c, char **out) {
  *out = NULL;
  json_t *spec = json_pack("{s:b}", "interactive", 0);
  json_t *o = json_pack("{s:s, s:s, s:o}", "kind", "ExecCredential", "apiVersion",
                        c->exec->api_version, "spec", spec);
  if (!o)
    return KC_ENOMEM;
  int rc = 0;
  if (c->exec->provide_cluster_info) {
    json_t *cl = json_pack("{s:s}", "server", c->server ? c->server : "");
    char *ca = NULL;
    if (!cl || json_object_set_new(spec, "cluster", cl) != 0) {
      rc = KC_ENOMEM;
    } else if ((rc = ca_base64(&c->ca, &ca)) != 0) {
      KC_WARN("exec: cannot read %s for the plugin's cluster info: %s", c->ca.file,
              kc_strerror(rc));
      rc = 0;
    }
    if (rc == 0 &&
        ((c->tls_server_name &&
          json_object_set_new(cl, "tls-server-name", json_string(c->tls_server_name))) ||
         (ca && json_object_set_new(cl, "certificate-authority-data", json_string(ca))) ||
         (c->proxy_url && json_object_set_new(cl, "proxy-url", json_string(c->proxy_url))) ||
         (c->disable_compression && json_object_set_new(cl, "disable-compression", json_true()))))
      rc = KC_ENOMEM;
    free(ca);
  }
  if (rc == 0 && !(*out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER)))
    rc = KC_ENOMEM;
  json_decref(o);
  return rc;
}

/* ---- running the plugin ---- */

struct kc_exec_run {
  uv_process_t proc;
  uv_pipe_t out;
  uv_timer_t timer;
  int open; /* handles not yet closed; the run is freed when this reaches 0 */
  bool proc_started, exited, out_closed, timed_out, overflow, canceled;
  int spawn_err, read_err;
  int64_t exit_status;
  int term_signal;
  char *buf;
  size_t len, cap;
  char chunk[16384];
  char *command, *install_hint;
  kc_exec_config cfg; /* api_version and timeout for parsing; borrowed strings point into us */
  uint64_t timeout_ms;
  kc_exec_cb cb;
  void *data;
};

static void run_free(kc_exec_run *r) {
  kc_secret_free(r->buf, r->cap);
  volatile char *chunk = r->chunk; /* the last piece read holds the token too */
  for (size_t i = 0; i < sizeof(r->chunk); i++)
    chunk[i] = 0;
  free(r->command);
  free(r->install_hint);
  free(r->cfg.api_version);
  free(r);
}

static void deliver(kc_exec_run *r) {
  char msg[1024];
  kc_exec_cred cred = {0};
  int rc;
  if (r->spawn_err == UV_ENOENT) {
    rc = kc_errorf(msg, sizeof(msg), KC_ENOENT,
                   "exec: executable %s not found (a client-go credential plugin named in the "
                   "kubeconfig that is not installed)%s%s",
                   r->command, r->install_hint ? "\n\n" : "",
                   r->install_hint ? r->install_hint : "");
  } else if (r->spawn_err) {
    rc = kc_errorf(msg, sizeof(msg), KC_EIO, "exec: cannot run %s: %s", r->command,
                   uv_strerror(r->spawn_err));
  } else if (r->timed_out) {
    rc = kc_errorf(msg, sizeof(msg), KC_ETIMEDOUT,
                   "exec: executable %s did not finish within %.1f s and was killed (Kiln gives a "
                   "credential plugin at most that long)",
                   r->command, (double)r->timeout_ms / 1000.0);
  } else if (r->overflow) {
    rc = kc_errorf(msg, sizeof(msg), KC_ETOOBIG,
                   "exec: executable %s wrote more than %zu bytes to standard output", r->command,
                   KC_EXEC_OUTPUT_MAX);
  } else if (r->term_signal) {
    rc = kc_errorf(msg, sizeof(msg), KC_EIO, "exec: executable %s was killed by signal %d",
                   r->command, r->term_signal);
  } else if (r->exit_status) {
    rc = kc_errorf(msg, sizeof(msg), KC_EIO, "exec: executable %s failed with exit code %lld",
                   r->command, (long long)r->exit_status);
  } else if (r->read_err) {
    rc = kc_errorf(msg, sizeof(msg), KC_EIO, "exec: reading the output of %s: %s", r->command,
                   uv_strerror(r->read_err));
  } else {
    rc = kc_exec_parse(&r->cfg, r->buf ? r->buf : "", r->len, &cred, msg, sizeof(msg));
  }
  if (rc == 0)
    msg[0] = '\0';
  r->cb(rc, rc == 0 ? &cred : NULL, msg, r->data);
  kc_exec_cred_close(&cred);
}

static void on_closed(uv_handle_t *h) {
  kc_exec_run *r = h->data;
  if (--r->open > 0)
    return;
  if (!r->canceled)
    deliver(r);
  run_free(r);
}

static void close_handle(kc_exec_run *r, uv_handle_t *h) {
  if (!uv_is_closing(h))
    uv_close(h, on_closed);
  (void)r;
}

/* Kills the plugin and anything it started (it leads its own process group, whose id stays
 * taken while any member lives, even after the plugin itself was reaped). */
static void kill_group(kc_exec_run *r) {
  if (r->proc_started && r->proc.pid > 0)
    (void)kill(-r->proc.pid, SIGKILL);
}

/* Closes whatever can be closed now: the process handle only after the child is reaped. */
static void maybe_close(kc_exec_run *r) {
  bool out_done = r->out_closed;
  if (!out_done)
    return;
  if (r->exited || !r->proc_started) {
    uv_timer_stop(&r->timer);
    close_handle(r, (uv_handle_t *)&r->timer);
    close_handle(r, (uv_handle_t *)&r->proc);
  }
}

static void close_out(kc_exec_run *r) {
  if (!r->out_closed) {
    r->out_closed = true;
    uv_read_stop((uv_stream_t *)&r->out);
    close_handle(r, (uv_handle_t *)&r->out);
  }
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig) {
  kc_exec_run *r = container_of(p, kc_exec_run, proc);
  r->exited = true;
  r->exit_status = status;
  r->term_signal = sig;
  maybe_close(r);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  kc_exec_run *r = h->data;
  (void)hint;
  buf->base = r->chunk;
  buf->len = sizeof(r->chunk);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  kc_exec_run *r = s->data;
  if (n == 0)
    return;
  if (n < 0) {
    if (n != UV_EOF)
      r->read_err = (int)n;
    close_out(r);
    maybe_close(r);
    return;
  }
  size_t len = (size_t)n;
  if (len > KC_EXEC_OUTPUT_MAX - r->len) {
    r->overflow = true;
    kill_group(r);
    close_out(r);
    maybe_close(r);
    return;
  }
  if (r->len + len + 1 > r->cap) {
    size_t cap = r->cap ? r->cap : 4096;
    while (cap < r->len + len + 1)
      cap *= 2;
    char *nb = malloc(cap);
    if (!nb) {
      r->read_err = UV_ENOMEM;
      kill_group(r);
      close_out(r);
      maybe_close(r);
      return;
    }
    if (r->buf)
      memcpy(nb, r->buf, r->len);
    kc_secret_free(r->buf, r->cap);
    r->buf = nb;
    r->cap = cap;
  }
  memcpy(r->buf + r->len, buf->base, len);
  r->len += len;
  r->buf[r->len] = '\0';
}

static void on_timeout(uv_timer_t *t) {
  kc_exec_run *r = container_of(t, kc_exec_run, timer);
  r->timed_out = true;
  kill_group(r);
  close_out(r);
  maybe_close(r);
}

static bool env_overridden(const char *entry, const kc_exec_config *x) {
  size_t n = strcspn(entry, "=");
  if (n == strlen(KC_EXEC_INFO_ENV) && strncmp(entry, KC_EXEC_INFO_ENV, n) == 0)
    return true;
  for (size_t i = 0; i < x->nenv; i++)
    if (strncmp(x->env[i], entry, n) == 0 && x->env[i][n] == '=')
      return true;
  return false;
}

/* The command's environment: the inherited one, then the kubeconfig's env, then info_entry
 * (KUBERNETES_EXEC_INFO=...); a name given later replaces an inherited one, as Go's exec
 * keeps the last value of a name. The strings are borrowed. NULL when out of memory. */
static char **exec_env(char *const *inherited, const kc_exec_config *x, char *info_entry) {
  size_t nenv = 0;
  while (inherited && inherited[nenv])
    nenv++;
  char **env = calloc(nenv + x->nenv + 2, sizeof(char *));
  if (!env)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < nenv; i++)
    if (!env_overridden(inherited[i], x))
      env[k++] = inherited[i];
  for (size_t i = 0; i < x->nenv; i++)
    env[k++] = x->env[i];
  env[k++] = info_entry;
  return env;
}

/* Spawns x's command into r with argv and env. Every failure from here on is reported
 * through r's callback once the handles close. */
static void spawn(uv_loop_t *loop, kc_exec_run *r, const kc_exec_config *x, char **argv,
                  char **env) {
  uv_pipe_init(loop, &r->out, 0);
  uv_timer_init(loop, &r->timer);
  r->out.data = r->timer.data = r->proc.data = r;
  r->open = 3;
  uv_stdio_container_t stdio[3] = {
      {.flags = UV_IGNORE},
      {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&r->out},
      {.flags = UV_INHERIT_FD, .data.fd = 2},
  };
  uv_process_options_t opt = {
      .exit_cb = on_exit_cb,
      .file = x->command,
      .args = argv,
      .env = env,
      .flags = UV_PROCESS_DETACHED, /* its own process group, so a timeout kills it all */
      .stdio_count = 3,
      .stdio = stdio,
  };
  int err = uv_spawn(loop, &r->proc, &opt);
  if (err) {
    r->spawn_err = err;
    close_out(r);
    maybe_close(r);
    return;
  }
  r->proc_started = true;
  KC_V(3, "exec: started %s (pid %d)", x->command, r->proc.pid);
  if ((err = uv_read_start((uv_stream_t *)&r->out, on_alloc, on_read)) != 0) {
    r->read_err = err;
    kill_group(r);
    close_out(r);
  }
  uv_timer_start(&r->timer, on_timeout, r->timeout_ms, 0);
}

int kc_exec_start(uv_loop_t *loop, const kc_config *c, kc_exec_cb cb, void *data,
                  kc_exec_run **out) {
  const kc_exec_config *x = c->exec;
  if (!x || !cb)
    return KC_EINVAL;
  kc_exec_run *r = calloc(1, sizeof(*r));
  if (!r)
    return KC_ENOMEM;
  r->cb = cb;
  r->data = data;
  r->timeout_ms = x->timeout_ms ? x->timeout_ms : KC_EXEC_TIMEOUT_MS;
  char *info = NULL, **env = NULL, **argv = NULL;
  int rc = KC_ENOMEM;
  if (!(r->command = strdup(x->command)) || !(r->cfg.api_version = strdup(x->api_version)) ||
      (x->install_hint && !(r->install_hint = strdup(x->install_hint))))
    goto fail;
  if ((rc = kc_exec_info(c, &info)))
    goto fail;
  rc = KC_ENOMEM;
  size_t ninfo = strlen(KC_EXEC_INFO_ENV) + strlen(info) + 2;
  char *info_entry = malloc(ninfo);
  if (!info_entry)
    goto fail;
  snprintf(info_entry, ninfo, "%s=%s", KC_EXEC_INFO_ENV, info);
  free(info);
  info = info_entry;
  if (!(env = exec_env(environ, x, info)) || !(argv = calloc(x->nargs + 2, sizeof(char *))))
    goto fail;
  argv[0] = x->command;
  for (size_t i = 0; i < x->nargs; i++)
    argv[i + 1] = x->args[i];
  spawn(loop, r, x, argv, env);
  kc_secret_free(info, strlen(info));
  free(env);
  free(argv);
  if (out)
    *out = r;
  return 0;
fail:
  if (info)
    kc_secret_free(info, strlen(info));
  free(env);
  free(argv);
  run_free(r);
  return rc;
}

void kc_exec_cancel(kc_exec_run *r) {
  if (!r || r->canceled)
    return;
  r->canceled = true;
  kill_group(r);
  close_out(r);
  maybe_close(r);
}
