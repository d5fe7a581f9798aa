/* proxy_listen.c — how a stream enters the proxy (see proxy.h): each port's unix listening socket (its
 * path, the stale-socket check, bind with the socket's mode, accept and its error pause), the cap on
 * open streams (limits.max_open_streams), and tor's PROXY line with the circuit it names, after which
 * the stream goes to a backend.
 *
 * Owns struct proxy_port's listener, resume timer and socket file, and a stream until its PROXY line is
 * read. Not the streams' connecting and copying (proxy_stream.c), the circuit limits (proxy_circ.c)
 * or the pools (backend.c). */
#include "sidecar/datapath/proxy.h"
#include "sidecar/datapath/proxy_int.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sidecar/core/clock.h"
#include "sidecar/core/fdbudget.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/core/log.h"
#include "sidecar/core/unixsock.h"
#include "sidecar/config/service_socket.h"
#include "sidecar/datapath/backend.h"
#include "sidecar/datapath/proxyproto.h"

#define PROXY_LISTEN_BACKLOG 511
#define PROXY_ACCEPT_PAUSE_MS 200 /* after an accept error such as EMFILE, before accepting again */

/* ---- limits ---- */

struct fdbudget_held proxy_held_fds(const struct config *conf)
{
    struct fdbudget_held held = {0, 0};
    for (size_t i = 0; i < conf->n_services; i++) {
        const struct service_conf *svc = &conf->services[i];
        held.listeners += svc->n_ports;
        for (size_t j = 0; j < svc->n_ports; j++)
            if (svc->ports[j].health.type != HEALTH_NONE)
                held.checks += svc->ports[j].n_backends;
    }
    return held;
}

int proxy_check_fd_limit(const struct config *conf, rlim_t hard, char *err, size_t errlen)
{
    return fdbudget_check_held(proxy_held_fds(conf), hard, err, errlen);
}

void proxy_set_stream_cap(struct proxy *px, const struct config *conf)
{
    struct fdbudget_held held = proxy_held_fds(conf);
    unsigned cap = fdbudget_stream_cap(conf->limits.max_open_streams, held);
    if (cap != px->max_open_streams)
        log_info("proxy: at most %u streams open at once%s", cap,
                 conf->limits.max_open_streams ? "" : " (limits.max_open_streams: auto, from the file descriptor "
                                                      "limit less the listeners and health checks)");
    px->max_open_streams = cap;
    px->max_spliced = fdbudget_splice_cap(cap, held);
}

/* ---- the PROXY line ---- */

static void stream_begin(struct proxy_stream *s, const struct proxyproto_v1 *h)
{
    struct proxy_port *pp = s->port;
    const struct port_conf *pc = backend_pool_port(pp->pool);
    char err[256];
    uint32_t id = 0;
    uint16_t vport = 0;

    if (proxyproto_tor_circuit(h, &id, &vport, err, sizeof(err)) < 0) {
        /* Well-formed but not tor's form: serve it without a circuit identity, and say so once. */
        if (!pp->warned_foreign_line) {
            pp->warned_foreign_line = true;
            log_warnx("proxy %s: %s; streams without tor's circuit id get no affinity or circuit limit",
                      pp->label, err);
        }
        id = 0;
    } else if (vport != pp->virtual_port) {
        log_debug("proxy %s: stream %llu: tor names virtual port %u", pp->label, (unsigned long long)s->id,
                  (unsigned)vport);
    }
    s->circuit_id = id;
    if (id != 0) {
        if (proxy_circ_admit(pp, pc, id, s->id) < 0) {
            proxy_stream_close(s); /* a rate-limited circuit's record stays: its bucket is not full */
            return;
        }
        s->counted = true;
    }
    /* While a backend connects, tor's side keeps being read into its input buffer (at most
     * PROXY_HIGH_WATER: libevent stops reading there), so its socket stays registered as it is instead
     * of being removed from epoll and added again once connected. An EOF or error meanwhile is seen
     * again by the first read after the connect. */
    event_del(s->ev);
    struct bufferevent *c = s->bev[SIDE_CLIENT];
    bufferevent_setwatermark(c, EV_READ, 0, PROXY_HIGH_WATER);
    bufferevent_setcb(c, NULL, NULL, NULL, s);
    proxy_stream_connect_next(s);
}

