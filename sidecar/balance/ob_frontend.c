/* ob_frontend.c — supervising Debian's Onionbalance for the frontend service (see ob_frontend.h). */
#include "sidecar/balance/ob_frontend.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_event.h"
#include "sidecar/balance/ob_watch.h"
#include "sidecar/core/clock.h"
#include "sidecar/config/config.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/config/ob_config.h"
#include "sidecar/core/onion_address.h"
#include "sidecar/core/proc.h"
#include "sidecar/core/sockopen.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/tor/tor.h"
#include "sidecar/identity/handover.h"
#include "sidecar/identity/keys.h"

#define OB_STATUS_TIMEOUT_S 5
#define OB_FETCH_DELAY_S 10 /* after a confirmed upload: the other HSDirs' uploads finish meanwhile */

struct ob_frontend {
    struct event_base *base;
    struct proc_mgr *procs;
    const struct config *conf;
    const struct service_ids *ids;
    struct tor_sup *tor;  /* its own client tor (TOR_ROLE_OB_CLIENT) */
    struct cp_conn *conn; /* that tor's connection while it is up */
    bool tor_up;          /* bootstrapped since it was last lost */
    struct proc *child;   /* Onionbalance, while it runs */
    bool child_killed;    /* onionfront killed it (and logged why) */
    bool started;         /* ob_frontend_start ran for a frontend */
    bool tor_started;     /* its tor was started (not while the config is unusable) */
    enum ob_frontend_state state;
    char problem[600];    /* OB_FE_FAILED: why */
    /* The frontend service and what Onionbalance is given: */
    char name[CONFIG_SERVICE_NAME_MAX + 1];
    char master[OB_ADDRESS_LEN + 1];
    char instances[OB_MAX_INSTANCES * 2][OB_ADDRESS_LEN + 1];
    size_t n_instances;
    char yaml_dir[PATH_MAX];
    char status_socket[PATH_MAX];
    struct handover_ob run_as; /* the user it runs as and the master key file it reads */
    bool testnet;
    unsigned deadline_s;
    /* Counters and times (monotonic ms; wall time only for status). */
    unsigned spawns, restarts, stalls, repairs;
    unsigned backoff_s;
    uint64_t child_started_ms, last_confirmed_ms;
    time_t last_confirmed_wall;
    unsigned long uploads_confirmed, uploads_failed;
    /* The master fetched back from an HSDir after uploads (HSFETCH on its tor): served, not just accepted. */
    bool fetch_pending;
    unsigned long fetches_ok, fetches_failed;
    time_t last_fetch_ok_wall;
    struct event *tick_ev, *restart_ev, *fetch_ev;
    /* The status socket: one read in flight at a time. */
    struct bufferevent *status_bev;
    struct ob_status status;
    bool status_known;
    /* A live local instance left out of the master (ob_watch.h); which instances are live is the caller's. */
    struct ob_watch watch;
    bool (*instance_live)(const char *address, void *arg);
    void *instance_live_arg;
};

const char *ob_frontend_state_str(enum ob_frontend_state s)
{
    switch (s) {
    case OB_FE_OFF: return "off";
    case OB_FE_WAITING: return "waiting_for_tor";
    case OB_FE_STARTED: return "started";
    case OB_FE_PUBLISHING: return "publishing";
    case OB_FE_STALLED: return "stalled";
    case OB_FE_BACKOFF: return "backoff";
    case OB_FE_FAILED: return "failed";
    }
    return "?";
}

static void ob_set_state(struct ob_frontend *f, enum ob_frontend_state s)
{
    if (f->state != s)
        log_info("onionbalance: %s -> %s", ob_frontend_state_str(f->state), ob_frontend_state_str(s));
    f->state = s;
}

/* ---- the child ------------------------------------------------------------------------------------ */

/* Onionbalance logs "<date> <time> [LEVEL]: message"; its errors are ours to show, the rest is detail. */
static void ob_line_cb(struct proc *p, const char *line, void *arg)
{
    (void)p;
    (void)arg;
    enum log_level l = strstr(line, "[ERROR]") || strstr(line, "[CRITICAL]") || strstr(line, "Traceback")
                           ? LOG_LVL_WARN
                           : strstr(line, "[WARNING]") ? LOG_LVL_INFO
                                                       : LOG_LVL_DEBUG;
    log_relay(l, "onionbalance", line);
}

