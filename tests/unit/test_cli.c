/* test_cli.c — unit tests for sidecar/cli.c, the one-shot subcommands, with real config files and key
 * directories in a private temporary directory; stdout and stderr are captured into files.
 *
 * Why: operators run these by hand and from scripts; the exit code and the first line are what they see.
 *
 * Covers: check-config prints "PATH: OK (N services, tor MODE)" and returns 0, and names the file and
 * the problem (returning 1) for a bad one; the key commands (import-key, export-key, new-key) reach
 * keycmd.c with their arguments, which names a service the config does not have; client-auth add, list
 * and remove reach clientauth_cmd.c, which names the command and the unknown service, and any other
 * client-auth word or count is a usage error; status with a stray option is a usage error (2), and with
 * no socket reports that onionfront is not running (1); wrong argument counts are usage errors (2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/cli.h"
#include "sidecar/keys.h"
#include "tests/fake/tmpdir.h"

struct ctx {
    char dir[256];
    char conf[320];
    int saved_out, saved_err;
};

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The test config: one service "web" whose key lives in <dir>/state/keys/web. */
static void write_conf(struct ctx *c)
{
    char json[2048];
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\","
             "\"tor\":{\"mode\":\"attach\",\"control_socket\":\"%s/control\"},"
             "\"status\":{\"socket\":\"%s/status.sock\"},"
             "\"services\":[{\"name\":\"web\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:8080\"}]}]}",
             c->dir, c->dir, c->dir, c->dir);
    snprintf(c->conf, sizeof(c->conf), "%s/onionfront.json", c->dir);
    write_file(c->conf, json);
}

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    assert_int_equal(tmpdir_make(c->dir, sizeof(c->dir), "test_cli"), 0);
    write_conf(c);
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    tmpdir_remove(c->dir);
    free(c);
    return 0;
}

/* Run with stdout and stderr going to <dir>/out and <dir>/err. */
static void capture_begin(struct ctx *c)
{
    char path[400];
    fflush(stdout);
    fflush(stderr);
    c->saved_out = dup(1);
    c->saved_err = dup(2);
    snprintf(path, sizeof(path), "%s/out", c->dir);
    int fo = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    snprintf(path, sizeof(path), "%s/err", c->dir);
    int fe = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fo >= 0 && fe >= 0);
    dup2(fo, 1);
    dup2(fe, 2);
    close(fo);
    close(fe);
}

/* Restore the streams; return what went to `which` ("out" or "err") in buf. */
static const char *capture_end(struct ctx *c, const char *which, char *buf, size_t len)
{
    fflush(stdout);
    fflush(stderr);
    dup2(c->saved_out, 1);
    dup2(c->saved_err, 2);
    close(c->saved_out);
    close(c->saved_err);
    char path[400];
    snprintf(path, sizeof(path), "%s/%s", c->dir, which);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_check_config(void **state)
{
    struct ctx *c = *state;
    char buf[2048], want[1024];
    capture_begin(c);
    int rc = cli_check_config(c->conf);
    capture_end(c, "out", buf, sizeof(buf));
    assert_int_equal(rc, 0);
    snprintf(want, sizeof(want), "%s: OK (1 service, tor attach)\n", c->conf);
    assert_string_equal(buf, want);

    char bad[400];
    snprintf(bad, sizeof(bad), "%s/bad.json", c->dir);
    write_file(bad, "{\"run_dir\": \"/run/x\"}");
    capture_begin(c);
    rc = cli_check_config(bad);
    capture_end(c, "err", buf, sizeof(buf));
    assert_int_equal(rc, 1);
    assert_non_null(strstr(buf, bad));
    assert_non_null(strstr(buf, "state_dir: is required"));
}

/* The key commands are keycmd.c's (test_keycmd covers them): the table hands each its arguments, and
 * keycmd names the command and the unknown service. */
static void test_key_commands(void **state)
{
    struct ctx *c = *state;
    char buf[2048];
    static const struct {
        const char *cmd;
        int argc;
    } cmds[] = {{"import-key", 2}, {"export-key", 2}, {"new-key", 1}};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        char *args[] = {"nope", c->dir};
        capture_begin(c);
        int rc = cli_command(c->conf, cmds[i].cmd, cmds[i].argc, args);
        capture_end(c, "err", buf, sizeof(buf));
        assert_int_equal(rc, 1);
        assert_non_null(strstr(buf, cmds[i].cmd));
        assert_non_null(strstr(buf, "no service named \"nope\""));
    }
}

/* client-auth's words are clientauth_cmd.c's (test_clientauth_cmd covers them): each reaches its
 * function with the service, which names the command; a wrong word or count is a usage error. */
static void test_client_auth(void **state)
{
    struct ctx *c = *state;
    char buf[2048], want[64];
    static const struct {
        int argc;
        char *args[3];
        int rc;
    } cases[] = {{3, {"add", "nope", "alice"}, 1},   {2, {"list", "nope"}, 1},
                 {3, {"remove", "nope", "alice"}, 1}, {2, {"remove", "nope"}, 2},
                 {3, {"list", "nope", "alice"}, 2},  {3, {"rm", "nope", "alice"}, 2}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *args[3] = {cases[i].args[0], cases[i].args[1], cases[i].args[2]};
        capture_begin(c);
        int rc = cli_command(c->conf, "client-auth", cases[i].argc, args);
        capture_end(c, "err", buf, sizeof(buf));
        assert_int_equal(rc, cases[i].rc);
        if (rc == 2) {
            assert_non_null(strstr(buf, "usage: onionfront"));
            continue;
        }
        snprintf(want, sizeof(want), "client-auth %s: ", args[0]);
        assert_non_null(strstr(buf, want));
        assert_non_null(strstr(buf, "no service named \"nope\""));
    }
}

static void test_status(void **state)
{
    struct ctx *c = *state;
    char buf[2048];
    char *bad[] = {"--bogus"};
    capture_begin(c);
    int rc = cli_status(c->conf, 1, bad);
    capture_end(c, "err", buf, sizeof(buf));
    assert_int_equal(rc, 2);
    assert_non_null(strstr(buf, "usage: onionfront"));

    /* The socket from the config: nothing listens there, which is "down" to a monitoring check. */
    capture_begin(c);
    rc = cli_status(c->conf, 0, NULL);
    capture_end(c, "err", buf, sizeof(buf));
    assert_int_equal(rc, 2);
    assert_non_null(strstr(buf, "status.sock"));
}

/* The dispatch: argument counts checked before a command runs. */
static void test_command(void **state)
{
    struct ctx *c = *state;
    char buf[2048], want[1024];
    char *args[] = {c->conf, "x", "y"};
    capture_begin(c);
    int rc = cli_command(c->conf, "check-config", 0, args);
    capture_end(c, "out", buf, sizeof(buf));
    assert_int_equal(rc, 0);
    snprintf(want, sizeof(want), "%s: OK (1 service, tor attach)\n", c->conf);
    assert_string_equal(buf, want);
    static const struct {
        const char *cmd;
        int argc;
    } bad[] = {{"check-config", 2}, {"import-key", 1}, {"import-key", 3}, {"export-key", 1},
               {"new-key", 0},      {"new-key", 2},    {"frobnicate", 0}, {"run", 0}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        capture_begin(c);
        rc = cli_command(c->conf, bad[i].cmd, bad[i].argc, args);
        capture_end(c, "err", buf, sizeof(buf));
        assert_int_equal(rc, 2);
        assert_non_null(strstr(buf, "usage: onionfront"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_check_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_commands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_auth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
