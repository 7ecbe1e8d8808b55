/* Write-through entries and the counters-only test (ctl_overlay.h). */
#include "ctl_overlay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc_codec.h"
#include "kc_error.h"

static void written_free(void *p) {
  ctl_written *w = p;
  if (w) {
    kc_msg_free(w->obj);
    free(w);
  }
}

void ctl_written_drop(kc_strmap *m, const char *key) {
  void *old;
  if (kc_strmap_del(m, key, &old) == 0)
    written_free(old);
}

void ctl_written_close(kc_strmap *m) {
  kc_strmap_close(m, written_free);
}

static const char *obj_rv(const void *obj) {
  /* Kiln__Job and Kiln__PodGroup both start with base, then metadata. */
  const Kiln__ObjectMeta *m = ((const Kiln__Job *)obj)->metadata;
  return m && m->resource_version ? m->resource_version : "";
}

void ctl_write_through(kc_strmap *m, const char *key, void *obj, uint64_t now_ns) {
  if (!obj)
    return;
  ctl_written *w = kc_strmap_get(m, key);
  if (!w) {
    if (!(w = calloc(1, sizeof(*w)))) {
      kc_msg_free(obj);
      return;
    }
    if (kc_strmap_put(m, key, w, NULL) < 0) {
      free(w);
      kc_msg_free(obj);
      return;
    }
  }
  kc_msg_free(w->obj);
  w->obj = obj;
  snprintf(w->rv, sizeof(w->rv), "%s", obj_rv(obj));
  w->at_ns = now_ns;
}

static void json_written_free(void *p) {
  ctl_json_written *w = p;
  if (w) {
    json_decref(w->obj);
    free(w);
  }
}

int ctl_json_write_through(kc_strmap *m, const char *key, json_t *obj, uint64_t now_ns) {
  ctl_json_written *w = calloc(1, sizeof(*w));
  if (!w)
    return KC_ENOMEM;
  w->obj = json_incref(obj);
  const char *rv =
      json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
  snprintf(w->rv, sizeof(w->rv), "%s", rv ? rv : "");
  w->at_ns = now_ns;
  /* kc_strmap_put returns 1 when it replaced an entry: w is stored then too, and only the old
   * entry is ours to release (taking 1 for a failure left the map holding a freed object). */
  void *old = NULL;
  int rc = kc_strmap_put(m, key, w, &old);
  if (rc < 0) {
    json_written_free(w);
    return rc;
  }
  json_written_free(old);
  return 0;
}

const json_t *ctl_json_newest(kc_strmap *m, const kc_store *st, const char *key, uint64_t now_ns) {
  const json_t *cached = kc_store_get(st, key);
  ctl_json_written *w = kc_strmap_len(m) ? kc_strmap_get(m, key) : NULL;
  if (!w)
    return cached;
  const char *crv = cached ? kc_store_rv(st, key) : NULL;
  if (crv && now_ns - w->at_ns < CTL_WRITTEN_TTL_NS && ctl_rv_cmp(crv, w->rv) == -1)
    return w->obj;
  void *old;
  if (kc_strmap_del(m, key, &old) == 0)
    json_written_free(old);
  return cached;
}

void ctl_json_written_close(kc_strmap *m) {
  kc_strmap_close(m, json_written_free);
}

int ctl_rv_cmp(const char *a, const char *b) {
  if (strcmp(a, b) == 0)
    return 0;
  if (!*a || !*b || *a == '-' || *b == '-')
    return 2;
  char *ea, *eb;
  errno = 0;
  unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
  if (errno || *ea || *eb)
    return 2;
  return x > y ? 1 : -1;
}

const void *ctl_newest(kc_strmap *m, const kc_store *st, const char *key, uint64_t now_ns,
                       const char **rv) {
  const void *cached = kc_store_get(st, key);
  const char *crv = cached ? kc_store_rv(st, key) : NULL;
  ctl_written *w = kc_strmap_len(m) ? kc_strmap_get(m, key) : NULL;
  if (w) {
    bool fresh = now_ns - w->at_ns < CTL_WRITTEN_TTL_NS;
    int c = crv ? ctl_rv_cmp(w->rv, crv) : 1;
    if (fresh && (c == 1 || c == 2)) {
      if (rv)
        *rv = w->rv;
      return w->obj;
    }
    ctl_written_drop(m, key); /* the cache caught up (or the entry is too old to trust) */
  }
  if (rv)
    *rv = crv;
  return cached;
}

bool ctl_counters_only(const Kiln__JobStatus *stored, const ctl_status *next) {
  return ctl_status_change(stored, next) != CTL_CHANGE_SHOWN;
}

ctl_change ctl_status_change(const Kiln__JobStatus *stored, const ctl_status *next) {
  static const char *const counters[] = {"pending",     "running", "succeeded",      "failed",
                                         "terminating", "unknown", "taskStatusCount"};
  if (!stored)
    return CTL_CHANGE_SHOWN;
  ctl_status cur;
  ctl_status_init(&cur);
  json_t *a = NULL, *b = NULL;
  bool eq = false;
  if (ctl_status_from_pb(&cur, stored) == 0 && (a = ctl_status_to_json(&cur)) &&
      (b = ctl_status_to_json(next))) {
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
      json_object_del(a, counters[i]);
      json_object_del(b, counters[i]);
    }
    eq = json_equal(a, b);
  }
  json_decref(a);
  json_decref(b);
  bool running = cur.running != next->running;
  ctl_status_close(&cur);
  if (!eq)
    return CTL_CHANGE_SHOWN;
  return running ? CTL_CHANGE_RUNNING : CTL_CHANGE_HIDDEN;
}

uint64_t ctl_status_due(uint64_t due_ns, uint64_t now_ns, ctl_change c) {
  if (c == CTL_CHANGE_SHOWN)
    return 0;
  uint64_t at =
      now_ns + (c == CTL_CHANGE_RUNNING ? CTL_STATUS_BATCH_NS : CTL_STATUS_HIDDEN_BATCH_NS);
  if (due_ns && due_ns < at)
    at = due_ns;
  return now_ns >= at ? 0 : at;
}