static void ob_schedule_restart(struct ob_frontend *f)
{
    ob_set_state(f, f->state == OB_FE_STALLED ? OB_FE_STALLED : OB_FE_BACKOFF);
    event_add(f->restart_ev, &(struct timeval){(time_t)f->backoff_s, 0});
    unsigned max = f->conf->tor.restart_backoff_max;
    f->backoff_s = f->backoff_s * 2 > max ? max : f->backoff_s * 2;
}

static void ob_exit_cb(struct proc *p, int wstatus, void *arg)
{
    struct ob_frontend *f = arg;
    char how[64];
    if (WIFSIGNALED(wstatus))
        snprintf(how, sizeof(how), "killed by signal %d", WTERMSIG(wstatus));
    else
        snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(wstatus));
    proc_free(p);
    f->child = NULL;
    if (f->state == OB_FE_FAILED || f->state == OB_FE_OFF)
        return;
    if (!f->tor_up) {
        log_info("onionbalance: %s; starting it again when its tor is back", how);
        ob_set_state(f, OB_FE_WAITING);
        return;
    }
    /* A kill of ours was logged with its reason already. */
    log_msg(f->child_killed ? LOG_LVL_INFO : LOG_LVL_WARN, "onionbalance: %s; restarting it in %u s", how,
            f->backoff_s);
    ob_schedule_restart(f);
}

/* Prepare Onionbalance's directory (handover.h: the user it runs as, the master key it reads) and write
 * config.yaml for the current instance list: onionfront's, readable by Onionbalance's group when that is
 * tor's user (0640), else 0600. Return 0, or -1 with a message. */
static int ob_write_yaml(struct ob_frontend *f, const struct service_conf *sc, char *err, size_t errlen)
{
    if (handover_apply_onionbalance(f->conf, sc, f->yaml_dir, &f->run_as, err, errlen) < 0)
        return -1;
    char *yaml = ob_yaml_render(f->run_as.key_path, (const char(*)[OB_ADDRESS_LEN + 1])f->instances, f->n_instances,
                                err, errlen);
    if (!yaml)
        return -1;
    int rc = f->run_as.as_tor_user ? fs_write_atomic_owned(f->yaml_dir, "config.yaml", yaml, strlen(yaml), 0640,
                                                           geteuid(), f->run_as.gid, err, errlen)
                                   : fs_write_atomic(f->yaml_dir, "config.yaml", yaml, strlen(yaml), 0600, err, errlen);
    free(yaml);
    return rc;
}

static void ob_spawn(struct ob_frontend *f)
{
    char err[PATH_MAX + 256], yaml[PATH_MAX + 16], env_status[PATH_MAX + 64];
    if (f->child || !f->tor_up || f->state == OB_FE_FAILED || f->state == OB_FE_OFF)
        return;
    snprintf(yaml, sizeof(yaml), "%s/config.yaml", f->yaml_dir);
    snprintf(env_status, sizeof(env_status), "ONIONBALANCE_STATUS_SOCKET_LOCATION=%s", f->status_socket);
    /* -s: our tor's control socket. Onionbalance falls back to TCP -i:-p when the socket fails: port 1
     * (nothing listens there) keeps it from ever reaching another tor, such as a system tor on 9051.
     * --is-testnet only when the config says the network is a private test network. */
    const char *argv[] = {"/usr/bin/env", env_status, "ONIONBALANCE_LOG_LEVEL=info", OB_FRONTEND_BINARY,
                          "-c", yaml, "-s", tor_sup_control_socket(f->tor), "-i", "127.0.0.1", "-p", "1",
                          f->testnet ? "--is-testnet" : NULL, NULL};
    /* As tor's user when tor runs as one (handover.h); it cannot drop privileges itself. */
    const struct proc_user user = {f->run_as.uid, f->run_as.gid};
    f->child = proc_spawn_as(f->procs, argv, f->run_as.as_tor_user ? &user : NULL, ob_line_cb, ob_exit_cb, f, err,
                             sizeof(err));
    if (!f->child) {
        log_error("onionbalance: cannot start %s: %s", OB_FRONTEND_BINARY, err);
        ob_schedule_restart(f);
        return;
    }
    f->child_started_ms = clock_now_ms();
    if (f->spawns++ > 0)
        f->restarts++;
    f->status_known = false;
    f->child_killed = false;
    ob_watch_reset(&f->watch);
    log_info("onionbalance: started %s for %s.onion with %zu instance%s (pid %ld, uid %lu)", OB_FRONTEND_BINARY,
             f->master, f->n_instances, f->n_instances == 1 ? "" : "s", (long)proc_pid(f->child),
             (unsigned long)(f->run_as.as_tor_user ? f->run_as.uid : geteuid()));
    ob_set_state(f, OB_FE_STARTED);
}

