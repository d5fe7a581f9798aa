/* proxy.c — the data path between tor's HiddenServicePort unix sockets and the backend pools (see
 * proxy.h for the rules): the proxy's life (new, update on reload, free), a stream's life after tor's
 * PROXY line (connect with retries, copy both ways with backpressure, half-close, idle and fin
 * deadlines, close and free) and the per-port counters as JSON and metrics.
 *
 * One job over ~900 lines: a stream's connect, copy and close steps are one state machine (enum
 * stream_state) whose callbacks hand it to each other, so they stay together. Around it, in their own
 * files over the private proxy_int.h: the listeners, the stream cap and the PROXY line
 * (proxy_listen.c), the circuit records and limits (proxy_circ.c), the move to splice (proxy_splice.c).
 * The pools' choices and health bookkeeping stay in backend.c. */
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
#include "sidecar/core/fsutil.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/core/sockopen.h"
#include "sidecar/datapath/backend.h"
#include "sidecar/datapath/proxyproto.h"
#include "sidecar/datapath/splice_pump.h"

struct timeval proxy_ms(unsigned ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    return tv;
}

/* ---- streams ---- */

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
void proxy_stream_free(struct proxy_stream *s, bool may_free_port)
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
        proxy_port_destroy(pp);
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

/* Let `bev` write what is about to be added to its output. Only then: libevent registers the write
 * event at once when EV_WRITE is enabled, even with nothing to write, which costs two epoll_ctl calls and
 * a wake-up per side of every stream; once enabled it stays so, and libevent adds and removes the write
 * event as data comes and goes. */
void proxy_stream_enable_write(struct bufferevent *bev)
{
    if (!(bufferevent_get_enabled(bev) & EV_WRITE))
        bufferevent_enable(bev, EV_WRITE);
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
        proxy_stream_enable_write(s->bev[SIDE_SERVER]);
        if (bufferevent_write(s->bev[SIDE_SERVER], hdr, n) < 0) {
            proxy_stream_close(s);
            return;
        }
    }
    /* Bytes that came after tor's PROXY line are waiting already; no read event will announce them. */
    if (evbuffer_get_length(bufferevent_get_input(s->bev[SIDE_CLIENT])) > 0)
        stream_read_cb(s->bev[SIDE_CLIENT], s);
    proxy_stream_try_splice(s); /* with splice_min 0 (tests), from the first byte */
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
    struct timeval tv = proxy_ms(pc->connect_timeout_ms);
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
void proxy_stream_pass_eof(struct proxy_stream *s, enum stream_side from)
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
void proxy_stream_count(struct proxy_stream *s, enum stream_side from, size_t n)
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
void proxy_stream_side_ended(struct proxy_stream *s, enum stream_side side)
{
    s->eof[side] = true;
    if (side == SIDE_CLIENT)
        stream_report_end(s);
    if (side == SIDE_CLIENT && s->state == STREAM_OPEN) {
        struct timeval tv = proxy_ms(s->port->px->fin_timeout_ms);
        evtimer_add(s->ev, &tv);
    }
}

/* An error or reset (errno `e`) on side `side`: close both sides at once. */
void proxy_stream_side_failed(struct proxy_stream *s, enum stream_side side, int e)
{
    if (side == SIDE_SERVER && !s->server_spoke && e == ECONNRESET)
        backend_passive_failure(s->backend, CHECK_RESET, "connection reset before any byte was sent");
    log_debug("proxy %s: stream %llu: %s side: %s; closing both sides", s->port->label, (unsigned long long)s->id,
              stream_side_str(side), strerror(e));
    proxy_stream_close(s);
}
static void stream_write_done(struct proxy_stream *s, enum stream_side to)
{
    enum stream_side from = to == SIDE_CLIENT ? SIDE_SERVER : SIDE_CLIENT;
    if (s->paused[from]) {
        s->paused[from] = false;
        bufferevent_setwatermark(s->bev[to], EV_WRITE, 0, 0);
        if (!s->eof[from])
            bufferevent_enable(s->bev[from], EV_READ);
    }
    proxy_stream_pass_eof(s, from);
    proxy_stream_try_splice(s);
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
    proxy_stream_count(s, from, n);
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
    proxy_stream_enable_write(s->bev[to]);
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
        proxy_stream_side_ended(s, side);
        stream_read_cb(bev, s); /* anything still buffered goes first */
        proxy_stream_pass_eof(s, side);
        return;
    }
    if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) /* EOF while writing: the peer is gone */
        proxy_stream_side_failed(s, side, EVUTIL_SOCKET_ERROR());
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
        proxy_stream_free(s, true);
        break;
    }
}

