/* Job plugins (Volcano pkg/controllers/job/plugins): env, svc, ssh, as a constant table of
 * callbacks. Each records "plugin-<name>" in status.controlledResources on add so that a
 * second add is a no-op, and forgets it on delete so that a restarted job gets fresh
 * objects. The objects themselves go into the plan; nothing here does I/O. */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "kc_error.h"
#include "plugins/ctl_plugin.h"

/* ---- argument parsing ("--flag=value" or "--flag value") ---- */

static const char *arg_value(const Kiln__StringList *args, const char *flag) {
  size_t fl = strlen(flag);
  for (size_t i = 0; args && i < args->n_items; i++) {
    const char *a = args->items[i];
    if (strncmp(a, flag, fl) != 0)
      continue;
    if (a[fl] == '=')
      return a + fl + 1;
    if (a[fl] == '\0')
      return i + 1 < args->n_items ? args->items[i + 1] : "true";
  }
  return NULL;
}

static bool arg_bool(const Kiln__StringList *args, const char *flag, bool def) {
  const char *v = arg_value(args, flag);
  if (!v)
    return def;
  return strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "True") == 0;
}

static bool marked(ctl_ctx *c, const char *plugin) {
  char key[64];
  snprintf(key, sizeof(key), "plugin-%s", plugin);
  const char *v = json_string_value(json_object_get(c->plan->status.controlled, key));
  return v && strcmp(v, plugin) == 0;
}

static void mark(ctl_ctx *c, const char *plugin, bool on) {
  char key[64];
  snprintf(key, sizeof(key), "plugin-%s", plugin);
  if (on)
    json_object_set_new(c->plan->status.controlled, key, json_string(plugin));
  else
    json_object_del(c->plan->status.controlled, key);
}

static json_t *child(json_t *o, const char *key, bool array) {
  json_t *v = json_object_get(o, key);
  if (!v || (array ? !json_is_array(v) : !json_is_object(v))) {
    v = array ? json_array() : json_object();
    json_object_set_new(o, key, v);
  }
  return v;
}

/* Applies f to every container and init container of the pod spec. */
static void each_container(json_t *pod, void (*f)(json_t *ct, void *arg), void *arg) {
  json_t *spec = json_object_get(pod, "spec");
  static const char *const lists[] = {"containers", "initContainers"};
  for (size_t l = 0; l < 2; l++) {
    size_t i;
    json_t *ct;
    json_array_foreach(json_object_get(spec, lists[l]), i, ct) f(ct, arg);
  }
}

static json_t *meta_for(const Kiln__Job *job, const char *name) {
  json_t *refs = json_array();
  json_array_append_new(refs, ctl__owner_ref(job));
  return json_pack("{s:s, s:s, s:o}", "name", name, "namespace", ctl__job_ns(job),
                   "ownerReferences", refs);
}

static int delete_obj(ctl_ctx *c, const char *api, const char *kind, const char *name) {
  return ctl__append(&c->plan->objects_delete,
                     json_pack("{s:s, s:s, s:s}", "apiVersion", api, "kind", kind, "name", name));
}

static void template_host(const Kiln__TaskSpec *t, char *host, size_t hl, char *sub, size_t sl) {
  json_t *tmpl = t->template_json ? json_loads(t->template_json, 0, NULL) : NULL;
  json_t *spec = json_object_get(tmpl, "spec");
  snprintf(host, hl, "%s", json_string_value(json_object_get(spec, "hostname")) ?: "");
  snprintf(sub, sl, "%s", json_string_value(json_object_get(spec, "subdomain")) ?: "");
  json_decref(tmpl);
}

/* ---- env ---- */

static void env_add(json_t *ct, void *arg) {
  const char *idx = arg;
  json_t *env = child(ct, "env", true);
  json_array_append_new(env, json_pack("{s:s, s:s}", "name", "VK_TASK_INDEX", "value", idx));
  json_array_append_new(env, json_pack("{s:s, s:s}", "name", "VC_TASK_INDEX", "value", idx));
}

static int env_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                          const Kiln__TaskSpec *t, int index) {
  char idx[16];
  snprintf(idx, sizeof(idx), "%d", index);
  each_container(pod, env_add, idx);
  return 0;
}

static int env_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  mark(c, "env", true);
  return 0;
}

