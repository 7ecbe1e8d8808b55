/* Dynamic Resource Allocation over a snapshot: see sch_dra.h. */
#include "sch_dra.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_strmap.h"
#include "sch_cel.h"
#include "sch_match.h"

/* Compiled selectors of a class or a request; err (owned) when one did not compile. */
typedef struct selset {
  sch_cel **cel;
  size_t n;
  char *err;
} selset;

typedef struct device {
  const char *driver, *pool, *name;
  int32_t node;                     /* the node of a node-local slice; -1 otherwise */
  const Kiln__DraNodeSelector *sel; /* a slice for the nodes it selects */
  bool all_nodes;
  int32_t next_on_node; /* the node's next device, -1 ends (while building) */
  sch_cel_device cel;   /* arrays owned */
} device;

typedef struct klass {
  const char *name;
  selset sel;
} klass;

/* Request selectors compiled once for every request of a class that writes the same
 * expressions (a Job's pods' claims all do), and what the class's and they answered together
 * per device: a pod tries many nodes and a device is asked about by many pods. */
typedef struct reqsel {
  selset sel;    /* err: the compile error, without whose request it is */
  int8_t *match; /* per device as sch_dra.match; NULL until asked (or over MATCH_BUDGET) */
} reqsel;

/* The bytes of per-device answers the request selectors may keep (past it they run). */
#define MATCH_BUDGET ((size_t)64 << 20)

/* A request's exactly, or one subrequest of firstAvailable (group: the request's index). */
typedef struct request {
  const Kiln__DraExactRequest *x;
  char *name; /* owned: "req" or "req/sub", the allocation result's request */
  int32_t group;
  int32_t klass; /* its DeviceClass, -1 when there is none of that name */
  int32_t sel;   /* its selectors in sch_dra.reqsels, -1 none */
  char *err;     /* owned: its selectors' compile error, named */
} request;

typedef struct claim {
  const Kiln__ResourceClaim *msg;
  int32_t index; /* in the message */
  request *reqs;
  int32_t nreqs;
  bool allocated;
  bool session; /* allocated by this session */
  bool node_local;
  int32_t node;                     /* session allocations: the node */
  const Kiln__DraNodeSelector *sel; /* existing allocations: where it may be used */
  int32_t refs;                     /* session tasks placed with it */
  sch_dra_result *results;
  int32_t *devs; /* device per result */
  int32_t nresults, cap;
} claim;

struct sch_dra {
  const sch_snapshot *snap;
  device *devs;
  int32_t ndevs;
  int32_t *node_first; /* per node, its first node-local device (while building) */
  /* Per node, its node-local devices (node_devs from node_off[n] to node_off[n + 1]), and
   * per device whether it is taken: small arrays apart from the devices, so that a node is
   * looked through in a cache line or two (a pod tries hundreds of nodes). */
  int32_t *node_off, *node_devs;
  struct devstate {
    int32_t used_by; /* the claim holding it, -1 free */
    uint32_t stamp;  /* == epoch: taken by the allocation being tried */
  } * state;         /* per device */
  int32_t *shared;   /* devices of slices not bound to one node */
  int32_t nshared;
  klass *classes;
  int32_t nclasses;
  int8_t *match; /* per class and device: 0 unknown, 1 selects, 2 does not, 3 error */
  reqsel *reqsels;
  int32_t nreqsels, capreqsels;
  size_t match_bytes; /* of the reqsels' match rows */
  claim *claims;
  int32_t nclaims;
  kc_strmap device_index, class_index, claim_index; /* -> index + 1 */
  kc_strmap reqsel_index; /* the expressions, each "<length>:<text>" -> reqsels index + 1 */
  bool *placed;           /* per task */
  /* Per task, its spec.resourceClaims resolved once (the snapshot does not change): entries
   * from task_first[t] on, each a claim index, -1 (a template that needed none) or -2 (not
   * resolvable: resolve again for the reason); task_resolved[t] once filled. */
  int32_t *task_first, *task_claim;
  bool *task_resolved;
  uint32_t epoch;
  /* The devices the allocation being tried takes. */
  struct pick {
    int32_t claim, dev;
    const char *request;
    bool admin; /* adminAccess: the device is not taken from others */
  } * picks;
  size_t npicks, cappicks;
};

/* ---- building ---- */

static void selset_close(selset *s) {
  for (size_t i = 0; i < s->n; i++)
    sch_cel_free(s->cel[i]);
  free(s->cel);
  free(s->err);
}

/* Compiles selectors; what names them ("class gpu"; NULL: nothing) goes into the error. 0 or
 * KC_ENOMEM (a compile error is kept in s->err, not returned). */
static int selset_init(selset *s, Kiln__DraDeviceSelector *const *sel, size_t n, const char *what) {
  memset(s, 0, sizeof(*s));
  if (n == 0)
    return 0;
  if ((s->cel = calloc(n, sizeof(*s->cel))) == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    const char *expr = sel[i] && sel[i]->cel ? sel[i]->cel->expression : NULL;
    char err[SCH_CEL_ERR_MAX];
    int rc = sch_cel_compile(expr ? expr : "", &s->cel[s->n], err, sizeof(err));
    if (rc == KC_ENOMEM)
      return rc;
    if (rc == 0) {
      s->n++;
      continue;
    }
    char msg[SCH_CEL_ERR_MAX + 128];
    snprintf(msg, sizeof(msg), "%s%sselector #%zu: CEL compile error: %s", what ? what : "",
             what ? ": " : "", i, err);
    return (s->err = strdup(msg)) ? 0 : KC_ENOMEM;
  }
  return 0;
}

