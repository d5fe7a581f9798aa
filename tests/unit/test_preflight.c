/* test_preflight.c — unit tests for sidecar/cli/preflight.c: what a start needs beyond the config file, with
 * real files in a private temporary directory, fake tor binaries (shell scripts answering --version and
 * --list-modules) and a fake control port (fake_ctl) for attach mode.
 *
 * Why: `onionfront check-config` is run before every start (the systemd unit's ExecStartPre) and must
 * catch what the start would trip over later — after it had made a key — and must never make one itself.
 *
 * Covers, as a table (config, what is on disk, the user) -> the problems' field paths and causes:
 * tor.binary missing, not executable, not a tor, without the pow module or too old for PoW; tor.user
 * unknown, and tor.user without root; attach mode's control socket missing, not a socket, silent, and
 * answering; key directories: a v2 one (named as v2), an incomplete one, a single onion's for an
 * anonymous service, a recorded service whose key is gone (refused: a problem for check-config, not one
 * that stops a start); directories that cannot be made (state_dir's parent missing, onion_location.dir's
 * parent missing, status.socket's directory missing) or are too open (run_dir 0755); an Onionbalance
 * frontend without Onionbalance installed (its path is fixed, so only when it is absent here); listeners
 * and health checks over RLIMIT_NOFILE's hard limit, and 512 services under it. Every
 * problem is reported in one run. And it touches nothing: after a run on a fresh state_dir and an
 * unused (mkp224o-like) key directory, no directory, key, marker or address record exists that did not
 * before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <event2/event.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/identity/addrbook.h"
#include "sidecar/config/config.h"
#include "sidecar/core/fdbudget.h"
#include "sidecar/identity/keys.h"
#include "sidecar/balance/ob_frontend.h"
#include "sidecar/cli/preflight.h"
#include "tests/fake/fake_ctl.h"
#include "tests/fake/tmpdir.h"
#include "tests/fake/tor_script.h"

struct ctx {
    char dir[256];
    rlim_t nofile_hard; /* preflight_opts.nofile_hard: 0 = the process's */
    struct preflight pf;
};

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    assert_int_equal(tmpdir_make(c->dir, sizeof(c->dir), "test_preflight"), 0);
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

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

/* A fake tor at <dir>/<name>: --version says `version`, --list-modules says pow `pow` ("yes"/"no"). */
static void fake_tor(const struct ctx *c, const char *name, const char *version, const char *pow)
{
    char path[400], text[512];
    snprintf(path, sizeof(path), "%s/%s", c->dir, name);
    snprintf(text, sizeof(text),
             "#!/bin/sh\ncase \"$1\" in\n--version) echo 'Tor version %s.' ;;\n"
             "--list-modules) printf 'relay: yes\\ndirauth: yes\\ndircache: yes\\npow: %s\\n' ;;\n"
             "*) exit 1 ;;\nesac\n",
             version, pow);
    write_file(path, text, 0755);
}

/* Replace each "@D@" in `tmpl` with the test directory and "'" with '"', and load it. */
static struct config *load(const struct ctx *c, const char *tmpl)
{
    char json[4096], err[1024];
    size_t o = 0;
    for (const char *s = tmpl; *s && o < sizeof(json) - 300; s++) {
        if (strncmp(s, "@D@", 3) == 0) {
            o += (size_t)snprintf(json + o, sizeof(json) - o, "%s", c->dir);
            s += 2;
        } else {
            json[o++] = *s == '\'' ? '"' : *s;
        }
    }
    json[o] = '\0';
    struct config *conf = config_load_string(json, o, err, sizeof(err));
    if (!conf)
        fail_msg("config: %s\n%s", err, json);
    return conf;
}

/* Run the check; return the problems as one text, "\n"-separated. */
static const char *run(struct ctx *c, const struct config *conf, enum preflight_scope scope, uid_t euid,
                       struct event_base *base)
{
    static char all[PREFLIGHT_MAX_PROBLEMS * PREFLIGHT_PROBLEM_MAX];
    struct preflight_opts o = {
        .scope = scope, .euid = euid, .base = base, .control_timeout_ms = 300, .nofile_hard = c->nofile_hard};
    size_t n = preflight_run(conf, &o, &c->pf);
    size_t used = 0;
    all[0] = '\0';
    for (size_t i = 0; i < n && i < PREFLIGHT_MAX_PROBLEMS; i++)
        used += (size_t)snprintf(all + used, sizeof(all) - used, "%s\n", c->pf.problems[i]);
    return all;
}

