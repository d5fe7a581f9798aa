/* circdrain.c — winding one tor down before a planned stop (see circdrain.h).
 *
 * Each look is one GETINFO circuit-status; its answer closes the introduction circuits it lists and the
 * idle rendezvous circuits, and records how many rendezvous circuits are open. A look is a heap object
 * pointing back at the drainer, so that a reply arriving after circdrain_free or after the drain ended
 * completes into nothing. Each circuit seen (in a look, or in a stream end from the data path, which is
 * kept also outside a drain) has a slot of a table indexed by its id (CIRCDRAIN_SLOTS) with when a look
 * first listed it, when its last stream ended and when its close is due; one timer fires at the
 * earliest close. */
#include "sidecar/publish/circdrain.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_event.h"
#include "sidecar/core/clock.h"
#include "sidecar/core/log.h"

struct circdrain_pending {
    struct circdrain *d; /* NULL once nobody waits for the answer */
    unsigned gen;        /* the drain it belongs to */
};

/* A rendezvous circuit of the tor: a slot of a table indexed by circuit id (tor numbers circuits in
 * order, so ids in use rarely share a slot; a newer circuit takes the slot of an older one). */
struct circdrain_circ {
    unsigned long circ;    /* 0: empty */
    uint64_t seen_ms;      /* clock_now_ms when a look first listed it (0: not listed yet) */
    uint64_t at_ms;        /* of its last stream end, 0: none seen */
    uint64_t close_due_ms; /* when to close it; 0: not scheduled (or sent) */
};

struct circdrain {
    struct cp_conn *conn; /* borrowed while attached */
    struct event *timer;  /* NULL without a base */
    struct event *close_timer; /* fires at the earliest close_due_ms; NULL without a base */
    uint64_t intro_quiet_since_ms; /* first of the latest looks finding no intro circuit; 0: the last found one */
    struct circdrain_circ *circs; /* CIRCDRAIN_SLOTS slots: stream ends are kept also outside a drain */
    bool closes_pending;          /* some slot has close_due_ms */
    unsigned long rend_closes;
    bool draining;
    unsigned gen;                     /* bumped by each start and stop: older answers are stale */
    struct circdrain_pending *pending; /* the look in flight, or NULL */
    long rend;                        /* at the last look of this drain, -1 before it */
    uint64_t quiet_since_ms;          /* first of the latest looks finding no intro or rend circuit; 0: none */
    unsigned long intro_closed;
    unsigned long intro_launched[CIRCDRAIN_RECENT_INTRO]; /* ids closed from CIRC events, most recent */
    size_t intro_launched_next;
};

