/* test_service.c — unit tests for sidecar/publish/service.c, the service manager, with real key directories in a
 * private temporary directory and, for what it sends to tor, a real cp_conn on a real event loop against
 * the scripted fake control port (tests/fake/fake_ctl.c).
 *
 * Why: service.c decides which onion services tor runs, and its SETCONF replaces tor's whole
 * HiddenService* group, so a wrong or early SETCONF silently removes services (ours or, in attach mode,
 * the tor's own); and a reload that needlessly re-sends the group makes tor publish new descriptors.
 *
 * Covers: keys created on first load (a 0700 directory state_dir/keys/<name> of 0600 files, a 56-char v3
 * address that matches the public key and the hostname file) and the same address on the next start; a
 * key that cannot be loaded names the service; reconfigure (table): tor_changed false for data-path
 * changes (backends, health, order) and true for a service added or removed, a port added or renumbered,
 * max_streams, dos settings or key_dir changed, with addresses kept by name; all-or-nothing on error; the status JSON
 * and the metrics; attach: GETCONF HiddenServiceOptions, then one SETCONF of the complete group (the
 * tor's own services first, a leftover directory of ours replaced, then HiddenServiceDir/Port/MaxStreams/
 * the dos lines/ExportCircuitID per service, a reload changing only the dos settings re-sending the group), HS_DESC UPLOADED counted per service and kept across reloads; a SETCONF
 * after a reload only when tor's view changed; the probe's repair of one service (service_mgr_renew_one:
 * the group without it, then with it; one unchanged SETCONF for a PoW service; every other service's
 * authorized_clients checked first, as the full publish does); a SETCONF's time to
 * answer sized to its services; unpublish (the tor's own services kept; done() after tor's
 * answer, a refusal or a closed connection, at once without a connection); detach; and no SETCONF at all
 * while the tor's own services are unknown (GETCONF refused or not answered yet); a tor reload that dropped
 * our services (CONF_CHANGED / SIGNAL RELOAD) answered by one GETCONF and one SETCONF of the complete group
 * with the tor's current own services, our own SETCONF's CONF_CHANGED needing no check, nothing brought
 * back after unpublish, and a check's answer older than our last SETCONF ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "controlproto/cp_conn.h"
#include "sidecar/identity/addrbook.h"
#include "sidecar/config/config.h"
#include "sidecar/identity/keys.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/publish/service.h"
#include "sidecar/identity/service_id.h"
#include "tests/fake/fake_ctl.h"
#include "tests/fake/tmpdir.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define LOOP_BOUND_MS 5000

/* Services, written with ' for " (load_conf turns them into JSON). */
#define WEB                                                                                                  \
    "{'name':'web','max_streams':10,'ports':[{'virtual':80,'target':'127.0.0.1:8080'},"                   \
    "{'virtual':443,'backends':[{'address':'127.0.0.1:8443'},{'address':'/run/web.sock'}]}]}"
#define API "{'name':'api','ports':[{'virtual':8000,'target':'127.0.0.1:9000'}]}"
#define NEW "{'name':'new','ports':[{'virtual':80,'target':'127.0.0.1:7000'}]}"

/* What tor must be given for each of them; each %s is the test's directory. */
#define WEB_TOR                                                                                              \
    "HiddenServiceDir=\"%s/state/keys/web\" HiddenServicePort=\"80 unix:%s/run/proxy/web-80.sock\" "        \
    "HiddenServicePort=\"443 unix:%s/run/proxy/web-443.sock\" HiddenServiceMaxStreams=\"10\" "              \
    "HiddenServiceExportCircuitID=\"haproxy\""
#define API_TOR                                                                                              \
    "HiddenServiceDir=\"%s/state/keys/api\" HiddenServicePort=\"8000 unix:%s/run/proxy/api-8000.sock\" "    \
    "HiddenServiceExportCircuitID=\"haproxy\""
#define NEW_TOR                                                                                              \
    "HiddenServiceDir=\"%s/state/keys/new\" HiddenServicePort=\"80 unix:%s/run/proxy/new-80.sock\" "        \
    "HiddenServiceExportCircuitID=\"haproxy\""

/* The attached tor's own service, as GETCONF lists it and as it must be handed back. */
#define OTHER_GETCONF "250-HiddenServiceDir=/var/lib/tor/other\r\n250-HiddenServicePort=22 127.0.0.1:22\r\n"
#define OTHER_TOR "HiddenServiceDir=\"/var/lib/tor/other\" HiddenServicePort=\"22 127.0.0.1:22\""

#define GETCONF_LINE "GETCONF HiddenServiceOptions"
#define NO_HS_GETCONF "250 HiddenServiceOptions\r\n" /* control-spec 3.3: no service configured */
#define SYNC_LINE "GETINFO version"
#define SYNC_ANSWER "250-version=0.4.9.11\r\n250 OK\r\n"
/* An address that is none of ours (the tests' keys are random). */
#define STRANGER "nkfp4y5sdp4laifn2jjhvooirlcxreopj2bygizfy5x5so7774l6u5id"
#define FP1 "BCFAC56464F954D03B5A872B11997E92B451570A"
#define FP2 "7F7BB4712B86BB22FD78AA122981E264E678BBF4"

struct ctx {
    char dir[64];
    struct config *conf; /* the manager's config */
    struct service_ids *ids; /* the services' identities (service_id.c), which the manager borrows */
    struct service_mgr *m;
    struct event_base *base;
    struct fake_ctl *fake;
    struct cp_conn *conn;
    int n_ready;
    int n_done;  /* unpublish completions */
    int n_synced;
    const char *tor_json;  /* the config's "tor" (written with '), NULL: attach to /run/tor/control */
    struct timeval conn_timeout; /* the test connection's cmd_timeout; {0,0}: 5 s */
    struct fake_ctl_step script[48];
    size_t n_script;
    char texts[40][2048]; /* script texts that hold the directory or an address */
    size_t n_texts;
};

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    char p[128];
    if (!c || tmpdir_make(c->dir, sizeof(c->dir), "test_service") < 0)
        return -1;
    /* main.c makes state_dir and state_dir/keys before the manager loads keys */
    snprintf(p, sizeof(p), "%s/state", c->dir);
    if (mkdir(p, 0700) < 0)
        return -1;
    snprintf(p, sizeof(p), "%s/state/keys", c->dir);
    if (mkdir(p, 0700) < 0 || !(c->base = event_base_new()))
        return -1;
    /* tor's refusals are logged at error on purpose; TEST_SERVICE_DEBUG=1 shows everything */
    log_set_level(getenv("TEST_SERVICE_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_WARN);
    *state = c;
    return 0;
}

/* The identities and the manager for c->conf (keys not loaded). */
static void new_mgr(struct ctx *c)
{
    c->ids = service_ids_new(c->conf);
    assert_non_null(c->ids);
    c->m = service_mgr_new(c->conf, c->ids);
    assert_non_null(c->m);
}

/* Why the i-th service is refused (its identity's word), or NULL. */
static const char *refusal(const struct ctx *c, size_t i)
{
    return service_id_refusal(service_ids_at(c->ids, i));
}

static void free_mgr(struct ctx *c)
{
    service_mgr_free(c->m);
    service_ids_free(c->ids);
    c->m = NULL;
    c->ids = NULL;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    /* The connection first (service.h): its pending completions still reach the manager. */
    cp_conn_free(c->conn);
    free_mgr(c);
    config_free(c->conf);
    fake_ctl_free(c->fake);
    event_base_free(c->base);
    int rc = tmpdir_remove(c->dir);
    free(c);
    return rc;
}

/* ---- helpers ----------------------------------------------------------------------------------- */

/* A config with state_dir and run_dir in the test's directory, attach mode, and `services` (the members
 * of the "services" array, written with ' for "). */
static struct config *load_conf(struct ctx *c, const char *services)
{
    char json[4096], err[512];
    /* anonymous services need a spawned tor (config_service.c); the manager itself does not care */
    const char *tor = c->tor_json                    ? c->tor_json
                      : strstr(services, "anonymous") ? "{}"
                                                      : "{'mode':'attach','control_socket':'/run/tor/control'}";
    int n = snprintf(json, sizeof(json), "{'state_dir':'%s/state','run_dir':'%s/run','tor':%s,'services':[%s]}",
                     c->dir, c->dir, tor, services);
    assert_true(n > 0 && (size_t)n < sizeof(json));
    for (char *q = json; *q; q++)
        *q = *q == '\'' ? '"' : *q;
    struct config *conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!conf)
        fail_msg("config: %s\n  %s", err, json);
    return conf;
}

/* The manager for `services`, keys loaded. */
static void start_mgr(struct ctx *c, const char *services)
{
    char err[512] = "";
    c->conf = load_conf(c, services);
    new_mgr(c);
    if (service_ids_load_keys(c->ids, err, sizeof(err)) < 0)
        fail_msg("service_ids_load_keys: %s", err);
}

/* Switch the manager to `services`, which must succeed; the old config is freed at once, as main.c does,
 * so that a pointer into it would be caught by ASan. Return tor_changed. */
static bool reconfigure_ok(struct ctx *c, const char *services)
{
    char err[512] = "";
    bool changed = false;
    struct config *next = load_conf(c, services);
    if (service_ids_reconfigure(c->ids, next, err, sizeof(err)) < 0 ||
        service_mgr_reconfigure(c->m, next, &changed, err, sizeof(err)) < 0)
        fail_msg("reconfigure: %s", err);
    config_free(c->conf);
    c->conf = next;
    return changed;
}

