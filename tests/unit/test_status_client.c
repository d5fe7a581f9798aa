/* test_status_client.c — unit tests for sidecar/ops/status_client.c (`onionfront status`): the summary for
 * people from canned JSON (exact text; missing and mistyped fields; the last end-to-end probe's line), one request/reply over a
 * socketpair (ok, error replies, garbage, EOF, timeout, the request line sent), connection errors that
 * must say "not running", a socket that answers nothing (exit 3, Nagios UNKNOWN: cannot tell), and the
 * whole command against a real status server in a forked child. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/ops/status.h"
#include "sidecar/ops/status_client.h"
#include "tests/fake/tmpdir.h"

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    if (!j)
        fail_msg("bad canned JSON: %s", jerr.text);
    return j;
}

static const char canned_status[] =
    "{\"state\":\"degraded\",\"version\":\"0.1.0\",\"pid\":123,\"uptime_seconds\":3725,"
    "\"problems\":[\"service beta: no descriptor upload confirmed yet\"],"
    "\"tor\":{\"mode\":\"spawn\",\"state\":\"running\",\"bootstrap_progress\":100,\"version\":\"0.4.9.11\","
    "\"pid\":456,\"restarts\":1}}";
static const char canned_services[] =
    "[{\"name\":\"alpha\",\"address\":\"abc.onion\",\"ports\":[{\"virtual\":80,\"targets\":[\"127.0.0.1:8080\","
    "\"unix:/run/x.sock\"]}],\"uploaded\":true,\"verdict\":\"single_onion\",\"descriptor\":{\"hsdirs_confirmed\":5,"
    "\"hsdirs_total\":6,\"last_upload_age_seconds\":75}},"
    "{\"name\":\"beta\",\"address\":\"def.onion\",\"ports\":[{\"virtual\":443,\"targets\":[\"127.0.0.1:8443\"]}],"
    "\"uploaded\":false}]";
static const char canned_backends[] =
    "[{\"service\":\"alpha\",\"virtual_port\":80,\"up\":true,\"backends\":["
    "{\"name\":\"web1\",\"state\":\"up\",\"last_result\":\"ok\",\"last_detail\":\"\"},"
    "{\"name\":\"web2\",\"state\":\"down\",\"last_result\":\"connect refused\",\"last_detail\":\"Connection refused\"},"
    "{\"name\":\"web3\",\"state\":\"drained\",\"last_result\":null,\"last_detail\":\"\"}]},"
    "{\"service\":\"gamma\",\"virtual_port\":80,\"up\":false,\"backends\":[{\"name\":\"g1\",\"state\":\"down\"}]}]";

static const char expected_summary[] =
    "onionfront 0.1.0: degraded, up 1h 02m (pid 123)\n"
    "tor: running, bootstrapped 100%, version 0.4.9.11, pid 456, 1 restart\n"
    "  ! service beta: no descriptor upload confirmed yet\n"
    "\n"
    "service alpha: abc.onion\n"
    "  port 80      -> 127.0.0.1:8080, unix:/run/x.sock\n"
    "  verdict      single onion\n"
    "  descriptor   5/6 HSDirs confirmed, last upload 1m 15s ago\n"
    "  backends     port 80: 1/3 up - web1 up, web2 down (connect refused: Connection refused), web3 drained\n"
    "\n"
    "service beta: def.onion\n"
    "  port 443     -> 127.0.0.1:8443\n"
    "  descriptor   not uploaded yet\n";

static void test_summary_full(void **state)
{
    (void)state;
    json_t *st = load(canned_status), *sv = load(canned_services), *be = load(canned_backends);
    char *text = status_client_summary(st, sv, be);
    assert_non_null(text);
    assert_string_equal(text, expected_summary);
    free(text);
    json_decref(st);
    json_decref(sv);
    json_decref(be);
}

/* Each row: the three documents (NULL = not given) and the exact summary. */
static const struct {
    const char *status, *services, *backends, *expected;
} summary_cases[] = {
    {NULL, NULL, NULL, "(nothing to show)\n"},
    {"{}", NULL, NULL, "onionfront: unknown\n"},
    {"{\"state\":\"down\",\"tor\":{\"state\":\"backoff\",\"bootstrap_progress\":null,\"version\":null,\"pid\":null,"
     "\"restarts\":3},\"problems\":[\"tor is backoff\",7]}",
     NULL, NULL, "onionfront: down\ntor: backoff, 3 restarts\n  ! tor is backoff\n"},
    /* Two tors: a line each, with uptime and why one is not up. */
    {"{\"state\":\"degraded\",\"tor\":{\"state\":\"running\"},\"tors\":["
     "{\"instance\":1,\"state\":\"running\",\"bootstrap_progress\":100,\"pid\":10,\"restarts\":0,"
     "\"uptime_seconds\":65,\"verdict\":\"up\"},"
     "{\"instance\":2,\"state\":\"backoff\",\"pid\":null,\"restarts\":1,\"uptime_seconds\":null,"
     "\"verdict\":\"tor (pid 11) killed by signal 9\"}]}",
     NULL, NULL,
     "onionfront: degraded\ntor 1: running, bootstrapped 100%, pid 10, 0 restarts, up 1m 05s\n"
     "tor 2: backoff, 1 restart (tor (pid 11) killed by signal 9)\n"},
    /* restart-tor: the running roll's step, or how the last one ended. */
    {"{\"state\":\"ok\",\"roll\":{\"state\":\"handover\",\"current\":1,\"survivor\":2,\"restarted\":0,"
     "\"total\":2,\"why\":\"requested by restart-tor\",\"last_result\":null}}",
     NULL, NULL, "onionfront: ok\nrestart-tor: tor 1 of 2 handover (tor 2 publishes first), 0 done (requested by "
     "restart-tor)\n"},
    {"{\"state\":\"ok\",\"roll\":{\"state\":\"draining\",\"current\":2,\"survivor\":null,\"open_streams\":3,"
     "\"restarted\":0,\"total\":2,\"why\":\"requested by restart-tor\",\"last_result\":null}}",
     NULL, NULL, "onionfront: ok\nrestart-tor: tor 2 of 2 draining (3 visitor streams open through it), 0 done "
     "(requested by restart-tor)\n"},
    {"{\"state\":\"ok\",\"roll\":{\"state\":\"draining\",\"current\":1,\"open_streams\":0,\"rend_circuits\":1,"
     "\"restarted\":1,\"total\":2,\"why\":\"requested by restart-tor\",\"last_result\":null}}",
     NULL, NULL, "onionfront: ok\nrestart-tor: tor 1 of 2 draining (1 visitor circuit and 0 streams open on it), 1 "
     "done (requested by restart-tor)\n"},
    {"{\"state\":\"ok\",\"roll\":{\"state\":\"idle\",\"current\":null,\"last_result\":{\"ok\":false,"
     "\"message\":\"aborted: tor 1 went down while tor 2 was restarting\"}}}",
     NULL, NULL, "onionfront: ok\nrestart-tor: last failed: aborted: tor 1 went down while tor 2 was restarting\n"},
    {"{\"state\":\"ok\",\"roll\":{\"state\":\"idle\",\"last_result\":null}}", NULL, NULL, "onionfront: ok\n"},
    /* Wrong types are skipped, never trusted. */
    {"{\"state\":5,\"version\":[],\"uptime_seconds\":\"long\",\"tor\":\"running\",\"problems\":{}}", "{}", "7",
     "onionfront: unknown\n"},
    {"{\"state\":\"ok\",\"uptime_seconds\":59}", "[{\"name\":\"a\"},3,{\"ports\":[{\"virtual\":\"x\"}]}]", "[1,{}]",
     "onionfront: ok, up 59s\n\nservice a: (no address yet)\n\nservice ?: (no address yet)\n"
     "  port -1      ->\n"},
    {"{\"state\":\"ok\",\"uptime_seconds\":200000}", NULL, NULL, "onionfront: ok, up 2d 7h\n"},
    /* A tls port's certificates: the visitor's, then each backend's, self-signed no error, a name
     * mismatch and another certificate than visitors get said, one not read with why. */
    {NULL,
     "[{\"name\":\"t\",\"address\":\"x.onion\",\"probe\":{\"state\":\"reachable\",\"last\":null,\"tls\":{"
     "\"port\":443,\"onion\":{\"endpoint\":\"onion\",\"not_after\":\"2027-01-01T00:00:00Z\",\"days_left\":89,"
     "\"name_matches\":true,\"trust\":\"self_signed\",\"trust_detail\":\"\",\"error\":null},"
     "\"backends\":[{\"endpoint\":\"10.0.0.2:443\",\"not_after\":\"2026-12-12T00:00:00Z\",\"days_left\":4,"
     "\"name_matches\":false,\"trust\":\"untrusted\",\"trust_detail\":\"unable to get local issuer certificate\","
     "\"same_as_onion\":false,\"error\":null},{\"endpoint\":\"10.0.0.3:443\",\"error\":\"Connection refused\"}]}}}]",
     NULL,
     "\nservice t: x.onion\n  probe        reachable (not probed yet)\n"
     "  tls visitor  expires 2027-01-01T00:00:00Z (89 days), self-signed\n"
     "  tls 10.0.0.2:443 expires 2026-12-12T00:00:00Z (4 days), DOES NOT NAME THE ONION, untrusted (unable to get "
     "local issuer certificate), not the certificate visitors get\n"
     "  tls 10.0.0.3:443 no certificate read: Connection refused\n"},
    /* Descriptor counts win over the plain "uploaded" flag; a backend up needs no reason. */
    {NULL,
     "[{\"name\":\"s\",\"address\":\"x.onion\",\"uploaded\":true,\"descriptor\":{\"hsdirs_confirmed\":0,"
     "\"hsdirs_total\":8}}]",
     "[{\"service\":\"s\",\"backends\":[{\"name\":\"b\",\"state\":\"up\",\"last_result\":\"connect timeout\"}]}]",
     "\nservice s: x.onion\n  descriptor   0/8 HSDirs confirmed\n  backends     1/1 up - b up\n"},
    /* tor's own numbers: only those tor exported (absent is not 0); none read yet says so */
    {NULL,
     "[{\"name\":\"p\",\"pow_enabled\":true,\"tor_metrics\":{\"pow_suggested_effort\":12.0,\"pow_queue_length\":3,"
     "\"introductions_received\":40,\"introductions_rejected\":2,\"rendezvous_created\":38,"
     "\"rendezvous_errors\":1}},"
     "{\"name\":\"q\",\"pow_enabled\":false,\"tor_metrics\":{\"introductions_received\":5}},"
     "{\"name\":\"r\",\"pow_enabled\":false,\"tor_metrics\":null}]",
     NULL,
     "\nservice p: (no address yet)\n"
     "  dos          PoW on, effort 12, queue 3; introductions 40 (2 rejected); rendezvous 38 (1 failed)\n"
     "\nservice q: (no address yet)\n  dos          PoW off; introductions 5\n"
     "\nservice r: (no address yet)\n  dos          PoW off (tor's metrics not read)\n"},
    /* Two tors: the summed numbers, then a row per tor (one tor listing it: no rows) */
    {NULL,
     "[{\"name\":\"p\",\"pow_enabled\":true,\"tor_metrics\":{\"pow_suggested_effort\":30,"
     "\"introductions_received\":7,\"rendezvous_created\":6},\"tor_metrics_by_tor\":["
     "{\"instance\":1,\"pow_suggested_effort\":30,\"introductions_received\":4,\"rendezvous_created\":4},"
     "{\"instance\":2,\"introductions_received\":3,\"rendezvous_created\":2}]},"
     "{\"name\":\"q\",\"pow_enabled\":false,\"tor_metrics\":{\"introductions_received\":5},"
     "\"tor_metrics_by_tor\":[{\"instance\":2,\"introductions_received\":5}]}]",
     NULL,
     "\nservice p: (no address yet)\n"
     "  dos          PoW on, effort 30; introductions 7; rendezvous 6\n"
     "    tor 1      effort 30; introductions 4; rendezvous 4\n"
     "    tor 2      introductions 3; rendezvous 2\n"
     "\nservice q: (no address yet)\n  dos          PoW off; introductions 5\n"},
    /* Two tors: whose descriptor the HSDirs serve, by fetched copies or by accepted uploads; unknown. */
    {"{\"state\":\"ok\",\"tors\":[{\"instance\":1,\"state\":\"running\"},{\"instance\":2,\"state\":\"running\"}]}",
     "[{\"name\":\"a\",\"served\":{\"served_by\":2,\"source\":\"fetched\",\"hsdirs_holding\":7,"
     "\"hsdirs_answered\":8}},{\"name\":\"b\",\"served\":{\"served_by\":1,\"source\":\"uploads\"}},"
     "{\"name\":\"c\",\"served\":{\"served_by\":null,\"source\":\"none\"}},{\"name\":\"d\",\"served\":null}]",
     NULL,
     "onionfront: ok\ntor 1: running\ntor 2: running\n"
     "\nservice a: (no address yet)\n  served by    tor 2 (7/8 HSDirs)\n"
     "\nservice b: (no address yet)\n  served by    tor 1 (by accepted uploads: no HSDir's copy matched a tor's "
     "own descriptor)\n"
     "\nservice c: (no address yet)\n  served by    unknown (no HSDir's copy matched a tor's own descriptor yet)\n"
     "\nservice d: (no address yet)\n"},
    /* One tor: no "served by" line. */
    {"{\"state\":\"ok\",\"tors\":[{\"instance\":1,\"state\":\"running\"}]}",
     "[{\"name\":\"a\",\"served\":{\"served_by\":1,\"source\":\"fetched\",\"hsdirs_holding\":8,"
     "\"hsdirs_answered\":8}}]",
     NULL, "onionfront: ok\n\nservice a: (no address yet)\n"},
    /* The last end-to-end probe in one line: HTTP, connect-only, failed (where, when last reached), none
     * yet; no line with the probe off (null). */
    {NULL,
     "[{\"name\":\"h\",\"probe\":{\"state\":\"reachable\",\"last_success\":\"2026-12-05T15:20:12Z\","
     "\"last\":{\"time\":\"2026-12-05T15:20:12Z\",\"ok\":true,\"stage\":\"ok\",\"detail\":\"HTTP 200\","
     "\"ttfb_seconds\":0.8412,\"http_status\":200}}},"
     "{\"name\":\"c\",\"probe\":{\"state\":\"reachable\",\"last\":{\"time\":\"2026-12-05T15:21:00Z\","
     "\"ok\":true,\"stage\":\"ok\",\"detail\":\"\",\"ttfb_seconds\":1.5,\"http_status\":null}}},"
     "{\"name\":\"f\",\"probe\":{\"state\":\"degraded\",\"last_success\":\"2026-12-05T15:00:00Z\","
     "\"last\":{\"time\":\"2026-12-05T15:25:00Z\",\"ok\":false,\"stage\":\"introduction\","
     "\"detail\":\"introduction failed (tor's SOCKS5 reply)\",\"ttfb_seconds\":null,\"http_status\":null}}},"
     "{\"name\":\"n\",\"probe\":{\"state\":\"unknown\",\"last\":null,\"last_success\":null}},"
     "{\"name\":\"o\",\"probe\":null}]",
     NULL,
     "\nservice h: (no address yet)\n  probe        reachable: HTTP 200, first byte 0.84 s at 2026-12-05T15:20:12Z\n"
     "\nservice c: (no address yet)\n  probe        reachable: connected in 1.50 s at 2026-12-05T15:21:00Z\n"
     "\nservice f: (no address yet)\n  probe        degraded: last probe failed at introduction: introduction failed "
     "(tor's SOCKS5 reply) at 2026-12-05T15:25:00Z; last reached 2026-12-05T15:00:00Z\n"
     "\nservice n: (no address yet)\n  probe        unknown (not probed yet)\n"
     "\nservice o: (no address yet)\n"},
    /* Onionbalance: the frontend lists each instance's address, an instance names its master. */
    {NULL,
     "[{\"name\":\"front\",\"address\":\"m.onion\",\"onionbalance\":{\"role\":\"frontend\","
     "\"master_address\":\"m.onion\",\"state\":\"publishing\",\"restarts\":1,\"last_confirmed_upload\":"
     "\"2026-12-04T12:00:00Z\",\"intro_points\":2,\"instances\":[{\"address\":\"a.onion\","
     "\"descriptor_received\":true,\"intro_points\":3},{\"address\":\"b.onion\",\"descriptor_received\":false,"
     "\"intro_points\":null}]}},"
     "{\"name\":\"inst\",\"address\":\"a.onion\",\"onionbalance\":{\"role\":\"instance\","
     "\"master_address\":\"m.onion\",\"instance_address\":\"a.onion\"}}]",
     NULL,
     "\nservice front: m.onion\n"
     "  onionbalance frontend, publishing; 1 of 2 instances with a descriptor, 2 intro points; last confirmed "
     "upload 2026-12-04T12:00:00Z; 1 restarts\n"
     "  instance     a.onion: descriptor received, 3 intro points\n"
     "  instance     b.onion: no descriptor\n"
     "\nservice inst: a.onion\n  onionbalance instance of m.onion\n"},
    /* More than STATUS_CLIENT_FULL_MAX services: one line for each healthy one (reachable, or starting:
     * not probed yet), the full view for one down end to end, one whose descriptor is not on every
     * responsible HSDir and one with a backend down. */
    {NULL,
     "[{\"name\":\"a\",\"address\":\"a.onion\",\"uploaded\":true,\"verdict\":\"single_onion\","
     "\"descriptor\":{\"hsdirs_confirmed\":8,\"hsdirs_total\":8},\"probe\":{\"state\":\"reachable\","
     "\"last\":{\"ttfb_seconds\":0.42}}},"
     "{\"name\":\"b\",\"address\":\"b.onion\",\"uploaded\":true,\"descriptor\":{\"hsdirs_confirmed\":8,"
     "\"hsdirs_total\":8},\"probe\":{\"state\":\"starting\",\"last\":null}},"
     "{\"name\":\"c\",\"address\":\"c.onion\",\"uploaded\":true,\"descriptor\":{\"hsdirs_confirmed\":8,"
     "\"hsdirs_total\":8},\"probe\":{\"state\":\"down\"}},"
     "{\"name\":\"d\",\"address\":\"d.onion\",\"uploaded\":true,\"descriptor\":{\"hsdirs_confirmed\":7,"
     "\"hsdirs_total\":8}},"
     "{\"name\":\"e\",\"address\":\"e.onion\",\"uploaded\":true},"
     "{\"name\":\"f\",\"address\":\"f.onion\",\"uploaded\":true,\"verdict\":\"not_single_onion\"}]",
     "[{\"service\":\"e\",\"virtual_port\":80,\"backends\":[{\"name\":\"b1\",\"state\":\"down\"}]}]",
     "\n"
     "service a: a.onion  ok, 8/8 HSDirs, reachable (first byte 0.42 s)\n"
     "service b: b.onion  ok, 8/8 HSDirs, starting (not probed yet)\n"
     "\nservice c: c.onion\n  descriptor   8/8 HSDirs confirmed\n  probe        down (not probed yet)\n"
     "\nservice d: d.onion\n  descriptor   7/8 HSDirs confirmed\n"
     "\nservice e: e.onion\n  descriptor   uploaded\n  backends     port 80: 0/1 up - b1 down\n"
     "\nservice f: f.onion\n  verdict      not single onion\n  descriptor   uploaded\n"},
};

