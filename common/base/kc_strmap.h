/* A string-keyed hash map with void * values: open addressing, linear
 * probing, backward-shift deletion (no tombstones), doubling at 3/4 load.
 * It is the one hash table under the store, the work queue and the rate
 * limiter, so that each of them gets O(1) average lookups from the same code.
 *
 * Key ownership is decided once at init: KC_STRMAP_COPY_KEYS makes the map
 * copy each key on insert and free it on removal; otherwise keys are borrowed
 * and must outlive their entry (the store's indexes borrow the key string of
 * the store entry itself, so each key is held once in memory). */
#ifndef KC_STRMAP_H
#define KC_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kc_error.h"

enum { KC_STRMAP_BORROW_KEYS = 0, KC_STRMAP_COPY_KEYS = 1 };

typedef struct {
  const char *key; /* NULL marks an empty slot */
  void *val;
  uint64_t hash;
} kc_strmap_slot;

typedef struct {
  kc_strmap_slot *slots;
  size_t cap; /* 0 or a power of two */
  size_t len;
  int flags;
} kc_strmap;

/* No allocation until the first insert. */
void kc_strmap_init(kc_strmap *m, int flags);
/* Frees the table (and copied keys); values are the caller's, so pass
 * free_val to release them too, or NULL. */
void kc_strmap_close(kc_strmap *m, void (*free_val)(void *));

uint64_t kc_strmap_hash(const char *key);

/* Borrowed slot for key, or NULL. The slot moves on any insert or delete. */
kc_strmap_slot *kc_strmap_find(const kc_strmap *m, const char *key);
/* The value for key, or NULL when absent (or stored as NULL). */
void *kc_strmap_get(const kc_strmap *m, const char *key);
static inline bool kc_strmap_has(const kc_strmap *m, const char *key) {
  return kc_strmap_find(m, key) != NULL;
}
static inline size_t kc_strmap_len(const kc_strmap *m) {
  return m->len;
}

/* Inserts or replaces. When the key was present its old value is put in
 * *old (if old is non-NULL) and the stored key is kept; returns 1 for a
 * replacement, 0 for a new entry, KC_ENOMEM. */
KC_NODISCARD int kc_strmap_put(kc_strmap *m, const char *key, void *val, void **old);
/* Removes key; its value goes to *old. 0, or KC_ENOENT when absent. */
int kc_strmap_del(kc_strmap *m, const char *key, void **old);

/* Iteration: `size_t i = 0; kc_strmap_slot *s; while ((s = kc_strmap_next(m, &i)))`.
 * The map must not be modified while iterating. */
kc_strmap_slot *kc_strmap_next(const kc_strmap *m, size_t *pos);

#endif
