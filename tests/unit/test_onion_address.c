/* test_onion_address.c — unit tests for sidecar/core/onion_address.c: addresses of known public keys (a key
 * Debian's tor 0.4.9.11 generated, and tor's own unit-test vector for RFC 8032 7.1 TEST 1), RFC 4648
 * base32 vectors, and the one address comparison. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "sidecar/core/onion_address.h"

static const unsigned char TOR_KEY_PUB[32] = {
    0x86, 0xa8, 0x30, 0x09, 0x07, 0xa7, 0xaa, 0x91, 0x94, 0x2a, 0x20, 0xd4, 0xc2, 0xd4, 0x92, 0xcc,
    0x37, 0x50, 0xd9, 0xcf, 0x92, 0xf5, 0x54, 0xec, 0x29, 0xe4, 0x76, 0x6c, 0x00, 0x68, 0xd9, 0xd9};
#define TOR_KEY_ADDR "q2udacihu6vjdfbkedkmfveszq3vbwopsl2vj3bj4r3gyadi3hmrq4yd"

static const unsigned char TOR_KEY2_PUB[32] = {
    0x04, 0xb8, 0xf2, 0x57, 0x88, 0x45, 0x49, 0x6f, 0xc8, 0xc3, 0xff, 0xa3, 0xbb, 0x57, 0x99, 0x39,
    0x31, 0x83, 0x3c, 0xba, 0x1d, 0x9f, 0x4a, 0x30, 0x60, 0x85, 0x15, 0xa0, 0xcd, 0x9c, 0xc3, 0x5d};
#define TOR_KEY2_ADDR "as4pev4iivew7sgd76r3wv4zheyygpf2dwpuumdaquk2btm4ynoursqd"

static const unsigned char RFC8032_PUB[32] = {
    0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9, 0x64, 0x07, 0x3a,
    0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6, 0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a};
#define RFC8032_ADDR "25njqamcweflpvkl73j4szahhihoc4xt3ktcgjnpaingr5yhkenl5sid"

static void test_address_vectors(void **state)
{
    static const struct {
        const unsigned char *pk;
        const char *addr;
    } cases[] = {
        {RFC8032_PUB, RFC8032_ADDR},
        {TOR_KEY_PUB, TOR_KEY_ADDR},
        {TOR_KEY2_PUB, TOR_KEY2_ADDR},
    };
    char out[ONION_ADDRESS_SIZE];
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(out, 'Z', sizeof out);
        assert_int_equal(onion_address_from_pubkey(cases[i].pk, out), 0);
        assert_string_equal(out, cases[i].addr);
    }
    /* One flipped bit changes both the key part and the checksum. */
    unsigned char pk[32];
    memcpy(pk, TOR_KEY_PUB, 32);
    pk[5] ^= 1;
    assert_int_equal(onion_address_from_pubkey(pk, out), 0);
    assert_string_not_equal(out, TOR_KEY_ADDR);
    assert_int_equal(strlen(out), ONION_ADDRESS_LEN);
    assert_memory_equal(out + ONION_ADDRESS_LEN - 1, "d", 1); /* version 3 ends every address in 'd' */
}

/* RFC 4648 10, lowercase and without padding. */
static void test_base32_vectors(void **state)
{
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"", ""},           {"f", "my"},          {"fo", "mzxq"},          {"foo", "mzxw6"},
        {"foob", "mzxw6yq"}, {"fooba", "mzxw6ytb"}, {"foobar", "mzxw6ytboi"},
    };
    char out[32];
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(out, 'Z', sizeof out);
        onion_address_base32((const unsigned char *)cases[i].in, strlen(cases[i].in), out);
        assert_string_equal(out, cases[i].out);
    }
}

/* The one address comparison: case-insensitive, ".onion" optional on either side. */
static void test_address_equal(void **state)
{
    (void)state;
    static const char a[] = "pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd";
    static const char b[] = "sp3k262uwy4r2k3ycr5awluarykdpag6a7y33jxop4cs2lu5uz5sseqd";
    assert_true(onion_address_equal(a, a));
    assert_true(onion_address_equal(a, "pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd.onion"));
    assert_true(onion_address_equal("PG6MMJIYJMCRSSLVYKFWNNTLARU7P5SVN6Y2YMMJU6NUBXNDF4PSCRYD.ONION", a));
    assert_false(onion_address_equal(a, b));
    assert_false(onion_address_equal(a, "pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscry"));
    assert_false(onion_address_equal(a, ""));
    assert_true(onion_address_equal("", "")); /* two services whose address is not known yet */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_address_vectors),
        cmocka_unit_test(test_base32_vectors),
        cmocka_unit_test(test_address_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
