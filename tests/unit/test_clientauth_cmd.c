/* test_clientauth_cmd.c — unit tests for sidecar/cli/clientauth_cmd.c: `onionfront client-auth add|list|remove`.
 *
 * Why: `add` prints a secret the client needs in an exact format (tor ignores a malformed .auth_private
 * file just as it ignores a malformed .auth file), and the public half the operator pastes into the
 * config must be the one that belongs to it. `remove` must name exactly the entry to delete and must
 * never lead the operator into making a private service public by accident.
 *
 * Covers: the key pair is base32 x25519 (52 upper-case characters, canonical) and the public key is the
 * private key's (recomputed with OpenSSL); onion_address_base32 round-trips a known key; `add` refuses a service
 * without an address, an unknown service, a bad or taken name; prints exactly one line
 * "<address>:descriptor:x25519:<private>" and one config entry that config.c accepts; nothing on stderr;
 * `list` prints the clients and fails, naming the file, when the directory disagrees, says before the
 * first start that the files come then, and with a key but no files yet that a reload writes them; `remove` refuses
 * an unknown service or client, needs no address, edits neither the config nor the files, and prints
 * exactly the client's entry: the config without it, synced, loses that client's file and keeps the
 * others'; for the last client it names drop_client_auth, and the config without clients is then
 * refused (the file stays) while one with "drop_client_auth": true makes the service public. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "sidecar/identity/clientauth.h"
#include "sidecar/cli/clientauth_cmd.h"
#include "sidecar/config/config.h"
#include "sidecar/config/config_value.h"
#include "sidecar/cli/keycmd.h"
#include "sidecar/identity/keys.h"
#include "tests/fake/tmpdir.h"

#define K1 "N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ"

struct st {
    char dir[64];
    char conf[128];
    FILE *out, *err;
    char obuf[4096], ebuf[4096];
};

/* The config: service "web" with the JSON members `fields` ("" or ending in ", "). */
static void write_conf_fields(struct st *s, const char *fields)
{
    FILE *f = fopen(s->conf, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"state_dir\": \"%s/state\", \"run_dir\": \"%s/run\", \"services\": [{\"name\": \"web\", %s"
            "\"ports\": [{\"virtual\": 80, \"target\": \"127.0.0.1:8080\"}]}]}",
            s->dir, s->dir, fields);
    fclose(f);
}

/* The config: service "web" with the client_auth `clients` (JSON array, or "" for none). */
static void write_conf(struct st *s, const char *clients)
{
    char fields[2048] = "";
    if (clients[0])
        snprintf(fields, sizeof(fields), "\"client_auth\": %s, ", clients);
    write_conf_fields(s, fields);
}

static int setup(void **state)
{
    struct st *s = calloc(1, sizeof(*s));
    if (!s || tmpdir_make(s->dir, sizeof(s->dir), "test_clientauth_cmd") < 0)
        return -1;
    snprintf(s->conf, sizeof(s->conf), "%s/a.json", s->dir);
    write_conf(s, "");
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    struct st *s = *state;
    if (s->out)
        fclose(s->out);
    if (s->err)
        fclose(s->err);
    int rc = tmpdir_remove(s->dir);
    free(s);
    return rc;
}

/* Fresh output files before a command; read them back after. */
static void outputs_reset(struct st *s)
{
    if (s->out)
        fclose(s->out);
    if (s->err)
        fclose(s->err);
    s->out = tmpfile();
    s->err = tmpfile();
    assert_non_null(s->out);
    assert_non_null(s->err);
}

static void outputs_read(struct st *s)
{
    FILE *f[2] = {s->out, s->err};
    char *b[2] = {s->obuf, s->ebuf};
    for (int i = 0; i < 2; i++) {
        rewind(f[i]);
        size_t n = fread(b[i], 1, sizeof(s->obuf) - 1, f[i]);
        b[i][n] = '\0';
    }
}

