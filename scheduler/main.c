/* kiln-scheduler: the Volcano-compatible batch scheduler. */
#include "kc_cli.h"
#include "kc_log.h"

static const char summary[] =
    "kiln-scheduler runs the Volcano-compatible gang scheduler: it places PodGroups\n"
    "all-or-nothing onto nodes and binds their pods.";

int main(int argc, char **argv) {
  kc_cli_common common = {.logtostderr = true};
  const kc_flag flags[] = {KC_CLI_COMMON_FLAGS(&common)};
  int rc = kc_cli_parse("kiln-scheduler", summary, flags, sizeof(flags) / sizeof(flags[0]),
                        &common, argc, argv);
  if (rc >= 0)
    return rc;
  KC_INFO("kiln-scheduler %s starting (kubeconfig=%s)", KILN_VERSION,
          common.kubeconfig ? common.kubeconfig : "<in-cluster>");
  KC_V(4, "verbosity %d", kc_log_verbosity);
  KC_INFO("the scheduler is not implemented yet; exiting");
  return 0;
}
