#include "kc_metrics.h"

#include "kc_error.h"
#include "kc_strmap.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double kc_metrics_default_buckets[11] = {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10};

struct kc_series {
  kc_metric *family;
  char **values; /* family->nlabels label values */
  double value;  /* counter/gauge value, histogram sum */
  unsigned long long count;
  unsigned long long *buckets; /* per bucket (not cumulative) */
};

struct kc_metric {
  kc_metric_type type;
  char *name;
  char *help;
  char **labels;
  size_t nlabels;
  /* The labels by name, as Go's client writes a sample's labels and orders the series. */
  unsigned char order[KC_METRICS_MAX_LABELS];
  double *bounds;
  size_t nbounds;
  kc_strmap series; /* joined label values -> kc_series */
};

typedef struct {
  kc_metrics_collect_fn fn;
  void *ud;
} collector;

struct kc_metrics {
  kc_strmap families; /* name (borrowed from the family) -> kc_metric */
  collector *collectors;
  size_t ncollectors;
};

/* ---- names ---- */

static bool valid_name(const char *s, bool colon) {
  if (s == NULL || *s == '\0')
    return false;
  for (const char *p = s; *p; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
              (p != s && c >= '0' && c <= '9');
    if (!ok)
      return false;
  }
  return true;
}

/* ---- registry ---- */

int kc_metrics_new(kc_metrics **out) {
  kc_metrics *r = calloc(1, sizeof(*r));
  if (r == NULL)
    return KC_ENOMEM;
  kc_strmap_init(&r->families, KC_STRMAP_BORROW_KEYS);
  *out = r;
  return 0;
}

static void series_free(void *p) {
  kc_series *s = p;
  if (s == NULL)
    return;
  for (size_t i = 0; s->values && i < s->family->nlabels; i++)
    free(s->values[i]);
  free(s->values);
  free(s->buckets);
  free(s);
}

static void family_free(void *p) {
  kc_metric *m = p;
  if (m == NULL)
    return;
  kc_strmap_close(&m->series, series_free);
  for (size_t i = 0; i < m->nlabels; i++)
    free(m->labels[i]);
  free(m->labels);
  free(m->bounds);
  free(m->name);
  free(m->help);
  free(m);
}

void kc_metrics_free(kc_metrics *r) {
  if (r == NULL)
    return;
  kc_strmap_close(&r->families, family_free);
  free(r->collectors);
  free(r);
}

