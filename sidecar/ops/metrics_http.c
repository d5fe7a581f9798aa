/* metrics_http.c — GET /metrics over libevent's evhttp on a loopback port (see metrics_http.h for what it
 * answers and the bounds on each peer).
 *
 * evhttp parses requests, writes responses and owns every connection. What libevent 2.1's evhttp lacks
 * (a connection cap, a deadline for a whole connection, a pause on accept errors) is added around it
 * without touching its objects:
 *  - the listener is ours (evconnlistener_new_bind, handed over with evhttp_bind_listener), so we can
 *    disable it at the cap and on accept errors;
 *  - evhttp asks us for each accepted connection's bufferevent (evhttp_set_bevcb): we give it a
 *    pass-through filter over a socket bufferevent, whose free_context callback tells us when evhttp has
 *    freed the connection (2.1 has no other "connection ended" notice for a server);
 *  - the deadline never frees anything of evhttp's: it shuts the socket down, evhttp reads EOF (or fails
 *    its write) and frees the connection itself, which ends in that free_context callback;
 *  - the guard (metrics_http_set_guard) needs the peer's address, which evhttp_set_bevcb does not pass:
 *    the bufferevent callback activates a per-connection event, which libevent runs in the same loop
 *    pass, after evhttp has given the socket to the bufferevent and before any byte is read from it; it
 *    checks the peer (getpeername) and turns it away the same way as the deadline. */
#include "sidecar/ops/metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "sidecar/config/config.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"

#define METRICS_HTTP_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_HTTP_BACKLOG 16
#define METRICS_HTTP_PARK_S 3600 /* the resume timer's wait while nothing is paused (see find_cb) */

/* One accepted connection, as seen from outside evhttp. Freed by metrics_http_conn_gone_cb only. */
struct metrics_http_conn {
    LIST_ENTRY(metrics_http_conn) link;
    struct metrics_http *h;     /* NULL once metrics_http_free ran (libevent frees connections later) */
    struct bufferevent *filter; /* evhttp's bufferevent for it: borrowed, evhttp frees it */
    struct bufferevent *sock;   /* the socket under the filter: freed with it, closing the fd */
    struct event *deadline_ev;
    struct event *admit_ev; /* the guard's check of the peer, activated on accept (see the top) */
    struct event *head_ev;  /* the guard's deadline for the next request head */
    bool served;  /* our request callback answered on it */
    bool refused; /* evhttp answered it itself (400, 413, 501) before we ever did */
    bool admitted;    /* the guard let it in (any peer when there is no guard) */
    bool turned_away; /* the guard closed it */
    int family;       /* the peer's, once admitted */
    uint8_t peer[16];
    size_t copied; /* bytes at the start of the filter's output already given to sock (see out_cb) */
};

struct metrics_http {
    struct evhttp *http;
    struct evconnlistener *listener; /* owned by http once bound */
    struct event *resume_ev;         /* ends an accept-error pause; always pending (see find_cb) */
    char *(*render)(void *arg);       /* GET /metrics (metrics_http_new) */
    metrics_http_answer_fn answer;    /* or any GET under `prefix` (metrics_http_serve) */
    const char *prefix, *what;        /* "/metrics" or the prefix; "metrics" or the caller's name for logs */
    void *arg;
    uint16_t port;
    char addr[64]; /* for logs */
    unsigned max_clients, deadline_ms;
    struct config_cidr *allow; /* the guard (metrics_http_set_guard); NULL: anyone */
    size_t n_allow;
    unsigned per_source_max, head_deadline_ms;
    char last_refusal[128];    /* the last refusal logged at info: a flood from one peer logs once */
    bool paused_full, paused_error;
    bool full_logged; /* "full" was logged; again only after falling to half the cap */
    LIST_HEAD(, metrics_http_conn) conns;
    struct metrics_http_stats stats;
};

