/* test_ob_frontend.c — unit tests for sidecar/balance/ob_frontend.c without a network: a config without a frontend
 * starts nothing (state off, no problems, no metrics); a frontend without instances, or with more than 8
 * once this config's own instance services are added, is FAILED with a message naming the service and
 * starts no tor; a usable frontend gets config.yaml (0600, the master key's path, remote and local
 * instances) before its tor starts (here /bin/true: the loop never runs); as root with tor.user, a
 * config.yaml of onionfront's (0640, tor's group) naming a copy of the master key tor's user owns; the status JSON of an instance
 * (its master) and of a frontend; the state names.
 *
 * Supervision itself (restart on exit, on a lost tor, on a stall; confirmation by HS_DESC UPLOADED) needs
 * tor and Onionbalance: tests/integration/test_onionbalance.sh. */
#include <setjmp.h>
#include <stdarg.h>
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
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/balance/ob_frontend.h"
#include "sidecar/core/proc.h"
#include "sidecar/identity/service_id.h"
#include "tests/fake/onion_addrs.h"
#include "tests/fake/tmpdir.h"

#define A0 "2gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4ad"
#define A1 "nk47d24ppuzyr5hz2wdpm3uz7vkaqdpsyrdpbzmgncyjycfbnxidqgyd"
#define EIGHT TEST_EIGHT_ADDRESSES

struct ctx {
    char dir[64];
    struct event_base *base;
    struct proc_mgr *procs;
    struct config *conf;
    struct service_ids *ids;
    struct ob_frontend *f;
};

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    if (!c || tmpdir_make(c->dir, sizeof(c->dir), "test_ob_frontend") < 0 || !(c->base = event_base_new()) ||
        !(c->procs = proc_mgr_new(c->base)))
        return -1;
    log_set_level(getenv("TEST_OB_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_ERROR + 1);
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    ob_frontend_free(c->f);
    service_ids_free(c->ids);
    config_free(c->conf);
    proc_mgr_free(c->procs);
    event_base_free(c->base);
    int rc = tmpdir_remove(c->dir);
    free(c);
    return rc;
}

/* Load `services` (' for "), the "tor" object's members `tor`, keys created in the test's state_dir, and
 * start the frontend. */
static int start_tor(struct ctx *c, const char *tor, const char *services)
{
    char json[4096], err[1024] = "";
    snprintf(json, sizeof(json),
             "{'state_dir':'%s/state','run_dir':'%s/run','tor':{%s},"
             "'probe':{'client_tor':false},'services':[%s]}",
             c->dir, c->dir, tor, services);
    for (char *q = json; *q; q++)
        *q = *q == '\'' ? '"' : *q;
    c->conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!c->conf)
        fail_msg("config: %s", err);
    char p[128];
    snprintf(p, sizeof(p), "%s/state", c->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/state/keys", c->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    c->ids = service_ids_new(c->conf);
    assert_non_null(c->ids);
    if (service_ids_load_keys(c->ids, err, sizeof(err)) < 0)
        fail_msg("keys: %s", err);
    c->f = ob_frontend_new(c->base, c->procs, c->conf, c->ids);
    assert_non_null(c->f);
    return ob_frontend_start(c->f, err, sizeof(err));
}

static int start(struct ctx *c, const char *services)
{
    return start_tor(c, "'binary':'/bin/true'", services);
}

/* The first problem status would list, or "". */
static void first_problem(const struct ctx *c, char *out, size_t len)
{
    json_t *p = json_array();
    ob_frontend_problems(c->f, p);
    snprintf(out, len, "%s", json_array_size(p) ? json_string_value(json_array_get(p, 0)) : "");
    json_decref(p);
}

static void test_no_frontend(void **state)
{
    struct ctx *c = *state;
    char problem[700];
    assert_int_equal(start(c, "{'name':'web','ports':[{'virtual':80,'target':'127.0.0.1:1'}]}"), 0);
    assert_int_equal(ob_frontend_state(c->f), OB_FE_OFF);
    first_problem(c, problem, sizeof(problem));
    assert_string_equal(problem, "");
    struct metrics *m = metrics_new();
    assert_int_equal(ob_frontend_metrics(c->f, m), 0);
    assert_null(strstr(metrics_text(m, NULL), "onionbalance"));
    metrics_free(m);
    assert_null(ob_frontend_service_json(c->f, c->conf, "web", "x"));
}

static void test_frontend_without_instances(void **state)
{
    struct ctx *c = *state;
    char problem[700], p[128];
    assert_int_equal(start(c, "{'name':'front','onionbalance':{'frontend':true}}"), 0);
    assert_int_equal(ob_frontend_state(c->f), OB_FE_FAILED);
    first_problem(c, problem, sizeof(problem));
    assert_non_null(strstr(problem, "service front: Onionbalance frontend without instances"));
    snprintf(p, sizeof(p), "%s/state/ob-tor", c->dir);
    assert_int_equal(access(p, F_OK), -1); /* no tor was started */
}

static void test_too_many_with_local(void **state)
{
    struct ctx *c = *state;
    char problem[700], svc[2048];
    const struct service_id *front;
    /* 8 remote ones are accepted at load; a local instance of this master makes 9. Its master is the
     * frontend's address, known only once the keys are loaded: load twice. */
    assert_int_equal(start(c, "{'name':'front','onionbalance':{'frontend':true,'instances':[" EIGHT "]}}"), 0);
    front = service_ids_at(c->ids, 0);
    snprintf(svc, sizeof(svc),
             "{'name':'front','onionbalance':{'frontend':true,'instances':[" EIGHT "]}},"
             "{'name':'local','ports':[{'virtual':80,'target':'127.0.0.1:1'}],'onionbalance':{'master_address':'%s'}}",
             front->address);
    ob_frontend_free(c->f);
    c->f = NULL;
    service_ids_free(c->ids);
    c->ids = NULL;
    config_free(c->conf);
    c->conf = NULL;
    char json[4096], err[1024] = "";
    snprintf(json, sizeof(json),
             "{'state_dir':'%s/state','run_dir':'%s/run','tor':{'binary':'/bin/true'},'services':[%s]}", c->dir,
             c->dir, svc);
    for (char *q = json; *q; q++)
        *q = *q == '\'' ? '"' : *q;
    c->conf = config_load_string(json, strlen(json), err, sizeof(err));
    assert_non_null(c->conf);
    c->ids = service_ids_new(c->conf);
    assert_int_equal(service_ids_load_keys(c->ids, err, sizeof(err)), 0);
    c->f = ob_frontend_new(c->base, c->procs, c->conf, c->ids);
    assert_int_equal(ob_frontend_start(c->f, err, sizeof(err)), 0);
    assert_int_equal(ob_frontend_state(c->f), OB_FE_FAILED);
    first_problem(c, problem, sizeof(problem));
    assert_non_null(strstr(problem, "service front: 9 Onionbalance instances (remote and local); at most 8"));
}

static void test_yaml_and_json(void **state)
{
    struct ctx *c = *state;
    char path[128], buf[2048] = "", want[2048];
    assert_int_equal(start(c, "{'name':'front','onionbalance':{'frontend':true,'instances':['" A0 "','" A1
                              ".onion'],'publish_deadline':300}},"
                              "{'name':'inst','ports':[{'virtual':80,'target':'127.0.0.1:1'}],"
                              "'onionbalance':{'master_address':'" A0 "'}}"),
                     0);
    assert_int_equal(ob_frontend_state(c->f), OB_FE_WAITING);
    snprintf(path, sizeof(path), "%s/state/ob/config.yaml", c->dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
    fclose(f);
    /* the local service "inst" is an instance of A0, not of this frontend: not added */
    snprintf(want, sizeof(want),
             "# written by onionfront at every start of Onionbalance: do not edit\nservices:\n"
             "- key: %s/state/keys/front/hs_ed25519_secret_key\n  instances:\n"
             "  - address: " A0 ".onion\n    name: instance1\n  - address: " A1 ".onion\n    name: instance2\n",
             c->dir);
    assert_string_equal(buf, want);
    const char *front = service_ids_at(c->ids, 0)->address, *inst = service_ids_at(c->ids, 1)->address;
    json_t *o = ob_frontend_service_json(c->f, c->conf, "front", front);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "role")), "frontend");
    assert_string_equal(json_string_value(json_object_get(o, "state")), "waiting_for_tor");
    assert_int_equal(json_array_size(json_object_get(o, "instances")), 2);
    assert_int_equal(json_integer_value(json_object_get(o, "publish_deadline_seconds")), 300);
    assert_true(json_is_integer(json_object_get(o, "repairs")));
    assert_int_equal(json_integer_value(json_object_get(o, "repairs")), 0);
    assert_true(json_is_null(json_object_get(o, "last_confirmed_upload")));
    json_decref(o);
    o = ob_frontend_service_json(c->f, c->conf, "inst", inst);
    assert_string_equal(json_string_value(json_object_get(o, "role")), "instance");
    assert_string_equal(json_string_value(json_object_get(o, "master_address")), A0 ".onion");
    json_decref(o);
    struct metrics *m = metrics_new();
    assert_int_equal(ob_frontend_metrics(c->f, m), 0);
    assert_non_null(strstr(metrics_text(m, NULL), "onionfront_onionbalance_publishing{service=\"front\"} 0"));
    metrics_free(m);
    assert_string_equal(ob_frontend_state_str(OB_FE_STALLED), "stalled");
}

