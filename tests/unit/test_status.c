/* test_status.c — unit tests for sidecar/ops/status.c and status_server.c: the request parser (table),
 * the reply encoder with fake providers, the peer check and what each access level may run (tables:
 * admin, read-only, none), and the server on a real unix socket in a temporary directory
 * driven by the real event loop: every command, pipelining, split and CRLF lines, malformed and unknown
 * requests, an oversized line, 50 clients at once, the connection cap, a client that never reads large
 * replies (backpressure and the write timeout, while another client is still served), idle clients,
 * rejected peers (an injected credential lookup, and real ones: forked children that setuid to nobody
 * — the tests run as root), a read-only peer refused restart-tor, log-level and reload but still served
 * status (and an admin turned read-only by a reload, on its open connection), the socket file's mode
 * under any umask, stale and live sockets, reload
 * success and failure; the limits per peer (issue 15): the per-uid limit and the reserved slots, the
 * lifetime of an active connection, a client served with the spare descriptor while the process is out
 * of descriptors. Also the optional metrics HTTP endpoint (sidecar/ops/metrics_http.c), which serves the
 * same text as the socket's "metrics": 200 with the text format's content type, HEAD, 404, 405, 500
 * from a failing render function, a clear error for a port in use, requests evhttp refuses (counted),
 * the connection cap with slow clients trickling bytes past the whole-connection deadline, a client
 * sending a byte a second closed at the deadline (and freed), and the listener's pause on accept errors. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/core/metrics.h"
#include "sidecar/ops/metrics_http.h"
#include "sidecar/ops/status.h"
#include "tests/fake/tmpdir.h"

/* ---- fake providers -------------------------------------------------------------------------------- */

struct fake {
    unsigned calls[STATUS_CMD_COUNT_];
    bool reload_fails;
    bool rolling; /* restart-tor was accepted once */
    bool status_fails; /* the provider returns NULL */
    size_t metrics_size; /* 0: a small text */
};

static json_t *fake_status(void *arg)
{
    struct fake *f = arg;
    f->calls[STATUS_CMD_STATUS]++;
    return f->status_fails ? NULL : json_pack("{s:s, s:{s:s, s:i}}", "state", "ok", "tor", "state", "running",
                                              "bootstrap_progress", 100);
}

static json_t *fake_services(void *arg)
{
    struct fake *f = arg;
    f->calls[STATUS_CMD_SERVICES]++;
    return json_pack("[{s:s, s:s}]", "name", "alpha", "address", "abc.onion");
}

static json_t *fake_backends(void *arg)
{
    struct fake *f = arg;
    f->calls[STATUS_CMD_BACKENDS]++;
    return json_pack("[{s:s, s:[{s:s, s:s}]}]", "service", "alpha", "backends", "name", "web1", "state", "up");
}

static json_t *fake_circuits(void *arg)
{
    struct fake *f = arg;
    f->calls[STATUS_CMD_CIRCUITS]++;
    return json_pack("{s:i}", "HS_SERVICE_REND/1", 3);
}

static char *fake_metrics(void *arg)
{
    struct fake *f = arg;
    f->calls[STATUS_CMD_METRICS]++;
    if (!f->metrics_size)
        return strdup("# HELP x_total A test.\n# TYPE x_total counter\nx_total{a=\"q\\\"\"} 1\n");
    char *t = malloc(f->metrics_size + 1);
    if (t) {
        memset(t, 'm', f->metrics_size);
        t[f->metrics_size] = '\0';
    }
    return t;
}

static int fake_reload(void *arg, char *msg, size_t msglen)
{
    struct fake *f = arg;
    f->calls[STATUS_CMD_RELOAD]++;
    if (f->reload_fails) {
        snprintf(msg, msglen, "services[0].ports[0].virtual: must be 1-65535; keeping the running config");
        return -1;
    }
    snprintf(msg, msglen, "applied (no change for tor)");
    return 0;
}

/* log-level's provider gets no arg (main.c hands in log_override itself): it records here. */
static struct {
    unsigned calls;
    char level[16];
    unsigned seconds;
} fake_log;

static int fake_log_level(const char *level, unsigned seconds, char *msg, size_t msglen)
{
    fake_log.calls++;
    snprintf(fake_log.level, sizeof(fake_log.level), "%s", level);
    fake_log.seconds = seconds;
    if (strcmp(level, "loud") == 0) {
        snprintf(msg, msglen, "level: must be debug, info, notice, warn, error or config");
        return -1;
    }
    snprintf(msg, msglen, "log level %s for %u s", level, seconds);
    return 0;
}

/* restart-tor: refused while the fake says a roll runs. */
static int fake_restart_tor(void *arg, char *msg, size_t msglen)
{
    struct fake *f = arg;
    f->calls[STATUS_CMD_RESTART_TOR]++;
    if (f->rolling) {
        snprintf(msg, msglen, "a rolling restart is already running");
        return -1;
    }
    f->rolling = true;
    snprintf(msg, msglen, "rolling restart of 2 tors started");
    return 0;
}

static void fake_providers(struct status_providers *p, struct fake *f)
{
    *p = (struct status_providers){f,           fake_status, fake_services,  fake_backends,    fake_circuits,
                                   fake_metrics, fake_reload, fake_log_level, fake_restart_tor, fake_services};
}

/* ---- the parser -------------------------------------------------------------------------------------- */

struct parse_case {
    const char *line;
    size_t len; /* 0: strlen(line) */
    enum status_parse_result result;
    enum status_cmd cmd;
    const char *id;  /* the id as compact JSON, or NULL for none */
    const char *err; /* substring of the error */
};

