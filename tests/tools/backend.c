/* backend.c — a small test/demo backend on libevent: an HTTP server (evhttp) and a TCP echo server.
 * Used by `make demo`, the integration tests and the benchmarks as the site behind onionfront.
 *
 *   backend http ADDR:PORT [NAME]   GET / -> a small HTML page naming NAME; GET /bytes/N -> N bytes;
 *                                   GET /health -> "ok"; GET /slow/MS -> answers after MS ms
 *   backend echo ADDR:PORT          echoes every byte back; half-close is passed on
 *
 * Prints "listening on ADDR:PORT" once ready. Exits on SIGTERM/SIGINT. Not part of the daemon. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct backend {
    struct event_base *base;
    const char *name;
    unsigned long requests;
};

static void http_root_cb(struct evhttp_request *req, void *arg)
{
    struct backend *b = arg;
    struct evbuffer *out = evbuffer_new();
    b->requests++;
    evbuffer_add_printf(out,
                        "<!doctype html>\n<html><head><title>onionfront demo</title></head>\n"
                        "<body><h1>Hello from %s</h1>\n<p>This page reached you over a single onion "
                        "service published by onionfront.</p></body></html>\n",
                        b->name);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/html");
    evhttp_add_header(evhttp_request_get_output_headers(req), "X-Backend", b->name);
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
}

static void http_generic_cb(struct evhttp_request *req, void *arg)
{
    struct backend *b = arg;
    const char *uri = evhttp_request_get_uri(req);
    struct evbuffer *out = evbuffer_new();
    b->requests++;
    evhttp_add_header(evhttp_request_get_output_headers(req), "X-Backend", b->name);
    if (strncmp(uri, "/bytes/", 7) == 0) {
        long n = strtol(uri + 7, NULL, 10);
        if (n < 0 || n > (1L << 31)) {
            evhttp_send_error(req, 400, "bad size");
            evbuffer_free(out);
            return;
        }
        char chunk[4096];
        for (size_t i = 0; i < sizeof(chunk); i++)
            chunk[i] = (char)('a' + (i % 26));
        for (long left = n; left > 0; left -= (long)sizeof(chunk))
            evbuffer_add(out, chunk, left < (long)sizeof(chunk) ? (size_t)left : sizeof(chunk));
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/octet-stream");
        evhttp_send_reply(req, 200, "OK", out);
    } else if (strcmp(uri, "/health") == 0) {
        evbuffer_add_printf(out, "ok\n");
        evhttp_send_reply(req, 200, "OK", out);
    } else if (strcmp(uri, "/") == 0) {
        evbuffer_free(out);
        http_root_cb(req, arg);
        return;
    } else {
        evhttp_send_error(req, 404, "not found");
    }
    evbuffer_free(out);
}

static void echo_read_cb(struct bufferevent *bev, void *arg)
{
    (void)arg;
    bufferevent_write_buffer(bev, bufferevent_get_input(bev));
}

static void echo_event_cb(struct bufferevent *bev, short what, void *arg)
{
    (void)arg;
    if (what & BEV_EVENT_EOF) {
        /* Pass the half-close on once everything is written back. */
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
            shutdown(bufferevent_getfd(bev), SHUT_WR);
            bufferevent_free(bev);
        } else {
            bufferevent_disable(bev, EV_READ);
            bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
        }
        return;
    }
    if (what & BEV_EVENT_ERROR)
        bufferevent_free(bev);
}

static void echo_write_cb(struct bufferevent *bev, void *arg)
{
    (void)arg;
    if (!(bufferevent_get_enabled(bev) & EV_READ) && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        shutdown(bufferevent_getfd(bev), SHUT_WR);
        bufferevent_free(bev);
    }
}

static void echo_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
    struct backend *b = arg;
    (void)l;
    (void)sa;
    (void)len;
    b->requests++;
    struct bufferevent *bev = bufferevent_socket_new(b->base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(bev, echo_read_cb, echo_write_cb, echo_event_cb, b);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void stop_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "http") != 0 && strcmp(argv[1], "echo") != 0)) {
        fprintf(stderr, "usage: backend http|echo ADDR:PORT [NAME]\n");
        return 2;
    }
    struct sockaddr_storage ss;
    int sslen = sizeof(ss);
    if (evutil_parse_sockaddr_port(argv[2], (struct sockaddr *)&ss, &sslen) < 0) {
        fprintf(stderr, "backend: bad address %s\n", argv[2]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct backend b = {.base = event_base_new(), .name = argc > 3 ? argv[3] : "backend"};
    struct event *sigterm = evsignal_new(b.base, SIGTERM, stop_cb, b.base);
    struct event *sigint = evsignal_new(b.base, SIGINT, stop_cb, b.base);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);
    struct evhttp *http = NULL;
    struct evconnlistener *l = NULL;
    if (strcmp(argv[1], "http") == 0) {
        http = evhttp_new(b.base);
        evhttp_set_gencb(http, http_generic_cb, &b);
        struct evconnlistener *hl = evconnlistener_new_bind(b.base, NULL, NULL, LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE,
                                                            128, (struct sockaddr *)&ss, sslen);
        if (!hl || !evhttp_bind_listener(http, hl)) {
            fprintf(stderr, "backend: cannot listen on %s\n", argv[2]);
            return 1;
        }
    } else {
        l = evconnlistener_new_bind(b.base, echo_accept_cb, &b, LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE, 128,
                                    (struct sockaddr *)&ss, sslen);
        if (!l) {
            fprintf(stderr, "backend: cannot listen on %s\n", argv[2]);
            return 1;
        }
    }
    printf("listening on %s\n", argv[2]);
    fflush(stdout);
    event_base_dispatch(b.base);
    if (http)
        evhttp_free(http);
    if (l)
        evconnlistener_free(l);
    event_free(sigterm);
    event_free(sigint);
    event_base_free(b.base);
    return 0;
}
