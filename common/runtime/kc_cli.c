#include "kc_cli.h"

#include "kc_error.h"
#include "kc_log.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
  if (!o->logtostderr)
    KC_WARN("flag --logtostderr=false has no effect in Kiln: " KC_CLI_NO_FILES);
  return 0;
}

/* klog's severity flag: a name (INFO, WARNING, ERROR, FATAL, any case) or an int32. */
int kc_cli_set_severity(void *target, const char *value, char *err, size_t errlen) {
  static const char *const names[] = {"INFO", "WARNING", "ERROR", "FATAL"};
  for (size_t i = 0; i < 4; i++)
    if (strcasecmp(value, names[i]) == 0)
      return *(const char **)target = value, 0;
  char *end;
  errno = 0;
  long v = strtol(value, &end, 10);
  if (!*value || *end || errno || v < -2147483647L - 1 || v > 2147483647L) {
    snprintf(err, errlen, "not a severity (INFO, WARNING, ERROR, FATAL or a number)");
    return KC_EINVAL;
  }
  *(const char **)target = value;
  return 0;
}

/* klog's traceLocation: empty, or file.go:N with N > 0. */
int kc_cli_set_trace_location(void *target, const char *value, char *err, size_t errlen) {
  if (*value) {
    const char *colon = strchr(value, ':');
    char *end;
    errno = 0;
    long line = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || strchr(colon + 1, ':') || !memchr(value, '.', (size_t)(colon - value)) ||
        !colon[1] || *end || errno) {
      snprintf(err, errlen, "syntax error: expect file.go:234");
      return KC_EINVAL;
    }
    if (line <= 0) {
      snprintf(err, errlen, "negative or zero value for level");
      return KC_EINVAL;
    }
  }
  *(const char **)target = value;
  return 0;
}

int kc_cli_set_uint64(void *target, const char *value, char *err, size_t errlen) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(value, &end, 0);
  (void)v;
  if (!*value || *value == '-' || *end || errno) {
    snprintf(err, errlen, "not an unsigned integer");
    return KC_EINVAL;
  }
  *(const char **)target = value;
  return 0;
}

/* component-base's mapStringBool: "Key=bool[,Key=bool...]", spaces around items allowed. */
int kc_cli_set_feature_gates(void *target, const char *value, char *err, size_t errlen) {
  const char *p = value;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char item[256];
    if (n >= sizeof(item)) {
      snprintf(err, errlen, "feature gate entry too long");
      return KC_EINVAL;
    }
    memcpy(item, p, n);
    item[n] = '\0';
    char *s = item, *e = item + n;
    while (*s && isspace((unsigned char)*s))
      s++;
    while (e > s && isspace((unsigned char)e[-1]))
      *--e = '\0';
    if (*s) {
      char *eq = strchr(s, '=');
      bool b;
      if (!eq) {
        snprintf(err, errlen, "missing bool value for %s", s);
        return KC_EINVAL;
      }
      *eq = '\0';
      if (kc_parse_bool(eq + 1, &b) != 0) {
        snprintf(err, errlen, "invalid value of %s=%s", s, eq + 1);
        return KC_EINVAL;
      }
    }
    p += n + (end ? 1 : 0);
  }
  *(const char **)target = value;
  return 0;
}

/* After the logging flags apply: what was given that changes nothing, once each. */
static void report_inert(const kc_flag *flags, size_t nflags, const bool *given, char **argv,
                         int nargs) {
  for (size_t i = 0; i < nflags; i++)
    if (given[i] && flags[i].inert)
      KC_WARN("flag --%s is accepted for compatibility with Volcano and has no effect in Kiln: %s",
              flags[i].name, flags[i].inert);
  for (int i = 0; i < nargs; i++)
    KC_WARN("ignoring the argument \"%s\": it is not a flag (Volcano ignores it too)", argv[i]);
}

int kc_cli_parse(const char *prog, const char *summary, const kc_flag *flags, size_t nflags,
                 kc_cli_common *o, int argc, char **argv) {
  char err[512];
  int nargs = 0;
  bool *given = calloc(nflags ? nflags : 1, sizeof(*given));
  if (!given) {
    fprintf(stderr, "%s: out of memory\n", prog);
    return 2;
  }
  /* Arguments that are not flags are ignored, as pflag leaves them to a Volcano main that
   * never reads them: Volcano's chart passes "2>&1" as an argument (no shell runs it). */
  if (kc_flags_parse_given(flags, nflags, argc, argv, &nargs, true, given, err, sizeof(err)) != 0 ||
      kc_cli_apply(o, err, sizeof(err)) != 0) {
    fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", prog, err, prog);
    free(given);
    return 2;
  }
  if (!o->help && !o->version)
    report_inert(flags, nflags, given, argv, nargs);
  free(given);
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
