/* test_cp_reply.c — unit tests for controlproto/cp_reply.c: framing of control-port replies
 * (control-spec 2.3, 2.4).
 *
 * One table of input -> canonical dump of every reply parsed (and the error, if any). Each row is fed
 * whole, one byte at a time and in random chunk sizes, and (where it has CRLFs) again with bare LFs; all
 * deliveries must give the row's dump. The lines are tor's own: TOR-FACTS.md and control-spec examples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controlproto/cp_reply.h"

#define BYTES(s) s, sizeof(s) - 1

/* Real identifiers for the sample lines. */
#define ONION "2gzyxa5ihm7nsggfxnu52rck2vv4rvmdlkiu3zzui5du4xyclen53wid"
#define HSDIR "$5A0F3BCF2E5E09E57F6E0D3E7A8F95B7C0FAFC63~test004r"
#define DESCID "Gk1kbZk7YQJtfV8GvwVgN5+cs0cXnBdRZ9xf4jG4+E0"

/* ---- canonical dump ---- */

struct dump {
    char buf[16384];
    size_t len;
    char input[4096]; /* scratch copy of a row's input */
};

static void
dump_add(struct dump *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
dump_add(struct dump *d, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(d->buf + d->len, sizeof(d->buf) - d->len, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof(d->buf) - d->len);
    d->len += (size_t)n;
}

/* `n` bytes of `s` with \n \r \t \\ and other non-printable bytes escaped. */
static void
dump_escaped(struct dump *d, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '\n')
            dump_add(d, "\\n");
        else if (c == '\r')
            dump_add(d, "\\r");
        else if (c == '\t')
            dump_add(d, "\\t");
        else if (c == '\\')
            dump_add(d, "\\\\");
        else if (c < 0x20 || c >= 0x7f)
            dump_add(d, "\\x%02x", c);
        else
            dump_add(d, "%c", c);
    }
}

/* Dump one reply as
 *   [650 event]
 *    650+HS_DESC_CONTENT ...
 *     data[12] line one\nline two\n
 *    650 OK
 * and check the invariants cp_reply.h promises. */
static void
dump_reply(struct dump *d, const struct cp_reply *r)
{
    size_t i;

    assert_true(r->n_lines > 0);
    assert_non_null(r->lines);
    assert_int_equal(r->lines[r->n_lines - 1].sep, ' ');
    assert_int_equal(r->status, r->lines[r->n_lines - 1].status);
    assert_int_equal(r->is_event, r->status / 100 == 6);
    assert_int_equal(cp_reply_is_ok(r), r->status / 100 == 2);
    assert_ptr_equal(cp_reply_message(r), r->lines[r->n_lines - 1].text);
    dump_add(d, "[%03d %s]\n", r->status, r->is_event ? "event" : "reply");
    for (i = 0; i < r->n_lines; i++) {
        const struct cp_line *l = &r->lines[i];

        assert_true(l->sep == '-' || l->sep == '+' || (l->sep == ' ' && i == r->n_lines - 1));
        assert_non_null(l->text);
        dump_add(d, " %03d%c", l->status, l->sep);
        dump_escaped(d, l->text, strlen(l->text));
        dump_add(d, "\n");
        if (l->sep == '+') {
            assert_non_null(l->data);
            assert_int_equal(l->data[l->data_len], '\0');
            dump_add(d, "  data[%zu] ", l->data_len);
            dump_escaped(d, l->data, l->data_len);
            dump_add(d, "\n");
        } else {
            assert_null(l->data);
            assert_int_equal(l->data_len, 0);
        }
    }
}

static void
dump_drain(struct dump *d, struct cp_reply_parser *p)
{
    struct cp_reply *r;

    while ((r = cp_reply_parser_next(p)) != NULL) {
        dump_reply(d, r);
        cp_reply_free(r);
    }
}

/* ---- delivery ---- */

enum delivery { DELIVER_WHOLE, DELIVER_BYTES, DELIVER_RANDOM };

static uint32_t
rnd(uint32_t *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return *seed >> 16;
}

/* Feed `in` to a new parser as `how` says, taking replies after every feed; dump everything, the error
 * last. */
