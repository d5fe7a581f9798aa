/* main.c — onionfront's command line and daemon wiring: owns the one event base, the signal events and
 * the order of start-up, reload and shutdown. Everything else lives in its own module: the tors and
 * their per-tor state in worker.c, the data path in proxy.c (with health_set.c), the status socket's
 * documents in report.c, the subcommands in cli.c. */
#include <event2/event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/cli/cli.h"
#include "sidecar/config/config.h"
#include "sidecar/datapath/health_set.h"
#include "sidecar/core/log.h"
#include "sidecar/ops/metrics_http.h"
#include "sidecar/ops/onionloc.h"
#include "sidecar/balance/ob_frontend.h"
#include "sidecar/probe/probe.h"
#include "sidecar/core/proc.h"
#include "sidecar/datapath/proxy.h"
#include "sidecar/cli/preflight.h"
#include "sidecar/reload.h"
#include "sidecar/ops/report.h"
#include "sidecar/ops/sdnotify.h"
#include "sidecar/core/onion_address.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/tor/single_onion.h"
#include "sidecar/ops/status.h"
#include "sidecar/fleet/worker.h"
#include "sidecar/fleet/workerset.h"

#define SHUTDOWN_BOUND_S 20
static const int daemon_signals[] = {SIGTERM, SIGINT, SIGHUP};

struct daemon {
    const char *config_path;
    struct event_base *base;
    struct config *conf;
    struct proc_mgr *procs;
    struct service_ids *ids;                    /* each service's name, key and address, for all tors */
    struct workerset *workers; /* the tors: tor.instances single-onion ones, and the anonymous services' */
    struct probe *probe;       /* the end-to-end probe and its client tor */
    struct ob_frontend *ob;    /* Onionbalance's frontend and its tor (nothing runs without a frontend) */
    struct proxy *proxy;               /* the data path and its backend pools */
    struct health_set *health;         /* one active health checker per live pool */
    struct status_server *status;
    struct metrics_http *metrics_http; /* NULL unless metrics.listen is set */
    struct timespec started;           /* CLOCK_MONOTONIC, for uptime */
    time_t started_wall;
    struct event *signal_evs[3];       /* daemon_signals: SIGTERM, SIGINT -> shutdown; SIGHUP -> reload */
    struct event *shutdown_bound_ev;
    struct sdnotify *notify;     /* systemd's notification socket; calls are no-ops outside systemd */
    struct onionloc *onionloc;   /* Onion-Location include files; no-ops unless configured */
    struct event *poll_ev;       /* every second: reachability -> Onion-Location files, STATUS= */
    struct timespec last_poll;   /* CLOCK_MONOTONIC of the last poll (the watchdog's health check) */
    bool ready_sent;             /* READY=1 sent to systemd */
    size_t last_reachable;       /* services verified reachable at the last poll */
    bool shutting_down;
    int exit_code;
};

static void daemon_exit_loop_cb(void *arg)
{
    struct daemon *d = arg;
    event_base_loopexit(d->base, NULL);
}

/* Borrowed handles for report.c: the status socket's documents, metrics and the systemd status line. */
static struct report_src daemon_report_src(const struct daemon *d)
{
    return (struct report_src){.conf = d->conf,
                               .ids = d->ids,
                               .workerset = d->workers,
                               .proxy = d->proxy,
                               .status = d->status,
                               .metrics_http = d->metrics_http,
                               .probe = d->probe,
                               .started_wall = d->started_wall,
                               .started = d->started,
                               .shutting_down = d->shutting_down,
                               .ob = d->ob};
}

/* ---- systemd notification and Onion-Location files ------------------------------------------------- */

/* Tell systemd the current state in one line, when it changed (or always with a `prefix`). */
static void daemon_update_status(struct daemon *d, const char *prefix)
{
    char text[256];
    struct report_src r = daemon_report_src(d);
    report_status_line(&r, d->last_reachable, text, sizeof(text));
    sdnotify_update(d->notify, prefix, "%s", text);
}

/* An Onionbalance instance is live here when a tor of ours hosts it and confirmed an upload of it
 * (ob_frontend_set_instance_live). */
static bool daemon_ob_instance_live_cb(const char *address, void *arg)
{
    struct daemon *d = arg;
    for (size_t i = 0; i < service_ids_count(d->ids); i++)
        if (onion_address_equal(service_ids_at(d->ids, i)->address, address))
            return workerset_service_uploaded(d->workers, i);
    return false;
}