static void ob_restart_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ob_frontend *f = arg;
    (void)fd;
    (void)what;
    if (!f->tor_up) {
        ob_set_state(f, OB_FE_WAITING);
        return;
    }
    ob_spawn(f);
}

/* Kill the child now (it ignores SIGTERM when hung); its exit callback decides what comes next. */
static void ob_kill(struct ob_frontend *f, const char *why)
{
    if (!f->child || !proc_is_running(f->child))
        return;
    log_warnx("onionbalance: killing pid %ld: %s", (long)proc_pid(f->child), why);
    f->child_killed = true;
    proc_kill(f->child);
}

/* ---- the status socket ---------------------------------------------------------------------------- */

/* A live local instance left out of the master for longer than the bound (ob_watch.h): Onionbalance
 * would keep it out until its own descriptor's lifetime ends (an hour), and its SIGHUP only re-runs its
 * start-up inside a signal handler, so restart it (never an instance's tor): a new process fetches every
 * instance and publishes again when one's first descriptor arrives. */
static void ob_watch_instances(struct ob_frontend *f)
{
    const struct ob_watch_params p = ob_watch_params_for(f->testnet);
    char why[400];
    for (size_t i = 0; f->instance_live && f->child && i < f->n_instances; i++) {
        bool live = f->instance_live(f->instances[i], f->instance_live_arg);
        if (!ob_watch_check(&f->watch, &f->status, f->instances[i], live, clock_now_ms(), &p, why, sizeof(why)))
            continue;
        f->repairs++;
        ob_kill(f, why);
        return;
    }
}

static void ob_status_done(struct ob_frontend *f)
{
    bufferevent_free(f->status_bev);
    f->status_bev = NULL;
}

static void ob_status_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct ob_frontend *f = arg;
    if (what & BEV_EVENT_CONNECTED) {
        /* The socket's directory is its user's (tor's user when it runs as one): whatever that user put at
         * the name, only Onionbalance's own answer counts. */
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred) ||
            !f->child || cred.pid != proc_pid(f->child)) {
            log_debug("onionbalance: %s is not Onionbalance's socket (peer pid %ld); not reading it",
                      f->status_socket, len == sizeof(cred) ? (long)cred.pid : -1L);
            ob_status_done(f);
        }
        return;
    }
    if (what & BEV_EVENT_EOF) {
        struct evbuffer *in = bufferevent_get_input(bev);
        size_t len = evbuffer_get_length(in);
        char err[200];
        const char *json = (const char *)evbuffer_pullup(in, -1);
        if (json && len <= OB_STATUS_MAX && ob_status_parse(json, len, f->master, &f->status, err, sizeof(err)) == 0) {
            f->status_known = true;
            ob_watch_instances(f);
        } else
            log_debug("onionbalance: status socket: %s", json ? err : "empty answer");
    }
    ob_status_done(f);
}

static void ob_status_read_cb(struct bufferevent *bev, void *arg)
{
    struct ob_frontend *f = arg;
    if (evbuffer_get_length(bufferevent_get_input(bev)) > OB_STATUS_MAX) {
        log_debug("onionbalance: status socket: answer longer than %d bytes; dropped", OB_STATUS_MAX);
        ob_status_done(f);
    }
}

static void ob_status_poll(struct ob_frontend *f)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (f->status_bev || !f->child || snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->status_socket) >=
                                          (int)sizeof(sa.sun_path))
        return;
    f->status_bev = bufferevent_socket_new(f->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!f->status_bev)
        return;
    bufferevent_setcb(f->status_bev, ob_status_read_cb, NULL, ob_status_event_cb, f);
    bufferevent_set_timeouts(f->status_bev, &(struct timeval){OB_STATUS_TIMEOUT_S, 0},
                             &(struct timeval){OB_STATUS_TIMEOUT_S, 0});
    bufferevent_enable(f->status_bev, EV_READ);
    if (sockopen_bufferevent_connect(f->status_bev, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        ob_status_done(f); /* not there yet: Onionbalance creates it after connecting to tor */
}

/* ---- the tick: stall detection -------------------------------------------------------------------- */

static void ob_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ob_frontend *f = arg;
    (void)fd;
    (void)what;
    if (!f->child || !proc_is_running(f->child))
        return;
    ob_status_poll(f);
    uint64_t since = f->last_confirmed_ms > f->child_started_ms ? f->last_confirmed_ms : f->child_started_ms;
    if (clock_now_ms() - since <= (uint64_t)f->deadline_s * 1000)
        return;
    char why[160];
    snprintf(why, sizeof(why), "no upload of %.56s.onion confirmed for %u s (publish_deadline)", f->master,
             f->deadline_s);
    f->stalls++;
    ob_set_state(f, OB_FE_STALLED);
    ob_kill(f, why);
}

