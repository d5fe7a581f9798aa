/* reload.c — a reloaded config applied to the running parts, in order (see reload.h). */
#include "sidecar/reload.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sidecar/config/config.h"
#include "sidecar/core/fdbudget.h"
#include "sidecar/core/log.h"
#include "sidecar/ops/onionloc.h"
#include "sidecar/balance/ob_frontend.h"
#include "sidecar/probe/probe.h"
#include "sidecar/datapath/proxy.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/ops/status.h"
#include "sidecar/tor/torcaps.h"
#include "sidecar/fleet/workerset.h"

/* Log and return why a reload was refused; the running config stays. */
static int reload_refused(char *msg, size_t msglen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int reload_refused(char *msg, size_t msglen, const char *fmt, ...)
{
    char why[1100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    log_error("reload: %s; keeping the running config", why);
    snprintf(msg, msglen, "%s; keeping the running config", why);
    return -1;
}

/* A reload refused after the key hand-over: hand over again for the running config, so its key directories,
 * tor instances' key copies and their authorized_clients (tor re-reads them on any SETCONF, whoever sends
 * it) are what they were before the refused config was read. */
static void reload_hand_back(const struct reload_parts *p, const struct config *running)
{
    char err[1024];
    if (workerset_hand_over(p->workerset, running, err, sizeof(err)) < 0)
        log_error("reload: cannot restore the running config's key directories: %s", err);
}

void reload_set_log_level(const struct config *c)
{
    log_configure(config_log_level_str(c->log_level), config_log_format_str(c->log_format));
}

int reload_apply(const struct reload_parts *p, const char *path, struct config **conf, char *msg, size_t msglen)
{
    char err[1024];
    const char *what;
    bool tor_changed = false;
    struct config *nc = config_load_file(path, err, sizeof(err));
    if (!nc)
        return reload_refused(msg, msglen, "%s: %s", path, err);
    if ((what = config_restart_needed(*conf, nc))) {
        config_free(nc);
        return reload_refused(msg, msglen, "%s changed, which needs a restart of onionfront", what);
    }
    if (torcaps_check_config(nc, err, sizeof(err)) < 0 ||
        proxy_check_fd_limit(nc, fdbudget_hard_limit(), err, sizeof(err)) < 0) {
        config_free(nc);
        return reload_refused(msg, msglen, "%s", err);
    }
    /* The keys for tor (new services' copies, the clients in each copy's authorized_clients) before any
     * tor hears of them; undone by reload_hand_back if the reload is refused from here on. */
    if (workerset_hand_over(p->workerset, nc, err, sizeof(err)) < 0) {
        reload_hand_back(p, *conf);
        config_free(nc);
        return reload_refused(msg, msglen, "%s", err);
    }
    /* The data path first: sockets for new ports must exist before tor is told about them. Backend
     * changes end here and never reach tor (service_conf_tor_equal ignores them). */
    if (proxy_update(p->proxy, nc, err, sizeof(err)) < 0) {
        reload_hand_back(p, *conf);
        config_free(nc);
        return reload_refused(msg, msglen, "%s", err);
    }
    /* A new service's key is loaded here, once for every worker. A worker fails only out of memory: the
     * identities and the workers before it go back to the running config (still alive). */
    int rc = service_ids_reconfigure(p->ids, nc, err, sizeof(err));
    bool ids_switched = rc == 0;
    /* Onionbalance's limit needs the new identities (the master's address): checked before any worker or
     * Onionbalance hears of them, so a bad reload leaves Onionbalance running. */
    if (rc == 0)
        rc = ob_frontend_check(p->ids, err, sizeof(err));
    if (rc == 0)
        rc = workerset_reconfigure(p->workerset, nc, &tor_changed, err, sizeof(err));
    if (rc < 0) {
        char rerr[512];
        reload_refused(msg, msglen, "%s", err);
        if (ids_switched && service_ids_reconfigure(p->ids, *conf, rerr, sizeof(rerr)) < 0)
            log_error("reload: cannot restore the services of the running config: %s", rerr);
        reload_hand_back(p, *conf);
        workerset_rollback(p->workerset, *conf);
        if (proxy_update(p->proxy, *conf, rerr, sizeof(rerr)) < 0)
            log_error("reload: cannot restore the data path of the running config: %s", rerr);
        config_free(nc);
        return -1;
    }
    /* The services are switched: a first anonymous service starts its tor, the last one gone stops it. */
    int started = workerset_apply_modes(p->workerset, nc, err, sizeof(err));
    if (started < 0)
        log_error("reload: the anonymous services' tor: %s", err);
    tor_changed = tor_changed || started > 0;
    if (p->probe)
        probe_set_config(p->probe, nc);
    if (p->ob)
        ob_frontend_set_config(p->ob, nc);
    if (onionloc_set_config(p->onionloc, &nc->onion_location, err, sizeof(err)) < 0)
        log_error("reload: onion_location: %s", err);
    if (status_server_set_acl(p->status, &nc->status) < 0)
        log_error("reload: out of memory; the status socket keeps its old allowed users and groups");
    reload_set_log_level(nc);
    bool new_binary = nc->tor.binary && (*conf)->tor.binary && strcmp(nc->tor.binary, (*conf)->tor.binary) != 0;
    config_free(*conf);
    *conf = nc;
    char roll[400] = "the tors use it from their next start";
    if (new_binary && workerset_binary_reloaded(p->workerset, nc, roll, sizeof(roll)) < 0)
        log_warnx("reload: tor.binary is now %s, but the tors cannot restart now (%s): run restart-tor later",
                  nc->tor.binary, roll);
    snprintf(msg, msglen, "applied %s (%s%s%s)", path, tor_changed ? "services changed in tor" : "no change for tor",
             new_binary ? "; tor.binary changed: " : "", new_binary ? roll : "");
    log_info("reload: %s", msg);
    return 0;
}
