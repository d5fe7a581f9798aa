/* test_clientauth.c — unit tests for sidecar/identity/clientauth.c on a real private directory: configured
 * clients' files written (content, 0600) with onionfront's list; a client removed from the config has
 * its file removed; a planted unknown file, a malformed or changed file, a group-readable file and a
 * symlinked authorized_clients directory are refused with the file named; without clients nothing is
 * created, and a leftover .auth file is refused (tor would still enforce it). Never fail open: a config
 * that drops every client of a restricted service is refused unless drop_client_auth says so; an
 * unwritable directory fails the sync. Plus the config side: the key is validated and upper-cased, a
 * pasted "descriptor:x25519:" prefix accepted, drop_client_auth's type and its conflict with client_auth.
 *
 * Why: tor silently ignores a malformed .auth file and enforces authorization only if one loads, so a
 * mistake here makes a private service public. */
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
#include "sidecar/config/config_value.h"
#include "tests/fake/tmpdir.h"

#define K1 "N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ"
#define K2 "qyw6t6pnbw6z6jx5iiamilhjwwmsxz5gcfvjrdxkagpokvbl7yha" /* lower case: upper-cased */
#define K3 "AEBAGBAFAYDQQCIKBMGA2DQPCAIREEYUCULBOGAZDINRYHI6D4QA"

struct ctx {
    char dir[64];
    struct config *conf;
    char err[1024];
};

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    if (!c || tmpdir_make(c->dir, sizeof(c->dir), "test_clientauth") < 0)
        return -1;
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    config_free(c->conf);
    int rc = tmpdir_remove(c->dir);
    free(c);
    return rc;
}

/* Load a config whose one service has key_dir <dir>/keys and the extra service fields `fields` (JSON
 * members, or "" for none). */
static const struct service_conf *load_fields(struct ctx *c, const char *fields)
{
    char json[2048];
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\",\"services\":[{\"name\":\"web\",\"key_dir\":"
             "\"%s/keys\",%s%s\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:1\"}]}]}",
             c->dir, c->dir, c->dir, fields, fields[0] ? "," : "");
    config_free(c->conf);
    c->conf = config_load_string(json, strlen(json), c->err, sizeof(c->err));
    if (!c->conf)
        fail_msg("%s\n%s", c->err, json);
    return &c->conf->services[0];
}

/* As load_fields, with the client_auth `clients` (JSON, or "" for none). */
static const struct service_conf *load(struct ctx *c, const char *clients)
{
    char fields[1024];
    snprintf(fields, sizeof(fields), "%s%s", clients[0] ? "\"client_auth\":" : "", clients);
    return load_fields(c, fields);
}

static void path(const struct ctx *c, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/keys/authorized_clients%s%s", c->dir, name[0] ? "/" : "", name);
}

static void read_file(const char *p, char *buf, size_t cap, mode_t *mode)
{
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    *mode = st.st_mode & 07777;
}

static void write_file(const char *p, const char *data)
{
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(data, f);
    fclose(f);
    chmod(p, 0600);
}

static void mkkeys(struct ctx *c)
{
    char p[128];
    snprintf(p, sizeof(p), "%s/keys", c->dir);
    assert_int_equal(mkdir(p, 0700), 0);
}

