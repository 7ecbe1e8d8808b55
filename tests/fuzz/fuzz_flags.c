/* Fuzz target for command-line parsing (kc_flags_parse, pflag's syntax): the input split at
 * NUL bytes is argv. Every flag type is in the table. A parse either fails with KC_EINVAL and
 * a message or succeeds with the positional arguments gathered at the front of argv. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_flags.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int set_level(void *target, const char *value, char *err, size_t errlen) {
  (void)err;
  (void)errlen;
  *(size_t *)target = strlen(value);
  return 0;
}

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *argv[MAX_ARGS + 1], *orig[MAX_ARGS + 1];
  int argc = 0;
  argv[argc++] = "prog";
  for (size_t i = 0; i <= size && argc < MAX_ARGS;) {
    argv[argc++] = buf + i;
    i += strlen(buf + i) + 1;
  }
  argv[argc] = NULL;
  memcpy(orig, argv, sizeof(argv));
  bool b = false;
  int n = 0;
  double d = 0;
  const char *s = NULL;
  static const char *defaults[] = {"volcano"};
  kc_strv sv = {defaults, 1, false}, sc = {defaults, 1, false};
  int64_t dur = 0;
  size_t level = 0;
  bool seen_v = false;
  const kc_flag flags[] = {
      {"leader-elect", KC_FLAG_BOOL, &b, "", "true", NULL, false, NULL},
      {"worker-threads", KC_FLAG_INT, &n, "", "3", NULL, false, NULL},
      {"kube-api-qps", KC_FLAG_DOUBLE, &d, "", "50", NULL, false, NULL},
      {"kubeconfig", KC_FLAG_STRING, &s, "", NULL, NULL, false, NULL},
      {"scheduler-name", KC_FLAG_STRINGS, &sv, "", "volcano", NULL, false, NULL},
      {"controllers", KC_FLAG_STRINGS, &sc, "", "*", NULL, true, NULL},
      {"schedule-period", KC_FLAG_DURATION, &dur, "", "1s", NULL, false, NULL},
      {"v", KC_FLAG_FUNC, &level, "", "0", set_level, false, &seen_v},
  };
  int nargs = 0;
  char err[256] = "";
  int rc =
      kc_flags_parse(flags, sizeof(flags) / sizeof(flags[0]), argc, argv, &nargs, err, sizeof(err));
  if (rc != 0) {
    if ((rc != KC_EINVAL && rc != KC_ERANGE) || err[0] == '\0')
      abort();
  } else {
    if (nargs < 0 || nargs > argc)
      abort();
    /* Positional arguments are original arguments, in their order. */
    for (int i = 0, j = 1; i < nargs; i++) {
      while (j < argc && orig[j] != argv[i])
        j++;
      if (j == argc)
        abort();
      j++;
    }
  }
  if (s && (s < buf || s > buf + size))
    abort(); /* a string flag borrows from argv */
  kc_strv_free(&sv);
  kc_strv_free(&sc);
  free(buf);
  return 0;
}
