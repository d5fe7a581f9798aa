/* test_cli.c — unit tests for sidecar/cli/cli.c, the one-shot subcommands, with real config files and key
 * directories in a private temporary directory; stdout and stderr are captured into files.
 *
 * Why: operators run these by hand and from scripts; the exit code and the first line are what they see.
 *
 * Covers: check-config prints "PATH: OK (N services, tor MODE)" and returns 0, and names the file and
 * the problem (returning 1) for a bad one, every problem of a file with several (field, value, count), and each problem of what a valid file refers to (preflight.h:
 * a missing tor.binary and an unknown tor.user at once), making nothing; the key commands (import-key, export-key, new-key) reach
 * keycmd.c with their arguments, which names a service the config does not have; client-auth add, list
 * and remove reach clientauth_cmd.c, which names the command and the unknown service, and any other
 * client-auth word or count is a usage error. The CLI's manners: an unknown command or option, a missing
 * or extra argument is one line naming it plus "Try 'onionfront --help'." on stderr, exit 2, never the
 * usage text; `help` prints it and exits 0. The exit status table: status and check exit 2 when
 * onionfront is not running (Nagios CRITICAL), 3 when the config cannot be read (UNKNOWN); each command's
 * errors carry its own name (log-level, restart-tor). --help's synopses equal onionfront(1)'s SYNOPSIS
 * (rendered from the troff source, uppercased), every command in both. */
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

#include "sidecar/cli/cli.h"
#include "sidecar/core/version.h"
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

/* The test config: one service "web" whose key lives in <dir>/state/keys/web, run by a fake tor (a
 * script that answers --version) at <dir>/tor. */
static void write_conf(struct ctx *c)
{
    char json[2048], tor[300];
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\","
             "\"tor\":{\"binary\":\"%s/tor\"},"
             "\"status\":{\"socket\":\"%s/status.sock\"},"
             "\"services\":[{\"name\":\"web\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:8080\"}]}]}",
             c->dir, c->dir, c->dir, c->dir);
    snprintf(c->conf, sizeof(c->conf), "%s/onionfront.json", c->dir);
    write_file(c->conf, json);
    snprintf(tor, sizeof(tor), "%s/tor", c->dir);
    write_file(tor, "#!/bin/sh\necho 'Tor version 0.4.9.11.'\n");
    assert_int_equal(chmod(tor, 0755), 0);
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
    snprintf(want, sizeof(want), "%s: OK (1 service, tor spawn)\n", c->conf);
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

    /* Three mistakes: all three in one run, each with its field and value, then how many (haproxy -c). */
    write_file(bad, "{\"state_dir\":\"/var/lib/of\",\"run_dir\":\"/run/of\",\"log_level\":\"loud\","
                    "\"services\":[{\"name\":\"web\",\"colour\":1,\"ports\":[{\"virtual\":70000,"
                    "\"target\":\"127.0.0.1:8080\"}]}]}");
    capture_begin(c);
    rc = cli_check_config(bad);
    capture_end(c, "err", buf, sizeof(buf));
    assert_int_equal(rc, 1);
    snprintf(want, sizeof(want),
             "%s: log_level: must be one of \"debug\", \"info\", \"notice\", \"warn\", \"error\", not \"loud\"\n"
             "%s: services[0].colour: unknown key; valid here: ",
             bad, bad);
    if (strncmp(buf, want, strlen(want)) != 0)
        fail_msg("got:\n%s", buf);
    snprintf(want, sizeof(want), "\n%s: services[0].ports[0].virtual: invalid port \"70000\" (must be 1-65535)\n%s: 3 errors\n",
             bad, bad);
    assert_non_null(strstr(buf, want));

    /* A valid file that refers to what is not there: every problem, one line each, and nothing made. */
    snprintf(bad, sizeof(bad), "%s/refers.json", c->dir);
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\","
             "\"tor\":{\"binary\":\"%s/no-tor\",\"user\":\"no-such-user-cli\"},"
             "\"services\":[{\"name\":\"web\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:8080\"}]}]}",
             c->dir, c->dir, c->dir);
    write_file(bad, json);
    capture_begin(c);
    rc = cli_check_config(bad);
    capture_end(c, "err", buf, sizeof(buf));
    assert_int_equal(rc, 1);
    snprintf(want, sizeof(want), "%s: tor.binary: %s/no-tor does not exist", bad, c->dir);
    assert_non_null(strstr(buf, want));
    snprintf(want, sizeof(want), "%s: tor.user: there is no user named \"no-such-user-cli\"", bad);
    assert_non_null(strstr(buf, want));
    char sdir[400];
    snprintf(sdir, sizeof(sdir), "%s/state", c->dir);
    assert_int_equal(access(sdir, F_OK), -1);
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

