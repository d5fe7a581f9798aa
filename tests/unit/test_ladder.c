/* test_ladder.c — the end-to-end verdict and the repair ladder (ladder.h) with a fake clock: the verdict
 * from the window (starting before the first probe, and again after its tor restarted), the steps in
 * order (re-post, re-publish the service alone, restart tor, alert) one per failed probe while down, each
 * taken once per outage, the times they were taken, the reset on a good probe, new settings, and the
 * rule that grants a ladder's tor restart: most of the tor's services down, at most once per gap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sidecar/probe/ladder.h"

static void test_verdict_from_window(void **state)
{
    (void)state;
    struct ladder l;
    ladder_init(&l, 3, 2);
    assert_int_equal(l.state, LADDER_STARTING);
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
    /* the service alone before its tor, which hosts others too */
    assert_int_equal(ladder_feed(&l, false, 40), LADDER_STEP_REPUBLISH);
    assert_int_equal(ladder_feed(&l, false, 50), LADDER_STEP_RESTART_TOR);
    assert_int_equal(ladder_feed(&l, false, 60), LADDER_STEP_ALERT);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ladder_feed(&l, false, 70 + i), LADDER_STEP_NONE); /* alerting goes on; no step again */
    assert_int_equal(l.step, LADDER_STEP_ALERT);
    assert_true(l.tried_at[LADDER_STEP_REPOST] == 30);
    assert_true(l.tried_at[LADDER_STEP_REPUBLISH] == 40);
    assert_true(l.tried_at[LADDER_STEP_RESTART_TOR] == 50);
    assert_true(l.tried_at[LADDER_STEP_ALERT] == 60);
}

static void test_good_probe_resets(void **state)
{
    (void)state;
    struct ladder l;
    ladder_init(&l, 3, 1);
    assert_int_equal(ladder_feed(&l, false, 1), LADDER_STEP_REPOST); /* down_after 1: down at once */
    assert_int_equal(ladder_feed(&l, false, 2), LADDER_STEP_REPUBLISH);
    assert_int_equal(ladder_feed(&l, true, 3), LADDER_STEP_NONE);
    assert_int_equal(l.state, LADDER_DEGRADED); /* up again, failures still in the window */
    assert_int_equal(l.step, LADDER_STEP_NONE);
    assert_true(l.tried_at[LADDER_STEP_REPOST] == 0 && l.down_since == 0);
    assert_true(l.recovered_at == 3);
    /* a new outage starts the ladder from the first step */
    assert_int_equal(ladder_feed(&l, false, 4), LADDER_STEP_REPOST);
}

/* A restarted tor publishes its services from the start: they are starting again, not down, and a new
 * outage after that climbs from the first step. */
static void test_start_over(void **state)
{
    (void)state;
    struct ladder l;
    ladder_init(&l, 5, 2);
    ladder_feed(&l, true, 1);
    ladder_feed(&l, false, 2);
    ladder_feed(&l, true, 3);
    assert_true(l.recovered_at == 0);
    ladder_feed(&l, false, 4);
    assert_int_equal(ladder_feed(&l, false, 5), LADDER_STEP_REPOST);
    assert_int_equal(ladder_feed(&l, false, 6), LADDER_STEP_REPUBLISH);
    assert_int_equal(ladder_feed(&l, false, 7), LADDER_STEP_RESTART_TOR);
    ladder_start_over(&l);
    assert_int_equal(l.state, LADDER_STARTING);
    assert_int_equal(l.n, 0);
    assert_int_equal(l.step, LADDER_STEP_NONE);
    assert_true(l.down_since == 0 && l.tried_at[LADDER_STEP_REPOST] == 0);
    assert_int_equal(l.window, 5); /* settings stay */
    assert_int_equal(l.down_after, 2);
    assert_int_equal(ladder_feed(&l, false, 8), LADDER_STEP_NONE); /* one failure: not down yet */
    assert_int_equal(l.state, LADDER_DEGRADED);
    assert_int_equal(ladder_feed(&l, false, 9), LADDER_STEP_REPOST);
}