/* ---- its tor -------------------------------------------------------------------------------------- */

static void ob_fetch_reply_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct ob_frontend *f = arg;
    (void)c;
    if (!r || !cp_reply_is_ok(r)) {
        log_debug("onionbalance: HSFETCH of the master not accepted: %s", r ? cp_reply_message(r) : err);
        f->fetch_pending = false;
    }
}

/* A few seconds after a round of confirmed uploads, fetch the master back from an HSDir. */
static void ob_fetch_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ob_frontend *f = arg;
    char err[200];
    (void)fd;
    (void)what;
    if (!f->conn || f->fetch_pending)
        return;
    char *cmd = cp_cmd_hsfetch(f->master, NULL, 0, err, sizeof(err));
    if (cmd && cp_conn_send(f->conn, cmd, ob_fetch_reply_cb, f, err, sizeof(err)) == 0)
        f->fetch_pending = true;
    else
        log_debug("onionbalance: cannot fetch the master: %s", err);
    free(cmd);
}

static void ob_hs_desc_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct ob_frontend *f = arg;
    struct cp_event_hs_desc e = {0};
    char err[200];
    (void)c;
    if (cp_event_hs_desc_parse(ev, &e, err, sizeof(err)) < 0)
        return;
    if (onion_address_equal(e.address, f->master)) {
        if (e.action == CP_HS_DESC_UPLOADED) {
            bool first = f->state != OB_FE_PUBLISHING;
            f->uploads_confirmed++;
            f->last_confirmed_ms = clock_now_ms();
            f->last_confirmed_wall = time(NULL);
            f->backoff_s = 1;
            if (first)
                log_notice("onionbalance: upload of the master %s.onion confirmed by HSDir $%s", f->master,
                           e.hsdir_fp);
            if (f->child)
                ob_set_state(f, OB_FE_PUBLISHING);
            if (!event_pending(f->fetch_ev, EV_TIMEOUT, NULL))
                event_add(f->fetch_ev, &(struct timeval){OB_FETCH_DELAY_S, 0});
        } else if (e.action == CP_HS_DESC_RECEIVED && f->fetch_pending) {
            f->fetch_pending = false;
            f->fetches_ok++;
            f->last_fetch_ok_wall = time(NULL);
        } else if (e.action == CP_HS_DESC_FAILED && f->fetch_pending &&
                   !(e.reason && strcmp(e.reason, "UPLOAD_REJECTED") == 0)) {
            f->fetch_pending = false; /* tor reports one HSDir's failure per fetch */
            f->fetches_failed++;
            log_info("onionbalance: the master %s.onion was not found on HSDir $%s (%s)", f->master, e.hsdir_fp,
                     e.reason ? e.reason : "?");
        } else if (e.action == CP_HS_DESC_FAILED && e.hsdir_fp[0]) {
            f->uploads_failed++;
        }
    }
    cp_event_hs_desc_clear(&e);
}

static void ob_tor_ready_cb(struct tor_sup *t, struct cp_conn *conn, void *arg)
{
    struct ob_frontend *f = arg;
    (void)t;
    f->conn = conn;
    cp_conn_subscribe(conn, "HS_DESC", ob_hs_desc_cb, f);
}

static void ob_tor_bootstrapped_cb(struct tor_sup *t, void *arg)
{
    struct ob_frontend *f = arg;
    (void)t;
    f->tor_up = true;
    if (!f->child && !event_pending(f->restart_ev, EV_TIMEOUT, NULL))
        ob_spawn(f);
}

static void ob_tor_lost_cb(struct tor_sup *t, const char *why, void *arg)
{
    struct ob_frontend *f = arg;
    (void)t;
    f->conn = NULL;
    f->tor_up = false;
    f->fetch_pending = false;
    char msg[300];
    snprintf(msg, sizeof(msg), "its tor was lost (%s); Onionbalance hangs when its tor restarts", why);
    ob_kill(f, msg);
}

