/* test_onion_sign.c — unit tests for sidecar/identity/onion_sign.c: Ed25519 signatures from tor's expanded key.
 *
 * Why: a CA accepts an onion CSR only if its signature verifies; a wrong step in the RFC 8032 chain
 * (a missing reduction, R and A swapped in k, the prefix hashed with the wrong half) gives signatures
 * that verify nowhere. Ed25519 is deterministic, so the signer must reproduce known signatures exactly.
 *
 * Covers: the RFC 8032 7.1 test vectors (TEST 1, 2, 3 and SHA(abc)), each seed expanded here with
 * OpenSSL's SHA-512 and clamped as tor does, signed, and compared with the RFC's signature; byte
 * identity with OpenSSL's own Ed25519 signature from the same seed for messages of several lengths
 * (0 to 4096 bytes) and fresh random seeds; the signature verifies with OpenSSL; a public key that does
 * not belong to the secret (another key, or only its sign bit flipped) and an unclamped scalar are
 * refused with a zeroed signature. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "sidecar/identity/onion_sign.h"

static void unhex(const char *hex, unsigned char *out, size_t len)
{
    assert_int_equal(strlen(hex), len * 2);
    for (size_t i = 0; i < len; i++) {
        unsigned int b;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &b), 1);
        out[i] = (unsigned char)b;
    }
}

/* tor's expansion of a seed (RFC 8032 5.1.5 steps 1-2), done with OpenSSL, not with the code under test. */
static void expand(const unsigned char seed[32], unsigned char sk[64])
{
    unsigned int n = 0;
    assert_int_equal(EVP_Digest(seed, 32, sk, &n, EVP_sha512(), NULL), 1);
    assert_int_equal(n, 64);
    sk[0] &= 248;
    sk[31] &= 127;
    sk[31] |= 64;
}

/* OpenSSL's public key and signature of `msg` from `seed`. */
static void openssl_sign(const unsigned char seed[32], const unsigned char *msg, size_t len, unsigned char pk[32],
                         unsigned char sig[64])
{
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    assert_non_null(k);
    size_t pl = 32, sl = 64;
    assert_int_equal(EVP_PKEY_get_raw_public_key(k, pk, &pl), 1);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestSignInit(ctx, NULL, NULL, NULL, k), 1);
    assert_int_equal(EVP_DigestSign(ctx, sig, &sl, msg, len), 1);
    assert_int_equal(sl, 64);
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(k);
}

static int openssl_verify(const unsigned char pk[32], const unsigned char *msg, size_t len, const unsigned char sig[64])
{
    EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pk, 32);
    assert_non_null(k);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k), 1);
    int rc = EVP_DigestVerify(ctx, sig, 64, msg, len);
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(k);
    return rc;
}

/* RFC 8032 section 7.1. */
static const struct {
    const char *name, *seed, *pub, *msg, *sig;
} rfc8032[] = {
    {"TEST 1", "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24"
     "655141438e7a100b"},
    {"TEST 2", "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302a"
     "eeb00d291612bb0c00"},
    {"TEST 3", "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed2"
     "8dc027beceea1ec40a"},
    {"TEST SHA(abc)", "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
     "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
     "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e"
     "2a9ac94fa54ca49f",
     "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17a"
     "d9bef1177331a704"},
};

static void test_rfc8032_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rfc8032 / sizeof rfc8032[0]; i++) {
        unsigned char seed[32], sk[64], pk[32], want[64], sig[64], msg[64];
        size_t mlen = strlen(rfc8032[i].msg) / 2;
        print_message("%s\n", rfc8032[i].name);
        unhex(rfc8032[i].seed, seed, 32);
        unhex(rfc8032[i].pub, pk, 32);
        unhex(rfc8032[i].sig, want, 64);
        unhex(rfc8032[i].msg, msg, mlen);
        expand(seed, sk);
        assert_int_equal(onion_sign(sk, pk, msg, mlen, sig), 0);
        assert_memory_equal(sig, want, 64);
    }
}

/* Byte identity with OpenSSL's signer, for message lengths around SHA-512's 128-byte block. */
static void test_same_as_openssl(void **state)
{
    (void)state;
    static const size_t lens[] = {0, 1, 31, 32, 63, 64, 111, 112, 127, 128, 129, 255, 1000, 4096};
    static unsigned char msg[4096];
    for (int round = 0; round < 8; round++) {
        unsigned char seed[32], sk[64], pk[32], want[64], sig[64];
        assert_int_equal(RAND_bytes(seed, sizeof seed), 1);
        assert_int_equal(RAND_bytes(msg, sizeof msg), 1);
        expand(seed, sk);
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            openssl_sign(seed, msg, lens[i], pk, want);
            assert_int_equal(onion_sign(sk, pk, msg, lens[i], sig), 0);
            assert_memory_equal(sig, want, 64);
            assert_int_equal(openssl_verify(pk, msg, lens[i], sig), 1);
        }
    }
}

static void test_refuses_foreign_public_key(void **state)
{
    (void)state;
    unsigned char seed[32], sk[64], pk[32], pk2[32], other[32], sig[64], zero[64] = {0}, want[64];
    const unsigned char msg[] = "onion-caa|1|caa 0 issue \"harica.gr\"";
    unhex(rfc8032[0].seed, seed, 32);
    expand(seed, sk);
    unhex(rfc8032[1].pub, other, 32);
    memset(sig, 0xaa, sizeof sig);
    assert_int_equal(onion_sign(sk, other, msg, sizeof msg - 1, sig), -1);
    assert_memory_equal(sig, zero, 64);

    /* -A: the same y, the other sign of x. keys.c's X25519 pair check cannot see this difference. */
    unhex(rfc8032[0].pub, pk, 32);
    pk[31] ^= 0x80;
    memset(sig, 0xaa, sizeof sig);
    assert_int_equal(onion_sign(sk, pk, msg, sizeof msg - 1, sig), -1);
    assert_memory_equal(sig, zero, 64);

    /* The right key still signs (so the refusals above are about the key, not the message). */
    pk[31] ^= 0x80;
    assert_int_equal(onion_sign(sk, pk, msg, sizeof msg - 1, sig), 0);
    openssl_sign(seed, msg, sizeof msg - 1, pk2, want);
    assert_memory_equal(pk2, pk, 32);
    assert_memory_equal(sig, want, 64);
}

static void test_refuses_unclamped_scalar(void **state)
{
    (void)state;
    unsigned char seed[32], sk[64], pk[32], sig[64], zero[64] = {0};
    unhex(rfc8032[0].seed, seed, 32);
    unhex(rfc8032[0].pub, pk, 32);
    static const struct {
        int byte;
        unsigned char xor_mask;
    } flips[] = {{0, 0x01}, {0, 0x04}, {31, 0x80}, {31, 0x40}};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        expand(seed, sk);
        sk[flips[i].byte] ^= flips[i].xor_mask;
        memset(sig, 0xaa, sizeof sig);
        assert_int_equal(onion_sign(sk, pk, (const unsigned char *)"x", 1, sig), -1);
        assert_memory_equal(sig, zero, 64);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc8032_vectors),
        cmocka_unit_test(test_same_as_openssl),
        cmocka_unit_test(test_refuses_foreign_public_key),
        cmocka_unit_test(test_refuses_unclamped_scalar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
