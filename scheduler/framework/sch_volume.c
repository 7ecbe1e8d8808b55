/* Kubernetes' volume predicates over a snapshot: see sch_volume.h. */
#include "sch_volume.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_quantity.h"
#include "kc_str.h"
#include "kc_strmap.h"
#include "sch_match.h"

#define MAX_POD_CLAIMS     64
#define NO_PROVISIONER     "kubernetes.io/no-provisioner"
#define ANN_BIND_COMPLETED "pv.kubernetes.io/bind-completed"
#define ANN_SELECTED_NODE  "volume.kubernetes.io/selected-node"
#define ANN_BETA_CLASS     "volume.beta.kubernetes.io/storage-class"
#define ANY_NODE           (-1) /* volume.node: its affinity is matched on each node */
#define NO_NODE            (-2) /* volume.node: its host is no node's */

typedef struct claim {
  const Kiln__PersistentVolumeClaim *msg;
  int32_t index; /* in the message */
  const char *ns, *name, *klass;
  int32_t sc;          /* class, -1 */
  int32_t klass_id;    /* klass's name id (sch_vol.names) */
  int32_t mode_id;     /* spec.volumeMode's (Filesystem when unset) */
  unsigned modes;      /* accessModes: the known ones as bits */
  bool odd_modes;      /* and one that is not */
  bool has_volume;     /* spec.volumeName is set */
  bool bound;          /* and pv.kubernetes.io/bind-completed (isPVCFullyBound) */
  int32_t volume;      /* the volume of spec.volumeName, -1 when missing */
  bool has_request;    /* resources.requests.storage */
  kc_quantity request; /* 0 without one */
  bool rwop;           /* accessModes has ReadWriteOncePod */
  int32_t selected;    /* the selected-node annotation's node, -1 none, -2 a node not known */
  /* Session state. */
  int32_t pv;    /* the volume a placement assumed for it, -1 */
  int32_t prov;  /* the node a placement provisions it on, -1 */
  bool session;  /* assumed by this session: the shell writes it */
  int32_t refs;  /* placed session tasks using it */
  int32_t users; /* scheduled pods using it (ReadWriteOncePod) */
} claim;

typedef struct volume {
  const Kiln__PersistentVolume *msg;
  int32_t index;             /* in the message */
  int32_t klass_id, mode_id; /* as the claim's */
  unsigned modes;            /* accessModes: the known ones as bits */
  bool has_cap;
  kc_quantity cap;
  bool deleting;  /* metadata.deletionTimestamp is set */
  bool reserved;  /* spec.claimRef is set */
  bool available; /* phase Available and no claimRef */
  int32_t node;   /* the one node its affinity allows, ANY_NODE (see it), NO_NODE (none) */
  int32_t taken;  /* the claim a placement assumed it for, -1 */
  uint32_t stamp; /* == epoch: chosen by the match being tried */
} volume;

typedef struct sclass {
  const Kiln__StorageClass *msg;
  bool wffc;
} sclass;

struct pick {
  int32_t claim, pv, node;
};

struct sch_vol {
  const sch_snapshot *snap;
  claim *claims;
  int32_t nclaims;
  volume *vols;
  int32_t nvols;
  sclass *classes;
  int32_t nclasses;
  kc_strmap claim_index, vol_index, class_index, driver_index; /* -> index + 1 */
  /* Class names and volume modes -> id + 1: the comparisons made for each volume on each
   * node tried are of integers held in the volume, not of strings behind its message. */
  kc_strmap names;
  const Kiln__CsiNode **csinode; /* per node */
  bool *placed;                  /* per task */
  /* The volumes FindMatchingVolume looks through on a node: an available volume whose node
   * affinity is kubernetes.io/hostname In [one host], a host one node has, is in that node's
   * list (node_vols from node_off[n] to node_off[n + 1]), one whose host no node has in no
   * list, every other one in any_vols; both in index order. A local volume per node would
   * otherwise cost every node's filter a pass over all of them. */
  int32_t *node_off, *node_vols, *any_vols;
  int32_t nany;
  uint32_t epoch;
  /* The claims of the task last asked about (the prefilter's, kept for the filters). */
  int32_t memo_task;
  int memo_rc;
  char memo_reason[SCH_REASON_MAX];
  int32_t memo_claims[MAX_POD_CLAIMS];
  size_t memo_n;
  /* What the match being tried takes. */
  struct pick picks[MAX_POD_CLAIMS];
  size_t npicks;
};

static const char *const reasons[SCH_VOL_REASONS] = {
    "node(s) didn't match PersistentVolume's node affinity",
    "node(s) didn't find available persistent volumes to bind",
    "node(s) did not have enough free storage",
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",
    "node(s) had no available volume zone",
    "node(s) exceed max volume count",
    "node(s) had no available disk",
    ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
     "in-use by another pod"),
};

const char *sch_vol_reason(unsigned bit) {
  for (int i = 0; i < SCH_VOL_REASONS; i++)
    if (bit == 1u << i)
      return reasons[i];
  return "";
}

bool sch_vol_reason_is(const char *s) {
  static const char *const pre[] = {"pod has unbound immediate PersistentVolumeClaims",
                                    "persistentvolumeclaim \"", "waiting for ephemeral volume",
                                    "PVC ", "storageclass.storage.k8s.io \""};
  for (int i = 0; s && i < SCH_VOL_REASONS; i++)
    if (strcmp(s, reasons[i]) == 0)
      return true;
  for (size_t i = 0; s && i < sizeof(pre) / sizeof(pre[0]); i++)
    if (strncmp(s, pre[i], strlen(pre[i])) == 0)
      return true;
  return false;
}

/* ---- small helpers ---- */

static int add_key(kc_strmap *m, const char *key, int32_t i) {
  int rc = kc_strmap_put(m, key, (void *)(intptr_t)(i + 1), NULL);
  return rc < 0 ? rc : 0;
}

static int32_t find(const kc_strmap *m, const char *key) {
  return (int32_t)(intptr_t)kc_strmap_get(m, key) - 1;
}

/* Every map<string, string> entry protobuf-c generates has this layout. */
typedef struct str_entry {
  ProtobufCMessage base;
  char *key;
  char *value;
} str_entry;

