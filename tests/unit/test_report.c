/* test_report.c — unit tests for sidecar/ops/report.c, the status socket's documents and the metrics text,
 * built from real parts: a worker (attach mode, against the scripted fake control port when a tor is
 * needed), a proxy with its pools on unix sockets in a private temporary directory, a status server.
 *
 * Why: `onionfront status`, monitoring and systemd read these; a wrong "state" pages someone at night or
 * hides an outage, and a missing key breaks the summary.
 *
 * Covers: before tor: "status" is down with the tor's state, the service without an upload and a pool
 * without a backend up as problems, the tor object (mode, state, null version/pid) and the service
 * totals; shutting down: said once, instead of the tor's state; the systemd status line for each; a tor
 * running with the upload confirmed and every pool up: "ok" with no problems, "running: 0 of 1 services
 * reachable"; "services" with the descriptor and verdict of each service; "circuits" with the mode;
 * "backends" with each pool's streams; the metrics text with every module's families (and without a
 * status server); a refused service: its whole refusal once in "problems" instead of its upload, "refused"
 * in "services", not reachable for Onion-Location; a port with some backends down: degraded, the down ones
 * named with their last result (a drained one is not down), with the tor running too; start-up: a tor
 * bootstrapping within tor.bootstrap_timeout of the start is "starting", past it "down". */
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
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/identity/keys.h"
#include "sidecar/core/log.h"
#include "sidecar/ops/onionloc.h"
#include "sidecar/core/proc.h"
#include "sidecar/datapath/proxy.h"
#include "sidecar/ops/report.h"
#include "sidecar/publish/service.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/ops/status.h"
#include "sidecar/core/version.h"
#include "sidecar/fleet/worker.h"
#include "sidecar/fleet/workerset.h"
#include "sidecar/datapath/backend.h"
#include "tests/fake/fake_ctl.h"
#include "tests/fake/tmpdir.h"
#include "tests/fake/tor_script.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define LOOP_BOUND_MS 5000
#define FP1 "BCFAC56464F954D03B5A872B11997E92B451570A"

/* Service a: port 80 with a backend that stays up (no checks), port 81 with only a drained one. */
#define SVC_A                                                                                                \
    "{'name':'a','ports':[{'virtual':80,'target':'127.0.0.1:8080','health':{'type':'none'}},"               \
    "{'virtual':81,'backends':[{'address':'127.0.0.1:8081','weight':0}],'health':{'type':'none'}}]}"
#define SVC_A_UP "{'name':'a','ports':[{'virtual':80,'target':'127.0.0.1:8080','health':{'type':'none'}}]}"

struct test {
    struct event_base *base;
    struct proc_mgr *procs;
    struct fake_ctl *fake;
    struct config *conf;
    struct service_ids *ids;
    struct workerset *ws;
    struct worker *w; /* the set's one tor */
    struct proxy *proxy;
    struct status_server *status;
    char dir[64];
    char address[64];
    char text[512];
    int n_boot;
    struct report_src src;
};

static void on_ready(struct worker *w, void *arg)
{
    (void)w;
    (void)arg;
}

static void on_bootstrapped(struct worker *w, void *arg)
{
    (void)w;
    ((struct test *)arg)->n_boot++;
}

static void on_lost(struct worker *w, const char *why, void *arg)
{
    (void)w;
    (void)why;
    (void)arg;
}

static void on_failed(struct worker *w, const char *why, void *arg)
{
    (void)w;
    fail_msg("worker failed: %s", why);
    (void)arg;
}

static void on_stopped(struct worker *w, void *arg)
{
    (void)w;
    (void)arg;
}

