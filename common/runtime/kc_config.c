#include "kc_config.h"

#include "kc_base64.h"
#include "kc_error.h"
#include "kc_file.h"
#include "kc_log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define KUBECONFIG_MAX  (16u << 20) /* a kubeconfig larger than this is not a kubeconfig */
#define SECRET_FILE_MAX (1u << 20)  /* token, CA and namespace files */
#define TOKEN_PERIOD_NS (60ull * 1000000000ull)

void kc_secret_free(void *p, size_t len) {
  if (!p)
    return;
  volatile unsigned char *v = p;
  for (size_t i = 0; i < len; i++)
    v[i] = 0;
  free(p);
}

static void exec_free(kc_exec_config *x);

static void pem_close(kc_pem *p) {
  free(p->file);
  kc_secret_free(p->data, p->len);
  memset(p, 0, sizeof(*p));
}

void kc_config_close(kc_config *c) {
  if (!c)
    return;
  free(c->server);
  free(c->tls_server_name);
  free(c->proxy_url);
  exec_free(c->exec);
  pem_close(&c->ca);
  pem_close(&c->cert);
  pem_close(&c->key);
  if (c->token)
    kc_secret_free(c->token, strlen(c->token));
  free(c->token_file);
  free(c->namespace);
  free(c->context);
  memset(c, 0, sizeof(*c));
}

/* ---- small file and string helpers ---- */

/* Joins a relative path to base_dir; absolute paths and a NULL base are copied. */
static char *resolve_path(const char *base_dir, const char *path) {
  while (path[0] == '.' && path[1] == '/' && path[2]) /* "./x" is "x", as filepath.Join says */
    path += 2;
  if (path[0] == '/' || !base_dir || !base_dir[0])
    return strdup(path);
  size_t n = strlen(base_dir) + strlen(path) + 2;
  char *s = malloc(n);
  if (s)
    snprintf(s, n, "%s/%s", base_dir, path);
  return s;
}

static char *trim_dup(const char *s, size_t len) {
  while (len &&
         (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' ' || s[len - 1] == '\t'))
    len--;
  while (len && (*s == ' ' || *s == '\t' || *s == '\n')) {
    s++;
    len--;
  }
  return strndup(s, len);
}

/* Reads a secret file into a trimmed new string. */
static int read_trimmed(const char *path, char **out) {
  char *buf;
  size_t len;
  int rc = kc_file_read(path, SECRET_FILE_MAX, &buf, &len);
  if (rc)
    return rc;
  *out = trim_dup(buf, len);
  kc_secret_free(buf, len);
  return *out ? 0 : KC_ENOMEM;
}

/* ---- YAML navigation ---- */

static const char *scalar(yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *map, const char *key) {
  if (!map || map->type != YAML_MAPPING_NODE)
    return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    const char *k = scalar(yaml_document_get_node(d, p->key));
    if (k && strcmp(k, key) == 0)
      return yaml_document_get_node(d, p->value);
  }
  return NULL;
}

/* A scalar field that must be a string if present; "" counts as absent, like client-go. */
static int get_str(yaml_document_t *d, yaml_node_t *map, const char *key, const char *where,
                   const char **out, char *err, size_t errlen) {
  yaml_node_t *n = map_get(d, map, key);
  *out = NULL;
  if (!n)
    return 0;
  if (n->type != YAML_SCALAR_NODE)
    return kc_errorf(err, errlen, KC_EPARSE, "%s.%s: expected a string", where, key);
  const char *s = scalar(n);
  if (s[0] && !(n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && strcmp(s, "null") == 0))
    *out = s;
  return 0;
}

/* One kubeconfig text of a merged set: its YAML, the directory its relative paths resolve
 * against, and the prefix naming it in errors ("" for a lone text). */
typedef struct {
  yaml_document_t doc;
  yaml_node_t *root;
  const char *base_dir;
  char pfx[300];
} src_doc;

/* Finds the entry named name in the top-level list key (clusters/users/contexts) of the first
 * text that has one, as client-go's merge keeps the first file's entry whole, and returns its
 * inner mapping (entry.<inner>); *where gets "<file: >key[i].inner" for error messages and
 * *src the text it came from. */
