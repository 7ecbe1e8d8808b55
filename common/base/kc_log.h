/* klog-compatible logging: "I1129 15:57:01.123456   12345 file.c:42] message".
 * Optional JSON lines (--logging-format=json). Secrets must never be passed here. */
#ifndef KC_LOG_H
#define KC_LOG_H

#include <stdbool.h>

typedef enum { KC_LOG_INFO = 0, KC_LOG_WARNING, KC_LOG_ERROR, KC_LOG_FATAL } kc_log_severity;

/* Global settings, set from flags before the first log line. */
extern int kc_log_verbosity;

int kc_log_set_format(const char *format); /* "text" or "json"; KC_EINVAL otherwise */
void kc_log_set_stream_fd(int fd);         /* default 2 (stderr) */

/* Whether verbosity level v is enabled for the given source file (honours --vmodule). */
bool kc_log_v_enabled(int v, const char *file);
/* Parses --vmodule ("pattern=N,pattern=N"); KC_EINVAL on bad syntax. */
int kc_log_set_vmodule(const char *spec);

void kc_log_write(kc_log_severity sev, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define KC_INFO(...)  kc_log_write(KC_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define KC_WARN(...)  kc_log_write(KC_LOG_WARNING, __FILE__, __LINE__, __VA_ARGS__)
#define KC_ERROR(...) kc_log_write(KC_LOG_ERROR, __FILE__, __LINE__, __VA_ARGS__)
/* Info at verbosity v (klog.V(v).Infof). */
#define KC_V(v, ...)                                                                               \
  do {                                                                                             \
    if (kc_log_v_enabled((v), __FILE__))                                                           \
      kc_log_write(KC_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__);                                  \
  } while (0)

#endif
