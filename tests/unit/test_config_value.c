/* test_config_value.c — unit tests for sidecar/config/config_value.c: the config's schema-free value checks.
 *
 * Tables: address text -> its parsed form or the exact refusal; port text -> value or which refusal;
 * path -> normalised path or the exact refusal; path pairs -> join / containment; torrc line -> accepted
 * or the exact refusal; names -> accepted or not; untrusted text -> its escaped form for messages.
 * Plus: limits built at run time (long hosts, paths, lines), embedded NULs, readable-file checks on a
 * private directory, and base32 x25519 keys. Every row checks the output, not only the return code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/config/config_value.h"
#include "tests/fake/tmpdir.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define FORMS "must be host:port, [v6]:port or an absolute unix socket path"

/* ---- addresses ------------------------------------------------------------------------------------ */

struct addr_case {
    const char *in;
    int rc;                      /* 0, -1 or -2 */
    enum backend_addr_kind kind; /* rc 0 only, as are the next four */
    int family;
    const char *host;
    uint16_t port;
    const char *path;
    const char *why; /* rc < 0 only */
};

#define INET(in, fam, host, port) {in, 0, BACKEND_ADDR_INET, fam, host, port, "", NULL}
#define UNIX(in, path) {in, 0, BACKEND_ADDR_UNIX, AF_UNIX, "", 0, path, NULL}
#define BAD(in, rc, why) {in, rc, BACKEND_ADDR_INET, 0, NULL, 0, NULL, why}
#define URL(in, meant) "\"" in "\" is a URL; write host:port" meant " (onionfront forwards TCP, not HTTP requests)"

static const struct addr_case addr_cases[] = {
    INET("127.0.0.1:8080", AF_INET, "127.0.0.1", 8080),
    INET("10.0.0.1:1", AF_INET, "10.0.0.1", 1),
    INET("localhost:80", AF_UNSPEC, "localhost", 80),
    INET("Web_1.example-host.COM:65535", AF_UNSPEC, "Web_1.example-host.COM", 65535),
    INET("a:00443", AF_UNSPEC, "a", 443),
    INET("[::1]:8080", AF_INET6, "::1", 8080),
    INET("[0:0:0:0:0:0:0:1]:9", AF_INET6, "::1", 9),
    INET("[2001:DB8::A]:443", AF_INET6, "2001:db8::a", 443),
    UNIX("/run/app.sock", "/run/app.sock"),
    UNIX("unix:/run//app/", "/run/app"),
    UNIX("//x", "/x"),
    BAD("localhost", -1, FORMS),
    BAD(":80", -1, FORMS),
    BAD("host:", -1, FORMS),
    BAD("host:8a", -1, FORMS),
    BAD("host:-1", -1, FORMS),
    BAD("host:0", -2, "port must be 1-65535"),
    BAD("host:65536", -2, "port must be 1-65535"),
    BAD("host:123456", -2, "port must be 1-65535"),
    BAD("::1:80", -1, "IPv6 addresses must be written in brackets: [v6]:port"),
    BAD("[::1:80", -1, "missing \"]\" after the IPv6 address"),
    BAD("[]:80", -1, "not a valid IPv6 address inside [ ]"),
    BAD("[1.2.3.4]:80", -1, "not a valid IPv6 address inside [ ]"),
    BAD("[::1]80", -1, FORMS),
    BAD("[::1]:", -1, FORMS),
    BAD("[::1]:0", -2, "port must be 1-65535"),
    BAD("1.2.3.256:80", -1, "\"1.2.3.256\" is not a valid IPv4 address"),
    BAD("1.2.3:80", -1, "\"1.2.3\" is not a valid IPv4 address"),
    BAD("-bad.example:80", -1, "invalid host name \"-bad.example\""),
    BAD("bad-.example:80", -1, "invalid host name \"bad-.example\""),
    BAD("a..b:80", -1, "invalid host name \"a..b\""),
    BAD("a.:80", -1, "invalid host name \"a.\""),
    BAD("a b:80", -1, "invalid host name \"a b\""),
    BAD("h\"\x01:80", -1, "invalid host name \"h\\\"\\x01\""),
    BAD("unix:relative", -1, "unix socket path must be absolute"),
    BAD("unix:", -1, "unix socket path must be absolute"),
    BAD("/", -1, FORMS),
    BAD("unix://", -1, FORMS),
    BAD("/a/../b", -1, "unix socket path must not contain \".\" or \"..\" components"),
    BAD("/a/\tb", -1, "unix socket path must not contain control characters"),
    BAD("", -1, FORMS),
    /* a URL where an address belongs: named as a URL, with the host:port it probably meant */
    BAD("http://127.0.0.1:8081/", -1, URL("http://127.0.0.1:8081/", ", here \"127.0.0.1:8081\"")),
    BAD("https://backend.example/x?y", -1, URL("https://backend.example/x?y", ", here \"backend.example:443\"")),
    BAD("HTTP://[::1]/", -1, URL("HTTP://[::1]/", ", here \"[::1]:80\"")),
    BAD("http://[::1]:8080", -1, URL("http://[::1]:8080", ", here \"[::1]:8080\"")),
    BAD("ftp://files.example/", -1, URL("ftp://files.example/", "")),
    BAD("http://user@host/", -1, URL("http://user@host/", "")),
    BAD("http://h\x01/", -1, URL("http://h\\x01/", "")),
};

