/* proxy_int.h — the proxy's state, private to sidecar/datapath/proxy.c, proxy_listen.c, proxy_stream.c,
 * proxy_splice.c and proxy_circ.c. Nothing else includes it: the rest of onionfront sees the proxy only
 * through proxy.h.
 *
 * proxy.c owns the proxy itself, proxy_listen.c the ports (listeners, the stream cap, tor's PROXY line),
 * proxy_stream.c the streams, proxy_splice.c a stream's splice pumps, proxy_circ.c each port's circuit
 * records; they share these structs and the functions below, listed from the top file down: each file
 * calls only the sections below its own, so no file calls back into one that calls it. Include
 * sidecar/datapath/proxy.h first (its types are used here; including it from here would make a circle
 * of proxy.c and this header for make check-layering). */
#ifndef ONIONFRONT_PROXY_INT_H
#define ONIONFRONT_PROXY_INT_H

#ifndef ONIONFRONT_PROXY_H
#error "include sidecar/datapath/proxy.h before sidecar/datapath/proxy_int.h"
#endif

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/un.h>

#include "sidecar/config/config.h"
#include "sidecar/datapath/check.h"

struct evconnlistener;
struct evdns_base;
struct event;
struct event_base;
struct splice_pump;
struct splice_pump_cbs;
struct backend;

#define PROXY_CIRC_BUCKETS 256
#define PROXY_SUN_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

struct proxy_circ { /* one circuit on one port: its open streams and its new-stream token bucket */
    uint32_t id;
    unsigned streams;
    uint64_t tokens_milli; /* circuit_stream_rate's bucket, in thousandths of a stream */
    uint64_t refill_at;    /* clock_now_ms of the last refill */
    struct proxy_circ *next;
};

struct proxy_stream;

struct proxy_port {
    struct proxy *px;
    struct proxy_port *next;
    char service[CONFIG_SERVICE_NAME_MAX + 1];
    uint16_t virtual_port;
    char label[CONFIG_SERVICE_NAME_MAX + 16]; /* "<service>:<port>" for logs */
    char path[PROXY_SUN_PATH_MAX];
    struct evconnlistener *listener; /* NULL once removed by a reload */
    struct event *resume_ev;          /* re-enables accepting after an accept error */
    struct backend_pool *pool;
    bool removed; /* gone from the config: freed when its last stream ends */
    bool seen;    /* proxy_update's mark */
    struct proxy_stream *streams;
    struct proxy_circ *circs[PROXY_CIRC_BUCKETS];
    unsigned circuits;
    unsigned streams_active;
    uint64_t streams_total, rejected_header, rejected_circuit_limit, rejected_no_backend, connect_failures;
    uint64_t rejected_stream_limit, rejected_circuit_rate, closed_idle;
    uint64_t streams_spliced; /* streams that moved to splice pumps */
    uint64_t bytes_to_backend, bytes_to_tor; /* counted as read, while streams run */
    bool warned_foreign_line;
};

struct proxy {
    struct event_base *base;
    struct evdns_base *dns; /* created when a backend is first reached by host name */
    struct proxy_hooks hooks;
    char run_dir[CONFIG_RUN_DIR_MAX + 1];
    struct proxy_port *ports;
    unsigned header_timeout_ms, fin_timeout_ms;
    uint64_t next_stream_id;
    unsigned max_open_streams; /* over all ports (limits.max_open_streams, resolved by fdbudget) */
    unsigned streams_open;     /* over all ports, removed ones included */
    bool at_cap;               /* logged that the cap was reached; cleared well below it */
    bool splice_on;            /* splice(2) works here and is not switched off (ONIONFRONT_SPLICE=0) */
    size_t splice_min;         /* bytes a stream copies through buffers before it switches to splice */
    unsigned max_spliced;      /* streams holding pipes at once (fdbudget_splice_cap) */
    unsigned spliced;          /* streams holding pipes now */
    proxy_stream_end_cb stream_end_cb; /* proxy_set_stream_end_cb, or NULL */
    void *stream_end_arg;
};

enum stream_state {
    STREAM_HEADER,     /* waiting for tor's PROXY line */
    STREAM_CONNECTING, /* an attempt to s->backend is under way */
    STREAM_OPEN,       /* copying; s->ev armed once tor's side has ended (fin timeout) */
    STREAM_CLOSED,     /* callbacks cut; freed from s->ev */
};

enum stream_side { SIDE_CLIENT, SIDE_SERVER };

struct stream_pipe { /* one direction's splice pump, with what its callbacks need */
    struct proxy_stream *s;
    enum stream_side from;
    struct splice_pump *pump; /* NULL: copied through the bufferevents (or already ended) */
};

