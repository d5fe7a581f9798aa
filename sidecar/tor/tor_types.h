/* tor_types.h — the types that describe a tor supervisor: its state, its role and the callbacks its owner
 * gives it. Types only (tor.h includes it and has the functions), so that tor_process.c can read the
 * supervisor's record (tor_int.h) without standing above tor.c. */
#ifndef ONIONFRONT_TOR_TYPES_H
#define ONIONFRONT_TOR_TYPES_H

struct cp_conn;
struct tor_sup;

enum tor_state {
    TOR_STOPPED,      /* not started, or stopped for good */
    TOR_STARTING,     /* spawned (or attaching); waiting for the control socket */
    TOR_CONFIGURING,  /* authenticated; taking ownership, subscribing, verifying the mode */
    TOR_BOOTSTRAPPING,/* verified and services handed over; bootstrap below 100 % */
    TOR_RUNNING,      /* bootstrapped */
    TOR_BACKOFF,      /* lost; waiting before the next start or reconnect */
    TOR_FAILED        /* a condition that restarting cannot fix (attach to a non-single-onion tor) */
};

enum tor_role {
    TOR_ROLE_SERVICE,      /* the single-onion tor (the default): verified single-hop, never a SocksPort */
    TOR_ROLE_PROBE_CLIENT, /* onionfront's own ordinary client tor for the end-to-end probe (probe.h): always
                              spawned (tor.binary, else /usr/bin/tor), DataDirectory <state_dir>/probe-tor,
                              torrc <state_dir>/probe-torrc, control and SocksPort sockets in <run_dir>/probe/,
                              tor.extra_torrc, tor.user like the service tor (its directories handed over:
                              handover_apply_client), no ORPort */
    TOR_ROLE_OB_CLIENT,    /* the client tor Onionbalance's frontend drives (ob_frontend.h): like the probe's,
                              with DataDirectory <state_dir>/ob-tor, torrc <state_dir>/ob-torrc, its control
                              socket in <run_dir>/ob/, and no SocksPort */
    TOR_ROLE_ANONYMOUS,    /* the anonymous services' ordinary tor (workerset.h): always spawned, paths from
                              instance_anonymous_paths, tor.user and tor.extra_torrc like the service tor,
                              verified NOT single-hop and without client ports (anonymous_tor_check) */
};

struct tor_callbacks {
    /* The control connection is authenticated and tor verified as single-hop/non-anonymous: publish.
     * Called again after every restart or reconnect with the new connection. */
    void (*ready)(struct tor_sup *t, struct cp_conn *conn, void *arg);
    /* The connection handed to ready() is gone (tor died, hung, or closed it); do not use it again. */
    void (*lost)(struct tor_sup *t, const char *why, void *arg);
    /* Bootstrap reached 100 %. */
    void (*bootstrapped)(struct tor_sup *t, void *arg);
    /* Unrecoverable: onionfront should exit with an error. */
    void (*failed)(struct tor_sup *t, const char *why, void *arg);
    /* A tor stopped by tor_sup_stop() is gone (its process reaped, or the attached connection closed). */
    void (*stopped)(struct tor_sup *t, void *arg);
};

#endif
