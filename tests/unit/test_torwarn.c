/* test_torwarn.c — unit tests for sidecar/tor/torwarn.c: tor's log lines at their own level, and the
 * warnings onionfront expects (notice) only where their condition holds; every other warning stays one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sidecar/tor/torwarn.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* tor's log lines at their own level; its warnings are warnings. */
static void test_line_level(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        enum log_level level;
    } table[] = {
        {"Dec 03 10:00:00.000 [err] Reading config failed", LOG_LVL_ERROR},
        {"Dec 03 10:00:00.000 [warn] Your clock is skewed", LOG_LVL_WARN},
        {"Dec 03 10:00:00.000 [warn] This copy of Tor was compiled or configured to run in a non-anonymous mode.",
         LOG_LVL_WARN},
        {"Dec 03 10:00:00.000 [notice] Bootstrapped 100% (done): Done", LOG_LVL_NOTICE},
        {"Dec 03 10:00:00.000 [info] circuit_build: x", LOG_LVL_INFO},
        {"Dec 03 10:00:00.000 [debug] conn: y", LOG_LVL_DEBUG},
        {"Dec 03 10:00:00.000 [notice] quoting \"[err] \" in a notice", LOG_LVL_NOTICE},
        {"Dec 03 10:00:00.000 [warning] not a tag", LOG_LVL_NOTICE},
        {"Tor can't help you if you use it wrong!", LOG_LVL_NOTICE},
        {"", LOG_LVL_NOTICE},
    };
    for (size_t i = 0; i < ARRAY_LEN(table); i++)
        if (tor_line_level(table[i].line) != table[i].level)
            fail_msg("\"%s\": level %d, want %d", table[i].line, tor_line_level(table[i].line), table[i].level);
}

#define TS "Dec 05 15:20:12.000 "
#define NONANON "HiddenServiceNonAnonymousMode is set. Every hidden service on this tor instance is NON-ANONYMOUS. " \
    "If the HiddenServiceNonAnonymousMode option is changed, Tor will refuse to launch hidden services from the "  \
    "same directories, to protect your anonymity against config errors. This setting is for experimental use only."
#define NOANON "This copy of Tor was compiled or configured to run in a non-anonymous mode. It will provide NO ANONYMITY."
#define ROOT "You are running Tor as root. You don't need to, and you probably shouldn't."
#define DIRAUTH "You have used DirAuthority or AlternateDirAuthority to specify alternate directory authorities in " \
    "your configuration. This is potentially dangerous: it can make you look different from all other Tor users, " \
    "and hurt your anonymity."
#define TESTING "TestingTorNetwork is set. This will make your node almost unusable in the public Tor network, and " \
    "is therefore only advised if you are building a testing Tor network!"
#define REND "Unknown service identity key [scrubbed] on the rendezvous circuit 2747 with cookie 1A2B. Can't find " \
    "onion service."
#define INTRO "Unknown service identity key [scrubbed] on the introduction circuit 12 from $AB. Can't find onion service."
#define BUGKEY "Unknown service identity key [scrubbed] when handling a new rendezvous circuit."
#define CACHEBUG "hs_cache_decrement_allocation(): Bug: Underflow in hs_cache_decrement_allocation"