static int setup(void **state)
{
    struct test *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    x->base = event_base_new();
    x->procs = x->base ? proc_mgr_new(x->base) : NULL;
    assert_non_null(x->procs);
    assert_int_equal(tmpdir_make(x->dir, sizeof(x->dir), "test_report"), 0);
    static const char *const dirs[] = {"state", "state/keys", "run"};
    for (size_t i = 0; i < ARRAY_LEN(dirs); i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", x->dir, dirs[i]);
        assert_int_equal(mkdir(path, 0700), 0);
    }
    /* service a's key, made first so that a script can hold its address */
    char dir[128], err[512];
    struct onion_key k;
    snprintf(dir, sizeof(dir), "%s/state/keys/a", x->dir);
    if (keys_load_or_create(dir, &k, NULL, err, sizeof(err)) < 0)
        fail_msg("key: %s", err);
    snprintf(x->address, sizeof(x->address), "%s", k.address);
    onion_key_clear(&k);
    log_set_level(getenv("TEST_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_ERROR);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct test *x = *state;
    status_server_free(x->status);
    workerset_free(x->ws);
    service_ids_free(x->ids);
    proxy_free(x->proxy);
    config_free(x->conf);
    fake_ctl_free(x->fake);
    proc_mgr_free(x->procs);
    event_base_free(x->base);
    tmpdir_remove(x->dir);
    free(x);
    return 0;
}

static json_t *no_doc(void *arg)
{
    (void)arg;
    return NULL;
}

/* The parts for `services` (' for "), with the fake playing `script` as the attached tor. */
static void make_parts(struct test *x, const char *services, const struct fake_ctl_step *script, size_t n)
{
    static const struct worker_callbacks cbs = {on_ready, on_bootstrapped, on_lost, on_failed, on_stopped};
    char json[2048], err[512];
    x->fake = fake_ctl_new(x->base, false, script, n, err, sizeof(err));
    if (!x->fake)
        fail_msg("fake: %s", err);
    snprintf(json, sizeof(json),
             "{'state_dir':'%s/state','run_dir':'%s/run','tor':{'mode':'attach','control_socket':'%s'},"
             "'services':[%s]}",
             x->dir, x->dir, fake_ctl_unix_path(x->fake), services);
    for (char *q = json; *q; q++)
        *q = *q == '\'' ? '"' : *q;
    x->conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!x->conf)
        fail_msg("config: %s\n  %s", err, json);
    x->ids = service_ids_new(x->conf);
    assert_non_null(x->ids);
    size_t n_tors;
    x->ws = workerset_new(x->base, x->procs, x->conf, x->ids, &cbs, x);
    assert_non_null(x->ws);
    x->w = workerset_list(x->ws, &n_tors)[0];
    assert_int_equal(n_tors, 1);
    if (service_ids_load_keys(x->ids, err, sizeof(err)) < 0)
        fail_msg("keys: %s", err);
    worker_sync_services(x->w);
    struct proxy_hooks hooks = {0};
    x->proxy = proxy_new(x->base, x->conf, &hooks, err, sizeof(err));
    if (!x->proxy)
        fail_msg("proxy_new: %s", err);
    struct status_providers providers = {.status = no_doc};
    x->status = status_server_new(x->base, &providers);
    assert_non_null(x->status);
    x->src = (struct report_src){.conf = x->conf, .ids = x->ids, .workerset = x->ws,
                                 .proxy = x->proxy, .status = x->status, .started_wall = 1700000000};
    clock_gettime(CLOCK_MONOTONIC, &x->src.started);
}

/* The "problems" of "status" as one string, each followed by "|". */
static void problems_of(const json_t *status, char *out, size_t len)
{
    size_t i, used = 0;
    json_t *p;
    out[0] = '\0';
    json_array_foreach(json_object_get(status, "problems"), i, p) {
        int k = snprintf(out + used, len - used, "%s|", json_string_value(p));
        assert_true(k > 0 && (size_t)k < len - used);
        used += (size_t)k;
    }
}

static void test_before_tor(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {{FAKE_CTL_PAUSE, NULL, 1}};
    make_parts(x, SVC_A, script, ARRAY_LEN(script));
    char problems[2048], line[256];

    json_t *st = report_status_json(&x->src);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "state")), "down");
    assert_string_equal(json_string_value(json_object_get(st, "version")), ONIONFRONT_VERSION);
    assert_int_equal(json_integer_value(json_object_get(st, "pid")), getpid());
    assert_int_equal(json_integer_value(json_object_get(st, "started")), 1700000000);
    problems_of(st, problems, sizeof(problems));
    assert_string_equal(problems, "tor is stopped|service a: no descriptor upload confirmed yet|"
                                  "service a port 81: no backend is up|");
    json_t *tor = json_object_get(st, "tor");
    assert_string_equal(json_string_value(json_object_get(tor, "mode")), "attach");
    assert_string_equal(json_string_value(json_object_get(tor, "state")), "stopped");
    assert_true(json_is_null(json_object_get(tor, "version")));
    assert_true(json_is_null(json_object_get(tor, "pid")));
    /* "tors": one row per worker, with the instance number and a verdict */
    json_t *tors = json_object_get(st, "tors");
    assert_int_equal(json_array_size(tors), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(tors, 0), "instance")), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tors, 0), "verdict")), "stopped");
    assert_true(json_is_null(json_object_get(json_array_get(tors, 0), "uptime_seconds")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "services"), "total")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "services"), "uploaded")), 0);
    json_decref(st);
    report_status_line(&x->src, 0, line, sizeof(line));
    assert_string_equal(line, "tor stopped");

    x->src.shutting_down = true;
    st = report_status_json(&x->src);
    problems_of(st, problems, sizeof(problems));
    assert_string_equal(problems, "onionfront is shutting down|service a: no descriptor upload confirmed yet|"
                                  "service a port 81: no backend is up|");
    assert_string_equal(json_string_value(json_object_get(st, "state")), "down");
    json_decref(st);
    report_status_line(&x->src, 0, line, sizeof(line));
    assert_string_equal(line, "stopping: removing the services from tor");

    /* "services" before the tor: the address is known, no upload, no descriptor tracked yet */
    json_t *svcs = report_services_json(&x->src);
    assert_int_equal(json_array_size(svcs), 1);
    json_t *a = json_array_get(svcs, 0);
    char want[80];
    snprintf(want, sizeof(want), "%s.onion", x->address);
    assert_string_equal(json_string_value(json_object_get(a, "address")), want);
    assert_false(json_is_true(json_object_get(a, "uploaded")));
    assert_string_equal(json_string_value(json_object_get(a, "verdict")), "unverified");
    json_decref(svcs);

    /* "backends": both pools, port 81 not up */
    json_t *bk = report_backends_json(&x->src);
    assert_int_equal(json_array_size(bk), 2);
    size_t i;
    json_t *pool;
    json_array_foreach(bk, i, pool) {
        bool p80 = json_integer_value(json_object_get(pool, "virtual_port")) == 80;
        assert_int_equal(json_is_true(json_object_get(pool, "up")), p80);
        assert_non_null(json_object_get(json_object_get(pool, "streams"), "listening"));
    }
    json_decref(bk);

    json_t *circ = report_circuits_json(&x->src);
    assert_string_equal(json_string_value(json_object_get(json_object_get(circ, "mode"), "state")), "unknown");
    json_decref(circ);
}

