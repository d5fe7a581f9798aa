/* test_roll.c — unit tests for sidecar/fleet/roll.c, the rolling restart of the tors.
 *
 * Why: a roll must never end the tor whose descriptors HSDirs serve while no other is confirmed as
 * served, must wait for each restarted tor to run and publish before touching the next, and must stop
 * (once, with a reason) when another tor dies or a step overruns. Real tors: test_roll.sh.
 *
 * Covers, with fake tors (struct roll_ops) and a fake clock: the order (the tor not served first, no new
 * upload needed; then the other, served by the first), the hand-over (first a wait for an upload in
 * progress; then a survivor renews, and nothing is ended until its upload is confirmed), the waits (RUNNING, then published after the stop), one tor (a
 * plain restart), refusals (a tor down, a roll running; the operator's restart-tor within its minimum
 * interval), aborts (the other tor down mid-roll through the
 * tick and through roll_worker_lost, each step's deadline), roll_to_json, roll_metrics. The drain: the tor
 * is wound down first (drain_start), and ended only at a look that finds neither a rendezvous circuit
 * open on it (none known before its first look) nor a visitor's stream through it, or at the drain limit
 * with what is open cut and counted; another tor dying while one drains aborts and makes the draining tor
 * publish again (drain_stop); a draining tor that dies by itself is waited for; one tor, or a limit of
 * 0, is restarted without a drain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/fleet/roll.h"

#define N_MAX 4
#define DRAIN_S 40.0 /* the drain limit set in setup (tor.drain_timeout) */

/* Fake tors: each has a latest upload round (`round_at`) and the start of the latest round every HSDir
 * confirmed (`complete_at`, -1 none); actions are recorded as text ("R1" renew tor 1, "S2" restart tor 2). */
struct fake {
    size_t n;
    double now;
    bool up[N_MAX];
    unsigned restarts[N_MAX];
    double round_at[N_MAX], complete_at[N_MAX];
    unsigned streams[N_MAX]; /* visitors' streams open through each tor */
    long rend[N_MAX];        /* rendezvous circuits open on each tor (-1: its drain had no look yet) */
    bool draining[N_MAX];    /* drain_start called, not drain_stop nor a restart since */
    unsigned drain_starts[N_MAX], drain_stops[N_MAX];
    unsigned cut;            /* streams open through a tor when it was ended */
    unsigned long circ_cut;  /* rendezvous circuits open on a tor when it was ended */
    char actions[128];
    int renew_rc;
};

static size_t f_count(void *arg)
{
    return ((struct fake *)arg)->n;
}

static bool f_is_up(void *arg, size_t k)
{
    return ((struct fake *)arg)->up[k];
}

static unsigned f_restarts(void *arg, size_t k)
{
    return ((struct fake *)arg)->restarts[k];
}

static bool f_serves(void *arg, size_t s, size_t k)
{
    struct fake *f = arg;
    return f->complete_at[s] >= 0 && f->complete_at[s] > f->round_at[k];
}

static bool f_published_since(void *arg, size_t k, double since)
{
    struct fake *f = arg;
    return f->complete_at[k] >= since;
}

static void f_record(struct fake *f, char what, size_t k)
{
    size_t len = strlen(f->actions);
    snprintf(f->actions + len, sizeof(f->actions) - len, "%s%c%zu", len ? " " : "", what, k + 1);
}

static int f_renew(void *arg, size_t k, size_t gone)
{
    struct fake *f = arg;
    (void)gone; /* every fake tor hosts every service */
    f_record(f, 'R', k);
    if (f->renew_rc == 0)
        f->round_at[k] = f->now; /* a new round, not confirmed yet */
    return f->renew_rc;
}

static unsigned f_open_streams(void *arg, size_t k)
{
    return ((struct fake *)arg)->streams[k];
}

static int f_drain_start(void *arg, size_t k)
{
    struct fake *f = arg;
    if (!f->up[k])
        return -1;
    f->draining[k] = true;
    f->drain_starts[k]++;
    return 0;
}

static void f_drain_stop(void *arg, size_t k)
{
    struct fake *f = arg;
    f->draining[k] = false;
    f->drain_stops[k]++;
}

static long f_rend_circuits(void *arg, size_t k)
{
    struct fake *f = arg;
    return f->draining[k] ? f->rend[k] : -1;
}

