#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kc_config.h"
#include "kc_error.h"

/* "-----BEGIN CERTIFICATE-----\nabc\n" and friends in base64, decoded by the tests below. */
#define CA_PEM   "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define CA_B64   "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
#define KEY_B64  "a2V5LWJ5dGVz"     /* "key-bytes" */
#define CERT_B64 "Y2VydC1ieXRlcw==" /* "cert-bytes" */

static int parse(kc_config *c, const char *yaml, const char *ctx, const char *master, char *err) {
  err[0] = '\0';
  return kc_config_parse_kubeconfig(c, yaml, strlen(yaml), "/etc/kube", ctx, master, err, 256);
}

static const char *two_contexts = "apiVersion: v1\n"
                                  "kind: Config\n"
                                  "current-context: dev\n"
                                  "clusters:\n"
                                  "- name: c1\n"
                                  "  cluster:\n"
                                  "    server: https://10.0.0.1:6443/\n"
                                  "    certificate-authority: pki/ca.crt\n"
                                  "- name: c2\n"
                                  "  cluster:\n"
                                  "    server: https://api.example.com\n"
                                  "    certificate-authority-data: " CA_B64 "\n"
                                  "contexts:\n"
                                  "- name: dev\n"
                                  "  context:\n"
                                  "    cluster: c1\n"
                                  "    user: files\n"
                                  "    namespace: team-a\n"
                                  "- name: prod\n"
                                  "  context:\n"
                                  "    cluster: c2\n"
                                  "    user: inline\n"
                                  "- name: tok\n"
                                  "  context:\n"
                                  "    cluster: c2\n"
                                  "    user: bearer\n"
                                  "users:\n"
                                  "- name: files\n"
                                  "  user:\n"
                                  "    client-certificate: /abs/client.crt\n"
                                  "    client-key: client.key\n"
                                  "- name: inline\n"
                                  "  user:\n"
                                  "    client-certificate-data: " CERT_B64 "\n"
                                  "    client-key-data: " KEY_B64 "\n"
                                  "- name: bearer\n"
                                  "  user:\n"
                                  "    token: s3cr3t\n";

static void test_files_and_current_context(void **state) {
  (void)state;
  kc_config c;
  char err[256];
  assert_int_equal(parse(&c, two_contexts, NULL, NULL, err), 0);
  assert_string_equal(c.server, "https://10.0.0.1:6443"); /* trailing slash dropped */
  assert_string_equal(c.ca.file, "/etc/kube/pki/ca.crt"); /* relative to the file */
  assert_null(c.ca.data);
  assert_string_equal(c.cert.file, "/abs/client.crt");
  assert_string_equal(c.key.file, "/etc/kube/client.key");
  assert_null(c.token);
  assert_string_equal(c.namespace, "team-a");
  assert_string_equal(c.context, "dev");
  assert_false(c.in_cluster);
  kc_config_close(&c);
  assert_null(c.server);
}

static void test_inline_data_and_context_override(void **state) {
  (void)state;
  kc_config c;
  char err[256];
  assert_int_equal(parse(&c, two_contexts, "prod", NULL, err), 0);
  assert_string_equal(c.server, "https://api.example.com");
  assert_null(c.ca.file);
  assert_int_equal(c.ca.len, strlen(CA_PEM));
  assert_memory_equal(c.ca.data, CA_PEM, strlen(CA_PEM));
  assert_int_equal(c.cert.len, 10);
  assert_memory_equal(c.cert.data, "cert-bytes", 10);
  assert_int_equal(c.key.len, 9);
  assert_memory_equal(c.key.data, "key-bytes", 9);
  assert_string_equal(c.namespace, "default");
  kc_config_close(&c);
}

