/* test_cp_kv.c — unit tests for controlproto/cp_kv.c: QuotedString quoting and unquoting (control-spec 2.1,
 * 2.1.1), bare tokens, Keyword=Value argument lists and GETINFO "key=value" lines.
 *
 * Tables of input -> canonical dump of the result (or the error the input must produce). The argument lines
 * are real ones: tor's PROTOCOLINFO answer, events from TOR-FACTS.md and control-spec section 4. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controlproto/cp_kv.h"

/* A string literal with its length, so that tables can hold NUL bytes. */
#define BYTES(s) s, sizeof(s) - 1

/* Append `n` bytes of `s` to `out` (size `outlen`), non-printable bytes and '"', '\\', '|' as \xNN. */
static void
dump_bytes(char *out, size_t outlen, const char *s, size_t n)
{
    size_t o = strlen(out);
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        assert_true(o + 5 < outlen);
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '|')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
    }
    out[o] = '\0';
}

static void
dump_str(char *out, size_t outlen, const char *s)
{
    dump_bytes(out, outlen, s, strlen(s));
}

static void
dump_lit(char *out, size_t outlen, const char *s)
{
    size_t o = strlen(out);

    assert_true(o + strlen(s) < outlen);
    memcpy(out + o, s, strlen(s) + 1);
}

/* Canonical form of parsed arguments: "pos=[a|b] kv=[K=v|L=]". */
static void
dump_args(const struct cp_args *a, char *out, size_t outlen)
{
    size_t i;

    out[0] = '\0';
    dump_lit(out, outlen, "pos=[");
    for (i = 0; i < a->n_pos; i++) {
        if (i > 0)
            dump_lit(out, outlen, "|");
        dump_str(out, outlen, a->pos[i]);
    }
    dump_lit(out, outlen, "] kv=[");
    for (i = 0; i < a->n_kv; i++) {
        if (i > 0)
            dump_lit(out, outlen, "|");
        dump_str(out, outlen, a->kv[i].key);
        dump_lit(out, outlen, "=");
        dump_str(out, outlen, a->kv[i].value);
    }
    dump_lit(out, outlen, "]");
}

/* ---- cp_quote ---- */

struct quote_case {
    const char *in;
    size_t len;
    const char *out; /* NULL: must fail */
    const char *err; /* substring of the error when out == NULL */
};

static const struct quote_case quote_cases[] = {
    {BYTES(""), "\"\"", NULL},
    {BYTES("plain"), "\"plain\"", NULL},
    {BYTES("80 127.0.0.1:8080"), "\"80 127.0.0.1:8080\"", NULL},
    {BYTES("a\"b"), "\"a\\\"b\"", NULL},
    {BYTES("C:\\tor\\hs"), "\"C:\\\\tor\\\\hs\"", NULL},
    {BYTES("\\n stays two bytes"), "\"\\\\n stays two bytes\"", NULL},
    {BYTES("tab\there"), "\"tab\there\"", NULL},
    {BYTES("\xc3\xa9t\xc3\xa9"), "\"\xc3\xa9t\xc3\xa9\"", NULL},
    {BYTES("x\r\nSIGNAL HALT"), NULL, "CR at offset 1"},
    {BYTES("x\nSIGNAL HALT"), NULL, "LF at offset 1"},
    {BYTES("ab\0cd"), NULL, "NUL byte at offset 2"},
};

static void
test_quote_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(quote_cases) / sizeof(quote_cases[0]); i++) {
        const struct quote_case *c = &quote_cases[i];
        char err[128] = "";
        char *q = cp_quote(c->in, c->len, err, sizeof(err));

        if (c->out != NULL) {
            if (q == NULL)
                fail_msg("case %zu: cp_quote failed: %s", i, err);
            assert_string_equal(q, c->out);
        } else {
            assert_null(q);
            if (strstr(err, c->err) == NULL)
                fail_msg("case %zu: error \"%s\" does not contain \"%s\"", i, err, c->err);
        }
        free(q);
    }
}

