/* metrics_http.c — GET /metrics over evhttp on a loopback port (see metrics_http.h). */
#include "sidecar/metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sidecar/config.h"
#include "sidecar/log.h"

#define METRICS_HTTP_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics_http {
    struct evhttp *http;
    char *(*render)(void *arg);
    void *arg;
    uint16_t port;
};

static void metrics_http_request_cb(struct evhttp_request *req, void *arg)
{
    struct metrics_http *h = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req);

    if (!path || strcmp(path, "/metrics") != 0) {
        evhttp_send_error(req, HTTP_NOTFOUND, "Not Found");
        return;
    }
    if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
        /* Not evhttp_send_error: it drops our headers, and a 405 must carry Allow (RFC 9110 15.5.6). */
        struct evbuffer *msg = evbuffer_new();
        evhttp_add_header(headers, "Allow", "GET, HEAD");
        evhttp_add_header(headers, "Content-Type", "text/plain; charset=utf-8");
        evhttp_add_header(headers, "Connection", "close");
        if (msg)
            evbuffer_add_printf(msg, "405 Method Not Allowed: use GET /metrics\n");
        evhttp_send_reply(req, 405, "Method Not Allowed", msg);
        if (msg)
            evbuffer_free(msg);
        return;
    }
    char *text = h->render(h->arg);
    struct evbuffer *body = text ? evbuffer_new() : NULL;
    if (!body || evbuffer_add(body, text, strlen(text)) < 0) {
        log_warnx("metrics: cannot build the metrics text");
        evhttp_send_error(req, HTTP_INTERNAL, "Internal Server Error");
    } else {
        evhttp_add_header(headers, "Content-Type", METRICS_HTTP_CONTENT_TYPE);
        evhttp_add_header(headers, "Cache-Control", "no-store");
        if (method == EVHTTP_REQ_HEAD) {
            /* libevent 2.1 would send the body to a HEAD request: the headers only, with GET's length. */
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
        bind(fd, (struct sockaddr *)&ss, sslen) < 0 || listen(fd, 16) < 0 ||
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
    h->render = render;
    h->arg = arg;
    int fd = metrics_http_socket(conf, &h->port, err, errlen);
    if (fd < 0) {
        free(h);
        return NULL;
    }
    h->http = evhttp_new(base);
    if (!h->http)
        close(fd);
    /* On failure evhttp_accept_socket_with_handle may or may not have closed fd (it depends on which
     * allocation failed): leaking it on that out-of-memory path is better than closing it twice. */
    if (!h->http || !evhttp_accept_socket_with_handle(h->http, fd)) {
        snprintf(err, errlen, "metrics.listen: cannot serve HTTP on %s: out of memory", conf->listen);
        metrics_http_free(h);
        return NULL;
    }
    evhttp_set_timeout(h->http, METRICS_HTTP_TIMEOUT_S);
    evhttp_set_max_headers_size(h->http, METRICS_HTTP_MAX_HEADERS);
    evhttp_set_max_body_size(h->http, 4096); /* a scrape has no body */
    evhttp_set_gencb(h->http, metrics_http_request_cb, h);
    log_info("metrics: serving http://%s%s%s:%u/metrics", conf->family == AF_INET6 ? "[" : "", conf->host,
             conf->family == AF_INET6 ? "]" : "", (unsigned)h->port);
    return h;
}

uint16_t metrics_http_port(const struct metrics_http *h)
{
    return h->port;
}

void metrics_http_free(struct metrics_http *h)
{
    if (!h)
        return;
    if (h->http)
        evhttp_free(h->http);
    free(h);
}
