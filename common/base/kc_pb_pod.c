/* Kubernetes protobuf Pods and Nodes to the scheduling views of pod.proto, the same views
 * kc_codec_pod.c makes from JSON (the shared rules are in kc_codec_int.h and kc_podres.h).
 *
 * The decoded strings are moved, not copied, into the view (protobuf-c allocates each with
 * malloc, as kc_msg_free expects). The affinity terms, spread constraints, node selector and
 * node labels have the same field names in k8s.proto as in pod.proto, so they are moved
 * field by field from the descriptors (conv_field); the rest is written out by hand. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_codec.h"
#include "kc_codec_int.h"
#include "kc_error.h"
#include "kc_pb.h"
#include "kc_podres.h"
#include "kc_quantity.h"

#define MEMBER(type, msg, off) (*(type *)((uint8_t *)(msg) + (off)))

/* Moves a non-empty string; an empty or absent one leaves the default in place. */
static void take(char **dst, char **src) {
  if (*src && **src) {
    *dst = *src;
    *src = NULL;
  }
}

/* ---- moving same-named fields between the two schemas ---- */

static int conv_msg(ProtobufCMessage *src, const ProtobufCMessageDescriptor *dd,
                    ProtobufCMessage **out);

static size_t elem_size(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT32:
    return sizeof(int32_t);
  case PROTOBUF_C_TYPE_INT64:
    return sizeof(int64_t);
  case PROTOBUF_C_TYPE_BOOL:
    return sizeof(protobuf_c_boolean);
  case PROTOBUF_C_TYPE_STRING:
  case PROTOBUF_C_TYPE_MESSAGE:
    return sizeof(void *);
  default:
    return 0; /* not used by the moved fields */
  }
}

/* One value at sp (of field sf) into dp (of field df). A repeated string must exist even
 * when empty; a singular one keeps the default. */
static int conv_value(const ProtobufCFieldDescriptor *df, void *sp, void *dp, bool repeated) {
  switch (df->type) {
  case PROTOBUF_C_TYPE_STRING: {
    char **s = sp;
    if (repeated) {
      *(char **)dp = *s ? *s : strdup("");
      *s = NULL;
      return *(char **)dp ? 0 : KC_ENOMEM;
    }
    take(dp, s);
    return 0;
  }
  case PROTOBUF_C_TYPE_MESSAGE:
    return *(ProtobufCMessage **)sp
               ? conv_msg(*(ProtobufCMessage **)sp, df->descriptor, (ProtobufCMessage **)dp)
               : 0;
  default:
    memcpy(dp, sp, elem_size(df->type));
    return 0;
  }
}

