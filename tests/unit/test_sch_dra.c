/* Dynamic Resource Allocation (sch_dra.c through the predicates plugin with
 * predicate.DynamicResourceAllocationEnable): devices of ResourceSlices given to a gang's
 * claims all or nothing, never twice, classes and requests selecting with CEL, shared and
 * allocated claims, the claim writes the shell makes before binding, and the messages a pod
 * pending for devices gets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "sch_dra.h"
#include "test_sch_plugins_fixture.h"

#define DRIVER "gpu.example.com"

static const char dra_yaml[] = "actions: \"enqueue, allocate\"\n"
                               "tiers:\n"
                               "- plugins:\n"
                               "  - name: gang\n"
                               "- plugins:\n"
                               "  - name: predicates\n"
                               "    arguments:\n"
                               "      predicate.DynamicResourceAllocationEnable: true\n";

/* ---- builders ---- */

static Kiln__DraDeviceSelector *cel_sel(const char *expr) {
  Kiln__DraDeviceSelector *s = fx_alloc(sizeof(*s));
  kiln__dra_device_selector__init(s);
  s->cel = fx_alloc(sizeof(*s->cel));
  kiln__dra_cel_selector__init(s->cel);
  s->cel->expression = fx_str(expr);
  return s;
}

/* A DeviceClass called name selecting with expr (NULL: every device). */
static void fx_class(fx *f, const char *name, const char *expr) {
  Kiln__DeviceClass *dc = fx_alloc(sizeof(*dc));
  kiln__device_class__init(dc);
  dc->metadata = fx_meta("", name);
  dc->spec = fx_alloc(sizeof(*dc->spec));
  kiln__device_class_spec__init(dc->spec);
  if (expr)
    FX_APPEND(dc->spec->selectors, dc->spec->n_selectors, cel_sel(expr));
  FX_APPEND(f->msg->device_classes, f->msg->n_device_classes, dc);
}

/* A slice of node with n devices "<node>-gpu-<i>", each with the attribute model (a100 for
 * the even ones, h100 for the odd ones when mixed) and the capacity memory 80Gi. */
static void fx_slice(fx *f, const char *node, int n, bool mixed) {
  Kiln__ResourceSlice *rs = fx_alloc(sizeof(*rs));
  kiln__resource_slice__init(rs);
  char name[128];
  snprintf(name, sizeof(name), "%s-" DRIVER, node);
  rs->metadata = fx_meta("", name);
  rs->spec = fx_alloc(sizeof(*rs->spec));
  kiln__resource_slice_spec__init(rs->spec);
  rs->spec->driver = fx_str(DRIVER);
  rs->spec->node_name = fx_str(node);
  rs->spec->pool = fx_alloc(sizeof(*rs->spec->pool));
  kiln__dra_pool__init(rs->spec->pool);
  rs->spec->pool->name = fx_str(node);
  for (int i = 0; i < n; i++) {
    Kiln__DraDevice *d = fx_alloc(sizeof(*d));
    kiln__dra_device__init(d);
    snprintf(name, sizeof(name), "%s-gpu-%d", node, i);
    d->name = fx_str(name);
    Kiln__DraDevice__AttributesEntry *a = fx_alloc(sizeof(*a));
    kiln__dra_device__attributes_entry__init(a);
    a->key = fx_str("model");
    a->value = fx_alloc(sizeof(*a->value));
    kiln__dra_device_attribute__init(a->value);
    a->value->string = fx_str(mixed && i % 2 ? "h100" : "a100");
    FX_APPEND(d->attributes, d->n_attributes, a);
    Kiln__DraDevice__CapacityEntry *c = fx_alloc(sizeof(*c));
    kiln__dra_device__capacity_entry__init(c);
    c->key = fx_str(DRIVER "/memory");
    c->value = fx_alloc(sizeof(*c->value));
    kiln__dra_device_capacity__init(c->value);
    c->value->value = fx_str("80Gi");
    FX_APPEND(d->capacity, d->n_capacity, c);
    FX_APPEND(rs->spec->devices, rs->spec->n_devices, d);
  }
  FX_APPEND(f->msg->resource_slices, f->msg->n_resource_slices, rs);
}

