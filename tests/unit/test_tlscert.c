/* test_tlscert.c — judging certificate chains (tlscert.h) made here with OpenSSL's API: a test CA and
 * leaves valid for 90 days, expiring in 5 days, expired, for another name, with a wildcard, self-signed;
 * the days left, the name check (subjectAltName only), the trust verdict against a CA store given by
 * SSL_CERT_FILE (trusted, self-signed, untrusted), the fingerprint, and what is not a certificate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sidecar/datapath/tlscert.h"

#define ONION "pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd.onion"
#define DAY 86400L

struct fixture {
    EVP_PKEY *ca_key, *leaf_key;
    X509 *ca;
    char ca_file[64], empty_file[64];
    time_t now;
};

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    assert_non_null(e);
    assert_int_equal(X509_add_ext(x, e, -1), 1);
    X509_EXTENSION_free(e);
}

/* A certificate for `key` named `cn` with subjectAltName `san` (NULL: none), valid from a day before `now`
 * until `now + lifetime`, signed by `issuer` with `issuer_key` (issuer NULL: itself). */
static X509 *make_cert(EVP_PKEY *key, const char *cn, const char *san, time_t now, long lifetime, X509 *issuer,
                       EVP_PKEY *issuer_key, bool ca, long serial)
{
    X509 *x = X509_new();
    assert_non_null(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_time_adj_ex(X509_getm_notBefore(x), -1, 0, &now);
    X509_time_adj_ex(X509_getm_notAfter(x), 0, lifetime, &now);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    if (ca)
        add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE");
    if (san)
        add_ext(x, issuer ? issuer : x, NID_subject_alt_name, san);
    assert_true(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
    return x;
}

static char *to_pem(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    assert_int_equal(PEM_write_bio_X509(b, x), 1);
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *out = strndup(data, (size_t)n);
    BIO_free(b);
    return out;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->now = time(NULL);
    f->ca_key = EVP_EC_gen("P-256");
    f->leaf_key = EVP_EC_gen("P-256");
    f->ca = make_cert(f->ca_key, "onionfront test CA", NULL, f->now, 3650 * DAY, NULL, NULL, true, 1);
    snprintf(f->ca_file, sizeof(f->ca_file), "/tmp/test_tlscert_ca.XXXXXX");
    int fd = mkstemp(f->ca_file);
    char *pem = to_pem(f->ca);
    assert_true(write(fd, pem, strlen(pem)) == (ssize_t)strlen(pem));
    close(fd);
    free(pem);
    snprintf(f->empty_file, sizeof(f->empty_file), "/tmp/test_tlscert_none.XXXXXX");
    close(mkstemp(f->empty_file));
    /* The CA store is this test's CA alone (OpenSSL's default paths read these). */
    setenv("SSL_CERT_FILE", f->ca_file, 1);
    setenv("SSL_CERT_DIR", "/nonexistent", 1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    unlink(f->ca_file);
    unlink(f->empty_file);
    X509_free(f->ca);
    EVP_PKEY_free(f->ca_key);
    EVP_PKEY_free(f->leaf_key);
    free(f);
    return 0;
}

/* Judge a leaf issued by the test CA (or by itself when self_signed), sent alone. */
static int judge(struct fixture *f, const char *san, long lifetime, bool self_signed, const char *host,
                 struct tlscert_report *r)
{
    X509 *x = make_cert(f->leaf_key, "leaf", san, f->now, lifetime, self_signed ? NULL : f->ca,
                        self_signed ? NULL : f->ca_key, false, 2);
    char *pem = to_pem(x);
    char err[128] = "";
    int rc = tlscert_eval((const char *const[]){pem}, 1, host, f->now, r, err, sizeof(err));
    free(pem);
    X509_free(x);
    return rc;
}

static void test_valid(void **state)
{
    struct fixture *f = *state;
    struct tlscert_report r;
    assert_int_equal(judge(f, "DNS:" ONION, 90 * DAY, false, ONION, &r), 0);
    assert_int_equal(r.days_left, 90);
    assert_true(r.name_ok);
    assert_int_equal(r.trust, TLSCERT_TRUSTED);
    assert_string_equal(r.trust_detail, "");
    assert_string_equal(r.subject, "CN=leaf");
    assert_int_equal(strlen(r.sha256), 64);
    assert_true(r.not_after >= f->now + 90 * DAY - 1 && r.not_after <= f->now + 90 * DAY + 1);
}

static void test_expiring_and_expired(void **state)
{
    struct fixture *f = *state;
    struct tlscert_report r;
    assert_int_equal(judge(f, "DNS:" ONION, 5 * DAY, false, ONION, &r), 0);
    assert_int_equal(r.days_left, 5);
    assert_int_equal(r.trust, TLSCERT_TRUSTED); /* days are not trust */
    assert_int_equal(judge(f, "DNS:" ONION, 5 * DAY - 60, false, ONION, &r), 0);
    assert_int_equal(r.days_left, 4); /* rounded down */
    assert_int_equal(judge(f, "DNS:" ONION, -2 * DAY, false, ONION, &r), 0);
    assert_int_equal(r.days_left, -2);
}

static void test_names(void **state)
{
    struct fixture *f = *state;
    struct tlscert_report r;
    assert_int_equal(judge(f, "DNS:www.example.com", 90 * DAY, false, ONION, &r), 0);
    assert_false(r.name_ok);
    assert_int_equal(judge(f, NULL, 90 * DAY, false, "leaf", &r), 0);
    assert_false(r.name_ok); /* the subject's CN alone does not count */
    assert_int_equal(judge(f, "DNS:*." ONION, 90 * DAY, false, "www." ONION, &r), 0);
    assert_true(r.name_ok);
    assert_int_equal(judge(f, "DNS:" ONION ",DNS:*." ONION, 90 * DAY, false, ONION, &r), 0);
    assert_true(r.name_ok);
}

static void test_trust(void **state)
{
    struct fixture *f = *state;
    struct tlscert_report r;
    assert_int_equal(judge(f, "DNS:" ONION, 90 * DAY, true, ONION, &r), 0);
    assert_int_equal(r.trust, TLSCERT_SELF_SIGNED);
    assert_string_equal(tlscert_trust_str(r.trust), "self_signed");
    setenv("SSL_CERT_FILE", f->empty_file, 1); /* a store without the test CA */
    assert_int_equal(judge(f, "DNS:" ONION, 90 * DAY, false, ONION, &r), 0);
    setenv("SSL_CERT_FILE", f->ca_file, 1);
    assert_int_equal(r.trust, TLSCERT_UNTRUSTED);
    assert_string_not_equal(r.trust_detail, "");
    assert_string_equal(tlscert_trust_str((enum tlscert_trust)7), "unknown");
}

static void test_chain_and_json(void **state)
{
    struct fixture *f = *state;
    X509 *x = make_cert(f->leaf_key, "leaf", "DNS:" ONION, f->now, 30 * DAY, f->ca, f->ca_key, false, 3);
    char *leaf = to_pem(x), *ca = to_pem(f->ca), err[128] = "";
    struct tlscert_report r;
    assert_int_equal(tlscert_eval((const char *const[]){leaf, ca}, 2, ONION, f->now, &r, err, sizeof(err)), 0);
    assert_int_equal(r.days_left, 30);
    assert_int_equal(r.trust, TLSCERT_TRUSTED);
    json_t *j = tlscert_report_to_json(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "days_left")), 30);
    assert_true(json_is_true(json_object_get(j, "name_matches")));
    assert_string_equal(json_string_value(json_object_get(j, "trust")), "trusted");
    assert_string_equal(json_string_value(json_object_get(j, "sha256")), r.sha256);
    json_decref(j);
    free(leaf);
    free(ca);
    X509_free(x);
}

static void test_not_a_certificate(void **state)
{
    (void)state;
    struct tlscert_report r;
    char err[128] = "";
    assert_int_equal(tlscert_eval((const char *const[]){"-----BEGIN CERTIFICATE-----\nAAAA\n"}, 1, ONION, 0, &r,
                                  err, sizeof(err)),
                     -1);
    assert_string_equal(err, "certificate 1 of the chain is not a PEM certificate");
    assert_int_equal(tlscert_eval(NULL, 0, ONION, 0, &r, err, sizeof(err)), -1);
    assert_string_equal(err, "no certificate");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid), cmocka_unit_test(test_expiring_and_expired), cmocka_unit_test(test_names),
        cmocka_unit_test(test_trust), cmocka_unit_test(test_chain_and_json), cmocka_unit_test(test_not_a_certificate),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
