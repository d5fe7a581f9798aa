/* metrics_http.c — GET /metrics over a small HTTP/1.x server on a loopback port (see metrics_http.h for
 * what it answers and the bounds on each peer).
 *
 * Owns the listener, the connections (each: one bufferevent and one deadline timer) and the request
 * head parser. Each connection is answered once and then closed: the response is written, the sending
 * side shut down, and what the client still sends is read and dropped until it closes too (closing at
 * once with unread bytes would reset the connection and could destroy the response). Connections end
 * from a deferred event, never inside their own callbacks. */
#include "sidecar/metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sidecar/config.h"
#include "sidecar/log.h"
#include "sidecar/metrics.h"

#define METRICS_HTTP_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_HTTP_BACKLOG 16

/* ---- the request head parser (pure) -------------------------------------------------------------- */

/* The length of the head (through its empty line) at the start of buf, or 0 if it has not ended. */
static size_t metrics_http_head_len(const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != '\n')
            continue;
        /* An empty line: "\n" right after the previous "\n", or "\r\n" after it. */
        if (i >= 1 && buf[i - 1] == '\n')
            return i + 1;
        if (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')
            return i + 1;
    }
    return 0;
}

enum metrics_http_parse metrics_http_parse_head(const char *buf, size_t len, struct metrics_http_head *head)
{
    size_t scan = len < METRICS_HTTP_MAX_HEADERS ? len : METRICS_HTTP_MAX_HEADERS;
    if (metrics_http_head_len(buf, scan) == 0)
        return len >= METRICS_HTTP_MAX_HEADERS ? METRICS_HTTP_TOO_LARGE : METRICS_HTTP_INCOMPLETE;
    const char *eol = memchr(buf, '\n', scan); /* found: the head has ended */
    size_t n = (size_t)(eol - buf);
    if (n > 0 && buf[n - 1] == '\r')
        n--;
    /* RFC 9112 3: request-line = method SP request-target SP HTTP-version */
    size_t m = 0;
    while (m < n && m < 16 && buf[m] >= 'A' && buf[m] <= 'Z')
        m++;
    if (m == 0 || m >= n || buf[m] != ' ')
        return METRICS_HTTP_BAD;
    const char *target = buf + m + 1;
    size_t t = 0;
    while (m + 1 + t < n && (unsigned char)target[t] > 0x20 && (unsigned char)target[t] < 0x7f)
        t++;
    const char *version = target + t + 1;
    if (t == 0 || m + 1 + t + 9 != n || target[t] != ' ' || memcmp(version, "HTTP/1.", 7) != 0 ||
        version[7] < '0' || version[7] > '9')
        return METRICS_HTTP_BAD;
    size_t path = 0;
    while (path < t && target[path] != '?' && target[path] != '#')
        path++;
    head->is_metrics = path == 8 && memcmp(target, "/metrics", 8) == 0;
    head->method = m == 3 && memcmp(buf, "GET", 3) == 0    ? METRICS_HTTP_GET
                   : m == 4 && memcmp(buf, "HEAD", 4) == 0 ? METRICS_HTTP_HEAD
                                                          : METRICS_HTTP_OTHER;
    head->minor = version[7] - '0';
    return METRICS_HTTP_OK;
}

/* ---- the server ------------------------------------------------------------------------------------ */

struct metrics_http_conn {
    TAILQ_ENTRY(metrics_http_conn) link;
    struct metrics_http *h;
    struct bufferevent *bev;
    struct event *deadline_ev;
    bool answered; /* the response is queued; input is read and dropped from now on */
    bool eof;      /* the client sends nothing more */
    bool dead;     /* freed by the reap event */
};

