/* test_backend.c — backend pools without any I/O: selection for each policy with weights (smooth
 * weighted round robin, least connections, circuit affinity), exclusion, drained backends, rise/fall
 * arithmetic, passive ejection, reload in place by name, the lifetime of removed backends that still
 * carry streams (run under ASan), state-change logging, JSON and metrics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sidecar/datapath/backend.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"

#define MAXB 8

struct fixture {
    struct port_conf port;
    struct backend_conf bc[MAXB];
    struct backend_pool *pool;
};

/* A port with backends b0..b(n-1) at 127.0.0.1:(8000+i) and the given weights. */
static void port_init(struct port_conf *port, struct backend_conf *bc, const unsigned *weights, size_t n,
                      enum balance_policy balance)
{
    memset(port, 0, sizeof(*port));
    memset(bc, 0, n * sizeof(*bc));
    for (size_t i = 0; i < n; i++) {
        snprintf(bc[i].name, sizeof(bc[i].name), "b%zu", i);
        bc[i].addr.kind = BACKEND_ADDR_INET;
        bc[i].addr.family = 2; /* AF_INET */
        snprintf(bc[i].addr.host, sizeof(bc[i].addr.host), "127.0.0.1");
        bc[i].addr.port = (uint16_t)(8000 + i);
        snprintf(bc[i].addr.text, sizeof(bc[i].addr.text), "127.0.0.1:%u", 8000u + (unsigned)i);
        bc[i].weight = weights[i];
    }
    port->virtual_port = 80;
    port->backends = bc;
    port->n_backends = n;
    port->balance = balance;
    port->connect_timeout_ms = 3000;
    port->health.type = HEALTH_TCP;
    port->health.interval_ms = 2000;
    port->health.timeout_ms = 1000;
    port->health.rise = 2;
    port->health.fall = 3;
    port->health.expect_status[0] = 200;
    port->health.n_expect_status = 1;
}

static struct backend_pool *fixture_pool(struct fixture *f, const unsigned *weights, size_t n,
                                         enum balance_policy balance)
{
    port_init(&f->port, f->bc, weights, n, balance);
    f->pool = backend_pool_new(NULL, "web", &f->port);
    assert_non_null(f->pool);
    return f->pool;
}

static int setup(void **state)
{
    static struct fixture f;
    memset(&f, 0, sizeof(f));
    log_set_level(LOG_LVL_INFO);
    log_set_clock(NULL); /* a fresh rate-limit window: tests count log lines */
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    backend_pool_free(f->pool);
    f->pool = NULL;
    return 0;
}

static size_t index_of(struct backend_pool *p, const struct backend *b)
{
    for (size_t i = 0; i < backend_pool_count(p); i++)
        if (backend_pool_get(p, i) == b)
            return i;
    fail_msg("backend not in pool");
    return SIZE_MAX;
}

/* Take backend i down through passive ejection, bring it up through `rise` ok checks. */
static void take_down(struct backend_pool *p, size_t i)
{
    backend_passive_failure(backend_pool_get(p, i), CHECK_CONNECT_REFUSED, "");
    assert_int_equal(backend_pool_get(p, i)->state, BACKEND_DOWN);
}

static void bring_up(struct backend_pool *p, size_t i)
{
    struct backend *b = backend_pool_get(p, i);
    for (unsigned k = 0; k < backend_pool_port(p)->health.rise; k++)
        backend_health_result(b, CHECK_OK, "");
    assert_int_equal(b->state, BACKEND_UP);
}

/* ---- round robin --------------------------------------------------------------------------------- */

