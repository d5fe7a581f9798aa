/* test_ob_instance.c — unit tests for sidecar/balance/ob_instance.c on a real directory: ob_config written with
 * tor's line (0600) and replaced on a change of master; a symlink planted as ob_config is replaced, never
 * followed (the file it pointed at keeps its content); an instance whose own address is the master is
 * refused (the master key must not sit in an instance's directory); a service without the role gets
 * nothing; a missing directory is an error naming it; run as root in a directory of another user (tor's
 * User, as with tor.user), the file belongs to that user, who must read it (skipped unless root).
 *
 * Why: the HiddenServiceDir may belong to tor's user, and tor answers 513 to the SETCONF without the file. */
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

#include "sidecar/config/ob_config.h"
#include "sidecar/balance/ob_instance.h"
#include "tests/fake/tmpdir.h"

#define MASTER "2gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4ad"
#define OTHER "nk47d24ppuzyr5hz2wdpm3uz7vkaqdpsyrdpbzmgncyjycfbnxidqgyd"
#define SELF "afpx426fv2xuqnzebcpjeuwmco2qsungw2kbeurhmxh7jv4agbxcytqd"

struct ctx {
    char dir[64];
    char path[128];
};

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    if (!c || tmpdir_make(c->dir, sizeof(c->dir), "test_ob_instance") < 0)
        return -1;
    snprintf(c->path, sizeof(c->path), "%s/ob_config", c->dir);
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    int rc = tmpdir_remove(c->dir);
    free(c);
    return rc;
}

static void read_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static struct ob_conf instance_of(const char *master)
{
    struct ob_conf ob = {.role = OB_ROLE_INSTANCE};
    snprintf(ob.master_address, sizeof(ob.master_address), "%s", master);
    return ob;
}

static void test_written(void **state)
{
    struct ctx *c = *state;
    char err[256], buf[256];
    struct ob_conf ob = instance_of(MASTER);
    struct stat st;
    assert_int_equal(ob_instance_prepare(c->dir, SELF, &ob, err, sizeof(err)), 0);
    read_file(c->path, buf, sizeof(buf));
    assert_string_equal(buf, "MasterOnionAddress " MASTER ".onion\n");
    assert_int_equal(lstat(c->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    ob = instance_of(OTHER); /* a new master replaces it */
    assert_int_equal(ob_instance_prepare(c->dir, SELF, &ob, err, sizeof(err)), 0);
    read_file(c->path, buf, sizeof(buf));
    assert_string_equal(buf, "MasterOnionAddress " OTHER ".onion\n");
}

static void test_symlink_not_followed(void **state)
{
    struct ctx *c = *state;
    char err[256], buf[256], victim[128];
    struct ob_conf ob = instance_of(MASTER);
    struct stat st;
    snprintf(victim, sizeof(victim), "%s/victim", c->dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    assert_int_equal(symlink(victim, c->path), 0);
    assert_int_equal(ob_instance_prepare(c->dir, SELF, &ob, err, sizeof(err)), 0);
    read_file(victim, buf, sizeof(buf));
    assert_string_equal(buf, "precious\n");
    assert_int_equal(lstat(c->path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
}

static void test_owned_as_directory(void **state)
{
    struct ctx *c = *state;
    char err[256];
    struct ob_conf ob = instance_of(MASTER);
    struct stat st;
    if (geteuid() != 0)
        skip();
    /* the HiddenServiceDir handed to tor's user: tor opens ob_config as that user */
    assert_int_equal(chown(c->dir, 65534, 65534), 0);
    assert_int_equal(ob_instance_prepare(c->dir, SELF, &ob, err, sizeof(err)), 0);
    assert_int_equal(lstat(c->path, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_gid, 65534);
    assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_refused(void **state)
{
    struct ctx *c = *state;
    char err[256] = "";
    struct ob_conf ob = instance_of(MASTER);
    assert_int_equal(ob_instance_prepare(c->dir, MASTER, &ob, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "holds the master key " MASTER ".onion itself"));
    assert_int_equal(access(c->path, F_OK), -1);
    struct ob_conf none = {.role = OB_ROLE_NONE};
    assert_int_equal(ob_instance_prepare(c->dir, SELF, &none, err, sizeof(err)), 0);
    assert_int_equal(access(c->path, F_OK), -1);
    char missing[128];
    snprintf(missing, sizeof(missing), "%s/nope", c->dir);
    assert_int_equal(ob_instance_prepare(missing, SELF, &ob, err, sizeof(err)), -1);
    assert_non_null(strstr(err, missing));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owned_as_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
