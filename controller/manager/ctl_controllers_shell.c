/* The table of controllers and the manager that runs the ones --controllers selects (Volcano's
 * framework.ForeachController loop in cmd/controller-manager/app/server.go). */
#include <stdlib.h>
#include <string.h>

#include "ctl_controllers.h"
#include "ctl_inf.h"
#include "kc_error.h"
#include "kc_log.h"

extern const ctl_controller_def ctl_job_controller;
extern const ctl_controller_def ctl_cronjob_controller;
extern const ctl_controller_def ctl_queue_controller;
extern const ctl_controller_def ctl_gc_controller;
extern const ctl_controller_def ctl_pg_controller;
extern const ctl_controller_def ctl_jobflow_controller;
extern const ctl_controller_def ctl_jobtemplate_controller;
extern const ctl_controller_def ctl_hypernode_controller;

/* Start order is Volcano's registration order; add a controller here. */
const ctl_controller_def *const ctl_controllers[] = {
    &ctl_job_controller,         &ctl_cronjob_controller,   &ctl_pg_controller,
    &ctl_queue_controller,       &ctl_gc_controller,        &ctl_jobflow_controller,
    &ctl_jobtemplate_controller, &ctl_hypernode_controller, NULL,
};

typedef struct {
  const ctl_controller_def *def;
  void *c;
  bool stopped;
} running;

struct ctl_manager {
  running *run;
  size_t n;
  size_t stopping; /* controllers whose stop has not called back yet */
  void (*done)(void *ud);
  void *ud;
  ctl_inf_hub *hub; /* one watch per resource for all of them */
};

int ctl_manager_new(const ctl_env *env, const char *const *gates, size_t ngates,
                    ctl_manager **out) {
  size_t total = 0;
  while (ctl_controllers[total])
    total++;
  ctl_manager *m = calloc(1, sizeof(*m));
  if (!m || !(m->run = calloc(total ? total : 1, sizeof(*m->run))) ||
      ctl_inf_hub_new(env->client, env->protobuf, &m->hub) != 0) {
    if (m)
      free(m->run);
    free(m);
    return KC_ENOMEM;
  }
  ctl_env shared_env = *env;
  shared_env.hub = m->hub;
  const char *known[16] = {0};
  for (size_t i = 0; i < total && i + 1 < sizeof(known) / sizeof(known[0]); i++)
    known[i] = ctl_controllers[i]->name;
  const char *unknown = ctl_controllers_unknown(gates, ngates, known);
  if (unknown) /* Volcano ignores it too; say so rather than fail a Volcano Deployment */
    KC_WARN("--controllers names %s, which is not a controller of vc-controller-manager; ignored",
            unknown);
  for (size_t g = 0; g < ngates; g++)
    for (size_t i = 0; gates[g][0] != '-' && ctl_controllers_later[i]; i++)
      if (strcmp(gates[g] + (gates[g][0] == '+'), ctl_controllers_later[i]) == 0)
        KC_WARN("Controller <%s> is not part of this kiln-controller", ctl_controllers_later[i]);
  for (size_t i = 0; i < total; i++) {
    const ctl_controller_def *d = ctl_controllers[i];
    if (!ctl_controller_enabled(d->name, gates, ngates)) {
      KC_INFO("Controller <%s> is not enable", d->name);
      continue;
    }
    void *c = NULL;
    int rc = d->init(&shared_env, &c);
    if (rc) {
      KC_ERROR("Failed to initialize controller <%s>: %s", d->name, kc_strerror(rc));
      ctl_manager_free(m);
      return rc;
    }
    m->run[m->n].def = d;
    m->run[m->n].c = c;
    m->n++;
    KC_INFO("controller <%s> initialised (watches %s)", d->name, d->informers);
  }
  if (m->n == 0)
    KC_WARN("no controller is enabled by --controllers; kiln-controller will only idle");
  *out = m;
  return 0;
}

int ctl_manager_start(ctl_manager *m) {
  for (size_t i = 0; i < m->n; i++) {
    int rc = m->run[i].def->start(m->run[i].c);
    if (rc) {
      KC_ERROR("cannot start controller <%s>: %s", m->run[i].def->name, kc_strerror(rc));
      return rc;
    }
    KC_INFO("Starting %s", m->run[i].def->name);
  }
  return 0;
}

bool ctl_manager_synced(const ctl_manager *m) {
  for (size_t i = 0; m && i < m->n; i++)
    if (!m->run[i].def->synced(m->run[i].c))
      return false;
  return m != NULL;
}

static void one_stopped(void *ud) {
  ctl_manager *m = ud;
  if (m->stopping > 0 && --m->stopping == 0 && m->done) {
    void (*done)(void *) = m->done;
    m->done = NULL;
    done(m->ud);
  }
}

void ctl_manager_stop(ctl_manager *m, uint64_t deadline_ms, void (*done)(void *ud), void *ud) {
  m->done = done;
  m->ud = ud;
  /* Counted before any stop runs: a controller may call back at once. */
  m->stopping = m->n + 1;
  for (size_t i = 0; i < m->n; i++)
    if (!m->run[i].stopped) {
      m->run[i].stopped = true;
      m->run[i].def->stop(m->run[i].c, deadline_ms, one_stopped, m);
    } else {
      m->stopping--;
    }
  one_stopped(m);
}

void ctl_manager_free(ctl_manager *m) {
  if (!m)
    return;
  for (size_t i = m->n; i-- > 0;)
    m->run[i].def->free(m->run[i].c);
  ctl_inf_hub_free(m->hub); /* after the controllers: it goes with its last informer */
  free(m->run);
  free(m);
}

size_t ctl_manager_running(const ctl_manager *m) {
  return m ? m->n : 0;
}

bool ctl_manager_runs(const ctl_manager *m, const char *name) {
  for (size_t i = 0; m && i < m->n; i++)
    if (strcmp(m->run[i].def->name, name) == 0)
      return true;
  return false;
}
