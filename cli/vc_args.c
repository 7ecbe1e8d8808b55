/* vcctl's command lines: Volcano's commands, flags, shorthands and defaults as data (one row
 * per command), turned into kc_flag tables when a line is parsed. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_flags.h"
#include "vc.h"

/* Every flag vcctl knows, once: long name, type, where it goes, help. */
enum {
  O_MASTER,
  O_KUBECONFIG,
  O_NAMESPACE,
  O_NAME,
  O_IMAGE,
  O_MIN,
  O_REPLICAS,
  O_REQUESTS,
  O_LIMITS,
  O_SCHEDULER,
  O_FILENAME,
  O_COMMAND,
  O_QUEUE,
  O_SELECTOR,
  O_ALLNS,
  O_JOB,
  O_WEIGHT,
  O_STATE,
  O_ACTION,
  O_FILE,
  O_FORMAT,
  O_OUTPUT,
  O_DRY_RUN,
  O_AT_CAPACITY,
  O_SCHED_CONFIGMAP,
  O_SCHED_CONF,
  O_SNAPSHOT,
  O_HELP,
  O__COUNT
};

typedef struct {
  const char *name;
  kc_flag_type type;
  size_t off;
} opt_def;

#define OPT(n, t, field)                                                                           \
  { n, t, offsetof(vc_args, field) }
static const opt_def opts[O__COUNT] = {
    [O_MASTER] = OPT("master", KC_FLAG_STRING, master),
    [O_KUBECONFIG] = OPT("kubeconfig", KC_FLAG_STRING, kubeconfig),
    [O_NAMESPACE] = OPT("namespace", KC_FLAG_STRING, namespace),
    [O_NAME] = OPT("name", KC_FLAG_STRING, name),
    [O_IMAGE] = OPT("image", KC_FLAG_STRING, image),
    [O_MIN] = OPT("min", KC_FLAG_INT, min),
    [O_REPLICAS] = OPT("replicas", KC_FLAG_INT, replicas),
    [O_REQUESTS] = OPT("requests", KC_FLAG_STRING, requests),
    [O_LIMITS] = OPT("limits", KC_FLAG_STRING, limits),
    [O_SCHEDULER] = OPT("scheduler", KC_FLAG_STRING, scheduler),
    [O_FILENAME] = OPT("filename", KC_FLAG_STRING, filename),
    [O_COMMAND] = OPT("command", KC_FLAG_STRING, command),
    [O_QUEUE] = OPT("queue", KC_FLAG_STRING, queue),
    [O_SELECTOR] = OPT("selector", KC_FLAG_STRING, selector),
    [O_ALLNS] = OPT("all-namespaces", KC_FLAG_BOOL, all_namespaces),
    [O_JOB] = OPT("job", KC_FLAG_STRING, job),
    [O_WEIGHT] = OPT("weight", KC_FLAG_INT, weight),
    [O_STATE] = OPT("state", KC_FLAG_STRING, state),
    [O_ACTION] = OPT("action", KC_FLAG_STRING, action),
    [O_FILE] = OPT("file", KC_FLAG_STRING, file),
    [O_FORMAT] = OPT("format", KC_FLAG_STRING, format),
    [O_OUTPUT] = OPT("output", KC_FLAG_STRING, format),
    [O_DRY_RUN] = OPT("dry-run", KC_FLAG_BOOL, dry_run),
    [O_AT_CAPACITY] = OPT("at-capacity", KC_FLAG_BOOL, at_capacity),
    [O_SCHED_CONFIGMAP] = OPT("scheduler-configmap", KC_FLAG_STRING, sched_configmap),
    [O_SCHED_CONF] = OPT("scheduler-conf", KC_FLAG_STRING, sched_conf),
    [O_SNAPSHOT] = OPT("snapshot", KC_FLAG_STRING, snapshot),
    [O_HELP] = OPT("help", KC_FLAG_BOOL, help),
};

/* A flag as one command has it: its shorthand, default and help text (Volcano's). */
typedef struct {
  int opt;
  char shorthand;  /* 0: none */
  const char *def; /* the default value, or NULL */
  const char *usage;
} use;

#define MAX_USES 20

typedef struct {
  const char *group; /* "job", or NULL for a shortcut */
  const char *word;  /* "run", or the shortcut's program name */
  vc_verb verb;
  const char *noun; /* for "Failed to <word> <noun>" */
  const char *summary;
  bool list_if_no_name;
  use uses[MAX_USES];
} cmd_def;

