/* roll.h — a rolling restart of the tors (tor.instances): restart them one at a time so that HSDirs
 * always serve a descriptor of a tor that stays up, and visitors never find the service gone.
 *
 * For each tor k in turn (first one whose descriptors the HSDirs do not serve, TOR-FACTS "two tors with
 * the same key"):
 *   HANDOVER    unless another tor that is up already serves (workerset_served: every responsible HSDir
 *               accepted its latest round, and no later round of another tor was accepted anywhere — a
 *               same-second tie is refused by the HSDirs), wait up to ROLL_SETTLE_S for an
 *               upload in progress to settle that; then one survivor builds and uploads new descriptors
 *               (worker_renew_descriptors: a PoW-parameter change; it keeps the survivor's introduction
 *               points but re-seeds its PoW puzzles) and the roll waits for the HSDirs' confirmations (HS_DESC UPLOADED, counted by
 *               descriptor.c), asking again every ROLL_RENEW_AGAIN_S while they are missing (a loaded
 *               tor drops an upload that waited too long, with no answer and no retry);
 *   DRAINING    HSDirs serve a tor that stays up; k is wound down (worker_drain_start, circdrain.h): it
 *               uploads no descriptor any more, takes no new introduction (its introduction circuits are
 *               closed; a visitor whose cached descriptor names them fetches the other tor's), and each
 *               visitor's rendezvous circuit to it is closed right after its last stream ended (visitors'
 *               tors never let go of one by themselves), so the visitor's next request goes out on a
 *               new circuit, to the other tor. k is ended at the first look (every ROLL_TICK_MS) that
 *               finds it drained (no introduction or rendezvous circuit for a while) and no visitor's
 *               stream through it (the data path is shared, so a stream's tor is the peer process of its socket:
 *               proxy_streams_from_pid); so no visitor still sends requests to k when it ends (before,
 *               a request sent on its open circuit just after k's end failed). After the drain limit
 *               (tor.drain_timeout; default ROLL_DRAIN_DEFAULT_S) k is ended anyway: the circuits and
 *               streams still open are cut (logged, counted). If k uploads anew meanwhile (HSDirs may
 *               serve it again), the turn starts over at HANDOVER;
 *   RESTARTING  k's tor is ended and started again (tor_sup_restart_planned: its owning control
 *               connection is closed and it is killed, so it exits at once); wait until it is RUNNING;
 *   PUBLISHING  wait until k's own new descriptors are confirmed by every responsible HSDir; then the next.
 * With one tor a roll is a plain restart of it, at once (no drain: nothing else serves meanwhile): an
 * outage from the stop until its descriptors are up. Each step has a deadline on the monotonic clock. The
 * roll aborts (logged once, status shows why) when a
 * deadline passes or a tor other than k goes down mid-roll: k then comes back by itself as after any
 * loss, and nothing else is stopped.
 *
 * Owns the roll's state and, when given an event base, a wake-up timer while rolling. Not the tors: it
 * acts on them only through struct roll_ops (workerset.c over real workers; fakes in the unit test), so
 * it is driven by roll_tick with the ops' clock. */
#ifndef ONIONFRONT_ROLL_H
#define ONIONFRONT_ROLL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct metrics;
struct roll;

#define ROLL_SETTLE_S 20.0     /* an upload in progress may make a tor served before a hand-over */
#define ROLL_HANDOVER_S 90.0   /* a survivor's new descriptors confirmed */
#define ROLL_RENEW_AGAIN_S 30.0 /* not confirmed yet: the survivor publishes anew (at 30 s and 60 s) */
/* Draining: the longest wait, by default, for the visitors' streams through the tor to be ended to finish
 * (circdrain.h closes each visitor's circuit right after its last stream). Web requests last well under
 * a second; a browser keeps an idle HTTP connection (one stream) open for up to 115 s (Firefox's and Tor
 * Browser's network.http.keep-alive.timeout), so 120 s lets those end by themselves; a longer download,
 * a websocket or an IRC connection is cut then. tor.drain_timeout sets it (0: no drain). */
#define ROLL_DRAIN_DEFAULT_S 120.0
#define ROLL_RESTART_S 180.0   /* a restarted tor RUNNING again */
#define ROLL_PUBLISH_S 120.0   /* its own descriptors confirmed */
#define ROLL_TICK_MS 250       /* the timer's period while rolling */
/* The operator's restart-tor (the status socket, roll_start_command): at most one roll started this way
 * per this many seconds, so that a script or a user in a loop cannot keep every tor restarting. */
#define ROLL_COMMAND_INTERVAL_S 60.0

enum roll_state {
    ROLL_IDLE,       /* no roll running */
    ROLL_HANDOVER,   /* before stopping the current tor: a survivor publishes anew */
    ROLL_DRAINING,   /* HSDirs serve another tor: waiting until visitors let go of the current one */
    ROLL_RESTARTING, /* the current tor was ended; waiting for it to run again */
    ROLL_PUBLISHING, /* waiting for the current tor's own descriptors to be confirmed */
};
const char *roll_state_str(enum roll_state s);