static const struct parse_case parse_cases[] = {
    {"{\"cmd\":\"status\"}", 0, STATUS_PARSE_OK, STATUS_CMD_STATUS, NULL, NULL},
    {"{\"cmd\":\"services\",\"id\":7}", 0, STATUS_PARSE_OK, STATUS_CMD_SERVICES, "7", NULL},
    {"{\"id\":\"a-b\", \"cmd\": \"backends\"}", 0, STATUS_PARSE_OK, STATUS_CMD_BACKENDS, "\"a-b\"", NULL},
    {" {\"cmd\":\"circuits\"} \r", 0, STATUS_PARSE_OK, STATUS_CMD_CIRCUITS, NULL, NULL},
    {"{\"cmd\":\"metrics\",\"id\":-3}", 0, STATUS_PARSE_OK, STATUS_CMD_METRICS, "-3", NULL},
    {"{\"cmd\":\"reload\"}", 0, STATUS_PARSE_OK, STATUS_CMD_RELOAD, NULL, NULL},
    {"{\"cmd\":\"help\"}", 0, STATUS_PARSE_OK, STATUS_CMD_HELP, NULL, NULL},
    {"status", 0, STATUS_PARSE_OK, STATUS_CMD_STATUS, NULL, NULL},
    {"  reload\r", 0, STATUS_PARSE_OK, STATUS_CMD_RELOAD, NULL, NULL},
    {"restart-tor", 0, STATUS_PARSE_OK, STATUS_CMD_RESTART_TOR, NULL, NULL},
    {"{\"cmd\":\"restart-tor\"}", 0, STATUS_PARSE_OK, STATUS_CMD_RESTART_TOR, NULL, NULL},
    {"metrics\t", 0, STATUS_PARSE_OK, STATUS_CMD_METRICS, NULL, NULL},
    {"", 0, STATUS_PARSE_EMPTY, 0, NULL, NULL},
    {" \t \r", 0, STATUS_PARSE_EMPTY, 0, NULL, NULL},
    {"\r", 0, STATUS_PARSE_EMPTY, 0, NULL, NULL},
    {"nope", 0, STATUS_PARSE_ERROR, 0, NULL, "unknown command \"nope\""},
    {"Status", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed request"},
    {"status please", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed request"},
    {"[\"status\"]", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed request"},
    {"{\"cmd\":\"nope\"}", 0, STATUS_PARSE_ERROR, 0, NULL, "cmd: unknown command \"nope\""},
    {"{\"cmd\":\"nope\",\"id\":5}", 0, STATUS_PARSE_ERROR, 0, "5", "cmd: unknown command"},
    {"{\"cmd\":1}", 0, STATUS_PARSE_ERROR, 0, NULL, "cmd: must be a string"},
    {"{\"cmd\":null,\"id\":\"x\"}", 0, STATUS_PARSE_ERROR, 0, "\"x\"", "cmd: must be a string"},
    {"{}", 0, STATUS_PARSE_ERROR, 0, NULL, "cmd: missing"},
    {"{\"id\":1}", 0, STATUS_PARSE_ERROR, 0, "1", "cmd: missing"},
    {"{\"cmd\":\"status\",\"verbose\":true}", 0, STATUS_PARSE_ERROR, 0, NULL, "unknown member \"verbose\""},
    {"{\"cmd\":\"status\",\"cmd\":\"reload\"}", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed JSON"},
    {"{\"cmd\":\"status\"", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed JSON at column"},
    {"{\"cmd\":\"status\"} {}", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed JSON"},
    {"{\"cmd\":\"stat\\u0000us\"}", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed JSON"},
    {"{\"cmd\":\"status\",\"id\":[1]}", 0, STATUS_PARSE_ERROR, 0, NULL, "id: must be"},
    {"{\"cmd\":\"status\",\"id\":1.5}", 0, STATUS_PARSE_ERROR, 0, NULL, "id: must be"},
    {"{\"cmd\":\"status\",\"id\":\"0123456789012345678901234567890123456789012345678901234567890123X\"}", 0,
     STATUS_PARSE_ERROR, 0, NULL, "id: must be"},
    {"{\"cmd\":\"\xff\xfe\"}", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed JSON"},
    {"\xff\xfe", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed request"},
    {"{\"cmd\":\"\xc3\xa9t\xc3\xa9\"}", 0, STATUS_PARSE_ERROR, 0, NULL, "unknown command \"??t??\""},
    {"{\"\x01\":1,\"cmd\":\"status\"}", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed JSON"},
    {"{\"k\\u0001\":1,\"cmd\":\"status\"}", 0, STATUS_PARSE_ERROR, 0, NULL, "unknown member \"k?\""},
    {"stat\0us", 7, STATUS_PARSE_ERROR, 0, NULL, "malformed request"},
    {"{\"cmd\":\"status\"}\0", 17, STATUS_PARSE_ERROR, 0, NULL, "malformed JSON"},
    {"{\"cmd\":\"log-level\",\"level\":\"debug\",\"seconds\":300}", 0, STATUS_PARSE_OK, STATUS_CMD_LOG_LEVEL, NULL,
     NULL},
    {"{\"cmd\":\"log-level\",\"level\":\"info\",\"id\":2}", 0, STATUS_PARSE_OK, STATUS_CMD_LOG_LEVEL, "2", NULL},
    {"log-level debug 300", 0, STATUS_PARSE_OK, STATUS_CMD_LOG_LEVEL, NULL, NULL},
    {" log-level\tconfig \r", 0, STATUS_PARSE_OK, STATUS_CMD_LOG_LEVEL, NULL, NULL},
    {"log-level", 0, STATUS_PARSE_ERROR, 0, NULL, "log-level: level must be"},
    {"log-level DEBUG", 0, STATUS_PARSE_ERROR, 0, NULL, "log-level: level must be"},
    {"log-level debug 0", 0, STATUS_PARSE_ERROR, 0, NULL, "log-level: seconds must be 1-604800"},
    {"log-level debug 604801", 0, STATUS_PARSE_ERROR, 0, NULL, "log-level: seconds must be 1-604800"},
    {"log-level debug 99999999999999999999", 0, STATUS_PARSE_ERROR, 0, NULL, "seconds must be"},
    {"log-level debug 3x", 0, STATUS_PARSE_ERROR, 0, NULL, "seconds must be"},
    {"log-level debug -3", 0, STATUS_PARSE_ERROR, 0, NULL, "seconds must be"},
    {"log-level debug 3 4", 0, STATUS_PARSE_ERROR, 0, NULL, "takes LEVEL and optionally SECONDS"},
    {"log-level averyveryverylongword", 0, STATUS_PARSE_ERROR, 0, NULL, "level must be"},
    {"log-levelx", 0, STATUS_PARSE_ERROR, 0, NULL, "unknown command \"log-levelx\""},
    {"reload now", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed request"},
    {"{\"cmd\":\"log-level\"}", 0, STATUS_PARSE_ERROR, 0, NULL, "log-level: level: missing"},
    {"{\"cmd\":\"log-level\",\"level\":5,\"id\":9}", 0, STATUS_PARSE_ERROR, 0, "9", "level: must be a string"},
    {"{\"cmd\":\"log-level\",\"level\":\"debug\",\"seconds\":\"5\"}", 0, STATUS_PARSE_ERROR, 0, NULL,
     "seconds: must be an integer"},
    {"{\"cmd\":\"log-level\",\"level\":\"debug\",\"seconds\":-1}", 0, STATUS_PARSE_ERROR, 0, NULL,
     "seconds must be 1-604800"},
    {"{\"cmd\":\"log-level\",\"level\":\"de\\u0001bug\"}", 0, STATUS_PARSE_ERROR, 0, NULL, "level must be"},
    {"{\"cmd\":\"status\",\"level\":\"debug\"}", 0, STATUS_PARSE_ERROR, 0, NULL, "status: takes no \"level\""},
    {"{\"cmd\":\"reload\",\"seconds\":1}", 0, STATUS_PARSE_ERROR, 0, NULL, "reload: takes no \"seconds\""},
    {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 0, STATUS_PARSE_ERROR, 0, NULL, "malformed request"},
    {"{\"a\":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]],\"cmd\":\"help\"}", 0,
     STATUS_PARSE_ERROR, 0, NULL, "unknown member \"a\""},
};

static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            return false;
    return true;
}

static void test_parse_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
        const struct parse_case *t = &parse_cases[i];
        struct status_request req;
        char err[512];
        size_t len = t->len ? t->len : strlen(t->line);
        enum status_parse_result r = status_parse_request(t->line, len, &req, err, sizeof(err));
        if (r != t->result || (r == STATUS_PARSE_OK && req.cmd != t->cmd) ||
            (t->err && !strstr(err, t->err)) || !printable(err)) {
            fail_msg("case %zu (%s): result %d cmd %d err \"%s\"", i, t->line, r, req.cmd, err);
        }
        if (t->id) {
            assert_non_null(req.id);
            char *dump = json_dumps(req.id, JSON_ENCODE_ANY | JSON_COMPACT);
            assert_string_equal(dump, t->id);
            free(dump);
        } else {
            assert_null(req.id);
        }
        if (r == STATUS_PARSE_OK)
            assert_string_equal(err, "");
        status_request_clear(&req);
    }
}

/* log-level's arguments arrive in the request, from either form. */
static void test_parse_log_level_args(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        const char *level;
        unsigned seconds;
    } cases[] = {
        {"log-level debug 300", "debug", 300},
        {"log-level  warn", "warn", 0},
        {"{\"cmd\":\"log-level\",\"level\":\"notice\",\"seconds\":604800}", "notice", 604800},
        {"{\"seconds\":1,\"cmd\":\"log-level\",\"level\":\"config\"}", "config", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct status_request req;
        char err[256];
        assert_int_equal(status_parse_request(cases[i].line, strlen(cases[i].line), &req, err, sizeof(err)),
                         STATUS_PARSE_OK);
        assert_int_equal(req.cmd, STATUS_CMD_LOG_LEVEL);
        assert_string_equal(req.level, cases[i].level);
        assert_int_equal(req.seconds, cases[i].seconds);
        status_request_clear(&req);
    }
}

static void test_parse_lengths(void **state)
{
    (void)state;
    /* A request of exactly STATUS_MAX_LINE bytes is parsed (here: padded with spaces); one more is not. */
    char *line = malloc(STATUS_MAX_LINE + 2);
    struct status_request req;
    char err[256];
    const char *json = "{\"cmd\":\"status\"}";
    memset(line, ' ', STATUS_MAX_LINE + 1);
    memcpy(line, json, strlen(json));
    assert_int_equal(status_parse_request(line, STATUS_MAX_LINE, &req, err, sizeof(err)), STATUS_PARSE_OK);
    status_request_clear(&req);
    line[STATUS_MAX_LINE] = '\r'; /* a CR does not count */
    assert_int_equal(status_parse_request(line, STATUS_MAX_LINE + 1, &req, err, sizeof(err)), STATUS_PARSE_OK);
    status_request_clear(&req);
    line[STATUS_MAX_LINE] = ' ';
    assert_int_equal(status_parse_request(line, STATUS_MAX_LINE + 1, &req, err, sizeof(err)), STATUS_PARSE_ERROR);
    assert_non_null(strstr(err, "request too long"));
    status_request_clear(&req);
    /* A tiny error buffer is never overrun and stays terminated. */
    char small[8];
    memset(small, 'x', sizeof(small));
    assert_int_equal(status_parse_request("nope", 4, &req, small, sizeof(small)), STATUS_PARSE_ERROR);
    assert_int_equal(strlen(small), sizeof(small) - 1);
    status_request_clear(&req);
    free(line);
}

/* ---- replies ----------------------------------------------------------------------------------------- */

/* Parse a reply line: exactly one "\n", at the end; returns the object. */
static json_t *reply_of(const char *line, size_t len)
{
    assert_non_null(line);
    assert_true(len >= 2);
    assert_int_equal(line[len - 1], '\n');
    assert_null(memchr(line, '\n', len - 1));
    json_error_t jerr;
    json_t *r = json_loadb(line, len - 1, JSON_REJECT_DUPLICATES, &jerr);
    if (!r)
        fail_msg("reply is not JSON: %s: %.*s", jerr.text, (int)len, line);
    assert_true(json_is_object(r));
    return r;
}

static json_t *execute(const struct status_providers *p, enum status_cmd cmd, json_t *id)
{
    struct status_request req = {.cmd = cmd, .id = id};
    size_t len = 0;
    char *line = status_execute(p, &req, &len);
    json_t *r = reply_of(line, len);
    free(line);
    return r;
}

static void assert_ok_reply(json_t *r)
{
    assert_true(json_is_true(json_object_get(r, "ok")));
    assert_non_null(json_object_get(r, "result"));
    assert_null(json_object_get(r, "error"));
}

static void assert_error_reply(json_t *r, const char *substr)
{
    assert_true(json_is_false(json_object_get(r, "ok")));
    assert_null(json_object_get(r, "result"));
    const char *e = json_string_value(json_object_get(r, "error"));
    assert_non_null(e);
    if (!strstr(e, substr))
        fail_msg("error \"%s\" does not mention \"%s\"", e, substr);
}

static void test_execute_each_command(void **state)
{
    (void)state;
    struct fake f = {0};
    struct status_providers p;
    fake_providers(&p, &f);
    json_t *id = json_integer(42);

    json_t *r = execute(&p, STATUS_CMD_STATUS, id);
    assert_ok_reply(r);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "result"), "state")), "ok");
    assert_int_equal(json_integer_value(json_object_get(r, "id")), 42);
    json_decref(r);

    r = execute(&p, STATUS_CMD_SERVICES, NULL);
    assert_ok_reply(r);
    assert_null(json_object_get(r, "id"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(r, "result"), 0), "name")),
                        "alpha");
    json_decref(r);

    r = execute(&p, STATUS_CMD_BACKENDS, NULL);
    assert_ok_reply(r);
    assert_true(json_is_array(json_object_get(r, "result")));
    json_decref(r);

    r = execute(&p, STATUS_CMD_CIRCUITS, NULL);
    assert_ok_reply(r);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "result"), "HS_SERVICE_REND/1")), 3);
    json_decref(r);

    r = execute(&p, STATUS_CMD_METRICS, NULL);
    assert_ok_reply(r);
    assert_string_equal(json_string_value(json_object_get(r, "result")),
                        "# HELP x_total A test.\n# TYPE x_total counter\nx_total{a=\"q\\\"\"} 1\n");
    json_decref(r);

    r = execute(&p, STATUS_CMD_RELOAD, id);
    assert_ok_reply(r);
    assert_true(json_is_true(json_object_get(json_object_get(r, "result"), "reloaded")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "result"), "message")),
                        "applied (no change for tor)");
    json_decref(r);

    f.reload_fails = true;
    r = execute(&p, STATUS_CMD_RELOAD, id);
    assert_error_reply(r, "services[0].ports[0].virtual: must be 1-65535");
    assert_int_equal(json_integer_value(json_object_get(r, "id")), 42);
    json_decref(r);

    r = execute(&p, STATUS_CMD_RESTART_TOR, NULL);
    assert_ok_reply(r);
    assert_true(json_is_true(json_object_get(json_object_get(r, "result"), "started")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "result"), "message")),
                        "rolling restart of 2 tors started");
    json_decref(r);
    r = execute(&p, STATUS_CMD_RESTART_TOR, NULL);
    assert_error_reply(r, "already running");
    json_decref(r);
    assert_int_equal(f.calls[STATUS_CMD_RESTART_TOR], 2);

    r = execute(&p, STATUS_CMD_HELP, NULL);
    assert_ok_reply(r);
    json_t *names = json_object_get(r, "result");
    assert_int_equal(json_array_size(names), STATUS_CMD_COUNT_);
    for (int i = 0; i < STATUS_CMD_COUNT_; i++)
        assert_string_equal(json_string_value(json_array_get(names, (size_t)i)), status_cmd_str((enum status_cmd)i));
    json_decref(r);

    for (int i = 0; i < STATUS_CMD_HELP; i++)
        assert_int_equal(f.calls[i], i == STATUS_CMD_RELOAD ? 2 : 1);

    /* log-level: the provider gets the parsed arguments; its refusal is the error. */
    struct status_request req;
    char err[256], *line;
    size_t len = 0;
    memset(&fake_log, 0, sizeof(fake_log));
    assert_int_equal(status_parse_request("log-level debug 300", 19, &req, err, sizeof(err)), STATUS_PARSE_OK);
    line = status_execute(&p, &req, &len);
    r = reply_of(line, len);
    free(line);
    assert_ok_reply(r);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "result"), "level")), "debug");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "result"), "message")),
                        "log level debug for 300 s");
    json_decref(r);
    status_request_clear(&req);
    assert_int_equal(fake_log.calls, 1);
    assert_string_equal(fake_log.level, "debug");
    assert_int_equal(fake_log.seconds, 300);
    assert_int_equal(status_parse_request("log-level loud", 14, &req, err, sizeof(err)), STATUS_PARSE_OK);
    line = status_execute(&p, &req, &len);
    r = reply_of(line, len);
    free(line);
    assert_error_reply(r, "level: must be debug");
    json_decref(r);
    status_request_clear(&req);
    assert_int_equal(fake_log.calls, 2);
    json_decref(id);
}

