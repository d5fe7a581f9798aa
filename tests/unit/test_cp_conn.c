/* test_cp_conn.c — unit tests for controlproto/cp_conn.c and cp_conn_auth.c against the scripted fake
 * control port (tests/fake/fake_ctl.c) on a real event loop.
 *
 * Covers: authentication (SAFECOOKIE with a cookie file the test writes, a wrong SERVERHASH, COOKIE,
 * HASHEDPASSWORD, NULL, refusals, a cookie of the wrong size, a quoted COOKIEFILE), pipelining (three
 * commands written before any reply, replies split mid-line), an event between a command and its reply,
 * command and authentication timeouts (counted from when a command is the oldest unanswered one; a
 * command's own time with cp_conn_send_timed), tor closing mid-reply, unexpected replies and garbage, freeing and
 * closing from inside callbacks, reconnecting, option checks, the peer's uid (SO_PEERCRED; none over TCP). Each test runs the loop until its done
 * condition holds, bounded by a timer; the fake's script must have run completely and without mismatch.
 * What tor itself does is tested against real tor in tests/integration/test_cp_real_tor.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <event2/event.h>

#include "controlproto/cp_conn.h"
#include "controlproto/cp_reply.h"
#include "tests/fake/fake_ctl.h"

#define LOOP_BOUND_MS 5000
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The NULL-auth exchange, as tor answers when no authentication is configured (control-spec 3.21). */
#define NULL_AUTH_STEPS                                                                                      \
    { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },                                                               \
    { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL\r\n250-VERSION Tor=\"0.4.9.11\"\r\n250 OK\r\n", \
      0 },                                                                                                   \
    { FAKE_CTL_EXPECT, "AUTHENTICATE", 0 },                                                                 \
    { FAKE_CTL_SEND, "250 OK\r\n", 0 }

struct test;

/* One command's completions. */
struct rec {
    struct test *t;
    int calls;
    int order;
    int status; /* 0 when completed with an error */
    char text[256];
    char err[512];
    bool free_in_cb;  /* cp_conn_free() from inside this completion */
    bool close_in_cb; /* cp_conn_close() from inside this completion */
};

struct test {
    struct event_base *base;
    struct fake_ctl *fake;
    struct cp_conn *c;
    struct cp_conn_opts opts;
    int seq;
    int n_ready, n_closed;
    bool closed_err_null;
    char closed_err[512];
    char log[1024]; /* events and completions in arrival order */
    bool free_on_ready;
    bool reconnect_on_close;
    struct rec *on_ready_recs[4]; /* sent from the READY callback, in order */
    const char *on_ready_cmds[4];
    size_t n_on_ready;
    int busy_asked;   /* the busy check's calls */
    int busy_answers; /* it says busy this many times, then idle */
};

/* ---- helpers ----------------------------------------------------------------------------------- */

static void log_add(struct test *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_add(struct test *t, const char *fmt, ...)
{
    size_t o = strlen(t->log);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(t->log + o, sizeof t->log - o, fmt, ap);
    va_end(ap);
}

static void reply_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct rec *rec = arg;
    struct test *t = rec->t;

    assert_ptr_equal(c, t->c);
    rec->calls++;
    rec->order = ++t->seq;
    if (r) {
        assert_null(err);
        rec->status = r->status;
        snprintf(rec->text, sizeof rec->text, "%s", r->lines[0].text);
        log_add(t, "reply:%d:%s;", r->status, r->lines[0].text);
    } else {
        assert_non_null(err);
        rec->status = 0;
        snprintf(rec->err, sizeof rec->err, "%s", err);
        log_add(t, "error;");
    }
    if (rec->free_in_cb) {
        cp_conn_free(c);
        t->c = NULL;
    } else if (rec->close_in_cb) {
        cp_conn_close(c);
    }
}

static void send_cmd(struct test *t, const char *cmd, struct rec *rec)
{
    char err[256];

    rec->t = t;
    assert_int_equal(cp_conn_send(t->c, cmd, reply_cb, rec, err, sizeof err), 0);
}

static void state_cb(struct cp_conn *c, enum cp_conn_state st, const char *err, void *arg)
{
    struct test *t = arg;
    char e[256];
    size_t i;

    assert_ptr_equal(c, t->c);
    assert_int_equal(cp_conn_get_state(c), st);
    if (st == CP_CONN_READY) {
        assert_null(err);
        t->n_ready++;
        log_add(t, "ready;");
        for (i = 0; i < t->n_on_ready; i++)
            send_cmd(t, t->on_ready_cmds[i], t->on_ready_recs[i]);
        t->n_on_ready = 0;
        if (t->free_on_ready) {
            cp_conn_free(c);
            t->c = NULL;
        }
        return;
    }
    assert_int_equal(st, CP_CONN_CLOSED);
    t->n_closed++;
    t->closed_err_null = err == NULL;
    snprintf(t->closed_err, sizeof t->closed_err, "%s", err ? err : "");
    log_add(t, "closed;");
    if (t->reconnect_on_close) {
        t->reconnect_on_close = false;
        assert_int_equal(cp_conn_connect(c, e, sizeof e), 0);
    }
}

static int setup(void **state)
{
    struct test *t = calloc(1, sizeof *t);

    assert_non_null(t);
    t->base = event_base_new();
    assert_non_null(t->base);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    struct test *t = *state;

    cp_conn_free(t->c);
    fake_ctl_free(t->fake);
    event_base_free(t->base);
    free(t);
    return 0;
}

/* Start the fake with `script` and a connection to it with t->opts (socket filled in here). */
static void start_fake(struct test *t, bool tcp, const struct fake_ctl_step *script, size_t n)
{
    char err[256];

    t->fake = fake_ctl_new(t->base, tcp, script, n, err, sizeof err);
    if (!t->fake)
        fail_msg("%s", err);
}

static void connect_conn(struct test *t)
{
    char err[256];

    if (fake_ctl_unix_path(t->fake)) {
        t->opts.unix_path = fake_ctl_unix_path(t->fake);
    } else {
        t->opts.host = "127.0.0.1";
        t->opts.port = fake_ctl_port(t->fake);
    }
    t->c = cp_conn_new(t->base, &t->opts, state_cb, t, err, sizeof err);
    if (!t->c)
        fail_msg("cp_conn_new: %s", err);
    assert_int_equal(cp_conn_get_state(t->c), CP_CONN_IDLE);
    if (cp_conn_connect(t->c, err, sizeof err) != 0)
        fail_msg("cp_conn_connect: %s", err);
    assert_int_equal(cp_conn_get_state(t->c), CP_CONN_CONNECTING);
}

static void start(struct test *t, const struct fake_ctl_step *script, size_t n)
{
    start_fake(t, false, script, n);
    connect_conn(t);
}