static const char *map_get(const void *entries, size_t n, const char *key) {
  str_entry *const *e = entries;
  for (size_t i = 0; i < n; i++)
    if (kc_str_eq(e[i]->key, key))
      return e[i]->value ? e[i]->value : "";
  return NULL;
}

static const char *annotation(const Kiln__ObjectMeta *md, const char *key) {
  return md ? map_get(md->annotations, md->n_annotations, key) : NULL;
}

static const char *meta_label(const void *md, const char *key) {
  const Kiln__ObjectMeta *m = md;
  return m ? map_get(m->labels, m->n_labels, key) : NULL;
}

static const char *node_label(const void *node, const char *key) {
  return sch_node_label(node, key);
}

static bool has_string(char *const *arr, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (kc_str_eq(arr[i], s))
      return true;
  return false;
}

static const char *str_or(const char *s, const char *def) {
  return s && s[0] ? s : def;
}

static const char *const access_modes[] = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany",
                                           "ReadWriteOncePod"};

/* The known access modes of arr as bits; *odd is set when one is none of them. */
static unsigned mode_bits(char *const *arr, size_t n, bool *odd) {
  unsigned bits = 0;
  *odd = false;
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    while (k < sizeof(access_modes) / sizeof(access_modes[0]) &&
           !kc_str_eq(arr[i], access_modes[k]))
      k++;
    if (k < sizeof(access_modes) / sizeof(access_modes[0]))
      bits |= 1u << k;
    else
      *odd = true;
  }
  return bits;
}

/* The id of name s (equal strings, equal ids); KC_ENOMEM. */
static int32_t name_id(sch_vol *v, const char *s) {
  int32_t id = find(&v->names, s);
  if (id >= 0)
    return id;
  id = (int32_t)kc_strmap_len(&v->names);
  return add_key(&v->names, s, id) < 0 ? KC_ENOMEM : id;
}

static bool quantity_of(const void *entries, size_t n, kc_quantity *q) {
  const char *s = map_get(entries, n, "storage");
  return s && kc_quantity_parse(s, q, NULL) == 0;
}

/* ---- building ---- */

static int build_classes(sch_vol *v) {
  const Kiln__Snapshot *m = v->snap->msg;
  v->classes = calloc(m->n_storage_classes ? m->n_storage_classes : 1, sizeof(*v->classes));
  if (v->classes == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < m->n_storage_classes; i++) {
    const Kiln__StorageClass *sc = m->storage_classes[i];
    const char *name = sc->metadata ? sc->metadata->name : NULL;
    if (name == NULL || kc_strmap_has(&v->class_index, name))
      continue;
    v->classes[v->nclasses] =
        (sclass){sc, kc_str_eq(sc->volume_binding_mode, "WaitForFirstConsumer")};
    int rc = add_key(&v->class_index, name, v->nclasses++);
    if (rc)
      return rc;
  }
  for (size_t i = 0; i < m->n_csi_drivers; i++) {
    const Kiln__CsiDriver *d = m->csi_drivers[i];
    bool cap = d->spec && d->spec->has_storage_capacity && d->spec->storage_capacity;
    int rc = d->metadata && d->metadata->name
                 ? add_key(&v->driver_index, d->metadata->name, cap ? 1 : 0)
                 : 0;
    if (rc)
      return rc;
  }
  return 0;
}

static int build_volumes(sch_vol *v) {
  const Kiln__Snapshot *m = v->snap->msg;
  v->vols = calloc(m->n_persistent_volumes ? m->n_persistent_volumes : 1, sizeof(*v->vols));
  if (v->vols == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < m->n_persistent_volumes; i++) {
    const Kiln__PersistentVolume *pv = m->persistent_volumes[i];
    const Kiln__ObjectMeta *md = pv->metadata;
    if (!md || !md->name || !pv->spec || kc_strmap_has(&v->vol_index, md->name))
      continue;
    volume *x = &v->vols[v->nvols];
    *x = (volume){.msg = pv, .index = (int32_t)i, .node = ANY_NODE, .taken = -1};
    const char *beta = annotation(md, ANN_BETA_CLASS);
    const char *klass = beta ? beta : str_or(pv->spec->storage_class_name, "");
    x->has_cap = quantity_of(pv->spec->capacity, pv->spec->n_capacity, &x->cap);
    x->available = pv->status && kc_str_eq(pv->status->phase, "Available") &&
                   pv->spec->claim_ref == NULL && md->deletion_timestamp == NULL;
    x->deleting = md->deletion_timestamp != NULL;
    x->reserved = pv->spec->claim_ref != NULL;
    bool odd;
    x->modes = mode_bits(pv->spec->access_modes, pv->spec->n_access_modes, &odd);
    x->klass_id = name_id(v, klass);
    x->mode_id = name_id(v, str_or(pv->spec->volume_mode, "Filesystem"));
    int rc = x->klass_id < 0 || x->mode_id < 0 ? KC_ENOMEM : 0;
    if (rc == 0)
      rc = add_key(&v->vol_index, md->name, v->nvols++);
    if (rc)
      return rc;
  }
  return 0;
}

static int claim_fields(sch_vol *v, claim *c) {
  const Kiln__PersistentVolumeClaimSpec *sp = c->msg->spec;
  const Kiln__ObjectMeta *md = c->msg->metadata;
  const char *beta = annotation(md, ANN_BETA_CLASS);
  c->klass = beta ? beta : sp ? str_or(sp->storage_class_name, "") : "";
  c->sc = find(&v->class_index, c->klass);
  c->has_volume = sp && sp->volume_name && sp->volume_name[0];
  c->bound = c->has_volume && annotation(md, ANN_BIND_COMPLETED) != NULL;
  c->volume = c->has_volume ? find(&v->vol_index, sp->volume_name) : -1;
  c->has_request = sp && sp->resources &&
                   quantity_of(sp->resources->requests, sp->resources->n_requests, &c->request);
  if (!c->has_request)
    memset(&c->request, 0, sizeof(c->request));
  c->rwop = sp && has_string(sp->access_modes, sp->n_access_modes, "ReadWriteOncePod");
  const char *sel = annotation(md, ANN_SELECTED_NODE);
  c->selected = sel ? find(&v->snap->node_index, sel) : -1;
  if (sel && c->selected < 0)
    c->selected = -2;
  c->pv = c->prov = -1;
  c->modes = sp ? mode_bits(sp->access_modes, sp->n_access_modes, &c->odd_modes) : 0;
  c->klass_id = name_id(v, c->klass);
  c->mode_id = name_id(v, sp ? str_or(sp->volume_mode, "Filesystem") : "Filesystem");
  return c->klass_id < 0 || c->mode_id < 0 ? KC_ENOMEM : 0;
}