static void test_summary_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(summary_cases) / sizeof(summary_cases[0]); i++) {
        json_t *st = summary_cases[i].status ? load(summary_cases[i].status) : NULL;
        json_t *sv = summary_cases[i].services ? load(summary_cases[i].services) : NULL;
        json_t *be = summary_cases[i].backends ? json_loads(summary_cases[i].backends, JSON_DECODE_ANY, NULL) : NULL;
        char *text = status_client_summary(st, sv, be);
        assert_non_null(text);
        if (strcmp(text, summary_cases[i].expected) != 0)
            fail_msg("case %zu:\n--- got\n%s--- expected\n%s", i, text, summary_cases[i].expected);
        free(text);
        json_decref(st);
        json_decref(sv);
        json_decref(be);
    }
}

/* ---- one call over a socketpair ---------------------------------------------------------------------- */

struct call_case {
    const char *reply;   /* written by the "server" before the call; NULL = nothing */
    bool close_after;    /* the server closes its end */
    const char *result;  /* expected result as compact JSON, or NULL for an error */
    const char *err;     /* substring of the error */
};

static const struct call_case call_cases[] = {
    {"{\"ok\":true,\"result\":{\"state\":\"ok\"}}\n", false, "{\"state\":\"ok\"}", NULL},
    {"{\"ok\":true,\"result\":\"# HELP x\\n\"}\n", false, "\"# HELP x\\n\"", NULL},
    {"{\"ok\":false,\"error\":\"cmd: unknown command \\\"x\\\"\"}\n", false, NULL, "cmd: unknown command \"x\""},
    {"{\"ok\":false,\"error\":\"permission denied: no\"}\n", true, NULL, "permission denied"},
    {"{\"ok\":false}\n", false, NULL, "error without a message"},
    {"{\"ok\":true}\n", false, NULL, "reply without a result"},
    {"not json\n", false, NULL, "unexpected reply"},
    {"{\"result\":1}\n", false, NULL, "unexpected reply"},
    {"{\"ok\":true,\"result\":1}", true, NULL, "closed the connection without a reply"},
    {NULL, true, NULL, "closed the connection without a reply"},
    {NULL, false, NULL, "no reply from onionfront in time"},
};

