#include "kc_store.h"

#include "kc_error.h"

#include <stdlib.h>
#include <string.h>

/* One allocation per entry: the key lives inline, and both the entry map
 * and every index set borrow it, so a key is held once however many
 * indexes point at it. */
typedef struct {
  void *obj;
  char *rv;
  unsigned epoch;
  char key[];
} entry;

/* An index: value (copied) -> set, where a set is a kc_strmap from the
 * borrowed entry key to the entry. Empty sets are dropped, as client-go does,
 * so the value map never grows with values no object has any more. */
typedef struct {
  char *name;
  kc_index_fn fn;
  void *ud;
  kc_strmap values;
} index_def;

/* Collected index values: NUL-terminated strings packed in buf, found by
 * offsets, with `mark` the first value of the index being collected (for
 * de-duplication within one index). */
struct kc_index_out {
  char *buf;
  size_t len, cap;
  size_t *off;
  size_t n, ncap;
  size_t mark;
};

struct kc_store {
  void (*free_obj)(void *);
  kc_strmap entries; /* borrowed keys */
  index_def *idx;
  size_t nidx;
  kc_index_out newv, oldv;
  size_t *new_bounds, *old_bounds; /* nidx + 1 each */
  unsigned epoch;
  /* kc_store_hold: objects replaced or removed while held wait here (owned). */
  unsigned holds;
  void **held;
  size_t nheld, capheld;
};

/* ---- index value collector ---- */

static void out_reset(kc_index_out *o) {
  o->len = 0;
  o->n = 0;
  o->mark = 0;
}

static void out_close(kc_index_out *o) {
  free(o->buf);
  free(o->off);
}

static const char *out_val(const kc_index_out *o, size_t i) {
  return o->buf + o->off[i];
}

int kc_index_out_addn(kc_index_out *o, const char *value, size_t len) {
  for (size_t i = o->mark; i < o->n; i++) {
    const char *v = out_val(o, i);
    if (strncmp(v, value, len) == 0 && v[len] == '\0')
      return 0;
  }
  if (o->len + len + 1 > o->cap) {
    size_t ncap = o->cap ? o->cap : 256;
    while (ncap < o->len + len + 1)
      ncap *= 2;
    char *nb = realloc(o->buf, ncap);
    if (nb == NULL)
      return KC_ENOMEM;
    o->buf = nb;
    o->cap = ncap;
  }
  if (o->n == o->ncap) {
    size_t ncap = o->ncap ? o->ncap * 2 : 16;
    size_t *no = realloc(o->off, ncap * sizeof(*no));
    if (no == NULL)
      return KC_ENOMEM;
    o->off = no;
    o->ncap = ncap;
  }
  memcpy(o->buf + o->len, value, len);
  o->buf[o->len + len] = '\0';
  o->off[o->n++] = o->len;
  o->len += len + 1;
  return 0;
}

int kc_index_out_add(kc_index_out *o, const char *value) {
  return kc_index_out_addn(o, value, strlen(value));
}

/* Runs every index function on obj; bounds[i]..bounds[i+1] are index i's
 * values in o. */
static int collect(kc_store *s, const void *obj, kc_index_out *o, size_t *bounds) {
  out_reset(o);
  for (size_t i = 0; i < s->nidx; i++) {
    bounds[i] = o->n;
    o->mark = o->n;
    int rc = s->idx[i].fn(obj, o, s->idx[i].ud);
    if (rc < 0)
      return rc;
  }
  bounds[s->nidx] = o->n;
  return 0;
}

static bool in_range(const kc_index_out *o, size_t from, size_t to, const char *v) {
  for (size_t i = from; i < to; i++)
    if (strcmp(out_val(o, i), v) == 0)
      return true;
  return false;
}

/* ---- index sets ---- */

static void free_set(void *p) {
  kc_strmap *set = p;
  if (set == NULL)
    return;
  kc_strmap_close(set, NULL);
  free(set);
}

static int set_add(index_def *d, const char *value, entry *e) {
  kc_strmap *set = kc_strmap_get(&d->values, value);
  if (set == NULL) {
    set = malloc(sizeof(*set));
    if (set == NULL)
      return KC_ENOMEM;
    kc_strmap_init(set, KC_STRMAP_BORROW_KEYS);
    int rc = kc_strmap_put(&d->values, value, set, NULL);
    if (rc < 0) {
      free(set);
      return rc;
    }
  }
  int rc = kc_strmap_put(set, e->key, e, NULL);
  if (rc < 0 && kc_strmap_len(set) == 0) {
    (void)kc_strmap_del(&d->values, value, NULL);
    free_set(set);
  }
  return rc < 0 ? rc : 0;
}

