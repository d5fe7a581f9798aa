/* test_reload.c — unit tests for sidecar/reload.c, a reloaded config applied to real running parts (a
 * workerset whose one tor has not started, a proxy on unix sockets, Onion-Location, a status server) in a private
 * temporary directory.
 *
 * Why: a reload must never leave a half-applied config: a refused one keeps the running config in every
 * part, an accepted one reaches every part.
 *
 * Covers: a missing or invalid file and a setting that needs a restart are refused with a message that
 * says why and that the running config stays (the config pointer unchanged); a backend change is
 * applied as "no change for tor"; a service added is applied as "services changed in tor", the config
 * replaced, the worker given the new service with its key and the proxy listening on its port; a reload
 * over Onionbalance's limit of 8 instances in all is refused with the identities restored; a reload
 * whose listeners and health checks do not fit under RLIMIT_NOFILE's hard limit is refused, naming the
 * numbers, with nothing applied. */
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/config/service_socket.h"
#include "sidecar/core/fdbudget.h"
#include "sidecar/core/log.h"
#include "sidecar/ops/onionloc.h"
#include "sidecar/core/proc.h"
#include "sidecar/datapath/proxy.h"
#include "sidecar/reload.h"
#include "sidecar/publish/service.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/ops/status.h"
#include "sidecar/fleet/worker.h"
#include "sidecar/fleet/workerset.h"
#include "tests/fake/onion_addrs.h"
#include "tests/fake/tmpdir.h"

#define SVC_A "{'name':'a','ports':[{'virtual':80,'target':'127.0.0.1:8080'}]}"
#define SVC_A2 "{'name':'a','ports':[{'virtual':80,'target':'127.0.0.1:9090'}]}"
#define SVC_B "{'name':'b','ports':[{'virtual':81,'target':'127.0.0.1:8081'}]}"
#define FRONT8 "{'name':'front','onionbalance':{'frontend':true,'instances':[" TEST_EIGHT_ADDRESSES "]}}"

struct test {
    struct event_base *base;
    struct proc_mgr *procs;
    struct config *conf;
    struct service_ids *ids;
    struct workerset *ws;
    struct worker *w; /* the set's one tor */
    struct proxy *proxy;
    struct onionloc *onionloc;
    struct status_server *status;
    struct reload_parts parts;
    char dir[64], path[128];
    char msg[1200];
};

static void on_worker(struct worker *w, void *arg)
{
    (void)w;
    (void)arg;
}

static void on_worker_why(struct worker *w, const char *why, void *arg)
{
    (void)w;
    (void)why;
    (void)arg;
}