static void test_call_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(call_cases) / sizeof(call_cases[0]); i++) {
        const struct call_case *t = &call_cases[i];
        int sv[2];
        char err[512] = "";
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        if (t->reply)
            assert_int_equal(write(sv[1], t->reply, strlen(t->reply)), (ssize_t)strlen(t->reply));
        if (t->close_after)
            shutdown(sv[1], SHUT_WR);
        json_t *r = status_client_call(sv[0], "status", 300, err, sizeof(err));
        char sent[256] = "";
        ssize_t n = recv(sv[1], sent, sizeof(sent) - 1, MSG_DONTWAIT);
        assert_true(n > 0);
        assert_string_equal(sent, "{\"cmd\":\"status\"}\n");
        if (t->result) {
            if (!r)
                fail_msg("case %zu: error %s", i, err);
            char *dump = json_dumps(r, JSON_COMPACT | JSON_ENCODE_ANY);
            assert_string_equal(dump, t->result);
            free(dump);
        } else {
            assert_null(r);
            if (!strstr(err, t->err))
                fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, err, t->err);
        }
        json_decref(r);
        close(sv[0]);
        close(sv[1]);
    }
}

static void test_call_escapes_command(void **state)
{
    (void)state;
    int sv[2];
    char err[256], sent[256] = "";
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    shutdown(sv[1], SHUT_WR);
    assert_null(status_client_call(sv[0], "a\"b\n", 300, err, sizeof(err)));
    assert_true(recv(sv[1], sent, sizeof(sent) - 1, MSG_DONTWAIT) > 0);
    assert_string_equal(sent, "{\"cmd\":\"a\\\"b\\n\"}\n"); /* one line, whatever the argument */
    close(sv[0]);
    close(sv[1]);
}

