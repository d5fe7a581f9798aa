/* onion_csr.h — the two documents with which an onion service proves control of its address to a
 * certificate authority, signed with the service's own key (onion_sign.h):
 *
 *   - the CA/Browser Forum's onion CSR (Baseline Requirements, appendix B.2.b; RFC 9799's "onion-csr-01"
 *     challenge uses the same request): a PKCS#10 request whose subject public key is the onion service's
 *     ed25519 key, signed with it, carrying the attributes caSigningNonce (OID 2.23.140.41, the CA's
 *     nonce) and applicantSigningNonce (OID 2.23.140.42, at least 64 bits of the applicant's randomness),
 *     each a single OCTET STRING of the raw bytes (RFC 9799 3.2: "raw bytes, and not the base64 encoded
 *     value provided in the challenge object"), and an extensionRequest with subjectAltName DNS
 *     NAME.onion (and *.NAME.onion). The subject is empty: RFC 9799 says CAs should not look at it.
 *   - RFC 9799's in-band CAA object (section 6.4, "onionCAA" in an ACME finalize request):
 *     {"caa": records, "expiry": unix time, "signature": base64url(Ed25519 over
 *     "onion-caa|" || expiry || "|" || caa)}, the records in the hidden service descriptor's form
 *     ("caa" SP flags SP tag SP value, tor proposal 343), one per line, joined by "\n".
 *
 * Owns the formats (OpenSSL for everything X.509: attributes, extensions, DER, PEM; libsodium for hex and
 * base64) and the parsing of the operator's input for them (the CA's nonce, CAA records). Pure: no files,
 * no logging, no clock (the caller passes the expiry), no randomness (the caller passes the applicant's
 * nonce). Errors go to the caller's buffer and never contain key material. */
#ifndef ONIONFRONT_ONION_CSR_H
#define ONIONFRONT_ONION_CSR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sidecar/identity/keys.h"

#define ONION_NONCE_MIN 8               /* bytes: the Baseline Requirements' 64 bits */
#define ONION_NONCE_MAX 128             /* bytes: more is no CA's nonce, and would only bloat the request */
#define ONION_APPLICANT_NONCE_LEN 16    /* bytes of the applicant's own nonce */
#define ONION_CAA_EXPIRY_MAX (8 * 3600) /* seconds: RFC 9799 6.4, "SHOULD NOT be more than 8 hours" */
#define ONION_CAA_RECORD_MAX 512        /* one record in descriptor form, with the NUL */

#define ONION_OID_CA_SIGNING_NONCE "2.23.140.41"        /* cabf-caSigningNonce */
#define ONION_OID_APPLICANT_SIGNING_NONCE "2.23.140.42" /* cabf-applicantSigningNonce */

struct onion_nonce {
    unsigned char bytes[ONION_NONCE_MAX];
    size_t len;
};

/* Read a CA's nonce as the CA hands it out into `out`:
 *   "hex:DIGITS"     hex (HARICA's form), any case, an even number of digits;
 *   "base64:TEXT"    base64 (an ACME onion-csr-01 challenge's "nonce"), RFC 4648 standard or URL-safe
 *                    alphabet, with or without its "=" padding;
 *   anything else:   hex if it is an even number of hex digits and nothing else, otherwise base64.
 * So a base64 nonce that happens to be made of hex digits only must be given with "base64:". At least
 * ONION_NONCE_MIN and at most ONION_NONCE_MAX bytes once decoded. Return 0, or -1 with a message that
 * names the form tried (never the nonce itself: it may be long). */
int onion_nonce_parse(const char *text, struct onion_nonce *out, char *err, size_t errlen);

/* Build the onion CSR (see the top comment) for `key` (its secret is needed; it is not changed) with the
 * CA's nonce `ca_nonce` and the applicant's `applicant_nonce` (each ONION_NONCE_MIN-ONION_NONCE_MAX
 * bytes), subjectAltName "<address>.onion", and "*.<address>.onion" if `wildcard`. The request is
 * verified with OpenSSL against the public key before it is returned. Return a new PEM string ("-----BEGIN
 * CERTIFICATE REQUEST-----" ..., free() it), or NULL with a message. */
char *onion_csr_build(const struct onion_key *key, const struct onion_nonce *ca_nonce,
                      const struct onion_nonce *applicant_nonce, bool wildcard, char *err, size_t errlen);

/* Read one CAA record as the operator writes it, "[FLAGS] TAG VALUE" (FLAGS 0-255, default 0; TAG 1-15
 * ASCII letters and digits, e.g. issue, issuewild, iodef; VALUE quoted or not, printable ASCII without
 * '"' or '\'), also with the descriptor's leading "caa ", into its descriptor form
 * `caa FLAGS TAG "VALUE"` in `out` (ONION_CAA_RECORD_MAX bytes). Return 0, or -1 with a message naming
 * the part that is wrong. */
int onion_caa_record_parse(const char *text, char out[ONION_CAA_RECORD_MAX], char *err, size_t errlen);

/* The in-band CAA object for `key` (secret needed) over the records `caa` (descriptor form, joined by
 * "\n", as onion_caa_record_parse makes them) valid until the Unix time `expiry` (> 0).
 * Return a new reference to {"caa": caa, "expiry": expiry, "signature": base64url with padding}, or NULL
 * with a message. */
json_t *onion_caa_build(const struct onion_key *key, const char *caa, int64_t expiry, char *err, size_t errlen);

/* The bytes the in-band CAA signature covers: "onion-caa|<expiry>|<caa>" (no trailing NUL counted).
 * Return its length, or -1 if it does not fit `cap`. Exposed for tests and verifiers. */
int onion_caa_signed_text(int64_t expiry, const char *caa, char *out, size_t cap);

#endif
