/* test_workerset.c — unit tests for sidecar/fleet/workerset.c, the daemon's tor.instances workers.
 *
 * Why: with tor.instances N the daemon must run N tors, each with its own paths and a copy of the same
 * key (never a second key), and must report "stopped" once, when the last one is gone; with 1 it is the
 * single worker of before. The failover between live tors needs real tors: test_instances.sh.
 *
 * Covers: 1 and 2 instances -> that many workers, instance 0 first; workerset_prepare makes instance 2's
 * key copy with the service's address, and nothing for instance 1 beside key_dir; workerset_stop on
 * workers that never started -> stopped() exactly once; restart-tor refused while the tors are not up
 * and once stopping; workerset_served answers on either basis only for services the single-onion tors
 * publish (the one rule for failover, the roll, the repairs and status); with tor.tors_per_service 2 of
 * 3 each tor hosts exactly its placed services, counts them in its status row, and holds key copies of
 * those alone. */
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
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/identity/keys.h"
#include "sidecar/core/log.h"
#include "sidecar/core/proc.h"
#include "sidecar/fleet/roll.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/fleet/worker.h"
#include "sidecar/fleet/workerset.h"
#include "tests/fake/onion_addrs.h"
#include "tests/fake/tmpdir.h"

#define SVC_WEB "{'name':'web','ports':[{'virtual':80,'target':'127.0.0.1:8080'}]}"
#define SVC_ANON "{'name':'hidden','mode':'anonymous','ports':[{'virtual':80,'target':'127.0.0.1:8081'}]}"
#define SVC_FRONT "{'name':'front','onionbalance':{'frontend':true,'instances':[" TEST_EIGHT_ADDRESSES "]}}"

struct test {
    struct event_base *base;
    struct proc_mgr *procs;
    struct config *conf;
    struct service_ids *ids;
    struct workerset *ws;
    char dir[64];
    int n_stopped;
};

static void on_ready(struct worker *w, void *arg)
{
    (void)w;
    (void)arg;
}

static void on_lost(struct worker *w, const char *why, void *arg)
{
    (void)w;
    (void)why;
    (void)arg;
}

static void on_stopped(struct worker *w, void *arg)
{
    struct test *x = arg;
    (void)w;
    x->n_stopped++;
}

