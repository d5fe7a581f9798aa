/* test_onion_csr.c — unit tests for sidecar/identity/onion_csr.c: the onion CSR and the in-band CAA object.
 *
 * Why: a CA takes the request only if OpenSSL-style parsers find a valid Ed25519 signature by the onion
 * key, both nonces as raw OCTET STRINGs under the CA/Browser Forum OIDs, and the onion name; the CA's
 * nonce arrives as hex (HARICA) or base64 (ACME) and a wrong reading silently yields a useless request.
 *
 * Covers: the nonce reader (table: hex, base64 in both alphabets with and without padding, the "hex:" and
 * "base64:" prefixes, too short, too long, neither); the CSR parsed back by OpenSSL from its PEM:
 * X509_REQ_verify with the onion key, public key, version 1, empty subject, signature algorithm
 * id-Ed25519 without parameters, exactly one value per nonce attribute with the given bytes, the
 * subjectAltName with and without the wildcard; 64 requests with fresh nonces all verify (signatures
 * ending in zero bits included); the same inputs give the same request (Ed25519 is deterministic); a
 * flipped byte breaks verification; a key whose public half does not match and a key without its secret
 * are refused; CAA records (table) in descriptor form; the CAA object's fields, its signature
 * byte-identical to OpenSSL's Ed25519 signature of "onion-caa|expiry|caa" from the seed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#include "sidecar/identity/onion_csr.h"

/* RFC 8032 7.1 TEST 1: its seed, and tor's expanded form of it (SHA-512, clamped), made here by OpenSSL. */
static const unsigned char SEED[32] = {0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a,
                                       0xf4, 0x92, 0xec, 0x2c, 0xc4, 0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32,
                                       0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60};
#define SEED_ADDR "25njqamcweflpvkl73j4szahhihoc4xt3ktcgjnpaingr5yhkenl5sid"

static void make_key(struct onion_key *k)
{
    unsigned int n = 0;
    size_t pl = 32;
    memset(k, 0, sizeof *k);
    assert_int_equal(EVP_Digest(SEED, 32, k->secret_key, &n, EVP_sha512(), NULL), 1);
    k->secret_key[0] &= 248;
    k->secret_key[31] &= 127;
    k->secret_key[31] |= 64;
    EVP_PKEY *p = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, SEED, 32);
    assert_non_null(p);
    assert_int_equal(EVP_PKEY_get_raw_public_key(p, k->public_key, &pl), 1);
    EVP_PKEY_free(p);
    k->has_secret = true;
    assert_int_equal(onion_address_from_pubkey(k->public_key, k->address), 0);
    assert_string_equal(k->address, SEED_ADDR);
}

static void nonce_of(struct onion_nonce *n, const char *bytes, size_t len)
{
    memset(n, 0, sizeof *n);
    memcpy(n->bytes, bytes, len);
    n->len = len;
}

/* ---- the CA's nonce ------------------------------------------------------------------------------------ */