static int find_named(src_doc *docs, size_t n, const char *key, const char *inner, const char *name,
                      yaml_node_t **out, src_doc **src, char *where, size_t wlen, char *err,
                      size_t errlen) {
  bool any_list = false;
  for (size_t k = 0; k < n; k++) {
    yaml_document_t *d = &docs[k].doc;
    const char *pfx = docs[k].pfx;
    yaml_node_t *list = map_get(d, docs[k].root, key);
    if (!list ||
        (list->type == YAML_SCALAR_NODE && list->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
         (!scalar(list)[0] || strcmp(scalar(list), "null") == 0 || strcmp(scalar(list), "~") == 0)))
      continue;
    if (list->type != YAML_SEQUENCE_NODE)
      return kc_errorf(err, errlen, KC_EPARSE, "%s%s: expected a list", pfx, key);
    any_list = true;
    int i = 0;
    for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top;
         it++, i++) {
      yaml_node_t *e = yaml_document_get_node(d, *it);
      if (!e || e->type != YAML_MAPPING_NODE)
        return kc_errorf(err, errlen, KC_EPARSE, "%s%s[%d]: expected a mapping", pfx, key, i);
      const char *nm = scalar(map_get(d, e, "name"));
      if (!nm)
        return kc_errorf(err, errlen, KC_EPARSE, "%s%s[%d].name: missing", pfx, key, i);
      if (strcmp(nm, name) != 0)
        continue;
      yaml_node_t *body = map_get(d, e, inner);
      if (!body || body->type != YAML_MAPPING_NODE)
        return kc_errorf(err, errlen, KC_EPARSE, "%s%s[%d].%s: missing or not a mapping", pfx, key,
                         i, inner);
      *out = body;
      *src = &docs[k];
      snprintf(where, wlen, "%s%s[%d].%s", pfx, key, i, inner);
      return 0;
    }
  }
  const char *pfx = n == 1 ? docs[0].pfx : "";
  if (!any_list)
    return kc_errorf(err, errlen, KC_EINVAL, "%s%s: missing (looking for \"%s\")", pfx, key, name);
  return kc_errorf(err, errlen, KC_EINVAL, "%s%s: no entry named \"%s\"", pfx, key, name);
}

/* Fills pem from "<file_key>" or "<data_key>" (base64). Both present is an error, as in
 * client-go's validation. */
static int get_pem(yaml_document_t *d, yaml_node_t *map, const char *where, const char *file_key,
                   const char *data_key, const char *base_dir, kc_pem *pem, char *err,
                   size_t errlen) {
  const char *file, *data;
  int rc;
  if ((rc = get_str(d, map, file_key, where, &file, err, errlen)) ||
      (rc = get_str(d, map, data_key, where, &data, err, errlen)))
    return rc;
  if (file && data)
    return kc_errorf(err, errlen, KC_EINVAL, "%s: both %s and %s are set", where, file_key,
                     data_key);
  if (file) {
    if (!(pem->file = resolve_path(base_dir, file)))
      return KC_ENOMEM;
  } else if (data) {
    unsigned char *bytes;
    size_t n;
    char why[96];
    rc = kc_base64_decode(data, strlen(data), &bytes, &n, why, sizeof(why));
    if (rc == KC_EPARSE)
      return kc_errorf(err, errlen, rc, "%s.%s: invalid base64: %s", where, data_key, why);
    if (rc)
      return rc;
    if (n == 0) {
      free(bytes);
      return kc_errorf(err, errlen, KC_EINVAL, "%s.%s: empty", where, data_key);
    }
    pem->data = bytes;
    pem->len = n;
  }
  return 0;
}

/* A boolean field: absent is false; YAML 1.1's spellings that Go's YAML reader takes. */
static int get_bool(yaml_document_t *d, yaml_node_t *map, const char *key, const char *where,
                    bool *out, char *err, size_t errlen) {
  const char *s;
  int rc = get_str(d, map, key, where, &s, err, errlen);
  *out = false;
  if (rc || !s)
    return rc;
  if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
    *out = true;
  else if (strcmp(s, "false") != 0 && strcmp(s, "False") != 0 && strcmp(s, "FALSE") != 0)
    return kc_errorf(err, errlen, KC_EPARSE, "%s.%s: \"%s\" is not true or false", where, key, s);
  return 0;
}

static int set_master(kc_config *c, const char *master, char *err, size_t errlen) {
  size_t n = strlen(master);
  while (n && master[n - 1] == '/')
    n--;
  if (n == 0)
    return kc_errorf(err, errlen, KC_EINVAL, "--master: empty");
  free(c->server);
  /* A bare host:port means https, as in client-go's DefaultServerURL for TLS configs. */
  if (strstr(master, "://")) {
    c->server = strndup(master, n);
  } else {
    size_t m = n + sizeof("https://");
    c->server = malloc(m);
    if (c->server)
      snprintf(c->server, m, "https://%.*s", (int)n, master);
  }
  return c->server ? 0 : KC_ENOMEM;
}

static int check_server(const char *server, const char *where, char *err, size_t errlen) {
  if (strncmp(server, "https://", 8) == 0 || strncmp(server, "http://", 7) == 0)
    return 0;
  return kc_errorf(err, errlen, KC_EINVAL, "%s: \"%s\" is not an http(s) URL", where, server);
}

/* client-go accepts http, https and socks5 proxies. Go's SOCKS5 dialer lets the proxy resolve
 * the name; curl calls that socks5h. */
static int set_proxy(kc_config *c, const char *proxy, const char *where, char *err, size_t errlen) {
  const char *rest = NULL;
  if (strncmp(proxy, "socks5://", 9) == 0)
    rest = proxy + 9;
  else if (strncmp(proxy, "http://", 7) != 0 && strncmp(proxy, "https://", 8) != 0)
    return kc_errorf(err, errlen, KC_EINVAL,
                     "%s.proxy-url: \"%s\": unsupported scheme, must be http, https, or socks5",
                     where, proxy);
  if (rest) {
    size_t n = strlen(rest) + sizeof("socks5h://");
    if ((c->proxy_url = malloc(n)))
      snprintf(c->proxy_url, n, "socks5h://%s", rest);
  } else {
    c->proxy_url = strdup(proxy);
  }
  return c->proxy_url ? 0 : KC_ENOMEM;
}