static void ob_tor_failed_cb(struct tor_sup *t, const char *why, void *arg)
{
    (void)t;
    (void)arg;
    log_error("onionbalance tor: %s", why);
}

static void ob_tor_nop_cb(struct tor_sup *t, void *arg)
{
    (void)t;
    (void)arg;
}

/* ---- configuration -------------------------------------------------------------------------------- */

/* The frontend service's identity among `ids`, or NULL. */
static const struct service_id *ob_find_frontend(const struct service_ids *ids)
{
    for (size_t i = 0; i < service_ids_count(ids); i++) {
        const struct service_id *id = service_ids_at(ids, i);
        if (id->conf->onionbalance.role == OB_ROLE_FRONTEND)
            return id;
    }
    return NULL;
}

static bool ob_listed(const char (*list)[OB_ADDRESS_LEN + 1], size_t n, const char *addr)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], addr) == 0)
            return true;
    return false;
}

/* The instances Onionbalance is given for the frontend `front`: its remote ones, then the instance
 * services of its master among `ids` (each address once). Return how many there are; the first `cap` of
 * them are put in `out`. */
static size_t ob_collect_instances(const struct service_ids *ids, const struct service_id *front,
                                   char (*out)[OB_ADDRESS_LEN + 1], size_t cap)
{
    const struct ob_conf *ob = &front->conf->onionbalance;
    size_t n = 0;
    for (size_t i = 0; i < ob->n_instances; i++, n++)
        if (n < cap)
            memcpy(out[n], ob->instances[i], OB_ADDRESS_LEN + 1);
    for (size_t i = 0; i < service_ids_count(ids); i++) {
        const struct service_id *s = service_ids_at(ids, i);
        if (s->conf->onionbalance.role != OB_ROLE_INSTANCE || !s->address[0] ||
            !onion_address_equal(s->conf->onionbalance.master_address, front->address) ||
            ob_listed((const char(*)[OB_ADDRESS_LEN + 1])out, n < cap ? n : cap, s->address))
            continue;
        if (n < cap)
            memcpy(out[n], s->address, OB_ADDRESS_LEN + 1);
        n++;
    }
    return n;
}

/* The limit's message for `n` instances of the frontend `name`. */
static void ob_too_many(char *out, size_t len, const char *name, size_t n)
{
    snprintf(out, len,
             "service %s: %zu Onionbalance instances (remote and local); at most %d (2 intro points each; "
             "clients refuse more than 20)", name, n, OB_MAX_INSTANCES);
}

int ob_frontend_check(const struct service_ids *ids, char *err, size_t errlen)
{
    char list[OB_MAX_INSTANCES + 1][OB_ADDRESS_LEN + 1];
    const struct service_id *front = ob_find_frontend(ids);
    size_t n = front && front->address[0] ? ob_collect_instances(ids, front, list, OB_MAX_INSTANCES + 1) : 0;
    if (n <= OB_MAX_INSTANCES)
        return 0;
    ob_too_many(err, errlen, front->conf->name, n);
    return -1;
}

/* Take the frontend's settings and instances (remote ones, then this config's instance services of its
 * master) from the config. Return true if anything Onionbalance is given changed. Sets OB_FE_FAILED (with
 * f->problem) when it cannot run. */
