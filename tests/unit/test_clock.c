/* test_clock.c — the millisecond clock is CLOCK_MONOTONIC in milliseconds, and the timevals for libevent
 * say what they are given. Order only: no reading is expected inside a window of time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <time.h>

#include "sidecar/core/clock.h"

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void test_clock_advances_with_sleep(void **state)
{
    (void)state;
    uint64_t before = mono_ms();
    uint64_t t0 = clock_now_ms();
    struct timespec d = {0, 50 * 1000 * 1000};
    nanosleep(&d, NULL);
    uint64_t t1 = clock_now_ms();
    uint64_t after = mono_ms();
    assert_true(t1 >= t0 + 50); /* never less than what was slept */
    /* CLOCK_MONOTONIC in milliseconds: each reading lies between readings of it taken around it */
    assert_true(before <= t0 && t1 <= after);
}

static void test_timevals(void **state)
{
    (void)state;
    struct timeval tv = clock_tv_ms(1234);
    assert_int_equal(tv.tv_sec, 1);
    assert_int_equal(tv.tv_usec, 234000);
    tv = clock_until(0); /* long past */
    assert_int_equal(tv.tv_sec, 0);
    assert_int_equal(tv.tv_usec, 0);
    /* a deadline ahead: what is left, never more than asked */
    uint64_t now = clock_now_ms();
    tv = clock_until(now + 5000);
    uint64_t left = (uint64_t)tv.tv_sec * 1000u + (uint64_t)tv.tv_usec / 1000u;
    assert_true(left <= 5000 && left + (clock_now_ms() - now) >= 5000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_clock_advances_with_sleep),
                                       cmocka_unit_test(test_timevals)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
