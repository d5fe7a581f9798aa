/* check_http.h — the HTTP(S) health check, through libcurl's multi socket API on the event loop
 * (CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION; never curl_easy_perform).
 *
 * A check sends health.method for health.path (Host: health.host, or the backend's address) to the
 * backend, over TCP or its unix socket (CURLOPT_UNIX_SOCKET_PATH), and is healthy if the status is one of
 * health.expect_status. HTTPS verifies the certificate against the system's CAs (or only those of
 * health.ca_file) and the name in the request (health.host if set: the connection still goes to the
 * backend's address, through CURLOPT_CONNECT_TO, so SNI and verification use that name); with
 * health.tls_verify false it verifies neither. The same machinery, in connect-only mode,
 * is the TCP check of backends given by host name: libcurl resolves asynchronously, so name lookups
 * never block the loop.
 *
 * Owns the curl multi handle, its socket and timer events, and each check's easy handle. Does not apply
 * rise/fall (the caller feeds backend_health_result) or schedule checks (health.c does). */
#ifndef ONIONFRONT_CHECK_HTTP_H
#define ONIONFRONT_CHECK_HTTP_H

#include <curl/curl.h>
#include <stddef.h>

#include "sidecar/datapath/check.h"
#include "sidecar/config/config.h"

struct event_base;
struct check_http_loop;
struct check_http;

/* A curl multi handle on `base`. Return it, or NULL with a message in `err`. */
struct check_http_loop *check_http_loop_new(struct event_base *base, char *err, size_t errlen);

/* Cancel every check still running (their callbacks are not called) and free the loop. Must not be
 * called from a check's completion callback. NULL is a no-op. */
void check_http_loop_free(struct check_http_loop *l);

/* Start one check of `addr` with the settings of `hc`: type http or https sends a request; type tcp
 * only connects (for host names: see above). `cb` is called exactly once, from the loop (never from
 * inside this call), the check freed just before, so `cb` may start the next one. The deadline is
 * hc->timeout_ms from now on clock_now_ms (CLOCK_MONOTONIC; never earlier, whatever libevent's cached
 * time says): CHECK_CONNECT_TIMEOUT if not connected by then, CHECK_READ_TIMEOUT if connected without a
 * complete answer (detail "" for our deadline; libcurl's message if its later safety net fired instead).
 * Return the check, or NULL with a message in `err` (nothing is called then). */
struct check_http *check_http_start(struct check_http_loop *l, const struct backend_addr *addr,
                                    const struct health_conf *hc, check_done_cb cb, void *arg, char *err,
                                    size_t errlen);

/* A caller's transfer is over: `rc` is curl's result (CURLE_OPERATION_TIMEDOUT also for our deadline),
 * `errbuf` curl's message ("" if none). `easy` may be read (curl_easy_getinfo) during the call only. */
typedef void (*check_http_raw_cb)(CURL *easy, CURLcode rc, const char *errbuf, void *arg);

/* Run a transfer the caller set up on `easy` (URL, proxy, write callback ...) on the loop, bounded by
 * `timeout_ms` from now: the loop takes `easy` (also on failure), uses its CURLOPT_PRIVATE and
 * CURLOPT_ERRORBUFFER, calls `cb` exactly once from the loop and frees `easy` after it. Return the
 * transfer (check_http_cancel abandons it), or NULL with a message. */
struct check_http *check_http_run(struct check_http_loop *l, CURL *easy, unsigned timeout_ms, check_http_raw_cb cb,
                                  void *arg, char *err, size_t errlen);

/* Abandon a check that has not completed: `cb` is not called. NULL is a no-op. */
void check_http_cancel(struct check_http *c);

#endif
