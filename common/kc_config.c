#include "kc_config.h"

#include "kc_error.h"
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

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int code, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* Frees s after overwriting it, for anything that may hold a secret. */
static void free_secret(void *p, size_t len) {
  if (!p)
    return;
  volatile unsigned char *v = p;
  for (size_t i = 0; i < len; i++)
    v[i] = 0;
  free(p);
}

static void pem_close(kc_pem *p) {
  free(p->file);
  free_secret(p->data, p->len);
  memset(p, 0, sizeof(*p));
}

void kc_config_close(kc_config *c) {
  if (!c)
    return;
  free(c->server);
  free(c->proxy_url);
  pem_close(&c->ca);
  pem_close(&c->cert);
  pem_close(&c->key);
  if (c->token)
    free_secret(c->token, strlen(c->token));
  free(c->token_file);
  free(c->namespace);
  free(c->context);
  memset(c, 0, sizeof(*c));
}

/* ---- base64 ---- */

static int b64val(unsigned char ch) {
  if (ch >= 'A' && ch <= 'Z')
    return ch - 'A';
  if (ch >= 'a' && ch <= 'z')
    return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9')
    return ch - '0' + 52;
  if (ch == '+')
    return 62;
  if (ch == '/')
    return 63;
  return -1;
}

int kc_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen) {
  unsigned char *buf = malloc(len / 4 * 3 + 4);
  if (!buf)
    return KC_ENOMEM;
  size_t n = 0, pad = 0, quad = 0;
  uint32_t acc = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)in[i];
    if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
      continue;
    if (ch == '=') {
      pad++;
      continue;
    }
    int v = b64val(ch);
    if (v < 0 || pad > 0) /* a data character after padding is malformed */
      goto bad;
    acc = acc << 6 | (uint32_t)v;
    if (++quad == 4) {
      buf[n++] = (unsigned char)(acc >> 16);
      buf[n++] = (unsigned char)(acc >> 8);
      buf[n++] = (unsigned char)acc;
      quad = 0;
      acc = 0;
    }
  }
  /* A trailing group of 2 or 3 characters carries 1 or 2 bytes; 1 character carries none. */
  if (quad == 1 || pad > 2 || (pad && quad + pad != 4))
    goto bad;
  if (quad == 2) {
    buf[n++] = (unsigned char)(acc >> 4);
  } else if (quad == 3) {
    buf[n++] = (unsigned char)(acc >> 10);
    buf[n++] = (unsigned char)(acc >> 2);
  }
  buf[n] = '\0';
  *out = buf;
  *outlen = n;
  return 0;
bad:
  free_secret(buf, len / 4 * 3 + 4);
  return KC_EPARSE;
}

/* ---- small file and string helpers ---- */

static int read_file(const char *path, size_t max, char **out, size_t *outlen) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return errno == ENOENT ? KC_ENOENT : KC_EIO;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  int rc = KC_ENOMEM;
  if (!buf)
    goto out;
  for (;;) {
    if (n + 1 == cap) {
      if (cap > max) {
        rc = KC_ETOOBIG;
        goto out;
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb)
        goto out;
      buf = nb;
      cap *= 2;
    }
    size_t r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0) {
      if (ferror(f)) {
        rc = KC_EIO;
        goto out;
      }
      break;
    }
  }
  if (n > max) {
    rc = KC_ETOOBIG;
    goto out;
  }
  buf[n] = '\0';
  *out = buf;
  *outlen = n;
  buf = NULL;
  rc = 0;
out:
  if (buf)
    free_secret(buf, cap);
  fclose(f);
  return rc;
}

/* Joins a relative path to base_dir; absolute paths and a NULL base are copied. */
static char *resolve_path(const char *base_dir, const char *path) {
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
  int rc = read_file(path, SECRET_FILE_MAX, &buf, &len);
  if (rc)
    return rc;
  *out = trim_dup(buf, len);
  free_secret(buf, len);
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
    return fail(err, errlen, KC_EPARSE, "%s.%s: expected a string", where, key);
  const char *s = scalar(n);
  if (s[0] && !(n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && strcmp(s, "null") == 0))
    *out = s;
  return 0;
}

/* Finds the entry named name in the top-level list key (clusters/users/contexts) and returns
 * its inner mapping (entry.<inner>); *index gets the position for error messages. */
