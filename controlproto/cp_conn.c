/* cp_conn.c — an asynchronous tor control-port client on libevent.
 *
 * Owns one control connection's socket (a bufferevent), its reply parser, the FIFO of commands waiting for
 * their replies (one completion each), the event subscribers, one timer (the oldest unanswered
 * command's deadline, and the connect+auth deadline), close and free. Connecting and the authentication
 * exchange are cp_conn_auth.c's, which calls into this file (cp_conn_int.h), never the other way.
 * It does not frame replies (cp_reply.c), encode commands (cp_cmd.c) or interpret events (cp_event.c),
 * never decides what to send after authenticating, and never logs. The password and every command it
 * sends are wiped with OPENSSL_cleanse once no longer needed.
 *
 * Reentrancy: every entry point that may call the caller back (libevent callbacks, cp_conn_close,
 * cp_conn_free) counts itself in `depth`; cp_conn_free() only marks the object, and the outermost entry
 * point releases it once the callback chain has unwound. A close bumps `gen`, so code that called out
 * notices that the connection it was serving is gone. */
#include "controlproto/cp_err.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_conn_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include <openssl/crypto.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_reply.h"

#define CP_CONN_DEFAULT_TIMEOUT_US (30 * INT64_C(1000000))

const char *cp_conn_state_str(enum cp_conn_state s)
{
    switch (s) {
    case CP_CONN_IDLE: return "idle";
    case CP_CONN_CONNECTING: return "connecting";
    case CP_CONN_AUTHENTICATING: return "authenticating";
    case CP_CONN_READY: return "ready";
    case CP_CONN_CLOSED: return "closed";
    }
    return "unknown";
}

const char *cp_auth_method_str(enum cp_auth_method m)
{
    switch (m) {
    case CP_AUTH_AUTO: return "AUTO";
    case CP_AUTH_SAFECOOKIE: return "SAFECOOKIE";
    case CP_AUTH_COOKIE: return "COOKIE";
    case CP_AUTH_PASSWORD: return "HASHEDPASSWORD";
    case CP_AUTH_NONE: return "NULL";
    }
    return "unknown";
}

