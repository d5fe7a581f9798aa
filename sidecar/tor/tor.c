/* tor.c — spawn/attach, control connection, bootstrap, mode verification and restart for onionfront's
 * tor (see tor.h). Services are not this file's business: it hands each new verified connection to the
 * ready() callback and reports its loss through lost(). A single state machine (enum tor_state) whose
 * process, connection, bootstrap and verification steps each move the same struct tor_sup on, so every
 * transition and its restart rule read in one place. What a tor is made of outside the connection (its
 * paths, torrc and command line, a leftover from an earlier run) is tor_process.c's. */
#include "sidecar/tor/tor.h"
#include "sidecar/tor/tor_int.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_event.h"
#include "sidecar/config/config.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/identity/instance.h"
#include "sidecar/core/log.h"
#include "sidecar/core/proc.h"
#include "sidecar/tor/single_onion.h"
#include "sidecar/tor/torowner.h"
#include "sidecar/tor/torwarn.h"
#include "sidecar/identity/handover.h"

/* Events onionfront uses; SETEVENTS replaces the whole set, so one module owns it. CONF_CHANGED and
 * SIGNAL tell service.c that tor reloaded its torrc (and dropped the services added by SETCONF). */
static const char *const tor_events[] = {"STATUS_CLIENT", "STATUS_GENERAL", "HS_DESC", "HS_DESC_CONTENT",
                                         "CIRC", "CONF_CHANGED", "SIGNAL"};

#define TOR_CONNECT_RETRY_MS 100
#define TOR_KEEPALIVE_S 10
#define TOR_STOP_GRACE_S 10
#define TOR_REAP_WARN_MS 5000 /* a killed tor not reaped by then is worth a warning */

static void tor_restart_later(struct tor_sup *t, const char *why);
static int tor_launch(struct tor_sup *t, char *err, size_t errlen);

const char *tor_state_str(enum tor_state s)
{
    switch (s) {
    case TOR_STOPPED: return "stopped";
    case TOR_STARTING: return "starting";
    case TOR_CONFIGURING: return "configuring";
    case TOR_BOOTSTRAPPING: return "bootstrapping";
    case TOR_RUNNING: return "running";
    case TOR_BACKOFF: return "backoff";
    case TOR_FAILED: return "failed";
    }
    return "unknown";
}

/* A client tor (the probe's, Onionbalance's) and the anonymous services' tor are always onionfront's own;
 * the service tor is spawned or attached. */
static bool tor_is_spawn(const struct tor_sup *t)
{
    return t->role != TOR_ROLE_SERVICE || t->conf->tor.mode == TOR_MODE_SPAWN;
}

static double tor_since_s(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void tor_set_state(struct tor_sup *t, enum tor_state s)
{
    if (t->state != s)
        log_debug("%s: %s -> %s", t->label, tor_state_str(t->state), tor_state_str(s));
    t->state = s;
}

/* Drop the control connection; tell the owner if it had been handed over. */
static void tor_drop_conn(struct tor_sup *t, const char *why)
{
    if (t->keepalive_ev)
        event_del(t->keepalive_ev);
    if (t->conn) {
        struct cp_conn *c = t->conn;
        t->conn = NULL;
        cp_conn_free(c); /* safe inside its own callbacks: freed after they return */
    }
    if (t->handed_over) {
        t->handed_over = false;
        if (!t->outage) {
            t->outage = true;
            clock_gettime(CLOCK_MONOTONIC, &t->lost_at);
        }
        if (t->cbs.lost)
            t->cbs.lost(t, why, t->arg);
    }
}

static void tor_fail(struct tor_sup *t, const char *why)
{
    tor_drop_conn(t, why);
    if (t->child)
        proc_terminate(t->child, &(struct timeval){TOR_STOP_GRACE_S, 0});
    event_del(t->retry_ev);
    event_del(t->deadline_ev);
    tor_set_state(t, TOR_FAILED);
    if (t->cbs.failed)
        t->cbs.failed(t, why, t->arg);
}

/* ---- bootstrap ---- */

static void tor_note_progress(struct tor_sup *t, int progress, const char *summary)
{
    if (progress < 0)
        return;
    if (progress != t->progress) {
        t->progress = progress;
        log_debug("%s: bootstrap %d%%%s%s", t->label, progress, summary ? ": " : "", summary ? summary : "");
    }
    /* Not only on a change: a restarted tor with a warm DataDirectory can reach 100 % while we are still
     * CONFIGURING, and then only the GETINFO after the handover reports it again. */
    if (t->progress >= 100 && t->state == TOR_BOOTSTRAPPING) {
        event_del(t->deadline_ev);
        tor_set_state(t, TOR_RUNNING);
        t->backoff_s = 0; /* a tor that got this far was a success: the next failure starts again at 1 s */
        log_info("%s: bootstrapped in %.1f s", t->label, tor_since_s(&t->started_at));
        if (t->outage) {
            t->outage = false;
            log_notice("%s: usable again %.1f s after the loss (%u restart%s so far)", t->label, tor_since_s(&t->lost_at),
                       t->restarts, t->restarts == 1 ? "" : "s");
        }
        if (t->cbs.bootstrapped)
            t->cbs.bootstrapped(t, t->arg);
    }
}

static void tor_status_event_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct tor_sup *t = arg;
    struct cp_event_status st = {0};
    char err[256];
    (void)c;
    if (cp_event_status_parse(ev, &st, err, sizeof(err)) < 0) {
        log_debug("%s: ignoring undecodable status event: %s", t->label, err);
        return;
    }
    if (st.action && strcmp(st.action, "BOOTSTRAP") == 0)
        tor_note_progress(t, st.progress, st.summary);
    cp_event_status_clear(&st);
}