static void write_cookie(struct test *t, const char *name, const unsigned char *cookie, size_t len)
{
    char err[256];

    if (fake_ctl_write_cookie(t->fake, name, cookie, len, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static void check_fake(struct test *t)
{
    const char *f = fake_ctl_failure(t->fake);

    if (f)
        fail_msg("fake control port: %s", f);
    assert_true(fake_ctl_done(t->fake));
}

static bool is_ready(void *arg)
{
    struct test *t = arg;
    return t->n_ready > 0 || t->n_closed > 0;
}

static bool is_authenticating(void *arg)
{
    struct test *t = arg;
    return cp_conn_get_state(t->c) != CP_CONN_CONNECTING;
}

static bool is_closed(void *arg)
{
    struct test *t = arg;
    return t->n_closed > 0;
}

static bool fake_finished(void *arg)
{
    struct test *t = arg;
    return fake_ctl_done(t->fake) || fake_ctl_failure(t->fake) != NULL;
}

struct until_recs {
    struct test *t;
    struct rec *recs;
    size_t n;
};

static bool recs_done(void *arg)
{
    struct until_recs *u = arg;
    size_t i;

    for (i = 0; i < u->n; i++) {
        if (u->recs[i].calls == 0)
            return false;
    }
    return fake_finished(u->t);
}

static bool first_rec_called(void *arg)
{
    struct until_recs *u = arg;
    return u->recs[0].calls > 0;
}

static void run_until(struct test *t, bool (*done)(void *), void *arg)
{
    if (fake_ctl_run_until(t->base, done, arg, LOOP_BOUND_MS) != 0) {
        const char *f = t->fake ? fake_ctl_failure(t->fake) : NULL;

        fail_msg("timed out after %d ms (log: %s; fake: %s; closed: %s)", LOOP_BOUND_MS, t->log,
                 f ? f : "ok", t->closed_err);
    }
}

/* Let the loop run for `ms` more milliseconds, so a late (wrong) callback would show. */
static bool never(void *arg)
{
    (void)arg;
    return false;
}

static void run_for(struct test *t, unsigned ms)
{
    fake_ctl_run_until(t->base, never, NULL, ms);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* cp_conn keeps its deadlines on CLOCK_MONOTONIC from the moment it starts waiting, which comes after
 * `t0` (read from the same clock); so its timeout cannot be seen before t0 + `timeout_ms`, however slow
 * the machine. An order, not a window: a late timeout is not a failure here. */
static void assert_not_before_ms(int64_t t0, int64_t timeout_ms)
{
    int64_t dt = now_ms() - t0;

    print_message("    timed out after %lld ms (not before %lld ms)\n", (long long)dt, (long long)timeout_ms);
    assert_true(dt >= timeout_ms);
}

/* Expect the connection to close during authentication with an error containing `needle`. */
static void expect_auth_failure(struct test *t, const char *needle)
{
    run_until(t, is_closed, t);
    run_until(t, fake_finished, t);
    check_fake(t);
    assert_int_equal(t->n_ready, 0);
    assert_int_equal(t->n_closed, 1);
    assert_false(t->closed_err_null);
    if (!strstr(t->closed_err, needle))
        fail_msg("close error \"%s\" lacks \"%s\"", t->closed_err, needle);
    assert_int_equal(cp_conn_get_state(t->c), CP_CONN_CLOSED);
}

static const unsigned char test_cookie[32] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87, 0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0x0f,
};

/* ---- strings and options ----------------------------------------------------------------------- */

static void test_state_and_method_strings(void **state)
{
    static const struct {
        enum cp_conn_state s;
        const char *want;
    } states[] = {
        { CP_CONN_IDLE, "idle" },       { CP_CONN_CONNECTING, "connecting" },
        { CP_CONN_AUTHENTICATING, "authenticating" }, { CP_CONN_READY, "ready" },
        { CP_CONN_CLOSED, "closed" },
    };
    static const struct {
        enum cp_auth_method m;
        const char *want;
    } methods[] = {
        { CP_AUTH_AUTO, "AUTO" },      { CP_AUTH_SAFECOOKIE, "SAFECOOKIE" }, { CP_AUTH_COOKIE, "COOKIE" },
        { CP_AUTH_PASSWORD, "HASHEDPASSWORD" }, { CP_AUTH_NONE, "NULL" },
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(states); i++)
        assert_string_equal(cp_conn_state_str(states[i].s), states[i].want);
    for (i = 0; i < ARRAY_LEN(methods); i++)
        assert_string_equal(cp_auth_method_str(methods[i].m), methods[i].want);
}

static void test_new_rejects_bad_options(void **state)
{
    struct test *t = *state;
    static const char long_path[] = "/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/sock";
    static const struct {
        struct cp_conn_opts opts;
        const char *needle;
    } cases[] = {
        { { .auth = CP_AUTH_AUTO }, "exactly one" },
        { { .unix_path = "/x", .host = "127.0.0.1", .port = 9051 }, "exactly one" },
        { { .host = "localhost", .port = 9051 }, "numeric" },
        { { .host = "127.0.0.1", .port = 0 }, "port" },
        { { .unix_path = "" }, "unix_path" },
        { { .unix_path = long_path }, "unix_path" },
        { { .unix_path = "/x", .auth = CP_AUTH_PASSWORD }, "password" },
        { { .unix_path = "/x", .auth = (enum cp_auth_method)42 }, "auth" },
        { { .unix_path = "/x", .cmd_timeout = { 0, 1000000 } }, "cmd_timeout" },
        { { .unix_path = "/x", .cmd_timeout = { -1, 0 } }, "cmd_timeout" },
    };
    char err[256];
    size_t i;

    for (i = 0; i < ARRAY_LEN(cases); i++) {
        struct cp_conn *c;

        err[0] = '\0';
        c = cp_conn_new(t->base, &cases[i].opts, NULL, NULL, err, sizeof err);
        if (c) {
            cp_conn_free(c);
            fail_msg("case %zu accepted", i);
        }
        if (!strstr(err, cases[i].needle))
            fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, err, cases[i].needle);
    }
    /* And well-formed options are accepted (IPv6 too). */
    {
        struct cp_conn_opts ok = { .host = "::1", .port = 9051, .auth = CP_AUTH_PASSWORD, .password = "x" };
        struct cp_conn *c = cp_conn_new(t->base, &ok, NULL, NULL, err, sizeof err);

        assert_non_null(c);
        assert_int_equal(cp_conn_get_state(c), CP_CONN_IDLE);
        assert_int_equal(cp_conn_auth_method(c), CP_AUTH_AUTO);
        cp_conn_free(c);
    }
    cp_conn_free(NULL);
}

static void test_connect_missing_socket_fails_at_once(void **state)
{
    struct test *t = *state;
    struct cp_conn_opts o = { .unix_path = "/nonexistent/onionfront-test/sock" };
    struct rec r = { 0 };
    char err[256];

    t->c = cp_conn_new(t->base, &o, state_cb, t, err, sizeof err);
    assert_non_null(t->c);
    assert_int_equal(cp_conn_connect(t->c, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/onionfront-test/sock"));
    assert_non_null(strstr(err, "No such file"));
    assert_int_equal(cp_conn_get_state(t->c), CP_CONN_IDLE);
    assert_int_equal(cp_conn_send(t->c, "GETINFO version\r\n", reply_cb, &r, err, sizeof err), -1);
    run_for(t, 20);
    assert_int_equal(t->n_closed, 0); /* a failure to start is reported by the return value only */
    assert_int_equal(r.calls, 0);
}

static void test_connect_refused_tcp(void **state)
{
    struct test *t = *state;
    struct fake_ctl *probe;
    struct cp_conn_opts o = { .host = "127.0.0.1" };
    char err[256];
    int rc;

    /* A port that was just listening and no longer is. */
    probe = fake_ctl_new(t->base, true, NULL, 0, err, sizeof err);
    assert_non_null(probe);
    o.port = fake_ctl_port(probe);
    fake_ctl_free(probe);
    t->c = cp_conn_new(t->base, &o, state_cb, t, err, sizeof err);
    assert_non_null(t->c);
    rc = cp_conn_connect(t->c, err, sizeof err);
    if (rc == 0) { /* refused asynchronously */
        run_until(t, is_closed, t);
        assert_non_null(strstr(t->closed_err, "refused"));
        assert_int_equal(t->n_closed, 1);
    } else {
        assert_non_null(strstr(err, "refused"));
    }
    assert_int_equal(t->n_ready, 0);
}

/* ---- authentication ---------------------------------------------------------------------------- */

static void test_auth_safecookie(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND,
          "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=COOKIE,SAFECOOKIE COOKIEFILE=\"@DIR@/control_auth_cookie\"\r\n"
          "250-VERSION Tor=\"0.4.9.11\"\r\n250 OK\r\n",
          0 },
        { FAKE_CTL_SAFECOOKIE, NULL, 0 },
        { FAKE_CTL_SAFECOOKIE_AUTH, NULL, 0 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT, "GETINFO version", 0 },
        { FAKE_CTL_SEND, "250-version=0.4.9.11\r\n250 OK\r\n", 0 },
    };
    struct rec r = { 0 };
    struct until_recs u = { t, &r, 1 };

    start_fake(t, false, script, ARRAY_LEN(script));
    write_cookie(t, "control_auth_cookie", test_cookie, sizeof test_cookie);
    connect_conn(t);
    run_until(t, is_ready, t);
    assert_int_equal(t->n_ready, 1);
    assert_int_equal(cp_conn_get_state(t->c), CP_CONN_READY);
    assert_int_equal(cp_conn_auth_method(t->c), CP_AUTH_SAFECOOKIE); /* AUTO prefers it over COOKIE */
    send_cmd(t, "GETINFO version\r\n", &r);
    run_until(t, recs_done, &u);
    check_fake(t);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.status, 250);
    assert_string_equal(r.text, "version=0.4.9.11");
    assert_int_equal(t->n_closed, 0);
}

/* A COOKIEFILE that needs escaping (control-spec 3.21: "Controllers MUST handle escape sequences"), with
 * SAFECOOKIE asked for explicitly, the PROTOCOLINFO reply split mid-line. */
static void test_auth_safecookie_quoted_cookiefile(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=SAFECOOKIE COOKIEFILE=\"@DIR@/my \\\"co", 0 },
        { FAKE_CTL_PAUSE, NULL, 20 },
        { FAKE_CTL_SEND, "okie\\\\\"\r\n250 OK\r\n", 0 },
        { FAKE_CTL_SAFECOOKIE, NULL, 0 },
        { FAKE_CTL_SAFECOOKIE_AUTH, NULL, 0 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
    };

    start_fake(t, false, script, ARRAY_LEN(script));
    write_cookie(t, "my \"cookie\\", test_cookie, sizeof test_cookie);
    t->opts.auth = CP_AUTH_SAFECOOKIE;
    connect_conn(t);
    run_until(t, is_ready, t);
    if (t->n_ready != 1)
        fail_msg("not ready: %s", t->closed_err);
    run_until(t, fake_finished, t);
    check_fake(t);
    assert_int_equal(cp_conn_auth_method(t->c), CP_AUTH_SAFECOOKIE);
}