static int build_claims(sch_vol *v) {
  const Kiln__Snapshot *m = v->snap->msg;
  size_t n = m->n_persistent_volume_claims;
  v->claims = calloc(n ? n : 1, sizeof(*v->claims));
  if (v->claims == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    const Kiln__PersistentVolumeClaim *pvc = m->persistent_volume_claims[i];
    const Kiln__ObjectMeta *md = pvc->metadata;
    char key[600];
    if (!md || !md->name ||
        snprintf(key, sizeof(key), "%s/%s", md->namespace_ ? md->namespace_ : "", md->name) >=
            (int)sizeof(key) ||
        kc_strmap_has(&v->claim_index, key))
      continue;
    claim *c = &v->claims[v->nclaims];
    c->msg = pvc;
    c->index = (int32_t)i;
    c->ns = md->namespace_ ? md->namespace_ : "";
    c->name = md->name;
    int rc = claim_fields(v, c);
    if (rc == 0)
      rc = add_key(&v->claim_index, key, v->nclaims++);
    if (rc)
      return rc;
  }
  return 0;
}

static int build_csinodes(sch_vol *v) {
  const Kiln__Snapshot *m = v->snap->msg;
  v->csinode = calloc((size_t)(v->snap->nnodes ? v->snap->nnodes : 1), sizeof(*v->csinode));
  if (v->csinode == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < m->n_csi_nodes; i++) {
    const Kiln__CsiNode *cn = m->csi_nodes[i];
    int32_t node =
        cn->metadata && cn->metadata->name ? find(&v->snap->node_index, cn->metadata->name) : -1;
    if (node >= 0)
      v->csinode[node] = cn;
  }
  return 0;
}

void sch_vol_free(sch_vol *v) {
  if (v == NULL)
    return;
  kc_strmap_close(&v->claim_index, NULL);
  kc_strmap_close(&v->vol_index, NULL);
  kc_strmap_close(&v->class_index, NULL);
  kc_strmap_close(&v->driver_index, NULL);
  kc_strmap_close(&v->names, NULL);
  free(v->claims);
  free(v->vols);
  free(v->classes);
  free(v->csinode);
  free(v->placed);
  free(v->node_off);
  free(v->node_vols);
  free(v->any_vols);
  free(v);
}

#define HOSTNAME "kubernetes.io/hostname"

/* The node a volume's affinity pins it to, resolved once: kubernetes.io/hostname In [one
 * host] allows only the node of that hostname label (NO_NODE when no node has it), so
 * vol_on_node compares indices instead of matching the term on each node tried. Any other
 * affinity, or a host several nodes share, is ANY_NODE. hosts: the nodes' hostname labels ->
 * node index + 1 (-1 for a host of several nodes). */
static int32_t pinned_node(const volume *x, const kc_strmap *hosts) {
  const Kiln__VolumeNodeAffinity *na = x->msg->spec->node_affinity;
  const Kiln__VolNodeSelector *req = na ? na->required : NULL;
  if (!req || req->n_node_selector_terms != 1)
    return ANY_NODE;
  const Kiln__NodeSelectorTerm *t = req->node_selector_terms[0];
  if (t->n_match_fields || t->n_match_expressions != 1)
    return ANY_NODE;
  const Kiln__NodeSelectorRequirement *r = t->match_expressions[0];
  if (!kc_str_eq(r->key, HOSTNAME) || !kc_str_eq(r->operator_, "In") || r->n_values != 1)
    return ANY_NODE;
  intptr_t got = (intptr_t)kc_strmap_get(hosts, r->values[0]);
  return got > 0 ? (int32_t)(got - 1) : got == 0 ? NO_NODE : ANY_NODE;
}

static int index_hosts(const sch_snapshot *s, kc_strmap *hosts) {
  for (int32_t i = 0; i < s->nnodes; i++) {
    const char *h = s->nodes[i].node ? sch_node_label(s->nodes[i].node, HOSTNAME) : NULL;
    if (h == NULL)
      continue;
    void *val = kc_strmap_has(hosts, h) ? (void *)(intptr_t)-1 : (void *)(intptr_t)(i + 1);
    if (kc_strmap_put(hosts, h, val, NULL) < 0)
      return KC_ENOMEM;
  }
  return 0;
}

static int build_node_volumes(sch_vol *v) {
  int32_t nn = v->snap->nnodes, *at = calloc((size_t)(v->nvols ? v->nvols : 1), sizeof(*at));
  v->node_off = calloc((size_t)nn + 2, sizeof(*v->node_off));
  v->node_vols = malloc((size_t)(v->nvols ? v->nvols : 1) * sizeof(*v->node_vols));
  v->any_vols = malloc((size_t)(v->nvols ? v->nvols : 1) * sizeof(*v->any_vols));
  kc_strmap hosts;
  kc_strmap_init(&hosts, KC_STRMAP_BORROW_KEYS);
  int rc =
      at && v->node_off && v->node_vols && v->any_vols ? index_hosts(v->snap, &hosts) : KC_ENOMEM;
  for (int32_t i = 0; rc == 0 && i < v->nvols; i++) {
    volume *x = &v->vols[i];
    x->node = pinned_node(x, &hosts);
    at[i] = x->available ? x->node : ANY_NODE; /* a claim's own volume is looked for anywhere */
    if (at[i] >= 0)
      v->node_off[at[i] + 2]++;
    else if (at[i] == ANY_NODE)
      v->any_vols[v->nany++] = i;
  }
  for (int32_t n = 0; rc == 0 && n < nn; n++) /* counts to starts, shifted by one */
    v->node_off[n + 2] += v->node_off[n + 1];
  for (int32_t i = 0; rc == 0 && i < v->nvols; i++)
    if (at[i] >= 0)
      v->node_vols[v->node_off[at[i] + 1]++] = i;
  kc_strmap_close(&hosts, NULL);
  free(at);
  return rc;
}

