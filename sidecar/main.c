/* main.c — onionfront's command line and daemon wiring: owns the one event base, the signal events and
 * the order of start-up and shutdown. Everything else lives in its own module. */
#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/backend.h"
#include "sidecar/cli.h"
#include "sidecar/config.h"
#include "sidecar/descriptor.h"
#include "sidecar/fsutil.h"
#include "sidecar/handover.h"
#include "sidecar/health.h"
#include "sidecar/keys.h"
#include "sidecar/log.h"
#include "sidecar/metrics.h"
#include "sidecar/metrics_http.h"
#include "sidecar/onionloc.h"
#include "sidecar/proc.h"
#include "sidecar/proxy.h"
#include "sidecar/sdnotify.h"
#include "sidecar/service.h"
#include "sidecar/status.h"
#include "sidecar/tor.h"
#include "sidecar/verify.h"
#include "sidecar/version.h"

#define SHUTDOWN_BOUND_S 20

struct daemon {
    const char *config_path;
    struct event_base *base;
    struct config *conf;
    struct proc_mgr *procs;
    struct service_mgr *services;
    struct tor_sup *tor;
    struct descriptor_tracker *descriptors; /* HS_DESC tracking, fetch probe, republishing */
    struct verify *verify;                  /* single-onion verification (CIRC, mode re-checks) */
    struct proxy *proxy;               /* the data path and its backend pools */
    struct daemon_health {             /* one active health checker per live pool */
        struct backend_pool *pool;
        struct health_checker *hc;
    } *health;
    size_t n_health;
    struct status_server *status;
    struct metrics_http *metrics_http; /* NULL unless metrics.listen is set */
    struct timespec started;           /* CLOCK_MONOTONIC, for uptime */
    time_t started_wall;
    struct event *sigterm_ev, *sigint_ev, *sighup_ev;
    struct event *shutdown_bound_ev;
    struct sdnotify *notify;     /* systemd's notification socket; calls are no-ops outside systemd */
    struct onionloc *onionloc;   /* Onion-Location include files; no-ops unless configured */
    struct event *poll_ev;       /* every second: reachability -> Onion-Location files, STATUS= */
    struct timespec last_poll;   /* CLOCK_MONOTONIC of the last poll (the watchdog's health check) */
    bool ready_sent;             /* READY=1 sent to systemd */
    size_t last_reachable;       /* services verified reachable at the last poll */
    char status_text[256];       /* the last STATUS= sent */
    char tor_problem[200];       /* why tor was lost or failed, until it bootstraps again */
    bool shutting_down;
    int exit_code;
};

static void daemon_warn_non_anonymous(const struct config *c)
{
    log_warnx("SINGLE ONION SERVICE MODE: the %zu onion service%s run by onionfront %s NOT location-hidden. "
              "Their tor makes one-hop circuits, so introduction and rendezvous relays see this server's IP "
              "address. Use onionfront only for sites whose location is public anyway; this tor has no "
              "SocksPort and can never be used as a client.",
              c->n_services, c->n_services == 1 ? "" : "s", c->n_services == 1 ? "is" : "are");
}

static void daemon_exit_loop(struct daemon *d)
{
    event_base_loopexit(d->base, NULL);
}

static void daemon_exit_loop_cb(void *arg)
{
    daemon_exit_loop(arg);
}

/* ---- systemd notification, Onion-Location files, tor's User (deployment) ---------------------------- */

/* Send "STATUS=<text>" after the `prefix` lines ("READY=1\n" ...). systemd's view is informative:
 * onionfront runs on if it cannot be told. */
