/* test_cp_real_tor.c — controlproto/cp_conn.c (and cp_conn_auth.c) against a real Debian tor (/usr/bin/tor).
 *
 * Owns one tor process for the whole group: started with posix_spawn in a mkdtemp directory with
 * DisableNetwork 1, SocksPort 0, a unix ControlPort in a 0700 directory, CookieAuthentication 1 and its own
 * DataDirectory; stopped by its PID (SIGTERM, a bounded waitpid, then SIGKILL), also when the group setup
 * fails half-way; the directory is removed. __OwningControllerProcess makes tor exit by itself should this
 * test die without its teardown. Nothing leaves 127.0.0.1: there is no network here and tor is told not to
 * use one.
 * Covers what the fake control port cannot: tor's own PROTOCOLINFO, SAFECOOKIE and COOKIE exchanges (and a
 * wrong cookie caught by our SERVERHASH check or refused by tor), GETINFO, pipelined commands including an
 * error reply, SETEVENTS with a CONF_CHANGED event triggered by SETCONF, ADD_ONION / onions/current /
 * DEL_ONION. A missing tor is a failure, not a skip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/rand.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_reply.h"
#include "tests/fake/fake_ctl.h"
#include "tests/fake/tmpdir.h"

#define TOR_BIN "/usr/bin/tor"
#define TOR_START_BOUND_MS 30000
#define TOR_STOP_BOUND_MS 10000
#define LOOP_BOUND_MS 20000

extern char **environ;

/* The tor process shared by all tests. */
struct tor {
    char dir[64];
    char sock[96];
    pid_t pid;
};

/* One test's connection and what it observed. */
struct conn_test {
    struct tor *tor; /* borrowed from the group */
    struct event_base *base;
    struct cp_conn *c;
    int n_ready, n_closed;
    char closed_err[512];
    char events[2048]; /* event lines, "|"-separated */
    int n_events;
    int replies_seen; /* completions so far */
};

/* One command's reply, kept as text: every line's text and data, "\n"-joined. */
struct reply_rec {
    struct conn_test *ct;
    int calls;
    int status;
    int order;
    int events_before; /* events delivered before this reply */
    char text[4096];
    char err[512];
};

/* ---- the tor process --------------------------------------------------------------------------- */

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Print the end of tor's log, to explain a failure. */
static void tor_dump_log(const struct tor *tor)
{
    char path[256], buf[4096];
    FILE *f;
    long size;
    size_t n;

    snprintf(path, sizeof path, "%s/tor.log", tor->dir);
    f = fopen(path, "r");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0, SEEK_SET);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    print_message("--- end of %s ---\n%s\n---\n", path, buf);
}

/* Stop tor by its PID: SIGTERM, wait up to TOR_STOP_BOUND_MS, then SIGKILL. Return its wait status, or -1. */
static int tor_stop(struct tor *tor)
{
    int status = -1;
    int64_t deadline = now_ms() + TOR_STOP_BOUND_MS;

    if (tor->pid <= 0)
        return -1;
    kill(tor->pid, SIGTERM);
    for (;;) {
        pid_t r = waitpid(tor->pid, &status, WNOHANG);

        if (r == tor->pid)
            break;
        if (r < 0 && errno != EINTR) {
            status = -1;
            break;
        }
        if (now_ms() > deadline) {
            kill(tor->pid, SIGKILL);
            waitpid(tor->pid, &status, 0);
            break;
        }
        usleep(20000);
    }
    tor->pid = 0;
    return status;
}