/* ---- connection errors -------------------------------------------------------------------------------- */

struct dir_state {
    char dir[64];
    char path[100];
};

static int setup(void **state)
{
    struct dir_state *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    if (tmpdir_make(s->dir, sizeof(s->dir), "test_status_client") < 0) {
        free(s);
        return -1;
    }
    snprintf(s->path, sizeof(s->path), "%s/status.sock", s->dir);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    struct dir_state *s = *state;
    tmpdir_remove(s->dir);
    free(s);
    return 0;
}

static void test_connect_not_running(void **state)
{
    struct dir_state *s = *state;
    char err[512];
    assert_int_equal(status_client_connect(s->path, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "onionfront is not running (no status socket at"));
    /* A socket file left by a dead daemon. */
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
    assert_int_equal(status_client_connect(s->path, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "onionfront is not running (nothing listens on"));

    FILE *out = tmpfile(), *errf = tmpfile();
    assert_int_equal(status_client_run(s->path, "status", NULL, NULL, 0, false, false, out, errf), STATUS_EXIT_DOWN); /* not running: down, Nagios CRITICAL */
    char buf[512] = "";
    rewind(errf);
    assert_non_null(fgets(buf, sizeof(buf), errf));
    assert_non_null(strstr(buf, "onionfront status: onionfront is not running"));
    assert_int_equal(ftell(out), 0);
    fclose(out);
    fclose(errf);
}