/* How the roll sees the tors 0 .. n-1. Every function gets `arg`. */
struct roll_ops {
    void *arg;
    size_t (*count)(void *arg);
    /* Is tor k bootstrapped and running? */
    bool (*is_up)(void *arg, size_t k);
    /* How often tor k was (re)started so far (tor_sup_restarts): a restart that took grows it. */
    unsigned (*restarts)(void *arg, size_t k);
    /* Do HSDirs serve, for every service tor k hosts, tor s's descriptor rather than tor k's (or any
     * other's; workerset_served)? For a service that tor s does not host (tor.tors_per_service), another
     * tor's that is up, not k's. */
    bool (*serves)(void *arg, size_t s, size_t k);
    /* Has tor k, for every service, an upload round that started at or after `since` (now's clock),
     * answered by every responsible HSDir (accepted, or refused as holding one at least as new)? */
    bool (*published_since)(void *arg, size_t k, double since);
    /* Make tor s build and upload new descriptors now, before tor k ends: and, for the services of tor k
     * that s does not host (tor.tors_per_service), one other tor up that hosts each. 0, or -1 if s cannot. */
    int (*renew)(void *arg, size_t s, size_t k);
    /* How many visitors' streams are open through tor k now (the data path's streams whose peer is k's
     * tor process). */
    unsigned (*open_streams)(void *arg, size_t k);
    /* Wind tor k down before its end (worker_drain_start); 0, or -1 if it cannot (not up). */
    int (*drain_start)(void *arg, size_t k);
    /* Tor k stays after all (an aborted roll): it publishes again. */
    void (*drain_stop)(void *arg, size_t k);
    /* Rendezvous circuits open on the draining tor k at its last look, or -1 before the first look. */
    long (*rend_circuits)(void *arg, size_t k);
    /* Is the draining tor k drained: no introduction or rendezvous circuit for a while
     * (circdrain_is_drained)? */
    bool (*drained)(void *arg, size_t k);
    /* End tor k and start it again (its supervisor's restart). */
    void (*restart)(void *arg, size_t k, const char *why);
    /* The monotonic clock in seconds. */
    double (*now)(void *arg);
};

/* A roll over `ops` (copied). `base` drives a ROLL_TICK_MS timer while rolling (NULL: the caller calls
 * roll_tick). NULL on OOM. */
struct roll *roll_new(struct event_base *base, const struct roll_ops *ops);
void roll_free(struct roll *r); /* NULL is a no-op */

/* The longest drain of each tor (tor.drain_timeout), for rolls started from now on. */
void roll_set_drain_limit(struct roll *r, double seconds);

/* Start a roll (`why`, e.g. "requested by restart-tor", is logged and shown). Refused while one runs or
 * while a tor is not up (with several tors, restarting then would leave none). Return 0 with what
 * started in `msg`, or -1 with why not. */
int roll_start(struct roll *r, const char *why, char *msg, size_t msglen);

/* roll_start for the operator's restart-tor: refused within ROLL_COMMAND_INTERVAL_S (ops->now(),
 * monotonic) of the last roll this function started, saying when the next is allowed (and whether a roll
 * runs now), else as roll_start is (one runs, a tor is down). Rolls that onionfront starts itself (a new tor.binary) are not counted. Return
 * 0 with what started in `msg`, or -1 with why not. */
int roll_start_command(struct roll *r, const char *why, char *msg, size_t msglen);

/* Advance: check the current step's condition, deadline and the other tors at ops->now(). */
void roll_tick(struct roll *r);

/* Tor k was lost (the worker's lost report): if it is not the one being restarted, abort at once. */
void roll_worker_lost(struct roll *r, size_t k, const char *why);

/* End a running roll now as aborted with `why` (shutdown); nothing if none runs. */
void roll_abort(struct roll *r, const char *why);

/* Is a roll running? */
bool roll_is_running(const struct roll *r);

enum roll_state roll_state(const struct roll *r);

/* The tor being restarted now (0-based), or -1 when idle. */
long roll_current(const struct roll *r);

/* How the last roll ended: true if it restarted every tor. *message (borrowed) says how it ended; false
 * with "" if none ended yet. */
bool roll_last_ok(const struct roll *r, const char **message);

/* {"state", "current" (instance number, 1-based, or null), "survivor" (null unless handing over),
 *  "restarted" (tors done in this roll), "total", "why", "started" (Unix time or null),
 *  "step_seconds" (in the current step), "open_streams" and "rend_circuits" (of the current tor while
 *  draining, else null), "drain_limit" (seconds), "streams_cut" and "circuits_cut" (open when a drain
 *  reached its limit, in the running or last roll), "streams_cut_total", "circuits_cut_total",
 *  "rolls" (finished), "aborted",
 *  "last_result": null | {"ok", "message", "finished" (Unix time), "seconds"}}. Returns a new reference. */
json_t *roll_to_json(const struct roll *r);

/* Append onionfront_tor_rolls_total{result="ok"|"aborted"}, onionfront_tor_roll_running,
 * onionfront_tor_roll_streams_cut_total and onionfront_tor_roll_circuits_cut_total to `m`.
 * Return 0, or -1 (a family twice, or OOM). */
int roll_metrics(const struct roll *r, struct metrics *m);

#endif
