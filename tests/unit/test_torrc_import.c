/* test_torrc_import.c — unit tests for sidecar/cli/torrc_import.c: an operator's torrc into onionfront's
 * config (`onionfront import-torrc`).
 *
 * Why: the import decides a migrated service's mode (a hidden service must stay hidden) and its ports and
 * defences; what it cannot carry over must be named, never dropped.
 *
 * A table of torrc text -> canonical dump: the config's "services" (compact JSON), then each note on a
 * line of its own, then "single" or "anonymous" and the HiddenServiceDir lines it saw. Covers tor's
 * syntax (comments, quotes, continuations, case, '+'), every option in the map, bad values, options
 * before any HiddenServiceDir, v2 and port-less services, unique names, the mode switches (both needed,
 * last value wins) and input with NUL bytes and control characters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/cli/torrc_import.h"

/* The canonical dump of `text` (see the top comment), in a new string. */
static char *dump(const char *text, size_t len)
{
    struct torrc_import *t = torrc_import_parse(text, len, "torrc");
    assert_non_null(t);
    json_t *c = torrc_import_config(t);
    assert_non_null(c);
    char *svcs = json_dumps(json_object_get(c, "services"), JSON_COMPACT);
    assert_non_null(svcs);
    size_t cap = strlen(svcs) + 8192, n = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    n += (size_t)snprintf(out + n, cap - n, "%s\n", svcs);
    for (size_t i = 0; i < torrc_import_n_notes(t); i++)
        n += (size_t)snprintf(out + n, cap - n, "%s\n", torrc_import_note(t, i));
    n += (size_t)snprintf(out + n, cap - n, "%s", torrc_import_is_single(t) ? "single" : "anonymous");
    for (size_t i = 0; i < torrc_import_n_dirs(t); i++)
        n += (size_t)snprintf(out + n, cap - n, " %s", torrc_import_dir(t, i));
    /* the service accessors agree with the JSON */
    for (size_t i = 0; i < torrc_import_n_services(t); i++)
        assert_string_equal(torrc_import_service_name(t, i),
                            json_string_value(json_object_get(torrc_import_config_service(c, i), "name")));
    free(svcs);
    json_decref(c);
    torrc_import_free(t);
    return out;
}