/* ---- cp_unquote ---- */

struct unquote_case {
    const char *in;
    size_t len;
    int rc;
    const char *out; /* expected bytes (rc == 0) or error substring (rc == -1) */
    size_t out_len;
    size_t consumed;
};

#define UQ_OK(in, out, consumed) {BYTES(in), 0, out, sizeof(out) - 1, consumed}
#define UQ_ERR(in, msg) {BYTES(in), -1, msg, 0, 0}

static const struct unquote_case unquote_cases[] = {
    UQ_OK("\"\"", "", 2),
    UQ_OK("\"abc\"", "abc", 5),
    UQ_OK("\"abc\" rest", "abc", 5),
    UQ_OK("\"/run/tor/control.authcookie\"", "/run/tor/control.authcookie", 29),
    UQ_OK("\"Connecting to a relay to build circuits\"", "Connecting to a relay to build circuits", 41),
    /* QuotedString escapes (2.1) */
    UQ_OK("\"a\\\"b\"", "a\"b", 6),
    UQ_OK("\"a\\\\b\"", "a\\b", 6),
    UQ_OK("\"it\\'s\"", "it's", 7),
    UQ_OK("\"\\q\\ \"", "q ", 6),
    /* CString escapes tor writes (2.1.1) */
    UQ_OK("\"l1\\nl2\\tx\\ry\"", "l1\nl2\tx\ry", 14),
    UQ_OK("\"\\0\"", "\0", 4),
    UQ_OK("\"\\000\\001\\377\"", "\0\001\377", 14),
    UQ_OK("\"\\101\\1010\"", "AA0", 11),
    UQ_OK("\"\\12x\"", "\nx", 6),
    UQ_OK("\"\\7\\08\"", "\a\0" "8", 7),
    UQ_OK("\"\\8\\9\"", "89", 6),
    UQ_OK("\"\\x41\"", "x41", 6),
    UQ_OK("\"\xc3\xa9\"", "\xc3\xa9", 4),
    /* errors */
    UQ_ERR("", "does not start"),
    UQ_ERR("abc\"", "does not start"),
    UQ_ERR("\"abc", "no closing"),
    UQ_ERR("\"abc\\\"", "no closing"),
    UQ_ERR("\"abc\\", "ends in a backslash at offset 4"),
    UQ_ERR("\"\\400\"", "\\400 at offset 1 is above \\377"),
    UQ_ERR("\"ok\\777\"", "\\777 at offset 3"),
};

static void
test_unquote_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(unquote_cases) / sizeof(unquote_cases[0]); i++) {
        const struct unquote_case *c = &unquote_cases[i];
        char err[128] = "";
        char *out = (char *)&err; /* must be reset to NULL on failure */
        size_t out_len = 99, consumed = 99;
        int rc = cp_unquote(c->in, c->len, &out, &out_len, &consumed, err, sizeof(err));

        if (rc != c->rc)
            fail_msg("case %zu (%s): rc %d, want %d (err \"%s\")", i, c->in, rc, c->rc, err);
        if (rc == 0) {
            assert_int_equal(out_len, c->out_len);
            assert_memory_equal(out, c->out, c->out_len);
            assert_int_equal(out[out_len], '\0');
            assert_int_equal(consumed, c->consumed);
        } else {
            assert_null(out);
            if (strstr(err, c->out) == NULL)
                fail_msg("case %zu: error \"%s\" does not contain \"%s\"", i, err, c->out);
        }
        free(out);
    }
}

