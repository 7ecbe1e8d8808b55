/* What the training plugins share: Go-flag argument parsing, task lookup, pod domain names,
 * container env and ports, the plan markers and object shapes of every plugin, and the
 * svc/ssh plugins a training plugin implies. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_plugin.h"
#include "ctl_int.h"
#include "kc_error.h"
#include "kc_log.h"

/* ---- Go flag semantics ---- */

/* strconv.ParseInt(s, 0, 64): optional sign, then 0x/0o/0b or a leading 0 (octal) picks the
 * base. On a syntax error *v is 0, out of range it is clamped; both return an error. */
static int parse_go_int(const char *s, int64_t *v, const char **why) {
  const char *p = s;
  bool neg = false;
  *v = 0;
  if (*p == '+' || *p == '-')
    neg = *p++ == '-';
  int base = 10;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
    base = 16, p += 2;
  else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
    base = 8, p += 2;
  else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
    base = 2, p += 2;
  else if (p[0] == '0' && p[1])
    base = 8, p += 1;
  /* strtoull would accept leading spaces and a second sign; Go accepts neither. */
  if (!*p || !((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F'))) {
    *why = "parse error";
    return KC_EINVAL;
  }
  errno = 0;
  char *end = NULL;
  unsigned long long u = strtoull(p, &end, base);
  if (*end) {
    *why = "parse error";
    return KC_EINVAL;
  }
  if (errno == ERANGE || u > (neg ? (unsigned long long)INT64_MAX + 1 : INT64_MAX)) {
    *v = neg ? INT64_MIN : INT64_MAX;
    *why = "value out of range";
    return KC_ERANGE;
  }
  *v = neg ? (int64_t)(0 - u) : (int64_t)u;
  return 0;
}

static int parse_go_bool(const char *s, bool *v) {
  static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
  static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
  *v = false;
  for (size_t i = 0; i < 6; i++) {
    if (strcmp(s, yes[i]) == 0) {
      *v = true;
      return 0;
    }
    if (strcmp(s, no[i]) == 0)
      return 0;
  }
  return KC_EINVAL;
}

static const ctl_flag *flag_find(const ctl_flag *flags, size_t n, const char *name, size_t len) {
  for (size_t i = 0; i < n; i++)
    if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
      return &flags[i];
  return NULL;
}

/* One flag of Go's FlagSet.parseOne; *i is advanced past what it consumed. Returns 1 to go
 * on, 0 at the end of the flags, or an error with the message in err. */
static int parse_one(const ctl_flag *flags, size_t nflags, const Kiln__StringList *args, size_t *i,
                     char *st, char *err, size_t errlen) {
  const char *s = args->items[*i];
  if (strlen(s) < 2 || s[0] != '-')
    return 0;
  const char *name = s + 1;
  if (s[1] == '-') {
    if (!s[2]) {
      (*i)++;
      return 0;
    }
    name = s + 2;
  }
  if (!*name || *name == '-' || *name == '=') {
    snprintf(err, errlen, "bad flag syntax: %s", s);
    return KC_EINVAL;
  }
  (*i)++;
  const char *eq = strchr(name + 1, '=');
  size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
  const ctl_flag *f = flag_find(flags, nflags, name, nlen);
  if (!f) {
    snprintf(err, errlen, "flag provided but not defined: -%.*s", (int)nlen, name);
    return KC_EINVAL;
  }
  const char *value = eq ? eq + 1 : NULL;
  if (f->type == CTL_FLAG_BOOL) {
    if (parse_go_bool(value ? value : "true", (bool *)(void *)(st + f->offset))) {
      snprintf(err, errlen, "invalid boolean value \"%s\" for -%s: parse error", value, f->name);
      return KC_EINVAL;
    }
    return 1;
  }
  if (!value && *i < args->n_items)
    value = args->items[(*i)++];
  if (!value) {
    snprintf(err, errlen, "flag needs an argument: -%s", f->name);
    return KC_EINVAL;
  }
  if (f->type == CTL_FLAG_STRING) {
    *(const char **)(void *)(st + f->offset) = value;
    return 1;
  }
  const char *why = NULL;
  if (parse_go_int(value, (int64_t *)(void *)(st + f->offset), &why)) {
    snprintf(err, errlen, "invalid value \"%s\" for flag -%s: %s", value, f->name, why);
    return KC_EINVAL;
  }
  return 1;
}

int ctl__flags_parse(const char *plugin, const ctl_flag *flags, size_t nflags,
                     const Kiln__StringList *args, void *settings, char *err, size_t errlen) {
  size_t i = 0;
  int rc = 1;
  if (errlen)
    err[0] = '\0';
  while (args && i < args->n_items && rc == 1)
    rc = parse_one(flags, nflags, args, &i, settings, err, errlen);
  if (rc < 0) {
    KC_ERROR("plugin %s flagset parse failed, err: %s", plugin, err);
    return rc;
  }
  return 0;
}

/* ---- job and pod helpers ---- */

int ctl__task_index(const Kiln__Job *job, const char *name) {
  for (size_t i = 0; name && i < job->spec->n_tasks; i++)
    if (job->spec->tasks[i]->name && strcmp(job->spec->tasks[i]->name, name) == 0)
      return (int)i;
  return -1;
}

void ctl__domain_name(const Kiln__Job *job, const Kiln__TaskSpec *t, int index, char *out,
                      size_t len) {
  char host[CTL_NAME_MAX], sub[CTL_NAME_MAX];
  ctl__plugin_template_host(t, host, sizeof(host), sub, sizeof(sub));
  ctl__domain_name_of(job, t, host, sub, index, out, len);
}

void ctl__domain_name_of(const Kiln__Job *job, const Kiln__TaskSpec *t, const char *host,
                         const char *sub, int index, char *out, size_t len) {
  const char *jname = ctl__job_name(job);
  if (host[0])
    snprintf(out, len, "%s.%s", host, sub[0] ? sub : jname);
  else
    snprintf(out, len, "%s-%s-%d.%s", jname, t->name ? t->name : "", index, sub[0] ? sub : jname);
}

void ctl__container_env(json_t *ct, const char *name, const char *value) {
  json_array_append_new(ctl__json_child(ct, "env", true),
                        json_pack("{s:s, s:s}", "name", name, "value", value));
}

void ctl__container_port(json_t *ct, const char *name, int64_t port) {
  size_t i;
  json_t *p;
  /* Volcano compares against int32(port): the same truncation here. */
  json_int_t want = (int32_t)port;
  json_array_foreach(json_object_get(ct, "ports"), i, p) {
    if (json_integer_value(json_object_get(p, "containerPort")) == want)
      return;
  }
  json_array_append_new(ctl__json_child(ct, "ports", true),
                        json_pack("{s:s, s:I}", "name", name, "containerPort", want));
}

json_t *ctl__pod_containers(json_t *pod, bool init) {
  json_t *a = json_object_get(json_object_get(pod, "spec"), init ? "initContainers" : "containers");
  return json_is_array(a) ? a : NULL;
}

json_t *ctl__pod_meta_map(json_t *pod, const char *key) {
  json_t *meta = json_object_get(pod, "metadata");
  if (!json_is_object(meta)) {
    meta = json_object();
    json_object_set_new(pod, "metadata", meta);
  }
  json_t *m = json_object_get(meta, key);
  if (!json_is_object(m)) {
    m = json_object();
    json_object_set_new(meta, key, m);
  }
  return m;
}

/* ---- what env, svc and ssh share with the others ---- */

const char *ctl__plugin_arg(const Kiln__StringList *args, const char *flag) {
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

bool ctl__plugin_arg_bool(const Kiln__StringList *args, const char *flag, bool def) {
  const char *v = ctl__plugin_arg(args, flag);
  if (!v)
    return def;
  return strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "True") == 0;
}

bool ctl__plugin_marked(ctl_ctx *c, const char *plugin) {
  char key[64];
  snprintf(key, sizeof(key), "plugin-%s", plugin);
  const char *v = json_string_value(json_object_get(c->plan->status.controlled, key));
  return v && strcmp(v, plugin) == 0;
}

void ctl__plugin_mark(ctl_ctx *c, const char *plugin, bool on) {
  char key[64];
  snprintf(key, sizeof(key), "plugin-%s", plugin);
  if (on)
    json_object_set_new(c->plan->status.controlled, key, json_string(plugin));
  else
    json_object_del(c->plan->status.controlled, key);
}

json_t *ctl__json_child(json_t *o, const char *key, bool array) {
  json_t *v = json_object_get(o, key);
  if (!v || (array ? !json_is_array(v) : !json_is_object(v))) {
    v = array ? json_array() : json_object();
    json_object_set_new(o, key, v);
  }
  return v;
}

/* Applies f to every container and init container of the pod spec. */
void ctl__each_container(json_t *pod, void (*f)(json_t *ct, void *arg), void *arg) {
  json_t *spec = json_object_get(pod, "spec");
  static const char *const lists[] = {"containers", "initContainers"};
  for (size_t l = 0; l < 2; l++) {
    size_t i;
    json_t *ct;
    json_array_foreach(json_object_get(spec, lists[l]), i, ct) f(ct, arg);
  }
}

json_t *ctl__plugin_meta(const Kiln__Job *job, const char *name) {
  json_t *refs = json_array();
  json_array_append_new(refs, ctl__owner_ref(job));
  return json_pack("{s:s, s:s, s:o}", "name", name, "namespace", ctl__job_ns(job),
                   "ownerReferences", refs);
}

int ctl__plugin_delete(ctl_ctx *c, const char *api, const char *kind, const char *name) {
  return ctl__append(&c->plan->objects_delete,
                     json_pack("{s:s, s:s, s:s}", "apiVersion", api, "kind", kind, "name", name));
}

void ctl__plugin_template_host(const Kiln__TaskSpec *t, char *host, size_t hl, char *sub,
                               size_t sl) {
  json_t *tmpl = t->template_json ? json_loads(t->template_json, 0, NULL) : NULL;
  json_t *spec = json_object_get(tmpl, "spec");
  snprintf(host, hl, "%s", json_string_value(json_object_get(spec, "hostname")) ?: "");
  snprintf(sub, sl, "%s", json_string_value(json_object_get(spec, "subdomain")) ?: "");
  json_decref(tmpl);
}

/* ---- implied plugins ---- */

static bool named(const Kiln__JobSpec *spec, const char *name) {
  for (size_t i = 0; i < spec->n_plugins; i++)
    if (spec->plugins[i]->key && strcmp(spec->plugins[i]->key, name) == 0)
      return true;
  return false;
}

size_t ctl__plugins_used(const Kiln__JobSpec *spec, ctl_plugin_use *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < spec->n_plugins && n < cap; i++)
    out[n++] = (ctl_plugin_use){spec->plugins[i]->key, spec->plugins[i]->value};
  bool mpi = named(spec, "mpi");
  bool train = mpi || named(spec, "tensorflow") || named(spec, "pytorch") || named(spec, "ray");
  /* Without Kiln's admission policy installed nothing else adds them, and a training job
   * without its headless Service cannot resolve its peers. */
  if (train && !named(spec, "svc") && n < cap)
    out[n++] = (ctl_plugin_use){"svc", NULL};
  if (mpi && !named(spec, "ssh") && n < cap)
    out[n++] = (ctl_plugin_use){"ssh", NULL};
  return n;
}