static void test_round_robin_weights(void **state)
{
    struct fixture *f = *state;
    static const struct {
        size_t n;
        unsigned weights[MAXB];
        unsigned rounds; /* picks = rounds * sum of weights */
    } cases[] = {
        {3, {1, 2, 3}, 100}, {3, {1, 1, 1}, 50}, {3, {5, 1, 1}, 30}, {1, {7}, 3},
        {2, {256, 1}, 3},    {4, {2, 0, 2, 1}, 20}, {5, {1, 2, 3, 4, 5}, 7},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct backend_pool *p = fixture_pool(f, cases[c].weights, cases[c].n, BALANCE_ROUND_ROBIN);
        unsigned sum = 0;
        for (size_t i = 0; i < cases[c].n; i++)
            sum += cases[c].weights[i];
        size_t picks = (size_t)cases[c].rounds * sum;
        size_t *seq = calloc(picks, sizeof(*seq));
        unsigned counts[MAXB] = {0};
        for (size_t k = 0; k < picks; k++) {
            struct backend *b = backend_pool_pick(p, 0, NULL, 0);
            assert_non_null(b);
            seq[k] = index_of(p, b);
            counts[seq[k]]++;
        }
        for (size_t i = 0; i < cases[c].n; i++)
            assert_int_equal(counts[i], cases[c].weights[i] * cases[c].rounds);
        /* Smooth: every window of `sum` consecutive picks holds each backend exactly weight times. */
        for (size_t start = 0; start + sum <= picks; start++) {
            unsigned w[MAXB] = {0};
            for (size_t k = start; k < start + sum; k++)
                w[seq[k]]++;
            for (size_t i = 0; i < cases[c].n; i++)
                assert_int_equal(w[i], cases[c].weights[i]);
        }
        free(seq);
        backend_pool_free(p);
        f->pool = NULL;
    }
}

static void test_round_robin_interleaves(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {5, 1, 1};
    struct backend_pool *p = fixture_pool(f, w, 3, BALANCE_ROUND_ROBIN);
    /* nginx's smooth sequence for 5,1,1 is a a b a c a a: the heavy backend never gets 5 in a row. */
    char seq[8] = "";
    for (size_t k = 0; k < 7; k++)
        seq[k] = (char)('a' + index_of(p, backend_pool_pick(p, 0, NULL, 0)));
    assert_string_equal(seq, "aabacaa");
}

static void test_round_robin_skips_unusable(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 1, 1};
    struct backend_pool *p = fixture_pool(f, w, 3, BALANCE_ROUND_ROBIN);
    take_down(p, 1);
    unsigned counts[3] = {0};
    for (size_t k = 0; k < 100; k++)
        counts[index_of(p, backend_pool_pick(p, 0, NULL, 0))]++;
    assert_int_equal(counts[0], 50);
    assert_int_equal(counts[1], 0);
    assert_int_equal(counts[2], 50);
    /* exclusion, as for a retry of one stream */
    struct backend *ex[] = {backend_pool_get(p, 0)};
    for (size_t k = 0; k < 10; k++)
        assert_ptr_equal(backend_pool_pick(p, 0, ex, 1), backend_pool_get(p, 2));
    struct backend *all[] = {backend_pool_get(p, 0), backend_pool_get(p, 2)};
    assert_null(backend_pool_pick(p, 0, all, 2));
    assert_true(backend_pool_is_up(p));
    take_down(p, 0);
    take_down(p, 2);
    assert_null(backend_pool_pick(p, 0, NULL, 0));
    assert_false(backend_pool_is_up(p));
    bring_up(p, 2);
    assert_ptr_equal(backend_pool_pick(p, 0, NULL, 0), backend_pool_get(p, 2));
    assert_true(backend_pool_is_up(p));
}

/* ---- least connections --------------------------------------------------------------------------- */

static void test_least_conn_table(void **state)
{
    struct fixture *f = *state;
    static const struct {
        size_t n;
        unsigned weights[MAXB];
        unsigned active[MAXB];
        size_t expect;
    } cases[] = {
        {2, {1, 1}, {5, 2}, 1},          {2, {1, 3}, {1, 2}, 1},    /* 1/1 > 2/3 */
        {2, {2, 1}, {4, 1}, 1},          {2, {2, 1}, {3, 2}, 0},    /* 3/2 < 2/1 */
        {3, {1, 1, 1}, {3, 0, 2}, 1},    {3, {1, 0, 1}, {3, 0, 2}, 2}, /* b1 drained */
        {3, {10, 1, 1}, {9, 1, 1}, 0},   {4, {1, 2, 3, 4}, {2, 3, 4, 5}, 3}, {4, {1, 2, 3, 4}, {1, 3, 4, 5}, 0},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct backend_pool *p = fixture_pool(f, cases[c].weights, cases[c].n, BALANCE_LEAST_CONN);
        for (size_t i = 0; i < cases[c].n; i++)
            for (unsigned k = 0; k < cases[c].active[i]; k++)
                backend_stream_start(backend_pool_get(p, i));
        struct backend *b = backend_pool_pick(p, 0, NULL, 0);
        assert_non_null(b);
        assert_int_equal(index_of(p, b), cases[c].expect);
        backend_pool_free(p);
        f->pool = NULL;
    }
}

