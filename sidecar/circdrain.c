/* circdrain.c — winding one tor down before a planned stop (see circdrain.h).
 *
 * Each look is one GETINFO circuit-status; its answer closes the introduction circuits it lists and the
 * idle rendezvous circuits, and records how many rendezvous circuits are open. A look is a heap object
 * pointing back at the drainer, so that a reply arriving after circdrain_free or after the drain ended
 * completes into nothing. Each rendezvous circuit seen (in a look or in a stream end from the data
 * path) is kept with when it was first seen, when its last stream ended and when its close is due (the
 * last CIRCDRAIN_MAX_ENDS circuits); one timer fires at the earliest close. */
#include "sidecar/circdrain.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_event.h"
#include "sidecar/clock.h"
#include "sidecar/log.h"

struct circdrain_pending {
    struct circdrain *d; /* NULL once nobody waits for the answer */
    unsigned gen;        /* the drain it belongs to */
};

/* A rendezvous circuit of the draining tor. */
struct circdrain_end {
    unsigned long circ;
    uint64_t seen_ms;      /* clock_now_ms when first seen */
    uint64_t at_ms;        /* of its last stream end, 0: none seen */
    uint64_t close_due_ms; /* when to close it; 0: not scheduled (or sent) */
};

struct circdrain {
    struct cp_conn *conn; /* borrowed while attached */
    struct event *timer;  /* NULL without a base */
    struct event *close_timer; /* fires at the earliest close_due_ms; NULL without a base */
    uint64_t started_ms;
    struct circdrain_end ends[CIRCDRAIN_MAX_ENDS];
    size_t n_ends;
    unsigned long rend_closes;
    bool draining;
    unsigned gen;                     /* bumped by each start and stop: older answers are stale */
    struct circdrain_pending *pending; /* the look in flight, or NULL */
    long rend;                        /* at the last look of this drain, -1 before it */
    uint64_t quiet_since_ms;          /* first of the latest looks finding no intro or rend circuit; 0: none */
    unsigned long intro_closed;
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

/* The entry of `circ`, added (first seen now) if new; when the table is full the entry seen or used
 * least recently goes (its close, if due, is sent now). */
static struct circdrain_end *circdrain_track(struct circdrain *d, unsigned long circ, uint64_t now)
{
    for (size_t i = 0; i < d->n_ends; i++)
        if (d->ends[i].circ == circ)
            return &d->ends[i];
    if (d->n_ends == CIRCDRAIN_MAX_ENDS) {
        size_t oldest = 0;
        for (size_t i = 1; i < d->n_ends; i++) {
            const struct circdrain_end *a = &d->ends[i], *b = &d->ends[oldest];
            if ((a->at_ms > a->seen_ms ? a->at_ms : a->seen_ms) < (b->at_ms > b->seen_ms ? b->at_ms : b->seen_ms))
                oldest = i;
        }
        if (d->ends[oldest].close_due_ms)
            circdrain_close_rend(d, d->ends[oldest].circ);
        d->ends[oldest] = d->ends[--d->n_ends];
    }
    struct circdrain_end *e = &d->ends[d->n_ends++];
    *e = (struct circdrain_end){.circ = circ, .seen_ms = now};
    return e;
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

/* Send the closes that are due and wake up for the next one. */
static void circdrain_close_due(struct circdrain *d)
{
    uint64_t now = clock_now_ms(), next = 0;
    for (size_t i = 0; i < d->n_ends; i++) {
        struct circdrain_end *e = &d->ends[i];
        if (!e->close_due_ms)
            continue;
        if (e->close_due_ms <= now) {
            e->close_due_ms = 0;
            circdrain_close_rend(d, e->circ);
        } else if (!next || e->close_due_ms < next) {
            next = e->close_due_ms;
        }
    }
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
    if (!d->draining)
        return;
    uint64_t now = clock_now_ms();
    struct circdrain_end *e = circdrain_track(d, circuit_id, now);
    e->at_ms = now;
    e->close_due_ms = now + CIRCDRAIN_CLOSE_DELAY_MS;
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
    for (size_t i = 0; i < look.n_rend; i++) {
        const struct circdrain_end *e = circdrain_track(d, look.rend_ids[i], now);
        /* A circuit is idle, and closed now, only once it has been seen for CIRCDRAIN_IDLE_MS (a new
         * one is about to carry the request its visitor was introduced for) and no stream of it ended in
         * that time (one in use is closed right after its last stream: circdrain_stream_ended); not in
         * the drain's first CIRCDRAIN_GRACE_MS, while stream ends are still being learnt. */
        if (now - d->started_ms < CIRCDRAIN_GRACE_MS || now - e->seen_ms < CIRCDRAIN_IDLE_MS ||
            (e->at_ms && now - e->at_ms < CIRCDRAIN_IDLE_MS))
            continue;
        circdrain_close_rend(d, look.rend_ids[i]);
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
    if (d->pending) {
        d->pending->d = NULL;
        d->pending = NULL;
    }
    if (d->timer)
        event_del(d->timer);
    if (d->close_timer)
        event_del(d->close_timer);
    d->n_ends = 0;
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
    free(d);
}

void circdrain_attach(struct circdrain *d, struct cp_conn *conn)
{
    circdrain_forget(d);
    d->conn = conn;
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
    d->started_ms = clock_now_ms();
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