/* ---- the whole command against a real server ---------------------------------------------------------- */

static json_t *srv_status(void *arg)
{
    return load(arg); /* the server's status document (start_server_with) */
}

static json_t *srv_services(void *arg)
{
    (void)arg;
    return load(canned_services);
}

static json_t *srv_backends(void *arg)
{
    (void)arg;
    return load(canned_backends);
}

static char *srv_metrics(void *arg)
{
    (void)arg;
    return strdup("# HELP onionfront_x A.\n# TYPE onionfront_x gauge\nonionfront_x 1\n");
}

static int srv_reload(void *arg, char *msg, size_t msglen)
{
    (void)arg;
    snprintf(msg, msglen, "applied /etc/x.json (no change for tor)");
    return 0;
}

static int srv_restart_tor(void *arg, char *msg, size_t msglen)
{
    (void)arg;
    snprintf(msg, msglen, "rolling restart of 2 tors started (requested by restart-tor)");
    return 0;
}

/* Echo what arrived, so the client's request can be checked from its output. */
static int srv_log_level(const char *level, unsigned seconds, char *msg, size_t msglen)
{
    if (strcmp(level, "debug") != 0) {
        snprintf(msg, msglen, "level: must be debug, info, notice, warn, error or config");
        return -1;
    }
    snprintf(msg, msglen, "log level %s for %u s", level, seconds);
    return 0;
}

