/* The controllers of kiln-controller, Volcano's vc-controller-manager: one constant table
 * (Volcano's framework.RegisterController) that --controllers selects from, and the manager
 * that initialises, starts, stops and frees the selected ones together.
 *
 * A controller is a new file that defines one ctl_controller_def and adds it to the table in
 * ctl_controllers.c. Each keeps Kiln's split: its decisions are pure functions of a view
 * (unit-tested), its shell owns informers, a work queue and the writes. */
#ifndef CTL_CONTROLLERS_H
#define CTL_CONTROLLERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "ctl_gates.h"
#include "kc_api.h"
#include "kc_error.h"

struct kc_metrics;
struct kc_leader;
struct kc_event_recorder;

/* What every controller is given (Volcano's framework.ControllerOption). Everything is
 * borrowed and outlives the controllers. */
typedef struct {
  uv_loop_t *loop;
  kc_client *client;
  struct kc_metrics *metrics;       /* may be NULL */
  struct kc_leader *leader;         /* write fence; NULL: always allowed */
  struct kc_event_recorder *events; /* NULL: events are only logged */
  const char *const *schedulers;    /* --scheduler-name */
  size_t nschedulers;
  int workers;             /* --worker-threads: Jobs synced at once */
  int workers_pg;          /* --worker-threads-for-podgroup */
  int workers_queue;       /* --worker-threads-for-queue */
  int workers_gc;          /* --worker-threads-for-gc */
  int workers_cron;        /* --worker-threads-for-cronjob */
  double cron_clock_speed; /* --cronjob-test-clock-speed (tests only); 0 or 1: the wall clock */
  int max_requeue;         /* --max-requeue-num; -1 unlimited */
  bool inherit_owner_annotations; /* --inherit-owner-annotations */
  /* --kube-api-content-type is protobuf: pods are listed and watched in Kubernetes' protobuf
   * encoding (Volcano's resources are always JSON). */
  bool protobuf;
  /* Informers shared by the controllers (set by ctl_manager_new); NULL: each its own. */
  struct ctl_inf_hub *hub;
} ctl_env;

/* One controller. Hooks take the controller made by init (new; freed by free). */
typedef struct ctl_controller_def {
  const char *name;      /* Volcano's name, as --controllers spells it */
  const char *informers; /* what it lists and watches (logs, --help, docs) */
  /* Builds the controller (informers created, nothing started). 0 or a kc_error code. */
  int (*init)(const ctl_env *env, void **out);
  /* Starts its informers; it works once they have synced. */
  int (*start)(void *c);
  /* True once its caches have synced (for /readyz). */
  bool (*synced)(const void *c);
  /* Stops taking work; done(ud) once the writes in flight ended or deadline_ms passed. */
  void (*stop)(void *c, uint64_t deadline_ms, void (*done)(void *ud), void *ud);
  /* Logs its counters (optional) and frees it; run the loop afterwards. NULL is a no-op. */
  void (*free)(void *c);
} ctl_controller_def;

/* The table, NULL-terminated, in start order. */
extern const ctl_controller_def *const ctl_controllers[];

/* ---- the manager ---- */

typedef struct ctl_manager ctl_manager;

/* Initialises every controller of the table that gates (Volcano's --controllers) enables,
 * logging the others as Volcano does. env is borrowed. *out is new. 0 or the first
 * controller's error (named in the log). */
KC_NODISCARD int ctl_manager_new(const ctl_env *env, const char *const *gates, size_t ngates,
                                 ctl_manager **out);
KC_NODISCARD int ctl_manager_start(ctl_manager *m);
/* True once every running controller has synced its caches. */
bool ctl_manager_synced(const ctl_manager *m);
/* Stops every controller; done(ud) once all have finished (each within deadline_ms). */
void ctl_manager_stop(ctl_manager *m, uint64_t deadline_ms, void (*done)(void *ud), void *ud);
void ctl_manager_free(ctl_manager *m);
/* How many controllers run, and whether the named one does. */
size_t ctl_manager_running(const ctl_manager *m);
bool ctl_manager_runs(const ctl_manager *m, const char *name);

#endif