/* Whoever answers must prove it knows the cookie: a wrong SERVERHASH closes the connection before any
 * AUTHENTICATE is sent (the fake expects EOF, and a line instead is a mismatch). */
static void test_auth_safecookie_wrong_server_hash(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND,
          "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=SAFECOOKIE COOKIEFILE=\"@DIR@/c\"\r\n250 OK\r\n", 0 },
        { FAKE_CTL_SAFECOOKIE_BAD, NULL, 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };

    start_fake(t, false, script, ARRAY_LEN(script));
    write_cookie(t, "c", test_cookie, sizeof test_cookie);
    connect_conn(t);
    expect_auth_failure(t, "SERVERHASH");
}

/* The cookie_path option overrides COOKIEFILE; a different cookie there makes tor's hash mismatch. */
static void test_auth_safecookie_cookie_path_override(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND,
          "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=SAFECOOKIE COOKIEFILE=\"@DIR@/real\"\r\n250 OK\r\n", 0 },
        { FAKE_CTL_SAFECOOKIE, NULL, 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    unsigned char other[32];
    char path[256];

    memcpy(other, test_cookie, sizeof other);
    other[31] ^= 1;
    start_fake(t, false, script, ARRAY_LEN(script));
    write_cookie(t, "other", other, sizeof other);
    write_cookie(t, "real", test_cookie, sizeof test_cookie); /* the fake's cookie */
    snprintf(path, sizeof path, "%s/other", fake_ctl_dir(t->fake));
    t->opts.cookie_path = path;
    connect_conn(t);
    expect_auth_failure(t, "SERVERHASH");
}

static void test_auth_cookie(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=COOKIE COOKIEFILE=\"@DIR@/cookie\"\r\n250 OK\r\n",
          0 },
        { FAKE_CTL_COOKIE_AUTH, NULL, 0 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
    };

    start_fake(t, false, script, ARRAY_LEN(script));
    write_cookie(t, "cookie", test_cookie, sizeof test_cookie);
    connect_conn(t);
    run_until(t, is_ready, t);
    assert_int_equal(t->n_ready, 1);
    assert_int_equal(cp_conn_auth_method(t->c), CP_AUTH_COOKIE);
    check_fake(t);
}

static void test_auth_cookie_wrong_size(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=COOKIE COOKIEFILE=\"@DIR@/cookie\"\r\n250 OK\r\n",
          0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };

    start_fake(t, false, script, ARRAY_LEN(script));
    write_cookie(t, "cookie", test_cookie, 31);
    connect_conn(t);
    expect_auth_failure(t, "31 bytes, expected 32");
}

static void test_auth_cookie_file_missing(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=SAFECOOKIE COOKIEFILE=\"@DIR@/nope\"\r\n250 OK\r\n",
          0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };

    start(t, script, ARRAY_LEN(script));
    expect_auth_failure(t, "/nope: No such file");
}

