/* onion_sign.h — Ed25519 signatures (RFC 8032) made with an onion service's key as tor stores it: the
 * *expanded* secret key (a || prefix: the clamped scalar and the signing prefix, i.e. SHA-512 of a seed
 * that tor does not keep), which OpenSSL's Ed25519 API cannot use (it takes only seeds).
 *
 * Owns the signing arithmetic only, done with libsodium's group and scalar primitives (no curve code of
 * our own) and SHA-512 from libsodium. Knows nothing of key files (keys.h), certificate requests or CAA
 * (onion_csr.h). A leaf: no logging, no I/O, no global state besides libsodium's one-time initialisation.
 * Every intermediate value derived from the secret is wiped before returning. */
#ifndef ONIONFRONT_ONION_SIGN_H
#define ONIONFRONT_ONION_SIGN_H

#include <stddef.h>

#define ONION_SIGN_SECRET_LEN 64 /* a (32 bytes, clamped, little-endian) || prefix (32 bytes) */
#define ONION_SIGN_PUBLIC_LEN 32
#define ONION_SIGN_LEN 64 /* R || S */

/* Sign `len` bytes of `msg` with the expanded secret key `sk` whose public key is `pk`, into `sig`
 * (RFC 8032 5.1.6 from step 2 on: r = SHA-512(prefix || msg) mod L, R = rB, k = SHA-512(R || pk || msg)
 * mod L, S = r + k a mod L). The result is byte for byte what any RFC 8032 signer makes from the seed
 * `sk` was expanded from. Before signing, `pk` is checked to be a*B: a public key that does not belong
 * to `sk` (a mixed-up key file, or one whose sign bit was flipped) would otherwise yield a signature
 * that verifies under no key. Return 0, or -1 (sig zeroed) if `pk` does not belong to `sk`, `sk` is
 * not a clamped scalar, or libsodium cannot be initialised. */
int onion_sign(const unsigned char sk[ONION_SIGN_SECRET_LEN], const unsigned char pk[ONION_SIGN_PUBLIC_LEN],
               const unsigned char *msg, size_t len, unsigned char sig[ONION_SIGN_LEN]);

#endif
