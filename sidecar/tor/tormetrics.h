/* tormetrics.h — a small strict parser of the Prometheus text exposition format (0.0.4) that tor's
 * MetricsPort serves, and the per-service values onionfront shows from it (status "services", GET
 * /metrics): tor 0.4.9.11's tor_hs_* families, labelled onion="<56 base32 characters>" (recorded sample:
 * tests/unit/data/tor-0.4.9.11-metrics.txt).
 *
 * Strict: every line must be a comment ("# ..."), or a sample `name[{label="value",...}] value
 * [timestamp]` with a valid metric name, label names, escaped label values (\\ \" \n) and a number
 * (+Inf, -Inf and NaN spelled so); the text ends with a newline; lines, labels, services and the whole
 * text are bounded. Anything else refuses the whole text, with the line number and what was wrong: the
 * MetricsPort is reachable by other local processes, so a half-understood answer is not shown.
 *
 * Owns the parsed values only. No I/O, no logging (torscrape.c fetches and logs). */
#ifndef ONIONFRONT_TORMETRICS_H
#define ONIONFRONT_TORMETRICS_H

#include <stdbool.h>
#include <stddef.h>

#define TORMETRICS_TEXT_MAX (4u << 20) /* bytes of one answer */
#define TORMETRICS_LINE_MAX 4096
#define TORMETRICS_LABELS_MAX 16
#define TORMETRICS_SERVICES_MAX 1024

/* The values kept per service; a family sampled with several label values (reason=...) is summed. */
enum tormetrics_field {
    TORMETRICS_POW_EFFORT,        /* tor_hs_pow_suggested_effort (gauge) */
    TORMETRICS_POW_QUEUE,         /* tor_hs_rdv_pow_pqueue_count (gauge): requests waiting in the PoW queue */
    TORMETRICS_INTRO_RECEIVED,    /* tor_hs_intro_num_total (counter) */
    TORMETRICS_INTRO_REJECTED,    /* tor_hs_intro_rejected_intro_req_count (counter, summed over reason) */
    TORMETRICS_INTRO_ESTABLISHED, /* tor_hs_intro_established_count (gauge): introduction circuits */
    TORMETRICS_REND_CREATED,      /* tor_hs_rdv_num_total (counter): rendezvous circuits created */
    TORMETRICS_REND_ESTABLISHED,  /* tor_hs_rdv_established_count (gauge) */
    TORMETRICS_REND_ERRORS,       /* tor_hs_rdv_error_count (counter, summed over reason) */
    TORMETRICS_N
};

struct tormetrics_service {
    char onion[57];              /* 56 lowercase base32 characters */
    bool has[TORMETRICS_N];      /* false: tor did not export it (absent, not zero) */
    double value[TORMETRICS_N];
};

struct tormetrics {
    struct tormetrics_service *svc; /* in the order tor first named them */
    size_t n;
    size_t *by_onion;               /* indices into svc sorted by onion (onion_address_cmp): the look-ups'
                                       index, built while parsing, so finding a service is O(log n) */
};

/* Parse `len` bytes of `text`. Return a new struct (free with tormetrics_free), or NULL with `err`
 * naming the line and the problem ("line 12: label value not closed"). */
struct tormetrics *tormetrics_parse(const char *text, size_t len, char *err, size_t errlen);

void tormetrics_free(struct tormetrics *m);

/* The service with onion address `address` (56 characters, with or without ".onion"), or NULL. A binary
 * search of the index: a render of many services on several tors calls this once per service and tor. */
const struct tormetrics_service *tormetrics_find(const struct tormetrics *m, const char *address);

/* Add `one`'s values to `sum`: one service's figures from several tors (tor.instances), as an operator
 * wants one number. Counters and counts are added; the PoW suggested effort is the highest of them (an
 * effort is asked of each visitor, not shared). A field is in `sum` once any tor exported it. `sum`
 * starts zeroed (its onion is left alone). */
void tormetrics_service_add(struct tormetrics_service *sum, const struct tormetrics_service *one);

/* The field's name in status JSON and in onionfront's metric names ("pow_suggested_effort" ...); its
 * tor family (tormetrics_field_family); whether it is a counter. One table for all three. */
const char *tormetrics_field_str(enum tormetrics_field f);
const char *tormetrics_field_family(enum tormetrics_field f);
bool tormetrics_field_is_counter(enum tormetrics_field f);

#endif