/* Drained: looks found no circuit (here: none open; the quiet time is circdrain's, test_circdrain). */
static bool f_drained(void *arg, size_t k)
{
    struct fake *f = arg;
    return f->draining[k] && f->rend[k] == 0;
}

static void f_restart(void *arg, size_t k, const char *why)
{
    struct fake *f = arg;
    assert_non_null(strstr(why, "rolling restart"));
    f_record(f, 'S', k);
    f->cut += f->streams[k]; /* the tor's end cuts what is open through it */
    f->circ_cut += f->rend[k] > 0 ? (unsigned long)f->rend[k] : 0;
    f->rend[k] = 0;
    f->draining[k] = false;
    f->streams[k] = 0;
    f->up[k] = false;
    f->restarts[k]++;
}

static double f_now(void *arg)
{
    return ((struct fake *)arg)->now;
}

/* Tor k uploads a new round now and every HSDir confirms it. */
static void f_publish(struct fake *f, size_t k)
{
    f->round_at[k] = f->complete_at[k] = f->now;
}

struct test {
    struct fake f;
    struct roll *r;
    char msg[256];
};

static int setup(void **state)
{
    struct test *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    log_set_level(getenv("TEST_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_ERROR);
    x->f.n = 2;
    x->f.now = 1000;
    for (size_t k = 0; k < N_MAX; k++) {
        x->f.up[k] = true;
        x->f.round_at[k] = x->f.complete_at[k] = -1;
    }
    struct roll_ops ops = {.arg = &x->f,
                           .count = f_count,
                           .is_up = f_is_up,
                           .restarts = f_restarts,
                           .serves = f_serves,
                           .published_since = f_published_since,
                           .renew = f_renew,
                           .open_streams = f_open_streams,
                           .drain_start = f_drain_start,
                           .drain_stop = f_drain_stop,
                           .rend_circuits = f_rend_circuits,
                           .drained = f_drained,
                           .restart = f_restart,
                           .now = f_now};
    x->r = roll_new(NULL, &ops);
    assert_non_null(x->r);
    roll_set_drain_limit(x->r, DRAIN_S);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct test *x = *state;
    roll_free(x->r);
    free(x);
    return 0;
}

static void advance(struct test *x, double s)
{
    x->f.now += s;
    roll_tick(x->r);
}

/* Tor k (0-based) comes back from its restart and publishes; the roll moves on. */
static void come_back(struct test *x, size_t k)
{
    advance(x, 2);
    x->f.up[k] = true;
    advance(x, 0.25);
    assert_int_equal(roll_state(x->r), ROLL_PUBLISHING);
    assert_int_equal(roll_current(x->r), (long)k);
    f_publish(&x->f, k);
    advance(x, 0.25);
}

static void assert_last(struct test *x, bool ok, const char *part)
{
    const char *m;
    assert_false(roll_is_running(x->r));
    assert_int_equal(roll_last_ok(x->r, &m), ok);
    assert_non_null(strstr(m, part));
}

/* HSDirs serve tor 1 (it uploaded last): tor 2 goes first without any new upload, then tor 1, which tor 2
 * serves by then. */
static void test_order_not_served_first(void **state)
{
    struct test *x = *state;
    x->f.round_at[1] = x->f.complete_at[1] = 900;
    x->f.round_at[0] = x->f.complete_at[0] = 950;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_non_null(strstr(x->msg, "rolling restart of 2 tors"));
    assert_string_equal(x->f.actions, "S2");
    assert_int_equal(roll_current(x->r), 1);
    come_back(x, 1);
    assert_string_equal(x->f.actions, "S2 S1");
    come_back(x, 0);
    assert_string_equal(x->f.actions, "S2 S1");
    assert_last(x, true, "restarted 2 tors");
}

/* Nobody is confirmed as served (tor 2's last round is not confirmed everywhere): tor 2 renews, and tor 1
 * is ended only once that upload is confirmed. */
static void test_handover_waits_for_confirmation(void **state)
{
    struct test *x = *state;
    x->f.round_at[0] = x->f.complete_at[0] = 900;
    x->f.round_at[1] = 950; /* pending */
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_string_equal(x->f.actions, ""); /* an upload in progress may still settle it */
    advance(x, ROLL_SETTLE_S - 1);
    assert_string_equal(x->f.actions, "");
    advance(x, 1);
    assert_string_equal(x->f.actions, "R2");
    json_t *j = roll_to_json(x->r);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "handover");
    assert_int_equal(json_integer_value(json_object_get(j, "current")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "survivor")), 2);
    json_decref(j);
    for (int i = 0; i < 20; i++)
        advance(x, 1);
    assert_string_equal(x->f.actions, "R2"); /* still waiting: tor 1 untouched */
    assert_int_equal(roll_state(x->r), ROLL_HANDOVER);
    f_publish(&x->f, 1);
    advance(x, 0.25);
    assert_string_equal(x->f.actions, "R2 S1");
    /* RUNNING is not enough: tor 1 must publish after its stop; an old confirmed round does not count */
    advance(x, 2);
    x->f.up[0] = true;
    for (int i = 0; i < 10; i++)
        advance(x, 1);
    assert_int_equal(roll_current(x->r), 0);
    f_publish(&x->f, 0);
    advance(x, 0.25);
    /* tor 1 now serves: tor 2 restarts without another hand-over */
    assert_string_equal(x->f.actions, "R2 S1 S2");
    come_back(x, 1);
    assert_last(x, true, "restarted 2 tors");
}

