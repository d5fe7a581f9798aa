/* test_messages.c — the messages an operator gets for bad input, through the commands they type
 * (cli_command, with stdout and stderr captured), as one table: input -> exit code, and the words the
 * message must hold (the field or file, and the cause) and must not (what misled before).
 *
 * Why: issue 27 found messages that pointed the wrong way: a URL as a backend reported as an IPv6
 * address, import-key advising to delete files in the source directory and naming one that was not
 * there, export-key's bare "No such file or directory" and client-auth list's "does not agree" before the
 * first start, JSON errors without their cause, a name rule shown as a regex. Each row is one of those,
 * or one of the check-config cases the other tests use (a missing field, run_dir with '#', PoW asked of
 * a tor without the pow module, a missing tor.binary), or a usage error.
 *
 * The modules are tested on their own elsewhere (test_config, test_config_hint, test_config_value,
 * test_keys, test_keycmd, test_clientauth_cmd, test_preflight, test_cli); this is what reaches people. */
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
#include "tests/fake/tmpdir.h"

struct ctx {
    char dir[256];
    int saved_out, saved_err;
};

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    assert_int_equal(tmpdir_make(c->dir, sizeof(c->dir), "test_messages"), 0);
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

/* Replace "@D@" in `in` with the test directory and "'" with '"' (unless `raw`), into `out`. */
static void expand(const struct ctx *c, const char *in, bool raw, char *out, size_t len)
{
    size_t o = 0;
    for (const char *s = in; *s && o + 300 < len; s++) {
        if (strncmp(s, "@D@", 3) == 0) {
            o += (size_t)snprintf(out + o, len - o, "%s", c->dir);
            s += 2;
        } else {
            out[o++] = !raw && *s == '\'' ? '"' : *s;
        }
    }
    out[o] = '\0';
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void mkdir_p(const char *path)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "mkdir -p -m 700 '%s'", path);
    assert_int_equal(system(cmd), 0);
}

/* Run `argv` (`argc` words, the command first) with `config`; what went to stdout and stderr into `buf`
 * (stdout first). Return the exit code. */
