/* main.c — onionfront's command line and daemon wiring: owns the one event base, the signal events and
 * the order of start-up and shutdown. Everything else lives in its own module. */
#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sidecar/config.h"
#include "sidecar/fsutil.h"
#include "sidecar/keys.h"
#include "sidecar/log.h"
#include "sidecar/proc.h"
#include "sidecar/service.h"
#include "sidecar/tor.h"

#define DEFAULT_CONFIG "/etc/onionfront/onionfront.json"
#define SHUTDOWN_BOUND_S 20

#ifndef ONIONFRONT_VERSION
#define ONIONFRONT_VERSION "0.1.0"
#endif

struct daemon {
    const char *config_path;
    struct event_base *base;
    struct config *conf;
    struct proc_mgr *procs;
    struct service_mgr *services;
    struct tor_sup *tor;
    struct event *sigterm_ev, *sigint_ev, *sighup_ev;
    struct event *shutdown_bound_ev;
    bool shutting_down;
    int exit_code;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: onionfront [-c CONFIG] [run]         run the daemon (default config %s)\n"
            "       onionfront check-config CONFIG       validate a config file and exit\n"
            "       onionfront [-c CONFIG] import-key SERVICE DIR\n"
            "                                            import a tor HiddenServiceDir as SERVICE's key\n"
            "       onionfront --version | --help\n",
            DEFAULT_CONFIG);
}

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

static void daemon_tor_stopped(struct tor_sup *t, void *arg)
{
    struct daemon *d = arg;
    (void)t;
    log_info("onionfront: stopped");
    daemon_exit_loop(d);
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

static bool str_equal(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The first setting that cannot change without restarting onionfront's tor, or NULL. */
static const char *daemon_restart_needed(const struct config *a, const struct config *b)
{
    if (!str_equal(a->state_dir, b->state_dir))
        return "state_dir";
    if (!str_equal(a->run_dir, b->run_dir))
        return "run_dir";
    if (a->tor.mode != b->tor.mode)
        return "tor.mode";
    if (!str_equal(a->tor.binary, b->tor.binary))
        return "tor.binary";
    if (!str_equal(a->tor.control_socket, b->tor.control_socket))
        return "tor.control_socket";
    if (!str_equal(a->tor.user, b->tor.user))
        return "tor.user";
    if (a->tor.n_extra_torrc != b->tor.n_extra_torrc)
        return "tor.extra_torrc";
    for (size_t i = 0; i < a->tor.n_extra_torrc; i++)
        if (!str_equal(a->tor.extra_torrc[i], b->tor.extra_torrc[i]))
            return "tor.extra_torrc";
    return NULL;
}

/* SIGHUP: read and validate the config again; keep the running one on any problem, else apply only the
 * difference (service_mgr_reconfigure sends one SETCONF if tor's view changed). */
static void daemon_reload(struct daemon *d)
{
    char err[1024];
    struct config *nc = config_load_file(d->config_path, err, sizeof(err));
    if (!nc) {
        log_error("reload: %s: %s; keeping the running config", d->config_path, err);
        return;
    }
    const char *what = daemon_restart_needed(d->conf, nc);
    if (what) {
        log_error("reload: %s changed, which needs a restart of onionfront; keeping the running config", what);
        config_free(nc);
        return;
    }
    bool tor_changed = false;
    if (service_mgr_reconfigure(d->services, nc, &tor_changed, err, sizeof(err)) < 0) {
        log_error("reload: %s; keeping the running config", err);
        config_free(nc);
        return;
    }
    tor_sup_set_config(d->tor, nc);
    enum log_level lvl;
    if (log_level_parse(config_log_level_str(nc->log_level), &lvl) == 0)
        log_set_level(lvl);
    config_free(d->conf);
    d->conf = nc;
    log_info("reload: applied %s (%s)", d->config_path,
             tor_changed ? "services changed in tor" : "no change for tor");
}

static void daemon_signal_cb(evutil_socket_t sig, short what, void *arg)
{
    struct daemon *d = arg;
    (void)what;
    if (sig == SIGHUP) {
        if (!d->shutting_down)
            daemon_reload(d);
        return;
    }
    log_info("onionfront: %s received, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    daemon_shutdown(d, 0);
}

static void daemon_tor_ready(struct tor_sup *t, struct cp_conn *conn, void *arg)
{
    struct daemon *d = arg;
    (void)t;
    if (!d->shutting_down)
        service_mgr_attach(d->services, conn);
}

static void daemon_tor_lost(struct tor_sup *t, const char *why, void *arg)
{
    struct daemon *d = arg;
    (void)t;
    (void)why;
    service_mgr_detach(d->services);
}

static void daemon_tor_failed(struct tor_sup *t, const char *why, void *arg)
{
    struct daemon *d = arg;
    (void)t;
    log_error("onionfront: %s", why);
    d->exit_code = 1;
    d->shutting_down = true;
    daemon_exit_loop(d);
}

static void daemon_free(struct daemon *d)
{
    /* Reverse order of creation; the tor supervisor (and its connection) goes before the services that
     * subscribed to that connection. */
    tor_sup_free(d->tor);
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
    d.procs = d.base ? proc_mgr_new(d.base) : NULL;
    d.services = service_mgr_new(d.conf);
    struct tor_callbacks cbs = {
        .ready = daemon_tor_ready,
        .lost = daemon_tor_lost,
        .failed = daemon_tor_failed,
        .stopped = daemon_tor_stopped,
    };
    d.tor = d.procs ? tor_sup_new(d.base, d.procs, d.conf, &cbs, &d) : NULL;
    if (!d.base || !d.procs || !d.services || !d.tor) {
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
    if (tor_sup_start(d.tor, err, sizeof(err)) < 0) {
        log_error("onionfront: cannot start tor: %s", err);
        daemon_free(&d);
        return 1;
    }
    event_base_dispatch(d.base);
    int code = d.exit_code;
    daemon_free(&d);
    return code;
}

static int cmd_check_config(const char *path)
{
    char err[1024];
    struct config *c = config_load_file(path, err, sizeof(err));
    if (!c) {
        fprintf(stderr, "%s: %s\n", path, err);
        return 1;
    }
    printf("%s: OK (%zu service%s, tor %s)\n", path, c->n_services, c->n_services == 1 ? "" : "s",
           tor_mode_str(c->tor.mode));
    config_free(c);
    return 0;
}

static int cmd_import_key(const char *config_path, const char *service, const char *src)
{
    char err[1024], address[64];
    struct config *c = config_load_file(config_path, err, sizeof(err));
    if (!c) {
        fprintf(stderr, "%s: %s\n", config_path, err);
        return 1;
    }
    const struct service_conf *sc = config_find_service(c, service);
    if (!sc) {
        fprintf(stderr, "import-key: no service named \"%s\" in %s\n", service, config_path);
        config_free(c);
        return 1;
    }
    int rc = keys_import(src, sc->key_dir, address, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "import-key: %s\n", err);
    else
        printf("imported %s into %s: %s.onion\n", src, sc->key_dir, address);
    config_free(c);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *config_path = DEFAULT_CONFIG;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                usage(stderr);
                return 2;
            }
            config_path = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
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
        return cmd_check_config(rest == 1 ? argv[i] : config_path);
    if (strcmp(cmd, "import-key") == 0 && rest == 2)
        return cmd_import_key(config_path, argv[i], argv[i + 1]);
    usage(stderr);
    return 2;
}
