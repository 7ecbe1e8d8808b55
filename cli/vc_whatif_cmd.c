/* `vcctl job whatif` and `vcctl job run --dry-run`: the I/O around vc_whatif.c. With the
 * caller's kubeconfig it lists, once and cluster-wide, what kiln-scheduler's cache watches,
 * decoded by the same decoders into the same snapshot message, and reads the scheduler's
 * configuration from its ConfigMap; the Job goes to the API server as a dry run only, so that
 * its defaults and admission policies apply and nothing is stored. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kc_codec.h"
#include "kc_file.h"
#include "kc_log.h"
#include "sch_conf.h"
#include "sch_conf_file.h"
#include "sch_kinds.h"
#include "vc.h"
#include "vc_whatif.h"

#define CONF_KEY "volcano-scheduler.conf"

typedef struct {
  const vc_args *a;
  vc_conn *conn;
  char *err;
  size_t errlen;
  char *note;           /* what the user should know about how the answer was made (owned) */
  const sch_conf *conf; /* the scheduler's configuration, once read (borrowed) */
} wctx;

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the Job, as the API server would store it ---- */

/* A dry-run create: the CRD's defaults and the admission policies run, nothing is stored. A
 * caller who may not create Jobs, or a name already taken, keeps the file's Job as written. */
static int dry_run(wctx *x, json_t **job) {
  const char *ns = vc_str(*job, "metadata.namespace");
  if (!ns[0])
    ns = x->a->namespace ? x->a->namespace : "default";
  kc_ref ref = {"batch.volcano.sh", "v1alpha1", "jobs", ns, NULL, NULL};
  kc_query q = {.dry_run = true};
  vc_reply r;
  int rc = vc_call(x->conn, KC_CREATE, &ref, &q, *job, &r);
  if (rc == 0 && r.obj) {
    json_decref(*job);
    *job = json_incref(r.obj);
  } else if (rc == KC_EFORBIDDEN || rc == KC_EALREADYEXISTS) {
    if (asprintf(&x->note, "the Job as written (a dry-run create was refused: %s)", r.message) < 0)
      x->note = NULL;
    json_t *md = json_object_get(*job, "metadata");
    if (md && !json_is_string(json_object_get(md, "namespace")))
      json_object_set_new(md, "namespace", json_string(ns));
    rc = 0;
  } else if (r.status >= 400 && r.status < 500) {
    kc_errorf(x->err, x->errlen, rc, "the API server would refuse the Job: %s", r.message);
  } else {
    kc_errorf(x->err, x->errlen, rc, "cannot dry-run the Job: %s", r.message);
  }
  vc_reply_clear(&r);
  return rc;
}

/* ---- the cluster, as kiln-scheduler reads it ---- */

typedef struct {
  void **items[SCH_KIND__COUNT]; /* decoded messages, owned */
  size_t n[SCH_KIND__COUNT];
  json_t *templates; /* the Job namespace's ResourceClaimTemplates (items) */
} cluster_objs;

static void objs_free(cluster_objs *o) {
  for (int k = 0; k < SCH_KIND__COUNT; k++) {
    for (size_t i = 0; i < o->n[k]; i++)
      kc_msg_free(o->items[k][i]);
    free(o->items[k]);
  }
  json_decref(o->templates);
}

/* One cluster-wide list of a kind kiln-scheduler watches (sch_kinds.h); a 403 names the
 * permission missing, in the API server's words too. An object that does not decode is left
 * out, as the scheduler's cache leaves it out; a kind the API server does not serve (no
 * resource.k8s.io/v1) is empty, as the scheduler's informer finds it. */
static int list_kind(wctx *x, int k, cluster_objs *o) {
  const sch_kind *kd = &sch_kinds[k];
  kc_ref ref = {kd->group, kd->version, kd->resource, NULL, NULL, NULL};
  char sel[320];
  kc_query q = {.field_selector = sch_kind_field_selector(k, x->conf, sel, sizeof(sel))};
  vc_reply r;
  int rc = vc_call(x->conn, KC_LIST, &ref, &q, NULL, &r);
  if (rc == KC_ENOTFOUND && kd->group) {
    vc_reply_clear(&r);
    return (o->items[k] = calloc(1, sizeof(void *))) ? 0 : KC_ENOMEM;
  }
  if (rc == KC_EFORBIDDEN)
    kc_errorf(x->err, x->errlen, rc,
              "what-if reads the cluster as kiln-scheduler does and needs permission to list "
              "%s%s%s in all namespaces (verb list, resource %s, cluster-wide; "
              "docs/whatif-rbac.yaml has a ClusterRole for what-if readers): %s",
              kd->resource, kd->group ? "." : "", kd->group ? kd->group : "", kd->resource,
              r.message);
  else if (rc != 0)
    kc_errorf(x->err, x->errlen, rc, "cannot list %s: %s", kd->resource, r.message);
  const json_t *items = rc == 0 ? json_object_get(r.obj, "items") : NULL;
  if (rc == 0 && (o->items[k] = calloc(json_array_size(items) + 1, sizeof(void *))) == NULL)
    rc = KC_ENOMEM;
  size_t i;
  json_t *it;
  json_array_foreach(rc == 0 ? items : NULL, i, it) {
    void *m = NULL;
    if ((m = kd->decode(it, NULL, NULL, 0)) != NULL)
      o->items[k][o->n[k]++] = m;
  }
  vc_reply_clear(&r);
  return rc;
}

