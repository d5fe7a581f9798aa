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
 * numbers, with nothing applied; a reload refused after the key hand-over leaves the key directories and
 * tor 2's copies byte for byte as they were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
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
    const char *tor_json; /* the config's "tor" (' for "), NULL: attach to <dir>/control */
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
    char json[4096], def[128], tor[256];
    snprintf(def, sizeof(def), "%s/control", x->dir);
    snprintf(tor, sizeof(tor), "{'mode':'attach','control_socket':'%s'}", control ? control : def);
    snprintf(json, sizeof(json),
             "{'state_dir':'%s/state','run_dir':'%s/run','log_level':'error','tor':%s,'services':[%s]}",
             x->dir, x->dir, x->tor_json ? x->tor_json : tor, services);
    for (char *q = json; *q; q++)
        *q = *q == '\'' ? '"' : *q;
    FILE *f = fopen(x->path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
}

/* The parts for `services` under tor `tor_json` (NULL: attach), keys loaded and handed over. */
static int setup_with(void **state, const char *tor_json, const char *services)
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
    x->tor_json = tor_json;
    write_conf(x, NULL, services);
    x->conf = config_load_file(x->path, err, sizeof(err));
    if (!x->conf)
        fail_msg("config: %s", err);
    x->ids = service_ids_new(x->conf);
    assert_non_null(x->ids);
    x->ws = workerset_new(x->base, x->procs, x->conf, x->ids, &cbs, x);
    assert_non_null(x->ws);
    size_t n_tors;
    x->w = workerset_list(x->ws, &n_tors)[0];
    assert_int_equal(n_tors, x->conf->tor.instances);
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

static int setup(void **state)
{
    return setup_with(state, NULL, SVC_A);
}

/* Two spawned tors (not started): tor 2 has copies of the keys (state/instances/2/keys). */
#define SVC_P_ALICE                                                                                         \
    "{'name':'p','client_auth':[{'name':'alice','public_key':'N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ'}]," \
    "'ports':[{'virtual':83,'target':'127.0.0.1:8083'}]}"
#define SVC_P_BOB                                                                                           \
    "{'name':'p','client_auth':[{'name':'bob','public_key':'C57RGU33J43HHULB3MQAFWL2JCXU6WKKHBBIJVXQVSGLD2B246IA'}]," \
    "'ports':[{'virtual':83,'target':'127.0.0.1:8083'}]}"

static int setup_two_tors(void **state)
{
    return setup_with(state, "{'mode':'spawn','instances':2}", SVC_P_ALICE "," FRONT8);
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

/* Append every regular file under `dir` (sorted by name, recursively) as "path\n<content>\n" to `out`, the
 * content's bytes outside printable ASCII as \xNN (keys are binary). */
static void tree_text(const char *dir, char *out, size_t cap)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    assert_true(n >= 0);
    for (int i = 0; i < n; i++) {
        char path[512];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        bool dot = strcmp(names[i]->d_name, ".") == 0 || strcmp(names[i]->d_name, "..") == 0;
        free(names[i]);
        if (dot || lstat(path, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            tree_text(path, out, cap);
            continue;
        }
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s\n", path);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        for (int ch; (ch = fgetc(f)) != EOF;) {
            len = strlen(out);
            snprintf(out + len, cap - len, ch == '\n' || (ch >= ' ' && ch < 0x7f) ? "%c" : "\\x%02x", ch);
        }
        fclose(f);
        assert_true(strlen(out) + 1 < cap);
    }
    free(names);
}

/* A reload refused after the key hand-over (Onionbalance's limit, checked once the new identities are
 * known) leaves tor 2's copy of p's key directory and p's key_dir byte for byte as they were: the copy's
 * authorized_clients still names alice, not the refused config's bob (tor re-reads it on any SETCONF). */
static void test_refused_reload_keeps_key_copies(void **state)
{
    struct test *x = *state;
    static char before[32768], after[32768], copy[256], key_dir[256];
    char services[2048];
    snprintf(copy, sizeof(copy), "%s/state/instances/2/keys/p", x->dir);
    snprintf(key_dir, sizeof(key_dir), "%s/state/keys/p", x->dir);
    before[0] = after[0] = '\0';
    tree_text(copy, before, sizeof(before));
    tree_text(key_dir, before, sizeof(before));
    assert_non_null(strstr(before, "/authorized_clients/alice.auth\n"));
    const char *master = service_ids_at(x->ids, 1)->address;
    snprintf(services, sizeof(services),
             SVC_P_BOB "," FRONT8 ",{'name':'inst','ports':[{'virtual':82,'target':'127.0.0.1:8082'}],"
                       "'onionbalance':{'master_address':'%s'}}",
             master);
    write_conf(x, NULL, services);
    assert_refused(x, "service front: 9 Onionbalance instances (remote and local); at most 8");
    tree_text(copy, after, sizeof(after));
    tree_text(key_dir, after, sizeof(after));
    if (strcmp(before, after) != 0)
        fail_msg("the refused reload changed the key directories:\n--- before\n%s--- after\n%s", before, after);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_many_instances_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fd_limit_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_reload_keeps_key_copies, setup_two_tors, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
