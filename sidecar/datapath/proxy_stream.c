/* proxy_stream.c — a stream's life once tor's PROXY line is read (see proxy.h for the rules): connect
 * with retries on other backends, copy both ways with backpressure, half-close, the idle and fin
 * deadlines, the hand-over to splice pumps, close and free; and a removed port's end with its last
 * stream.
 *
 * The connect, copy and close steps are one state machine (enum stream_state) whose callbacks hand the
 * stream to each other, so they stay in one file. It calls down into proxy_splice.c (the pumps' start
 * and stop; the pumps report back through the callbacks given here) and proxy_circ.c; proxy_listen.c
 * (which accepts streams) and proxy.c (the proxy's life) call into it, never the other way. */
#include "sidecar/datapath/proxy.h"
#include "sidecar/datapath/proxy_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "sidecar/core/clock.h"
#include "sidecar/core/log.h"
#include "sidecar/core/sockopen.h"
#include "sidecar/datapath/backend.h"
#include "sidecar/datapath/proxyproto.h"
#include "sidecar/datapath/splice_pump.h"

static void stream_release_failed(struct proxy_stream *s)
{
    for (size_t i = 0; i < s->n_failed; i++)
        backend_stream_end(s->failed[i], 0, 0);
    free(s->failed);
    s->failed = NULL;
    s->n_failed = 0;
}

/* Tell proxy_set_stream_end_cb's callback, once per stream, that tor's stream is over: when tor's side
 * ended (tor never half-closes, so its stream is gone then) or, if the backend finished first, when the
 * stream is freed. */
static void stream_report_end(struct proxy_stream *s)
{
    struct proxy *px = s->port->px;
    if (s->end_reported || !px->stream_end_cb || s->peer_pid <= 0 || s->circuit_id == 0)
        return;
    s->end_reported = true;
    px->stream_end_cb(s->peer_pid, s->circuit_id, px->stream_end_arg);
}

/* Free `s` (never from inside one of its own bufferevent callbacks: see proxy_stream_close). If its port
 * was removed by a reload and this was its last stream, the port goes too when `may_free_port`. */
static void stream_free(struct proxy_stream *s, bool may_free_port)
{
    struct proxy_port *pp = s->port;
    for (int i = 0; i < 2; i++)
        splice_pump_free(s->pipe[i].pump); /* before the sockets it watches are closed */
    if (s->spliced)
        pp->px->spliced--;
    for (int i = 0; i < 2; i++)
        if (s->bev[i])
            bufferevent_free(s->bev[i]);
    if (s->ev)
        event_free(s->ev);
    if (s->idle_ev)
        event_free(s->idle_ev);
    stream_release_failed(s);
    if (s->backend)
        backend_stream_end(s->backend, s->bytes_in, s->bytes_out);
    if (s->counted)
        proxy_circ_dec(pp, s->circuit_id);
    stream_report_end(s);
    if (s->prev)
        s->prev->next = s->next;
    else
        pp->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    pp->streams_active--;
    struct proxy *px = pp->px;
    px->streams_open--;
    if (px->at_cap && px->streams_open < px->max_open_streams - px->max_open_streams / 4) {
        px->at_cap = false;
        log_info("proxy: %u streams open, below the limit of %u again", px->streams_open, px->max_open_streams);
    }
    free(s);
    if (may_free_port && pp->removed && !pp->streams)
        proxy_port_free(pp);
}

/* End the stream: cut every callback at once and free it from s->ev on the next loop pass, so that
 * no caller up the stack (a bufferevent callback, the connect loop) touches freed memory. */
void proxy_stream_close(struct proxy_stream *s)
{
    if (s->state == STREAM_CLOSED)
        return;
    s->state = STREAM_CLOSED;
    for (int i = 0; i < 2; i++) {
        if (!s->bev[i])
            continue;
        bufferevent_setcb(s->bev[i], NULL, NULL, NULL, NULL);
        bufferevent_disable(s->bev[i], EV_READ | EV_WRITE);
    }
    for (int i = 0; i < 2; i++)
        if (s->pipe[i].pump)
            splice_pump_stop(s->pipe[i].pump);
    if (s->idle_ev)
        event_del(s->idle_ev);
    event_del(s->ev);
    event_active(s->ev, EV_TIMEOUT, 1);
}