/* Every module's families, with and without a status server. */
static void test_metrics(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {{FAKE_CTL_PAUSE, NULL, 1}};
    make_parts(x, SVC_A, script, ARRAY_LEN(script));
    static const char *const want[] = {
        "onionfront_build_info{version=\"" ONIONFRONT_VERSION "\"} 1\n",
        "onionfront_start_time_seconds 1700000000\n",
        "onionfront_tor_up 0\n",
        "onionfront_tor_restarts_total 0\n",
        "onionfront_services{state=\"pending\"} 1\n",
        "onionfront_service_up{service=\"a\"} 0\n",
        "onionfront_status_connections_total{result=\"accepted\"} 0\n",
        "onionfront_status_connections_total{result=\"over_uid_limit\"} 0\n",
        "onionfront_status_denied_total 0\n",
        "onionfront_service_reapplied_total{service=\"a\"} 0\n",
        "# TYPE onionfront_metrics_http_connections_total counter\n",
        "# TYPE onionfront_descriptor_uploads_confirmed_total counter\n",
        "# TYPE onionfront_circuits_total counter\n",
        "# TYPE onionfront_tor_mode_ok gauge\n",
        "# TYPE onionfront_descriptor_served_by gauge\n",
        "onionfront_descriptor_served_by{service=\"a\",instance=\"1\"} 0\n", /* nothing uploaded: unknown */
    };
    for (int with_status = 1; with_status >= 0; with_status--) {
        x->src.status = with_status ? x->status : NULL;
        char *text = report_metrics_text(&x->src);
        assert_non_null(text);
        for (size_t i = 0; i < ARRAY_LEN(want); i++)
            if (!strstr(text, want[i]))
                fail_msg("metrics without \"%s\":\n%s", want[i], text);
        assert_null(strstr(text, "\nonionfront_tor_bootstrap_progress ")); /* no sample while unknown */
        free(text);
    }
}