static void test_auth_password(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=HASHEDPASSWORD\r\n250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT, "AUTHENTICATE \"s3cret \\\"x\\\" \\\\y\"", 0 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
    };

    start_fake(t, false, script, ARRAY_LEN(script));
    t->opts.password = "s3cret \"x\" \\y";
    connect_conn(t);
    run_until(t, is_ready, t);
    if (t->n_ready != 1)
        fail_msg("not ready: %s (fake: %s)", t->closed_err, fake_ctl_failure(t->fake));
    assert_int_equal(cp_conn_auth_method(t->c), CP_AUTH_PASSWORD);
    check_fake(t);
}

static void test_auth_null_over_tcp(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = { NULL_AUTH_STEPS };

    start_fake(t, true, script, ARRAY_LEN(script));
    connect_conn(t);
    run_until(t, is_ready, t);
    assert_int_equal(t->n_ready, 1);
    assert_int_equal(cp_conn_auth_method(t->c), CP_AUTH_NONE);
    check_fake(t);
}

/* The peer's uid comes from the kernel (SO_PEERCRED) on a unix socket: here the fake is this process,
 * so it is our own uid. Not before connecting; never over TCP, which carries no credentials. */
static void test_peer_uid(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = { NULL_AUTH_STEPS };
    char err[256];
    uid_t uid = (uid_t)-1;

    start_fake(t, false, script, ARRAY_LEN(script));
    t->opts.unix_path = fake_ctl_unix_path(t->fake);
    t->c = cp_conn_new(t->base, &t->opts, state_cb, t, err, sizeof err);
    assert_non_null(t->c);
    assert_int_equal(cp_conn_peer_uid(t->c, &uid), -1);
    assert_int_equal(errno, ENOTCONN);
    assert_int_equal(cp_conn_connect(t->c, err, sizeof err), 0);
    run_until(t, is_ready, t);
    assert_int_equal(t->n_ready, 1);
    assert_int_equal(cp_conn_peer_uid(t->c, &uid), 0);
    assert_int_equal(uid, geteuid());
    check_fake(t);
}

static void test_peer_uid_tcp_has_none(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = { NULL_AUTH_STEPS };
    uid_t uid = 12345;

    start_fake(t, true, script, ARRAY_LEN(script));
    connect_conn(t);
    run_until(t, is_ready, t);
    assert_int_equal(t->n_ready, 1);
    assert_int_equal(cp_conn_peer_uid(t->c, &uid), -1);
    assert_int_equal(errno, EPROTONOSUPPORT);
    assert_int_equal(uid, 12345);
    check_fake(t);
}

/* Table of PROTOCOLINFO / AUTHENTICATE answers that must end in a closed connection with a message. */
static void test_auth_failures_table(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step refused[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL\r\n250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT, "AUTHENTICATE", 0 },
        { FAKE_CTL_SEND, "515 Authentication failed: Password did not match HashedControlPassword value.\r\n", 0 },
        { FAKE_CTL_CLOSE, NULL, 0 },
    };
    static const struct fake_ctl_step not_offered[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL\r\n250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    static const struct fake_ctl_step no_password[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=HASHEDPASSWORD\r\n250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    static const struct fake_ctl_step no_auth_line[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-VERSION Tor=\"0.4.9.11\"\r\n250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    static const struct fake_ctl_step protocolinfo_error[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "513 No such version \"1\"\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    static const struct fake_ctl_step closed_early[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METH", 0 },
        { FAKE_CTL_CLOSE, NULL, 0 },
    };
    static const struct fake_ctl_step garbage[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "HTTP/1.0 400 Bad Request\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    static const struct fake_ctl_step no_cookiefile[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=COOKIE\r\n250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    static const struct fake_ctl_step bad_challenge[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=SAFECOOKIE COOKIEFILE=\"@DIR@/c\"\r\n250 OK\r\n",
          0 },
        { FAKE_CTL_EXPECT_PREFIX, "AUTHCHALLENGE SAFECOOKIE ", 0 },
        { FAKE_CTL_SEND, "250 AUTHCHALLENGE SERVERHASH=ABCD SERVERNONCE=ABCD\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    static const struct {
        const struct fake_ctl_step *script;
        size_t n;
        enum cp_auth_method auth;
        const char *needle;
    } cases[] = {
        { refused, ARRAY_LEN(refused), CP_AUTH_AUTO, "515 Authentication failed" },
        { not_offered, ARRAY_LEN(not_offered), CP_AUTH_SAFECOOKIE, "does not offer SAFECOOKIE" },
        { no_password, ARRAY_LEN(no_password), CP_AUTH_AUTO, "needs a password" },
        { no_auth_line, ARRAY_LEN(no_auth_line), CP_AUTH_AUTO, "no AUTH line" },
        { protocolinfo_error, ARRAY_LEN(protocolinfo_error), CP_AUTH_AUTO, "PROTOCOLINFO refused: 513" },
        { closed_early, ARRAY_LEN(closed_early), CP_AUTH_AUTO, "closed the control connection" },
        { garbage, ARRAY_LEN(garbage), CP_AUTH_AUTO, "protocol error" },
        { no_cookiefile, ARRAY_LEN(no_cookiefile), CP_AUTH_AUTO, "without COOKIEFILE" },
        { bad_challenge, ARRAY_LEN(bad_challenge), CP_AUTH_AUTO, "SERVERHASH is not 64 hex" },
    };
    size_t i;

    for (i = 0; i < ARRAY_LEN(cases); i++) {
        memset(&t->opts, 0, sizeof t->opts);
        t->opts.auth = cases[i].auth;
        t->n_ready = t->n_closed = 0;
        t->closed_err[0] = '\0';
        start_fake(t, false, cases[i].script, cases[i].n);
        write_cookie(t, "c", test_cookie, sizeof test_cookie);
        connect_conn(t);
        expect_auth_failure(t, cases[i].needle);
        cp_conn_free(t->c);
        t->c = NULL;
        fake_ctl_free(t->fake);
        t->fake = NULL;
    }
}

static void test_auth_timeout(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 }, /* never answers */
    };
    int64_t t0 = now_ms();

    t->opts.cmd_timeout.tv_usec = 150000;
    start(t, script, ARRAY_LEN(script));
    expect_auth_failure(t, "authentication timed out after 0.150 s");
    assert_not_before_ms(t0, 150);
}

/* ---- commands ---------------------------------------------------------------------------------- */

