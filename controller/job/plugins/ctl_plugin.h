/* The job plugins (Volcano pkg/controllers/job/plugins): env, svc, ssh and the
 * distributed-training ones (pytorch, tensorflow, mpi, ray, hcclrank), one file each, and
 * what they share. They are pure: they mutate the pod under construction and put objects
 * into the plan; nothing here does I/O. */
#ifndef CTL_PLUGIN_H
#define CTL_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl_int.h"
#include "kc_error.h"

/* ---- arguments, parsed as Go's flag package parses them (Volcano builds a FlagSet per
 * plugin): "-name=v", "--name=v", "--name v" (not for bools), a bare "--bool" means true;
 * parsing stops at the first non-flag or at "--". An undefined flag or a bad value stops it
 * with an error, the flags already parsed keep their values and a bad number or bool becomes
 * 0/false, as Go's Value.Set leaves it. ---- */

typedef enum { CTL_FLAG_STRING = 0, CTL_FLAG_INT, CTL_FLAG_BOOL } ctl_flag_type;

typedef struct {
  const char *name;
  ctl_flag_type type;
  size_t offset; /* of the field in the plugin's settings struct: const char *, int64_t, bool */
} ctl_flag;

/* Fills the fields of settings (already holding the defaults) from args (borrowed; string
 * values point into it). Returns 0, or KC_EINVAL with Go's message in err, after logging it
 * as Volcano does ("plugin <name> flagset parse failed"). */
KC_NODISCARD int ctl__flags_parse(const char *plugin, const ctl_flag *flags, size_t nflags,
                                  const Kiln__StringList *args, void *settings, char *err,
                                  size_t errlen);

/* ---- helpers over the job and the pod under construction ---- */

/* Index of the task named name in the job's spec, or -1 (helpers.GetTaskIndexUnderJob). */
KC_NODISCARD int ctl__task_index(const Kiln__Job *job, const char *name);
/* "<hostname>.<subdomain>" of a task's pod: the template's hostname, or the pod name
 * <job>-<task>-<index>; the template's subdomain, or the job name (helpers.MakeDomainName). */
void ctl__domain_name(const Kiln__Job *job, const Kiln__TaskSpec *t, int index, char *out,
                      size_t len);
/* The same from the template's hostname and subdomain ("" when unset) read already
 * (ctl__plugin_template_host): a loop over a task's replicas parses its template once. */
void ctl__domain_name_of(const Kiln__Job *job, const Kiln__TaskSpec *t, const char *host,
                         const char *sub, int index, char *out, size_t len);
/* Appends {name, value} to the container's env. */
void ctl__container_env(json_t *ct, const char *name, const char *value);
/* Adds {name, containerPort} unless a port with that containerPort exists already. */
void ctl__container_port(json_t *ct, const char *name, int64_t port);
/* The pod's containers (or initContainers) array; NULL when it has none. Borrowed. */
json_t *ctl__pod_containers(json_t *pod, bool init);
/* The pod's metadata.<key> object (labels, annotations), created when absent. Borrowed. */
json_t *ctl__pod_meta_map(json_t *pod, const char *key);

/* ---- the markers, arguments and object shapes every plugin uses ---- */

/* The value of "--flag=v" or "--flag v" in args (borrowed), "true" for a bare last flag,
 * NULL when absent: the simple parsing env, svc and ssh do (Volcano reads their arguments
 * the same loose way). */
const char *ctl__plugin_arg(const Kiln__StringList *args, const char *flag);
/* The flag as a bool ("true", "True" or "1"), def when absent. */
bool ctl__plugin_arg_bool(const Kiln__StringList *args, const char *flag, bool def);
/* o's member key as an array (or object), made and set when absent or of another type.
 * Borrowed. */
json_t *ctl__json_child(json_t *o, const char *key, bool array);
/* Applies f to every container and init container of the pod spec. */
void ctl__each_container(json_t *pod, void (*f)(json_t *ct, void *arg), void *arg);