static const struct {
    const char *in;
    int rc;
    const char *bytes; /* expected, rc 0 */
    size_t len;
    const char *err;   /* expected in the message, rc -1 */
} nonce_cases[] = {
    /* HARICA's example nonce, hex for "HARICA<3onions" */
    {"4841524943413C336F6E696F6E73", 0, "HARICA<3onions", 14, NULL},
    {"4841524943413c336f6e696f6e73", 0, "HARICA<3onions", 14, NULL},
    {"hex:4841524943413C336F6E696F6E73", 0, "HARICA<3onions", 14, NULL},
    /* RFC 9799's example challenge nonce, base64 with padding; and without, and URL-safe */
    {"bI6/MRqV4gw=", 0, "\x6c\x8e\xbf\x31\x1a\x95\xe2\x0c", 8, NULL},
    {"bI6/MRqV4gw", 0, "\x6c\x8e\xbf\x31\x1a\x95\xe2\x0c", 8, NULL},
    {"bI6_MRqV4gw=", 0, "\x6c\x8e\xbf\x31\x1a\x95\xe2\x0c", 8, NULL},
    {"base64:bI6/MRqV4gw=", 0, "\x6c\x8e\xbf\x31\x1a\x95\xe2\x0c", 8, NULL},
    /* all hex digits: hex without a prefix, base64 with one */
    {"0123456789abcdef", 0, "\x01\x23\x45\x67\x89\xab\xcd\xef", 8, NULL},
    {"base64:0123456789abcdef", 0, "\xd3\x5d\xb7\xe3\x9e\xbb\xf3\xd6\x9b\x71\xd7\x9f", 12, NULL},
    {"SEFSSUNBPDNvbmlvbnM=", 0, "HARICA<3onions", 14, NULL},
    /* wrong */
    {"", -1, NULL, 0, "neither hex"},
    {"0123456789abcde!", -1, NULL, 0, "neither hex"},
    {"bI6/MRqV 4gw=", -1, NULL, 0, "neither hex"},
    {"bI6/MRqV4gw==", -1, NULL, 0, "neither hex"},
    {"hex:0123456789abcde", -1, NULL, 0, "not valid hex after the prefix \"hex:\""},
    {"hex:bI6/MRqV4gw=", -1, NULL, 0, "not valid hex"},
    {"base64:bI6/MRqV4gw=!", -1, NULL, 0, "not valid base64"},
    {"01234567", -1, NULL, 0, "4 bytes once decoded as hex; a CA nonce has 8 to 128 bytes"},
    {"AAAAAAAAAA==", -1, NULL, 0, "7 bytes once decoded as base64"},
    {"hex:", -1, NULL, 0, "not valid hex"},
};

static void test_nonce_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof nonce_cases / sizeof nonce_cases[0]; i++) {
        struct onion_nonce n;
        char err[256] = "";
        print_message("%s\n", nonce_cases[i].in);
        int rc = onion_nonce_parse(nonce_cases[i].in, &n, err, sizeof err);
        assert_int_equal(rc, nonce_cases[i].rc);
        if (rc == 0) {
            assert_int_equal(n.len, nonce_cases[i].len);
            assert_memory_equal(n.bytes, nonce_cases[i].bytes, n.len);
        } else {
            assert_non_null(strstr(err, nonce_cases[i].err));
        }
    }
}

static void test_nonce_length_bounds(void **state)
{
    (void)state;
    char text[2 * 200 + 8];
    unsigned char raw[150];
    struct onion_nonce n;
    char err[256];
    memset(text, 'a', 2 * 128); /* 128 bytes of hex: the most */
    text[2 * 128] = '\0';
    assert_int_equal(onion_nonce_parse(text, &n, err, sizeof err), 0);
    assert_int_equal(n.len, 128);
    memset(text, 'a', 2 * 129);
    text[2 * 129] = '\0';
    assert_int_equal(onion_nonce_parse(text, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "too long"));
    memset(raw, 7, sizeof raw); /* 150 bytes as base64: 200 characters */
    sodium_bin2base64(text, sizeof text, raw, sizeof raw, sodium_base64_VARIANT_ORIGINAL);
    assert_int_equal(onion_nonce_parse(text, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "150 bytes once decoded as base64"));
}

/* ---- the CSR ---------------------------------------------------------------------------------------------- */