static void test_write_and_remove(void **state)
{
    struct ctx *c = *state;
    char p[256], buf[256];
    mode_t mode;
    mkkeys(c);
    const struct service_conf *sc =
        load(c, "[{\"name\":\"alice\",\"public_key\":\"" K1 "\"},{\"name\":\"bob\",\"public_key\":\"descriptor:x25519:" K2 "\"}]");
    assert_string_equal(sc->clients[1].public_key, "QYW6T6PNBW6Z6JX5IIAMILHJWWMSXZ5GCFVJRDXKAGPOKVBL7YHA");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    path(c, "alice.auth", p, sizeof(p));
    read_file(p, buf, sizeof(buf), &mode);
    assert_string_equal(buf, "descriptor:x25519:" K1 "\n");
    assert_int_equal(mode, 0600);
    path(c, "bob.auth", p, sizeof(p));
    read_file(p, buf, sizeof(buf), &mode);
    assert_string_equal(buf, "descriptor:x25519:QYW6T6PNBW6Z6JX5IIAMILHJWWMSXZ5GCFVJRDXKAGPOKVBL7YHA\n");
    path(c, "", p, sizeof(p));
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(clientauth_check(sc, c->err, sizeof(c->err)), 0);

    /* bob removed from the config: his file goes */
    sc = load(c, "[{\"name\":\"alice\",\"public_key\":\"" K1 "\"}]");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    path(c, "bob.auth", p, sizeof(p));
    assert_int_equal(access(p, F_OK), -1);
    path(c, "alice.auth", p, sizeof(p));
    assert_int_equal(access(p, F_OK), 0);

    /* no clients any more: never fail open. Refused, naming the way out; alice's file stays */
    sc = load(c, "");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "the service was restricted to clients (alice) and the config lists none"));
    assert_non_null(strstr(c->err, "\"drop_client_auth\": true"));
    assert_int_equal(access(p, F_OK), 0);
    assert_int_equal(clientauth_check(sc, c->err, sizeof(c->err)), -1); /* tor would still enforce alice */

    /* said on purpose: alice's file goes and the service is public (1 says so once) */
    sc = load_fields(c, "\"drop_client_auth\":true");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 1);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    /* from now on a config without clients needs no flag */
    sc = load(c, "");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    assert_int_equal(clientauth_check(sc, c->err, sizeof(c->err)), 0);
}

/* tor warns about every file in authorized_clients that does not end in .auth: onionfront keeps its list
 * in key_dir, writes nothing for a service without clients (tor creates the empty directory itself), and
 * takes over a list from where it used to be, removing it there. */
static void test_only_auth_files(void **state)
{
    struct ctx *c = *state;
    char p[256], q[256];
    mkkeys(c);
    path(c, "", p, sizeof(p));
    assert_int_equal(mkdir(p, 0700), 0); /* as tor leaves it */
    const struct service_conf *sc = load(c, "");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    snprintf(q, sizeof(q), "%s/keys/" CLIENTAUTH_LIST, c->dir);
    assert_int_equal(access(q, F_OK), -1);
    path(c, CLIENTAUTH_OLD_LIST, p, sizeof(p));
    assert_int_equal(access(p, F_OK), -1);

    sc = load(c, "[{\"name\":\"alice\",\"public_key\":\"" K1 "\"}]");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    assert_int_equal(access(q, F_OK), 0);
    assert_int_equal(access(p, F_OK), -1);

    /* an old list in authorized_clients (bob was written then): taken over, bob removed, then gone */
    unlink(q);
    write_file(p, "alice\nbob\n");
    path(c, "bob.auth", q, sizeof(q));
    write_file(q, "descriptor:x25519:" K1 "\n");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    assert_int_equal(access(q, F_OK), -1);
    assert_int_equal(access(p, F_OK), -1);
    /* and the list in key_dir still knows alice: dropping her needs the flag */
    sc = load(c, "");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), -1);
    /* also when someone removed authorized_clients itself */
    path(c, "alice.auth", q, sizeof(q));
    unlink(q);
    path(c, "", q, sizeof(q));
    assert_int_equal(rmdir(q), 0);
    assert_int_equal(clientauth_check(sc, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "restricted to clients (alice)"));
}

static void test_drop_flag_config(void **state)
{
    struct ctx *c = *state;
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\",\"services\":[{\"name\":\"web\","
             "\"drop_client_auth\":true,\"client_auth\":[{\"name\":\"a\",\"public_key\":\"" K1 "\"}],"
             "\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:1\"}]}]}",
             c->dir, c->dir);
    assert_null(config_load_string(json, strlen(json), c->err, sizeof(c->err)));
    assert_non_null(strstr(c->err, "services[0].drop_client_auth: cannot be set with client_auth"));
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\",\"services\":[{\"name\":\"web\","
             "\"drop_client_auth\":1,\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:1\"}]}]}",
             c->dir, c->dir);
    assert_null(config_load_string(json, strlen(json), c->err, sizeof(c->err)));
    assert_non_null(strstr(c->err, "services[0].drop_client_auth: must be true or false"));
}