static bool ob_take_config(struct ob_frontend *f, const struct service_id *id)
{
    char yerr[PATH_MAX + 128];
    char old_instances[sizeof(f->instances)], old_master[sizeof(f->master)];
    size_t old_n = f->n_instances;
    bool old_testnet = f->testnet;
    memcpy(old_instances, f->instances, sizeof(old_instances));
    memcpy(old_master, f->master, sizeof(old_master));
    const struct ob_conf *ob = &id->conf->onionbalance;
    snprintf(f->name, sizeof(f->name), "%s", id->conf->name);
    snprintf(f->master, sizeof(f->master), "%s", id->address);
    f->testnet = ob->testnet;
    f->deadline_s = ob->publish_deadline;
    size_t cap = sizeof(f->instances) / sizeof(f->instances[0]), n = ob_collect_instances(f->ids, id, f->instances, cap);
    f->n_instances = n < cap ? n : cap;
    f->problem[0] = '\0';
    if (!id->address[0])
        snprintf(f->problem, sizeof(f->problem), "service %s: its master key is refused (see above)", f->name);
    else if (n == 0)
        snprintf(f->problem, sizeof(f->problem),
                 "service %s: Onionbalance frontend without instances (list them in onionbalance.instances or "
                 "give this config's instance services \"master_address\": \"%s.onion\")",
                 f->name, f->master);
    else if (n > OB_MAX_INSTANCES)
        ob_too_many(f->problem, sizeof(f->problem), f->name, n);
    else if (ob_write_yaml(f, id->conf, yerr, sizeof(yerr)) < 0)
        snprintf(f->problem, sizeof(f->problem), "service %s: cannot write Onionbalance's config: %.400s", f->name,
                 yerr);
    if (f->problem[0]) {
        log_error("onionbalance: %s; not running it", f->problem);
        f->state = OB_FE_FAILED;
        return true;
    }
    if (f->state == OB_FE_FAILED || f->state == OB_FE_OFF)
        f->state = OB_FE_WAITING;
    return strcmp(old_master, f->master) != 0 || old_n != f->n_instances ||
           memcmp(old_instances, f->instances, sizeof(f->instances)) != 0 || old_testnet != f->testnet;
}

/* ---- public --------------------------------------------------------------------------------------- */

struct ob_frontend *ob_frontend_new(struct event_base *base, struct proc_mgr *procs, const struct config *conf,
                                    const struct service_ids *ids)
{
    static const struct tor_callbacks cbs = {
        .ready = ob_tor_ready_cb,
        .lost = ob_tor_lost_cb,
        .bootstrapped = ob_tor_bootstrapped_cb,
        .failed = ob_tor_failed_cb,
        .stopped = ob_tor_nop_cb,
    };
    struct ob_frontend *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->base = base;
    f->procs = procs;
    f->conf = conf;
    f->ids = ids;
    f->backoff_s = 1;
    f->tor = tor_sup_new(base, procs, conf, &cbs, f);
    f->tick_ev = event_new(base, -1, EV_PERSIST, ob_tick_cb, f);
    f->restart_ev = evtimer_new(base, ob_restart_cb, f);
    f->fetch_ev = evtimer_new(base, ob_fetch_cb, f);
    if (!f->tor || !f->tick_ev || !f->restart_ev || !f->fetch_ev) {
        ob_frontend_free(f);
        return NULL;
    }
    tor_sup_set_role(f->tor, TOR_ROLE_OB_CLIENT);
    return f;
}

int ob_frontend_start(struct ob_frontend *f, char *err, size_t errlen)
{
    char terr[900];
    const struct service_id *id = ob_find_frontend(f->ids);
    if (!id || f->started)
        return 0;
    if (snprintf(f->yaml_dir, sizeof(f->yaml_dir), "%s/ob", f->conf->state_dir) >= (int)sizeof(f->yaml_dir) ||
        snprintf(f->status_socket, sizeof(f->status_socket), "%s/ob/status.sock", f->conf->run_dir) >=
            (int)sizeof(f->status_socket)) {
        snprintf(err, errlen, "onionbalance: state_dir or run_dir is too long");
        return -1;
    }
    f->started = true;
    f->state = OB_FE_WAITING;
    event_add(f->tick_ev, &(struct timeval){OB_FRONTEND_TICK_S, 0});
    ob_take_config(f, id);
    if (f->state == OB_FE_FAILED)
        return 0; /* logged and in status; a reload may fix it */
    if (tor_sup_start(f->tor, terr, sizeof(terr)) < 0) {
        snprintf(err, errlen, "cannot start Onionbalance's tor: %s", terr);
        return -1;
    }
    f->tor_started = true;
    return 0;
}

void ob_frontend_set_config(struct ob_frontend *f, const struct config *conf)
{
    f->conf = conf;
    tor_sup_set_config(f->tor, conf);
    const struct service_id *id = ob_find_frontend(f->ids);
    if (!f->started) {
        char err[1024];
        if (id && ob_frontend_start(f, err, sizeof(err)) < 0)
            log_error("onionbalance: %s", err);
        return;
    }
    if (!id) {
        log_notice("onionbalance: no frontend service any more; stopping Onionbalance");
        f->state = OB_FE_OFF;
        event_del(f->restart_ev);
        ob_kill(f, "the frontend was removed from the config");
        return;
    }
    bool changed = ob_take_config(f, id);
    if (f->state == OB_FE_FAILED) {
        event_del(f->restart_ev);
        ob_kill(f, "its new configuration is unusable");
        return;
    }
    if (!f->tor_started) {
        char terr[900];
        if (tor_sup_start(f->tor, terr, sizeof(terr)) < 0)
            log_error("onionbalance: cannot start its tor: %s", terr);
        else
            f->tor_started = true;
        return;
    }
    if (!changed)
        return;
    event_del(f->restart_ev);
    if (f->child)
        ob_kill(f, "its configuration changed");
    else
        ob_spawn(f);
}

