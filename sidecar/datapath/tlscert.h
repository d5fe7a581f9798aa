/* tlscert.h — what a TLS certificate chain tells an onion's operator: the days left until its notAfter,
 * whether its subjectAltName covers the onion name, whether it verifies against the system's CA store
 * (OpenSSL's default paths, SSL_CERT_FILE / SSL_CERT_DIR included), and which certificate it is.
 *
 * Pure: the chain comes in as PEM text (what libcurl's CURLINFO_CERTINFO hands over, leaf first) and is
 * parsed by OpenSSL only. Owns no state; does not fetch anything (certwatch.h and the probe do). */
#ifndef ONIONFRONT_TLSCERT_H
#define ONIONFRONT_TLSCERT_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

enum tlscert_trust {
    TLSCERT_TRUSTED,     /* the chain verifies against the system's CAs */
    TLSCERT_SELF_SIGNED, /* the leaf signs itself: Tor Browser accepts that for an onion, so no error */
    TLSCERT_UNTRUSTED,   /* anything else: the detail says why (OpenSSL's verify error) */
};
const char *tlscert_trust_str(enum tlscert_trust t);

struct tlscert_report {
    time_t not_after;   /* the leaf's notAfter, seconds since the epoch (UTC) */
    long days_left;     /* whole days from `now` to notAfter, rounded down; negative once expired */
    bool name_ok;       /* a subjectAltName DNS entry matches the host (a wildcard one level deep counts) */
    enum tlscert_trust trust;
    char trust_detail[128]; /* OpenSSL's verify error for TLSCERT_UNTRUSTED, else "" */
    char subject[160];      /* the leaf's subject, one line (RFC 2253) */
    char sha256[65];        /* the leaf's SHA-256 fingerprint, lowercase hex: which certificate it is */
};

/* Judge the chain `pem[0..n-1]` (leaf first, each one PEM certificate) for `host` (the onion name the
 * visitor uses, "<56>.onion") at `now`. Validity dates do not enter the trust verdict (days_left tells).
 * Return 0, or -1 with a message naming what was wrong ("certificate 2 is not PEM"). */
int tlscert_eval(const char *const *pem, size_t n, const char *host, time_t now, struct tlscert_report *out,
                 char *err, size_t errlen);

/* The same for the chain a finished libcurl transfer saw (CURLOPT_CERTINFO set before it ran). Return 0,
 * or -1 with a message (no certificate: the TLS handshake did not complete). */
int tlscert_eval_curl(CURL *easy, const char *host, time_t now, struct tlscert_report *out, char *err,
                      size_t errlen);

/* {"not_after" (ISO 8601 UTC), "days_left", "name_matches", "trust", "trust_detail", "subject", "sha256"}.
 * Returns a new reference. */
json_t *tlscert_report_to_json(const struct tlscert_report *r);

#endif
