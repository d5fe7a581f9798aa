/* test_keys.c — unit tests for sidecar/identity/keys.c (the address itself: test_onion_address.c): create -> load
 * round trips, tor's file format (fixtures taken from a real tor 0.4.9.11 run), refusal of bad
 * headers, short/long files, mismatched hostname or key pair, loose permissions, the anonymity rule,
 * and import.
 *
 * Fixtures: TOR_KEY_* is a HiddenServiceDir key that Debian's tor 0.4.9.11 generated (DisableNetwork
 * 1, never published); TOR_KEY2_* another one. RFC8032_* is RFC 8032 7.1 TEST 1 (seed 9d61b1...)
 * expanded with SHA-512 + clamping outside this code (Python hashlib); its address is tor's own
 * unit-test vector (test_hs_common.c, test_build_address). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/identity/keys.h"
#include "tests/fake/tmpdir.h"

static const unsigned char TOR_KEY_PUB[32] = {
    0x86, 0xa8, 0x30, 0x09, 0x07, 0xa7, 0xaa, 0x91, 0x94, 0x2a, 0x20, 0xd4, 0xc2, 0xd4, 0x92, 0xcc,
    0x37, 0x50, 0xd9, 0xcf, 0x92, 0xf5, 0x54, 0xec, 0x29, 0xe4, 0x76, 0x6c, 0x00, 0x68, 0xd9, 0xd9};
static const unsigned char TOR_KEY_SEC[64] = {
    0xd8, 0xad, 0x87, 0xbe, 0x84, 0x84, 0x09, 0xc9, 0xb2, 0xbf, 0x12, 0x6e, 0xa2, 0xee, 0x82, 0xb4,
    0x58, 0x35, 0xad, 0x02, 0x27, 0x59, 0x4f, 0x75, 0xc8, 0xc3, 0xd6, 0xee, 0xa5, 0x21, 0xbd, 0x4b,
    0xcf, 0xe2, 0x77, 0x10, 0x90, 0x40, 0xe6, 0x64, 0x72, 0x08, 0x9b, 0x6a, 0xba, 0x35, 0x84, 0x1a,
    0x4d, 0xf9, 0xae, 0x1d, 0x74, 0x3b, 0x97, 0xe3, 0x93, 0x67, 0xb8, 0x7e, 0x36, 0x4d, 0x72, 0xa6};
#define TOR_KEY_ADDR "q2udacihu6vjdfbkedkmfveszq3vbwopsl2vj3bj4r3gyadi3hmrq4yd"

static const unsigned char TOR_KEY2_PUB[32] = {
    0x04, 0xb8, 0xf2, 0x57, 0x88, 0x45, 0x49, 0x6f, 0xc8, 0xc3, 0xff, 0xa3, 0xbb, 0x57, 0x99, 0x39,
    0x31, 0x83, 0x3c, 0xba, 0x1d, 0x9f, 0x4a, 0x30, 0x60, 0x85, 0x15, 0xa0, 0xcd, 0x9c, 0xc3, 0x5d};
static const unsigned char TOR_KEY2_SEC[64] = {
    0xc0, 0x14, 0x93, 0x97, 0x29, 0x01, 0x50, 0xdb, 0xd1, 0x73, 0xd6, 0xbd, 0xf3, 0x98, 0xcd, 0x0a,
    0x51, 0xda, 0x20, 0x8d, 0xc0, 0xa8, 0xd8, 0x8e, 0xbc, 0xb2, 0xc7, 0x75, 0x2b, 0xb0, 0xd2, 0x67,
    0x94, 0x2a, 0x52, 0x90, 0x5e, 0x91, 0x2f, 0x8f, 0x1d, 0x2b, 0x83, 0xe7, 0x19, 0xae, 0xda, 0x5d,
    0xe8, 0x4f, 0xd8, 0x7e, 0xf0, 0xf8, 0x30, 0xbe, 0x36, 0xd4, 0xe0, 0x06, 0x86, 0x49, 0x38, 0x82};
#define TOR_KEY2_ADDR "as4pev4iivew7sgd76r3wv4zheyygpf2dwpuumdaquk2btm4ynoursqd"

static const unsigned char RFC8032_PUB[32] = {
    0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9, 0x64, 0x07, 0x3a,
    0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6, 0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a};
static const unsigned char RFC8032_SEC[64] = {
    0x30, 0x7c, 0x83, 0x86, 0x4f, 0x28, 0x33, 0xcb, 0x42, 0x7a, 0x2e, 0xf1, 0xc0, 0x0a, 0x01, 0x3c,
    0xfd, 0xff, 0x27, 0x68, 0xd9, 0x80, 0xc0, 0xa3, 0xa5, 0x20, 0xf0, 0x06, 0x90, 0x4d, 0xe9, 0x4f,
    0x9b, 0x4f, 0x0a, 0xfe, 0x28, 0x0b, 0x74, 0x6a, 0x77, 0x86, 0x84, 0xe7, 0x54, 0x42, 0x50, 0x20,
    0x57, 0xb7, 0x47, 0x3a, 0x03, 0xf0, 0x8f, 0x96, 0xf5, 0xa3, 0x8e, 0x92, 0x87, 0xe0, 0x1f, 0x8f};
#define RFC8032_ADDR "25njqamcweflpvkl73j4szahhihoc4xt3ktcgjnpaingr5yhkenl5sid"

/* Headers exactly as tor writes them: text, then NULs up to 32 bytes. */
static const char SEC_HDR[32] = "== ed25519v1-secret: type0 ==";
static const char PUB_HDR[32] = "== ed25519v1-public: type0 ==";

struct keys_state {
    char base[64];
    char dir[128]; /* base/svc: a key directory that does not exist yet */
};