static struct timeval metrics_http_tv(unsigned ms)
{
    return (struct timeval){.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
}

/* Accept again once neither the cap nor an accept error holds the listener. */
static void metrics_http_update_listener(struct metrics_http *h)
{
    if (h->paused_full && h->stats.clients < h->max_clients)
        h->paused_full = false;
    if (h->stats.clients <= h->max_clients / 2)
        h->full_logged = false;
    if (!h->paused_full && !h->paused_error)
        evconnlistener_enable(h->listener);
    else
        evconnlistener_disable(h->listener);
}

/* ---- the guard ----------------------------------------------------------------------------------- */

/* Log a refusal at info once per peer and reason in a row (a flood from one host logs once), else at
 * debug. */
static void metrics_http_note_refusal(struct metrics_http *h, const char *peer, const char *why)
{
    char key[sizeof(h->last_refusal)];
    snprintf(key, sizeof(key), "%s %s", peer, why);
    if (strcmp(key, h->last_refusal) == 0) {
        log_debug("%s: closed a connection from %s: %s", h->what, peer, why);
        return;
    }
    snprintf(h->last_refusal, sizeof(h->last_refusal), "%s", key);
    log_info("%s: closed a connection from %s: %s", h->what, peer, why);
}

/* Close `c` for the guard: shut its socket down, as the deadline does (evhttp frees it). */
static void metrics_http_turn_away(struct metrics_http_conn *c)
{
    c->turned_away = true;
    event_del(c->head_ev);
    shutdown(bufferevent_getfd(c->sock), SHUT_RDWR);
}

/* The guard's checks of `c`'s peer, once (later calls return the first verdict): in the allow list, and
 * fewer than per_source_max admitted connections from its address. Return true if it is admitted. */
static bool metrics_http_admit(struct metrics_http_conn *c)
{
    struct metrics_http *h = c->h;
    if (c->admitted || c->turned_away || !h)
        return c->admitted;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = bufferevent_getfd(c->sock);
    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &len) < 0 ||
        (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
        metrics_http_turn_away(c); /* already reset by the peer */
        return false;
    }
    c->family = ss.ss_family;
    if (c->family == AF_INET)
        memcpy(c->peer, &((struct sockaddr_in *)&ss)->sin_addr, 4);
    else
        memcpy(c->peer, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
    char peer[INET6_ADDRSTRLEN], why[96];
    inet_ntop(c->family, c->peer, peer, sizeof(peer));
    if (h->allow && !config_cidr_match(h->allow, h->n_allow, c->family, c->peer)) {
        h->stats.refused_allow++;
        snprintf(why, sizeof(why), "not in %s.allow", h->what);
        metrics_http_note_refusal(h, peer, why);
        metrics_http_turn_away(c);
        return false;
    }
    if (h->per_source_max) {
        unsigned same = 0;
        struct metrics_http_conn *o;
        LIST_FOREACH(o, &h->conns, link)
            same += o->admitted && o->family == c->family && memcmp(o->peer, c->peer, 16) == 0;
        if (same >= h->per_source_max) {
            h->stats.refused_source++;
            snprintf(why, sizeof(why), "it has %u connections open, the most one address may have", same);
            metrics_http_note_refusal(h, peer, why);
            metrics_http_turn_away(c);
            return false;
        }
    }
    c->admitted = true;
    if (h->head_deadline_ms) {
        struct timeval head = metrics_http_tv(h->head_deadline_ms);
        evtimer_add(c->head_ev, &head);
    }
    return true;
}

static void metrics_http_admit_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    metrics_http_admit(arg);
}

/* No complete request head within head_deadline_ms (of accept, or of the last answer): close it. */
static void metrics_http_head_cb(evutil_socket_t fd, short what, void *arg)
{
    struct metrics_http_conn *c = arg;
    (void)fd;
    (void)what;
    if (!c->served && !c->refused) {
        c->h->stats.timed_out++;
        log_debug("%s: a client sent no complete request head within %u ms; closing it", c->h->what,
                  c->h->head_deadline_ms);
    }
    shutdown(bufferevent_getfd(c->sock), SHUT_RDWR);
}

/* ---- requests ------------------------------------------------------------------------------------ */

/* Our record of the connection a request came on, or NULL. At most max_clients to look through. */
static struct metrics_http_conn *metrics_http_conn_of(struct metrics_http *h, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    struct metrics_http_conn *c;
    LIST_FOREACH(c, &h->conns, link)
        if (c->filter == bev)
            return c;
    return NULL;
}