/* A known service whose key went away is refused (service_id.c): "status" names it once, whole, instead
 * of its upload; "services" says why; Onion-Location does not list it as reachable. */
static void test_refused(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {{FAKE_CTL_PAUSE, NULL, 1}};
    make_parts(x, SVC_A, script, ARRAY_LEN(script));
    char path[256], err[512], problems[4096];
    snprintf(path, sizeof(path), "%s/state/keys/a", x->dir);
    assert_int_equal(rename(path, strcat(strcpy(err, path), ".gone")), 0);
    assert_int_equal(service_ids_reconfigure(x->ids, x->conf, err, sizeof(err)), 0);
    const char *why = service_id_refusal(service_ids_at(x->ids, 0));
    assert_non_null(why);
    assert_true(strlen(why) > 512); /* longer than a formatted problem: it must not be cut */

    json_t *st = report_status_json(&x->src);
    problems_of(st, problems, sizeof(problems));
    char want[4096];
    snprintf(want, sizeof(want), "%s|tor is stopped|service a port 81: no backend is up|", why);
    assert_string_equal(problems, want);
    json_decref(st);
    json_t *svcs = report_services_json(&x->src);
    assert_string_equal(json_string_value(json_object_get(json_array_get(svcs, 0), "refused")), why);
    assert_true(json_is_null(json_object_get(json_array_get(svcs, 0), "address")));
    json_decref(svcs);
    struct onionloc_entry entries[2];
    size_t reachable = 9;
    assert_int_equal(report_reachability(&x->src, entries, 2, &reachable), 1);
    assert_int_equal(reachable, 0);
    assert_false(entries[0].reachable);
    assert_string_equal(entries[0].svc->name, "a");
}

static bool uploaded(void *arg)
{
    struct test *x = arg;
    return (x->n_boot > 0 && worker_service_uploaded(x->w, 0)) || fake_ctl_failure(x->fake);
}

static void test_running_ok(void **state)
{
    struct test *x = *state;
    snprintf(x->text, sizeof(x->text), "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", x->address);
    const struct fake_ctl_step script[] = {HANDED_OVER, {FAKE_CTL_SEND, x->text, 0}};
    make_parts(x, SVC_A_UP, script, ARRAY_LEN(script));
    char err[256], problems[2048], line[256];
    assert_int_equal(worker_start(x->w, err, sizeof(err)), 0);
    assert_int_equal(fake_ctl_run_until(x->base, uploaded, x, LOOP_BOUND_MS), 0);
    if (fake_ctl_failure(x->fake))
        fail_msg("fake control port: %s", fake_ctl_failure(x->fake));

    json_t *st = report_status_json(&x->src);
    problems_of(st, problems, sizeof(problems));
    assert_string_equal(problems, "");
    assert_string_equal(json_string_value(json_object_get(st, "state")), "ok");
    json_t *tor = json_object_get(st, "tor");
    assert_string_equal(json_string_value(json_object_get(tor, "state")), "running");
    assert_string_equal(json_string_value(json_object_get(tor, "version")), "0.4.9.11");
    assert_int_equal(json_integer_value(json_object_get(tor, "bootstrap_progress")), 100);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "services"), "uploaded")), 1);
    json_decref(st);
    report_status_line(&x->src, 0, line, sizeof(line));
    assert_string_equal(line, "running: 0 of 1 services reachable");

    json_t *svcs = report_services_json(&x->src);
    json_t *a = json_array_get(svcs, 0);
    assert_true(json_is_true(json_object_get(a, "uploaded")));
    json_t *desc = json_object_get(a, "descriptor");
    assert_non_null(desc);
    /* one tor, nothing uploaded or fetched: whose descriptor HSDirs serve is not known */
    assert_true(json_is_null(json_object_get(a, "served_by")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(a, "served"), "source")), "none");
    assert_string_equal(json_string_value(json_object_get(desc, "service")), "a");
    assert_string_equal(json_string_value(json_object_get(json_object_get(a, "verify"), "verdict")), "unverified");
    /* "services" leaves the per-HSDir lists out (their counts stay); "services-detail" has them */
    assert_null(json_object_get(json_object_get(a, "served"), "hsdirs"));
    assert_non_null(json_object_get(json_object_get(a, "served"), "hsdirs_answered"));
    json_decref(svcs);
    svcs = report_services_detail_json(&x->src);
    assert_true(json_is_array(json_object_get(json_object_get(json_array_get(svcs, 0), "served"), "hsdirs")));
    json_decref(svcs);

    json_t *circ = report_circuits_json(&x->src);
    assert_string_equal(json_string_value(json_object_get(json_object_get(circ, "mode"), "state")), "ok");
    json_decref(circ);

    char *text = report_metrics_text(&x->src);
    assert_non_null(strstr(text, "onionfront_tor_up 1\n"));
    assert_non_null(strstr(text, "onionfront_tor_bootstrap_progress 100\n"));
    assert_non_null(strstr(text, "onionfront_service_up{service=\"a\"} 1\n"));
    free(text);
}

