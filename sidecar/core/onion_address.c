/* onion_address.c — the v3 onion address and tor's base32 (see onion_address.h).
 *
 * Owns: the checksum (OpenSSL's SHA3-256) and a base32 encoder (OpenSSL has none). Does not own: keys,
 * files, logging. */
#include "sidecar/core/onion_address.h"

#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

void onion_address_base32(const unsigned char *in, size_t len, char *out)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
    unsigned int acc = 0;
    int bits = 0;
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        acc = (acc << 8) | in[i];
        bits += 8;
        while (bits >= 5) {
            out[o++] = alphabet[(acc >> (bits - 5)) & 31];
            bits -= 5;
        }
        acc &= (1u << bits) - 1; /* keep only the unused bits */
    }
    if (bits > 0) /* the last character: the remaining bits, zero-padded */
        out[o++] = alphabet[(acc << (5 - bits)) & 31];
    out[o] = '\0';
}

int onion_address_from_pubkey(const unsigned char pk[32], char out[ONION_ADDRESS_SIZE])
{
    static const char prefix[] = ".onion checksum";
    const unsigned char version = 0x03;
    unsigned char buf[sizeof prefix - 1 + 32 + 1];
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    unsigned char raw[35];

    /* address-spec / rend-spec-v3 6: CHECKSUM = SHA3-256(".onion checksum" | PUBKEY | VERSION)[:2] */
    memcpy(buf, prefix, sizeof prefix - 1);
    memcpy(buf + sizeof prefix - 1, pk, 32);
    buf[sizeof buf - 1] = version;
    if (EVP_Digest(buf, sizeof buf, digest, &dlen, EVP_sha3_256(), NULL) != 1 || dlen != 32)
        return -1;
    /* onion_address = base32(PUBKEY | CHECKSUM | VERSION) */
    memcpy(raw, pk, 32);
    raw[32] = digest[0];
    raw[33] = digest[1];
    raw[34] = version;
    onion_address_base32(raw, sizeof raw, out);
    return 0;
}

/* The length of `a` without a ".onion" suffix. */
static size_t onion_address_len(const char *a)
{
    size_t n = strlen(a);
    return n >= 6 && strcasecmp(a + n - 6, ".onion") == 0 ? n - 6 : n;
}

bool onion_address_equal(const char *a, const char *b)
{
    size_t n = onion_address_len(a);
    return n == onion_address_len(b) && strncasecmp(a, b, n) == 0;
}

int onion_address_cmp(const char *a, const char *b)
{
    size_t na = onion_address_len(a), nb = onion_address_len(b);
    int r = strncasecmp(a, b, na < nb ? na : nb);
    return r ? r : (na > nb) - (na < nb);
}