/* A status server (no circuits provider) in a child process, for at most 20 s. */
/* Fork a status server on `path` and return once it listens: the child writes one byte on a pipe after
 * listen() (the socket file appears at bind(), before connections are accepted). */
static pid_t start_server_with(const char *path, const char *status_doc)
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid > 0) {
        char c = 0;
        close(ready[1]);
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);
        return pid;
    }
    close(ready[0]);
    struct event_base *base = event_base_new();
    struct status_providers p = {(void *)status_doc, srv_status, srv_services,  srv_backends,    NULL,
                                 srv_metrics, srv_reload, srv_log_level, srv_restart_tor, srv_services};
    struct status_server *srv = status_server_new(base, &p);
    struct status_conf conf = {.socket = (char *)path};
    char err[256];
    if (!srv || status_server_listen(srv, &conf, NULL, err, sizeof(err)) < 0)
        _exit(1);
    if (write(ready[1], "r", 1) != 1)
        _exit(1);
    close(ready[1]);
    struct timeval bound = {20, 0};
    event_base_loopexit(base, &bound);
    event_base_dispatch(base);
    status_server_free(srv);
    event_base_free(base);
    _exit(0);
}

static pid_t start_server(const char *path)
{
    return start_server_with(path, canned_status);
}

static void stop_server(pid_t pid)
{
    int wstatus;
    kill(pid, SIGTERM);
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
}

static char *run_args(const char *path, const char *cmd, char *const *args, int nargs, bool json, int *rc,
                      char **errtext)
{
    char *out = NULL, *errout = NULL;
    size_t outlen = 0, errlen = 0;
    FILE *o = open_memstream(&out, &outlen), *e = open_memstream(&errout, &errlen);
    *rc = status_client_run(path, "status", cmd, args, nargs, json, false, o, e);
    fclose(o);
    fclose(e);
    *errtext = errout;
    return out;
}