/* A claim ns/name for count devices of cls (mode NULL: ExactCount; expr: a request
 * selector). */
static Kiln__ResourceClaim *fx_claim(fx *f, const char *name, const char *cls, int64_t count,
                                     const char *mode, const char *expr) {
  Kiln__ResourceClaim *c = fx_alloc(sizeof(*c));
  kiln__resource_claim__init(c);
  c->metadata = fx_meta("ns", name);
  c->spec = fx_alloc(sizeof(*c->spec));
  kiln__resource_claim_spec__init(c->spec);
  c->spec->devices = fx_alloc(sizeof(*c->spec->devices));
  kiln__dra_device_claim__init(c->spec->devices);
  Kiln__DraDeviceRequest *r = fx_alloc(sizeof(*r));
  kiln__dra_device_request__init(r);
  r->name = fx_str("gpus");
  r->exactly = fx_alloc(sizeof(*r->exactly));
  kiln__dra_exact_request__init(r->exactly);
  r->exactly->device_class_name = fx_str(cls);
  r->exactly->has_count = 1;
  r->exactly->count = count;
  if (mode)
    r->exactly->allocation_mode = fx_str(mode);
  if (expr)
    FX_APPEND(r->exactly->selectors, r->exactly->n_selectors, cel_sel(expr));
  FX_APPEND(c->spec->devices->requests, c->spec->devices->n_requests, r);
  FX_APPEND(f->msg->resource_claims, f->msg->n_resource_claims, c);
  return c;
}

/* The claim's status.allocation: the devices named, on node. */
static void fx_allocated(Kiln__ResourceClaim *c, const char *node, const char *const *devs, int n) {
  c->status = fx_alloc(sizeof(*c->status));
  kiln__resource_claim_status__init(c->status);
  c->status->allocation = fx_alloc(sizeof(*c->status->allocation));
  kiln__dra_allocation_result__init(c->status->allocation);
  Kiln__DraDeviceAllocation *a = fx_alloc(sizeof(*a));
  kiln__dra_device_allocation__init(a);
  c->status->allocation->devices = a;
  for (int i = 0; i < n; i++) {
    Kiln__DraRequestResult *r = fx_alloc(sizeof(*r));
    kiln__dra_request_result__init(r);
    r->request = fx_str("gpus");
    r->driver = fx_str(DRIVER);
    r->pool = fx_str(node);
    r->device = fx_str(devs[i]);
    FX_APPEND(a->results, a->n_results, r);
  }
}

/* pod's spec.resourceClaims entry "gpu": the claim called claim, or (tmpl) a template whose
 * claim is claim (NULL: not created yet). */
static void fx_pod_claim(Kiln__Pod *p, const char *claim, bool tmpl) {
  Kiln__PodResourceClaim *pc = fx_alloc(sizeof(*pc));
  kiln__pod_resource_claim__init(pc);
  pc->name = fx_str("gpu");
  if (!tmpl) {
    pc->resource_claim_name = fx_str(claim);
  } else {
    pc->resource_claim_template_name = fx_str("tmpl");
    if (claim) {
      Kiln__PodResourceClaimStatus *st = fx_alloc(sizeof(*st));
      kiln__pod_resource_claim_status__init(st);
      st->name = fx_str("gpu");
      st->resource_claim_name = fx_str(claim);
      FX_APPEND(p->resource_claim_statuses, p->n_resource_claim_statuses, st);
    }
  }
  FX_APPEND(p->resource_claims, p->n_resource_claims, pc);
}

/* Two nodes of ndev devices each; gang "job" of npods pods, each with its own claim
 * "job-<i>" for count devices of class gpu.example.com. */
static fx *world(int ndev, int npods, int64_t count) {
  fx *f = fx_new();
  fx_node(f, "n0", 32000, 64 * GI, 110);
  fx_node(f, "n1", 32000, 64 * GI, 110);
  fx_slice(f, "n0", ndev, false);
  fx_slice(f, "n1", ndev, false);
  fx_class(f, DRIVER, "device.driver == \"" DRIVER "\"");
  fx_pg(f, "job", "default", npods, "Inqueue");
  for (int i = 0; i < npods; i++) {
    char name[32];
    snprintf(name, sizeof(name), "job-%d", i);
    Kiln__Pod *p = fx_pod(f, name, "job", 1000, GI, NULL);
    fx_claim(f, name, DRIVER, count, NULL, NULL);
    fx_pod_claim(p, name, false);
  }
  return f;
}

