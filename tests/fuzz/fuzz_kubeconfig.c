/* Fuzz target for kubeconfig parsing (kc_config_parse_kubeconfig, libyaml underneath): any
 * text is either refused with KC_EPARSE / KC_EINVAL and a message, leaving the config
 * zeroed, or accepted with a server URL, a namespace and a consistent client certificate and
 * key. Relative paths resolve under a directory that does not exist, so nothing is read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_config.h"
#include "kc_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_zeroed(const kc_config *c) {
  static const kc_config zero;
  if (memcmp(c, &zero, sizeof(zero)) != 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kc_config c;
  char err[512] = "";
  /* The first byte picks an override, so both paths of --master are explored. */
  const char *master = size && (data[0] & 1) ? "https://127.0.0.1:6443" : NULL;
  int rc = kc_config_parse_kubeconfig(&c, (const char *)data, size, "/nonexistent-kiln-fuzz", NULL,
                                      master, err, sizeof(err));
  if (rc != 0) {
    if (rc != KC_EPARSE && rc != KC_EINVAL && rc != KC_ENOMEM && rc != KC_ENOENT && rc != KC_EIO &&
        rc != KC_ETOOBIG)
      abort();
    if (err[0] == '\0')
      abort();
    check_zeroed(&c);
    return 0;
  }
  if (!c.server || !c.namespace)
    abort();
  if (master && strcmp(c.server, master) != 0)
    abort();
  kc_config_close(&c);
  return 0;
}