static int env_job_delete(ctl_ctx *c, const Kiln__StringList *args) {
  mark(c, "env", false);
  return 0;
}

/* ---- svc ---- */

/* VC_<TASK><suffix>, the task name upper-cased with '-' as '_'. */
static void env_key(const char *task, const char *suffix, char *out, size_t len) {
  char up[CTL_NAME_MAX];
  size_t i = 0;
  for (; task[i] && i + 1 < sizeof(up); i++) {
    char ch = task[i] == '-' ? '_' : task[i];
    up[i] = (ch >= 'a' && ch <= 'z') ? (char)(ch - 'a' + 'A') : ch;
  }
  up[i] = '\0';
  snprintf(out, len, "VC_%s%s", up, suffix);
}

/* Host i of task t into h (len bytes); returns its length. */
static size_t svc_host(const Kiln__Job *job, const Kiln__TaskSpec *t, const char *host,
                       const char *sub, size_t i, char *h, size_t len) {
  const char *jname = ctl__job_name(job);
  int w = host[0] ? snprintf(h, len, "%s.%s", host, sub[0] ? sub : jname)
                  : snprintf(h, len, "%s-%s-%zu.%s", jname, t->name ? t->name : "", i,
                             sub[0] ? sub : jname);
  return w < 0 ? 0 : ((size_t)w < len ? (size_t)w : len - 1);
}

/* The host names of task t joined by sep into one new string (free()): the exact size is
 * measured first, then the names are written once each, so a large task costs linear time
 * and no more memory than the result. NULL when out of memory. */
static char *svc_host_list(const Kiln__Job *job, const Kiln__TaskSpec *t, char sep, size_t *n) {
  char host[CTL_NAME_MAX], sub[CTL_NAME_MAX], h[CTL_NAME_MAX * 3];
  template_host(t, host, sizeof(host), sub, sizeof(sub));
  /* A hostname in the template names one host for every replica. */
  size_t count = host[0] ? 1 : (t->replicas > 0 ? (size_t)t->replicas : 0);
  size_t cap = 1, len = 0;
  for (size_t i = 0; i < count; i++)
    cap += svc_host(job, t, host, sub, i, h, sizeof(h)) + 1;
  char *out = malloc(cap);
  if (!out)
    return NULL;
  for (size_t i = 0; i < count; i++) {
    if (i)
      out[len++] = sep;
    size_t hl = svc_host(job, t, host, sub, i, h, sizeof(h));
    memcpy(out + len, h, hl);
    len += hl;
  }
  out[len] = '\0';
  *n = count;
  return out;
}

/* One task's three keys into data. Returns false when out of memory. */
static bool svc_task_hosts(json_t *data, const Kiln__Job *job, const Kiln__TaskSpec *t) {
  const char *tname = t->name ? t->name : "";
  char key[CTL_NAME_MAX + 16], num[24];
  size_t n = 0;
  char *nl = svc_host_list(job, t, '\n', &n), *comma = svc_host_list(job, t, ',', &n);
  bool ok = nl && comma;
  if (ok) {
    snprintf(key, sizeof(key), "%s.host", tname);
    ok = json_object_set_new(data, key, json_string(nl)) == 0;
  }
  if (ok) {
    env_key(tname, "_HOSTS", key, sizeof(key));
    ok = json_object_set_new(data, key, json_string(comma)) == 0;
  }
  if (ok) {
    env_key(tname, "_NUM", key, sizeof(key));
    snprintf(num, sizeof(num), "%zu", n);
    ok = json_object_set_new(data, key, json_string(num)) == 0;
  }
  free(nl);
  free(comma);
  return ok;
}

/* The ConfigMap data: per task <task>.host, VC_<TASK>_HOSTS and VC_<TASK>_NUM; NULL when
 * out of memory (an empty or partial list would tell the pods a wrong cluster). */
static json_t *svc_hosts(const Kiln__Job *job) {
  json_t *data = json_object();
  for (size_t ti = 0; data && ti < job->spec->n_tasks; ti++)
    if (!svc_task_hosts(data, job, job->spec->tasks[ti])) {
      json_decref(data);
      return NULL;
    }
  return data;
}

static json_t *svc_configmap(const Kiln__Job *job) {
  char name[CTL_NAME_MAX + 8];
  snprintf(name, sizeof(name), "%s-svc", ctl__job_name(job));
  return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                   meta_for(job, name), "data", svc_hosts(job));
}