static void stream_header_read_cb(struct bufferevent *bev, void *arg)
{
    struct proxy_stream *s = arg;
    struct proxy_port *pp = s->port;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len = evbuffer_get_length(in);
    size_t n = len < PROXYPROTO_V1_MAX ? len : PROXYPROTO_V1_MAX;
    struct proxyproto_v1 h;
    char err[256];
    const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)n);
    int rc = p ? proxyproto_v1_parse(p, n, &h, err, sizeof(err)) : -1;
    if (rc == 0)
        return; /* more to come (the read watermark caps what we hold at PROXYPROTO_V1_MAX) */
    if (rc < 0) {
        pp->rejected_header++;
        log_warnx("proxy %s: stream %llu: %s; closing it", pp->label, (unsigned long long)s->id,
                  p ? err : "out of memory");
        proxy_stream_close(s);
        return;
    }
    evbuffer_drain(in, (size_t)rc); /* tor's line is never forwarded */
    stream_begin(s, &h);
}

static void stream_header_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct proxy_stream *s = arg;
    (void)bev;
    s->port->rejected_header++;
    log_debug("proxy %s: stream %llu: %s before a complete PROXY line; closing it", s->port->label,
              (unsigned long long)s->id, (what & BEV_EVENT_EOF) ? "closed" : strerror(EVUTIL_SOCKET_ERROR()));
    proxy_stream_close(s);
}

/* The pid of the process that connected `fd` (a unix socket: the tor whose HiddenServicePort this is,
 * since every tor's lines point at the same sockets), or 0 if the kernel does not say. */
static long proxy_peer_pid(evutil_socket_t fd)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
        return 0;
    return (long)cred.pid;
}

static void proxy_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
    struct proxy_port *pp = arg;
    struct proxy *px = pp->px;
    (void)l;
    (void)sa;
    (void)salen;
    if (px->streams_open >= px->max_open_streams) {
        /* Closing at once lets tor end the client's stream now; each open stream may hold about
         * 2 x PROXY_HIGH_WATER of buffers and two descriptors. */
        pp->streams_total++;
        pp->rejected_stream_limit++;
        if (!px->at_cap) {
            px->at_cap = true;
            log_notice("proxy: %u streams open, the limit (limits.max_open_streams); closing new streams until "
                       "some end", px->streams_open);
        }
        evutil_closesocket(fd);
        return;
    }
    struct proxy_stream *s = calloc(1, sizeof(*s));
    if (s) {
        s->bev[SIDE_CLIENT] = bufferevent_socket_new(px->base, fd, BEV_OPT_CLOSE_ON_FREE);
        s->ev = evtimer_new(px->base, proxy_stream_timer_cb, s);
    }
    if (!s || !s->bev[SIDE_CLIENT] || !s->ev) {
        log_error("proxy %s: out of memory for a new stream", pp->label);
        if (s && s->bev[SIDE_CLIENT])
            bufferevent_free(s->bev[SIDE_CLIENT]);
        else
            evutil_closesocket(fd);
        if (s && s->ev)
            event_free(s->ev);
        free(s);
        return;
    }
    s->port = pp;
    s->id = ++px->next_stream_id;
    s->peer_pid = proxy_peer_pid(fd);
    s->state = STREAM_HEADER;
    s->next = pp->streams;
    if (pp->streams)
        pp->streams->prev = s;
    pp->streams = s;
    pp->streams_active++;
    pp->streams_total++;
    px->streams_open++;
    struct bufferevent *c = s->bev[SIDE_CLIENT];
    bufferevent_setcb(c, stream_header_read_cb, NULL, stream_header_event_cb, s);
    bufferevent_setwatermark(c, EV_READ, 0, PROXYPROTO_V1_MAX); /* hold no more than a line's worth */
    struct timeval tv = clock_tv_ms(px->header_timeout_ms);
    evtimer_add(s->ev, &tv);
    bufferevent_enable(c, EV_READ);
    /* tor writes its line as soon as it is connected, so it is usually here already: take it now rather
     * than on the next turn of the loop (which would also cost libevent's FIONREAD probe). Last step:
     * the line may start the connect or close the stream. */
    char line[PROXYPROTO_V1_MAX];
    ssize_t n = recv(fd, line, sizeof(line), 0);
    if (n <= 0)
        return; /* nothing yet, or an EOF or error the bufferevent meets again */
    /* A bufferevent's input only takes bytes from the bufferevent itself, which unfreezes it to read. */
    struct evbuffer *in = bufferevent_get_input(c);
    evbuffer_unfreeze(in, 0);
    int rc = evbuffer_add(in, line, (size_t)n);
    evbuffer_freeze(in, 0);
    if (rc < 0) {
        log_error("proxy %s: out of memory for a new stream", pp->label);
        proxy_stream_close(s);
        return;
    }
    stream_header_read_cb(c, s);
}

