/* test_fdbudget.c — unit tests for sidecar/core/fdbudget.c: the stream cap derived from the descriptor limit
 * (table; every listener's share, onion_location.listen's included, is left out of it, and so are the
 * config's service-port listeners and health checks, with a config of 500 services among them), a config
 * whose listeners and checks leave no room for the fewest streams refused with the numbers, raising the
 * soft limit to the hard one, and the reserve of spare descriptors: given back when the process is out of
 * descriptors, refilled once descriptors are free. */
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

/* onion_location.listen has a share of its own beside the metrics endpoint's */
#define OTHERS ((rlim_t)FDBUDGET_RESERVE + METRICS_HTTP_MAX_CLIENTS + ONIONLOC_HTTP_MAX_CLIENTS + STATUS_MAX_CLIENTS)
static const struct fdbudget_held none = {0, 0};

static void test_stream_cap_table(void **state)
{
    (void)state;
    const rlim_t others = OTHERS;
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
        if (fdbudget_stream_cap_for(cases[i].configured, cases[i].nofile, none) != cases[i].want)
            fail_msg("case %zu: configured %u nofile %llu: got %u, want %u", i, cases[i].configured,
                     (unsigned long long)cases[i].nofile,
                     fdbudget_stream_cap_for(cases[i].configured, cases[i].nofile, none), cases[i].want);
    /* The budget holds: streams (2 descriptors each) plus the other shares fit under the limit. */
    for (rlim_t n = others + 2 * FDBUDGET_STREAMS_MIN; n < 8192; n += 97)
        assert_true(2 * (rlim_t)fdbudget_stream_cap_for(0, n, none) + others <= n);
}

/* The listeners of the services' ports and their health checks come off the limit before the streams:
 * 500 services with 2 ports of 2 checked backends each hold 1000 listeners and 2000 checks, which under
 * 4096 leave (4096 - 3000 - the others) / 2 streams; 1000 listeners not counted would be 500 streams
 * too many. */
static void test_stream_cap_held(void **state)
{
    (void)state;
    const struct fdbudget_held many = {1000, 2000}, listeners = {1000, 0}, checks = {0, 2000};
    assert_int_equal(fdbudget_stream_cap_for(0, 4096, many), (unsigned)((4096 - 3000 - OTHERS) / 2));
    assert_int_equal(fdbudget_stream_cap_for(0, 2000, listeners), (unsigned)((2000 - 1000 - OTHERS) / 2));
    assert_int_equal(fdbudget_stream_cap_for(0, 3000, checks), (unsigned)((3000 - 2000 - OTHERS) / 2));
    assert_int_equal(fdbudget_stream_cap_for(0, 2000, none) - fdbudget_stream_cap_for(0, 2000, listeners), 500);
    /* at the floor however many, and an explicit value stays as given */
    assert_int_equal(fdbudget_stream_cap_for(0, 1024, many), FDBUDGET_STREAMS_MIN);
    assert_int_equal(fdbudget_stream_cap_for(5000, 1024, many), 5000);
    /* the budget holds with them too, pipes included */
    for (rlim_t n = OTHERS + 3000 + 2 * FDBUDGET_STREAMS_MIN; n < 20000; n += 97) {
        unsigned streams = fdbudget_stream_cap_for(0, n, many);
        unsigned spliced = fdbudget_splice_cap_for(streams, n, many);
        assert_true(OTHERS + 3000 + 2 * (rlim_t)streams + FDBUDGET_PIPE_FDS * (rlim_t)spliced <= n);
    }
    /* the pipes, too, come only from what the listeners leave */
    assert_int_equal(fdbudget_splice_cap_for(100, OTHERS + 200 + 40, none), 10);
    assert_int_equal(fdbudget_splice_cap_for(100, OTHERS + 200 + 40, (struct fdbudget_held){40, 0}), 0);
}

/* A config fits while its listeners and checks leave room for the fewest streams under the hard limit;
 * one descriptor less and it is refused, naming every number. */
static void test_check_held(void **state)
{
    (void)state;
    const struct fdbudget_held many = {1000, 2000};
    const rlim_t need = OTHERS + 3000 + 2 * FDBUDGET_STREAMS_MIN;
    char err[600], want[600];
    assert_int_equal(fdbudget_check_held(many, need, err, sizeof(err)), 0);
    assert_int_equal(fdbudget_check_held(many, RLIM_INFINITY, err, sizeof(err)), 0);
    assert_int_equal(fdbudget_check_held(none, OTHERS + 2 * FDBUDGET_STREAMS_MIN, err, sizeof(err)), 0);
    assert_int_equal(fdbudget_check_held(many, need - 1, err, sizeof(err)), -1);
    snprintf(want, sizeof(want),
             "the config needs %llu file descriptors but RLIMIT_NOFILE's hard limit is %llu: 1000 listening "
             "sockets (one per service port) and 2000 health checks (one per backend of a port with checks), "
             "besides %llu for onionfront's other peers and %d for the fewest streams (%d); raise the limit "
             "(systemd: LimitNOFILE=) or configure fewer ports or backends",
             (unsigned long long)need, (unsigned long long)need - 1, (unsigned long long)OTHERS,
             2 * FDBUDGET_STREAMS_MIN, FDBUDGET_STREAMS_MIN);
    assert_string_equal(err, want);
    /* the usual soft limit of a shell, 1024, takes up to 576 of them */
    assert_int_equal(fdbudget_check_held((struct fdbudget_held){500, 76}, 1024, err, sizeof(err)), 0);
    assert_int_equal(fdbudget_check_held((struct fdbudget_held){500, 77}, 1024, err, sizeof(err)), -1);
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
    assert_int_equal(fdbudget_hard_limit(), old.rlim_max);
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
    const rlim_t others = OTHERS;
    assert_int_equal(fdbudget_splice_cap_for(1024, 1048576, none), 1024);
    assert_int_equal(fdbudget_splice_cap_for(100, others + 200 + 40, none), 10);
    assert_int_equal(fdbudget_splice_cap_for(100, others + 200 + 3, none), 0);
    assert_int_equal(fdbudget_splice_cap_for(100, others, none), 0);
    assert_int_equal(fdbudget_splice_cap_for(fdbudget_stream_cap_for(0, 1024, none), 1024, none), 0); /* auto at 1024 */
    for (rlim_t n = 64; n < 20000; n += 97) {
        unsigned streams = fdbudget_stream_cap_for(0, n, none);
        unsigned spliced = fdbudget_splice_cap_for(streams, n, none);
        assert_true(spliced <= streams);
        assert_true(spliced == 0 || 2 * (rlim_t)streams + FDBUDGET_PIPE_FDS * (rlim_t)spliced + others <= n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_cap_table),
        cmocka_unit_test(test_stream_cap_held),
        cmocka_unit_test(test_check_held),
        cmocka_unit_test(test_raise_limit),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_is_exhaustion),
        cmocka_unit_test(test_splice_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