static void daemon_notify(struct daemon *d, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void daemon_notify(struct daemon *d, const char *prefix, const char *fmt, ...)
{
    char text[512], err[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (sdnotify_status(d->notify, prefix, err, sizeof(err), "%s", text) < 0)
        log_debug("sdnotify: %s", err);
}

/* Tell systemd the current state in one line, when it changed (or always with a `prefix`). */
static void daemon_update_status(struct daemon *d, const char *prefix)
{
    char text[sizeof(d->status_text)];
    enum tor_state ts = tor_sup_state(d->tor);
    int boot = tor_sup_bootstrap_progress(d->tor);
    if (d->shutting_down)
        snprintf(text, sizeof(text), "stopping: removing the services from tor");
    else if (ts == TOR_RUNNING)
        snprintf(text, sizeof(text), "running: %zu of %zu services reachable", d->last_reachable,
                 service_mgr_count(d->services));
    else if (ts == TOR_BOOTSTRAPPING)
        snprintf(text, sizeof(text), "tor bootstrapping (%d%%); services handed to tor", boot < 0 ? 0 : boot);
    else if (d->tor_problem[0])
        snprintf(text, sizeof(text), "tor %s: %s", tor_state_str(ts), d->tor_problem);
    else
        snprintf(text, sizeof(text), "tor %s", tor_state_str(ts));
    if (!prefix && strcmp(text, d->status_text) == 0)
        return;
    snprintf(d->status_text, sizeof(d->status_text), "%s", text);
    daemon_notify(d, prefix, "%s", text);
}

/* Is the i-th service verified reachable now? */
static bool daemon_service_reachable(const struct daemon *d, size_t i)
{
    /* descriptor.c's verdict (the descriptor clients fetch is on an HSDir, and the last fetch probe got
     * it), on a tor that is up now. */
    const char *address = service_mgr_address(d->services, i);
    return !d->shutting_down && tor_sup_state(d->tor) == TOR_RUNNING && address[0] &&
           descriptor_service_reachable(d->descriptors, address);
}

/* Bring the Onion-Location files in line with each service's reachability (onionloc writes and runs
 * on_change only on a change, and logs its own errors once). */
static void daemon_sync_reachability(struct daemon *d)
{
    struct onionloc_entry entries[CONFIG_MAX_SERVICES];
    size_t n = 0, reachable = 0;
    char err[512];
    for (size_t i = 0; i < service_mgr_count(d->services) && n < CONFIG_MAX_SERVICES; i++) {
        const struct service_conf *sc = config_find_service(d->conf, service_mgr_name(d->services, i));
        if (!sc)
            continue;
        entries[n] = (struct onionloc_entry){sc, service_mgr_address(d->services, i), daemon_service_reachable(d, i)};
        reachable += entries[n].reachable;
        n++;
    }
    d->last_reachable = reachable;
    onionloc_sync(d->onionloc, entries, n, err, sizeof(err));
}

static void daemon_poll_cb(evutil_socket_t fd, short what, void *arg)
{
    struct daemon *d = arg;
    (void)fd;
    (void)what;
    clock_gettime(CLOCK_MONOTONIC, &d->last_poll);
    daemon_sync_reachability(d);
    daemon_update_status(d, NULL);
}

/* The watchdog pings only while the loop also runs onionfront's own periodic work. */
static bool daemon_watchdog_healthy(void *arg)
{
    struct daemon *d = arg;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec - d->last_poll.tv_sec < 5;
}

/* ---- backend pools: one health checker each (proxy.c owns the pools and calls these) ------------------ */

static void daemon_pool_added(struct backend_pool *pool, void *arg)
{
    struct daemon *d = arg;
    struct daemon_health *nh = realloc(d->health, (d->n_health + 1) * sizeof(*nh));
    struct health_checker *hc = nh ? health_new(d->base, pool) : NULL;
    if (nh)
        d->health = nh;
    if (!hc) {
        /* The pool still works, only without active checks: passive failures then keep a backend out. */
        log_error("backends %s:%u: out of memory; no active health checks for this pool", backend_pool_service(pool),
                  (unsigned)backend_pool_port(pool)->virtual_port);
        return;
    }
    d->health[d->n_health++] = (struct daemon_health){pool, hc};
}

static void daemon_pool_updated(struct backend_pool *pool, void *arg)
{
    struct daemon *d = arg;
    for (size_t i = 0; i < d->n_health; i++)
        if (d->health[i].pool == pool)
            health_update(d->health[i].hc);
}

static void daemon_pool_removed(struct backend_pool *pool, void *arg)
{
    struct daemon *d = arg;
    for (size_t i = 0; i < d->n_health; i++) {
        if (d->health[i].pool != pool)
            continue;
        health_free(d->health[i].hc); /* before the pool, which proxy.c frees once its streams end */
        d->health[i] = d->health[--d->n_health];
        return;
    }
}

static void daemon_tor_stopped(struct tor_sup *t, void *arg)
{
    struct daemon *d = arg;
    (void)t;
    log_info("onionfront: stopped");
    onionloc_flush(d->onionloc, daemon_exit_loop_cb, d); /* let on_change finish for the emptied files */
}

static void daemon_unpublished(void *arg)
{
    struct daemon *d = arg;
    tor_sup_stop(d->tor);
}

static void daemon_shutdown(struct daemon *d, int code)
{
    if (d->shutting_down)
        return;
    d->shutting_down = true;
    d->exit_code = code;
    event_add(d->shutdown_bound_ev, &(struct timeval){SHUTDOWN_BOUND_S, 0});
    daemon_sync_reachability(d); /* no onion is advertised from here on */
    daemon_update_status(d, "STOPPING=1\n");
    service_mgr_unpublish(d->services, daemon_unpublished, d);
}

static void daemon_shutdown_bound_cb(evutil_socket_t fd, short what, void *arg)
{
    struct daemon *d = arg;
    (void)fd;
    (void)what;
    log_warnx("onionfront: shutdown took longer than %d s; stopping now", SHUTDOWN_BOUND_S);
    daemon_exit_loop(d); /* tor_sup_free kills a tor that is still there */
}

/* Give the descriptor tracker and the verifier the services' names and addresses and the probe
 * settings: at start-up once the keys are loaded, and after each applied reload. */
static void daemon_sync_supervision(struct daemon *d)
{
    const char *names[CONFIG_MAX_SERVICES], *addrs[CONFIG_MAX_SERVICES];
    size_t n = service_mgr_count(d->services);
    if (n > CONFIG_MAX_SERVICES)
        n = CONFIG_MAX_SERVICES;
    for (size_t i = 0; i < n; i++) {
        names[i] = service_mgr_name(d->services, i);
        addrs[i] = service_mgr_address(d->services, i);
    }
    descriptor_tracker_set_probe_conf(d->descriptors, &d->conf->probe);
    if (descriptor_tracker_set_services(d->descriptors, names, addrs, n) < 0 ||
        verify_set_services(d->verify, names, addrs, n) < 0)
        log_error("onionfront: out of memory; descriptor tracking and verification keep the old services");
}

/* SIGHUP and the status socket's "reload": read and validate the config again; keep the running one on
 * any problem, else apply only the difference (service_mgr_reconfigure sends one SETCONF if tor's view
 * changed). Return 0 with what was applied in `msg`, or -1 with why not (both also logged). */
static int daemon_reload(struct daemon *d, char *msg, size_t msglen)
{
    char err[1024];
    struct config *nc = config_load_file(d->config_path, err, sizeof(err));
    if (!nc) {
        log_error("reload: %s: %s; keeping the running config", d->config_path, err);
        snprintf(msg, msglen, "%s: %s; keeping the running config", d->config_path, err);
        return -1;
    }
    const char *what = config_restart_needed(d->conf, nc);
    if (what) {
        log_error("reload: %s changed, which needs a restart of onionfront; keeping the running config", what);
        snprintf(msg, msglen, "%s changed, which needs a restart of onionfront; keeping the running config", what);
        config_free(nc);
        return -1;
    }
    if (handover_give_to_tor_user(nc, tor_sup_uid(d->tor), err, sizeof(err)) < 0) {
        log_error("reload: %s; keeping the running config", err);
        snprintf(msg, msglen, "%s; keeping the running config", err);
        config_free(nc);
        return -1;
    }
    /* The data path first: sockets for new ports must exist before tor is told about them. Backend
     * changes end here and never reach tor (service_conf_tor_equal ignores them). */
    if (proxy_update(d->proxy, nc, err, sizeof(err)) < 0) {
        log_error("reload: %s; keeping the running config", err);
        snprintf(msg, msglen, "%s; keeping the running config", err);
        config_free(nc);
        return -1;
    }
    bool tor_changed = false;
    if (service_mgr_reconfigure(d->services, nc, &tor_changed, err, sizeof(err)) < 0) {
        char rerr[512];
        log_error("reload: %s; keeping the running config", err);
        snprintf(msg, msglen, "%s; keeping the running config", err);
        if (proxy_update(d->proxy, d->conf, rerr, sizeof(rerr)) < 0)
            log_error("reload: cannot restore the data path of the running config: %s", rerr);
        config_free(nc);
        return -1;
    }
    tor_sup_set_config(d->tor, nc);
    if (onionloc_set_config(d->onionloc, &nc->onion_location, err, sizeof(err)) < 0)
        log_error("reload: onion_location: %s", err);
    if (status_server_set_acl(d->status, &nc->status) < 0)
        log_error("reload: out of memory; the status socket keeps its old allowed users and groups");
    enum log_level lvl;
    if (log_level_parse(config_log_level_str(nc->log_level), &lvl) == 0)
        log_set_level(lvl);
    config_free(d->conf);
    d->conf = nc;
    daemon_sync_supervision(d);
    log_info("reload: applied %s (%s)", d->config_path,
             tor_changed ? "services changed in tor" : "no change for tor");
    snprintf(msg, msglen, "applied %s (%s)", d->config_path,
             tor_changed ? "services changed in tor" : "no change for tor");
    return 0;
}

/* A reload as systemd sees it (RELOADING=1, then READY=1 again): SIGHUP and the status socket's
 * "reload". Nothing while shutting down. Returns daemon_reload's result and message. */
static int daemon_reload_notified(struct daemon *d, char *msg, size_t msglen)
{
    if (d->shutting_down) {
        snprintf(msg, msglen, "onionfront is shutting down");
        return -1;
    }
    if (d->ready_sent)
        daemon_notify(d, "RELOADING=1\n", "reloading %s", d->config_path);
    int rc = daemon_reload(d, msg, msglen);
    if (d->ready_sent)
        daemon_update_status(d, "READY=1\n");
    return rc;
}

static void daemon_signal_cb(evutil_socket_t sig, short what, void *arg)
{
    struct daemon *d = arg;
    (void)what;
    if (sig == SIGHUP) {
        char msg[1200];
        daemon_reload_notified(d, msg, sizeof(msg)); /* logs the outcome itself */
        return;
    }
    log_info("onionfront: %s received, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    daemon_shutdown(d, 0);
}

static void daemon_tor_failed(struct tor_sup *t, const char *why, void *arg);

static void daemon_tor_ready(struct tor_sup *t, struct cp_conn *conn, void *arg)
{
    struct daemon *d = arg;
    /* Attach mode, onionfront as root, the attached tor another user: its key and proxy directories
     * must be that user's before the services' SETCONF (known only now, from process/uid). */
    char err[1024];
    if (!d->shutting_down && d->conf->tor.mode != TOR_MODE_SPAWN &&
        handover_give_to_tor_user(d->conf, tor_sup_uid(d->tor), err, sizeof(err)) < 0) {
        daemon_tor_failed(t, err, d);
        return;
    }
    if (d->conf->tor.mode != TOR_MODE_SPAWN && tor_sup_uid(t) > 0 && (uid_t)tor_sup_uid(t) != geteuid())
        log_info("tor: the attached tor runs as uid %ld; its key and proxy directories are handed to that user",
                 tor_sup_uid(t));
    if (!d->shutting_down) {
        service_mgr_attach(d->services, conn);
        descriptor_tracker_attach(d->descriptors, conn);
        verify_attach(d->verify, conn);
    }
    daemon_update_status(d, NULL);
}

/* tor is bootstrapped with the services handed to it (ready() came first): onionfront is up. */
static void daemon_tor_bootstrapped(struct tor_sup *t, void *arg)
{
    struct daemon *d = arg;
    (void)t;
    d->tor_problem[0] = '\0';
    if (d->shutting_down)
        return;
    bool first = !d->ready_sent;
    d->ready_sent = true;
    daemon_update_status(d, first ? "READY=1\n" : NULL);
}

static void daemon_tor_lost(struct tor_sup *t, const char *why, void *arg)
{
    struct daemon *d = arg;
    (void)t;
    service_mgr_detach(d->services);
    descriptor_tracker_detach(d->descriptors);
    verify_detach(d->verify);
    snprintf(d->tor_problem, sizeof(d->tor_problem), "%s", why ? why : "lost");
    daemon_sync_reachability(d); /* at once: the onion is not reachable while tor is away */
    daemon_update_status(d, NULL);
}

static void daemon_tor_failed(struct tor_sup *t, const char *why, void *arg)
{
    struct daemon *d = arg;
    (void)t;
    log_error("onionfront: %s", why);
    d->exit_code = 1;
    d->shutting_down = true;
    snprintf(d->tor_problem, sizeof(d->tor_problem), "%s", why);
    daemon_sync_reachability(d);
    daemon_notify(d, "STOPPING=1\n", "failed: %s", why);
    onionloc_flush(d->onionloc, daemon_exit_loop_cb, d); /* let on_change finish for the emptied files */
}

/* ---- the status socket's providers (status.h): what each command answers ------------------------------ */

static bool daemon_tor_usable(enum tor_state ts)
{
    return ts == TOR_CONFIGURING || ts == TOR_BOOTSTRAPPING || ts == TOR_RUNNING;
}

/* Append one formatted problem to the "problems" array of "status". */
static void daemon_problem(json_t *problems, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void daemon_problem(json_t *problems, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    json_array_append_new(problems, json_string(text));
}

/* "status": the overall state — down (no usable tor, or shutting down), degraded (something listed in
 * "problems": tor not bootstrapped, a tor mode violation, a service without a confirmed upload, with
 * failed HSDirs, not found by the fetch probe or not single onion, a port without a backend up), ok —
 * with tor's state. Returns a new reference. */
static json_t *daemon_status_json(void *arg)
{
    struct daemon *d = arg;
    enum tor_state ts = tor_sup_state(d->tor);
    int boot = tor_sup_bootstrap_progress(d->tor);
    const char *tor_version = tor_sup_version(d->tor);
    long tor_pid = tor_sup_pid(d->tor);
    size_t n = service_mgr_count(d->services), uploaded = 0;
    json_t *problems = json_array();
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);

    if (d->shutting_down)
        daemon_problem(problems, "onionfront is shutting down");
    else if (ts == TOR_BOOTSTRAPPING && boot >= 0)
        daemon_problem(problems, "tor is bootstrapping (%d %%)", boot);
    else if (ts != TOR_RUNNING)
        daemon_problem(problems, "tor is %s", tor_state_str(ts));
    if (verify_mode_state(d->verify) == VERIFY_MODE_VIOLATION)
        daemon_problem(problems, "tor is not in single-onion mode: %s", verify_mode_detail(d->verify));
    for (size_t i = 0; i < n; i++) {
        const char *name = service_mgr_name(d->services, i), *address = service_mgr_address(d->services, i);
        struct descriptor_counts dc;
        if (!service_mgr_uploaded(d->services, i)) {
            daemon_problem(problems, "service %s: no descriptor upload confirmed yet", name);
        } else {
            uploaded++;
            if (descriptor_service_counts(d->descriptors, address, &dc) == 0 && dc.hsdirs_failed > 0)
                daemon_problem(problems, "service %s: descriptor upload failed on %u of %u HSDirs", name,
                               dc.hsdirs_failed, dc.hsdirs_total);
            if (descriptor_service_counts(d->descriptors, address, &dc) == 0 && dc.probe_served == 0)
                daemon_problem(problems, "service %s: the last fetch probe found its descriptor on no HSDir", name);
        }
        if (address[0] && verify_service_verdict(d->verify, address) == VERIFY_NOT_SINGLE_ONION)
            daemon_problem(problems, "service %s: not a single onion service (its circuits are mostly multi-hop)",
                           name);
    }
    size_t n_pools = proxy_pools(d->proxy, NULL, 0);
    struct backend_pool **pools = calloc(n_pools ? n_pools : 1, sizeof(*pools));
    if (pools)
        proxy_pools(d->proxy, pools, n_pools);
    for (size_t i = 0; pools && i < n_pools; i++) {
        if (backend_pool_is_up(pools[i]))
            continue;
        daemon_problem(problems, "service %s port %u: no backend is up", backend_pool_service(pools[i]),
                       (unsigned)backend_pool_port(pools[i])->virtual_port);
    }
    free(pools);
    const char *state = d->shutting_down || !daemon_tor_usable(ts) ? "down"
                        : json_array_size(problems) ? "degraded"
                                                    : "ok";
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:o, s:{s:s, s:s, s:o, s:o, s:o, s:I}, s:{s:I, s:I}}", "state",
                     state, "version", ONIONFRONT_VERSION, "pid", (json_int_t)getpid(), "started",
                     (json_int_t)d->started_wall, "uptime_seconds", (json_int_t)(now.tv_sec - d->started.tv_sec),
                     "problems", problems, "tor", "mode", tor_mode_str(d->conf->tor.mode), "state",
                     tor_state_str(ts), "bootstrap_progress", boot >= 0 ? json_integer(boot) : json_null(),
                     "version", tor_version[0] ? json_string(tor_version) : json_null(), "pid",
                     tor_pid > 0 ? json_integer(tor_pid) : json_null(), "restarts",
                     (json_int_t)tor_sup_restarts(d->tor), "services", "total", (json_int_t)n, "uploaded",
                     (json_int_t)uploaded);
}

/* "services": service_mgr_to_json, each element (same order as service_mgr_count) with the keys
 * `onionfront status` reads (status_client.h): "descriptor" (descriptor_service_to_json: HSDirs, uploads,
 * the fetch probe), "verdict" and "verify" (verify_service_to_json). Returns a new reference. */
static json_t *daemon_services_json(void *arg)
{
    struct daemon *d = arg;
    json_t *arr = service_mgr_to_json(d->services), *svc;
    size_t i;
    json_array_foreach(arr, i, svc) {
        const char *address = service_mgr_address(d->services, i);
        json_t *desc = address[0] ? descriptor_service_to_json(d->descriptors, address) : NULL;
        json_t *ver = address[0] ? verify_service_to_json(d->verify, address) : NULL;
        if (desc)
            json_object_set_new(svc, "descriptor", desc);
        if (ver) {
            json_object_set(svc, "verdict", json_object_get(ver, "verdict"));
            json_object_set_new(svc, "verify", ver);
        }
    }
    return arr;
}

/* "circuits": verify_to_json — the tor's mode, built circuits by purpose and hops, per-service one-hop
 * and multi-hop counts (ours and other services on the same tor). Returns a new reference. */
static json_t *daemon_circuits_json(void *arg)
{
    struct daemon *d = arg;
    return verify_to_json(d->verify);
}

/* "backends": each live pool (backend_pool_to_json) with its port's stream counters from the data path
 * under "streams" (proxy_to_json's fields). Returns a new reference. */
static json_t *daemon_backends_json(void *arg)
{
    struct daemon *d = arg;
    json_t *arr = json_array(), *ports = proxy_to_json(d->proxy);
    size_t n = proxy_pools(d->proxy, NULL, 0);
    struct backend_pool **all = calloc(n ? n : 1, sizeof(*all));
    if (!arr || !ports || !all)
        goto fail;
    proxy_pools(d->proxy, all, n);
    for (size_t i = 0; i < n; i++) {
        json_t *o = backend_pool_to_json(all[i]);
        if (!o || json_array_append_new(arr, o) < 0)
            goto fail;
        size_t k;
        json_t *p;
        json_array_foreach(ports, k, p) {
            if (json_is_true(json_object_get(p, "listening")) &&
                strcmp(json_string_value(json_object_get(p, "service")), backend_pool_service(all[i])) == 0 &&
                json_integer_value(json_object_get(p, "virtual_port")) == backend_pool_port(all[i])->virtual_port)
                json_object_set(o, "streams", p);
        }
    }
    free(all);
    json_decref(ports);
    return arr;
fail:
    free(all);
    json_decref(ports);
    json_decref(arr);
    return NULL;
}

/* "metrics" and GET /metrics: every module's families. Returns malloc'd text, or NULL (logged). */
static char *daemon_metrics_text(void *arg)
{
    struct daemon *d = arg;
    struct metrics *m = metrics_new();
    struct status_stats st;
    enum tor_state ts = tor_sup_state(d->tor);
    int boot = tor_sup_bootstrap_progress(d->tor);
    status_server_stats(d->status, &st);
    int rc = !m ||
             metrics_family(m, "onionfront_build_info", METRICS_GAUGE, "Always 1; the version in a label.") ||
             metrics_sample(m, "onionfront_build_info", (const char *const[]){"version", ONIONFRONT_VERSION, NULL},
                            1) ||
             metrics_family(m, "onionfront_start_time_seconds", METRICS_GAUGE,
                            "Unix time onionfront started, in seconds.") ||
             metrics_sample(m, "onionfront_start_time_seconds", NULL, (double)d->started_wall) ||
             metrics_family(m, "onionfront_tor_up", METRICS_GAUGE,
                            "1 while onionfront's tor is connected, verified and bootstrapped, else 0.") ||
             metrics_sample(m, "onionfront_tor_up", NULL, ts == TOR_RUNNING ? 1 : 0) ||
             metrics_family(m, "onionfront_tor_bootstrap_progress", METRICS_GAUGE,
                            "tor's bootstrap progress in percent (0-100); no sample while unknown.") ||
             (boot >= 0 && metrics_sample(m, "onionfront_tor_bootstrap_progress", NULL, boot)) ||
             metrics_family(m, "onionfront_tor_restarts_total", METRICS_COUNTER,
                            "Times onionfront restarted its tor or reconnected to it.") ||
             metrics_sample(m, "onionfront_tor_restarts_total", NULL, tor_sup_restarts(d->tor)) ||
             service_mgr_metrics(d->services, m) ||
             metrics_family(m, "onionfront_status_connections_total", METRICS_COUNTER,
                            "Connections to the status socket by outcome.") ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "accepted", NULL}, (double)st.accepted) ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "rejected", NULL}, (double)st.rejected) ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "over_limit", NULL}, (double)st.over_limit);
    if (!rc) {
        size_t n = proxy_pools(d->proxy, NULL, 0);
        struct backend_pool **pools = calloc(n ? n : 1, sizeof(*pools));
        if (pools)
            proxy_pools(d->proxy, pools, n);
        rc = !pools || backend_pool_metrics(pools, n, m) < 0;
        free(pools);
    }
    rc = rc || proxy_metrics(d->proxy, m) < 0 || descriptor_metrics(d->descriptors, m) < 0 ||
         verify_metrics(d->verify, m) < 0;
    /* A module with families of its own adds its *_metrics call here. */
    char *text = rc ? NULL : strdup(metrics_text(m, NULL));
    if (!text)
        log_error("metrics: cannot build the metrics text (a family twice, or out of memory)");
    metrics_free(m);
    return text;
}