/* A directory onionfront cannot write: the sync fails (the caller refuses the service, never publishes
 * it without its clients). */
static void test_write_fails(void **state)
{
    struct ctx *c = *state;
    char p[256];
    mkkeys(c);
    path(c, "", p, sizeof(p));
    FILE *f = fopen(p, "w"); /* authorized_clients is a plain file */
    assert_non_null(f);
    fclose(f);
    const struct service_conf *sc = load(c, "[{\"name\":\"alice\",\"public_key\":\"" K1 "\"}]");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "authorized_clients: cannot open"));
}

static void test_refused(void **state)
{
    struct ctx *c = *state;
    char p[256], q[256];
    mkkeys(c);
    const struct service_conf *sc = load(c, "[{\"name\":\"alice\",\"public_key\":\"" K1 "\"}]");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);

    /* a planted file: refused by the check before a SETCONF and by the next sync, named */
    path(c, "mallory.auth", p, sizeof(p));
    write_file(p, "descriptor:x25519:" K2 "\n");
    assert_int_equal(clientauth_check(sc, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "/keys/authorized_clients/mallory.auth: unknown file"));
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "mallory.auth: unknown file"));
    unlink(p);

    /* a configured client's file changed to something malformed */
    path(c, "alice.auth", p, sizeof(p));
    write_file(p, "descriptor:x25519:" K1 "X\n");
    assert_int_equal(clientauth_check(sc, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "alice.auth: malformed or not the configured key"));
    /* the sync rewrites it */
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    chmod(p, 0644);
    assert_int_equal(clientauth_check(sc, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "alice.auth: readable or writable by others"));
    chmod(p, 0600);

    /* authorized_clients replaced by a symlink to elsewhere */
    path(c, "", p, sizeof(p));
    snprintf(q, sizeof(q), "%s/elsewhere", c->dir);
    assert_int_equal(rename(p, q), 0);
    assert_int_equal(symlink(q, p), 0);
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "authorized_clients: cannot open (a symlink is refused)"));
    unlink(p);

    /* no clients configured (nor listed), but a .auth file there: tor would enforce it */
    sc = load(c, "");
    snprintf(q, sizeof(q), "%s/keys/" CLIENTAUTH_LIST, c->dir);
    assert_int_equal(unlink(q), 0);
    assert_int_equal(mkdir(p, 0700), 0);
    path(c, "old.auth", q, sizeof(q));
    write_file(q, "descriptor:x25519:" K1 "\n");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "old.auth: unknown file"));
}

static void test_no_clients_no_dir(void **state)
{
    struct ctx *c = *state;
    char p[256];
    mkkeys(c);
    const struct service_conf *sc = load(c, "");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    path(c, "", p, sizeof(p));
    assert_int_equal(access(p, F_OK), -1);
}

/* A tor's own copy of the key directory (instance.h) gets exactly the configured clients, plus the probe's
 * entry when one is given; a check without that entry refuses the copy (the file is unknown), and a
 * public service never gets the probe's entry. */