static void test_token_user(void **state) {
  (void)state;
  kc_config c;
  char err[256];
  assert_int_equal(parse(&c, two_contexts, "tok", NULL, err), 0);
  assert_string_equal(c.token, "s3cr3t");
  assert_null(c.cert.file);
  assert_null(c.cert.data);
  assert_null(c.token_file);
  /* A static token is returned as is, whatever the clock says. */
  assert_string_equal(kc_config_token(&c, 999999999999ull, true), "s3cr3t");
  kc_config_close(&c);
}

static void test_master_override(void **state) {
  (void)state;
  kc_config c;
  char err[256];
  assert_int_equal(parse(&c, two_contexts, NULL, "https://127.0.0.1:9443/", err), 0);
  assert_string_equal(c.server, "https://127.0.0.1:9443");
  assert_string_equal(c.ca.file, "/etc/kube/pki/ca.crt"); /* the context's TLS stays */
  kc_config_close(&c);
  /* A bare host:port means https. */
  assert_int_equal(parse(&c, two_contexts, NULL, "10.1.1.1:6443", err), 0);
  assert_string_equal(c.server, "https://10.1.1.1:6443");
  kc_config_close(&c);
  /* With a master, a kubeconfig without current-context is fine. */
  assert_int_equal(parse(&c, "apiVersion: v1\nkind: Config\n", NULL, "https://h:1", err), 0);
  assert_string_equal(c.server, "https://h:1");
  assert_string_equal(c.namespace, "default");
  kc_config_close(&c);
}

struct bad_case {
  const char *yaml;
  const char *context;
  int code;
  const char *want; /* a substring of the message */
};

