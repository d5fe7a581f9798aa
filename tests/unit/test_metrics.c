/* test_metrics.c — the Prometheus text writer: HELP/TYPE once per family, label value and HELP escaping,
 * number formatting, and refusal of invalid names, duplicate families and stray samples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "sidecar/core/metrics.h"

static int setup(void **state)
{
    *state = metrics_new();
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    metrics_free(*state);
    return 0;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_family_and_samples(void **state)
{
    struct metrics *m = *state;
    const char *l1[] = {"service", "web", "backend", "a", NULL};
    const char *l2[] = {"service", "web", "backend", "b", NULL};
    assert_int_equal(metrics_family(m, "onionfront_backend_up", METRICS_GAUGE, "1 if up."), 0);
    assert_int_equal(metrics_sample(m, "onionfront_backend_up", l1, 1), 0);
    assert_int_equal(metrics_sample(m, "onionfront_backend_up", l2, 0), 0);
    assert_int_equal(metrics_family(m, "onionfront_streams_total", METRICS_COUNTER, "Streams."), 0);
    assert_int_equal(metrics_sample(m, "onionfront_streams_total", NULL, 42), 0);
    size_t len = 0;
    const char *text = metrics_text(m, &len);
    assert_int_equal(len, strlen(text));
    assert_string_equal(text, "# HELP onionfront_backend_up 1 if up.\n"
                              "# TYPE onionfront_backend_up gauge\n"
                              "onionfront_backend_up{service=\"web\",backend=\"a\"} 1\n"
                              "onionfront_backend_up{service=\"web\",backend=\"b\"} 0\n"
                              "# HELP onionfront_streams_total Streams.\n"
                              "# TYPE onionfront_streams_total counter\n"
                              "onionfront_streams_total 42\n");
}

static void test_family_once(void **state)
{
    struct metrics *m = *state;
    assert_int_equal(metrics_family(m, "x_total", METRICS_COUNTER, "X."), 0);
    assert_int_equal(metrics_sample(m, "x_total", NULL, 1), 0);
    assert_int_equal(metrics_family(m, "y", METRICS_GAUGE, "Y."), 0);
    size_t before = 0;
    metrics_text(m, &before);
    assert_int_equal(metrics_family(m, "x_total", METRICS_COUNTER, "X again."), -1); /* writes nothing */
    size_t after = 0;
    const char *text = metrics_text(m, &after);
    assert_int_equal(before, after);
    assert_int_equal(count(text, "# TYPE x_total"), 1);
    assert_int_equal(count(text, "# HELP"), 2);
    /* the current family is still y: samples of x_total are refused */
    assert_int_equal(metrics_sample(m, "x_total", NULL, 2), -1);
}

static void test_label_escaping(void **state)
{
    struct metrics *m = *state;
    static const struct {
        const char *value;
        const char *expect;
    } cases[] = {
        {"plain", "{k=\"plain\"}"},
        {"a\\b", "{k=\"a\\\\b\"}"},
        {"say \"hi\"", "{k=\"say \\\"hi\\\"\"}"},
        {"two\nlines", "{k=\"two\\nlines\"}"},
        {"", "{k=\"\"}"},
        {"ünïcode", "{k=\"ünïcode\"}"},
    };
    assert_int_equal(metrics_family(m, "esc", METRICS_GAUGE, "back\\slash and\nnewline \"quotes\" stay"), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *labels[] = {"k", cases[i].value, NULL};
        assert_int_equal(metrics_sample(m, "esc", labels, 1), 0);
        const char *text = metrics_text(m, NULL);
        assert_non_null(strstr(text, cases[i].expect));
    }
    /* HELP escapes backslash and newline, not quotes */
    assert_non_null(strstr(metrics_text(m, NULL), "# HELP esc back\\\\slash and\\nnewline \"quotes\" stay\n"));
}

static void test_values(void **state)
{
    struct metrics *m = *state;
    static const struct {
        double v;
        const char *expect;
    } cases[] = {
        {0, "v 0\n"},
        {-3, "v -3\n"},
        {0.5, "v 0.5\n"},
        {12345678901234.0, "v 12345678901234\n"},
        {1e300, "v 1.0000000000000001e+300\n"},
        {NAN, "v NaN\n"},
        {INFINITY, "v +Inf\n"},
        {-INFINITY, "v -Inf\n"},
    };
    assert_int_equal(metrics_family(m, "v", METRICS_UNTYPED, "V."), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t before = 0;
        metrics_text(m, &before);
        assert_int_equal(metrics_sample(m, "v", NULL, cases[i].v), 0);
        assert_string_equal(metrics_text(m, NULL) + before, cases[i].expect);
    }
}

static void test_refusals(void **state)
{
    struct metrics *m = *state;
    const char *bad_label[] = {"bad-name", "x", NULL};
    const char *reserved[] = {"__name__", "x", NULL};
    const char *no_value[] = {"k", NULL};
    assert_int_equal(metrics_sample(m, "nofamily", NULL, 1), -1);
    static const char *const bad_names[] = {"", "1abc", "a-b", "a b", "é"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
        assert_int_equal(metrics_family(m, bad_names[i], METRICS_GAUGE, "x"), -1);
    assert_int_equal(metrics_family(m, "ns:ok_name", METRICS_GAUGE, "colons are allowed in metric names"), 0);
    assert_int_equal(metrics_sample(m, "ns:ok_name", bad_label, 1), -1);
    assert_int_equal(metrics_sample(m, "ns:ok_name", reserved, 1), -1);
    assert_int_equal(metrics_sample(m, "ns:ok_name", no_value, 1), -1);
    assert_int_equal(metrics_sample(m, "ns:ok_name_bucket", NULL, 1), -1); /* not a histogram */
    assert_int_equal(metrics_sample(m, "ns:other", NULL, 1), -1);
    assert_int_equal(strlen(metrics_text(m, NULL)), strlen("# HELP ns:ok_name colons are allowed in metric names\n"
                                                           "# TYPE ns:ok_name gauge\n"));
}

static void test_histogram_series(void **state)
{
    struct metrics *m = *state;
    const char *le[] = {"le", "0.5", NULL};
    const char *inf[] = {"le", "+Inf", NULL};
    assert_int_equal(metrics_family(m, "lat_seconds", METRICS_HISTOGRAM, "Latency."), 0);
    assert_int_equal(metrics_sample(m, "lat_seconds_bucket", le, 3), 0);
    assert_int_equal(metrics_sample(m, "lat_seconds_bucket", inf, 4), 0);
    assert_int_equal(metrics_sample(m, "lat_seconds_sum", NULL, 1.25), 0);
    assert_int_equal(metrics_sample(m, "lat_seconds_count", NULL, 4), 0);
    assert_int_equal(metrics_sample(m, "lat_seconds_other", NULL, 4), -1);
    const char *text = metrics_text(m, NULL);
    assert_non_null(strstr(text, "# TYPE lat_seconds histogram\nlat_seconds_bucket{le=\"0.5\"} 3\n"
                                 "lat_seconds_bucket{le=\"+Inf\"} 4\nlat_seconds_sum 1.25\nlat_seconds_count 4\n"));
}

static void test_empty_and_free_null(void **state)
{
    struct metrics *m = *state;
    size_t len = 99;
    assert_string_equal(metrics_text(m, &len), "");
    assert_int_equal(len, 0);
    metrics_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_family_and_samples, setup, teardown),
        cmocka_unit_test_setup_teardown(test_family_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_label_escaping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_histogram_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_and_free_null, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