static struct proxy_port *proxy_find_port(struct proxy *px, const char *service, uint16_t virtual_port)
{
    for (struct proxy_port *pp = px->ports; pp; pp = pp->next)
        if (!pp->removed && pp->virtual_port == virtual_port && strcmp(pp->service, service) == 0)
            return pp;
    return NULL;
}

/* ---- public ---- */

struct proxy *proxy_new(struct event_base *base, const struct config *conf, const struct proxy_hooks *hooks,
                        char *err, size_t errlen)
{
    struct proxy *px = calloc(1, sizeof(*px));
    char dir[CONFIG_RUN_DIR_MAX + 16];
    if (!px) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    px->base = base;
    if (hooks)
        px->hooks = *hooks;
    px->header_timeout_ms = PROXY_HEADER_TIMEOUT_MS;
    px->fin_timeout_ms = PROXY_FIN_TIMEOUT_MS;
    const char *sp = getenv("ONIONFRONT_SPLICE");
    px->splice_on = !(sp && strcmp(sp, "0") == 0) && splice_pump_supported();
    px->splice_min = PROXY_SPLICE_MIN;
    log_debug("proxy: splice %s", px->splice_on ? "on" : sp && strcmp(sp, "0") == 0 ? "off (ONIONFRONT_SPLICE=0)"
                                                                                    : "not supported here");
    proxy_set_stream_cap(px, conf);
    if (strlen(conf->run_dir) > CONFIG_RUN_DIR_MAX) {
        snprintf(err, errlen, "run_dir is longer than %d bytes", CONFIG_RUN_DIR_MAX);
        free(px);
        return NULL;
    }
    snprintf(px->run_dir, sizeof(px->run_dir), "%s", conf->run_dir);
    snprintf(dir, sizeof(dir), "%s/proxy", px->run_dir);
    if (fs_ensure_private_dir(px->run_dir, NULL, err, errlen) < 0 ||
        fs_ensure_private_dir(dir, NULL, err, errlen) < 0) {
        free(px);
        return NULL;
    }
    for (size_t i = 0; i < conf->n_services; i++) {
        const struct service_conf *svc = &conf->services[i];
        for (size_t j = 0; j < svc->n_ports; j++) {
            struct proxy_port *pp = proxy_port_new(px, svc, &svc->ports[j], err, errlen);
            if (!pp) {
                proxy_free(px);
                return NULL;
            }
            pp->next = px->ports;
            px->ports = pp;
            if (px->hooks.pool_added)
                px->hooks.pool_added(pp->pool, px->hooks.arg);
        }
    }
    return px;
}

int proxy_update(struct proxy *px, const struct config *conf, char *err, size_t errlen)
{
    struct proxy_port *fresh = NULL;
    for (struct proxy_port *pp = px->ports; pp; pp = pp->next)
        pp->seen = false;
    /* 1. New listeners, kept aside until everything else worked. */
    for (size_t i = 0; i < conf->n_services; i++) {
        const struct service_conf *svc = &conf->services[i];
        for (size_t j = 0; j < svc->n_ports; j++) {
            struct proxy_port *old = proxy_find_port(px, svc->name, svc->ports[j].virtual_port);
            if (old) {
                old->seen = true;
                continue;
            }
            struct proxy_port *pp = proxy_port_new(px, svc, &svc->ports[j], err, errlen);
            if (!pp)
                goto rollback;
            pp->seen = true;
            pp->next = fresh;
            fresh = pp;
        }
    }
    /* 2. Pools that stay. */
    for (size_t i = 0; i < conf->n_services; i++) {
        const struct service_conf *svc = &conf->services[i];
        for (size_t j = 0; j < svc->n_ports; j++) {
            struct proxy_port *pp = proxy_find_port(px, svc->name, svc->ports[j].virtual_port);
            char perr[256];
            if (!pp || backend_pool_update(pp->pool, &svc->ports[j], perr, sizeof(perr)) == 0)
                continue;
            snprintf(err, errlen, "service %s: port %u: %s", svc->name, (unsigned)svc->ports[j].virtual_port, perr);
            goto rollback;
        }
    }
    for (struct proxy_port *pp = px->ports; pp; pp = pp->next)
        if (pp->seen && px->hooks.pool_updated)
            px->hooks.pool_updated(pp->pool, px->hooks.arg);
    /* 3. Ports that are gone: stop listening, let their streams finish. */
    for (struct proxy_port *pp = px->ports, *next; pp; pp = next) {
        next = pp->next;
        if (pp->seen || pp->removed)
            continue;
        log_info("proxy %s: port removed; %u open stream%s continue", pp->label, pp->streams_active,
                 pp->streams_active == 1 ? "" : "s");
        pp->removed = true;
        proxy_port_unlisten(pp);
        if (px->hooks.pool_removed)
            px->hooks.pool_removed(pp->pool, px->hooks.arg);
        if (!pp->streams)
            proxy_port_destroy(pp);
    }
    proxy_set_stream_cap(px, conf);
    /* 4. The new ports join. */
    while (fresh) {
        struct proxy_port *pp = fresh;
        fresh = pp->next;
        pp->next = px->ports;
        px->ports = pp;
        log_info("proxy %s: listening on %s", pp->label, pp->path);
        if (px->hooks.pool_added)
            px->hooks.pool_added(pp->pool, px->hooks.arg);
    }
    return 0;
rollback:
    while (fresh) {
        struct proxy_port *pp = fresh;
        fresh = pp->next;
        proxy_port_unlisten(pp);
        backend_pool_free(pp->pool);
        free(pp);
    }
    return -1;
}