/* A port with one of its backends down is degraded, the down one named with its last result; a drained
 * one is not down; all down is "no backend is up" alone. */
static void test_some_backends_down(void **state)
{
    struct test *x = *state;
    static const struct fake_ctl_step script[] = {{FAKE_CTL_PAUSE, NULL, 1}};
    make_parts(x,
               "{'name':'a','ports':[{'virtual':80,'health':{'type':'tcp'},'backends':["
               "{'name':'web1','address':'127.0.0.1:8081'},{'name':'web2','address':'127.0.0.1:8082'},"
               "{'name':'web3','address':'127.0.0.1:8083','weight':0}]}]}",
               script, ARRAY_LEN(script));
    struct backend_pool *pool;
    assert_int_equal(proxy_pools(x->proxy, &pool, 1), 1);
    char problems[2048];
    json_t *st = report_status_json(&x->src);
    problems_of(st, problems, sizeof(problems));
    assert_null(strstr(problems, "port 80")); /* all up (web3 drained): no problem */
    json_decref(st);

    backend_passive_failure(backend_pool_get(pool, 1), CHECK_CONNECT_REFUSED, "Connection refused");
    st = report_status_json(&x->src);
    problems_of(st, problems, sizeof(problems));
    assert_string_equal(problems, "tor is stopped|service a: no descriptor upload confirmed yet|"
                                  "service a port 80: 1 of 3 backends up; down: web2 (connect refused: "
                                  "Connection refused)|");
    json_decref(st);

    backend_passive_failure(backend_pool_get(pool, 0), CHECK_RESET, "");
    st = report_status_json(&x->src);
    problems_of(st, problems, sizeof(problems));
    assert_string_equal(problems, "tor is stopped|service a: no descriptor upload confirmed yet|"
                                  "service a port 80: no backend is up|");
    json_decref(st);
}

/* With the tor up and the upload confirmed, one backend of two down: "degraded", not "ok". */
static void test_running_degraded(void **state)
{
    struct test *x = *state;
    snprintf(x->text, sizeof(x->text), "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", x->address);
    const struct fake_ctl_step script[] = {HANDED_OVER, {FAKE_CTL_SEND, x->text, 0}};
    make_parts(x,
               "{'name':'a','ports':[{'virtual':80,'health':{'type':'tcp'},'backends':["
               "{'name':'web1','address':'127.0.0.1:8081'},{'name':'web2','address':'127.0.0.1:8082'}]}]}",
               script, ARRAY_LEN(script));
    char err[256], problems[2048];
    assert_int_equal(worker_start(x->w, err, sizeof(err)), 0);
    assert_int_equal(fake_ctl_run_until(x->base, uploaded, x, LOOP_BOUND_MS), 0);
    struct backend_pool *pool;
    assert_int_equal(proxy_pools(x->proxy, &pool, 1), 1);
    backend_passive_failure(backend_pool_get(pool, 1), CHECK_HTTP_STATUS, "HTTP 503");
    json_t *st = report_status_json(&x->src);
    problems_of(st, problems, sizeof(problems));
    assert_string_equal(problems, "service a port 80: 1 of 2 backends up; down: web2 (http status: HTTP 503)|");
    assert_string_equal(json_string_value(json_object_get(st, "state")), "degraded");
    json_decref(st);
}

