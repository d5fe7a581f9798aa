/* test_circdrain.c — unit tests for sidecar/publish/circdrain.c, winding a tor down before a planned stop.
 *
 * Why: the roll ends a tor only once visitors let go of it, judged by circdrain's count of rendezvous
 * circuits; a wrong count ends a tor under a visitor (a failed request) or never; a drain that forgets to
 * make an aborted tor publish again leaves a tor that HSDirs never hear from.
 *
 * Covers: circdrain_look_parse on real circuit-status lines of tor 0.4.9.11 (rendezvous counted,
 * introduction ids collected, other purposes and CLOSED/FAILED ignored, empty list, a malformed line
 * named, the cap on ids); and against the scripted fake control port, the commands in order: SETCONF
 * PublishHidServDescriptors=0, GETINFO circuit-status, one CLOSECIRCUIT per introduction circuit, the count
 * kept; circdrain_stop sends PublishHidServDescriptors=1 and a later answer is ignored; a rendezvous
 * circuit closed (IfUnused) after the data path saw its last stream end, only once looks found no
 * introduction circuit for a while; then a look closes a circuit that carried a stream (also one seen
 * before the drain) but never one that has not; an introduction circuit tor launches while draining is
 * closed at its first CIRC event, once (not a rendezvous one, not outside a drain); no connection means
 * no drain. */
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

#include "controlproto/cp_conn.h"
#include "sidecar/publish/circdrain.h"
#include "sidecar/core/log.h"
#include "tests/fake/fake_ctl.h"

#define LOOP_BOUND_MS 5000
#define ADDR "5o6ujff36koo7wjvhr5cvwacvxgpnryon4idpydeg7ghmczdbntzv3id"

/* Lines as tor 0.4.9.11 listed them on a single onion with two visitors (private network). */
#define L_GENERAL "1 BUILT $44662FCAF6E57D9E0CACBB1DDAFDCDBA1A044781~tnauth3 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL," \
                  "NEED_CAPACITY PURPOSE=GENERAL TIME_CREATED=2026-12-04T15:47:03.267229\n"
#define L_INTRO(id) id " BUILT $CAF3B69CDC839A2A06AE1579C7C271B762AF4DF3~tnrelay7 BUILD_FLAGS=ONEHOP_TUNNEL," \
                    "IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_ESTABLISHED REND_QUERY=" ADDR  \
                    " TIME_CREATED=2026-12-04T15:47:04.1\n"
#define L_REND(id) id " BUILT $B94895EF35F09E840C4DDE46DB700276969AFFFA~tnrelay8 BUILD_FLAGS=ONEHOP_TUNNEL," \
                   "IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_JOINED REND_QUERY=" ADDR  \
                   " TIME_CREATED=2026-12-04T15:47:17.2\n"
#define L_HSDIR "29 EXTENDED $209A763DB0029E7C6DE1CFEF220D4254C2FCD69D~tnrelay1 BUILD_FLAGS=IS_INTERNAL," \
                "NEED_CAPACITY PURPOSE=HS_SERVICE_HSDIR HS_STATE=HSSI_CONNECTING REND_QUERY=" ADDR "\n"

static void test_parse_counts(void **state)
{
    (void)state;
    struct circdrain_look l;
    char err[256];
    const char *data = L_GENERAL L_INTRO("4") L_REND("33") L_INTRO("11") L_HSDIR L_REND("34")
        "35 FAILED PURPOSE=HS_SERVICE_REND\n36 CLOSED PURPOSE=HS_SERVICE_INTRO\n"
        "37 LAUNCHED BUILD_FLAGS=ONEHOP_TUNNEL PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_CONNECTING\n";
    assert_int_equal(circdrain_look_parse(data, &l, err, sizeof(err)), 0);
    assert_int_equal(l.rend, 3); /* 33, 34 and the one still connecting; not the failed one */
    assert_int_equal(l.n_rend, 2); /* the one connecting is counted but never a candidate to close */
    assert_int_equal(l.rend_ids[0], 33);
    assert_int_equal(l.rend_ids[1], 34);
    assert_int_equal(l.n_intro, 2);
    assert_int_equal(l.intro[0], 4);
    assert_int_equal(l.intro[1], 11);

    assert_int_equal(circdrain_look_parse("", &l, err, sizeof(err)), 0);
    assert_int_equal(l.rend + l.n_intro, 0);
    assert_int_equal(circdrain_look_parse(NULL, &l, err, sizeof(err)), 0);
    assert_int_equal(l.rend + l.n_intro, 0);
    /* no trailing newline (GETINFO data blocks end in one, but a value on the 250 line would not) */
    assert_int_equal(circdrain_look_parse("7 BUILT PURPOSE=HS_SERVICE_REND", &l, err, sizeof(err)), 0);
    assert_int_equal(l.rend, 1);
}