/* Nobody is served at the start, but tor 2's upload in progress completes within ROLL_SETTLE_S: tor 1
 * restarts without a hand-over. */
static void test_settle_without_handover(void **state)
{
    struct test *x = *state;
    x->f.round_at[0] = x->f.complete_at[0] = 900;
    x->f.round_at[1] = 950; /* pending */
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    advance(x, 3);
    assert_string_equal(x->f.actions, "");
    x->f.complete_at[1] = 950;
    advance(x, 0.25);
    assert_string_equal(x->f.actions, "S1");
    come_back(x, 0);
    come_back(x, 1);
    assert_string_equal(x->f.actions, "S1 S2");
    assert_last(x, true, "restarted 2 tors");
}

/* A restarted tor that is up but has not restarted (the count did not grow) is not taken as back. */
static void test_restart_must_take(void **state)
{
    struct test *x = *state;
    x->f.n = 1;
    f_publish(&x->f, 0);
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_non_null(strstr(x->msg, "unreachable until it is back"));
    assert_string_equal(x->f.actions, "S1"); /* one tor: a plain restart, no hand-over */
    assert_int_equal(x->f.drain_starts[0], 0); /* nor a drain: nothing else serves meanwhile */
    x->f.up[0] = true;
    x->f.restarts[0]--; /* as if the restart had not happened */
    advance(x, 1);
    x->f.now += 1;
    f_publish(&x->f, 0);
    advance(x, 1);
    assert_true(roll_is_running(x->r));
    x->f.restarts[0]++;
    advance(x, 1);
    advance(x, 1);
    assert_last(x, true, "restarted 1 tor");
}

static void test_refusals(void **state)
{
    struct test *x = *state;
    x->f.up[1] = false;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), -1);
    assert_non_null(strstr(x->msg, "tor 2 is not up"));
    assert_string_equal(x->f.actions, "");
    x->f.up[1] = true;
    x->f.round_at[0] = x->f.complete_at[0] = 1;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_int_equal(roll_start(x->r, "again", x->msg, sizeof(x->msg)), -1);
    assert_non_null(strstr(x->msg, "already running"));
    x->f.renew_rc = -1;
    roll_abort(x->r, "shutting down");
    assert_last(x, false, "shutting down");
    /* a survivor that cannot renew: aborted before anything is ended */
    x->f.round_at[0] = x->f.complete_at[0] = -1;
    x->f.up[1] = true;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    advance(x, ROLL_SETTLE_S);
    assert_last(x, false, "cannot publish");
    assert_int_equal(x->f.restarts[0] + x->f.restarts[1], 1); /* only the first roll's restart */
}

/* One tor back from its restart and published: the roll ends. */
static void finish_one(struct test *x)
{
    x->f.up[0] = true;
    advance(x, 1);
    x->f.now += 1;
    f_publish(&x->f, 0);
    advance(x, 1);
    assert_false(roll_is_running(x->r));
}

