/* test_torcaps.c — unit tests for sidecar/tor/torcaps.c: parsing `tor --version` and `tor --list-modules`,
 * the check that a config's PoW settings fit the tor (module present, version >= 0.4.9.9, the error
 * naming the field), and the probe of a binary: fake binaries (shell scripts) for an old tor and a tor
 * without the pow module, and Debian's real /usr/bin/tor.
 *
 * Why: enabling PoW on a tor that lacks the module makes tor refuse the whole SETCONF group at run time
 * (every service gone), and on tor < 0.4.9.9 a PoW service can crash tor (TROVE-2026-020). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/stat.h>

#include "sidecar/config/config.h"
#include "sidecar/tor/torcaps.h"
#include "tests/fake/tmpdir.h"

static void test_parse_version(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        unsigned v[4];
    } ok[] = {
        {"Tor version 0.4.9.11.\nThis build of Tor is covered by the GNU General Public License\n", {0, 4, 9, 11}},
        {"Tor version 0.4.8.9 (git-1234abcd).\n", {0, 4, 8, 9}},
        {"Tor version 0.4.9.2-alpha.\n", {0, 4, 9, 2}},
        {"Tor version 1.0.0.0", {1, 0, 0, 0}},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct torcaps caps = {0};
        char err[200] = "";
        if (torcaps_parse_version(ok[i].text, &caps, err, sizeof(err)) < 0)
            fail_msg("%s: %s", ok[i].text, err);
        assert_memory_equal(caps.version, ok[i].v, sizeof(caps.version));
    }
    static const char *const bad[] = {"", "tor 0.4.9.11", "Tor version 0.4.9.", "Tor version 0.4.9",
                                      "Tor version 0.4.9.x", "Tor version 0.4.9.999999", "Tor version 0.4.9.11x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct torcaps caps = {0};
        char err[200] = "";
        if (torcaps_parse_version(bad[i], &caps, err, sizeof(err)) == 0)
            fail_msg("accepted \"%s\"", bad[i]);
        assert_non_null(strstr(err, "tor --version"));
    }
}

static void test_parse_modules(void **state)
{
    (void)state;
    struct torcaps caps = {0};
    char err[200] = "";
    /* recorded from Debian's tor 0.4.9.11 */
    assert_int_equal(torcaps_parse_modules("relay: yes\ndirauth: yes\ndircache: yes\npow: yes\n", &caps, err,
                                           sizeof(err)), 0);
    assert_true(caps.pow);
    assert_int_equal(torcaps_parse_modules("relay: yes\npow: no", &caps, err, sizeof(err)), 0);
    assert_false(caps.pow);
    assert_int_equal(torcaps_parse_modules("relay: yes\n", &caps, err, sizeof(err)), -1);
    assert_string_equal(err, "tor --list-modules does not list the pow module");
    assert_int_equal(torcaps_parse_modules("relay: yes\npow: maybe\n", &caps, err, sizeof(err)), -1);
    assert_string_equal(err, "tor --list-modules: line 2 is not \"name: yes|no\"");
    assert_int_equal(torcaps_parse_modules("Unknown option --list-modules\n", &caps, err, sizeof(err)), -1);
    assert_int_equal(torcaps_parse_modules(": yes\n", &caps, err, sizeof(err)), -1);
}

#define POW_CONF                                                                                             \
    "{\"state_dir\":\"/var/lib/of\",\"run_dir\":\"/run/of\",\"tor\":{\"binary\":\"%s\"},\"services\":["     \
    "{\"name\":\"a\",\"key_dir\":\"/k/a\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:1\"}]},"         \
    "{\"name\":\"b\",\"key_dir\":\"/k/b\",\"dos\":{\"pow\":{\"enabled\":%s}},"                               \
    "\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:1\"}]}]}"

static struct config *pow_conf(const char *binary, bool pow)
{
    char json[1024], err[256];
    snprintf(json, sizeof(json), POW_CONF, binary, pow ? "true" : "false");
    struct config *c = config_load_string(json, strlen(json), err, sizeof(err));
    if (!c)
        fail_msg("%s", err);
    return c;
}

