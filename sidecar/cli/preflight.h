/* preflight.h — what a start needs beyond a valid config file, checked before anything is made:
 * `onionfront check-config` reports all of it at once (as `nginx -t` does), and the daemon runs the same
 * checks at start before it creates a directory or a key (main.c), so a start that would fail later does
 * not leave a new key and a new address behind.
 *
 *  - spawn mode: tor.binary exists, is executable and runs (`--version`), and can do what each service
 *    asks of it (PoW: `--list-modules` and the version, torcaps.h); tor.user names a user, and onionfront
 *    runs as root (tor switches to tor.user only when root starts it);
 *  - attach mode: tor.control_socket is a socket and tor answers on it (PROTOCOLINFO and authentication,
 *    cp_conn.h);
 *  - each service's key directory holds a key of its kind or none yet, and agrees with the address
 *    record (service_id_check_key: a v2 or incomplete directory, the anonymity rule, a known service whose
 *    key is missing or another one);
 *  - the directories onionfront makes (state_dir and its keys/, run_dir, missing key directories, the
 *    status socket's and onion_location.dir) are as onionfront needs them, or can be made by this user —
 *    for check-config, a missing state_dir in /var/lib or run_dir in /run counts as made: the systemd
 *    unit's StateDirectory=/RuntimeDirectory= make them at start; with check_owner, existing ones and the
 *    key directories and keys are the daemon's user's (root running check-config for the unit);
 *  - the listening sockets and health checks of the services' ports fit under RLIMIT_NOFILE's hard limit
 *    with onionfront's other descriptors (proxy_check_fd_limit; check-config sees its own limit, which
 *    may differ from the unit's LimitNOFILE=);
 *  - an Onionbalance frontend: Onionbalance is installed.
 *
 * Owns nothing beyond the call. Reads only: no directory, key, marker or record is created or changed.
 * Never logs: each problem is one line "<field path>: <what is wrong, and what to do>" in the caller's
 * list. Config values are checked by config.c when the file is loaded, before this runs. */
#ifndef ONIONFRONT_PREFLIGHT_H
#define ONIONFRONT_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

struct config;
struct event_base;

/* Which problems the caller wants. */
enum preflight_scope {
    PREFLIGHT_ALL,   /* check-config: everything above */
    PREFLIGHT_START, /* the daemon's start: only what would make the start fail. A service that would be
                        refused, an attached tor that does not answer yet, an onion_location.dir it cannot
                        write and Onionbalance are left to the modules that handle them while the rest runs
                        (service_id.h, tor.h, onionloc.h, ob_frontend.h). */
};

struct preflight_opts {
    enum preflight_scope scope;
    uid_t euid;                  /* the user onionfront runs as: geteuid() (tests pretend) */
    struct event_base *base;     /* runs the attached tor's control connection; NULL: a private one */
    unsigned control_timeout_ms; /* that connection's deadline (connect and authenticate); 0: 5 s */
    rlim_t nofile_hard;          /* RLIMIT_NOFILE's hard limit to check against; 0: the process's (tests
                                    pretend) */
    bool check_owner;            /* run by root for a daemon that runs as `owner` (the systemd unit's
                                    user): existing directories and key files must be `owner`'s */
    uid_t owner;
};

/* systemd/onionfront.service's User=: check-config run by root checks ownership against it (when that
 * user exists and tor.user is unset, as under the shipped unit). */
#define PREFLIGHT_UNIT_USER "onionfront"
#define PREFLIGHT_UNIT_STATE_DIR "/var/lib/onionfront" /* the shipped unit's StateDirectory= */

#define PREFLIGHT_MAX_PROBLEMS 32
#define PREFLIGHT_PROBLEM_MAX 1400

struct preflight {
    size_t n; /* problems found; the first PREFLIGHT_MAX_PROBLEMS are kept, in the order above */
    char problems[PREFLIGHT_MAX_PROBLEMS][PREFLIGHT_PROBLEM_MAX];
};

/* Check `c` as above into `*out` (overwritten; ~45 kB, allocate it). Return the number of problems: 0 if
 * a start gets past all of them. Blocks: runs tor.binary (bounded, torcaps.h) and, with PREFLIGHT_ALL in
 * attach mode, talks to tor until it answers or the deadline passes (running o->base meanwhile). */
size_t preflight_run(const struct config *c, const struct preflight_opts *o, struct preflight *out);

#endif
