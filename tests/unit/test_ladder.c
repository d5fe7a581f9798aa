/* test_ladder.c — the end-to-end verdict and the repair ladder (ladder.h) with a fake clock: the verdict
 * from the window, the steps in order (re-post, restart tor, alert) one per failed probe while down, each
 * taken once per outage, the times they were taken, the reset on a good probe, and new settings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sidecar/ladder.h"

static void test_verdict_from_window(void **state)
{
    (void)state;
    struct ladder l;
    ladder_init(&l, 3, 2);
    assert_int_equal(l.state, LADDER_UNKNOWN);
    assert_int_equal(ladder_feed(&l, true, 1), LADDER_STEP_NONE);
    assert_int_equal(l.state, LADDER_REACHABLE);
    assert_int_equal(ladder_feed(&l, false, 2), LADDER_STEP_NONE); /* one failure: not down_after yet */
    assert_int_equal(l.state, LADDER_DEGRADED);
    assert_int_equal(ladder_failures(&l), 1);
    assert_int_equal(ladder_feed(&l, true, 3), LADDER_STEP_NONE);
    assert_int_equal(l.state, LADDER_DEGRADED); /* the failure is still in the window of 3 */
    ladder_feed(&l, true, 4);
    ladder_feed(&l, true, 5);
    assert_int_equal(l.state, LADDER_REACHABLE); /* it left the window */
    assert_int_equal(ladder_failures(&l), 0);
}

static void test_steps_in_order_once(void **state)
{
    (void)state;
    struct ladder l;
    ladder_init(&l, 5, 2);
    ladder_feed(&l, true, 10);
    assert_int_equal(ladder_feed(&l, false, 20), LADDER_STEP_NONE);
    assert_int_equal(ladder_feed(&l, false, 30), LADDER_STEP_REPOST); /* down: the first step */
    assert_int_equal(l.state, LADDER_DOWN);
    assert_true(l.down_since == 30);
    assert_int_equal(ladder_feed(&l, false, 40), LADDER_STEP_RESTART_TOR);
    assert_int_equal(ladder_feed(&l, false, 50), LADDER_STEP_ALERT);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ladder_feed(&l, false, 60 + i), LADDER_STEP_NONE); /* alerting goes on; no step again */
    assert_int_equal(l.step, LADDER_STEP_ALERT);
    assert_true(l.tried_at[LADDER_STEP_REPOST] == 30);
    assert_true(l.tried_at[LADDER_STEP_RESTART_TOR] == 40);
    assert_true(l.tried_at[LADDER_STEP_ALERT] == 50);
}

static void test_good_probe_resets(void **state)
{
    (void)state;
    struct ladder l;
    ladder_init(&l, 3, 1);
    assert_int_equal(ladder_feed(&l, false, 1), LADDER_STEP_REPOST); /* down_after 1: down at once */
    assert_int_equal(ladder_feed(&l, false, 2), LADDER_STEP_RESTART_TOR);
    assert_int_equal(ladder_feed(&l, true, 3), LADDER_STEP_NONE);
    assert_int_equal(l.state, LADDER_DEGRADED); /* up again, failures still in the window */
    assert_int_equal(l.step, LADDER_STEP_NONE);
    assert_true(l.tried_at[LADDER_STEP_REPOST] == 0 && l.down_since == 0);
    assert_true(l.recovered_at == 3);
    /* a new outage starts the ladder from the first step */
    assert_int_equal(ladder_feed(&l, false, 4), LADDER_STEP_REPOST);
}

static void test_configure_and_bounds(void **state)
{
    (void)state;
    struct ladder l;
    ladder_init(&l, 200, 500); /* cut to 64 and to the window */
    assert_int_equal(l.window, 64);
    assert_int_equal(l.down_after, 64);
    ladder_init(&l, 0, 0);
    assert_int_equal(l.window, 1);
    assert_int_equal(l.down_after, 1);
    ladder_init(&l, 10, 3);
    for (int i = 0; i < 10; i++)
        ladder_feed(&l, i != 0, i); /* the oldest failed */
    assert_int_equal(ladder_failures(&l), 1);
    ladder_configure(&l, 4, 2); /* keeps the newest 4: all good */
    assert_int_equal(ladder_failures(&l), 0);
    assert_int_equal(l.n, 4);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(ladder_state_str(LADDER_DOWN), "down");
    assert_string_equal(ladder_state_str(LADDER_DEGRADED), "degraded");
    assert_string_equal(ladder_step_str(LADDER_STEP_REPOST), "repost_descriptor");
    assert_string_equal(ladder_step_str(LADDER_STEP_RESTART_TOR), "restart_tor");
    assert_string_equal(ladder_step_str(LADDER_STEP_ALERT), "alert");
    assert_string_equal(ladder_step_str((enum ladder_step)99), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_from_window), cmocka_unit_test(test_steps_in_order_once),
        cmocka_unit_test(test_good_probe_resets),   cmocka_unit_test(test_configure_and_bounds),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