static void tor_bootstrap_phase_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct tor_sup *t = arg;
    (void)c;
    if (!r) {
        log_debug("%s: GETINFO status/bootstrap-phase failed: %s", t->label, err);
        return;
    }
    struct cp_info info = {0};
    char perr[256];
    if (cp_info_parse(r, &info, perr, sizeof(perr)) == 0) {
        const char *phase = cp_info_get(&info, "status/bootstrap-phase");
        struct cp_args a = {0};
        if (phase && cp_args_parse(phase, &a, perr, sizeof(perr)) == 0) {
            const char *p = cp_args_get(&a, "PROGRESS");
            int progress;
            if (p && cp_bootstrap_progress_parse(p, &progress, perr, sizeof(perr)) == 0)
                tor_note_progress(t, progress, cp_args_get(&a, "SUMMARY"));
            else if (p)
                log_debug("%s: GETINFO status/bootstrap-phase: %s", t->label, perr);
            cp_args_clear(&a);
        }
        cp_info_clear(&info);
    }
}

static void tor_send_getinfo(struct tor_sup *t, const char *key, cp_conn_reply_cb cb)
{
    char err[256];
    char *cmd = cp_cmd_getinfo(&key, 1, err, sizeof(err));
    if (!cmd || cp_conn_send(t->conn, cmd, cb, t, err, sizeof(err)) < 0)
        log_warnx("%s: cannot send GETINFO %s: %s", t->label, key, err);
    free(cmd);
}

int tor_stat_cpu_ticks(const char *stat, unsigned long long *ticks)
{
    /* proc(5): "pid (comm) state ppid ... utime stime ..."; comm may hold anything, so count the
     * fields after its last ')': state is field 3, utime 14, stime 15. */
    const char *p = stat ? strrchr(stat, ')') : NULL;
    unsigned long long utime, stime;
    if (!p)
        return -1;
    p++;
    for (int field = 3; field < 14; field++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return -1;
        while (*p && *p != ' ')
            p++;
    }
    if (sscanf(p, " %llu %llu", &utime, &stime) != 2)
        return -1;
    *ticks = utime + stime;
    return 0;
}

/* The CPU time (clock ticks) tor's process has used, or -1 (no pid known, gone, unreadable). */
static int tor_cpu_ticks(const struct tor_sup *t, unsigned long long *ticks)
{
    char path[64], buf[1024];
    long pid = t->child ? (long)proc_pid(t->child) : t->tor_pid;
    if (pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return n ? tor_stat_cpu_ticks(buf, ticks) : -1;
}

/* cp_conn's busy check (cp_conn.h): tor left a command unanswered for its whole time. Did its process
 * use CPU since the last look (a keepalive, or the previous check)? Then it is busy, not hung: a tor
 * uploading the descriptors of many services encodes one for every HSDir in its main loop and answers
 * nothing for tens of seconds on a loaded machine, while a stopped or deadlocked tor uses no CPU. */
static bool tor_busy_cb(struct cp_conn *c, void *arg)
{
    struct tor_sup *t = arg;
    unsigned long long now;
    (void)c;
    if (tor_cpu_ticks(t, &now) < 0)
        return false;
    bool busy = t->cpu_known && now > t->cpu_ticks;
    t->cpu_ticks = now;
    t->cpu_known = true;
    if (busy)
        log_info("%s: no answer on the control port yet, but tor is working (its process used CPU); waiting "
                 "longer", t->label);
    return busy;
}

static void tor_keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
    struct tor_sup *t = arg;
    (void)fd;
    (void)what;
    /* A hung tor (e.g. SIGSTOP) never answers: cp_conn's command timeout then closes the connection
     * and we restart. The answer also keeps the bootstrap figure fresh. */
    if (t->conn && cp_conn_get_state(t->conn) == CP_CONN_READY)
        tor_send_getinfo(t, "status/bootstrap-phase", tor_bootstrap_phase_cb);
    unsigned long long ticks;
    if (tor_cpu_ticks(t, &ticks) == 0) {
        t->cpu_ticks = ticks; /* the baseline of tor_busy_cb */
        t->cpu_known = true;
    }
    event_add(t->keepalive_ev, &(struct timeval){TOR_KEEPALIVE_S, 0});
}