int circdrain_look_parse(const char *data, struct circdrain_look *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *p = data ? data : "";
    for (size_t lineno = 1; *p; lineno++) {
        size_t len = strcspn(p, "\n");
        char line[4096], cerr[192];
        if (len >= sizeof(line)) {
            snprintf(err, errlen, "circuit-status line %zu: longer than %zu bytes", lineno, sizeof(line) - 1);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (p[len] == '\n');
        if (len == 0)
            continue;
        struct cp_event_circ c;
        if (cp_circ_status_line_parse(line, &c, cerr, sizeof(cerr)) < 0) {
            snprintf(err, errlen, "circuit-status line %zu: %s", lineno, cerr);
            return -1;
        }
        bool open = c.status != CP_CIRC_CLOSED && c.status != CP_CIRC_FAILED;
        if (open && c.purpose && strcmp(c.purpose, "HS_SERVICE_REND") == 0) {
            out->rend++;
            /* one still connecting to the rendezvous point serves a visitor being introduced: never idle */
            bool joined = !c.hs_state || strcmp(c.hs_state, "HSSR_CONNECTING") != 0;
            if (joined && out->n_rend < CIRCDRAIN_MAX_CLOSE)
                out->rend_ids[out->n_rend++] = c.id;
        }
        if (open && c.purpose && strcmp(c.purpose, "HS_SERVICE_INTRO") == 0 && out->n_intro < CIRCDRAIN_MAX_CLOSE)
            out->intro[out->n_intro++] = c.id;
        cp_event_circ_clear(&c);
    }
    return 0;
}

/* Send `cmd` (owned; freed here) with no interest in its answer beyond a failure at debug level. */
static void circdrain_send_quiet(struct circdrain *d, char *cmd, const char *what, const char *cerr)
{
    char err[256];
    if (!cmd) {
        log_error("circdrain: cannot build %s: %s", what, cerr);
        return;
    }
    if (cp_conn_send(d->conn, cmd, NULL, NULL, err, sizeof(err)) < 0)
        log_debug("circdrain: %s not sent: %s", what, err);
    free(cmd);
}

static void circdrain_publish(struct circdrain *d, bool on)
{
    char err[256];
    const struct cp_conf_item item = {"PublishHidServDescriptors", on ? "1" : "0"};
    circdrain_send_quiet(d, cp_cmd_setconf(&item, 1, err, sizeof(err)),
                         on ? "SETCONF PublishHidServDescriptors=1" : "SETCONF PublishHidServDescriptors=0", err);
}

static void circdrain_close_rend(struct circdrain *d, unsigned long circ);

/* The slot of `circ`, made its own if it holds an older circuit or none (a close due there is sent
 * now), or NULL if a newer circuit holds it. */
static struct circdrain_circ *circdrain_slot(struct circdrain *d, unsigned long circ)
{
    struct circdrain_circ *e = &d->circs[circ % CIRCDRAIN_SLOTS];
    if (e->circ == circ)
        return e;
    if (e->circ > circ)
        return NULL;
    if (e->close_due_ms)
        circdrain_close_rend(d, e->circ);
    *e = (struct circdrain_circ){.circ = circ};
    return e;
}

/* Has `circ` carried a stream? Unknown (its slot taken by a newer circuit) counts as yes. */
static bool circdrain_was_used(const struct circdrain *d, unsigned long circ)
{
    const struct circdrain_circ *e = &d->circs[circ % CIRCDRAIN_SLOTS];
    return e->circ == circ ? e->at_ms != 0 : e->circ > circ;
}

/* Ask tor to close rendezvous circuit `circ` unless a stream is attached to it. */
static void circdrain_close_rend(struct circdrain *d, unsigned long circ)
{
    char err[256];
    if (!d->conn || cp_conn_get_state(d->conn) != CP_CONN_READY)
        return;
    circdrain_send_quiet(d, cp_cmd_closecircuit(circ, true, err, sizeof(err)), "CLOSECIRCUIT IfUnused", err);
    d->rend_closes++;
}

/* Are rendezvous circuits closed yet? Only once the looks have found no introduction circuit for
 * CIRCDRAIN_INTRO_QUIET_MS: while tor still re-establishes the ones closed, a visitor sent off its
 * circuit to re-introduce itself could land on one in the instant it is closed and wait for a
 * rendezvous that never comes (until its own timeout); once there are none, its introduction is refused at
 * once and it fetches the other tor's descriptor. */
static bool circdrain_rend_phase(const struct circdrain *d, uint64_t now)
{
    return d->intro_quiet_since_ms && now - d->intro_quiet_since_ms >= CIRCDRAIN_INTRO_QUIET_MS;
}

/* Send the closes that are due and wake up for the next one. */
static void circdrain_close_due(struct circdrain *d)
{
    uint64_t now = clock_now_ms(), next = 0;
    for (size_t i = 0; i < CIRCDRAIN_SLOTS && d->closes_pending; i++) {
        struct circdrain_circ *e = &d->circs[i];
        if (!e->close_due_ms)
            continue;
        if (e->close_due_ms <= now) {
            e->close_due_ms = 0;
            circdrain_close_rend(d, e->circ);
        } else if (!next || e->close_due_ms < next) {
            next = e->close_due_ms;
        }
    }
    d->closes_pending = next != 0;
    if (next && d->close_timer) {
        struct timeval tv = clock_until(next);
        event_add(d->close_timer, &tv);
    }
}

static void circdrain_close_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    circdrain_close_due(arg);
}

void circdrain_stream_ended(struct circdrain *d, unsigned long circuit_id)
{
    uint64_t now = clock_now_ms();
    struct circdrain_circ *e = circuit_id ? circdrain_slot(d, circuit_id) : NULL;
    if (!e)
        return;
    e->at_ms = now; /* kept outside a drain too: which circuits carried a stream */
    if (!d->draining || !circdrain_rend_phase(d, now))
        return; /* before the rendezvous phase a look closes it later, as idle */
    e->close_due_ms = now + CIRCDRAIN_CLOSE_DELAY_MS;
    d->closes_pending = true;
    if (!d->close_timer) { /* no event loop (tests): at once */
        e->close_due_ms = 0;
        circdrain_close_rend(d, circuit_id);
        return;
    }
    if (!event_pending(d->close_timer, EV_TIMEOUT, NULL)) {
        struct timeval tv = clock_tv_ms(CIRCDRAIN_CLOSE_DELAY_MS);
        event_add(d->close_timer, &tv);
    }
}

