/* status_server.c — the status socket's server (see status.h): listening, peer checks, line framing with
 * bounds, backpressure, timeouts and the client connections.
 *
 * Owns the socket file, the listener and the client connections. Does not own the protocol: requests
 * are parsed, authorized and answered by the pure functions of status.c, which know nothing of sockets.
 * Nothing here blocks; a misbehaving client costs at most STATUS_MAX_LINE of input and STATUS_MAX_OUTPUT
 * of output before it is dropped. */
#include "sidecar/ops/status.h"

#include <errno.h>
#include <fcntl.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sidecar/core/clock.h"
#include "sidecar/config/config.h"
#include "sidecar/core/fdbudget.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/core/log.h"
#include "sidecar/core/unixsock.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux >= 4.13; asm-generic/socket.h */
#endif

/* Reading pauses while this much reply is unsent (backpressure on pipelined requests). */
#define STATUS_OUTPUT_PAUSE (256u << 10)
#define STATUS_LISTEN_BACKLOG 32
#define STATUS_ACCEPT_RETRY_MS 1000
#define STATUS_REFUSAL_LOG_MS 10000 /* refusals over a limit are logged at most this often (a flood) */

#define STATUS_STR_(x) #x
#define STATUS_STR(x) STATUS_STR_(x)

struct status_client {
    TAILQ_ENTRY(status_client) link;
    struct status_server *srv;
    struct bufferevent *bev;
    struct event *lifetime_ev; /* STATUS_MAX_LIFETIME_MS after accept */
    uid_t uid;                 /* the peer's credentials at connect(): its access is worked out from */
    gid_t gid;                 /* them and the current lists at each admin command */
    gid_t *groups;
    size_t n_groups;
    bool closing; /* close once the output is flushed */
    bool dead;    /* freed by the reap event */
    bool paused;  /* reading stopped for backpressure */
    bool eof;     /* the client sends nothing more */
};

struct status_server {
    struct event_base *base;
    struct status_providers prov;
    struct evconnlistener *listener;
    struct event *reap_ev;  /* frees dead clients outside their callbacks */
    struct event *retry_ev; /* re-enables accepting after an accept error (EMFILE ...) */
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    bool bound;
    dev_t dev;
    ino_t ino;
    uid_t self_uid;
    uid_t *uids;       /* status.allowed_uids (read-only) */
    size_t n_uids;
    gid_t *gids;       /* status.allowed_gids (read-only) */
    size_t n_gids;
    uid_t *admin_uids; /* status.admin_uids */
    size_t n_admin_uids;
    gid_t *admin_gids; /* status.admin_gids */
    size_t n_admin_gids;
    gid_t *groups; /* scratch for SO_PEERGROUPS */
    size_t groups_cap;
    int (*peer_fn)(int fd, struct status_peer *peer, void *arg);
    void *peer_arg;
    TAILQ_HEAD(, status_client) clients;
    unsigned idle_timeout_ms, write_timeout_ms, lifetime_ms;
    struct fd_reserve spare; /* one descriptor to accept with when the process has run out */
    uint64_t refusal_logged_ms; /* monotonic time of the last refusal logged */
    unsigned long refusals_unlogged;
    struct status_stats stats;
};

/* The server's current lists as a struct status_acl (borrowed). */
#define STATUS_ACL_OF(s)                                                                                     \
    {(s)->self_uid, (s)->uids, (s)->n_uids, (s)->gids, (s)->n_gids, (s)->admin_uids, (s)->n_admin_uids,       \
     (s)->admin_gids, (s)->n_admin_gids}

static void status_reap_cb(evutil_socket_t fd, short what, void *arg);
static void status_retry_cb(evutil_socket_t fd, short what, void *arg);

struct status_server *status_server_new(struct event_base *base, const struct status_providers *providers)
{
    struct status_server *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->base = base;
    s->prov = *providers;
    s->self_uid = geteuid();
    s->idle_timeout_ms = STATUS_IDLE_TIMEOUT_MS;
    s->write_timeout_ms = STATUS_WRITE_TIMEOUT_MS;
    s->lifetime_ms = STATUS_MAX_LIFETIME_MS;
    TAILQ_INIT(&s->clients);
    s->reap_ev = event_new(base, -1, 0, status_reap_cb, s);
    s->retry_ev = evtimer_new(base, status_retry_cb, s);
    if (!s->reap_ev || !s->retry_ev) {
        status_server_free(s);
        return NULL;
    }
    return s;
}