/* The x25519 public key of the base32 private key `priv`, in base32 upper case. */
static void public_of(const char *priv, char pub[53])
{
    unsigned char raw[32], rpub[32];
    size_t len = sizeof(rpub);
    assert_int_equal(config_x25519_b32_decode(priv, strlen(priv), raw), 0);
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, raw, sizeof(raw));
    assert_non_null(k);
    assert_int_equal(EVP_PKEY_get_raw_public_key(k, rpub, &len), 1);
    EVP_PKEY_free(k);
    onion_address_base32(rpub, sizeof(rpub), pub);
    for (char *p = pub; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
}

static void test_keypair(void **state)
{
    (void)state;
    char pub[53], priv[53], pub2[53], again[53];
    unsigned char raw[32];
    assert_int_equal(clientauth_keypair(pub, priv), 0);
    assert_int_equal(strlen(pub), 52);
    assert_int_equal(strlen(priv), 52);
    assert_int_equal(strspn(pub, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), 52);
    assert_int_equal(config_x25519_b32_decode(pub, 52, NULL), 0);
    public_of(priv, pub2);
    assert_string_equal(pub, pub2);
    clientauth_keypair(pub2, again);
    assert_string_not_equal(priv, again);
    /* onion_address_base32 round-trips a key tor wrote */
    assert_int_equal(config_x25519_b32_decode(K1, 52, raw), 0);
    onion_address_base32(raw, sizeof(raw), pub2);
    assert_string_equal(pub2, "n2nu7bsrl6yodzcypn4creb54tylkgie2kyoqwlfyc23zjvce5dq");
}

static void test_add(void **state)
{
    struct st *s = *state;
    outputs_reset(s);
    /* no address yet */
    assert_int_equal(clientauth_cmd_add(s->conf, "web", "alice", s->out, s->err), 1);
    outputs_read(s);
    assert_string_equal(s->obuf, "");
    assert_non_null(strstr(s->ebuf, "service web has no address yet"));

    outputs_reset(s);
    assert_int_equal(keycmd_new_key(s->conf, "web", s->out, s->err), 0);
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_add(s->conf, "nosuch", "alice", s->out, s->err), 1);
    outputs_read(s);
    assert_non_null(strstr(s->ebuf, "no service named \"nosuch\""));
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_add(s->conf, "web", "Alice!", s->out, s->err), 1);
    outputs_read(s);
    assert_non_null(strstr(s->ebuf, "client name \"Alice!\" must be 1-32 characters: lowercase letters"));

    outputs_reset(s);
    assert_int_equal(clientauth_cmd_add(s->conf, "web", "alice", s->out, s->err), 0);
    outputs_read(s);
    assert_string_equal(s->ebuf, "");
    /* exactly one private key line and one config entry; the rest are comments */
    char addr[ONION_ADDRESS_SIZE] = "", priv[53] = "", pub[53] = "", entry[256] = "";
    int keylines = 0, entries = 0;
    for (char *line = strtok(s->obuf, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        if (line[0] == '{') {
            entries++;
            snprintf(entry, sizeof(entry), "%s", line);
            continue;
        }
        keylines++;
        assert_int_equal(strlen(line), 56 + strlen(":descriptor:x25519:") + 52);
        assert_memory_equal(line + 56, ":descriptor:x25519:", strlen(":descriptor:x25519:"));
        snprintf(addr, sizeof(addr), "%.56s", line);
        snprintf(priv, sizeof(priv), "%s", line + 56 + strlen(":descriptor:x25519:"));
    }
    assert_int_equal(keylines, 1);
    assert_int_equal(entries, 1);
    public_of(priv, pub);
    char want[256];
    snprintf(want, sizeof(want), "{ \"name\": \"alice\", \"public_key\": \"%s\" }", pub);
    assert_string_equal(entry, want);

    /* the entry goes into the config as printed; the address is the service's */
    char clients[300];
    snprintf(clients, sizeof(clients), "[%s]", entry);
    write_conf(s, clients);
    char err[1024];
    struct config *c = config_load_file(s->conf, err, sizeof(err));
    assert_non_null(c);
    struct onion_key k;
    assert_int_equal(keys_load(c->services[0].key_dir, &k, err, sizeof(err)), 0);
    assert_string_equal(k.address, addr);
    onion_key_clear(&k);
    config_free(c);

    /* a taken name */
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_add(s->conf, "web", "alice", s->out, s->err), 1);
    outputs_read(s);
    assert_string_equal(s->obuf, "");
    assert_non_null(strstr(s->ebuf, "already has a client named \"alice\""));
}