static void set_remove(index_def *d, const char *value, const char *key) {
  kc_strmap *set = kc_strmap_get(&d->values, value);
  if (set == NULL)
    return;
  (void)kc_strmap_del(set, key, NULL);
  if (kc_strmap_len(set) == 0) {
    (void)kc_strmap_del(&d->values, value, NULL);
    free_set(set);
  }
}

/* Removes key from every set of index d by scanning them: the fallback when
 * the old object's values cannot be recomputed (out of memory). Values are
 * collected first because removal reorders the value map. */
static void unindex_scan(index_def *d, const char *key) {
  for (;;) {
    size_t pos = 0;
    kc_strmap_slot *sl;
    const char *hit = NULL;
    while ((sl = kc_strmap_next(&d->values, &pos))) {
      if (kc_strmap_has(sl->val, key)) {
        hit = sl->key;
        break;
      }
    }
    if (hit == NULL)
      return;
    set_remove(d, hit, key);
  }
}

/* Takes e out of every index. */
static void unindex(kc_store *s, entry *e) {
  if (s->nidx == 0)
    return;
  if (collect(s, e->obj, &s->oldv, s->old_bounds) < 0) {
    for (size_t i = 0; i < s->nidx; i++)
      unindex_scan(&s->idx[i], e->key);
    return;
  }
  for (size_t i = 0; i < s->nidx; i++)
    for (size_t j = s->old_bounds[i]; j < s->old_bounds[i + 1]; j++)
      set_remove(&s->idx[i], out_val(&s->oldv, j), e->key);
}

/* ---- store ---- */

int kc_store_new(void (*free_obj)(void *), kc_store **out) {
  kc_store *s = calloc(1, sizeof(*s));
  if (s == NULL)
    return KC_ENOMEM;
  s->new_bounds = calloc(1, sizeof(size_t));
  s->old_bounds = calloc(1, sizeof(size_t));
  if (s->new_bounds == NULL || s->old_bounds == NULL) {
    free(s->new_bounds);
    free(s->old_bounds);
    free(s);
    return KC_ENOMEM;
  }
  s->free_obj = free_obj;
  kc_strmap_init(&s->entries, KC_STRMAP_BORROW_KEYS);
  *out = s;
  return 0;
}

void kc_store_release_obj(kc_store *s, void *obj) {
  if (obj == NULL || s->free_obj == NULL)
    return;
  if (s->holds > 0) {
    if (s->nheld == s->capheld) {
      size_t cap = s->capheld ? s->capheld * 2 : 64;
      void **v = realloc(s->held, cap * sizeof(*v));
      if (v == NULL) {
        /* Out of memory: leaking the object is the only choice that keeps a reader of the
         * held objects safe; it cannot be freed now. */
        return;
      }
      s->held = v;
      s->capheld = cap;
    }
    s->held[s->nheld++] = obj;
    return;
  }
  s->free_obj(obj);
}

void kc_store_hold(kc_store *s) {
  s->holds++;
}

void kc_store_unhold(kc_store *s) {
  if (s->holds == 0 || --s->holds > 0)
    return;
  for (size_t i = 0; i < s->nheld; i++)
    s->free_obj(s->held[i]);
  free(s->held);
  s->held = NULL;
  s->nheld = s->capheld = 0;
}

size_t kc_store_nheld(const kc_store *s) {
  return s->nheld;
}

static void entry_free(kc_store *s, entry *e) {
  kc_store_release_obj(s, e->obj);
  free(e->rv);
  free(e);
}

void kc_store_free(kc_store *s) {
  if (s == NULL)
    return;
  for (size_t i = 0; i < s->nidx; i++) {
    kc_strmap_close(&s->idx[i].values, free_set);
    free(s->idx[i].name);
  }
  free(s->idx);
  /* A hold ends with the store: whoever held it has stopped reading. */
  s->holds = 0;
  size_t pos = 0;
  kc_strmap_slot *sl;
  while ((sl = kc_strmap_next(&s->entries, &pos)))
    entry_free(s, sl->val);
  kc_strmap_close(&s->entries, NULL);
  for (size_t i = 0; i < s->nheld; i++)
    s->free_obj(s->held[i]);
  free(s->held);
  out_close(&s->newv);
  out_close(&s->oldv);
  free(s->new_bounds);
  free(s->old_bounds);
  free(s);
}