/* The flags every command has (util.InitFlags). */
#define COMMON                                                                                     \
  {O_MASTER, 's', NULL, "the address of apiserver"},                                               \
      {O_KUBECONFIG, 'k', NULL,                                                                    \
       "(optional) absolute path to the kubeconfig file (default $KUBECONFIG, else "               \
       "~/.kube/config)"},                                                                         \
  {                                                                                                \
    O_HELP, 'h', NULL, "help"                                                                      \
  }

#define NS(c)                                                                                      \
  { O_NAMESPACE, c, "default", "the namespace of job" }
#define JOBNAME(c)                                                                                 \
  { O_NAME, c, NULL, "the name of job" }
#define QNAME(def)                                                                                 \
  { O_NAME, 'n', def, "the name of queue" }
#define RUNFLAGS(nsc, namec, imgdef, nsdef, schdef)                                                \
  {O_IMAGE, 'i', imgdef, "the container image of job"},                                            \
      {O_NAMESPACE, nsc, nsdef, "the namespace of job"}, JOBNAME(namec),                           \
      {O_MIN, 'm', "1", "the minimal available tasks of job"},                                     \
      {O_REPLICAS, 'r', "1", "the total tasks of job"},                                            \
      {O_REQUESTS, 'R', "cpu=1000m,memory=100Mi", "the resource request of the task"},             \
      {O_LIMITS, 'L', "cpu=1000m,memory=100Mi", "the resource limit of the task"}, {               \
    O_SCHEDULER, 'S', schdef, "the scheduler for this job"                                         \
  }

/* What `job whatif` (and `job run --dry-run`) adds (issue 34; not Volcano's). */
#define WHATIFFLAGS                                                                                \
  {O_OUTPUT, 'o', NULL, "output format: json (default: described as text)"},                       \
      {O_AT_CAPACITY, 0, NULL,                                                                     \
       "judge the job against its queue's deserved share instead of today's usage"},               \
      {O_SCHED_CONFIGMAP, 0, NULL,                                                                 \
       "the scheduler's ConfigMap as NAMESPACE/NAME (default: kiln-system/kiln-scheduler-"         \
       "configmap, else volcano-system/volcano-scheduler-configmap)"},                             \
      {O_SCHED_CONF, 0, NULL, "read the scheduler configuration from this file instead"}, {        \
    O_SNAPSHOT, 0, NULL,                                                                           \
        "read the cluster from this snapshot file (kiln-scheduler --dump-snapshot) instead"        \
  }