static const char *stream_side_str(enum stream_side side)
{
    return side == SIDE_CLIENT ? "tor" : "backend";
}

/* Classify a failed connect from the socket's pending error (or errno). */
static enum check_result stream_connect_error(struct bufferevent *bev, char *detail, size_t len)
{
    int e = 0;
    socklen_t elen = sizeof(e);
    int dns = bufferevent_socket_get_dns_error(bev);
    if (dns) {
        snprintf(detail, len, "%s", evutil_gai_strerror(dns));
        return CHECK_RESOLVE_ERROR;
    }
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0 || e == 0)
        e = EVUTIL_SOCKET_ERROR();
    snprintf(detail, len, "%s", strerror(e));
    if (e == ECONNREFUSED)
        return CHECK_CONNECT_REFUSED;
    if (e == ETIMEDOUT)
        return CHECK_CONNECT_TIMEOUT;
    return CHECK_CONNECT_ERROR;
}

static void stream_read_cb(struct bufferevent *bev, void *arg);
static void stream_write_cb(struct bufferevent *bev, void *arg);
static void stream_event_cb(struct bufferevent *bev, short what, void *arg);
static void stream_try_splice(struct proxy_stream *s);

/* Attempt to `b` (still started) failed: blame it and keep it in s->failed (still started, so the
 * pointer stays valid while it is excluded). Return 0, or -1 on OOM (then `b` is ended). */
static int stream_blame(struct proxy_stream *s, struct backend *b, enum check_result r, const char *detail)
{
    struct proxy_port *pp = s->port;
    log_debug("proxy %s: stream %llu: backend %s: %s%s%s", pp->label, (unsigned long long)s->id, b->conf.name,
              check_result_str(r), detail && *detail ? ": " : "", detail ? detail : "");
    backend_passive_failure(b, r, detail);
    pp->connect_failures++;
    struct backend **nf = realloc(s->failed, (s->n_failed + 1) * sizeof(*nf));
    if (!nf) {
        backend_stream_end(b, 0, 0);
        return -1;
    }
    s->failed = nf;
    s->failed[s->n_failed++] = b;
    return 0;
}

/* The attempt to s->backend failed (refused, error, timeout): blame it, keep it excluded, try the next.
 * Nothing has reached the client yet, so another backend can take the stream unnoticed. */
static void stream_attempt_failed(struct proxy_stream *s, enum check_result r, const char *detail)
{
    struct backend *b = s->backend;
    event_del(s->ev);
    if (s->bev[SIDE_SERVER]) {
        bufferevent_free(s->bev[SIDE_SERVER]); /* libevent defers the actual free past its callback */
        s->bev[SIDE_SERVER] = NULL;
    }
    s->backend = NULL;
    if (stream_blame(s, b, r, detail) < 0) {
        proxy_stream_close(s);
        return;
    }
    proxy_stream_connect_next(s);
}

/* idle_timeout: close the stream if no byte was read from either side for that long, else look again
 * when it would be. */
static void stream_idle_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proxy_stream *s = arg;
    const struct port_conf *pc = backend_pool_port(s->port->pool);
    uint64_t limit = (uint64_t)pc->idle_timeout_s * 1000, now = clock_now_ms();
    (void)fd;
    (void)what;
    if (pc->idle_timeout_s == 0 || s->state != STREAM_OPEN)
        return;
    if (now - s->active_at < limit) {
        struct timeval tv = clock_tv_ms(limit - (now - s->active_at));
        evtimer_add(s->idle_ev, &tv);
        return;
    }
    s->port->closed_idle++;
    log_debug("proxy %s: stream %llu: no byte either way for %u s (idle_timeout); closing it", s->port->label,
              (unsigned long long)s->id, pc->idle_timeout_s);
    proxy_stream_close(s);
}

