/* metrics_http.h — the optional Prometheus endpoint: GET /metrics on a loopback TCP port, answered with
 * text/plain; version=0.0.4 from a render function main.c supplies.
 *
 * Served by libevent's evhttp. This module owns the listening socket (so that it can pause it), the
 * count and the deadline of the connections, and the routing: GET or HEAD /metrics (any query string) →
 * 200; another method on /metrics → 405 with Allow; any other path → 404. evhttp answers what it
 * refuses itself: a malformed request or a request head over METRICS_HTTP_MAX_HEADERS bytes → 400, a body
 * over METRICS_HTTP_MAX_BODY → 413, a method it does not know → 501. Connections may be kept alive
 * (HTTP/1.1) within the deadline below. Does not know any metric (the render function builds the text)
 * nor check the address (config.c allows loopback addresses only: the endpoint has no authentication).
 *
 * Bounded for every peer (issue 15): at most METRICS_HTTP_MAX_CLIENTS connections at once — at the cap
 * the listener stops accepting (waiting connections stay in the kernel's backlog and cost no
 * descriptor) until one ends; each connection lives at most METRICS_HTTP_DEADLINE_MS from accept, however
 * slowly it trickles bytes; an accept error (out of descriptors ...) pauses the listener for
 * METRICS_HTTP_ACCEPT_PAUSE_MS instead of retrying at once.
 *
 * A server reachable from other hosts (onion_location.listen) adds a guard (metrics_http_set_guard): an
 * allow list of peer networks (anyone else is closed at once, before a byte is read), a cap on the
 * connections from one peer address (the next from it is closed at once, so one host cannot take every
 * slot and make the others wait for the deadline), and a deadline for each request head (request line
 * and headers), from accept and from each answer on a kept-alive connection. Both deadlines are libevent
 * timers, on the monotonic clock. */
#ifndef ONIONFRONT_METRICS_HTTP_H
#define ONIONFRONT_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sidecar/core/fdbudget.h"

struct config_cidr;
struct event_base;
struct metrics;
struct metrics_conf;
struct metrics_http;

#define METRICS_HTTP_MAX_CLIENTS FDBUDGET_METRICS_CLIENTS /* connections at once: fdbudget.h's share */
#define METRICS_HTTP_DEADLINE_MS 10000     /* from accept to the end of the connection */
#define METRICS_HTTP_ACCEPT_PAUSE_MS 1000  /* after an accept error */
#define METRICS_HTTP_MAX_HEADERS 16384     /* bytes of request line and headers */
#define METRICS_HTTP_MAX_BODY 4096         /* a scrape has none; a 405 reads this much at most */

/* Listen on conf->host:conf->port (port 0: any free port, see metrics_http_port) and serve `render`:
 * called once per request, it returns malloc'd Prometheus text (freed here) or NULL (→ 500). Return the
 * server, or NULL with a message naming the address in `err`. */
struct metrics_http *metrics_http_new(struct event_base *base, const struct metrics_conf *conf,
                                      char *(*render)(void *arg), void *arg, char *err, size_t errlen);

/* The answer of a metrics_http_serve server to GET or HEAD <prefix><rest> with the request's headers `in`:
 * fill `headers` and `body`, return the status (200, 204: body not sent, 404: a plain "not found"). */
struct evkeyvalq;
struct evbuffer;
typedef int (*metrics_http_answer_fn)(void *arg, const char *rest, const struct evkeyvalq *in,
                                      struct evkeyvalq *headers, struct evbuffer *body);

/* The same server with the same bounds for another use: GET or HEAD of any path under `prefix` goes to
 * `answer`; other paths 404, other methods 405. `what` names it in messages and logs ("onion_location":
 * "onion_location.listen: cannot listen on ..."); `what` and `prefix` must outlive the server. */
struct metrics_http *metrics_http_serve(struct event_base *base, const struct metrics_conf *conf, const char *what,
                                        const char *prefix, metrics_http_answer_fn answer, void *arg, char *err,
                                        size_t errlen);

/* The port listened on. */
uint16_t metrics_http_port(const struct metrics_http *h);

/* Replace METRICS_HTTP_MAX_CLIENTS and METRICS_HTTP_DEADLINE_MS for connections from now on (tests). */
void metrics_http_set_limits(struct metrics_http *h, unsigned max_clients, unsigned deadline_ms);

/* Who may connect and how fast a request head must come (metrics_http_set_guard). */
struct metrics_http_guard {
    const struct config_cidr *allow; /* the peers' networks (copied); NULL with n_allow 0: anyone */
    size_t n_allow;
    unsigned per_source_max;   /* connections at once from one peer address; 0: only the overall cap */
    unsigned head_deadline_ms; /* for each request head, from accept or the previous answer; 0: none */
};

/* Apply `g` to connections accepted from now on. Return 0, or -1 when out of memory (the old guard
 * stays). */
int metrics_http_set_guard(struct metrics_http *h, const struct metrics_http_guard *g);

/* Counters for tests and metrics. */
struct metrics_http_stats {
    unsigned long accepted, timed_out, bad_request, paused_full, paused_accept_error;
    unsigned long refused_allow;  /* closed at once: the peer is not in the guard's allow list */
    unsigned long refused_source; /* closed at once: its peer address had per_source_max open */
    size_t clients; /* connected now */
};
void metrics_http_stats(const struct metrics_http *h, struct metrics_http_stats *out);

/* Append onionfront_metrics_http_connections_total{result="accepted"|"timed_out"|"bad_request"} (timed_out:
 * closed at the deadline before any answer; bad_request: answered by evhttp itself before any answer of
 * ours — 400, 413, 501) and
 * onionfront_metrics_http_pauses_total{reason="full"|"accept_error"}; the families without samples
 * when h is NULL (no endpoint). Return 0 or -1. */
int metrics_http_metrics(const struct metrics_http *h, struct metrics *m);

/* Stop listening, close open connections, free. NULL is a no-op. */
void metrics_http_free(struct metrics_http *h);

#endif