static void test_check(void **state)
{
    (void)state;
    struct config *c = pow_conf("/usr/bin/tor", true);
    char err[300] = "";
    struct torcaps good = {{0, 4, 9, 9}, "0.4.9.9", true};
    assert_int_equal(torcaps_check(&good, c, err, sizeof(err)), 0);
    struct torcaps old = {{0, 4, 9, 8}, "0.4.9.8", true};
    assert_int_equal(torcaps_check(&old, c, err, sizeof(err)), -1);
    assert_string_equal(err, "services[1].dos.pow.enabled: needs tor 0.4.9.9 or later (older ones crash on PoW "
                             "services, TROVE-2026-020); this tor is 0.4.9.8");
    struct torcaps nopow = {{0, 4, 9, 11}, "0.4.9.11", false};
    assert_int_equal(torcaps_check(&nopow, c, err, sizeof(err)), -1);
    assert_string_equal(err, "services[1].dos.pow.enabled: this tor (0.4.9.11) was built without the pow module "
                             "(tor --list-modules says \"pow: no\")");
    config_free(c);
    /* without PoW any tor will do */
    c = pow_conf("/usr/bin/tor", false);
    assert_int_equal(torcaps_check(&old, c, err, sizeof(err)), 0);
    assert_int_equal(torcaps_check(&nopow, c, err, sizeof(err)), 0);
    config_free(c);
    unsigned a[4] = {0, 4, 10, 0}, b[4] = {0, 4, 9, 11};
    assert_true(torcaps_version_cmp(a, b) > 0);
    assert_true(torcaps_version_cmp(b, a) < 0);
    assert_int_equal(torcaps_version_cmp(a, a), 0);
}

/* Write an executable script `name` in dir that prints `version` for --version and `modules` for
 * --list-modules. */
static void fake_tor(const char *dir, const char *name, const char *version, const char *modules, char *path,
                     size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\ncase \"$1\" in\n--version) printf '%s';;\n--list-modules) printf '%s';;\n"
               "*) exit 1;;\nesac\n", version, modules);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, 0700), 0);
}

static void test_probe(void **state)
{
    (void)state;
    char dir[64], bin[128], err[512] = "";
    assert_int_equal(tmpdir_make(dir, sizeof(dir), "test_torcaps"), 0);
    struct torcaps caps;

    /* Debian's tor, as installed for the tests: the pow module and a version it may run PoW on */
    assert_int_equal(torcaps_probe("/usr/bin/tor", &caps, err, sizeof(err)), 0);
    assert_true(caps.pow);
    struct config *c = pow_conf("/usr/bin/tor", true);
    assert_int_equal(torcaps_check_config(c, err, sizeof(err)), 0);
    config_free(c);

    fake_tor(dir, "old-tor", "Tor version 0.4.8.16.\\n", "relay: yes\\npow: yes\\n", bin, sizeof(bin));
    c = pow_conf(bin, true);
    assert_int_equal(torcaps_check_config(c, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "services[1].dos.pow.enabled: needs tor 0.4.9.9 or later"));
    config_free(c);
    c = pow_conf(bin, false); /* not asked at all without PoW */
    assert_int_equal(torcaps_check_config(c, err, sizeof(err)), 0);
    config_free(c);

    fake_tor(dir, "nopow-tor", "Tor version 0.4.9.11.\\n", "relay: yes\\npow: no\\n", bin, sizeof(bin));
    c = pow_conf(bin, true);
    assert_int_equal(torcaps_check_config(c, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "services[1].dos.pow.enabled: this tor (0.4.9.11) was built without the pow module"));
    config_free(c);

    /* a binary that cannot tell: refused, naming the field */
    fake_tor(dir, "silent-tor", "", "", bin, sizeof(bin));
    c = pow_conf(bin, true);
    assert_int_equal(torcaps_check_config(c, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "services[1].dos.pow.enabled: cannot tell whether tor supports proof-of-work: "));
    config_free(c);
    snprintf(bin, sizeof(bin), "%s/missing", dir);
    assert_int_equal(torcaps_probe(bin, &caps, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "cannot run"));
    assert_int_equal(tmpdir_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_version),
        cmocka_unit_test(test_parse_modules),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