/* Write the config file with `services` (' for ") and tor's control socket (NULL: <dir>/control). */
static void write_conf(struct test *x, const char *control, const char *services)
{
    char json[2048], def[128];
    snprintf(def, sizeof(def), "%s/control", x->dir);
    snprintf(json, sizeof(json),
             "{'state_dir':'%s/state','run_dir':'%s/run','log_level':'error',"
             "'tor':{'mode':'attach','control_socket':'%s'},'services':[%s]}",
             x->dir, x->dir, control ? control : def, services);
    for (char *q = json; *q; q++)
        *q = *q == '\'' ? '"' : *q;
    FILE *f = fopen(x->path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
}

static int setup(void **state)
{
    struct test *x = calloc(1, sizeof(*x));
    static const struct worker_callbacks cbs = {on_worker, on_worker, on_worker_why, on_worker_why, on_worker};
    char err[1024];
    assert_non_null(x);
    log_set_level(LOG_LVL_ERROR);
    x->base = event_base_new();
    x->procs = proc_mgr_new(x->base);
    assert_int_equal(tmpdir_make(x->dir, sizeof(x->dir), "test_reload"), 0);
    snprintf(x->path, sizeof(x->path), "%s/onionfront.json", x->dir);
    char keys[128];
    snprintf(keys, sizeof(keys), "%s/state", x->dir);
    assert_int_equal(mkdir(keys, 0700), 0);
    snprintf(keys, sizeof(keys), "%s/state/keys", x->dir);
    assert_int_equal(mkdir(keys, 0700), 0);
    write_conf(x, NULL, SVC_A);
    x->conf = config_load_file(x->path, err, sizeof(err));
    if (!x->conf)
        fail_msg("config: %s", err);
    x->ids = service_ids_new(x->conf);
    assert_non_null(x->ids);
    x->ws = workerset_new(x->base, x->procs, x->conf, x->ids, &cbs, x);
    assert_non_null(x->ws);
    size_t n_tors;
    x->w = workerset_list(x->ws, &n_tors)[0];
    assert_int_equal(n_tors, 1);
    if (service_ids_load_keys(x->ids, err, sizeof(err)) < 0)
        fail_msg("keys: %s", err);
    if (workerset_prepare(x->ws, x->conf, err, sizeof(err)) < 0)
        fail_msg("prepare: %s", err);
    struct proxy_hooks hooks = {0};
    x->proxy = proxy_new(x->base, x->conf, &hooks, err, sizeof(err));
    if (!x->proxy)
        fail_msg("proxy: %s", err);
    x->onionloc = onionloc_new(x->base, x->procs, &x->conf->onion_location);
    struct status_providers providers = {0};
    x->status = status_server_new(x->base, &providers);
    assert_true(x->onionloc && x->status);
    x->parts = (struct reload_parts){
        .ids = x->ids, .workerset = x->ws, .proxy = x->proxy, .onionloc = x->onionloc, .status = x->status};
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct test *x = *state;
    status_server_free(x->status);
    onionloc_free(x->onionloc);
    workerset_free(x->ws);
    service_ids_free(x->ids);
    proxy_free(x->proxy);
    config_free(x->conf);
    proc_mgr_free(x->procs);
    event_base_free(x->base);
    tmpdir_remove(x->dir);
    free(x);
    return 0;
}

/* Reload and expect a refusal whose message contains `want`; the running config stays. */
static void assert_refused(struct test *x, const char *want)
{
    struct config *before = x->conf;
    assert_int_equal(reload_apply(&x->parts, x->path, &x->conf, x->msg, sizeof(x->msg)), -1);
    assert_ptr_equal(x->conf, before);
    if (!strstr(x->msg, want) || !strstr(x->msg, "; keeping the running config"))
        fail_msg("reload said \"%s\", want \"%s\"", x->msg, want);
}

static void test_refused(void **state)
{
    struct test *x = *state;
    FILE *f = fopen(x->path, "w");
    fputs("{\"services\": [", f);
    fclose(f);
    assert_refused(x, x->path);
    unlink(x->path);
    assert_refused(x, x->path);
    /* another control socket needs a restart (the service added with it is not applied either) */
    write_conf(x, "/run/other/control", SVC_A "," SVC_B);
    assert_refused(x, "tor.control_socket changed, which needs a restart of onionfront");
    assert_int_equal(worker_service_count(x->w), 1);
}

static void test_applied(void **state)
{
    struct test *x = *state;
    char want[400];
    write_conf(x, NULL, SVC_A2);
    assert_int_equal(reload_apply(&x->parts, x->path, &x->conf, x->msg, sizeof(x->msg)), 0);
    snprintf(want, sizeof(want), "applied %s (no change for tor)", x->path);
    assert_string_equal(x->msg, want);
    assert_string_equal(x->conf->services[0].ports[0].backends[0].addr.text, "127.0.0.1:9090");

    write_conf(x, NULL, SVC_A "," SVC_B);
    const struct config *before = x->conf;
    assert_int_equal(reload_apply(&x->parts, x->path, &x->conf, x->msg, sizeof(x->msg)), 0);
    snprintf(want, sizeof(want), "applied %s (services changed in tor)", x->path);
    assert_string_equal(x->msg, want);
    assert_ptr_not_equal(x->conf, before);
    assert_int_equal(x->conf->n_services, 2);
    assert_int_equal(worker_service_count(x->w), 2);
    assert_int_equal(strlen(worker_service_address(x->w, 1)), 56);
    char sock[160];
    assert_int_equal(service_socket_path(x->conf->run_dir, "b", 81, sock, sizeof(sock)), 0);
    assert_int_equal(access(sock, F_OK), 0);
}

/* Onionbalance's limit of 8 instances in all: 8 remote ones are fine at load, and a reload that adds a
 * local instance of the frontend's master (the 9th) is refused before anything is applied, so a running
 * Onionbalance is not stopped by a bad reload. */
static void test_too_many_instances_refused(void **state)
{
    struct test *x = *state;
    char services[2048];
    write_conf(x, NULL, SVC_A "," FRONT8);
    assert_int_equal(reload_apply(&x->parts, x->path, &x->conf, x->msg, sizeof(x->msg)), 0);
    const char *master = service_ids_at(x->ids, 1)->address;
    assert_int_equal(strlen(master), 56);
    snprintf(services, sizeof(services),
             SVC_A "," FRONT8 ",{'name':'inst','ports':[{'virtual':82,'target':'127.0.0.1:8082'}],"
                   "'onionbalance':{'master_address':'%s'}}",
             master);
    write_conf(x, NULL, services);
    assert_refused(x, "service front: 9 Onionbalance instances (remote and local); at most 8");
    /* The identities are the running config's again. */
    assert_int_equal(service_ids_count(x->ids), 2);
    assert_ptr_equal(service_ids_at(x->ids, 1)->conf, &x->conf->services[1]);
}

/* A reload whose listeners and health checks do not fit under RLIMIT_NOFILE's hard limit is refused
 * before anything is applied, naming the numbers. In a child process: a lowered hard limit cannot be
 * raised again. */
static void test_fd_limit_refused(void **state)
{
    struct test *x = *state;
    /* a and c's 10 ports: 11 listeners and 11 checks (tcp, the default) */
    write_conf(x, NULL, SVC_A ",{'name':'c','ports':[{'virtual':1,'target':'127.0.0.1:1'},"
                              "{'virtual':2,'target':'127.0.0.1:2'},{'virtual':3,'target':'127.0.0.1:3'},"
                              "{'virtual':4,'target':'127.0.0.1:4'},{'virtual':5,'target':'127.0.0.1:5'},"
                              "{'virtual':6,'target':'127.0.0.1:6'},{'virtual':7,'target':'127.0.0.1:7'},"
                              "{'virtual':8,'target':'127.0.0.1:8'},{'virtual':9,'target':'127.0.0.1:9'},"
                              "{'virtual':10,'target':'127.0.0.1:10'}]}");
    const rlim_t need = FDBUDGET_RESERVE + FDBUDGET_METRICS_CLIENTS + FDBUDGET_ONIONLOC_CLIENTS +
                        FDBUDGET_STATUS_CLIENTS + 22 + 2 * FDBUDGET_STREAMS_MIN;
    char want[200];
    snprintf(want, sizeof(want), "the config needs %llu file descriptors but RLIMIT_NOFILE's hard limit is %llu: 11 "
             "listening sockets", (unsigned long long)need, (unsigned long long)need - 1);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit low = {need - 1, need - 1};
        const struct config *before = x->conf;
        bool ok = setrlimit(RLIMIT_NOFILE, &low) == 0 &&
                  reload_apply(&x->parts, x->path, &x->conf, x->msg, sizeof(x->msg)) == -1 && x->conf == before &&
                  strstr(x->msg, want) && strstr(x->msg, "; keeping the running config") &&
                  worker_service_count(x->w) == 1 && !proxy_find_pool(x->proxy, "c", 1);
        if (!ok)
            fprintf(stderr, "reload said \"%s\", want \"%s\"\n", x->msg, want);
        _exit(ok ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* with the limit as it is, the same file is applied */
    assert_int_equal(reload_apply(&x->parts, x->path, &x->conf, x->msg, sizeof(x->msg)), 0);
    assert_non_null(proxy_find_pool(x->proxy, "c", 10));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_many_instances_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fd_limit_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