static void status_client_free(struct status_client *c)
{
    struct status_server *s = c->srv;
    TAILQ_REMOVE(&s->clients, c, link);
    s->stats.clients--;
    bufferevent_free(c->bev);
    if (c->lifetime_ev)
        event_free(c->lifetime_ev);
    free(c->groups);
    free(c);
    fd_reserve_refill(&s->spare); /* a descriptor was just freed: take the spare back if it was used */
}

static void status_reap_cb(evutil_socket_t fd, short what, void *arg)
{
    struct status_server *s = arg;
    (void)fd;
    (void)what;
    struct status_client *c, *next;
    for (c = TAILQ_FIRST(&s->clients); c; c = next) {
        next = TAILQ_NEXT(c, link);
        if (c->dead)
            status_client_free(c);
    }
}

/* Mark `c` for freeing from the reap event (we may be inside its bufferevent's callback). */
static void status_client_kill(struct status_client *c)
{
    if (c->dead)
        return;
    c->dead = true;
    bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    event_del(c->lifetime_ev);
    event_active(c->srv->reap_ev, 0, 0);
}

/* Close once what is queued has been written (the write callback finishes). */
static void status_client_close_after_flush(struct status_client *c)
{
    c->closing = true;
    bufferevent_disable(c->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        status_client_kill(c);
}

/* Queue a reply line (taken: freed here). Output is bounded by pausing the reading of further requests
 * while STATUS_OUTPUT_PAUSE bytes are unsent (status_client_process) plus this one reply; a single reply
 * above STATUS_MAX_OUTPUT becomes an error instead. */
static void status_client_send(struct status_client *c, char *line, size_t len, const json_t *id)
{
    if (line && len > STATUS_MAX_OUTPUT) {
        char msg[128];
        snprintf(msg, sizeof(msg), "reply too large (%zu bytes, limit %u)", len, STATUS_MAX_OUTPUT);
        log_warnx("status: %s", msg);
        free(line);
        line = status_error_line(msg, id, &len);
    }
    if (!line) {
        log_warnx("status: out of memory building a reply; dropping the client");
        status_client_kill(c);
        return;
    }
    if (bufferevent_write(c->bev, line, len) < 0)
        status_client_kill(c);
    free(line);
}

/* One complete request line. */
static void status_client_request(struct status_client *c, const char *line, size_t len)
{
    struct status_server *s = c->srv;
    struct status_request req;
    char err[512];
    size_t out_len = 0;
    char *out;
    switch (status_parse_request(line, len, &req, err, sizeof(err))) {
    case STATUS_PARSE_EMPTY:
        return;
    case STATUS_PARSE_ERROR:
        s->stats.errors++;
        log_debug("status: bad request: %s", err);
        out = status_error_line(err, req.id, &out_len);
        break;
    case STATUS_PARSE_OK:
    default:
        s->stats.requests++;
        log_debug("status: %s", status_cmd_str(req.cmd));
        /* Worked out per request from the current lists: a reload that takes a user off them applies at once. */
        struct status_peer peer = {.uid = c->uid, .gid = c->gid, .groups = c->groups, .n_groups = c->n_groups};
        struct status_acl acl = STATUS_ACL_OF(s);
        enum status_access access = status_peer_access(&acl, &peer);
        if (!status_authorize(req.cmd, access, c->uid, err, sizeof(err))) {
            s->stats.denied++;
            log_notice("status: refused %s to uid %lu: %s", status_cmd_str(req.cmd), (unsigned long)c->uid,
                       access == STATUS_ACCESS_READ ? "it may only read (status.admin_uids/admin_gids)"
                                                    : "no longer an allowed user or group");
            out = status_error_line(err, req.id, &out_len);
            break;
        }
        out = status_execute(&s->prov, &req, &out_len);
        break;
    }
    status_client_send(c, out, out_len, req.id);
    status_request_clear(&req);
}

static void status_client_oversize(struct status_client *c)
{
    size_t len = 0;
    char msg[96];
    snprintf(msg, sizeof(msg), "request too long (more than %d bytes); closing", STATUS_MAX_LINE);
    c->srv->stats.dropped_oversize++;
    log_info("status: a client sent a request line over %d bytes; closing it", STATUS_MAX_LINE);
    char *line = status_error_line(msg, NULL, &len);
    status_client_send(c, line, len, NULL);
    if (!c->dead)
        status_client_close_after_flush(c);
}

/* Handle every complete line in the input, unless the client has too much output pending. After EOF a
 * last line without "\n" is a request too, and the connection closes once everything is answered. */
static void status_client_process(struct status_client *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    char line[STATUS_MAX_LINE + 2];
    while (!c->dead && !c->closing) {
        if (evbuffer_get_length(out) >= STATUS_OUTPUT_PAUSE) {
            /* Pipelined requests wait until the client has read what it asked for. */
            c->paused = true;
            bufferevent_disable(c->bev, EV_READ);
            return;
        }
        size_t eol_len = 0;
        struct evbuffer_ptr eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_LF);
        size_t avail = evbuffer_get_length(in);
        size_t n = eol.pos >= 0 ? (size_t)eol.pos : avail;
        size_t text = n > 0 && eol.pos >= 0 && evbuffer_pullup(in, (ev_ssize_t)n)[n - 1] == '\r' ? n - 1 : n;
        if (eol.pos >= 0 ? text > STATUS_MAX_LINE : avail > STATUS_MAX_LINE + 1) {
            status_client_oversize(c);
            return;
        }
        if (eol.pos < 0 && !(c->eof && avail > 0))
            break; /* wait for the rest of the line */
        evbuffer_remove(in, line, n);
        evbuffer_drain(in, eol_len);
        status_client_request(c, line, n);
    }
    if (c->eof && !c->dead && !c->closing)
        status_client_close_after_flush(c);
}

