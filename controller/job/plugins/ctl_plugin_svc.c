/* svc (Volcano pkg/controllers/job/plugins/svc): a headless Service, a NetworkPolicy and
 * the "<job>-svc" ConfigMap of host names, mounted at /etc/volcano and offered as env. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_plugin.h"
#include "kc_error.h"

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

/* The API server refuses a ConfigMap whose data passes 1 MiB: the host lists stop there
 * (less room for the keys and counts), and so does the work of measuring them. */
#define SVC_DATA_MAX (1024u * 1024u - 16u * 1024u)

/* The host names of task t (its template's hostname and subdomain given) joined by sep into
 * one new string (free()): the exact size is measured first, then the names are written once
 * each, so a large task costs linear time and no more memory than the result. At most *budget
 * bytes, taken from it. NULL with *rc KC_ETOOBIG past the budget (measuring stops there), or
 * KC_ENOMEM. */
static char *svc_host_list(const Kiln__Job *job, const Kiln__TaskSpec *t, const char *host,
                           const char *sub, char sep, size_t *n, size_t *budget, int *rc) {
  char h[CTL_NAME_MAX * 3];
  /* A hostname in the template names one host for every replica. */
  size_t count = host[0] ? 1 : (t->replicas > 0 ? (size_t)t->replicas : 0);
  size_t cap = 1, len = 0;
  for (size_t i = 0; i < count && cap <= *budget; i++)
    cap += svc_host(job, t, host, sub, i, h, sizeof(h)) + 1;
  *rc = cap > *budget ? KC_ETOOBIG : KC_ENOMEM;
  char *out = cap > *budget ? NULL : malloc(cap);
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
  *budget -= cap;
  *rc = 0;
  return out;
}

/* One task's three keys into data. 0, KC_ETOOBIG (past *budget) or KC_ENOMEM. */
static int svc_task_hosts(json_t *data, const Kiln__Job *job, const Kiln__TaskSpec *t,
                          size_t *budget) {
  const char *tname = t->name ? t->name : "";
  char key[CTL_NAME_MAX + 16], num[24];
  char host[CTL_NAME_MAX], sub[CTL_NAME_MAX];
  ctl__plugin_template_host(t, host, sizeof(host), sub, sizeof(sub));
  size_t n = 0;
  int rc;
  char *nl = svc_host_list(job, t, host, sub, '\n', &n, budget, &rc), *comma = NULL;
  if (nl)
    comma = svc_host_list(job, t, host, sub, ',', &n, budget, &rc);
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
  return ok ? 0 : rc ? rc : KC_ENOMEM;
}

/* The ConfigMap data: per task <task>.host, VC_<TASK>_HOSTS and VC_<TASK>_NUM; NULL when it
 * cannot be made (an empty or partial list would tell the pods a wrong cluster), with *rc
 * KC_ETOOBIG (past what a ConfigMap holds) or KC_ENOMEM. */
static json_t *svc_hosts(const Kiln__Job *job, int *rc) {
  json_t *data = json_object();
  size_t budget = SVC_DATA_MAX;
  *rc = data ? 0 : KC_ENOMEM;
  for (size_t ti = 0; data && ti < job->spec->n_tasks; ti++)
    if ((*rc = svc_task_hosts(data, job, job->spec->tasks[ti], &budget))) {
      json_decref(data);
      return NULL;
    }
  return data;
}

/* The ConfigMap into the plan's objects to create or update. A Job whose host lists do not
 * fit fails the plugin with a message naming the ConfigMap. */
static int svc_configmap(ctl_ctx *c, json_t **objects) {
  const Kiln__Job *job = c->v->job;
  char name[CTL_NAME_MAX + 8];
  snprintf(name, sizeof(name), "%s-svc", ctl__job_name(job));
  int rc;
  json_t *data = svc_hosts(job, &rc);
  if (!data) {
    if (rc == KC_ETOOBIG &&
        snprintf(c->errmsg, sizeof(c->errmsg),
                 "svc: the host lists of %" PRIu64 " pods do not fit in ConfigMap %s (a "
                 "ConfigMap holds at most 1 MiB)",
                 (uint64_t)ctl__total_replicas(job), name) < 0)
      c->errmsg[0] = '\0';
    return rc;
  }
  return ctl__append(objects,
                     json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "ConfigMap",
                               "metadata", ctl__plugin_meta(job, name), "data", data));
}

static json_t *job_selector(const Kiln__Job *job) {
  return json_pack("{s:s, s:s}", CTL_KEY_JOB_NAME, ctl__job_name(job), CTL_KEY_JOB_NAMESPACE,
                   ctl__job_ns(job));
}

