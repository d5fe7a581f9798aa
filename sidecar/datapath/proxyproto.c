/* proxyproto.c — PROXY protocol v1 parsing, tor's circuit identity and v2 encoding (see proxyproto.h). */
#include "sidecar/datapath/proxyproto.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* RFC 4193 prefix tor puts in front of the circuit id (tor: src_ipv6_prefix in connection_edge.c). */
static const uint8_t proxyproto_tor_prefix[8] = {0xfc, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x4d, 0xad};

/* spec 2.2: the v2 signature; note the NUL at the 5th byte. */
static const uint8_t proxyproto_v2_sig[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

const char *proxyproto_family_str(enum proxyproto_family f)
{
    switch (f) {
    case PROXYPROTO_UNKNOWN:
        return "UNKNOWN";
    case PROXYPROTO_TCP4:
        return "TCP4";
    case PROXYPROTO_TCP6:
        return "TCP6";
    }
    return "?";
}

static int proxyproto_fail(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "PROXY line: %s", what);
    return -1;
}

static bool proxyproto_is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* May byte `c` appear in the part of a line after "PROXY <proto>"? Only what a valid line can hold, so
 * that a peer speaking something else is refused before the line ends. */
static bool proxyproto_char_ok(enum proxyproto_family f, char c)
{
    switch (f) {
    case PROXYPROTO_TCP4:
        return c == ' ' || c == '.' || (c >= '0' && c <= '9');
    case PROXYPROTO_TCP6:
        return c == ' ' || c == ':' || proxyproto_is_hex(c);
    case PROXYPROTO_UNKNOWN:
        return c >= 0x20 && c < 0x7f; /* spec 2.1: "the receiver must ignore anything" up to CRLF */
    }
    return false;
}