static void
run_parser(const char *in, size_t len, size_t max_line, size_t max_reply, enum delivery how, uint32_t seed,
           size_t max_chunk, struct dump *d)
{
    struct cp_reply_parser *p = cp_reply_parser_new(max_line, max_reply);
    size_t off = 0;
    char err[256];

    assert_non_null(p);
    d->len = 0;
    d->buf[0] = '\0';
    while (off < len) {
        size_t n = how == DELIVER_WHOLE ? len - off : how == DELIVER_BYTES ? 1 : 1 + rnd(&seed) % max_chunk;

        if (n > len - off)
            n = len - off;
        err[0] = '\0';
        if (cp_reply_parser_feed(p, in + off, n, err, sizeof(err)) < 0) {
            dump_drain(d, p);
            assert_true(err[0] != '\0');
            dump_add(d, "error: %s\n", err);
            /* the parser stays failed */
            assert_int_equal(cp_reply_parser_feed(p, "250 OK\r\n", 8, err, sizeof(err)), -1);
            assert_non_null(strstr(err, "parser failed earlier: "));
            assert_null(cp_reply_parser_next(p));
            break;
        }
        off += n;
        dump_drain(d, p);
    }
    cp_reply_parser_free(p);
}

/* ---- the table ---- */

struct reply_case {
    const char *name;
    const char *in;
    size_t len;
    size_t max_line;  /* 0: default */
    size_t max_reply; /* 0: default */
    const char *want;
};

#define CASE(name, in, want) {name, BYTES(in), 0, 0, want}
#define CASE_CAPS(name, in, max_line, max_reply, want) {name, BYTES(in), max_line, max_reply, want}

