/* test_torrc.c — torrc rendering: the built-in template's safety lines, placeholders, and refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/tor/torrc.h"

static int count_lines_equal(const char *text, const char *line)
{
    int n = 0;
    size_t len = strlen(line);
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        if (l == len && memcmp(p, line, len) == 0)
            n++;
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

static void test_builtin_template_is_single_onion(void **state)
{
    (void)state;
    const char *extra[] = {"TestingTorNetwork 1", "DirAuthority auth1 orport=5000 127.0.0.1:7000 ABCD"};
    struct torrc_params p = {"/var/lib/onionfront/tor", "/run/onionfront/control/control.sock", 4242, NULL, extra, 2, NULL,
                             19555};
    char err[256] = "";
    char *t = torrc_render(torrc_template, &p, err, sizeof(err));
    assert_non_null(t);
    assert_int_equal(count_lines_equal(t, "HiddenServiceSingleHopMode 1"), 1);
    assert_int_equal(count_lines_equal(t, "HiddenServiceNonAnonymousMode 1"), 1);
    assert_int_equal(count_lines_equal(t, "SocksPort 0"), 1);
    assert_int_equal(count_lines_equal(t, "CookieAuthentication 1"), 1);
    assert_int_equal(count_lines_equal(t, "DataDirectory /var/lib/onionfront/tor"), 1);
    assert_int_equal(count_lines_equal(t, "ControlPort unix:/run/onionfront/control/control.sock"), 1);
    assert_int_equal(count_lines_equal(t, "__OwningControllerProcess 4242"), 1);
    assert_int_equal(count_lines_equal(t, "TestingTorNetwork 1"), 1);
    assert_int_equal(count_lines_equal(t, extra[1]), 1);
    /* tor's metrics on loopback, readable from loopback only */
    assert_int_equal(count_lines_equal(t, "MetricsPort 127.0.0.1:19555"), 1);
    assert_int_equal(count_lines_equal(t, "MetricsPortPolicy accept 127.0.0.1"), 1);
    assert_null(strstr(t, "@"));   /* every placeholder filled */
    assert_null(strstr(t, "User ")); /* no user configured */
    free(t);
}

/* The probe's client tor: an ordinary client with a unix SocksPort, never a single-onion option. */
static void test_client_template(void **state)
{
    (void)state;
    const char *extra[] = {"TestingTorNetwork 1"};
    struct torrc_params p = {"/var/lib/onionfront/probe-tor", "/run/onionfront/probe/control.sock", 4242, NULL, extra, 1,
                             "/run/onionfront/probe/socks.sock", 0};
    char err[256] = "";
    char *t = torrc_render(torrc_client_template, &p, err, sizeof(err));
    assert_non_null(t);
    assert_int_equal(count_lines_equal(t, "SocksPort unix:/run/onionfront/probe/socks.sock IsolateSOCKSAuth ExtendedErrors"), 1);
    assert_int_equal(count_lines_equal(t, "ControlPort unix:/run/onionfront/probe/control.sock"), 1);
    assert_int_equal(count_lines_equal(t, "__OwningControllerProcess 4242"), 1);
    assert_int_equal(count_lines_equal(t, "TestingTorNetwork 1"), 1);
    assert_null(strstr(t, "HiddenService"));
    assert_null(strstr(t, "@"));
    assert_null(strstr(t, "User "));
    free(t);
    /* tor.user: the client tor drops to it as the service tor does (never root). */
    p.user = "debian-tor";
    t = torrc_render(torrc_client_template, &p, err, sizeof(err));
    assert_non_null(t);
    assert_int_equal(count_lines_equal(t, "User debian-tor"), 1);
    free(t);
    p.user = NULL;
    p.socks_socket = "/run/with space/socks.sock";
    assert_null(torrc_render(torrc_client_template, &p, err, sizeof(err)));
    assert_non_null(strstr(err, "SOCKS socket"));
}

/* Onionbalance's client tor (no socks_socket): "SocksPort 0", nothing else changes. */
static void test_client_without_socks(void **state)
{
    (void)state;
    struct torrc_params p = {"/var/lib/onionfront/ob-tor", "/run/onionfront/ob/control.sock", 4242, NULL, NULL, 0, NULL, 0};
    char err[256] = "";
    char *t = torrc_render(torrc_client_template, &p, err, sizeof(err));
    assert_non_null(t);
    assert_int_equal(count_lines_equal(t, "SocksPort 0"), 1);
    assert_null(strstr(t, "SocksPort unix"));
    assert_int_equal(count_lines_equal(t, "ControlPort unix:/run/onionfront/ob/control.sock"), 1);
    free(t);
}

/* The anonymous services' tor: ordinary (no single-hop option), no client port, vanguards-lite pinned on,
 * tor's User as for the service tor. */