static void tor_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct tor_sup *t = arg;
    char why[128];
    (void)fd;
    (void)what;
    snprintf(why, sizeof(why), "tor did not bootstrap within %u s (stuck at %d%%)",
             t->conf->tor.bootstrap_timeout, t->progress);
    if (t->state == TOR_STARTING || t->state == TOR_CONFIGURING) {
        snprintf(why, sizeof(why), "tor's control port did not become usable within %u s",
                 t->conf->tor.bootstrap_timeout);
    }
    tor_restart_later(t, why);
}

/* ---- verification ---- */

/* Why this tor is not fit for its role (single_onion.h's rules), into `out`; false if it is fit. */
static bool tor_check_mode(const struct tor_sup *t, const struct cp_info *conf, const struct cp_info *info,
                           char *out, size_t outlen)
{
    struct single_onion_problem p;
    bool anonymous = t->role == TOR_ROLE_ANONYMOUS;
    if (anonymous ? anonymous_tor_check(conf, info, &p) : single_onion_check(conf, info, &p))
        return false;
    if (p.listener)
        snprintf(out, outlen, "tor has a client port (SocksPort/TransPort/NATDPort/DNSPort/HTTPTunnelPort) open");
    else
        snprintf(out, outlen, "%s is not %s", p.key, p.want);
    return true;
}

/* Set t->uid from the kernel's word for who is at the other end of the control socket (SO_PEERCRED), not
 * tor's (`claimed`, GETINFO process/uid): as root, that uid gets every key directory, and whatever answers
 * on the socket could claim any uid. A disagreement is logged, naming both. Without peer credentials the
 * uid stays unknown (-1): torowner_problem refuses what would need it. */
static void tor_set_uid(struct tor_sup *t, long claimed)
{
    uid_t peer;
    t->uid = -1;
    if (cp_conn_peer_uid(t->conn, &peer) < 0)
        return;
    t->uid = (long)peer;
    if (claimed >= 0 && claimed != t->uid)
        log_warnx("%s: tor says it runs as uid %ld (GETINFO process/uid), but the process at the other end of "
                  "its control socket runs as uid %ld (SO_PEERCRED): going by uid %ld", t->label, claimed, t->uid,
                  t->uid);
}

static void tor_handover(struct tor_sup *t)
{
    unsigned long long ticks;
    t->cpu_known = tor_cpu_ticks(t, &ticks) == 0;
    t->cpu_ticks = t->cpu_known ? ticks : 0; /* the first baseline of tor_busy_cb */
    tor_set_state(t, TOR_BOOTSTRAPPING);
    t->handed_over = true;
    event_add(t->keepalive_ev, &(struct timeval){TOR_KEEPALIVE_S, 0});
    if (t->cbs.ready)
        t->cbs.ready(t, t->conn, t->arg);
    /* ready() may have dropped the connection; only then is there nothing left to ask. */
    if (t->conn)
        tor_send_getinfo(t, "status/bootstrap-phase", tor_bootstrap_phase_cb);
}

/* The verification chain: GETCONF of the mode options, then GETINFO of the client listeners and version;
 * the context carries the first answer to the second callback. */
struct tor_verify_ctx {
    struct tor_sup *t;
    struct cp_info conf;
};