/* A usage error: exactly two lines on stderr, the reason (prefixed "onionfront[ CMD]: " and naming
 * `what`) and the --help hint; no usage text. */
static void assert_usage_error(const char *err, const char *what)
{
    const char *nl = strchr(err, '\n');
    if (strncmp(err, "onionfront", 10) != 0 || !nl || strcmp(nl + 1, "Try 'onionfront --help'.\n") != 0 ||
        !strstr(err, what))
        fail_msg("not a one-line usage error naming \"%s\":\n%s", what, err);
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
        const char *why;
    } cases[] = {{3, {"add", "nope", "alice"}, 1, NULL},
                 {2, {"list", "nope"}, 1, NULL},
                 {3, {"remove", "nope", "alice"}, 1, NULL},
                 {2, {"remove", "nope"}, 2, "onionfront client-auth remove: missing argument"},
                 {3, {"list", "nope", "alice"}, 2, "onionfront client-auth list: too many arguments"},
                 {3, {"rm", "nope", "alice"}, 2, "onionfront client-auth: unknown word 'rm'"},
                 {0, {NULL}, 2, "onionfront client-auth: missing add, list or remove"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *args[3] = {cases[i].args[0], cases[i].args[1], cases[i].args[2]};
        capture_begin(c);
        int rc = cli_command(c->conf, "client-auth", cases[i].argc, args);
        capture_end(c, "err", buf, sizeof(buf));
        assert_int_equal(rc, cases[i].rc);
        if (rc == 2) {
            assert_usage_error(buf, cases[i].why);
            continue;
        }
        snprintf(want, sizeof(want), "client-auth %s: ", args[0]);
        assert_non_null(strstr(buf, want));
        assert_non_null(strstr(buf, "no service named \"nope\""));
    }
}