static json_t *job_selector(const Kiln__Job *job) {
  return json_pack("{s:s, s:s}", CTL_KEY_JOB_NAME, ctl__job_name(job), CTL_KEY_JOB_NAMESPACE,
                   ctl__job_ns(job));
}

static int svc_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  const Kiln__Job *job = c->v->job;
  /* Set up already. A job scaled while its status still says Pending (the status write is
   * batched) passes here, not through update: once it has pods, rewrite the host lists in
   * this sync as Volcano does, so the new hosts are listed as soon as their pods exist. */
  if (marked(c, "svc"))
    return c->v->npods ? ctl__append(&c->plan->objects_update, svc_configmap(job)) : 0;
  int rc = ctl__append(&c->plan->objects_create, svc_configmap(job));
  if (rc)
    return rc;
  json_t *svc =
      json_pack("{s:s, s:s, s:o, s:{s:s, s:o, s:b, s:[{s:s, s:i, s:s, s:i}]}}", "apiVersion", "v1",
                "kind", "Service", "metadata", meta_for(job, ctl__job_name(job)), "spec",
                "clusterIP", "None", "selector", job_selector(job), "publishNotReadyAddresses",
                arg_bool(args, "--publish-not-ready-addresses", false), "ports", "name",
                "placeholder-volcano", "port", 1, "protocol", "TCP", "targetPort", 1);
  if ((rc = ctl__append(&c->plan->objects_create, svc)))
    return rc;
  if (!arg_bool(args, "--disable-network-policy", false)) {
    json_t *np = json_pack("{s:s, s:s, s:o, s:{s:{s:o}, s:[{s:[{s:{s:o}}]}], s:[s]}}", "apiVersion",
                           "networking.k8s.io/v1", "kind", "NetworkPolicy", "metadata",
                           meta_for(job, ctl__job_name(job)), "spec", "podSelector", "matchLabels",
                           job_selector(job), "ingress", "from", "podSelector", "matchLabels",
                           job_selector(job), "policyTypes", "Ingress");
    if ((rc = ctl__append(&c->plan->objects_create, np)))
      return rc;
  }
  mark(c, "svc", true);
  return 0;
}

static int svc_job_update(ctl_ctx *c, const Kiln__StringList *args) {
  /* Replicas may have changed: rewrite the host lists. */
  return ctl__append(&c->plan->objects_update, svc_configmap(c->v->job));
}

static int svc_job_delete(ctl_ctx *c, const Kiln__StringList *args) {
  if (!marked(c, "svc"))
    return 0;
  const char *jname = ctl__job_name(c->v->job);
  char cm[CTL_NAME_MAX + 8];
  snprintf(cm, sizeof(cm), "%s-svc", jname);
  int rc = delete_obj(c, "v1", "ConfigMap", cm);
  if (!rc)
    rc = delete_obj(c, "v1", "Service", jname);
  if (!rc && !arg_bool(args, "--disable-network-policy", false))
    rc = delete_obj(c, "networking.k8s.io/v1", "NetworkPolicy", jname);
  if (!rc)
    mark(c, "svc", false);
  return rc;
}

typedef struct {
  const char *cm;
  const Kiln__Job *job;
  bool hosts_env;
} svc_arg;

static void svc_container(json_t *ct, void *arg) {
  const svc_arg *a = arg;
  if (a->hosts_env) {
    json_t *env = child(ct, "env", true);
    for (size_t ti = 0; ti < a->job->spec->n_tasks; ti++) {
      const char *tname = a->job->spec->tasks[ti]->name ? a->job->spec->tasks[ti]->name : "";
      static const char *const fmts[] = {"_HOSTS", "_NUM"};
      for (size_t f = 0; f < 2; f++) {
        char key[CTL_NAME_MAX + 16];
        env_key(tname, fmts[f], key, sizeof(key));
        json_array_append_new(env, json_pack("{s:s, s:{s:{s:s, s:s, s:b}}}", "name", key,
                                             "valueFrom", "configMapKeyRef", "name", a->cm, "key",
                                             key, "optional", 1));
      }
    }
  }
  json_array_append_new(child(ct, "volumeMounts", true),
                        json_pack("{s:s, s:s}", "name", a->cm, "mountPath", "/etc/volcano"));
}

