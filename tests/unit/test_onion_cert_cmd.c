/* test_onion_cert_cmd.c — unit tests for sidecar/cli/onion_cert_cmd.c: `onionfront onion-csr` and `onion-caa`.
 *
 * Why: these commands read the service's secret key; a refusal must happen before anything is read or
 * written, the output must be what a CA checks (the service's own key and address), and an Onionbalance
 * instance must not hand out a proof for an address visitors never use.
 *
 * Covers: onion-csr to standard output (PEM that OpenSSL verifies with the service's key, its address in
 * the subjectAltName, the CA's nonce, a 16-byte applicant nonce that differs between runs) and to --out
 * FILE / --out=FILE (mode 0644, an existing file replaced whole); the frontend of an Onionbalance master
 * is served, an instance refused with the reason; an unknown service, a service without a key yet, a bad
 * or short nonce, a bad --out each exit 1 with a clear message and write nothing (no state directory
 * created, no file); usage errors exit 2; onion-caa's JSON (records in descriptor form joined by "\n",
 * expiry now + 8 h by default or --expiry, a signature OpenSSL verifies over "onion-caa|expiry|caa"); its
 * bad --caa, --expiry and count; no key bytes in any output. A service with client authorization or an
 * anonymous one is refused by both commands, saying why (Certificate Transparency publishes the address)
 * and which flag says otherwise, and served with --publish-address-in-ct-logs; a command that read a key
 * leaves its process undumpable with a core limit of 0. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#include "sidecar/core/fsutil.h"
#include "sidecar/identity/keys.h"
#include "sidecar/cli/onion_cert_cmd.h"
#include "sidecar/identity/onion_csr.h"
#include "tests/fake/tmpdir.h"

#define MASTER "25njqamcweflpvkl73j4szahhihoc4xt3ktcgjnpaingr5yhkenl5sid"
#define NOW ((time_t)1800000000)

struct st {
    char dir[64], conf[128], state[128];
    FILE *out, *err;
    struct onion_key key; /* web's key, once made */
};

static int setup(void **state)
{
    struct st *s = calloc(1, sizeof(*s));
    if (!s || tmpdir_make(s->dir, sizeof(s->dir), "test_onion_cert_cmd") < 0)
        return -1;
    snprintf(s->conf, sizeof(s->conf), "%s/c.json", s->dir);
    snprintf(s->state, sizeof(s->state), "%s/state", s->dir);
    FILE *f = fopen(s->conf, "w");
    if (!f)
        return -1;
    fprintf(f,
            "{\"state_dir\": \"%s\", \"run_dir\": \"%s/run\", \"services\": ["
            "{\"name\": \"web\", \"ports\": [{\"virtual\": 80, \"target\": \"127.0.0.1:8080\"}]},"
            "{\"name\": \"fresh\", \"ports\": [{\"virtual\": 80, \"target\": \"127.0.0.1:8080\"}]},"
            "{\"name\": \"inst\", \"ports\": [{\"virtual\": 80, \"target\": \"127.0.0.1:8080\"}],"
            " \"onionbalance\": {\"master_address\": \"" MASTER ".onion\"}},"
            "{\"name\": \"front\", \"onionbalance\": {\"frontend\": true, \"instances\": [\"" MASTER "\"]}},"
            "{\"name\": \"priv\", \"ports\": [{\"virtual\": 80, \"target\": \"127.0.0.1:8080\"}],"
            " \"client_auth\": [{\"name\": \"alice\", \"public_key\": \"N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ\"}]},"
            "{\"name\": \"anon\", \"mode\": \"anonymous\","
            " \"ports\": [{\"virtual\": 80, \"target\": \"127.0.0.1:8080\"}]}]}",
            s->state, s->dir);
    fclose(f);
    s->out = tmpfile();
    s->err = tmpfile();
    *state = s;
    return s->out && s->err ? 0 : -1;
}

static int teardown(void **state)
{
    struct st *s = *state;
    fclose(s->out);
    fclose(s->err);
    onion_key_clear(&s->key);
    int rc = tmpdir_remove(s->dir);
    free(s);
    return rc;
}

/* What `f` got since the last call (and forget it). */
static const char *drain(FILE *f)
{
    static char buf[2][16384];
    static int which;
    char *b = buf[which ^= 1];
    fflush(f);
    rewind(f);
    size_t n = fread(b, 1, sizeof(buf[0]) - 1, f);
    b[n] = '\0';
    rewind(f);
    assert_int_equal(ftruncate(fileno(f), 0), 0);
    return b;
}

