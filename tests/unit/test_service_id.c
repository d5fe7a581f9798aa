/* test_service_id.c — unit tests for sidecar/identity/service_id.c, the one owner of each service's name, key
 * and address, with real key directories in a private temporary directory. (test_service.c covers the
 * key files themselves through the manager that borrows these identities.)
 *
 * Why: a service must never silently get a new address: a reload keeps it for a service that stays
 * under the same name and key directory, and every part looks a service up here by its address.
 *
 * Covers: addresses empty until the keys are loaded, then 56 characters and different per service;
 * lookup by address (any case, with or without ".onion") and by index, NULL out of range or unknown;
 * reconfigure keeps the address of a service that stays, gives a renamed service (new key directory) a
 * new one, keeps the old list when a new key cannot be made; the mode rule (keys never cross modes); a
 * withdrawn service comes back to the tors on the next reload. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ctype.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/core/log.h"
#include "sidecar/identity/service_id.h"
#include "tests/fake/tmpdir.h"

struct test {
    char dir[64];
    struct config *conf, *next;
    struct service_ids *ids;
};

static struct config *load(struct test *x, const char *services)
{
    char json[1024], err[512];
    snprintf(json, sizeof(json), "{'state_dir':'%s/state','run_dir':'%s/run','services':[%s]}", x->dir, x->dir,
             services);
    for (char *q = json; *q; q++)
        *q = *q == '\'' ? '"' : *q;
    struct config *c = config_load_string(json, strlen(json), err, sizeof(err));
    if (!c)
        fail_msg("config: %s", err);
    return c;
}

#define SVC(name, port) "{'name':'" name "','ports':[{'virtual':" port ",'target':'127.0.0.1:1'}]}"

static int setup(void **state)
{
    struct test *x = calloc(1, sizeof(*x));
    char p[128], err[512];
    assert_non_null(x);
    log_set_level(LOG_LVL_ERROR);
    assert_int_equal(tmpdir_make(x->dir, sizeof(x->dir), "test_service_id"), 0);
    snprintf(p, sizeof(p), "%s/state", x->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/state/keys", x->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    x->conf = load(x, SVC("web", "80") "," SVC("api", "81"));
    x->ids = service_ids_new(x->conf);
    assert_non_null(x->ids);
    assert_string_equal(service_ids_at(x->ids, 0)->address, "");
    if (service_ids_load_keys(x->ids, err, sizeof(err)) < 0)
        fail_msg("keys: %s", err);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct test *x = *state;
    service_ids_free(x->ids);
    config_free(x->conf);
    config_free(x->next);
    tmpdir_remove(x->dir);
    free(x);
    return 0;
}

static void test_lookup(void **state)
{
    struct test *x = *state;
    assert_int_equal(service_ids_count(x->ids), 2);
    const struct service_id *web = service_ids_at(x->ids, 0), *api = service_ids_at(x->ids, 1);
    assert_null(service_ids_at(x->ids, 2));
    assert_string_equal(service_id_name(web), "web");
    assert_string_equal(service_id_name(api), "api");
    assert_ptr_equal(web->conf, &x->conf->services[0]);
    assert_int_equal(strlen(web->address), 56);
    assert_string_not_equal(web->address, api->address);
    char upper[80];
    snprintf(upper, sizeof(upper), "%s.onion", api->address);
    for (char *q = upper; *q; q++)
        *q = (char)toupper((unsigned char)*q);
    assert_ptr_equal(service_ids_find(x->ids, upper), api);
    assert_ptr_equal(service_ids_find(x->ids, web->address), web);
    assert_null(service_ids_find(x->ids, "nkfp4y5sdp4laifn2jjhvooirlcxreopj2bygizfy5x5so7774l6u5id"));
}

static void test_reconfigure(void **state)
{
    struct test *x = *state;
    char err[512], web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE];
    snprintf(web, sizeof(web), "%s", service_ids_at(x->ids, 0)->address);
    snprintf(api, sizeof(api), "%s", service_ids_at(x->ids, 1)->address);
    /* api renamed to api2 (another key directory), web moved to the end and given another port */
    x->next = load(x, SVC("api2", "81") "," SVC("web", "8080"));
    assert_int_equal(service_ids_reconfigure(x->ids, x->next, err, sizeof(err)), 0);
    config_free(x->conf); /* as the daemon does: nothing may point into it now */
    x->conf = x->next;
    x->next = NULL;
    assert_int_equal(service_ids_count(x->ids), 2);
    assert_string_equal(service_ids_at(x->ids, 1)->address, web);
    assert_string_equal(service_id_name(service_ids_at(x->ids, 1)), "web");
    assert_string_not_equal(service_ids_at(x->ids, 0)->address, api);
    assert_int_equal(strlen(service_ids_at(x->ids, 0)->address), 56);

    /* a new service whose key directory cannot be made: refused, the list unchanged */
    char bad[600];
    snprintf(bad, sizeof(bad), SVC("web", "80") ",{'name':'x','key_dir':'%s/missing/x','ports':[{'virtual':1,"
             "'target':'127.0.0.1:1'}]}", x->dir);
    x->next = load(x, bad);
    assert_int_equal(service_ids_reconfigure(x->ids, x->next, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "service x: "));
    assert_ptr_equal(service_ids_at(x->ids, 1)->conf, &x->conf->services[1]);
    assert_string_equal(service_ids_at(x->ids, 1)->address, web);
}