static int svc_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                          const Kiln__TaskSpec *t, int index) {
  const Kiln__Job *job = c->v->job;
  json_t *spec = child(pod, "spec", false);
  const char *pname = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
  const char *h = json_string_value(json_object_get(spec, "hostname"));
  if (!h || !*h)
    json_object_set_new(spec, "hostname", json_string(pname ? pname : ""));
  const char *s = json_string_value(json_object_get(spec, "subdomain"));
  if (!s || !*s)
    json_object_set_new(spec, "subdomain", json_string(ctl__job_name(job)));
  char cm[CTL_NAME_MAX + 8];
  snprintf(cm, sizeof(cm), "%s-svc", ctl__job_name(job));
  json_array_append_new(child(spec, "volumes", true),
                        json_pack("{s:s, s:{s:s}}", "name", cm, "configMap", "name", cm));
  svc_arg a = {cm, job, arg_bool(args, "--inject-hosts-env", true)};
  each_container(pod, svc_container, &a);
  return 0;
}

/* ---- ssh ---- */

#define SSH_ROOT_PATH "/root/.ssh"

static json_t *b64(const char *s) {
  size_t n = strlen(s);
  unsigned char *out = malloc(4 * ((n + 2) / 3) + 1);
  if (!out)
    return NULL;
  EVP_EncodeBlock(out, (const unsigned char *)s, (int)n);
  json_t *j = json_string((char *)out);
  free(out);
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
    template_host(t, host, sizeof(host), sub, sizeof(sub));
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

static int ssh_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  const Kiln__Job *job = c->v->job;
  if (marked(c, "ssh"))
    return 0;
  char *priv = NULL, *pub = NULL, *cfg = NULL;
  int rc = c->v->ops->ssh_keygen(c->v->ops->ctx, &priv, &pub);
  if (rc) {
    snprintf(c->errmsg, sizeof(c->errmsg), "ssh: cannot generate the key pair: %s",
             rc == KC_EIO ? "the random source failed" : kc_strerror(rc));
    return rc;
  }
  /* The port goes into every Host entry: accept only a real port number. */
  const char *parg = arg_value(args, "--ssh-port");
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
                             "metadata", meta_for(job, name), "type", "Opaque", "data", data));
  if (!rc)
    mark(c, "ssh", true);
out:
  json_decref(data);
  free(priv);
  free(pub);
  free(cfg);
  return rc;
}

static int ssh_job_delete(ctl_ctx *c, const Kiln__StringList *args) {
  if (!marked(c, "ssh"))
    return 0;
  char name[CTL_NAME_MAX + 8];
  snprintf(name, sizeof(name), "%s-ssh", ctl__job_name(c->v->job));
  int rc = delete_obj(c, "v1", "Secret", name);
  if (!rc)
    mark(c, "ssh", false);
  return rc;
}

typedef struct {
  const char *secret;
  const char *path;
} ssh_arg;

static void ssh_container(json_t *ct, void *arg) {
  const ssh_arg *a = arg;
  json_array_append_new(
      child(ct, "volumeMounts", true),
      json_pack("{s:s, s:s, s:s}", "name", a->secret, "mountPath", a->path, "subPath", ".ssh"));
}

static int ssh_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                          const Kiln__TaskSpec *t, int index) {
  char name[CTL_NAME_MAX + 8];
  snprintf(name, sizeof(name), "%s-ssh", ctl__job_name(c->v->job));
  const char *path = arg_value(args, "--ssh-key-file-path");
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
  json_array_append_new(child(child(pod, "spec", false), "volumes", true),
                        json_pack("{s:s, s:{s:s, s:o, s:i}}", "name", name, "secret", "secretName",
                                  name, "items", items, "defaultMode", mode));
  ssh_arg a = {name, path};
  each_container(pod, ssh_container, &a);
  return 0;
}

/* ---- shared with the training plugins (controller/plugins) ---- */