bool ctl__plugin_marked(ctl_ctx *c, const char *plugin);
void ctl__plugin_mark(ctl_ctx *c, const char *plugin, bool on);
/* New metadata {name, namespace, ownerReferences: [the job as controller]}. */
json_t *ctl__plugin_meta(const Kiln__Job *job, const char *name);
/* Queues the delete of {apiVersion, kind, name} in the job's namespace. */
KC_NODISCARD int ctl__plugin_delete(ctl_ctx *c, const char *api, const char *kind,
                                    const char *name);
/* The template's spec.hostname and spec.subdomain ("" when unset). */
void ctl__plugin_template_host(const Kiln__TaskSpec *t, char *host, size_t hl, char *sub,
                               size_t sl);

/* ---- the plugins that a training plugin implies (Volcano's mutating webhook adds svc for
 * tensorflow, mpi, pytorch and ray, and ssh for mpi, with no arguments) ---- */

typedef struct {
  const char *name;
  const Kiln__StringList *args; /* NULL: none */
} ctl_plugin_use;

#define CTL_PLUGIN_USES_MAX 32
/* The plugins the job runs, in spec order, then svc and ssh when implied and not named.
 * Fills at most cap entries and returns how many. */
size_t ctl__plugins_used(const Kiln__JobSpec *spec, ctl_plugin_use *out, size_t cap);

/* ---- the hooks, registered in ctl_plugins.c's table ---- */

KC_NODISCARD int ctl__env_job_add(ctl_ctx *c, const Kiln__StringList *args);
KC_NODISCARD int ctl__env_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                                     const Kiln__TaskSpec *t, int index);
KC_NODISCARD int ctl__env_job_delete(ctl_ctx *c, const Kiln__StringList *args);

KC_NODISCARD int ctl__svc_job_add(ctl_ctx *c, const Kiln__StringList *args);
KC_NODISCARD int ctl__svc_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                                     const Kiln__TaskSpec *t, int index);
KC_NODISCARD int ctl__svc_job_update(ctl_ctx *c, const Kiln__StringList *args);
KC_NODISCARD int ctl__svc_job_delete(ctl_ctx *c, const Kiln__StringList *args);

KC_NODISCARD int ctl__ssh_job_add(ctl_ctx *c, const Kiln__StringList *args);
KC_NODISCARD int ctl__ssh_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                                     const Kiln__TaskSpec *t, int index);
KC_NODISCARD int ctl__ssh_job_delete(ctl_ctx *c, const Kiln__StringList *args);

KC_NODISCARD int ctl__pytorch_job_add(ctl_ctx *c, const Kiln__StringList *args);
KC_NODISCARD int ctl__pytorch_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                                         const Kiln__TaskSpec *t, int index);
KC_NODISCARD int ctl__pytorch_job_delete(ctl_ctx *c, const Kiln__StringList *args);

KC_NODISCARD int ctl__tensorflow_job_add(ctl_ctx *c, const Kiln__StringList *args);
KC_NODISCARD int ctl__tensorflow_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                                            const Kiln__TaskSpec *t, int index);
KC_NODISCARD int ctl__tensorflow_job_delete(ctl_ctx *c, const Kiln__StringList *args);

KC_NODISCARD int ctl__mpi_job_add(ctl_ctx *c, const Kiln__StringList *args);
KC_NODISCARD int ctl__mpi_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                                     const Kiln__TaskSpec *t, int index);
KC_NODISCARD int ctl__mpi_job_delete(ctl_ctx *c, const Kiln__StringList *args);

KC_NODISCARD int ctl__ray_job_add(ctl_ctx *c, const Kiln__StringList *args);
KC_NODISCARD int ctl__ray_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                                     const Kiln__TaskSpec *t, int index);
KC_NODISCARD int ctl__ray_job_delete(ctl_ctx *c, const Kiln__StringList *args);

KC_NODISCARD int ctl__hcclrank_pod_create(ctl_ctx *c, const Kiln__StringList *args, json_t *pod,
                                          const Kiln__TaskSpec *t, int index);

#endif