static void tor_cleanup(struct tor *tor)
{
    tor_stop(tor);
    if (tor->dir[0])
        tmpdir_remove(tor->dir);
    free(tor);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static int group_setup(void **state)
{
    struct tor *tor = calloc(1, sizeof *tor);
    char path[96], torrc[1024], data[80], ctl[80], defaults[96], out[96];
    char *argv[] = { TOR_BIN, "-f", path, "--defaults-torrc", defaults, NULL };
    posix_spawn_file_actions_t fa;
    int64_t deadline;
    struct stat st;
    int rc, status;

    if (!tor)
        return -1;
    if (tmpdir_make(tor->dir, sizeof tor->dir, "cp_real_tor") < 0) { /* 0700 */
        print_error("tmpdir_make: %s\n", strerror(errno));
        tor->dir[0] = '\0';
        goto fail;
    }
    snprintf(ctl, sizeof ctl, "%s/ctl", tor->dir);
    snprintf(data, sizeof data, "%s/data", tor->dir);
    /* tor refuses a ControlPort socket whose directory others can read (no RelaxDirModeCheck here). */
    if (mkdir(ctl, 0700) < 0 || mkdir(data, 0700) < 0) {
        print_error("mkdir: %s\n", strerror(errno));
        goto fail;
    }
    snprintf(tor->sock, sizeof tor->sock, "%s/sock", ctl);
    snprintf(torrc, sizeof torrc,
             "DataDirectory %s\n"
             "DisableNetwork 1\n"
             "SocksPort 0\n"
             "ControlPort unix:%s\n"
             "CookieAuthentication 1\n"
             "Log notice file %s/tor.log\n"
             "RunAsDaemon 0\n"
             "__OwningControllerProcess %ld\n",
             data, tor->sock, tor->dir, (long)getpid());
    snprintf(path, sizeof path, "%s/torrc", tor->dir);
    snprintf(defaults, sizeof defaults, "%s/torrc-defaults", tor->dir);
    snprintf(out, sizeof out, "%s/tor.stdout", tor->dir);
    if (write_file(path, torrc) < 0 || write_file(defaults, "") < 0) {
        print_error("writing %s: %s\n", path, strerror(errno));
        goto fail;
    }
    if (access(TOR_BIN, X_OK) < 0) {
        print_error("%s: %s (install Debian's tor package)\n", TOR_BIN, strerror(errno));
        goto fail;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    rc = posix_spawn(&tor->pid, TOR_BIN, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        print_error("posix_spawn %s: %s\n", TOR_BIN, strerror(rc));
        tor->pid = 0;
        goto fail;
    }
    /* Wait (bounded) for the control socket; give up at once if tor exits. */
    deadline = now_ms() + TOR_START_BOUND_MS;
    while (stat(tor->sock, &st) < 0 || !S_ISSOCK(st.st_mode)) {
        if (waitpid(tor->pid, &status, WNOHANG) == tor->pid) {
            print_error("tor exited during start-up (status 0x%x)\n", status);
            tor->pid = 0;
            tor_dump_log(tor);
            goto fail;
        }
        if (now_ms() > deadline) {
            print_error("no control socket %s after %d ms\n", tor->sock, TOR_START_BOUND_MS);
            tor_dump_log(tor);
            goto fail;
        }
        usleep(50000);
    }
    *state = tor;
    return 0;

fail:
    tor_cleanup(tor);
    return -1;
}

static int group_teardown(void **state)
{
    struct tor *tor = *state;
    int status;

    if (!tor)
        return 0; /* cmocka calls this after a failed group_setup, which cleaned up itself */
    status = tor_stop(tor);
    /* tor exits cleanly on SIGTERM (a client, not a relay: no ShutdownWaitLength) */
    if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        print_error("tor did not exit cleanly on SIGTERM (status 0x%x)\n", status);
        tor_dump_log(tor);
        tor_cleanup(tor);
        return -1;
    }
    tor_cleanup(tor);
    return 0;
}

/* ---- a connection per test --------------------------------------------------------------------- */

static void state_cb(struct cp_conn *c, enum cp_conn_state st, const char *err, void *arg)
{
    struct conn_test *ct = arg;

    (void)c;
    if (st == CP_CONN_READY) {
        ct->n_ready++;
    } else {
        ct->n_closed++;
        snprintf(ct->closed_err, sizeof ct->closed_err, "%s", err ? err : "(asked)");
    }
}

static void event_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct conn_test *ct = arg;
    size_t i, o;

    (void)c;
    ct->n_events++;
    for (i = 0; i < ev->n_lines; i++) {
        o = strlen(ct->events);
        snprintf(ct->events + o, sizeof ct->events - o, "%s|", ev->lines[i].text);
    }
}

static void reply_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct reply_rec *rr = arg;
    size_t i, o;

    (void)c;
    rr->calls++;
    rr->order = ++rr->ct->replies_seen;
    rr->events_before = rr->ct->n_events;
    if (!r) {
        rr->status = 0;
        snprintf(rr->err, sizeof rr->err, "%s", err);
        return;
    }
    rr->status = r->status;
    rr->text[0] = '\0';
    for (i = 0; i < r->n_lines; i++) {
        o = strlen(rr->text);
        snprintf(rr->text + o, sizeof rr->text - o, "%s\n%s", r->lines[i].text,
                 r->lines[i].data ? r->lines[i].data : "");
    }
}

/* cmocka gives each test the group's state (the tor); a test's own state wraps it. */
static int ct_setup(void **state)
{
    struct conn_test *ct = calloc(1, sizeof *ct);

    assert_non_null(ct);
    ct->tor = *state;
    ct->base = event_base_new();
    assert_non_null(ct->base);
    *state = ct;
    return 0;
}

