/* test_proxyproto.c — PROXY protocol: v1 lines as tor and others write them (tables of valid and
 * malformed lines, fed whole and one byte at a time), tor's circuit identity, and the v2 header
 * onionfront sends to backends, byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "sidecar/datapath/proxyproto.h"

/* Render a parsed header canonically, so table rows compare one string. */
static void dump(const struct proxyproto_v1 *h, char *out, size_t len)
{
    char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
    if (h->family == PROXYPROTO_UNKNOWN) {
        snprintf(out, len, "UNKNOWN");
        return;
    }
    int af = h->family == PROXYPROTO_TCP4 ? AF_INET : AF_INET6;
    inet_ntop(af, h->src, s, sizeof(s));
    inet_ntop(af, h->dst, d, sizeof(d));
    snprintf(out, len, "%s %s %s %u %u", proxyproto_family_str(h->family), s, d, (unsigned)h->src_port,
             (unsigned)h->dst_port);
}

struct valid_case {
    const char *line; /* CRLF included */
    const char *dump;
};

static const struct valid_case valid_cases[] = {
    /* tor 0.4.9.11 (TOR-FACTS.md) and tor's own unit test lines */
    {"PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 80\r\n", "TCP6 fc00:dead:beef:4dad::3b ::1 59 80"},
    {"PROXY TCP6 fc00:dead:beef:4dad::0:29a ::1 666 42\r\n", "TCP6 fc00:dead:beef:4dad::29a ::1 666 42"},
    {"PROXY TCP6 fc00:dead:beef:4dad::ffff:ffff ::1 65535 42\r\n",
     "TCP6 fc00:dead:beef:4dad::ffff:ffff ::1 65535 42"},
    {"PROXY TCP6 fc00:dead:beef:4dad::0:0 ::1 1 443\r\n", "TCP6 fc00:dead:beef:4dad:: ::1 1 443"},
    /* the spec's examples and limits */
    {"PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n", "TCP4 192.168.0.1 192.168.0.11 56324 443"},
    {"PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n",
     "TCP4 255.255.255.255 255.255.255.255 65535 65535"},
    {"PROXY TCP4 0.0.0.0 10.0.0.1 0 0\r\n", "TCP4 0.0.0.0 10.0.0.1 0 0"},
    {"PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n",
     "TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535"},
    {"PROXY TCP6 FC00:DEAD:BEEF:4DAD::1 :: 1 2\r\n", "TCP6 fc00:dead:beef:4dad::1 :: 1 2"},
    {"PROXY UNKNOWN\r\n", "UNKNOWN"},
    {"PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n",
     "UNKNOWN"},
    {"PROXY UNKNOWN anything at all\r\n", "UNKNOWN"},
};

struct bad_case {
    const char *line;
    const char *err; /* a substring of the message */
    size_t len;      /* 0: strlen(line) */
};

