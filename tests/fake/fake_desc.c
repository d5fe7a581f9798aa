/* fake_desc.c — a v3 descriptor's outer layer for tests (see fake_desc.h). */
#include "tests/fake/fake_desc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

char *fake_desc_body(char *out, size_t len, unsigned char key_byte, uint64_t revision, const char *eol)
{
    /* VERSION 1, CERT_TYPE 08, EXPIRATION, CERT_KEY_TYPE 01, CERTIFIED_KEY, N_EXTENSIONS 1 (type 04:
     * the signing blinded key, 32 bytes), then a 64-byte signature: 140 bytes, as tor's. */
    unsigned char cert[140] = {1, 8, 0, 7, 0x9d, 0x6e, 1};
    char b64[200], lines[260];
    memset(cert + 7, key_byte, 32);
    cert[39] = 1;
    memcpy(cert + 40, (const unsigned char[]){0, 32, 4, 0}, 4);
    memset(cert + 44, 0xab, sizeof(cert) - 44);
    EVP_EncodeBlock((unsigned char *)b64, cert, sizeof(cert));
    size_t n = strlen(b64), used = 0;
    for (size_t i = 0; i < n; i += 64) /* 64 characters a line, as tor writes it */
        used += (size_t)snprintf(lines + used, sizeof(lines) - used, "%.64s%s", b64 + i, eol);
    snprintf(out, len,
             "hs-descriptor 3%sdescriptor-lifetime 180%sdescriptor-signing-key-cert%s"
             "-----BEGIN ED25519 CERT-----%s%s-----END ED25519 CERT-----%srevision-counter %" PRIu64 "%s"
             "superencrypted%s-----BEGIN MESSAGE-----%sAAAA%s-----END MESSAGE-----%ssignature abc",
             eol, eol, eol, eol, lines, eol, revision, eol, eol, eol, eol, eol);
    return out;
}
