/* ssh (Volcano pkg/controllers/job/plugins/ssh): a Secret with a key pair and an ssh config
 * naming every pod, mounted in every container. The pair is the user's when the plugin has
 * a non-empty --ssh-private-key (with --ssh-public-key for id_rsa.pub and authorized_keys,
 * both taken verbatim, as Volcano does); otherwise it is made through the injected ops. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_plugin.h"
#include "kc_base64.h"
#include "kc_codec.h"
#include "kc_error.h"

#define SSH_ROOT_PATH "/root/.ssh"

static json_t *b64(const char *s) {
  char *enc = kc_base64_encode(s, strlen(s));
  json_t *j = enc ? json_string(enc) : NULL;
  free(enc);
  return j;
}

/* The API server refuses a Secret whose data passes 1 MiB; the config gets what the key
 * pair (a generated 2048-bit PEM and its public key, twice, with room to spare; or the
 * user's keys as given) leaves. */
#define SSH_SECRET_MAX     (1024u * 1024u)
#define SSH_GENERATED_KEYS (16u * 1024u)

/* Hosts the config names: one per replica, or one for a task with a fixed hostname. */
static uint64_t ssh_hosts(const Kiln__Job *job) {
  uint64_t n = 0;
  for (size_t ti = 0; ti < job->spec->n_tasks; ti++) {
    const Kiln__TaskSpec *t = job->spec->tasks[ti];
    char host[CTL_NAME_MAX], sub[CTL_NAME_MAX];
    ctl__plugin_template_host(t, host, sizeof(host), sub, sizeof(sub));
    n += host[0] ? (t->replicas > 0) : (uint64_t)(t->replicas > 0 ? t->replicas : 0);
  }
  return n;
}

#define HOST_FMT "Host %s\n  HostName %s.%s\n  Port %s\n"

/* Appends one Host entry to *out (len bytes used of cap); 0, KC_ETOOBIG when the config
 * would pass max bytes, or KC_ENOMEM. */
static int put_host(char **out, size_t *cap, size_t *len, size_t max, const char *h,
                    const char *sub, const char *port) {
  int w = snprintf(NULL, 0, HOST_FMT, h, h, sub, port);
  if (w < 0)
    return KC_EINVAL;
  size_t need = *len + (size_t)w + 1;
  if (need > max)
    return KC_ETOOBIG;
  if (need > *cap) {
    size_t nc = *cap;
    while (nc < need)
      nc *= 2;
    char *grown = realloc(*out, nc);
    if (!grown)
      return KC_ENOMEM;
    *out = grown;
    *cap = nc;
  }
  snprintf(*out + *len, *cap - *len, HOST_FMT, h, h, sub, port);
  *len += (size_t)w;
  return 0;
}

/* Volcano's generateSSHConfig (plus the port): a Host entry per replica, in at most max
 * bytes, so the work ends with the buffer however many replicas there are.
 * New string, or NULL with *rc KC_ETOOBIG (it would not fit) or KC_ENOMEM. */
static char *ssh_config(const Kiln__Job *job, const char *port, size_t max, int *rc) {
  size_t cap = 4096, len;
  char *out = malloc(cap);
  *rc = out ? 0 : KC_ENOMEM;
  if (!out)
    return NULL;
  len = (size_t)snprintf(out, cap, "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n");
  for (size_t ti = 0; ti < job->spec->n_tasks && !*rc; ti++) {
    const Kiln__TaskSpec *t = job->spec->tasks[ti];
    char host[CTL_NAME_MAX], sub[CTL_NAME_MAX], h[CTL_NAME_MAX * 2];
    ctl__plugin_template_host(t, host, sizeof(host), sub, sizeof(sub));
    for (int32_t i = 0; i < t->replicas && !*rc; i++) {
      if (host[0])
        snprintf(h, sizeof(h), "%s", host);
      else
        snprintf(h, sizeof(h), "%s-%s-%d", ctl__job_name(job), t->name ? t->name : "", (int)i);
      *rc = put_host(&out, &cap, &len, max, h, sub[0] ? sub : ctl__job_name(job), port);
      if (host[0])
        break;
    }
  }
  if (*rc) {
    free(out);
    return NULL;
  }
  return out;
}

/* The key pair into *priv and *pub (new strings): the user's from --ssh-private-key and
 * --ssh-public-key, or a generated one; *room gets what it leaves of the Secret for the
 * config. 0, or an error with c->errmsg saying why. */