static const struct bad_case bad_cases[] = {
    {"GET / HTTP/1.1\r\n", "does not start with \"PROXY \"", 0},
    {"proxy TCP4 1.2.3.4 1.2.3.4 1 2\r\n", "does not start", 0},
    {"PROXY  TCP4 1.2.3.4 1.2.3.4 1 2\r\n", "unknown protocol", 0},
    {"PROXY TCP5 1.2.3.4 1.2.3.4 1 2\r\n", "unknown protocol", 0},
    {"PROXY UDP4 1.2.3.4 1.2.3.4 1 2\r\n", "unknown protocol", 0},
    {"PROXY UNKNOWNX\r\n", "unknown protocol", 0},
    {"PROXY TCP4\r\n", "unknown protocol", 0},
    {"PROXY TCP4 1.2.3.4 1.2.3.4 1 2\n", "LF without CR", 0},
    {"PROXY TCP4 1.2.3.4 1.2.3.4 1 2\rX", "CR not followed by LF", 0},
    {"PROXY TCP4 1.2.3.4 1.2.3.4 1 2 \r\n", "empty field", 0},
    {"PROXY TCP4 1.2.3.4  1.2.3.4 1 2\r\n", "empty field", 0},
    {"PROXY TCP4 1.2.3.4 1.2.3.4 1\r\n", "fewer than four fields", 0},
    {"PROXY TCP4 1.2.3.4 1.2.3.4 1 2 3\r\n", "more than four fields", 0},
    {"PROXY TCP4 01.2.3.4 1.2.3.4 1 2\r\n", "source address: not a valid IPv4", 0},
    {"PROXY TCP4 256.2.3.4 1.2.3.4 1 2\r\n", "source address", 0},
    {"PROXY TCP4 1.2.3 1.2.3.4 1 2\r\n", "source address", 0},
    {"PROXY TCP4 1.2.3.4.5 1.2.3.4 1 2\r\n", "source address", 0},
    {"PROXY TCP4 1..3.4 1.2.3.4 1 2\r\n", "source address", 0},
    {"PROXY TCP4 1.2.3.4 1.2.3.4. 1 2\r\n", "destination address", 0},
    {"PROXY TCP4 1.2.3.4 ::1 1 2\r\n", "cannot appear in a TCP4 line", 0},
    {"PROXY TCP6 1.2.3.4 ::1 1 2\r\n", "cannot appear in a TCP6 line", 0},
    {"PROXY TCP6 ::ffff:1.2.3.4 ::1 1 2\r\n", "cannot appear in a TCP6 line", 0},
    {"PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 80 \r\n", "empty field", 0},
    {"PROXY TCP6 fc00::dead::1 ::1 1 2\r\n", "source address: not a valid IPv6", 0},
    {"PROXY TCP6 fc000::1 ::1 1 2\r\n", "source address", 0},
    {"PROXY TCP6 1:2:3:4:5:6:7:8:9 ::1 1 2\r\n", "source address", 0},
    {"PROXY TCP6 ::1 fc00:dead:beef:4dad:0:0:0 1 2\r\n", "destination address", 0},
    {"PROXY TCP6 ::1 ::1 059 80\r\n", "source port: not a number", 0},
    {"PROXY TCP6 ::1 ::1 65536 80\r\n", "source port", 0},
    {"PROXY TCP6 ::1 ::1 59 080\r\n", "destination port", 0},
    {"PROXY TCP6 ::1 ::1 59 123456\r\n", "destination port", 0},
    {"PROXY TCP6 ::1 ::1 59 -1\r\n", "cannot appear", 0},
    {"PROXY UNKNOWN \x01\r\n", "cannot appear in a UNKNOWN line", 0},
    {"PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 80\0\r\n", "cannot appear",
     sizeof("PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 80\0\r\n") - 1},
};

static void test_v1_valid(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++) {
        const struct valid_case *c = &valid_cases[i];
        struct proxyproto_v1 h;
        char err[256] = "", got[256];
        size_t len = strlen(c->line);
        /* Bytes after the line (the stream's data) are left alone. */
        char buf[256];
        snprintf(buf, sizeof(buf), "%sGET / HTTP/1.1\r\n", c->line);
        int rc = proxyproto_v1_parse(buf, strlen(buf), &h, err, sizeof(err));
        if (rc != (int)len)
            fail_msg("case %zu: %s: rc %d, err %s", i, c->line, rc, err);
        dump(&h, got, sizeof(got));
        assert_string_equal(got, c->dump);
    }
}

static void test_v1_split(void **state)
{
    (void)state;
    /* Every proper prefix of a valid line asks for more; the whole line parses, byte by byte. */
    for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++) {
        const char *line = valid_cases[i].line;
        size_t len = strlen(line);
        struct proxyproto_v1 h;
        char err[256];
        for (size_t k = 0; k < len; k++)
            if (proxyproto_v1_parse(line, k, &h, err, sizeof(err)) != 0)
                fail_msg("case %zu: prefix of %zu bytes not accepted as incomplete: %s", i, k, err);
        assert_int_equal(proxyproto_v1_parse(line, len, &h, err, sizeof(err)), (int)len);
    }
}

static void test_v1_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const struct bad_case *c = &bad_cases[i];
        struct proxyproto_v1 h;
        char err[256] = "";
        size_t len = c->len ? c->len : strlen(c->line);
        int rc = proxyproto_v1_parse(c->line, len, &h, err, sizeof(err));
        if (rc != -1 || !strstr(err, c->err))
            fail_msg("case %zu: %s: rc %d, err \"%s\", want \"%s\"", i, c->line, rc, err, c->err);
        assert_int_equal(h.family, PROXYPROTO_UNKNOWN);
        assert_int_equal(h.src_port, 0);
        assert_non_null(strstr(err, "PROXY line: "));
    }
}

