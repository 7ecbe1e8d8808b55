/* The volume predicates (sch_volume.c through the predicates plugin): a gang's
 * WaitForFirstConsumer claims matched to local volumes all or nothing, never one volume
 * twice, the smallest that fits; bound claims held to their volume's node; provisioning
 * against allowedTopologies and CSIStorageCapacity; VolumeZone, NodeVolumeLimits,
 * VolumeRestrictions; the writes the shell makes before binding; kube-scheduler's
 * messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "sch_volume.h"
#include "test_sch_plugins_fixture.h"

#define LOCAL "local"
#define CSI   "csi.example.com"

static const char vol_yaml[] = "actions: \"enqueue, allocate\"\n"
                               "tiers:\n"
                               "- plugins:\n"
                               "  - name: gang\n"
                               "- plugins:\n"
                               "  - name: predicates\n";

/* ---- builders ---- */

static void entry(Kiln__ObjectMeta__LabelsEntry ***arr, size_t *n, const char *k, const char *v) {
  Kiln__ObjectMeta__LabelsEntry *e = fx_alloc(sizeof(*e));
  kiln__object_meta__labels_entry__init(e);
  e->key = fx_str(k);
  e->value = fx_str(v);
  FX_APPEND(*arr, *n, e);
}

static void fx_class(fx *f, const char *name, const char *provisioner, bool wffc) {
  Kiln__StorageClass *sc = fx_alloc(sizeof(*sc));
  kiln__storage_class__init(sc);
  sc->metadata = fx_meta(NULL, name);
  sc->provisioner = fx_str(provisioner);
  sc->volume_binding_mode = fx_str(wffc ? "WaitForFirstConsumer" : "Immediate");
  FX_APPEND(f->msg->storage_classes, f->msg->n_storage_classes, sc);
}

/* An Available volume of class cls with size, on node (NULL: anywhere). */
static Kiln__PersistentVolume *fx_pv(fx *f, const char *name, const char *cls, const char *size,
                                     const char *node) {
  Kiln__PersistentVolume *pv = fx_alloc(sizeof(*pv));
  kiln__persistent_volume__init(pv);
  pv->metadata = fx_meta(NULL, name);
  pv->spec = fx_alloc(sizeof(*pv->spec));
  kiln__persistent_volume_spec__init(pv->spec);
  entry((Kiln__ObjectMeta__LabelsEntry ***)&pv->spec->capacity, &pv->spec->n_capacity, "storage",
        size);
  FX_APPEND(pv->spec->access_modes, pv->spec->n_access_modes, fx_str("ReadWriteOnce"));
  pv->spec->storage_class_name = fx_str(cls);
  if (node) {
    Kiln__NodeSelectorRequirement *r = fx_alloc(sizeof(*r));
    kiln__node_selector_requirement__init(r);
    r->key = fx_str("kubernetes.io/hostname");
    r->operator_ = fx_str("In");
    FX_APPEND(r->values, r->n_values, fx_str(node));
    Kiln__NodeSelectorTerm *t = fx_alloc(sizeof(*t));
    kiln__node_selector_term__init(t);
    FX_APPEND(t->match_expressions, t->n_match_expressions, r);
    pv->spec->node_affinity = fx_alloc(sizeof(*pv->spec->node_affinity));
    kiln__volume_node_affinity__init(pv->spec->node_affinity);
    pv->spec->node_affinity->required = fx_alloc(sizeof(Kiln__VolNodeSelector));
    kiln__vol_node_selector__init(pv->spec->node_affinity->required);
    FX_APPEND(pv->spec->node_affinity->required->node_selector_terms,
              pv->spec->node_affinity->required->n_node_selector_terms, t);
  }
  pv->status = fx_alloc(sizeof(*pv->status));
  kiln__persistent_volume_status__init(pv->status);
  pv->status->phase = fx_str("Available");
  FX_APPEND(f->msg->persistent_volumes, f->msg->n_persistent_volumes, pv);
  return pv;
}

static Kiln__PersistentVolumeClaim *fx_pvc(fx *f, const char *name, const char *cls,
                                           const char *size) {
  Kiln__PersistentVolumeClaim *c = fx_alloc(sizeof(*c));
  kiln__persistent_volume_claim__init(c);
  c->metadata = fx_meta("ns", name);
  char uid[128];
  snprintf(uid, sizeof(uid), "uid-%s", name);
  c->metadata->uid = fx_str(uid);
  c->spec = fx_alloc(sizeof(*c->spec));
  kiln__persistent_volume_claim_spec__init(c->spec);
  FX_APPEND(c->spec->access_modes, c->spec->n_access_modes, fx_str("ReadWriteOnce"));
  c->spec->storage_class_name = fx_str(cls);
  c->spec->resources = fx_alloc(sizeof(*c->spec->resources));
  kiln__vol_resources__init(c->spec->resources);
  entry((Kiln__ObjectMeta__LabelsEntry ***)&c->spec->resources->requests,
        &c->spec->resources->n_requests, "storage", size);
  FX_APPEND(f->msg->persistent_volume_claims, f->msg->n_persistent_volume_claims, c);
  return c;
}

