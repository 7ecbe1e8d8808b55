/* Expectations: see ctl_expect.h. */
#include "ctl_expect.h"

#include <stdlib.h>
#include <string.h>

void ctl_expects_init(ctl_expects *e) {
  kc_strmap_init(&e->jobs, KC_STRMAP_COPY_KEYS);
}

static void free_pods(void *v) {
  kc_strmap *m = v;
  kc_strmap_close(m, free);
  free(m);
}

void ctl_expects_close(ctl_expects *e) {
  kc_strmap_close(&e->jobs, free_pods);
}

int ctl_expect_add(ctl_expects *e, const char *key, const ctl_pod *pod, bool create,
                   uint64_t now_ns) {
  kc_strmap *m = kc_strmap_get(&e->jobs, key);
  if (!m) {
    if (!(m = calloc(1, sizeof(*m))))
      return KC_ENOMEM;
    kc_strmap_init(m, KC_STRMAP_COPY_KEYS);
    if (kc_strmap_put(&e->jobs, key, m, NULL) < 0) {
      free(m);
      return KC_ENOMEM;
    }
  }
  ctl_expect *x = calloc(1, sizeof(*x));
  if (!x)
    return KC_ENOMEM;
  x->create = create;
  x->pod = *pod;
  x->at_ns = now_ns;
  void *old = NULL;
  int rc = kc_strmap_put(m, pod->name, x, &old);
  free(old);
  if (rc < 0) {
    free(x);
    return rc;
  }
  return 0;
}

static void remove_pod(ctl_expects *e, const char *key, kc_strmap *m, const char *pod) {
  void *old = NULL;
  if (kc_strmap_del(m, pod, &old) == 0)
    free(old);
  if (kc_strmap_len(m) == 0 && kc_strmap_del(&e->jobs, key, &old) == 0)
    free_pods(old);
}

void ctl_expect_del(ctl_expects *e, const char *key, const char *pod) {
  kc_strmap *m = kc_strmap_get(&e->jobs, key);
  if (m)
    remove_pod(e, key, m, pod);
}

void ctl_expect_observe(ctl_expects *e, const char *key, const ctl_pod *pod, bool deleted) {
  kc_strmap *m = kc_strmap_get(&e->jobs, key);
  const ctl_expect *x = m ? kc_strmap_get(m, pod->name) : NULL;
  if (!x)
    return;
  bool confirmed;
  if (x->create)
    confirmed = !deleted;
  else if (deleted)
    confirmed = !x->pod.uid[0] || strcmp(x->pod.uid, pod->uid) == 0;
  else
    confirmed = x->pod.uid[0] && strcmp(x->pod.uid, pod->uid) != 0;
  if (confirmed)
    remove_pod(e, key, m, pod->name);
}

void ctl_expect_drop_key(ctl_expects *e, const char *key) {
  void *old = NULL;
  if (kc_strmap_del(&e->jobs, key, &old) == 0)
    free_pods(old);
}

const ctl_expect *ctl_expect_get(const ctl_expects *e, const char *key, const char *pod) {
  const kc_strmap *m = kc_strmap_get(&e->jobs, key);
  return m ? kc_strmap_get(m, pod) : NULL;
}

bool ctl_expect_deleting(const ctl_expects *e, const char *key, const ctl_pod *p, uint64_t now_ns) {
  const ctl_expect *x = ctl_expect_get(e, key, p->name);
  return x && !x->create && strcmp(x->pod.uid, p->uid) == 0 && !p->deletion_ts &&
         now_ns - x->at_ns < CTL_EXPECT_TTL_NS;
}

const ctl_pod *ctl_expect_next_create(const ctl_expects *e, const char *key, uint64_t now_ns,
                                      size_t *pos) {
  const kc_strmap *m = kc_strmap_get(&e->jobs, key);
  kc_strmap_slot *sl;
  while (m && (sl = kc_strmap_next(m, pos))) {
    const ctl_expect *x = sl->val;
    if (x->create && now_ns - x->at_ns < CTL_EXPECT_TTL_NS)
      return &x->pod;
  }
  return NULL;
}
