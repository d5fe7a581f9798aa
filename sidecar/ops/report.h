/* report.h — what the status socket and GET /metrics answer: the status, services, circuits and
 * backends JSON and the metrics text, built from borrowed handles to the daemon's parts (its set of
 * tors, the data path, the status server), asking the workers questions (worker.h), never for their
 * parts. Adding a worker adds rows, not code.
 *
 * Owns nothing: every call reads the handles in `struct report_src` and returns a new document. Not
 * the status protocol (status.c) nor any decision (the modules' own state and verdicts are reported). */
#ifndef ONIONFRONT_REPORT_H
#define ONIONFRONT_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct config;
struct onionloc_entry;
struct metrics_http;
struct ob_frontend;
struct probe;
struct proxy;
struct service_ids;
struct status_server;
struct workerset;

/* Borrowed handles, filled in by the daemon for each call (designated initializers: a field left out is
 * NULL, "none"). */
struct report_src {
    const struct config *conf;
    const struct service_ids *ids; /* the services' identities (and refusals), shared by the workers */
    /* The tors (never NULL): their rows (workerset_list: the first is the tor "status" shows under "tor"),
     * which one the HSDirs serve (workerset_served), the rolling restart (workerset_roll). */
    const struct workerset *workerset;
    struct proxy *proxy;
    const struct status_server *status; /* may be NULL: no status connection counters */
    const struct metrics_http *metrics_http; /* NULL without metrics.listen: its families stay empty */
    const struct probe *probe;               /* the end-to-end probe (its verdicts, repairs, metrics) */
    time_t started_wall;                /* Unix time onionfront started */
    struct timespec started;            /* CLOCK_MONOTONIC, for uptime */
    bool shutting_down;
    const struct ob_frontend *ob; /* Onionbalance's frontend (ob_frontend.h); NULL: none */
};

/* "status": the overall state — down (no usable tor: none coming up or bootstrapped, or, from
 * tor.bootstrap_timeout after onionfront's start, none bootstrapped; or shutting down), starting (within
 * tor.bootstrap_timeout of the start, every problem is one of start-up: a tor coming up, a service's
 * first upload not confirmed yet), degraded (something listed in "problems": tor not bootstrapped, a
 * tor mode violation, a refused service (its key is missing or not the recorded one), a service without
 * a confirmed upload, with failed HSDirs, not found by the periodic HSFETCH (hsfetch) or not single
 * onion, a port without a backend up or with some of its backends down, each named, a TLS certificate
 * finding (certwatch.h)), ok — with tor's state, each tor's row, the rolling restart ("roll":
 * roll_to_json) and "certificates": ok, warning or critical, the worst TLS certificate finding at
 * certwatch.h's thresholds. Returns a new
 * reference. */
json_t *report_status_json(const struct report_src *r);

/* "services": service_mgr_to_json, each element (same order as service_mgr_count) with the keys
 * `onionfront status` reads (status_client.h): "descriptor" (descriptor_service_to_json: HSDirs, uploads,
 * the hsfetch), "verdict" and "verify" (verify_service_to_json) — without the per-HSDir lists
 * (descriptor.descriptors[].hsdirs, served.hsdirs), whose counts stay. Returns a new reference. */
json_t *report_services_json(const struct report_src *r);

/* "services-detail": the same with the per-HSDir lists. Returns a new reference. */
json_t *report_services_detail_json(const struct report_src *r);

/* "circuits": verify_to_json — the tor's mode, built circuits by purpose and hops, per-service one-hop
 * and multi-hop counts (ours and other services on the same tor). Returns a new reference. */
json_t *report_circuits_json(const struct report_src *r);

/* "backends": each live pool (backend_pool_to_json) with its port's stream counters from the data path
 * under "streams" (proxy_to_json's fields). Returns a new reference. */
json_t *report_backends_json(const struct report_src *r);

/* "metrics" and GET /metrics: every module's families. Returns malloc'd text, or NULL (logged). */
char *report_metrics_text(const struct report_src *r);

/* The Onion-Location files' entries: each service (config order, at most `cap`) with whether it is
 * advertised: its onion_location is on and it is verified reachable through any worker now (never while
 * shutting down). Return how many, and the reachable ones (advertised or not) in *reachable. */
size_t report_reachability(const struct report_src *r, struct onionloc_entry *out, size_t cap, size_t *reachable);

/* systemd's STATUS= line: stopping, running with `reachable` of the services reachable, tor
 * bootstrapping, or tor's state and why it was lost. Into `out` (`len` bytes). */
void report_status_line(const struct report_src *r, size_t reachable, char *out, size_t len);

#endif