static void assert_has(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("\"%s\" lacks \"%s\"", text, want);
}

/* Give service `name` (of `mode`) a key the way onionfront does at first start. */
static void make_key_mode(struct st *s, const char *name, enum service_mode mode, struct onion_key *k)
{
    char keys[192], dir[256], err[1024];
    bool created;
    snprintf(keys, sizeof keys, "%s/keys", s->state);
    snprintf(dir, sizeof dir, "%s/%s", keys, name);
    if (fs_ensure_private_dir(s->state, NULL, err, sizeof err) < 0 ||
        fs_ensure_private_dir(keys, NULL, err, sizeof err) < 0 ||
        keys_load_or_create_mode(dir, mode, k, &created, err, sizeof err) < 0)
        fail_msg("%s", err);
}

static void make_key(struct st *s, const char *name, struct onion_key *k)
{
    make_key_mode(s, name, SERVICE_MODE_SINGLE, k);
}

static int run_csr(struct st *s, int argc, const char *const *argv)
{
    return onion_cert_cmd_csr(s->conf, argc, (char **)argv, s->out, s->err);
}

static int run_caa(struct st *s, int argc, const char *const *argv)
{
    return onion_cert_cmd_caa(s->conf, argc, (char **)argv, NOW, s->out, s->err);
}

static bool exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* The secret key's bytes appear nowhere in `text` (as raw bytes, hex or base64). */
static void assert_no_secret(const struct onion_key *k, const char *text)
{
    char hex[129], b64[sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_ORIGINAL)];
    assert_null(memmem(text, strlen(text), k->secret_key, 8));
    sodium_bin2hex(hex, sizeof hex, k->secret_key, 32);
    assert_null(strstr(text, hex));
    sodium_bin2base64(b64, sizeof b64, k->secret_key, 32, sodium_base64_VARIANT_ORIGINAL);
    b64[20] = '\0';
    assert_null(strstr(text, b64));
}

/* Parse `pem`, verify it with `k`'s public key, check SAN and CA nonce; put its applicant nonce in `app`. */
static void check_csr(const char *pem, const struct onion_key *k, const char *ca_nonce, size_t ca_len,
                      bool wildcard, unsigned char app[16])
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509_REQ *r = PEM_read_bio_X509_REQ(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(r);
    EVP_PKEY *pub = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, k->public_key, 32);
    assert_int_equal(X509_REQ_verify(r, pub), 1);
    EVP_PKEY_free(pub);
    for (int which = 0; which < 2; which++) {
        ASN1_OBJECT *obj = OBJ_txt2obj(which ? ONION_OID_APPLICANT_SIGNING_NONCE : ONION_OID_CA_SIGNING_NONCE, 1);
        int idx = X509_REQ_get_attr_by_OBJ(r, obj, -1);
        assert_true(idx >= 0);
        ASN1_TYPE *t = X509_ATTRIBUTE_get0_type(X509_REQ_get_attr(r, idx), 0);
        assert_int_equal(ASN1_TYPE_get(t), V_ASN1_OCTET_STRING);
        const ASN1_OCTET_STRING *os = t->value.octet_string;
        if (which) {
            assert_int_equal(ASN1_STRING_length(os), 16);
            memcpy(app, ASN1_STRING_get0_data(os), 16);
        } else {
            assert_int_equal(ASN1_STRING_length(os), ca_len);
            assert_memory_equal(ASN1_STRING_get0_data(os), ca_nonce, ca_len);
        }
        ASN1_OBJECT_free(obj);
    }
    STACK_OF(X509_EXTENSION) *exts = X509_REQ_get_extensions(r);
    GENERAL_NAMES *gens = X509V3_get_d2i(exts, NID_subject_alt_name, NULL, NULL);
    assert_non_null(gens);
    assert_int_equal(sk_GENERAL_NAME_num(gens), wildcard ? 2 : 1);
    char want[96];
    snprintf(want, sizeof want, "%s.onion", k->address);
    assert_string_equal((const char *)ASN1_STRING_get0_data(sk_GENERAL_NAME_value(gens, 0)->d.dNSName), want);
    GENERAL_NAMES_free(gens);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    X509_REQ_free(r);
}

