/* `vcctl job view`: Volcano's PrintJobInfo and PrintEvents, line for line, plus the gang's
 * "why pending" line read from the PodGroup. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kc_codec.h"
#include "kc_quantity.h"
#include "vc.h"

/* WriteLine: two spaces per level, then the formatted text. */
__attribute__((format(printf, 3, 4))) static void line(FILE *out, int level, const char *fmt, ...) {
  for (int i = 0; i < level; i++)
    fputs("  ", out);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(out, fmt, ap);
  va_end(ap);
}

/* A map as Go's json.Marshal writes it (keys sorted, no spaces), or <none>. */
static void print_map(FILE *out, const char *title, const json_t *m) {
  char *s = json_object_size(m) ? json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  line(out, 0, "%s\t%s\n", title, s ? s : "<none>");
  free(s);
}

/* Go's %v of a []string: "[a b]". */
static void print_strings(FILE *out, int level, const char *title, const json_t *arr) {
  line(out, level, "%s\t[", title);
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v) fprintf(out, "%s%s", i ? " " : "", json_string_value(v));
  fputs("]\n", out);
}

/* Quantity.String() of a resource list entry: the canonical form, "0" when absent. */
static void quantity(const json_t *list, const char *key, char *buf, size_t len) {
  kc_quantity q;
  const char *s = json_string_value(json_object_get(list, key));
  if (s == NULL || kc_quantity_parse(s, &q, NULL) != 0 || kc_quantity_format(&q, buf, len) < 0)
    snprintf(buf, len, "%s", s ? s : "0");
}

static void print_container(FILE *out, const json_t *c) {
  size_t k;
  json_t *v;
  line(out, 5, "Command:\n");
  json_array_foreach(json_object_get(c, "command"), k, v)
      line(out, 6, "%s\n", json_string_value(v));
  line(out, 5, "Image:\t%s\n", vc_str(c, "image"));
  line(out, 5, "Name: \t%s\n", vc_str(c, "name"));
  line(out, 5, "Ports:\n");
  json_array_foreach(json_object_get(c, "ports"), k, v) {
    line(out, 6, "Container Port:\t%lld\n", vc_num(v, "containerPort"));
    line(out, 6, "Name:          \t%s\n", vc_str(v, "name"));
  }
  char q[KC_QUANTITY_STR_MAX];
  line(out, 5, "Resources:\n");
  static const char *const kinds[2][2] = {{"limits", "Limits:\n"}, {"requests", "Requests:\n"}};
  for (int i = 0; i < 2; i++) {
    const json_t *list =
        vc_at(c, "resources") ? json_object_get(vc_at(c, "resources"), kinds[i][0]) : NULL;
    line(out, 6, "%s", kinds[i][1]);
    quantity(list, "cpu", q, sizeof(q));
    line(out, 7, "Cpu:   \t%s\n", q);
    quantity(list, "memory", q, sizeof(q));
    line(out, 7, "Memory:\t%s\n", q);
  }
  line(out, 6, "Working Dir:\t%s\n", vc_str(c, "workingDir"));
}

static void print_task(FILE *out, const json_t *t) {
  char ts[64];
  const json_t *ann = vc_at(t, "template.metadata.annotations");
  line(out, 2, "Name:\t%s\n", vc_str(t, "name"));
  line(out, 2, "Replicas:\t%lld\n", vc_num(t, "replicas"));
  line(out, 2, "Template:\n");
  line(out, 3, "Metadata:\n");
  line(out, 4, "Annotations:\n");
  line(out, 5, "Cri . Cci . Io / Container - Type:          \t%s\n",
       vc_str(json_object_get(ann, "cri.cci.io/container-type"), ""));
  line(out, 5, "Kubernetes . Io / Availablezone:            \t%s\n",
       vc_str(json_object_get(ann, "kubernetes.io/availablezone"), ""));
  line(out, 5, "Network . Alpha . Kubernetes . Io / Network:\t%s\n",
       vc_str(json_object_get(ann, "network.alpha.kubernetes.io/network"), ""));
  vc_go_time(vc_str(t, "template.metadata.creationTimestamp"), ts, sizeof(ts));
  line(out, 4, "Creation Timestamp:\t%s\n", ts);
  line(out, 3, "Spec:\n");
  line(out, 4, "Containers:\n");
  size_t k;
  json_t *v;
  json_array_foreach(vc_at(t, "template.spec.containers"), k, v) print_container(out, v);
  line(out, 4, "Image Pull Secrets:\n");
  json_array_foreach(vc_at(t, "template.spec.imagePullSecrets"), k, v)
      line(out, 5, "Name:     \t%s\n", vc_str(v, "name"));
  line(out, 4, "Restart Policy:   \t%s\n", vc_str(t, "template.spec.restartPolicy"));
}

