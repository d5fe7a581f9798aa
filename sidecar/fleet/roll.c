/* roll.c — a rolling restart of the tors, one at a time (see roll.h).
 *
 * Why the order and the hand-over: all tors publish the same services with the same key and HSDirs keep
 * the descriptor with the highest revision counter, i.e. the last one encoded (TOR-FACTS). Ending the tor
 * whose descriptors HSDirs serve would send new visitors to dead introduction points until another tor
 * uploads; so a tor is ended only once another, which stays up, is confirmed as the one served. Choosing
 * first a tor that is not served makes that true without any new upload; after its restart it uploads
 * the newest descriptors and is served while the next one restarts. */
#include "sidecar/fleet/roll.h"

#include <event2/event.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sidecar/identity/instance.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"

struct roll {
    struct roll_ops ops;
    struct event *tick_ev; /* NULL without a base */
    enum roll_state state;
    char why[128];          /* why the running (or last) roll started */
    bool done[INSTANCE_MAX]; /* restarted in this roll */
    size_t n, n_done;
    size_t current;          /* valid unless idle */
    long survivor;           /* handing over: the tor that publishes anew, or -1 (one served already) */
    bool renewed;            /* handing over: the survivor was told to publish anew */
    unsigned renews;         /* handing over: how often it was told (ROLL_RENEW_AGAIN_S) */
    double step_at;          /* ops->now() when the current step began: its deadline's origin */
    double stopped_at;       /* when the current tor was ended: its new descriptors are uploaded after */
    double started_at;
    time_t started_wall;
    unsigned restarts_before; /* the current tor's restart count before we ended it */
    unsigned open_streams;    /* draining: visitors' streams through the current tor at the last look */
    long rend_circuits;       /* draining: rendezvous circuits open on the current tor at its last look, or -1 */
    double drain_limit;       /* the longest drain (tor.drain_timeout) */
    bool commanded;           /* roll_start_command started a roll ... */
    double commanded_at;      /* ... at this ops->now() */
    unsigned long cut_roll;   /* streams open through tors ended at the drain limit, in this (or the last) roll */
    unsigned long cut_total;  /* the same over all rolls */
    unsigned long circ_cut_roll, circ_cut_total; /* the same for rendezvous circuits */
    /* the last roll that ended */
    unsigned long rolls, aborted;
    bool has_last, last_ok;
    char last_message[256];
    time_t last_finished;
    double last_seconds;
};

static const char *const roll_state_names[] = {
    [ROLL_IDLE] = "idle",
    [ROLL_HANDOVER] = "handover",
    [ROLL_DRAINING] = "draining",
    [ROLL_RESTARTING] = "restarting",
    [ROLL_PUBLISHING] = "publishing",
};

const char *roll_state_str(enum roll_state s)
{
    return (unsigned)s < sizeof(roll_state_names) / sizeof(roll_state_names[0]) ? roll_state_names[s] : "unknown";
}

static double roll_now(const struct roll *r)
{
    return r->ops.now(r->ops.arg);
}

static void roll_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    roll_tick(arg);
}

struct roll *roll_new(struct event_base *base, const struct roll_ops *ops)
{
    struct roll *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->ops = *ops;
    r->survivor = -1;
    r->rend_circuits = -1;
    r->drain_limit = ROLL_DRAIN_DEFAULT_S;
    if (base && !(r->tick_ev = event_new(base, -1, EV_PERSIST, roll_tick_cb, r))) {
        free(r);
        return NULL;
    }
    return r;
}

void roll_free(struct roll *r)
{
    if (!r)
        return;
    if (r->tick_ev)
        event_free(r->tick_ev);
    free(r);
}

/* The roll ended: record how (`ok` or aborted, with a message logged once), stop the timer. */
static void roll_finish(struct roll *r, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void roll_finish(struct roll *r, bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->last_message, sizeof(r->last_message), fmt, ap);
    va_end(ap);
    if (r->state == ROLL_DRAINING)
        r->ops.drain_stop(r->ops.arg, r->current); /* it stays: it publishes again */
    r->has_last = true;
    r->last_ok = ok;
    r->last_finished = time(NULL);
    r->last_seconds = roll_now(r) - r->started_at;
    r->rolls++;
    if (ok) {
        log_notice("restart-tor: %s", r->last_message);
    } else {
        r->aborted++;
        log_warnx("restart-tor: %s", r->last_message);
    }
    r->state = ROLL_IDLE;
    r->survivor = -1;
    r->open_streams = 0;
    r->rend_circuits = -1;
    if (r->tick_ev)
        event_del(r->tick_ev);
}

