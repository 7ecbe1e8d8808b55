/* issue 15 lever (iii): the CPU a watch event's object costs kiln-scheduler to decode, JSON
 * against Kubernetes' protobuf, on the objects tests/unit/data/pb holds in both encodings
 * (captured from kube-apiserver 1.36; the JSON made compact, as a watch sends it). JSON is what the
 * watch delivers (text to parse, then the view); protobuf is the envelope, the key and the view, as
 * the informer does them.
 *
 * issue 32 item 3: the lean decode (kc_json_lean.h: yajl, no metadata.managedFields) against
 * json_loadb on custom resources with the managedFields the API server keeps (the Job applied
 * with kubectl and updated by the controller, its PodGroup, a JobList page, a PodGroup watch
 * frame; tests/unit/data/lean) and on the captured pod: text to tree and the tree freed, which
 * is what the informer and kc_api do before the view.
 *
 *   decode [DIR] [ROUNDS] [LEANDIR]    DIR: tests/unit/data/pb; ROUNDS: 20000;
 *                                      LEANDIR: tests/unit/data/lean
 *
 * Prints one line per object: bytes and microseconds per decode in each encoding, then one
 * "lean" line per object: bytes, microseconds per json_loadb and per lean decode, and their
 * ratio. A figure, never an assertion. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kc_codec.h"
#include "kc_json_lean.h"
#include "kc_pb.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *dir, const char *name, size_t *len) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = malloc(1 << 20);
  *len = buf ? fread(buf, 1, 1 << 20, f) : 0;
  fclose(f);
  return buf;
}

/* One decode of each kind; false when it fails. */
static bool json_once(const char *text, size_t len, bool pod) {
  json_t *j = json_loadb(text, len, 0, NULL);
  void *o = NULL;
  char err[256];
  int rc = !j    ? -1
           : pod ? kc_pod_decode(j, (Kiln__Pod **)&o, err, sizeof(err))
                 : kc_node_decode(j, (Kiln__Node **)&o, err, sizeof(err));
  json_decref(j);
  kc_msg_free(o);
  return rc == 0;
}

static bool pb_once(const char *body, size_t len, bool pod) {
  K8s__Unknown *u = NULL;
  char err[256], key[256], *rv = NULL;
  void *o = NULL;
  int rc = kc_pb_unwrap(body, len, &u, err, sizeof(err));
  if (rc == 0)
    rc = kc_pb_object_key(u->raw.data, u->raw.len, key, sizeof(key), &rv);
  if (rc == 0)
    rc = pod ? kc_pb_pod_decode(u->raw.data, u->raw.len, (Kiln__Pod **)&o, err, sizeof(err))
             : kc_pb_node_decode(u->raw.data, u->raw.len, (Kiln__Node **)&o, err, sizeof(err));
  free(rv);
  kc_msg_free(o);
  kc_pb_free(u);
  return rc == 0;
}

/* The compact text of a JSON file (a watch sends compact JSON), new; NULL when unreadable. */
static char *compact(const char *dir, const char *name, size_t *len) {
  size_t n = 0;
  char *t = slurp(dir, name, &n);
  json_t *j = t ? json_loadb(t, n, 0, NULL) : NULL;
  free(t);
  t = j ? json_dumps(j, JSON_COMPACT) : NULL;
  *len = t ? strlen(t) : 0;
  json_decref(j);
  return t;
}

/* One "lean" row: json_loadb against kc_json_lean_loadb on one object; false when either
 * cannot decode it. */
static bool lean_row(const char *dir, const char *name, long rounds) {
  size_t len = 0;
  char *t = compact(dir, name, &len);
  json_t *a = t ? json_loadb(t, len, 0, NULL) : NULL,
         *b = t ? kc_json_lean_loadb(t, len, 0, NULL) : NULL;
  bool ok = a && b;
  json_decref(a);
  json_decref(b);
  if (!ok) {
    fprintf(stderr, "decode: cannot read or decode %s in %s\n", name, dir);
    free(t);
    return false;
  }
  double t0 = now_s();
  for (long r = 0; r < rounds; r++)
    json_decref(json_loadb(t, len, 0, NULL));
  double t1 = now_s();
  for (long r = 0; r < rounds; r++)
    json_decref(kc_json_lean_loadb(t, len, 0, NULL));
  double t2 = now_s();
  printf(
      "lean %-19s JSON %6zu bytes | json_loadb %7.2f us | lean %7.2f us | lean / json_loadb %.2f\n",
      name, len, (t1 - t0) * 1e6 / (double)rounds, (t2 - t1) * 1e6 / (double)rounds,
      (t2 - t1) / (t1 - t0));
  free(t);
  return true;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "tests/unit/data/pb";
  long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
  const char *names[] = {"rich", "bound", "node"};
  for (size_t i = 0; i < 3; i++) {
    char jn[64], pn[64];
    snprintf(jn, sizeof(jn), "%s.json", names[i]);
    snprintf(pn, sizeof(pn), "%s.pb", names[i]);
    size_t jl = 0, pl = 0;
    /* The API server pretty-prints for curl; a watch sends compact JSON. */
    char *jt = compact(dir, jn, &jl), *pt = slurp(dir, pn, &pl);
    bool pod = i < 2;
    if (!jt || !pt || !json_once(jt, jl, pod) || !pb_once(pt, pl, pod)) {
      fprintf(stderr, "decode: cannot read or decode %s in %s\n", names[i], dir);
      return 1;
    }
    double t0 = now_s();
    for (long r = 0; r < rounds; r++)
      json_once(jt, jl, pod);
    double t1 = now_s();
    for (long r = 0; r < rounds; r++)
      pb_once(pt, pl, pod);
    double t2 = now_s();
    printf("%-6s JSON %6zu bytes %7.2f us | protobuf %6zu bytes %7.2f us | %.2fx\n", names[i], jl,
           (t1 - t0) * 1e6 / (double)rounds, pl, (t2 - t1) * 1e6 / (double)rounds,
           (t1 - t0) / (t2 - t1));
    free(jt);
    free(pt);
  }
  const char *lean_dir = argc > 3 ? argv[3] : "tests/unit/data/lean";
  const char *lean_names[] = {"job.json", "podgroup.json", "joblist.json", "watch-podgroup.json"};
  for (size_t i = 0; i < sizeof(lean_names) / sizeof(lean_names[0]); i++)
    if (!lean_row(lean_dir, lean_names[i], rounds))
      return 1;
  return lean_row(dir, "rich.json", rounds) ? 0 : 1;
}
