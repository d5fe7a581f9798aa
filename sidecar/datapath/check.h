/* check.h — the vocabulary every check of a backend shares: the outcome enum, its one stringer, and the
 * one completion callback. Active checks (check_tcp, check_http), passive failures of the data path and
 * the backend state (backend.c's funnel) speak it; none of them owns it.
 *
 * Owns nothing but the names; no state, no I/O. A new check type adds a file check_<type>.c that ends
 * in a check_done_cb, and (only if it has a new kind of failure) a value here. */
#ifndef ONIONFRONT_CHECK_H
#define ONIONFRONT_CHECK_H

/* Outcome of one health check or one real connection attempt. */
enum check_result {
    CHECK_OK,
    CHECK_CONNECT_REFUSED,
    CHECK_CONNECT_TIMEOUT,
    CHECK_CONNECT_ERROR,   /* other connect errors (unreachable, no such socket ...) */
    CHECK_RESET,           /* connection reset by the backend (passive) */
    CHECK_READ_TIMEOUT,    /* connected but no (complete) answer in time */
    CHECK_HTTP_STATUS,     /* answered with a status not in expect_status */
    CHECK_HTTP_ERROR,      /* malformed answer, TLS failure ... */
    CHECK_RESOLVE_ERROR,   /* host name did not resolve */
};
/* "ok", "connect refused", "connect timeout", ... (for logs, status and metrics); "unknown" for a value
 * outside the enum. */
const char *check_result_str(enum check_result r);

/* The one completion of an active check (check_tcp, check_http): `detail` is borrowed for the call
 * ("" when there is nothing to add to the result, else e.g. "HTTP 503" or an errno text). */
typedef void (*check_done_cb)(enum check_result r, const char *detail, void *arg);

#endif