static void tor_verify_listeners_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct tor_verify_ctx *v = arg;
    struct tor_sup *t = v->t;
    char perr[256];
    (void)c;
    if (!r || !cp_reply_is_ok(r)) {
        const char *why = r ? cp_reply_message(r) : err;
        cp_info_clear(&v->conf);
        free(v);
        tor_restart_later(t, why);
        return;
    }
    struct cp_info info = {0};
    if (cp_info_parse(r, &info, perr, sizeof(perr)) < 0) {
        cp_info_clear(&v->conf);
        free(v);
        tor_restart_later(t, "cannot parse GETINFO answer");
        return;
    }
    char problem[160];
    bool unfit = tor_check_mode(t, &v->conf, &info, problem, sizeof(problem));
    const char *ver = cp_info_get(&info, "version");
    if (ver)
        snprintf(t->version, sizeof(t->version), "%s", ver);
    const char *uid = cp_info_get(&info, "process/uid");
    char *end = NULL;
    long claimed = uid ? strtol(uid, &end, 10) : -1;
    if (!uid || end == uid || *end != '\0' || claimed < 0)
        claimed = -1;
    tor_set_uid(t, claimed);
    const char *pid = cp_info_get(&info, "process/pid");
    end = NULL;
    t->tor_pid = pid ? strtol(pid, &end, 10) : -1;
    if (!pid || end == pid || *end != '\0' || t->tor_pid <= 0)
        t->tor_pid = -1;
    t->cpu_known = false;

    cp_info_clear(&info);
    cp_info_clear(&v->conf);
    free(v);
    if (unfit) {
        char why[400];
        if (t->role == TOR_ROLE_ANONYMOUS)
            snprintf(why, sizeof(why), "refusing to use this tor: %s; onionfront runs anonymous services only "
                     "on an ordinary tor (HiddenServiceSingleHopMode 0, HiddenServiceNonAnonymousMode 0) without "
                     "client ports", problem);
        else
            snprintf(why, sizeof(why), "refusing to use this tor: %s; onionfront only runs single onion "
                     "services on a tor with HiddenServiceSingleHopMode 1, HiddenServiceNonAnonymousMode 1 "
                     "and no client ports", problem);
        if (tor_is_spawn(t))
            tor_restart_later(t, why); /* our own torrc should make this impossible */
        else
            tor_fail(t, why);
        return;
    }
    char uid_problem[512];
    if (!tor_is_spawn(t) && torowner_problem(t->uid, claimed, geteuid(), uid_problem, sizeof(uid_problem))) {
        tor_fail(t, uid_problem);
        return;
    }
    log_info("%s: verified %s mode with no client ports (tor %s)", t->label,
             t->role == TOR_ROLE_ANONYMOUS ? "ordinary (multi-hop, anonymous)" : "single-hop, non-anonymous",
             t->version);
    tor_handover(t);
}

static void tor_verify_modeconf_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct tor_sup *t = arg;
    char perr[256];
    (void)c;
    if (!r || !cp_reply_is_ok(r)) {
        tor_restart_later(t, r ? cp_reply_message(r) : err);
        return;
    }
    struct tor_verify_ctx *v = calloc(1, sizeof(*v));
    if (!v) {
        tor_restart_later(t, "out of memory");
        return;
    }
    v->t = t;
    if (cp_info_parse(r, &v->conf, perr, sizeof(perr)) < 0) {
        free(v);
        tor_restart_later(t, "cannot parse GETCONF answer");
        return;
    }
    const char *keys[SINGLE_ONION_N_LISTENERS + 3];
    memcpy(keys, single_onion_listener_keys, sizeof(single_onion_listener_keys));
    keys[SINGLE_ONION_N_LISTENERS] = "version";
    keys[SINGLE_ONION_N_LISTENERS + 1] = "process/uid";
    keys[SINGLE_ONION_N_LISTENERS + 2] = "process/pid";
    char *cmd = cp_cmd_getinfo(keys, sizeof(keys) / sizeof(keys[0]), perr, sizeof(perr));
    if (!cmd || cp_conn_send(t->conn, cmd, tor_verify_listeners_cb, v, perr, sizeof(perr)) < 0) {
        free(cmd);
        cp_info_clear(&v->conf);
        free(v);
        tor_restart_later(t, perr);
        return;
    }
    free(cmd);
}

/* Completion for commands whose failure means the connection is not usable as configured. */
static void tor_setup_cmd_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct tor_sup *t = arg;
    (void)c;
    if (!r || !cp_reply_is_ok(r)) {
        char why[256];
        snprintf(why, sizeof(why), "control setup command failed: %s", r ? cp_reply_message(r) : err);
        tor_restart_later(t, why);
    }
}

/* Close the running tor's MetricsPort (it came from the torrc, before a service whose address must not
 * leak was given to this tor). On a connection not ready yet tor_configure does it; a refusal restarts
 * tor, whose new torrc has none. */
static void tor_close_metrics_port(struct tor_sup *t)
{
    char err[256];
    if (!t->metrics_port || !t->conn || cp_conn_get_state(t->conn) != CP_CONN_READY)
        return;
    t->metrics_port = 0;
    log_info("%s: closing its MetricsPort: it hosts a service whose address other local users must not read",
             t->label);
    if (cp_conn_send(t->conn, "SETCONF MetricsPort=\"\"\r\n", tor_setup_cmd_cb, t, err, sizeof(err)) < 0)
        tor_restart_later(t, err);
}