/* status, check, log-level, reload and restart-tor: their options, and the exit status table. */
static void test_status(void **state)
{
    struct ctx *c = *state;
    char buf[2048], nosock[400], noconf[400];
    snprintf(nosock, sizeof(nosock), "%s/nothing.sock", c->dir);
    snprintf(noconf, sizeof(noconf), "%s/missing.json", c->dir);
    const struct {
        const char *cmd;
        char *args[4];
        int argc;
        int rc;
        const char *which; /* "out" or "err" */
        const char *want;  /* in it; "@" is the usage error's check */
    } cases[] = {
        {"status", {"--bogus"}, 1, 2, "err", "@onionfront status: unknown option '--bogus'"},
        {"status", {"-s"}, 1, 2, "err", "@onionfront status: option -s needs a socket path"},
        {"status", {"reload", "now"}, 2, 2, "err", "@onionfront status: reload takes no arguments"},
        {"check", {"extra"}, 1, 2, "err", "@onionfront check: unexpected argument 'extra'"},
        {"log-level", {NULL}, 0, 2, "err", "@onionfront log-level: missing LEVEL"},
        {"log-level", {"debug", "soon"}, 2, 2, "err", "@onionfront log-level: SECONDS must be a positive number"},
        {"restart-tor", {"now"}, 1, 2, "err", "@onionfront restart-tor: unexpected argument 'now'"},
        /* the socket from the config: nothing listens there, which is "down" to a monitoring check */
        {"status", {NULL}, 0, 2, "err", "onionfront status: onionfront is not running"},
        {"check", {NULL}, 0, 2, "out", "ONIONFRONT CRITICAL - onionfront is not running"},
        /* a config it cannot read: it cannot tell (UNKNOWN), not "down" */
        {"status", {"-c", noconf}, 2, 3, "err", "onionfront status: cannot read "},
        {"check", {"-c", noconf}, 2, 3, "out", "ONIONFRONT UNKNOWN - cannot read "},
        /* each command's errors carry its own name, not "status" */
        {"log-level", {"-s", nosock, "debug"}, 3, 1, "err", "onionfront log-level: onionfront is not running"},
        {"restart-tor", {"-s", nosock}, 2, 1, "err", "onionfront restart-tor: onionfront is not running"},
        {"status", {"-s", nosock, "reload"}, 3, 1, "err", "onionfront status: onionfront is not running"},
        /* reload (the unit's ExecReload=): a config it cannot read is refused, exit 1, the daemon not asked */
        {"reload", {"-c", noconf}, 2, 1, "err", "onionfront reload: "},
        {"reload", {"-c", noconf}, 2, 1, "err", "; refused, the running config stays"},
        {"reload", {"-s", nosock}, 2, 1, "err", "onionfront reload: onionfront is not running"},
        {"reload", {NULL}, 0, 1, "err", "onionfront reload: onionfront is not running"},
        {"reload", {"now"}, 1, 2, "err", "@onionfront reload: unexpected argument 'now'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *args[4] = {cases[i].args[0], cases[i].args[1], cases[i].args[2], cases[i].args[3]};
        capture_begin(c);
        int rc = cli_command(c->conf, cases[i].cmd, cases[i].argc, args);
        capture_end(c, cases[i].which, buf, sizeof(buf));
        if (rc != cases[i].rc)
            fail_msg("case %zu (%s): exit %d, not %d: %s", i, cases[i].cmd, rc, cases[i].rc, buf);
        if (cases[i].want[0] == '@')
            assert_usage_error(buf, cases[i].want + 1);
        else if (!strstr(buf, cases[i].want))
            fail_msg("case %zu: no \"%s\" in:\n%s", i, cases[i].want, buf);
    }
}

/* The dispatch: argument counts checked before a command runs; help and the options. */
static void test_command(void **state)
{
    struct ctx *c = *state;
    char buf[8192], want[1024];
    char *args[] = {c->conf, "x", "y"};
    capture_begin(c);
    int rc = cli_command(c->conf, "check-config", 0, args);
    capture_end(c, "out", buf, sizeof(buf));
    assert_int_equal(rc, 0);
    snprintf(want, sizeof(want), "%s: OK (1 service, tor spawn)\n", c->conf);
    assert_string_equal(buf, want);
    static const struct {
        const char *cmd;
        int argc;
        const char *why;
    } bad[] = {{"check-config", 2, "onionfront check-config: too many arguments"},
               {"import-key", 1, "onionfront import-key: missing argument; usage: onionfront [-c CONFIG] "
                                 "import-key SERVICE DIRECTORY|FILE"},
               {"import-key", 3, "onionfront import-key: too many arguments"},
               {"export-key", 1, "onionfront export-key: missing argument"},
               {"new-key", 0, "onionfront new-key: missing argument"},
               {"new-key", 2, "onionfront new-key: too many arguments"},
               {"frobnicate", 0, "onionfront: unknown command 'frobnicate'"},
               {"stop", 0, "onionfront: unknown command 'stop'"},
               {"version", 1, "onionfront version: too many arguments"},
               {"run", 1, "onionfront run: too many arguments"},
               {"help", 1, "onionfront help: too many arguments"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        capture_begin(c);
        rc = cli_command(c->conf, bad[i].cmd, bad[i].argc, args);
        capture_end(c, "err", buf, sizeof(buf));
        assert_int_equal(rc, 2);
        assert_usage_error(buf, bad[i].why);
    }
    /* version: onionfront's and the config's tor.binary's (a script answering as tor 0.4.9.11) */
    capture_begin(c);
    rc = cli_command(c->conf, "version", 0, args);
    capture_end(c, "out", buf, sizeof(buf));
    assert_int_equal(rc, 0);
    snprintf(want, sizeof(want), "onionfront " ONIONFRONT_VERSION "\ntor 0.4.9.11 (%s/tor)\n", c->dir);
    assert_string_equal(buf, want);
    /* help: the usage text on stdout, exit 0, with the exit status table */
    capture_begin(c);
    rc = cli_command(c->conf, "help", 0, args);
    capture_end(c, "out", buf, sizeof(buf));
    assert_int_equal(rc, 0);
    assert_true(strncmp(buf, "usage: onionfront", 17) == 0);
    assert_non_null(strstr(buf, "0 ok, 1 degraded, 2 down or not\nrunning, 3 unknown"));
    /* the options before the command */
    static const struct {
        int argc;
        char *argv[3];
        int rc;
        const char *why;
    } opts[] = {{2, {"onionfront", "-t"}, 2, "onionfront: unknown option '-t'"},
                {2, {"onionfront", "-c"}, 2, "onionfront: option -c needs a config file"}};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        const char *path = NULL;
        int next = 0;
        char *argv[3] = {opts[i].argv[0], opts[i].argv[1], opts[i].argv[2]};
        capture_begin(c);
        rc = cli_options(opts[i].argc, argv, &path, &next);
        capture_end(c, "err", buf, sizeof(buf));
        assert_int_equal(rc, opts[i].rc);
        assert_usage_error(buf, opts[i].why);
    }
}

/* ---- --help and onionfront(1)'s SYNOPSIS list the same commands, written the same way ----------- */

/* Append the troff text `s` (one macro's arguments) to `out`: "\-" is "-", font escapes vanish. */
static void man_text(char *out, size_t cap, const char *s, size_t n)
{
    size_t o = strlen(out);
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '-') {
            out[o++] = '-';
            i++;
        } else if (s[i] == '\\' && i + 2 < n && s[i + 1] == 'f') {
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
}

/* The SYNOPSIS of the man page `path` as lines "onionfront ..." (uppercased, one space between words),
 * rendered as man does for the macros it uses: .B and .I join their arguments with spaces, .BR .RB .IR
 * .RI .BI .IB without; .br ends an entry. Into `out`, "\n"-separated. */
static void man_synopsis(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[512], entry[512] = "";
    bool in = false;
    assert_non_null(f);
    out[0] = '\0';
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, ".SH", 3) == 0) {
            if (in)
                break;
            in = strcmp(line, ".SH SYNOPSIS") == 0;
            continue;
        }
        if (!in)
            continue;
        if (strcmp(line, ".br") == 0) {
            strncat(out, entry, cap - strlen(out) - 2);
            strcat(out, "\n");
            entry[0] = '\0';
            continue;
        }
        const char *sp = strchr(line, ' ');
        if (line[0] != '.' || !sp)
            fail_msg("unexpected SYNOPSIS line: %s", line);
        bool spaced = sp - line == 2; /* .B, .I */
        if (entry[0])
            strcat(entry, " ");
        for (const char *a = sp + 1; *a;) { /* arguments: words or "quoted strings" */
            while (*a == ' ')
                a++;
            if (!*a)
                break;
            const char *end;
            if (*a == '"') {
                end = strchr(a + 1, '"');
                assert_non_null(end);
                man_text(entry, sizeof(entry), a + 1, (size_t)(end - a - 1));
                end++;
            } else {
                end = a + strcspn(a, " ");
                man_text(entry, sizeof(entry), a, (size_t)(end - a));
            }
            a = end;
            while (*a == ' ')
                a++;
            if (spaced && *a)
                strcat(entry, " ");
        }
    }
    fclose(f);
    strncat(out, entry, cap - strlen(out) - 2);
    strcat(out, "\n");
}