/* The operator's restart-tor: refused within ROLL_COMMAND_INTERVAL_S of the last one it started (saying
 * how long to wait, and that a roll runs if one does), on the roll's clock, and after that while a roll
 * runs; a roll onionfront starts itself (a new tor.binary) is neither refused by that interval nor counted
 * in it. Table: seconds after the first command, which start, expected result, text. */
static void test_command_interval(void **state)
{
    struct test *x = *state;
    static const struct {
        double at;
        bool command;
        int rc;
        const char *text;
    } steps[] = {
        {0, true, 0, "restarting the one tor"},
        {0, true, -1, "the last restart-tor started 0 s ago; at most one every 60 s: try again in 60 s (a "
                      "rolling restart is running now)"},
        {10, true, -1, "the last restart-tor started 10 s ago; at most one every 60 s: try again in 50 s"},
        {12, false, 0, "restarting the one tor"}, /* tor.binary changed: not limited */
        {30, true, -1, "the last restart-tor started 30 s ago; at most one every 60 s: try again in 30 s"},
        {59.5, true, -1, "try again in 1 s"},
        {60, true, 0, "restarting the one tor"},
        {70, true, -1, "the last restart-tor started 10 s ago; at most one every 60 s: try again in 50 s"},
        {130, false, 0, "restarting the one tor"},
        {130, true, -1, "a rolling restart is already running"}, /* past the interval: roll_start's refusal */
    };
    x->f.n = 1;
    f_publish(&x->f, 0);
    double t0 = x->f.now;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        if (roll_is_running(x->r) && x->f.now < t0 + steps[i].at)
            finish_one(x);
        if (x->f.now < t0 + steps[i].at)
            x->f.now = t0 + steps[i].at;
        int rc = steps[i].command ? roll_start_command(x->r, "test", x->msg, sizeof(x->msg))
                                  : roll_start(x->r, "test", x->msg, sizeof(x->msg));
        if (rc != steps[i].rc || !strstr(x->msg, steps[i].text))
            fail_msg("step %zu (at %.1f s): rc %d, \"%s\"; expected %d, \"%s\"", i, steps[i].at, rc, x->msg,
                     steps[i].rc, steps[i].text);
    }
}

/* The other tor dies while tor 2 restarts: aborted once, nothing more is restarted. */
static void test_abort_other_dies(void **state)
{
    struct test *x = *state;
    x->f.round_at[0] = x->f.complete_at[0] = 950;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_string_equal(x->f.actions, "S2");
    advance(x, 1);
    x->f.up[0] = false;
    advance(x, 0.25);
    assert_last(x, false, "tor 1 went down while tor 2 was restarting");
    x->f.up[0] = x->f.up[1] = true;
    f_publish(&x->f, 1);
    advance(x, 1);
    assert_string_equal(x->f.actions, "S2");
    json_t *j = roll_to_json(x->r);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "idle");
    json_t *last = json_object_get(j, "last_result");
    assert_false(json_is_true(json_object_get(last, "ok")));
    assert_int_equal(json_integer_value(json_object_get(j, "aborted")), 1);
    json_decref(j);
    struct metrics *m = metrics_new();
    assert_non_null(m);
    assert_int_equal(roll_metrics(x->r, m), 0);
    const char *text = metrics_text(m, NULL);
    assert_non_null(strstr(text, "onionfront_tor_rolls_total{result=\"ok\"} 0\n"));
    assert_non_null(strstr(text, "onionfront_tor_rolls_total{result=\"aborted\"} 1\n"));
    assert_non_null(strstr(text, "onionfront_tor_roll_running 0\n"));
    metrics_free(m);

    /* again, through the worker's lost report (before any tick), during the hand-over */
    x->f.round_at[0] = x->f.complete_at[0] = -1;
    x->f.round_at[1] = x->f.complete_at[1] = -1;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    advance(x, ROLL_SETTLE_S);
    assert_string_equal(x->f.actions, "S2 R2");
    roll_worker_lost(x->r, 0, "ignored: the one being restarted"); /* tor 1 is current: no abort */
    assert_true(roll_is_running(x->r));
    roll_worker_lost(x->r, 1, "killed");
    assert_last(x, false, "tor 2 was lost (killed)");
    advance(x, 100);
    assert_string_equal(x->f.actions, "S2 R2");
}

