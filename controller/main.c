/* kiln-controller: the Volcano-compatible job controller. */
#include "kc_cli.h"
#include "kc_log.h"

static const char summary[] =
    "kiln-controller runs the Volcano-compatible job controller: it turns batch.volcano.sh Jobs\n"
    "into PodGroups and pods and drives their phase machine.";

int main(int argc, char **argv) {
  kc_cli_common common = {.logtostderr = true};
  const kc_flag flags[] = {KC_CLI_COMMON_FLAGS(&common)};
  int rc = kc_cli_parse("kiln-controller", summary, flags, sizeof(flags) / sizeof(flags[0]),
                        &common, argc, argv);
  if (rc >= 0)
    return rc;
  KC_INFO("kiln-controller %s starting (kubeconfig=%s)", KILN_VERSION,
          common.kubeconfig ? common.kubeconfig : "<in-cluster>");
  KC_V(4, "verbosity %d", kc_log_verbosity);
  KC_INFO("the job controller is not implemented yet; exiting");
  return 0;
}