static int add_key(kc_strmap *m, const char *key, int32_t i) {
  int rc = kc_strmap_put(m, key, (void *)(intptr_t)(i + 1), NULL);
  return rc < 0 ? rc : 0;
}

static int32_t find(const kc_strmap *m, const char *key) {
  return (int32_t)(intptr_t)kc_strmap_get(m, key) - 1;
}

static int device_key(char *buf, size_t len, const char *driver, const char *pool,
                      const char *name) {
  int n = snprintf(buf, len, "%s/%s/%s", driver ? driver : "", pool ? pool : "", name ? name : "");
  return n < 0 || (size_t)n >= len ? KC_ERANGE : 0;
}

/* The CEL view of a slice's device: its attribute and capacity maps as arrays. */
static int device_view(device *d, const Kiln__DraDevice *dev) {
  sch_cel_attr *a = dev->n_attributes ? calloc(dev->n_attributes, sizeof(*a)) : NULL;
  sch_cel_capacity *c = dev->n_capacity ? calloc(dev->n_capacity, sizeof(*c)) : NULL;
  d->cel.attrs = a;
  d->cel.capacity = c;
  if ((dev->n_attributes && !a) || (dev->n_capacity && !c))
    return KC_ENOMEM;
  for (size_t i = 0; i < dev->n_attributes; i++) {
    const Kiln__DraDeviceAttribute *v = dev->attributes[i]->value;
    sch_cel_attr *x = &a[d->cel.nattrs];
    x->name = dev->attributes[i]->key;
    if (v == NULL)
      continue;
    if (v->has_int_)
      x->kind = SCH_CEL_ATTR_INT, x->i = v->int_;
    else if (v->has_bool_)
      x->kind = SCH_CEL_ATTR_BOOL, x->b = v->bool_;
    else if (v->string)
      x->kind = SCH_CEL_ATTR_STRING, x->s = v->string;
    else if (v->version)
      x->kind = SCH_CEL_ATTR_VERSION, x->s = v->version;
    else
      continue;
    d->cel.nattrs++;
  }
  for (size_t i = 0; i < dev->n_capacity; i++) {
    const Kiln__DraDeviceCapacity *v = dev->capacity[i]->value;
    if (v && v->value)
      c[d->cel.ncapacity++] = (sch_cel_capacity){dev->capacity[i]->key, v->value};
  }
  return 0;
}

static int add_slice(sch_dra *d, const Kiln__ResourceSlice *rs) {
  const Kiln__ResourceSliceSpec *sp = rs->spec;
  if (sp == NULL)
    return 0;
  int32_t node = -1;
  if (sp->node_name) {
    node = find(&d->snap->node_index, sp->node_name); /* not sch_snapshot_node: no circle */
    if (node < 0)
      return 0; /* a node this scheduler does not see */
  } else if (!(sp->has_all_nodes && sp->all_nodes) && sp->node_selector == NULL) {
    return 0; /* perDeviceNodeSelection and the like: not supported */
  }
  for (size_t i = 0; i < sp->n_devices; i++) {
    char key[768];
    const Kiln__DraDevice *dev = sp->devices[i];
    const char *pool = sp->pool ? sp->pool->name : NULL;
    if (dev == NULL || device_key(key, sizeof(key), sp->driver, pool, dev->name) != 0 ||
        kc_strmap_has(&d->device_index, key))
      continue; /* the same device twice: the first slice wins */
    device *v = &d->devs[d->ndevs];
    *v = (device){.driver = sp->driver ? sp->driver : "",
                  .pool = pool ? pool : "",
                  .name = dev->name ? dev->name : "",
                  .node = node,
                  .sel = node < 0 ? sp->node_selector : NULL,
                  .all_nodes = node < 0 && sp->has_all_nodes && sp->all_nodes,
                  .next_on_node = -1};
    v->cel.driver = v->driver;
    int rc = device_view(v, dev);
    if (rc == 0)
      rc = add_key(&d->device_index, key, d->ndevs);
    if (rc) {
      free((void *)v->cel.attrs);
      free((void *)v->cel.capacity);
      return rc;
    }
    if (node >= 0) {
      v->next_on_node = d->node_first[node];
      d->node_first[node] = d->ndevs;
    } else {
      d->shared[d->nshared++] = d->ndevs;
    }
    d->ndevs++;
  }
  return 0;
}

/* node_off and node_devs from the nodes' lists, in the lists' order. */
static int node_devices(sch_dra *d) {
  int32_t nn = d->snap->nnodes;
  d->node_off = malloc((size_t)(nn + 1) * sizeof(*d->node_off));
  d->node_devs = malloc((size_t)(d->ndevs ? d->ndevs : 1) * sizeof(*d->node_devs));
  if (!d->node_off || !d->node_devs)
    return KC_ENOMEM;
  int32_t k = 0;
  for (int32_t n = 0; n < nn; n++) {
    d->node_off[n] = k;
    for (int32_t dev = d->node_first[n]; dev >= 0; dev = d->devs[dev].next_on_node)
      d->node_devs[k++] = dev;
  }
  d->node_off[nn] = k;
  return 0;
}