static void check_addr(const char *in, size_t len, int want_rc, const char *want_why, struct backend_addr *a)
{
    char why[256] = "";
    int rc = config_parse_addr(in, len, a, why, sizeof why);
    if (rc != want_rc)
        fail_msg("\"%s\": rc %d, want %d (%s)", in, rc, want_rc, why);
    if (want_why && strcmp(why, want_why) != 0)
        fail_msg("\"%s\": why \"%s\", want \"%s\"", in, why, want_why);
}

static void test_addr_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(addr_cases); i++) {
        const struct addr_case *tc = &addr_cases[i];
        struct backend_addr a;
        check_addr(tc->in, strlen(tc->in), tc->rc, tc->why, &a);
        if (tc->rc != 0)
            continue;
        if (a.kind != tc->kind || a.family != tc->family || a.port != tc->port)
            fail_msg("\"%s\": kind %d family %d port %u", tc->in, (int)a.kind, a.family, (unsigned)a.port);
        if (strcmp(a.host, tc->host) != 0 || strcmp(a.path, tc->path) != 0 || strcmp(a.text, tc->in) != 0)
            fail_msg("\"%s\": host \"%s\" path \"%s\" text \"%s\"", tc->in, a.host, a.path, a.text);
    }
}

/* Limits: the host (253), a label (63), the whole text (259), a unix path (107), an embedded NUL. */
static void test_addr_limits(void **state)
{
    (void)state;
    struct backend_addr a;
    char buf[400];
    char want[200];

    /* 4 labels of 63 + 3 dots = 255 bytes > 253; 3 labels of 63 + "a" = 193 is fine. */
    memset(buf, 'a', sizeof buf);
    for (size_t i = 63; i < 255; i += 64)
        buf[i] = '.';
    strcpy(buf + 255, ":80");
    check_addr(buf, strlen(buf), -1, "host name must be at most 253 bytes", &a);
    strcpy(buf + 193, ":80");
    check_addr(buf, strlen(buf), 0, NULL, &a);
    assert_int_equal(strlen(a.host), 193);
    assert_int_equal(a.family, AF_UNSPEC);

    memset(buf, 'b', 64); /* one 64-byte label */
    strcpy(buf + 64, ":80");
    snprintf(want, sizeof want, "invalid host name \"%.60s...\"", buf);
    check_addr(buf, strlen(buf), -1, want, &a);

    memset(buf, 'c', 260);
    buf[260] = '\0';
    check_addr(buf, 260, -1, "must be at most 259 bytes", &a);

    buf[0] = '/';
    memset(buf + 1, 'p', 106);
    buf[107] = '\0';
    check_addr(buf, 107, 0, NULL, &a);
    assert_string_equal(a.path, buf);
    buf[107] = 'p';
    buf[108] = '\0';
    check_addr(buf, 108, -1, "unix socket path must be at most 107 bytes", &a);

    check_addr("a:80\0" "1", 6, -1, FORMS, &a);
}

