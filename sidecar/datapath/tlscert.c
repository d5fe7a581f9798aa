/* tlscert.c — judging a certificate chain with OpenSSL: expiry, the name, the trust (tlscert.h).
 *
 * Every byte of a certificate is parsed by OpenSSL (PEM_read_bio_X509, X509_check_host, X509_verify_cert);
 * this file only asks the questions. It keeps no state and does no I/O beyond OpenSSL reading the
 * system's CA store. */
#include "sidecar/datapath/tlscert.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

static const char *const tlscert_trust_names[] = {"trusted", "self_signed", "untrusted"};

const char *tlscert_trust_str(enum tlscert_trust t)
{
    return (unsigned)t <= TLSCERT_UNTRUSTED ? tlscert_trust_names[t] : "unknown";
}

static X509 *tlscert_parse(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return x;
}

/* Verify the leaf with the rest of the chain as untrusted intermediates against the default CA store.
 * Dates are left out (X509_V_FLAG_NO_CHECK_TIME): an expiring certificate is a matter of days, not trust. */
static void tlscert_trust(X509 *leaf, STACK_OF(X509) *rest, struct tlscert_report *out)
{
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    out->trust = TLSCERT_UNTRUSTED;
    if (!store || !ctx || X509_STORE_set_default_paths(store) != 1 || X509_STORE_CTX_init(ctx, store, leaf, rest) != 1) {
        snprintf(out->trust_detail, sizeof(out->trust_detail), "the CA store could not be loaded");
        goto done;
    }
    X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(ctx), X509_V_FLAG_NO_CHECK_TIME);
    if (X509_verify_cert(ctx) == 1) {
        out->trust = TLSCERT_TRUSTED;
        goto done;
    }
    int e = X509_STORE_CTX_get_error(ctx);
    if (e == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT)
        out->trust = TLSCERT_SELF_SIGNED;
    else
        snprintf(out->trust_detail, sizeof(out->trust_detail), "%s", X509_verify_cert_error_string(e));
done:
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
}

static int tlscert_not_after(const X509 *leaf, time_t now, struct tlscert_report *out)
{
    struct tm tm;
    const ASN1_TIME *na = X509_get0_notAfter(leaf);
    if (!na || ASN1_TIME_to_tm(na, &tm) != 1)
        return -1;
    out->not_after = timegm(&tm);
    long long left = (long long)out->not_after - (long long)now;
    out->days_left = (long)(left >= 0 ? left / 86400 : -((-left + 86399) / 86400));
    return 0;
}

static void tlscert_identify(X509 *leaf, struct tlscert_report *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    out->sha256[0] = '\0';
    if (X509_digest(leaf, EVP_sha256(), md, &len) == 1)
        for (unsigned i = 0; i < len && 2 * i + 2 < sizeof(out->sha256); i++)
            snprintf(out->sha256 + 2 * i, 3, "%02x", md[i]);
    out->subject[0] = '\0';
    BIO *b = BIO_new(BIO_s_mem());
    if (b && X509_NAME_print_ex(b, X509_get_subject_name(leaf), 0, XN_FLAG_RFC2253) >= 0) {
        int n = BIO_read(b, out->subject, (int)sizeof(out->subject) - 1);
        out->subject[n > 0 ? n : 0] = '\0';
    }
    BIO_free(b);
}

int tlscert_eval(const char *const *pem, size_t n, const char *host, time_t now, struct tlscert_report *out,
                 char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (n == 0) {
        snprintf(err, errlen, "no certificate");
        return -1;
    }
    X509 *leaf = NULL;
    STACK_OF(X509) *rest = sk_X509_new_null();
    int rc = -1;
    if (!rest) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        X509 *x = pem[i] ? tlscert_parse(pem[i]) : NULL;
        if (!x) {
            snprintf(err, errlen, "certificate %zu of the chain is not a PEM certificate", i + 1);
            goto done;
        }
        if (i == 0)
            leaf = x;
        else if (!sk_X509_push(rest, x)) {
            X509_free(x);
            snprintf(err, errlen, "out of memory");
            goto done;
        }
    }
    if (tlscert_not_after(leaf, now, out) < 0) {
        snprintf(err, errlen, "the certificate's notAfter cannot be read");
        goto done;
    }
    /* Only subjectAltName counts (CA/Browser Forum baseline requirements; browsers ignore the CN). */
    out->name_ok = X509_check_host(leaf, host, 0, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, NULL) == 1;
    tlscert_trust(leaf, rest, out);
    tlscert_identify(leaf, out);
    rc = 0;
done:
    X509_free(leaf);
    sk_X509_pop_free(rest, X509_free);
    return rc;
}

int tlscert_eval_curl(CURL *easy, const char *host, time_t now, struct tlscert_report *out, char *err,
                      size_t errlen)
{
    struct curl_certinfo *ci = NULL;
    if (curl_easy_getinfo(easy, CURLINFO_CERTINFO, &ci) != CURLE_OK || !ci || ci->num_of_certs <= 0) {
        snprintf(err, errlen, "no certificate was received");
        return -1;
    }
    /* libcurl lists each certificate's fields as "Name:value" lines; "Cert:" is the PEM text. */
    const char *pem[16];
    size_t n = 0;
    for (int i = 0; i < ci->num_of_certs && n < sizeof(pem) / sizeof(pem[0]); i++) {
        const char *found = NULL;
        for (const struct curl_slist *l = ci->certinfo[i]; l; l = l->next)
            if (strncmp(l->data, "Cert:", 5) == 0)
                found = l->data + 5;
        pem[n++] = found;
    }
    return tlscert_eval(pem, n, host, now, out, err, errlen);
}

json_t *tlscert_report_to_json(const struct tlscert_report *r)
{
    char when[32];
    struct tm tm;
    gmtime_r(&r->not_after, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_pack("{s:s, s:I, s:b, s:s, s:s, s:s, s:s}", "not_after", when, "days_left", (json_int_t)r->days_left,
                     "name_matches", r->name_ok, "trust", tlscert_trust_str(r->trust), "trust_detail",
                     r->trust_detail, "subject", r->subject, "sha256", r->sha256);
}
