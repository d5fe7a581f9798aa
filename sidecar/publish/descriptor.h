/* descriptor.h — where onionfront's descriptors are, as tor reports it in HS_DESC events, and repair
 * when they are not there.
 *
 * Per service (matched by onion address): its two descriptors in the order tor announces them with
 * HS_DESC CREATED ("current" first, "next" second; rend-spec-v3 2.2.4.2: a rotation drops the current
 * one, the next one becomes current and a new next one is CREATED), for each the HSDirs of the latest
 * round of UPLOAD events (its responsible set, with HSDIR_INDEX), which of them confirmed (UPLOADED —
 * matched to the UPLOAD by HSDir fingerprint, since UPLOADED carries no descriptor id), failed (with
 * tor's REASON, or NO_ANSWER when nothing came back within probe_conf.republish_deadline) or already
 * held it (REASON=UPLOAD_REJECTED: the HSDir has this revision or a newer one, which counts as present);
 * the time of the last confirmed upload.
 *
 * Fetch probe ("hsfetch" in the code; "probe" in logs, the status JSON, the onionfront_probe_* metrics
 * and descriptor_counts' probe* fields; not the end-to-end probe of sidecar/probe/): every
 * probe_conf.hsfetch_interval seconds (the first one as soon as the first upload round
 * has settled), `HSFETCH <addr> SERVER=$fp ...` to every HSDir responsible for either descriptor, on the
 * single-hop tor itself (a bare `HSFETCH <addr>` if no upload was seen for 2 minutes); records how many served it
 * (RECEIVED vs FAILED NOT_FOUND), which descriptor clients fetch now (the id in REQUESTED: clients use
 * the descriptor of their current time period, which is tor's "current" or "next" one depending on
 * where the time period is relative to the shared-random value) and the time to the first descriptor.
 * An HSDir that confirmed the upload but answers the probe NOT_FOUND has lost the descriptor (a
 * restarted relay: its HSDir cache is in memory) and is marked failed with reason NOT_FOUND.
 * Probes are paced (pace.h): at most 3 services' fetches in flight (each asks every
 * responsible HSDir: a dozen directory circuits), starts at least hsfetch_interval / services apart (at
 * most 2 s); due ones wait their turn, the most overdue first.
 *
 * Republish: HSDirs of a descriptor that failed, lost it, or stayed unconfirmed past the deadline get the
 * descriptor again with `+HSPOST SERVER=$fp HSADDRESS=<addr>` (one command per HSDir), using the body
 * from an HS_DESC_CONTENT event of a fetch from an HSDir that confirmed this round's upload, with an
 * exponential backoff per HSDir (republish_deadline, doubled per attempt, at most 1 h). tor 0.4.9 has no
 * command that makes it upload its own descriptor to one HSDir again (SETCONF of unchanged services and
 * SIGNAL RELOAD do nothing; removing and re-adding a service makes new descriptors but tears down its
 * introduction circuits), and HSFETCH only fetches the descriptor of the client's current time period,
 * so only the descriptor clients fetch now can be republished; the other one is reported as such and
 * repaired once it becomes the one clients fetch (or by tor's own next upload round).
 *
 * Owns that state, one timer and the HSFETCH/HSPOST commands it sends. Not the services themselves
 * (service.c), not SETEVENTS (tor.c). In three files over one private header (descriptor_int.h):
 * descriptor.c the state, the upload record and the event wiring; descriptor_hsfetch.c the fetches of
 * our own descriptor and the re-posts; descriptor_report.c the JSON and the metrics. The state machine
 * is driven by descriptor_on_hs_desc, descriptor_on_hs_desc_content and descriptor_tick with an explicit
 * time, so tests feed recorded events and a fake clock; commands go out through a replaceable sender
 * (cp_conn_send by default). */
#ifndef ONIONFRONT_DESCRIPTOR_H
#define ONIONFRONT_DESCRIPTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "controlproto/cp_conn.h"
#include "sidecar/config/config.h"

struct event_base;
struct cp_event_hs_desc;
struct cp_event_hs_desc_content;
struct metrics;
struct descriptor_tracker;
struct served_copy;
struct served_ident;

/* One HSDir's state for one descriptor. */
enum desc_hsdir_state {
    DESC_HSDIR_PENDING,   /* uploaded (by tor, or re-posted by us), no answer yet */
    DESC_HSDIR_CONFIRMED, /* UPLOADED */
    DESC_HSDIR_FAILED,    /* FAILED with a reason, or NO_ANSWER past the deadline */
    DESC_HSDIR_PRESENT,   /* FAILED REASON=UPLOAD_REJECTED: it already holds this revision or a newer one */
};
const char *desc_hsdir_state_str(enum desc_hsdir_state s);

/* A descriptor's overall state, logged on change. */
enum desc_status {
    DESC_STATUS_NONE,       /* no upload seen yet */
    DESC_STATUS_UPLOADING,  /* some HSDirs pending within the deadline, none failed */
    DESC_STATUS_COMPLETE,   /* every responsible HSDir holds it */
    DESC_STATUS_INCOMPLETE, /* some responsible HSDirs failed or did not answer in time */
};
const char *desc_status_str(enum desc_status s);

