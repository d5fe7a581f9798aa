/* test_probeauth.c — unit tests for sidecar/identity/probeauth.c: the probe's key pair is made once (0600 in
 * state_dir) and read back the same; its public half is the x25519 public key of the private half (checked
 * with OpenSSL); a file onionfront did not write is refused; nothing is made without `create`; a public
 * service and a config without the probe's client tor get no entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/core/onion_address.h"
#include "sidecar/identity/probeauth.h"
#include "tests/fake/tmpdir.h"

struct ctx {
    char dir[64];
    char state[128];
    struct config *conf;
    char err[1024];
};

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    if (!c || tmpdir_make(c->dir, sizeof(c->dir), "test_probeauth") < 0)
        return -1;
    snprintf(c->state, sizeof(c->state), "%s/state", c->dir);
    if (mkdir(c->state, 0700) < 0)
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

static void load(struct ctx *c, const char *probe, const char *clients)
{
    char json[2048];
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s\",\"run_dir\":\"%s/run\",%s\"services\":[{\"name\":\"web\",%s"
             "\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:1\"}]}]}",
             c->state, c->dir, probe, clients);
    config_free(c->conf);
    c->conf = config_load_string(json, strlen(json), c->err, sizeof(c->err));
    if (!c->conf)
        fail_msg("%s\n%s", c->err, json);
}

static void test_create_and_reload(void **state)
{
    struct ctx *c = *state;
    struct probeauth a, b;
    char path[256];
    struct stat st;
    assert_int_equal(probeauth_load(c->state, false, &a, c->err, sizeof(c->err)), 1); /* nothing made */
    snprintf(path, sizeof(path), "%s/%s", c->state, PROBEAUTH_FILE);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(probeauth_load(c->state, true, &a, c->err, sizeof(c->err)), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_string_equal(a.entry.name, "onionfront-probe");
    assert_int_equal(strlen(a.entry.public_key), 52);
    assert_int_equal(probeauth_load(c->state, true, &b, c->err, sizeof(c->err)), 0);
    assert_string_equal(a.entry.public_key, b.entry.public_key);
    assert_string_equal(a.private_b64, b.private_b64);
    /* the public half belongs to the private half */
    unsigned char raw[64], pub[32];
    size_t pub_len = sizeof(pub);
    int n = EVP_DecodeBlock(raw, (const unsigned char *)a.private_b64, (int)strlen(a.private_b64));
    assert_true(n >= 32);
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, raw, 32);
    assert_non_null(k);
    assert_int_equal(EVP_PKEY_get_raw_public_key(k, pub, &pub_len), 1);
    EVP_PKEY_free(k);
    char enc[64];
    onion_address_base32(pub, sizeof(pub), enc);
    for (char *q = enc; *q; q++)
        if (*q >= 'a' && *q <= 'z')
            *q = (char)(*q - 'a' + 'A');
    assert_string_equal(enc, a.entry.public_key);
    struct probeauth again;
    assert_int_equal(probeauth_load(c->state, false, &again, c->err, sizeof(c->err)), 0);
    assert_string_equal(again.entry.public_key, a.entry.public_key);
    probeauth_clear(&a);
    probeauth_clear(&b);
    probeauth_clear(&again);
}

static void test_foreign_file(void **state)
{
    struct ctx *c = *state;
    struct probeauth a;
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", c->state, PROBEAUTH_FILE);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("not a key\n", f);
    fclose(f);
    assert_int_equal(probeauth_load(c->state, true, &a, c->err, sizeof(c->err)), -1);
    assert_non_null(strstr(c->err, PROBEAUTH_FILE));
    assert_non_null(strstr(c->err, "not a probe key"));
}

static void test_for_service(void **state)
{
    struct ctx *c = *state;
    struct client_auth_conf buf;
    const struct client_auth_conf *e = NULL;
    /* public service: none, and nothing made */
    load(c, "", "");
    assert_int_equal(probeauth_for_service(c->conf, &c->conf->services[0], true, &buf, &e, c->err, sizeof(c->err)), 0);
    assert_null(e);
    load(c, "", "\"client_auth\":[{\"name\":\"alice\",\"public_key\":\"N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ\"}],");
    /* private, but not created: none yet */
    assert_int_equal(probeauth_for_service(c->conf, &c->conf->services[0], false, &buf, &e, c->err, sizeof(c->err)), 0);
    assert_null(e);
    assert_int_equal(probeauth_for_service(c->conf, &c->conf->services[0], true, &buf, &e, c->err, sizeof(c->err)), 0);
    assert_ptr_equal(e, &buf);
    assert_string_equal(e->name, "onionfront-probe");
    /* no client tor: no probe entry */
    load(c, "\"probe\":{\"client_tor\":false},",
         "\"client_auth\":[{\"name\":\"alice\",\"public_key\":\"N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ\"}],");
    assert_int_equal(probeauth_for_service(c->conf, &c->conf->services[0], true, &buf, &e, c->err, sizeof(c->err)), 0);
    assert_null(e);
}

static void test_name_reserved(void **state)
{
    struct ctx *c = *state;
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s\",\"run_dir\":\"%s/run\",\"services\":[{\"name\":\"web\",\"client_auth\":[{\"name\":"
             "\"onionfront-probe\",\"public_key\":\"N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ\"}],"
             "\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:1\"}]}]}", c->state, c->dir);
    struct config *conf = config_load_string(json, strlen(json), c->err, sizeof(c->err));
    assert_null(conf);
    assert_non_null(strstr(c->err, "services[0].client_auth[0].name"));
    assert_non_null(strstr(c->err, "probe client"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_and_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_for_service, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_reserved, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