static int build_devices(sch_dra *d) {
  const Kiln__Snapshot *m = d->snap->msg;
  size_t total = 0;
  for (size_t i = 0; i < m->n_resource_slices; i++)
    if (m->resource_slices[i]->spec)
      total += m->resource_slices[i]->spec->n_devices;
  d->devs = calloc(total ? total : 1, sizeof(*d->devs));
  d->shared = calloc(total ? total : 1, sizeof(*d->shared));
  d->node_first = malloc((size_t)(d->snap->nnodes ? d->snap->nnodes : 1) * sizeof(int32_t));
  d->state = calloc(total ? total : 1, sizeof(*d->state));
  if (!d->devs || !d->shared || !d->node_first || !d->state)
    return KC_ENOMEM;
  for (int32_t i = 0; i < d->snap->nnodes; i++)
    d->node_first[i] = -1;
  for (size_t i = 0; i < total; i++)
    d->state[i].used_by = -1;
  for (size_t i = 0; i < m->n_resource_slices; i++) {
    int rc = add_slice(d, m->resource_slices[i]);
    if (rc)
      return rc;
  }
  return node_devices(d);
}

static int build_classes(sch_dra *d) {
  const Kiln__Snapshot *m = d->snap->msg;
  d->classes = calloc(m->n_device_classes ? m->n_device_classes : 1, sizeof(*d->classes));
  if (d->classes == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < m->n_device_classes; i++) {
    const Kiln__DeviceClass *dc = m->device_classes[i];
    const char *name = dc->metadata ? dc->metadata->name : NULL;
    if (name == NULL || kc_strmap_has(&d->class_index, name))
      continue;
    klass *k = &d->classes[d->nclasses];
    k->name = name;
    char what[300];
    snprintf(what, sizeof(what), "class %s", name);
    int rc = selset_init(&k->sel, dc->spec ? dc->spec->selectors : NULL,
                         dc->spec ? dc->spec->n_selectors : 0, what);
    d->nclasses++;
    if (rc == 0)
      rc = add_key(&d->class_index, name, d->nclasses - 1);
    if (rc)
      return rc;
  }
  size_t cells = (size_t)d->nclasses * (size_t)d->ndevs;
  d->match = calloc(cells ? cells : 1, 1);
  return d->match ? 0 : KC_ENOMEM;
}

/* The key of a request's selectors with its class: "<class>|", then each expression as
 * "<length>:<text>". NULL: no memory. */
static char *reqsel_key(const Kiln__DraExactRequest *x, int32_t cls) {
  size_t len = 16;
  for (size_t i = 0; i < x->n_selectors; i++) {
    const char *e = x->selectors[i] && x->selectors[i]->cel ? x->selectors[i]->cel->expression : "";
    len += strlen(e ? e : "") + 24;
  }
  char *key = malloc(len), *at = key;
  if (key)
    at += snprintf(key, len, "%d|", (int)cls);
  for (size_t i = 0; key && i < x->n_selectors; i++) {
    const char *e = x->selectors[i] && x->selectors[i]->cel ? x->selectors[i]->cel->expression : "";
    e = e ? e : "";
    at += snprintf(at, len - (size_t)(at - key), "%zu:%s", strlen(e), e);
  }
  return key;
}

/* The shared compiled selectors of x (of class cls) into *out (-1 when it has none). 0 or
 * KC_ENOMEM. */
static int reqsel_of(sch_dra *d, const Kiln__DraExactRequest *x, int32_t cls, int32_t *out) {
  *out = -1;
  if (x->n_selectors == 0)
    return 0;
  char *key = reqsel_key(x, cls);
  if (key == NULL)
    return KC_ENOMEM;
  if ((*out = find(&d->reqsel_index, key)) >= 0) {
    free(key);
    return 0;
  }
  if (d->nreqsels == d->capreqsels) {
    int32_t cap = d->capreqsels ? d->capreqsels * 2 : 8;
    reqsel *r = realloc(d->reqsels, (size_t)cap * sizeof(*r));
    if (r == NULL) {
      free(key);
      return KC_ENOMEM;
    }
    d->reqsels = r;
    d->capreqsels = cap;
  }
  reqsel *r = &d->reqsels[d->nreqsels];
  r->match = NULL;
  int rc = selset_init(&r->sel, x->selectors, x->n_selectors, NULL);
  d->nreqsels++; /* closed with the rest even when its compilation ran out of memory */
  if (rc == 0)
    rc = add_key(&d->reqsel_index, key, d->nreqsels - 1);
  free(key);
  *out = d->nreqsels - 1;
  return rc;
}

static int add_request(sch_dra *d, claim *c, const char *ckey, const Kiln__DraExactRequest *x,
                       const char *name, const char *sub, int32_t group) {
  request *r = &c->reqs[c->nreqs];
  memset(r, 0, sizeof(*r));
  r->x = x;
  r->group = group;
  r->klass = find(&d->class_index, x->device_class_name ? x->device_class_name : "");
  size_t len = strlen(name) + (sub ? strlen(sub) + 1 : 0) + 1;
  if ((r->name = malloc(len)) == NULL)
    return KC_ENOMEM;
  snprintf(r->name, len, "%s%s%s", name, sub ? "/" : "", sub ? sub : "");
  c->nreqs++;
  int rc = reqsel_of(d, x, r->klass, &r->sel);
  const char *err = r->sel >= 0 ? d->reqsels[r->sel].sel.err : NULL;
  if (rc || err == NULL)
    return rc;
  size_t n = strlen(ckey) + strlen(r->name) + strlen(err) + 32;
  if ((r->err = malloc(n)) == NULL)
    return KC_ENOMEM;
  snprintf(r->err, n, "claim %s: request %s: %s", ckey, r->name, err);
  return 0;
}