static json_int_t json_int_at(struct test *x, const char *key)
{
    json_t *j = roll_to_json(x->r);
    json_t *v = json_object_get(j, key);
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1; /* -1: null */
    json_decref(j);
    return n;
}

/* The drain: a tor is ended only at a look that finds no visitor's stream open through it; while streams
 * are open the roll waits (status shows it), and the next tor is drained the same way. */
static void test_drain_waits_for_streams(void **state)
{
    struct test *x = *state;
    x->f.round_at[0] = x->f.complete_at[0] = 950; /* HSDirs serve tor 1: tor 2 goes first */
    x->f.streams[1] = 3;
    x->f.streams[0] = 5;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_string_equal(x->f.actions, "");
    assert_int_equal(roll_state(x->r), ROLL_DRAINING);
    assert_int_equal(roll_current(x->r), 1);
    json_t *j = roll_to_json(x->r);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "draining");
    json_decref(j);
    assert_int_equal(json_int_at(x, "open_streams"), 3);
    x->f.streams[1] = 1; /* requests come and go */
    for (int i = 0; i < 20; i++)
        advance(x, 0.25);
    assert_string_equal(x->f.actions, "");
    assert_int_equal(json_int_at(x, "open_streams"), 1);
    x->f.streams[1] = 0;
    advance(x, 0.25);
    assert_string_equal(x->f.actions, "S2");
    assert_int_equal(roll_state(x->r), ROLL_RESTARTING);
    assert_int_equal(json_int_at(x, "open_streams"), -1);
    /* tor 2 back and published: tor 1 (served by tor 2 now) drains in turn */
    come_back(x, 1);
    assert_string_equal(x->f.actions, "S2");
    assert_int_equal(roll_state(x->r), ROLL_DRAINING);
    assert_int_equal(roll_current(x->r), 0);
    advance(x, DRAIN_S / 2);
    assert_string_equal(x->f.actions, "S2");
    x->f.streams[0] = 0;
    advance(x, 0.25);
    assert_string_equal(x->f.actions, "S2 S1");
    come_back(x, 0);
    assert_last(x, true, "restarted 2 tors");
    assert_int_equal(x->f.cut, 0);
    assert_int_equal(json_int_at(x, "streams_cut"), 0);
}

/* Streams that never end: at DRAIN_S the tor is ended anyway; the cut streams are counted in the
 * roll's JSON, its last message and the metrics. */
static void test_drain_deadline_cuts(void **state)
{
    struct test *x = *state;
    x->f.round_at[0] = x->f.complete_at[0] = 950;
    x->f.streams[1] = 4;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    advance(x, DRAIN_S - 0.5);
    assert_string_equal(x->f.actions, "");
    assert_int_equal(roll_state(x->r), ROLL_DRAINING);
    advance(x, 0.5);
    assert_string_equal(x->f.actions, "S2");
    assert_int_equal(x->f.cut, 4);
    assert_int_equal(json_int_at(x, "streams_cut"), 4);
    come_back(x, 1);
    come_back(x, 0); /* tor 1 had none: ended at once */
    assert_string_equal(x->f.actions, "S2 S1");
    assert_last(x, true, "0 visitor circuits and 4 streams cut");
    assert_int_equal(json_int_at(x, "streams_cut"), 4);
    assert_int_equal(json_int_at(x, "streams_cut_total"), 4);
    struct metrics *m = metrics_new();
    assert_non_null(m);
    assert_int_equal(roll_metrics(x->r, m), 0);
    assert_non_null(strstr(metrics_text(m, NULL), "onionfront_tor_roll_streams_cut_total 4\n"));
    metrics_free(m);
    /* the next roll starts its own count; the total goes on */
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_int_equal(json_int_at(x, "streams_cut"), 0);
    assert_int_equal(json_int_at(x, "streams_cut_total"), 4);
}

/* The other tor dies while tor 2 drains (through the tick, then through roll_worker_lost): aborted once,
 * and the draining tor is not ended. */