/* A service withdrawn by the probe (open without a key) is off every tor with its address kept for
 * status; the next reload checks it again: same address, no longer withdrawn, and not `kept`, so every
 * tor is handed it again (a `kept` one would be "no change for tor" and stay off). */
static void test_withdrawn_comes_back(void **state)
{
    struct test *x = *state;
    char err[512], web[ONION_ADDRESS_SIZE];
    snprintf(web, sizeof(web), "%s", service_ids_at(x->ids, 0)->address);
    assert_int_equal(service_ids_withdraw(x->ids, web, "reachable without client authorization"), 0);
    assert_int_equal(service_ids_withdraw(x->ids, "nkfp4y5sdp4laifn2jjhvooirlcxreopj2bygizfy5x5so7774l6u5id", "x"), -1);
    assert_string_equal(service_id_withdrawn(service_ids_at(x->ids, 0)), "reachable without client authorization");
    assert_null(service_id_withdrawn(service_ids_at(x->ids, 1)));
    assert_string_equal(service_ids_at(x->ids, 0)->address, web); /* status still names it */
    x->next = load(x, SVC("web", "80") "," SVC("api", "81"));
    assert_int_equal(service_ids_reconfigure(x->ids, x->next, err, sizeof(err)), 0);
    config_free(x->conf);
    x->conf = x->next;
    x->next = NULL;
    const struct service_id *w = service_ids_at(x->ids, 0), *a = service_ids_at(x->ids, 1);
    assert_string_equal(w->address, web);
    assert_null(service_id_withdrawn(w));
    assert_null(service_id_refusal(w));
    assert_false(w->kept); /* handed to the tors again */
    assert_true(a->kept);  /* the other one: unchanged for tor */
}

#define ANON(name, port) "{'name':'" name "','mode':'anonymous','ports':[{'virtual':" port ",'target':'127.0.0.1:1'}]}"

/* Keys never cross modes: a reload moving web from single to anonymous is refused as a whole (naming web
 * and a new key; the running list stays); a start with web anonymous refuses web only; a new anonymous
 * service gets a key without the single-onion marker, recorded as anonymous, and moving it to single is
 * refused the same way. */
static void test_mode_rule(void **state)
{
    struct test *x = *state;
    char err[2048], web[ONION_ADDRESS_SIZE], path[256];
    snprintf(web, sizeof(web), "%s", service_ids_at(x->ids, 0)->address);

    x->next = load(x, ANON("web", "80") "," SVC("api", "81"));
    assert_int_equal(service_ids_reconfigure(x->ids, x->next, err, sizeof(err)), -1);
    if (!strstr(err, "service web: ") || !strstr(err, "new-key web") || !strstr(err, "from single to anonymous"))
        fail_msg("reload error: %s", err);
    assert_ptr_equal(service_ids_at(x->ids, 0)->conf, &x->conf->services[0]);
    assert_string_equal(service_ids_at(x->ids, 0)->address, web);
    assert_null(service_id_refusal(service_ids_at(x->ids, 0)));

    /* at start: web refused (with what to do), api runs */
    struct service_ids *fresh = service_ids_new(x->next);
    assert_non_null(fresh);
    assert_int_equal(service_ids_load_keys(fresh, err, sizeof(err)), 0);
    const char *why = service_id_refusal(service_ids_at(fresh, 0));
    assert_non_null(why);
    assert_non_null(strstr(why, "new-key web"));
    assert_null(service_id_refusal(service_ids_at(fresh, 1)));
    assert_string_equal(service_ids_at(fresh, 0)->address, "");
    service_ids_free(fresh);
    config_free(x->next);

    /* a new anonymous service: its own key, never marked */
    x->next = load(x, SVC("web", "80") "," SVC("api", "81") "," ANON("hid", "82"));
    assert_int_equal(service_ids_reconfigure(x->ids, x->next, err, sizeof(err)), 0);
    config_free(x->conf);
    x->conf = x->next;
    x->next = NULL;
    assert_int_equal(strlen(service_ids_at(x->ids, 2)->address), 56);
    snprintf(path, sizeof(path), "%s/state/keys/hid/onion_service_non_anonymous", x->dir);
    assert_int_not_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/state/keys/web/onion_service_non_anonymous", x->dir);
    assert_int_equal(access(path, F_OK), 0);
    /* ... and it never becomes a single onion */
    x->next = load(x, SVC("web", "80") "," SVC("api", "81") "," SVC("hid", "82"));
    assert_int_equal(service_ids_reconfigure(x->ids, x->next, err, sizeof(err)), -1);
    if (!strstr(err, "service hid: ") || !strstr(err, "new-key hid") || !strstr(err, "from anonymous to single"))
        fail_msg("reload error: %s", err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconfigure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mode_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_withdrawn_comes_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