static void stream_connected(struct proxy_stream *s)
{
    struct proxy_port *pp = s->port;
    const struct port_conf *pc = backend_pool_port(pp->pool);
    event_del(s->ev);
    stream_release_failed(s); /* connected: the failed ones need not be excluded any more */
    s->state = STREAM_OPEN;
    log_debug("proxy %s: stream %llu: connected to backend %s", pp->label, (unsigned long long)s->id,
              s->backend->conf.name);
    if (pc->idle_timeout_s > 0 && (s->idle_ev = evtimer_new(pp->px->base, stream_idle_cb, s))) {
        struct timeval tv = clock_tv_ms((uint64_t)pc->idle_timeout_s * 1000);
        s->active_at = clock_now_ms();
        evtimer_add(s->idle_ev, &tv);
    }
    for (int i = 0; i < 2; i++) {
        bufferevent_setcb(s->bev[i], stream_read_cb, stream_write_cb, stream_event_cb, s);
        bufferevent_setwatermark(s->bev[i], EV_READ, 0, 0);
        bufferevent_enable(s->bev[i], EV_READ); /* EV_WRITE when there is something to write */
    }
    if (pc->proxy_protocol) {
        uint8_t hdr[PROXYPROTO_V2_LEN];
        size_t n = proxyproto_v2_encode(s->circuit_id, pp->virtual_port, hdr, sizeof(hdr));
        proxy_enable_write(s->bev[SIDE_SERVER]);
        if (bufferevent_write(s->bev[SIDE_SERVER], hdr, n) < 0) {
            proxy_stream_close(s);
            return;
        }
    }
    /* Bytes that came after tor's PROXY line are waiting already; no read event will announce them. */
    if (evbuffer_get_length(bufferevent_get_input(s->bev[SIDE_CLIENT])) > 0)
        stream_read_cb(s->bev[SIDE_CLIENT], s);
    stream_try_splice(s); /* with splice_min 0 (tests), from the first byte */
}

static void stream_connect_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct proxy_stream *s = arg;
    char detail[128];
    if (what & BEV_EVENT_CONNECTED) {
        /* A backend by host name: libevent opened this socket itself after resolving the name, without
         * close-on-exec (proc.c closes it in every child anyway). */
        evutil_make_socket_closeonexec(bufferevent_getfd(bev));
        stream_connected(s);
        return;
    }
    enum check_result r = stream_connect_error(bev, detail, sizeof(detail));
    if (s->in_connect) { /* reported from inside the connect call: stream_attempt handles it */
        s->sync_failed = true;
        s->sync_result = r;
        snprintf(s->sync_detail, sizeof(s->sync_detail), "%s", detail);
        return;
    }
    stream_attempt_failed(s, r, detail);
}

static int stream_sockaddr(const struct backend_addr *a, struct sockaddr_storage *ss, int *len)
{
    memset(ss, 0, sizeof(*ss));
    if (a->kind == BACKEND_ADDR_UNIX) {
        struct sockaddr_un *sun = (struct sockaddr_un *)ss;
        sun->sun_family = AF_UNIX;
        if (strlen(a->path) >= sizeof(sun->sun_path))
            return -1;
        memcpy(sun->sun_path, a->path, strlen(a->path) + 1);
        *len = (int)sizeof(*sun);
        return 0;
    }
    if (a->family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(a->port);
        *len = (int)sizeof(*sin);
        return inet_pton(AF_INET, a->host, &sin->sin_addr) == 1 ? 0 : -1;
    }
    if (a->family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(a->port);
        *len = (int)sizeof(*sin6);
        return inet_pton(AF_INET6, a->host, &sin6->sin6_addr) == 1 ? 0 : -1;
    }
    return 1; /* a host name */
}

/* Start connecting to `b` (backend_stream_start is called here). Return 0 if under way, or -1 with
 * s->sync_result/sync_detail set, `b` still started and no attempt left behind. */