static void test_drain_abort_other_dies(void **state)
{
    struct test *x = *state;
    x->f.round_at[0] = x->f.complete_at[0] = 950;
    x->f.streams[1] = 2;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    advance(x, 1);
    x->f.up[0] = false;
    advance(x, 0.25);
    assert_last(x, false, "tor 1 went down while tor 2 was draining");
    assert_int_equal(x->f.drain_starts[1], 1);
    assert_int_equal(x->f.drain_stops[1], 1); /* it stays: it publishes again */
    assert_false(x->f.draining[1]);
    x->f.streams[1] = 0;
    advance(x, DRAIN_S);
    assert_string_equal(x->f.actions, "");

    x->f.up[0] = true;
    x->f.streams[1] = 2;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    roll_worker_lost(x->r, 0, "killed");
    assert_last(x, false, "tor 1 was lost (killed) while tor 2 was draining");
    assert_int_equal(x->f.drain_stops[1], 2);
    advance(x, DRAIN_S);
    assert_string_equal(x->f.actions, "");
    assert_int_equal(x->f.cut, 0);
}

/* The draining tor goes down by itself (a crash): its supervisor restarts it, so the roll only waits for
 * it to run again and publish, and ends nothing itself. */
static void test_drain_tor_dies_itself(void **state)
{
    struct test *x = *state;
    x->f.round_at[0] = x->f.complete_at[0] = 950;
    x->f.streams[1] = 1;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    x->f.up[1] = false;
    x->f.restarts[1]++; /* its supervisor restarts it */
    advance(x, 0.25);
    assert_int_equal(roll_state(x->r), ROLL_RESTARTING);
    assert_string_equal(x->f.actions, "");
    x->f.streams[1] = 0;
    come_back(x, 1);
    come_back(x, 0);
    assert_string_equal(x->f.actions, "S1");
    assert_last(x, true, "restarted 2 tors");
}

/* The draining tor uploads anew (HSDirs may serve it again): the turn starts over with a hand-over, so
 * no tor is ended while it may be the one served. */
static void test_drain_upload_meanwhile(void **state)
{
    struct test *x = *state;
    x->f.round_at[0] = x->f.complete_at[0] = 950;
    x->f.streams[1] = 1;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_int_equal(roll_state(x->r), ROLL_DRAINING);
    x->f.round_at[1] = x->f.now; /* tor 2's new round, not confirmed yet */
    x->f.streams[1] = 0;
    advance(x, 0.25);
    assert_string_equal(x->f.actions, "");
    assert_int_equal(roll_state(x->r), ROLL_HANDOVER);
    assert_int_equal(roll_current(x->r), 0); /* the turn starts over from the first tor not done */
    assert_int_equal(x->f.drain_stops[1], 1);   /* tor 2 is not drained any more: it publishes */
    assert_false(x->f.draining[1]);
    advance(x, ROLL_SETTLE_S);
    assert_string_equal(x->f.actions, "R2"); /* a survivor publishes anew */
    f_publish(&x->f, 1);
    advance(x, 0.25);
    assert_string_equal(x->f.actions, "R2 S1");
    come_back(x, 0);
    come_back(x, 1);
    assert_string_equal(x->f.actions, "R2 S1 S2");
    assert_last(x, true, "restarted 2 tors");
}

/* Each step's deadline on the fake clock. */
static void test_deadlines(void **state)
{
    struct test *x = *state;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    advance(x, ROLL_SETTLE_S);
    assert_string_equal(x->f.actions, "R2");
    /* not confirmed: tor 2 is asked again at 30 s and 60 s (an upload tor dropped is never answered) */
    advance(x, ROLL_RENEW_AGAIN_S - 1);
    assert_string_equal(x->f.actions, "R2");
    advance(x, 1);
    assert_string_equal(x->f.actions, "R2 R2");
    advance(x, ROLL_RENEW_AGAIN_S);
    assert_string_equal(x->f.actions, "R2 R2 R2");
    advance(x, ROLL_HANDOVER_S - 2 * ROLL_RENEW_AGAIN_S - 1);
    assert_true(roll_is_running(x->r));
    advance(x, 1);
    assert_last(x, false, "tor 1 was not stopped");
    assert_string_equal(x->f.actions, "R2 R2 R2");

    x->f.complete_at[1] = x->f.round_at[1] = x->f.now; /* tor 2 serves */
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_string_equal(x->f.actions, "R2 R2 R2 S1");
    advance(x, ROLL_RESTART_S);
    assert_last(x, false, "not running again");

    x->f.up[0] = true;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_string_equal(x->f.actions, "R2 R2 R2 S1 S1");
    x->f.up[0] = true;
    advance(x, 1);
    advance(x, ROLL_PUBLISH_S);
    assert_last(x, false, "descriptors were not answered by every HSDir");
}

