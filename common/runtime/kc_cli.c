#include "kc_cli.h"

#include "kc_error.h"
#include "kc_log.h"

#include <stdio.h>

int kc_cli_apply(const kc_cli_common *o, char *err, size_t errlen) {
  if (kc_log_verbosity < 0) {
    snprintf(err, errlen, "invalid argument \"%d\" for \"-v\" flag: must be >= 0",
             kc_log_verbosity);
    return KC_EINVAL;
  }
  if (o->logging_format && kc_log_set_format(o->logging_format) != 0) {
    snprintf(err, errlen,
             "invalid argument \"%s\" for \"--logging-format\" flag: "
             "permitted formats are \"text\" and \"json\"",
             o->logging_format);
    return KC_EINVAL;
  }
  if (o->vmodule && kc_log_set_vmodule(o->vmodule) != 0) {
    snprintf(err, errlen,
             "invalid argument \"%s\" for \"--vmodule\" flag: "
             "expected pattern=N[,pattern=N...]",
             o->vmodule);
    return KC_EINVAL;
  }
  if (o->log_dir || o->log_file)
    KC_WARN("--log_dir and --log_file are accepted for compatibility; logs go to stderr");
  return 0;
}

int kc_cli_parse(const char *prog, const char *summary, const kc_flag *flags, size_t nflags,
                 kc_cli_common *o, int argc, char **argv) {
  char err[512];
  if (kc_flags_parse(flags, nflags, argc, argv, NULL, err, sizeof(err)) != 0 ||
      kc_cli_apply(o, err, sizeof(err)) != 0) {
    fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", prog, err, prog);
    return 2;
  }
  if (o->help) {
    kc_flags_usage(stdout, prog, summary, flags, nflags);
    return 0;
  }
  if (o->version) {
    printf("%s version %s\n", prog, KILN_VERSION);
    return 0;
  }
  return -1;
}
