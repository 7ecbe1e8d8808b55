/* Fuzz target for the scheduler configuration (sch_conf_parse over libyaml): any text is
 * refused with KC_EPARSE / KC_ENOENT / KC_EINVAL and a message naming the culprit, or gives
 * a configuration that can be freed. */
#include <stdint.h>
#include <stdlib.h>

#include "kc_error.h"
#include "sch_conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sch_conf *conf = NULL;
  char err[512] = "";
  int rc = sch_conf_parse((const char *)data, size, &conf, err, sizeof(err));
  if (rc != 0) {
    if (rc != KC_EPARSE && rc != KC_ENOENT && rc != KC_EINVAL && rc != KC_ENOMEM &&
        rc != KC_ERANGE && rc != KC_ETOOBIG)
      abort();
    if (err[0] == '\0' || conf)
      abort();
    return 0;
  }
  if (!conf)
    abort();
  sch_conf_free(conf);
  return 0;
}