/* Visitors' rendezvous circuits: a tor with no stream but circuits open is not ended until the visitors
 * let go of them (the count reaches 0); before its first look nothing is known, so nothing is ended. */
static void test_drain_waits_for_circuits(void **state)
{
    struct test *x = *state;
    x->f.round_at[0] = x->f.complete_at[0] = 950; /* HSDirs serve tor 1: tor 2 goes first */
    x->f.rend[1] = -1;                             /* no look yet */
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_int_equal(roll_state(x->r), ROLL_DRAINING);
    assert_int_equal(x->f.drain_starts[1], 1);
    assert_int_equal(x->f.drain_starts[0], 0);
    assert_string_equal(x->f.actions, "");
    assert_int_equal(json_int_at(x, "rend_circuits"), -1);
    x->f.rend[1] = 2;
    for (int i = 0; i < 40; i++)
        advance(x, 0.25);
    assert_string_equal(x->f.actions, "");
    assert_int_equal(json_int_at(x, "rend_circuits"), 2);
    assert_int_equal(json_int_at(x, "open_streams"), 0);
    x->f.rend[1] = 1;
    x->f.streams[1] = 1; /* the last circuit still carries a request */
    advance(x, 0.25);
    x->f.rend[1] = 0;
    advance(x, 0.25);
    assert_string_equal(x->f.actions, ""); /* its stream is still open */
    x->f.streams[1] = 0;
    advance(x, 0.25);
    assert_string_equal(x->f.actions, "S2");
    assert_int_equal(x->f.drain_stops[1], 0); /* ended, not told to publish again */
    come_back(x, 1);
    assert_int_equal(x->f.drain_starts[0], 1);
    x->f.rend[0] = 0;
    advance(x, 0.25);
    assert_string_equal(x->f.actions, "S2 S1");
    come_back(x, 0);
    assert_last(x, true, "restarted 2 tors");
    assert_int_equal(x->f.circ_cut, 0);
}

/* Circuits that visitors keep: at the drain limit the tor is ended and they are counted as cut (JSON,
 * the last message, the metrics). */
static void test_drain_limit_cuts_circuits(void **state)
{
    struct test *x = *state;
    x->f.round_at[0] = x->f.complete_at[0] = 950;
    x->f.rend[1] = 3;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    advance(x, DRAIN_S - 0.5);
    assert_string_equal(x->f.actions, "");
    advance(x, 0.5);
    assert_string_equal(x->f.actions, "S2");
    assert_int_equal(x->f.circ_cut, 3);
    assert_int_equal(json_int_at(x, "circuits_cut"), 3);
    come_back(x, 1);
    come_back(x, 0);
    assert_last(x, true, "3 visitor circuits and 0 streams cut");
    struct metrics *m = metrics_new();
    assert_non_null(m);
    assert_int_equal(roll_metrics(x->r, m), 0);
    assert_non_null(strstr(metrics_text(m, NULL), "onionfront_tor_roll_circuits_cut_total 3\n"));
    metrics_free(m);
}

/* tor.drain_timeout 0: no drain at all, the tor not served is ended at once even with circuits open. */
static void test_drain_limit_zero(void **state)
{
    struct test *x = *state;
    roll_set_drain_limit(x->r, 0);
    x->f.round_at[0] = x->f.complete_at[0] = 950;
    x->f.rend[1] = 2;
    x->f.streams[1] = 1;
    assert_int_equal(roll_start(x->r, "test", x->msg, sizeof(x->msg)), 0);
    assert_string_equal(x->f.actions, "S2");
    assert_int_equal(x->f.drain_starts[1], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order_not_served_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handover_waits_for_confirmation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settle_without_handover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_must_take, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_interval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_other_dies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadlines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_waits_for_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_deadline_cuts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_abort_other_dies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_tor_dies_itself, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_upload_meanwhile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_waits_for_circuits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_limit_cuts_circuits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_limit_zero, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