/* Send `code` with a short text body and any headers already set. */
static void metrics_http_reply_text(struct evhttp_request *req, int code, const char *reason, const char *text)
{
    struct evbuffer *body = evbuffer_new();
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
    if (body)
        evbuffer_add_printf(body, "%d %s%s\n", code, reason, text);
    evhttp_send_reply(req, code, reason, body);
    if (body)
        evbuffer_free(body);
}

static void metrics_http_request_cb(struct evhttp_request *req, void *arg)
{
    struct metrics_http *h = arg;
    struct metrics_http_conn *c = metrics_http_conn_of(h, req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req);

    char hint[80];
    snprintf(hint, sizeof(hint), ": use GET %s%s", h->prefix, h->answer ? "<name>" : "");
    if (c && !metrics_http_admit(c)) { /* not reached in practice: the admission runs before any read */
        metrics_http_reply_text(req, 403, "Forbidden", "");
        return;
    }
    if (c && h->head_deadline_ms) { /* this head came in time; the next one has as long from now */
        struct timeval head = metrics_http_tv(h->head_deadline_ms);
        evtimer_add(c->head_ev, &head);
    }
    if (c)
        c->served = true;
    size_t plen = strlen(h->prefix);
    if (!path || (h->answer ? strncmp(path, h->prefix, plen) != 0 : strcmp(path, h->prefix) != 0)) {
        metrics_http_reply_text(req, HTTP_NOTFOUND, "Not Found", hint);
        return;
    }
    if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
        /* Not evhttp_send_error: it drops our headers, and a 405 must carry Allow (RFC 9110 15.5.6). */
        evhttp_add_header(headers, "Allow", "GET, HEAD");
        metrics_http_reply_text(req, 405, "Method Not Allowed", hint);
        return;
    }
    if (h->answer) {
        struct evbuffer *out = evbuffer_new();
        int code = out ? h->answer(h->arg, path + plen, evhttp_request_get_input_headers(req), headers, out) : HTTP_INTERNAL;
        evhttp_add_header(headers, "Cache-Control", "no-store");
        if (code == HTTP_NOTFOUND)
            metrics_http_reply_text(req, HTTP_NOTFOUND, "Not Found", "");
        else
            evhttp_send_reply(req, code, code == HTTP_OK ? "OK" : code == HTTP_NOCONTENT ? "No Content" : "Error",
                              method == EVHTTP_REQ_HEAD ? NULL : out);
        if (out)
            evbuffer_free(out);
        return;
    }
    char *text = h->render(h->arg);
    struct evbuffer *body = text ? evbuffer_new() : NULL;
    if (!body || evbuffer_add(body, text, strlen(text)) < 0) {
        log_warnx("metrics: cannot build the metrics text");
        metrics_http_reply_text(req, HTTP_INTERNAL, "Internal Server Error", "");
    } else {
        evhttp_add_header(headers, "Content-Type", METRICS_HTTP_CONTENT_TYPE);
        evhttp_add_header(headers, "Cache-Control", "no-store");
        if (method == EVHTTP_REQ_HEAD) {
            /* libevent 2.1 would send the body to a HEAD request: the headers only, with GET's length
             * (RFC 9110 9.3.2). */
            char length[32];
            snprintf(length, sizeof(length), "%zu", evbuffer_get_length(body));
            evhttp_add_header(headers, "Content-Length", length);
            evhttp_send_reply(req, HTTP_OK, "OK", NULL);
        } else {
            evhttp_send_reply(req, HTTP_OK, "OK", body);
        }
    }
    if (body)
        evbuffer_free(body);
    free(text);
}

/* ---- connections ---------------------------------------------------------------------------------- */

/* The filter's output side: passes evhttp's bytes to the socket bufferevent, but takes them out of
 * evhttp's buffer only once that bufferevent has written everything to the kernel. evhttp takes an empty
 * buffer for "the response is out" and may then free the connection, and libevent 2.1's filter reports
 * "written" as soon as its bytes are moved on: a plain pass-through would lose the response still
 * queued below. Bytes before our request callback ever ran on this connection are a response evhttp
 * made itself: a request it refused. */