/* Root with tor.user: Onionbalance's config names the copy of the master key its user reads (handover.h),
 * and is onionfront's, readable by that user's group only (0640), never writable by it. */
static void test_yaml_as_tor_user(void **state)
{
    struct ctx *c = *state;
    char path[128], buf[2048] = "", want[2048];
    if (geteuid() != 0)
        skip();
    assert_int_equal(start_tor(c, "'binary':'/bin/true','user':'nobody'",
                               "{'name':'front','onionbalance':{'frontend':true,'instances':['" A0 "']}}"),
                     0);
    assert_int_equal(ob_frontend_state(c->f), OB_FE_WAITING);
    snprintf(path, sizeof(path), "%s/state/ob/config.yaml", c->dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(st.st_gid, 65534);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
    fclose(f);
    snprintf(want, sizeof(want), "- key: %s/state/ob/master_ed25519_secret_key\n", c->dir);
    assert_non_null(strstr(buf, want));
    snprintf(path, sizeof(path), "%s/state/ob/master_ed25519_secret_key", c->dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* its tor's directories are that user's too */
    snprintf(path, sizeof(path), "%s/state/ob-tor", c->dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, 65534);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_frontend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frontend_without_instances, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_many_with_local, setup, teardown),
        cmocka_unit_test_setup_teardown(test_yaml_and_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_yaml_as_tor_user, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