/* What the current tor is doing, for the abort messages. */
static const char *roll_doing(const struct roll *r)
{
    return r->state == ROLL_HANDOVER ? "waiting to restart" : r->state == ROLL_DRAINING ? "draining" : "restarting";
}

static void roll_enter(struct roll *r, enum roll_state s)
{
    r->state = s;
    r->step_at = roll_now(r);
}

/* An up tor other than k that HSDirs serve rather than k, or -1. */
static long roll_serving_other(const struct roll *r, size_t k)
{
    for (size_t s = 0; s < r->n; s++)
        if (s != k && r->ops.is_up(r->ops.arg, s) && r->ops.serves(r->ops.arg, s, k))
            return (long)s;
    return -1;
}

/* End the current tor now and wait for it to come back. */
static void roll_restart_current(struct roll *r)
{
    size_t k = r->current;
    char why[200];
    snprintf(why, sizeof(why), "rolling restart (%s)", r->why);
    r->stopped_at = roll_now(r);
    roll_enter(r, ROLL_RESTARTING);
    log_notice("restart-tor: restarting tor %zu of %zu", k + 1, r->n);
    r->ops.restart(r->ops.arg, k, why);
    if (r->state == ROLL_RESTARTING && r->ops.restarts(r->ops.arg, k) == r->restarts_before)
        roll_finish(r, false, "aborted: tor %zu did not restart (it is stopping or already restarting)", k + 1);
}

static void roll_next(struct roll *r);

/* Draining: end the current tor at the first look that finds neither a rendezvous circuit open on it
 * nor a visitor's stream through it, or once the drain limit passed (then what is still open is cut:
 * counted, logged once). If it went down by itself meanwhile, it restarts by itself: just wait for it.
 * If HSDirs may serve it again (it uploaded meanwhile), start this tor's turn over: the hand-over comes
 * first again. */
static void roll_drain_tick(struct roll *r, double in_step)
{
    size_t k = r->current;
    if (!r->ops.is_up(r->ops.arg, k)) {
        log_notice("restart-tor: tor %zu went down by itself while draining; waiting for it to run again", k + 1);
        r->stopped_at = roll_now(r);
        roll_enter(r, ROLL_RESTARTING);
        return;
    }
    if (roll_serving_other(r, k) < 0) {
        /* k uploaded anew while draining: HSDirs may serve it again. */
        log_info("restart-tor: HSDirs may serve tor %zu again (it uploaded while draining); handing over again",
                 k + 1);
        r->ops.drain_stop(r->ops.arg, k);
        r->state = ROLL_HANDOVER; /* not draining any more (roll_next enters its own step) */
        roll_next(r);
        return;
    }
    r->open_streams = r->ops.open_streams(r->ops.arg, k);
    r->rend_circuits = r->ops.rend_circuits(r->ops.arg, k);
    if (r->ops.drained(r->ops.arg, k) && r->open_streams == 0) {
        log_notice("restart-tor: tor %zu drained: no visitor's circuit or stream open through it after %.1f s", k + 1,
                   in_step);
    } else if (in_step >= r->drain_limit) {
        unsigned long circs = r->rend_circuits > 0 ? (unsigned long)r->rend_circuits : 0;
        log_warnx("restart-tor: tor %zu still has %lu visitor circuit%s and %u stream%s open after %.0f s; ending it "
                  "anyway (they are cut)", k + 1, circs, circs == 1 ? "" : "s", r->open_streams,
                  r->open_streams == 1 ? "" : "s", r->drain_limit);
        r->cut_roll += r->open_streams;
        r->cut_total += r->open_streams;
        r->circ_cut_roll += circs;
        r->circ_cut_total += circs;
    } else {
        return;
    }
    r->open_streams = 0;
    r->rend_circuits = -1;
    roll_restart_current(r);
}

/* HSDirs serve a tor that stays up: wind the current tor down and drain it (roll_drain_tick). */
static void roll_drain_current(struct roll *r)
{
    size_t k = r->current;
    r->restarts_before = r->ops.restarts(r->ops.arg, k);
    if (r->drain_limit <= 0) {
        roll_restart_current(r);
        return;
    }
    if (r->ops.drain_start(r->ops.arg, k) < 0) {
        /* not up: it restarts by itself; roll_drain_tick sees that */
        log_info("restart-tor: tor %zu cannot be wound down (not up)", k + 1);
    }
    r->rend_circuits = -1;
    roll_enter(r, ROLL_DRAINING);
    log_notice("restart-tor: draining tor %zu: it takes no new visitor and ends once visitors let go of their "
               "circuits to it (at most %.0f s)", k + 1, r->drain_limit);
    roll_drain_tick(r, 0);
}

