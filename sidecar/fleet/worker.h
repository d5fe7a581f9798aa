/* worker.h — one tor and everything onionfront keeps per tor: the tor process (spawned or attached) with
 * its control connection and supervision (tor.c), the services' SETCONF state on it (service.c), the
 * descriptor tracker (descriptor.c) and the circuit verifier (verify.c). It wires them to each new
 * control connection and detaches them when it is lost, and reports up through callbacks.
 *
 * Owns those four objects, and the reader of a spawned tor's MetricsPort (torscrape.c). Not the data
 * path (proxy, pools, health checks: shared by all workers, since every tor's HiddenServicePort points
 * at the same per-port sockets), the event base, systemd or the status socket (main.c, report.c). The daemon holds a list of workers; report.c reads them through the
 * borrowed handles below. */
#ifndef ONIONFRONT_WORKER_H
#define ONIONFRONT_WORKER_H

#include <stdbool.h>
#include <stddef.h>

#include "sidecar/config/config.h"

struct config;
struct descriptor_tracker;
struct event_base;
struct proc_mgr;
struct service_ids;
struct service_mgr;
struct tor_sup;
struct torscrape;
struct verify;
struct worker;

struct worker_callbacks {
    /* The tor is verified and its services are being handed to it (or a stopping worker's tor came
     * back: nothing was handed over). */
    void (*ready)(struct worker *w, void *arg);
    /* The tor bootstrapped to 100 % with the services handed to it. */
    void (*bootstrapped)(struct worker *w, void *arg);
    /* The tor (or the connection to it) is gone; the worker restarts or reconnects by itself. Its
     * services are unreachable through it until it is ready again. */
    void (*lost)(struct worker *w, const char *why, void *arg);
    /* Unrecoverable (attach to a tor that is not single-onion, a hand-over that cannot be done). */
    void (*failed)(struct worker *w, const char *why, void *arg);
    /* A worker stopped by worker_stop() is gone: services removed, tor ended or connection closed. */
    void (*stopped)(struct worker *w, void *arg);
};

/* Create a worker for the tor `conf` describes, running the services `ids` (both borrowed; `conf` until
 * worker_reconfigure replaces it, `ids` for the worker's life). Nothing starts yet. Returns NULL on
 * allocation failure. */
struct worker *worker_new(struct event_base *base, struct proc_mgr *procs, const struct config *conf,
                          struct service_ids *ids, const struct worker_callbacks *cbs, void *arg);

/* Make this worker tor instance `instance` of tor.instances (instance.h: its own DataDirectory, control
 * socket and copies of the key directories; 0, the default, is the configured paths). Before starting. */
void worker_set_instance(struct worker *w, unsigned instance);
unsigned worker_instance(const struct worker *w);

/* Make this worker the tor of the services of `mode` (default SERVICE_MODE_SINGLE): an anonymous one is
 * an ordinary tor (TOR_ROLE_ANONYMOUS, instance_anonymous_paths) hosting only the anonymous services; a
 * single one hosts only the single onions. Its tracker and verifier get only those. Before starting. */
void worker_set_mode(struct worker *w, enum service_mode mode);
enum service_mode worker_mode(const struct worker *w);

/* Is its tor bootstrapped and running (and the worker not stopping)? */
bool worker_is_up(const struct worker *w);

/* Make the tor build and upload new descriptors of every service now (service_mgr_renew): a standby
 * taking over from a lost tor whose descriptors HSDirs served. Return 0, or -1 if its tor is not up. */
int worker_renew_descriptors(struct worker *w);

/* Wind the tor down before a planned stop (circdrain.h: it stops uploading, takes no new introduction,
 * and its open rendezvous circuits are counted). Return 0, or -1 if its tor is not up. */
int worker_drain_start(struct worker *w);
/* The tor stays after all: it publishes again (also done by worker_renew_descriptors). */
void worker_drain_stop(struct worker *w);
/* The data path saw the last stream of this tor's circuit `circuit_id` end (circdrain_stream_ended). */
void worker_stream_ended(struct worker *w, unsigned long circuit_id);
/* Is the draining tor drained (circdrain_is_drained)? */
bool worker_drain_done(const struct worker *w);
/* Open rendezvous circuits of the draining tor at the last look, or -1 (not draining, no look yet). */
long worker_drain_rend_circuits(const struct worker *w);

/* When this worker's tor last started uploading the descriptor of `address` that clients fetch
 * (descriptor_service_fetched_round_at, confirmed or not), or -1 if never. Of several tors, HSDirs serve
 * the one with the latest. */
double worker_last_upload_at(const struct worker *w, const char *address);

/* Free: the tor supervisor (killing a spawned tor still running) first, then what subscribed to its
 * connection. NULL is a no-op. */
void worker_free(struct worker *w);

/* The identities' keys are loaded (service_ids_load_keys): give the descriptor tracker and the
 * verifier the services' names and addresses. */
void worker_sync_services(struct worker *w);

/* Put the services' names and addresses ("" if none yet), in service_mgr order, into `names` and
 * `addrs` (CONFIG_MAX_SERVICES entries each, borrowed strings). Return how many. */
size_t worker_service_list(const struct worker *w, const char **names, const char **addrs);

/* Hand the directories this worker's tor uses to its user (handover.h) for `conf` (the running or a
 * reloaded one). Return 0, or -1 with a message. */
int worker_hand_over(const struct worker *w, const struct config *conf, char *err, size_t errlen);

/* Start the tor (tor_sup_start); also again after worker_stop's cbs->stopped. Return 0, or -1 with
 * "cannot start tor: <why>". */
int worker_start(struct worker *w, char *err, size_t errlen);

/* Remove the services from the tor, then stop it; cbs->stopped follows. Nothing is handed to a tor that
 * becomes ready after this. */
void worker_stop(struct worker *w);

/* Switch to a reloaded `conf`, after the identities were (service_ids_reconfigure): service_mgr_reconfigure
 * (one SETCONF if tor's view changed), the tor's borrowed config, the tracker's and verifier's services
 * and probe settings. On error (out of memory) return -1 with a message and keep the old state. Sets
 * *tor_changed as service_mgr_reconfigure. */
int worker_reconfigure(struct worker *w, const struct config *conf, bool *tor_changed, char *err, size_t errlen);

/* Is the service with this address (56 characters, no ".onion") verified reachable through this
 * worker: its tor is running, and descriptor.c found the descriptor clients fetch on an HSDir? */
bool worker_service_reachable(const struct worker *w, const char *address);

/* Is it reachable through any of the `n` workers? */
bool workers_service_reachable(struct worker *const *ws, size_t n, const char *address);

/* The workers as the probe's repairs see them (probe.h's struct probe_actions): `ws` and `*n` are read at
 * each call. */
/* Why the tor was last lost or failed, until it bootstraps again; "" if nothing. Borrowed. */
const char *worker_problem(const struct worker *w);

/* Borrowed handles for reports (report.c); valid until worker_free. */
struct tor_sup *worker_tor(const struct worker *w);
struct service_mgr *worker_services(const struct worker *w);
struct descriptor_tracker *worker_descriptors(const struct worker *w);
struct verify *worker_verify(const struct worker *w);
struct torscrape *worker_scrape(const struct worker *w);

#endif
