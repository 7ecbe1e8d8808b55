/* Where the API server is and how to authenticate to it: a kubeconfig file (parsed with
 * libyaml), a --master override, or the in-cluster service account.
 *
 * TLS is always verified: a kubeconfig asking for insecure-skip-tls-verify is rejected, not
 * honoured. The bearer token, key material and passwords are secrets: nothing here logs them,
 * and callers must not either (the config has no print function on purpose). */
#ifndef KC_CONFIG_H
#define KC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PEM material: either a file path or the bytes themselves (decoded from *-data fields). */
typedef struct {
  char *file; /* owned path, or NULL */
  void *data; /* owned bytes (not NUL-terminated for curl), or NULL */
  size_t len;
} kc_pem;

typedef struct {
  char *server;             /* owned, "https://host:port" without a trailing slash */
  char *proxy_url;          /* owned, or NULL */
  kc_pem ca;                /* server CA; both empty means the system trust store */
  kc_pem cert;              /* client certificate */
  kc_pem key;               /* client key (secret) */
  char *token;              /* owned bearer token (secret), or NULL */
  char *token_file;         /* owned path re-read every token_period_ns, or NULL */
  uint64_t token_read_ns;   /* when token_file was last read (caller's monotonic clock) */
  uint64_t token_period_ns; /* default 60 s, like client-go's cached file token source */
  char *namespace;          /* owned: the context's namespace or the pod's; "default" if none */
  char *context;            /* owned name of the context used, or NULL (in-cluster, --master) */
  bool in_cluster;
} kc_config;

/* The in-cluster paths; a test may point root elsewhere. */
#define KC_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Parses kubeconfig text. base_dir resolves relative file paths (the directory of the file;
 * NULL for the current directory). context selects a context (NULL: current-context). master
 * (NULL or "") overrides the cluster's server. On error returns KC_EPARSE or KC_EINVAL and
 * writes a message naming the field (e.g. "users[0].user.client-key-data: invalid base64")
 * to err; c is then left zeroed. On success c must be released with kc_config_close. */
int kc_config_parse_kubeconfig(kc_config *c, const char *text, size_t len, const char *base_dir,
                               const char *context, const char *master, char *err, size_t errlen);

/* Reads and parses a kubeconfig file (see kc_config_parse_kubeconfig). */
int kc_config_load_kubeconfig(kc_config *c, const char *path, const char *context,
                              const char *master, char *err, size_t errlen);

/* In-cluster configuration from KUBERNETES_SERVICE_HOST/_PORT and the service-account
 * directory sa_dir (NULL: KC_SA_DIR): token (re-read periodically), ca.crt, namespace. */
int kc_config_in_cluster(kc_config *c, const char *sa_dir, char *err, size_t errlen);

/* client-go's BuildConfigFromFlags: with neither kubeconfig nor master, try in-cluster and
 * then the default kubeconfig ($KUBECONFIG, else ~/.kube/config); otherwise load kubeconfig
 * (or the default one) and apply master; with only master and no kubeconfig file at all, use
 * master with the system trust store and no credentials. */
int kc_config_load(kc_config *c, const char *kubeconfig, const char *master, char *err,
                   size_t errlen);

/* Zeroes secrets and frees everything; safe on a zeroed config. */
void kc_config_close(kc_config *c);

/* The bearer token to send, or NULL for none (borrowed, valid until the next call or close).
 * When the token comes from a file, re-reads it if now_ns is token_period_ns past the last
 * read or if force is set (after a 401); a failed or empty re-read keeps the previous token
 * and returns it, logging a warning without the token. The read is a synchronous read of a
 * small local file (a projected volume on tmpfs), at most once a minute plus once per 401,
 * which client-go's cached file token source does the same way. */
const char *kc_config_token(kc_config *c, uint64_t now_ns, bool force);

/* Strict standard base64 (with or without padding, whitespace ignored). *out is new memory
 * (NUL-terminated past *outlen for convenience). KC_EPARSE on bad input. */
int kc_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen);

#endif