/* ---- ports ---- */

static void proxy_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proxy_port *pp = arg;
    (void)fd;
    (void)what;
    if (pp->listener)
        evconnlistener_enable(pp->listener);
}

static void proxy_accept_error_cb(struct evconnlistener *l, void *arg)
{
    struct proxy_port *pp = arg;
    int e = EVUTIL_SOCKET_ERROR();
    /* EMFILE and friends: accepting again at once would spin; pause briefly. */
    log_error("proxy %s: accept on %s: %s; pausing %d ms", pp->label, pp->path, strerror(e), PROXY_ACCEPT_PAUSE_MS);
    evconnlistener_disable(l);
    struct timeval tv = clock_tv_ms(PROXY_ACCEPT_PAUSE_MS);
    evtimer_add(pp->resume_ev, &tv);
}

void proxy_port_unlisten(struct proxy_port *pp)
{
    if (pp->listener) {
        evconnlistener_free(pp->listener);
        pp->listener = NULL;
        unlink(pp->path);
    }
    if (pp->resume_ev) {
        event_free(pp->resume_ev);
        pp->resume_ev = NULL;
    }
}

void proxy_port_destroy(struct proxy_port *pp)
{
    proxy_port_unlisten(pp);
    proxy_port_free(pp);
}

struct proxy_port *proxy_port_new(struct proxy *px, const struct service_conf *svc, const struct port_conf *pc,
                                         char *err, size_t errlen)
{
    struct proxy_port *pp = calloc(1, sizeof(*pp));
    if (!pp) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pp->px = px;
    snprintf(pp->service, sizeof(pp->service), "%s", svc->name);
    pp->virtual_port = pc->virtual_port;
    snprintf(pp->label, sizeof(pp->label), "%s:%u", svc->name, (unsigned)pc->virtual_port);
    if (service_socket_path(px->run_dir, svc->name, pc->virtual_port, pp->path, sizeof(pp->path)) < 0) {
        snprintf(err, errlen, "service %s: port %u: socket path too long", svc->name, (unsigned)pc->virtual_port);
        free(pp);
        return NULL;
    }
    pp->pool = backend_pool_new(px->base, svc->name, pc);
    pp->resume_ev = evtimer_new(px->base, proxy_resume_cb, pp);
    if (!pp->pool || !pp->resume_ev) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    /* A socket left by an earlier run would make bind fail. */
    if (unixsock_clear_stale(pp->path, NULL, err, errlen) < 0)
        goto fail;
    /* Access is the proxy directory's job: 0700 and onionfront's, or 0710 with tor's group when tor runs
     * as another user (handover.c), which tor's user can pass but not change. A socket needs write
     * permission for tor to connect whichever user tor runs as: 0666 from its first instant (the umask
     * around bind), never chmod'ed by name. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || fs_bind_unix(fd, pp->path, 0666) < 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", pp->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        goto fail;
    }
    pp->listener = evconnlistener_new(px->base, proxy_accept_cb, pp, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                      PROXY_LISTEN_BACKLOG, fd);
    if (!pp->listener) {
        snprintf(err, errlen, "cannot listen on %s: %s", pp->path, strerror(errno));
        close(fd);
        unlink(pp->path);
        goto fail;
    }
    evconnlistener_set_error_cb(pp->listener, proxy_accept_error_cb);
    log_debug("proxy %s: listening on %s", pp->label, pp->path);
    return pp;
fail:
    proxy_port_unlisten(pp);
    backend_pool_free(pp->pool);
    free(pp);
    return NULL;
}

