/* status.h — onionfront's local status socket: a unix stream socket where permitted local users ask
 * for the daemon's state and trigger a reload, one JSON request per line and one JSON reply per line.
 *
 * Owns the listening socket (its file, mode 0660, removed again on free), the client connections, the
 * peer check (SO_PEERCRED/SO_PEERGROUPS) and the wire protocol. It does not know any other module: what
 * each command returns comes from a table of provider functions (struct status_providers) that main.c
 * fills in. Nothing a client sends or fails to read can block or stop the daemon: lines are capped,
 * replies are buffered up to a bound, slow and idle clients are dropped, connections are capped.
 *
 * Protocol (`onionfront status` in status_client.c is the reference client):
 *   request  one line ending in "\n" ("\r\n" accepted), at most STATUS_MAX_LINE bytes before it:
 *              {"cmd":"status"}              a JSON object: "cmd" (string, required) and
 *              {"cmd":"status","id":7}       "id" (string of <= 64 bytes or integer, optional, echoed);
 *                                            no other member
 *              status                        or the bare command word, for people typing into socat/nc
 *            blank lines are ignored (no reply).
 *   reply    one line of compact JSON per request, in request order:
 *              {"ok":true,"result":<value>}            (+ "id":<id> when the request had one)
 *              {"ok":false,"error":"<message>"}        (+ "id" when known)
 *   commands status | services | backends | circuits  result: an object/array from the provider
 *            services-detail                           result: services with each descriptor's
 *                                                      per-HSDir detail ("services" leaves it out: it
 *                                                      grows with HSDirs x services)
 *            metrics                                   result: Prometheus text format 0.0.4, one string
 *            reload                                    result: {"reloaded":true,"message":"..."};
 *                                                      a refused config: ok false, error = why
 *            restart-tor                               result: {"started":true,"message":"..."}: a
 *                                                      rolling restart of the tors began (roll.h; it
 *                                                      runs on, "status" shows it under "roll");
 *                                                      refused (one runs, a tor is down): ok false
 *            help                                      result: the list of command names
 *            log-level LEVEL [SECONDS]                 result: {"level":LEVEL,"message":"..."}
 *              {"cmd":"log-level","level":"debug","seconds":300}: log at LEVEL (debug, info, notice,
 *              warn, error) for SECONDS (1-604800) and then at the config's log_level again; without
 *              SECONDS until the next log-level or a restart; LEVEL "config" goes back now. The bare
 *              form takes the words "log-level debug 300". Other commands take no arguments.
 *   A line longer than STATUS_MAX_LINE gets {"ok":false,"error":"request too long ..."} and the
 *   connection is closed; so is a rejected peer ({"ok":false,"error":"permission denied ..."}) and the
 *   connection beyond the limits below ({"ok":false,"error":"too many clients ..."} or "too many
 *   connections from this user ..."). Requests may be
 *   pipelined; reading pauses while a client has 256 KiB of replies unsent. After the client's EOF the
 *   requests it sent are answered (a last line without "\n" too), then the connection is closed.
 *
 * Access has two gates. The file system: the socket file is 0660, owned by onionfront's user and group
 * (the group is allowed_gids[0], else admin_gids[0], when given and the process may chgrp), and its
 * directory must be reachable — the default <run_dir>/status.sock sits in run_dir, which tor.c keeps 0700,
 * so only root and onionfront's user reach it; for other users put status.socket in a directory they can
 * enter.
 * Then the kernel's credentials of the peer, taken at connect() (SO_PEERCRED; supplementary groups from
 * SO_PEERGROUPS, never /proc/<pid>/status, whose pid may belong to another process by the time it is
 * read), which give one of two levels (status_peer_access):
 *   admin      root, onionfront's effective uid, status.admin_uids, or a primary or supplementary group in
 *              status.admin_gids: every command;
 *   read-only  status.allowed_uids or a group in status.allowed_gids (monitoring): the commands that only
 *              read (status, services, backends, circuits, metrics, help). reload, restart-tor and
 *              log-level are refused with {"ok":false,"error":"<cmd>: permission denied: uid N may read
 *              status but not run admin commands; add it to status.admin_uids"}, and the connection
 *              stays open.
 * Anyone else is refused at connect. The level is worked out again for each request with the
 * credentials from connect() and the lists of the running config, so a reload that takes a user off
 * status.admin_uids (or off every list) applies to its open connections at once. restart-tor itself is
 * refused while a roll runs and within a minute of the last one it started (roll_start_command).
 *
 * Limits (issue 15), so that one allowed user cannot lock others out by holding connections open:
 * STATUS_MAX_CLIENTS connections in all, of which the last STATUS_RESERVED_SLOTS only root and
 * onionfront's own uid may take; at most STATUS_MAX_PER_UID per other uid; every connection is closed
 * STATUS_MAX_LIFETIME_MS after it was accepted, however active it is (besides the idle and write
 * timeouts). Should the process run out of file descriptors, the server holds one spare descriptor
 * (fdbudget.h) that lets it accept and serve one client at a time anyway; the listener pauses on
 * accept errors instead of retrying at once. */
