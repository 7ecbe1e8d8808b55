/* A Prometheus registry: counters, gauges and histograms with labels,
 * rendered in the text exposition format 0.0.4 for /metrics.
 *
 * A family (kc_metric) has a name, help text and fixed label names; each
 * distinct tuple of label values is a series (kc_series), created on first
 * use and owned by its family. Values are doubles, updated from the loop
 * thread (no locking). Output is deterministic: families sorted by name,
 * series by label values, numbers formatted as Go's client does
 * (strconv 'g', shortest), so dashboards and tests see the same text. */
#ifndef KC_METRICS_H
#define KC_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "kc_error.h"

typedef struct kc_metrics kc_metrics;
typedef struct kc_metric kc_metric;
typedef struct kc_series kc_series;

typedef enum { KC_METRIC_COUNTER, KC_METRIC_GAUGE, KC_METRIC_HISTOGRAM } kc_metric_type;

#define KC_METRICS_MAX_LABELS 16
/* Cap on a rendered page; a registry beyond it is a cardinality bug. */
#define KC_METRICS_MAX_OUTPUT (64u << 20)

/* Prometheus' default buckets: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10. */
extern const double kc_metrics_default_buckets[11];
/* Fills out[0..count) with start * factor^i. KC_EINVAL unless start > 0,
 * factor > 1, count >= 1. */
int kc_metrics_exponential_buckets(double start, double factor, size_t count, double *out);

KC_NODISCARD int kc_metrics_new(kc_metrics **out);
void kc_metrics_free(kc_metrics *r); /* NULL is a no-op */

/* Registers a family. name and label names must match
 * [a-zA-Z_:][a-zA-Z0-9_:]* (labels: no ':', no leading "__", and not "le"
 * for histograms); labels is NULL or a NULL-terminated array. Strings are
 * copied. *out is borrowed (owned by r). 0, KC_EINVAL, KC_EEXISTS (name
 * taken), KC_ENOMEM. A family without labels starts with its one series at
 * 0, so it is exported before its first update. */
int kc_metrics_counter(kc_metrics *r, const char *name, const char *help, const char *const *labels,
                       kc_metric **out);
int kc_metrics_gauge(kc_metrics *r, const char *name, const char *help, const char *const *labels,
                     kc_metric **out);
/* buckets: strictly increasing upper bounds, copied; +Inf is implicit. */
int kc_metrics_histogram(kc_metrics *r, const char *name, const char *help,
                         const char *const *labels, const double *buckets, size_t nbuckets,
                         kc_metric **out);
/* The family called name (borrowed) or NULL. */
kc_metric *kc_metrics_find(kc_metrics *r, const char *name);
kc_metric_type kc_metric_get_type(const kc_metric *m);

/* The series for these label values (as many as the family has label
 * names; NULL when it has none), created at 0 if new. *out is borrowed and
 * stays valid until it is removed or r is freed. 0, KC_EINVAL, KC_ENOMEM. */
int kc_metric_series(kc_metric *m, const char *const *values, kc_series **out);
/* Drops a series (for example a deleted job's). 0 or KC_ENOENT. */
int kc_metric_remove(kc_metric *m, const char *const *values);
/* Drops every series whose label called label is value (Go's DeletePartialMatch with one
 * label): the number dropped, KC_EINVAL when the family has no such label, or KC_ENOMEM. */
int kc_metric_remove_matching(kc_metric *m, const char *label, const char *value);

/* Counters only go up: a negative or NaN add is ignored. */
void kc_counter_add(kc_series *s, double v);
void kc_counter_inc(kc_series *s);
void kc_gauge_set(kc_series *s, double v);
void kc_gauge_add(kc_series *s, double v);
void kc_histogram_observe(kc_series *s, double v);
/* Adds observations counted elsewhere to a histogram: counts[i] of them in bucket i (not
 * cumulative; ncounts is the number of bounds + 1, the last for those above every bound),
 * n in all, summing to sum. KC_EINVAL for another type or another number of buckets. */
int kc_histogram_merge(kc_series *s, const uint64_t *counts, size_t ncounts, uint64_t n,
                       double sum);
/* Counter or gauge value; a histogram's sum. */
double kc_series_value(const kc_series *s);
/* A histogram's observation count (0 for others). */
unsigned long long kc_series_count(const kc_series *s);

/* Called at the start of every render, to refresh gauges that are cheaper
 * to compute on scrape than to maintain (queue depth, cache sizes). */
typedef void (*kc_metrics_collect_fn)(kc_metrics *r, void *ud);
KC_NODISCARD int kc_metrics_add_collector(kc_metrics *r, kc_metrics_collect_fn fn, void *ud);
void kc_metrics_remove_collector(kc_metrics *r, kc_metrics_collect_fn fn, void *ud);

/* Renders every family. *out is new (free() it), NUL-terminated, *len its
 * length. 0, KC_ENOMEM, KC_ETOOBIG (over KC_METRICS_MAX_OUTPUT). */
KC_NODISCARD int kc_metrics_render(kc_metrics *r, char **out, size_t *len);

/* Formats v as Prometheus' Go client does (shortest round-trip 'g' form,
 * "+Inf", "-Inf", "NaN"). buf needs 32 bytes. Returns buf. */
const char *kc_metrics_format_value(double v, char buf[32]);

#endif