static void test_v1_early_refusal(void **state)
{
    (void)state;
    struct proxyproto_v1 h;
    char err[256];
    /* A peer that speaks something else is refused on its first wrong byte, not after 107 bytes. */
    assert_int_equal(proxyproto_v1_parse("G", 1, &h, err, sizeof(err)), -1);
    assert_int_equal(proxyproto_v1_parse("PROXY X", 7, &h, err, sizeof(err)), -1);
    assert_int_equal(proxyproto_v1_parse("PROXY TCP4 1.2.3.4 a", 20, &h, err, sizeof(err)), -1);
    assert_int_equal(proxyproto_v1_parse("PROXY TCP6 ::1 g", 16, &h, err, sizeof(err)), -1);
    assert_int_equal(proxyproto_v1_parse("", 0, &h, err, sizeof(err)), 0);
    assert_int_equal(proxyproto_v1_parse("PROX", 4, &h, err, sizeof(err)), 0);
    assert_int_equal(proxyproto_v1_parse("PROXY TCP6 ::1 ::1 1 2\r", 23, &h, err, sizeof(err)), 0);
}

static void test_v1_length_limit(void **state)
{
    (void)state;
    struct proxyproto_v1 h;
    char err[256], buf[160];
    /* The spec's worst case is exactly 107 bytes and valid. */
    const char *worst =
        "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    assert_int_equal(strlen(worst), PROXYPROTO_V1_MAX);
    assert_int_equal(proxyproto_v1_parse(worst, strlen(worst), &h, err, sizeof(err)), PROXYPROTO_V1_MAX);
    /* One byte more (CRLF at bytes 107-108) is refused, whether the LF has arrived or not. */
    char filler[92];
    memset(filler, 'a', 91);
    filler[91] = '\0';
    snprintf(buf, sizeof(buf), "PROXY UNKNOWN x%s\r\n", filler);
    assert_int_equal(strlen(buf), PROXYPROTO_V1_MAX + 1);
    assert_int_equal(proxyproto_v1_parse(buf, strlen(buf), &h, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "107"));
    assert_int_equal(proxyproto_v1_parse(buf, PROXYPROTO_V1_MAX, &h, err, sizeof(err)), -1);
    /* 107 bytes without any CR. */
    memset(buf, 'a', sizeof(buf));
    memcpy(buf, "PROXY UNKNOWN ", 14);
    assert_int_equal(proxyproto_v1_parse(buf, PROXYPROTO_V1_MAX - 1, &h, err, sizeof(err)), 0);
    assert_int_equal(proxyproto_v1_parse(buf, PROXYPROTO_V1_MAX, &h, err, sizeof(err)), -1);
    assert_int_equal(proxyproto_v1_parse(buf, sizeof(buf), &h, err, sizeof(err)), -1);
}

struct circ_case {
    const char *line;
    int rc;
    uint32_t id;
    uint16_t vport;
    const char *err;
};

static const struct circ_case circ_cases[] = {
    {"PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 80\r\n", 0, 59, 80, NULL},
    {"PROXY TCP6 fc00:dead:beef:4dad::0:29a ::1 666 42\r\n", 0, 666, 42, NULL},
    {"PROXY TCP6 fc00:dead:beef:4dad::ffff:ffff ::1 65535 42\r\n", 0, UINT32_MAX, 42, NULL},
    {"PROXY TCP6 fc00:dead:beef:4dad::1:0 ::1 0 8080\r\n", 0, 65536, 8080, NULL},
    {"PROXY TCP6 fc00:dead:beef:4dad::12:3456 ::1 13398 443\r\n", 0, 0x123456, 443, NULL},
    {"PROXY TCP6 fc00:dead:beef:4dad::0:0 ::1 1 80\r\n", 0, 0, 80, NULL}, /* tor's "no circuit" */
    {"PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 60 80\r\n", -1, 0, 0, "does not match circuit id 59"},
    {"PROXY TCP6 fc00:dead:beef:4dad::0:0 ::1 0 80\r\n", -1, 0, 0, "does not match"},
    {"PROXY TCP6 fc00:dead:beef:4dae::0:3b ::1 59 80\r\n", -1, 0, 0, "outside tor's"},
    {"PROXY TCP6 fc00:dead:beef:4dad:1::3b ::1 59 80\r\n", -1, 0, 0, "outside tor's"},
    {"PROXY TCP6 ::1 ::1 59 80\r\n", -1, 0, 0, "outside tor's"},
    {"PROXY TCP4 10.0.0.59 127.0.0.1 59 80\r\n", -1, 0, 0, "TCP4, not tor's"},
    {"PROXY UNKNOWN\r\n", -1, 0, 0, "UNKNOWN, not tor's"},
    /* a virtual port is 1-65535: port 0 did not come from tor */
    {"PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 0\r\n", -1, 0, 0, "destination port 0 is not a virtual port"},
    {"PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 65535\r\n", 0, 59, 65535, NULL},
};