static void circdrain_status_cb(struct cp_conn *c, const struct cp_reply *r, const char *cerr, void *arg)
{
    struct circdrain_pending *pd = arg;
    struct circdrain *d = pd->d;
    (void)c;
    if (d && d->pending == pd)
        d->pending = NULL;
    if (!d || !d->draining || pd->gen != d->gen) {
        free(pd);
        return;
    }
    free(pd);
    struct cp_info info = {0};
    struct circdrain_look look;
    char err[256];
    if (!r || !cp_reply_is_ok(r)) {
        log_debug("circdrain: GETINFO circuit-status failed: %s", r ? cp_reply_message(r) : cerr);
        return;
    }
    if (cp_info_parse(r, &info, err, sizeof(err)) < 0 ||
        circdrain_look_parse(cp_info_get(&info, "circuit-status"), &look, err, sizeof(err)) < 0) {
        log_warnx("circdrain: tor's circuit list is unreadable: %s", err);
        cp_info_clear(&info);
        return;
    }
    cp_info_clear(&info);
    for (size_t i = 0; i < look.n_intro; i++) {
        char *cmd = cp_cmd_closecircuit(look.intro[i], false, err, sizeof(err));
        circdrain_send_quiet(d, cmd, "CLOSECIRCUIT", err);
    }
    d->intro_closed += look.n_intro;
    uint64_t now = clock_now_ms();
    if (look.n_intro > 0)
        d->intro_quiet_since_ms = 0;
    else if (!d->intro_quiet_since_ms)
        d->intro_quiet_since_ms = now;
    for (size_t i = 0; i < look.n_rend; i++) {
        unsigned long circ = look.rend_ids[i];
        bool used = circdrain_was_used(d, circ);
        struct circdrain_circ *e = circdrain_slot(d, circ);
        if (e && !e->seen_ms)
            e->seen_ms = now;
        /* A circuit is idle, and closed now, only once it has been seen for CIRCDRAIN_IDLE_MS (a new
         * one is about to carry the request its visitor was introduced for) and its last stream ended
         * longer ago than that (one in use is closed right after its last stream: circdrain_stream_ended,
         * unless tor still had the stream then); and only in the rendezvous phase. */
        if (!circdrain_rend_phase(d, now) ||
            (e && (now - e->seen_ms < CIRCDRAIN_IDLE_MS || (e->at_ms && now - e->at_ms < CIRCDRAIN_IDLE_MS))))
            continue;
        /* One that never carried a stream (seen in a run under load) is free for any new stream of its
         * visitor's tor, whatever its isolation: closing it may meet a request on its way. It is closed
         * right after its first stream, or cut at the drain's limit. */
        if (!used)
            continue;
        circdrain_close_rend(d, circ);
    }
    if (d->rend != (long)look.rend)
        log_debug("circdrain: %u rendezvous circuit%s open", look.rend, look.rend == 1 ? "" : "s");
    d->rend = (long)look.rend;
    if (look.n_intro > 0 || look.rend > 0)
        d->quiet_since_ms = 0;
    else if (!d->quiet_since_ms)
        d->quiet_since_ms = now;
}

void circdrain_look_now(struct circdrain *d)
{
    char err[256];
    static const char *const keys[] = {"circuit-status"};
    if (!d->draining || !d->conn || d->pending || cp_conn_get_state(d->conn) != CP_CONN_READY)
        return;
    struct circdrain_pending *pd = calloc(1, sizeof(*pd));
    char *cmd = pd ? cp_cmd_getinfo(keys, 1, err, sizeof(err)) : NULL;
    if (!cmd) {
        log_error("circdrain: cannot build GETINFO circuit-status: %s", pd ? err : "out of memory");
        free(pd);
        return;
    }
    pd->d = d;
    pd->gen = d->gen;
    if (cp_conn_send(d->conn, cmd, circdrain_status_cb, pd, err, sizeof(err)) < 0) {
        log_debug("circdrain: GETINFO circuit-status not sent: %s", err);
        free(pd);
    } else {
        d->pending = pd;
    }
    free(cmd);
}

/* A CIRC event of the tor. While draining, an introduction circuit tor launches (it re-establishes the
 * ones closed, a few times each, then picks new introduction points) is closed at once, at its first
 * event, before its ESTABLISH_INTRO can reach the introduction point: that point then refuses a
 * visitor's INTRODUCE1 (the visitor tries its next one, then fetches the other tor's descriptor). Left
 * to the next look, it would be established for up to CIRCDRAIN_LOOK_MS, and a visitor introduced
 * through it in the instant it is closed would wait for a rendezvous that never comes. */
static void circdrain_circ_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct circdrain *d = arg;
    struct cp_event_circ e;
    char err[256];
    if (c != d->conn || !d->draining)
        return;
    if (cp_event_circ_parse(ev, &e, err, sizeof(err)) < 0) {
        log_debug("circdrain: undecodable CIRC event: %s", err);
        return;
    }
    bool intro = e.purpose && strcmp(e.purpose, "HS_SERVICE_INTRO") == 0 && e.status != CP_CIRC_CLOSED &&
                 e.status != CP_CIRC_FAILED;
    unsigned long id = e.id;
    cp_event_circ_clear(&e);
    if (!intro)
        return;
    for (size_t i = 0; i < CIRCDRAIN_RECENT_INTRO; i++)
        if (d->intro_launched[i] == id)
            return; /* closed at an earlier event of it */
    d->intro_launched[d->intro_launched_next] = id;
    d->intro_launched_next = (d->intro_launched_next + 1) % CIRCDRAIN_RECENT_INTRO;
    circdrain_send_quiet(d, cp_cmd_closecircuit(id, false, err, sizeof(err)), "CLOSECIRCUIT", err);
    d->intro_closed++;
    d->intro_quiet_since_ms = 0;
    d->quiet_since_ms = 0;
}