static enum bufferevent_filter_result metrics_http_out_cb(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
                                                          enum bufferevent_flush_mode mode, void *arg)
{
    struct metrics_http_conn *c = arg;
    (void)limit; /* the socket bufferevent has no high watermark */
    (void)mode;
    if (evbuffer_get_length(dst) == 0) { /* what was copied before is in the kernel */
        evbuffer_drain(src, c->copied);
        c->copied = 0;
    }
    size_t len = evbuffer_get_length(src);
    if (len == c->copied) /* BEV_OK lets libevent call evhttp's write callback once src is empty */
        return len == 0 ? BEV_OK : BEV_NEED_MORE;
    if (!c->served && !c->refused && c->h) {
        c->refused = true;
        c->h->stats.bad_request++;
    }
    struct evbuffer_ptr pos;
    struct evbuffer_iovec v[16];
    evbuffer_ptr_set(src, &pos, c->copied, EVBUFFER_PTR_SET);
    int n = evbuffer_peek(src, -1, &pos, v, 16);
    for (int i = 0; i < n && i < 16; i++) { /* the rest on the next call, when dst has drained */
        if (evbuffer_add(dst, v[i].iov_base, v[i].iov_len) < 0)
            return BEV_ERROR;
        c->copied += v[i].iov_len;
    }
    return BEV_NEED_MORE;
}

/* evhttp queued bytes on the filter. libevent 2.1.12's filter moves bytes on only while writing is
 * enabled and does not look again when it is enabled later, which evhttp does right after queueing (a
 * 413 would wait forever): enable writing now. This callback runs before the filter's own (libevent
 * runs a buffer's callbacks newest first). */
static void metrics_http_queued_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    struct metrics_http_conn *c = arg;
    (void)buf;
    if (info->n_added > 0)
        bufferevent_enable(c->filter, EV_WRITE);
}

/* The whole connection's deadline, counted from accept: trickling a byte at a time does not extend it.
 * evhttp owns the connection, so make its socket fail instead of freeing anything: evhttp sees EOF (or a
 * failed write) and frees the connection, which ends in metrics_http_conn_gone_cb. */
static void metrics_http_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct metrics_http_conn *c = arg;
    (void)fd;
    (void)what;
    if (!c->served && !c->refused && !c->turned_away) {
        c->h->stats.timed_out++;
        log_debug("%s: a client sent no complete request within %u ms; closing it", c->h->what, c->h->deadline_ms);
    }
    shutdown(bufferevent_getfd(c->sock), SHUT_RDWR);
}

/* Free `c`'s events (each may be NULL) and forget them. */
static void metrics_http_conn_events_free(struct metrics_http_conn *c)
{
    struct event **evs[] = {&c->deadline_ev, &c->admit_ev, &c->head_ev};
    for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
        if (*evs[i])
            event_free(*evs[i]);
        *evs[i] = NULL;
    }
}

/* The filter's free_context: evhttp has freed the connection (libevent calls this from the loop after
 * bufferevent_free, before the socket bufferevent under it closes the fd). */
static void metrics_http_conn_gone_cb(void *arg)
{
    struct metrics_http_conn *c = arg;
    struct metrics_http *h = c->h;
    metrics_http_conn_events_free(c);
    if (h) {
        LIST_REMOVE(c, link);
        h->stats.clients--;
        metrics_http_update_listener(h);
    }
    free(c);
}

/* evhttp_set_bevcb: evhttp calls this for every accepted connection, before it gives the bufferevent its
 * fd. The filter (BEV_OPT_CLOSE_ON_FREE) frees the socket bufferevent, which (BEV_OPT_CLOSE_ON_FREE)
 * closes the fd; evhttp closes it itself only when its bufferevent lacks that option: once, either way. */