static int find_named(yaml_document_t *d, yaml_node_t *root, const char *key, const char *inner,
                      const char *name, yaml_node_t **out, int *index, char *err, size_t errlen) {
  yaml_node_t *list = map_get(d, root, key);
  if (!list ||
      (list->type == YAML_SCALAR_NODE && list->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
       (!scalar(list)[0] || strcmp(scalar(list), "null") == 0 || strcmp(scalar(list), "~") == 0)))
    return fail(err, errlen, KC_EINVAL, "%s: missing (looking for \"%s\")", key, name);
  if (list->type != YAML_SEQUENCE_NODE)
    return fail(err, errlen, KC_EPARSE, "%s: expected a list", key);
  int i = 0;
  for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top;
       it++, i++) {
    yaml_node_t *e = yaml_document_get_node(d, *it);
    if (!e || e->type != YAML_MAPPING_NODE)
      return fail(err, errlen, KC_EPARSE, "%s[%d]: expected a mapping", key, i);
    const char *n = scalar(map_get(d, e, "name"));
    if (!n)
      return fail(err, errlen, KC_EPARSE, "%s[%d].name: missing", key, i);
    if (strcmp(n, name) != 0)
      continue;
    yaml_node_t *body = map_get(d, e, inner);
    if (!body || body->type != YAML_MAPPING_NODE)
      return fail(err, errlen, KC_EPARSE, "%s[%d].%s: missing or not a mapping", key, i, inner);
    *out = body;
    *index = i;
    return 0;
  }
  return fail(err, errlen, KC_EINVAL, "%s: no entry named \"%s\"", key, name);
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
    return fail(err, errlen, KC_EINVAL, "%s: both %s and %s are set", where, file_key, data_key);
  if (file) {
    if (!(pem->file = resolve_path(base_dir, file)))
      return KC_ENOMEM;
  } else if (data) {
    unsigned char *bytes;
    size_t n;
    rc = kc_base64_decode(data, strlen(data), &bytes, &n);
    if (rc == KC_EPARSE)
      return fail(err, errlen, rc, "%s.%s: invalid base64", where, data_key);
    if (rc)
      return rc;
    if (n == 0) {
      free(bytes);
      return fail(err, errlen, KC_EINVAL, "%s.%s: empty", where, data_key);
    }
    pem->data = bytes;
    pem->len = n;
  }
  return 0;
}

static int set_master(kc_config *c, const char *master, char *err, size_t errlen) {
  size_t n = strlen(master);
  while (n && master[n - 1] == '/')
    n--;
  if (n == 0)
    return fail(err, errlen, KC_EINVAL, "--master: empty");
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
  return fail(err, errlen, KC_EINVAL, "%s: \"%s\" is not an http(s) URL", where, server);
}

static int parse_cluster(kc_config *c, yaml_document_t *d, yaml_node_t *root, const char *name,
                         const char *base_dir, bool have_master, char *err, size_t errlen) {
  yaml_node_t *cl;
  int idx, rc;
  if ((rc = find_named(d, root, "clusters", "cluster", name, &cl, &idx, err, errlen)))
    return rc;
  char where[64];
  snprintf(where, sizeof(where), "clusters[%d].cluster", idx);
  const char *server, *sni, *proxy, *insecure;
  if ((rc = get_str(d, cl, "server", where, &server, err, errlen)) ||
      (rc = get_str(d, cl, "tls-server-name", where, &sni, err, errlen)) ||
      (rc = get_str(d, cl, "proxy-url", where, &proxy, err, errlen)) ||
      (rc = get_str(d, cl, "insecure-skip-tls-verify", where, &insecure, err, errlen)))
    return rc;
  if (sni)
    return fail(err, errlen, KC_EINVAL, "%s.tls-server-name: not supported", where);
  if (insecure && strcmp(insecure, "false") != 0)
    return fail(err, errlen, KC_EINVAL,
                "%s.insecure-skip-tls-verify: not supported, Kiln always verifies TLS", where);
  if (!server && !have_master)
    return fail(err, errlen, KC_EINVAL, "%s.server: missing", where);
  if (server) {
    char w[80];
    snprintf(w, sizeof(w), "%s.server", where);
    if ((rc = check_server(server, w, err, errlen)))
      return rc;
    size_t n = strlen(server);
    while (n && server[n - 1] == '/')
      n--;
    if (!(c->server = strndup(server, n)))
      return KC_ENOMEM;
  }
  if (proxy && !(c->proxy_url = strdup(proxy)))
    return KC_ENOMEM;
  return get_pem(d, cl, where, "certificate-authority", "certificate-authority-data", base_dir,
                 &c->ca, err, errlen);
}