/* Switch the manager to `services`, which must fail with a message containing `want`. */
static void reconfigure_fails(struct ctx *c, const char *services, const char *want)
{
    char err[512] = "";
    bool changed = false;
    struct config *next = load_conf(c, services);
    (void)changed;
    assert_int_equal(service_ids_reconfigure(c->ids, next, err, sizeof(err)), -1); /* before the manager */
    config_free(next); /* the manager must not keep anything of it */
    if (!strstr(err, want))
        fail_msg("reconfigure said \"%s\", expected \"%s\"", err, want);
}

/* Index of the service named `name`, failing the test if there is none. */
static size_t find(const struct ctx *c, const char *name)
{
    for (size_t i = 0; i < service_mgr_count(c->m); i++)
        if (strcmp(service_mgr_name(c->m, i), name) == 0)
            return i;
    fail_msg("no service named %s", name);
    return 0;
}

/* The address of the service named `name`, copied (ONION_ADDRESS_SIZE bytes). */
static void address_of(const struct ctx *c, const char *name, char *out)
{
    const char *a = service_mgr_address(c->m, find(c, name));
    assert_int_equal(strlen(a), ONION_ADDRESS_LEN);
    memcpy(out, a, ONION_ADDRESS_SIZE);
}

/* The manager for web and api, keys loaded; their addresses copied to `web` and `api`. */
static void start_web_api(struct ctx *c, char *web, char *api)
{
    start_mgr(c, WEB "," API);
    address_of(c, "web", web);
    address_of(c, "api", api);
}

/* The status JSON object of the i-th service; `uploads` its upload count. Returns a new reference. */
static json_t *service_json(const struct ctx *c, size_t i, json_int_t *uploads)
{
    json_t *all = service_mgr_to_json(c->m), *o;
    assert_non_null(all);
    assert_int_equal(json_array_size(all), service_mgr_count(c->m));
    o = json_incref(json_array_get(all, i));
    json_decref(all);
    assert_non_null(o);
    if (uploads)
        *uploads = json_integer_value(json_object_get(o, "uploads"));
    return o;
}

static json_int_t uploads_of(const struct ctx *c, const char *name)
{
    json_int_t n = -1;
    json_decref(service_json(c, find(c, name), &n));
    return n;
}

static void assert_file_mode(const char *dir, const char *name, bool is_dir, mode_t mode)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s%s%s", dir, name ? "/" : "", name ? name : "");
    if (lstat(p, &st) < 0)
        fail_msg("%s: missing", p);
    if (is_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        fail_msg("%s: not a %s", p, is_dir ? "directory" : "regular file");
    if ((st.st_mode & 07777) != mode)
        fail_msg("%s: mode %04o, expected %04o", p, (unsigned)(st.st_mode & 07777), (unsigned)mode);
}

static void read_file(const char *dir, const char *name, char *buf, size_t len, size_t *got)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail_msg("%s: cannot open", p);
    ssize_t n = read(fd, buf, len);
    close(fd);
    assert_true(n >= 0);
    *got = (size_t)n;
}

/* The key directory of the service named `name` was created as tor wants it, and its address is the
 * public key's: a 0700 directory of 0600 files, hostname "<address>.onion\n". */
static void assert_key_dir(const struct ctx *c, const char *name)
{
    const struct service_conf *sc = config_find_service(c->conf, name);
    char want[256], buf[256], addr[ONION_ADDRESS_SIZE];
    size_t n;
    assert_non_null(sc);
    snprintf(want, sizeof(want), "%s/state/keys/%s", c->dir, name);
    assert_string_equal(sc->key_dir, want);
    assert_file_mode(sc->key_dir, NULL, true, 0700);
    static const char *const files[] = {KEYS_SECRET_FILE, KEYS_PUBLIC_FILE, KEYS_HOSTNAME_FILE};
    for (size_t i = 0; i < ARRAY_LEN(files); i++)
        assert_file_mode(sc->key_dir, files[i], false, 0600);
    DIR *d = opendir(sc->key_dir); /* and nothing in it that others may read */
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            assert_file_mode(sc->key_dir, e->d_name, false, 0600);
    closedir(d);

    const char *a = service_mgr_address(c->m, find(c, name));
    assert_int_equal(strlen(a), ONION_ADDRESS_LEN);
    for (const char *q = a; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '2' && *q <= '7')))
            fail_msg("address %s: '%c' is not base32", a, *q);
    assert_int_equal(a[ONION_ADDRESS_LEN - 1], 'd'); /* address-spec: VERSION 3 ends the address */
    read_file(sc->key_dir, KEYS_PUBLIC_FILE, buf, sizeof(buf), &n);
    assert_int_equal(n, 64); /* 32-byte header, 32-byte key */
    assert_int_equal(onion_address_from_pubkey((const unsigned char *)buf + 32, addr), 0);
    assert_string_equal(a, addr);
    read_file(sc->key_dir, KEYS_HOSTNAME_FILE, buf, sizeof(buf) - 1, &n);
    buf[n] = '\0';
    snprintf(want, sizeof(want), "%s.onion\n", a);
    assert_string_equal(buf, want);
}

/* Put a regular file where the service `name`'s key directory would go: its key cannot be loaded. */
static void block_key_dir(const struct ctx *c, const char *name)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/state/keys/%s", c->dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
}

/* ---- the fake tor ------------------------------------------------------------------------------- */