static int parse_cluster(kc_config *c, src_doc *docs, size_t ndocs, const char *name,
                         bool have_master, char *err, size_t errlen) {
  yaml_node_t *cl;
  src_doc *src;
  char where[400];
  int rc;
  if ((rc = find_named(docs, ndocs, "clusters", "cluster", name, &cl, &src, where, sizeof(where),
                       err, errlen)))
    return rc;
  yaml_document_t *d = &src->doc;
  const char *server, *sni, *proxy, *insecure;
  if ((rc = get_str(d, cl, "server", where, &server, err, errlen)) ||
      (rc = get_str(d, cl, "tls-server-name", where, &sni, err, errlen)) ||
      (rc = get_str(d, cl, "proxy-url", where, &proxy, err, errlen)) ||
      (rc = get_str(d, cl, "insecure-skip-tls-verify", where, &insecure, err, errlen)) ||
      (rc = get_bool(d, cl, "disable-compression", where, &c->disable_compression, err, errlen)))
    return rc;
  if (insecure && strcmp(insecure, "false") != 0)
    return kc_errorf(err, errlen, KC_EINVAL,
                     "%s.insecure-skip-tls-verify: not supported, Kiln always verifies TLS", where);
  if (sni) {
    /* It goes into a URL and a CURLOPT_CONNECT_TO entry: a host name or address only. */
    for (const char *p = sni; *p; p++)
      if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '.' || *p == '-' || *p == '_' || *p == ':' || *p == '[' || *p == ']'))
        return kc_errorf(err, errlen, KC_EINVAL, "%s.tls-server-name: \"%s\" is not a host name",
                         where, sni);
    if (!(c->tls_server_name = strdup(sni)))
      return KC_ENOMEM;
  }
  if (!server && !have_master)
    return kc_errorf(err, errlen, KC_EINVAL, "%s.server: missing", where);
  if (server) {
    char w[420];
    snprintf(w, sizeof(w), "%s.server", where);
    if ((rc = check_server(server, w, err, errlen)))
      return rc;
    size_t n = strlen(server);
    while (n && server[n - 1] == '/')
      n--;
    if (!(c->server = strndup(server, n)))
      return KC_ENOMEM;
  }
  if (proxy && (rc = set_proxy(c, proxy, where, err, errlen)))
    return rc;
  return get_pem(d, cl, where, "certificate-authority", "certificate-authority-data", src->base_dir,
                 &c->ca, err, errlen);
}

static void exec_free(kc_exec_config *x) {
  if (!x)
    return;
  free(x->command);
  for (size_t i = 0; i < x->nargs; i++)
    free(x->args[i]);
  free(x->args);
  for (size_t i = 0; i < x->nenv; i++)
    kc_secret_free(x->env[i], strlen(x->env[i])); /* env values often carry secrets */
  free(x->env);
  free(x->api_version);
  free(x->install_hint);
  free(x);
}

/* exec.apiVersion and exec.interactiveMode (w names the exec entry in messages). */
static int parse_exec_mode(kc_exec_config *x, const char *api, const char *mode, const char *w,
                           char *err, size_t errlen) {
  bool v1 = strcmp(api, "client.authentication.k8s.io/v1") == 0;
  if (!v1 && strcmp(api, "client.authentication.k8s.io/v1beta1") != 0)
    return kc_errorf(err, errlen, KC_EINVAL,
                     "%s.apiVersion: \"%s\" is not client.authentication.k8s.io/v1 or /v1beta1", w,
                     api);
  /* v1 requires the mode; v1beta1 defaults it to IfAvailable (clientcmd's defaulting). */
  if (!mode && v1)
    return kc_errorf(err, errlen, KC_EINVAL, "%s.interactiveMode: missing (required by %s)", w,
                     api);
  if (!mode || strcmp(mode, "IfAvailable") == 0)
    x->interactive = KC_EXEC_IF_AVAILABLE;
  else if (strcmp(mode, "Never") == 0)
    x->interactive = KC_EXEC_NEVER;
  else if (strcmp(mode, "Always") == 0)
    return kc_errorf(err, errlen, KC_EINVAL,
                     "%s.interactiveMode: Always needs a terminal on standard input, and Kiln runs "
                     "without one (use IfAvailable or Never)",
                     w);
  else
    return kc_errorf(err, errlen, KC_EINVAL, "%s.interactiveMode: invalid value \"%s\"", w, mode);
  return 0;
}