static void test_least_conn_fair_ties(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 3};
    struct backend_pool *p = fixture_pool(f, w, 2, BALANCE_LEAST_CONN);
    /* Equal (zero) load throughout: the tie-break shares by weight instead of always taking b0. */
    unsigned counts[2] = {0};
    for (size_t k = 0; k < 400; k++)
        counts[index_of(p, backend_pool_pick(p, 0, NULL, 0))]++;
    assert_int_equal(counts[0], 100);
    assert_int_equal(counts[1], 300);
}

static void test_least_conn_tracks_load(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 2, 3};
    struct backend_pool *p = fixture_pool(f, w, 3, BALANCE_LEAST_CONN);
    /* Streams that never end: every pick must be a backend with the least load per weight, and the
     * loads end up proportional to the weights. */
    for (size_t k = 0; k < 600; k++) {
        struct backend *b = backend_pool_pick(p, 0, NULL, 0);
        for (size_t i = 0; i < 3; i++) {
            const struct backend *o = backend_pool_get(p, i);
            assert_true((uint64_t)b->active * o->conf.weight <= (uint64_t)o->active * b->conf.weight);
        }
        backend_stream_start(b);
    }
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(backend_pool_get(p, i)->active, 100 * w[i]);
    /* Ending streams on b2 makes it the choice until it catches up. */
    for (int k = 0; k < 30; k++)
        backend_stream_end(backend_pool_get(p, 2), 10, 20);
    for (int k = 0; k < 10; k++) {
        struct backend *b = backend_pool_pick(p, 0, NULL, 0);
        assert_ptr_equal(b, backend_pool_get(p, 2));
        backend_stream_start(b);
    }
    /* exclusion */
    struct backend *ex[] = {backend_pool_get(p, 2), backend_pool_get(p, 1)};
    assert_ptr_equal(backend_pool_pick(p, 0, ex, 2), backend_pool_get(p, 0));
}

/* ---- circuit affinity ---------------------------------------------------------------------------- */

#define N_CIRC 2000

static void affinity_map(struct backend_pool *p, size_t *out)
{
    for (uint32_t c = 0; c < N_CIRC; c++) {
        struct backend *b = backend_pool_pick(p, c + 1000, NULL, 0);
        assert_non_null(b);
        out[c] = index_of(p, b);
    }
}

static void test_affinity_stable_and_minimal_moves(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 1, 1, 1, 1};
    struct backend_pool *p = fixture_pool(f, w, 5, BALANCE_CIRCUIT);
    static size_t first[N_CIRC], again[N_CIRC], down[N_CIRC], back[N_CIRC];
    affinity_map(p, first);
    affinity_map(p, again);
    assert_memory_equal(first, again, sizeof(first)); /* same circuit, same backend */
    unsigned counts[5] = {0};
    for (size_t c = 0; c < N_CIRC; c++)
        counts[first[c]]++;
    for (size_t i = 0; i < 5; i++) /* spread: each within 25% of its fair share of 400 */
        assert_in_range(counts[i], 300, 500);

    take_down(p, 2);
    affinity_map(p, down);
    size_t moved = 0;
    for (size_t c = 0; c < N_CIRC; c++) {
        assert_true(down[c] != 2);
        if (first[c] != 2)
            assert_int_equal(down[c], first[c]); /* only b2's circuits move */
        else
            moved++;
    }
    assert_int_equal(moved, counts[2]);

    bring_up(p, 2);
    affinity_map(p, back);
    assert_memory_equal(first, back, sizeof(first)); /* and they come back */

    /* A retry excludes the failed backend: the circuit gets its second choice, the same every time. */
    for (uint32_t c = 0; c < 50; c++) {
        struct backend *b = backend_pool_pick(p, c + 1000, NULL, 0);
        struct backend *ex[] = {b};
        struct backend *second = backend_pool_pick(p, c + 1000, ex, 1);
        assert_non_null(second);
        assert_ptr_not_equal(second, b);
        assert_ptr_equal(backend_pool_pick(p, c + 1000, ex, 1), second);
    }
}