/* Append a script step; `fmt` (NULL for none) is formatted into the context. */
static void step(struct ctx *c, enum fake_ctl_op op, unsigned ms, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void step(struct ctx *c, enum fake_ctl_op op, unsigned ms, const char *fmt, ...)
{
    const char *text = NULL;
    assert_true(c->n_script < ARRAY_LEN(c->script));
    if (fmt) {
        va_list ap;
        assert_true(c->n_texts < ARRAY_LEN(c->texts));
        char *t = c->texts[c->n_texts++];
        va_start(ap, fmt);
        int n = vsnprintf(t, sizeof(c->texts[0]), fmt, ap);
        va_end(ap);
        assert_true(n > 0 && (size_t)n < sizeof(c->texts[0]));
        text = t;
    }
    c->script[c->n_script++] = (struct fake_ctl_step){op, text, ms};
}

/* The NULL-auth exchange (control-spec 3.21), then the manager's GETCONF (the caller scripts tor's
 * answer). */
static void script_attach(struct ctx *c)
{
    step(c, FAKE_CTL_EXPECT, 0, "PROTOCOLINFO 1");
    step(c, FAKE_CTL_SEND, 0, "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL\r\n250 OK\r\n");
    step(c, FAKE_CTL_EXPECT, 0, "AUTHENTICATE");
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    step(c, FAKE_CTL_EXPECT, 0, GETCONF_LINE);
}

/* The answer to the test's own sync() command. */
static void script_sync(struct ctx *c)
{
    step(c, FAKE_CTL_EXPECT, 0, SYNC_LINE);
    step(c, FAKE_CTL_SEND, 0, SYNC_ANSWER);
}

static void conn_state_cb(struct cp_conn *conn, enum cp_conn_state st, const char *err, void *arg)
{
    struct ctx *c = arg;
    (void)conn;
    (void)err;
    if (st == CP_CONN_READY)
        c->n_ready++;
}

static bool is_ready(void *arg)
{
    struct ctx *c = arg;
    return c->n_ready > 0 || fake_ctl_failure(c->fake);
}

static bool fake_finished(void *arg)
{
    struct ctx *c = arg;
    return fake_ctl_done(c->fake) || fake_ctl_failure(c->fake);
}

static void check_fake(const struct ctx *c)
{
    const char *f = fake_ctl_failure(c->fake);
    if (f)
        fail_msg("fake control port: %s", f);
}

/* Start the fake with the script so far, connect an authenticated cp_conn to it and attach the manager. */
static void attach_fake(struct ctx *c)
{
    char err[256];
    c->fake = fake_ctl_new(c->base, false, c->script, c->n_script, err, sizeof(err));
    if (!c->fake)
        fail_msg("fake: %s", err);
    struct cp_conn_opts o = {.unix_path = fake_ctl_unix_path(c->fake), .auth = CP_AUTH_AUTO, .cmd_timeout = {5, 0}};
    if (c->conn_timeout.tv_sec || c->conn_timeout.tv_usec)
        o.cmd_timeout = c->conn_timeout;
    c->conn = cp_conn_new(c->base, &o, conn_state_cb, c, err, sizeof(err));
    if (!c->conn || cp_conn_connect(c->conn, err, sizeof(err)) < 0)
        fail_msg("cp_conn: %s", err);
    assert_int_equal(fake_ctl_run_until(c->base, is_ready, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    service_mgr_attach(c->m, c->conn);
}

static void sync_cb(struct cp_conn *conn, const struct cp_reply *r, const char *err, void *arg)
{
    struct ctx *c = arg;
    (void)conn;
    if (!r)
        fail_msg("sync: %s", err);
    c->n_synced++;
}

static bool synced(void *arg)
{
    struct ctx *c = arg;
    return c->n_synced > 0 || fake_ctl_failure(c->fake);
}

/* Send a command of the test's own and wait for its answer: commands are answered in order, so whatever
 * the manager sent before has been answered and handled, and the fake saw nothing else in between. */
static void sync_fake(struct ctx *c)
{
    char err[256];
    c->n_synced = 0;
    if (cp_conn_send(c->conn, SYNC_LINE "\r\n", sync_cb, c, err, sizeof(err)) < 0)
        fail_msg("sync: %s", err);
    assert_int_equal(fake_ctl_run_until(c->base, synced, c, LOOP_BOUND_MS), 0);
    check_fake(c);
}

static void unpublished_cb(void *arg)
{
    struct ctx *c = arg;
    c->n_done++;
}

static bool unpublished(void *arg)
{
    struct ctx *c = arg;
    return c->n_done > 0 || fake_ctl_failure(c->fake);
}

/* ---- keys ----------------------------------------------------------------------------------------- */

static void test_keys_created_on_first_load(void **state)
{
    struct ctx *c = *state;
    char err[512] = "";
    c->conf = load_conf(c, WEB "," API);
    new_mgr(c);
    assert_int_equal(service_mgr_count(c->m), 2);
    assert_string_equal(service_mgr_name(c->m, 0), "web");
    assert_string_equal(service_mgr_name(c->m, 1), "api");
    assert_string_equal(service_mgr_address(c->m, 0), ""); /* not loaded yet */
    assert_string_equal(service_mgr_name(c->m, 2), "");    /* out of range */
    assert_string_equal(service_mgr_address(c->m, 2), "");
    assert_false(service_mgr_uploaded(c->m, 2));
    if (service_ids_load_keys(c->ids, err, sizeof(err)) < 0)
        fail_msg("service_ids_load_keys: %s", err);
    assert_key_dir(c, "web");
    assert_key_dir(c, "api");
    assert_string_not_equal(service_mgr_address(c->m, 0), service_mgr_address(c->m, 1));
    assert_false(service_mgr_uploaded(c->m, 0));
}

static void test_keys_same_after_restart(void **state)
{
    struct ctx *c = *state;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE], again[ONION_ADDRESS_SIZE];
    start_web_api(c, web, api);
    free_mgr(c);
    config_free(c->conf);
    c->conf = NULL;
    /* a new process: a new config and manager on the same state_dir, services in another order */
    start_mgr(c, API "," WEB);
    address_of(c, "web", again);
    assert_string_equal(again, web);
    address_of(c, "api", again);
    assert_string_equal(again, api);
    assert_key_dir(c, "web");
}

static void test_load_keys_error_names_service(void **state)
{
    struct ctx *c = *state;
    char err[512] = "", path[256];
    block_key_dir(c, "api");
    c->conf = load_conf(c, WEB "," API);
    new_mgr(c);
    assert_int_equal(service_ids_load_keys(c->ids, err, sizeof(err)), -1);
    snprintf(path, sizeof(path), "%s/state/keys/api", c->dir);
    if (strncmp(err, "service api: ", 13) != 0 || !strstr(err, path))
        fail_msg("load_keys said \"%s\"", err);
}

/* ---- reconfigure ------------------------------------------------------------------------------------ */

struct reconf_case {
    const char *name;
    const char *services;
    bool tor_changed;
    const char *fresh; /* a service whose address must be new (added), or NULL */
    const char *refused; /* a known service refused (its key_dir moved to where no key is), or NULL */
};

static void test_reconfigure_table(void **state)
{
    struct ctx *c = *state;
    static const struct reconf_case cases[] = {
        {"backends, balance and health only",
         "{'name':'web','max_streams':10,'ports':[{'virtual':80,'backends':[{'address':'127.0.0.1:8081'},"
         "{'address':'127.0.0.1:8082','weight':2}],'balance':'least_conn','health':{'type':'http','path':'/h'}},"
         "{'virtual':443,'target':'127.0.0.1:9443'}]}," API,
         false, NULL, NULL},
        {"services reordered", API "," WEB, false, NULL, NULL},
        {"ports reordered",
         "{'name':'web','max_streams':10,'ports':[{'virtual':443,'target':'127.0.0.1:8443'},"
         "{'virtual':80,'target':'127.0.0.1:8080'}]}," API,
         false, NULL, NULL},
        {"a service added", WEB "," API "," NEW, true, "new", NULL},
        {"a service removed", WEB, true, NULL, NULL},
        {"one removed, another added", WEB "," NEW, true, "new", NULL},
        {"a port added",
         "{'name':'web','max_streams':10,'ports':[{'virtual':80,'target':'127.0.0.1:8080'},"
         "{'virtual':443,'target':'127.0.0.1:8443'},{'virtual':8443,'target':'127.0.0.1:8443'}]}," API,
         true, NULL, NULL},
        {"a port renumbered",
         "{'name':'web','max_streams':10,'ports':[{'virtual':81,'target':'127.0.0.1:8080'},"
         "{'virtual':443,'target':'127.0.0.1:8443'}]}," API,
         true, NULL, NULL},
        {"max_streams changed",
         "{'name':'web','max_streams':11,'ports':[{'virtual':80,'target':'127.0.0.1:8080'},"
         "{'virtual':443,'target':'127.0.0.1:8443'}]}," API,
         true, NULL, NULL},
        {"dos settings changed",
         WEB ",{'name':'api','dos':{'intro':{'enabled':true}},'ports':[{'virtual':8000,'target':'127.0.0.1:9000'}]}",
         true, NULL, NULL},
        {"key_dir moved: never a new key for a known service", WEB ",{'name':'api','key_dir':'%s/state/keys/api2',"
                          "'ports':[{'virtual':8000,'target':'127.0.0.1:9000'}]}",
         true, NULL, "api"},
    };
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE], got[ONION_ADDRESS_SIZE], services[1024];
    start_web_api(c, web, api);
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        const struct reconf_case *rc = &cases[i];
        print_message("case: %s\n", rc->name);
        snprintf(services, sizeof(services), rc->services, c->dir);
        free_mgr(c);
        config_free(c->conf);
        start_mgr(c, WEB "," API); /* the same keys every time: they are on disk */
        bool changed = reconfigure_ok(c, services);
        if (changed != rc->tor_changed)
            fail_msg("case %s: tor_changed %d, expected %d", rc->name, changed, rc->tor_changed);
        /* the new set, in the new config's order, each service with its conf */
        assert_int_equal(service_mgr_count(c->m), c->conf->n_services);
        for (size_t j = 0; j < c->conf->n_services; j++) {
            const char *name = c->conf->services[j].name;
            assert_string_equal(service_mgr_name(c->m, j), name);
            if (rc->refused && strcmp(name, rc->refused) == 0) {
                assert_string_equal(service_mgr_address(c->m, j), "");
                assert_non_null(strstr(refusal(c, j), api));
                continue;
            }
            assert_null(refusal(c, j));
            address_of(c, name, got);
            if (rc->fresh && strcmp(name, rc->fresh) == 0) {
                assert_string_not_equal(got, web);
                assert_string_not_equal(got, api);
            } else {
                assert_string_equal(got, strcmp(name, "web") == 0 ? web : api);
            }
        }
        /* the JSON shows the new config's ports: the manager borrows the new config, not the freed one */
        json_t *o = service_json(c, find(c, "web"), NULL);
        json_t *ports = json_object_get(o, "ports");
        assert_int_equal(json_array_size(ports), c->conf->services[find(c, "web")].n_ports);
        json_decref(o);
    }
}

static void test_reconfigure_error_keeps_state(void **state)
{
    struct ctx *c = *state;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE], got[ONION_ADDRESS_SIZE];
    start_web_api(c, web, api);
    block_key_dir(c, "bad");
    /* "new" would load; "bad" cannot: nothing of the switch may stay */
    reconfigure_fails(c, API "," NEW ",{'name':'bad','ports':[{'virtual':80,'target':'127.0.0.1:1'}]}",
                      "service bad: ");
    assert_int_equal(service_mgr_count(c->m), 2);
    assert_string_equal(service_mgr_name(c->m, 0), "web");
    assert_string_equal(service_mgr_name(c->m, 1), "api");
    address_of(c, "web", got);
    assert_string_equal(got, web);
    address_of(c, "api", got);
    assert_string_equal(got, api);
    /* the old config is still what it uses (the new one is freed: ASan would see a dangling pointer) */
    json_t *o = service_json(c, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(o, "ports")), 2);
    json_decref(o);
    /* and a good switch afterwards works */
    assert_true(reconfigure_ok(c, WEB "," API "," NEW));
    assert_int_equal(service_mgr_count(c->m), 3);
}

/* ---- the address record: never a new address by accident --------------------------------------------- */

/* Remove the key directory of `name` (and what is in it), as an unmounted volume would leave it. */
static void remove_key_dir(const struct ctx *c, const char *name)
{
    char p[256];
    static const char *const files[] = {KEYS_SECRET_FILE, KEYS_PUBLIC_FILE, KEYS_HOSTNAME_FILE, KEYS_POISON_FILE};
    for (size_t i = 0; i < ARRAY_LEN(files); i++) {
        snprintf(p, sizeof(p), "%s/state/keys/%s/%s", c->dir, name, files[i]);
        unlink(p);
    }
    snprintf(p, sizeof(p), "%s/state/keys/%s", c->dir, name);
    assert_int_equal(rmdir(p), 0);
}

/* The record on disk: the address it has for `name` now, or NULL. */
static const char *recorded(const struct ctx *c, const char *name, char *out)
{
    char p[256], err[1024];
    snprintf(p, sizeof(p), "%s/state", c->dir);
    struct addrbook *b = addrbook_load(p, err, sizeof(err));
    if (!b)
        fail_msg("addrbook_load: %s", err);
    const char *a = addrbook_address(b, name);
    if (a)
        memcpy(out, a, ONION_ADDRESS_SIZE);
    addrbook_free(b);
    return a ? out : NULL;
}

/* A known service whose key directory is gone at the next start is refused — no key is created, the
 * message names the service, the address, the key path and what to do — while the other one runs; a
 * different key is refused too; putting the key back and reloading brings it back with its address. */