static size_t writes_of(fx *f, const char *pod, sch_dra_write *w, size_t max) {
  assert_non_null(f->snap->dra);
  return sch_dra_writes(f->snap->dra, &f->snap->tasks[fx_task(f, pod)], w, max);
}

/* ---- tests ---- */

/* 4 pods x 2 devices on 2 nodes of 4: all bound, 8 distinct devices, each claim allocated on
 * its pod's node. */
static void test_gang_gets_distinct_devices(void **state) {
  (void)state;
  fx *f = world(4, 4, 2);
  fx_open(f, dra_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 4);
  char seen[8][64];
  int nseen = 0;
  for (size_t b = 0; b < r->nbinds; b++) {
    const sch_task *t = &f->snap->tasks[r->binds[b].task];
    sch_dra_write w[4];
    assert_int_equal(writes_of(f, t->pod->name, w, 4), 1);
    assert_true(w[0].allocate);
    assert_true(w[0].node_local);
    assert_int_equal(w[0].node, r->binds[b].node);
    assert_false(w[0].reserved);
    assert_int_equal(w[0].nresults, 2);
    const char *claim = f->msg->resource_claims[w[0].claim]->metadata->name;
    assert_string_equal(claim, t->pod->name);
    for (int k = 0; k < 2; k++) {
      const sch_dra_result *res = &w[0].results[k];
      assert_string_equal(res->request, "gpus");
      assert_string_equal(res->driver, DRIVER);
      /* the device is on the pod's node */
      const char *node = f->snap->nodes[r->binds[b].node].name;
      assert_memory_equal(res->device, node, strlen(node));
      for (int s = 0; s < nseen; s++)
        assert_string_not_equal(seen[s], res->device);
      snprintf(seen[nseen++], sizeof(seen[0]), "%s", res->device);
    }
  }
  assert_int_equal(nseen, 8);
  sch_result_free(r);
  fx_free(f);
}

/* 4 pods x 3 devices on 8: the gang does not fit, nothing is bound and the discarded
 * statement leaves no device allocated; the message names the class. */
static void test_gang_all_or_nothing(void **state) {
  (void)state;
  fx *f = world(4, 4, 3);
  fx_open(f, dra_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  sch_dra_write w[4];
  for (int i = 0; i < 4; i++) {
    char name[32];
    snprintf(name, sizeof(name), "job-%d", i);
    assert_int_equal(writes_of(f, name, w, 4), 0);
  }
  const char *msg = fx_pg_message(f, r, "job");
  if (!strstr(msg, "have no free device of class " DRIVER))
    fail_msg("message: %s", msg);
  sch_result_free(r);
  fx_free(f);
}

/* A claim allocated already holds its devices: a pod asking for 2 of the 2 on the node
 * where one is taken stays pending; the other node takes it. */
static void test_allocated_devices_not_given_twice(void **state) {
  (void)state;
  fx *f = world(2, 1, 2);
  Kiln__ResourceClaim *old = fx_claim(f, "old", DRIVER, 1, NULL, NULL);
  static const char *const taken[] = {"n0-gpu-1"};
  fx_allocated(old, "n0", taken, 1);
  fx_open(f, dra_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "job-0", "n0", &reason), SCH_UNSCHEDULABLE);
  assert_string_equal(reason, "have no free device of class " DRIVER);
  assert_int_equal(fx_predicate(f, "job-0", "n1", &reason), SCH_FIT);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_string_equal(f->snap->nodes[r->binds[0].node].name, "n1");
  sch_result_free(r);
  fx_free(f);
}

/* A pod assumed on a node (bound by the shell, its claim writes in flight: no allocation in
 * the cache yet) keeps its devices: a pending pod does not get them meanwhile. */
