/* test_onionloc.c — sidecar/ops/onionloc.c: the per-service nginx/Apache include files (header while
 * reachable, empty otherwise, exact text), writes only on change (also across a restart over the same
 * directory), removed services emptied, bad addresses never written, the directory created, the
 * on_change command run once per batch and coalesced while it runs, reload of the settings, and the
 * shutdown flush; a symlink swapped in for the new directory right after its mkdir (this binary's own
 * mkdir/mkdirat, see below) is refused and the file it points to keeps its mode. Real files in a temporary
 * directory, a real /bin/sh child on the real event loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/ops/onionloc.h"
#include "sidecar/core/proc.h"
#include "tests/fake/tmpdir.h"

#define ADDR_A "pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd"
#define ADDR_B "sp3k262uwy4r2k3ycr5awluarykdpag6a7y33jxop4cs2lu5uz5sseqd"

struct ctx {
    struct event_base *base;
    struct proc_mgr *procs;
    char tmp[64];
    char dir[96];  /* onion_location.dir (not created beforehand) */
    char runs[128]; /* the on_change command appends a line here per run */
    struct config *conf;
    struct onionloc *ol;
    bool flushed;
};

/* A config with three services (ports 80, 443 and 6697) and onion_location in `dir`, running `cmd`
 * (a /bin/sh -c script) on change. */
static struct config *make_config(const char *dir, const char *cmd)
{
    char json[2048], err[512];
    snprintf(json, sizeof(json),
             "{\"state_dir\": \"/var/lib/of\", \"run_dir\": \"/run/of\","
             " \"services\": ["
             "  {\"name\": \"web\", \"ports\": [{\"virtual\": 80, \"target\": \"127.0.0.1:8080\"},"
             "                                 {\"virtual\": 443, \"target\": \"127.0.0.1:8443\"}]},"
             "  {\"name\": \"shop\", \"ports\": [{\"virtual\": 443, \"target\": \"127.0.0.1:9443\"}]},"
             "  {\"name\": \"irc\", \"ports\": [{\"virtual\": 6697, \"target\": \"127.0.0.1:6697\"}]}],"
             " \"onion_location\": {\"dir\": \"%s\"%s%s%s}}",
             dir, cmd ? ", \"on_change\": [\"/bin/sh\", \"-c\", \"" : "", cmd ? cmd : "", cmd ? "\"]" : "");
    struct config *c = config_load_string(json, strlen(json), err, sizeof(err));
    if (!c)
        fail_msg("config: %s", err);
    return c;
}

/* The race of a parent directory another user can write, made certain: this binary's mkdir and mkdirat
 * (the product's calls resolve to them) do the real call, and when it created `swap.name` they replace
 * the new directory with a symlink to `swap.target` before returning, as an attacker would. */
static struct {
    const char *name;   /* the last component to swap, or NULL */
    const char *target; /* what the symlink points to */
    bool done;
} swap;

static void swap_in_symlink(int dfd, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!swap.name || strcmp(slash ? slash + 1 : path, swap.name) != 0)
        return;
    swap.done = unlinkat(dfd, path, AT_REMOVEDIR) == 0 && symlinkat(swap.target, dfd, path) == 0;
    swap.name = NULL;
}

int mkdirat(int dfd, const char *path, mode_t mode)
{
    int rc = (int)syscall(SYS_mkdirat, dfd, path, mode);
    if (rc == 0)
        swap_in_symlink(dfd, path);
    return rc;
}

int mkdir(const char *path, mode_t mode)
{
    return mkdirat(AT_FDCWD, path, mode);
}

static int setup(void **state)
{
    static struct ctx c;
    memset(&c, 0, sizeof(c));
    if (tmpdir_make(c.tmp, sizeof(c.tmp), "test_onionloc") < 0)
        return -1;
    snprintf(c.dir, sizeof(c.dir), "%s/onion-location", c.tmp);
    snprintf(c.runs, sizeof(c.runs), "%s/runs.log", c.tmp);
    c.base = event_base_new();
    c.procs = c.base ? proc_mgr_new(c.base) : NULL;
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "echo run >> %s", c.runs);
    c.conf = make_config(c.dir, cmd);
    c.ol = c.procs ? onionloc_new(c.base, c.procs, &c.conf->onion_location) : NULL;
    *state = &c;
    return c.ol ? 0 : -1;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    onionloc_free(c->ol);
    config_free(c->conf);
    proc_mgr_free(c->procs);
    event_base_free(c->base);
    tmpdir_remove(c->tmp);
    return 0;
}

