/* test_torrc_cmd.c — unit tests for sidecar/cli/torrc_cmd.c: `onionfront import-torrc`.
 *
 * Why: a private service's clients live in files beside its key, not in the torrc; an import that lost
 * them would make the service public. And the output is what an operator installs: JSON on stdout,
 * everything else as comments on stderr.
 *
 * Covers: the JSON on stdout is the whole config, with the clients of authorized_clients/ as client_auth
 * (names from the files, keys upper case); files tor ignores (not .auth, malformed) are named on stderr;
 * stderr is only comments: the lines not carried over and the import-key lines with --torrc; a
 * HiddenServiceDir that cannot be read fails the command with no JSON; a torrc without a service, and a
 * missing torrc, fail with the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "sidecar/cli/torrc_cmd.h"
#include "tests/fake/tmpdir.h"

#define KEY_A "rkjbq4e6ecqc3vcwbcqhlxiaafnqrgidpvbl6ltrw4uh5xhdelqq"
#define KEY_B "N2NEPIMAMQ5BBRP3QKE4KSDVRRGWJ6BU6H5IDZ5DMUXMG6SXTSEQ"

struct st {
    char dir[64];
    FILE *out, *err;
};

static int setup(void **state)
{
    struct st *s = calloc(1, sizeof(*s));
    if (!s || tmpdir_make(s->dir, sizeof(s->dir), "test_torrc_cmd") < 0)
        return -1;
    s->out = tmpfile();
    s->err = tmpfile();
    *state = s;
    return s->out && s->err ? 0 : -1;
}

static int teardown(void **state)
{
    struct st *s = *state;
    fclose(s->out);
    fclose(s->err);
    int rc = tmpdir_remove(s->dir);
    free(s);
    return rc;
}

/* What `f` got since the last call (and forget it). */
static char *drain(FILE *f)
{
    static char bufs[2][16384];
    static int k;
    char *buf = bufs[k++ % 2];
    fflush(f);
    rewind(f);
    size_t n = fread(buf, 1, sizeof(bufs[0]) - 1, f);
    buf[n] = '\0';
    rewind(f);
    if (ftruncate(fileno(f), 0) != 0)
        fail_msg("ftruncate");
    return buf;
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_clients_and_output(void **state)
{
    struct st *s = *state;
    char hs[128], ac[160], torrc[128], text[512], line[512];
    snprintf(hs, sizeof(hs), "%s/web", s->dir);
    snprintf(ac, sizeof(ac), "%s/authorized_clients", hs);
    assert_int_equal(mkdir(hs, 0700), 0);
    assert_int_equal(mkdir(ac, 0700), 0);
    put(ac, "Alice.auth", "descriptor:x25519:" KEY_A "\n");
    put(ac, "bob.auth", "descriptor:x25519:" KEY_B);
    put(ac, "typo.auth", "descriptor:x25519:TOOSHORT\n");
    put(ac, "notes.txt", "hello");
    snprintf(torrc, sizeof(torrc), "%s/torrc", s->dir);
    snprintf(text, sizeof(text),
             "HiddenServiceNonAnonymousMode 1\nHiddenServiceSingleHopMode 1\nHiddenServiceDir %s\n"
             "HiddenServicePort 80 8080\nSocksPort 0\n",
             hs);
    put(s->dir, "torrc", text);

    assert_int_equal(torrc_cmd_import(torrc, s->out, s->err), 0);
    json_error_t je;
    json_t *c = json_loads(drain(s->out), 0, &je);
    if (!c)
        fail_msg("stdout is not JSON: %s", je.text);
    json_t *svc = json_array_get(json_object_get(c, "services"), 0);
    assert_string_equal(json_string_value(json_object_get(svc, "mode")), "single");
    json_t *clients = json_object_get(svc, "client_auth");
    assert_int_equal(json_array_size(clients), 2);
    /* readdir's order: find each */
    int seen = 0;
    size_t i;
    json_t *cl;
    json_array_foreach(clients, i, cl) {
        const char *n = json_string_value(json_object_get(cl, "name"));
        const char *k = json_string_value(json_object_get(cl, "public_key"));
        if (strcmp(n, "alice") == 0 && strcasecmp(k, KEY_A) == 0 && strcmp(k, KEY_A) != 0)
            seen |= 1; /* upper case, as tor writes it */
        if (strcmp(n, "bob") == 0 && strcmp(k, KEY_B) == 0)
            seen |= 2;
    }
    assert_int_equal(seen, 3);
    json_decref(c);

    const char *e = drain(s->err);
    /* every stderr line is a comment */
    for (const char *p = e; *p;) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        if (*p != '#')
            fail_msg("a stderr line that is not a comment: %.*s", (int)(nl - p), p);
        p = nl + 1;
    }
    assert_non_null(strstr(e, "typo.auth: not one \"descriptor:x25519:<key>\" line, tor ignores it"));
    assert_non_null(strstr(e, "notes.txt: not a .auth file, tor ignores it"));
    assert_non_null(strstr(e, "SocksPort 0: not carried over"));
    snprintf(line, sizeof(line), "#   onionfront import-key web %s --torrc %s\n", hs, torrc);
    assert_non_null(strstr(e, line));
}

static void test_failures(void **state)
{
    struct st *s = *state;
    char torrc[128], text[256];
    snprintf(torrc, sizeof(torrc), "%s/torrc", s->dir);

    /* a HiddenServiceDir that cannot be read: its clients cannot be known, so no config at all */
    snprintf(text, sizeof(text), "HiddenServiceDir %s/gone\nHiddenServicePort 80\n", s->dir);
    put(s->dir, "torrc", text);
    assert_int_equal(torrc_cmd_import(torrc, s->out, s->err), 1);
    assert_string_equal(drain(s->out), "");
    assert_non_null(strstr(drain(s->err), "a private service must not become public"));

    /* nothing to carry over */
    put(s->dir, "torrc", "SocksPort 9050\n");
    assert_int_equal(torrc_cmd_import(torrc, s->out, s->err), 1);
    assert_string_equal(drain(s->out), "");
    assert_non_null(strstr(drain(s->err), "no onion service (a HiddenServiceDir with a HiddenServicePort)"));

    /* no torrc */
    snprintf(torrc, sizeof(torrc), "%s/nope", s->dir);
    assert_int_equal(torrc_cmd_import(torrc, s->out, s->err), 1);
    assert_non_null(strstr(drain(s->err), "nope: no such file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clients_and_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
