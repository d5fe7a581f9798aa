/* cp_conn.h — an asynchronous tor control-port client on libevent.
 *
 * Owns one control connection: connecting (unix socket or TCP), PROTOCOLINFO and authentication
 * (SAFECOOKIE with HMAC-SHA256 both ways and verification of tor's hash, COOKIE, HASHEDPASSWORD, NULL),
 * a pipelined FIFO of commands with exactly one completion per command, event dispatch to subscribers,
 * a per-command timeout, and failing every pending command when the connection closes.
 * A command's timeout runs from when it becomes the oldest unanswered command: tor answers in order, so
 * a command waiting behind slow ones is not late. When the head's time is up, a tor that was busy rather
 * than hung during that time — it sent anything (events, other bytes), or the owner's check says so
 * (cp_conn_set_busy_check: its process used CPU, say) — gets another period: always while it sends
 * bytes, up to CP_CONN_MAX_EXTENSIONS periods on the owner's check alone; a silent, idle one is hung and
 * the connection closes. A command whose work
 * grows with its size gets its own time (cp_conn_send_timed).
 * It does not decide what to send (SETEVENTS is the caller's command) and never logs: errors reach the
 * caller through callbacks with a message. Secrets (cookie, AUTHENTICATE line, every sent command) are
 * wiped after use.
 * The program must ignore SIGPIPE (signal(SIGPIPE, SIG_IGN)): libevent writes with writev(), so a write
 * after tor closed the socket would otherwise kill the process instead of reporting an error. */
#ifndef CP_CONN_H
#define CP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/time.h>
#include <sys/types.h>

#include "controlproto/cp_reply.h"

struct event_base;
struct cp_conn;

enum cp_conn_state {
    CP_CONN_IDLE,           /* created, not connected */
    CP_CONN_CONNECTING,     /* socket connecting */
    CP_CONN_AUTHENTICATING, /* PROTOCOLINFO / AUTHCHALLENGE / AUTHENTICATE in flight */
    CP_CONN_READY,          /* authenticated: commands may be sent */
    CP_CONN_CLOSED          /* closed by either side or after an error; the object may be freed */
};
const char *cp_conn_state_str(enum cp_conn_state s);

enum cp_auth_method {
    CP_AUTH_AUTO,       /* pick the best tor offers: SAFECOOKIE, then COOKIE, HASHEDPASSWORD (with a
                           password), NULL */
    CP_AUTH_SAFECOOKIE,
    CP_AUTH_COOKIE,
    CP_AUTH_PASSWORD,
    CP_AUTH_NONE
};
const char *cp_auth_method_str(enum cp_auth_method m); /* the PROTOCOLINFO name: "SAFECOOKIE", "NULL" ... */

struct cp_conn_opts {
    const char *unix_path;      /* connect to this unix socket, or */
    const char *host;           /* TCP host (numeric address) and */
    unsigned short port;        /* port */
    enum cp_auth_method auth;
    const char *password;       /* HASHEDPASSWORD; copied and wiped */
    const char *cookie_path;    /* override COOKIEFILE from PROTOCOLINFO; NULL uses tor's */
    struct timeval cmd_timeout; /* per command (from when it is the oldest unanswered one), also bounds
                                   connect+auth; {0,0} = 30 s */
    size_t max_line;            /* 0 = CP_REPLY_DEFAULT_MAX_LINE */
    size_t max_reply;           /* 0 = CP_REPLY_DEFAULT_MAX_REPLY */
};

/* Called once when the connection becomes READY, and once when it becomes CLOSED (with a message in
 * `err`, or NULL for a close the caller asked for), for each cp_conn_connect(). CLOSED comes after every
 * pending command's completion. Not called from inside cp_conn_free(). */
typedef void (*cp_conn_state_cb)(struct cp_conn *c, enum cp_conn_state state, const char *err, void *arg);

/* Completion of one command: `r` is the reply (borrowed for the duration of the call) or NULL on
 * error, timeout or close, with a message in `err`. Called exactly once per accepted command. */
typedef void (*cp_conn_reply_cb)(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg);

/* An asynchronous event (borrowed for the duration of the call). */
typedef void (*cp_conn_event_cb)(struct cp_conn *c, const struct cp_reply *ev, void *arg);

