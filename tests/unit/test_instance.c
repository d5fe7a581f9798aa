/* test_instance.c — unit tests for sidecar/identity/instance.c: the paths of several spawned tors and the private
 * copies of the key directories.
 *
 * Why: instance 0 must use exactly today's paths (tor.instances 1 changes nothing on disk); a second tor
 * must never share a DataDirectory, control socket or key directory with the first, and its key must be
 * a copy of the one key — never a new key (tor makes one where it finds none), never overwriting a
 * different key planted in the copy's place.
 *
 * Covers: instance 0 = state_dir/tor, state_dir/torrc, tor.control_socket, key_dir; instance 1 =
 * state_dir/instances/2/{tor,torrc,keys/<name>}, run_dir/control-2/control.sock; a copy holds the same
 * address with mode 0700/0600 and a second copy is a no-op; a copy holding another key is refused and
 * left as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/identity/clientauth.h"
#include "sidecar/config/config.h"
#include "sidecar/identity/instance.h"
#include "sidecar/identity/keys.h"
#include "tests/fake/tmpdir.h"

struct test {
    char dir[64];
    struct config *conf;
};

static int setup(void **state)
{
    struct test *x = calloc(1, sizeof(*x));
    char json[1024], err[512];
    assert_non_null(x);
    assert_int_equal(tmpdir_make(x->dir, sizeof(x->dir), "test_instance"), 0);
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\",\"tor\":{\"instances\":2},"
             "\"services\":[{\"name\":\"web\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:8080\"}]}]}",
             x->dir, x->dir);
    x->conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!x->conf)
        fail_msg("config: %s", err);
    snprintf(json, sizeof(json), "%s/state", x->dir);
    assert_int_equal(mkdir(json, 0700), 0);
    snprintf(json, sizeof(json), "%s/state/keys", x->dir);
    assert_int_equal(mkdir(json, 0700), 0);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct test *x = *state;
    config_free(x->conf);
    tmpdir_remove(x->dir);
    free(x);
    return 0;
}

static void test_paths(void **state)
{
    struct test *x = *state;
    struct instance_paths p;
    char err[256], want[512], kd[512];
    assert_int_equal(instance_paths(x->conf, 0, &p, err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "%s/state/tor", x->dir);
    assert_string_equal(p.data_dir, want);
    snprintf(want, sizeof(want), "%s/state", x->dir);
    assert_string_equal(p.torrc_dir, want);
    assert_string_equal(p.control_socket, x->conf->tor.control_socket);
    snprintf(want, sizeof(want), "%s/run/control", x->dir);
    assert_string_equal(p.control_dir, want);
    assert_string_equal(p.keys_dir, "");
    assert_int_equal(instance_key_dir(x->conf, &x->conf->services[0], 0, kd, sizeof(kd)), 0);
    assert_string_equal(kd, x->conf->services[0].key_dir);

    assert_int_equal(instance_paths(x->conf, 1, &p, err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "%s/state/instances/2/tor", x->dir);
    assert_string_equal(p.data_dir, want);
    snprintf(want, sizeof(want), "%s/state/instances/2", x->dir);
    assert_string_equal(p.torrc_dir, want);
    snprintf(want, sizeof(want), "%s/run/control-2/control.sock", x->dir);
    assert_string_equal(p.control_socket, want);
    snprintf(want, sizeof(want), "%s/run/control-2", x->dir);
    assert_string_equal(p.control_dir, want);
    assert_int_equal(instance_key_dir(x->conf, &x->conf->services[0], 1, kd, sizeof(kd)), 0);
    snprintf(want, sizeof(want), "%s/state/instances/2/keys/web", x->dir);
    assert_string_equal(kd, want);
}

/* The anonymous services' tor: its own directory and control socket, no key copies. */
static void test_anonymous_paths(void **state)
{
    struct test *x = *state;
    struct instance_paths p;
    char err[256], want[512];
    assert_int_equal(instance_anonymous_paths(x->conf, &p, err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "%s/state/anonymous/tor", x->dir);
    assert_string_equal(p.data_dir, want);
    snprintf(want, sizeof(want), "%s/state/anonymous", x->dir);
    assert_string_equal(p.torrc_dir, want);
    assert_string_equal(p.dir, want);
    snprintf(want, sizeof(want), "%s/run/control-anonymous/control.sock", x->dir);
    assert_string_equal(p.control_socket, want);
    snprintf(want, sizeof(want), "%s/run/control-anonymous", x->dir);
    assert_string_equal(p.control_dir, want);
    assert_string_equal(p.keys_dir, "");
}

static void test_copy(void **state)
{
    struct test *x = *state;
    struct onion_key k, c;
    char err[768], kd[512], file[600];
    struct stat st;
    assert_int_equal(keys_load_or_create(x->conf->services[0].key_dir, &k, NULL, err, sizeof(err)), 0);
    if (instance_copy_key(x->conf, &x->conf->services[0], 1, err, sizeof(err)) < 0)
        fail_msg("copy: %s", err);
    assert_int_equal(instance_copy_key(x->conf, &x->conf->services[0], 1, err, sizeof(err)), 0); /* again: no-op */
    assert_int_equal(instance_key_dir(x->conf, &x->conf->services[0], 1, kd, sizeof(kd)), 0);
    assert_int_equal(keys_load(kd, &c, err, sizeof(err)), 0);
    assert_string_equal(c.address, k.address);
    assert_int_equal(stat(kd, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    snprintf(file, sizeof(file), "%s/%s", kd, KEYS_SECRET_FILE);
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    onion_key_clear(&c);
    onion_key_clear(&k);
}

static void test_copy_refuses_other_key(void **state)
{
    struct test *x = *state;
    struct onion_key k, other, c;
    char err[768], kd[512];
    assert_int_equal(keys_load_or_create(x->conf->services[0].key_dir, &k, NULL, err, sizeof(err)), 0);
    assert_int_equal(instance_key_dir(x->conf, &x->conf->services[0], 1, kd, sizeof(kd)), 0);
    assert_int_equal(instance_make_dirs(x->conf, 1, err, sizeof(err)), 0);
    assert_int_equal(keys_load_or_create(kd, &other, NULL, err, sizeof(err)), 0); /* planted: another key */
    assert_int_equal(instance_copy_key(x->conf, &x->conf->services[0], 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "already holds a different key"));
    assert_int_equal(keys_load(kd, &c, err, sizeof(err)), 0);
    assert_string_equal(c.address, other.address); /* left as it was */
    onion_key_clear(&c);
    onion_key_clear(&other);
    onion_key_clear(&k);
}

/* The hole of issue 25: a private service's copy for tor 2 must hold the same authorized_clients as
 * key_dir, plus the probe's client (the probe's client tor is on by default in spawn mode); without them
 * tor 2 publishes the service open. */
static void test_copy_client_auth(void **state)
{
    struct test *x = *state;
    struct onion_key k;
    char json[1024], err[768], kd[512], file[700], buf[128];
    config_free(x->conf);
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\",\"tor\":{\"instances\":2},"
             "\"services\":[{\"name\":\"priv\",\"client_auth\":[{\"name\":\"alice\",\"public_key\":"
             "\"N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ\"}],"
             "\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:8080\"}]}]}", x->dir, x->dir);
    x->conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!x->conf)
        fail_msg("config: %s", err);
    const struct service_conf *sc = &x->conf->services[0];
    assert_int_equal(keys_load_or_create(sc->key_dir, &k, NULL, err, sizeof(err)), 0);
    onion_key_clear(&k);
    if (instance_copy_key(x->conf, sc, 1, err, sizeof(err)) < 0)
        fail_msg("copy: %s", err);
    assert_int_equal(instance_key_dir(x->conf, sc, 1, kd, sizeof(kd)), 0);
    snprintf(file, sizeof(file), "%s/authorized_clients/alice.auth", kd);
    FILE *f = fopen(file, "r");
    if (!f)
        fail_msg("%s: missing: tor 2 would publish the service without client authorization", file);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "descriptor:x25519:N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ\n");
    snprintf(file, sizeof(file), "%s/authorized_clients/onionfront-probe.auth", kd);
    assert_int_equal(access(file, F_OK), 0);
    /* the probe's key pair is onionfront's, 0600 in state_dir */
    struct stat st;
    snprintf(file, sizeof(file), "%s/state/probe-client-auth", x->dir);
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(clientauth_check_dir(sc, kd, NULL, err, sizeof(err)), -1); /* the probe's file is there */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anonymous_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_refuses_other_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_client_auth, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