static int daemon_reload_cb(void *arg, char *msg, size_t msglen)
{
    return daemon_reload_notified(arg, msg, msglen);
}

static void daemon_free(struct daemon *d)
{
    /* Reverse order of creation; the tor supervisor (and its connection) goes before the services that
     * subscribed to that connection. */
    onionloc_free(d->onionloc); /* before the proc manager: it may hold an on_change child */
    if (d->poll_ev)
        event_free(d->poll_ev);
    sdnotify_free(d->notify);
    metrics_http_free(d->metrics_http);
    status_server_free(d->status);
    tor_sup_free(d->tor);
    verify_free(d->verify); /* after the connection: its pending commands complete into these */
    descriptor_tracker_free(d->descriptors);
    proxy_free(d->proxy); /* calls daemon_pool_removed for each pool: the checkers go first */
    free(d->health);
    service_mgr_free(d->services);
    proc_mgr_free(d->procs);
    if (d->sigterm_ev)
        event_free(d->sigterm_ev);
    if (d->sigint_ev)
        event_free(d->sigint_ev);
    if (d->sighup_ev)
        event_free(d->sighup_ev);
    if (d->shutdown_bound_ev)
        event_free(d->shutdown_bound_ev);
    config_free(d->conf);
    if (d->base)
        event_base_free(d->base);
}