static int in_flight(sch_vol *v);

int sch_vol_new(const sch_snapshot *snap, sch_vol **out) {
  *out = NULL;
  sch_vol *v = calloc(1, sizeof(*v));
  if (v == NULL)
    return KC_ENOMEM;
  v->snap = snap;
  v->memo_task = -1;
  kc_strmap_init(&v->claim_index, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&v->vol_index, KC_STRMAP_BORROW_KEYS);
  kc_strmap_init(&v->class_index, KC_STRMAP_BORROW_KEYS);
  kc_strmap_init(&v->driver_index, KC_STRMAP_BORROW_KEYS);
  kc_strmap_init(&v->names, KC_STRMAP_BORROW_KEYS);
  int rc = build_classes(v);
  if (rc == 0)
    rc = build_volumes(v);
  if (rc == 0)
    rc = build_claims(v);
  if (rc == 0)
    rc = build_csinodes(v);
  if (rc == 0)
    rc = build_node_volumes(v);
  if (rc == 0 && (v->placed = calloc((size_t)(snap->ntasks ? snap->ntasks : 1), 1)) == NULL)
    rc = KC_ENOMEM;
  if (rc == 0)
    rc = in_flight(v);
  if (rc) {
    sch_vol_free(v);
    return rc;
  }
  *out = v;
  return 0;
}

/* ---- a pod's claims ---- */

static bool controlled_by(const Kiln__ObjectMeta *md, const char *uid) {
  for (size_t i = 0; md && uid && i < md->n_owner_references; i++) {
    const Kiln__OwnerReference *o = md->owner_references[i];
    if (o->has_controller && o->controller && kc_str_eq(o->uid, uid))
      return true;
  }
  return false;
}

/* The claim of volume pv of pod p: its index, or -1 with the first error in reason (when
 * *err is 0, which it then becomes 1). */
static int32_t volume_claim(const sch_vol *v, const Kiln__Pod *p, const Kiln__PodVolume *pv,
                            char *reason, size_t len, int *err) {
  char name[600], key[1200];
  bool eph = pv->persistent_volume_claim == NULL;
  if (eph)
    snprintf(name, sizeof(name), "%s-%s", p->name, pv->name);
  else
    snprintf(name, sizeof(name), "%s", str_or(pv->persistent_volume_claim->claim_name, ""));
  snprintf(key, sizeof(key), "%s/%s", p->namespace_ ? p->namespace_ : "", name);
  int32_t ci = find(&v->claim_index, key);
  const claim *c = ci >= 0 ? &v->claims[ci] : NULL;
  char buf[2048]; /* room for key: the reason buffer takes what fits */
  if (c == NULL && eph)
    snprintf(buf, sizeof(buf),
             "waiting for ephemeral volume controller to create the persistentvolumeclaim \"%s\"",
             name);
  else if (c == NULL)
    snprintf(buf, sizeof(buf), "persistentvolumeclaim \"%s\" not found", name);
  else if (c->msg->status && kc_str_eq(c->msg->status->phase, "Lost"))
    snprintf(buf, sizeof(buf),
             "persistentvolumeclaim \"%s\" bound to non-existent persistentvolume \"%s\"", name,
             c->msg->spec ? str_or(c->msg->spec->volume_name, "") : "");
  else if (c->msg->metadata->deletion_timestamp)
    snprintf(buf, sizeof(buf), "persistentvolumeclaim \"%s\" is being deleted", name);
  else if (eph && !controlled_by(c->msg->metadata, p->uid))
    snprintf(buf, sizeof(buf), "PVC %s was not created for pod %s/%s (pod is not owner)", key,
             p->namespace_, p->name);
  else
    return ci;
  if (*err == 0 && len > 0) { /* cut to fit: snprintf here would warn of the cut */
    size_t k = strnlen(buf, len - 1);
    memcpy(reason, buf, k);
    reason[k] = '\0';
  }
  *err = 1;
  return -1;
}

/* The claims of p (each once) into out; the first error, if any, in reason. Returns how
 * many; *err is set when a claim could not be resolved. */
static size_t pod_claims(const sch_vol *v, const Kiln__Pod *p, int32_t *out, char *reason,
                         size_t len, int *err) {
  size_t n = 0;
  *err = 0;
  for (size_t i = 0; p && i < p->n_volumes && n < MAX_POD_CLAIMS; i++) {
    const Kiln__PodVolume *pv = p->volumes[i];
    if (!pv->persistent_volume_claim && !pv->ephemeral)
      continue;
    int32_t ci = volume_claim(v, p, pv, reason, len, err);
    bool dup = ci < 0;
    for (size_t k = 0; k < n && !dup; k++)
      dup = out[k] == ci;
    if (!dup)
      out[n++] = ci;
  }
  return n;
}

/* Whether an unbound claim is one the pod waits for (Immediate binding, or pre-bound). */
static int immediate(const sch_vol *v, const claim *c, char *reason, size_t len) {
  if (c->klass[0] == '\0')
    return 1;
  if (c->sc < 0) {
    snprintf(reason, len, "storageclass.storage.k8s.io \"%s\" not found", c->klass);
    return -1;
  }
  return !v->classes[c->sc].wffc || c->has_volume;
}

/* Resolves t's claims into the memo (once per task in a row). */
static void memo(sch_vol *v, const sch_task *t) {
  int32_t ti = (int32_t)(t - v->snap->tasks);
  if (v->memo_task == ti)
    return;
  v->memo_task = ti;
  int err = 0;
  v->memo_reason[0] = '\0';
  v->memo_n = pod_claims(v, t->pod, v->memo_claims, v->memo_reason, sizeof(v->memo_reason), &err);
  v->memo_rc = err ? SCH_UNRESOLVABLE : SCH_FIT;
  bool waits = false;
  for (size_t i = 0; i < v->memo_n && v->memo_rc == SCH_FIT; i++) {
    const claim *c = &v->claims[v->memo_claims[i]];
    if (c->bound)
      continue;
    int im = immediate(v, c, v->memo_reason, sizeof(v->memo_reason));
    if (im < 0)
      v->memo_rc = SCH_UNRESOLVABLE;
    waits |= im > 0;
  }
  if (v->memo_rc == SCH_FIT && waits) {
    snprintf(v->memo_reason, sizeof(v->memo_reason),
             "pod has unbound immediate PersistentVolumeClaims");
    v->memo_rc = SCH_UNRESOLVABLE;
  }
}

