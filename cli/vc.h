/* vcctl: Volcano's command-line tool on libkiln (vc_ prefix).
 *
 * The pure parts, unit-tested without a server:
 *   vc_args.c     argv (and the name the program was called by) to a vc_args
 *   vc_objects.c  the objects vcctl writes (Job, Command, Queue), resource lists, command
 *                 splitting, and YAML files read into JSON
 *   vc_print.c    Volcano's tables and the job view, from the API's JSON
 * and the I/O around them:
 *   vc_conn.c     request/response on the asynchronous client: one call at a time, the loop
 *                 run until that call's callback has fired
 *   main.c        one function per verb
 *
 * Volcano's words are kept: the verbs and flags of `vcctl` and of its shortcuts (vsub, vjobs,
 * vqueues, vsuspend, vresume, vcancel, which swap -n and -N), the column titles and widths, the
 * success lines ("run job x successfully") and the failure line "Failed to <verb> <noun>: ..."
 * with exit status 255. */
#ifndef VC_H
#define VC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kc_api.h"
#include "kc_error.h"

typedef enum {
  VC_NONE,
  VC_HELP,
  VC_VERSION,
  VC_JOB_RUN,
  VC_JOB_LIST,
  VC_JOB_VIEW,
  VC_JOB_WHATIF, /* job whatif, and job run --dry-run */
  VC_JOB_SUSPEND,
  VC_JOB_RESUME,
  VC_JOB_DELETE,
  VC_QUEUE_CREATE,
  VC_QUEUE_GET,
  VC_QUEUE_LIST,
  VC_QUEUE_OPERATE,
  VC_QUEUE_DELETE,
  VC_POD_LIST,
  /* jobflow and jobtemplate (flow.volcano.sh): a->group says which */
  VC_FLOW_CREATE,
  VC_FLOW_LIST,
  VC_FLOW_GET,
  VC_FLOW_DELETE,
  VC_FLOW_DESCRIBE,
} vc_verb;

/* Everything a command line says. Strings are borrowed from argv, the environment or static
 * defaults. */
typedef struct {
  vc_verb verb;
  char what[48];        /* "suspend job": the words after "Failed to"; "" for a shortcut */
  bool list_if_no_name; /* vjobs, vqueues: without --name, list instead */
  const char *usage;    /* the help text of the command (static) */
  const char *master;
  const char *kubeconfig;
  const char *namespace;
  const char *name;
  const char *image;
  const char *requests;
  const char *limits;
  const char *scheduler;
  const char *filename;
  const char *command;
  const char *queue;
  const char *selector;
  const char *job;
  const char *state;
  const char *action;
  const char *file;            /* jobflow/jobtemplate -f */
  const char *format;          /* describe -o: yaml or json; whatif -o: json */
  const char *sched_configmap; /* whatif: NAMESPACE/NAME of the scheduler's ConfigMap */
  const char *sched_conf;      /* whatif: a scheduler configuration file */
  const char *snapshot;        /* whatif: a snapshot file instead of the cluster */
  bool dry_run;                /* job run --dry-run: a what-if */
  bool at_capacity;            /* whatif --at-capacity */
  const char *group; /* the command's group ("job", "jobflow", ...); NULL for a shortcut */
  int min;
  int replicas;
  int weight;
  bool all_namespaces;
  bool help;
} vc_args;

/* A function to read the environment, so tests can give their own. */
typedef const char *(*vc_getenv_fn)(const char *name);

/* Parses a command line. argv[0] picks the program: vcctl and kubectl-vcctl (the kubectl
 * plugin) take "job run", "queue list", ...; vsub, vjobs, vqueues, vsuspend, vresume and vcancel
 * are those commands alone. argv is reordered (positional words first). env may be NULL
 * (getenv). Returns 0 with a->verb set (VC_HELP when help was asked for or no command given),
 * or KC_EINVAL with a message in err. */
KC_NODISCARD int vc_args_parse(int argc, char **argv, vc_getenv_fn env, vc_args *a, char *err,
                               size_t errlen);

/* The program's name as called (the basename of argv0; borrowed). */
const char *vc_prog_name(const char *argv0);

/* Help text for a->verb (or the top-level help) to out. */
void vc_usage(FILE *out, const char *prog, const vc_args *a);

/* ---- objects (vc_objects.c) ---- */

/* "cpu=1000m,memory=100Mi" to {"cpu":"1000m","memory":"100Mi"} (*out new; NULL for "").
 * KC_EINVAL with Volcano's message on a bad item or quantity. */
KC_NODISCARD int vc_resource_list(const char *spec, json_t **out, char *err, size_t errlen);

/* Splits a command the way google/shlex does (quotes, backslashes, no expansion) into a new
 * JSON array of strings (*out). KC_EINVAL on an unclosed quote. */
KC_NODISCARD int vc_shlex(const char *s, json_t **out, char *err, size_t errlen);

/* The Job `vcctl job run` (and vsub) submits, from the flags. *out is new. */
KC_NODISCARD int vc_job_from_flags(const vc_args *a, json_t **out, char *err, size_t errlen);

/* The Command vcctl creates to act on obj (a Job or a Queue, borrowed, as read from the
 * server): generateName "<name>-<action lowercased>-", a controller ownerReference to obj which
 * is also the target, and the action. namespace is where it goes. *out is new. */