#define DESCRIPTOR_MAX_BACKOFF_S 3600.0 /* republish backoff cap per HSDir */
#define DESCRIPTOR_FETCH_TIMEOUT_S 60.0 /* a fetch (probe or republish source) ends after this at most;
                                           probes do not overlap, so a slow one delays the next */

/* Sends one control command; `cb` must then be called exactly once (possibly later). Return 0, or -1
 * if the command was not accepted (cb is then not called). */
typedef int (*descriptor_send_fn)(void *arg, const char *cmd, cp_conn_reply_cb cb, void *cb_arg);
/* A clock in seconds. The tracker reads two: the monotonic one (CLOCK_MONOTONIC, clock_now_ms; an
 * arbitrary origin) for every time it keeps, so deadlines, backoffs, the hsfetch schedule and ages never
 * jump with the wall clock; and the wall clock (CLOCK_REALTIME, seconds since the Unix epoch) only to
 * show those times as dates in descriptor_*_to_json, where a date is the point. */
typedef double (*descriptor_clock_fn)(void *arg);

/* Create a tracker. `base` drives its one-second timer (NULL: no timer; the caller calls
 * descriptor_tick). Copies `probe`. Returns NULL on allocation failure. */
struct descriptor_tracker *descriptor_tracker_new(struct event_base *base, const struct probe_conf *probe);

/* Free. Commands still in flight complete into a stub that ignores them, so free the connection
 * (tor_sup_free) first or accept that their completions are dropped. NULL is a no-op. */
void descriptor_tracker_free(struct descriptor_tracker *t);

/* Replace the clocks (tests): `mono` for the times the tracker keeps, `wall` for dates shown; both get
 * `arg`. NULL restores the real one (CLOCK_MONOTONIC, CLOCK_REALTIME). */
void descriptor_tracker_set_clock(struct descriptor_tracker *t, descriptor_clock_fn mono, descriptor_clock_fn wall,
                                  void *arg);

/* Replace the command sender (tests). NULL restores cp_conn_send on the attached connection. */
void descriptor_tracker_set_sender(struct descriptor_tracker *t, descriptor_send_fn fn, void *arg);

/* Take a reloaded probe config (copied). */
void descriptor_tracker_set_probe_conf(struct descriptor_tracker *t, const struct probe_conf *probe);

/* Set the services to track: names[i] (metric label) and addresses[i] (56 base32 characters, no
 * ".onion"; "" = not known yet, skipped). A service whose address stays keeps its state (even if
 * renamed); others are dropped or start empty. Return 0, or -1 on allocation failure (old list kept). */
int descriptor_tracker_set_services(struct descriptor_tracker *t, const char *const *names,
                                    const char *const *addresses, size_t n);

/* A new verified control connection: subscribe to HS_DESC and HS_DESC_CONTENT on it and start probing
 * (the first probe one hsfetch_interval from now). State from an earlier connection is kept: a restarted
 * tor announces its descriptors with CREATED again and they replace it. `conn` may be NULL when a
 * sender is installed (tests): the tracker is then online without subscribing. */
void descriptor_tracker_attach(struct descriptor_tracker *t, struct cp_conn *conn);

/* The attached connection is gone: forget in-flight fetches and stop sending. */
void descriptor_tracker_detach(struct descriptor_tracker *t);

/* Feed one decoded HS_DESC event at time `now` (the monotonic clock, as for every `now` below). Events
 * for other addresses are ignored. */
void descriptor_on_hs_desc(struct descriptor_tracker *t, const struct cp_event_hs_desc *e, double now);

/* Feed one decoded HS_DESC_CONTENT event at time `now` (a non-empty body becomes the republish source). */
void descriptor_on_hs_desc_content(struct descriptor_tracker *t, const struct cp_event_hs_desc_content *e,
                                   double now);

/* Time-driven work at `now`: uploads overdue -> failed (NO_ANSWER), fetch timeouts, the hsfetch schedule,
 * republishing. Does nothing to tor unless attached (online). */
void descriptor_tick(struct descriptor_tracker *t, double now);

/* The repair ladder's first step: fetch the service's current descriptor from its own tor (GETINFO
 * hs/service/desc/id/<addr>) and post it to every responsible HSDir (+HSPOST HSADDRESS=<addr>). Return 0
 * if the commands went out (their outcome is logged), or -1 (unknown address, not attached, OOM). */
int descriptor_repost(struct descriptor_tracker *t, const char *address);

/* True if `address` has at least one HSDir holding the descriptor clients fetch (the one the last probe
 * saw; before any probe, the current one) in the latest upload round, and the last probe, if there was
 * one, got it from at least one HSDir. False for unknown addresses. */
bool descriptor_service_reachable(const struct descriptor_tracker *t, const char *address);

