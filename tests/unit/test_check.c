/* test_check.c — unit tests for sidecar/datapath/check.c: every outcome has a name of its own, a value outside the
 * enum is "unknown". */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "sidecar/datapath/check.h"

static void test_stringer(void **state)
{
    (void)state;
    for (int r = CHECK_OK; r <= CHECK_RESOLVE_ERROR; r++) {
        assert_string_not_equal(check_result_str((enum check_result)r), "unknown");
        for (int q = CHECK_OK; q < r; q++) /* names are distinct: metrics label by them */
            assert_string_not_equal(check_result_str((enum check_result)q), check_result_str((enum check_result)r));
    }
    assert_string_equal(check_result_str((enum check_result)99), "unknown");
    assert_string_equal(check_result_str(CHECK_OK), "ok");
    assert_string_equal(check_result_str(CHECK_CONNECT_TIMEOUT), "connect timeout");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stringer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