KC_NODISCARD int vc_command_for(const json_t *obj, const char *api_version, const char *kind,
                                const char *namespace, const char *action, json_t **out);

/* The Queue `vcctl queue create` submits. *out is new. */
json_t *vc_queue_new(const char *name, int weight, const char *state);

/* Reads a YAML document (a Job file) into JSON with YAML 1.1 scalar typing as sigs.k8s.io/yaml
 * does (plain true/false/null/numbers are typed, quoted scalars are strings). *out is new.
 * KC_EPARSE with the line and column in err. */
KC_NODISCARD int vc_yaml_to_json(const char *text, size_t len, json_t **out, char *err,
                                 size_t errlen);

/* Every document of a YAML stream (a file of JobFlows), as a new JSON array of objects.
 * Empty documents are skipped. KC_EPARSE with the line in err. */
KC_NODISCARD int vc_yaml_docs_to_json(const char *text, size_t len, json_t **out, char *err,
                                      size_t errlen);

/* Writes obj as YAML (block style, as sigs.k8s.io/yaml prints it). 0 or KC_EIO. */
KC_NODISCARD int vc_json_to_yaml(FILE *out, const json_t *obj);

/* ---- output (vc_print.c) ---- */

/* Go's duration.HumanDuration for a span of seconds ("45s", "2m3s", "5h", "3d4h", "2y10d"). */
void vc_human_duration(int64_t seconds, char *buf, size_t len);

/* How long ago an RFC 3339 time was, as Volcano prints it ("<unknown>" for none). */
void vc_since(const char *rfc3339, int64_t now, char *buf, size_t len);

/* Volcano's job table; list is a JobList (borrowed). Returns the number of rows printed. */
size_t vc_print_jobs(FILE *out, const json_t *list, bool all_namespaces);

/* Volcano's queue table over a QueueList, counting the PodGroups of pgs (a PodGroupList, may
 * be NULL) by phase. */
void vc_print_queues(FILE *out, const json_t *queues, const json_t *pgs);
/* The one-queue table `vcctl queue get` prints (with the Parent column). */
void vc_print_queue(FILE *out, const json_t *queue, const json_t *pgs);

/* Volcano's pod table (Name, Ready, Status, Restart, Age) over a PodList. */
void vc_print_pods(FILE *out, const json_t *pods, int64_t now);

/* Volcano's JobFlow table (Name, Namespace, Phase, Age, each as wide as its widest cell plus
 * 4) or, with_phase false, its JobTemplate table (Name, Namespace), over a list. */
void vc_print_flows(FILE *out, const json_t *list, bool with_phase, int64_t now);

/* The job view: the job, then the gang's "why pending" line when there is one (pg may be
 * NULL), then the events (an EventList, may be NULL). */
void vc_print_job_view(FILE *out, const json_t *job, const json_t *pg, const json_t *events,
                       int64_t now);

/* Why the gang waits, from the PodGroup's phase and its newest true condition that is not
 * Scheduled. Writes a line to buf and returns true when the job or its PodGroup is waiting;
 * false (buf "") when nothing waits. */
bool vc_why_pending(const json_t *job, const json_t *pg, char *buf, size_t len);

/* Readers over the API's JSON shared by the printers: the value at a dotted path
 * ("status.state.phase"; borrowed, or NULL), that value as a string ("" when absent) or an
 * integer (0), and Go's time.Time.String() of an RFC 3339 time in the local zone (the zero
 * time for none). */
json_t *vc_at(const json_t *o, const char *path);
const char *vc_str(const json_t *o, const char *path);
long long vc_num(const json_t *o, const char *path);
void vc_go_time(const char *rfc3339, char *buf, size_t len);

/* ---- request/response (vc_conn.c) ---- */

typedef struct vc_conn vc_conn;

typedef struct {
  int err;     /* 0 or a kc_error.h code */
  long status; /* HTTP status */
  json_t *obj; /* new reference to the body (2xx), or NULL */
  char message[1024];
} vc_reply;

/* Loads the client configuration as the daemons do (kc_config_load: --kubeconfig and --master,
 * else in-cluster, else $KUBECONFIG or ~/.kube/config) and makes a client. KC_E* with a message
 * in err. */
KC_NODISCARD int vc_conn_open(const char *kubeconfig, const char *master, vc_conn **out, char *err,
                              size_t errlen);
/* One call, run to completion. r->obj must be released with vc_reply_clear. Returns r->err. */
KC_NODISCARD int vc_call(vc_conn *c, kc_verb verb, const kc_ref *ref, const kc_query *q,
                         json_t *body, vc_reply *r);
void vc_reply_clear(vc_reply *r);
/* Runs the loop until done(ud) is true: 0, or KC_ETIMEDOUT after timeout_ms. */
KC_NODISCARD int vc_conn_run_until(vc_conn *c, bool (*done)(void *), void *ud, uint64_t timeout_ms);
/* Frees the client, runs the loop out and closes it. NULL is a no-op. */
void vc_conn_close(vc_conn *c);

/* ---- what-if (vc_whatif_cmd.c) ---- */

/* `job whatif` / `job run --dry-run` for job (borrowed): reads the cluster and the scheduler's
 * configuration through conn (NULL with a->snapshot: offline), prints the answer. 0 or KC_E*
 * with the message in err. */
KC_NODISCARD int vc_whatif_cmd(const vc_args *a, vc_conn *conn, json_t *job, char *err,
                               size_t errlen);

#endif