/* Among the tors not yet restarted in this roll, one whose descriptors HSDirs do not serve (another up
 * tor's are served instead): restart it now and return true. */
static bool roll_restart_unserved(struct roll *r)
{
    for (size_t k = 0; k < r->n; k++) {
        long s = r->done[k] ? -1 : roll_serving_other(r, k);
        if (s >= 0) {
            log_info("restart-tor: for each of tor %zu's services HSDirs serve a tor that stays up (tor %ld where it "
                     "hosts it); tor %zu can go", k + 1, s + 1, k + 1);
            r->current = k;
            roll_drain_current(r);
            return true;
        }
    }
    return false;
}

/* Begin the next tor not yet restarted in this roll, or end the roll when all are done. With one tor,
 * restart it; else restart one that HSDirs do not serve if there is one; else hand over: wait up to
 * ROLL_SETTLE_S for an upload in progress to make one so (roll_tick), then have a survivor publish anew. */
static void roll_next(struct roll *r)
{
    if (r->n_done == r->n) {
        char cut[96] = "";
        if (r->cut_roll || r->circ_cut_roll)
            snprintf(cut, sizeof(cut), "; %lu visitor circuit%s and %lu stream%s cut at the drain limit",
                     r->circ_cut_roll, r->circ_cut_roll == 1 ? "" : "s", r->cut_roll, r->cut_roll == 1 ? "" : "s");
        roll_finish(r, true, "restarted %zu tor%s in %.1f s%s", r->n, r->n == 1 ? "" : "s", roll_now(r) - r->started_at,
                    cut);
        return;
    }
    r->survivor = -1;
    r->renewed = false;
    r->renews = 0;
    for (r->current = 0; r->done[r->current]; r->current++)
        ;
    if (r->n == 1) {
        /* nothing else serves meanwhile: winding it down would only start the outage earlier */
        r->restarts_before = r->ops.restarts(r->ops.arg, r->current);
        roll_restart_current(r);
        return;
    }
    if (roll_restart_unserved(r))
        return;
    for (size_t s = 0; s < r->n && r->survivor < 0; s++)
        if (s != r->current)
            r->survivor = (long)s;
    roll_enter(r, ROLL_HANDOVER);
}

/* The hand-over's wait: an upload in progress may settle which tor HSDirs serve; only after
 * ROLL_SETTLE_S does the survivor publish anew (it keeps its introduction points, but every PoW service's
 * puzzle is re-seeded). Then wait for the new descriptors. */
static void roll_handover_tick(struct roll *r, double in_step)
{
    size_t k = r->current;
    if (!r->renewed) {
        if (roll_restart_unserved(r))
            return;
        if (in_step < ROLL_SETTLE_S)
            return;
        if (r->ops.renew(r->ops.arg, (size_t)r->survivor, k) < 0) {
            roll_finish(r, false, "aborted: tor %ld cannot publish new descriptors before tor %zu restarts",
                        r->survivor + 1, k + 1);
            return;
        }
        r->renewed = true;
        r->renews = 1;
        roll_enter(r, ROLL_HANDOVER);
        log_notice("restart-tor: tor %ld publishes new descriptors before tor %zu restarts", r->survivor + 1, k + 1);
        return;
    }
    if (r->ops.serves(r->ops.arg, (size_t)r->survivor, k)) {
        log_info("restart-tor: tor %ld's new descriptors confirmed after %.1f s", r->survivor + 1, in_step);
        roll_drain_current(r);
    } else if (in_step >= ROLL_RENEW_AGAIN_S * r->renews && in_step < ROLL_HANDOVER_S) {
        /* tor drops an upload that waited too long without an answer or a retry (a loaded tor): ask again */
        r->renews++;
        log_notice("restart-tor: tor %ld's new descriptors not confirmed after %.0f s; it publishes anew",
                   r->survivor + 1, in_step);
        if (r->ops.renew(r->ops.arg, (size_t)r->survivor, k) < 0)
            roll_finish(r, false, "aborted: tor %ld cannot publish new descriptors before tor %zu restarts",
                        r->survivor + 1, k + 1);
    } else if (in_step >= ROLL_HANDOVER_S) {
        roll_finish(r, false, "aborted: tor %ld's new descriptors were not confirmed within %.0f s; tor %zu "
                    "was not stopped", r->survivor + 1, ROLL_HANDOVER_S, k + 1);
    }
}

