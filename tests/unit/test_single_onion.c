/* test_single_onion.c — unit tests for sidecar/tor/single_onion.c, the rule for a tor fit for onionfront.
 *
 * Why: tor.c refuses a tor and verify.c flags a changed one by this rule; a hole in it would run a
 * service as a location-hidden one is expected not to be, or a tor usable as a client.
 *
 * Covers (table): both conf keys 1 and every listener empty -> fit; a conf key 0, missing or "yes"
 * -> that key named with its value; a listener open -> that listener named with its value; the first
 * problem wins (conf before listeners); keys not part of the rule are ignored; the warning names the
 * number of services. The anonymous services' tor's rule (both keys 0, no listener) the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "controlproto/cp_event.h"
#include "sidecar/config/config.h"
#include "sidecar/core/log.h"
#include "sidecar/tor/single_onion.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct case_ {
    const char *single_hop, *non_anonymous; /* NULL: not in the answer */
    const char *socks, *dns;                /* NULL: not in the answer */
    bool fit;
    const char *key, *value;                /* the problem */
};

static const struct case_ cases[] = {
    {"1", "1", "", "", true, NULL, NULL},
    {"1", "1", NULL, NULL, true, NULL, NULL},
    {"0", "1", "", "", false, "HiddenServiceSingleHopMode", "0"},
    {"1", "0", "", "", false, "HiddenServiceNonAnonymousMode", "0"},
    {NULL, "1", "", "", false, "HiddenServiceSingleHopMode", NULL},
    {"yes", "1", "", "", false, "HiddenServiceSingleHopMode", "yes"},
    {"1", "1", "\"127.0.0.1:9050\"", "", false, "net/listeners/socks", "\"127.0.0.1:9050\""},
    {"1", "1", "", "\"127.0.0.1:53\"", false, "net/listeners/dns", "\"127.0.0.1:53\""},
    {"0", "1", "\"127.0.0.1:9050\"", "", false, "HiddenServiceSingleHopMode", "0"},
};

/* The anonymous services' tor: both keys 0, no client listener. */
static const struct case_ anonymous_cases[] = {
    {"0", "0", "", "", true, NULL, NULL},
    {"0", "0", NULL, NULL, true, NULL, NULL},
    {"1", "1", "", "", false, "HiddenServiceSingleHopMode", "1"},
    {"0", "1", "", "", false, "HiddenServiceNonAnonymousMode", "1"},
    {"0", NULL, "", "", false, "HiddenServiceNonAnonymousMode", NULL},
    {"0", "0", "\"127.0.0.1:9050\"", "", false, "net/listeners/socks", "\"127.0.0.1:9050\""},
};

typedef bool (*rule_fn)(const struct cp_info *, const struct cp_info *, struct single_onion_problem *);

static void check_rule(const struct case_ *cases_, size_t n, rule_fn rule, const char *want)
{
    for (size_t i = 0; i < n; i++) {
        const struct case_ *c = &cases_[i];
        struct cp_kv conf_items[3], info_items[3];
        struct cp_info conf = {0, conf_items}, info = {0, info_items};
        conf_items[conf.n++] = (struct cp_kv){"SocksPort", "0"}; /* not part of the rule */
        if (c->single_hop)
            conf_items[conf.n++] = (struct cp_kv){"HiddenServiceSingleHopMode", (char *)c->single_hop};
        if (c->non_anonymous)
            conf_items[conf.n++] = (struct cp_kv){"HiddenServiceNonAnonymousMode", (char *)c->non_anonymous};
        info_items[info.n++] = (struct cp_kv){"version", "0.4.9.11"};
        if (c->socks)
            info_items[info.n++] = (struct cp_kv){"net/listeners/socks", (char *)c->socks};
        if (c->dns)
            info_items[info.n++] = (struct cp_kv){"net/listeners/dns", (char *)c->dns};
        struct single_onion_problem p = {0};
        bool fit = rule(&conf, &info, &p);
        if (fit != c->fit)
            fail_msg("case %zu: fit %d, want %d", i, fit, c->fit);
        if (fit)
            continue;
        assert_string_equal(p.key, c->key);
        assert_int_equal(p.listener, strncmp(c->key, "net/", 4) == 0);
        if (!p.listener)
            assert_string_equal(p.want, want);
        if (c->value)
            assert_string_equal(p.value, c->value);
        else
            assert_null(p.value);
    }
}

static void test_rule(void **state)
{
    (void)state;
    check_rule(cases, ARRAY_LEN(cases), single_onion_check, "1");
}

