/* An indexed object store, the cache an informer fills (client-go's
 * cache.Indexer / threadSafeMap).
 *
 * Entries are keyed "namespace/name" ("name" for cluster-scoped objects) and
 * hold an opaque object pointer, owned by the store and released with the
 * destructor given at creation, plus the object's resourceVersion. Secondary
 * indexes are defined by index functions that emit zero or more values per
 * object (pods by node name, pods by pod group); add, update and delete keep
 * every index exact. Index functions are called on the stored object when it
 * is replaced or deleted, so objects must not be changed in place once
 * stored: replace them.
 *
 * Single-threaded (the loop thread owns it). Iterators are invalidated by any
 * change to the store. */
#ifndef KC_STORE_H
#define KC_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "kc_strmap.h"

typedef struct kc_store kc_store;
typedef struct kc_index_out kc_index_out;

/* Appends one index value (copied). 0 or KC_ENOMEM. */
int kc_index_out_add(kc_index_out *out, const char *value);
int kc_index_out_addn(kc_index_out *out, const char *value, size_t len);

/* Emits obj's values for one index through kc_index_out_add (duplicates are
 * ignored). Returns 0, or a negative code that makes the add fail. */
typedef int (*kc_index_fn)(const void *obj, kc_index_out *out, void *ud);

/* *out is new. free_obj releases objects (NULL: the store does not own
 * them). 0 or KC_ENOMEM. */
int kc_store_new(void (*free_obj)(void *), kc_store **out);
/* Frees every object through free_obj. NULL is a no-op. */
void kc_store_free(kc_store *s);

/* Defines an index; only on an empty store (as client-go's AddIndexers
 * requires before the informer starts). name is copied. 0, KC_EEXISTS,
 * KC_EINVAL (store not empty), KC_ENOMEM. */
int kc_store_add_index(kc_store *s, const char *name, kc_index_fn fn, void *ud);

/* Writes "ns/name" or "name" (ns NULL or empty) into buf. 0, or KC_ETOOBIG
 * when it does not fit. */
int kc_store_key(char *buf, size_t cap, const char *ns, const char *name);

/* Adds or replaces key's entry. Steals obj (also on failure, when it is
 * freed through free_obj); rv is copied (may be NULL). When an index
 * function fails on obj the store is unchanged; when memory runs out part
 * way, key's entry is removed entirely, so that the indexes never disagree
 * with the store. 0, KC_ENOMEM, or the index function's error. */
int kc_store_put(kc_store *s, const char *key, void *obj, const char *rv);
/* Removes and frees key's entry. 0 or KC_ENOENT. */
int kc_store_delete(kc_store *s, const char *key);
/* Removes key's entry and hands its object to the caller (*obj new);
 * 0 or KC_ENOENT. */
int kc_store_take(kc_store *s, const char *key, void **obj);

/* Holding: while a store is held (kc_store_hold, counted), objects it would free (replaced
 * by a put, deleted, taken back by the relist sweep) are kept until the last
 * kc_store_unhold, so that a reader on another thread can go on using objects it borrowed
 * before the hold: the scheduler's session reads an immutable snapshot on a worker thread
 * while the loop keeps applying watch events. The store's own structure is not shared: only
 * the thread that owns it calls these functions. kc_store_free ends every hold. */
void kc_store_hold(kc_store *s);
void kc_store_unhold(kc_store *s);
/* Objects waiting for the last unhold. */
size_t kc_store_nheld(const kc_store *s);
/* Frees obj through free_obj now, or at the last unhold when the store is held: for objects
 * the caller took out of the store (kc_store_take). */
void kc_store_release_obj(kc_store *s, void *obj);

/* Borrowed object, or NULL. */
void *kc_store_get(const kc_store *s, const char *key);
/* Borrowed resourceVersion ("" when none), or NULL when key is absent. */
const char *kc_store_rv(const kc_store *s, const char *key);
size_t kc_store_len(const kc_store *s);

/* Iteration over all entries, or over one index value's entries. */
typedef struct {
  const kc_strmap *map;
  size_t pos;
  bool values; /* iterating index values, not entries */
} kc_store_iter;
void kc_store_iter_init(const kc_store *s, kc_store_iter *it);
/* KC_ENOENT for an unknown index; an unknown value gives an empty iterator. */
int kc_store_index_iter(const kc_store *s, const char *index, const char *value, kc_store_iter *it);
/* Borrowed key and object of the next entry; false at the end. */
bool kc_store_iter_next(kc_store_iter *it, const char **key, void **obj);
/* Entries with this index value (0 for unknown index or value). */
size_t kc_store_index_count(const kc_store *s, const char *index, const char *value);
/* Iterates the distinct values of an index (client-go ListIndexFuncValues):
 * kc_store_iter_next gives each value as the key and obj NULL. */
int kc_store_index_values(const kc_store *s, const char *index, kc_store_iter *it);

/* Relist support for the reflector: after kc_store_replace_begin(), every
 * kc_store_put marks its entry as seen; kc_store_replace_end() removes the
 * entries not seen since, calling gone(key, obj, ud) for each before it is
 * freed (so the informer can emit the deletes it missed). */
void kc_store_replace_begin(kc_store *s);
void kc_store_replace_end(kc_store *s, void (*gone)(const char *key, void *obj, void *ud),
                          void *ud);

#endif