int ctl__svc_job_add(ctl_ctx *c, const Kiln__StringList *args) {
  const Kiln__Job *job = c->v->job;
  /* Set up already. A job scaled while its status still says Pending (the status write is
   * batched) passes here, not through update: once it has pods, rewrite the host lists in
   * this sync as Volcano does, so the new hosts are listed as soon as their pods exist. */
  if (ctl__plugin_marked(c, "svc"))
    return c->v->npods ? svc_configmap(c, &c->plan->objects_update) : 0;
  int rc = svc_configmap(c, &c->plan->objects_create);
  if (rc)
    return rc;
  json_t *svc =
      json_pack("{s:s, s:s, s:o, s:{s:s, s:o, s:b, s:[{s:s, s:i, s:s, s:i}]}}", "apiVersion", "v1",
                "kind", "Service", "metadata", ctl__plugin_meta(job, ctl__job_name(job)), "spec",
                "clusterIP", "None", "selector", job_selector(job), "publishNotReadyAddresses",
                ctl__plugin_arg_bool(args, "--publish-not-ready-addresses", false), "ports", "name",
                "placeholder-volcano", "port", 1, "protocol", "TCP", "targetPort", 1);
  if ((rc = ctl__append(&c->plan->objects_create, svc)))
    return rc;
  if (!ctl__plugin_arg_bool(args, "--disable-network-policy", false)) {
    json_t *np = json_pack("{s:s, s:s, s:o, s:{s:{s:o}, s:[{s:[{s:{s:o}}]}], s:[s]}}", "apiVersion",
                           "networking.k8s.io/v1", "kind", "NetworkPolicy", "metadata",
                           ctl__plugin_meta(job, ctl__job_name(job)), "spec", "podSelector",
                           "matchLabels", job_selector(job), "ingress", "from", "podSelector",
                           "matchLabels", job_selector(job), "policyTypes", "Ingress");
    if ((rc = ctl__append(&c->plan->objects_create, np)))
      return rc;
  }
  ctl__plugin_mark(c, "svc", true);
  return 0;
}

int ctl__svc_job_update(ctl_ctx *c, const Kiln__StringList *args) {
  /* Replicas may have changed: rewrite the host lists. */
  return svc_configmap(c, &c->plan->objects_update);
}

int ctl__svc_job_delete(ctl_ctx *c, const Kiln__StringList *args) {
  if (!ctl__plugin_marked(c, "svc"))
    return 0;
  const char *jname = ctl__job_name(c->v->job);
  char cm[CTL_NAME_MAX + 8];
  snprintf(cm, sizeof(cm), "%s-svc", jname);
  int rc = ctl__plugin_delete(c, "v1", "ConfigMap", cm);
  if (!rc)
    rc = ctl__plugin_delete(c, "v1", "Service", jname);
  if (!rc && !ctl__plugin_arg_bool(args, "--disable-network-policy", false))
    rc = ctl__plugin_delete(c, "networking.k8s.io/v1", "NetworkPolicy", jname);
  if (!rc)
    ctl__plugin_mark(c, "svc", false);
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
    json_t *env = ctl__json_child(ct, "env", true);
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
  json_array_append_new(ctl__json_child(ct, "volumeMounts", true),
                        json_pack("{s:s, s:s}", "name", a->cm, "mountPath", "/etc/volcano"));
}

int ctl__svc_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                        const Kiln__TaskSpec *t, int index) {
  const Kiln__Job *job = c->v->job;
  json_t *spec = ctl__json_child(pod, "spec", false);
  const char *pname = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
  const char *h = json_string_value(json_object_get(spec, "hostname"));
  if (!h || !*h)
    json_object_set_new(spec, "hostname", json_string(pname ? pname : ""));
  const char *s = json_string_value(json_object_get(spec, "subdomain"));
  if (!s || !*s)
    json_object_set_new(spec, "subdomain", json_string(ctl__job_name(job)));
  char cm[CTL_NAME_MAX + 8];
  snprintf(cm, sizeof(cm), "%s-svc", ctl__job_name(job));
  json_array_append_new(ctl__json_child(spec, "volumes", true),
                        json_pack("{s:s, s:{s:s}}", "name", cm, "configMap", "name", cm));
  svc_arg a = {cm, job, ctl__plugin_arg_bool(args, "--inject-hosts-env", true)};
  ctl__each_container(pod, svc_container, &a);
  return 0;
}