/* exec.args: a list of strings (absent, empty or null: none). */
static int parse_exec_args(kc_exec_config *x, yaml_document_t *d, yaml_node_t *ex, const char *w,
                           char *err, size_t errlen) {
  yaml_node_t *args = map_get(d, ex, "args");
  if (!args || (args->type == YAML_SCALAR_NODE && !scalar(args)[0]) ||
      (args->type == YAML_SCALAR_NODE && strcmp(scalar(args), "null") == 0))
    return 0;
  if (args->type != YAML_SEQUENCE_NODE)
    return kc_errorf(err, errlen, KC_EPARSE, "%s.args: expected a list", w);
  size_t n = (size_t)(args->data.sequence.items.top - args->data.sequence.items.start);
  if (!(x->args = calloc(n ? n : 1, sizeof(char *))))
    return KC_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    const char *a = scalar(yaml_document_get_node(d, args->data.sequence.items.start[i]));
    if (!a)
      return kc_errorf(err, errlen, KC_EPARSE, "%s.args[%zu]: expected a string", w, i);
    if (!(x->args[i] = strdup(a)))
      return KC_ENOMEM;
    x->nargs++;
  }
  return 0;
}

/* exec.env: a list of {name, value}, kept as "name=value" (absent, empty or null: none). */
static int parse_exec_env(kc_exec_config *x, yaml_document_t *d, yaml_node_t *ex, const char *w,
                          char *err, size_t errlen) {
  yaml_node_t *env = map_get(d, ex, "env");
  if (!env ||
      (env->type == YAML_SCALAR_NODE && (!scalar(env)[0] || strcmp(scalar(env), "null") == 0)))
    return 0;
  if (env->type != YAML_SEQUENCE_NODE)
    return kc_errorf(err, errlen, KC_EPARSE, "%s.env: expected a list", w);
  size_t n = (size_t)(env->data.sequence.items.top - env->data.sequence.items.start);
  if (!(x->env = calloc(n ? n : 1, sizeof(char *))))
    return KC_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    yaml_node_t *e = yaml_document_get_node(d, env->data.sequence.items.start[i]);
    char we[440];
    snprintf(we, sizeof(we), "%s.env[%zu]", w, i);
    if (!e || e->type != YAML_MAPPING_NODE)
      return kc_errorf(err, errlen, KC_EPARSE, "%s: expected a mapping", we);
    const char *name, *value;
    int rc;
    if ((rc = get_str(d, e, "name", we, &name, err, errlen)) ||
        (rc = get_str(d, e, "value", we, &value, err, errlen)))
      return rc;
    if (!name)
      return kc_errorf(err, errlen, KC_EINVAL, "%s.name: missing", we);
    if (strchr(name, '='))
      return kc_errorf(err, errlen, KC_EINVAL, "%s.name: \"%s\" contains '='", we, name);
    size_t len = strlen(name) + (value ? strlen(value) : 0) + 2;
    if (!(x->env[i] = malloc(len)))
      return KC_ENOMEM;
    snprintf(x->env[i], len, "%s=%s", name, value ? value : "");
    x->nenv++;
  }
  return 0;
}

/* users[].user.exec, checked as client-go's validation does, with the field in each message. */
static int parse_exec(kc_config *c, yaml_document_t *d, yaml_node_t *ex, const char *where,
                      const char *base_dir, char *err, size_t errlen) {
  char w[420];
  snprintf(w, sizeof(w), "%s.exec", where);
  if (ex->type != YAML_MAPPING_NODE)
    return kc_errorf(err, errlen, KC_EPARSE, "%s: expected a mapping", w);
  kc_exec_config *x = calloc(1, sizeof(*x));
  if (!x)
    return KC_ENOMEM;
  c->exec = x; /* released by kc_config_close on any error below */
  x->timeout_ms = KC_EXEC_TIMEOUT_MS;
  const char *command, *api, *hint, *mode;
  int rc;
  if ((rc = get_str(d, ex, "command", w, &command, err, errlen)) ||
      (rc = get_str(d, ex, "apiVersion", w, &api, err, errlen)) ||
      (rc = get_str(d, ex, "installHint", w, &hint, err, errlen)) ||
      (rc = get_str(d, ex, "interactiveMode", w, &mode, err, errlen)) ||
      (rc = get_bool(d, ex, "provideClusterInfo", w, &x->provide_cluster_info, err, errlen)))
    return rc;
  if (!command)
    return kc_errorf(err, errlen, KC_EINVAL, "%s.command: missing", w);
  if (!api)
    return kc_errorf(err, errlen, KC_EINVAL, "%s.apiVersion: missing", w);
  if ((rc = parse_exec_mode(x, api, mode, w, err, errlen)))
    return rc;
  /* A command with a '/' is a path relative to the kubeconfig; a bare name is looked up in
   * PATH (clientcmd's ResolveLocalPaths). */
  x->command = strchr(command, '/') ? resolve_path(base_dir, command) : strdup(command);
  if (!x->command || !(x->api_version = strdup(api)) || (hint && !(x->install_hint = strdup(hint))))
    return KC_ENOMEM;
  if ((rc = parse_exec_args(x, d, ex, w, err, errlen)))
    return rc;
  return parse_exec_env(x, d, ex, w, err, errlen);
}