static void test_parse_errors(void **state)
{
    (void)state;
    struct circdrain_look l;
    char err[256];
    assert_int_equal(circdrain_look_parse(L_GENERAL "x7 BUILT PURPOSE=HS_SERVICE_REND\n", &l, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "circuit-status line 2"));
    assert_non_null(strstr(err, "circuit id"));
    assert_int_equal(circdrain_look_parse("12\n", &l, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "status missing"));
    /* an id no tor has (they are uint32_t) is not closed with CLOSECIRCUIT: the list is refused */
    assert_int_equal(circdrain_look_parse("4294967296 BUILT PURPOSE=HS_SERVICE_INTRO\n", &l, err, sizeof(err)), -1);
    assert_string_equal(err, "circuit-status line 1: CIRC: circuit id must be a decimal number 0-4294967295");
    char *big = malloc(6000);
    assert_non_null(big);
    memset(big, 'A', 5999);
    big[0] = '1';
    big[1] = ' ';
    big[5999] = '\0';
    assert_int_equal(circdrain_look_parse(big, &l, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "longer than"));
    free(big);
}

static void test_parse_cap(void **state)
{
    (void)state;
    struct circdrain_look l;
    char err[256], *data = malloc(600 * 48);
    assert_non_null(data);
    data[0] = '\0';
    for (int i = 1; i <= 300; i++)
        sprintf(data + strlen(data), "%d BUILT PURPOSE=HS_SERVICE_INTRO\n%d BUILT PURPOSE=HS_SERVICE_REND\n", i,
                1000 + i);
    assert_int_equal(circdrain_look_parse(data, &l, err, sizeof(err)), 0);
    assert_int_equal(l.n_intro, CIRCDRAIN_MAX_CLOSE);
    assert_int_equal(l.intro[CIRCDRAIN_MAX_CLOSE - 1], CIRCDRAIN_MAX_CLOSE);
    assert_int_equal(l.rend, 300); /* all counted, the first ids kept */
    assert_int_equal(l.n_rend, CIRCDRAIN_MAX_CLOSE);
    assert_int_equal(l.rend_ids[0], 1001);
    free(data);
}

/* ---- against the fake control port ---------------------------------------------------------------- */

struct ctx {
    struct event_base *base;
    struct fake_ctl *fake;
    struct cp_conn *conn;
    struct circdrain *d;
    int n_ready;
};

static void conn_state_cb(struct cp_conn *conn, enum cp_conn_state st, const char *err, void *arg)
{
    struct ctx *c = arg;
    (void)conn;
    (void)err;
    if (st == CP_CONN_READY)
        c->n_ready++;
}

static bool is_ready(void *arg)
{
    struct ctx *c = arg;
    return c->n_ready > 0 || fake_ctl_failure(c->fake);
}

static bool fake_finished(void *arg)
{
    struct ctx *c = arg;
    return fake_ctl_done(c->fake) || fake_ctl_failure(c->fake);
}

static bool rend_known(void *arg)
{
    struct ctx *c = arg;
    return circdrain_rend_circuits(c->d) >= 0 || fake_ctl_failure(c->fake);
}