static const struct reply_case reply_cases[] = {
    /* -- command replies -- */
    CASE("single 250", "250 OK\r\n", "[250 reply]\n 250 OK\n"),
    CASE("552 error", "552 Unrecognized key \"onions/nonsense\"\r\n",
         "[552 reply]\n 552 Unrecognized key \"onions/nonsense\"\n"),
    CASE("515 auth error",
         "515 Authentication failed: Safe cookie response did not match expected value.\r\n",
         "[515 reply]\n 515 Authentication failed: Safe cookie response did not match expected value.\n"),
    CASE("512 non-anonymous",
         "512 Tor is in non-anonymous hidden service mode\r\n",
         "[512 reply]\n 512 Tor is in non-anonymous hidden service mode\n"),
    CASE("PROTOCOLINFO",
         "250-PROTOCOLINFO 1\r\n"
         "250-AUTH METHODS=COOKIE,SAFECOOKIE COOKIEFILE=\"/run/tor/control.authcookie\"\r\n"
         "250-VERSION Tor=\"0.4.9.11\"\r\n"
         "250 OK\r\n",
         "[250 reply]\n"
         " 250-PROTOCOLINFO 1\n"
         " 250-AUTH METHODS=COOKIE,SAFECOOKIE COOKIEFILE=\"/run/tor/control.authcookie\"\n"
         " 250-VERSION Tor=\"0.4.9.11\"\n"
         " 250 OK\n"),
    CASE("ADD_ONION",
         "250-ServiceID=" ONION "\r\n"
         "250-PrivateKey=ED25519-V3:oKu1Hk0hsyyH1A6ZrAvg+Zb9/a9v9U7QA3oq0jYC0WMl9s7sm3iTSbyA9b8QvPHA7qBV/a==\r\n"
         "250 OK\r\n",
         "[250 reply]\n"
         " 250-ServiceID=" ONION "\n"
         " 250-PrivateKey=ED25519-V3:oKu1Hk0hsyyH1A6ZrAvg+Zb9/a9v9U7QA3oq0jYC0WMl9s7sm3iTSbyA9b8QvPHA7qBV/a==\n"
         " 250 OK\n"),
    CASE("MAPADDRESS mixes status codes (control-spec 3.8)",
         "512-syntax error: invalid address '@@@'\r\n"
         "250 127.199.80.246=bogus1.google.com\r\n",
         "[250 reply]\n"
         " 512-syntax error: invalid address '@@@'\n"
         " 250 127.199.80.246=bogus1.google.com\n"),
    CASE("empty reply text", "250 \r\n", "[250 reply]\n 250 \n"),
    /* -- data blocks -- */
    CASE("data block with dot-stuffing",
         "250+config-text=\r\n"
         "SocksPort 0\r\n"
         "..hidden\r\n"
         "..\r\n"
         "\r\n"
         "...\r\n"
         "HiddenServiceDir /var/lib/tor/hs\r\n"
         ".\r\n"
         "250 OK\r\n",
         "[250 reply]\n"
         " 250+config-text=\n"
         "  data[59] SocksPort 0\\n.hidden\\n.\\n\\n..\\nHiddenServiceDir /var/lib/tor/hs\\n\n"
         " 250 OK\n"),
    CASE("any leading dot is removed (RFC 2821 4.5.2)",
         "250+x=\r\n.a\r\n. b\r\n.\r\n250 OK\r\n",
         "[250 reply]\n 250+x=\n  data[5] a\\n b\\n\n 250 OK\n"),
    CASE("data block between mid lines",
         "250-version=0.4.9.11\r\n"
         "250+config-text=\r\n"
         "SocksPort 0\r\n"
         ".\r\n"
         "250-status/bootstrap-phase=NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY=\"Done\"\r\n"
         "250 OK\r\n",
         "[250 reply]\n"
         " 250-version=0.4.9.11\n"
         " 250+config-text=\n"
         "  data[12] SocksPort 0\\n\n"
         " 250-status/bootstrap-phase=NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY=\"Done\"\n"
         " 250 OK\n"),
    CASE("two data blocks in one reply",
         "250+a=\r\n1\r\n.\r\n250+b=\r\n2\r\n.\r\n250 OK\r\n",
         "[250 reply]\n 250+a=\n  data[2] 1\\n\n 250+b=\n  data[2] 2\\n\n 250 OK\n"),
    CASE("empty data block", "250+onions/detached=\r\n.\r\n250 OK\r\n",
         "[250 reply]\n 250+onions/detached=\n  data[0] \n 250 OK\n"),
    CASE("data block of one empty line (tor's failed HS_DESC_CONTENT)",
         "650+HS_DESC_CONTENT UNKNOWN " DESCID " UNKNOWN\r\n\r\n.\r\n650 OK\r\n",
         "[650 event]\n 650+HS_DESC_CONTENT UNKNOWN " DESCID " UNKNOWN\n  data[1] \\n\n 650 OK\n"),
    CASE("data lines may hold a CR, tabs and 8-bit bytes",
         "250+x=\r\na\rb\t\xc3\xa9\r\n.\r\n250 OK\r\n",
         "[250 reply]\n 250+x=\n  data[7] a\\rb\\t\\xc3\\xa9\\n\n 250 OK\n"),
    CASE("a status-like line inside a data block is data",
         "250+x=\r\n250 OK\r\n650 CIRC 1 BUILT\r\n.\r\n250 OK\r\n",
         "[250 reply]\n 250+x=\n  data[24] 250 OK\\n650 CIRC 1 BUILT\\n\n 250 OK\n"),
    /* -- events -- */
    CASE("650 single line (CIRC of a single onion)",
         "650 CIRC 7 BUILT " HSDIR " BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL PURPOSE=HS_SERVICE_INTRO "
         "HS_STATE=HSSI_CONNECTING TIME_CREATED=2025-12-03T05:20:01.123456\r\n",
         "[650 event]\n 650 CIRC 7 BUILT " HSDIR " BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL "
         "PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING TIME_CREATED=2025-12-03T05:20:01.123456\n"),
    CASE("HS_DESC events back to back (TOR-FACTS.md)",
         "650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " DESCID "\r\n"
         "650 HS_DESC UPLOAD " ONION " UNKNOWN " HSDIR " " DESCID
         " HSDIR_INDEX=4CEA73E4D7A1D9C5A4A6F4D1E0E1B4B92B1A3C0C4F5B6E7D8C9A0B1C2D3E4F50\r\n"
         "650 HS_DESC UPLOADED " ONION " UNKNOWN " HSDIR "\r\n"
         "650 HS_DESC FAILED " ONION " NO_AUTH " HSDIR " " DESCID " REASON=UPLOAD_REJECTED\r\n",
         "[650 event]\n 650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " DESCID "\n"
         "[650 event]\n 650 HS_DESC UPLOAD " ONION " UNKNOWN " HSDIR " " DESCID
         " HSDIR_INDEX=4CEA73E4D7A1D9C5A4A6F4D1E0E1B4B92B1A3C0C4F5B6E7D8C9A0B1C2D3E4F50\n"
         "[650 event]\n 650 HS_DESC UPLOADED " ONION " UNKNOWN " HSDIR "\n"
         "[650 event]\n 650 HS_DESC FAILED " ONION " NO_AUTH " HSDIR " " DESCID " REASON=UPLOAD_REJECTED\n"),
    CASE("650 multi-line (CONF_CHANGED, 4.1.18)",
         "650-CONF_CHANGED\r\n650-HiddenServiceDir=/var/lib/onionfront/hs/web\r\n650-SocksPort\r\n650 OK\r\n",
         "[650 event]\n 650-CONF_CHANGED\n 650-HiddenServiceDir=/var/lib/onionfront/hs/web\n"
         " 650-SocksPort\n 650 OK\n"),
    CASE("650 extended event (4.1)",
         "650-CIRC 1000 EXTENDED moria1,moria2 0xBEEF\r\n650-EXTRAMAGIC=99\r\n650 ANONYMITY=high\r\n",
         "[650 event]\n 650-CIRC 1000 EXTENDED moria1,moria2 0xBEEF\n 650-EXTRAMAGIC=99\n 650 ANONYMITY=high\n"),
    CASE("650+ HS_DESC_CONTENT with a descriptor",
         "650+HS_DESC_CONTENT " ONION " " DESCID " " HSDIR "\r\n"
         "hs-descriptor 3\r\n"
         "descriptor-lifetime 180\r\n"
         "descriptor-signing-key-cert\r\n"
         "-----BEGIN ED25519 CERT-----\r\n"
         "AQgABvn+AUmvNXPHn2Ct/3AaI1TGqxsbCrsCBjl4GzpQE3Op4GA0AQAgBABu+iVt\r\n"
         "-----END ED25519 CERT-----\r\n"
         "revision-counter 3021285743\r\n"
         "signature VMN1BBX9rTpb1pGQ2dZw6Ga5N1Ru0P8rZ7HCcAgq/HtjKW0Y0GqZJfD+3mZ0KxQ\r\n"
         ".\r\n"
         "650 OK\r\n",
         "[650 event]\n"
         " 650+HS_DESC_CONTENT " ONION " " DESCID " " HSDIR "\n"
         "  data[291] hs-descriptor 3\\ndescriptor-lifetime 180\\ndescriptor-signing-key-cert\\n"
         "-----BEGIN ED25519 CERT-----\\nAQgABvn+AUmvNXPHn2Ct/3AaI1TGqxsbCrsCBjl4GzpQE3Op4GA0AQAgBABu+iVt\\n"
         "-----END ED25519 CERT-----\\nrevision-counter 3021285743\\n"
         "signature VMN1BBX9rTpb1pGQ2dZw6Ga5N1Ru0P8rZ7HCcAgq/HtjKW0Y0GqZJfD+3mZ0KxQ\\n\n"
         " 650 OK\n"),
    /* -- events between a command and its reply -- */
    CASE("event arrives before the command's reply",
         "650 HS_DESC UPLOADED " ONION " UNKNOWN " HSDIR "\r\n"
         "250-ServiceID=" ONION "\r\n"
         "250 OK\r\n",
         "[650 event]\n 650 HS_DESC UPLOADED " ONION " UNKNOWN " HSDIR "\n"
         "[250 reply]\n 250-ServiceID=" ONION "\n 250 OK\n"),
    CASE("replies and events in arrival order",
         "250 OK\r\n"
         "650 HS_DESC REQUESTED " ONION " NO_AUTH " HSDIR " " DESCID "\r\n"
         "650-CONF_CHANGED\r\n650-SocksPort\r\n650 OK\r\n"
         "650+HS_DESC_CONTENT UNKNOWN " DESCID " UNKNOWN\r\n\r\n.\r\n650 OK\r\n"
         "552 Unrecognized key \"x\"\r\n",
         "[250 reply]\n 250 OK\n"
         "[650 event]\n 650 HS_DESC REQUESTED " ONION " NO_AUTH " HSDIR " " DESCID "\n"
         "[650 event]\n 650-CONF_CHANGED\n 650-SocksPort\n 650 OK\n"
         "[650 event]\n 650+HS_DESC_CONTENT UNKNOWN " DESCID " UNKNOWN\n  data[1] \\n\n 650 OK\n"
         "[552 reply]\n 552 Unrecognized key \"x\"\n"),
    /* -- line endings -- */
    CASE("bare LF and CRLF mixed",
         "250-a\n250+b=\r\nx\n..y\r\n.\n250 OK\r\n",
         "[250 reply]\n 250-a\n 250+b=\n  data[5] x\\n.y\\n\n 250 OK\n"),
    CASE("a CR not before LF stays in the text", "250 a\rb\r\n", "[250 reply]\n 250 a\\rb\n"),
    /* -- incomplete input: nothing yet, no error -- */
    CASE("incomplete end line", "250-a\r\n250 O", ""),
    CASE("incomplete data block", "250+x=\r\ndata\r\n..\r\n", ""),
    CASE("incomplete event line", "650 CIRC 1 BUILT", ""),
    CASE("reply then incomplete event", "250 OK\r\n650-CONF_CHANGED\r\n650-SocksPort\r\n",
         "[250 reply]\n 250 OK\n"),
    /* -- malformed lines -- */
    CASE("too short", "25\r\n", "error: line 1: too short for a status line: \"25\"\n"),
    CASE("status code without separator", "250\r\n", "error: line 1: too short for a status line: \"250\"\n"),
    CASE("empty line", "\r\n", "error: line 1: too short for a status line: \"\"\n"),
    CASE("non-digit status", "2x0 OK\r\n", "error: line 1: status code is not three digits: \"2x0 OK\"\n"),
    CASE("not a control port", "HTTP/1.0 501 Tor is not an HTTP Proxy\r\n",
         "error: line 1: status code is not three digits: \"HTTP/1.0 501 Tor\"\n"),
    CASE("bad separator", "250:OK\r\n",
         "error: line 1: separator after status 250 is not '-', ' ' or '+': \"250:OK\"\n"),
    CASE("four-digit status", "2500 OK\r\n",
         "error: line 1: separator after status 250 is not '-', ' ' or '+': \"2500 OK\"\n"),
    CASE("NUL in a status line", "250 a\0b\r\n", "error: line 1: NUL byte in status line \"250 a\\x00b\"\n"),
    CASE("replies before an error are kept", "250 OK\r\n650 CIRC 1 BUILT\r\n2x0 OK\r\n",
         "[250 reply]\n 250 OK\n[650 event]\n 650 CIRC 1 BUILT\n"
         "error: line 3: status code is not three digits: \"2x0 OK\"\n"),
    CASE("line numbers count data lines", "250+x=\r\na\r\nb\r\n.\r\n250-y\r\n250\r\n",
         "error: line 6: too short for a status line: \"250\"\n"),
    CASE("event inside a command reply (control-spec 4.1: disallowed)",
         "250-SOCKSPORT=9050\r\n650 CIRC 1000 EXTENDED moria1,moria2\r\n250 ORPORT=0\r\n",
         "error: line 2: status 650 inside the reply that began with 250 at line 1: \"650 CIRC 1000 EX\"\n"),
    CASE("command reply inside an event", "650-CONF_CHANGED\r\n250 OK\r\n",
         "error: line 2: status 250 inside the event that began with 650 at line 1: \"250 OK\"\n"),
    CASE("event changes its status code", "650-CONF_CHANGED\r\n651 OK\r\n",
         "error: line 2: status changed from 650 to 651 inside an event: \"651 OK\"\n"),
    /* -- line cap (32 bytes without the line ending) -- */
    CASE_CAPS("line at the cap", "250 4567890123456789012345678901\r\n250 OK\n", 32, 0,
              "[250 reply]\n 250 4567890123456789012345678901\n[250 reply]\n 250 OK\n"),
    CASE_CAPS("line one over the cap", "250 45678901234567890123456789012\r\n", 32, 0,
              "error: line 1: longer than 32 bytes: \"250 456789012345...\"\n"),
    CASE_CAPS("line at the cap, CR pending", "250 4567890123456789012345678901\r", 32, 0, ""),
    CASE_CAPS("line at the cap, CR then more", "250 4567890123456789012345678901\rx", 32, 0,
              "error: line 1: longer than 32 bytes: \"250 456789012345...\"\n"),
    CASE_CAPS("over-long line without its end", "250-4567890123456789012345678901234567890", 32, 0,
              "error: line 1: longer than 32 bytes: \"250-456789012345...\"\n"),
    CASE_CAPS("over-long line does not quote a key",
              "250-ServiceID=" ONION "\r\n"
              "250-PrivateKey=ED25519-V3:oKu1Hk0hsyyH1A6ZrAvg+Zb9/a9v9U7QA3oq0jYC0WMl9s7sm3iTSbyA9b8QvPHA7qBV/a==\r\n",
              80, 0, "error: line 2: longer than 80 bytes: \"250-PrivateKey=E...\"\n"),
    CASE_CAPS("over-long data line is not quoted",
              "250+x=\r\nshort\r\nSECRETSECRETSECRETSECRETSECRETSECRETSECRET\r\n", 32, 0,
              "error: line 3: data-block line longer than 32 bytes\n"),
    CASE_CAPS("tiny line cap quotes no more than the cap", "250 OK\r\n", 4, 0,
              "error: line 1: longer than 4 bytes: \"250 ...\"\n"),
    /* -- reply cap: wire bytes + CP_REPLY_LINE_OVERHEAD (96) per status line; 448 = 4 x (16 + 96) -- */
    CASE_CAPS("reply at the cap",
              "250-0123456789\r\n250-0123456789\r\n250-0123456789\r\n250 0123456789\r\n", 0, 448,
              "[250 reply]\n 250-0123456789\n 250-0123456789\n 250-0123456789\n 250 0123456789\n"),
    CASE_CAPS("the cap is per reply",
              "250-0123456789\r\n250-0123456789\r\n250-0123456789\r\n250 0123456789\r\n"
              "650-0123456789\r\n650-0123456789\r\n650-0123456789\r\n650 0123456789\r\n",
              0, 448,
              "[250 reply]\n 250-0123456789\n 250-0123456789\n 250-0123456789\n 250 0123456789\n"
              "[650 event]\n 650-0123456789\n 650-0123456789\n 650-0123456789\n 650 0123456789\n"),
    CASE_CAPS("reply over the cap",
              "250 OK\r\n"
              "250-0123456789\r\n250-0123456789\r\n250-0123456789\r\n250-0123456789\r\n250 OK\r\n",
              0, 448,
              "[250 reply]\n 250 OK\n"
              "error: line 6: the reply that began at line 2 is larger than 448 bytes (5 lines; each status line "
              "counts 96 bytes beyond its text)\n"),
    /* The review's finding: millions of empty lines are few wire bytes but much memory. Five of them
     * (30 bytes on the wire) are over a 448-byte cap. */
    CASE_CAPS("empty lines count what they cost in memory", "250-\r\n250-\r\n250-\r\n250-\r\n250-\r\n250 OK\r\n", 0,
              448,
              "error: line 5: the reply that began at line 1 is larger than 448 bytes (5 lines; each status line "
              "counts 96 bytes beyond its text)\n"),
    CASE_CAPS("data block over the reply cap",
              "250+config-text=\r\nSocksPort 0\r\nHiddenServiceDir /var/lib/tor/hs/web\r\n.\r\n250 OK\r\n",
              0, 150,
              "error: line 3: the reply that began at line 1 is larger than 150 bytes (3 lines; each status line "
              "counts 96 bytes beyond its text)\n"),
};

