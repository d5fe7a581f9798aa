/* check_tcp.h — the TCP health check (relayd's check_tcp.c): a non-blocking connect to an IP literal or a
 * unix socket, on the event loop, with a deadline from the check's start. Connected = healthy; the
 * connection is closed at once.
 *
 * Owns one check's socket and events. Does not resolve host names (health.c hands those to check_http's
 * connect-only mode, where libcurl resolves asynchronously), and does not apply rise/fall: its one
 * completion goes to the caller, which feeds backend_health_result. */
#ifndef ONIONFRONT_CHECK_TCP_H
#define ONIONFRONT_CHECK_TCP_H

#include <stdbool.h>
#include <stddef.h>

#include "sidecar/datapath/check.h"
#include "sidecar/config/config_value.h"

struct event_base;
struct check_tcp;

/* True if check_tcp can connect to `addr` without resolving a name (an IP literal or a unix socket). */
bool check_tcp_supports(const struct backend_addr *addr);

/* Start connecting to `addr` (check_tcp_supports must be true). `cb` is called exactly once, from the
 * loop (never from inside this call), with CHECK_OK, CHECK_CONNECT_REFUSED, CHECK_CONNECT_TIMEOUT (no
 * answer within `timeout_ms` of the start on clock_now_ms, CLOCK_MONOTONIC: never earlier; detail "")
 * or CHECK_CONNECT_ERROR; the check frees itself before calling `cb`, so `cb` may start the next check.
 * Return the check, or NULL with a message in `err` (nothing is called then). */
struct check_tcp *check_tcp_start(struct event_base *base, const struct backend_addr *addr, unsigned timeout_ms,
                                  check_done_cb cb, void *arg, char *err, size_t errlen);

/* Abandon a check that has not completed: `cb` is not called. NULL is a no-op. */
void check_tcp_cancel(struct check_tcp *c);

#endif
