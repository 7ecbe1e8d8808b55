#include "kc_strmap.h"

#include "kc_error.h"

#include <stdlib.h>
#include <string.h>

void kc_strmap_init(kc_strmap *m, int flags) {
  m->slots = NULL;
  m->cap = 0;
  m->len = 0;
  m->flags = flags;
}

void kc_strmap_close(kc_strmap *m, void (*free_val)(void *)) {
  for (size_t i = 0; i < m->cap; i++) {
    kc_strmap_slot *s = &m->slots[i];
    if (s->key == NULL)
      continue;
    if (free_val)
      free_val(s->val);
    if (m->flags & KC_STRMAP_COPY_KEYS)
      free((char *)s->key);
  }
  free(m->slots);
  m->slots = NULL;
  m->cap = m->len = 0;
}

/* FNV-1a followed by a 64-bit finalizer (splitmix64) so that the low bits,
 * which pick the slot, depend on every input byte. */
uint64_t kc_strmap_hash(const char *key) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
    h ^= *p;
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

static size_t probe(const kc_strmap *m, const char *key, uint64_t h, bool *found) {
  size_t mask = m->cap - 1;
  size_t i = (size_t)h & mask;
  for (;;) {
    kc_strmap_slot *s = &m->slots[i];
    if (s->key == NULL) {
      *found = false;
      return i;
    }
    if (s->hash == h && strcmp(s->key, key) == 0) {
      *found = true;
      return i;
    }
    i = (i + 1) & mask;
  }
}

kc_strmap_slot *kc_strmap_find(const kc_strmap *m, const char *key) {
  if (m->len == 0)
    return NULL;
  bool found;
  size_t i = probe(m, key, kc_strmap_hash(key), &found);
  return found ? &m->slots[i] : NULL;
}

void *kc_strmap_get(const kc_strmap *m, const char *key) {
  kc_strmap_slot *s = kc_strmap_find(m, key);
  return s ? s->val : NULL;
}

static int grow(kc_strmap *m) {
  size_t ncap = m->cap ? m->cap * 2 : 8;
  if (ncap < m->cap || ncap > SIZE_MAX / sizeof(kc_strmap_slot))
    return KC_ENOMEM;
  kc_strmap_slot *ns = calloc(ncap, sizeof(*ns));
  if (ns == NULL)
    return KC_ENOMEM;
  size_t mask = ncap - 1;
  for (size_t i = 0; i < m->cap; i++) {
    kc_strmap_slot *s = &m->slots[i];
    if (s->key == NULL)
      continue;
    size_t j = (size_t)s->hash & mask;
    while (ns[j].key != NULL)
      j = (j + 1) & mask;
    ns[j] = *s;
  }
  free(m->slots);
  m->slots = ns;
  m->cap = ncap;
  return 0;
}

int kc_strmap_put(kc_strmap *m, const char *key, void *val, void **old) {
  uint64_t h = kc_strmap_hash(key);
  bool found;
  if (m->len > 0) {
    size_t i = probe(m, key, h, &found);
    if (found) {
      if (old)
        *old = m->slots[i].val;
      m->slots[i].val = val;
      return 1;
    }
  }
  /* Keep the load factor at or below 3/4 so probe sequences stay short. */
  if ((m->len + 1) * 4 > m->cap * 3) {
    int rc = grow(m);
    if (rc < 0)
      return rc;
  }
  const char *k = key;
  if (m->flags & KC_STRMAP_COPY_KEYS) {
    k = strdup(key);
    if (k == NULL)
      return KC_ENOMEM;
  }
  size_t i = probe(m, key, h, &found);
  m->slots[i].key = k;
  m->slots[i].val = val;
  m->slots[i].hash = h;
  m->len++;
  if (old)
    *old = NULL;
  return 0;
}

int kc_strmap_del(kc_strmap *m, const char *key, void **old) {
  if (m->len == 0)
    return KC_ENOENT;
  bool found;
  size_t i = probe(m, key, kc_strmap_hash(key), &found);
  if (!found)
    return KC_ENOENT;
  if (old)
    *old = m->slots[i].val;
  if (m->flags & KC_STRMAP_COPY_KEYS)
    free((char *)m->slots[i].key);
  /* Backward-shift deletion: pull later members of the cluster into the
   * hole when their home slot does not lie cyclically in (hole, j]. */
  size_t mask = m->cap - 1;
  size_t hole = i;
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    kc_strmap_slot *s = &m->slots[j];
    if (s->key == NULL)
      break;
    size_t home = (size_t)s->hash & mask;
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays)
      continue;
    m->slots[hole] = *s;
    hole = j;
  }
  m->slots[hole].key = NULL;
  m->slots[hole].val = NULL;
  m->len--;
  return 0;
}

kc_strmap_slot *kc_strmap_next(const kc_strmap *m, size_t *pos) {
  while (*pos < m->cap) {
    kc_strmap_slot *s = &m->slots[(*pos)++];
    if (s->key != NULL)
      return s;
  }
  return NULL;
}