static void test_errors_name_the_field(void **state) {
  (void)state;
  static const struct bad_case cases[] = {
      {"clusters: [\n", NULL, KC_EPARSE, "line 2"},
      {"- just\n- a list\n", NULL, KC_EPARSE, "top level: not a mapping"},
      {"kind: Config\n", NULL, KC_EINVAL, "current-context: missing"},
      {"current-context: x\n", NULL, KC_EINVAL, "contexts: missing"},
      {"current-context: x\ncontexts: null\n", NULL, KC_EINVAL, "contexts: missing"},
      {"current-context: x\ncontexts:\n- name: y\n  context: {cluster: c}\n", NULL, KC_EINVAL,
       "contexts: no entry named \"x\""},
      {"current-context: x\ncontexts:\n- context: {cluster: c}\n", NULL, KC_EPARSE,
       "contexts[0].name: missing"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {user: u}\n", NULL, KC_EINVAL,
       "contexts[0].context.cluster: missing"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
       "clusters:\n- name: c\n  cluster: {certificate-authority: /ca}\n",
       NULL, KC_EINVAL, "clusters[0].cluster.server: missing"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
       "clusters:\n- name: c\n  cluster: {server: ftp://h}\n",
       NULL, KC_EINVAL, "clusters[0].cluster.server: \"ftp://h\" is not an http(s) URL"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h', insecure-skip-tls-verify: true}\n",
       NULL, KC_EINVAL, "clusters[0].cluster.insecure-skip-tls-verify: not supported"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h', certificate-authority-data: '@@'}\n",
       NULL, KC_EPARSE,
       "clusters[0].cluster.certificate-authority-data: invalid base64: byte 0 is not a base64 "
       "character"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h', certificate-authority: /a,"
       " certificate-authority-data: " CA_B64 "}\n",
       NULL, KC_EINVAL, "both certificate-authority and certificate-authority-data"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n",
       NULL, KC_EINVAL, "users: missing (looking for \"u\")"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
       "users:\n- name: other\n  user: {token: t}\n- name: u\n  user: {client-key-data: '!!'}\n",
       NULL, KC_EPARSE,
       "users[1].user.client-key-data: invalid base64: byte 0 is not a base64 character"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
       "users:\n- name: u\n  user: {client-certificate-data: 'YQ=a', client-key-data: YQ==}\n",
       NULL, KC_EPARSE,
       "users[0].user.client-certificate-data: invalid base64: data after padding"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
       "users:\n- name: u\n  user: {client-certificate: /c.crt}\n",
       NULL, KC_EINVAL, "users[0].user: client-certificate without client-key"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
       "users:\n- name: u\n  user: {exec: {command: aws}}\n",
       NULL, KC_EINVAL, "users[0].user.exec.apiVersion: missing"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
       "users:\n- name: u\n  user: {auth-provider: {name: gcp}}\n",
       NULL, KC_EINVAL, "users[0].user.auth-provider: not supported"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
       "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
       "users:\n- name: u\n  user: {token: [a, b]}\n",
       NULL, KC_EPARSE, "users[0].user.token: expected a string"},
      {"current-context: x\ncontexts: {x: 1}\n", NULL, KC_EPARSE, "contexts: expected a list"},
      {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
       "clusters:\n- name: c\n",
       NULL, KC_EPARSE, "clusters[0].cluster: missing or not a mapping"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kc_config c;
    char err[256];
    int rc = parse(&c, cases[i].yaml, cases[i].context, NULL, err);
    if (rc != cases[i].code || !strstr(err, cases[i].want))
      fail_msg("case %zu: got %s \"%s\", want %s containing \"%s\"", i, kc_err_name(rc), err,
               kc_err_name(cases[i].code), cases[i].want);
    assert_null(c.server); /* nothing is left allocated on error */
    assert_null(c.ca.data);
  }
}

/* ---- files on disk ---- */

/* A kubeconfig around one cluster body and one user body (flow style). */
static char *kc_with(const char *cluster, const char *user) {
  static char buf[2048];
  snprintf(buf, sizeof(buf),
           "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
           "clusters:\n- name: c\n  cluster: %s\nusers:\n- name: u\n  user: %s\n",
           cluster, user);
  return buf;
}

#define EXEC_V1 "apiVersion: client.authentication.k8s.io/v1"

/* exec users test_exec_user refuses, each with its message. */
static const struct bad_case exec_bad[] = {
    {"{exec: {" EXEC_V1 ", interactiveMode: Never}}", NULL, KC_EINVAL,
     "users[0].user.exec.command: missing"},
    {"{exec: {command: x, apiVersion: client.authentication.k8s.io/v1alpha1}}", NULL, KC_EINVAL,
     "users[0].user.exec.apiVersion: \"client.authentication.k8s.io/v1alpha1\" is not"},
    {"{exec: {command: x, " EXEC_V1 "}}", NULL, KC_EINVAL,
     "users[0].user.exec.interactiveMode: missing (required by client.authentication.k8s.io/v1)"},
    {"{exec: {command: x, " EXEC_V1 ", interactiveMode: Always}}", NULL, KC_EINVAL,
     "interactiveMode: Always needs a terminal"},
    {"{exec: {command: x, " EXEC_V1 ", interactiveMode: Sometimes}}", NULL, KC_EINVAL,
     "users[0].user.exec.interactiveMode: invalid value \"Sometimes\""},
    {"{exec: {command: x, " EXEC_V1 ", interactiveMode: Never, env: [{value: v}]}}", NULL,
     KC_EINVAL, "users[0].user.exec.env[0].name: missing"},
    {"{exec: {command: x, " EXEC_V1 ", interactiveMode: Never, env: {A: b}}}", NULL, KC_EPARSE,
     "users[0].user.exec.env: expected a list"},
    {"{exec: {command: x, " EXEC_V1 ", interactiveMode: Never, args: one}}", NULL, KC_EPARSE,
     "users[0].user.exec.args: expected a list"},
    {"{exec: {command: x, " EXEC_V1 ", interactiveMode: Never, args: [[a]]}}", NULL, KC_EPARSE,
     "users[0].user.exec.args[0]: expected a string"},
    {"{exec: {command: x, " EXEC_V1 ", interactiveMode: Never, provideClusterInfo: maybe}}", NULL,
     KC_EPARSE, "users[0].user.exec.provideClusterInfo: \"maybe\" is not true or false"},
    {"{exec: aws}", NULL, KC_EPARSE, "users[0].user.exec: expected a mapping"},
};

static void test_exec_user(void **state) {
  (void)state;
  kc_config c;
  char err[256];
  const char *yaml = "current-context: x\n"
                     "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                     "clusters:\n- name: c\n  cluster: {server: 'https://h:1'}\n"
                     "users:\n- name: u\n  user:\n    exec:\n"
                     "      " EXEC_V1 "\n"
                     "      command: bin/get-token\n"
                     "      args: [token, --cluster, one]\n"
                     "      env:\n      - {name: REGION, value: eu}\n      - {name: EMPTY}\n"
                     "      installHint: apt-get install get-token\n"
                     "      interactiveMode: Never\n"
                     "      provideClusterInfo: true\n";
  assert_int_equal(parse(&c, yaml, NULL, NULL, err), 0);
  assert_non_null(c.exec);
  assert_string_equal(c.exec->command, "/etc/kube/bin/get-token"); /* has a '/': relative */
  assert_int_equal(c.exec->nargs, 3);
  assert_string_equal(c.exec->args[0], "token");
  assert_string_equal(c.exec->args[2], "one");
  assert_int_equal(c.exec->nenv, 2);
  assert_string_equal(c.exec->env[0], "REGION=eu");
  assert_string_equal(c.exec->env[1], "EMPTY=");
  assert_string_equal(c.exec->api_version, "client.authentication.k8s.io/v1");
  assert_string_equal(c.exec->install_hint, "apt-get install get-token");
  assert_int_equal(c.exec->interactive, KC_EXEC_NEVER);
  assert_true(c.exec->provide_cluster_info);
  assert_int_equal(c.exec->timeout_ms, KC_EXEC_TIMEOUT_MS);
  assert_null(c.token);
  kc_config_close(&c);
  assert_null(c.exec);

  /* v1beta1 defaults interactiveMode to IfAvailable; a bare name is looked up in PATH. */
  assert_int_equal(parse(&c,
                         kc_with("{server: 'https://h'}",
                                 "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, "
                                 "command: aws}}"),
                         NULL, NULL, err),
                   0);
  assert_string_equal(c.exec->command, "aws");
  assert_int_equal(c.exec->interactive, KC_EXEC_IF_AVAILABLE);
  assert_int_equal(c.exec->nargs, 0);
  assert_false(c.exec->provide_cluster_info);
  kc_config_close(&c);

  /* A token beside exec wins and the plugin is not used (client-go's exec stands aside). */
  assert_int_equal(
      parse(&c,
            kc_with("{server: 'https://h'}", "{token: t, exec: {" EXEC_V1 ", command: aws, "
                                             "interactiveMode: IfAvailable}}"),
            NULL, NULL, err),
      0);
  assert_null(c.exec);
  assert_string_equal(c.token, "t");
  kc_config_close(&c);

  for (size_t i = 0; i < sizeof(exec_bad) / sizeof(exec_bad[0]); i++) {
    const struct bad_case *bc = &exec_bad[i];
    int rc = parse(&c, kc_with("{server: 'https://h'}", bc->yaml), NULL, NULL, err);
    if (rc != bc->code || !strstr(err, bc->want))
      fail_msg("exec case %zu: got %s \"%s\", want %s containing \"%s\"", i, kc_err_name(rc), err,
               kc_err_name(bc->code), bc->want);
    assert_null(c.exec);
  }
}

static void target(const char *server, const char *sni, const char *url, const char *connect_to,
                   const char *host) {
  kc_config c = {.server = (char *)server, .tls_server_name = (char *)sni};
  char *u, *ct, *h;
  assert_int_equal(kc_config_tls_target(&c, &u, &ct, &h), 0);
  if (!url) {
    assert_null(u);
    assert_null(ct);
    assert_null(h);
    return;
  }
  assert_string_equal(u, url);
  assert_string_equal(ct, connect_to);
  assert_string_equal(h, host);
  free(u);
  free(ct);
  free(h);
}

static void test_tls_server_name_proxy_compression(void **state) {
  (void)state;
  kc_config c;
  char err[256];
  assert_int_equal(parse(&c,
                         kc_with("{server: 'https://127.0.0.1:6443', tls-server-name: "
                                 "kubernetes.default, proxy-url: 'socks5://p:1080', "
                                 "disable-compression: true}",
                                 "{token: t}"),
                         NULL, NULL, err),
                   0);
  assert_string_equal(c.tls_server_name, "kubernetes.default");
  assert_string_equal(c.proxy_url, "socks5h://p:1080"); /* the proxy resolves, as Go's */
  assert_true(c.disable_compression);
  kc_config_close(&c);
  assert_int_equal(parse(&c, kc_with("{server: 'https://h', proxy-url: 'http://p:3128'}", "{}"),
                         NULL, NULL, err),
                   0);
  assert_string_equal(c.proxy_url, "http://p:3128");
  assert_false(c.disable_compression);
  assert_null(c.tls_server_name);
  kc_config_close(&c);

  /* The URL carries the name (SNI, certificate check); curl connects to the real host. */
  target("https://127.0.0.1:6443", "kubernetes.default", "https://kubernetes.default:6443",
         "kubernetes.default:6443:127.0.0.1:6443", "127.0.0.1:6443");
  target("https://[::1]/prefix", "localhost", "https://localhost:443/prefix",
         "localhost:443:[::1]:443", "[::1]");
  target("https://api.example.com:8443", "::1", "https://[::1]:8443",
         "[::1]:8443:api.example.com:8443", "api.example.com:8443");
  target("https://127.0.0.1:6443", NULL, NULL, NULL, NULL);
  target("http://127.0.0.1:8080", "kubernetes", NULL, NULL, NULL); /* no TLS, nothing to do */

  static const struct bad_case cases[] = {
      {"{server: 'https://h', proxy-url: 'ftp://p'}", NULL, KC_EINVAL,
       "clusters[0].cluster.proxy-url: \"ftp://p\": unsupported scheme"},
      {"{server: 'https://h', tls-server-name: 'a/b'}", NULL, KC_EINVAL,
       "clusters[0].cluster.tls-server-name: \"a/b\" is not a host name"},
      {"{server: 'https://h', disable-compression: sometimes}", NULL, KC_EPARSE,
       "clusters[0].cluster.disable-compression: \"sometimes\" is not true or false"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    int rc = parse(&c, kc_with(cases[i].yaml, "{}"), NULL, NULL, err);
    if (rc != cases[i].code || !strstr(err, cases[i].want))
      fail_msg("cluster case %zu: got %s \"%s\", want %s containing \"%s\"", i, kc_err_name(rc),
               err, kc_err_name(cases[i].code), cases[i].want);
  }
}

static void write_file(const char *dir, const char *name, const char *content) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(content, f);
  fclose(f);
}

static void remove_dir(const char *dir) {
  static const char *const names[] = {"token", "ca.crt", "namespace", "kubeconfig", "tok", "kc",
                                      "empty", "bad",    "baduser",   "list",       "bare"};
  char path[512];
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

static void test_in_cluster_and_token_rotation(void **state) {
  (void)state;
  char dir[] = "/tmp/kc-config-XXXXXX";
  assert_non_null(mkdtemp(dir));
  write_file(dir, "token", "first-token\n");
  write_file(dir, "ca.crt", CA_PEM);
  write_file(dir, "namespace", "volcano-system");
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  kc_config c;
  char err[256] = "";
  assert_int_equal(kc_config_in_cluster(&c, dir, err, sizeof(err)), 0);
  assert_true(c.in_cluster);
  assert_string_equal(c.server, "https://10.96.0.1:443");
  assert_non_null(strstr(c.ca.file, "/ca.crt"));
  assert_string_equal(c.namespace, "volcano-system");
  assert_string_equal(c.token, "first-token");

  uint64_t t0 = 1000ull * 1000000000ull;
  assert_string_equal(kc_config_token(&c, t0, false), "first-token");
  write_file(dir, "token", "second-token");
  /* Within the period the cached token is used; after it the file is read again. */
  assert_string_equal(kc_config_token(&c, t0 + 59ull * 1000000000ull, false), "first-token");
  assert_string_equal(kc_config_token(&c, t0 + 61ull * 1000000000ull, false), "second-token");
  write_file(dir, "token", "third-token");
  assert_string_equal(kc_config_token(&c, t0 + 62ull * 1000000000ull, true), "third-token");
  /* An empty file (caught mid-write) keeps the last good token. */
  write_file(dir, "token", "\n");
  assert_string_equal(kc_config_token(&c, t0 + 63ull * 1000000000ull, true), "third-token");
  /* A vanished file keeps the last good token. */
  char path[512];
  snprintf(path, sizeof(path), "%s/token", dir);
  unlink(path);
  assert_string_equal(kc_config_token(&c, t0 + 200ull * 1000000000ull, false), "third-token");
  kc_config_close(&c);

  /* IPv6 service addresses get brackets; a missing namespace file means "default". */
  write_file(dir, "token", "t");
  snprintf(path, sizeof(path), "%s/namespace", dir);
  unlink(path);
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  assert_int_equal(kc_config_in_cluster(&c, dir, err, sizeof(err)), 0);
  assert_string_equal(c.server, "https://[fd00::1]:443");
  assert_string_equal(c.namespace, "default");
  kc_config_close(&c);

  unsetenv("KUBERNETES_SERVICE_HOST");
  assert_int_equal(kc_config_in_cluster(&c, dir, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST"));
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  snprintf(path, sizeof(path), "%s/token", dir);
  unlink(path);
  assert_int_equal(kc_config_in_cluster(&c, dir, err, sizeof(err)), KC_ENOENT);
  assert_non_null(strstr(err, "/token"));
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  remove_dir(dir);
}

static void test_kubeconfig_file_and_token_file(void **state) {
  (void)state;
  char dir[] = "/tmp/kc-config-XXXXXX";
  assert_non_null(mkdtemp(dir));
  write_file(dir, "tok", "file-token\n");
  write_file(dir, "kubeconfig",
             "current-context: x\n"
             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
             "clusters:\n- name: c\n  cluster: {server: 'https://h:6443', "
             "certificate-authority: ca.crt}\n"
             "users:\n- name: u\n  user: {tokenFile: tok, token: ignored}\n");
  char path[512], want[512];
  snprintf(path, sizeof(path), "%s/kubeconfig", dir);
  kc_config c;
  char err[512] = "";
  assert_int_equal(kc_config_load_kubeconfig(&c, path, NULL, NULL, err, sizeof(err)), 0);
  snprintf(want, sizeof(want), "%s/ca.crt", dir);
  assert_string_equal(c.ca.file, want);
  assert_string_equal(c.token, "file-token"); /* tokenFile wins, as in client-go */
  write_file(dir, "tok", "rotated");
  assert_string_equal(kc_config_token(&c, c.token_read_ns + c.token_period_ns + 1, false),
                      "rotated");
  kc_config_close(&c);

  /* kc_config_load: --kubeconfig wins; a missing file is an error naming it. */
  assert_int_equal(kc_config_load(&c, path, NULL, err, sizeof(err)), 0);
  assert_string_equal(c.server, "https://h:6443");
  kc_config_close(&c);
  assert_int_equal(kc_config_load(&c, "/nonexistent/kc", NULL, err, sizeof(err)), KC_ENOENT);
  assert_non_null(strstr(err, "/nonexistent/kc"));

  /* Only --master, no kubeconfig anywhere: the master with no credentials. */
  char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", dir, 1);
  unsetenv("KUBECONFIG");
  assert_int_equal(kc_config_load(&c, NULL, "https://m:1", err, sizeof(err)), 0);
  assert_string_equal(c.server, "https://m:1");
  assert_null(c.token);
  kc_config_close(&c);
  /* $KUBECONFIG is used when --kubeconfig is absent. */
  setenv("KUBECONFIG", path, 1);
  assert_int_equal(kc_config_load(&c, NULL, "https://m:2", err, sizeof(err)), 0);
  assert_string_equal(c.server, "https://m:2");
  assert_string_equal(c.token, "rotated");
  kc_config_close(&c);
  unsetenv("KUBECONFIG");
  /* Nothing at all: an error that says what to give. */
  assert_int_equal(kc_config_load(&c, NULL, NULL, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "--kubeconfig"));
  if (old_home) {
    setenv("HOME", old_home, 1);
    free(old_home);
  }
  remove_dir(dir);
}

/* $KUBECONFIG with several files goes through the same merge (a and b as in
 * test_kubeconfig_list_merged). */
static void merged_from_env(const char *a, const char *b) {
  char list[1024], err[512];
  kc_config c;
  char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", "/nonexistent", 1);
  snprintf(list, sizeof(list), "%s/kc:%s/kc", a, b);
  setenv("KUBECONFIG", list, 1);
  assert_int_equal(kc_config_load(&c, NULL, NULL, err, sizeof(err)), 0);
  assert_string_equal(c.context, "one");
  assert_string_equal(c.token, "token-from-b");
  kc_config_close(&c);
  unsetenv("KUBECONFIG");
  if (old_home) {
    setenv("HOME", old_home, 1);
    free(old_home);
  }
}

/* Errors name the file: bad YAML, a bad entry in the second file, nothing there at all. */
static void merged_errors(const char *a, const char *b) {
  char list[1024], want[512], err[512];
  kc_config c;
  write_file(b, "bad", "clusters: [\n");
  snprintf(list, sizeof(list), "%s/kc:%s/bad", a, b);
  assert_int_equal(kc_config_load_kubeconfigs(&c, list, NULL, NULL, err, sizeof(err)), KC_EPARSE);
  snprintf(want, sizeof(want), "kubeconfig %s/bad: line 2", b);
  if (!strstr(err, want))
    fail_msg("got \"%s\", want \"%s\"", err, want);
  write_file(b, "baduser", "users:\n- name: ub\n  user: {client-key-data: '!!'}\n");
  snprintf(list, sizeof(list), "%s/kc:%s/baduser", a, b);
  assert_int_equal(kc_config_load_kubeconfigs(&c, list, NULL, NULL, err, sizeof(err)), KC_EPARSE);
  snprintf(want, sizeof(want), "kubeconfig %s/baduser: users[0].user.client-key-data: invalid", b);
  if (!strstr(err, want))
    fail_msg("got \"%s\", want \"%s\"", err, want);
  write_file(b, "list", "- a\n");
  snprintf(list, sizeof(list), "%s/kc:%s/list", a, b);
  assert_int_equal(kc_config_load_kubeconfigs(&c, list, NULL, NULL, err, sizeof(err)), KC_EPARSE);
  snprintf(want, sizeof(want), "kubeconfig %s/list: top level: not a mapping", b);
  if (!strstr(err, want))
    fail_msg("got \"%s\", want \"%s\"", err, want);
  assert_int_equal(
      kc_config_load_kubeconfigs(&c, "/nonexistent/a:/nonexistent/b", NULL, NULL, err, sizeof(err)),
      KC_ENOENT);
  assert_non_null(strstr(err, "/nonexistent/a:/nonexistent/b"));
  write_file(b, "bare", "kind: Config\n");
  snprintf(list, sizeof(list), "%s/empty:%s/bare", b, b);
  assert_int_equal(kc_config_load_kubeconfigs(&c, list, NULL, NULL, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "current-context: missing"));
  assert_int_equal(kc_config_load_kubeconfigs(&c, list, "nope", NULL, err, sizeof(err)), KC_EINVAL);
  assert_non_null(strstr(err, "contexts: missing (looking for \"nope\")"));
}

static void test_kubeconfig_list_merged(void **state) {
  (void)state;
  char a[] = "/tmp/kc-merge-a-XXXXXX", b[] = "/tmp/kc-merge-b-XXXXXX";
  assert_non_null(mkdtemp(a));
  assert_non_null(mkdtemp(b));
  /* A: the current context and the cluster. B: another current-context (ignored), a context
   * and a cluster of the same names (ignored: the first file's entry wins whole), the user. */
  write_file(a, "kc",
             "current-context: one\n"
             "contexts:\n- name: one\n  context: {cluster: shared, user: ub, namespace: na}\n"
             "clusters:\n- name: shared\n  cluster: {server: 'https://a:1', "
             "certificate-authority: ca.crt}\n");
  write_file(b, "kc",
             "current-context: two\n"
             "contexts:\n- name: one\n  context: {cluster: other}\n"
             "- name: two\n  context: {cluster: shared}\n"
             "clusters:\n- name: shared\n  cluster: {server: 'https://b:2', tls-server-name: x}\n"
             "users:\n- name: ub\n  user: {tokenFile: tok}\n");
  write_file(b, "tok", "token-from-b\n");
  write_file(b, "empty", "");
  char list[1024], want[512], err[512];
  kc_config c;
  /* Empty entries, a missing file, an empty file and a repeated path are all fine. */
  snprintf(list, sizeof(list), "/nonexistent/kc::%s/kc:%s/empty:%s/kc:%s/kc", a, b, b, a);
  assert_int_equal(kc_config_load_kubeconfigs(&c, list, NULL, NULL, err, sizeof(err)), 0);
  assert_string_equal(c.context, "one");
  assert_string_equal(c.server, "https://a:1");
  assert_null(c.tls_server_name);
  snprintf(want, sizeof(want), "%s/ca.crt", a); /* relative to the file it came from */
  assert_string_equal(c.ca.file, want);
  snprintf(want, sizeof(want), "%s/tok", b);
  assert_string_equal(c.token_file, want);
  assert_string_equal(c.token, "token-from-b");
  assert_string_equal(c.namespace, "na");
  kc_config_close(&c);

  /* The other order: B's current-context and B's cluster win. */
  snprintf(list, sizeof(list), "%s/kc:%s/kc", b, a);
  assert_int_equal(kc_config_load_kubeconfigs(&c, list, NULL, NULL, err, sizeof(err)), 0);
  assert_string_equal(c.context, "two");
  assert_string_equal(c.server, "https://b:2");
  assert_string_equal(c.tls_server_name, "x");
  kc_config_close(&c);
  /* A context chosen by name across files. */
  snprintf(list, sizeof(list), "%s/kc:%s/kc", a, b);
  assert_int_equal(kc_config_load_kubeconfigs(&c, list, "two", NULL, err, sizeof(err)), 0);
  assert_string_equal(c.server, "https://a:1"); /* cluster "shared" still from A */
  kc_config_close(&c);

  merged_from_env(a, b);
  merged_errors(a, b);
  remove_dir(a);
  remove_dir(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_files_and_current_context),
      cmocka_unit_test(test_inline_data_and_context_override),
      cmocka_unit_test(test_token_user),
      cmocka_unit_test(test_master_override),
      cmocka_unit_test(test_errors_name_the_field),
      cmocka_unit_test(test_in_cluster_and_token_rotation),
      cmocka_unit_test(test_kubeconfig_file_and_token_file),
      cmocka_unit_test(test_exec_user),
      cmocka_unit_test(test_tls_server_name_proxy_compression),
      cmocka_unit_test(test_kubeconfig_list_merged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
