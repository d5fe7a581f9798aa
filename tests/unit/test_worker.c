/* test_worker.c — unit tests for sidecar/fleet/worker.c, one tor and its per-tor state, in attach mode against
 * the scripted fake control port (tests/fake/fake_ctl.c) on a real event loop, with real keys in a
 * private temporary directory.
 *
 * Why: the worker is what wires a tor's control connection to the services' SETCONF state, the
 * descriptor tracker and the verifier; a step missed on a new connection (or on a lost one) leaves a
 * tor without services, or a status that reports a dead tor's uploads.
 *
 * Covers: a good tor -> ready(), then the services handed over (GETCONF HiddenServiceOptions, one SETCONF
 * of our service) and the verifier's mode check on the same connection, bootstrapped(), an HS_DESC
 * UPLOADED counted for the service and its descriptor tracked; the connection closed -> lost() with
 * why, worker_problem() says so, the upload state is reset and nothing is reachable through it; a tor
 * that is not single-onion -> failed() naming the option, no ready(), nothing handed over; worker_stop
 * removes our services (a bare SETCONF HiddenServiceDir), then closes -> stopped(); a reload adding a
 * service -> one SETCONF with both, and the tracker and verifier know the new address. */
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

#include "sidecar/config/config.h"
#include "sidecar/publish/descriptor.h"
#include "sidecar/identity/keys.h"
#include "sidecar/core/log.h"
#include "sidecar/core/proc.h"
#include "sidecar/publish/service.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/tor/tor.h"
#include "sidecar/publish/verify.h"
#include "sidecar/fleet/worker.h"
#include "tests/fake/fake_ctl.h"
#include "tests/fake/tmpdir.h"
#include "tests/fake/tor_script.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define LOOP_BOUND_MS 5000

#define FP1 "BCFAC56464F954D03B5A872B11997E92B451570A"

struct test {
    struct event_base *base;
    struct proc_mgr *procs;
    struct fake_ctl *fake;
    struct config *conf, *conf2;
    struct service_ids *ids;
    struct worker *w;
    char dir[64];
    char address[64];               /* service a's, when made before the worker (make_key_a) */
    char text[512];                 /* a SEND step built at run time (it holds that address) */
    int n_ready, n_boot, n_lost, n_failed, n_stopped;
    char why[512];
};

static void on_ready(struct worker *w, void *arg)
{
    struct test *x = arg;
    assert_ptr_equal(w, x->w);
    x->n_ready++;
}

static void on_bootstrapped(struct worker *w, void *arg)
{
    struct test *x = arg;
    (void)w;
    x->n_boot++;
}

static void on_lost(struct worker *w, const char *why, void *arg)
{
    struct test *x = arg;
    (void)w;
    x->n_lost++;
    snprintf(x->why, sizeof(x->why), "%s", why);
}

static void on_failed(struct worker *w, const char *why, void *arg)
{
    struct test *x = arg;
    (void)w;
    x->n_failed++;
    snprintf(x->why, sizeof(x->why), "%s", why);
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
    assert_int_equal(tmpdir_make(x->dir, sizeof(x->dir), "test_worker"), 0);
    char path[128];
    snprintf(path, sizeof(path), "%s/state", x->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/state/keys", x->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    log_set_level(getenv("TEST_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_WARN);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct test *x = *state;
    worker_free(x->w);
    service_ids_free(x->ids);
    config_free(x->conf);
    config_free(x->conf2);
    fake_ctl_free(x->fake);
    proc_mgr_free(x->procs);
    event_base_free(x->base);
    tmpdir_remove(x->dir);
    free(x);
    return 0;
}

/* An attach-mode config for the fake with `services` (JSON, ' for "). */
static struct config *load_conf(struct test *x, const char *services)
{
    char json[2048], err[512];
    int n = snprintf(json, sizeof(json),
                     "{'state_dir':'%s/state','run_dir':'%s/run','tor':{'mode':'attach','control_socket':'%s',"
                     "'command_timeout':2,'restart_backoff_max':1},'services':[%s]}",
                     x->dir, x->dir, fake_ctl_unix_path(x->fake), services);
    assert_true(n > 0 && (size_t)n < sizeof(json));
    for (char *q = json; *q; q++)
        *q = *q == '\'' ? '"' : *q;
    struct config *c = config_load_string(json, strlen(json), err, sizeof(err));
    if (!c)
        fail_msg("config: %s\n  %s", err, json);
    return c;
}

#define SVC_A "{'name':'a','ports':[{'virtual':80,'target':'127.0.0.1:8080'}]}"
#define SVC_B "{'name':'b','ports':[{'virtual':81,'target':'127.0.0.1:8081'}]}"