static void test_anonymous_rule(void **state)
{
    (void)state;
    check_rule(anonymous_cases, ARRAY_LEN(anonymous_cases), anonymous_tor_check, "0");
}

static void test_keys(void **state)
{
    (void)state;
    assert_string_equal(single_onion_conf_keys[0], "HiddenServiceSingleHopMode");
    assert_string_equal(single_onion_conf_keys[1], "HiddenServiceNonAnonymousMode");
    assert_string_equal(single_onion_listener_keys[SINGLE_ONION_N_LISTENERS - 1], "net/listeners/httptunnel");
}

/* Run single_onion_warn on the config `json` (' for ") and return what it wrote to stderr (static). */
static const char *warning_for(const char *json)
{
    static char out[4096];
    char buf[1024], err[256];
    snprintf(buf, sizeof(buf), "%s", json);
    for (char *q = buf; *q; q++)
        *q = *q == '\'' ? '"' : *q;
    struct config *c = config_load_string(buf, strlen(buf), err, sizeof(err));
    if (!c)
        fail_msg("config: %s", err);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fileno(tmp), 2), 2);
    single_onion_warn(c);
    log_flush(true);
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(out, 1, sizeof(out) - 1, tmp);
    out[n] = '\0';
    fclose(tmp);
    config_free(c);
    return out;
}

#define WARN_CONF(services) "{'state_dir':'/s','run_dir':'/r','services':[" services "]}"
#define WSVC(name, mode) "{'name':'" name "','mode':'" mode "','ports':[{'virtual':80,'target':'127.0.0.1:1'}]}"

/* The start-up warning names exactly the single onions, never an anonymous service (many: the count and the
 * first five); none: no warning. */
static void test_warning_names_single_onions(void **state)
{
    (void)state;
    const char *w = warning_for(WARN_CONF(WSVC("web", "single") "," WSVC("hidden", "anonymous") "," WSVC("api", "single")));
    if (!strstr(w, "the onion services web, api run by onionfront are NOT location-hidden") || strstr(w, "hidden,") ||
        strstr(w, "hidden are"))
        fail_msg("warning: %s", w);
    w = warning_for(WARN_CONF(WSVC("web", "single") "," WSVC("hidden", "anonymous")));
    if (!strstr(w, "the onion service web run by onionfront is NOT location-hidden"))
        fail_msg("warning: %s", w);
    w = warning_for(WARN_CONF(WSVC("hidden", "anonymous")));
    assert_string_equal(w, "");
    /* Many: the count and the first five, the anonymous one neither named nor counted. */
    w = warning_for(WARN_CONF(WSVC("s1", "single") "," WSVC("hidden", "anonymous") "," WSVC("s2", "single") ","
                              WSVC("s3", "single") "," WSVC("s4", "single") "," WSVC("s5", "single") ","
                              WSVC("s6", "single") "," WSVC("s7", "single")));
    if (!strstr(w, "the 7 onion services s1, s2, s3, s4, s5 and 2 more run by onionfront are NOT location-hidden") ||
        strstr(w, "s6") || strstr(w, "hidden,"))
        fail_msg("warning: %s", w);
}

/* The circuit rules on recorded CIRC events (tests/unit/test_verify.c has the lines' origin): a single
 * onion's one-hop ONEHOP_TUNNEL circuit, an anonymous service's four-hop one, and the broken cases. */
static void test_circuit_rules(void **state)
{
    (void)state;
    static const struct {
        size_t hops;
        unsigned flags;
        bool single, anonymous;
    } circs[] = {
        {1, CP_BUILD_ONEHOP_TUNNEL | CP_BUILD_IS_INTERNAL, true, false}, /* single onion, recorded */
        {4, CP_BUILD_IS_INTERNAL, false, true},                          /* anonymous service, recorded */
        {3, CP_BUILD_IS_INTERNAL, false, true},
        {2, CP_BUILD_IS_INTERNAL, false, false},
        {1, CP_BUILD_IS_INTERNAL, false, false},           /* one hop without the flag */
        {4, CP_BUILD_ONEHOP_TUNNEL, false, false},         /* nonsense, but not anonymous */
    };
    for (size_t i = 0; i < ARRAY_LEN(circs); i++) {
        struct cp_event_circ c = {0};
        c.n_hops = circs[i].hops;
        c.build_flags = circs[i].flags;
        if (single_onion_circ_fits(&c) != circs[i].single || anonymous_circ_fits(&c) != circs[i].anonymous)
            fail_msg("case %zu: single %d anonymous %d", i, single_onion_circ_fits(&c), anonymous_circ_fits(&c));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_anonymous_rule),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_warning_names_single_onions),
        cmocka_unit_test(test_circuit_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