static void test_affinity_weights_and_reorder(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 2, 3};
    struct backend_pool *p = fixture_pool(f, w, 3, BALANCE_CIRCUIT);
    static size_t before[N_CIRC];
    unsigned counts[3] = {0};
    affinity_map(p, before);
    for (size_t c = 0; c < N_CIRC; c++)
        counts[before[c]]++;
    for (size_t i = 0; i < 3; i++) { /* within 20% of the weighted share */
        unsigned share = N_CIRC * w[i] / 6;
        assert_in_range(counts[i], share * 8 / 10, share * 12 / 10);
    }
    /* Reordering the config keeps every circuit on its backend (the hash follows names). */
    struct backend_conf rev[3] = {f->bc[2], f->bc[0], f->bc[1]};
    struct port_conf port = f->port;
    port.backends = rev;
    char err[128];
    assert_int_equal(backend_pool_update(p, &port, err, sizeof(err)), 0);
    for (uint32_t c = 0; c < N_CIRC; c++) {
        struct backend *b = backend_pool_pick(p, c + 1000, NULL, 0);
        assert_string_equal(b->conf.name, f->bc[before[c]].name);
    }
    /* Circuit id 0 (unknown) falls back to weighted round robin. */
    unsigned rr[3] = {0};
    for (size_t k = 0; k < 60; k++)
        rr[atoi(backend_pool_pick(p, 0, NULL, 0)->conf.name + 1)]++;
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(rr[i], 10 * w[i]);
}

/* ---- drained ------------------------------------------------------------------------------------- */

static void test_drained(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {0, 1};
    for (enum balance_policy pol = BALANCE_ROUND_ROBIN; pol <= BALANCE_CIRCUIT; pol++) {
        struct backend_pool *p = fixture_pool(f, w, 2, pol);
        assert_int_equal(backend_pool_get(p, 0)->state, BACKEND_DRAINED);
        for (uint32_t k = 0; k < 50; k++)
            assert_ptr_equal(backend_pool_pick(p, k, NULL, 0), backend_pool_get(p, 1));
        /* Health results still tracked while drained; the state stays DRAINED. */
        for (int k = 0; k < 3; k++)
            backend_health_result(backend_pool_get(p, 0), CHECK_CONNECT_REFUSED, "");
        assert_false(backend_pool_get(p, 0)->healthy);
        assert_int_equal(backend_pool_get(p, 0)->state, BACKEND_DRAINED);
        take_down(p, 1);
        assert_false(backend_pool_is_up(p));
        assert_null(backend_pool_pick(p, 7, NULL, 0));
        backend_pool_free(p);
        f->pool = NULL;
    }
}

/* ---- rise/fall ----------------------------------------------------------------------------------- */

static void test_rise_fall_table(void **state)
{
    struct fixture *f = *state;
    /* o = ok, x = failed check, p = passive failure; expected state after each: U = up, D = down. */
    static const struct {
        unsigned rise, fall;
        const char *results;
        const char *states;
    } cases[] = {
        {2, 3, "xxx", "UUD"},
        {2, 3, "xxoxxx", "UUUUUD"},        /* an ok resets the failure run */
        {2, 3, "xxxoo", "UUDDU"},
        {2, 3, "xxxoxoo", "UUDDDDU"},      /* a failure resets the success run */
        {1, 1, "xoxo", "DUDU"},
        {3, 2, "xxooooo", "UDDDUUU"},
        {2, 3, "p", "D"},                  /* passive: at once */
        {2, 3, "poxoo", "DDDDU"},
        {2, 3, "popoo", "DDDDU"},          /* passive while rising resets the run */
        {2, 3, "ooxxoxxx", "UUUUUUUD"},
        {5, 5, "xxxxxooooo", "UUUUDDDDDU"},
    };
    const unsigned w[] = {1};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        port_init(&f->port, f->bc, w, 1, BALANCE_ROUND_ROBIN);
        f->port.health.rise = cases[c].rise;
        f->port.health.fall = cases[c].fall;
        f->pool = backend_pool_new(NULL, "web", &f->port);
        struct backend *b = backend_pool_get(f->pool, 0);
        unsigned ok = 0, failed = 0, passive = 0;
        for (size_t k = 0; cases[c].results[k]; k++) {
            char r = cases[c].results[k];
            if (r == 'o') {
                backend_health_result(b, CHECK_OK, "");
                ok++;
            } else if (r == 'x') {
                backend_health_result(b, CHECK_CONNECT_TIMEOUT, "");
                failed++;
            } else {
                backend_passive_failure(b, CHECK_CONNECT_REFUSED, "Connection refused");
                passive++;
            }
            enum backend_state want = cases[c].states[k] == 'U' ? BACKEND_UP : BACKEND_DOWN;
            if (b->state != want)
                fail_msg("case %zu (%s) step %zu: state %s, want %s", c, cases[c].results, k,
                         backend_state_str(b->state), backend_state_str(want));
        }
        assert_int_equal(b->checks_ok, ok);
        assert_int_equal(b->checks_failed, failed);
        assert_int_equal(b->failed_connects, passive);
        backend_pool_free(f->pool);
        f->pool = NULL;
    }
}