static int ssh_keys(ctl_ctx *c, const Kiln__StringList *args, const char *secret, char **priv,
                    char **pub, size_t *room) {
  const char *upriv = ctl__plugin_arg(args, "--ssh-private-key");
  if (!upriv || !*upriv) {
    int rc = c->v->ops->ssh_keygen(c->v->ops->ctx, priv, pub);
    if (rc)
      snprintf(c->errmsg, sizeof(c->errmsg), "ssh: cannot generate the key pair: %s",
               rc == KC_EIO ? "the random source failed" : kc_strerror(rc));
    *room = SSH_SECRET_MAX - SSH_GENERATED_KEYS;
    return rc;
  }
  const char *upub = ctl__plugin_arg(args, "--ssh-public-key");
  upub = upub ? upub : "";
  size_t used = strlen(upriv) + 2 * strlen(upub); /* id_rsa.pub and authorized_keys */
  if (used >= SSH_SECRET_MAX) {
    if (snprintf(c->errmsg, sizeof(c->errmsg),
                 "ssh: --ssh-private-key and --ssh-public-key take %zu bytes; Secret %s holds "
                 "at most 1 MiB",
                 used, secret) < 0)
      c->errmsg[0] = '\0';
    return KC_ETOOBIG;
  }
  *room = SSH_SECRET_MAX - used;
  *priv = strdup(upriv);
  *pub = strdup(upub);
  return *priv && *pub ? 0 : KC_ENOMEM;
}

int ctl__ssh_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  const Kiln__Job *job = c->v->job;
  if (ctl__plugin_marked(c, "ssh"))
    return 0;
  char *priv = NULL, *pub = NULL, *cfg = NULL;
  char name[CTL_NAME_MAX + 8];
  snprintf(name, sizeof(name), "%s-ssh", ctl__job_name(job));
  size_t room = 0;
  json_t *data = NULL;
  int rc = ssh_keys(c, args, name, &priv, &pub, &room);
  if (rc)
    goto out;
  /* The port goes into every Host entry: accept only a real port number. */
  const char *parg = ctl__plugin_arg(args, "--ssh-port");
  char port[8] = "22";
  char *end = NULL;
  long pv = parg ? strtol(parg, &end, 10) : 0;
  if (parg && end && !*end && pv > 0 && pv < 65536)
    snprintf(port, sizeof(port), "%ld", pv);
  cfg = ssh_config(job, port, room, &rc);
  if (rc == KC_ETOOBIG &&
      snprintf(c->errmsg, sizeof(c->errmsg),
               "ssh: an ssh config naming %" PRIu64 " hosts does not fit in Secret %s (a Secret "
               "holds at most 1 MiB)",
               ssh_hosts(job), name) < 0)
    c->errmsg[0] = '\0';
  data = rc ? NULL : json_object();
  if (!data) {
    rc = rc ? rc : KC_ENOMEM;
    goto out;
  }
  json_object_set_new(data, "id_rsa", b64(priv));
  json_object_set_new(data, "id_rsa.pub", b64(pub));
  json_object_set_new(data, "authorized_keys", b64(pub));
  json_object_set_new(data, "config", b64(cfg));
  rc = ctl__append(&c->plan->objects_create,
                   json_pack("{s:s, s:s, s:o, s:s, s:O}", "apiVersion", "v1", "kind", "Secret",
                             "metadata", ctl__plugin_meta(job, name), "type", "Opaque", "data",
                             data));
  if (!rc)
    ctl__plugin_mark(c, "ssh", true);
out:
  json_decref(data);
  free(priv);
  free(pub);
  free(cfg);
  return rc;
}

int ctl__ssh_job_delete(ctl_ctx *c, const Kiln__StringList *args) {
  if (!ctl__plugin_marked(c, "ssh"))
    return 0;
  char name[CTL_NAME_MAX + 8];
  snprintf(name, sizeof(name), "%s-ssh", ctl__job_name(c->v->job));
  int rc = ctl__plugin_delete(c, "v1", "Secret", name);
  if (!rc)
    ctl__plugin_mark(c, "ssh", false);
  return rc;
}

typedef struct {
  const char *secret;
  const char *path;
} ssh_arg;

static void ssh_container(json_t *ct, void *arg) {
  const ssh_arg *a = arg;
  json_array_append_new(
      ctl__json_child(ct, "volumeMounts", true),
      json_pack("{s:s, s:s, s:s}", "name", a->secret, "mountPath", a->path, "subPath", ".ssh"));
}

int ctl__ssh_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                        const Kiln__TaskSpec *t, int index) {
  char name[CTL_NAME_MAX + 8];
  snprintf(name, sizeof(name), "%s-ssh", ctl__job_name(c->v->job));
  const char *path = ctl__plugin_arg(args, "--ssh-key-file-path");
  if (!path || !*path)
    path = SSH_ROOT_PATH;
  /* 0600 for root's own directory; readable otherwise so a non-root user can use it. */
  int mode = strcmp(path, SSH_ROOT_PATH) == 0 ? 0600 : 0644;
  json_t *items = json_array();
  static const char *const keys[] = {"id_rsa", "id_rsa.pub", "authorized_keys", "config"};
  for (size_t i = 0; i < 4; i++) {
    char p[64];
    snprintf(p, sizeof(p), ".ssh/%s", keys[i]);
    json_array_append_new(items, json_pack("{s:s, s:s}", "key", keys[i], "path", p));
  }
  json_array_append_new(ctl__json_child(ctl__json_child(pod, "spec", false), "volumes", true),
                        json_pack("{s:s, s:{s:s, s:o, s:i}}", "name", name, "secret", "secretName",
                                  name, "items", items, "defaultMode", mode));
  ssh_arg a = {name, path};
  ctl__each_container(pod, ssh_container, &a);
  return 0;
}