#ifndef ONIONFRONT_STATUS_H
#define ONIONFRONT_STATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sidecar/core/fdbudget.h"

struct event_base;
struct status_conf;
struct status_server;

#define STATUS_MAX_LINE 4096            /* request bytes before the "\n" */
#define STATUS_MAX_CLIENTS FDBUDGET_STATUS_CLIENTS /* connections at once: fdbudget.h's share */
#define STATUS_RESERVED_SLOTS 8         /* of those, kept for root and onionfront's own user */
#define STATUS_MAX_PER_UID 8            /* connections at once of one other user */
#define STATUS_MAX_LIFETIME_MS 600000   /* a connection is closed this long after it was accepted */
#define STATUS_MAX_OUTPUT (16u << 20)   /* the largest single reply; a larger one becomes an error */
#define STATUS_WRITE_TIMEOUT_MS 10000   /* a client that reads nothing of a pending reply for this long */
#define STATUS_IDLE_TIMEOUT_MS 60000    /* a client that sends nothing and has nothing pending */
#define STATUS_ID_MAX 64                /* bytes of a string "id" */

enum status_cmd {
    STATUS_CMD_STATUS,
    STATUS_CMD_SERVICES,
    STATUS_CMD_BACKENDS,
    STATUS_CMD_CIRCUITS,
    STATUS_CMD_METRICS,
    STATUS_CMD_RELOAD,
    STATUS_CMD_HELP,
    STATUS_CMD_LOG_LEVEL,
    STATUS_CMD_RESTART_TOR,
    STATUS_CMD_SERVICES_DETAIL,
    STATUS_CMD_COUNT_ /* not a command */
};
/* The protocol's spelling ("status", "services" ...). */
const char *status_cmd_str(enum status_cmd c);

/* Does command `c` change something (reload, restart-tor, log-level), so that only an admin peer may run
 * it? Pure. */
bool status_cmd_is_admin(enum status_cmd c);

/* What main.c supplies. Each function is called on the loop, once per request, with `arg`; a NULL
 * function makes its command answer {"ok":false,"error":"<cmd>: not available"}. The json_t functions
 * return a new reference (NULL = internal error); metrics returns malloc'd text (freed here). reload
 * returns 0 and may describe what it applied in `msg` (reply {"reloaded":true,"message":msg}), or -1
 * with the reason in `msg` (reply {"ok":false,"error":msg}). */
struct status_providers {
    void *arg;
    json_t *(*status)(void *arg);
    json_t *(*services)(void *arg);
    json_t *(*backends)(void *arg);
    json_t *(*circuits)(void *arg);
    char *(*metrics)(void *arg);
    int (*reload)(void *arg, char *msg, size_t msglen);
    /* log-level: 0 with what was done in `msg`, or -1 with why not (log_override's contract). */
    int (*log_level)(const char *level, unsigned seconds, char *msg, size_t msglen);
    /* restart-tor: as reload (reply {"started":true,"message":msg}). */
    int (*restart_tor)(void *arg, char *msg, size_t msglen);
    json_t *(*services_detail)(void *arg);
};

/* A parsed request line. */
struct status_request {
    enum status_cmd cmd;
    json_t *id; /* new reference (a string or an integer), or NULL */
    char level[16];   /* log-level: the level word (lower-case letters) */
    unsigned seconds; /* log-level: 0 when not given */
};

enum status_parse_result {
    STATUS_PARSE_OK,    /* *req filled */
    STATUS_PARSE_EMPTY, /* a blank line: no request, no reply */
    STATUS_PARSE_ERROR  /* err names the problem; req->id is set if the request carried a valid id */
};

/* Parse one request line of `len` bytes (without the "\n"; a trailing "\r" is ignored; need not be
 * NUL-terminated; may contain any bytes). Pure: no I/O, no logging. On STATUS_PARSE_OK the caller
 * releases req with status_request_clear; on STATUS_PARSE_ERROR too (req->id may be set). `err` gets
 * printable ASCII only (bytes from the request are never copied into it verbatim), so it is always
 * valid in a JSON string. */
enum status_parse_result status_parse_request(const char *line, size_t len, struct status_request *req,
                                              char *err, size_t errlen);
void status_request_clear(struct status_request *req);

/* The reply line (compact JSON + "\n") for `req` answered by the providers: new malloc'd text, or NULL
 * on OOM. Runs the command (a reload happens here). Exposed for tests and the fuzzer. */
char *status_execute(const struct status_providers *p, const struct status_request *req, size_t *len);

/* The error reply line for `msg` (with `id` if not NULL). New malloc'd text or NULL on OOM. */
char *status_error_line(const char *msg, const json_t *id, size_t *len);

