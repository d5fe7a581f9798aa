/* metrics_http.h — the optional Prometheus endpoint: GET /metrics on a loopback TCP port (libevent's
 * evhttp), answered with text/plain; version=0.0.4 from a render function main.c supplies.
 *
 * Owns the listening socket and the evhttp server. Does not know any metric (the render function
 * builds the text) nor check the address (config.c allows loopback addresses only: the endpoint has no
 * authentication). GET or HEAD /metrics (any query string) → 200; another method on /metrics → 405;
 * any other path → 404. */
#ifndef ONIONFRONT_METRICS_HTTP_H
#define ONIONFRONT_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct metrics_conf;
struct metrics_http;

#define METRICS_HTTP_TIMEOUT_S 10       /* a connection that sends no complete request in this time */
#define METRICS_HTTP_MAX_HEADERS 16384  /* bytes of request headers */

/* Listen on conf->host:conf->port (port 0: any free port, see metrics_http_port) and serve `render`:
 * called once per request, it returns malloc'd Prometheus text (freed here) or NULL (→ 500). Return the
 * server, or NULL with a message naming the address in `err`. */
struct metrics_http *metrics_http_new(struct event_base *base, const struct metrics_conf *conf,
                                      char *(*render)(void *arg), void *arg, char *err, size_t errlen);

/* The port listened on. */
uint16_t metrics_http_port(const struct metrics_http *h);

/* Stop listening, close open connections, free. NULL is a no-op. */
void metrics_http_free(struct metrics_http *h);

#endif