bool ctl__plugin_marked(ctl_ctx *c, const char *plugin) { return marked(c, plugin); }
void ctl__plugin_mark(ctl_ctx *c, const char *plugin, bool on) { mark(c, plugin, on); }
json_t *ctl__plugin_meta(const Kiln__Job *job, const char *name) { return meta_for(job, name); }
int ctl__plugin_delete(ctl_ctx *c, const char *api, const char *kind, const char *name) {
  return delete_obj(c, api, kind, name);
}
void ctl__plugin_template_host(const Kiln__TaskSpec *t, char *host, size_t hl, char *sub,
                               size_t sl) {
  template_host(t, host, hl, sub, sl);
}

/* ---- the table ---- */

static const ctl_plugin plugins[] = {
    {"env", env_job_add, env_pod_create, NULL, env_job_delete},
    {"svc", svc_job_add, svc_pod_create, svc_job_update, svc_job_delete},
    {"ssh", ssh_job_add, ssh_pod_create, NULL, ssh_job_delete},
    {"pytorch", ctl__pytorch_job_add, ctl__pytorch_pod_create, NULL, ctl__pytorch_job_delete},
    {"tensorflow", ctl__tensorflow_job_add, ctl__tensorflow_pod_create, NULL,
     ctl__tensorflow_job_delete},
    {"mpi", ctl__mpi_job_add, ctl__mpi_pod_create, NULL, ctl__mpi_job_delete},
    {"ray", ctl__ray_job_add, ctl__ray_pod_create, NULL, ctl__ray_job_delete},
    {"hcclrank", NULL, ctl__hcclrank_pod_create, NULL, NULL},
};

const ctl_plugin *ctl__plugin_find(const char *name) {
  for (size_t i = 0; name && i < sizeof(plugins) / sizeof(plugins[0]); i++)
    if (strcmp(plugins[i].name, name) == 0)
      return &plugins[i];
  return NULL;
}

int ctl__plugins_job_add(ctl_ctx *c, char *errbuf, size_t len) {
  const Kiln__JobSpec *spec = c->v->job->spec;
  /* Check every name first so an unknown plugin leaves nothing half-created. */
  for (size_t i = 0; i < spec->n_plugins; i++)
    if (!ctl__plugin_find(spec->plugins[i]->key)) {
      snprintf(errbuf, len, "unable to get plugin %s", spec->plugins[i]->key);
      return KC_ENOENT;
    }
  ctl_plugin_use use[CTL_PLUGIN_USES_MAX];
  size_t n = ctl__plugins_used(spec, use, CTL_PLUGIN_USES_MAX);
  for (size_t i = 0; i < n; i++) {
    const ctl_plugin *p = ctl__plugin_find(use[i].name);
    c->errmsg[0] = '\0';
    int rc = p->on_job_add ? p->on_job_add(c, use[i].args) : 0;
    if (rc) {
      if (c->errmsg[0])
        snprintf(errbuf, len, "%s", c->errmsg);
      else
        snprintf(errbuf, len, "%s: %s", p->name, kc_strerror(rc));
      return rc;
    }
  }
  return 0;
}