static bool
has_crlf(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i + 1 < n; i++) {
        if (s[i] == '\r' && s[i + 1] == '\n')
            return true;
    }
    return false;
}

static void
expect_dump(const struct reply_case *c, const char *how, const struct dump *d)
{
    if (strcmp(d->buf, c->want) != 0)
        fail_msg("case \"%s\", delivered %s:\n--- got\n%s--- want\n%s", c->name, how, d->buf, c->want);
}

static void
test_reply_table(void **state)
{
    struct dump *d = *state;
    size_t i;

    for (i = 0; i < sizeof(reply_cases) / sizeof(reply_cases[0]); i++) {
        const struct reply_case *c = &reply_cases[i];
        uint32_t seed;

        run_parser(c->in, c->len, c->max_line, c->max_reply, DELIVER_WHOLE, 0, 0, d);
        expect_dump(c, "whole", d);
        run_parser(c->in, c->len, c->max_line, c->max_reply, DELIVER_BYTES, 0, 0, d);
        expect_dump(c, "one byte at a time", d);
        for (seed = 1; seed <= 20; seed++) {
            char how[64];

            snprintf(how, sizeof(how), "in random chunks (seed %u)", (unsigned)seed);
            run_parser(c->in, c->len, c->max_line, c->max_reply, DELIVER_RANDOM, seed, seed <= 10 ? 7 : 40, d);
            expect_dump(c, how, d);
        }
    }
}