static int claim_requests(sch_dra *d, claim *c, const char *ckey) {
  const Kiln__ResourceClaimSpec *sp = c->msg->spec;
  const Kiln__DraDeviceClaim *dc = sp ? sp->devices : NULL;
  size_t n = 0;
  for (size_t i = 0; dc && i < dc->n_requests; i++)
    n += dc->requests[i]->exactly ? 1 : dc->requests[i]->n_first_available;
  if (n == 0)
    return 0;
  if ((c->reqs = calloc(n, sizeof(*c->reqs))) == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < dc->n_requests; i++) {
    const Kiln__DraDeviceRequest *rq = dc->requests[i];
    const char *name = rq->name ? rq->name : "";
    int rc = 0;
    if (rq->exactly)
      rc = add_request(d, c, ckey, rq->exactly, name, NULL, (int32_t)i);
    for (size_t k = 0; rc == 0 && !rq->exactly && k < rq->n_first_available; k++) {
      const Kiln__DraExactRequest *x = rq->first_available[k];
      rc = add_request(d, c, ckey, x, name, x->name ? x->name : "", (int32_t)i);
    }
    if (rc)
      return rc;
  }
  return 0;
}

static int add_result(claim *c, const char *req, int32_t dev, const device *v) {
  if (c->nresults == c->cap) {
    int32_t cap = c->cap ? c->cap * 2 : 4;
    sch_dra_result *r = realloc(c->results, (size_t)cap * sizeof(*r));
    if (r)
      c->results = r;
    int32_t *dv = r ? realloc(c->devs, (size_t)cap * sizeof(*dv)) : NULL;
    if (!r || !dv)
      return KC_ENOMEM;
    c->devs = dv;
    c->cap = cap;
  }
  c->results[c->nresults] = (sch_dra_result){req, v->driver, v->pool, v->name};
  c->devs[c->nresults++] = dev;
  return 0;
}

/* An allocated claim holds the devices of its results. */
static void existing_allocation(sch_dra *d, claim *c, int32_t ci) {
  const Kiln__DraAllocationResult *a = c->msg->status ? c->msg->status->allocation : NULL;
  if (a == NULL)
    return;
  c->allocated = true;
  c->sel = a->node_selector;
  for (size_t i = 0; a->devices && i < a->devices->n_results; i++) {
    const Kiln__DraRequestResult *r = a->devices->results[i];
    char key[768];
    if (device_key(key, sizeof(key), r->driver, r->pool, r->device) != 0)
      continue;
    int32_t dev = find(&d->device_index, key);
    if (dev >= 0)
      d->state[dev].used_by = ci;
  }
}

static int build_claims(sch_dra *d) {
  const Kiln__Snapshot *m = d->snap->msg;
  d->claims = calloc(m->n_resource_claims ? m->n_resource_claims : 1, sizeof(*d->claims));
  if (d->claims == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < m->n_resource_claims; i++) {
    const Kiln__ResourceClaim *rc = m->resource_claims[i];
    const Kiln__ObjectMeta *md = rc->metadata;
    char key[600];
    if (!md || !md->name ||
        snprintf(key, sizeof(key), "%s/%s", md->namespace_ ? md->namespace_ : "", md->name) >=
            (int)sizeof(key))
      continue;
    if (kc_strmap_has(&d->claim_index, key))
      continue;
    int32_t ci = d->nclaims++;
    claim *c = &d->claims[ci];
    c->msg = rc;
    c->index = (int32_t)i;
    c->node = -1;
    int err = add_key(&d->claim_index, key, ci);
    if (err == 0)
      err = claim_requests(d, c, key);
    if (err)
      return err;
    existing_allocation(d, c, ci);
  }
  return 0;
}

static void claim_close(claim *c) {
  for (int32_t i = 0; i < c->nreqs; i++) {
    free(c->reqs[i].name);
    free(c->reqs[i].err);
  }
  free(c->reqs);
  free(c->results);
  free(c->devs);
}

void sch_dra_free(sch_dra *d) {
  if (d == NULL)
    return;
  for (int32_t i = 0; i < d->ndevs; i++) {
    free((void *)d->devs[i].cel.attrs);
    free((void *)d->devs[i].cel.capacity);
  }
  for (int32_t i = 0; i < d->nclasses; i++)
    selset_close(&d->classes[i].sel);
  for (int32_t i = 0; i < d->nclaims; i++)
    claim_close(&d->claims[i]);
  for (int32_t i = 0; i < d->nreqsels; i++) {
    selset_close(&d->reqsels[i].sel);
    free(d->reqsels[i].match);
  }
  kc_strmap_close(&d->device_index, NULL);
  kc_strmap_close(&d->reqsel_index, NULL);
  kc_strmap_close(&d->class_index, NULL);
  kc_strmap_close(&d->claim_index, NULL);
  free(d->devs);
  free(d->node_first);
  free(d->node_off);
  free(d->node_devs);
  free(d->state);
  free(d->shared);
  free(d->classes);
  free(d->match);
  free(d->claims);
  free(d->reqsels);
  free(d->placed);
  free(d->task_first);
  free(d->task_claim);
  free(d->task_resolved);
  free(d->picks);
  free(d);
}