static struct bufferevent *metrics_http_bev_cb(struct event_base *base, void *arg)
{
    struct metrics_http *h = arg;
    struct metrics_http_conn *c = calloc(1, sizeof(*c));
    if (c) {
        c->deadline_ev = evtimer_new(base, metrics_http_deadline_cb, c);
        c->admit_ev = event_new(base, -1, 0, metrics_http_admit_cb, c);
        c->head_ev = evtimer_new(base, metrics_http_head_cb, c);
        c->sock = c->deadline_ev && c->admit_ev && c->head_ev ? bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE)
                                                              : NULL;
        c->filter = c->sock ? bufferevent_filter_new(c->sock, NULL, metrics_http_out_cb, BEV_OPT_CLOSE_ON_FREE,
                                                     metrics_http_conn_gone_cb, c)
                            : NULL;
    }
    if (c && c->filter && !evbuffer_add_cb(bufferevent_get_output(c->filter), metrics_http_queued_cb, c)) {
        bufferevent_free(c->filter); /* frees sock, and c through metrics_http_conn_gone_cb (c->h is NULL) */
        c = NULL;
    }
    if (!c || !c->filter) {
        /* evhttp then makes a plain bufferevent: this one connection goes uncounted, without deadline. */
        log_warnx("%s: out of memory accepting a connection", h->what);
        if (c && c->sock)
            bufferevent_free(c->sock);
        if (c)
            metrics_http_conn_events_free(c);
        free(c);
        return NULL;
    }
    c->h = h;
    LIST_INSERT_HEAD(&h->conns, c, link);
    h->stats.clients++;
    h->stats.accepted++;
    struct timeval deadline = metrics_http_tv(h->deadline_ms);
    evtimer_add(c->deadline_ev, &deadline);
    event_active(c->admit_ev, EV_TIMEOUT, 0); /* runs once evhttp has set the socket (see the top) */
    if (h->stats.clients >= h->max_clients && !h->paused_full) {
        /* Full: stop accepting (libevent's accept loop stops too) until a connection ends. */
        h->paused_full = true;
        h->stats.paused_full++;
        if (!h->full_logged)
            log_info("%s: %zu connections open; not accepting more until one ends", h->what, h->stats.clients);
        h->full_logged = true;
        evconnlistener_disable(h->listener);
    }
    return c->filter;
}

/* ---- accept errors --------------------------------------------------------------------------------- */

static void metrics_http_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct metrics_http *h = arg;
    struct timeval park = {.tv_sec = METRICS_HTTP_PARK_S};
    (void)fd;
    (void)what;
    h->paused_error = false;
    metrics_http_update_listener(h);
    evtimer_add(h->resume_ev, &park);
}

struct metrics_http_find {
    const struct evconnlistener *listener;
    struct metrics_http *h;
};

/* evhttp_bind_listener makes the listener pass evhttp's pointer to all its callbacks, the error callback
 * included, libevent 2.1 offers no way from there back to us, and no global may map it (house rule). So
 * our resume timer is always pending (parked for an hour while nothing is paused), and the error
 * callback finds it, and through it us, among the base's events. Accept errors are rare: the walk is
 * cheap enough. */
static int metrics_http_find_cb(const struct event_base *base, const struct event *ev, void *arg)
{
    struct metrics_http_find *f = arg;
    (void)base;
    if (event_get_callback(ev) != metrics_http_resume_cb)
        return 0;
    struct metrics_http *h = event_get_callback_arg(ev);
    if (h->listener != f->listener)
        return 0;
    f->h = h;
    return 1;
}

/* accept() failed (out of descriptors ...): pause instead of retrying at once, which would spin. */
static void metrics_http_accept_error_cb(struct evconnlistener *l, void *arg)
{
    int e = EVUTIL_SOCKET_ERROR();
    struct metrics_http_find f = {l, NULL};
    (void)arg; /* evhttp's, not ours */
    evconnlistener_disable(l);
    event_base_foreach_event(evconnlistener_get_base(l), metrics_http_find_cb, &f);
    if (!f.h) {
        log_warnx("http endpoint: accept: %s; the listener stays paused (its server is gone)", strerror(e));
        return;
    }
    struct metrics_http *h = f.h;
    h->stats.paused_accept_error++;
    log_warnx("%s: accept on %s: %s; pausing for %d ms", h->what, h->addr, strerror(e), METRICS_HTTP_ACCEPT_PAUSE_MS);
    h->paused_error = true;
    struct timeval pause = metrics_http_tv(METRICS_HTTP_ACCEPT_PAUSE_MS);
    evtimer_add(h->resume_ev, &pause);
}

/* ---- the server ------------------------------------------------------------------------------------- */