/* When the latest upload round of the descriptor clients fetch (as in descriptor_counts) started, on the
 * monotonic clock, or -1 if it was never uploaded (or the address is unknown); *complete set if every
 * responsible HSDir of that round accepted it (UPLOADED; not UPLOAD_REJECTED, which another tor's
 * descriptor of the same revision also causes); *rejected (if not NULL) set if every one of them answered
 * UPLOAD_REJECTED: that round changed nothing on the HSDirs. tor sets the revision counter when it
 * encodes a descriptor for an upload and HSDirs keep the highest: of several tors with the same key,
 * HSDirs serve the latest round they all accepted, unless a later one of another tor may have replaced
 * it (workerset_served compares these for failover and the rolling restart). */
double descriptor_service_fetched_round_at(const struct descriptor_tracker *t, const char *address, bool *complete,
                                           bool *rejected);
/* As descriptor_service_fetched_round_at, with *answered set if every responsible HSDir of that round
 * answered it: accepted, or refused as holding a descriptor at least as new. Tors with one key that rotate
 * to a new time period in the same second encode descriptors of the same revision, and each HSDir keeps
 * the first to arrive: such a round is answered but never complete. */
double descriptor_service_round_answered_at(const struct descriptor_tracker *t, const char *address, bool *answered);

/* Several tors with one key (served.h): at each probe also read tor's own current descriptor (GETINFO
 * hs/service/desc/id/<addr>) for descriptor_service_own. Off by default (one tor has nothing to compare). */
void descriptor_tracker_set_read_own(struct descriptor_tracker *t, bool on);

/* tor's own descriptor of `address` as last read (descriptor_tracker_set_read_own) into *out. Return 0,
 * or -1 (not tracked, never read, or tor had none: out->valid false). */
int descriptor_service_own(const struct descriptor_tracker *t, const char *address, struct served_ident *out);

/* What each HSDir answered the latest fetch of the descriptor clients fetch (the probe's, or any other
 * HSFETCH seen): a parsed copy, or none (NOT_FOUND from a responsible HSDir). At most `cap` into `out`;
 * *at set to the time of the latest answer (-1 if none). Return how many. */
size_t descriptor_service_copies(const struct descriptor_tracker *t, const char *address, struct served_copy *out,
                                 size_t cap, double *at);

/* HSDir `fp`'s upload of descriptor `desc_id` of `address` in that descriptor's latest round: when it
 * started (*upload_at; -1: none), when the HSDir accepted it (*accepted_at: UPLOADED, matched to it for
 * certain, of tor's own upload rather than our re-post of a fetched copy; -1: not accepted), and whether
 * it refused it (*rejected: UPLOAD_REJECTED). */
void descriptor_service_hsdir_upload(const struct descriptor_tracker *t, const char *address, const char *desc_id,
                                     const char *fp, double *upload_at, double *accepted_at, bool *rejected);

/* Counters for tests and summaries. */
struct descriptor_counts {
    unsigned hsdirs_total;     /* responsible HSDirs of the descriptor clients fetch (see above) */
    unsigned hsdirs_confirmed; /* of those: confirmed or present */
    unsigned hsdirs_failed;    /* of those: failed */
    unsigned long uploads_confirmed;
    unsigned long republishes;
    unsigned long probes_ok, probes_failed;
    int probe_served;          /* HSDirs that served the last probe, -1 before the first */
};
/* Fill *out for `address`. Return 0, or -1 if the address is not tracked. */
int descriptor_service_counts(const struct descriptor_tracker *t, const char *address,
                              struct descriptor_counts *out);

/* One service as JSON, or NULL if not tracked. Returns a new reference:
 * {"service", "address", "reachable", "hsdirs_confirmed", "hsdirs_total", "hsdirs_failed",
 *  "last_confirmed_upload" (ISO 8601 UTC or null), "last_upload_age_seconds" (or null),
 *  "uploads_confirmed", "republishes", "last_republish",
 *  "descriptors": [{"slot": "current"|"next", "id", "created", "status", "client_fetched",
 *                   "upload_started", "hsdirs": [{"fp", "nick", "state", "reason", "time",
 *                   "confirmed", "republishes"}]}],
 *  "probe": null | {"time", "ok", "descriptor_id" (the one clients fetch), "slot", "asked" (HSDirs of
 *                   either descriptor), "responsible" (of those, responsible for the fetched one),
 *                   "responsible_served", "served", "not_found", "failed", "no_answer",
 *                   "latency_seconds" (to the first copy), "error"}, "probes_ok", "probes_failed"} */
json_t *descriptor_service_to_json(const struct descriptor_tracker *t, const char *address);

/* Every tracked service: a JSON array of descriptor_service_to_json objects. Returns a new reference. */
json_t *descriptor_to_json(const struct descriptor_tracker *t);

/* Append onionfront_descriptor_uploads_confirmed_total{service}, onionfront_descriptor_hsdirs{service,
 * slot,state}, onionfront_republish_total{service}, onionfront_probe_hsdirs_serving{service},
 * onionfront_probe_success_total{service}, onionfront_probe_failure_total{service} and
 * onionfront_probe_latency_seconds{service} to `m`. Return 0, or -1 (a family twice, or OOM). */
int descriptor_metrics(const struct descriptor_tracker *t, struct metrics *m);

#endif
