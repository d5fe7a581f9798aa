/* test_keycmd.c — unit tests for sidecar/cli/keycmd.c: `onionfront new-key`, `export-key`, `import-key`.
 *
 * Why: these are the only ways a service's address may change, and export-key writes a secret: it must
 * never land on a terminal, in an existing file or through a symlink, nor with loose permissions.
 *
 * Covers: new-key replaces the key, keeps the old one aside, records old -> new as "new-key" and prints
 * the new address; export-key writes tor's 96-byte format 0600, refuses an existing file, a symlink and a
 * terminal, and "-" writes to a pipe; export -> import into a fresh state directory gives the same
 * address and records it as "import-key"; import of a directory; import over a different key refused;
 * an unknown service and a corrupt record refused with clear messages; export-key before the first start
 * says what to do and creates nothing; no key bytes in any output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/identity/addrbook.h"
#include "sidecar/cli/keycmd.h"
#include "sidecar/identity/keys.h"
#include "tests/fake/tmpdir.h"

struct st {
    char dir[64];
    char conf[128], conf2[128]; /* two configs: state and state2 */
    FILE *out, *err;
};

static void write_conf(const char *path, const char *dir, const char *state)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"state_dir\": \"%s/%s\", \"run_dir\": \"%s/run\", \"services\": [{\"name\": \"web\", \"ports\": "
            "[{\"virtual\": 80, \"target\": \"127.0.0.1:8080\"}]}]}",
            dir, state, dir);
    fclose(f);
}

