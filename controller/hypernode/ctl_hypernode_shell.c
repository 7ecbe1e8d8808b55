/* hyperNode-controller: Volcano's pkg/controllers/hypernode with its label discoverer. It
 * reads the discovery configuration from the ConfigMap <HELM_RELEASE_NAME or volcano>-
 * controller-configmap in KUBE_POD_NAMESPACE (or volcano-system), as Volcano does; when the
 * label source is enabled, a change of the configured node labels (or of the configuration,
 * or a HyperNode of this source deleted) queues one discovery, which creates, updates and
 * deletes the label-made HyperNodes to match (ctl_hypernode.c decides). Every HyperNode's
 * status.nodeCount is kept at its number of members. The UFM and RoCE sources are not built:
 * an enabled one is named in the log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"
#include "ctl_hypernode.h"
#include "kc_error.h"
#include "kc_log.h"

/* The work queue's key of a discovery: no HyperNode name has a '~'. */
#define DISCOVERY_KEY "~discovery"

enum { INF_HN, INF_NODES, INF_CM, INF_N };

typedef struct {
  ctl_base base;     /* first */
  ctl_hn_conf *conf; /* NULL: no (readable) configuration */
  char cm_ns[254], cm_name[254], cm_key[512], cm_field[300];
  uint64_t created, updated, deleted, counted;
} hn_ctl;

static bool label_on(const hn_ctl *h) {
  return h->conf && h->conf->label;
}

static void discover_later(hn_ctl *h) {
  if (label_on(h))
    ctl_base_add(&h->base, DISCOVERY_KEY);
}

/* ---- the configuration (Volcano's config.loader and manager.syncHandler) ---- */

static void load_conf(hn_ctl *h, const json_t *cm) {
  ctl_hn_conf_free(h->conf);
  h->conf = NULL;
  if (!cm) {
    KC_INFO("hyperNode-controller: ConfigMap %s/%s not found: no network topology discovery",
            h->cm_ns, h->cm_name);
    return;
  }
  const char *text =
      json_string_value(json_object_get(json_object_get(cm, "data"), CTL_HN_CONFIG_KEY));
  if (!text) {
    KC_ERROR("hyperNode-controller: Failed to load config: config key not found in ConfigMap: %s",
             CTL_HN_CONFIG_KEY);
    return;
  }
  char err[256] = "";
  int rc = ctl_hn_conf_parse(text, strlen(text), &h->conf, err, sizeof(err));
  if (rc) {
    KC_ERROR("hyperNode-controller: Failed to load config: %s",
             rc == KC_EINVAL ? err : kc_strerror(rc));
    return;
  }
  for (size_t i = 0; i < h->conf->nwarnings; i++)
    KC_ERROR("hyperNode-controller: %s", h->conf->warnings[i]);
  for (size_t i = 0; i < h->conf->nothers; i++)
    KC_WARN("hyperNode-controller: network topology discovery source %s is not built in Kiln "
            "(only label is); ignored",
            h->conf->others[i]);
  if (label_on(h))
    for (size_t i = 0; i < h->conf->ntypes; i++)
      KC_INFO("hyperNode-controller: label discovery: topology type %s, %zu tiers",
              h->conf->types[i].name, h->conf->types[i].nkeys);
}

static void on_cm(const char *key, void *obj, void *ud) {
  hn_ctl *h = ud;
  load_conf(h, obj);
  discover_later(h);
}

static void on_cm_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  on_cm(key, new_obj, ud);
}

static void on_cm_del(const char *key, void *obj, void *ud) {
  on_cm(key, NULL, ud);
}

/* ---- nodes: only their names and labels are kept ---- */

static void *decode_node(json_t *obj, void *ud, char *err, size_t errlen) {
  const json_t *md = json_object_get(obj, "metadata");
  json_t *labels = json_object_get(md, "labels");
  labels = labels ? json_incref(labels) : json_object();
  json_t *slim = json_pack("{s:{s:O, s:o}}", "metadata", "name", json_object_get(md, "name"),
                           "labels", labels); /* o steals labels, also when it fails */
  if (!slim)
    snprintf(err, errlen, "out of memory");
  return slim;
}

static void free_json(void *obj) {
  json_decref(obj);
}

static void on_node(const char *key, void *obj, void *ud) {
  hn_ctl *h = ud;
  if (label_on(h) && ctl_hn_node_changed(h->conf, NULL, obj))
    discover_later(h);
}

static void on_node_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  hn_ctl *h = ud;
  if (label_on(h) && ctl_hn_node_changed(h->conf, old_obj, new_obj))
    discover_later(h);
}

static void on_node_del(const char *key, void *obj, void *ud) {
  hn_ctl *h = ud;
  if (label_on(h) && ctl_hn_node_changed(h->conf, obj, NULL))
    discover_later(h);
}

/* ---- HyperNodes: their status, and a deleted one discovered again ---- */