static const struct {
    const char *what, *torrc, *want;
} cases[] = {
    {"a single onion as Debian's tor runs one",
     "## torrc\nSocksPort 0\nHiddenServiceNonAnonymousMode 1\nHiddenServiceSingleHopMode 1\n"
     "HiddenServiceDir /var/lib/tor/web/\nHiddenServicePort 80 127.0.0.1:8080\nHiddenServicePort 443 8443\n",
     "[{\"name\":\"web\",\"mode\":\"single\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:8080\"},"
     "{\"virtual\":443,\"target\":\"127.0.0.1:8443\"}]}]\n"
     "line 2: SocksPort 0: not carried over: onionfront's single onion tor has no SocksPort (tor refuses one in "
     "that mode)\n"
     "single /var/lib/tor/web"},
    {"an ordinary hidden service with every option in the map",
     "HiddenServiceDir /var/lib/tor/shop\nHiddenServicePort 80\nHiddenServicePort 81 unix:/run/shop.sock\n"
     "HiddenServicePort 82 [::1]:8082\nHiddenServicePort 83 10.0.0.5\nHiddenServiceVersion 3\n"
     "HiddenServiceNumIntroductionPoints 6\nHiddenServiceMaxStreams 64\nHiddenServiceMaxStreamsCloseCircuit 1\n"
     "HiddenServicePoWDefensesEnabled 1\nHiddenServicePoWQueueRate 200\nHiddenServicePoWQueueBurst 1000\n"
     "HiddenServiceEnableIntroDoSDefense 1\nHiddenServiceEnableIntroDoSRatePerSec 30\n"
     "HiddenServiceEnableIntroDoSBurstPerSec 300\n",
     "[{\"name\":\"shop\",\"mode\":\"anonymous\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:80\"},"
     "{\"virtual\":81,\"target\":\"unix:/run/shop.sock\"},{\"virtual\":82,\"target\":\"[::1]:8082\"},"
     "{\"virtual\":83,\"target\":\"10.0.0.5:83\"}],\"dos\":{\"num_intro_points\":6,"
     "\"max_streams_close_circuit\":true,\"pow\":{\"enabled\":true,\"queue_rate\":200,\"queue_burst\":1000},"
     "\"intro\":{\"enabled\":true,\"rate_per_sec\":30,\"burst_per_sec\":300}},\"max_streams\":64}]\n"
     "anonymous /var/lib/tor/shop"},
    {"several targets for one port become a pool; the circuit id export becomes proxy_protocol",
     "HiddenServiceDir /a/hs\nHiddenServicePort 80 127.0.0.1:8080\nHiddenServicePort 80 127.0.0.1:8081\n"
     "HiddenServiceExportCircuitID haproxy\n",
     "[{\"name\":\"hs\",\"mode\":\"anonymous\",\"ports\":[{\"virtual\":80,\"backends\":[{\"address\":"
     "\"127.0.0.1:8080\"},{\"address\":\"127.0.0.1:8081\"}],\"proxy_protocol\":true}]}]\n"
     "line 4: HiddenServiceExportCircuitID haproxy: carried over as \"proxy_protocol\": true on every port: "
     "onionfront sends PROXY protocol version 2 (tor sent version 1) with the circuit id in the source address; "
     "check that the backends accept version 2\n"
     "anonymous /a/hs"},
    {"tor's syntax: comments, quotes, continuations, case, '+', CRLF",
     "  # a comment\r\nhiddenservicedir \"/var/lib/tor/q s\"  # trailing\r\n"
     "+HIDDENSERVICEPORT 80 \\\n# skipped in a continuation\n 127.0.0.1:9000\n"
     "HiddenServiceSingleHopMode 1 # on\nHiddenServiceNonAnonymousMode 1\n",
     "[{\"name\":\"q-s\",\"mode\":\"single\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:9000\"}]}]\n"
     "single /var/lib/tor/q s"},
    {"both mode switches are needed, and the last line of each wins",
     "HiddenServiceNonAnonymousMode 1\nHiddenServiceSingleHopMode 1\nHiddenServiceNonAnonymousMode 0\n"
     "HiddenServiceDir /x/a\nHiddenServicePort 80\n",
     "[{\"name\":\"a\",\"mode\":\"anonymous\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:80\"}]}]\n"
     "anonymous /x/a"},
    {"names: made valid and unique",
     "HiddenServiceDir /a/hs\nHiddenServicePort 80\nHiddenServiceDir /b/hs/\nHiddenServicePort 80\n"
     "HiddenServiceDir /c/.My.Site\nHiddenServicePort 80\nHiddenServiceDir /d/___\nHiddenServicePort 80\n",
     "[{\"name\":\"hs\",\"mode\":\"anonymous\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:80\"}]},"
     "{\"name\":\"hs-2\",\"mode\":\"anonymous\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:80\"}]},"
     "{\"name\":\"my-site\",\"mode\":\"anonymous\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:80\"}]},"
     "{\"name\":\"service\",\"mode\":\"anonymous\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:80\"}]}]\n"
     "anonymous /a/hs /b/hs /c/.My.Site /d/___"},
    {"what is not carried over is named with the reason",
     "HiddenServicePort 80\nDataDirectory /var/lib/tor\n%include /etc/tor/torrc.d/\n"
     "HiddenServiceDir relative\nHiddenServicePort 80\n"
     "HiddenServiceDir /v2\nHiddenServiceVersion 2\nHiddenServicePort 80\n"
     "HiddenServiceDir /noports\n"
     "HiddenServiceDir /ok\nHiddenServicePort 0\nHiddenServicePort 70000 1\nHiddenServicePort 80 a b\n"
     "HiddenServicePort 81\nHiddenServiceNumIntroductionPoints 21\nHiddenServiceMaxStreams -1\n"
     "HiddenServicePoWDefensesEnabled yes\nHiddenServiceEnableIntroDoSRatePerSec 0\n"
     "HiddenServiceFrobnicate 1\nHiddenServiceDirGroupReadable 1\n/HiddenServicePort\n"
     "HiddenServiceExportCircuitID none\nHiddenServiceVersion 4\nExitRelay 0\n",
     "[{\"name\":\"ok\",\"mode\":\"anonymous\",\"ports\":[{\"virtual\":81,\"target\":\"127.0.0.1:81\"}]}]\n"
     "line 1: HiddenServicePort 80: before any HiddenServiceDir (tor refuses it): not carried over\n"
     "line 2: DataDirectory /var/lib/tor: not carried over: onionfront's tor keeps its data in <state_dir>/tor\n"
     "line 3: %include /etc/tor/torrc.d/: not followed: run onionfront import-torrc on the included file too\n"
     "line 4: HiddenServiceDir relative: not carried over: not an absolute directory\n"
     "line 5: HiddenServicePort 80: before any HiddenServiceDir (tor refuses it): not carried over\n"
     "line 6: /v2: HiddenServiceDir of a v2 service (HiddenServiceVersion 2), which tor no longer runs: not "
     "carried over\n"
     "line 9: /noports: HiddenServiceDir without a HiddenServicePort (tor refuses it): not carried over\n"
     "line 11: HiddenServicePort 0: not carried over: the virtual port must be 1-65535\n"
     "line 12: HiddenServicePort 70000 1: not carried over: the virtual port must be 1-65535\n"
     "line 13: HiddenServicePort 80 a b: not carried over: not a port and one target\n"
     "line 15: HiddenServiceNumIntroductionPoints 21: not carried over: onionfront takes 1-20 here\n"
     "line 16: HiddenServiceMaxStreams -1: not carried over: onionfront takes 0-65535 here\n"
     "line 17: HiddenServicePoWDefensesEnabled yes: not carried over: onionfront takes 0 or 1, not 0-1 here\n"
     "line 18: HiddenServiceEnableIntroDoSRatePerSec 0: not carried over: onionfront takes 1-2147483647 here\n"
     "line 19: HiddenServiceFrobnicate 1: an onion service option that import-torrc does not know: not carried "
     "over\n"
     "line 20: HiddenServiceDirGroupReadable 1: not carried over: onionfront keeps key directories private (0700)\n"
     "line 21: /HiddenServicePort: not carried over: a '/' option (clear the option) is not understood here\n"
     "line 22: HiddenServiceExportCircuitID none: not carried over: only haproxy has an equivalent "
     "(proxy_protocol)\n"
     "line 23: HiddenServiceVersion 4: not carried over: tor runs version 3 services only\n"
     "line 24: ExitRelay 0: not an onion service option: not carried over (onionfront writes its tor's torrc; "
     "add a line its tor needs to tor.extra_torrc by hand)\n"
     "anonymous /v2 /noports /ok"},
    {"outside input: control characters are not echoed, a bad quote is named, an unterminated continuation ends",
     "HiddenServiceDir /a\x01" "b\nHiddenServicePort 80\nLog \"unterminated\nHiddenServicePort 81 \\",
     "[{\"name\":\"a-b\",\"mode\":\"anonymous\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:80\"},"
     "{\"virtual\":81,\"target\":\"127.0.0.1:81\"}]}]\n"
     "line 3: Log \"unterminated: not understood (a quoted value tor would refuse): not carried over\n"
     "anonymous /a\x01" "b"},
    {"nothing to carry over", "SocksPort 9050\n",
     "[]\nline 1: SocksPort 9050: not carried over: onionfront's single onion tor has no SocksPort (tor refuses "
     "one in that mode)\nanonymous"},
};

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = dump(cases[i].torrc, strlen(cases[i].torrc));
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu (%s):\n--- got\n%s\n--- want\n%s", i, cases[i].what, got, cases[i].want);
        free(got);
    }
}

