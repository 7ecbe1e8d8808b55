/* What vcctl prints, column for column as Volcano's pkg/cli prints it, from the API's JSON.
 * Times are shown in the local zone, as Go's time.Time.String does. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kc_codec.h"
#include "kc_quantity.h"
#include "vc.h"

/* The value at a dotted path ("status.state.phase"), or NULL. */
json_t *vc_at(const json_t *o, const char *path) {
  json_t *cur = (json_t *)o;
  char key[64];
  while (cur && *path) {
    size_t n = strcspn(path, ".");
    snprintf(key, sizeof(key), "%.*s", (int)n, path);
    cur = json_object_get(cur, key);
    path += n + (path[n] == '.');
  }
  return cur;
}

const char *vc_str(const json_t *o, const char *path) {
  const char *s = json_string_value(vc_at(o, path));
  return s ? s : "";
}

long long vc_num(const json_t *o, const char *path) {
  return json_integer_value(vc_at(o, path));
}

void vc_human_duration(int64_t s, char *buf, size_t len) {
  if (s < -1) {
    snprintf(buf, len, "<invalid>");
  } else if (s < 0) {
    snprintf(buf, len, "0s");
  } else if (s < 120) {
    snprintf(buf, len, "%llds", (long long)s);
  } else if (s < 600) {
    if (s % 60 == 0)
      snprintf(buf, len, "%lldm", (long long)(s / 60));
    else
      snprintf(buf, len, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
  } else if (s < 3 * 3600) {
    snprintf(buf, len, "%lldm", (long long)(s / 60));
  } else {
    long long h = s / 3600, d = h / 24, y = d / 365;
    if (h < 8 && (s / 60) % 60 != 0)
      snprintf(buf, len, "%lldh%lldm", h, (long long)((s / 60) % 60));
    else if (h < 48)
      snprintf(buf, len, "%lldh", h);
    else if (h < 24 * 8 && h % 24 != 0)
      snprintf(buf, len, "%lldd%lldh", d, h % 24);
    else if (h < 24 * 365 * 2)
      snprintf(buf, len, "%lldd", d);
    else if (h < 24 * 365 * 8 && d % 365 != 0)
      snprintf(buf, len, "%lldy%lldd", y, d % 365);
    else
      snprintf(buf, len, "%lldy", y);
  }
}

void vc_since(const char *ts, int64_t now, char *buf, size_t len) {
  int64_t t;
  if (ts == NULL || ts[0] == '\0' || kc_time_parse(ts, &t) != 0) {
    snprintf(buf, len, "<unknown>");
    return;
  }
  vc_human_duration(now - t, buf, len);
}

/* An RFC 3339 time in the local zone, the date alone or in full, or zero when there is none
 * (Go formats the zero time.Time for an unset metav1.Time). */
static void local_time(const char *ts, bool date_only, const char *zero, char *buf, size_t len) {
  int64_t t;
  if (ts == NULL || ts[0] == '\0' || kc_time_parse(ts, &t) != 0) {
    snprintf(buf, len, "%s", zero);
    return;
  }
  time_t tt = (time_t)t;
  struct tm tm;
  localtime_r(&tt, &tm);
  if (date_only)
    strftime(buf, len, "%Y-%m-%d", &tm);
  else
    strftime(buf, len, "%Y-%m-%d %H:%M:%S %z %Z", &tm);
}

/* Go's time.Time.String(): "2026-12-01 10:21:45 +0000 UTC". */
void vc_go_time(const char *ts, char *buf, size_t len) {
  local_time(ts, false, "0001-01-01 00:00:00 +0000 UTC", buf, len);
}

/* Format("2006-01-02"), the job table's Creation column. */
static void go_date(const char *ts, char *buf, size_t len) {
  local_time(ts, true, "0001-01-01", buf, len);
}

/* ---- jobs ---- */

size_t vc_print_jobs(FILE *out, const json_t *list, bool all_ns) {
  const json_t *items = json_object_get(list, "items");
  size_t i, rows = 0;
  json_t *j;
  int wname = 4, wns = 9; /* len("Name"), len("Namespace") */
  json_array_foreach(items, i, j) {
    int n = (int)strlen(vc_str(j, "metadata.name")),
        s = (int)strlen(vc_str(j, "metadata.namespace"));
    wname = n > wname ? n : wname;
    wns = s > wns ? s : wns;
  }
  wname += 3;
  wns += 3;
  if (all_ns)
    fprintf(out, "%-*s", wns, "Namespace");
  fprintf(out, "%-*s%-15s%-12s%-12s%-12s%-6s%-10s%-10s%-12s%-10s%-12s%-10s\n", wname, "Name",
          "Creation", "Phase", "JobType", "Replicas", "Min", "Pending", "Running", "Succeeded",
          "Failed", "Unknown", "RetryCount");
  json_array_foreach(items, i, j) {
    long long replicas = 0;
    size_t k;
    json_t *t;
    json_array_foreach(vc_at(j, "spec.tasks"), k, t) replicas += vc_num(t, "replicas");
    const char *type =
        json_string_value(json_object_get(vc_at(j, "metadata.labels"), "volcano.sh/job-type"));
    char date[32];
    go_date(vc_str(j, "metadata.creationTimestamp"), date, sizeof(date));
    if (all_ns)
      fprintf(out, "%-*s", wns, vc_str(j, "metadata.namespace"));
    fprintf(out, "%-*s%-15s%-12s%-12s%-12lld%-6lld%-10lld%-10lld%-12lld%-10lld%-12lld%-10lld\n",
            wname, vc_str(j, "metadata.name"), date, vc_str(j, "status.state.phase"),
            type && type[0] ? type : "Batch", replicas, vc_num(j, "status.minAvailable"),
            vc_num(j, "status.pending"), vc_num(j, "status.running"), vc_num(j, "status.succeeded"),
            vc_num(j, "status.failed"), vc_num(j, "status.unknown"),
            vc_num(j, "status.retryCount"));
    rows++;
  }
  return rows;
}

/* ---- queues ---- */

typedef struct {
  long long inqueue, pending, running, unknown, completed;
} pg_stats;

static void count_pgs(const json_t *pgs, const char *queue, pg_stats *st) {
  memset(st, 0, sizeof(*st));
  size_t i;
  json_t *pg;
  json_array_foreach(json_object_get(pgs, "items"), i, pg) {
    if (strcmp(vc_str(pg, "spec.queue"), queue) != 0)
      continue;
    const char *ph = vc_str(pg, "status.phase");
    if (strcmp(ph, "Inqueue") == 0)
      st->inqueue++;
    else if (strcmp(ph, "Pending") == 0)
      st->pending++;
    else if (strcmp(ph, "Running") == 0)
      st->running++;
    else if (strcmp(ph, "Unknown") == 0)
      st->unknown++;
    else if (strcmp(ph, "Completed") == 0)
      st->completed++;
  }
}

void vc_print_queues(FILE *out, const json_t *queues, const json_t *pgs) {
  fprintf(out, "%-25s%-8s%-8s%-8s%-8s%-8s%-8s%-8s\n", "Name", "Weight", "State", "Inqueue",
          "Pending", "Running", "Unknown", "Completed");
  size_t i;
  json_t *q;
  json_array_foreach(json_object_get(queues, "items"), i, q) {
    pg_stats st;
    count_pgs(pgs, vc_str(q, "metadata.name"), &st);
    fprintf(out, "%-25s%-8lld%-8s%-8lld%-8lld%-8lld%-8lld%-8lld\n", vc_str(q, "metadata.name"),
            vc_num(q, "spec.weight"), vc_str(q, "status.state"), st.inqueue, st.pending, st.running,
            st.unknown, st.completed);
  }
}

void vc_print_queue(FILE *out, const json_t *q, const json_t *pgs) {
  pg_stats st;
  count_pgs(pgs, vc_str(q, "metadata.name"), &st);
  fprintf(out, "%-25s%-8s%-8s%-8s%-8s%-8s%-8s%-8s%-8s\n", "Name", "Weight", "State", "Parent",
          "Inqueue", "Pending", "Running", "Unknown", "Completed");
  fprintf(out, "%-25s%-8lld%-8s%-8s%-8lld%-8lld%-8lld%-8lld%-8lld\n", vc_str(q, "metadata.name"),
          vc_num(q, "spec.weight"), vc_str(q, "status.state"), vc_str(q, "spec.parent"), st.inqueue,
          st.pending, st.running, st.unknown, st.completed);
}

/* ---- pods (kubectl's printPod, as Volcano's vcctl pod list copies it) ---- */

typedef struct {
  char ready[24];
  char status[96];
  char restarts[64];
  char age[32];
} pod_row;

static bool cond_true(const json_t *pod, const char *type) {
  size_t i;
  json_t *c;
  json_array_foreach(vc_at(pod, "status.conditions"), i, c) {
    if (strcmp(vc_str(c, "type"), type) == 0 && strcmp(vc_str(c, "status"), "True") == 0)
      return true;
  }
  return false;
}

static bool restartable_init(const json_t *pod, const char *name) {
  size_t i;
  json_t *c;
  json_array_foreach(vc_at(pod, "spec.initContainers"), i, c) {
    if (strcmp(vc_str(c, "name"), name) == 0)
      return strcmp(vc_str(c, "restartPolicy"), "Always") == 0;
  }
  return false;
}

/* The later of *last and the container's last termination. */
static void last_term(const json_t *cs, int64_t *last) {
  int64_t t;
  const char *f = vc_str(cs, "lastState.terminated.finishedAt");
  if (f[0] && kc_time_parse(f, &t) == 0 && t > *last)
    *last = t;
}

static void terminated_reason(const json_t *term, const char *prefix, char *buf, size_t len) {
  if (vc_str(term, "reason")[0])
    snprintf(buf, len, "%s%s", prefix, vc_str(term, "reason"));
  else if (vc_num(term, "signal") != 0)
    snprintf(buf, len, "%sSignal:%lld", prefix, vc_num(term, "signal"));
  else
    snprintf(buf, len, "%sExitCode:%lld", prefix, vc_num(term, "exitCode"));
}

/* Init containers: returns true while the pod is still initializing (reason set). */
static bool init_status(const json_t *pod, char *reason, size_t rlen, long long *restarts,
                        long long *rinit, int64_t *last, int64_t *last_rinit, int *ready) {
  size_t i;
  json_t *cs;
  size_t ninit = json_array_size(vc_at(pod, "spec.initContainers"));
  json_array_foreach(vc_at(pod, "status.initContainerStatuses"), i, cs) {
    bool rs = restartable_init(pod, vc_str(cs, "name"));
    *restarts += vc_num(cs, "restartCount");
    last_term(cs, last);
    if (rs) {
      *rinit += vc_num(cs, "restartCount");
      last_term(cs, last_rinit);
    }
    json_t *term = vc_at(cs, "state.terminated");
    const char *wait = vc_str(cs, "state.waiting.reason");
    if (term && vc_num(term, "exitCode") == 0)
      continue;
    if (rs && json_is_true(json_object_get(cs, "started"))) {
      *ready += json_is_true(json_object_get(cs, "ready"));
      continue;
    }
    if (term)
      terminated_reason(term, "Init:", reason, rlen);
    else if (wait[0] && strcmp(wait, "PodInitializing") != 0)
      snprintf(reason, rlen, "Init:%s", wait);
    else
      snprintf(reason, rlen, "Init:%zu/%zu", i, ninit);
    return true;
  }
  return false;
}

static void pod_info(const json_t *pod, int64_t now, pod_row *r) {
  long long restarts = 0, rinit = 0;
  int64_t last = 0, last_rinit = 0;
  int ready = 0;
  size_t total = json_array_size(vc_at(pod, "spec.containers")), i;
  json_t *c;
  json_array_foreach(vc_at(pod, "spec.initContainers"), i, c) {
    total += strcmp(vc_str(c, "restartPolicy"), "Always") == 0;
  }
  const char *phase = vc_str(pod, "status.phase");
  snprintf(r->status, sizeof(r->status), "%s",
           vc_str(pod, "status.reason")[0] ? vc_str(pod, "status.reason") : phase);
  json_array_foreach(vc_at(pod, "status.conditions"), i, c) {
    if (strcmp(vc_str(c, "type"), "PodScheduled") == 0 &&
        strcmp(vc_str(c, "reason"), "SchedulingGated") == 0)
      snprintf(r->status, sizeof(r->status), "SchedulingGated");
  }
  bool initializing =
      init_status(pod, r->status, sizeof(r->status), &restarts, &rinit, &last, &last_rinit, &ready);
  if (!initializing || cond_true(pod, "Initialized")) {
    restarts = rinit;
    last = last_rinit;
    bool running = false;
    const json_t *st = vc_at(pod, "status.containerStatuses");
    for (size_t k = json_array_size(st); k-- > 0;) {
      const json_t *cs = json_array_get(st, k);
      restarts += vc_num(cs, "restartCount");
      last_term(cs, &last);
      json_t *term = vc_at(cs, "state.terminated");
      if (vc_str(cs, "state.waiting.reason")[0])
        snprintf(r->status, sizeof(r->status), "%s", vc_str(cs, "state.waiting.reason"));
      else if (term)
        terminated_reason(term, "", r->status, sizeof(r->status));
      else if (json_is_true(json_object_get(cs, "ready")) && vc_at(cs, "state.running")) {
        running = true;
        ready++;
      }
    }
    if (strcmp(r->status, "Completed") == 0 && running)
      snprintf(r->status, sizeof(r->status), "%s",
               cond_true(pod, "Ready") ? "Running" : "NotReady");
  }
  bool deleting = vc_str(pod, "metadata.deletionTimestamp")[0] != '\0';
  if (deleting && strcmp(vc_str(pod, "status.reason"), "NodeLost") == 0)
    snprintf(r->status, sizeof(r->status), "Unknown");
  else if (deleting && strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0)
    snprintf(r->status, sizeof(r->status), "Terminating");
  snprintf(r->ready, sizeof(r->ready), "%d/%zu", ready, total);
  if (restarts != 0 && last != 0) {
    char ago[32];
    vc_human_duration(now - last, ago, sizeof(ago));
    snprintf(r->restarts, sizeof(r->restarts), "%lld (%s ago)", restarts, ago);
  } else {
    snprintf(r->restarts, sizeof(r->restarts), "%lld", restarts);
  }
  vc_since(vc_str(pod, "metadata.creationTimestamp"), now, r->age, sizeof(r->age));
}

void vc_print_pods(FILE *out, const json_t *pods, int64_t now) {
  const json_t *items = json_object_get(pods, "items");
  size_t n = json_array_size(items);
  pod_row *rows = calloc(n ? n : 1, sizeof(*rows));
  if (rows == NULL)
    return;
  int w[5] = {0, 0, 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    const json_t *p = json_array_get(items, i);
    pod_info(p, now, &rows[i]);
    const char *cols[5] = {vc_str(p, "metadata.name"), rows[i].ready, rows[i].status,
                           rows[i].restarts, rows[i].age};
    for (int k = 0; k < 5; k++)
      if ((int)strlen(cols[k]) > w[k])
        w[k] = (int)strlen(cols[k]);
  }
  for (int k = 0; k < 5; k++)
    w[k] += 8; /* Volcano's column spacing */
  fprintf(out, "%-*s%-*s%-*s%-*s%-*s\n", w[0], "Name", w[1], "Ready", w[2], "Status", w[3],
          "Restart", w[4], "Age");
  for (size_t i = 0; i < n; i++)
    fprintf(out, "%-*s%-*s%-*s%-*s%-*s\n", w[0], vc_str(json_array_get(items, i), "metadata.name"),
            w[1], rows[i].ready, w[2], rows[i].status, w[3], rows[i].restarts, w[4], rows[i].age);
  free(rows);
}

/* ---- jobflows and jobtemplates ---- */

void vc_print_flows(FILE *out, const json_t *list, bool with_phase, int64_t now) {
  const json_t *items = json_object_get(list, "items");
  size_t n = json_array_size(items), i;
  char(*ages)[32] = calloc(n ? n : 1, sizeof(*ages));
  if (ages == NULL)
    return;
  int w[4] = {4, 9, 5, 3}; /* Name, Namespace, Phase, Age */
  for (i = 0; i < n; i++) {
    const json_t *f = json_array_get(items, i);
    vc_since(vc_str(f, "metadata.creationTimestamp"), now, ages[i], sizeof(ages[i]));
    const char *cols[4] = {vc_str(f, "metadata.name"), vc_str(f, "metadata.namespace"),
                           vc_str(f, "status.state.phase"), ages[i]};
    for (int k = 0; k < 4; k++)
      if ((int)strlen(cols[k]) > w[k])
        w[k] = (int)strlen(cols[k]);
  }
  for (int k = 0; k < 4; k++)
    w[k] += 4; /* Volcano's column spacing here */
  if (with_phase)
    fprintf(out, "%-*s%-*s%-*s%-*s\n", w[0], "Name", w[1], "Namespace", w[2], "Phase", w[3], "Age");
  else
    fprintf(out, "%-*s%-*s\n", w[0], "Name", w[1], "Namespace");
  for (i = 0; i < n; i++) {
    const json_t *f = json_array_get(items, i);
    if (with_phase)
      fprintf(out, "%-*s%-*s%-*s%-*s\n", w[0], vc_str(f, "metadata.name"), w[1],
              vc_str(f, "metadata.namespace"), w[2], vc_str(f, "status.state.phase"), w[3],
              ages[i]);
    else
      fprintf(out, "%-*s%-*s\n", w[0], vc_str(f, "metadata.name"), w[1],
              vc_str(f, "metadata.namespace"));
  }
  free(ages);
}