/* The key of service a, made before the worker loads it, so that a script can hold its address. */
static void make_key_a(struct test *x)
{
    char dir[128], err[512];
    struct onion_key k;
    snprintf(dir, sizeof(dir), "%s/state/keys/a", x->dir);
    if (keys_load_or_create(dir, &k, NULL, err, sizeof(err)) < 0)
        fail_msg("key: %s", err);
    snprintf(x->address, sizeof(x->address), "%s", k.address);
    onion_key_clear(&k);
}

/* The fake playing `script`, a config with service a, a worker with its keys loaded. Not started. */
static void make_worker(struct test *x, const struct fake_ctl_step *script, size_t n)
{
    static const struct worker_callbacks cbs = {
        .ready = on_ready,
        .bootstrapped = on_bootstrapped,
        .lost = on_lost,
        .failed = on_failed,
        .stopped = on_stopped,
    };
    char err[512];
    x->fake = fake_ctl_new(x->base, false, script, n, err, sizeof(err));
    if (!x->fake)
        fail_msg("fake: %s", err);
    x->conf = load_conf(x, SVC_A);
    x->ids = service_ids_new(x->conf);
    assert_non_null(x->ids);
    x->w = worker_new(x->base, x->procs, x->conf, x->ids, &cbs, x);
    assert_non_null(x->w);
    if (service_ids_load_keys(x->ids, err, sizeof(err)) < 0)
        fail_msg("service_ids_load_keys: %s", err);
    worker_sync_services(x->w);
    assert_int_equal(worker_hand_over(x->w, x->conf, err, sizeof(err)), 0); /* nothing to hand over */
    if (x->address[0])
        assert_string_equal(worker_service_address(x->w, 0), x->address);
}

static void start(struct test *x)
{
    char err[512];
    if (worker_start(x->w, err, sizeof(err)) < 0)
        fail_msg("worker_start: %s", err);
}

/* The tor's mode as verify.c judged it ("circuits": mode.state) is `want`. */
static void assert_mode_state(const struct worker *w, const char *want)
{
    json_t *c = worker_circuits_to_json(w);
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(json_object_get(c, "mode"), "state")), want);
    json_decref(c);
}

static const char *address_a(const struct test *x)
{
    return worker_service_address(x->w, 0);
}

static bool fake_failed(const struct test *x)
{
    return fake_ctl_failure(x->fake) != NULL;
}

static bool uploaded(void *arg)
{
    struct test *x = arg;
    return (x->n_boot > 0 && worker_service_uploaded(x->w, 0)) || x->n_failed || fake_failed(x);
}

static bool lost(void *arg)
{
    struct test *x = arg;
    return x->n_lost > 0 || x->n_failed || fake_failed(x);
}

static bool failed(void *arg)
{
    struct test *x = arg;
    return x->n_failed > 0 || fake_failed(x);
}

static bool stopped(void *arg)
{
    struct test *x = arg;
    return x->n_stopped > 0 || fake_failed(x);
}

static bool booted(void *arg)
{
    struct test *x = arg;
    return x->n_boot > 0 || x->n_failed || fake_failed(x);
}

static bool script_done(void *arg)
{
    struct test *x = arg;
    return fake_ctl_done(x->fake) || fake_failed(x);
}

static void check_fake(const struct test *x)
{
    if (fake_ctl_failure(x->fake))
        fail_msg("fake control port: %s", fake_ctl_failure(x->fake));
}

static void test_good_tor_then_lost(void **state)
{
    struct test *x = *state;
    make_key_a(x);
    snprintf(x->text, sizeof(x->text), "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", x->address);
    const struct fake_ctl_step script[] = {
        HANDED_OVER,
        {FAKE_CTL_SEND, x->text, 0},
        {FAKE_CTL_PAUSE, NULL, 300},
        {FAKE_CTL_CLOSE, NULL, 0},
    };
    make_worker(x, script, ARRAY_LEN(script));
    start(x);

    assert_int_equal(fake_ctl_run_until(x->base, uploaded, x, LOOP_BOUND_MS), 0);
    check_fake(x);
    assert_int_equal(x->n_failed, 0);
    assert_int_equal(x->n_ready, 1);
    assert_int_equal(x->n_boot, 1);
    assert_int_equal(worker_tor_state(x->w), TOR_RUNNING);
    assert_string_equal(worker_problem(x->w), "");
    struct descriptor_counts dc;
    assert_int_equal(worker_service_counts(x->w, address_a(x), &dc), 0);
    json_t *v = worker_service_verify_json(x->w, address_a(x));
    assert_string_equal(json_string_value(json_object_get(v, "verdict")), "unverified");
    json_decref(v);
    assert_null(worker_service_violation(x->w, address_a(x)));
    assert_mode_state(x->w, "ok");

    assert_int_equal(fake_ctl_run_until(x->base, lost, x, LOOP_BOUND_MS), 0);
    check_fake(x);
    assert_int_equal(x->n_lost, 1);
    assert_true(x->why[0]);
    assert_string_equal(worker_problem(x->w), x->why);
    assert_false(worker_service_uploaded(x->w, 0));
    assert_false(worker_service_reachable(x->w, address_a(x)));
    struct worker *ws[] = {x->w};
    assert_false(workers_service_reachable(ws, 1, address_a(x)));
    assert_mode_state(x->w, "unknown");
    assert_null(worker_mode_violation(x->w));
}

