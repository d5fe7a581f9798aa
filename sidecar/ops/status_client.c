/* status_client.c — `onionfront status`: the status socket's client and the summary for people (see
 * status_client.h). Blocking I/O with deadlines; runs only in the CLI process. */
#include "sidecar/ops/status_client.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int status_client_connect(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "%s: path too long for a unix socket", path);
        return -2;
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket(): %s", strerror(errno));
        return -2;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
        return fd;
    int e = errno;
    close(fd);
    if (e == ENOENT)
        snprintf(err, errlen, "onionfront is not running (no status socket at %s)", path);
    else if (e == ECONNREFUSED)
        snprintf(err, errlen, "onionfront is not running (nothing listens on %s)", path);
    else if (e == EACCES || e == EPERM)
        snprintf(err, errlen, "%s: permission denied (run as root, as onionfront's user, or as a member of the "
                 "socket's group)", path);
    else
        snprintf(err, errlen, "%s: %s", path, strerror(e));
    return e == ENOENT || e == ECONNREFUSED ? -1 : -2;
}

static long status_client_ms_left(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* Wait for `events` on fd until the deadline. 0 ready, -1 with err. */
static int status_client_wait(int fd, short events, const struct timespec *deadline, char *err, size_t errlen)
{
    for (;;) {
        long left = status_client_ms_left(deadline);
        if (left <= 0) {
            snprintf(err, errlen, "no reply from onionfront in time");
            return -1;
        }
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, (int)left);
        if (rc > 0)
            return 0;
        if (rc < 0 && errno != EINTR) {
            snprintf(err, errlen, "poll: %s", strerror(errno));
            return -1;
        }
    }
}

/* The request object for `cmd` and its arguments: log-level LEVEL [SECONDS] -> "level", "seconds"
 * (the daemon checks them); other commands take none. A new reference, or NULL with err. */
static json_t *status_client_request(const char *cmd, char *const *args, int nargs, char *err, size_t errlen)
{
    bool log_level = strcmp(cmd, "log-level") == 0;
    char *end = NULL;
    long long seconds = nargs == 2 ? strtoll(args[1], &end, 10) : 0;
    if (log_level ? nargs < 1 || (end && *end) : nargs > 0) {
        snprintf(err, errlen, log_level ? "usage: log-level LEVEL [SECONDS]" : "takes no arguments");
        return NULL;
    }
    json_t *req = json_pack("{s:s}", "cmd", cmd);
    if (!req || (log_level && json_object_set_new(req, "level", json_string(args[0])) < 0) ||
        (nargs == 2 && json_object_set_new(req, "seconds", json_integer(seconds)) < 0)) {
        json_decref(req);
        snprintf(err, errlen, "out of memory (or the level is not UTF-8)");
        return NULL;
    }
    return req;
}

json_t *status_client_call(int fd, const char *cmd, int timeout_ms, char *err, size_t errlen)
{
    json_t *req = json_pack("{s:s}", "cmd", cmd);
    if (!req) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return status_client_send(fd, req, timeout_ms, err, errlen);
}

