/* certwatch.h — the TLS certificates of one service's "tls" port: the one a visitor gets through the onion
 * (read by the end-to-end probe's own https fetch) and the one each backend of that port serves (read
 * directly, with the onion name as SNI, through the data path's curl loop), so that a farm where one
 * server was forgotten at renewal names that server.
 *
 * Thresholds: a certificate expiring in under CERTWATCH_WARN_DAYS days is a warning, under
 * CERTWATCH_CRIT_DAYS (or one whose subjectAltName does not cover the onion name) critical; the shipped
 * Prometheus rules and `onionfront check` use the same numbers.
 *
 * Owns each view's result and its transfer. Does not judge certificates (tlscert.h) or schedule anything:
 * the probe calls it on each of its probes. */
#ifndef ONIONFRONT_CERTWATCH_H
#define ONIONFRONT_CERTWATCH_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdint.h>

#include "sidecar/config/config.h"
#include "sidecar/datapath/tlscert.h"

#define CERTWATCH_WARN_DAYS 30
#define CERTWATCH_CRIT_DAYS 7

struct check_http;
struct check_http_loop;
struct metrics;
struct certwatch_svc;

enum certwatch_level { CERTWATCH_OK, CERTWATCH_WARNING, CERTWATCH_CRITICAL };

/* The watch of the service at `address` (56 characters). NULL on OOM. */
struct certwatch_svc *certwatch_new(const char *address);

/* Cancel its transfers and free it. NULL is a no-op. */
void certwatch_free(struct certwatch_svc *cw);

/* Set up the probe's transfer `easy` to keep the chain it gets (CURLOPT_CERTINFO) and to reach the
 * service whatever the certificate (the verdict is ours: a self-signed onion certificate is fine). */
void certwatch_prepare(CURL *easy);

/* The probe's https fetch is over (`rc`, curl's message `why`): record the chain the visitor got. A
 * fetch that got no chain (it failed before the handshake: the probe reports that) leaves the last
 * certificate read in place; with none read yet it is recorded as unread, with `why`. */
void certwatch_onion_done(struct certwatch_svc *cw, CURL *easy, CURLcode rc, const char *why);

/* Read the certificate of each backend of `pc` (a "tls" port) on `loop`, each bounded by `timeout_ms`.
 * Reads still running from the last call are abandoned; a changed backend list starts afresh. */
void certwatch_check_backends(struct certwatch_svc *cw, struct check_http_loop *loop, const struct port_conf *pc,
                              unsigned timeout_ms);

/* Append to `problems` a line for each certificate of service `name` under the warning threshold, whose
 * name does not match, or that could not be read, and for each backend serving another certificate
 * than the visitor gets. Return the worst level. */
enum certwatch_level certwatch_problems(const struct certwatch_svc *cw, const char *name, json_t *problems);

/* {"port", "onion": null | VIEW, "backends": [VIEW]}, VIEW = {"endpoint", "time", "error" (null if read),
 * tlscert_report_to_json's fields when read, "same_as_onion" for backends}. New reference. */
json_t *certwatch_to_json(const struct certwatch_svc *cw);

/* The metric families, each started once per scrape with certwatch_metric_family and then sampled for
 * every watched service with certwatch_metric (endpoint "onion" for the visitor's certificate, else the
 * backend's address as written): onionfront_tls_cert_expiry_timestamp_seconds{service,endpoint},
 * onionfront_tls_cert_name_match, onionfront_tls_cert_trusted,
 * onionfront_tls_cert_self_signed, onionfront_tls_cert_read_ok. Return 0 or -1. */
enum certwatch_metric {
    CERTWATCH_M_EXPIRY,
    CERTWATCH_M_NAME_MATCH,
    CERTWATCH_M_TRUSTED,
    CERTWATCH_M_SELF_SIGNED,
    CERTWATCH_M_READ_OK,
};
#define CERTWATCH_N_METRICS 5
int certwatch_metric_family(enum certwatch_metric which, struct metrics *m);
int certwatch_metric(const struct certwatch_svc *cw, const char *name, enum certwatch_metric which,
                     struct metrics *m);

#endif