void roll_set_drain_limit(struct roll *r, double seconds)
{
    r->drain_limit = seconds < 0 ? 0 : seconds;
}

int roll_start(struct roll *r, const char *why, char *msg, size_t msglen)
{
    if (r->state != ROLL_IDLE) {
        snprintf(msg, msglen, "a rolling restart is already running (tor %zu of %zu, %s)", r->current + 1, r->n,
                 roll_state_str(r->state));
        return -1;
    }
    r->n = r->ops.count(r->ops.arg);
    if (r->n == 0 || r->n > INSTANCE_MAX) {
        snprintf(msg, msglen, "no tor to restart");
        return -1;
    }
    for (size_t k = 0; k < r->n; k++)
        if (!r->ops.is_up(r->ops.arg, k)) {
            snprintf(msg, msglen, "tor %zu is not up; restart-tor waits until every tor runs", k + 1);
            return -1;
        }
    snprintf(r->why, sizeof(r->why), "%s", why);
    memset(r->done, 0, sizeof(r->done));
    r->n_done = 0;
    r->cut_roll = 0;
    r->circ_cut_roll = 0;
    r->started_at = roll_now(r);
    r->started_wall = time(NULL);
    if (r->n == 1)
        snprintf(msg, msglen, "restarting the one tor (%s): its services are unreachable until it is back", why);
    else
        snprintf(msg, msglen, "rolling restart of %zu tors started (%s)", r->n, why);
    log_notice("restart-tor: %s", msg);
    if (r->tick_ev)
        event_add(r->tick_ev, &(struct timeval){ROLL_TICK_MS / 1000, (ROLL_TICK_MS % 1000) * 1000});
    roll_next(r);
    return 0;
}

int roll_start_command(struct roll *r, const char *why, char *msg, size_t msglen)
{
    double now = roll_now(r), since = now - r->commanded_at;
    /* The interval first: a second command right after the first is refused for it, however long the
     * roll takes; after the interval roll_start refuses while a roll still runs. */
    if (r->commanded && since < ROLL_COMMAND_INTERVAL_S) {
        snprintf(msg, msglen,
                 "the last restart-tor started %.0f s ago; at most one every %.0f s: try again in %.0f s%s", since,
                 ROLL_COMMAND_INTERVAL_S, ceil(ROLL_COMMAND_INTERVAL_S - since),
                 r->state != ROLL_IDLE ? " (a rolling restart is running now)" : "");
        return -1;
    }
    if (roll_start(r, why, msg, msglen) < 0)
        return -1;
    r->commanded = true;
    r->commanded_at = now;
    return 0;
}

/* Abort if a tor other than the current one is down. Return true if it aborted. */
static bool roll_check_others(struct roll *r)
{
    for (size_t j = 0; j < r->n; j++)
        if (j != r->current && !r->ops.is_up(r->ops.arg, j)) {
            roll_finish(r, false, "aborted: tor %zu went down while tor %zu was %s", j + 1, r->current + 1,
                        roll_doing(r));
            return true;
        }
    return false;
}

void roll_tick(struct roll *r)
{
    if (r->state == ROLL_IDLE || roll_check_others(r))
        return;
    size_t k = r->current;
    double now = roll_now(r), in_step = now - r->step_at;
    switch (r->state) {
    case ROLL_HANDOVER:
        roll_handover_tick(r, in_step);
        return;
    case ROLL_DRAINING:
        roll_drain_tick(r, in_step);
        return;
    case ROLL_RESTARTING:
        if (r->ops.is_up(r->ops.arg, k) && r->ops.restarts(r->ops.arg, k) != r->restarts_before) {
            log_info("restart-tor: tor %zu runs again after %.1f s", k + 1, in_step);
            roll_enter(r, ROLL_PUBLISHING);
        } else if (in_step >= ROLL_RESTART_S) {
            roll_finish(r, false, "aborted: tor %zu was not running again within %.0f s", k + 1, ROLL_RESTART_S);
        }
        return;
    case ROLL_PUBLISHING:
        if (!r->ops.is_up(r->ops.arg, k)) {
            roll_finish(r, false, "aborted: tor %zu went down again before its descriptors were confirmed", k + 1);
        } else if (r->ops.published_since(r->ops.arg, k, r->stopped_at)) {
            log_info("restart-tor: tor %zu's descriptors answered by every HSDir %.1f s after its stop", k + 1,
                     now - r->stopped_at);
            r->done[k] = true;
            r->n_done++;
            roll_next(r);
        } else if (in_step >= ROLL_PUBLISH_S) {
            roll_finish(r, false, "aborted: tor %zu's descriptors were not answered by every HSDir within %.0f s",
                        k + 1, ROLL_PUBLISH_S);
        }
        return;
    case ROLL_IDLE:
        return;
    }
}

