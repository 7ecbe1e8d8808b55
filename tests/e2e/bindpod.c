/* bindpod: binds one pod to a node with POST .../pods/NAME/binding, the call a scheduler
 * makes, so the end-to-end suite can prove the control plane accepts it.
 *
 *   bindpod --server URL --cacert F --cert F --key F NAMESPACE POD NODE
 *
 * Exits 0 when the API server answers 201, else prints the status and body and exits 1. */
#include <curl/curl.h>
#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_flags.h"

struct body {
  char buf[8192];
  size_t len;
};

static size_t on_data(char *p, size_t size, size_t n, void *userdata) {
  struct body *b = userdata;
  size_t len = size * n;
  size_t room = sizeof(b->buf) - 1 - b->len;
  size_t take = len < room ? len : room; /* keep only the start of an oversized answer */
  memcpy(b->buf + b->len, p, take);
  b->len += take;
  b->buf[b->len] = '\0';
  return len;
}

int main(int argc, char **argv) {
  const char *server = NULL, *cacert = NULL, *cert = NULL, *key = NULL;
  const kc_flag flags[] = {
      {"server", KC_FLAG_STRING, &server, "API server URL", NULL, NULL, false, NULL},
      {"cacert", KC_FLAG_STRING, &cacert, "CA bundle", NULL, NULL, false, NULL},
      {"cert", KC_FLAG_STRING, &cert, "client certificate", NULL, NULL, false, NULL},
      {"key", KC_FLAG_STRING, &key, "client key", NULL, NULL, false, NULL},
  };
  char err[256];
  int nargs = 0;
  if (kc_flags_parse(flags, 4, argc, argv, &nargs, err, sizeof(err)) != 0 || nargs != 3 ||
      !server || !cacert || !cert || !key) {
    fprintf(stderr, "usage: bindpod --server URL --cacert F --cert F --key F NS POD NODE%s%s\n",
            err[0] ? ": " : "", err);
    return 2;
  }
  const char *ns = argv[0], *pod = argv[1], *node = argv[2];

  json_t *binding = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind",
                              "Binding", "metadata", "name", pod, "namespace", ns, "target",
                              "apiVersion", "v1", "kind", "Node", "name", node);
  char *payload = binding ? json_dumps(binding, JSON_COMPACT) : NULL;
  json_decref(binding);
  if (!payload) {
    fprintf(stderr, "bindpod: out of memory\n");
    return 1;
  }
  char url[1024];
  snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/pods/%s/binding", server, ns, pod);

  int rc = 1;
  struct body body = {.len = 0};
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURL *h = curl_easy_init();
  struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
  if (!h || !hdrs)
    goto out;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(h, CURLOPT_CAINFO, cacert);
  curl_easy_setopt(h, CURLOPT_SSLCERT, cert);
  curl_easy_setopt(h, CURLOPT_SSLKEY, key);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
  CURLcode res = curl_easy_perform(h);
  long status = 0;
  long version = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &version);
  if (res != CURLE_OK) {
    fprintf(stderr, "bindpod: %s\n", curl_easy_strerror(res));
  } else if (status != 201) {
    fprintf(stderr, "bindpod: HTTP %ld: %s\n", status, body.buf);
  } else {
    printf("bound %s/%s to %s over HTTP/%s\n", ns, pod, node,
           version == CURL_HTTP_VERSION_2_0 ? "2" : "1.1");
    rc = 0;
  }
out:
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  curl_global_cleanup();
  free(payload);
  return rc;
}
