/* The job controller's expectations (client-go's, by name): what it asked the API server for
 * and the watch has not shown yet. A created pod is shown in the view as Pending until the
 * pod cache has it; a deleted pod as terminating until the cache loses it. A pure module: the
 * caller passes the time in. */
#ifndef CTL_EXPECT_H
#define CTL_EXPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_job.h"
#include "kc_error.h"
#include "kc_strmap.h"

typedef struct {
  bool create;
  ctl_pod pod;    /* create: the pod as sent; delete: name and uid */
  uint64_t at_ns; /* when asked; an expectation is trusted for CTL_EXPECT_TTL_NS */
} ctl_expect;

#define CTL_EXPECT_TTL_NS (300ull * 1000000000ull)

typedef struct {
  kc_strmap jobs; /* job key -> kc_strmap* (pod name -> ctl_expect*) */
} ctl_expects;

void ctl_expects_init(ctl_expects *e);
/* Frees every expectation. */
void ctl_expects_close(ctl_expects *e);

/* Expects pod (copied) of the Job key to appear (create) or to go, asked at now_ns; replaces
 * an expectation for the same pod name. 0 or KC_ENOMEM. */
KC_NODISCARD int ctl_expect_add(ctl_expects *e, const char *key, const ctl_pod *pod, bool create,
                                uint64_t now_ns);
/* Forgets the expectation for the pod name (the write failed, or is done with). */
void ctl_expect_del(ctl_expects *e, const char *key, const char *pod);
/* The watch showed pod (added or updated; deleted when deleted): a create is confirmed by the
 * pod appearing, a delete by that pod (that uid) leaving or by a pod of the same name with
 * another uid. A confirmed expectation goes. */
void ctl_expect_observe(ctl_expects *e, const char *key, const ctl_pod *pod, bool deleted);
/* Forgets every expectation of the Job key. */
void ctl_expect_drop_key(ctl_expects *e, const char *key);
/* The expectation for the pod name, or NULL. Borrowed until the next change. */
const ctl_expect *ctl_expect_get(const ctl_expects *e, const char *key, const char *pod);

/* Whether the cached pod p is to be shown as terminating: its deletion was asked (for that
 * uid) less than CTL_EXPECT_TTL_NS before now_ns and the cache does not show it yet. */
bool ctl_expect_deleting(const ctl_expects *e, const char *key, const ctl_pod *p, uint64_t now_ns);
/* The next pod whose creation was asked less than CTL_EXPECT_TTL_NS before now_ns, from
 * *pos (start at 0), or NULL at the end. Borrowed until the next change. */
const ctl_pod *ctl_expect_next_create(const ctl_expects *e, const char *key, uint64_t now_ns,
                                      size_t *pos);

#endif