static int setup(void **state)
{
    struct st *s = calloc(1, sizeof(*s));
    if (!s || tmpdir_make(s->dir, sizeof(s->dir), "test_keycmd") < 0)
        return -1;
    snprintf(s->conf, sizeof(s->conf), "%s/a.json", s->dir);
    snprintf(s->conf2, sizeof(s->conf2), "%s/b.json", s->dir);
    write_conf(s->conf, s->dir, "state");
    write_conf(s->conf2, s->dir, "state2");
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
static const char *drain(FILE *f)
{
    static char buf[8192];
    fflush(f);
    rewind(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    rewind(f);
    assert_int_equal(ftruncate(fileno(f), 0), 0);
    return buf;
}

static void assert_has(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("\"%s\" lacks \"%s\"", text, want);
}

/* The address the record of `state` has for web, copied to `out` ("" if none). */
static void recorded(const struct st *s, const char *state, char *out, size_t *count)
{
    char dir[128], err[1024];
    snprintf(dir, sizeof(dir), "%s/%s", s->dir, state);
    struct addrbook *b = addrbook_load(dir, err, sizeof(err));
    if (!b)
        fail_msg("%s", err);
    const char *a = addrbook_address(b, "web");
    snprintf(out, ONION_ADDRESS_SIZE, "%s", a ? a : "");
    if (count)
        *count = addrbook_count(b, "web");
    addrbook_free(b);
}

/* web's key in `state`: its address into `out`. */
static void key_address(const struct st *s, const char *state, char *out)
{
    char dir[160], err[1024];
    struct onion_key k;
    snprintf(dir, sizeof(dir), "%s/%s/keys/web", s->dir, state);
    if (keys_load(dir, &k, err, sizeof(err)) < 0)
        fail_msg("%s", err);
    memcpy(out, k.address, ONION_ADDRESS_SIZE);
    onion_key_clear(&k);
}

/* The key commands hold the secret key in memory: each makes itself undumpable with no core file first,
 * as the daemon does (proc_protect_secrets). The process is made dumpable again before each command. */
static void test_key_commands_protect_memory(void **state)
{
    struct st *s = *state;
    char file[160];
    snprintf(file, sizeof(file), "%s/web.key", s->dir);
    for (int cmd = 0; cmd < 3; cmd++) {
        struct rlimit core;
        assert_int_equal(getrlimit(RLIMIT_CORE, &core), 0);
        core.rlim_cur = core.rlim_max;
        assert_int_equal(setrlimit(RLIMIT_CORE, &core), 0);
        assert_int_equal(prctl(PR_SET_DUMPABLE, 1), 0);
        int rc = cmd == 0   ? keycmd_new_key(s->conf, "web", s->out, s->err)
                 : cmd == 1 ? keycmd_export_key(s->conf, "web", file, s->out, s->err)
                            : keycmd_new_key(s->conf, "nope", s->out, s->err);
        assert_int_equal(rc, cmd == 2 ? 1 : 0);
        drain(s->out);
        drain(s->err);
        if (cmd == 2)
            continue; /* an unknown service: refused before any key is read */
        assert_int_equal(prctl(PR_GET_DUMPABLE), 0);
        assert_int_equal(getrlimit(RLIMIT_CORE, &core), 0);
        assert_int_equal(core.rlim_cur, 0);
    }
}

static void test_new_key(void **state)
{
    struct st *s = *state;
    char a1[ONION_ADDRESS_SIZE], a2[ONION_ADDRESS_SIZE], r[ONION_ADDRESS_SIZE];
    size_t n;
    /* first: web has no key and no record yet -> created and recorded */
    assert_int_equal(keycmd_new_key(s->conf, "web", s->out, s->err), 0);
    key_address(s, "state", a1);
    assert_has(drain(s->out), a1);
    recorded(s, "state", r, &n);
    assert_string_equal(r, a1);
    assert_int_equal(n, 1);
    /* again: a new address, the old key kept aside, the change recorded */
    assert_int_equal(keycmd_new_key(s->conf, "web", s->out, s->err), 0);
    key_address(s, "state", a2);
    assert_string_not_equal(a1, a2);
    const char *o = drain(s->out);
    assert_has(o, a1);
    assert_has(o, a2);
    assert_has(o, "changed address on purpose");
    assert_has(o, ".replaced-");
    recorded(s, "state", r, &n);
    assert_string_equal(r, a2);
    assert_int_equal(n, 2);
    /* unknown service */
    assert_int_equal(keycmd_new_key(s->conf, "nope", s->out, s->err), 1);
    assert_has(drain(s->err), "no service named \"nope\"");
}

static void test_export_import_round_trip(void **state)
{
    struct st *s = *state;
    char a[ONION_ADDRESS_SIZE], b[ONION_ADDRESS_SIZE], file[128], link_path[128], r[ONION_ADDRESS_SIZE];
    struct stat st;
    size_t n;
    assert_int_equal(keycmd_new_key(s->conf, "web", s->out, s->err), 0);
    drain(s->out);
    key_address(s, "state", a);

    snprintf(file, sizeof(file), "%s/web.key", s->dir);
    mode_t old = umask(0);
    assert_int_equal(keycmd_export_key(s->conf, "web", file, s->out, s->err), 0);
    umask(old);
    const char *o = drain(s->out);
    assert_has(o, a);
    assert_has(o, "0600");
    assert_int_equal(lstat(file, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_size, KEYS_SECRET_FILE_LEN);

    /* never over an existing file, nor through a symlink */
    assert_int_equal(keycmd_export_key(s->conf, "web", file, s->out, s->err), 1);
    assert_has(drain(s->err), "exists already");
    snprintf(link_path, sizeof(link_path), "%s/link.key", s->dir);
    char target[128];
    snprintf(target, sizeof(target), "%s/target", s->dir);
    assert_int_equal(symlink(target, link_path), 0);
    assert_int_equal(keycmd_export_key(s->conf, "web", link_path, s->out, s->err), 1);
    assert_int_equal(lstat(target, &st), -1); /* nothing written where the link points */

    /* into a fresh state directory: the same address, recorded as imported */
    assert_int_equal(keycmd_import_key(s->conf2, "web", file, s->out, s->err), 0);
    o = drain(s->out);
    assert_has(o, a);
    key_address(s, "state2", b);
    assert_string_equal(a, b);
    recorded(s, "state2", r, &n);
    assert_string_equal(r, a);
    assert_int_equal(n, 1);
    /* again: idempotent, no second entry */
    assert_int_equal(keycmd_import_key(s->conf2, "web", file, s->out, s->err), 0);
    recorded(s, "state2", r, &n);
    assert_int_equal(n, 1);

    /* a different key over it: refused, the key stays */
    assert_int_equal(keycmd_new_key(s->conf, "web", s->out, s->err), 0);
    drain(s->out);
    char dir[160];
    snprintf(dir, sizeof(dir), "%s/state/keys/web", s->dir);
    assert_int_equal(keycmd_import_key(s->conf2, "web", dir, s->out, s->err), 1);
    assert_has(drain(s->err), "different key");
    key_address(s, "state2", b);
    assert_string_equal(a, b);

    /* a directory import into the first state brings the first address back, on purpose */
    snprintf(dir, sizeof(dir), "%s/state/keys/web", s->dir);
    char moved[192];
    snprintf(moved, sizeof(moved), "%s/moved", s->dir);
    assert_int_equal(rename(dir, moved), 0);
    char src2[160];
    snprintf(src2, sizeof(src2), "%s/state2/keys/web", s->dir);
    assert_int_equal(keycmd_import_key(s->conf, "web", src2, s->out, s->err), 0);
    assert_has(drain(s->out), "changed address on purpose");
    recorded(s, "state", r, &n);
    assert_string_equal(r, a);
    assert_int_equal(n, 3); /* new-key, new-key, import-key */

    /* no key bytes anywhere in what was printed */
    assert_null(strstr(drain(s->err), "ed25519v1-secret"));
}

static void test_export_to_stdout(void **state)
{
    struct st *s = *state;
    assert_int_equal(keycmd_new_key(s->conf, "web", s->out, s->err), 0);
    drain(s->out);
    /* a regular file (as a pipe or redirect) is fine: 96 bytes, the note on the error stream */
    assert_int_equal(keycmd_export_key(s->conf, "web", "-", s->out, s->err), 0);
    fflush(s->out);
    assert_int_equal(ftell(s->out), KEYS_SECRET_FILE_LEN);
    drain(s->out);
    assert_has(drain(s->err), "standard output");
    /* a terminal is refused */
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(master >= 0);
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    assert_true(slave >= 0);
    FILE *tty = fdopen(slave, "w");
    assert_non_null(tty);
    assert_int_equal(keycmd_export_key(s->conf, "web", "-", tty, s->err), 1);
    assert_has(drain(s->err), "terminal");
    fclose(tty);
    close(master);
}

/* Copy `name` from directory `from` to `to` (tor's layout, without onionfront's marker). */
static void copy_file(const char *from, const char *to, const char *name)
{
    char a[256], b[256], buf[256];
    snprintf(a, sizeof(a), "%s/%s", from, name);
    snprintf(b, sizeof(b), "%s/%s", to, name);
    FILE *in = fopen(a, "rb"), *out = fopen(b, "wb");
    assert_non_null(in);
    assert_non_null(out);
    size_t n = fread(buf, 1, sizeof(buf), in);
    assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
    assert_int_equal(chmod(b, 0600), 0);
}

/* import-key of a directory tor used (authorized_clients/, no marker: a v3 directory never has one):
 * the torrc it ran under decides; the operator's word counts, but never against that torrc. */
static void test_import_evidence(void **state)
{
    struct st *s = *state;
    char key[128], tor[128], torrc[160], other[160], a[ONION_ADDRESS_SIZE], r[ONION_ADDRESS_SIZE];
    assert_int_equal(keycmd_new_key(s->conf, "web", s->out, s->err), 0);
    key_address(s, "state", a);
    snprintf(key, sizeof(key), "%s/state/keys/web", s->dir);
    snprintf(tor, sizeof(tor), "%s/tor-web", s->dir);
    assert_int_equal(mkdir(tor, 0700), 0);
    copy_file(key, tor, "hs_ed25519_secret_key");
    copy_file(key, tor, "hs_ed25519_public_key");
    copy_file(key, tor, "hostname");
    char ac[160];
    snprintf(ac, sizeof(ac), "%s/authorized_clients", tor);
    assert_int_equal(mkdir(ac, 0700), 0);
    drain(s->out);

    /* no evidence: refused, with the ways forward */
    assert_int_equal(keycmd_import_key(s->conf2, "web", tor, s->out, s->err), 1);
    const char *e = drain(s->err);
    assert_has(e, "nothing shows that it ran as one");
    assert_has(e, "\"mode\": \"anonymous\"");
    assert_has(e, "new-key");
    assert_has(e, "--torrc");

    /* the torrc of an ordinary hidden service: refused, saying so */
    snprintf(torrc, sizeof(torrc), "%s/anon.torrc", s->dir);
    FILE *f = fopen(torrc, "w");
    fprintf(f, "HiddenServiceDir %s/\nHiddenServicePort 80\n", tor);
    fclose(f);
    struct keycmd_import_opts o = {.torrc = torrc};
    assert_int_equal(keycmd_import_key_opts(s->conf2, "web", tor, &o, s->out, s->err), 1);
    assert_has(drain(s->err), "the torrc it ran under ran it as an ordinary (anonymous) hidden service");
    o.vouch_single = true; /* the operator's word does not beat the torrc */
    assert_int_equal(keycmd_import_key_opts(s->conf2, "web", tor, &o, s->out, s->err), 1);
    assert_has(drain(s->err), "would show where that hidden service is");

    /* a torrc that does not list the directory shows nothing */
    snprintf(other, sizeof(other), "%s/other.torrc", s->dir);
    f = fopen(other, "w");
    fprintf(f, "HiddenServiceNonAnonymousMode 1\nHiddenServiceSingleHopMode 1\nHiddenServiceDir /elsewhere\n"
               "HiddenServicePort 80\n");
    fclose(f);
    o = (struct keycmd_import_opts){.torrc = other};
    assert_int_equal(keycmd_import_key_opts(s->conf2, "web", tor, &o, s->out, s->err), 1);
    assert_has(drain(s->err), "has no HiddenServiceDir");
    char st2[128];
    snprintf(st2, sizeof(st2), "%s/state2/keys/web", s->dir);
    assert_int_equal(access(st2, F_OK), -1);

    /* the torrc of a single onion: imported, recorded, the source untouched */
    f = fopen(torrc, "w");
    fprintf(f, "HiddenServiceSingleHopMode 1\nHiddenServiceNonAnonymousMode 1\nHiddenServiceDir %s\n"
               "HiddenServicePort 80\n", tor);
    fclose(f);
    o = (struct keycmd_import_opts){.torrc = torrc};
    assert_int_equal(keycmd_import_key_opts(s->conf2, "web", tor, &o, s->out, s->err), 0);
    assert_has(drain(s->out), a);
    recorded(s, "state2", r, NULL);
    assert_string_equal(r, a);
    char marker[192];
    snprintf(marker, sizeof(marker), "%s/onion_service_non_anonymous", tor);
    assert_int_equal(access(marker, F_OK), -1);

    /* the operator's word alone: into a third state */
    char conf3[160];
    snprintf(conf3, sizeof(conf3), "%s/c.json", s->dir);
    write_conf(conf3, s->dir, "state3");
    o = (struct keycmd_import_opts){.vouch_single = true};
    assert_int_equal(keycmd_import_key_opts(conf3, "web", tor, &o, s->out, s->err), 0);
    assert_has(drain(s->err), "on your word (--i-know-it-was-a-single-onion)");
    drain(s->out);
}

static void test_refusals(void **state)
{
    struct st *s = *state;
    char file[128], p[128];
    /* export of a service without a key (before the first start): what to do, and nothing made */
    snprintf(file, sizeof(file), "%s/none.key", s->dir);
    assert_int_equal(keycmd_export_key(s->conf, "web", file, s->out, s->err), 1);
    const char *e = drain(s->err);
    assert_has(e, "export-key: service web has no key yet");
    assert_has(e, "start onionfront with it once, or give it one with onionfront new-key web");
    snprintf(p, sizeof(p), "%s/state", s->dir);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(access(file, F_OK), -1);
    /* import of something that is not a key file */
    snprintf(p, sizeof(p), "%s/junk", s->dir);
    FILE *f = fopen(p, "w");
    fputs("not a key", f);
    fclose(f);
    assert_int_equal(keycmd_import_key(s->conf, "web", p, s->out, s->err), 1);
    assert_has(drain(s->err), p);
    snprintf(p, sizeof(p), "%s/missing", s->dir);
    assert_int_equal(keycmd_import_key(s->conf, "web", p, s->out, s->err), 1);
    assert_has(drain(s->err), p);
    /* a failed import made nothing */
    snprintf(p, sizeof(p), "%s/state", s->dir);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(mkdir(p, 0700), 0);
    /* a corrupt record: refused before any key is touched */
    snprintf(p, sizeof(p), "%s/state/%s", s->dir, ADDRBOOK_FILE);
    f = fopen(p, "w");
    fputs("{", f);
    fclose(f);
    assert_int_equal(keycmd_new_key(s->conf, "web", s->out, s->err), 1);
    assert_has(drain(s->err), p);
    struct stat st;
    snprintf(p, sizeof(p), "%s/state/keys/web", s->dir);
    assert_int_equal(stat(p, &st), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_commands_protect_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_import_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_to_stdout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_evidence, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