static void test_execute_missing_and_failing_providers(void **state)
{
    (void)state;
    struct fake f = {.status_fails = true};
    struct status_providers p = {.arg = &f, .status = fake_status};
    json_t *r = execute(&p, STATUS_CMD_STATUS, NULL);
    assert_error_reply(r, "status: internal error");
    json_decref(r);
    for (int i = STATUS_CMD_SERVICES; i < STATUS_CMD_COUNT_; i++) {
        if (i == STATUS_CMD_HELP)
            continue; /* needs no provider */
        r = execute(&p, (enum status_cmd)i, NULL);
        char want[64];
        snprintf(want, sizeof(want), "%s: not available", status_cmd_str((enum status_cmd)i));
        assert_error_reply(r, want);
        json_decref(r);
    }
}

static char *bad_utf8_metrics(void *arg)
{
    (void)arg;
    return strdup("x 1\n\xff\n");
}

static void test_error_line_never_empty(void **state)
{
    (void)state;
    size_t len = 0;
    char *line = status_error_line("bad \xff byte", NULL, &len);
    json_t *r = reply_of(line, len);
    assert_true(json_is_false(json_object_get(r, "ok")));
    json_decref(r);
    free(line);

    struct status_providers p = {.metrics = bad_utf8_metrics};
    r = execute(&p, STATUS_CMD_METRICS, NULL);
    assert_error_reply(r, "not valid UTF-8");
    json_decref(r);
}

/* ---- the peer check -------------------------------------------------------------------------------- */

/* status_peer_access: admin (root, our uid, admin_uids/admin_gids), read-only (allowed_uids/allowed_gids)
 * or nothing; an admin listing wins over a read-only one. */
static void test_peer_access_table(void **state)
{
    (void)state;
    const uid_t uids[] = {1001, 1002}, admins[] = {1500};
    const gid_t gids[] = {2001}, admin_gids[] = {2500};
    const gid_t g_with[] = {10, 2001}, g_without[] = {10, 20}, g_admin[] = {10, 2500};
    struct status_acl acl = {.self_uid = 500, .uids = uids, .n_uids = 2, .gids = gids, .n_gids = 1};
    struct status_acl adm = {.self_uid = 500, .uids = uids, .n_uids = 2, .gids = gids, .n_gids = 1,
                             .admin_uids = admins, .n_admin_uids = 1, .admin_gids = admin_gids, .n_admin_gids = 1};
    struct status_acl none = {.self_uid = 500};
#define N STATUS_ACCESS_NONE
#define R STATUS_ACCESS_READ
#define A STATUS_ACCESS_ADMIN
    const struct {
        const struct status_acl *acl;
        struct status_peer peer;
        enum status_access want;
    } cases[] = {
        {&none, {1, 0, 0, NULL, 0}, A},            /* root */
        {&none, {1, 500, 9, NULL, 0}, A},          /* the daemon's own user */
        {&none, {1, 1001, 9, NULL, 0}, N},         /* no lists: nobody else */
        {&acl, {1, 1001, 9, NULL, 0}, R},          /* allowed uid: reads only */
        {&acl, {1, 1002, 9, NULL, 0}, R},
        {&acl, {1, 1003, 9, NULL, 0}, N},
        {&acl, {1, 1003, 2001, NULL, 0}, R},       /* allowed primary group */
        {&acl, {1, 1003, 9, g_with, 2}, R},        /* allowed supplementary group */
        {&acl, {1, 1003, 9, g_without, 2}, N},
        {&acl, {1, 2001, 1001, NULL, 0}, N},       /* uids and gids are not mixed up */
        {&acl, {1, 65534, 65534, NULL, 0}, N},
        {&acl, {1, 1500, 9, NULL, 0}, N},          /* admin_uids of another config */
        {&adm, {1, 1500, 9, NULL, 0}, A},          /* admin uid, not in allowed_uids */
        {&adm, {1, 1001, 9, NULL, 0}, R},          /* allowed_uids stay read-only */
        {&adm, {1, 1003, 2500, NULL, 0}, A},       /* admin primary group */
        {&adm, {1, 1003, 9, g_admin, 2}, A},       /* admin supplementary group */
        {&adm, {1, 1001, 9, g_admin, 2}, A},       /* read-only uid in an admin group: admin */
        {&adm, {1, 2500, 1500, NULL, 0}, N},       /* admin uids and gids are not mixed up */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (status_peer_access(cases[i].acl, &cases[i].peer) != cases[i].want)
            fail_msg("case %zu: uid %u gid %u: expected access %d, got %d", i, (unsigned)cases[i].peer.uid,
                     (unsigned)cases[i].peer.gid, cases[i].want, status_peer_access(cases[i].acl, &cases[i].peer));
#undef N
#undef R
#undef A
}

/* status_authorize: which command each level may run, and the refusal's text. */
static void test_authorize_table(void **state)
{
    (void)state;
    const struct {
        enum status_cmd cmd;
        enum status_access access;
        bool ok;
        const char *err;
    } cases[] = {
        {STATUS_CMD_STATUS, STATUS_ACCESS_READ, true, ""},
        {STATUS_CMD_SERVICES, STATUS_ACCESS_READ, true, ""},
        {STATUS_CMD_BACKENDS, STATUS_ACCESS_READ, true, ""},
        {STATUS_CMD_CIRCUITS, STATUS_ACCESS_READ, true, ""},
        {STATUS_CMD_METRICS, STATUS_ACCESS_READ, true, ""},
        {STATUS_CMD_HELP, STATUS_ACCESS_READ, true, ""},
        {STATUS_CMD_RESTART_TOR, STATUS_ACCESS_READ, false,
         "restart-tor: permission denied: uid 65534 may read status but not run admin commands; add it to "
         "status.admin_uids"},
        {STATUS_CMD_RELOAD, STATUS_ACCESS_READ, false, "reload: permission denied: uid 65534 may read status"},
        {STATUS_CMD_LOG_LEVEL, STATUS_ACCESS_READ, false, "log-level: permission denied: uid 65534 may read"},
        {STATUS_CMD_RESTART_TOR, STATUS_ACCESS_ADMIN, true, ""},
        {STATUS_CMD_RELOAD, STATUS_ACCESS_ADMIN, true, ""},
        {STATUS_CMD_LOG_LEVEL, STATUS_ACCESS_ADMIN, true, ""},
        {STATUS_CMD_STATUS, STATUS_ACCESS_NONE, false, "status: permission denied: uid 65534 may not use"},
        {STATUS_CMD_COUNT_, STATUS_ACCESS_READ, false, "permission denied"}, /* unknown: admin only */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[512] = "";
        bool ok = status_authorize(cases[i].cmd, cases[i].access, 65534, err, sizeof(err));
        if (ok != cases[i].ok || !strstr(err, cases[i].err) || (ok && err[0]))
            fail_msg("case %zu (%s, access %d): %s \"%s\"", i, status_cmd_str(cases[i].cmd), cases[i].access,
                     ok ? "allowed" : "refused", err);
    }
    assert_true(status_cmd_is_admin(STATUS_CMD_RESTART_TOR));
    assert_false(status_cmd_is_admin(STATUS_CMD_METRICS));
}

/* ---- the server on a real socket --------------------------------------------------------------------- */

struct tclient {
    int fd;
    char *buf;
    size_t len, cap;
    bool eof;
    bool noread; /* loop_until leaves this one alone */
};

struct ctx {
    char dir[64];
    char run_dir[80];
    char path[100];
    struct event_base *base;
    struct status_server *srv;
    struct fake fake;
    struct status_providers prov;
    struct status_conf conf;
    uid_t uids[4];
    gid_t gids[4];
    struct tclient *clients[80];
    size_t n_clients;
    /* the injected peer lookup */
    struct status_peer fake_peer;
    gid_t fake_groups[4];
};

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return -1;
    if (tmpdir_make(c->dir, sizeof(c->dir), "test_status") < 0) {
        free(c);
        return -1;
    }
    chmod(c->dir, 0711); /* the forked "nobody" children must reach the socket */
    snprintf(c->run_dir, sizeof(c->run_dir), "%s/run", c->dir);
    snprintf(c->path, sizeof(c->path), "%s/status.sock", c->run_dir);
    c->base = event_base_new();
    fake_providers(&c->prov, &c->fake);
    c->srv = status_server_new(c->base, &c->prov);
    c->conf.socket = c->path;
    c->conf.allowed_uids = c->uids;
    c->conf.allowed_gids = c->gids;
    *state = c;
    return c->base && c->srv ? 0 : -1;
}

static void tc_close(struct tclient *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    for (size_t i = 0; i < c->n_clients; i++) {
        tc_close(c->clients[i]);
        free(c->clients[i]->buf);
        free(c->clients[i]);
    }
    status_server_free(c->srv);
    event_base_free(c->base);
    tmpdir_remove(c->dir);
    free(c);
    return 0;
}

static void listen_or_fail(struct ctx *c)
{
    char err[512];
    if (status_server_listen(c->srv, &c->conf, c->run_dir, err, sizeof(err)) < 0)
        fail_msg("listen: %s", err);
}

static int connect_to(const char path[100])
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Connect the existing non-blocking socket `fd` to `path` (the listener has room in its backlog). */
static int connect_to_fd(int fd, const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    return connect(fd, (struct sockaddr *)&sa, sizeof(sa));
}

static bool never(struct ctx *c, void *arg);
static bool loop_until(struct ctx *c, bool (*cond)(struct ctx *, void *), void *arg, int timeout_ms);

/* A non-blocking client. The connect itself is non-blocking too: with the listen backlog full, a
 * unix socket connect would block until the server (on this very thread) accepts. */
static struct tclient *tc_new(struct ctx *c)
{
    assert_true(c->n_clients < sizeof(c->clients) / sizeof(c->clients[0]));
    struct tclient *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->path);
    t->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    assert_true(t->fd >= 0);
    int tries = 0;
    while (connect(t->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (errno != EAGAIN || ++tries > 2000)
            fail_msg("connect %s: %s", c->path, strerror(errno));
        loop_until(c, never, NULL, 2);
    }
    c->clients[c->n_clients++] = t;
    return t;
}

static void tc_send(struct tclient *t, const char *data, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(t->fd, data + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) {
            poll(NULL, 0, 1);
            continue;
        }
        assert_true(n > 0);
        off += (size_t)n;
    }
}

static void tc_sends(struct tclient *t, const char *s)
{
    tc_send(t, s, strlen(s));
}

static void tc_read(struct tclient *t)
{
    while (t->fd >= 0 && !t->eof && !t->noread) {
        if (t->cap - t->len < 65536) {
            t->cap = t->cap ? t->cap * 2 : 131072;
            t->buf = realloc(t->buf, t->cap);
            assert_non_null(t->buf);
        }
        ssize_t n = recv(t->fd, t->buf + t->len, t->cap - t->len, MSG_DONTWAIT);
        if (n > 0)
            t->len += (size_t)n;
        else if (n == 0 || (errno != EAGAIN && errno != EINTR))
            t->eof = true;
        else
            break;
    }
}