/* The same rows with every CRLF turned into a bare LF give the same replies: control-spec 2.1 lets tor
 * only send CRLF, but a lenient reader costs nothing. Rows near the reply cap are sized so that the two
 * bytes they lose per reply do not change the outcome. */
static void
test_reply_table_bare_lf(void **state)
{
    struct dump *d = *state;
    size_t i, n_run = 0;

    for (i = 0; i < sizeof(reply_cases) / sizeof(reply_cases[0]); i++) {
        const struct reply_case *c = &reply_cases[i];
        char *lf = d->input;
        size_t j, n = 0;

        if (!has_crlf(c->in, c->len))
            continue;
        assert_true(c->len <= sizeof(d->input));
        for (j = 0; j < c->len; j++) {
            if (!(c->in[j] == '\r' && j + 1 < c->len && c->in[j + 1] == '\n'))
                lf[n++] = c->in[j];
        }
        run_parser(lf, n, c->max_line, c->max_reply, DELIVER_WHOLE, 0, 0, d);
        expect_dump(c, "whole with bare LFs", d);
        run_parser(lf, n, c->max_line, c->max_reply, DELIVER_BYTES, 0, 0, d);
        expect_dump(c, "one byte at a time with bare LFs", d);
        run_parser(lf, n, c->max_line, c->max_reply, DELIVER_RANDOM, 99, 9, d);
        expect_dump(c, "in random chunks with bare LFs", d);
        n_run++;
    }
    assert_true(n_run > 40);
}

