/* reload.h — applying a reloaded config to the running daemon (SIGHUP, the status socket's "reload"):
 * read and validate it, refuse what needs a restart (config_restart_needed), what the tor binary cannot
 * do (torcaps) and listeners and health checks beyond the descriptor limit (proxy_check_fd_limit), then
 * apply only the difference in order — the directory hand-over, the data path (new sockets before tor
 * hears of them), the services' identities (every key checked against the address record; then
 * Onionbalance's instance limit, which needs the master's address), the workers (workerset_reconfigure:
 * one SETCONF per tor if its view changed; reload.c never loops over workers itself), the anonymous
 * services' tor started or stopped (workerset_apply_modes), Onion-Location, the status socket's ACL, the
 * log level and format; a new tor.binary then starts a rolling restart onto it
 * (workerset_binary_reloaded). A refused or failed reload leaves the running config in place; one refused
 * after the hand-over hands over again for the running config, so no key copy or authorized_clients file
 * keeps what the refused config wanted (tor re-reads them on any SETCONF).
 *
 * Owns nothing: the parts are borrowed for one call. Not the decision when to reload (main.c). */
#ifndef ONIONFRONT_RELOAD_H
#define ONIONFRONT_RELOAD_H

#include <stddef.h>

struct config;
struct ob_frontend;
struct onionloc;
struct probe;
struct proxy;
struct service_ids;
struct status_server;
struct workerset;

/* The running parts a reload changes (borrowed). */
struct reload_parts {
    struct service_ids *ids;
    /* The tors (never NULL): their hand-over, their services switched (or rolled back) together; it
     * starts or stops the anonymous services' tor; a changed tor.binary starts a rolling restart onto it. */
    struct workerset *workerset;
    struct proxy *proxy;
    struct onionloc *onionloc;
    struct status_server *status;
    struct probe *probe; /* NULL when no end-to-end probe runs */
    struct ob_frontend *ob; /* Onionbalance's frontend (NULL: none) */
};

/* Reload `path` into the running parts, whose config is *conf. Return 0 with "applied PATH (...)" in
 * `msg` and *conf replaced by the new config (the old one freed), or -1 with why not in `msg` and *conf
 * untouched. Both outcomes are logged. */
int reload_apply(const struct reload_parts *p, const char *path, struct config **conf, char *msg, size_t msglen);

/* Set the process's log level and format from `c` (at start-up and on each applied reload; a timed
 * `log-level` override keeps running, log.h). */
void reload_set_log_level(const struct config *c);

#endif