/* Room for each task's resolved claims (filled when the task is first tried). */
static int build_task_claims(sch_dra *d) {
  size_t nt = (size_t)(d->snap->ntasks ? d->snap->ntasks : 1), total = 0;
  d->task_first = malloc(nt * sizeof(*d->task_first));
  d->task_resolved = calloc(nt, sizeof(*d->task_resolved));
  if (!d->task_first || !d->task_resolved)
    return KC_ENOMEM;
  for (int32_t i = 0; i < d->snap->ntasks; i++) {
    const Kiln__Pod *p = d->snap->tasks[i].pod;
    d->task_first[i] = (int32_t)total;
    total += p ? p->n_resource_claims : 0;
  }
  d->task_claim = malloc((total ? total : 1) * sizeof(*d->task_claim));
  return d->task_claim ? 0 : KC_ENOMEM;
}

static int in_flight(sch_dra *d);

int sch_dra_new(const sch_snapshot *snap, sch_dra **out) {
  *out = NULL;
  sch_dra *d = calloc(1, sizeof(*d));
  if (d == NULL)
    return KC_ENOMEM;
  d->snap = snap;
  kc_strmap_init(&d->device_index, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&d->class_index, KC_STRMAP_BORROW_KEYS);
  kc_strmap_init(&d->claim_index, KC_STRMAP_COPY_KEYS);
  kc_strmap_init(&d->reqsel_index, KC_STRMAP_COPY_KEYS);
  int rc = build_devices(d);
  if (rc == 0)
    rc = build_classes(d);
  if (rc == 0)
    rc = build_claims(d);
  if (rc == 0 && (d->placed = calloc((size_t)(snap->ntasks ? snap->ntasks : 1), 1)) == NULL)
    rc = KC_ENOMEM;
  if (rc == 0)
    rc = build_task_claims(d);
  if (rc == 0)
    rc = in_flight(d);
  if (rc) {
    sch_dra_free(d);
    return rc;
  }
  *out = d;
  return 0;
}

/* ---- a task's claims ---- */

static bool owned_by(const Kiln__ResourceClaim *c, const char *uid) {
  const Kiln__ObjectMeta *md = c->metadata;
  for (size_t i = 0; md && uid && i < md->n_owner_references; i++)
    if (md->owner_references[i]->uid && strcmp(md->owner_references[i]->uid, uid) == 0)
      return true;
  return false;
}

/* The claim of the pod's i-th spec.resourceClaims entry (resourceclaim.Name): *ci its
 * index, or -1 when a template needed none. SCH_FIT, or SCH_UNRESOLVABLE with the reason. */
static int resolve(const sch_dra *d, const Kiln__Pod *p, size_t i, int32_t *ci, char *reason,
                   size_t len) {
  const Kiln__PodResourceClaim *pc = p->resource_claims[i];
  const char *name =
      pc->resource_claim_name && pc->resource_claim_name[0] ? pc->resource_claim_name : NULL;
  bool from_template = name == NULL;
  *ci = -1;
  if (from_template) {
    bool listed = false;
    for (size_t k = 0; k < p->n_resource_claim_statuses && !listed; k++) {
      const Kiln__PodResourceClaimStatus *st = p->resource_claim_statuses[k];
      if (st->name && pc->name && strcmp(st->name, pc->name) == 0) {
        listed = true;
        name =
            st->resource_claim_name && st->resource_claim_name[0] ? st->resource_claim_name : NULL;
      }
    }
    if (listed && name == NULL)
      return SCH_FIT; /* the template asked for nothing */
    if (name == NULL) {
      snprintf(reason, len, "pod %s/%s: ResourceClaim not created yet", p->namespace_, p->name);
      return SCH_UNRESOLVABLE;
    }
  }
  char key[600];
  snprintf(key, sizeof(key), "%s/%s", p->namespace_ ? p->namespace_ : "", name);
  *ci = find(&d->claim_index, key);
  if (*ci < 0) {
    snprintf(reason, len, "resourceclaim \"%s\" not found", name);
    return SCH_UNRESOLVABLE;
  }
  const Kiln__ResourceClaim *c = d->claims[*ci].msg;
  if (c->metadata && c->metadata->deletion_timestamp) {
    snprintf(reason, len, "resourceclaim \"%s\" is being deleted", name);
    return SCH_UNRESOLVABLE;
  }
  if (from_template && !owned_by(c, p->uid)) {
    snprintf(reason, len, "ResourceClaim %s was not created for pod %s/%s (pod is not owner)", key,
             p->namespace_, p->name);
    return SCH_UNRESOLVABLE;
  }
  return SCH_FIT;
}

/* Resolves every entry of task ti once into d->task_claim. */
static void resolve_task(sch_dra *d, int32_t ti) {
  const Kiln__Pod *p = d->snap->tasks[ti].pod;
  int32_t *out = &d->task_claim[d->task_first[ti]];
  char reason[8]; /* told when asked again */
  for (size_t i = 0; i < p->n_resource_claims; i++) {
    int32_t ci;
    out[i] = resolve(d, p, i, &ci, reason, sizeof(reason)) == SCH_FIT ? ci : -2;
  }
  d->task_resolved[ti] = true;
}

/* resolve() for t's i-th entry, from what was resolved before when it was (tasks of the
 * snapshot, once tried). */
static int resolved(const sch_dra *d, const sch_task *t, size_t i, int32_t *ci, char *reason,
                    size_t len) {
  int32_t ti = (int32_t)(t - d->snap->tasks);
  if (ti < 0 || ti >= d->snap->ntasks || !d->task_resolved[ti])
    return resolve(d, t->pod, i, ci, reason, len);
  *ci = d->task_claim[d->task_first[ti] + (int32_t)i];
  return *ci == -2 ? resolve(d, t->pod, i, ci, reason, len) : SCH_FIT;
}