static void flushed_cb(void *arg)
{
    struct ctx *c = arg;
    c->flushed = true;
    event_base_loopbreak(c->base);
}

static void bound_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctx *c = arg;
    (void)fd;
    (void)what;
    event_base_loopbreak(c->base);
}

/* Run the loop until on_change has run for everything so far (bounded). */
static void settle(struct ctx *c)
{
    c->flushed = false;
    /* Let the deferred start happen first, then wait for the flush. */
    event_base_loop(c->base, EVLOOP_NONBLOCK);
    onionloc_flush(c->ol, flushed_cb, c);
    if (!c->flushed) {
        /* A bound of our own (not event_base_loopexit, whose timer would outlive this call and end a
         * later settle early). */
        struct event *bound = evtimer_new(c->base, bound_cb, c);
        assert_non_null(bound);
        struct timeval ten_s = {10, 0};
        evtimer_add(bound, &ten_s);
        event_base_dispatch(c->base);
        event_free(bound);
    }
    assert_true(c->flushed);
}

static char *read_file(const char *dir, const char *name)
{
    static char buf[4096];
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int count_runs(const struct ctx *c)
{
    FILE *f = fopen(c->runs, "r");
    if (!f)
        return 0;
    int n = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

static void entries_for(const struct ctx *c, struct onionloc_entry e[3], bool web, bool shop, bool irc)
{
    e[0] = (struct onionloc_entry){&c->conf->services[0], ADDR_A, web};
    e[1] = (struct onionloc_entry){&c->conf->services[1], ADDR_B, shop};
    e[2] = (struct onionloc_entry){&c->conf->services[2], ADDR_A, irc};
}

static void test_url_table(void **state)
{
    struct ctx *c = *state;
    char url[128];
    const char *want[] = {
        "http://" ADDR_A ".onion",       /* web: 80 and 443 -> plain http on 80 */
        "https://" ADDR_A ".onion",      /* shop: only 443 */
        "http://" ADDR_A ".onion:6697",  /* irc: another port */
    };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(onionloc_url(&c->conf->services[i], ADDR_A, url, sizeof(url)), 0);
        assert_string_equal(url, want[i]);
    }
    assert_int_equal(onionloc_url(&c->conf->services[0], ADDR_A, url, 20), -1);
}

static void test_reachable_then_not(void **state)
{
    struct ctx *c = *state;
    struct onionloc_entry e[3];
    char err[512];

    entries_for(c, e, false, false, false);
    assert_true(onionloc_sync(c->ol, e, 3, err, sizeof(err)) >= 0);
    settle(c);
    struct stat st;
    assert_int_equal(stat(c->dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
    assert_string_equal(read_file(c->dir, "web.conf"), "");
    assert_string_equal(read_file(c->dir, "web.apache.conf"), "");
    assert_string_equal(read_file(c->dir, "irc.conf"), "");
    int runs0 = count_runs(c);
    assert_int_equal(runs0, 1); /* the files appeared: one run */

    entries_for(c, e, true, true, false);
    assert_int_equal(onionloc_sync(c->ol, e, 3, err, sizeof(err)), 2);
    settle(c);
    assert_int_equal(count_runs(c), runs0 + 1); /* two services changed, one run */
    assert_non_null(strstr(read_file(c->dir, "web.conf"),
                           "\nadd_header Onion-Location http://" ADDR_A ".onion$request_uri always;\n"));
    assert_non_null(strstr(read_file(c->dir, "web.apache.conf"),
                           "\nHeader always set Onion-Location \"expr=%{THE_REQUEST}\" "
                           "\"expr=%{THE_REQUEST} =~ m#^[A-Z]+ /[^ ]* HTTP/[0-9.]+$#\"\n"
                           "Header always edit Onion-Location \"^[A-Z]+ (/[^ ]*) HTTP/[0-9.]+$\" "
                           "\"http://" ADDR_A ".onion$1\"\n"));
    assert_non_null(strstr(read_file(c->dir, "shop.conf"), "https://" ADDR_B ".onion$request_uri"));
    assert_string_equal(read_file(c->dir, "irc.conf"), "");
    char path[256];
    snprintf(path, sizeof(path), "%s/web.conf", c->dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);

    /* Web goes down: emptied, one more run. */
    entries_for(c, e, false, true, false);
    assert_int_equal(onionloc_sync(c->ol, e, 3, err, sizeof(err)), 1);
    settle(c);
    assert_string_equal(read_file(c->dir, "web.conf"), "");
    assert_string_equal(read_file(c->dir, "web.apache.conf"), "");
    assert_non_null(strstr(read_file(c->dir, "shop.conf"), "add_header"));
    assert_int_equal(count_runs(c), runs0 + 2);
}

static void test_no_change_no_write(void **state)
{
    struct ctx *c = *state;
    struct onionloc_entry e[3];
    char err[512], path[256];
    struct stat before, after;

    entries_for(c, e, true, false, false);
    assert_true(onionloc_sync(c->ol, e, 3, err, sizeof(err)) > 0);
    settle(c);
    int runs = count_runs(c);
    snprintf(path, sizeof(path), "%s/web.conf", c->dir);
    assert_int_equal(stat(path, &before), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(onionloc_sync(c->ol, e, 3, err, sizeof(err)), 0);
    settle(c);
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino); /* not replaced */
    assert_int_equal(count_runs(c), runs);

    /* A restart (a new object over the same directory) that finds the same state changes nothing. */
    onionloc_free(c->ol);
    c->ol = onionloc_new(c->base, c->procs, &c->conf->onion_location);
    assert_non_null(c->ol);
    assert_int_equal(onionloc_sync(c->ol, e, 3, err, sizeof(err)), 0);
    settle(c);
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino);
    assert_int_equal(count_runs(c), runs);
    assert_int_equal(onionloc_command_runs(c->ol), 0);

    /* ... but a file someone changed is put right. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("add_header Onion-Location http://stale.onion always;\n", f);
    fclose(f);
    onionloc_free(c->ol);
    c->ol = onionloc_new(c->base, c->procs, &c->conf->onion_location);
    assert_int_equal(onionloc_sync(c->ol, e, 3, err, sizeof(err)), 1);
    settle(c);
    assert_non_null(strstr(read_file(c->dir, "web.conf"), ADDR_A));
    assert_int_equal(count_runs(c), runs + 1);
}

static void test_removed_service_is_emptied(void **state)
{
    struct ctx *c = *state;
    struct onionloc_entry e[3];
    char err[512];
    entries_for(c, e, true, true, true);
    assert_int_equal(onionloc_sync(c->ol, e, 3, err, sizeof(err)), 3);
    settle(c);
    assert_non_null(strstr(read_file(c->dir, "irc.conf"), ":6697$request_uri"));
    /* irc is gone from the config: only web and shop reported. */
    assert_int_equal(onionloc_sync(c->ol, e, 2, err, sizeof(err)), 1);
    settle(c);
    assert_string_equal(read_file(c->dir, "irc.conf"), "");
    assert_string_equal(read_file(c->dir, "irc.apache.conf"), "");
    assert_non_null(strstr(read_file(c->dir, "web.conf"), ADDR_A));
}

static void test_bad_address_never_written(void **state)
{
    struct ctx *c = *state;
    char err[512];
    const char *bad[] = {"", NULL, "short", ADDR_A "x", "PG6MMJIYJMCRSSLVYKFWNNTLARU7P5SVN6Y2YMMJU6NUBXNDF4PSCRYD",
                         "pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscry;"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct onionloc_entry e = {&c->conf->services[0], bad[i], true};
        assert_true(onionloc_sync(c->ol, &e, 1, err, sizeof(err)) >= 0);
        assert_string_equal(read_file(c->dir, "web.conf"), "");
    }
}

static void test_missing_parent_is_an_error(void **state)
{
    struct ctx *c = *state;
    char dir[160], err[512] = "";
    snprintf(dir, sizeof(dir), "%s/no/such/dir", c->tmp);
    struct config *conf = make_config(dir, NULL);
    struct onionloc *ol = onionloc_new(c->base, c->procs, &conf->onion_location);
    assert_non_null(ol);
    struct onionloc_entry e = {&conf->services[0], ADDR_A, true};
    assert_int_equal(onionloc_sync(ol, &e, 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, dir));
    onionloc_free(ol);
    config_free(conf);
}

/* The directory is swapped for a symlink to a file of ours between its creation and the setting of its
 * mode: the file's mode stays as it was, and the error names the directory. */
static void test_symlink_swapped_after_mkdir(void **state)
{
    struct ctx *c = *state;
    char victim[128], err[512] = "";
    snprintf(victim, sizeof(victim), "%s/secret", c->tmp);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(victim, 0600), 0);
    swap.name = "onion-location";
    swap.target = victim;
    swap.done = false;
    struct onionloc_entry e[3];
    entries_for(c, e, true, true, true);
    int rc = onionloc_sync(c->ol, e, 3, err, sizeof(err));
    swap.name = NULL;
    assert_true(swap.done); /* the swap did happen */
    struct stat st;
    assert_int_equal(stat(victim, &st), 0);
    if ((st.st_mode & 07777) != 0600)
        fail_msg("the symlink's target was changed to mode %04o", (unsigned)(st.st_mode & 07777));
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, c->dir));
}

