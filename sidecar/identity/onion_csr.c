/* onion_csr.c — the onion CSR and the in-band CAA object (see onion_csr.h).
 *
 * OpenSSL cannot sign with tor's expanded key, so the request is assembled with OpenSSL's X509_REQ API,
 * its CertificationRequestInfo is DER-encoded by OpenSSL (i2d_re_X509_REQ_tbs), signed by onion_sign(),
 * and the signature and its algorithm (id-Ed25519, no parameters: RFC 8410 3) are set on the request.
 * OpenSSL then verifies the finished request, so a request that would not verify is never handed out. */
#include "sidecar/identity/onion_csr.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#include "sidecar/identity/onion_sign.h"

/* ---- the CA's nonce ---------------------------------------------------------------------------------- */

static bool onion_is_hex(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n % 2)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* Decode all of `s` as hex or (any of libsodium's four variants of) base64. Return the length, or -1. */
static int onion_nonce_decode(const char *s, bool hex, unsigned char *out, size_t cap)
{
    size_t n = strlen(s), len = 0;
    const char *end = NULL;
    if (n == 0)
        return -1;
    if (hex)
        return sodium_hex2bin(out, cap, s, n, NULL, &len, &end) == 0 && end == s + n ? (int)len : -1;
    static const int variants[] = {sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
                                   sodium_base64_VARIANT_URLSAFE, sodium_base64_VARIANT_URLSAFE_NO_PADDING};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        if (sodium_base642bin(out, cap, s, n, NULL, &len, &end, variants[i]) == 0 && end == s + n)
            return (int)len;
    return -1;
}

int onion_nonce_parse(const char *text, struct onion_nonce *out, char *err, size_t errlen)
{
    unsigned char buf[2 * ONION_NONCE_MAX]; /* what 2 * ONION_NONCE_MAX characters can decode to, at most */
    memset(out, 0, sizeof *out);
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium cannot be initialised");
        return -1;
    }
    bool hex;
    const char *s = text;
    if (strncmp(text, "hex:", 4) == 0) {
        hex = true;
        s += 4;
    } else if (strncmp(text, "base64:", 7) == 0) {
        hex = false;
        s += 7;
    } else {
        hex = onion_is_hex(text);
    }
    const char *form = hex ? "hex" : "base64";
    /* Longer than the hex of the longest nonce: too long in either form; say so without decoding it. */
    if (strlen(s) > 2 * ONION_NONCE_MAX) {
        snprintf(err, errlen, "too long for a CA nonce (at most %d bytes)", ONION_NONCE_MAX);
        return -1;
    }
    int n = onion_nonce_decode(s, hex, buf, sizeof buf);
    if (n < 0) {
        if (s == text)
            snprintf(err, errlen,
                     "neither hex (an even number of the digits 0-9 a-f) nor base64 (RFC 4648, standard or "
                     "URL-safe alphabet)");
        else
            snprintf(err, errlen, "not valid %s after the prefix \"%s:\"", form, form);
        return -1;
    }
    if (n < ONION_NONCE_MIN || n > ONION_NONCE_MAX) {
        snprintf(err, errlen, "%d bytes once decoded as %s; a CA nonce has %d to %d bytes (at least 64 bits)%s", n,
                 form, ONION_NONCE_MIN, ONION_NONCE_MAX,
                 hex && s == text ? " (a base64 nonce made of hex digits only needs the prefix \"base64:\")" : "");
        return -1;
    }
    memcpy(out->bytes, buf, (size_t)n);
    out->len = (size_t)n;
    return 0;
}

/* ---- the CSR ------------------------------------------------------------------------------------------ */

/* Add the attribute `oid` holding one OCTET STRING of `n`'s bytes. Return 0, or -1. */
static int onion_csr_add_nonce(X509_REQ *req, const char *oid, const struct onion_nonce *n)
{
    ASN1_OBJECT *obj = OBJ_txt2obj(oid, 1);
    int ok = obj && X509_REQ_add1_attr_by_OBJ(req, obj, V_ASN1_OCTET_STRING, n->bytes, (int)n->len) == 1;
    ASN1_OBJECT_free(obj);
    return ok ? 0 : -1;
}

/* Append the DNS name `name` to `gens`. Return 0, or -1. */
static int onion_csr_add_dns(GENERAL_NAMES *gens, const char *name)
{
    GENERAL_NAME *gn = GENERAL_NAME_new();
    ASN1_IA5STRING *ia5 = ASN1_IA5STRING_new();
    if (!gn || !ia5 || !ASN1_STRING_set(ia5, name, (int)strlen(name))) {
        GENERAL_NAME_free(gn);
        ASN1_IA5STRING_free(ia5);
        return -1;
    }
    GENERAL_NAME_set0_value(gn, GEN_DNS, ia5);
    if (!sk_GENERAL_NAME_push(gens, gn)) {
        GENERAL_NAME_free(gn);
        return -1;
    }
    return 0;
}