/* A listener on conf's address, disabled until evhttp_bind_listener gives it a callback. Returns it, or
 * NULL with err. */
static struct evconnlistener *metrics_http_listen(struct event_base *base, const char *what,
                                                  const struct metrics_conf *conf,
                                                  uint16_t *bound_port, char *err, size_t errlen)
{
    struct sockaddr_storage ss = {0};
    socklen_t sslen;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    int ok;
    if (conf->family == AF_INET6) {
        *s6 = (struct sockaddr_in6){.sin6_family = AF_INET6, .sin6_port = htons(conf->port)};
        ok = inet_pton(AF_INET6, conf->host, &s6->sin6_addr) == 1;
        sslen = sizeof(*s6);
    } else {
        *s4 = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(conf->port)};
        ok = inet_pton(AF_INET, conf->host, &s4->sin_addr) == 1;
        sslen = sizeof(*s4);
    }
    if (!ok) {
        snprintf(err, errlen, "%s.listen: %s is not an IP address", what, conf->host);
        return NULL;
    }
    unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC |
                     (conf->family == AF_INET6 ? LEV_OPT_BIND_IPV6ONLY : 0);
    struct evconnlistener *l =
        evconnlistener_new_bind(base, NULL, NULL, flags, METRICS_HTTP_BACKLOG, (struct sockaddr *)&ss, (int)sslen);
    if (!l || getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&ss, &sslen) < 0) {
        snprintf(err, errlen, "%s.listen: cannot listen on %s%s%s:%u: %s", what, conf->family == AF_INET6 ? "[" : "",
                 conf->host, conf->family == AF_INET6 ? "]" : "", (unsigned)conf->port, strerror(errno));
        if (l)
            evconnlistener_free(l);
        return NULL;
    }
    *bound_port = ntohs(conf->family == AF_INET6 ? s6->sin6_port : s4->sin_port);
    return l;
}

/* The server of metrics_http_new and metrics_http_serve: `render` or `answer` is set. */
static struct metrics_http *metrics_http_start(struct event_base *base, const struct metrics_conf *conf,
                                               const char *what, const char *prefix, char *(*render)(void *arg),
                                               metrics_http_answer_fn answer, void *arg, char *err, size_t errlen)
{
    struct metrics_http *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "%s.listen: out of memory", what);
        return NULL;
    }
    h->render = render;
    h->answer = answer;
    h->prefix = prefix;
    h->what = what;
    h->arg = arg;
    h->max_clients = METRICS_HTTP_MAX_CLIENTS;
    h->deadline_ms = METRICS_HTTP_DEADLINE_MS;
    LIST_INIT(&h->conns);
    struct evconnlistener *l = metrics_http_listen(base, what, conf, &h->port, err, errlen);
    if (!l) {
        free(h);
        return NULL;
    }
    snprintf(h->addr, sizeof(h->addr), "%s%s%s:%u", conf->family == AF_INET6 ? "[" : "", conf->host,
             conf->family == AF_INET6 ? "]" : "", (unsigned)h->port);
    h->http = evhttp_new(base);
    h->resume_ev = evtimer_new(base, metrics_http_resume_cb, h);
    if (h->http && h->resume_ev && evhttp_bind_listener(h->http, l)) {
        h->listener = l; /* evhttp_free frees it from now on */
    } else {
        evconnlistener_free(l);
        snprintf(err, errlen, "%s.listen: cannot serve HTTP on %s: out of memory", what, conf->listen);
        metrics_http_free(h);
        return NULL;
    }
    evconnlistener_set_error_cb(l, metrics_http_accept_error_cb);
    metrics_http_resume_cb(-1, 0, h); /* parks the resume timer */
    evhttp_set_bevcb(h->http, metrics_http_bev_cb, h);
    /* No per-read/write timeout from evhttp: the deadline bounds the whole connection. libevent 2.1.12
     * arms evhttp's timeout on the filter bufferevent and fires it after the filter is freed when the
     * client closed first (HTTP/1.0, "Connection: close"): a use after free in
     * bufferevent_decref_and_unlock_ (tests/integration/test_probe.sh covers it). */
    evhttp_set_timeout(h->http, -1);
    evhttp_set_max_headers_size(h->http, METRICS_HTTP_MAX_HEADERS);
    evhttp_set_max_body_size(h->http, METRICS_HTTP_MAX_BODY);
    /* The methods evhttp passes on: GET and HEAD are served, the other usual ones get our 405 with Allow;
     * the rest (TRACE, CONNECT, unknown) evhttp refuses with 501. */
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
    evhttp_set_gencb(h->http, metrics_http_request_cb, h);
    log_info("%s: serving http://%s%s", what, h->addr, prefix);
    return h;
}