/* Uppercase, and one space between words. */
static void normalise(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (*p == ' ' && (o == s || o[-1] == ' ' || o[-1] == '\n'))
            continue;
        if (*p == '\n' && o > s && o[-1] == ' ')
            o--;
        *o++ = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    }
    *o = '\0';
}

static void test_help_matches_man(void **state)
{
    (void)state;
    char usage[8192], man[4096], help[4096] = "";
    FILE *f = fmemopen(usage, sizeof(usage), "w");
    assert_non_null(f);
    cli_usage(f);
    fclose(f);
    /* --help's synopses: "usage: onionfront ..." and "       onionfront ...", up to the description */
    for (char *line = strtok(usage, "\n"); line; line = strtok(NULL, "\n")) {
        char *on = strstr(line, "onionfront ");
        if (!on || (strncmp(line, "usage: ", 7) != 0 && strspn(line, " ") != 7))
            continue;
        char *desc = strstr(on, "  ");
        if (desc)
            *desc = '\0';
        strcat(help, on);
        strcat(help, "\n");
    }
    man_synopsis("sidecar/onionfront.1", man, sizeof(man));
    normalise(help);
    normalise(man);
    assert_string_equal(man, help);
    assert_non_null(strstr(man, "ONIONFRONT [-C CONFIG] CHECK [-S SOCKET]\n")); /* the parser sees real lines */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_check_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_commands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_auth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command, setup, teardown),
        cmocka_unit_test(test_help_matches_man),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
