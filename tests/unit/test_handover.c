/* test_handover.c — unit tests for sidecar/identity/handover.c, the directory hand-over policy, on real
 * directories in a private temporary directory.
 *
 * Why: a directory tor's user cannot enter stops tor (or a service) from starting; one handed over that
 * should stay root's lets that user replace files root reads.
 *
 * Covers: nothing to hand over without tor.user (spawn) or before the attached tor's uid is known, or
 * for a root tor; tor.user refused clearly when onionfront is not root, and an unknown tor.user named;
 * as root, the passage directories (state, keys, run, run/proxy) stay onionfront's, mode 0710 with tor's
 * group, while spawn mode gives tor's user its DataDirectory and each service's key directory (created,
 * with its key files) and attach mode only the key directories, never the attached tor's control
 * directory or a DataDirectory; the client tors' directories go to tor's user, and Onionbalance gets a
 * copy of the master key only tor's user reads (removed again without tor.user). The root-only cases run only as root (CI runs the tests as root) and are
 * reported as skipped otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/identity/handover.h"
#include "sidecar/identity/keys.h"
#include "tests/fake/tmpdir.h"

#define OTHER_UID 4242 /* a uid nobody on the test machine needs to exist as */

struct ctx {
    char dir[256];
    char err[1024];
    struct config *conf;
};

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    assert_int_equal(tmpdir_make(c->dir, sizeof(c->dir), "test_handover"), 0);
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    config_free(c->conf);
    tmpdir_remove(c->dir);
    free(c);
    return 0;
}

/* Load a config whose directories lie in the test's directory; `tor` is the "tor" object's members. */
static struct config *load(struct ctx *c, const char *tor)
{
    char json[2048];
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\",\"tor\":{%s},"
             "\"services\":[{\"name\":\"web\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:8080\"}]}]}",
             c->dir, c->dir, tor);
    struct config *conf = config_load_string(json, strlen(json), c->err, sizeof(c->err));
    if (!conf)
        fail_msg("config: %s\n  %s", c->err, json);
    config_free(c->conf);
    return c->conf = conf;
}

static struct stat stat_of(const struct ctx *c, const char *rel)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", c->dir, rel);
    if (lstat(path, &st) < 0)
        fail_msg("%s: missing", path);
    return st;
}

static uid_t owner_of(const struct ctx *c, const char *rel)
{
    return stat_of(c, rel).st_uid;
}

/* The passage directories: onionfront's (root's here), tor's group `gid`, 0710. */
static void assert_passages(const struct ctx *c, gid_t gid)
{
    static const char *const dirs[] = {"state", "state/keys", "run", "run/proxy"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        struct stat st = stat_of(c, dirs[i]);
        assert_int_equal(st.st_uid, 0);
        assert_int_equal(st.st_gid, gid);
        assert_int_equal(st.st_mode & 07777, 0710);
    }
}

static void test_nothing_to_hand_over(void **state)
{
    struct ctx *c = *state;
    uid_t uid = 7;
    gid_t gid = 7;
    load(c, "\"mode\":\"spawn\"");
    assert_int_equal(handover_tor_owner(c->conf, -1, &uid, &gid, c->err, sizeof(c->err)), 0);
    load(c, "\"mode\":\"attach\",\"control_socket\":\"/run/tor/control\"");
    assert_int_equal(handover_tor_owner(c->conf, -1, &uid, &gid, c->err, sizeof(c->err)), 0);
    assert_int_equal(handover_tor_owner(c->conf, 0, &uid, &gid, c->err, sizeof(c->err)), 0);
    assert_int_equal(uid, 7);
    /* nothing handed over: no directory was made */
    assert_int_equal(handover_apply(c->conf, -1, c->err, sizeof(c->err)), 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/state", c->dir);
    assert_int_equal(access(path, F_OK), -1);
}

static void test_tor_user_refused(void **state)
{
    struct ctx *c = *state;
    uid_t uid;
    gid_t gid;
    load(c, "\"mode\":\"spawn\",\"user\":\"no-such-user-onionfront\"");
    assert_int_equal(handover_tor_owner(c->conf, -1, &uid, &gid, c->err, sizeof(c->err)), -1);
    if (geteuid() == 0)
        assert_non_null(strstr(c->err, "tor.user: there is no user named \"no-such-user-onionfront\""));
    else
        assert_non_null(strstr(c->err, "not root"));
    assert_int_equal(handover_apply(c->conf, -1, c->err, sizeof(c->err)), -1);
}

static void test_spawn_as_root(void **state)
{
    struct ctx *c = *state;
    if (geteuid() != 0)
        skip();
    load(c, "\"mode\":\"spawn\",\"user\":\"root\"");
    uid_t uid = 1;
    gid_t gid = 1;
    assert_int_equal(handover_tor_owner(c->conf, -1, &uid, &gid, c->err, sizeof(c->err)), 1);
    assert_int_equal(uid, 0);
    assert_int_equal(handover_apply(c->conf, -1, c->err, sizeof(c->err)), 0);
    assert_passages(c, gid);
    static const char *const dirs[] = {"state/tor", "state/keys/web", "state/keys/web/hs_ed25519_secret_key"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
        assert_int_equal(owner_of(c, dirs[i]), 0);
}

static void test_attach_as_root(void **state)
{
    struct ctx *c = *state;
    if (geteuid() != 0)
        skip();
    char tor[512];
    snprintf(tor, sizeof(tor), "\"mode\":\"attach\",\"control_socket\":\"%s/tordir/control\"", c->dir);
    load(c, tor);
    char path[512];
    snprintf(path, sizeof(path), "%s/tordir", c->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    uid_t uid;
    gid_t gid;
    assert_int_equal(handover_tor_owner(c->conf, OTHER_UID, &uid, &gid, c->err, sizeof(c->err)), 1);
    assert_int_equal(uid, OTHER_UID);
    assert_int_equal(handover_apply(c->conf, OTHER_UID, c->err, sizeof(c->err)), 0);
    assert_passages(c, gid);
    static const char *const given[] = {"state/keys/web", "state/keys/web/hs_ed25519_secret_key"};
    for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++)
        assert_int_equal(owner_of(c, given[i]), OTHER_UID);
    assert_int_equal(owner_of(c, "tordir"), 0); /* the attached tor's own */
    snprintf(path, sizeof(path), "%s/state/tor", c->dir);
    assert_int_equal(access(path, F_OK), -1);
}

/* Read the whole small file `rel` into buf; return its length. */
static size_t read_rel(const struct ctx *c, const char *rel, unsigned char *buf, size_t cap)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", c->dir, rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: cannot open", path);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* A frontend service "front" (its key created in state/keys/front) with `tor` as the "tor" members. */
static const struct service_conf *load_frontend(struct ctx *c, const char *tor)
{
    char json[2048], path[512];
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\",\"tor\":{%s},\"services\":[{\"name\":\"front\","
             "\"onionbalance\":{\"frontend\":true,\"instances\":[\"2gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4ad\"]}}]}",
             c->dir, c->dir, tor);
    config_free(c->conf);
    c->conf = config_load_string(json, strlen(json), c->err, sizeof(c->err));
    if (!c->conf)
        fail_msg("config: %s", c->err);
    static const char *const dirs[] = {"state", "state/keys"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", c->dir, dirs[i]);
        assert_true(mkdir(path, 0700) == 0 || access(path, F_OK) == 0);
    }
    struct onion_key key;
    if (keys_load_or_create(c->conf->services[0].key_dir, &key, NULL, c->err, sizeof(c->err)) < 0)
        fail_msg("key: %s", c->err);
    onion_key_clear(&key);
    return &c->conf->services[0];
}

