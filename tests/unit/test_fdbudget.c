/* test_fdbudget.c — unit tests for sidecar/core/fdbudget.c: the stream cap derived from the descriptor limit
 * (table; every listener's share, onion_location.listen's included, is left out of it), raising the soft limit to the hard one, and the reserve of spare descriptors: given back
 * when the process is out of descriptors, refilled once descriptors are free. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sidecar/core/fdbudget.h"
#include "sidecar/ops/metrics_http.h"
#include "sidecar/ops/onionloc.h"
#include "sidecar/ops/status.h"

static void test_stream_cap_table(void **state)
{
    (void)state;
    /* onion_location.listen has a share of its own beside the metrics endpoint's */
    const rlim_t others = FDBUDGET_RESERVE + METRICS_HTTP_MAX_CLIENTS + ONIONLOC_HTTP_MAX_CLIENTS + STATUS_MAX_CLIENTS;
    const struct {
        unsigned configured;
        rlim_t nofile;
        unsigned want;
    } cases[] = {
        {0, 1024, (unsigned)((1024 - others) / 2)}, /* a typical default limit */
        {0, 1048576, FDBUDGET_STREAMS_AUTO_MAX},    /* a large limit: bounded by memory, not descriptors */
        {0, 200, FDBUDGET_STREAMS_MIN},             /* a tiny limit: still some streams */
        {0, others, FDBUDGET_STREAMS_MIN},
        {0, RLIM_INFINITY, FDBUDGET_STREAMS_AUTO_MAX},
        {5000, 1024, 5000},                         /* the operator's value is taken as given */
        {1, 1048576, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (fdbudget_stream_cap_for(cases[i].configured, cases[i].nofile) != cases[i].want)
            fail_msg("case %zu: configured %u nofile %llu: got %u, want %u", i, cases[i].configured,
                     (unsigned long long)cases[i].nofile,
                     fdbudget_stream_cap_for(cases[i].configured, cases[i].nofile), cases[i].want);
    /* The budget holds: streams (2 descriptors each) plus the other shares fit under the limit. */
    for (rlim_t n = others + 2 * FDBUDGET_STREAMS_MIN; n < 8192; n += 97)
        assert_true(2 * (rlim_t)fdbudget_stream_cap_for(0, n) + others <= n);
}

static void test_raise_limit(void **state)
{
    (void)state;
    struct rlimit old, now;
    char err[256];
    rlim_t before, after;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    if (old.rlim_max < 128)
        skip();
    struct rlimit low = {64, old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    assert_int_equal(fdbudget_raise_limit(&before, &after, err, sizeof(err)), 0);
    assert_int_equal(before, 64);
    assert_int_equal(after, old.rlim_max);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &now), 0);
    assert_int_equal(now.rlim_cur, old.rlim_max);
    /* Already at the hard limit: nothing to do. */
    assert_int_equal(fdbudget_raise_limit(&before, &after, err, sizeof(err)), 0);
    assert_int_equal(before, after);
    setrlimit(RLIMIT_NOFILE, &old);
}

static void test_reserve(void **state)
{
    (void)state;
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    struct fd_reserve r;
    assert_int_equal(fd_reserve_init(&r, 2), 0);
    assert_int_equal(r.held, 2);
    /* Run out of descriptors. */
    int probe = open("/dev/null", O_RDONLY);
    assert_true(probe >= 0);
    close(probe);
    struct rlimit low = {(rlim_t)probe + 32, old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fds[64], n = 0;
    while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
        n++;
    assert_true(n < 64);
    assert_int_equal(errno, EMFILE);
    /* A released descriptor is there for the next open; the reserve cannot refill while none is free. */
    assert_true(fd_reserve_release(&r));
    int got = open("/dev/null", O_RDONLY);
    assert_true(got >= 0);
    assert_int_equal(fd_reserve_refill(&r), -1);
    assert_int_equal(r.held, 1);
    close(got);
    assert_int_equal(fd_reserve_refill(&r), 0);
    assert_int_equal(r.held, 2);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    setrlimit(RLIMIT_NOFILE, &old);
    fd_reserve_close(&r);
    assert_int_equal(r.held, 0);
    assert_false(fd_reserve_release(&r));
    /* At most FD_RESERVE_MAX. */
    assert_int_equal(fd_reserve_init(&r, FD_RESERVE_MAX + 5), 0);
    assert_int_equal(r.held, FD_RESERVE_MAX);
    fd_reserve_close(&r);
}

static void test_is_exhaustion(void **state)
{
    (void)state;
    assert_true(fdbudget_is_exhaustion(EMFILE));
    assert_true(fdbudget_is_exhaustion(ENFILE));
    assert_true(fdbudget_is_exhaustion(ENOBUFS));
    assert_false(fdbudget_is_exhaustion(ECONNABORTED));
    assert_false(fdbudget_is_exhaustion(EAGAIN));
}

/* Pipes only from what the budget leaves: 4 descriptors per spliced stream, never more streams than
 * the cap, none when nothing is left. */
static void test_splice_cap(void **state)
{
    (void)state;
    const rlim_t others = FDBUDGET_RESERVE + METRICS_HTTP_MAX_CLIENTS + ONIONLOC_HTTP_MAX_CLIENTS + STATUS_MAX_CLIENTS;
    assert_int_equal(fdbudget_splice_cap_for(1024, 1048576), 1024);
    assert_int_equal(fdbudget_splice_cap_for(100, others + 200 + 40), 10);
    assert_int_equal(fdbudget_splice_cap_for(100, others + 200 + 3), 0);
    assert_int_equal(fdbudget_splice_cap_for(100, others), 0);
    assert_int_equal(fdbudget_splice_cap_for(fdbudget_stream_cap_for(0, 1024), 1024), 0); /* auto at 1024 */
    for (rlim_t n = 64; n < 20000; n += 97) {
        unsigned streams = fdbudget_stream_cap_for(0, n);
        unsigned spliced = fdbudget_splice_cap_for(streams, n);
        assert_true(spliced <= streams);
        assert_true(spliced == 0 || 2 * (rlim_t)streams + FDBUDGET_PIPE_FDS * (rlim_t)spliced + others <= n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_cap_table),
        cmocka_unit_test(test_raise_limit),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_is_exhaustion),
        cmocka_unit_test(test_splice_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