static char *run(const char *path, const char *cmd, bool json, int *rc, char **errtext)
{
    return run_args(path, cmd, NULL, 0, json, rc, errtext);
}

/* `onionfront check`: one Nagios line with the first problem, WARNING for degraded; CRITICAL when not
 * running. */
static void test_check_line(void **state)
{
    struct dir_state *s = *state;
    char *out = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&out, &len);
    assert_int_equal(status_client_check(s->path, o), STATUS_EXIT_DOWN);
    fclose(o);
    assert_true(strncmp(out, "ONIONFRONT CRITICAL - onionfront is not running", 47) == 0);
    free(out);
    pid_t pid = start_server(s->path);
    o = open_memstream(&out, &len);
    assert_int_equal(status_client_check(s->path, o), STATUS_EXIT_DEGRADED);
    fclose(o);
    assert_string_equal(out, "ONIONFRONT WARNING - service beta: no descriptor upload confirmed yet | problems=1\n");
    free(out);
    stop_server(pid);
    /* starting (within tor.bootstrap_timeout of the start): OK, saying so; `status` still exits 1 */
    pid = start_server_with(s->path, "{\"state\":\"starting\",\"problems\":[\"tor is bootstrapping (50 %)\","
                                     "\"service beta: no descriptor upload confirmed yet\"]}");
    o = open_memstream(&out, &len);
    assert_int_equal(status_client_check(s->path, o), STATUS_EXIT_OK);
    fclose(o);
    assert_string_equal(out, "ONIONFRONT OK - starting: tor is bootstrapping (50 %) (and more) | problems=2\n");
    free(out);
    stop_server(pid);
}

static void test_run_against_server(void **state)
{
    struct dir_state *s = *state;
    pid_t pid = start_server(s->path);
    int rc;
    char *err;

    char *out = run(s->path, NULL, false, &rc, &err);
    assert_int_equal(rc, STATUS_EXIT_DEGRADED); /* the summary's state */
    assert_string_equal(out, expected_summary); /* "circuits: not available" does not spoil the summary */
    assert_string_equal(err, "");
    free(out);
    free(err);

    out = run(s->path, NULL, true, &rc, &err);
    assert_int_equal(rc, STATUS_EXIT_DEGRADED);
    json_t *all = load(out);
    assert_string_equal(json_string_value(json_object_get(json_object_get(all, "status"), "state")), "degraded");
    assert_int_equal(json_array_size(json_object_get(all, "services")), 2);
    assert_int_equal(json_array_size(json_object_get(all, "backends")), 2);
    assert_true(json_is_null(json_object_get(all, "circuits")));
    json_decref(all);
    free(out);
    free(err);

    /* services: text, each service as the summary shows it; --json: the daemon's JSON */
    out = run(s->path, "services", false, &rc, &err);
    assert_int_equal(rc, 0);
    const char *first = "\nservice alpha: abc.onion\n  port 80      -> 127.0.0.1:8080";
    if (strncmp(out, first, strlen(first)) != 0)
        fail_msg("services as text:\n%s", out);
    assert_non_null(strstr(out, "\nservice beta: def.onion\n"));
    free(out);
    free(err);
    out = run(s->path, "services", true, &rc, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(out[0], '[');
    free(out);
    free(err);

    out = run(s->path, "metrics", false, &rc, &err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "# HELP onionfront_x A.\n# TYPE onionfront_x gauge\nonionfront_x 1\n");
    free(out);
    free(err);

    out = run(s->path, "reload", false, &rc, &err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "reloaded: applied /etc/x.json (no change for tor)\n");
    free(out);
    free(err);

    out = run(s->path, "restart-tor", false, &rc, &err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "rolling restart of 2 tors started (requested by restart-tor)\n");
    free(out);
    free(err);

    out = run(s->path, "circuits", false, &rc, &err);
    assert_int_equal(rc, 1);
    assert_string_equal(out, "");
    assert_string_equal(err, "onionfront status: circuits: not available\n"); /* the command named once */
    free(out);
    free(err);
    {   /* run as its own subcommand (`onionfront circuits`), the daemon's "circuits: " is not repeated */
        char *o2 = NULL, *e2 = NULL;
        size_t ol = 0, el = 0;
        FILE *of = open_memstream(&o2, &ol), *ef = open_memstream(&e2, &el);
        assert_int_equal(status_client_run(s->path, "circuits", "circuits", NULL, 0, false, false, of, ef), 1);
        fclose(of);
        fclose(ef);
        assert_string_equal(e2, "onionfront circuits: not available\n");
        free(o2);
        free(e2);
    }

    /* A word that is neither a command nor a service. */
    out = run(s->path, "frobnicate", false, &rc, &err);
    assert_int_equal(rc, 1);
    /* the daemon's reason (it names the commands), then that no service has the name */
    assert_true(strncmp(err, "onionfront status: frobnicate: cmd: unknown command \"frobnicate\"; ", 65) == 0);
    assert_non_null(strstr(err, "; and no service has that name\n"));
    free(out);
    free(err);

    /* status SERVICE: the status and that service in full; with --json its object. */
    out = run(s->path, "alpha", false, &rc, &err);
    assert_int_equal(rc, STATUS_EXIT_DEGRADED);
    assert_string_equal(err, "");
    assert_non_null(strstr(out, "onionfront 0.1.0: degraded"));
    assert_non_null(strstr(out, "\nservice alpha: abc.onion\n  port 80 "));
    assert_null(strstr(out, "\nservice beta:")); /* beta only in the problems */
    free(out);
    free(err);
    out = run(s->path, "beta", true, &rc, &err);
    all = load(out);
    assert_string_equal(json_string_value(json_object_get(all, "address")), "def.onion");
    json_decref(all);
    free(out);
    free(err);

    /* log-level LEVEL [SECONDS]: sent as "level" and "seconds"; the reply's message is the output. */
    char *debug300[] = {"debug", "300"}, *loud[] = {"loud"}, *bad_seconds[] = {"debug", "5m"};
    out = run_args(s->path, "log-level", debug300, 2, false, &rc, &err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "log level debug for 300 s\n");
    free(out);
    free(err);
    out = run_args(s->path, "log-level", loud, 1, false, &rc, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "level: must be debug"));
    free(out);
    free(err);
    out = run_args(s->path, "log-level", bad_seconds, 2, false, &rc, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "usage: log-level LEVEL [SECONDS]"));
    free(out);
    free(err);
    out = run_args(s->path, "reload", loud, 1, false, &rc, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "takes no arguments"));
    free(out);
    free(err);

    out = run(s->path, "status", true, &rc, &err);
    assert_int_equal(rc, 0);
    all = load(out);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(all, "tor"), "pid")), 456);
    json_decref(all);
    free(out);
    free(err);

    stop_server(pid);
}

