/* The process around a Kiln program: what kiln-controller and kiln-scheduler both do to start
 * and to stop, on one libuv loop.
 *
 * A program embeds a kc_app in its own state and keeps what is its own: its flags, its shell,
 * and the words of its log lines. kc_app holds the client configuration, the API client, the
 * metrics registry, the event recorder, the leader elector (optional), up to two health and
 * metrics servers, the SIGTERM/SIGINT handlers, and the stop sequence:
 *
 *   kc_app_init    loop and client configuration (a bad kubeconfig is logged here)
 *   kc_app_open    client, metrics registry, event recorder, the loop's busy-time metrics
 *                  (kc_loopwatch.h)
 *   kc_app_elect   leader elector (optional; callbacks go to the hooks)
 *   kc_app_serve   a health (and metrics) server (at most twice)
 *   kc_app_start   signal handlers, then the elector
 *   kc_app_run     the loop, until every handle has closed; returns the exit code
 *   kc_app_close   releases the rest, closes the loop
 *
 * Stopping: a first SIGTERM or SIGINT, kc_app_stop, or the loss of leadership (logged, then
 * the stop with code 1 on the next turn of the loop, so the elector is never freed from its
 * own callback) calls hooks->stop once. The program stops its own work there, at once or after
 * draining, and then calls kc_app_stopped, which frees the elector, the event recorder, the
 * client and the servers and closes the signal handlers; the loop then runs out. A second
 * signal while the program drains exits the process at once with status 1.
 *
 * On a failure before kc_app_run, the program frees its own parts and calls kc_app_close
 * (which calls kc_app_stopped if it was not). Everything runs on the loop thread. */
#ifndef KC_APP_H
#define KC_APP_H

#include <stdbool.h>

#include <uv.h>

#include "kc_api.h"
#include "kc_config.h"
#include "kc_events.h"
#include "kc_httpd.h"
#include "kc_leader.h"
#include "kc_loopwatch.h"
#include "kc_metrics.h"

typedef struct kc_app kc_app;

/* The program's side. The app is passed back: recover the owner with container_of. */
typedef struct {
  /* Required. Stop the program's own work and then call kc_app_stopped(a), from here or
   * later from the loop. signum is the signal that asked (SIGTERM, SIGINT), else 0; log it in
   * the program's words. Called at most once. */
  void (*stop)(kc_app *a, int signum);
  /* Optional, with an elector: this replica now leads. Not called once the stop has begun. */
  void (*started_leading)(kc_app *a);
  /* Optional, with an elector: the holder observed changed (identity borrowed, "" when the
   * lease was released). */
  void (*new_leader)(kc_app *a, const char *identity);
} kc_app_hooks;

#define KC_APP_MAX_SERVERS 2

struct kc_app {
  /* Readable by the program. */
  uv_loop_t loop;
  kc_client *client;         /* from kc_app_open until kc_app_stopped */
  kc_metrics *metrics;       /* from kc_app_open until kc_app_close */
  kc_event_recorder *events; /* from kc_app_open until kc_app_stopped */
  kc_leader *leader;         /* from kc_app_elect until kc_app_stopped; NULL without one */
  bool stopping;             /* the stop has begun */
  int exit_code;             /* what kc_app_run returns: 0, or 1 after a failure */
  /* Private. */
  const kc_app_hooks *hooks;
  const kc_leader_options *lopt;
  kc_config cfg;
  kc_httpd *servers[KC_APP_MAX_SERVERS];
  uv_signal_t sigterm, sigint;
  uv_timer_t later;        /* the stop after leadership is lost */
  uv_timer_t trim;         /* hands the heap's free pages back to the kernel (kc_app_start) */
  kc_loopwatch *loopwatch; /* the loop's busy stretches, from kc_app_open */
  bool idle_time;          /* the loop measures its idle time */
  bool released;
};

/* Initializes *a (any previous content is ignored): the loop, then the client configuration
 * from kubeconfig and master (see kc_config_load; both may be NULL). hooks is borrowed and
 * must outlive a. A configuration that does not load is logged ("cannot load the client
 * configuration: ..."). On an error nothing is left to close. */
int kc_app_init(kc_app *a, const kc_app_hooks *hooks, const char *kubeconfig, const char *master);

/* Creates the API client (copt is copied), the metrics registry and the event recorder, whose
 * source is component. Nothing is logged; on an error kc_app_close releases what was made. */
int kc_app_open(kc_app *a, const kc_client_options *copt, const char *component);

/* Creates the leader elector on the client (after kc_app_open). lopt is borrowed and must
 * outlive a; the namespace is lopt->lock_object_namespace when set (Volcano's deprecated flag),
 * else lopt->resource_namespace. Nothing is logged unless lopt is invalid (kc_leader_new). */
int kc_app_elect(kc_app *a, const kc_leader_options *lopt);

/* Creates and starts a server on address serving /healthz, /livez and /readyz with the
 * readiness check ready(ud), and /metrics from the registry when with_metrics. *out (borrowed,
 * owned by a) is set once the server exists, so after a failure to start kc_httpd_errmsg(*out)
 * says why; it stays NULL when the server could not be made (the return code says why).
 * KC_ENOMEM after KC_APP_MAX_SERVERS servers. Nothing is logged. */
int kc_app_serve(kc_app *a, const char *address, bool with_metrics, kc_check_fn ready, void *ud,
                 kc_httpd **out);

/* Starts the SIGTERM and SIGINT handlers, then the elector if there is one (logging "leader
 * election on lease <namespace>/<name> as <identity>"). Nothing else is logged. */
int kc_app_start(kc_app *a);

/* Begins the stop with exit code code: calls hooks->stop(a, 0). A no-op once begun. */
void kc_app_stop(kc_app *a, int code);

/* The program's work has stopped: frees the elector, the event recorder, the client and the
 * servers, and closes the signal handlers and the timer; run the loop afterwards. A no-op the
 * second time. */
void kc_app_stopped(kc_app *a);

/* Runs the loop until every handle has closed. Returns a->exit_code. */
int kc_app_run(kc_app *a);

/* Calls kc_app_stopped if needed, runs the loop out, closes it and frees the metrics registry
 * and the configuration. 0, or KC_EIO when the loop still had handles open (a leak). */
int kc_app_close(kc_app *a);

#endif