static int parse_user(kc_config *c, src_doc *docs, size_t ndocs, const char *name, char *err,
                      size_t errlen) {
  yaml_node_t *u;
  src_doc *src;
  char where[400];
  int rc;
  if ((rc = find_named(docs, ndocs, "users", "user", name, &u, &src, where, sizeof(where), err,
                       errlen)))
    return rc;
  yaml_document_t *d = &src->doc;
  const char *base_dir = src->base_dir;
  static const char *const unsupported[] = {"auth-provider", "username", "password", "as",
                                            "as-groups"};
  for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
    if (map_get(d, u, unsupported[i]))
      return kc_errorf(err, errlen, KC_EINVAL,
                       "%s.%s: not supported (use a token, a client certificate or exec)", where,
                       unsupported[i]);
  const char *token, *token_file;
  if ((rc = get_pem(d, u, where, "client-certificate", "client-certificate-data", base_dir,
                    &c->cert, err, errlen)) ||
      (rc =
           get_pem(d, u, where, "client-key", "client-key-data", base_dir, &c->key, err, errlen)) ||
      (rc = get_str(d, u, "token", where, &token, err, errlen)) ||
      (rc = get_str(d, u, "tokenFile", where, &token_file, err, errlen)))
    return rc;
  bool has_cert = c->cert.file || c->cert.data, has_key = c->key.file || c->key.data;
  if (has_cert != has_key)
    return kc_errorf(err, errlen, KC_EINVAL, "%s: %s without %s", where,
                     has_cert ? "client-certificate" : "client-key",
                     has_cert ? "client-key" : "client-certificate");
  yaml_node_t *ex = map_get(d, u, "exec");
  if (ex && (rc = parse_exec(c, d, ex, where, base_dir, err, errlen)))
    return rc;
  /* client-go's exec authenticator stands aside when the user also has a token or a client
   * certificate: those are used and the plugin never runs. */
  if (c->exec && (token || token_file || has_cert)) {
    KC_V(1, "%s: a token or client certificate is set, so exec is not used", where);
    exec_free(c->exec);
    c->exec = NULL;
  }
  /* client-go prefers tokenFile over token when both are given: the file can rotate. */
  if (token_file) {
    if (!(c->token_file = resolve_path(base_dir, token_file)))
      return KC_ENOMEM;
    if ((rc = read_trimmed(c->token_file, &c->token)))
      return kc_errorf(err, errlen, rc, "%s.tokenFile: cannot read %s: %s", where, c->token_file,
                       kc_strerror(rc));
    if (!c->token[0])
      return kc_errorf(err, errlen, KC_EINVAL, "%s.tokenFile: %s is empty", where, c->token_file);
  } else if (token && !(c->token = strdup(token))) {
    return KC_ENOMEM;
  }
  return 0;
}

/* The merged view over docs[0..n) (each already loaded, root a mapping). */
static int parse_docs(kc_config *c, src_doc *docs, size_t n, const char *context,
                      const char *master, char *err, size_t errlen) {
  bool have_master = master && master[0];
  const char *ctx_name = context && context[0] ? context : NULL;
  int rc;
  /* current-context: the first text that sets it (client-go merges non-map fields so). */
  for (size_t k = 0; k < n && !ctx_name; k++) {
    char w[320];
    snprintf(w, sizeof(w), "%skubeconfig", docs[k].pfx);
    if ((rc = get_str(&docs[k].doc, docs[k].root, "current-context", w, &ctx_name, err, errlen)))
      return rc;
  }
  if (!ctx_name) {
    if (!have_master)
      return kc_errorf(err, errlen, KC_EINVAL,
                       "%scurrent-context: missing and no context was given",
                       n == 1 ? docs[0].pfx : "");
  } else {
    yaml_node_t *cx;
    src_doc *src;
    char where[400];
    if ((rc = find_named(docs, n, "contexts", "context", ctx_name, &cx, &src, where, sizeof(where),
                         err, errlen)))
      return rc;
    const char *cluster, *user, *ns;
    if ((rc = get_str(&src->doc, cx, "cluster", where, &cluster, err, errlen)) ||
        (rc = get_str(&src->doc, cx, "user", where, &user, err, errlen)) ||
        (rc = get_str(&src->doc, cx, "namespace", where, &ns, err, errlen)))
      return rc;
    if (!cluster)
      return kc_errorf(err, errlen, KC_EINVAL, "%s.cluster: missing", where);
    if (!(c->context = strdup(ctx_name)) || (ns && !(c->namespace = strdup(ns))))
      return KC_ENOMEM;
    if ((rc = parse_cluster(c, docs, n, cluster, have_master, err, errlen)))
      return rc;
    if (user && (rc = parse_user(c, docs, n, user, err, errlen)))
      return rc;
  }
  if (have_master && (rc = set_master(c, master, err, errlen)))
    return rc;
  if ((rc = check_server(c->server, "--master", err, errlen)))
    return rc;
  if (!c->namespace && !(c->namespace = strdup("default")))
    return KC_ENOMEM;
  return 0;
}