static void circdrain_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    circdrain_look_now(arg);
}

struct circdrain *circdrain_new(struct event_base *base)
{
    struct circdrain *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->rend = -1;
    if (!(d->circs = calloc(CIRCDRAIN_SLOTS, sizeof(*d->circs)))) {
        free(d);
        return NULL;
    }
    if (base && (!(d->timer = event_new(base, -1, EV_PERSIST, circdrain_timer_cb, d)) ||
                 !(d->close_timer = event_new(base, -1, 0, circdrain_close_timer_cb, d)))) {
        circdrain_free(d);
        return NULL;
    }
    return d;
}

/* Forget the drain: no timer, a look in flight completes into nothing. */
static void circdrain_forget(struct circdrain *d)
{
    d->draining = false;
    d->gen++;
    d->rend = -1;
    d->quiet_since_ms = 0;
    d->intro_quiet_since_ms = 0;
    if (d->pending) {
        d->pending->d = NULL;
        d->pending = NULL;
    }
    if (d->timer)
        event_del(d->timer);
    if (d->close_timer)
        event_del(d->close_timer);
    for (size_t i = 0; d->circs && i < CIRCDRAIN_SLOTS; i++)
        d->circs[i].seen_ms = d->circs[i].close_due_ms = 0; /* what carried streams stays known */
    d->closes_pending = false;
}

void circdrain_free(struct circdrain *d)
{
    if (!d)
        return;
    circdrain_forget(d);
    if (d->timer)
        event_free(d->timer);
    if (d->close_timer)
        event_free(d->close_timer);
    free(d->circs);
    free(d);
}

void circdrain_attach(struct circdrain *d, struct cp_conn *conn)
{
    circdrain_forget(d);
    /* A new connection is a new tor process (tor.c connects once per start), and tor numbers circuits
     * from 1 again: a slot still holding the last process's higher id would make each new circuit in it
     * look as if a newer one held the slot, counted as used, and a drain closed it at once — a visitor's
     * new rendezvous circuit, before its request (seen in every roll after a tor's first restart). */
    memset(d->circs, 0, CIRCDRAIN_SLOTS * sizeof(*d->circs));
    d->conn = conn;
    if (conn) { /* the worker's connection subscribes to CIRC (SETEVENTS) for the verifier already */
        cp_conn_unsubscribe(conn, circdrain_circ_cb, d);
        if (cp_conn_subscribe(conn, "CIRC", circdrain_circ_cb, d) < 0)
            log_error("circdrain: out of memory: introduction circuits are closed at looks only");
    }
}

void circdrain_detach(struct circdrain *d)
{
    circdrain_forget(d);
    d->conn = NULL;
}

int circdrain_start(struct circdrain *d)
{
    if (d->draining)
        return 0;
    if (!d->conn || cp_conn_get_state(d->conn) != CP_CONN_READY)
        return -1;
    circdrain_forget(d);
    d->draining = true;
    d->intro_closed = 0;
    d->rend_closes = 0;
    memset(d->intro_launched, 0, sizeof(d->intro_launched));
    d->intro_quiet_since_ms = 0;
    circdrain_publish(d, false);
    if (d->timer) {
        struct timeval tv = clock_tv_ms(CIRCDRAIN_LOOK_MS);
        event_add(d->timer, &tv);
    }
    circdrain_look_now(d);
    return 0;
}

void circdrain_stop(struct circdrain *d)
{
    if (!d->draining)
        return;
    circdrain_forget(d);
    if (d->conn && cp_conn_get_state(d->conn) == CP_CONN_READY)
        circdrain_publish(d, true);
}

bool circdrain_is_draining(const struct circdrain *d)
{
    return d->draining;
}

long circdrain_rend_circuits(const struct circdrain *d)
{
    return d->draining ? d->rend : -1;
}

bool circdrain_is_drained(const struct circdrain *d)
{
    return d->draining && d->quiet_since_ms && clock_now_ms() - d->quiet_since_ms >= CIRCDRAIN_QUIET_MS;
}

unsigned long circdrain_intro_closed(const struct circdrain *d)
{
    return d->intro_closed;
}

unsigned long circdrain_rend_closes(const struct circdrain *d)
{
    return d->rend_closes;
}