json_t *status_client_send(int fd, json_t *req, int timeout_ms, char *err, size_t errlen)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }

    char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
    size_t len = line ? strlen(line) : 0, off = 0;
    char *msg = line ? malloc(len + 1) : NULL;
    json_decref(req);
    if (!msg) {
        free(line);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memcpy(msg, line, len);
    msg[len++] = '\n';
    free(line);
    while (off < len) {
        if (status_client_wait(fd, POLLOUT, &deadline, err, errlen) < 0) {
            free(msg);
            return NULL;
        }
        ssize_t n = send(fd, msg + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            break; /* the daemon may have refused us with a reply line already: read it below */
        off += n > 0 ? (size_t)n : 0;
    }
    free(msg);

    /* Read up to the first "\n". */
    size_t cap = 65536, have = 0;
    char *buf = malloc(cap);
    char *nl = NULL;
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    while (!nl) {
        if (status_client_wait(fd, POLLIN, &deadline, err, errlen) < 0)
            goto fail;
        if (have + 1 >= cap) {
            char *nb = cap < STATUS_CLIENT_MAX_REPLY ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                snprintf(err, errlen, cap < STATUS_CLIENT_MAX_REPLY ? "out of memory" : "reply too long");
                goto fail;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = recv(fd, buf + have, cap - have - 1, MSG_DONTWAIT);
        if (n == 0) {
            snprintf(err, errlen, "onionfront closed the connection without a reply");
            goto fail;
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            snprintf(err, errlen, "reading the reply: %s", strerror(errno));
            goto fail;
        }
        nl = memchr(buf + have, '\n', (size_t)n);
        have += (size_t)n;
    }

    json_error_t jerr;
    json_t *reply = json_loadb(buf, (size_t)(nl - buf), 0, &jerr);
    free(buf);
    buf = NULL;
    json_t *ok = reply ? json_object_get(reply, "ok") : NULL;
    if (!json_is_boolean(ok)) {
        snprintf(err, errlen, "unexpected reply from onionfront%s%s", reply ? "" : ": ", reply ? "" : jerr.text);
        json_decref(reply);
        return NULL;
    }
    if (!json_is_true(ok)) {
        const char *e = json_string_value(json_object_get(reply, "error"));
        snprintf(err, errlen, "%s", e ? e : "error without a message");
        json_decref(reply);
        return NULL;
    }
    json_t *result = json_incref(json_object_get(reply, "result"));
    json_decref(reply);
    if (!result)
        snprintf(err, errlen, "reply without a result");
    return result;
fail:
    free(buf);
    return NULL;
}

/* ---- the summary ------------------------------------------------------------------------------------ */

/* A growing text (open_memstream). */
struct out {
    FILE *f;
    char *text;
    size_t len;
};

static void out_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(o->f, fmt, ap);
    va_end(ap);
}

static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Integer member, or -1 when missing or not an integer. */
static long long jint(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static void out_duration(struct out *o, long long s)
{
    if (s >= 86400)
        out_printf(o, "%lldd %lldh", s / 86400, s % 86400 / 3600);
    else if (s >= 3600)
        out_printf(o, "%lldh %02lldm", s / 3600, s % 3600 / 60);
    else if (s >= 60)
        out_printf(o, "%lldm %02llds", s / 60, s % 60);
    else
        out_printf(o, "%llds", s);
}

static void summary_tor(struct out *o, const json_t *tor);

/* restart-tor's line: the running roll's step, else how the last one ended; nothing before the first. */
static void summary_roll(struct out *o, const json_t *roll)
{
    const char *state = jstr(roll, "state");
    const json_t *last = json_object_get(roll, "last_result");
    if (state && strcmp(state, "idle") != 0) {
        long long survivor = jint(roll, "survivor");
        out_printf(o, "restart-tor: tor %lld of %lld %s", jint(roll, "current"), jint(roll, "total"), state);
        long long open = jint(roll, "open_streams"), circs = jint(roll, "rend_circuits");
        if (survivor > 0)
            out_printf(o, " (tor %lld publishes first)", survivor);
        if (open >= 0 && circs >= 0)
            out_printf(o, " (%lld visitor circuit%s and %lld stream%s open on it)", circs, circs == 1 ? "" : "s", open,
                       open == 1 ? "" : "s");
        else if (open >= 0)
            out_printf(o, " (%lld visitor stream%s open through it)", open, open == 1 ? "" : "s");
        out_printf(o, ", %lld done (%s)\n", jint(roll, "restarted"), jstr(roll, "why") ? jstr(roll, "why") : "");
    } else if (json_is_object(last)) {
        out_printf(o, "restart-tor: last %s: %s\n", json_is_true(json_object_get(last, "ok")) ? "ok" : "failed",
                   jstr(last, "message") ? jstr(last, "message") : "");
    }
}

static void summary_status(struct out *o, const json_t *st)
{
    const char *state = jstr(st, "state");
    const char *version = jstr(st, "version");
    long long up = jint(st, "uptime_seconds"), pid = jint(st, "pid");
    out_printf(o, "onionfront%s%s: %s", version ? " " : "", version ? version : "", state ? state : "unknown");
    if (up >= 0) {
        out_printf(o, ", up ");
        out_duration(o, up);
    }
    if (pid > 0)
        out_printf(o, " (pid %lld)", pid);
    out_printf(o, "\n");

    const json_t *tors = json_object_get(st, "tors"), *tor;
    size_t k;
    /* Several tors: one line each ("tor 1: ..."); one tor: "tor: ..." as always. */
    if (json_array_size(tors) > 1) {
        json_array_foreach(tors, k, tor) {
            const char *kind = jstr(tor, "kind");
            if (kind && strcmp(kind, "anonymous") == 0)
                out_printf(o, "anonymous tor: ");
            else
                out_printf(o, "tor %lld: ", jint(tor, "instance"));
            summary_tor(o, tor);
        }
    } else if (json_is_object(tor = json_object_get(st, "tor"))) {
        out_printf(o, "tor: ");
        summary_tor(o, tor);
    }
    summary_roll(o, json_object_get(st, "roll"));
    const json_t *problems = json_object_get(st, "problems");
    size_t i;
    const json_t *p;
    json_array_foreach(problems, i, p) {
        if (json_is_string(p))
            out_printf(o, "  ! %s\n", json_string_value(p));
    }
}

/* One tor's line after its name: state, bootstrap, version, pid, restarts, uptime, services, verdict. */
static void summary_tor(struct out *o, const json_t *tor)
{
    const char *ts = jstr(tor, "state"), *tv = jstr(tor, "version"), *verdict = jstr(tor, "verdict");
    long long boot = jint(tor, "bootstrap_progress"), tpid = jint(tor, "pid"), restarts = jint(tor, "restarts");
    long long up = jint(tor, "uptime_seconds"), hosted = jint(tor, "services");
    out_printf(o, "%s", ts ? ts : "unknown");
    if (boot >= 0)
        out_printf(o, ", bootstrapped %lld%%", boot);
    if (tv && *tv)
        out_printf(o, ", version %s", tv);
    if (tpid > 0)
        out_printf(o, ", pid %lld", tpid);
    if (restarts >= 0)
        out_printf(o, ", %lld restart%s", restarts, restarts == 1 ? "" : "s");
    if (up >= 0) {
        out_printf(o, ", up ");
        out_duration(o, up);
    }
    if (hosted >= 0)
        out_printf(o, ", %lld service%s", hosted, hosted == 1 ? "" : "s");
    if (verdict && strcmp(verdict, "up") != 0)
        out_printf(o, " (%s)", verdict);
    out_printf(o, "\n");
}

static void summary_backends(struct out *o, const char *service, const json_t *backends)
{
    size_t i, j;
    const json_t *pool, *b;
    json_array_foreach(backends, i, pool) {
        const char *svc = jstr(pool, "service");
        if (!svc || strcmp(svc, service) != 0)
            continue;
        const json_t *list = json_object_get(pool, "backends");
        size_t total = json_array_size(list), up = 0;
        json_array_foreach(list, j, b) {
            const char *state = jstr(b, "state");
            up += state && strcmp(state, "up") == 0;
        }
        long long vport = jint(pool, "virtual_port");
        out_printf(o, "  %-12s ", "backends");
        if (vport >= 0)
            out_printf(o, "port %lld: ", vport);
        out_printf(o, "%zu/%zu up", up, total);
        json_array_foreach(list, j, b) {
            const char *name = jstr(b, "name"), *state = jstr(b, "state");
            const char *result = jstr(b, "last_result"), *detail = jstr(b, "last_detail");
            out_printf(o, "%s %s %s", j ? "," : " -", name ? name : "?", state ? state : "unknown");
            if (state && strcmp(state, "up") != 0 && result && strcmp(result, "ok") != 0)
                out_printf(o, " (%s%s%s)", result, detail && *detail ? ": " : "", detail && *detail ? detail : "");
        }
        out_printf(o, "\n");
    }
}

/* "onionbalance": an instance's master, or the frontend's state, instances and last confirmed upload. */
static void summary_onionbalance(struct out *o, const json_t *ob)
{
    const char *role = jstr(ob, "role"), *master = jstr(ob, "master_address");
    if (role && strcmp(role, "instance") == 0) {
        out_printf(o, "  %-12s instance of %s\n", "onionbalance", master ? master : "?");
        return;
    }
    const char *state = jstr(ob, "state"), *last = jstr(ob, "last_confirmed_upload");
    size_t i, with = 0;
    const json_t *in;
    json_array_foreach(json_object_get(ob, "instances"), i, in) {
        with += json_is_true(json_object_get(in, "descriptor_received"));
    }
    out_printf(o, "  %-12s frontend, %s; %zu of %zu instances with a descriptor", "onionbalance",
               state ? state : "?", with, json_array_size(json_object_get(ob, "instances")));
    if (jint(ob, "intro_points") >= 0)
        out_printf(o, ", %lld intro points", jint(ob, "intro_points"));
    out_printf(o, "; last confirmed upload %s; %lld restarts\n", last ? last : "none", jint(ob, "restarts"));
    /* Each instance by address: which one lacks a descriptor is what an operator needs to know. */
    json_array_foreach(json_object_get(ob, "instances"), i, in) {
        const char *addr = jstr(in, "address");
        out_printf(o, "  %-12s %s: ", "instance", addr ? addr : "?");
        if (!json_is_true(json_object_get(in, "descriptor_received")))
            out_printf(o, "no descriptor\n");
        else if (jint(in, "intro_points") >= 0)
            out_printf(o, "descriptor received, %lld intro points\n", jint(in, "intro_points"));
        else
            out_printf(o, "descriptor received\n");
    }
}

/* tor's own numbers of one service in `tm` (MetricsPort), each part after its separator; a value tor did
 * not export is left out, never shown as 0. */
static void summary_tor_values(struct out *o, const json_t *tm, bool first)
{
    static const struct {
        const char *key, *fmt;
    } parts[] = {
        {"pow_suggested_effort", ", effort %.0f"},      {"pow_queue_length", ", queue %.0f"},
        {"introductions_received", "; introductions %.0f"}, {"introductions_rejected", " (%.0f rejected)"},
        {"rendezvous_created", "; rendezvous %.0f"},   {"rendezvous_errors", " (%.0f failed)"},
    };
    for (size_t i = 0; json_is_object(tm) && i < sizeof(parts) / sizeof(parts[0]); i++) {
        const json_t *v = json_object_get(tm, parts[i].key);
        if (!json_is_number(v))
            continue;
        out_printf(o, first ? parts[i].fmt + 2 : parts[i].fmt, json_number_value(v)); /* the first without ", " */
        first = false;
    }
}

/* "  dos          PoW on, effort 0, queue 0; introductions 2 (0 rejected); rendezvous 2 (0 failed)": tor's
 * own numbers (MetricsPort), over every tor of the service (summed; the highest effort); with several
 * tors, then a row per tor ("    tor 2      effort 0, queue 0; introductions 1 ..."). */
static void summary_tor_metrics(struct out *o, const json_t *svc)
{
    const json_t *tm = json_object_get(svc, "tor_metrics"), *pow = json_object_get(svc, "pow_enabled");
    const json_t *by_tor = json_object_get(svc, "tor_metrics_by_tor"), *one;
    size_t k;
    if (!json_is_boolean(pow))
        return;
    out_printf(o, "  %-12s PoW %s", "dos", json_is_true(pow) ? "on" : "off");
    summary_tor_values(o, tm, false);
    out_printf(o, "%s\n", json_is_object(tm) ? "" : " (tor's metrics not read)");
    if (json_array_size(by_tor) < 2)
        return;
    json_array_foreach(by_tor, k, one) {
        char label[32];
        snprintf(label, sizeof(label), "tor %lld", jint(one, "instance"));
        out_printf(o, "    %-10s ", label);
        summary_tor_values(o, one, true);
        out_printf(o, "\n");
    }
}

/* With several tors: whose descriptor the HSDirs serve ("served by tor 2 (8/8 HSDirs)"; report.c). */
static void summary_served(struct out *o, const json_t *svc)
{
    const json_t *served = json_object_get(svc, "served");
    const char *source = jstr(served, "source");
    if (!json_is_object(served) || !source)
        return;
    long long by = jint(served, "served_by");
    out_printf(o, "  %-12s ", "served by");
    if (by < 0)
        out_printf(o, "unknown (no HSDir's copy matched a tor's own descriptor yet)\n");
    else if (strcmp(source, "fetched") == 0 || strcmp(source, "accepted_copy") == 0) /* copies compared */
        out_printf(o, "tor %lld (%lld/%lld HSDirs)\n", by, jint(served, "hsdirs_holding"),
                   jint(served, "hsdirs_answered"));
    else
        out_printf(o, "tor %lld (by accepted uploads: no HSDir's copy matched a tor's own descriptor)\n", by);
}

/* The last end-to-end probe in one line: "reachable: HTTP 200, first byte 0.84 s at 2026-12-05T15:20:12Z",
 * or where it failed and when the service was last reached. Nothing when the probe is off. */
static void summary_probe(struct out *o, const json_t *svc)
{
    const json_t *probe = json_object_get(svc, "probe");
    if (!json_is_object(probe))
        return;
    const json_t *last = json_object_get(probe, "last"), *ttfb = json_object_get(last, "ttfb_seconds");
    const char *state = jstr(probe, "state"), *when = jstr(last, "time");
    out_printf(o, "  %-12s %s", "probe", state ? state : "unknown");
    if (!json_is_object(last)) {
        out_printf(o, " (not probed yet)\n");
        return;
    }
    if (json_is_true(json_object_get(last, "ok"))) {
        long long http = jint(last, "http_status");
        if (http > 0)
            out_printf(o, ": HTTP %lld", http);
        if (json_is_number(ttfb))
            out_printf(o, "%s %.2f s", http > 0 ? ", first byte" : ": connected in", json_number_value(ttfb));
        out_printf(o, " at %s\n", when ? when : "?");
        return;
    }
    const char *stage = jstr(last, "stage"), *detail = jstr(last, "detail"), *ok_at = jstr(probe, "last_success");
    out_printf(o, ": last probe failed at %s%s%s at %s; last reached %s\n", stage ? stage : "?",
               detail && *detail ? ": " : "", detail ? detail : "", when ? when : "?", ok_at ? ok_at : "never");
}

/* One certificate as a line: days left, the name, the trust ("self-signed" is no error for an onion). */
static void summary_tls_view(struct out *o, const char *label, const json_t *v)
{
    const char *err = jstr(v, "error"), *trust = jstr(v, "trust"), *detail = jstr(v, "trust_detail");
    out_printf(o, "  %-12s ", label);
    if (err || !jstr(v, "not_after")) {
        out_printf(o, "no certificate read: %s\n", err ? err : "not yet");
        return;
    }
    out_printf(o, "expires %s (%lld days)%s, %s", jstr(v, "not_after"), jint(v, "days_left"),
               json_is_true(json_object_get(v, "name_matches")) ? "" : ", DOES NOT NAME THE ONION",
               trust && strcmp(trust, "self_signed") == 0 ? "self-signed" : trust ? trust : "?");
    if (detail && *detail)
        out_printf(o, " (%s)", detail);
    if (json_is_false(json_object_get(v, "same_as_onion")))
        out_printf(o, ", not the certificate visitors get");
    out_printf(o, "\n");
}

/* The "tls" port's certificates: the visitor's, then each backend's. */
static void summary_tls(struct out *o, const json_t *svc)
{
    const json_t *tls = json_object_get(json_object_get(svc, "probe"), "tls"), *v;
    size_t i;
    if (!json_is_object(tls))
        return;
    summary_tls_view(o, "tls visitor", json_object_get(tls, "onion"));
    json_array_foreach(json_object_get(tls, "backends"), i, v) {
        char label[300];
        snprintf(label, sizeof(label), "tls %s", jstr(v, "endpoint") ? jstr(v, "endpoint") : "?");
        summary_tls_view(o, label, v);
    }
}

/* `check`: the daemon's TLS certificate verdict ("certificates") raises the exit code to WARNING or
 * CRITICAL at certwatch.h's thresholds; the first TLS problem is then the one named. */
static int status_client_tls_exit(const json_t *st, int rc, const char **first)
{
    const char *c = jstr(st, "certificates");
    int tls = !c ? 0 : strcmp(c, "critical") == 0 ? STATUS_EXIT_DOWN : strcmp(c, "warning") == 0 ? STATUS_EXIT_DEGRADED : 0;
    if (rc == STATUS_EXIT_UNKNOWN || tls <= rc)
        return rc;
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(st, "problems"), i, p)
        if (json_is_string(p) && strstr(json_string_value(p), ": TLS: ")) {
            *first = json_string_value(p);
            break;
        }
    return tls;
}

static void summary_service(struct out *o, const json_t *svc, const json_t *backends, bool several)
{
    if (!json_is_object(svc))
        return;
    const char *name = jstr(svc, "name"), *addr = jstr(svc, "address");
    out_printf(o, "\nservice %s: %s\n", name ? name : "?", addr ? addr : "(no address yet)");

    size_t i, j;
    const json_t *port, *t;
    json_array_foreach(json_object_get(svc, "ports"), i, port) {
        char label[32];
        snprintf(label, sizeof(label), "port %lld", jint(port, "virtual"));
        out_printf(o, "  %-12s ->", label);
        json_array_foreach(json_object_get(port, "targets"), j, t) {
            if (json_is_string(t))
                out_printf(o, "%s %s", j ? "," : "", json_string_value(t));
        }
        out_printf(o, "\n");
    }

    const char *mode = jstr(svc, "mode");
    if (mode)
        out_printf(o, "  %-12s %s\n", "mode", strcmp(mode, "anonymous") == 0 ? "anonymous (location-hidden)"
                                                                            : "single onion (NOT location-hidden)");
    const json_t *ob = json_object_get(svc, "onionbalance");
    if (json_is_object(ob))
        summary_onionbalance(o, ob);
    if (json_is_object(ob) && strcmp(jstr(ob, "role") ? jstr(ob, "role") : "", "frontend") == 0)
        return; /* not on this machine's tors: no verdict, descriptor or backends of its own */
    const char *verdict = jstr(svc, "verdict");
    if (verdict) {
        out_printf(o, "  %-12s ", "verdict");
        for (const char *p = verdict; *p; p++) /* "single_onion" -> "single onion" */
            fputc(*p == '_' ? ' ' : *p, o->f);
        out_printf(o, "\n");
    }

    const json_t *desc = json_object_get(svc, "descriptor");
    const json_t *uploaded = json_object_get(svc, "uploaded");
    long long confirmed = jint(desc, "hsdirs_confirmed"), total = jint(desc, "hsdirs_total");
    long long age = jint(desc, "last_upload_age_seconds");
    if (confirmed >= 0 && total >= 0) {
        out_printf(o, "  %-12s %lld/%lld HSDirs confirmed", "descriptor", confirmed, total);
        if (age >= 0) {
            out_printf(o, ", last upload ");
            out_duration(o, age);
            out_printf(o, " ago");
        }
        out_printf(o, "\n");
    } else if (json_is_boolean(uploaded)) {
        out_printf(o, "  %-12s %s\n", "descriptor", json_is_true(uploaded) ? "uploaded" : "not uploaded yet");
    }
    if (several)
        summary_served(o, svc);
    summary_probe(o, svc);
    summary_tls(o, svc);
    summary_tor_metrics(o, svc);
    if (name)
        summary_backends(o, name, backends);
}

/* Is the service without a problem a person must see: an address, a confirmed upload on every
 * responsible HSDir, no circuit of the wrong kind, not degraded or down end to end, every backend pool
 * up, not an Onionbalance frontend (its own view)? */
static bool summary_is_healthy(const json_t *svc, const json_t *backends)
{
    const char *name = jstr(svc, "name"), *verdict = jstr(svc, "verdict");
    const json_t *desc = json_object_get(svc, "descriptor"), *probe = json_object_get(svc, "probe");
    const char *pstate = jstr(probe, "state");
    if (!name || !jstr(svc, "address") || !json_is_true(json_object_get(svc, "uploaded")) ||
        json_is_object(json_object_get(svc, "onionbalance")))
        return false;
    if (json_is_object(desc) && (jint(desc, "hsdirs_total") <= 0 ||
                                 jint(desc, "hsdirs_confirmed") < jint(desc, "hsdirs_total")))
        return false;
    if ((verdict && strncmp(verdict, "not_", 4) == 0) ||
        (pstate && strcmp(pstate, "reachable") != 0 && strcmp(pstate, "starting") != 0))
        return false;
    size_t i, j;
    const json_t *pool, *b;
    json_array_foreach(backends, i, pool) {
        const char *svcname = jstr(pool, "service");
        if (!svcname || strcmp(svcname, name) != 0)
            continue;
        json_array_foreach(json_object_get(pool, "backends"), j, b) {
            const char *state = jstr(b, "state");
            if (!state || strcmp(state, "up") != 0)
                return false;
        }
    }
    return true;
}

/* A healthy service in one line: "service web: <address>  ok, 8/8 HSDirs, reachable (first byte 0.42 s)". */
static void summary_service_line(struct out *o, const json_t *svc)
{
    const json_t *desc = json_object_get(svc, "descriptor"), *probe = json_object_get(svc, "probe");
    const char *pstate = jstr(probe, "state");
    out_printf(o, "service %s: %s  ok", jstr(svc, "name"), jstr(svc, "address"));
    if (json_is_object(desc))
        out_printf(o, ", %lld/%lld HSDirs", jint(desc, "hsdirs_confirmed"), jint(desc, "hsdirs_total"));
    if (pstate && strcmp(pstate, "starting") == 0) {
        out_printf(o, ", starting (not probed yet)");
    } else if (pstate) {
        const json_t *ttfb = json_object_get(json_object_get(probe, "last"), "ttfb_seconds");
        out_printf(o, ", %s", pstate);
        if (json_is_number(ttfb))
            out_printf(o, " (first byte %.2f s)", json_number_value(ttfb));
    }
    out_printf(o, "\n");
}

char *status_client_summary(const json_t *status, const json_t *services, const json_t *backends)
{
    struct out o = {0};
    o.f = open_memstream(&o.text, &o.len);
    if (!o.f)
        return NULL;
    if (status)
        summary_status(&o, status);
    size_t i;
    const json_t *svc;
    bool several = json_array_size(json_object_get(status, "tors")) > 1;
    /* Many services: one line for each healthy one, the full view only where there is a problem. */
    bool compact = json_array_size(services) > STATUS_CLIENT_FULL_MAX;
    bool after_full = true; /* a run of one-line services starts after a blank line, as a full view does */
    json_array_foreach(services, i, svc) {
        if (compact && summary_is_healthy(svc, backends)) {
            if (after_full)
                out_printf(&o, "\n");
            summary_service_line(&o, svc);
            after_full = false;
        } else {
            summary_service(&o, svc, backends, several);
            after_full = true;
        }
    }
    if (!status && json_array_size(services) == 0)
        out_printf(&o, "(nothing to show)\n");
    if (fclose(o.f) != 0) {
        free(o.text);
        return NULL;
    }
    return o.text;
}

/* ---- `onionfront status` --------------------------------------------------------------------------- */

static int status_client_one(int fd, const char *prog, const char *cmd, char *const *args, int nargs, bool json,
                             FILE *out, FILE *errf)
{
    char err[1024];
    json_t *req = status_client_request(cmd, args, nargs, err, sizeof(err));
    json_t *r = req ? status_client_send(fd, req, STATUS_CLIENT_TIMEOUT_MS, err, sizeof(err)) : NULL;
    if (!r) {
        /* The daemon's refusals name the command already ("restart-tor: permission denied: ...");
         * "onionfront log-level: ...", not "log-level: log-level: ...", and run as `onionfront
         * restart-tor` the command is named once: "onionfront restart-tor: permission denied: ...". */
        size_t n = strlen(cmd);
        bool err_named = strncmp(err, cmd, n) == 0 && err[n] == ':';
        const char *msg = err_named && strcmp(prog, cmd) == 0 ? err + n + 1 + (err[n + 1] == ' ') : err;
        bool named = err_named || strcmp(prog, cmd) == 0;
        fprintf(errf, "onionfront %s: %s%s%s\n", prog, named ? "" : cmd, named ? "" : ": ", msg);
        return 1;
    }
    bool services = strcmp(cmd, "services") == 0 || strcmp(cmd, "services-detail") == 0;
    char *text = !json && services ? status_client_summary(NULL, r, NULL) : NULL;
    if (text) {
        fputs(text, out); /* each service as `status` shows it */
        free(text);
    } else if (!json && json_is_string(r)) {
        fputs(json_string_value(r), out); /* metrics: the text itself */
    } else if (!json && strcmp(cmd, "reload") == 0) {
        const char *m = jstr(r, "message");
        fprintf(out, "reloaded%s%s\n", m ? ": " : "", m ? m : "");
    } else if (!json && jstr(r, "message")) {
        fprintf(out, "%s\n", jstr(r, "message")); /* log-level */
    } else {
        json_dumpf(r, out, JSON_INDENT(2) | JSON_ENCODE_ANY);
        fputc('\n', out);
    }
    json_decref(r);
    return 0;
}

int status_client_exit_code(const json_t *status)
{
    const char *state = jstr(status, "state");
    return !state                       ? STATUS_EXIT_UNKNOWN /* no status this client can read */
           : strcmp(state, "down") == 0 ? STATUS_EXIT_DOWN
           : strcmp(state, "ok") == 0   ? STATUS_EXIT_OK
                                        : STATUS_EXIT_DEGRADED;
}

int status_client_check(const char *path, FILE *out)
{
    static const char *const words[] = {"OK", "WARNING", "CRITICAL", "UNKNOWN"};
    char err[1024];
    int fd = status_client_connect(path, err, sizeof(err));
    json_t *st = fd >= 0 ? status_client_call(fd, "status", STATUS_CLIENT_TIMEOUT_MS, err, sizeof(err)) : NULL;
    if (fd >= 0)
        close(fd);
    if (!st) { /* not running is down; anything else (refused, no answer) cannot tell */
        int rc = fd == -1 ? STATUS_EXIT_DOWN : STATUS_EXIT_UNKNOWN;
        fprintf(out, "ONIONFRONT %s - %s\n", words[rc], err);
        return rc;
    }
    /* Start-up is not an alarm (a "starting" daemon is within tor.bootstrap_timeout of its start); to
     * `status` it is not ready yet (1), so that a script waiting for exit 0 waits for "ok". */
    const char *state = jstr(st, "state");
    bool starting = state && strcmp(state, "starting") == 0;
    int rc = starting ? STATUS_EXIT_OK : status_client_exit_code(st);
    json_t *problems = json_object_get(st, "problems");
    const json_t *services = json_object_get(st, "services");
    const char *first = json_string_value(json_array_get(problems, 0));
    rc = status_client_tls_exit(st, rc, &first);
    /* Nagios plugin output: one line, "STATUS - text | perfdata". */
    fprintf(out, "ONIONFRONT %s - %s%s%s | problems=%zu", words[rc], starting ? "starting: " : "",
            first ? first : "all services up", json_array_size(problems) > 1 ? " (and more)" : "",
            json_array_size(problems));
    if (jint(services, "total") >= 0) /* perfdata the daemon reports */
        fprintf(out, " services=%lld uploaded=%lld", jint(services, "total"), jint(services, "uploaded"));
    fputc('\n', out);
    json_decref(st);
    return rc;
}

/* Is `word` one of the daemon's commands (its "help" list)? A daemon without "help" has only commands. */
static bool status_client_is_command(int fd, const char *word)
{
    char err[256];
    json_t *names = status_client_call(fd, "help", STATUS_CLIENT_TIMEOUT_MS, err, sizeof(err));
    bool found = !json_is_array(names);
    size_t i;
    const json_t *n;
    json_array_foreach(names, i, n) {
        found = found || (json_is_string(n) && strcmp(json_string_value(n), word) == 0);
    }
    json_decref(names);
    return found;
}

/* `onionfront status SERVICE`: the status line and that service in full (JSON: its object, with the
 * per-HSDir detail). Return the status's exit code, or 1 when there is no such service. */
static int status_client_service(int fd, const char *name, bool json, FILE *out, FILE *errf)
{
    char err[1024];
    json_t *st = status_client_call(fd, "status", STATUS_CLIENT_TIMEOUT_MS, err, sizeof(err));
    json_t *svcs = st ? status_client_call(fd, "services-detail", STATUS_CLIENT_TIMEOUT_MS, err, sizeof(err)) : NULL;
    json_t *backends = svcs ? status_client_call(fd, "backends", STATUS_CLIENT_TIMEOUT_MS, err, sizeof(err)) : NULL;
    json_t *svc = NULL, *one = NULL;
    size_t i;
    int rc = 1;
    json_array_foreach(svcs, i, svc) {
        if (jstr(svc, "name") && strcmp(jstr(svc, "name"), name) == 0)
            break;
    }
    if (!st || !svcs) {
        fprintf(errf, "onionfront status: %s\n", err);
    } else if (i >= json_array_size(svcs)) {
        /* Neither: the daemon's own refusal of it as a command names what it takes. */
        json_t *r = status_client_call(fd, name, STATUS_CLIENT_TIMEOUT_MS, err, sizeof(err));
        if (r)
            snprintf(err, sizeof(err), "the daemon answered it as a command");
        json_decref(r);
        fprintf(errf, "onionfront status: %s: %s; and no service has that name\n", name, err);
    } else if (json) {
        json_dumpf(svc, out, JSON_INDENT(2));
        fputc('\n', out);
        rc = status_client_exit_code(st);
    } else if ((one = json_array()) && json_array_append(one, svc) == 0) {
        char *text = status_client_summary(st, one, backends);
        if (text)
            fputs(text, out);
        rc = text ? status_client_exit_code(st) : 1;
        free(text);
    }
    json_decref(one);
    json_decref(st);
    json_decref(svcs);
    json_decref(backends);
    return rc;
}

int status_client_run(const char *path, const char *prog, const char *cmd, char *const *args, int nargs, bool json,
                      bool detail,
                      FILE *out, FILE *errf)
{
    char err[1024];
    int fd = status_client_connect(path, err, sizeof(err));
    if (fd < 0) {
        fprintf(errf, "onionfront %s: %s\n", prog, err);
        return cmd ? 1 : fd == -1 ? STATUS_EXIT_DOWN : STATUS_EXIT_UNKNOWN;
    }
    if (cmd) {
        int rc = nargs == 0 && !status_client_is_command(fd, cmd)
                     ? status_client_service(fd, cmd, json, out, errf)
                     : status_client_one(fd, prog, cmd, args, nargs, json, out, errf);
        close(fd);
        return rc;
    }
    const char *const cmds[] = {"status", detail ? "services-detail" : "services", "backends", "circuits"};
    json_t *res[4] = {NULL};
    int rc = 0;
    for (size_t i = 0; i < 4; i++) {
        res[i] = status_client_call(fd, cmds[i], STATUS_CLIENT_TIMEOUT_MS, err, sizeof(err));
        /* Only the overall status is required; the rest may be "not available" in this build. */
        if (!res[i] && i == 0) {
            fprintf(errf, "onionfront %s: %s\n", prog, err);
            rc = STATUS_EXIT_UNKNOWN; /* running, but no usable answer: cannot tell */
            break;
        }
    }
    close(fd);
    if (rc == 0 && json) {
        json_t *all = json_object();
        static const char *const keys[] = {"status", "services", "backends", "circuits"};
        for (size_t i = 0; all && i < 4; i++)
            json_object_set(all, keys[i], res[i] ? res[i] : json_null());
        if (!all || json_dumpf(all, out, JSON_INDENT(2)) < 0)
            rc = STATUS_EXIT_UNKNOWN;
        fputc('\n', out);
        json_decref(all);
    } else if (rc == 0) {
        char *text = status_client_summary(res[0], res[1], res[2]);
        if (text)
            fputs(text, out);
        else
            rc = STATUS_EXIT_UNKNOWN;
        free(text);
    }
    if (rc == 0)
        rc = status_client_exit_code(res[0]);
    for (size_t i = 0; i < 4; i++)
        json_decref(res[i]);
    return rc;
}