/* Loads one YAML text into d; an empty text is an empty mapping, as client-go reads it. */
static int load_doc(src_doc *d, const char *text, size_t len, char *err, size_t errlen) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser))
    return KC_ENOMEM;
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  int rc = 0;
  if (!yaml_parser_load(&parser, &d->doc)) {
    rc = kc_errorf(err, errlen, KC_EPARSE, "%sline %zu column %zu: %s", d->pfx,
                   parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                   parser.problem ? parser.problem : "invalid YAML");
    yaml_parser_delete(&parser);
    return rc;
  }
  yaml_parser_delete(&parser);
  d->root = yaml_document_get_root_node(&d->doc);
  if (d->root && d->root->type != YAML_MAPPING_NODE) {
    yaml_document_delete(&d->doc);
    return kc_errorf(err, errlen, KC_EPARSE, "%stop level: not a mapping", d->pfx);
  }
  return 0;
}

int kc_config_parse_merged(kc_config *c, const char *const *texts, const size_t *lens,
                           const char *const *base_dirs, const char *const *names, size_t n,
                           const char *context, const char *master, char *err, size_t errlen) {
  memset(c, 0, sizeof(*c));
  c->token_period_ns = TOKEN_PERIOD_NS;
  src_doc *docs = calloc(n ? n : 1, sizeof(*docs));
  if (!docs)
    return kc_errorf(err, errlen, KC_ENOMEM, "kubeconfig: out of memory");
  size_t loaded = 0;
  int rc = 0;
  for (; loaded < n; loaded++) {
    src_doc *d = &docs[loaded];
    d->base_dir = base_dirs ? base_dirs[loaded] : NULL;
    if (names && names[loaded])
      snprintf(d->pfx, sizeof(d->pfx), "%s: ", names[loaded]);
    if ((rc = load_doc(d, texts[loaded], lens[loaded], err, errlen)))
      break;
  }
  if (rc == 0 && n == 1 && !docs[0].root)
    rc = kc_errorf(err, errlen, KC_EPARSE, "top level: not a mapping");
  if (rc == 0) {
    /* Empty texts take no part in the merge. */
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
      if (docs[k].root) {
        src_doc tmp = docs[m];
        docs[m++] = docs[k];
        docs[k] = tmp;
      }
    }
    rc = parse_docs(c, docs, m, context, master, err, errlen);
  }
  for (size_t k = 0; k < loaded; k++)
    yaml_document_delete(&docs[k].doc);
  free(docs);
  if (rc) {
    if (rc == KC_ENOMEM)
      kc_errorf(err, errlen, rc, "kubeconfig: out of memory");
    kc_config_close(c);
  }
  return rc;
}

int kc_config_parse_kubeconfig(kc_config *c, const char *text, size_t len, const char *base_dir,
                               const char *context, const char *master, char *err, size_t errlen) {
  return kc_config_parse_merged(c, &text, &len, &base_dir, NULL, 1, context, master, err, errlen);
}

static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return strdup(".");
  if (slash == path)
    return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

int kc_config_load_kubeconfig(kc_config *c, const char *path, const char *context,
                              const char *master, char *err, size_t errlen) {
  char *text, *dir;
  size_t len;
  memset(c, 0, sizeof(*c));
  int rc = kc_file_read(path, KUBECONFIG_MAX, &text, &len);
  if (rc)
    return kc_errorf(err, errlen, rc, "kubeconfig %s: %s", path, kc_strerror(rc));
  if (!(dir = dir_of(path))) {
    kc_secret_free(text, len);
    return KC_ENOMEM;
  }
  char inner[384];
  inner[0] = '\0';
  rc = kc_config_parse_kubeconfig(c, text, len, dir, context, master, inner, sizeof(inner));
  if (rc)
    kc_errorf(err, errlen, rc, "kubeconfig %s: %s", path, inner);
  free(dir);
  kc_secret_free(text, len);
  return rc;
}

#define KUBECONFIG_FILES_MAX 64