void proxy_free(struct proxy *px)
{
    if (!px)
        return;
    while (px->ports) {
        struct proxy_port *pp = px->ports;
        if (!pp->removed && px->hooks.pool_removed)
            px->hooks.pool_removed(pp->pool, px->hooks.arg);
        proxy_port_destroy(pp); /* unlinks it */
    }
    if (px->dns)
        evdns_base_free(px->dns, 1);
    free(px);
}

void proxy_set_timeouts(struct proxy *px, unsigned header_ms, unsigned fin_ms)
{
    px->header_timeout_ms = header_ms;
    px->fin_timeout_ms = fin_ms;
}

void proxy_set_splice(struct proxy *px, bool on, size_t min_bytes)
{
    px->splice_on = on && splice_pump_supported();
    px->splice_min = min_bytes;
}

struct backend_pool *proxy_find_pool(struct proxy *px, const char *service, uint16_t virtual_port)
{
    struct proxy_port *pp = proxy_find_port(px, service, virtual_port);
    return pp ? pp->pool : NULL;
}

size_t proxy_pools(struct proxy *px, struct backend_pool **out, size_t max)
{
    size_t n = 0;
    for (struct proxy_port *pp = px ? px->ports : NULL; pp; pp = pp->next) {
        if (pp->removed)
            continue;
        if (n < max)
            out[n] = pp->pool;
        n++;
    }
    return n;
}

void proxy_set_stream_end_cb(struct proxy *px, proxy_stream_end_cb cb, void *arg)
{
    px->stream_end_cb = cb;
    px->stream_end_arg = arg;
}

