/* verify.h — evidence that onionfront's services really are single onion services, from what tor does
 * rather than from what it was told.
 *
 * From CIRC events: every HS_SERVICE_INTRO and HS_SERVICE_REND circuit that reaches BUILT is counted per
 * service (REND_QUERY) by path length and the ONEHOP_TUNNEL build flag. A single onion builds them as one
 * hop straight to the introduction or rendezvous relay (TOR-FACTS; proposal 260); tor retries a failed
 * rendezvous with a multi-hop circuit, so a few multi-hop circuits are counted as retries, not flagged.
 * The verdict per service: "unverified" (fewer than VERIFY_MIN_EVIDENCE circuits), "single_onion" (more
 * than half one-hop) or "not_single_onion" (mostly multi-hop — a service added with ADD_ONION on a
 * single-hop tor is one: TOR-FACTS). On the anonymous services' tor (verify_set_mode) the other rule
 * (single_onion.h's anonymous_circ_fits): "anonymous" once VERIFY_MIN_EVIDENCE circuits are built and
 * none broke it, "not_anonymous" from the first one that did (a one-hop circuit: never a retry there). Services that are not onionfront's (another controller's ADD_ONION,
 * an attached tor's own) get the same verdicts under "other services". HS_SERVICE_HSDIR circuits
 * (descriptor uploads, multi-hop by design) and every other purpose are counted by hops, never flagged.
 *
 * The tor's mode: every VERIFY_MODE_INTERVAL_S seconds and on each new control connection, GETCONF
 * HiddenServiceSingleHopMode HiddenServiceNonAnonymousMode and GETINFO of the client listeners; a
 * violation (attach mode: someone changed the tor) is a status value and a log line on change. tor.c
 * refuses such a tor at start; this catches later changes.
 *
 * Owns the counters, the mode-check timer and its commands. Not the circuits (tor's) nor SETEVENTS
 * (tor.c). verify_on_circ and verify_on_mode are pure, so tests feed recorded CIRC lines and replies. */
#ifndef ONIONFRONT_VERIFY_H
#define ONIONFRONT_VERIFY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sidecar/config/config.h"

struct event_base;
struct cp_conn;
struct cp_event_circ;
struct cp_info;
struct metrics;
struct verify;

#define VERIFY_MIN_EVIDENCE 2       /* intro + rend circuits before a verdict */
#define VERIFY_MODE_INTERVAL_S 60   /* tor mode re-check */
#define VERIFY_MAX_OTHER 64         /* foreign services tracked */
#define VERIFY_MAX_HOPS 8           /* hop counts above this are counted as VERIFY_MAX_HOPS ("8+") */

enum verify_verdict {
    VERIFY_UNVERIFIED,
    VERIFY_SINGLE_ONION,
    VERIFY_NOT_SINGLE_ONION,
    VERIFY_ANONYMOUS,     /* an anonymous service: enough intro/rend circuits, all multi-hop */
    VERIFY_NOT_ANONYMOUS, /* an anonymous service with a circuit that breaks anonymous_circ_fits */
};
/* "unverified", "single_onion", "not_single_onion", "anonymous", "not_anonymous" */
const char *verify_verdict_str(enum verify_verdict v);

enum verify_mode {
    VERIFY_MODE_UNKNOWN,   /* not checked yet (or no connection) */
    VERIFY_MODE_OK,        /* single-hop + non-anonymous, no client ports */
    VERIFY_MODE_VIOLATION, /* see verify_mode_detail */
};
/* "unknown", "ok", "violation" */
const char *verify_mode_str(enum verify_mode m);

/* Create a verifier; `base` drives the mode re-check timer (NULL: no timer). NULL on OOM. */
struct verify *verify_new(struct event_base *base);

/* Free. Free the control connection first (its pending commands complete into this object). NULL is a
 * no-op. */
void verify_free(struct verify *v);

/* Make this the verifier of the tor of `kind` (worker_set_mode; SERVICE_MODE_SINGLE by default): the
 * anonymous services' tor is judged by anonymous_tor_check instead of the single-onion rule. */
void verify_set_mode(struct verify *v, enum service_mode kind);

/* Set onionfront's services: names[i] (label) and addresses[i] (56 base32 characters, "" = not known
 * yet). Counters of addresses that stay are kept. Return 0, or -1 on OOM (old list kept). */
int verify_set_services(struct verify *v, const char *const *names, const char *const *addresses, size_t n);

/* A new verified control connection: subscribe to CIRC on it, check the mode now and every
 * VERIFY_MODE_INTERVAL_S seconds. */
void verify_attach(struct verify *v, struct cp_conn *conn);

/* The attached connection is gone: stop checking; the mode becomes unknown. */
void verify_detach(struct verify *v);

/* Feed one decoded CIRC event. Only BUILT events count (each circuit once per purpose). */
void verify_on_circ(struct verify *v, const struct cp_event_circ *c);

/* Judge the mode from a GETCONF answer (HiddenServiceSingleHopMode, HiddenServiceNonAnonymousMode) and a
 * GETINFO answer (net/listeners/socks, trans, natd, dns, httptunnel); either may be NULL if that command
 * failed (the mode is then unknown). Logs a change. Returns the new mode. */
enum verify_mode verify_on_mode(struct verify *v, const struct cp_info *conf, const struct cp_info *listeners);

enum verify_verdict verify_service_verdict(const struct verify *v, const char *address);
enum verify_mode verify_mode_state(const struct verify *v);
/* What is wrong with the mode, or "" (borrowed). */
const char *verify_mode_detail(const struct verify *v);
/* A violation as "status" lists it ("tor is no longer in single-onion mode: ..."), or "" (borrowed). */
const char *verify_mode_problem(const struct verify *v);

/* Is `v` a service's violation of its mode (status lists it, Onion-Location withdraws it)? */
bool verify_verdict_is_violation(enum verify_verdict v);
/* Such a violation as "status" says it after "service NAME: ", or "" for a verdict that is none. */
const char *verify_verdict_problem(enum verify_verdict v);

/* Per-service counts (for tests and summaries). */
struct verify_counts {
    unsigned long intro_one_hop, intro_multi_hop; /* one hop = 1 hop and ONEHOP_TUNNEL */
    unsigned long rend_one_hop, rend_multi_hop;
    unsigned long not_anonymous; /* anonymous services' tor: intro/rend circuits that broke the rule */
};
/* Fill *out for `address` (ours or another service's). Return 0, or -1 if never seen. */
int verify_service_counts(const struct verify *v, const char *address, struct verify_counts *out);
/* Built circuits of `purpose` ("HS_SERVICE_HSDIR" ...) with `hops` hops (VERIFY_MAX_HOPS: that or more). */
unsigned long verify_circuits(const struct verify *v, const char *purpose, unsigned hops);

/* One service as JSON, or NULL if not ours. Returns a new reference:
 * {"service", "address", "verdict", "detail", "intro": {"one_hop", "multi_hop", "hops": {"1": n, ...}},
 *  "rend": {...}, "last_built"} */
json_t *verify_service_to_json(const struct verify *v, const char *address);

/* Everything: {"mode": {"state", "detail", "checked"}, "services": [...], "other_services": [...],
 * "circuits": {"<purpose>": {"<hops>": n}}}. Returns a new reference. */
json_t *verify_to_json(const struct verify *v);

/* Append onionfront_circuits_total{purpose,hops}, onionfront_service_verified{service} (1 for
 * single_onion or anonymous, else 0) and onionfront_tor_mode_ok (1/0; no sample while unknown). Return 0 or -1. */
int verify_metrics(const struct verify *v, struct metrics *m);

#endif
