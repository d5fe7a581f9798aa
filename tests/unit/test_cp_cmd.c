/* test_cp_cmd.c — unit tests for controlproto/cp_cmd.c: every command encoder.
 *
 * Tables of arguments -> the exact bytes to send (or the error, which must name the argument). The expected
 * bytes follow control-spec section 3; the SETCONF quoting, ADD_ONION forms and GETINFO keys were checked
 * by hand against Debian's tor 0.4.9.11. A second table feeds CR/LF injection attempts ("x\r\nSIGNAL HALT")
 * to every string argument of every encoder: each must be refused with a message naming the argument, and
 * no message may repeat a secret. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controlproto/cp_cmd.h"

#define ONION "xlfbxawllakyno2pxt4lkm55rotu7x6wdfqgqcol7q6gtnpwd5l5goqd"
#define ONION2 "i436gmv3y4huxtvjuid2kq2gb2p5wmlxyk6cpbyjv6o2pncyu5jzj7qd"
#define FP "0123456789ABCDEF0123456789ABCDEF01234567"
#define FP2 "89ABCDEF0123456789ABCDEF0123456789ABCDEF"
/* a made-up ED25519-V3 blob of the right shape (64 bytes of base64) */
#define KEYBLOB "OLby5WF9svUV3Ry67kQeOhR5DrfE9vccmuDX9xv0wVYeEzuBqiq3+Z1pKDy7Hc2NcHnaSa8a9pPewMxNuyvqog=="

#define ERRLEN 256

/* A single-line command: it ends in CRLF and holds no other CR or LF, so it cannot smuggle a second one. */
static void assert_one_line(const char *cmd)
{
    size_t n = strlen(cmd);

    assert_true(n >= 2);
    assert_memory_equal(cmd + n - 2, "\r\n", 2);
    assert_null(memchr(cmd, '\r', n - 2));
    assert_null(memchr(cmd, '\n', n - 2));
}

/* Check one encoder result against the expectation: exact bytes, or NULL and an error containing
 * `errsub`. Frees `got`. */
static void check_result(const char *what, char *got, const char *err, const char *expect, const char *errsub)
{
    if (expect != NULL) {
        if (got == NULL)
            fail_msg("%s: got NULL (%s), expected \"%s\"", what, err, expect);
        assert_string_equal(got, expect);
        if (expect[0] != '+')
            assert_one_line(got);
    } else {
        if (got != NULL)
            fail_msg("%s: expected an error containing \"%s\", got \"%s\"", what, errsub, got);
        if (strstr(err, errsub) == NULL)
            fail_msg("%s: error \"%s\" does not contain \"%s\"", what, err, errsub);
    }
    free(got);
}

/* ---- fixed commands and hex ---- */

static void test_protocolinfo(void **state)
{
    char *c = cp_cmd_protocolinfo();

    (void)state;
    assert_non_null(c);
    assert_string_equal(c, "PROTOCOLINFO 1\r\n");
    free(c);
}

static void test_authchallenge(void **state)
{
    unsigned char nonce[32];
    char *c;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof nonce; i++)
        nonce[i] = (unsigned char)(i * 9 + 0xa0);
    c = cp_cmd_authchallenge(nonce, sizeof nonce);
    assert_non_null(c);
    assert_string_equal(c, "AUTHCHALLENGE SAFECOOKIE "
                           "A0A9B2BBC4CDD6DFE8F1FA030C151E273039424B545D666F78818A939CA5AEB7\r\n");
    free(c);
    assert_null(cp_cmd_authchallenge(nonce, 0));
    assert_null(cp_cmd_authchallenge(NULL, 32));
}

static void test_authenticate_hex(void **state)
{
    static const unsigned char cookie[4] = {0xde, 0xad, 0x00, 0x0f};
    char *c;

    (void)state;
    c = cp_cmd_authenticate_hex(cookie, sizeof cookie);
    assert_non_null(c);
    assert_string_equal(c, "AUTHENTICATE DEAD000F\r\n");
    free(c);
    /* control-spec 3.5: with no authentication configured, a bare AUTHENTICATE */
    c = cp_cmd_authenticate_hex(NULL, 0);
    assert_non_null(c);
    assert_string_equal(c, "AUTHENTICATE\r\n");
    free(c);
}