void ob_frontend_set_instance_live(struct ob_frontend *f, bool (*live)(const char *address, void *arg), void *arg)
{
    f->instance_live = live;
    f->instance_live_arg = arg;
}

void ob_frontend_free(struct ob_frontend *f)
{
    if (!f)
        return;
    if (f->status_bev)
        bufferevent_free(f->status_bev);
    proc_free(f->child); /* kills and reaps a running child */
    tor_sup_free(f->tor);
    if (f->tick_ev)
        event_free(f->tick_ev);
    if (f->restart_ev)
        event_free(f->restart_ev);
    if (f->fetch_ev)
        event_free(f->fetch_ev);
    free(f);
}

enum ob_frontend_state ob_frontend_state(const struct ob_frontend *f)
{
    return f ? f->state : OB_FE_OFF;
}

void ob_frontend_problems(const struct ob_frontend *f, json_t *problems)
{
    char text[700];
    if (!f || f->state == OB_FE_OFF || f->state == OB_FE_PUBLISHING)
        return;
    if (f->state == OB_FE_FAILED)
        snprintf(text, sizeof(text), "%s", f->problem);
    else if (f->state == OB_FE_STARTED)
        snprintf(text, sizeof(text), "service %s: Onionbalance runs; no upload of the master descriptor confirmed "
                 "yet (deadline %u s)", f->name, f->deadline_s);
    else
        snprintf(text, sizeof(text), "service %s: Onionbalance is %s (%u restarts, %u stalls)", f->name,
                 ob_frontend_state_str(f->state), f->restarts, f->stalls);
    json_array_append_new(problems, json_string(text));
}

/* The instances as Onionbalance's status socket reported them. */
static json_t *ob_instances_json(const struct ob_frontend *f, int *intro_points)
{
    json_t *arr = json_array();
    *intro_points = 0;
    for (size_t i = 0; i < f->n_instances; i++) {
        const struct ob_status_instance *si = NULL;
        for (size_t j = 0; f->status_known && j < f->status.n_instances; j++)
            if (strcmp(f->status.instances[j].address, f->instances[i]) == 0)
                si = &f->status.instances[j];
        char addr[OB_ADDRESS_LEN + 8];
        snprintf(addr, sizeof(addr), "%s.onion", f->instances[i]);
        if (si && si->received && si->intro_points > 0)
            *intro_points += si->intro_points < 2 ? si->intro_points : 2; /* Onionbalance takes 2 each */
        json_array_append_new(arr, json_pack("{s:s, s:o, s:o}", "address", addr, "descriptor_received",
                                             si ? json_boolean(si->received) : json_null(), "intro_points",
                                             si && si->intro_points >= 0 ? json_integer(si->intro_points)
                                                                         : json_null()));
    }
    return arr;
}