/* cp_unquote reads at most `len` bytes: a closing quote beyond them does not count. */
static void
test_unquote_respects_len(void **state)
{
    const char *s = "\"abc\"";
    char *out = NULL;
    size_t out_len, consumed;
    char err[128];

    (void)state;
    assert_int_equal(cp_unquote(s, 4, &out, &out_len, &consumed, err, sizeof(err)), -1);
    assert_null(out);
    assert_non_null(strstr(err, "no closing"));
    /* A backslash as the last readable byte must not read past `len`. */
    assert_int_equal(cp_unquote("\"a\\\"", 3, &out, &out_len, &consumed, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "backslash"));
    /* An octal escape cut by `len` stops at `len`. */
    assert_int_equal(cp_unquote("\"\\1234\"", 4, &out, &out_len, &consumed, err, sizeof(err)), -1);
    assert_int_equal(cp_unquote("\"\\12\"", 5, &out, &out_len, &consumed, err, sizeof(err)), 0);
    assert_int_equal(out_len, 1);
    assert_int_equal(out[0], '\n');
    free(out);
}

/* Whatever cp_quote produces, cp_unquote gives back: every byte except CR, LF and NUL, including the
 * backslash-letter pairs (\n, \0) that 2.1.1 reads as C escapes. */
static void
test_quote_unquote_roundtrip(void **state)
{
    static const char alphabet[] = "ab \"\\nrt0178'\t\x01\x7f\xff=";
    uint32_t seed = 12345;
    int round;

    (void)state;
    for (round = 0; round < 2000; round++) {
        char in[40];
        size_t len, i;
        char err[128];
        char *q, *out;
        size_t out_len, consumed;

        seed = seed * 1103515245u + 12345u;
        len = (seed >> 16) % sizeof(in);
        for (i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            in[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
        }
        q = cp_quote(in, len, err, sizeof(err));
        assert_non_null(q);
        if (cp_unquote(q, strlen(q), &out, &out_len, &consumed, err, sizeof(err)) != 0)
            fail_msg("round %d: cannot unquote %s: %s", round, q, err);
        assert_int_equal(consumed, strlen(q));
        assert_int_equal(out_len, len);
        assert_memory_equal(out, in, len);
        free(q);
        free(out);
    }
}

/* ---- cp_is_bare_token ---- */

static void
test_is_bare_token(void **state)
{
    static const struct {
        const char *s;
        bool bare;
    } cases[] = {
        {"ED25519-V3", true},
        {"$0123456789ABCDEF0123456789ABCDEF01234567~relay1", true},
        {"80,127.0.0.1:8080", true},
        {"unix:/run/app.sock", true},
        {"a=b", true},
        {"\xc3\xa9", true},
        {"", false},
        {"two words", false},
        {"quo\"te", false},
        {"back\\slash", false},
        {"tab\t", false},
        {"cr\r", false},
        {"lf\n", false},
        {"del\x7f", false},
        {"\x01", false},
    };
    size_t i;

    (void)state;
    assert_false(cp_is_bare_token(NULL));
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (cp_is_bare_token(cases[i].s) != cases[i].bare)
            fail_msg("case %zu (%s): want %s", i, cases[i].s, cases[i].bare ? "bare" : "not bare");
    }
}

/* ---- cp_args_parse ---- */

struct args_case {
    const char *line;
    const char *dump; /* canonical dump, or NULL when parsing must fail */
    const char *err;  /* error substring when dump == NULL */
};