static int setup(void **state)
{
    struct keys_state *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    if (tmpdir_make(s->base, sizeof s->base, "test_keys") < 0) {
        free(s);
        return -1;
    }
    snprintf(s->dir, sizeof s->dir, "%s/svc", s->base);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    struct keys_state *s = *state;
    tmpdir_remove(s->base);
    free(s);
    return 0;
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static void put_file(const char *dir, const char *name, const void *data, size_t len, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static size_t get_file(const char *dir, const char *name, void *buf, size_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, cap);
    close(fd);
    assert_true(n >= 0);
    return (size_t)n;
}

static bool file_exists(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

static mode_t file_mode(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

/* Write a key directory the way tor (pub/sec files) or mkp224o do, with the given modes. */
static void make_key_dir(const char *dir, const unsigned char pub[32], const unsigned char sec[64],
                         const char *hostname, mode_t dmode, mode_t smode, mode_t pmode)
{
    unsigned char buf[96];
    if (mkdir(dir, 0700) < 0)
        assert_int_equal(errno, EEXIST);
    assert_int_equal(chmod(dir, dmode), 0);
    memcpy(buf, SEC_HDR, 32);
    memcpy(buf + 32, sec, 64);
    put_file(dir, "hs_ed25519_secret_key", buf, 96, smode);
    memcpy(buf, PUB_HDR, 32);
    memcpy(buf + 32, pub, 32);
    put_file(dir, "hs_ed25519_public_key", buf, 64, pmode);
    if (hostname)
        put_file(dir, "hostname", hostname, strlen(hostname), pmode);
}

static void make_tor_dir(const char *dir)
{
    make_key_dir(dir, TOR_KEY_PUB, TOR_KEY_SEC, TOR_KEY_ADDR ".onion\n", 0700, 0600, 0600);
}

static void assert_err_has(const char *err, const char *a, const char *b)
{
    if (a && !strstr(err, a))
        fail_msg("error \"%s\" does not contain \"%s\"", err, a);
    if (b && !strstr(err, b))
        fail_msg("error \"%s\" does not contain \"%s\"", err, b);
}

static void assert_no_secret_in(const char *err)
{
    /* The error must not contain key bytes: check the raw secret is not a substring. */
    assert_null(memmem(err, strlen(err), TOR_KEY_SEC, 8));
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_create_then_load(void **state)
{
    struct keys_state *s = *state;
    struct onion_key k, k2;
    char err[1024], host[128];
    unsigned char buf[128];
    bool created = false;

    assert_int_equal(keys_load_or_create(s->dir, &k, &created, err, sizeof err), 0);
    assert_true(created);
    assert_true(k.has_secret);
    assert_int_equal(strlen(k.address), ONION_ADDRESS_LEN);

    /* tor's format on disk, private modes. */
    assert_int_equal(file_mode(s->base, "svc"), 0700);
    assert_int_equal(file_mode(s->dir, "hs_ed25519_secret_key"), 0600);
    assert_int_equal(file_mode(s->dir, "hs_ed25519_public_key"), 0600);
    assert_int_equal(file_mode(s->dir, "hostname"), 0600);
    assert_int_equal(file_mode(s->dir, "onion_service_non_anonymous"), 0600);
    assert_int_equal(get_file(s->dir, "onion_service_non_anonymous", buf, sizeof buf), 0);
    assert_int_equal(get_file(s->dir, "hs_ed25519_secret_key", buf, sizeof buf), 96);
    assert_memory_equal(buf, SEC_HDR, 32);
    assert_memory_equal(buf + 32, k.secret_key, 64);
    /* Clamped scalar, as SHA-512 expansion leaves it. */
    assert_int_equal(buf[32] & 7, 0);
    assert_int_equal(buf[63] & 0xc0, 0x40);
    assert_int_equal(get_file(s->dir, "hs_ed25519_public_key", buf, sizeof buf), 64);
    assert_memory_equal(buf, PUB_HDR, 32);
    assert_memory_equal(buf + 32, k.public_key, 32);
    size_t n = get_file(s->dir, "hostname", host, sizeof host - 1);
    host[n] = '\0';
    char want[128];
    snprintf(want, sizeof want, "%s.onion\n", k.address);
    assert_string_equal(host, want);
    char addr[ONION_ADDRESS_SIZE];
    assert_int_equal(onion_address_from_pubkey(k.public_key, addr), 0);
    assert_string_equal(addr, k.address);

    /* Load gives the same key; load_or_create does not create again. */
    assert_int_equal(keys_load(s->dir, &k2, err, sizeof err), 0);
    assert_string_equal(k2.address, k.address);
    assert_memory_equal(k2.public_key, k.public_key, 32);
    assert_memory_equal(k2.secret_key, k.secret_key, 64);
    onion_key_clear(&k2);
    assert_int_equal(keys_load_or_create(s->dir, &k2, &created, err, sizeof err), 0);
    assert_false(created);
    assert_string_equal(k2.address, k.address);
    onion_key_clear(&k2);
    onion_key_clear(&k);
}

static void test_create_gives_new_keys(void **state)
{
    struct keys_state *s = *state;
    struct onion_key a, b;
    char err[1024], d2[192];
    bool created;

    snprintf(d2, sizeof d2, "%s/other", s->base);
    assert_int_equal(keys_load_or_create(s->dir, &a, &created, err, sizeof err), 0);
    assert_int_equal(keys_load_or_create(d2, &b, &created, err, sizeof err), 0);
    assert_string_not_equal(a.address, b.address);
    assert_memory_not_equal(a.secret_key, b.secret_key, 64);
    onion_key_clear(&a);
    onion_key_clear(&b);
}

/* Key directories written by tor 0.4.9.11 and by hand from RFC 8032 load with the right address, and
 * with or without hostname / its newline. A never-used directory gets the marker. */
static void test_load_known_keys(void **state)
{
    static const struct {
        const unsigned char *pub, *sec;
        const char *hostname;
        const char *addr;
    } cases[] = {
        {TOR_KEY_PUB, TOR_KEY_SEC, TOR_KEY_ADDR ".onion\n", TOR_KEY_ADDR},
        {TOR_KEY_PUB, TOR_KEY_SEC, TOR_KEY_ADDR ".onion", TOR_KEY_ADDR},
        {TOR_KEY2_PUB, TOR_KEY2_SEC, NULL, TOR_KEY2_ADDR},
        {RFC8032_PUB, RFC8032_SEC, RFC8032_ADDR ".onion\n", RFC8032_ADDR},
    };
    struct keys_state *s = *state;
    struct onion_key k;
    char err[1024], dir[192];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(dir, sizeof dir, "%s/k%zu", s->base, i);
        make_key_dir(dir, cases[i].pub, cases[i].sec, cases[i].hostname, 0700, 0600, 0600);
        assert_false(file_exists(dir, "onion_service_non_anonymous"));
        if (keys_load(dir, &k, err, sizeof err) != 0)
            fail_msg("case %zu: %s", i, err);
        assert_string_equal(k.address, cases[i].addr);
        assert_memory_equal(k.public_key, cases[i].pub, 32);
        assert_memory_equal(k.secret_key, cases[i].sec, 64);
        assert_true(k.has_secret);
        assert_true(file_exists(dir, "onion_service_non_anonymous"));
        onion_key_clear(&k);
    }
}

/* mkp224o writes the public key and hostname 0644: accepted (they are public, the dir is 0700). */
static void test_load_public_files_readable(void **state)
{
    struct keys_state *s = *state;
    struct onion_key k;
    char err[1024];

    make_key_dir(s->dir, TOR_KEY_PUB, TOR_KEY_SEC, TOR_KEY_ADDR ".onion\n", 0700, 0600, 0644);
    assert_int_equal(keys_load(s->dir, &k, err, sizeof err), 0);
    assert_string_equal(k.address, TOR_KEY_ADDR);
    onion_key_clear(&k);
}

enum corrupt { C_SEC_HEADER, C_PUB_HEADER, C_SEC_PAD, C_SEC_SHORT, C_SEC_LONG, C_SEC_EMPTY, C_PUB_SHORT,
               C_PUB_LONG, C_HOST_OTHER, C_HOST_GARBAGE, C_HOST_BINARY, C_HOST_TWO_NL, C_PAIR, C_UNCLAMPED,
               C_PUB_NONCANON };

static void test_load_refuses_bad_files(void **state)
{
    static const struct {
        enum corrupt what;
        const char *file; /* expected in the message (with the dir) */
        const char *want;
    } cases[] = {
        {C_SEC_HEADER, "hs_ed25519_secret_key", "bad header"},
        {C_PUB_HEADER, "hs_ed25519_public_key", "bad header"},
        {C_SEC_PAD, "hs_ed25519_secret_key", "bad header"},
        {C_SEC_SHORT, "hs_ed25519_secret_key", "95 bytes"},
        {C_SEC_LONG, "hs_ed25519_secret_key", "97 bytes"},
        {C_SEC_EMPTY, "hs_ed25519_secret_key", "0 bytes"},
        {C_PUB_SHORT, "hs_ed25519_public_key", "63 bytes"},
        {C_PUB_LONG, "hs_ed25519_public_key", "longer than"},
        {C_HOST_OTHER, "hostname", "does not name " TOR_KEY_ADDR ".onion"},
        {C_HOST_GARBAGE, "hostname", "does not name"},
        {C_HOST_BINARY, "hostname", "does not name"},
        {C_HOST_TWO_NL, "hostname", "does not name"},
        {C_PAIR, "hs_ed25519_public_key", "does not match"},
        {C_UNCLAMPED, "hs_ed25519_secret_key", "clamped"},
        {C_PUB_NONCANON, "hs_ed25519_public_key", "non-canonical"},
    };
    struct keys_state *s = *state;
    struct onion_key k;
    char err[1024], dir[192], path[256];
    unsigned char buf[128], pub[32], sec[64];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(dir, sizeof dir, "%s/bad%zu", s->base, i);
        make_tor_dir(dir);
        memcpy(pub, TOR_KEY_PUB, 32);
        memcpy(sec, TOR_KEY_SEC, 64);
        switch (cases[i].what) {
        case C_SEC_HEADER:
            memcpy(buf, SEC_HDR, 32);
            buf[3] = 'E';
            memcpy(buf + 32, sec, 64);
            put_file(dir, "hs_ed25519_secret_key", buf, 96, 0600);
            break;
        case C_PUB_HEADER:
            memcpy(buf, SEC_HDR, 32); /* a secret header on the public key */
            memcpy(buf + 32, pub, 32);
            put_file(dir, "hs_ed25519_public_key", buf, 64, 0600);
            break;
        case C_SEC_PAD:
            memcpy(buf, SEC_HDR, 32);
            buf[31] = ' '; /* padding must be NULs */
            memcpy(buf + 32, sec, 64);
            put_file(dir, "hs_ed25519_secret_key", buf, 96, 0600);
            break;
        case C_SEC_SHORT:
            memcpy(buf, SEC_HDR, 32);
            memcpy(buf + 32, sec, 63);
            put_file(dir, "hs_ed25519_secret_key", buf, 95, 0600);
            break;
        case C_SEC_LONG:
            memcpy(buf, SEC_HDR, 32);
            memcpy(buf + 32, sec, 64);
            buf[96] = '\n';
            put_file(dir, "hs_ed25519_secret_key", buf, 97, 0600);
            break;
        case C_SEC_EMPTY:
            put_file(dir, "hs_ed25519_secret_key", "", 0, 0600);
            break;
        case C_PUB_SHORT:
            memcpy(buf, PUB_HDR, 32);
            memcpy(buf + 32, pub, 31);
            put_file(dir, "hs_ed25519_public_key", buf, 63, 0600);
            break;
        case C_PUB_LONG:
            memcpy(buf, PUB_HDR, 32);
            memcpy(buf + 32, pub, 32);
            memcpy(buf + 64, pub, 32);
            put_file(dir, "hs_ed25519_public_key", buf, 96, 0600);
            break;
        case C_HOST_OTHER:
            put_file(dir, "hostname", TOR_KEY2_ADDR ".onion\n", strlen(TOR_KEY2_ADDR) + 7, 0600);
            break;
        case C_HOST_GARBAGE:
            put_file(dir, "hostname", "example.com\n", 12, 0600);
            break;
        case C_HOST_BINARY:
            put_file(dir, "hostname", "\x01" "bad\xff\n", 6, 0600);
            break;
        case C_HOST_TWO_NL:
            put_file(dir, "hostname", TOR_KEY_ADDR ".onion\n\n", strlen(TOR_KEY_ADDR) + 8, 0600);
            break;
        case C_PAIR: /* tor's secret key of one service with the public key of another */
            make_key_dir(dir, TOR_KEY2_PUB, TOR_KEY_SEC, TOR_KEY2_ADDR ".onion\n", 0700, 0600, 0600);
            break;
        case C_UNCLAMPED:
            sec[0] |= 1;
            make_key_dir(dir, pub, sec, TOR_KEY_ADDR ".onion\n", 0700, 0600, 0600);
            break;
        case C_PUB_NONCANON: /* y >= 2^255-19 */
            memset(pub, 0xff, 32);
            pub[31] = 0x7f;
            make_key_dir(dir, pub, sec, NULL, 0700, 0600, 0600);
            snprintf(path, sizeof path, "%s/hostname", dir);
            assert_int_equal(unlink(path), 0);
            break;
        }
        err[0] = '\0';
        if (keys_load(dir, &k, err, sizeof err) != -1)
            fail_msg("case %zu: loaded", i);
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].file);
        assert_err_has(err, path, cases[i].want);
        /* A hostname's content is never quoted (it may be a link to someone else's file). */
        if (strstr(err, TOR_KEY2_ADDR) || strstr(err, "example.com") || strstr(err, "bad\""))
            fail_msg("case %zu: the message quotes the file: %s", i, err);
        assert_no_secret_in(err);
        /* Refused means untouched and nothing returned. */
        assert_false(k.has_secret);
        assert_false(file_exists(dir, "onion_service_non_anonymous"));
        /* keys_load_or_create must not "repair" it by generating a new key either. */
        assert_int_equal(keys_load_or_create(dir, &k, NULL, err, sizeof err), -1);
        assert_err_has(err, path, cases[i].want);
    }
}