static void on_hn(const char *key, void *obj, void *ud) {
  ctl_base_add(ud, key);
}

static void on_hn_update(const char *key, void *old_obj, void *new_obj, void *ud) {
  ctl_base_add(ud, key);
}

static void on_hn_del(const char *key, void *obj, void *ud) {
  discover_later(ud);
}

static void all_synced(ctl_base *b) {
  hn_ctl *h = (hn_ctl *)b;
  ctl_base_each(b, INF_HN, on_hn);
  discover_later(h);
}

/* ---- a discovery and its writes ---- */

typedef struct {
  ctl_base *b;
  int pending, err;
} disc_run;

typedef struct {
  disc_run *run;
  ctl_hn_op op;
  char name[254];
} disc_write;

static void disc_finish(disc_run *r) {
  if (--r->pending > 0)
    return;
  ctl_base_done(r->b, DISCOVERY_KEY, r->err, NULL);
  free(r);
}

static void disc_written(ctl_base *b, const kc_api_result *res, void *ud) {
  disc_write *w = ud;
  hn_ctl *h = (hn_ctl *)b;
  static const char *const what[] = {"create", "update", "delete"};
  int err = res->err;
  if (w->op == CTL_HN_DELETE && err == KC_ENOTFOUND)
    err = 0;
  if (err) {
    KC_ERROR("hyperNode-controller: Failed to %s HyperNode %s: %s", what[w->op], w->name,
             res->message);
    if (!w->run->err)
      w->run->err = err;
  } else {
    (*(w->op == CTL_HN_CREATE   ? &h->created
       : w->op == CTL_HN_UPDATE ? &h->updated
                                : &h->deleted))++;
  }
  disc_run *r = w->run;
  free(w);
  disc_finish(r);
}

static void issue(disc_run *r, const ctl_hn_action *a) {
  static const char *const verb[] = {"Creating new", "Updating", "Deleting"};
  KC_INFO("hyperNode-controller: %s HyperNode name=%s source=%s", verb[a->op], a->name,
          CTL_HN_SOURCE);
  disc_write *w = calloc(1, sizeof(*w));
  int rc = w ? 0 : KC_ENOMEM;
  if (w) {
    w->run = r;
    w->op = a->op;
    snprintf(w->name, sizeof(w->name), "%s", a->name);
    kc_ref ref = {"topology.volcano.sh",
                  "v1alpha1",
                  "hypernodes",
                  NULL,
                  a->op == CTL_HN_CREATE ? NULL : a->name,
                  NULL};
    kc_query q = {.discard_body = true};
    kc_verb v = a->op == CTL_HN_CREATE   ? KC_CREATE
                : a->op == CTL_HN_UPDATE ? KC_PATCH_MERGE
                                         : KC_DELETE;
    rc = ctl_base_call(r->b, v, &ref, &q, a->obj, disc_written, w);
  }
  if (rc) {
    free(w);
    if (!r->err)
      r->err = rc;
    r->pending--; /* disc_finish is called by the caller once everything is issued */
  }
}

/* A new array of the objects of store i (references). */
static json_t *store_array(ctl_base *b, size_t i) {
  json_t *a = json_array();
  kc_store_iter it;
  const char *k;
  void *o;
  kc_store_iter_init(ctl_base_store(b, i), &it);
  while (a && kc_store_iter_next(&it, &k, &o))
    if (json_array_append(a, o)) {
      json_decref(a);
      return NULL;
    }
  return a;
}

static void discover(hn_ctl *h) {
  ctl_base *b = &h->base;
  if (!label_on(h)) {
    ctl_base_done(b, DISCOVERY_KEY, 0, NULL);
    return;
  }
  KC_V(3, "hyperNode-controller: Started label based hyperNode auto discovery");
  json_t *nodes = store_array(b, INF_NODES), *existing = store_array(b, INF_HN);
  json_t *desired = nodes && existing ? ctl_hn_discover(h->conf, nodes, existing) : NULL;
  ctl_hn_action *acts = NULL;
  size_t n = 0;
  int rc = desired ? ctl_hn_reconcile(desired, existing, &acts, &n) : KC_ENOMEM;
  disc_run *r = rc == 0 ? calloc(1, sizeof(*r)) : NULL;
  if (rc == 0 && !r)
    rc = KC_ENOMEM;
  if (rc == 0) {
    KC_INFO("hyperNode-controller: Topology reconciliation: source=%s discovered=%zu writes=%zu",
            CTL_HN_SOURCE, json_array_size(desired), n);
    r->b = b;
    r->pending = (int)n + 1; /* one for this function, so that no answer ends it early */
    for (size_t i = 0; i < n; i++)
      issue(r, &acts[i]);
    disc_finish(r);
  } else {
    KC_ERROR("hyperNode-controller: Error discover HyperNode: %s", kc_strerror(rc));
    ctl_base_done(b, DISCOVERY_KEY, rc, NULL);
  }
  ctl_hn_actions_free(acts, n);
  json_decref(desired);
  json_decref(existing);
  json_decref(nodes);
}

