/* test_pace.c — spreading a periodic check over many services (pace.h) with a fake clock: the gap that
 * spreads N over the interval, the bound on checks in flight, the most overdue first, and a simulated
 * interval of 50 services that all become due in the same second. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sidecar/core/pace.h"

static void test_gap(void **state)
{
    (void)state;
    assert_true(pace_gap(60, 0, 2) == 0);
    assert_true(pace_gap(60, 1, 2) == 2);    /* capped: one service is not held back */
    assert_true(pace_gap(60, 50, 2) == 1.2); /* fifty spread over the minute */
    assert_true(pace_gap(60, 600, 2) == 0.1);
    assert_true(pace_gap(0, 5, 2) == 0);
}

static void test_pick_rules(void **state)
{
    (void)state;
    struct pace p;
    pace_init(&p, 2);
    double due[] = {-1, 30, 10, 10, 50};
    assert_int_equal(pace_pick(&p, due, 5, 0, 1, 5), 5);  /* nothing due yet */
    assert_int_equal(pace_pick(&p, due, 5, 0, 1, 10), 2); /* the first of two equally overdue */
    assert_int_equal(pace_pick(&p, due, 5, 0, 1, 40), 2); /* the most overdue, not the first listed */
    pace_started(&p, 40);
    assert_int_equal(pace_pick(&p, due, 5, 1, 1, 40.5), 5); /* within the gap */
    assert_int_equal(pace_pick(&p, due, 5, 1, 1, 41), 2);
    assert_int_equal(pace_pick(&p, due, 5, 2, 1, 100), 5); /* two in flight: the bound */
    assert_int_equal(pace_pick(&p, due, 0, 0, 1, 100), 0);  /* no services */
    struct pace one;
    pace_init(&one, 0); /* at least one may run */
    assert_int_equal(pace_pick(&one, due, 5, 0, 0, 100), 2);
    assert_int_equal(pace_pick(&one, due, 5, 1, 0, 100), 5);
}

/* Fifty services all due at t=0, each check taking 3 s, interval 60 s, at most 4 in flight: the starts
 * are spread (never two within the gap, never more than 4 at once) and every service is checked once
 * within the interval. */
static void test_fifty_due_at_once(void **state)
{
    (void)state;
    enum { N = 50 };
    const double interval = 60, took = 3;
    double due[N], ends[N], started[N];
    struct pace p;
    pace_init(&p, 4);
    for (int i = 0; i < N; i++) {
        due[i] = 0;
        ends[i] = -1;
        started[i] = -1;
    }
    double gap = pace_gap(interval, N, 2);
    size_t max_running = 0, in_flight = 0;
    double prev = -1;
    for (double now = 0; now < interval; now += 0.1) {
        for (int i = 0; i < N; i++)
            if (ends[i] >= 0 && now >= ends[i]) { /* a check ends: due again an interval after its start */
                ends[i] = -1;
                in_flight--;
                due[i] = started[i] + interval;
            }
        size_t k;
        while ((k = pace_pick(&p, due, N, in_flight, gap, now)) < N) {
            assert_true(prev < 0 || now - prev >= gap - 1e-9);
            prev = now;
            pace_started(&p, now);
            started[k] = now;
            due[k] = -1; /* in flight */
            ends[k] = now + took;
            in_flight++;
        }
        if (in_flight > max_running)
            max_running = in_flight;
    }
    assert_true(max_running <= 4);
    for (int i = 0; i < N; i++) {
        assert_true(started[i] >= 0);    /* each checked once in the interval */
        assert_true(started[i] < interval);
    }
    assert_true(started[N - 1] > 50); /* spread: the last one well after the first */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gap),
        cmocka_unit_test(test_pick_rules),
        cmocka_unit_test(test_fifty_due_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