static void test_send_refused_unless_ready(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        { FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0 },
        { FAKE_CTL_PAUSE, NULL, 200 },
        { FAKE_CTL_SEND, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL\r\n250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT, "AUTHENTICATE", 0 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT, "GETINFO ok", 0 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
    };
    struct rec r = { .t = t }, ok = { 0 };
    struct until_recs u = { t, &ok, 1 };
    char err[256];

    start(t, script, ARRAY_LEN(script));
    /* CONNECTING */
    assert_int_equal(cp_conn_send(t->c, "GETINFO version\r\n", reply_cb, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "connecting"));
    run_until(t, is_authenticating, t); /* PROTOCOLINFO sent, its answer paused */
    assert_int_equal(cp_conn_get_state(t->c), CP_CONN_AUTHENTICATING);
    assert_int_equal(cp_conn_send(t->c, "GETINFO version\r\n", reply_cb, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "authenticating"));
    run_until(t, is_ready, t);
    assert_int_equal(t->n_ready, 1);
    /* READY, but not a complete command */
    assert_int_equal(cp_conn_send(t->c, "GETINFO version", reply_cb, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "CRLF"));
    assert_int_equal(cp_conn_send(t->c, "GETINFO version\n", reply_cb, &r, err, sizeof err), -1);
    /* two commands in one: their second reply would be matched to the next command */
    assert_int_equal(cp_conn_send(t->c, "GETINFO a\r\nGETINFO b\r\n", reply_cb, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "inside a one-line command"));
    assert_int_equal(cp_conn_send(t->c, "GETINFO a\rb\r\n", reply_cb, &r, err, sizeof err), -1);
    assert_int_equal(cp_conn_send(t->c, "+HSPOST\r\nx\r\n", reply_cb, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "\".\" CRLF"));
    send_cmd(t, "GETINFO ok\r\n", &ok);
    run_until(t, recs_done, &u);
    check_fake(t);
    assert_int_equal(ok.calls, 1);
    assert_int_equal(r.calls, 0); /* refused commands never complete */
}

/* A "+" command (data, then "." CRLF) is one command with one reply. */
static void test_multiline_command(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "+HSPOST HSADDRESS=x", 0 },
        { FAKE_CTL_EXPECT, "hs-descriptor 3", 0 },
        { FAKE_CTL_EXPECT, "..dot-stuffed", 0 },
        { FAKE_CTL_EXPECT, ".", 0 },
        { FAKE_CTL_EXPECT, "GETINFO after", 0 },
        { FAKE_CTL_SEND, "554 Invalid descriptor\r\n250-after=1\r\n250 OK\r\n", 0 },
    };
    struct rec recs[2] = { { 0 } };
    struct until_recs u = { t, recs, 2 };

    start(t, script, ARRAY_LEN(script));
    run_until(t, is_ready, t);
    send_cmd(t, "+HSPOST HSADDRESS=x\r\nhs-descriptor 3\r\n..dot-stuffed\r\n.\r\n", &recs[0]);
    send_cmd(t, "GETINFO after\r\n", &recs[1]);
    run_until(t, recs_done, &u);
    check_fake(t);
    assert_int_equal(recs[0].status, 554);
    assert_int_equal(recs[1].status, 250);
    assert_string_equal(recs[1].text, "after=1");
}

/* Three commands written before any reply (the fake reads all three before answering, so a client that
 * waited for each reply would time out); the replies come split mid-line and are matched in order. */
static void test_pipelining(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO a", 0 },
        { FAKE_CTL_EXPECT, "GETINFO b", 0 },
        { FAKE_CTL_EXPECT, "GETINFO c", 0 },
        { FAKE_CTL_SEND, "250-a=1\r\n250 OK\r\n250-b=", 0 },
        { FAKE_CTL_PAUSE, NULL, 20 },
        { FAKE_CTL_SEND, "2\r\n250 O", 0 },
        { FAKE_CTL_PAUSE, NULL, 20 },
        { FAKE_CTL_SEND, "K\r\n552 Unrecognized key \"c\"\r\n", 0 },
    };
    struct rec recs[3] = { { 0 } };
    struct until_recs u = { t, recs, 3 };
    size_t i;

    t->on_ready_cmds[0] = "GETINFO a\r\n";
    t->on_ready_cmds[1] = "GETINFO b\r\n";
    t->on_ready_cmds[2] = "GETINFO c\r\n";
    for (i = 0; i < 3; i++)
        t->on_ready_recs[i] = &recs[i];
    t->n_on_ready = 3;
    start(t, script, ARRAY_LEN(script));
    run_until(t, recs_done, &u);
    check_fake(t);
    for (i = 0; i < 3; i++) {
        assert_int_equal(recs[i].calls, 1);
        assert_int_equal(recs[i].order, (int)i + 1);
    }
    assert_int_equal(recs[0].status, 250);
    assert_string_equal(recs[0].text, "a=1");
    assert_int_equal(recs[1].status, 250);
    assert_string_equal(recs[1].text, "b=2");
    assert_int_equal(recs[2].status, 552);
    assert_string_equal(recs[2].text, "Unrecognized key \"c\"");
    assert_int_equal(cp_conn_get_state(t->c), CP_CONN_READY);
    assert_int_equal(t->n_closed, 0);
}

/* A subscription tag: the test and a name, for the log. */
struct sub_tag {
    struct test *t;
    const char *name;
};

static void event_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct sub_tag *tag = arg;

    assert_ptr_equal(c, tag->t->c);
    assert_true(ev->is_event);
    log_add(tag->t, "event:%s:%d:%s;", tag->name, ev->status, ev->lines[0].text);
}

static void test_event_between_command_and_reply(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO version", 0 },
        { FAKE_CTL_SEND, "650 CIRC 5 LAUNCHED BUILD_FLAGS=NEED_CAPACITY PURPOSE=GENERAL\r\n650-CONF_CHANG", 0 },
        { FAKE_CTL_PAUSE, NULL, 10 },
        { FAKE_CTL_SEND, "ED\r\n650-MaxCircuitDirtiness=601\r\n650 OK\r\n250-version=0.4.9.11\r\n250 OK\r\n", 0 },
    };
    struct sub_tag circ = { t, "circ" }, all = { t, "all" }, hs = { t, "hs" };
    struct rec r = { 0 };
    struct until_recs u = { t, &r, 1 };

    start(t, script, ARRAY_LEN(script));
    assert_int_equal(cp_conn_subscribe(t->c, "CIRC", event_cb, &circ), 0);
    assert_int_equal(cp_conn_subscribe(t->c, "*", event_cb, &all), 0);
    assert_int_equal(cp_conn_subscribe(t->c, "HS_DESC", event_cb, &hs), 0);
    run_until(t, is_ready, t);
    send_cmd(t, "GETINFO version\r\n", &r);
    run_until(t, recs_done, &u);
    check_fake(t);
    assert_string_equal(t->log, "ready;"
                                "event:circ:650:CIRC 5 LAUNCHED BUILD_FLAGS=NEED_CAPACITY PURPOSE=GENERAL;"
                                "event:all:650:CIRC 5 LAUNCHED BUILD_FLAGS=NEED_CAPACITY PURPOSE=GENERAL;"
                                "event:all:650:CONF_CHANGED;"
                                "reply:250:version=0.4.9.11;");
    assert_int_equal(r.calls, 1);
}

static void unsubscribing_event_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct sub_tag *tag = arg;

    log_add(tag->t, "event:%s:%s;", tag->name, ev->lines[0].text);
    cp_conn_unsubscribe(c, unsubscribing_event_cb, arg);
    /* Subscribing from inside a dispatch is allowed too; it takes effect with the next event. */
    assert_int_equal(cp_conn_subscribe(c, "BW", event_cb, arg), 0);
}