static void test_authenticate_password(void **state)
{
    static const struct {
        const char *pw;
        const char *expect;
        const char *errsub;
    } t[] = {
        {"secret", "AUTHENTICATE \"secret\"\r\n", NULL},
        {"", "AUTHENTICATE \"\"\r\n", NULL},
        {"pa\"ss\\word with spaces", "AUTHENTICATE \"pa\\\"ss\\\\word with spaces\"\r\n", NULL},
        {"tab\there", "AUTHENTICATE \"tab\there\"\r\n", NULL},
        {NULL, NULL, "password: missing"},
        {"hunter2\r\nSIGNAL HALT", NULL, "password: contains CR or LF"},
        {"hunter2\n", NULL, "password: contains CR or LF"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        char err[ERRLEN] = "";
        char *c = cp_cmd_authenticate_password(t[i].pw, err, sizeof err);

        /* a refused password never appears in the message */
        assert_null(strstr(err, "hunter2"));
        check_result("authenticate_password", c, err, t[i].expect, t[i].errsub);
    }
}

/* ---- word lists: SETEVENTS, GETINFO, GETCONF ---- */

struct words_case {
    const char *words[4];
    size_t n;
    const char *expect;
    const char *errsub;
};

static void run_words(const char *name, char *(*fn)(const char *const *, size_t, char *, size_t),
                      const struct words_case *t, size_t nt)
{
    size_t i;

    for (i = 0; i < nt; i++) {
        char err[ERRLEN] = "";
        char *c = fn(t[i].words, t[i].n, err, sizeof err);

        check_result(name, c, err, t[i].expect, t[i].errsub);
    }
}

static void test_setevents(void **state)
{
    static const struct words_case t[] = {
        {{"CIRC", "HS_DESC", "HS_DESC_CONTENT", "STATUS_CLIENT"}, 4,
         "SETEVENTS CIRC HS_DESC HS_DESC_CONTENT STATUS_CLIENT\r\n", NULL},
        {{"STATUS_GENERAL"}, 1, "SETEVENTS STATUS_GENERAL\r\n", NULL},
        {{NULL}, 0, "SETEVENTS\r\n", NULL}, /* 3.4: an empty list turns every event off */
        {{"circ"}, 1, NULL, "events[0]: invalid character at offset 0"},
        {{"CIRC", "HS DESC"}, 2, NULL, "events[1]: invalid character at offset 2"},
        {{"CIRC", ""}, 2, NULL, "events[1]: empty"},
        {{"CIRC", NULL}, 2, NULL, "events[1]: missing"},
        {{"CIRC1"}, 1, NULL, "events[0]: invalid character at offset 4"},
    };

    (void)state;
    run_words("setevents", cp_cmd_setevents, t, sizeof t / sizeof t[0]);
}

static void test_getinfo(void **state)
{
    static const struct words_case t[] = {
        {{"version", "status/bootstrap-phase", "net/listeners/control"}, 3,
         "GETINFO version status/bootstrap-phase net/listeners/control\r\n", NULL},
        {{"onions/current", "onions/detached"}, 2, "GETINFO onions/current onions/detached\r\n", NULL},
        {{"ns/id/$" FP, "hs/service/desc/id/" ONION}, 2,
         "GETINFO ns/id/$" FP " hs/service/desc/id/" ONION "\r\n", NULL},
        {{"ip-to-country/127.0.0.1"}, 1, "GETINFO ip-to-country/127.0.0.1\r\n", NULL},
        {{NULL}, 0, NULL, "keys: GETINFO needs at least one key"},
        {{"version info"}, 1, NULL, "keys[0]: invalid character at offset 7"},
        {{"version", "a\"b"}, 2, NULL, "keys[1]: invalid character at offset 1"},
        {{"version", "a\\b"}, 2, NULL, "keys[1]: invalid character"},
        {{"caf\xc3\xa9"}, 1, NULL, "keys[0]: invalid character at offset 3"},
        {{"version", ""}, 2, NULL, "keys[1]: empty"},
    };

    (void)state;
    run_words("getinfo", cp_cmd_getinfo, t, sizeof t / sizeof t[0]);
}

static void test_getconf(void **state)
{
    static const struct words_case t[] = {
        {{"HiddenServiceOptions", "SocksPort", "__OwningControllerProcess"}, 3,
         "GETCONF HiddenServiceOptions SocksPort __OwningControllerProcess\r\n", NULL},
        {{"HiddenServiceSingleHopMode"}, 1, "GETCONF HiddenServiceSingleHopMode\r\n", NULL},
        {{NULL}, 0, NULL, "keys: GETCONF needs at least one key"},
        {{"Socks Port"}, 1, NULL, "keys[0]: invalid character at offset 5"},
        {{"SocksPort", "ns/id"}, 2, NULL, "keys[1]: invalid character at offset 2"},
        {{"SocksPort=9050"}, 1, NULL, "keys[0]: invalid character at offset 9"},
    };

    (void)state;
    run_words("getconf", cp_cmd_getconf, t, sizeof t / sizeof t[0]);
}

/* ---- SETCONF ---- */

static void test_setconf(void **state)
{
    static const struct {
        struct cp_conf_item items[5];
        size_t n;
        const char *expect;
        const char *errsub;
    } t[] = {
        {{{"HiddenServiceDir", "/var/lib/onionfront/hs/web"}, {"HiddenServicePort", "80 127.0.0.1:8080"}}, 2,
         "SETCONF HiddenServiceDir=\"/var/lib/onionfront/hs/web\" HiddenServicePort=\"80 127.0.0.1:8080\"\r\n",
         NULL},
        /* repeated keys, in order: two services, the first with two ports */
        {{{"HiddenServiceDir", "/hs/a"},
          {"HiddenServicePort", "80 127.0.0.1:8080"},
          {"HiddenServicePort", "443 unix:/run/a.sock"},
          {"HiddenServiceDir", "/hs/b"},
          {"HiddenServicePort", "22"}},
         5,
         "SETCONF HiddenServiceDir=\"/hs/a\" HiddenServicePort=\"80 127.0.0.1:8080\" "
         "HiddenServicePort=\"443 unix:/run/a.sock\" HiddenServiceDir=\"/hs/b\" HiddenServicePort=\"22\"\r\n",
         NULL},
        /* NULL value: the bare key (reset) */
        {{{"HiddenServiceDir", NULL}}, 1, "SETCONF HiddenServiceDir\r\n", NULL},
        {{{"ContactInfo", NULL}, {"Nickname", "relay3"}}, 2, "SETCONF ContactInfo Nickname=\"relay3\"\r\n", NULL},
        /* quotes and backslashes escaped; tor 0.4.9.11 reads this back as: a "quoted" \ value */
        {{{"ContactInfo", "a \"quoted\" \\ value"}}, 1, "SETCONF ContactInfo=\"a \\\"quoted\\\" \\\\ value\"\r\n",
         NULL},
        {{{"ContactInfo", ""}}, 1, "SETCONF ContactInfo=\"\"\r\n", NULL},
        {{{"ContactInfo", "x=1 y=2"}}, 1, "SETCONF ContactInfo=\"x=1 y=2\"\r\n", NULL},
        {{{NULL, NULL}}, 0, NULL, "items: SETCONF needs at least one item"},
        {{{"Nickname", "a"}, {NULL, "b"}}, 2, NULL, "items[1].key: missing"},
        {{{"Nick name", "a"}}, 1, NULL, "items[0].key: invalid character at offset 4"},
        {{{"Nickname=x", "a"}}, 1, NULL, "items[0].key: invalid character at offset 8"},
        {{{"", "a"}}, 1, NULL, "items[0].key: empty"},
        {{{"HiddenServiceDir", "/hs/a"}, {"HiddenServicePort", "80\n127.0.0.1:8080"}}, 2, NULL,
         "items[1].value (HiddenServicePort): contains CR or LF"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        char err[ERRLEN] = "";
        char *c = cp_cmd_setconf(t[i].n ? t[i].items : NULL, t[i].n, err, sizeof err);

        check_result("setconf", c, err, t[i].expect, t[i].errsub);
    }
}

/* ---- SIGNAL ---- */

static void test_signal(void **state)
{
    static const struct {
        const char *name;
        const char *expect;
        const char *errsub;
    } t[] = {
        {"RELOAD", "SIGNAL RELOAD\r\n", NULL},
        {"SHUTDOWN", "SIGNAL SHUTDOWN\r\n", NULL},
        {"NEWNYM", "SIGNAL NEWNYM\r\n", NULL},
        {"USR1", "SIGNAL USR1\r\n", NULL},
        {"CLEARDNSCACHE", "SIGNAL CLEARDNSCACHE\r\n", NULL},
        {NULL, NULL, "signal: missing"},
        {"", NULL, "signal: empty"},
        {"RELOAD HALT", NULL, "signal: invalid character at offset 6"},
        {"\"HALT\"", NULL, "signal: invalid character at offset 0"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        char err[ERRLEN] = "";

        check_result("signal", cp_cmd_signal(t[i].name, err, sizeof err), err, t[i].expect, t[i].errsub);
    }
}

/* ---- ADD_ONION ---- */

static void test_add_onion(void **state)
{
    static const char *const flags3[] = {"Detach", "DiscardPK", "NonAnonymous"};
    static const char *const flag_comma[] = {"Detach,DiscardPK"};
    static const char *const flag_empty[] = {"Detach", ""};
    static const struct cp_onion_port p80[] = {{80, NULL}};
    static const struct cp_onion_port p2[] = {{80, "127.0.0.1:8080"}, {443, "unix:/run/web.sock"}};
    static const struct cp_onion_port p6[] = {{8443, "[::1]:443"}, {65535, "8080"}};
    static const struct cp_onion_port p0[] = {{0, NULL}};
    static const struct cp_onion_port pbig[] = {{65536, NULL}};
    static const struct cp_onion_port psp[] = {{80, "127.0.0.1:80 Port=22"}};
    static const struct cp_onion_port pcomma[] = {{80, "127.0.0.1:80,22"}};
    static const struct cp_onion_port pempty[] = {{80, ""}};
    static const struct {
        struct cp_add_onion a;
        const char *expect;
        const char *errsub;
    } t[] = {
        {{"NEW", "BEST", NULL, 0, 0, p80, 1}, "ADD_ONION NEW:BEST Port=80\r\n", NULL},
        {{"NEW", "ED25519-V3", flags3, 3, 10, p2, 2},
         "ADD_ONION NEW:ED25519-V3 Flags=Detach,DiscardPK,NonAnonymous MaxStreams=10 "
         "Port=80,127.0.0.1:8080 Port=443,unix:/run/web.sock\r\n",
         NULL},
        {{"ED25519-V3", KEYBLOB, flags3, 1, 65535, p6, 2},
         "ADD_ONION ED25519-V3:" KEYBLOB " Flags=Detach MaxStreams=65535 Port=8443,[::1]:443 Port=65535,8080\r\n",
         NULL},
        {{NULL, "BEST", NULL, 0, 0, p80, 1}, NULL, "key_type: missing"},
        {{"NEW BEST", "BEST", NULL, 0, 0, p80, 1}, NULL, "key_type: invalid character at offset 3"},
        {{"NEW", "", NULL, 0, 0, p80, 1}, NULL, "key_blob: empty"},
        {{"ED25519-V3", "AAAA BBBB", NULL, 0, 0, p80, 1}, NULL, "key_blob: invalid character at offset 4"},
        {{"NEW", "BEST", flag_comma, 1, 0, p80, 1}, NULL, "flags[0]: invalid character at offset 6"},
        {{"NEW", "BEST", flag_empty, 2, 0, p80, 1}, NULL, "flags[1]: empty"},
        {{"NEW", "BEST", NULL, 2, 0, p80, 1}, NULL, "flags: NULL with n_flags 2"},
        {{"NEW", "BEST", NULL, 0, 65536, p80, 1}, NULL, "max_streams: 65536 is out of range"},
        {{"NEW", "BEST", NULL, 0, 0, p80, 0}, NULL, "ports: at least one Port= is required"},
        {{"NEW", "BEST", NULL, 0, 0, NULL, 1}, NULL, "ports: at least one Port= is required"},
        {{"NEW", "BEST", NULL, 0, 0, p0, 1}, NULL, "ports[0].virt_port: 0 is out of range 1-65535"},
        {{"NEW", "BEST", NULL, 0, 0, pbig, 1}, NULL, "ports[0].virt_port: 65536 is out of range"},
        {{"NEW", "BEST", NULL, 0, 0, psp, 1}, NULL, "ports[0].target: invalid character at offset 12"},
        {{"NEW", "BEST", NULL, 0, 0, pcomma, 1}, NULL, "ports[0].target: invalid character at offset 12"},
        {{"NEW", "BEST", NULL, 0, 0, pempty, 1}, NULL, "ports[0].target: empty"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        char err[ERRLEN] = "";

        check_result("add_onion", cp_cmd_add_onion(&t[i].a, err, sizeof err), err, t[i].expect, t[i].errsub);
    }
    {
        char err[ERRLEN] = "";

        assert_null(cp_cmd_add_onion(NULL, err, sizeof err));
        assert_non_null(strstr(err, "add_onion"));
    }
}

/* A refused key never appears in the message. */
static void test_add_onion_key_not_in_error(void **state)
{
    static const struct cp_onion_port p80[] = {{80, NULL}};
    struct cp_add_onion a = {"ED25519-V3", "SECRETKEYPART1 SECRETKEYPART2", NULL, 0, 0, p80, 1};
    char err[ERRLEN] = "";

    (void)state;
    assert_null(cp_cmd_add_onion(&a, err, sizeof err));
    assert_non_null(strstr(err, "key_blob"));
    assert_null(strstr(err, "SECRET"));
}

/* ---- DEL_ONION, HSFETCH ---- */

static void test_closecircuit(void **state)
{
    char err[128];
    char *c = cp_cmd_closecircuit(4, false, err, sizeof err);
    (void)state;
    assert_non_null(c);
    assert_string_equal(c, "CLOSECIRCUIT 4\r\n");
    free(c);
    c = cp_cmd_closecircuit(4294967295ul, true, err, sizeof err);
    assert_non_null(c);
    assert_string_equal(c, "CLOSECIRCUIT 4294967295 IfUnused\r\n");
    free(c);
}

static void test_del_onion(void **state)
{
    static const struct {
        const char *id;
        const char *expect;
        const char *errsub;
    } t[] = {
        {ONION, "DEL_ONION " ONION "\r\n", NULL},
        {ONION2, "DEL_ONION " ONION2 "\r\n", NULL},
        {ONION ".onion", NULL, "service_id: invalid character at offset 56"},
        {"XLFBXAWLLAKYNO2PXT4LKM55ROTU7X6WDFQGQCOL7Q6GTNPWD5L5GOQD", NULL, "service_id: invalid character at offset 0"},
        {"xlfbxawllakyno2pxt4lkm55rotu7x6wdfqgqcol7q6gtnpwd5l5goq", NULL, "service_id: 55 characters"},
        {"xlfbxawllakyno2pxt4lkm55rotu7x6wdfqgqcol7q6gtnpwd5l5goqda", NULL, "service_id: 57 characters"},
        {"sampleonion12456", NULL, "service_id: invalid character at offset 11"}, /* '1' is not base32 */
        {"expyuzz4wqqyqhjn", NULL, "service_id: 16 characters"},                   /* v2 is gone */
        {"", NULL, "service_id: 0 characters"},
        {NULL, NULL, "service_id: missing"},
        {"xlfbxawllakyno2pxt4lkm55rotu7x6wdfqgqcol7q6gtnpwd5l5goq8", NULL, "service_id: invalid character at offset 55"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        char err[ERRLEN] = "";

        check_result("del_onion", cp_cmd_del_onion(t[i].id, err, sizeof err), err, t[i].expect, t[i].errsub);
    }
}

static void test_hsfetch(void **state)
{
    static const struct {
        const char *addr;
        const char *servers[3];
        size_t n;
        const char *expect;
        const char *errsub;
    } t[] = {
        {ONION, {NULL}, 0, "HSFETCH " ONION "\r\n", NULL},
        {ONION, {"$" FP, "89abcdef0123456789abcdef0123456789abcdef"}, 2,
         "HSFETCH " ONION " SERVER=$" FP " SERVER=$" FP2 "\r\n", NULL},
        /* control-spec 3.26 also has "v2-" DescId, but tor 0.4.9.11 answers it with 513: refused here */
        {"v2-gezdgnbvgy3tqolbmjrwizlgm5ugs2tl", {FP}, 1, NULL, "address: invalid character at offset 2"},
        {"v3-" "NHN9fUdcd/9nJF6PSF6/IzdqkCiEoCsexfMv+7SGpCQ", {FP}, 1, NULL, "address: invalid character"},
        {ONION ".onion", {NULL}, 0, NULL, "address: invalid character at offset 56"},
        {NULL, {NULL}, 0, NULL, "address: missing"},
        {ONION, {"$" FP "~relay3"}, 1, NULL, "servers[0]: must be \"$\" and 40 hex digits"},
        {ONION, {"$" FP, "$0123"}, 2, NULL, "servers[1]: must be \"$\" and 40 hex digits"},
        {ONION, {"$" FP, NULL}, 2, NULL, "servers[1]: missing"},
        {ONION, {"$$" FP}, 1, NULL, "servers[0]: must be"},
        {ONION, {"$" FP "0"}, 1, NULL, "servers[0]: must be"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        char err[ERRLEN] = "";
        char *c = cp_cmd_hsfetch(t[i].addr, t[i].servers, t[i].n, err, sizeof err);

        check_result("hsfetch", c, err, t[i].expect, t[i].errsub);
    }
}

/* ONION_CLIENT_AUTH_ADD / _REMOVE (control-spec 3.30, 3.31): a v3 address and a base64 x25519 key only. */
static void test_onion_client_auth(void **state)
{
    static const struct {
        const char *addr;
        const char *key; /* NULL: REMOVE */
        const char *expect;
        const char *errsub;
    } t[] = {
        {ONION, "yPGUxgKaC5ACyEzsdANHJEJzt5DIqDRBlAFaAWWQn0o=", "ONION_CLIENT_AUTH_ADD " ONION
         " x25519:yPGUxgKaC5ACyEzsdANHJEJzt5DIqDRBlAFaAWWQn0o=\r\n", NULL},
        {ONION, NULL, "ONION_CLIENT_AUTH_REMOVE " ONION "\r\n", NULL},
        {ONION ".onion", "abc=", NULL, "address: invalid character at offset 56"},
        {ONION ".onion", NULL, NULL, "address: invalid character at offset 56"},
        {ONION, "abc def", NULL, "private_key"},
        {ONION, "abc\r\nSIGNAL HALT", NULL, "private_key"},
        {NULL, NULL, NULL, "address: missing"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char err[ERRLEN] = "";
        char *c = t[i].key ? cp_cmd_onion_client_auth_add(t[i].addr, t[i].key, err, sizeof err)
                           : cp_cmd_onion_client_auth_remove(t[i].addr, err, sizeof err);
        check_result("onion_client_auth", c, err, t[i].expect, t[i].errsub);
    }
}

/* ---- HSPOST ---- */

#define BYTES(s) s, sizeof(s) - 1

static void test_hspost(void **state)
{
    static const struct {
        const char *servers[2];
        size_t n;
        const char *addr;
        const char *desc;
        size_t desc_len;
        const char *expect;
        const char *errsub;
    } t[] = {
        {{NULL}, 0, NULL, BYTES("hs-descriptor 3\ndescriptor-lifetime 180\n"),
         "+HSPOST\r\nhs-descriptor 3\r\ndescriptor-lifetime 180\r\n.\r\n", NULL},
        {{"$" FP}, 1, ONION, BYTES("hs-descriptor 3\n"),
         "+HSPOST SERVER=$" FP " HSADDRESS=" ONION "\r\nhs-descriptor 3\r\n.\r\n", NULL},
        {{FP, FP2}, 2, NULL, BYTES("a"), "+HSPOST SERVER=$" FP " SERVER=$" FP2 "\r\na\r\n.\r\n", NULL},
        /* line endings normalised to CRLF; a missing final newline supplied */
        {{NULL}, 0, NULL, BYTES("a\r\nb\nc"), "+HSPOST\r\na\r\nb\r\nc\r\n.\r\n", NULL},
        {{NULL}, 0, NULL, BYTES("a\r\n\r\n\nb\r\n"), "+HSPOST\r\na\r\n\r\n\r\nb\r\n.\r\n", NULL},
        /* control-spec 2.4: a leading '.' is doubled; other dots are left alone */
        {{NULL}, 0, NULL, BYTES(".\n..x\nmid.dle.\n.\r\n"), "+HSPOST\r\n..\r\n...x\r\nmid.dle.\r\n..\r\n.\r\n", NULL},
        /* an attempt to end the data early and inject a command stays inside the data */
        {{NULL}, 0, NULL, BYTES("x\r\n.\r\nSIGNAL HALT\r\n"), "+HSPOST\r\nx\r\n..\r\nSIGNAL HALT\r\n.\r\n", NULL},
        {{NULL}, 0, NULL, BYTES("\n"), "+HSPOST\r\n\r\n.\r\n", NULL},
        {{NULL}, 0, NULL, BYTES(""), NULL, "descriptor: empty"},
        {{NULL}, 0, NULL, NULL, 5, NULL, "descriptor: empty"},
        {{NULL}, 0, NULL, BYTES("abc\0def"), NULL, "descriptor: NUL byte at offset 3"},
        {{NULL}, 0, NULL, BYTES("ab\rcd\n"), NULL, "descriptor: bare CR at offset 2"},
        {{NULL}, 0, NULL, BYTES("abcd\r"), NULL, "descriptor: bare CR at offset 4"},
        {{NULL}, 0, ONION ".onion", BYTES("a\n"), NULL, "hs_address: invalid character at offset 56"},
        {{"$" FP, "nick"}, 2, NULL, BYTES("a\n"), NULL, "servers[1]: must be"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        char err[ERRLEN] = "";
        char *c = cp_cmd_hspost(t[i].servers, t[i].n, t[i].addr, t[i].desc, t[i].desc_len, err, sizeof err);

        if (c != NULL) {
            /* the data ends exactly once, at the end */
            const char *end = strstr(c, "\r\n.\r\n");

            assert_non_null(end);
            assert_int_equal((size_t)(end - c) + 5, strlen(c));
        }
        check_result("hspost", c, err, t[i].expect, t[i].errsub);
    }
}

/* ---- injection into every string argument ---- */

static const char *const injections[] = {
    "x\r\nSIGNAL HALT", "x\nSIGNAL HALT", "x\rSIGNAL HALT", "\r\n", ONION "\r\nSIGNAL HALT",
};

static char *inj_password(const char *bad, char *err, size_t errlen)
{
    return cp_cmd_authenticate_password(bad, err, errlen);
}

static char *inj_setevents(const char *bad, char *err, size_t errlen)
{
    const char *ev[2] = {"CIRC", bad};

    return cp_cmd_setevents(ev, 2, err, errlen);
}

static char *inj_getinfo(const char *bad, char *err, size_t errlen)
{
    const char *k[2] = {"version", bad};

    return cp_cmd_getinfo(k, 2, err, errlen);
}

static char *inj_getconf(const char *bad, char *err, size_t errlen)
{
    const char *k[1] = {bad};

    return cp_cmd_getconf(k, 1, err, errlen);
}

static char *inj_setconf_key(const char *bad, char *err, size_t errlen)
{
    struct cp_conf_item it[1] = {{bad, "1"}};

    return cp_cmd_setconf(it, 1, err, errlen);
}

static char *inj_setconf_value(const char *bad, char *err, size_t errlen)
{
    struct cp_conf_item it[2] = {{"HiddenServiceDir", "/hs/a"}, {"HiddenServicePort", bad}};

    return cp_cmd_setconf(it, 2, err, errlen);
}

static char *inj_signal(const char *bad, char *err, size_t errlen)
{
    return cp_cmd_signal(bad, err, errlen);
}

static char *inj_add_onion(const char *key_type, const char *key_blob, const char *flag, const char *target,
                           char *err, size_t errlen)
{
    const char *flags[2] = {"Detach", flag};
    struct cp_onion_port ports[2] = {{80, NULL}, {443, target}};
    struct cp_add_onion a = {key_type, key_blob, flags, 2, 0, ports, 2};

    return cp_cmd_add_onion(&a, err, errlen);
}

static char *inj_key_type(const char *bad, char *err, size_t errlen)
{
    return inj_add_onion(bad, "BEST", "DiscardPK", "127.0.0.1:443", err, errlen);
}

static char *inj_key_blob(const char *bad, char *err, size_t errlen)
{
    return inj_add_onion("ED25519-V3", bad, "DiscardPK", "127.0.0.1:443", err, errlen);
}

static char *inj_flag(const char *bad, char *err, size_t errlen)
{
    return inj_add_onion("NEW", "BEST", bad, "127.0.0.1:443", err, errlen);
}

static char *inj_target(const char *bad, char *err, size_t errlen)
{
    return inj_add_onion("NEW", "BEST", "DiscardPK", bad, err, errlen);
}

static char *inj_del_onion(const char *bad, char *err, size_t errlen)
{
    return cp_cmd_del_onion(bad, err, errlen);
}

static char *inj_hsfetch_addr(const char *bad, char *err, size_t errlen)
{
    return cp_cmd_hsfetch(bad, NULL, 0, err, errlen);
}

static char *inj_hsfetch_server(const char *bad, char *err, size_t errlen)
{
    const char *s[1] = {bad};

    return cp_cmd_hsfetch(ONION, s, 1, err, errlen);
}

static char *inj_hspost_addr(const char *bad, char *err, size_t errlen)
{
    return cp_cmd_hspost(NULL, 0, bad, "a\n", 2, err, errlen);
}

static char *inj_hspost_server(const char *bad, char *err, size_t errlen)
{
    const char *s[2] = {FP, bad};

    return cp_cmd_hspost(s, 2, NULL, "a\n", 2, err, errlen);
}

static void test_injection_everywhere(void **state)
{
    static const struct {
        const char *field;
        char *(*fn)(const char *bad, char *err, size_t errlen);
    } t[] = {
        {"password", inj_password},
        {"events[1]", inj_setevents},
        {"keys[1]", inj_getinfo},
        {"keys[0]", inj_getconf},
        {"items[0].key", inj_setconf_key},
        {"items[1].value (HiddenServicePort)", inj_setconf_value},
        {"signal", inj_signal},
        {"key_type", inj_key_type},
        {"key_blob", inj_key_blob},
        {"flags[1]", inj_flag},
        {"ports[1].target", inj_target},
        {"service_id", inj_del_onion},
        {"address", inj_hsfetch_addr},
        {"servers[0]", inj_hsfetch_server},
        {"hs_address", inj_hspost_addr},
        {"servers[1]", inj_hspost_server},
    };
    size_t i, j;

    (void)state;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        for (j = 0; j < sizeof injections / sizeof injections[0]; j++) {
            char err[ERRLEN] = "";
            char *c = t[i].fn(injections[j], err, sizeof err);

            if (c != NULL)
                fail_msg("%s: injection %zu accepted: \"%s\"", t[i].field, j, c);
            if (strncmp(err, t[i].field, strlen(t[i].field)) != 0 || err[strlen(t[i].field)] != ':')
                fail_msg("%s: injection %zu: error \"%s\" does not start with the field", t[i].field, j, err);
            /* the rejected text is never echoed */
            assert_null(strstr(err, "HALT"));
        }
    }
}

/* The same argument lists without the injection are accepted: the table above fails for the right reason. */
static void test_injection_controls_pass(void **state)
{
    static const struct {
        const char *good;
        char *(*fn)(const char *bad, char *err, size_t errlen);
    } t[] = {
        {"pw", inj_password},          {"HS_DESC", inj_setevents},      {"version", inj_getinfo},
        {"SocksPort", inj_getconf},    {"ContactInfo", inj_setconf_key}, {"80", inj_setconf_value},
        {"RELOAD", inj_signal},        {"NEW", inj_key_type},           {KEYBLOB, inj_key_blob},
        {"NonAnonymous", inj_flag},    {"8443", inj_target},            {ONION, inj_del_onion},
        {ONION, inj_hsfetch_addr},     {FP2, inj_hsfetch_server},       {ONION, inj_hspost_addr},
        {"$" FP2, inj_hspost_server},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        char err[ERRLEN] = "";
        char *c = t[i].fn(t[i].good, err, sizeof err);

        if (c == NULL)
            fail_msg("control %zu (%s) refused: %s", i, t[i].good, err);
        if (c[0] != '+')
            assert_one_line(c);
        free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_protocolinfo),
        cmocka_unit_test(test_closecircuit),
        cmocka_unit_test(test_authchallenge),
        cmocka_unit_test(test_authenticate_hex),
        cmocka_unit_test(test_authenticate_password),
        cmocka_unit_test(test_setevents),
        cmocka_unit_test(test_getinfo),
        cmocka_unit_test(test_getconf),
        cmocka_unit_test(test_setconf),
        cmocka_unit_test(test_signal),
        cmocka_unit_test(test_add_onion),
        cmocka_unit_test(test_add_onion_key_not_in_error),
        cmocka_unit_test(test_del_onion),
        cmocka_unit_test(test_hsfetch),
        cmocka_unit_test(test_onion_client_auth),
        cmocka_unit_test(test_hspost),
        cmocka_unit_test(test_injection_everywhere),
        cmocka_unit_test(test_injection_controls_pass),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