void roll_worker_lost(struct roll *r, size_t k, const char *why)
{
    if (r->state == ROLL_IDLE || k == r->current)
        return;
    roll_finish(r, false, "aborted: tor %zu was lost (%s) while tor %zu was %s", k + 1, why, r->current + 1,
                roll_doing(r));
}

void roll_abort(struct roll *r, const char *why)
{
    if (r->state != ROLL_IDLE)
        roll_finish(r, false, "aborted: %s", why);
}

bool roll_is_running(const struct roll *r)
{
    return r->state != ROLL_IDLE;
}

enum roll_state roll_state(const struct roll *r)
{
    return r->state;
}

long roll_current(const struct roll *r)
{
    return r->state == ROLL_IDLE ? -1 : (long)r->current;
}

bool roll_last_ok(const struct roll *r, const char **message)
{
    *message = r->has_last ? r->last_message : "";
    return r->has_last && r->last_ok;
}

json_t *roll_to_json(const struct roll *r)
{
    bool running = r->state != ROLL_IDLE;
    json_t *last = r->has_last ? json_pack("{s:b, s:s, s:I, s:f}", "ok", r->last_ok, "message", r->last_message,
                                           "finished", (json_int_t)r->last_finished, "seconds", r->last_seconds)
                               : json_null();
    bool draining = r->state == ROLL_DRAINING;
    return json_pack("{s:s, s:o, s:o, s:I, s:I, s:s, s:o, s:o, s:o, s:o, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                     "state",
                     roll_state_str(r->state),
                     "current", running ? json_integer((json_int_t)r->current + 1) : json_null(), "survivor",
                     running && r->survivor >= 0 ? json_integer(r->survivor + 1) : json_null(), "restarted",
                     (json_int_t)(running ? r->n_done : 0), "total", (json_int_t)(running ? r->n : 0), "why",
                     running || r->has_last ? r->why : "", "started",
                     running ? json_integer((json_int_t)r->started_wall) : json_null(), "step_seconds",
                     running ? json_real(roll_now(r) - r->step_at) : json_null(), "open_streams",
                     draining ? json_integer(r->open_streams) : json_null(), "rend_circuits",
                     draining && r->rend_circuits >= 0 ? json_integer(r->rend_circuits) : json_null(), "drain_limit",
                     r->drain_limit, "streams_cut", (json_int_t)r->cut_roll, "circuits_cut",
                     (json_int_t)r->circ_cut_roll, "streams_cut_total", (json_int_t)r->cut_total,
                     "circuits_cut_total", (json_int_t)r->circ_cut_total, "rolls",
                     (json_int_t)r->rolls, "aborted", (json_int_t)r->aborted, "last_result", last);
}

int roll_metrics(const struct roll *r, struct metrics *m)
{
    unsigned long ok = r->rolls - r->aborted;
    bool rc = metrics_family(m, "onionfront_tor_rolls_total", METRICS_COUNTER,
                             "Rolling restarts of the tors (restart-tor, a new tor.binary) that ended, by result.") ||
              metrics_sample(m, "onionfront_tor_rolls_total", (const char *const[]){"result", "ok", NULL},
                             (double)ok) ||
              metrics_sample(m, "onionfront_tor_rolls_total", (const char *const[]){"result", "aborted", NULL},
                             (double)r->aborted) ||
              metrics_family(m, "onionfront_tor_roll_running", METRICS_GAUGE,
                             "1 while a rolling restart of the tors runs, else 0.") ||
              metrics_sample(m, "onionfront_tor_roll_running", NULL, r->state != ROLL_IDLE ? 1 : 0) ||
              metrics_family(m, "onionfront_tor_roll_streams_cut_total", METRICS_COUNTER,
                             "Visitors' streams still open through a tor that a rolling restart ended at its "
                             "drain limit.") ||
              metrics_sample(m, "onionfront_tor_roll_streams_cut_total", NULL, (double)r->cut_total) ||
              metrics_family(m, "onionfront_tor_roll_circuits_cut_total", METRICS_COUNTER,
                             "Visitors' rendezvous circuits still open on a tor that a rolling restart ended at "
                             "its drain limit.") ||
              metrics_sample(m, "onionfront_tor_roll_circuits_cut_total", NULL, (double)r->circ_cut_total);
    return rc ? -1 : 0;
}