int sch_vol_prefilter(sch_vol *v, const sch_task *t, char *reason, size_t len) {
  if (!sch_vol_task_has_volumes(t))
    return SCH_FIT;
  memo(v, t);
  if (v->memo_rc != SCH_FIT)
    snprintf(reason, len, "%s", v->memo_reason);
  return v->memo_rc;
}

/* ---- VolumeBinding's matching ---- */

/* CheckNodeAffinity: the volume's required node affinity (none: every node). */
static bool vol_on_node(const sch_vol *v, int32_t pv, int32_t node) {
  if (v->vols[pv].node != ANY_NODE)
    return v->vols[pv].node == node;
  const Kiln__VolumeNodeAffinity *na = v->vols[pv].msg->spec->node_affinity;
  const Kiln__VolNodeSelector *req = na ? na->required : NULL;
  if (req == NULL)
    return true;
  const Kiln__Node *n = v->snap->nodes[node].node;
  for (size_t i = 0; n && i < req->n_node_selector_terms; i++)
    if (sch_match_term(req->node_selector_terms[i], n))
      return true;
  return false;
}

static bool bound_to_claim(const volume *x, const claim *c) {
  if (!x->reserved) /* the usual case, decided without following the message */
    return false;
  const Kiln__VolObjectReference *r = x->msg->spec->claim_ref;
  return r && kc_str_eq(r->name, c->name) && kc_str_eq(str_or(r->namespace_, ""), c->ns) &&
         (!r->uid || !r->uid[0] || kc_str_eq(r->uid, c->msg->metadata->uid));
}

static bool access_modes_fit(const claim *c, const volume *x) {
  if (!c->odd_modes)
    return (c->modes & ~x->modes) == 0;
  const Kiln__PersistentVolumeClaimSpec *sp = c->msg->spec;
  for (size_t i = 0; sp && i < sp->n_access_modes; i++)
    if (!has_string(x->msg->spec->access_modes, x->msg->spec->n_access_modes, sp->access_modes[i]))
      return false;
  return true;
}

/* The checks of FindMatchingVolume a volume of another claim's cannot pass. */
static bool plain_fit(const claim *c, const volume *x) {
  if (c->mode_id != x->mode_id)
    return false;
  if (c->has_request && (!x->has_cap || kc_quantity_cmp(&x->cap, &c->request) < 0))
    return false;
  return !x->deleting;
}

/* The next volume of node's list and any_vols, in index order: -1 ends. */
static int32_t next_volume(const sch_vol *v, int32_t node, int32_t *a, int32_t *b) {
  int32_t na = v->node_off[node + 1], x = *a < na ? v->node_vols[*a] : INT32_MAX;
  int32_t y = *b < v->nany ? v->any_vols[*b] : INT32_MAX;
  if (x == INT32_MAX && y == INT32_MAX)
    return -1;
  return x < y ? (++*a, x) : (++*b, y);
}

/* FindMatchingVolume on node: the volume bound to the claim already, or the smallest
 * available one of its class that fits; -1 none. The volumes of the other nodes' lists are
 * not looked at: they are not here, and none is taken by this claim (it would have its pv). */
static int32_t best_volume(const sch_vol *v, int32_t ci, int32_t node) {
  const claim *c = &v->claims[ci];
  const Kiln__LabelSelector *sel = c->msg->spec ? c->msg->spec->selector : NULL;
  int32_t best = -1, a = v->node_off[node], b = 0;
  for (int32_t i; (i = next_volume(v, node, &a, &b)) >= 0;) {
    const volume *x = &v->vols[i];
    if (x->stamp == v->epoch || (x->taken >= 0 && x->taken != ci) || !plain_fit(c, x))
      continue;
    bool here = vol_on_node(v, i, node);
    if (x->taken == ci || bound_to_claim(x, c))
      return here ? i : -1;
    if (!x->available || x->klass_id != c->klass_id || !here || !access_modes_fit(c, x) ||
        (sel && !sch_selector_matches(sel, meta_label, x->msg->metadata)))
      continue;
    if (best < 0 || kc_quantity_cmp(&x->cap, &v->vols[best].cap) < 0)
      best = i;
  }
  return best;
}

/* MatchTopologySelectorTerms: no term allows every node. */
static bool topology_allows(const Kiln__StorageClass *sc, const Kiln__Node *n) {
  if (sc->n_allowed_topologies == 0)
    return true;
  for (size_t i = 0; i < sc->n_allowed_topologies; i++) {
    const Kiln__VolTopologyTerm *t = sc->allowed_topologies[i];
    bool all = true;
    for (size_t k = 0; k < t->n_match_label_expressions && all; k++) {
      const Kiln__VolTopologyRequirement *r = t->match_label_expressions[k];
      const char *have = sch_node_label(n, str_or(r->key, ""));
      all = have && has_string(r->values, r->n_values, have);
    }
    if (all)
      return true;
  }
  return false;
}

/* hasEnoughCapacity: a CSI driver with spec.storageCapacity needs a CSIStorageCapacity of the
 * class that reaches the node with room for the request. */
static bool capacity_allows(const sch_vol *v, const claim *c, const Kiln__StorageClass *sc,
                            const Kiln__Node *n) {
  if (!c->has_request || find(&v->driver_index, sc->provisioner) != 1)
    return true;
  const Kiln__Snapshot *m = v->snap->msg;
  for (size_t i = 0; i < m->n_csi_storage_capacities; i++) {
    const Kiln__CsiStorageCapacity *cap = m->csi_storage_capacities[i];
    const char *limit = cap->maximum_volume_size ? cap->maximum_volume_size : cap->capacity;
    kc_quantity q;
    if (!kc_str_eq(cap->storage_class_name, sc->metadata->name) || !limit ||
        kc_quantity_parse(limit, &q, NULL) != 0 || kc_quantity_cmp(&q, &c->request) < 0)
      continue;
    if (cap->node_topology && sch_selector_matches(cap->node_topology, node_label, n))
      return true;
  }
  return false;
}