static void assert_has(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("missing \"%s\" in:\n%s", want, text);
}

#define SPAWN(tor) "{'state_dir':'@D@/state','run_dir':'@D@/run','tor':{" tor "},"
#define SVC(extra) "{'name':'web'" extra ",'ports':[{'virtual':80,'target':'127.0.0.1:8080'}]}"
#define POW ",'dos':{'pow':{'enabled':true}}"

/* tor.binary and tor.user (spawn mode): each case one config and its expected problems. */
static void test_tor(void **state)
{
    struct ctx *c = *state;
    fake_tor(c, "tor", "0.4.9.11", "yes");
    fake_tor(c, "tor-nopow", "0.4.9.11", "no");
    fake_tor(c, "tor-old", "0.4.8.1", "yes");
    char path[400];
    snprintf(path, sizeof(path), "%s/not-exec", c->dir);
    write_file(path, "#!/bin/sh\necho 'Tor version 0.4.9.11.'\n", 0644);
    snprintf(path, sizeof(path), "%s/not-tor", c->dir);
    write_file(path, "#!/bin/sh\necho hello\n", 0755);
    static const struct {
        const char *json;
        uid_t euid;
        const char *want[3]; /* substrings, in the problems' text; none: no problem */
    } cases[] = {
        {SPAWN("'binary':'@D@/tor'") "'services':[" SVC(POW) "]}", 0, {NULL}},
        {SPAWN("'binary':'@D@/tor','user':'root'") "'services':[" SVC("") "]}", 0, {NULL}},
        {SPAWN("'binary':'@D@/missing'") "'services':[" SVC("") "]}", 0,
         {"tor.binary: @D@/missing does not exist: install tor"}},
        {SPAWN("'binary':'@D@/not-exec'") "'services':[" SVC("") "]}", 0,
         {"tor.binary: @D@/not-exec is not an executable file"}},
        {SPAWN("'binary':'@D@/not-tor'") "'services':[" SVC("") "]}", 0,
         {"tor.binary: @D@/not-tor does not run as a tor: tor --version did not start with"}},
        {SPAWN("'binary':'@D@/tor-nopow'") "'services':[" SVC("") "]}", 0, {NULL}}, /* PoW not asked */
        {SPAWN("'binary':'@D@/tor-nopow'") "'services':[" SVC(POW) "]}", 0,
         {"services[0].dos.pow.enabled: this tor (0.4.9.11) was built without the pow module"}},
        {SPAWN("'binary':'@D@/tor-old'") "'services':[" SVC("") ",{'name':'b'" POW
               ",'ports':[{'virtual':80,'target':'127.0.0.1:8081'}]}]}", 0,
         {"services[1].dos.pow.enabled: needs tor 0.4.9.9 or later", "this tor is 0.4.8.1"}},
        {SPAWN("'binary':'@D@/tor','user':'no-such-user-preflight'") "'services':[" SVC("") "]}", 0,
         {"tor.user: there is no user named \"no-such-user-preflight\""}},
        {SPAWN("'binary':'@D@/tor','user':'root'") "'services':[" SVC("") "]}", 1000,
         {"tor.user: \"root\" needs onionfront to run as root", "but it runs as uid 1000",
          "remove tor.user"}},
        /* both at once, and the binary too: every problem in one run */
        {SPAWN("'binary':'@D@/missing','user':'no-such-user-preflight'") "'services':[" SVC("") "]}", 1000,
         {"tor.binary: @D@/missing does not exist", "tor.user: there is no user named",
          "tor.user: \"no-such-user-preflight\" needs onionfront to run as root"}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct config *conf = load(c, cases[i].json);
        const char *got = run(c, conf, PREFLIGHT_ALL, cases[i].euid, NULL);
        size_t want = 0;
        for (size_t k = 0; k < 3 && cases[i].want[k]; k++, want++) {
            char w[600];
            /* "@D@" in an expectation is the test directory */
            const char *at = strstr(cases[i].want[k], "@D@");
            if (at)
                snprintf(w, sizeof(w), "%.*s%s%s", (int)(at - cases[i].want[k]), cases[i].want[k], c->dir, at + 3);
            else
                snprintf(w, sizeof(w), "%s", cases[i].want[k]);
            assert_has(got, w);
        }
        if (want == 0 && got[0])
            fail_msg("case %zu: unexpected problems:\n%s", i, got);
        /* the start sees the same: these all stop it */
        assert_string_equal(run(c, conf, PREFLIGHT_START, cases[i].euid, NULL), got);
        config_free(conf);
    }
}

#define ATTACH(sock) "{'state_dir':'@D@/state','run_dir':'@D@/run','tor':{'mode':'attach','control_socket':'" sock "'},"

static struct fake_ctl *ctl_for_done;
static bool ctl_done(void *arg)
{
    (void)arg;
    return fake_ctl_done(ctl_for_done);
}

/* attach mode: the control socket exists, is a socket, and tor answers on it (check-config only). */
static void test_attach(void **state)
{
    struct ctx *c = *state;
    char err[256], json[600];
    signal(SIGPIPE, SIG_IGN);
    struct config *conf = load(c, ATTACH("@D@/nope") "'services':[" SVC("") "]}");
    assert_has(run(c, conf, PREFLIGHT_ALL, 0, NULL), "tor.control_socket: ");
    assert_has(run(c, conf, PREFLIGHT_ALL, 0, NULL), "/nope does not exist: is tor running, with \"ControlSocket");
    /* tor may come later: the daemon waits for it (tor.c), so that does not stop a start */
    assert_string_equal(run(c, conf, PREFLIGHT_START, 0, NULL), "");
    config_free(conf);

    char path[400];
    snprintf(path, sizeof(path), "%s/file", c->dir);
    write_file(path, "", 0600);
    conf = load(c, ATTACH("@D@/file") "'services':[" SVC("") "]}");
    assert_has(run(c, conf, PREFLIGHT_ALL, 0, NULL), "/file is not a socket");
    config_free(conf);

    /* a tor that answers PROTOCOLINFO and takes NULL authentication */
    struct event_base *base = event_base_new();
    static const struct fake_ctl_step good[] = {
        {FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0},
        {FAKE_CTL_SEND, PROTOCOLINFO_NULL, 0},
        {FAKE_CTL_EXPECT, "AUTHENTICATE", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        {FAKE_CTL_EXPECT_EOF, NULL, 0},
    };
    struct fake_ctl *f = fake_ctl_new(base, false, good, sizeof(good) / sizeof(good[0]), err, sizeof(err));
    assert_non_null(f);
    snprintf(json, sizeof(json), ATTACH("%s") "'services':[" SVC("") "]}", fake_ctl_unix_path(f));
    conf = load(c, json);
    assert_string_equal(run(c, conf, PREFLIGHT_ALL, 0, base), "");
    ctl_for_done = f;
    assert_int_equal(fake_ctl_run_until(base, ctl_done, NULL, 5000), 0); /* and it hung up */
    assert_null(fake_ctl_failure(f));
    config_free(conf);
    fake_ctl_free(f);

    /* one that accepts but never answers: the deadline */
    static const struct fake_ctl_step silent[] = {
        {FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0},
        {FAKE_CTL_EXPECT_EOF, NULL, 0},
    };
    f = fake_ctl_new(base, false, silent, sizeof(silent) / sizeof(silent[0]), err, sizeof(err));
    assert_non_null(f);
    snprintf(json, sizeof(json), ATTACH("%s") "'services':[" SVC("") "]}", fake_ctl_unix_path(f));
    conf = load(c, json);
    const char *got = run(c, conf, PREFLIGHT_ALL, 0, base);
    assert_has(got, "tor.control_socket: tor does not answer on ");
    assert_has(got, "debian-tor");
    config_free(conf);
    fake_ctl_free(f);
    event_base_free(base);
}

/* Make a valid single-onion key in `dir` (0700), as onionfront would. Its address into `address`. */
static void make_key(const char *dir, char *address)
{
    struct onion_key k;
    char err[512];
    bool created;
    if (keys_load_or_create_mode(dir, SERVICE_MODE_SINGLE, &k, &created, err, sizeof(err)) < 0)
        fail_msg("%s", err);
    if (address)
        snprintf(address, ONION_ADDRESS_SIZE, "%s", k.address);
    onion_key_clear(&k);
}

/* Key directories: the rule of service_id.c, looked at only. */
static void test_keys(void **state)
{
    struct ctx *c = *state;
    char path[400], sub[450], address[ONION_ADDRESS_SIZE], err[512];
    fake_tor(c, "tor", "0.4.9.11", "yes");
    snprintf(path, sizeof(path), "%s/state", c->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/state/keys", c->dir);
    assert_int_equal(mkdir(path, 0700), 0);

    /* a v2 service's directory (tor <= 0.4.5): private_key and a 16-character hostname */
    snprintf(path, sizeof(path), "%s/v2", c->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(sub, sizeof(sub), "%s/private_key", path);
    write_file(sub, "-----BEGIN RSA PRIVATE KEY-----\n", 0600);
    snprintf(sub, sizeof(sub), "%s/hostname", path);
    write_file(sub, "abcdefghijklmnop.onion\n", 0600);
    /* a copy that lost its secret key: hostname alone */
    snprintf(path, sizeof(path), "%s/partial", c->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(sub, sizeof(sub), "%s/hostname", path);
    write_file(sub, "x.onion\n", 0600);
    /* a single onion's key (with the marker) */
    snprintf(path, sizeof(path), "%s/single", c->dir);
    make_key(path, NULL);
    /* a readable key the record does not know: fine */
    snprintf(path, sizeof(path), "%s/state/keys/known", c->dir);
    make_key(path, address);
    /* the record knows "gone", whose key directory is empty */
    snprintf(path, sizeof(path), "%s/state", c->dir);
    struct addrbook *book = addrbook_load(path, err, sizeof(err));
    assert_non_null(book);
    assert_int_equal(addrbook_note_key(book, "gone", address, ADDRBOOK_CREATED, SERVICE_MODE_SINGLE, time(NULL), err,
                                       sizeof(err)),
                     1);
    assert_int_equal(addrbook_save(book, err, sizeof(err)), 0);
    addrbook_free(book);

    struct config *conf =
        load(c, SPAWN("'binary':'@D@/tor'") "'services':["
                "{'name':'a','key_dir':'@D@/v2','ports':[{'virtual':80,'target':'127.0.0.1:8080'}]},"
                "{'name':'b','key_dir':'@D@/partial','ports':[{'virtual':80,'target':'127.0.0.1:8080'}]},"
                "{'name':'c','mode':'anonymous','key_dir':'@D@/single','ports':[{'virtual':80,'target':'127.0.0.1:8080'}]},"
                "{'name':'known','ports':[{'virtual':80,'target':'127.0.0.1:8080'}]},"
                "{'name':'gone','ports':[{'virtual':80,'target':'127.0.0.1:8080'}]},"
                "{'name':'new','ports':[{'virtual':80,'target':'127.0.0.1:8080'}]}]}");
    const char *got = run(c, conf, PREFLIGHT_ALL, 0, NULL);
    assert_has(got, "services[0].key_dir: service a: ");
    assert_has(got, "/v2 is a v2 onion service's key directory (private_key: an address of 16 characters)");
    assert_has(got, "Give the service a key directory of its own");
    assert_has(got, "services[1].key_dir: service b: ");
    assert_has(got, "/partial/hs_ed25519_secret_key: missing, but ");
    assert_has(got, "/partial/hostname exists");
    assert_has(got, "remove hostname from ");
    if (strstr(got, "remove hs_ed25519_public_key"))
        fail_msg("names a file that is not there:\n%s", got);
    assert_has(got, "services[2].key_dir: service c: ");
    assert_has(got, ".onion as an anonymous service: this directory was a single onion service's");
    assert_has(got, "services[4].key_dir: service gone: REFUSED: its key is missing");
    if (strstr(got, "services[3]") || strstr(got, "services[5]"))
        fail_msg("a usable or missing-but-new key directory is a problem:\n%s", got);
    assert_int_equal(c->pf.n, 4);
    /* at start, a refused service does not stop the others: only the three new services' directories do */
    got = run(c, conf, PREFLIGHT_START, 0, NULL);
    assert_int_equal(c->pf.n, 3);
    if (strstr(got, "service gone"))
        fail_msg("a refused service stops the start:\n%s", got);
    config_free(conf);
}

/* The directories onionfront makes, and the Onionbalance frontend. */
static void test_dirs(void **state)
{
    struct ctx *c = *state;
    char path[400];
    fake_tor(c, "tor", "0.4.9.11", "yes");
    snprintf(path, sizeof(path), "%s/run", c->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(chmod(path, 0755), 0);
    struct config *conf =
        load(c, "{'state_dir':'@D@/no/state','run_dir':'@D@/run','tor':{'binary':'@D@/tor'},"
                "'status':{'socket':'@D@/nodir/status.sock'},"
                "'onion_location':{'dir':'@D@/none/ol'},"
                "'services':[" SVC("") "]}");
    const char *got = run(c, conf, PREFLIGHT_ALL, 0, NULL);
    assert_has(got, "state_dir: ");
    assert_has(got, "/no/state does not exist, and cannot be made: its parent ");
    assert_has(got, "run_dir: ");
    assert_has(got, "/run: directory mode 0755 gives group/other access");
    assert_has(got, "status.socket: its directory ");
    assert_has(got, "/nodir does not exist");
    assert_has(got, "onion_location.dir: ");
    assert_has(got, "/none/ol does not exist, and cannot be made");
    config_free(conf);

    /* a plain file where onion_location.dir should be */
    snprintf(path, sizeof(path), "%s/olfile", c->dir);
    write_file(path, "", 0600);
    conf = load(c, "{'state_dir':'@D@/state','run_dir':'@D@/run2','tor':{'binary':'@D@/tor'},"
                   "'onion_location':{'dir':'@D@/olfile'},'services':[" SVC("") "]}");
    got = run(c, conf, PREFLIGHT_ALL, 0, NULL);
    assert_has(got, "onion_location.dir: ");
    assert_has(got, "/olfile exists and is not a directory");
    assert_int_equal(c->pf.n, 1);
    config_free(conf);

    if (access(OB_FRONTEND_BINARY, X_OK) == 0)
        return; /* installed here: its absence cannot be shown */
    conf = load(c, "{'state_dir':'@D@/state','run_dir':'@D@/run2','tor':{'binary':'@D@/tor'},'services':["
                   "{'name':'master','onionbalance':{'frontend':true,'instances':["
                   "'nk47d24ppuzyr5hz2wdpm3uz7vkaqdpsyrdpbzmgncyjycfbnxidqgyd.onion']}}]}");
    assert_has(run(c, conf, PREFLIGHT_ALL, 0, NULL), "services[0].onionbalance: a frontend runs ");
    assert_string_equal(run(c, conf, PREFLIGHT_START, 0, NULL), "");
    config_free(conf);
}

/* check-config run by root for the shipped unit (check_owner): existing directories, key directories and
 * keys must belong to the unit's user; those of another user are each named with their owner and the
 * chown to run. Without check_owner (or with the right owner) nothing is said. */
static void test_owner(void **state)
{
    struct ctx *c = *state;
    char path[400], err[256];
    fake_tor(c, "tor", "0.4.9.11", "yes");
    static const char *const dirs[] = {"state", "state/keys", "run"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", c->dir, dirs[i]);
        assert_int_equal(mkdir(path, 0700), 0);
    }
    snprintf(path, sizeof(path), "%s/state/keys/web", c->dir);
    struct onion_key k;
    if (keys_load_or_create(path, &k, NULL, err, sizeof(err)) < 0)
        fail_msg("key: %s", err);
    onion_key_clear(&k);
    struct config *conf = load(c, SPAWN("'binary':'@D@/tor'") "'services':[" SVC("") "]}");
    uid_t me = geteuid(), other = me + 4242;
    const struct {
        bool check;
        uid_t owner;
        size_t problems;
    } cases[] = {{false, 0, 0}, {true, me, 0}, {true, other, 5}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct preflight_opts o = {.scope = PREFLIGHT_ALL, .euid = me, .control_timeout_ms = 300,
                                   .nofile_hard = c->nofile_hard, .check_owner = cases[i].check,
                                   .owner = cases[i].owner};
        size_t n = preflight_run(conf, &o, &c->pf);
        size_t owned = 0;
        for (size_t j = 0; j < n && j < PREFLIGHT_MAX_PROBLEMS; j++) {
            char want[200];
            snprintf(want, sizeof(want), "not by uid %lu, the user the systemd unit runs onionfront as (chown %lu: ",
                     (unsigned long)other, (unsigned long)other);
            owned += strstr(c->pf.problems[j], want) != NULL;
        }
        if (owned != cases[i].problems)
            fail_msg("case %zu: %zu ownership problems, not %zu (%zu in all; last: %s)", i, owned,
                     cases[i].problems, n, n ? c->pf.problems[n - 1] : "");
    }
    /* state_dir, state_dir/keys, the key directory, its key, run_dir: each named */
    static const char *const named[] = {"state_dir: @D@/state is owned by", "state_dir: @D@/state/keys is owned by",
                                        "services[0].key_dir: @D@/state/keys/web is owned by",
                                        "services[0].key_dir: @D@/state/keys/web/hs_ed25519_secret_key is owned by",
                                        "run_dir: @D@/run is owned by"};
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        char want[600];
        snprintf(want, sizeof(want), "%.*s%s%s", (int)(strstr(named[i], "@D@") - named[i]), named[i], c->dir,
                 strstr(named[i], "@D@") + 3);
        bool found = false;
        for (size_t j = 0; j < c->pf.n && j < PREFLIGHT_MAX_PROBLEMS; j++)
            found = found || strncmp(c->pf.problems[j], want, strlen(want)) == 0;
        if (!found)
            fail_msg("no \"%s\"", want);
    }
    config_free(conf);
}

/* check-config as the service user before the first start: state_dir in /var/lib and run_dir in /run,
 * which the unit's StateDirectory=/RuntimeDirectory= make, are no problem though this user cannot make
 * them; elsewhere they are; the daemon's own start still needs them. Run as an unprivileged user (root
 * becomes nobody in a child for it). */
static void test_systemd_made(void **state)
{
    struct ctx *c = *state;
    fake_tor(c, "tor", "0.4.9.11", "yes");
    char sys[300], other[300];
    snprintf(sys, sizeof(sys), "{'state_dir':'/var/lib/of-test-preflight-%d','run_dir':'/run/of-test-preflight-%d',"
             "'tor':{'binary':'@D@/tor'},'services':[" SVC("") "]}", (int)getpid(), (int)getpid());
    snprintf(other, sizeof(other), "{'state_dir':'/usr/of-test-preflight-%d','run_dir':'/usr/of-test-run-%d',"
             "'tor':{'binary':'@D@/tor'},'services':[" SVC("") "]}", (int)getpid(), (int)getpid());
    struct config *a = load(c, sys), *b = load(c, other);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                               setresuid(65534, 65534, 65534) < 0))
            _exit(10);
        const char *got = run(c, a, PREFLIGHT_ALL, geteuid(), NULL);
        if (strstr(got, "state_dir:") || strstr(got, "run_dir:"))
            _exit(11);
        got = run(c, a, PREFLIGHT_START, geteuid(), NULL);
        if (!strstr(got, "state_dir:") || !strstr(got, "run_dir:"))
            _exit(12); /* a start without them still fails */
        got = run(c, b, PREFLIGHT_ALL, geteuid(), NULL);
        if (!strstr(got, "state_dir:") || !strstr(got, "run_dir:"))
            _exit(13);
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("child: %d (10 cannot drop root, 11 a problem for systemd's directories, 12 the start does not "
                 "need them, 13 no problem elsewhere)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    config_free(a);
    config_free(b);
}

/* The services' listeners and health checks against RLIMIT_NOFILE's hard limit: two services (a listener
 * and a check each) fit exactly with the other shares and the fewest streams, one descriptor less is a
 * problem naming the numbers, for a start as for check-config. 512 services, each key directory still to
 * be made, pass under a large limit. */
static void test_fd_limit(void **state)
{
    struct ctx *c = *state;
    fake_tor(c, "tor", "0.4.9.11", "yes");
    struct config *conf = load(c, SPAWN("'binary':'@D@/tor'") "'services':[" SVC("") ",{'name':'api',"
                                  "'ports':[{'virtual':80,'target':'127.0.0.1:8081'}]}]}");
    const rlim_t fits = FDBUDGET_RESERVE + FDBUDGET_METRICS_CLIENTS + FDBUDGET_ONIONLOC_CLIENTS +
                        FDBUDGET_STATUS_CLIENTS + 4 + 2 * FDBUDGET_STREAMS_MIN;
    char want[300];
    c->nofile_hard = fits;
    assert_string_equal(run(c, conf, PREFLIGHT_ALL, 0, NULL), "");
    c->nofile_hard = fits - 1;
    snprintf(want, sizeof(want),
             "services: the config needs %llu file descriptors but RLIMIT_NOFILE's hard limit is %llu: 2 listening "
             "sockets (one per service port) and 2 health checks",
             (unsigned long long)fits, (unsigned long long)fits - 1);
    assert_has(run(c, conf, PREFLIGHT_ALL, 0, NULL), want);
    assert_int_equal(c->pf.n, 1);
    assert_has(run(c, conf, PREFLIGHT_START, 0, NULL), want);
    config_free(conf);

    size_t cap = 200 + 100 * 512, o = 0;
    char *json = malloc(cap), err[1024];
    assert_non_null(json);
    o += (size_t)snprintf(json, cap, "{\"state_dir\":\"%s/state\",\"run_dir\":\"%s/run\",\"tor\":{\"binary\":"
                          "\"%s/tor\"},\"services\":[", c->dir, c->dir, c->dir);
    for (int i = 0; i < 512; i++)
        o += (size_t)snprintf(json + o, cap - o, "%s{\"name\":\"s%d\",\"ports\":[{\"virtual\":80,\"target\":"
                              "\"127.0.0.1:%d\"}]}", i ? "," : "", i, 1000 + i);
    snprintf(json + o, cap - o, "]}");
    conf = config_load_string(json, strlen(json), err, sizeof(err));
    free(json);
    if (!conf)
        fail_msg("config: %s", err);
    c->nofile_hard = 1 << 20;
    assert_string_equal(run(c, conf, PREFLIGHT_ALL, 0, NULL), "");
    config_free(conf);
}

/* Count the entries below `dir` (recursively), to see that nothing was made. */
static size_t count_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "find '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = 0;
    assert_int_equal(fscanf(p, "%zu", &n), 1);
    pclose(p);
    return n;
}

/* A first start's config passes, and the check makes nothing: no state_dir, no key, no marker in an
 * unused key directory, no address record. */
static void test_touches_nothing(void **state)
{
    struct ctx *c = *state;
    char path[400], marker[450];
    fake_tor(c, "tor", "0.4.9.11", "yes");
    snprintf(path, sizeof(path), "%s/mkp", c->dir);
    make_key(path, NULL);
    snprintf(marker, sizeof(marker), "%s/%s", path, KEYS_POISON_FILE);
    assert_int_equal(unlink(marker), 0); /* as mkp224o leaves it: keys only */
    struct config *conf =
        load(c, SPAWN("'binary':'@D@/tor'") "'services':[" SVC("") ",{'name':'mkp','key_dir':'@D@/mkp',"
                "'ports':[{'virtual':80,'target':'127.0.0.1:8081'}]}]}");
    size_t before = count_tree(c->dir);
    assert_string_equal(run(c, conf, PREFLIGHT_ALL, 0, NULL), "");
    assert_string_equal(run(c, conf, PREFLIGHT_START, 0, NULL), "");
    assert_int_equal(count_tree(c->dir), before);
    assert_int_equal(access(marker, F_OK), -1);
    snprintf(path, sizeof(path), "%s/state", c->dir);
    assert_int_equal(access(path, F_OK), -1);
    config_free(conf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_systemd_made, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fd_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_touches_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
