/* test_tor.c — unit tests for sidecar/tor/tor.c (and tor_process.c) in attach mode against the scripted
 * fake control port (tests/fake/fake_ctl.c) on a real event loop.
 *
 * Covers: the verification of an attached tor (table: single-hop mode off, non-anonymous mode off, a
 * SocksPort or another client listener open -> failed() with a reason naming the problem, ready() never
 * called and no reconnect; a refused GETCONF -> a reconnect with backoff, no hand-over; a good tor ->
 * ready() with the connection, then bootstrapped() and RUNNING with the version and the uid of the control
 * socket's peer, a forged process/uid ignored with a warning naming both; 100 % reported while
 * still verifying), the order of the setup commands, a connection closed by tor -> lost() and a
 * reconnect after the 1 s backoff that verifies and hands over again, a hung tor (a command never
 * answered) -> lost() through the command timeout and a reconnect, a socket that is not there ->
 * reconnect attempts with growing backoff instead of a busy retry. Spawn mode (a real tor process) is
 * tested in tests/integration/test_faults.sh and test_core.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <event2/event.h>

#include "controlproto/cp_conn.h"
#include "sidecar/config/config.h"
#include "sidecar/core/log.h"
#include "sidecar/core/proc.h"
#include "sidecar/tor/tor.h"
#include "tests/fake/fake_ctl.h"
#include "tests/fake/tor_script.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct test {
    struct event_base *base;
    struct proc_mgr *procs;
    struct fake_ctl *fake;
    struct config *conf;
    struct tor_sup *tor;
    char tmpdir[64];
    int n_ready, n_lost, n_boot, n_failed, n_stopped;
    struct cp_conn *ready_conn;
    char lost_why[512];
    char failed_why[512];
    struct timespec lost_at, ready_at[4];
    /* A marker timer (marker_arm) and what it saw when it fired. */
    struct event *marker;
    unsigned marker_on_lost_ms; /* if set, on_lost arms the marker this far ahead */
    bool marker_fired;
    int ready_at_marker;
    unsigned restarts_at_marker;
};