/* The ResourceClaimTemplates of the Job's namespace: kube-controller-manager's resourceclaim
 * controller makes each pod's claims from them, which what-if does in its place
 * (vc_whatif_claims.c). Not served, or not readable: none (a pod that needs one is then
 * predicted pending for want of its claim, and the note says why). */
static int list_templates(wctx *x, const char *ns, cluster_objs *o) {
  kc_ref ref = {"resource.k8s.io", "v1", "resourceclaimtemplates", ns, NULL, NULL};
  vc_reply r;
  int rc = vc_call(x->conn, KC_LIST, &ref, NULL, NULL, &r);
  json_t *items = rc == 0 ? json_object_get(r.obj, "items") : NULL;
  o->templates = items ? json_incref(items) : json_array();
  if (rc == KC_EFORBIDDEN && x->note == NULL &&
      asprintf(&x->note, "without ResourceClaimTemplates (cannot list them in %s: %s)", ns,
               r.message) < 0)
    x->note = NULL;
  vc_reply_clear(&r);
  return o->templates ? 0 : KC_ENOMEM;
}

/* Kind k listed into o and msg (arrays borrowed from o). */
static int read_kind(wctx *x, int k, cluster_objs *o, Kiln__Snapshot *msg) {
  int rc = list_kind(x, k, o);
  *sch_kind_items(msg, k) = o->items[k];
  *sch_kind_count(msg, k) = o->n[k];
  return rc;
}

/* The snapshot message of what was listed, but the ConfigMaps: which one the scheduler reads
 * is the configuration's to say (read_kind once it is read). */
static int read_cluster(wctx *x, const char *ns, cluster_objs *o, Kiln__Snapshot *msg) {
  kiln__snapshot__init(msg);
  for (int k = 0; k < SCH_KIND__COUNT; k++) {
    int rc = k == SCH_KIND_CONFIGMAP ? 0 : read_kind(x, k, o, msg);
    if (rc != 0)
      return rc;
  }
  msg->time_unix_nano = (int64_t)time(NULL) * 1000000000;
  return list_templates(x, ns, o);
}

/* ---- the scheduler's configuration ---- */

static int conf_from_configmap(wctx *x, const json_t *cm, const char *where, sch_conf **conf) {
  const json_t *data = vc_at(cm, "data");
  const char *text = json_string_value(json_object_get(data, CONF_KEY));
  if (text == NULL && json_object_size(data) == 1)
    text = json_string_value(json_object_iter_value(json_object_iter((json_t *)data)));
  if (text == NULL)
    return kc_errorf(x->err, x->errlen, KC_EINVAL, "ConfigMap %s has no %s", where, CONF_KEY);
  char perr[512];
  int rc = sch_conf_parse(text, strlen(text), conf, perr, sizeof(perr));
  if (rc != 0)
    return kc_errorf(x->err, x->errlen, rc, "the configuration in ConfigMap %s: %s", where, perr);
  return 0;
}

/* The ConfigMap the flag names, else Kiln's, else Volcano's. */
static int read_conf(wctx *x, sch_conf **conf, char *where, size_t wlen) {
  static const char *const defaults[] = {"kiln-system/kiln-scheduler-configmap",
                                         "volcano-system/volcano-scheduler-configmap"};
  const char *one =
      x->a->sched_configmap && x->a->sched_configmap[0] ? x->a->sched_configmap : NULL;
  size_t n = one ? 1 : 2;
  for (size_t i = 0; i < n; i++) {
    const char *nsname = one ? one : defaults[i];
    const char *slash = strchr(nsname, '/');
    if (slash == NULL)
      return kc_errorf(x->err, x->errlen, KC_EINVAL,
                       "--scheduler-configmap %s: expected NAMESPACE/NAME", nsname);
    char ns[256];
    snprintf(ns, sizeof(ns), "%.*s", (int)(slash - nsname), nsname);
    kc_ref ref = {NULL, "v1", "configmaps", ns, slash + 1, NULL};
    vc_reply r;
    int rc = vc_call(x->conn, KC_GET, &ref, NULL, NULL, &r);
    snprintf(where, wlen, "%s", nsname);
    if (rc == 0)
      rc = conf_from_configmap(x, r.obj, nsname, conf);
    else if (rc == KC_EFORBIDDEN)
      kc_errorf(x->err, x->errlen, rc,
                "what-if needs to get ConfigMap %s, the scheduler's configuration (or pass "
                "--scheduler-conf FILE): %s",
                nsname, r.message);
    else if (rc != KC_ENOTFOUND || one || i == n - 1)
      kc_errorf(x->err, x->errlen, rc,
                "cannot read the scheduler's configuration from ConfigMap %s (name it with "
                "--scheduler-configmap NAMESPACE/NAME, or pass --scheduler-conf FILE): %s",
                nsname, r.message);
    vc_reply_clear(&r);
    if (rc != KC_ENOTFOUND || one)
      return rc;
  }
  return KC_ENOTFOUND;
}