/* Run `fn` with stderr going to a temporary file; return what was written (malloc'd). */
static char *capture_stderr(void (*fn)(struct backend_pool *), struct backend_pool *p)
{
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    fn(p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long n = ftell(tmp);
    fseek(tmp, 0, SEEK_END);
    n = ftell(tmp);
    rewind(tmp);
    char *buf = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, tmp), (size_t)n);
    fclose(tmp);
    return buf;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle))
        n++;
    return n;
}

static void flap(struct backend_pool *p)
{
    struct backend *b = backend_pool_get(p, 0);
    for (int k = 0; k < 6; k++)
        backend_health_result(b, CHECK_CONNECT_TIMEOUT, "");
    for (int k = 0; k < 4; k++)
        backend_health_result(b, CHECK_OK, "");
    backend_passive_failure(b, CHECK_CONNECT_REFUSED, "Connection refused");
    backend_passive_failure(b, CHECK_CONNECT_REFUSED, "Connection refused");
    backend_health_result(b, CHECK_HTTP_STATUS, "HTTP 503");
}

static void test_state_changes_logged_once(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 1};
    struct backend_pool *p = fixture_pool(f, w, 2, BALANCE_ROUND_ROBIN);
    char *out = capture_stderr(flap, p);
    assert_int_equal(count(out, "backend b0: up -> down (connect timeout, 3/3)"), 1);
    assert_int_equal(count(out, "backend b0: down -> up (ok, 2/2)"), 1);
    assert_int_equal(count(out, "backend b0: up -> down (connect refused: Connection refused, passive)"), 1);
    assert_int_equal(count(out, " -> "), 3);
    assert_int_equal(count(out, "[info]"), 3);
    assert_null(strstr(out, "[warn]"));
    free(out);
    assert_int_equal(backend_pool_get(p, 0)->last_result, CHECK_HTTP_STATUS);
    assert_string_equal(backend_pool_get(p, 0)->last_detail, "HTTP 503");
    assert_true(backend_pool_get(p, 0)->last_change > 0);
    assert_int_equal(backend_pool_get(p, 1)->last_change, 0);
}

static void test_passive_with_health_none(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 1};
    port_init(&f->port, f->bc, w, 2, BALANCE_ROUND_ROBIN);
    f->port.health.type = HEALTH_NONE;
    f->pool = backend_pool_new(NULL, "web", &f->port);
    struct backend *b = backend_pool_get(f->pool, 0);
    /* No active checks could bring it back: counted, not ejected. */
    backend_passive_failure(b, CHECK_CONNECT_REFUSED, "");
    assert_int_equal(b->state, BACKEND_UP);
    assert_int_equal(b->failed_connects, 1);

    /* Turning checks on keeps states; turning them off makes a down backend up again. */
    char err[128];
    f->port.health.type = HEALTH_TCP;
    assert_int_equal(backend_pool_update(f->pool, &f->port, err, sizeof(err)), 0);
    backend_passive_failure(b, CHECK_CONNECT_REFUSED, "");
    assert_int_equal(b->state, BACKEND_DOWN);
    f->port.health.type = HEALTH_NONE;
    assert_int_equal(backend_pool_update(f->pool, &f->port, err, sizeof(err)), 0);
    assert_int_equal(b->state, BACKEND_UP);
}