static void test_runs_coalesce_while_running(void **state)
{
    struct ctx *c = *state;
    char err[512], cmd[512], gate[128];
    /* A command that runs until the test opens the gate: every change below is made while the first run
     * is still going (whatever the disk's fsync costs), and must cause exactly one more run. */
    snprintf(gate, sizeof(gate), "%s/gate", c->tmp);
    snprintf(cmd, sizeof(cmd), "while [ ! -e %s ]; do sleep 0.02; done; echo run >> %s", gate, c->runs);
    struct config *conf = make_config(c->dir, cmd);
    onionloc_free(c->ol);
    c->ol = onionloc_new(c->base, c->procs, &conf->onion_location);
    struct onionloc_entry e[3];
    e[0] = (struct onionloc_entry){&conf->services[0], ADDR_A, true};
    assert_int_equal(onionloc_sync(c->ol, e, 1, err, sizeof(err)), 1);
    event_base_loop(c->base, EVLOOP_NONBLOCK); /* the first run starts */
    assert_int_equal(onionloc_command_runs(c->ol), 1);
    for (int i = 0; i < 4; i++) {
        e[0].reachable = i % 2 == 0 ? false : true;
        assert_int_equal(onionloc_sync(c->ol, e, 1, err, sizeof(err)), 1);
        event_base_loop(c->base, EVLOOP_NONBLOCK);
    }
    assert_int_equal(onionloc_command_runs(c->ol), 1); /* still the first run */
    FILE *g = fopen(gate, "w");
    assert_non_null(g);
    fclose(g);
    settle(c);
    assert_int_equal(onionloc_command_runs(c->ol), 2);
    assert_int_equal(count_runs(c), 2);
    onionloc_free(c->ol);
    c->ol = NULL;
    config_free(conf);
}