/* Bring the Onion-Location files in line with each service's reachability through any worker (onionloc
 * writes and runs on_change only on a change, and logs its own errors once). */
static void daemon_sync_reachability(struct daemon *d)
{
    struct report_src r = daemon_report_src(d);
    size_t cap = service_ids_count(d->ids);
    struct onionloc_entry *entries = calloc(cap ? cap : 1, sizeof(*entries));
    char err[512];
    if (!entries) {
        log_error("onionfront: out of memory; the Onion-Location files stay as they are");
        return;
    }
    size_t n = report_reachability(&r, entries, cap, &d->last_reachable);
    onionloc_sync(d->onionloc, entries, n, err, sizeof(err));
    free(entries);
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

/* ---- shutdown ------------------------------------------------------------------------------------ */

static void daemon_shutdown(struct daemon *d, int code)
{
    if (d->shutting_down)
        return;
    d->shutting_down = true;
    d->exit_code = code;
    event_add(d->shutdown_bound_ev, &(struct timeval){SHUTDOWN_BOUND_S, 0});
    daemon_sync_reachability(d); /* no onion is advertised from here on */
    daemon_update_status(d, "STOPPING=1\n");
    workerset_stop(d->workers); /* each removes the services from its tor, then stops it */
}

static void daemon_shutdown_bound_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    log_warnx("onionfront: shutdown took longer than %d s; stopping now", SHUTDOWN_BOUND_S);
    daemon_exit_loop_cb(arg); /* worker_free kills a tor that is still there */
}

/* ---- reload -------------------------------------------------------------------------------------- */

/* A reload as systemd sees it (RELOADING=1, then READY=1 again): SIGHUP and the status socket's
 * "reload". Nothing while shutting down. Returns reload_apply's result and message. */
static int daemon_reload_cb(void *arg, char *msg, size_t msglen)
{
    struct daemon *d = arg;
    if (d->shutting_down) {
        snprintf(msg, msglen, "onionfront is shutting down");
        return -1;
    }
    if (d->ready_sent)
        sdnotify_update(d->notify, "RELOADING=1\n", "reloading %s", d->config_path);
    struct reload_parts parts = {.ids = d->ids,
                                 .workerset = d->workers,
                                 .proxy = d->proxy,
                                 .onionloc = d->onionloc,
                                 .status = d->status,
                                 .probe = d->probe,
                                 .ob = d->ob};
    int rc = reload_apply(&parts, d->config_path, &d->conf, msg, msglen);
    if (d->ready_sent)
        daemon_update_status(d, "READY=1\n");
    return rc;
}

/* The status socket's "restart-tor": a rolling restart of the tors (workerset.h). */
static int daemon_restart_tor_cb(void *arg, char *msg, size_t msglen)
{
    struct daemon *d = arg;
    return workerset_restart_tor(d->workers, d->conf, "requested by restart-tor", msg, msglen);
}

