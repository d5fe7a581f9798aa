/* test_config_errors.c — unit tests for sidecar/config/config_errors.c, the list of a config file's mistakes.
 *
 * Why: `onionfront check-config` prints this list and a refused reload answers its summary; a lost,
 * reordered or unbounded error, or a value shown wrong, misleads the operator fixing the file.
 *
 * Covers: errors kept in order and counted; past CONFIG_ERRORS_MAX only counted; the summary with one,
 * two and many errors and in a small buffer; clear empties the list; values shown as the file had them
 * (numbers, strings with quotes, booleans, null; a long one cut with "..."; an object or array by kind);
 * the valid-key list; the noun of a number field (port or value). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "sidecar/config/config_errors.h"

static void test_list_and_summary(void **state)
{
    (void)state;
    struct config_errors e = {0};
    char out[256];
    config_errors_add(&e, "a: first");
    config_errors_summary(&e, out, sizeof out);
    assert_string_equal(out, "a: first");
    config_errors_add(&e, "b: second");
    config_errors_summary(&e, out, sizeof out);
    assert_string_equal(out, "a: first (and 1 more error: onionfront check-config lists them all)");
    config_errors_add(&e, "c: third");
    config_errors_summary(&e, out, sizeof out);
    assert_string_equal(out, "a: first (and 2 more errors: onionfront check-config lists them all)");
    assert_int_equal(config_errors_count(&e), 3);
    assert_string_equal(e.msg[1], "b: second");
    config_errors_summary(&e, out, 5);
    assert_string_equal(out, "a: f");
    for (int i = 0; i < CONFIG_ERRORS_MAX; i++)
        config_errors_add(&e, "more");
    assert_int_equal(e.n, CONFIG_ERRORS_MAX);
    assert_int_equal(config_errors_count(&e), CONFIG_ERRORS_MAX + 3);
    assert_string_equal(e.msg[2], "c: third");
    config_errors_clear(&e);
    assert_int_equal(config_errors_count(&e), 0);
}

static void test_shown(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        size_t len;
        const char *want;
    } cases[] = {
        {"70000", 64, "70000"},           {"\"250\"", 64, "\"250\""}, {"true", 64, "true"},
        {"null", 64, "null"},             {"1.5", 64, "1.5"},         {"{\"a\":1}", 64, "an object"},
        {"[1,2]", 64, "an array"},        {"\"abcdefghij\"", 8, "\"abc..."},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        assert_non_null(v);
        config_errors_shown(v, out, cases[i].len);
        if (strcmp(out, cases[i].want) != 0)
            fail_msg("%s: got %s, want %s", cases[i].json, out, cases[i].want);
        json_decref(v);
    }
}

static void test_list_and_noun(void **state)
{
    (void)state;
    static const char *const keys[] = {"socket", "allowed_uids", NULL};
    char out[64];
    assert_string_equal(config_errors_list(keys, out, sizeof out), "socket, allowed_uids");
    assert_string_equal(config_errors_list(keys, out, 8), "socket,");
    static const char *const none[] = {NULL};
    assert_string_equal(config_errors_list(none, out, sizeof out), "");
    assert_string_equal(config_errors_noun("virtual"), "port");
    assert_string_equal(config_errors_noun("port"), "port");
    assert_string_equal(config_errors_noun("listen_port"), "port");
    assert_string_equal(config_errors_noun("weight"), "value");
    assert_string_equal(config_errors_noun("_port"), "value");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_and_summary),
        cmocka_unit_test(test_shown),
        cmocka_unit_test(test_list_and_noun),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