/* ---- single behaviours ---- */

static int
setup_dump(void **state)
{
    *state = calloc(1, sizeof(struct dump));
    return *state != NULL ? 0 : -1;
}

static int
teardown_dump(void **state)
{
    free(*state);
    return 0;
}

static int
setup_parser(void **state)
{
    *state = cp_reply_parser_new(0, 0);
    return *state != NULL ? 0 : -1;
}

static int
teardown_parser(void **state)
{
    cp_reply_parser_free(*state);
    return 0;
}

/* After an error every feed fails, naming the first error; replies completed before it can still be
 * taken. */
static void
test_failed_parser_stays_failed(void **state)
{
    struct cp_reply_parser *p = *state;
    struct cp_reply *r;
    char err[256];

    assert_int_equal(cp_reply_parser_feed(p, BYTES("250 OK\r\n250-a\r\n9\r\n"), err, sizeof(err)), -1);
    assert_string_equal(err, "line 3: too short for a status line: \"9\"");
    assert_int_equal(cp_reply_parser_feed(p, BYTES("250 OK\r\n"), err, sizeof(err)), -1);
    assert_string_equal(err, "parser failed earlier: line 3: too short for a status line: \"9\"");
    assert_int_equal(cp_reply_parser_feed(p, NULL, 0, err, sizeof(err)), -1);
    /* no error buffer is fine too */
    assert_int_equal(cp_reply_parser_feed(p, BYTES("250 OK\r\n"), NULL, 0), -1);
    assert_non_null(r = cp_reply_parser_next(p));
    assert_string_equal(cp_reply_message(r), "OK");
    cp_reply_free(r);
    assert_null(cp_reply_parser_next(p));
}