int kc_config_load_kubeconfigs(kc_config *c, const char *paths, const char *context,
                               const char *master, char *err, size_t errlen) {
  memset(c, 0, sizeof(*c));
  char *files[KUBECONFIG_FILES_MAX], *texts[KUBECONFIG_FILES_MAX], *dirs[KUBECONFIG_FILES_MAX];
  char *names[KUBECONFIG_FILES_MAX];
  size_t lens[KUBECONFIG_FILES_MAX], n = 0;
  int rc = 0;
  for (const char *p = paths; *p;) {
    const char *start = p, *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    p += len + (colon ? 1 : 0);
    if (len == 0)
      continue;
    char *f = strndup(start, len);
    if (!f) {
      rc = KC_ENOMEM;
      goto out;
    }
    bool dup = false;
    for (size_t k = 0; k < n && !dup; k++)
      dup = strcmp(files[k], f) == 0;
    if (dup) {
      free(f);
      continue;
    }
    if (n == KUBECONFIG_FILES_MAX) {
      free(f);
      rc =
          kc_errorf(err, errlen, KC_ERANGE, "KUBECONFIG: more than %d files", KUBECONFIG_FILES_MAX);
      goto out;
    }
    int r = kc_file_read(f, KUBECONFIG_MAX, &texts[n], &lens[n]);
    if (r == KC_ENOENT) { /* client-go skips a listed file that does not exist */
      KC_V(2, "kubeconfig %s does not exist, skipped", f);
      free(f);
      continue;
    }
    if (r) {
      rc = kc_errorf(err, errlen, r, "kubeconfig %s: %s", f, kc_strerror(r));
      free(f);
      goto out;
    }
    files[n] = f;
    dirs[n] = dir_of(f);
    size_t m = strlen(f) + sizeof("kubeconfig ");
    names[n] = malloc(m);
    n++;
    if (!dirs[n - 1] || !names[n - 1]) {
      rc = KC_ENOMEM;
      goto out;
    }
    snprintf(names[n - 1], m, "kubeconfig %s", f);
  }
  if (n == 0) {
    rc = kc_errorf(err, errlen, KC_ENOENT, "kubeconfig: none of %s exists", paths);
    goto out;
  }
  rc = kc_config_parse_merged(c, (const char *const *)texts, lens, (const char *const *)dirs,
                              (const char *const *)names, n, context, master, err, errlen);
out:
  if (rc == KC_ENOMEM)
    kc_errorf(err, errlen, rc, "kubeconfig: out of memory");
  for (size_t k = 0; k < n; k++) {
    free(files[k]);
    free(dirs[k]);
    free(names[k]);
    kc_secret_free(texts[k], lens[k]);
  }
  return rc;
}

/* Splits "scheme://host[:port][/prefix]" into its parts (borrowed spans into server). */
static int split_url(const char *server, const char **host, size_t *hostlen, const char **port,
                     size_t *portlen, const char **rest) {
  const char *h = strstr(server, "://");
  if (!h)
    return KC_EINVAL;
  h += 3;
  const char *end = h + strcspn(h, "/?#");
  const char *colon = NULL;
  if (*h == '[') {
    const char *rb = memchr(h, ']', (size_t)(end - h));
    if (!rb)
      return KC_EINVAL;
    if (rb + 1 < end && rb[1] == ':')
      colon = rb + 1;
  } else {
    colon = memchr(h, ':', (size_t)(end - h));
  }
  *host = h;
  *hostlen = (size_t)((colon ? colon : end) - h);
  *port = colon ? colon + 1 : NULL;
  *portlen = colon ? (size_t)(end - colon - 1) : 0;
  *rest = end;
  return *hostlen ? 0 : KC_EINVAL;
}

int kc_config_tls_target(const kc_config *c, char **url, char **connect_to, char **host) {
  *url = *connect_to = *host = NULL;
  if (!c->tls_server_name || !c->server || strncmp(c->server, "https://", 8) != 0)
    return 0;
  const char *h, *p, *rest;
  size_t hl, pl;
  if (split_url(c->server, &h, &hl, &p, &pl, &rest))
    return KC_EINVAL;
  const char *port = pl ? p : "443";
  int portlen = pl ? (int)pl : 3;
  const char *sni = c->tls_server_name;
  bool v6 = strchr(sni, ':') && sni[0] != '[';
  size_t n = strlen(sni) + strlen(rest) + hl + (size_t)portlen + 32;
  if (!(*url = malloc(n)) || !(*connect_to = malloc(n)) || !(*host = malloc(n))) {
    free(*url);
    free(*connect_to);
    *url = *connect_to = NULL;
    return KC_ENOMEM;
  }
  snprintf(*url, n, "https://%s%s%s:%.*s%s", v6 ? "[" : "", sni, v6 ? "]" : "", portlen, port,
           rest);
  /* CURLOPT_CONNECT_TO: requests for sni:port go to the server's own host and port. */
  snprintf(*connect_to, n, "%s%s%s:%.*s:%.*s:%.*s", v6 ? "[" : "", sni, v6 ? "]" : "", portlen,
           port, (int)hl, h, portlen, port);
  /* Go sends the URL's host:port as written (no port when the URL has none). */
  snprintf(*host, n, "%.*s", (int)(rest - h), h);
  return 0;
}