/* Create an idle connection object. Copies what it needs from `opts`. Returns NULL on bad options
 * (with a message in err). */
struct cp_conn *cp_conn_new(struct event_base *base, const struct cp_conn_opts *opts,
                            cp_conn_state_cb state_cb, void *arg, char *err, size_t errlen);

/* Start connecting and authenticating, from IDLE or CLOSED (a reconnect; subscriptions are kept).
 * Returns 0 (the outcome arrives through state_cb), or -1 with a message in err if the attempt could not
 * even start (e.g. the unix socket does not exist; state_cb is then not called), or if the connection is
 * not IDLE/CLOSED or is still failing its pending commands. */
int cp_conn_connect(struct cp_conn *c, char *err, size_t errlen);

/* Queue `cmd` (a complete command ending in CRLF, e.g. from cp_cmd.h) and send it when possible. Commands
 * are answered in order. Returns 0 (cb will be called exactly once, never from inside this call), or
 * -1 with a message if the connection is not READY or `cmd` is not exactly one command (one line ending in
 * CRLF, or a "+" command whose data ends in CRLF "." CRLF) (cb is then not called).
 * cb may be NULL (the reply is dropped). The library copies `cmd` and wipes its copy after sending.
 * A command without a reply within cmd_timeout, counted from when every command before it was answered,
 * closes the connection (replies are positional). */
int cp_conn_send(struct cp_conn *c, const char *cmd, cp_conn_reply_cb cb, void *arg, char *err,
                 size_t errlen);

/* cp_conn_send with this command's own time to answer instead of cmd_timeout ({0,0}: cmd_timeout), for a
 * command that makes tor work in proportion to its size (a SETCONF of many services). -1 also for a
 * timeout with negative fields or tv_usec of a second or more. */
int cp_conn_send_timed(struct cp_conn *c, const char *cmd, struct timeval timeout, cp_conn_reply_cb cb, void *arg,
                       char *err, size_t errlen);

#define CP_CONN_MAX_EXTENSIONS 9 /* a silent tor the busy check calls busy: the head waits at most 10 periods */

/* Was tor busy (not hung) during the head command's last period, which ended unanswered? Return true to
 * give it another period. Called from the connection's timer; must not close or free the connection. */
typedef bool (*cp_conn_busy_cb)(struct cp_conn *c, void *arg);

/* Install the owner's busy check (NULL: none; then only bytes from tor count as busy). */
void cp_conn_set_busy_check(struct cp_conn *c, cp_conn_busy_cb cb, void *arg);

/* Register `cb` for events named `event` ("CIRC", "HS_DESC" ...; "*" for all). Several subscribers may
 * share an event and are called in registration order. Return 0, or -1 on allocation failure. This only
 * routes events: send SETEVENTS yourself. Safe inside an event callback: a subscriber added there gets
 * events from the next one on. */
int cp_conn_subscribe(struct cp_conn *c, const char *event, cp_conn_event_cb cb, void *arg);

/* Remove every subscription with this cb and arg. */
void cp_conn_unsubscribe(struct cp_conn *c, cp_conn_event_cb cb, void *arg);

enum cp_conn_state cp_conn_get_state(const struct cp_conn *c);

/* The user id of the process at the other end of the connection, as the kernel recorded it when a unix
 * control socket connected (SO_PEERCRED), not as tor says it (GETINFO process/uid is tor's own word,
 * which a process that answers on that socket could forge). Return 0 with *uid set, or -1 with errno:
 * ENOTCONN when not connected, EPROTONOSUPPORT on a TCP connection, which carries no such proof. */
int cp_conn_peer_uid(const struct cp_conn *c, uid_t *uid);

/* The auth method that succeeded (valid once READY). */
enum cp_auth_method cp_conn_auth_method(const struct cp_conn *c);

/* Close the connection: every pending command completes with an error ("connection closed"), then
 * state_cb(CLOSED, NULL). Safe to call from inside any callback; the object stays valid until freed. */
void cp_conn_close(struct cp_conn *c);

/* Close (without calling state_cb) and free. Pending commands still complete with an error. Safe to call
 * from inside this connection's callbacks: the memory is released after the callback returns.
 * NULL is a no-op. */
void cp_conn_free(struct cp_conn *c);

#endif