/* checkVolumeProvisions for one claim on node: 0, SCH_VOL_BIND_CONFLICT or
 * SCH_VOL_NO_SPACE. */
static unsigned provisionable(const sch_vol *v, const claim *c, int32_t node) {
  if (c->sc < 0)
    return SCH_VOL_BIND_CONFLICT;
  const Kiln__StorageClass *sc = v->classes[c->sc].msg;
  const char *prov = str_or(sc->provisioner, NO_PROVISIONER);
  const Kiln__Node *n = v->snap->nodes[node].node;
  if (kc_str_eq(prov, NO_PROVISIONER) || !n || !topology_allows(sc, n))
    return SCH_VOL_BIND_CONFLICT;
  return capacity_allows(v, c, sc, n) ? 0 : SCH_VOL_NO_SPACE;
}

static void sort_by_request(const sch_vol *v, int32_t *cl, size_t n) {
  for (size_t i = 1; i < n; i++) {
    int32_t x = cl[i];
    size_t k = i;
    while (k > 0 && kc_quantity_cmp(&v->claims[cl[k - 1]].request, &v->claims[x].request) > 0) {
      cl[k] = cl[k - 1];
      k--;
    }
    cl[k] = x;
  }
}

/* Where the pod's claims stand on node before matching: the reasons of the bound ones,
 * the claims to match and those to provision. */
static unsigned sort_claims(const sch_vol *v, const int32_t *cl, size_t n, int32_t node,
                            int32_t *match, size_t *nm, int32_t *prov, size_t *np) {
  unsigned bits = 0;
  for (size_t i = 0; i < n; i++) {
    const claim *c = &v->claims[cl[i]];
    if (c->bound) {
      if (c->volume < 0)
        bits |= SCH_VOL_PV_NOT_EXIST;
      else if (!vol_on_node(v, c->volume, node))
        bits |= SCH_VOL_NODE_CONFLICT;
      continue;
    }
    if (c->pv >= 0) { /* another placed pod of the claim chose its volume */
      if (!vol_on_node(v, c->pv, node))
        bits |= SCH_VOL_BIND_CONFLICT;
      continue;
    }
    int32_t sel = c->prov >= 0 ? c->prov : c->selected;
    if (sel == -1)
      match[(*nm)++] = cl[i];
    else if (sel == node)
      prov[(*np)++] = cl[i];
    else
      bits |= SCH_VOL_BIND_CONFLICT;
  }
  return bits;
}

static void add_pick(sch_vol *v, int32_t ci, int32_t pv, int32_t node) {
  if (v->npicks < MAX_POD_CLAIMS)
    v->picks[v->npicks++] = (struct pick){ci, pv, node};
  if (pv >= 0)
    v->vols[pv].stamp = v->epoch;
}

/* FindPodVolumes on node for claims cl: the reason bits, the choices left in v->picks. */
static unsigned try_binding(sch_vol *v, const int32_t *cl, size_t n, int32_t node) {
  int32_t match[MAX_POD_CLAIMS], prov[MAX_POD_CLAIMS];
  size_t nm = 0, np = 0;
  v->npicks = 0;
  if (++v->epoch == 0)
    v->epoch = 1;
  unsigned bits = sort_claims(v, cl, n, node, match, &nm, prov, &np);
  if (bits & SCH_VOL_BIND_CONFLICT)
    return bits;
  sort_by_request(v, match, nm);
  for (size_t i = 0; i < nm; i++) {
    int32_t pv = best_volume(v, match[i], node);
    if (pv < 0)
      prov[np++] = match[i];
    else
      add_pick(v, match[i], pv, -1);
  }
  for (size_t i = 0; i < np; i++) {
    unsigned why = provisionable(v, &v->claims[prov[i]], node);
    if (why)
      return bits | why;
    add_pick(v, prov[i], -1, node);
  }
  return bits;
}

/* ---- VolumeZone ---- */

static const char *const zone_labels[] = {
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
};
#define NZONE_LABELS 4

/* Whether have is one of the "__"-separated values of want (LabelZonesToSet). */
static bool zone_has(const char *want, const char *have) {
  size_t n = strlen(have);
  for (const char *p = want;;) {
    const char *end = strstr(p, "__");
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, have, n) == 0)
      return true;
    if (!end)
      return false;
    p = end + 2;
  }
}

static unsigned zone_check(const sch_vol *v, const int32_t *cl, size_t n, int32_t node) {
  size_t with = 0; /* the claims with a volume come first: most have none, the node's labels */
  while (with < n && (!v->claims[cl[with]].has_volume || v->claims[cl[with]].volume < 0))
    with++;
  if (with == n)
    return 0;
  const Kiln__Node *nd = v->snap->nodes[node].node;
  bool any = false;
  for (int k = 0; nd && k < NZONE_LABELS && !any; k++)
    any = sch_node_label(nd, zone_labels[k]) != NULL;
  if (!any)
    return 0;
  for (size_t i = with; i < n; i++) {
    const claim *c = &v->claims[cl[i]];
    if (!c->has_volume || c->volume < 0)
      continue;
    const Kiln__ObjectMeta *md = v->vols[c->volume].msg->metadata;
    for (int k = 0; k < NZONE_LABELS; k++) {
      const char *want = meta_label(md, zone_labels[k]);
      if (want == NULL)
        continue;
      const char *have = sch_node_label(nd, zone_labels[k]);
      if (have == NULL && k >= 2)
        have = sch_node_label(nd, zone_labels[k - 2]);
      if (have == NULL || !zone_has(want, have))
        return SCH_VOL_ZONE_CONFLICT;
    }
  }
  return 0;
}

/* ---- NodeVolumeLimits ---- */

#define KEY_MAX 400

/* The CSI driver of claim ci (NULL: none) and its volume's unique name into key: the bound
 * volume's driver and handle, or the class's provisioner and the claim. */