/* The claim is bound to volume pv (spec.volumeName and bind-completed). */
static void fx_bound(Kiln__PersistentVolumeClaim *c, const char *pv) {
  c->spec->volume_name = fx_str(pv);
  entry((Kiln__ObjectMeta__LabelsEntry ***)&c->metadata->annotations, &c->metadata->n_annotations,
        "pv.kubernetes.io/bind-completed", "yes");
}

static Kiln__PodVolume *fx_pod_pvc(Kiln__Pod *p, const char *vol, const char *claim) {
  Kiln__PodVolume *v = fx_alloc(sizeof(*v));
  kiln__pod_volume__init(v);
  v->name = fx_str(vol);
  if (claim) {
    v->persistent_volume_claim = fx_alloc(sizeof(*v->persistent_volume_claim));
    kiln__pod_pvc_source__init(v->persistent_volume_claim);
    v->persistent_volume_claim->claim_name = fx_str(claim);
  }
  FX_APPEND(p->volumes, p->n_volumes, v);
  return v;
}

static void set_str(char **dst, const char *s) {
  free(*dst);
  *dst = fx_str(s);
}

static void node_label(Kiln__Node *n, const char *k, const char *v) {
  fx_node_label(n, k, v);
}

/* nodes n0..n<nn-1> (hostname labels); gang "job" of npods pods, each with claim "data-<i>"
 * of class local (WaitForFirstConsumer, no provisioner) asking 10Gi. */
static fx *world(int nn, int npods) {
  fx *f = fx_new();
  for (int i = 0; i < nn; i++) {
    char name[16];
    snprintf(name, sizeof(name), "n%d", i);
    node_label(fx_node(f, name, 32000, 64 * GI, 110), "kubernetes.io/hostname", name);
  }
  fx_class(f, LOCAL, "kubernetes.io/no-provisioner", true);
  fx_pg(f, "job", "default", npods, "Inqueue");
  for (int i = 0; i < npods; i++) {
    char name[32], claim[32];
    snprintf(name, sizeof(name), "job-%d", i);
    snprintf(claim, sizeof(claim), "data-%d", i);
    fx_pod_pvc(fx_pod(f, name, "job", 1000, GI, NULL), "data", claim);
    fx_pvc(f, claim, LOCAL, "10Gi");
  }
  return f;
}

static size_t writes_of(fx *f, const char *pod, sch_vol_write *w, size_t max) {
  assert_non_null(f->snap->vol);
  return sch_vol_writes(f->snap->vol, &f->snap->tasks[fx_task(f, pod)], w, max);
}

static const char *pv_name(fx *f, int32_t pv) {
  return f->msg->persistent_volumes[pv]->metadata->name;
}

/* Task t placed on node n with its one claim given the volume named want. */
static void assert_placed(fx *f, const sch_task *t, int32_t n, const char *want) {
  assert_int_equal(sch_vol_place(f->snap->vol, t, n), 0);
  sch_vol_write w;
  assert_int_equal(sch_vol_writes(f->snap->vol, t, &w, 1), 1);
  assert_string_equal(pv_name(f, w.pv), want);
}

/* ---- tests ---- */

/* 4 pods, 4 local volumes on 2 nodes (2 each): every pod lands on its volume's node, no
 * volume twice, the smaller of two volumes that fit. */
static void test_gang_lands_on_its_volumes(void **state) {
  (void)state;
  fx *f = world(3, 4);
  fx_pv(f, "pv-a", LOCAL, "20Gi", "n0");
  fx_pv(f, "pv-b", LOCAL, "10Gi", "n0");
  fx_pv(f, "pv-c", LOCAL, "10Gi", "n1");
  fx_pv(f, "pv-d", LOCAL, "50Gi", "n1");
  fx_pv(f, "pv-e", LOCAL, "5Gi", "n2"); /* too small */
  fx_open(f, vol_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 4);
  bool seen[5] = {false};
  for (size_t b = 0; b < r->nbinds; b++) {
    const sch_task *t = &f->snap->tasks[r->binds[b].task];
    sch_vol_write w[2];
    assert_int_equal(writes_of(f, t->pod->name, w, 2), 1);
    assert_true(w[0].pv >= 0 && w[0].pv < 4);
    assert_false(seen[w[0].pv]);
    seen[w[0].pv] = true;
    const char *node = f->snap->nodes[r->binds[b].node].name;
    const char *want = w[0].pv < 2 ? "n0" : "n1";
    assert_string_equal(node, want);
    char claim[32];
    snprintf(claim, sizeof(claim), "data-%s", t->pod->name + 4);
    assert_string_equal(f->msg->persistent_volume_claims[w[0].claim]->metadata->name, claim);
  }
  sch_result_free(r);
  fx_free(f);
}

