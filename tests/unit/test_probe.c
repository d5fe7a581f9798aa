/* test_probe.c — the pure parts of the end-to-end probe (probe.h): which stage tor's SOCKS5 replies name
 * (ExtendedErrors F0-F7, the standard codes) and the stage names status and metrics use. The probe itself
 * runs against real tor in tests/integration/test_probe.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sidecar/probe/probe.h"

static void test_socks_stages(void **state)
{
    (void)state;
    static const struct { int code; enum probe_stage stage; } table[] = {
        {0xF0, PROBE_STAGE_DESCRIPTOR},   {0xF1, PROBE_STAGE_DESCRIPTOR},   {0xF2, PROBE_STAGE_INTRODUCTION},
        {0xF3, PROBE_STAGE_RENDEZVOUS},   {0xF4, PROBE_STAGE_DESCRIPTOR},   {0xF5, PROBE_STAGE_DESCRIPTOR},
        {0xF6, PROBE_STAGE_DESCRIPTOR},   {0xF7, PROBE_STAGE_INTRODUCTION}, {1, PROBE_STAGE_STREAM},
        {4, PROBE_STAGE_STREAM},          {5, PROBE_STAGE_STREAM},          {6, PROBE_STAGE_STREAM},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        assert_int_equal(probe_stage_of_socks(table[i].code), table[i].stage);
}

/* The first probe waits until the descriptor clients fetch is on every responsible HSDir, or
 * PROBE_ARM_WAIT_MS after the first confirmation (an HSDir that never answers), never before any. */
static void test_may_arm(void **state)
{
    (void)state;
    assert_false(probe_may_arm(PROBE_PUBLISHED_NONE, 0, 100000));
    assert_true(probe_may_arm(PROBE_PUBLISHED_ALL, 0, 100000));
    assert_true(probe_may_arm(PROBE_PUBLISHED_ALL, 99999, 100000));
    assert_false(probe_may_arm(PROBE_PUBLISHED_SOME, 100000, 100000));
    assert_false(probe_may_arm(PROBE_PUBLISHED_SOME, 100000, 100000 + PROBE_ARM_WAIT_MS - 1));
    assert_true(probe_may_arm(PROBE_PUBLISHED_SOME, 100000, 100000 + PROBE_ARM_WAIT_MS));
    assert_false(probe_may_arm(PROBE_PUBLISHED_SOME, 0, 100000 + PROBE_ARM_WAIT_MS)); /* never seen */
}

static void test_stage_names(void **state)
{
    (void)state;
    assert_string_equal(probe_stage_str(PROBE_STAGE_NONE), "ok");
    assert_string_equal(probe_stage_str(PROBE_STAGE_DESCRIPTOR), "descriptor");
    assert_string_equal(probe_stage_str(PROBE_STAGE_INTRODUCTION), "introduction");
    assert_string_equal(probe_stage_str(PROBE_STAGE_RENDEZVOUS), "rendezvous");
    assert_string_equal(probe_stage_str(PROBE_STAGE_STREAM), "stream");
    assert_string_equal(probe_stage_str(PROBE_STAGE_HTTP), "http");
    assert_string_equal(probe_stage_str(PROBE_STAGE_OPEN), "open");
    assert_string_equal(probe_stage_str(PROBE_STAGE_CLIENT), "client");
    assert_string_equal(probe_stage_str((enum probe_stage)42), "unknown");
}

/* A private service's keyless pass: only an opened stream is "open", only F4 (the descriptor needs client
 * authorization) is "refused"; every other failure proves nothing either way. */
static void test_keyless_judge(void **state)
{
    (void)state;
    static const struct { bool connected; int code; enum probe_keyless want; } table[] = {
        {true, -1, PROBE_KEYLESS_OPEN},           {true, 0xF4, PROBE_KEYLESS_OPEN},
        {false, 0xF4, PROBE_KEYLESS_REFUSED},     {false, 0xF5, PROBE_KEYLESS_INCONCLUSIVE},
        {false, 0xF0, PROBE_KEYLESS_INCONCLUSIVE}, {false, 0xF2, PROBE_KEYLESS_INCONCLUSIVE},
        {false, -1, PROBE_KEYLESS_INCONCLUSIVE},  {false, 1, PROBE_KEYLESS_INCONCLUSIVE},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        assert_int_equal(probe_keyless_judge(table[i].connected, table[i].code), table[i].want);
    assert_string_equal(probe_keyless_str(PROBE_KEYLESS_REFUSED), "refused");
    assert_string_equal(probe_keyless_str(PROBE_KEYLESS_OPEN), "open");
    assert_string_equal(probe_keyless_str((enum probe_keyless)9), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_socks_stages), cmocka_unit_test(test_stage_names),
                                       cmocka_unit_test(test_may_arm), cmocka_unit_test(test_keyless_judge)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