static int reg(kc_metrics *r, kc_metric_type type, const char *name, const char *help,
               const char *const *labels, const double *bounds, size_t nbounds, kc_metric **out) {
  if (!valid_name(name, true))
    return KC_EINVAL;
  size_t nl = 0;
  for (; labels && labels[nl]; nl++) {
    if (nl == KC_METRICS_MAX_LABELS || !valid_name(labels[nl], false) ||
        strncmp(labels[nl], "__", 2) == 0)
      return KC_EINVAL;
    if (type == KC_METRIC_HISTOGRAM && strcmp(labels[nl], "le") == 0)
      return KC_EINVAL;
    for (size_t j = 0; j < nl; j++)
      if (strcmp(labels[j], labels[nl]) == 0)
        return KC_EINVAL;
  }
  for (size_t i = 0; i < nbounds; i++)
    if (isnan(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
      return KC_EINVAL;
  /* A trailing +Inf bound is implicit; drop an explicit one. */
  if (nbounds > 0 && isinf(bounds[nbounds - 1]) && bounds[nbounds - 1] > 0)
    nbounds--;
  if (kc_strmap_has(&r->families, name))
    return KC_EEXISTS;

  kc_metric *m = calloc(1, sizeof(*m));
  if (m == NULL)
    return KC_ENOMEM;
  m->type = type;
  kc_strmap_init(&m->series, KC_STRMAP_COPY_KEYS);
  m->name = strdup(name);
  m->help = strdup(help ? help : "");
  m->labels = calloc(nl ? nl : 1, sizeof(char *));
  m->bounds = malloc((nbounds ? nbounds : 1) * sizeof(double));
  if (!m->name || !m->help || !m->labels || !m->bounds)
    goto nomem;
  for (; m->nlabels < nl; m->nlabels++)
    if ((m->labels[m->nlabels] = strdup(labels[m->nlabels])) == NULL)
      goto nomem;
  for (size_t i = 0; i < nl; i++) { /* insertion sort of the label indexes by name */
    size_t j = i;
    for (; j > 0 && strcmp(labels[m->order[j - 1]], labels[i]) > 0; j--)
      m->order[j] = m->order[j - 1];
    m->order[j] = (unsigned char)i;
  }
  if (nbounds)
    memcpy(m->bounds, bounds, nbounds * sizeof(double));
  m->nbounds = nbounds;
  if (nl == 0) {
    kc_series *s;
    if (kc_metric_series(m, NULL, &s) < 0)
      goto nomem;
  }
  if (kc_strmap_put(&r->families, m->name, m, NULL) < 0)
    goto nomem;
  *out = m;
  return 0;
nomem:
  family_free(m);
  return KC_ENOMEM;
}

int kc_metrics_counter(kc_metrics *r, const char *name, const char *help, const char *const *labels,
                       kc_metric **out) {
  return reg(r, KC_METRIC_COUNTER, name, help, labels, NULL, 0, out);
}

int kc_metrics_gauge(kc_metrics *r, const char *name, const char *help, const char *const *labels,
                     kc_metric **out) {
  return reg(r, KC_METRIC_GAUGE, name, help, labels, NULL, 0, out);
}

int kc_metrics_histogram(kc_metrics *r, const char *name, const char *help,
                         const char *const *labels, const double *buckets, size_t nbuckets,
                         kc_metric **out) {
  return reg(r, KC_METRIC_HISTOGRAM, name, help, labels, buckets, nbuckets, out);
}

kc_metric *kc_metrics_find(kc_metrics *r, const char *name) {
  return kc_strmap_get(&r->families, name);
}

kc_metric_type kc_metric_get_type(const kc_metric *m) {
  return m->type;
}

int kc_metrics_exponential_buckets(double start, double factor, size_t count, double *out) {
  if (!(start > 0) || !(factor > 1) || count < 1)
    return KC_EINVAL;
  double v = start;
  for (size_t i = 0; i < count; i++, v *= factor)
    out[i] = v;
  return 0;
}

/* ---- series ---- */

/* Joins label values with 0xff, a byte that never occurs in UTF-8, so
 * distinct tuples never share a key. *key is new. */
static int series_key(const kc_metric *m, const char *const *values, char **key) {
  size_t len = 1;
  for (size_t i = 0; i < m->nlabels; i++) {
    if (values == NULL || values[i] == NULL)
      return KC_EINVAL;
    len += strlen(values[i]) + 1;
  }
  char *k = malloc(len);
  if (k == NULL)
    return KC_ENOMEM;
  char *p = k;
  for (size_t i = 0; i < m->nlabels; i++) {
    size_t l = strlen(values[i]);
    memcpy(p, values[i], l);
    p += l;
    *p++ = '\xff';
  }
  *p = '\0';
  *key = k;
  return 0;
}

int kc_metric_series(kc_metric *m, const char *const *values, kc_series **out) {
  char *key;
  int rc = series_key(m, values, &key);
  if (rc < 0)
    return rc;
  kc_series *s = kc_strmap_get(&m->series, key);
  if (s != NULL) {
    free(key);
    *out = s;
    return 0;
  }
  rc = KC_ENOMEM;
  s = calloc(1, sizeof(*s));
  if (s == NULL)
    goto out;
  s->family = m;
  s->values = calloc(m->nlabels ? m->nlabels : 1, sizeof(char *));
  if (s->values == NULL)
    goto fail;
  for (size_t i = 0; i < m->nlabels; i++)
    if ((s->values[i] = strdup(values[i])) == NULL)
      goto fail;
  if (m->type == KC_METRIC_HISTOGRAM &&
      (s->buckets = calloc(m->nbounds ? m->nbounds : 1, sizeof(*s->buckets))) == NULL)
    goto fail;
  if (kc_strmap_put(&m->series, key, s, NULL) < 0)
    goto fail;
  *out = s;
  rc = 0;
  goto out;
fail:
  series_free(s);
out:
  free(key);
  return rc;
}

int kc_metric_remove(kc_metric *m, const char *const *values) {
  char *key;
  int rc = series_key(m, values, &key);
  if (rc < 0)
    return rc;
  void *old = NULL;
  rc = kc_strmap_del(&m->series, key, &old);
  free(key);
  series_free(old);
  return rc;
}

int kc_metric_remove_matching(kc_metric *m, const char *label, const char *value) {
  size_t li = 0;
  while (li < m->nlabels && strcmp(m->labels[li], label) != 0)
    li++;
  if (li == m->nlabels)
    return KC_EINVAL;
  size_t n = kc_strmap_len(&m->series), k = 0, pos = 0;
  if (n == 0)
    return 0;
  char **keys = calloc(n, sizeof(*keys));
  if (keys == NULL)
    return KC_ENOMEM;
  int rc = 0;
  kc_strmap_slot *sl;
  while ((sl = kc_strmap_next(&m->series, &pos))) {
    const kc_series *s = sl->val;
    if (strcmp(s->values[li], value) == 0 && (keys[k++] = strdup(sl->key)) == NULL) {
      rc = KC_ENOMEM;
      break;
    }
  }
  for (size_t i = 0; i < k; i++) {
    void *old = NULL;
    if (keys[i] && kc_strmap_del(&m->series, keys[i], &old) == 0) {
      series_free(old);
      if (rc >= 0)
        rc++;
    }
    free(keys[i]);
  }
  free(keys);
  return rc;
}

void kc_counter_add(kc_series *s, double v) {
  if (v > 0)
    s->value += v;
}

void kc_counter_inc(kc_series *s) {
  s->value += 1;
}

void kc_gauge_set(kc_series *s, double v) {
  s->value = v;
}

void kc_gauge_add(kc_series *s, double v) {
  s->value += v;
}

void kc_histogram_observe(kc_series *s, double v) {
  const kc_metric *m = s->family;
  if (m->type != KC_METRIC_HISTOGRAM)
    return;
  /* Upper bounds are inclusive (le). Binary search for the first bound
   * >= v; values above every bound only count towards +Inf. */
  size_t lo = 0, hi = m->nbounds;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (v <= m->bounds[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  if (lo < m->nbounds)
    s->buckets[lo]++;
  s->count++;
  s->value += v;
}

int kc_histogram_merge(kc_series *s, const uint64_t *counts, size_t ncounts, uint64_t n,
                       double sum) {
  const kc_metric *m = s->family;
  if (m->type != KC_METRIC_HISTOGRAM || ncounts != m->nbounds + 1)
    return KC_EINVAL;
  for (size_t i = 0; i < m->nbounds; i++)
    s->buckets[i] += counts[i];
  s->count += n;
  s->value += sum;
  return 0;
}

double kc_series_value(const kc_series *s) {
  return s->value;
}

unsigned long long kc_series_count(const kc_series *s) {
  return s->count;
}

/* ---- collectors ---- */

int kc_metrics_add_collector(kc_metrics *r, kc_metrics_collect_fn fn, void *ud) {
  collector *nc = realloc(r->collectors, (r->ncollectors + 1) * sizeof(*nc));
  if (nc == NULL)
    return KC_ENOMEM;
  r->collectors = nc;
  r->collectors[r->ncollectors++] = (collector){fn, ud};
  return 0;
}

void kc_metrics_remove_collector(kc_metrics *r, kc_metrics_collect_fn fn, void *ud) {
  for (size_t i = 0; i < r->ncollectors; i++) {
    if (r->collectors[i].fn == fn && r->collectors[i].ud == ud) {
      memmove(&r->collectors[i], &r->collectors[i + 1],
              (r->ncollectors - i - 1) * sizeof(collector));
      r->ncollectors--;
      return;
    }
  }
}

/* ---- rendering ---- */

const char *kc_metrics_format_value(double v, char buf[32]) {
  if (isnan(v)) {
    memcpy(buf, "NaN", 4);
    return buf;
  }
  if (isinf(v)) {
    memcpy(buf, v > 0 ? "+Inf" : "-Inf", 5);
    return buf;
  }
  if (v == 0) {
    memcpy(buf, signbit(v) ? "-0" : "0", signbit(v) ? 3 : 2);
    return buf;
  }
  /* The fewest significant digits that read back as v. */
  char e[32];
  int prec = 1;
  for (; prec < 17; prec++) {
    snprintf(e, sizeof(e), "%.*e", prec - 1, v);
    if (strtod(e, NULL) == v)
      break;
  }
  snprintf(e, sizeof(e), "%.*e", prec - 1, v);
  const char *ep = strchr(e, 'e');
  long exp = ep ? strtol(ep + 1, NULL, 10) : 0;
  /* Go's strconv 'g' with the shortest precision uses the exponent form
   * when the decimal exponent is below -4 or at least 6 (a fixed 6, not the
   * digit count), so 1e+06 but 100000. C's %e prints the exponent with at
   * least two digits, as Go does. */
  if (exp < -4 || exp >= 6) {
    memcpy(buf, e, strlen(e) + 1);
    return buf;
  }
  long dec = (long)prec - 1 - exp;
  snprintf(buf, 32, "%.*f", dec > 0 ? (int)dec : 0, v);
  return buf;
}

/* A growing output buffer with a hard cap; the first failure sticks, so
 * the render code checks once at the end. */
typedef struct {
  char *p;
  size_t len, cap;
  int err;
} outbuf;

static void ob_put(outbuf *b, const char *s, size_t n) {
  if (b->err)
    return;
  if (b->len + n + 1 > KC_METRICS_MAX_OUTPUT) {
    b->err = KC_ETOOBIG;
    return;
  }
  if (b->len + n + 1 > b->cap) {
    size_t ncap = b->cap ? b->cap : 4096;
    while (ncap < b->len + n + 1)
      ncap *= 2;
    char *np = realloc(b->p, ncap);
    if (np == NULL) {
      b->err = KC_ENOMEM;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void ob_str(outbuf *b, const char *s) {
  ob_put(b, s, strlen(s));
}

/* HELP text escapes backslash and newline; label values also escape the
 * double quote (text format 0.0.4). */
static void ob_escaped(outbuf *b, const char *s, bool quote) {
  const char *run = s;
  for (const char *p = s; *p; p++) {
    const char *rep = NULL;
    if (*p == '\\')
      rep = "\\\\";
    else if (*p == '\n')
      rep = "\\n";
    else if (quote && *p == '"')
      rep = "\\\"";
    if (rep == NULL)
      continue;
    ob_put(b, run, (size_t)(p - run));
    ob_str(b, rep);
    run = p + 1;
  }
  ob_str(b, run);
}

static void ob_value(outbuf *b, double v) {
  char num[32];
  ob_str(b, kc_metrics_format_value(v, num));
}

/* name{l1="v1",...,extra="extra_val"} value\n */
static void ob_sample(outbuf *b, const kc_metric *m, const char *suffix, const kc_series *s,
                      const char *extra, const char *extra_val, double v) {
  ob_str(b, m->name);
  ob_str(b, suffix);
  if (m->nlabels > 0 || extra) {
    ob_str(b, "{");
    for (size_t k = 0; k < m->nlabels; k++) {
      size_t i = m->order[k];
      if (k)
        ob_str(b, ",");
      ob_str(b, m->labels[i]);
      ob_str(b, "=\"");
      ob_escaped(b, s->values[i], true);
      ob_str(b, "\"");
    }
    if (extra) {
      if (m->nlabels)
        ob_str(b, ",");
      ob_str(b, extra);
      ob_str(b, "=\"");
      ob_str(b, extra_val);
      ob_str(b, "\"");
    }
    ob_str(b, "}");
  }
  ob_str(b, " ");
  ob_value(b, v);
  ob_str(b, "\n");
}

static int cmp_family(const void *a, const void *b) {
  const kc_metric *x = *(kc_metric *const *)a, *y = *(kc_metric *const *)b;
  return strcmp(x->name, y->name);
}

static int cmp_series(const void *a, const void *b) {
  const kc_series *x = *(kc_series *const *)a, *y = *(kc_series *const *)b;
  for (size_t k = 0; k < x->family->nlabels; k++) {
    size_t i = x->family->order[k];
    int c = strcmp(x->values[i], y->values[i]);
    if (c)
      return c;
  }
  return 0;
}

static void render_family(outbuf *b, const kc_metric *m, kc_series **ss, size_t n) {
  static const char *const type_names[] = {"counter", "gauge", "histogram"};
  ob_str(b, "# HELP ");
  ob_str(b, m->name);
  ob_str(b, " ");
  ob_escaped(b, m->help, false);
  ob_str(b, "\n# TYPE ");
  ob_str(b, m->name);
  ob_str(b, " ");
  ob_str(b, type_names[m->type]);
  ob_str(b, "\n");
  for (size_t i = 0; i < n; i++) {
    const kc_series *s = ss[i];
    if (m->type != KC_METRIC_HISTOGRAM) {
      ob_sample(b, m, "", s, NULL, NULL, s->value);
      continue;
    }
    unsigned long long cum = 0;
    char le[32];
    for (size_t j = 0; j < m->nbounds; j++) {
      cum += s->buckets[j];
      ob_sample(b, m, "_bucket", s, "le", kc_metrics_format_value(m->bounds[j], le), (double)cum);
    }
    ob_sample(b, m, "_bucket", s, "le", "+Inf", (double)s->count);
    ob_sample(b, m, "_sum", s, NULL, NULL, s->value);
    ob_sample(b, m, "_count", s, NULL, NULL, (double)s->count);
  }
}

int kc_metrics_render(kc_metrics *r, char **out, size_t *len) {
  for (size_t i = 0; i < r->ncollectors; i++)
    r->collectors[i].fn(r, r->collectors[i].ud);

  outbuf b = {0};
  kc_metric **fams = NULL;
  kc_series **ss = NULL;
  size_t ss_cap = 0;
  size_t nf = kc_strmap_len(&r->families);
  fams = malloc((nf ? nf : 1) * sizeof(*fams));
  if (fams == NULL)
    return KC_ENOMEM;
  size_t pos = 0, k = 0;
  kc_strmap_slot *sl;
  while ((sl = kc_strmap_next(&r->families, &pos)))
    fams[k++] = sl->val;
  qsort(fams, nf, sizeof(*fams), cmp_family);

  for (size_t i = 0; i < nf && !b.err; i++) {
    kc_metric *m = fams[i];
    size_t n = kc_strmap_len(&m->series);
    /* A labelled family with no series yet is omitted, as Go's client
     * does: a HELP/TYPE header with no samples helps nobody. */
    if (n == 0)
      continue;
    if (n > ss_cap) {
      kc_series **nss = realloc(ss, n * sizeof(*nss));
      if (nss == NULL) {
        b.err = KC_ENOMEM;
        break;
      }
      ss = nss;
      ss_cap = n;
    }
    size_t sp = 0, j = 0;
    while ((sl = kc_strmap_next(&m->series, &sp)))
      ss[j++] = sl->val;
    qsort(ss, n, sizeof(*ss), cmp_series);
    render_family(&b, m, ss, n);
  }
  free(fams);
  free(ss);
  if (b.err == 0 && b.p == NULL)
    ob_put(&b, "", 0);
  if (b.err) {
    free(b.p);
    return b.err;
  }
  *out = b.p;
  *len = b.len;
  return 0;
}