static int parse_user(kc_config *c, yaml_document_t *d, yaml_node_t *root, const char *name,
                      const char *base_dir, char *err, size_t errlen) {
  yaml_node_t *u;
  int idx, rc;
  if ((rc = find_named(d, root, "users", "user", name, &u, &idx, err, errlen)))
    return rc;
  char where[64];
  snprintf(where, sizeof(where), "users[%d].user", idx);
  static const char *const unsupported[] = {"exec", "auth-provider", "username", "password",
                                            "as",   "as-groups"};
  for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
    if (map_get(d, u, unsupported[i]))
      return fail(err, errlen, KC_EINVAL,
                  "%s.%s: not supported (use a token or a client "
                  "certificate)",
                  where, unsupported[i]);
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
    return fail(err, errlen, KC_EINVAL, "%s: %s without %s", where,
                has_cert ? "client-certificate" : "client-key",
                has_cert ? "client-key" : "client-certificate");
  /* client-go prefers tokenFile over token when both are given: the file can rotate. */
  if (token_file) {
    if (!(c->token_file = resolve_path(base_dir, token_file)))
      return KC_ENOMEM;
    if ((rc = read_trimmed(c->token_file, &c->token)))
      return fail(err, errlen, rc, "%s.tokenFile: cannot read %s: %s", where, c->token_file,
                  kc_strerror(rc));
    if (!c->token[0])
      return fail(err, errlen, KC_EINVAL, "%s.tokenFile: %s is empty", where, c->token_file);
  } else if (token && !(c->token = strdup(token))) {
    return KC_ENOMEM;
  }
  return 0;
}

int kc_config_parse_kubeconfig(kc_config *c, const char *text, size_t len, const char *base_dir,
                               const char *context, const char *master, char *err, size_t errlen) {
  memset(c, 0, sizeof(*c));
  c->token_period_ns = TOKEN_PERIOD_NS;
  bool have_master = master && master[0];
  yaml_parser_t parser;
  yaml_document_t doc;
  int rc;
  if (!yaml_parser_initialize(&parser))
    return KC_ENOMEM;
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    rc = fail(err, errlen, KC_EPARSE, "line %zu column %zu: %s", parser.problem_mark.line + 1,
              parser.problem_mark.column + 1, parser.problem ? parser.problem : "invalid YAML");
    yaml_parser_delete(&parser);
    return rc;
  }
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  const char *ctx_name = context && context[0] ? context : NULL;
  if (!root || root->type != YAML_MAPPING_NODE) {
    rc = fail(err, errlen, KC_EPARSE, "top level: not a mapping");
    goto out;
  }
  if (!ctx_name &&
      (rc = get_str(&doc, root, "current-context", "kubeconfig", &ctx_name, err, errlen)))
    goto out;
  if (!ctx_name) {
    if (!have_master) {
      rc = fail(err, errlen, KC_EINVAL, "current-context: missing and no context was given");
      goto out;
    }
  } else {
    yaml_node_t *cx;
    int idx;
    if ((rc = find_named(&doc, root, "contexts", "context", ctx_name, &cx, &idx, err, errlen)))
      goto out;
    char where[64];
    snprintf(where, sizeof(where), "contexts[%d].context", idx);
    const char *cluster, *user, *ns;
    if ((rc = get_str(&doc, cx, "cluster", where, &cluster, err, errlen)) ||
        (rc = get_str(&doc, cx, "user", where, &user, err, errlen)) ||
        (rc = get_str(&doc, cx, "namespace", where, &ns, err, errlen)))
      goto out;
    if (!cluster) {
      rc = fail(err, errlen, KC_EINVAL, "%s.cluster: missing", where);
      goto out;
    }
    rc = KC_ENOMEM;
    if (!(c->context = strdup(ctx_name)) || (ns && !(c->namespace = strdup(ns))))
      goto out;
    if ((rc = parse_cluster(c, &doc, root, cluster, base_dir, have_master, err, errlen)))
      goto out;
    if (user && (rc = parse_user(c, &doc, root, user, base_dir, err, errlen)))
      goto out;
  }
  if (have_master && (rc = set_master(c, master, err, errlen)))
    goto out;
  if ((rc = check_server(c->server, "--master", err, errlen)))
    goto out;
  rc = KC_ENOMEM;
  if (!c->namespace && !(c->namespace = strdup("default")))
    goto out;
  rc = 0;