/* Root with tor.user: the client tors' directories are that user's; Onionbalance's directory is a passage
 * holding a copy of the master key that only that user reads (0600), the same bytes as the key, and the
 * frontend's own key directory stays root's. Without tor.user the copy goes and Onionbalance reads the
 * key in place. */
static void test_client_tors_and_onionbalance(void **state)
{
    struct ctx *c = *state;
    char ctl[512], data[512], ob[512];
    unsigned char key[256], copy[256];
    struct handover_ob how;
    if (geteuid() != 0)
        skip();
    const struct service_conf *sc = load_frontend(c, "\"mode\":\"spawn\",\"user\":\"nobody\"");
    uid_t uid;
    gid_t gid;
    assert_int_equal(handover_tor_owner(c->conf, -1, &uid, &gid, c->err, sizeof(c->err)), 1);
    assert_int_not_equal(uid, 0);
    snprintf(ctl, sizeof(ctl), "%s/run/probe", c->dir);
    snprintf(data, sizeof(data), "%s/state/probe-tor", c->dir);
    assert_int_equal(handover_apply_client(c->conf, ctl, data, c->err, sizeof(c->err)), 0);
    assert_int_equal(owner_of(c, "run/probe"), uid);
    assert_int_equal(owner_of(c, "state/probe-tor"), uid);
    struct stat st = stat_of(c, "run");
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(st.st_gid, gid);
    assert_int_equal(st.st_mode & 07777, 0710);

    snprintf(ob, sizeof(ob), "%s/state/ob", c->dir);
    assert_int_equal(handover_apply_onionbalance(c->conf, sc, ob, &how, c->err, sizeof(c->err)), 0);
    assert_true(how.as_tor_user);
    assert_int_equal(how.uid, uid);
    assert_int_equal(how.gid, gid);
    char want[600];
    snprintf(want, sizeof(want), "%s/" HANDOVER_OB_KEY_FILE, ob);
    assert_string_equal(how.key_path, want);
    st = stat_of(c, "state/ob");
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(st.st_gid, gid);
    assert_int_equal(st.st_mode & 07777, 0710);
    st = stat_of(c, "state/ob/" HANDOVER_OB_KEY_FILE);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_uid, uid);
    assert_int_equal(st.st_mode & 07777, 0600);
    size_t n = read_rel(c, "state/keys/front/hs_ed25519_secret_key", key, sizeof(key));
    assert_int_equal(n, 96);
    assert_int_equal(read_rel(c, "state/ob/" HANDOVER_OB_KEY_FILE, copy, sizeof(copy)), n);
    assert_memory_equal(key, copy, n);
    assert_int_equal(owner_of(c, "state/keys/front"), 0);
    assert_int_equal(owner_of(c, "state/keys/front/hs_ed25519_secret_key"), 0);

    /* tor.user removed: Onionbalance is onionfront's again, and no copy is left. */
    sc = load_frontend(c, "\"mode\":\"spawn\"");
    assert_int_equal(handover_apply_onionbalance(c->conf, sc, ob, &how, c->err, sizeof(c->err)), 0);
    assert_false(how.as_tor_user);
    snprintf(want, sizeof(want), "%s/state/keys/front/hs_ed25519_secret_key", c->dir);
    assert_string_equal(how.key_path, want);
    assert_int_equal(stat_of(c, "state/ob").st_mode & 07777, 0700);
    snprintf(want, sizeof(want), "%s/" HANDOVER_OB_KEY_FILE, ob);
    assert_int_equal(access(want, F_OK), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nothing_to_hand_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tor_user_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawn_as_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_as_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_tors_and_onionbalance, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