static const char *claim_csi(const sch_vol *v, int32_t ci, char *key, size_t len) {
  const claim *c = &v->claims[ci];
  if (c->has_volume && c->volume >= 0) {
    const Kiln__VolCsiSource *csi = v->vols[c->volume].msg->spec->csi;
    if (!csi || !csi->driver)
      return NULL;
    snprintf(key, len, "%s/%s", csi->driver, str_or(csi->volume_handle, ""));
    return csi->driver;
  }
  const char *prov = c->sc >= 0 ? v->classes[c->sc].msg->provisioner : NULL;
  if (!prov || !prov[0])
    return NULL;
  snprintf(key, len, "%s/%s/%s", prov, c->ns, c->name);
  return prov;
}

/* The node's limit for driver (CSINode spec.drivers[].allocatable.count), -1 none. */
static int64_t node_limit(const Kiln__CsiNode *cn, const char *driver) {
  for (size_t i = 0; cn && cn->spec && i < cn->spec->n_drivers; i++) {
    const Kiln__CsiNodeDriver *d = cn->spec->drivers[i];
    if (kc_str_eq(d->name, driver) && d->allocatable && d->allocatable->has_count)
      return d->allocatable->count;
  }
  return -1;
}

/* The CSI volumes of the other pods on node, each once: unique name -> driver. */
static int attached(const sch_vol *v, int32_t self, int32_t node, kc_strmap *m) {
  const sch_snapshot *snap = v->snap;
  for (int32_t ti = snap->nodes[node].task_head; ti >= 0; ti = snap->tasks[ti].node_next) {
    if (ti == self || !sch_vol_task_has_volumes(&snap->tasks[ti]))
      continue;
    int32_t cl[MAX_POD_CLAIMS];
    char r[8], key[KEY_MAX];
    int err;
    size_t n = pod_claims(v, snap->tasks[ti].pod, cl, r, sizeof(r), &err);
    for (size_t i = 0; i < n; i++) {
      const char *drv = claim_csi(v, cl[i], key, sizeof(key));
      if (drv && !kc_strmap_has(m, key) && kc_strmap_put(m, key, (void *)drv, NULL) < 0)
        return KC_ENOMEM;
    }
  }
  return 0;
}

static int64_t count_driver(const kc_strmap *m, const char *driver) {
  int64_t n = 0;
  size_t pos = 0;
  for (kc_strmap_slot *s; (s = kc_strmap_next(m, &pos)) != NULL;)
    n += kc_str_eq(s->val, driver);
  return n;
}

static unsigned limits_check(const sch_vol *v, int32_t self, const int32_t *cl, size_t n,
                             int32_t node) {
  const Kiln__CsiNode *cn = v->csinode[node];
  const char *drv[MAX_POD_CLAIMS];
  char keys[MAX_POD_CLAIMS][KEY_MAX];
  size_t nnew = 0;
  for (size_t i = 0; cn && i < n; i++)
    if ((drv[nnew] = claim_csi(v, cl[i], keys[nnew], KEY_MAX)) != NULL &&
        node_limit(cn, drv[nnew]) >= 0)
      nnew++;
  if (nnew == 0)
    return 0;
  kc_strmap m;
  kc_strmap_init(&m, KC_STRMAP_COPY_KEYS);
  unsigned bits = 0;
  if (attached(v, self, node, &m) == 0) {
    for (size_t i = 0; i < nnew && !bits; i++) {
      int64_t want = 0;
      for (size_t k = 0; k < nnew; k++)
        want += kc_str_eq(drv[k], drv[i]) && !kc_strmap_has(&m, keys[k]);
      if (count_driver(&m, drv[i]) + want > node_limit(cn, drv[i]))
        bits = SCH_VOL_MAX_COUNT;
    }
  }
  kc_strmap_close(&m, NULL);
  return bits;
}

/* ---- VolumeRestrictions ---- */

static bool rbd_overlap(const Kiln__PodRbdSource *a, const Kiln__PodRbdSource *b) {
  for (size_t i = 0; i < a->n_monitors; i++)
    if (has_string(b->monitors, b->n_monitors, a->monitors[i]))
      return true;
  return false;
}

/* isVolumeConflict: the same disk, written by one of the two. */
static bool disk_conflict(const Kiln__PodVolume *a, const Kiln__PodVolume *b) {
  if (a->gce_persistent_disk && b->gce_persistent_disk)
    return kc_str_eq(a->gce_persistent_disk->pd_name, b->gce_persistent_disk->pd_name) &&
           !(a->gce_persistent_disk->read_only && b->gce_persistent_disk->read_only);
  if (a->aws_elastic_block_store && b->aws_elastic_block_store)
    return kc_str_eq(a->aws_elastic_block_store->volume_id, b->aws_elastic_block_store->volume_id);
  if (a->iscsi && b->iscsi)
    return kc_str_eq(a->iscsi->iqn, b->iscsi->iqn) && !(a->iscsi->read_only && b->iscsi->read_only);
  if (a->rbd && b->rbd)
    return rbd_overlap(a->rbd, b->rbd) && kc_str_eq(a->rbd->pool, b->rbd->pool) &&
           kc_str_eq(a->rbd->image, b->rbd->image) && !(a->rbd->read_only && b->rbd->read_only);
  return false;
}

static bool pods_conflict(const Kiln__Pod *p, const Kiln__Pod *q) {
  for (size_t i = 0; i < p->n_volumes; i++)
    for (size_t k = 0; k < q->n_volumes; k++)
      if (disk_conflict(p->volumes[i], q->volumes[k]))
        return true;
  return false;
}

static bool has_disk(const Kiln__Pod *p) {
  for (size_t i = 0; i < p->n_volumes; i++) {
    const Kiln__PodVolume *x = p->volumes[i];
    if (x->gce_persistent_disk || x->aws_elastic_block_store || x->iscsi || x->rbd)
      return true;
  }
  return false;
}

