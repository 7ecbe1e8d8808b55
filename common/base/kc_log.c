#include "kc_log.h"

#include "kc_error.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

int kc_log_verbosity = 0;

static bool json_format;
static int log_fd = 2;

#define VMODULE_MAX 16
static struct {
  char pattern[64];
  int level;
} vmodule[VMODULE_MAX];
static int vmodule_n;

int kc_log_set_format(const char *format) {
  if (strcmp(format, "text") == 0)
    json_format = false;
  else if (strcmp(format, "json") == 0)
    json_format = true;
  else
    return KC_EINVAL;
  return 0;
}

void kc_log_set_stream_fd(int fd) {
  log_fd = fd;
}

static const char *base_name(const char *file) {
  const char *slash = strrchr(file, '/');
  return slash ? slash + 1 : file;
}

int kc_log_set_vmodule(const char *spec) {
  int n = 0;
  const char *p = spec;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    if (eq == NULL || eq == p || n == VMODULE_MAX || (size_t)(eq - p) >= sizeof(vmodule[0].pattern))
      return KC_EINVAL;
    char num[16];
    size_t nlen = len - (size_t)(eq - p) - 1;
    if (nlen == 0 || nlen >= sizeof(num))
      return KC_EINVAL;
    memcpy(num, eq + 1, nlen);
    num[nlen] = '\0';
    char *end;
    errno = 0;
    long level = strtol(num, &end, 10);
    if (*end != '\0' || errno != 0 || level < 0 || level > 100)
      return KC_EINVAL;
    memcpy(vmodule[n].pattern, p, (size_t)(eq - p));
    vmodule[n].pattern[eq - p] = '\0';
    vmodule[n].level = (int)level;
    n++;
    p += len;
    if (*p == ',')
      p++;
  }
  vmodule_n = n;
  return 0;
}

bool kc_log_v_enabled(int v, const char *file) {
  if (vmodule_n > 0) {
    /* klog matches the file's base name without its extension. */
    char mod[128];
    const char *b = base_name(file);
    size_t len = strcspn(b, ".");
    if (len >= sizeof(mod))
      len = sizeof(mod) - 1;
    memcpy(mod, b, len);
    mod[len] = '\0';
    for (int i = 0; i < vmodule_n; i++)
      if (fnmatch(vmodule[i].pattern, mod, 0) == 0)
        return v <= vmodule[i].level;
  }
  return v <= kc_log_verbosity;
}

static void write_all(const char *buf, size_t len) {
  while (len > 0) {
    ssize_t w = write(log_fd, buf, len);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    buf += w;
    len -= (size_t)w;
  }
}

void kc_log_write(kc_log_severity sev, const char *file, int line, const char *fmt, ...) {
  static const char sevchar[] = "IWEF";
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  int mlen = vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (mlen < 0)
    return;
  if ((size_t)mlen >= sizeof(msg))
    mlen = sizeof(msg) - 1;
  while (mlen > 0 && msg[mlen - 1] == '\n')
    msg[--mlen] = '\0';

  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);

  if (json_format) {
    char ts[64];
    snprintf(ts, sizeof(ts), "%lld.%06ld", (long long)tv.tv_sec, (long)tv.tv_usec);
    char caller[256];
    snprintf(caller, sizeof(caller), "%s:%d", base_name(file), line);
    json_t *o =
        json_pack("{s:s#,s:s,s:s,s:s}", "ts", ts, strlen(ts), "caller", caller, "msg", msg, "level",
                  sev == KC_LOG_INFO      ? "info"
                  : sev == KC_LOG_WARNING ? "warning"
                                          : "error");
    if (o) {
      char *s = json_dumps(o, JSON_COMPACT);
      if (s) {
        write_all(s, strlen(s));
        write_all("\n", 1);
        free(s);
      }
      json_decref(o);
    }
  } else {
    char out[4096 + 256];
    int n = snprintf(out, sizeof(out), "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] %s\n",
                     sevchar[sev], tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (long)tv.tv_usec, (int)getpid(), base_name(file), line, msg);
    if (n > 0)
      write_all(out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
  }
  if (sev == KC_LOG_FATAL)
    abort();
}