int ctl__plugins_job_update(ctl_ctx *c) {
  ctl_plugin_use use[CTL_PLUGIN_USES_MAX];
  size_t n = ctl__plugins_used(c->v->job->spec, use, CTL_PLUGIN_USES_MAX);
  for (size_t i = 0; i < n; i++) {
    const ctl_plugin *p = ctl__plugin_find(use[i].name);
    int rc = p && p->on_job_update ? p->on_job_update(c, use[i].args) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

int ctl__plugins_job_delete(ctl_ctx *c) {
  ctl_plugin_use use[CTL_PLUGIN_USES_MAX];
  size_t n = ctl__plugins_used(c->v->job->spec, use, CTL_PLUGIN_USES_MAX);
  for (size_t i = 0; i < n; i++) {
    const ctl_plugin *p = ctl__plugin_find(use[i].name);
    int rc = p && p->on_job_delete ? p->on_job_delete(c, use[i].args) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

int ctl__plugins_pod_create(ctl_ctx *c, json_t *pod, const Kiln__TaskSpec *task, int index) {
  ctl_plugin_use use[CTL_PLUGIN_USES_MAX];
  size_t n = ctl__plugins_used(c->v->job->spec, use, CTL_PLUGIN_USES_MAX);
  for (size_t i = 0; i < n; i++) {
    const ctl_plugin *p = ctl__plugin_find(use[i].name);
    int rc = p && p->on_pod_create ? p->on_pod_create(c, use[i].args, pod, task, index) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

/* ---- default effects: OpenSSL randomness and RSA keys ---- */

static int draw(void *ctx, unsigned char *buf, size_t n) {
  const ctl_random *src = ctx;
  if (src)
    return src->bytes(src->arg, buf, n);
  return RAND_bytes(buf, (int)n) == 1 ? 0 : KC_EIO;
}

static int default_rand_str(void *ctx, char *buf, size_t n) {
  static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  unsigned char r[64];
  if (n > sizeof(r))
    n = sizeof(r);
  int rc = draw(ctx, r, n);
  if (rc) {
    /* Never a fallback: names made of zeros would be the same for every job. */
    buf[0] = '\0';
    return rc;
  }
  for (size_t i = 0; i < n; i++)
    buf[i] = alphabet[r[i] % 36];
  buf[n] = '\0';
  return 0;
}

/* RFC 4253 string/mpint encoding into buf at *off. */
static void put_u32(unsigned char *buf, size_t *off, uint32_t v) {
  buf[(*off)++] = (unsigned char)(v >> 24);
  buf[(*off)++] = (unsigned char)(v >> 16);
  buf[(*off)++] = (unsigned char)(v >> 8);
  buf[(*off)++] = (unsigned char)v;
}

static void put_mpint(unsigned char *buf, size_t *off, const BIGNUM *bn) {
  int n = BN_num_bytes(bn);
  unsigned char tmp[1024];
  BN_bn2bin(bn, tmp);
  bool pad = n > 0 && (tmp[0] & 0x80);
  put_u32(buf, off, (uint32_t)(n + pad));
  if (pad)
    buf[(*off)++] = 0;
  memcpy(buf + *off, tmp, (size_t)n);
  *off += (size_t)n;
}

static int default_ssh_keygen(void *ctx, char **priv, char **pub) {
  *priv = *pub = NULL;
  /* EVP_RSA_gen draws from OpenSSL's generator, the one RAND_bytes reads. Drawing through
   * the source first stops a failed generator here with KC_EIO (and lets a test fail it);
   * EVP_RSA_gen failing on its own is KC_EIO too: no key is ever made without randomness. */
  unsigned char probe[32];
  int rc = draw(ctx, probe, sizeof(probe));
  OPENSSL_cleanse(probe, sizeof(probe));
  if (rc)
    return rc;
  EVP_PKEY *key = EVP_RSA_gen(2048);
  if (!key)
    return KC_EIO;
  rc = KC_ENOMEM;
  BIO *bio = NULL;
  BIGNUM *n = NULL, *e = NULL;
  unsigned char *blob = NULL, *enc = NULL;
  if (!(bio = BIO_new(BIO_s_mem())))
    goto out;
  /* PKCS#1 "RSA PRIVATE KEY", the form Volcano writes. */
  if (!PEM_write_bio_PrivateKey_traditional(bio, key, NULL, NULL, 0, NULL, NULL))
    goto out;
  char *data;
  long len = BIO_get_mem_data(bio, &data);
  if (len <= 0 || !(*priv = strndup(data, (size_t)len)))
    goto out;
  if (!EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_N, &n) ||
      !EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_E, &e) || BN_num_bytes(n) > 1000)
    goto out;
  blob = malloc(2048);
  if (!blob)
    goto out;
  size_t off = 0;
  put_u32(blob, &off, 7);
  memcpy(blob + off, "ssh-rsa", 7);
  off += 7;
  put_mpint(blob, &off, e);
  put_mpint(blob, &off, n);
  enc = malloc(4 * ((off + 2) / 3) + 1);
  if (!enc)
    goto out;
  EVP_EncodeBlock(enc, blob, (int)off);
  size_t pl = strlen((char *)enc) + 16;
  if (!(*pub = malloc(pl)))
    goto out;
  snprintf(*pub, pl, "ssh-rsa %s\n", enc);
  rc = 0;
out:
  if (rc) {
    free(*priv);
    *priv = NULL;
  }
  free(enc);
  free(blob);
  BN_free(n);
  BN_free(e);
  BIO_free(bio);
  EVP_PKEY_free(key);
  return rc;
}

const ctl_ops ctl_default_ops = {
    .rand_str = default_rand_str,
    .ssh_keygen = default_ssh_keygen,
    .ctx = NULL,
};