static int stream_attempt(struct proxy_stream *s, struct backend *b)
{
    struct proxy_port *pp = s->port;
    struct proxy *px = pp->px;
    const struct port_conf *pc = backend_pool_port(pp->pool);
    struct sockaddr_storage ss;
    int sslen = 0, rc;

    backend_stream_start(b);
    s->backend = b;
    s->state = STREAM_CONNECTING;
    s->sync_failed = false;
    log_debug("proxy %s: stream %llu (circuit %u): trying backend %s", pp->label, (unsigned long long)s->id,
              (unsigned)s->circuit_id, b->conf.name);
    s->bev[SIDE_SERVER] = bufferevent_socket_new(px->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!s->bev[SIDE_SERVER]) {
        s->sync_result = CHECK_CONNECT_ERROR;
        snprintf(s->sync_detail, sizeof(s->sync_detail), "out of memory");
        s->backend = NULL;
        return -1;
    }
    bufferevent_setcb(s->bev[SIDE_SERVER], NULL, NULL, stream_connect_event_cb, s);
    struct timeval tv = clock_tv_ms(pc->connect_timeout_ms);
    evtimer_add(s->ev, &tv);

    int kind = stream_sockaddr(&b->conf.addr, &ss, &sslen);
    s->in_connect = true;
    errno = 0;
    if (kind == 0) {
        rc = sockopen_bufferevent_connect(s->bev[SIDE_SERVER], (struct sockaddr *)&ss, sslen);
    } else if (kind > 0) {
        if (!px->dns)
            px->dns = evdns_base_new(px->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
        rc = px->dns ? bufferevent_socket_connect_hostname(s->bev[SIDE_SERVER], px->dns, AF_UNSPEC,
                                                           b->conf.addr.host, b->conf.addr.port)
                     : -1;
        if (!px->dns) {
            s->sync_failed = true;
            s->sync_result = CHECK_RESOLVE_ERROR;
            snprintf(s->sync_detail, sizeof(s->sync_detail), "no DNS resolver (evdns_base_new failed)");
        }
    } else {
        rc = -1;
        errno = EINVAL;
    }
    int saved = errno;
    s->in_connect = false;
    if (rc < 0 || s->sync_failed) {
        if (!s->sync_failed) {
            s->sync_result = saved == ECONNREFUSED ? CHECK_CONNECT_REFUSED : CHECK_CONNECT_ERROR;
            snprintf(s->sync_detail, sizeof(s->sync_detail), "%s", strerror(saved ? saved : EINVAL));
        }
        event_del(s->ev);
        if (s->bev[SIDE_SERVER]) {
            bufferevent_free(s->bev[SIDE_SERVER]);
            s->bev[SIDE_SERVER] = NULL;
        }
        s->backend = NULL;
        return -1;
    }
    return 0;
}

/* Give the stream to the next usable backend not tried yet, or close it when there is none. */
void proxy_stream_connect_next(struct proxy_stream *s)
{
    struct proxy_port *pp = s->port;
    for (;;) {
        struct backend *b = backend_pool_pick(pp->pool, s->circuit_id, s->failed, s->n_failed);
        if (!b) {
            if (s->n_failed == 0) {
                pp->rejected_no_backend++;
                log_debug("proxy %s: stream %llu: no backend is up; closing it", pp->label,
                          (unsigned long long)s->id);
            } else {
                log_debug("proxy %s: stream %llu: no usable backend left after %zu failed attempt%s; closing it",
                          pp->label, (unsigned long long)s->id, s->n_failed, s->n_failed == 1 ? "" : "s");
            }
            proxy_stream_close(s);
            return;
        }
        if (stream_attempt(s, b) == 0)
            return;
        /* Failed at once (no such unix socket, a name the hosts file lacks ...): blame, exclude, next. */
        if (stream_blame(s, b, s->sync_result, s->sync_detail) < 0) {
            proxy_stream_close(s);
            return;
        }
    }
}

/* ---- copying ---- */

static enum stream_side stream_side_of(const struct proxy_stream *s, const struct bufferevent *bev)
{
    return bev == s->bev[SIDE_CLIENT] ? SIDE_CLIENT : SIDE_SERVER;
}

/* Both directions finished: each side's EOF was passed on. */
static void stream_maybe_done(struct proxy_stream *s)
{
    if (s->eof[SIDE_CLIENT] && s->shut[SIDE_SERVER] && s->eof[SIDE_SERVER] && s->shut[SIDE_CLIENT]) {
        log_debug("proxy %s: stream %llu: done (%llu bytes in, %llu out)", s->port->label,
                  (unsigned long long)s->id, (unsigned long long)s->bytes_in, (unsigned long long)s->bytes_out);
        proxy_stream_close(s);
    }
}

/* Pass the half-close of side `from` on to the other side once everything read from `from` is written. */
static void stream_pass_eof(struct proxy_stream *s, enum stream_side from)
{
    enum stream_side to = from == SIDE_CLIENT ? SIDE_SERVER : SIDE_CLIENT;
    if (!s->eof[from] || s->shut[to] || evbuffer_get_length(bufferevent_get_output(s->bev[to])) > 0)
        return;
    /* The last step of the stream (`to` has ended and was told `from`'s end): the close that follows at
     * once sends the same FIN, since nothing of `to` is left unread; a short stream saves a system
     * call. Otherwise ENOTCONN when the peer is fully gone already: nothing left to tell it. */
    if (!(s->eof[to] && s->shut[from]))
        shutdown(bufferevent_getfd(s->bev[to]), SHUT_WR);
    s->shut[to] = true;
    stream_maybe_done(s);
}

/* Count `n` bytes read from side `from` (as they are read, for the port's counters). */
static void stream_count(struct proxy_stream *s, enum stream_side from, size_t n)
{
    if (s->idle_ev)
        s->active_at = clock_now_ms();
    if (from == SIDE_SERVER) {
        s->bytes_in += n;
        s->port->bytes_to_tor += n;
        s->server_spoke = true;
    } else {
        s->bytes_out += n;
        s->port->bytes_to_backend += n;
    }
}

/* Side `side` ended (EOF read). tor never half-closes: its side is gone for good, and the backend gets
 * a bounded time to finish (a stalled one would otherwise hold the stream forever). */
static void stream_side_ended(struct proxy_stream *s, enum stream_side side)
{
    s->eof[side] = true;
    if (side == SIDE_CLIENT)
        stream_report_end(s);
    if (side == SIDE_CLIENT && s->state == STREAM_OPEN) {
        struct timeval tv = clock_tv_ms(s->port->px->fin_timeout_ms);
        evtimer_add(s->ev, &tv);
    }
}

/* An error or reset (errno `e`) on side `side`: close both sides at once. */
static void stream_side_failed(struct proxy_stream *s, enum stream_side side, int e)
{
    if (side == SIDE_SERVER && !s->server_spoke && e == ECONNRESET)
        backend_passive_failure(s->backend, CHECK_RESET, "connection reset before any byte was sent");
    log_debug("proxy %s: stream %llu: %s side: %s; closing both sides", s->port->label, (unsigned long long)s->id,
              stream_side_str(side), strerror(e));
    proxy_stream_close(s);
}

/* Everything queued towards `to` is written (or its queue is below the low watermark): resume reading the
 * other side if it was paused, pass its EOF on, move to splice when due. */
static void stream_write_done(struct proxy_stream *s, enum stream_side to)
{
    enum stream_side from = to == SIDE_CLIENT ? SIDE_SERVER : SIDE_CLIENT;
    if (s->paused[from]) {
        s->paused[from] = false;
        bufferevent_setwatermark(s->bev[to], EV_WRITE, 0, 0);
        if (!s->eof[from])
            bufferevent_enable(s->bev[from], EV_READ);
    }
    stream_pass_eof(s, from);
    stream_try_splice(s);
}

static void stream_read_cb(struct bufferevent *bev, void *arg)
{
    struct proxy_stream *s = arg;
    enum stream_side from = stream_side_of(s, bev);
    enum stream_side to = from == SIDE_CLIENT ? SIDE_SERVER : SIDE_CLIENT;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct evbuffer *out = bufferevent_get_output(s->bev[to]);
    size_t n = evbuffer_get_length(in);
    if (n == 0)
        return;
    stream_count(s, from, n);
    if (evbuffer_get_length(out) == 0 && !s->shut[to]) {
        /* Nothing queued towards `to`: write now, as HAProxy does, rather than register for
         * writability and write on the next turn of the loop (two epoll_ctl calls and a wake-up per
         * direction of every stream). What the socket does not take is queued below. An error other
         * than a full socket is left for the bufferevent's own write to meet and report. */
        (void)evbuffer_write(in, bufferevent_getfd(s->bev[to]));
        if (evbuffer_get_length(in) == 0) {
            stream_write_done(s, to);
            return;
        }
    }
    proxy_enable_write(s->bev[to]);
    evbuffer_add_buffer(out, in);
    /* le-proxy.c: too much unsent towards `to`: stop reading `from` until it drains to half (to empty
     * when the stream is due for splice, which needs every buffer empty). */
    if (evbuffer_get_length(out) >= PROXY_HIGH_WATER) {
        bufferevent_setwatermark(s->bev[to], EV_WRITE, proxy_stream_wants_splice(s) ? 0 : PROXY_HIGH_WATER / 2,
                                 PROXY_HIGH_WATER);
        bufferevent_disable(bev, EV_READ);
        s->paused[from] = true;
    }
}

static void stream_write_cb(struct bufferevent *bev, void *arg)
{
    struct proxy_stream *s = arg;
    stream_write_done(s, stream_side_of(s, bev));
}

static void stream_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct proxy_stream *s = arg;
    enum stream_side side = stream_side_of(s, bev);
    if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_WRITING)) {
        stream_side_ended(s, side);
        stream_read_cb(bev, s); /* anything still buffered goes first */
        stream_pass_eof(s, side);
        return;
    }
    if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) /* EOF while writing: the peer is gone */
        stream_side_failed(s, side, EVUTIL_SOCKET_ERROR());
}

