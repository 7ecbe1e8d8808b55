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
#include "kc_error.h"

/* PEM material: either a file path or the bytes themselves (decoded from *-data fields). */
typedef struct {
  char *file; /* owned path, or NULL */
  void *data; /* owned bytes (not NUL-terminated for curl), or NULL */
  size_t len;
} kc_pem;

/* users[].user.exec.interactiveMode. Kiln runs without a terminal and never hands a plugin
 * its standard input, so a plugin is never interactive, and Always is refused at load time. */
typedef enum { KC_EXEC_NEVER, KC_EXEC_IF_AVAILABLE, KC_EXEC_ALWAYS } kc_exec_interactive;

/* A client-go credential plugin (users[].user.exec), run by kc_exec. */
typedef struct {
  char *command; /* owned; a relative path with a '/' is resolved against the kubeconfig */
  char **args;   /* owned, nargs entries */
  size_t nargs;
  char **env; /* owned "NAME=VALUE" entries added to Kiln's environment */
  size_t nenv;
  char *api_version;  /* owned: client.authentication.k8s.io/v1 or /v1beta1 */
  char *install_hint; /* owned, or NULL */
  kc_exec_interactive interactive;
  bool provide_cluster_info;
  uint64_t timeout_ms; /* a plugin still running after this is killed (KC_EXEC_TIMEOUT_MS) */
} kc_exec_config;

/* client-go waits for a plugin forever; a daemon must not, since every request waits for the
 * credential. Two minutes leave room for a slow cloud token endpoint. */
#define KC_EXEC_TIMEOUT_MS 120000u

typedef struct {
  char *server;             /* owned, "https://host:port" without a trailing slash */
  char *tls_server_name;    /* owned name for SNI and certificate checks, or NULL: the host */
  char *proxy_url;          /* owned, or NULL; socks5:// becomes socks5h:// (remote DNS) */
  bool disable_compression; /* do not ask for gzip */
  kc_pem ca;                /* server CA; both empty means the system trust store */
  kc_pem cert;              /* client certificate */
  kc_pem key;               /* client key (secret) */
  char *token;              /* owned bearer token (secret), or NULL */
  char *token_file;         /* owned path re-read every token_period_ns, or NULL */
  uint64_t token_read_ns;   /* when token_file was last read (caller's monotonic clock) */
  uint64_t token_period_ns; /* default 60 s, like client-go's cached file token source */
  char *namespace;          /* owned: the context's namespace or the pod's; "default" if none */
  char *context;            /* owned name of the context used, or NULL (in-cluster, --master) */
  kc_exec_config *exec;     /* owned credential plugin, or NULL; unused when token or cert is set */
  bool in_cluster;
} kc_config;

/* The in-cluster paths; a test may point root elsewhere. */
#define KC_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Parses kubeconfig text. base_dir resolves relative file paths (the directory of the file;
 * NULL for the current directory). context selects a context (NULL: current-context). master
 * (NULL or "") overrides the cluster's server. On error returns KC_EPARSE or KC_EINVAL and
 * writes a message naming the field (e.g. "users[0].user.client-key-data: invalid base64")
 * to err; c is then left zeroed. On success c must be released with kc_config_close. */
KC_NODISCARD int kc_config_parse_kubeconfig(kc_config *c, const char *text, size_t len,
                                            const char *base_dir, const char *context,
                                            const char *master, char *err, size_t errlen);

/* The same over several kubeconfig texts merged by client-go's rules: the first text that
 * has a cluster, user or context of a name gives the whole entry, current-context comes from
 * the first text that sets it, and relative paths resolve against the directory of the text
 * they came from. names[i] (may be NULL) prefixes error messages about texts[i]. */
KC_NODISCARD int kc_config_parse_merged(kc_config *c, const char *const *texts, const size_t *lens,
                                        const char *const *base_dirs, const char *const *names,
                                        size_t n, const char *context, const char *master,
                                        char *err, size_t errlen);

/* Reads and parses a kubeconfig file (see kc_config_parse_kubeconfig). */
KC_NODISCARD int kc_config_load_kubeconfig(kc_config *c, const char *path, const char *context,
                                           const char *master, char *err, size_t errlen);

/* Loads a ':'-separated list of kubeconfig files, as $KUBECONFIG, merged (see
 * kc_config_parse_merged). Missing files and empty entries are skipped and a repeated path
 * counts once, as in client-go; a file that cannot be read or parsed is an error naming it;
 * KC_ENOENT when none of the files exists. */
KC_NODISCARD int kc_config_load_kubeconfigs(kc_config *c, const char *paths, const char *context,
                                            const char *master, char *err, size_t errlen);

/* Where to send requests when tls-server-name differs from the server's host: *url is the
 * server URL with the host replaced by tls-server-name (curl then sends that name as SNI and
 * verifies the certificate against it), *connect_to a CURLOPT_CONNECT_TO entry sending the
 * connection to the real host and port, *host the Host header naming the real host (client-go
 * keeps the URL's host in Host). All three NULL when there is nothing to rewrite (no
 * tls-server-name, or plain http). New strings; KC_EINVAL on a server URL without a host. */
KC_NODISCARD int kc_config_tls_target(const kc_config *c, char **url, char **connect_to,
                                      char **host);

/* In-cluster configuration from KUBERNETES_SERVICE_HOST/_PORT and the service-account
 * directory sa_dir (NULL: KC_SA_DIR): token (re-read periodically), ca.crt, namespace. */
KC_NODISCARD int kc_config_in_cluster(kc_config *c, const char *sa_dir, char *err, size_t errlen);

/* client-go's BuildConfigFromFlags: with neither kubeconfig nor master, try in-cluster and
 * then the default kubeconfig ($KUBECONFIG, a ':'-separated list merged as
 * kc_config_load_kubeconfigs does, else ~/.kube/config); otherwise load kubeconfig (one file,
 * never a list, as client-go's explicit path) or the default one, and apply master; with only
 * master and no kubeconfig file at all, use master with the system trust store and no
 * credentials. */
KC_NODISCARD int kc_config_load(kc_config *c, const char *kubeconfig, const char *master, char *err,
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

/* Overwrites len bytes at p, then frees it: for anything that held a secret (token, key).
 * NULL is a no-op. */
void kc_secret_free(void *p, size_t len);

#endif
