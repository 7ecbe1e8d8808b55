/* ssh (Volcano pkg/controllers/job/plugins/ssh): a Secret with a key pair (made through
 * the injected ops) and an ssh config naming every pod, mounted in every container. */
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

static char *ssh_config(const Kiln__Job *job, const char *port) {
  size_t cap = 128, len;
  for (size_t ti = 0; ti < job->spec->n_tasks; ti++)
    cap += (size_t)(job->spec->tasks[ti]->replicas > 0 ? job->spec->tasks[ti]->replicas : 0) *
           (3 * CTL_NAME_MAX + 64);
  char *out = malloc(cap);
  if (!out)
    return NULL;
  len = (size_t)snprintf(out, cap, "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n");
  for (size_t ti = 0; ti < job->spec->n_tasks; ti++) {
    const Kiln__TaskSpec *t = job->spec->tasks[ti];
    char host[CTL_NAME_MAX], sub[CTL_NAME_MAX], h[CTL_NAME_MAX * 2];
    ctl__plugin_template_host(t, host, sizeof(host), sub, sizeof(sub));
    for (int32_t i = 0; i < t->replicas; i++) {
      if (host[0])
        snprintf(h, sizeof(h), "%s", host);
      else
        snprintf(h, sizeof(h), "%s-%s-%d", ctl__job_name(job), t->name ? t->name : "", (int)i);
      int w = snprintf(out + len, cap - len, "Host %s\n  HostName %s.%s\n  Port %s\n", h, h,
                       sub[0] ? sub : ctl__job_name(job), port);
      if (w < 0 || (size_t)w >= cap - len)
        return out; /* cannot happen with the capacity above; never write past it */
      len += (size_t)w;
      if (host[0])
        break;
    }
  }
  return out;
}

int ctl__ssh_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  const Kiln__Job *job = c->v->job;
  if (ctl__plugin_marked(c, "ssh"))
    return 0;
  char *priv = NULL, *pub = NULL, *cfg = NULL;
  int rc = c->v->ops->ssh_keygen(c->v->ops->ctx, &priv, &pub);
  if (rc) {
    snprintf(c->errmsg, sizeof(c->errmsg), "ssh: cannot generate the key pair: %s",
             rc == KC_EIO ? "the random source failed" : kc_strerror(rc));
    return rc;
  }
  /* The port goes into every Host entry: accept only a real port number. */
  const char *parg = ctl__plugin_arg(args, "--ssh-port");
  char port[8] = "22";
  char *end = NULL;
  long pv = parg ? strtol(parg, &end, 10) : 0;
  if (parg && end && !*end && pv > 0 && pv < 65536)
    snprintf(port, sizeof(port), "%ld", pv);
  cfg = ssh_config(job, port);
  char name[CTL_NAME_MAX + 8];
  snprintf(name, sizeof(name), "%s-ssh", ctl__job_name(job));
  json_t *data = json_object();
  if (!cfg || !data) {
    rc = KC_ENOMEM;
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