struct metrics_http {
    struct event_base *base;
    struct evconnlistener *listener;
    struct event *resume_ev; /* re-enables accepting after an accept error */
    struct event *reap_ev;   /* frees dead connections outside their callbacks */
    char *(*render)(void *arg);
    void *arg;
    uint16_t port;
    char addr[64]; /* for logs */
    unsigned max_clients, deadline_ms;
    bool paused_full, paused_error;
    bool full_logged; /* "full" was logged; again only after falling to half the cap */
    TAILQ_HEAD(, metrics_http_conn) conns;
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

static void metrics_http_conn_free(struct metrics_http_conn *c)
{
    struct metrics_http *h = c->h;
    TAILQ_REMOVE(&h->conns, c, link);
    h->stats.clients--;
    bufferevent_free(c->bev);
    event_free(c->deadline_ev);
    free(c);
}

static void metrics_http_reap_cb(evutil_socket_t fd, short what, void *arg)
{
    struct metrics_http *h = arg;
    (void)fd;
    (void)what;
    struct metrics_http_conn *c, *next;
    for (c = TAILQ_FIRST(&h->conns); c; c = next) {
        next = TAILQ_NEXT(c, link);
        if (c->dead)
            metrics_http_conn_free(c);
    }
    metrics_http_update_listener(h);
}

static void metrics_http_conn_kill(struct metrics_http_conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    event_del(c->deadline_ev);
    event_active(c->h->reap_ev, 0, 0);
}

/* Queue the one response of this connection. `extra` holds more header lines ("Name: value\r\n"). */
static void metrics_http_respond(struct metrics_http_conn *c, int code, const char *reason, const char *type,
                                 const char *extra, const char *body, size_t body_len, bool send_body)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    c->answered = true;
    if (evbuffer_add_printf(out,
                            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
                            code, reason, type, body_len, extra ? extra : "") < 0 ||
        (send_body && body_len > 0 && evbuffer_add(out, body, body_len) < 0)) {
        log_warnx("metrics: out of memory for a response; closing the connection");
        metrics_http_conn_kill(c);
    }
}

static void metrics_http_respond_text(struct metrics_http_conn *c, int code, const char *reason, const char *extra,
                                      const char *text)
{
    metrics_http_respond(c, code, reason, "text/plain; charset=utf-8", extra, text, strlen(text), true);
}

/* A complete head: route it. */
static void metrics_http_serve(struct metrics_http_conn *c, const struct metrics_http_head *head)
{
    if (!head->is_metrics) {
        metrics_http_respond_text(c, 404, "Not Found", NULL, "404 Not Found: use GET /metrics\n");
        return;
    }
    if (head->method == METRICS_HTTP_OTHER) {
        /* RFC 9110 15.5.6: a 405 carries Allow. */
        metrics_http_respond_text(c, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n",
                                  "405 Method Not Allowed: use GET /metrics\n");
        return;
    }
    char *text = c->h->render(c->h->arg);
    if (!text) {
        log_warnx("metrics: cannot build the metrics text");
        metrics_http_respond_text(c, 500, "Internal Server Error", NULL, "500 Internal Server Error\n");
        return;
    }
    /* HEAD: the headers only, with GET's length (RFC 9110 9.3.2). */
    metrics_http_respond(c, 200, "OK", METRICS_HTTP_CONTENT_TYPE, "Cache-Control: no-store\r\n", text, strlen(text),
                         head->method == METRICS_HTTP_GET);
    free(text);
}

/* Look at what has arrived: answer once the head is complete (or is bad), or drop input after that. */
static void metrics_http_process(struct metrics_http_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    if (c->answered) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    size_t len = evbuffer_get_length(in);
    size_t n = len < METRICS_HTTP_MAX_HEADERS ? len : METRICS_HTTP_MAX_HEADERS;
    const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)n);
    struct metrics_http_head head;
    switch (p || n == 0 ? metrics_http_parse_head(p ? p : "", n, &head) : METRICS_HTTP_BAD) {
    case METRICS_HTTP_INCOMPLETE:
        if (c->eof) /* the client stopped before a complete head */
            metrics_http_conn_kill(c);
        return;
    case METRICS_HTTP_BAD:
        c->h->stats.bad_request++;
        metrics_http_respond_text(c, 400, "Bad Request", NULL, "400 Bad Request\n");
        break;
    case METRICS_HTTP_TOO_LARGE:
        c->h->stats.bad_request++;
        metrics_http_respond_text(c, 431, "Request Header Fields Too Large", NULL,
                                  "431 Request Header Fields Too Large\n");
        break;
    case METRICS_HTTP_OK:
        metrics_http_serve(c, &head);
        break;
    }
    evbuffer_drain(in, evbuffer_get_length(in));
    /* From now on read without a bound, dropping everything (see the top of the file). */
    bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
}

