/* Fuzz target for a credential plugin's output (kc_exec_parse, an ExecCredential in JSON):
 * refused with KC_EPARSE / KC_EINVAL, a message and a zeroed credential, or accepted with a
 * token or a certificate and key pair (never one half of the pair). The first byte picks the
 * API version asked for. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  kc_exec_config x = {0};
  x.api_version = (char *)((data[0] & 1) ? "client.authentication.k8s.io/v1"
                                         : "client.authentication.k8s.io/v1beta1");
  kc_exec_cred cred;
  char err[512] = "";
  int rc = kc_exec_parse(&x, (const char *)data + 1, size - 1, &cred, err, sizeof(err));
  if (rc != 0) {
    if (rc != KC_EPARSE && rc != KC_EINVAL && rc != KC_ENOMEM)
      abort();
    if (err[0] == '\0' || cred.token || cred.cert || cred.key)
      abort();
    return 0;
  }
  if (!cred.token && !cred.cert)
    abort();
  if ((cred.cert == NULL) != (cred.key == NULL))
    abort();
  kc_exec_cred_close(&cred);
  return 0;
}