/* ---- splice: the pumps report here (proxy_splice.c starts and stops them) ---- */

static void stream_pipe_moved_cb(size_t n, void *arg)
{
    struct stream_pipe *sp = arg;
    stream_count(sp->s, sp->from, n);
}

static void stream_pipe_done_cb(void *arg)
{
    struct stream_pipe *sp = arg;
    stream_side_ended(sp->s, sp->from);
    stream_pass_eof(sp->s, sp->from); /* nothing is buffered towards the other side: shut it now */
}

static void stream_pipe_failed_cb(int err, bool at_source, void *arg)
{
    struct stream_pipe *sp = arg;
    struct proxy_stream *s = sp->s;
    struct proxy *px = s->port->px;
    if (splice_pump_is_refusal(err)) {
        log_info("proxy %s: splice refused (%s); copying through buffers from now on", s->port->label,
                 strerror(err));
        px->splice_on = false;
        if (proxy_splice_stop(s) < 0)
            proxy_stream_close(s);
        return;
    }
    stream_side_failed(s, at_source ? sp->from : !sp->from, err);
}

static const struct splice_pump_cbs stream_pipe_cbs = {stream_pipe_moved_cb, stream_pipe_done_cb,
                                                       stream_pipe_failed_cb};

/* Move the stream to splice pumps if it is due and nothing of it is buffered; otherwise leave it. */
static void stream_try_splice(struct proxy_stream *s)
{
    if (!proxy_stream_wants_splice(s) || proxy_stream_buffered(s) > 0)
        return;
    if (proxy_splice_start(s, &stream_pipe_cbs) < 0)
        proxy_stream_close(s);
}