static void test_csr_stdout(void **state)
{
    struct st *s = *state;
    unsigned char app1[16], app2[16];
    make_key(s, "web", &s->key);
    const char *argv[] = {"web", "--ca-nonce", "4841524943413C336F6E696F6E73"};
    assert_int_equal(run_csr(s, 3, argv), 0);
    const char *pem = drain(s->out);
    assert_has(pem, "-----BEGIN CERTIFICATE REQUEST-----");
    check_csr(pem, &s->key, "HARICA<3onions", 14, false, app1);
    assert_no_secret(&s->key, pem);
    assert_no_secret(&s->key, drain(s->err));

    const char *argv2[] = {"--wildcard", "--ca-nonce=base64:bI6/MRqV4gw=", "web"};
    assert_int_equal(run_csr(s, 3, argv2), 0);
    check_csr(drain(s->out), &s->key, "\x6c\x8e\xbf\x31\x1a\x95\xe2\x0c", 8, true, app2);
    assert_memory_not_equal(app1, app2, 16); /* fresh randomness each time */
}

static void test_csr_out_file(void **state)
{
    struct st *s = *state;
    char file[128], buf[8192];
    unsigned char app[16];
    struct stat st;
    make_key(s, "web", &s->key);
    snprintf(file, sizeof file, "%s/web.csr", s->dir);
    FILE *f = fopen(file, "w"); /* an older, longer file: replaced whole */
    assert_non_null(f);
    for (int i = 0; i < 300; i++)
        fputs("old old old old old old old old\n", f);
    fclose(f);
    const char *argv[] = {"web", "--out", file, "--ca-nonce", "hex:0011223344556677"};
    assert_int_equal(run_csr(s, 5, argv), 0);
    const char *o = drain(s->out);
    assert_has(o, s->key.address);
    assert_has(o, file);
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    f = fopen(file, "r");
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_null(strstr(buf, "old"));
    check_csr(buf, &s->key, "\x00\x11\x22\x33\x44\x55\x66\x77", 8, false, app);

    snprintf(file, sizeof file, "--out=%s/web2.csr", s->dir);
    const char *argv2[] = {"web", file, "--ca-nonce", "0011223344556677"};
    assert_int_equal(run_csr(s, 4, argv2), 0);
    snprintf(file, sizeof file, "%s/web2.csr", s->dir);
    assert_true(exists(file));
}

static void test_csr_frontend_served_instance_refused(void **state)
{
    struct st *s = *state;
    struct onion_key k;
    unsigned char app[16];
    make_key(s, "front", &k);
    const char *argv[] = {"front", "--ca-nonce", "0011223344556677"};
    assert_int_equal(run_csr(s, 3, argv), 0);
    check_csr(drain(s->out), &k, "\x00\x11\x22\x33\x44\x55\x66\x77", 8, false, app);
    onion_key_clear(&k);

    make_key(s, "inst", &k);
    const char *argv2[] = {"inst", "--ca-nonce", "0011223344556677"};
    assert_int_equal(run_csr(s, 3, argv2), 1);
    assert_string_equal(drain(s->out), "");
    const char *e = drain(s->err);
    assert_has(e, "service inst is an Onionbalance instance of " MASTER ".onion");
    assert_has(e, "only the master's key can prove control");
    const char *argv3[] = {"inst", "--caa", "issue \"harica.gr\""};
    assert_int_equal(run_caa(s, 3, argv3), 1);
    assert_string_equal(drain(s->out), "");
    assert_has(drain(s->err), "Onionbalance instance");
    onion_key_clear(&k);
}

/* A certificate is published in CT logs with its name: a private or anonymous service's address only with
 * the operator's explicit flag. */
static void test_private_services_need_the_flag(void **state)
{
    struct st *s = *state;
    struct onion_key k;
    unsigned char app[16];
    static const char *const names[] = {"priv", "anon"};
    static const char *const kinds[] = {"client authorization", "anonymous (location-hidden)"};
    for (size_t i = 0; i < 2; i++) {
        make_key_mode(s, names[i], i == 0 ? SERVICE_MODE_SINGLE : SERVICE_MODE_ANONYMOUS, &k);
        const char *argv[] = {names[i], "--ca-nonce", "0011223344556677"};
        assert_int_equal(run_csr(s, 3, argv), 1);
        assert_string_equal(drain(s->out), "");
        const char *e = drain(s->err);
        assert_has(e, "refusing: service ");
        assert_has(e, kinds[i]);
        assert_has(e, "Certificate Transparency logs, which publish its .onion address");
        assert_has(e, "--publish-address-in-ct-logs");
        const char *caa[] = {names[i], "--caa", "issue \"harica.gr\""};
        assert_int_equal(run_caa(s, 3, caa), 1);
        assert_string_equal(drain(s->out), "");
        assert_has(drain(s->err), "--publish-address-in-ct-logs");

        const char *ok[] = {names[i], "--ca-nonce", "0011223344556677", "--publish-address-in-ct-logs"};
        if (run_csr(s, 4, ok) != 0)
            fail_msg("onion-csr %s with the flag: %s", names[i], drain(s->err));
        check_csr(drain(s->out), &k, "\x00\x11\x22\x33\x44\x55\x66\x77", 8, false, app);
        const char *caa_ok[] = {"--publish-address-in-ct-logs", names[i], "--caa", "issue \"harica.gr\""};
        assert_int_equal(run_caa(s, 4, caa_ok), 0);
        assert_has(drain(s->out), "\"signature\"");
        drain(s->err);
        onion_key_clear(&k);
    }
}