/* A socket that accepts and hangs up at once: onionfront may be there, but it cannot tell (3, UNKNOWN),
 * which is neither "down" nor "degraded"; a command through it fails (1). */
static void test_unknown(void **state)
{
    struct dir_state *s = *state;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->path);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(lfd, 8), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(20); /* ends itself should the test fail before stop_server */
        for (;;) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0)
                close(fd);
        }
    }
    close(lfd);
    int rc;
    char *err;
    char *out = run(s->path, NULL, false, &rc, &err);
    assert_int_equal(rc, STATUS_EXIT_UNKNOWN);
    /* "closed the connection without a reply", or a reset while the request was still being sent */
    assert_true(strncmp(err, "onionfront status: ", 19) == 0);
    free(out);
    free(err);
    out = run(s->path, "reload", false, &rc, &err);
    assert_int_equal(rc, 1);
    free(out);
    free(err);
    size_t len = 0;
    FILE *o = open_memstream(&out, &len);
    assert_int_equal(status_client_check(s->path, o), STATUS_EXIT_UNKNOWN);
    fclose(o);
    assert_true(strncmp(out, "ONIONFRONT UNKNOWN - ", 21) == 0);
    free(out);
    json_t *none = json_object();
    assert_int_equal(status_client_exit_code(none), STATUS_EXIT_UNKNOWN); /* no "state": cannot tell */
    json_decref(none);
    /* each state's exit code for `status` */
    static const struct {
        const char *state;
        int rc;
    } states[] = {{"ok", STATUS_EXIT_OK},
                  {"starting", STATUS_EXIT_DEGRADED}, /* `status`: not ready yet; `check` says OK */
                  {"degraded", STATUS_EXIT_DEGRADED},
                  {"down", STATUS_EXIT_DOWN},
                  {"something new", STATUS_EXIT_DEGRADED}};
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        json_t *st = json_pack("{s:s}", "state", states[i].state);
        if (status_client_exit_code(st) != states[i].rc)
            fail_msg("state %s: exit %d, not %d", states[i].state, status_client_exit_code(st), states[i].rc);
        json_decref(st);
    }
    stop_server(pid);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary_full),
        cmocka_unit_test(test_summary_table),
        cmocka_unit_test(test_call_table),
        cmocka_unit_test(test_call_escapes_command),
        cmocka_unit_test_setup_teardown(test_connect_not_running, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_against_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