static const struct args_case args_cases[] = {
    {"", "pos=[] kv=[]", NULL},
    {"   ", "pos=[] kv=[]", NULL},
    {"OK", "pos=[OK] kv=[]", NULL},
    /* PROTOCOLINFO (3.21) as tor 0.4.9 sends it */
    {"AUTH METHODS=COOKIE,SAFECOOKIE COOKIEFILE=\"/run/tor/control.authcookie\"",
     "pos=[AUTH] kv=[METHODS=COOKIE,SAFECOOKIE|COOKIEFILE=/run/tor/control.authcookie]", NULL},
    {"VERSION Tor=\"0.4.9.11\"", "pos=[VERSION] kv=[Tor=0.4.9.11]", NULL},
    {"AUTH METHODS=COOKIE COOKIEFILE=\"C:\\\\Tor\\\\cookie \\\"x\\\"\"",
     "pos=[AUTH] kv=[METHODS=COOKIE|COOKIEFILE=C:\\x5cTor\\x5ccookie \\x22x\\x22]", NULL},
    /* HS_DESC lines from TOR-FACTS.md (4.1.25) */
    {"HS_DESC CREATED exampleonionaddressexampleonionaddressexampleonionaddre UNKNOWN UNKNOWN "
     "Gk1kbZk7YQJtfV8GvwVgN5+cs0cXnBdRZ9xf4jG4+E0",
     "pos=[HS_DESC|CREATED|exampleonionaddressexampleonionaddressexampleonionaddre|UNKNOWN|UNKNOWN|"
     "Gk1kbZk7YQJtfV8GvwVgN5+cs0cXnBdRZ9xf4jG4+E0] kv=[]",
     NULL},
    {"HS_DESC UPLOAD exampleonionaddressexampleonionaddressexampleonionaddre UNKNOWN "
     "$5A0F3BCF2E5E09E57F6E0D3E7A8F95B7C0FAFC63~test004r Gk1kbZk7YQJtfV8GvwVgN5+cs0cXnBdRZ9xf4jG4+E0 "
     "HSDIR_INDEX=4CEA73E4D7A1D9C5A4A6F4D1E0E1B4B92B1A3C0C4F5B6E7D8C9A0B1C2D3E4F50",
     "pos=[HS_DESC|UPLOAD|exampleonionaddressexampleonionaddressexampleonionaddre|UNKNOWN|"
     "$5A0F3BCF2E5E09E57F6E0D3E7A8F95B7C0FAFC63~test004r|Gk1kbZk7YQJtfV8GvwVgN5+cs0cXnBdRZ9xf4jG4+E0] "
     "kv=[HSDIR_INDEX=4CEA73E4D7A1D9C5A4A6F4D1E0E1B4B92B1A3C0C4F5B6E7D8C9A0B1C2D3E4F50]",
     NULL},
    {"HS_DESC FAILED exampleonionaddressexampleonionaddressexampleonionaddre NO_AUTH "
     "$5A0F3BCF2E5E09E57F6E0D3E7A8F95B7C0FAFC63~test004r Gk1kbZk7YQJtfV8GvwVgN5+cs0cXnBdRZ9xf4jG4+E0 "
     "REASON=UPLOAD_REJECTED",
     "pos=[HS_DESC|FAILED|exampleonionaddressexampleonionaddressexampleonionaddre|NO_AUTH|"
     "$5A0F3BCF2E5E09E57F6E0D3E7A8F95B7C0FAFC63~test004r|Gk1kbZk7YQJtfV8GvwVgN5+cs0cXnBdRZ9xf4jG4+E0] "
     "kv=[REASON=UPLOAD_REJECTED]",
     NULL},
    /* CIRC (4.1.1): a one-hop intro circuit of a single onion */
    {"CIRC 7 BUILT $5A0F3BCF2E5E09E57F6E0D3E7A8F95B7C0FAFC63~test004r BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL "
     "PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING "
     "REND_QUERY=exampleonionaddressexampleonionaddressexampleonionaddre "
     "TIME_CREATED=2025-12-03T05:20:01.123456",
     "pos=[CIRC|7|BUILT|$5A0F3BCF2E5E09E57F6E0D3E7A8F95B7C0FAFC63~test004r] "
     "kv=[BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL|PURPOSE=HS_SERVICE_INTRO|HS_STATE=HSSI_CONNECTING|"
     "REND_QUERY=exampleonionaddressexampleonionaddressexampleonionaddre|"
     "TIME_CREATED=2025-12-03T05:20:01.123456]",
     NULL},
    {"CIRC 1000 EXTENDED moria1,moria2 0xBEEF", "pos=[CIRC|1000|EXTENDED|moria1,moria2|0xBEEF] kv=[]", NULL},
    /* STATUS_CLIENT bootstrap (4.1.10) with a quoted SUMMARY */
    {"STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=85 TAG=ap_conn_done SUMMARY=\"Connecting to a relay to build "
     "circuits\"",
     "pos=[STATUS_CLIENT|NOTICE|BOOTSTRAP] kv=[PROGRESS=85|TAG=ap_conn_done|"
     "SUMMARY=Connecting to a relay to build circuits]",
     NULL},
    /* ADDRMAP (4.1.7): a quoted positional word with a space */
    {"ADDRMAP www.example.com 10.0.0.1 \"2025-12-03 06:00:00\" EXPIRES=\"2025-12-03 05:00:00\" CACHED=\"NO\"",
     "pos=[ADDRMAP|www.example.com|10.0.0.1|2025-12-03 06:00:00] "
     "kv=[EXPIRES=2025-12-03 05:00:00|CACHED=NO]",
     NULL},
    /* empty values, CString escapes in a value, duplicate keys kept in order */
    {"A= B=\"\" C", "pos=[C] kv=[A=|B=]", NULL},
    {"MSG=\"l1\\nl2\\101\"", "pos=[] kv=[MSG=l1\\x0al2A]", NULL},
    {"K=1 K=2", "pos=[] kv=[K=1|K=2]", NULL},
    /* extra spaces are separators; words that only look like pairs stay positional */
    {"  a   b  ", "pos=[a|b] kv=[]", NULL},
    {"=x a-b=c $FP=nick net/listeners/socks=1", "pos=[=x|a-b=c|$FP=nick|net/listeners/socks=1] kv=[]", NULL},
    /* a bare value may contain '=' and '"' after its first byte */
    {"K=a=b L=x\"y", "pos=[] kv=[K=a=b|L=x\\x22y]", NULL},
    /* errors name the token */
    {"CIRC 1 BUILT SUMMARY=\"unterminated", NULL, "word 4 (SUMMARY=): quoted string has no closing"},
    {"K=\"a\"b", NULL, "word 1 (K=): no space after the closing quote"},
    {"\"abc", NULL, "word 1: quoted string has no closing"},
    {"x \"a\"b", NULL, "word 2: no space after the closing quote"},
    {"K=\"a\\400\"", NULL, "word 1 (K=): octal escape"},
    {"K=\"a\\0b\"", NULL, "word 1 (K=): quoted value contains a NUL byte"},
    {"K=\"tail\\", NULL, "word 1 (K=): quoted string ends in a backslash"},
};