static void test_list(void **state)
{
    struct st *s = *state;
    char err[1024], p[256];
    /* before the first start: no key, nothing to disagree with; the clients come at the first start */
    write_conf(s, "[{\"name\": \"alice\", \"public_key\": \"" K1 "\"}]");
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_list(s->conf, "web", s->out, s->err), 0);
    outputs_read(s);
    assert_non_null(strstr(s->obuf, "service web: 1 client\n"));
    assert_non_null(strstr(s->obuf, "service web has not been started yet: onionfront writes these clients' files"));
    assert_string_equal(s->ebuf, "");

    write_conf(s, "");
    outputs_reset(s);
    assert_int_equal(keycmd_new_key(s->conf, "web", s->out, s->err), 0);
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_list(s->conf, "web", s->out, s->err), 0);
    outputs_read(s);
    assert_non_null(strstr(s->obuf, "service web: no client authorization"));

    /* a key, clients in the config, no files yet: not "does not agree" but what to do */
    write_conf(s, "[{\"name\": \"alice\", \"public_key\": \"" K1 "\"}]");
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_list(s->conf, "web", s->out, s->err), 1);
    outputs_read(s);
    assert_non_null(strstr(s->ebuf, "does not exist yet: the clients above are in the config but not given to tor; "
                                    "reload onionfront"));
    assert_null(strstr(s->ebuf, "does not agree"));

    struct config *c = config_load_file(s->conf, err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(clientauth_sync(&c->services[0], err, sizeof(err)), 0);
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_list(s->conf, "web", s->out, s->err), 0);
    outputs_read(s);
    assert_non_null(strstr(s->obuf, "service web: 1 client\n"));
    assert_non_null(strstr(s->obuf, "alice"));
    assert_non_null(strstr(s->obuf, "descriptor:x25519:" K1));
    assert_string_equal(s->ebuf, "");

    /* a planted file: the list says the directory disagrees, naming it */
    snprintf(p, sizeof(p), "%s/%s/bob.auth", c->services[0].key_dir, CLIENTAUTH_DIR);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("descriptor:x25519:typo\n", f);
    fclose(f);
    config_free(c);
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_list(s->conf, "web", s->out, s->err), 1);
    outputs_read(s);
    assert_non_null(strstr(s->ebuf, "bob.auth: unknown file"));
}

/* The whole of file `path` into `buf`. */
static void read_all(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* `client-auth remove web NAME` succeeds, edits nothing and prints one entry; return it in `entry`. */
static void remove_ok(struct st *s, const char *name, char *entry, size_t len)
{
    char before[2048], after[2048];
    read_all(s->conf, before, sizeof(before));
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_remove(s->conf, "web", name, s->out, s->err), 0);
    outputs_read(s);
    read_all(s->conf, after, sizeof(after));
    assert_string_equal(before, after);
    assert_string_equal(s->ebuf, "");
    int entries = 0;
    char copy[sizeof(s->obuf)];
    snprintf(copy, sizeof(copy), "%s", s->obuf);
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        entries++;
        snprintf(entry, len, "%s", line);
    }
    assert_int_equal(entries, 1);
}