static void test_in_flight_devices_kept(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n0", 32000, 64 * GI, 110);
  fx_slice(f, "n0", 2, false);
  fx_class(f, DRIVER, NULL);
  fx_pg(f, "old", "default", 1, "Running");
  fx_claim(f, "oldc", DRIVER, 2, NULL, NULL);
  fx_pod_claim(fx_pod(f, "old-0", "old", 1000, GI, "n0"), "oldc", false);
  fx_pg(f, "job", "default", 1, "Inqueue");
  fx_claim(f, "newc", DRIVER, 1, NULL, NULL);
  fx_pod_claim(fx_pod(f, "new-0", "job", 1000, GI, NULL), "newc", false);
  fx_open(f, dra_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "new-0", "n0", &reason), SCH_UNSCHEDULABLE);
  assert_string_equal(reason, "have no free device of class " DRIVER);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  sch_result_free(r);
  fx_free(f);
}

/* Two pods share one claim: it is allocated once, both go to its node, and each pod's write
 * carries the same allocation. */
static void test_shared_claim(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n0", 32000, 64 * GI, 110);
  fx_node(f, "n1", 32000, 64 * GI, 110);
  fx_slice(f, "n1", 1, false);
  fx_class(f, DRIVER, NULL);
  fx_pg(f, "job", "default", 2, "Inqueue");
  fx_claim(f, "shared", DRIVER, 1, NULL, NULL);
  fx_pod_claim(fx_pod(f, "a", "job", 1000, GI, NULL), "shared", false);
  fx_pod_claim(fx_pod(f, "b", "job", 1000, GI, NULL), "shared", false);
  fx_open(f, dra_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 2);
  for (size_t b = 0; b < 2; b++)
    assert_string_equal(f->snap->nodes[r->binds[b].node].name, "n1");
  sch_dra_write wa, wb;
  assert_int_equal(writes_of(f, "a", &wa, 1), 1);
  assert_int_equal(writes_of(f, "b", &wb, 1), 1);
  assert_int_equal(wa.nresults, 1);
  assert_ptr_equal(wa.results, wb.results);
  assert_string_equal(wa.results[0].device, "n1-gpu-0");
  sch_result_free(r);
  fx_free(f);
}

/* The class's and the request's CEL select: only a100 devices, and of those the ones the
 * request's selector takes. */