struct metrics_http *metrics_http_new(struct event_base *base, const struct metrics_conf *conf,
                                      char *(*render)(void *arg), void *arg, char *err, size_t errlen)
{
    return metrics_http_start(base, conf, "metrics", "/metrics", render, NULL, arg, err, errlen);
}

struct metrics_http *metrics_http_serve(struct event_base *base, const struct metrics_conf *conf, const char *what,
                                        const char *prefix, metrics_http_answer_fn answer, void *arg, char *err,
                                        size_t errlen)
{
    return metrics_http_start(base, conf, what, prefix, NULL, answer, arg, err, errlen);
}

uint16_t metrics_http_port(const struct metrics_http *h)
{
    return h->port;
}

void metrics_http_set_limits(struct metrics_http *h, unsigned max_clients, unsigned deadline_ms)
{
    h->max_clients = max_clients;
    h->deadline_ms = deadline_ms;
}

int metrics_http_set_guard(struct metrics_http *h, const struct metrics_http_guard *g)
{
    struct config_cidr *allow = NULL;
    if (g->n_allow && !(allow = malloc(g->n_allow * sizeof(*allow))))
        return -1;
    if (allow)
        memcpy(allow, g->allow, g->n_allow * sizeof(*allow));
    free(h->allow);
    h->allow = allow;
    h->n_allow = g->n_allow;
    h->per_source_max = g->per_source_max;
    h->head_deadline_ms = g->head_deadline_ms;
    return 0;
}

void metrics_http_stats(const struct metrics_http *h, struct metrics_http_stats *out)
{
    *out = h->stats;
}

int metrics_http_metrics(const struct metrics_http *h, struct metrics *m)
{
    static const char conns[] = "onionfront_metrics_http_connections_total";
    static const char pauses[] = "onionfront_metrics_http_pauses_total";
    if (metrics_family(m, conns, METRICS_COUNTER,
                       "Connections to the metrics endpoint: accepted, and of those timed_out (closed at the "
                       "deadline before any answer) and bad_request (refused as malformed: 400, 413, 501).") < 0)
        return -1;
    if (h && (metrics_sample(m, conns, (const char *const[]){"result", "accepted", NULL}, (double)h->stats.accepted) ||
              metrics_sample(m, conns, (const char *const[]){"result", "timed_out", NULL}, (double)h->stats.timed_out) ||
              metrics_sample(m, conns, (const char *const[]){"result", "bad_request", NULL},
                             (double)h->stats.bad_request)))
        return -1;
    if (metrics_family(m, pauses, METRICS_COUNTER,
                       "Times the metrics endpoint stopped accepting: full (its connection cap) or "
                       "accept_error (out of file descriptors ...).") < 0)
        return -1;
    if (h && (metrics_sample(m, pauses, (const char *const[]){"reason", "full", NULL}, (double)h->stats.paused_full) ||
              metrics_sample(m, pauses, (const char *const[]){"reason", "accept_error", NULL},
                             (double)h->stats.paused_accept_error)))
        return -1;
    return 0;
}

void metrics_http_free(struct metrics_http *h)
{
    if (!h)
        return;
    /* evhttp frees its listener and connections; libevent frees each connection's filter, and with it
     * our record, later from the loop (or event_base_free): detach the records from h first. */
    if (h->http)
        evhttp_free(h->http);
    struct metrics_http_conn *c;
    while ((c = LIST_FIRST(&h->conns))) {
        LIST_REMOVE(c, link);
        c->h = NULL;
        metrics_http_conn_events_free(c);
    }
    if (h->resume_ev)
        event_free(h->resume_ev);
    free(h->allow);
    free(h);
}