static void test_anonymous_template(void **state)
{
    (void)state;
    const char *extra[] = {"TestingTorNetwork 1"};
    struct torrc_params p = {"/var/lib/onionfront/anonymous/tor", "/run/onionfront/control-anonymous/control.sock",
                             4242, "debian-tor", extra, 1, NULL, 9053};
    char err[256] = "";
    char *t = torrc_render(torrc_anonymous_template, &p, err, sizeof(err));
    assert_non_null(t);
    assert_null(strstr(t, "HiddenServiceSingleHopMode"));
    assert_null(strstr(t, "HiddenServiceNonAnonymousMode"));
    assert_int_equal(count_lines_equal(t, "SocksPort 0"), 1);
    assert_int_equal(count_lines_equal(t, "VanguardsLiteEnabled 1"), 1);
    assert_int_equal(count_lines_equal(t, "DataDirectory /var/lib/onionfront/anonymous/tor"), 1);
    assert_int_equal(count_lines_equal(t, "ControlPort unix:/run/onionfront/control-anonymous/control.sock"), 1);
    assert_int_equal(count_lines_equal(t, "User debian-tor"), 1);
    assert_int_equal(count_lines_equal(t, "TestingTorNetwork 1"), 1);
    /* no MetricsPort: every local user could read the location-hidden services' addresses there */
    assert_null(strstr(t, "\nMetricsPort"));
    assert_null(strstr(t, "@"));
    free(t);
}

/* metrics_port 0 (a tor hosting a service with client authorization): no MetricsPort line at all. */
static void test_no_metrics_port(void **state)
{
    (void)state;
    struct torrc_params p = {"/d", "/c/s", 1, NULL, NULL, 0, NULL, 0};
    char err[256] = "";
    char *t = torrc_render(torrc_template, &p, err, sizeof(err));
    assert_non_null(t);
    assert_null(strstr(t, "\nMetricsPort"));
    assert_int_equal(count_lines_equal(t, "HiddenServiceSingleHopMode 1"), 1);
    assert_null(strstr(t, "@"));
    free(t);
}

static void test_user_line(void **state)
{
    (void)state;
    struct torrc_params p = {"/d", "/c/s", 1, "debian-tor", NULL, 0, NULL, 9052};
    char err[256];
    char *t = torrc_render(torrc_template, &p, err, sizeof(err));
    assert_non_null(t);
    assert_int_equal(count_lines_equal(t, "User debian-tor"), 1);
    free(t);
}

struct refusal {
    const char *tmpl;
    struct torrc_params p;
    const char *expect; /* substring of the error */
};

static void test_refusals(void **state)
{
    (void)state;
    const char *nl_extra[] = {"TestingTorNetwork 1\nSocksPort 9050"};
    const struct refusal cases[] = {
        {"DataDirectory @DATA_DIR@\n", {"/a dir", "/c", 1, NULL, NULL, 0, NULL, 0}, "data directory \"/a dir\""},
        {"DataDirectory @DATA_DIR@\n", {"relative", "/c", 1, NULL, NULL, 0, NULL, 0}, "must be an absolute path"},
        {"ControlPort unix:@CONTROL_SOCKET@\n", {"/d", "/c\"x", 1, NULL, NULL, 0, NULL, 0}, "control socket"},
        {"@USER_LINE@\n", {"/d", "/c", 1, "bad user", NULL, 0, NULL, 0}, "user name"},
        {"@EXTRA_TORRC@\n", {"/d", "/c", 1, NULL, nl_extra, 1, NULL, 0}, "extra line 0 contains a line break"},
        {"@NOPE@\n", {"/d", "/c", 1, NULL, NULL, 0, NULL, 0}, "unknown placeholder @NOPE@"},
        {"@METRICS_LINES@\n", {"/d", "/c", 1, NULL, NULL, 0, NULL, 70000}, "MetricsPort 70000 is not a port"},
        {"x @DATA_DIR\n", {"/d", "/c", 1, NULL, NULL, 0, NULL, 0}, "unterminated placeholder"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[256] = "";
        char *t = torrc_render(cases[i].tmpl, &cases[i].p, err, sizeof(err));
        if (t)
            fail_msg("case %zu: rendered instead of refusing: %s", i, t);
        if (!strstr(err, cases[i].expect))
            fail_msg("case %zu: error \"%s\" does not mention \"%s\"", i, err, cases[i].expect);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_template_is_single_onion),
        cmocka_unit_test(test_no_metrics_port),
        cmocka_unit_test(test_user_line),
        cmocka_unit_test(test_client_template),
        cmocka_unit_test(test_client_without_socks),
        cmocka_unit_test(test_anonymous_template),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