static void daemon_signal_cb(evutil_socket_t sig, short what, void *arg)
{
    struct daemon *d = arg;
    (void)what;
    if (sig == SIGHUP) {
        char msg[1200];
        daemon_reload_cb(d, msg, sizeof(msg)); /* logs the outcome itself */
        return;
    }
    log_info("onionfront: %s received, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    daemon_shutdown(d, 0);
}

/* ---- the workers' reports ------------------------------------------------------------------------ */

/* Ready or lost: the onion's reachability through this tor changed (at once: not at the next poll). */
static void daemon_worker_ready(struct worker *w, void *arg)
{
    (void)w;
    daemon_sync_reachability(arg);
    daemon_update_status(arg, NULL);
}

/* A tor is bootstrapped with the services handed to it (ready() came first): onionfront is up. */
static void daemon_worker_bootstrapped(struct worker *w, void *arg)
{
    struct daemon *d = arg;
    (void)w;
    if (d->shutting_down)
        return;
    bool first = !d->ready_sent;
    d->ready_sent = true;
    daemon_update_status(d, first ? "READY=1\n" : NULL);
}

static void daemon_worker_lost(struct worker *w, const char *why, void *arg)
{
    (void)why;
    daemon_worker_ready(w, arg);
}

static void daemon_worker_failed(struct worker *w, const char *why, void *arg)
{
    struct daemon *d = arg;
    (void)w;
    log_error("onionfront: %s", why);
    d->exit_code = 1;
    d->shutting_down = true;
    daemon_sync_reachability(d);
    sdnotify_update(d->notify, "STOPPING=1\n", "failed: %s", why);
    onionloc_flush(d->onionloc, daemon_exit_loop_cb, d); /* let on_change finish for the emptied files */
}

static void daemon_worker_stopped(struct worker *w, void *arg)
{
    struct daemon *d = arg;
    (void)w;
    log_info("onionfront: stopped");
    onionloc_flush(d->onionloc, daemon_exit_loop_cb, d); /* let on_change finish for the emptied files */
}

/* ---- the status socket's providers: report.c over borrowed handles -------------------------------- */

#define DAEMON_REPORT(type, name)                                                                            \
    static type daemon_##name##_cb(void *arg)                                                                \
    {                                                                                                        \
        struct report_src r = daemon_report_src(arg);                                                        \
        return report_##name(&r);                                                                            \
    }
DAEMON_REPORT(json_t *, status_json)
DAEMON_REPORT(json_t *, services_json)
DAEMON_REPORT(json_t *, services_detail_json)
DAEMON_REPORT(json_t *, backends_json)
DAEMON_REPORT(json_t *, circuits_json)
DAEMON_REPORT(char *, metrics_text)

/* ---- start and stop ------------------------------------------------------------------------------ */

static void daemon_free(struct daemon *d)
{
    /* Reverse order of creation; the workers (their tors and connections) go before the data path. */
    onionloc_free(d->onionloc); /* before the proc manager: it may hold an on_change child */
    if (d->poll_ev)
        event_free(d->poll_ev);
    sdnotify_free(d->notify);
    metrics_http_free(d->metrics_http);
    status_server_free(d->status);
    if (d->workers)
        workerset_set_probe(d->workers, NULL);
    probe_free(d->probe); /* before the workers its repairs act on */
    ob_frontend_free(d->ob);
    workerset_free(d->workers);
    service_ids_free(d->ids);
    proxy_free(d->proxy); /* calls health_set_pool_removed for each pool: the checkers go first */
    health_set_free(d->health);
    proc_mgr_free(d->procs);
    for (size_t i = 0; i < sizeof(d->signal_evs) / sizeof(d->signal_evs[0]); i++)
        if (d->signal_evs[i])
            event_free(d->signal_evs[i]);
    if (d->shutdown_bound_ev)
        event_free(d->shutdown_bound_ev);
    config_free(d->conf);
    if (d->base)
        event_base_free(d->base);
}

/* Create the objects that start nothing yet. Return 0, or -1 (out of memory, logged). */
static int daemon_create(struct daemon *d)
{
    static const struct worker_callbacks wcbs = {
        .ready = daemon_worker_ready,
        .bootstrapped = daemon_worker_bootstrapped,
        .lost = daemon_worker_lost,
        .failed = daemon_worker_failed,
        .stopped = daemon_worker_stopped,
    };
    struct status_providers providers = {
        .arg = d,
        .status = daemon_status_json_cb,
        .services = daemon_services_json_cb,
        .backends = daemon_backends_json_cb,
        .circuits = daemon_circuits_json_cb,
        .metrics = daemon_metrics_text_cb,
        .reload = daemon_reload_cb,
        .log_level = log_override,
        .restart_tor = daemon_restart_tor_cb,
        .services_detail = daemon_services_detail_json_cb,
    };
    char nerr[256];
    d->base = event_base_new();
    if (!d->base)
        goto oom;
    /* First, so that no child (tor) inherits $NOTIFY_SOCKET. */
    if (!(d->notify = sdnotify_new(d->base, nerr, sizeof(nerr))))
        log_warnx("onionfront: not notifying systemd: %s", nerr);
    if (!(d->procs = proc_mgr_new(d->base)))
        goto oom;
    if (!(d->ids = service_ids_new(d->conf)))
        goto oom;
    if (!(d->workers = workerset_new(d->base, d->procs, d->conf, d->ids, &wcbs, d)))
        goto oom;
    struct probe_actions actions = workerset_probe_actions(d->workers);
    d->probe = probe_new(d->base, d->procs, d->conf, d->ids, &actions);
    workerset_set_probe(d->workers, d->probe);
    d->ob = ob_frontend_new(d->base, d->procs, d->conf, d->ids);
    if (d->ob)
        ob_frontend_set_instance_live(d->ob, daemon_ob_instance_live_cb, d);
    clock_gettime(CLOCK_MONOTONIC, &d->started);
    d->started_wall = time(NULL);
    d->status = status_server_new(d->base, &providers);
    d->health = health_set_new(d->base);
    d->shutdown_bound_ev = evtimer_new(d->base, daemon_shutdown_bound_cb, d);
    d->onionloc = onionloc_new(d->base, d->procs, &d->conf->onion_location);
    d->poll_ev = event_new(d->base, -1, EV_PERSIST, daemon_poll_cb, d);
    if (!d->probe || !d->ob || !d->status || !d->health || !d->shutdown_bound_ev || !d->onionloc || !d->poll_ev)
        goto oom;
    for (size_t i = 0; i < sizeof(daemon_signals) / sizeof(daemon_signals[0]); i++)
        if (!(d->signal_evs[i] = evsignal_new(d->base, daemon_signals[i], daemon_signal_cb, d)) ||
            event_add(d->signal_evs[i], NULL) < 0) {
            log_error("onionfront: cannot set up signal handling");
            return -1;
        }
    return 0;
oom:
    log_error("onionfront: out of memory at start-up");
    return -1;
}

/* Start in order: directories and keys, the hand-over, the status socket (which stops a second
 * onionfront on the same config), the data path's sockets, then the tors. Return 0, or -1 with err. */
static int daemon_start(struct daemon *d, char *err, size_t errlen)
{
    if (service_ids_start(d->ids, err, errlen) < 0 || workerset_prepare(d->workers, d->conf, err, errlen) < 0)
        return -1;
    if (status_server_listen(d->status, &d->conf->status, d->conf->run_dir, err, errlen) < 0 ||
        onionloc_listen(d->onionloc, &d->conf->onion_location, err, errlen) < 0 ||
        (d->conf->metrics.enabled &&
         !(d->metrics_http = metrics_http_new(d->base, &d->conf->metrics, daemon_metrics_text_cb, d, err, errlen))))
        return -1;
    /* The sockets that tor's HiddenServicePort lines point at must exist when tor gets them. */
    struct proxy_hooks hooks = {health_set_pool_added, health_set_pool_updated, health_set_pool_removed, d->health};
    if (!(d->proxy = proxy_new(d->base, d->conf, &hooks, err, errlen)))
        return -1;
    workerset_set_proxy(d->workers, d->proxy);
    if (workerset_start(d->workers, err, errlen) < 0)
        return -1;
    return probe_start(d->probe, err, errlen) < 0 ? -1 : ob_frontend_start(d->ob, err, errlen);
}

/* What the start needs beyond the file (preflight.h), before anything is made: each problem logged.
 * Return 0, or -1 if the start cannot succeed. */
static int daemon_preflight(const struct config *conf)
{
    struct preflight *pf = calloc(1, sizeof(*pf));
    if (!pf) {
        log_error("onionfront: out of memory at start-up");
        return -1;
    }
    size_t n = preflight_run(conf, &(struct preflight_opts){.scope = PREFLIGHT_START, .euid = geteuid()}, pf);
    for (size_t i = 0; i < n && i < PREFLIGHT_MAX_PROBLEMS; i++)
        log_error("onionfront: %s", pf->problems[i]);
    if (n > 0)
        log_error("onionfront: not starting: %zu problem%s above (nothing was created; onionfront check-config "
                  "lists them too)", n, n == 1 ? "" : "s");
    free(pf);
    return n > 0 ? -1 : 0;
}

static int cmd_run(const char *config_path)
{
    char err[1024];
    struct daemon d = {.config_path = config_path};
    log_detect_journal();
    log_route_libevent();
    proc_prepare_daemon();
    d.conf = config_load_file(config_path, err, sizeof(err));
    if (!d.conf) {
        log_error("onionfront: %s: %s", config_path, err);
        return 1;
    }
    reload_set_log_level(d.conf);
    single_onion_warn(d.conf); /* names exactly the services that are not location-hidden */
    if (daemon_preflight(d.conf) < 0) {
        config_free(d.conf);
        return 1;
    }
    proc_raise_fd_limit();
    if (daemon_create(&d) < 0) {
        daemon_free(&d);
        return 1;
    }
    if (daemon_start(&d, err, sizeof(err)) < 0) {
        log_error("onionfront: %s", err);
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
    log_flush(true);
    return code;
}

int main(int argc, char **argv)
{
    const char *config_path = CLI_DEFAULT_CONFIG;
    int i, rc = cli_options(argc, argv, &config_path, &i);
    if (rc >= 0)
        return rc;
    const char *cmd = i < argc ? argv[i++] : "run";
    if (strcmp(cmd, "run") == 0 && i == argc)
        return cmd_run(config_path);
    return cli_command(config_path, cmd, argc - i, argv + i);
}