unsigned proxy_streams_from_pid(const struct proxy *px, long pid)
{
    unsigned n = 0;
    if (pid <= 0)
        return 0;
    /* A walk over the open streams (removed ports too): bounded by limits.max_open_streams, and asked
     * only while a rolling restart drains a tor. */
    for (const struct proxy_port *pp = px ? px->ports : NULL; pp; pp = pp->next)
        for (const struct proxy_stream *s = pp->streams; s; s = s->next)
            n += s->peer_pid == pid && s->state != STREAM_CLOSED && !s->eof[SIDE_CLIENT];
    return n;
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

static size_t proxy_port_buffered(const struct proxy_port *pp)
{
    size_t n = 0;
    for (const struct proxy_stream *s = pp->streams; s; s = s->next)
        n += proxy_stream_buffered(s);
    return n;
}

json_t *proxy_to_json(const struct proxy *px)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    for (const struct proxy_port *pp = px ? px->ports : NULL; pp; pp = pp->next) {
        size_t buffered = proxy_port_buffered(pp);
        json_t *o = json_pack("{s:s, s:i, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                              "service",
                              pp->service, "virtual_port", (int)pp->virtual_port, "socket", pp->path, "listening",
                              !pp->removed, "streams_active", (json_int_t)pp->streams_active, "streams_total",
                              (json_int_t)pp->streams_total, "circuits_active", (json_int_t)pp->circuits,
                              "rejected_header", (json_int_t)pp->rejected_header, "rejected_circuit_limit",
                              (json_int_t)pp->rejected_circuit_limit, "rejected_no_backend",
                              (json_int_t)pp->rejected_no_backend, "rejected_stream_limit",
                              (json_int_t)pp->rejected_stream_limit, "rejected_circuit_rate",
                              (json_int_t)pp->rejected_circuit_rate, "closed_idle", (json_int_t)pp->closed_idle,
                              "connect_failures", (json_int_t)pp->connect_failures,
                              "bytes_to_backend", (json_int_t)pp->bytes_to_backend, "bytes_to_tor",
                              (json_int_t)pp->bytes_to_tor, "buffered_bytes", (json_int_t)buffered, "streams_spliced",
                              (json_int_t)pp->streams_spliced);
        if (!o || json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

enum proxy_metric {
    PM_STREAMS,
    PM_ACTIVE,
    PM_CIRCUITS,
    PM_REJECTED,
    PM_FAILURES,
    PM_BYTES,
    PM_BUFFERED,
    PM_IDLE,
};

static const struct {
    const char *name;
    enum metrics_type type;
    const char *help;
} proxy_metric_families[] = {
    [PM_STREAMS] = {"onionfront_proxy_streams_total", METRICS_COUNTER,
                    "Streams tor handed to the port, including those rejected."},
    [PM_ACTIVE] = {"onionfront_proxy_active_streams", METRICS_GAUGE,
                   "Streams open on the port (reading tor's PROXY line, connecting or copying)."},
    [PM_CIRCUITS] = {"onionfront_proxy_active_circuits", METRICS_GAUGE,
                     "Circuits with at least one stream open on the port."},
    [PM_REJECTED] = {"onionfront_proxy_rejected_streams_total", METRICS_COUNTER,
                     "Streams closed before any backend was tried: header = no valid PROXY line in time, "
                     "circuit_limit = max_streams_per_circuit reached, circuit_rate = the circuit opened "
                     "streams faster than circuit_stream_rate, no_backend = no backend up, "
                     "stream_limit = limits.max_open_streams reached (over all ports)."},
    [PM_FAILURES] = {"onionfront_proxy_connect_failures_total", METRICS_COUNTER,
                     "Failed connection attempts to backends; each is retried on another usable backend, "
                     "and a stream with none left is closed."},
    [PM_BYTES] = {"onionfront_proxy_bytes_total", METRICS_COUNTER,
                  "Bytes read from one side to be copied to the other, counted while streams run."},
    [PM_BUFFERED] = {"onionfront_proxy_buffered_bytes", METRICS_GAUGE,
                     "Bytes held in the port's stream buffers, both directions."},
    [PM_IDLE] = {"onionfront_proxy_idle_closed_total", METRICS_COUNTER,
                 "Streams closed after idle_timeout without a byte either way."},
};

/* One sample with the port's labels and, when `key` is not NULL, one more label. */
static int proxy_metric_sample(struct metrics *m, const char *name, const char **labels, const char *key,
                               const char *value, double v)
{
    labels[4] = key;
    labels[5] = value;
    return metrics_sample(m, name, labels, v);
}

int proxy_metrics(const struct proxy *px, struct metrics *m)
{
    for (size_t f = 0; f < sizeof(proxy_metric_families) / sizeof(proxy_metric_families[0]); f++) {
        const char *name = proxy_metric_families[f].name;
        if (metrics_family(m, name, proxy_metric_families[f].type, proxy_metric_families[f].help) != 0)
            return -1;
        /* Live ports only: a removed port that still drains may share its service and port with a port
         * added again since, and a series must not appear twice. */
        for (const struct proxy_port *pp = px ? px->ports : NULL; pp; pp = pp->next) {
            if (pp->removed)
                continue;
            char port[8];
            snprintf(port, sizeof(port), "%u", (unsigned)pp->virtual_port);
            const char *labels[] = {"service", pp->service, "port", port, NULL, NULL, NULL};
            int rc = 0;
            switch ((enum proxy_metric)f) {
            case PM_STREAMS:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)pp->streams_total);
                break;
            case PM_ACTIVE:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)pp->streams_active);
                break;
            case PM_CIRCUITS:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)pp->circuits);
                break;
            case PM_REJECTED:
                rc = proxy_metric_sample(m, name, labels, "reason", "header", (double)pp->rejected_header) ||
                     proxy_metric_sample(m, name, labels, "reason", "circuit_limit",
                                         (double)pp->rejected_circuit_limit) ||
                     proxy_metric_sample(m, name, labels, "reason", "no_backend", (double)pp->rejected_no_backend) ||
                     proxy_metric_sample(m, name, labels, "reason", "stream_limit", (double)pp->rejected_stream_limit) ||
                     proxy_metric_sample(m, name, labels, "reason", "circuit_rate", (double)pp->rejected_circuit_rate);
                break;
            case PM_IDLE:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)pp->closed_idle);
                break;
            case PM_FAILURES:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)pp->connect_failures);
                break;
            case PM_BYTES:
                rc = proxy_metric_sample(m, name, labels, "direction", "to_backend", (double)pp->bytes_to_backend) ||
                     proxy_metric_sample(m, name, labels, "direction", "to_tor", (double)pp->bytes_to_tor);
                break;
            case PM_BUFFERED:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)proxy_port_buffered(pp));
                break;
            }
            if (rc != 0)
                return -1;
        }
    }
    return 0;
}