static void test_addr_same(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b;
        bool same;
    } cases[] = {
        {"LocalHost:80", "localhost:80", true}, {"localhost:80", "localhost:81", false},
        {"/a//b", "unix:/a/b", true},           {"/a/b", "/a/c", false},
        {"[::1]:80", "[0::1]:80", true},        {"127.0.0.1:80", "[::1]:80", false},
        {"/a", "a:80", false},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        struct backend_addr a, b;
        check_addr(cases[i].a, strlen(cases[i].a), 0, NULL, &a);
        check_addr(cases[i].b, strlen(cases[i].b), 0, NULL, &b);
        if (config_addr_same(&a, &b) != cases[i].same || config_addr_same(&b, &a) != cases[i].same)
            fail_msg("\"%s\" vs \"%s\": want same=%d", cases[i].a, cases[i].b, cases[i].same);
    }
}

static void test_port_number(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int rc;
        uint16_t port; /* rc 0 */
    } cases[] = {
        {"1", 0, 1},    {"65535", 0, 65535}, {"00080", 0, 80}, {"8080", 0, 8080},
        {"0", -2, 0},   {"65536", -2, 0},    {"99999", -2, 0}, {"000080", -2, 0},
        {"", -1, 0},    {"8a", -1, 0},       {"-1", -1, 0},    {"+80", -1, 0},
        {" 80", -1, 0}, {"80 ", -1, 0},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        uint16_t out = 4242;
        int rc = config_parse_port_number(cases[i].in, strlen(cases[i].in), &out);
        uint16_t want = cases[i].rc == 0 ? cases[i].port : 4242; /* untouched when refused */
        if (rc != cases[i].rc || out != want)
            fail_msg("\"%s\": rc %d out %u, want rc %d out %u", cases[i].in, rc, (unsigned)out, cases[i].rc,
                     (unsigned)want);
    }
    uint16_t out = 0;
    assert_int_equal(config_parse_port_number("80", 1, &out), 0); /* only `n` bytes count */
    assert_int_equal(out, 8);
}

/* ---- paths ---------------------------------------------------------------------------------------- */

static void test_norm_path(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t max;
        const char *out; /* NULL: refused with `why` */
        const char *why;
    } cases[] = {
        {"/", 100, "/", NULL},
        {"//", 100, "/", NULL},
        {"/a//b/", 100, "/a/b", NULL},
        {"/a/b", 4, "/a/b", NULL},
        {"/a/b/", 4, "/a/b", NULL},
        {"/.hidden/...x", 100, "/.hidden/...x", NULL},
        {"/a/b", 3, NULL, "must be at most 3 bytes"},
        {"a/b", 100, NULL, "must be an absolute path"},
        {"", 100, NULL, "must be an absolute path"},
        {"/a/./b", 100, NULL, "must not contain \".\" or \"..\" components"},
        {"/a/..", 100, NULL, "must not contain \".\" or \"..\" components"},
        {"/a\tb", 100, NULL, "must not contain control characters"},
        {"/a\x7f", 100, NULL, "must not contain control characters"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        char why[100] = "";
        char *out = config_norm_path(cases[i].in, strlen(cases[i].in), cases[i].max, why, sizeof why);
        bool ok = cases[i].out ? out && strcmp(out, cases[i].out) == 0 : !out && strcmp(why, cases[i].why) == 0;
        if (!ok)
            fail_msg("\"%s\" max %zu: got \"%s\" (%s)", cases[i].in, cases[i].max, out ? out : "NULL", why);
        free(out);
    }
    char why[100] = "";
    assert_null(config_norm_path("/a\0b", 4, 100, why, sizeof why));
    assert_string_equal(why, "must not contain control characters");
}