/* ---- status.nodeCount (Volcano syncHyperNodeStatus) ---- */

typedef struct {
  char key[254];
  int64_t count;
} count_write;

static void counted(ctl_base *b, const kc_api_result *res, void *ud) {
  count_write *w = ud;
  int err = res->err == KC_ENOTFOUND ? 0 : res->err;
  if (err)
    KC_ERROR("hyperNode-controller: Failed to update HyperNode status name=%s: %s", w->key,
             res->message);
  else {
    ((hn_ctl *)b)->counted++;
    KC_V(3, "hyperNode-controller: Updated HyperNode status name=%s nodeCount=%lld", w->key,
         (long long)w->count);
  }
  ctl_base_done(b, w->key, err, NULL);
  free(w);
}

static void sync_status(ctl_base *b, const char *key) {
  const json_t *hn = kc_store_get(ctl_base_store(b, INF_HN), key);
  int64_t count;
  if (!hn || !ctl_hn_count_stale(hn, &count)) {
    ctl_base_done(b, key, 0, NULL);
    return;
  }
  count_write *w = calloc(1, sizeof(*w));
  json_t *patch = json_pack("{s:{s:I}}", "status", "nodeCount", (json_int_t)count);
  int rc = w && patch ? 0 : KC_ENOMEM;
  if (rc == 0) {
    snprintf(w->key, sizeof(w->key), "%s", key);
    w->count = count;
    kc_ref ref = {"topology.volcano.sh", "v1alpha1", "hypernodes", NULL, key, "status"};
    kc_query q = {.discard_body = true};
    rc = ctl_base_call(b, KC_PATCH_MERGE, &ref, &q, patch, counted, w);
  }
  json_decref(patch);
  if (rc) {
    free(w);
    ctl_base_done(b, key, rc, NULL);
  }
}

static void process(ctl_base *b, const char *key) {
  if (strcmp(key, DISCOVERY_KEY) == 0)
    discover((hn_ctl *)b);
  else
    sync_status(b, key);
}

/* ---- the controller ---- */

static int hn_init(const ctl_env *env, void **out) {
  hn_ctl *h = calloc(1, sizeof(*h));
  if (!h)
    return KC_ENOMEM;
  *out = h;
  const char *ns = getenv("KUBE_POD_NAMESPACE"), *release = getenv("HELM_RELEASE_NAME");
  snprintf(h->cm_ns, sizeof(h->cm_ns), "%s", ns && *ns ? ns : "volcano-system");
  snprintf(h->cm_name, sizeof(h->cm_name), "%s-controller-configmap",
           release && *release ? release : "volcano");
  snprintf(h->cm_field, sizeof(h->cm_field), "metadata.name=%s", h->cm_name);
  ctl_inf_def defs[INF_N] = {
      [INF_HN] = {"topology.volcano.sh", "v1alpha1", "hypernodes", NULL, NULL, NULL, on_hn,
                  on_hn_update, on_hn_del},
      [INF_NODES] = {"", "v1", "nodes", NULL, decode_node, free_json, on_node, on_node_update,
                     on_node_del},
      [INF_CM] = {"", "v1", "configmaps", NULL, NULL, NULL, on_cm, on_cm_update, on_cm_del,
                  h->cm_field, NULL, h->cm_ns},
  };
  h->base.on_synced = all_synced;
  KC_INFO("hyperNode-controller: discovery configuration from ConfigMap %s/%s, key %s", h->cm_ns,
          h->cm_name, CTL_HN_CONFIG_KEY);
  /* One at a time: a discovery's writes are the whole topology; statuses are small. */
  return ctl_base_init(&h->base, env, "hyperNode-controller", defs, INF_N, 1, process);
}

static void free_owner(ctl_base *b) {
  hn_ctl *h = (hn_ctl *)b;
  ctl_hn_conf_free(h->conf);
  free(h);
}

static void hn_free(void *c) {
  if (!c)
    return;
  hn_ctl *h = c;
  KC_INFO("hyperNode-controller stopped: %llu HyperNodes created, %llu updated, %llu deleted, "
          "%llu statuses written",
          (unsigned long long)h->created, (unsigned long long)h->updated,
          (unsigned long long)h->deleted, (unsigned long long)h->counted);
  ctl_base_close(&h->base, free_owner);
}

const ctl_controller_def ctl_hypernode_controller = {
    .name = "hyperNode-controller",
    .informers = "hypernodes, nodes, one configmap",
    .init = hn_init,
    .start = ctl_base_def_start,
    .synced = ctl_base_def_synced,
    .stop = ctl_base_def_stop,
    .free = hn_free,
};