static int load_conf(wctx *x, sch_conf **conf, char *where, size_t wlen) {
  if (x->a->sched_conf && x->a->sched_conf[0]) {
    char perr[512] = "";
    snprintf(where, wlen, "file %s", x->a->sched_conf);
    int rc = sch_conf_read_file(x->a->sched_conf, conf, perr, sizeof(perr));
    return rc ? kc_errorf(x->err, x->errlen, rc, "scheduler configuration: %s", perr) : 0;
  }
  if (x->conn == NULL) {
    snprintf(where, wlen, "Volcano's default");
    return sch_conf_default(conf);
  }
  return read_conf(x, conf, where, wlen);
}

/* ---- the answer ---- */

static int answer(wctx *x, const json_t *job, const Kiln__Snapshot *cluster,
                  const json_t *templates, const sch_conf *conf, const char *where) {
  vc_whatif_in in = {job, cluster, conf, (int64_t)time(NULL), x->a->at_capacity, templates};
  vc_whatif *w = NULL;
  double t0 = mono_s();
  int rc = vc_whatif_run(&in, &w, x->err, x->errlen);
  if (rc != 0)
    return rc;
  w->session_s = mono_s() - t0;
  if (x->a->format && strcmp(x->a->format, "json") == 0) {
    json_t *o = vc_whatif_json(w);
    json_object_set_new(o, "schedulerConfiguration", json_string(where));
    json_object_set_new(o, "jobSource", json_string(x->note ? x->note : "dry-run"));
    json_object_set_new(o, "seconds", json_real(w->session_s));
    json_dumpf(o, stdout, JSON_INDENT(2));
    fputc('\n', stdout);
    json_decref(o);
  } else {
    printf("Configuration: %s\n", where);
    if (x->note)
      printf("Job Source:   %s\n", x->note);
    vc_whatif_print(stdout, w);
  }
  vc_whatif_free(w);
  return 0;
}

/* Offline: the cluster from a snapshot file (kiln-replay's input). */
static int from_snapshot(wctx *x, const json_t *job) {
  char *buf = NULL, where[600];
  size_t len = 0;
  sch_conf *conf = NULL;
  int rc = kc_file_read(x->a->snapshot, (size_t)4 << 30, &buf, &len);
  if (rc != 0)
    return kc_errorf(x->err, x->errlen, rc, "cannot read %s", x->a->snapshot);
  Kiln__Snapshot *msg = kiln__snapshot__unpack(NULL, len, (const uint8_t *)buf);
  free(buf);
  if (msg == NULL)
    return kc_errorf(x->err, x->errlen, KC_EPARSE, "%s is not a snapshot", x->a->snapshot);
  if (x->note == NULL &&
      asprintf(&x->note, "the Job as written; the cluster from %s", x->a->snapshot) < 0)
    x->note = NULL;
  rc = load_conf(x, &conf, where, sizeof(where));
  if (rc == 0)
    rc = answer(x, job, msg, NULL, conf, where);
  sch_conf_free(conf);
  kiln__snapshot__free_unpacked(msg, NULL);
  return rc;
}

int vc_whatif_cmd(const vc_args *a, vc_conn *conn, json_t *job, char *err, size_t errlen) {
  wctx x = {a, conn, err, errlen, NULL, NULL};
  json_incref(job);
  int rc;
  if (a->snapshot && a->snapshot[0]) {
    x.conn = NULL;
    rc = from_snapshot(&x, job);
    goto out;
  }
  cluster_objs objs = {0};
  Kiln__Snapshot msg;
  sch_conf *conf = NULL;
  char where[600];
  if ((rc = dry_run(&x, &job)) == 0 &&
      (rc = read_cluster(&x, vc_str(job, "metadata.namespace"), &objs, &msg)) == 0 &&
      (rc = load_conf(&x, &conf, where, sizeof(where))) == 0 &&
      (x.conf = conf, rc = read_kind(&x, SCH_KIND_CONFIGMAP, &objs, &msg)) == 0)
    rc = answer(&x, job, &msg, objs.templates, conf, where);
  objs_free(&objs);
  sch_conf_free(conf);
out:
  json_decref(job);
  free(x.note);
  return rc;
}
