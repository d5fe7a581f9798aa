/* placement.c — rendezvous hashing of services onto tors (see placement.h). Each (service, tor) pair gets
 * a score, the first 8 bytes of SHA-256("onionfront placement" || 0 || name || 0 || tor number); the
 * service goes to the tors with the highest scores. A hash, not a sequence or a counter, so that a
 * service's place never depends on the other services. */
#include "sidecar/config/placement.h"

#include <openssl/evp.h>
#include <stdint.h>
#include <string.h>

static const char placement_domain[] = "onionfront placement";

/* The score of tor k for the service `name`; 0 if hashing fails (the order then falls back to tor
 * numbers, still the same for every call). */
static uint64_t placement_score(const char *name, unsigned k)
{
    unsigned char in[sizeof(placement_domain) + 256 + 2], md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    size_t nlen = strnlen(name, 256), len = 0;
    memcpy(in, placement_domain, sizeof(placement_domain)); /* with its NUL as the separator */
    len += sizeof(placement_domain);
    memcpy(in + len, name, nlen);
    len += nlen;
    in[len++] = 0;
    in[len++] = (unsigned char)k;
    if (EVP_Digest(in, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < 8)
        return 0;
    uint64_t s = 0;
    for (int i = 0; i < 8; i++)
        s = s << 8 | md[i];
    return s;
}

unsigned placement_mask(const char *name, unsigned tors, unsigned per_service)
{
    uint64_t score[PLACEMENT_MAX_TORS];
    unsigned mask = 0;
    if (tors < 1)
        tors = 1;
    if (tors > PLACEMENT_MAX_TORS)
        tors = PLACEMENT_MAX_TORS;
    if (per_service < 1)
        per_service = 1;
    if (per_service >= tors)
        return (1u << tors) - 1;
    for (unsigned k = 0; k < tors; k++)
        score[k] = placement_score(name, k);
    for (unsigned taken = 0; taken < per_service; taken++) {
        unsigned best = tors;
        for (unsigned k = 0; k < tors; k++)
            if (!(mask & 1u << k) && (best == tors || score[k] > score[best]))
                best = k; /* a tie goes to the lower tor number */
        mask |= 1u << best;
    }
    return mask;
}

unsigned placement_count(unsigned mask)
{
    unsigned n = 0;
    for (; mask; mask &= mask - 1)
        n++;
    return n;
}