/* Whether an allocated claim may be used on node. */
static bool usable_on(const sch_dra *d, const claim *c, int32_t node) {
  if (c->node >= 0) /* allocated here: by the session, or in flight */
    return !c->node_local || c->node == node;
  if (c->sel == NULL || c->sel->n_node_selector_terms == 0)
    return true;
  const Kiln__Node *n = d->snap->nodes[node].node;
  for (size_t i = 0; n && i < c->sel->n_node_selector_terms; i++)
    if (sch_match_term(c->sel->node_selector_terms[i], n))
      return true;
  return false;
}

static bool device_on(const sch_dra *d, const device *v, int32_t node) {
  if (v->node >= 0)
    return v->node == node;
  if (v->all_nodes)
    return true;
  const Kiln__Node *n = d->snap->nodes[node].node;
  for (size_t i = 0; n && v->sel && i < v->sel->n_node_selector_terms; i++)
    if (sch_match_term(v->sel->node_selector_terms[i], n))
      return true;
  return false;
}

/* ---- allocation ---- */

/* Whose selectors run, for a runtime error's message ("class C", "claim ns/c: request r"):
 * formatted only then (a message per device tried was most of the allocation's time). */
typedef struct who {
  const char *cls;            /* a class's */
  const Kiln__ObjectMeta *md; /* else a claim's request */
  const char *request;
} who;

/* Whether the selectors of s take device v: 1, 0, or -1 with the runtime error in reason. */
static int selects(const selset *s, const device *v, const who *w, char *reason, size_t len) {
  for (size_t i = 0; i < s->n; i++) {
    bool m = false;
    char err[SCH_CEL_ERR_MAX];
    if (sch_cel_eval(s->cel[i], &v->cel, &m, err, sizeof(err)) != 0) {
      if (w->cls)
        snprintf(reason, len, "class %s: selector #%zu: CEL runtime error: %s", w->cls, i, err);
      else
        snprintf(reason, len, "claim %s/%s: request %s: selector #%zu: CEL runtime error: %s",
                 w->md->namespace_ ? w->md->namespace_ : "", w->md->name, w->request, i, err);
      return -1;
    }
    if (!m)
      return 0;
  }
  return 1;
}

static int class_selects(sch_dra *d, int32_t k, int32_t dev, char *reason, size_t len) {
  int8_t *m = &d->match[(size_t)k * (size_t)d->ndevs + (size_t)dev];
  if (*m == 0 || *m == 3) { /* an error is told again, for this pod */
    who w = {.cls = d->classes[k].name};
    int r = selects(&d->classes[k].sel, &d->devs[dev], &w, reason, len);
    *m = r > 0 ? 1 : r == 0 ? 2 : 3;
    return r;
  }
  return *m == 1;
}

static int pick(sch_dra *d, int32_t ci, int32_t dev, const char *req, bool admin) {
  if (d->npicks == d->cappicks) {
    size_t cap = d->cappicks ? d->cappicks * 2 : 16;
    struct pick *p = realloc(d->picks, cap * sizeof(*p));
    if (p == NULL)
      return KC_ENOMEM;
    d->picks = p;
    d->cappicks = cap;
  }
  d->picks[d->npicks++] = (struct pick){ci, dev, req, admin};
  d->state[dev].stamp = d->epoch;
  return 0;
}

/* Undoes the picks after the first `from`. */
static void unpick(sch_dra *d, size_t from) {
  while (d->npicks > from)
    d->state[d->picks[--d->npicks].dev].stamp = 0;
}

/* The i-th candidate device on node: node-local ones first, then the shared ones. */
static int32_t candidate(const sch_dra *d, int32_t node, int32_t *cursor, bool *local) {
  if (*local) {
    int32_t k = *cursor < 0 ? d->node_off[node] : *cursor + 1;
    if (k < d->node_off[node + 1]) {
      *cursor = k;
      return d->node_devs[k];
    }
    *local = false;
    *cursor = -1;
  }
  for (int32_t k = *cursor + 1; k < d->nshared; k++)
    if (device_on(d, &d->devs[d->shared[k]], node)) {
      *cursor = k;
      return d->shared[k];
    }
  return -1;
}

int64_t sch_dra_class_devices(sch_dra *d, const char *cls, int32_t node) {
  int32_t k = find(&d->class_index, cls);
  if (k < 0 || d->classes[k].sel.err || node < 0 || node >= d->snap->nnodes)
    return 0;
  char reason[SCH_REASON_MAX];
  int64_t n = 0;
  int32_t cursor = -1;
  bool local = true;
  for (int32_t dev; (dev = candidate(d, node, &cursor, &local)) >= 0;)
    n += class_selects(d, k, dev, reason, sizeof(reason)) > 0;
  return n;
}

/* The per-device answers of request selectors rs, made when first asked; NULL past the
 * budget or out of memory (the selectors then run each time). */
static int8_t *reqsel_row(sch_dra *d, reqsel *rs) {
  if (rs->match == NULL && d->ndevs > 0 && d->match_bytes + (size_t)d->ndevs <= MATCH_BUDGET &&
      (rs->match = calloc((size_t)d->ndevs, 1)) != NULL)
    d->match_bytes += (size_t)d->ndevs;
  return rs->match;
}