static unsigned restrictions_check(const sch_vol *v, const sch_task *t, const int32_t *cl, size_t n,
                                   int32_t node) {
  for (size_t i = 0; i < n; i++)
    if (v->claims[cl[i]].rwop && v->claims[cl[i]].users > 0)
      return SCH_VOL_RWOP_CONFLICT;
  if (!has_disk(t->pod))
    return 0;
  const sch_snapshot *snap = v->snap;
  for (int32_t ti = snap->nodes[node].task_head; ti >= 0; ti = snap->tasks[ti].node_next)
    if (&snap->tasks[ti] != t && pods_conflict(t->pod, snap->tasks[ti].pod))
      return SCH_VOL_DISK_CONFLICT;
  return 0;
}

/* ---- the filter and the session's assumptions ---- */

#define BINDING_BITS                                                                               \
  (SCH_VOL_NODE_CONFLICT | SCH_VOL_BIND_CONFLICT | SCH_VOL_NO_SPACE | SCH_VOL_PV_NOT_EXIST)

unsigned sch_vol_filter(sch_vol *v, const sch_task *t, int32_t node, const sch_vol_checks *ck,
                        bool *unresolvable) {
  *unresolvable = false;
  if (!sch_vol_task_has_volumes(t))
    return 0;
  memo(v, t);
  int32_t self = (int32_t)(t - v->snap->tasks);
  const int32_t *cl = v->memo_claims;
  size_t n = v->memo_n;
  unsigned bits = 0;
  if (ck->limits)
    bits |= limits_check(v, self, cl, n, node);
  if (ck->zone)
    bits |= zone_check(v, cl, n, node);
  if (ck->restrictions)
    bits |= restrictions_check(v, t, cl, n, node);
  if (ck->binding && v->memo_rc == SCH_FIT) {
    bits |= try_binding(v, cl, n, node);
    v->npicks = 0;
  }
  *unresolvable = (bits & (BINDING_BITS | SCH_VOL_ZONE_CONFLICT)) != 0;
  return bits;
}

/* The choices of the last match become the claims' assumptions. */
static void commit(sch_vol *v, bool session) {
  for (size_t i = 0; i < v->npicks; i++) {
    const struct pick *pk = &v->picks[i];
    claim *c = &v->claims[pk->claim];
    if (pk->pv >= 0) {
      c->pv = pk->pv;
      v->vols[pk->pv].taken = pk->claim;
    } else {
      c->prov = pk->node;
    }
    c->session = session;
  }
  v->npicks = 0;
}

int sch_vol_place(sch_vol *v, const sch_task *t, int32_t node) {
  int32_t ti = (int32_t)(t - v->snap->tasks);
  if (!sch_vol_task_has_volumes(t) || ti < 0 || ti >= v->snap->ntasks || v->placed[ti])
    return 0;
  memo(v, t);
  if (v->memo_rc != SCH_FIT)
    return KC_EINVAL;
  int32_t cl[MAX_POD_CLAIMS];
  size_t n = v->memo_n;
  memcpy(cl, v->memo_claims, n * sizeof(*cl));
  if (try_binding(v, cl, n, node) != 0) {
    v->npicks = 0;
    return KC_EINVAL;
  }
  commit(v, true);
  for (size_t i = 0; i < n; i++) {
    v->claims[cl[i]].refs++;
    v->claims[cl[i]].users++;
  }
  v->placed[ti] = true;
  return 0;
}

void sch_vol_unplace(sch_vol *v, const sch_task *t) {
  int32_t ti = (int32_t)(t - v->snap->tasks);
  if (ti < 0 || ti >= v->snap->ntasks || !v->placed[ti])
    return;
  v->placed[ti] = false;
  memo(v, t);
  for (size_t i = 0; i < v->memo_n; i++) {
    claim *c = &v->claims[v->memo_claims[i]];
    c->users--;
    if (--c->refs > 0 || !c->session)
      continue;
    if (c->pv >= 0)
      v->vols[c->pv].taken = -1;
    c->pv = c->prov = -1;
    c->session = false;
  }
}

static bool holds(sch_task_status st) {
  return st == SCH_TASK_ALLOCATED || st == SCH_TASK_BINDING || st == SCH_TASK_BOUND ||
         st == SCH_TASK_RUNNING;
}

/* The pods on nodes: their claims count their users, and those assumed by an earlier
 * session whose claims are not bound yet (the shell's writes in flight) keep the volumes
 * they would take on their node, chosen again the same way. */
static int in_flight(sch_vol *v) {
  for (int32_t i = 0; i < v->snap->ntasks; i++) {
    const sch_task *t = &v->snap->tasks[i];
    if (t->node < 0 || !sch_vol_task_has_volumes(t) || t->status == SCH_TASK_SUCCEEDED ||
        t->status == SCH_TASK_FAILED)
      continue;
    int32_t cl[MAX_POD_CLAIMS];
    char r[8];
    int err;
    size_t n = pod_claims(v, t->pod, cl, r, sizeof(r), &err);
    bool unbound = false;
    for (size_t k = 0; k < n; k++) {
      v->claims[cl[k]].users++;
      unbound |= !v->claims[cl[k]].bound;
    }
    if (unbound && holds(t->status) && try_binding(v, cl, n, t->node) == 0)
      commit(v, false);
    v->npicks = 0;
  }
  return 0;
}

size_t sch_vol_writes(const sch_vol *v, const sch_task *t, sch_vol_write *out, size_t max) {
  int32_t cl[MAX_POD_CLAIMS];
  char r[8];
  int err;
  size_t n = pod_claims(v, t->pod, cl, r, sizeof(r), &err), w = 0;
  for (size_t i = 0; i < n && w < max; i++) {
    const claim *c = &v->claims[cl[i]];
    if (c->session)
      out[w++] = (sch_vol_write){c->index, c->pv >= 0 ? v->vols[c->pv].index : -1, c->prov};
  }
  return w;
}

void sch_vol_unbound_names(const sch_vol *v, const sch_task *t, char *buf, size_t len) {
  int32_t cl[MAX_POD_CLAIMS];
  char r[8];
  int err;
  size_t n = pod_claims(v, t->pod, cl, r, sizeof(r), &err), off = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && off < len; i++) {
    const claim *c = &v->claims[cl[i]];
    if (c->bound || c->pv >= 0 || c->prov >= 0)
      continue;
    int k = snprintf(buf + off, len - off, "%s%s", off ? ", " : "", c->name);
    off += k > 0 ? (size_t)k : 0;
  }
}