/* Who may connect and what they may do, besides root and the daemon's own effective uid (always admin). */
struct status_acl {
    uid_t self_uid;
    const uid_t *uids; /* status.allowed_uids: read-only */
    size_t n_uids;
    const gid_t *gids; /* status.allowed_gids: read-only */
    size_t n_gids;
    const uid_t *admin_uids; /* status.admin_uids */
    size_t n_admin_uids;
    const gid_t *admin_gids; /* status.admin_gids */
    size_t n_admin_gids;
};

enum status_access {
    STATUS_ACCESS_NONE, /* refused at connect */
    STATUS_ACCESS_READ, /* the read-only commands */
    STATUS_ACCESS_ADMIN /* every command */
};

/* The peer's credentials as the kernel recorded them at connect(). */
struct status_peer {
    pid_t pid;
    uid_t uid;
    gid_t gid;                /* primary group */
    const gid_t *groups;      /* supplementary groups (SO_PEERGROUPS), may be NULL */
    size_t n_groups;
};

/* What `peer` may do: ADMIN for uid 0, the daemon's own uid, a uid in acl->admin_uids or a primary or
 * supplementary gid in acl->admin_gids; READ for a uid in acl->uids or such a gid in acl->gids; else NONE.
 * Pure. */
enum status_access status_peer_access(const struct status_acl *acl, const struct status_peer *peer);

/* May a peer of `access` (uid `uid`, for the message) run `cmd`? true, or false with the refusal in `err`
 * ("restart-tor: permission denied: uid 65534 may read status but not run admin commands; add it to
 * status.admin_uids"). Pure. */
bool status_authorize(enum status_cmd cmd, enum status_access access, uid_t uid, char *err, size_t errlen);

enum status_admit {
    STATUS_ADMIT_OK,
    STATUS_ADMIT_FULL,     /* no slot left for this peer */
    STATUS_ADMIT_UID_FULL, /* this (unprivileged) uid holds STATUS_MAX_PER_UID connections */
};

/* May a new client join `total` connected clients, `of_uid` of them with its uid? `privileged`: root
 * or onionfront's own uid, which may use the reserved slots and have no per-uid limit. Pure. */
enum status_admit status_admit(size_t total, size_t of_uid, bool privileged);

/* Create the server (not yet listening). Copies *providers. NULL on OOM. */
struct status_server *status_server_new(struct event_base *base, const struct status_providers *providers);

/* Listen on conf->socket: create the parent directory if it is `run_dir` (0700, as tor.c keeps it;
 * any other parent must exist), remove a stale socket file only if nothing accepts connections on it,
 * bind with a restrictive umask, chmod 0660 (and chgrp to allowed_gids[0], else admin_gids[0], when
 * there is one and the process may), then listen. Copies the uid/gid lists from conf. Return 0, or -1
 * with a message naming the path. */
int status_server_listen(struct status_server *s, const struct status_conf *conf, const char *run_dir, char *err,
                         size_t errlen);

/* Take the uid/gid lists (allowed_* and admin_*) of a reloaded config (copied; the socket path is not
 * changed here). Return 0, or -1 on OOM (the old lists stay). */
int status_server_set_acl(struct status_server *s, const struct status_conf *conf);

/* Replace the peer credential lookup (tests: a fake peer without changing uid). `fn` fills *peer for
 * the connection `fd` (groups owned by the callee until the next call) and returns 0, or -1 to reject.
 * NULL restores the kernel lookup. */
void status_server_set_peer_lookup(struct status_server *s,
                                   int (*fn)(int fd, struct status_peer *peer, void *arg), void *arg);

/* Replace STATUS_IDLE_TIMEOUT_MS and STATUS_WRITE_TIMEOUT_MS for connections accepted from now on
 * (tests). */
void status_server_set_timeouts(struct status_server *s, unsigned idle_ms, unsigned write_ms);

/* Replace STATUS_MAX_LIFETIME_MS for connections accepted from now on (tests). */
void status_server_set_lifetime(struct status_server *s, unsigned lifetime_ms);

/* Counters for tests and metrics. */
struct status_stats {
    unsigned long accepted, rejected, over_limit, requests, errors, dropped_slow, dropped_oversize;
    unsigned long over_uid_limit;   /* refused: the peer's uid had STATUS_MAX_PER_UID connections */
    unsigned long dropped_lifetime; /* closed at STATUS_MAX_LIFETIME_MS */
    unsigned long from_reserve;     /* accepted with the spare descriptor while out of descriptors */
    unsigned long denied;           /* requests refused: an admin command from a read-only peer, or any from a
                                     * peer a reload took off every list */
    size_t clients; /* connected now */
};
void status_server_stats(const struct status_server *s, struct status_stats *out);

/* Close every client and the listener and remove the socket file (if it is still the one we created).
 * NULL is a no-op. Must not be called from inside a provider function. */
void status_server_free(struct status_server *s);

#endif