static int ct_teardown(void **state)
{
    struct conn_test *ct = *state;

    cp_conn_free(ct->c);
    event_base_free(ct->base);
    free(ct);
    return 0;
}

static bool is_settled(void *arg)
{
    struct conn_test *ct = arg;
    return ct->n_ready > 0 || ct->n_closed > 0;
}

static bool is_event_seen(void *arg)
{
    struct conn_test *ct = arg;
    return ct->n_events > 0;
}

struct wait_recs {
    struct reply_rec *recs;
    size_t n;
};

static bool recs_done(void *arg)
{
    struct wait_recs *w = arg;
    size_t i;

    for (i = 0; i < w->n; i++) {
        if (w->recs[i].calls == 0)
            return false;
    }
    return true;
}

static void run_until(struct conn_test *ct, bool (*done)(void *), void *arg, const char *what)
{
    if (fake_ctl_run_until(ct->base, done, arg, LOOP_BOUND_MS) != 0) {
        tor_dump_log(ct->tor);
        fail_msg("%s: nothing after %d ms (closed: %s)", what, LOOP_BOUND_MS, ct->closed_err);
    }
}

/* Connect to the group's tor with `auth` (and `cookie_path` if not NULL); return after READY or CLOSED. */
static void ct_connect(struct conn_test *ct, enum cp_auth_method auth, const char *cookie_path)
{
    struct cp_conn_opts o = { .unix_path = ct->tor->sock, .auth = auth, .cookie_path = cookie_path,
                              .cmd_timeout = { 15, 0 } };
    char err[256];

    ct->c = cp_conn_new(ct->base, &o, state_cb, ct, err, sizeof err);
    if (!ct->c)
        fail_msg("cp_conn_new: %s", err);
    if (cp_conn_connect(ct->c, err, sizeof err) != 0)
        fail_msg("cp_conn_connect: %s", err);
    run_until(ct, is_settled, ct, "connect");
}

static void ct_connect_ready(struct conn_test *ct, enum cp_auth_method auth)
{
    ct_connect(ct, auth, NULL);
    if (ct->n_ready != 1)
        fail_msg("not ready: %s", ct->closed_err);
}

/* Send `cmd` (freed here, wiped by cp_conn) and wait for its reply. */
static void ct_command(struct conn_test *ct, char *cmd, const char *enc_err, struct reply_rec *rr)
{
    struct wait_recs w = { rr, 1 };
    char err[256];
    int rc;

    if (!cmd)
        fail_msg("encoder: %s", enc_err);
    memset(rr, 0, sizeof *rr);
    rr->ct = ct;
    rc = cp_conn_send(ct->c, cmd, reply_cb, rr, err, sizeof err);
    free(cmd);
    if (rc != 0)
        fail_msg("cp_conn_send: %s", err);
    run_until(ct, recs_done, &w, "reply");
    assert_int_equal(rr->calls, 1);
}

static char *getinfo(const char *key, char *err, size_t errlen)
{
    const char *keys[] = { key };

    return cp_cmd_getinfo(keys, 1, err, errlen);
}

/* ---- tests ------------------------------------------------------------------------------------- */

static void test_safecookie_and_version(void **state)
{
    struct conn_test *ct = *state;
    struct reply_rec rr;
    char err[256];

    ct_connect_ready(ct, CP_AUTH_SAFECOOKIE);
    assert_int_equal(cp_conn_auth_method(ct->c), CP_AUTH_SAFECOOKIE);
    ct_command(ct, getinfo("version", err, sizeof err), err, &rr);
    assert_int_equal(rr.status, 250);
    if (strncmp(rr.text, "version=0.4", 11) != 0)
        fail_msg("GETINFO version: \"%s\"", rr.text);
}

/* tor with CookieAuthentication offers COOKIE,SAFECOOKIE; AUTO must pick SAFECOOKIE. */
static void test_auto_picks_safecookie(void **state)
{
    struct conn_test *ct = *state;

    ct_connect_ready(ct, CP_AUTH_AUTO);
    assert_int_equal(cp_conn_auth_method(ct->c), CP_AUTH_SAFECOOKIE);
}

static void test_cookie(void **state)
{
    struct conn_test *ct = *state;
    struct reply_rec rr;
    char err[256];

    ct_connect_ready(ct, CP_AUTH_COOKIE);
    assert_int_equal(cp_conn_auth_method(ct->c), CP_AUTH_COOKIE);
    ct_command(ct, getinfo("version", err, sizeof err), err, &rr);
    assert_int_equal(rr.status, 250);
}