static void test_reload_moves_directory(void **state)
{
    struct ctx *c = *state;
    char err[512], dir2[160];
    struct onionloc_entry e[3];
    entries_for(c, e, true, false, false);
    assert_int_equal(onionloc_sync(c->ol, e, 3, err, sizeof(err)), 3); /* all files created */
    settle(c);

    snprintf(dir2, sizeof(dir2), "%s/elsewhere", c->tmp);
    struct config *conf2 = make_config(dir2, NULL);
    assert_int_equal(onionloc_set_config(c->ol, &conf2->onion_location, err, sizeof(err)), 0);
    settle(c);
    /* The old directory no longer advertises anything. */
    assert_string_equal(read_file(c->dir, "web.conf"), "");
    e[0].svc = &conf2->services[0];
    e[1].svc = &conf2->services[1];
    e[2].svc = &conf2->services[2];
    assert_true(onionloc_sync(c->ol, e, 3, err, sizeof(err)) > 0);
    assert_non_null(strstr(read_file(dir2, "web.conf"), ADDR_A));

    /* Turned off: the files are emptied and syncs do nothing any more. */
    const char *off_json = "{\"state_dir\": \"/a\", \"run_dir\": \"/b\", \"services\": [{\"name\": \"web\", "
                           "\"ports\": [{\"virtual\": 80, \"target\": \"127.0.0.1:1\"}]}]}";
    struct config *off = config_load_string(off_json, strlen(off_json), err, sizeof(err));
    assert_non_null(off);
    assert_int_equal(onionloc_set_config(c->ol, &off->onion_location, err, sizeof(err)), 0);
    settle(c);
    assert_string_equal(read_file(dir2, "web.conf"), "");
    assert_int_equal(onionloc_sync(c->ol, e, 3, err, sizeof(err)), 0);
    assert_string_equal(read_file(dir2, "web.conf"), "");
    config_free(off);
    config_free(conf2);
}