static void
test_args_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(args_cases) / sizeof(args_cases[0]); i++) {
        const struct args_case *c = &args_cases[i];
        struct cp_args a;
        char err[160] = "";
        char dump[2048];
        int rc;

        memset(&a, 0, sizeof(a));
        rc = cp_args_parse(c->line, &a, err, sizeof(err));
        if (c->dump != NULL) {
            if (rc != 0)
                fail_msg("case %zu (%s): failed: %s", i, c->line, err);
            dump_args(&a, dump, sizeof(dump));
            if (strcmp(dump, c->dump) != 0)
                fail_msg("case %zu:\n got  %s\n want %s", i, dump, c->dump);
        } else {
            if (rc != -1)
                fail_msg("case %zu (%s): parsed, want an error", i, c->line);
            if (strstr(err, c->err) == NULL)
                fail_msg("case %zu: error \"%s\" does not contain \"%s\"", i, err, c->err);
            /* left cleared */
            assert_int_equal(a.n_pos, 0);
            assert_int_equal(a.n_kv, 0);
            assert_null(a.pos);
            assert_null(a.kv);
        }
        cp_args_clear(&a);
        assert_int_equal(a.n_pos + a.n_kv, 0);
    }
}

static void
test_args_get_and_clear(void **state)
{
    struct cp_args a;
    char err[128];

    (void)state;
    memset(&a, 0, sizeof(a));
    cp_args_clear(&a); /* safe on a zeroed struct */
    assert_null(cp_args_get(&a, "X"));
    assert_int_equal(cp_args_parse("STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY=\"Done\" "
                                   "TAG=again",
                                   &a, err, sizeof(err)),
                     0);
    assert_string_equal(cp_args_get(&a, "PROGRESS"), "100");
    assert_string_equal(cp_args_get(&a, "TAG"), "done"); /* the first of two */
    assert_string_equal(cp_args_get(&a, "SUMMARY"), "Done");
    assert_null(cp_args_get(&a, "tag")); /* case-sensitive */
    assert_null(cp_args_get(&a, "NOTICE")); /* positional words are not keys */
    assert_null(cp_args_get(&a, NULL));
    cp_args_clear(&a);
    assert_null(cp_args_get(&a, "TAG"));
    cp_args_clear(&a); /* twice is fine */
}