static void tor_configure(struct tor_sup *t)
{
    char err[256];
    tor_set_state(t, TOR_CONFIGURING);
    cp_conn_subscribe(t->conn, "STATUS_CLIENT", tor_status_event_cb, t);
    cp_conn_subscribe(t->conn, "STATUS_GENERAL", tor_status_event_cb, t);

    /* Commands are pipelined; the FIFO keeps them in order. */
    if (tor_is_spawn(t)) {
        /* tor exits as soon as this connection closes: with __OwningControllerProcess in the torrc,
         * nothing survives onionfront. */
        if (cp_conn_send(t->conn, "TAKEOWNERSHIP\r\n", tor_setup_cmd_cb, t, err, sizeof(err)) < 0)
            goto fail;
        if (cp_conn_send(t->conn, "RESETCONF __OwningControllerProcess\r\n", tor_setup_cmd_cb, t, err,
                         sizeof(err)) < 0)
            goto fail;
    }
    if (!t->metrics_allowed)
        tor_close_metrics_port(t); /* before any service is handed over */
    char *cmd = cp_cmd_setevents(tor_events, sizeof(tor_events) / sizeof(tor_events[0]), err, sizeof(err));
    if (!cmd || cp_conn_send(t->conn, cmd, tor_setup_cmd_cb, t, err, sizeof(err)) < 0) {
        free(cmd);
        goto fail;
    }
    free(cmd);
    if (tor_client_name(t)) {
        /* An ordinary client: nothing to verify, and it never runs a service. */
        tor_handover(t);
        return;
    }
    cmd = cp_cmd_getconf(single_onion_conf_keys, SINGLE_ONION_N_CONF, err, sizeof(err));
    if (!cmd || cp_conn_send(t->conn, cmd, tor_verify_modeconf_cb, t, err, sizeof(err)) < 0) {
        free(cmd);
        goto fail;
    }
    free(cmd);
    return;
fail:
    tor_restart_later(t, err);
}

/* ---- connection ---- */

static void tor_conn_state_cb(struct cp_conn *c, enum cp_conn_state st, const char *err, void *arg)
{
    struct tor_sup *t = arg;
    if (c != t->conn)
        return;
    if (st == CP_CONN_READY) {
        tor_configure(t);
        return;
    }
    if (st != CP_CONN_CLOSED)
        return;
    if (t->stopping) {
        tor_drop_conn(t, "stopping");
        if (!tor_is_spawn(t)) {
            tor_set_state(t, TOR_STOPPED);
            if (t->cbs.stopped)
                t->cbs.stopped(t, t->arg);
        }
        return;
    }
    /* Our tor died (SIGKILL, crash): the socket's EOF often arrives before SIGCHLD is handled. Reaping
     * it now gives the restart the real reason; tor_exit_cb then does the rest. */
    if (tor_is_spawn(t) && t->child && proc_poll(t->child))
        return;
    char why[300];
    if (t->state == TOR_STARTING) {
        if (tor_is_spawn(t)) {
            /* The socket is not there yet (tor still starting): try again shortly. If tor is gone
             * instead, tor_exit_cb restarts it. */
            tor_drop_conn(t, err ? err : "closed");
            if (t->child && proc_is_running(t->child))
                event_add(t->retry_ev, &(struct timeval){0, TOR_CONNECT_RETRY_MS * 1000});
            return;
        }
        /* attach: tor is not (yet) there or refused us; try again with backoff */
        snprintf(why, sizeof(why), "cannot use tor's control socket: %s", err ? err : "closed");
        tor_restart_later(t, why);
        return;
    }
    snprintf(why, sizeof(why), "control connection lost: %s", err ? err : "closed by tor");
    tor_restart_later(t, why);
}

static void tor_try_connect(struct tor_sup *t)
{
    char err[256];
    struct cp_conn_opts o = {0};
    o.unix_path = t->control_socket;
    o.auth = tor_is_spawn(t) ? CP_AUTH_SAFECOOKIE : CP_AUTH_AUTO;
    o.cmd_timeout.tv_sec = (time_t)t->conf->tor.command_timeout;
    t->conn = cp_conn_new(t->base, &o, tor_conn_state_cb, t, err, sizeof(err));
    if (t->conn)
        cp_conn_set_busy_check(t->conn, tor_busy_cb, t);
    if (!t->conn || cp_conn_connect(t->conn, err, sizeof(err)) < 0) {
        if (t->conn) {
            cp_conn_free(t->conn);
            t->conn = NULL;
        }
        if (tor_is_spawn(t)) {
            /* our tor has not created its socket yet: poll quickly (bounded by the deadline) */
            log_debug("%s: connect to %s: %s", t->label, t->control_socket, err);
            event_add(t->retry_ev, &(struct timeval){0, TOR_CONNECT_RETRY_MS * 1000});
        } else {
            /* an attached tor that is down (restarting, stopped): reconnect with backoff */
            char why[320];
            snprintf(why, sizeof(why), "cannot connect to tor: %s", err);
            tor_restart_later(t, why);
        }
    }
}