static void test_unsubscribe_inside_event(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_SEND, "650 BW 1 2\r\n650 BW 3 4\r\n", 0 },
        { FAKE_CTL_EXPECT, "GETINFO x", 0 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
    };
    struct sub_tag once = { t, "once" }, other = { t, "other" };
    struct rec r = { 0 };
    struct until_recs u = { t, &r, 1 };

    start(t, script, ARRAY_LEN(script));
    assert_int_equal(cp_conn_subscribe(t->c, "BW", unsubscribing_event_cb, &once), 0);
    assert_int_equal(cp_conn_subscribe(t->c, "CIRC", event_cb, &other), 0);
    cp_conn_unsubscribe(t->c, event_cb, &other); /* removed before anything arrives */
    run_until(t, is_ready, t);
    send_cmd(t, "GETINFO x\r\n", &r);
    run_until(t, recs_done, &u);
    check_fake(t);
    /* first BW: the unsubscribing subscriber; second BW: only the one it added */
    assert_string_equal(t->log, "ready;event:once:BW 1 2;event:once:650:BW 3 4;reply:250:OK;");
}

static void test_command_timeout_closes(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO slow", 0 },
        { FAKE_CTL_EXPECT, "GETINFO next", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    struct rec recs[2] = { { 0 } };
    struct until_recs u = { t, recs, 2 };
    int64_t t0;

    t->opts.cmd_timeout.tv_usec = 200000;
    start(t, script, ARRAY_LEN(script));
    run_until(t, is_ready, t);
    t0 = now_ms();
    send_cmd(t, "GETINFO slow\r\n", &recs[0]);
    send_cmd(t, "GETINFO next\r\n", &recs[1]);
    run_until(t, recs_done, &u);
    assert_not_before_ms(t0, 200);
    check_fake(t);
    assert_int_equal(recs[0].calls, 1);
    assert_int_equal(recs[1].calls, 1);
    assert_int_equal(recs[0].status, 0);
    assert_int_equal(recs[1].status, 0);
    assert_non_null(strstr(recs[0].err, "no reply to a command within 0.200 s"));
    assert_int_equal(t->n_closed, 1);
    assert_non_null(strstr(t->closed_err, "no reply"));
    assert_int_equal(cp_conn_get_state(t->c), CP_CONN_CLOSED);
    assert_string_equal(t->log, "ready;error;error;closed;"); /* commands first, then the state */
}

/* A slow answer inside the timeout does not close; the timer follows the oldest command. */
static void test_timeout_follows_oldest_command(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO a", 0 },
        { FAKE_CTL_PAUSE, NULL, 150 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT, "GETINFO b", 0 },
        { FAKE_CTL_PAUSE, NULL, 150 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
    };
    struct rec recs[2] = { { 0 } };
    struct until_recs u1 = { t, recs, 1 }, u = { t, recs, 2 };

    t->opts.cmd_timeout.tv_usec = 250000; /* each answer within it, both together beyond it */
    start(t, script, ARRAY_LEN(script));
    run_until(t, is_ready, t);
    send_cmd(t, "GETINFO a\r\n", &recs[0]);
    run_until(t, first_rec_called, &u1);
    send_cmd(t, "GETINFO b\r\n", &recs[1]);
    run_until(t, recs_done, &u);
    check_fake(t);
    assert_int_equal(recs[0].status, 250);
    assert_int_equal(recs[1].status, 250);
    assert_int_equal(t->n_closed, 0);
}

/* A backlog is not lateness: three commands sent at once, each answered 200 ms after the previous one,
 * with a 500 ms timeout. Together they take longer than the timeout, but tor answered each within its
 * own time from when the one before it was answered: a busy tor, not a hung one, so nothing closes. */
static void test_timeout_counts_from_head(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO a", 0 },
        { FAKE_CTL_EXPECT, "GETINFO b", 0 },
        { FAKE_CTL_EXPECT, "GETINFO c", 0 },
        { FAKE_CTL_PAUSE, NULL, 200 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
        { FAKE_CTL_PAUSE, NULL, 200 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
        { FAKE_CTL_PAUSE, NULL, 200 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
    };
    struct rec recs[3] = { { 0 } };
    struct until_recs u = { t, recs, 3 };

    t->opts.cmd_timeout.tv_usec = 500000;
    start(t, script, ARRAY_LEN(script));
    run_until(t, is_ready, t);
    send_cmd(t, "GETINFO a\r\n", &recs[0]);
    send_cmd(t, "GETINFO b\r\n", &recs[1]);
    send_cmd(t, "GETINFO c\r\n", &recs[2]);
    run_until(t, recs_done, &u);
    check_fake(t);
    for (int i = 0; i < 3; i++)
        assert_int_equal(recs[i].status, 250);
    assert_int_equal(t->n_closed, 0);
}

/* A command sized to its work (cp_conn_send_timed): a long SETCONF answered after 400 ms with its own
 * 2 s does not close a connection whose usual timeout is 200 ms, and the command behind it still gets
 * its usual 200 ms, counted from then; a hung tor is still found: the next command left unanswered
 * closes it, the message naming that command's time. A malformed timeout is refused. */
static void test_timed_command(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "SETCONF big", 0 },
        { FAKE_CTL_EXPECT, "GETINFO after", 0 },
        { FAKE_CTL_PAUSE, NULL, 400 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT, "GETINFO hung", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    struct rec recs[3] = { { 0 } };
    struct until_recs u2 = { t, recs, 2 };
    char err[256];

    t->opts.cmd_timeout.tv_usec = 200000;
    start(t, script, ARRAY_LEN(script));
    run_until(t, is_ready, t);
    assert_int_equal(cp_conn_send_timed(t->c, "GETINFO x\r\n", (struct timeval){ 0, 1000000 }, reply_cb, &recs[0],
                                        err, sizeof err), -1);
    assert_non_null(strstr(err, "timeout"));
    assert_int_equal(cp_conn_send_timed(t->c, "GETINFO x\r\n", (struct timeval){ -1, 0 }, reply_cb, &recs[0], err,
                                        sizeof err), -1);
    recs[0].t = t;
    assert_int_equal(cp_conn_send_timed(t->c, "SETCONF big\r\n", (struct timeval){ 2, 0 }, reply_cb, &recs[0], err,
                                        sizeof err), 0);
    send_cmd(t, "GETINFO after\r\n", &recs[1]);
    run_until(t, first_rec_called, &u2);
    while (recs[1].calls == 0)
        run_for(t, 10);
    assert_int_equal(recs[0].status, 250);
    assert_int_equal(recs[1].status, 250);
    assert_int_equal(t->n_closed, 0);
    send_cmd(t, "GETINFO hung\r\n", &recs[2]);
    run_until(t, is_closed, t);
    run_until(t, fake_finished, t);
    check_fake(t);
    assert_int_equal(recs[2].calls, 1);
    assert_int_equal(recs[2].status, 0);
    assert_non_null(strstr(recs[2].err, "no reply to a command within 0.200 s"));
}

/* A busy tor is not a hung one: a command answered after 500 ms with a 200 ms timeout does not close
 * the connection when tor keeps sending events meanwhile (its main loop runs), nor when the owner's
 * busy check says it worked (its process used CPU) though it sent nothing. */
static bool busy_check(struct cp_conn *c, void *arg)
{
    struct test *t = arg;
    (void)c;
    t->busy_asked++;
    return t->busy_asked <= t->busy_answers;
}

static void test_busy_tor_gets_more_time(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO events", 0 },
        { FAKE_CTL_PAUSE, NULL, 120 },
        { FAKE_CTL_SEND, "650 BW 1 1\r\n", 0 },
        { FAKE_CTL_PAUSE, NULL, 120 },
        { FAKE_CTL_SEND, "650 BW 2 2\r\n", 0 },
        { FAKE_CTL_PAUSE, NULL, 120 },
        { FAKE_CTL_SEND, "650 BW 3 3\r\n", 0 },
        { FAKE_CTL_PAUSE, NULL, 120 },
        { FAKE_CTL_SEND, "650 BW 4 4\r\n", 0 },
        { FAKE_CTL_PAUSE, NULL, 60 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT, "GETINFO cpu", 0 },
        { FAKE_CTL_PAUSE, NULL, 500 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
    };
    struct rec recs[2] = { { 0 } };
    struct until_recs u1 = { t, recs, 1 }, u = { t, recs, 2 };

    t->opts.cmd_timeout.tv_usec = 200000;
    start(t, script, ARRAY_LEN(script));
    run_until(t, is_ready, t);
    send_cmd(t, "GETINFO events\r\n", &recs[0]);
    run_until(t, first_rec_called, &u1);
    assert_int_equal(recs[0].status, 250);
    assert_int_equal(t->busy_asked, 0); /* events alone were enough */
    t->busy_answers = 100;
    cp_conn_set_busy_check(t->c, busy_check, t);
    send_cmd(t, "GETINFO cpu\r\n", &recs[1]);
    run_until(t, recs_done, &u);
    check_fake(t);
    assert_int_equal(recs[1].status, 250);
    assert_true(t->busy_asked >= 1);
    assert_int_equal(t->n_closed, 0);
}

/* A tor that stays busy without ever answering is given up on after CP_CONN_MAX_EXTENSIONS more periods,
 * and the message says it was busy; one whose busy check says idle is given up on at the first. */
static void test_busy_tor_is_bounded(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO never", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    struct rec recs[1] = { { 0 } };
    struct until_recs u = { t, recs, 1 };

    t->opts.cmd_timeout.tv_usec = 50000;
    t->busy_answers = 1000;
    start(t, script, ARRAY_LEN(script));
    run_until(t, is_ready, t);
    cp_conn_set_busy_check(t->c, busy_check, t);
    send_cmd(t, "GETINFO never\r\n", &recs[0]);
    run_until(t, recs_done, &u);
    check_fake(t);
    assert_int_equal(t->busy_asked, CP_CONN_MAX_EXTENSIONS);
    assert_int_equal(recs[0].status, 0);
    assert_non_null(strstr(recs[0].err, "no reply to a command within 0.050 s (tor was busy for"));
    assert_int_equal(t->n_closed, 1);
}

/* A tor that keeps sending events is alive, however long the head waits: 2 s of events every 40 ms with a
 * 100 ms period (20 periods, twice CP_CONN_MAX_EXTENSIONS), then the answer; nothing closes. The busy
 * check says busy CP_CONN_MAX_EXTENSIONS times, to cover periods a loaded machine leaves without an event,
 * so the events must carry at least the other 11: the old rule (every extension counted) closes at ~1 s. */
#define EVENT_EVERY_40MS { FAKE_CTL_PAUSE, NULL, 40 }, { FAKE_CTL_SEND, "650 BW 1 1\r\n", 0 }
#define EVENTS_5 EVENT_EVERY_40MS, EVENT_EVERY_40MS, EVENT_EVERY_40MS, EVENT_EVERY_40MS, EVENT_EVERY_40MS
#define EVENTS_25 EVENTS_5, EVENTS_5, EVENTS_5, EVENTS_5, EVENTS_5
static void test_events_keep_head_waiting(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO slow", 0 },
        EVENTS_25, EVENTS_25,
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
    };
    struct rec recs[1] = { { 0 } };
    struct until_recs u = { t, recs, 1 };

    t->opts.cmd_timeout.tv_usec = 100000;
    t->busy_answers = CP_CONN_MAX_EXTENSIONS;
    start(t, script, ARRAY_LEN(script));
    run_until(t, is_ready, t);
    cp_conn_set_busy_check(t->c, busy_check, t);
    send_cmd(t, "GETINFO slow\r\n", &recs[0]);
    run_until(t, recs_done, &u);
    check_fake(t);
    assert_int_equal(recs[0].status, 250);
    assert_int_equal(t->n_closed, 0);
}

static void test_server_closes_mid_reply(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO a", 0 },
        { FAKE_CTL_EXPECT, "GETINFO b", 0 },
        { FAKE_CTL_EXPECT, "GETINFO c", 0 },
        { FAKE_CTL_SEND, "250-a=1\r\n250 OK\r\n250-b=0.4", 0 },
        { FAKE_CTL_CLOSE, NULL, 0 },
    };
    struct rec recs[3] = { { 0 } };
    struct until_recs u = { t, recs, 3 };
    size_t i;

    for (i = 0; i < 3; i++)
        t->on_ready_recs[i] = &recs[i];
    t->on_ready_cmds[0] = "GETINFO a\r\n";
    t->on_ready_cmds[1] = "GETINFO b\r\n";
    t->on_ready_cmds[2] = "GETINFO c\r\n";
    t->n_on_ready = 3;
    start(t, script, ARRAY_LEN(script));
    run_until(t, recs_done, &u);
    run_until(t, is_closed, t);
    run_for(t, 30);
    check_fake(t);
    for (i = 0; i < 3; i++)
        assert_int_equal(recs[i].calls, 1);
    assert_int_equal(recs[0].status, 250);
    assert_int_equal(recs[1].status, 0);
    assert_int_equal(recs[2].status, 0);
    assert_non_null(strstr(recs[1].err, "tor closed the control connection"));
    assert_int_equal(t->n_closed, 1);
    assert_non_null(strstr(t->closed_err, "tor closed the control connection"));
    assert_string_equal(t->log, "ready;reply:250:a=1;error;error;closed;");
}

static void test_unexpected_reply_closes(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };

    start(t, script, ARRAY_LEN(script));
    run_until(t, is_closed, t);
    run_until(t, fake_finished, t);
    check_fake(t);
    assert_int_equal(t->n_ready, 1);
    assert_non_null(strstr(t->closed_err, "no command is pending"));
}