static int run(struct ctx *c, const char *config, int argc, char **argv, char *buf, size_t len)
{
    char path[400];
    fflush(stdout);
    fflush(stderr);
    c->saved_out = dup(1);
    c->saved_err = dup(2);
    snprintf(path, sizeof(path), "%s/capture", c->dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    int rc = cli_command(config, argv[0], argc - 1, argv + 1);
    fflush(stdout);
    fflush(stderr);
    dup2(c->saved_out, 1);
    dup2(c->saved_err, 2);
    close(c->saved_out);
    close(c->saved_err);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return rc;
}

#define TOP(x) "{'state_dir':'@D@/state','run_dir':'@D@/run','tor':{'binary':'@D@/tor'}," x "}"
#define PORT(x) TOP("'services':[{'name':'web','ports':[{'virtual':80," x "}]}]")

enum prep {
    PREP_NONE,
    PREP_V2,      /* @D@/v2: a v2 service's directory (private_key, hostname) */
    PREP_FOREIGN, /* @D@/foreign: a hostname and nothing else */
    PREP_NOPOW,   /* @D@/tor answers "pow: no" */
};

static const struct row {
    const char *name;
    const char *config; /* the file's text ("'" for '"' unless raw) */
    bool raw;
    enum prep prep;
    const char *argv[5]; /* the command; "@C@" is the config file */
    int rc;
    const char *want[4];   /* all in the output */
    const char *unwant[3]; /* none in it */
} rows[] = {
    {"a URL as a backend address", PORT("'backends':[{'address':'http://127.0.0.1:8081/'}]"), false, PREP_NONE,
     {"check-config", "@C@"}, 1,
     {"services[0].ports[0].backends[0].address: ", "\"http://127.0.0.1:8081/\" is a URL", ", here \"127.0.0.1:8081\""},
     {"IPv6", "brackets"}},
    {"a URL as a target", PORT("'target':'https://backend.example/'"), false, PREP_NONE, {"check-config", "@C@"}, 1,
     {"services[0].ports[0].target: ", "is a URL", ", here \"backend.example:443\""}, {"IPv6"}},
    {"a // comment", "{\n  // my site\n  'state_dir': '/x'\n}", false, PREP_NONE, {"check-config", "@C@"}, 1,
     {"line 2, column 3: ", "JSON has no comments"}, {NULL}},
    {"a /* */ comment", TOP("/* later */ 'services':[]"), false, PREP_NONE, {"check-config", "@C@"}, 1,
     {"JSON has no comments"}, {NULL}},
    {"a trailing comma", TOP("'services':[{'name':'web','ports':[{'virtual':80,'target':'127.0.0.1:80',}]}]"), false,
     PREP_NONE, {"check-config", "@C@"}, 1, {"line 1, column ", "no trailing comma"}, {NULL}},
    {"an empty file", "", false, PREP_NONE, {"check-config", "@C@"}, 1, {"@C@: the file is empty"}, {"'['"}},
    {"a UTF-8 BOM", "\xef\xbb\xbf{}", false, PREP_NONE, {"check-config", "@C@"}, 1,
     {"byte order mark", "EF BB BF"}, {"\xef\xbb\xbf'"}},
    {"single quotes", "{'state_dir': '/x'}", true, PREP_NONE, {"check-config", "@C@"}, 1,
     {"line 1, column 2: ", "double quotes"}, {NULL}},
    {"an unknown key", PORT("'backend':[{'address':'127.0.0.1:8081'}]"), false, PREP_NONE, {"check-config", "@C@"},
     1, {"services[0].ports[0].backend: unknown key; did you mean \"backends\"?"}, {NULL}},
    {"a service name against the rule", TOP("'services':[{'name':'Web','ports':[{'virtual':80,'target':'127.0.0.1:80'}]}]"),
     false, PREP_NONE, {"check-config", "@C@"}, 1,
     {"services[0].name: must be 1-32 characters: lowercase letters a-z, digits"}, {"^[", "{0,31}"}},
    {"a backend name against the rule",
     PORT("'backends':[{'name':'web 1','address':'127.0.0.1:8081'}]"), false, PREP_NONE, {"check-config", "@C@"}, 1,
     {"backends[0].name: must be 1-64 characters: letters, digits"}, {"^["}},
    {"a tor.user against the rule", "{'state_dir':'/x','run_dir':'/y','tor':{'user':'Debian-Tor'},'services':[]}",
     false, PREP_NONE, {"check-config", "@C@"}, 1, {"tor.user: must be a user name: 1-32 characters"}, {"^["}},
    /* the check-config cases of the other tests */
    {"a missing field (test_cli)", "{'run_dir': '/run/x'}", false, PREP_NONE, {"check-config", "@C@"}, 1,
     {"@C@: state_dir: is required"}, {NULL}},
    {"run_dir with '#' (test_privilege)",
     "{'state_dir':'@D@/s','run_dir':'/run/of#x','tor':{'mode':'attach','control_socket':'/run/tor/control'},"
     "'services':[{'name':'web','ports':[{'virtual':80,'target':'127.0.0.1:80'}]}]}",
     false, PREP_NONE, {"check-config", "@C@"}, 1, {"run_dir: may only contain"}, {NULL}},
    {"PoW of a tor without the pow module (test_dos)",
     TOP("'services':[{'name':'web','dos':{'pow':{'enabled':true}},'ports':[{'virtual':80,'target':'127.0.0.1:80'}]}]"),
     false, PREP_NOPOW, {"check-config", "@C@"}, 1,
     {"services[0].dos.pow.enabled: this tor (0.4.9.11) was built without the pow module"}, {NULL}},
    {"a missing tor.binary",
     "{'state_dir':'@D@/state','run_dir':'@D@/run','tor':{'binary':'@D@/nothing'},"
     "'services':[{'name':'web','ports':[{'virtual':80,'target':'127.0.0.1:80'}]}]}",
     false, PREP_NONE, {"check-config", "@C@"}, 1, {"tor.binary: @D@/nothing does not exist: install tor"}, {NULL}},
    /* the key and client commands */
    {"import-key from a v2 directory", PORT("'target':'127.0.0.1:80'"), false, PREP_V2, {"import-key", "web", "@D@/v2"},
     1, {"import-key: service web: @D@/v2 is a v2 onion service's key directory", "nothing onionfront can import"},
     {"remove", "hs_ed25519_public_key"}},
    {"import-key from a foreign directory", PORT("'target':'127.0.0.1:80'"), false, PREP_FOREIGN,
     {"import-key", "web", "@D@/foreign"}, 1,
     {"import-key: service web: @D@/foreign holds no hs_ed25519_secret_key (only hostname)", "or that file itself"},
     {"remove", "hs_ed25519_public_key"}},
    {"export-key before the first start", PORT("'target':'127.0.0.1:80'"), false, PREP_NONE,
     {"export-key", "web", "@D@/out.key"}, 1,
     {"export-key: service web has no key yet", "start onionfront with it once", "new-key web"},
     {"No such file or directory"}},
    {"client-auth list before the first start",
     TOP("'services':[{'name':'web','client_auth':[{'name':'alice','public_key':"
         "'QUQ2H6UBPAVOGB3RYRMJU4HCCOXCOIVQHWCCD63OB4W4TSAFLB4Q'}],'ports':[{'virtual':80,'target':'127.0.0.1:80'}]}]"),
     false, PREP_NONE, {"client-auth", "list", "web"}, 0,
     {"service web: 1 client", "has not been started yet", "at its first start"}, {"does not agree"}},
    {"an unknown command", PORT("'target':'127.0.0.1:80'"), false, PREP_NONE, {"frobnicate"}, 2,
     {"onionfront: unknown command 'frobnicate'\nTry 'onionfront --help'.\n"}, {"usage:"}},
};

/* Report one failed check of a row and go on (every row's failure is seen at once); return 1. */
static int row_fail(const char *fmt, ...)
{
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    print_error("%s\n", msg);
    return 1;
}

static void test_table(void **state)
{
    struct ctx *c = *state;
    char config[400], text[4096], buf[8192], path[400], want[1024];
    int failed = 0;
    snprintf(config, sizeof(config), "%s/onionfront.json", c->dir);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        snprintf(path, sizeof(path), "%s/tor", c->dir);
        write_file(path,
                   r->prep == PREP_NOPOW
                       ? "#!/bin/sh\ncase \"$1\" in --version) echo 'Tor version 0.4.9.11.';; "
                         "*) printf 'relay: yes\\npow: no\\n';; esac\n"
                       : "#!/bin/sh\ncase \"$1\" in --version) echo 'Tor version 0.4.9.11.';; "
                         "*) printf 'relay: yes\\npow: yes\\n';; esac\n",
                   0755);
        if (r->prep == PREP_V2 || r->prep == PREP_FOREIGN) {
            snprintf(path, sizeof(path), "%s/%s", c->dir, r->prep == PREP_V2 ? "v2" : "foreign");
            mkdir_p(path);
            snprintf(text, sizeof(text), "%s/hostname", path);
            write_file(text, r->prep == PREP_V2 ? "abcdefghijklmnop.onion\n" : "x.onion\n", 0600);
            snprintf(text, sizeof(text), "%s/private_key", path);
            if (r->prep == PREP_V2)
                write_file(text, "-----BEGIN RSA PRIVATE KEY-----\n", 0600);
        }
        expand(c, r->config, r->raw, text, sizeof(text));
        write_file(config, text, 0600);
        char *argv[5] = {NULL};
        char words[5][400];
        int argc = 0;
        for (; argc < 5 && r->argv[argc]; argc++) {
            if (strcmp(r->argv[argc], "@C@") == 0)
                snprintf(words[argc], sizeof(words[argc]), "%s", config);
            else
                expand(c, r->argv[argc], true, words[argc], sizeof(words[argc]));
            argv[argc] = words[argc];
        }
        int rc = run(c, config, argc, argv, buf, sizeof(buf));
        if (rc != r->rc)
            failed += row_fail("%s: exit %d, not %d:\n%s", r->name, rc, r->rc, buf);
        for (size_t k = 0; k < 4 && r->want[k]; k++) {
            char w[600];
            const char *at = strstr(r->want[k], "@C@");
            if (at)
                snprintf(w, sizeof(w), "%.*s%s%s", (int)(at - r->want[k]), r->want[k], config, at + 3);
            else
                expand(c, r->want[k], true, w, sizeof(w));
            snprintf(want, sizeof(want), "%s", w);
            if (!strstr(buf, want))
                failed += row_fail("%s: no \"%s\" in:\n%s", r->name, want, buf);
        }
        for (size_t k = 0; k < 3 && r->unwant[k]; k++)
            if (strstr(buf, r->unwant[k]))
                failed += row_fail("%s: \"%s\" in:\n%s", r->name, r->unwant[k], buf);
        /* nothing above creates state: check-config, export-key and client-auth list only read */
        snprintf(path, sizeof(path), "%s/state", c->dir);
        if (strcmp(r->argv[0], "import-key") != 0 && access(path, F_OK) == 0)
            failed += row_fail("%s: made %s", r->name, path);
        snprintf(text, sizeof(text), "rm -rf '%s'", path); /* import-key makes it before it reads the source */
        assert_int_equal(system(text), 0);
    }
    if (failed)
        fail_msg("%d of the checks above failed", failed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