void proxy_stream_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proxy_stream *s = arg;
    struct proxy_port *pp = s->port;
    char detail[64];
    (void)fd;
    (void)what;
    switch (s->state) {
    case STREAM_HEADER:
        pp->rejected_header++;
        log_debug("proxy %s: stream %llu: no PROXY line within %u ms; closing it", pp->label,
                  (unsigned long long)s->id, pp->px->header_timeout_ms);
        proxy_stream_close(s);
        break;
    case STREAM_CONNECTING:
        snprintf(detail, sizeof(detail), "no connection within %u ms",
                 backend_pool_port(pp->pool)->connect_timeout_ms);
        stream_attempt_failed(s, CHECK_CONNECT_TIMEOUT, detail);
        break;
    case STREAM_OPEN:
        log_debug("proxy %s: stream %llu: backend %s did not finish within %u ms after tor's side ended; closing",
                  pp->label, (unsigned long long)s->id, s->backend->conf.name, pp->px->fin_timeout_ms);
        proxy_stream_close(s);
        break;
    case STREAM_CLOSED:
        stream_free(s, true);
        break;
    }
}

size_t proxy_stream_buffered(const struct proxy_stream *s)
{
    size_t n = 0;
    for (int i = 0; i < 2; i++)
        if (s->pipe[i].pump)
            n += splice_pump_pending(s->pipe[i].pump);
    for (int i = 0; i < 2; i++)
        if (s->bev[i])
            n += evbuffer_get_length(bufferevent_get_input(s->bev[i])) +
                 evbuffer_get_length(bufferevent_get_output(s->bev[i]));
    return n;
}

/* ---- ports ---- */

void proxy_port_free(struct proxy_port *pp)
{
    struct proxy *px = pp->px;
    for (struct proxy_port **p = &px->ports; *p; p = &(*p)->next) {
        if (*p == pp) {
            *p = pp->next;
            break;
        }
    }
    while (pp->streams)
        stream_free(pp->streams, false);
    proxy_circ_clear(pp);
    backend_pool_free(pp->pool);
    free(pp);
}
