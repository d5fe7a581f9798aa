/* fuzz_proxyproto.c — libFuzzer target for the PROXY protocol code (sidecar/datapath/proxyproto.c).
 *
 * The input is what tor (or anything else that reaches a proxy socket) could send first on a stream.
 * It is parsed whole and then as every prefix the data path could see while the line arrives, and each
 * result is checked against what the header promises:
 *   - a complete line has 1..107 bytes and ends in its first CRLF, with no CR or LF before;
 *   - parsing is prefix-stable: every shorter prefix of an accepted line is "incomplete" (0), and the
 *     same bytes with anything appended give the same line and fields;
 *   - a prefix that is refused stays refused when more bytes come (the data path drops it at once);
 *   - a failure leaves the output zeroed and names "PROXY line";
 *   - tor's circuit identity, when accepted, matches the address and port it came from, and the v2
 *     header for it is exactly PROXYPROTO_V2_LEN bytes carrying the same id.
 * Crashes, sanitizer reports and broken invariants (abort) are findings.
 * Seeds: tests/fuzz/seeds/fuzz_proxyproto/ (tor's lines, the spec's examples and limits). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/datapath/proxyproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                            \
    do {                                                                                                       \
        if (!(cond))                                                                                           \
            abort();                                                                                           \
    } while (0)

static void check_zero(const struct proxyproto_v1 *h)
{
    static const struct proxyproto_v1 zero;
    CHECK(memcmp(h, &zero, sizeof(zero)) == 0);
}

/* The id in the circuit TLV of a v2 header (offsets: 16-byte header, 36 address bytes, TLV at 52). */
static uint32_t v2_id(const uint8_t *v2)
{
    CHECK(v2[52] == PROXYPROTO_TLV_CIRCUIT_ID && v2[53] == 0 && v2[54] == 4);
    return (uint32_t)v2[55] << 24 | (uint32_t)v2[56] << 16 | (uint32_t)v2[57] << 8 | v2[58];
}

static void check_circuit(const struct proxyproto_v1 *h)
{
    char err[256];
    uint32_t id = 0;
    uint16_t vport = 0;
    uint8_t v2[PROXYPROTO_V2_LEN];

    if (proxyproto_tor_circuit(h, &id, &vport, err, sizeof err) < 0) {
        CHECK(strncmp(err, "PROXY line: ", 12) == 0);
        return;
    }
    CHECK(h->family == PROXYPROTO_TCP6);
    CHECK(vport == h->dst_port && vport != 0); /* a virtual port */
    CHECK(((uint32_t)h->src[12] << 24 | (uint32_t)h->src[13] << 16 | (uint32_t)h->src[14] << 8 | h->src[15]) == id);
    CHECK(h->src_port == (id ? (id & 0xffff) : 1));
    CHECK(proxyproto_v2_encode(id, vport, v2, sizeof v2) == PROXYPROTO_V2_LEN);
    CHECK(memcmp(v2 + 16, h->src, 16) == 0); /* the backend sees tor's address for the circuit */
    CHECK(v2_id(v2) == id);
    CHECK((v2[50] << 8 | v2[51]) == vport);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct proxyproto_v1 whole, part;
    char err[256];
    int n;

    n = proxyproto_v1_parse(buf, size, &whole, err, sizeof err);
    CHECK(n >= -1 && n <= PROXYPROTO_V1_MAX);
    if (n > 0) {
        CHECK(n >= 15); /* "PROXY UNKNOWN\r\n" is the shortest */
        CHECK(buf[n - 2] == '\r' && buf[n - 1] == '\n');
        CHECK(memchr(buf, '\r', (size_t)n - 2) == NULL && memchr(buf, '\n', (size_t)n - 2) == NULL);
        CHECK(memcmp(buf, "PROXY ", 6) == 0);
        /* Every proper prefix is incomplete; exactly the line gives the same result. */
        for (size_t k = 0; k < (size_t)n; k++)
            CHECK(proxyproto_v1_parse(buf, k, &part, err, sizeof err) == 0);
        CHECK(proxyproto_v1_parse(buf, (size_t)n, &part, err, sizeof err) == n);
        CHECK(memcmp(&part, &whole, sizeof part) == 0);
        if (whole.family == PROXYPROTO_UNKNOWN) {
            CHECK(whole.src_port == 0 && whole.dst_port == 0);
        }
        check_circuit(&whole);
    } else if (n == 0) {
        /* Incomplete: no CRLF yet, fewer than 107 bytes, and every prefix is incomplete too. */
        CHECK(size < PROXYPROTO_V1_MAX);
        for (size_t k = 0; k < size; k++)
            CHECK(proxyproto_v1_parse(buf, k, &part, err, sizeof err) == 0);
    } else {
        check_zero(&whole);
        CHECK(strncmp(err, "PROXY line: ", 12) == 0);
        /* Once refused, more bytes cannot make it valid: find the shortest refused prefix and check
         * that every longer one is refused too (cheap: the inputs are short). */
        size_t first = size;
        size_t limit = size < 2 * PROXYPROTO_V1_MAX ? size : 2 * PROXYPROTO_V1_MAX;
        for (size_t k = 0; k <= limit; k++) {
            int r = proxyproto_v1_parse(buf, k, &part, err, sizeof err);
            CHECK(r <= 0); /* no prefix of a refused input is a complete line */
            if (r < 0 && first == size)
                first = k;
            if (first != size && k >= first)
                CHECK(r == -1);
        }
    }
    /* The encoder alone, with fuzzed values. */
    if (size >= 6) {
        uint8_t v2[PROXYPROTO_V2_LEN + 1];
        uint32_t id = (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3];
        uint16_t vp = (uint16_t)(data[4] << 8 | data[5]);
        v2[PROXYPROTO_V2_LEN] = 0x5a;
        CHECK(proxyproto_v2_encode(id, vp, v2, sizeof v2) == PROXYPROTO_V2_LEN);
        CHECK(v2[PROXYPROTO_V2_LEN] == 0x5a);
        CHECK((v2[14] << 8 | v2[15]) + 16 == PROXYPROTO_V2_LEN);
        CHECK(v2_id(v2) == id);
        CHECK((v2[48] << 8 | v2[49]) == (id & 0xffff) && (v2[50] << 8 | v2[51]) == vp);
        CHECK(proxyproto_v2_encode(id, vp, v2, PROXYPROTO_V2_LEN - 1) == 0);
    }
    return 0;
}