static void
test_error_without_buffer(void **state)
{
    struct cp_reply_parser *p = *state;

    assert_int_equal(cp_reply_parser_feed(p, BYTES("xyz\r\n"), NULL, 0), -1);
    assert_int_equal(cp_reply_parser_feed(p, BYTES("250 OK\r\n"), NULL, 0), -1);
}

/* Replies can be taken while later ones are still arriving; an empty feed is fine. */
static void
test_next_between_feeds(void **state)
{
    struct cp_reply_parser *p = *state;
    struct cp_reply *r1, *r2;
    char err[256];

    assert_null(cp_reply_parser_next(p));
    assert_int_equal(cp_reply_parser_feed(p, NULL, 0, err, sizeof(err)), 0);
    assert_int_equal(cp_reply_parser_feed(p, BYTES("250 OK\r\n650 CIRC 1 LAUNCHED\r\n250-"), err, sizeof(err)),
                     0);
    assert_non_null(r1 = cp_reply_parser_next(p));
    assert_int_equal(cp_reply_parser_feed(p, BYTES("version=0.4.9.11\r\n250 OK\r\n"), err, sizeof(err)), 0);
    assert_non_null(r2 = cp_reply_parser_next(p));
    assert_true(cp_reply_is_ok(r1));
    assert_false(r1->is_event);
    assert_true(r2->is_event);
    assert_false(cp_reply_is_ok(r2));
    assert_string_equal(cp_reply_message(r2), "CIRC 1 LAUNCHED");
    cp_reply_free(r1);
    cp_reply_free(r2);
    assert_non_null(r1 = cp_reply_parser_next(p));
    assert_int_equal(r1->n_lines, 2);
    assert_string_equal(r1->lines[0].text, "version=0.4.9.11");
    cp_reply_free(r1);
    assert_null(cp_reply_parser_next(p));
}

/* Many replies queued before any is taken (the queue grows and compacts). */
static void
test_many_queued(void **state)
{
    struct cp_reply_parser *p = *state;
    char err[256], line[64];
    int i, round;

    for (round = 0; round < 3; round++) {
        for (i = 0; i < 100; i++) {
            int n = snprintf(line, sizeof(line), "650 CIRC %d BUILT\r\n", i);

            assert_int_equal(cp_reply_parser_feed(p, line, (size_t)n, err, sizeof(err)), 0);
            if (i % 3 == 2) { /* take one now and then, so the queue has a head to compact */
                struct cp_reply *r = cp_reply_parser_next(p);

                assert_non_null(r);
                cp_reply_free(r);
            }
        }
        for (i = 0;; i++) {
            struct cp_reply *r = cp_reply_parser_next(p);

            if (r == NULL)
                break;
            cp_reply_free(r);
        }
        assert_int_equal(i, 100 - 33);
    }
}

/* "250 c" CR CR LF: only the CR right before the LF belongs to the line ending (control-spec 2.4, LineItem
 * allows a CR inside a line). Not in the table: turning CRLF into LF would change this input's meaning. */