static size_t tc_lines(const struct tclient *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->len; i++)
        n += t->buf[i] == '\n';
    return n;
}

/* Run the loop and read every client until cond(arg) holds or timeout_ms passes. */
static bool loop_until(struct ctx *c, bool (*cond)(struct ctx *, void *), void *arg, int timeout_ms)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        event_base_loop(c->base, EVLOOP_NONBLOCK);
        for (size_t i = 0; i < c->n_clients; i++)
            tc_read(c->clients[i]);
        if (cond(c, arg))
            return true;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
            return false;
        poll(NULL, 0, 1);
    }
}

struct want_lines {
    struct tclient *t;
    size_t n;
};

static bool has_lines(struct ctx *c, void *arg)
{
    struct want_lines *w = arg;
    (void)c;
    return tc_lines(w->t) >= w->n;
}

static bool has_eof(struct ctx *c, void *arg)
{
    (void)c;
    return ((struct tclient *)arg)->eof;
}

static bool never(struct ctx *c, void *arg)
{
    (void)c;
    (void)arg;
    return false;
}

/* Wait for `n` reply lines and return them as JSON objects (array, new reference). */
static json_t *tc_replies(struct ctx *c, struct tclient *t, size_t n)
{
    struct want_lines w = {t, n};
    if (!loop_until(c, has_lines, &w, 20000))
        fail_msg("expected %zu reply lines, have %zu: %.*s", n, tc_lines(t), (int)(t->len > 300 ? 300 : t->len),
                 t->buf ? t->buf : "");
    json_t *arr = json_array();
    size_t start = 0, got = 0;
    for (size_t i = 0; i < t->len && got < n; i++) {
        if (t->buf[i] != '\n')
            continue;
        json_array_append_new(arr, reply_of(t->buf + start, i + 1 - start));
        start = i + 1;
        got++;
    }
    memmove(t->buf, t->buf + start, t->len - start);
    t->len -= start;
    return arr;
}

static json_t *tc_reply(struct ctx *c, struct tclient *t)
{
    json_t *arr = tc_replies(c, t, 1);
    json_t *r = json_incref(json_array_get(arr, 0));
    json_decref(arr);
    return r;
}

static void expect_eof(struct ctx *c, struct tclient *t)
{
    if (!loop_until(c, has_eof, t, 20000))
        fail_msg("the server did not close the connection");
}

static void test_server_socket_file(void **state)
{
    struct ctx *c = *state;
    struct stat st;
    /* run_dir does not exist yet: created 0700. A umask of 0 must not open the socket to others. */
    mode_t old = umask(0);
    listen_or_fail(c);
    umask(old);
    assert_int_equal(stat(c->run_dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(lstat(c->path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0660);

    /* A second server on the same path refuses: something listens there. */
    char err[512];
    struct status_server *two = status_server_new(c->base, &c->prov);
    assert_int_equal(status_server_listen(two, &c->conf, c->run_dir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "listening on it"));
    status_server_free(two);
    assert_int_equal(lstat(c->path, &st), 0); /* the failed one did not remove the live socket */

    /* Free removes the file; nothing listens any more. */
    status_server_free(c->srv);
    c->srv = NULL;
    assert_int_equal(lstat(c->path, &st), -1);
    assert_int_equal(errno, ENOENT);
    c->srv = status_server_new(c->base, &c->prov);
}

static void test_server_umask_077(void **state)
{
    struct ctx *c = *state;
    struct stat st;
    mode_t old = umask(077);
    listen_or_fail(c);
    umask(old);
    assert_int_equal(lstat(c->path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0660);
}

static void test_server_stale_and_foreign_files(void **state)
{
    struct ctx *c = *state;
    char err[512];
    struct stat st;
    assert_int_equal(mkdir(c->run_dir, 0700), 0);
    /* A stale socket: bound by a process that is gone (nothing listens). */
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
    listen_or_fail(c);
    struct tclient *t = tc_new(c);
    tc_sends(t, "help\n");
    json_t *r = tc_reply(c, t);
    assert_ok_reply(r);
    json_decref(r);

    /* A regular file where the socket should be is never removed. */
    status_server_free(c->srv);
    c->srv = status_server_new(c->base, &c->prov);
    FILE *f = fopen(c->path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(status_server_listen(c->srv, &c->conf, c->run_dir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "is not a socket"));
    assert_int_equal(lstat(c->path, &st), 0);
    assert_true(S_ISREG(st.st_mode));

    /* A parent other than run_dir must exist. */
    char other[160];
    snprintf(other, sizeof(other), "%s/missing/status.sock", c->dir);
    c->conf.socket = other;
    assert_int_equal(status_server_listen(c->srv, &c->conf, c->run_dir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "does not exist"));
}

static void test_server_every_command_pipelined(void **state)
{
    struct ctx *c = *state;
    listen_or_fail(c);
    struct tclient *t = tc_new(c);
    /* All requests in one write, one of them with CRLF and one as a bare word. */
    tc_sends(t, "{\"cmd\":\"status\",\"id\":1}\n{\"cmd\":\"services\",\"id\":2}\r\n{\"cmd\":\"backends\",\"id\":3}\n"
                "{\"cmd\":\"circuits\",\"id\":4}\n\n{\"cmd\":\"metrics\",\"id\":5}\n{\"cmd\":\"reload\",\"id\":6}\n"
                "help\n");
    json_t *rs = tc_replies(c, t, 7);
    for (size_t i = 0; i < 6; i++) {
        json_t *r = json_array_get(rs, i);
        assert_ok_reply(r);
        assert_int_equal(json_integer_value(json_object_get(r, "id")), (json_int_t)i + 1);
    }
    assert_ok_reply(json_array_get(rs, 6));
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(rs, 0), "result"), "state")),
                        "ok");
    json_decref(rs);
    for (int i = 0; i < STATUS_CMD_HELP; i++)
        assert_int_equal(c->fake.calls[i], 1);

    /* Reload failure: the provider's reason, and the connection stays usable. */
    c->fake.reload_fails = true;
    tc_sends(t, "{\"cmd\":\"reload\",\"id\":\"r\"}\n");
    json_t *r = tc_reply(c, t);
    assert_error_reply(r, "services[0].ports[0].virtual");
    assert_string_equal(json_string_value(json_object_get(r, "id")), "r");
    json_decref(r);

    /* A request split into single bytes. */
    const char *req = "{\"cmd\":\"status\",\"id\":9}\n";
    for (size_t i = 0; req[i]; i++) {
        tc_send(t, req + i, 1);
        loop_until(c, never, NULL, 1);
    }
    r = tc_reply(c, t);
    assert_ok_reply(r);
    assert_int_equal(json_integer_value(json_object_get(r, "id")), 9);
    json_decref(r);

    struct status_stats st;
    status_server_stats(c->srv, &st);
    assert_int_equal(st.requests, 9);
    assert_int_equal(st.errors, 0);
    assert_int_equal(st.clients, 1);
}

static void test_server_bad_requests_keep_connection(void **state)
{
    struct ctx *c = *state;
    listen_or_fail(c);
    struct tclient *t = tc_new(c);
    tc_sends(t, "{\"cmd\":\n{\"cmd\":\"frobnicate\",\"id\":3}\n{\"cmd\":true}\n[]\n\x01\x02\xff\n"
                "{\"cmd\":\"status\"}\n");
    json_t *rs = tc_replies(c, t, 6);
    assert_error_reply(json_array_get(rs, 0), "malformed JSON");
    assert_error_reply(json_array_get(rs, 1), "unknown command \"frobnicate\"");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rs, 1), "id")), 3);
    assert_error_reply(json_array_get(rs, 2), "cmd: must be a string");
    assert_error_reply(json_array_get(rs, 3), "malformed request");
    assert_error_reply(json_array_get(rs, 4), "malformed request");
    assert_ok_reply(json_array_get(rs, 5));
    json_decref(rs);
    struct status_stats st;
    status_server_stats(c->srv, &st);
    assert_int_equal(st.errors, 5);
    assert_int_equal(st.requests, 1);
    assert_false(t->eof);
}

static void test_server_oversized_line(void **state)
{
    struct ctx *c = *state;
    listen_or_fail(c);
    /* Without a newline at all: the server must not wait for one forever nor buffer without bound. */
    struct tclient *t = tc_new(c);
    char *big = malloc(64 * 1024);
    memset(big, 'a', 64 * 1024);
    tc_send(t, big, 64 * 1024);
    free(big);
    big = malloc(STATUS_MAX_LINE + 2);
    memset(big, 'a', STATUS_MAX_LINE + 2);
    json_t *r = tc_reply(c, t);
    assert_error_reply(r, "request too long");
    json_decref(r);
    expect_eof(c, t);

    /* With a newline, one byte over the limit. */
    struct tclient *t2 = tc_new(c);
    big[STATUS_MAX_LINE + 1] = '\n';
    tc_send(t2, big, STATUS_MAX_LINE + 2);
    r = tc_reply(c, t2);
    assert_error_reply(r, "request too long");
    json_decref(r);
    expect_eof(c, t2);

    /* Exactly at the limit (padded with spaces) is a request. */
    struct tclient *t3 = tc_new(c);
    memset(big, ' ', STATUS_MAX_LINE);
    memcpy(big, "{\"cmd\":\"help\"}", 14);
    big[STATUS_MAX_LINE] = '\r';
    big[STATUS_MAX_LINE + 1] = '\n';
    tc_send(t3, big, STATUS_MAX_LINE + 2);
    r = tc_reply(c, t3);
    assert_ok_reply(r);
    json_decref(r);
    free(big);

    struct status_stats st;
    status_server_stats(c->srv, &st);
    assert_int_equal(st.dropped_oversize, 2);
    assert_int_equal(st.requests, 1);
}

static void test_server_fifty_clients(void **state)
{
    struct ctx *c = *state;
    listen_or_fail(c);
    struct tclient *t[50];
    for (int i = 0; i < 50; i++)
        t[i] = tc_new(c);
    for (int i = 0; i < 50; i++) {
        char req[64];
        snprintf(req, sizeof(req), "{\"cmd\":\"%s\",\"id\":%d}\n", i % 2 ? "status" : "services", i);
        tc_sends(t[i], req);
    }
    for (int i = 0; i < 50; i++) {
        json_t *r = tc_reply(c, t[i]);
        assert_ok_reply(r);
        assert_int_equal(json_integer_value(json_object_get(r, "id")), i);
        assert_true(i % 2 ? json_is_object(json_object_get(r, "result")) : json_is_array(json_object_get(r, "result")));
        json_decref(r);
    }
    struct status_stats st;
    status_server_stats(c->srv, &st);
    assert_int_equal(st.accepted, 50);
    assert_int_equal(st.clients, 50);
    assert_int_equal(c->fake.calls[STATUS_CMD_STATUS], 25);
    assert_int_equal(c->fake.calls[STATUS_CMD_SERVICES], 25);

    /* Clients that leave are forgotten. */
    for (int i = 0; i < 50; i++)
        tc_close(t[i]);
    loop_until(c, never, NULL, 50);
    status_server_stats(c->srv, &st);
    assert_int_equal(st.clients, 0);
}