/* Field sname of src into field dname of dst (both singular or both repeated). */
static int conv_field(ProtobufCMessage *src, const char *sname, ProtobufCMessage *dst,
                      const char *dname) {
  const ProtobufCFieldDescriptor *sf =
      protobuf_c_message_descriptor_get_field_by_name(src->descriptor, sname);
  const ProtobufCFieldDescriptor *df =
      protobuf_c_message_descriptor_get_field_by_name(dst->descriptor, dname);
  if (!sf || !df || sf->type != df->type || !elem_size(df->type) ||
      (sf->label == PROTOBUF_C_LABEL_REPEATED) != (df->label == PROTOBUF_C_LABEL_REPEATED))
    return KC_EINVAL; /* the two schemas disagree: a bug the unit tests catch */
  void *sp = (uint8_t *)src + sf->offset, *dp = (uint8_t *)dst + df->offset;
  if (df->label != PROTOBUF_C_LABEL_REPEATED) {
    bool scalar = df->type != PROTOBUF_C_TYPE_STRING && df->type != PROTOBUF_C_TYPE_MESSAGE;
    if (scalar && sf->label == PROTOBUF_C_LABEL_OPTIONAL &&
        !MEMBER(protobuf_c_boolean, src, sf->quantifier_offset))
      return 0;
    return conv_value(df, sp, dp, false);
  }
  size_t n = MEMBER(size_t, src, sf->quantifier_offset), es = elem_size(df->type);
  if (n == 0)
    return 0;
  uint8_t *arr = calloc(n, es);
  if (!arr)
    return KC_ENOMEM;
  MEMBER(void *, dst, df->offset) = arr;
  uint8_t *from = MEMBER(void *, src, sf->offset);
  /* Counted first: what a failure leaves half made is freed with dst (NULL entries too). */
  MEMBER(size_t, dst, df->quantifier_offset) = n;
  for (size_t i = 0; i < n; i++) {
    int rc = conv_value(df, from + i * es, arr + i * es, true);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* A new message of dd from the same-named fields of src. */
static int conv_msg(ProtobufCMessage *src, const ProtobufCMessageDescriptor *dd,
                    ProtobufCMessage **out) {
  ProtobufCMessage *m = malloc(dd->sizeof_message);
  if (!m)
    return KC_ENOMEM;
  dd->message_init(m);
  *out = m; /* owned by the parent from here, freed with it on error */
  for (unsigned i = 0; i < dd->n_fields; i++) {
    const char *name = dd->fields[i].name;
    if (!protobuf_c_message_descriptor_get_field_by_name(src->descriptor, name))
      continue;
    int rc = conv_field(src, name, m, name);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* ---- resources ---- */

/* A Quantity map (requests, limits, overhead: n entries of key and value, read through
 * the entry's descriptor since each map has an entry type of its own) added into l;
 * unparsable values are skipped (the API server refuses them first) unless strict, which
 * reports them. */
static int add_map(kc_reslist *l, size_t n, void *entries, bool strict) {
  ProtobufCMessage **e = entries;
  for (size_t i = 0; i < n; i++) {
    const ProtobufCMessageDescriptor *d = e[i]->descriptor;
    const char *key = MEMBER(char *, e[i], d->fields[0].offset);
    const K8s__Quantity *v = MEMBER(K8s__Quantity *, e[i], d->fields[1].offset);
    kc_quantity q;
    if (kc_quantity_parse(v && v->string ? v->string : "", &q, NULL) < 0) {
      if (strict)
        return KC_EINVAL;
      continue;
    }
    if (kc_reslist_put(l, key ? key : "", &q, true))
      return KC_ENOMEM;
  }
  return 0;
}

static const K8s__Container *pb_ct(const void *spec, bool init, size_t i) {
  const K8s__PodSpec *s = spec;
  return init ? s->init_containers[i] : s->containers[i];
}

static size_t pb_count(const void *spec, bool init) {
  const K8s__PodSpec *s = spec;
  return init ? s->n_init_containers : s->n_containers;
}

static int add_req(const K8s__ResourceRequirements *r, const char *kind, kc_reslist *l) {
  if (!r)
    return 0;
  if (strcmp(kind, "limits") == 0)
    return add_map(l, r->n_limits, r->limits, false);
  return add_map(l, r->n_requests, r->requests, false);
}

static int pb_add(const void *spec, bool init, size_t i, const char *kind, kc_reslist *l) {
  return add_req(pb_ct(spec, init, i)->resources, kind, l);
}

static bool pb_sidecar(const void *spec, size_t i) {
  const char *rp = pb_ct(spec, true, i)->restart_policy;
  return rp && strcmp(rp, "Always") == 0;
}

static int pb_pod_level(const void *spec, const char *kind, kc_reslist *l) {
  return add_req(((const K8s__PodSpec *)spec)->resources, kind, l);
}

static int pb_overhead(const void *spec, kc_reslist *l) {
  const K8s__PodSpec *s = spec;
  return add_map(l, s->n_overhead, s->overhead, false);
}

static const char *pb_name(const void *spec, bool init, size_t i) {
  return pb_ct(spec, init, i)->name;
}

static const kc_podres_src pb_src = {pb_count,     pb_add,      pb_sidecar,
                                     pb_pod_level, pb_overhead, pb_name};

/* Every quantity the JSON decoder checks is checked here too (a pod with a bad one is
 * refused the same way), and the app containers' host ports are collected. */
static int containers(Kiln__Pod *p, K8s__PodSpec *s, char *err, size_t errlen) {
  kc_reslist tmp = {0};
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < s->n_containers + s->n_init_containers; k++) {
    bool init = k >= s->n_containers;
    K8s__Container *ct = init ? s->init_containers[k - s->n_containers] : s->containers[k];
    tmp.n = 0;
    if (ct->resources)
      rc = add_map(&tmp, ct->resources->n_requests, ct->resources->requests, true);
    if (rc < 0)
      snprintf(err, errlen, "spec.%s[%zu].resources.requests: invalid quantity",
               init ? "initContainers" : "containers", init ? k - s->n_containers : k);
    for (size_t i = 0; rc == 0 && !init && i < ct->n_ports; i++) {
      K8s__ContainerPort *port = ct->ports[i];
      if (!port->has_host_port || port->host_port == 0)
        continue;
      if (port->host_port < 0 || port->host_port > 65535) {
        snprintf(err, errlen, "spec.containers[%zu].ports[%zu].hostPort: out of range", k, i);
        rc = KC_ERANGE;
        break;
      }
      Kiln__HostPort **arr = realloc(p->host_ports, (p->n_host_ports + 1) * sizeof(*arr));
      Kiln__HostPort *h = arr ? malloc(sizeof(*h)) : NULL;
      if (arr)
        p->host_ports = arr;
      if (!h) {
        rc = KC_ENOMEM;
        break;
      }
      kiln__host_port__init(h);
      p->host_ports[p->n_host_ports++] = h;
      h->port = port->host_port;
      take(&h->protocol, &port->protocol);
      take(&h->host_ip, &port->host_ip);
    }
  }
  tmp.n = 0;
  if (rc == 0 && add_map(&tmp, s->n_overhead, s->overhead, true) < 0) {
    snprintf(err, errlen, "spec.overhead: invalid quantity");
    rc = KC_EINVAL;
  }
  kc_reslist_free(&tmp);
  return rc;
}

/* ---- pod ---- */

static const char *ann(const K8s__ObjectMeta *m, const char *key) {
  for (size_t i = 0; i < m->n_annotations; i++)
    if (m->annotations[i]->key && strcmp(m->annotations[i]->key, key) == 0)
      return m->annotations[i]->value ? m->annotations[i]->value : "";
  return NULL;
}

static const char *pb_ann(const void *meta, const char *key) {
  return ann(meta, key);
}

static const char *label(const K8s__ObjectMeta *m, const char *key) {
  for (size_t i = 0; i < m->n_labels; i++)
    if (m->labels[i]->key && strcmp(m->labels[i]->key, key) == 0)
      return m->labels[i]->value ? m->labels[i]->value : "";
  return NULL;
}

/* metadata.labels into packed_labels (key NUL value NUL, in the server's order). */
static int pack_labels(Kiln__Pod *p, const K8s__ObjectMeta *m) {
  size_t len = 0, off = 0;
  for (size_t i = 0; i < m->n_labels; i++) {
    const char *k = m->labels[i]->key, *v = m->labels[i]->value;
    len += strlen(k ? k : "") + strlen(v ? v : "") + 2;
  }
  if (len == 0)
    return 0;
  uint8_t *buf = malloc(len);
  if (!buf)
    return KC_ENOMEM;
  for (size_t i = 0; i < m->n_labels; i++) {
    const char *k = m->labels[i]->key, *v = m->labels[i]->value;
    size_t kl = strlen(k ? k : "") + 1, vl = strlen(v ? v : "") + 1;
    memcpy(buf + off, k ? k : "", kl);
    off += kl;
    memcpy(buf + off, v ? v : "", vl);
    off += vl;
  }
  p->packed_labels.data = buf;
  p->packed_labels.len = len;
  return 0;
}

static int pod_meta(Kiln__Pod *p, K8s__ObjectMeta *m) {
  take(&p->namespace_, &m->namespace_);
  take(&p->name, &m->name);
  take(&p->uid, &m->uid);
  take(&p->resource_version, &m->resource_version);
  if (m->creation_timestamp)
    p->creation_time = m->creation_timestamp->seconds;
  if (m->deletion_timestamp)
    p->deletion_time = m->deletion_timestamp->seconds;
  for (size_t i = 0; i < m->n_annotations; i++) {
    K8s__ObjectMeta__AnnotationsEntry *e = m->annotations[i];
    if (e->key && strcmp(e->key, "scheduling.k8s.io/group-name") == 0)
      take(&p->group_name, &e->value);
    else if (e->key && strcmp(e->key, "volcano.sh/task-spec") == 0)
      take(&p->task_name, &e->value);
  }
  static const char preempt[] = "volcano.sh/preemptable", cooldown[] = "volcano.sh/cooldown-time";
  kc__pod_volcano_keys(p, ann(m, preempt), label(m, preempt), label(m, cooldown), ann(m, cooldown));
  for (size_t i = 0; i < m->n_owner_references; i++) {
    K8s__OwnerReference *o = m->owner_references[i];
    if (!o->has_controller || !o->controller)
      continue;
    take(&p->owner_kind, &o->kind);
    take(&p->owner_name, &o->name);
    take(&p->owner_uid, &o->uid);
    break;
  }
  return pack_labels(p, m);
}

static int tolerations(Kiln__Pod *p, K8s__PodSpec *s, char *err, size_t errlen) {
  if (s->n_tolerations == 0)
    return 0;
  if (!(p->tolerations = calloc(s->n_tolerations, sizeof(*p->tolerations))))
    return KC_ENOMEM;
  for (size_t i = 0; i < s->n_tolerations; i++) {
    K8s__Toleration *t = s->tolerations[i];
    Kiln__Toleration *tol = malloc(sizeof(*tol));
    if (!tol)
      return KC_ENOMEM;
    kiln__toleration__init(tol);
    p->tolerations[p->n_tolerations++] = tol;
    take(&tol->key, &t->key);
    take(&tol->value, &t->value);
    tol->effect = kc__taint_effect(t->effect);
    tol->has_toleration_seconds = t->has_toleration_seconds;
    tol->toleration_seconds = t->has_toleration_seconds ? t->toleration_seconds : 0;
    const char *op = t->operator_;
    if (op && strcmp(op, "Exists") == 0) {
      tol->operator_ = KILN__TOLERATION_OPERATOR__TOLERATION_OPERATOR_EXISTS;
    } else if (op && *op && strcmp(op, "Equal") != 0) {
      snprintf(err, errlen, "spec.tolerations[%zu].operator: unknown operator \"%.20s\"", i, op);
      return KC_EINVAL;
    }
  }
  return 0;
}

/* The containers' images into packed_images, init containers first, each ended by a NUL
 * ("" for none), as the JSON decoder does (ImageLocality). */
static int images(Kiln__Pod *p, K8s__PodSpec *s) {
  size_t n = s->n_init_containers + s->n_containers, total = 0;
  for (int pass = 0; pass < 2 && n > 0; pass++) {
    if (pass == 1 && !(p->packed_images.data = malloc(total)))
      return KC_ENOMEM;
    for (size_t k = 0; k < n; k++) {
      bool init = k < s->n_init_containers;
      K8s__Container *ct = init ? s->init_containers[k] : s->containers[k - s->n_init_containers];
      const char *v = ct->image ? ct->image : "";
      size_t len = strlen(v) + 1;
      if (pass == 0)
        total += len;
      else
        memcpy(p->packed_images.data + p->packed_images.len, v, len);
      p->packed_images.len += pass ? len : 0;
    }
  }
  return 0;
}

static int gates(Kiln__Pod *p, K8s__PodSpec *s) {
  if (s->n_scheduling_gates == 0)
    return 0;
  if (!(p->scheduling_gates = calloc(s->n_scheduling_gates, sizeof(*p->scheduling_gates))))
    return KC_ENOMEM;
  for (size_t i = 0; i < s->n_scheduling_gates; i++) {
    char **name = &s->scheduling_gates[i]->name;
    p->scheduling_gates[i] = *name ? *name : strdup("");
    *name = NULL;
    if (!p->scheduling_gates[i])
      return KC_ENOMEM;
    p->n_scheduling_gates = i + 1;
  }
  return 0;
}

#define REQUIRED  "required_during_scheduling_ignored_during_execution"
#define PREFERRED "preferred_during_scheduling_ignored_during_execution"

/* Affinity and spread constraints; the inter-pod part goes into a message of its own that
 * only pods with some keep. */
static int affinity(Kiln__Pod *p, K8s__PodSpec *s) {
  K8s__Affinity *a = s->affinity;
  Kiln__InterPodTerms *t = malloc(sizeof(*t));
  if (!t)
    return KC_ENOMEM;
  kiln__inter_pod_terms__init(t);
  p->inter_pod = t;
  int rc = 0;
  if (a && a->node_affinity) {
    K8s__NodeAffinity *na = a->node_affinity;
    if (na->required_during_scheduling_ignored_during_execution)
      rc = conv_field(&na->required_during_scheduling_ignored_during_execution->base,
                      "node_selector_terms", &p->base, "required_node_terms");
    if (rc == 0)
      rc = conv_field(&na->base, PREFERRED, &p->base, "preferred_node_terms");
  }
  if (a) {
    p->has_pod_affinity = a->pod_affinity || a->pod_anti_affinity;
    if (rc == 0 && a->pod_affinity)
      rc = conv_field(&a->pod_affinity->base, REQUIRED, &t->base, "required_affinity");
    if (rc == 0 && a->pod_affinity)
      rc = conv_field(&a->pod_affinity->base, PREFERRED, &t->base, "preferred_affinity");
    if (rc == 0 && a->pod_anti_affinity)
      rc = conv_field(&a->pod_anti_affinity->base, REQUIRED, &t->base, "required_anti_affinity");
    if (rc == 0 && a->pod_anti_affinity)
      rc = conv_field(&a->pod_anti_affinity->base, PREFERRED, &t->base, "preferred_anti_affinity");
  }
  if (rc == 0)
    rc = conv_field(&s->base, "topology_spread_constraints", &t->base,
                    "topology_spread_constraints");
  if (rc == 0 && !t->n_required_affinity && !t->n_preferred_affinity &&
      !t->n_required_anti_affinity && !t->n_preferred_anti_affinity &&
      !t->n_topology_spread_constraints) {
    kc_msg_free(t);
    p->inter_pod = NULL;
  }
  return rc;
}

/* spec.volumes: each Volume's nested source moved beside its name, as JSON has it; the ones
 * the volume predicates do not read are dropped. */
static int volumes(Kiln__Pod *p, K8s__PodSpec *s) {
  static const char *const sources[] = {
      "persistent_volume_claim", "ephemeral", "gce_persistent_disk",
      "aws_elastic_block_store", "iscsi",     "rbd"};
  if (s->n_volumes == 0)
    return 0;
  if ((p->volumes = calloc(s->n_volumes, sizeof(*p->volumes))) == NULL)
    return KC_ENOMEM;
  for (size_t i = 0; i < s->n_volumes; i++) {
    K8s__Volume *v = s->volumes[i];
    Kiln__PodVolume *pv = malloc(sizeof(*pv));
    if (pv == NULL)
      return KC_ENOMEM;
    kiln__pod_volume__init(pv);
    p->volumes[p->n_volumes++] = pv;
    take(&pv->name, &v->name);
    for (size_t k = 0; v->volume_source && k < sizeof(sources) / sizeof(sources[0]); k++) {
      int rc = conv_field(&v->volume_source->base, sources[k], &pv->base, sources[k]);
      if (rc < 0)
        return rc;
    }
  }
  kc__pod_volumes_prune(p);
  return 0;
}

static int pod_spec(Kiln__Pod *p, K8s__PodSpec *s, char *err, size_t errlen) {
  take(&p->node_name, &s->node_name);
  take(&p->scheduler_name, &s->scheduler_name);
  take(&p->priority_class_name, &s->priority_class_name);
  take(&p->preemption_policy, &s->preemption_policy);
  p->priority = s->has_priority ? s->priority : 0;
  int rc = conv_field(&s->base, "node_selector", &p->base, "node_selector");
  if (rc == 0)
    rc = tolerations(p, s, err, errlen);
  if (rc == 0)
    rc = gates(p, s);
  if (rc == 0)
    rc = conv_field(&s->base, "resource_claims", &p->base, "resource_claims");
  if (rc == 0)
    rc = volumes(p, s);
  if (rc == 0)
    rc = images(p, s);
  if (rc == 0)
    rc = affinity(p, s);
  if (rc == 0)
    rc = containers(p, s, err, errlen);
  if (rc == 0)
    rc = kc__pod_requests(p, &pb_src, s);
  return rc;
}

static int pod_status(Kiln__Pod *p, K8s__PodStatus *st) {
  p->phase = kc__pod_phase(st->phase);
  take(&p->nominated_node_name, &st->nominated_node_name);
  for (size_t i = 0; i < st->n_conditions; i++) {
    const K8s__PodCondition *c = st->conditions[i];
    if (c->type && c->status && strcmp(c->type, "PodScheduled") == 0 &&
        strcmp(c->status, "True") == 0) {
      if (c->last_transition_time)
        p->scheduled_time = c->last_transition_time->seconds;
      break;
    }
  }
  return conv_field(&st->base, "resource_claim_statuses", &p->base, "resource_claim_statuses");
}

/* The start of a decode: *k the message of kd in data, *view a new empty message of vd. */
static int begin(const ProtobufCMessageDescriptor *kd, const void *data, size_t len,
                 const ProtobufCMessageDescriptor *vd, ProtobufCMessage **k,
                 ProtobufCMessage **view, char *err, size_t errlen) {
  *view = NULL;
  if (!(*k = protobuf_c_message_unpack(kd, NULL, len, data))) {
    snprintf(err, errlen, "not a protobuf %s", kd->short_name);
    return KC_EPARSE;
  }
  if (!(*view = malloc(vd->sizeof_message))) {
    kc_pb_free(*k);
    snprintf(err, errlen, "out of memory");
    return KC_ENOMEM;
  }
  vd->message_init(*view);
  return 0;
}

/* The end: k freed; the view to *out, or freed with err saying why (ebuf or rc). */
static int finish(int rc, ProtobufCMessage *k, ProtobufCMessage *view, void *out, const char *ebuf,
                  char *err, size_t errlen) {
  kc_pb_free(k);
  if (rc < 0) {
    snprintf(err, errlen, "%s",
             ebuf[0]           ? ebuf
             : rc == KC_ENOMEM ? "out of memory"
                               : kc_strerror(rc));
    kc_msg_free(view);
    return rc;
  }
  *(ProtobufCMessage **)out = view;
  return 0;
}

int kc_pb_pod_decode(const void *data, size_t len, Kiln__Pod **out, char *err, size_t errlen) {
  char ebuf[KC_CODEC_ERR_MAX] = "";
  ProtobufCMessage *km, *vm;
  *out = NULL;
  int rc = begin(&k8s__pod__descriptor, data, len, &kiln__pod__descriptor, &km, &vm, err, errlen);
  if (rc < 0)
    return rc;
  K8s__Pod *k = (K8s__Pod *)km;
  Kiln__Pod *p = (Kiln__Pod *)vm;
  if (k->metadata)
    rc = pod_meta(p, k->metadata);
  K8s__PodSpec empty = K8S__POD_SPEC__INIT;
  if (rc == 0)
    rc = pod_spec(p, k->spec ? k->spec : &empty, ebuf, sizeof(ebuf));
  if (rc == 0)
    rc = kc__pod_devices(p, &pb_src, k->spec ? k->spec : &empty, pb_ann, k->metadata);
  if (rc == 0)
    rc = kc__pod_numa(p, &pb_src, k->spec ? k->spec : &empty, pb_ann, k->metadata);
  if (rc == 0 && k->status)
    rc = pod_status(p, k->status);
  return finish(rc, km, vm, out, ebuf, err, errlen);
}

/* ---- node ---- */

static int node_status(Kiln__Node *n, K8s__NodeStatus *st, char *err, size_t errlen) {
  if (!(n->allocatable = kc__resource_new()) || !(n->capacity = kc__resource_new()))
    return KC_ENOMEM;
  kc_reslist l = {0};
  int rc = add_map(&l, st->n_allocatable, st->allocatable, true);
  for (size_t i = 0; rc == 0 && i < l.n; i++)
    rc = kc__resource_put(n->allocatable, l.e[i].name, &l.e[i].q);
  l.n = 0;
  if (rc == 0)
    rc = add_map(&l, st->n_capacity, st->capacity, true);
  for (size_t i = 0; rc == 0 && i < l.n; i++)
    rc = kc__resource_put(n->capacity, l.e[i].name, &l.e[i].q);
  kc_reslist_free(&l);
  if (rc == KC_EINVAL)
    snprintf(err, errlen, "status: invalid quantity");
  for (size_t i = 0; rc == 0 && i < st->n_conditions; i++) {
    const K8s__NodeCondition *c = st->conditions[i];
    if (c->type && strcmp(c->type, "Ready") == 0)
      n->ready = c->status && strcmp(c->status, "True") == 0;
  }
  if (rc == 0 && st->n_images && !(n->images = calloc(st->n_images, sizeof(*n->images))))
    rc = KC_ENOMEM;
  for (size_t i = 0; rc == 0 && i < st->n_images; i++) {
    K8s__ContainerImage *ki = st->images[i];
    Kiln__NodeImage *im = malloc(sizeof(*im));
    if (!im)
      return KC_ENOMEM;
    kiln__node_image__init(im);
    n->images[n->n_images++] = im;
    im->size_bytes = ki->has_size_bytes ? ki->size_bytes : 0;
    /* the names move over: the k8s message is freed without them */
    im->names = ki->names;
    im->n_names = ki->n_names;
    ki->names = NULL;
    ki->n_names = 0;
  }
  return rc;
}

static int node_taints(Kiln__Node *n, K8s__NodeSpec *s) {
  if (s->n_taints == 0)
    return 0;
  if (!(n->taints = calloc(s->n_taints, sizeof(*n->taints))))
    return KC_ENOMEM;
  for (size_t i = 0; i < s->n_taints; i++) {
    Kiln__Taint *t = malloc(sizeof(*t));
    if (!t)
      return KC_ENOMEM;
    kiln__taint__init(t);
    n->taints[n->n_taints++] = t;
    take(&t->key, &s->taints[i]->key);
    take(&t->value, &s->taints[i]->value);
    t->effect = kc__taint_effect(s->taints[i]->effect);
  }
  return 0;
}

int kc_pb_node_decode(const void *data, size_t len, Kiln__Node **out, char *err, size_t errlen) {
  char ebuf[KC_CODEC_ERR_MAX] = "";
  ProtobufCMessage *km, *vm;
  *out = NULL;
  int rc = begin(&k8s__node__descriptor, data, len, &kiln__node__descriptor, &km, &vm, err, errlen);
  if (rc < 0)
    return rc;
  K8s__Node *k = (K8s__Node *)km;
  Kiln__Node *n = (Kiln__Node *)vm;
  if (k->metadata) {
    take(&n->name, &k->metadata->name);
    take(&n->uid, &k->metadata->uid);
    take(&n->resource_version, &k->metadata->resource_version);
    rc = conv_field(&k->metadata->base, "labels", &n->base, "labels");
    if (rc == 0)
      rc = kc__node_devices(n, pb_ann, k->metadata);
  }
  if (rc == 0 && k->spec) {
    n->unschedulable = k->spec->has_unschedulable && k->spec->unschedulable;
    rc = node_taints(n, k->spec);
  }
  if (rc == 0 && k->status)
    rc = node_status(n, k->status, ebuf, sizeof(ebuf));
  return finish(rc, km, vm, out, ebuf, err, errlen);
}
