/* metrics_http.h — the optional Prometheus endpoint: GET /metrics on a loopback TCP port, answered with
 * text/plain; version=0.0.4 from a render function main.c supplies.
 *
 * Owns the listening socket, its connections and the small HTTP/1.x server that answers them. Does not
 * know any metric (the render function builds the text) nor check the address (config.c allows
 * loopback addresses only: the endpoint has no authentication). GET or HEAD /metrics (any query
 * string) → 200; another method on /metrics → 405; any other path → 404; a malformed request → 400; a
 * request head over METRICS_HTTP_MAX_HEADERS bytes → 431. Every response ends the connection
 * ("Connection: close"), which Prometheus handles.
 *
 * Bounded for every peer (issue 15): at most METRICS_HTTP_MAX_CLIENTS connections at once — at the cap
 * the listener stops accepting (waiting connections stay in the kernel's backlog and cost no
 * descriptor) until one ends; each connection has METRICS_HTTP_DEADLINE_MS from accept to be answered
 * and closed, however slowly it trickles bytes; an accept error (out of descriptors ...) pauses the
 * listener for METRICS_HTTP_ACCEPT_PAUSE_MS instead of retrying at once.
 *
 * Why not libevent's evhttp: in libevent 2.1 evhttp offers no way to learn when a server connection
 * ends (evhttp_set_newreqcb and connection limits came in 2.2), so it can neither cap connections
 * nor put a deadline on a whole connection, and its own listener has no accept error callback. */
#ifndef ONIONFRONT_METRICS_HTTP_H
#define ONIONFRONT_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct metrics;
struct metrics_conf;
struct metrics_http;

#define METRICS_HTTP_MAX_CLIENTS 32        /* connections at once (see fdbudget.h) */
#define METRICS_HTTP_DEADLINE_MS 10000     /* from accept to the end of the connection */
#define METRICS_HTTP_ACCEPT_PAUSE_MS 1000  /* after an accept error */
#define METRICS_HTTP_MAX_HEADERS 16384     /* bytes of request line and headers */

/* Listen on conf->host:conf->port (port 0: any free port, see metrics_http_port) and serve `render`:
 * called once per request, it returns malloc'd Prometheus text (freed here) or NULL (→ 500). Return the
 * server, or NULL with a message naming the address in `err`. */
struct metrics_http *metrics_http_new(struct event_base *base, const struct metrics_conf *conf,
                                      char *(*render)(void *arg), void *arg, char *err, size_t errlen);

/* The port listened on. */
uint16_t metrics_http_port(const struct metrics_http *h);

/* Replace METRICS_HTTP_MAX_CLIENTS and METRICS_HTTP_DEADLINE_MS for connections from now on (tests). */
void metrics_http_set_limits(struct metrics_http *h, unsigned max_clients, unsigned deadline_ms);

/* Counters for tests and metrics. */
struct metrics_http_stats {
    unsigned long accepted, timed_out, bad_request, paused_full, paused_accept_error;
    size_t clients; /* connected now */
};
void metrics_http_stats(const struct metrics_http *h, struct metrics_http_stats *out);

/* Append onionfront_metrics_http_connections_total{result="accepted"|"timed_out"|"bad_request"} and
 * onionfront_metrics_http_pauses_total{reason="full"|"accept_error"}; the families without samples
 * when h is NULL (no endpoint). Return 0 or -1. */
int metrics_http_metrics(const struct metrics_http *h, struct metrics *m);

/* Stop listening, close open connections, free. NULL is a no-op. */
void metrics_http_free(struct metrics_http *h);

/* ---- the request head parser (pure; exposed for tests and the fuzzer) ---- */

enum metrics_http_parse {
    METRICS_HTTP_INCOMPLETE, /* no end of the head yet, and fewer than METRICS_HTTP_MAX_HEADERS bytes */
    METRICS_HTTP_OK,         /* *head filled */
    METRICS_HTTP_BAD,        /* not "METHOD SP target SP HTTP/1.x" (→ 400) */
    METRICS_HTTP_TOO_LARGE,  /* no end of the head within METRICS_HTTP_MAX_HEADERS bytes (→ 431) */
};

enum metrics_http_method { METRICS_HTTP_GET, METRICS_HTTP_HEAD, METRICS_HTTP_OTHER };

struct metrics_http_head {
    enum metrics_http_method method;
    bool is_metrics; /* the path (before any "?") is exactly "/metrics" */
    int minor;       /* HTTP/1.<minor> */
};

/* Parse the request head at the start of `buf` (`len` bytes, need not be NUL-terminated, any bytes):
 * the request line and the headers up to an empty line (CRLF or bare LF). Headers are not
 * interpreted: a scrape has no body, and the connection closes after the response. */
enum metrics_http_parse metrics_http_parse_head(const char *buf, size_t len, struct metrics_http_head *head);

#endif
