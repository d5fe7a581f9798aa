/* torscrape.h — reads a spawned tor's MetricsPort (http://127.0.0.1:<port>/metrics) every
 * TORSCRAPE_INTERVAL_S seconds through libcurl on the event loop (check_http_run), parses the answer
 * with tormetrics.c and keeps the latest result for status and /metrics: per service the PoW suggested
 * effort and queue, introductions received and rejected, rendezvous created, established and failed.
 *
 * Owns its curl loop, its timer, the transfer in flight and the latest parsed answer. A failed or
 * refused answer forgets the values (absent, never stale) and is logged once per change of outcome.
 * Does not decide anything from the values and knows no service names (the caller passes them). */
#ifndef ONIONFRONT_TORSCRAPE_H
#define ONIONFRONT_TORSCRAPE_H

#include <jansson.h>
#include <stddef.h>

struct event_base;
struct metrics;
struct tormetrics;
struct torscrape;

#define TORSCRAPE_INTERVAL_S 10

/* A scraper on `base`; `label` ("tor", "tor 2") prefixes its log lines. NULL on allocation failure. */
struct torscrape *torscrape_new(struct event_base *base, const char *label);

/* NULL is a no-op. Abandons a transfer in flight. */
void torscrape_free(struct torscrape *s);

/* Scrape 127.0.0.1:`port` now and every TORSCRAPE_INTERVAL_S seconds; port 0 stops and forgets the
 * values (the tor is gone). Setting the same port again changes nothing. */
void torscrape_set_port(struct torscrape *s, unsigned port);

/* The latest parsed answer (borrowed, valid until the next loop turn), or NULL if none. */
const struct tormetrics *torscrape_latest(const struct torscrape *s);

/* The service with `address`'s values as a JSON object ("pow_suggested_effort": 0, ...: only what tor
 * exported), or NULL when there is no answer or tor does not list the service. Returns a new reference. */
json_t *torscrape_service_to_json(const struct torscrape *s, const char *address);

/* The same over the `n` tors' scrapers `s` (the tors of one service's kind), combined as an operator
 * wants one number (tormetrics_service_add: sums, the highest PoW effort); NULL when none lists it.
 * Returns a new reference. */
json_t *torscrape_sum_to_json(const struct torscrape *const *s, size_t n, const char *address);

/* onionfront_tor_hs_<field> families (tormetrics_field_str), one sample per tor `s[k]` and service
 * `names[i]` with address `addresses[i]` that this tor listed, labelled service and instance
 * (`instances[k]`: "1", "2", "anonymous", as status names the tors); also onionfront_tor_metrics_up{instance}
 * (1 if that tor's last scrape worked). Return 0, or -1 (out of memory, a family twice). */
int torscrape_metrics(const struct torscrape *const *s, const char *const *instances, size_t n_tors,
                      const char *const *names, const char *const *addresses, size_t n, struct metrics *m);

#endif
