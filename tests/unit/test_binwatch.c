/* test_binwatch.c — unit tests for sidecar/core/binwatch.c, which notices a replaced tor binary.
 *
 * Why: an upgrade must start exactly one rolling restart, only once the new file stopped changing, and
 * a declined change (a roll running, a file that does not run) must be offered again, not lost.
 *
 * Covers, on real files with checks called by hand: no change -> no report; a file renamed over the
 * path (cp + mv, new inode) -> reported at the second check only, then once; a rewrite in place of
 * another size -> reported; a missing path -> waited for; a declined change -> asked again next check;
 * set_path takes the current file as the reference; NULL stops watching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <unistd.h>

#include "sidecar/core/binwatch.h"
#include "tests/fake/tmpdir.h"

struct test {
    char dir[64], path[128], tmp[128];
    struct binwatch *b;
    int calls;
    int answer; /* what the callback returns */
};

static int on_changed(void *arg, const char *path)
{
    struct test *x = arg;
    assert_string_equal(path, x->path);
    x->calls++;
    return x->answer;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
    struct test *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    assert_int_equal(tmpdir_make(x->dir, sizeof(x->dir), "test_binwatch"), 0);
    snprintf(x->path, sizeof(x->path), "%s/tor", x->dir);
    snprintf(x->tmp, sizeof(x->tmp), "%s/tor.new", x->dir);
    write_file(x->path, "old tor\n");
    x->b = binwatch_new(NULL, on_changed, x);
    assert_non_null(x->b);
    assert_int_equal(binwatch_set_path(x->b, x->path), 0);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct test *x = *state;
    binwatch_free(x->b);
    tmpdir_remove(x->dir);
    free(x);
    return 0;
}

/* cp to a temporary name, then mv over: a new inode at the path. */
static void replace(struct test *x, const char *text)
{
    write_file(x->tmp, text);
    assert_int_equal(rename(x->tmp, x->path), 0);
}

static void test_unchanged(void **state)
{
    struct test *x = *state;
    for (int i = 0; i < 3; i++)
        binwatch_check(x->b);
    assert_int_equal(x->calls, 0);
}

static void test_renamed_over_settles_then_once(void **state)
{
    struct test *x = *state;
    replace(x, "new tor\n");
    binwatch_check(x->b);
    assert_int_equal(x->calls, 0); /* seen once: not settled yet */
    binwatch_check(x->b);
    assert_int_equal(x->calls, 1);
    binwatch_check(x->b);
    binwatch_check(x->b);
    assert_int_equal(x->calls, 1); /* taken: the new reference */
    /* a rewrite in place with another size is a change too */
    write_file(x->path, "newer tor, longer\n");
    binwatch_check(x->b);
    binwatch_check(x->b);
    assert_int_equal(x->calls, 2);
}

static void test_still_changing_waits(void **state)
{
    struct test *x = *state;
    replace(x, "new tor 1\n");
    binwatch_check(x->b);
    replace(x, "new tor 22\n"); /* changed again between the checks */
    binwatch_check(x->b);
    assert_int_equal(x->calls, 0);
    binwatch_check(x->b);
    assert_int_equal(x->calls, 1);
}

static void test_missing_then_back(void **state)
{
    struct test *x = *state;
    assert_int_equal(unlink(x->path), 0);
    binwatch_check(x->b);
    binwatch_check(x->b);
    assert_int_equal(x->calls, 0);
    write_file(x->path, "reinstalled tor\n");
    binwatch_check(x->b);
    binwatch_check(x->b);
    assert_int_equal(x->calls, 1);
}

static void test_declined_is_asked_again(void **state)
{
    struct test *x = *state;
    x->answer = -1;
    replace(x, "new tor\n");
    binwatch_check(x->b);
    binwatch_check(x->b);
    binwatch_check(x->b);
    assert_int_equal(x->calls, 2);
    x->answer = 0;
    binwatch_check(x->b);
    binwatch_check(x->b);
    assert_int_equal(x->calls, 3);
}

static void test_set_path_takes_current_and_null_stops(void **state)
{
    struct test *x = *state;
    replace(x, "new tor\n");
    assert_int_equal(binwatch_set_path(x->b, x->path), 0); /* e.g. a reload: this file is the reference */
    binwatch_check(x->b);
    binwatch_check(x->b);
    assert_int_equal(x->calls, 0);
    assert_int_equal(binwatch_set_path(x->b, NULL), 0);
    replace(x, "newer tor\n");
    binwatch_check(x->b);
    binwatch_check(x->b);
    assert_int_equal(x->calls, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unchanged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renamed_over_settles_then_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_still_changing_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_then_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_declined_is_asked_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_path_takes_current_and_null_stops, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
