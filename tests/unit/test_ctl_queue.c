/* The queue controller's state machine (Volcano state/{open,closed,closing,unknown}.go) and
 * actions (queue_controller_action.go): every (state, action) cell, the counts, the default
 * parent and the hierarchy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_queue.h"
#include "kc_error.h"

static ctl_queue_view view(const char *name, const char *state, size_t npgs) {
  ctl_queue_view v;
  memset(&v, 0, sizeof(v));
  v.q.name = name;
  v.q.state = state;
  v.q.parent = "root";
  v.npodgroups = npgs;
  v.has_status_counts = true;
  return v;
}

static const char *decide(const ctl_queue_view *v, ctl_queue_action a, ctl_queue_plan *p) {
  assert_int_equal(ctl_queue_decide(v, a, p), 0);
  return p->state;
}

/* The table: (state, action, PodGroups left) -> state written. */
static void test_table(void **state) {
  struct {
    const char *from;
    ctl_queue_action a;
    size_t npgs;
    const char *to;
  } cases[] = {
      {"", CTL_QA_SYNC, 0, "Open"},          {"Open", CTL_QA_SYNC, 3, "Open"},
      {"Open", CTL_QA_OPEN, 0, "Open"},      {"Open", CTL_QA_CLOSE, 2, "Closing"},
      {"Open", CTL_QA_CLOSE, 0, "Closed"},   {"", CTL_QA_CLOSE, 0, "Closed"},
      {"Closed", CTL_QA_SYNC, 2, "Closed"},  {"Closed", CTL_QA_CLOSE, 2, "Closed"},
      {"Closed", CTL_QA_OPEN, 2, "Open"},    {"Closing", CTL_QA_SYNC, 1, "Closing"},
      {"Closing", CTL_QA_SYNC, 0, "Closed"}, {"Closing", CTL_QA_CLOSE, 0, "Closed"},
      {"Closing", CTL_QA_OPEN, 1, "Open"},   {"Unknown", CTL_QA_SYNC, 0, "Unknown"},
      {"Unknown", CTL_QA_OPEN, 0, "Open"},   {"Unknown", CTL_QA_CLOSE, 1, "Closing"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ctl_queue_view v = view("q1", cases[i].from, cases[i].npgs);
    ctl_queue_plan p;
    const char *to = decide(&v, cases[i].a, &p);
    if (strcmp(to, cases[i].to) != 0)
      fail_msg("case %zu: %s + %s -> %s, want %s", i, cases[i].from,
               ctl_queue_action_name(cases[i].a), to, cases[i].to);
    assert_int_equal(p.state_changed, strcmp(cases[i].from, cases[i].to) != 0);
    assert_int_equal(p.write_status, p.state_changed);
  }
}

static void test_invalid_state(void **state) {
  ctl_queue_view v = view("q1", "Sleeping", 0);
  ctl_queue_plan p;
  assert_int_equal(ctl_queue_decide(&v, CTL_QA_SYNC, &p), KC_EINVAL);
  assert_string_equal(p.errmsg, "queue q1 state Sleeping is invalid");
}

static void test_close_events(void **state) {
  ctl_queue_view v = view("q1", "Open", 1);
  ctl_queue_plan p;
  decide(&v, CTL_QA_CLOSE, &p);
  assert_string_equal(p.event_reason, "CloseQueue");
  assert_string_equal(p.event_message, "Close queue succeed");
  assert_string_equal(p.fail_reason, "CloseQueue");
  /* Closing -> Closed is a sync: no event (Volcano's syncQueue records none). */
  v = view("q1", "Closing", 0);
  decide(&v, CTL_QA_SYNC, &p);
  assert_string_equal(p.state, "Closed");
  assert_null(p.event_reason);
  /* Open again: the closed-by-parent mark is set to false on the queue itself. */
  v = view("q1", "Closed", 0);
  decide(&v, CTL_QA_OPEN, &p);
  assert_string_equal(p.fail_reason, "OpenQueue");
  assert_int_equal(p.nannotate, 1);
  assert_string_equal(p.annotate[0].queue, "q1");
  assert_string_equal(p.annotate[0].value, "false");
  v.q.closed_by_parent = "false";
  decide(&v, CTL_QA_OPEN, &p);
  assert_int_equal(p.nannotate, 0);
}

static void test_counts(void **state) {
  ctl_queue_view v = view("q1", "Open", 4);
  v.counts[CTL_QC_RUNNING] = 2;
  v.counts[CTL_QC_INQUEUE] = 1;
  v.counts[CTL_QC_COMPLETED] = 1;
  ctl_queue_plan p;
  decide(&v, CTL_QA_SYNC, &p);
  assert_true(p.write_status);
  assert_true(p.counts_only);
  assert_int_equal(p.counts[CTL_QC_RUNNING], 2);
  assert_int_equal(p.counts[CTL_QC_COMPLETED], 1);
  memcpy(v.status_counts, v.counts, sizeof(v.counts));
  decide(&v, CTL_QA_SYNC, &p);
  assert_false(p.write_status); /* nothing changed: no write */
  v.has_status_counts = false;  /* a status without the fields is written once */
  decide(&v, CTL_QA_SYNC, &p);
  assert_true(p.write_status);
  assert_int_equal(ctl_queue_count_of("Inqueue"), CTL_QC_INQUEUE);
  assert_int_equal(ctl_queue_count_of(""), -1);
}

static void test_default_parent(void **state) {
  ctl_queue_view v = view("q1", "", 0);
  v.q.parent = "";
  ctl_queue_plan p;
  decide(&v, CTL_QA_SYNC, &p);
  assert_true(p.set_parent_root);
  v = view("root", "", 0);
  v.q.parent = NULL;
  decide(&v, CTL_QA_SYNC, &p);
  assert_false(p.set_parent_root);
  /* root is never closed */
  decide(&v, CTL_QA_CLOSE, &p);
  assert_false(p.write_status && strcmp(p.state, "Closed") == 0);
  assert_string_equal(p.errmsg, "Root queue cannot be closed");
}

static void test_hierarchy(void **state) {
  /* Closing a parent marks and closes its open children. */
  ctl_queue_ref kids[] = {{"a", "Open", "p", NULL}, {"b", "Closed", "p", NULL}};
  ctl_queue_view v = view("p", "Open", 0);
  v.children = kids;
  v.nchildren = 2;
  ctl_queue_plan p;
  decide(&v, CTL_QA_CLOSE, &p);
  assert_int_equal(p.nenqueue, 1);
  assert_string_equal(p.enqueue[0].queue, "a");
  assert_int_equal(p.enqueue[0].action, CTL_QA_CLOSE);
  assert_string_equal(p.annotate[0].queue, "a");
  assert_string_equal(p.annotate[0].value, "true");
  /* A child synced under a closed parent closes itself. */
  ctl_queue_ref parent = {"p", "Closed", "root", NULL};
  ctl_queue_view c = view("a", "Open", 0);
  c.q.parent = "p";
  c.parent = &parent;
  decide(&c, CTL_QA_SYNC, &p);
  assert_int_equal(p.nenqueue, 1);
  assert_int_equal(p.enqueue[0].action, CTL_QA_CLOSE);
  /* Opening a child under a closed parent is refused. */
  c.q.state = "Closed";
  assert_int_equal(ctl_queue_decide(&c, CTL_QA_OPEN, &p), KC_EINVAL);
  assert_string_equal(p.errmsg, "Failed to open queue a because its parent queue p is closing "
                                "or closed. Open the parent queue first.");
  /* The parent reopens: a child it closed follows, one closed by hand does not. */
  parent.state = "Open";
  c.q.closed_by_parent = "true";
  decide(&c, CTL_QA_SYNC, &p);
  assert_int_equal(p.nenqueue, 1);
  assert_int_equal(p.enqueue[0].action, CTL_QA_OPEN);
  c.q.closed_by_parent = "false";
  decide(&c, CTL_QA_SYNC, &p);
  assert_int_equal(p.nenqueue, 0);
  ctl_queue_ref closed_kids[] = {{"a", "Closed", "p", "true"}, {"b", "Closed", "p", "false"}};
  v = view("p", "Closed", 0);
  v.children = closed_kids;
  v.nchildren = 2;
  decide(&v, CTL_QA_OPEN, &p);
  assert_int_equal(p.nenqueue, 1);
  assert_string_equal(p.enqueue[0].queue, "a");
}

static void test_action_names(void **state) {
  assert_int_equal(ctl_queue_action_parse("OpenQueue"), CTL_QA_OPEN);
  assert_int_equal(ctl_queue_action_parse("CloseQueue"), CTL_QA_CLOSE);
  assert_int_equal(ctl_queue_action_parse("AbortJob"), CTL_QA_SYNC);
  assert_string_equal(ctl_queue_action_name(CTL_QA_SYNC), "SyncQueue");
}

static ctl_qres res1(const char *name, int64_t milli) {
  ctl_qres r = {.n = 1};
  r.r[0].name = name;
  r.r[0].milli = milli;
  return r;
}

/* The tree rules that need other queues, in the words of Volcano's queue webhook. */
static void test_tree_rules(void **state) {
  (void)state;
  char msg[512];
  ctl_qnode self = {.name = "c"};
  ctl_queue_tree_view v = {.self = &self, .parent = "p", .parent_missing = true};
  assert_true(ctl_queue_tree_problem(&v, msg, sizeof(msg)));
  assert_string_equal(msg, "failed to get parent queue of queue c: "
                           "queues.scheduling.volcano.sh \"p\" not found");
  v.parent_missing = false;
  v.cycle = true;
  assert_true(ctl_queue_tree_problem(&v, msg, sizeof(msg)));
  assert_string_equal(msg, "cycle detected in queue hierarchy for queue c");
  v.cycle = false;
  /* c -> p (no cpu capability) -> g (capability 2 cpu): the nearest ancestor naming cpu */
  ctl_qnode anc[2] = {{.name = "p"}, {.name = "g", .capability = res1("cpu", 2000)}};
  anc[0].capability = res1("memory", 1024LL * 1024 * 1024 * 1000);
  v.ancestors = anc;
  v.nancestors = 2;
  self.capability = res1("cpu", 4000);
  assert_true(ctl_queue_tree_problem(&v, msg, sizeof(msg)));
  assert_string_equal(msg, "queue c capability[cpu]=4 exceeds its ancestor's capability=2");
  self.capability = res1("cpu", 1500);
  assert_false(ctl_queue_tree_problem(&v, msg, sizeof(msg)));
  /* siblings: deserved 3 + 2 cpu against the parent's 4 */
  ctl_qnode sib[1] = {{.name = "s", .deserved = res1("cpu", 3000)}};
  v.siblings = sib;
  v.nsiblings = 1;
  self.deserved = res1("cpu", 2000);
  anc[0].deserved = res1("cpu", 4000);
  assert_true(ctl_queue_tree_problem(&v, msg, sizeof(msg)));
  assert_string_equal(msg, "parent queue p validation failed: sum of children's deserved (cpu "
                           "5000.00, memory 0.00) exceeds parent's deserved limit (cpu 4000.00, "
                           "memory 0.00)");
  anc[0].deserved = res1("cpu", 5000);
  assert_false(ctl_queue_tree_problem(&v, msg, sizeof(msg)));
  /* a guarantee (GPUs) the parent does not have */
  self.guarantee = res1("nvidia.com/gpu", 1000);
  assert_true(ctl_queue_tree_problem(&v, msg, sizeof(msg)));
  assert_string_equal(msg, "parent queue p validation failed: sum of children's guarantee (cpu "
                           "0.00, memory 0.00, nvidia.com/gpu 1000.00) exceeds parent's "
                           "guarantee limit (cpu 0.00, memory 0.00)");
  /* under root: nothing to check */
  v.parent = "root";
  assert_false(ctl_queue_tree_problem(&v, msg, sizeof(msg)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),          cmocka_unit_test(test_invalid_state),
      cmocka_unit_test(test_close_events),   cmocka_unit_test(test_counts),
      cmocka_unit_test(test_default_parent), cmocka_unit_test(test_hierarchy),
      cmocka_unit_test(test_action_names),   cmocka_unit_test(test_tree_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