int kc_config_in_cluster(kc_config *c, const char *sa_dir, char *err, size_t errlen) {
  memset(c, 0, sizeof(*c));
  c->token_period_ns = TOKEN_PERIOD_NS;
  c->in_cluster = true;
  if (!sa_dir)
    sa_dir = KC_SA_DIR;
  const char *host = getenv("KUBERNETES_SERVICE_HOST");
  const char *port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !host[0] || !port || !port[0])
    return kc_errorf(err, errlen, KC_EINVAL,
                     "in-cluster: KUBERNETES_SERVICE_HOST and "
                     "KUBERNETES_SERVICE_PORT must be set");
  char path[512];
  int rc = KC_ENOMEM;
  size_t n = strlen(host) + strlen(port) + 16;
  if (!(c->server = malloc(n)))
    goto out;
  /* An IPv6 service address needs brackets, as net.JoinHostPort adds them in client-go. */
  if (strchr(host, ':'))
    snprintf(c->server, n, "https://[%s]:%s", host, port);
  else
    snprintf(c->server, n, "https://%s:%s", host, port);
  snprintf(path, sizeof(path), "%s/token", sa_dir);
  if (!(c->token_file = strdup(path)))
    goto out;
  if ((rc = read_trimmed(path, &c->token))) {
    kc_errorf(err, errlen, rc, "in-cluster: cannot read %s: %s", path, kc_strerror(rc));
    goto out;
  }
  if (!c->token[0]) {
    rc = kc_errorf(err, errlen, KC_EINVAL, "in-cluster: %s is empty", path);
    goto out;
  }
  snprintf(path, sizeof(path), "%s/ca.crt", sa_dir);
  rc = KC_ENOMEM;
  if (!(c->ca.file = strdup(path)))
    goto out;
  snprintf(path, sizeof(path), "%s/namespace", sa_dir);
  rc = read_trimmed(path, &c->namespace);
  if (rc == KC_ENOENT)
    rc = (c->namespace = strdup("default")) ? 0 : KC_ENOMEM;
  if (rc)
    kc_errorf(err, errlen, rc, "in-cluster: cannot read %s: %s", path, kc_strerror(rc));
out:
  if (rc)
    kc_config_close(c);
  return rc;
}

static bool file_exists(const char *path) {
  FILE *f = fopen(path, "r");
  if (f)
    fclose(f);
  return f != NULL;
}

/* The default kubeconfig: $KUBECONFIG (a ':'-separated list, merged) when one of its files
 * exists, else ~/.kube/config when it exists. Returns new memory, or NULL for neither. */
static char *default_kubeconfig(void) {
  const char *env = getenv("KUBECONFIG");
  if (env && env[0]) {
    for (const char *p = env; *p;) {
      size_t n = strcspn(p, ":");
      char *f = n ? strndup(p, n) : NULL;
      bool exists = f && file_exists(f);
      free(f);
      if (exists)
        return strdup(env);
      p += n + (p[n] == ':');
    }
  }
  const char *home = getenv("HOME");
  if (!home)
    return NULL;
  size_t n = strlen(home) + sizeof("/.kube/config");
  char *path = malloc(n);
  if (!path)
    return NULL;
  snprintf(path, n, "%s/.kube/config", home);
  if (file_exists(path))
    return path;
  free(path);
  return NULL;
}

int kc_config_load(kc_config *c, const char *kubeconfig, const char *master, char *err,
                   size_t errlen) {
  bool have_master = master && master[0];
  /* An explicit --kubeconfig is one file, never a list (client-go's ExplicitPath). */
  if (kubeconfig && kubeconfig[0])
    return kc_config_load_kubeconfig(c, kubeconfig, NULL, master, err, errlen);
  char *paths;
  int rc;
  if (!have_master) {
    char ierr[256];
    rc = kc_config_in_cluster(c, NULL, ierr, sizeof(ierr));
    if (rc == 0) {
      KC_INFO("Neither --kubeconfig nor --master was specified. Using the inClusterConfig.");
      return 0;
    }
    if (!(paths = default_kubeconfig()))
      return kc_errorf(err, errlen, KC_EINVAL,
                       "no configuration: give --kubeconfig or --master "
                       "(%s; no $KUBECONFIG or ~/.kube/config)",
                       ierr);
    rc = kc_config_load_kubeconfigs(c, paths, NULL, NULL, err, errlen);
    free(paths);
    return rc;
  }
  if ((paths = default_kubeconfig())) {
    rc = kc_config_load_kubeconfigs(c, paths, NULL, master, err, errlen);
    free(paths);
    return rc;
  }
  memset(c, 0, sizeof(*c));
  c->token_period_ns = TOKEN_PERIOD_NS;
  rc = set_master(c, master, err, errlen);
  if (!rc)
    rc = check_server(c->server, "--master", err, errlen);
  if (!rc && !(c->namespace = strdup("default")))
    rc = KC_ENOMEM;
  if (rc)
    kc_config_close(c);
  return rc;
}

const char *kc_config_token(kc_config *c, uint64_t now_ns, bool force) {
  if (!c->token_file)
    return c->token;
  if (!force && c->token && now_ns - c->token_read_ns < c->token_period_ns &&
      now_ns >= c->token_read_ns)
    return c->token;
  char *fresh;
  int rc = read_trimmed(c->token_file, &fresh);
  c->token_read_ns = now_ns;
  if (rc == 0 && !fresh[0]) {
    /* Caught mid-write (truncated, not yet filled): an empty token would make the request
     * anonymous. client-go refuses an empty token file too. */
    free(fresh);
    rc = KC_EPARSE;
  }
  if (rc) {
    KC_WARN("cannot re-read token file %s: %s; keeping the previous token", c->token_file,
            kc_strerror(rc));
    return c->token;
  }
  if (c->token && strcmp(c->token, fresh) == 0) {
    kc_secret_free(fresh, strlen(fresh));
    return c->token;
  }
  if (c->token) {
    KC_V(2, "token file %s changed; using the new token", c->token_file);
    kc_secret_free(c->token, strlen(c->token));
  }
  c->token = fresh;
  return c->token;
}
