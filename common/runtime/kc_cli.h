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
  /* klog's other flags (klog.InitFlags), Volcano's main's --log-flush-frequency and
   * --feature-gates, and its TLS files for the health server: accepted with Volcano's value
   * syntax, without effect (each row's inert text says why; kc_cli_parse logs it). */
  bool add_dir_header, one_output, skip_log_headers, legacy_stderr_threshold;
  const char *stderrthreshold, *log_backtrace_at, *log_file_max_size;
  int64_t log_flush_frequency_ns;
  const char *feature_gates;
  const char *ca_cert_file, *tls_cert_file, *tls_private_key_file;
} kc_cli_common;

/* Value checks of klog's and component-base's flag types (KC_FLAG_FUNC setters; the target
 * is a const char ** that keeps the value). */
int kc_cli_set_severity(void *target, const char *value, char *err, size_t errlen);
int kc_cli_set_trace_location(void *target, const char *value, char *err, size_t errlen);
int kc_cli_set_uint64(void *target, const char *value, char *err, size_t errlen);
int kc_cli_set_feature_gates(void *target, const char *value, char *err, size_t errlen);

#define KC_CLI_NO_FILES   "Kiln writes no log files, only standard error"
#define KC_CLI_ALL_STDERR "every log line goes to standard error, whatever its severity"
#define KC_CLI_PLAIN_HTTP                                                                          \
  "the health and metrics servers speak plain HTTP (terminate TLS in front of them)"

/* clang-format off */
#define KC_CLI_KLOG_FLAGS(o)                                                                       \
  {"add_dir_header", KC_FLAG_BOOL, &(o)->add_dir_header,                                          \
   "If true, adds the file directory to the header of the log messages", NULL, NULL, false, NULL, \
   "the header names the source file without its directory"},                                     \
  {"one_output", KC_FLAG_BOOL, &(o)->one_output,                                                  \
   "If true, only write logs to their native severity level", NULL, NULL, false, NULL,            \
   KC_CLI_NO_FILES},                                                                              \
  {"skip_log_headers", KC_FLAG_BOOL, &(o)->skip_log_headers,                                      \
   "If true, avoid headers when opening log files", NULL, NULL, false, NULL, KC_CLI_NO_FILES},    \
  {"log_file_max_size", KC_FLAG_FUNC, &(o)->log_file_max_size,                                    \
   "Defines the maximum size a log file can grow to (MB)", "1800", kc_cli_set_uint64, false,      \
   NULL, KC_CLI_NO_FILES},                                                                        \
  {"stderrthreshold", KC_FLAG_FUNC, &(o)->stderrthreshold,                                        \
   "logs at or above this threshold go to stderr", "2", kc_cli_set_severity, false, NULL,         \
   KC_CLI_ALL_STDERR},                                                                            \
  {"legacy_stderr_threshold_behavior", KC_FLAG_BOOL, &(o)->legacy_stderr_threshold,               \
   "If true, stderrthreshold is ignored when logging to stderr", "true", NULL, false, NULL,       \
   KC_CLI_ALL_STDERR},                                                                            \
  {"log_backtrace_at", KC_FLAG_FUNC, &(o)->log_backtrace_at,                                      \
   "when logging hits line file:N, emit a stack trace", ":0", kc_cli_set_trace_location, false,   \
   NULL, "a C process has no goroutine stacks to print"},                                         \
  {"log-flush-frequency", KC_FLAG_DURATION, &(o)->log_flush_frequency_ns,                         \
   "Maximum number of seconds between log flushes", "5s", NULL, false, NULL,                      \
   "Kiln writes each log line as it is made; nothing waits for a flush"},                         \
  {"feature-gates", KC_FLAG_FUNC, &(o)->feature_gates,                                            \
   "A set of key=value pairs that describe feature gates for alpha/experimental features",        \
   NULL, kc_cli_set_feature_gates, false, NULL,                                                   \
   "Kiln has no feature gates; its behaviour is fixed (docs/volcano-flags.md)"},                 \
  {"ca-cert-file", KC_FLAG_STRING, &(o)->ca_cert_file,                                            \
   "File containing the x509 Certificate for HTTPS.", NULL, NULL, false, NULL, KC_CLI_PLAIN_HTTP},\
  {"tls-cert-file", KC_FLAG_STRING, &(o)->tls_cert_file,                                          \
   "File containing the default x509 Certificate for HTTPS.", NULL, NULL, false, NULL,            \
   KC_CLI_PLAIN_HTTP},                                                                            \
  {"tls-private-key-file", KC_FLAG_STRING, &(o)->tls_private_key_file,                            \
   "File containing the default x509 private key matching --tls-cert-file.", NULL, NULL, false,   \
   NULL, KC_CLI_PLAIN_HTTP}
/* clang-format on */

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
       NULL,                                                                                       \
       KC_CLI_NO_FILES},                                                                           \
      {"log_dir",      KC_FLAG_STRING,                                                             \
       &(o)->log_dir,  "Accepted for klog compatibility; Kiln logs to standard error only.",       \
       NULL,           NULL,                                                                       \
       false,          NULL,                                                                       \
       KC_CLI_NO_FILES},                                                                           \
      {"log_file",     KC_FLAG_STRING,                                                             \
       &(o)->log_file, "Accepted for klog compatibility; Kiln logs to standard error only.",       \
       NULL,           NULL,                                                                       \
       false,          NULL,                                                                       \
       KC_CLI_NO_FILES},                                                                           \
      {"skip_headers",                                                                             \
       KC_FLAG_BOOL,                                                                               \
       &(o)->skip_headers,                                                                         \
       "If true, avoid header prefixes in the log messages",                                       \
       NULL,                                                                                       \
       NULL,                                                                                       \
       false,                                                                                      \
       NULL,                                                                                       \
       "Kiln's text log lines always carry klog's header"},                                        \
      KC_CLI_KLOG_FLAGS(o)

/* Applies the logging flags. Returns KC_EINVAL with a message in err on a bad value. */
KC_NODISCARD int kc_cli_apply(const kc_cli_common *o, char *err, size_t errlen);

/* Parses argv against flags (which must include KC_CLI_COMMON_FLAGS(o)), applies them and
 * handles --help and --version. Returns -1 when the program should go on, else the exit
 * status to return from main: 0 after --help or --version, 2 after a usage error (the
 * message has been printed to stderr). */
KC_NODISCARD int kc_cli_parse(const char *prog, const char *summary, const kc_flag *flags,
                              size_t nflags, kc_cli_common *o, int argc, char **argv);

#endif