/* Having held a secret key, the process can neither dump core nor be read by ptrace (as the daemon). */
static void test_key_commands_protect_memory(void **state)
{
    struct st *s = *state;
    make_key(s, "web", &s->key);
    const char *argv[] = {"web", "--ca-nonce", "0011223344556677"};
    assert_int_equal(run_csr(s, 3, argv), 0);
    assert_int_equal(prctl(PR_GET_DUMPABLE), 0);
    struct rlimit core;
    assert_int_equal(getrlimit(RLIMIT_CORE, &core), 0);
    assert_int_equal(core.rlim_cur, 0);
}

/* Refusals: exit 1, a message naming what is wrong, nothing written anywhere. */
static void test_csr_refusals_write_nothing(void **state)
{
    struct st *s = *state;
    char out_file[128], bad_dir[160];
    snprintf(out_file, sizeof out_file, "%s/x.csr", s->dir);
    snprintf(bad_dir, sizeof bad_dir, "%s/no/such/dir/x.csr", s->dir);
    static const struct {
        const char *service, *nonce, *want;
        bool bad_out;
    } cases[] = {
        {"nosuch", "0011223344556677", "no service named \"nosuch\"", false},
        {"fresh", "0011223344556677", "service fresh has no key yet", false},
        {"web", "00112233445566", "--ca-nonce: 7 bytes once decoded as hex", false},
        {"web", "not a nonce!", "--ca-nonce: neither hex", false},
        {"web", "base64:ab!c", "--ca-nonce: not valid base64", false},
        {"web", "base64:abc", "--ca-nonce: 2 bytes once decoded as base64", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *argv[] = {cases[i].service, "--ca-nonce", cases[i].nonce, "--out", out_file};
        print_message("%s %s\n", cases[i].service, cases[i].nonce);
        assert_int_equal(run_csr(s, 5, argv), 1);
        assert_has(drain(s->err), cases[i].want);
        assert_string_equal(drain(s->out), "");
        assert_false(exists(out_file));
        assert_false(exists(s->state)); /* not even the state directory */
    }
    /* With a key: a bad --out is refused and leaves nothing behind either. */
    make_key(s, "web", &s->key);
    char dir_only[160];
    snprintf(dir_only, sizeof dir_only, "%s/", s->dir);
    const char *bad_outs[] = {bad_dir, dir_only};
    for (size_t i = 0; i < 2; i++) {
        const char *argv[] = {"web", "--ca-nonce", "0011223344556677", "--out", bad_outs[i]};
        assert_int_equal(run_csr(s, 5, argv), 1);
        assert_has(drain(s->err), bad_outs[i]);
        assert_string_equal(drain(s->out), "");
    }
    snprintf(bad_dir, sizeof bad_dir, "%s/no", s->dir);
    assert_false(exists(bad_dir));
}

static void test_usage_errors(void **state)
{
    struct st *s = *state;
    static const struct {
        int argc;
        const char *argv[5], *want;
        bool caa;
    } cases[] = {
        {1, {"web"}, "--ca-nonce is required", false},
        {2, {"--ca-nonce", "0011223344556677"}, "which service?", false},
        {2, {"web", "--ca-nonce"}, "--ca-nonce needs a value", false},
        {5, {"web", "--ca-nonce", "0011223344556677", "--ca-nonce", "0011223344556677"}, "given twice", false},
        {4, {"web", "--ca-nonce", "0011223344556677", "--wild"}, "unknown option --wild", false},
        {4, {"web", "other", "--ca-nonce", "0011223344556677"}, "unexpected argument other", false},
        {1, {"web"}, "--caa is required", true},
        {2, {"web", "--caa"}, "--caa needs a value", true},
        {4, {"web", "--caa", "issue x", "web2"}, "unexpected argument web2", true},
        {4, {"web", "--caa", "issue x", "--out"}, "unknown option --out", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("%s\n", cases[i].want);
        assert_int_equal(cases[i].caa ? run_caa(s, cases[i].argc, cases[i].argv)
                                      : run_csr(s, cases[i].argc, cases[i].argv),
                         2);
        const char *e = drain(s->err);
        assert_has(e, cases[i].want);
        if (!strstr(e, "needs a value"))
            assert_has(e, cases[i].caa ? "usage: onionfront [-c CONFIG] onion-caa SERVICE"
                                       : "usage: onionfront [-c CONFIG] onion-csr SERVICE");
        assert_string_equal(drain(s->out), "");
    }
}

static void test_caa(void **state)
{
    struct st *s = *state;
    make_key(s, "web", &s->key);
    const char *argv[] = {"web", "--caa", "issue \"harica.gr\"", "--caa", "128 iodef \"mailto:security@example.com\""};
    assert_int_equal(run_caa(s, 5, argv), 0);
    const char *o = drain(s->out);
    assert_no_secret(&s->key, o);
    assert_has(drain(s->err), s->key.address);
    json_error_t je;
    json_t *j = json_loads(o, 0, &je);
    assert_non_null(j);
    const char *caa = NULL, *sig64 = NULL;
    json_int_t expiry = 0;
    assert_int_equal(json_unpack_ex(j, &je, JSON_STRICT, "{s:s, s:I, s:s}", "caa", &caa, "expiry", &expiry,
                                    "signature", &sig64),
                     0);
    assert_string_equal(caa, "caa 0 issue \"harica.gr\"\ncaa 128 iodef \"mailto:security@example.com\"");
    assert_int_equal(expiry, (json_int_t)NOW + 8 * 3600);
    unsigned char sig[64];
    size_t sl = 0;
    assert_int_equal(sodium_base642bin(sig, sizeof sig, sig64, strlen(sig64), NULL, &sl, NULL,
                                       sodium_base64_VARIANT_URLSAFE),
                     0);
    assert_int_equal(sl, 64);
    char text[512];
    int n = snprintf(text, sizeof text, "onion-caa|%lld|%s", (long long)expiry, caa);
    EVP_PKEY *pub = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, s->key.public_key, 32);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pub), 1);
    assert_int_equal(EVP_DigestVerify(ctx, sig, 64, (const unsigned char *)text, (size_t)n), 1);
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(pub);
    json_decref(j);

    const char *argv2[] = {"web", "--expiry", "60", "--caa=issue harica.gr"};
    assert_int_equal(run_caa(s, 4, argv2), 0);
    j = json_loads(drain(s->out), 0, &je);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "expiry")), (json_int_t)NOW + 60);
    assert_string_equal(json_string_value(json_object_get(j, "caa")), "caa 0 issue \"harica.gr\"");
    json_decref(j);
    drain(s->err);
}