static void status_client_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    status_client_process(arg);
}

/* The output has drained completely (the write low watermark is 0). */
static void status_client_write_cb(struct bufferevent *bev, void *arg)
{
    struct status_client *c = arg;
    if (c->closing) {
        status_client_kill(c);
        return;
    }
    if (c->paused) {
        c->paused = false;
        if (!c->eof)
            bufferevent_enable(bev, EV_READ);
        status_client_process(c);
    }
}

static void status_client_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct status_client *c = arg;
    (void)bev;
    if (what & BEV_EVENT_EOF) {
        /* The client is done sending ("echo status | socat - UNIX:..."): answer what it sent, then close.
         * libevent has stopped reading; a paused client resumes from the write callback. */
        c->eof = true;
        if (!c->paused)
            status_client_process(c);
        return;
    }
    if (what & BEV_EVENT_TIMEOUT) {
        if (what & BEV_EVENT_WRITING) {
            log_info("status: client read nothing for %u ms; dropping it", c->srv->write_timeout_ms);
            c->srv->stats.dropped_slow++;
        } else {
            log_debug("status: idle client closed");
        }
    } else if (what & BEV_EVENT_ERROR) {
        log_debug("status: client connection error: %s", strerror(errno));
    }
    status_client_kill(c);
}

/* The connection's whole lifetime is over: a client may not hold a slot for hours by trickling bytes. */
static void status_client_lifetime_cb(evutil_socket_t fd, short what, void *arg)
{
    struct status_client *c = arg;
    (void)fd;
    (void)what;
    c->srv->stats.dropped_lifetime++;
    log_info("status: a client of uid %lu has been connected for %u ms; closing it", (unsigned long)c->uid,
             c->srv->lifetime_ms);
    status_client_kill(c);
}

/* Log a refusal over a limit, unless one was logged in the last STATUS_REFUSAL_LOG_MS: then count it
 * for the next line (a client looping on connect must not flood the log). */
static void status_log_refusal(struct status_server *s, uid_t uid, const char *why)
{
    uint64_t now = clock_now_ms();
    if (s->refusal_logged_ms && now - s->refusal_logged_ms < STATUS_REFUSAL_LOG_MS) {
        s->refusals_unlogged++;
        return;
    }
    log_info("status: refused uid %lu: %s (%zu clients connected; %lu more refusals since the last line)",
             (unsigned long)uid, why, s->stats.clients, s->refusals_unlogged);
    s->refusal_logged_ms = now ? now : 1;
    s->refusals_unlogged = 0;
}

static size_t status_clients_of_uid(const struct status_server *s, uid_t uid)
{
    size_t n = 0;
    const struct status_client *c;
    TAILQ_FOREACH(c, &s->clients, link)
        n += !c->dead && c->uid == uid;
    return n;
}

/* Answer a connection we will not serve with one line and close it. The socket is new, so a short line
 * fits its send buffer; unread input is drained first so the peer is not reset before it reads. */
