/* proxy.h — onionfront's data path: one unix listening socket per service virtual port (tor's
 * HiddenServicePort target, in <run_dir>/proxy/, mode 0700, named by service_socket_path), and for each
 * stream tor hands over: tor's PROXY v1 line -> circuit id -> per-circuit stream limit -> a backend from
 * the port's pool -> connect (with retry on another backend before any byte reached the client) -> an
 * optional PROXY v2 header -> bytes copied both ways with bounded buffers.
 *
 * Owns the listeners and their socket files, the streams (two bufferevents each), the per-port backend
 * pools (struct backend_pool, created from and updated with the config) and the per-port stream
 * counters. Does not own health checks (main.c attaches a checker to each pool through the hooks
 * below), the status socket, or anything tor-facing: which HiddenServicePort lines point here is
 * service.c's business; both take the paths from service_socket_path (config/service_socket.h).
 *
 * Data path rules, per stream:
 *  - tor's first line is read with a bound (PROXYPROTO_V1_MAX bytes) and a deadline; anything malformed
 *    closes the stream. The line is never forwarded.
 *  - limits.max_open_streams (0 = auto: fdbudget_stream_cap from the descriptor limit, less what the
 *    listeners and health checks hold, proxy_held_fds): with that many
 *    streams open over all ports, a new stream is closed as soon as it is accepted, and tor ends it.
 *  - max_streams_per_circuit > 0 (default 64): a circuit with that many streams open on this port gets
 *    the next one closed at once (circuit id 0, "unknown", is not limited).
 *  - circuit_stream_rate > 0 (default off): each circuit has a token bucket of circuit_stream_burst new
 *    streams refilled at that rate per second (kept while it refills, even without open streams); a
 *    stream finding it empty is closed at once (rejected_circuit_rate).
 *  - idle_timeout > 0 (default 3600 s, 0 = off): an open stream with no byte read from either side for
 *    that long is closed (closed_idle), through the buffers or spliced alike.
 *  - Connect: IP literals and unix sockets directly, host names through evdns on the loop; each attempt
 *    has connect_timeout_ms. A refused, failed or timed-out attempt is a passive failure for that
 *    backend (backend_passive_failure) and the stream moves to another usable backend, which is safe
 *    because nothing has been sent to the client yet. No usable backend (left): the stream is closed
 *    at once, and tor ends it.
 *  - Copying: each direction stops reading when the other side has PROXY_HIGH_WATER bytes unsent and
 *    resumes below half of it (libevent's le-proxy), so a stream holds at most about 2 x (high water +
 *    one read) bytes however fast one side is and however slow the other.
 *  - Bulk streams: once a stream has copied PROXY_SPLICE_MIN bytes, at a moment when none of its buffers
 *    holds a byte, it moves to splice(2) (splice_pump.c: socket -> pipe -> socket in the kernel, one
 *    pipe per direction, the pipe the only buffer, reading paused while it holds bytes). The PROXY line
 *    and the v2 header are always handled before. Pipes cost four descriptors per stream: at most
 *    fdbudget_splice_cap streams hold them, the others stay on the buffers. Off where the kernel refuses
 *    splice (probed at start, and on a refusal at run time the stream takes its pipes' bytes back and
 *    goes on through the buffers) and with ONIONFRONT_SPLICE=0 in the environment.
 *  - EOF from one side: what was read is flushed to the other side, then shutdown(SHUT_WR) there; the
 *    other direction goes on. The stream ends when both directions are done. tor itself never
 *    half-closes (an EOF from it means its stream is gone), so after tor's EOF the backend has
 *    PROXY_FIN_TIMEOUT_MS to finish before both sides are closed.
 *  - An error or reset on either side closes both at once. A reset from the backend before it sent any
 *    byte is also a passive failure (it failed this stream); after that it is not (it may be the
 *    application's choice).
 *  - backend_stream_start when an attempt starts; backend_stream_end with the stream's bytes (in: from
 *    the backend, out: to it) when it ends. Failed attempts end when the stream is connected elsewhere
 *    or closed, so the backends it must not retry stay valid until then.
 * Streams end themselves from their callbacks through a deferred event; proxy_free ends all at once.
 * In five files over one private header (proxy_int.h), each calling only the ones after it: proxy.c the
 * proxy; proxy_listen.c the listeners, the stream cap and tor's PROXY line; proxy_stream.c the streams;
 * proxy_splice.c splice; proxy_circ.c the circuits. */
#ifndef ONIONFRONT_PROXY_H
#define ONIONFRONT_PROXY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sidecar/core/fdbudget.h"

struct backend_pool;
struct config;
struct event_base;
struct metrics;
struct proxy;

#ifndef PROXY_HIGH_WATER
#define PROXY_HIGH_WATER (256u * 1024) /* bytes unsent towards one side before the other side pauses */
#endif
#define PROXY_HEADER_TIMEOUT_MS 10000  /* tor sends its PROXY line at once; spec: allow >= 3 s */
#define PROXY_FIN_TIMEOUT_MS 60000     /* after tor's side ended, for the backend to finish */
#define PROXY_SPLICE_MIN (64u * 1024)  /* bytes copied through buffers before a stream moves to splice */

/* Pool lifecycle, for main.c's health checkers. Each hook may be NULL. */
struct proxy_hooks {
    void (*pool_added)(struct backend_pool *pool, void *arg);   /* new port (proxy_new or proxy_update) */
    void (*pool_updated)(struct backend_pool *pool, void *arg); /* after backend_pool_update on reload */
    void (*pool_removed)(struct backend_pool *pool, void *arg); /* port gone (or proxy_free): stop using
                                                                   it now; it is freed later, when its
                                                                   last stream has ended */
    void *arg;
};

