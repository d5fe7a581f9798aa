/* tor.h — onionfront's tor: spawn it in single-onion mode (or attach to a running one), keep an
 * authenticated control connection, follow bootstrap, verify the non-anonymous single-hop mode, and
 * restart/reconnect with backoff when tor dies, hangs or drops the connection.
 *
 * Owns the tor process (spawn mode), the torrc it writes, and the control connection. It does not know
 * about services: the ready/lost callbacks let service.c (re)publish them on each new connection.
 *
 * Faults: tor's death is seen through SIGCHLD or the control socket's EOF (whichever comes first); a hung
 * tor through the keepalive GETINFO (every 10 s) timing out after tor.command_timeout, counted from when
 * the commands before it were answered (cp_conn.h: a busy tor answering a long queue or a SETCONF of many
 * services, which gets its own time, is not hung), and only if tor was idle meanwhile: a tor that sent
 * events or whose process used CPU (/proc/<pid>/stat; its pid from process/pid) is busy, not hung, and
 * gets up to CP_CONN_MAX_EXTENSIONS more periods. Either way the
 * connection is dropped (lost()), a spawned tor is killed (SIGKILL+SIGCONT) and reaped before another is
 * started, and the next start or reconnect waits 1, 2, 4 ... tor.restart_backoff_max seconds; a
 * bootstrap to 100 % resets the wait to 1 s. In spawn mode a lost connection always means a new tor:
 * tor exits when its owning controller's connection closes (TAKEOWNERSHIP). */
#ifndef ONIONFRONT_TOR_H
#define ONIONFRONT_TOR_H

#include <stdbool.h>
#include <stddef.h>

#include "sidecar/core/log.h"
#include "sidecar/tor/tor_types.h"

struct event_base;
struct config;
struct proc_mgr;
struct cp_conn;
struct tor_sup;

/* enum tor_state, enum tor_role and struct tor_callbacks are in tor_types.h. */
const char *tor_state_str(enum tor_state s);

/* The CPU time (user + system, clock ticks) in the text of a /proc/<pid>/stat file into *ticks. Return 0,
 * or -1 if it cannot be read. Pure. */
int tor_stat_cpu_ticks(const char *stat, unsigned long long *ticks);

/* Borrow `conf` (it must outlive the supervisor or be replaced with tor_sup_set_config). */
struct tor_sup *tor_sup_new(struct event_base *base, struct proc_mgr *procs, const struct config *conf,
                            const struct tor_callbacks *cbs, void *arg);

/* Make `t` a tor of this role (before tor_sup_start; the default is TOR_ROLE_SERVICE). */
void tor_sup_set_role(struct tor_sup *t, enum tor_role role);

/* Prepare directories and start (spawn or attach). In spawn mode a tor left running on our DataDirectory
 * by an earlier run of onionfront (found through its tor.pid and command line) is ended first: this may
 * block for up to 15 s, and is the only place that blocks; restarts later never do. Return 0 (progress
 * arrives through callbacks), or -1 with a message in err for problems found before anything started
 * (bad directory permissions, a torrc that cannot be written, another process holding the DataDirectory
 * lock). */
int tor_sup_start(struct tor_sup *t, char *err, size_t errlen);

/* Stop: in spawn mode terminate tor (SIGTERM, SIGKILL after a bound); in attach mode close the
 * connection. cbs->stopped is called when done. */
void tor_sup_stop(struct tor_sup *t);

/* Use instance `instance`'s paths (instance.h; 0, the configured ones, by default). Before tor_sup_start. */
void tor_sup_set_instance(struct tor_sup *t, unsigned instance);

/* Replace the borrowed config (on reload). Settings that need a tor restart are not applied. */
void tor_sup_set_config(struct tor_sup *t, const struct config *conf);

enum tor_state tor_sup_state(const struct tor_sup *t);
int tor_sup_bootstrap_progress(const struct tor_sup *t); /* 0-100, -1 unknown */
const char *tor_sup_version(const struct tor_sup *t);    /* "" until known */
unsigned tor_sup_restarts(const struct tor_sup *t);
double tor_sup_uptime(const struct tor_sup *t);          /* seconds since this tor started, -1 unless it is up */
long tor_sup_pid(const struct tor_sup *t);               /* spawn mode: tor's pid, else -1 */
long tor_sup_uid(const struct tor_sup *t); /* the verified tor's uid (its control socket's peer), -1 unknown */
/* The control socket's path (set by tor_sup_start). */
const char *tor_sup_control_socket(const struct tor_sup *t);
/* TOR_ROLE_PROBE_CLIENT: the SocksPort's unix socket path (set by tor_sup_start); "" otherwise. */
const char *tor_sup_socks_socket(const struct tor_sup *t);
/* A spawned service tor: its MetricsPort on 127.0.0.1 (torrc: MetricsPortPolicy accept 127.0.0.1), picked
 * at each launch; 0 otherwise (attach mode: the operator's tor, whose MetricsPort is not ours to set; the
 * anonymous services' tor; a tor not allowed one). */
unsigned tor_sup_metrics_port(const struct tor_sup *t);

/* May this service tor have a MetricsPort (default: no)? tor 0.4.9 serves it on TCP only, so every local
 * user can read it, and it names each service's onion address: allow it only while every service the tor
 * hosts is public. Taken at each start; `allowed` false also closes the running tor's port at once
 * (SETCONF, queued before anything sent after this call). A port is never opened on a running tor. */
void tor_sup_allow_metrics_port(struct tor_sup *t, bool allowed);

/* Give up on the current tor as if it had hung: kill (spawn) or disconnect (attach), then start again
 * with the usual backoff (logged once at warning with `why`). Nothing while stopping or in backoff. */
void tor_sup_restart(struct tor_sup *t, const char *why);

/* The same, on purpose (a rolling restart, roll.h): logged at notice instead of warning. */
void tor_sup_restart_planned(struct tor_sup *t, const char *why);

/* The current control connection when CONFIGURING/BOOTSTRAPPING/RUNNING, else NULL. */
struct cp_conn *tor_sup_conn(const struct tor_sup *t);

/* Free (killing a spawned tor that is still running). NULL is a no-op. */
void tor_sup_free(struct tor_sup *t);

#endif