static int setup(void **state)
{
    struct test *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    x->base = event_base_new();
    x->procs = x->base ? proc_mgr_new(x->base) : NULL;
    assert_non_null(x->procs);
    assert_int_equal(tmpdir_make(x->dir, sizeof(x->dir), "test_workerset"), 0);
    log_set_level(getenv("TEST_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_WARN);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct test *x = *state;
    workerset_free(x->ws);
    service_ids_free(x->ids);
    config_free(x->conf);
    proc_mgr_free(x->procs);
    event_base_free(x->base);
    tmpdir_remove(x->dir);
    free(x);
    return 0;
}

/* A spawn-mode config with the tor section `tor` and `services` (' for "), their keys loaded, the workers
 * made. */
static void make_tor_services(struct test *x, const char *tor, const char *services)
{
    static const struct worker_callbacks cbs = {
        .ready = on_ready, .bootstrapped = on_ready, .lost = on_lost, .failed = on_lost, .stopped = on_stopped,
    };
    char json[2048], err[1024];
    snprintf(json, sizeof(json), "{'state_dir':'%s/state','run_dir':'%s/run','tor':{%s},'services':[%s]}", x->dir,
             x->dir, tor, services);
    for (char *q = json; *q; q++)
        *q = *q == '\'' ? '"' : *q;
    x->conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!x->conf)
        fail_msg("config: %s", err);
    snprintf(json, sizeof(json), "%s/state", x->dir);
    assert_int_equal(mkdir(json, 0700), 0);
    snprintf(json, sizeof(json), "%s/state/keys", x->dir);
    assert_int_equal(mkdir(json, 0700), 0);
    x->ids = service_ids_new(x->conf);
    assert_non_null(x->ids);
    x->ws = workerset_new(x->base, x->procs, x->conf, x->ids, &cbs, x);
    assert_non_null(x->ws);
    if (service_ids_load_keys(x->ids, err, sizeof(err)) < 0)
        fail_msg("keys: %s", err);
    if (workerset_prepare(x->ws, x->conf, err, sizeof(err)) < 0)
        fail_msg("prepare: %s", err);
}

static void make_services(struct test *x, unsigned instances, const char *services)
{
    char tor[32];
    snprintf(tor, sizeof(tor), "'instances':%u", instances);
    make_tor_services(x, tor, services);
}

static void make(struct test *x, unsigned instances)
{
    make_services(x, instances, SVC_WEB);
}

static void test_one(void **state)
{
    struct test *x = *state;
    size_t n;
    char path[256];
    make(x, 1);
    struct worker *const *w = workerset_list(x->ws, &n);
    assert_int_equal(n, 1);
    assert_int_equal(worker_instance(w[0]), 0);
    snprintf(path, sizeof(path), "%s/state/instances", x->dir);
    assert_int_equal(access(path, F_OK), -1); /* nothing new on disk */
    workerset_stop(x->ws);
    assert_int_equal(x->n_stopped, 1);
}

static void test_two(void **state)
{
    struct test *x = *state;
    size_t n;
    char path[256], err[768];
    struct onion_key k;
    make(x, 2);
    struct worker *const *w = workerset_list(x->ws, &n);
    assert_int_equal(n, 2);
    assert_int_equal(worker_instance(w[0]), 0);
    assert_int_equal(worker_instance(w[1]), 1);
    snprintf(path, sizeof(path), "%s/state/instances/2/keys/web", x->dir);
    if (keys_load(path, &k, err, sizeof(err)) < 0)
        fail_msg("copy: %s", err);
    assert_string_equal(k.address, service_ids_at(x->ids, 0)->address);
    onion_key_clear(&k);
    /* restart-tor before the tors run: refused, nothing rolls; after stop: refused as shutting down */
    char msg[300];
    assert_int_equal(workerset_restart_tor(x->ws, x->conf, "test", msg, sizeof(msg)), -1);
    assert_non_null(strstr(msg, "tor 1 is not up"));
    assert_false(roll_is_running(workerset_roll(x->ws)));
    workerset_stop(x->ws);
    assert_int_equal(workerset_restart_tor(x->ws, x->conf, "test", msg, sizeof(msg)), -1);
    assert_non_null(strstr(msg, "shutting down"));
    assert_int_equal(x->n_stopped, 1); /* once, for both */
}

/* workerset_served on either basis answers only for a service the single-onion tors publish: with no
 * upload nor fetch yet, for web "not known" (tor -1, source none) on each basis; for an anonymous service
 * (its own tor), an Onionbalance frontend (Onionbalance publishes it) and an address of no service,
 * false. (Which tor, once they uploaded and were fetched: test_descriptor.c's test_served_copies.) */
static void test_served(void **state)
{
    static const enum served_basis bases[] = {SERVED_BASIS_ACCEPTED, SERVED_BASIS_FETCHED};
    struct test *x = *state;
    struct served_result r;
    make_services(x, 2, SVC_WEB "," SVC_ANON "," SVC_FRONT);
    const char *web = service_ids_at(x->ids, 0)->address, *anon = service_ids_at(x->ids, 1)->address;
    const char *front = service_ids_at(x->ids, 2)->address;
    assert_int_equal(strlen(web), 56);
    assert_int_equal(strlen(anon), 56);
    assert_int_equal(strlen(front), 56);
    for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
        r.tor = 7;
        assert_true(workerset_served(x->ws, web, bases[b], &r));
        assert_int_equal(r.tor, -1);
        assert_int_equal(r.source, SERVED_SOURCE_NONE);
        assert_false(workerset_served(x->ws, anon, bases[b], &r));
        assert_int_equal(r.tor, -1);
        assert_false(workerset_served(x->ws, front, bases[b], &r));
        assert_false(workerset_served(x->ws, "2gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4ad", bases[b], &r));
        assert_false(workerset_served(x->ws, "", bases[b], &r));
    }
}

/* tor.tors_per_service 2 of 3: each tor hosts exactly the services placement.c puts on it (the known
 * answers of test_placement.c: www and api on tors 2 and 3, static and web on tors 1 and 3), its status
 * row counts them, and only a tor hosting a service holds a copy of its key. */
static void test_sharded(void **state)
{
    static const struct {
        const char *name;
        unsigned mask;
    } want[] = {{"www", 6}, {"static", 5}, {"api", 6}, {"web", 5}};
    static const json_int_t per_tor[] = {2, 2, 4};
    struct test *x = *state;
    char services[1024], path[256];
    size_t used = 0, n;
    for (size_t i = 0; i < 4; i++)
        used += (size_t)snprintf(services + used, sizeof(services) - used,
                                 "%s{'name':'%s','ports':[{'virtual':80,'target':'127.0.0.1:%zu'}]}", i ? "," : "",
                                 want[i].name, 8080 + i);
    make_tor_services(x, "'instances':3,'tors_per_service':2", services);
    struct worker *const *w = workerset_list(x->ws, &n);
    assert_int_equal(n, 3);
    for (unsigned k = 0; k < 3; k++) {
        for (size_t i = 0; i < 4; i++) {
            bool here = want[i].mask >> k & 1u;
            assert_int_equal(worker_hosts(w[k], i), here);
            if (k == 0)
                continue; /* tor 1 uses key_dir itself */
            snprintf(path, sizeof(path), "%s/state/instances/%u/keys/%s", x->dir, k + 1, want[i].name);
            if (here != (access(path, F_OK) == 0))
                fail_msg("tor %u, %s: a key copy %s, but it is %shosted there", k + 1, want[i].name,
                         here ? "is missing" : "exists", here ? "" : "not ");
        }
        json_t *row = worker_tor_to_json(w[k]);
        assert_non_null(row);
        assert_int_equal(json_integer_value(json_object_get(row, "services")), per_tor[k]);
        json_decref(row);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two, setup, teardown),
        cmocka_unit_test_setup_teardown(test_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sharded, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