/* Create <run_dir> and <run_dir>/proxy (0700; an existing one must already be private), a pool and a
 * listening socket for every port of every service in `conf` (a stale socket file is replaced), and
 * call hooks->pool_added for each pool. `conf` is only read during the call. Return the proxy, or NULL
 * with a message in `err` naming the service, port or path. */
struct proxy *proxy_new(struct event_base *base, const struct config *conf, const struct proxy_hooks *hooks,
                        char *err, size_t errlen);

/* Apply a reloaded config: listen on ports that are new, update the pools of ports that stay in place
 * (backend_pool_update: backends, weights, balance, health, timeouts, limits; open streams go on), and
 * stop listening on ports that are gone (their open streams go on until they end). Touches nothing in
 * tor. New listeners come first: if one cannot be created, nothing changes and -1 is returned with a
 * message. A pool update that fails (out of memory) also returns -1, with the new listeners rolled
 * back but the pools updated before it keeping their new settings. `conf` is only read during the
 * call. */
int proxy_update(struct proxy *px, const struct config *conf, char *err, size_t errlen);

/* The descriptors the data path for `conf` holds however quiet it is (fdbudget.h): a listening socket
 * for every port of every service, and a health check in flight for every backend of a port whose
 * health type is not none (health.c checks each one on its own, drained ones too). Pure. */
struct fdbudget_held proxy_held_fds(const struct config *conf);

/* Does the data path for `conf` fit under RLIMIT_NOFILE's hard limit `hard` (fdbudget_check_held of
 * proxy_held_fds)? Return 0, or -1 with a message naming the numbers. check-config, the start (both
 * preflight.h) and a reload (reload.h) refuse a config that does not. */
int proxy_check_fd_limit(const struct config *conf, rlim_t hard, char *err, size_t errlen);

/* Close every stream (backend_stream_end for each), the listeners (removing their socket files) and
 * the pools (hooks->pool_removed first). NULL is a no-op. */
void proxy_free(struct proxy *px);

/* Override PROXY_HEADER_TIMEOUT_MS and PROXY_FIN_TIMEOUT_MS (tests). */
void proxy_set_timeouts(struct proxy *px, unsigned header_ms, unsigned fin_ms);

/* Switch splice on or off (on only where supported) and set the bytes a stream copies through buffers
 * before it moves to splice (PROXY_SPLICE_MIN; 0: from the first byte). Streams already open keep
 * their way of copying. For tests and the bench. */
void proxy_set_splice(struct proxy *px, bool on, size_t min_bytes);

/* The pool of service `service`'s `virtual_port`, or NULL. Borrowed. */
struct backend_pool *proxy_find_pool(struct proxy *px, const char *service, uint16_t virtual_port);

/* The live (not removed) pools, for metrics and status: up to `max` written to `out`; returns how many
 * there are (0 for a NULL proxy). */
size_t proxy_pools(struct proxy *px, struct backend_pool **out, size_t max);

/* How many streams are open whose tor side was connected by process `pid` (SO_PEERCRED at accept: every
 * tor's HiddenServicePort points at the same sockets, so the pid tells which tor a visitor's stream runs
 * through). A stream counts until it is closed or tor's side ended (tor never half-closes: its EOF means
 * its stream is gone), so the backend finishing after that does not. 0 for pid <= 0 or a NULL proxy. For
 * the rolling restart's drain (roll.h). */
unsigned proxy_streams_from_pid(const struct proxy *px, long pid);

/* Called once when a stream whose tor (SO_PEERCRED pid) and circuit (tor's PROXY line: the global circuit
 * id, as in CIRC events and CLOSECIRCUIT) are known ends: when tor's side ended, or when it is freed if
 * the backend finished first. The rolling restart's drain closes
 * a rendezvous circuit of a tor it winds down right after its last stream (circdrain.h). Must not call
 * back into the proxy. NULL clears it. */
typedef void (*proxy_stream_end_cb)(long pid, uint32_t circuit_id, void *arg);
void proxy_set_stream_end_cb(struct proxy *px, proxy_stream_end_cb cb, void *arg);

/* Per-port stream counters for the status socket (an empty array for a NULL proxy). Returns a new
 * reference (NULL on OOM): an array of
 * {"service", "virtual_port", "socket", "listening" (false once removed by a reload and draining),
 *  "streams_active", "streams_total", "circuits_active", "rejected_header", "rejected_circuit_limit",
 *  "rejected_no_backend", "rejected_stream_limit", "connect_failures" (failed attempts, each followed by a retry
 *  when a usable backend is left), "bytes_to_backend", "bytes_to_tor" (read from tor for the backend and
 *  from the backend for tor, counted as they are read, unlike backend.c's bytes, which count at a
 *  stream's end), "buffered_bytes" (in buffers and splice pipes), "streams_spliced" (streams that moved
 *  to splice)}. */
json_t *proxy_to_json(const struct proxy *px);

/* Append the per-port families, labels service and port, for the ports still listening (a port removed
 * by a reload drops out at once, even while its streams drain): onionfront_proxy_streams_total,
 * onionfront_proxy_active_streams, onionfront_proxy_active_circuits,
 * onionfront_proxy_rejected_streams_total{reason="header"|"circuit_limit"|"no_backend"|"stream_limit"},
 * onionfront_proxy_connect_failures_total, onionfront_proxy_bytes_total{direction="to_backend"|"to_tor"}
 * and onionfront_proxy_buffered_bytes (the values of proxy_to_json). Every family is written, without
 * samples when there is no port (or px is NULL). Returns 0, or -1 (out of memory, or a family already
 * in `m`). */
int proxy_metrics(const struct proxy *px, struct metrics *m);

#endif