/* The extensionRequest attribute: subjectAltName with the onion name(s). Return 0, or -1. */
static int onion_csr_add_san(X509_REQ *req, const char *address, bool wildcard)
{
    char name[ONION_ADDRESS_SIZE + 16];
    STACK_OF(X509_EXTENSION) *exts = NULL;
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    int ret = -1;
    if (!gens)
        return -1;
    snprintf(name, sizeof name, "%s.onion", address);
    if (onion_csr_add_dns(gens, name) < 0)
        goto done;
    snprintf(name, sizeof name, "*.%s.onion", address);
    if (wildcard && onion_csr_add_dns(gens, name) < 0)
        goto done;
    if (X509V3_add1_i2d(&exts, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) != 1 ||
        X509_REQ_add_extensions(req, exts) != 1)
        goto done;
    ret = 0;
done:
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    GENERAL_NAMES_free(gens);
    return ret;
}

/* Sign the request's CertificationRequestInfo with `key` and set signature and algorithm. */
static int onion_csr_sign(X509_REQ *req, const struct onion_key *key, char *err, size_t errlen)
{
    unsigned char *tbs = NULL, sig[ONION_SIGN_LEN];
    X509_ALGOR *alg = NULL;
    ASN1_BIT_STRING *bits = NULL;
    int ret = -1;

    int tbslen = i2d_re_X509_REQ_tbs(req, &tbs);
    if (tbslen <= 0) {
        snprintf(err, errlen, "OpenSSL could not encode the certification request");
        goto done;
    }
    if (onion_sign(key->secret_key, key->public_key, tbs, (size_t)tbslen, sig) < 0) {
        snprintf(err, errlen, "the secret key does not belong to the public key of %s.onion; not signing",
                 key->address);
        goto done;
    }
    /* RFC 8410 3: id-Ed25519, parameters absent. */
    if (!(alg = X509_ALGOR_new()) || !X509_ALGOR_set0(alg, OBJ_nid2obj(NID_ED25519), V_ASN1_UNDEF, NULL) ||
        !X509_REQ_set1_signature_algo(req, alg) || !(bits = ASN1_BIT_STRING_new()) ||
        !ASN1_BIT_STRING_set(bits, sig, sizeof sig))
        goto oom;
    /* All 512 bits count: without this flag OpenSSL would drop trailing zero bits of the last byte. */
    bits->flags &= ~(ASN1_STRING_FLAG_BITS_LEFT | 0x07);
    bits->flags |= ASN1_STRING_FLAG_BITS_LEFT;
    X509_REQ_set0_signature(req, bits);
    bits = NULL;
    ret = 0;
    goto done;
oom:
    snprintf(err, errlen, "OpenSSL could not set the request's signature");
done:
    OPENSSL_free(tbs);
    X509_ALGOR_free(alg);
    ASN1_BIT_STRING_free(bits);
    return ret;
}

/* The request as PEM, in a new string. */
static char *onion_csr_pem(X509_REQ *req)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *data = NULL, *out = NULL;
    if (bio && PEM_write_bio_X509_REQ(bio, req) == 1) {
        long n = BIO_get_mem_data(bio, &data);
        if (n > 0 && (out = malloc((size_t)n + 1))) {
            memcpy(out, data, (size_t)n);
            out[n] = '\0';
        }
    }
    BIO_free(bio);
    return out;
}

/* Read `pem` back and verify its signature with `pub`, which must also be its public key. */
static int onion_csr_check_pem(const char *pem, EVP_PKEY *pub)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    X509_REQ *back = bio ? PEM_read_bio_X509_REQ(bio, NULL, NULL, NULL) : NULL;
    int ok = back && EVP_PKEY_eq(X509_REQ_get0_pubkey(back), pub) == 1 && X509_REQ_verify(back, pub) == 1;
    X509_REQ_free(back);
    BIO_free(bio);
    return ok ? 0 : -1;
}

char *onion_csr_build(const struct onion_key *key, const struct onion_nonce *ca_nonce,
                      const struct onion_nonce *applicant_nonce, bool wildcard, char *err, size_t errlen)
{
    X509_REQ *req = NULL;
    EVP_PKEY *pub = NULL;
    char *pem = NULL;

    if (!key->has_secret) {
        snprintf(err, errlen, "no secret key loaded for %s.onion", key->address);
        return NULL;
    }
    if (ca_nonce->len < ONION_NONCE_MIN || ca_nonce->len > ONION_NONCE_MAX ||
        applicant_nonce->len < ONION_NONCE_MIN || applicant_nonce->len > ONION_NONCE_MAX) {
        snprintf(err, errlen, "a signing nonce must have %d to %d bytes", ONION_NONCE_MIN, ONION_NONCE_MAX);
        return NULL;
    }
    if (!(req = X509_REQ_new()) || !X509_REQ_set_version(req, X509_REQ_VERSION_1) ||
        !(pub = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, key->public_key, 32)) ||
        !X509_REQ_set_pubkey(req, pub) ||
        onion_csr_add_nonce(req, ONION_OID_CA_SIGNING_NONCE, ca_nonce) < 0 ||
        onion_csr_add_nonce(req, ONION_OID_APPLICANT_SIGNING_NONCE, applicant_nonce) < 0 ||
        onion_csr_add_san(req, key->address, wildcard) < 0) {
        snprintf(err, errlen, "OpenSSL could not build the certification request");
        goto done;
    }
    if (onion_csr_sign(req, key, err, errlen) < 0)
        goto done;
    if (!(pem = onion_csr_pem(req))) {
        snprintf(err, errlen, "OpenSSL could not write the request as PEM");
        goto done;
    }
    /* Check what the CA will get: the PEM read back, not the object in memory (which may hold bits that
     * its encoding drops). */
    if (onion_csr_check_pem(pem, pub) < 0) {
        snprintf(err, errlen, "OpenSSL does not accept the finished request's signature; not handing it out");
        free(pem);
        pem = NULL;
    }