static double ts_diff(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void on_ready(struct tor_sup *t, struct cp_conn *conn, void *arg)
{
    struct test *x = arg;
    assert_ptr_equal(t, x->tor);
    assert_non_null(conn);
    assert_int_equal(cp_conn_get_state(conn), CP_CONN_READY);
    if (x->n_ready < (int)ARRAY_LEN(x->ready_at))
        clock_gettime(CLOCK_MONOTONIC, &x->ready_at[x->n_ready]);
    x->n_ready++;
    x->ready_conn = conn;
}

static void marker_cb(evutil_socket_t fd, short what, void *arg)
{
    struct test *x = arg;
    (void)fd;
    (void)what;
    x->marker_fired = true;
    x->ready_at_marker = x->n_ready;
    x->restarts_at_marker = tor_sup_restarts(x->tor);
}

/* Order, not a stopwatch: a timer `ms` ahead on the loop, armed before (or in the same callback as, so on
 * the same cached clock) a backoff timer that is due later. libevent runs timers in the order of their
 * deadlines, so whatever the load, the marker sees the state before the backoff ran out. */
static void marker_arm(struct test *x, unsigned ms)
{
    if (!x->marker)
        x->marker = evtimer_new(x->base, marker_cb, x);
    assert_non_null(x->marker);
    x->marker_fired = false;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    assert_int_equal(evtimer_add(x->marker, &tv), 0);
}

static void on_lost(struct tor_sup *t, const char *why, void *arg)
{
    struct test *x = arg;
    (void)t;
    assert_non_null(why);
    x->n_lost++;
    x->ready_conn = NULL;
    clock_gettime(CLOCK_MONOTONIC, &x->lost_at);
    snprintf(x->lost_why, sizeof(x->lost_why), "%s", why);
    if (x->marker_on_lost_ms) /* tor.c arms its backoff right after this, in the same callback */
        marker_arm(x, x->marker_on_lost_ms);
}

static void on_bootstrapped(struct tor_sup *t, void *arg)
{
    struct test *x = arg;
    (void)t;
    x->n_boot++;
}

static void on_failed(struct tor_sup *t, const char *why, void *arg)
{
    struct test *x = arg;
    (void)t;
    assert_non_null(why);
    x->n_failed++;
    snprintf(x->failed_why, sizeof(x->failed_why), "%s", why);
}

static void on_stopped(struct tor_sup *t, void *arg)
{
    struct test *x = arg;
    (void)t;
    x->n_stopped++;
}

static int setup(void **state)
{
    struct test *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    x->base = event_base_new();
    assert_non_null(x->base);
    x->procs = proc_mgr_new(x->base);
    assert_non_null(x->procs);
    snprintf(x->tmpdir, sizeof(x->tmpdir), "/tmp/of-test-tor.XXXXXX");
    assert_non_null(mkdtemp(x->tmpdir));
    /* restarts are logged at warn, so they show in the test output; TEST_TOR_DEBUG=1 shows everything */
    log_set_level(getenv("TEST_TOR_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_WARN);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct test *x = *state;
    tor_sup_free(x->tor);
    if (x->marker)
        event_free(x->marker);
    config_free(x->conf);
    fake_ctl_free(x->fake);
    proc_mgr_free(x->procs);
    event_base_free(x->base);
    rmdir(x->tmpdir);
    free(x);
    return 0;
}

/* An attach-mode config for `socket` with a 1 s command timeout and backoff capped at `backoff_max`. */
static void make_config(struct test *x, const char *socket, unsigned backoff_max)
{
    char json[2048], err[512];
    int n = snprintf(json, sizeof(json),
                     "{ \"state_dir\": \"%s/state\", \"run_dir\": \"%s/run\","
                     "  \"tor\": { \"mode\": \"attach\", \"control_socket\": \"%s\", \"command_timeout\": 1,"
                     "           \"bootstrap_timeout\": 30, \"restart_backoff_max\": %u },"
                     "  \"services\": [ { \"name\": \"a\", \"ports\": [ { \"virtual\": 80, "
                     "\"target\": \"127.0.0.1:8080\" } ] } ] }",
                     x->tmpdir, x->tmpdir, socket, backoff_max);
    assert_true(n > 0 && (size_t)n < sizeof(json));
    x->conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!x->conf)
        fail_msg("config: %s", err);
}

static void start_tor(struct test *x)
{
    char err[512];
    static const struct tor_callbacks cbs = {
        .ready = on_ready,
        .lost = on_lost,
        .bootstrapped = on_bootstrapped,
        .failed = on_failed,
        .stopped = on_stopped,
    };
    x->tor = tor_sup_new(x->base, x->procs, x->conf, &cbs, x);
    assert_non_null(x->tor);
    assert_int_equal(tor_sup_state(x->tor), TOR_STOPPED);
    if (tor_sup_start(x->tor, err, sizeof(err)) < 0)
        fail_msg("tor_sup_start: %s", err);
}

/* Fake with `script`, and a supervisor attached to it. */
static void start_with(struct test *x, const struct fake_ctl_step *script, size_t n, unsigned backoff_max)
{
    char err[256];
    x->fake = fake_ctl_new(x->base, false, script, n, err, sizeof(err));
    if (!x->fake)
        fail_msg("fake: %s", err);
    make_config(x, fake_ctl_unix_path(x->fake), backoff_max);
    start_tor(x);
}

static void check_fake(struct test *x)
{
    const char *f = fake_ctl_failure(x->fake);
    if (f)
        fail_msg("fake control port: %s", f);
    assert_true(fake_ctl_done(x->fake));
}

static bool fake_finished(void *arg)
{
    struct test *x = arg;
    return fake_ctl_done(x->fake) || fake_ctl_failure(x->fake);
}

static bool got_failed(void *arg)
{
    struct test *x = arg;
    return x->n_failed > 0 || fake_ctl_failure(x->fake);
}

static bool got_bootstrapped(void *arg)
{
    struct test *x = arg;
    return x->n_boot > 0 || x->n_failed > 0 || fake_ctl_failure(x->fake);
}

/* Handed over a second time, and that tor reported 100 %. */
static bool running_again(void *arg)
{
    struct test *x = arg;
    return (x->n_ready >= 2 && tor_sup_state(x->tor) == TOR_RUNNING) || x->n_failed > 0 ||
           fake_ctl_failure(x->fake);
}

/* ---- verification of an attached tor ------------------------------------------------------------ */

static void test_attach_good_tor(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {GOOD_SESSION};
    start_with(x, script, ARRAY_LEN(script), 4);
    assert_int_equal(fake_ctl_run_until(x->base, got_bootstrapped, x, 5000), 0);
    check_fake(x);
    assert_int_equal(x->n_failed, 0);
    assert_int_equal(x->n_ready, 1);
    assert_int_equal(x->n_boot, 1);
    assert_int_equal(x->n_lost, 0);
    assert_int_equal(tor_sup_state(x->tor), TOR_RUNNING);
    assert_int_equal(tor_sup_bootstrap_progress(x->tor), 100);
    assert_string_equal(tor_sup_version(x->tor), "0.4.9.11");
    assert_ptr_equal(tor_sup_conn(x->tor), x->ready_conn);
    assert_int_equal(tor_sup_restarts(x->tor), 0);
    assert_int_equal(tor_sup_pid(x->tor), -1);
    assert_int_equal(tor_sup_uid(x->tor), geteuid()); /* the socket's peer (the fake: this process) */
}

/* A tor that claims another user's uid (process/uid) on its unix control socket: the uid that counts, and
 * that root would hand the key directories to, is the kernel's (SO_PEERCRED: the fake is this process, so
 * ours), never the claimed one; onionfront goes on (the peer is its own user) and warns, naming both. */
static void test_attach_forged_uid(void **state)
{
    struct test *x = *state;
    long forged = geteuid() == 4242 ? 4243 : 4242;
    char getinfo[512], logged[4096] = "", path[128];
    snprintf(getinfo, sizeof(getinfo),
             "250-net/listeners/socks=\r\n250-net/listeners/trans=\r\n250-net/listeners/natd=\r\n"
             "250-net/listeners/dns=\r\n250-net/listeners/httptunnel=\r\n250-version=0.4.9.11\r\n"
             "250-process/uid=%ld\r\n250 OK\r\n", forged);
    /* (the script lives as long as the test: the fake reads it until teardown) */
    struct fake_ctl_step goes_on[] = {AUTH_AND_SETUP(GOOD_GETCONF, getinfo), {FAKE_CTL_EXPECT, BOOTSTRAP_LINE, 0},
                                      {FAKE_CTL_SEND, BOOTSTRAP_DONE, 0}};
    /* The log goes to stderr: catch it in a file for the run. */
    snprintf(path, sizeof(path), "%s/stderr", x->tmpdir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    start_with(x, goes_on, ARRAY_LEN(goes_on), 4);
    int rc = fake_ctl_run_until(x->base, got_bootstrapped, x, 5000);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    logged[fread(logged, 1, sizeof(logged) - 1, f)] = '\0';
    fclose(f);
    unlink(path);
    assert_int_equal(rc, 0);
    check_fake(x);
    assert_int_equal(x->n_failed, 0);
    assert_int_equal(x->n_ready, 1);
    assert_int_equal(tor_sup_uid(x->tor), geteuid());
    char want[256];
    snprintf(want, sizeof(want), "tor says it runs as uid %ld (GETINFO process/uid), but the process at the other "
             "end of its control socket runs as uid %lu (SO_PEERCRED)", forged, (unsigned long)geteuid());
    if (!strstr(logged, want))
        fail_msg("no warning naming both uids in the log:\n%s", logged);
}

static void test_attach_bootstrapped_while_configuring(void **state)
{
    struct test *x = *state;
    /* A warm tor reaches 100 % between SETEVENTS and the end of the verification: the event arrives
     * while CONFIGURING, and the GETINFO after the hand-over says 100 % again. That must still count. */
    static const struct fake_ctl_step script[] = {
        {FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0},
        {FAKE_CTL_SEND, PROTOCOLINFO_NULL, 0},
        {FAKE_CTL_EXPECT, "AUTHENTICATE", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, SETEVENTS_LINE, 0},
        {FAKE_CTL_SEND, "250 OK\r\n650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY=\"Done\"\r\n", 0},
        {FAKE_CTL_EXPECT, GETCONF_LINE, 0},
        {FAKE_CTL_SEND, GOOD_GETCONF, 0},
        {FAKE_CTL_EXPECT, GETINFO_LINE, 0},
        {FAKE_CTL_SEND, GOOD_GETINFO, 0},
        {FAKE_CTL_EXPECT, BOOTSTRAP_LINE, 0},
        {FAKE_CTL_SEND, BOOTSTRAP_DONE, 0},
    };
    start_with(x, script, ARRAY_LEN(script), 4);
    assert_int_equal(fake_ctl_run_until(x->base, got_bootstrapped, x, 3000), 0);
    check_fake(x);
    assert_int_equal(x->n_ready, 1);
    assert_int_equal(x->n_boot, 1);
    assert_int_equal(tor_sup_state(x->tor), TOR_RUNNING);
}

static bool progress_is_50(void *arg)
{
    struct test *x = arg;
    return tor_sup_bootstrap_progress(x->tor) == 50 || x->n_failed > 0 || fake_ctl_failure(x->fake);
}

/* A bootstrap figure tor cannot send is ignored, not read as a number: "4294967396" (atoi gave 100 on
 * glibc) must not make a tor that is still bootstrapping count as bootstrapped. The event after it shows
 * that the answer has been read. */
static void test_attach_progress_out_of_range(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {
        AUTH_AND_SETUP(GOOD_GETCONF, GOOD_GETINFO),
        {FAKE_CTL_EXPECT, BOOTSTRAP_LINE, 0},
        {FAKE_CTL_SEND,
         "250-status/bootstrap-phase=NOTICE BOOTSTRAP PROGRESS=4294967396 TAG=done SUMMARY=\"Done\"\r\n250 OK\r\n"
         "650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=50 TAG=loading_descriptors SUMMARY=\"Loading\"\r\n", 0},
    };
    start_with(x, script, ARRAY_LEN(script), 4);
    assert_int_equal(fake_ctl_run_until(x->base, progress_is_50, x, 5000), 0);
    check_fake(x);
    assert_int_equal(x->n_failed, 0);
    assert_int_equal(x->n_boot, 0);
    assert_int_equal(tor_sup_state(x->tor), TOR_BOOTSTRAPPING);
}

struct refuse_case {
    const char *name;
    const char *getconf;    /* answer to the GETCONF of the mode options */
    const char *getinfo;    /* answer to the GETINFO of the listeners, NULL if not asked */
    const char *reason;     /* must appear in failed()'s message */
};

static void test_attach_refused_table(void **state)
{
    struct test *x = *state;
    static const struct refuse_case cases[] = {
        {"single-hop mode off", "250-HiddenServiceSingleHopMode=0\r\n250 HiddenServiceNonAnonymousMode=1\r\n",
         GOOD_GETINFO, "HiddenServiceSingleHopMode is not 1"},
        {"non-anonymous mode off", "250-HiddenServiceSingleHopMode=1\r\n250 HiddenServiceNonAnonymousMode=0\r\n",
         GOOD_GETINFO, "HiddenServiceNonAnonymousMode is not 1"},
        {"mode option missing from the answer", "250 HiddenServiceNonAnonymousMode=1\r\n", GOOD_GETINFO,
         "HiddenServiceSingleHopMode is not 1"},
        {"a SocksPort listener", GOOD_GETCONF,
         "250-net/listeners/socks=\"127.0.0.1:9050\"\r\n250-net/listeners/trans=\r\n250-net/listeners/natd=\r\n"
         "250-net/listeners/dns=\r\n250-net/listeners/httptunnel=\r\n250-version=0.4.9.11\r\n250 OK\r\n",
         "client port"},
        {"a DNSPort listener", GOOD_GETCONF,
         "250-net/listeners/socks=\r\n250-net/listeners/trans=\r\n250-net/listeners/natd=\r\n"
         "250-net/listeners/dns=\"127.0.0.1:5353\"\r\n250-net/listeners/httptunnel=\r\n250-version=0.4.9.11\r\n"
         "250 OK\r\n",
         "client port"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        const struct refuse_case *c = &cases[i];
        struct fake_ctl_step script[] = {AUTH_AND_SETUP(c->getconf, c->getinfo), {FAKE_CTL_EXPECT_EOF, NULL, 0}};
        print_message("case: %s\n", c->name);
        start_with(x, script, ARRAY_LEN(script), 4);
        assert_int_equal(fake_ctl_run_until(x->base, got_failed, x, 5000), 0);
        assert_int_equal(x->n_failed, 1);
        if (!strstr(x->failed_why, c->reason) || !strstr(x->failed_why, "refusing to use this tor"))
            fail_msg("case %s: failed() said \"%s\", expected \"%s\"", c->name, x->failed_why, c->reason);
        assert_int_equal(x->n_ready, 0);
        assert_int_equal(tor_sup_state(x->tor), TOR_FAILED);
        assert_null(tor_sup_conn(x->tor));
        /* the connection to the refused tor is closed, and no reconnect follows */
        assert_int_equal(fake_ctl_run_until(x->base, fake_finished, x, 3000), 0);
        check_fake(x);
        struct timeval quiet = {1, 500000};
        event_base_loopexit(x->base, &quiet);
        event_base_dispatch(x->base);
        assert_int_equal(fake_ctl_connections(x->fake), 1);
        assert_int_equal(tor_sup_restarts(x->tor), 0);
        tor_sup_free(x->tor);
        x->tor = NULL;
        config_free(x->conf);
        x->conf = NULL;
        fake_ctl_free(x->fake);
        x->fake = NULL;
        x->n_failed = x->n_ready = 0;
    }
}

static void test_attach_getconf_refused(void **state)
{
    struct test *x = *state;
    /* A tor that refuses GETCONF (a restricted controller): not verifiable, so not used; in attach mode a
     * failed command means a reconnect with backoff, not a hand-over. */
    static const struct fake_ctl_step script[] = {
        AUTH_AND_SETUP("552 Unrecognized configuration key \"HiddenServiceSingleHopMode\"\r\n", ""),
    };
    /* the GETINFO expectation of AUTH_AND_SETUP is never reached: run only the steps up to the refusal */
    start_with(x, script, ARRAY_LEN(script) - 2, 4);
    struct timeval bound = {0, 500000}; /* within the first backoff step */
    event_base_loopexit(x->base, &bound);
    event_base_dispatch(x->base);
    check_fake(x);
    assert_int_equal(x->n_ready, 0);
    assert_int_equal(tor_sup_state(x->tor), TOR_BACKOFF);
    assert_int_equal(tor_sup_restarts(x->tor), 1);
}

/* ---- connection loss and reconnect ---------------------------------------------------------------- */

static void test_attach_closed_by_tor_reconnects(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {
        GOOD_SESSION,
        {FAKE_CTL_PAUSE, NULL, 100},
        {FAKE_CTL_CLOSE, NULL, 0},
        /* the second connection: authenticate, subscribe, verify again */
        GOOD_SESSION,
    };
    x->marker_on_lost_ms = 999; /* 1 ms before the first backoff step ends */
    start_with(x, script, ARRAY_LEN(script), 4);
    assert_int_equal(fake_ctl_run_until(x->base, running_again, x, 6000), 0);
    assert_int_equal(fake_ctl_run_until(x->base, fake_finished, x, 3000), 0);
    check_fake(x);
    assert_int_equal(x->n_failed, 0);
    assert_int_equal(x->n_lost, 1);
    if (!strstr(x->lost_why, "control connection lost"))
        fail_msg("lost() said \"%s\"", x->lost_why);
    assert_int_equal(x->n_ready, 2);
    assert_int_equal(x->n_boot, 2);
    assert_int_equal(fake_ctl_connections(x->fake), 2);
    assert_int_equal(tor_sup_restarts(x->tor), 1);
    /* the reconnect waited for the first backoff step (1 s): not reconnected when the marker fired */
    double waited = ts_diff(&x->lost_at, &x->ready_at[1]);
    print_message("reconnected %.2f s after the loss\n", waited);
    assert_true(x->marker_fired);
    assert_int_equal(x->ready_at_marker, 1);
    assert_int_equal(tor_sup_state(x->tor), TOR_RUNNING);
    assert_ptr_equal(tor_sup_conn(x->tor), x->ready_conn);
}

static void test_attach_hung_tor_times_out(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {
        AUTH_AND_SETUP(GOOD_GETCONF, GOOD_GETINFO),
        /* hung: the bootstrap query is read but never answered; the client must give up and close */
        {FAKE_CTL_EXPECT, BOOTSTRAP_LINE, 0},
        {FAKE_CTL_EXPECT_EOF, NULL, 0},
        GOOD_SESSION,
    };
    start_with(x, script, ARRAY_LEN(script), 4);
    assert_int_equal(fake_ctl_run_until(x->base, running_again, x, 8000), 0);
    assert_int_equal(fake_ctl_run_until(x->base, fake_finished, x, 3000), 0);
    check_fake(x);
    assert_int_equal(x->n_lost, 1);
    if (!strstr(x->lost_why, "no reply"))
        fail_msg("lost() said \"%s\"", x->lost_why);
    /* command_timeout 1 s: cp_conn keeps it on CLOCK_MONOTONIC from the command, sent after ready(); so
     * the loss comes not before 1 s after ready_at (the same clock; less cp_conn's rounding to 1 us) */
    double gap = ts_diff(&x->ready_at[0], &x->lost_at);
    print_message("declared lost %.2f s after the unanswered command\n", gap);
    assert_true(gap >= 1.0 - 1e-6);
    assert_int_equal(x->n_ready, 2);
    assert_int_equal(tor_sup_state(x->tor), TOR_RUNNING);
}

/* /proc/<pid>/stat's CPU time: utime + stime (fields 14 and 15), whatever the command name holds. */
static void test_stat_cpu_ticks(void **state)
{
    (void)state;
    static const struct {
        const char *stat;
        int rc;
        unsigned long long ticks;
    } cases[] = {
        {"4242 (tor) S 1 4242 4242 0 -1 4194560 3000 0 0 0 150 25 0 0 20 0 1 0 100 50000000 3000", 0, 175},
        {"4242 (a b) c) R 1 4242 4242 0 -1 0 0 0 0 0 7 8 0 0", 0, 15}, /* ')' and spaces in the name */
        {"4242 (tor) S 1 4242", -1, 0},                                  /* cut short */
        {"4242 tor S 1", -1, 0},                                         /* no name in parentheses */
        {"", -1, 0},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        unsigned long long got = 0;
        int rc = tor_stat_cpu_ticks(cases[i].stat, &got);
        if (rc != cases[i].rc || (rc == 0 && got != cases[i].ticks))
            fail_msg("case %zu: rc %d ticks %llu", i, rc, got);
    }
    assert_int_equal(tor_stat_cpu_ticks(NULL, &(unsigned long long){0}), -1);
}

/* A busy tor is not a hung one: the bootstrap query answered only after 2.5 s (command_timeout 1 s),
 * while tor's process (process/pid: here a child of the test that spins) uses CPU, costs no restart. A
 * process that sleeps instead is hung: test_attach_hung_tor_times_out (no process/pid) and below. */
static bool booted(void *arg)
{
    return ((struct test *)arg)->n_boot > 0;
}

static pid_t spawn_child(bool spin)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(30); /* never outlive the test */
        for (volatile unsigned long i = 0; spin || i == 0; i += spin)
            if (!spin)
                pause();
        _exit(0);
    }
    return pid;
}

static void busy_session(struct test *x, pid_t pid, bool answers)
{
    char getinfo[512];
    snprintf(getinfo, sizeof(getinfo),
             "250-net/listeners/socks=\r\n250-net/listeners/trans=\r\n250-net/listeners/natd=\r\n"
             "250-net/listeners/dns=\r\n250-net/listeners/httptunnel=\r\n250-version=0.4.9.11\r\n"
             "250-process/pid=%ld\r\n250 OK\r\n", (long)pid);
    const struct fake_ctl_step busy[] = {AUTH_AND_SETUP(GOOD_GETCONF, getinfo), {FAKE_CTL_EXPECT, BOOTSTRAP_LINE, 0},
                                         {FAKE_CTL_PAUSE, NULL, 2500}, {FAKE_CTL_SEND, BOOTSTRAP_DONE, 0}};
    const struct fake_ctl_step hung[] = {AUTH_AND_SETUP(GOOD_GETCONF, getinfo), {FAKE_CTL_EXPECT, BOOTSTRAP_LINE, 0},
                                         {FAKE_CTL_EXPECT_EOF, NULL, 0}};
    start_with(x, answers ? busy : hung, answers ? ARRAY_LEN(busy) : ARRAY_LEN(hung), 4);
    assert_int_equal(fake_ctl_run_until(x->base, fake_finished, x, 8000), 0);
    if (fake_ctl_failure(x->fake) || (answers && x->n_lost))
        fail_msg("fake: %s; lost: %s", fake_ctl_failure(x->fake) ? fake_ctl_failure(x->fake) : "ok", x->lost_why);
}

static void test_attach_busy_tor_not_restarted(void **state)
{
    struct test *x = *state;
    pid_t pid = spawn_child(true);
    busy_session(x, pid, true);
    assert_int_equal(fake_ctl_run_until(x->base, booted, x, 3000), 0);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(x->n_lost, 0);
    assert_int_equal(tor_sup_restarts(x->tor), 0);
    assert_int_equal(x->n_boot, 1);
}

static void test_attach_idle_unanswering_tor_restarted(void **state)
{
    struct test *x = *state;
    pid_t pid = spawn_child(false);
    busy_session(x, pid, false);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(x->n_lost, 1);
    if (!strstr(x->lost_why, "no reply to a command within 1.000 s; connection closed"))
        fail_msg("lost() said \"%s\"", x->lost_why);
}

static bool restarts_at_least_3(void *arg)
{
    struct test *x = arg;
    return tor_sup_restarts(x->tor) >= 3;
}

static void test_attach_missing_socket_backs_off(void **state)
{
    struct test *x = *state;
    char path[128];
    snprintf(path, sizeof(path), "%s/no-such.sock", x->tmpdir);
    make_config(x, path, 2);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    marker_arm(x, 2999); /* armed before the backoffs (1 s, then 2 s): the third failure comes later */
    start_tor(x);
    /* the first attempt failed at once: backoff, not a busy retry */
    assert_int_equal(tor_sup_state(x->tor), TOR_BACKOFF);
    assert_int_equal(tor_sup_restarts(x->tor), 1);
    /* attempts at 0, +1 s, +2 s (then capped at 2 s): the third failure comes after ~3 s */
    assert_int_equal(fake_ctl_run_until(x->base, restarts_at_least_3, x, 6000), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = ts_diff(&t0, &t1);
    print_message("3 failed attempts in %.2f s\n", took);
    assert_true(x->marker_fired);
    assert_true(x->restarts_at_marker <= 2);
    assert_int_equal(tor_sup_restarts(x->tor), 3);
    assert_int_equal(x->n_ready, 0);
    assert_int_equal(x->n_lost, 0); /* nothing was handed over, so nothing is lost */
    assert_int_equal(x->n_failed, 0);
    /* stopping during backoff ends at once */
    tor_sup_stop(x->tor);
    assert_int_equal(x->n_stopped, 1);
    assert_int_equal(tor_sup_state(x->tor), TOR_STOPPED);
}

static void test_attach_stop_closes(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {GOOD_SESSION, {FAKE_CTL_EXPECT_EOF, NULL, 0}};
    start_with(x, script, ARRAY_LEN(script), 4);
    assert_int_equal(fake_ctl_run_until(x->base, got_bootstrapped, x, 5000), 0);
    tor_sup_stop(x->tor);
    assert_int_equal(fake_ctl_run_until(x->base, fake_finished, x, 3000), 0);
    check_fake(x);
    assert_int_equal(x->n_stopped, 1);
    assert_int_equal(tor_sup_state(x->tor), TOR_STOPPED);
    assert_int_equal(tor_sup_restarts(x->tor), 0);
}

static void test_state_str(void **state)
{
    (void)state;
    static const struct {
        enum tor_state s;
        const char *text;
    } table[] = {
        {TOR_STOPPED, "stopped"},         {TOR_STARTING, "starting"}, {TOR_CONFIGURING, "configuring"},
        {TOR_BOOTSTRAPPING, "bootstrapping"}, {TOR_RUNNING, "running"}, {TOR_BACKOFF, "backoff"},
        {TOR_FAILED, "failed"},
    };
    for (size_t i = 0; i < ARRAY_LEN(table); i++)
        assert_string_equal(tor_state_str(table[i].s), table[i].text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_str),
        cmocka_unit_test_setup_teardown(test_attach_good_tor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_forged_uid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_bootstrapped_while_configuring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_progress_out_of_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_refused_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_getconf_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_closed_by_tor_reconnects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_hung_tor_times_out, setup, teardown),
        cmocka_unit_test(test_stat_cpu_ticks),
        cmocka_unit_test_setup_teardown(test_attach_busy_tor_not_restarted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_idle_unanswering_tor_restarted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_missing_socket_backs_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_stop_closes, setup, teardown),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
