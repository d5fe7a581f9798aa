/* test_ob_config.c — unit tests for sidecar/config/ob_config.c: the "onionbalance" object through the real config
 * loader (instance and frontend accepted; unknown or misplaced keys, a bad or checksum-broken address, more
 * than 8 instances, a duplicate, PoW on a frontend, ports on a frontend and a second frontend refused with
 * the field named), address parsing, the ob_config text tor reads, config.yaml (values checked, key path
 * plain), and the status-socket JSON (a recorded sample of Onionbalance 0.2.2's answer, a missing master,
 * garbage, introPointsNum outside 0-20).
 *
 * Why: the address in ob_config and config.yaml decides which master tor and Onionbalance serve; a wrong one
 * publishes nothing, silently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sidecar/config/config.h"
#include "sidecar/config/ob_config.h"

#define A0 "2gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4ad"
#define A1 "nk47d24ppuzyr5hz2wdpm3uz7vkaqdpsyrdpbzmgncyjycfbnxidqgyd"
#define A2 "afpx426fv2xuqnzebcpjeuwmco2qsungw2kbeurhmxh7jv4agbxcytqd"
#define A3 "f5iffsp5cwyzuggfqtibgy2wqgmgcpymgtueicpppe4hbgqvt3bihcqd"
#define A4 "sqer3vskeh76sqquxrwrpxxliodtuxhs6ctrws24vknfzanwsz62bnyd"
#define A5 "rdn7meuxfrmuulbpnxpespxrytgspln2rq3on26qboe76fb2xjqqfsyd"
#define A6 "dwjk2s3jq75agr6mlux3nt46i7ed6t3mv2z3l33pmkltauujehby6eqd"
#define A7 "7ocizgnzuq7mpbtkepvaadazhgqwr5p7c4yuuc4iy67hchl667ia3qad"
#define A8 "li67rhnhx4r5ohwgh4ir3elrypyfarzybilyclzaeshght662t53mgad"
/* A0 with its last character changed: the checksum no longer matches. */
#define A0_BAD "2gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4aa"

#define TOP "{\"state_dir\":\"/var/lib/of\",\"run_dir\":\"/run/of\",\"services\":["
#define PORTS "\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:8080\"}]"
#define INST(master) "{\"name\":\"web\"," PORTS ",\"onionbalance\":{\"master_address\":\"" master "\"}}"
#define FRONT(x) "{\"name\":\"front\",\"onionbalance\":{\"frontend\":true" x "}}"

static struct config *load(const char *services, char *err, size_t errlen)
{
    char json[4096];
    snprintf(json, sizeof(json), TOP "%s]}", services);
    return config_load_string(json, strlen(json), err, errlen);
}

