/* test_log.c — level parsing, threshold and line format (stderr captured through a pipe). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sidecar/log.h"

/* Run `fn` with stderr redirected into a pipe; return what it wrote in buf. */
static size_t capture(void (*fn)(void), char *buf, size_t cap)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fds[1], 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n < cap - 1 && (r = read(fds[0], buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    close(fds[0]);
    return n;
}

static void test_parse(void **state)
{
    (void)state;
    const struct { const char *s; int ok; enum log_level l; } cases[] = {
        {"debug", 0, LOG_LVL_DEBUG}, {"info", 0, LOG_LVL_INFO}, {"notice", 0, LOG_LVL_NOTICE},
        {"warn", 0, LOG_LVL_WARN},   {"error", 0, LOG_LVL_ERROR}, {"INFO", -1, 0}, {"", -1, 0}, {"warning", -1, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum log_level l = LOG_LVL_ERROR;
        assert_int_equal(log_level_parse(cases[i].s, &l), cases[i].ok);
        if (cases[i].ok == 0) {
            assert_int_equal(l, cases[i].l);
            assert_string_equal(log_level_str(l), cases[i].s);
        }
    }
}

static void emit_some(void)
{
    log_set_level(LOG_LVL_NOTICE);
    log_debug("hidden debug %d", 1);
    log_info("hidden info");
    log_notice("shown notice %s", "x");
    errno = ENOENT;
    log_warn("open %s", "/nope");
    log_set_level(LOG_LVL_INFO);
}

static void test_threshold_and_format(void **state)
{
    (void)state;
    char buf[4096];
    capture(emit_some, buf, sizeof(buf));
    assert_null(strstr(buf, "hidden"));
    assert_non_null(strstr(buf, "[notice] shown notice x\n"));
    assert_non_null(strstr(buf, "[warn] open /nope: No such file or directory\n"));
}

static void emit_long(void)
{
    char big[10000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_info("%s", big);
}

static void test_long_line_truncated_not_overflowed(void **state)
{
    (void)state;
    char buf[16384];
    size_t n = capture(emit_long, buf, sizeof(buf));
    assert_true(n > 1000 && n <= 4096);
    assert_int_equal(buf[n - 1], '\n');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_threshold_and_format),
        cmocka_unit_test(test_long_line_truncated_not_overflowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