/* ---- process ---- */

/* Does the config's extra torrc make this a private test network (TestingTorNetwork 1)? */
static bool tor_testing_network(const struct config *conf)
{
    for (size_t i = 0; i < conf->tor.n_extra_torrc; i++) {
        const char *l = conf->tor.extra_torrc[i];
        size_t n = strlen("TestingTorNetwork");
        if (strncasecmp(l, "TestingTorNetwork", n) == 0 && (l[n] == ' ' || l[n] == '\t') && atoi(l + n + 1) == 1)
            return true;
    }
    return false;
}

static void tor_line_cb(struct proc *p, const char *line, void *arg)
{
    struct tor_sup *t = arg;
    (void)p;
    /* tor's own log at its own level, so its warnings are warnings, except those onionfront caused on
     * purpose (torwarn.h): `journalctl -p warning` stays quiet on a healthy start but for onionfront's own
     * single-onion warning. */
    struct torwarn_ctx ctx = {
        .single_onion = t->role == TOR_ROLE_SERVICE,
        .hosts_services = t->role == TOR_ROLE_SERVICE || t->role == TOR_ROLE_ANONYMOUS,
        .client = t->role == TOR_ROLE_PROBE_CLIENT || t->role == TOR_ROLE_OB_CLIENT,
        .drops_root = t->conf->tor.user && !tor_client_name(t) && geteuid() == 0,
        .testing_network = tor_testing_network(t->conf),
    };
    log_relay(tor_line_relay_level(line, &ctx),
              t->role == TOR_ROLE_PROBE_CLIENT ? "probe-tor"
              : t->role == TOR_ROLE_OB_CLIENT  ? "ob-tor"
                                               : t->label,
              line);
}

static void tor_exit_cb(struct proc *p, int wstatus, void *arg)
{
    struct tor_sup *t = arg;
    char why[128];
    if (WIFEXITED(wstatus))
        snprintf(why, sizeof(why), "tor (pid %ld) exited with status %d", (long)proc_pid(p), WEXITSTATUS(wstatus));
    else if (WIFSIGNALED(wstatus))
        snprintf(why, sizeof(why), "tor (pid %ld) killed by signal %d", (long)proc_pid(p), WTERMSIG(wstatus));
    else
        snprintf(why, sizeof(why), "tor (pid %ld) ended", (long)proc_pid(p));
    t->child = NULL;
    t->reap_waits = 0;
    proc_free(p);
    if (t->stopping) {
        log_info("%s: %s", t->label, why);
        tor_drop_conn(t, "stopping");
        tor_set_state(t, TOR_STOPPED);
        if (t->cbs.stopped)
            t->cbs.stopped(t, t->arg);
        return;
    }
    if (t->state == TOR_FAILED)
        return;
    if (t->state == TOR_BACKOFF) {
        /* the tor given up on (connection lost, hung, killed by us) is gone: the relaunch may go ahead */
        log_info("%s: previous %s", t->label, why);
        return;
    }
    tor_restart_later(t, why);
}

static void tor_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct tor_sup *t = arg;
    char err[512];
    (void)fd;
    (void)what;
    if (t->stopping)
        return;
    if (t->state == TOR_BACKOFF) {
        /* Never two tors on one DataDirectory: the killed one must have been reaped first. SIGKILL is
         * normally handled within milliseconds; this only waits (without blocking the loop). */
        if (t->child && !proc_poll(t->child)) {
            if (++t->reap_waits == TOR_REAP_WARN_MS / TOR_CONNECT_RETRY_MS)
                log_warnx("%s: pid %ld has not ended %d s after SIGKILL; not starting another tor yet", t->label,
                          (long)proc_pid(t->child), TOR_REAP_WARN_MS / 1000);
            event_add(t->retry_ev, &(struct timeval){0, TOR_CONNECT_RETRY_MS * 1000});
            return;
        }
        if (tor_launch(t, err, sizeof(err)) < 0) {
            char why[600];
            snprintf(why, sizeof(why), "cannot start tor: %s", err);
            tor_restart_later(t, why);
        }
        return;
    }
    if (t->state == TOR_STARTING && !t->conn)
        tor_try_connect(t);
}

/* Something went wrong with the current tor or connection (or a planned restart, logged at `level`):
 * tear it down and start again after a growing delay (1, 2, 4 ... restart_backoff_max seconds). */