done:
    EVP_PKEY_free(pub);
    X509_REQ_free(req);
    return pem;
}

/* ---- in-band CAA --------------------------------------------------------------------------------------- */

static bool onion_ascii_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A CAA value character: printable ASCII without the two a zone file would have to escape. */
static bool onion_caa_value_char(char c)
{
    return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\';
}

int onion_caa_record_parse(const char *text, char out[ONION_CAA_RECORD_MAX], char *err, size_t errlen)
{
    const char *p = text;
    unsigned flags = 0;
    out[0] = '\0';
    if (strncmp(p, "caa ", 4) == 0) /* the descriptor's own form, as RFC 9799's examples show it */
        p += 4;
    if (onion_ascii_digit(*p)) {
        size_t n = 0;
        while (n < 4 && onion_ascii_digit(p[n]))
            flags = flags * 10 + (unsigned)(p[n++] - '0');
        if (n > 3 || flags > 255 || p[n] != ' ') {
            snprintf(err, errlen, "flags: must be a number 0-255 followed by the tag (e.g. 0 issue \"harica.gr\")");
            return -1;
        }
        p += n + 1;
    }
    size_t tag = 0;
    while (onion_ascii_digit(p[tag]) || (p[tag] >= 'a' && p[tag] <= 'z') || (p[tag] >= 'A' && p[tag] <= 'Z'))
        tag++;
    if (tag == 0 || tag > 15 || p[tag] != ' ') {
        snprintf(err, errlen, "tag: must be 1-15 letters or digits (issue, issuewild, iodef ...) followed by a "
                              "space and the value");
        return -1;
    }
    const char *v = p + tag + 1;
    size_t vlen = strlen(v);
    if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"') {
        v++;
        vlen -= 2;
    } else if (vlen == 0) {
        snprintf(err, errlen, "value: missing (write \"\" for an empty one)");
        return -1;
    }
    for (size_t i = 0; i < vlen; i++)
        if (!onion_caa_value_char(v[i])) {
            snprintf(err, errlen, "value: character %zu is not printable ASCII or is '\"' or '\\'", i + 1);
            return -1;
        }
    int n = snprintf(out, ONION_CAA_RECORD_MAX, "caa %u %.*s \"%.*s\"", flags, (int)tag, p, (int)vlen, v);
    if (n < 0 || n >= ONION_CAA_RECORD_MAX) {
        out[0] = '\0';
        snprintf(err, errlen, "too long (at most %d characters)", ONION_CAA_RECORD_MAX - 1);
        return -1;
    }
    return 0;
}

int onion_caa_signed_text(int64_t expiry, const char *caa, char *out, size_t cap)
{
    /* RFC 9799 6.4: "onion-caa|" || expiry (decimal, no leading zeros) || "|" || caa, in UTF-8. */
    int n = snprintf(out, cap, "onion-caa|%" PRId64 "|%s", expiry, caa);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

json_t *onion_caa_build(const struct onion_key *key, const char *caa, int64_t expiry, char *err, size_t errlen)
{
    unsigned char sig[ONION_SIGN_LEN];
    char b64[sodium_base64_ENCODED_LEN(ONION_SIGN_LEN, sodium_base64_VARIANT_URLSAFE)];
    json_t *o = NULL;

    if (!key->has_secret) {
        snprintf(err, errlen, "no secret key loaded for %s.onion", key->address);
        return NULL;
    }
    if (expiry <= 0) {
        snprintf(err, errlen, "expiry: must be a positive Unix time");
        return NULL;
    }
    size_t cap = strlen(caa) + 48;
    char *text = malloc(cap);
    int n = text ? onion_caa_signed_text(expiry, caa, text, cap) : -1;
    if (n < 0) {
        snprintf(err, errlen, "out of memory");
    } else if (sodium_init() < 0 ||
               onion_sign(key->secret_key, key->public_key, (const unsigned char *)text, (size_t)n, sig) < 0) {
        snprintf(err, errlen, "the secret key does not belong to the public key of %s.onion; not signing",
                 key->address);
    } else {
        /* RFC 9799 6.4: "encoded using base64url"; its example keeps the padding. */
        sodium_bin2base64(b64, sizeof b64, sig, sizeof sig, sodium_base64_VARIANT_URLSAFE);
        o = json_pack("{s:s, s:I, s:s}", "caa", caa, "expiry", (json_int_t)expiry, "signature", b64);
        if (!o)
            snprintf(err, errlen, "the CAA records are not valid UTF-8 text");
    }
    free(text);
    return o;
}