static void test_known_service_refused(void **state)
{
    struct ctx *c = *state;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE], got[ONION_ADDRESS_SIZE], path[320];
    start_web_api(c, web, api);
    assert_string_equal(recorded(c, "web", got), web);
    assert_string_equal(recorded(c, "api", got), api);
    free_mgr(c);
    config_free(c->conf);
    c->conf = NULL;

    /* move api's key away (a backup, for later), as an unmounted volume leaves it */
    char keys[256], saved[256];
    snprintf(keys, sizeof(keys), "%s/state/keys/api", c->dir);
    snprintf(saved, sizeof(saved), "%s/api-backup", c->dir);
    assert_int_equal(rename(keys, saved), 0);
    start_mgr(c, WEB "," API);
    size_t ia = find(c, "api"), iw = find(c, "web");
    const char *why = refusal(c, ia);
    assert_non_null(why);
    snprintf(path, sizeof(path), "%s/hs_ed25519_secret_key", keys);
    static const char *const must[] = {"service api: REFUSED", "onionfront import-key api", "onionfront new-key api"};
    for (size_t i = 0; i < ARRAY_LEN(must); i++)
        if (!strstr(why, must[i]))
            fail_msg("refusal \"%s\" lacks \"%s\"", why, must[i]);
    assert_non_null(strstr(why, api));
    assert_non_null(strstr(why, path));
    assert_string_equal(service_mgr_address(c->m, ia), "");
    assert_null(refusal(c, iw));
    address_of(c, "web", got);
    assert_string_equal(got, web);
    struct stat st;
    assert_int_equal(stat(keys, &st), -1); /* no key, no directory created */
    json_t *o = service_json(c, ia, NULL);
    assert_true(json_is_null(json_object_get(o, "address")));
    assert_non_null(strstr(json_string_value(json_object_get(o, "refused")), api));
    json_decref(o);
    assert_string_equal(recorded(c, "api", got), api); /* the record still says api's address */

    /* a different key there: refused as well, naming both addresses */
    assert_int_equal(mkdir(keys, 0700), 0);
    struct onion_key other;
    char err[512];
    assert_int_equal(keys_load_or_create(keys, &other, NULL, err, sizeof(err)), 0);
    assert_false(reconfigure_ok(c, WEB "," API)); /* still refused: nothing changes for tor */
    why = refusal(c, find(c, "api"));
    assert_non_null(why);
    assert_non_null(strstr(why, api));
    assert_non_null(strstr(why, other.address));
    onion_key_clear(&other);

    /* the right key back: a reload accepts it, with its address, and tor must be told */
    remove_key_dir(c, "api");
    assert_int_equal(rename(saved, keys), 0);
    assert_true(reconfigure_ok(c, WEB "," API));
    assert_null(refusal(c, find(c, "api")));
    address_of(c, "api", got);
    assert_string_equal(got, api);

    /* and the key going away while running is seen at the next reload */
    remove_key_dir(c, "web");
    assert_true(reconfigure_ok(c, WEB "," API));
    assert_non_null(refusal(c, find(c, "web")));
    assert_int_equal(stat(keys, &st), 0);
}

/* A key replaced on purpose (as `onionfront new-key` does: a new key, the change in the record) is
 * taken at the next reload, with tor told; a replaced key without the record's word is refused. */
static void test_deliberate_change_taken_on_reload(void **state)
{
    struct ctx *c = *state;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE], got[ONION_ADDRESS_SIZE], err[1024], sdir[128];
    start_web_api(c, web, api);
    remove_key_dir(c, "web");
    struct onion_key k;
    char kd[256];
    snprintf(kd, sizeof(kd), "%s/state/keys/web", c->dir);
    assert_int_equal(keys_load_or_create(kd, &k, NULL, err, sizeof(err)), 0);
    snprintf(sdir, sizeof(sdir), "%s/state", c->dir);
    struct addrbook *b = addrbook_load(sdir, err, sizeof(err));
    assert_non_null(b);
    assert_int_equal(addrbook_note_key(b, "web", k.address, ADDRBOOK_NEW_KEY, SERVICE_MODE_SINGLE, time(NULL), err, sizeof(err)), 1);
    assert_int_equal(addrbook_save(b, err, sizeof(err)), 0);
    addrbook_free(b);
    assert_true(reconfigure_ok(c, WEB "," API));
    assert_null(refusal(c, find(c, "web")));
    address_of(c, "web", got);
    assert_string_equal(got, k.address);
    assert_string_not_equal(got, web);
    onion_key_clear(&k);
    address_of(c, "api", got);
    assert_string_equal(got, api);
}

static bool api_uploaded(void *arg)
{
    struct ctx *c = arg;
    return service_mgr_uploaded(c->m, find(c, "api")) || fake_ctl_failure(c->fake);
}

/* Just before tor gets the services (a restarted tor), each key is checked again: a service whose key
 * went missing since is left out of the SETCONF (tor would create a new key), the other is published;
 * its first upload goes into the record. */
static void test_publish_leaves_out_missing_key(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE], sdir[128], err[1024];
    start_web_api(c, web, api);
    remove_key_dir(c, "web");
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " API_TOR, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", api);
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, api_uploaded, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    assert_non_null(refusal(c, find(c, "web")));
    assert_non_null(strstr(refusal(c, find(c, "web")), web));
    assert_true(service_mgr_uploaded(c->m, find(c, "api")));
    struct stat st;
    char kd[256];
    snprintf(kd, sizeof(kd), "%s/state/keys/web", c->dir);
    assert_int_equal(stat(kd, &st), -1);
    /* the record has api's first publication, and not web's */
    snprintf(sdir, sizeof(sdir), "%s/state", c->dir);
    json_error_t jerr;
    char rp[256];
    snprintf(rp, sizeof(rp), "%s/%s", sdir, ADDRBOOK_FILE);
    json_t *doc = json_load_file(rp, 0, &jerr);
    assert_non_null(doc);
    json_t *svcs = json_object_get(doc, "services");
    json_t *a0 = json_array_get(json_object_get(json_object_get(svcs, "api"), "addresses"), 0);
    json_t *w0 = json_array_get(json_object_get(json_object_get(svcs, "web"), "addresses"), 0);
    assert_true(json_is_string(json_object_get(a0, "first_published")));
    assert_null(json_object_get(w0, "first_published"));
    json_decref(doc);
    (void)err;
}

/* A corrupt record stops the start (and a reload) with an error naming it; nothing is created. */
static void test_corrupt_record_stops(void **state)
{
    struct ctx *c = *state;
    char p[256], err[1024] = "";
    snprintf(p, sizeof(p), "%s/state/%s", c->dir, ADDRBOOK_FILE);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"format\": \"onionfront-addresses 1\", \"services\": ", f);
    fclose(f);
    c->conf = load_conf(c, WEB);
    new_mgr(c);
    assert_int_equal(service_ids_load_keys(c->ids, err, sizeof(err)), -1);
    assert_non_null(strstr(err, p));
    snprintf(p, sizeof(p), "%s/state/keys/web", c->dir);
    struct stat st;
    assert_int_equal(stat(p, &st), -1);
}

/* ---- status JSON and metrics ---------------------------------------------------------------------- */

static void test_to_json(void **state)
{
    struct ctx *c = *state;
    char err[512] = "", want[128];
    json_error_t jerr;
    c->conf = load_conf(c, WEB "," API);
    new_mgr(c);
    /* before the keys: no address */
    json_t *o = service_json(c, 0, NULL);
    assert_true(json_is_null(json_object_get(o, "address")));
    json_decref(o);
    if (service_ids_load_keys(c->ids, err, sizeof(err)) < 0)
        fail_msg("service_ids_load_keys: %s", err);

    static const char *const want_ports[] = {
        "[{\"virtual\": 80, \"targets\": [\"127.0.0.1:8080\"]},"
        " {\"virtual\": 443, \"targets\": [\"127.0.0.1:8443\", \"/run/web.sock\"]}]",
        "[{\"virtual\": 8000, \"targets\": [\"127.0.0.1:9000\"]}]",
    };
    json_t *all = service_mgr_to_json(c->m);
    assert_int_equal(json_array_size(all), 2);
    for (size_t i = 0; i < 2; i++) {
        const char *name = NULL, *address = NULL, *mode = NULL;
        json_t *ports = NULL;
        int uploaded = -1;
        json_int_t uploads = -1, reapplied = -1;
        int handed_over = -1;
        if (json_unpack_ex(json_array_get(all, i), &jerr, JSON_STRICT, "{s:s, s:s, s:s, s:o, s:b, s:I, s:I, s:b}",
                           "name", &name, "mode", &mode, "address", &address, "ports", &ports, "uploaded", &uploaded,
                           "uploads", &uploads, "reapplied", &reapplied, "handed", &handed_over) < 0)
            fail_msg("services[%zu]: %s", i, jerr.text);
        assert_false(handed_over); /* no tor yet */
        assert_string_equal(mode, "single");
        assert_int_equal(reapplied, 0);
        assert_string_equal(name, service_mgr_name(c->m, i));
        snprintf(want, sizeof(want), "%s.onion", service_mgr_address(c->m, i));
        assert_string_equal(address, want);
        assert_false(uploaded);
        assert_int_equal(uploads, 0);
        json_t *expected = json_loads(want_ports[i], 0, &jerr);
        assert_non_null(expected);
        if (!json_equal(ports, expected)) {
            char *got = json_dumps(ports, 0);
            fail_msg("services[%zu].ports: %s, expected %s", i, got, want_ports[i]);
        }
        json_decref(expected);
    }
    json_decref(all);
}

/* The manager's metrics (for the services web and api) count `uploaded` and `pending` services and say
 * whether web and api are up; its families are its own, so a second call on the same writer is refused. */