/* A 32-byte file that is not tor's cookie: SAFECOOKIE stops at our check of tor's SERVERHASH; COOKIE sends
 * it and tor refuses it (515) and closes. */
static void test_wrong_cookie(void **state)
{
    struct conn_test *ct = *state;
    unsigned char junk[32];
    char path[256];
    FILE *f;

    assert_int_equal(RAND_bytes(junk, sizeof junk), 1);
    snprintf(path, sizeof path, "%s/wrong_cookie", ct->tor->dir);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(junk, 1, sizeof junk, f), sizeof junk);
    fclose(f);

    ct_connect(ct, CP_AUTH_SAFECOOKIE, path);
    assert_int_equal(ct->n_ready, 0);
    if (!strstr(ct->closed_err, "SERVERHASH does not match"))
        fail_msg("SAFECOOKIE with a wrong cookie: \"%s\"", ct->closed_err);
    cp_conn_free(ct->c);
    ct->c = NULL;

    ct->n_closed = 0;
    ct_connect(ct, CP_AUTH_COOKIE, path);
    assert_int_equal(ct->n_ready, 0);
    if (!strstr(ct->closed_err, "515"))
        fail_msg("COOKIE with a wrong cookie: \"%s\"", ct->closed_err);
    unlink(path);
}

/* Commands written back to back, one of them an error, are answered in order. */
static void test_pipelined_commands(void **state)
{
    struct conn_test *ct = *state;
    static const char *const cmds[] = {
        "GETINFO version\r\n",
        "GETINFO no-such-key\r\n",
        "GETINFO config-file\r\n",
        "GETINFO version\r\n",
    };
    struct reply_rec rr[4];
    struct wait_recs w = { rr, 4 };
    char err[256];
    size_t i;

    ct_connect_ready(ct, CP_AUTH_SAFECOOKIE);
    memset(rr, 0, sizeof rr);
    for (i = 0; i < 4; i++) {
        rr[i].ct = ct;
        assert_int_equal(cp_conn_send(ct->c, cmds[i], reply_cb, &rr[i], err, sizeof err), 0);
    }
    run_until(ct, recs_done, &w, "pipelined replies");
    for (i = 0; i < 4; i++) {
        assert_int_equal(rr[i].calls, 1);
        assert_int_equal(rr[i].order, (int)i + 1);
    }
    assert_int_equal(rr[0].status, 250);
    assert_int_equal(rr[1].status, 552);
    assert_non_null(strstr(rr[1].text, "no-such-key"));
    assert_int_equal(rr[2].status, 250);
    assert_non_null(strstr(rr[2].text, "config-file="));
    assert_non_null(strstr(rr[2].text, "/torrc"));
    assert_int_equal(rr[3].status, 250);
    assert_string_equal(rr[0].text, rr[3].text);
}

/* SETEVENTS CONF_CHANGED, then SETCONF: the event reaches the subscriber with the changed option. */
static void test_conf_changed_event(void **state)
{
    struct conn_test *ct = *state;
    static const char *const events[] = { "CONF_CHANGED" };
    struct cp_conf_item item = { "MaxCircuitDirtiness", NULL };
    struct reply_rec rr;
    char err[256], value[16], want[64];
    unsigned r;

    ct_connect_ready(ct, CP_AUTH_SAFECOOKIE);
    assert_int_equal(cp_conn_subscribe(ct->c, "CONF_CHANGED", event_cb, ct), 0);
    ct_command(ct, cp_cmd_setevents(events, 1, err, sizeof err), err, &rr);
    assert_int_equal(rr.status, 250);

    assert_int_equal(RAND_bytes((unsigned char *)&r, sizeof r), 1);
    snprintf(value, sizeof value, "%u", 600 + r % 1000); /* a value this test run chose */
    item.value = value;
    ct_command(ct, cp_cmd_setconf(&item, 1, err, sizeof err), err, &rr);
    assert_int_equal(rr.status, 250);
    if (ct->n_events == 0)
        run_until(ct, is_event_seen, ct, "CONF_CHANGED event");
    assert_int_equal(ct->n_events, 1);
    snprintf(want, sizeof want, "CONF_CHANGED|MaxCircuitDirtiness=%s|OK|", value);
    assert_string_equal(ct->events, want);
    print_message("CONF_CHANGED arrived %s the SETCONF reply\n", rr.events_before ? "before" : "after");
}