/* A node's local volumes are found through its hostname, the others on every node: a
 * volume whose host two nodes share (n0 and n2), one anywhere (no affinity) and one for a host
 * no node has; the smallest that fits wins across both lists, and a volume of another node
 * never. */
static void test_volumes_by_host(void **state) {
  (void)state;
  fx *f = world(2, 1);
  node_label(fx_node(f, "n2", 32000, 64 * GI, 110), "kubernetes.io/hostname", "n0");
  fx_pv(f, "shared-host", LOCAL, "12Gi", "n0");
  fx_pv(f, "anywhere", LOCAL, "20Gi", NULL);
  fx_pv(f, "nowhere", LOCAL, "10Gi", "gone");
  fx_pv(f, "n1-big", LOCAL, "40Gi", "n1");
  fx_pv(f, "n1-small", LOCAL, "15Gi", "n1");
  fx_open(f, vol_yaml);
  const char *reason;
  for (int i = 0; i < 3; i++) {
    char node[8];
    snprintf(node, sizeof(node), "n%d", i);
    assert_int_equal(fx_predicate(f, "job-0", node, &reason), SCH_FIT);
  }
  assert_non_null(f->snap->vol);
  const sch_task *t = &f->snap->tasks[fx_task(f, "job-0")];
  static const char *const want[] = {"shared-host", "n1-small", "shared-host"};
  for (int32_t n = 0; n < 3; n++) {
    assert_placed(f, t, n, want[n]);
    sch_vol_unplace(f->snap->vol, t);
  }
  sch_result_free(fx_run(f));
  fx_free(f);
}

/* Adds the requirement key op values (NULL-ended) to pv's required node affinity: to a new
 * term when new_term, else to its last term. */
static void pv_affinity(Kiln__PersistentVolume *pv, bool new_term, const char *key, const char *op,
                        const char *const *values) {
  if (pv->spec->node_affinity == NULL) {
    pv->spec->node_affinity = fx_alloc(sizeof(*pv->spec->node_affinity));
    kiln__volume_node_affinity__init(pv->spec->node_affinity);
    pv->spec->node_affinity->required = fx_alloc(sizeof(Kiln__VolNodeSelector));
    kiln__vol_node_selector__init(pv->spec->node_affinity->required);
  }
  Kiln__VolNodeSelector *req = pv->spec->node_affinity->required;
  if (new_term) {
    Kiln__NodeSelectorTerm *t = fx_alloc(sizeof(*t));
    kiln__node_selector_term__init(t);
    FX_APPEND(req->node_selector_terms, req->n_node_selector_terms, t);
  }
  Kiln__NodeSelectorTerm *t = req->node_selector_terms[req->n_node_selector_terms - 1];
  Kiln__NodeSelectorRequirement *r = fx_alloc(sizeof(*r));
  kiln__node_selector_requirement__init(r);
  r->key = fx_str(key);
  r->operator_ = fx_str(op);
  for (size_t i = 0; values[i]; i++)
    FX_APPEND(r->values, r->n_values, fx_str(values[i]));
  FX_APPEND(t->match_expressions, t->n_match_expressions, r);
}

#define HOST "kubernetes.io/hostname"
#define ZONE "topology.kubernetes.io/zone"

/* Only a volume whose affinity is one hostname term of one host is resolved to that node
 * once (and found in its node's list); every other affinity is matched on each node: a
 * volume pinned to n1 is never offered on n0, and a zonal volume, one of two hosts, one of
 * two terms, a hostname NotIn, and a hostname term narrowed by a zone are each found where
 * their affinity allows and only there. Placed one after another, so each next smallest
 * shows (n0, n1 in z1, n2 in z2). */
