/* test_health_set.c — unit tests for sidecar/datapath/health_set.c, a health checker per live backend pool,
 * with real pools (backend.c) and checkers (health.c) on a real event base.
 *
 * Why: a pool left without its checker keeps a dead backend in rotation; a checker left after its pool
 * checks freed memory.
 *
 * Covers: added -> one checker per pool; updated reaches the checker of that pool only; removed frees
 * that pool's checker (and one for a pool never added is a no-op); freeing the set frees the checkers
 * left (ASan reports a leak or a use after free). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <event2/event.h>

#include "sidecar/datapath/backend.h"
#include "sidecar/config/config.h"
#include "sidecar/datapath/health_set.h"
#include "sidecar/core/log.h"

struct test {
    struct event_base *base;
    struct config *conf;
    struct backend_pool *pools[3];
    struct health_set *set;
};

static int setup(void **state)
{
    struct test *x = calloc(1, sizeof(*x));
    char err[512];
    static const char json[] =
        "{\"state_dir\":\"/var/lib/of\",\"run_dir\":\"/run/of\",\"services\":[{\"name\":\"web\",\"ports\":["
        "{\"virtual\":80,\"target\":\"127.0.0.1:1\"},{\"virtual\":81,\"target\":\"127.0.0.1:2\"},"
        "{\"virtual\":82,\"target\":\"127.0.0.1:3\"}]}]}";
    assert_non_null(x);
    log_set_level(LOG_LVL_ERROR);
    x->base = event_base_new();
    x->conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!x->conf)
        fail_msg("config: %s", err);
    for (size_t i = 0; i < 3; i++)
        assert_non_null(x->pools[i] = backend_pool_new(x->base, "web", &x->conf->services[0].ports[i]));
    x->set = health_set_new(x->base);
    assert_non_null(x->set);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct test *x = *state;
    health_set_free(x->set); /* the checkers first: they borrow the pools */
    for (size_t i = 0; i < 3; i++)
        backend_pool_free(x->pools[i]);
    config_free(x->conf);
    event_base_free(x->base);
    free(x);
    return 0;
}

static void test_added_updated_removed(void **state)
{
    struct test *x = *state;
    assert_int_equal(health_set_count(x->set), 0);
    health_set_pool_added(x->pools[0], x->set);
    health_set_pool_added(x->pools[1], x->set);
    assert_int_equal(health_set_count(x->set), 2);
    health_set_pool_updated(x->pools[1], x->set);
    health_set_pool_updated(x->pools[2], x->set); /* never added: nothing to update */
    health_set_pool_removed(x->pools[2], x->set);
    assert_int_equal(health_set_count(x->set), 2);
    health_set_pool_removed(x->pools[0], x->set);
    assert_int_equal(health_set_count(x->set), 1);
    health_set_pool_added(x->pools[2], x->set);
    assert_int_equal(health_set_count(x->set), 2);
    /* the rest is freed by health_set_free in teardown */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_added_updated_removed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