/* Onionbalance: visitors go to the master, never to an instance. An instance's files name its
 * master_address (with its own ports) while it is reachable and are emptied when it is not; a frontend's
 * name its own address (the master) with a local instance's ports. */
static void test_onionbalance_advertises_master(void **state)
{
    struct ctx *c = *state;
    char json[2048], err[512];
    snprintf(json, sizeof(json),
             "{\"state_dir\": \"/var/lib/of\", \"run_dir\": \"/run/of\","
             " \"services\": ["
             "  {\"name\": \"front\", \"onionbalance\": {\"frontend\": true}},"
             "  {\"name\": \"inst\", \"ports\": [{\"virtual\": 443, \"target\": \"127.0.0.1:8443\"}],"
             "   \"onionbalance\": {\"master_address\": \"%s.onion\"}}],"
             " \"onion_location\": {\"dir\": \"%s\"}}",
             ADDR_A, c->dir);
    struct config *conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!conf)
        fail_msg("config: %s", err);
    struct onionloc *ol = onionloc_new(c->base, c->procs, &conf->onion_location);
    assert_non_null(ol);
    /* The frontend's own address is the master (ADDR_A); the instance's own is ADDR_B. */
    struct onionloc_entry e[2] = {{&conf->services[0], ADDR_A, true}, {&conf->services[1], ADDR_B, true}};
    assert_int_equal(onionloc_sync(ol, e, 2, err, sizeof(err)), 2);
    const char *inst = read_file(c->dir, "inst.conf");
    assert_non_null(strstr(inst, "add_header Onion-Location https://" ADDR_A ".onion$request_uri always;\n"));
    assert_null(strstr(inst, ADDR_B));
    assert_null(strstr(read_file(c->dir, "inst.apache.conf"), ADDR_B));
    assert_non_null(strstr(read_file(c->dir, "inst.apache.conf"), "\"https://" ADDR_A ".onion$1\""));
    assert_non_null(strstr(read_file(c->dir, "front.conf"), "Onion-Location https://" ADDR_A ".onion$request_uri"));

    /* Withdrawal follows the instance's own verdict, as for any service. */
    e[1].reachable = false;
    assert_int_equal(onionloc_sync(ol, e, 2, err, sizeof(err)), 1);
    assert_string_equal(read_file(c->dir, "inst.conf"), "");
    assert_string_equal(read_file(c->dir, "inst.apache.conf"), "");
    /* An instance whose own address is unknown (refused) advertises nothing either. */
    e[1] = (struct onionloc_entry){&conf->services[1], "", true};
    assert_int_equal(onionloc_sync(ol, e, 2, err, sizeof(err)), 0);
    assert_string_equal(read_file(c->dir, "inst.conf"), "");
    /* A frontend with no local instance: no ports to go by, plain http. */
    assert_int_equal(onionloc_sync(ol, e, 1, err, sizeof(err)), 1);
    assert_non_null(strstr(read_file(c->dir, "front.conf"), "Onion-Location http://" ADDR_A ".onion$request_uri"));
    onionloc_free(ol);
    config_free(conf);
}

static void test_flush_when_idle_is_immediate(void **state)
{
    struct ctx *c = *state;
    c->flushed = false;
    onionloc_flush(c->ol, flushed_cb, c);
    assert_true(c->flushed);
    c->flushed = false;
    onionloc_flush(NULL, flushed_cb, c);
    assert_true(c->flushed);
    onionloc_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_url_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reachable_then_not, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_change_no_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removed_service_is_emptied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_address_never_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_parent_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runs_coalesce_while_running, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_moves_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_when_idle_is_immediate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_onionbalance_advertises_master, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_swapped_after_mkdir, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