static void print_status(FILE *out, const json_t *job) {
  static const char *const counts[][2] = {
      {"succeeded", "Succeeded:    "},   {"pending", "Pending:      "},
      {"running", "Running:      "},     {"failed", "Failed:       "},
      {"terminating", "Terminating:  "}, {"unknown", "Unknown:      "},
      {"retryCount", "RetryCount:   "},  {"minAvailable", "Min Available:"},
      {"version", "Version:      "},
  };
  const json_t *st = json_object_get(job, "status");
  line(out, 0, "Status:\n");
  for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
    if (vc_num(st, counts[i][0]) > 0)
      line(out, 1, "%s\t%lld\n", counts[i][1], vc_num(st, counts[i][0]));
  line(out, 1, "State:\n");
  line(out, 2, "Phase:\t%s\n", vc_str(st, "state.phase"));
  const json_t *cr = json_object_get(st, "controlledResources");
  if (json_object_size(cr) > 0) {
    line(out, 1, "Controlled Resources:\n");
    /* Go ranges over a map in random order; sorted is the stable reading of it. */
    char *s = json_dumps(cr, JSON_SORT_KEYS | JSON_COMPACT);
    json_t *sorted = s ? json_loads(s, JSON_PRESERVE_ORDER, NULL) : NULL;
    const char *key;
    json_t *v;
    json_object_foreach(sorted ? sorted : (json_t *)cr, key, v)
        line(out, 2, "%s: \t%s\n", key, json_string_value(v) ? json_string_value(v) : "");
    json_decref(sorted);
    free(s);
  }
  const json_t *conds = json_object_get(st, "conditions");
  if (json_array_size(conds) > 0) {
    line(out, 1, "Conditions:\n    Status\tTransitionTime\n");
    size_t i;
    json_t *c;
    char ts[64];
    json_array_foreach(conds, i, c) {
      vc_go_time(vc_str(c, "lastTransitionTime"), ts, sizeof(ts));
      line(out, 2, "%s \t%s \n", vc_str(c, "status"), ts);
    }
  }
}

static void print_events(FILE *out, const json_t *events, int64_t now) {
  const json_t *items = json_object_get(events, "items");
  if (json_array_size(items) == 0) {
    line(out, 0, "Events: \t<none>\n");
    return;
  }
  line(out, 0, "%s:\n%-15s\t%-40s\t%-30s\t%-40s\t%s\n", "Events", "Type", "Reason", "Age", "Form",
       "Message");
  line(out, 0, "%-15s\t%-40s\t%-30s\t%-40s\t%s\n", "-------", "-------", "-------", "-------",
       "-------");
  size_t i;
  json_t *e;
  json_array_foreach(items, i, e) {
    char interval[96], last[32], first[32], src[256];
    vc_since(vc_str(e, "firstTimestamp"), now, first, sizeof(first));
    if (vc_num(e, "count") > 1) {
      vc_since(vc_str(e, "lastTimestamp"), now, last, sizeof(last));
      snprintf(interval, sizeof(interval), "%s (x%lld over %s)", last, vc_num(e, "count"), first);
    } else {
      snprintf(interval, sizeof(interval), "%s", first);
    }
    snprintf(src, sizeof(src), "%s%s%s", vc_str(e, "source.component"),
             vc_str(e, "source.host")[0] ? ", " : "", vc_str(e, "source.host"));
    /* strings.TrimSpace on the message. */
    const char *m = vc_str(e, "message");
    while (*m == ' ' || *m == '\n' || *m == '\t')
      m++;
    int mlen = (int)strlen(m);
    while (mlen > 0 && (m[mlen - 1] == ' ' || m[mlen - 1] == '\n' || m[mlen - 1] == '\t'))
      mlen--;
    line(out, 0, "%-15s\t%-40s\t%-30s\t%-40s\t%.*s\n", vc_str(e, "type"), vc_str(e, "reason"),
         interval, src, mlen, m);
  }
}

/* The newest condition that is True and not Scheduled: the one Volcano's PodGroupPending
 * event reports. Later entries win ties. */
