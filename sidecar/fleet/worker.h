/* worker.h — one tor and everything onionfront keeps per tor: the tor process (spawned or attached) with
 * its control connection and supervision (tor.c), the services' SETCONF state on it (service.c), the
 * descriptor tracker (descriptor.c) and the circuit verifier (verify.c). It wires them to each new
 * control connection and detaches them when it is lost, and reports up through callbacks.
 *
 * Owns those four objects, and the reader of a spawned tor's MetricsPort (torscrape.c). Not the data
 * path (proxy, pools, health checks: shared by all workers, since every tor's HiddenServicePort points
 * at the same per-port sockets), the event base, systemd or the status socket (main.c, report.c). Its
 * parts stay inside: the workerset and report.c ask the questions below, never for a part itself. */
#ifndef ONIONFRONT_WORKER_H
#define ONIONFRONT_WORKER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "sidecar/config/config.h"
#include "sidecar/publish/served_find.h"
#include "sidecar/tor/tor.h"

struct config;
struct descriptor_counts;
struct event_base;
struct metrics;
struct proc_mgr;
struct service_ids;
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
/* Hand its tor the services as the identities say now (service_mgr_republish). Return 0 or -1. */
int worker_republish(struct worker *w);

/* Make the tor build and upload new descriptors of the service with this address alone
 * (service_mgr_renew_one: the others untouched). Return 0, or -1 if its tor is not up or does not host it. */
int worker_renew_service(struct worker *w, const char *address);

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

/* ---- questions about the worker's parts, for the workerset and reports (report.c) ----------------- */

/* Its tor: state, bootstrap progress (0-100, -1 unknown), version ("" until known), restarts, pid (spawn
 * mode, else -1) as tor_sup_* says. */
enum tor_state worker_tor_state(const struct worker *w);
int worker_bootstrap_progress(const struct worker *w);
const char *worker_tor_version(const struct worker *w);
unsigned worker_restarts(const struct worker *w);
long worker_tor_pid(const struct worker *w);

/* Its tor's row in "status": {"instance", "kind", "state", "bootstrap_progress", "version", "pid",
 * "restarts", "uptime_seconds", "verdict" ("up", or why not), "services" (how many it hosts: its mode's,
 * and with tor.tors_per_service those placed on it)}. Returns a new reference. */
json_t *worker_tor_to_json(const struct worker *w);

/* Restart its tor now (a repair: tor_sup_restart), or as a planned stop of a rolling restart
 * (tor_sup_restart_planned); `why` is logged. */
void worker_restart(struct worker *w, const char *why);
void worker_restart_planned(struct worker *w, const char *why);

/* The services as its service_mgr keeps them, in service_ids order: how many, the i-th one's name and
 * address ("" before its key), whether this tor hosts it (its mode), whether an upload was confirmed. */
size_t worker_service_count(const struct worker *w);
const char *worker_service_name(const struct worker *w, size_t i);
const char *worker_service_address(const struct worker *w, size_t i);
bool worker_hosts(const struct worker *w, size_t i);
bool worker_service_uploaded(const struct worker *w, size_t i);
/* service_mgr_to_json. Returns a new reference. */
json_t *worker_services_to_json(const struct worker *w);

/* The descriptor of `address` its tor uploads: the counts (descriptor_service_counts: 0, or -1 if not
 * tracked), the latest upload round of the one clients fetch (descriptor_service_fetched_round_at; -1
 * if never; `rejected` may be NULL), whether every HSDir answered that round
 * (descriptor_service_round_answered_at), its status JSON (a new reference, NULL if not tracked). */
int worker_service_counts(const struct worker *w, const char *address, struct descriptor_counts *out);
double worker_service_fetched_round_at(const struct worker *w, const char *address, bool *complete,
                                       bool *rejected);
double worker_service_round_answered_at(const struct worker *w, const char *address, bool *answered);
json_t *worker_service_descriptor_json(const struct worker *w, const char *address);
/* Re-post the service's descriptors to the HSDirs (descriptor_repost). Return 0 or -1. */
int worker_repost(struct worker *w, const char *address);

/* For `address`, over the `n` workers ws[k] (tor k) that publish it: whose descriptor the HSDirs serve,
 * on `basis` (served_find.h). */
void workers_served(struct worker *const *ws, size_t n, const char *address, enum served_basis basis,
                    struct served_result *out);

/* Single-onion verification: the tor's mode violation (verify_mode_problem on VERIFY_MODE_VIOLATION,
 * else NULL), and the service's verdict's problem if it is a violation (else NULL, also for ""). */
const char *worker_mode_violation(const struct worker *w);
const char *worker_service_violation(const struct worker *w, const char *address);
/* verify_service_to_json and verify_to_json. Return a new reference. */
json_t *worker_service_verify_json(const struct worker *w, const char *address);
json_t *worker_circuits_to_json(const struct worker *w);

/* tor's own counters of the service (its MetricsPort: torscrape_service_to_json), NULL while it lists
 * none; over the `n` workers ws[k], summed (torscrape_sum_to_json). Return a new reference. */
json_t *worker_tor_service_json(const struct worker *w, const char *address);
json_t *workers_tor_service_sum_json(const struct worker *const *ws, size_t n, const char *address);

/* The metrics families of its services (service_mgr_metrics), its descriptors (descriptor_metrics),
 * its verification (verify_metrics); over `n` workers labelled `instances[k]`, tor's own per-service
 * values of the services names[i]/addresses[i] (torscrape_metrics). Return 0 or -1. */
int worker_services_metrics(const struct worker *w, struct metrics *m);
int worker_descriptor_metrics(const struct worker *w, struct metrics *m);
int worker_verify_metrics(const struct worker *w, struct metrics *m);
int workers_tor_hs_metrics(const struct worker *const *ws, const char *const *instances, size_t n_tors,
                           const char *const *names, const char *const *addresses, size_t n, struct metrics *m);

#endif