static void test_server_connection_cap(void **state)
{
    struct ctx *c = *state;
    listen_or_fail(c);
    for (int i = 0; i < STATUS_MAX_CLIENTS; i++)
        tc_new(c);
    loop_until(c, never, NULL, 100);
    struct status_stats st;
    status_server_stats(c->srv, &st);
    assert_int_equal(st.clients, STATUS_MAX_CLIENTS);
    struct tclient *extra = tc_new(c);
    json_t *r = tc_reply(c, extra);
    assert_error_reply(r, "too many clients");
    json_decref(r);
    expect_eof(c, extra);
    status_server_stats(c->srv, &st);
    assert_int_equal(st.over_limit, 1);
    /* One leaves: the next one is served. */
    tc_close(c->clients[0]);
    loop_until(c, never, NULL, 50);
    struct tclient *next = tc_new(c);
    tc_sends(next, "status\n");
    r = tc_reply(c, next);
    assert_ok_reply(r);
    json_decref(r);
}

static bool slow_dropped(struct ctx *c, void *arg)
{
    struct status_stats st;
    (void)arg;
    status_server_stats(c->srv, &st);
    return st.dropped_slow == 1 && st.clients == 1;
}

static void test_server_client_that_never_reads(void **state)
{
    struct ctx *c = *state;
    c->fake.metrics_size = 1u << 20; /* 1 MiB per reply */
    status_server_set_timeouts(c->srv, 60000, 300);
    listen_or_fail(c);
    struct tclient *slow = tc_new(c);
    slow->noread = true;
    int small = 4096;
    setsockopt(slow->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    /* 40 requests for 40 MiB of replies, never read. */
    for (int i = 0; i < 40; i++)
        tc_sends(slow, "metrics\n");
    struct tclient *other = tc_new(c);
    /* Meanwhile another client is served at once. */
    loop_until(c, never, NULL, 50);
    tc_sends(other, "status\n");
    json_t *r = tc_reply(c, other);
    assert_ok_reply(r);
    json_decref(r);
    /* The slow client's pending replies are bounded: reading paused after the first replies. */
    assert_true(c->fake.calls[STATUS_CMD_METRICS] <= 2);
    /* And it is dropped after the write timeout. */
    if (!loop_until(c, slow_dropped, NULL, 5000))
        fail_msg("the client that does not read was not dropped");
    assert_true(c->fake.calls[STATUS_CMD_METRICS] <= 2);
    tc_sends(other, "status\n");
    r = tc_reply(c, other);
    assert_ok_reply(r);
    json_decref(r);
}

static void test_server_slow_reader_gets_everything(void **state)
{
    struct ctx *c = *state;
    /* A client that reads slowly but steadily gets all its pipelined replies, in order. */
    c->fake.metrics_size = 300 * 1024;
    listen_or_fail(c);
    struct tclient *t = tc_new(c);
    for (int i = 0; i < 6; i++) {
        char req[64];
        snprintf(req, sizeof(req), "{\"cmd\":\"metrics\",\"id\":%d}\n", i);
        tc_sends(t, req);
    }
    json_t *rs = tc_replies(c, t, 6);
    for (int i = 0; i < 6; i++) {
        json_t *r = json_array_get(rs, (size_t)i);
        assert_ok_reply(r);
        assert_int_equal(json_integer_value(json_object_get(r, "id")), i);
        assert_int_equal(json_string_length(json_object_get(r, "result")), 300 * 1024);
    }
    json_decref(rs);
}

static void test_server_eof_without_newline(void **state)
{
    struct ctx *c = *state;
    listen_or_fail(c);
    struct tclient *t = tc_new(c);
    /* "printf 'help\nstatus' | socat - UNIX:..." */
    tc_sends(t, "help\nstatus");
    shutdown(t->fd, SHUT_WR);
    json_t *rs = tc_replies(c, t, 2);
    assert_ok_reply(json_array_get(rs, 0));
    assert_ok_reply(json_array_get(rs, 1));
    assert_true(json_is_object(json_object_get(json_array_get(rs, 1), "result")));
    json_decref(rs);
    expect_eof(c, t);
}

static void test_server_idle_client_closed(void **state)
{
    struct ctx *c = *state;
    status_server_set_timeouts(c->srv, 200, 1000);
    listen_or_fail(c);
    struct tclient *t = tc_new(c);
    expect_eof(c, t);
    assert_int_equal(t->len, 0); /* closed silently */
}

static int fake_peer_lookup(int fd, struct status_peer *peer, void *arg)
{
    struct ctx *c = arg;
    (void)fd;
    *peer = c->fake_peer;
    peer->groups = c->fake_groups;
    return 0;
}

static void test_server_injected_peers(void **state)
{
    struct ctx *c = *state;
    c->uids[0] = 1234;
    c->conf.n_allowed_uids = 1;
    c->gids[0] = 4321;
    c->conf.n_allowed_gids = 1;
    listen_or_fail(c);
    status_server_set_peer_lookup(c->srv, fake_peer_lookup, c);

    c->fake_peer = (struct status_peer){.pid = 1, .uid = 999, .gid = 999};
    struct tclient *t = tc_new(c);
    tc_sends(t, "status\n");
    json_t *r = tc_reply(c, t);
    assert_error_reply(r, "permission denied");
    json_decref(r);
    expect_eof(c, t);
    assert_int_equal(c->fake.calls[STATUS_CMD_STATUS], 0);

    c->fake_peer = (struct status_peer){.pid = 1, .uid = 1234, .gid = 999};
    t = tc_new(c);
    tc_sends(t, "status\n");
    r = tc_reply(c, t);
    assert_ok_reply(r);
    json_decref(r);

    c->fake_groups[0] = 7;
    c->fake_groups[1] = 4321;
    c->fake_peer = (struct status_peer){.pid = 1, .uid = 999, .gid = 999, .n_groups = 2};
    t = tc_new(c);
    tc_sends(t, "status\n");
    r = tc_reply(c, t);
    assert_ok_reply(r);
    json_decref(r);

    /* A reload takes the new lists. */
    c->conf.n_allowed_gids = 0;
    assert_int_equal(status_server_set_acl(c->srv, &c->conf), 0);
    t = tc_new(c);
    r = tc_reply(c, t);
    assert_error_reply(r, "permission denied");
    json_decref(r);

    struct status_stats st;
    status_server_stats(c->srv, &st);
    assert_int_equal(st.rejected, 2);
    assert_int_equal(st.accepted, 2);
}

/* Read-only against admin on one server: a monitoring uid (allowed_uids) reads status but gets restart-tor,
 * reload and log-level refused with the message naming status.admin_uids, and its connection stays open; an
 * admin uid runs them; a reload that moves the admin to read-only applies to its open connection. */
static void test_server_read_only_peer(void **state)
{
    struct ctx *c = *state;
    uid_t admins[1] = {1500};
    c->uids[0] = 65534;
    c->conf.n_allowed_uids = 1;
    c->conf.admin_uids = admins;
    c->conf.n_admin_uids = 1;
    listen_or_fail(c);
    status_server_set_peer_lookup(c->srv, fake_peer_lookup, c);

    c->fake_peer = (struct status_peer){.pid = 1, .uid = 65534, .gid = 65534};
    unsigned log_calls = fake_log.calls;
    struct tclient *ro = tc_new(c);
    static const char *const refused[][2] = {
        {"restart-tor\n", "restart-tor: permission denied: uid 65534 may read status but not run admin commands; "
                          "add it to status.admin_uids"},
        {"{\"cmd\":\"log-level\",\"level\":\"debug\",\"seconds\":604800}\n", "log-level: permission denied"},
        {"reload\n", "reload: permission denied"},
    };
    for (size_t i = 0; i < 3; i++) {
        tc_sends(ro, refused[i][0]);
        json_t *r = tc_reply(c, ro);
        assert_error_reply(r, refused[i][1]);
        json_decref(r);
    }
    assert_int_equal(c->fake.calls[STATUS_CMD_RESTART_TOR], 0);
    assert_int_equal(fake_log.calls, log_calls);
    assert_int_equal(c->fake.calls[STATUS_CMD_RELOAD], 0);
    tc_sends(ro, "status\n"); /* the same connection still reads */
    json_t *r = tc_reply(c, ro);
    assert_ok_reply(r);
    json_decref(r);
    tc_sends(ro, "metrics\n");
    r = tc_reply(c, ro);
    assert_ok_reply(r);
    json_decref(r);

    c->fake_peer = (struct status_peer){.pid = 2, .uid = 1500, .gid = 1500};
    struct tclient *adm = tc_new(c);
    tc_sends(adm, "restart-tor\n");
    r = tc_reply(c, adm);
    assert_ok_reply(r);
    json_decref(r);
    assert_int_equal(c->fake.calls[STATUS_CMD_RESTART_TOR], 1);

    /* A reload makes 1500 read-only: its open connection is refused from the next admin command on. */
    c->uids[0] = 1500;
    c->conf.n_admin_uids = 0;
    assert_int_equal(status_server_set_acl(c->srv, &c->conf), 0);
    tc_sends(adm, "restart-tor\n");
    r = tc_reply(c, adm);
    assert_error_reply(r, "restart-tor: permission denied: uid 1500 may read status");
    json_decref(r);
    assert_int_equal(c->fake.calls[STATUS_CMD_RESTART_TOR], 1);

    struct status_stats st;
    status_server_stats(c->srv, &st);
    assert_int_equal(st.denied, 4);
    assert_int_equal(st.rejected, 0);
}

/* Put the socket straight into the 0711 test directory: run_dir is 0700 (tor.c insists), so only root
 * and onionfront's own user can reach a socket inside it. */
static void use_shared_dir(struct ctx *c)
{
    snprintf(c->path, sizeof(c->path), "%s/status.sock", c->dir);
}

/* A forked child that becomes uid/gid `uid`/`gid` with supplementary `groups`, connects and reports:
 * exit 0 = got a reply line containing `want`, 2 = connect refused by the file system (EACCES),
 * 1 = anything else. The parent runs the loop until the child is gone. */
static int child_connects_as(struct ctx *c, uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
                             const char *want)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgroups(n_groups, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
            _exit(1);
        int fd = connect_to(c->path);
        if (fd < 0)
            _exit(errno == EACCES ? 2 : 1);
        /* A refused peer gets its reply line at accept, and the server closes at once: the send may
         * fail (EPIPE) when the refusal won the race, and the reply is still there to read (as
         * status_client_send does). */
        const char *req = "{\"cmd\":\"status\"}\n";
        (void)!send(fd, req, strlen(req), MSG_NOSIGNAL);
        char buf[1024];
        size_t len = 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        while (len < sizeof(buf) - 1 && poll(&p, 1, 20000) > 0) {
            ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
            if (n <= 0)
                break;
            len += (size_t)n;
            if (memchr(buf, '\n', len))
                break;
        }
        buf[len] = '\0';
        _exit(strstr(buf, want) ? 0 : 1);
    }
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int wstatus = 0;
    for (;;) {
        event_base_loop(c->base, EVLOOP_NONBLOCK);
        pid_t w = waitpid(pid, &wstatus, WNOHANG);
        if (w == pid)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 30) {
            kill(pid, SIGKILL);
            waitpid(pid, &wstatus, 0);
            fail_msg("child did not finish");
        }
        poll(NULL, 0, 1);
    }
    assert_true(WIFEXITED(wstatus));
    return WEXITSTATUS(wstatus);
}