static void test_tor_circuit(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(circ_cases) / sizeof(circ_cases[0]); i++) {
        const struct circ_case *c = &circ_cases[i];
        struct proxyproto_v1 h;
        char err[256] = "";
        uint32_t id = 12345;
        uint16_t vport = 7;
        assert_int_equal(proxyproto_v1_parse(c->line, strlen(c->line), &h, err, sizeof(err)), (int)strlen(c->line));
        int rc = proxyproto_tor_circuit(&h, &id, &vport, err, sizeof(err));
        if (rc != c->rc)
            fail_msg("case %zu: %s: rc %d (%s)", i, c->line, rc, err);
        if (rc == 0) {
            assert_int_equal(id, c->id);
            assert_int_equal(vport, c->vport);
        } else if (!strstr(err, c->err)) {
            fail_msg("case %zu: err \"%s\", want \"%s\"", i, err, c->err);
        }
    }
}

static void test_v2_encode(void **state)
{
    (void)state;
    /* circuit 0x1234abcd on virtual port 443, written out by hand from spec 2.2. */
    static const uint8_t want[PROXYPROTO_V2_LEN] = {
        0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A, /* signature */
        0x21,                                                                   /* v2, PROXY */
        0x21,                                                                   /* AF_INET6, STREAM */
        0x00, 0x2B,                                                             /* 43 bytes follow */
        0xfc, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x4d, 0xad, 0, 0, 0, 0, 0x12, 0x34, 0xab, 0xcd, /* src */
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,                                   /* dst ::1 */
        0xab, 0xcd,                                                             /* src port */
        0x01, 0xbb,                                                             /* dst port 443 */
        0xE0, 0x00, 0x04, 0x12, 0x34, 0xab, 0xcd,                               /* circuit id TLV */
    };
    uint8_t out[PROXYPROTO_V2_LEN + 8];
    memset(out, 0xee, sizeof(out));
    assert_int_equal(proxyproto_v2_encode(0x1234abcd, 443, out, sizeof(out)), PROXYPROTO_V2_LEN);
    assert_memory_equal(out, want, PROXYPROTO_V2_LEN);
    assert_int_equal(out[PROXYPROTO_V2_LEN], 0xee); /* nothing written past the header */
    /* The length field covers exactly what follows the 16-byte header. */
    assert_int_equal((out[14] << 8 | out[15]) + 16, PROXYPROTO_V2_LEN);

    /* Another id: only the id and port bytes change. */
    uint8_t out2[PROXYPROTO_V2_LEN];
    assert_int_equal(proxyproto_v2_encode(59, 80, out2, sizeof(out2)), PROXYPROTO_V2_LEN);
    assert_memory_equal(out2, want, 16);
    assert_int_equal(out2[28], 0);
    assert_int_equal(out2[31], 59);
    assert_int_equal(out2[48] << 8 | out2[49], 59);
    assert_int_equal(out2[50] << 8 | out2[51], 80);
    assert_int_equal(out2[58], 59);

    /* The source address is the one tor's v1 line would carry for the same circuit. */
    struct proxyproto_v1 h;
    char err[128];
    const char *line = "PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 80\r\n";
    assert_int_equal(proxyproto_v1_parse(line, strlen(line), &h, err, sizeof(err)), (int)strlen(line));
    assert_memory_equal(out2 + 16, h.src, 16);
    assert_memory_equal(out2 + 32, h.dst, 16);

    /* Too small a buffer: nothing written. */
    memset(out, 0xee, sizeof(out));
    assert_int_equal(proxyproto_v2_encode(1, 1, out, PROXYPROTO_V2_LEN - 1), 0);
    assert_int_equal(out[0], 0xee);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v1_valid),         cmocka_unit_test(test_v1_split),
        cmocka_unit_test(test_v1_malformed),     cmocka_unit_test(test_v1_early_refusal),
        cmocka_unit_test(test_v1_length_limit),  cmocka_unit_test(test_tor_circuit),
        cmocka_unit_test(test_v2_encode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