static const cmd_def cmds[] = {
    {"job",
     "run",
     VC_JOB_RUN,
     "job",
     "run job by parameters from the command line",
     false,
     {COMMON,
      RUNFLAGS('n', 'N', "busybox", "default", "volcano"),
      {O_FILENAME, 'f', NULL, "the yaml file of job"},
      {O_DRY_RUN, 0, NULL, "submit nothing: say where the job would run now (job whatif)"},
      WHATIFFLAGS}},
    {"job",
     "whatif",
     VC_JOB_WHATIF,
     "job",
     "say where a job would run if submitted now, whom it would preempt, and why not",
     false,
     {COMMON,
      {O_FILENAME, 'f', NULL, "the yaml file of job"},
      {O_NAMESPACE, 'n', "default", "the namespace of job, when the file names none"},
      WHATIFFLAGS}},
    {"job",
     "list",
     VC_JOB_LIST,
     "job",
     "list job information",
     false,
     {COMMON,
      {O_QUEUE, 'q', NULL, "list job with specified queue name"},
      NS('n'),
      {O_SCHEDULER, 'S', NULL, "list job with specified scheduler name"},
      {O_ALLNS, 0, NULL, "list jobs in all namespaces"},
      {O_SELECTOR, 0, NULL, "fuzzy matching jobName"}}},
    {"job",
     "view",
     VC_JOB_VIEW,
     "job",
     "show job information",
     false,
     {COMMON, NS('n'), JOBNAME('N')}},
    {"job",
     "suspend",
     VC_JOB_SUSPEND,
     "job",
     "abort a job",
     false,
     {COMMON, NS('n'), JOBNAME('N')}},
    {"job", "resume", VC_JOB_RESUME, "job", "resume a job", false, {COMMON, NS('n'), JOBNAME('N')}},
    {"job",
     "delete",
     VC_JOB_DELETE,
     "job",
     "delete a job ",
     false,
     {COMMON, NS('n'), JOBNAME('N')}},
    {"queue",
     "create",
     VC_QUEUE_CREATE,
     "queue",
     "creates queue",
     false,
     {COMMON,
      QNAME("test"),
      {O_WEIGHT, 'w', "1", "the weight of the queue"},
      {O_STATE, 'S', "Open", "the state of queue"}}},
    {"queue", "delete", VC_QUEUE_DELETE, "queue", "delete queue", false, {COMMON, QNAME(NULL)}},
    {"queue",
     "operate",
     VC_QUEUE_OPERATE,
     "queue",
     "operate queue",
     false,
     {COMMON,
      QNAME(NULL),
      {O_WEIGHT, 'w', "0", "the weight of the queue"},
      {O_ACTION, 'a', NULL, "operate action to queue, valid actions are open, close, update"}}},
    {"queue", "list", VC_QUEUE_LIST, "queue", "lists all the queue", false, {COMMON}},
    {"queue", "get", VC_QUEUE_GET, "queue", "get a queue", false, {COMMON, QNAME(NULL)}},
    {"pod",
     "list",
     VC_POD_LIST,
     "pod",
     "list pod information created by vcjob",
     false,
     {COMMON,
      {O_QUEUE, 'q', NULL, "list pod with specified queue name"},
      {O_JOB, 'j', NULL, "list pod with specified job name"},
      {O_NAMESPACE, 'n', "default", "the namespace of pod"},
      {O_ALLNS, 0, NULL, "list pods in all namespaces"}}},
/* flow.volcano.sh: the same five commands for JobFlows and JobTemplates. */
#define FLOWCMDS(g, noun)                                                                          \
  {g,                                                                                              \
   "create",                                                                                       \
   VC_FLOW_CREATE,                                                                                 \
   g,                                                                                              \
   "create a " noun,                                                                               \
   false,                                                                                          \
   {COMMON, {O_FILE, 'f', NULL, "the path to the YAML file containing the " noun}}},               \
      {g,                                                                                          \
       "list",                                                                                     \
       VC_FLOW_LIST,                                                                               \
       g,                                                                                          \
       "list " noun "s",                                                                           \
       false,                                                                                      \
       {COMMON,                                                                                    \
        {O_NAMESPACE, 'n', "default", "the namespace of " noun},                                   \
        {O_ALLNS, 0, NULL, "list " noun "s in all namespaces"}}},                                  \
      {g,                                                                                          \
       "get",                                                                                      \
       VC_FLOW_GET,                                                                                \
       g,                                                                                          \
       "get a " noun,                                                                              \
       false,                                                                                      \
       {COMMON,                                                                                    \
        {O_NAME, 'N', NULL, "the name of " noun},                                                  \
        {O_NAMESPACE, 'n', "default", "the namespace of " noun}}},                                 \
      {g,                                                                                          \
       "delete",                                                                                   \
       VC_FLOW_DELETE,                                                                             \
       g,                                                                                          \
       "delete a " noun,                                                                           \
       false,                                                                                      \
       {COMMON,                                                                                    \
        {O_NAME, 'N', NULL, "the name of " noun},                                                  \
        {O_NAMESPACE, 'n', "default", "the namespace of " noun},                                   \
        {O_FILE, 'f', NULL, "the path to the YAML file containing the " noun}}},                   \
  {                                                                                                \
    g, "describe", VC_FLOW_DESCRIBE, g, "describe a " noun, false, {                               \
      COMMON, {O_NAME, 'N', NULL, "the name of " noun},                                            \
          {O_NAMESPACE, 'n', "default", "the namespace of " noun}, {                               \
        O_FORMAT, 'o', "yaml", "the format of output"                                              \
      }                                                                                            \
    }                                                                                              \
  }
    FLOWCMDS("jobflow", "jobflow"),
    FLOWCMDS("jobtemplate", "jobtemplate"),
    /* The Slurm/LSF-style shortcuts: -N is the namespace, -n the name. */
    {NULL,
     "vsub",
     VC_JOB_RUN,
     NULL,
     "submit a job",
     false,
     {COMMON,
      RUNFLAGS('N', 'n', NULL, NULL, NULL),
      {O_COMMAND, 'c', NULL, "the command of of job"}}},
    {NULL,
     "vjobs",
     VC_JOB_VIEW,
     NULL,
     "view job information",
     true,
     {COMMON,
      NS('N'),
      JOBNAME('n'),
      {O_SCHEDULER, 'S', NULL, "list job with specified scheduler name"},
      {O_ALLNS, 0, NULL, "list jobs in all namespaces"},
      {O_SELECTOR, 0, NULL, "fuzzy matching jobName"}}},
    {NULL, "vqueues", VC_QUEUE_GET, NULL, "view queue information", true, {COMMON, QNAME(NULL)}},
    {NULL,
     "vsuspend",
     VC_JOB_SUSPEND,
     NULL,
     "suspend a job",
     false,
     {COMMON, NS('N'), JOBNAME('n')}},
    {NULL, "vresume", VC_JOB_RESUME, NULL, "resume a job", false, {COMMON, NS('N'), JOBNAME('n')}},
    {NULL, "vcancel", VC_JOB_DELETE, NULL, "cancel a job", false, {COMMON, NS('N'), JOBNAME('n')}},
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static size_t nuses(const cmd_def *c) {
  size_t n = 0;
  while (n < MAX_USES && c->uses[n].usage)
    n++;
  return n;
}

const char *vc_prog_name(const char *argv0) {
  if (argv0 == NULL || argv0[0] == '\0')
    return "vcctl";
  const char *s = strrchr(argv0, '/');
  return s ? s + 1 : argv0;
}

static const cmd_def *find_shortcut(const char *prog) {
  for (size_t i = 0; i < NCMDS; i++)
    if (cmds[i].group == NULL && strcmp(cmds[i].word, prog) == 0)
      return &cmds[i];
  return NULL;
}

static bool is_group(const char *w) {
  static const char *const groups[] = {"job", "queue", "pod", "jobflow", "jobtemplate", NULL};
  for (const char *const *g = groups; *g; g++)
    if (strcmp(w, *g) == 0)
      return true;
  return false;
}

/* Sets the defaults, then parses argv[1..] (argv[0] is the command's own word). */
static int parse_flags(const cmd_def *c, int argc, char **argv, vc_args *a, char *err,
                       size_t errlen) {
  kc_flag rows[2 * MAX_USES];
  char shorts[MAX_USES][2];
  size_t n = 0, k = nuses(c);
  for (size_t i = 0; i < k; i++) {
    const use *u = &c->uses[i];
    const opt_def *o = &opts[u->opt];
    void *target = (char *)a + o->off;
    if (u->def && o->type == KC_FLAG_STRING)
      *(const char **)target = u->def;
    else if (u->def && o->type == KC_FLAG_INT)
      *(int *)target = (int)strtol(u->def, NULL, 10);
    rows[n++] = (kc_flag){o->name, o->type, target, u->usage, u->def, NULL, false, NULL};
    if (u->shorthand) {
      shorts[i][0] = u->shorthand;
      shorts[i][1] = '\0';
      rows[n++] = (kc_flag){shorts[i], o->type, target, u->usage, u->def, NULL, false, NULL};
    }
  }
  int npos = 0;
  int rc = kc_flags_parse(rows, n, argc, argv, &npos, err, errlen);
  if (rc == 0 && npos > 0 && !a->help)
    return kc_errorf(err, errlen, KC_EINVAL,
                     "unexpected argument \"%s\": this command takes flags only (see --help)",
                     argv[0]);
  return rc;
}

/* vsub's defaults come from the environment first (VOLCANO_*), as in Volcano. */
static void vsub_defaults(vc_args *a, vc_getenv_fn env) {
  const char *v;
  if (a->scheduler == NULL)
    a->scheduler = (v = env("VOLCANO_SCHEDULER_NAME")) && *v ? v : "volcano";
  if (a->image == NULL)
    a->image = (v = env("VOLCANO_DEFAULT_IMAGE")) && *v ? v : "busybox";
  if (a->namespace == NULL)
    a->namespace = (v = env("VOLCANO_DEFAULT_JOB_NAMESPACE")) && *v ? v : "default";
}

static const cmd_def *current; /* for vc_usage after a parse */

static const char *std_getenv(const char *name) {
  return getenv(name);
}

int vc_args_parse(int argc, char **argv, vc_getenv_fn env, vc_args *a, char *err, size_t errlen) {
  memset(a, 0, sizeof(*a));
  current = NULL;
  if (env == NULL)
    env = std_getenv;
  const char *prog = vc_prog_name(argc > 0 ? argv[0] : NULL);
  const cmd_def *c = find_shortcut(prog);
  int skip = 0; /* words before the flags, besides argv[0] */
  if (c == NULL) {
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
      a->verb = VC_HELP;
      return 0;
    }
    if (strcmp(argv[1], "version") == 0) {
      a->verb = VC_VERSION;
      return 0;
    }
    if (!is_group(argv[1]))
      return kc_errorf(err, errlen, KC_EINVAL, "unknown command \"%s\" for \"%s\"", argv[1], prog);
    if (argc < 3 || argv[2][0] == '-') {
      snprintf(a->what, sizeof(a->what), "%s", argv[1]);
      a->verb = VC_HELP;
      return 0;
    }
    for (size_t i = 0; i < NCMDS && c == NULL; i++)
      if (cmds[i].group && strcmp(cmds[i].group, argv[1]) == 0 &&
          strcmp(cmds[i].word, argv[2]) == 0)
        c = &cmds[i];
    if (c == NULL)
      return kc_errorf(err, errlen, KC_EINVAL, "unknown command \"%s\" for \"%s %s\"", argv[2],
                       prog, argv[1]);
    skip = 2;
  }
  int rc = parse_flags(c, argc - skip, argv + skip, a, err, errlen);
  if (rc != 0)
    return rc;
  current = c;
  if (c->group)
    snprintf(a->what, sizeof(a->what), "%s %s", c->word, c->noun);
  a->verb = a->help ? VC_HELP : c->verb;
  if (a->verb == VC_JOB_RUN && a->dry_run)
    a->verb = VC_JOB_WHATIF;
  a->list_if_no_name = c->list_if_no_name;
  a->group = c->group;
  a->usage = c->summary;
  if (c->group == NULL && c->verb == VC_JOB_RUN)
    vsub_defaults(a, env);
  return 0;
}