int64_t cp_conn_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void cp_conn_free_str_secret(char **s)
{
    if (*s) {
        OPENSSL_cleanse(*s, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

void cp_conn_wipe_auth(struct cp_conn *c)
{
    OPENSSL_cleanse(c->cookie, sizeof c->cookie);
    OPENSSL_cleanse(c->client_nonce, sizeof c->client_nonce);
}

/* Wipe the bytes an evbuffer holds, in place, before libevent frees them. */
static void cp_conn_wipe_evbuffer(struct evbuffer *b)
{
    struct evbuffer_iovec *v;
    int i, n = evbuffer_peek(b, -1, NULL, NULL, 0);

    if (n <= 0 || !(v = calloc((size_t)n, sizeof *v)))
        return;
    n = evbuffer_peek(b, -1, NULL, v, n);
    for (i = 0; i < n; i++)
        OPENSSL_cleanse(v[i].iov_base, v[i].iov_len);
    free(v);
}

/* ---- lifetime ---------------------------------------------------------------------------------- */

static void cp_conn_destroy(struct cp_conn *c)
{
    size_t i;

    if (c->bev)
        bufferevent_free(c->bev);
    cp_reply_parser_free(c->parser);
    if (c->timer)
        event_free(c->timer);
    for (i = 0; i < c->n_subs; i++)
        free(c->subs[i].event);
    free(c->subs);
    cp_conn_free_str_secret(&c->password);
    free(c->unix_path);
    free(c->host);
    free(c->cookie_path);
    cp_conn_wipe_auth(c);
    free(c);
}

void cp_conn_enter(struct cp_conn *c)
{
    c->depth++;
}

/* Leave an entry point; release the object if it was freed inside and this is the outermost frame.
 * Nothing may touch `c` after this. */
void cp_conn_leave(struct cp_conn *c)
{
    if (--c->depth == 0 && c->free_pending)
        cp_conn_destroy(c);
}

void cp_conn_arm_timer(struct cp_conn *c)
{
    int64_t deadline = INT64_MAX, d;
    struct timeval tv;

    if (c->state == CP_CONN_CONNECTING || c->state == CP_CONN_AUTHENTICATING)
        deadline = c->auth_deadline_us;
    if (c->head && c->head->deadline_us < deadline)
        deadline = c->head->deadline_us;
    if (deadline == INT64_MAX) {
        event_del(c->timer);
        return;
    }
    d = deadline - cp_conn_now_us();
    if (d < 0)
        d = 0;
    tv.tv_sec = (time_t)(d / 1000000);
    tv.tv_usec = (suseconds_t)(d % 1000000);
    event_add(c->timer, &tv);
}

/* Close the connection: stop all I/O, complete every pending command with an error, then tell the
 * caller (unless it is freeing us). `why` NULL means the caller asked for the close. */
static void cp_conn_shutdown(struct cp_conn *c, const char *why)
{
    char msg[CP_CONN_ERRLEN];
    struct cp_conn_cmd *list, *next;

    if (c->state == CP_CONN_IDLE || c->state == CP_CONN_CLOSED)
        return;
    snprintf(msg, sizeof msg, "%s", why ? why : "connection closed");
    c->state = CP_CONN_CLOSED;
    c->gen++;
    if (c->bev) {
        cp_conn_wipe_evbuffer(bufferevent_get_input(c->bev)); /* what tor sent and nobody read */
        bufferevent_free(c->bev); /* safe inside its own callbacks; wipes unsent commands */
        c->bev = NULL;
    }
    cp_reply_parser_free(c->parser);
    c->parser = NULL;
    event_del(c->timer);
    cp_conn_wipe_auth(c);

    list = c->head;
    c->head = c->tail = NULL;
    c->closing = true;
    cp_conn_enter(c);
    for (; list; list = next) {
        cp_conn_reply_cb cb = list->cb;
        void *arg = list->arg;

        next = list->next;
        free(list);
        if (cb)
            cb(c, NULL, msg, arg);
    }
    c->closing = false;
    if (!c->free_pending && c->state_cb)
        c->state_cb(c, CP_CONN_CLOSED, why ? msg : NULL, c->arg);
    c->depth--; /* the caller's own frame releases a freed object */
}

static void cp_conn_timer_cb(evutil_socket_t fd, short what, void *arg);
void cp_conn_fail(struct cp_conn *c, const char *fmt, ...)
{
    char msg[CP_CONN_ERRLEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cp_conn_shutdown(c, msg);
}

struct cp_conn *cp_conn_new(struct event_base *base, const struct cp_conn_opts *opts,
                            cp_conn_state_cb state_cb, void *arg, char *err, size_t errlen)
{
    struct cp_conn *c;

    if (!base || !opts) {
        cp_seterr(err, errlen, "cp_conn_new: %s is NULL", base ? "opts" : "base");
        return NULL;
    }
    if ((opts->unix_path != NULL) == (opts->host != NULL)) {
        cp_seterr(err, errlen, "cp_conn_new: set exactly one of unix_path and host");
        return NULL;
    }
    if (opts->auth < CP_AUTH_AUTO || opts->auth > CP_AUTH_NONE) {
        cp_seterr(err, errlen, "cp_conn_new: auth: unknown method %d", (int)opts->auth);
        return NULL;
    }
    if (opts->auth == CP_AUTH_PASSWORD && !opts->password) {
        cp_seterr(err, errlen, "cp_conn_new: auth HASHEDPASSWORD needs a password");
        return NULL;
    }
    if (opts->cmd_timeout.tv_sec < 0 || opts->cmd_timeout.tv_usec < 0 ||
        opts->cmd_timeout.tv_usec >= 1000000) {
        cp_seterr(err, errlen, "cp_conn_new: cmd_timeout: invalid timeval");
        return NULL;
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        cp_seterr(err, errlen, "cp_conn_new: out of memory");
        return NULL;
    }
    c->base = base;
    c->state_cb = state_cb;
    c->arg = arg;
    c->auth = opts->auth;
    c->port = opts->port;
    c->max_line = opts->max_line;
    c->max_reply = opts->max_reply;
    c->timeout_us = (int64_t)opts->cmd_timeout.tv_sec * 1000000 + opts->cmd_timeout.tv_usec;
    if (c->timeout_us == 0)
        c->timeout_us = CP_CONN_DEFAULT_TIMEOUT_US;
    c->state = CP_CONN_IDLE;
    c->auth_used = CP_AUTH_AUTO;

    if (opts->unix_path) {
        struct sockaddr_un *sa_un = (struct sockaddr_un *)&c->addr;
        size_t len = strlen(opts->unix_path);

        if (len == 0 || len >= sizeof sa_un->sun_path) {
            cp_seterr(err, errlen, "cp_conn_new: unix_path: length %zu not in 1-%zu", len,
                           sizeof sa_un->sun_path - 1);
            goto fail;
        }
        sa_un->sun_family = AF_UNIX;
        memcpy(sa_un->sun_path, opts->unix_path, len + 1);
        c->addr_len = (socklen_t)sizeof *sa_un;
        c->unix_path = strdup(opts->unix_path);
        if (!c->unix_path)
            goto oom;
    } else {
        struct sockaddr_in *sin = (struct sockaddr_in *)&c->addr;
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&c->addr;

        if (opts->port == 0) {
            cp_seterr(err, errlen, "cp_conn_new: port: must be 1-65535");
            goto fail;
        }
        if (inet_pton(AF_INET, opts->host, &sin->sin_addr) == 1) {
            sin->sin_family = AF_INET;
            sin->sin_port = htons(opts->port);
            c->addr_len = (socklen_t)sizeof *sin;
        } else if (inet_pton(AF_INET6, opts->host, &sin6->sin6_addr) == 1) {
            sin6->sin6_family = AF_INET6;
            sin6->sin6_port = htons(opts->port);
            c->addr_len = (socklen_t)sizeof *sin6;
        } else {
            cp_seterr(err, errlen, "cp_conn_new: host \"%s\": not a numeric IPv4/IPv6 address",
                           opts->host);
            goto fail;
        }
        c->host = strdup(opts->host);
        if (!c->host)
            goto oom;
    }
    if (opts->password && !(c->password = strdup(opts->password)))
        goto oom;
    if (opts->cookie_path && !(c->cookie_path = strdup(opts->cookie_path)))
        goto oom;
    c->timer = evtimer_new(base, cp_conn_timer_cb, c);
    if (!c->timer)
        goto oom;
    return c;

oom:
    cp_seterr(err, errlen, "cp_conn_new: out of memory");
fail:
    cp_conn_destroy(c);
    return NULL;
}

void cp_conn_free(struct cp_conn *c)
{
    if (!c || c->free_pending)
        return;
    c->free_pending = true;
    cp_conn_enter(c);
    cp_conn_shutdown(c, NULL);
    cp_conn_leave(c);
}

void cp_conn_close(struct cp_conn *c)
{
    if (!c || c->free_pending)
        return;
    cp_conn_enter(c);
    cp_conn_shutdown(c, NULL);
    cp_conn_leave(c);
}

enum cp_conn_state cp_conn_get_state(const struct cp_conn *c)
{
    return c->state;
}

int cp_conn_peer_uid(const struct cp_conn *c, uid_t *uid)
{
    if (!c->bev || (c->state != CP_CONN_AUTHENTICATING && c->state != CP_CONN_READY)) {
        errno = ENOTCONN;
        return -1;
    }
    if (c->addr.ss_family != AF_UNIX) {
        errno = EPROTONOSUPPORT;
        return -1;
    }
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(bufferevent_getfd(c->bev), SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return -1;
    *uid = cred.uid;
    return 0;
}

enum cp_auth_method cp_conn_auth_method(const struct cp_conn *c)
{
    return c->auth_used;
}

/* ---- sending ----------------------------------------------------------------------------------- */

static void cp_conn_wipe_ref_cb(const void *data, size_t len, void *extra)
{
    (void)extra;
    OPENSSL_cleanse((void *)(uintptr_t)data, len);
    free((void *)(uintptr_t)data);
}

/* `e` has become the oldest unanswered command: its time runs from now. tor answers a connection's
 * commands in order, so the time a command waits behind earlier ones (a slow SETCONF, a burst of fetches)
 * is theirs, not its own: a busy tor answers the head within the head's time, a hung one does not. */
static void cp_conn_head_starts(struct cp_conn *c)
{
    if (c->head) {
        c->head->since_us = c->head->period_us = cp_conn_now_us();
        c->head->deadline_us = c->head->since_us + c->head->timeout_us;
    }
    cp_conn_arm_timer(c);
}

/* Write `cmd` (malloc'd, `len` bytes; ownership passes to this function in every case) and queue its
 * completion with `timeout_us` to answer (0: the connection's). Return 0, or -1 with a message. */
static int cp_conn_queue(struct cp_conn *c, char *cmd, size_t len, int64_t timeout_us, cp_conn_reply_cb cb,
                         void *arg, char *err, size_t errlen)
{
    struct cp_conn_cmd *e = calloc(1, sizeof *e);

    if (!e) {
        cp_conn_wipe_ref_cb(cmd, len, NULL);
        cp_seterr(err, errlen, "out of memory");
        return -1;
    }
    /* A reference, not a copy: the only copy of the command is ours, and it is wiped once written (or when
     * the bufferevent is freed with it unsent). */
    if (evbuffer_add_reference(bufferevent_get_output(c->bev), cmd, len, cp_conn_wipe_ref_cb, NULL) < 0) {
        cp_conn_wipe_ref_cb(cmd, len, NULL);
        free(e);
        cp_seterr(err, errlen, "cannot queue the command for writing");
        return -1;
    }
    e->cb = cb;
    e->arg = arg;
    e->timeout_us = timeout_us > 0 ? timeout_us : c->timeout_us;
    if (c->tail)
        c->tail->next = e;
    else
        c->head = e;
    c->tail = e;
    if (c->head == e)
        cp_conn_head_starts(c);
    return 0;
}

int cp_conn_send(struct cp_conn *c, const char *cmd, cp_conn_reply_cb cb, void *arg, char *err, size_t errlen)
{
    return cp_conn_send_timed(c, cmd, (struct timeval){0, 0}, cb, arg, err, errlen);
}

int cp_conn_send_timed(struct cp_conn *c, const char *cmd, struct timeval timeout, cp_conn_reply_cb cb, void *arg,
                       char *err, size_t errlen)
{
    size_t len;
    char *copy;

    if (timeout.tv_sec < 0 || timeout.tv_usec < 0 || timeout.tv_usec >= 1000000) {
        cp_seterr(err, errlen, "cp_conn_send_timed: invalid timeout");
        return -1;
    }

    if (c->free_pending || c->state != CP_CONN_READY) {
        cp_seterr(err, errlen, "cp_conn_send: connection is %s, not ready",
                       c->free_pending ? "being freed" : cp_conn_state_str(c->state));
        return -1;
    }
    len = cmd ? strlen(cmd) : 0;
    /* control-spec 2.2: a command is one line ending in CRLF, or "+Keyword ..." CRLF, data, "." CRLF.
     * One reply per command is how replies are matched: a second command hidden in `cmd` would shift every
     * later reply onto the wrong command. */
    if (len < 3 || cmd[len - 2] != '\r' || cmd[len - 1] != '\n') {
        cp_seterr(err, errlen, "cp_conn_send: command must be non-empty and end in CRLF");
        return -1;
    }
    if (cmd[0] == '+') {
        if (len < 6 || memcmp(cmd + len - 5, "\r\n.\r\n", 5) != 0) {
            cp_seterr(err, errlen, "cp_conn_send: a \"+\" command must end in CRLF \".\" CRLF");
            return -1;
        }
    } else if (strcspn(cmd, "\r\n") != len - 2) {
        cp_seterr(err, errlen, "cp_conn_send: CR or LF inside a one-line command");
        return -1;
    }
    copy = malloc(len);
    if (!copy) {
        cp_seterr(err, errlen, "cp_conn_send: out of memory");
        return -1;
    }
    memcpy(copy, cmd, len);
    return cp_conn_queue(c, copy, len, (int64_t)timeout.tv_sec * 1000000 + timeout.tv_usec, cb, arg, err, errlen);
}

/* Send an authentication-phase command built by a cp_cmd_* encoder (NULL = encoder failed). Closes the
 * connection on failure. */
void cp_conn_send_internal(struct cp_conn *c, const char *what, char *cmd, const char *enc_err,
                           cp_conn_reply_cb cb)
{
    char err[CP_CONN_ERRLEN];

    if (!cmd) {
        cp_conn_fail(c, "%s: cannot encode the command: %s", what, enc_err ? enc_err : "out of memory");
        return;
    }
    if (cp_conn_queue(c, cmd, strlen(cmd), 0, cb, c, err, sizeof err) < 0)
        cp_conn_fail(c, "%s: %s", what, err);
}

/* ---- subscribers ------------------------------------------------------------------------------- */

int cp_conn_subscribe(struct cp_conn *c, const char *event, cp_conn_event_cb cb, void *arg)
{
    char *name;

    if (!event || !cb)
        return -1;
    if (c->n_subs == c->cap_subs) {
        size_t cap = c->cap_subs ? c->cap_subs * 2 : 8;
        struct cp_conn_sub *s = realloc(c->subs, cap * sizeof *s);

        if (!s)
            return -1;
        c->subs = s;
        c->cap_subs = cap;
    }
    name = strdup(event);
    if (!name)
        return -1;
    c->subs[c->n_subs].event = name;
    c->subs[c->n_subs].cb = cb;
    c->subs[c->n_subs].arg = arg;
    c->n_subs++;
    return 0;
}

static void cp_conn_compact_subs(struct cp_conn *c)
{
    size_t i, j = 0;

    for (i = 0; i < c->n_subs; i++) {
        if (c->subs[i].cb)
            c->subs[j++] = c->subs[i];
        else
            free(c->subs[i].event);
    }
    c->n_subs = j;
    c->subs_dirty = false;
}

void cp_conn_unsubscribe(struct cp_conn *c, cp_conn_event_cb cb, void *arg)
{
    size_t i;

    for (i = 0; i < c->n_subs; i++) {
        if (c->subs[i].cb == cb && c->subs[i].arg == arg) {
            c->subs[i].cb = NULL; /* a tombstone while a dispatch loop may be walking the array */
            c->subs_dirty = true;
        }
    }
    if (!c->dispatching && c->subs_dirty)
        cp_conn_compact_subs(c);
}

static void cp_conn_dispatch_event(struct cp_conn *c, const struct cp_reply *ev, unsigned gen)
{
    char name[64];
    const char *text = ev->n_lines ? ev->lines[0].text : "";
    size_t i, n, len = strcspn(text, " ");

    if (len >= sizeof name)
        len = sizeof name - 1;
    memcpy(name, text, len);
    name[len] = '\0';

    n = c->n_subs; /* subscribers added during dispatch start with the next event */
    c->dispatching++;
    for (i = 0; i < n && c->gen == gen; i++) {
        cp_conn_event_cb cb = c->subs[i].cb;
        void *arg = c->subs[i].arg;

        if (!cb)
            continue;
        if (strcmp(c->subs[i].event, "*") == 0 || strcmp(c->subs[i].event, name) == 0)
            cb(c, ev, arg);
    }
    c->dispatching--;
    if (!c->dispatching && c->subs_dirty)
        cp_conn_compact_subs(c);
}

/* ---- receiving --------------------------------------------------------------------------------- */

/* Hand every complete reply to its command (FIFO) or to the subscribers, until the connection that was
 * open when we started (generation `gen`) closes. */
static void cp_conn_dispatch(struct cp_conn *c, unsigned gen)
{
    struct cp_reply *r;

    while (c->gen == gen && (r = cp_reply_parser_next(c->parser)) != NULL) {
        if (r->is_event) {
            cp_conn_dispatch_event(c, r, gen);
        } else if (!c->head) {
            int status = r->status;

            cp_reply_free(r);
            cp_conn_fail(c, "protocol error: reply with status %d but no command is pending", status);
            return;
        } else {
            struct cp_conn_cmd *e = c->head;
            cp_conn_reply_cb cb = e->cb;
            void *arg = e->arg;

            c->head = e->next;
            if (!c->head)
                c->tail = NULL;
            free(e);
            cp_conn_head_starts(c);
            if (cb)
                cb(c, r, NULL, arg);
        }
        cp_reply_free(r);
    }
}

void cp_conn_read_cb(struct bufferevent *bev, void *arg)
{
    struct cp_conn *c = arg;
    unsigned gen = c->gen;
    char err[256];

    cp_conn_enter(c);
    c->last_rx_us = cp_conn_now_us(); /* tor is alive: see cp_conn_busy */
    /* Feed the input buffer's extents in place and wipe each before libevent frees it: replies may carry
     * keys (ADD_ONION's PrivateKey=). `bev` may be freed by a callback: test the generation first. */
    while (c->gen == gen) {
        struct evbuffer *in = bufferevent_get_input(bev);
        struct evbuffer_iovec v;
        int rc;

        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
            break;
        rc = cp_reply_parser_feed(c->parser, v.iov_base, v.iov_len, err, sizeof err);
        OPENSSL_cleanse(v.iov_base, v.iov_len);
        evbuffer_drain(in, v.iov_len);
        if (rc < 0) {
            cp_conn_fail(c, "protocol error: %s", err);
            break;
        }
        cp_conn_dispatch(c, gen);
    }
    cp_conn_leave(c);
}

void cp_conn_describe_peer(const struct cp_conn *c, char *buf, size_t len)
{
    if (c->unix_path)
        snprintf(buf, len, "unix:%s", c->unix_path);
    else if (strchr(c->host, ':'))
        snprintf(buf, len, "[%s]:%u", c->host, (unsigned)c->port);
    else
        snprintf(buf, len, "%s:%u", c->host, (unsigned)c->port);
}

/* The head's time is up: was tor busy rather than hung during its last period — it sent us something,
 * or the owner's check says so (cp_conn_set_busy_check)? Then give it one more period. A period in which
 * tor sent bytes is always given (its main loop runs: a tor with many services uploading can leave a
 * command unanswered for minutes while it streams events); one that only the owner's check calls busy
 * (it used CPU, say, which a spinning tor does too) at most CP_CONN_MAX_EXTENSIONS times. Only on a
 * ready connection (authentication has its own deadline). */
static bool cp_conn_busy(struct cp_conn *c)
{
    struct cp_conn_cmd *h = c->head;
    if (c->state != CP_CONN_READY)
        return false;
    if (c->last_rx_us <= h->period_us) {
        if (h->extensions >= CP_CONN_MAX_EXTENSIONS || !c->busy_cb || !c->busy_cb(c, c->busy_arg))
            return false;
        h->extensions++;
    }
    h->period_us = cp_conn_now_us();
    h->deadline_us = h->period_us + h->timeout_us;
    return true;
}

void cp_conn_set_busy_check(struct cp_conn *c, cp_conn_busy_cb cb, void *arg)
{
    c->busy_cb = cb;
    c->busy_arg = arg;
}

static void cp_conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cp_conn *c = arg;
    int64_t now = cp_conn_now_us();
    double secs = (double)c->timeout_us / 1e6;
    char peer[160];

    if (c->head && c->state == CP_CONN_READY)
        secs = (double)c->head->timeout_us / 1e6; /* the command's own time */
    (void)fd;
    (void)what;
    cp_conn_enter(c);
    cp_conn_describe_peer(c, peer, sizeof peer);
    if ((c->state == CP_CONN_CONNECTING || c->state == CP_CONN_AUTHENTICATING) && now >= c->auth_deadline_us)
        cp_conn_fail(c, "%s: %s timed out after %.3f s", peer,
                     c->state == CP_CONN_CONNECTING ? "connect" : "authentication", secs);
    else if (c->head && now >= c->head->deadline_us && cp_conn_busy(c))
        cp_conn_arm_timer(c); /* tor is busy, not hung: another period */
    else if (c->head && now >= c->head->deadline_us && c->head->period_us > c->head->since_us)
        cp_conn_fail(c, "%s: no reply to a command within %.3f s (tor was busy for %.0f s before that: %u more "
                     "period%s by its CPU alone); connection closed", peer, secs,
                     (double)(c->head->period_us - c->head->since_us) / 1e6, c->head->extensions,
                     c->head->extensions == 1 ? "" : "s");
    else if (c->head && now >= c->head->deadline_us)
        /* Replies are positional: a reply that never came would be matched to the next command. */
        cp_conn_fail(c, "%s: no reply to a command within %.3f s; connection closed", peer, secs);
    else if (c->state != CP_CONN_CLOSED && c->state != CP_CONN_IDLE)
        cp_conn_arm_timer(c); /* woke early (coarse clock) */
    cp_conn_leave(c);
}