/* ---- reload -------------------------------------------------------------------------------------- */

struct detach_log {
    char names[MAXB][CONFIG_BACKEND_NAME_MAX + 1];
    size_t n;
};

static void detach_cb(struct backend *b, void *arg)
{
    struct detach_log *d = arg;
    snprintf(d->names[d->n++], sizeof(d->names[0]), "%s", b->conf.name);
    b->check_state = NULL;
}

static void test_update_by_name(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 1, 1};
    struct backend_pool *p = fixture_pool(f, w, 3, BALANCE_ROUND_ROBIN);
    struct detach_log d = {0};
    int marker;
    backend_pool_set_detach_cb(p, detach_cb, &d);
    for (size_t i = 0; i < 3; i++)
        backend_pool_get(p, i)->check_state = &marker; /* as health.c would */

    struct backend *b1 = backend_pool_get(p, 1);
    backend_stream_start(b1);
    backend_stream_end(b1, 100, 200);
    take_down(p, 1);
    backend_health_result(b1, CHECK_OK, ""); /* rising: 1 of 2 */

    /* new config: b2 (weight 4), b1 (new address), b3 (new); b0 removed */
    struct backend_conf next[3] = {f->bc[2], f->bc[1], f->bc[0]};
    next[0].weight = 4;
    next[1].addr.port = 9001;
    snprintf(next[1].addr.text, sizeof(next[1].addr.text), "127.0.0.1:9001");
    snprintf(next[2].name, sizeof(next[2].name), "b3");
    struct port_conf port = f->port;
    port.backends = next;
    port.balance = BALANCE_LEAST_CONN;
    char err[128];
    assert_int_equal(backend_pool_update(p, &port, err, sizeof(err)), 0);

    assert_int_equal(backend_pool_count(p), 3);
    assert_string_equal(backend_pool_get(p, 0)->conf.name, "b2");
    assert_int_equal(backend_pool_get(p, 0)->conf.weight, 4);
    assert_ptr_equal(backend_pool_get(p, 1), b1); /* the same object, counters and state kept */
    assert_int_equal(b1->total_streams, 1);
    assert_int_equal(b1->bytes_in, 100);
    assert_int_equal(b1->bytes_out, 200);
    assert_int_equal(b1->failed_connects, 1);
    assert_int_equal(b1->state, BACKEND_DOWN);
    assert_int_equal(b1->conf.addr.port, 9001);
    assert_int_equal(b1->rise_count, 0); /* new address: the run so far was about another server */
    assert_string_equal(backend_pool_get(p, 2)->conf.name, "b3");
    assert_int_equal(backend_pool_get(p, 2)->state, BACKEND_UP);
    assert_null(backend_pool_get(p, 2)->check_state);
    assert_int_equal(backend_pool_port(p)->balance, BALANCE_LEAST_CONN);
    assert_int_equal(d.n, 1);
    assert_string_equal(d.names[0], "b0");
    /* the pool's copy does not point into the caller's config */
    assert_ptr_not_equal(backend_pool_port(p)->backends, next);

    /* weight 0 drains, and back */
    next[0].weight = 0;
    assert_int_equal(backend_pool_update(p, &port, err, sizeof(err)), 0);
    assert_int_equal(backend_pool_get(p, 0)->state, BACKEND_DRAINED);
    next[0].weight = 2;
    assert_int_equal(backend_pool_update(p, &port, err, sizeof(err)), 0);
    assert_int_equal(backend_pool_get(p, 0)->state, BACKEND_UP);
}

static void test_update_refuses_bad_config(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 2};
    struct backend_pool *p = fixture_pool(f, w, 2, BALANCE_ROUND_ROBIN);
    struct backend_conf dup[2] = {f->bc[0], f->bc[0]};
    struct port_conf port = f->port;
    port.backends = dup;
    char err[128] = "";
    assert_int_equal(backend_pool_update(p, &port, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "b0"));
    port.n_backends = 0;
    assert_int_equal(backend_pool_update(p, &port, err, sizeof(err)), -1);
    assert_int_equal(backend_pool_count(p), 2); /* unchanged */
    assert_int_equal(backend_pool_get(p, 1)->conf.weight, 2);
}