static void metrics_http_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    metrics_http_process(arg);
}

/* The output has drained (the write low watermark is 0): the response is out. */
static void metrics_http_write_cb(struct bufferevent *bev, void *arg)
{
    struct metrics_http_conn *c = arg;
    if (!c->answered || c->dead)
        return;
    if (c->eof || shutdown(bufferevent_getfd(bev), SHUT_WR) < 0)
        metrics_http_conn_kill(c);
}

static void metrics_http_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct metrics_http_conn *c = arg;
    if ((what & BEV_EVENT_EOF) && (what & BEV_EVENT_READING)) {
        c->eof = true;
        if (!c->answered)
            metrics_http_process(c); /* a request without anything after it ("echo ... | nc") */
        if (!c->dead && (!c->answered || evbuffer_get_length(bufferevent_get_output(bev)) == 0))
            metrics_http_conn_kill(c);
        return;
    }
    metrics_http_conn_kill(c);
}

/* The whole connection's deadline, counted from accept: trickling a byte at a time does not extend it. */
static void metrics_http_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct metrics_http_conn *c = arg;
    (void)fd;
    (void)what;
    if (!c->answered) {
        c->h->stats.timed_out++;
        log_debug("metrics: a client sent no complete request within %u ms; closing it", c->h->deadline_ms);
    }
    metrics_http_conn_kill(c);
}

static void metrics_http_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                                   void *arg)
{
    struct metrics_http *h = arg;
    (void)l;
    (void)sa;
    (void)salen;
    struct metrics_http_conn *c = calloc(1, sizeof(*c));
    if (c) {
        c->bev = bufferevent_socket_new(h->base, fd, BEV_OPT_CLOSE_ON_FREE);
        c->deadline_ev = evtimer_new(h->base, metrics_http_deadline_cb, c);
    }
    if (!c || !c->bev || !c->deadline_ev) {
        log_warnx("metrics: out of memory accepting a connection");
        if (c && c->bev)
            bufferevent_free(c->bev);
        else
            close(fd);
        if (c && c->deadline_ev)
            event_free(c->deadline_ev);
        free(c);
        return;
    }
    c->h = h;
    TAILQ_INSERT_TAIL(&h->conns, c, link);
    h->stats.clients++;
    h->stats.accepted++;
    bufferevent_setcb(c->bev, metrics_http_read_cb, metrics_http_write_cb, metrics_http_event_cb, c);
    bufferevent_setwatermark(c->bev, EV_READ, 0, METRICS_HTTP_MAX_HEADERS);
    struct timeval deadline = metrics_http_tv(h->deadline_ms);
    evtimer_add(c->deadline_ev, &deadline);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    if (h->stats.clients >= h->max_clients && !h->paused_full) {
        /* Full: stop accepting (libevent's accept loop stops too) until a connection ends. */
        h->paused_full = true;
        h->stats.paused_full++;
        if (!h->full_logged)
            log_info("metrics: %zu connections open; not accepting more until one ends", h->stats.clients);
        h->full_logged = true;
        evconnlistener_disable(l);
    }
}

static void metrics_http_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct metrics_http *h = arg;
    (void)fd;
    (void)what;
    h->paused_error = false;
    metrics_http_update_listener(h);
}

/* accept() failed (out of descriptors ...): pause instead of retrying at once, which would spin. */
static void metrics_http_accept_error_cb(struct evconnlistener *l, void *arg)
{
    struct metrics_http *h = arg;
    int e = EVUTIL_SOCKET_ERROR();
    h->stats.paused_accept_error++;
    log_warnx("metrics: accept on %s: %s; pausing for %d ms", h->addr, strerror(e), METRICS_HTTP_ACCEPT_PAUSE_MS);
    h->paused_error = true;
    evconnlistener_disable(l);
    struct timeval pause = metrics_http_tv(METRICS_HTTP_ACCEPT_PAUSE_MS);
    evtimer_add(h->resume_ev, &pause);
}