static void test_server_real_peers(void **state)
{
    struct ctx *c = *state;
    if (geteuid() != 0)
        skip(); /* needs root to change uid; the injected test above covers the logic */
    const uid_t nobody = 65534;
    use_shared_dir(c);
    /* No lists: nobody with group root (so the 0660 socket file lets it connect) is refused by the
     * SO_PEERCRED check. */
    listen_or_fail(c);
    assert_int_equal(child_connects_as(c, nobody, 0, NULL, 0, "permission denied"), 0);
    struct status_stats st;
    status_server_stats(c->srv, &st);
    assert_int_equal(st.rejected, 1);
    /* allowed_uids: the same peer is served. */
    c->uids[0] = nobody;
    c->conf.n_allowed_uids = 1;
    status_server_set_acl(c->srv, &c->conf);
    assert_int_equal(child_connects_as(c, nobody, 0, NULL, 0, "\"ok\":true"), 0);
    /* Without the socket file's group, the file system stops it before onionfront sees it. */
    assert_int_equal(child_connects_as(c, nobody, nobody, NULL, 0, ""), 2);
}

static void test_server_real_supplementary_group(void **state)
{
    struct ctx *c = *state;
    if (geteuid() != 0)
        skip();
    const uid_t nobody = 65534;
    const gid_t group = 4242, other = 4343;
    use_shared_dir(c);
    /* allowed_gids: the socket file gets the first group, and a member through a supplementary group
     * (SO_PEERGROUPS) is served; a member of another group only is not. */
    c->gids[0] = group;
    c->conf.n_allowed_gids = 1;
    listen_or_fail(c);
    struct stat st;
    assert_int_equal(lstat(c->path, &st), 0);
    assert_int_equal(st.st_gid, group);
    const gid_t groups[] = {other, group};
    assert_int_equal(child_connects_as(c, nobody, nobody, groups, 2, "\"ok\":true"), 0);
    assert_int_equal(child_connects_as(c, nobody, group, NULL, 0, "\"ok\":true"), 0);
    /* In the file's group but not allowed: change the list after the fact (as a reload would). */
    c->gids[0] = other;
    status_server_set_acl(c->srv, &c->conf);
    assert_int_equal(child_connects_as(c, nobody, nobody, groups + 1, 1, "permission denied"), 0);
    assert_int_equal(child_connects_as(c, nobody, nobody, groups, 2, "\"ok\":true"), 0);
}


/* ---- limits per peer (issue 15) -------------------------------------------------------------------- */

static void test_admit_table(void **state)
{
    (void)state;
    const size_t open_max = STATUS_MAX_CLIENTS - STATUS_RESERVED_SLOTS; /* what others may fill */
    const struct {
        size_t total, of_uid;
        bool privileged;
        enum status_admit want;
    } cases[] = {
        {0, 0, false, STATUS_ADMIT_OK},
        {0, 0, true, STATUS_ADMIT_OK},
        {10, STATUS_MAX_PER_UID - 1, false, STATUS_ADMIT_OK},
        {10, STATUS_MAX_PER_UID, false, STATUS_ADMIT_UID_FULL},
        {open_max - 1, 0, false, STATUS_ADMIT_OK},
        {open_max, 0, false, STATUS_ADMIT_FULL},          /* the reserved slots are not for others */
        {open_max, 0, true, STATUS_ADMIT_OK},             /* but for root and our own uid */
        {STATUS_MAX_CLIENTS - 1, 40, true, STATUS_ADMIT_OK}, /* no per-uid limit for them */
        {STATUS_MAX_CLIENTS, 0, true, STATUS_ADMIT_FULL},
        {STATUS_MAX_CLIENTS, STATUS_MAX_PER_UID, false, STATUS_ADMIT_FULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (status_admit(cases[i].total, cases[i].of_uid, cases[i].privileged) != cases[i].want)
            fail_msg("case %zu: total %zu of_uid %zu privileged %d: got %d", i, cases[i].total, cases[i].of_uid,
                     cases[i].privileged, status_admit(cases[i].total, cases[i].of_uid, cases[i].privileged));
}

static bool accepted_or_refused(struct ctx *c, void *arg)
{
    struct status_stats st;
    status_server_stats(c->srv, &st);
    return st.accepted + st.over_limit + st.over_uid_limit + st.rejected >= *(unsigned long *)arg;
}

/* A client with the injected peer `uid`, seen by the server (accepted or refused) before returning. */
static struct tclient *tc_as(struct ctx *c, uid_t uid)
{
    struct status_stats st;
    status_server_stats(c->srv, &st);
    unsigned long want = st.accepted + st.over_limit + st.over_uid_limit + st.rejected + 1;
    c->fake_peer = (struct status_peer){.pid = 1, .uid = uid, .gid = 4321};
    struct tclient *t = tc_new(c);
    if (!loop_until(c, accepted_or_refused, &want, 5000))
        fail_msg("the server did not take the connection of uid %u", (unsigned)uid);
    return t;
}

static void expect_refusal(struct ctx *c, struct tclient *t, const char *why)
{
    json_t *r = tc_reply(c, t);
    assert_error_reply(r, why);
    json_decref(r);
    expect_eof(c, t);
}

static void expect_served(struct ctx *c, struct tclient *t)
{
    tc_sends(t, "status\n");
    json_t *r = tc_reply(c, t);
    assert_ok_reply(r);
    json_decref(r);
}

/* The review's attack: one allowed user holds every slot. Now it gets STATUS_MAX_PER_UID, other users
 * share what is left but the reserved slots, and root always gets in. */
static void test_server_per_uid_limit_and_reserved_slots(void **state)
{
    struct ctx *c = *state;
    c->gids[0] = 4321; /* every injected peer is in an allowed group */
    c->conf.n_allowed_gids = 1;
    listen_or_fail(c);
    status_server_set_peer_lookup(c->srv, fake_peer_lookup, c);
    for (int i = 0; i < STATUS_MAX_PER_UID; i++)
        tc_as(c, 1000);
    expect_refusal(c, tc_as(c, 1000), "too many connections from this user");
    expect_served(c, tc_as(c, 0));
    expect_served(c, c->clients[0]); /* those it holds still work */

    /* Other users fill what is left for them (root's one is still open). */
    size_t others = STATUS_MAX_CLIENTS - STATUS_RESERVED_SLOTS - STATUS_MAX_PER_UID - 1;
    for (size_t i = 0; i < others; i++)
        tc_as(c, 2000 + (uid_t)(i / STATUS_MAX_PER_UID));
    struct status_stats st;
    status_server_stats(c->srv, &st);
    assert_int_equal(st.clients, STATUS_MAX_CLIENTS - STATUS_RESERVED_SLOTS);
    expect_refusal(c, tc_as(c, 3000), "too many clients");
    /* The reserved slots: root and onionfront's own uid. */
    expect_served(c, tc_as(c, geteuid()));
    for (int i = 1; i < STATUS_RESERVED_SLOTS; i++)
        tc_as(c, 0);
    expect_refusal(c, tc_as(c, 0), "too many clients");
    status_server_stats(c->srv, &st);
    assert_int_equal(st.clients, STATUS_MAX_CLIENTS);
    assert_int_equal(st.over_uid_limit, 1);
    assert_int_equal(st.over_limit, 2);
}

static void test_server_lifetime(void **state)
{
    struct ctx *c = *state;
    status_server_set_lifetime(c->srv, 300);
    listen_or_fail(c);
    struct tclient *t = tc_new(c);
    expect_served(c, t);
    /* The idle timeout is 60 s: only the lifetime can end it now, though the client stays active. */
    for (int i = 0; i < 1000 && !t->eof; i++) {
        /* A blank line: a byte that keeps the connection busy and gets no reply. Once the server has
         * closed, the send may fail: the EOF follows. */
        (void)!send(t->fd, "\n", 1, MSG_NOSIGNAL);
        loop_until(c, has_eof, t, 20);
    }
    if (!t->eof)
        fail_msg("an active client was not closed at the end of its lifetime");
    struct status_stats st;
    status_server_stats(c->srv, &st);
    assert_int_equal(st.dropped_lifetime, 1);
    assert_int_equal(st.dropped_slow, 0);
}

/* Lower the soft RLIMIT_NOFILE to `limit` and open /dev/null until it is reached: the process is out of
 * descriptors. Returns how many were opened into fds (the caller closes them and restores *old). */
static int exhaust_fds(int *fds, int max, rlim_t limit, struct rlimit *old)
{
    assert_int_equal(getrlimit(RLIMIT_NOFILE, old), 0);
    struct rlimit low = {limit, old->rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int n = 0;
    while (n < max) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            assert_int_equal(errno, EMFILE);
            break;
        }
        fds[n++] = fd;
    }
    assert_true(n < max);
    return n;
}

static void release_fds(int *fds, int n, const struct rlimit *old)
{
    for (int i = 0; i < n; i++)
        close(fds[i]);
    setrlimit(RLIMIT_NOFILE, old);
}

static bool from_reserve(struct ctx *c, void *arg)
{
    struct status_stats st;
    (void)arg;
    status_server_stats(c->srv, &st);
    return st.from_reserve > 0;
}

/* Out of descriptors: the status socket still answers, with its spare descriptor. */
static void test_server_spare_descriptor(void **state)
{
    struct ctx *c = *state;
    listen_or_fail(c);
    /* The client's socket exists before the process runs out; connecting needs no new descriptor. */
    struct tclient *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    t->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    assert_true(t->fd >= 0);
    c->clients[c->n_clients++] = t;
    int fds[512];
    struct rlimit old;
    int n = exhaust_fds(fds, 512, (rlim_t)t->fd + 64, &old);
    assert_int_equal(connect_to_fd(t->fd, c->path), 0);
    tc_sends(t, "status\n");
    bool served = loop_until(c, from_reserve, NULL, 10000);
    json_t *r = served ? tc_reply(c, t) : NULL;
    release_fds(fds, n, &old);
    if (!served)
        fail_msg("no client was accepted with the spare descriptor");
    assert_ok_reply(r);
    json_decref(r);
    /* And the server goes on normally afterwards. */
    loop_until(c, never, NULL, 1100); /* past the accept pause */
    expect_served(c, tc_new(c));
}

/* ---- the metrics HTTP endpoint ----------------------------------------------------------------------- */

static char *render_ok(void *arg)
{
    int *calls = arg;
    (*calls)++;
    return strdup("# HELP a A.\n# TYPE a gauge\na 1\n");
}

static char *render_fail(void *arg)
{
    (void)arg;
    return NULL;
}

/* One HTTP exchange ("Connection: close"): the whole response. */
static char *http(struct ctx *c, int family, uint16_t port, const char *request)
{
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        s6->sin6_addr = in6addr_loopback;
        len = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof(*s4);
    }
    struct tclient *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    t->fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(t->fd >= 0);
    /* loopback TCP completes the handshake in the kernel, before the server accepts */
    assert_int_equal(connect(t->fd, (struct sockaddr *)&ss, len), 0);
    c->clients[c->n_clients++] = t;
    tc_sends(t, request);
    expect_eof(c, t);
    char *out = strndup(t->buf ? t->buf : "", t->len);
    return out;
}

static struct metrics_conf metrics_conf_of(int family, uint16_t port)
{
    struct metrics_conf m = {.enabled = true, .family = family, .port = port};
    snprintf(m.host, sizeof(m.host), "%s", family == AF_INET6 ? "::1" : "127.0.0.1");
    snprintf(m.listen, sizeof(m.listen), family == AF_INET6 ? "[%s]:%u" : "%s:%u", m.host, (unsigned)port);
    return m;
}