static void status_refuse(int fd, const char *msg)
{
    char drain[512];
    size_t len = 0;
    char *line = status_error_line(msg, NULL, &len);
    while (recv(fd, drain, sizeof(drain), MSG_DONTWAIT) > 0)
        ;
    if (line && send(fd, line, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        log_debug("status: cannot tell a refused client why: %s", strerror(errno));
    free(line);
    close(fd);
}

/* The kernel's record of the peer: SO_PEERCRED for uid/gid/pid, SO_PEERGROUPS for the supplementary
 * groups. Both are fixed at connect() time, unlike /proc/<pid>/status, whose pid may already belong to
 * another process by the time we read it. */
static int status_kernel_peer(struct status_server *s, int fd, struct status_peer *peer)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
        return -1;
    peer->pid = cred.pid;
    peer->uid = cred.uid;
    peer->gid = cred.gid;
    peer->groups = NULL;
    peer->n_groups = 0;
    for (int tries = 0; tries < 2; tries++) {
        socklen_t glen = (socklen_t)(s->groups_cap * sizeof(gid_t));
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, s->groups, &glen) == 0) {
            peer->groups = s->groups;
            peer->n_groups = glen / sizeof(gid_t);
            return 0;
        }
        if (errno == ENOPROTOOPT)
            return 0; /* a kernel before 4.13: the primary group only */
        if (errno != ERANGE)
            return -1;
        size_t want = glen / sizeof(gid_t); /* ERANGE sets glen to the size needed */
        gid_t *g = realloc(s->groups, (want ? want : 1) * sizeof(gid_t));
        if (!g)
            return -1;
        s->groups = g;
        s->groups_cap = want ? want : 1;
    }
    return -1;
}

static void status_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                             void *arg)
{
    struct status_server *s = arg;
    struct status_peer peer = {0};
    (void)l;
    (void)sa;
    (void)salen;
    int rc = s->peer_fn ? s->peer_fn(fd, &peer, s->peer_arg) : status_kernel_peer(s, fd, &peer);
    struct status_acl acl = STATUS_ACL_OF(s);
    if (rc < 0 || status_peer_access(&acl, &peer) == STATUS_ACCESS_NONE) {
        s->stats.rejected++;
        if (rc < 0)
            log_notice("status: refused a client whose credentials cannot be read: %s", strerror(errno));
        else
            log_notice("status: refused pid %ld (uid %lu, gid %lu): not an allowed user or group", (long)peer.pid,
                       (unsigned long)peer.uid, (unsigned long)peer.gid);
        status_refuse(fd, "permission denied: this user may not use onionfront's status socket "
                          "(see status.allowed_uids, allowed_gids, admin_uids and admin_gids)");
        return;
    }
    bool privileged = peer.uid == 0 || peer.uid == s->self_uid;
    switch (status_admit(s->stats.clients, privileged ? 0 : status_clients_of_uid(s, peer.uid), privileged)) {
    case STATUS_ADMIT_FULL:
        s->stats.over_limit++;
        status_log_refusal(s, peer.uid, "no slot left");
        status_refuse(fd, "too many clients; try again later");
        return;
    case STATUS_ADMIT_UID_FULL:
        s->stats.over_uid_limit++;
        status_log_refusal(s, peer.uid, "the user has " STATUS_STR(STATUS_MAX_PER_UID) " connections open");
        status_refuse(fd, "too many connections from this user; close one or try again later");
        return;
    case STATUS_ADMIT_OK:
        break;
    }
    struct status_client *c = calloc(1, sizeof(*c));
    gid_t *groups = c && peer.n_groups ? malloc(peer.n_groups * sizeof(gid_t)) : NULL;
    bool have = c && (groups || !peer.n_groups);
    struct bufferevent *bev = have ? bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE) : NULL;
    struct event *lifetime = bev ? evtimer_new(s->base, status_client_lifetime_cb, c) : NULL;
    if (!lifetime) {
        log_warnx("status: out of memory accepting a client");
        if (bev)
            bufferevent_free(bev);
        else
            close(fd);
        free(groups);
        free(c);
        return;
    }
    if (groups)
        memcpy(groups, peer.groups, peer.n_groups * sizeof(gid_t));
    c->gid = peer.gid;
    c->groups = groups;
    c->n_groups = peer.n_groups;
    c->srv = s;
    c->bev = bev;
    c->lifetime_ev = lifetime;
    c->uid = peer.uid;
    TAILQ_INSERT_TAIL(&s->clients, c, link);
    s->stats.clients++;
    s->stats.accepted++;
    log_debug("status: client pid %ld uid %lu connected", (long)peer.pid, (unsigned long)peer.uid);
    bufferevent_setcb(bev, status_client_read_cb, status_client_write_cb, status_client_event_cb, c);
    /* Read no more than one maximal line (+ "\r\n") ahead: an endless line costs at most this. */
    bufferevent_setwatermark(bev, EV_READ, 0, STATUS_MAX_LINE + 2);
    struct timeval idle = {s->idle_timeout_ms / 1000, (s->idle_timeout_ms % 1000) * 1000};
    struct timeval wr = {s->write_timeout_ms / 1000, (s->write_timeout_ms % 1000) * 1000};
    bufferevent_set_timeouts(bev, &idle, &wr);
    struct timeval life = {s->lifetime_ms / 1000, (s->lifetime_ms % 1000) * 1000};
    evtimer_add(lifetime, &life);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void status_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct status_server *s = arg;
    (void)fd;
    (void)what;
    fd_reserve_refill(&s->spare);
    if (s->listener)
        evconnlistener_enable(s->listener);
}