static X509_REQ *parse_pem(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509_REQ *r = PEM_read_bio_X509_REQ(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(r);
    return r;
}

/* The bytes of the single-valued OCTET STRING attribute `oid` of `r`. */
static void assert_attr(X509_REQ *r, const char *oid, const struct onion_nonce *want)
{
    ASN1_OBJECT *obj = OBJ_txt2obj(oid, 1);
    int idx = X509_REQ_get_attr_by_OBJ(r, obj, -1);
    assert_true(idx >= 0);
    assert_true(X509_REQ_get_attr_by_OBJ(r, obj, idx) < 0); /* once */
    X509_ATTRIBUTE *a = X509_REQ_get_attr(r, idx);
    assert_int_equal(X509_ATTRIBUTE_count(a), 1);
    ASN1_TYPE *t = X509_ATTRIBUTE_get0_type(a, 0);
    assert_int_equal(ASN1_TYPE_get(t), V_ASN1_OCTET_STRING);
    const ASN1_OCTET_STRING *os = t->value.octet_string;
    assert_int_equal(ASN1_STRING_length(os), want->len);
    assert_memory_equal(ASN1_STRING_get0_data(os), want->bytes, want->len);
    ASN1_OBJECT_free(obj);
}

static void assert_san(X509_REQ *r, bool wildcard)
{
    STACK_OF(X509_EXTENSION) *exts = X509_REQ_get_extensions(r);
    assert_non_null(exts);
    assert_int_equal(sk_X509_EXTENSION_num(exts), 1);
    GENERAL_NAMES *gens = X509V3_get_d2i(exts, NID_subject_alt_name, NULL, NULL);
    assert_non_null(gens);
    assert_int_equal(sk_GENERAL_NAME_num(gens), wildcard ? 2 : 1);
    for (int i = 0; i < sk_GENERAL_NAME_num(gens); i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        assert_int_equal(g->type, GEN_DNS);
        const char *s = (const char *)ASN1_STRING_get0_data(g->d.dNSName);
        assert_string_equal(s, i == 0 ? SEED_ADDR ".onion" : "*." SEED_ADDR ".onion");
    }
    GENERAL_NAMES_free(gens);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
}

static void test_csr_parses_and_verifies(void **state)
{
    (void)state;
    struct onion_key k;
    struct onion_nonce ca, app;
    char err[256];
    make_key(&k);
    nonce_of(&ca, "HARICA<3onions", 14);
    nonce_of(&app, "0123456789abcdef", 16);
    for (int wildcard = 0; wildcard <= 1; wildcard++) {
        char *pem = onion_csr_build(&k, &ca, &app, wildcard, err, sizeof err);
        assert_non_null(pem);
        assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE REQUEST-----\n"));
        X509_REQ *r = parse_pem(pem);
        EVP_PKEY *pub = X509_REQ_get0_pubkey(r);
        assert_int_equal(EVP_PKEY_get_id(pub), EVP_PKEY_ED25519);
        unsigned char raw[32];
        size_t rl = sizeof raw;
        assert_int_equal(EVP_PKEY_get_raw_public_key(pub, raw, &rl), 1);
        assert_memory_equal(raw, k.public_key, 32);
        assert_int_equal(X509_REQ_verify(r, pub), 1);
        assert_int_equal(X509_REQ_get_version(r), X509_REQ_VERSION_1);
        assert_int_equal(X509_NAME_entry_count(X509_REQ_get_subject_name(r)), 0);
        const X509_ALGOR *alg;
        const ASN1_OBJECT *aobj;
        int ptype;
        X509_REQ_get0_signature(r, NULL, &alg);
        X509_ALGOR_get0(&aobj, &ptype, NULL, alg);
        assert_int_equal(OBJ_obj2nid(aobj), NID_ED25519);
        assert_int_equal(ptype, V_ASN1_UNDEF);
        assert_int_equal(X509_REQ_get_attr_count(r), 3); /* the two nonces and extensionRequest */
        assert_attr(r, ONION_OID_CA_SIGNING_NONCE, &ca);
        assert_attr(r, ONION_OID_APPLICANT_SIGNING_NONCE, &app);
        assert_san(r, wildcard);
        X509_REQ_free(r);
        free(pem);
    }
    onion_key_clear(&k);
}

/* Many signatures: about half end in a byte with trailing zero bits, which a BIT STRING without the
 * "no unused bits" flag would lose. Each must verify after a round trip through PEM. */
static void test_csr_many_nonces(void **state)
{
    (void)state;
    struct onion_key k;
    struct onion_nonce ca, app;
    char err[256];
    make_key(&k);
    for (int i = 0; i < 64; i++) {
        ca.len = 8 + (size_t)i % 24;
        app.len = ONION_APPLICANT_NONCE_LEN;
        assert_int_equal(RAND_bytes(ca.bytes, (int)ca.len), 1);
        assert_int_equal(RAND_bytes(app.bytes, (int)app.len), 1);
        char *pem = onion_csr_build(&k, &ca, &app, i % 2, err, sizeof err);
        assert_non_null(pem);
        X509_REQ *r = parse_pem(pem);
        assert_int_equal(X509_REQ_verify(r, X509_REQ_get0_pubkey(r)), 1);
        assert_attr(r, ONION_OID_CA_SIGNING_NONCE, &ca);
        X509_REQ_free(r);
        free(pem);
    }
    onion_key_clear(&k);
}

static void test_csr_deterministic_and_tamper_evident(void **state)
{
    (void)state;
    struct onion_key k;
    struct onion_nonce ca, app;
    char err[256];
    make_key(&k);
    nonce_of(&ca, "12345678", 8);
    nonce_of(&app, "abcdefghijklmnop", 16);
    char *a = onion_csr_build(&k, &ca, &app, false, err, sizeof err);
    char *b = onion_csr_build(&k, &ca, &app, false, err, sizeof err);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    ca.bytes[0] ^= 1;
    char *c = onion_csr_build(&k, &ca, &app, false, err, sizeof err);
    assert_non_null(c);
    assert_string_not_equal(a, c);

    /* Flip one byte inside the signed part (the CA nonce's first byte) of the DER: no longer verifies. */
    X509_REQ *r = parse_pem(a);
    unsigned char *der = NULL;
    int n = i2d_X509_REQ(r, &der);
    assert_true(n > 0);
    unsigned char *hit = memmem(der, (size_t)n, "12345678", 8);
    assert_non_null(hit);
    *hit ^= 1;
    const unsigned char *p = der;
    X509_REQ *t = d2i_X509_REQ(NULL, &p, n);
    assert_non_null(t);
    assert_int_equal(X509_REQ_verify(t, X509_REQ_get0_pubkey(r)), 0);
    X509_REQ_free(t);
    X509_REQ_free(r);
    OPENSSL_free(der);
    free(a);
    free(b);
    free(c);
    onion_key_clear(&k);
}

static void test_csr_refuses_bad_keys(void **state)
{
    (void)state;
    struct onion_key k;
    struct onion_nonce ca, app;
    char err[256] = "";
    make_key(&k);
    nonce_of(&ca, "12345678", 8);
    nonce_of(&app, "abcdefghijklmnop", 16);
    k.public_key[31] ^= 0x80; /* the other sign of x: same X25519 u, another point */
    assert_null(onion_csr_build(&k, &ca, &app, false, err, sizeof err));
    assert_non_null(strstr(err, "does not belong"));
    k.public_key[31] ^= 0x80;
    onion_key_forget_secret(&k);
    assert_null(onion_csr_build(&k, &ca, &app, false, err, sizeof err));
    assert_non_null(strstr(err, "no secret key"));
    make_key(&k);
    nonce_of(&ca, "1234567", 7);
    assert_null(onion_csr_build(&k, &ca, &app, false, err, sizeof err));
    assert_non_null(strstr(err, "8 to 128 bytes"));
    onion_key_clear(&k);
}

/* ---- in-band CAA ------------------------------------------------------------------------------------------ */

static const struct {
    const char *in, *out, *err;
} caa_cases[] = {
    {"issue \"harica.gr\"", "caa 0 issue \"harica.gr\"", NULL},
    {"issue harica.gr", "caa 0 issue \"harica.gr\"", NULL},
    {"128 issue \"test.acmeforonions.org; validationmethods=onion-csr-01\"",
     "caa 128 issue \"test.acmeforonions.org; validationmethods=onion-csr-01\"", NULL},
    {"caa 0 iodef \"mailto:security@example.com\"", "caa 0 iodef \"mailto:security@example.com\"", NULL},
    {"0 issuewild \";\"", "caa 0 issuewild \";\"", NULL},
    {"issue \"\"", "caa 0 issue \"\"", NULL},
    {"255 X1 v", "caa 255 X1 \"v\"", NULL},
    {"", NULL, "tag:"},
    {"issue", NULL, "tag:"},
    {"issue ", NULL, "value: missing"},
    {"256 issue \"x\"", NULL, "flags:"},
    {"0128 issue \"x\"", NULL, "flags:"},
    {"0issue \"x\"", NULL, "flags:"},
    {"is-sue \"x\"", NULL, "tag:"},
    {"abcdefghijklmnop \"x\"", NULL, "tag:"},
    {"issue \"a\"b\"", NULL, "value: character 2"},
    {"issue \"a\\b\"", NULL, "value: character 2"},
    {"issue \"tab\there\"", NULL, "value: character 4"},
    {"issue \"new\nline\"", NULL, "value: character 4"},
    {"issue \"caf\xc3\xa9\"", NULL, "value: character 4"},
};

static void test_caa_record_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof caa_cases / sizeof caa_cases[0]; i++) {
        char out[ONION_CAA_RECORD_MAX], err[256] = "";
        print_message("%s\n", caa_cases[i].in);
        int rc = onion_caa_record_parse(caa_cases[i].in, out, err, sizeof err);
        if (caa_cases[i].out) {
            assert_int_equal(rc, 0);
            assert_string_equal(out, caa_cases[i].out);
        } else {
            assert_int_equal(rc, -1);
            assert_non_null(strstr(err, caa_cases[i].err));
        }
    }
    char longv[ONION_CAA_RECORD_MAX + 16], out[ONION_CAA_RECORD_MAX], err[256];
    memcpy(longv, "issue ", 6);
    memset(longv + 6, 'a', sizeof longv - 7);
    longv[sizeof longv - 1] = '\0';
    assert_int_equal(onion_caa_record_parse(longv, out, err, sizeof err), -1);
    assert_non_null(strstr(err, "too long"));
}