static void test_cel_selectors(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n0", 32000, 64 * GI, 110);
  fx_slice(f, "n0", 4, true); /* gpu-0, gpu-2 a100; gpu-1, gpu-3 h100 */
  fx_class(f, "a100", "device.attributes[\"" DRIVER "\"].model == \"a100\"");
  fx_pg(f, "job", "default", 1, "Inqueue");
  fx_claim(f, "two", "a100", 2, NULL,
           "device.capacity[\"" DRIVER "\"].memory.compareTo(quantity(\"40Gi\")) >= 0");
  fx_pod_claim(fx_pod(f, "p", "job", 1000, GI, NULL), "two", false);
  fx_pg(f, "big", "default", 1, "Inqueue");
  fx_claim(f, "three", "a100", 3, NULL, NULL);
  fx_pod_claim(fx_pod(f, "q", "big", 1000, GI, NULL), "three", false);
  fx_open(f, dra_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  sch_dra_write w;
  assert_int_equal(writes_of(f, "p", &w, 1), 1);
  assert_int_equal(w.nresults, 2);
  assert_string_equal(w.results[0].device, "n0-gpu-2");
  assert_string_equal(w.results[1].device, "n0-gpu-0");
  assert_int_equal(writes_of(f, "q", &w, 1), 0);
  sch_result_free(r);
  fx_free(f);
}

/* allocationMode All takes every matching device on the node, and none may be taken. */
static void test_all_mode(void **state) {
  (void)state;
  fx *f = world(3, 1, 0);
  Kiln__ResourceClaim *c = f->msg->resource_claims[0];
  c->spec->devices->requests[0]->exactly->allocation_mode = fx_str("All");
  Kiln__ResourceClaim *old = fx_claim(f, "old", DRIVER, 1, NULL, NULL);
  static const char *const taken[] = {"n1-gpu-0"};
  fx_allocated(old, "n1", taken, 1);
  fx_open(f, dra_yaml);
  const char *reason;
  assert_int_equal(fx_predicate(f, "job-0", "n1", &reason), SCH_UNSCHEDULABLE);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  sch_dra_write w;
  assert_int_equal(writes_of(f, "job-0", &w, 1), 1);
  assert_int_equal(w.nresults, 3);
  assert_string_equal(f->snap->nodes[w.node].name, "n0");
  sch_result_free(r);
  fx_free(f);
}

/* What keeps a pod pending, named: a class whose CEL does not compile, one that fails at run
 * time, a missing class, a missing claim, a template's claim not made yet. */
static void test_errors_named(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n0", 32000, 64 * GI, 110);
  fx_slice(f, "n0", 2, false);
  fx_class(f, "bad", "device.attributes[\"x\"].model ==");
  fx_class(f, "runtime", "device.attributes[\"" DRIVER "\"].nope == 1");
  static const struct {
    const char *pod, *claim, *cls, *want;
    bool tmpl, make;
  } cases[] = {
      {"p1", "c1", "bad", "class bad: selector #0: CEL compile error: ", false, true},
      {"p2", "c2", "runtime", "class runtime: selector #0: CEL runtime error: no such key: nope",
       false, true},
      {"p3", "c3", "missing", "request gpus: device class missing does not exist", false, true},
      {"p4", "c4", DRIVER, "resourceclaim \"c4\" not found", false, false},
      {"p5", NULL, DRIVER, "pod ns/p5: ResourceClaim not created yet", true, false},
      {"p6", "c6", DRIVER, "ResourceClaim ns/c6 was not created for pod ns/p6", true, true},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    fx_pg(f, cases[i].pod, "default", 1, "Inqueue");
    Kiln__Pod *p = fx_pod(f, cases[i].pod, cases[i].pod, 1000, GI, NULL);
    fx_pod_claim(p, cases[i].claim, cases[i].tmpl);
    if (cases[i].make)
      fx_claim(f, cases[i].claim, cases[i].cls, 1, NULL, NULL);
  }
  fx_open(f, dra_yaml);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *reason;
    assert_int_equal(fx_predicate(f, cases[i].pod, "n0", &reason), SCH_UNRESOLVABLE);
    if (!strstr(reason, cases[i].want))
      fail_msg("%s: %s, want %s", cases[i].pod, reason, cases[i].want);
  }
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 0);
  sch_result_free(r);
  fx_free(f);
}

/* Requests writing the same selectors share them (compiled once, answered once per device),
 * yet each error names its own claim: two claims whose selector fails at run time, asked
 * twice, two whose selector does not compile, and two that select, which both run. */
static void test_request_selectors_shared(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n0", 32000, 64 * GI, 110);
  fx_slice(f, "n0", 2, false);
  fx_class(f, DRIVER, NULL);
  static const struct {
    const char *name, *expr, *want;
  } cases[] = {
      {"c1", "device.attributes[\"" DRIVER "\"].nope == 1",
       "claim ns/c1: request gpus: selector #0: CEL runtime error: no such key: nope"},
      {"c2", "device.attributes[\"" DRIVER "\"].nope == 1",
       "claim ns/c2: request gpus: selector #0: CEL runtime error: no such key: nope"},
      {"c3", "device.driver ==", "claim ns/c3: request gpus: selector #0: CEL compile error: "},
      {"c4", "device.driver ==", "claim ns/c4: request gpus: selector #0: CEL compile error: "},
      {"c5", "device.attributes[\"" DRIVER "\"].model == \"a100\"", NULL},
      {"c6", "device.attributes[\"" DRIVER "\"].model == \"a100\"", NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    fx_pg(f, cases[i].name, "default", 1, "Inqueue");
    fx_claim(f, cases[i].name, DRIVER, 1, NULL, cases[i].expr);
    fx_pod_claim(fx_pod(f, cases[i].name, cases[i].name, 1000, GI, NULL), cases[i].name, false);
  }
  fx_open(f, dra_yaml);
  for (int round = 0; round < 2; round++)
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
      const char *reason;
      int rc = fx_predicate(f, cases[i].name, "n0", &reason);
      assert_int_equal(rc, cases[i].want ? SCH_UNRESOLVABLE : SCH_FIT);
      if (cases[i].want && !strstr(reason, cases[i].want))
        fail_msg("%s: %s, want %s", cases[i].name, reason, cases[i].want);
    }
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 2);
  sch_dra_write w5, w6;
  assert_int_equal(writes_of(f, "c5", &w5, 1), 1);
  assert_int_equal(writes_of(f, "c6", &w6, 1), 1);
  assert_string_not_equal(w5.results[0].device, w6.results[0].device);
  sch_result_free(r);
  fx_free(f);
}

