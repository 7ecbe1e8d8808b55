#include "kc_flags.h"

#include "kc_error.h"
#include "kc_time.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int kc_parse_bool(const char *s, bool *out) {
  static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
  static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
  for (size_t i = 0; i < 6; i++) {
    if (strcmp(s, yes[i]) == 0) {
      *out = true;
      return 0;
    }
    if (strcmp(s, no[i]) == 0) {
      *out = false;
      return 0;
    }
  }
  return KC_EINVAL;
}

int kc_parse_duration(const char *s, int64_t *ns) {
  int rc = kc_go_duration(s, ns, NULL, 0);
  return rc == KC_EPARSE ? KC_EINVAL : rc;
}

void kc_strv_free(kc_strv *sv) {
  if (sv->set)
    free(sv->v);
  sv->v = NULL;
  sv->n = 0;
}

static int strv_push(kc_strv *sv, const char *s) {
  const char **nv = realloc(sv->v, (sv->n + 1) * sizeof(*nv));
  if (nv == NULL)
    return KC_ENOMEM;
  sv->v = nv;
  sv->v[sv->n++] = s;
  return 0;
}

/* With word_sep, names compare with '_' and '-' as one character (WordSepNormalizeFunc). */
static bool same_name(const char *flag, const char *name, size_t len, bool word_sep) {
  if (strlen(flag) != len)
    return false;
  if (!word_sep)
    return strncmp(flag, name, len) == 0;
  for (size_t i = 0; i < len; i++) {
    char a = flag[i] == '_' ? '-' : flag[i], b = name[i] == '_' ? '-' : name[i];
    if (a != b)
      return false;
  }
  return true;
}

static const kc_flag *find(const kc_flag *flags, size_t n, const char *name, size_t len,
                           bool word_sep) {
  for (size_t i = 0; i < n; i++)
    if (same_name(flags[i].name, name, len, word_sep))
      return &flags[i];
  return NULL;
}

static int set_value(const kc_flag *f, const char *dash, const char *value, char *err,
                     size_t errlen) {
  char *end;
  switch (f->type) {
  case KC_FLAG_BOOL:
    if (kc_parse_bool(value, f->target) != 0)
      goto bad;
    break;
  case KC_FLAG_INT: {
    errno = 0;
    long v = strtol(value, &end, 0);
    if (*value == '\0' || *end != '\0' || errno != 0 || v < -2147483647L || v > 2147483647L)
      goto bad;
    *(int *)f->target = (int)v;
    break;
  }
  case KC_FLAG_DOUBLE: {
    errno = 0;
    double v = strtod(value, &end);
    if (*value == '\0' || *end != '\0' || errno != 0 || !isfinite(v))
      goto bad;
    *(double *)f->target = v;
    break;
  }
  case KC_FLAG_STRING:
    *(const char **)f->target = value;
    break;
  case KC_FLAG_STRINGS: {
    kc_strv *sv = f->target;
    if (!sv->set) {
      /* The first use replaces the default, which the caller owns (static storage). */
      sv->v = NULL;
      sv->n = 0;
      sv->set = true;
    }
    if (!f->split_commas)
      return strv_push(sv, value) == 0 ? 0 : KC_ENOMEM;
    /* StringSlice: split at commas; the pieces point into argv, so cut it in place. */
    char *s = (char *)value;
    for (;;) {
      char *comma = strchr(s, ',');
      if (comma)
        *comma = '\0';
      if (strv_push(sv, s) != 0)
        return KC_ENOMEM;
      if (!comma)
        break;
      s = comma + 1;
    }
    break;
  }
  case KC_FLAG_DURATION:
    if (kc_parse_duration(value, f->target) != 0)
      goto bad;
    break;
  case KC_FLAG_FUNC: {
    char sub[200] = "";
    if (f->set(f->target, value, sub, sizeof(sub)) != 0) {
      snprintf(err, errlen, "invalid argument \"%s\" for \"%s%s\" flag: %s", value, dash, f->name,
               sub[0] ? sub : "invalid value");
      return KC_EINVAL;
    }
    break;
  }
  }
  if (f->seen)
    *f->seen = true;
  return 0;
bad:;
  static const char *const tname[] = {"bool", "int", "float", "string", "strings", "duration", ""};
  snprintf(err, errlen, "invalid argument \"%s\" for \"%s%s\" flag: not a valid %s", value, dash,
           f->name, tname[f->type]);
  return KC_EINVAL;
}

int kc_flags_parse(const kc_flag *flags, size_t nflags, int argc, char **argv, int *nargs,
                   char *err, size_t errlen) {
  return kc_flags_parse_given(flags, nflags, argc, argv, nargs, false, NULL, err, errlen);
}

int kc_flags_parse_given(const kc_flag *flags, size_t nflags, int argc, char **argv, int *nargs,
                         bool word_sep, bool *given, char *err, size_t errlen) {
  int npos = 0;
  bool only_args = false;
  for (int i = 1; i < argc; i++) {
    char *a = argv[i];
    if (only_args || a[0] != '-' || a[1] == '\0') {
      if (nargs == NULL) {
        snprintf(err, errlen, "unexpected argument \"%s\"", a);
        return KC_EINVAL;
      }
      argv[npos++] = a;
      continue;
    }
    if (strcmp(a, "--") == 0) {
      only_args = true;
      continue;
    }
    bool dbl = a[1] == '-';
    const char *name = a + (dbl ? 2 : 1);
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const char *dash = dbl ? "--" : "-";
    if (!dbl && len != 1) {
      /* pflag reads "-abc" as shorthands; say what was probably meant instead. */
      snprintf(err, errlen, "unknown flag: %.*s (long flags take two dashes: -%.*s)",
               (int)(len + 1), a, (int)(len + 1), a);
      return KC_EINVAL;
    }
    const kc_flag *f = find(flags, nflags, name, len, word_sep);
    if (f == NULL) {
      if (dbl)
        snprintf(err, errlen, "unknown flag: --%.*s", (int)len, name);
      else
        snprintf(err, errlen, "unknown shorthand flag: '%c' in %s", name[0], a);
      return KC_EINVAL;
    }
    const char *value;
    if (eq) {
      value = eq + 1;
    } else if (f->type == KC_FLAG_BOOL) {
      value = "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      snprintf(err, errlen, "flag needs an argument: %s%s", dash, f->name);
      return KC_EINVAL;
    }
    int rc = set_value(f, dash, value, err, errlen);
    if (rc != 0) {
      if (rc == KC_ENOMEM)
        snprintf(err, errlen, "out of memory");
      return rc;
    }
    if (given)
      given[f - flags] = true;
  }
  if (nargs)
    *nargs = npos;
  if (npos < argc)
    argv[npos] = NULL;
  return 0;
}

void kc_flags_usage(FILE *out, const char *prog, const char *summary, const kc_flag *flags,
                    size_t nflags) {
  static const char *const tname[] = {"", "int", "float", "string", "strings", "duration", "value"};
  fprintf(out, "%s\n\nUsage:\n  %s [flags]\n\nFlags:\n", summary, prog);
  for (size_t i = 0; i < nflags; i++) {
    const kc_flag *f = &flags[i];
    char head[96];
    snprintf(head, sizeof(head), "%s%s %s", strlen(f->name) == 1 ? "-" : "--", f->name,
             tname[f->type]);
    fprintf(out, "  %-38s %s", head, f->usage);
    if (f->def && f->def[0])
      fprintf(out, " (default %s)", f->def);
    if (f->inert)
      fprintf(out, " [accepted; no effect in Kiln: %s]", f->inert);
    fputc('\n', out);
  }
}