static void test_line_cap_closes(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO big", 0 },
        { FAKE_CTL_SEND, "250-big=0123456789012345678901234567890123456789012345678901234567890123456789\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    struct rec r = { 0 };
    struct until_recs u = { t, &r, 1 };

    t->opts.max_line = 64;
    start(t, script, ARRAY_LEN(script));
    run_until(t, is_ready, t);
    send_cmd(t, "GETINFO big\r\n", &r);
    run_until(t, recs_done, &u);
    check_fake(t);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "protocol error"));
    assert_int_equal(t->n_closed, 1);
}

/* ---- close and free from inside callbacks ------------------------------------------------------ */

/* cp_conn_free() inside the first completion: the replies already buffered for the other two commands
 * are not delivered; they complete with an error, exactly once, inside the free; no state callback. */
static void test_free_inside_reply_cb(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO a", 0 },
        { FAKE_CTL_EXPECT, "GETINFO b", 0 },
        { FAKE_CTL_EXPECT, "GETINFO c", 0 },
        { FAKE_CTL_SEND, "250 OK\r\n250 OK\r\n650 BW 1 1\r\n250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    struct rec recs[3] = { { 0 } };
    struct until_recs u = { t, recs, 3 };
    struct sub_tag all = { t, "all" };
    size_t i;

    for (i = 0; i < 3; i++)
        t->on_ready_recs[i] = &recs[i];
    t->on_ready_cmds[0] = "GETINFO a\r\n";
    t->on_ready_cmds[1] = "GETINFO b\r\n";
    t->on_ready_cmds[2] = "GETINFO c\r\n";
    t->n_on_ready = 3;
    recs[0].free_in_cb = true;
    start(t, script, ARRAY_LEN(script));
    assert_int_equal(cp_conn_subscribe(t->c, "*", event_cb, &all), 0);
    run_until(t, recs_done, &u);
    run_for(t, 30);
    check_fake(t);
    assert_null(t->c);
    for (i = 0; i < 3; i++)
        assert_int_equal(recs[i].calls, 1);
    assert_int_equal(recs[0].status, 250);
    assert_int_equal(recs[1].status, 0);
    assert_non_null(strstr(recs[1].err, "connection closed"));
    assert_string_equal(t->log, "ready;reply:250:OK;error;error;");
}

static void test_free_inside_ready_cb(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = { NULL_AUTH_STEPS, { FAKE_CTL_EXPECT_EOF, NULL, 0 } };

    t->free_on_ready = true;
    start(t, script, ARRAY_LEN(script));
    run_until(t, fake_finished, t);
    run_for(t, 20);
    check_fake(t);
    assert_null(t->c);
    assert_string_equal(t->log, "ready;");
}

struct free_tag {
    struct test *t;
    int calls;
};

static void freeing_event_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct free_tag *ft = arg;

    (void)ev;
    ft->calls++;
    cp_conn_free(c);
    ft->t->c = NULL;
    cp_conn_free(c); /* a second free from the same callback chain is a no-op */
}

