/* A quick synthetic scale run: 1,000 nodes, 10,000 pending pods in gangs of 10, through the
 * default configuration. Checks that every pod is placed with node accounting intact and
 * prints placements per second (not asserted: machines differ). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>

#include "sch_conf.h"
#include "sch_framework.h"
#include "test_sch_plugins_fixture.h"

/* SCH_SCALE_NODES / SCH_SCALE_GANGS override the sizes for a manual benchmark run. */
static int env_int(const char *name, int def) {
  const char *v = getenv(name);
  char *end;
  long x = v ? strtol(v, &end, 10) : 0;
  return v && *v && !*end && x > 0 ? (int)x : def;
}

#define GANG 10

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_scale(void **state) {
  (void)state;
  const int NODES = env_int("SCH_SCALE_NODES", 1000), GANGS = env_int("SCH_SCALE_GANGS", 1000);
  fx *f = fx_new();
  char name[64];
  for (int i = 0; i < NODES; i++) {
    snprintf(name, sizeof(name), "node-%04d", i);
    fx_node(f, name, 32000, 128 * GI, 110);
  }
  fx_queue(f, "default", 1);
  for (int g = 0; g < GANGS; g++) {
    snprintf(name, sizeof(name), "job-%04d", g);
    fx_pg(f, name, "default", GANG, "Inqueue");
    for (int k = 0; k < GANG; k++) {
      char pod[80];
      snprintf(pod, sizeof(pod), "%s-%d", name, k);
      fx_pod(f, pod, name, 1000, 2 * GI, NULL);
    }
  }
  double t0 = now_s();
  assert_int_equal(sch_snapshot_new(f->msg, NULL, &f->snap), 0);
  /* SCH_SCALE_CONF=core: only priority, gang and conformance, to time the core alone. */
  const char *which = getenv("SCH_SCALE_CONF");
  if (which && strcmp(which, "core") == 0) {
    static const char core[] = "actions: \"enqueue, allocate, backfill\"\n"
                               "tiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
                               "  - name: conformance\n";
    assert_int_equal(sch_conf_parse(core, strlen(core), &f->conf, NULL, 0), 0);
  } else {
    assert_int_equal(sch_conf_default(&f->conf), 0);
  }
  assert_int_equal(sch_session_open(f->snap, f->conf, NULL, &f->ssn), 0);
  double t1 = now_s();
  assert_int_equal(sch_session_run(f->ssn), 0);
  double t2 = now_s();
  sch_result *r = NULL;
  assert_int_equal(sch_session_close(f->ssn, &r), 0);
  f->ssn = NULL;
  double t3 = now_s();
  assert_int_equal(r->nbinds, GANGS * GANG);
  int64_t used = 0;
  int32_t counted = 0;
  for (int32_t i = 0; i < f->snap->nnodes; i++) {
    const sch_node *n = &f->snap->nodes[i];
    assert_true(n->used.milli_cpu <= n->allocatable.milli_cpu);
    used += n->used.milli_cpu;
    counted += n->ntasks;
  }
  assert_int_equal(used, (int64_t)GANGS * GANG * 1000);
  assert_int_equal(counted, GANGS * GANG);
  printf("scale: %d nodes, %d pods in gangs of %d: snapshot+open %.3fs, actions %.3fs "
         "(%.0f placements/s), close %.3fs\n",
         NODES, GANGS * GANG, GANG, t1 - t0, t2 - t1, (double)(GANGS * GANG) / (t2 - t1), t3 - t2);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("scale: max RSS %ld MB (fixture message included)\n", ru.ru_maxrss / 1024);
  sch_result_free(r);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_scale)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