/* Each expected warning is notice on the tor it is expected of, and a warning on every other tor. */
static void test_line_relay_level(void **state)
{
    (void)state;
    const struct torwarn_ctx single = {.single_onion = true, .hosts_services = true};
    const struct torwarn_ctx single_root = {.single_onion = true, .hosts_services = true, .drops_root = true};
    const struct torwarn_ctx anon = {.hosts_services = true};
    const struct torwarn_ctx client = {.client = true};
    const struct torwarn_ctx testnet_client = {.client = true, .testing_network = true};
    const struct torwarn_ctx none = {0};
    const struct {
        const char *line;
        const struct torwarn_ctx *ctx;
        enum log_level level;
        enum torwarn_kind kind;
    } table[] = {
        {TS "[warn] " NONANON, &single, LOG_LVL_NOTICE, TORWARN_NON_ANONYMOUS_MODE},
        {TS "[warn] " NOANON, &single, LOG_LVL_NOTICE, TORWARN_NON_ANONYMOUS_MODE},
        {TS "[warn] " NONANON, &anon, LOG_LVL_WARN, TORWARN_UNEXPECTED}, /* an anonymous tor saying it: wrong */
        {TS "[warn] " NOANON, &client, LOG_LVL_WARN, TORWARN_UNEXPECTED},
        {TS "[warn] " ROOT, &single_root, LOG_LVL_NOTICE, TORWARN_STARTED_AS_ROOT},
        {TS "[warn] " ROOT, &single, LOG_LVL_WARN, TORWARN_UNEXPECTED}, /* root without User: tor stays root */
        {TS "[warn] " NOANON " And more.", &single, LOG_LVL_WARN, TORWARN_UNEXPECTED}, /* whole lines only */
        {TS "[warn] This copy of Tor was compiled", &single, LOG_LVL_WARN, TORWARN_UNEXPECTED},
        {TS "[warn] " DIRAUTH, &testnet_client, LOG_LVL_NOTICE, TORWARN_TEST_NETWORK},
        {TS "[warn] " TESTING, &testnet_client, LOG_LVL_NOTICE, TORWARN_TEST_NETWORK},
        {TS "[warn] " DIRAUTH, &client, LOG_LVL_WARN, TORWARN_UNEXPECTED}, /* without TestingTorNetwork */
        {TS "[warn] " TESTING, &single, LOG_LVL_WARN, TORWARN_UNEXPECTED},
        {TS "[warn] " REND, &single, LOG_LVL_NOTICE, TORWARN_REMOVED_SERVICE},
        {TS "[warn] " REND, &anon, LOG_LVL_NOTICE, TORWARN_REMOVED_SERVICE},
        {TS "[warn] " INTRO, &single, LOG_LVL_NOTICE, TORWARN_REMOVED_SERVICE},
        {TS "[warn] " REND, &client, LOG_LVL_WARN, TORWARN_UNEXPECTED},    /* a client hosts no service */
        {TS "[warn] " BUGKEY, &single, LOG_LVL_WARN, TORWARN_UNEXPECTED},  /* tor's BUG variant stays */
        {TS "[warn] " CACHEBUG, &client, LOG_LVL_NOTICE, TORWARN_CLIENT_CACHE_BUG},
        {TS "[warn] " CACHEBUG, &single, LOG_LVL_WARN, TORWARN_UNEXPECTED},
        /* as tor 0.4.9.11 writes it: a BUG line ends with tor's version */
        {TS "[warn] " CACHEBUG " (on Tor 0.4.9.11 )", &client, LOG_LVL_NOTICE, TORWARN_CLIENT_CACHE_BUG},
        {TS "[warn] " CACHEBUG " (on Tor 0.4.9.11 )", &single, LOG_LVL_WARN, TORWARN_UNEXPECTED},
        {TS "[warn] " CACHEBUG " and more (on Tor 0.4.9.11 )", &client, LOG_LVL_WARN, TORWARN_UNEXPECTED},
        {TS "[warn] " NOANON " (on Tor 0.4.9.11 )", &single, LOG_LVL_NOTICE, TORWARN_NON_ANONYMOUS_MODE},
        {TS "[warn] Your clock is skewed", &single_root, LOG_LVL_WARN, TORWARN_UNEXPECTED},
        {TS "[err] " NOANON, &single, LOG_LVL_ERROR, TORWARN_UNEXPECTED},
        {TS "[notice] " NOANON, &single, LOG_LVL_NOTICE, TORWARN_UNEXPECTED},
        {TS "[warn] " NONANON, &none, LOG_LVL_WARN, TORWARN_UNEXPECTED},
        {"", &single, LOG_LVL_NOTICE, TORWARN_UNEXPECTED},
    };
    for (size_t i = 0; i < ARRAY_LEN(table); i++) {
        enum log_level got = tor_line_relay_level(table[i].line, table[i].ctx);
        if (got != table[i].level)
            fail_msg("row %zu \"%.60s\": level %d, want %d", i, table[i].line, got, table[i].level);
        const char *w = strstr(table[i].line, "[warn] ");
        enum torwarn_kind k = w ? torwarn_classify(w + 7, table[i].ctx) : TORWARN_UNEXPECTED;
        if (k != table[i].kind)
            fail_msg("row %zu \"%.60s\": kind %s, want %s", i, table[i].line, torwarn_kind_str(k),
                     torwarn_kind_str(table[i].kind));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_level),
        cmocka_unit_test(test_line_relay_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