static index_def *find_index(const kc_store *s, const char *name) {
  for (size_t i = 0; i < s->nidx; i++)
    if (strcmp(s->idx[i].name, name) == 0)
      return &s->idx[i];
  return NULL;
}

int kc_store_add_index(kc_store *s, const char *name, kc_index_fn fn, void *ud) {
  if (name == NULL || fn == NULL || kc_strmap_len(&s->entries) > 0)
    return KC_EINVAL;
  if (find_index(s, name))
    return KC_EEXISTS;
  size_t n = s->nidx + 1;
  index_def *ni = realloc(s->idx, n * sizeof(*ni));
  if (ni == NULL)
    return KC_ENOMEM;
  s->idx = ni;
  size_t *nb = realloc(s->new_bounds, (n + 1) * sizeof(size_t));
  if (nb == NULL)
    return KC_ENOMEM;
  s->new_bounds = nb;
  size_t *ob = realloc(s->old_bounds, (n + 1) * sizeof(size_t));
  if (ob == NULL)
    return KC_ENOMEM;
  s->old_bounds = ob;
  char *nm = strdup(name);
  if (nm == NULL)
    return KC_ENOMEM;
  index_def *d = &s->idx[s->nidx];
  d->name = nm;
  d->fn = fn;
  d->ud = ud;
  kc_strmap_init(&d->values, KC_STRMAP_COPY_KEYS);
  s->nidx = n;
  return 0;
}

int kc_store_key(char *buf, size_t cap, const char *ns, const char *name) {
  size_t nl = strlen(name);
  size_t sl = ns ? strlen(ns) : 0;
  size_t need = (sl ? sl + 1 : 0) + nl + 1;
  if (need > cap)
    return KC_ETOOBIG;
  char *p = buf;
  if (sl) {
    memcpy(p, ns, sl);
    p[sl] = '/';
    p += sl + 1;
  }
  memcpy(p, name, nl + 1);
  return 0;
}

static void drop(kc_store *s, entry *e) {
  unindex(s, e);
  (void)kc_strmap_del(&s->entries, e->key, NULL);
}

int kc_store_put(kc_store *s, const char *key, void *obj, const char *rv) {
  int rc;
  char *nrv = NULL;
  if (rv != NULL && (nrv = strdup(rv)) == NULL) {
    rc = KC_ENOMEM;
    goto fail_obj;
  }
  /* Compute the new values first: a failing index function leaves the
   * store untouched. */
  if (s->nidx > 0 && (rc = collect(s, obj, &s->newv, s->new_bounds)) < 0)
    goto fail_rv;

  entry *e = kc_strmap_get(&s->entries, key);
  if (e == NULL) {
    size_t kl = strlen(key);
    e = malloc(sizeof(*e) + kl + 1);
    if (e == NULL) {
      rc = KC_ENOMEM;
      goto fail_rv;
    }
    memcpy(e->key, key, kl + 1);
    e->obj = NULL;
    e->rv = NULL;
    if ((rc = kc_strmap_put(&s->entries, e->key, e, NULL)) < 0) {
      free(e);
      goto fail_rv;
    }
    for (size_t i = 0; i < s->nidx; i++)
      for (size_t j = s->new_bounds[i]; j < s->new_bounds[i + 1]; j++)
        if ((rc = set_add(&s->idx[i], out_val(&s->newv, j), e)) < 0)
          goto fail_entry;
  } else if (s->nidx > 0) {
    /* Move the entry between sets only where its values changed. */
    if (collect(s, e->obj, &s->oldv, s->old_bounds) < 0) {
      for (size_t i = 0; i < s->nidx; i++)
        unindex_scan(&s->idx[i], e->key);
      out_reset(&s->oldv);
      memset(s->old_bounds, 0, (s->nidx + 1) * sizeof(size_t));
    }
    for (size_t i = 0; i < s->nidx; i++) {
      size_t ob = s->old_bounds[i], oe = s->old_bounds[i + 1];
      size_t nb = s->new_bounds[i], ne = s->new_bounds[i + 1];
      for (size_t j = ob; j < oe; j++)
        if (!in_range(&s->newv, nb, ne, out_val(&s->oldv, j)))
          set_remove(&s->idx[i], out_val(&s->oldv, j), e->key);
      for (size_t j = nb; j < ne; j++)
        if (!in_range(&s->oldv, ob, oe, out_val(&s->newv, j)))
          if ((rc = set_add(&s->idx[i], out_val(&s->newv, j), e)) < 0)
            goto fail_entry;
    }
  }
  kc_store_release_obj(s, e->obj);
  e->obj = obj;
  free(e->rv);
  e->rv = nrv;
  e->epoch = s->epoch;
  return 0;

fail_entry:
  /* Part-way through the index sets: remove key altogether. Its sets are
   * found by scanning, since they are a mix of old and new values. */
  for (size_t i = 0; i < s->nidx; i++)
    unindex_scan(&s->idx[i], e->key);
  (void)kc_strmap_del(&s->entries, e->key, NULL);
  entry_free(s, e);
fail_rv:
  free(nrv);
fail_obj:
  kc_store_release_obj(s, obj);
  return rc;
}