/* accept() failed (out of file descriptors ...): serve one waiting client with the spare descriptor, so
 * that an operator can still ask what is going on, then pause accepting for a moment instead of
 * spinning. */
static void status_accept_error_cb(struct evconnlistener *l, void *arg)
{
    struct status_server *s = arg;
    int e = errno;
    if (fdbudget_is_exhaustion(e) && fd_reserve_release(&s->spare)) {
        int fd = accept4(evconnlistener_get_fd(l), NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            s->stats.from_reserve++;
            status_accept_cb(l, fd, NULL, 0, s);
        }
        fd_reserve_refill(&s->spare); /* succeeds if that client was refused (its descriptor closed) */
    }
    errno = e;
    log_warnx("status: accept on %s: %s; pausing for %d ms", s->path, strerror(errno), STATUS_ACCEPT_RETRY_MS);
    evconnlistener_disable(l);
    event_add(s->retry_ev, &(struct timeval){STATUS_ACCEPT_RETRY_MS / 1000, (STATUS_ACCEPT_RETRY_MS % 1000) * 1000});
}

/* A copy of `n` ids (uid_t and gid_t are both unsigned int: config.c), NULL for none; *oom on failure. */
static unsigned *status_ids_dup(const unsigned *ids, size_t n, bool *oom)
{
    unsigned *out = n ? malloc(n * sizeof(*out)) : NULL;
    if (n && !out)
        *oom = true;
    else if (n)
        memcpy(out, ids, n * sizeof(*out));
    return out;
}

int status_server_set_acl(struct status_server *s, const struct status_conf *conf)
{
    bool oom = false;
    uid_t *u = status_ids_dup(conf->allowed_uids, conf->n_allowed_uids, &oom);
    gid_t *g = status_ids_dup(conf->allowed_gids, conf->n_allowed_gids, &oom);
    uid_t *au = status_ids_dup(conf->admin_uids, conf->n_admin_uids, &oom);
    gid_t *ag = status_ids_dup(conf->admin_gids, conf->n_admin_gids, &oom);
    if (oom) {
        free(u);
        free(g);
        free(au);
        free(ag);
        return -1;
    }
    free(s->uids);
    free(s->gids);
    free(s->admin_uids);
    free(s->admin_gids);
    s->uids = u;
    s->n_uids = conf->n_allowed_uids;
    s->gids = g;
    s->n_gids = conf->n_allowed_gids;
    s->admin_uids = au;
    s->n_admin_uids = conf->n_admin_uids;
    s->admin_gids = ag;
    s->n_admin_gids = conf->n_admin_gids;
    return 0;
}

/* Give the bound socket `path` (in directory `parent`) to the group status.allowed_gids[0], else
 * status.admin_gids[0], if set. By name, relative to the directory's descriptor and without following a symlink — and only in a
 * directory nobody but onionfront's user can change (else a hard link or symlink swapped in for the
 * socket would get the group instead): elsewhere the socket keeps onionfront's group, with a notice.
 * Return 0, or -1 with a message (the directory cannot be opened). */