static bool is_base32_id(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '2' && s[i] <= '7')))
            return false;
    }
    return s[len] == '\0' || s[len] == '\n';
}

/* ADD_ONION NEW:ED25519-V3 → a 56-character ServiceID listed in onions/current; DEL_ONION removes it. */
static void test_add_and_del_onion(void **state)
{
    struct conn_test *ct = *state;
    struct cp_onion_port port = { 80, "127.0.0.1:8080" };
    struct cp_add_onion a = { .key_type = "NEW", .key_blob = "ED25519-V3", .ports = &port, .n_ports = 1 };
    struct reply_rec rr;
    char err[256], id[57];
    const char *p;

    ct_connect_ready(ct, CP_AUTH_SAFECOOKIE);
    ct_command(ct, getinfo("onions/current", err, sizeof err), err, &rr);
    assert_int_equal(rr.status, 250);
    assert_string_equal(rr.text, "onions/current=\nOK\n"); /* none yet: an empty value, not an error */

    ct_command(ct, cp_cmd_add_onion(&a, err, sizeof err), err, &rr);
    if (rr.status != 250)
        fail_msg("ADD_ONION: %d %s", rr.status, rr.text);
    p = strstr(rr.text, "ServiceID=");
    assert_non_null(p);
    p += strlen("ServiceID=");
    if (!is_base32_id(p, 56))
        fail_msg("ServiceID is not 56 base32 characters: \"%.80s\"", p);
    memcpy(id, p, 56);
    id[56] = '\0';
    assert_non_null(strstr(rr.text, "PrivateKey=ED25519-V3:")); /* no DiscardPK */

    ct_command(ct, getinfo("onions/current", err, sizeof err), err, &rr);
    assert_int_equal(rr.status, 250);
    if (!strstr(rr.text, id))
        fail_msg("%s not in onions/current: \"%s\"", id, rr.text);

    ct_command(ct, cp_cmd_del_onion(id, err, sizeof err), err, &rr);
    assert_int_equal(rr.status, 250);

    ct_command(ct, getinfo("onions/current", err, sizeof err), err, &rr);
    assert_int_equal(rr.status, 250);
    if (strstr(rr.text, id))
        fail_msg("%s still in onions/current after DEL_ONION: \"%s\"", id, rr.text);

    /* Deleting it again is an error, and the connection stays usable. */
    ct_command(ct, cp_cmd_del_onion(id, err, sizeof err), err, &rr);
    assert_int_equal(rr.status, 552);
    assert_int_equal(cp_conn_get_state(ct->c), CP_CONN_READY);
}

/* Two services at once come back as a "250+onions/current=" data block. */
static void test_onions_current_data_block(void **state)
{
    struct conn_test *ct = *state;
    struct cp_onion_port port = { 80, NULL };
    static const char *const discard[] = { "DiscardPK" };
    struct cp_add_onion a = { .key_type = "NEW", .key_blob = "ED25519-V3", .flags = discard, .n_flags = 1,
                              .ports = &port, .n_ports = 1 };
    struct reply_rec rr;
    char err[256], ids[2][57];
    const char *p;
    int i;

    ct_connect_ready(ct, CP_AUTH_SAFECOOKIE);
    for (i = 0; i < 2; i++) {
        ct_command(ct, cp_cmd_add_onion(&a, err, sizeof err), err, &rr);
        assert_int_equal(rr.status, 250);
        assert_null(strstr(rr.text, "PrivateKey="));
        p = strstr(rr.text, "ServiceID=");
        assert_non_null(p);
        memcpy(ids[i], p + 10, 56);
        ids[i][56] = '\0';
    }
    ct_command(ct, getinfo("onions/current", err, sizeof err), err, &rr);
    assert_int_equal(rr.status, 250);
    {
        char want[256];

        snprintf(want, sizeof want, "onions/current=\n%s\n%s\nOK\n", ids[0], ids[1]);
        assert_string_equal(rr.text, want);
    }
    /* ADD_ONION services belong to this control connection: closing it removes them (not checked
     * here: onions/current is per connection). */
    cp_conn_close(ct->c);
    assert_int_equal(ct->n_closed, 1);
    assert_string_equal(ct->closed_err, "(asked)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_safecookie_and_version, ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_auto_picks_safecookie, ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_cookie, ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_wrong_cookie, ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_commands, ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_conf_changed_event, ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_add_and_del_onion, ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_onions_current_data_block, ct_setup, ct_teardown),
    };

    signal(SIGPIPE, SIG_IGN); /* cp_conn's contract */
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
