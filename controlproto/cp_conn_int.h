/* cp_conn_int.h — a control connection's state, private to controlproto/cp_conn.c (the connection once
 * open: the command queue and its timer, reading and dispatching replies and events, subscribers, close
 * and free) and cp_conn_auth.c (the way in: connecting, PROTOCOLINFO and authentication). Nothing else
 * includes it: users see a connection only through cp_conn.h. cp_conn_auth.c calls into cp_conn.c, never
 * the other way. Include controlproto/cp_conn.h first. */
#ifndef CP_CONN_INT_H
#define CP_CONN_INT_H

#ifndef CP_CONN_H
#error "include controlproto/cp_conn.h before controlproto/cp_conn_int.h"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct bufferevent;

/* control-spec 3.21: "All authentication cookies are 32 bytes long." 3.24: ServerNonce is 32 bytes. */
#define CP_CONN_COOKIE_LEN 32
#define CP_CONN_NONCE_LEN 32
#define CP_CONN_ERRLEN 512

/* One command written to tor and waiting for its reply. The command text itself is owned by the output
 * evbuffer (a reference) and wiped by cp_conn_wipe_ref_cb once written. */
struct cp_conn_cmd {
    struct cp_conn_cmd *next;
    cp_conn_reply_cb cb;
    void *arg;
    int64_t timeout_us;  /* this command's own time to answer */
    int64_t deadline_us; /* monotonic; set once it is the oldest unanswered command (the head) */
    int64_t since_us;    /* when it became the head */
    int64_t period_us;   /* when its current period of timeout_us began (since_us, or an extension) */
    unsigned extensions; /* periods added because tor was busy */
};

struct cp_conn_sub {
    char *event;         /* event name or "*" */
    cp_conn_event_cb cb; /* NULL: removed during dispatch, compacted afterwards */
    void *arg;
};

struct cp_conn {
    struct event_base *base; /* borrowed */

    /* configuration, copied from struct cp_conn_opts */
    char *unix_path;
    char *host;
    unsigned short port;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    enum cp_auth_method auth;
    char *password; /* secret */
    char *cookie_path;
    int64_t timeout_us;
    size_t max_line;
    size_t max_reply;
    cp_conn_state_cb state_cb;
    void *arg;

    /* runtime */
    enum cp_conn_state state;
    enum cp_auth_method auth_used;
    struct bufferevent *bev;
    struct cp_reply_parser *parser;
    struct event *timer;
    struct cp_conn_cmd *head, *tail;
    int64_t auth_deadline_us;
    int64_t last_rx_us;         /* the last bytes from tor */
    cp_conn_busy_cb busy_cb;    /* may the head wait longer (cp_conn_set_busy_check)? */
    void *busy_arg;
    unsigned gen;      /* bumped by every close */
    unsigned depth;    /* > 0 while inside this object's callback chain */
    bool closing;      /* failing the pending commands of a close */
    bool free_pending; /* cp_conn_free() was called; release at depth 0 */

    struct cp_conn_sub *subs;
    size_t n_subs, cap_subs;
    unsigned dispatching; /* > 0 while calling event subscribers */
    bool subs_dirty;

    /* authentication material, wiped as soon as the exchange ends */
    unsigned char cookie[CP_CONN_COOKIE_LEN];
    unsigned char client_nonce[CP_CONN_NONCE_LEN];
};

/* The monotonic clock in microseconds. */
int64_t cp_conn_now_us(void);

/* Wipe the cookie and the client nonce. */
void cp_conn_wipe_auth(struct cp_conn *c);

/* Enter / leave an entry point that may call the caller back (reentrancy: see cp_conn.c). Nothing may
 * touch `c` after cp_conn_leave. */
void cp_conn_enter(struct cp_conn *c);
void cp_conn_leave(struct cp_conn *c);

/* (Re)arm the timer for the earliest deadline: connect+auth, or the head command's. */
void cp_conn_arm_timer(struct cp_conn *c);

/* Close the connection with a formatted reason: every pending command fails, then the state callback. */
void cp_conn_fail(struct cp_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Send an authentication-phase command built by a cp_cmd_* encoder (`cmd` taken; NULL = the encoder
 * failed, `enc_err` says why). Closes the connection on failure. */
void cp_conn_send_internal(struct cp_conn *c, const char *what, char *cmd, const char *enc_err,
                           cp_conn_reply_cb cb);

/* The bufferevent's read callback: feed the parser, dispatch replies and events. */
void cp_conn_read_cb(struct bufferevent *bev, void *arg);

/* "unix:PATH", "HOST:PORT" or "[HOST]:PORT" for messages. */
void cp_conn_describe_peer(const struct cp_conn *c, char *buf, size_t len);

#endif