static void test_pinned_and_general_affinity(void **state) {
  (void)state;
  fx *f = world(3, 5);
  for (int i = 0; i < 3; i++)
    node_label(f->msg->nodes[i], ZONE, i < 2 ? "z1" : "z2");
  fx_pv(f, "n1-pin", LOCAL, "10Gi", "n1");
  pv_affinity(fx_pv(f, "zonal", LOCAL, "20Gi", NULL), true, ZONE, "In",
              (const char *const[]){"z1", NULL});
  pv_affinity(fx_pv(f, "hosts-n0-n2", LOCAL, "22Gi", NULL), true, HOST, "In",
              (const char *const[]){"n0", "n2", NULL});
  pv_affinity(fx_pv(f, "not-n1", LOCAL, "25Gi", NULL), true, HOST, "NotIn",
              (const char *const[]){"n1", NULL});
  Kiln__PersistentVolume *narrowed = fx_pv(f, "n2-in-z1", LOCAL, "12Gi", "n2");
  pv_affinity(narrowed, false, ZONE, "In", (const char *const[]){"z1", NULL}); /* nowhere */
  Kiln__PersistentVolume *terms = fx_pv(f, "two-terms", LOCAL, "14Gi", "n2");
  pv_affinity(terms, true, HOST, "In", (const char *const[]){"n0", NULL});
  fx_open(f, vol_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "job-0", "n0", &reason), SCH_FIT);
  assert_non_null(f->snap->vol);
  static const struct {
    const char *pod;
    int32_t node;
    const char *want;
  } steps[] = {
      {"job-0", 0, "two-terms"}, /* not n1-pin (10Gi) nor n2-in-z1 (12Gi) */
      {"job-1", 0, "zonal"},     {"job-2", 2, "hosts-n0-n2"}, /* not n2-in-z1: n2 is in z2 */
      {"job-3", 1, "n1-pin"},    {"job-4", 2, "not-n1"},
  };
  for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    const sch_task *t = &f->snap->tasks[fx_task(f, steps[i].pod)];
    assert_placed(f, t, steps[i].node, steps[i].want);
  }
  sch_result_free(fx_run(f));
  fx_free(f);
}

/* A volume reserved for a claim (claimRef, so not Available) pinned to n1: the claim takes it
 * on n1 and on n0 nothing else (kube-scheduler's FindMatchingVolume returns the claim's own
 * volume or none), though n0 has a free volume of its own. */
static void test_reserved_volume_pinned(void **state) {
  (void)state;
  fx *f = world(2, 1);
  fx_pv(f, "n0-free", LOCAL, "10Gi", "n0");
  Kiln__PersistentVolume *pv = fx_pv(f, "reserved", LOCAL, "50Gi", "n1");
  pv->spec->claim_ref = fx_alloc(sizeof(*pv->spec->claim_ref));
  kiln__vol_object_reference__init(pv->spec->claim_ref);
  pv->spec->claim_ref->namespace_ = fx_str("ns");
  pv->spec->claim_ref->name = fx_str("data-0");
  fx_open(f, vol_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "job-0", "n0", &reason), SCH_UNRESOLVABLE);
  assert_string_equal(reason, "node(s) didn't find available persistent volumes to bind");
  assert_int_equal(fx_predicate(f, "job-0", "n1", &reason), SCH_FIT);
  const sch_task *t = &f->snap->tasks[fx_task(f, "job-0")];
  assert_placed(f, t, 1, "reserved");
  sch_result_free(fx_run(f));
  fx_free(f);
}

/* The fields compared per volume on each node (resolved once per snapshot): volume mode
 * (unset is Filesystem), access modes (one no kube-scheduler mode names too), class. */
static void test_mode_and_access_match(void **state) {
  (void)state;
  fx *f = world(1, 2);
  fx_pv(f, "block", LOCAL, "11Gi", "n0")->spec->volume_mode = fx_str("Block");
  Kiln__PersistentVolume *rwx = fx_pv(f, "rwx-only", LOCAL, "12Gi", "n0");
  set_str(&rwx->spec->access_modes[0], "ReadWriteMany");
  fx_pv(f, "other-class", "fast", "13Gi", "n0");
  fx_pv(f, "fs", LOCAL, "14Gi", "n0")->spec->volume_mode = fx_str("Filesystem");
  Kiln__PersistentVolume *odd = fx_pv(f, "odd", LOCAL, "15Gi", "n0");
  FX_APPEND(odd->spec->access_modes, odd->spec->n_access_modes, fx_str("Weird"));
  Kiln__PersistentVolumeClaim *c1 = f->msg->persistent_volume_claims[1];
  FX_APPEND(c1->spec->access_modes, c1->spec->n_access_modes, fx_str("Weird"));
  fx_open(f, vol_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "job-1", "n0", &reason), SCH_FIT);
  static const char *const want[] = {"fs", "odd"};
  for (int i = 0; i < 2; i++) {
    char pod[16];
    snprintf(pod, sizeof(pod), "job-%d", 1 - i); /* the odd claim first: not fs */
    const sch_task *t = &f->snap->tasks[fx_task(f, pod)];
    assert_placed(f, t, 0, want[1 - i]);
  }
  sch_result_free(fx_run(f));
  fx_free(f);
}

