/* backend.h — backend pools: one pool per service virtual port, its backends' health state, and the
 * choice of a backend for each new stream (round robin, least connections, circuit affinity; weights).
 *
 * Owns struct backend (config copy + runtime state: up/down, rise/fall counters, active connections,
 * counters) and the one funnel every health result goes through (backend_health_result), which applies
 * rise/fall and logs state changes once ("backend web2: up -> down (connect timeout, 3/3)").
 * Active checks live in health.c (check_tcp, check_http); the data path (proxy.c) reports passive
 * failures and connection counts here. Nothing here touches tor or the descriptor: backends changing
 * never republishes anything. Not thread-safe: everything runs on the one event loop. */
#ifndef ONIONFRONT_BACKEND_H
#define ONIONFRONT_BACKEND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sidecar/datapath/check.h"
#include "sidecar/config/config.h"

struct event_base;
struct backend_pool;
struct metrics;

enum backend_state {
    BACKEND_UP,
    BACKEND_DOWN,
    BACKEND_DRAINED, /* weight 0: healthy or not, gets no new streams */
};
const char *backend_state_str(enum backend_state s);

struct backend {
    struct backend_conf conf;   /* copied by value: outlives a reload's old config */
    struct backend_pool *pool;  /* owner */
    enum backend_state state;   /* DRAINED if conf.weight == 0, else UP if healthy, else DOWN */
    bool healthy;               /* the health verdict (rise/fall, passive ejection), kept while drained */
    unsigned rise_count;        /* consecutive successes while unhealthy */
    unsigned fall_count;        /* consecutive failures while healthy */
    enum check_result last_result;
    char last_detail[128];      /* e.g. "HTTP 503", errno text */
    int64_t last_check;         /* unix seconds of the last result (active or passive), 0 never */
    unsigned active;            /* streams currently proxied to this backend */
    uint64_t total_streams;     /* streams ever given to this backend */
    uint64_t failed_connects;   /* passive: connect failures and resets */
    uint64_t bytes_in;          /* read from the backend (towards the client) */
    uint64_t bytes_out;         /* written to the backend (from the client) */
    uint64_t checks_ok, checks_failed;
    int64_t last_change;        /* unix seconds of the last state change, 0 never */
    void *check_state;          /* owned by health.c */
    /* Private to backend.c: */
    int64_t rr_current;         /* smooth weighted round robin's current weight */
    uint64_t hash_key;          /* from conf.name: the circuit-affinity hash seed */
    bool removed;               /* gone from the config, freed when its last stream ends */
    struct backend *next_removed;
};

/* Create the pool for `port` of service `service_name` (names are used in logs and metrics). Backends
 * start UP (optimistic: the first active check or real connection tells otherwise) unless
 * health.type is none, where they stay UP forever except for weight 0. Returns NULL on OOM or more than
 * CONFIG_MAX_BACKENDS backends. The pool copies `port`: the config may be freed afterwards.
 * `base` may be NULL (the pool itself schedules nothing; health.c does). */
struct backend_pool *backend_pool_new(struct event_base *base, const char *service_name,
                                      const struct port_conf *port);
/* Free the pool and every backend, removed ones with streams included: the data path must have ended
 * its streams first, and a health checker on this pool must be freed before it. NULL is a no-op. */
void backend_pool_free(struct backend_pool *p);

/* Apply a new port config in place (reload): backends matched by name keep their state and counters
 * (a backend removed earlier and still draining its streams is revived the same way); new ones start
 * UP; removed ones stop being checked at once (the detach hook) and disappear once their active
 * streams end (the proxy holds no pointer to a backend beyond a stream's life: it calls
 * backend_stream_end first). Weight changes to or from 0 are logged state changes. Health settings
 * take effect at the next check (call health_update after this). Return 0, or -1 with a message in
 * `err` and the pool unchanged. */
int backend_pool_update(struct backend_pool *p, const struct port_conf *port, char *err, size_t errlen);

/* Called with each backend leaving the pool (removed by backend_pool_update, or backend_pool_free)
 * while b->check_state is set, so the health checker can cancel its check; it must set check_state to
 * NULL. One hook per pool (health.c's); NULL clears it. */
typedef void (*backend_detach_cb)(struct backend *b, void *arg);
void backend_pool_set_detach_cb(struct backend_pool *p, backend_detach_cb cb, void *arg);

/* Choose a backend for a new stream, skipping DOWN and DRAINED backends and those in `exclude`
 * (n_exclude entries: backends that already failed for this stream). `circuit_id` is tor's global
 * circuit id (0 if unknown), used by BALANCE_CIRCUIT for affinity: the same id maps to the same backend
 * while it is usable (weighted rendezvous hashing: when a backend goes down only its circuits move, and
 * they return when it comes back); id 0 falls back to round robin. Returns NULL if none is usable.
 * The pick does not count as a stream: call backend_stream_start when the stream is given to it. */
struct backend *backend_pool_pick(struct backend_pool *p, uint32_t circuit_id, struct backend *const *exclude,
                                  size_t n_exclude);

/* The data path's bookkeeping. backend_stream_start increments active/total; backend_stream_end
 * decrements active and adds the bytes (in: read from the backend, out: written to it). After
 * backend_stream_end the caller must not use `b` again: a removed backend is freed by its last end. */
void backend_stream_start(struct backend *b);
void backend_stream_end(struct backend *b, uint64_t bytes_in, uint64_t bytes_out);

/* Passive failure from real traffic (connect refused/timeout/reset): the backend goes DOWN at once
 * (logged once), and comes back only through active checks (rise). With health type none there are
 * no active checks to bring it back, so the failure is only counted. */
void backend_passive_failure(struct backend *b, enum check_result r, const char *detail);

/* The funnel for active check results: counts the check, applies rise/fall, logs state changes once. */
void backend_health_result(struct backend *b, enum check_result r, const char *detail);

/* True if `b` can take new streams (state UP). */
bool backend_is_up(const struct backend *b);

/* True if at least one backend can take a new stream. */
bool backend_pool_is_up(const struct backend_pool *p);

/* The backends in config order (removed ones still draining are not counted); get returns NULL past the
 * end. port is the pool's own copy of its current config; service is the name given to backend_pool_new. */
size_t backend_pool_count(const struct backend_pool *p);
struct backend *backend_pool_get(struct backend_pool *p, size_t i);
const struct port_conf *backend_pool_port(const struct backend_pool *p);
const char *backend_pool_service(const struct backend_pool *p);

/* The pool for the status socket. Returns a new reference (NULL on OOM):
 * {"service", "virtual_port", "balance", "health", "up", "backends": [{"name", "address", "state",
 *  "weight", "active", "total_streams", "failed_connects", "bytes_in", "bytes_out", "checks_ok",
 *  "checks_failed", "last_result" (null before the first result), "last_detail", "last_check",
 *  "last_change" (unix seconds, null for never)}]}. Removed backends still draining are not listed. */
json_t *backend_pool_to_json(const struct backend_pool *p);

/* Append the backend families for all `n` pools to `m` (each family once, one series per backend):
 * onionfront_backend_up, _active_streams, _streams_total, _connect_failures_total,
 * _bytes_total{direction="in|out"}, _checks_total{result="ok|failed"}; labels service, port, backend.
 * Returns 0, or -1 if `m` refused a family (already present) or ran out of memory. */
int backend_pool_metrics(struct backend_pool *const *pools, size_t n, struct metrics *m);

#endif