static void test_copy_dir_and_probe(void **state)
{
    struct ctx *c = *state;
    char copy[128], p[256], buf[256];
    mode_t mode;
    mkkeys(c);
    snprintf(copy, sizeof(copy), "%s/copy", c->dir);
    assert_int_equal(mkdir(copy, 0700), 0);
    struct client_auth_conf probe = {.name = "onionfront-probe", .public_key = K3};
    const struct service_conf *sc = load(c, "[{\"name\":\"alice\",\"public_key\":\"" K1 "\"}]");
    /* before the sync, the copy has no authorized_clients: a tor reading it would publish open */
    assert_int_equal(clientauth_check_dir(sc, copy, &probe, c->err, sizeof(c->err)), -1);
    assert_int_equal(clientauth_sync_dir(sc, copy, &probe, c->err, sizeof(c->err)), 0);
    snprintf(p, sizeof(p), "%s/authorized_clients/alice.auth", copy);
    read_file(p, buf, sizeof(buf), &mode);
    assert_string_equal(buf, "descriptor:x25519:" K1 "\n");
    snprintf(p, sizeof(p), "%s/authorized_clients/onionfront-probe.auth", copy);
    read_file(p, buf, sizeof(buf), &mode);
    assert_string_equal(buf, "descriptor:x25519:" K3 "\n");
    assert_int_equal(mode, 0600);
    assert_int_equal(clientauth_check_dir(sc, copy, &probe, c->err, sizeof(c->err)), 0);
    /* key_dir itself was not touched */
    path(c, "", p, sizeof(p));
    assert_int_equal(access(p, F_OK), -1);
    /* without the probe's entry the copy holds a file the config does not name */
    assert_int_equal(clientauth_check_dir(sc, copy, NULL, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "onionfront-probe.auth: unknown file"));
    /* a second client added by a reload reaches the copy too */
    sc = load(c, "[{\"name\":\"alice\",\"public_key\":\"" K1 "\"},{\"name\":\"bob\",\"public_key\":\"" K2 "\"}]");
    assert_int_equal(clientauth_check_dir(sc, copy, &probe, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "bob.auth"));
    assert_int_equal(clientauth_sync_dir(sc, copy, &probe, c->err, sizeof(c->err)), 0);
    snprintf(p, sizeof(p), "%s/authorized_clients/bob.auth", copy);
    assert_int_equal(access(p, F_OK), 0);
    /* every client dropped without the flag: the refusal names the operator's clients, not the probe's */
    sc = load(c, "");
    assert_int_equal(clientauth_sync_dir(sc, copy, &probe, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "the service was restricted to clients (alice,bob) and the config lists none"));
    /* a public service: no probe entry, no directory */
    char pub[128];
    snprintf(pub, sizeof(pub), "%s/pubcopy", c->dir);
    assert_int_equal(mkdir(pub, 0700), 0);
    assert_int_equal(clientauth_sync_dir(sc, pub, &probe, c->err, sizeof(c->err)), 0);
    snprintf(p, sizeof(p), "%s/authorized_clients", pub);
    assert_int_equal(access(p, F_OK), -1);
}

/* tor reads authorized_clients as the key directory's owner (its User): a file root wrote and kept would
 * be unreadable to it and silently skipped. Root only: the sync gives the files the directory's owner, a
 * reload keeps it, and a file owned by someone else is refused. */
static void test_owner_follows_dir(void **state)
{
    struct ctx *c = *state;
    char keys[128], p[256];
    struct stat st;
    if (geteuid() != 0) {
        print_message("not root: ownership not tested\n");
        return;
    }
    mkkeys(c);
    snprintf(keys, sizeof(keys), "%s/keys", c->dir);
    assert_int_equal(chown(keys, 65534, 65534), 0);
    const struct service_conf *sc = load(c, "[{\"name\":\"alice\",\"public_key\":\"" K1 "\"}]");
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    path(c, "", p, sizeof(p));
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    path(c, "alice.auth", p, sizeof(p));
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    ino_t ino = st.st_ino;
    /* a sync with nothing changed rewrites nothing */
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_ino, ino);
    assert_int_equal(clientauth_check(sc, c->err, sizeof(c->err)), 0);
    /* a file owned by root in the tor user's directory: refused by the check, given back by a sync */
    assert_int_equal(chown(p, 0, 0), 0);
    assert_int_equal(clientauth_check(sc, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, "tor could not read it"));
    assert_int_equal(clientauth_sync(sc, c->err, sizeof(c->err)), 0);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_uid, 65534);
}

static void test_config_keys(void **state)
{
    (void)state;
    unsigned char k[32];
    assert_int_equal(config_x25519_b32_decode(K1, 52, k), 0);
    assert_int_equal(config_x25519_b32_decode(K1, 51, k), -1);
    assert_int_equal(config_x25519_b32_decode("N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5D1", 52, k), -1);
    /* the last character's unused bits set: not a canonical key */
    assert_int_equal(config_x25519_b32_decode("N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DR", 52, k), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_and_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_clients_no_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_auth_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_flag_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_dir_and_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owner_follows_dir, setup, teardown),
        cmocka_unit_test(test_config_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