/* The claims are matched by increasing request, each to the smallest volume that fits. */
static void test_smallest_fit(void **state) {
  (void)state;
  fx *f = world(1, 1);
  fx_pv(f, "big", LOCAL, "100Gi", "n0");
  fx_pv(f, "small", LOCAL, "10Gi", "n0");
  fx_pv(f, "other-class", "fast", "10Gi", "n0");
  fx_open(f, vol_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  sch_vol_write w;
  assert_int_equal(writes_of(f, "job-0", &w, 1), 1);
  assert_string_equal(pv_name(f, w.pv), "small");
  sch_result_free(r);
  fx_free(f);
}

/* 4 pods, 3 volumes: the gang binds nothing, no volume stays assumed, and every node says
 * why; the claims left unbound are named. */
static void test_gang_all_or_nothing(void **state) {
  (void)state;
  fx *f = world(2, 4);
  fx_node_taint(fx_node(f, "tainted", 32000, 64 * GI, 110), "dedicated", "x",
                KILN__TAINT_EFFECT__TAINT_EFFECT_NO_SCHEDULE);
  fx_pv(f, "pv-a", LOCAL, "10Gi", "n0");
  fx_pv(f, "pv-b", LOCAL, "10Gi", "n0");
  fx_pv(f, "pv-c", LOCAL, "10Gi", "n1");
  fx_open(f, vol_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  sch_vol_write w[2];
  char names[256];
  for (int i = 0; i < 4; i++) {
    char name[32];
    snprintf(name, sizeof(name), "job-%d", i);
    assert_int_equal(writes_of(f, name, w, 2), 0);
  }
  sch_vol_unbound_names(f->snap->vol, &f->snap->tasks[fx_task(f, "job-3")], names, sizeof(names));
  assert_string_equal(names, "data-3");
  const char *msg = fx_pg_message(f, r, "job");
  if (!strstr(msg, "volumes: no node can take pod ns/job-") ||
      !strstr(msg, "with its claim(s) data-") ||
      !strstr(msg, "after 3 pod(s) of the gang were placed: node(s) didn't find available "
                   "persistent volumes to bind"))
    fail_msg("message: %s", msg);
  sch_result_free(r);
  fx_free(f);
}

/* A bound claim holds the pod to its volume's node; a claim bound to a volume that does not
 * exist keeps it pending with kube-scheduler's words. */
static void test_bound_claims(void **state) {
  (void)state;
  fx *f = world(2, 2);
  Kiln__PersistentVolume *pv = fx_pv(f, "pv-a", LOCAL, "10Gi", "n1");
  set_str(&pv->status->phase, "Bound");
  fx_bound(f->msg->persistent_volume_claims[0], "pv-a");
  fx_bound(f->msg->persistent_volume_claims[1], "gone");
  fx_open(f, vol_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "job-0", "n0", &reason), SCH_UNRESOLVABLE);
  assert_string_equal(reason, "node(s) didn't match PersistentVolume's node affinity");
  assert_int_equal(fx_predicate(f, "job-0", "n1", &reason), SCH_FIT);
  assert_int_equal(fx_predicate(f, "job-1", "n1", &reason), SCH_UNRESOLVABLE);
  assert_string_equal(reason,
                      "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)");
  fx_free(f);
}

/* What keeps a pod pending before any node is tried: an unbound claim of an Immediate class,
 * a claim missing, an ephemeral claim not made yet or not the pod's, a class missing. */
static void test_prefilter_messages(void **state) {
  (void)state;
  fx *f = world(1, 0);
  fx_class(f, "imm", "example.com/x", false);
  static const struct {
    const char *pod, *want;
  } cases[] = {
      {"p1", "pod has unbound immediate PersistentVolumeClaims"},
      {"p2", "persistentvolumeclaim \"nope\" not found"},
      {"p3", "waiting for ephemeral volume controller to create the persistentvolumeclaim "
             "\"p3-scratch\""},
      {"p4", "PVC ns/p4-scratch was not created for pod ns/p4 (pod is not owner)"},
      {"p5", "storageclass.storage.k8s.io \"missing\" not found"},
  };
  fx_pvc(f, "imm-claim", "imm", "1Gi");
  fx_pvc(f, "p4-scratch", LOCAL, "1Gi");
  fx_pvc(f, "no-class", "missing", "1Gi");
  const char *claims[] = {"imm-claim", "nope", NULL, NULL, "no-class"};
  for (size_t i = 0; i < 5; i++) {
    fx_pg(f, cases[i].pod, "default", 1, "Inqueue");
    Kiln__Pod *p = fx_pod(f, cases[i].pod, cases[i].pod, 1000, GI, NULL);
    Kiln__PodVolume *v = fx_pod_pvc(p, "scratch", claims[i]);
    if (!claims[i]) {
      v->ephemeral = fx_alloc(sizeof(*v->ephemeral));
      kiln__pod_ephemeral_source__init(v->ephemeral);
    }
  }
  fx_open(f, vol_yaml);
  for (size_t i = 0; i < 5; i++) {
    const char *reason;
    assert_int_equal(fx_predicate(f, cases[i].pod, "n0", &reason), SCH_UNRESOLVABLE);
    assert_string_equal(reason, cases[i].want);
  }
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  sch_result_free(r);
  fx_free(f);
}

/* A pod's own ephemeral claim ("<pod>-<volume>", controlled by the pod) is matched. */
static void test_ephemeral_claim(void **state) {
  (void)state;
  fx *f = world(1, 0);
  fx_pv(f, "pv-a", LOCAL, "10Gi", "n0");
  fx_pg(f, "e", "default", 1, "Inqueue");
  Kiln__PodVolume *v = fx_pod_pvc(fx_pod(f, "e-0", "e", 1000, GI, NULL), "scratch", NULL);
  v->ephemeral = fx_alloc(sizeof(*v->ephemeral));
  kiln__pod_ephemeral_source__init(v->ephemeral);
  Kiln__PersistentVolumeClaim *c = fx_pvc(f, "e-0-scratch", LOCAL, "1Gi");
  Kiln__OwnerReference *o = fx_alloc(sizeof(*o));
  kiln__owner_reference__init(o);
  o->uid = fx_str("e-0");
  o->has_controller = 1;
  o->controller = 1;
  FX_APPEND(c->metadata->owner_references, c->metadata->n_owner_references, o);
  fx_open(f, vol_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  sch_vol_write w;
  assert_int_equal(writes_of(f, "e-0", &w, 1), 1);
  assert_string_equal(pv_name(f, w.pv), "pv-a");
  sch_result_free(r);
  fx_free(f);
}

/* A provisioner: the class's allowedTopologies pick the nodes, and a CSI driver with
 * storageCapacity needs a CSIStorageCapacity with room on the node; the write selects the
 * node. */
static void test_provisioning(void **state) {
  (void)state;
  fx *f = fx_new();
  node_label(fx_node(f, "a", 32000, 64 * GI, 110), "topology.kubernetes.io/zone", "za");
  node_label(fx_node(f, "b", 32000, 64 * GI, 110), "topology.kubernetes.io/zone", "zb");
  node_label(fx_node(f, "c", 32000, 64 * GI, 110), "topology.kubernetes.io/zone", "zc");
  fx_class(f, "csi", CSI, true);
  Kiln__StorageClass *sc = f->msg->storage_classes[0];
  Kiln__VolTopologyTerm *t = fx_alloc(sizeof(*t));
  kiln__vol_topology_term__init(t);
  Kiln__VolTopologyRequirement *req = fx_alloc(sizeof(*req));
  kiln__vol_topology_requirement__init(req);
  req->key = fx_str("topology.kubernetes.io/zone");
  FX_APPEND(req->values, req->n_values, fx_str("za"));
  FX_APPEND(req->values, req->n_values, fx_str("zb"));
  FX_APPEND(t->match_label_expressions, t->n_match_label_expressions, req);
  FX_APPEND(sc->allowed_topologies, sc->n_allowed_topologies, t);
  Kiln__CsiDriver *d = fx_alloc(sizeof(*d));
  kiln__csi_driver__init(d);
  d->metadata = fx_meta(NULL, CSI);
  d->spec = fx_alloc(sizeof(*d->spec));
  kiln__csi_driver_spec__init(d->spec);
  d->spec->has_storage_capacity = d->spec->storage_capacity = 1;
  FX_APPEND(f->msg->csi_drivers, f->msg->n_csi_drivers, d);
  static const char *const zones[] = {"za", "zb"}, *const caps[] = {"5Gi", "100Gi"};
  for (int i = 0; i < 2; i++) {
    Kiln__CsiStorageCapacity *c = fx_alloc(sizeof(*c));
    kiln__csi_storage_capacity__init(c);
    c->metadata = fx_meta("kube-system", zones[i]);
    c->storage_class_name = fx_str("csi");
    c->capacity = fx_str(caps[i]);
    c->node_topology = fx_alloc(sizeof(*c->node_topology));
    kiln__label_selector__init(c->node_topology);
    Kiln__LabelSelector__MatchLabelsEntry *e = fx_alloc(sizeof(*e));
    kiln__label_selector__match_labels_entry__init(e);
    e->key = fx_str("topology.kubernetes.io/zone");
    e->value = fx_str(zones[i]);
    FX_APPEND(c->node_topology->match_labels, c->node_topology->n_match_labels, e);
    FX_APPEND(f->msg->csi_storage_capacities, f->msg->n_csi_storage_capacities, c);
  }
  fx_pg(f, "job", "default", 1, "Inqueue");
  fx_pod_pvc(fx_pod(f, "p", "job", 1000, GI, NULL), "data", "data");
  fx_pvc(f, "data", "csi", "10Gi");
  fx_open(f, vol_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "p", "a", &reason), SCH_UNRESOLVABLE);
  assert_string_equal(reason, "node(s) did not have enough free storage");
  assert_int_equal(fx_predicate(f, "p", "c", &reason), SCH_UNRESOLVABLE);
  assert_string_equal(reason, "node(s) didn't find available persistent volumes to bind");
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  sch_vol_write w;
  assert_int_equal(writes_of(f, "p", &w, 1), 1);
  assert_int_equal(w.pv, -1);
  assert_string_equal(f->snap->nodes[w.node].name, "b");
  sch_result_free(r);
  fx_free(f);
}

/* VolumeZone: a bound zonal volume keeps its pods in its zone (the beta label on the
 * volume read against the node's GA label too); a node with no zone labels takes it. */
static void test_volume_zone(void **state) {
  (void)state;
  fx *f = world(0, 0);
  node_label(fx_node(f, "a", 32000, 64 * GI, 110), "topology.kubernetes.io/zone", "za");
  node_label(fx_node(f, "b", 32000, 64 * GI, 110), "topology.kubernetes.io/zone", "zb");
  Kiln__PersistentVolume *pv = fx_pv(f, "zonal", LOCAL, "10Gi", NULL);
  entry(&pv->metadata->labels, &pv->metadata->n_labels, "failure-domain.beta.kubernetes.io/zone",
        "zb__zc");
  fx_pg(f, "job", "default", 1, "Inqueue");
  fx_pod_pvc(fx_pod(f, "p", "job", 1000, GI, NULL), "data", "data");
  fx_bound(fx_pvc(f, "data", LOCAL, "10Gi"), "zonal");
  fx_open(f, vol_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "p", "a", &reason), SCH_UNRESOLVABLE);
  assert_string_equal(reason, "node(s) had no available volume zone");
  assert_int_equal(fx_predicate(f, "p", "b", &reason), SCH_FIT);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_string_equal(f->snap->nodes[r->binds[0].node].name, "b");
  sch_result_free(r);
  fx_free(f);
}