json_t *ob_frontend_service_json(const struct ob_frontend *f, const struct config *conf, const char *name,
                                 const char *address)
{
    const struct service_conf *sc = config_find_service(conf, name);
    char master[OB_ADDRESS_LEN + 8], when[32] = "";
    if (!sc || sc->onionbalance.role == OB_ROLE_NONE)
        return NULL;
    if (sc->onionbalance.role == OB_ROLE_INSTANCE) {
        snprintf(master, sizeof(master), "%s.onion", sc->onionbalance.master_address);
        char inst[OB_ADDRESS_LEN + 8];
        snprintf(inst, sizeof(inst), "%s.onion", address);
        return json_pack("{s:s, s:s, s:o}", "role", "instance", "master_address", master, "instance_address",
                         address && address[0] ? json_string(inst) : json_null());
    }
    int intro_points = 0;
    json_t *insts = f ? ob_instances_json(f, &intro_points) : json_array();
    char fetched[32] = "";
    if (f && f->last_confirmed_wall > 0)
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&f->last_confirmed_wall));
    if (f && f->last_fetch_ok_wall > 0)
        strftime(fetched, sizeof(fetched), "%Y-%m-%dT%H:%M:%SZ", gmtime(&f->last_fetch_ok_wall));
    snprintf(master, sizeof(master), "%s.onion", address);
    json_t *o = json_pack("{s:s, s:o, s:s, s:I, s:I, s:I, s:I, s:o, s:I, s:o, s:o, s:o}", "role", "frontend",
                     "master_address", address && address[0] ? json_string(master) : json_null(), "state",
                     ob_frontend_state_str(ob_frontend_state(f)), "restarts", (json_int_t)(f ? f->restarts : 0),
                     "stalls", (json_int_t)(f ? f->stalls : 0), "uploads_confirmed",
                     (json_int_t)(f ? f->uploads_confirmed : 0), "uploads_failed",
                     (json_int_t)(f ? f->uploads_failed : 0), "last_confirmed_upload",
                     when[0] ? json_string(when) : json_null(), "publish_deadline_seconds",
                     (json_int_t)sc->onionbalance.publish_deadline, "pid",
                     f && f->child ? json_integer(proc_pid(f->child)) : json_null(), "instances", insts,
                     "intro_points", f && f->status_known ? json_integer(intro_points) : json_null());
    /* Restarts because a live local instance was left out of the master (ob_watch.h). */
    if (o && json_object_set_new(o, "repairs", json_integer(f ? f->repairs : 0)) < 0) {
        json_decref(o);
        return NULL;
    }
    /* The master fetched back from an HSDir by its tor (served, not only accepted). */
    if (o && json_object_set_new(o, "fetches", json_pack("{s:I, s:I, s:o}", "ok", (json_int_t)(f ? f->fetches_ok : 0),
                                                         "failed", (json_int_t)(f ? f->fetches_failed : 0), "last_ok",
                                                         fetched[0] ? json_string(fetched) : json_null())) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int ob_frontend_metrics(const struct ob_frontend *f, struct metrics *m)
{
    if (!f || f->state == OB_FE_OFF)
        return 0;
    const char *const labels[] = {"service", f->name, NULL};
    double age = f->last_confirmed_ms ? (double)(clock_now_ms() - f->last_confirmed_ms) / 1000.0 : -1;
    if (metrics_family(m, "onionfront_onionbalance_publishing", METRICS_GAUGE,
                       "1 while Onionbalance runs and an upload of the master descriptor was confirmed within "
                       "publish_deadline, else 0.") < 0 ||
        metrics_sample(m, "onionfront_onionbalance_publishing", labels, f->state == OB_FE_PUBLISHING) < 0 ||
        metrics_family(m, "onionfront_onionbalance_restarts_total", METRICS_COUNTER,
                       "Times onionfront started Onionbalance again (after an exit, a stall or a lost tor).") < 0 ||
        metrics_sample(m, "onionfront_onionbalance_restarts_total", labels, f->restarts) < 0 ||
        metrics_family(m, "onionfront_onionbalance_stalls_total", METRICS_COUNTER,
                       "Times Onionbalance was killed for no confirmed master upload within publish_deadline.") < 0 ||
        metrics_sample(m, "onionfront_onionbalance_stalls_total", labels, f->stalls) < 0 ||
        metrics_family(m, "onionfront_onionbalance_repairs_total", METRICS_COUNTER,
                       "Times Onionbalance was restarted because the master it publishes left out a live local "
                       "instance for longer than a few of its fetch rounds.") < 0 ||
        metrics_sample(m, "onionfront_onionbalance_repairs_total", labels, f->repairs) < 0 ||
        metrics_family(m, "onionfront_onionbalance_uploads_total", METRICS_COUNTER,
                       "Master descriptor uploads reported by HSDirs, by result.") < 0 ||
        metrics_sample(m, "onionfront_onionbalance_uploads_total",
                       (const char *const[]){"service", f->name, "result", "confirmed", NULL},
                       (double)f->uploads_confirmed) < 0 ||
        metrics_sample(m, "onionfront_onionbalance_uploads_total",
                       (const char *const[]){"service", f->name, "result", "failed", NULL},
                       (double)f->uploads_failed) < 0 ||
        metrics_family(m, "onionfront_onionbalance_last_upload_age_seconds", METRICS_GAUGE,
                       "Seconds since the last confirmed master upload (-1: none yet).") < 0 ||
        metrics_sample(m, "onionfront_onionbalance_last_upload_age_seconds", labels, age) < 0)
        return -1;
    return 0;
}