static void test_path_join_within(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b, *joined;
    } joins[] = {
        {"/", "x", "/x"}, {"/a", "b/c", "/a/b/c"}, {"/a/", "b", "/a/b"}, {"", "b", "/b"}, {"/a", "", "/a/"},
    };
    for (size_t i = 0; i < ARRAY_LEN(joins); i++) {
        char *j = config_path_join(joins[i].a, joins[i].b);
        assert_non_null(j);
        if (strcmp(j, joins[i].joined) != 0)
            fail_msg("\"%s\" + \"%s\": \"%s\", want \"%s\"", joins[i].a, joins[i].b, j, joins[i].joined);
        free(j);
    }
    static const struct {
        const char *child, *parent;
        bool within;
    } within[] = {
        {"/a/b", "/a", true},   {"/a", "/a", true},      {"/a/b/c", "/a/b", true}, {"/x", "/", true},
        {"/", "/", true},       {"/ab", "/a", false},    {"/a", "/a/b", false},    {"/", "/a", false},
        {"/b/a", "/a", false},
    };
    for (size_t i = 0; i < ARRAY_LEN(within); i++)
        if (config_path_within(within[i].child, within[i].parent) != within[i].within)
            fail_msg("\"%s\" within \"%s\": want %d", within[i].child, within[i].parent, within[i].within);
}

static void test_path_charsets(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        bool torrc_safe, plain;
    } cases[] = {
        {"/var/lib/tor", true, true}, {"/a+b_c-d.e", true, true}, {"/a=b:c", true, false},
        {"/a b", false, false},       {"/a#b", false, false},     {"/a\"b", false, false},
        {"/a\\b", false, false},      {"/\xc3\xa4", false, false}, {"/a\tb", false, false},
        {"", true, true},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        if (config_is_torrc_safe_path(cases[i].in) != cases[i].torrc_safe)
            fail_msg("torrc-safe \"%s\": want %d", cases[i].in, cases[i].torrc_safe);
        if (config_is_plain_path(cases[i].in) != cases[i].plain)
            fail_msg("plain \"%s\": want %d", cases[i].in, cases[i].plain);
    }
}