static const json_t *blocking_condition(const json_t *pg) {
  const json_t *best = NULL;
  int64_t best_t = INT64_MIN;
  size_t i;
  json_t *c;
  json_array_foreach(vc_at(pg, "status.conditions"), i, c) {
    if (strcmp(vc_str(c, "status"), "True") != 0 || strcmp(vc_str(c, "type"), "Scheduled") == 0)
      continue;
    int64_t t = 0;
    /* An unparsable time counts as the oldest. */
    KC_IGNORE(kc_time_parse(vc_str(c, "lastTransitionTime"), &t));
    if (t >= best_t) {
      best = c;
      best_t = t;
    }
  }
  return best;
}

bool vc_why_pending(const json_t *job, const json_t *pg, char *buf, size_t len) {
  const char *phase = vc_str(job, "status.state.phase");
  buf[0] = '\0';
  if (phase[0] && strcmp(phase, "Pending") != 0)
    return false;
  if (pg == NULL) {
    snprintf(buf, len, "no PodGroup for the job yet: the job controller has not created its gang");
    return true;
  }
  const char *pgname = vc_str(pg, "metadata.name");
  const char *pgphase = vc_str(pg, "status.phase")[0] ? vc_str(pg, "status.phase") : "Pending";
  const json_t *c = blocking_condition(pg);
  if (c) {
    snprintf(buf, len, "%s (PodGroup %s is %s: %s, reason %s)", vc_str(c, "message"), pgname,
             pgphase, vc_str(c, "type"), vc_str(c, "reason")[0] ? vc_str(c, "reason") : "none");
  } else if (strcmp(pgphase, "Pending") == 0) {
    snprintf(buf, len,
             "PodGroup %s is Pending: the scheduler has not admitted the gang to queue %s yet "
             "(minMember %lld)",
             pgname, vc_str(pg, "spec.queue")[0] ? vc_str(pg, "spec.queue") : "default",
             vc_num(pg, "spec.minMember"));
  } else if (strcmp(pgphase, "Inqueue") == 0) {
    snprintf(buf, len,
             "PodGroup %s is Inqueue: admitted, waiting for the controller to create the pods "
             "and the scheduler to place at least %lld of them",
             pgname, vc_num(pg, "spec.minMember"));
  } else {
    snprintf(buf, len, "PodGroup %s is %s: the gang is placed; the job's status follows", pgname,
             pgphase);
  }
  return true;
}

void vc_print_job_view(FILE *out, const json_t *job, const json_t *pg, const json_t *events,
                       int64_t now) {
  char ts[64];
  line(out, 0, "Name:       \t%s\n", vc_str(job, "metadata.name"));
  line(out, 0, "Namespace:  \t%s\n", vc_str(job, "metadata.namespace"));
  print_map(out, "Labels:     ", vc_at(job, "metadata.labels"));
  print_map(out, "Annotations:", vc_at(job, "metadata.annotations"));
  line(out, 0, "API Version:\t%s\n", vc_str(job, "apiVersion"));
  line(out, 0, "Kind:       \t%s\n", vc_str(job, "kind"));
  line(out, 0, "Metadata:\n");
  vc_go_time(vc_str(job, "metadata.creationTimestamp"), ts, sizeof(ts));
  line(out, 1, "Creation Timestamp:\t%s\n", ts);
  line(out, 1, "Generate Name:     \t%s\n", vc_str(job, "metadata.generateName"));
  line(out, 1, "Generation:        \t%lld\n", vc_num(job, "metadata.generation"));
  line(out, 1, "Resource Version:  \t%s\n", vc_str(job, "metadata.resourceVersion"));
  line(out, 1, "Self Link:         \t%s\n", vc_str(job, "metadata.selfLink"));
  line(out, 1, "UID:               \t%s\n", vc_str(job, "metadata.uid"));
  line(out, 0, "Spec:\n");
  line(out, 1, "Min Available:     \t%lld\n", vc_num(job, "spec.minAvailable"));
  line(out, 1, "Plugins:\n");
  print_strings(out, 2, "Env:", json_object_get(vc_at(job, "spec.plugins"), "env"));
  print_strings(out, 2, "Ssh:", json_object_get(vc_at(job, "spec.plugins"), "ssh"));
  line(out, 1, "Scheduler Name:    \t%s\n", vc_str(job, "spec.schedulerName"));
  line(out, 1, "Tasks:\n");
  size_t i;
  json_t *t;
  json_array_foreach(vc_at(job, "spec.tasks"), i, t) print_task(out, t);
  print_status(out, job);
  char why[1400];
  if (vc_why_pending(job, pg, why, sizeof(why)))
    line(out, 0, "Why Pending:\t%s\n", why);
  print_events(out, events, now);
}
