/* Flags every Kiln process shares: klog's logging flags and the API server connection. */
#ifndef KC_CLI_H
#define KC_CLI_H

#include "kc_flags.h"
#include "kc_log.h"
#include "kc_error.h"

typedef struct {
  bool help;
  bool version;
  const char *kubeconfig;
  const char *master;
  const char *vmodule;
  const char *logging_format;
  bool logtostderr;     /* accepted for compatibility: Kiln always logs to stderr */
  bool alsologtostderr; /* accepted for compatibility */
  const char *log_dir;  /* accepted; files are not written, say so in the log */
  const char *log_file;
  bool skip_headers;
} kc_cli_common;

/* The flag table rows for kc_cli_common; expand inside a kc_flag array. */
#define KC_CLI_COMMON_FLAGS(o)                                                                     \
  {"help", KC_FLAG_BOOL, &(o)->help, "Show this help and exit.", NULL, NULL, false, NULL},         \
      {"h", KC_FLAG_BOOL, &(o)->help, "Show this help and exit.", NULL, NULL, false, NULL},        \
      {"version", KC_FLAG_BOOL, &(o)->version, "Print the version and exit.",                      \
       NULL,      NULL,         false,         NULL},                                              \
      {"kubeconfig",                                                                               \
       KC_FLAG_STRING,                                                                             \
       &(o)->kubeconfig,                                                                           \
       "Path to kubeconfig file with authorization and master location information.",              \
       NULL,                                                                                       \
       NULL,                                                                                       \
       false,                                                                                      \
       NULL},                                                                                      \
      {"master",                                                                                   \
       KC_FLAG_STRING,                                                                             \
       &(o)->master,                                                                               \
       "The address of the Kubernetes API server (overrides any value in kubeconfig).",            \
       NULL,                                                                                       \
       NULL,                                                                                       \
       false,                                                                                      \
       NULL},                                                                                      \
      {"v",   KC_FLAG_INT, &kc_log_verbosity, "Number for the log level verbosity.", "0", NULL,    \
       false, NULL},                                                                               \
      {"vmodule",     KC_FLAG_STRING,                                                              \
       &(o)->vmodule, "Comma-separated list of pattern=N settings for file-filtered logging.",     \
       NULL,          NULL,                                                                        \
       false,         NULL},                                                                       \
      {"logging-format",                                                                           \
       KC_FLAG_STRING,                                                                             \
       &(o)->logging_format,                                                                       \
       "Sets the log format. Permitted formats: \"text\", \"json\".",                              \
       "text",                                                                                     \
       NULL,                                                                                       \
       false,                                                                                      \
       NULL},                                                                                      \
      {"logtostderr",                                                                              \
       KC_FLAG_BOOL,                                                                               \
       &(o)->logtostderr,                                                                          \
       "Log to standard error (always on).",                                                       \
       "true",                                                                                     \
       NULL,                                                                                       \
       false,                                                                                      \
       NULL},                                                                                      \
      {"alsologtostderr",                                                                          \
       KC_FLAG_BOOL,                                                                               \
       &(o)->alsologtostderr,                                                                      \
       "Log to standard error as well as files (accepted; Kiln logs to standard error).",          \
       NULL,                                                                                       \
       NULL,                                                                                       \
       false,                                                                                      \
       NULL},                                                                                      \
      {"log_dir",     KC_FLAG_STRING,                                                              \
       &(o)->log_dir, "Accepted for klog compatibility; Kiln logs to standard error only.",        \
       NULL,          NULL,                                                                        \
       false,         NULL},                                                                       \
      {"log_file",     KC_FLAG_STRING,                                                             \
       &(o)->log_file, "Accepted for klog compatibility; Kiln logs to standard error only.",       \
       NULL,           NULL,                                                                       \
       false,          NULL},                                                                      \
  {                                                                                                \
    "skip_headers", KC_FLAG_BOOL, &(o)->skip_headers, "Accepted for klog compatibility.", NULL,    \
        NULL, false, NULL                                                                          \
  }

/* Applies the logging flags. Returns KC_EINVAL with a message in err on a bad value. */
KC_NODISCARD int kc_cli_apply(const kc_cli_common *o, char *err, size_t errlen);

/* Parses argv against flags (which must include KC_CLI_COMMON_FLAGS(o)), applies them and
 * handles --help and --version. Returns -1 when the program should go on, else the exit
 * status to return from main: 0 after --help or --version, 2 after a usage error (the
 * message has been printed to stderr). */
KC_NODISCARD int kc_cli_parse(const char *prog, const char *summary, const kc_flag *flags,
                              size_t nflags, kc_cli_common *o, int argc, char **argv);

#endif