static void test_caa_refusals(void **state)
{
    struct st *s = *state;
    static const struct {
        const char *a, *b, *want;
    } cases[] = {
        {"--expiry", "0", "--expiry 0: must be a number of seconds, 1-28800"},
        {"--expiry", "28801", "--expiry 28801:"},
        {"--expiry", "-5", "--expiry -5:"},
        {"--expiry", "8h", "--expiry 8h:"},
        {"--caa", "256 issue \"x\"", "--caa 256 issue \"x\": flags:"},
    };
    make_key(s, "web", &s->key);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *argv[] = {"web", "--caa", "issue \"harica.gr\"", cases[i].a, cases[i].b};
        assert_int_equal(run_caa(s, 5, argv), 1);
        assert_has(drain(s->err), cases[i].want);
        assert_string_equal(drain(s->out), "");
    }
    const char *argv[2 * ONION_CERT_CMD_MAX_CAA + 3];
    int argc = 0;
    argv[argc++] = "web";
    for (int i = 0; i <= ONION_CERT_CMD_MAX_CAA; i++) {
        argv[argc++] = "--caa";
        argv[argc++] = "issue x";
    }
    assert_int_equal(run_caa(s, argc, argv), 1);
    assert_has(drain(s->err), "at most 16 --caa records");
    const char *argv2[] = {"fresh", "--caa", "issue x"};
    assert_int_equal(run_caa(s, 3, argv2), 1);
    assert_has(drain(s->err), "service fresh has no key yet");
    assert_string_equal(drain(s->out), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_csr_stdout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csr_out_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csr_frontend_served_instance_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csr_refusals_write_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_caa, setup, teardown),
        cmocka_unit_test_setup_teardown(test_caa_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_services_need_the_flag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_commands_protect_memory, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