static bool bootstrapping(void *arg)
{
    struct test *x = arg;
    return worker_tor_state(x->w) == TOR_BOOTSTRAPPING || fake_ctl_failure(x->fake);
}

/* Start-up is not an alarm: within tor.bootstrap_timeout of the start, a tor bootstrapping and a service
 * waiting for its first upload are "starting" (check: OK); past it, a tor that has not bootstrapped is
 * "down" (CRITICAL) and says why; a problem that is not one of start-up is "degraded" at any time. */
static void test_starting(void **state)
{
    struct test *x = *state;
    const struct fake_ctl_step script[] = {
        AUTH_AND_SETUP(GOOD_GETCONF, GOOD_GETINFO),
        {FAKE_CTL_EXPECT, HS_OPTIONS_LINE, 0},
        {FAKE_CTL_EXPECT, GETCONF_LINE, 0},
        {FAKE_CTL_EXPECT, VERIFY_INFO_LINE, 0},
        {FAKE_CTL_EXPECT, BOOTSTRAP_LINE, 0},
        {FAKE_CTL_SEND, NO_HS_OPTIONS GOOD_GETCONF VERIFY_INFO
         "250-status/bootstrap-phase=NOTICE BOOTSTRAP PROGRESS=50 TAG=loading_descriptors SUMMARY=\"x\"\r\n"
         "250 OK\r\n", 0},
        {FAKE_CTL_EXPECT_PREFIX, "SETCONF HiddenServiceDir=", 0},
        {FAKE_CTL_SEND, "250 OK\r\n", 0},
        {FAKE_CTL_PAUSE, NULL, LOOP_BOUND_MS}};
    make_parts(x,
               "{'name':'a','ports':[{'virtual':80,'health':{'type':'tcp'},'backends':["
               "{'name':'web1','address':'127.0.0.1:8081'},{'name':'web2','address':'127.0.0.1:8082'}]}]}",
               script, ARRAY_LEN(script));
    char err[256], problems[2048];
    assert_int_equal(worker_start(x->w, err, sizeof(err)), 0);
    assert_int_equal(fake_ctl_run_until(x->base, bootstrapping, x, LOOP_BOUND_MS), 0);
    if (fake_ctl_failure(x->fake))
        fail_msg("fake control port: %s", fake_ctl_failure(x->fake));
    unsigned timeout = x->conf->tor.bootstrap_timeout;
    const struct {
        long ago;          /* onionfront started this many seconds ago */
        bool backend_down; /* and a problem that is not one of start-up */
        const char *state, *first_problem;
    } cases[] = {
        {0, false, "starting", "tor is bootstrapping|"},
        {(long)timeout - 1, false, "starting", "tor is bootstrapping|"},
        {(long)timeout, false, "down", "tor is bootstrapping, not bootstrapped within tor.bootstrap_timeout (300 s) of the start|"},
        {(long)timeout * 10, false, "down", "tor is bootstrapping, not bootstrapped within"},
        {0, true, "degraded", "tor is bootstrapping|"},
    };
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        x->src.started = now;
        x->src.started.tv_sec -= cases[i].ago;
        if (cases[i].backend_down) {
            struct backend_pool *pool;
            assert_int_equal(proxy_pools(x->proxy, &pool, 1), 1);
            backend_passive_failure(backend_pool_get(pool, 0), CHECK_RESET, "");
        }
        json_t *st = report_status_json(&x->src);
        problems_of(st, problems, sizeof(problems));
        if (strcmp(json_string_value(json_object_get(st, "state")), cases[i].state) != 0 ||
            strncmp(problems, cases[i].first_problem, strlen(cases[i].first_problem)) != 0)
            fail_msg("case %zu: state %s, problems %s", i, json_string_value(json_object_get(st, "state")),
                     problems);
        assert_non_null(strstr(problems, "|service a: no descriptor upload confirmed yet|"));
        json_decref(st);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_before_tor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_running_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_some_backends_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_running_degraded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_starting, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