/* A non-blocking listening socket on host:port. Returns the fd, or -1 with err. */
static int metrics_http_socket(const struct metrics_conf *conf, uint16_t *bound_port, char *err, size_t errlen)
{
    struct sockaddr_storage ss = {0};
    socklen_t sslen;
    if (conf->family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(conf->port);
        if (inet_pton(AF_INET6, conf->host, &s6->sin6_addr) != 1)
            goto bad_host;
        sslen = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons(conf->port);
        if (inet_pton(AF_INET, conf->host, &s4->sin_addr) != 1)
            goto bad_host;
        sslen = sizeof(*s4);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0) {
        snprintf(err, errlen, "metrics.listen: socket(): %s", strerror(errno));
        return -1;
    }
    if (ss.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&ss, sslen) < 0 || listen(fd, METRICS_HTTP_BACKLOG) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sslen) < 0) {
        snprintf(err, errlen, "metrics.listen: cannot listen on %s%s%s:%u: %s", conf->family == AF_INET6 ? "[" : "",
                 conf->host, conf->family == AF_INET6 ? "]" : "", (unsigned)conf->port, strerror(errno));
        close(fd);
        return -1;
    }
    *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
bad_host:
    snprintf(err, errlen, "metrics.listen: %s is not an IP address", conf->host);
    return -1;
}

struct metrics_http *metrics_http_new(struct event_base *base, const struct metrics_conf *conf,
                                      char *(*render)(void *arg), void *arg, char *err, size_t errlen)
{
    struct metrics_http *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "metrics.listen: out of memory");
        return NULL;
    }
    h->base = base;
    h->render = render;
    h->arg = arg;
    h->max_clients = METRICS_HTTP_MAX_CLIENTS;
    h->deadline_ms = METRICS_HTTP_DEADLINE_MS;
    TAILQ_INIT(&h->conns);
    int fd = metrics_http_socket(conf, &h->port, err, errlen);
    if (fd < 0) {
        free(h);
        return NULL;
    }
    snprintf(h->addr, sizeof(h->addr), "%s%s%s:%u", conf->family == AF_INET6 ? "[" : "", conf->host,
             conf->family == AF_INET6 ? "]" : "", (unsigned)h->port);
    h->listener = evconnlistener_new(base, metrics_http_accept_cb, h, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                     0 /* listening already */, fd);
    if (!h->listener)
        close(fd);
    h->resume_ev = evtimer_new(base, metrics_http_resume_cb, h);
    h->reap_ev = event_new(base, -1, 0, metrics_http_reap_cb, h);
    if (!h->listener || !h->resume_ev || !h->reap_ev) {
        snprintf(err, errlen, "metrics.listen: cannot serve HTTP on %s: out of memory", conf->listen);
        metrics_http_free(h);
        return NULL;
    }
    evconnlistener_set_error_cb(h->listener, metrics_http_accept_error_cb);
    log_info("metrics: serving http://%s/metrics", h->addr);
    return h;
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

void metrics_http_stats(const struct metrics_http *h, struct metrics_http_stats *out)
{
    *out = h->stats;
}

int metrics_http_metrics(const struct metrics_http *h, struct metrics *m)
{
    static const char conns[] = "onionfront_metrics_http_connections_total";
    static const char pauses[] = "onionfront_metrics_http_pauses_total";
    if (metrics_family(m, conns, METRICS_COUNTER,
                       "Connections to the metrics endpoint: accepted, and of those timed_out (no complete "
                       "request within the deadline) and bad_request (400 or 431).") < 0)
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
    while (!TAILQ_EMPTY(&h->conns))
        metrics_http_conn_free(TAILQ_FIRST(&h->conns));
    if (h->listener)
        evconnlistener_free(h->listener);
    if (h->resume_ev)
        event_free(h->resume_ev);
    if (h->reap_ev)
        event_free(h->reap_ev);
    free(h);
}