static void test_instance_ok(void **state)
{
    (void)state;
    char err[512] = "";
    struct config *c = load(INST(A0 ".onion"), err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(c->services[0].onionbalance.role, OB_ROLE_INSTANCE);
    assert_string_equal(c->services[0].onionbalance.master_address, A0);
    config_free(c);
    /* upper case and without .onion: the same address, canonical lower case */
    c = load("{\"name\":\"web\"," PORTS ",\"onionbalance\":{\"master_address\":\"2GS2ZGQBL6WC555TIFTTMNKRFIKRD5A74N6"
             "RCGZGP4BZ53C5J5MBZ4AD\"}}", err, sizeof(err));
    assert_non_null(c);
    assert_string_equal(c->services[0].onionbalance.master_address, A0);
    config_free(c);
}

static void test_frontend_ok(void **state)
{
    (void)state;
    char err[512] = "";
    struct config *c = load(FRONT(",\"instances\":[\"" A1 ".onion\",\"" A2 "\"],\"testnet\":true,"
                                  "\"publish_deadline\":120") "," INST(A3), err, sizeof(err));
    assert_non_null(c);
    const struct ob_conf *ob = &c->services[0].onionbalance;
    assert_int_equal(ob->role, OB_ROLE_FRONTEND);
    assert_int_equal(ob->n_instances, 2);
    assert_string_equal(ob->instances[0], A1);
    assert_string_equal(ob->instances[1], A2);
    assert_true(ob->testnet);
    assert_int_equal(ob->publish_deadline, 120);
    assert_int_equal(c->services[0].n_ports, 0);
    config_free(c);
    c = load(FRONT(""), err, sizeof(err)); /* local instances may come later */
    assert_non_null(c);
    assert_false(c->services[0].onionbalance.testnet);
    assert_int_equal(c->services[0].onionbalance.publish_deadline, OB_DEFAULT_PUBLISH_DEADLINE);
    config_free(c);
}

struct bad {
    const char *services;
    const char *err;
};

static void test_refused(void **state)
{
    (void)state;
    static const struct bad cases[] = {
        {"{\"name\":\"web\"," PORTS ",\"onionbalance\":[]}", "services[0].onionbalance: must be an object"},
        {"{\"name\":\"web\"," PORTS ",\"onionbalance\":{}}",
         "services[0].onionbalance.master_address: must be a string"},
        {INST(A0_BAD), "services[0].onionbalance.master_address: is not a v3 onion address"},
        {INST("abc.onion"), "services[0].onionbalance.master_address: is not a v3 onion address"},
        {"{\"name\":\"web\"," PORTS ",\"onionbalance\":{\"master_address\":\"" A0 "\",\"x\":1}}",
         "services[0].onionbalance: unknown key \"x\""},
        {"{\"name\":\"web\"," PORTS ",\"onionbalance\":{\"master_address\":\"" A0 "\",\"instances\":[]}}",
         "services[0].onionbalance: misplaced key \"instances\" (frontend settings need \"frontend\": true)"},
        {FRONT(",\"master_address\":\"" A0 "\""),
         "services[0].onionbalance: misplaced key \"master_address\" (master_address belongs to an instance"},
        {FRONT("") "," FRONT(""), "services[1].name: duplicate service name"},
        {"{\"name\":\"front\",\"onionbalance\":{\"frontend\":false}}",
         "services[0].onionbalance.frontend: must be true"},
        {FRONT(",\"instances\":[\"" A0 "\",\"" A1 "\",\"" A2 "\",\"" A3 "\",\"" A4 "\",\"" A5 "\",\"" A6 "\",\"" A7
               "\",\"" A8 "\"]"),
         "services[0].onionbalance.instances: must have at most 8 entries"},
        {FRONT(",\"instances\":[\"" A0 "\",\"" A0 ".onion\"]"),
         "services[0].onionbalance.instances[1]: is listed twice"},
        {FRONT(",\"instances\":[\"" A0_BAD "\"]"),
         "services[0].onionbalance.instances[0]: is not a v3 onion address"},
        {FRONT(",\"testnet\":1"), "services[0].onionbalance.testnet: must be true or false"},
        {FRONT(",\"publish_deadline\":59"), "services[0].onionbalance.publish_deadline: must be an integer, 60-86400"},
        {"{\"name\":\"front\",\"dos\":{\"pow\":{\"enabled\":true}},\"onionbalance\":{\"frontend\":true}}",
         "services[0].onionbalance: a frontend cannot use dos.pow: Onionbalance 0.2.2 leaves pow-params out"},
        {"{\"name\":\"front\"," PORTS ",\"onionbalance\":{\"frontend\":true}}",
         "services[0].ports: not for an Onionbalance frontend"},
        {FRONT("") ",{\"name\":\"front2\",\"onionbalance\":{\"frontend\":true}}",
         "services[1]: a second Onionbalance frontend (services[0] is one)"},
        {"{\"name\":\"web\",\"mode\":\"anonymous\"," PORTS ",\"onionbalance\":{\"master_address\":\"" A0 "\"}}",
         "services[0].onionbalance: only for a service with mode \"single\""},
        {"{\"name\":\"front\",\"mode\":\"anonymous\",\"onionbalance\":{\"frontend\":true}}",
         "services[0].onionbalance: only for a service with mode \"single\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[512] = "";
        struct config *c = load(cases[i].services, err, sizeof(err));
        if (c || strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s...\"", i, c ? "(accepted)" : err, cases[i].err);
        config_free(c);
    }
}

static void test_address_parse(void **state)
{
    (void)state;
    char out[OB_ADDRESS_LEN + 1];
    assert_true(ob_address_parse(A1 ".onion", strlen(A1) + 6, out));
    assert_string_equal(out, A1);
    assert_true(ob_address_parse(A1 ".ONION", strlen(A1) + 6, NULL));
    assert_false(ob_address_parse(A0_BAD, strlen(A0_BAD), NULL));
    assert_false(ob_address_parse(A1 "x", strlen(A1) + 1, NULL));
    assert_false(ob_address_parse(A1, strlen(A1) - 1, NULL));
    assert_false(ob_address_parse("0gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4ad", 56, NULL)); /* '0' */
}

static void test_instance_file(void **state)
{
    (void)state;
    char buf[128];
    assert_int_equal(ob_instance_file_text(A0, buf, sizeof(buf)), (int)strlen("MasterOnionAddress " A0 ".onion\n"));
    assert_string_equal(buf, "MasterOnionAddress " A0 ".onion\n");
    assert_int_equal(ob_instance_file_text(A0, buf, 20), -1);
}

static void test_yaml(void **state)
{
    (void)state;
    char err[256] = "";
    const char inst[2][OB_ADDRESS_LEN + 1] = {A1, A2};
    char *y = ob_yaml_render("/var/lib/of/keys/front/hs_ed25519_secret_key", inst, 2, err, sizeof(err));
    assert_non_null(y);
    assert_string_equal(y, "# written by onionfront at every start of Onionbalance: do not edit\n"
                           "services:\n- key: /var/lib/of/keys/front/hs_ed25519_secret_key\n  instances:\n"
                           "  - address: " A1 ".onion\n    name: instance1\n"
                           "  - address: " A2 ".onion\n    name: instance2\n");
    free(y);
    /* a key path YAML would read differently, and an address that is not one, are refused */
    assert_null(ob_yaml_render("/var/lib/of: x/key", inst, 2, err, sizeof(err)));
    assert_string_equal(err, "the key path may only contain A-Z a-z 0-9 / . _ - +");
    assert_null(ob_yaml_render("/k#x", inst, 2, err, sizeof(err)));
    assert_null(ob_yaml_render("relative/key", inst, 2, err, sizeof(err)));
    const char bad[1][OB_ADDRESS_LEN + 1] = {A0_BAD};
    assert_null(ob_yaml_render("/k", bad, 1, err, sizeof(err)));
    assert_string_equal(err, "instance 0 is not a v3 onion address");
    assert_null(ob_yaml_render("/k", inst, 0, err, sizeof(err)));
}

/* As Onionbalance 0.2.2's status socket answered on the private network (one instance with a descriptor,
 * one without, the master's onionAddress with ".onion"). */
static const char status_sample[] =
    "{\"services\": [{\"instances\": [{\"descriptorReceived\": \"2026-12-04 05:19:10\", \"introPointsNum\": 3, "
    "\"introSetModified\": \"2026-12-04 05:19:10\", \"onionAddress\": \"" A1 ".onion\"}, "
    "{\"onionAddress\": \"" A2 ".onion\", \"received\": null}], \"onionAddress\": \"" A0 ".onion\", "
    "\"publishAttemptFirstDescriptor\": \"2026-12-04 05:19:16\", \"publishAttemptSecondDescriptor\": null}]}";

static void test_status_parse(void **state)
{
    (void)state;
    struct ob_status st;
    char err[256] = "";
    assert_int_equal(ob_status_parse(status_sample, strlen(status_sample), A0, &st, err, sizeof(err)), 0);
    assert_true(st.attempted);
    assert_string_equal(st.attempt_first, "2026-12-04 05:19:16");
    assert_string_equal(st.attempt_second, "");
    assert_int_equal(st.n_instances, 2);
    assert_string_equal(st.instances[0].address, A1);
    assert_true(st.instances[0].received);
    assert_int_equal(st.instances[0].intro_points, 3);
    assert_string_equal(st.instances[1].address, A2);
    assert_false(st.instances[1].received);
    assert_int_equal(st.instances[1].intro_points, -1);
    /* another master, not JSON, the wrong shape */
    assert_int_equal(ob_status_parse(status_sample, strlen(status_sample), A3, &st, err, sizeof(err)), -1);
    assert_string_equal(err, "the master " A3 " is not listed");
    assert_int_equal(ob_status_parse("{\"services\":", 12, A0, &st, err, sizeof(err)), -1);
    assert_int_equal(ob_status_parse("[]", 2, A0, &st, err, sizeof(err)), -1);
    assert_string_equal(err, "no \"services\" array");
    /* no attempt yet */
    const char none[] = "{\"services\":[{\"onionAddress\":\"" A0 ".onion\",\"instances\":[],"
                        "\"publishAttemptFirstDescriptor\":null}]}";
    assert_int_equal(ob_status_parse(none, strlen(none), A0, &st, err, sizeof(err)), 0);
    assert_false(st.attempted);
}

/* introPointsNum as Onionbalance writes it (len() of a descriptor's intro set: 0-20, or left out) and what
 * it cannot write. The -3 row is the crash input of fuzz_ob_status (tests/fuzz/regressions/). */
static void test_status_intro_points(void **state)
{
    (void)state;
    static const struct {
        const char *value; /* the JSON text of introPointsNum, NULL: field left out */
        int rc, intro_points;
    } rows[] = {
        {NULL, 0, -1},      {"null", 0, -1},       {"0", 0, 0},          {"3", 0, 3},
        {"20", 0, 20},      {"-3", -1, 0},         {"-1", -1, 0},        {"21", -1, 0},
        {"4294967293", -1, 0}, {"9223372036854775807", -1, 0}, {"3.0", -1, 0}, {"\"3\"", -1, 0},
        {"true", -1, 0},
    };
    for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
        char doc[512], err[256] = "";
        struct ob_status st;
        snprintf(doc, sizeof(doc),
                 "{\"services\": [{\"instances\": [{\"onionAddress\": \"" A2 ".onion\"}, "
                 "{\"descriptorReceived\": \"2026-12-04 05:19:10\"%s%s, \"onionAddress\": \"" A1 ".onion\"}], "
                 "\"onionAddress\": \"" A0 ".onion\"}]}",
                 rows[k].value ? ", \"introPointsNum\": " : "", rows[k].value ? rows[k].value : "");
        int rc = ob_status_parse(doc, strlen(doc), A0, &st, err, sizeof(err));
        if (rc != rows[k].rc)
            fail_msg("introPointsNum %s: returned %d (%s)", rows[k].value ? rows[k].value : "(absent)", rc, err);
        if (rc == 0) {
            assert_int_equal(st.n_instances, 2);
            assert_int_equal(st.instances[1].intro_points, rows[k].intro_points);
        } else {
            assert_string_equal(err, "services[0].instances[1].introPointsNum: must be an integer 0-20");
        }
    }
}

static void test_equal(void **state)
{
    (void)state;
    char err[512];
    struct config *a = load(INST(A0), err, sizeof(err)), *b = load(INST(A1), err, sizeof(err));
    assert_non_null(a);
    assert_non_null(b);
    assert_true(ob_conf_equal(&a->services[0].onionbalance, &a->services[0].onionbalance));
    assert_false(ob_conf_equal(&a->services[0].onionbalance, &b->services[0].onionbalance));
    /* tor's view changes with the master: a reload must SETCONF again */
    assert_false(service_conf_tor_equal(&a->services[0], &b->services[0]));
    assert_string_equal(ob_role_str(OB_ROLE_FRONTEND), "frontend");
    config_free(a);
    config_free(b);
}

/* The two-machine examples in templates/ load (their addresses are placeholders with valid checksums). */
static void test_templates(void **state)
{
    (void)state;
    char err[512] = "";
    struct config *a = config_load_file("templates/onionfront.ob-frontend.json", err, sizeof(err));
    if (!a)
        fail_msg("templates/onionfront.ob-frontend.json: %s", err);
    assert_int_equal(a->services[0].onionbalance.role, OB_ROLE_FRONTEND);
    assert_int_equal(a->services[1].onionbalance.role, OB_ROLE_INSTANCE);
    struct config *b = config_load_file("templates/onionfront.ob-instance.json", err, sizeof(err));
    if (!b)
        fail_msg("templates/onionfront.ob-instance.json: %s", err);
    assert_string_equal(b->services[0].onionbalance.master_address, a->services[1].onionbalance.master_address);
    config_free(a);
    config_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_instance_ok),  cmocka_unit_test(test_frontend_ok), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_address_parse), cmocka_unit_test(test_instance_file), cmocka_unit_test(test_yaml),
        cmocka_unit_test(test_status_parse), cmocka_unit_test(test_status_intro_points),
        cmocka_unit_test(test_equal), cmocka_unit_test(test_templates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