static void test_readable_file(void **state)
{
    (void)state;
    char dir[64], file[128], fifo[128], missing[128], why[300], want[300];
    assert_int_equal(tmpdir_make(dir, sizeof dir, "test_config_value"), 0);
    snprintf(file, sizeof file, "%s/ca.pem", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(missing, sizeof missing, "%s/missing", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("x\n", f);
    fclose(f);
    assert_int_equal(mkfifo(fifo, 0600), 0);

    strcpy(why, "untouched");
    assert_int_equal(config_check_readable_file(file, why, sizeof why), 0);
    assert_string_equal(why, "untouched");
    assert_int_equal(config_check_readable_file(dir, why, sizeof why), -1);
    snprintf(want, sizeof want, "\"%s\" is not a regular file", dir);
    assert_string_equal(why, want);
    assert_int_equal(config_check_readable_file(fifo, why, sizeof why), -1); /* refused without blocking */
    snprintf(want, sizeof want, "\"%s\" is not a regular file", fifo);
    assert_string_equal(why, want);
    assert_int_equal(config_check_readable_file(missing, why, sizeof why), -1);
    snprintf(want, sizeof want, "cannot read \"%s\": No such file or directory", missing);
    assert_string_equal(why, want);
    assert_int_equal(tmpdir_remove(dir), 0);
}

/* ---- torrc lines ---------------------------------------------------------------------------------- */

#define MANAGED(opt) "option \"" opt "\" is managed by onionfront or breaks single-onion mode"

static void test_torrc_line(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *why; /* NULL: accepted */
    } cases[] = {
        {"Log notice stdout", NULL},
        {"  NumEntryGuards 3", NULL},
        {"+ExitPolicy reject *:*", NULL},
        {"Nickname\tfoo", NULL},
        {"Log notice stdout # comment", NULL},
        {"ClientUseIPv6", NULL},
        {"SocksPortX 1", NULL}, /* longer than SocksPort: not an abbreviation of it */
        {"", "must not be empty"},
        {"   ", "must not be empty"},
        {"\t", "must not be empty"},
        {"Log notice\nSocksPort 9050", "must not contain CR, LF or other control characters"},
        {"Log notice\r", "must not contain CR, LF or other control characters"},
        {"Log \x7f", "must not contain CR, LF or other control characters"},
        {"Log notice \\", "must not end with \"\\\" (a torrc line continuation)"},
        {"=x", "must start with a torrc option name"},
        {"Log=notice", "must start with a torrc option name"},
        {"+ 1", "must start with a torrc option name"},
        {"SocksPort 9050", MANAGED("SocksPort")},
        {"socksp 9050", MANAGED("socksp")},
        {"/DataDirectory", MANAGED("DataDirectory")},
        {"controlsocket /x", MANAGED("controlsocket")},
        {"HiddenServiceDir /x", MANAGED("HiddenServiceDir")},
        {"Hidden 1", MANAGED("Hidden")},
        {"MetricsPortPolicy accept *", MANAGED("MetricsPortPolicy")},
        {"__OwningControllerProcess 1", MANAGED("__OwningControllerProcess")},
        {"Us 1", MANAGED("Us")},
        {"User tor", "option \"User\" is managed by onionfront (use tor.user)"},
        {"user tor", "option \"user\" is managed by onionfront (use tor.user)"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        char why[200] = "";
        int rc = config_check_torrc_line(cases[i].in, strlen(cases[i].in), why, sizeof why);
        bool ok = cases[i].why ? rc == -1 && strcmp(why, cases[i].why) == 0 : rc == 0 && why[0] == '\0';
        if (!ok)
            fail_msg("\"%s\": rc %d why \"%s\"", cases[i].in, rc, why);
    }
    char line[CONFIG_TORRC_LINE_MAX + 2];
    char why[200] = "";
    memcpy(line, "Log ", 4);
    memset(line + 4, 'x', sizeof line - 4);
    assert_int_equal(config_check_torrc_line(line, CONFIG_TORRC_LINE_MAX, why, sizeof why), 0);
    assert_int_equal(config_check_torrc_line(line, CONFIG_TORRC_LINE_MAX + 1, why, sizeof why), -1);
    assert_string_equal(why, "must be at most 1024 bytes");
    assert_int_equal(config_check_torrc_line("Log\0x", 5, why, sizeof why), -1);
    assert_string_equal(why, "must not contain CR, LF or other control characters");
}

/* ---- names and text ------------------------------------------------------------------------------- */

enum name_kind { SERVICE, BACKEND, USER, VISIBLE };

static bool name_check(enum name_kind k, const char *s, size_t n)
{
    switch (k) {
    case SERVICE: return config_is_service_name(s, n);
    case BACKEND: return config_is_backend_name(s, n);
    case USER: return config_is_user_name(s, n);
    case VISIBLE: return config_is_visible_ascii(s, n);
    }
    return false;
}

static void test_names(void **state)
{
    (void)state;
    static const struct {
        enum name_kind kind;
        const char *in;
        bool ok;
    } cases[] = {
        {SERVICE, "a", true},     {SERVICE, "0web", true},   {SERVICE, "web_1-x", true},
        {SERVICE, "", false},     {SERVICE, "Web", false},   {SERVICE, "_web", false},
        {SERVICE, "-web", false}, {SERVICE, "we.b", false},  {SERVICE, "w b", false},
        {BACKEND, "A.b_c-9", true}, {BACKEND, ".x", true},   {BACKEND, "-", true},
        {BACKEND, "", false},     {BACKEND, "a b", false},   {BACKEND, "a/b", false},
        {BACKEND, "a:b", false},
        {USER, "_tor", true},     {USER, "debian-tor", true}, {USER, "a0", true},
        {USER, "", false},        {USER, "0tor", false},     {USER, "Tor", false},
        {USER, "-tor", false},    {USER, "a.b", false},      {USER, "t\xc3\xb6r", false},
        {VISIBLE, "abc", true},   {VISIBLE, "~!\"#", true},  {VISIBLE, "", true},
        {VISIBLE, "a b", false},  {VISIBLE, "a\x7f", false}, {VISIBLE, "\xc3\xa9", false},
        {VISIBLE, "a\tb", false},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        if (name_check(cases[i].kind, cases[i].in, strlen(cases[i].in)) != cases[i].ok)
            fail_msg("kind %d \"%s\": want %d", (int)cases[i].kind, cases[i].in, cases[i].ok);

    /* Length limits: exactly the maximum passes, one more byte does not. */
    static const struct {
        enum name_kind kind;
        size_t max;
    } limits[] = {{SERVICE, CONFIG_SERVICE_NAME_MAX}, {BACKEND, CONFIG_BACKEND_NAME_MAX}, {USER, CONFIG_USER_MAX}};
    char buf[100];
    memset(buf, 'a', sizeof buf);
    for (size_t i = 0; i < ARRAY_LEN(limits); i++) {
        assert_true(name_check(limits[i].kind, buf, limits[i].max));
        assert_false(name_check(limits[i].kind, buf, limits[i].max + 1));
    }
    assert_int_equal(CONFIG_SERVICE_NAME_MAX, 32);
    assert_int_equal(CONFIG_BACKEND_NAME_MAX, 64);
    assert_int_equal(CONFIG_USER_MAX, 32);
    assert_false(config_is_service_name("a\0b", 3)); /* only the `n` bytes count, NUL included */
    assert_true(config_is_service_name("ab!", 2));
}

static void test_msg_text(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t len, outlen, maxshow;
        const char *out;
    } cases[] = {
        {"plain text", 10, 64, 60, "plain text"},
        {"ab\"c\\", 5, 64, 60, "ab\\\"c\\\\"},
        {"\x01\xff\n", 3, 64, 60, "\\x01\\xff\\x0a"},
        {"a\0b", 3, 64, 60, "a\\x00b"},
        {"abcdef", 6, 64, 3, "abc..."},
        {"abc", 3, 64, 3, "abc"},
        {"abcdefghij", 10, 8, 100, "abcd"}, /* room is kept for the widest escape */
        {"abcdefghij", 10, 8, 2, "ab..."},
        {"abcdefghij", 10, 7, 3, "abc"},    /* no room for "..." */
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        char out[64];
        memset(out, '#', sizeof out);
        config_msg_text(out, cases[i].outlen, cases[i].in, cases[i].len, cases[i].maxshow);
        if (strcmp(out, cases[i].out) != 0)
            fail_msg("case %zu: \"%s\", want \"%s\"", i, out, cases[i].out);
    }
    char out[4] = "xyz";
    config_msg_text(out, 0, "abc", 3, 10); /* no room at all: untouched */
    assert_string_equal(out, "xyz");
}

/* ---- keys ----------------------------------------------------------------------------------------- */

#define A51 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

/* IP networks: canonical text, the host-bit and prefix refusals, and matching at the prefix's edge. */
static void test_cidr(void **state)
{
    (void)state;
    static const struct {
        const char *in, *text, *why; /* text NULL: refused, with why in the message */
    } rows[] = {
        {"10.0.0.5", "10.0.0.5/32", NULL},
        {"10.0.0.0/24", "10.0.0.0/24", NULL},
        {"0.0.0.0/0", "0.0.0.0/0", NULL},
        {"127.0.0.0/8", "127.0.0.0/8", NULL},
        {"::1", "::1/128", NULL},
        {"FD00:0::/64", "fd00::/64", NULL},
        {"10.0.0.5/24", NULL, "host bits set: did you mean 10.0.0.0/24?"},
        {"fd00::1/64", NULL, "host bits set: did you mean fd00::/64?"},
        {"10.0.0.0/33", NULL, "the prefix length must be 0-32"},
        {"::/129", NULL, "the prefix length must be 0-128"},
        {"10.0.0.0/024", NULL, "without leading zeros"},
        {"10.0.0.0/", NULL, "the prefix length"},
        {"10.0.0.0/-1", NULL, "the prefix length"},
        {"10.0.0.0/2x", NULL, "the prefix length"},
        {"", NULL, "must be an IP address or network"},
        {"/24", NULL, "must be an IP address or network"},
        {"web1.example", NULL, "must be an IP address or network"},
        {"10.0.0.256", NULL, "must be an IP address or network"},
        {"[::1]", NULL, "must be an IP address or network"},
        {"10.0.0.1:80", NULL, "must be an IP address or network"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct config_cidr c;
        char why[128] = "";
        int rc = config_parse_cidr(rows[i].in, strlen(rows[i].in), &c, why, sizeof(why));
        if (rows[i].text ? rc != 0 || strcmp(c.text, rows[i].text) != 0 : rc != -1 || !strstr(why, rows[i].why))
            fail_msg("\"%s\": rc %d, text \"%s\", why \"%s\"", rows[i].in, rc, rc == 0 ? c.text : "", why);
    }
    struct config_cidr nets[3];
    char why[128];
    assert_int_equal(config_parse_cidr("10.1.2.0/23", 11, &nets[0], why, sizeof(why)), 0);
    assert_int_equal(config_parse_cidr("127.0.0.1", 9, &nets[1], why, sizeof(why)), 0);
    assert_int_equal(config_parse_cidr("fd00::/60", 9, &nets[2], why, sizeof(why)), 0);
    static const struct {
        int family;
        const char *addr;
        bool in;
    } probes[] = {
        {AF_INET, "10.1.2.0", true},   {AF_INET, "10.1.3.255", true}, {AF_INET, "10.1.4.0", false},
        {AF_INET, "10.1.1.255", false}, {AF_INET, "127.0.0.1", true}, {AF_INET, "127.0.0.2", false},
        {AF_INET6, "fd00::5", true},   {AF_INET6, "fd00:0:0:f::1", true}, {AF_INET6, "fd00:0:0:10::1", false},
        {AF_INET6, "::ffff:127.0.0.1", false}, /* mapped: the other family, never the IPv4 entry */
    };
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        uint8_t a[16];
        assert_int_equal(inet_pton(probes[i].family, probes[i].addr, a), 1);
        if (config_cidr_match(nets, 3, probes[i].family, a) != probes[i].in)
            fail_msg("%s: expected %s", probes[i].addr, probes[i].in ? "inside" : "outside");
    }
    struct config_cidr all;
    assert_int_equal(config_parse_cidr("0.0.0.0/0", 9, &all, why, sizeof(why)), 0);
    uint8_t any[4] = {203, 0, 113, 9};
    assert_true(config_cidr_match(&all, 1, AF_INET, any));
    assert_false(config_cidr_match(nets, 0, AF_INET, any));
}

static void test_x25519_b32(void **state)
{
    (void)state;
    unsigned char k[32], zero[32] = {0};
    assert_int_equal(strlen(A51), 51);

    memset(k, 0xee, sizeof k);
    assert_int_equal(config_x25519_b32_decode(A51 "A", 52, k), 0);
    assert_memory_equal(k, zero, 32);

    memset(k, 0xee, sizeof k);
    assert_int_equal(config_x25519_b32_decode(A51 "Q", 52, k), 0); /* 'Q' = 10000b: the key's last bit */
    assert_memory_equal(k, zero, 31);
    assert_int_equal(k[31], 1);

    unsigned char lower[32];
    assert_int_equal(config_x25519_b32_decode("N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ", 52, k), 0);
    assert_int_equal(config_x25519_b32_decode("n2nu7bsrl6yodzcypn4creb54tylkgie2kyoqwlfyc23zjvce5dq", 52, lower), 0);
    assert_memory_equal(k, lower, 32);
    assert_int_equal(k[0], 0x6e); /* "N2" = 01101 11010 -> 0110 1110 */

    memset(k, 0xee, sizeof k);
    static const char *const bad[] = {A51 "B", A51 "1", A51 "8", A51 "=", A51 "a" "A"};
    static const size_t bad_len[] = {52, 52, 52, 52, 53};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++)
        if (config_x25519_b32_decode(bad[i], bad_len[i], k) != -1)
            fail_msg("\"%s\" accepted", bad[i]);
    assert_int_equal(config_x25519_b32_decode(A51, 51, k), -1);
    assert_int_equal(k[0], 0xee); /* untouched when refused */
    assert_int_equal(config_x25519_b32_decode(A51 "A", 52, NULL), 0);
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addr_table),   cmocka_unit_test(test_addr_limits),
        cmocka_unit_test(test_addr_same),    cmocka_unit_test(test_port_number),
        cmocka_unit_test(test_norm_path),    cmocka_unit_test(test_path_join_within),
        cmocka_unit_test(test_path_charsets), cmocka_unit_test(test_readable_file),
        cmocka_unit_test(test_torrc_line),   cmocka_unit_test(test_names),
        cmocka_unit_test(test_msg_text),     cmocka_unit_test(test_x25519_b32),
        cmocka_unit_test(test_cidr),
    };
    return cmocka_run_group_tests_name("config_value", tests, NULL, NULL);
}