static void test_removed_backend_lives_until_last_stream(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 1};
    struct backend_pool *p = fixture_pool(f, w, 2, BALANCE_ROUND_ROBIN);
    struct backend *b0 = backend_pool_get(p, 0);
    backend_stream_start(b0);
    backend_stream_start(b0);
    struct port_conf port = f->port;
    port.backends = &f->bc[1];
    port.n_backends = 1;
    char err[128];
    assert_int_equal(backend_pool_update(p, &port, err, sizeof(err)), 0);
    assert_int_equal(backend_pool_count(p), 1);
    /* Still valid (ASan would say otherwise): the data path ends its streams. */
    assert_true(b0->removed);
    for (int k = 0; k < 10; k++)
        assert_ptr_equal(backend_pool_pick(p, 0, NULL, 0), backend_pool_get(p, 0));
    backend_passive_failure(b0, CHECK_RESET, ""); /* a failure on a removed backend is only counted */
    assert_int_equal(b0->failed_connects, 1);
    backend_stream_end(b0, 1, 1);
    assert_int_equal(b0->active, 1);

    /* Re-added while draining: the same backend comes back with its counters. */
    assert_int_equal(backend_pool_update(p, &f->port, err, sizeof(err)), 0);
    assert_ptr_equal(backend_pool_get(p, 0), b0);
    assert_false(b0->removed);
    assert_int_equal(b0->total_streams, 2);

    /* Removed again; the last end frees it (ASan reports a leak otherwise, or a use after free if the
     * pool still touched it). */
    assert_int_equal(backend_pool_update(p, &port, err, sizeof(err)), 0);
    backend_stream_end(b0, 1, 1);
    assert_int_equal(backend_pool_count(p), 1);

    /* A removed backend with streams at pool free is freed with the pool. */
    struct backend *b1 = backend_pool_get(p, 0);
    backend_stream_start(b1);
    assert_int_equal(backend_pool_update(p, &f->port, err, sizeof(err)), 0);
    port.backends = &f->bc[0];
    assert_int_equal(backend_pool_update(p, &port, err, sizeof(err)), 0);
    assert_true(b1->removed);
}

/* ---- JSON and metrics ---------------------------------------------------------------------------- */

static void test_json(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {2, 0};
    struct backend_pool *p = fixture_pool(f, w, 2, BALANCE_CIRCUIT);
    struct backend *b0 = backend_pool_get(p, 0);
    backend_stream_start(b0);
    backend_stream_start(b0);
    backend_stream_end(b0, 5, 7);
    backend_health_result(b0, CHECK_HTTP_STATUS, "HTTP 503");
    json_t *j = backend_pool_to_json(p);
    assert_non_null(j);
    const char *service, *balance, *health;
    int vport, up;
    json_t *backends;
    json_error_t jerr;
    assert_int_equal(json_unpack_ex(j, &jerr, JSON_STRICT, "{s:s, s:i, s:s, s:s, s:b, s:o}", "service", &service,
                                    "virtual_port", &vport, "balance", &balance, "health", &health, "up", &up,
                                    "backends", &backends),
                     0);
    assert_string_equal(service, "web");
    assert_int_equal(vport, 80);
    assert_string_equal(balance, "circuit");
    assert_string_equal(health, "tcp");
    assert_true(up);
    assert_int_equal(json_array_size(backends), 2);
    const char *name, *addr, *st, *last, *detail;
    json_int_t weight, active, total, failed, bin, bout, cok, cfail;
    json_t *last_check, *last_change;
    assert_int_equal(json_unpack_ex(json_array_get(backends, 0), &jerr, JSON_STRICT,
                                    "{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:o, s:o}",
                                    "name", &name, "address", &addr, "state", &st, "weight", &weight, "active",
                                    &active, "total_streams", &total, "failed_connects", &failed, "bytes_in", &bin,
                                    "bytes_out", &bout, "checks_ok", &cok, "checks_failed", &cfail, "last_result",
                                    &last, "last_detail", &detail, "last_check", &last_check, "last_change",
                                    &last_change),
                     0);
    assert_string_equal(name, "b0");
    assert_string_equal(addr, "127.0.0.1:8000");
    assert_string_equal(st, "up");
    assert_int_equal(weight, 2);
    assert_int_equal(active, 1);
    assert_int_equal(total, 2);
    assert_int_equal(bin, 5);
    assert_int_equal(bout, 7);
    assert_int_equal(cfail, 1);
    assert_int_equal(cok, 0);
    assert_string_equal(last, "http status");
    assert_string_equal(detail, "HTTP 503");
    assert_true(json_is_integer(last_check));
    assert_true(json_is_null(last_change));
    json_t *b1 = json_array_get(backends, 1);
    assert_string_equal(json_string_value(json_object_get(b1, "state")), "drained");
    assert_true(json_is_null(json_object_get(b1, "last_result")));
    json_decref(j);
}