/* A template's claim (owned by the pod) is used; without the argument the claims are not
 * looked at (Volcano's default). */
static void test_template_and_switch(void **state) {
  (void)state;
  fx *f = fx_new();
  fx_node(f, "n0", 32000, 64 * GI, 110);
  fx_slice(f, "n0", 1, false);
  fx_class(f, DRIVER, NULL);
  fx_pg(f, "job", "default", 1, "Inqueue");
  Kiln__Pod *p = fx_pod(f, "p", "job", 1000, GI, NULL);
  fx_pod_claim(p, "p-gpu-x7k2", true);
  Kiln__ResourceClaim *c = fx_claim(f, "p-gpu-x7k2", DRIVER, 1, NULL, NULL);
  Kiln__OwnerReference *o = fx_alloc(sizeof(*o));
  kiln__owner_reference__init(o);
  o->uid = fx_str("p");
  FX_APPEND(c->metadata->owner_references, c->metadata->n_owner_references, o);
  fx_open(f, dra_yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  sch_dra_write w;
  assert_int_equal(writes_of(f, "p", &w, 1), 1);
  assert_string_equal(w.results[0].device, "n0-gpu-0");
  sch_result_free(r);
  sch_conf_free(f->conf);
  sch_snapshot_free(f->snap);
  /* the same world without the switch: no DRA state, the pod is placed as any other */
  fx_open(f, "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
             "- plugins:\n  - name: predicates\n");
  r = fx_run(f);
  assert_int_equal(r->nbinds, 1);
  assert_null(f->snap->dra);
  sch_result_free(r);
  fx_free(f);
}

/* ---- devices counted as resources of their class ---- */

static int64_t class_dim(const fx *f, const sch_resource *r, const char *cls) {
  int k = sch_snapshot_scalar(f->snap, cls);
  return k < 0 ? -1 : r->scalar[k];
}

/* A task asks for its claims' devices (resreq, not init_resreq), a node offers those its
 * slices hold, the cluster the sum; a gang's minResources takes them; a queue's capability
 * names the class. A shared claim counts once; an allocated one by its results. */
static void test_devices_counted(void **state) {
  (void)state;
  fx *f = world(4, 2, 2);
  fx_pg_min_resources(f->msg->pod_groups[0], 2000, 2 * GI);
  fx_queue_capability(fx_queue(f, "q", 1), 0, 0);
  fx_res_scalar(f->msg->queues[0]->spec->capability, DRIVER, 3000);
  fx_pg(f, "sh", "default", 2, "Inqueue");
  fx_claim(f, "shared", DRIVER, 1, NULL, NULL);
  fx_pod_claim(fx_pod(f, "sa", "sh", 1000, GI, NULL), "shared", false);
  fx_pod_claim(fx_pod(f, "sb", "sh", 1000, GI, NULL), "shared", false);
  fx_pg(f, "run", "default", 1, "Running");
  Kiln__ResourceClaim *c = fx_claim(f, "done", DRIVER, 3, NULL, NULL);
  static const char *const got[] = {"n1-gpu-0", "n1-gpu-1", "n1-gpu-2"};
  fx_allocated(c, "n1", got, 3);
  fx_pod_claim(fx_pod(f, "r", "run", 1000, GI, "n1"), "done", false);
  fx_open(f, dra_yaml);
  const sch_task *t = &f->snap->tasks[fx_task(f, "job-0")];
  assert_int_equal(class_dim(f, &t->resreq, DRIVER), 2000);
  assert_int_equal(class_dim(f, &t->init_resreq, DRIVER), 0);
  assert_int_equal(class_dim(f, &fx_snode(f, "n0")->allocatable, DRIVER), 4000);
  assert_int_equal(class_dim(f, &fx_snode(f, "n1")->idle, DRIVER), 1000);
  assert_int_equal(class_dim(f, &f->snap->total_allocatable, DRIVER), 8000);
  assert_int_equal(class_dim(f, &fx_job(f, "job")->min_resources, DRIVER), 4000);
  assert_int_equal(class_dim(f, &fx_squeue(f, "q")->capability, DRIVER), 3000);
  int64_t sa = class_dim(f, &f->snap->tasks[fx_task(f, "sa")].resreq, DRIVER);
  int64_t sb = class_dim(f, &f->snap->tasks[fx_task(f, "sb")].resreq, DRIVER);
  assert_int_equal(sa + sb, 1000);
  fx_free(f);
}

static const char dra_queue_yaml[] = "actions: \"enqueue, allocate\"\n"
                                     "tiers:\n"
                                     "- plugins:\n"
                                     "  - name: gang\n"
                                     "- plugins:\n"
                                     "  - name: predicates\n"
                                     "    arguments:\n"
                                     "      predicate.DynamicResourceAllocationEnable: true\n"
                                     "  - name: %s\n";

/* A queue whose capability allows 4 devices of the class holds a gang of 3 pods x 2 (the
 * nodes have 8 free), with the numbers in the PodGroup's message, under proportion and
 * capacity alike: a Pending gang at enqueue (its minResources takes the devices), an Inqueue
 * one at allocate; with 6 allowed the gang runs. */
static void queue_limits_devices(const char *plugin, const char *phase, int64_t allowed,
                                 size_t binds, const char *want) {
  fx *f = world(4, 3, 2);
  Kiln__PodGroup *pg = f->msg->pod_groups[0];
  free(pg->spec->queue); /* world() made them "default" and "Inqueue" */
  pg->spec->queue = fx_str("q");
  free(pg->status->phase);
  pg->status->phase = fx_str(phase);
  fx_pg_min_resources(pg, 3000, 3 * GI);
  Kiln__Queue *q = fx_queue(f, "q", 1);
  fx_queue_capability(q, 0, 0);
  fx_res_scalar(q->spec->capability, DRIVER, allowed * 1000);
  char yaml[sizeof(dra_queue_yaml) + 32];
  snprintf(yaml, sizeof(yaml), dra_queue_yaml, plugin);
  fx_open(f, yaml);
  sch_result *r = fx_run(f);
  assert_int_equal(r->nbinds, binds);
  const char *msg = fx_pg_message(f, r, "job");
  if (want && !strstr(msg, want))
    fail_msg("%s %s: message: %s, want %s", plugin, phase, msg, want);
  sch_result_free(r);
  fx_free(f);
}

static void test_queue_limits_devices(void **state) {
  (void)state;
  static const char gang[] = "queue q resource quota insufficient: the gang needs 6 " DRIVER
                             " (minResources); the queue has 4 " DRIVER " left of 4 " DRIVER;
  queue_limits_devices("proportion", "Pending", 4, 0, gang);
  queue_limits_devices("capacity", "Pending", 4, 0, gang);
  queue_limits_devices("proportion", "Inqueue", 4, 0,
                       "queue q resource quota insufficient: pod requests 2 " DRIVER
                       "; the queue's deserved share is 4 " DRIVER ", 4 " DRIVER " allocated");
  queue_limits_devices("capacity", "Inqueue", 4, 0, "queue q");
  queue_limits_devices("proportion", "Pending", 6, 3, NULL);
  queue_limits_devices("capacity", "Pending", 6, 3, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gang_gets_distinct_devices),
      cmocka_unit_test(test_gang_all_or_nothing),
      cmocka_unit_test(test_allocated_devices_not_given_twice),
      cmocka_unit_test(test_in_flight_devices_kept),
      cmocka_unit_test(test_shared_claim),
      cmocka_unit_test(test_cel_selectors),
      cmocka_unit_test(test_all_mode),
      cmocka_unit_test(test_errors_named),
      cmocka_unit_test(test_request_selectors_shared),
      cmocka_unit_test(test_template_and_switch),
      cmocka_unit_test(test_devices_counted),
      cmocka_unit_test(test_queue_limits_devices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
