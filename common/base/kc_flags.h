/* Command-line flags with pflag's syntax, so a Volcano Deployment's arguments work
 * unchanged: --name=value, --name value, booleans as --name or --name=false,
 * single-letter flags as -v=4, -v 4 or --v=4; "--" ends the flags. */
#ifndef KC_FLAGS_H
#define KC_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "kc_error.h"

typedef enum {
  KC_FLAG_BOOL,     /* bool * */
  KC_FLAG_INT,      /* int * */
  KC_FLAG_DOUBLE,   /* double * (float32/float64 flags such as --kube-api-qps) */
  KC_FLAG_STRING,   /* const char ** (borrowed from argv) */
  KC_FLAG_STRINGS,  /* kc_strv *: repeatable; the first use replaces the default */
  KC_FLAG_DURATION, /* int64_t * nanoseconds; Go syntax: 1s, 500ms, 1m30s */
  KC_FLAG_FUNC,     /* custom: set(target, value, err, errlen) */
} kc_flag_type;

/* v starts at the caller's static default; once the flag is given it is a heap array
 * (of strings borrowed from argv) that kc_strv_free releases. */
typedef struct {
  const char **v;
  size_t n;
  bool set; /* given on the command line at least once */
} kc_strv;

typedef int (*kc_flag_set_fn)(void *target, const char *value, char *err, size_t errlen);

typedef struct {
  const char *name; /* long name, no dashes; a one-letter name also works with one dash */
  kc_flag_type type;
  void *target;
  const char *usage;
  const char *def;    /* the default as shown by --help, or NULL */
  kc_flag_set_fn set; /* KC_FLAG_FUNC only */
  bool split_commas;  /* KC_FLAG_STRINGS: also split each value at commas (StringSlice) */
  bool *seen;         /* optional: set to true when the flag is given */
  /* A Volcano flag whose feature Kiln does not have: the value is checked as Volcano checks
   * it, and kc_cli logs this reason once at startup when the flag is given. */
  const char *inert;
} kc_flag;

/* Parses argv[1..argc-1]. Positional arguments are collected at the front of argv
 * in order and their number stored in *nargs (may be NULL if none are allowed).
 * On error returns KC_EINVAL with a message such as "unknown flag: --foo" in err. */
KC_NODISCARD int kc_flags_parse(const kc_flag *flags, size_t nflags, int argc, char **argv,
                                int *nargs, char *err, size_t errlen);
/* kc_flags_parse, and given[i] (nflags entries, may be NULL) set when flags[i] was given.
 * With word_sep, '_' and '-' in a name are one character, as after Kubernetes'
 * cliflag.InitFlags (WordSepNormalizeFunc): --log_dir and --log-dir name one flag. */
KC_NODISCARD int kc_flags_parse_given(const kc_flag *flags, size_t nflags, int argc, char **argv,
                                      int *nargs, bool word_sep, bool *given, char *err,
                                      size_t errlen);

/* Prints a usage page: "Usage:\n  prog [flags]\n\nFlags:\n  --name type  usage (default x)". */
void kc_flags_usage(FILE *out, const char *prog, const char *summary, const kc_flag *flags,
                    size_t nflags);

/* Go's time.ParseDuration: "300ms", "-1.5h", "2h45m", "0". KC_EINVAL or KC_ERANGE on error. */
KC_NODISCARD int kc_parse_duration(const char *s, int64_t *ns);
/* Go's strconv.ParseBool. */
KC_NODISCARD int kc_parse_bool(const char *s, bool *out);

void kc_strv_free(kc_strv *sv);

#endif