static void test_metrics_families_once(void **state)
{
    struct fixture *f = *state;
    const unsigned w[] = {1, 1};
    struct backend_pool *p = fixture_pool(f, w, 2, BALANCE_ROUND_ROBIN);
    struct port_conf port2;
    struct backend_conf bc2[1];
    const unsigned w2[] = {3};
    port_init(&port2, bc2, w2, 1, BALANCE_ROUND_ROBIN);
    port2.virtual_port = 443;
    snprintf(bc2[0].name, sizeof(bc2[0].name), "we\"ird");
    struct backend_pool *p2 = backend_pool_new(NULL, "shop", &port2);
    assert_non_null(p2);
    backend_stream_start(backend_pool_get(p, 1));
    backend_stream_end(backend_pool_get(p, 1), 11, 22);
    take_down(p, 0);
    backend_health_result(backend_pool_get(p, 0), CHECK_OK, "");

    struct metrics *m = metrics_new();
    struct backend_pool *pools[] = {p, p2};
    assert_int_equal(backend_pool_metrics(pools, 2, m), 0);
    const char *text = metrics_text(m, NULL);
    static const char *const families[] = {
        "onionfront_backend_up", "onionfront_backend_active_streams", "onionfront_backend_streams_total",
        "onionfront_backend_connect_failures_total", "onionfront_backend_bytes_total",
        "onionfront_backend_checks_total",
    };
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        char type[128];
        snprintf(type, sizeof(type), "# TYPE %s ", families[i]);
        assert_int_equal(count(text, type), 1);
    }
    assert_non_null(strstr(text, "onionfront_backend_up{service=\"web\",port=\"80\",backend=\"b0\"} 0\n"));
    assert_non_null(strstr(text, "onionfront_backend_up{service=\"web\",port=\"80\",backend=\"b1\"} 1\n"));
    assert_non_null(strstr(text, "onionfront_backend_up{service=\"shop\",port=\"443\",backend=\"we\\\"ird\"} 1\n"));
    assert_non_null(strstr(text, "onionfront_backend_bytes_total{service=\"web\",port=\"80\",backend=\"b1\","
                                 "direction=\"in\"} 11\n"));
    assert_non_null(strstr(text, "onionfront_backend_bytes_total{service=\"web\",port=\"80\",backend=\"b1\","
                                 "direction=\"out\"} 22\n"));
    assert_non_null(strstr(text, "onionfront_backend_checks_total{service=\"web\",port=\"80\",backend=\"b0\","
                                 "result=\"ok\"} 1\n"));
    assert_non_null(strstr(text, "onionfront_backend_connect_failures_total{service=\"web\",port=\"80\","
                                 "backend=\"b0\"} 1\n"));
    assert_non_null(strstr(text, "onionfront_backend_streams_total{service=\"web\",port=\"80\",backend=\"b1\"} 1\n"));
    /* a second call on the same writer would repeat the families: refused */
    assert_int_equal(backend_pool_metrics(pools, 2, m), -1);
    metrics_free(m);
    backend_pool_free(p2);
}

static void test_stringers(void **state)
{
    (void)state;
    assert_string_equal(backend_state_str(BACKEND_DRAINED), "drained");
    assert_string_equal(backend_state_str((enum backend_state)9), "unknown");
    backend_pool_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_robin_weights, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_robin_interleaves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_robin_skips_unusable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_least_conn_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_least_conn_fair_ties, setup, teardown),
        cmocka_unit_test_setup_teardown(test_least_conn_tracks_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_affinity_stable_and_minimal_moves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_affinity_weights_and_reorder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drained, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rise_fall_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_changes_logged_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_passive_with_health_none, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_refuses_bad_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removed_backend_lives_until_last_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_families_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stringers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