static void tor_restart_later_at(struct tor_sup *t, enum log_level level, const char *why)
{
    if (t->stopping || t->state == TOR_FAILED)
        return;
    if (t->state == TOR_BACKOFF) {
        log_debug("%s: %s (already restarting)", t->label, why);
        return;
    }
    tor_drop_conn(t, why);
    event_del(t->deadline_ev);
    event_del(t->retry_ev);
    if (t->child) {
        /* A tor we gave up on is of no use (without its owning connection it exits anyway): kill it now,
         * also when hung (SIGSTOP ignores SIGTERM). Not waiting for it here keeps the loop running;
         * tor_retry_cb relaunches only after tor_exit_cb has seen it reaped. */
        proc_kill(t->child);
    }
    unsigned max = (unsigned)t->conf->tor.restart_backoff_max;
    t->backoff_s = t->backoff_s == 0 ? 1 : (t->backoff_s * 2 > max ? max : t->backoff_s * 2);
    t->restarts++;
    log_msg(level, "%s: %s; %s in %u s", t->label, why, tor_is_spawn(t) ? "restarting tor" : "reconnecting",
            t->backoff_s);
    tor_set_state(t, TOR_BACKOFF);
    event_add(t->retry_ev, &(struct timeval){t->backoff_s, 0});
}

static void tor_restart_later(struct tor_sup *t, const char *why)
{
    tor_restart_later_at(t, LOG_LVL_WARN, why);
}

static int tor_launch(struct tor_sup *t, char *err, size_t errlen)
{
    clock_gettime(CLOCK_MONOTONIC, &t->started_at);
    t->progress = -1;
    t->uid = t->tor_pid = -1;
    t->cpu_known = false;
    tor_set_state(t, TOR_STARTING);
    event_add(t->deadline_ev, &(struct timeval){(time_t)t->conf->tor.bootstrap_timeout, 0});
    if (!tor_is_spawn(t)) {
        tor_try_connect(t);
        return 0;
    }
    /* A stale socket from a killed tor would make connect() fail until tor replaces it; remove it. */
    unlink(t->control_socket);
    if (tor_write_torrc(t, err, errlen) < 0)
        return -1;
    const char *argv[6];
    tor_argv(t, argv);
    t->child = proc_spawn(t->procs, argv, tor_line_cb, tor_exit_cb, t, err, errlen);
    if (!t->child)
        return -1;
    log_info("%s: started %s (pid %ld)", t->label, tor_binary(t), (long)proc_pid(t->child));
    event_add(t->retry_ev, &(struct timeval){0, TOR_CONNECT_RETRY_MS * 1000});
    return 0;
}

/* ---- public ---- */

struct tor_sup *tor_sup_new(struct event_base *base, struct proc_mgr *procs, const struct config *conf,
                            const struct tor_callbacks *cbs, void *arg)
{
    struct tor_sup *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->base = base;
    t->procs = procs;
    t->conf = conf;
    t->cbs = *cbs;
    t->arg = arg;
    t->progress = -1;
    t->uid = t->tor_pid = -1;
    t->role = TOR_ROLE_SERVICE;
    snprintf(t->label, sizeof(t->label), "tor");
    t->retry_ev = evtimer_new(base, tor_retry_cb, t);
    t->deadline_ev = evtimer_new(base, tor_deadline_cb, t);
    t->keepalive_ev = evtimer_new(base, tor_keepalive_cb, t);
    if (!t->retry_ev || !t->deadline_ev || !t->keepalive_ev) {
        tor_sup_free(t);
        return NULL;
    }
    return t;
}

void tor_sup_set_role(struct tor_sup *t, enum tor_role role)
{
    t->role = role;
    snprintf(t->label, sizeof(t->label), "%s", role == TOR_ROLE_PROBE_CLIENT ? "tor (probe)"
                                               : role == TOR_ROLE_OB_CLIENT  ? "tor (ob)"
                                               : role == TOR_ROLE_ANONYMOUS  ? "anonymous tor"
                                                                             : "tor");
}