static int cmd_run(const char *config_path)
{
    char err[1024];
    struct daemon d = {.config_path = config_path};

    /* Keys pass through this process's memory: keep them out of core dumps and ptrace by other users. */
    if (prctl(PR_SET_DUMPABLE, 0) < 0)
        log_warn("onionfront: prctl(PR_SET_DUMPABLE)");
    signal(SIGPIPE, SIG_IGN);
    /* A blocked mask survives exec: a parent that left SIGTERM or SIGHUP blocked would make the operator's
     * stop and reload wait forever, SIGCHLD blocked would leave tor's exit unreaped. */
    sigset_t ours;
    sigemptyset(&ours);
    sigaddset(&ours, SIGCHLD);
    sigaddset(&ours, SIGTERM);
    sigaddset(&ours, SIGINT);
    sigaddset(&ours, SIGHUP);
    sigprocmask(SIG_UNBLOCK, &ours, NULL);

    d.conf = config_load_file(config_path, err, sizeof(err));
    if (!d.conf) {
        log_error("onionfront: %s: %s", config_path, err);
        return 1;
    }
    enum log_level lvl;
    if (log_level_parse(config_log_level_str(d.conf->log_level), &lvl) == 0)
        log_set_level(lvl);
    daemon_warn_non_anonymous(d.conf);

    d.base = event_base_new();
    /* First, so that no child (tor) inherits $NOTIFY_SOCKET. */
    char nerr[256];
    d.notify = d.base ? sdnotify_new(d.base, nerr, sizeof(nerr)) : NULL;
    if (d.base && !d.notify)
        log_warnx("onionfront: not notifying systemd: %s", nerr);
    d.procs = d.base ? proc_mgr_new(d.base) : NULL;
    d.services = service_mgr_new(d.conf);
    d.descriptors = d.base ? descriptor_tracker_new(d.base, &d.conf->probe) : NULL;
    d.verify = d.base ? verify_new(d.base) : NULL;
    struct tor_callbacks cbs = {
        .ready = daemon_tor_ready,
        .lost = daemon_tor_lost,
        .failed = daemon_tor_failed,
        .stopped = daemon_tor_stopped,
        .bootstrapped = daemon_tor_bootstrapped,
    };
    d.tor = d.procs ? tor_sup_new(d.base, d.procs, d.conf, &cbs, &d) : NULL;
    struct status_providers providers = {
        .arg = &d,
        .status = daemon_status_json,
        .services = daemon_services_json,
        .backends = daemon_backends_json,
        .circuits = daemon_circuits_json,
        .metrics = daemon_metrics_text,
        .reload = daemon_reload_cb,
    };
    clock_gettime(CLOCK_MONOTONIC, &d.started);
    d.started_wall = time(NULL);
    d.status = d.base ? status_server_new(d.base, &providers) : NULL;
    if (!d.base || !d.procs || !d.services || !d.tor || !d.status || !d.descriptors || !d.verify) {
        log_error("onionfront: out of memory at start-up");
        daemon_free(&d);
        return 1;
    }
    d.sigterm_ev = evsignal_new(d.base, SIGTERM, daemon_signal_cb, &d);
    d.sigint_ev = evsignal_new(d.base, SIGINT, daemon_signal_cb, &d);
    d.sighup_ev = evsignal_new(d.base, SIGHUP, daemon_signal_cb, &d);
    d.shutdown_bound_ev = evtimer_new(d.base, daemon_shutdown_bound_cb, &d);
    if (!d.sigterm_ev || !d.sigint_ev || !d.sighup_ev || !d.shutdown_bound_ev || event_add(d.sigterm_ev, NULL) ||
        event_add(d.sigint_ev, NULL) || event_add(d.sighup_ev, NULL)) {
        log_error("onionfront: cannot set up signal handling");
        daemon_free(&d);
        return 1;
    }

    d.onionloc = d.procs ? onionloc_new(d.base, d.procs, &d.conf->onion_location) : NULL;
    d.poll_ev = d.base ? event_new(d.base, -1, EV_PERSIST, daemon_poll_cb, &d) : NULL;
    if (!d.onionloc || !d.poll_ev) {
        log_error("onionfront: out of memory at start-up");
        daemon_free(&d);
        return 1;
    }

    /* The state directory and the default parent of the key directories; tor.c adds the rest. */
    char keys_dir[PATH_MAX];
    snprintf(keys_dir, sizeof(keys_dir), "%s/keys", d.conf->state_dir);
    if (fs_ensure_private_dir(d.conf->state_dir, NULL, err, sizeof(err)) < 0 ||
        fs_ensure_private_dir(keys_dir, NULL, err, sizeof(err)) < 0) {
        log_error("onionfront: %s", err);
        daemon_free(&d);
        return 1;
    }
    if (service_mgr_load_keys(d.services, err, sizeof(err)) < 0) {
        log_error("onionfront: %s", err);
        daemon_free(&d);
        return 1;
    }
    daemon_sync_supervision(&d);
    if (handover_give_to_tor_user(d.conf, tor_sup_uid(d.tor), err, sizeof(err)) < 0) {
        log_error("onionfront: %s", err);
        daemon_free(&d);
        return 1;
    }
    /* Before tor: a second onionfront on the same config stops here (its status socket is in use). */
    if (status_server_listen(d.status, &d.conf->status, d.conf->run_dir, err, sizeof(err)) < 0 ||
        (d.conf->metrics.enabled &&
         !(d.metrics_http = metrics_http_new(d.base, &d.conf->metrics, daemon_metrics_text, &d, err, sizeof(err))))) {
        log_error("onionfront: %s", err);
        daemon_free(&d);
        return 1;
    }
    /* Before tor (and after the status socket, which stops a second onionfront): the sockets that tor's
     * HiddenServicePort lines point at must exist when tor gets them. */
    struct proxy_hooks hooks = {
        .pool_added = daemon_pool_added,
        .pool_updated = daemon_pool_updated,
        .pool_removed = daemon_pool_removed,
        .arg = &d,
    };
    d.proxy = proxy_new(d.base, d.conf, &hooks, err, sizeof(err));
    if (!d.proxy) {
        log_error("onionfront: %s", err);
        daemon_free(&d);
        return 1;
    }
    if (tor_sup_start(d.tor, err, sizeof(err)) < 0) {
        log_error("onionfront: cannot start tor: %s", err);
        daemon_free(&d);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &d.last_poll);
    event_add(d.poll_ev, &(struct timeval){1, 0});
    daemon_update_status(&d, NULL);
    if (sdnotify_watchdog_start(d.notify, daemon_watchdog_healthy, &d, err, sizeof(err)) < 0)
        log_warnx("onionfront: systemd watchdog: %s", err);
    event_base_dispatch(d.base);
    int code = d.exit_code;
    daemon_free(&d);
    return code;
}

int main(int argc, char **argv)
{
    const char *config_path = CLI_DEFAULT_CONFIG;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                cli_usage(stderr);
                return 2;
            }
            config_path = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            cli_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
            printf("onionfront %s\n", ONIONFRONT_VERSION);
            return 0;
        } else {
            break;
        }
    }
    const char *cmd = i < argc ? argv[i++] : "run";
    int rest = argc - i;
    if (strcmp(cmd, "run") == 0 && rest == 0)
        return cmd_run(config_path);
    if (strcmp(cmd, "check-config") == 0 && rest <= 1)
        return cli_check_config(rest == 1 ? argv[i] : config_path);
    if (strcmp(cmd, "import-key") == 0 && rest == 2)
        return cli_import_key(config_path, argv[i], argv[i + 1]);
    if (strcmp(cmd, "status") == 0)
        return cli_status(config_path, rest, argv + i);
    cli_usage(stderr);
    return 2;
}