static void csi_volume(fx *f, const char *claim, const char *pv, const char *handle) {
  Kiln__PersistentVolume *v = fx_pv(f, pv, "csi", "1Gi", NULL);
  v->spec->csi = fx_alloc(sizeof(*v->spec->csi));
  kiln__vol_csi_source__init(v->spec->csi);
  v->spec->csi->driver = fx_str(CSI);
  v->spec->csi->volume_handle = fx_str(handle);
  fx_bound(fx_pvc(f, claim, "csi", "1Gi"), pv);
}

/* NodeVolumeLimits: a node whose CSINode allows 1 volume of the driver and has one attached
 * takes no other, but takes a pod sharing that volume. */
static void test_volume_limits(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n0", 32000, 64 * GI, 110);
  fx_class(f, "csi", CSI, false);
  csi_volume(f, "old", "pv-old", "h1");
  csi_volume(f, "new", "pv-new", "h2");
  Kiln__CsiNode *cn = fx_alloc(sizeof(*cn));
  kiln__csi_node__init(cn);
  cn->metadata = fx_meta(NULL, "n0");
  cn->spec = fx_alloc(sizeof(*cn->spec));
  kiln__csi_node_spec__init(cn->spec);
  Kiln__CsiNodeDriver *d = fx_alloc(sizeof(*d));
  kiln__csi_node_driver__init(d);
  d->name = fx_str(CSI);
  d->allocatable = fx_alloc(sizeof(*d->allocatable));
  kiln__vol_node_resources__init(d->allocatable);
  d->allocatable->has_count = 1;
  d->allocatable->count = 1;
  FX_APPEND(cn->spec->drivers, cn->spec->n_drivers, d);
  FX_APPEND(f->msg->csi_nodes, f->msg->n_csi_nodes, cn);
  fx_pg(f, "old", "default", 1, "Running");
  fx_pod_pvc(fx_pod(f, "old-0", "old", 1000, GI, "n0"), "data", "old");
  fx_pg(f, "job", "default", 1, "Inqueue");
  fx_pod_pvc(fx_pod(f, "p", "job", 1000, GI, NULL), "data", "new");
  fx_pg(f, "share", "default", 1, "Inqueue");
  fx_pod_pvc(fx_pod(f, "s", "share", 1000, GI, NULL), "data", "old");
  fx_open(f, vol_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "p", "n0", &reason), SCH_UNSCHEDULABLE);
  assert_string_equal(reason, "node(s) exceed max volume count");
  assert_int_equal(fx_predicate(f, "s", "n0", &reason), SCH_FIT);
  fx_free(f);
}

