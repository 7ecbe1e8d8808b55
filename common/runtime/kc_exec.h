/* client-go credential plugins (kubeconfig users[].user.exec): runs the command on the libuv
 * loop, reads the ExecCredential it prints (client.authentication.k8s.io/v1 or v1beta1), and
 * hands back a bearer token and/or a client certificate with its expiry.
 *
 * What differs from client-go, on purpose:
 * - A plugin is never interactive: Kiln is a daemon with no terminal and never gives a plugin
 *   its standard input (interactiveMode Always is refused when the kubeconfig is loaded).
 * - A plugin that has not finished after kc_exec_config.timeout_ms (KC_EXEC_TIMEOUT_MS) is
 *   killed with its process group and the run fails with KC_ETIMEDOUT. client-go waits
 *   forever, but every request of a daemon waits for this credential, so a hung plugin would
 *   hang the whole program.
 * The plugin's standard error goes to Kiln's; its standard output is capped at 1 MiB. Nothing
 * here logs a token or key. */
#ifndef KC_EXEC_H
#define KC_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kc_config.h"
#include "kc_error.h"

#define KC_EXEC_INFO_ENV   "KUBERNETES_EXEC_INFO"
#define KC_EXEC_OUTPUT_MAX ((size_t)1 << 20)

/* What a plugin returned. All fields owned; token and key are secrets. */
typedef struct {
  char *token; /* bearer token, or NULL */
  char *cert;  /* PEM client certificate chain, or NULL (then key is NULL too) */
  size_t cert_len;
  char *key; /* PEM private key, or NULL */
  size_t key_len;
  int64_t expiry_ms; /* status.expirationTimestamp in Unix milliseconds; 0: never expires */
} kc_exec_cred;

/* Wipes and frees the credential; safe on a zeroed one. */
void kc_exec_cred_close(kc_exec_cred *cred);

/* True once now_ms (Unix milliseconds) is past the expiry, as client-go's credsExpired. */
bool kc_exec_cred_expired(const kc_exec_cred *cred, int64_t now_ms);

/* Parses a plugin's standard output (len bytes) against x->api_version into *cred (zeroed
 * first, owned by the caller on success). On error returns KC_EPARSE or KC_EINVAL with
 * client-go's wording in err ("decoding stdout: ...", "exec plugin didn't return a status
 * field", ...) and leaves *cred zeroed. */
KC_NODISCARD int kc_exec_parse(const kc_exec_config *x, const char *out, size_t len,
                               kc_exec_cred *cred, char *err, size_t errlen);

/* The KUBERNETES_EXEC_INFO value for c (an ExecCredential with spec.interactive false and,
 * when provideClusterInfo is set, spec.cluster from c). *out is a new string. */
KC_NODISCARD int kc_exec_info(const kc_config *c, char **out);

typedef struct kc_exec_run kc_exec_run;

/* Called once when a run ends, from the loop. On success rc is 0 and cred may be taken over
 * (move it out; what is left is freed after the callback). On failure rc is KC_ENOENT (no
 * such command; msg carries the installHint), KC_ETIMEDOUT, KC_EIO (exit code or signal),
 * KC_ETOOBIG, or a kc_exec_parse error, and msg says what happened. */
typedef void (*kc_exec_cb)(int rc, kc_exec_cred *cred, const char *msg, void *data);

/* Starts c->exec's command on loop. c is borrowed for this call only. The callback always
 * runs later from the loop, never from inside this call, even when the command cannot be
 * started. *out (may be NULL) is valid until the callback returns or kc_exec_cancel. */
KC_NODISCARD int kc_exec_start(uv_loop_t *loop, const kc_config *c, kc_exec_cb cb, void *data,
                               kc_exec_run **out);

/* Kills the plugin (and its process group) if it still runs; the callback will not be
 * called. The memory is released from the loop once the child is reaped, so keep running
 * the loop. NULL is a no-op. */
void kc_exec_cancel(kc_exec_run *run);

#endif