static void test_free_inside_event_cb(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO a", 0 },
        { FAKE_CTL_SEND, "650 BW 1 1\r\n650 BW 2 2\r\n250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
    };
    struct free_tag f1 = { t, 0 }, f2 = { t, 0 };
    struct rec r = { 0 };
    struct until_recs u = { t, &r, 1 };

    start(t, script, ARRAY_LEN(script));
    assert_int_equal(cp_conn_subscribe(t->c, "BW", freeing_event_cb, &f1), 0);
    assert_int_equal(cp_conn_subscribe(t->c, "BW", freeing_event_cb, &f2), 0);
    run_until(t, is_ready, t);
    send_cmd(t, "GETINFO a\r\n", &r);
    run_until(t, recs_done, &u);
    run_for(t, 20);
    check_fake(t);
    assert_int_equal(f1.calls, 1);
    assert_int_equal(f2.calls, 0); /* freed: no further subscriber, no further event */
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.status, 0);
    assert_string_equal(t->log, "ready;error;");
}

static bool is_ready_twice(void *arg)
{
    struct test *t = arg;
    return t->n_ready >= 2 || t->n_closed >= 2;
}

/* cp_conn_close() inside a completion: the other command fails with "connection closed", state_cb gets
 * CLOSED with no message, and a reconnect from inside state_cb authenticates again on a new connection. */
static void test_close_inside_reply_cb_then_reconnect(void **state)
{
    struct test *t = *state;
    static const struct fake_ctl_step script[] = {
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO a", 0 },
        { FAKE_CTL_EXPECT, "GETINFO b", 0 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
        { FAKE_CTL_EXPECT_EOF, NULL, 0 },
        NULL_AUTH_STEPS,
        { FAKE_CTL_EXPECT, "GETINFO again", 0 },
        { FAKE_CTL_SEND, "250 OK\r\n", 0 },
    };
    struct rec recs[2] = { { 0 } }, again = { 0 };
    struct until_recs u = { t, &again, 1 };

    t->on_ready_recs[0] = &recs[0];
    t->on_ready_recs[1] = &recs[1];
    t->on_ready_cmds[0] = "GETINFO a\r\n";
    t->on_ready_cmds[1] = "GETINFO b\r\n";
    t->n_on_ready = 2;
    recs[0].close_in_cb = true;
    t->reconnect_on_close = true;
    start(t, script, ARRAY_LEN(script));
    run_until(t, is_closed, t);
    assert_true(t->closed_err_null);
    assert_int_equal(recs[0].calls, 1);
    assert_int_equal(recs[0].status, 250);
    assert_int_equal(recs[1].calls, 1);
    assert_string_equal(recs[1].err, "connection closed");
    assert_int_equal(cp_conn_get_state(t->c), CP_CONN_CONNECTING); /* reconnected from state_cb */
    run_until(t, is_ready_twice, t);
    send_cmd(t, "GETINFO again\r\n", &again);
    run_until(t, recs_done, &u);
    check_fake(t);
    assert_int_equal(again.status, 250);
    assert_int_equal(fake_ctl_connections(t->fake), 2);
    assert_string_equal(t->log, "ready;reply:250:OK;error;closed;ready;reply:250:OK;");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_state_and_method_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_rejects_bad_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_missing_socket_fails_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_refused_tcp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_safecookie, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_safecookie_quoted_cookiefile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_safecookie_wrong_server_hash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_safecookie_cookie_path_override, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_cookie, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_cookie_wrong_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_cookie_file_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_password, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_null_over_tcp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_uid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_uid_tcp_has_none, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_failures_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_refused_unless_ready, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multiline_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelining, setup, teardown),
        cmocka_unit_test_setup_teardown(test_event_between_command_and_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsubscribe_inside_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_timeout_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_follows_oldest_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_counts_from_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timed_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_tor_gets_more_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_tor_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_keep_head_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_closes_mid_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unexpected_reply_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_line_cap_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_inside_reply_cb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_inside_ready_cb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_inside_event_cb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_inside_reply_cb_then_reconnect, setup, teardown),
    };

    /* As in any program using cp_conn: a peer that closes must not kill us with SIGPIPE on the next write. */
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