/* A decimal number without a leading zero, at most `max`. */
static int proxyproto_number(const char *s, size_t n, unsigned max, unsigned *out)
{
    unsigned v = 0;
    if (n == 0 || n > 5 || (n > 1 && s[0] == '0'))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

/* spec 2.1: "exactly 4 integers in the range [0..255] ... separated by exactly one dot", no leading
 * zeroes. inet_pton's rules differ between C libraries, so this is checked here. */
static int proxyproto_ipv4(const char *s, size_t n, uint8_t out[16])
{
    size_t i = 0;
    memset(out, 0, 16);
    for (int part = 0; part < 4; part++) {
        size_t start = i;
        unsigned v;
        while (i < n && s[i] != '.')
            i++;
        if (i - start > 3 || proxyproto_number(s + start, i - start, 255, &v) < 0)
            return -1;
        out[part] = (uint8_t)v;
        if (part < 3) {
            if (i >= n)
                return -1;
            i++; /* the dot */
        }
    }
    return i == n ? 0 : -1;
}

/* Hexadecimal groups with at most one "::" (inet_pton checks the grouping); no embedded IPv4. */
static int proxyproto_ipv6(const char *s, size_t n, uint8_t out[16])
{
    char tmp[40];
    if (n == 0 || n > 39)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (s[i] != ':' && !proxyproto_is_hex(s[i]))
            return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    return inet_pton(AF_INET6, tmp, out) == 1 ? 0 : -1;
}

/* Parse the complete line `s` (`n` bytes, CRLF excluded). */
static int proxyproto_v1_line(const char *s, size_t n, struct proxyproto_v1 *out, char *err, size_t errlen)
{
    static const char *const names[4] = {"source address", "destination address", "source port",
                                         "destination port"};
    const char *field[4];
    size_t flen[4], nf = 0, i;
    if (n >= 13 && memcmp(s, "PROXY UNKNOWN", 13) == 0) {
        if (n > 13 && s[13] != ' ')
            return proxyproto_fail(err, errlen, "unknown protocol (not TCP4, TCP6 or UNKNOWN)");
        out->family = PROXYPROTO_UNKNOWN;
        return 0;
    }
    if (n >= 11 && memcmp(s, "PROXY TCP4 ", 11) == 0)
        out->family = PROXYPROTO_TCP4;
    else if (n >= 11 && memcmp(s, "PROXY TCP6 ", 11) == 0)
        out->family = PROXYPROTO_TCP6;
    else
        return proxyproto_fail(err, errlen, "unknown protocol (not TCP4, TCP6 or UNKNOWN)");
    /* Four fields separated by exactly one space. */
    for (i = 11; i <= n; nf++) {
        size_t start = i;
        while (i < n && s[i] != ' ')
            i++;
        if (i == start)
            return proxyproto_fail(err, errlen, "empty field (two spaces or a trailing space)");
        if (nf == 4)
            return proxyproto_fail(err, errlen, "more than four fields after the protocol");
        field[nf] = s + start;
        flen[nf] = i - start;
        i++; /* past the space, or past the end */
    }
    if (nf != 4)
        return proxyproto_fail(err, errlen, "fewer than four fields after the protocol");
    for (int k = 0; k < 2; k++) {
        uint8_t *addr = k == 0 ? out->src : out->dst;
        int rc = out->family == PROXYPROTO_TCP4 ? proxyproto_ipv4(field[k], flen[k], addr)
                                                : proxyproto_ipv6(field[k], flen[k], addr);
        if (rc < 0) {
            char m[96];
            snprintf(m, sizeof(m), "%s: not a valid %s address", names[k],
                     out->family == PROXYPROTO_TCP4 ? "IPv4" : "IPv6");
            return proxyproto_fail(err, errlen, m);
        }
    }
    for (int k = 2; k < 4; k++) {
        unsigned v;
        if (proxyproto_number(field[k], flen[k], 65535, &v) < 0) {
            char m[96];
            snprintf(m, sizeof(m), "%s: not a number 0-65535 without leading zeros", names[k]);
            return proxyproto_fail(err, errlen, m);
        }
        if (k == 2)
            out->src_port = (uint16_t)v;
        else
            out->dst_port = (uint16_t)v;
    }
    return 0;
}

int proxyproto_v1_parse(const char *buf, size_t len, struct proxyproto_v1 *out, char *err, size_t errlen)
{
    static const char magic[] = "PROXY ";
    size_t n = len < PROXYPROTO_V1_MAX ? len : PROXYPROTO_V1_MAX;
    size_t i;
    memset(out, 0, sizeof(*out));
    /* The fixed start, compared as far as we have it. */
    for (i = 0; i < n && i < 6; i++)
        if (buf[i] != magic[i])
            return proxyproto_fail(err, errlen, "does not start with \"PROXY \"");
    /* The protocol word, as far as we have it. */
    enum proxyproto_family fam = PROXYPROTO_UNKNOWN;
    bool fam_known = false;
    if (n > 6) {
        static const char *const words[3] = {"TCP4 ", "TCP6 ", "UNKNOWN"};
        static const enum proxyproto_family fams[3] = {PROXYPROTO_TCP4, PROXYPROTO_TCP6, PROXYPROTO_UNKNOWN};
        size_t have = n - 6;
        bool any = false;
        for (int w = 0; w < 3; w++) {
            size_t wl = strlen(words[w]);
            size_t cmp = have < wl ? have : wl;
            /* A line may end right after "UNKNOWN": a CR there is part of a valid line. */
            if (memcmp(buf + 6, words[w], cmp) == 0) {
                any = true;
                if (have >= wl) {
                    fam = fams[w];
                    fam_known = true;
                }
            }
        }
        if (!any)
            return proxyproto_fail(err, errlen, "unknown protocol (not TCP4, TCP6 or UNKNOWN)");
    }
    /* The rest: look for the CRLF; refuse what no valid line can contain. */
    size_t rest = fam_known ? (fam == PROXYPROTO_UNKNOWN ? 13 : 11) : n;
    if (fam_known && fam == PROXYPROTO_UNKNOWN && n > 13 && buf[13] != ' ' && buf[13] != '\r')
        return proxyproto_fail(err, errlen, "unknown protocol (not TCP4, TCP6 or UNKNOWN)");
    for (i = rest; i < n; i++) {
        char c = buf[i];
        if (c == '\r') {
            if (i + 2 > PROXYPROTO_V1_MAX)
                return proxyproto_fail(err, errlen, "no CRLF within the first 107 bytes");
            if (i + 1 >= len)
                return 0; /* the LF may still come */
            if (buf[i + 1] != '\n')
                return proxyproto_fail(err, errlen, "CR not followed by LF");
            if (proxyproto_v1_line(buf, i, out, err, errlen) < 0) {
                memset(out, 0, sizeof(*out));
                return -1;
            }
            return (int)i + 2;
        }
        if (c == '\n')
            return proxyproto_fail(err, errlen, "LF without CR");
        if (!proxyproto_char_ok(fam, c)) {
            char m[96];
            snprintf(m, sizeof(m), "byte 0x%02x at offset %zu cannot appear in a %s line", (unsigned char)c, i,
                     proxyproto_family_str(fam));
            return proxyproto_fail(err, errlen, m);
        }
    }
    if (len >= PROXYPROTO_V1_MAX)
        return proxyproto_fail(err, errlen, "no CRLF within the first 107 bytes");
    return 0;
}

int proxyproto_tor_circuit(const struct proxyproto_v1 *h, uint32_t *circuit_id, uint16_t *virtual_port, char *err,
                           size_t errlen)
{
    if (h->family != PROXYPROTO_TCP6) {
        snprintf(err, errlen, "PROXY line: %s, not tor's TCP6 form", proxyproto_family_str(h->family));
        return -1;
    }
    if (memcmp(h->src, proxyproto_tor_prefix, 8) != 0 || h->src[8] || h->src[9] || h->src[10] || h->src[11]) {
        snprintf(err, errlen, "PROXY line: source address outside tor's fc00:dead:beef:4dad::/96 circuit range");
        return -1;
    }
    uint32_t id = (uint32_t)h->src[12] << 24 | (uint32_t)h->src[13] << 16 | (uint32_t)h->src[14] << 8 | h->src[15];
    uint16_t want = id ? (uint16_t)(id & 0xffff) : 1; /* tor: src_port = gid & 0xffff, default 1 */
    if (h->src_port != want) {
        snprintf(err, errlen, "PROXY line: source port %u does not match circuit id %u (expected %u)",
                 (unsigned)h->src_port, (unsigned)id, (unsigned)want);
        return -1;
    }
    if (h->dst_port == 0) { /* tor writes the HiddenServicePort virtual port: 1-65535 */
        snprintf(err, errlen, "PROXY line: destination port 0 is not a virtual port (1-65535)");
        return -1;
    }
    *circuit_id = id;
    *virtual_port = h->dst_port;
    return 0;
}

static uint8_t *proxyproto_put16(uint8_t *p, uint16_t v)
{
    *p++ = (uint8_t)(v >> 8);
    *p++ = (uint8_t)v;
    return p;
}

size_t proxyproto_v2_encode(uint32_t circuit_id, uint16_t virtual_port, uint8_t *out, size_t cap)
{
    if (cap < PROXYPROTO_V2_LEN)
        return 0;
    uint8_t *p = out;
    memcpy(p, proxyproto_v2_sig, sizeof(proxyproto_v2_sig));
    p += sizeof(proxyproto_v2_sig);
    *p++ = 0x21;                                   /* version 2, command PROXY */
    *p++ = 0x21;                                   /* AF_INET6, STREAM */
    p = proxyproto_put16(p, PROXYPROTO_V2_LEN - 16); /* spec 2.2: bytes after the 16-byte header */
    /* source fc00:dead:beef:4dad::<id> */
    memcpy(p, proxyproto_tor_prefix, 8);
    memset(p + 8, 0, 4);
    p[12] = (uint8_t)(circuit_id >> 24);
    p[13] = (uint8_t)(circuit_id >> 16);
    p[14] = (uint8_t)(circuit_id >> 8);
    p[15] = (uint8_t)circuit_id;
    p += 16;
    /* destination ::1 */
    memset(p, 0, 15);
    p[15] = 1;
    p += 16;
    p = proxyproto_put16(p, (uint16_t)(circuit_id & 0xffff));
    p = proxyproto_put16(p, virtual_port);
    /* spec 2.2.8: an application-specific TLV with the id as a number */
    *p++ = PROXYPROTO_TLV_CIRCUIT_ID;
    p = proxyproto_put16(p, 4);
    *p++ = (uint8_t)(circuit_id >> 24);
    *p++ = (uint8_t)(circuit_id >> 16);
    *p++ = (uint8_t)(circuit_id >> 8);
    *p++ = (uint8_t)circuit_id;
    return (size_t)(p - out);
}