int tor_sup_start(struct tor_sup *t, char *err, size_t errlen)
{
    const struct config *c = t->conf;
    const char *name = tor_client_name(t);
    bool client = name != NULL;
    struct instance_paths ip;
    if (tor_paths(t, &ip, err, errlen) < 0)
        return -1;
    snprintf(t->control_socket, sizeof(t->control_socket), "%s", ip.control_socket);
    if (tor_is_spawn(t)) {
        snprintf(t->data_dir, sizeof(t->data_dir), "%s", ip.data_dir);
        snprintf(t->torrc_dir, sizeof(t->torrc_dir), "%s", ip.torrc_dir);
        if (snprintf(t->torrc_path, sizeof(t->torrc_path), "%.*s/%s%storrc", (int)sizeof(t->torrc_path) - 13,
                     ip.torrc_dir, client ? name : "", client ? "-" : "") >= (int)sizeof(t->torrc_path) - 1) {
            snprintf(err, errlen, "state_dir is too long");
            return -1;
        }
        snprintf(t->control_dir, sizeof(t->control_dir), "%s", ip.control_dir);
        /* tor itself insists on a private DataDirectory; the control socket's directory must be 0700
         * so only onionfront's user (and tor's, which then owns it: handover.h) can reach the control port. */
        if (fs_ensure_private_dir(c->state_dir, NULL, err, errlen) < 0 ||
            (t->role == TOR_ROLE_SERVICE && instance_make_dirs(c, t->instance, err, errlen) < 0) ||
            (t->role == TOR_ROLE_ANONYMOUS && fs_ensure_private_dir(ip.dir, NULL, err, errlen) < 0) ||
            fs_ensure_private_dir(t->data_dir, NULL, err, errlen) < 0 ||
            fs_ensure_private_dir(c->run_dir, NULL, err, errlen) < 0 ||
            fs_ensure_private_dir(t->control_dir, NULL, err, errlen) < 0 ||
            (client && handover_apply_client(c, t->control_dir, t->data_dir, err, errlen) < 0))
            return -1;
        /* Only here, at start-up, may this block: later launches follow a tor we reaped ourselves. */
        if (tor_replace_leftover(t, err, errlen) < 0)
            return -1;
    }
    t->stopping = false;
    return tor_launch(t, err, errlen);
}

void tor_sup_stop(struct tor_sup *t)
{
    t->stopping = true;
    event_del(t->retry_ev);
    event_del(t->deadline_ev);
    event_del(t->keepalive_ev);
    if (tor_is_spawn(t)) {
        if (t->child && proc_is_running(t->child)) {
            proc_terminate(t->child, &(struct timeval){TOR_STOP_GRACE_S, 0});
            return; /* tor_exit_cb finishes */
        }
        tor_drop_conn(t, "stopping");
    } else if (t->conn) {
        cp_conn_close(t->conn); /* tor_conn_state_cb finishes */
        return;
    }
    tor_set_state(t, TOR_STOPPED);
    if (t->cbs.stopped)
        t->cbs.stopped(t, t->arg);
}

void tor_sup_set_instance(struct tor_sup *t, unsigned instance)
{
    t->instance = instance;
    if (instance > 0)
        snprintf(t->label, sizeof(t->label), "tor %u", instance + 1);
}

void tor_sup_set_config(struct tor_sup *t, const struct config *conf)
{
    t->conf = conf;
}

enum tor_state tor_sup_state(const struct tor_sup *t)
{
    return t->state;
}

int tor_sup_bootstrap_progress(const struct tor_sup *t)
{
    return t->progress;
}

const char *tor_sup_version(const struct tor_sup *t)
{
    return t->version;
}

double tor_sup_uptime(const struct tor_sup *t)
{
    return t->state == TOR_RUNNING || t->state == TOR_BOOTSTRAPPING ? tor_since_s(&t->started_at) : -1;
}

unsigned tor_sup_restarts(const struct tor_sup *t)
{
    return t->restarts;
}

long tor_sup_uid(const struct tor_sup *t)
{
    return t->uid;
}

const char *tor_sup_control_socket(const struct tor_sup *t)
{
    return t->control_socket;
}

const char *tor_sup_socks_socket(const struct tor_sup *t)
{
    return t->socks_socket;
}

unsigned tor_sup_metrics_port(const struct tor_sup *t)
{
    return tor_is_spawn(t) && t->role == TOR_ROLE_SERVICE ? t->metrics_port : 0;
}

void tor_sup_allow_metrics_port(struct tor_sup *t, bool allowed)
{
    t->metrics_allowed = allowed;
    if (!allowed)
        tor_close_metrics_port(t);
}

void tor_sup_restart(struct tor_sup *t, const char *why)
{
    tor_restart_later(t, why);
}

void tor_sup_restart_planned(struct tor_sup *t, const char *why)
{
    tor_restart_later_at(t, LOG_LVL_NOTICE, why);
}

long tor_sup_pid(const struct tor_sup *t)
{
    return t->child ? (long)proc_pid(t->child) : -1;
}

struct cp_conn *tor_sup_conn(const struct tor_sup *t)
{
    if (t->state == TOR_CONFIGURING || t->state == TOR_BOOTSTRAPPING || t->state == TOR_RUNNING)
        return t->conn;
    return NULL;
}

void tor_sup_free(struct tor_sup *t)
{
    if (!t)
        return;
    t->handed_over = false; /* no callbacks from inside free */
    if (t->conn)
        cp_conn_free(t->conn);
    if (t->child)
        proc_free(t->child);
    if (t->retry_ev)
        event_free(t->retry_ev);
    if (t->deadline_ev)
        event_free(t->deadline_ev);
    if (t->keepalive_ev)
        event_free(t->keepalive_ev);
    free(t);
}