static void assert_metrics(const struct ctx *c, unsigned uploaded, unsigned pending, int web_up, int api_up)
{
    char want[6][128];
    struct metrics *mt = metrics_new();
    assert_non_null(mt);
    assert_int_equal(service_mgr_metrics(c->m, mt), 0);
    snprintf(want[0], sizeof(want[0]), "# TYPE onionfront_services gauge\n");
    snprintf(want[1], sizeof(want[1]), "onionfront_services{state=\"uploaded\"} %u\n", uploaded);
    snprintf(want[2], sizeof(want[2]), "onionfront_services{state=\"pending\"} %u\n", pending);
    snprintf(want[3], sizeof(want[3]), "# TYPE onionfront_service_up gauge\n");
    snprintf(want[4], sizeof(want[4]), "onionfront_service_up{service=\"web\"} %d\n", web_up);
    snprintf(want[5], sizeof(want[5]), "onionfront_service_up{service=\"api\"} %d\n", api_up);
    const char *text = metrics_text(mt, NULL);
    for (size_t i = 0; i < ARRAY_LEN(want); i++)
        if (!strstr(text, want[i]))
            fail_msg("metrics lack \"%s\" in:\n%s", want[i], text);
    assert_int_equal(service_mgr_metrics(c->m, mt), -1);
    metrics_free(mt);
}

static void test_metrics_pending(void **state)
{
    struct ctx *c = *state;
    start_mgr(c, WEB "," API);
    assert_metrics(c, 0, 2, 0, 0);
}

/* ---- what goes to tor ----------------------------------------------------------------------------- */

static bool web_uploaded_twice(void *arg)
{
    struct ctx *c = arg;
    return uploads_of(c, "web") == 2 || fake_ctl_failure(c->fake);
}

/* Many services go to a new tor in a window (service.c: at most 16 whose first uploads are unanswered,
 * steps of at least 8, or all that wait if they fit): 30 plain services and one with PoW -> the first
 * SETCONF hands over 16; 7 of them with every upload answered (UPLOAD, then UPLOADED or FAILED) free too
 * few slots for a step, so nothing is sent; the 8th does: 8 more (24); 6 more answered leave room for the
 * 6 that wait, and that SETCONF also hands over the PoW service (its turn comes when no plain one waits). */
static bool handed(const struct ctx *c, const char *name)
{
    json_t *o = service_json(c, find(c, name), NULL);
    bool h = json_is_true(json_object_get(o, "handed"));
    json_decref(o);
    return h;
}

static size_t handed_count(const struct ctx *c)
{
    size_t n = 0;
    char name[16];
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof(name), "s%02d", i);
        n += handed(c, name);
    }
    return n + handed(c, "pw");
}

/* "650 HS_DESC UPLOAD ..." then "UPLOADED" (FAILED for the last) for each of the services s<first>..s<last>,
 * one write each. */
static void step_answered(struct ctx *c, int first, int last)
{
    char name[16], addr[ONION_ADDRESS_SIZE];
    for (int i = first; i <= last; i++) {
        snprintf(name, sizeof(name), "s%02d", i);
        address_of(c, name, addr);
        step(c, FAKE_CTL_SEND, 0,
             "650 HS_DESC UPLOAD %s UNKNOWN $" FP1 "~relay1 kuO9sjs6h5s1HevfyKFLcLq78UyStWmQikgpm48sSsU\r\n"
             "650 HS_DESC %s %s UNKNOWN $" FP1 "~relay1%s\r\n",
             addr, i == last ? "FAILED" : "UPLOADED", addr,
             i == last ? " kuO9sjs6h5s1HevfyKFLcLq78UyStWmQikgpm48sSsU REASON=UPLOAD_REJECTED" : "");
    }
}

static size_t handed_wanted; /* what handed_enough waits for */

static bool handed_enough(void *arg)
{
    struct ctx *c = arg;
    return handed_count(c) >= handed_wanted || fake_ctl_failure(c->fake);
}

/* Run until `n` services are handed over, then until tor's answer to that SETCONF came (sync). */
static void wait_handed(struct ctx *c, size_t n)
{
    handed_wanted = n;
    assert_int_equal(fake_ctl_run_until(c->base, handed_enough, c, LOOP_BOUND_MS), 0);
    sync_fake(c);
}

static void test_admission_window(void **state)
{
    struct ctx *c = *state;
    char services[4096];
    size_t used = 0;
    for (int i = 0; i < 30; i++)
        used += (size_t)snprintf(services + used, sizeof(services) - used,
                                 "{'name':'s%02d','ports':[{'virtual':80,'target':'127.0.0.1:%d'}]},", i, 8000 + i);
    snprintf(services + used, sizeof(services) - used,
             "{'name':'pw','dos':{'pow':{'enabled':true}},'ports':[{'virtual':80,'target':'127.0.0.1:9000'}]}");
    start_mgr(c, services);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT_PREFIX, 0, "SETCONF HiddenServiceDir=");
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    /* Each pause lets the test look before the next events: a SETCONF where the script has none would
     * be a mismatch of the fake. */
    step(c, FAKE_CTL_PAUSE, 200, NULL);
    step_answered(c, 0, 6); /* 7 answered: 7 free slots, below a step */
    script_sync(c);
    step(c, FAKE_CTL_PAUSE, 200, NULL);
    step_answered(c, 7, 7); /* the 8th: a step */
    step(c, FAKE_CTL_EXPECT_PREFIX, 0, "SETCONF HiddenServiceDir=");
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    step(c, FAKE_CTL_PAUSE, 200, NULL);
    step_answered(c, 8, 13); /* 6 free, 6 waiting: they fit */
    step(c, FAKE_CTL_EXPECT_PREFIX, 0, "SETCONF HiddenServiceDir=");
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    attach_fake(c);

    wait_handed(c, 16);
    assert_int_equal(handed_count(c), 16);
    assert_true(handed(c, "s15"));
    assert_false(handed(c, "s16"));
    assert_false(handed(c, "pw"));
    sync_fake(c); /* the events of s00..s06 came before this answer, and no SETCONF (the script has none) */
    assert_int_equal(handed_count(c), 16);
    wait_handed(c, 24); /* s07's events, then the second SETCONF */
    assert_int_equal(handed_count(c), 24);
    assert_true(handed(c, "s23"));
    assert_false(handed(c, "s24"));
    assert_false(handed(c, "pw"));
    wait_handed(c, 31); /* s08..s13's events, then the third SETCONF */
    assert_int_equal(handed_count(c), 31);
    assert_true(handed(c, "s29"));
    assert_true(handed(c, "pw"));
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
}

/* The probe's fetches answer FAILED too (NOT_FOUND from an HSDir without the descriptor): those say
 * nothing of an upload, so 8 services whose uploads got only such answers free no slot of the window and
 * no second SETCONF goes out (the script has none: the fake would fail on it). */
static bool first_handed(void *arg)
{
    struct ctx *c = arg;
    return handed(c, "s00") || fake_ctl_failure(c->fake);
}

static void test_admission_ignores_fetch_failures(void **state)
{
    struct ctx *c = *state;
    char services[4096], name[16], addr[ONION_ADDRESS_SIZE];
    size_t used = 0;
    for (int i = 0; i < 30; i++)
        used += (size_t)snprintf(services + used, sizeof(services) - used,
                                 "%s{'name':'s%02d','ports':[{'virtual':80,'target':'127.0.0.1:%d'}]}", i ? "," : "",
                                 i, 8000 + i);
    start_mgr(c, services);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT_PREFIX, 0, "SETCONF HiddenServiceDir=");
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    step(c, FAKE_CTL_PAUSE, 200, NULL);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "s%02d", i);
        address_of(c, name, addr);
        step(c, FAKE_CTL_SEND, 0,
             "650 HS_DESC UPLOAD %s UNKNOWN $" FP1 "~relay1 kuO9sjs6h5s1HevfyKFLcLq78UyStWmQikgpm48sSsU\r\n"
             "650 HS_DESC FAILED %s NO_AUTH $" FP1 "~relay1 kuO9sjs6h5s1HevfyKFLcLq78UyStWmQikgpm48sSsU "
             "REASON=NOT_FOUND\r\n",
             addr, addr);
    }
    script_sync(c);
    step(c, FAKE_CTL_PAUSE, 300, NULL);
    script_sync(c);
    attach_fake(c);
    handed_wanted = 1;
    assert_int_equal(fake_ctl_run_until(c->base, first_handed, c, LOOP_BOUND_MS), 0);
    sync_fake(c); /* after tor's answer to the first SETCONF */
    sync_fake(c); /* after s00..s07's events: a second SETCONF would have come before this answer */
    sync_fake(c); /* after the pause */
    assert_true(handed(c, "s15"));
    assert_false(handed(c, "s16"));
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    assert_false(handed(c, "s16"));
}

