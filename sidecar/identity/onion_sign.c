/* onion_sign.c — RFC 8032 Ed25519 signing from tor's expanded secret key (see onion_sign.h).
 *
 * Why libsodium: OpenSSL's Ed25519 takes a seed and expands it itself; tor keeps only the expansion, so
 * signing has to start at RFC 8032 5.1.6 step 2, which needs a scalar-base multiplication and arithmetic
 * mod L. libsodium exposes exactly those (crypto_scalarmult_ed25519_base_noclamp,
 * crypto_core_ed25519_scalar_*), so no curve arithmetic is written here: this file only strings the
 * steps of the RFC together. */
#include "sidecar/identity/onion_sign.h"

#include <string.h>

#include <sodium.h>

/* x mod L for a 32-byte little-endian x: libsodium reduces 64-byte values, so pad with zeros. */
static void onion_sign_reduce32(unsigned char out[32], const unsigned char in[32])
{
    unsigned char wide[crypto_core_ed25519_NONREDUCEDSCALARBYTES] = {0};
    memcpy(wide, in, 32);
    crypto_core_ed25519_scalar_reduce(out, wide);
    sodium_memzero(wide, sizeof wide);
}

/* SHA-512(a || b || c) mod L; any part may be NULL with length 0. Return 0, or -1. */
static int onion_sign_hash_reduce(unsigned char out[crypto_core_ed25519_SCALARBYTES], const unsigned char *a,
                                  size_t alen, const unsigned char *b, size_t blen, const unsigned char *c,
                                  size_t clen)
{
    crypto_hash_sha512_state st;
    unsigned char h[crypto_hash_sha512_BYTES];
    int rc = crypto_hash_sha512_init(&st) == 0 && (!alen || crypto_hash_sha512_update(&st, a, alen) == 0) &&
                     (!blen || crypto_hash_sha512_update(&st, b, blen) == 0) &&
                     (!clen || crypto_hash_sha512_update(&st, c, clen) == 0) &&
                     crypto_hash_sha512_final(&st, h) == 0
                 ? 0
                 : -1;
    if (rc == 0)
        crypto_core_ed25519_scalar_reduce(out, h);
    sodium_memzero(&st, sizeof st);
    sodium_memzero(h, sizeof h);
    return rc;
}

int onion_sign(const unsigned char sk[ONION_SIGN_SECRET_LEN], const unsigned char pk[ONION_SIGN_PUBLIC_LEN],
               const unsigned char *msg, size_t len, unsigned char sig[ONION_SIGN_LEN])
{
    unsigned char a[32], check[32], r[32], k[32], ka[32];
    int ret = -1;

    memset(sig, 0, ONION_SIGN_LEN);
    if (sodium_init() < 0)
        return -1;
    /* RFC 8032 5.1.5 step 2: the scalar is clamped (low 3 bits clear, bit 255 clear, bit 254 set). tor
     * and mkp224o write it so; anything else is not a key this code should vouch for. */
    if ((sk[0] & 7) != 0 || (sk[31] & 0x80) != 0 || (sk[31] & 0x40) == 0)
        return -1;
    /* A = aB must be the public key we sign for: it goes into k, and it is what verifiers hold. */
    if (crypto_scalarmult_ed25519_base_noclamp(check, sk) != 0 || sodium_memcmp(check, pk, 32) != 0)
        goto done;
    /* 5.1.6 step 2: r = SHA-512(prefix || M) mod L; step 3: R = rB. */
    if (onion_sign_hash_reduce(r, sk + 32, 32, msg, len, NULL, 0) < 0 ||
        crypto_scalarmult_ed25519_base_noclamp(sig, r) != 0) /* fails only for r = 0 */
        goto done;
    /* step 4: k = SHA-512(R || A || M) mod L */
    if (onion_sign_hash_reduce(k, sig, 32, pk, 32, msg, len) < 0)
        goto done;
    /* step 5: S = (r + k * a) mod L, with a reduced mod L first (the clamped a is below 2^255, not L). */
    onion_sign_reduce32(a, sk);
    crypto_core_ed25519_scalar_mul(ka, k, a);
    crypto_core_ed25519_scalar_add(sig + 32, r, ka);
    ret = 0;
done:
    if (ret < 0)
        sodium_memzero(sig, ONION_SIGN_LEN);
    sodium_memzero(a, sizeof a);
    sodium_memzero(r, sizeof r);
    sodium_memzero(k, sizeof k);
    sodium_memzero(ka, sizeof ka);
    sodium_memzero(check, sizeof check);
    return ret;
}