/* ---- cp_split_key_value ---- */

static void
test_split_key_value(void **state)
{
    static const struct {
        const char *line;
        const char *key;   /* NULL: must fail */
        const char *value; /* or the error substring */
    } cases[] = {
        {"version=0.4.9.11", "version", "0.4.9.11"},
        {"status/bootstrap-phase=NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY=\"Done\"",
         "status/bootstrap-phase", "NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY=\"Done\""},
        {"address-mappings/control=1.2.3.4 torproject.org NEVER", "address-mappings/control",
         "1.2.3.4 torproject.org NEVER"},
        {"onions/current=", "onions/current", ""},
        {"ServiceID=exampleonionaddressexampleonionaddressexampleonionaddre", "ServiceID",
         "exampleonionaddressexampleonionaddressexampleonionaddre"},
        {"PrivateKey=ED25519-V3:oKu1Hk0hsyyH1A6ZrAvg+Zb9/a9v9U7QA3oq0jYC0WMl9s7sm3iTSbyA9b8QvPHA7qBV/a==",
         "PrivateKey", "ED25519-V3:oKu1Hk0hsyyH1A6ZrAvg+Zb9/a9v9U7QA3oq0jYC0WMl9s7sm3iTSbyA9b8QvPHA7qBV/a=="},
        /* GETINFO net/listeners and GETCONF quote the whole value: unquoted */
        {"net/listeners/control=\"127.0.0.1:9051\"", "net/listeners/control", "127.0.0.1:9051"},
        {"HiddenServicePort=\"80 127.0.0.1:8080\"", "HiddenServicePort", "80 127.0.0.1:8080"},
        {"HiddenServiceDir=\"/var/lib/tor/a \\\"b\\\"\"", "HiddenServiceDir", "/var/lib/tor/a \"b\""},
        /* a value that is not exactly one QuotedString is verbatim */
        {"net/listeners/socks=\"127.0.0.1:9050\" \"[::1]:9050\"", "net/listeners/socks",
         "\"127.0.0.1:9050\" \"[::1]:9050\""},
        {"k=\"unterminated", "k", "\"unterminated"},
        {"k=\"nul\\0\"", "k", "\"nul\\0\""},
        /* the first '=' splits */
        {"config/defaults=a=b", "config/defaults", "a=b"},
        {"no equals sign", NULL, "no '='"},
        {"=value", NULL, "empty key"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *k = (char *)"junk", *v = (char *)"junk";
        char err[128] = "";
        int rc = cp_split_key_value(cases[i].line, &k, &v, err, sizeof(err));

        if (cases[i].key != NULL) {
            if (rc != 0)
                fail_msg("case %zu (%s): failed: %s", i, cases[i].line, err);
            assert_string_equal(k, cases[i].key);
            assert_string_equal(v, cases[i].value);
        } else {
            assert_int_equal(rc, -1);
            assert_null(k);
            assert_null(v);
            if (strstr(err, cases[i].value) == NULL)
                fail_msg("case %zu: error \"%s\" does not contain \"%s\"", i, err, cases[i].value);
        }
        free(k);
        free(v);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quote_table),
        cmocka_unit_test(test_unquote_table),
        cmocka_unit_test(test_unquote_respects_len),
        cmocka_unit_test(test_quote_unquote_roundtrip),
        cmocka_unit_test(test_is_bare_token),
        cmocka_unit_test(test_args_table),
        cmocka_unit_test(test_args_get_and_clear),
        cmocka_unit_test(test_split_key_value),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