static void test_not_single_onion(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {
        AUTH_AND_SETUP("250-HiddenServiceSingleHopMode=0\r\n250 HiddenServiceNonAnonymousMode=1\r\n", GOOD_GETINFO),
        {FAKE_CTL_EXPECT_EOF, NULL, 0},
    };
    make_worker(x, script, ARRAY_LEN(script));
    start(x);
    assert_int_equal(fake_ctl_run_until(x->base, failed, x, LOOP_BOUND_MS), 0);
    check_fake(x);
    assert_int_equal(x->n_failed, 1);
    assert_int_equal(x->n_ready, 0);
    if (!strstr(x->why, "HiddenServiceSingleHopMode is not 1"))
        fail_msg("failed() said \"%s\"", x->why);
    /* the problem is kept for the status line, cut to its buffer */
    assert_true(strlen(worker_problem(x->w)) > 100);
    assert_memory_equal(worker_problem(x->w), x->why, strlen(worker_problem(x->w)));
    assert_false(worker_service_reachable(x->w, address_a(x)));
}

static void test_stop(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {
        HANDED_OVER,
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        {FAKE_CTL_EXPECT, "SETCONF HiddenServiceDir", 0}, /* control-spec 3.1: a bare key resets the group */
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        {FAKE_CTL_EXPECT_EOF, NULL, 0},
    };
    make_worker(x, script, ARRAY_LEN(script));
    start(x);
    assert_int_equal(fake_ctl_run_until(x->base, booted, x, LOOP_BOUND_MS), 0);
    check_fake(x);
    assert_int_equal(x->n_stopped, 0);
    worker_stop(x->w);
    assert_int_equal(fake_ctl_run_until(x->base, stopped, x, LOOP_BOUND_MS), 0);
    check_fake(x);
    assert_int_equal(x->n_stopped, 1);
    assert_false(worker_service_reachable(x->w, address_a(x)));
}

static void test_reconfigure_adds_service(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {
        HANDED_OVER,
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        {FAKE_CTL_EXPECT_PREFIX, "SETCONF HiddenServiceDir=", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
    };
    make_worker(x, script, ARRAY_LEN(script));
    start(x);
    assert_int_equal(fake_ctl_run_until(x->base, booted, x, LOOP_BOUND_MS), 0);
    check_fake(x);

    char err[512];
    bool tor_changed = false;
    x->conf2 = load_conf(x, SVC_A "," SVC_B);
    if (service_ids_reconfigure(x->ids, x->conf2, err, sizeof(err)) < 0 ||
        worker_reconfigure(x->w, x->conf2, &tor_changed, err, sizeof(err)) < 0)
        fail_msg("worker_reconfigure: %s", err);
    assert_true(tor_changed);
    assert_int_equal(fake_ctl_run_until(x->base, script_done, x, LOOP_BOUND_MS), 0); /* the SETCONF of both */
    check_fake(x);
    assert_int_equal(worker_service_count(x->w), 2);
    const char *b = worker_service_address(x->w, 1);
    assert_int_equal(strlen(b), 56);
    struct descriptor_counts dc;
    assert_int_equal(worker_service_counts(x->w, b, &dc), 0);
    json_t *v = worker_service_verify_json(x->w, b);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "service")), "b");
    json_decref(v);

    /* a data-path change only: nothing for tor */
    struct config *c3 = load_conf(x, SVC_A ",{'name':'b','ports':[{'virtual':81,'target':'127.0.0.1:9999'}]}");
    assert_int_equal(service_ids_reconfigure(x->ids, c3, err, sizeof(err)), 0);
    assert_int_equal(worker_reconfigure(x->w, c3, &tor_changed, err, sizeof(err)), 0);
    assert_false(tor_changed);
    config_free(x->conf2);
    x->conf2 = c3;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_tor_then_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_single_onion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconfigure_adds_service, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