static void
test_cr_before_crlf(void **state)
{
    struct cp_reply_parser *p = *state;
    struct cp_reply *r;
    char err[256];

    assert_int_equal(cp_reply_parser_feed(p, BYTES("250 c\r\r\n"), err, sizeof(err)), 0);
    assert_non_null(r = cp_reply_parser_next(p));
    assert_string_equal(cp_reply_message(r), "c\r");
    cp_reply_free(r);
}

static void
test_accessors_and_null(void **state)
{
    (void)state;
    cp_reply_free(NULL);
    cp_reply_parser_free(NULL);
    assert_false(cp_reply_is_ok(NULL));
    assert_string_equal(cp_reply_message(NULL), "");
    assert_null(cp_reply_parser_next(NULL));
}

/* The default caps: a 64 KiB line is fine, one byte more is not. */
static void
test_default_line_cap(void **state)
{
    struct cp_reply_parser *p = *state;
    size_t n = CP_REPLY_DEFAULT_MAX_LINE;
    char *line = malloc(n + 3);
    struct cp_reply *r;
    char err[256];

    assert_non_null(line);
    memcpy(line, "250 ", 4);
    memset(line + 4, 'x', n - 4);
    memcpy(line + n, "\r\n", 2);
    assert_int_equal(cp_reply_parser_feed(p, line, n + 2, err, sizeof(err)), 0);
    assert_non_null(r = cp_reply_parser_next(p));
    assert_int_equal(strlen(cp_reply_message(r)), n - 4);
    cp_reply_free(r);
    line[n] = 'x';
    memcpy(line + n + 1, "\r\n", 2);
    assert_int_equal(cp_reply_parser_feed(p, line, n + 3, err, sizeof(err)), -1);
    assert_string_equal(err, "line 2: longer than 65536 bytes: \"250 xxxxxxxxxxxx...\"");
    free(line);
}

/* Freeing a parser that holds queued replies, a partial reply, a partial data block and a partial line
 * leaks nothing (ASan checks). */
static void
test_free_with_pending(void **state)
{
    struct cp_reply_parser *p = cp_reply_parser_new(0, 0);
    char err[256];

    (void)state;
    assert_non_null(p);
    assert_int_equal(cp_reply_parser_feed(p, BYTES("250 OK\r\n650 CIRC 1 BUILT\r\n250-a\r\n250+b=\r\nsecret\r\npart"),
                                          err, sizeof(err)),
                     0);
    cp_reply_parser_free(p);
}

/* The review's flood: "250-" lines without end under the default cap. The parser gives up after at most
 * CP_REPLY_DEFAULT_MAX_REPLY / (6 + CP_REPLY_LINE_OVERHEAD) lines (about 164,000: some 10 MB held),
 * not after 2.8 million (171 MB); counting wire bytes only, it took 16 MiB / 6. */
static void
test_default_cap_bounds_lines(void **state)
{
    struct cp_reply_parser *p = cp_reply_parser_new(0, 0);
    char chunk[6 * 1024];
    char err[256];
    size_t lines = 0;
    int rc = 0;

    (void)state;
    assert_non_null(p);
    for (size_t i = 0; i < sizeof(chunk); i += 6)
        memcpy(chunk + i, "250-\r\n", 6);
    while (rc == 0 && lines < 3000000) {
        rc = cp_reply_parser_feed(p, chunk, sizeof(chunk), err, sizeof(err));
        lines += sizeof(chunk) / 6;
    }
    assert_int_equal(rc, -1);
    assert_true(lines <= CP_REPLY_DEFAULT_MAX_REPLY / (6 + CP_REPLY_LINE_OVERHEAD) + sizeof(chunk) / 6);
    assert_non_null(strstr(err, "is larger than 16777216 bytes"));
    assert_non_null(strstr(err, "each status line counts 96 bytes beyond its text"));
    cp_reply_parser_free(p);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reply_table, setup_dump, teardown_dump),
        cmocka_unit_test(test_default_cap_bounds_lines),
        cmocka_unit_test_setup_teardown(test_reply_table_bare_lf, setup_dump, teardown_dump),
        cmocka_unit_test_setup_teardown(test_failed_parser_stays_failed, setup_parser, teardown_parser),
        cmocka_unit_test_setup_teardown(test_error_without_buffer, setup_parser, teardown_parser),
        cmocka_unit_test_setup_teardown(test_next_between_feeds, setup_parser, teardown_parser),
        cmocka_unit_test_setup_teardown(test_many_queued, setup_parser, teardown_parser),
        cmocka_unit_test_setup_teardown(test_cr_before_crlf, setup_parser, teardown_parser),
        cmocka_unit_test(test_accessors_and_null),
        cmocka_unit_test_setup_teardown(test_default_line_cap, setup_parser, teardown_parser),
        cmocka_unit_test(test_free_with_pending),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