/* A metrics endpoint on loopback (any free port) serving `render`, or the test fails. */
static struct metrics_http *mh_new(struct ctx *c, int family, char *(*render)(void *), void *arg)
{
    char err[256];
    struct metrics_conf mc = metrics_conf_of(family, 0);
    struct metrics_http *h = metrics_http_new(c->base, &mc, render, arg, err, sizeof(err));
    if (!h)
        fail_msg("metrics_http_new: %s", err);
    return h;
}

/* metrics_http_serve: 200 with a header, 204 without a body, 404, over HTTP/1.0 (each connection closed
 * after its answer, as nginx's proxy asks) and 1.1; the loop survives many of them. */
static int answer_cb(void *arg, const char *rest, const struct evkeyvalq *in, struct evkeyvalq *headers,
                     struct evbuffer *body)
{
    (void)arg;
    (void)in;
    if (strcmp(rest, "on") == 0) {
        evhttp_add_header(headers, "X-Value", "v");
        evbuffer_add_printf(body, "v\n");
        return HTTP_OK;
    }
    return strcmp(rest, "off") == 0 ? HTTP_NOCONTENT : HTTP_NOTFOUND;
}

static bool never_cb(struct ctx *c, void *arg)
{
    (void)c;
    (void)arg;
    return false;
}

static void test_http_serve(void **state)
{
    struct ctx *c = *state;
    char err[256];
    struct metrics_conf mc = metrics_conf_of(AF_INET, 0);
    struct metrics_http *h = metrics_http_serve(c->base, &mc, "test", "/x/", answer_cb, NULL, err, sizeof(err));
    if (!h)
        fail_msg("metrics_http_serve: %s", err);
    uint16_t port = metrics_http_port(h);
    for (int i = 0; i < 6; i++) {
        char *r = http(c, AF_INET, port, i % 2 ? "GET /x/off HTTP/1.0\r\n\r\n" : "GET /x/on HTTP/1.0\r\n\r\n");
        assert_true(strncmp(r, i % 2 ? "HTTP/1.0 204 " : "HTTP/1.0 200 ", 13) == 0 ||
                    strncmp(r, i % 2 ? "HTTP/1.1 204 " : "HTTP/1.1 200 ", 13) == 0);
        if (!(i % 2))
            assert_non_null(strstr(r, "\r\nX-Value: v\r\n"));
        free(r);
    }
    metrics_http_set_limits(h, 32, 300);
    {
        char *q = http(c, AF_INET, port, "GET /x/on HTTP/1.0\r\n\r\n");
        free(q);
        struct tclient *t = c->clients[c->n_clients - 1];
        close(t->fd); /* as curl and nginx do once they have the answer */
        t->fd = -1;
        loop_until(c, never_cb, NULL, 600); /* past that connection's deadline */
    }
    char *r = http(c, AF_INET, port, "GET /x/off HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.1 204 ", 13) == 0);
    assert_string_equal(strstr(r, "\r\n\r\n") + 4, "");
    free(r);
    r = http(c, AF_INET, port, "GET /x/nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.1 404 ", 13) == 0);
    free(r);
    r = http(c, AF_INET, port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.1 404 ", 13) == 0);
    free(r);
    metrics_http_free(h);
}

/* ---- the guard (onion_location.listen's bounds) -------------------------------------------------- */

/* A TCP client from the loopback address `src` ("127.0.0.2") to 127.0.0.1:`port`. */
static struct tclient *tcp_client_from(struct ctx *c, const char *src, uint16_t port)
{
    struct sockaddr_in from = {.sin_family = AF_INET}, to = {.sin_family = AF_INET, .sin_port = htons(port)};
    assert_int_equal(inet_pton(AF_INET, src, &from.sin_addr), 1);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct tclient *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    t->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(t->fd >= 0);
    assert_int_equal(bind(t->fd, (struct sockaddr *)&from, sizeof(from)), 0);
    assert_int_equal(connect(t->fd, (struct sockaddr *)&to, sizeof(to)), 0); /* the kernel completes it */
    assert_true(c->n_clients < sizeof(c->clients) / sizeof(c->clients[0]));
    c->clients[c->n_clients++] = t;
    return t;
}

/* A serve endpoint (answer_cb under /x/) with `guard`, at most `max_clients` connections and a 60 s
 * connection deadline (longer than any test here waits: what closes a connection is the guard). */
static struct metrics_http *guarded(struct ctx *c, unsigned max_clients, const struct metrics_http_guard *guard)
{
    char err[256];
    struct metrics_conf mc = metrics_conf_of(AF_INET, 0);
    struct metrics_http *h = metrics_http_serve(c->base, &mc, "test", "/x/", answer_cb, NULL, err, sizeof(err));
    if (!h)
        fail_msg("metrics_http_serve: %s", err);
    metrics_http_set_limits(h, max_clients, 60000);
    assert_int_equal(metrics_http_set_guard(h, guard), 0);
    return h;
}

static bool answered(struct ctx *c, void *arg)
{
    struct tclient *t = arg;
    (void)c;
    return t->eof || (t->len > 0 && memmem(t->buf, t->len, "\r\n\r\nv\n", 6));
}

/* One request from `src` on a new connection, keep-alive; the answer must be a 200. */
static void expect_answer_from(struct ctx *c, const char *src, uint16_t port)
{
    struct tclient *t = tcp_client_from(c, src, port);
    tc_sends(t, "GET /x/on HTTP/1.1\r\nHost: x\r\n\r\n");
    if (!loop_until(c, answered, t, 5000) || t->len < 13 || strncmp(t->buf, "HTTP/1.1 200 ", 13) != 0)
        fail_msg("no answer for %s (%zu bytes%s)", src, t->len, t->eof ? ", closed" : "");
}

/* allow: a peer outside the list is closed before anything is read or answered, and counted; one inside
 * is served. Without a guard both are. */
static void test_http_guard_allow(void **state)
{
    struct ctx *c = *state;
    struct config_cidr one;
    char why[128];
    assert_int_equal(config_parse_cidr("127.0.0.1", 9, &one, why, sizeof(why)), 0);
    const struct metrics_http_guard g = {&one, 1, 0, 0};
    struct metrics_http *h = guarded(c, 32, &g);
    uint16_t port = metrics_http_port(h);
    struct tclient *out = tcp_client_from(c, "127.0.0.2", port);
    tc_sends(out, "GET /x/on HTTP/1.1\r\nHost: x\r\n\r\n");
    expect_eof(c, out);
    assert_int_equal(out->len, 0);
    expect_answer_from(c, "127.0.0.1", port);
    struct metrics_http_stats st;
    metrics_http_stats(h, &st);
    assert_int_equal(st.refused_allow, 1);
    assert_int_equal(st.timed_out, 0);
    /* the list is replaced for new connections (a reload): now anyone */
    const struct metrics_http_guard open = {NULL, 0, 0, 0};
    assert_int_equal(metrics_http_set_guard(h, &open), 0);
    expect_answer_from(c, "127.0.0.2", port);
    metrics_http_free(h);
}

struct clients_want {
    struct metrics_http *h;
    size_t clients;
    unsigned long refused_source;
};

static bool clients_reached(struct ctx *c, void *arg)
{
    struct clients_want *w = arg;
    struct metrics_http_stats st;
    (void)c;
    metrics_http_stats(w->h, &st);
    return st.clients == w->clients && st.refused_source >= w->refused_source;
}

/* The flood in small: one host holding idle connections can take only per_source_max of them;
 * each one more from it is closed at once, and other hosts are served at once, although the flood
 * alone would fill the overall cap. (Without the per-source cap the flood fills the cap and the other host
 * waits for the flood's deadline.) */
static void test_http_guard_per_source(void **state)
{
    struct ctx *c = *state;
    const struct metrics_http_guard g = {NULL, 0, 2, 0};
    struct metrics_http *h = guarded(c, 6, &g); /* the flood alone would fill it */
    uint16_t port = metrics_http_port(h);
    struct tclient *flood[6];
    for (int i = 0; i < 6; i++) {
        flood[i] = tcp_client_from(c, "127.0.0.2", port);
        tc_sends(flood[i], "GET /x/on HT"); /* idle, never finishing its head */
        struct clients_want w = {h, i < 2 ? (size_t)i + 1 : 2, i >= 2 ? (unsigned long)i - 1 : 0};
        if (!loop_until(c, clients_reached, &w, 5000))
            fail_msg("flood connection %d: not admitted or not turned away", i);
    }
    for (int i = 2; i < 6; i++) {
        expect_eof(c, flood[i]);
        assert_int_equal(flood[i]->len, 0);
    }
    assert_false(flood[0]->eof || flood[1]->eof);
    expect_answer_from(c, "127.0.0.1", port);
    expect_answer_from(c, "127.0.0.3", port);
    struct metrics_http_stats st;
    metrics_http_stats(h, &st);
    assert_int_equal(st.refused_source, 4);
    assert_int_equal(st.paused_full, 0);
    metrics_http_free(h);
}

/* head_deadline_ms: a head that has not arrived in time is closed without an answer and counted as
 * timed out; a kept-alive connection gets as long again after each answer, then is closed (not counted:
 * it was served). The connection deadline (60 s) is not what closes them. */