static void test_attach_publishes_complete_group(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE];
    start_web_api(c, web, api);
    /* tor has its own service, and web's directory left by an earlier run (with an outdated port) */
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0,
         OTHER_GETCONF "250-HiddenServiceDir=%s/state/keys/web\r\n250-HiddenServicePort=80 unix:/old/web-80.sock\r\n"
                       "250 HiddenServiceExportCircuitID=haproxy\r\n",
         d);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " OTHER_TOR " " WEB_TOR " " API_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    /* a stranger's upload and api's failure count for nothing; web's two uploads do */
    step(c, FAKE_CTL_SEND, 0,
         "650 HS_DESC UPLOADED " STRANGER " UNKNOWN $" FP1 "~relay1\r\n"
         "650 HS_DESC FAILED %s NO_AUTH $" FP2 "~relay2 kuO9sjs6h5s1HevfyKFLcLq78UyStWmQikgpm48sSsU "
         "REASON=UPLOAD_REJECTED\r\n"
         "650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP2 "~relay2\r\n",
         api, web, web);
    /* the reload that adds a service: one SETCONF of everything, the tor's own service still first */
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " OTHER_TOR " " WEB_TOR " " API_TOR " " NEW_TOR, d, d, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    /* unpublish: only the tor's own service stays */
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " OTHER_TOR);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    attach_fake(c);

    assert_int_equal(fake_ctl_run_until(c->base, web_uploaded_twice, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    assert_true(service_mgr_uploaded(c->m, find(c, "web")));
    assert_false(service_mgr_uploaded(c->m, find(c, "api")));
    assert_int_equal(uploads_of(c, "api"), 0);
    json_t *o = service_json(c, find(c, "web"), NULL);
    assert_true(json_is_true(json_object_get(o, "uploaded")));
    json_decref(o);
    assert_metrics(c, 1, 1, 1, 0);

    /* backends only: nothing for tor (a SETCONF now would not match the script's next line), and the
     * upload state stays */
    assert_false(reconfigure_ok(c, "{'name':'web','max_streams':10,'ports':[{'virtual':80,'target':'127.0.0.1:8081'},"
                                   "{'virtual':443,'target':'127.0.0.1:8443'}]}," API));
    assert_true(service_mgr_uploaded(c->m, find(c, "web")));
    assert_int_equal(uploads_of(c, "web"), 2);
    /* a failed reload sends nothing either */
    block_key_dir(c, "bad");
    reconfigure_fails(c, WEB "," API ",{'name':'bad','ports':[{'virtual':80,'target':'127.0.0.1:1'}]}",
                      "service bad: ");
    assert_true(reconfigure_ok(c, WEB "," API "," NEW));
    sync_fake(c);
    assert_int_equal(uploads_of(c, "web"), 2);
    assert_false(service_mgr_uploaded(c->m, find(c, "new")));

    service_mgr_unpublish(c->m, unpublished_cb, c);
    assert_int_equal(c->n_done, 0); /* only once tor answered */
    assert_int_equal(fake_ctl_run_until(c->base, unpublished, c, LOOP_BOUND_MS), 0);
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    assert_int_equal(c->n_done, 1);
}

/* The dos settings are tor's: a reload that changes only them sends one SETCONF with the same key
 * directory (same address), the lines only differing from tor's defaults; turning them off sends the
 * group without them. */
#define API_DOS                                                                                              \
    "{'name':'api','dos':{'pow':{'enabled':true,'queue_rate':5,'queue_burst':50},'intro':{'enabled':true},"  \
    "'max_streams':7,'max_streams_close_circuit':true,'num_intro_points':5},"                                \
    "'ports':[{'virtual':8000,'target':'127.0.0.1:9000'}]}"
#define API_DOS_TOR                                                                                          \
    "HiddenServiceDir=\"%s/state/keys/api\" HiddenServicePort=\"8000 unix:%s/run/proxy/api-8000.sock\" "    \
    "HiddenServiceMaxStreams=\"7\" HiddenServiceMaxStreamsCloseCircuit=\"1\" "                               \
    "HiddenServiceNumIntroductionPoints=\"5\" HiddenServicePoWDefensesEnabled=\"1\" "                        \
    "HiddenServicePoWQueueRate=\"5\" HiddenServicePoWQueueBurst=\"50\" "                                     \
    "HiddenServiceEnableIntroDoSDefense=\"1\" HiddenServiceEnableIntroDoSRatePerSec=\"25\" "                 \
    "HiddenServiceEnableIntroDoSBurstPerSec=\"200\" HiddenServiceExportCircuitID=\"haproxy\""

static bool web_uploaded(void *arg);

static void test_dos_reload_resends_group(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE], got[ONION_ADDRESS_SIZE];
    start_web_api(c, web, api);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", web);
    script_sync(c);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, web_uploaded, c, LOOP_BOUND_MS), 0);
    sync_fake(c);
    assert_true(reconfigure_ok(c, WEB "," API_DOS));
    sync_fake(c);
    address_of(c, "api", got);
    assert_string_equal(got, api);
    /* the same dos settings again: nothing for tor (a SETCONF would not match the script) */
    assert_false(reconfigure_ok(c, WEB "," API_DOS));
    assert_true(reconfigure_ok(c, WEB "," API));
    sync_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    address_of(c, "api", got);
    assert_string_equal(got, api);
}

/* The probe's repair of one service (service_mgr_renew_one): a SETCONF of the group without it, then one
 * with it again — the other service's lines never leave the group, so tor keeps its descriptors; a
 * service with PoW on gets one SETCONF of the unchanged group (tor re-uploads it, same introduction
 * points); an unknown address and a manager without a connection send nothing. */
static void test_republish_one_service(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE];
    start_web_api(c, web, api);
    assert_int_equal(service_mgr_renew_one(c->m, web), -1); /* no connection yet */
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", web);
    script_sync(c);
    /* web alone: without it, then with it */
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " API_TOR, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    /* after a reload that turned PoW on for api: one SETCONF of the unchanged group */
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, web_uploaded, c, LOOP_BOUND_MS), 0);
    sync_fake(c);
    assert_int_equal(service_mgr_renew_one(c->m, STRANGER), -1);
    assert_int_equal(service_mgr_renew_one(c->m, NULL), -1);
    assert_int_equal(service_mgr_renew_one(c->m, web), 0);
    sync_fake(c);
    assert_true(reconfigure_ok(c, WEB "," API_DOS));
    sync_fake(c);
    assert_int_equal(service_mgr_renew_one(c->m, api), 0);
    sync_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
}

/* The probe's repair of one service re-reads every other service's authorized_clients in tor (tor does on
 * any SETCONF), so it checks them as the full publish does: a file planted in api's authorized_clients
 * (mallory.auth) after api was handed over leaves api out of renew_one's first SETCONF (the group without
 * web and without api: nothing of ours) and out of the one that adds web back, never handed to tor open
 * to mallory. */
#define API_PRIV                                                                                             \
    "{'name':'api','client_auth':[{'name':'alice','public_key':'N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ'}]," \
    "'ports':[{'virtual':8000,'target':'127.0.0.1:9000'}]}"

static void test_renew_one_checks_client_auth(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE], path[256];
    start_mgr(c, WEB "," API_PRIV);
    address_of(c, "web", web);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", web);
    script_sync(c);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF HiddenServiceDir");
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, web_uploaded, c, LOOP_BOUND_MS), 0);
    sync_fake(c);
    snprintf(path, sizeof(path), "%s/state/keys/api/authorized_clients/mallory.auth", d);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("descriptor:x25519:N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ\n", f);
    fclose(f);
    assert_int_equal(service_mgr_renew_one(c->m, web), 0);
    sync_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    assert_non_null(refusal(c, find(c, "api")));
}

/* A SETCONF of the group gets time in proportion to the services (tor.command_timeout + 1 s each): tor
 * answering the SETCONF of two services after 1.5 s, beyond the connection's usual 1 s, is a busy tor,
 * not a hung one, and the connection stays; the command after it gets the usual time again. */
static void test_setconf_time_sized_to_services(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE];
    c->tor_json = "{'mode':'attach','control_socket':'/run/tor/control','command_timeout':1}";
    c->conn_timeout = (struct timeval){1, 0};
    start_web_api(c, web, api);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_PAUSE, 1500, NULL);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", web);
    script_sync(c);
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, web_uploaded, c, LOOP_BOUND_MS), 0);
    sync_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    assert_int_equal(cp_conn_get_state(c->conn), CP_CONN_READY);
}

/* service_mgr_renew (a standby taking over): PoW on in one SETCONF for the service configured without it
 * (web; api has PoW on and is sent as configured), then, after tor's first HS_DESC UPLOAD of web that
 * follows the accepted SETCONF (an UPLOAD before tor's answer, or of api, is not it), the configured
 * group again, once. */
#define WEB_POW_TOR                                                                                          \
    "HiddenServiceDir=\"%s/state/keys/web\" HiddenServicePort=\"80 unix:%s/run/proxy/web-80.sock\" "        \
    "HiddenServicePort=\"443 unix:%s/run/proxy/web-443.sock\" HiddenServiceMaxStreams=\"10\" "              \
    "HiddenServicePoWDefensesEnabled=\"1\" HiddenServicePoWQueueRate=\"250\" "                              \
    "HiddenServicePoWQueueBurst=\"2500\" HiddenServiceExportCircuitID=\"haproxy\""
#define UPLOAD_EV "650 HS_DESC UPLOAD %s UNKNOWN $" FP1 "~relay1 q7ZaJL8ma1xIHj0Qy3FTbIRm9XnZdStpz4BqLrZT8F0 " \
                  "HSDIR_INDEX=0123\r\n"

#define UPLOADED_EV "650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n"

static void test_renew_pow_trigger(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE];
    start_mgr(c, WEB "," API_DOS);
    address_of(c, "web", web);
    address_of(c, "api", api);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n" UPLOADED_EV, api);
    /* the renewal's SETCONF: PoW on for web too */
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_POW_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, UPLOAD_EV "250 OK\r\n" UPLOAD_EV, web, api);
    script_sync(c); /* nothing between: neither UPLOAD turns PoW back */
    step(c, FAKE_CTL_SEND, 0, UPLOAD_EV, web);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n" UPLOAD_EV UPLOAD_EV, web, web);
    script_sync(c); /* later uploads send nothing more */
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, api_uploaded, c, LOOP_BOUND_MS), 0);
    assert_int_equal(service_mgr_renew(c->m, true), 0);
    sync_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), -1); /* the script waits */
    c->n_synced = 0;
    sync_fake(c);
    assert_true(fake_ctl_done(c->fake));
    check_fake(c);
}

