/* onionloc.h — Onion-Location include files for a clearnet web server: per service, one file for nginx
 * and one for Apache in onion_location.dir, carrying the Onion-Location header only while the service is
 * verified reachable and emptied (zero bytes) otherwise, so a site never advertises a dead onion:
 *
 *   <dir>/<service>.conf          nginx:  add_header Onion-Location http://<addr>.onion$request_uri always;
 *   <dir>/<service>.apache.conf   Apache (mod_headers): the request line's target, as nginx's $request_uri:
 *       Header always set Onion-Location "expr=%{THE_REQUEST}" "expr=%{THE_REQUEST} =~ m#^[A-Z]+ /[^ ]* HTTP/[0-9.]+$#"
 *       Header always edit Onion-Location "^[A-Z]+ (/[^ ]*) HTTP/[0-9.]+$" "http://<addr>.onion$1"
 *
 * (templates/nginx-onion-location.conf and templates/apache-onion-location.conf show where to include
 * them.) Files are replaced atomically (fs_write_atomic, mode 0644: the address is public) and only when
 * their content changes; after any change the optional onion_location.on_change command runs once
 * (coalesced: changes while it runs cause one more run after it), bounded in time.
 *
 * Onionbalance (ob_config.h): visitors are always sent to the MASTER address, never to an instance's. An
 * instance service's files name its master_address (with the instance's ports); a frontend service's name
 * its own address, the master (with the ports of a local instance of it in the same sync, else none:
 * "http://<master>.onion"). Reachability stays the caller's verdict on the reported service.
 *
 * Owns the files, its copy of the onion_location settings and the on_change child. Does not decide
 * reachability: the caller reports it with onionloc_sync(). Logs file changes and command failures. */
#ifndef ONIONFRONT_ONIONLOC_H
#define ONIONFRONT_ONIONLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sidecar/core/fdbudget.h"

struct event_base;
struct proc_mgr;
struct onion_location_conf;
struct service_conf;
struct onionloc;

#define ONIONLOC_NGINX_SUFFIX ".conf"
#define ONIONLOC_APACHE_SUFFIX ".apache.conf"
/* The bound on one run of on_change: SIGTERM after this, SIGKILL 5 s later. */
#define ONIONLOC_COMMAND_TIMEOUT_S 30
/* onion_location.listen's bounds (metrics_http.h's guard), sized for web servers that ask once per page
 * and close (nginx's proxy_pass without keepalive): connections at once over all peers (their share of
 * the descriptor budget, fdbudget.h), at once from one peer address, and the time a request head may take
 * from accept. The shipped nginx template waits 1 s to connect and 2 s to read: a flood from one host
 * must leave the others' requests inside that. */
#define ONIONLOC_HTTP_MAX_CLIENTS FDBUDGET_ONIONLOC_CLIENTS /* fdbudget.h's share */
#define ONIONLOC_HTTP_PER_SOURCE 8
#define ONIONLOC_HTTP_HEAD_DEADLINE_MS 2000

/* One service's state, as the caller sees it. */
struct onionloc_entry {
    const struct service_conf *svc; /* borrowed for the call: name and ports */
    const char *address;            /* the service's own address: 56 base32 characters without ".onion";
                                       "" or NULL if unknown (an instance advertises its master instead) */
    bool reachable;                 /* verified reachable now */
};

/* Copy `conf` (it may be freed after the call). A disabled conf makes every call a no-op. Return NULL
 * only when out of memory. */
struct onionloc *onionloc_new(struct event_base *base, struct proc_mgr *procs,
                              const struct onion_location_conf *conf);

/* Free. A running on_change command is killed (proc_free). NULL is a no-op. */
void onionloc_free(struct onionloc *ol);

/* Bring the files in line with `n` entries: a reachable service with a known address gets its header
 * lines, every other one empty files; a service reported before but missing now (removed by a reload)
 * gets empty files too and is forgotten. The directory is created (0755) if missing; its parent must
 * exist. The first sync of a service compares with what is on disk, so a restart that finds the same
 * state changes nothing. Return the number of services whose files changed (on_change is scheduled if
 * > 0), or -1 with a message in `err` (the remaining entries are still processed; the message names
 * the first failing file). */
int onionloc_sync(struct onionloc *ol, const struct onionloc_entry *entries, size_t n, char *err,
                  size_t errlen);

/* Serve GET /onion-location/<service> on conf->listen if set (metrics_http_serve's bounds, at most
 * ONIONLOC_HTTP_MAX_CLIENTS connections, and its guard: peers in conf->allow only, ONIONLOC_HTTP_PER_SOURCE
 * connections per peer address, a request head within ONIONLOC_HTTP_HEAD_DEADLINE_MS): 200 with an
 * "Onion-Location: <url>" header (onionloc_url, no path: the web server appends the request's) and the
 * URL as the body while the service's header is on, an empty 204 while it is withdrawn, 404 for an
 * unknown name. It follows onionloc_sync's entries even when a file cannot be written. Return 0, or -1
 * with a message naming the address. */
int onionloc_listen(struct onionloc *ol, const struct onion_location_conf *conf, char *err, size_t errlen);

/* Switch to new settings (reload). If the directory changed or the feature was turned off, the files
 * in the old directory are emptied first (and the old command runs). Return 0, or -1 with a message
 * (the new settings are taken anyway). */
int onionloc_set_config(struct onionloc *ol, const struct onion_location_conf *conf, char *err, size_t errlen);

/* Call done(arg) once no on_change run is pending or running: at once (from this call) if idle. Used
 * at shutdown so the web server's reload after the files were emptied is not cut short. A later call
 * replaces an earlier waiting one. */
void onionloc_flush(struct onionloc *ol, void (*done)(void *arg), void *arg);

/* The URL onion clients are sent to for `svc` at `address` (no ".onion"), without the path: a service
 * with virtual port 80 -> "http://<addr>.onion"; else one with 443 -> "https://<addr>.onion"; else
 * "http://<addr>.onion:<first virtual port>". Return 0, or -1 if `out` is too small. */
int onionloc_url(const struct service_conf *svc, const char *address, char *out, size_t outlen);

/* Runs of on_change started so far (for tests and status). */
unsigned onionloc_command_runs(const struct onionloc *ol);

#endif