static void test_load_refuses_loose_permissions(void **state)
{
    static const struct {
        mode_t dmode, smode, pmode;
        const char *path; /* relative to the dir, "" = the dir */
        const char *mode;
    } cases[] = {
        {0755, 0600, 0600, "", "0755"},
        {0750, 0600, 0600, "", "0750"},
        {0701, 0600, 0600, "", "0701"},
        {0700, 0644, 0600, "/hs_ed25519_secret_key", "0644"},
        {0700, 0640, 0600, "/hs_ed25519_secret_key", "0640"},
        {0700, 0604, 0600, "/hs_ed25519_secret_key", "0604"},
        {0700, 0600, 0666, "/hs_ed25519_public_key", "0666"},
        {0700, 0600, 0620, "/hs_ed25519_public_key", "0620"},
    };
    struct keys_state *s = *state;
    struct onion_key k;
    char err[1024], dir[192], path[256];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(dir, sizeof dir, "%s/perm%zu", s->base, i);
        make_key_dir(dir, TOR_KEY_PUB, TOR_KEY_SEC, NULL, cases[i].dmode, cases[i].smode, cases[i].pmode);
        err[0] = '\0';
        if (keys_load(dir, &k, err, sizeof err) != -1)
            fail_msg("case %zu: loaded", i);
        snprintf(path, sizeof path, "%s%s", dir, cases[i].path);
        assert_err_has(err, path, cases[i].mode);
        assert_int_equal(keys_load_or_create(dir, &k, NULL, err, sizeof err), -1);
        assert_err_has(err, path, cases[i].mode);
        assert_false(k.has_secret);
    }
    /* A writable-by-others hostname is refused too. */
    snprintf(dir, sizeof dir, "%s/permhost", s->base);
    make_tor_dir(dir);
    snprintf(path, sizeof path, "%s/hostname", dir);
    assert_int_equal(chmod(path, 0646), 0);
    assert_int_equal(keys_load(dir, &k, err, sizeof err), -1);
    assert_err_has(err, path, "0646");
}