/* Every service with PoW on: the renewal is one SETCONF of the configured group. A tor that refuses PoW
 * (no pow module) gets the older renewal instead: the group without ours, then with them. */
static void test_renew_all_pow_and_refused(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    start_mgr(c, WEB "," API_DOS);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n" UPLOADED_EV, service_mgr_address(c->m, 1));
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_POW_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "552 Unrecognized option\r\n");
    script_sync(c);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF HiddenServiceDir");
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, api_uploaded, c, LOOP_BOUND_MS), 0);
    assert_int_equal(service_mgr_renew(c->m, true), 0);
    sync_fake(c);
    sync_fake(c);
    check_fake(c);
    assert_true(fake_ctl_done(c->fake));
    service_mgr_detach(c->m);
    cp_conn_free(c->conn);
    c->conn = NULL;
    fake_ctl_free(c->fake);
    c->fake = NULL;
    /* PoW on everywhere: one SETCONF, as configured */
    assert_true(reconfigure_ok(c, API_DOS));
    c->n_script = c->n_texts = 0;
    c->n_ready = 0;
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " API_DOS_TOR, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n" UPLOADED_EV, service_mgr_address(c->m, 0));
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " API_DOS_TOR, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n" UPLOAD_EV, service_mgr_address(c->m, 0));
    script_sync(c);
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, api_uploaded, c, LOOP_BOUND_MS), 0);
    assert_int_equal(service_mgr_renew(c->m, true), 0);
    sync_fake(c);
    check_fake(c);
    assert_true(fake_ctl_done(c->fake));
}

/* tor.renewal "readd": the renewal removes and re-adds the services (the group without ours, then with
 * them) instead of the PoW trigger, on a tor where PoW would be safe. */
static void test_renew_readd_by_config(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    c->tor_json = "{'mode':'attach','control_socket':'/run/tor/control','renewal':'readd'}";
    start_mgr(c, WEB "," API_DOS);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n" UPLOADED_EV, service_mgr_address(c->m, 1));
    /* the renewal: without ours, then with them (no PoW SETCONF) */
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF HiddenServiceDir");
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_DOS_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, api_uploaded, c, LOOP_BOUND_MS), 0);
    assert_int_equal(service_mgr_renew(c->m, true), 0);
    sync_fake(c);
    check_fake(c);
    assert_true(fake_ctl_done(c->fake));
}

/* Onionbalance roles: an instance gets HiddenServiceOnionBalanceInstance in its group and its ob_config in
 * its key directory (written before the SETCONF is sent); a frontend's key is the master key, which only
 * Onionbalance publishes: it is never handed to tor, and tor lacking it is no reason to re-apply. */
#define OB_MASTER "2gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4ad"
#define OB_INST "{'name':'inst','ports':[{'virtual':80,'target':'127.0.0.1:7000'}],"                      \
                "'onionbalance':{'master_address':'" OB_MASTER ".onion'}}"
#define OB_FRONT "{'name':'front','onionbalance':{'frontend':true}}"
#define OB_INST_TOR                                                                                          \
    "HiddenServiceDir=\"%s/state/keys/inst\" HiddenServicePort=\"80 unix:%s/run/proxy/inst-80.sock\" "      \
    "HiddenServiceOnionBalanceInstance=\"1\" HiddenServiceExportCircuitID=\"haproxy\""

static bool never(void *arg)
{
    (void)arg;
    return false;
}

static void test_onionbalance_roles(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char path[128], buf[128] = "";
    start_mgr(c, OB_FRONT "," OB_INST);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " OB_INST_TOR, d, d);
    /* someone's CONF_CHANGED: checked; tor's answer lists the instance only, and the frontend's absence
     * is no loss (a SETCONF here would not match the script) */
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n650-CONF_CHANGED\r\n650-HiddenServiceDir=/x\r\n650 OK\r\n");
    step(c, FAKE_CTL_EXPECT, 0, GETCONF_LINE);
    step(c, FAKE_CTL_SEND, 0, "250-HiddenServiceDir=%s/state/keys/inst\r\n250 HiddenServicePort=80 x\r\n", d);
    step(c, FAKE_CTL_EXPECT_EOF, 0, NULL); /* a wrong SETCONF would arrive first */
    attach_fake(c);
    fake_ctl_run_until(c->base, never, c, 600); /* time for it: runs the loop, asserts nothing */
    service_mgr_detach(c->m);
    cp_conn_free(c->conn);
    c->conn = NULL;
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    snprintf(path, sizeof(path), "%s/state/keys/inst/ob_config", d);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "MasterOnionAddress " OB_MASTER ".onion\n");
    snprintf(path, sizeof(path), "%s/state/keys/front/ob_config", d);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    json_int_t uploads;
    json_t *o = service_json(c, find(c, "front"), &uploads);
    assert_null(json_object_get(o, "refused"));
    json_decref(o);
}

static bool web_uploaded(void *arg)
{
    struct ctx *c = arg;
    return service_mgr_uploaded(c->m, find(c, "web")) || fake_ctl_failure(c->fake);
}

