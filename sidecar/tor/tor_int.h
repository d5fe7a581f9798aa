/* tor_int.h — the supervisor's state, private to sidecar/tor/tor.c (the state machine: control
 * connection, bootstrap, verification, restart) and tor_process.c (what a tor is made of outside the
 * connection: its paths, torrc and command line, a leftover from an earlier run). Nothing else includes
 * it: the rest of onionfront sees a tor only through tor.h. tor.c calls into tor_process.c, never the
 * other way; so this header needs only tor_types.h, not tor.h. */
#ifndef ONIONFRONT_TOR_INT_H
#define ONIONFRONT_TOR_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "sidecar/tor/tor_types.h"

struct config;
struct cp_conn;
struct event;
struct event_base;
struct instance_paths;
struct proc;
struct proc_mgr;

struct tor_sup {
    struct event_base *base;
    struct proc_mgr *procs;
    const struct config *conf;
    struct tor_callbacks cbs;
    void *arg;

    enum tor_role role;
    enum tor_state state;
    bool stopping;
    bool handed_over;        /* ready() was called for the current connection */
    struct proc *child;      /* spawn mode */
    struct cp_conn *conn;
    int progress;
    char version[64];
    long uid;                /* the verified tor's uid from its control socket's peer credentials, -1 unknown */
    long tor_pid;            /* process/pid of the verified tor, -1 unknown */
    unsigned long long cpu_ticks; /* its CPU time at the last look (tor_busy_cb) */
    bool cpu_known;               /* cpu_ticks was read from this tor */
    unsigned restarts;
    unsigned backoff_s;
    unsigned reap_waits;     /* retry ticks spent waiting for a killed tor to be reaped */
    struct timespec started_at;
    bool outage;             /* a verified connection was lost and no tor has bootstrapped since */
    struct timespec lost_at; /* when that happened */

    unsigned instance;       /* which of tor.instances (instance.h): its paths */
    char label[16];          /* "tor", "tor 2" for the second instance, "tor (probe)": its log lines' prefix
                              * (never "... tor", so that the service tor's "tor: " lines stay its own) */
    char data_dir[PATH_MAX];
    char torrc_dir[PATH_MAX];
    char control_dir[PATH_MAX];
    char control_socket[PATH_MAX];
    char torrc_path[PATH_MAX];
    char socks_socket[PATH_MAX]; /* TOR_ROLE_PROBE_CLIENT: its SocksPort */
    unsigned metrics_port;       /* spawned service tor: its MetricsPort on 127.0.0.1, picked at each launch;
                                  * 0 for none (not allowed, or closed on the running tor) */
    bool metrics_allowed;        /* tor_sup_allow_metrics_port: every service it hosts is public */

    struct event *retry_ev;     /* connect retry while STARTING, and restart after BACKOFF */
    struct event *deadline_ev;  /* bootstrap deadline */
    struct event *keepalive_ev; /* periodic GETINFO: detects a hung tor, refreshes bootstrap */
};

/* A client tor's file prefix ("probe": <state_dir>/probe-tor, probe-torrc, <run_dir>/probe/), or NULL for
 * a tor that runs services (single-onion or anonymous). */
const char *tor_client_name(const struct tor_sup *t);

/* tor.binary, or Debian's tor for a probe client beside an attached tor. */
const char *tor_binary(const struct tor_sup *t);

/* Fill `argv` (NULL-terminated) with tor's command line as onionfront starts it. */
void tor_argv(const struct tor_sup *t, const char *argv[6]);

/* End a tor from an earlier run still on t's DataDirectory, and refuse (-1 and `err`) if another process
 * holds its lock. Blocks up to 15 s: start-up only, never from the loop. */
int tor_replace_leftover(struct tor_sup *t, char *err, size_t errlen);

/* Write t's torrc (atomically, 0600), picking its MetricsPort if allowed. Return 0, or -1 and `err`. */
int tor_write_torrc(struct tor_sup *t, char *err, size_t errlen);

/* Where t's files go, into *ip (and t->socks_socket for the probe's tor). Return 0, or -1 and `err`. */
int tor_paths(struct tor_sup *t, struct instance_paths *ip, char *err, size_t errlen);

#endif