out:
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  if (rc) {
    if (rc == KC_ENOMEM)
      fail(err, errlen, rc, "kubeconfig: out of memory");
    kc_config_close(c);
  }
  return rc;
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
  int rc = read_file(path, KUBECONFIG_MAX, &text, &len);
  if (rc)
    return fail(err, errlen, rc, "kubeconfig %s: %s", path, kc_strerror(rc));
  if (!(dir = dir_of(path))) {
    free_secret(text, len);
    return KC_ENOMEM;
  }
  char inner[384];
  inner[0] = '\0';
  rc = kc_config_parse_kubeconfig(c, text, len, dir, context, master, inner, sizeof(inner));
  if (rc)
    fail(err, errlen, rc, "kubeconfig %s: %s", path, inner);
  free(dir);
  free_secret(text, len);
  return rc;
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
    return fail(err, errlen, KC_EINVAL,
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
    fail(err, errlen, rc, "in-cluster: cannot read %s: %s", path, kc_strerror(rc));
    goto out;
  }
  if (!c->token[0]) {
    rc = fail(err, errlen, KC_EINVAL, "in-cluster: %s is empty", path);
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
    fail(err, errlen, rc, "in-cluster: cannot read %s: %s", path, kc_strerror(rc));
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

/* The default kubeconfig path into buf: the first existing entry of $KUBECONFIG, else
 * ~/.kube/config. Kiln does not merge several files as kubectl does; it uses the first. */
static bool default_kubeconfig(char *buf, size_t len) {
  const char *env = getenv("KUBECONFIG");
  if (env && env[0]) {
    const char *p = env;
    while (*p) {
      const char *colon = strchr(p, ':');
      size_t n = colon ? (size_t)(colon - p) : strlen(p);
      if (n && n < len) {
        memcpy(buf, p, n);
        buf[n] = '\0';
        if (file_exists(buf))
          return true;
      }
      p += n + (colon ? 1 : 0);
    }
  }
  const char *home = getenv("HOME");
  if (!home)
    return false;
  snprintf(buf, len, "%s/.kube/config", home);
  return file_exists(buf);
}

int kc_config_load(kc_config *c, const char *kubeconfig, const char *master, char *err,
                   size_t errlen) {
  bool have_master = master && master[0];
  char path[1024];
  if (kubeconfig && kubeconfig[0])
    return kc_config_load_kubeconfig(c, kubeconfig, NULL, master, err, errlen);
  if (!have_master) {
    char ierr[256];
    int rc = kc_config_in_cluster(c, NULL, ierr, sizeof(ierr));
    if (rc == 0) {
      KC_INFO("Neither --kubeconfig nor --master was specified. Using the inClusterConfig.");
      return 0;
    }
    if (!default_kubeconfig(path, sizeof(path)))
      return fail(err, errlen, KC_EINVAL,
                  "no configuration: give --kubeconfig or --master "
                  "(%s; no $KUBECONFIG or ~/.kube/config)",
                  ierr);
    return kc_config_load_kubeconfig(c, path, NULL, NULL, err, errlen);
  }
  if (default_kubeconfig(path, sizeof(path)))
    return kc_config_load_kubeconfig(c, path, NULL, master, err, errlen);
  memset(c, 0, sizeof(*c));
  c->token_period_ns = TOKEN_PERIOD_NS;
  int rc = set_master(c, master, err, errlen);
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
    free_secret(fresh, strlen(fresh));
    return c->token;
  }
  if (c->token) {
    KC_V(2, "token file %s changed; using the new token", c->token_file);
    free_secret(c->token, strlen(c->token));
  }
  c->token = fresh;
  return c->token;
}