struct proxy_stream {
    struct proxy_port *port;
    struct proxy_stream *prev, *next;
    uint64_t id; /* for logs */
    enum stream_state state;
    struct bufferevent *bev[2]; /* [SIDE_CLIENT] tor's connection, [SIDE_SERVER] the backend's */
    struct event *ev;           /* the header and connect deadlines; after close, the deferred free */
    struct event *idle_ev;      /* idle_timeout (if set): checks active_at once the stream is open */
    uint64_t active_at;         /* clock_now_ms of the last byte read from either side (with idle_ev) */
    uint32_t circuit_id;        /* 0: unknown */
    long peer_pid;              /* the process that connected (SO_PEERCRED: which tor), or 0 if unknown */
    bool counted;               /* counted in port->circs */
    struct backend *backend;    /* the current attempt or the connected backend (stream started) */
    struct backend **failed;    /* attempts that failed; still started, so the pointers stay valid */
    size_t n_failed;
    /* Inside bufferevent_socket_connect*: libevent reports some failures from within the call. */
    bool in_connect, sync_failed;
    enum check_result sync_result;
    char sync_detail[128];
    bool eof[2];    /* EOF read from that side */
    bool end_reported; /* stream_end_cb was called for it */
    bool shut[2];   /* shutdown(SHUT_WR) done towards that side */
    bool paused[2]; /* reading from that side paused: the other side has too much unsent */
    bool server_spoke;
    bool spliced;                 /* the bufferevents are idle, s->pipe[] copy (counted in px->spliced) */
    struct stream_pipe pipe[2];   /* [from]: the direction read from that side */
    uint64_t bytes_in, bytes_out; /* from / to the backend */
};

/* ---- proxy_listen.c: ports, the stream cap, tor's PROXY line (called by proxy.c) ---------------------- */

/* Take limits.max_open_streams from `conf` (0: derived from the descriptor limit, less proxy_held_fds). */
void proxy_set_stream_cap(struct proxy *px, const struct config *conf);
/* A port's listener and pool (not linked into px->ports, hooks not called). NULL with err on failure. */
struct proxy_port *proxy_port_new(struct proxy *px, const struct service_conf *svc, const struct port_conf *pc,
                                  char *err, size_t errlen);
/* Stop accepting on `pp` and remove its socket file (its streams go on). */
void proxy_port_unlisten(struct proxy_port *pp);
/* Stop accepting on `pp`, unlink it from its proxy and free it with its streams, circuits and pool. */
void proxy_port_destroy(struct proxy_port *pp);

/* ---- proxy_stream.c: streams (called by proxy.c and proxy_listen.c) ------------------------------------ */

/* End the stream: cut every callback at once and free it from s->ev on the next loop pass. */
void proxy_stream_close(struct proxy_stream *s);
/* s->ev's callback: the header, connect and fin deadlines, and the deferred free after a close. */
void proxy_stream_timer_cb(evutil_socket_t fd, short what, void *arg);
/* Give the stream to the next usable backend not tried yet, or close it when there is none. */
void proxy_stream_connect_next(struct proxy_stream *s);
/* Bytes the stream holds: its bufferevents' buffers and its splice pipes. */
size_t proxy_stream_buffered(const struct proxy_stream *s);
/* Unlink `pp` from its proxy and free it with its streams, circuits and pool. Its listener must be gone
 * (proxy_port_unlisten): a port removed by a reload goes this way with its last stream. */
void proxy_port_free(struct proxy_port *pp);

/* ---- proxy_splice.c: bulk streams (called by proxy_stream.c) ------------------------------------------ */

/* Is the stream due to move to splice (on, open, past splice_min, a pipe pair left)? */
bool proxy_stream_wants_splice(const struct proxy_stream *s);
/* Move the stream, which is due and has nothing buffered, to splice pumps reporting to `cbs` (each
 * called with the struct stream_pipe of its direction). Return 0: moved, or left on the bufferevents
 * when no pipe could be made; -1: a pump did not start (close the stream). */
int proxy_splice_start(struct proxy_stream *s, const struct splice_pump_cbs *cbs);
/* Back to the bufferevents, the bytes in the pipes first (they were read before anything the
 * bufferevents will read). Return 0, or -1 (out of memory: close the stream). */
int proxy_splice_stop(struct proxy_stream *s);

/* ---- proxy_circ.c: circuits (called by proxy_listen.c and proxy_stream.c) ------------------------------ */

/* Admit a new stream (`stream_id`, for logs) of circuit `id` (not 0) on `pp`, whose settings are `pc`
 * (max_streams_per_circuit, circuit_stream_rate). Return 0 with the stream counted on its circuit (undo
 * with proxy_circ_dec), or -1: refused (counted in pp's rejected_*) or out of memory; close the stream. */
int proxy_circ_admit(struct proxy_port *pp, const struct port_conf *pc, uint32_t id, uint64_t stream_id);
/* One stream of circuit `id` ended. Its record stays while its bucket is not full (so a circuit cannot
 * reset its rate by letting its streams end), else it goes. */
void proxy_circ_dec(struct proxy_port *pp, uint32_t id);
/* Free every circuit record of `pp`. */
void proxy_circ_clear(struct proxy_port *pp);

/* ---- shared by the files above ------------------------------------------------------------------------- */

/* Let `bev` write what is about to be added to its output. Only then: libevent registers the write
 * event at once when EV_WRITE is enabled, even with nothing to write, which costs two epoll_ctl calls and
 * a wake-up per side of every stream; once enabled it stays so, and libevent adds and removes the write
 * event as data comes and goes. */
static inline void proxy_enable_write(struct bufferevent *bev)
{
    if (!(bufferevent_get_enabled(bev) & EV_WRITE))
        bufferevent_enable(bev, EV_WRITE);
}

#endif