/* Half-present key directories: refused, and never overwritten by a new key. */
static void test_partial_dirs(void **state)
{
    struct keys_state *s = *state;
    struct onion_key k;
    char err[1024], path[256];
    unsigned char before[64], after[64];

    /* Public key (and hostname) without the secret key. */
    make_tor_dir(s->dir);
    snprintf(path, sizeof path, "%s/hs_ed25519_secret_key", s->dir);
    assert_int_equal(unlink(path), 0);
    get_file(s->dir, "hs_ed25519_public_key", before, sizeof before);
    assert_int_equal(keys_load_or_create(s->dir, &k, NULL, err, sizeof err), -1);
    assert_err_has(err, path, "missing");
    get_file(s->dir, "hs_ed25519_public_key", after, sizeof after);
    assert_memory_equal(before, after, 64);
    assert_false(file_exists(s->dir, "hs_ed25519_secret_key"));

    /* Only a hostname. */
    snprintf(path, sizeof path, "%s/hs_ed25519_public_key", s->dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(keys_load_or_create(s->dir, &k, NULL, err, sizeof err), -1);
    assert_err_has(err, "hostname", "missing");

    /* Secret key without the public key. */
    make_tor_dir(s->dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(keys_load_or_create(s->dir, &k, NULL, err, sizeof err), -1);
    assert_err_has(err, path, "missing");
    assert_false(file_exists(s->dir, "hs_ed25519_public_key"));
}

static void test_load_missing_or_empty(void **state)
{
    struct keys_state *s = *state;
    struct onion_key k;
    char err[1024];

    assert_int_equal(keys_load(s->dir, &k, err, sizeof err), -1); /* does not exist */
    assert_err_has(err, s->dir, NULL);
    assert_false(file_exists(s->base, "svc")); /* keys_load never creates */
    assert_int_equal(mkdir(s->dir, 0700), 0);
    assert_int_equal(keys_load(s->dir, &k, err, sizeof err), -1);
    assert_err_has(err, s->dir, "no onion service key");
    /* load_or_create on a dir whose parent is missing: error naming the path. */
    char deep[256];
    snprintf(deep, sizeof deep, "%s/no/such", s->base);
    assert_int_equal(keys_load_or_create(deep, &k, NULL, err, sizeof err), -1);
    assert_err_has(err, deep, NULL);
}

/* The anonymity rule: marked -> fine; never used -> fine and marked; used by tor (authorized_clients/
 * or a v2 private_key) without the marker -> refused with the way out in the message. */
static void test_anonymity_rule(void **state)
{
    static const struct {
        const char *trace; /* created in the dir before loading; NULL = none */
        bool trace_is_dir;
        bool marker;
        int want;
    } cases[] = {
        {NULL, false, false, 0},                 /* mkp224o output, never used */
        {NULL, false, true, 0},                  /* marked */
        {"authorized_clients", true, true, 0},   /* used by tor as a single onion, marked */
        {"authorized_clients", true, false, -1}, /* used by tor, maybe anonymously */
        {"private_key", false, false, -1},       /* v2 traces */
    };
    struct keys_state *s = *state;
    struct onion_key k;
    char err[1024], dir[192], path[256], touch[300];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(dir, sizeof dir, "%s/rule%zu", s->base, i);
        make_tor_dir(dir);
        if (cases[i].trace) {
            snprintf(path, sizeof path, "%s/%s", dir, cases[i].trace);
            if (cases[i].trace_is_dir)
                assert_int_equal(mkdir(path, 0700), 0);
            else
                put_file(dir, cases[i].trace, "x", 1, 0600);
        }
        if (cases[i].marker)
            put_file(dir, "onion_service_non_anonymous", "", 0, 0600);
        err[0] = '\0';
        int rc = keys_load(dir, &k, err, sizeof err);
        if (rc != cases[i].want)
            fail_msg("case %zu: rc %d: %s", i, rc, err);
        if (rc == 0) {
            assert_string_equal(k.address, TOR_KEY_ADDR);
            assert_true(file_exists(dir, "onion_service_non_anonymous"));
            onion_key_clear(&k);
        } else {
            snprintf(touch, sizeof touch, "touch %s/onion_service_non_anonymous", dir);
            assert_err_has(err, dir, touch);
            assert_err_has(err, TOR_KEY_ADDR ".onion", "anonymous");
            assert_false(file_exists(dir, "onion_service_non_anonymous"));
            assert_int_equal(keys_load_or_create(dir, &k, NULL, err, sizeof err), -1);
            assert_err_has(err, touch, NULL);
            /* The operator's way out works. */
            put_file(dir, "onion_service_non_anonymous", "", 0, 0600);
            assert_int_equal(keys_load(dir, &k, err, sizeof err), 0);
            onion_key_clear(&k);
        }
    }
    /* A marker that is not a file is an error (as tor <= 0.4.5 had it). */
    snprintf(dir, sizeof dir, "%s/rulebad", s->base);
    make_tor_dir(dir);
    snprintf(path, sizeof path, "%s/onion_service_non_anonymous", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(keys_load(dir, &k, err, sizeof err), -1);
    assert_err_has(err, path, "not a regular file");
}

/* Anonymous services: the same rule from the other side. A marked directory (a single onion's) is refused,
 * also for a new key; an unmarked one is used and claimed (authorized_clients/), after which the
 * single-onion rule refuses it; a new anonymous key never gets the marker; import and install follow the
 * same rule. */
static void test_anonymous_rule(void **state)
{
    struct keys_state *s = *state;
    struct onion_key k;
    char err[1024], dir[192], dst[192];
    bool created = false;

    /* a single onion's directory never serves an anonymous service */
    snprintf(dir, sizeof dir, "%s/single", s->base);
    make_tor_dir(dir);
    assert_int_equal(keys_load(dir, &k, err, sizeof err), 0); /* marks it */
    onion_key_clear(&k);
    assert_true(file_exists(dir, "onion_service_non_anonymous"));
    assert_int_equal(keys_load_mode(dir, SERVICE_MODE_ANONYMOUS, &k, err, sizeof err), -1);
    assert_err_has(err, dir, "onion_service_non_anonymous");
    assert_err_has(err, "new-key", "single onion");
    assert_int_equal(keys_load_or_create_mode(dir, SERVICE_MODE_ANONYMOUS, &k, &created, err, sizeof err), -1);
    snprintf(dst, sizeof dst, "%s/imported", s->base);
    assert_int_equal(keys_import_mode(dir, dst, SERVICE_MODE_ANONYMOUS, NULL, err, sizeof err), -1);
    assert_false(file_exists(dst, "hs_ed25519_secret_key"));
    /* ... nor gets a new anonymous key next to the marker */
    snprintf(dir, sizeof dir, "%s/markedempty", s->base);
    assert_int_equal(mkdir(dir, 0700), 0);
    put_file(dir, "onion_service_non_anonymous", "", 0, 0600);
    assert_int_equal(keys_load_or_create_mode(dir, SERVICE_MODE_ANONYMOUS, &k, &created, err, sizeof err), -1);
    assert_false(file_exists(dir, "hs_ed25519_secret_key"));

    /* an unused directory (mkp224o output) is claimed for the anonymous service, never marked */
    snprintf(dir, sizeof dir, "%s/fresh", s->base);
    make_tor_dir(dir);
    assert_int_equal(keys_load_mode(dir, SERVICE_MODE_ANONYMOUS, &k, err, sizeof err), 0);
    assert_string_equal(k.address, TOR_KEY_ADDR);
    onion_key_clear(&k);
    assert_false(file_exists(dir, "onion_service_non_anonymous"));
    assert_true(file_exists(dir, "authorized_clients"));
    assert_int_equal(keys_load(dir, &k, err, sizeof err), -1); /* and never serves a single onion */
    assert_err_has(err, "anonymous", NULL);

    /* a new anonymous key: no marker; the single-onion rule refuses it */
    assert_int_equal(keys_load_or_create_mode(s->dir, SERVICE_MODE_ANONYMOUS, &k, &created, err, sizeof err), 0);
    assert_true(created);
    onion_key_clear(&k);
    assert_false(file_exists(s->dir, "onion_service_non_anonymous"));
    assert_int_equal(keys_load_mode(s->dir, SERVICE_MODE_ANONYMOUS, &k, err, sizeof err), 0);
    onion_key_clear(&k);
    assert_int_equal(keys_load(s->dir, &k, err, sizeof err), -1);
    assert_int_equal(keys_load_or_create(s->dir, &k, &created, err, sizeof err), -1);
    /* import into an anonymous service's directory: no marker either */
    snprintf(dst, sizeof dst, "%s/imported2", s->base);
    assert_int_equal(keys_import_mode(s->dir, dst, SERVICE_MODE_ANONYMOUS, NULL, err, sizeof err), 0);
    assert_false(file_exists(dst, "onion_service_non_anonymous"));
    assert_int_equal(keys_import(s->dir, dst, NULL, err, sizeof err), -1); /* as a single onion: refused */
}

/* A directory holding no key, even if tor left traces in it, gets a fresh, marked key. */
static void test_create_in_used_empty_dir(void **state)
{
    struct keys_state *s = *state;
    struct onion_key k;
    char err[1024], path[256];
    bool created = false;

    assert_int_equal(mkdir(s->dir, 0700), 0);
    snprintf(path, sizeof path, "%s/authorized_clients", s->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(keys_load_or_create(s->dir, &k, &created, err, sizeof err), 0);
    assert_true(created);
    assert_true(file_exists(s->dir, "onion_service_non_anonymous"));
    onion_key_clear(&k);
    /* And it loads again (marked). */
    assert_int_equal(keys_load(s->dir, &k, err, sizeof err), 0);
    onion_key_clear(&k);
    /* An existing loose directory is refused, not fixed. */
    assert_int_equal(chmod(s->dir, 0755), 0);
    assert_int_equal(keys_load_or_create(s->dir, &k, &created, err, sizeof err), -1);
    assert_err_has(err, s->dir, "0755");
}

static void test_import(void **state)
{
    struct keys_state *s = *state;
    struct onion_key k;
    char err[1024], src[192], src2[192], addr[ONION_ADDRESS_SIZE];
    unsigned char buf[128];

    /* A backup copy with loose permissions (not checked on the source). */
    snprintf(src, sizeof src, "%s/backup", s->base);
    make_key_dir(src, TOR_KEY_PUB, TOR_KEY_SEC, TOR_KEY_ADDR ".onion\n", 0755, 0644, 0644);
    memset(addr, 0, sizeof addr);
    assert_int_equal(keys_import(src, s->dir, addr, err, sizeof err), 0);
    assert_string_equal(addr, TOR_KEY_ADDR);
    assert_int_equal(file_mode(s->base, "svc"), 0700);
    assert_int_equal(file_mode(s->dir, "hs_ed25519_secret_key"), 0600);
    assert_int_equal(file_mode(s->dir, "hs_ed25519_public_key"), 0600);
    assert_int_equal(file_mode(s->dir, "hostname"), 0600);
    assert_true(file_exists(s->dir, "onion_service_non_anonymous"));
    assert_int_equal(get_file(s->dir, "hs_ed25519_secret_key", buf, sizeof buf), 96);
    assert_memory_equal(buf + 32, TOR_KEY_SEC, 64);
    assert_false(file_exists(src, "onion_service_non_anonymous")); /* the source is not modified */
    assert_int_equal(keys_load(s->dir, &k, err, sizeof err), 0);
    assert_string_equal(k.address, TOR_KEY_ADDR);
    onion_key_clear(&k);

    /* Again: idempotent. */
    assert_int_equal(keys_import(src, s->dir, NULL, err, sizeof err), 0);

    /* A different key onto it: refused, destination unchanged. */
    snprintf(src2, sizeof src2, "%s/other", s->base);
    make_key_dir(src2, TOR_KEY2_PUB, TOR_KEY2_SEC, NULL, 0700, 0600, 0600);
    assert_int_equal(keys_import(src2, s->dir, addr, err, sizeof err), -1);
    assert_err_has(err, s->dir, "different key");
    assert_err_has(err, TOR_KEY_ADDR, TOR_KEY2_ADDR);
    assert_int_equal(get_file(s->dir, "hs_ed25519_secret_key", buf, sizeof buf), 96);
    assert_memory_equal(buf + 32, TOR_KEY_SEC, 64);
    assert_no_secret_in(err);
}

static void test_import_refuses(void **state)
{
    struct keys_state *s = *state;
    char err[1024], src[192], path[256];

    /* Used by tor without the marker: refused, destination not created. */
    snprintf(src, sizeof src, "%s/used", s->base);
    make_tor_dir(src);
    snprintf(path, sizeof path, "%s/authorized_clients", src);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(keys_import(src, s->dir, NULL, err, sizeof err), -1);
    assert_err_has(err, src, "would show where that hidden service is");
    assert_err_has(err, "\"mode\": \"anonymous\"", "onionfront new-key");
    assert_err_has(err, "--torrc", "--i-know-it-was-a-single-onion");
    assert_false(file_exists(s->base, "svc"));
    /* With the marker: accepted. */
    put_file(src, "onion_service_non_anonymous", "", 0, 0600);
    assert_int_equal(keys_import(src, s->dir, NULL, err, sizeof err), 0);

    /* Broken source: refused with the source path. */
    snprintf(src, sizeof src, "%s/broken", s->base);
    make_key_dir(src, TOR_KEY2_PUB, TOR_KEY_SEC, NULL, 0700, 0600, 0600);
    char dst2[192];
    snprintf(dst2, sizeof dst2, "%s/svc2", s->base);
    assert_int_equal(keys_import(src, dst2, NULL, err, sizeof err), -1);
    assert_err_has(err, src, "does not match");
    assert_false(file_exists(s->base, "svc2"));

    /* Empty or missing source. */
    snprintf(src, sizeof src, "%s/empty", s->base);
    assert_int_equal(mkdir(src, 0700), 0);
    assert_int_equal(keys_import(src, dst2, NULL, err, sizeof err), -1);
    assert_err_has(err, src, "no onion service key");
    snprintf(src, sizeof src, "%s/nowhere", s->base);
    assert_int_equal(keys_import(src, dst2, NULL, err, sizeof err), -1);
    assert_err_has(err, src, NULL);
    assert_false(file_exists(s->base, "svc2"));
}

/* A listing of `dir` (names, modes, sizes and a checksum of each file's bytes) to show it unchanged. */
static void dir_fingerprint(const char *dir, char *out, size_t cap)
{
    static const char *const names[] = {"hs_ed25519_secret_key", "hs_ed25519_public_key", "hostname",
                                        "authorized_clients", "onion_service_non_anonymous"};
    struct stat st;
    char path[512];
    size_t n = 0;
    assert_int_equal(stat(dir, &st), 0);
    n += (size_t)snprintf(out + n, cap - n, "%o;", (unsigned)st.st_mode);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (lstat(path, &st) < 0) {
            n += (size_t)snprintf(out + n, cap - n, "%s:-;", names[i]);
            continue;
        }
        unsigned sum = 0;
        if (S_ISREG(st.st_mode)) {
            unsigned char buf[256];
            size_t len = get_file(dir, names[i], buf, sizeof buf);
            for (size_t k = 0; k < len; k++)
                sum = sum * 31 + buf[k];
        }
        n += (size_t)snprintf(out + n, cap - n, "%s:%o:%lld:%u:%lld;", names[i], (unsigned)st.st_mode,
                              (long long)st.st_size, sum, (long long)st.st_mtime);
    }
}

/* import-key's evidence (keys_import_read): a v3 directory carries no mark of its mode, so the torrc it
 * ran under or the operator's word decide; an anonymous key never becomes a single onion's by accident,
 * a single onion's never an anonymous service's. The source is never changed. */
static void test_import_evidence(void **state)
{
    enum dir_kind { TOR_USED, MARKED, UNUSED };
    static const struct {
        enum dir_kind kind;
        enum service_mode mode;
        enum keys_evidence ev;
        int want;
        const char *why; /* in the refusal */
    } cases[] = {
        /* single onion services */
        {TOR_USED, SERVICE_MODE_SINGLE, KEYS_EVIDENCE_NONE, -1, "nothing shows that it ran as one"},
        {TOR_USED, SERVICE_MODE_SINGLE, KEYS_EVIDENCE_SINGLE, 0, NULL},
        {TOR_USED, SERVICE_MODE_SINGLE, KEYS_EVIDENCE_ANONYMOUS, -1, "ran it as an ordinary (anonymous) hidden"},
        {MARKED, SERVICE_MODE_SINGLE, KEYS_EVIDENCE_NONE, 0, NULL},
        {MARKED, SERVICE_MODE_SINGLE, KEYS_EVIDENCE_ANONYMOUS, -1, "would show where that hidden service is"},
        {UNUSED, SERVICE_MODE_SINGLE, KEYS_EVIDENCE_NONE, 0, NULL},
        {UNUSED, SERVICE_MODE_SINGLE, KEYS_EVIDENCE_ANONYMOUS, -1, "would show where that hidden service is"},
        /* anonymous services */
        {TOR_USED, SERVICE_MODE_ANONYMOUS, KEYS_EVIDENCE_NONE, 0, NULL},
        {TOR_USED, SERVICE_MODE_ANONYMOUS, KEYS_EVIDENCE_ANONYMOUS, 0, NULL},
        {TOR_USED, SERVICE_MODE_ANONYMOUS, KEYS_EVIDENCE_SINGLE, -1, "it ran as a single onion service"},
        {MARKED, SERVICE_MODE_ANONYMOUS, KEYS_EVIDENCE_NONE, -1, "was a single onion service's"},
        {UNUSED, SERVICE_MODE_ANONYMOUS, KEYS_EVIDENCE_NONE, 0, NULL},
    };
    struct keys_state *s = *state;
    char err[2048], src[192], dst[192], path[256], before[1024], after[1024];
    struct onion_key k;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(src, sizeof src, "%s/ev%zu", s->base, i);
        snprintf(dst, sizeof dst, "%s/evdst%zu", s->base, i);
        make_tor_dir(src);
        if (cases[i].kind == TOR_USED) {
            snprintf(path, sizeof path, "%s/authorized_clients", src);
            assert_int_equal(mkdir(path, 0700), 0);
        } else if (cases[i].kind == MARKED) {
            put_file(src, "onion_service_non_anonymous", "", 0, 0600);
        }
        dir_fingerprint(src, before, sizeof before);
        err[0] = '\0';
        int rc = keys_import_read(src, cases[i].mode, cases[i].ev, &k, err, sizeof err);
        if (rc != cases[i].want)
            fail_msg("case %zu: rc %d: %s", i, rc, err);
        if (rc == 0) {
            assert_string_equal(k.address, TOR_KEY_ADDR);
            /* the copy carries the mode: the marker for a single onion, authorized_clients/ otherwise */
            assert_int_equal(keys_install_mode(&k, dst, cases[i].mode, err, sizeof err), 0);
            assert_true(file_exists(dst, "onion_service_non_anonymous") == (cases[i].mode == SERVICE_MODE_SINGLE));
            assert_true(file_exists(dst, "authorized_clients") == (cases[i].mode == SERVICE_MODE_ANONYMOUS));
            struct stat st;
            snprintf(path, sizeof path, "%s/hs_ed25519_secret_key", dst);
            assert_int_equal(stat(path, &st), 0);
            assert_int_equal(st.st_mode & 0777, 0600);
            onion_key_clear(&k);
        } else {
            assert_err_has(err, src, cases[i].why);
            assert_no_secret_in(err);
            if (cases[i].mode == SERVICE_MODE_SINGLE)
                assert_err_has(err, "\"mode\": \"anonymous\"", "new-key");
        }
        dir_fingerprint(src, after, sizeof after);
        assert_string_equal(before, after);
    }
}

/* tor's secret key file on its own (export-key / import-key FILE): the public key computed from the
 * secret alone is the one tor (and OpenSSL, for new keys) wrote, for fixed vectors and fresh keys. */
static void test_secret_file(void **state)
{
    struct keys_state *s = *state;
    static const struct {
        const unsigned char *pub, *sec;
        const char *addr;
    } vec[] = {{TOR_KEY_PUB, TOR_KEY_SEC, TOR_KEY_ADDR},
               {TOR_KEY2_PUB, TOR_KEY2_SEC, TOR_KEY2_ADDR},
               {RFC8032_PUB, RFC8032_SEC, RFC8032_ADDR}};
    unsigned char buf[KEYS_SECRET_FILE_LEN + 1];
    struct onion_key k, d;
    char err[1024], dir[192];
    bool created;

    for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) {
        memcpy(buf, SEC_HDR, 32);
        memcpy(buf + 32, vec[i].sec, 64);
        assert_int_equal(keys_secret_file_decode(buf, 96, "vec", &d, err, sizeof err), 0);
        assert_memory_equal(d.public_key, vec[i].pub, 32);
        assert_string_equal(d.address, vec[i].addr);
        assert_true(d.has_secret);
        onion_key_clear(&d);
    }
    /* fresh keys: 20 of them, so both signs of x come up */
    for (int i = 0; i < 20; i++) {
        snprintf(dir, sizeof dir, "%s/fresh%d", s->base, i);
        assert_int_equal(keys_load_or_create(dir, &k, &created, err, sizeof err), 0);
        assert_int_equal(keys_secret_file_encode(&k, buf), 0);
        assert_memory_equal(buf, SEC_HDR, 32);
        assert_int_equal(keys_secret_file_decode(buf, 96, "fresh", &d, err, sizeof err), 0);
        assert_memory_equal(d.public_key, k.public_key, 32);
        assert_memory_equal(d.secret_key, k.secret_key, 64);
        assert_string_equal(d.address, k.address);
        /* and installed into another directory it loads as the same key */
        snprintf(dir, sizeof dir, "%s/inst%d", s->base, i);
        assert_int_equal(keys_install(&d, dir, err, sizeof err), 0);
        onion_key_clear(&d);
        assert_int_equal(keys_load(dir, &d, err, sizeof err), 0);
        assert_string_equal(d.address, k.address);
        onion_key_clear(&d);
        onion_key_clear(&k);
    }
    /* no secret: nothing to encode */
    memset(&k, 0, sizeof k);
    assert_int_equal(keys_secret_file_encode(&k, buf), -1);

    /* refused: wrong size, wrong header (a public key file), an unclamped scalar */
    memcpy(buf, SEC_HDR, 32);
    memcpy(buf + 32, TOR_KEY_SEC, 64);
    assert_int_equal(keys_secret_file_decode(buf, 95, "short.key", &d, err, sizeof err), -1);
    assert_err_has(err, "short.key", "95 bytes");
    assert_int_equal(keys_secret_file_decode(buf, 97, "long.key", &d, err, sizeof err), -1);
    assert_err_has(err, "long.key", "97 bytes");
    memcpy(buf, PUB_HDR, 32);
    assert_int_equal(keys_secret_file_decode(buf, 96, "pub.key", &d, err, sizeof err), -1);
    assert_err_has(err, "pub.key", "bad header");
    memcpy(buf, SEC_HDR, 32);
    buf[32] |= 1;
    assert_int_equal(keys_secret_file_decode(buf, 96, "odd.key", &d, err, sizeof err), -1);
    assert_err_has(err, "odd.key", "clamped");
    assert_no_secret_in(err);
    assert_false(d.has_secret);
}

static void test_clear(void **state)
{
    struct keys_state *s = *state;
    struct onion_key k;
    static const unsigned char zero[64];
    char err[1024];

    make_tor_dir(s->dir);
    assert_int_equal(keys_load(s->dir, &k, err, sizeof err), 0);
    onion_key_forget_secret(&k);
    assert_false(k.has_secret);
    assert_memory_equal(k.secret_key, zero, 64);
    assert_string_equal(k.address, TOR_KEY_ADDR); /* the public part stays */
    onion_key_clear(&k);
    assert_memory_equal(k.public_key, zero, 32);
    assert_int_equal(k.address[0], '\0');
    onion_key_clear(NULL);
    onion_key_forget_secret(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_then_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anonymous_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_gives_new_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_known_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_public_files_readable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_refuses_bad_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_refuses_loose_permissions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_dirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_missing_or_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anonymity_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_in_used_empty_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_evidence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secret_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clear, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