static void test_fresh_tor_unpublish_and_detach(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE];
    start_mgr(c, WEB);
    address_of(c, "web", web);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", web);
    /* control-spec 3.1: the bare key resets the group, which removes every service */
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF HiddenServiceDir");
    step(c, FAKE_CTL_SEND, 0, "553 Unable to set option\r\n");
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF HiddenServiceDir");
    step(c, FAKE_CTL_CLOSE, 0, NULL); /* tor goes away instead of answering */
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, web_uploaded, c, LOOP_BOUND_MS), 0);
    check_fake(c);

    /* refused: done() all the same */
    service_mgr_unpublish(c->m, unpublished_cb, c);
    assert_int_equal(fake_ctl_run_until(c->base, unpublished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    assert_int_equal(c->n_done, 1);
    /* no answer, the connection closed: done() all the same */
    c->n_done = 0;
    service_mgr_unpublish(c->m, unpublished_cb, c);
    assert_int_equal(fake_ctl_run_until(c->base, unpublished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    assert_true(fake_ctl_done(c->fake));
    assert_int_equal(c->n_done, 1);

    /* detached: a new tor must upload again before the service counts as up; the count stays */
    service_mgr_detach(c->m);
    assert_false(service_mgr_uploaded(c->m, 0));
    assert_int_equal(uploads_of(c, "web"), 1);
    /* without a connection: done() at once */
    c->n_done = 0;
    service_mgr_unpublish(c->m, unpublished_cb, c);
    assert_int_equal(c->n_done, 1);
    /* and a reload without a connection sends nothing (there is nothing to send to) */
    assert_true(reconfigure_ok(c, WEB "," API));
}

/* tor refuses to list its own services: nothing may be published or removed, since any SETCONF would
 * replace them. */
static void test_getconf_refused_sends_nothing(void **state)
{
    struct ctx *c = *state;
    start_mgr(c, WEB);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, "552 Unrecognized configuration key \"HiddenServiceOptions\"\r\n");
    script_sync(c);
    script_sync(c); /* a SETCONF before this line would be a mismatch */
    attach_fake(c);
    sync_fake(c);
    assert_true(reconfigure_ok(c, WEB "," API));
    service_mgr_unpublish(c->m, unpublished_cb, c);
    assert_int_equal(c->n_done, 1); /* at once: nothing of ours was handed to this tor */
    sync_fake(c);
    assert_true(fake_ctl_done(c->fake));
}

/* A reload while tor's list of its own services is still on the way: the SETCONF must wait for it, or
 * it would remove them. */
static void test_reload_before_getconf_answer(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    start_mgr(c, WEB);
    script_attach(c);
    step(c, FAKE_CTL_PAUSE, 200, NULL); /* the reload happens meanwhile */
    step(c, FAKE_CTL_SEND, 0, OTHER_GETCONF "250 OK\r\n");
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " OTHER_TOR " " WEB_TOR " " API_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    attach_fake(c);
    assert_true(reconfigure_ok(c, WEB "," API)); /* needed, but not yet */
    assert_int_equal(fake_ctl_run_until(c->base, fake_finished, c, LOOP_BOUND_MS), 0);
    check_fake(c);
}

/* ---- tor reloads ----------------------------------------------------------------------------------- */

/* tor's CONF_CHANGED (as tor 0.4.9.11 sends it): the whole HiddenService group after a change. */
#define CC_BEGIN "650-CONF_CHANGED\r\n"
#define CC_END "650 OK\r\n"
#define OTHER_CC "650-HiddenServiceDir=/var/lib/tor/other\r\n650-HiddenServicePort=22 127.0.0.1:22\r\n"
#define WEB_CC                                                                                               \
    "650-HiddenServiceDir=%s/state/keys/web\r\n650-HiddenServicePort=80 unix:%s/run/proxy/web-80.sock\r\n"   \
    "650-HiddenServicePort=443 unix:%s/run/proxy/web-443.sock\r\n650-HiddenServiceMaxStreams=10\r\n"          \
    "650-HiddenServiceExportCircuitID=haproxy\r\n"
#define WEB_GETCONF                                                                                          \
    "250-HiddenServiceDir=%s/state/keys/web\r\n250-HiddenServicePort=80 unix:%s/run/proxy/web-80.sock\r\n"   \
    "250-HiddenServicePort=443 unix:%s/run/proxy/web-443.sock\r\n250-HiddenServiceMaxStreams=10\r\n"          \
    "250-HiddenServiceExportCircuitID=haproxy\r\n"
/* The attached tor's own service after the operator edited the torrc. */
#define OTHER2_GETCONF "250-HiddenServiceDir=/var/lib/tor/other2\r\n250-HiddenServicePort=23 127.0.0.1:23\r\n"
#define OTHER2_CC "650-HiddenServiceDir=/var/lib/tor/other2\r\n650-HiddenServicePort=23 127.0.0.1:23\r\n"
#define OTHER2_TOR "HiddenServiceDir=\"/var/lib/tor/other2\" HiddenServicePort=\"23 127.0.0.1:23\""
#define RELOAD_EVENT "650 SIGNAL RELOAD\r\n"

static json_int_t reapplied_of(const struct ctx *c, const char *name)
{
    json_t *o = service_json(c, find(c, name), NULL);
    json_int_t n = json_integer_value(json_object_get(o, "reapplied"));
    json_decref(o);
    return n;
}

static bool web_reapplied(void *arg)
{
    struct ctx *c = arg;
    return reapplied_of(c, "web") == 1 || fake_ctl_failure(c->fake);
}

/* A reload of tor (SIGHUP, SIGNAL RELOAD) re-reads its torrc and drops our SETCONF'd services; tor reports
 * CONF_CHANGED without them, then SIGNAL RELOAD. One GETCONF checks (for both events), and one SETCONF
 * hands the complete group back: the tor's own services as its torrc says now (the operator changed
 * them), then ours. CONF_CHANGED for our own SETCONF lists all our directories and needs no check; a
 * reload that kept ours is checked and needs nothing; after unpublish nothing is brought back. */
static void test_tor_reload_reapplies(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE];
    start_mgr(c, WEB);
    address_of(c, "web", web);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, OTHER_GETCONF "250 OK\r\n");
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " OTHER_TOR " " WEB_TOR, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n" CC_BEGIN OTHER_CC WEB_CC CC_END "650 HS_DESC UPLOADED %s UNKNOWN $" FP1
         "~relay1\r\n", d, d, d, web);
    script_sync(c); /* a GETCONF before this line would be a mismatch */
    /* the reload */
    step(c, FAKE_CTL_EXPECT, 0, SYNC_LINE);
    step(c, FAKE_CTL_SEND, 0, CC_BEGIN OTHER2_CC CC_END RELOAD_EVENT SYNC_ANSWER);
    step(c, FAKE_CTL_EXPECT, 0, GETCONF_LINE);
    step(c, FAKE_CTL_SEND, 0, OTHER2_GETCONF "250 OK\r\n");
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " OTHER2_TOR " " WEB_TOR, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n" CC_BEGIN OTHER2_CC WEB_CC CC_END, d, d, d);
    script_sync(c);
    /* a reload that kept ours (no CONF_CHANGED): checked, nothing sent */
    step(c, FAKE_CTL_EXPECT, 0, SYNC_LINE);
    step(c, FAKE_CTL_SEND, 0, RELOAD_EVENT SYNC_ANSWER);
    step(c, FAKE_CTL_EXPECT, 0, GETCONF_LINE);
    step(c, FAKE_CTL_SEND, 0, OTHER2_GETCONF WEB_GETCONF "250 OK\r\n", d, d, d);
    script_sync(c);
    /* unpublish: tor's CONF_CHANGED without ours, and a reload, bring nothing back */
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " OTHER2_TOR);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n" CC_BEGIN OTHER2_CC CC_END RELOAD_EVENT);
    script_sync(c);
    attach_fake(c);

    assert_int_equal(fake_ctl_run_until(c->base, web_uploaded, c, LOOP_BOUND_MS), 0);
    sync_fake(c);
    assert_int_equal(reapplied_of(c, "web"), 0);
    sync_fake(c); /* delivers the reload */
    assert_int_equal(fake_ctl_run_until(c->base, web_reapplied, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    sync_fake(c);
    sync_fake(c); /* the reload that kept ours */
    sync_fake(c);
    assert_int_equal(reapplied_of(c, "web"), 1);
    struct metrics *mt = metrics_new();
    assert_non_null(mt);
    assert_int_equal(service_mgr_metrics(c->m, mt), 0);
    assert_non_null(strstr(metrics_text(mt, NULL), "onionfront_service_reapplied_total{service=\"web\"} 1\n"));
    metrics_free(mt);

    service_mgr_unpublish(c->m, unpublished_cb, c);
    assert_int_equal(fake_ctl_run_until(c->base, unpublished, c, LOOP_BOUND_MS), 0);
    sync_fake(c);
    assert_true(fake_ctl_done(c->fake));
    assert_int_equal(reapplied_of(c, "web"), 1);
}

/* A reload of onionfront while a check is on its way: the check's answer predates our SETCONF (it still
 * lists api, just removed) and must be ignored — else api's group would be taken for one of the tor's own
 * and handed to tor again with the next SETCONF. */
static void test_check_answer_older_than_setconf_ignored(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE], api[ONION_ADDRESS_SIZE];
    start_web_api(c, web, api);
    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " API_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", web);
    /* a change of the group without ours (another controller emptied it) */
    step(c, FAKE_CTL_EXPECT, 0, SYNC_LINE);
    step(c, FAKE_CTL_SEND, 0, CC_BEGIN "650-HiddenServiceOptions\r\n" CC_END SYNC_ANSWER);
    step(c, FAKE_CTL_EXPECT, 0, GETCONF_LINE);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR, d, d, d); /* onionfront's reload removes api */
    step(c, FAKE_CTL_SEND, 0,
         WEB_GETCONF "250-HiddenServiceDir=%s/state/keys/api\r\n250-HiddenServicePort=8000 unix:%s/run/proxy/api-8000.sock\r\n"
                     "250 HiddenServiceExportCircuitID=haproxy\r\n250 OK\r\n",
         d, d, d, d, d);
    script_sync(c);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR " " NEW_TOR, d, d, d, d, d);
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n");
    script_sync(c);
    attach_fake(c);

    assert_int_equal(fake_ctl_run_until(c->base, web_uploaded, c, LOOP_BOUND_MS), 0);
    sync_fake(c); /* delivers the change; the check's GETCONF is on its way */
    assert_true(reconfigure_ok(c, WEB));
    sync_fake(c);
    assert_true(reconfigure_ok(c, WEB "," NEW));
    sync_fake(c);
    assert_true(fake_ctl_done(c->fake));
    assert_int_equal(reapplied_of(c, "web"), 0);
}

#define HID "{'name':'hid','mode':'anonymous','ports':[{'virtual':80,'target':'127.0.0.1:7001'}]}"
#define HID2 "{'name':'hid2','mode':'anonymous','ports':[{'virtual':80,'target':'127.0.0.1:7002'}]}"

/* Per-service modes: a single-onion tor's manager hands tor only the single services, and a reload that
 * adds or removes an anonymous service (another tor's) sends it nothing; the anonymous tor's manager
 * hosts only the anonymous ones. */
static void test_mode_hosts_only_its_services(void **state)
{
    struct ctx *c = *state;
    const char *d = c->dir;
    char web[ONION_ADDRESS_SIZE];
    start_mgr(c, WEB "," HID);
    address_of(c, "web", web);
    assert_true(service_mgr_hosts(c->m, find(c, "web")));
    assert_false(service_mgr_hosts(c->m, find(c, "hid")));
    struct service_mgr *anon = service_mgr_new(c->conf, c->ids);
    assert_non_null(anon);
    service_mgr_set_mode(anon, SERVICE_MODE_ANONYMOUS);
    assert_false(service_mgr_hosts(anon, find(c, "web")));
    assert_true(service_mgr_hosts(anon, find(c, "hid")));
    service_mgr_free(anon);

    script_attach(c);
    step(c, FAKE_CTL_SEND, 0, NO_HS_GETCONF);
    step(c, FAKE_CTL_EXPECT, 0, "SETCONF " WEB_TOR, d, d, d); /* no hid */
    step(c, FAKE_CTL_SEND, 0, "250 OK\r\n650 HS_DESC UPLOADED %s UNKNOWN $" FP1 "~relay1\r\n", web);
    script_sync(c);
    attach_fake(c);
    assert_int_equal(fake_ctl_run_until(c->base, web_uploaded, c, LOOP_BOUND_MS), 0);
    check_fake(c);
    /* another anonymous service, then none: the single-onion tor's view does not change */
    assert_false(reconfigure_ok(c, WEB "," HID "," HID2));
    assert_false(reconfigure_ok(c, WEB));
    sync_fake(c);
    check_fake(c);
    json_t *o = service_json(c, find(c, "web"), NULL);
    assert_string_equal(json_string_value(json_object_get(o, "mode")), "single");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_keys_created_on_first_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys_same_after_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_keys_error_names_service, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconfigure_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconfigure_error_keeps_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_known_service_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deliberate_change_taken_on_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_publish_leaves_out_missing_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_record_stops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_to_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_publishes_complete_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admission_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admission_ignores_fetch_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mode_hosts_only_its_services, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dos_reload_resends_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_pow_trigger, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_all_pow_and_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_readd_by_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fresh_tor_unpublish_and_detach, setup, teardown),
        cmocka_unit_test_setup_teardown(test_getconf_refused_sends_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_before_getconf_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tor_reload_reapplies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_answer_older_than_setconf_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_republish_one_service, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_one_checks_client_auth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_setconf_time_sized_to_services, setup, teardown),
        cmocka_unit_test_setup_teardown(test_onionbalance_roles, setup, teardown),
    };
    signal(SIGPIPE, SIG_IGN); /* cp_conn.h */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
