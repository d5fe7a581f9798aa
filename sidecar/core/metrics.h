/* metrics.h — a writer for Prometheus text exposition format (version 0.0.4): each family's # HELP and
 * # TYPE once, then its samples, label values escaped. Modules append their own families
 * (service_mgr_metrics, backend_pool_metrics, descriptor_metrics ...); status_server.c serves the result on the
 * status socket ("metrics") and, optionally, on a loopback HTTP port.
 *
 * Owns only the text being built. Names must follow Prometheus conventions (onionfront_ prefix,
 * snake_case, _total for counters, base units such as _seconds and _bytes). */
#ifndef ONIONFRONT_METRICS_H
#define ONIONFRONT_METRICS_H

#include <stddef.h>

struct metrics;

enum metrics_type { METRICS_COUNTER, METRICS_GAUGE, METRICS_HISTOGRAM, METRICS_SUMMARY, METRICS_UNTYPED };

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/* Start family `name` (writes # HELP and # TYPE). A family started twice is a programming error:
 * the second call returns -1 and writes nothing. */
int metrics_family(struct metrics *m, const char *name, enum metrics_type type, const char *help);

/* One sample of the current family (or a suffixed series of it, e.g. name_bucket). `labels` is a
 * NULL-terminated list of key, value, key, value ... (values escaped here), or NULL. Returns 0 or -1. */
int metrics_sample(struct metrics *m, const char *name, const char *const *labels, double value);

/* The text so far (NUL-terminated, borrowed; valid until the next call on m). */
const char *metrics_text(const struct metrics *m, size_t *len);

#endif