static int status_socket_give_group(const char *path, const char *parent, const struct status_conf *conf,
                                    char *err, size_t errlen)
{
    err[0] = '\0';
    if (!conf->n_allowed_gids && !conf->n_admin_gids)
        return 0;
    gid_t group = conf->n_allowed_gids ? conf->allowed_gids[0] : conf->admin_gids[0];
    int dfd = fs_open_dir(parent, false, err, errlen);
    if (dfd < 0)
        return -1;
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (fs_dir_others_can_write(dfd))
        log_notice("status: not giving %s to group %lu: another user can change %s, so the name may not be "
                   "our socket any more; put status.socket in a directory only onionfront's user can write",
                   path, (unsigned long)group, parent);
    else if (fchownat(dfd, name, (uid_t)-1, group, AT_SYMLINK_NOFOLLOW) < 0)
        log_notice("status: cannot give %s to group %lu (%s); members of status.allowed_gids and admin_gids "
                   "need the group of onionfront's user to reach it", path, (unsigned long)group, strerror(errno));
    close(dfd);
    return 0;
}

int status_server_listen(struct status_server *s, const struct status_conf *conf, const char *run_dir, char *err,
                         size_t errlen)
{
    const char *path = conf->socket;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    char parent[sizeof(sa.sun_path)];
    if (s->listener) {
        snprintf(err, errlen, "status.socket: already listening on %s", s->path);
        return -1;
    }
    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "status.socket: %s is longer than %zu bytes", path, sizeof(sa.sun_path) - 1);
        return -1;
    }
    if (status_server_set_acl(s, conf) < 0) {
        snprintf(err, errlen, "status.socket: out of memory");
        return -1;
    }
    snprintf(parent, sizeof(parent), "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash == parent)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    if (run_dir && strcmp(parent, run_dir) == 0) {
        if (fs_ensure_private_dir(run_dir, NULL, err, errlen) < 0)
            return -1;
    } else if (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "status.socket: directory %s does not exist", parent);
        return -1;
    }
    bool removed;
    char why[256];
    if (unixsock_clear_stale(path, &removed, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "status.socket: %s", why);
        return -1;
    }
    if (removed)
        log_info("status: removed the stale socket %s", path);

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "status.socket: socket(): %s", strerror(errno));
        return -1;
    }
    /* The socket file is 0660 from its first instant (the umask around bind), never chmod'ed by name:
     * a name swapped for a symlink after the bind would take the chmod to the symlink's target. */
    if (fs_bind_unix(fd, path, 0660) < 0) {
        snprintf(err, errlen, "status.socket: bind %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    s->bound = true;
    snprintf(s->path, sizeof(s->path), "%s", path);
    if (status_socket_give_group(path, parent, conf, err, errlen) < 0 || lstat(path, &st) < 0) {
        if (!err[0])
            snprintf(err, errlen, "status.socket: %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->listener = evconnlistener_new(s->base, status_accept_cb, s,
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, STATUS_LISTEN_BACKLOG, fd);
    if (!s->listener) {
        snprintf(err, errlen, "status.socket: listen %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    evconnlistener_set_error_cb(s->listener, status_accept_error_cb);
    if (fd_reserve_init(&s->spare, 1) < 0)
        log_notice("status: cannot hold a spare file descriptor: %s", strerror(errno));
    log_info("status: listening on %s", path);
    return 0;
}

void status_server_set_peer_lookup(struct status_server *s, int (*fn)(int fd, struct status_peer *peer, void *arg),
                                   void *arg)
{
    s->peer_fn = fn;
    s->peer_arg = arg;
}

void status_server_set_timeouts(struct status_server *s, unsigned idle_ms, unsigned write_ms)
{
    s->idle_timeout_ms = idle_ms;
    s->write_timeout_ms = write_ms;
}

void status_server_set_lifetime(struct status_server *s, unsigned lifetime_ms)
{
    s->lifetime_ms = lifetime_ms;
}

void status_server_stats(const struct status_server *s, struct status_stats *out)
{
    *out = s->stats;
}

void status_server_free(struct status_server *s)
{
    if (!s)
        return;
    while (!TAILQ_EMPTY(&s->clients))
        status_client_free(TAILQ_FIRST(&s->clients));
    if (s->listener)
        evconnlistener_free(s->listener);
    fd_reserve_close(&s->spare);
    if (s->bound) {
        /* Remove the file only if it is still ours (not replaced by a newer onionfront). */
        struct stat st;
        if (lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
            unlink(s->path);
    }
    if (s->reap_ev)
        event_free(s->reap_ev);
    if (s->retry_ev)
        event_free(s->retry_ev);
    free(s->uids);
    free(s->gids);
    free(s->admin_uids);
    free(s->admin_gids);
    free(s->groups);
    free(s);
}
