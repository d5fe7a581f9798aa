/* fdbudget.h — onionfront's file-descriptor budget: how many descriptors each kind of peer may hold,
 * so that no single listener can exhaust the process, plus a few descriptors held in reserve.
 *
 * The budget (RLIMIT_NOFILE's soft limit, raised to the hard limit at start by fdbudget_raise_limit):
 *
 *     soft limit  >=  2 x proxy streams            (limits.max_open_streams; each stream is tor's
 *                                                   connection + the backend's)
 *                   + what the config holds         (struct fdbudget_held: a listening socket per
 *                                                   service port, a health check per checked backend)
 *                   + FDBUDGET_METRICS_CLIENTS      (metrics_http.c; beyond it the listener pauses)
 *                   + FDBUDGET_ONIONLOC_CLIENTS     (onion_location.listen, onionloc.c; the same kind of
 *                                                   listener, with a share of its own: web servers on
 *                                                   other hosts never take the metrics endpoint's)
 *                   + FDBUDGET_STATUS_CLIENTS       (status.c; per-uid limit and reserved slots inside)
 *                   + 4 x spliced streams         (two pipes each; only what is left over: see
 *                                                   fdbudget_splice_cap_for)
 *                   + FDBUDGET_RESERVE              (everything else: tor's control connections, the
 *                                                   probe's transfers, DNS, log, children's pipes, the
 *                                                   status, metrics and Onion-Location listeners, the
 *                                                   status socket's spare descriptor)
 *
 * With limits.max_open_streams left at 0 ("auto"), fdbudget_stream_cap derives the stream cap from the
 * limit so that the sum holds; an explicit value is taken as given (the operator's choice, logged by the
 * caller when it does not fit). A config whose held descriptors leave no room for FDBUDGET_STREAMS_MIN
 * streams under the limit is refused (fdbudget_check_held: at start, check-config and reload). Since each peer's share is capped, a flood on one listener (1,200 slow
 * metrics connections, say) fills that listener's share and stops there: tor's streams and the status
 * socket keep their descriptors. Should the process run out anyway (a system-wide ENFILE, a limit the
 * operator lowered), every listener pauses on accept errors instead of spinning, and the status socket
 * keeps one spare descriptor (struct fd_reserve) so that an operator can still ask what is going on.
 *
 * Owns the shares (each listener takes its cap from here, so the sum is written in one place) and the
 * reserve's descriptors; no global state. Includes no listener's header. */
#ifndef ONIONFRONT_FDBUDGET_H
#define ONIONFRONT_FDBUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

#define FDBUDGET_RESERVE 256            /* descriptors for everything that is not a capped peer */
#define FDBUDGET_STREAMS_AUTO_MAX 1024  /* "auto" never picks more streams than this: each can hold
                                           about 2 x PROXY_HIGH_WATER of buffers (512 KiB) */
#define FDBUDGET_STREAMS_MIN 16         /* "auto" never picks fewer, however low the limit */
#define FD_RESERVE_MAX 4
#define FDBUDGET_METRICS_CLIENTS 32     /* the metrics endpoint's connections at once */
#define FDBUDGET_ONIONLOC_CLIENTS 64    /* the Onion-Location endpoint's */
#define FDBUDGET_STATUS_CLIENTS 64      /* the status socket's */
#define FDBUDGET_PIPE_FDS 4             /* a spliced stream's two pipes */

/* The descriptors a config holds open however quiet the site is, counted from the config by the data
 * path (proxy_held_fds): they come off the limit before the streams' share. */
struct fdbudget_held {
    size_t listeners; /* one listening unix socket per service port (proxy_listen.c) */
    size_t checks;    /* one health check in flight per backend of a port with checks (health.c) */
};

/* Raise RLIMIT_NOFILE's soft limit to its hard limit. Return 0 and the limits before and after in
 * *before / *after (equal when nothing changed), or -1 with the reason in `err` (the limit stays). */
int fdbudget_raise_limit(rlim_t *before, rlim_t *after, char *err, size_t errlen);

/* The process's RLIMIT_NOFILE hard limit (what the soft limit is raised to at start), or RLIM_INFINITY
 * if it cannot be read. */
rlim_t fdbudget_hard_limit(void);

/* Does a config holding `held` fit under RLIMIT_NOFILE's hard limit `hard`, with the shares above and
 * FDBUDGET_STREAMS_MIN streams? Return 0, or -1 with a message naming the numbers in `err`. Pure. */
int fdbudget_check_held(struct fdbudget_held held, rlim_t hard, char *err, size_t errlen);

/* The concurrent-stream cap for limits.max_open_streams = `configured` (0 = auto) under a soft limit
 * of `nofile` descriptors with a config holding `held`: configured when non-zero, else (nofile -
 * held - FDBUDGET_RESERVE - the metrics, onion-location and status shares) / 2, clamped to
 * FDBUDGET_STREAMS_MIN..FDBUDGET_STREAMS_AUTO_MAX. Pure. */
unsigned fdbudget_stream_cap_for(unsigned configured, rlim_t nofile, struct fdbudget_held held);

/* As fdbudget_stream_cap_for, with the process's current soft limit. */
unsigned fdbudget_stream_cap(unsigned configured, struct fdbudget_held held);

/* How many of `streams` streams may hold splice pipes (FDBUDGET_PIPE_FDS more descriptors each) at once
 * under a soft limit of `nofile` with a config holding `held`: what the budget above leaves after
 * 2 x streams, at most `streams` (0 when nothing is left: those streams copy through buffers). Pure. */
unsigned fdbudget_splice_cap_for(unsigned streams, rlim_t nofile, struct fdbudget_held held);

/* As fdbudget_splice_cap_for, with the process's current soft limit. */
unsigned fdbudget_splice_cap(unsigned streams, struct fdbudget_held held);

/* Descriptors opened on /dev/null and held, to be given back when the process has run out: close one
 * (fd_reserve_release), open what is needed with it, and fd_reserve_refill once descriptors are free
 * again. Plain data, embedded by its owner. */
struct fd_reserve {
    int fds[FD_RESERVE_MAX];
    unsigned held; /* fds[0 .. held) are open */
    unsigned want; /* how many to hold, <= FD_RESERVE_MAX */
};

/* Set up `r` to hold `want` descriptors (at most FD_RESERVE_MAX) and open them. Return 0, or -1 with
 * errno if not all could be opened (those that could are held; fd_reserve_refill tries again). */
int fd_reserve_init(struct fd_reserve *r, unsigned want);

/* Open descriptors until `want` are held again. Return 0 if they are, -1 otherwise (nothing free). */
int fd_reserve_refill(struct fd_reserve *r);

/* Close one held descriptor so that the caller's next open/accept can have it. Return true if one
 * was held. */
bool fd_reserve_release(struct fd_reserve *r);

/* Close every held descriptor. */
void fd_reserve_close(struct fd_reserve *r);

/* True for the accept() errors that mean "out of descriptors" (EMFILE, ENFILE) or out of memory
 * (ENOBUFS, ENOMEM): retrying at once would fail again. */
bool fdbudget_is_exhaustion(int err);

#endif