/* Whether request r can take device dev: 1, 0, or -1 with reason. */
static int request_takes(sch_dra *d, const Kiln__ObjectMeta *md, const request *r, int32_t dev,
                         char *reason, size_t len) {
  if (r->sel < 0)
    return class_selects(d, r->klass, dev, reason, len);
  reqsel *rs = &d->reqsels[r->sel];
  int8_t *row = reqsel_row(d, rs);
  if (row && (row[dev] == 1 || row[dev] == 2))
    return row[dev] == 1;
  /* An error is told again, naming this claim. */
  int m = class_selects(d, r->klass, dev, reason, len);
  who w = {.md = md, .request = r->name};
  if (m > 0)
    m = selects(&rs->sel, &d->devs[dev], &w, reason, len);
  if (row)
    row[dev] = m > 0 ? 1 : m == 0 ? 2 : 3;
  return m;
}

/* One request (or subrequest) on node: SCH_FIT with its devices picked, SCH_UNSCHEDULABLE
 * (the reason names the class), SCH_UNRESOLVABLE, or KC_ENOMEM. */
static int alloc_request(sch_dra *d, int32_t ci, const request *r, int32_t node, char *reason,
                         size_t len) {
  const char *cls = r->x->device_class_name ? r->x->device_class_name : "";
  int32_t k = r->klass;
  if (k < 0) {
    snprintf(reason, len, "request %s: device class %s does not exist", r->name, cls);
    return SCH_UNRESOLVABLE;
  }
  const char *err = d->classes[k].sel.err ? d->classes[k].sel.err : r->err;
  if (err) {
    snprintf(reason, len, "%s", err);
    return SCH_UNRESOLVABLE;
  }
  bool all = r->x->allocation_mode && strcmp(r->x->allocation_mode, "All") == 0;
  int64_t want = all ? INT64_MAX : r->x->has_count ? r->x->count : 1;
  bool admin = r->x->has_admin_access && r->x->admin_access;
  int64_t got = 0;
  bool busy = false;
  int32_t cursor = -1;
  bool local = true;
  for (int32_t dev; got < want && (dev = candidate(d, node, &cursor, &local)) >= 0;) {
    bool taken = (d->state[dev].used_by >= 0 && !admin) || d->state[dev].stamp == d->epoch;
    if (taken && !all)
      continue; /* it cannot count: no need to run the selectors */
    int m = request_takes(d, d->claims[ci].msg->metadata, r, dev, reason, len);
    if (m < 0)
      return SCH_UNRESOLVABLE;
    if (m == 0)
      continue;
    if (taken) {
      busy = true;
      continue;
    }
    int rc = pick(d, ci, dev, r->name, admin);
    if (rc)
      return rc;
    got++;
  }
  if ((all && (busy || got == 0)) || (!all && got < want) || want <= 0) {
    snprintf(reason, len, "have no free device of class %s", cls);
    return SCH_UNSCHEDULABLE;
  }
  return SCH_FIT;
}

/* Every request of an unallocated claim; a request with firstAvailable takes the first of
 * its subrequests that can be met. */
static int alloc_claim(sch_dra *d, int32_t ci, int32_t node, char *reason, size_t len) {
  const claim *c = &d->claims[ci];
  for (int32_t i = 0; i < c->nreqs;) {
    int32_t group = c->reqs[i].group, end = i;
    while (end < c->nreqs && c->reqs[end].group == group)
      end++;
    int rc = SCH_UNSCHEDULABLE;
    for (int32_t s = i; s < end && rc != SCH_FIT; s++) {
      size_t mark = d->npicks;
      rc = alloc_request(d, ci, &c->reqs[s], node, reason, len);
      if (rc < 0 || rc == SCH_UNRESOLVABLE)
        return rc;
      if (rc != SCH_FIT)
        unpick(d, mark);
    }
    if (rc != SCH_FIT)
      return rc;
    i = end;
  }
  return SCH_FIT;
}

/* Tries t's claims on node, leaving the devices it would take in d->picks. */
static int try_task(sch_dra *d, const sch_task *t, int32_t node, char *reason, size_t len) {
  const Kiln__Pod *p = t->pod;
  unpick(d, 0);
  if (++d->epoch == 0)
    d->epoch = 1;
  int32_t ti = (int32_t)(t - d->snap->tasks);
  if (ti >= 0 && ti < d->snap->ntasks && !d->task_resolved[ti])
    resolve_task(d, ti);
  for (size_t i = 0; i < p->n_resource_claims; i++) {
    int32_t ci;
    int rc = resolved(d, t, i, &ci, reason, len);
    if (rc != SCH_FIT || ci < 0) {
      if (rc != SCH_FIT)
        return rc;
      continue;
    }
    claim *c = &d->claims[ci];
    if (c->allocated) {
      if (!usable_on(d, c, node)) {
        snprintf(reason, len, "resourceclaim not available on the node");
        return SCH_UNRESOLVABLE;
      }
      continue;
    }
    bool seen = false; /* the same claim twice in one pod: allocated once */
    for (size_t k = 0; k < d->npicks && !seen; k++)
      seen = d->picks[k].claim == ci;
    if (!seen && (rc = alloc_claim(d, ci, node, reason, len)) != SCH_FIT)
      return rc;
  }
  return SCH_FIT;
}

int sch_dra_filter(sch_dra *d, const sch_task *t, int32_t node, char *reason, size_t len) {
  if (!sch_dra_task_has_claims(t))
    return SCH_FIT;
  int rc = try_task(d, t, node, reason, len);
  unpick(d, 0);
  return rc;
}