/* VolumeRestrictions: a ReadWriteOncePod claim another pod uses, and the same GCE disk
 * written twice on a node. */
static void test_volume_restrictions(void **state) {
  (void)state;
  fx *f = world(2, 0);
  set_str(&fx_pv(f, "pv-a", LOCAL, "10Gi", "n0")->status->phase, "Bound");
  Kiln__PersistentVolumeClaim *c = fx_pvc(f, "once", LOCAL, "1Gi");
  set_str(&c->spec->access_modes[0], "ReadWriteOncePod");
  fx_bound(c, "pv-a");
  fx_pg(f, "old", "default", 1, "Running");
  Kiln__Pod *old = fx_pod(f, "old-0", "old", 1000, GI, "n0");
  fx_pod_pvc(old, "data", "once");
  Kiln__PodVolume *disk = fx_pod_pvc(old, "disk", NULL);
  disk->gce_persistent_disk = fx_alloc(sizeof(*disk->gce_persistent_disk));
  kiln__pod_gce_pd_source__init(disk->gce_persistent_disk);
  disk->gce_persistent_disk->pd_name = fx_str("pd-1");
  fx_pg(f, "job", "default", 1, "Inqueue");
  fx_pod_pvc(fx_pod(f, "p", "job", 1000, GI, NULL), "data", "once");
  fx_pg(f, "disk", "default", 1, "Inqueue");
  Kiln__PodVolume *d2 = fx_pod_pvc(fx_pod(f, "q", "disk", 1000, GI, NULL), "disk", NULL);
  d2->gce_persistent_disk = fx_alloc(sizeof(*d2->gce_persistent_disk));
  kiln__pod_gce_pd_source__init(d2->gce_persistent_disk);
  d2->gce_persistent_disk->pd_name = fx_str("pd-1");
  fx_open(f, vol_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "p", "n0", &reason), SCH_UNSCHEDULABLE);
  assert_string_equal(reason, "node(s) unavailable due to PersistentVolumeClaim with "
                              "ReadWriteOncePod access mode already in-use by another pod");
  assert_int_equal(fx_predicate(f, "q", "n0", &reason), SCH_UNSCHEDULABLE);
  assert_string_equal(reason, "node(s) had no available disk");
  assert_int_equal(fx_predicate(f, "q", "n1", &reason), SCH_FIT);
  fx_free(f);
}

