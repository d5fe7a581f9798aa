/* test_clock.c — the monotonic millisecond clock moves forward by about the time slept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <time.h>

#include "sidecar/clock.h"

static void test_clock_advances_with_sleep(void **state)
{
    (void)state;
    uint64_t t0 = clock_now_ms();
    struct timespec d = {0, 50 * 1000 * 1000};
    nanosleep(&d, NULL);
    uint64_t t1 = clock_now_ms();
    assert_true(t1 >= t0 + 50);     /* never less than what was slept */
    assert_true(t1 - t0 < 60000);   /* and in milliseconds, not a finer unit */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_clock_advances_with_sleep)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