/* The claim indexes of t (at most max into out); unresolved entries are left out. */
static size_t task_claims(const sch_dra *d, const sch_task *t, int32_t *out, size_t max) {
  size_t n = 0;
  char reason[8];
  for (size_t i = 0; t->pod && i < t->pod->n_resource_claims && n < max; i++) {
    int32_t ci;
    if (resolved(d, t, i, &ci, reason, sizeof(reason)) != SCH_FIT || ci < 0)
      continue;
    bool dup = false;
    for (size_t k = 0; k < n; k++)
      dup |= out[k] == ci;
    if (!dup)
      out[n++] = ci;
  }
  return n;
}

#define MAX_POD_CLAIMS 128

/* The devices d->picks holds become their claims', allocated on node (by this session when
 * session is set). 0 or KC_ENOMEM. */
static int commit_picks(sch_dra *d, int32_t node, bool session) {
  int rc = 0;
  for (size_t i = 0; i < d->npicks && rc == 0; i++) {
    struct pick *pk = &d->picks[i];
    claim *c = &d->claims[pk->claim];
    device *v = &d->devs[pk->dev];
    if ((rc = add_result(c, pk->request, pk->dev, v)) != 0)
      break; /* out of memory: the claim keeps what it got so far */
    if (!pk->admin)
      d->state[pk->dev].used_by = pk->claim;
    c->allocated = true;
    c->session = session;
    c->node = node;
    c->node_local |= !v->all_nodes;
  }
  unpick(d, 0);
  return rc;
}

int sch_dra_place(sch_dra *d, const sch_task *t, int32_t node) {
  int32_t ti = (int32_t)(t - d->snap->tasks);
  if (!sch_dra_task_has_claims(t) || ti < 0 || ti >= d->snap->ntasks || d->placed[ti])
    return 0;
  char reason[SCH_REASON_MAX];
  int rc = try_task(d, t, node, reason, sizeof(reason));
  if (rc != SCH_FIT) {
    unpick(d, 0);
    return rc < 0 ? rc : KC_EINVAL;
  }
  if ((rc = commit_picks(d, node, true)) != 0)
    return rc;
  int32_t cl[MAX_POD_CLAIMS];
  size_t n = task_claims(d, t, cl, MAX_POD_CLAIMS);
  for (size_t i = 0; i < n; i++)
    d->claims[cl[i]].refs++;
  d->placed[ti] = true;
  return 0;
}

/* A pod on a node whose claims show no allocation yet: the shell writes a pod's claims
 * before it binds it, so those writes are in flight (the pod is assumed) and the watch has
 * not brought them back. Its devices are counted as taken, chosen again the same way on its
 * node, so that the next session does not give them to another pod meanwhile. */
static int in_flight(sch_dra *d) {
  char reason[SCH_REASON_MAX];
  for (int32_t i = 0; i < d->snap->ntasks; i++) {
    const sch_task *t = &d->snap->tasks[i];
    sch_task_status st = t->status;
    if (t->node < 0 || !sch_dra_task_has_claims(t) ||
        (st != SCH_TASK_BINDING && st != SCH_TASK_BOUND && st != SCH_TASK_RUNNING &&
         st != SCH_TASK_ALLOCATED))
      continue;
    if (try_task(d, t, t->node, reason, sizeof(reason)) == SCH_FIT) {
      int rc = commit_picks(d, t->node, false);
      if (rc)
        return rc;
    }
    unpick(d, 0);
  }
  return 0;
}

void sch_dra_unplace(sch_dra *d, const sch_task *t) {
  int32_t ti = (int32_t)(t - d->snap->tasks);
  if (ti < 0 || ti >= d->snap->ntasks || !d->placed[ti])
    return;
  d->placed[ti] = false;
  int32_t cl[MAX_POD_CLAIMS];
  size_t n = task_claims(d, t, cl, MAX_POD_CLAIMS);
  for (size_t i = 0; i < n; i++) {
    claim *c = &d->claims[cl[i]];
    if (--c->refs > 0 || !c->session)
      continue;
    for (int32_t k = 0; k < c->nresults; k++)
      if (d->state[c->devs[k]].used_by == cl[i])
        d->state[c->devs[k]].used_by = -1;
    c->nresults = 0;
    c->allocated = c->session = c->node_local = false;
    c->node = -1;
  }
}

static bool reserved_for(const Kiln__ResourceClaim *c, const char *uid) {
  const Kiln__ResourceClaimStatus *st = c->status;
  for (size_t i = 0; st && uid && i < st->n_reserved_for; i++)
    if (st->reserved_for[i]->uid && strcmp(st->reserved_for[i]->uid, uid) == 0)
      return true;
  return false;
}

size_t sch_dra_writes(const sch_dra *d, const sch_task *t, sch_dra_write *out, size_t max) {
  int32_t cl[MAX_POD_CLAIMS];
  size_t n = task_claims(d, t, cl, MAX_POD_CLAIMS), w = 0;
  for (size_t i = 0; i < n && w < max; i++) {
    const claim *c = &d->claims[cl[i]];
    bool reserved = reserved_for(c->msg, t->pod->uid);
    if (!c->allocated || (!c->session && reserved))
      continue;
    out[w++] = (sch_dra_write){.claim = c->index,
                               .allocate = c->session,
                               .node_local = c->node_local,
                               .node = c->node,
                               .results = c->results,
                               .nresults = c->nresults,
                               .reserved = reserved};
  }
  return w;
}