/* A pod assumed on a node (its claim writes in flight, the claim not bound yet) keeps its
 * volume: a pending pod does not get it meanwhile. */
static void test_in_flight_volume_kept(void **state) {
  (void)state;
  fx *f = world(1, 1);
  fx_pv(f, "pv-a", LOCAL, "10Gi", "n0");
  fx_pg(f, "old", "default", 1, "Running");
  fx_pod_pvc(fx_pod(f, "old-0", "old", 1000, GI, "n0"), "data", "old");
  fx_pvc(f, "old", LOCAL, "10Gi");
  fx_open(f, vol_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "job-0", "n0", &reason), SCH_UNRESOLVABLE);
  assert_string_equal(reason, "node(s) didn't find available persistent volumes to bind");
  fx_free(f);
}

/* With predicate.VolumeBindingEnable, VolumeZoneEnable and NodeVolumeLimitsEnable false
 * (Volcano's switches) a pod whose claim is missing is bound. */
static void test_switches(void **state) {
  (void)state;
  fx *f = world(1, 1);
  f->msg->n_persistent_volume_claims = 0; /* the claim is gone (the fixture still frees it) */
  static const char off[] = "actions: \"enqueue, allocate\"\n"
                            "tiers:\n"
                            "- plugins:\n"
                            "  - name: gang\n"
                            "  - name: predicates\n"
                            "    arguments:\n"
                            "      predicate.VolumeBindingEnable: false\n"
                            "      predicate.VolumeZoneEnable: false\n"
                            "      predicate.NodeVolumeLimitsEnable: false\n";
  Kiln__PersistentVolumeClaim *keep = f->msg->persistent_volume_claims[0];
  fx_open(f, off);
  assert_null(f->snap->vol);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  sch_result_free(r);
  f->msg->n_persistent_volume_claims = 1;
  assert_ptr_equal(f->msg->persistent_volume_claims[0], keep);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gang_lands_on_its_volumes),
      cmocka_unit_test(test_smallest_fit),
      cmocka_unit_test(test_volumes_by_host),
      cmocka_unit_test(test_pinned_and_general_affinity),
      cmocka_unit_test(test_reserved_volume_pinned),
      cmocka_unit_test(test_mode_and_access_match),
      cmocka_unit_test(test_gang_all_or_nothing),
      cmocka_unit_test(test_bound_claims),
      cmocka_unit_test(test_prefilter_messages),
      cmocka_unit_test(test_ephemeral_claim),
      cmocka_unit_test(test_provisioning),
      cmocka_unit_test(test_volume_zone),
      cmocka_unit_test(test_volume_limits),
      cmocka_unit_test(test_volume_restrictions),
      cmocka_unit_test(test_in_flight_volume_kept),
      cmocka_unit_test(test_switches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