static void test_caa_signed_text(void **state)
{
    (void)state;
    char buf[128];
    assert_int_equal(onion_caa_signed_text(1697210719, "caa 0 issue \"x\"", buf, sizeof buf), 36);
    assert_string_equal(buf, "onion-caa|1697210719|caa 0 issue \"x\"");
    assert_int_equal(onion_caa_signed_text(1, "", buf, sizeof buf), 12);
    assert_string_equal(buf, "onion-caa|1|");
    assert_int_equal(onion_caa_signed_text(1697210719, "caa 0 issue \"x\"", buf, 20), -1);
}

static void test_caa_build(void **state)
{
    (void)state;
    struct onion_key k;
    char err[256];
    const char *caa = "caa 128 issue \"harica.gr\"\ncaa 0 iodef \"mailto:security@example.com\"";
    const int64_t expiry = 1697210719;
    make_key(&k);
    json_t *o = onion_caa_build(&k, caa, expiry, err, sizeof err);
    assert_non_null(o);
    assert_int_equal(json_object_size(o), 3);
    assert_string_equal(json_string_value(json_object_get(o, "caa")), caa);
    assert_true(json_is_integer(json_object_get(o, "expiry")));
    assert_int_equal(json_integer_value(json_object_get(o, "expiry")), expiry);
    const char *b64 = json_string_value(json_object_get(o, "signature"));
    assert_non_null(b64);
    assert_int_equal(strlen(b64), 88); /* base64url of 64 bytes, with its "==" */
    assert_null(strpbrk(b64, "+/"));
    unsigned char sig[64];
    size_t sl = 0;
    assert_int_equal(sodium_base642bin(sig, sizeof sig, b64, strlen(b64), NULL, &sl, NULL,
                                       sodium_base64_VARIANT_URLSAFE),
                     0);
    assert_int_equal(sl, 64);

    /* OpenSSL's own Ed25519 signature of the same text from the seed: byte for byte the same. */
    char text[256];
    int n = onion_caa_signed_text(expiry, caa, text, sizeof text);
    assert_true(n > 0);
    EVP_PKEY *p = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, SEED, 32);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char want[64];
    size_t wl = sizeof want;
    assert_int_equal(EVP_DigestSignInit(ctx, NULL, NULL, NULL, p), 1);
    assert_int_equal(EVP_DigestSign(ctx, want, &wl, (const unsigned char *)text, (size_t)n), 1);
    assert_memory_equal(sig, want, 64);
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(p);
    json_decref(o);

    assert_null(onion_caa_build(&k, caa, 0, err, sizeof err));
    assert_non_null(strstr(err, "expiry"));
    onion_key_forget_secret(&k);
    assert_null(onion_caa_build(&k, caa, expiry, err, sizeof err));
    assert_non_null(strstr(err, "no secret key"));
    onion_key_clear(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nonce_parse),
        cmocka_unit_test(test_nonce_length_bounds),
        cmocka_unit_test(test_csr_parses_and_verifies),
        cmocka_unit_test(test_csr_many_nonces),
        cmocka_unit_test(test_csr_deterministic_and_tamper_evident),
        cmocka_unit_test(test_csr_refuses_bad_keys),
        cmocka_unit_test(test_caa_record_parse),
        cmocka_unit_test(test_caa_signed_text),
        cmocka_unit_test(test_caa_build),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