/* A NUL byte inside a line is not a line end; the whole input is read. */
static void test_nul_bytes(void **state)
{
    (void)state;
    static const char text[] = "HiddenServiceDir /a\0b\nHiddenServicePort 80\n";
    char *got = dump(text, sizeof(text) - 1);
    assert_non_null(strstr(got, "\"name\":\"a-b\""));
    free(got);
}

/* The input is bytes with no NUL at the end (a file read whole): a last line of blanks is not read past
 * (found by fuzz_torrc_import: tests/fuzz/regressions/fuzz_torrc_import/last-line-blanks-no-nul.torrc). */
static void test_no_terminator(void **state)
{
    (void)state;
    static const char text[] = "HiddenServiceDir /a\nHiddenServicePort 80\n\\\n   ";
    size_t len = sizeof(text) - 1;
    char *exact = malloc(len);
    assert_non_null(exact);
    memcpy(exact, text, len);
    char *got = dump(exact, len);
    assert_non_null(strstr(got, "\"name\":\"a\""));
    free(got);
    free(exact);
}

/* The config it prints is a whole config: state_dir and run_dir as the systemd unit makes them. */
static void test_config_top_level(void **state)
{
    (void)state;
    static const char text[] = "HiddenServiceDir /a\nHiddenServicePort 80\n";
    struct torrc_import *t = torrc_import_parse(text, strlen(text), "torrc");
    json_t *c = torrc_import_config(t);
    assert_string_equal(json_string_value(json_object_get(c, "state_dir")), "/var/lib/onionfront");
    assert_string_equal(json_string_value(json_object_get(c, "run_dir")), "/run/onionfront");
    assert_null(torrc_import_config_service(c, 1));
    json_decref(c);
    torrc_import_free(t);
    assert_null(torrc_import_parse(text, TORRC_IMPORT_MAX_BYTES + 1, "torrc"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_nul_bytes),
        cmocka_unit_test(test_no_terminator),
        cmocka_unit_test(test_config_top_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