#define AUTH_STEPS                                                                                             \
    {FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0},                                                                   \
        {FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL\r\n250 OK\r\n", 0},                      \
        {FAKE_CTL_EXPECT, "AUTHENTICATE", 0}, {FAKE_CTL_SEND, "250 OK\r\n", 0}

/* A drain's start as tor sees it, up to the first look (its answer is the script's next step). */
#define DRAIN_START_STEPS                                                                                      \
    AUTH_STEPS, {FAKE_CTL_EXPECT, "SETCONF PublishHidServDescriptors=\"0\"", 0}, {FAKE_CTL_SEND, "250 OK\r\n", 0}, \
        {FAKE_CTL_EXPECT, "GETINFO circuit-status", 0}

static void ctx_start_base(struct ctx *c, const struct fake_ctl_step *script, size_t n, bool timers)
{
    char err[256];
    memset(c, 0, sizeof(*c));
    c->base = event_base_new();
    assert_non_null(c->base);
    c->fake = fake_ctl_new(c->base, false, script, n, err, sizeof(err));
    if (!c->fake)
        fail_msg("fake: %s", err);
    struct cp_conn_opts o = {.unix_path = fake_ctl_unix_path(c->fake), .auth = CP_AUTH_AUTO, .cmd_timeout = {5, 0}};
    c->conn = cp_conn_new(c->base, &o, conn_state_cb, c, err, sizeof(err));
    if (!c->conn || cp_conn_connect(c->conn, err, sizeof(err)) < 0)
        fail_msg("cp_conn: %s", err);
    assert_int_equal(fake_ctl_run_until(c->base, is_ready, c, LOOP_BOUND_MS), 0);
    c->d = circdrain_new(timers ? c->base : NULL); /* no timers: looks only by circdrain_look_now */
    assert_non_null(c->d);
    circdrain_attach(c->d, c->conn);
}

static void ctx_start(struct ctx *c, const struct fake_ctl_step *script, size_t n)
{
    ctx_start_base(c, script, n, false);
}

static void ctx_end(struct ctx *c)
{
    const char *f = fake_ctl_failure(c->fake);
    cp_conn_free(c->conn);
    circdrain_free(c->d);
    fake_ctl_free(c->fake);
    event_base_free(c->base);
    if (f)
        fail_msg("fake control port: %s", f);
}

/* A drain's commands in order, the count kept, the intro circuits closed; stop publishes again. */
static void test_drain_commands(void **state)
{
    (void)state;
    static const struct fake_ctl_step script[] = {
        DRAIN_START_STEPS,
        {FAKE_CTL_SEND,
         "250+circuit-status=\r\n" L_INTRO("4") L_REND("33") L_INTRO("11") L_REND("34") ".\r\n250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "CLOSECIRCUIT 4", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "CLOSECIRCUIT 11", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        /* the next look: tor re-established one introduction circuit; one visitor let go */
        {FAKE_CTL_EXPECT, "GETINFO circuit-status", 0},
        {FAKE_CTL_SEND, "250+circuit-status=\r\n" L_REND("34") L_INTRO("40") ".\r\n250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "CLOSECIRCUIT 40", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "SETCONF PublishHidServDescriptors=\"1\"", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
    };
    struct ctx c;
    ctx_start(&c, script, sizeof(script) / sizeof(script[0]));
    assert_false(circdrain_is_draining(c.d));
    assert_int_equal(circdrain_rend_circuits(c.d), -1);
    assert_int_equal(circdrain_start(c.d), 0);
    assert_true(circdrain_is_draining(c.d));
    assert_int_equal(fake_ctl_run_until(c.base, rend_known, &c, LOOP_BOUND_MS), 0);
    assert_int_equal(circdrain_rend_circuits(c.d), 2);
    assert_int_equal(circdrain_intro_closed(c.d), 2);
    circdrain_look_now(c.d);
    circdrain_look_now(c.d); /* one look at a time: the second is not sent */
    while (circdrain_intro_closed(c.d) < 3 && !fake_ctl_failure(c.fake))
        event_base_loop(c.base, EVLOOP_ONCE);
    assert_int_equal(circdrain_rend_circuits(c.d), 1);
    circdrain_stop(c.d);
    assert_false(circdrain_is_draining(c.d));
    assert_int_equal(circdrain_rend_circuits(c.d), -1);
    circdrain_stop(c.d); /* nothing more is sent */
    assert_int_equal(fake_ctl_run_until(c.base, fake_finished, &c, LOOP_BOUND_MS), 0);
    ctx_end(&c);
}

/* An answer that arrives after the drain was stopped changes nothing and closes nothing. */
static void test_late_answer_ignored(void **state)
{
    (void)state;
    static const struct fake_ctl_step script[] = {
        AUTH_STEPS,
        {FAKE_CTL_EXPECT, "SETCONF PublishHidServDescriptors=\"0\"", 0},
        {FAKE_CTL_EXPECT, "GETINFO circuit-status", 0},
        {FAKE_CTL_EXPECT, "SETCONF PublishHidServDescriptors=\"1\"", 0},
        {FAKE_CTL_SEND, "250 OK\r\n250+circuit-status=\r\n" L_INTRO("4") L_REND("33") ".\r\n250 OK\r\n250 OK\r\n", 0},
        {FAKE_CTL_PAUSE, NULL, 200},
        {FAKE_CTL_EXPECT_EOF, NULL, 0},
    };
    struct ctx c;
    ctx_start(&c, script, sizeof(script) / sizeof(script[0]));
    assert_int_equal(circdrain_start(c.d), 0);
    circdrain_stop(c.d);
    for (int i = 0; i < 50 && !fake_ctl_failure(c.fake); i++)
        event_base_loop(c.base, EVLOOP_NONBLOCK);
    fake_ctl_run_until(c.base, fake_finished, &c, 300); /* the pause: a CLOSECIRCUIT would be a mismatch */
    assert_int_equal(circdrain_intro_closed(c.d), 0);
    assert_int_equal(circdrain_rend_circuits(c.d), -1);
    cp_conn_close(c.conn);
    assert_int_equal(fake_ctl_run_until(c.base, fake_finished, &c, LOOP_BOUND_MS), 0);
    ctx_end(&c);
}

/* A visitor's rendezvous circuit is closed (IfUnused) right after the data path saw its last stream
 * end — but only in the rendezvous phase, once looks have found no introduction circuit for
 * CIRCDRAIN_INTRO_QUIET_MS (before, a visitor sent off its circuit could be stranded by an introduction
 * circuit being closed). Without an event loop the close is sent at once (the delay is the timer's). A
 * stream end outside a drain closes nothing. */
static void test_close_after_last_stream(void **state)
{
    (void)state;
    static const struct fake_ctl_step script[] = {
        DRAIN_START_STEPS,
        {FAKE_CTL_SEND, "250+circuit-status=\r\n" L_REND("33") L_REND("34") ".\r\n250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "CLOSECIRCUIT 33 IfUnused", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
    };
    struct ctx c;
    ctx_start(&c, script, sizeof(script) / sizeof(script[0]));
    circdrain_stream_ended(c.d, 33); /* not draining: remembered only */
    assert_int_equal(circdrain_start(c.d), 0);
    assert_int_equal(fake_ctl_run_until(c.base, rend_known, &c, LOOP_BOUND_MS), 0);
    assert_int_equal(circdrain_rend_circuits(c.d), 2);
    circdrain_stream_ended(c.d, 33);
    assert_int_equal(circdrain_rend_closes(c.d), 0); /* introduction phase: not yet */
    fake_ctl_run_until(c.base, fake_finished, &c, CIRCDRAIN_INTRO_QUIET_MS + 100); /* time passes */
    circdrain_stream_ended(c.d, 33);
    assert_int_equal(circdrain_rend_closes(c.d), 1);
    assert_int_equal(fake_ctl_run_until(c.base, fake_finished, &c, LOOP_BOUND_MS), 0);
    circdrain_detach(c.d);
    ctx_end(&c);
}

#define EV_INTRO(id, st, path) "650 CIRC " id " " st path " BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_UPTIME " \
                              "PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING TIME_CREATED=2026-12-04T18:46:25.1\r\n"
#define EV_REND_LAUNCHED(id) "650 CIRC " id " LAUNCHED BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY " \
                             "PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_CONNECTING REND_QUERY=" ADDR "\r\n"

static bool intro_closed_once(void *arg)
{
    struct ctx *c = arg;
    return circdrain_intro_closed(c->d) >= 1 || fake_ctl_failure(c->fake);
}

/* While draining, an introduction circuit tor launches (to re-establish one closed) is closed at its
 * first event, before a look would list it, and only once for its later events; a rendezvous circuit's
 * launch closes nothing; after the drain an introduction circuit's launch closes nothing. */
static void test_launched_intro_closed_at_once(void **state)
{
    (void)state;
    static const struct fake_ctl_step script[] = {
        DRAIN_START_STEPS,
        {FAKE_CTL_SEND,
         "250+circuit-status=\r\n" L_REND("33") ".\r\n250 OK\r\n" EV_INTRO("41", "LAUNCHED", "")
             EV_REND_LAUNCHED("42") EV_INTRO("41", "EXTENDED", " $CAF3B69CDC839A2A06AE1579C7C271B762AF4DF3~tnrelay7"),
         0},
        {FAKE_CTL_EXPECT, "CLOSECIRCUIT 41", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "SETCONF PublishHidServDescriptors=\"1\"", 0},
        {FAKE_CTL_SEND, "250 OK\r\n" EV_INTRO("43", "LAUNCHED", ""), 0},
        {FAKE_CTL_PAUSE, NULL, 200}, /* a CLOSECIRCUIT 43 would be a mismatch */
        {FAKE_CTL_EXPECT_EOF, NULL, 0},
    };
    struct ctx c;
    ctx_start(&c, script, sizeof(script) / sizeof(script[0]));
    assert_int_equal(circdrain_start(c.d), 0);
    assert_int_equal(fake_ctl_run_until(c.base, intro_closed_once, &c, LOOP_BOUND_MS), 0);
    for (int i = 0; i < 50 && !fake_ctl_failure(c.fake); i++)
        event_base_loop(c.base, EVLOOP_NONBLOCK);
    assert_int_equal(circdrain_intro_closed(c.d), 1);
    circdrain_stop(c.d);
    fake_ctl_run_until(c.base, fake_finished, &c, 400);
    assert_int_equal(circdrain_intro_closed(c.d), 1);
    cp_conn_close(c.conn);
    assert_int_equal(fake_ctl_run_until(c.base, fake_finished, &c, LOOP_BOUND_MS), 0);
    ctx_end(&c);
}

static bool look_answered(void *arg)
{
    struct ctx *c = arg;
    return fake_ctl_done(c->fake) || fake_ctl_failure(c->fake);
}

/* Drained only after looks found no introduction and no rendezvous circuit for CIRCDRAIN_QUIET_MS: one
 * quiet look is not enough, and a look that finds an introduction circuit (tor re-established it)
 * starts the quiet time over. */
static void test_drained_after_quiet_looks(void **state)
{
    (void)state;
    static const struct fake_ctl_step script[] = {
        DRAIN_START_STEPS,
        {FAKE_CTL_SEND, "250+circuit-status=\r\n" L_GENERAL ".\r\n250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "GETINFO circuit-status", 0},
        {FAKE_CTL_SEND, "250+circuit-status=\r\n" L_INTRO("50") ".\r\n250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "CLOSECIRCUIT 50", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "GETINFO circuit-status", 0},
        {FAKE_CTL_SEND, "250 circuit-status=\r\n", 0},
        {FAKE_CTL_EXPECT, "GETINFO circuit-status", 0},
        {FAKE_CTL_SEND, "250 circuit-status=\r\n", 0},
    };
    struct ctx c;
    ctx_start(&c, script, sizeof(script) / sizeof(script[0]));
    assert_int_equal(circdrain_start(c.d), 0);
    assert_int_equal(fake_ctl_run_until(c.base, rend_known, &c, LOOP_BOUND_MS), 0);
    assert_false(circdrain_is_drained(c.d)); /* one quiet look */
    circdrain_look_now(c.d);                 /* tor re-established an introduction circuit */
    while (circdrain_intro_closed(c.d) < 1 && !fake_ctl_failure(c.fake))
        event_base_loop(c.base, EVLOOP_ONCE);
    fake_ctl_run_until(c.base, look_answered, &c, CIRCDRAIN_QUIET_MS + 200); /* time passes */
    circdrain_look_now(c.d);
    fake_ctl_run_until(c.base, look_answered, &c, 300);
    assert_false(circdrain_is_drained(c.d)); /* the quiet time began at this look */
    fake_ctl_run_until(c.base, look_answered, &c, CIRCDRAIN_QUIET_MS + 200);
    circdrain_look_now(c.d);
    assert_int_equal(fake_ctl_run_until(c.base, look_answered, &c, LOOP_BOUND_MS), 0);
    assert_true(circdrain_is_drained(c.d));
    assert_int_equal(circdrain_rend_circuits(c.d), 0);
    circdrain_detach(c.d);
    assert_false(circdrain_is_drained(c.d));
    ctx_end(&c);
}

/* After the grace period a look closes (IfUnused) a circuit whose last stream ended long enough ago —
 * here one that carried a stream before the drain began — but never one that has not carried a stream:
 * its visitor's tor may give it to any new stream at any moment. */
static void test_idle_close_only_used(void **state)
{
    (void)state;
    static const struct fake_ctl_step script[] = {
        DRAIN_START_STEPS,
        {FAKE_CTL_SEND, "250+circuit-status=\r\n" L_REND("33") L_REND("34") ".\r\n250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "GETINFO circuit-status", 0},
        {FAKE_CTL_SEND, "250+circuit-status=\r\n" L_REND("33") L_REND("34") ".\r\n250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "CLOSECIRCUIT 33 IfUnused", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
    };
    struct ctx c;
    ctx_start(&c, script, sizeof(script) / sizeof(script[0]));
    circdrain_stream_ended(c.d, 33); /* before the drain: remembered, nothing sent */
    assert_int_equal(circdrain_rend_closes(c.d), 0);
    assert_int_equal(circdrain_start(c.d), 0);
    assert_int_equal(fake_ctl_run_until(c.base, rend_known, &c, LOOP_BOUND_MS), 0);
    assert_int_equal(circdrain_rend_closes(c.d), 0); /* introduction phase */
    fake_ctl_run_until(c.base, look_answered, &c, CIRCDRAIN_IDLE_MS + 300); /* time passes */
    circdrain_look_now(c.d);
    assert_int_equal(fake_ctl_run_until(c.base, fake_finished, &c, LOOP_BOUND_MS), 0);
    assert_int_equal(circdrain_rend_closes(c.d), 1); /* 33 only: a CLOSECIRCUIT 34 would be a mismatch */
    ctx_end(&c);
}

static bool rend_closed(void *arg)
{
    struct ctx *c = arg;
    return circdrain_rend_closes(c->d) > 0 || fake_ctl_failure(c->fake);
}

/* A new tor (a new connection) numbers its circuits from 1 again: what the last tor's circuits carried is
 * forgotten, so a new circuit whose slot held a higher id of the old tor is not taken as used and closed
 * (it was: every roll after a tor's first restart closed visitors' new rendezvous circuits). */
static void test_new_tor_forgets_circuits(void **state)
{
    (void)state;
    static const struct fake_ctl_step script[] = {
        DRAIN_START_STEPS,
        {FAKE_CTL_SEND, "250+circuit-status=\r\n" L_REND("34") ".\r\n250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "GETINFO circuit-status", 0},
        {FAKE_CTL_SEND, "250+circuit-status=\r\n" L_REND("34") ".\r\n250 OK\r\n", 0},
    };
    struct ctx c;
    ctx_start(&c, script, sizeof(script) / sizeof(script[0]));
    circdrain_stream_ended(c.d, 34 + CIRCDRAIN_SLOTS); /* the last tor's circuit in 34's slot */
    circdrain_detach(c.d);
    circdrain_attach(c.d, c.conn); /* the tor restarted */
    assert_int_equal(circdrain_start(c.d), 0);
    assert_int_equal(fake_ctl_run_until(c.base, rend_known, &c, LOOP_BOUND_MS), 0);
    fake_ctl_run_until(c.base, look_answered, &c, CIRCDRAIN_IDLE_MS + 300); /* time passes */
    circdrain_look_now(c.d);
    assert_int_equal(fake_ctl_run_until(c.base, fake_finished, &c, LOOP_BOUND_MS), 0);
    fake_ctl_run_until(c.base, rend_closed, &c, 300); /* the second answer read; a close would come now */
    assert_int_equal(circdrain_rend_closes(c.d), 0);
    assert_int_equal(circdrain_rend_circuits(c.d), 1);
    ctx_end(&c);
}

/* Without a connection there is no drain; detaching ends one. */
static void test_no_connection(void **state)
{
    (void)state;
    struct circdrain *d = circdrain_new(NULL);
    assert_non_null(d);
    assert_int_equal(circdrain_start(d), -1);
    assert_false(circdrain_is_draining(d));
    circdrain_stop(d);
    circdrain_detach(d);
    assert_int_equal(circdrain_rend_circuits(d), -1);
    circdrain_free(d);
    circdrain_free(NULL);
}

int main(void)
{
    log_set_level(getenv("TEST_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_counts),   cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_cap),      cmocka_unit_test(test_drain_commands),
        cmocka_unit_test(test_late_answer_ignored), cmocka_unit_test(test_close_after_last_stream),
        cmocka_unit_test(test_drained_after_quiet_looks), cmocka_unit_test(test_idle_close_only_used),
        cmocka_unit_test(test_new_tor_forgets_circuits),
        cmocka_unit_test(test_no_connection),         cmocka_unit_test(test_launched_intro_closed_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