/* Does the service's authorized_clients/<name>.auth exist? */
static int auth_exists(const struct config *c, const char *name)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s/%s.auth", c->services[0].key_dir, CLIENTAUTH_DIR, name);
    FILE *f = fopen(p, "r");
    if (f)
        fclose(f);
    return f != NULL;
}

static void test_remove(void **state)
{
    struct st *s = *state;
    char err[1024], pub[53], priv[53], alice[128], bob[128], clients[300], entry[256];
    assert_int_equal(clientauth_keypair(pub, priv), 0);
    snprintf(alice, sizeof(alice), "{ \"name\": \"alice\", \"public_key\": \"%s\" }", K1);
    snprintf(bob, sizeof(bob), "{ \"name\": \"bob\", \"public_key\": \"%s\" }", pub);
    snprintf(clients, sizeof(clients), "[%s, %s]", alice, bob);
    write_conf(s, clients);

    outputs_reset(s);
    assert_int_equal(clientauth_cmd_remove(s->conf, "nosuch", "alice", s->out, s->err), 1);
    outputs_read(s);
    assert_string_equal(s->obuf, "");
    assert_non_null(strstr(s->ebuf, "client-auth remove: "));
    assert_non_null(strstr(s->ebuf, "no service named \"nosuch\""));
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_remove(s->conf, "web", "carol", s->out, s->err), 1);
    outputs_read(s);
    assert_string_equal(s->obuf, "");
    assert_non_null(strstr(s->ebuf, "service web has no client named \"carol\""));

    /* works offline, before the service has a key or an address */
    remove_ok(s, "alice", entry, sizeof(entry));
    assert_string_equal(entry, alice);
    assert_null(strstr(s->obuf, "last client"));
    assert_non_null(strstr(s->obuf, "authorized_clients/alice.auth"));

    outputs_reset(s);
    assert_int_equal(keycmd_new_key(s->conf, "web", s->out, s->err), 0);
    struct config *c = config_load_file(s->conf, err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(clientauth_sync(&c->services[0], err, sizeof(err)), 0);
    config_free(c);
    /* the files are not touched by the command */
    remove_ok(s, "alice", entry, sizeof(entry));
    c = config_load_file(s->conf, err, sizeof(err));
    assert_non_null(c);
    assert_true(auth_exists(c, "alice") && auth_exists(c, "bob"));
    config_free(c);

    /* the config without the printed entry: the sync removes alice's file, keeps bob's */
    snprintf(clients, sizeof(clients), "[%s]", bob);
    write_conf(s, clients);
    c = config_load_file(s->conf, err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(clientauth_sync(&c->services[0], err, sizeof(err)), 0);
    assert_false(auth_exists(c, "alice"));
    assert_true(auth_exists(c, "bob"));
    config_free(c);

    /* the last client: the same entry, and what a config without clients does */
    remove_ok(s, "bob", entry, sizeof(entry));
    assert_string_equal(entry, bob);
    assert_non_null(strstr(s->obuf, "last client"));
    assert_non_null(strstr(s->obuf, "\"drop_client_auth\": true"));
    write_conf(s, "");
    c = config_load_file(s->conf, err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(clientauth_sync(&c->services[0], err, sizeof(err)), -1);
    assert_non_null(strstr(err, "drop_client_auth"));
    assert_true(auth_exists(c, "bob"));
    config_free(c);
    outputs_reset(s);
    assert_int_equal(clientauth_cmd_remove(s->conf, "web", "bob", s->out, s->err), 1);
    outputs_read(s);
    assert_non_null(strstr(s->ebuf, "no client named \"bob\""));

    /* public on purpose, as the message says */
    write_conf_fields(s, "\"drop_client_auth\": true, ");
    c = config_load_file(s->conf, err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(clientauth_sync(&c->services[0], err, sizeof(err)), 1);
    assert_false(auth_exists(c, "bob"));
    config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keypair),
        cmocka_unit_test_setup_teardown(test_add, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