int kc_store_take(kc_store *s, const char *key, void **obj) {
  entry *e = kc_strmap_get(&s->entries, key);
  if (e == NULL)
    return KC_ENOENT;
  drop(s, e);
  *obj = e->obj;
  e->obj = NULL;
  entry_free(s, e);
  return 0;
}

int kc_store_delete(kc_store *s, const char *key) {
  entry *e = kc_strmap_get(&s->entries, key);
  if (e == NULL)
    return KC_ENOENT;
  drop(s, e);
  entry_free(s, e);
  return 0;
}

void *kc_store_get(const kc_store *s, const char *key) {
  entry *e = kc_strmap_get(&s->entries, key);
  return e ? e->obj : NULL;
}

const char *kc_store_rv(const kc_store *s, const char *key) {
  entry *e = kc_strmap_get(&s->entries, key);
  if (e == NULL)
    return NULL;
  return e->rv ? e->rv : "";
}

size_t kc_store_len(const kc_store *s) {
  return kc_strmap_len(&s->entries);
}

void kc_store_iter_init(const kc_store *s, kc_store_iter *it) {
  it->map = &s->entries;
  it->pos = 0;
  it->values = false;
}

int kc_store_index_iter(const kc_store *s, const char *index, const char *value,
                        kc_store_iter *it) {
  it->map = NULL;
  it->pos = 0;
  it->values = false;
  const index_def *d = find_index(s, index);
  if (d == NULL)
    return KC_ENOENT;
  it->map = kc_strmap_get(&d->values, value);
  return 0;
}

int kc_store_index_values(const kc_store *s, const char *index, kc_store_iter *it) {
  it->map = NULL;
  it->pos = 0;
  it->values = true;
  const index_def *d = find_index(s, index);
  if (d == NULL)
    return KC_ENOENT;
  it->map = &d->values;
  return 0;
}

bool kc_store_iter_next(kc_store_iter *it, const char **key, void **obj) {
  if (it->map == NULL)
    return false;
  kc_strmap_slot *sl = kc_strmap_next(it->map, &it->pos);
  if (sl == NULL)
    return false;
  if (key)
    *key = sl->key;
  if (obj)
    *obj = it->values ? NULL : ((entry *)sl->val)->obj;
  return true;
}

size_t kc_store_index_count(const kc_store *s, const char *index, const char *value) {
  const index_def *d = find_index(s, index);
  if (d == NULL)
    return 0;
  const kc_strmap *set = kc_strmap_get(&d->values, value);
  return set ? kc_strmap_len(set) : 0;
}

void kc_store_replace_begin(kc_store *s) {
  s->epoch++;
}

void kc_store_replace_end(kc_store *s, void (*gone)(const char *key, void *obj, void *ud),
                          void *ud) {
  /* Repeated scans: deleting while iterating would move slots under the
   * cursor. Each pass restarts after the last deletion's position is lost,
   * so collect a batch of stale entries per pass instead. */
  entry *batch[256];
  for (;;) {
    size_t n = 0, pos = 0;
    kc_strmap_slot *sl;
    while (n < 256 && (sl = kc_strmap_next(&s->entries, &pos))) {
      entry *e = sl->val;
      if (e->epoch != s->epoch)
        batch[n++] = e;
    }
    if (n == 0)
      return;
    for (size_t i = 0; i < n; i++) {
      entry *e = batch[i];
      drop(s, e);
      if (gone)
        gone(e->key, e->obj, ud);
      entry_free(s, e);
    }
  }
}