/* The tor restart rule, table-driven: most of the tor's services down, and the budget. */
static void test_restart_decide_table(void **state)
{
    (void)state;
    static const struct {
        double last; /* the budget's last restart (0: never) */
        unsigned down, hosted;
        double now;
        enum ladder_restart want;
    } cases[] = {
        {0, 1, 1, 100, LADDER_RESTART_YES},       /* one service, down: its tor is all it has */
        {0, 1, 50, 100, LADDER_RESTART_FEW_DOWN}, /* one of fifty: the others keep running */
        {0, 25, 50, 100, LADDER_RESTART_FEW_DOWN}, /* half is not most */
        {0, 26, 50, 100, LADDER_RESTART_YES},
        {0, 1, 2, 100, LADDER_RESTART_FEW_DOWN},
        {0, 2, 3, 100, LADDER_RESTART_YES},
        {0, 50, 50, 100, LADDER_RESTART_YES},
        {0, 0, 0, 100, LADDER_RESTART_FEW_DOWN},  /* nothing hosted: nothing to repair */
        {50, 50, 50, 100, LADDER_RESTART_BUDGET}, /* restarted 50 s ago, gap 300 s */
        {50, 50, 50, 349.9, LADDER_RESTART_BUDGET},
        {50, 50, 50, 350, LADDER_RESTART_YES},    /* the gap has passed */
        {50, 1, 50, 1000, LADDER_RESTART_FEW_DOWN}, /* few down beats an unused budget */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ladder_tor_budget b = {cases[i].last};
        enum ladder_restart got = ladder_restart_decide(&b, cases[i].down, cases[i].hosted, cases[i].now, 300);
        if (got != cases[i].want)
            fail_msg("case %zu: %u of %u down at %.1f: got %s, want %s", i, cases[i].down, cases[i].hosted,
                     cases[i].now, ladder_restart_str(got), ladder_restart_str(cases[i].want));
    }
}

/* The budget with a fake clock: one restart per gap per tor, whichever service asks. */
static void test_restart_budget_over_time(void **state)
{
    (void)state;
    struct ladder_tor_budget a = {0}, b = {0};
    double gap = ladder_restart_gap(60, 5);
    assert_true(gap == 300);
    assert_true(ladder_restart_gap(0, 0) == 1);
    assert_int_equal(ladder_restart_decide(&a, 40, 50, 1000, gap), LADDER_RESTART_YES);
    ladder_restart_taken(&a, 1000);
    /* another service of the same tor asks a minute later: no */
    assert_int_equal(ladder_restart_decide(&a, 45, 50, 1060, gap), LADDER_RESTART_BUDGET);
    /* a second tor has its own budget */
    assert_int_equal(ladder_restart_decide(&b, 45, 50, 1060, gap), LADDER_RESTART_YES);
    assert_int_equal(ladder_restart_decide(&a, 45, 50, 1299, gap), LADDER_RESTART_BUDGET);
    assert_int_equal(ladder_restart_decide(&a, 45, 50, 1300, gap), LADDER_RESTART_YES);
    ladder_restart_taken(&a, 0); /* a restart at the clock's origin still counts */
    assert_int_equal(ladder_restart_decide(&a, 45, 50, 10, gap), LADDER_RESTART_BUDGET);
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
    assert_string_equal(ladder_state_str(LADDER_STARTING), "starting");
    assert_string_equal(ladder_step_str(LADDER_STEP_REPUBLISH), "republish");
    assert_string_equal(ladder_step_str(LADDER_STEP_RESTART_TOR), "restart_tor");
    assert_string_equal(ladder_restart_str(LADDER_RESTART_FEW_DOWN), "few_down");
    assert_string_equal(ladder_restart_str((enum ladder_restart)9), "unknown");
    assert_string_equal(ladder_step_str(LADDER_STEP_ALERT), "alert");
    assert_string_equal(ladder_step_str((enum ladder_step)99), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_from_window), cmocka_unit_test(test_steps_in_order_once),
        cmocka_unit_test(test_good_probe_resets),   cmocka_unit_test(test_start_over),
        cmocka_unit_test(test_restart_decide_table), cmocka_unit_test(test_restart_budget_over_time),
        cmocka_unit_test(test_configure_and_bounds),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