static void print_flags(FILE *out, const cmd_def *c) {
  fprintf(out, "Flags:\n");
  for (size_t i = 0, k = nuses(c); i < k; i++) {
    const use *u = &c->uses[i];
    const opt_def *o = &opts[u->opt];
    char head[64];
    const char *type = o->type == KC_FLAG_INT ? " int" : o->type == KC_FLAG_STRING ? " string" : "";
    if (u->shorthand)
      snprintf(head, sizeof(head), "-%c, --%s%s", u->shorthand, o->name, type);
    else
      snprintf(head, sizeof(head), "    --%s%s", o->name, type);
    fprintf(out, "  %-28s %s", head, u->usage);
    if (u->def && o->type == KC_FLAG_STRING)
      fprintf(out, " (default \"%s\")", u->def);
    else if (u->def)
      fprintf(out, " (default %s)", u->def);
    fputc('\n', out);
  }
}

void vc_usage(FILE *out, const char *prog, const vc_args *a) {
  if (current && a->help) {
    if (current->group)
      fprintf(out, "%s\n\nUsage:\n  %s %s %s [flags]\n\n", current->summary, prog, current->group,
              current->word);
    else
      fprintf(out, "%s\n\nUsage:\n  %s [flags]\n\n", current->summary, prog);
    print_flags(out, current);
    return;
  }
  const char *group = a->what[0] ? a->what : NULL;
  fprintf(out, "Usage:\n  %s %s [command] [flags]\n\nAvailable Commands:\n", prog,
          group ? group : "[job|queue|pod|jobflow|jobtemplate|version]");
  for (size_t i = 0; i < NCMDS; i++) {
    if (cmds[i].group == NULL || (group && strcmp(cmds[i].group, group) != 0))
      continue;
    char head[40];
    snprintf(head, sizeof(head), "%s %s", cmds[i].group, cmds[i].word);
    fprintf(out, "  %-22s %s\n", head, cmds[i].summary);
  }
  if (group == NULL)
    fprintf(out, "  %-22s %s\n", "version", "Print the version information");
  fprintf(out, "\nUse \"%s %s [command] --help\" for more information about a command.\n", prog,
          group ? group : "[job|queue|pod|jobflow|jobtemplate]");
}