static void test_http_guard_head_deadline(void **state)
{
    struct ctx *c = *state;
    const struct metrics_http_guard g = {NULL, 0, 0, 300};
    struct metrics_http *h = guarded(c, 32, &g);
    uint16_t port = metrics_http_port(h);
    struct tclient *slow = tcp_client_from(c, "127.0.0.1", port);
    tc_sends(slow, "GET /x/on HTTP/1.1\r\nHost:");
    expect_eof(c, slow);
    assert_int_equal(slow->len, 0);
    struct tclient *kept = tcp_client_from(c, "127.0.0.1", port);
    tc_sends(kept, "GET /x/on HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(loop_until(c, answered, kept, 5000));
    tc_sends(kept, "GET /x/on HTTP/1.1\r\nHost: x\r\n\r\n"); /* a second request on it, answered too */
    expect_eof(c, kept);
    assert_true(kept->len > 13 && strncmp(kept->buf, "HTTP/1.1 200 ", 13) == 0);
    const char *second = memmem(kept->buf + 13, kept->len - 13, "HTTP/1.1 200 ", 13);
    assert_non_null(second);
    struct metrics_http_stats st;
    metrics_http_stats(h, &st);
    assert_int_equal(st.timed_out, 1);
    metrics_http_free(h);
}

static void test_metrics_http(void **state)
{
    struct ctx *c = *state;
    char err[256];
    int calls = 0;
    struct metrics_conf mc = metrics_conf_of(AF_INET, 0);
    struct metrics_http *h = metrics_http_new(c->base, &mc, render_ok, &calls, err, sizeof(err));
    if (!h)
        fail_msg("metrics_http_new: %s", err);
    uint16_t port = metrics_http_port(h);
    assert_true(port > 0);

    char *r = http(c, AF_INET, port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.1 200 ", 13) == 0);
    assert_non_null(strcasestr(r, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
    const char *body = strstr(r, "\r\n\r\n");
    assert_non_null(body);
    assert_string_equal(body + 4, "# HELP a A.\n# TYPE a gauge\na 1\n");
    free(r);

    r = http(c, AF_INET, port, "GET /metrics?name[]=a HTTP/1.0\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.0 200 ", 13) == 0 || strncmp(r, "HTTP/1.1 200 ", 13) == 0);
    free(r);

    r = http(c, AF_INET, port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.1 200 ", 13) == 0);
    body = strstr(r, "\r\n\r\n");
    assert_non_null(body);
    assert_string_equal(body + 4, ""); /* no body for HEAD */
    free(r);

    r = http(c, AF_INET, port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.1 404 ", 13) == 0);
    free(r);
    r = http(c, AF_INET, port, "GET /metricsx HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.1 404 ", 13) == 0);
    free(r);
    r = http(c, AF_INET, port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
    if (strncmp(r, "HTTP/1.1 405 ", 13) != 0 || !strcasestr(r, "\r\nAllow: GET, HEAD\r\n"))
        fail_msg("405 response: %s", r);
    assert_non_null(strcasestr(r, "\r\nAllow: GET, HEAD\r\n"));
    free(r);
    r = http(c, AF_INET, port, "garbage\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.1 400 ", 13) == 0 || r[0] == '\0'); /* refused, and the server lives on */
    free(r);
    /* A head over the cap: evhttp refuses it (400; the reset of the unread rest may swallow the answer). */
    char *big = malloc(METRICS_HTTP_MAX_HEADERS + 64);
    assert_non_null(big);
    int n = snprintf(big, 64, "GET /metrics HTTP/1.1\r\nX: ");
    memset(big + n, 'a', METRICS_HTTP_MAX_HEADERS);
    strcpy(big + n + METRICS_HTTP_MAX_HEADERS, "\r\n\r\n");
    r = http(c, AF_INET, port, big);
    assert_true(strncmp(r, "HTTP/1.1 400 ", 13) == 0 || r[0] == '\0');
    free(r);
    free(big);
    assert_int_equal(calls, 3); /* GET, GET with a query, HEAD */
    struct metrics_http_stats st;
    metrics_http_stats(h, &st);
    assert_int_equal(st.bad_request, 2); /* garbage, too large; not the 404 and 405 we made */
    assert_int_equal(st.accepted, 8);

    /* The port is taken now: a second endpoint says so, naming the address. */
    struct metrics_conf busy = metrics_conf_of(AF_INET, port);
    assert_null(metrics_http_new(c->base, &busy, render_ok, &calls, err, sizeof(err)));
    char want[96];
    snprintf(want, sizeof(want), "metrics.listen: cannot listen on 127.0.0.1:%u: ", (unsigned)port);
    if (!strstr(err, want))
        fail_msg("error \"%s\" lacks \"%s\"", err, want);
    metrics_http_free(h);

    /* A render failure is a 500, not a crash or an empty 200. */
    h = metrics_http_new(c->base, &mc, render_fail, NULL, err, sizeof(err));
    assert_non_null(h);
    r = http(c, AF_INET, metrics_http_port(h), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.1 500 ", 13) == 0);
    free(r);
    metrics_http_free(h);
    metrics_http_free(NULL);
}


/* A TCP client of the metrics endpoint, read by loop_until like the status clients. */
static struct tclient *tcp_client(struct ctx *c, uint16_t port)
{
    struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = htons(port)};
    s4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct tclient *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    t->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(t->fd >= 0);
    assert_int_equal(connect(t->fd, (struct sockaddr *)&s4, sizeof(s4)), 0); /* the kernel completes it */
    assert_true(c->n_clients < sizeof(c->clients) / sizeof(c->clients[0]));
    c->clients[c->n_clients++] = t;
    return t;
}

struct mh_want {
    struct metrics_http *h;
    size_t clients;
    unsigned long paused_full, timed_out;
};

static bool mh_reached(struct ctx *c, void *arg)
{
    struct mh_want *w = arg;
    struct metrics_http_stats st;
    (void)c;
    metrics_http_stats(w->h, &st);
    return st.clients == w->clients && st.paused_full >= w->paused_full && st.timed_out >= w->timed_out;
}

/* The review's flood in small: slow clients fill the cap, the next waits in the backlog without a
 * descriptor, each slow one is closed at its deadline however it trickles, and then the next is served. */
static void test_metrics_http_cap_and_deadline(void **state)
{
    struct ctx *c = *state;
    int calls = 0;
    struct metrics_http *h = mh_new(c, AF_INET, render_ok, &calls);
    metrics_http_set_limits(h, 2, 400);
    struct tclient *slow1 = tcp_client(c, metrics_http_port(h));
    struct tclient *slow2 = tcp_client(c, metrics_http_port(h));
    tc_sends(slow1, "GET /met");
    tc_sends(slow2, "G");
    struct mh_want full = {h, 2, 1, 0};
    if (!loop_until(c, mh_reached, &full, 5000))
        fail_msg("two slow clients did not fill the cap");
    struct tclient *next = tcp_client(c, metrics_http_port(h));
    tc_sends(next, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    /* The slow ones trickle a byte at a time; the deadline counts from accept, not from the last byte. */
    for (int i = 0; i < 500 && !next->eof; i++) {
        (void)!send(slow1->fd, "r", 1, MSG_NOSIGNAL);
        (void)!send(slow2->fd, "E", 1, MSG_NOSIGNAL);
        struct metrics_http_stats st;
        metrics_http_stats(h, &st);
        assert_true(st.clients <= 2);
        loop_until(c, has_eof, next, 20);
    }
    assert_true(next->eof);
    assert_true(slow1->eof && slow2->eof);
    assert_int_equal(slow1->len + slow2->len, 0); /* closed without an answer */
    assert_true(next->len > 13 && strncmp(next->buf, "HTTP/1.1 200 ", 13) == 0);
    struct metrics_http_stats st;
    metrics_http_stats(h, &st);
    assert_int_equal(st.timed_out, 2);
    assert_int_equal(st.accepted, 3);
    assert_int_equal(calls, 1);

    /* The counters as metrics. */
    struct metrics *m = metrics_new();
    assert_int_equal(metrics_http_metrics(h, m), 0);
    const char *text = metrics_text(m, NULL);
    assert_non_null(strstr(text, "onionfront_metrics_http_connections_total{result=\"timed_out\"} 2\n"));
    assert_non_null(strstr(text, "onionfront_metrics_http_pauses_total{reason=\"full\"} 1\n"));
    metrics_free(m);
    m = metrics_new();
    assert_int_equal(metrics_http_metrics(NULL, m), 0); /* no endpoint: the families, no samples */
    assert_null(strstr(metrics_text(m, NULL), "} "));
    metrics_free(m);
    metrics_http_free(h);
}

/* A client sending one byte every second is closed at the deadline (evhttp's own per-read timeout never
 * fires for it), by evhttp itself: the count of connections drops back to zero. */
static void test_metrics_http_trickle_closed_at_deadline(void **state)
{
    struct ctx *c = *state;
    int calls = 0;
    struct metrics_http *h = mh_new(c, AF_INET, render_ok, &calls);
    metrics_http_set_limits(h, METRICS_HTTP_MAX_CLIENTS, 2500);
    struct tclient *slow = tcp_client(c, metrics_http_port(h));
    struct mh_want one = {h, 1, 0, 0};
    if (!loop_until(c, mh_reached, &one, 5000))
        fail_msg("the client was not accepted");
    static const char head[] = "GET /metrics HTTP/1.1\r\nX-Trickle: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    size_t sent = 0;
    while (!slow->eof && sent < sizeof(head) - 1) {
        (void)!send(slow->fd, head + sent++, 1, MSG_NOSIGNAL);
        loop_until(c, has_eof, slow, 1000);
    }
    printf("# closed after %zu bytes, one a second\n", sent);
    assert_true(slow->eof);
    assert_int_equal(slow->len, 0);
    struct mh_want none = {h, 0, 0, 1};
    if (!loop_until(c, mh_reached, &none, 5000))
        fail_msg("the connection was not freed after its deadline");
    struct metrics_http_stats st;
    metrics_http_stats(h, &st);
    assert_int_equal(st.timed_out, 1);
    assert_int_equal(st.accepted, 1);
    assert_int_equal(calls, 0);
    metrics_http_free(h);
}

static bool mh_accept_error(struct ctx *c, void *arg)
{
    struct metrics_http_stats st;
    (void)c;
    metrics_http_stats(arg, &st);
    return st.paused_accept_error > 0;
}

/* Out of descriptors: the listener pauses (libevent would otherwise retry accept() at once, forever)
 * and serves again once descriptors are free. */
static void test_metrics_http_accept_error_pauses(void **state)
{
    struct ctx *c = *state;
    int calls = 0;
    struct metrics_http *h = mh_new(c, AF_INET, render_ok, &calls);
    struct tclient *t = tcp_client(c, metrics_http_port(h));
    tc_sends(t, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    int fds[512];
    struct rlimit old;
    int n = exhaust_fds(fds, 512, (rlim_t)t->fd + 64, &old);
    bool paused = loop_until(c, mh_accept_error, h, 10000);
    release_fds(fds, n, &old);
    if (!paused)
        fail_msg("no accept error while out of descriptors");
    expect_eof(c, t);
    assert_true(t->len > 13 && strncmp(t->buf, "HTTP/1.1 200 ", 13) == 0);
    metrics_http_free(h);
}

static void test_metrics_http_ipv6(void **state)
{
    struct ctx *c = *state;
    char err[256];
    int calls = 0, probe = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    bool have_v6 = probe >= 0 && bind(probe, (struct sockaddr *)&s6, sizeof(s6)) == 0;
    if (probe >= 0)
        close(probe);
    if (!have_v6)
        skip(); /* no ::1 in this environment */
    struct metrics_conf mc = metrics_conf_of(AF_INET6, 0);
    struct metrics_http *h = metrics_http_new(c->base, &mc, render_ok, &calls, err, sizeof(err));
    if (!h)
        fail_msg("metrics_http_new: %s", err);
    char *r = http(c, AF_INET6, metrics_http_port(h), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_true(strncmp(r, "HTTP/1.1 200 ", 13) == 0);
    free(r);
    metrics_http_free(h);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_table),
        cmocka_unit_test(test_parse_log_level_args),
        cmocka_unit_test(test_parse_lengths),
        cmocka_unit_test(test_execute_each_command),
        cmocka_unit_test(test_execute_missing_and_failing_providers),
        cmocka_unit_test(test_error_line_never_empty),
        cmocka_unit_test(test_peer_access_table),
        cmocka_unit_test(test_authorize_table),
        cmocka_unit_test_setup_teardown(test_server_socket_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_umask_077, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_stale_and_foreign_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_every_command_pipelined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_bad_requests_keep_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_oversized_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_fifty_clients, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_connection_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_client_that_never_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_slow_reader_gets_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_eof_without_newline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_idle_client_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_injected_peers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_read_only_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_real_peers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_real_supplementary_group, setup, teardown),
        cmocka_unit_test(test_admit_table),
        cmocka_unit_test_setup_teardown(test_server_per_uid_limit_and_reserved_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_lifetime, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_spare_descriptor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_serve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_guard_allow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_guard_per_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_guard_head_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_http, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_http_ipv6, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_http_cap_and_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_http_trickle_closed_at_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_http_accept_error_pauses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
